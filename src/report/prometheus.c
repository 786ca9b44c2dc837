/* llmprof watch's /metrics in Prometheus' text exposition format (version 0.0.4): one list
 * of metric families, each with its help, type and the function that writes its series for
 * one trace. Counters only grow while a trace is followed (Prometheus takes rates of them);
 * the window gauges are left out while their window has nothing to say. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"

/* Label values escaped as the format asks: backslash, double quote and newline; bytes that are
 * not UTF-8 (a file's name) as '?', or Prometheus refuses the whole scrape. */
static void put_value(FILE *f, const char *value)
{
    char buf[512];
    size_t n = strlen(value);
    char *copy = n < sizeof buf ? buf : malloc(n + 1);
    if (!copy)
        return;
    memcpy(copy, value, n + 1);
    lp_utf8_repair(copy, n);
    for (const char *s = copy; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        fputc(*s, f);
    }
    if (copy != buf)
        free(copy);
}

/* {trace="..",pid="..",rank=".."[,KEY="VALUE"]...}: the pairs of K whose key is not NULL */
static void labels_n(FILE *f, const struct lp_prom_source *s, const char *const *k,
                     const char *const *v, int n)
{
    fputs("{trace=\"", f);
    put_value(f, s->trace ? s->trace : "");
    fputc('"', f);
    if (s->pid) {
        fputs(",pid=\"", f);
        put_value(f, s->pid);
        fputc('"', f);
    }
    if (s->rank) {
        fputs(",rank=\"", f);
        put_value(f, s->rank);
        fputc('"', f);
    }
    for (int i = 0; i < n; i++)
        if (k[i]) {
            fprintf(f, ",%s=\"", k[i]);
            put_value(f, v[i]);
            fputc('"', f);
        }
    fputc('}', f);
}

static void labels(FILE *f, const struct lp_prom_source *s, const char *k1, const char *v1,
                   const char *k2, const char *v2)
{
    const char *k[2] = {k1, k2}, *v[2] = {v1, v2};
    labels_n(f, s, k, v, 2);
}

static void put_u64(FILE *f, const char *name, const struct lp_prom_source *s, const char *k,
                    const char *v, uint64_t x)
{
    fputs(name, f);
    labels(f, s, k, v, NULL, NULL);
    fprintf(f, " %" PRIu64 "\n", x);
}

static void put_double(FILE *f, const char *name, const struct lp_prom_source *s, const char *k,
                       const char *v, double x)
{
    fputs(name, f);
    labels(f, s, k, v, NULL, NULL);
    fprintf(f, " %.17g\n", x);
}

static void put_hist(FILE *f, const char *name, const struct lp_prom_source *s, const char *k,
                     const char *v, const struct lp_live_hist *h)
{
    uint64_t cum = 0;
    char le[32];
    for (size_t i = 0; i < LP_LIVE_BUCKETS; i++) {
        cum += h->bucket[i];
        snprintf(le, sizeof le, "%g", lp_live_bucket_le[i]);
        fprintf(f, "%s_bucket", name);
        labels(f, s, k, v, "le", le);
        fprintf(f, " %" PRIu64 "\n", cum);
    }
    fprintf(f, "%s_bucket", name);
    labels(f, s, k, v, "le", "+Inf");
    fprintf(f, " %" PRIu64 "\n%s_sum", h->count, name);
    labels(f, s, k, v, NULL, NULL);
    fprintf(f, " %.9f\n%s_count", (double)h->sum_ns * 1e-9, name);
    labels(f, s, k, v, NULL, NULL);
    fprintf(f, " %" PRIu64 "\n", h->count);
}

