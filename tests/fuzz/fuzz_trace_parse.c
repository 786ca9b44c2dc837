/* libFuzzer target for the trace parser alone: the input of fuzz_trace_records (a META
 * payload and record streams, wrapped into chunks with valid checksums), read by
 * lp_trace_read_mem and nothing else. Without the analysis and the writers it runs about
 * ten times faster, so long campaigns reach the reader's edge cases in many more runs;
 * fuzz_trace_records covers what the report does with what was read. It shares that
 * target's corpus (tests/fuzz/corpus/trace_records). */
#include "fuzz.h"
#include "llmprof/trace.h"
#include "trace/codec.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lp_buf image; /* kept between inputs: no allocation per run */
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    if (lp_fuzz_trace_build(data, size, 0, &image) != 0)
        return 0;
    struct lp_trace *t = NULL;
    char err[256];
    if (lp_trace_read_mem(&t, image.data, image.len, "fuzz", err, sizeof err) != LP_OK)
        return 0;
    lp_fuzz_verdict = t->complete && t->n_warnings == 0 ? LP_FUZZ_WHOLE : LP_FUZZ_PARTIAL;
    lp_trace_free(t);
    return 0;
}
