/* The LLMPROF_* environment's one table and its parser (see llmprof/envconfig.h). Shared by
 * the collector, which parses it once at its start, and the CLI, which sets the collector's
 * variables by these names; docs/collector.md's table is written from it. One rule for every
 * bad value: warned about once, the default used (below the bounds of a RAISE variable: the
 * bound, unwarned). */
#include "llmprof/envconfig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/trace.h"

static const char *const graphs_words[] = {"replay", "node", NULL};
static const char *const launch_words[] = {"callbacks", "activity", "driver", NULL};

#define FIELD(f) offsetof(struct lp_envconfig, f)
/* SOURCE: the loss source of its warning (LP_LOSS_SOURCE_...) */
#define COLLECTOR(var, type_, field, source) [LP_ENVCONFIG_VAR_##var] = {                      \
    .name = "LLMPROF_" #var, .type = LP_ENVCONFIG_TYPE_##type_,                                 \
    .reader = LP_ENVCONFIG_READER_COLLECTOR, .offset = FIELD(field),                            \
    .loss_source = LP_LOSS_SOURCE_##source
#define CLI(var, type_) [LP_ENVCONFIG_VAR_##var] = {                                           \
    .name = "LLMPROF_" #var, .type = LP_ENVCONFIG_TYPE_##type_,                                 \
    .reader = LP_ENVCONFIG_READER_CLI

