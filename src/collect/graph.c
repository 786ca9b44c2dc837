/* CUDA graph provenance (see graph.h). CUPTI calls the resource callbacks synchronously on
 * the thread that makes, clones or updates a node: a node made during stream capture gets
 * the time and thread of the launch inside the library call (a cuBLAS GEMM) and the NVTX
 * ranges open there. A replayed kernel carries the id of its executable graph's node, which
 * the clone and update records map back to the captured node (src/analyze/graphs.c). Only
 * the fields CUPTI documents for each event are read. A replay raises no callback: the
 * cost is paid at capture and instantiation. */
#include "graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "clock.h"
#include "config.h"
#include "cupti_api.h"
#include "log.h"
#include "queue.h"
#include "sink.h"

enum { QUEUE_CAP = 65536 };

static struct lp_queue queue = LP_QUEUE_INIT(struct lp_graph, QUEUE_CAP);
static int enabled; /* read in every callback: atomic */

static const struct {
    CUpti_CallbackIdResource cbid;
    enum lp_graph_event event;
} events[] = {
    {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, LP_GRAPH_EVENT_NODE_CREATED},
    {CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, LP_GRAPH_EVENT_NODE_CLONED},
    {CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED, LP_GRAPH_EVENT_NODE_UPDATED},
    {CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS, LP_GRAPH_EVENT_NODE_SET_PARAMS},
    {CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, LP_GRAPH_EVENT_EXEC_CREATED},
};

static uint64_t node_id(CUgraphNode n)
{
    uint64_t id = 0;
    if (n && lp_cupti.GetGraphNodeId(n, &id) != CUPTI_SUCCESS)
        id = 0;
    return id;
}

static uint32_t graph_id(CUgraph g)
{
    uint32_t id = 0;
    if (g && lp_cupti.GetGraphId(g, &id) != CUPTI_SUCCESS)
        id = 0;
    return id;
}

static uint32_t exec_id(CUgraphExec e)
{
    uint32_t id = 0;
    if (e && lp_cupti.GetGraphExecId(e, &id) != CUPTI_SUCCESS)
        id = 0;
    return id;
}

void CUPTIAPI lp_graph_callback(void *userdata, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || !data ||
        !__atomic_load_n(&enabled, __ATOMIC_RELAXED))
        return;
    uint32_t event = 0;
    for (size_t i = 0; i < sizeof events / sizeof *events; i++)
        if ((CUpti_CallbackId)events[i].cbid == cbid)
            event = events[i].event;
    const CUpti_GraphData *gd = ((const CUpti_ResourceData *)data)->resourceDescriptor;
    if (!event || !gd)
        return;
    struct lp_graph g = {.timestamp = lp_clock_ns(),
                         .thread = (uint32_t)pthread_self(), /* as lp_gemm.thread */
                         .event = event};
    switch (event) {
    case LP_GRAPH_EVENT_NODE_CREATED:
        g.graph_id = graph_id(gd->graph);
        g.node_id = node_id(gd->node);
        g.node_type = (uint32_t)gd->nodeType;
        break;
    case LP_GRAPH_EVENT_NODE_CLONED:
        g.graph_id = graph_id(gd->graph);
        g.original_graph_id = graph_id(gd->originalGraph);
        g.node_id = node_id(gd->node);
        g.original_node_id = node_id(gd->originalNode);
        g.node_type = (uint32_t)gd->nodeType;
        break;
    case LP_GRAPH_EVENT_NODE_UPDATED:
        g.node_id = node_id(gd->node);
        g.original_node_id = node_id(gd->originalNode);
        g.exec_id = exec_id(gd->graphExec);
        g.node_type = (uint32_t)gd->nodeType;
        break;
    case LP_GRAPH_EVENT_NODE_SET_PARAMS:
        g.node_id = node_id(gd->node);
        g.exec_id = exec_id(gd->graphExec);
        g.node_type = (uint32_t)gd->nodeType;
        break;
    case LP_GRAPH_EVENT_EXEC_CREATED:
        g.graph_id = graph_id(gd->graph);
        g.exec_id = exec_id(gd->graphExec);
        break;
    }
    lp_queue_push(&queue, &g);
}

void lp_graph_start(CUpti_SubscriberHandle subscriber, void (*notify)(void))
{
    if (!lp_config_get()->graph_nodes) {
        lp_sink_set_meta("graph_nodes", "off (LLMPROF_GRAPH_NODES=0)");
        return;
    }
    if (!subscriber) {
        lp_sink_set_meta("graph_nodes", "off: llmprof holds no CUPTI subscriber "
                                        "(LLMPROF_SUBSCRIBE=0, or cuptiSubscribe failed)");
        return;
    }
    if (!lp_cupti.EnableCallback || !lp_cupti.GetGraphNodeId || !lp_cupti.GetGraphId ||
        !lp_cupti.GetGraphExecId) {
        lp_sink_set_meta("graph_nodes", "off: this CUPTI lacks the graph id functions");
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0,
                        "this CUPTI (%u) cannot name graph nodes: kernels "
                        "replayed from CUDA graphs keep no GEMM shape or capture range",
                        lp_cupti.version);
        return;
    }
    queue.notify = notify;
    __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
    unsigned on = 0;
    for (size_t i = 0; i < sizeof events / sizeof *events; i++)
        on += lp_attach_callback(1, CUPTI_CB_DOMAIN_RESOURCE, events[i].cbid) == CUPTI_SUCCESS;
    lp_sink_set_meta("graph_nodes", on == sizeof events / sizeof *events ? "on" : "partly on");
}

void lp_graph_drain(void)
{
    size_t n;
    uint64_t lost;
    struct lp_graph *batch = lp_queue_take(&queue, &n, &lost);
    if (lost)
        lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, lost,
                        "graph node records dropped: the queue of %d "
                        "was full between two flushes; replays of those nodes keep no GEMM "
                        "shape or capture range", QUEUE_CAP);
    if (!batch)
        return;
    lp_sink_lock();
    for (size_t i = 0; i < n; i++)
        lp_sink_add(&(struct lp_record){.type = LP_REC_GRAPH, .u.graph = batch[i]});
    lp_sink_unlock();
    lp_queue_release(&queue, batch);
}

void lp_graph_stop(void)
{
    __atomic_store_n(&enabled, 0, __ATOMIC_RELEASE);
    lp_graph_drain();
    uint64_t rec, drop;
    lp_queue_counts(&queue, &rec, &drop);
    lp_sink_set_meta_u64("graph_records", rec);
    lp_sink_set_meta_u64("graph_records_dropped", drop);
}

void lp_graph_forget(void) { __atomic_store_n(&enabled, 0, __ATOMIC_RELAXED); }
