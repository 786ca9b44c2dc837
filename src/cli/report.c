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
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/deep.h"
#include "llmprof/report.h"

static int baseline_md(FILE *f, const struct lp_run *r, const struct lp_diff *d)
{
    (void)r;
    return lp_report_diff_md(f, d);
}

static int baseline_json(FILE *f, const struct lp_run *r, const struct lp_diff *d)
{
    (void)r;
    return lp_report_diff_json(f, d);
}

/* The files of a report around the sections' CSV files (src/report/sections.c) */
static const struct lp_cli_report_output files_before[] = {
    {"report.md", lp_report_run_md, NULL, "everything"},
    {"summary.md", lp_report_summary_md, NULL, "one page"},
    {"report.json", lp_report_run_json, NULL, "schema: docs/report-schema.md"},
};
static const struct lp_cli_report_output files_after[] = {
    {"report.html", lp_report_run_html, lp_report_run_html_baseline,
     "self-contained, opens offline"},
    {"diff.md", NULL, baseline_md, "with --baseline, as llmprof diff writes it"},
    {"diff.json", NULL, baseline_json, "with --baseline"},
};
#define N_BEFORE (sizeof files_before / sizeof *files_before)
#define N_AFTER (sizeof files_after / sizeof *files_after)
#define MAX_CSV 32

const struct lp_cli_report_output *lp_cli_report_outputs(void)
{
    static struct lp_cli_report_output all[N_BEFORE + MAX_CSV + N_AFTER + 1];
    if (all[0].name)
        return all;
    size_t n = 0;
    for (size_t i = 0; i < N_BEFORE; i++)
        all[n++] = files_before[i];
    const struct lp_report_csv *c;
    for (size_t i = 0; i < MAX_CSV && (c = lp_report_csv_at(i)) != NULL; i++)
        all[n++] = (struct lp_cli_report_output){c->name, c->write, NULL, c->about};
    for (size_t i = 0; i < N_AFTER; i++)
        all[n++] = files_after[i];
    return all;
}

/* The files of the run report when there are several traces, in the run's directory. */
static const struct {
    const char *name;
    int (*write)(FILE *, const struct lp_ranks *);
} ranks_outputs[] = {
    {"ranks.md", lp_report_ranks_md},
    {"ranks.json", lp_report_ranks_json},
    {"ranks.csv", lp_report_ranks_csv},
};
#define N_RANKS_OUTPUTS (sizeof ranks_outputs / sizeof *ranks_outputs)

/* --help's first paragraph, naming every file of the table above */
static void print_files(FILE *f)
{
    char text[2048];
    size_t o = 0;
    o += (size_t)snprintf(text, sizeof text, "Analyses a recorded run (a directory of 'llmprof "
                                             "record', or one .lpt trace) and writes");
    const struct lp_cli_report_output *all = lp_cli_report_outputs();
    for (const struct lp_cli_report_output *out = all; out->name; out++) {
        int last = !out[1].name, n;
        n = snprintf(text + o, sizeof text - o, "%s %s%s%s%s", out == all ? ""
                                                                : last ? " and" : ",",
                     out->name, out->note ? " (" : "", out->note ? out->note : "",
                     out->note ? ")" : "");
        o += n > 0 && (size_t)n < sizeof text - o ? (size_t)n : 0;
    }
    snprintf(text + o, sizeof text - o, " into the run directory, then prints summary.md. With "
             "several traces (ranks, processes) each gets its own subdirectory named after the "
             "trace, and the run directory gets ranks.md, ranks.json and ranks.csv: every "
             "process's stages, communication, overlap, waits in collectives and energy side by "
             "side. A directory of repeats ('llmprof profile --repeat N') gets each repeat's "
             "report in the repeat's directory (-o DIR: DIR/NAME) and repeats.md, repeats.json "
             "and repeats.csv beside them: every figure's mean, std, CV, min and max over the "
             "repeats and whether each stays within 10 %% of the mean (repeats of one process "
             "each: a repeat of several traces is reported, not compared).");
    lp_cli_wrap(f, text, LP_CLI_HELP_WIDTH);
}

/* ---- options: report's own and profile's report part ---- */

static int parse_out(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg)
{
    (void)o;
    if (!arg || !*arg) {
        lp_cli_error(cmd, "%s needs a directory, not '%s'", opt, arg ? arg : "(nothing)");
        return -1;
    }
    if (!strcmp(arg, "-")) {
        lp_cli_error(cmd, "%s -: report writes several files, not one stream: give a directory "
                          "(./- for one named '-')", opt);
        return -1;
    }
    *(const char **)value = arg;
    return 0;
}

static int parse_top(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg)
{
    (void)o;
    int64_t n;
    if (lp_cli_parse_range(cmd, opt, arg, 1, INT64_MAX, &n) != 0)
        return -1;
    *(size_t *)value = (size_t)n;
    return 0;
}

/* microseconds that still fit in nanoseconds */
static int parse_gap_us(const struct lp_cli_opt *o, void *value, const char *cmd,
                        const char *opt, const char *arg)
{
    (void)o;
    int64_t n;
    if (lp_cli_parse_range(cmd, opt, arg, 1, INT64_MAX / 1000, &n) != 0)
        return -1;
    *(uint64_t *)value = (uint64_t)n * 1000;
    return 0;
}

