/* llmprof record: runs a command with the collector injected and leaves a run directory
 * (one trace per CUDA process + meta.json). Everything that can be wrong with the
 * invocation is checked before the command starts; what could not be written is checked
 * after it ends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h"
#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/capture.h"
#include "llmprof/envconfig.h"
#include "llmprof/trace.h"
#include "llmprof/version.h"

extern char **environ;

static int parse_nvml_hz(const struct lp_cli_opt *o, void *value, const char *cmd,
                         const char *opt, const char *arg)
{
    (void)o;
    char *end = NULL;
    if (!arg) {
        lp_cli_error(cmd, "%s needs a number", opt);
        return -1;
    }
    errno = 0;
    double hz = strtod(arg, &end);
    /* written so that NaN, which fails every comparison, fails the check */
    if (errno || !*arg || *end || !(hz >= 0 && hz <= 1000)) {
        lp_cli_error(cmd, "%s takes a number from 0 to 1000, not '%s'", opt, arg);
        return -1;
    }
    *(double *)value = hz;
    return 0;
}

static int parse_counter_dtypes(const struct lp_cli_opt *o, void *value, const char *cmd,
                                const char *opt, const char *arg)
{
    (void)o;
    char err[256];
    unsigned bits = 0;
    if (!arg || !*arg) {
        lp_cli_error(cmd, "%s needs a list of tensor dtypes, e.g. bf16,fp8", opt);
        return -1;
    }
    if (lp_counter_parse_dtypes(arg, &bits, err, sizeof err) != LP_OK) {
        lp_cli_error(cmd, "%s: %s", opt, err);
        return -1;
    }
    *(const char **)value = arg;
    return 0;
}

static int parse_counter_ranges(const struct lp_cli_opt *o, void *value, const char *cmd,
                                const char *opt, const char *arg)
{
    (void)o;
    if (!arg || !*arg) {
        lp_cli_error(cmd, "%s needs a regular expression, e.g. '^(prefill|decode)'", opt);
        return -1;
    }
    regex_t re;
    int rc = regcomp(&re, arg, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc != 0) {
        char err[256];
        regerror(rc, &re, err, sizeof err);
        lp_cli_error(cmd, "%s '%s' is not a regular expression: %s", opt, arg, err);
        return -1;
    }
    regfree(&re);
    *(const char **)value = arg;
    return 0;
}

static int parse_pm_sampling(const struct lp_cli_opt *o, void *value, const char *cmd,
                             const char *opt, const char *arg)
{
    (void)o;
    char *end = NULL;
    errno = 0;
    double us = arg ? strtod(arg, &end) : -1;
    if (!arg || errno || !*arg || *end || !(us >= 10 && us <= 100000)) {
        lp_cli_error(cmd, "%s takes an interval in microseconds from 10 to 100000 (200 is a "
                     "good start), not '%s'", opt, arg ? arg : "");
        return -1;
    }
    *(double *)value = us;
    return 0;
}

#define OPT(field) offsetof(struct lp_cli_record_opts, field)

/* --light's PM sampling interval: 5,000 samples a second, about 5 bytes each in a trace
 * (measured on an H200: tests/fixtures/pm-hf-llama-only) */
#define LIGHT_PM_SAMPLING_US 200

