/* Checks recorded traces of the GPU test programs against what those programs did.
 * Runs on the GPU machine right after recording, and in CI on the committed real
 * fixtures (tests/fixtures/), so the expectations are tested without a GPU too.
 *
 *   check_trace workload TRACE     tests/gpu/workload.cu, checked exactly
 *   check_trace torch TRACE        tests/gpu/torch_nvtx.py
 *   check_trace profiler TRACE     tests/gpu/torch_profiler.py (second CUPTI subscriber)
 *   check_trace cupti-first TRACE  workload --cupti-first: llmprof stood aside, and said so
 *   check_trace killed TRACE NS    a run SIGKILLed at CLOCK_REALTIME NS: what was lost
 *   check_trace llama TRACE        bench/llama_decode.py: prefill and decode ranges
 *   check_trace gemm TRACE         tests/gpu/gemm.cu: every cuBLAS call, shape exactly
 *   check_trace torch-gemm TRACE   tests/gpu/torch_gemm.py: PyTorch's matmuls as cuBLAS saw them
 *   check_trace gemm-fake TRACE    tests/fake/fake_gemm_app.c against the fake cuBLAS (CI)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/analyze.h"

static int failures;

static void expect(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void expect(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s: ", ok ? "ok" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok)
        failures++;
}

static const struct lp_api_rec *api_of(const struct lp_trace *t, uint32_t corr)
{
    for (size_t i = 0; i < t->n_apis; i++)
        if (t->apis[i].correlation == corr)
            return &t->apis[i];
    return NULL;
}

/* Innermost range open on THREAD at TS, or NULL. */
static const struct lp_range *range_at(const struct lp_ranges *r, uint32_t thread, uint64_t ts)
{
    const struct lp_range *best = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].thread == thread && r->v[i].start <= ts && ts < r->v[i].end &&
            (!best || r->v[i].depth > best->depth))
            best = &r->v[i];
    return best;
}

/* Name of the range that was open on the launching thread when KERNEL was launched. */
static const char *launch_range(const struct lp_trace *t, const struct lp_ranges *r,
                                const struct lp_kernel_rec *k)
{
    const struct lp_api_rec *a = api_of(t, k->correlation);
    if (!a)
        return "(no launch record)";
    const struct lp_range *g = range_at(r, lp_trace_api_kind(t, a)->thread, a->start);
    return g ? lp_trace_str(t, g->name) : "(no range)";
}

static const struct lp_range *find_range(const struct lp_trace *t, const struct lp_ranges *r,
                                         const char *name, size_t *count)
{
    const struct lp_range *first = NULL;
    *count = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(lp_trace_str(t, r->v[i].name), name) == 0) {
            if (!first)
                first = &r->v[i];
            (*count)++;
        }
    }
    return first;
}

static void common(const struct lp_trace *t, struct lp_trace_summary *s)
{
    expect(t->complete, "trace is complete (END chunk present)");
    expect(t->n_warnings == 0, "reader reported %zu problems", t->n_warnings);
    expect(s->lost_records == 0, "%" PRIu64 " records lost", s->lost_records);
    expect(t->n_devices >= 1 && t->devices[0].sm_count > 0, "GPU described: %s, %u SMs",
           t->n_devices ? lp_trace_str(t, t->devices[0].name) : "none",
           t->n_devices ? t->devices[0].sm_count : 0);
}

