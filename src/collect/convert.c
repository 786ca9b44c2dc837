/* CUPTI activity record -> llmprof trace record (see convert.h). Only fields present in
 * every CUPTI 12/13 layout of a kind are read unconditionally; later ones need the
 * run-time CUPTI to have the layout this file was compiled against. */
#include "convert.h"

#include <string.h>

static lp_str intern(const struct lp_convert_ctx *ctx, const char *s)
{
    return s && *s ? ctx->intern(ctx->user, s) : 0;
}

/* Kernel, memcpy and memset records share these fields, under the same names in CUPTI's
 * structs and in llmprof's. */
#define COPY_GPU_OP(o, a)                 \
    do {                                  \
        (o)->start = (a)->start;          \
        (o)->end = (a)->end;              \
        (o)->correlation = (a)->correlationId; \
        (o)->device = (a)->deviceId;      \
        (o)->context = (a)->contextId;    \
        (o)->stream = (a)->streamId;      \
    } while (0)

static int same_layout(const struct lp_convert_ctx *ctx)
{
    return ctx->cupti_version / 10000 == CUPTI_API_VERSION / 10000;
}

static int kernel_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                      struct lp_record *out)
{
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
    struct lp_kernel *o = &out->u.kernel;
    out->type = LP_REC_KERNEL;
    COPY_GPU_OP(o, k);
    o->name = intern(ctx, k->name);
    o->grid[0] = k->gridX;
    o->grid[1] = k->gridY;
    o->grid[2] = k->gridZ;
    o->block[0] = k->blockX;
    o->block[1] = k->blockY;
    o->block[2] = k->blockZ;
    o->registers = k->registersPerThread;
    o->static_smem = (uint32_t)k->staticSharedMemory;
    o->dynamic_smem = (uint32_t)k->dynamicSharedMemory;
    o->local_mem_per_thread = k->localMemoryPerThread;
    if (same_layout(ctx)) {
        o->graph_id = k->graphId;
        o->graph_node_id = k->graphNodeId;
        if (k->graphId)
            o->flags |= LP_KERNEL_FLAG_GRAPH;
    }
    return 1;
}

/* One replay of a CUDA graph as a whole (CUPTI_ACTIVITY_KIND_GRAPH_TRACE): a kernel record
 * flagged REPLAY, so that the analysis places it as it places a replayed kernel. Start and
 * end both 0 mean CUPTI could not time it: the caller counts those. */
static int replay_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                      struct lp_record *out)
{
    const CUpti_ActivityGraphTrace2 *g = (const CUpti_ActivityGraphTrace2 *)a;
    struct lp_kernel *o = &out->u.kernel;
    out->type = LP_REC_KERNEL;
    COPY_GPU_OP(o, g);
    /* INT_MAX: the graph starts with host work; its GPU is then where it ends */
    if (g->deviceId == INT32_MAX)
        o->device = same_layout(ctx) ? g->endDeviceId : 0;
    if (g->contextId == INT32_MAX)
        o->context = same_layout(ctx) ? g->endContextId : 0;
    o->graph_id = g->graphId;
    o->flags = LP_KERNEL_FLAG_GRAPH | LP_KERNEL_FLAG_REPLAY;
    return 1;
}

static int memcpy_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                      struct lp_record *out)
{
    const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
    struct lp_memcpy *o = &out->u.memcpy;
    out->type = LP_REC_MEMCPY;
    COPY_GPU_OP(o, m);
    o->bytes = m->bytes;
    o->copy_kind = m->copyKind;
    o->src_kind = m->srcKind;
    o->dst_kind = m->dstKind;
    if (same_layout(ctx))
        o->graph_id = m->graphId;
    return 1;
}

static int memset_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                      struct lp_record *out)
{
    const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
    struct lp_memset *o = &out->u.memset;
    out->type = LP_REC_MEMSET;
    COPY_GPU_OP(o, m);
    o->bytes = m->bytes;
    o->value = m->value;
    o->memory_kind = m->memoryKind;
    if (same_layout(ctx))
        o->graph_id = m->graphId;
    return 1;
}

