/* The Chrome trace event format (JSON) that ui.perfetto.dev and chrome://tracing open:
 * one process for the host with NVTX ranges, CUDA calls and CUPTI's overhead records per thread, one per GPU with its
 * kernels, copies and sets per stream, NVML samples as counter tracks, and a flow from each
 * launching call to its work. Timestamps are microseconds from the first record. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"
#include "report_internal.h"

#define GPU_PID_BASE 1000000
#define ITER_TID 999999 /* the GPU's track of a serving loop's iterations (streams are small) */

/* A JSON string: runs that need no escape are written whole (an export writes millions). */
static void str(FILE *f, const char *s)
{
    static const char special[] = "\"\\\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d"
                                  "\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b"
                                  "\x1c\x1d\x1e\x1f";
    fputc('"', f);
    for (;;) {
        size_t run = strcspn(s, special);
        fwrite(s, 1, run, f);
        s += run;
        if (!*s)
            break;
        unsigned char c = (unsigned char)*s++;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else
            fprintf(f, "\\u%04x", c);
    }
    fputc('"', f);
}

struct out {
    FILE *f;
    uint64_t t0, from, to;        /* events overlapping [from, to] (trace clock) are written */
    int first;
};

/* T0 + MS milliseconds, at most UINT64_MAX: a window past the clock's end holds nothing
 * rather than wrapping round to its start */
static uint64_t ms_after(uint64_t t0, uint64_t ms)
{
    uint64_t ns, t;
    if (__builtin_mul_overflow(ms, 1000000, &ns) || __builtin_add_overflow(t0, ns, &t))
        return UINT64_MAX;
    return t;
}

static int in(const struct out *o, uint64_t a, uint64_t b)
{
    return b >= o->from && a <= o->to;
}

static void sep(struct out *o)
{
    fputs(o->first ? "\n" : ",\n", o->f);
    o->first = 0;
}

static double us(const struct out *o, uint64_t ns)
{
    return ns >= o->t0 ? (double)(ns - o->t0) / 1e3 : 0;
}

static void slice(struct out *o, const char *cat, const char *name, long pid, unsigned tid,
                  uint64_t start, uint64_t end)
{
    sep(o);
    fprintf(o->f, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cat);
    str(o->f, name);
    if (start < o->t0) /* shown from the first record, as it starts (CUPTI's own records) */
        start = o->t0;
    fprintf(o->f, ",\"pid\":%ld,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f", pid, tid, us(o, start),
            end > start ? (double)(end - start) / 1e3 : 0.0);
}

static void flow(struct out *o, char ph, uint32_t id, long pid, unsigned tid, uint64_t ts)
{
    sep(o);
    fprintf(o->f, "{\"ph\":\"%c\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%u,\"pid\":%ld,"
                  "\"tid\":%u,\"ts\":%.3f%s}",
            ph, id, pid, tid, us(o, ts), ph == 'f' ? ",\"bp\":\"e\"" : "");
}

static void counter(struct out *o, long pid, const char *name, const char *unit, uint64_t ts,
                    double v)
{
    if (!isfinite(v))
        return;
    sep(o);
    fprintf(o->f, "{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%ld,\"ts\":%.3f,\"args\":{\"%s\":%.3f}}",
            name, pid, us(o, ts), unit, v);
}

static void meta_name(struct out *o, const char *what, long pid, long tid, const char *name)
{
    sep(o);
    fprintf(o->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%ld,\"tid\":%ld,\"args\":{\"name\":",
            what, pid, tid);
    str(o->f, name);
    fputs("}}", o->f);
}

/* NVTX ranges, the request convention's requests and marks: the host's threads */
static void host_nvtx(struct out *o, const struct lp_run *r, long host)
{
    const struct lp_trace *t = r->trace;
    FILE *f = o->f;
    char cut[LP_NAME_CUT + 4]; /* names as each event repeats them: a kilobyte at most */
    for (size_t i = 0; i < r->ranges.n; i++) {
        const struct lp_range *g = &r->ranges.v[i];
        if (!in(o, g->start, g->end))
            continue;
        slice(o, "nvtx", lp_fmt_cut(lp_trace_str(t, g->name), &cut), host, g->thread, g->start,
              g->end);
        fputs("}", f);
    }
    /* requests of the request convention overlap: async slices, a track each */
    for (size_t i = 0; i < r->ranges.n_req; i++) {
        const struct lp_range *g = &r->ranges.req[i];
        if (!in(o, g->start, g->end))
            continue;
        for (int end = 0; end < 2; end++) {
            sep(o);
            fprintf(f, "{\"ph\":\"%c\",\"cat\":\"request\",\"name\":", end ? 'e' : 'b');
            str(f, lp_fmt_cut(lp_trace_str(t, g->name), &cut));
            fprintf(f, ",\"id\":%zu,\"pid\":%ld,\"tid\":%u,\"ts\":%.3f}", i + 1, host,
                    g->thread, us(o, end ? g->end : g->start));
        }
    }
    /* NVTX marks (the convention's tokens among them): instants on their thread */
    for (size_t i = 0; i < t->n_markers; i++) {
        const struct lp_marker *m = &t->markers[i];
        if (!(m->flags & LP_MARKER_FLAG_INSTANT) || !in(o, m->timestamp, m->timestamp))
            continue;
        sep(o);
        fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":", f);
        str(f, lp_fmt_cut(lp_trace_str(t, m->name), &cut));
        fprintf(f, ",\"pid\":%ld,\"tid\":%u,\"ts\":%.3f}", host, m->thread,
                us(o, m->timestamp));
    }
}

