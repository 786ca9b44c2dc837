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

/* info takes one path, and --help only as its first word (any other is a path) */
static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof info RUN_DIR|TRACE.lpt\n"
    "\n"
    "Prints, for each trace of a run (one per process): its span, record counts by type,\n"
    "records lost (CUPTI drops, buffer bounds, write failures) and any part of the collector\n"
    "that could not start, the fraction of kernels tied to their launching call, the GPUs,\n"
    "the file size per kernel, and the top-level NVTX ranges grouped by name (key=value words\n"
    "such as tokens=512 are left out of the grouping). A trace cut short (killed process)\n"
    "is read up to its last whole chunk and the loss is stated. Exits with 1 when the\n"
    "directory holds no trace (the run recorded nothing) or a trace cannot be read.\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd info_cmd = {.name = "info", .opts = options};

/* CUPTI's device buffers and llmprof's host buffers as the collector left them in the header
 * (what it could read of each). */
static void print_buffers(const struct lp_trace *t)
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
        printf("%sCUPTI's device buffers: %s made per context, %s each, at most %s", sep,
               dev_n ? dev_n : "?", dev_b ? a : "?", dev_lim ? dev_lim : "?");
        sep = "; ";
    }
    if (peak) {
        lp_fmt_bytes(host_b ? strtod(host_b, NULL) : 0, a, sizeof a);
        printf("%shost buffers: %s at most in use, %s each", sep, peak, host_b ? a : "?");
        sep = "; ";
    }
    if (flush)
        printf("%swritten every %s ms", sep, flush);
    printf("\n");
}

/* meta.json's command: its words, or why they cannot be shown */
static void print_command(const json_t *cmd)
{
    if (!cmd) {
        printf("? (not in meta.json)");
        return;
    }
    int bad = lp_cli_meta_command(stdout, cmd, "?");
    if (bad < 0)
        printf("? (malformed in meta.json: 'command' is not a list of strings)");
    else if (bad)
        printf(" (malformed in meta.json: a word of 'command' is not a string)");
}

/* The run's meta.json (record writes it). Fields of the wrong type are said to be
 * malformed, never printed as what they are not. */
static void print_run_meta(const char *dir)
{
    char path[PATH_MAX + 16];
    struct stat st;
    if (lp_cli_meta_path(dir, path, sizeof path) != 0 || stat(path, &st) != 0) {
        printf("run %s (no meta.json)\n", dir);
        return;
    }
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    if (!m || !json_is_object(m)) {
        printf("run %s (meta.json unreadable: %s)\n", dir, m ? "not a JSON object" : jerr.text);
        json_decref(m);
        return;
    }
    printf("run %s\n  command  ", dir);
    print_command(json_object_get(m, "command"));
    json_t *status = json_object_get(m, "status");
    printf("\n  status   %s", json_is_string(status) ? json_string_value(status)
                             : status ? "? (malformed in meta.json: not a string)" : "?");
    json_t *code = json_object_get(m, "exit_code");
    if (json_is_integer(code))
        printf(" (exit %" JSON_INTEGER_FORMAT ")", json_integer_value(code));
    else if (code && !json_is_null(code))
        printf(" (exit code malformed in meta.json)");
    json_t *dur = json_object_get(m, "duration_s");
    if (json_is_number(dur))
        printf(", %.2f s wall", json_number_value(dur));
    json_t *start = json_object_get(m, "start_time");
    if (json_is_string(start))
        printf(", started %s", json_string_value(start));
    printf("\n");
    json_decref(m);
}

