/* llmprof profile: record, then (with --deep N) the deep dive, then report, in one command.
 * It takes the options of record and report (their own tables) and three of deep's before
 * the command; the report goes into the run directory. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/version.h"

struct profile_opts {
    struct lp_cli_record_opts rec;
    struct lp_cli_report rep;
    struct lp_cli_deep_opts deep;
    int repeat;                   /* --repeat N: N runs of CMD (0: one, as without) */
};

/* record's and report's options, each named (their --help says what each does) */
static void print_record_options(FILE *f)
{
    lp_cli_help_names(f, "\nrecord's options (see 'llmprof record --help'):", lp_cli_record_options,
                      NULL, ".");
}

static void print_report_options(FILE *f)
{
    static const char *const records[] = {"--output", "--quiet", NULL}; /* record's first */
    lp_cli_help_names(f, "\nreport's options (see 'llmprof report --help'):", lp_cli_report_options,
                      records, ".");
}

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof profile [record, deep and report options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs 'llmprof record' on CMD, with --deep N then 'llmprof deep' (CMD runs a second time,\n"
    "under Nsight Compute), then 'llmprof report' on the run directory. It takes the\n"
    "options of record and report, listed below: -o DIR and --quiet are record's and go to\n"
    "deep and report too (the report goes into the run directory). Every option, and the\n"
    "files --model, --hw-file and --baseline name, is checked, and with --deep ncu found,\n"
    "before CMD starts (CMD not run: status 2 on a mistake of the command line, 1 when such\n"
    "a file cannot be used). Exits with CMD's status, or 1 when CMD succeeded and the deep\n"
    "dive or the report failed; when CMD fails there is no deep dive; when record does not\n"
    "start CMD (an output that holds a run, a command not found), nothing is reported and\n"
    "record's status is returned. With --deep, record takes --graphs node unless told\n"
    "otherwise: the deep dive chooses kernels by name, also those CUDA graphs replay.\n"
    "\n"
    "example:\n"
    "  llmprof profile -o run1 --model config.json -- python3 infer.py\n"
    "  llmprof profile -o run2 --deep 5 -- python3 infer.py\n"
    "\n"
    "deep dive options (see 'llmprof deep --help'):\n"},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--deep", .arg = "N",
     .help = "then profile the top N kernels of each stage with Nsight Compute",
     .off = offsetof(struct profile_opts, deep.top), .min = 1, .max = 1000},
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--deep-budget", .arg = "MIN",
     .help = "the most minutes the deep dive may take (default 30)",
     .off = offsetof(struct profile_opts, deep.budget_min), .dmax = 24 * 60},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--ncu", .arg = "PATH",
     .help = "the ncu to run (default: ncu in PATH, then /usr/local/cuda/bin/ncu)",
     .off = offsetof(struct profile_opts, deep.ncu), .missing = "a path"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "\nrepeats:\n"},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--repeat", .arg = "N",
     .help = "run CMD N times, one after the other, each recorded into\n"
             "DIR/repeat-1 ... DIR/repeat-N (a run of its own; DIR/meta.json\n"
             "lists them), then report each and compare them in DIR/repeats.md,\n"
             ".json and .csv: every figure's mean, std, CV, min and max over the\n"
             "repeats and whether each repeat stays within 10 % of the mean.\n"
             "Stops at the first repeat whose CMD fails (its status is\n"
             "profile's; the repeats that ran are compared). DIR must be new\n"
             "or empty, or with --force hold earlier repeats. Not with --deep\n"
             "or --baseline",
     .off = offsetof(struct profile_opts, repeat), .min = 1, .max = 1000},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .print = print_record_options},
    {.kind = LP_CLI_OPT_KIND_TEXT, .print = print_report_options},
    /* record's first: its -o and --quiet are profile's */
    {.kind = LP_CLI_OPT_KIND_TABLE, .table = lp_cli_record_options,
     .off = offsetof(struct profile_opts, rec)},
    {.kind = LP_CLI_OPT_KIND_TABLE, .table = lp_cli_report_options,
     .off = offsetof(struct profile_opts, rep)},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd profile_cmd = {
    .name = "profile", .opts = options, .help_col = 22, .stops_at_command = 1,
};

/* DIR/meta.json of N repeats: the runs recorded (each a directory of DIR), their programs'
 * exit statuses, the command; written whole or not at all */
