/* CUPTI activity collection: which kinds and which API calls are enabled, the bounded
 * pool of activity buffers, and the conversion of completed buffers into the sink. */
#ifndef LP_COLLECT_ACTIVITY_H
#define LP_COLLECT_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

struct lp_activity_options {
    int light;              /* kernels and NVTX only */
    size_t buffer_bytes;    /* size of one CUPTI buffer */
    unsigned max_buffers;   /* bound on buffers outstanding */
};

/* Enables activity collection: 0 when at least kernels are being recorded, 1 when
 * another CUPTI client holds CUPTI (warned), -1 on failure. */
int lp_activity_start(const struct lp_activity_options *opt);
/* Asks CUPTI to complete buffers now (forced: also incomplete ones, at exit). */
void lp_activity_flush(int forced);
/* Converts completed buffers into the sink and returns them to the pool. */
void lp_activity_drain(void);
/* Called (from CUPTI's thread) whenever a buffer completes. */
void lp_activity_set_notify(void (*fn)(void));
/* Number of buffers CUPTI has completed so far. */
uint64_t lp_activity_completions(void);
/* Reports drop counts and buffer pool use into the trace; call once at exit. */
void lp_activity_finish(void);
/* Bit d set when device d ran work recorded so far. */
uint64_t lp_activity_active_devices(void);

#endif
