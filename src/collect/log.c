/* Collector warnings (see log.h): deduplicated by text, so a failing call in a hot path
 * prints once, while every occurrence with a count still reaches the trace. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sink.h"

static int quiet;
static uint64_t seen[64];
static unsigned n_seen;

void lp_collect_set_quiet(int q) { quiet = q; }

static int first_time(const char *msg)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = msg; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (unsigned i = 0; i < n_seen; i++)
        if (seen[i] == h)
            return 0;
    if (n_seen < sizeof seen / sizeof *seen)
        seen[n_seen++] = h;
    return 1;
}

void lp_collect_warn(uint32_t source, uint64_t count, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lp_sink_lock();
    int first = first_time(msg);
    lp_sink_unlock();
    if (first && !quiet)
        fprintf(stderr, "llmprof: warning: %s\n", msg);
    if (first || count)
        lp_sink_loss(source, count, msg);
}
