/* A loaded trace's accessors, shared by the reader and the plausibility pass (and, for the
 * public ones, every later layer): header pairs, strings, the array of a record type, and
 * the reader's warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

void lp_trace_vwarn(struct lp_trace *t, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    char **w = realloc(t->warnings, (t->n_warnings + 1) * sizeof *w);
    if (!w)
        return;
    t->warnings = w;
    if ((w[t->n_warnings] = strdup(line)))
        t->n_warnings++;
}

void lp_trace_warn(struct lp_trace *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lp_trace_vwarn(t, fmt, ap);
    va_end(ap);
}

void **lp_trace_array_of(struct lp_trace *t, uint32_t type, size_t **n)
{
#define CASE(T, arr, cnt) case T: *n = &t->cnt; return (void **)&t->arr
    switch (type) {
    CASE(LP_REC_KERNEL, kernels, n_kernels);
    CASE(LP_REC_MEMCPY, memcpys, n_memcpys);
    CASE(LP_REC_MEMSET, memsets, n_memsets);
    CASE(LP_REC_MEMORY, memory, n_memory);
    CASE(LP_REC_MARKER, markers, n_markers);
    CASE(LP_REC_API, apis, n_apis);
    CASE(LP_REC_NVML, nvml, n_nvml);
    CASE(LP_REC_DEVICE, devices, n_devices);
    CASE(LP_REC_OVERHEAD, overheads, n_overheads);
    CASE(LP_REC_LOSS, losses, n_losses);
    CASE(LP_REC_GEMM, gemms, n_gemms);
    CASE(LP_REC_GRAPH, graphs, n_graphs);
    default: *n = NULL; return NULL;
    }
#undef CASE
}

const char *lp_trace_meta(const struct lp_trace *t, const char *key)
{
    for (size_t i = 0; i < t->n_meta; i++)
        if (strcmp(t->meta[i].key, key) == 0)
            return t->meta[i].value;
    return NULL;
}

const char *lp_trace_str(const struct lp_trace *t, lp_str id)
{
    if (id == 0)
        return "";
    if (id < t->n_strings && t->strings[id])
        return t->strings[id];
    return "<unknown>";
}
