/* Record converters fed CUPTI's own structs, built from the real headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "collect/convert.h"

/* A tiny intern table standing in for the sink. */
static const char *interned[16];
static unsigned n_interned;

static lp_str intern(void *user, const char *s)
{
    (void)user;
    for (unsigned i = 0; i < n_interned; i++)
        if (!strcmp(interned[i], s))
            return i + 1;
    interned[n_interned++] = s;
    return n_interned;
}

static const char *api_name(void *user, uint32_t domain, uint32_t cbid)
{
    (void)user;
    return domain == LP_API_DOMAIN_RUNTIME && cbid == 211 ? "cudaLaunchKernel" : NULL;
}

static struct lp_convert_ctx ctx = {intern, api_name, NULL, CUPTI_API_VERSION};

static const char *str(lp_str id) { return id ? interned[id - 1] : ""; }

static void test_kernel(void **state)
{
    (void)state;
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000;
    k.end = 2500;
    k.name = "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_NTN";
    k.correlationId = 77;
    k.deviceId = 1;
    k.contextId = 2;
    k.streamId = 13;
    k.gridX = 132;
    k.gridY = 2;
    k.gridZ = 1;
    k.blockX = 384;
    k.blockY = 1;
    k.blockZ = 1;
    k.registersPerThread = 168;
    k.staticSharedMemory = 0;
    k.dynamicSharedMemory = 232448;
    k.localMemoryPerThread = 8;
    k.graphId = 5;
    k.graphNodeId = 0x1234567890ull;
    struct lp_record r;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&k, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_KERNEL);
    const struct lp_kernel *o = &r.u.kernel;
    assert_int_equal(o->start, 1000);
    assert_int_equal(o->end, 2500);
    assert_string_equal(str(o->name), k.name);
    assert_int_equal(o->correlation, 77);
    assert_int_equal(o->device, 1);
    assert_int_equal(o->context, 2);
    assert_int_equal(o->stream, 13);
    assert_int_equal(o->grid[0], 132);
    assert_int_equal(o->grid[1], 2);
    assert_int_equal(o->block[0], 384);
    assert_int_equal(o->registers, 168);
    assert_int_equal(o->dynamic_smem, 232448);
    assert_int_equal(o->local_mem_per_thread, 8);
    assert_int_equal(o->graph_id, 5);
    assert_int_equal(o->graph_node_id, 0x1234567890ull);
    assert_true(o->flags & LP_KERNEL_FLAG_GRAPH);

    /* another CUPTI major version: fields past the common prefix are not trusted */
    struct lp_convert_ctx old = ctx;
    old.cupti_version = 120800;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&k, &old, &r), 1);
    assert_int_equal(r.u.kernel.graph_id, 0);
    assert_int_equal(r.u.kernel.flags, 0);
    assert_int_equal(r.u.kernel.registers, 168);
}

static void test_memcpy_memset(void **state)
{
    (void)state;
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1u << 20;
    m.start = 10;
    m.end = 20;
    m.deviceId = 0;
    m.streamId = 7;
    m.correlationId = 9;
    struct lp_record r;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_MEMCPY);
    assert_int_equal(r.u.memcpy.copy_kind, 1);
    assert_int_equal(r.u.memcpy.src_kind, 2);
    assert_int_equal(r.u.memcpy.dst_kind, 3);
    assert_int_equal(r.u.memcpy.bytes, 1u << 20);
    assert_int_equal(r.u.memcpy.stream, 7);
    assert_int_equal(r.u.memcpy.correlation, 9);

    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = 0xab;
    s.bytes = 4096;
    s.start = 5;
    s.end = 6;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    s.correlationId = 3;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&s, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_MEMSET);
    assert_int_equal(r.u.memset.value, 0xab);
    assert_int_equal(r.u.memset.bytes, 4096);
    assert_int_equal(r.u.memset.memory_kind, 3);
}

static void test_memory(void **state)
{
    (void)state;
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.address = 0x7f0000000000ull;
    m.bytes = 2u << 20;
    m.timestamp = 99;
    m.deviceId = 3;
    struct lp_record r;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_MEMORY);
    assert_int_equal(r.u.memory.op, LP_MEMORY_OP_ALLOC);
    assert_int_equal(r.u.memory.address, 0x7f0000000000ull);
    assert_int_equal(r.u.memory.device, 3);
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 1);
    assert_int_equal(r.u.memory.op, LP_MEMORY_OP_FREE);
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 0);
}

