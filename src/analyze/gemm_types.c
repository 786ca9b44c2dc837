/* GEMM records read on their own: which kernels each call launched, its FLOPs and least
 * bytes, and the names of cuBLAS's type codes (cudaDataType, cublasComputeType_t: ABI
 * values, so this file needs no CUDA header). */
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

static const struct {
    uint32_t code;
    const char *name;
    double bytes;
    int complex;
} types[] = {
    {0, "fp32", 4, 0},    {1, "fp64", 8, 0},     {2, "fp16", 2, 0},   {3, "int8", 1, 0},
    {4, "c64", 8, 1},     {5, "c128", 16, 1},    {6, "c32", 4, 1},    {8, "uint8", 1, 0},
    {10, "int32", 4, 0},  {14, "bf16", 2, 0},    {15, "cbf16", 4, 1}, {16, "int4", 0.5, 0},
    {28, "fp8e4m3", 1, 0}, {29, "fp8e5m2", 1, 0}, {31, "fp6e2m3", 0.75, 0},
    {32, "fp6e3m2", 0.75, 0}, {33, "fp4e2m1", 0.5, 0},
};

static int type_index(uint32_t code)
{
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (types[i].code == code)
            return (int)i;
    return -1;
}

const char *lp_cuda_type_name(uint32_t cuda_type)
{
    int i = type_index(cuda_type);
    return i >= 0 ? types[i].name : "other";
}

const char *lp_compute_type_name(uint32_t compute_type)
{
    switch (compute_type) {
    case 64: return "16F";
    case 65: return "16F_PEDANTIC";
    case 68: return "32F";
    case 69: return "32F_PEDANTIC";
    case 70: return "64F";
    case 71: return "64F_PEDANTIC";
    case 72: return "32I";
    case 73: return "32I_PEDANTIC";
    case 74: return "32F_FAST_16F";
    case 75: return "32F_FAST_16BF";
    case 77: return "32F_FAST_TF32";
    case 78: return "32F_EMULATED_16BFX9";
    case 79: return "64F_EMULATED_FIXEDPOINT";
    default: return "other";
    }
}

lp_u128 lp_gemm_flops_exact(const struct lp_gemm *g)
{
    int i = type_index(g->a_type);
    lp_u128 p = i >= 0 && types[i].complex ? 8 : 2;
    p = lp_sat_mul_u128(p, lp_sat_mul_u128(g->m, g->n));
    return lp_sat_mul_u128(p, lp_sat_mul_u128(g->k, g->batch));
}

double lp_gemm_flops(const struct lp_gemm *g)
{
    return (double)lp_gemm_flops_exact(g);
}

double lp_cuda_type_bytes(uint32_t code)
{
    int i = type_index(code);
    return i >= 0 ? types[i].bytes : 0;
}

/* quarters of a byte per element of a cudaDataType: every size in types[] is a whole number
 * of them */
static lp_u128 quarters(uint32_t code)
{
    return (lp_u128)(4 * lp_cuda_type_bytes(code));
}

lp_u128 lp_gemm_min_quarter_bytes(const struct lp_gemm *g)
{
    lp_u128 a = lp_sat_mul_u128(lp_sat_mul_u128(g->m, g->k), quarters(g->a_type));
    lp_u128 b = lp_sat_mul_u128(lp_sat_mul_u128(g->k, g->n), quarters(g->b_type));
    lp_u128 d = lp_sat_mul_u128(lp_sat_mul_u128(g->m, g->n), quarters(g->d_type));
    return lp_sat_mul_u128(lp_sat_add_u128(lp_sat_add_u128(a, b), d), g->batch);
}

double lp_gemm_min_bytes(const struct lp_gemm *g)
{
    return (double)lp_gemm_min_quarter_bytes(g) / 4;
}

int lp_gemm_peak_dtype(const struct lp_gemm *g)
{
    switch (g->compute_type) {
    case 77: return LP_DTYPE_TF32;
    case 75: return LP_DTYPE_BF16;
    case 74: return LP_DTYPE_FP16;
    default: break;
    }
    switch (g->a_type) {
    case 0: return LP_DTYPE_FP32;
    case 2: return LP_DTYPE_FP16;
    case 14: return LP_DTYPE_BF16;
    case 28: case 29: return LP_DTYPE_FP8;
    case 3: return LP_DTYPE_INT8;
    case 16: return LP_DTYPE_INT4;
    default: return -1;
    }
}

/* A GEMM call's thread and start, the keys it is looked up by: kept together, since the
 * thread lives in the call's kind */
struct call_key {
    uint64_t start;
    uint32_t thread, index;
};

