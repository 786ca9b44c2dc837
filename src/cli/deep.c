/* llmprof deep: Nsight Compute on the kernels that matter. From a recorded run it picks the
 * top kernels of each stage (analyze/deep_pick.c), predicts the time, runs the program once
 * under ncu profiling only those kernels inside their stages' NVTX ranges, and imports ncu's
 * raw page into RUN/deep/, where `llmprof report` finds it ("Kernels in depth"). Partial
 * results are kept when the budget runs out or the user interrupts. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "llmprof/analyze.h"
#include "llmprof/deep.h"
#include "llmprof/report.h"

/* Measured on an H200 with Nsight Compute 2025.3.1 (tests/gpu/deep.md, docs/benchmarks.md):
 * seconds per profiled kernel with --sections report (20 replay passes each; fitted on
 * tests/gpu/deep_cost.sh) and full (24 passes, the eight sections below), ncu's start, and
 * the program's own time under ncu against its time under llmprof record. While ncu runs,
 * the time left is learned from the kernels profiled so far. */
#define S_PER_KERNEL_REPORT 0.55
#define S_PER_KERNEL_FULL 0.7
#define START_S 1.0
#define PROGRAM_FACTOR 1.2
/* after an interrupt or the budget, how long ncu gets to write what it has */
#define GRACE_S 30
#define MIN_NCU_YEAR 2023

static const char *const sections[] = {
    "SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis",
    "ComputeWorkloadAnalysis", "SpeedOfLight_RooflineChart", "WarpStateStats", "SchedulerStats",
};
#define N_SECTIONS (sizeof sections / sizeof *sections)

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof deep RUN [options] [-- CMD [ARGS...]]\n"
    "\n"
    "Profiles the kernels that matter with Nsight Compute (ncu). From the recorded RUN it\n"
    "picks the top kernels of each measured stage by GPU time (and any above 5 % of a stage),\n"
    "then runs CMD once under ncu (default: the command RUN recorded, in its directory),\n"
    "profiling only those kernels, only inside their stages' NVTX ranges, a few launches of\n"
    "each launch configuration after the first, collecting what \"Kernels in depth\" reads:\n"
    "speed of light, occupancy and its limits, launch statistics, the tensor pipe, warp\n"
    "stall reasons, the tensor-core and FP32 FLOP counts (--sections full adds ncu's\n"
    "sections for speed of light, occupancy, launch statistics, memory and compute workload,\n"
    "roofline, warp state and scheduler, for Nsight Compute). Kernels replayed from CUDA graphs\n"
    "are reachable (--graph-profiling node) when RUN recorded them (record --graphs node;\n"
    "profile --deep does): by default a replay is recorded whole and none of its kernels is\n"
    "chosen. Clocks are left free (--clock-control none), as\n"
    "they run in production; 'base' locks them to base clocks, repeatable but slower than what\n"
    "the run saw.\n"
    "\n"
    "Before it starts it predicts the time (about 0.55 s per profiled kernel on an H200, 0.7\n"
    "with --sections full, plus the program's own time; while ncu runs, the time left at the\n"
    "rate measured so far) and trims the instances, then the kernels, to fit --budget; past the\n"
    "budget, or on Ctrl-C, ncu is stopped and what it measured is kept. Results go to\n"
    "RUN/deep/: deep.ncu-rep (open it in Nsight Compute), ncu-raw.csv (its raw page, which\n"
    "'llmprof report RUN' reads into \"Kernels in depth\"), deep.json (what was asked and what\n"
    "came back) and ncu.log (ncu's and the program's output).\n"
    "\n"
    "example:\n"
    "  llmprof record -o run1 -- python3 infer.py\n"
    "  llmprof deep run1\n"
    "  llmprof report run1\n"
    "\n"
    "options:\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--top", .arg = "N",
     .help = "kernels per stage by GPU time (default 10; any above 5 % of a stage too)",
     .off = offsetof(struct lp_cli_deep_opts, top), .min = 1, .max = 1000},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--instances", .arg = "N",
     .help = "launches profiled per launch configuration (default 2)",
     .off = offsetof(struct lp_cli_deep_opts, instances), .min = 1, .max = 100},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--skip", .arg = "N",
     .help = "launches skipped first per configuration (default 1, or 0 when a picked\n"
             "configuration runs once)",
     .off = offsetof(struct lp_cli_deep_opts, skip), .min = 0, .max = 1000000},
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--budget", .arg = "MIN",
     .help = "the most minutes the deep dive may take (default 30)",
     .off = offsetof(struct lp_cli_deep_opts, budget_min), .dmax = 24 * 60},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--ncu", .arg = "PATH",
     .help = "the ncu to run (default: ncu in PATH, then /usr/local/cuda/bin/ncu)",
     .off = offsetof(struct lp_cli_deep_opts, ncu), .missing = "a path"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--clock-control", .arg = "none|base",
     .help = "ncu's clock control (default none: clocks as the\nprogram runs them)",
     .off = offsetof(struct lp_cli_deep_opts, clock), .missing = "none or base"},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--sections", .arg = "report|full",
     .help = "what ncu collects: report (default), only the metrics\n"
             "\"Kernels in depth\" reads, in the fewest replays; full, ncu's\n"
             "sections too, for reading deep.ncu-rep in Nsight Compute",
     .off = offsetof(struct lp_cli_deep_opts, sections), .missing = "report or full"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--dry-run",
     .help = "print the kernels picked, the prediction and the ncu command; run nothing\n"
             "(the command quoted for sh, which reads it back byte for byte; control\n"
             "bytes in a word written as \"$(printf '\\033')\", never raw)",
     .off = offsetof(struct lp_cli_deep_opts, dry_run), .set = 1},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--force",
     .help = "replace RUN/deep/ when it holds an earlier deep dive",
     .off = offsetof(struct lp_cli_deep_opts, force), .set = 1},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--quiet", .alias = "-q",
     .help = "no progress and no summary", .off = offsetof(struct lp_cli_deep_opts, quiet), .set = 1},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd deep_cmd = {
    .name = "deep", .opts = options, .help_col = 21, .operand = 1, .operand_off = offsetof(struct lp_cli_deep_opts, run),
    .too_many = "one run at a time",
};

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
    interrupted = sig;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a growing argv */
