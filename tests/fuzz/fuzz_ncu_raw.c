/* libFuzzer target for the reader of Nsight Compute's raw page (src/ncu/raw.c): any bytes
 * give kernels or a clear error, never a crash, a leak or unbounded work. */
#include <string.h>

#include "fuzz.h"
#include "llmprof/ncu.h"
#include "llmprof/status.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    struct lp_ncu_report *r;
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    if (lp_ncu_parse(&r, data, size, "fuzz.csv", err, sizeof err) != LP_OK)
        return 0;
    /* what a reader of the report touches: every name and value */
    size_t n = 0;
    for (size_t i = 0; i < r->n_kernels; i++)
        n += strlen(r->kernels[i].name ? r->kernels[i].name : "");
    for (size_t i = 0; i < r->n_stalls; i++)
        n += strlen(r->stall_names[i]);
    (void)n;
    lp_ncu_free(r);
    lp_fuzz_verdict = LP_FUZZ_WHOLE;
    return 0;
}
