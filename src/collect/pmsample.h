/* The GPU's throughput counters over time (record --counters): CUPTI's PM sampling reads a
 * one-pass triage set (tensor pipe, DRAM, SM issue, compute engine, idle SMs, L2, clock) at
 * a fixed GPU-time interval into a hardware buffer; llmprof's own thread decodes it every
 * few tens of milliseconds into PM sample records. One device: the first one a context is
 * made on. Fails open like the counters: one warning and a loss record, the run goes on. */
#ifndef LP_COLLECT_PMSAMPLE_H
#define LP_COLLECT_PMSAMPLE_H

#include <cupti.h>

/* Acts on LLMPROF_PM_SAMPLING (interval in microseconds; unset or 0: off) and
 * LLMPROF_PM_BUFFER_MB (config.h), and subscribes to context creation on SUBSCRIBER:
 * sampling starts on the device of the first context. */
void lp_pmsample_start(CUpti_SubscriberHandle subscriber);
/* The subscriber's callback for the resource domain (inject.c dispatches). */
void lp_pmsample_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);
/* Stops sampling, decodes what is left and says the totals; at exit. */
void lp_pmsample_stop(void);
/* In a forked child: the sampler and its thread are the parent's. */
void lp_pmsample_forget(void);

#endif
