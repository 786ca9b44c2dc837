/* CUPTI activity collection: which kinds and which API calls are enabled, the bounded
 * pool of activity buffers, and the conversion of completed buffers into the sink. */
#ifndef LP_COLLECT_ACTIVITY_H
#define LP_COLLECT_ACTIVITY_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

/* What to record (LLMPROF_KINDS names them: kernel,marker,...). */
enum lp_kind {
    LP_KIND_KERNEL = 1 << 0,
    LP_KIND_MARKER = 1 << 1,   /* NVTX */
    LP_KIND_DEVICE = 1 << 2,
    LP_KIND_OVERHEAD = 1 << 3,
    LP_KIND_MEMCPY = 1 << 4,
    LP_KIND_MEMSET = 1 << 5,
    LP_KIND_MEMORY = 1 << 6,   /* allocations and frees */
    LP_KIND_API = 1 << 7,      /* launch, copy, set and synchronise calls */
    LP_KINDS_LIGHT = LP_KIND_KERNEL | LP_KIND_MARKER | LP_KIND_DEVICE | LP_KIND_OVERHEAD,
    LP_KINDS_DEFAULT = 0xff,
};

/* Parses a comma list of kind names into *KINDS; 0, or -1 naming the bad word in ERR. */
int lp_kinds_parse(const char *list, unsigned *kinds, char *err, size_t errlen);

struct lp_activity_options {
    unsigned kinds;         /* enum lp_kind bits */
    int subscribe;          /* hold CUPTI's subscriber slot (see lp_activity_start) */
    CUpti_CallbackFunc callback; /* the subscriber's callback; callbacks are off until
                                    enabled one by one (NULL: none) */
    size_t buffer_bytes;    /* size of one CUPTI buffer */
    unsigned max_buffers;   /* bound on buffers outstanding */
};

/* Enables activity collection: 0 when at least kernels are being recorded, 1 when
 * another CUPTI client holds CUPTI (warned), -1 on failure. */
int lp_activity_start(const struct lp_activity_options *opt);
/* The subscriber held since lp_activity_start, or NULL. */
CUpti_SubscriberHandle lp_activity_subscriber(void);
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
