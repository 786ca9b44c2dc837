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
    "options of both (see their --help): -o DIR, --nvml-hz N, --light, --gemm, --no-gemm\n"
    "and --quiet go to record (--quiet to report too); --model, --stage, --gpu and the rest\n"
    "to report. Exits with CMD's status, or 1 when CMD succeeded and the report failed.\n"
    "\n"
    "example:\n"
    "  llmprof profile -o run1 --model config.json -- python3 infer.py\n";

/* report options that take a value */
static const char *const report_valued[] = {
    "--model", "--gpu", "--hw-file", "--stage", "--prefill-tokens", "--decode-tokens",
    "--batch", "--top", "--gap-us", "--peak-tflops", "--mem-bw", "--weights", "--act", "--kv",
    "--prefill-logits"};

static int valued(const char *a)
{
    for (size_t i = 0; i < sizeof report_valued / sizeof *report_valued; i++)
        if (!strcmp(a, report_valued[i]))
            return 1;
    return 0;
}

int lp_cmd_profile(int argc, char **argv)
{
    char **rec = calloc((size_t)argc + 4, sizeof *rec), **rep = calloc((size_t)argc + 4, sizeof *rep);
    int nrec = 0, nrep = 0, rc = 2;
    const char *out = NULL;
    char dir[64];
    if (!rec || !rep)
        goto done;
    rec[nrec++] = "record";
    rep[nrep++] = "report";
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
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
            if (i + 1 >= argc) {
                lp_cli_error("profile", "%s needs a directory", a);
                goto done;
            }
            out = argv[++i];
        } else if (!strcmp(a, "--nvml-hz")) {
            rec[nrec++] = argv[i];
            if (i + 1 < argc)
                rec[nrec++] = argv[++i];
        } else if (!strcmp(a, "--light") || !strcmp(a, "--gemm") || !strcmp(a, "--no-gemm")) {
            rec[nrec++] = argv[i];
        } else if (!strcmp(a, "--quiet")) {
            rec[nrec++] = argv[i];
            rep[nrep++] = argv[i];
        } else {
            rep[nrep++] = argv[i];
            if (valued(a) && i + 1 < argc)
                rep[nrep++] = argv[++i];
        }
    }
    if (i >= argc) {
        lp_cli_error("profile", "no command to run; usage: llmprof profile [options] -- CMD");
        goto done;
    }
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
    rep[nrep++] = (char *)out;
    rc = lp_cmd_record(nrec, rec);
    fflush(stdout);
    char **traces = NULL;
    int n = lp_cli_run_traces("profile", out, &traces);
    lp_cli_free_list(traces, n > 0 ? n : 0);
    if (n > 0) {
        int r = lp_cmd_report(nrep, rep);
        if (rc == 0 && r != 0)
            rc = 1;
    } else if (rc == 0) {
        rc = 1;
    }
done:
    free(rec);
    free(rep);
    return rc;
}