static void print_ranges(const struct lp_trace_summary *s)
{
    if (s->ranges.n_req)
        printf("  requests %zu request ranges of the request convention (docs/serving.md), %zu "
               "never closed\n", s->ranges.n_req, s->ranges.req_unclosed);
    if (s->n_top == 0) {
        printf("  nvtx     no ranges recorded\n");
        return;
    }
    printf("  nvtx     %zu ranges (%zu never closed, %zu unmatched ends); top level by name:\n",
           s->ranges.n, s->ranges.unclosed, s->ranges.unmatched_ends);
    printf("    %-32s %7s %12s %12s %12s %12s\n", "range", "count", "total", "mean", "min", "max");
    size_t shown = s->n_top < 15 ? s->n_top : 15;
    for (size_t i = 0; i < shown; i++) {
        const struct lp_range_group *g = &s->top[i];
        char tot[32], mean[32], mn[32], mx[32];
        lp_fmt_ns(g->total_ns, tot, sizeof tot);
        lp_fmt_ns(g->total_ns / g->count, mean, sizeof mean);
        lp_fmt_ns(g->min_ns, mn, sizeof mn);
        lp_fmt_ns(g->max_ns, mx, sizeof mx);
        printf("    %-32.32s %7zu %12s %12s %12s %12s\n", g->name[0] ? g->name : "(unnamed)",
               g->count, tot, mean, mn, mx);
    }
    if (s->n_top > shown)
        printf("    ... and %zu more names\n", s->n_top - shown);
}

/* GEMM calls: how many, how many tied to their kernels, how many with a known algorithm */
static void print_gemms(const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *state = lp_trace_meta(t, "gemm");
    if (t->n_gemms)
        printf("  gemm     %zu calls (cuBLAS/cuBLASLt), %zu tied to their %zu kernels; algorithm "
               "known for %zu\n", t->n_gemms, s->n_gemm_tied, s->n_gemm_kernels, s->n_gemm_algo);
    else if (state)
        printf("  gemm     %s\n", strncmp(state, "on", 2) ? state
                                                       : "on; the program made no cuBLAS GEMM call");
}

/* hardware counters (record --counters): segments and each counter's total */
static void print_counters(const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *metrics = lp_trace_meta(t, "counters_metrics");
    if (!t->n_counters && !metrics)
        return;
    printf("  counters %zu segments (%s); totals:", t->n_counters,
           metrics ? metrics : "no metrics recorded");
    for (unsigned k = 0; k < LP_COUNTER_COUNT; k++)
        if (s->counter_valid & (1u << k))
            printf(" %s %.6g", lp_counter_name(k), s->counter_total[k]);
    printf("\n");
}

/* PM samples (record --pm-sampling): how many, when relative to the trace's start, each
 * value's mean and the DRAM bytes moved */
static void print_pm(const struct lp_trace *t, const struct lp_trace_summary *s)
{
    const char *metrics = lp_trace_meta(t, "pm_metrics");
    if (!t->n_pm && !metrics)
        return;
    const size_t *n = s->pm_n;
    printf("  pm       %zu samples (%s)", t->n_pm, metrics ? metrics : "no metrics recorded");
    const char *s0 = lp_trace_meta(t, "start_trace_ns");
    if (t->n_pm && s0) {
        double base = strtod(s0, NULL);
        printf(", from %+.3f s to %+.3f s of the trace's start",
               ((double)t->pm[0].start - base) / 1e9, ((double)t->pm[t->n_pm - 1].end - base) / 1e9);
    }
    printf("; means:");
    for (unsigned k = 0; k < LP_PM_COUNT; k++)
        if (n[k] && k != LP_PM_DRAM_READ && k != LP_PM_DRAM_WRITE)
            printf(" %s %.4g%s", lp_pm_name(k), s->pm_value[k], k == LP_PM_GPC_MHZ ? " MHz" : "%");
    printf("; totals:");
    for (unsigned k = LP_PM_DRAM_READ; k <= LP_PM_DRAM_WRITE; k++)
        if (n[k])
            printf(" %s %.6g bytes", lp_pm_name(k), s->pm_value[k]);
    printf("\n");
}

