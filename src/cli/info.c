/* llmprof info: a quick look at a run directory or a single trace: duration, record
 * counts, losses, GPUs and the top-level NVTX ranges. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/report.h"
#include "llmprof/analyze.h"
#include "llmprof/trace.h"

/* A string of the trace or meta.json (any bytes), escaped: a newline in it too; "?" when
 * there is none. */
static void put(FILE *o, const char *s)
{
    lp_fmt_puts(o, s ? s : "?");
}

struct info_opts {
    const char *run;   /* the operand */
};

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof info RUN_DIR|TRACE.lpt\n"
    "\n"
    "Prints, for each trace of a run (one per process): its span, record counts by type,\n"
    "records lost (CUPTI drops, buffer bounds, write failures) and any part of the collector\n"
    "that could not start, the fraction of kernels tied to their launching call, the GPUs,\n"
    "the file size per kernel, and the top-level NVTX ranges grouped by name (key=value words\n"
    "such as tokens=512 are left out of the grouping). A trace cut short (killed process)\n"
    "is read up to its last whole chunk and the loss is stated. Exits with 1 when RUN_DIR or\n"
    "TRACE.lpt is missing, not a regular file or directory, holds no trace (the run recorded\n"
    "nothing) or a trace cannot be read; with 2 on a mistake of the command line.\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd info_cmd = {
    .name = "info", .opts = options, .operand = 1,
    .operand_off = offsetof(struct info_opts, run), .too_many = "one run at a time",
};

/* CUPTI's device buffers and llmprof's host buffers as the collector left them in the header
 * (what it could read of each). */
static void print_buffers(FILE *o, const struct lp_trace *t)
{
    const char *dev_n = lp_trace_meta(t, "cupti_device_buffers"),
               *dev_b = lp_trace_meta(t, "cupti_device_buffer_bytes"),
               *dev_lim = lp_trace_meta(t, "cupti_device_buffer_limit"),
               *peak = lp_trace_meta(t, "activity_buffers_peak"),
               *host_b = lp_trace_meta(t, "activity_buffer_bytes"),
               *flush = lp_trace_meta(t, "flush_ms");
    if (!dev_n && !dev_b && !dev_lim && !peak && !flush)
        return;
    char a[32];
    const char *sep = "  buffers  ";
    if (dev_b || dev_n || dev_lim) {
        lp_fmt_bytes(dev_b ? strtod(dev_b, NULL) : 0, a, sizeof a);
        fprintf(o, "%sCUPTI's device buffers: ", sep);
        put(o, dev_n);
        fprintf(o, " made per context, %s each, at most ", dev_b ? a : "?");
        put(o, dev_lim);
        sep = "; ";
    }
    if (peak) {
        lp_fmt_bytes(host_b ? strtod(host_b, NULL) : 0, a, sizeof a);
        fprintf(o, "%shost buffers: ", sep);
        put(o, peak);
        fprintf(o, " at most in use, %s each", host_b ? a : "?");
        sep = "; ";
    }
    if (flush) {
        fprintf(o, "%swritten every ", sep);
        put(o, flush);
        fprintf(o, " ms");
    }
    fprintf(o, "\n");
}

/* meta.json's command: its words, or why they cannot be shown */
static void print_command(FILE *o, const json_t *cmd)
{
    if (!cmd) {
        fprintf(o, "? (not in meta.json)");
        return;
    }
    char *words = NULL; /* one line: a newline in a word is escaped too */
    size_t len = 0;
    FILE *w = open_memstream(&words, &len);
    if (!w) {
        fprintf(o, "? (out of memory)");
        return;
    }
    int bad = lp_cli_meta_command(w, cmd, "?");
    fclose(w);
    put(o, words);
    free(words);
    if (bad < 0)
        fprintf(o, "? (malformed in meta.json: 'command' is not a list of strings)");
    else if (bad)
        fprintf(o, " (malformed in meta.json: a word of 'command' is not a string)");
}

/* The run's meta.json (record writes it). Fields of the wrong type are said to be
 * malformed, never printed as what they are not. */
