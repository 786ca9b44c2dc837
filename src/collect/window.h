/* Capture windows (record --capture): the program, its NVTX ranges or a signal switch
 * recording on and off. Outside the windows the per-launch activity (kernels, copies,
 * allocations), the launch calls' callbacks and GEMM capture are off; NVTX, NVML and device
 * facts stay on. Each window becomes one lp_window record. */
#ifndef LP_COLLECT_WINDOW_H
#define LP_COLLECT_WINDOW_H

#include <cupti.h>
#include "llmprof/capture.h"

/* LLMPROF_CAPTURE (config.h), parsed into *SPEC; a bad value is warned about and read as
 * all. */
void lp_window_mode(struct lp_capture_spec *spec);
/* The subscriber's callback (profiler API calls). */
void CUPTIAPI lp_window_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data);
/* What a window switches, NULL-terminated: each takes 1 (on) or 0 (off); the first is
 * kernel activity, whose failure to switch on keeps the window shut. */
typedef int (*lp_window_switch)(int on);
/* Starts watching what SPEC names on SUBSCRIBER, with recording started switched off, and
 * sets the header's "capture". Without a subscriber (or the signal handler) windows cannot
 * open: then everything is switched on and recorded, and the trace says so. */
void lp_window_start(CUpti_SubscriberHandle subscriber, const struct lp_capture_spec *spec,
                     const char *text, const lp_window_switch *switches);
/* Whether CUPTI may be finalized and set up again between windows (before lp_window_start),
 * LLMPROF_FINALIZE_AFTER_MS (config.h) after a window closed: the caller knows that nothing a
 * finalize ends is in use (hardware counters) and that every launch's correlation id is seen
 * (lp_launch_new_epoch). */
void lp_window_allow_renew(int allowed);
/* The subscriber's callback, last: where a pending finalize happens (a traced runtime
 * call's exit with no NVTX range open). */
void lp_window_renew_point(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);
/* 1 while a finalize is pending: it happens at the next such exit. */
int lp_window_renew_armed(void);
/* 1 while a closed window's kernel activity waits for a program's call to go off. */
int lp_window_disable_ready(void);
/* At exit: closes an open window and writes the count to the END header. */
void lp_window_stop(void);
/* In a forked child: opens no window, and gives SIGUSR1 back its default. */
void lp_window_forget(void);

#endif
