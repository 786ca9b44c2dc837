/* The run report's sections: each section file (section_NAME.c) holds one section's part of
 * report.md, its keys of report.json and its CSV files, as one struct lp_section; sections.c
 * lists them once, in the order every writer follows. Also what several sections share
 * (emit.c) and the Markdown's number macros. Not installed. */
#ifndef LP_REPORT_SECTION_H
#define LP_REPORT_SECTION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "llmprof/report.h"
#include "report_internal.h"

/* One key of report.json and its value (NULL: the key is left out of the document). */
struct lp_section_key {
    const char *key;
    json_t *(*value)(const struct lp_run *r);
};

struct lp_section {
    const char *name;
    /* its part of report.md, headings included; NULL: none */
    void (*md)(FILE *f, const struct lp_run *r);
    /* its keys of report.json, in order, ended by {NULL, NULL}; NULL: none */
    const struct lp_section_key *json;
    /* its CSV files (llmprof/report.h), in this order; name NULL: none */
    struct lp_report_csv csv, csv2;
};

/* Every section in the order of report.md and report.json, NULL-terminated (sections.c). */
extern const struct lp_section *const lp_sections[];

extern const struct lp_section lp_section_header;        /* trace, command; "options" */
extern const struct lp_section lp_section_capture;       /* capture windows */
extern const struct lp_section lp_section_llm;           /* TTFT, TPOT, ITL; warm-up */
extern const struct lp_section lp_section_serving;       /* a serving loop; iterations.csv */
extern const struct lp_section lp_section_findings;      /* the diagnosis */
extern const struct lp_section lp_section_stages;        /* stages.csv */
extern const struct lp_section lp_section_spread;        /* in-process spread, +/-10 % */
extern const struct lp_section lp_section_communication;
extern const struct lp_section lp_section_utilisation;   /* MFU, MBU */
extern const struct lp_section lp_section_counters;      /* hardware counters */
extern const struct lp_section lp_section_pm;            /* PM sampling */
extern const struct lp_section lp_section_gemms;         /* gemms.csv */
extern const struct lp_section lp_section_graphs;        /* CUDA graphs */
extern const struct lp_section lp_section_kernels;       /* cost centres; kernels.csv */
extern const struct lp_section lp_section_deep;          /* llmprof deep; deep.csv */
extern const struct lp_section lp_section_operators;     /* operators.csv, operator_shapes.csv */
extern const struct lp_section lp_section_timeline;
extern const struct lp_section lp_section_overhead;      /* CUPTI's overhead records */
extern const struct lp_section lp_section_power;
extern const struct lp_section lp_section_notes;         /* losses and notes */

/* ---- Markdown (report.md, summary.md) ---- */

/* Numbers into the caller's buffers b1, b2 (ns), b3 (a share) and b4 (bytes), 32 bytes each */
#define NS(v) lp_fmt_ns((double)(v), b1, sizeof b1)
#define NS2(v) lp_fmt_ns((double)(v), b2, sizeof b2)
#define PCT(v) lp_fmt_pct((v), b3, sizeof b3)
#define BYTES(v) lp_fmt_bytes((double)(v), b4, sizeof b4)

/* the program's command line ("" when not known) */
const char *lp_md_command(const struct lp_run *r);
/* " after the warm-up" when the busy share's span starts after one
 * (lp_run.timeline.bins_from_ns) */
const char *lp_md_after_warmup(const struct lp_run *r);
/* "| TTFT | 16.1 ms | 17.0 ms | 18.2 ms | 16.4 ms | 3 requests | source |" */
void lp_md_dist_row(FILE *f, const char *what, const struct lp_dist *d, const char *unit,
                    const char *source);

/* ---- report.json ---- */

json_t *lp_json_num(double v);            /* null when not finite */
json_t *lp_json_u64(uint64_t v);          /* INT64_MAX past it */
json_t *lp_json_or_null(double v);        /* null unless > 0 */
json_t *lp_json_dist(const struct lp_dist *d); /* null when empty */
/* a kernel table's first N rows, its GPU time and its count of names */
json_t *lp_json_kernel_table(const struct lp_run *r, const struct lp_kernel_table *t, size_t n);
/* bytes copied per direction (HtoD, DtoH, DtoD, other) and set */
json_t *lp_json_copies(const uint64_t *b, uint64_t set);
/* the counters by their short names (lp_counter_name), those counted */
json_t *lp_json_counter_values(unsigned valid, const double *v);
/* PM samples' means by name, DRAM bandwidth and MBU; null when none */
json_t *lp_json_pm_stats(const struct lp_pm_stats *k);
/* per class of CUPTI's overhead records: a stage's time, count and share (S), or the run's
 * time (RUN_NS) */
json_t *lp_json_overhead_classes(const struct lp_stage_report *s, const uint64_t *run_ns);

/* ---- CSV ---- */

/* V into BUF (32 bytes), or empty when not IS_KNOWN */
const char *lp_csv_known(int is_known, uint64_t v, char *buf);

#endif
