/* Every sentence the run reports say about the analysis' codes, in one place: findings (title,
 * evidence, next step), notes, GEMM hints, the utilisation note, and the label and machine key
 * of each code. The analysis returns codes and the numbers they cite (llmprof/analyze.h);
 * the writers print what these functions make. Flag names (--model, --stage ...) appear in
 * the reports only through here. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/ncu.h"
#include "report_internal.h"

/* ---- labels and keys of the analysis' enums, one table each ---- */

struct label {
    const char *key, *text;
};

/* token and step sources: their labels are also report.json's values */
static const char *const tokens_sources[LP_TOKENS_SOURCE_COUNT] = {
    [LP_TOKENS_NONE] = "unknown",          [LP_TOKENS_FLAG] = "flag",
    [LP_TOKENS_RANGE_NAME] = "range name", [LP_TOKENS_SHAPES] = "GEMM shapes",
    [LP_TOKENS_STEPS] = "steps x batch",
};

static const char *const steps_sources[LP_STEPS_SOURCE_COUNT] = {
    [LP_STEPS_NONE] = "not found",
    [LP_STEPS_TOKENS] = "token count / batch",
    [LP_STEPS_RANGES] = "one per range",
    [LP_STEPS_LM_HEAD] = "lm_head GEMMs",
    [LP_STEPS_GRAPHS] = "CUDA graph launches",
    [LP_STEPS_SEQUENCE] = "repeating kernel sequence",
};

static const struct label gap_causes[LP_GAP_CAUSE_COUNT] = {
    [LP_GAP_HOST] = {"host", "waiting on the host"},
    [LP_GAP_DEVICE] = {"device", "queued work started late"},
    [LP_GAP_UNKNOWN] = {"unknown", "no launch recorded"},
};

/* nvmlClocksEventReasons bits, in order */
static const struct label throttles[LP_THROTTLE_BITS] = {
    {"gpu_idle", "gpu idle"},         {"application_clocks", "application clocks"},
    {"sw_power_cap", "sw power cap"}, {"hw_slowdown", "hw slowdown"},
    {"sync_boost", "sync boost"},     {"sw_thermal", "sw thermal"},
    {"hw_thermal", "hw thermal"},     {"hw_power_brake", "hw power brake"},
    {"display_clocks", "display clocks"}, {"other", "other"},
};

/* CUPTI's overhead kinds (the analysis maps CUPTI's values to them) and their classes */
static const struct label overhead_kinds[LP_OVERHEAD_KIND_COUNT] = {
    [LP_OVERHEAD_KIND_UNKNOWN] = {"unknown", "unknown (to CUPTI, or to this llmprof)"},
    [LP_OVERHEAD_KIND_COMPILER] = {"compiler", "JIT compilation"},
    [LP_OVERHEAD_KIND_BUFFER_FLUSH] = {"buffer_flush", "activity buffer flush"},
    [LP_OVERHEAD_KIND_INSTRUMENTATION] = {"instrumentation", "CUPTI instrumentation"},
    [LP_OVERHEAD_KIND_RESOURCE] = {"resource", "CUPTI resources (made and freed)"},
    [LP_OVERHEAD_KIND_MODULE_LOADING] = {"module_loading", "module loading (by the runtime)"},
    [LP_OVERHEAD_KIND_LAZY_LOADING] = {"lazy_loading", "lazy function loading"},
    [LP_OVERHEAD_KIND_COMMAND_BUFFER_FULL] = {"command_buffer_full", "command buffer full"},
    [LP_OVERHEAD_KIND_BUFFER_REQUEST] = {"buffer_request", "activity buffer request"},
    [LP_OVERHEAD_KIND_UVM_INIT] = {"uvm_init", "UVM activity set-up"},
};

static const struct label overhead_classes[LP_OVERHEAD_CLASS_COUNT] = {
    [LP_OVERHEAD_CLASS_PROFILER] = {"profiler", "CUPTI's own work"},
    [LP_OVERHEAD_CLASS_LOADING] = {"loading", "CUDA loading code"},
    [LP_OVERHEAD_CLASS_QUEUE] = {"queue", "waiting for a command buffer"},
    [LP_OVERHEAD_CLASS_OTHER] = {"other", "other"},
};

#define LABEL(table, i, field) \
    ((unsigned)(i) < sizeof table / sizeof *table ? table[i].field : "unknown")

const char *lp_text_tokens_source(enum lp_tokens_source s)
{
    return (unsigned)s < LP_TOKENS_SOURCE_COUNT ? tokens_sources[s] : "unknown";
}

const char *lp_text_steps_source(enum lp_steps_source s)
{
    return (unsigned)s < LP_STEPS_SOURCE_COUNT ? steps_sources[s] : "not found";
}

const char *lp_text_gap_cause(enum lp_gap_cause c)
{
    return LABEL(gap_causes, c, text);
}

const char *lp_text_gap_cause_key(enum lp_gap_cause c)
{
    return LABEL(gap_causes, c, key);
}

const char *lp_text_overhead_kind(enum lp_overhead_kind k)
{
    return LABEL(overhead_kinds, k, text);
}

const char *lp_text_overhead_kind_key(enum lp_overhead_kind k)
{
    return LABEL(overhead_kinds, k, key);
}

const char *lp_text_overhead_class(enum lp_overhead_class c)
{
    return LABEL(overhead_classes, c, text);
}

const char *lp_text_overhead_class_key(enum lp_overhead_class c)
{
    return LABEL(overhead_classes, c, key);
}

const char *lp_text_throttle(int bit)
{
    return bit >= 0 && bit < LP_THROTTLE_BITS ? throttles[bit].text : "other";
}

const char *lp_text_throttle_key(int bit)
{
    return bit >= 0 && bit < LP_THROTTLE_BITS ? throttles[bit].key : "other";
}

/* what a group's collectives did (enum lp_coll_op, bit by bit) */
static const struct label coll_ops[LP_COLL_OP_COUNT] = {
    {"all_reduce", "all-reduce"}, {"all_gather", "all-gather"},
    {"reduce_scatter", "reduce-scatter"}, {"broadcast", "broadcast"}, {"reduce", "reduce"},
    {"send_recv", "send/receive"}, {"other", "other"},
};

const char *lp_text_coll_op(int bit)
{
    return bit >= 0 && bit < LP_COLL_OP_COUNT ? coll_ops[bit].text : "other";
}

const char *lp_text_coll_op_key(int bit)
{
    return bit >= 0 && bit < LP_COLL_OP_COUNT ? coll_ops[bit].key : "other";
}

/* serving loops: what an iteration ran, where its decode count came from, what showed the
 * loop; the keys are report.json's and iterations.csv's values */
static const struct label iter_kinds[LP_ITER_KIND_COUNT] = {
    [LP_ITER_KIND_DECODE] = {"decode", "decode-only"},
    [LP_ITER_KIND_PREFILL] = {"prefill", "prefill-only"},
    [LP_ITER_KIND_MIXED] = {"mixed", "mixed"},
    [LP_ITER_KIND_UNKNOWN] = {"unknown", "unknown"},
};

