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
