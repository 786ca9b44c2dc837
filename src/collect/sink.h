/* The collector's sink: one trace writer per process behind one (recursive) lock. CUPTI's
 * buffer callbacks, the NVML sampler and the flusher all write through it. */
#ifndef LP_COLLECT_SINK_H
#define LP_COLLECT_SINK_H

#include <stdint.h>

#include "llmprof/trace.h"

/* Creates DIR/trace[.rank<R>].<host>.<pid>.lpt and writes the header chunk from the
 * meta set so far. 0 on success, -1 with ERR set. */
int lp_sink_open(const char *dir, char *err, size_t errlen);
/* Header values: before lp_sink_open they go in the first chunk, after it in the END one. */
void lp_sink_set_meta(const char *key, const char *value);
void lp_sink_set_meta_u64(const char *key, uint64_t value);
/* Tests only (LLMPROF_TEST_HOST, LLMPROF_TEST_CLOCK_SHIFT_NS), before lp_sink_open: the
 * trace names HOST (when fit for a file name: letters, digits, '.', '-', '_'; at most 63;
 * else NULL, the machine's name) and every time it holds is CLOCK_SHIFT_NS later, as a
 * second host whose clock is that far ahead would record them. */
void lp_sink_simulate_host(const char *host, uint64_t clock_shift_ns);
/* A time on the trace clock (start_trace_ns ...), moved as the records are */
void lp_sink_set_meta_time(const char *key, uint64_t ns);
void lp_sink_lock(void);
void lp_sink_unlock(void);
/* With the lock held. Records after close or a write failure are counted as lost. */
lp_str lp_sink_intern(const char *s);
void lp_sink_add(const struct lp_record *r);
/* The process used CUDA though it may record nothing that says so (capture windows that never
 * opened): its trace is kept at close. */
void lp_sink_mark_used(void);
/* Takes the lock itself. */
void lp_sink_loss(uint32_t source, uint64_t count, const char *what);
void lp_sink_flush(void);
void lp_sink_close(void);

#endif