static const struct label iter_sources[LP_ITER_SOURCE_COUNT] = {
    [LP_ITER_SOURCE_SHAPES] = {"shapes", "exact: tokens in flight = sequences sampled"},
    [LP_ITER_SOURCE_CARRIED] = {"carried", "inferred: sequences sampled the iteration before"},
    [LP_ITER_SOURCE_MARKS] = {"marks", "counted: request marks"},
};

static const char *const serving_causes[] = {
    [LP_SERVING_CAUSE_NONE] = "none",
    [LP_SERVING_CAUSE_CONVENTION] = "convention",
    [LP_SERVING_CAUSE_SHRANK] = "shrank",
    [LP_SERVING_CAUSE_RAGGED] = "ragged",
};

const char *lp_text_iter_kind(enum lp_iter_kind k) { return LABEL(iter_kinds, k, text); }
const char *lp_text_iter_kind_key(enum lp_iter_kind k) { return LABEL(iter_kinds, k, key); }
const char *lp_text_iter_source(enum lp_iter_source s) { return LABEL(iter_sources, s, text); }
const char *lp_text_iter_source_key(enum lp_iter_source s) { return LABEL(iter_sources, s, key); }

const char *lp_text_serving_cause_key(enum lp_serving_cause c)
{
    return (unsigned)c < sizeof serving_causes / sizeof *serving_causes ? serving_causes[c]
                                                                       : "unknown";
}

/* ---- findings ---- */

static const char *const finding_keys[LP_FINDING_CODE_COUNT] = {
    [LP_FINDING_TRACE_NOT_WHOLE] = "trace_not_whole",
    [LP_FINDING_LAUNCH_BOUND] = "launch_bound",
    [LP_FINDING_DECODE_LOW_MBU] = "decode_low_mbu",
    [LP_FINDING_PREFILL_LOW_MFU] = "prefill_low_mfu",
    [LP_FINDING_PREFILL_FEW_GEMMS] = "prefill_few_gemms",
    [LP_FINDING_COPIES] = "copies",
    [LP_FINDING_VARIANCE] = "variance",
    [LP_FINDING_THROTTLED] = "throttled",
    [LP_FINDING_OUTSIDE_WORK] = "outside_work",
    [LP_FINDING_NO_STAGES] = "no_stages",
    [LP_FINDING_LOADING] = "code_loading",
    [LP_FINDING_PROFILER_WORK] = "profiler_work",
};

const char *lp_text_finding_key(enum lp_finding_code c)
{
    return (unsigned)c < LP_FINDING_CODE_COUNT ? finding_keys[c] : "unknown";
}

static void put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

#define PUT(field, ...) put(t->field, sizeof t->field, __VA_ARGS__)

static void trace_not_whole(const struct lp_run *r, struct lp_finding_text *t)
{
    const struct lp_trace *tr = r->trace;
    if (tr->altered) { /* copied, cut or reordered after it was written: not a lost record */
        PUT(title, "The trace file was altered after it was written");
        PUT(advice, "Its chunks are not as the collector wrote them (the reader's warnings, in "
                    "report.md's losses and notes, say how and what was read): use the original "
                    "file, or record again.");
    } else {
        PUT(title, "The trace is not whole: figures are lower bounds");
        PUT(advice, "See the losses section; a trace cut short (killed process) keeps what "
                    "was flushed. Rerun with a larger buffer (LLMPROF_MAX_BUFFERS) if CUPTI "
                    "dropped records.");
    }
    PUT(evidence, "%llu records lost, %zu loss notes (%zu without a count), %s, %zu reader "
                  "warnings, %llu bytes skipped, %llu implausible records left out",
        (unsigned long long)r->lost_records, tr->n_losses, r->losses_uncounted,
        tr->complete ? "clean exit" : "no end chunk (the process did not exit cleanly)",
        tr->n_warnings, (unsigned long long)tr->dropped_bytes,
        (unsigned long long)tr->implausible);
}

static void launch_bound(const struct lp_run *r, const struct lp_finding *f,
                         struct lp_finding_text *t)
{
    const struct lp_stage_report *s = &r->stages[f->stage];
    static const char *const units[] = {[LP_FINDING_UNIT_OCCURRENCE] = "occurrence",
                                        [LP_FINDING_UNIT_STEP] = "step",
                                        [LP_FINDING_UNIT_PREFILL] = "prefill"};
    const char *unit = units[f->unit];
    char mbu[64] = "";
    if (s->has_util)
        snprintf(mbu, sizeof mbu, "; MBU %.1f %%", 100 * s->mbu);
    char title[96]; /* a long stage name is cut here, as the title always was */
    snprintf(title, sizeof title, "%c%s is launch bound",
             s->name[0] >= 'a' && s->name[0] <= 'z' ? s->name[0] - 'a' + 'A' : s->name[0],
             s->name + 1);
    PUT(title, "%s", title);
    const char *how = s->graph_kernels || s->graph_replays
                          ? "Part of the work already runs in CUDA graphs: capture the rest"
                          : "Capture it in a CUDA graph (torch.compile mode=\"reduce-overhead\", "
                            "torch.cuda.CUDAGraph, or the engine's graph option)";
    double idle = f->idle_ns / 1e6, per = f->per_ns / 1e6;
    if (f->unit == LP_FINDING_UNIT_STEP)
        PUT(advice, "%s, or fuse small kernels: with the GPU idle %.3g ms of a %.3g ms step on "
                    "average (means, where the headline gives medians), that could save up to "
                    "~%.3g ms per token. A larger batch gives each launch more work.",
            how, idle, per, idle);
    else if (f->unit == LP_FINDING_UNIT_PREFILL)
        PUT(advice, "%s, or fuse small kernels: the GPU idles %.3g ms of a %.3g ms prefill on "
                    "average waiting for launches, up to ~%.3g ms of the TTFT. A longer prompt "
                    "or a batch gives each launch more work.", how, idle, per, idle);
    else
        PUT(advice, "%s, or fuse small kernels: the GPU idles %.3g ms of a %.3g ms "
                    "occurrence on average.", how, idle, per);
    PUT(evidence, "%s: GPU busy %.3g ms of a %.3g ms %s on average (%.1f %%); %.1f %% of its "
                  "idle time the GPU waited for the host to launch the next kernel; %.0f "
                  "kernels per %s, median launch-to-start %.1f us%s",
        s->name, f->busy_ns / 1e6, per, unit, 100 * s->busy_share, 100 * s->host_wait_share,
        f->kernels_per_unit, unit, s->launch_delay_p50_ns / 1e3, mbu);
}