static void check_workload(const struct lp_trace *t, struct lp_trace_summary *s)
{
    const struct lp_ranges *r = &s->ranges;
    common(t, s);
    size_t scale = 0, scale_graph = 0, add = 0, other = 0, other_in_gemms = 0;
    size_t scale_in_kernels = 0, add_in_kernels = 0, graph_kernels_in_graph = 0;
    uint32_t graph_id = 0;
    int shapes_ok = 1;
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        const struct lp_kernel_config *c = lp_trace_kernel_config(t, k);
        const char *name = lp_trace_str(t, c->name), *in = launch_range(t, r, k);
        if (!strcmp(name, "scale_kernel")) {
            scale++;
            shapes_ok &= c->grid[0] == 1024 && c->block[0] == 256 && c->dynamic_smem == 0;
            if (c->flags & LP_KERNEL_FLAG_GRAPH) {
                scale_graph++;
                graph_kernels_in_graph += !strcmp(in, "graph");
                if (!graph_id)
                    graph_id = c->graph_id;
                shapes_ok &= c->graph_id == graph_id;
            } else {
                scale_in_kernels += !strcmp(in, "kernels");
            }
        } else if (!strcmp(name, "add_kernel")) {
            add++;
            add_in_kernels += !strcmp(in, "kernels");
            shapes_ok &= c->grid[0] == 2048 && c->block[0] == 128 && c->dynamic_smem == 512;
        } else {
            other++;
            other_in_gemms += !strcmp(in, "gemms");
        }
    }
    expect(scale == 16 && scale_graph == 6, "scale_kernel: %zu launches (16 expected), %zu "
           "through the graph (6 expected)", scale, scale_graph);
    expect(add == 5, "add_kernel: %zu launches (5 expected)", add);
    expect(shapes_ok, "grids, blocks, dynamic shared memory and graph ids as launched");
    expect(scale_in_kernels == 10 && add_in_kernels == 5,
           "launch attribution: %zu+%zu of 10+5 kernels launched inside 'kernels'",
           scale_in_kernels, add_in_kernels);
    expect(graph_kernels_in_graph == 6, "graph kernels tied to cudaGraphLaunch inside 'graph': "
           "%zu of 6", graph_kernels_in_graph);
    expect(other >= 3 && other_in_gemms == other, "cuBLAS: %zu kernels for 3 GEMMs, %zu of them "
           "launched inside 'gemms'", other, other_in_gemms);
    size_t h2d = 0, d2h = 0;
    for (size_t i = 0; i < t->n_memcpys; i++) {
        h2d += t->memcpys[i].copy_kind == 1 && t->memcpys[i].bytes == (1u << 20);
        d2h += t->memcpys[i].copy_kind == 2 && t->memcpys[i].bytes == (1u << 20);
    }
    expect(t->n_memcpys == 3 && h2d == 2 && d2h == 1,
           "memcpy: %zu records, %zu HtoD and %zu DtoH of 1 MiB (3 = 2 + 1 expected)",
           t->n_memcpys, h2d, d2h);
    size_t mib_sets = 0;
    for (size_t i = 0; i < t->n_memsets; i++)
        mib_sets += t->memsets[i].bytes == (1u << 20);
    expect(mib_sets == 1, "memset: %zu of 1 MiB (1 expected, %zu in all)", mib_sets, t->n_memsets);
    size_t allocs = 0, frees = 0;
    for (size_t i = 0; i < t->n_memory; i++) {
        if (t->memory[i].bytes != (1u << 20))
            continue;
        allocs += t->memory[i].op == LP_MEMORY_OP_ALLOC;
        frees += t->memory[i].op == LP_MEMORY_OP_FREE;
    }
    expect(allocs == 3 && frees == 3, "device memory: %zu allocations and %zu frees of 1 MiB "
           "(3 and 3 expected)", allocs, frees);
    static const char *const children[] = {"setup", "gemms", "kernels", "graph", "domain range"};
    size_t n;
    const struct lp_range *top = find_range(t, r, "workload", &n);
    expect(top && n == 1 && top->depth == 0, "range 'workload' once at top level");
    for (size_t i = 0; i < 5; i++) {
        const struct lp_range *c = find_range(t, r, children[i], &n);
        expect(c && n == 1 && c->depth == 1 && c->parent >= 0 &&
                   !strcmp(lp_trace_str(t, r->v[c->parent].name), "workload"),
               "range '%s' once, nested in 'workload'", children[i]);
    }
    const struct lp_range *dom = find_range(t, r, "domain range", &n);
    expect(dom && !strcmp(lp_trace_str(t, dom->domain), "llmprof-test"),
           "'domain range' carries its domain 'llmprof-test'");
    const struct lp_range *worker = find_range(t, r, "worker", &n);
    expect(worker && n == 1 && !(worker->flags & LP_RANGE_UNCLOSED),
           "start/end range 'worker' closed from another thread");
    expect(r->unclosed == 0 && r->unmatched_ends == 0, "every range closed: %zu unclosed, %zu "
           "unmatched ends", r->unclosed, r->unmatched_ends);
}