static void print_run_meta(FILE *o, const char *dir)
{
    char path[PATH_MAX + 16];
    struct stat st;
    if (lp_cli_meta_path(dir, path, sizeof path) != 0 || stat(path, &st) != 0) {
        fprintf(o, "run %s (no meta.json)\n", dir);
        return;
    }
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    if (!m || !json_is_object(m)) {
        fprintf(o, "run %s (meta.json unreadable: ", dir); /* jansson's text quotes the file */
        put(o, m ? "not a JSON object" : jerr.text);
        fprintf(o, ")\n");
        json_decref(m);
        return;
    }
    fprintf(o, "run %s\n  command  ", dir);
    print_command(o, json_object_get(m, "command"));
    json_t *status = json_object_get(m, "status");
    fprintf(o, "\n  status   ");
    if (json_is_string(status))
        put(o, json_string_value(status));
    else
        fprintf(o, "%s", status ? "? (malformed in meta.json: not a string)" : "?");
    json_t *code = json_object_get(m, "exit_code");
    if (json_is_integer(code))
        fprintf(o, " (exit %" JSON_INTEGER_FORMAT ")", json_integer_value(code));
    else if (code && !json_is_null(code))
        fprintf(o, " (exit code malformed in meta.json)");
    json_t *dur = json_object_get(m, "duration_s");
    if (json_is_number(dur))
        fprintf(o, ", %.2f s wall", json_number_value(dur));
    json_t *start = json_object_get(m, "start_time");
    if (json_is_string(start)) {
        fprintf(o, ", started ");
        put(o, json_string_value(start));
    }
    fprintf(o, "\n");
    json_decref(m);
}

static void print_ranges(FILE *o, const struct lp_trace_summary *s)
{
    if (s->ranges.n_req)
        fprintf(o, "  requests %zu request ranges of the request convention (docs/serving.md), %zu "
                   "never closed\n", s->ranges.n_req, s->ranges.req_unclosed);
    if (s->n_top == 0) {
        fprintf(o, "  nvtx     no ranges recorded\n");
        return;
    }
    fprintf(o, "  nvtx     %zu ranges (%zu never closed, %zu unmatched ends); top level by name:\n",
            s->ranges.n, s->ranges.unclosed, s->ranges.unmatched_ends);
    fprintf(o, "    %-32s %7s %12s %12s %12s %12s\n", "range", "count", "total", "mean", "min",
            "max");
    size_t shown = s->n_top < 15 ? s->n_top : 15;
    for (size_t i = 0; i < shown; i++) {
        const struct lp_range_group *g = &s->top[i];
        char tot[32], mean[32], mn[32], mx[32];
        lp_fmt_ns(g->total_ns, tot, sizeof tot);
        lp_fmt_ns(g->total_ns / g->count, mean, sizeof mean);
        lp_fmt_ns(g->min_ns, mn, sizeof mn);
        lp_fmt_ns(g->max_ns, mx, sizeof mx);
        char name[33]; /* escaped first, so that the column is cut at a whole escape */
        lp_fmt_escape(name, sizeof name, g->name[0] ? g->name : "(unnamed)");
        fprintf(o, "    %-32s %7zu %12s %12s %12s %12s\n", name, g->count, tot, mean, mn, mx);
    }
    if (s->n_top > shown)
        fprintf(o, "    ... and %zu more names\n", s->n_top - shown);
}

/* GEMM calls: how many, how many tied to their kernels, how many with a known algorithm */
static void print_gemms(FILE *o, const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *state = lp_trace_meta(t, "gemm");
    if (t->n_gemms)
        fprintf(o, "  gemm     %zu calls (cuBLAS/cuBLASLt), %zu tied to their %zu kernels; "
                   "algorithm known for %zu\n", t->n_gemms, s->n_gemm_tied, s->n_gemm_kernels,
                s->n_gemm_algo);
    else if (state) {
        fprintf(o, "  gemm     ");
        put(o, strncmp(state, "on", 2) ? state : "on; the program made no cuBLAS GEMM call");
        fprintf(o, "\n");
    }
}

/* hardware counters (record --counters): segments and each counter's total */
static void print_counters(FILE *o, const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *metrics = lp_trace_meta(t, "counters_metrics");
    if (!t->n_counters && !metrics)
        return;
    fprintf(o, "  counters %zu segments (", t->n_counters);
    put(o, metrics ? metrics : "no metrics recorded");
    fprintf(o, "); totals:");
    for (unsigned k = 0; k < LP_COUNTER_COUNT; k++)
        if (s->counter_valid & (1u << k))
            fprintf(o, " %s %.6g", lp_counter_name(k), s->counter_total[k]);
    fprintf(o, "\n");
}

/* PM samples (record --pm-sampling): how many, when relative to the trace's start, each
 * value's mean and the DRAM bytes moved */
