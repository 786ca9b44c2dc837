/* llmprof's writers: they format what the model and analysis layers computed, and compute
 * nothing of their own. */
#ifndef LLMPROF_REPORT_H
#define LLMPROF_REPORT_H

#include <stdio.h>

#include "llmprof/analyze.h"
#include "llmprof/compare.h"
#include "llmprof/follow.h"
#include "llmprof/live.h"
#include "llmprof/model.h"

/* What `llmprof model` reports. B (no GPU chosen) and WT (no safetensors) may be NULL. */
struct lp_model_report {
    const struct lp_model *model;
    const struct lp_workload *workload;
    const struct lp_model_result *result;
    const struct lp_model_bounds *bounds;
    const struct lp_weights *weights;
};

/* Return 0, or -1 on a write error. */
int lp_report_model_md(FILE *out, const struct lp_model_report *rep);
int lp_report_model_json(FILE *out, const struct lp_model_report *rep);

/* The report of a recorded run (lp_run_analyze). Each returns 0, or -1 on a write error. */
int lp_report_run_md(FILE *out, const struct lp_run *r);      /* report.md: everything */
int lp_report_summary_md(FILE *out, const struct lp_run *r);  /* summary.md: one page */
int lp_report_run_json(FILE *out, const struct lp_run *r);    /* report.json */
int lp_report_run_html(FILE *out, const struct lp_run *r);    /* report.html, self-contained */
/* report.html with a section comparing R (run B of D) with a baseline (run A of D); D NULL:
 * lp_report_run_html. */
int lp_report_run_html_baseline(FILE *out, const struct lp_run *r, const struct lp_diff *d);
/* The CSV files of the run report, those of the sections with tables, in the order of the
 * report's sections (src/report/sections.c): NAME ("stages.csv"), WRITE (0, or -1 on a write
 * error) and ABOUT, a few words for --help (NULL: none). lp_report_csv_at: the Ith, NULL past
 * the last. */
struct lp_report_csv {
    const char *name;
    int (*write)(FILE *out, const struct lp_run *r);
    const char *about;
};
const struct lp_report_csv *lp_report_csv_at(size_t i);
/* The same writers by name (each section file defines its own). */
int lp_report_kernels_csv(FILE *out, const struct lp_run *r);
int lp_report_operators_csv(FILE *out, const struct lp_run *r);
int lp_report_operator_shapes_csv(FILE *out, const struct lp_run *r); /* by input shapes */
int lp_report_stages_csv(FILE *out, const struct lp_run *r);
int lp_report_gemms_csv(FILE *out, const struct lp_run *r);   /* one row per GEMM shape */
int lp_report_deep_csv(FILE *out, const struct lp_run *r);    /* kernels in depth */
/* a serving loop's iterations, one row each; the header alone when the run is none */
int lp_report_iterations_csv(FILE *out, const struct lp_run *r);
/* The run report of several traces (lp_ranks_analyze): ranks.md, ranks.json (schema
 * llmprof-ranks/1), ranks.csv (one row per process and stage). 0, or -1 on a write error. */
int lp_report_ranks_md(FILE *out, const struct lp_ranks *r);
int lp_report_ranks_json(FILE *out, const struct lp_ranks *r);
int lp_report_ranks_csv(FILE *out, const struct lp_ranks *r);
/* Several runs of one command compared (lp_repeats_analyze): repeats.md, repeats.json (schema
 * llmprof-repeats/1) and repeats.csv (one row per repeat and figure). 0, or -1 on a write
 * error. */
int lp_report_repeats_md(FILE *out, const struct lp_repeats *r);
int lp_report_repeats_json(FILE *out, const struct lp_repeats *r);
int lp_report_repeats_csv(FILE *out, const struct lp_repeats *r);
/* Two runs compared (lp_diff_build, lp_diff_gate): diff.md, diff.json (schema
 * llmprof-diff/1), and one line per gate rule with its result. 0, or -1 on a write error. */
int lp_report_diff_md(FILE *out, const struct lp_diff *d);
int lp_report_diff_json(FILE *out, const struct lp_diff *d);
int lp_report_diff_gate(FILE *out, const struct lp_diff *d);
/* A few lines for report's summary against a baseline (A): warnings, TTFT and TPOT p50,
 * each stage's step p50 (else wall) and its kernels added, removed and changed. */
