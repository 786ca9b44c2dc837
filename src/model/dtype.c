/* Data types of weights, activations and the KV cache: names, bytes per element, and
 * which of them a matmul can run in. */
#include <strings.h>

#include "llmprof/model.h"

static const char *const dtype_names[LP_DTYPE_COUNT] = {"fp32", "tf32", "bf16", "fp16",
                                                        "fp8",  "int8", "int4"};

const char *lp_dtype_name(enum lp_dtype d) { return (unsigned)d < LP_DTYPE_COUNT ? dtype_names[d] : "?"; }

double lp_dtype_bytes(enum lp_dtype d)
{
    static const double bytes[LP_DTYPE_COUNT] = {4, 4, 2, 2, 1, 1, 0.5};
    return (unsigned)d < LP_DTYPE_COUNT ? bytes[d] : 0;
}

int lp_dtype_parse(const char *name, enum lp_dtype *d)
{
    for (int i = 0; i < LP_DTYPE_COUNT; i++)
        if (!strcasecmp(name, dtype_names[i])) {
            *d = (enum lp_dtype)i;
            return 0;
        }
    return -1;
}