#define RUN_OPT(field)                                                                        \
    (offsetof(struct lp_cli_report, run_opt) + offsetof(struct lp_run_options, field))
#define TOKENS(nm, field, hl)                                                                 \
    {.kind = LP_CLI_OPT_KIND_INT, .name = nm, .arg = "N", .help = hl, .off = RUN_OPT(field),  \
     .min = 1, .max = INT64_MAX}
#define WL offsetof(struct lp_cli_report, wl)

const struct lp_cli_opt lp_cli_report_options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "usage: llmprof report RUN [options]\n\n"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .print = print_files},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "\n"
    "Stages are NVTX ranges matched by name: encoder, vision, sam, clip, projector, prefill\n"
    "and decode (case-insensitive, at the start of the name). A stage range inside another is\n"
    "a sub-stage: a note of the outer one, never added twice; but vision inside a prefill (an\n"
    "HF model's first forward) is cut out of it as its own stage. A kernel belongs to the\n"
    "range open on its launching thread when it was launched. Ranges whose name (or an\n"
    "enclosing range's) contains 'warmup' are reported apart. Tokens: a flag wins (checked\n"
    "against the trace's token dimensions: a disagreement is said), then tokens=N words in\n"
    "range names ('prefill tokens=512 batch=1'), then the GEMM shapes and the decode steps\n"
    "found (CUDA graph launches, the lm_head's calls, or the kernel sequence that repeats\n"
    "each step).\n"
    "\n"
    "stages and tokens:\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--stage", .arg = "NAME=REGEX",
     .help = "stage rule (repeatable; replaces the defaults; one that matches\n"
             "none of a trace's ranges is refused), e.g.\n"
             "--stage prefill='^prompt' --stage decode='^step'",
     .off = offsetof(struct lp_cli_report, stages), .parse = lp_cli_opt_stage},
    TOKENS("--prefill-tokens", prefill_tokens, "tokens of one prefill range (all sequences)"),
    TOKENS("--decode-tokens", decode_tokens, "tokens of one decode range (all sequences)"),
    TOKENS("--batch", batch, "sequences per step (default: batch= in range names, else 1)"),
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--keep-warmup",
     .help = "count warmup ranges as measured", .off = RUN_OPT(keep_warmup), .set = 1},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "utilisation (MFU, MBU) from the analytic model:\n"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--model", .arg = "CONFIG",
     .help = "config.json (or its directory) of the model that ran",
     .off = offsetof(struct lp_cli_report, model_path), .missing = "a config.json"},
    LP_CLI_OPT_WEIGHTS(WL, "--weights DT, --act DT, --kv DT",
                       "dtypes as in 'llmprof model' (default bf16)"),
    LP_CLI_OPT_ACT(WL, NULL, NULL),
    LP_CLI_OPT_KV(WL, NULL, NULL),
    LP_CLI_OPT_VISION(WL, "--vision MODE, --tiles WxH",
                      "the images' mode as in 'llmprof model' (used when a\n"
                      "vision stage was measured; default base, or for DeepSeek-OCR-2\n"
                      "the crops its projector's GEMM shapes show)"),
    LP_CLI_OPT_TILES(WL, NULL, NULL),
    LP_CLI_OPT_PREFILL_LOGITS(WL, NULL, "logits for every prompt token or the last (default:\n"
                                        "what the prefill's lm_head GEMM shows, else last)"),
    LP_CLI_OPT_GPU(WL, NULL, "hardware table row (default: the recorded GPU)"),
    LP_CLI_OPT_HW_FILE(WL, NULL,
                       "extra hardware rows; --peak-tflops X, --mem-bw GBS override peaks"),
    LP_CLI_OPT_PEAK_TFLOPS(WL, NULL, NULL),
    LP_CLI_OPT_MEM_BW(WL, NULL, NULL),
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "against another run:\n"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--baseline", .arg = "BASE",
     .help = "compare with BASE (a run directory of one trace, a .lpt, or\n"
             "a report directory whose report.json names a trace still\n"
             "there from here), as 'llmprof diff BASE RUN' would with its\n"
             "defaults: report.html gets a section, diff.md and diff.json\n"
             "are written, the summary says what moved",
     .off = offsetof(struct lp_cli_report, baseline), .missing = "a run to compare with"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "output:\n"},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--output", .alias = "-o", .arg = "DIR",
     .help = "write there (created) instead of the run directory",
     .off = offsetof(struct lp_cli_report, out), .parse = parse_out},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--top", .arg = "K",
     .help = "rows of the kernel tables (default 15)", .off = RUN_OPT(top_k), .parse = parse_top},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--gap-us", .arg = "N",
     .help = "idle gaps listed from N microseconds (default 100)", .off = RUN_OPT(gap_ns),
     .parse = parse_gap_us},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--quiet", .help = "do not print the summary",
     .off = offsetof(struct lp_cli_report, quiet), .set = 1},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "\n"
    "All files or none: every file (of every trace) is written under a temporary name and\n"
    "moved in only when all are complete; if one cannot be, the previous files are put back\n"
    "and directories the command made are removed. A symbolic link in the directory is\n"
    "followed (its target gets the new file). An output that is one of the inputs, or a\n"
    "directory, device or FIFO where a file goes, is refused before any work (status 2).\n"
    "Exit status: 0; 1 when RUN, --model, --hw-file or --baseline cannot be used (missing,\n"
    "unreadable, damaged; a run of several traces with --baseline) or a file cannot be\n"
    "written; 2 on a mistake of the command line (also a --stage rule that matches none of a\n"
    "trace's ranges, a --gpu not in the hardware table). On a terminal, stderr shows what is\n"
    "being read, analysed and written. An analysis that may need more memory than is\n"
    "available is warned of first (docs/report-memory.md; LLMPROF_MEM_AVAILABLE_MIB sets\n"
    "what counts as available, 0 turns it off).\n"
    "\n"
    "examples:\n"
    "  llmprof report run1\n"
    "  llmprof report run1 --model Llama-3.1-8B/config.json --prefill-logits all\n"
    "  llmprof report run2 --baseline run1   # run2 against run1\n"
    "  llmprof export run1 --perfetto run1/trace.json   # then open it in ui.perfetto.dev\n"},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd report_cmd = {
    .name = "report", .opts = lp_cli_report_options, .help_col = 23, .operand = 1,
    .operand_off = offsetof(struct lp_cli_report, run), .too_many = "one run at a time",
};

