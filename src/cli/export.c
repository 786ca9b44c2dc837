/* llmprof export: converts a trace for other viewers. --perfetto writes the Chrome trace
 * event JSON that ui.perfetto.dev and chrome://tracing open, or Perfetto's protobuf for a
 * .pftrace; --sqlite one SQLite database of every trace of a run (docs/sqlite-schema.md). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/report.h"

struct export_opts {
    const char *run, *out, *sqlite;
    unsigned long long from, to;   /* --window, ms from the first record */
    int window;
    int force;                     /* --force: replace an existing FILE */
};

static int parse_window(const struct lp_cli_opt *o, void *value, const char *cmd,
                        const char *opt, const char *arg);

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof export RUN --perfetto FILE.json|FILE.pftrace [--window FROM_MS:TO_MS]\n"
    "                      [--force]\n"
    "       llmprof export RUN --sqlite FILE.db [--force]\n"
    "\n"
    "Writes a recorded trace (RUN: a run directory with one trace, or a .lpt file) in the\n"
    "Chrome trace event format, which ui.perfetto.dev opens offline (Open trace file):\n"
    "  - a host process: NVTX ranges and the recorded CUDA calls per thread;\n"
    "  - one process per GPU: kernels, copies and sets per stream, with grid, block,\n"
    "    registers, shared memory and category in their arguments;\n"
    "  - NVML samples as counter tracks (power, clocks, utilisation, temperature, memory);\n"
    "  - a flow arrow from each launching call to the kernel it launched.\n"
    "Timestamps are microseconds from the first record. With several traces in RUN, give\n"
    "the .lpt file. A kernel takes about 650 bytes of JSON (with its call and flow).\n"
    "FILE.pftrace (or .perfetto-trace, .pb) is Perfetto's own protobuf format instead: the\n"
    "same tracks and events, streamed, at about 80 bytes per kernel; slices that overlap on\n"
    "a stream or thread without nesting go to an overlap track beside it, and PM sampling's\n"
    "counters come too (docs/report.md, \"Perfetto export\"). For long runs, --window\n"
    "FROM_MS:TO_MS keeps what overlaps that span (ms from the first record; report.md's\n"
    "timeline gives the times); full kernel names are in kernels.csv. An export estimated\n"
    "above 1 GiB is announced first (LLMPROF_EXPORT_WARN_MIB sets the bound).\n"
    "\n"
    "The file is written under a temporary name and moved in when complete; '-' is standard\n"
    "output (the JSON); a device or FIFO is written in place; a symbolic link is followed\n"
    "(its target gets the export). The trace itself is refused as the output (status 2),\n"
    "and so is a file that is already there, unless --force: then it is replaced, only once\n"
    "the new one is complete.\n"
    "\n"
    "--sqlite FILE.db writes every trace of RUN (all ranks and processes) into one SQLite\n"
    "database, a row per record: kernels (with the stage the report gives each), copies,\n"
    "sets, API calls, NVTX ranges, GEMM calls, NVML samples, capture windows, losses, stages\n"
    "and their spans, devices and the traces' header keys; each row names its trace\n"
    "(trace_id, the traces table); work rows name their launching call by api_id. Indexed by\n"
    "time. Tables and columns: docs/sqlite-schema.md. Written under a temporary name and\n"
    "moved in when complete.\n"
    "\n"
    "examples:\n"
    "  llmprof export run1 --perfetto run1/trace.json\n"
    "  llmprof export run1 --perfetto run1/trace.pftrace --window 2000:2500\n"
    "  llmprof export run1 --sqlite run1.db && sqlite3 run1.db \\\n"
    "    'SELECT short_name, SUM(end_ns - start_ns) AS ns FROM kernels\n"
    "     JOIN kernel_names USING (trace_id, name_id) GROUP BY 1 ORDER BY 2 DESC LIMIT 5'\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--perfetto", .arg = "FILE.json|FILE.pftrace",
     .off = offsetof(struct export_opts, out), .missing = "an output file ('-': standard output)",
     .empty = "an output file ('-': standard output), not an empty path"},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--window", .arg = "FROM_MS:TO_MS",
     .parse = parse_window},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--sqlite", .arg = "FILE.db",
     .off = offsetof(struct export_opts, sqlite), .missing = "an output file",
     .empty = "an output file, not an empty path"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--force", .off = offsetof(struct export_opts, force),
     .set = 1},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd export_cmd = {
    .name = "export", .opts = options, .operand = 1,
    .operand_off = offsetof(struct export_opts, run), .unexpected = 1,
};

