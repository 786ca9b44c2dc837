/* The collector's sink (see sink.h). A failed write disables further writes, counts
 * what was lost and warns once: the profiled program is never stopped by it. */
#include "sink.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct lp_trace_writer *writer;
static char path[PATH_MAX];
static int write_failed;
static uint64_t lost_records;
/* a record other than NVML samples, device facts and CUPTI overhead was written */
static int did_work;
/* meta set before the writer exists */
static struct lp_meta_kv early[64];
static size_t n_early;

void lp_sink_lock(void) { pthread_mutex_lock(&lock); }
void lp_sink_unlock(void) { pthread_mutex_unlock(&lock); }

void lp_sink_set_meta(const char *key, const char *value)
{
    lp_sink_lock();
    if (writer) {
        lp_trace_writer_set_meta(writer, key, value);
    } else if (n_early < sizeof early / sizeof *early) {
        early[n_early].key = strdup(key);
        early[n_early].value = strdup(value ? value : "");
        if (early[n_early].key && early[n_early].value)
            n_early++;
    }
    lp_sink_unlock();
}

void lp_sink_set_meta_u64(const char *key, uint64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, value);
    lp_sink_set_meta(key, buf);
}

/* LLMPROF_TEST_HOST and LLMPROF_TEST_CLOCK_SHIFT_NS (lp_sink_simulate_host) */
static char test_host[64];
static uint64_t test_shift_ns;

void lp_sink_simulate_host(const char *host, uint64_t clock_shift_ns)
{
    size_t n = host ? strlen(host) : 0;
    test_host[0] = 0;
    if (n && n < sizeof test_host &&
        strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == n)
        memcpy(test_host, host, n + 1);
    test_shift_ns = clock_shift_ns;
}

void lp_sink_set_meta_time(const char *key, uint64_t ns)
{
    lp_sink_set_meta_u64(key, ns + test_shift_ns);
}

static void check_write(int rc)
{
    if (rc == LP_OK || write_failed)
        return;
    write_failed = 1;
    /* The warning goes to stderr only: the trace is what failed. */
    fprintf(stderr, "llmprof: warning: writing %s failed (%s); recording stops here, the "
                    "program runs on\n", path, lp_trace_writer_error(writer));
}

/* The first of VARS (NULL-terminated) set to a decimal number of at most 9 digits: what
 * launchers (torchrun, mpirun, srun, PMI) export; anything else is not a rank and could not
 * name a file safely. */
static const char *env_number(const char *const *vars)
{
    for (; *vars; vars++) {
        const char *v = getenv(*vars);
        size_t n = v ? strspn(v, "0123456789") : 0;
        if (n > 0 && n <= 9 && !v[n])
            return v;
    }
    return NULL;
}

int lp_sink_open(const char *dir, char *err, size_t errlen)
{
    char host[256] = "unknown";
    if (test_host[0])
        snprintf(host, sizeof host, "%s", test_host);
    else
        gethostname(host, sizeof host - 1);
    /* global rank first; a local rank alone still tells one host's processes apart */
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                            "PMI_RANK", "LOCAL_RANK", NULL};
    static const char *const local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                             "SLURM_LOCALID", "MPI_LOCALRANKID", NULL};
    static const char *const world_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                                             "SLURM_NTASKS", "PMI_SIZE", NULL};
    const char *rank = env_number(rank_vars), *local = env_number(local_vars),
               *world = env_number(world_vars);
    if (rank)
        snprintf(path, sizeof path, "%s/trace.rank%s.%s.%ld%s", dir, rank, host, (long)getpid(),
                 LP_TRACE_SUFFIX);
    else
        snprintf(path, sizeof path, "%s/trace.%s.%ld%s", dir, host, (long)getpid(),
                 LP_TRACE_SUFFIX);
    lp_sink_lock();
    did_work = 0; /* a new trace (a forked child's too) */
    struct lp_trace_writer_options opt = {.clock_shift_ns = test_shift_ns};
    int rc = lp_trace_writer_open(&writer, path, &opt, err, errlen);
    if (rc == LP_OK) {
        for (size_t i = 0; i < n_early; i++) {
            lp_trace_writer_set_meta(writer, early[i].key, early[i].value);
            free(early[i].key);
            free(early[i].value);
        }
        n_early = 0;
        if (rank)
            lp_trace_writer_set_meta(writer, "rank", rank);
        if (local)
            lp_trace_writer_set_meta(writer, "local_rank", local);
        if (world)
            lp_trace_writer_set_meta(writer, "world_size", world);
        lp_trace_writer_set_meta(writer, "host", host);
        check_write(lp_trace_writer_write_header(writer));
    }
    lp_sink_unlock();
    return rc == LP_OK ? 0 : -1;
}

lp_str lp_sink_intern(const char *s)
{
    return writer && !write_failed ? lp_trace_writer_intern(writer, s) : 0;
}

void lp_sink_add(const struct lp_record *r)
{
    if (!writer || write_failed) {
        lost_records++;
        return;
    }
    if (r->type != LP_REC_NVML && r->type != LP_REC_DEVICE && r->type != LP_REC_OVERHEAD)
        did_work = 1;
    check_write(lp_trace_writer_add(writer, r));
}

void lp_sink_mark_used(void)
{
    lp_sink_lock();
    did_work = 1;
    lp_sink_unlock();
}

void lp_sink_loss(uint32_t source, uint64_t count, const char *what)
{
    lp_sink_lock();
    struct lp_record r = {.type = LP_REC_LOSS};
    r.u.loss.source = source;
    r.u.loss.count = count;
    r.u.loss.what = lp_sink_intern(what);
    lp_sink_add(&r);
    lp_sink_unlock();
}

void lp_sink_flush(void)
{
    lp_sink_lock();
    if (writer && !write_failed)
        check_write(lp_trace_writer_flush(writer));
    lp_sink_unlock();
}

void lp_sink_close(void)
{
    lp_sink_lock();
    if (writer) {
        if (lost_records)
            fprintf(stderr, "llmprof: warning: %" PRIu64 " records arrived after the trace "
                            "closed or failed and were not written\n", lost_records);
        if (!did_work && !write_failed) {
            /* CUDA initialised, nothing used (torchrun's agent, a launcher's parent): a
             * trace of NVML samples alone would pass for an idle rank. Under capture
             * windows a process that made a CUDA context is kept (lp_sink_mark_used), so
             * that a window that never opened is said, not taken for an unused GPU. */
            lp_trace_writer_close(writer);
            unlink(path);
        } else if (!write_failed) {
            check_write(lp_trace_writer_close(writer)); /* it says the records written */
        } else {
            lp_trace_writer_close(writer);
        }
        writer = NULL;
    }
    lp_sink_unlock();
}