struct args {
    char **v;
    size_t n, cap;
    int failed;
};

static void add(struct args *a, const char *s)
{
    if (a->failed)
        return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            a->failed = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(s))) {
        a->failed = 1;
        return;
    }
    a->v[++a->n] = NULL;
}

static void args_free(struct args *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
}

/* S with every character that is not a letter, digit or '_' escaped for a regex (and, with
 * NVTX set, NVTX's quantifiers escaped too: ncu reads them before the regex) */
static char *escaped(const char *s, const char *prefix, const char *suffix, int regex)
{
    size_t n = strlen(prefix) + 2 * strlen(s) + strlen(suffix) + 1;
    char *o = malloc(n), *p = o;
    if (!o)
        return NULL;
    p += sprintf(p, "%s", prefix);
    for (; *s; s++) {
        int plain = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                    (*s >= '0' && *s <= '9') || *s == '_' || *s == ' ' || *s == '=';
        if (!plain && (regex || strchr("@,[]/*+\\", *s)))
            *p++ = '\\';
        *p++ = *s;
    }
    strcpy(p, suffix);
    return o;
}

/* ncu's command line for PLAN; NULL out of memory */
static int ncu_args(struct args *a, const char *ncu, const struct lp_deep_plan *p,
                    const char *rep, const char *clock, int full, char *const *cmd)
{
    char num[32];
    add(a, ncu);
    add(a, "--config-file");
    add(a, "off");
    add(a, "-o");
    add(a, rep);
    add(a, "-f");
    if (full) {
        for (size_t i = 0; i < N_SECTIONS; i++) {
            add(a, "--section");
            add(a, sections[i]);
        }
        add(a, "--metrics");
        add(a, LP_NCU_EXTRA_METRICS);
    } else {
        add(a, "--metrics"); /* ncu takes it once */
        add(a, LP_NCU_REPORT_METRICS);
    }
    add(a, "--clock-control");
    add(a, clock);
    add(a, "--graph-profiling");
    add(a, "node");
    add(a, "--kernel-name-base");
    add(a, "mangled");
    /* one regex for every picked kernel, each by its exact mangled name */
    size_t len = 16;
    for (size_t i = 0; i < p->n_picks; i++)
        len += 2 * strlen(p->picks[i].mangled) + 1;
    char *re = malloc(len), *q = re;
    if (!re) {
        a->failed = 1;
        return -1;
    }
    q += sprintf(q, "regex:^(");
    for (size_t i = 0; i < p->n_picks; i++) {
        int dup = 0;
        for (size_t j = 0; j < i; j++)
            dup |= !strcmp(p->picks[j].mangled, p->picks[i].mangled);
        if (dup)
            continue;
        char *e = escaped(p->picks[i].mangled, q == re + 8 ? "" : "|", "", 1);
        if (!e) {
            free(re);
            a->failed = 1;
            return -1;
        }
        q += sprintf(q, "%s", e);
        free(e);
    }
    strcpy(q, ")$");
    add(a, "-k");
    add(a, re);
    free(re);
    add(a, "--filter-mode");
    add(a, "per-launch-config");
    snprintf(num, sizeof num, "%llu", (unsigned long long)p->skip);
    add(a, "--launch-skip");
    add(a, num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)p->instances);
    add(a, "--launch-count");
    add(a, num);
    add(a, "--nvtx"); /* each kernel's ranges in the raw page, filtered or not */
    for (size_t s = 0; p->by_nvtx && s < p->n_ranges; s++) {
        const struct lp_deep_stage_ranges *g = &p->ranges[s];
        char *dom = g->domain[0] ? escaped(g->domain, "", "@", !!g->prefix) : strdup("");
        if (!dom) {
            a->failed = 1;
            return -1;
        }
        for (size_t i = 0; i < (g->prefix ? 1 : g->n_names); i++) {
            char *pre = malloc(strlen(dom) + 8);
            char *e = pre ? (g->prefix ? escaped(g->prefix, strcat(strcpy(pre, "regex:"), dom),
                                                 ".*/", 1)
                                       : escaped(g->names[i], strcpy(pre, dom), "/", 0))
                          : NULL;
            free(pre);
            if (!e) {
                free(dom);
                a->failed = 1;
                return -1;
            }
            add(a, "--nvtx-include");
            add(a, e);
            free(e);
        }
        free(dom);
    }
    for (size_t i = 0; cmd[i]; i++)
        add(a, cmd[i]);
    return a->failed ? -1 : 0;
}

