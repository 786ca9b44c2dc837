/* llmprof export: converts a trace for other viewers. --perfetto writes the Chrome trace
 * event JSON that ui.perfetto.dev and chrome://tracing open. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/report.h"

static const char help[] =
    "usage: llmprof export RUN --perfetto FILE.json [--window FROM_MS:TO_MS]\n"
    "\n"
    "Writes a recorded trace (RUN: a run directory with one trace, or a .lpt file) in the\n"
    "Chrome trace event format, which ui.perfetto.dev opens offline (Open trace file):\n"
    "  - a host process: NVTX ranges and the recorded CUDA calls per thread;\n"
    "  - one process per GPU: kernels, copies and sets per stream, with grid, block,\n"
    "    registers, shared memory and category in their arguments;\n"
    "  - NVML samples as counter tracks (power, clocks, utilisation, temperature, memory);\n"
    "  - a flow arrow from each launching call to the kernel it launched.\n"
    "Timestamps are microseconds from the first record. With several traces in RUN, give\n"
    "the .lpt file. A kernel takes about 750 bytes of JSON (with its call and flow): for long\n"
    "runs, --window FROM_MS:TO_MS keeps what overlaps that span (ms from the first record;\n"
    "report.md's timeline gives the times); full kernel names are in kernels.csv.\n"
    "\n"
    "example:\n"
    "  llmprof export run1 --perfetto run1/trace.json\n";

int lp_cmd_export(int argc, char **argv)
{
    const char *run = NULL, *out = NULL;
    unsigned long long from = 0, to = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--perfetto")) {
            if (i + 1 >= argc) {
                lp_cli_error("export", "--perfetto needs an output file");
                return 2;
            }
            out = argv[++i];
        } else if (!strcmp(argv[i], "--window")) {
            char tail = 0;
            if (i + 1 >= argc || sscanf(argv[i + 1], "%llu:%llu%c", &from, &to, &tail) != 2 ||
                to <= from) {
                lp_cli_error("export", "--window takes FROM_MS:TO_MS with FROM < TO, e.g. 2000:2500");
                return 2;
            }
            i++;
        } else if (argv[i][0] == '-' || run) {
            lp_cli_error("export", "unexpected '%s'; see 'llmprof export --help'", argv[i]);
            return 2;
        } else {
            run = argv[i];
        }
    }
    if (!run || !out) {
        lp_cli_error("export", "usage: llmprof export RUN --perfetto FILE.json");
        return 2;
    }
    char **traces = NULL;
    int n = lp_cli_run_traces("export", run, &traces);
    if (n <= 0)
        return 1;
    if (n > 1) {
        lp_cli_error("export", "%s holds %d traces; give one of them:", run, n);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %s\n", traces[i]);
        lp_cli_free_list(traces, n);
        return 2;
    }
    int rc = 1;
    struct lp_trace *t = NULL;
    struct lp_run r;
    char err[512], tmp[4200];
    if (lp_trace_read(&t, traces[0], err, sizeof err) != LP_OK) {
        lp_cli_error("export", "%s", err);
        goto out;
    }
    if (lp_run_analyze(t, NULL, &r, err, sizeof err) != LP_OK) {
        lp_cli_error("export", "%s: %s", traces[0], err);
        goto out;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        lp_cli_error("export", "cannot write %s", out);
    } else {
        int w = lp_report_perfetto(f, &r, from, to);
        if (fclose(f) != 0 || w != 0 || rename(tmp, out) != 0) {
            lp_cli_error("export", "writing %s failed (disk full?)", out);
            unlink(tmp);
        } else {
            rc = 0;
            printf("wrote %s: open it in ui.perfetto.dev\n", out);
        }
    }
    lp_run_free(&r);
out:
    lp_trace_free(t);
    lp_cli_free_list(traces, n);
    return rc;
}