int lp_report_diff_headline(FILE *out, const struct lp_diff *d);
/* One line per warning of D: "llmprof CMD: warning: ...". */
int lp_report_diff_warnings(FILE *out, const struct lp_diff *d, const char *cmd);
/* The numbers every output prints, one way: "12.345 ms", "870.2 us", "12.34 s", "640 ns";
 * "1.5 GiB", "12 B". Each writes into BUF and returns it. */
const char *lp_fmt_ns(double ns, char *buf, size_t len);
const char *lp_fmt_bytes(double bytes, char *buf, size_t len);
/* Text from outside (kernel, device, range, operator, host and command names; a config's
 * and Nsight Compute's strings), written by one rule wherever it is text (format.c,
 * docs/report.md): control characters and bytes that are not UTF-8 as \xNN, a backslash
 * kept. lp_fmt_puts: terminal output and Markdown prose, newlines escaped too;
 * lp_fmt_put_lines: the same with newlines kept (text of several lines composed here, the
 * printed summary); lp_fmt_escape: into BUF, cut at a whole character or escape where LEN
 * ends, returns BUF. */
void lp_fmt_puts(FILE *f, const char *s);
void lp_fmt_put_lines(FILE *f, const char *s);
const char *lp_fmt_escape(char *buf, size_t len, const char *s);
/* A GPU's UUID as nvidia-smi writes it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (BUF: 41
 * bytes at least) */
const char *lp_fmt_uuid(const uint8_t uuid[16], char *buf, size_t len);

/* Chrome trace event JSON for ui.perfetto.dev: GPU work per device and stream, NVTX ranges
 * and CUDA calls per thread, NVML counters, launch-to-kernel flows. Only events overlapping
 * [FROM_MS, TO_MS] after the first record are written (TO_MS 0: to the end). */
int lp_report_perfetto(FILE *out, const struct lp_run *r, uint64_t from_ms, uint64_t to_ms);

/* The same tracks and events in Perfetto's protobuf trace format (.pftrace), streamed:
 * about an eighth of the JSON's size. STATS says what the format made the writer change. */
struct lp_perfetto_stats {
    uint64_t shortened;           /* slices cut to end with the one they crossed: more than
                                     32 overlapping on one track */
    size_t tracks;                /* tracks written, overlap tracks included */
};
int lp_report_perfetto_pb(FILE *out, const struct lp_run *r, uint64_t from_ms, uint64_t to_ms,
                          struct lp_perfetto_stats *stats);

/* The SQLite export (llmprof export --sqlite; docs/sqlite-schema.md). lp_sqlite_open makes
 * PATH's tables and their indexes (PATH: a new file; the caller moves it in when complete),
 * lp_sqlite_add_trace writes one trace's rows under TRACE_ID (in one transaction),
 * lp_sqlite_close closes. Each returns 0, or -1 with ERR saying why. */
struct sqlite3;
int lp_sqlite_open(struct sqlite3 **db, const char *path, char *err, size_t errlen);
int lp_sqlite_add_trace(struct sqlite3 *db, int64_t trace_id, const char *trace_path,
                        const struct lp_run *r, char *err, size_t errlen);
int lp_sqlite_close(struct sqlite3 *db, char *err, size_t errlen);
/* traces.clock_offset_ns of TRACE_ID: what added to its times puts them on the run's
 * reference clock (lp_ranks_host.offset_ns); NULL OFFSET_NS: its host not aligned */
int lp_sqlite_set_clock(struct sqlite3 *db, int64_t trace_id, const int64_t *offset_ns,
                        char *err, size_t errlen);
/* The groups of RK (lp_ranks.groups) as rows of groups and group_members; TRACE_OF[i]: the
 * trace_id of RK's ranks[i] (0: none) */
int lp_sqlite_add_groups(struct sqlite3 *db, const struct lp_ranks *rk, const int64_t *trace_of,
                         char *err, size_t errlen);

/* llmprof watch's /metrics: Prometheus text exposition (format 0.0.4) of the live figures of
 * each trace followed, labelled by its file, process, rank and GPU. */
struct lp_prom_source {
    const char *trace;            /* the file's name in the run directory */
    const char *pid, *rank, *mode; /* from its header; NULL absent */
    struct lp_follow_stats follow;
    struct lp_live_facts facts;
    struct lp_live_window window;
};
/* WINDOW_S: the window gauges' length. Returns 0, or -1 on a write error. */
int lp_report_prometheus(FILE *out, const struct lp_prom_source *src, size_t n,
                         unsigned window_s);

#endif
