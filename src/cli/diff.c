/* llmprof diff: compares two recorded runs (B against A) and gates on the comparison. Each
 * run is analysed as report would (the same analysis options for both); the comparison
 * (lp_diff_build) and the rules (lp_diff_gate) are the analysis', the files the writers'. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/report.h"

struct diff_opts {
    const char *runs[2];          /* the operands: A, B */
    struct lp_diff_rule *rules;
    size_t n_rules;
    double min_change_pct;        /* 0: the analysis' default */
    struct lp_cli_report rep;     /* report's analysis options; rep.out: -o, rep.quiet */
};

static int parse_rule(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                      const char *arg)
{
    (void)o;
    struct diff_opts *d = value;
    char err[512];
    if (!arg) {
        lp_cli_error(cmd, "%s needs a rule, e.g. %s 'tpot>+5%%'", opt, opt);
        return -1;
    }
    struct lp_diff_rule r;
    if (lp_diff_rule_parse(arg, &r, err, sizeof err) != LP_OK) {
        lp_cli_error(cmd, "%s %s", opt, err);
        return -1;
    }
    struct lp_diff_rule *p = realloc(d->rules, (d->n_rules + 1) * sizeof *p);
    if (!p) {
        lp_cli_error(cmd, "out of memory");
        return -1;
    }
    d->rules = p;
    p[d->n_rules++] = r;
    return 0;
}

/* report's options diff takes for both runs' analysis, each named: all but those of output
 * (said apart) and --baseline (refused: diff compares RUN_B with RUN_A) */
static void print_analysis_options(FILE *f)
{
    static const char *const apart[] = {"--output", "--quiet", "--top", "--gap-us",
                                        "--baseline", NULL};
    lp_cli_help_names(f, "\nAnalysis options, as for 'llmprof report', apply to both runs:",
                      lp_cli_report_options, apart, ".");
}

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof diff RUN_A RUN_B [options]\n"
    "\n"
    "Compares run B with run A (each a run directory of 'llmprof record', a .lpt trace, or a\n"
    "report directory whose report.json names a trace still there): TTFT, TPOT and ITL\n"
    "(p50, p90, p99), each stage's wall time, step times, tokens/s, MFU, MBU, energy per\n"
    "token, GPU busy, kernels and GPU time per step; kernels added, removed and changed by\n"
    "name (calls and GPU time per decode step, else per occurrence); GEMM shapes; operators.\n"
    "Timed figures come with a 95 % interval from each run's own noise (per-step and\n"
    "per-request values resampled in blocks; per-call means and deviations); a change whose\n"
    "interval holds zero, or under --min-change, is called no change; one with too few\n"
    "values for an interval is 'unsure'. Counts and one-value-per-run figures (energy per\n"
    "token, GPU busy) have none. Runs on different GPUs, or whose GEMM shapes mostly\n"
    "differ, are compared with a warning. --top and --gap-us are taken, as report takes\n"
    "them, and change nothing here; --baseline is report's and refused.\n"
    "\n"
    "Prints diff.md; with -o DIR writes diff.md and diff.json (schema: docs/report-schema.md)\n"
    "there instead, both or neither. Exit status: 0; 3 when a --fail-if rule failed (also\n"
    "when its figure was not measured in both runs, or its change is unsure); 1 when a run\n"
    "cannot be used (missing, unreadable, damaged, several traces: give one) or a file\n"
    "cannot be written; 2 on a mistake of the command line (an unknown option, a rule that\n"
    "cannot be parsed, an output that is one of the inputs).\n"
    "\n"
    "options:\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--fail-if", .arg = "RULE",
     .help = "fail (status 3) when a figure moved past a limit beyond the\n"
             "noise (repeatable): 'tpot>+5%', 'ttft.p90>+10%',\n"
             "'decode.tokens_s<-3%', 'mfu<-5%'. Figures: ttft, tpot, itl\n"
             "(.p50 .p90 .p99), mfu, mbu, STAGE.wall, STAGE.step (.p90 ...),\n"
             "STAGE.tokens_s, .mfu, .mbu, .j_per_token, .busy, .kernels,\n"
             ".gpu_time",
     .parse = parse_rule},
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--min-change", .arg = "PCT",
     .help = "changes under PCT % are no change (default 2)",
     .off = offsetof(struct diff_opts, min_change_pct), .dmax = 1000},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "  -o, --output DIR     write diff.md and diff.json there (created)\n"
    "  --quiet              print nothing but the gate's failures\n"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .print = print_analysis_options},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "\n"
    "examples:\n"
    "  llmprof diff base/ new/\n"
    "  llmprof diff base/ new/ --model config.json -o diff/ --fail-if 'tpot>+5%' \\\n"
    "    --fail-if 'ttft>+10%'\n"},
    {.kind = LP_CLI_OPT_KIND_TABLE, .table = lp_cli_report_options,
     .off = offsetof(struct diff_opts, rep)},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd diff_cmd = {
    .name = "diff", .opts = options, .help_col = 23, .operand = 2,
    .operand_off = offsetof(struct diff_opts, runs), .too_many = "two runs at a time",
};

