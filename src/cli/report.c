/* llmprof report: reads a run's traces, analyses them (stages, LLM metrics, kernels,
 * operators, utilisation, timeline, power, diagnosis) and writes the report files. Every file
 * is written under a temporary name and renamed only when all of them are complete. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/report.h"

static const char help[] =
    "usage: llmprof report RUN [options]\n"
    "\n"
    "Analyses a recorded run (a directory of 'llmprof record', or one .lpt trace) and writes\n"
    "report.md (everything), summary.md (one page), report.json (schema: docs/report-schema.md),\n"
    "kernels.csv, operators.csv, stages.csv, gemms.csv and report.html (self-contained, opens offline) into\n"
    "the run directory, then prints summary.md. With several traces (ranks) each gets its own\n"
    "subdirectory named after the trace.\n"
    "\n"
    "Stages are NVTX ranges matched by name: encoder, vision, sam, clip, projector, prefill\n"
    "and decode (case-insensitive, at the start of the name). A stage range inside another is\n"
    "a sub-stage: a note of the outer one, never added twice; but vision inside a prefill (an\n"
    "HF model's first forward) is cut out of it as its own stage. A kernel belongs to the range open\n"
    "on its launching thread when it was launched. Ranges whose name (or an enclosing range's)\n"
    "contains 'warmup' are reported apart. Tokens: a flag wins, then tokens=N words in range\n"
    "names ('prefill tokens=512 batch=1'), then one decode range = one step of the batch.\n"
    "\n"
    "stages and tokens:\n"
    "  --stage NAME=REGEX   stage rule (repeatable; replaces the defaults), e.g.\n"
    "                       --stage prefill='^prompt' --stage decode='^step'\n"
    "  --prefill-tokens N   tokens of one prefill range (all sequences)\n"
    "  --decode-tokens N    tokens of one decode range (all sequences)\n"
    "  --batch N            sequences per step (default: batch= in range names, else 1)\n"
    "  --keep-warmup        count warmup ranges as measured\n"
    "utilisation (MFU, MBU) from the analytic model:\n"
    "  --model CONFIG       config.json (or its directory) of the model that ran\n"
    "  --weights DT, --act DT, --kv DT   dtypes as in 'llmprof model' (default bf16)\n"
    "  --vision MODE, --tiles WxH   the images' mode as in 'llmprof model' (used when a\n"
    "                       vision stage was measured; default base, or for DeepSeek-OCR-2\n"
    "                       the crops its projector's GEMM shapes show)\n"
    "  --prefill-logits all|last   logits for every prompt token or the last (default:\n"
    "                       what the prefill's lm_head GEMM shows, else last)\n"
    "  --gpu NAME           hardware table row (default: the recorded GPU)\n"
    "  --hw-file FILE       extra hardware rows; --peak-tflops X, --mem-bw GBS override peaks\n"
    "output:\n"
    "  -o, --output DIR     write there (created) instead of the run directory\n"
    "  --top K              rows of the kernel tables (default 15)\n"
    "  --gap-us N           idle gaps listed from N microseconds (default 100)\n"
    "  --quiet              do not print the summary\n"
    "\n"
    "All files or none: every file (of every trace) is written under a temporary name and\n"
    "moved in only when all are complete; if one cannot be, the previous files are put back\n"
    "and directories the command made are removed. A symbolic link in the directory is\n"
    "followed (its target gets the new file). An output that is one of the inputs, or a\n"
    "directory, device or FIFO where a file goes, is refused before any work (status 2).\n"
    "On a terminal, stderr shows what is being read, analysed and written.\n"
    "\n"
    "examples:\n"
    "  llmprof report run1\n"
    "  llmprof report run1 --model Llama-3.1-8B/config.json --prefill-logits all\n"
    "  llmprof export run1 --perfetto run1/trace.json   # then open it in ui.perfetto.dev\n";


const char *const lp_cli_report_files[] = {
    "report.md", "summary.md", "report.json", "kernels.csv", "operators.csv", "stages.csv",
    "gemms.csv", "report.html", NULL,
};

/* the writer of each of lp_cli_report_files, in the same order */
static int (*const writers[])(FILE *, const struct lp_run *) = {
    lp_report_run_md,        lp_report_summary_md, lp_report_run_json,  lp_report_kernels_csv,
    lp_report_operators_csv, lp_report_stages_csv, lp_report_gemms_csv, lp_report_run_html,
};
#define N_OUTPUTS (sizeof writers / sizeof *writers)
_Static_assert(sizeof lp_cli_report_files / sizeof *lp_cli_report_files == N_OUTPUTS + 1,
               "one writer per report file");

