/* CUPTI activity collection: which kinds are enabled, the bounded pool of activity
 * buffers, and the conversion of completed buffers into the sink. */
#ifndef LP_COLLECT_ACTIVITY_H
#define LP_COLLECT_ACTIVITY_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

/* What to record: the one list of activity kinds. X(ID, NAME, ALIAS, CUPTI_KIND, LIGHT):
 * NAME (and ALIAS, or NULL) is what LLMPROF_KINDS takes, CUPTI_KIND the activity enabled
 * for it (INVALID: none; API is launch.c's launch records), LIGHT 1 when
 * --light keeps it (no per-launch record: CUPTI's kernel tracing costs about a microsecond
 * per launch, the marker, device and overhead kinds nothing measurable). A kind's bit is its
 * place in the list and the trace header's "kinds" holds those bits: add kinds at the end
 * only. The default records every kind. */
#define LP_KIND_LIST(X)                                                                     \
    X(KERNEL, "kernel", NULL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0)                     \
    X(MARKER, "marker", "nvtx", CUPTI_ACTIVITY_KIND_MARKER, 1) /* NVTX */                   \
    X(DEVICE, "device", NULL, CUPTI_ACTIVITY_KIND_DEVICE, 1)                                \
    X(OVERHEAD, "overhead", NULL, CUPTI_ACTIVITY_KIND_OVERHEAD, 1)                          \
    X(MEMCPY, "memcpy", NULL, CUPTI_ACTIVITY_KIND_MEMCPY, 0)                                \
    X(MEMSET, "memset", NULL, CUPTI_ACTIVITY_KIND_MEMSET, 0)                                \
    X(MEMORY, "memory", NULL, CUPTI_ACTIVITY_KIND_MEMORY2, 0) /* allocations, frees */      \
    X(API, "api", NULL, CUPTI_ACTIVITY_KIND_INVALID, 0) /* launch, copy, set, sync calls */

/* A kind's place in LP_KIND_LIST. */
enum lp_kind_index {
#define LP_KIND_INDEX(id, name, alias, cupti, light) LP_KIND_INDEX_##id,
    LP_KIND_LIST(LP_KIND_INDEX)
#undef LP_KIND_INDEX
    LP_KIND_COUNT
};

/* Bit sets of kinds (LLMPROF_KINDS, lp_activity_options.kinds). */
enum lp_kind {
#define LP_KIND_BIT(id, name, alias, cupti, light) LP_KIND_##id = 1 << LP_KIND_INDEX_##id,
    LP_KIND_LIST(LP_KIND_BIT)
#undef LP_KIND_BIT
#define LP_KIND_LIGHT(id, name, alias, cupti, light) | ((light) ? LP_KIND_##id : 0)
    LP_KINDS_LIGHT = 0 LP_KIND_LIST(LP_KIND_LIGHT),
#undef LP_KIND_LIGHT
    LP_KINDS_DEFAULT = (1 << LP_KIND_COUNT) - 1,
};

/* The LLMPROF_KINDS name of the kind at INDEX (enum lp_kind_index), or NULL. */
const char *lp_kind_name(unsigned index);
/* Parses a comma list of kind names into *KINDS; 0, or -1 naming the bad word in ERR. */
int lp_kinds_parse(const char *list, unsigned *kinds, char *err, size_t errlen);

struct lp_activity_options {
    unsigned kinds;         /* enum lp_kind bits */
    int subscribe;          /* hold CUPTI's subscriber slot (see lp_activity_start) */
    CUpti_CallbackFunc callback; /* the subscriber's callback; callbacks are off until
                                    enabled one by one (NULL: none) */
    size_t buffer_bytes;    /* size of one CUPTI buffer */
    unsigned max_buffers;   /* bound on buffers outstanding */
    int windowed;           /* the per-launch kinds (those --light leaves out) start off:
                               lp_activity_set_recording switches them (capture windows) */
    /* CUPTI's device buffers for kernel, copy and set records, set before any context
       exists (0: CUPTI's default): the size of one, how many a context may have, and how
       many a context makes at its creation (fewer than the limit) */
    size_t device_buffer_bytes, device_buffer_limit, device_buffers;
    int graph_replays;      /* with kernels: one record per CUDA graph replay instead of
                               one per node (CUPTI_ACTIVITY_KIND_GRAPH_TRACE), on from the
                               program's first graph instantiation to its end (see
                               lp_activity_start) */
};

/* Enables activity collection: 0 when at least kernels are being recorded, 1 when
 * another CUPTI client holds CUPTI (warned), -1 on failure. */
int lp_activity_start(const struct lp_activity_options *opt);
/* Switches the per-launch activity kinds (kernels, copies, sets, allocations) on or off,
 * for capture windows: 0, or -1 when kernel activity could not be enabled. Called with one
 * caller at a time. */
int lp_activity_set_recording(int on);
/* To be called by the subscriber's callback (lp_activity_options.callback): the entry of a
 * graph instantiation call turns graph-level records on, once. */
void lp_activity_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);
/* 1 when graph replays are recorded whole (graph_replays was asked for and CUPTI has not
 * refused it). */
int lp_activity_graph_replays(void);
/* 1 once the program may have made a CUDA graph: an instantiation call was entered, a graph
 * launch seen after a finalize, or they could not be watched. CUPTI is then never finalized
 * (capture windows): graph-level records must stay on once a graph exists. */
int lp_activity_graphs_seen(void);
/* A graph launch was seen (window.c, with --finalize): once CUPTI was finalized, a graph its
 * instantiation unseen may exist, so replays go node by node and CUPTI is not finalized
 * again (lp_activity_graphs_seen). */
void lp_activity_graph_launched(void);
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