const struct lp_envconfig_entry lp_envconfig_table[LP_ENVCONFIG_VAR_COUNT] = {
    COLLECTOR(OUT, TEXT, out, COLLECTOR), .def_text = ".", .lands = "inject.c (sink.c)",
        .doc = "directory for the trace (set by `record`)"},
    COLLECTOR(QUIET, FLAG, quiet, COLLECTOR), .lands = "inject.c (log.c)",
        .doc = "`1` (`record --quiet`): no warnings on stderr (the trace still gets them)"},
    COLLECTOR(LIGHT, FLAG, light, COLLECTOR), .lands = "inject.c",
        .doc = "`1`: activity kinds marker, device and overhead only (no kernel, copy or API "
               "records); `record --light` also sets `LLMPROF_PM_SAMPLING` (or "
               "`LLMPROF_COUNTERS`) and `LLMPROF_GEMM=0`"},
    COLLECTOR(KINDS, TEXT, kinds, COLLECTOR), .lands = "inject.c (activity.c)",
        .doc = "comma list overriding what is recorded: `kernel, marker (nvtx), device, overhead, "
               "memcpy, memset, memory, api` (unset: as `LLMPROF_LIGHT` says; a bad list is "
               "warned about and ignored)"},
    COLLECTOR(NVML_HZ, NUMBER, nvml_hz, COLLECTOR), .def = 20, .min = 0, .max = INFINITY,
        .lands = "nvml.c", .doc = "NVML samples per second (0: off)"},
    COLLECTOR(FLUSH_MS, NUMBER, flush_ms, COLLECTOR), .def = 500, .min = 10, .max = 4294967295.0,
        .flags = LP_ENVCONFIG_FLAG_RAISE, .lands = "inject.c",
        .doc = "flush period in milliseconds (a fraction is cut)"},
    COLLECTOR(BUFFER_KB, COUNT, buffer_kb, COLLECTOR), .def = 4096, .min = 64, .max = 1048576,
        .flags = LP_ENVCONFIG_FLAG_RAISE, .lands = "activity.c",
        .doc = "size of CUPTI's activity buffers (KiB)"},
    COLLECTOR(MAX_BUFFERS, COUNT, max_buffers, COLLECTOR), .def = 64, .min = 2, .max = 65536,
        .flags = LP_ENVCONFIG_FLAG_RAISE, .lands = "activity.c",
        .doc = "bound of the activity buffer pool"},
    COLLECTOR(DEVICE_BUFFER_KB, COUNT, device_buffer_kb, COLLECTOR), .def = 0, .min = 0,
        .max = 1048576, .lands = "activity.c",
        .doc = "size of CUPTI's device buffers (KiB; 0: CUPTI's 3.2 MB)"},
    COLLECTOR(DEVICE_BUFFER_LIMIT, COUNT, device_buffer_limit, COLLECTOR), .def = 0, .min = 0,
        .max = 100000, .lands = "activity.c",
        .doc = "most device buffers per context (0: CUPTI's 250)"},
    COLLECTOR(DEVICE_BUFFERS, COUNT, device_buffers, COLLECTOR), .def = 0, .min = 0, .max = 10000,
        .lands = "activity.c",
        .doc = "device buffers a context makes at its creation, fewer than the most (0: "
               "CUPTI's 3)"},
    COLLECTOR(SUBSCRIBE, FLAG, subscribe, COLLECTOR), .def = 1, .lands = "activity.c",
        .doc = "`0`: do not hold CUPTI's subscriber slot (torch.profiler may then take CUPTI "
               "over mid-run)"},
    COLLECTOR(CUPTI_PATH, TEXT, cupti_path, COLLECTOR), .lands = "cupti_api.c",
        .doc = "force a CUPTI library (unset: the loaded one, the loader's path, `$CUDA_HOME`, "
               "`/usr/local/cuda`)"},
    COLLECTOR(NVML_PATH, TEXT, nvml_path, COLLECTOR), .lands = "nvml.c",
        .doc = "force an NVML library (unset: `libnvidia-ml.so.1`)"},
    COLLECTOR(GRAPH_NODES, FLAG, graph_nodes, COLLECTOR), .def = 1, .lands = "graph.c",
        .doc = "`0`: record no CUDA graph node records (replayed kernels then keep no GEMM shape "
               "or capture range)"},
    COLLECTOR(GEMM, FLAG, gemm, COLLECTOR), .def = 1, .lands = "gemm.c",
        .doc = "`0`: record no GEMM calls even when preloaded (`record --no-gemm` also leaves "
               "`LD_PRELOAD` alone)"},
    COLLECTOR(COUNTERS, TEXT, counters, COUNTERS), .flags = LP_ENVCONFIG_FLAG_ZERO_OFF,
        .lands = "counters.c, inject.c",
        .doc = "`1`: hardware counters with the default tensor dtypes; or a dtype list "
               "(`bf16,fp16`); unset or `0`: off"},
    COLLECTOR(COUNTER_RANGES, TEXT, counter_ranges, COUNTERS),
        .def_text = "^(prefill|decode|vision|generate)", .lands = "counters.c",
        .doc = "extended regex (case-insensitive) of the NVTX range names that cut segments "
               "(`record` sets the report's stage rules)"},
    COLLECTOR(COUNTER_SEGMENTS, COUNT, counter_segments, COUNTERS), .def = 512, .min = 2,
        .max = 65536, .lands = "counters.c",
        .doc = "segments per counter-data image: a decode every that many"},
    COLLECTOR(GRAPHS, WORD, graphs, COLLECTOR), .words = graphs_words,
        .lands = "inject.c (activity.c)",
        .doc = "`replay`: one record per CUDA graph replay; `node`: a record per replayed kernel"},
    COLLECTOR(CAPTURE, TEXT, capture, COLLECTOR), .lands = "inject.c, window.c (capture.c)",
        .doc = "`cuda-profiler`, `nvtx:REGEX[@FIRST[-LAST]][/EVERY]`, "
               "`graphs[@FIRST[-LAST]][/EVERY]` or `signal`: kernels, launch calls and GEMM "
               "calls recorded only inside capture windows (unset or `all`: all run)"},
    COLLECTOR(LAUNCH, WORD, launch, COLLECTOR), .words = launch_words, .lands = "launch.c",
        .doc = "`activity`: launch calls from CUPTI's API activity records instead of callbacks "
               "(for comparison; they cannot be switched by windows); `driver`: callbacks on "
               "the driver's calls only (two per runtime launch instead of four; records name "
               "the driver's calls; a benchmark mode: docs/benchmarks.md)"},
    COLLECTOR(FINALIZE, FLAG, finalize, COLLECTOR), .lands = "inject.c (window.c)",
        .doc = "`1` (`record --finalize`): with capture windows, finalize CUPTI between them "
               "and set it up again (see Capture windows)"},
    COLLECTOR(FINALIZE_AFTER_MS, COUNT, finalize_after_ms, COLLECTOR), .def = 1000, .min = 0,
        .max = 3600000, .lands = "window.c",
        .doc = "how long after a window closed the finalize is tried (ms)"},
    COLLECTOR(PM_SAMPLING, NUMBER, pm_sampling_us, PM), .def = 0, .min = 10, .max = 100000,
        .flags = LP_ENVCONFIG_FLAG_ZERO_OFF, .lands = "pmsample.c, inject.c",
        .doc = "PM sampling interval in microseconds"},
    COLLECTOR(PM_BUFFER_MB, NUMBER, pm_buffer_mb, PM), .def = 64, .min = 1, .max = 4096,
        .lands = "pmsample.c", .doc = "PM sampling hardware buffer (MiB; a fraction is cut)"},
    COLLECTOR(TEST_HOST, TEXT, test_host, COLLECTOR), .lands = "inject.c (sink.c)",
        .doc = "tests only: the host name the trace gives (its file name too), to simulate a "
               "second host on one machine (tests/gpu/multi_gpu.sh hosts)"},
    COLLECTOR(TEST_CLOCK_SHIFT_NS, COUNT, test_clock_shift_ns, COLLECTOR), .def = 0, .min = 0,
        .max = 1e15, .lands = "inject.c (sink.c)",
        .doc = "tests only: nanoseconds added to every time the trace holds, as a host whose "
               "clock is that far ahead would record them (`report` must find the offset)"},
    CLI(LIB, TEXT), .lands = "`llmprof record`",
        .doc = "the collector to inject, instead of `../lib/libllmprof.so` beside `llmprof`"},
    CLI(EXPORT_WARN_MIB, COUNT), .def = 1024, .min = 1, .max = 1099511627776.0,
        .lands = "`llmprof export`",
        .doc = "estimated size from which `export` announces what it writes first (MiB; a bad "
               "value: the default, unwarned)"},
    CLI(MEM_AVAILABLE_MIB, COUNT), .def = 0, .min = 1, .max = 1099511627776.0,
        .flags = LP_ENVCONFIG_FLAG_ZERO_OFF, .lands = "`llmprof report`",
        .doc = "the memory `report` counts as available (MiB), against which it warns that an "
               "analysis may not fit; 0: no warning; unset (or a bad value): the system's "
               "MemAvailable, less where the process's cgroup limits leave less "
               "(docs/report-memory.md)"},
};

