/* llmprof report: reads a run's traces, analyses them (stages, LLM metrics, kernels,
 * operators, utilisation, timeline, power, diagnosis) and writes the report files. Every file
 * is written under a temporary name and renamed only when all of them are complete. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
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
    "Stages are NVTX ranges matched by name: vision, sam, clip, projector, prefill and decode\n"
    "(case-insensitive, at the start of the name). A stage range inside another is a\n"
    "sub-stage: a note of the outer one, never added twice. A kernel belongs to the range open\n"
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
    "examples:\n"
    "  llmprof report run1\n"
    "  llmprof report run1 --model Llama-3.1-8B/config.json --prefill-logits all\n"
    "  llmprof export run1 --perfetto run1/trace.json   # then open it in ui.perfetto.dev\n";

struct report_opts {
    const char *run, *out, *model, *gpu, *hw_file;
    const char **stages;
    size_t n_stages;
    struct lp_run_options run_opt;
    struct lp_workload workload;
    int quiet;
};

static int parse(int argc, char **argv, struct report_opts *o)
{
    lp_workload_defaults(&o->workload);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0, takes = 1;
        int64_t n = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(o->out = v))
                rc = -1, lp_cli_error("report", "%s needs a directory", a);
        } else if (!strcmp(a, "--model")) {
            if (!(o->model = v))
                rc = -1, lp_cli_error("report", "--model needs a config.json");
        } else if (!strcmp(a, "--gpu")) {
            if (!(o->gpu = v))
                rc = -1, lp_cli_error("report", "--gpu needs a name");
        } else if (!strcmp(a, "--hw-file")) {
            if (!(o->hw_file = v))
                rc = -1, lp_cli_error("report", "--hw-file needs a file");
        } else if (!strcmp(a, "--stage")) {
            if (!v || !strchr(v, '=')) {
                lp_cli_error("report", "--stage takes NAME=REGEX, e.g. --stage decode='^step', "
                                       "not '%s'", v ? v : "(nothing)");
                rc = -1;
            } else {
                const char **p = realloc(o->stages, (o->n_stages + 1) * sizeof *p);
                if (!p)
                    return -1;
                o->stages = p;
                p[o->n_stages++] = v;
            }
        } else if (!strcmp(a, "--prefill-tokens")) {
            rc = lp_cli_parse_i64("report", a, v, 1, &o->run_opt.prefill_tokens);
        } else if (!strcmp(a, "--decode-tokens")) {
            rc = lp_cli_parse_i64("report", a, v, 1, &o->run_opt.decode_tokens);
        } else if (!strcmp(a, "--batch")) {
            rc = lp_cli_parse_i64("report", a, v, 1, &o->run_opt.batch);
        } else if (!strcmp(a, "--top")) {
            if (!(rc = lp_cli_parse_i64("report", a, v, 1, &n)))
                o->run_opt.top_k = (size_t)n;
        } else if (!strcmp(a, "--gap-us")) {
            if (!(rc = lp_cli_parse_i64("report", a, v, 1, &n)))
                o->run_opt.gap_ns = (uint64_t)n * 1000;
        } else if (!strcmp(a, "--peak-tflops")) {
            rc = lp_cli_parse_double("report", a, v, &o->run_opt.peak_tflops);
        } else if (!strcmp(a, "--mem-bw")) {
            rc = lp_cli_parse_double("report", a, v, &o->run_opt.mem_bw_gbs);
        } else if (!strcmp(a, "--weights")) {
            rc = lp_cli_parse_dtype("report", a, v, &o->workload.weights);
        } else if (!strcmp(a, "--act")) {
            rc = lp_cli_parse_dtype("report", a, v, &o->workload.activations);
        } else if (!strcmp(a, "--kv")) {
            rc = lp_cli_parse_dtype("report", a, v, &o->workload.kv);
        } else if (!strcmp(a, "--prefill-logits")) {
            if (v && (!strcmp(v, "all") || !strcmp(v, "last"))) {
                o->workload.prefill_logits_all = !strcmp(v, "all");
                o->run_opt.prefill_logits_set = 1;
            } else {
                rc = -1, lp_cli_error("report", "--prefill-logits takes all or last");
            }
        } else if (!strcmp(a, "--keep-warmup")) {
            o->run_opt.keep_warmup = 1;
            takes = 0;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            takes = 0;
        } else if (a[0] == '-') {
            lp_cli_error("report", "unknown option '%s'; see 'llmprof report --help'", a);
            rc = -1;
        } else if (!o->run) {
            o->run = a;
            takes = 0;
        } else {
            lp_cli_error("report", "one run at a time: '%s' and '%s'", o->run, a);
            rc = -1;
        }
        if (rc)
            return -1;
        i += takes;
    }
    if (!o->run) {
        lp_cli_error("report", "which run? usage: llmprof report RUN [options]");
        return -1;
    }
    return 0;
}

/* ---- writing all files or none ---- */

struct outfile {
    const char *name;
    int (*write)(FILE *, const struct lp_run *);
};

static const struct outfile outputs[] = {
    {"report.md", lp_report_run_md},         {"summary.md", lp_report_summary_md},
    {"report.json", lp_report_run_json},     {"kernels.csv", lp_report_kernels_csv},
    {"operators.csv", lp_report_operators_csv}, {"stages.csv", lp_report_stages_csv},
    {"gemms.csv", lp_report_gemms_csv},
    {"report.html", lp_report_run_html},
};
#define N_OUTPUTS (sizeof outputs / sizeof *outputs)

