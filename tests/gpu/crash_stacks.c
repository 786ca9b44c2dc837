/* libcrash_stacks.so, preloaded into a process under test (tests/gpu/aborts.sh): on SIGABRT,
 * SIGSEGV or SIGBUS it writes the faulting thread's native backtrace to stderr, then every
 * other thread's (each asked in turn by a real-time signal, 200 ms at most), then the
 * executable maps of llmprof, CUPTI, the driver, libc and Python, and dies by the same
 * signal. Addresses are printed as library+offset: `addr2line -e LIB OFFSET` names
 * llmprof's. Nothing here allocates: the faulting thread may hold malloc's lock. */
#define _GNU_SOURCE
#include <dirent.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int answered, in_fatal;

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static void comm_of(long tid, char *out, size_t n)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/self/task/%ld/comm", tid);
    int fd = open(p, O_RDONLY);
    ssize_t r = fd >= 0 ? read(fd, out, n - 1) : 0;
    if (fd >= 0)
        close(fd);
    out[r > 0 ? r : 0] = 0;
    out[strcspn(out, "\n")] = 0;
}

static void dump_self(const char *what)
{
    char line[160], comm[32];
    long tid = syscall(SYS_gettid);
    comm_of(tid, comm, sizeof comm);
    snprintf(line, sizeof line, "\n=== CRASH-STACKS %s thread %ld (%s)\n", what, tid, comm);
    say(line);
    void *frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
}

static void on_ask(int sig)
{
    (void)sig;
    dump_self("other");
    atomic_store(&answered, 1);
}

static void dump_others(void)
{
    static char dents[1 << 16];
    long self = syscall(SYS_gettid);
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    long got;
    while (dir >= 0 && (got = syscall(SYS_getdents64, dir, dents, sizeof dents)) > 0)
        for (long off = 0; off < got;) {
            struct dirent64 *e = (struct dirent64 *)(dents + off);
            off += e->d_reclen;
            long tid = atol(e->d_name);
            if (tid <= 0 || tid == self)
                continue;
            atomic_store(&answered, 0);
            if (syscall(SYS_tgkill, getpid(), tid, SIGRTMIN + 3) != 0)
                continue;
            for (int ms = 0; ms < 200 && !atomic_load(&answered); ms++)
                nanosleep(&(struct timespec){0, 1000000}, NULL);
            if (!atomic_load(&answered)) {
                char line[96], comm[32];
                comm_of(tid, comm, sizeof comm);
                snprintf(line, sizeof line, "\n=== CRASH-STACKS thread %ld (%s) did not answer\n",
                         tid, comm);
                say(line);
            }
        }
    if (dir >= 0)
        close(dir);
}

static void dump_maps(void)
{
    static char maps[1 << 20];
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0)
        return;
    ssize_t r, n = 0;
    while (n < (ssize_t)sizeof maps - 1 &&
           (r = read(fd, maps + n, sizeof maps - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    maps[n] = 0;
    static const char *const wanted[] = {"llmprof", "cupti", "libcuda", "libc.so", "libpython"};
    for (char *line = strtok(maps, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "r-xp"))
            continue;
        for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++)
            if (strstr(line, wanted[i])) {
                say(line);
                say("\n");
                break;
            }
    }
}

static void on_fatal(int sig)
{
    if (atomic_exchange(&in_fatal, 1)) { /* another thread faulted first: let it finish */
        sleep(5);
    } else {
        char line[96];
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        snprintf(line, sizeof line, "\n=== CRASH-STACKS signal %d at %ld.%03ld s\n", sig,
                 (long)t.tv_sec, t.tv_nsec / 1000000);
        say(line);
        dump_self("faulting");
        dump_others();
        dump_maps();
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void)
{
    void *frames[4];
    backtrace(frames, 4); /* loads libgcc_s now, not inside a handler */
    struct sigaction fatal = {.sa_handler = on_fatal};
    sigaction(SIGABRT, &fatal, NULL);
    sigaction(SIGSEGV, &fatal, NULL);
    sigaction(SIGBUS, &fatal, NULL);
    struct sigaction ask = {.sa_handler = on_ask, .sa_flags = SA_RESTART};
    sigaction(SIGRTMIN + 3, &ask, NULL);
}
