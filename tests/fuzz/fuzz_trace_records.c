/* libFuzzer target for the record decoder and all that reads records: the input is a META
 * payload and record streams (format in fuzz.h), wrapped into a trace whose chunks carry
 * valid checksums, so that mutations reach the decoder instead of the checksum test that
 * stops them in fuzz_trace_reader. Then the same read, analysis and writers. */
#include "fuzz.h"
#include "trace/codec.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lp_buf image; /* kept between inputs: no allocation per run */
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    if (lp_fuzz_trace_build(data, size, 0, &image) == 0)
        lp_fuzz_verdict = lp_fuzz_trace_image(image.data, image.len);
    return 0;
}
