/* libFuzzer target for the trace reader and everything `llmprof report` does with what it
 * reads: any bytes must give a trace and a report, or a clear error; never a crash, leak or
 * undefined behaviour. Mutations rarely pass the chunk checksums: fuzz_trace_records
 * reaches the record decoder behind them. */
#include "fuzz.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_fuzz_verdict = lp_fuzz_trace_image(data, size);
    return 0;
}
