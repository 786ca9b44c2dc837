/* libFuzzer target for the trace reader: any bytes must give a trace or a clear error,
 * never a crash, leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>

#include "llmprof/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lp_trace *t = NULL;
    char err[256];
    if (lp_trace_read_mem(&t, data, size, "fuzz", err, sizeof err) == LP_OK) {
        for (size_t i = 0; i < t->n_kernels; i++)
            (void)lp_trace_str(t, t->kernels[i].name);
        lp_trace_free(t);
    }
    return 0;
}