/* Prefill far from the compute peak: the advice follows the reason the analysis found */
static void prefill_low_mfu(const struct lp_run *r, const struct lp_finding *f,
                            struct lp_finding_text *t)
{
    const struct lp_stage_report *s = &r->stages[f->stage];
    const double *cat = s->cat_share;
    PUT(title, "Prefill is far from the compute peak");
    if (!r->kernels_recorded) { /* --light: no kernel shares to read */
        PUT(advice, "Record without --light to see which kernels take the prefill's time.");
        PUT(evidence, "%s: MFU %.1f %% (%.1f of %.0f TFLOP/s %s) over its wall time",
            s->name, 100 * s->mfu, s->achieved_tflops, r->util.gpu.tflops[r->util.dtype],
            lp_dtype_name(r->util.dtype));
        return;
    }
    switch (f->reason) {
    case LP_MFU_REASON_REPLAYS:
        PUT(advice, "Part of it ran as CUDA graph replays recorded whole, whose kernels are "
                    "not known: record with --graphs node to see which kernels take its "
                    "time.");
        break;
    case LP_MFU_REASON_IDLE:
        PUT(advice, "The GPU is idle %.0f %% of it: the time goes to launches and the host, "
                    "not to slow kernels (see the launch-bound finding, the gaps).",
            100 * (1 - s->busy_share));
        break;
    case LP_MFU_REASON_NON_GEMM:
        if (cat[LP_KCAT_ATTENTION] > 0)
            PUT(advice, "Non-GEMM kernels dominate: fuse elementwise and norm kernels "
                        "(torch.compile); attention already runs as a fused kernel (%.0f %% "
                        "of its GPU time).",
                100 * cat[LP_KCAT_ATTENTION]);
        else
            PUT(advice, "Non-GEMM kernels dominate: fuse elementwise and norm kernels "
                        "(torch.compile), use a fused attention kernel.");
        break;
    case LP_MFU_REASON_GEMM_ELSEWHERE:
        PUT(advice, "GEMMs take most of its GPU time, and the measured ones run at %.0f %% "
                    "of the peak while they run: the time goes to GEMMs without shapes "
                    "(grouped, CUTLASS, Triton: %.0f %% of its GEMM time) and to the idle "
                    "GPU around them.",
            100 * f->share, s->gemm_coverage >= 0 ? 100 * (1 - s->gemm_coverage) : 0.0);
        break;
    default:
        if (f->share >= 0)
            PUT(advice, "GEMMs dominate but run slowly (the measured ones at %.0f %% of the "
                        "peak while they run): check shapes (multiples of 64/128), dtypes "
                        "(bf16/fp8 tensor cores), and batch more tokens per prefill.",
                100 * f->share);
        else
            PUT(advice, "GEMMs dominate but run slowly: check shapes (multiples of 64/128), "
                        "dtypes (bf16/fp8 tensor cores), and batch more tokens per "
                        "prefill.");
        break;
    }
    PUT(evidence, "%s: MFU %.1f %% (%.1f of %.0f TFLOP/s %s), GEMM share %.1f %% of its "
                  "GPU time, GPU busy %.1f %%",
        s->name, 100 * s->mfu, s->achieved_tflops, r->util.gpu.tflops[r->util.dtype],
        lp_dtype_name(r->util.dtype), 100 * cat[LP_KCAT_GEMM], 100 * s->busy_share);
}

static void stage_finding(const struct lp_run *r, const struct lp_finding *f,
                          struct lp_finding_text *t)
{
    const struct lp_stage_report *s = &r->stages[f->stage];
    const double *cat = s->cat_share;
    switch (f->code) {
    case LP_FINDING_DECODE_LOW_MBU:
        PUT(title, "Decode keeps the GPU busy but far from its bandwidth");
        PUT(advice, "Memory-bound work below the roofline: look at the top decode kernels "
                    "(GEMV-shaped GEMMs, attention over the KV cache), weight-only quantisation, "
                    "or a larger batch.");
        PUT(evidence, "%s: MBU %.1f %% (%.0f of %.0f GB/s), GPU busy %.1f %%", s->name,
            100 * s->mbu, s->achieved_gbs, r->util.gpu.mem_bw_gbs, 100 * s->busy_share);
        break;
    case LP_FINDING_PREFILL_LOW_MFU:
        prefill_low_mfu(r, f, t);
        break;
    case LP_FINDING_PREFILL_FEW_GEMMS:
        PUT(title, "GEMMs are a small share of prefill");
        PUT(advice, "Elementwise, norm, reduction and copy kernels take more of its GPU time "
                    "(%.0f %%) than its GEMMs (%.0f %%): fuse them (torch.compile)%s.",
            100 * f->share, 100 * cat[LP_KCAT_GEMM],
            cat[LP_KCAT_ATTENTION] > 0 ? "" : ", use a fused attention kernel");
        PUT(evidence, "%s: GEMM %.1f %%, attention %.1f %%, elementwise %.1f %%, norm %.1f %%, "
                      "reduction %.1f %% of its GPU time",
            s->name, 100 * cat[LP_KCAT_GEMM], 100 * cat[LP_KCAT_ATTENTION],
            100 * cat[LP_KCAT_ELEMENTWISE], 100 * cat[LP_KCAT_NORM],
            100 * cat[LP_KCAT_REDUCTION]);
        break;
    case LP_FINDING_COPIES:
        PUT(title, "Copies take a large share of a stage");
        PUT(advice, "Keep tensors on the GPU, use pinned memory and non_blocking copies, and "
                    "avoid reading results back every step (.item(), .cpu()).");
        PUT(evidence, "%s: memcpy %.1f %% of its GPU time; %.1f MiB HtoD, %.1f MiB DtoH",
            s->name, 100 * cat[LP_KCAT_MEMCPY], s->memcpy_bytes[0] / 1048576.0,
            s->memcpy_bytes[1] / 1048576.0);
        break;
    case LP_FINDING_VARIANCE:
        PUT(title, "Stage time varies between repeats");
        PUT(advice, "Warm up before measuring (name warmup ranges 'warmup' to set them apart), "
                    "check the clocks and throttle reasons below, and look for allocator growth "
                    "or recompilation in the slow occurrences.");
        PUT(evidence, "%s: CV %.1f %% over %zu occurrences (min %.3f ms, mean %.3f ms, max "
                      "%.3f ms)",
            s->name, 100 * s->wall.cv, s->occurrences, s->wall.min / 1e6, s->wall.mean / 1e6,
            s->wall.max / 1e6);
        break;
    case LP_FINDING_LOADING:
        PUT(title, "CUDA loaded code during %s", s->name);
        PUT(advice, "Run every shape once before the part you measure (a warm-up request with "
                    "the same prompt length and batch), or set CUDA_MODULE_LOADING=EAGER to load "
                    "all kernels at start-up: the occurrences that paid for loading are slower "
                    "than the rest.");
        PUT(evidence, "%s: %.3g ms loading code on the program's threads inside its measured "
                      "occurrences, %.1f %% of its time, in %zu of CUPTI's overhead records "
                      "(lazy function or module loading, JIT compilation)",
            s->name, f->overhead_ns / 1e6, 100 * f->share, f->overhead_n);
        break;
    case LP_FINDING_PROFILER_WORK:
        PUT(title, "CUPTI's own work is part of %s's time", s->name);
        PUT(advice, "Its times include this profiling cost, paid by whichever occurrence was "
                    "running when CUPTI needed it: compare them with the program's own timing "
                    "without llmprof. A trace from an llmprof before CUPTI's buffers came "
                    "zeroed pays far more for buffer requests: record again.");
        PUT(evidence, "%s: %.3g ms of CUPTI's own work on the program's threads inside its "
                      "measured occurrences, %.1f %% of its time, in %zu of CUPTI's overhead "
                      "records (buffers, instrumentation, its resources)",
            s->name, f->overhead_ns / 1e6, 100 * f->share, f->overhead_n);
        break;
    case LP_FINDING_OUTSIDE_WORK:
        PUT(title, "Much GPU work runs outside the stage ranges");
        PUT(advice, "Widen the ranges or add one around this work to see where it belongs.");
        PUT(evidence, "%.1f %% of GPU time (%zu kernels) was launched outside every stage range",
            100.0 * f->share, s->kernels);
        break;
    default:
        break;
    }
}