static void check_torch(const struct lp_trace *t, struct lp_trace_summary *s)
{
    const struct lp_ranges *r = &s->ranges;
    common(t, s);
    size_t n_outer, n_step = 0, n_aten = 0, matmul_kernels_in_step = 0;
    const struct lp_range *outer = find_range(t, r, "torch_outer", &n_outer);
    for (size_t i = 0; i < r->n; i++) {
        const char *name = lp_trace_str(t, r->v[i].name);
        n_step += !strncmp(name, "step i=", 7);
        n_aten += !strncmp(name, "aten::", 6);
    }
    expect(outer && n_outer == 1, "torch.cuda.nvtx range 'torch_outer' recorded once");
    expect(n_step == 5, "5 'step i=N' ranges nested in it: %zu", n_step);
    expect(n_aten >= 2, "emit_nvtx operator ranges (aten::...): %zu", n_aten);
    for (size_t i = 0; i < t->n_kernels; i++)
        matmul_kernels_in_step += !strncmp(launch_range(t, r, &t->kernels[i]), "step i=", 7);
    expect(matmul_kernels_in_step >= 5, "%zu kernels launched inside the step ranges (>= 5)",
           matmul_kernels_in_step);
}

static void check_profiler(const struct lp_trace *t, struct lp_trace_summary *s)
{
    const struct lp_ranges *r = &s->ranges;
    size_t before = 0, after = 0, n;
    expect(find_range(t, r, "before_profiler", &n) != NULL, "range before torch.profiler recorded");
    expect(find_range(t, r, "after_profiler", &n) != NULL, "range after torch.profiler recorded");
    for (size_t i = 0; i < t->n_kernels; i++) {
        const char *in = launch_range(t, r, &t->kernels[i]);
        before += !strcmp(in, "before_profiler");
        after += !strcmp(in, "after_profiler");
    }
    expect(before >= 10, "kernels before the profiler window: %zu", before);
    expect(after >= 10, "kernels after the profiler window: %zu (recording resumed or continued)",
           after);
    printf("info: %zu loss records; trace %s\n", t->n_losses, t->complete ? "complete" : "incomplete");
    for (size_t i = 0; i < t->n_losses; i++)
        printf("info: loss: %s\n", lp_trace_str(t, t->losses[i].what));
}

static void check_cupti_first(const struct lp_trace *t)
{
    expect(t->complete, "trace is complete");
    expect(t->n_kernels == 0 && t->n_markers == 0, "nothing taken from the other client: %zu "
           "kernels, %zu markers", t->n_kernels, t->n_markers);
    size_t said = 0;
    for (size_t i = 0; i < t->n_losses; i++)
        said += strstr(lp_trace_str(t, t->losses[i].what), "another CUPTI client") != NULL;
    expect(said == 1, "one loss record says another CUPTI client holds CUPTI");
}

static void check_killed(const struct lp_trace *t, struct lp_trace_summary *s, uint64_t kill_ns)
{
    expect(!t->complete, "trace has no END chunk (process was killed)");
    expect(t->n_kernels > 100, "%zu kernels recovered", t->n_kernels);
    uint64_t last = s->last_ns;
    /* both on CLOCK_REALTIME: a record after the kill means the clocks or the time are wrong */
    expect(kill_ns > 0 && last <= kill_ns + 100000000ull,
           "last record (%llu ns) no later than the kill (%llu ns)", (unsigned long long)last,
           (unsigned long long)kill_ns);
    double lost_s = kill_ns > last ? (double)(kill_ns - last) / 1e9 : 0;
    printf("info: last record %.3f s before the kill\n", lost_s);
    expect(lost_s <= 1.5, "at most about the last second lost (%.3f s)", lost_s);
}

