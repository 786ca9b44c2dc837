/* Collector warnings: one line on stderr per distinct problem, and the same text kept as
 * a loss record in the trace, so nothing the collector failed to record is silent. */
#ifndef LP_COLLECT_LOG_H
#define LP_COLLECT_LOG_H

#include "llmprof/trace.h"

/* The collector's error convention. It fails open: a problem is said once (lp_collect_warn,
 * or an ERR buffer for the caller to pass on) and the part concerned stays off, never the
 * program. So a collector function that can fail returns 0 on success and -1 on failure
 * (lp_activity_start also 1: another CUPTI client holds CUPTI), in the plain form of the
 * CUPTI and injection entry points it serves; enum lp_status is the trace library's, and
 * the sink turns the writer's into this form. */

/* SOURCE is an enum lp_loss_source; COUNT is 0 when unknown. */
void lp_collect_warn(uint32_t source, uint64_t count, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Silences stderr (LLMPROF_QUIET=1); the trace still gets the loss records. */
void lp_collect_set_quiet(int quiet);

#endif