static void throttled(const struct lp_run *r, const struct lp_finding *f,
                      struct lp_finding_text *t)
{
    char ev[400] = "";
    size_t o = 0;
    for (int b = 0; b < LP_THROTTLE_BITS && o < sizeof ev; b++)
        if (f->throttle_bits & 1u << b)
            o += (size_t)snprintf(ev + o, sizeof ev - o, "%s%s %.1f %% of samples", o ? ", " : "",
                                  throttles[b].text, 100 * r->power.throttle_share[b]);
    PUT(title, "Clocks were held back");
    PUT(advice, "Power cap or thermal limits lowered the clocks: compare the SM clock chart with "
                "the maximum, check cooling and the power limit (nvidia-smi -q -d PERFORMANCE).");
    PUT(evidence, "%s (NVML clock-event reasons over %zu samples)", ev, r->power.samples);
}

void lp_text_finding(const struct lp_run *r, const struct lp_finding *f,
                     struct lp_finding_text *t)
{
    memset(t, 0, sizeof *t);
    switch (f->code) {
    case LP_FINDING_TRACE_NOT_WHOLE:
        trace_not_whole(r, t);
        break;
    case LP_FINDING_LAUNCH_BOUND:
        launch_bound(r, f, t);
        break;
    case LP_FINDING_THROTTLED:
        throttled(r, f, t);
        break;
    case LP_FINDING_NO_STAGES:
        PUT(title, "No stages");
        PUT(advice, "Wrap prefill and decode in NVTX ranges named prefill and decode "
                    "(torch.cuda.nvtx.range_push) to see them apart.");
        PUT(evidence, "%zu NVTX ranges, none matched a stage rule; %s", r->ranges.n,
            r->trace->n_gemms ? "the GEMM shapes do not look like an LLM's (decode steps "
                                "running the prefill's weights)"
                              : "no GEMM shapes to infer stages from");
        break;
    default:
        if (f->stage >= 0 && (size_t)f->stage < r->n_stages)
            stage_finding(r, f, t);
        break;
    }
}

/* ---- notes ---- */

static const char *const note_keys[LP_NOTE_CODE_COUNT] = {
    [LP_NOTE_STAGES_INFERRED] = "stages_inferred",
    [LP_NOTE_ONE_STAGE] = "one_stage",
    [LP_NOTE_WORK_BY_TIME] = "work_by_time",
    [LP_NOTE_TOKENS_PARTIAL] = "tokens_partial",
    [LP_NOTE_GEMMS_UNLINKED] = "gemms_unlinked",
    [LP_NOTE_VISION_ROWS] = "vision_rows",
    [LP_NOTE_GPU_GIVEN] = "gpu_given",
    [LP_NOTE_MODEL_MISFIT] = "model_misfit",
    [LP_NOTE_PREFILL_TOKENS_GIVEN] = "prefill_tokens_given",
    [LP_NOTE_DECODE_TOKENS_GIVEN] = "decode_tokens_given",
    [LP_NOTE_BATCH_GIVEN] = "batch_given",
    [LP_NOTE_TOKENS_IMPOSSIBLE] = "tokens_impossible",
};

const char *lp_text_note_key(enum lp_note_code c)
{
    return (unsigned)c < LP_NOTE_CODE_COUNT ? note_keys[c] : "unknown";
}

static int has_note(const struct lp_run *r, enum lp_note_code code)
{
    for (size_t i = 0; i < r->n_notes; i++)
        if (r->notes[i].code == code)
            return 1;
    return 0;
}