const struct lp_cli_opt lp_cli_record_options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof record [-o DIR] [--force] [--nvml-hz N] [--light] [--no-gemm] [--quiet]\n"
    "                      [--counters] [--counter-dtypes LIST] [--counter-ranges REGEX]\n"
    "                      [--pm-sampling US] [--capture MODE [--finalize]]\n"
    "                      [--graphs replay|node] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with llmprof's CUPTI collector injected (CUDA_INJECTION64_PATH) and writes a\n"
    "run directory: one trace per process that used CUDA (children are followed; files are\n"
    "named trace[.rank<R>].<host>.<pid>.lpt) and meta.json (command, directory, relevant\n"
    "environment, versions, times, exit status). Standard input and output pass through;\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to llmprof are passed on to CMD. CMD may state\n"
    "what it was asked to do: a JSON object (at most 64 KiB) written, before CMD ends, to\n"
    "the file LLMPROF_REQUEST_FILE names is kept in meta.json as \"request\".\n"
    "\n"
    "Exit status: CMD's (128+N when a signal N ended it). When CMD exited 0 but its run could\n"
    "not be written (meta.json could not be written, or a trace is empty: nothing was written,\n"
    "as on a full disk), llmprof says why and exits 1. CMD itself is never affected.\n"
    "\n"
    "Recorded: kernels (grid, block, registers, shared memory, stream, graph), memcpy and\n"
    "memset, device memory allocations, NVTX ranges (C and PyTorch), the launch, copy and\n"
    "synchronise calls that tie each kernel to its thread, NVML samples (power, energy,\n"
    "clocks, utilisation, temperature, clock-event reasons, memory), every cuBLAS and\n"
    "cuBLASLt GEMM call (M, N, K, batch, transposes, types, compute type; algorithm and tile\n"
    "from its shape's first call) and every loss. GEMM calls are seen by preloading the\n"
    "collector (LD_PRELOAD), so they are missed in programs that link cuBLAS statically.\n"
    "\n"
    "options:\n"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--output", .alias = "-o", .arg = "DIR",
     .help = "run directory (default: llmprof-YYYYmmdd-HHMMSS); must be new or\n"
             "hold no run",
     .off = OPT(out), .missing = "a directory", .empty = "a directory"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--force",
     .help = "replace the run already in DIR: removes the files llmprof wrote there\n"
             "(trace*.lpt, its meta.json, report files), no others, and only once\n"
             "the new run has started (until then they are kept aside); refuses a\n"
             "meta.json or *.lpt file that llmprof did not write",
     .off = OPT(force), .set = 1},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--nvml-hz", .arg = "N",
     .help = "NVML samples per second per GPU (default 20; 0 turns NVML off)",
     .off = OPT(nvml_hz), .parse = parse_nvml_hz},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--light",
     .help = "the cheap way to watch a long run: NVTX ranges, the GPU's throughputs\n"
             "sampled every 200 us (--pm-sampling) and NVML; no kernel, copy or\n"
             "API records and no GEMM capture (see below)",
     .off = OPT(light), .set = 1},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--no-gemm",
     .help = "do not preload the collector to see cuBLAS GEMM calls", .off = OPT(gemm),
     .set = 0},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--gemm",
     .help = "see GEMM calls even with --light (no kernels are then recorded to\n"
             "tie them to: see docs/collector.md)",
     .off = OPT(gemm), .set = 1},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--quiet",
     .help = "no collector warnings on stderr (they stay in the trace)", .off = OPT(quiet),
     .set = 1},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--counters",
     .help = "also count tensor-core FLOPs and DRAM bytes in hardware, per stage\n"
             "range (CUPTI range profiler: one pass, no replay; see below)",
     .off = OPT(counters), .set = 1},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--counter-dtypes", .arg = "LIST",
     .help = "tensor dtypes to count, of bf16, fp16, fp8, tf32 (default bf16,fp8,\n"
             "the pair that fits one pass on an H100/H200); implies --counters",
     .off = OPT(counter_dtypes), .parse = parse_counter_dtypes},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--counter-ranges", .arg = "REGEX",
     .help = "NVTX ranges whose start and end cut the counted segments\n"
             "(default: the report's stage rules); implies --counters",
     .off = OPT(counter_ranges), .parse = parse_counter_ranges},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--pm-sampling", .arg = "US",
     .help = "instead of --counters, sample the GPU's throughputs every US\n"
             "microseconds (CUPTI PM sampling; see below)",
     .off = OPT(pm_sampling_us), .parse = parse_pm_sampling},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--capture", .arg = "MODE",
     .help = "when kernels are recorded: all (default), cuda-profiler,\n"
             "nvtx:REGEX[@FIRST[-LAST]][/EVERY], graphs[@FIRST[-LAST]][/EVERY] or\n"
             "signal (see below)",
     .off = OPT(capture), .missing = "all, cuda-profiler, nvtx:REGEX..., graphs... or signal"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--finalize",
     .help = "with --capture: finalize CUPTI between windows, so that a program with\n"
             "one CUDA thread and no CUDA graph gets back what kernel tracing keeps\n"
             "costing there once switched off (docs/collector.md)",
     .off = OPT(finalize), .set = 1},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--graphs", .arg = "MODE",
     .help = "CUDA graph replays: replay (default) records each replay whole, node\n"
             "records each of its kernels (see below)",
     .off = OPT(graphs), .missing = "replay or node"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--counters-only",
     .help = "the same as --light", .off = OPT(light), .set = 1},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h", .help = "this text"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "\n"
    "Hardware counters (--counters): from the first NVTX range that matches the stage rules,\n"
    "the start and end of every such range (on that thread) cut the run into segments, and\n"
    "each segment's GPU work is counted: GPU time, tensor-core FLOPs by dtype, DRAM and L2\n"
    "bytes. A metric set that needs more than one pass is refused; counters held by another\n"
    "tool, or restricted to administrators by the driver, leave the run as it is with one\n"
    "warning. The counter data is decoded every 512 segments, which waits for the GPU.\n"
    "\n"
    "PM sampling (--pm-sampling US): the GPU reads its tensor-pipe, DRAM, L2, SM-issue and\n"
    "idle-SM throughputs every US microseconds, whatever runs, also in programs without\n"
    "stage ranges; the report draws them over time and averages them per stage. The GPU's\n"
    "counters serve one of the two at a time: choose --counters or --pm-sampling.\n"
    "\n"
    "Light (--light): CUPTI's kernel tracing costs about a microsecond of CPU time per\n"
    "launch, which launch-bound decode pays on every kernel; --light records no kernels and\n"
    "adds no measurable time per launch (docs/benchmarks.md). The report then has stage\n"
    "times from NVTX, the GPU's throughputs per stage from PM sampling, and no kernel,\n"
    "operator or GEMM tables; decode steps (TPOT) only from range names (tokens=N, or one\n"
    "range per step) or report --decode-tokens. --light --counters counts per stage with\n"
    "the range profiler instead, which costs about as much per launch as kernel tracing.\n"
    "\n"
    "Capture windows (--capture MODE): kernels, copies, allocations, launch calls and GEMM\n"
    "calls are recorded only inside windows; NVTX ranges, NVML and device facts all run.\n"
    "It keeps the trace to the spans that matter; it does not make the rest free (on the\n"
    "H200 a CUDA-graph decode recording one step in eight cost what a full record costs,\n"
    "+0.5 %: docs/benchmarks.md). MODE:\n"
    "  cuda-profiler   from the program's cudaProfilerStart to its cudaProfilerStop, every\n"
    "                  time (torch.cuda.profiler.start() and stop(); vLLM's \"cuda\" profiler),\n"
    "                  as nsys --capture-range=cudaProfilerApi --capture-range-end=repeat\n"
    "  nvtx:REGEX[@FIRST[-LAST]][/EVERY]   NVTX ranges whose name matches REGEX (extended,\n"
    "                  any case), counted from 1 in the order they open: occurrences FIRST to\n"
    "                  LAST, every EVERY-th, each from its push to its pop; e.g.\n"
    "                  nvtx:'^decode step'@100-131 or nvtx:'^step$'/8 (one step in 8)\n"
    "  graphs[@FIRST[-LAST]][/EVERY]   decode steps counted by CUDA graph launches, for\n"
    "                  programs that replay graphs and name no steps: a step begins when a\n"
    "                  graph launched in the step before is launched again (one graph per\n"
    "                  step, or its pieces in order); steps FIRST to LAST, every EVERY-th,\n"
    "                  each from its first launch to the next step's (the last chosen one\n"
    "                  holds what follows it till a graph is launched again); graphs@100-131\n"
    "  signal          kill -USR1 PID opens a window, the next SIGUSR1 closes it (a program\n"
    "                  that handles SIGUSR1 itself keeps it, and everything is recorded)\n"
    "The report's stage and step figures then come from the windows only, and say so.\n"
    "\n"
    "CUDA graphs (--graphs MODE): by default each replay of a graph is one record, from its\n"
    "first kernel's start to its last kernel's end, and kernels launched outside graphs are\n"
    "recorded one by one. Tracing every node of a replay slows the replay itself (+6.3 %\n"
    "per token on an H200 CUDA-graph decode, against +0.5 % whole: docs/benchmarks.md), so\n"
    "TPOT would read slower than it is. --graphs node records each replayed kernel, with\n"
    "its GEMM shape and the range it was captured in, for the kernel and GEMM tables.\n"
    "\n"    "examples:\n"
    "  llmprof record -o run1 -- python3 infer.py --max-new-tokens 128\n"
    "  llmprof record --counters -o run3 -- python3 infer.py\n"
    "  llmprof record --light -o run2 ./my_cuda_app\n"
    "  llmprof info run1\n"},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd record_cmd = {
    .name = "record", .opts = lp_cli_record_options, .help_col = 21, .stops_at_command = 1,
};

