/* Data types of weights, activations and the KV cache: names, bytes per element, and
 * which of them a matmul can run in. */
#include <stdio.h>
#include <strings.h>

#include "llmprof/model.h"

static const char *const dtype_names[LP_DTYPE_COUNT] = {"fp32", "tf32", "bf16", "fp16",
                                                        "fp8",  "int8", "int4"};

const char *lp_dtype_name(enum lp_dtype d)
{
    return (unsigned)d < LP_DTYPE_COUNT ? dtype_names[d] : "?";
}

double lp_dtype_bytes(enum lp_dtype d)
{
    static const double bytes[LP_DTYPE_COUNT] = {4, 4, 2, 2, 1, 1, 0.5};
    return (unsigned)d < LP_DTYPE_COUNT ? bytes[d] : 0;
}

enum lp_status lp_dtype_parse(const char *name, enum lp_dtype *d)
{
    for (int i = 0; i < LP_DTYPE_COUNT; i++)
        if (!strcasecmp(name, dtype_names[i])) {
            *d = (enum lp_dtype)i;
            return LP_OK;
        }
    return LP_ERR_ARG;
}

enum lp_status lp_dtype_check_compute(enum lp_dtype d, char *err, size_t errlen)
{
    if (d != LP_DTYPE_INT4)
        return LP_OK;
    snprintf(err, errlen, "%s is not a compute format; %s is weight-only", lp_dtype_name(d),
             lp_dtype_name(d));
    return LP_ERR_ARG;
}
