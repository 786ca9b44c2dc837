/* Collector warnings: one line on stderr per distinct problem, and the same text kept as
 * a loss record in the trace, so nothing the collector failed to record is silent. */
#ifndef LP_COLLECT_LOG_H
#define LP_COLLECT_LOG_H

#include "llmprof/trace.h"

/* SOURCE is an enum lp_loss_source; COUNT is 0 when unknown. */
void lp_collect_warn(uint32_t source, uint64_t count, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Silences stderr (LLMPROF_QUIET=1); the trace still gets the loss records. */
void lp_collect_set_quiet(int quiet);

#endif