static void print_pm(FILE *o, const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *metrics = lp_trace_meta(t, "pm_metrics");
    if (!t->n_pm && !metrics)
        return;
    const size_t *n = s->pm_n;
    fprintf(o, "  pm       %zu samples (", t->n_pm);
    put(o, metrics ? metrics : "no metrics recorded");
    fprintf(o, ")");
    const char *s0 = lp_trace_meta(t, "start_trace_ns");
    if (t->n_pm && s0) {
        double base = strtod(s0, NULL);
        fprintf(o, ", from %+.3f s to %+.3f s of the trace's start",
                ((double)t->pm[0].start - base) / 1e9,
                ((double)t->pm[t->n_pm - 1].end - base) / 1e9);
    }
    fprintf(o, "; means:");
    for (unsigned k = 0; k < LP_PM_COUNT; k++)
        if (n[k] && k != LP_PM_DRAM_READ && k != LP_PM_DRAM_WRITE)
            fprintf(o, " %s %.4g%s", lp_pm_name(k), s->pm_value[k],
                    k == LP_PM_GPC_MHZ ? " MHz" : "%");
    fprintf(o, "; totals:");
    for (unsigned k = LP_PM_DRAM_READ; k <= LP_PM_DRAM_WRITE; k++)
        if (n[k])
            fprintf(o, " %s %.6g bytes", lp_pm_name(k), s->pm_value[k]);
    fprintf(o, "\n");
}

/* the trace's process, host, mode and format, and the span of its records */
static void print_process(FILE *o, const char *path, const struct lp_trace *t,
                          const struct lp_trace_summary *s)
{
    const char *base = strrchr(path, '/');
    const char *pid = lp_trace_meta(t, "pid"), *rank = lp_trace_meta(t, "rank");
    const char *mode = lp_trace_meta(t, "mode");
    fprintf(o, "\ntrace ");
    put(o, base ? base + 1 : path);
    fprintf(o, "\n  process  pid ");
    put(o, pid);
    if (rank) {
        fprintf(o, ", rank ");
        put(o, rank);
    }
    fprintf(o, " on ");
    put(o, lp_trace_meta(t, "host"));
    fprintf(o, ", mode ");
    put(o, mode);
    fprintf(o, ", format %u.%u\n", t->version_major, t->version_minor);
    char a[32], b[32];
    lp_fmt_ns(s->last_ns > s->first_ns ? s->last_ns - s->first_ns : 0, a, sizeof a);
    lp_fmt_ns(s->kernel_ns, b, sizeof b);
    if (lp_trace_kernels_recorded(t))
        fprintf(o, "  span     %s from first to last record; kernels ran %s in total\n", a, b);
    else
        fprintf(o, "  span     %s from first to last record; kernels not recorded\n", a);
}

/* capture windows (record --capture): how many, how long, what switching them cost */
static void print_capture(FILE *o, const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *capture = lp_trace_meta(t, "capture");
    if (!capture || !strcmp(capture, "all"))
        return;
    char a[32];
    lp_fmt_ns((double)s->window_ns, a, sizeof a);
    fprintf(o, "  capture  ");
    put(o, capture);
    fprintf(o, ": kernels recorded only in %zu window%s, %s in all\n", s->n_windows,
            s->n_windows == 1 ? "" : "s", a);
    const char *sw = lp_trace_meta(t, "capture_switch_ns");
    if (sw && strcmp(sw, "0")) {
        lp_fmt_ns(strtod(sw, NULL), a, sizeof a);
        fprintf(o, "           switching recording on and off took %s\n", a);
    }
    const char *fin = lp_trace_meta(t, "capture_finalized"),
               *fin_ns = lp_trace_meta(t, "capture_finalize_ns"),
               *missed = lp_trace_meta(t, "capture_finalize_missed");
    if (fin && strcmp(fin, "0")) {
        lp_fmt_ns(fin_ns ? strtod(fin_ns, NULL) : 0, a, sizeof a);
        fprintf(o, "           CUPTI finalized and set up again ");
        put(o, fin);
        fprintf(o, " time%s between windows (--finalize; the program's thread spent %s "
                   "finalizing)\n", strcmp(fin, "1") ? "s" : "", a);
    }
    if (missed && strcmp(missed, "0")) {
        fprintf(o, "           ");
        put(o, missed);
        fprintf(o, " window%s opened while CUPTI was being set up again: not recorded\n",
                strcmp(missed, "1") ? "s" : "");
    }
    const char *after = lp_trace_meta(t, "capture_after_close");
    if (after && strcmp(after, "0")) {
        fprintf(o, "           ");
        put(o, after);
        fprintf(o, " kernels, copies and sets launched after a window closed (recorded "
                   "while the GPU caught up) left out\n");
    }
}