/* ---- options: report's own and profile's report part ---- */

void lp_cli_report_init(struct lp_cli_report *r, const char *cmd)
{
    memset(r, 0, sizeof *r);
    r->cmd = cmd;
    lp_workload_defaults(&r->workload);
}

int lp_cli_report_option(struct lp_cli_report *r, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL, *cmd = r->cmd;
    struct lp_run_options *ro = &r->run_opt;
    int rc = 0, takes = 1;
    int64_t n = 0;
    if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
        if (!(r->out = v) || !*v)
            rc = -1, lp_cli_error(cmd, "%s needs a directory, not '%s'", a, v ? v : "(nothing)");
        else if (!strcmp(v, "-"))
            rc = -1, lp_cli_error(cmd, "%s -: report writes several files, not one stream: give "
                                       "a directory (./- for one named '-')", a);
    } else if (!strcmp(a, "--model")) {
        if (!(r->model_path = v))
            rc = -1, lp_cli_error(cmd, "--model needs a config.json");
    } else if (!strcmp(a, "--gpu")) {
        if (!(r->gpu = v))
            rc = -1, lp_cli_error(cmd, "--gpu needs a name");
    } else if (!strcmp(a, "--hw-file")) {
        if (!(r->hw_file = v))
            rc = -1, lp_cli_error(cmd, "--hw-file needs a file");
    } else if (!strcmp(a, "--stage")) {
        if (!v || !strchr(v, '=')) {
            lp_cli_error(cmd, "--stage takes NAME=REGEX, e.g. --stage decode='^step', not '%s'",
                         v ? v : "(nothing)");
            rc = -1;
        } else {
            const char **p = realloc(r->stages, (r->n_stages + 1) * sizeof *p);
            if (!p) {
                lp_cli_error(cmd, "out of memory");
                return -1;
            }
            r->stages = p;
            p[r->n_stages++] = v;
        }
    } else if (!strcmp(a, "--prefill-tokens")) {
        rc = lp_cli_parse_i64(cmd, a, v, 1, &ro->prefill_tokens);
    } else if (!strcmp(a, "--decode-tokens")) {
        rc = lp_cli_parse_i64(cmd, a, v, 1, &ro->decode_tokens);
    } else if (!strcmp(a, "--batch")) {
        rc = lp_cli_parse_i64(cmd, a, v, 1, &ro->batch);
    } else if (!strcmp(a, "--top")) {
        if (!(rc = lp_cli_parse_i64(cmd, a, v, 1, &n)))
            ro->top_k = (size_t)n;
    } else if (!strcmp(a, "--gap-us")) {
        /* microseconds that still fit in nanoseconds */
        if (!(rc = lp_cli_parse_range(cmd, a, v, 1, INT64_MAX / 1000, &n)))
            ro->gap_ns = (uint64_t)n * 1000;
    } else if (!strcmp(a, "--peak-tflops")) {
        rc = lp_cli_parse_double(cmd, a, v, LP_MODEL_MAX_TFLOPS, &ro->peak_tflops);
    } else if (!strcmp(a, "--mem-bw")) {
        rc = lp_cli_parse_double(cmd, a, v, LP_MODEL_MAX_BW_GBS, &ro->mem_bw_gbs);
    } else if (!strcmp(a, "--weights")) {
        rc = lp_cli_parse_dtype(cmd, a, v, &r->workload.weights);
    } else if (!strcmp(a, "--act")) {
        rc = lp_cli_parse_dtype(cmd, a, v, &r->workload.activations);
    } else if (!strcmp(a, "--kv")) {
        rc = lp_cli_parse_dtype(cmd, a, v, &r->workload.kv);
    } else if (!strcmp(a, "--vision")) {
        rc = lp_cli_parse_vision(cmd, a, v, &r->workload.vision_mode);
        ro->vision_set = 1;
    } else if (!strcmp(a, "--tiles")) {
        rc = lp_cli_parse_tiles(cmd, a, v, &r->workload);
        ro->vision_set = 1;
    } else if (!strcmp(a, "--prefill-logits")) {
        if (v && (!strcmp(v, "all") || !strcmp(v, "last"))) {
            r->workload.prefill_logits_all = !strcmp(v, "all");
            ro->prefill_logits_set = 1;
        } else {
            rc = -1, lp_cli_error(cmd, "--prefill-logits takes all or last");
        }
    } else if (!strcmp(a, "--keep-warmup")) {
        ro->keep_warmup = 1;
        takes = 0;
    } else if (!strcmp(a, "--quiet")) {
        r->quiet = 1;
        takes = 0;
    } else {
        return 0;
    }
    if (rc)
        return -1;
    *i += takes;
    return 1;
}