/* Reads and analyses trace PATH into *T and R: 0, or the exit status with a message
 * (LP_CLI_EXIT_USAGE for a stage rule the trace refutes). */
static int analyse(const struct diff_opts *o, const char *path, char *cmdline, size_t len,
                   struct lp_trace **t, struct lp_run *r)
{
    char err[512];
    struct lp_run_options opt = o->rep.run_opt;
    opt.command = lp_cli_recorded_command(path, cmdline, len);
    lp_cli_progress("diff", "reading %s", path);
    if (lp_trace_read(t, path, err, sizeof err) != LP_OK) {
        lp_cli_error("diff", "%s", err);
        return LP_CLI_EXIT_INPUT;
    }
    lp_cli_trace_warnings("diff", path, *t, "diff");
    lp_cli_progress("diff", "analysing %zu kernels of %s", (*t)->n_kernels, path);
    enum lp_status arc = lp_run_analyze(*t, &opt, r, err, sizeof err);
    if (arc != LP_OK) {
        lp_cli_error("diff", "%s: %s", path, err);
        return arc == LP_ERR_ARG ? LP_CLI_EXIT_USAGE : LP_CLI_EXIT_INPUT;
    }
    return 0;
}

/* diff.md and diff.json into OUT (checked before any work), both or neither: 0, or -1 with a
 * message. */
static int write_files(const char *out, const struct lp_diff *d)
{
    static const struct {
        const char *name;
        int (*write)(FILE *, const struct lp_diff *);
    } files[] = {{"diff.md", lp_report_diff_md}, {"diff.json", lp_report_diff_json}};
    struct lp_cli_outs outs = {.cmd = "diff"};
    char path[PATH_MAX + 16];
    int rc = -1;
    if (lp_cli_outs_mkdir(&outs, out) != 0) {
        lp_cli_error("diff", "cannot create %s: %s", out, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i].name);
        FILE *f = lp_cli_outs_open(&outs, path, 0);
        if (!f || lp_cli_outs_close(&outs, f, files[i].write(f, d)) != 0)
            goto done;
    }
    rc = lp_cli_outs_commit(&outs);
done:
    lp_cli_outs_free(&outs);
    return rc;
}