/* a window bound in ms: digits only, so that ns from the trace's start cannot overflow */
#define MAX_WINDOW_MS 1000000000000ull

static int parse_ms(const char *s, const char *end, unsigned long long *out)
{
    unsigned long long v = 0;
    if (s == end)
        return -1;
    for (; s < end; s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        v = v * 10 + (unsigned)(*s - '0');
        if (v > MAX_WINDOW_MS)
            return -1;
    }
    *out = v;
    return 0;
}

static int parse_window(const struct lp_cli_opt *o, void *value, const char *cmd,
                        const char *opt, const char *arg)
{
    (void)o;
    struct export_opts *e = value;
    const char *colon = arg ? strchr(arg, ':') : NULL;
    if (!colon || parse_ms(arg, colon, &e->from) != 0 ||
        parse_ms(colon + 1, colon + strlen(colon), &e->to) != 0 || e->to <= e->from) {
        lp_cli_error(cmd, "%s takes FROM_MS:TO_MS with FROM < TO (at most %llu), e.g. 2000:2500",
                     opt, MAX_WINDOW_MS);
        return -1;
    }
    e->window = 1;
    return 0;
}

/* What the export will hold: events overlapping [from, to] (the writer's test) and their
 * size, from the writers' record layouts (JSON; PB: Perfetto's protobuf, interned names
 * not counted): measured within a few percent for the JSON, within 10 % for the protobuf
 * (a CUDA graph launch's flows counted once). */
struct estimate {
    uint64_t bytes, events, kernels, last_ns;
};

static void count(struct estimate *e, uint64_t a, uint64_t b, uint64_t from, uint64_t to,
                  uint64_t bytes)
{
    if (b > e->last_ns)
        e->last_ns = b;
    if (b >= from && a <= to) {
        e->events++;
        e->bytes += bytes;
    }
}

static void estimate(const struct lp_run *r, uint64_t from, uint64_t to, int pb,
                     struct estimate *e)
{
    const struct lp_trace *t = r->trace;
    memset(e, 0, sizeof *e);
    e->last_ns = r->t0_ns;
    for (size_t i = 0; i < r->ranges.n; i++)
        count(e, r->ranges.v[i].start, r->ranges.v[i].end, from, to,
              pb ? 30 : 96 + strlen(lp_trace_str(t, r->ranges.v[i].name)));
    for (size_t i = 0; i < r->ranges.n_req; i++) /* a begin and an end each */
        count(e, r->ranges.req[i].start, r->ranges.req[i].end, from, to,
              pb ? 30 + strlen(lp_trace_str(t, r->ranges.req[i].name))
                 : 2 * (100 + strlen(lp_trace_str(t, r->ranges.req[i].name))));
    for (size_t i = 0; i < t->n_markers; i++)
        if (t->markers[i].flags & LP_MARKER_FLAG_INSTANT)
            count(e, t->markers[i].timestamp, t->markers[i].timestamp, from, to,
                  pb ? 16 : 90 + strlen(lp_trace_str(t, t->markers[i].name)));
    for (size_t i = 0; i < r->serving.n_iters; i++)
        count(e, r->serving.iters[i].end, r->serving.iters[i].end, from, to, pb ? 90 : 260);
    for (size_t i = 0; i < t->n_apis; i++) {
        const char *n = lp_trace_str(t, lp_trace_api_kind(t, &t->apis[i])->name);
        int flow = strstr(n, "aunch") || strstr(n, "emcpy") || strstr(n, "emset");
        count(e, t->apis[i].start, lp_trace_api_end(t, &t->apis[i]), from, to,
              pb ? 26 + (flow ? 10 : 0) : 135 + strlen(n) + (flow ? 95 : 0));
    }
    for (size_t i = 0; i < t->n_kernels; i++) {
        uint64_t before = e->events;
        count(e, t->kernels[i].start, lp_trace_kernel_end(t, &t->kernels[i]), from, to,
              pb ? 42 : 330 + strlen(r->short_names[lp_run_kernel_group(r, i)]));
        e->kernels += e->events - before;
    }
    for (size_t i = 0; i < t->n_memcpys; i++)
        count(e, t->memcpys[i].start, t->memcpys[i].end, from, to, pb ? 44 : 250);
    for (size_t i = 0; i < t->n_memsets; i++)
        count(e, t->memsets[i].start, t->memsets[i].end, from, to, pb ? 44 : 250);
    for (size_t i = 0; i < t->n_nvml; i++)
        count(e, t->nvml[i].timestamp, t->nvml[i].timestamp, from, to,
              (pb ? 20 : 85) * (size_t)__builtin_popcount(t->nvml[i].valid & 0xbd));
}

