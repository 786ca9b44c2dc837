/* CUPTI as llmprof set it up, kept in one place so that it can be finalized and set up again
 * as it was: the subscriber, the callbacks and activity kinds enabled, the activity
 * attributes and the buffer callbacks. Kernel activity once enabled keeps costing every
 * launch about half of what it costs on, after it is disabled, until CUPTI is finalized
 * (docs/benchmarks.md): capture windows finalize between windows (window.c). Every part of
 * the collector enables its callbacks and kinds through here. */
#ifndef LP_COLLECT_ATTACH_H
#define LP_COLLECT_ATTACH_H

#include <cupti.h>
#include <stddef.h>

/* Takes CUPTI's subscriber slot with CALLBACK (again, after a finalize). */
CUptiResult lp_attach_subscribe(CUpti_CallbackFunc callback);
/* The subscriber held, or NULL. */
CUpti_SubscriberHandle lp_attach_subscriber(void);
/* cuptiEnableCallback on the subscriber held (NOT_INITIALIZED without one), remembered. */
CUptiResult lp_attach_callback(uint32_t on, CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
/* cuptiActivityEnable (ON) or cuptiActivityDisable of KIND, remembered. */
CUptiResult lp_attach_kind(int on, CUpti_ActivityKind kind);
/* cuptiActivitySetAttribute with a value of SIZE bytes (at most 8), remembered. */
CUptiResult lp_attach_attribute(CUpti_ActivityAttribute attr, size_t size, const void *value);
/* cuptiActivityRegisterCallbacks, remembered. */
CUptiResult lp_attach_buffers(CUpti_BuffersCallbackRequestFunc requested,
                              CUpti_BuffersCallbackCompleteFunc completed);

struct lp_attach_renewal {
    /* Checked once the renewal is under way (lp_attach_renewing is 1): 0 stops it, with
     * nothing changed. Parts that must not overlap a finalize set their own flag first and
     * then wait while lp_attach_renewing, so one of the two sees the other. */
    int (*still_allowed)(void);
    /* Called between the finalize and the new subscription, when no callback or buffer of
     * either comes. */
    void (*between)(void);
};

/* 1 when this CUPTI can be finalized and a subscriber is held. */
int lp_attach_can_renew(void);
/* Flushes CUPTI's buffers and finalizes it: to be called at the exit callback of a program's
 * CUDA call (CUPTI's advice), with kernel activity off and the GPU's work of the closed
 * window done. 0 when finalized (lp_attach_renewing stays 1 until lp_attach_reattach); 1
 * when STILL_ALLOWED stopped it; -1 with WHY when CUPTI refused (it is then as it was). */
int lp_attach_detach(const struct lp_attach_renewal *r, char *why, size_t len);
/* After lp_attach_detach returned 0, once its callback has returned: subscribes again and
 * sets everything up as remembered. 0, or -1 with WHY (the subscriber is then lost, and
 * llmprof records nothing more). */
int lp_attach_reattach(char *why, size_t len);
/* 1 from a detach until its reattach. */
int lp_attach_renewing(void);
/* How many times CUPTI was finalized: while it was, the program's calls went unseen. */
unsigned lp_attach_finalized(void);

#endif
