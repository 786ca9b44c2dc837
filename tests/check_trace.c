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

static const struct lp_api *api_of(const struct lp_trace *t, uint32_t corr)
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
                                const struct lp_kernel *k)
{
    const struct lp_api *a = api_of(t, k->correlation);
    if (!a)
        return "(no launch record)";
    const struct lp_range *g = range_at(r, a->thread, a->start);
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
        const struct lp_kernel *k = &t->kernels[i];
        const char *name = lp_trace_str(t, k->name), *in = launch_range(t, r, k);
        if (!strcmp(name, "scale_kernel")) {
            scale++;
            shapes_ok &= k->grid[0] == 1024 && k->block[0] == 256 && k->dynamic_smem == 0;
            if (k->flags & LP_KERNEL_FLAG_GRAPH) {
                scale_graph++;
                graph_kernels_in_graph += !strcmp(in, "graph");
                if (!graph_id)
                    graph_id = k->graph_id;
                shapes_ok &= k->graph_id == graph_id;
            } else {
                scale_in_kernels += !strcmp(in, "kernels");
            }
        } else if (!strcmp(name, "add_kernel")) {
            add++;
            add_in_kernels += !strcmp(in, "kernels");
            shapes_ok &= k->grid[0] == 2048 && k->block[0] == 128 && k->dynamic_smem == 512;
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
        powered += (t->nvml[i].valid & LP_NVML_POWER) && t->nvml[i].power_mw > 50000 &&
                   (t->nvml[i].valid & LP_NVML_SM_CLOCK) && t->nvml[i].sm_mhz > 0;
    expect(powered == t->n_nvml, "every NVML sample has power (> 50 W) and SM clock: %zu of %zu",
           powered, t->n_nvml);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: check_trace workload|torch|profiler|cupti-first|killed|llama TRACE [KILL_NS]\n");
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
    else {
        fprintf(stderr, "unknown check %s\n", argv[1]);
        return 2;
    }
    lp_trace_summary_free(&s);
    lp_trace_free(t);
    printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
