/* Converters from CUPTI activity records to trace records. Pure functions over CUPTI's
 * structs (no CUPTI calls), so CI tests them with structs built from the real headers. */
#ifndef LP_COLLECT_CONVERT_H
#define LP_COLLECT_CONVERT_H

#include <cupti.h>

#include "llmprof/trace.h"

struct lp_convert_ctx {
    lp_str (*intern)(void *user, const char *s);
    /* name of an API call; may return NULL */
    const char *(*api_name)(void *user, uint32_t domain, uint32_t cbid);
    void *user;
    /* CUPTI API version at run time: fields added after the layout this build knows
     * are read only when the major versions agree */
    uint32_t cupti_version;
};

/* Fills OUT and returns 1 for the activity kinds llmprof keeps, 0 for others. */
int lp_convert_activity(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                        struct lp_record *out);

#endif