/* a serving loop's iterations: one track on the GPU they ran on */
static void iterations(struct out *o, const struct lp_run *r)
{
    FILE *f = o->f;
    const struct lp_serving *sv = &r->serving;
    long gpu = GPU_PID_BASE + (long)sv->device;
    if (sv->n_iters)
        meta_name(o, "thread_name", gpu, ITER_TID, "serving iterations");
    for (size_t i = 0; i < sv->n_iters; i++) {
        const struct lp_iteration *x = &sv->iters[i];
        uint64_t a = x->start ? x->start : x->end;
        if (!in(o, a, x->end))
            continue;
        slice(o, "iteration", lp_text_iter_kind_key(x->kind), gpu, ITER_TID, a, x->end);
        fprintf(f, ",\"args\":{\"iteration\":%zu,\"tokens\":%lld,\"sampled\":%lld,"
                   "\"decode\":%lld,\"prefill_tokens\":%lld,\"bucket\":%lld,"
                   "\"period_ns\":%llu,\"decode_source\":\"%s\"}}",
                i, (long long)x->tokens, (long long)x->sampled, (long long)x->decode,
                (long long)x->prefill_tokens, (long long)x->bucket,
                (unsigned long long)x->period_ns, lp_text_iter_source_key(x->source));
    }
}

/* the recorded CUDA calls (each launch the start of a flow) and CUPTI's overhead records */
static void host_calls(struct out *o, const struct lp_run *r, long host)
{
    const struct lp_trace *t = r->trace;
    FILE *f = o->f;
    for (size_t i = 0; i < t->n_apis; i++) {
        const struct lp_api_rec *a = &t->apis[i];
        const struct lp_api_kind *ak = lp_trace_api_kind(t, a);
        uint64_t end = lp_trace_api_end(t, a);
        if (!in(o, a->start, end))
            continue;
        char cut[LP_NAME_CUT + 4];
        slice(o, "cuda_api", lp_fmt_cut(lp_trace_str(t, ak->name), &cut), host, ak->thread,
              a->start, end);
        fprintf(f, ",\"args\":{\"correlation\":%u,\"status\":%u}}", a->correlation, ak->status);
        const char *n = lp_trace_str(t, ak->name);
        if (strstr(n, "aunch") || strstr(n, "emcpy") || strstr(n, "emset"))
            flow(o, 's', a->correlation, host, ak->thread, a->start);
    }
    /* CUPTI's overhead records on the thread they stalled (llmprof's and CUPTI's threads too) */
    for (size_t i = 0; i < t->n_overheads; i++) {
        const struct lp_overhead *v = &t->overheads[i];
        if (!in(o, v->start, v->end))
            continue;
        enum lp_overhead_kind k = lp_overhead_kind_of(v->kind);
        slice(o, "cupti_overhead", lp_text_overhead_kind(k), host, v->thread, v->start, v->end);
        fprintf(f, ",\"args\":{\"class\":\"%s\"}}",
                lp_text_overhead_class_key(lp_overhead_kind_class(k)));
    }
}

