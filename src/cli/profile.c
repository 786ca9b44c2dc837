/* llmprof profile: record then report, in one command. It takes the options of both (their
 * own tables) before the command; the report goes into the run directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct profile_opts {
    struct lp_cli_record_opts rec;
    struct lp_cli_report rep;
};

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof profile [record and report options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs 'llmprof record' on CMD, then 'llmprof report' on the run directory. It takes the\n"
    "options of both (see their --help): -o DIR, --nvml-hz N, --light, --gemm, --no-gemm,\n"
    "--force and --quiet go to record (--quiet to report too); --model, --stage, --gpu and the rest\n"
    "to report. Every option is checked before CMD starts (status 2 on a mistake, CMD not\n"
    "run). Exits with CMD's status, or 1 when CMD succeeded and the report failed; when\n"
    "record does not start CMD (an output that holds a run, a command not found), nothing\n"
    "is reported and record's status is returned.\n"
    "\n"
    "example:\n"
    "  llmprof profile -o run1 --model config.json -- python3 infer.py\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    /* record's first: its -o and --quiet are profile's */
    {.kind = LP_CLI_OPT_KIND_TABLE, .table = lp_cli_record_options,
     .off = offsetof(struct profile_opts, rec)},
    {.kind = LP_CLI_OPT_KIND_TABLE, .table = lp_cli_report_options,
     .off = offsetof(struct profile_opts, rep)},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd profile_cmd = {
    .name = "profile", .opts = options, .stops_at_command = 1,
};

int lp_cmd_profile(int argc, char **argv)
{
    struct profile_opts o;
    lp_cli_record_init(&o.rec);
    lp_cli_report_init(&o.rep, "profile");
    int first, rc = lp_cli_parse(&profile_cmd, &o, argc, argv, &first);
    if (rc != 0) {
        rc = rc > 0 ? 0 : 2;
        goto done;
    }
    rc = 2;
    if (first >= argc) {
        lp_cli_error("profile", "no command to run; usage: llmprof profile [options] -- CMD");
        goto done;
    }
    o.rep.quiet = o.rec.quiet;
    /* everything the report needs is checked now: a mistake must not cost a whole run */
    if (lp_cli_report_prepare(&o.rep) != 0)
        goto done;
    o.rec.cmd = argv + first;
    int ran = 0;
    rc = lp_cli_record(&o.rec, &ran);
    fflush(stdout);
    /* a run record refused (one already there, a command not found) is not reported on */
    if (!ran)
        goto done;
    char **traces = NULL;
    int n = lp_cli_run_traces("profile", o.rec.out, &traces);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    if (n > 0) {
        int r = lp_cli_report_run(&o.rep, o.rec.out);
        if (rc == 0 && r != 0)
            rc = 1;
    } else if (rc == 0) {
        rc = 1;
    }
done:
    lp_cli_report_free(&o.rep);
    return rc;
}
