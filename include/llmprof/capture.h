/* What `record --capture` (LLMPROF_CAPTURE) asks for: when kernels are recorded. One parser,
 * used by the CLI to refuse a bad value before the program runs and by the collector to act
 * on it; the trace header's "capture" keeps the text as given. */
#ifndef LLMPROF_CAPTURE_H
#define LLMPROF_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

enum lp_capture_mode {
    LP_CAPTURE_MODE_ALL = 0,       /* "all": no windows, everything recorded */
    LP_CAPTURE_MODE_CUDA_PROFILER, /* "cuda-profiler": cudaProfilerStart ... cudaProfilerStop */
    LP_CAPTURE_MODE_NVTX,          /* "nvtx:REGEX[@FIRST[-LAST]][/EVERY]": ranges by name */
    LP_CAPTURE_MODE_SIGNAL,        /* "signal": SIGUSR1 opens a window, the next one closes it */
    LP_CAPTURE_MODE_GRAPHS,        /* "graphs[@FIRST[-LAST]][/EVERY]": steps by graph launches */
};

/* For graphs: a step begins at each CUDA graph launch of a graph already launched since the
 * last step began (one graph per step, or a step's pieces in the same order: a step
 * begins at its first piece); steps are counted from 1. Step N is recorded when N >= FIRST,
 * (LAST == 0 or N <= LAST) and (N - FIRST) % EVERY == 0, from its first launch to the next
 * step's (consecutive steps chosen make one window).
 * For nvtx: each push of an NVTX range whose name matches RANGE (POSIX extended regular
 * expression, case-insensitive) is the next occurrence, counted from 1 across threads;
 * occurrence N opens a window, closed when that range is popped, when N >= FIRST,
 * (LAST == 0 or N <= LAST), (N - FIRST) % EVERY == 0 and no window is open. */
struct lp_capture_spec {
    enum lp_capture_mode mode;
    char range[256];
    uint64_t first, last, every;
};

/* Parses TEXT (NULL or empty: all). 0, or -1 with ERR saying what is wrong and what works. */
int lp_capture_parse(const char *text, struct lp_capture_spec *out, char *err, size_t errlen);
/* Whether occurrence N (from 1) of the range opens a window. */
int lp_capture_selects(const struct lp_capture_spec *s, uint64_t n);

#endif