static const char *const kind_names[LP_REC_TYPE_COUNT] = {
    [LP_REC_KERNEL] = "kernel",     [LP_REC_MEMCPY] = "memcpy",   [LP_REC_MEMSET] = "memset",
    [LP_REC_MEMORY] = "memory",     [LP_REC_MARKER] = "nvtx",     [LP_REC_API] = "api",
    [LP_REC_NVML] = "nvml",         [LP_REC_DEVICE] = "device",   [LP_REC_OVERHEAD] = "overhead",
    [LP_REC_LOSS] = "loss",         [LP_REC_GEMM] = "gemm",       [LP_REC_GRAPH] = "graph",
    [LP_REC_COUNTERS] = "counters", [LP_REC_PM_SAMPLE] = "pm",    [LP_REC_WINDOW] = "window",
};

static const char *const loss_names[] = {
    [LP_LOSS_SOURCE_CUPTI_DROPPED] = "cupti_dropped",
    [LP_LOSS_SOURCE_BUFFER_DENIED] = "buffer_denied",
    [LP_LOSS_SOURCE_COLLECTOR] = "collector",
    [LP_LOSS_SOURCE_WRITE] = "write",
    [LP_LOSS_SOURCE_NVML] = "nvml",
    [LP_LOSS_SOURCE_GEMM] = "gemm",
    [LP_LOSS_SOURCE_COUNTERS] = "counters",
    [LP_LOSS_SOURCE_PM] = "pm",
    [LP_LOSS_SOURCE_LAUNCH] = "launch",
};

#define FN(name) static void name(FILE *f, const char *m, const struct lp_prom_source *s)

FN(trace_info)
{
    fputs(m, f);
    fputs("{trace=\"", f);
    put_value(f, s->trace ? s->trace : "");
    fputs("\",pid=\"", f);
    put_value(f, s->pid ? s->pid : "");
    fputs("\",rank=\"", f);
    put_value(f, s->rank ? s->rank : "");
    fputs("\",mode=\"", f);
    put_value(f, s->mode ? s->mode : "");
    fputs("\"} 1\n", f);
}
FN(complete) { put_u64(f, m, s, NULL, NULL, (uint64_t)s->follow.complete); }
FN(bytes) { put_u64(f, m, s, NULL, NULL, s->follow.bytes); }
FN(chunks) { put_u64(f, m, s, NULL, NULL, s->follow.chunks); }
FN(bad_chunks) { put_u64(f, m, s, NULL, NULL, s->follow.bad_chunks); }
FN(dropped_bytes) { put_u64(f, m, s, NULL, NULL, s->follow.dropped_bytes); }
FN(missing) { put_u64(f, m, s, NULL, NULL, s->follow.missing); }
FN(restarts) { put_u64(f, m, s, NULL, NULL, s->follow.restarts); }
FN(repeated) { put_u64(f, m, s, NULL, NULL, s->follow.repeated); }
FN(over_budget) { put_u64(f, m, s, NULL, NULL, s->follow.over_budget); }
FN(unknown_names) { put_u64(f, m, s, NULL, NULL, s->follow.unknown_strings); }
FN(implausible) { put_u64(f, m, s, NULL, NULL, s->facts.implausible); }
FN(threads_dropped) { put_u64(f, m, s, NULL, NULL, s->facts.threads_dropped); }
FN(latest)
{
    if (s->facts.last_ts)
        put_double(f, m, s, NULL, NULL, (double)s->facts.last_ts * 1e-9);
}
FN(records)
{
    for (size_t i = 0; i < LP_REC_TYPE_COUNT; i++)
        if (kind_names[i] && s->facts.records[i])
            put_u64(f, m, s, "kind", kind_names[i], s->facts.records[i]);
}
FN(lost)
{
    for (size_t i = 0; i < sizeof loss_names / sizeof *loss_names; i++)
        if (loss_names[i] && s->facts.lost[i])
            put_u64(f, m, s, "source", loss_names[i], s->facts.lost[i]);
}
FN(lost_whole) { put_u64(f, m, s, NULL, NULL, s->facts.lost_unknown); }
FN(stage_wall)
{
    for (size_t i = 0; i < s->facts.n_stages; i++)
        put_hist(f, m, s, "stage", s->facts.stages[i].name, &s->facts.stages[i].wall);
}
FN(stage_tokens)
{
    for (size_t i = 0; i < s->facts.n_stages; i++)
        put_u64(f, m, s, "stage", s->facts.stages[i].name, s->facts.stages[i].tokens);
}
FN(stages_dropped) { put_u64(f, m, s, NULL, NULL, s->facts.stages_dropped); }
FN(unmatched) { put_u64(f, m, s, NULL, NULL, s->facts.ranges_unmatched); }
#define IF_CONVENTION if (!s->facts.convention) return
FN(req_started) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.requests_started); }
FN(req_done) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.requests_done); }
FN(req_open) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.requests_open); }
FN(req_dropped) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.requests_dropped); }
FN(req_no_token) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.requests_no_token); }
FN(tokens) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.token_marks); }
FN(marks_unknown) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.marks_unknown); }
FN(ids_reused) { IF_CONVENTION; put_u64(f, m, s, NULL, NULL, s->facts.ids_reused); }
FN(ttft) { IF_CONVENTION; put_hist(f, m, s, NULL, NULL, &s->facts.ttft); }
FN(tpot) { IF_CONVENTION; put_hist(f, m, s, NULL, NULL, &s->facts.tpot); }
FN(itl) { IF_CONVENTION; put_hist(f, m, s, NULL, NULL, &s->facts.itl); }
FN(win_tokens)
{
    if (s->window.seconds > 0 && s->window.tokens_source)
        put_double(f, m, s, "source", s->window.tokens_source == 1 ? "token_marks" : "range_names",
                   s->window.tokens_per_s);
}
FN(win_energy)
{
    if (s->window.seconds > 0 && s->window.energy_per_token_j >= 0)
        put_double(f, m, s, NULL, NULL, s->window.energy_per_token_j);
}
FN(win_tensor)
{
    if (s->window.seconds > 0 && s->window.tensor_ratio >= 0)
        put_double(f, m, s, NULL, NULL, s->window.tensor_ratio);
}
FN(win_dram)
{
    if (s->window.seconds > 0 && s->window.dram_bytes_per_s >= 0)
        put_double(f, m, s, NULL, NULL, s->window.dram_bytes_per_s);
}