/* FILE.pftrace (or .perfetto-trace, .pb): Perfetto's protobuf; anything else the JSON */
static int is_protobuf(const char *out)
{
    static const char *const ext[] = {".pftrace", ".perfetto-trace", ".pb"};
    size_t n = strlen(out);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && strcmp(out + n - k, ext[i]) == 0)
            return 1;
    }
    return 0;
}

/* the size from which an export is announced before it is written */
static uint64_t warn_bytes(void)
{
    const char *v = getenv("LLMPROF_EXPORT_WARN_MIB");
    char *end;
    unsigned long long mib = v && *v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end || mib == 0 || mib > (1ull << 40))
        mib = 1024;
    return (uint64_t)mib << 20;
}

/* T0 plus MS milliseconds, at most the clock's end */
static uint64_t ms_after(uint64_t t0, uint64_t ms)
{
    uint64_t ns, t;
    if (__builtin_mul_overflow(ms, 1000000, &ns) || __builtin_add_overflow(t0, ns, &t))
        return UINT64_MAX;
    return t;
}

/* traces.clock_offset_ns of the N traces taken as RANKS (IDS their trace ids; TRACES the
 * run's paths): each host's offset as `report` finds it (NULL where not aligned), and the
 * groups of ranks as report finds them. RANKS (the array too) are freed. 0 or -1, said. */
static int set_clocks(struct sqlite3 *db, struct lp_rank *ranks, const int64_t *ids, size_t n,
                      char **traces, const char *out)
{
    struct lp_ranks rk;
    char err[512];
    if (lp_ranks_analyze(ranks, n, &rk) != LP_OK) {
        lp_cli_error("export", "out of memory");
        return -1;
    }
    int rc = 0;
    int64_t *trace_of = calloc(rk.n ? rk.n : 1, sizeof *trace_of);
    if (!trace_of) {
        lp_cli_error("export", "out of memory");
        lp_ranks_free(&rk);
        return -1;
    }
    for (size_t j = 0; j < rk.n && rc == 0; j++) {
        const struct lp_rank *k = &rk.ranks[j];
        const struct lp_ranks_host *h = &rk.hosts[k->host_index];
        int known = h->how == LP_CLOCK_HOW_REFERENCE || h->how == LP_CLOCK_HOW_COLLECTIVES;
        for (size_t i = 0; i < n; i++) {
            const char *slash = strrchr(traces[ids[i] - 1], '/');
            if (strcmp(slash ? slash + 1 : traces[ids[i] - 1], k->trace))
                continue;
            trace_of[j] = ids[i];
            rc = lp_sqlite_set_clock(db, ids[i], known ? &h->offset_ns : NULL, err, sizeof err);
            break;
        }
    }
    if (rc == 0)
        rc = lp_sqlite_add_groups(db, &rk, trace_of, err, sizeof err);
    free(trace_of);
    if (rc != 0)
        lp_cli_error("export", "%s: %s", out, err);
    lp_ranks_free(&rk);
    return rc;
}

/* --sqlite: every trace of RUN into OUT, one transaction each; nothing is left at OUT
 * unless all went in. */