void lp_cli_record_init(struct lp_cli_record_opts *o)
{
    memset(o, 0, sizeof *o);
    o->nvml_hz = 20;
    o->gemm = -1;
}

static int find_collector_at(char *path, size_t len)
{
    const char *env = getenv(lp_envconfig_name(LP_ENVCONFIG_VAR_LIB));
    if (env && *env) {
        snprintf(path, len, "%s", env);
        return access(path, R_OK) == 0 ? 0 : -1;
    }
    char dir[PATH_MAX];
    if (lp_cli_exe_dir(dir, sizeof dir) != 0)
        return -1;
    const char *rel[] = {"../lib/libllmprof.so", "libllmprof.so", "../lib64/libllmprof.so"};
    for (size_t i = 0; i < 3; i++) {
        char candidate[PATH_MAX + 64];
        snprintf(candidate, sizeof candidate, "%s/%s", dir, rel[i]);
        if (realpath(candidate, path) && access(path, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* The collector to inject into PATH: 0, or -1 said */
static int find_collector(char *path, size_t len)
{
    if (find_collector_at(path, len) == 0)
        return 0;
    lp_cli_error("record", "collector libllmprof.so not found next to this executable "
                           "(../lib/) or in $%s; was llmprof built with CUPTI?",
                 lp_envconfig_name(LP_ENVCONFIG_VAR_LIB));
    return -1;
}

/* The collector goes first in LD_PRELOAD, so the program's cuBLAS calls reach its GEMM
 * wrappers; CUDA later finds the same loaded copy through CUDA_INJECTION64_PATH. */
static int preload(const char *lib)
{
    const char *prev = getenv("LD_PRELOAD");
    char buf[8192];
    int n = prev && *prev ? snprintf(buf, sizeof buf, "%s:%s", lib, prev)
                          : snprintf(buf, sizeof buf, "%s", lib);
    if (n < 0 || (size_t)n >= sizeof buf)
        return -1;
    return setenv("LD_PRELOAD", buf, 1);
}

/* --force: the previous run's files, moved aside (".NAME.old.PID.N" beside each) until the
 * new run has started, then removed; put back if it cannot start. */
struct old_file {
    char *path, *side;
    int kind;                     /* 0 meta.json, 1 a trace, 2 a report file */
};
struct old_run {
    struct old_file *v;
    size_t n, cap;
    char **dirs;                  /* report directories per trace, removed when left empty */
    size_t n_dirs;
    size_t moved;                 /* v[0..moved) are aside */
};

static int old_add(struct old_run *r, const char *dir, const char *name, int kind)
{
    char path[PATH_MAX + 256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0; /* llmprof writes regular files only */
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        struct old_file *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    if (!(r->v[r->n].path = strdup(path)))
        return -1;
    r->v[r->n].side = NULL;
    r->v[r->n++].kind = kind;
    return 0;
}

static int old_add_reports(struct old_run *r, const char *dir)
{
    for (const struct lp_cli_report_output *f = lp_cli_report_outputs(); f->name; f++)
        if (old_add(r, dir, f->name, 2) != 0)
            return -1;
    return 0;
}

/* Lists what --force replaces in DIR, which holds a run: its traces (trace*.lpt),
 * meta.json, report's files, and report's directory per trace (named after it). Refuses
 * (-1 with a message) a trace llmprof did not name; nothing is moved yet. */
static int old_collect(const char *dir, struct old_run *r)
{
    char **traces = NULL;
    int n = lp_cli_list_traces(dir, &traces), rc = 0;
    size_t sl = strlen(LP_TRACE_SUFFIX);
    if (n < 0) {
        lp_cli_error("record", "--force: cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n && !rc; i++) {
        const char *base = strrchr(traces[i], '/') + 1;
        struct stat st;
        if (strncmp(base, "trace", 5) != 0 || lstat(traces[i], &st) != 0 || !S_ISREG(st.st_mode)) {
            lp_cli_error("record", "output %s holds %s, which llmprof did not write and --force "
                                   "leaves; choose another -o", dir, base);
            rc = -1;
        }
    }
    for (int i = 0; i < n && !rc; i++) {
        char sub[PATH_MAX + 256];
        struct stat st;
        snprintf(sub, sizeof sub, "%.*s", (int)(strlen(traces[i]) - sl), traces[i]);
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            char **v = realloc(r->dirs, (r->n_dirs + 1) * sizeof *v);
            if (!v || !(v[r->n_dirs] = strdup(sub)) || old_add_reports(r, sub) != 0)
                rc = -2;
            if (v)
                r->dirs = v;
            if (v && v[r->n_dirs])
                r->n_dirs++;
        }
        if (!rc && old_add(r, dir, strrchr(traces[i], '/') + 1, 1) != 0)
            rc = -2;
    }
    lp_cli_free_list(traces, n);
    if (!rc && (old_add(r, dir, "meta.json", 0) != 0 || old_add_reports(r, dir) != 0))
        rc = -2;
    /* llmprof deep's results measured the previous run's program */
    char deep[PATH_MAX + 16];
    struct stat st;
    snprintf(deep, sizeof deep, "%s/deep", dir);
    if (!rc && lstat(deep, &st) == 0 && S_ISDIR(st.st_mode)) {
        char **v = realloc(r->dirs, (r->n_dirs + 1) * sizeof *v);
        if (v)
            r->dirs = v;
        if (!v || !(v[r->n_dirs] = strdup(deep)))
            rc = -2;
        else
            r->n_dirs++;
        for (size_t i = 0; !rc && lp_cli_deep_files[i]; i++)
            if (old_add(r, deep, lp_cli_deep_files[i], 2) != 0)
                rc = -2;
    }
    if (rc == -2)
        lp_cli_error("record", "out of memory");
    return rc ? -1 : 0;
}

/* Moves PATH to SIDE, never over a file that is there: RENAME_NOREPLACE, or a look first
 * where the file system lacks it. */
static int claim_by_rename(const char *side, void *path)
{
    int rc = renameat2(AT_FDCWD, path, AT_FDCWD, side, RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
        struct stat st;
        rc = lstat(side, &st) == 0 ? (errno = EEXIST, -1) : rename(path, side);
    }
    return rc;
}

/* F's file aside, under a free name ".NAME.old.PID.N" in its directory. */
static int move_aside(struct old_file *f)
{
    f->side = lp_cli_side_name(f->path, "old", claim_by_rename, f->path);
    return f->side ? 0 : -1;
}

static int old_move_aside(struct old_run *r)
{
    for (; r->moved < r->n; r->moved++)
        if (move_aside(&r->v[r->moved]) != 0) {
            lp_cli_error("record", "--force: cannot move %s aside: %s; nothing was replaced",
                         r->v[r->moved].path, strerror(errno));
            return -1;
        }
    return 0;
}

/* The new run did not start: the old one comes back as it was. */
static void old_put_back(struct old_run *r)
{
    while (r->moved > 0) {
        struct old_file *f = &r->v[--r->moved];
        if (rename(f->side, f->path) != 0)
            lp_cli_error("record", "--force: could not put back %s (%s): it is in %s", f->path,
                         strerror(errno), f->side);
    }
}

/* The new run started: the old one's files go, and says what went. */
static void old_remove(struct old_run *r, const char *dir)
{
    size_t count[3] = {0}, dirs = 0;
    for (size_t i = 0; i < r->moved; i++) {
        if (unlink(r->v[i].side) == 0)
            count[r->v[i].kind]++;
        else
            lp_cli_error("record", "--force: could not remove %s: %s", r->v[i].side,
                         strerror(errno));
    }
    for (size_t i = 0; i < r->n_dirs; i++)
        dirs += rmdir(r->dirs[i]) == 0; /* one holding anything else stays */
    if (!r->moved && !dirs)
        return;
    /* One line, written at once: the program already runs and may write to stderr too. */
    char what[160] = "";
    size_t len = 0;
    const char *sep = " ";
    if (count[0]) {
        len += (size_t)snprintf(what + len, sizeof what - len, "%smeta.json", sep);
        sep = ", ";
    }
    if (count[1]) {
        len += (size_t)snprintf(what + len, sizeof what - len, "%s%zu trace%s", sep, count[1],
                                count[1] == 1 ? "" : "s");
        sep = ", ";
    }
    if (count[2]) {
        len += (size_t)snprintf(what + len, sizeof what - len, "%s%zu report file%s", sep,
                                count[2], count[2] == 1 ? "" : "s");
        sep = ", ";
    }
    if (dirs)
        snprintf(what + len, sizeof what - len, "%s%zu report director%s", sep, dirs,
                 dirs == 1 ? "y" : "ies");
    fprintf(stderr, "llmprof record: --force: removed the previous run's files from %s:%s\n", dir,
            what);
}

static void old_free(struct old_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].path);
        free(r->v[i].side);
    }
    for (size_t i = 0; i < r->n_dirs; i++)
        free(r->dirs[i]);
    free(r->v);
    free(r->dirs);
    memset(r, 0, sizeof *r);
}

/* Checks (or makes) the run directory DIR and lists what --force would replace; changes
 * nothing in a directory that exists. The levels it made are in *MADE. */
static int prepare_dir(const char *dir, int force, char abs[PATH_MAX], struct old_run *old,
                       char ***made, size_t *n_made)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            lp_cli_error("record", "output %s exists and is not a directory", dir);
            return -1;
        }
        char **traces = NULL;
        int n = lp_cli_list_traces(dir, &traces);
        lp_cli_free_list(traces, n > 0 ? n : 0);
        int holds = n < 0 ? -1 : lp_cli_dir_holds_run(dir);
        if (holds < 0) {
            lp_cli_error("record", "cannot read output %s: %s", dir, strerror(errno));
            return -1;
        }
        /* record writes meta.json: one that is not llmprof's is the user's, even with --force */
        if (lp_cli_run_meta(dir) < 0) {
            lp_cli_error("record", "output %s holds a meta.json that llmprof did not write; "
                                   "choose another -o (--force leaves it)", dir);
            return -1;
        }
        if (!force && (holds || n > 0)) {
            lp_cli_error("record", "output %s already holds a recorded run; choose another -o, "
                                   "or add --force to replace it", dir);
            return -1;
        }
        /* report's files are the run's only where there is a run */
        if (force && (holds || n > 0) && old_collect(dir, old) != 0)
            return -1;
    } else if (lp_cli_mkdir_made(dir, made, n_made) != 0) {
        lp_cli_error("record", "cannot create output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    /* a name nothing holds (O_EXCL: a link planted there is not followed) */
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/.llmprof-write-test.XXXXXX", dir);
    int fd = mkostemp(probe, O_CLOEXEC);
    if (fd < 0) {
        lp_cli_error("record", "output directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    if (!realpath(dir, abs)) {
        lp_cli_error("record", "cannot resolve %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void iso_time(uint64_t ns, char *buf, size_t len)
{
    time_t s = (time_t)(ns / 1000000000u);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Environment worth keeping with a run; names that look secret are left out. */
static int relevant_env(const char *name)
{
    static const char *const prefixes[] = {"CUDA_", "NCCL_", "TORCH", "PYTORCH_", "NVIDIA_",
                                           "CUBLAS", "CUDNN_", "OMP_NUM_THREADS", "RANK",
                                           "LOCAL_RANK", "WORLD_SIZE", "LLMPROF_", "TRANSFORMERS_",
                                           "HF_HUB_OFFLINE", "NVTX_INJECTION", "TEARDOWN_CUPTI",
                                           NULL};
    /* secrets, NVIDIA_REQUIRE_CUDA (a kilobyte of container constraints), and the request
     * file record sets for the program itself (a value from record's own environment is
     * not the one the program got) */
    static const char *const skip[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL",
                                       "NVIDIA_REQUIRE", "LLMPROF_REQUEST_FILE", NULL};
    for (const char *const *s = skip; *s; s++)
        if (strstr(name, *s))
            return 0;
    for (const char *const *p = prefixes; *p; p++)
        if (!strncmp(name, *p, strlen(*p)))
            return 1;
    return 0;
}

static json_t *meta_json(const struct lp_cli_record_opts *o, const char *resolved, const char *lib,
                         uint64_t start_ns)
{
    json_t *m = json_object();
    char cwd[PATH_MAX] = "", host[256] = "", iso[64];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    gethostname(host, sizeof host - 1);
    json_object_set_new(m, "format", json_string("llmprof-run"));
    json_object_set_new(m, "llmprof_version", json_string(LLMPROF_VERSION));
    json_object_set_new(m, "llmprof_commit", json_string(LP_BUILD_COMMIT));
    json_t *cmd = json_array();
    for (char **a = o->cmd; *a; a++)
        json_array_append_new(cmd, json_string(*a));
    json_object_set_new(m, "command", cmd);
    json_object_set_new(m, "resolved_command", json_string(resolved));
    json_object_set_new(m, "cwd", json_string(cwd));
    json_object_set_new(m, "host", json_string(host));
    json_object_set_new(m, "collector", json_string(lib));
    json_t *opts = json_object();
    json_object_set_new(opts, "nvml_hz", json_real(o->nvml_hz));
    json_object_set_new(opts, "light", json_boolean(o->light));
    json_object_set_new(opts, "gemm", json_boolean(o->gemm));
    json_object_set_new(opts, "counters", json_boolean(o->counters));
    json_object_set_new(opts, "pm_sampling_us", json_real(o->pm_sampling_us));
    json_object_set_new(opts, "graphs", json_string(o->light ? "none"
                                                    : o->graphs ? o->graphs : "replay"));
    json_object_set_new(opts, "finalize", json_boolean(o->finalize));
    json_object_set_new(m, "options", opts);
    json_t *env = json_object();
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        if (relevant_env(name))
            json_object_set_new(env, name, json_string(eq + 1));
    }
    json_object_set_new(m, "env", env);
    iso_time(start_ns, iso, sizeof iso);
    json_object_set_new(m, "start_time", json_string(iso));
    json_object_set_new(m, "start_realtime_ns", json_integer((json_int_t)start_ns));
    json_object_set_new(m, "status", json_string("running"));
    return m;
}

/* Writes DIR/meta.json through the CLI's output helpers (a new file under a free name
 * beside it, moved in when whole), so it is never half-written and no link is followed to
 * a temporary. WHEN says what an old meta.json still says if this one cannot be written. */
static int write_meta(const char *dir, json_t *m, const char *when)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    struct lp_cli_outs s = {.cmd = "record"};
    FILE *f = lp_cli_outs_open(&s, path, 0);
    int rc = -1;
    if (f) {
        int w = json_dumpf(m, f, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (lp_cli_outs_close(&s, f, w) == 0 && lp_cli_outs_commit(&s) == 0)
            rc = 0;
    }
    lp_cli_outs_free(&s);
    if (rc != 0 && *when)
        lp_cli_error("record", "%s was not updated%s", path, when);
    return rc;
}

/* The signals a shell wrapper passes on. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define N_FORWARDED (sizeof forwarded / sizeof *forwarded)

static volatile sig_atomic_t child_pid;

/* Passes a signal some process sent to llmprof on to CMD. One the kernel sent (the terminal's
 * Ctrl-C, Ctrl-\ or hang-up) went to the whole foreground process group, CMD included, so
 * passing it on would deliver it twice; one from CMD itself is not sent back. One that came
 * before CMD started never gets here: it is found pending before the fork. */
static void forward_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int e = errno;
    pid_t child = (pid_t)child_pid;
    if (child > 0 && !(si && (si->si_code > 0 || si->si_pid == child)))
        kill(child, sig);
    errno = e;
}

static void finish_meta(json_t *m, const char *dir, int status, uint64_t start_ns)
{
    uint64_t end = now_ns();
    char iso[64];
    iso_time(end, iso, sizeof iso);
    json_object_set_new(m, "end_time", json_string(iso));
    json_object_set_new(m, "end_realtime_ns", json_integer((json_int_t)end));
    json_object_set_new(m, "duration_s", json_real((double)(end - start_ns) / 1e9));
    if (WIFEXITED(status)) {
        json_object_set_new(m, "status", json_string("exited"));
        json_object_set_new(m, "exit_code", json_integer(WEXITSTATUS(status)));
    } else if (WIFSIGNALED(status)) {
        json_object_set_new(m, "status", json_string("killed"));
        json_object_set_new(m, "signal", json_integer(WTERMSIG(status)));
        json_object_set_new(m, "exit_code", json_integer(128 + WTERMSIG(status)));
    }
    char **traces = NULL;
    int n = lp_cli_list_traces(dir, &traces);
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(traces[i], '/');
        json_array_append_new(arr, json_string(base ? base + 1 : traces[i]));
    }
    json_object_set_new(m, "traces", arr);
    lp_cli_free_list(traces, n > 0 ? n : 0);
}

/* A trace no longer than its 16-byte file header (docs/trace-format.md) holds nothing: its
 * process could not write (a full disk, a file size limit). Each one is said on stderr and
 * kept in meta.json's "record_errors"; returns how many there are and sets *N_OK to the
 * others. */
static size_t check_traces(const char *out, const char *dir, json_t *m, size_t *n_ok)
{
    enum { FILE_HEADER_BYTES = 16 };
    json_t *traces = json_object_get(m, "traces"), *t;
    json_t *errors = json_array();
    size_t i, empty = 0;
    *n_ok = 0;
    json_array_foreach(traces, i, t)
    {
        char path[PATH_MAX + 256], msg[PATH_MAX + 320];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, json_string_value(t));
        if (stat(path, &st) != 0 || st.st_size > FILE_HEADER_BYTES) {
            ++*n_ok;
            continue;
        }
        snprintf(msg, sizeof msg, "empty trace %s/%s: nothing was written (disk full?)", out,
                 json_string_value(t));
        lp_cli_error("record", "%s", msg);
        json_array_append_new(errors, json_string(msg));
        empty++;
    }
    if (empty)
        json_object_set_new(m, "record_errors", errors);
    else
        json_decref(errors);
    return empty;
}

/* A forwarded signal that came while they were blocked and that llmprof would act on
 * (not blocked by whoever started it): 0 when none. */
static int pending_signal(const sigset_t *old_mask)
{
    sigset_t pend;
    if (sigpending(&pend) != 0)
        return 0;
    for (size_t i = 0; i < N_FORWARDED; i++)
        if (sigismember(&pend, forwarded[i]) && !sigismember(old_mask, forwarded[i]))
            return forwarded[i];
    return 0;
}

/* Every variable set_environment may set, put back as they were once CMD has ended: what
 * runs after record in this process (profile's deep dive, under ncu, which refuses another
 * injection) must not inherit them. The collector's by the names of its table
 * (llmprof/envconfig.h), then the others. */
static const enum lp_envconfig_var collector_vars[] = {
    LP_ENVCONFIG_VAR_OUT,         LP_ENVCONFIG_VAR_NVML_HZ,        LP_ENVCONFIG_VAR_LIGHT,
    LP_ENVCONFIG_VAR_QUIET,       LP_ENVCONFIG_VAR_GEMM,           LP_ENVCONFIG_VAR_COUNTERS,
    LP_ENVCONFIG_VAR_COUNTER_RANGES, LP_ENVCONFIG_VAR_PM_SAMPLING, LP_ENVCONFIG_VAR_CAPTURE,
    LP_ENVCONFIG_VAR_GRAPHS,      LP_ENVCONFIG_VAR_FINALIZE,
};
static const char *const other_env_names[] = {
    "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "CUBLASLT_LOG_FILE", "LD_PRELOAD",
    "TEARDOWN_CUPTI", "LLMPROF_REQUEST_FILE",
};
#define N_COLLECTOR_ENV (sizeof collector_vars / sizeof *collector_vars)
#define N_ENV (N_COLLECTOR_ENV + sizeof other_env_names / sizeof *other_env_names)

static const char *env_name(size_t i)
{
    return i < N_COLLECTOR_ENV ? lp_envconfig_name(collector_vars[i])
                               : other_env_names[i - N_COLLECTOR_ENV];
}

/* Sets the collector's variable VAR to VALUE; NULL unsets it. */
static void set_collector_env(enum lp_envconfig_var var, const char *value)
{
    if (value)
        setenv(lp_envconfig_name(var), value, 1);
    else
        unsetenv(lp_envconfig_name(var));
}

struct saved_env {
    char *value[N_ENV]; /* NULL: unset, or set and not copied (out of memory: left alone) */
    int was_set[N_ENV];
};

static void env_save(struct saved_env *e)
{
    for (size_t i = 0; i < N_ENV; i++) {
        const char *v = getenv(env_name(i));
        e->was_set[i] = v != NULL;
        e->value[i] = v ? strdup(v) : NULL;
    }
}

static void env_restore(struct saved_env *e)
{
    for (size_t i = 0; i < N_ENV; i++) {
        if (e->value[i])
            setenv(env_name(i), e->value[i], 1);
        else if (!e->was_set[i])
            unsetenv(env_name(i));
        free(e->value[i]);
    }
}

/* The collector's settings for CMD's processes, in the environment it inherits: 0, or -1
 * with a message. Only variables of collector_vars and other_env_names. */
static int set_environment(const struct lp_cli_record_opts *o, const char *lib,
                           const char *abs_dir)
{
    const char *prev = getenv("CUDA_INJECTION64_PATH");
    if (prev && *prev && strcmp(prev, lib) != 0)
        fprintf(stderr, "llmprof record: note: replacing CUDA_INJECTION64_PATH=%s\n", prev);
    char hz[32];
    snprintf(hz, sizeof hz, "%g", o->nvml_hz);
    setenv("CUDA_INJECTION64_PATH", lib, 1);
    setenv("NVTX_INJECTION64_PATH", lib, 1);
    set_collector_env(LP_ENVCONFIG_VAR_OUT, abs_dir);
    set_collector_env(LP_ENVCONFIG_VAR_NVML_HZ, hz);
    set_collector_env(LP_ENVCONFIG_VAR_LIGHT, o->light ? "1" : "0");
    if (o->quiet)
        set_collector_env(LP_ENVCONFIG_VAR_QUIET, "1");
    set_collector_env(LP_ENVCONFIG_VAR_GEMM, o->gemm ? "1" : "0");
    if (o->counters) {
        set_collector_env(LP_ENVCONFIG_VAR_COUNTERS, o->counter_dtypes ? o->counter_dtypes : "1");
        char *ranges = o->counter_ranges ? strdup(o->counter_ranges) : lp_stage_rules_regex();
        if (!ranges) {
            lp_cli_error("record", "out of memory");
            return -1;
        }
        set_collector_env(LP_ENVCONFIG_VAR_COUNTER_RANGES, ranges);
        free(ranges);
    } else {
        set_collector_env(LP_ENVCONFIG_VAR_COUNTERS, NULL);
    }
    set_collector_env(LP_ENVCONFIG_VAR_CAPTURE, o->capture);
    set_collector_env(LP_ENVCONFIG_VAR_GRAPHS, o->graphs);
    set_collector_env(LP_ENVCONFIG_VAR_FINALIZE, o->finalize ? "1" : NULL);
    char us[32];
    snprintf(us, sizeof us, "%g", o->pm_sampling_us);
    set_collector_env(LP_ENVCONFIG_VAR_PM_SAMPLING, o->pm_sampling_us > 0 ? us : NULL);
    /* cuBLASLt's logger, which the collector turns on around a shape's first call, prints
     * to stdout unless given a file; a user who logs keeps their own settings */
    if (o->gemm && !getenv("CUBLASLT_LOG_LEVEL") && !getenv("CUBLASLT_LOG_MASK") &&
        !getenv("CUBLASLT_LOG_FILE"))
        setenv("CUBLASLT_LOG_FILE", "/dev/null", 1);
    if (o->gemm && preload(lib) != 0) {
        lp_cli_error("record", "LD_PRELOAD would be too long with %s added", lib);
        return -1;
    }
    /* torch.profiler (Kineto) finalises CUPTI when it stops unless told not to, which would
     * end llmprof's recording mid-run; a user's own setting is kept */
    setenv("TEARDOWN_CUPTI", "0", 0);
    return 0;
}

/* The program's request (request.c): an empty file of record's own in ABS_DIR, named to CMD
 * by LLMPROF_REQUEST_FILE (its path in PATH); a run without one is still a run. */
static void offer_request(const char *abs_dir, char *path, size_t len)
{
    if (lp_cli_request_make(abs_dir, path, len) == 0) {
        setenv("LLMPROF_REQUEST_FILE", path, 1);
        return;
    }
    int e = errno;
    unsetenv("LLMPROF_REQUEST_FILE"); /* not one from llmprof's own environment */
    fprintf(stderr, "llmprof record: warning: no request file in %s (%s): the program cannot "
                    "leave its request in meta.json\n", abs_dir, strerror(e));
}

/* CMD ended with STATUS: META says so, and what was recorded is checked and said. Returns
 * record's exit status. */
static int finish_run(const struct lp_cli_record_opts *o, json_t *meta, const char *abs_dir,
                      int status, uint64_t start_ns)
{
    finish_meta(meta, abs_dir, status, start_ns);
    size_t n_ok = 0, n_empty = check_traces(o->out, abs_dir, meta, &n_ok);
    int meta_ok = write_meta(abs_dir, meta, "; it still says the command is running") == 0;
    if (n_ok + n_empty == 0)
        fprintf(stderr, "llmprof: no trace in %s: no process of the command initialised CUDA "
                        "with the collector (a program that never used the GPU, a tool that "
                        "replaced CUDA_INJECTION64_PATH, or a trace that could not be created: "
                        "see the collector's warnings above)\n", o->out);
    else if (n_ok)
        fprintf(stderr, "llmprof: %zu trace%s in %s; look with: llmprof info %s\n", n_ok,
                n_ok == 1 ? "" : "s", o->out, o->out);
    int rc;
    if (WIFEXITED(status))
        rc = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        rc = 128 + WTERMSIG(status);
    else
        rc = 1;
    /* CMD's own failure wins; its success does not hide a run that was not written */
    if (rc == 0 && (!meta_ok || n_empty)) {
        lp_cli_error("record", "%s exited 0 but its run in %s was not written whole (see "
                               "above); exit status 1", o->cmd[0], o->out);
        rc = 1;
    }
    return rc;
}

/* The mask and dispositions llmprof had before it held back the forwarded signals. */
struct held_signals {
    sigset_t old_mask;
    struct sigaction old_act[N_FORWARDED], old_xfsz;
};

/* Signals wait (blocked) from here until CMD runs: one that comes before is found pending
 * and CMD does not start (the previous run put back); later ones are passed on, and none
 * ends llmprof before meta.json says how CMD ended. SIGXFSZ is ignored, so that a file size
 * limit fails a write (and is said) instead of killing llmprof. */
static void hold_signals(struct held_signals *h)
{
    sigset_t fwd_set;
    sigemptyset(&fwd_set);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&fwd_set, forwarded[i]);
    sigprocmask(SIG_BLOCK, &fwd_set, &h->old_mask);
    struct sigaction fwd = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&fwd.sa_mask);
    sigemptyset(&ign.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &fwd, &h->old_act[i]);
    sigaction(SIGXFSZ, &ign, &h->old_xfsz);
}

