/* CUDA graph provenance: one lp_graph record each time a graph node is made, cloned or
 * changed, from CUPTI's resource callbacks (the subscriber activity.c holds). Records wait
 * in a bounded queue that the flusher drains. */
#ifndef LP_COLLECT_GRAPH_H
#define LP_COLLECT_GRAPH_H

#include <cupti.h>

/* The subscriber's callback (lp_activity_options.callback). */
void CUPTIAPI lp_graph_callback(void *userdata, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid, const void *data);
/* Enables the graph callbacks on SUBSCRIBER (NULL: none held, then nothing is recorded and
 * the trace says why). NOTIFY wakes the flusher when the queue fills up. Acts on
 * LLMPROF_GRAPH_NODES (0: off; config.h). */
void lp_graph_start(CUpti_SubscriberHandle subscriber, void (*notify)(void));
/* Moves queued records to the sink; the flusher's thread. */
void lp_graph_drain(void);
/* Stops recording, drains, and writes the counters to the END header. */
void lp_graph_stop(void);
/* In a forked child: the parent's queue is not ours. */
void lp_graph_forget(void);

#endif
