/* Launch records: the runtime and driver calls that launch work, copy, set or wait (one
 * list, by name), recorded as lp_api records so that analysis ties each kernel to the
 * thread and host time of its launch. Recorded from CUPTI callbacks, which can be switched
 * on and off at any time (capture windows); CUPTI's API activity records, which cannot
 * (enabled mid-run, CUDA 13.0 delivered none), serve only without a subscriber. */
#ifndef LP_COLLECT_LAUNCH_H
#define LP_COLLECT_LAUNCH_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

/* Picks the calls and starts recording them: through SUBSCRIBER's callbacks (NULL, or
 * LLMPROF_LAUNCH=activity: API activity records). The callbacks stay enabled all run (off
 * only after a finalize: lp_launch_new_epoch); WINDOWED: recording starts off
 * (lp_launch_set_recording). NOTIFY wakes the flusher when records pile up. Warns and
 * returns -1 when no call could be enabled. */
int lp_launch_start(CUpti_SubscriberHandle subscriber, int windowed, void (*notify)(void));
/* Capture windows switch recording; the callbacks are never disabled by it (CUPTI loses a
 * call in flight then and corrupts its bookkeeping), only enabled again after a finalize.
 * Off: calls that entered before still record their exit, calls entered after do not.
 * Returns 0. */
int lp_launch_set_recording(int on);
/* The runtime call this thread is in (if any) is not recorded: a window closed inside it, by
 * its own driver call (a graph launch beginning the next step), so its work is after the
 * close although it entered before. */
void lp_launch_drop_current(void);
/* Another part needs the callbacks of DOMAIN's CBID all run: the switch-off after a
 * finalize (lp_launch_new_epoch) leaves them on. */
void lp_launch_keep_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
/* The subscriber's callback (runtime and driver domains). */
void lp_launch_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);
/* Whether work of CORRELATION was launched inside a capture window (always 1 unless
 * windowed through callbacks); counts the others for the END header. */
int lp_launch_in_window(uint32_t correlation);
/* Windowed through callbacks: the contexts (at most MAX) launched into since the callbacks
 * were last switched on, into OUT; returns how many. */
size_t lp_launch_contexts(CUcontext *out, size_t max);
/* CUPTI starts its correlation ids again after a finalize (capture windows, window.c), so
 * llmprof adds a base to them, raised past every id seen at each finalize: launch records
 * and activity records (activity.c, by the base when their buffer completed) keep unique,
 * growing ids. 0 until the first finalize. */
uint32_t lp_launch_correlation_base(void);
/* Between a finalize and the new subscription: the base goes past every id seen, and
 * outside a window the callbacks are left off in the new subscription. */
void lp_launch_new_epoch(void);
/* 1 when launch calls are recorded through callbacks (every launch's correlation id is
 * then seen, which lp_launch_new_epoch needs). */
int lp_launch_via_callbacks(void);
/* 1 when DOMAIN's CBID is a traced call (its entry's time is in its correlation data). */
int lp_launch_traced(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
/* How many of the program's threads made a traced call while its callbacks were enabled. */
unsigned lp_launch_threads(void);
/* Calls made by the calling thread (llmprof's own) are not recorded. */
void lp_launch_ignore_thread(void);
/* The name of a call ("cudaLaunchKernel"), or NULL. DOMAIN: enum lp_api_domain. */
const char *lp_launch_api_name(uint32_t domain, uint32_t cbid);
/* Moves queued records to the sink (the flusher). */
void lp_launch_drain(void);
/* At exit: drains and writes the counts to the END header. */
void lp_launch_stop(void);
/* In a forked child: records nothing more. */
void lp_launch_forget(void);

#endif