const char *lp_envconfig_name(enum lp_envconfig_var var)
{
    return (unsigned)var < LP_ENVCONFIG_VAR_COUNT ? lp_envconfig_table[var].name : NULL;
}

void lp_envconfig_default_text(const struct lp_envconfig_entry *e, char *buf, size_t len)
{
    if (e->type == LP_ENVCONFIG_TYPE_TEXT)
        snprintf(buf, len, "%s", e->def_text ? e->def_text : "unset");
    else if (e->type == LP_ENVCONFIG_TYPE_WORD)
        snprintf(buf, len, "%s", e->words[(size_t)e->def]);
    else if ((e->flags & LP_ENVCONFIG_FLAG_ZERO_OFF) && e->def == 0)
        snprintf(buf, len, "0 (off)");
    else
        snprintf(buf, len, "%.15g", e->def);
}

void lp_envconfig_bounds_text(const struct lp_envconfig_entry *e, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    if (e->type == LP_ENVCONFIG_TYPE_WORD) {
        for (const char *const *w = e->words; *w && n < len; w++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", w == e->words ? "" : ", ", *w);
        return;
    }
    if (e->type == LP_ENVCONFIG_TYPE_FLAG) {
        snprintf(buf, len, "0 or more (more than 0: on)");
        return;
    }
    if (e->type != LP_ENVCONFIG_TYPE_NUMBER && e->type != LP_ENVCONFIG_TYPE_COUNT)
        return;
    const char *off = e->flags & LP_ENVCONFIG_FLAG_ZERO_OFF ? "0 (off) or " : "";
    if (isinf(e->max))
        n = (size_t)snprintf(buf, len, "%s%.15g or more", off, e->min);
    else
        n = (size_t)snprintf(buf, len, "%s%.15g–%.15g", off, e->min, e->max);
    if ((e->flags & LP_ENVCONFIG_FLAG_RAISE) && n < len)
        snprintf(buf + n, len - n, ", less raised to %.15g", e->min);
}

/* V as a non-negative decimal number: NULL, or why not. strtod's hex, nan and inf, trailing
 * text and overflow are refused. */
static const char *read_number(const char *v, double *d)
{
    const char *p = v + strspn(v, " \t\n\v\f\r+-"); /* what strtod passes over */
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return "not a decimal number";
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || x < 0)
        return "not a non-negative number";
    *d = x;
    return NULL;
}