static int export_sqlite(const char *run, const char *out, int force)
{
    /* a file-size limit then fails the write (EFBIG, said, the .tmp removed) rather than
     * killing llmprof with the .tmp left behind */
    signal(SIGXFSZ, SIG_IGN);
    char **traces = NULL;
    int n = lp_cli_run_traces("export", run, &traces);
    if (n <= 0)
        return LP_CLI_EXIT_INPUT;
    int rc = LP_CLI_EXIT_INPUT; /* out of memory */
    struct lp_cli_outs outs = {.cmd = "export"};
    struct sqlite3 *db = NULL;
    size_t kernels = 0, n_ranks = 0;
    int unread = 0;
    char err[512];
    /* never one of the traces or their meta.json */
    const char **inputs = calloc(2 * (size_t)n, sizeof *inputs);
    char(*metas)[PATH_MAX + 16] = calloc((size_t)n, sizeof *metas);
    struct lp_rank *ranks = calloc((size_t)n, sizeof *ranks);
    int64_t *ids = calloc((size_t)n, sizeof *ids);
    if (!inputs || !metas || !ranks || !ids) {
        lp_cli_error("export", "out of memory");
        goto out;
    }
    rc = LP_CLI_EXIT_USAGE; /* the output, refused before any work */
    for (int i = 0; i < n; i++) {
        inputs[2 * i] = traces[i];
        inputs[2 * i + 1] = lp_cli_meta_path(traces[i], metas[i], sizeof *metas) == 0 ? metas[i]
                                                                                     : NULL;
    }
    if (!strcmp(out, "-")) {
        lp_cli_error("export", "--sqlite takes a file, not '-' (a database is not a stream)");
        goto out;
    }
    if (lp_cli_out_is_input("export", out, inputs, 2 * (size_t)n) ||
        lp_cli_out_check("export", out, 0) != 0 || lp_cli_out_existing("export", out, force) != 0)
        goto out;
    rc = LP_CLI_EXIT_INPUT;
    FILE *f = lp_cli_outs_open(&outs, out, 0);
    if (!f)
        goto out;
    if (lp_sqlite_open(&db, lp_cli_outs_file(&outs, f), err, sizeof err) != 0) {
        lp_cli_error("export", "%s: %s", out, err);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        struct lp_trace *t = NULL;
        struct lp_run r;
        lp_cli_progress("export", "reading %s", traces[i]);
        if (lp_trace_read(&t, traces[i], err, sizeof err) != LP_OK) {
            /* of several, one that cannot be read is left out and said, as report does */
            if (n == 1 || ++unread == n) {
                lp_cli_error("export", n == 1 ? "%s" : "%s (no trace of the run can be read)",
                             err);
                goto out;
            }
            lp_cli_error("export", "warning: left out of %s: %s", out, err);
            continue;
        }
        lp_cli_trace_warnings("export", traces[i], t, "export");
        lp_cli_progress("export", "analysing %zu kernels of %s", t->n_kernels, traces[i]);
        /* the rows need each kernel's place; several traces' clocks need a rank's figures */
        struct lp_run_options ro = {.scope = n > 1 ? LP_RUN_SCOPE_REPORT : LP_RUN_SCOPE_PLACES};
        if (lp_run_analyze(t, &ro, &r, err, sizeof err) != LP_OK) {
            lp_cli_error("export", "%s: %s", traces[i], err);
            lp_trace_free(t);
            goto out;
        }
        lp_cli_progress("export", "writing %s's rows", traces[i]);
        int wrc = lp_sqlite_add_trace(db, i + 1, traces[i], &r, err, sizeof err);
        if (wrc == 0 && n > 1) { /* kept small, for the hosts' clocks */
            if (lp_rank_take(&r, traces[i], &ranks[n_ranks]) != LP_OK) {
                lp_cli_error("export", "out of memory");
                lp_run_free(&r);
                lp_trace_free(t);
                goto out;
            }
            ids[n_ranks++] = i + 1;
        }
        kernels += t->n_kernels;
        lp_run_free(&r);
        lp_trace_free(t);
        if (wrc != 0) {
            lp_cli_error("export", "%s: %s", out, err);
            goto out;
        }
    }
    if (n_ranks > 1) {
        int crc = set_clocks(db, ranks, ids, n_ranks, traces, out);
        ranks = NULL; /* taken, the array too */
        if (crc != 0)
            goto out;
    }
    int status = lp_sqlite_close(db, err, sizeof err);
    db = NULL;
    if (status != 0) { /* said once, with its cause: the .tmp goes with the outputs */
        lp_cli_error("export", "%s: %s", out, err);
        goto out;
    }
    if (lp_cli_outs_close(&outs, f, 0) != 0 || lp_cli_outs_commit(&outs) != 0)
        goto out;
    lp_cli_progress_end();
    printf("wrote %s: %d trace%s, %zu kernels (tables: docs/sqlite-schema.md)", out, n - unread,
           n - unread == 1 ? "" : "s", kernels);
    if (unread)
        printf("; %d that could not be read left out", unread);
    printf("\n");
    rc = 0;
out:
    lp_cli_progress_end();
    if (db)
        lp_sqlite_close(db, err, sizeof err);
    lp_cli_outs_free(&outs);
    for (size_t i = 0; ranks && i < n_ranks; i++)
        lp_rank_free(&ranks[i]);
    free(ranks);
    free(ids);
    free(inputs);
    free(metas);
    lp_cli_free_list(traces, n);
    return rc;
}

