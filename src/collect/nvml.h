/* NVML sampling: power, energy, clocks, utilisation, temperature, clock-event reasons and
 * memory of the GPUs the program uses, on the trace clock. NVML is loaded with dlopen;
 * without it everything else is still recorded. */
#ifndef LP_COLLECT_NVML_H
#define LP_COLLECT_NVML_H

#include <stdint.h>

/* Starts the sampler at HZ; 0 on success, -1 (with a loss record) when NVML is missing. */
int lp_nvml_start(double hz);
void lp_nvml_stop(void);

#endif