void lp_text_note(const struct lp_run *r, const struct lp_note *n, char *buf, size_t len)
{
    long long count = (long long)n->count, of = (long long)n->of;
    buf[0] = 0;
    switch (n->code) {
    case LP_NOTE_STAGES_INFERRED:
        put(buf, len, "%s: prefill and decode are inferred from the tokens in flight of the "
                      "cuBLAS GEMMs (many tokens: prefill; a few: one decode step, ending at its "
                      "largest GEMM, the lm_head; both run the same weights). Wrap stages in "
                      "NVTX ranges for exact bounds",
            n->count ? "no prefill or decode ranges (the GEMMs in vision ranges are the "
                       "vision's)"
                     : "no NVTX stage ranges");
        break;
    case LP_NOTE_ONE_STAGE:
        put(buf, len, "%s",
            n->count ? "no NVTX range matched a stage rule: the whole run is one stage (name "
                       "ranges prefill/decode, or pass --stage NAME=REGEX)"
                     : "no NVTX ranges: the whole run is one stage (wrap prefill and decode in "
                       "NVTX ranges to see them apart)");
        break;
    case LP_NOTE_WORK_BY_TIME:
        put(buf, len, "%lld of %lld pieces of GPU work have no recorded launch call (API records "
                      "off, or lost): they are given to the stage that began last before "
                      "they ran", count, of);
        break;
    case LP_NOTE_TOKENS_PARTIAL:
        put(buf, len, "stage %s: %lld of %lld occurrences have a token count; its token count "
                      "is left unknown (pass it as a flag)",
            n->stage >= 0 && (size_t)n->stage < r->n_stages ? r->stages[n->stage].name : "?",
            count, of);
        break;
    case LP_NOTE_GEMMS_UNLINKED:
        put(buf, len, "%lld of %lld successful GEMM calls launched no recorded kernel (captured "
                      "into a CUDA graph never replayed or whose nodes were not recorded, "
                      "launch records missing, or no kernels recorded): their FLOPs are left "
                      "out of the GEMM figures", count, of);
        break;
    case LP_NOTE_GPU_GIVEN:
        put(buf, len, "the GPU named (%s) is not the one the trace recorded (%s): MFU, MBU and "
                      "the bounds use the named one's peaks",
            r->util.gpu.name, r->trace && r->trace->n_devices
                             ? lp_trace_str(r->trace, r->trace->devices[0].name)
                             : "none");
        break;
    case LP_NOTE_MODEL_MISFIT:
        put(buf, len, "the model given (hidden %lld, vocabulary %lld) does not fit the recorded "
                      "GEMMs: their largest weight (the lm_head) is %lld x %lld, and %.0f %% of "
                      "the linear calls read a hidden state of %lld; its analytic MFU and MBU "
                      "are kept out of the summary (check --model)",
            r->opt.model ? (long long)r->opt.model->hidden : 0,
            r->opt.model ? (long long)r->opt.model->vocab : 0, of, count, 100 * n->value,
            r->opt.model ? (long long)r->opt.model->hidden : 0);
        break;
    case LP_NOTE_PREFILL_TOKENS_GIVEN:
        put(buf, len, "--prefill-tokens %lld was given, but the GEMMs of %.0f prefill range%s carr%s "
                      "%lld tokens (the token dimension most calls share; all sequences): %s",
            count, n->value, n->value == 1 ? "" : "s", n->value == 1 ? "ies" : "y", of,
            has_note(r, LP_NOTE_TOKENS_IMPOSSIBLE)
                ? "a count the run cannot hold, withheld (the trace's own is used)"
                : "the flag's value is used for tokens/s and MFU, check it");
        break;
    case LP_NOTE_DECODE_TOKENS_GIVEN:
        put(buf, len, "--decode-tokens %lld was given, but %.0f decode range%s show%s %lld "
                      "(the steps found times the batch): %s",
            count, n->value, n->value == 1 ? "" : "s", n->value == 1 ? "s" : "", of,
            has_note(r, LP_NOTE_TOKENS_IMPOSSIBLE)
                ? "a count the run cannot hold, withheld (the trace's own is used)"
                : "the flag's value is used for the steps, tokens/s and TPOT, check it");
        break;
    case LP_NOTE_BATCH_GIVEN:
        put(buf, len, "--batch %lld was given, but the decode GEMMs of %.0f range%s run %lld "
                      "sequence%s a step (their token dimension): the flag's value is used, "
                      "check it",
            count, n->value, n->value == 1 ? "" : "s", of, of == 1 ? "" : "s");
        break;
    case LP_NOTE_TOKENS_IMPOSSIBLE:
        put(buf, len, "the token count a flag gives %.0f range%s cannot be (a prefill of 2^31 "
                      "tokens or more, or a decode of more steps than the GPU work it ran): "
                      "withheld, the trace's own count used instead",
            n->value, n->value == 1 ? "" : "s");
        break;
    case LP_NOTE_VISION_ROWS:
        put(buf, len, "the vision projector's GEMMs ran %lld rows per request, but vision mode "
                      "%s projects %.0f: the mode (--vision, --tiles) is not the run's, and the "
                      "image and text tokens are off",
            count, lp_vision_mode_name(r->util.vision_mode), n->value);
        break;
    default:
        break;
    }
}

/* ---- serving loops ---- */

void lp_text_serving_cause(const struct lp_serving *s, char *buf, size_t len)
{
    long long a = (long long)s->cause_value[0], b = (long long)s->cause_value[1],
              i = (long long)s->cause_value[2];
    buf[0] = 0;
    switch (s->cause) {
    case LP_SERVING_CAUSE_CONVENTION:
        put(buf, len, "the program marks its requests (request convention)");
        break;
    case LP_SERVING_CAUSE_SHRANK:
        put(buf, len, "decode-only iterations went from %lld to %lld sequences at iteration %lld "
                      "with no prefill between: a sequence left while others ran on", a, b, i);
        break;
    case LP_SERVING_CAUSE_RAGGED:
        put(buf, len, "iteration %lld prefilled %lld tokens for %lld sequences, no multiple of "
                      "them: prompts of several lengths in one flat batch", i, a, b);
        break;
    default:
        break;
    }
}

/* ---- GEMM hints ---- */

/* keys of enum lp_gemm_hint's bits, lowest first */
static const char *const hint_keys[LP_GEMM_HINT_BITS] = {"gemv", "memory_bound", "tile_fill",
                                                         "waves", "unaligned", "steps"};

const char *lp_text_gemm_hint_key(int bit)
{
    return bit >= 0 && bit < LP_GEMM_HINT_BITS ? hint_keys[bit] : NULL;
}

static void append(char *buf, size_t len, const char *text)
{
    size_t l = strlen(buf);
    if (l + 3 >= len)
        return;
    snprintf(buf + l, len - l, "%s%s", l ? "; " : "", text);
}

void lp_text_gemm_hint(const struct lp_gemm_row *row, char *buf, size_t len)
{
    const struct lp_gemm *g = &row->call;
    char s[256];
    buf[0] = 0;
    if (row->hints & LP_GEMM_HINT_GEMV) {
        uint64_t small = g->m < g->n ? g->m : g->n;
        snprintf(s, sizeof s, "%s=%" PRIu64 ": GEMV-like, memory bound (reads the %s operand); "
                 "%.0f GB/s is %.0f %% of the bandwidth", g->m < g->n ? "m" : "n", small,
                 g->m < g->n ? "B" : "A", row->gbs, 100 * row->bw_share);
        append(buf, len, s);
    } else if (row->hints & LP_GEMM_HINT_MEMORY_BOUND) {
        snprintf(s, sizeof s, "memory bound: %.0f FLOP/B is below the ridge of %.0f; %.0f GB/s "
                 "is %.0f %% of the bandwidth", row->intensity, row->ridge, row->gbs,
                 100 * row->bw_share);
        append(buf, len, s);
    }
    if (row->hints & LP_GEMM_HINT_TILE_FILL) {
        snprintf(s, sizeof s, "%" PRIu64 "x%" PRIu64 " tiles only %.0f %% filled by m x n",
                 row->tile_m, row->tile_n, 100 * row->tile_fill);
        append(buf, len, s);
    }
    if (row->hints & LP_GEMM_HINT_WAVES) {
        snprintf(s, sizeof s, "%" PRIu64 " tiles on %u SMs: %" PRIu64 " wave%s, %.0f %% of SM "
                 "slots busy", row->ctas, row->sms, row->waves, row->waves == 1 ? "" : "s",
                 100 * row->sm_fill);
        append(buf, len, s);
    }
    if (row->hints & LP_GEMM_HINT_STEPS) {
        int len0 = snprintf(s, sizeof s, "%c runs %" PRIu64 "..%" PRIu64 " by %" PRIu64
                            " (%zu sizes, one row)", row->vary_dim, row->vary_lo, row->vary_hi,
                            row->vary_step, row->vary_values);
        size_t at = len0 > 0 && (size_t)len0 < sizeof s ? (size_t)len0 : 0;
        if (row->vary == LP_GEMM_VARY_MLA)
            snprintf(s + at, sizeof s - at, ": the compressed KV cache (k = kv_lora_rank) "
                     "expanded over the whole context every step, as transformers' MLA does; "
                     "absorbed MLA (vLLM, SGLang) does not");
        else if (row->vary == LP_GEMM_VARY_CONTEXT)
            snprintf(s + at, sizeof s - at, ": a projection of the whole context every step, "
                     "not cached");
        append(buf, len, s);
    }
    if (row->hints & LP_GEMM_HINT_UNALIGNED) {
        snprintf(s, sizeof s, "m, n or k is not a multiple of %" PRIu64 " (16 bytes of %s): "
                 "unaligned tensor-core loads", row->align_elems, lp_cuda_type_name(g->a_type));
        append(buf, len, s);
    }
}

