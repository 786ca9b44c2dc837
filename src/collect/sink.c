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

static void check_write(int rc)
{
    if (rc == LP_OK || write_failed)
        return;
    write_failed = 1;
    /* The warning goes to stderr only: the trace is what failed. */
    fprintf(stderr, "llmprof: warning: writing %s failed (%s); recording stops here, the "
                    "program runs on\n", path, lp_trace_writer_error(writer));
}

int lp_sink_open(const char *dir, char *err, size_t errlen)
{
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    const char *rank = NULL;
    const char *rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"};
    for (size_t i = 0; i < 4 && !rank; i++) {
        const char *v = getenv(rank_vars[i]);
        if (v && *v)
            rank = v;
    }
    if (rank)
        snprintf(path, sizeof path, "%s/trace.rank%s.%s.%ld%s", dir, rank, host, (long)getpid(),
                 LP_TRACE_SUFFIX);
    else
        snprintf(path, sizeof path, "%s/trace.%s.%ld%s", dir, host, (long)getpid(),
                 LP_TRACE_SUFFIX);
    lp_sink_lock();
    int rc = lp_trace_writer_open(&writer, path, NULL, err, errlen);
    if (rc == LP_OK) {
        for (size_t i = 0; i < n_early; i++) {
            lp_trace_writer_set_meta(writer, early[i].key, early[i].value);
            free(early[i].key);
            free(early[i].value);
        }
        n_early = 0;
        if (rank)
            lp_trace_writer_set_meta(writer, "rank", rank);
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
    check_write(lp_trace_writer_add(writer, r));
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
        if (!write_failed) {
            char buf[32];
            snprintf(buf, sizeof buf, "%" PRIu64, lp_trace_writer_records(writer));
            lp_trace_writer_set_meta(writer, "records_written", buf);
            check_write(lp_trace_writer_close(writer));
        } else {
            lp_trace_writer_close(writer);
        }
        writer = NULL;
    }
    lp_sink_unlock();
}
