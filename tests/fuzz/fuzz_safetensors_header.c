/* libFuzzer target for the safetensors header parser. */
#include <stddef.h>
#include <stdint.h>

#include "llmprof/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lp_weights w = {0};
    char err[512];
    lp_safetensors_header_parse((const char *)data, size, "fuzz.safetensors", NULL, &w, err, sizeof err);
    return 0;
}
