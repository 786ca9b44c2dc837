/* llmprof record: runs a command with the collector injected and leaves a run directory
 * (one trace per CUDA process + meta.json). Everything that can be wrong with the
 * invocation is checked before the command starts. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/version.h"

extern char **environ;

static const char help[] =
    "usage: llmprof record [-o DIR] [--nvml-hz N] [--light] [--no-gemm] [--quiet] [--] CMD\n"
    "                      [ARGS...]\n"
    "\n"
    "Runs CMD with llmprof's CUPTI collector injected (CUDA_INJECTION64_PATH) and writes a\n"
    "run directory: one trace per process that used CUDA (children are followed; files are\n"
    "named trace[.rank<R>].<host>.<pid>.lpt) and meta.json (command, directory, relevant\n"
    "environment, versions, times, exit status). Standard input and output pass through and\n"
    "llmprof exits with CMD's exit status (128+N when a signal N ended it).\n"
    "\n"
    "Recorded: kernels (grid, block, registers, shared memory, stream, graph), memcpy and\n"
    "memset, device memory allocations, NVTX ranges (C and PyTorch), the launch, copy and\n"
    "synchronise calls that tie each kernel to its thread, NVML samples (power, energy,\n"
    "clocks, utilisation, temperature, clock-event reasons, memory), every cuBLAS and\n"
    "cuBLASLt GEMM call (M, N, K, batch, transposes, types, compute type; algorithm and tile\n"
    "from its shape's first call) and every loss. GEMM calls are seen by preloading the\n"
    "collector (LD_PRELOAD), so they are missed in programs that link cuBLAS statically.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR   run directory (default: llmprof-YYYYmmdd-HHMMSS); must be new or empty\n"
    "  --nvml-hz N        NVML samples per second per GPU (default 20; 0 turns NVML off)\n"
    "  --light            kernels and NVTX only: lowest overhead (implies --no-gemm)\n"
    "  --no-gemm          do not preload the collector to see cuBLAS GEMM calls\n"
    "  --gemm             see GEMM calls even with --light (their kernels are then tied by\n"
    "                     time only if launch records are missing: see docs/collector.md)\n"
    "  --quiet            no collector warnings on stderr (they stay in the trace)\n"
    "  -h, --help         this text\n"
    "\n"
    "examples:\n"
    "  llmprof record -o run1 -- python3 infer.py --max-new-tokens 128\n"
    "  llmprof record --light -o run2 ./my_cuda_app\n"
    "  llmprof info run1\n";

struct options {
    const char *out;
    double nvml_hz;
    int light, quiet;
    int gemm;                     /* -1: the default (on unless --light) */
    char **cmd;
};

static int parse(int argc, char **argv, struct options *o)
{
    o->nvml_hz = 20;
    o->gemm = -1;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc) {
                lp_cli_error("record", "%s needs a directory", a);
                return -1;
            }
            o->out = argv[i];
        } else if (!strcmp(a, "--nvml-hz")) {
            char *end = NULL;
            if (++i >= argc) {
                lp_cli_error("record", "--nvml-hz needs a number");
                return -1;
            }
            errno = 0;
            o->nvml_hz = strtod(argv[i], &end);
            if (errno || !*argv[i] || *end || o->nvml_hz < 0 || o->nvml_hz > 1000) {
                lp_cli_error("record", "--nvml-hz takes a number from 0 to 1000, not '%s'", argv[i]);
                return -1;
            }
        } else if (!strcmp(a, "--light")) {
            o->light = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--gemm")) {
            o->gemm = 1;
        } else if (!strcmp(a, "--no-gemm")) {
            o->gemm = 0;
        } else {
            lp_cli_error("record", "unknown option '%s'; see 'llmprof record --help'", a);
            return -1;
        }
    }
    if (i >= argc) {
        lp_cli_error("record", "no command to run; usage: llmprof record [options] -- CMD [ARGS...]");
        return -1;
    }
    o->cmd = argv + i;
    if (o->gemm < 0)
        o->gemm = !o->light;
    return 0;
}

