/* Process facts for the trace header (see procinfo.h). Versions of CUDA libraries come
 * from the copies the process has loaded, found with dlsym, never from the build. */
#include "procinfo.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti_version.h>

#include "cupti_api.h"
#include "sink.h"
#include "llmprof/version.h"

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_cmdline(void)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* argv is NUL-separated; the header keeps it with \x1f between arguments so that
     * arguments containing spaces stay distinct */
    for (size_t i = 0; n > 0 && i < n - 1; i++)
        if (buf[i] == 0)
            buf[i] = 0x1f;
    lp_sink_set_meta("argv", buf);
}

static void set_version(const char *key, const char *symbol)
{
    int (*get)(int *) = NULL;
    *(void **)&get = lp_cuda_driver_sym(symbol);
    int v = 0;
    if (get && get(&v) == 0)
        lp_sink_set_meta_u64(key, (uint64_t)v);
}

/* At start, and again at the end: a program that used NVTX first loads CUDA later. */
static void set_versions(void)
{
    set_version("cuda_driver_version", "cuDriverGetVersion");
    set_version("cuda_runtime_version", "cudaRuntimeGetVersion");
}

void lp_procinfo_set_start_meta(uint32_t cupti_version, const char *cupti_path)
{
    lp_sink_set_meta("format", "llmprof-trace");
    lp_sink_set_meta("llmprof_version", LLMPROF_VERSION);
    lp_sink_set_meta_u64("pid", (uint64_t)getpid());
    lp_sink_set_meta_u64("ppid", (uint64_t)getppid());
    lp_sink_set_meta_u64("main_tid", (uint64_t)syscall(SYS_gettid));
    set_cmdline();
    lp_sink_set_meta("clock", "cupti-timestamp-ns (CLOCK_REALTIME on Linux)");
    lp_sink_set_meta_time("start_realtime_ns", clock_ns(CLOCK_REALTIME));
    lp_sink_set_meta_u64("start_monotonic_ns", clock_ns(CLOCK_MONOTONIC));
    lp_sink_set_meta_u64("cupti_version", cupti_version);
    lp_sink_set_meta_u64("cupti_build_version", CUPTI_API_VERSION);
    lp_sink_set_meta("cupti_path", cupti_path);
    set_versions();
    const char *vars[] = {"CUDA_VISIBLE_DEVICES", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
                          "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v) {
            char key[64];
            snprintf(key, sizeof key, "env.%s", vars[i]);
            lp_sink_set_meta(key, v);
        }
    }
}

void lp_procinfo_set_end_meta(void)
{
    set_versions();
    lp_sink_set_meta_time("end_realtime_ns", clock_ns(CLOCK_REALTIME));
    lp_sink_set_meta_u64("end_monotonic_ns", clock_ns(CLOCK_MONOTONIC));
}
