/* libFuzzer target for the safetensors header parser: any bytes add a header's tensors to
 * the weights, or give a clear error; never a crash. */
#include "fuzz.h"
#include "llmprof/model.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lp_weights w = {0};
    char err[512];
    lp_fuzz_verdict = lp_safetensors_header_parse((const char *)data, size, "fuzz.safetensors",
                                                  NULL, &w, err, sizeof err) == LP_OK
                          ? LP_FUZZ_WHOLE
                          : LP_FUZZ_REJECTED;
    return 0;
}