static int write_repeats_meta(const char *dir, const struct lp_cli_record_opts *rec, int asked,
                              int done, const int *status)
{
    json_t *runs = json_array(), *st = json_array(), *cmd = json_array();
    for (int k = 1; k <= done; k++) {
        char name[32];
        snprintf(name, sizeof name, "repeat-%d", k);
        json_array_append_new(runs, json_string(name));
        json_array_append_new(st, json_integer(status[k - 1]));
    }
    for (char **a = rec->cmd; *a; a++)
        json_array_append_new(cmd, json_string(*a));
    json_t *meta = json_pack("{s:s,s:{s:i,s:o,s:o},s:o}", "llmprof_version", LLMPROF_VERSION,
                             "repeats", "asked", asked, "runs", runs, "exit_status", st,
                             "command", cmd);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    struct lp_cli_outs outs = {.cmd = "profile"};
    FILE *f = meta ? lp_cli_outs_open(&outs, path, 0) : NULL;
    int rc = f && lp_cli_outs_close(&outs, f, json_dumpf(meta, f, JSON_INDENT(1)) ||
                                                  fputc('\n', f) == EOF ? -1 : 0) == 0 &&
                     lp_cli_outs_commit(&outs) == 0
                 ? 0
                 : -1;
    lp_cli_outs_free(&outs);
    json_decref(meta);
    return rc;
}

/* 1 when DIR holds nothing but . and .. (or cannot be read: then mkdir's error says) */
static int dir_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 1;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)) != NULL)
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

/* DIR for the repeats: made when missing (*MADE set); one already there must be empty, or
 * with --force hold earlier repeats (each repeat's record then replaces its own run, and
 * meta.json is written anew): anything else there is refused */
static int repeats_dir(struct lp_cli_record_opts *rec, int *made)
{
    if (!rec->out) {
        time_t s = time(NULL);
        struct tm tm;
        localtime_r(&s, &tm);
        strftime(rec->default_out, sizeof rec->default_out, "llmprof-%Y%m%d-%H%M%S", &tm);
        rec->out = rec->default_out;
    }
    struct stat st;
    if (stat(rec->out, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            lp_cli_error("profile", "%s is there and is no directory: --repeat records into "
                                    "a directory of its own", rec->out);
            return -1;
        }
        if (dir_empty(rec->out))
            return 0;
        if (!rec->force) {
            lp_cli_error("profile", "%s already holds files: --force replaces earlier repeats "
                                    "there, or choose another directory", rec->out);
            return -1;
        }
        int earlier = lp_cli_repeats_read("profile", rec->out, NULL);
        if (earlier == 0)
            lp_cli_error("profile", "%s holds files that are no earlier --repeat's: --force "
                                    "replaces only those; choose another directory", rec->out);
        return earlier > 0 ? 0 : -1;
    }
    if (mkdir(rec->out, 0777) != 0) {
        lp_cli_error("profile", "cannot create %s: %s", rec->out, strerror(errno));
        return -1;
    }
    *made = 1;
    return 0;
}

/* --repeat N: CMD recorded N times into DIR/repeat-K, then one report of them all. Returns
 * the first failing program's status (the repeats after it are not run), or 1 when the
 * programs succeeded and the report did not. */
static int profile_repeats(struct profile_opts *o)
{
    int made = 0;
    if (repeats_dir(&o->rec, &made) != 0)
        return LP_CLI_EXIT_USAGE;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o->rec.out);
    int *status = calloc((size_t)o->repeat, sizeof *status), done = 0, rc = 0;
    if (!status) {
        lp_cli_error("profile", "out of memory");
        return LP_CLI_EXIT_INPUT;
    }
    for (int k = 1; k <= o->repeat && rc == 0; k++) {
        char out[PATH_MAX + 32];
        snprintf(out, sizeof out, "%s/repeat-%d", dir, k);
        o->rec.out = out;
        int ran = 0;
        if (!o->rec.quiet)
            fprintf(stderr, "llmprof profile: repeat %d of %d\n", k, o->repeat);
        rc = lp_cli_record(&o->rec, &ran);
        fflush(stdout);
        if (!ran)
            break; /* record refused it: its status, and nothing of it to report */
        status[done++] = rc;
        if (rc != 0)
            lp_cli_error("profile", "repeat %d: the program exited with status %d: the "
                                    "repeats after it are not run", k, rc);
    }
    o->rec.out = NULL;
    if (!done && made)
        rmdir(dir); /* nothing ran: the directory goes as record's would */
    if (done && write_repeats_meta(dir, &o->rec, o->repeat, done, status) != 0) {
        lp_cli_error("profile", "%s/meta.json could not be written: the repeats are not "
                                "listed", dir);
        rc = rc ? rc : LP_CLI_EXIT_INPUT;
    } else if (done) {
        int r = lp_cli_report_run(&o->rep, dir);
        if (rc == 0 && r != 0)
            rc = LP_CLI_EXIT_INPUT;
    }
    free(status);
    return rc;
}

