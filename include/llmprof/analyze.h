/* llmprof analysis: what is computed from a trace. Reads traces through the reader
 * (llmprof/trace.h); never touches CUPTI; formats nothing. */
#ifndef LLMPROF_ANALYZE_H
#define LLMPROF_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/trace.h"

/* ---- NVTX ranges paired from markers ---- */

enum lp_range_flag {
    LP_RANGE_UNCLOSED = 1 << 0, /* no end marker: ends at the last timestamp of the trace */
};

struct lp_range {
    uint64_t start, end;
    lp_str name, domain;
    uint32_t thread;      /* thread of the start marker */
    uint32_t depth;       /* 0 = top level on its thread */
    int64_t parent;       /* index into the range array, -1 at top level */
    uint32_t flags;       /* enum lp_range_flag */
};

struct lp_ranges {
    struct lp_range *v;   /* sorted by (thread, start, longer first) */
    size_t n;
    size_t unmatched_ends; /* end markers whose start was not recorded */
    size_t unclosed;
};

/* Pairs start and end markers by id (push/pop and start/end alike) and nests the ranges
 * of each thread by time. */
int lp_ranges_build(const struct lp_trace *t, struct lp_ranges *out);
void lp_ranges_free(struct lp_ranges *r);

/* A range name without its key=value words: "prefill tokens=512" -> "prefill". Writes
 * into BUF (size LEN) and returns it. */
const char *lp_range_group_name(const char *name, char *buf, size_t len);

/* ---- a quick summary of one trace (llmprof info) ---- */

struct lp_range_group {
    char *name;
    size_t count;
    uint64_t total_ns, min_ns, max_ns;
};

struct lp_trace_summary {
    uint64_t first_ns, last_ns;    /* span of all timestamped records */
    uint64_t kernel_ns;            /* sum of kernel durations */
    uint64_t memcpy_bytes, memset_bytes;
    uint64_t lost_records;         /* sum of loss counts */
    size_t n_loss_notes;           /* loss records without a count (a source missing) */
    size_t n_launch_matched;       /* kernels whose launching API call was recorded */
    /* NVML samples: how long the queries took (the alignment uncertainty of a sample is
     * half of it) and the mean interval between samples of one device */
    uint64_t nvml_query_p50_ns, nvml_query_p99_ns, nvml_interval_ns;
    size_t n_nvml_devices;
    struct lp_range_group *top;    /* top-level NVTX ranges grouped by name, by total desc */
    size_t n_top;
    struct lp_ranges ranges;
};

int lp_trace_summarize(const struct lp_trace *t, struct lp_trace_summary *s);
void lp_trace_summary_free(struct lp_trace_summary *s);

#endif