/* graph replays, record counts, bytes copied and set, NVML sampling, launches tied */
static void print_records(FILE *o, const struct lp_trace *t, const struct lp_trace_summary *s)
{
    char a[32], b[32];
    const char *graphs = lp_trace_meta(t, "graphs");
    if (s->n_replays || (graphs && !strcmp(graphs, "replay")))
        fprintf(o, "  graphs   %zu CUDA graph replays recorded whole (--graphs replay), counted "
                   "with the kernels below; their kernels were not recorded one by one\n",
                s->n_replays);
    else if (graphs && !strcmp(graphs, "node"))
        fprintf(o, "  graphs   each kernel of a CUDA graph replay recorded (--graphs node)\n");
    fprintf(o, "  records  %zu kernels, %zu memcpy, %zu memset, %zu alloc/free, %zu nvtx markers, "
               "%zu api calls, %zu nvml samples, %zu overhead\n",
            t->n_kernels, t->n_memcpys, t->n_memsets, t->n_memory, t->n_markers, t->n_apis,
            t->n_nvml, t->n_overheads);
    if (t->n_memcpys || t->n_memsets) {
        lp_fmt_bytes(s->memcpy_bytes, a, sizeof a);
        lp_fmt_bytes(s->memset_bytes, b, sizeof b);
        fprintf(o, "  bytes    %s copied, %s set\n", a, b);
    }
    if (t->n_nvml) {
        lp_fmt_ns(s->nvml_interval_ns, a, sizeof a);
        lp_fmt_ns(s->nvml_query_p50_ns, b, sizeof b);
        char c[32];
        lp_fmt_ns(s->nvml_query_p99_ns, c, sizeof c);
        fprintf(o, "  nvml     %zu samples of %zu GPU%s, one every %s; each read took %s (p99 %s), "
                   "its time is the midpoint\n", t->n_nvml, s->n_nvml_devices,
                s->n_nvml_devices == 1 ? "" : "s", a, b, c);
    }
    if (t->n_kernels && t->n_apis)
        fprintf(o, "  launches %zu of %zu kernels tied to their launching call (%.2f %%)\n",
                s->n_launch_matched, t->n_kernels,
                100.0 * (double)s->n_launch_matched / (double)t->n_kernels);
}

/* records lost, each loss, and what the reader recovered from */
static void print_losses(FILE *o, const struct lp_trace *t, const struct lp_trace_summary *s)
{
    fprintf(o, "  lost     %" PRIu64 " record%s", s->lost_records, s->lost_records == 1 ? "" : "s");
    if (s->n_loss_notes)
        fprintf(o, "; %zu loss note%s without a count", s->n_loss_notes,
                s->n_loss_notes == 1 ? "" : "s");
    if (t->implausible)
        fprintf(o, "; %" PRIu64 " implausible record%s left out (see below)", t->implausible,
                t->implausible == 1 ? "" : "s");
    fprintf(o, "%s\n",
            t->complete ? "" : "; the process did not finish the trace (killed or crashed)");
    for (size_t i = 0; i < t->n_losses; i++) {
        fprintf(o, "    - ");
        put(o, lp_trace_str(t, t->losses[i].what));
        if (t->losses[i].count)
            fprintf(o, " (%" PRIu64 " record%s)\n", t->losses[i].count,
                    t->losses[i].count == 1 ? "" : "s");
        else
            fprintf(o, " (no count)\n");
    }
    for (size_t i = 0; i < t->n_warnings; i++) {
        fprintf(o, "    - reader: ");
        put(o, t->warnings[i]);
        fprintf(o, "\n");
    }
}

/* the GPUs, and the file's size per kernel */
static void print_devices(FILE *o, const struct lp_trace *t)
{
    char a[32];
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct lp_device *d = &t->devices[i];
        lp_fmt_bytes(d->mem_bytes, a, sizeof a);
        fprintf(o, "  gpu %u    ", d->id);
        put(o, lp_trace_str(t, d->name));
        fprintf(o, ", cc %u.%u, %u SMs, %s", d->cc_major, d->cc_minor, d->sm_count, a);
        if (d->max_sm_mhz)
            fprintf(o, ", max SM %u MHz, max mem %u MHz", d->max_sm_mhz, d->max_mem_mhz);
        if (d->power_limit_mw)
            fprintf(o, ", power limit %u W", d->power_limit_mw / 1000);
        fprintf(o, "\n");
    }
    lp_fmt_bytes(t->file_bytes, a, sizeof a);
    fprintf(o, "  file     %s", a);
    if (t->n_kernels)
        fprintf(o, ", %.1f bytes per kernel (all records included)",
                (double)t->file_bytes / (double)t->n_kernels);
    fprintf(o, "\n");
}