static int info_trace(const char *path)
{
    struct lp_trace *t = NULL;
    char err[512];
    int rc = lp_trace_read(&t, path, err, sizeof err);
    if (rc != LP_OK) {
        lp_cli_error("info", "%s", err);
        return 1;
    }
    struct lp_trace_summary s;
    if (lp_trace_summarize(t, &s) != LP_OK) {
        lp_cli_error("info", "%s: out of memory", path);
        lp_trace_free(t);
        return 1;
    }
    const char *base = strrchr(path, '/');
    const char *pid = lp_trace_meta(t, "pid"), *rank = lp_trace_meta(t, "rank");
    const char *mode = lp_trace_meta(t, "mode");
    printf("\ntrace %s\n  process  pid %s%s%s on %s, mode %s, format %u.%u\n", base ? base + 1 : path,
           pid ? pid : "?", rank ? ", rank " : "", rank ? rank : "",
           lp_trace_meta(t, "host") ? lp_trace_meta(t, "host") : "?", mode ? mode : "?",
           t->version_major, t->version_minor);
    char a[32], b[32];
    lp_fmt_ns(s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0, a, sizeof a);
    lp_fmt_ns(s.kernel_ns, b, sizeof b);
    if (lp_trace_kernels_recorded(t))
        printf("  span     %s from first to last record; kernels ran %s in total\n", a, b);
    else
        printf("  span     %s from first to last record; kernels not recorded\n", a);
    const char *capture = lp_trace_meta(t, "capture");
    if (capture && strcmp(capture, "all")) {
        lp_fmt_ns((double)s.window_ns, a, sizeof a);
        printf("  capture  %s: kernels recorded only in %zu window%s, %s in all\n", capture,
               s.n_windows, s.n_windows == 1 ? "" : "s", a);
        const char *sw = lp_trace_meta(t, "capture_switch_ns");
        if (sw && strcmp(sw, "0")) {
            lp_fmt_ns(strtod(sw, NULL), a, sizeof a);
            printf("           switching recording on and off took %s\n", a);
        }
        const char *fin = lp_trace_meta(t, "capture_finalized"),
                   *fin_ns = lp_trace_meta(t, "capture_finalize_ns"),
                   *missed = lp_trace_meta(t, "capture_finalize_missed");
        if (fin && strcmp(fin, "0")) {
            lp_fmt_ns(fin_ns ? strtod(fin_ns, NULL) : 0, a, sizeof a);
            printf("           CUPTI finalized and set up again %s time%s between windows "
                   "(--finalize; the program's thread spent %s finalizing)\n", fin,
                   strcmp(fin, "1") ? "s" : "", a);
        }
        if (missed && strcmp(missed, "0"))
            printf("           %s window%s opened while CUPTI was being set up again: not "
                   "recorded\n", missed, strcmp(missed, "1") ? "s" : "");
        const char *after = lp_trace_meta(t, "capture_after_close");
        if (after && strcmp(after, "0"))
            printf("           %s kernels, copies and sets launched after a window closed "
                   "(recorded while the GPU caught up) left out\n", after);
    }
    const char *graphs = lp_trace_meta(t, "graphs");
    if (s.n_replays || (graphs && !strcmp(graphs, "replay")))
        printf("  graphs   %zu CUDA graph replays recorded whole (--graphs replay), counted "
               "with the kernels below; their kernels were not recorded one by one\n",
               s.n_replays);
    else if (graphs && !strcmp(graphs, "node"))
        printf("  graphs   each kernel of a CUDA graph replay recorded (--graphs node)\n");
    printf("  records  %zu kernels, %zu memcpy, %zu memset, %zu alloc/free, %zu nvtx markers, "
           "%zu api calls, %zu nvml samples, %zu overhead\n",
           t->n_kernels, t->n_memcpys, t->n_memsets, t->n_memory, t->n_markers, t->n_apis,
           t->n_nvml, t->n_overheads);
    if (t->n_memcpys || t->n_memsets) {
        lp_fmt_bytes(s.memcpy_bytes, a, sizeof a);
        lp_fmt_bytes(s.memset_bytes, b, sizeof b);
        printf("  bytes    %s copied, %s set\n", a, b);
    }
    if (t->n_nvml) {
        lp_fmt_ns(s.nvml_interval_ns, a, sizeof a);
        lp_fmt_ns(s.nvml_query_p50_ns, b, sizeof b);
        char c[32];
        lp_fmt_ns(s.nvml_query_p99_ns, c, sizeof c);
        printf("  nvml     %zu samples of %zu GPU%s, one every %s; each read took %s (p99 %s), "
               "its time is the midpoint\n", t->n_nvml, s.n_nvml_devices,
               s.n_nvml_devices == 1 ? "" : "s", a, b, c);
    }
    if (t->n_kernels && t->n_apis)
        printf("  launches %zu of %zu kernels tied to their launching call (%.2f %%)\n",
               s.n_launch_matched, t->n_kernels, 100.0 * (double)s.n_launch_matched / (double)t->n_kernels);
    print_buffers(t);
    print_gemms(t, &s);
    print_counters(t, &s);
    print_pm(t, &s);
    printf("  lost     %" PRIu64 " records", s.lost_records);
    if (s.n_loss_notes)
        printf("; %zu loss note%s without a count", s.n_loss_notes,
               s.n_loss_notes == 1 ? "" : "s");
    if (t->implausible)
        printf("; %" PRIu64 " implausible record%s left out (see below)", t->implausible,
               t->implausible == 1 ? "" : "s");
    printf("%s\n", t->complete ? "" : "; the process did not finish the trace (killed or crashed)");
    for (size_t i = 0; i < t->n_losses; i++) {
        printf("    - %s", lp_trace_str(t, t->losses[i].what));
        if (t->losses[i].count)
            printf(" (%" PRIu64 " record%s)\n", t->losses[i].count,
                   t->losses[i].count == 1 ? "" : "s");
        else
            printf(" (no count)\n");
    }
    for (size_t i = 0; i < t->n_warnings; i++)
        printf("    - reader: %s\n", t->warnings[i]);
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct lp_device *d = &t->devices[i];
        lp_fmt_bytes(d->mem_bytes, a, sizeof a);
        printf("  gpu %u    %s, cc %u.%u, %u SMs, %s", d->id, lp_trace_str(t, d->name), d->cc_major,
               d->cc_minor, d->sm_count, a);
        if (d->max_sm_mhz)
            printf(", max SM %u MHz, max mem %u MHz", d->max_sm_mhz, d->max_mem_mhz);
        if (d->power_limit_mw)
            printf(", power limit %u W", d->power_limit_mw / 1000);
        printf("\n");
    }
    lp_fmt_bytes(t->file_bytes, a, sizeof a);
    printf("  file     %s", a);
    if (t->n_kernels)
        printf(", %.1f bytes per kernel (all records included)", (double)t->file_bytes / (double)t->n_kernels);
    printf("\n");
    print_ranges(&s);
    lp_trace_summary_free(&s);
    lp_trace_free(t);
    return 0;
}