void lp_cli_report_init(struct lp_cli_report *r, const char *cmd)
{
    memset(r, 0, sizeof *r);
    r->cmd = cmd;
    lp_cli_workload_init(&r->wl);
}

/* A note when rule NAME is a near miss of a stage kind's name (prefill, decode, vision) that
 * it does not start with: the stage is then reported as a stage of its own ("other"). */
static void note_stage_name(const struct lp_cli_report *r, const char *rule, size_t name_len)
{
    static const enum lp_stage_kind kinds[] = {LP_STAGE_KIND_PREFILL, LP_STAGE_KIND_DECODE,
                                               LP_STAGE_KIND_VISION};
    const char *names[3];
    char name[64];
    if (name_len >= sizeof name)
        return;
    memcpy(name, rule, name_len);
    name[name_len] = 0;
    for (size_t k = 0; k < 3; k++) {
        names[k] = lp_stage_kind_name(kinds[k]);
        if (!strncasecmp(name, names[k], strlen(names[k])))
            return;
    }
    const char *near = lp_cli_nearest(name, names, 3);
    char said[256]; /* the name as given: escaped */
    if (near)
        lp_cli_error(r->cmd, "note: stage '%s' is no %s stage (its name does not start with "
                             "'%s'): it is reported as a stage of its own; did you mean '%s'?",
                     lp_fmt_escape(said, sizeof said, name), near, near, near);
}

/* The stage rules as the analysis will compile them (stages.c), checked now so that a bad
 * one stops the command before a trace is read or a program run. */
static int check_stage_rules(const struct lp_cli_report *r)
{
    for (size_t i = 0; i < r->stages.n; i++) {
        const char *rule = r->stages.v[i], *eq = strchr(rule, '=');
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
        note_stage_name(r, rule, (size_t)(eq - rule));
    }
    return 0;
}

/* The model's config.json, kept for report.json's provenance: the file lp_model_load read
 * (MODEL_PATH or MODEL_PATH/config.json; it bounds its size) and its text. A file that
 * changed or went away since is left out (NULL), not an error: the model is loaded. */
static void keep_model_text(struct lp_cli_report *r)
{
    struct lp_run_options *ro = &r->run_opt;
    struct stat st;
    int dir = stat(r->model_path, &st) == 0 && S_ISDIR(st.st_mode);
    snprintf(r->model_file, sizeof r->model_file, dir ? "%s/config.json" : "%s", r->model_path);
    ro->model_file = r->model_file;
    FILE *f = fopen(r->model_file, "r");
    char *text = f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (8 << 20)
                     ? malloc((size_t)st.st_size + 1)
                     : NULL;
    if (text && fread(text, 1, (size_t)st.st_size, f) == (size_t)st.st_size) {
        text[st.st_size] = 0;
        free(r->model_text);
        r->model_text = text;
        ro->model_config = text;
    } else {
        free(text);
    }
    if (f)
        fclose(f);
}

