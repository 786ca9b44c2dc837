/* The trace clock (see clock.h). Falls back to CLOCK_REALTIME, CUPTI's own source on
 * Linux, when CUPTI is not loaded. */
#include "clock.h"

#include <time.h>

#include "cupti_api.h"

uint64_t lp_clock_ns(void)
{
    uint64_t t;
    if (lp_cupti.GetTimestamp && lp_cupti.GetTimestamp(&t) == CUPTI_SUCCESS)
        return t;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void lp_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}