static int write_all(const char *dir, const struct lp_run *r)
{
    char tmp[N_OUTPUTS][PATH_MAX + 512], final[PATH_MAX + 512];
    size_t done = 0;
    int rc = 0;
    if (lp_cli_mkdir_p(dir) != 0) {
        lp_cli_error("report", "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    for (; done < N_OUTPUTS; done++) {
        snprintf(tmp[done], sizeof tmp[done], "%s/.%s.tmp.%ld", dir, outputs[done].name,
                 (long)getpid());
        FILE *f = fopen(tmp[done], "w");
        if (!f) {
            lp_cli_error("report", "cannot write %s: %s", tmp[done], strerror(errno));
            rc = -1;
            break;
        }
        int w = outputs[done].write(f, r);
        if (fclose(f) != 0 || w != 0) {
            lp_cli_error("report", "writing %s/%s failed (disk full?)", dir, outputs[done].name);
            done++;
            rc = -1;
            break;
        }
    }
    for (size_t i = 0; i < done; i++) {
        snprintf(final, sizeof final, "%s/%s", dir, outputs[i].name);
        if (rc == 0 && rename(tmp[i], final) != 0) {
            lp_cli_error("report", "cannot rename %s to %s: %s", tmp[i], final, strerror(errno));
            rc = -1;
        }
        if (rc != 0)
            unlink(tmp[i]);
    }
    return rc;
}

/* "dir/trace.vm.123.lpt" -> "trace.vm.123" */
static void stem(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    snprintf(buf, len, "%s", b ? b + 1 : path);
    size_t l = strlen(buf), sl = strlen(LP_TRACE_SUFFIX);
    if (l > sl && !strcmp(buf + l - sl, LP_TRACE_SUFFIX))
        buf[l - sl] = 0;
}

/* The command line from the meta.json beside PATH (record writes it), joined by spaces
 * into BUF; NULL when there is none. */
static const char *recorded_command(const char *path, char *buf, size_t len)
{
    char meta[PATH_MAX + 16];
    const char *slash = strrchr(path, '/');
    snprintf(meta, sizeof meta, "%.*s/meta.json", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    json_t *m = json_load_file(meta, 0, NULL);
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

static int report_one(const char *path, const char *dir, const struct report_opts *o,
                      const struct lp_run_options *ro_in)
{
    char cmdline[2048];
    struct lp_run_options opt = *ro_in;
    const struct lp_run_options *ro = &opt;
    opt.command = recorded_command(path, cmdline, sizeof cmdline);
    struct lp_trace *t = NULL;
    char err[512];
    if (lp_trace_read(&t, path, err, sizeof err) != LP_OK) {
        lp_cli_error("report", "%s", err);
        return -1;
    }
    if (!t->complete || t->n_warnings)
        lp_cli_error("report", "warning: %s is not whole (%s, %zu recovery warnings); the "
                               "report shows what is there",
                     path, t->complete ? "ended cleanly" : "no end chunk", t->n_warnings);
    struct lp_run r;
    int rc = lp_run_analyze(t, ro, &r, err, sizeof err);
    if (rc != LP_OK) {
        lp_cli_error("report", "%s: %s", path, err);
    } else {
        rc = write_all(dir, &r);
        if (rc == 0 && !o->quiet) {
            printf("report of %s in %s/\n\n", path, dir);
            lp_report_summary_md(stdout, &r);
            printf("\nfiles: report.md summary.md report.json report.html kernels.csv "
                   "operators.csv stages.csv\n");
        }
        lp_run_free(&r);
    }
    lp_trace_free(t);
    return rc;
}

int lp_cmd_report(int argc, char **argv)
{
    struct report_opts o = {0};
    int p = parse(argc, argv, &o);
    if (p != 0) {
        free(o.stages);
        return p > 0 ? 0 : 2;
    }
    int rc = 1;
    struct lp_model model;
    struct lp_gpu_table gpus = {0};
    char **traces = NULL;
    char err[512];
    int n = 0;
    o.run_opt.stage_rules = o.stages;
    o.run_opt.n_stage_rules = o.n_stages;
    o.run_opt.workload = &o.workload;
    o.run_opt.gpu_name = o.gpu;
    if (lp_gpu_table_load(&gpus, o.hw_file, err, sizeof err) != 0) {
        lp_cli_error("report", "%s", err);
        goto out;
    }
    o.run_opt.gpus = &gpus;
    if (o.model) {
        if (lp_model_load(o.model, &model, err, sizeof err) != 0) {
            lp_cli_error("report", "%s", err);
            goto out;
        }
        o.run_opt.model = &model;
    }
    if (o.gpu && !lp_gpu_find(&gpus, o.gpu)) {
        lp_cli_error("report", "--gpu '%s' is not in the hardware table ('llmprof model "
                               "--list-gpus' lists it; --hw-file adds rows)", o.gpu);
        goto out;
    }
    if ((n = lp_cli_run_traces("report", o.run, &traces)) <= 0)
        goto out;
    char base[PATH_MAX];
    struct stat st;
    if (o.out)
        snprintf(base, sizeof base, "%s", o.out);
    else if (stat(o.run, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(base, sizeof base, "%s", o.run);
    else {
        const char *slash = strrchr(o.run, '/');
        if (!slash)
            snprintf(base, sizeof base, ".");
        else
            snprintf(base, sizeof base, "%.*s", slash == o.run ? 1 : (int)(slash - o.run), o.run);
    }
    rc = 0;
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX + 256], s[256];
        stem(traces[i], s, sizeof s);
        if (n > 1)
            snprintf(dir, sizeof dir, "%s/%s", base, s);
        else
            snprintf(dir, sizeof dir, "%s", base);
        if (report_one(traces[i], dir, &o, &o.run_opt) != 0)
            rc = 1;
    }
out:
    lp_cli_free_list(traces, n > 0 ? n : 0);
    lp_gpu_table_free(&gpus);
    free(o.stages);
    return rc;
}