/* per GPU: gpu="ORDINAL" and, when its device record says it, uuid="GPU-..." (a process
 * samples every visible GPU until it has run work: the uuid tells the same GPU apart) */
static void gpu_labels(FILE *f, const struct lp_prom_source *s, const struct lp_live_device *d)
{
    char gpu[16], uuid[48];
    snprintf(gpu, sizeof gpu, "%u", d->id);
    lp_fmt_uuid(d->uuid, uuid, sizeof uuid);
    const char *k[2] = {"gpu", d->has_uuid ? "uuid" : NULL}, *v[2] = {gpu, uuid};
    labels_n(f, s, k, v, 2);
}

#define GPU_FN(name, has, value, fmt)                                                           \
    FN(name)                                                                                    \
    {                                                                                           \
        for (size_t i = 0; i < s->facts.n_devices; i++) {                                       \
            const struct lp_live_device *d = &s->facts.devices[i];                              \
            if (!(has))                                                                         \
                continue;                                                                       \
            fputs(m, f);                                                                        \
            gpu_labels(f, s, d);                                                                \
            fprintf(f, " " fmt "\n", value);                                                    \
        }                                                                                       \
    }
GPU_FN(gpu_power, d->nvml_samples && d->power_w >= 0, d->power_w, "%.17g")
GPU_FN(gpu_energy, d->nvml_samples && d->last_energy_mj, (double)d->energy_mj * 1e-3, "%.17g")
GPU_FN(gpu_sm_mhz, d->nvml_samples && d->sm_mhz, (uint64_t)d->sm_mhz, "%" PRIu64)
GPU_FN(gpu_temp, d->nvml_samples && d->temp_c, (uint64_t)d->temp_c, "%" PRIu64)
GPU_FN(gpu_mem, d->nvml_samples && d->mem_used, d->mem_used, "%" PRIu64)
GPU_FN(gpu_nvml_samples, d->nvml_samples, d->nvml_samples, "%" PRIu64)
GPU_FN(pm_samples, d->pm_samples, d->pm_samples, "%" PRIu64)
GPU_FN(pm_seconds, d->pm_samples, (double)d->pm_ns * 1e-9, "%.17g")
GPU_FN(pm_tensor, d->pm_samples, d->tensor_ns * 1e-9, "%.17g")
GPU_FN(pm_sm, d->pm_samples, d->sm_active_ns * 1e-9, "%.17g")
GPU_FN(pm_gr, d->pm_samples, d->gr_active_ns * 1e-9, "%.17g")
GPU_FN(pm_dram_read, d->pm_samples, d->dram_read, "%.17g")
GPU_FN(pm_dram_write, d->pm_samples, d->dram_write, "%.17g")
GPU_FN(dram_peak, d->dram_peak_bps, (double)d->dram_peak_bps, "%.17g")

