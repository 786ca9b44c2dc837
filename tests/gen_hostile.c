/* Traces a few bytes per item that make the analysis keep or compare one thing per item: the
 * report's tests and benchmarks of what such inputs cost (bench/report.sh). Synthetic: no
 * timing in them is a measurement.
 * Usage: gen_hostile OUT.lpt MODE N, MODE one of
 *   shapes    N cuBLAS calls, each of a GEMM shape of its own (m = 1, 2, ...), one kernel each
 *   ops       N ranges, each of an operator of its own ("op<i>"), one kernel each
 *   replays   N CUDA graph replays recorded whole, each of a graph of its own, and N records
 *             of kernel nodes cloned into them
 *   reqid     N requests (NVTX ranges "request r") all of one id, one token mark each
 *   rangename N "decode" ranges of one 64 KiB name, one kernel each */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/trace.h"

struct gen {
    struct lp_trace_writer *w;
    lp_str launch, kernel;
    uint32_t corr;
    int rc;
};

static void add(struct gen *g, const struct lp_record *r)
{
    g->rc |= lp_trace_writer_add(g->w, r);
}

static void marker(struct gen *g, uint64_t t, uint32_t id, uint32_t flags, lp_str name)
{
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = t, .id = id, .flags = flags, .name = name,
                                    .thread = 1};
    add(g, &r);
}

/* a kernel launched at T with its launch call; FLAGS and GRAPH as the kernel record has them */
static void kernel(struct gen *g, uint64_t t, uint32_t flags, uint32_t graph)
{
    struct lp_record r = {.type = LP_REC_API};
    r.u.api = (struct lp_api){.start = t, .end = t + 500, .correlation = ++g->corr, .thread = 1,
                              .domain = LP_API_DOMAIN_RUNTIME, .cbid = 211, .name = g->launch};
    add(g, &r);
    r.type = LP_REC_KERNEL;
    r.u.kernel = (struct lp_kernel){.start = t + 600, .end = t + 1600 + t % 977,
                                    .name = graph ? 0 : g->kernel, .correlation = g->corr,
                                    .stream = 7, .graph_id = graph, .flags = flags,
                                    .grid = {132, 1, 1}, .block = {128, 1, 1}};
    add(g, &r);
}

static void shapes(struct gen *g, long n, uint64_t t)
{
    lp_str api = lp_trace_writer_intern(g->w, "cublasGemmEx");
    for (long i = 0; i < n; i++, t += 10000) {
        struct lp_record r = {.type = LP_REC_GEMM};
        r.u.gemm = (struct lp_gemm){.start = t, .end = t + 3000, .thread = 1, .api = api,
                                    .m = 1 + (uint64_t)i, .n = 4096, .k = 4096, .batch = 1,
                                    .a_type = 14, .b_type = 14, .c_type = 14, .d_type = 14,
                                    .compute_type = 68, .algo = -1, .epilogue = 1};
        add(g, &r);
        kernel(g, t + 1000, 0, 0);
    }
}

static void ops(struct gen *g, long n, uint64_t t)
{
    for (long i = 0; i < n; i++, t += 3000) {
        char name[32];
        snprintf(name, sizeof name, "op%ld", i);
        marker(g, t, (uint32_t)i + 1, LP_MARKER_FLAG_START, lp_trace_writer_intern(g->w, name));
        kernel(g, t + 100, 0, 0);
        marker(g, t + 2500, (uint32_t)i + 1, LP_MARKER_FLAG_END, 0);
    }
}

static void replays(struct gen *g, long n, uint64_t t)
{
    for (long i = 0; i < n; i++) {
        struct lp_record r = {.type = LP_REC_GRAPH};
        r.u.graph = (struct lp_graph){.timestamp = t + 10 * (uint64_t)i, .thread = 1,
                                      .event = LP_GRAPH_EVENT_NODE_CLONED,
                                      .graph_id = 1 + (uint32_t)i, .node_id = 1 + (uint64_t)i,
                                      .original_node_id = 1000000 + (uint64_t)i};
        add(g, &r);
    }
    t += 10 * (uint64_t)n;
    for (long i = 0; i < n; i++, t += 3000)
        kernel(g, t, LP_KERNEL_FLAG_GRAPH | LP_KERNEL_FLAG_REPLAY, 1 + (uint32_t)i);
}

static void reqid(struct gen *g, long n, uint64_t t)
{
    lp_str req = lp_trace_writer_intern(g->w, "request r"),
           tok = lp_trace_writer_intern(g->w, "token r");
    for (long i = 0; i < n; i++, t += 3000) {
        marker(g, t, (uint32_t)i + 1, LP_MARKER_FLAG_START, req);
        marker(g, t + 1000, 0, LP_MARKER_FLAG_INSTANT, tok);
        marker(g, t + 2500, (uint32_t)i + 1, LP_MARKER_FLAG_END, 0);
    }
    kernel(g, t, 0, 0);
}

static void rangename(struct gen *g, long n, uint64_t t)
{
    enum { LEN = 64 << 10 };
    char *name = malloc(LEN + 1);
    if (!name) {
        g->rc = 1;
        return;
    }
    memcpy(name, "decode ", 7);
    memset(name + 7, 'a', LEN - 7);
    name[LEN] = 0;
    lp_str id = lp_trace_writer_intern(g->w, name);
    free(name);
    for (long i = 0; i < n; i++, t += 3000) {
        marker(g, t, (uint32_t)i + 1, LP_MARKER_FLAG_START, id);
        kernel(g, t + 100, 0, 0);
        marker(g, t + 2500, (uint32_t)i + 1, LP_MARKER_FLAG_END, 0);
    }
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(struct gen *, long, uint64_t);
    } modes[] = {{"shapes", shapes}, {"ops", ops}, {"replays", replays}, {"reqid", reqid},
                 {"rangename", rangename}};
    long n = argc == 4 ? atol(argv[3]) : -1;
    size_t m = 0;
    while (argc == 4 && m < sizeof modes / sizeof *modes && strcmp(modes[m].name, argv[2]))
        m++;
    if (n < 0 || m == sizeof modes / sizeof *modes) {
        fprintf(stderr, "usage: gen_hostile OUT.lpt shapes|ops|replays|reqid|rangename N\n");
        return 2;
    }
    struct gen g = {0};
    char err[256];
    if (lp_trace_writer_open(&g.w, argv[1], NULL, err, sizeof err) != LP_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    lp_trace_writer_set_meta(g.w, "command", "tests/gen_hostile (synthetic)");
    lp_trace_writer_set_meta(g.w, "gemm", "on");
    if (modes[m].fn == replays)
        lp_trace_writer_set_meta(g.w, "graphs", "replay");
    lp_trace_writer_write_header(g.w);
    struct lp_record r = {.type = LP_REC_DEVICE};
    r.u.device = (struct lp_device){.name = lp_trace_writer_intern(g.w, "NVIDIA H200"),
                                    .cc_major = 9, .sm_count = 132};
    add(&g, &r);
    g.launch = lp_trace_writer_intern(g.w, "cudaLaunchKernel");
    g.kernel = lp_trace_writer_intern(g.w, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
    modes[m].fn(&g, n, 1000000000ull);
    g.rc |= lp_trace_writer_close(g.w);
    if (g.rc) {
        fprintf(stderr, "gen_hostile: writing %s failed\n", argv[1]);
        return 1;
    }
    return 0;
}
