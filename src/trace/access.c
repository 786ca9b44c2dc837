/* A loaded trace's accessors, shared by the reader and the plausibility pass (and, for the
 * public ones, every later layer): header pairs, strings, the array of a record type, the
 * reader's warnings, the names and dtypes of the counters a counters record carries, and
 * the names and units of a PM sample's values. */
#include <stdarg.h>
#include <stddef.h>
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
    CASE(LP_REC_COUNTERS, counters, n_counters);
    CASE(LP_REC_PM_SAMPLE, pm, n_pm);
    CASE(LP_REC_WINDOW, windows, n_windows);
    default: *n = NULL; return NULL;
    }
#undef CASE
}

int lp_trace_layout(uint32_t type, struct lp_record_layout *l)
{
    if (type == LP_REC_GEMM) { /* kept as lp_gemm_rec, its strings in its kind */
        *l = (struct lp_record_layout){.size = sizeof(struct lp_gemm_rec), .has_ts = 1,
                                       .has_end = 1, .end_is_dur = 1,
                                       .ts = offsetof(struct lp_gemm_rec, start),
                                       .end = offsetof(struct lp_gemm_rec, dur)};
        return LP_OK;
    }
    if (type == LP_REC_API) { /* kept as lp_api_rec, its name in its kind */
        *l = (struct lp_record_layout){.size = sizeof(struct lp_api_rec), .has_ts = 1,
                                       .has_end = 1, .end_is_dur = 1,
                                       .ts = offsetof(struct lp_api_rec, start),
                                       .end = offsetof(struct lp_api_rec, dur)};
        return LP_OK;
    }
    if (type != LP_REC_KERNEL)
        return lp_record_layout(type, l);
    /* kept as lp_kernel_rec, not as the records they were decoded from */
    *l = (struct lp_record_layout){.size = sizeof(struct lp_kernel_rec), .has_ts = 1,
                                   .has_end = 1, .end_is_dur = 1,
                                   .ts = offsetof(struct lp_kernel_rec, start),
                                   .end = offsetof(struct lp_kernel_rec, dur)};
    return LP_OK;
}

const char *lp_trace_meta(const struct lp_trace *t, const char *key)
{
    for (size_t i = 0; i < t->n_meta; i++)
        if (strcmp(t->meta[i].key, key) == 0)
            return t->meta[i].value;
    return NULL;
}

int lp_trace_kernels_recorded(const struct lp_trace *t)
{
    const char *kinds = lp_trace_meta(t, "kinds");
    return !kinds || (strtoull(kinds, NULL, 10) & 1u);
}

const char *lp_trace_str(const struct lp_trace *t, lp_str id)
{
    if (id == 0)
        return "";
    if (id < t->n_strings && t->strings[id])
        return t->strings[id];
    return "<unknown>";
}

static const struct {
    const char *name, *dtype;
} counters[LP_COUNTER_COUNT] = {
    [LP_COUNTER_GPU_NS] = {"gpu_ns", NULL},
    [LP_COUNTER_SM_CYCLES] = {"sm_cycles", NULL},
    [LP_COUNTER_DRAM_READ] = {"dram_read", NULL},
    [LP_COUNTER_DRAM_WRITE] = {"dram_write", NULL},
    [LP_COUNTER_L2_BYTES] = {"l2_bytes", NULL},
    [LP_COUNTER_TENSOR_BF16] = {"tensor_bf16", "bf16"},
    [LP_COUNTER_TENSOR_FP16] = {"tensor_fp16", "fp16"},
    [LP_COUNTER_TENSOR_FP8] = {"tensor_fp8", "fp8"},
    [LP_COUNTER_TENSOR_TF32] = {"tensor_tf32", "tf32"},
};

const char *lp_counter_name(enum lp_counter c)
{
    return (unsigned)c < LP_COUNTER_COUNT ? counters[c].name : NULL;
}

const char *lp_counter_dtype(enum lp_counter c)
{
    return (unsigned)c < LP_COUNTER_COUNT ? counters[c].dtype : NULL;
}

int lp_counter_parse_dtypes(const char *list, unsigned *bits, char *err, size_t errlen)
{
    *bits = 0;
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (unsigned c = 0; c < LP_COUNTER_COUNT; c++) {
            const char *d = counters[c].dtype;
            if (d && strlen(d) == len && !strncmp(d, p, len)) {
                *bits |= 1u << c;
                found = 1;
            }
        }
        if (!found && len) {
            snprintf(err, errlen, "unknown tensor dtype '%.*s' (known: bf16, fp16, fp8, tf32)",
                     (int)(len > 32 ? 32 : len), p);
            return LP_ERR_ARG;
        }
        p += len + (p[len] == ',');
    }
    return LP_OK;
}

static const char *const pm_names[LP_PM_COUNT] = {
    [LP_PM_GR_ACTIVE] = "gr_active",   [LP_PM_SM_ACTIVE] = "sm_active",
    [LP_PM_SM_ISSUE] = "sm_issue",     [LP_PM_TENSOR] = "tensor",
    [LP_PM_DRAM_READ] = "dram_read",   [LP_PM_DRAM_WRITE] = "dram_write",
    [LP_PM_L2] = "l2",                 [LP_PM_IDLE_SM_WARPS] = "idle_sm_warps",
    [LP_PM_GPC_MHZ] = "gpc_mhz",
};

const char *lp_pm_name(enum lp_pm p) { return (unsigned)p < LP_PM_COUNT ? pm_names[p] : NULL; }

double lp_pm_value(const struct lp_pm_sample *s, enum lp_pm p)
{
    if ((unsigned)p >= LP_PM_SLOTS)
        return 0;
    if (p == LP_PM_DRAM_READ || p == LP_PM_DRAM_WRITE)
        return s->value[p] * 1024.0;
    return p == LP_PM_GPC_MHZ ? (double)s->value[p] : s->value[p] / 100.0;
}

/* RFC 3629: no overlong forms, surrogates or code points past U+10FFFF */
size_t lp_utf8_repair(char *s, size_t len)
{
    size_t bad = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        int ok = n > 0 && i + n <= len;
        for (size_t j = 1; ok && j < n; j++)
            ok = ((unsigned char)s[i + j] & 0xc0) == 0x80;
        if (ok && n >= 3) {
            unsigned char d = (unsigned char)s[i + 1];
            ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0) &&
                 !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
        }
        if (!ok) {
            s[i++] = '?';
            bad++;
            continue;
        }
        i += n;
    }
    return bad;
}