int lp_cmd_export(int argc, char **argv)
{
    struct export_opts o = {0};
    int prc = lp_cli_parse(&export_cmd, &o, argc, argv, NULL);
    if (prc != 0)
        return prc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    if (o.sqlite && (o.out || o.window)) {
        lp_cli_error("export", "--sqlite writes the whole run alone: give it without "
                               "--perfetto and --window");
        return LP_CLI_EXIT_USAGE;
    }
    if (o.run && o.sqlite)
        return export_sqlite(o.run, o.sqlite, o.force);
    if (!o.run || !o.out) {
        lp_cli_error("export", "usage: llmprof export RUN --perfetto FILE.json, or "
                               "llmprof export RUN --sqlite FILE.db");
        return LP_CLI_EXIT_USAGE;
    }
    const char *run = o.run, *out = o.out;
    unsigned long long from = o.from, to = o.to;
    int window = o.window;
    char **traces = NULL;
    int n = lp_cli_run_traces("export", run, &traces);
    if (n <= 0)
        return LP_CLI_EXIT_INPUT;
    int rc = LP_CLI_EXIT_INPUT; /* a run of several traces, one that cannot be read */
    struct lp_trace *t = NULL;
    struct lp_run r;
    int analysed = 0;
    struct lp_cli_outs outs = {.cmd = "export"};
    char err[512], a[32], b[32];
    if (n > 1) {
        lp_cli_error("export", "%s holds %d traces; give one of them:", run, n);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %s\n", traces[i]);
        goto out;
    }
    /* the output is checked before the trace is read: never the trace, nor the meta.json
     * of its run */
    char meta[PATH_MAX + 16];
    const char *inputs[] = {traces[0],
                            lp_cli_meta_path(traces[0], meta, sizeof meta) == 0 ? meta : NULL};
    if (lp_cli_out_is_input("export", out, inputs, 2) || lp_cli_out_check("export", out, 1) != 0 ||
        lp_cli_out_existing("export", out, o.force) != 0) {
        rc = LP_CLI_EXIT_USAGE;
        goto out;
    }
    struct stat st;
    lp_fmt_bytes(stat(traces[0], &st) == 0 ? (uint64_t)st.st_size : 0, a, sizeof a);
    lp_cli_progress("export", "reading %s (%s)", traces[0], a);
    if (lp_trace_read(&t, traces[0], err, sizeof err) != LP_OK) {
        lp_cli_error("export", "%s", err);
        goto out;
    }
    lp_cli_trace_warnings("export", traces[0], t, "export");
    lp_cli_progress("export", "analysing %zu kernels of %s", t->n_kernels, traces[0]);
    struct lp_run_options ro = {.scope = LP_RUN_SCOPE_PLACES};
    if (lp_run_analyze(t, &ro, &r, err, sizeof err) != LP_OK) {
        lp_cli_error("export", "%s: %s", traces[0], err);
        goto out;
    }
    analysed = 1;
    struct estimate e;
    int pb = is_protobuf(out);
    estimate(&r, ms_after(r.t0_ns, from), window ? ms_after(r.t0_ns, to) : UINT64_MAX, pb, &e);
    double span_ms = (double)(e.last_ns - r.t0_ns) / 1e6;
    if (window && e.events == 0)
        lp_cli_error("export", "warning: nothing of %s overlaps --window %llu:%llu; the trace "
                               "spans 0 to %.1f ms", traces[0], from, to, span_ms);
    lp_fmt_bytes(e.bytes, a, sizeof a);
    if (e.bytes >= warn_bytes()) {
        lp_fmt_bytes(warn_bytes(), b, sizeof b);
        lp_cli_error("export", "warning: the export will be about %s (%llu kernels, over %s); "
                               "--window FROM_MS:TO_MS keeps a part (the trace spans 0 to %.1f "
                               "ms)", a, (unsigned long long)e.kernels, b, span_ms);
    }
    lp_cli_progress("export", "writing %s (about %s)", out, a);
    struct lp_perfetto_stats ps = {0};
    FILE *f = lp_cli_outs_open(&outs, out, 1);
    if (!f || lp_cli_outs_close(&outs, f, pb ? lp_report_perfetto_pb(f, &r, from, to, &ps)
                                             : lp_report_perfetto(f, &r, from, to)) != 0 ||
        lp_cli_outs_commit(&outs) != 0)
        goto out;
    lp_cli_progress_end();
    rc = 0;
    if (ps.shortened)
        lp_cli_error("export", "warning: %llu slices were cut to end with one they crossed "
                               "(more than 32 overlapping on one track)",
                     (unsigned long long)ps.shortened);
    if (strcmp(out, "-"))
        printf("wrote %s: open it in ui.perfetto.dev\n", out);
out:
    lp_cli_progress_end();
    lp_cli_outs_free(&outs);
    if (analysed)
        lp_run_free(&r);
    lp_trace_free(t);
    lp_cli_free_list(traces, n);
    return rc;
}