static void check_llama(const struct lp_trace *t, struct lp_trace_summary *s)
{
    common(t, s);
    size_t prefill = 0, decode = 0, in_decode = 0;
    for (size_t i = 0; i < s->ranges.n; i++) {
        const char *name = lp_trace_str(t, s->ranges.v[i].name);
        prefill += !strncmp(name, "prefill", 7);
        decode += !strncmp(name, "decode", 6);
    }
    for (size_t i = 0; i < t->n_kernels; i++)
        in_decode += !strncmp(launch_range(t, &s->ranges, &t->kernels[i]), "decode", 6);
    expect(prefill >= 1 && decode >= 1, "%zu prefill and %zu decode ranges", prefill, decode);
    expect(in_decode > t->n_kernels / 2, "%zu of %zu kernels attributed to decode steps",
           in_decode, t->n_kernels);
    expect(s->n_launch_matched * 100 >= t->n_kernels * 99,
           "%zu of %zu kernels tied to their launch call", s->n_launch_matched, t->n_kernels);
    /* recorded at the default 20 Hz */
    expect(t->n_nvml >= 20 && s->n_nvml_devices == 1 && s->nvml_interval_ns > 48000000 &&
               s->nvml_interval_ns < 52000000,
           "NVML: %zu samples of %zu GPU, mean interval %.2f ms (50 expected)", t->n_nvml,
           s->n_nvml_devices, (double)s->nvml_interval_ns / 1e6);
    size_t powered = 0;
    for (size_t i = 0; i < t->n_nvml; i++)
        powered += (t->nvml[i].valid & LP_NVML_FIELD_POWER) && t->nvml[i].power_mw > 50000 &&
                   (t->nvml[i].valid & LP_NVML_FIELD_SM_CLOCK) && t->nvml[i].sm_mhz > 0;
    expect(powered == t->n_nvml, "every NVML sample has power (> 50 W) and SM clock: %zu of %zu",
           powered, t->n_nvml);
}

/* one expected GEMM shape; api NULL: any entry point, trans < 0: either */
struct gemm_want {
    const char *api;
    int ta, tb;
    uint64_t m, n, k, batch;
    uint32_t a, b, d, compute, epilogue, status;
    size_t count;
};

static int gemm_matches(const struct lp_trace *t, const struct lp_gemm *g,
                        const struct gemm_want *w)
{
    return (!w->api || !strcmp(lp_trace_str(t, g->api), w->api)) &&
           (w->ta < 0 || g->transa == (uint32_t)w->ta) &&
           (w->tb < 0 || g->transb == (uint32_t)w->tb) && g->m == w->m && g->n == w->n &&
           g->k == w->k && g->batch == w->batch && g->a_type == w->a && g->b_type == w->b &&
           g->d_type == w->d && g->compute_type == w->compute &&
           (!w->epilogue || g->epilogue == w->epilogue) && g->status == w->status;
}

/* Every wanted shape recorded COUNT times (exactly, or at least when EXACT is 0), each
 * successful call tied to at least one kernel, and the failed ones to none. */