int lp_cli_report_prepare(struct lp_cli_report *r)
{
    char err[512];
    struct lp_run_options *ro = &r->run_opt;
    ro->stage_rules = r->stages.v;
    ro->n_stage_rules = r->stages.n;
    ro->workload = &r->wl.w;
    ro->vision_set = r->wl.vision_set;
    ro->prefill_logits_set = r->wl.prefill_logits_set;
    ro->gpu_name = r->wl.gpu;
    ro->peak_tflops = r->wl.peak_tflops;
    ro->mem_bw_gbs = r->wl.mem_bw_gbs;
    if (check_stage_rules(r) != 0)
        return LP_CLI_EXIT_USAGE;
    if (r->baseline) {
        char path[PATH_MAX];
        if (lp_cli_one_trace(r->cmd, r->baseline, path, sizeof path, &r->baseline_json) != 0)
            return LP_CLI_EXIT_INPUT;
        if (!(r->baseline_trace = strdup(path))) {
            lp_cli_error(r->cmd, "out of memory");
            return LP_CLI_EXIT_INPUT;
        }
    }
    if (lp_gpu_table_load(&r->gpus, r->wl.hw_file, err, sizeof err) != LP_OK) {
        lp_cli_error(r->cmd, "%s", err);
        return LP_CLI_EXIT_INPUT;
    }
    ro->gpus = &r->gpus;
    if (r->wl.gpu && !lp_gpu_resolve(&r->gpus, r->wl.gpu, err, sizeof err)) {
        char said[1024]; /* it quotes the name as given: escaped */
        lp_cli_error(r->cmd, "%s", lp_fmt_escape(said, sizeof said, err));
        return LP_CLI_EXIT_USAGE;
    }
    if (r->model_path) {
        if (lp_model_load(r->model_path, &r->model, err, sizeof err) != LP_OK) {
            lp_cli_error(r->cmd, "%s", err);
            return LP_CLI_EXIT_INPUT;
        }
        ro->model = &r->model;
        keep_model_text(r);
    }
    return 0;
}

void lp_cli_report_free(struct lp_cli_report *r)
{
    free(r->model_text);
    r->model_text = NULL;
    lp_gpu_table_free(&r->gpus);
    free(r->stages.v);
    r->stages = (struct lp_cli_words){0};
    lp_cli_report_baseline_drop(r);
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

/* The directory the report of TRACE goes into: OUT, the run directory, or the trace's
 * directory; with several traces, a subdirectory per trace. TRACE NULL: the run report's. */
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
    if (!trace) {
        snprintf(dir, len, "%s", base);
        return;
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
    size_t n_in = 2 * (size_t)n + 6;
    const char **in = calloc(n_in, sizeof *in);
    char(*meta)[PATH_MAX + 16] = calloc((size_t)n, sizeof *meta);
    char config[PATH_MAX + 16], base_meta[PATH_MAX + 16], dir[PATH_MAX + 256],
        path[PATH_MAX + 300];
    int rc = -1;
    if (!in || !meta) {
        lp_cli_error(r->cmd, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        in[2 * i] = traces[i];
        in[2 * i + 1] = lp_cli_meta_path(traces[i], meta[i], sizeof meta[i]) == 0 ? meta[i] : NULL;
    }
    in[2 * n] = r->wl.hw_file;
    in[2 * n + 1] = r->model_path;
    snprintf(config, sizeof config, "%s/config.json", r->model_path ? r->model_path : ".");
    in[2 * n + 2] = r->model_path ? config : NULL;
    in[2 * n + 3] = r->baseline_trace;
    in[2 * n + 4] = r->baseline_trace && lp_cli_meta_path(r->baseline_trace, base_meta,
                                                          sizeof base_meta) == 0
                        ? base_meta
                        : NULL;
    in[2 * n + 5] = r->baseline_json;
    for (int i = 0; i < n; i++) {
        struct stat st;
        report_dir(r, run, traces[i], n > 1, dir, sizeof dir);
        if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
            lp_cli_error(r->cmd, "%s is not a directory; -o takes a directory", dir);
            goto done;
        }
        if (r->baseline_trace && lp_cli_dir_holds_file(dir, r->baseline_trace)) {
            lp_cli_error(r->cmd, "%s holds the baseline's trace (%s): its report would take the "
                                 "baseline's place; write it elsewhere with -o DIR", dir,
                         r->baseline_trace);
            goto done;
        }
        for (const struct lp_cli_report_output *out = lp_cli_report_outputs(); out->name; out++) {
            if (!out->write && !r->baseline_trace)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, out->name);
            if (lp_cli_out_is_input(r->cmd, path, in, n_in))
                goto done;
            if (stat(dir, &st) == 0 && lp_cli_out_check(r->cmd, path, 0) != 0)
                goto done;
        }
    }
    report_dir(r, run, n > 1 ? NULL : traces[0], 0, dir, sizeof dir);
    for (size_t i = 0; n > 1 && i < N_RANKS_OUTPUTS; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, ranks_outputs[i].name);
        if (lp_cli_out_is_input(r->cmd, path, in, n_in))
            goto done;
        if (stat(dir, &st) == 0 && lp_cli_out_check(r->cmd, path, 0) != 0)
            goto done;
    }
    rc = 0;
done:
    free(in);
    free(meta);
    return rc;
}

/* The deep dive beside trace PATH (RUN/deep/ncu-raw.csv, from llmprof deep) joined to R: 0,
 * also when there is none or it cannot be read (said: the report goes on without it); -1 out
 * of memory. */