/* ---- executed tensor work against the model's ---- */

static const char *const excess_keys[LP_EXCESS_BITS] = {"tile_padding", "mla_kv_expansion",
                                                        "moe_padding", "unexplained", "short"};

const char *lp_text_excess_key(int bit)
{
    return bit >= 0 && bit < LP_EXCESS_BITS ? excess_keys[bit] : NULL;
}

void lp_text_excess(const struct lp_stage_counters *k, char *buf, size_t len)
{
    char s[200];
    buf[0] = 0;
    if (k->excess & LP_EXCESS_TILE_PADDING) {
        snprintf(s, sizeof s, "%lld token%s a pass padded to the tensor-core tile (8 to 64 "
                 "rows or columns, by kernel)", (long long)k->pass_tokens,
                 k->pass_tokens == 1 ? "" : "s");
        append(buf, len, s);
    }
    if (k->excess & LP_EXCESS_MLA)
        append(buf, len, "MLA's compressed KV cache expanded over the whole context every step "
                         "(the GEMM row whose n steps)");
    if (k->excess & LP_EXCESS_MOE)
        append(buf, len, "grouped expert GEMMs, each expert's tokens padded to the tile");
    if (k->excess & LP_EXCESS_UNEXPLAINED)
        append(buf, len, "no cause seen in the trace: recomputation, or matmuls the config does "
                         "not describe");
    if (k->excess & LP_EXCESS_SHORT)
        append(buf, len, "matmuls in a type the counters do not count (only bf16 and fp8 "
                         "are), on CUDA cores, or a config larger than the model run");
}

const char *lp_text_why_not(const struct lp_run *r)
{
    switch (r->llm.why_not) {
    case LP_LLM_NO_SHAPES:
        return "no NVTX range is named like a stage, and no GEMM shapes were recorded to infer "
               "stages from";
    case LP_LLM_NOT_LLM_SHAPES:
        return "no NVTX range is named like a stage, and the GEMM shapes do not look like an "
               "LLM's (decode steps running the prefill's weights)";
    case LP_LLM_SERVING:
        return "a serving loop: its prefills and decodes share forward passes";
    default:
        return "no stage range is a prefill or a decode";
    }
}

const char *lp_text_gemm_state(const struct lp_run *r)
{
    return r->gemm.state[0] ? r->gemm.state
                            : "not recorded (a trace of format 1.0, or an older --light)";
}

/* ---- utilisation ---- */

void lp_text_util(const struct lp_run *r, char *buf, size_t len)
{
    const struct lp_workload *w = &r->util.workload;
    switch (r->util.status) {
    case LP_UTIL_NO_MODEL:
        put(buf, len, "MFU and MBU need the model: pass --model CONFIG.json");
        return;
    case LP_UTIL_NO_PEAK:
        put(buf, len, "GPU '%s' has no %s peak or bandwidth in the hardware table: pass --gpu "
                      "NAME, or --peak-tflops and --mem-bw",
            r->util.gpu.name, lp_dtype_name(r->util.dtype));
        return;
    case LP_UTIL_NO_PREFILL:
        put(buf, len, "MFU and MBU need a prefill stage with a token count (its prompt sets the "
                      "decode context), and none was found: no prefill range, or no GEMM shapes "
                      "in it (recorded with --no-gemm or --light, or matmuls that are no cuBLAS "
                      "call: Triton, CUTLASS); name a range prefill with tokens=N, or pass "
                      "--prefill-tokens");
        return;
    case LP_UTIL_OVER_PEAK:
        put(buf, len, "the model's %s over the measured time would be %.0f %% of the "
                      "GPU's peak %s (%s), which no run reaches: the tokens or batch (flags, "
                      "tokens= names) or the model given do not describe this run",
            r->util.over_bytes ? "bytes" : "FLOPs", 100 * r->util.over,
            r->util.over_bytes ? "bandwidth" : "compute",
            r->util.over_what >= 0 && (size_t)r->util.over_what < r->n_stages
                ? r->stages[r->util.over_what].name
                : "the request");
        return;
    case LP_UTIL_MODEL_REFUSED:
        put(buf, len, "the model cannot run this workload: %s", r->util.error);
        return;
    case LP_UTIL_PROMPT_UNDER_SLOTS:
        put(buf, len, "the prefill's %lld tokens per sequence are fewer than the %lld image "
                      "slots of vision mode %s: pass the program's --vision mode (and --tiles)",
            (long long)w->prompt, (long long)r->util.vision_tokens,
            lp_vision_mode_name(w->vision_mode));
        return;
    case LP_UTIL_OK:
        break;
    }
    static const char *const logits[] = {[LP_LOGITS_ASSUMED] = "assumed",
                                         [LP_LOGITS_GIVEN] = "as given",
                                         [LP_LOGITS_LM_HEAD_SHAPE] =
                                             "the prefill's lm_head GEMM shape"};
    char images[96] = "";
    if (r->util.vision_tokens > 0)
        snprintf(images, sizeof images, " text tokens + %lld image slots (vision mode %s)",
                 (long long)r->util.vision_tokens, lp_vision_mode_name(w->vision_mode));
    put(buf, len, "analytic FLOPs and bytes of llmprof model (%s) for batch %lld, prompt %lld%s, "
                  "%lld generated tokens (decode context %lld at the mean step), prefill logits "
                  "for %s (%s); bytes are lower bounds (weights read once per pass, KV once per "
                  "step); over the measured time of the stage occurrences; peaks of %s: %.0f "
                  "TFLOP/s dense %s, %.0f GB/s",
        r->opt.model->model_type, (long long)w->batch, (long long)w->prompt, images,
        (long long)w->generated, (long long)r->util.decode_context,
        w->prefill_logits_all ? "every prompt token" : "the last token",
        logits[r->util.logits_source], r->util.gpu.name, r->util.gpu.tflops[r->util.dtype],
        lp_dtype_name(r->util.dtype), r->util.gpu.mem_bw_gbs);
}

/* ---- kernels in depth ---- */