static int cmp_call_key(const void *a, const void *b)
{
    const struct call_key *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* T's GEMM calls by (thread, start, index), or NULL out of memory */
static struct call_key *calls_by_thread(const struct lp_trace *t)
{
    struct call_key *v = malloc((t->n_gemms ? t->n_gemms : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < t->n_gemms; i++)
        v[i] = (struct call_key){t->gemms[i].start, lp_trace_gemm_kind(t, &t->gemms[i])->thread,
                                 (uint32_t)i};
    qsort(v, t->n_gemms, sizeof *v, cmp_call_key);
    return v;
}

/* the GEMM whose call on THREAD was running at TS: the last one there that began before */
static int32_t gemm_at(const struct lp_trace *t, const struct call_key *v, uint32_t thread,
                       uint64_t ts)
{
    size_t lo = 0, hi = t->n_gemms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].thread < thread || (v[mid].thread == thread && v[mid].start <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || v[lo - 1].thread != thread)
        return -1;
    const struct lp_gemm_rec *g = &t->gemms[v[lo - 1].index];
    return ts <= lp_trace_row_end(t, g->start, g->dur) ? (int32_t)v[lo - 1].index : -1;
}

int lp_gemm_link(const struct lp_trace *t, int32_t **kernel_gemm, int32_t **kernel_origin)
{
    *kernel_gemm = NULL;
    if (kernel_origin)
        *kernel_origin = NULL;
    if (t->n_kernels == 0)
        return LP_OK;
    if (t->n_gemms == 0) { /* nothing to link: no map of the calls (4 bytes a call) either */
        if (!kernel_origin || t->n_graphs == 0)
            return LP_OK;
        struct lp_corr_map m = {0};
        int rc = lp_corr_build(t, &m);
        if (rc == LP_OK)
            rc = lp_graph_origins(t, &m, kernel_origin);
        lp_corr_free(&m);
        return rc;
    }
    int32_t *out = malloc(t->n_kernels * sizeof *out), *origin = NULL;
    struct call_key *order = calls_by_thread(t);
    struct lp_corr_map m = {0};
    int rc = out && order ? lp_corr_build(t, &m) : LP_ERR_NOMEM;
    if (rc == LP_OK)
        rc = lp_graph_origins(t, &m, &origin);
    if (rc) {
        free(out);
        free(order);
        lp_corr_free(&m);
        return rc;
    }
    for (size_t i = 0; i < t->n_kernels; i++) {
        out[i] = -1;
        if (t->n_gemms == 0)
            continue;
        if (lp_trace_kernel_config(t, &t->kernels[i])->flags & LP_KERNEL_FLAG_GRAPH) {
            /* a replay: the call that was running when its node was captured */
            const struct lp_graph *g = origin && origin[i] >= 0 ? &t->graphs[origin[i]] : NULL;
            if (g)
                out[i] = gemm_at(t, order, g->thread, g->timestamp);
            continue;
        }
        const struct lp_api_rec *a = lp_corr_find(t, &m, t->kernels[i].correlation);
        if (a)
            out[i] = gemm_at(t, order, lp_trace_api_kind(t, a)->thread, a->start);
    }
    lp_corr_free(&m);
    free(order);
    size_t linked = 0;
    for (size_t i = 0; i < t->n_kernels && !linked; i++)
        linked += out[i] >= 0;
    if (!linked) { /* no GEMM launched a kernel (a trace without GEMM calls): 4 bytes a kernel */
        free(out);
        out = NULL;
    }
    *kernel_gemm = out;
    if (kernel_origin)
        *kernel_origin = origin;
    else
        free(origin);
    return LP_OK;
}

int lp_gemm_made_nodes(const struct lp_trace *t, uint8_t *made)
{
    memset(made, 0, t->n_gemms);
    if (t->n_gemms == 0 || t->n_graphs == 0)
        return LP_OK;
    struct call_key *order = calls_by_thread(t);
    if (!order)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < t->n_graphs; i++) {
        const struct lp_graph *g = &t->graphs[i];
        int32_t call = g->event == LP_GRAPH_EVENT_NODE_CREATED
                           ? gemm_at(t, order, g->thread, g->timestamp)
                           : -1;
        if (call >= 0)
            made[call] = 1;
    }
    free(order);
    return LP_OK;
}

int lp_gemm_shape_cmp(const struct lp_gemm *a, const struct lp_gemm *b)
{
    const uint64_t x[] = {a->m, a->n, a->k, a->batch, a->transa, a->transb, a->a_type,
                          a->b_type, a->d_type, a->compute_type, a->epilogue};
    const uint64_t y[] = {b->m, b->n, b->k, b->batch, b->transa, b->transb, b->a_type,
                          b->b_type, b->d_type, b->compute_type, b->epilogue};
    for (size_t i = 0; i < sizeof x / sizeof *x; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

int lp_gemm_weight_cmp(const struct lp_gemm *a, const struct lp_gemm *b)
{
    lp_u128 x = lp_sat_mul_u128(a->m, a->k), y = lp_sat_mul_u128(b->m, b->k);
    if (x != y)
        return x < y ? -1 : 1;
    if (a->m != b->m)
        return a->m < b->m ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

int lp_gemm_same_shape(const struct lp_gemm *a, const struct lp_gemm *b)
{
    return lp_gemm_shape_cmp(a, b) == 0;
}

uint64_t lp_gemm_tokens(const struct lp_gemm *g)
{
    return g->m < g->n ? g->m : g->n;
}

uint64_t lp_gemm_weight(const struct lp_gemm *g, uint64_t tokens)
{
    uint64_t dim = tokens && g->m == tokens   ? g->n
                   : tokens && g->n == tokens ? g->m
                   : g->m > g->n              ? g->m
                                              : g->n;
    return dim * g->k;
}