/* The length of the UTF-8 sequence at S when it is one of a printable character (U+00A0 and
 * up: not a C1 control, which some terminals obey, nor a bidirectional control), else 0. */
static size_t printable_utf8(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    uint32_t c = s[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    int overlong = (n == 3 && c < 0x800) || (n == 4 && c < 0x10000);
    /* nor a bidirectional control, which would reorder the line on screen */
    int bidi = c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
               (c >= 0x2066 && c <= 0x2069);
    if (overlong || bidi || c < 0xa0 || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

/* C needs no quoting for sh ('=' does but in the first word, where sh would take the word
 * for an assignment); by hand, as isalnum() follows the locale */
static int shell_plain(unsigned char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("_@%+:,./-", c)) || (c == '=' && !first);
}

/* W as one word of a line that a POSIX sh reads back byte for byte, with no byte on the
 * terminal that it would obey. Made only of [A-Za-z0-9_@%+=:,./-] it is written bare (but
 * for '=' in the FIRST word, which sh would take for an assignment); else in single quotes,
 * a quote as '\''. From its first control byte (or one that is not printable UTF-8) on, the
 * word is made by "$(printf '\033...')", such bytes as octal escapes; but newlines that end
 * it, which $(...) would drop, stay literal inside quotes (harmless on a terminal). */
static void print_word(FILE *f, const char *w, int first)
{
    const unsigned char *u = (const unsigned char *)w;
    size_t len = strlen(w), bare = 0, raw = 0;
    while (bare < len && shell_plain(u[bare], first))
        bare++;
    if (len > 0 && bare == len) {
        fputs(w, f);
        return;
    }
    /* the part that may go on the terminal as it is */
    while (raw < len) {
        size_t n = u[raw] >= 0x80 ? printable_utf8(u + raw) : u[raw] >= 0x20 && u[raw] < 0x7f;
        if (!n)
            break;
        raw += n;
    }
    size_t end = len;
    while (end > raw && u[end - 1] == '\n')
        end--;
    if (raw > 0 || len == 0) {
        fputc('\'', f);
        for (size_t i = 0; i < raw; i++) {
            if (u[i] == '\'')
                fputs("'\\''", f);
            else
                fputc(u[i], f);
        }
        fputc('\'', f);
    }
    if (end > raw) {
        fputs("\"$(printf '", f);
        for (size_t i = raw; i < end; i++) {
            size_t n = u[i] >= 0x80 ? printable_utf8(u + i) : u[i] >= 0x20 && u[i] < 0x7f;
            if (u[i] == '%')
                fputs("%%", f);
            else if (n && u[i] != '\'' && u[i] != '\\') {
                fwrite(u + i, 1, n, f);
                i += n - 1;
            } else
                fprintf(f, "\\%03o", u[i]);
        }
        fputs("')\"", f);
    }
    if (end < len) {
        fputc('\'', f);
        fwrite(w + end, 1, len - end, f);
        fputc('\'', f);
    }
}

/* GIVEN, else "ncu" in PATH, else the CUDA toolkit's */
static int find_ncu(const char *given, char *path, size_t len)
{
    if (lp_cli_resolve(given ? given : "ncu", path, len) == 0)
        return 0;
    if (given)
        return -1;
    snprintf(path, len, "/usr/local/cuda/bin/ncu");
    return access(path, X_OK) == 0 ? 0 : -1;
}

/* What ncu's run took: ELAPSED in all; PER_KERNEL, the seconds between its first and last
 * "==PROF== Profiling" line per kernel after the first (-1: fewer than two) */
struct ncu_time {
    double elapsed, per_kernel;
};

/* Runs ARGV with its output to LOG_FD (and to OUT when not NULL, read back); waits at most
 * DEADLINE_S seconds (0: no limit), then or on an interrupt sends SIGINT to its process group,
 * and SIGKILL GRACE_S later. *PROFILED counts ncu's "==PROF== Profiling" lines, shown as
 * progress against PREDICTED, with the time left at the rate measured so far. Returns the
 * wait status, -1 when it could not start. */
static int run_ncu(char *const *argv, int log_fd, const char *cwd, double deadline_s,
                   uint64_t predicted, int quiet, uint64_t *profiled, int *stopped,
                   double *per_kernel)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (cwd && chdir(cwd) != 0) {
            fprintf(stderr, "llmprof deep: cannot enter %s: %s\n", cwd, strerror(errno));
            _exit(127);
        }
        execv(argv[0], argv);
        fprintf(stderr, "llmprof deep: cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    double t0 = now_s(), kill_at = 0, first = 0, last = 0;
    char buf[8192], line[512], said[2048], left[64] = "";
    size_t ll = 0;
    int status = 0, done = 0, open_pipe = 1;
    *profiled = 0;
    *stopped = 0;
    while (!done) {
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int pr = open_pipe ? poll(&pf, 1, 1000) : (usleep(200000), 0);
        if (pr > 0) {
            ssize_t n = read(fds[0], buf, sizeof buf);
            if (n <= 0) {
                open_pipe = 0;
            } else {
                if (write(log_fd, buf, (size_t)n) != n) { /* the log is best effort */
                }
                for (ssize_t i = 0; i < n; i++) {
                    if (buf[i] != '\n') {
                        if (ll + 1 < sizeof line)
                            line[ll++] = buf[i];
                        continue;
                    }
                    line[ll] = 0;
                    if (!strncmp(line, "==PROF== Profiling", 18)) {
                        last = now_s();
                        if (!(*profiled)++)
                            first = last;
                    } else if (!strncmp(line, "==ERROR==", 9) || !strncmp(line, "==WARNING==", 11))
                        lp_cli_error("deep", "ncu said: %s", /* it quotes kernel names */
                                     lp_fmt_escape(said, sizeof said, line));
                    ll = 0;
                }
            }
        }
        double el = now_s() - t0;
        *per_kernel = *profiled >= 2 ? (last - first) / (double)(*profiled - 1) : -1;
        if (*profiled >= 3 && *profiled < predicted) { /* learned from the first ones */
            double rest = *per_kernel * (double)(predicted - *profiled) - (now_s() - last);
            snprintf(left, sizeof left, ", about %.0f s left at %.2f s per kernel",
                     rest > 0 ? rest : 0, *per_kernel);
        } else {
            left[0] = 0;
        }
        if (!quiet)
            lp_cli_progress("deep", "%llu of %llu kernels profiled, %.0f s%s", (unsigned long long)
                            *profiled, (unsigned long long)predicted, el, left);
        if (!*stopped && (interrupted || (deadline_s > 0 && el > deadline_s))) {
            *stopped = interrupted ? 2 : 1;
            kill(-pid, SIGINT);
            kill_at = el + GRACE_S;
        }
        if (kill_at > 0 && el > kill_at) {
            kill(-pid, SIGKILL);
            kill_at = 0;
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid && !open_pipe)
            done = 1;
        else if (w == pid) {
            /* ncu is gone; the program it ran may still hold the pipe: drain what is there */
            int fl = fcntl(fds[0], F_GETFL);
            fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
            ssize_t n;
            while ((n = read(fds[0], buf, sizeof buf)) > 0)
                if (write(log_fd, buf, (size_t)n) != n) {
                }
            done = 1;
        }
    }
    lp_cli_progress_end();
    close(fds[0]);
    return status;
}

/* Runs ARGV with its standard output to OUT_PATH: 0 when it exited 0. */
static int run_to_file(char *const *argv, const char *out_path, int err_fd)
{
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        if (err_fd >= 0)
            dup2(err_fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd);
    int status;
    if (pid < 0)
        return -1;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The first LEN - 1 bytes ARGV writes on its standard output, its error output dropped: 0
 * when it exited 0. */
static int run_capture(char *const *argv, char *buf, size_t len)
{
    int fds[2];
    buf[0] = 0;
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(fds[1], 1);
        if (null >= 0)
            dup2(null, 2);
        close(fds[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    /* read to the end, keeping the first LEN - 1 bytes: a child blocked on a full pipe
     * would never exit */
    char sink[4096];
    while ((n = read(fds[0], got + 1 < len ? buf + got : sink,
                     got + 1 < len ? len - 1 - got : sizeof sink)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if (got + 1 < len)
            got += (size_t)n;
    }
    buf[got] = 0;
    close(fds[0]);
    int status;
    if (pid < 0)
        return -1;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ncu's version as "2025.3.1.0"; 0 when it is recent enough, -1 with a message */
static int check_version(const char *ncu, char *version, size_t len)
{
    char *argv[] = {(char *)ncu, "--version", NULL}, out[2048];
    int year = 0;
    version[0] = 0;
    if (run_capture(argv, out, sizeof out) != 0) {
        lp_cli_error("deep", "%s --version failed: is it Nsight Compute's ncu? (--ncu PATH)", ncu);
        return -1;
    }
    char *v = strstr(out, "Version ");
    if (v && sscanf(v + 8, "%d", &year) == 1)
        snprintf(version, len, "%.*s", (int)strcspn(v + 8, " \n"), v + 8);
    if (year < MIN_NCU_YEAR) {
        lp_cli_error("deep", "%s is %s: llmprof deep needs Nsight Compute %d.1 or newer (NVTX "
                     "regular expressions, per-launch-config filters); install a newer one or "
                     "give it with --ncu PATH", ncu, version[0] ? version : "of unknown version",
                     MIN_NCU_YEAR);
        return -1;
    }
    return 0;
}

static double predict_s(const struct lp_deep_plan *p, double program_s, int full)
{
    return START_S + program_s * PROGRAM_FACTOR +
           (full ? S_PER_KERNEL_FULL : S_PER_KERNEL_REPORT) * (double)p->profiled;
}

/* The plan that fits BUDGET_S: fewer instances first, then fewer kernels per stage. 0, or
 * the exit status with a message: LP_CLI_EXIT_INPUT when the run has nothing to pick,
 * LP_CLI_EXIT_USAGE when not even one kernel per stage fits --budget. */
static int plan_to_fit(const struct lp_run *r, struct lp_deep_plan_options *po, double program_s,
                       int full, double budget_s, struct lp_deep_plan *p, int *trimmed)
{
    char err[512];
    *trimmed = 0;
    for (;;) {
        if (lp_deep_plan_make(r, po, p, err, sizeof err) != LP_OK) {
            lp_cli_error("deep", "%s", err);
            return LP_CLI_EXIT_INPUT;
        }
        if (predict_s(p, program_s, full) <= budget_s)
            return 0;
        if (po->instances <= 1 && po->top <= 1) {
            lp_cli_error("deep", "even one kernel per stage is predicted to take %.0f s (the "
                         "program alone %.0f s under llmprof record), more than --budget %.1f "
                         "min: raise the budget", predict_s(p, program_s, full), program_s,
                         budget_s / 60);
            lp_deep_plan_free(p);
            return LP_CLI_EXIT_USAGE;
        }
        if (po->instances > 1)
            po->instances--;
        else
            po->top--;
        po->share = 1; /* trimming: the share rule adds nothing past the top */
        *trimmed = 1;
        lp_deep_plan_free(p);
    }
}

static void print_plan(FILE *f, const struct lp_run *r, const struct lp_deep_plan *p,
                       double predicted)
{
    char ns[32], stage[256];
    for (size_t i = 0; i < p->n_picks; i++) {
        const struct lp_deep_pick *k = &p->picks[i];
        size_t nc = 0;
        for (size_t c = 0; c < p->n_configs; c++)
            nc += p->configs[c].pick == i;
        /* names from the trace: escaped (docs/report.md) */
        fprintf(f, "  %-10s %5.1f %%  %9s  %2zu config%s %3llu to profile  ",
                lp_fmt_escape(stage, sizeof stage, r->stages[k->stage].name), 100 * k->share,
                lp_fmt_ns((double)k->gpu_ns, ns, sizeof ns), nc, nc == 1 ? ", " : "s,",
                (unsigned long long)k->profiled);
        lp_fmt_puts(f, r->short_names[k->group]);
        fputc('\n', f);
    }
    fprintf(f, "%llu kernels to profile (skip %llu, then %llu per configuration), predicted "
            "%.0f s\n", (unsigned long long)p->profiled, (unsigned long long)p->skip,
            (unsigned long long)p->instances, predicted);
}

static json_t *plan_json(const struct lp_run *r, const struct lp_deep_plan *p)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < p->n_picks; i++) {
        const struct lp_deep_pick *k = &p->picks[i];
        json_t *cfgs = json_array();
        for (size_t c = 0; c < p->n_configs; c++) {
            const struct lp_deep_config *g = &p->configs[c];
            if (g->pick != i)
                continue;
            json_array_append_new(cfgs, json_pack("{s:[iii],s:[iii],s:I,s:I}", "grid",
                                                  g->grid[0], g->grid[1], g->grid[2], "block",
                                                  g->block[0], g->block[1], g->block[2],
                                                  "launches", (json_int_t)g->launches,
                                                  "profiled", (json_int_t)g->profiled));
        }
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:I,s:f,s:o}", "stage",
                                           r->stages[k->stage].name, "kernel",
                                           r->short_names[k->group], "mangled", k->mangled,
                                           "gpu_ns", (json_int_t)k->gpu_ns, "share", k->share,
                                           "configs", cfgs));
    }
    return a;
}

static int write_json(const char *path, json_t *j)
{
    return json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS) == 0 ? 0 : -1;
}

const char *const lp_cli_deep_files[] = {"deep.ncu-rep", "ncu-raw.csv", "deep.json", "ncu.log",
                                         NULL};

/* Removes DIR and the files deep writes in it (one that holds others stays). */
static void remove_dir(const char *dir)
{
    char path[PATH_MAX + 128];
    for (size_t i = 0; lp_cli_deep_files[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, lp_cli_deep_files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* The command to run: after "--", else the one RUN recorded (and its directory) */
static int recorded_cmd(const char *run, json_t **meta, char ***cmd, const char **cwd)
{
    char path[PATH_MAX + 16];
    *cmd = NULL;
    *cwd = NULL;
    if (lp_cli_meta_path(run, path, sizeof path) != 0 || !(*meta = json_load_file(path, 0, NULL))) {
        lp_cli_error("deep", "%s has no meta.json to take the command from: give it after "
                     "'--' (llmprof deep RUN -- CMD ARGS)", run);
        return -1;
    }
    json_t *c = json_object_get(*meta, "command");
    size_t n = json_array_size(c);
    if (!n) {
        lp_cli_error("deep", "%s: meta.json has no command: give it after '--'", path);
        return -1;
    }
    *cmd = calloc(n + 1, sizeof **cmd);
    for (size_t i = 0; *cmd && i < n; i++) {
        const char *w = json_string_value(json_array_get(c, i));
        if (!w) {
            lp_cli_error("deep", "%s: command word %zu is not a string: give the command after "
                         "'--'", path, i + 1);
            free(*cmd);
            *cmd = NULL;
            return -1;
        }
        (*cmd)[i] = (char *)w;
    }
    *cwd = json_string_value(json_object_get(*meta, "cwd"));
    return *cmd ? 0 : -1;
}

void lp_cli_deep_init(struct lp_cli_deep_opts *o)
{
    *o = (struct lp_cli_deep_opts){.budget_min = 30, .skip = -1};
}

int lp_cli_deep_prepare(struct lp_cli_deep_opts *o)
{
    static const char *const clocks[] = {"none", "base"};
    static const char *const sets[] = {"report", "full"};
    if (o->clock && strcmp(o->clock, "none") && strcmp(o->clock, "base"))
        return lp_cli_bad_value("deep", "--clock-control", o->clock, clocks, 2);
    if (o->sections && strcmp(o->sections, "report") && strcmp(o->sections, "full"))
        return lp_cli_bad_value("deep", "--sections", o->sections, sets, 2);
    if (find_ncu(o->ncu, o->ncu_path, sizeof o->ncu_path) != 0) {
        if (o->dry_run)
            return 0; /* the dry run prints the command it would give */
        lp_cli_error("deep", o->ncu ? "%s is not an executable file (--ncu PATH)"
                                    : "ncu not found in PATH or /usr/local/cuda/bin: install "
                                      "Nsight Compute or give it with --ncu PATH", o->ncu_path);
        return -1;
    }
    return o->dry_run ? 0 : check_version(o->ncu_path, o->version, sizeof o->version);
}

int lp_cmd_deep(int argc, char **argv)
{
    struct lp_cli_deep_opts o;
    lp_cli_deep_init(&o);
    int dash = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            dash = i;
            break;
        }
    int rc = lp_cli_parse(&deep_cmd, &o, dash, argv, NULL);
    if (rc != 0)
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    if (!o.run) {
        lp_cli_error("deep", "which run? usage: llmprof deep RUN [options] [-- CMD ARGS]");
        return LP_CLI_EXIT_USAGE;
    }
    if (dash < argc && dash + 1 == argc) {
        lp_cli_error("deep", "no command after '--'");
        return LP_CLI_EXIT_USAGE;
    }
    if (lp_cli_deep_prepare(&o) != 0)
        return LP_CLI_EXIT_USAGE;
    return lp_cli_deep_run(&o, dash < argc ? argv + dash + 1 : NULL);
}

/* What will be measured, on stdout; TRIMMED_TOP: the --top the budget left (0: none cut) */
static void say_plan(const struct lp_cli_deep_opts *o, const struct lp_run *r,
                     const struct lp_deep_plan *plan, double predicted, size_t trimmed_top)
{
    char run[512];
    printf("llmprof deep: %s, stages by %s\n", lp_fmt_escape(run, sizeof run, o->run),
           plan->by_nvtx ? "their NVTX ranges" : "launch configuration (no ranges to filter on)");
    print_plan(stdout, r, plan, predicted);
    if (trimmed_top)
        printf("trimmed to fit --budget %.1f min: --top %zu, --instances %llu\n", o->budget_min,
               trimmed_top, (unsigned long long)plan->instances);
    fflush(stdout);
}

/* run_ncu with SIGINT and SIGTERM caught (they stop ncu, keeping what it measured), timed
 * into *TM */
static int run_ncu_caught(const struct args *a, int log_fd, const char *cwd, double budget_s,
                          const struct lp_deep_plan *plan, int quiet, int *stopped,
                          struct ncu_time *tm)
{
    struct sigaction act = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&act.sa_mask);
    sigaction(SIGINT, &act, &old_int);
    sigaction(SIGTERM, &act, &old_term);
    double t0 = now_s();
    uint64_t profiled;
    int status = run_ncu(a->v, log_fd, cwd, budget_s, plan->profiled, quiet, &profiled, stopped,
                         &tm->per_kernel);
    tm->elapsed = now_s() - t0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return status;
}

/* After ncu: its raw page read back, RUN/deep/deep.json written (what was asked, predicted
 * and measured) and the results moved into DIR (over an earlier dive); what went wrong said.
 * The status of the command, or -1 when the results could not be written (TMP is then to
 * be removed). */
static int finish(const struct lp_cli_deep_opts *o, char *ncu, char *rep, const char *tmp,
                  const char *dir, int *log_fd, int status, int stopped,
                  const struct ncu_time *tm, double predicted, double budget_s,
                  const struct lp_deep_plan *plan, const struct lp_run *r, const struct args *a,
                  json_t **outp)
{
    char err[512], path[PATH_MAX + 128];
    struct stat st;
    json_t *out;
    int rc;
    /* the raw page, as the report reads it */
    strcat(rep, ".ncu-rep");
    int have_rep = stat(rep, &st) == 0;
    size_t measured = 0;
    if (have_rep) {
        char csv[PATH_MAX + 128];
        snprintf(csv, sizeof csv, "%s/ncu-raw.csv", tmp);
        /* ncu's default units: base units print percentages with two decimals only */
        char *iv[] = {ncu, "-i", rep, "--csv", "--page", "raw", "--print-kernel-base",
                      "mangled", NULL};
        struct lp_ncu_report *nr = NULL;
        if (run_to_file(iv, csv, *log_fd) != 0 || lp_ncu_read(&nr, csv, err, sizeof err) != LP_OK) {
            lp_cli_error("deep", "ncu's raw page of %s could not be read%s%s (see %s/ncu.log)",
                         rep, nr ? "" : ": ", nr ? "" : err, dir);
            unlink(csv);
        } else {
            measured = nr->n_kernels;
        }
        lp_ncu_free(nr);
    }
    out = *outp = json_pack("{s:s,s:s,s:s,s:s,s:o,s:f,s:f,s:o,s:f,s:I,s:I,s:I,s:I,s:b,s:s,s:o}",
                    "format", "llmprof-deep", "ncu", ncu, "ncu_version", o->version,
                    "sections", o->sections ? o->sections : "report",
                    "command", json_array(), "predicted_s", predicted, "elapsed_s", tm->elapsed,
                    "s_per_kernel", tm->per_kernel >= 0 ? json_real(tm->per_kernel) : json_null(),
                    "budget_s", budget_s, "predicted_kernels", (json_int_t)plan->profiled,
                    "measured_kernels", (json_int_t)measured, "skip", (json_int_t)plan->skip,
                    "instances", (json_int_t)plan->instances, "by_nvtx", plan->by_nvtx,
                    "stopped", stopped == 2 ? "interrupted" : stopped ? "budget" : "no",
                    "picks", plan_json(r, plan));
    /* the report as it is named once moved into place */
    char final_rep[PATH_MAX + 32];
    snprintf(final_rep, sizeof final_rep, "%s/deep", dir);
    for (size_t i = 0; out && i < a->n; i++)
        json_array_append_new(json_object_get(out, "command"),
                              json_string(i && !strcmp(a->v[i - 1], "-o") ? final_rep : a->v[i]));
    if (out && WIFEXITED(status))
        json_object_set_new(out, "ncu_exit", json_integer(WEXITSTATUS(status)));
    snprintf(path, sizeof path, "%s/deep.json", tmp);
    if (!out || write_json(path, out) != 0) {
        lp_cli_error("deep", "cannot write %s", path);
        return -1;
    }
    close(*log_fd);
    *log_fd = -1;
    /* in place of an earlier one (--force) */
    char aside[PATH_MAX + 64];
    snprintf(aside, sizeof aside, "%s/.deep-old.%ld", o->run, (long)getpid());
    int had = stat(dir, &st) == 0;
    if ((had && rename(dir, aside) != 0) || rename(tmp, dir) != 0) {
        lp_cli_error("deep", "cannot move the results into %s: %s (they are in %s)", dir,
                     strerror(errno), tmp);
        if (had)
            rename(aside, dir);
        return LP_CLI_EXIT_INPUT;
    }
    if (had)
        remove_dir(aside);
    rc = 0;
    if (stopped)
        lp_cli_error("deep", "%s after %.0f s: %zu kernels measured, kept in %s",
                     stopped == 2 ? "interrupted" : "over the budget", tm->elapsed, measured, dir);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        lp_cli_error("deep", "ncu %s %d (its output: %s/ncu.log)",
                     WIFEXITED(status) ? "exited with" : "was killed by signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), dir);
        rc = LP_CLI_EXIT_INPUT;
    }
    if (measured == 0) {
        lp_cli_error("deep", "ncu measured no kernel: its filters matched none (did the program "
                     "run as it did when recorded? %s/ncu.log has its output)", dir);
        rc = LP_CLI_EXIT_INPUT;
    }
    if (!o->quiet)
        printf("%zu kernels measured in %.0f s (predicted %llu in %.0f s); results in %s/; "
               "'llmprof report %s' adds \"Kernels in depth\"\n", measured, tm->elapsed,
               (unsigned long long)plan->profiled, predicted, dir, o->run);
    return rc;
}

/* What one deep dive holds until it ends. */
struct deep_state {
    char **traces;                /* the run's trace (one) */
    int n;
    char **cmd;                   /* the command to run: given, or the recorded one's words */
    const char *cwd;              /* where to run it (the recorded command's directory) */
    json_t *meta, *out;           /* the run's meta.json; deep.json */
    struct lp_trace *t;
    struct lp_run r;
    int analysed;
    struct lp_deep_plan plan;
    struct args a;                /* ncu's command line */
    struct lp_gpu_table gpus;
    int log_fd;
};

/* The run O names, read and analysed into D, and the command to run (GIVEN, else the one it
 * recorded): 0, or the exit status with a message. */
static int deep_load(const struct lp_cli_deep_opts *o, char *const *given, struct deep_state *d)
{
    char err[512], dir[PATH_MAX + 16];
    struct stat st;
    if (stat(o->run, &st) != 0 || !S_ISDIR(st.st_mode)) {
        lp_cli_error("deep", "%s is not a run directory (llmprof record -o DIR makes one)", o->run);
        return LP_CLI_EXIT_INPUT;
    }
    if ((d->n = lp_cli_run_traces("deep", o->run, &d->traces)) <= 0)
        return LP_CLI_EXIT_INPUT;
    if (d->n > 1) {
        lp_cli_error("deep", "%s holds %d traces (several processes); llmprof deep takes a run "
                     "of one", o->run, d->n);
        return LP_CLI_EXIT_INPUT;
    }
    snprintf(dir, sizeof dir, "%s/deep", o->run);
    if (stat(dir, &st) == 0 && !o->force && !o->dry_run) {
        lp_cli_error("deep", "%s already holds a deep dive: --force replaces it", dir);
        return LP_CLI_EXIT_USAGE;
    }
    if (!given && recorded_cmd(o->run, &d->meta, &d->cmd, &d->cwd) != 0)
        return LP_CLI_EXIT_INPUT;
    if (!d->meta) {
        char mp[PATH_MAX + 16];
        if (lp_cli_meta_path(o->run, mp, sizeof mp) == 0)
            d->meta = json_load_file(mp, 0, NULL);
    }
    /* the run's kernels and stages */
    if (lp_trace_read(&d->t, d->traces[0], err, sizeof err) != LP_OK) {
        lp_cli_error("deep", "%s", err);
        return LP_CLI_EXIT_INPUT;
    }
    struct lp_run_options ro = {0};
    if (lp_gpu_table_load(&d->gpus, NULL, err, sizeof err) == LP_OK)
        ro.gpus = &d->gpus;
    if (lp_run_analyze(d->t, &ro, &d->r, err, sizeof err) != LP_OK) {
        lp_cli_error("deep", "%s: %s", d->traces[0], err);
        return LP_CLI_EXIT_INPUT;
    }
    d->analysed = 1;
    return 0;
}

/* ncu run on D's plan into TMP, its results finished into DIR: the exit status. TMP is
 * removed when nothing could be kept. */
static int deep_measure(const struct lp_cli_deep_opts *o, char *const *given,
                        struct deep_state *d, const char *tmp, char *rep, const char *dir,
                        double predicted, double budget_s)
{
    char path[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/ncu.log", tmp);
    d->log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (d->log_fd < 0) {
        lp_cli_error("deep", "cannot write %s: %s", path, strerror(errno));
        remove_dir(tmp);
        return LP_CLI_EXIT_INPUT;
    }
    struct ncu_time tm = {0, -1};
    int stopped = 0;
    int status = run_ncu_caught(&d->a, d->log_fd, given ? NULL : d->cwd, budget_s, &d->plan,
                                o->quiet, &stopped, &tm);
    if (status < 0) {
        lp_cli_error("deep", "cannot run %s: %s", o->ncu_path, strerror(errno));
        remove_dir(tmp);
        return LP_CLI_EXIT_INPUT;
    }
    int rc = finish(o, (char *)o->ncu_path, rep, tmp, dir, &d->log_fd, status, stopped, &tm,
                    predicted, budget_s, &d->plan, &d->r, &d->a, &d->out);
    if (rc < 0) { /* said: the results could not be written */
        remove_dir(tmp);
        return LP_CLI_EXIT_INPUT;
    }
    return rc;
}

/* D's plan (trimmed to --budget), said, then ncu's command line: printed for a dry run, else
 * run. The exit status. */
static int deep_plan_run(const struct lp_cli_deep_opts *o, char *const *given,
                         struct deep_state *d)
{
    char dir[PATH_MAX + 16], tmp[PATH_MAX + 64], rep[PATH_MAX + 96];
    double program_s = json_real_value(json_object_get(d->meta, "duration_s"));
    struct lp_deep_plan_options po = {
        .top = o->top ? (size_t)o->top : 10, .skip = o->skip < 0 ? UINT64_MAX : (uint64_t)o->skip,
        .instances = o->instances ? (uint64_t)o->instances : 2};
    int trimmed, rc;
    double budget_s = o->budget_min * 60;
    int full = o->sections && !strcmp(o->sections, "full");
    if ((rc = plan_to_fit(&d->r, &po, program_s, full, budget_s, &d->plan, &trimmed)) != 0)
        return rc;
    double predicted = predict_s(&d->plan, program_s, full);
    if (!o->quiet || o->dry_run)
        say_plan(o, &d->r, &d->plan, predicted, trimmed ? po.top : 0);
    /* results go into a directory beside RUN/deep, moved in at the end */
    snprintf(dir, sizeof dir, "%s/deep", o->run);
    snprintf(tmp, sizeof tmp, "%s/.deep.%ld", o->run, (long)getpid());
    if (!o->dry_run && mkdir(tmp, 0755) != 0) {
        lp_cli_error("deep", "cannot create %s: %s", tmp, strerror(errno));
        return LP_CLI_EXIT_INPUT;
    }
    /* ncu adds .ncu-rep to the name it is given */
    snprintf(rep, sizeof rep, "%s/deep", tmp);
    if (ncu_args(&d->a, o->ncu_path, &d->plan, rep, o->clock ? o->clock : "none", full,
                 d->cmd) != 0) {
        lp_cli_error("deep", "out of memory");
        if (!o->dry_run)
            remove_dir(tmp);
        return LP_CLI_EXIT_INPUT;
    }
    if (o->dry_run) {
        for (size_t i = 0; i < d->a.n; i++) {
            if (i)
                putchar(' ');
            print_word(stdout, d->a.v[i], i == 0);
        }
        printf("\n");
        return 0;
    }
    return deep_measure(o, given, d, tmp, rep, dir, predicted, budget_s);
}

int lp_cli_deep_run(struct lp_cli_deep_opts *o, char *const *given)
{
    struct deep_state d = {.cmd = (char **)given, .log_fd = -1};
    int rc = deep_load(o, given, &d);
    if (rc == 0)
        rc = deep_plan_run(o, given, &d);
    if (d.log_fd >= 0)
        close(d.log_fd);
    args_free(&d.a);
    json_decref(d.out);
    lp_deep_plan_free(&d.plan);
    if (d.analysed)
        lp_run_free(&d.r);
    lp_trace_free(d.t);
    lp_gpu_table_free(&d.gpus);
    if (!given)
        free(d.cmd);
    json_decref(d.meta);
    lp_cli_free_list(d.traces, d.n > 0 ? d.n : 0);
    return rc;
}