static const struct label deep_bounds[] = {
    [LP_DEEP_BOUND_COMPUTE] = {"compute", "compute"},
    [LP_DEEP_BOUND_MEMORY] = {"memory", "memory"},
    [LP_DEEP_BOUND_LATENCY] = {"latency", "latency"},
    [LP_DEEP_BOUND_SMALL] = {"small", "too small"},
    [LP_DEEP_BOUND_UNKNOWN] = {"unknown", "unknown"},
};

static const struct label deep_limits[LP_DEEP_LIMIT_COUNT] = {
    [LP_DEEP_LIMIT_REGISTERS] = {"registers", "registers"},
    [LP_DEEP_LIMIT_SHARED_MEM] = {"shared_memory", "shared memory"},
    [LP_DEEP_LIMIT_WARPS] = {"warps", "warps (block size)"},
    [LP_DEEP_LIMIT_BLOCKS] = {"blocks", "blocks per SM"},
    [LP_DEEP_LIMIT_BARRIERS] = {"barriers", "barriers"},
};

static const char *const deep_advice_keys[] = {
    [LP_DEEP_ADVICE_FEWER_FLOPS] = "fewer_flops", [LP_DEEP_ADVICE_TENSOR_CORES] = "tensor_cores",
    [LP_DEEP_ADVICE_FEWER_BYTES] = "fewer_bytes", [LP_DEEP_ADVICE_OCCUPANCY] = "occupancy",
    [LP_DEEP_ADVICE_STALL] = "stall",             [LP_DEEP_ADVICE_MORE_WORK] = "more_work",
    [LP_DEEP_ADVICE_NONE] = "none",
};

const char *lp_text_deep_bound(enum lp_deep_bound b) { return LABEL(deep_bounds, b, text); }
const char *lp_text_deep_bound_key(enum lp_deep_bound b) { return LABEL(deep_bounds, b, key); }
const char *lp_text_deep_limit(int l) { return LABEL(deep_limits, l, text); }
const char *lp_text_deep_limit_key(int l) { return LABEL(deep_limits, l, key); }

const char *lp_text_deep_advice_key(enum lp_deep_advice a)
{
    return (unsigned)a < sizeof deep_advice_keys / sizeof *deep_advice_keys ? deep_advice_keys[a]
                                                                           : "none";
}

