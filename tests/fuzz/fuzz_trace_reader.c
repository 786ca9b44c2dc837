/* libFuzzer target for the trace reader and everything `llmprof report` does with what it
 * reads: any bytes must give a trace and a report, or a clear error; never a crash, leak or
 * undefined behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "llmprof/analyze.h"
#include "llmprof/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lp_trace *t = NULL;
    char err[256];
    if (lp_trace_read_mem(&t, data, size, "fuzz", err, sizeof err) != LP_OK)
        return 0;
    struct lp_run r;
    if (lp_run_analyze(t, NULL, &r, err, sizeof err) == LP_OK) {
        /* writers format what the analysis gave; large real fixtures only slow the replay */
        FILE *sink = t->n_records < 20000 ? fopen("/dev/null", "w") : NULL;
        if (sink) {
            lp_report_run_md(sink, &r);
            lp_report_run_json(sink, &r);
            lp_report_kernels_csv(sink, &r);
            lp_report_perfetto(sink, &r, 0, 0);
            fclose(sink);
        }
        lp_run_free(&r);
    }
    lp_trace_free(t);
    return 0;
}