/* Finds CMD like execvp would; 0 with PATH set, else -1. */
static int resolve(const char *cmd, char *path, size_t len)
{
    if (strchr(cmd, '/')) {
        snprintf(path, len, "%s", cmd);
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0 ? 0 : -1;
    }
    const char *env = getenv("PATH");
    char *dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
    int rc = -1;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, len, "%s/%s", *d ? d : ".", cmd);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0) {
            rc = 0;
            break;
        }
    }
    free(dirs);
    return rc;
}

static int find_collector(char *path, size_t len)
{
    const char *env = getenv("LLMPROF_LIB");
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

static int dir_is_empty(const char *dir)
{
    char **list = NULL;
    int n = lp_cli_list_traces(dir, &list);
    lp_cli_free_list(list, n > 0 ? n : 0);
    char meta[PATH_MAX + 16];
    snprintf(meta, sizeof meta, "%s/meta.json", dir);
    return n == 0 && access(meta, F_OK) != 0;
}

static int prepare_dir(const char *dir, char abs[PATH_MAX])
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            lp_cli_error("record", "output %s exists and is not a directory", dir);
            return -1;
        }
        if (!dir_is_empty(dir)) {
            lp_cli_error("record", "output %s already holds a recorded run; choose another -o", dir);
            return -1;
        }
    } else if (lp_cli_mkdir_p(dir) != 0) {
        lp_cli_error("record", "cannot create output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/.llmprof-write-test", dir);
    FILE *f = fopen(probe, "w");
    if (!f) {
        lp_cli_error("record", "output directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    fclose(f);
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
    /* secrets, and NVIDIA_REQUIRE_CUDA: a kilobyte of container constraints */
    static const char *const skip[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL",
                                       "NVIDIA_REQUIRE", NULL};
    for (const char *const *s = skip; *s; s++)
        if (strstr(name, *s))
            return 0;
    for (const char *const *p = prefixes; *p; p++)
        if (!strncmp(name, *p, strlen(*p)))
            return 1;
    return 0;
}

static json_t *meta_json(const struct options *o, const char *resolved, const char *lib,
                         uint64_t start_ns)
{
    json_t *m = json_object();
    char cwd[PATH_MAX] = "", host[256] = "", iso[64];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    gethostname(host, sizeof host - 1);
    json_object_set_new(m, "format", json_string("llmprof-run"));
    json_object_set_new(m, "llmprof_version", json_string(LLMPROF_VERSION));
    json_t *cmd = json_array();
    for (char **a = o->cmd; *a; a++)
        json_array_append_new(cmd, json_string(*a));
    json_object_set_new(m, "command", cmd);
    json_object_set_new(m, "resolved_command", json_string(resolved));
    json_object_set_new(m, "cwd", json_string(cwd));
    json_object_set_new(m, "host", json_string(host));
    json_object_set_new(m, "collector", json_string(lib));
    json_t *opts = json_object();
    json_object_set_new(opts, "nvml_hz", json_real(o->light ? 0 : o->nvml_hz));
    json_object_set_new(opts, "light", json_boolean(o->light));
    json_object_set_new(opts, "gemm", json_boolean(o->gemm));
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

/* Writes DIR/meta.json through a temporary file, so it is never half-written. */
static int write_meta(const char *dir, json_t *m)
{
    char tmp[PATH_MAX + 32], final[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/.meta.json.tmp", dir);
    snprintf(final, sizeof final, "%s/meta.json", dir);
    if (json_dump_file(m, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 || rename(tmp, final) != 0) {
        lp_cli_error("record", "cannot write %s: %s", final, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
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

int lp_cmd_record(int argc, char **argv)
{
    struct options o = {0};
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char resolved[PATH_MAX], lib[PATH_MAX], abs_dir[PATH_MAX], default_dir[64];
    if (resolve(o.cmd[0], resolved, sizeof resolved) != 0) {
        lp_cli_error("record", "command not found or not executable: %s", o.cmd[0]);
        return 127;
    }
    if (find_collector(lib, sizeof lib) != 0) {
        lp_cli_error("record", "collector libllmprof.so not found next to this executable "
                               "(../lib/) or in $LLMPROF_LIB; was llmprof built with CUPTI?");
        return 2;
    }
    uint64_t start_ns = now_ns();
    if (!o.out) {
        time_t s = (time_t)(start_ns / 1000000000u);
        struct tm tm;
        localtime_r(&s, &tm);
        strftime(default_dir, sizeof default_dir, "llmprof-%Y%m%d-%H%M%S", &tm);
        o.out = default_dir;
    }
    if (prepare_dir(o.out, abs_dir) != 0)
        return 2;
    const char *prev = getenv("CUDA_INJECTION64_PATH");
    if (prev && *prev && strcmp(prev, lib) != 0)
        fprintf(stderr, "llmprof record: note: replacing CUDA_INJECTION64_PATH=%s\n", prev);
    char hz[32];
    snprintf(hz, sizeof hz, "%g", o.light ? 0.0 : o.nvml_hz);
    setenv("CUDA_INJECTION64_PATH", lib, 1);
    setenv("NVTX_INJECTION64_PATH", lib, 1);
    setenv("LLMPROF_OUT", abs_dir, 1);
    setenv("LLMPROF_NVML_HZ", hz, 1);
    setenv("LLMPROF_LIGHT", o.light ? "1" : "0", 1);
    if (o.quiet)
        setenv("LLMPROF_QUIET", "1", 1);
    setenv("LLMPROF_GEMM", o.gemm ? "1" : "0", 1);
    /* cuBLASLt's logger, which the collector turns on around a shape's first call, prints
     * to stdout unless given a file; a user who logs keeps their own settings */
    if (o.gemm && !getenv("CUBLASLT_LOG_LEVEL") && !getenv("CUBLASLT_LOG_MASK") &&
        !getenv("CUBLASLT_LOG_FILE"))
        setenv("CUBLASLT_LOG_FILE", "/dev/null", 1);
    if (o.gemm && preload(lib) != 0) {
        lp_cli_error("record", "LD_PRELOAD would be too long with %s added", lib);
        return 2;
    }
    /* torch.profiler (Kineto) finalises CUPTI when it stops unless told not to, which would
     * end llmprof's recording mid-run; a user's own setting is kept */
    setenv("TEARDOWN_CUPTI", "0", 0);
    json_t *meta = meta_json(&o, resolved, lib, start_ns);
    if (write_meta(abs_dir, meta) != 0) {
        json_decref(meta);
        return 2;
    }
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward_signal};
    struct sigaction old_int, old_quit, old_term, old_hup;
    sigaction(SIGINT, &ign, &old_int); /* the terminal sends these to the child too */
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    pid_t pid = fork();
    if (pid < 0) {
        lp_cli_error("record", "fork failed: %s", strerror(errno));
        json_decref(meta);
        return 2;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        execv(resolved, o.cmd);
        fprintf(stderr, "llmprof record: cannot execute %s: %s\n", resolved, strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    child_pid = 0;
    finish_meta(meta, abs_dir, status, start_ns);
    write_meta(abs_dir, meta);
    json_t *traces = json_object_get(meta, "traces");
    if (json_array_size(traces) == 0)
        fprintf(stderr, "llmprof: no trace in %s: no process of the command initialised CUDA "
                        "with the collector (a program that never used the GPU, or a tool "
                        "that replaced CUDA_INJECTION64_PATH)\n", o.out);
    else
        fprintf(stderr, "llmprof: %zu trace%s in %s; look with: llmprof info %s\n",
                json_array_size(traces), json_array_size(traces) == 1 ? "" : "s", o.out, o.out);
    json_decref(meta);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}
