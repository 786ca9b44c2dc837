/* Capture windows (record --capture): the program switches kernel recording on and off.
 * Outside the windows the per-launch activity (kernels, copies, allocations) is off, which
 * costs nothing measurable (docs/benchmarks.md, "The floor"); NVTX, NVML, GEMM shapes and the
 * launch calls' API records stay on (activity.c says why). Each window becomes one lp_window
 * record. */
#ifndef LP_COLLECT_WINDOW_H
#define LP_COLLECT_WINDOW_H

#include <cupti.h>

/* What opens windows: LLMPROF_CAPTURE's value. */
enum lp_capture {
    LP_CAPTURE_ALL = 0,          /* "all" (or unset): no windows, everything recorded */
    LP_CAPTURE_CUDA_PROFILER,    /* "cuda-profiler": cudaProfilerStart ... cudaProfilerStop */
};
/* LLMPROF_CAPTURE's mode; an unknown value is warned about and read as all. */
enum lp_capture lp_window_mode(void);
/* The subscriber's callback (lp_activity_options.callback). */
void CUPTIAPI lp_window_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data);
/* Enables the callbacks MODE needs on SUBSCRIBER, with activity started windowed. Without a
 * subscriber windows cannot open: then everything is recorded, and the trace says so. */
void lp_window_start(CUpti_SubscriberHandle subscriber, enum lp_capture mode);
/* At exit: closes an open window and writes the count to the END header. */
void lp_window_stop(void);

#endif