static void test_markers(void **state)
{
    (void)state;
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
    m.timestamp = 1234;
    m.id = 42;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = 100;
    m.objectId.pt.threadId = 101;
    m.name = "prefill tokens=512";
    m.domain = "llmprof-test";
    struct lp_record r;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_MARKER);
    assert_int_equal(r.u.marker.flags, LP_MARKER_FLAG_START);
    assert_int_equal(r.u.marker.id, 42);
    assert_int_equal(r.u.marker.thread, 101);
    assert_string_equal(str(r.u.marker.name), "prefill tokens=512");
    assert_string_equal(str(r.u.marker.domain), "llmprof-test");
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
    m.name = "ignored on end markers";
    m.domain = NULL;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 1);
    assert_int_equal(r.u.marker.flags, LP_MARKER_FLAG_END);
    assert_int_equal(r.u.marker.name, 0);
    assert_int_equal(r.u.marker.domain, 0);
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
    m.name = "tick";
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&m, &ctx, &r), 1);
    assert_int_equal(r.u.marker.flags, LP_MARKER_FLAG_INSTANT);
}

static void test_api_device_overhead(void **state)
{
    (void)state;
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = 100;
    a.end = 180;
    a.threadId = 555;
    a.correlationId = 77;
    a.returnValue = 0;
    struct lp_record r;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&a, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_API);
    assert_int_equal(r.u.api.domain, LP_API_DOMAIN_RUNTIME);
    assert_int_equal(r.u.api.thread, 555);
    assert_int_equal(r.u.api.correlation, 77);
    assert_string_equal(str(r.u.api.name), "cudaLaunchKernel");
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = 9999;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&a, &ctx, &r), 1);
    assert_int_equal(r.u.api.domain, LP_API_DOMAIN_DRIVER);
    assert_int_equal(r.u.api.name, 0);

    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 0;
    d.name = "NVIDIA H200";
    d.numMultiprocessors = 132;
    d.computeCapabilityMajor = 9;
    d.globalMemorySize = 150ull << 30;
    d.globalMemoryBandwidth = 4800000000ull;
    d.coreClockRate = 1980000;
    d.uuid.bytes[0] = 0x5a;
    d.uuid.bytes[15] = 0x7e;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&d, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_DEVICE);
    assert_string_equal(str(r.u.device.name), "NVIDIA H200");
    assert_int_equal(r.u.device.sm_count, 132);
    assert_int_equal(r.u.device.cc_major, 9);
    assert_int_equal(r.u.device.mem_bytes, 150ull << 30);
    assert_int_equal(r.u.device.uuid[0], 0x5a);
    assert_int_equal(r.u.device.uuid[15], 0x7e);

    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.threadId = 9;
    o.start = 1;
    o.end = 4;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&o, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_OVERHEAD);
    assert_int_equal(r.u.overhead.kind, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
    assert_int_equal(r.u.overhead.thread, 9);
    assert_int_equal(r.u.overhead.end, 4);
}

/* A graph-level record becomes a kernel record flagged as a whole replay. */
static void test_graph_replay(void **state)
{
    (void)state;
    CUpti_ActivityGraphTrace2 g;
    memset(&g, 0, sizeof g);
    g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    g.correlationId = 77;
    g.start = 1000;
    g.end = 2500;
    g.deviceId = 1;
    g.contextId = 3;
    g.streamId = 13;
    g.graphId = 2;
    struct lp_record r;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&g, &ctx, &r), 1);
    assert_int_equal(r.type, LP_REC_KERNEL);
    const struct lp_kernel *k = &r.u.kernel;
    assert_int_equal(k->start, 1000);
    assert_int_equal(k->end, 2500);
    assert_int_equal(k->correlation, 77);
    assert_int_equal(k->device, 1);
    assert_int_equal(k->context, 3);
    assert_int_equal(k->stream, 13);
    assert_int_equal(k->graph_id, 2);
    assert_int_equal(k->graph_node_id, 0);
    assert_int_equal(k->name, 0);
    assert_int_equal(k->flags, LP_KERNEL_FLAG_GRAPH | LP_KERNEL_FLAG_REPLAY);
    /* a graph that starts with host work: the GPU and context where it ends */
    g.deviceId = INT32_MAX;
    g.contextId = INT32_MAX;
    g.endDeviceId = 4;
    g.endContextId = 9;
    assert_int_equal(lp_convert_activity((CUpti_Activity *)&g, &ctx, &r), 1);
    assert_int_equal(r.u.kernel.device, 4);
    assert_int_equal(r.u.kernel.context, 9);
}

static void test_unknown_kinds_are_skipped(void **state)
{
    (void)state;
    CUpti_Activity a = {.kind = CUPTI_ACTIVITY_KIND_CONTEXT};
    struct lp_record r;
    assert_int_equal(lp_convert_activity(&a, &ctx, &r), 0);
    a.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    assert_int_equal(lp_convert_activity(&a, &ctx, &r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel),
        cmocka_unit_test(test_memcpy_memset),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_markers),
        cmocka_unit_test(test_api_device_overhead),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_unknown_kinds_are_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