static int compare(struct diff_opts *o)
{
    char path[2][PATH_MAX], cmdline[2][2048];
    struct lp_trace *t[2] = {NULL, NULL};
    struct lp_run r[2];
    struct lp_diff d;
    int analysed = 0, built = 0, rc = LP_CLI_EXIT_INPUT;
    for (int x = 0; x < 2; x++)
        if (lp_cli_one_trace("diff", o->runs[x], path[x], sizeof path[x], NULL) != 0)
            return LP_CLI_EXIT_INPUT;
    if (o->rep.out) {
        /* refused before any work: an output that is an input, or cannot be written */
        char meta[2][PATH_MAX + 16];
        const char *in[4] = {path[0], path[1], NULL, NULL};
        for (int x = 0; x < 2; x++)
            in[2 + x] = lp_cli_meta_path(path[x], meta[x], sizeof meta[x]) == 0 ? meta[x] : NULL;
        char file[PATH_MAX + 16];
        for (int i = 0; i < 2; i++) {
            snprintf(file, sizeof file, "%s/%s", o->rep.out, i ? "diff.json" : "diff.md");
            struct stat st;
            if (lp_cli_out_is_input("diff", file, in, 4) ||
                (stat(o->rep.out, &st) == 0 && lp_cli_out_check("diff", file, 0) != 0))
                return LP_CLI_EXIT_USAGE;
        }
    }
    for (; analysed < 2; analysed++)
        if ((rc = analyse(o, path[analysed], cmdline[analysed], sizeof cmdline[analysed],
                          &t[analysed], &r[analysed])) != 0)
            goto done;
    rc = LP_CLI_EXIT_INPUT; /* out of memory, a write that failed */
    lp_cli_progress("diff", "comparing");
    struct lp_diff_options dopt = {.min_change = o->min_change_pct / 100};
    if (lp_diff_build(&r[0], &r[1], &dopt, &d) != LP_OK) {
        lp_cli_error("diff", "out of memory");
        goto done;
    }
    built = 1;
    d.label[0] = o->runs[0];
    d.label[1] = o->runs[1];
    if (lp_diff_gate(&d, o->rules, o->n_rules) != LP_OK) {
        lp_cli_error("diff", "out of memory");
        goto done;
    }
    lp_cli_progress_end();
    lp_report_diff_warnings(stderr, &d, "diff");
    if (o->rep.out) {
        if (write_files(o->rep.out, &d) != 0)
            goto done;
        if (!o->rep.quiet)
            printf("diff of %s against %s in %s/: diff.md diff.json\n", o->runs[1], o->runs[0],
                   o->rep.out);
    } else if (!o->rep.quiet && lp_report_diff_md(stdout, &d) != 0) {
        lp_cli_error("diff", "writing to standard output failed: %s", strerror(errno));
        goto done;
    }
    if (d.n_checks) {
        fflush(stdout);
        FILE *f = d.failed ? stderr : stdout;
        if (!o->rep.quiet || d.failed) {
            fprintf(f, "gate: %zu of %zu rules failed\n", d.failed, d.n_checks);
            lp_report_diff_gate(f, &d);
        }
    }
    /* a failed rule is told from a run that could not be read (1) */
    rc = d.failed ? LP_CLI_EXIT_RULE : 0;
done:
    lp_cli_progress_end();
    if (built)
        lp_diff_free(&d);
    for (int x = 0; x < analysed; x++)
        lp_run_free(&r[x]);
    for (int x = 0; x < 2; x++)
        lp_trace_free(t[x]);
    return rc;
}

int lp_cmd_diff(int argc, char **argv)
{
    struct diff_opts o = {0};
    lp_cli_report_init(&o.rep, "diff");
    int rc = lp_cli_parse(&diff_cmd, &o, argc, argv, NULL);
    if (rc != 0) {
        rc = rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    } else if (o.rep.baseline) {
        lp_cli_error("diff", "--baseline is report's: diff compares RUN_B with RUN_A, e.g. "
                             "llmprof diff %s RUN", o.rep.baseline);
        rc = LP_CLI_EXIT_USAGE;
    } else if (!o.runs[0] || !o.runs[1]) {
        lp_cli_error("diff", "which runs? usage: llmprof diff RUN_A RUN_B [options]");
        rc = LP_CLI_EXIT_USAGE;
    } else if ((rc = lp_cli_report_prepare(&o.rep)) == 0) {
        rc = compare(&o);
    }
    lp_cli_report_free(&o.rep);
    free(o.rules);
    return rc;
}