/* Reads trace PATH and prints what it holds: 0, or the exit status with a message. */
static int info_trace(const char *path)
{
    struct lp_trace *t = NULL;
    char err[512];
    int rc = lp_trace_read(&t, path, err, sizeof err);
    if (rc != LP_OK) {
        lp_cli_error("info", "%s", err);
        return LP_CLI_EXIT_INPUT;
    }
    struct lp_trace_summary s;
    if (lp_trace_summarize(t, &s) != LP_OK) {
        lp_cli_error("info", "%s: out of memory", path);
        lp_trace_free(t);
        return LP_CLI_EXIT_INPUT;
    }
    /* the trace's strings (names, header values) may hold any bytes: each is escaped where it
     * is printed, and the whole text passes the rule once more (lines kept) as a safety net */
    char *text = NULL;
    size_t text_len = 0;
    FILE *o = open_memstream(&text, &text_len);
    if (!o) {
        lp_cli_error("info", "%s: out of memory", path);
        lp_trace_summary_free(&s);
        lp_trace_free(t);
        return LP_CLI_EXIT_INPUT;
    }
    print_process(o, path, t, &s);
    print_capture(o, t, &s);
    print_records(o, t, &s);
    print_buffers(o, t);
    print_gemms(o, t, &s);
    print_counters(o, t, &s);
    print_pm(o, t, &s);
    print_losses(o, t, &s);
    print_devices(o, t);
    print_ranges(o, &s);
    fclose(o);
    lp_fmt_put_lines(stdout, text);
    free(text);
    lp_trace_summary_free(&s);
    lp_trace_free(t);
    return 0;
}

/* The run directory DIR: its meta.json, then each trace. The exit status. */
static int info_dir(const char *dir)
{
    char **traces = NULL;
    int n = lp_cli_list_traces(dir, &traces);
    if (n < 0) {
        lp_cli_error("info", "cannot read the directory %s: %s", dir, strerror(errno));
        return LP_CLI_EXIT_INPUT;
    }
    /* any *.lpt is shown (a trace copied under another name); without one, only a run */
    int run = n ? 1 : lp_cli_dir_holds_run(dir);
    if (run <= 0) {
        if (run < 0)
            lp_cli_error("info", "cannot read the directory %s: %s", dir, strerror(errno));
        else if (!lp_cli_repeats_said("info", dir))
            lp_cli_error("info", "%s holds neither a trace (*.lpt) nor the meta.json of "
                                 "'llmprof record': not a run directory", dir);
        lp_cli_free_list(traces, 0);
        return LP_CLI_EXIT_INPUT;
    }
    char *meta = NULL;
    size_t meta_len = 0;
    FILE *o = open_memstream(&meta, &meta_len);
    if (!o) {
        lp_cli_error("info", "out of memory");
        lp_cli_free_list(traces, n);
        return LP_CLI_EXIT_INPUT;
    }
    print_run_meta(o, dir); /* meta.json's strings escaped like the trace's */
    fclose(o);
    lp_fmt_put_lines(stdout, meta);
    free(meta);
    if (n == 0) {
        /* the run recorded nothing: say so, and fail, so that scripts notice */
        printf("  no traces: no process of the command initialised CUDA, or the collector could "
               "not write here\n");
        fflush(stdout);
        lp_cli_error("info", "%s holds no trace (*.lpt)", dir);
        lp_cli_free_list(traces, 0);
        return LP_CLI_EXIT_INPUT;
    }
    int rc = 0;
    for (int i = 0; i < n; i++)
        if (info_trace(traces[i]) != 0)
            rc = LP_CLI_EXIT_INPUT;
    lp_cli_free_list(traces, n);
    return rc;
}

int lp_cmd_info(int argc, char **argv)
{
    struct info_opts opt = {0};
    int rc = lp_cli_parse(&info_cmd, &opt, argc, argv, NULL);
    if (rc != 0)
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    if (!opt.run) {
        lp_cli_error("info", "expects one run directory or trace file; see 'llmprof info --help'");
        return LP_CLI_EXIT_USAGE;
    }
    struct stat st;
    if (stat(opt.run, &st) != 0) {
        if (errno == ENOENT)
            lp_cli_error("info", "%s does not exist", opt.run);
        else
            lp_cli_error("info", "%s: %s", opt.run, strerror(errno));
        return LP_CLI_EXIT_INPUT;
    }
    if (lp_cli_run_check("info", opt.run) != 0)
        return LP_CLI_EXIT_INPUT;
    return S_ISDIR(st.st_mode) ? info_dir(opt.run) : info_trace(opt.run);
}
