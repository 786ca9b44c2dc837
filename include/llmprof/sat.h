/* Saturating arithmetic for sums of recorded quantities (bytes of copies and allocations,
 * durations, counts). A CRC-valid trace can hold any uint64 there, and a sum that wrapped
 * reads as a small number, or (cast to int64 by report.json and SQLite) a negative one. The
 * analysis's sums stop at LP_SAT_MAX, INT64_MAX, what every JSON reader and SQLite holds; no
 * sane trace comes near it (292 years, 8 EiB), so their results are unchanged. */
#ifndef LP_SAT_H
#define LP_SAT_H

#include <stdint.h>

#define LP_SAT_MAX ((uint64_t)INT64_MAX)

/* A + B, at most LP_SAT_MAX. */
static inline uint64_t lp_sat_add(uint64_t a, uint64_t b)
{
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) || s > LP_SAT_MAX ? LP_SAT_MAX : s;
}

/* V, at most LP_SAT_MAX: a single recorded value reported as a fact. */
static inline uint64_t lp_sat_clamp(uint64_t v)
{
    return v > LP_SAT_MAX ? LP_SAT_MAX : v;
}

/* A + B over the whole uint64 range, at most UINT64_MAX: for running values that go down
 * again (memory held), kept exact as long as they can be and clamped when reported. */
static inline uint64_t lp_sat_add_u64(uint64_t a, uint64_t b)
{
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* A - B, at least 0. */
static inline uint64_t lp_sat_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* The mean of A and B, rounded down, without their sum (which may wrap): a median of two. */
static inline uint64_t lp_mid_u64(uint64_t a, uint64_t b)
{
    return a / 2 + b / 2 + (a & b & 1);
}

/* A * B, at most UINT64_MAX. */
static inline uint64_t lp_sat_mul_u64(uint64_t a, uint64_t b)
{
    uint64_t p;
    return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

/* Exact sums whose result must not depend on the order of their terms (GEMM FLOPs and
 * bytes, squared deviations): 128-bit integers, read as a floating-point number once, at
 * the end (a GCC and Clang extension). */
__extension__ typedef unsigned __int128 lp_u128;
__extension__ typedef __int128 lp_i128;
#define LP_U128_MAX (~(lp_u128)0)

/* A + B, at most LP_U128_MAX. */
static inline lp_u128 lp_sat_add_u128(lp_u128 a, lp_u128 b)
{
    lp_u128 s = a + b;
    return s < a ? LP_U128_MAX : s;
}

/* A * B, at most LP_U128_MAX. */
static inline lp_u128 lp_sat_mul_u128(lp_u128 a, lp_u128 b)
{
    lp_u128 p;
    return __builtin_mul_overflow(a, b, &p) ? LP_U128_MAX : p;
}

/* The largest double not past INT64_MAX (2^63 - 1024): a double sum of durations reported
 * in ns stops here, so that its writers can round it to an int64. */
#define LP_SAT_MAX_DOUBLE 9223372036854774784.0

/* A + B, at most LP_SAT_MAX_DOUBLE. */
static inline double lp_sat_add_double(double a, double b)
{
    double s = a + b;
    return s > LP_SAT_MAX_DOUBLE ? LP_SAT_MAX_DOUBLE : s;
}

/* A double sum as a count: 0 for NaN and below, at most LP_SAT_MAX (converting a double
 * past 2^64 to an integer is undefined). */
static inline uint64_t lp_sat_from_double(double v)
{
    return !(v > 0) ? 0 : v >= (double)LP_SAT_MAX ? LP_SAT_MAX : (uint64_t)v;
}

#endif