/* Back to what llmprof started with (in CMD's process too, before exec). */
static void restore_signals(const struct held_signals *h)
{
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &h->old_act[i], NULL);
    sigaction(SIGXFSZ, &h->old_xfsz, NULL);
    sigprocmask(SIG_SETMASK, &h->old_mask, NULL);
}

int lp_cmd_record(int argc, char **argv)
{
    struct lp_cli_record_opts o;
    lp_cli_record_init(&o);
    int first, ran, rc = lp_cli_parse(&record_cmd, &o, argc, argv, &first);
    if (rc != 0)
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    if (first >= argc) {
        lp_cli_error("record",
                     "no command to run; usage: llmprof record [options] -- CMD [ARGS...]");
        return LP_CLI_EXIT_USAGE;
    }
    o.cmd = argv + first;
    return lp_cli_record(&o, &ran);
}

/* O's options completed (--light's defaults) and checked against one another: 0, or
 * LP_CLI_EXIT_USAGE with a message. */
static int settle_options(struct lp_cli_record_opts *o)
{
    if (o->gemm < 0)
        o->gemm = !o->light;
    if (o->counter_dtypes || o->counter_ranges)
        o->counters = 1;
    if (o->light && !o->counters && !o->pm_sampling_us)
        o->pm_sampling_us = LIGHT_PM_SAMPLING_US;
    if (o->counters && o->pm_sampling_us > 0) {
        /* measured on an H200: whichever starts second gets CUPTI_ERROR_HARDWARE_BUSY */
        lp_cli_error("record", "--counters and --pm-sampling both need the GPU's performance "
                     "counters, which serve one of them at a time: choose one");
        return LP_CLI_EXIT_USAGE;
    }
    struct lp_capture_spec spec;
    char cerr[512];
    if (o->capture && lp_capture_parse(o->capture, &spec, cerr, sizeof cerr) != 0) {
        lp_cli_error("record", "%s", cerr);
        return LP_CLI_EXIT_USAGE;
    }
    if (o->graphs && strcmp(o->graphs, "replay") && strcmp(o->graphs, "node")) {
        lp_cli_error("record", "--graphs '%s': give replay (each CUDA graph replay recorded "
                     "whole) or node (each of its kernels)", o->graphs);
        return LP_CLI_EXIT_USAGE;
    }
    if (o->finalize && (!o->capture || !strcmp(o->capture, "all"))) {
        lp_cli_error("record", "--finalize finalizes CUPTI between capture windows: give "
                     "--capture too");
        return LP_CLI_EXIT_USAGE;
    }
    if (o->graphs && o->light) {
        lp_cli_error("record", "--graphs chooses how the kernels of CUDA graph replays are "
                     "recorded, and --light records none: choose one");
        return LP_CLI_EXIT_USAGE;
    }
    return 0;
}