static int read_deep(const struct lp_cli_report *o, const char *path, struct lp_run *r)
{
    char csv[PATH_MAX + 32], err[512];
    const char *slash = strrchr(path, '/');
    snprintf(csv, sizeof csv, "%.*s/deep/ncu-raw.csv", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    if (access(csv, F_OK) != 0)
        return 0;
    struct lp_ncu_report *n = NULL;
    if (lp_ncu_read(&n, csv, err, sizeof err) != LP_OK) {
        char said[sizeof err]; /* the reason may quote the CSV */
        lp_cli_error(o->cmd, "%s; \"Kernels in depth\" is left out (llmprof deep --force "
                     "measures again)", lp_fmt_escape(said, sizeof said, err));
        return 0;
    }
    if (lp_run_deep(r, n) != LP_OK) {
        lp_cli_error(o->cmd, "out of memory");
        return -1;
    }
    return 0;
}

/* Reads trace PATH into *T (freed by the caller, also on failure) and analyses it into R,
 * with the recorded command line in CMDLINE (R points to it: it must outlive R): 0, or -1
 * with a message (-3: a stage rule matching none of its ranges, a usage error). A trace that
 * cannot be read returns -2 with the reason in UNREAD when it is not NULL (the caller says
 * it), else with a message. */
static int analyse(const struct lp_cli_report *o, const char *path, char *cmdline, size_t len,
                   struct lp_trace **t, struct lp_run *r, char *unread, size_t unread_len)
{
    char err[512], sz[32];
    struct lp_run_options opt = o->run_opt;
    opt.command = lp_cli_recorded_command(path, cmdline, len);
    struct stat st;
    lp_fmt_bytes(stat(path, &st) == 0 ? (uint64_t)st.st_size : 0, sz, sizeof sz);
    lp_cli_progress(o->cmd, "reading %s (%s)", path, sz);
    if (lp_trace_read(t, path, err, sizeof err) != LP_OK) {
        if (unread)
            snprintf(unread, unread_len, "%s", err);
        else
            lp_cli_error(o->cmd, "%s", err);
        return -2;
    }
    lp_cli_trace_warnings(o->cmd, path, *t, "report");
    /* said before an analysis that may not fit, rather than a process killed without a word */
    uint64_t need = lp_run_memory_need(*t), avail = lp_cli_memory_available();
    if (avail && need > avail) {
        char b_need[32], b_avail[32];
        lp_fmt_bytes(need, b_need, sizeof b_need);
        lp_fmt_bytes(avail, b_avail, sizeof b_avail);
        lp_cli_error(o->cmd, "warning: %s: analysing its %zu kernels takes about %s more memory, "
                             "and about %s is available: the system may stop the report "
                             "(docs/report-memory.md)", path, (*t)->n_kernels, b_need, b_avail);
    }
    lp_cli_progress(o->cmd, "analysing %zu kernels of %s", (*t)->n_kernels, path);
    int rc = lp_run_analyze(*t, &opt, r, err, sizeof err);
    if (rc != LP_OK) {
        lp_cli_error(o->cmd, "%s: %s", path, err);
        return rc == LP_ERR_ARG ? -3 : -1; /* a stage rule the trace refutes: a usage error */
    }
    return 0;
}

int lp_cli_report_baseline(struct lp_cli_report *r)
{
    if (!r->baseline_trace || r->base_loaded)
        return 0;
    int rc = analyse(r, r->baseline_trace, r->base_cmdline, sizeof r->base_cmdline,
                     &r->base_trace, &r->base, NULL, 0);
    if (rc != 0)
        return rc == -3 ? LP_CLI_EXIT_USAGE : LP_CLI_EXIT_INPUT;
    r->base_loaded = 1;
    return 0;
}

void lp_cli_report_baseline_drop(struct lp_cli_report *r)
{
    if (r->base_loaded)
        lp_run_free(&r->base);
    lp_trace_free(r->base_trace);
    free(r->baseline_trace);
    free(r->baseline_json);
    r->baseline_trace = r->baseline_json = NULL;
    r->base_trace = NULL;
    r->base_loaded = 0;
}

/* The baseline (analysed) against R, read from trace PATH, labelled by the operands (LABEL:
 * this run's): 0, or -1 with a message. What makes the comparison doubtful goes to stderr. */
static int compare_baseline(const struct lp_cli_report *o, const struct lp_run *r,
                            const char *path, const char *label, struct lp_diff *d)
{
    lp_cli_progress(o->cmd, "comparing %s with %s", label, o->baseline);
    struct lp_diff_options dopt = {0};
    if (lp_diff_build(&o->base, r, &dopt, d) != LP_OK) {
        lp_cli_error(o->cmd, "out of memory");
        return -1;
    }
    d->label[0] = o->baseline;
    d->label[1] = label;
    if (lp_cli_same_file(path, o->baseline_trace))
        lp_cli_error(o->cmd, "warning: the baseline %s is this run's own trace (%s): nothing "
                             "can have changed", o->baseline, path);
    lp_cli_progress_end();
    lp_report_diff_warnings(stderr, d, o->cmd);
    return 0;
}

/* Reads and analyses one trace, writes its files under temporary names and keeps its
 * summary (printed once every file is in place), and what the run report needs in RANK
 * (NULL: one trace). LABEL: how the comparison with the baseline (if any) names it. 0, -1
 * with a message (-3: analyse's usage error), or -2 when the trace cannot be read, with the
 * reason in UNREAD (NULL: a message instead). */
static int report_one(const struct lp_cli_report *o, const char *path, const char *dir,
                      struct lp_cli_outs *outs, char **summary, struct lp_rank *rank,
                      const char *label, char *unread, size_t unread_len)
{
    char cmdline[2048], *request = NULL;
    struct lp_trace *t = NULL;
    struct lp_run r;
    struct lp_diff d;
    int rc = -1, analysed = 0, compared = 0;
    if ((rc = analyse(o, path, cmdline, sizeof cmdline, &t, &r, unread, unread_len)) != 0)
        goto done;
    rc = -1;
    analysed = 1;
    /* what the program stated, for the writers and the repeats' comparison */
    r.opt.request = request = lp_cli_recorded_request(path);
    if (read_deep(o, path, &r) != 0)
        goto done;
    if (o->base_loaded) {
        if (compare_baseline(o, &r, path, label, &d) != 0)
            goto done;
        compared = 1;
    }
    if (o->take_repeat && !o->take_repeat->label &&
        lp_repeat_take(&r, o->repeat_label, o->take_repeat) != LP_OK) {
        lp_cli_error(o->cmd, "out of memory");
        goto done;
    }
    if (rank && lp_rank_take(&r, path, rank) != LP_OK) {
        lp_cli_error(o->cmd, "out of memory");
        goto done;
    }
    if (lp_cli_outs_mkdir(outs, dir) != 0) {
        lp_cli_error(o->cmd, "cannot create %s: %s", dir, strerror(errno));
        goto done;
    }
    lp_cli_progress(o->cmd, "writing the report of %s into %s/", path, dir);
    for (const struct lp_cli_report_output *out = lp_cli_report_outputs(); out->name; out++) {
        if (!out->write && !compared)
            continue;
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", dir, out->name);
        FILE *f = lp_cli_outs_open(outs, file, 0);
        if (!f || lp_cli_outs_close(outs, f, compared && out->write_baseline
                                                 ? out->write_baseline(f, &r, &d)
                                                 : out->write(f, &r)) != 0)
            goto done;
    }
    size_t len = 0;
    FILE *m = o->quiet ? NULL : open_memstream(summary, &len);
    if (m) {
        fprintf(m, "report of %s in %s/\n\n", path, dir);
        lp_report_summary_md(m, &r);
        if (compared) {
            fprintf(m, "\n");
            lp_report_diff_headline(m, &d);
        }
        fprintf(m, "\nfiles:");
        for (const struct lp_cli_report_output *out = lp_cli_report_outputs(); out->name; out++)
            if (out->write || compared)
                fprintf(m, " %s", out->name);
        fprintf(m, "\n");
        fclose(m);
    }
    rc = 0;
done:
    if (compared)
        lp_diff_free(&d);
    if (analysed)
        lp_run_free(&r);
    free(request);
    lp_trace_free(t);
    return rc;
}

/* The run report of several traces: compares RANKS (taken) and writes ranks.md, .json and
 * .csv under temporary names into DIR; its first paragraph goes to *SUMMARY. */
static int report_ranks(const struct lp_cli_report *o, struct lp_rank *ranks, size_t n,
                        const struct lp_ranks_unread *unread, size_t n_unread, const char *dir,
                        struct lp_cli_outs *outs, char **summary)
{
    struct lp_ranks rk;
    if (lp_ranks_analyze(ranks, n, &rk) != LP_OK) {
        lp_cli_error(o->cmd, "out of memory");
        return -1;
    }
    rk.unread = unread;
    rk.n_unread = n_unread;
    int rc = -1;
    if (lp_cli_outs_mkdir(outs, dir) != 0) {
        lp_cli_error(o->cmd, "cannot create %s: %s", dir, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < N_RANKS_OUTPUTS; i++) {
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", dir, ranks_outputs[i].name);
        FILE *f = lp_cli_outs_open(outs, file, 0);
        if (!f || lp_cli_outs_close(outs, f, ranks_outputs[i].write(f, &rk)) != 0)
            goto done;
    }
    size_t len = 0;
    FILE *m = o->quiet ? NULL : open_memstream(summary, &len);
    if (m) {
        fprintf(m, "run report of %zu processes in %s/: ranks.md ranks.json ranks.csv\n", n,
                dir);
        if (n_unread)
            fprintf(m, "left out: %zu trace%s that could not be read (in ranks.md)\n", n_unread,
                    n_unread == 1 ? "" : "s");
        fclose(m);
    }
    rc = 0;
done:
    lp_ranks_free(&rk);
    return rc;
}

/* ---- a directory of repeats (profile --repeat N) ---- */

/* repeats.md, .json and .csv of the N repeats REPS into DIR, all or none; what the summary
 * says (verdict and headline figures) into *SUMMARY unless quiet */
static int write_repeats(const struct lp_cli_report *r, const struct lp_repeat *reps, size_t n,
                         const char *dir, char **summary)
{
    static const struct {
        const char *name;
        int (*write)(FILE *, const struct lp_repeats *);
    } files[] = {{"repeats.md", lp_report_repeats_md},
                 {"repeats.json", lp_report_repeats_json},
                 {"repeats.csv", lp_report_repeats_csv}};
    struct lp_repeats rp;
    if (lp_repeats_analyze(reps, n, 0, &rp) != LP_OK) {
        lp_cli_error(r->cmd, "out of memory");
        return LP_CLI_EXIT_INPUT;
    }
    struct lp_cli_outs outs = {.cmd = r->cmd};
    int rc = LP_CLI_EXIT_INPUT;
    if (lp_cli_outs_mkdir(&outs, dir) != 0) {
        lp_cli_error(r->cmd, "cannot create %s: %s", dir, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", dir, files[i].name);
        FILE *f = lp_cli_outs_open(&outs, file, 0);
        if (!f || lp_cli_outs_close(&outs, f, files[i].write(f, &rp)) != 0)
            goto done;
    }
    if (lp_cli_outs_commit(&outs) != 0)
        goto done;
    size_t len = 0;
    FILE *m = r->quiet ? NULL : open_memstream(summary, &len);
    if (m) {
        fprintf(m, "report of %zu repeat%s in %s/ (each repeat's own report in its directory)"
                   "\n\n", n, n == 1 ? "" : "s", dir);
        lp_report_repeats_md(m, &rp);
        fprintf(m, "\nfiles: repeats.md repeats.json repeats.csv\n");
        fclose(m);
    }
    rc = 0;
done:
    lp_cli_outs_free(&outs);
    lp_repeats_free(&rp);
    return rc;
}

/* Each repeat NAMES[i] of RUN reported as a run of its own (quietly, into r->out/NAME with
 * -o), then the repeats compared. A repeat that cannot be reported is left out and said. */
static int report_repeats(struct lp_cli_report *r, const char *run, char **names, int n)
{
    struct lp_repeat *reps = calloc((size_t)n, sizeof *reps);
    char *summary = NULL;
    size_t m = 0;
    int rc = LP_CLI_EXIT_INPUT;
    if (!reps) {
        lp_cli_error(r->cmd, "out of memory");
        return rc;
    }
    struct stat st;
    if (r->baseline) {
        lp_cli_error(r->cmd, "--baseline compares one run with one, and %s holds %d repeats: "
                             "report one of them against it (llmprof report %s/%s --baseline "
                             "BASE -o DIR)", run, n, run, names[0]);
        rc = LP_CLI_EXIT_USAGE;
        goto done;
    }
    if (r->out && stat(r->out, &st) == 0 && !S_ISDIR(st.st_mode)) {
        lp_cli_error(r->cmd, "-o %s: a directory of repeats is reported into a directory (one "
                             "per repeat, the comparison beside them), and %s is none", r->out,
                     r->out);
        rc = LP_CLI_EXIT_USAGE;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 256], out[PATH_MAX + 256];
        struct lp_cli_report sub = *r;
        snprintf(path, sizeof path, "%s/%s", run, names[i]);
        if (r->out) {
            snprintf(out, sizeof out, "%s/%s", r->out, names[i]);
            sub.out = out;
        }
        sub.quiet = 1;
        sub.take_repeat = &reps[m];
        sub.repeat_label = names[i];
        int one = lp_cli_report_run(&sub, path);
        if (one == LP_CLI_EXIT_USAGE) {
            rc = one;
            goto done;
        }
        if (one != 0 || !reps[m].label) {
            if (one != 0) /* else said: a repeat of several processes */
                lp_cli_error(r->cmd, "warning: the repeat %s could not be reported: left out "
                                     "of the comparison", path);
            lp_repeat_free(&reps[m]);
            continue;
        }
        m++;
    }
    if (!m) {
        lp_cli_error(r->cmd, "%s: none of its %d repeats could be compared", run, n);
        goto done;
    }
    if ((rc = write_repeats(r, reps, m, r->out ? r->out : run, &summary)) == 0 && summary)
        lp_fmt_put_lines(stdout, summary);
done:
    for (size_t i = 0; i < m; i++)
        lp_repeat_free(&reps[i]);
    free(reps);
    free(summary);
    return rc;
}

/* The report of a run's traces: each one's files, and with several the run report */
static int report_traces(struct lp_cli_report *r, const char *run)
{
    struct lp_cli_outs outs = {.cmd = r->cmd};
    char **traces = NULL, **summaries = NULL, *run_summary = NULL;
    struct lp_rank *ranks = NULL;
    struct lp_ranks_unread *unread = NULL;
    char(*why)[512] = NULL;
    size_t n_read = 0, n_unread = 0;
    int n = lp_cli_run_traces(r->cmd, run, &traces), rc = LP_CLI_EXIT_INPUT;
    if (n <= 0)
        goto done;
    if (r->take_repeat && n > 1) {
        /* which process of one repeat answers to which of another is not known here */
        lp_cli_error(r->cmd, "warning: the repeat %s holds %d traces (ranks or processes): "
                             "reported, but left out of the comparison, which takes repeats of "
                             "one process each", run, n);
        r->take_repeat = NULL;
    }
    if (r->baseline_trace && n > 1) {
        /* runs that cannot be compared */
        lp_cli_error(r->cmd, "--baseline compares one trace with one, and %s holds %d (ranks "
                             "or processes): report one of them against it, e.g. llmprof "
                             "report %s --baseline %s -o DIR", run, n, traces[0],
                     r->baseline);
        goto done;
    }
    if (check_outputs(r, run, traces, n) != 0) {
        rc = LP_CLI_EXIT_USAGE;
        goto done;
    }
    if ((rc = lp_cli_report_baseline(r)) != 0)
        goto done;
    rc = LP_CLI_EXIT_INPUT;
    if (!(summaries = calloc((size_t)n, sizeof *summaries)) ||
        (n > 1 && (!(ranks = calloc((size_t)n, sizeof *ranks)) ||
                   !(unread = calloc((size_t)n, sizeof *unread)) ||
                   !(why = calloc((size_t)n, sizeof *why))))) {
        lp_cli_error(r->cmd, "out of memory");
        goto done;
    }
    /* all traces first, then every file moved in at once: a failure leaves the old ones. Of
     * several, one that cannot be read (a process killed before it wrote, a damaged file) is
     * left out and said: the others' reports are still whole. */
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX + 256];
        report_dir(r, run, traces[i], n > 1, dir, sizeof dir);
        int one = report_one(r, traces[i], dir, &outs, &summaries[i],
                             ranks ? &ranks[n_read] : NULL, run, why ? why[n_unread] : NULL,
                             why ? sizeof *why : 0);
        if (one == -2 && why) {
            /* the reader's message names the file first: once is enough */
            size_t pl = strlen(traces[i]);
            char *w = why[n_unread];
            if (!strncmp(w, traces[i], pl) && w[pl] == ':' && w[pl + 1] == ' ')
                memmove(w, w + pl + 2, strlen(w + pl + 2) + 1);
            lp_cli_error(r->cmd, "warning: %s cannot be read, left out of the run report: %s",
                         traces[i], w);
            unread[n_unread] = (struct lp_ranks_unread){traces[i], why[n_unread]};
            n_unread++;
            continue;
        }
        if (one != 0) {
            rc = one == -3 ? LP_CLI_EXIT_USAGE : LP_CLI_EXIT_INPUT;
            goto done;
        }
        n_read++;
    }
    if (ranks && n_read == 0) {
        lp_cli_error(r->cmd, "%s: none of its %d traces can be read", run, n);
        goto done;
    }
    if (ranks) {
        char dir[PATH_MAX + 256];
        report_dir(r, run, NULL, 0, dir, sizeof dir);
        struct lp_rank *taken = ranks;
        ranks = NULL;
        if (report_ranks(r, taken, n_read, unread, n_unread, dir, &outs, &run_summary) != 0)
            goto done;
    }
    lp_cli_progress_end();
    if (lp_cli_outs_commit(&outs) != 0)
        goto done;
    rc = 0;
    for (int i = 0; !r->baseline_trace && i < n; i++) {
        char dir[PATH_MAX + 256], old[PATH_MAX + 300];
        report_dir(r, run, traces[i], n > 1, dir, sizeof dir);
        snprintf(old, sizeof old, "%s/diff.md", dir);
        if (access(old, F_OK) == 0)
            lp_cli_error(r->cmd, "note: %s and diff.json are from an earlier report with "
                                 "--baseline, left as they were; this report has no baseline",
                         old);
    }
    /* summary.md and the paths: names already escaped by the writer, and anything else from
     * outside is escaped here (lines kept) before it reaches the terminal */
    for (int i = 0, shown = 0; i < n; i++)
        if (summaries[i]) {
            printf("%s", shown++ ? "\n" : "");
            lp_fmt_put_lines(stdout, summaries[i]);
        }
    if (run_summary) {
        printf("\n");
        lp_fmt_put_lines(stdout, run_summary);
    }
done:
    lp_cli_progress_end();
    lp_cli_outs_free(&outs);
    for (int i = 0; summaries && i < n; i++)
        free(summaries[i]);
    free(summaries);
    free(run_summary);
    for (int i = 0; ranks && i < n; i++) /* zeroed past those taken */
        lp_rank_free(&ranks[i]);
    free(ranks);
    free(unread);
    free(why);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    return rc;
}

int lp_cli_report_run(struct lp_cli_report *r, const char *run)
{
    if (r->take_repeat) /* a repeat is a run of its own */
        return report_traces(r, run);
    char **names;
    int n = lp_cli_repeats_read(r->cmd, run, &names);
    if (n == 0)
        return report_traces(r, run);
    int rc = n < 0 ? LP_CLI_EXIT_INPUT : report_repeats(r, run, names, n);
    lp_cli_free_list(names, n > 0 ? n : 0);
    return rc;
}

int lp_cmd_report(int argc, char **argv)
{
    struct lp_cli_report r;
    lp_cli_report_init(&r, "report");
    int rc = lp_cli_parse(&report_cmd, &r, argc, argv, NULL);
    if (rc != 0) {
        rc = rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    } else if (!r.run) {
        lp_cli_error("report", "which run? usage: llmprof report RUN [options]");
        rc = LP_CLI_EXIT_USAGE;
    } else if ((rc = lp_cli_report_prepare(&r)) == 0) {
        rc = lp_cli_report_run(&r, r.run);
    }
    lp_cli_report_free(&r);
    return rc;
}