/* The stage rules as the analysis will compile them (stages.c), checked now so that a bad
 * one stops the command before a trace is read or a program run. */
static int check_stage_rules(const struct lp_cli_report *r)
{
    for (size_t i = 0; i < r->n_stages; i++) {
        const char *rule = r->stages[i], *eq = strchr(rule, '=');
        if (!eq || eq == rule || !eq[1]) {
            lp_cli_error(r->cmd, "stage rule '%s': expected NAME=REGEX, e.g. "
                                 "prefill='^prefill'", rule);
            return -1;
        }
        regex_t re;
        int e = regcomp(&re, eq + 1, REG_EXTENDED | REG_ICASE | REG_NOSUB);
        if (e) {
            char msg[128];
            regerror(e, &re, msg, sizeof msg);
            lp_cli_error(r->cmd, "stage rule '%s': bad regular expression: %s", rule, msg);
            return -1;
        }
        regfree(&re);
    }
    return 0;
}

int lp_cli_report_prepare(struct lp_cli_report *r)
{
    char err[512];
    struct lp_run_options *ro = &r->run_opt;
    ro->stage_rules = r->stages;
    ro->n_stage_rules = r->n_stages;
    ro->workload = &r->workload;
    ro->gpu_name = r->gpu;
    if (check_stage_rules(r) != 0)
        return -1;
    if (lp_gpu_table_load(&r->gpus, r->hw_file, err, sizeof err) != 0) {
        lp_cli_error(r->cmd, "%s", err);
        return -1;
    }
    ro->gpus = &r->gpus;
    if (r->gpu && !lp_gpu_find(&r->gpus, r->gpu)) {
        lp_cli_error(r->cmd, "--gpu '%s' is not in the hardware table ('llmprof model "
                             "--list-gpus' lists it; --hw-file adds rows)", r->gpu);
        return -1;
    }
    if (r->model_path) {
        if (lp_model_load(r->model_path, &r->model, err, sizeof err) != 0) {
            lp_cli_error(r->cmd, "%s", err);
            return -1;
        }
        ro->model = &r->model;
    }
    return 0;
}

void lp_cli_report_free(struct lp_cli_report *r)
{
    lp_gpu_table_free(&r->gpus);
    free(r->stages);
    r->stages = NULL;
}

/* ---- one run ---- */

/* "dir/trace.vm.123.lpt" -> "trace.vm.123" */
static void stem(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    snprintf(buf, len, "%s", b ? b + 1 : path);
    size_t l = strlen(buf), sl = strlen(LP_TRACE_SUFFIX);
    if (l > sl && !strcmp(buf + l - sl, LP_TRACE_SUFFIX))
        buf[l - sl] = 0;
}

/* The command line from the meta.json beside PATH, joined by spaces into BUF (string
 * entries only); NULL when there is none. */