int lp_cli_record(struct lp_cli_record_opts *o, int *ran)
{
    *ran = 0;
    if (settle_options(o) != 0)
        return LP_CLI_EXIT_USAGE;
    if (o->capture && o->light && strcmp(o->capture, "all")) {
        lp_cli_error("record", "--capture chooses when kernels are recorded, and --light "
                     "records none: choose one");
        return LP_CLI_EXIT_USAGE;
    }
    char resolved[PATH_MAX], lib[PATH_MAX], abs_dir[PATH_MAX] = "", request[PATH_MAX + 32] = "";
    if (lp_cli_resolve(o->cmd[0], resolved, sizeof resolved) != 0) {
        lp_cli_error("record", "command not found or not executable: %s", o->cmd[0]);
        return 127;
    }
    if (find_collector(lib, sizeof lib) != 0)
        return LP_CLI_EXIT_INPUT; /* the command line is fine; the installation lacks a file */
    uint64_t start_ns = now_ns();
    if (!o->out) {
        time_t s = (time_t)(start_ns / 1000000000u);
        struct tm tm;
        localtime_r(&s, &tm);
        strftime(o->default_out, sizeof o->default_out, "llmprof-%Y%m%d-%H%M%S", &tm);
        o->out = o->default_out;
    }
    struct held_signals held;
    hold_signals(&held);
    struct old_run old = {0};
    char **made = NULL;
    size_t n_made = 0;
    json_t *meta = NULL;
    int status = 0, meta_written = 0, sig, rc = LP_CLI_EXIT_USAGE;
    struct saved_env env;
    env_save(&env);
    if (prepare_dir(o->out, o->force, abs_dir, &old, &made, &n_made) != 0 ||
        set_environment(o, lib, abs_dir) != 0)
        goto restore;
    /* every check passed: the previous run goes aside, and away once CMD has started */
    rc = LP_CLI_EXIT_INPUT; /* from here a failure is a failed write, not a refusal */
    if (old_move_aside(&old) != 0)
        goto restore;
    meta = meta_json(o, resolved, lib, start_ns);
    if (write_meta(abs_dir, meta, "") != 0)
        goto restore;
    meta_written = 1;
    offer_request(abs_dir, request, sizeof request);
    if ((sig = pending_signal(&held.old_mask)) != 0) {
        lp_cli_error("record", "%s came before %s started: it was not run and nothing was "
                               "recorded", strsignal(sig), o->cmd[0]);
        rc = 128 + sig;
        goto restore;
    }
    pid_t pid = fork();
    if (pid < 0) {
        lp_cli_error("record", "fork failed: %s", strerror(errno));
        goto restore;
    }
    if (pid == 0) {
        /* CMD starts with llmprof's own dispositions and mask (an ignored SIGINT stays so) */
        restore_signals(&held);
        execv(resolved, o->cmd);
        fprintf(stderr, "llmprof record: cannot execute %s: %s\n", resolved, strerror(errno));
        _exit(127);
    }
    *ran = 1;
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &held.old_mask, NULL);
    old_remove(&old, o->out);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    child_pid = 0;
    lp_cli_request_take(request, meta);
    rc = finish_run(o, meta, abs_dir, status, start_ns);
restore:
    if (!*ran && request[0])
        unlink(request);
    if (!*ran) {
        /* CMD did not start: the directory is left as it was found */
        if (meta_written) {
            char path[PATH_MAX + 16];
            snprintf(path, sizeof path, "%s/meta.json", abs_dir);
            unlink(path);
        }
        old_put_back(&old);
    }
    old_free(&old);
    lp_cli_unmake_dirs(made, n_made, !*ran);
    env_restore(&env);
    restore_signals(&held);
    json_decref(meta);
    return rc;
}