/* what a stall reason means, for the next step */
static const char *stall_meaning(const char *reason)
{
    static const struct label m[] = {
        {"long_scoreboard", "waiting on global or local memory (L1TEX): fewer or coalesced "
                            "loads, or more warps in flight to hide them"},
        {"barrier", "waiting at __syncthreads: uneven work between warps of a block"},
        {"gmma", "waiting on warpgroup MMA (Hopper tensor cores): the math itself"},
        {"math_pipe_throttle", "a math pipe is saturated"},
        {"mio_throttle", "shared-memory instruction queue full: fewer shared-memory accesses"},
        {"short_scoreboard", "waiting on shared memory or special functions"},
        {"wait", "fixed-latency dependencies: more independent instructions per warp"},
        {"lg_throttle", "the global-memory queue is full: wider, fewer loads"},
        {"not_selected", "eligible but another warp issued: enough warps"},
        {"membar", "waiting at memory barriers"},
        {"sleeping", "warps asleep (nanosleep, spin-waits)"},
        {"branch_resolving", "branch targets: divergent control flow"},
        {"dispatch_stall", "the dispatcher stalled"},
        {"drain", "draining memory stores at exit"},
        {"imc_miss", "constant-cache misses"},
        {"no_instruction", "instruction-cache misses or branch targets"},
        {"tex_throttle", "the texture queue is full"},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (!strcmp(reason, m[i].key))
            return m[i].text;
    return "see Nsight Compute's Warp State section";
}

void lp_text_deep_advice(const struct lp_deep *d, const struct lp_deep_row *w, char *buf,
                         size_t len)
{
    const struct lp_ncu_kernel *k = w->j.k;
    const double *m = k->metric;
    char limits[96] = "";
    for (int l = 0; l < LP_DEEP_LIMIT_COUNT; l++)
        if (w->j.limits & (1u << l))
            snprintf(limits + strlen(limits), sizeof limits - strlen(limits), "%s%s",
                     limits[0] ? " and " : "", lp_text_deep_limit(l));
    const char *stall = w->j.stall[0] >= 0 ? d->ncu->stall_names[w->j.stall[0]] : NULL;
    buf[0] = 0;
    switch (w->advice) {
    case LP_DEEP_ADVICE_FEWER_FLOPS:
        put(buf, len, "SM at %.0f %% of peak (tensor pipe %.0f %%): the math bounds it; less of "
                      "it per result (FP8, fused epilogues) is what is left",
            m[LP_NCU_SOL_SM], m[LP_NCU_TENSOR]);
        return;
    case LP_DEEP_ADVICE_TENSOR_CORES:
        put(buf, len, "SM at %.0f %% of peak with the tensor pipe at %.0f %%: the work runs on "
                      "the CUDA cores in FP32; a tensor-core kernel (BF16/TF32) would lift its "
                      "ceiling", m[LP_NCU_SOL_SM], m[LP_NCU_TENSOR]);
        return;
    case LP_DEEP_ADVICE_FEWER_BYTES:
        put(buf, len, "memory at %.0f %% of peak (DRAM %.0f %%, %.2f TB/s)%s: move fewer bytes "
                      "(fuse with its neighbours, quantise weights, batch more tokens per read)",
            m[LP_NCU_SOL_MEMORY], m[LP_NCU_SOL_DRAM], m[LP_NCU_DRAM_BW] / 1e12,
            w->ridge > 0 && w->intensity < w->ridge ? ", under the ridge" : "");
        return;
    case LP_DEEP_ADVICE_OCCUPANCY:
        put(buf, len, "neither unit past 60 %% (SM %.0f %%, memory %.0f %%); warps wait on "
                      "memory (%s) and %s cap occupancy at %.0f %%: fewer registers or less "
                      "shared memory per block would put more warps in flight",
            m[LP_NCU_SOL_SM], m[LP_NCU_SOL_MEMORY], stall ? stall : "-", limits,
            m[LP_NCU_OCC_THEORETICAL]);
        return;
    case LP_DEEP_ADVICE_STALL:
        put(buf, len, "neither unit past 60 %% (SM %.0f %%, memory %.0f %%); the largest stall "
                      "is %s (%.1f cycles per issue): %s", m[LP_NCU_SOL_SM],
            m[LP_NCU_SOL_MEMORY], stall, k->stall[w->j.stall[0]], stall_meaning(stall));
        return;
    case LP_DEEP_ADVICE_MORE_WORK:
        put(buf, len, "%.0f blocks fill %.2f waves of the %.0f SMs (SM %.0f %%, memory %.0f %%): "
                      "too little work per launch; batch more tokens, fuse it with its "
                      "neighbours, or split its reduction (split-K)", m[LP_NCU_GRID],
            m[LP_NCU_WAVES], m[LP_NCU_SM_COUNT], m[LP_NCU_SOL_SM], m[LP_NCU_SOL_MEMORY]);
        return;
    case LP_DEEP_ADVICE_NONE:
        put(buf, len, "a metric the judgement needs is missing (profile with the sections "
                      "llmprof deep asks for)");
        return;
    }
}

/* ---- two runs compared ---- */

static const struct label diff_verdicts[] = {
    [LP_DIFF_VERDICT_MISSING] = {"missing", "not measured"},
    [LP_DIFF_VERDICT_SAME] = {"same", "no change"},
    [LP_DIFF_VERDICT_HIGHER] = {"higher", "higher"},
    [LP_DIFF_VERDICT_LOWER] = {"lower", "lower"},
    [LP_DIFF_VERDICT_UNSURE] = {"unsure", "unsure: too few values for an interval"},
};
static const char *const diff_bases[] = {
    [LP_DIFF_BASIS_BOOTSTRAP] = "bootstrap", [LP_DIFF_BASIS_MEANS] = "means",
    [LP_DIFF_BASIS_SINGLE] = "single", [LP_DIFF_BASIS_COUNTED] = "counted",
};
static const struct label diff_statuses[] = {
    [LP_DIFF_STATUS_SAME] = {"same", "no change"},
    [LP_DIFF_STATUS_CHANGED] = {"changed", "changed"},
    [LP_DIFF_STATUS_ADDED] = {"added", "added"},
    [LP_DIFF_STATUS_REMOVED] = {"removed", "removed"},
};
static const struct label diff_results[] = {
    [LP_DIFF_RULE_PASSED] = {"passed", "passed"},
    [LP_DIFF_RULE_NOISE] = {"noise", "passed: past the limit but inside the noise"},
    [LP_DIFF_RULE_FAILED] = {"failed", "FAILED"},
    [LP_DIFF_RULE_MISSING] = {"missing", "FAILED: not measured in both runs"},
    [LP_DIFF_RULE_UNSURE] = {"unsure", "FAILED: past the limit, with too few values to tell "
                                       "it from noise (more requests or steps would)"},
};
static const struct label diff_warnings[LP_DIFF_WARN_BITS] = {
    {"gpu", "the runs ran on different GPUs"},
    {"shapes", "the runs' GEMMs share under half of their weight shapes: other models, or "
               "another parallelism"},
    {"windows", "one run recorded capture windows (record --capture), the other all of it"},
    {"losses", "a run lost records, or has loss notes without a count (llmprof info says "
               "which): its figures may be short"},
    {"no_kernels", "a run recorded no kernels (record --light): kernel figures are missing"},
    {"altered", "a run's trace file was altered after it was written (chunks repeated, "
                "missing or reordered; llmprof info says how): its figures may be wrong"},
    {"gemm_unlisted", "a run has more GEMM shapes than its table lists (the costliest "
                      "1000): the shapes compared, and the weight shapes shared, are of those "
                      "listed"},
};
_Static_assert(LP_GEMM_ROWS_MAX == 1000, "the gemm_unlisted warning says 1000");

const char *lp_text_diff_verdict(enum lp_diff_verdict v) { return LABEL(diff_verdicts, v, text); }
const char *lp_text_diff_verdict_key(enum lp_diff_verdict v) { return LABEL(diff_verdicts, v, key); }
const char *lp_text_diff_basis_key(enum lp_diff_basis b)
{
    return (unsigned)b < sizeof diff_bases / sizeof *diff_bases ? diff_bases[b] : "unknown";
}
const char *lp_text_diff_status(enum lp_diff_status s) { return LABEL(diff_statuses, s, text); }
const char *lp_text_diff_status_key(enum lp_diff_status s) { return LABEL(diff_statuses, s, key); }
const char *lp_text_diff_result(enum lp_diff_rule_result r) { return LABEL(diff_results, r, text); }
const char *lp_text_diff_result_key(enum lp_diff_rule_result r) { return LABEL(diff_results, r, key); }
const char *lp_text_diff_warning(int bit) { return LABEL(diff_warnings, bit, text); }
const char *lp_text_diff_warning_key(int bit) { return LABEL(diff_warnings, bit, key); }

/* repeats: the figures compared (keys are repeats.json's) */
static const struct label repeat_figures[LP_REPEAT_FIGURE_COUNT] = {
    [LP_REPEAT_FIGURE_TTFT_NS] = {"ttft_ns", "TTFT (median)"},
    [LP_REPEAT_FIGURE_TPOT_NS] = {"tpot_ns", "TPOT (median)"},
    [LP_REPEAT_FIGURE_ITL_NS] = {"itl_ns", "ITL (median)"},
    [LP_REPEAT_FIGURE_PREFILL_TOKENS_S] = {"prefill_tokens_s", "prefill tokens/s"},
    [LP_REPEAT_FIGURE_DECODE_TOKENS_S] = {"decode_tokens_s", "decode tokens/s"},
    [LP_REPEAT_FIGURE_MFU] = {"mfu", "MFU (request)"},
    [LP_REPEAT_FIGURE_MBU] = {"mbu", "MBU (request)"},
    [LP_REPEAT_FIGURE_GPU_BUSY] = {"gpu_busy", "GPU busy"},
};
static const struct label repeat_stage_figures[LP_REPEAT_STAGE_COUNT] = {
    [LP_REPEAT_STAGE_WALL_NS] = {"wall_ns", "wall per occurrence"},
    [LP_REPEAT_STAGE_GPU_NS] = {"gpu_ns", "GPU time per occurrence"},
    [LP_REPEAT_STAGE_TOKENS_S] = {"tokens_s", "tokens/s"},
    [LP_REPEAT_STAGE_MFU] = {"mfu", "MFU"},
    [LP_REPEAT_STAGE_MBU] = {"mbu", "MBU"},
    [LP_REPEAT_STAGE_J_PER_TOKEN] = {"j_per_token", "energy per token (J)"},
};
static const struct label repeats_verdicts[] = {
    [LP_REPEATS_VERDICT_WITHIN] = {"within", "within"},
    [LP_REPEATS_VERDICT_OUTSIDE] = {"outside", "outside"},
    [LP_REPEATS_VERDICT_TOO_FEW] = {"too_few", "too few values to judge"},
};

const char *lp_text_repeat_figure(int f) { return LABEL(repeat_figures, f, text); }
const char *lp_text_repeat_figure_key(int f) { return LABEL(repeat_figures, f, key); }
const char *lp_text_repeat_stage_figure(int f) { return LABEL(repeat_stage_figures, f, text); }
const char *lp_text_repeat_stage_figure_key(int f) { return LABEL(repeat_stage_figures, f, key); }
const char *lp_text_repeats_verdict(enum lp_repeats_verdict v)
{
    return LABEL(repeats_verdicts, v, text);
}
const char *lp_text_repeats_verdict_key(enum lp_repeats_verdict v)
{
    return LABEL(repeats_verdicts, v, key);
}