static void check_gemm_list(const struct lp_trace *t, const struct gemm_want *want, size_t n_want,
                            int exact, int with_kernels)
{
    expect(lp_trace_meta(t, "gemm") && !strcmp(lp_trace_meta(t, "gemm"), "on"),
           "header says GEMM capture was on (%s)", lp_trace_meta(t, "gemm"));
    int32_t *kg = NULL;
    expect(lp_gemm_link(t, &kg, NULL) == LP_OK, "GEMM records linked to kernels");
    size_t *kernels = calloc(t->n_gemms + 1, sizeof *kernels);
    for (size_t i = 0; i < t->n_kernels; i++)
        if (kg && kg[i] >= 0)
            kernels[kg[i]]++;
    size_t algo_known = 0;
    for (size_t i = 0; i < t->n_gemms; i++) {
        const struct lp_gemm call = lp_trace_gemm(t, i), *g = &call;
        algo_known += g->algo >= 0;
        printf("  gemm %-28s %c%c m=%-6" PRIu64 " n=%-6" PRIu64 " k=%-6" PRIu64 " batch=%-3" PRIu64
               " %s/%s->%s %s epi=%u status=%u algo=%d tile=%s kernels=%zu thread=%u %.1f us\n",
               lp_trace_str(t, g->api), "NTC"[g->transa % 3], "NTC"[g->transb % 3], g->m, g->n,
               g->k, g->batch, lp_cuda_type_name(g->a_type), lp_cuda_type_name(g->b_type),
               lp_cuda_type_name(g->d_type), lp_compute_type_name(g->compute_type), g->epilogue,
               g->status, g->algo, lp_trace_str(t, g->tile), kernels[i], g->thread,
               (double)(g->end - g->start) / 1e3);
    }
    size_t matched = 0;
    for (size_t w = 0; w < n_want; w++) {
        size_t seen = 0, linked = 0;
        for (size_t i = 0; i < t->n_gemms; i++) {
            const struct lp_gemm g = lp_trace_gemm(t, i);
            if (gemm_matches(t, &g, &want[w])) {
                seen++;
                linked += want[w].status ? kernels[i] == 0 : kernels[i] > 0;
            }
        }
        matched += seen;
        expect(exact ? seen == want[w].count : seen >= want[w].count,
               "%s m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64 " batch=%" PRIu64 ": %zu calls (want %s%zu)",
               want[w].api ? want[w].api : "any", want[w].m, want[w].n, want[w].k, want[w].batch,
               seen, exact ? "" : ">= ", want[w].count);
        if (with_kernels)
            expect(linked == seen, "  %zu of %zu tied to %s", linked, seen,
                   want[w].status ? "no kernel (the call failed)" : "their kernels");
    }
    if (exact)
        expect(matched == t->n_gemms, "no other GEMM records (%zu recorded, %zu expected)",
               t->n_gemms, matched);
    printf("  algorithm known for %zu of %zu records\n", algo_known, t->n_gemms);
    free(kernels);
    free(kg);
}

static void check_two_threads(const struct lp_trace *t, const struct gemm_want *w);

static void check_gemm(const struct lp_trace *t)
{
    static const struct gemm_want want[] = {
        {"cublasGemmEx", 0, 0, 4096, 512, 4096, 1, 14, 14, 14, 68, 0, 0, 4},
        {"cublasGemmEx", 1, 0, 11008, 1, 4096, 1, 2, 2, 2, 68, 0, 0, 3},
        {"cublasGemmEx", 0, 1, 1000, 333, 777, 1, 0, 0, 0, 77, 0, 0, 2},
        {"cublasSgemm_v2", 0, 0, 512, 512, 512, 1, 0, 0, 0, 68, 0, 0, 2},
        {"cublasGemmStridedBatchedEx", 1, 0, 128, 512, 64, 32, 14, 14, 14, 68, 0, 0, 2},
        {"cublasHgemm", 0, 0, 256, 128, 64, 1, 2, 2, 2, 64, 0, 0, 1},
        {"cublasGemmEx", 0, 0, 0, 8, 8, 1, 14, 14, 14, 68, 0, 7, 1},
        {"cublasLtMatmul", 1, 0, 2048, 256, 1024, 1, 14, 14, 14, 68, 4, 0, 2},
        {"cublasLtMatmul", 1, 0, 4096, 512, 4096, 1, 28, 28, 14, 68, 0, 0, 2},
    };
    check_gemm_list(t, want, sizeof want / sizeof *want, 1, 1);
    check_two_threads(t, &want[0]);
}

