/* llmprof profile: record then report, in one command. Options of both are accepted before
 * the command; the report goes into the run directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char help[] =
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
    "  llmprof profile -o run1 --model config.json -- python3 infer.py\n";

int lp_cmd_profile(int argc, char **argv)
{
    char **rec = calloc((size_t)argc + 4, sizeof *rec);
    int nrec = 0, rc = 2;
    const char *out = NULL;
    char dir[64];
    struct lp_cli_report rep;
    lp_cli_report_init(&rep, "profile");
    if (!rec) {
        lp_cli_error("profile", "out of memory");
        goto done;
    }
    rec[nrec++] = "record";
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        int took;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            rc = 0;
            goto done;
        }
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                lp_cli_error("profile", "%s needs a directory", a);
                goto done;
            }
            out = argv[++i];
        } else if (!strcmp(a, "--nvml-hz")) {
            rec[nrec++] = argv[i];
            if (i + 1 < argc)
                rec[nrec++] = argv[++i];
        } else if (!strcmp(a, "--light") || !strcmp(a, "--gemm") || !strcmp(a, "--no-gemm") ||
                   !strcmp(a, "--force")) {
            rec[nrec++] = argv[i];
        } else if (!strcmp(a, "--quiet")) {
            rec[nrec++] = argv[i];
            rep.quiet = 1;
        } else if ((took = lp_cli_report_option(&rep, argc, argv, &i)) < 0) {
            goto done;
        } else if (!took) {
            lp_cli_error("profile", "unknown option '%s'; see 'llmprof profile --help'", a);
            goto done;
        }
    }
    if (i >= argc) {
        lp_cli_error("profile", "no command to run; usage: llmprof profile [options] -- CMD");
        goto done;
    }
    /* everything the report needs is checked now: a mistake must not cost a whole run */
    if (lp_cli_report_prepare(&rep) != 0)
        goto done;
    if (!out) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(dir, sizeof dir, "llmprof-%Y%m%d-%H%M%S", &tm);
        out = dir;
    }
    rec[nrec++] = "-o";
    rec[nrec++] = (char *)out;
    rec[nrec++] = "--";
    for (; i < argc; i++)
        rec[nrec++] = argv[i];
    int ran = 0;
    rc = lp_cli_record(nrec, rec, &ran);
    fflush(stdout);
    /* a run record refused (one already there, a command not found) is not reported on */
    if (!ran)
        goto done;
    char **traces = NULL;
    int n = lp_cli_run_traces("profile", out, &traces);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    if (n > 0) {
        int r = lp_cli_report_run(&rep, out);
        if (rc == 0 && r != 0)
            rc = 1;
    } else if (rc == 0) {
        rc = 1;
    }
done:
    lp_cli_report_free(&rep);
    free(rec);
    return rc;
}