struct family {
    const char *name, *type, *help;
    void (*write)(FILE *f, const char *m, const struct lp_prom_source *s);
};

/* The metrics, in the order written (docs/monitoring.md describes each) */
static const struct family families[] = {
    {"llmprof_trace_info", "gauge", "A trace followed: its process, rank and recording mode",
     trace_info},
    {"llmprof_trace_complete", "gauge", "1 once the trace's END chunk was read (clean exit)",
     complete},
    {"llmprof_trace_read_bytes_total", "counter", "Bytes of the trace read", bytes},
    {"llmprof_trace_chunks_total", "counter", "Chunks of the trace decoded", chunks},
    {"llmprof_trace_chunks_bad_total", "counter", "Corrupt chunks skipped", bad_chunks},
    {"llmprof_trace_dropped_bytes_total", "counter", "Bytes of corrupt chunks skipped",
     dropped_bytes},
    {"llmprof_trace_chunks_missing_total", "counter", "Chunk numbers skipped over", missing},
    {"llmprof_trace_restarts_total", "counter",
     "Times the file was replaced or cut and read again from its start", restarts},
    {"llmprof_trace_chunks_repeated_total", "counter", "Copies of chunks read before: skipped",
     repeated},
    {"llmprof_trace_chunks_over_budget_total", "counter",
     "Chunks that would decode to more than 128 times the bytes read: skipped", over_budget},
    {"llmprof_trace_names_unknown_total", "counter",
     "Names asked for that no chunk read defines (lost, or past the 64 MiB of names kept)",
     unknown_names},
    {"llmprof_trace_records_implausible_total", "counter",
     "Records timed at 0, before the recording or a year after it: counted, not used",
     implausible},
    {"llmprof_trace_latest_timestamp_seconds", "gauge",
     "Time of the latest record read (CUPTI's clock: Unix time on Linux)", latest},
    {"llmprof_trace_records_total", "counter", "Records read, by kind", records},
    {"llmprof_records_lost_total", "counter",
     "Records the collector could not record, by source (its LOSS records)", lost},
    {"llmprof_records_lost_sources_total", "counter",
     "LOSS records of a whole source whose count is unknown", lost_whole},
    {"llmprof_stage_duration_seconds", "histogram",
     "Top-level NVTX ranges of each stage rule, start to end", stage_wall},
    {"llmprof_stage_tokens_total", "counter", "tokens=N of the stage ranges' names",
     stage_tokens},
    {"llmprof_stage_occurrences_dropped_total", "counter",
     "Stage occurrences of names past the first 64", stages_dropped},
    {"llmprof_nvtx_ranges_unmatched_total", "counter",
     "NVTX range ends without their start, and starts past 16384 open", unmatched},
    {"llmprof_nvtx_ranges_unclassified_total", "counter",
     "NVTX ranges on threads past 1024 inside stage ranges at once: no stage taken",
     threads_dropped},
    {"llmprof_requests_started_total", "counter", "Request ranges begun (request convention)",
     req_started},
    {"llmprof_requests_finished_total", "counter", "Request ranges ended", req_done},
    {"llmprof_requests_in_flight", "gauge", "Request ranges open", req_open},
    {"llmprof_requests_dropped_total", "counter",
     "Requests not followed: an id reused while in flight, or past 16384 open", req_dropped},
    {"llmprof_requests_without_token_total", "counter",
     "Requests ended without a token mark (no TTFT)", req_no_token},
    {"llmprof_generated_tokens_total", "counter", "Token marks", tokens},
    {"llmprof_token_marks_unknown_total", "counter",
     "Token marks whose id names no request in flight", marks_unknown},
    {"llmprof_request_ids_reused_total", "counter", "Request ids begun again while in flight",
     ids_reused},
    {"llmprof_ttft_seconds", "histogram", "Time to first token: admission to first token mark",
     ttft},
    {"llmprof_tpot_seconds", "histogram",
     "Time per output token of each finished request: (last - first token) / (tokens - 1)",
     tpot},
    {"llmprof_itl_seconds", "histogram",
     "Inter-token latency: each gap between a request's token marks", itl},
    {"llmprof_window_tokens_per_second", "gauge",
     "Tokens per second over the trailing window (--window)", win_tokens},
    {"llmprof_window_energy_per_token_joules", "gauge",
     "NVML energy per token over the trailing window", win_energy},
    {"llmprof_window_tensor_active_ratio", "gauge",
     "Mean tensor-pipe activity from PM sampling over the trailing window", win_tensor},
    {"llmprof_window_dram_bytes_per_second", "gauge",
     "DRAM read and write throughput from PM sampling over the trailing window", win_dram},
    {"llmprof_gpu_power_watts", "gauge", "Power at the latest NVML sample", gpu_power},
    {"llmprof_gpu_energy_joules_total", "counter", "Energy from NVML's counter while followed",
     gpu_energy},
    {"llmprof_gpu_sm_clock_mhz", "gauge", "SM clock at the latest NVML sample", gpu_sm_mhz},
    {"llmprof_gpu_temperature_celsius", "gauge", "Temperature at the latest NVML sample",
     gpu_temp},
    {"llmprof_gpu_memory_used_bytes", "gauge", "Device memory used (whole device, NVML)",
     gpu_mem},
    {"llmprof_gpu_nvml_samples_total", "counter", "NVML samples read", gpu_nvml_samples},
    {"llmprof_gpu_pm_samples_total", "counter", "PM samples read", pm_samples},
    {"llmprof_gpu_pm_sampled_seconds_total", "counter", "Time covered by PM samples",
     pm_seconds},
    {"llmprof_gpu_tensor_active_seconds_total", "counter",
     "Sampled time weighted by tensor-pipe activity (rate over the sampled time's: the ratio)",
     pm_tensor},
    {"llmprof_gpu_sm_active_seconds_total", "counter",
     "Sampled time weighted by SMs with a warp in flight", pm_sm},
    {"llmprof_gpu_gr_active_seconds_total", "counter",
     "Sampled time weighted by the compute engine being busy", pm_gr},
    {"llmprof_gpu_dram_read_bytes_total", "counter", "DRAM bytes read (PM sampling)",
     pm_dram_read},
    {"llmprof_gpu_dram_write_bytes_total", "counter", "DRAM bytes written (PM sampling)",
     pm_dram_write},
    {"llmprof_gpu_dram_peak_bytes_per_second", "gauge", "The GPU's DRAM bandwidth (CUPTI)",
     dram_peak},
};

int lp_report_prometheus(FILE *out, const struct lp_prom_source *src, size_t n,
                         unsigned window_s)
{
    fprintf(out, "# HELP llmprof_window_seconds Length of the window gauges' window\n"
                 "# TYPE llmprof_window_seconds gauge\nllmprof_window_seconds %u\n",
            window_s);
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        const struct family *fm = &families[i];
        fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", fm->name, fm->help, fm->name, fm->type);
        for (size_t k = 0; k < n; k++)
            fm->write(out, fm->name, &src[k]);
    }
    return ferror(out) ? -1 : 0;
}