/* kernels, copies and sets on their GPU's streams, each the end of its launch's flow */
static void gpu_work(struct out *o, const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    FILE *f = o->f;
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        const struct lp_kernel_config *c = lp_trace_kernel_config(t, k);
        uint32_t g = lp_run_kernel_group(r, i);
        if (!in(o, k->start, lp_trace_kernel_end(t, k)))
            continue;
        long pid = GPU_PID_BASE + c->device;
        slice(o, "kernel", r->short_names[g], pid, c->stream, k->start, lp_trace_kernel_end(t, k));
        /* the full name is in kernels.csv: here it would double the file */
        fprintf(f, ",\"args\":{\"category\":\"%s\",\"correlation\":%u,\"grid\":[%d,%d,%d],"
                   "\"block\":[%d,%d,%d],\"registers per thread\":%u,\"shared memory\":%llu,"
                   "\"graph\":%u",
                lp_kcat_name(r->cats[g]), k->correlation, c->grid[0], c->grid[1], c->grid[2],
                c->block[0], c->block[1], c->block[2], c->registers,
                (unsigned long long)c->static_smem + c->dynamic_smem, c->graph_id);
        int32_t cr = r->kernel_capture_range ? r->kernel_capture_range[i] : -1;
        if (cr >= 0) { /* a replay: where its node was captured */
            fprintf(f, ",\"captured in\":");
            char cut[LP_NAME_CUT + 4];
            str(f, lp_fmt_cut(lp_trace_str(t, r->ranges.v[cr].name), &cut));
        }
        fprintf(f, "}}");
        flow(o, 'f', k->correlation, pid, c->stream, k->start);
    }
    for (size_t i = 0; i < t->n_memcpys; i++) {
        const struct lp_memcpy *m = &t->memcpys[i];
        if (!in(o, m->start, m->end))
            continue;
        long pid = GPU_PID_BASE + m->device;
        slice(o, "memcpy", r->names[lp_copy_direction(m->copy_kind)], pid, m->stream, m->start,
              m->end);
        fprintf(f, ",\"args\":{\"bytes\":%llu,\"correlation\":%u}}",
                (unsigned long long)m->bytes, m->correlation);
        flow(o, 'f', m->correlation, pid, m->stream, m->start);
    }
    for (size_t i = 0; i < t->n_memsets; i++) {
        const struct lp_memset *m = &t->memsets[i];
        if (!in(o, m->start, m->end))
            continue;
        long pid = GPU_PID_BASE + m->device;
        slice(o, "memset", "[CUDA memset]", pid, m->stream, m->start, m->end);
        fprintf(f, ",\"args\":{\"bytes\":%llu,\"correlation\":%u}}",
                (unsigned long long)m->bytes, m->correlation);
        flow(o, 'f', m->correlation, pid, m->stream, m->start);
    }
}

/* NVML samples: counter tracks per GPU */
static void nvml_counters(struct out *o, const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    for (size_t i = 0; i < t->n_nvml; i++) {
        const struct lp_nvml_sample *s = &t->nvml[i];
        if (!in(o, s->timestamp, s->timestamp))
            continue;
        long pid = GPU_PID_BASE + s->device;
        if (s->valid & LP_NVML_FIELD_POWER)
            counter(o, pid, "power", "W", s->timestamp, s->power_mw / 1000.0);
        if (s->valid & LP_NVML_FIELD_SM_CLOCK)
            counter(o, pid, "SM clock", "MHz", s->timestamp, s->sm_mhz);
        if (s->valid & LP_NVML_FIELD_MEM_CLOCK)
            counter(o, pid, "memory clock", "MHz", s->timestamp, s->mem_mhz);
        if (s->valid & LP_NVML_FIELD_UTIL)
            counter(o, pid, "GPU utilisation (NVML)", "%", s->timestamp, s->util_gpu);
        if (s->valid & LP_NVML_FIELD_TEMP)
            counter(o, pid, "temperature", "C", s->timestamp, s->temp_c);
        if (s->valid & LP_NVML_FIELD_MEM_USED)
            counter(o, pid, "memory used", "GiB", s->timestamp,
                    (double)s->mem_used / 1073741824.0);
    }
}

int lp_report_perfetto(FILE *f, const struct lp_run *r, uint64_t from_ms, uint64_t to_ms)
{
    const struct lp_trace *t = r->trace;
    const char *pid_s = lp_trace_meta(t, "pid");
    long host = pid_s ? strtol(pid_s, NULL, 10) : 1;
    struct out o = {.f = f, .t0 = r->t0_ns, .first = 1, .from = ms_after(r->t0_ns, from_ms),
                    .to = to_ms ? ms_after(r->t0_ns, to_ms) : UINT64_MAX};
    char buf[160];
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    snprintf(buf, sizeof buf, "host (pid %ld)", host);
    meta_name(&o, "process_name", host, 0, buf);
    for (size_t i = 0; i < t->n_devices; i++) {
        snprintf(buf, sizeof buf, "GPU %u: %s", t->devices[i].id,
                 lp_trace_str(t, t->devices[i].name));
        meta_name(&o, "process_name", GPU_PID_BASE + t->devices[i].id, 0, buf);
    }
    host_nvtx(&o, r, host);
    iterations(&o, r);
    host_calls(&o, r, host);
    gpu_work(&o, r);
    nvml_counters(&o, r);
    fputs("\n]}\n", f);
    return ferror(f) ? -1 : 0;
}