/* Whether D (not negative) is whole: every double from 2^53 on is. */
static int is_whole(double d) { return d >= 9007199254740992.0 || (double)(uint64_t)d == d; }

/* Reads V for E into *D (flag, number, count): NULL, or why it is bad; WHY_BUF holds a
 * reason that cites a bound. */
static const char *read_numeric(const struct lp_envconfig_entry *e, const char *v, double *d,
                                char *why_buf, size_t len)
{
    const char *why = read_number(v, d);
    if (why || e->type == LP_ENVCONFIG_TYPE_FLAG)
        return why;
    if (e->type == LP_ENVCONFIG_TYPE_COUNT && !is_whole(*d))
        return "not a whole number";
    if ((e->flags & LP_ENVCONFIG_FLAG_ZERO_OFF) && *d == 0)
        return NULL;
    if (*d > e->max) {
        snprintf(why_buf, len, "more than %.15g", e->max);
        return why_buf;
    }
    if (*d < e->min) {
        if (e->flags & LP_ENVCONFIG_FLAG_RAISE) {
            *d = e->min;
            return NULL;
        }
        snprintf(why_buf, len, "less than %.15g", e->min);
        return why_buf;
    }
    return NULL;
}

/* Stores V (NULL: the default) of E at its field of OUT: NULL, or why V is bad (then the
 * default is stored). */
static const char *store(const struct lp_envconfig_entry *e, const char *v,
                         struct lp_envconfig *out, char *why_buf, size_t len)
{
    char *field = (char *)out + e->offset;
    const char *why = NULL;
    if (e->type == LP_ENVCONFIG_TYPE_TEXT) {
        if (v && (e->flags & LP_ENVCONFIG_FLAG_ZERO_OFF) && !strcmp(v, "0"))
            v = NULL;
        *(const char **)field = v ? v : e->def_text;
        return NULL;
    }
    if (e->type == LP_ENVCONFIG_TYPE_WORD) {
        int i = 0;
        while (v && e->words[i] && strcmp(e->words[i], v))
            i++;
        *(int *)field = v && e->words[i] ? i : (int)e->def;
        if (!v || e->words[i])
            return NULL;
        char words[96];
        lp_envconfig_bounds_text(e, words, sizeof words);
        snprintf(why_buf, len, "not one of %s", words);
        return why_buf;
    }
    double d = e->def;
    if (v && (why = read_numeric(e, v, &d, why_buf, len)) != NULL)
        d = e->def;
    if (e->type == LP_ENVCONFIG_TYPE_FLAG)
        *(int *)field = d > 0;
    else if (e->type == LP_ENVCONFIG_TYPE_NUMBER)
        *(double *)field = d;
    else
        *(uint64_t *)field = (uint64_t)d;
    return why;
}

size_t lp_envconfig_parse(struct lp_envconfig *out, lp_envconfig_getter get,
                          lp_envconfig_warner warn, void *ctx)
{
    memset(out, 0, sizeof *out);
    size_t bad = 0;
    for (int i = 0; i < LP_ENVCONFIG_VAR_COUNT; i++) {
        const struct lp_envconfig_entry *e = &lp_envconfig_table[i];
        if (e->reader != LP_ENVCONFIG_READER_COLLECTOR)
            continue;
        const char *v = get ? get(e->name) : getenv(e->name);
        if (v && !*v)
            v = NULL; /* empty: unset */
        char why_buf[160];
        const char *why = store(e, v, out, why_buf, sizeof why_buf);
        if (!why)
            continue;
        bad++;
        if (warn) {
            char def[64], msg[512];
            lp_envconfig_default_text(e, def, sizeof def);
            snprintf(msg, sizeof msg, "ignoring %s=%.80s: %s; the default, %s, is used", e->name,
                     v, why, def);
            warn(ctx, (enum lp_envconfig_var)i, msg);
        }
    }
    return bad;
}
