/* NVTX ranges as CUPTI's NVTX callbacks see them, for the parts of the collector that act
 * when a range opens or closes (counters cut segments, capture windows open and close). One
 * parser and one per-thread stack of open ranges serve them all: each client says at a push
 * whether it wants to hear of that range's pop. */
#ifndef LP_COLLECT_NVTX_H
#define LP_COLLECT_NVTX_H

#include <cupti.h>
#include <stdint.h>

struct lp_nvtx_client {
    /* A range NAME (NULL when not ASCII) was pushed on THREAD at NOW: 1 to be told of its
     * pop, else 0. */
    int (*push)(const char *name, uint32_t thread, uint64_t now);
    /* The range this client asked about was popped. */
    void (*pop)(uint32_t thread, uint64_t now);
};

/* Adds CLIENT (at most 4; it must live until exit) and enables the NVTX range callbacks on
 * SUBSCRIBER. 0, or -1 when the callbacks could not be enabled. */
int lp_nvtx_add_client(CUpti_SubscriberHandle subscriber, const struct lp_nvtx_client *client);
/* Enables the range callbacks on SUBSCRIBER without a client, for lp_nvtx_open_ranges. 0, or
 * -1 when they could not be enabled. */
int lp_nvtx_watch(CUpti_SubscriberHandle subscriber);
/* NVTX ranges open now on every thread (pushed and not popped, started and not ended), as
 * seen since the callbacks went on; -1 when they are not watched. CUPTI is never finalized
 * with a range open: its end would lose its start. */
int64_t lp_nvtx_open_ranges(void);
/* The subscriber's callback (NVTX domain only). */
void lp_nvtx_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);

#endif
