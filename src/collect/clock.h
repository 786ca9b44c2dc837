/* The trace clock: CUPTI's timestamp (CLOCK_REALTIME in ns on Linux), so NVML samples and
 * activity records share one time base exactly. */
#ifndef LP_COLLECT_CLOCK_H
#define LP_COLLECT_CLOCK_H

#include <stdint.h>

uint64_t lp_clock_ns(void);

#endif