int lp_cmd_profile(int argc, char **argv)
{
    struct profile_opts o;
    lp_cli_record_init(&o.rec);
    lp_cli_report_init(&o.rep, "profile");
    lp_cli_deep_init(&o.deep);
    o.repeat = 0;
    int first, rc = lp_cli_parse(&profile_cmd, &o, argc, argv, &first);
    if (rc != 0) {
        rc = rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
        goto done;
    }
    rc = LP_CLI_EXIT_USAGE;
    if (first >= argc) {
        lp_cli_error("profile", "no command to run; usage: llmprof profile [options] -- CMD");
        goto done;
    }
    if (o.repeat && (o.deep.top || o.rep.baseline)) {
        lp_cli_error("profile", "--repeat records several runs, and %s takes one: run it on "
                     "one repeat afterwards", o.deep.top ? "--deep" : "--baseline");
        goto done;
    }
    o.rep.quiet = o.rec.quiet;
    /* everything the report needs is checked now: a mistake must not cost a whole run */
    if ((rc = lp_cli_report_prepare(&o.rep)) != 0 || (rc = lp_cli_report_baseline(&o.rep)) != 0)
        goto done;
    rc = LP_CLI_EXIT_USAGE;
    if (o.rep.baseline_trace && o.rec.out &&
        lp_cli_dir_holds_file(o.rec.out, o.rep.baseline_trace)) {
        lp_cli_error("profile", "%s holds the baseline's trace (%s): record the new run into "
                                "another directory", o.rec.out, o.rep.baseline_trace);
        goto done;
    }
    struct lp_cli_deep_opts deep_default;
    lp_cli_deep_init(&deep_default);
    if (!o.deep.top && (o.deep.ncu || o.deep.budget_min != deep_default.budget_min)) {
        lp_cli_error("profile", "--deep-budget and --ncu go with --deep N");
        goto done;
    }
    if (o.deep.top && (o.rec.light || lp_cli_deep_prepare(&o.deep) != 0)) {
        if (o.rec.light)
            lp_cli_error("profile", "--deep needs the kernels --light does not record");
        goto done;
    }
    /* the deep dive picks kernels by name: inside CUDA graphs it needs them one by one */
    if (o.deep.top && !o.rec.graphs)
        o.rec.graphs = "node";
    o.rec.cmd = argv + first;
    if (o.repeat) {
        rc = profile_repeats(&o);
        goto done;
    }
    int ran = 0;
    rc = lp_cli_record(&o.rec, &ran);
    fflush(stdout);
    /* a run record refused (one already there, a command not found) is not reported on */
    if (!ran)
        goto done;
    char **traces = NULL;
    int n = lp_cli_run_traces("profile", o.rec.out, &traces);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    if (n > 1 && o.rep.baseline_trace) {
        /* the run is recorded: its reports are worth more than the comparison */
        lp_cli_error("profile", "warning: the run recorded %d traces (ranks or processes) and "
                                "--baseline compares one trace with one: the reports are "
                                "written without it (llmprof report TRACE --baseline %s -o "
                                "DIR compares one)", n, o.rep.baseline);
        lp_cli_report_baseline_drop(&o.rep);
    }
    if (n > 0 && o.deep.top && rc != 0) {
        lp_cli_error("profile", "the program exited with status %d: the deep dive, which runs "
                     "it again, is skipped", rc);
    } else if (n > 0 && o.deep.top) {
        o.deep.run = o.rec.out;
        o.deep.quiet = o.rec.quiet;
        if (lp_cli_deep_run(&o.deep, o.rec.cmd) != 0)
            rc = LP_CLI_EXIT_INPUT;
        fflush(stdout);
    }
    if (n > 0) {
        int r = lp_cli_report_run(&o.rep, o.rec.out);
        if (rc == 0 && r != 0)
            rc = LP_CLI_EXIT_INPUT;
    } else if (rc == 0) {
        rc = LP_CLI_EXIT_INPUT;
    }
done:
    lp_cli_report_free(&o.rep);
    return rc;
}
