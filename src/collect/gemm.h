/* GEMM capture: the cuBLAS and cuBLASLt entry points programs call, interposed when
 * libllmprof.so is preloaded (`llmprof record` sets LD_PRELOAD unless --no-gemm). Each call
 * becomes one lp_gemm record: shape, types, compute type, and the algorithm and tile read
 * once per shape from cuBLASLt's logger. Records wait in a bounded queue that the flusher
 * drains, so the calling thread never compresses or writes. */
#ifndef LP_COLLECT_GEMM_H
#define LP_COLLECT_GEMM_H

#include <stdint.h>

/* Starts recording (after the sink is open). NOTIFY wakes the flusher when the queue fills
 * up. Acts on LLMPROF_GEMM (0: off; config.h) and the user's CUBLASLT_LOG_* settings. */
void lp_gemm_start(void (*notify)(void));
/* Moves queued records to the sink; the flusher's thread. */
void lp_gemm_drain(void);
/* Stops recording, drains, and writes the counters to the END header. */
void lp_gemm_stop(void);
/* Capture windows: 0 leaves calls unrecorded until 1. Returns 0. */
int lp_gemm_set_recording(int on);
/* In a forked child: the parent's queue is not ours. */
void lp_gemm_forget(void);

#endif