static const char *recorded_command(const char *path, char *buf, size_t len)
{
    char meta[PATH_MAX + 16];
    json_t *m = lp_cli_meta_path(path, meta, sizeof meta) == 0 ? json_load_file(meta, 0, NULL)
                                                              : NULL;
    json_t *cmd = m ? json_object_get(m, "command") : NULL;
    size_t o = 0, i;
    json_t *arg;
    buf[0] = 0;
    json_array_foreach(cmd, i, arg)
    {
        if (json_is_string(arg) && o + 2 < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "", json_string_value(arg));
        if (o >= len)
            o = len - 1;
    }
    json_decref(m);
    return buf[0] ? buf : NULL;
}

/* The directory the report of TRACE goes into: OUT, the run directory, or the trace's
 * directory; with several traces, a subdirectory per trace. */
static void report_dir(const struct lp_cli_report *r, const char *run, const char *trace,
                       int several, char *dir, size_t len)
{
    char base[PATH_MAX], s[256];
    struct stat st;
    if (r->out)
        snprintf(base, sizeof base, "%s", r->out);
    else if (stat(run, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(base, sizeof base, "%s", run);
    else {
        const char *slash = strrchr(run, '/');
        if (!slash)
            snprintf(base, sizeof base, ".");
        else
            snprintf(base, sizeof base, "%.*s", slash == run ? 1 : (int)(slash - run), run);
    }
    stem(trace, s, sizeof s);
    if (several)
        snprintf(dir, len, "%s/%s", base, s);
    else
        snprintf(dir, len, "%s", base);
}

/* Every output file of the command against every input, and each one writable as a
 * regular file: before any trace is read. */
static int check_outputs(const struct lp_cli_report *r, const char *run, char **traces, int n)
{
    size_t n_in = 2 * (size_t)n + 3;
    const char **in = calloc(n_in, sizeof *in);
    char(*meta)[PATH_MAX + 16] = calloc((size_t)n, sizeof *meta);
    char config[PATH_MAX + 16], dir[PATH_MAX + 256], path[PATH_MAX + 300];
    int rc = -1;
    if (!in || !meta) {
        lp_cli_error(r->cmd, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        in[2 * i] = traces[i];
        in[2 * i + 1] = lp_cli_meta_path(traces[i], meta[i], sizeof meta[i]) == 0 ? meta[i] : NULL;
    }
    in[2 * n] = r->hw_file;
    in[2 * n + 1] = r->model_path;
    snprintf(config, sizeof config, "%s/config.json", r->model_path ? r->model_path : ".");
    in[2 * n + 2] = r->model_path ? config : NULL;
    for (int i = 0; i < n; i++) {
        struct stat st;
        report_dir(r, run, traces[i], n > 1, dir, sizeof dir);
        if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
            lp_cli_error(r->cmd, "%s is not a directory; -o takes a directory", dir);
            goto done;
        }
        for (size_t k = 0; lp_cli_report_files[k]; k++) {
            snprintf(path, sizeof path, "%s/%s", dir, lp_cli_report_files[k]);
            if (lp_cli_out_is_input(r->cmd, path, in, n_in))
                goto done;
            if (stat(dir, &st) == 0 && lp_cli_out_check(r->cmd, path, 0) != 0)
                goto done;
        }
    }
    rc = 0;
done:
    free(in);
    free(meta);
    return rc;
}

/* Reads and analyses one trace, writes its files under temporary names and keeps its
 * summary (printed once every file is in place). */
static int report_one(const struct lp_cli_report *o, const char *path, const char *dir,
                      struct lp_cli_outs *outs, char **summary)
{
    char cmdline[2048], err[512], sz[32];
    struct lp_run_options opt = o->run_opt;
    opt.command = recorded_command(path, cmdline, sizeof cmdline);
    struct lp_trace *t = NULL;
    struct lp_run r;
    int rc = -1, analysed = 0;
    struct stat st;
    lp_cli_format_bytes(stat(path, &st) == 0 ? (uint64_t)st.st_size : 0, sz, sizeof sz);
    lp_cli_progress(o->cmd, "reading %s (%s)", path, sz);
    if (lp_trace_read(&t, path, err, sizeof err) != LP_OK) {
        lp_cli_error(o->cmd, "%s", err);
        goto done;
    }
    lp_cli_trace_warnings(o->cmd, path, t, "report");
    lp_cli_progress(o->cmd, "analysing %zu kernels of %s", t->n_kernels, path);
    if (lp_run_analyze(t, &opt, &r, err, sizeof err) != LP_OK) {
        lp_cli_error(o->cmd, "%s: %s", path, err);
        goto done;
    }
    analysed = 1;
    if (lp_cli_outs_mkdir(outs, dir) != 0) {
        lp_cli_error(o->cmd, "cannot create %s: %s", dir, strerror(errno));
        goto done;
    }
    lp_cli_progress(o->cmd, "writing the report of %s into %s/", path, dir);
    for (size_t k = 0; k < N_OUTPUTS; k++) {
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", dir, lp_cli_report_files[k]);
        FILE *f = lp_cli_outs_open(outs, file, 0);
        if (!f || lp_cli_outs_close(outs, f, writers[k](f, &r)) != 0)
            goto done;
    }
    size_t len = 0;
    FILE *m = o->quiet ? NULL : open_memstream(summary, &len);
    if (m) {
        fprintf(m, "report of %s in %s/\n\n", path, dir);
        lp_report_summary_md(m, &r);
        fprintf(m, "\nfiles:");
        for (size_t k = 0; k < N_OUTPUTS; k++)
            fprintf(m, " %s", lp_cli_report_files[k]);
        fprintf(m, "\n");
        fclose(m);
    }
    rc = 0;
done:
    if (analysed)
        lp_run_free(&r);
    lp_trace_free(t);
    return rc;
}

int lp_cli_report_run(struct lp_cli_report *r, const char *run)
{
    struct lp_cli_outs outs = {.cmd = r->cmd};
    char **traces = NULL, **summaries = NULL;
    int rc = 1, n = lp_cli_run_traces(r->cmd, run, &traces);
    if (n <= 0)
        goto done;
    if (check_outputs(r, run, traces, n) != 0) {
        rc = 2;
        goto done;
    }
    if (!(summaries = calloc((size_t)n, sizeof *summaries))) {
        lp_cli_error(r->cmd, "out of memory");
        goto done;
    }
    /* all traces first, then every file moved in at once: a failure leaves the old ones */
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX + 256];
        report_dir(r, run, traces[i], n > 1, dir, sizeof dir);
        if (report_one(r, traces[i], dir, &outs, &summaries[i]) != 0)
            goto done;
    }
    lp_cli_progress_end();
    if (lp_cli_outs_commit(&outs) != 0)
        goto done;
    rc = 0;
    for (int i = 0; i < n; i++)
        if (summaries[i])
            printf("%s%s", i ? "\n" : "", summaries[i]);
done:
    lp_cli_progress_end();
    lp_cli_outs_free(&outs);
    for (int i = 0; summaries && i < n; i++)
        free(summaries[i]);
    free(summaries);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    return rc;
}

int lp_cmd_report(int argc, char **argv)
{
    struct lp_cli_report r;
    const char *run = NULL;
    int rc = 2;
    lp_cli_report_init(&r, "report");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int took;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            rc = 0;
            goto done;
        } else if ((took = lp_cli_report_option(&r, argc, argv, &i)) < 0) {
            goto done;
        } else if (took) {
            continue;
        } else if (a[0] == '-') {
            lp_cli_error("report", "unknown option '%s'; see 'llmprof report --help'", a);
            goto done;
        } else if (run) {
            lp_cli_error("report", "one run at a time: '%s' and '%s'", run, a);
            goto done;
        }
        run = a;
    }
    if (!run) {
        lp_cli_error("report", "which run? usage: llmprof report RUN [options]");
        goto done;
    }
    if (lp_cli_report_prepare(&r) != 0)
        goto done;
    rc = lp_cli_report_run(&r, run);
done:
    lp_cli_report_free(&r);
    return rc;
}
