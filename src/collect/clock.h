/* The trace clock: CUPTI's timestamp (CLOCK_REALTIME in ns on Linux), so NVML samples and
 * activity records share one time base exactly. */
#ifndef LP_COLLECT_CLOCK_H
#define LP_COLLECT_CLOCK_H

#include <pthread.h>
#include <stdint.h>

uint64_t lp_clock_ns(void);
/* A condition variable whose timed waits use CLOCK_MONOTONIC (immune to clock changes). */
void lp_cond_init_monotonic(pthread_cond_t *cv);

#endif
