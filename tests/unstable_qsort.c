/* qsort and qsort_r for tests, preloaded into llmprof (tests/unstable_sort.sh): each array is
 * shuffled, then heap-sorted, so elements that compare equal come out in an order that has
 * nothing to do with the one they went in (glibc's merge sort keeps it; other C libraries'
 * sorts do not). An output that still matches tests/golden.sha256 decides no tie by the
 * sort's algorithm. LP_QSORT_SEED varies the shuffle; LP_QSORT_LOG names a file that gets
 * the number of sorts of more than one element, at exit. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*cmp_r_fn)(const void *, const void *, void *);

static uint64_t state;
static unsigned long sorts;

/* the next number of a xorshift sequence seeded by LP_QSORT_SEED */
static uint64_t next(void)
{
    if (!state) {
        const char *s = getenv("LP_QSORT_SEED");
        state = 0x9e3779b97f4a7c15ull ^ (s ? strtoull(s, NULL, 10) : 1);
    }
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* exchanges SIZE bytes at A and B */
static void swap(unsigned char *a, unsigned char *b, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        unsigned char t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* the caller's comparison, with or without its argument */
struct cmp {
    cmp_r_fn r;
    int (*plain)(const void *, const void *);
    void *arg;
};

/* A against B by C */
static int compare(const struct cmp *c, const void *a, const void *b)
{
    return c->r ? c->r(a, b, c->arg) : c->plain(a, b);
}

/* moves element ROOT of the heap V[0..N) down to its place */
static void sift(unsigned char *v, size_t size, size_t root, size_t n, const struct cmp *c)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && compare(c, v + child * size, v + (child + 1) * size) < 0)
            child++;
        if (compare(c, v + root * size, v + child * size) >= 0)
            return;
        swap(v + root * size, v + child * size, size);
    }
}

/* shuffles V, then heap-sorts it */
static void unstable(void *base, size_t n, size_t size, const struct cmp *c)
{
    unsigned char *v = base;
    if (n < 2)
        return;
    sorts++;
    for (size_t i = n - 1; i > 0; i--)
        swap(v + i * size, v + (next() % (i + 1)) * size, size);
    for (size_t i = n / 2; i-- > 0;)
        sift(v, size, i, n, c);
    for (size_t i = n - 1; i > 0; i--) {
        swap(v, v + i * size, size);
        sift(v, size, 0, i, c);
    }
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    struct cmp c = {.plain = cmp};
    unstable(base, n, size, &c);
}

void qsort_r(void *base, size_t n, size_t size, cmp_r_fn cmp, void *arg)
{
    struct cmp c = {.r = cmp, .arg = arg};
    unstable(base, n, size, &c);
}

/* at exit, the count of sorts to LP_QSORT_LOG */
__attribute__((destructor)) static void report_sorts(void)
{
    const char *path = getenv("LP_QSORT_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%lu\n", sorts);
        fclose(f);
    }
}
