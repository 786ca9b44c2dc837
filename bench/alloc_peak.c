/* What holds a program's memory at its peak (issue 49), where heaptrack cannot be installed
 * (the GPU machine): an LD_PRELOAD shim that follows every block of 1 MiB or more through
 * malloc, calloc, realloc and free, and at the highest total of them keeps which blocks were
 * live, each with its size and the code that asked for it (the return address, as a module
 * and an offset for addr2line). Written at exit to $ALLOC_PEAK_OUT, else to stderr.
 *   LD_PRELOAD=build/lib/liballoc_peak.so ALLOC_PEAK_OUT=peak.txt llmprof report RUN
 *   bench/alloc_peak.sh peak.txt build/bin/llmprof    (names the code)
 * Blocks under 1 MiB are not followed: the report's per-kernel arrays are what it is for. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the project builds with hidden symbols; these four must replace libc's */
#define EXPORT __attribute__((visibility("default")))
#define MIN_BYTES ((size_t)1 << 20)
#define SLOTS 4096

struct block {
    void *p;
    size_t size;
    void *caller;
};

static struct block live[SLOTS], at_peak[SLOTS];
/* blocks past the slots are counted apart, never in the total: they could not be taken
 * out of it when freed */
static size_t n_live, n_at_peak, live_bytes, peak_bytes, untracked;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static size_t (*real_usable)(void *);

/* dlsym may itself call calloc, in the thread that binds: those few bytes come from here
 * and are never freed */
static _Alignas(16) char boot[4096];
static size_t boot_used;
static _Thread_local int binding;
static pthread_once_t bound_once = PTHREAD_ONCE_INIT;

static int from_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static void lock_table(void) { pthread_mutex_lock(&lock); }
static void unlock_table(void) { pthread_mutex_unlock(&lock); }

static void bind_once(void)
{
    binding = 1;
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    pthread_atfork(lock_table, unlock_table, unlock_table); /* no fork mid-update */
    binding = 0;
}

/* every thread's first call waits for the one that binds (pthread_once) */
static void bind_real(void) { pthread_once(&bound_once, bind_once); }

static void note_alloc(void *p, size_t size, void *caller)
{
    if (!p || size < MIN_BYTES)
        return;
    pthread_mutex_lock(&lock);
    if (n_live == SLOTS) {
        untracked++;
    } else {
        live[n_live++] = (struct block){p, size, caller};
        live_bytes += size;
        if (live_bytes > peak_bytes) {
            peak_bytes = live_bytes;
            memcpy(at_peak, live, n_live * sizeof *live);
            n_at_peak = n_live;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* P out of the live blocks (it may be freed already: only its address is compared) */
static void forget(void *p)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_live; i++)
        if (live[i].p == p) {
            live_bytes -= live[i].size;
            live[i] = live[--n_live];
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* 1 when P is a block this shim may follow: large, and not from the startup buffer */
static int large(void *p) { return p && !from_boot(p) && real_usable(p) >= MIN_BYTES; }

EXPORT void *malloc(size_t size)
{
    bind_real();
    void *p = real_malloc(size);
    note_alloc(p, size, __builtin_return_address(0));
    return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
    if (binding) {
        size_t need = (n * size + 15) & ~(size_t)15;
        if (need > sizeof boot - boot_used)
            return NULL;
        void *p = boot + boot_used;
        boot_used += need;
        return p; /* static storage: already zero */
    }
    bind_real();
    void *p = real_calloc(n, size);
    note_alloc(p, n * size, __builtin_return_address(0));
    return p;
}

EXPORT void *realloc(void *old, size_t size)
{
    bind_real();
    if (from_boot(old)) {
        void *p = real_malloc(size);
        size_t left = (size_t)(boot + sizeof boot - (char *)old);
        if (p)
            memcpy(p, old, size < left ? size : left);
        note_alloc(p, size, __builtin_return_address(0));
        return p;
    }
    int tracked = large(old); /* asked before: OLD may be gone once realloc returns */
    void *p = real_realloc(old, size);
    if (!p && size)
        return NULL; /* failed: OLD stays as it was */
    if (tracked)
        forget(old);
    note_alloc(p, size, __builtin_return_address(0));
    return p;
}

EXPORT void free(void *p)
{
    bind_real();
    if (large(p))
        forget(p);
    if (p && !from_boot(p))
        real_free(p);
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("ALLOC_PEAK_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    FILE *o = f ? f : stderr;
    fprintf(o, "peak of blocks >= 1 MiB: %zu bytes in %zu blocks (%zu not followed)\n",
            peak_bytes, n_at_peak, untracked);
    for (size_t i = 0; i < n_at_peak; i++) {
        Dl_info d;
        const char *mod = "?";
        uintptr_t off = (uintptr_t)at_peak[i].caller;
        if (dladdr(at_peak[i].caller, &d) && d.dli_fname) {
            mod = d.dli_fname;
            off -= (uintptr_t)d.dli_fbase;
        }
        fprintf(o, "%zu %s 0x%zx\n", at_peak[i].size, mod, (size_t)off);
    }
    if (f)
        fclose(f);
}