/* Allocations and releases only. */
static int memory_rec(const CUpti_Activity *a, struct lp_record *out)
{
    const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)a;
    struct lp_memory *o = &out->u.memory;
    if (m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
        m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        return 0;
    out->type = LP_REC_MEMORY;
    o->timestamp = m->timestamp;
    o->address = m->address;
    o->bytes = m->bytes;
    o->correlation = m->correlationId;
    o->device = m->deviceId;
    o->context = m->contextId;
    o->stream = m->streamId;
    o->op = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                ? LP_MEMORY_OP_ALLOC : LP_MEMORY_OP_FREE;
    o->memory_kind = m->memoryKind;
    return 1;
}

static int marker_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                      struct lp_record *out)
{
    const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)a;
    struct lp_marker *o = &out->u.marker;
    out->type = LP_REC_MARKER;
    o->timestamp = m->timestamp;
    o->id = m->id;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)
        o->flags |= LP_MARKER_FLAG_INSTANT;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START)
        o->flags |= LP_MARKER_FLAG_START;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END)
        o->flags |= LP_MARKER_FLAG_END;
    if (!(o->flags & LP_MARKER_FLAG_END))
        o->name = intern(ctx, m->name);
    o->domain = intern(ctx, m->domain);
    if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
        m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
        o->thread = m->objectId.pt.threadId;
    return 1;
}

/* Runtime and driver calls. */
static int api_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                   struct lp_record *out)
{
    const CUpti_ActivityAPI *api = (const CUpti_ActivityAPI *)a;
    struct lp_api *o = &out->u.api;
    out->type = LP_REC_API;
    o->start = api->start;
    o->end = api->end;
    o->correlation = api->correlationId;
    o->thread = api->threadId;
    o->domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? LP_API_DOMAIN_RUNTIME
                                                       : LP_API_DOMAIN_DRIVER;
    o->cbid = api->cbid;
    o->name = ctx->api_name ? intern(ctx, ctx->api_name(ctx->user, o->domain, o->cbid)) : 0;
    o->status = api->returnValue;
    return 1;
}

static int device_rec(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                      struct lp_record *out)
{
    const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)a;
    struct lp_device *o = &out->u.device;
    out->type = LP_REC_DEVICE;
    o->id = d->id;
    o->name = intern(ctx, d->name);
    memcpy(o->uuid, d->uuid.bytes, 16);
    o->cc_major = d->computeCapabilityMajor;
    o->cc_minor = d->computeCapabilityMinor;
    o->sm_count = d->numMultiprocessors;
    o->mem_bytes = d->globalMemorySize;
    o->mem_bandwidth_kbps = d->globalMemoryBandwidth;
    o->core_clock_khz = d->coreClockRate;
    return 1;
}

static int overhead_rec(const CUpti_Activity *a, struct lp_record *out)
{
    const CUpti_ActivityOverhead3 *v = (const CUpti_ActivityOverhead3 *)a;
    struct lp_overhead *o = &out->u.overhead;
    out->type = LP_REC_OVERHEAD;
    o->start = v->start;
    o->end = v->end;
    o->kind = v->overheadKind;
    if (v->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
        o->thread = v->objectId.pt.threadId;
    return 1;
}

/* One converter per kind; each fills OUT and returns 1, or 0 for a record llmprof skips. */
int lp_convert_activity(const CUpti_Activity *a, const struct lp_convert_ctx *ctx,
                        struct lp_record *out)
{
    memset(out, 0, sizeof *out);
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return kernel_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return replay_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return memcpy_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_MEMSET: return memset_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return memory_rec(a, out);
    case CUPTI_ACTIVITY_KIND_MARKER: return marker_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return api_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_DEVICE: return device_rec(a, ctx, out);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return overhead_rec(a, out);
    default: return 0;
    }
}
