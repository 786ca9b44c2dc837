/* Hardware counters per segment of the run, in the same run and without replay (record
 * --counters): CUPTI's range profiler (user ranges, user replay) with a metric set that fits
 * one pass. The NVTX ranges whose names match the counted-range pattern cut the run, on the
 * first thread that opens one, into segments; each segment is one profiler range and one
 * counters record. Fails open: a refused metric set, counters held by another tool or any
 * CUPTI error turns the counters off with one warning and a loss record. */
#ifndef LP_COLLECT_COUNTERS_H
#define LP_COLLECT_COUNTERS_H

#include <cupti.h>

/* Acts on LLMPROF_COUNTERS (tensor dtypes, lp_counter_parse_dtypes; or "1" for the default),
 * LLMPROF_COUNTER_RANGES (a POSIX extended regex, case-insensitive) and
 * LLMPROF_COUNTER_SEGMENTS, as config.h holds them, and subscribes to the NVTX range callbacks of
 * SUBSCRIBER. Nothing is measured until the first matching range opens. */
void lp_counters_start(CUpti_SubscriberHandle subscriber);
/* The subscriber's callback for the NVTX and resource domains (inject.c dispatches). */
void lp_counters_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);
/* Closes the open segment, decodes and writes what is left; at context destruction or exit
 * (the first of the two). */
void lp_counters_stop(void);
/* In a forked child: the parent's profiler and context are not the child's. */
void lp_counters_forget(void);

#endif