static void check_gemm_fake(const struct lp_trace *t)
{
    static const struct gemm_want want[] = {
        {"cublasGemmEx", 0, 0, 4096, 512, 4096, 1, 14, 14, 14, 68, 0, 0, 4},
        {"cublasSgemm_v2", 1, 0, 1000, 7, 333, 1, 0, 0, 0, 77, 0, 0, 2},
        {"cublasGemmStridedBatchedEx", 1, 0, 128, 512, 64, 32, 14, 14, 14, 68, 0, 0, 1},
        {"cublasGemmEx", 0, 0, 0, 8, 8, 1, 14, 14, 14, 68, 0, 7, 1},
    };
    check_gemm_list(t, want, sizeof want / sizeof *want, 1, 0);
    check_two_threads(t, &want[0]);
    for (size_t i = 0; i < t->n_gemms; i++) {
        const struct lp_gemm g = lp_trace_gemm(t, i), g0 = lp_trace_gemm(t, 0);
        const struct lp_gemm prev = lp_trace_gemm(t, i ? i - 1 : 0);
        if (g.end < g.start || (i && g.thread == g0.thread && g.start < prev.end)) {
            expect(0, "call %zu: times out of order", i);
            break;
        }
    }
}

/* the 4096 x 512 shape ran on two threads: each call is kept with its own thread */
static void check_two_threads(const struct lp_trace *t, const struct gemm_want *w)
{
    uint32_t th[2] = {0};
    size_t n_th = 0;
    for (size_t i = 0; i < t->n_gemms; i++) {
        const struct lp_gemm g = lp_trace_gemm(t, i);
        if (gemm_matches(t, &g, w) && (n_th == 0 || g.thread != th[0]) && n_th < 2)
            th[n_th++] = g.thread;
    }
    expect(n_th == 2, "the 4096x512x4096 GEMM seen on 2 threads");
}

static void check_torch_gemm(const struct lp_trace *t)
{
    static const struct gemm_want want[] = {
        {NULL, -1, -1, 1000, 7, 4096, 1, 14, 14, 14, 68, 0, 0, 3},
        {NULL, -1, -1, 11008, 512, 4096, 1, 14, 14, 14, 68, 0, 0, 3},
        {NULL, -1, -1, 256, 128, 64, 32, 14, 14, 14, 68, 0, 0, 3},
        {NULL, -1, -1, 200, 300, 500, 1, 0, 0, 0, 77, 0, 0, 2},
    };
    check_gemm_list(t, want, sizeof want / sizeof *want, 0, 1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: check_trace workload|torch|profiler|cupti-first|killed|llama|gemm|torch-gemm "
                        "TRACE [KILL_NS]\n");
        return 2;
    }
    struct lp_trace *t;
    char err[512];
    if (lp_trace_read(&t, argv[2], err, sizeof err) != LP_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    struct lp_trace_summary s;
    if (lp_trace_summarize(t, &s) != LP_OK)
        return 2;
    printf("== %s %s: %zu kernels, %zu ranges\n", argv[1], argv[2], t->n_kernels, s.ranges.n);
    if (!strcmp(argv[1], "workload"))
        check_workload(t, &s);
    else if (!strcmp(argv[1], "torch"))
        check_torch(t, &s);
    else if (!strcmp(argv[1], "profiler"))
        check_profiler(t, &s);
    else if (!strcmp(argv[1], "cupti-first"))
        check_cupti_first(t);
    else if (!strcmp(argv[1], "killed") && argc == 4)
        check_killed(t, &s, strtoull(argv[3], NULL, 10));
    else if (!strcmp(argv[1], "llama"))
        check_llama(t, &s);
    else if (!strcmp(argv[1], "gemm"))
        check_gemm(t);
    else if (!strcmp(argv[1], "torch-gemm"))
        check_torch_gemm(t);
    else if (!strcmp(argv[1], "gemm-fake"))
        check_gemm_fake(t);
    else {
        fprintf(stderr, "unknown check %s\n", argv[1]);
        return 2;
    }
    lp_trace_summary_free(&s);
    lp_trace_free(t);
    printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