int lp_cmd_info(int argc, char **argv)
{
    if (argc >= 2 && lp_cli_is_help(&info_cmd, argv[1])) {
        lp_cli_help(&info_cmd, stdout);
        return 0;
    }
    if (argc != 2) {
        lp_cli_error("info", "expects one run directory or trace file; see 'llmprof info --help'");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        lp_cli_error("info", "%s does not exist", argv[1]);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return info_trace(argv[1]);
    char **traces = NULL;
    int n = lp_cli_list_traces(argv[1], &traces);
    if (n < 0) {
        lp_cli_error("info", "cannot read the directory %s: %s", argv[1], strerror(errno));
        return 1;
    }
    /* any *.lpt is shown (a trace copied under another name); without one, only a run */
    int run = n ? 1 : lp_cli_dir_holds_run(argv[1]);
    if (run <= 0) {
        if (run < 0)
            lp_cli_error("info", "cannot read the directory %s: %s", argv[1], strerror(errno));
        else
            lp_cli_error("info", "%s holds neither a trace (*.lpt) nor the meta.json of "
                                 "'llmprof record': not a run directory", argv[1]);
        lp_cli_free_list(traces, 0);
        return 1;
    }
    print_run_meta(argv[1]);
    if (n == 0) {
        /* the run recorded nothing: say so, and fail, so that scripts notice */
        printf("  no traces: no process of the command initialised CUDA, or the collector could "
               "not write here\n");
        fflush(stdout);
        lp_cli_error("info", "%s holds no trace (*.lpt)", argv[1]);
        lp_cli_free_list(traces, 0);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++)
        rc |= info_trace(traces[i]);
    lp_cli_free_list(traces, n);
    return rc;
}
