/* The collector's fail-open paths, without a GPU: a write failure (disk full), NVML
 * missing, CUPTI missing. Each must leave a warning and a loss record, never a crash.
 * Then launch records and capture windows, driven through a fake CUPTI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <generated_nvtx_meta.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/activity.h"
#include "collect/attach.h"
#include "collect/cupti_api.h"
#include "collect/dlbind.h"
#include "collect/launch.h"
#include "collect/log.h"
#include "collect/nvml.h"
#include "collect/nvtx.h"
#include "collect/sink.h"
#include "collect/window.h"
#include "llmprof/capture.h"
#include "llmprof/trace.h"

static char dir[] = "/tmp/lp_test_collect_XXXXXX";

static struct lp_trace *read_only_trace(const char *subdir)
{
    char cmd[512], path[512] = "";
    snprintf(cmd, sizeof cmd, "ls %s/%s/*.lpt", dir, subdir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = 0;
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    return t;
}

static void make_subdir(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, name);
    assert_int_equal(mkdir(out, 0755), 0);
}

/* A child opening the sink in SUB (as a simulated host HOST whose clock is SHIFT ns ahead,
 * with a start time, when HOST is not NULL), adding R, closing; it exits 0 */
static void sink_child_record(const char *sub, const struct lp_record *r, const char *host,
                              uint64_t shift)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (host) {
            lp_sink_simulate_host(host, shift);
            lp_sink_set_meta_time("start_trace_ns", 900000000);
        }
        char err[256];
        if (lp_sink_open(sub, err, sizeof err) != 0)
            _exit(3);
        lp_sink_lock();
        lp_sink_add(r);
        lp_sink_unlock();
        lp_sink_close();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A child opening the sink in SUB with the launcher's variables set, adding one record of
 * TYPE, closing. */
static void sink_child(const char *sub, const char *rank, enum lp_rec_type type)
{
    setenv("RANK", rank, 1);
    setenv("LOCAL_RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    struct lp_record r = {.type = type};
    sink_child_record(sub, &r, NULL, 0);
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    unsetenv("WORLD_SIZE");
}

static size_t count_traces(const char *sub)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c 'lpt$'", sub);
    FILE *p = popen(cmd, "r");
    unsigned n = 0;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%u", &n), 1);
    pclose(p);
    return n;
}

/* The rank names the trace and the header keeps the launcher's numbers; a RANK that is no
 * number (it would name a path) is passed over for the next variable. A process that
 * recorded only NVML samples (a launcher's parent that initialised CUDA) leaves no trace. */
static void test_sink_ranks(void **state)
{
    (void)state;
    char sub[256];
    make_subdir("ranked", sub, sizeof sub);
    sink_child(sub, "../x", LP_REC_KERNEL);
    assert_int_equal(count_traces(sub), 1);
    char cmd[512], name[512] = "";
    snprintf(cmd, sizeof cmd, "ls %s", sub);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(name, sizeof name, p));
    pclose(p);
    assert_memory_equal(name, "trace.rank3.", 12);
    struct lp_trace *t = read_only_trace("ranked");
    assert_string_equal(lp_trace_meta(t, "rank"), "3");
    assert_string_equal(lp_trace_meta(t, "local_rank"), "3");
    assert_string_equal(lp_trace_meta(t, "world_size"), "4");
    lp_trace_free(t);
    make_subdir("idle", sub, sizeof sub);
    sink_child(sub, "1", LP_REC_NVML);
    assert_int_equal(count_traces(sub), 0);
    sink_child(sub, "1", LP_REC_MEMORY);
    assert_int_equal(count_traces(sub), 1);
    t = read_only_trace("idle");
    assert_string_equal(lp_trace_meta(t, "rank"), "1");
    lp_trace_free(t);
}

/* A child recording one kernel and a start time as a simulated second host HOST whose clock
 * is SHIFT ns ahead (what LLMPROF_TEST_HOST and LLMPROF_TEST_CLOCK_SHIFT_NS set) */
static void shifted_child(const char *sub, const char *host, uint64_t shift)
{
    struct lp_record r = {.type = LP_REC_KERNEL};
    r.u.kernel = (struct lp_kernel){.start = 1000000000, .end = 1000000100, .stream = 7};
    sink_child_record(sub, &r, host, shift);
}

/* The test knobs of a simulated second host (issue 50): the trace and its file name give
 * the host named, and every time it holds, records and header, is moved by the shift; a
 * host name unfit for a file name is passed over for the machine's own. */
static void test_sink_test_host(void **state)
{
    (void)state;
    char sub[256];
    make_subdir("simhost", sub, sizeof sub);
    shifted_child(sub, "sim-host-b", 5000000);
    struct lp_trace *t = read_only_trace("simhost");
    assert_string_equal(lp_trace_meta(t, "host"), "sim-host-b");
    assert_non_null(strstr(t->path, ".sim-host-b."));
    assert_string_equal(lp_trace_meta(t, "start_trace_ns"), "905000000");
    assert_int_equal(t->n_kernels, 1);
    assert_int_equal(t->kernels[0].start, 1005000000);
    assert_int_equal(lp_trace_kernel_end(t, &t->kernels[0]), 1005000100);
    lp_trace_free(t);
    make_subdir("badhost", sub, sizeof sub);
    shifted_child(sub, "../x", 0);
    t = read_only_trace("badhost");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    assert_string_equal(lp_trace_meta(t, "host"), host);
    assert_int_equal(t->kernels[0].start, 1000000000);
    lp_trace_free(t);
}

/* Disk full while recording: the program (here a child process) goes on and exits
 * normally, stderr says so once, and what reached the disk stays readable. */
static void test_write_failure(void **state)
{
    (void)state;
    char sub[256], errfile[300];
    make_subdir("full", sub, sizeof sub);
    snprintf(errfile, sizeof errfile, "%s/stderr.txt", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG, as on a full disk */
        struct rlimit lim = {2 << 20, 2 << 20};
        setrlimit(RLIMIT_FSIZE, &lim);
        char err[256];
        if (lp_sink_open(sub, err, sizeof err) != 0)
            _exit(3);
        uint64_t x = 88172645463325252ull;
        for (int i = 0; i < 400000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            struct lp_record r = {.type = LP_REC_KERNEL};
            r.u.kernel.start = x;
            r.u.kernel.end = x + (x >> 40);
            r.u.kernel.correlation = (uint32_t)x;
            lp_sink_lock();
            lp_sink_add(&r);
            lp_sink_unlock();
        }
        lp_sink_close();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    FILE *f = fopen(errfile, "r");
    char line[512] = "";
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_non_null(strstr(line, "failed"));
    assert_non_null(strstr(line, "the program runs on"));
    struct lp_trace *t = read_only_trace("full");
    assert_true(t->n_kernels > 0);
    assert_true(t->n_kernels < 400000);
    assert_false(t->complete);
    lp_trace_free(t);
}

static void test_nvml_missing(void **state)
{
    (void)state;
    char sub[256], err[256];
    make_subdir("nonvml", sub, sizeof sub);
    assert_int_equal(lp_sink_open(sub, err, sizeof err), 0);
    setenv("LLMPROF_NVML_PATH", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(lp_nvml_start(20), -1);
    struct lp_record r = {.type = LP_REC_KERNEL};
    r.u.kernel.start = 1;
    r.u.kernel.end = 2;
    lp_sink_lock();
    lp_sink_add(&r);
    lp_sink_unlock();
    lp_sink_close();
    struct lp_trace *t = read_only_trace("nonvml");
    assert_int_equal(t->n_kernels, 1); /* everything else is still recorded */
    assert_int_equal(t->n_losses, 1);
    assert_int_equal(t->losses[0].source, LP_LOSS_SOURCE_NVML);
    assert_non_null(strstr(lp_trace_str(t, t->losses[0].what), "NVML"));
    assert_true(t->complete);
    lp_trace_free(t);
}

static void test_cupti_missing(void **state)
{
    (void)state;
    char err[1024];
    setenv("LLMPROF_CUPTI_PATH", "/nonexistent/libcupti.so.13", 1);
    assert_int_equal(lp_cupti_load(err, sizeof err), -1);
    assert_non_null(strstr(err, "no CUPTI library found"));
    assert_non_null(strstr(err, "LLMPROF_CUPTI_PATH"));
    assert_null(lp_cupti.ActivityEnable);
    /* the checking macro turns a missing function into a warning, not a crash */
    assert_int_equal(LP_CUPTI(ActivityFlushAll, 0), CUPTI_ERROR_NOT_INITIALIZED);
}

static void test_kinds_parse(void **state)
{
    (void)state;
    unsigned k = 0;
    char err[256];
    assert_int_equal(lp_kinds_parse("kernel,nvtx", &k, err, sizeof err), 0);
    assert_int_equal(k, LP_KIND_KERNEL | LP_KIND_MARKER);
    assert_int_equal(lp_kinds_parse("kernel,api,memory,memcpy,memset,device,overhead,marker", &k,
                                    err, sizeof err), 0);
    assert_int_equal(k, LP_KINDS_DEFAULT);
    assert_int_equal(lp_kinds_parse("kernel,gemm", &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown kind 'gemm'"));
    assert_int_equal(lp_kinds_parse("", &k, err, sizeof err), 0);
    assert_int_equal(k, 0);
    assert_string_equal(err, "unknown kind 'gemm' (known: kernel, marker, device, overhead, "
                             "memcpy, memset, memory, api)");
}

/* Every kind of LP_KIND_LIST is recorded by default, and the default holds nothing else:
 * a kind added to the list cannot be left out of it (as 0xff once left out bit 8). */
static void test_kinds_default(void **state)
{
    (void)state;
    char err[256];
    unsigned all = 0;
    for (unsigned i = 0; lp_kind_name(i); i++) {
        unsigned k = 0;
        assert_int_equal(lp_kinds_parse(lp_kind_name(i), &k, err, sizeof err), 0);
        assert_int_equal(k, 1u << i);
        assert_true(LP_KINDS_DEFAULT & k);
        all |= k;
    }
    assert_int_equal(all, LP_KINDS_DEFAULT);
    assert_int_equal(LP_KINDS_LIGHT & ~LP_KINDS_DEFAULT, 0);
    /* the bits are in traces' headers: the values of existing kinds never change */
    assert_int_equal(LP_KIND_KERNEL, 1);
    assert_int_equal(LP_KIND_API, 1 << 7);
    /* --light: nothing per launch */
    assert_int_equal(LP_KINDS_LIGHT, LP_KIND_MARKER | LP_KIND_DEVICE | LP_KIND_OVERHEAD);
}

/* One helper binds every library's list: optional symbols stay NULL, a later entry for a
 * filled slot is skipped (an older spelling), and a missing required one stops the list. */
static void test_dl_bind(void **state)
{
    (void)state;
    void *len = NULL, *nothing = NULL, *alias = NULL, *after = NULL;
    const struct lp_dl_sym ok[] = {
        LP_DL_SYM(len, "strlen", 1),
        LP_DL_SYM(nothing, "lp_no_such_function", 0),
        LP_DL_SYM(alias, "lp_no_such_function_v2", 0),
        LP_DL_SYM(alias, "strchr", 0),
        LP_DL_SYM(alias, "strrchr", 0),
    };
    assert_null(lp_dl_bind(NULL, LP_DL_FALLBACK_DEFAULT, ok, sizeof ok / sizeof *ok));
    assert_ptr_equal(len, dlsym(RTLD_DEFAULT, "strlen"));
    assert_null(nothing);
    assert_ptr_equal(alias, dlsym(RTLD_DEFAULT, "strchr"));
    len = NULL;
    const struct lp_dl_sym bad[] = {
        LP_DL_SYM(len, "lp_no_such_function", 1),
        LP_DL_SYM(after, "strlen", 0),
    };
    assert_string_equal(lp_dl_bind(NULL, LP_DL_FALLBACK_DEFAULT, bad, 2), "lp_no_such_function");
    assert_null(after);
    assert_null(lp_dl_bind(NULL, LP_DL_FALLBACK_NONE, bad + 1, 1));
    assert_null(after); /* no handle, no fallback: nothing */
    /* a wrapper of ours is never its own real function */
    void *self = dlsym(RTLD_DEFAULT, "strlen");
    assert_null(lp_dl_sym(NULL, "strlen", LP_DL_FALLBACK_DEFAULT, self));
}

/* Launch records and capture windows, driven through a fake CUPTI. The collector's modules
 * keep their state in file statics with no reset, so each scenario runs in a forked child
 * against a sink of its own; the parent reads the trace back. A child cannot report through
 * cmocka (a failed assertion would unwind into the child's copy of the runner, which would
 * run the remaining tests), so it checks with NEED: the line and condition on stderr, and
 * exit status 1. */
#define NEED(cond)                                                                         \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #cond); \
            _exit(1);                                                                      \
        }                                                                                  \
    } while (0)

static int subscriber_token, context_token, domain_token;
#define FAKE_SUB ((CUpti_SubscriberHandle)&subscriber_token)
#define FAKE_CTX ((CUcontext)&context_token)
#define FAKE_NVTX_DOMAIN ((nvtxDomainHandle_t)&domain_token)
enum { CB_LAUNCH = 1, CB_MALLOC = 2, CB_GRAPH = 3, CB_BEGIN_CAPTURE = 5, CB_END_CAPTURE = 6,
       CB_INSTANTIATE = 7, DRV_INSTANTIATE = 3 };
/* the runtime's ids, but DRV_INSTANTIATE, the driver's (as are its 1 and 2) */

static CUptiResult fake_callback_name(CUpti_CallbackDomain domain, uint32_t cbid,
                                      const char **name)
{
    static const char *const runtime[] = {[CB_LAUNCH] = "cudaLaunchKernel_v7000",
                                          [CB_MALLOC] = "cudaMalloc_v3020",
                                          [CB_GRAPH] = "cudaGraphLaunch_v10000",
                                          [CB_BEGIN_CAPTURE] = "cudaStreamBeginCapture_v10000",
                                          [CB_END_CAPTURE] = "cudaStreamEndCapture_v10000",
                                          [CB_INSTANTIATE] = "cudaGraphInstantiate_v10000"};
    static const char *const driver[] = {[1] = "cuLaunchKernel", [2] = "cuMemAlloc_v2",
                                         [DRV_INSTANTIATE] = "cuGraphInstantiateWithFlags"};
    const char *n = NULL;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < sizeof runtime / sizeof *runtime)
        n = runtime[cbid];
    else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < sizeof driver / sizeof *driver)
        n = driver[cbid];
    if (!n)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *name = n;
    return CUPTI_SUCCESS;
}

struct enable_call {
    uint32_t on;
    CUpti_SubscriberHandle sub;
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
};
static struct enable_call enables[256];
static size_t n_enables;
static CUpti_CallbackId refused_driver_cbid; /* CUPTI refuses this driver callback */

static CUptiResult fake_enable_callback(uint32_t on, CUpti_SubscriberHandle sub,
                                        CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (on && domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == refused_driver_cbid)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (n_enables < sizeof enables / sizeof *enables)
        enables[n_enables] = (struct enable_call){on, sub, domain, cbid};
    n_enables++;
    return CUPTI_SUCCESS;
}

static CUptiResult fake_subscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user)
{
    (void)cb, (void)user;
    *sub = FAKE_SUB;
    return CUPTI_SUCCESS;
}

/* llmprof's subscriber slot held, as FAKE_SUB (attach.c enables every callback on it). */
static void hold_fake_sub(void)
{
    lp_cupti.Subscribe = fake_subscribe;
    if (lp_attach_subscribe(NULL) != CUPTI_SUCCESS || lp_attach_subscriber() != FAKE_SUB)
        _exit(1);
}

/* The trace clock: strictly increasing (1 us a reading) from the real time, so that a
 * window's close is always after its open and the reader finds the times plausible. */
static uint64_t fake_now;
static CUptiResult fake_timestamp(uint64_t *t)
{
    *t = __atomic_add_fetch(&fake_now, 1000, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

/* in_child adds one allocation record unless this is set */
static int in_child_records_nothing;

/* Runs SCENARIO in a child with the fake CUPTI and a sink in DIR/NAME; the child must exit 0.
 * Its stderr goes to DIR/NAME.stderr, shown when it fails (the sink's count of records lost
 * by earlier tests, inherited through fork, would only be noise). */
static void in_child(const char *name, void (*scenario)(void))
{
    char sub[256], errfile[300];
    make_subdir(name, sub, sizeof sub);
    snprintf(errfile, sizeof errfile, "%s.stderr", sub);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        fake_now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        lp_cupti.GetCallbackName = fake_callback_name;
        lp_cupti.EnableCallback = fake_enable_callback;
        lp_cupti.GetTimestamp = fake_timestamp;
        unsetenv("LLMPROF_LAUNCH");
        lp_collect_set_quiet(1);
        char err[256];
        NEED(lp_sink_open(sub, err, sizeof err) == 0);
        scenario();
        /* one allocation: a trace of no work would be removed (test_sink_ranks) */
        struct lp_record mem = {.type = LP_REC_MEMORY};
        lp_sink_lock();
        if (!in_child_records_nothing)
            lp_sink_add(&mem);
        lp_sink_unlock();
        lp_sink_close();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        FILE *f = fopen(errfile, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            fprintf(stderr, "child: %s", line);
        if (f)
            fclose(f);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* One callback of a runtime or driver call, as CUPTI delivers it. */
static void api_site(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     CUpti_ApiCallbackSite site, uint32_t correlation, uint64_t *slot, int rv)
{
    CUpti_CallbackData cd = {.callbackSite = site, .functionReturnValue = &rv,
                             .context = FAKE_CTX, .correlationData = slot,
                             .correlationId = correlation};
    lp_launch_callback(domain, cbid, &cd);
}

/* A whole cudaLaunchKernel of CORRELATION, entry and exit. */
static void launch_kernel(uint32_t correlation)
{
    uint64_t slot = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_ENTER, correlation, &slot, 0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_EXIT, correlation, &slot, 0);
}

static void launch_records_child(void)
{
    hold_fake_sub();
    NEED(lp_launch_start(FAKE_SUB, 0, NULL) == 0);
    /* every call is named, with the version suffix cut; only the traced are switched on */
    NEED(!strcmp(lp_launch_api_name(LP_API_DOMAIN_RUNTIME, CB_LAUNCH), "cudaLaunchKernel"));
    NEED(!strcmp(lp_launch_api_name(LP_API_DOMAIN_RUNTIME, CB_MALLOC), "cudaMalloc"));
    NEED(!strcmp(lp_launch_api_name(LP_API_DOMAIN_RUNTIME, CB_GRAPH), "cudaGraphLaunch"));
    NEED(!strcmp(lp_launch_api_name(LP_API_DOMAIN_DRIVER, 2), "cuMemAlloc"));
    NEED(lp_launch_api_name(LP_API_DOMAIN_RUNTIME, 4) == NULL);
    NEED(lp_launch_api_name(LP_API_DOMAIN_RUNTIME, 1u << 20) == NULL);
    NEED(lp_launch_api_name(0, CB_LAUNCH) == NULL);
    NEED(n_enables == 3);
    const struct enable_call want[] = {
        {1, FAKE_SUB, CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH},
        {1, FAKE_SUB, CUPTI_CB_DOMAIN_RUNTIME_API, CB_GRAPH},
        {1, FAKE_SUB, CUPTI_CB_DOMAIN_DRIVER_API, 1},
    };
    for (size_t i = 0; i < 3; i++)
        NEED(enables[i].on == want[i].on && enables[i].sub == want[i].sub &&
             enables[i].domain == want[i].domain && enables[i].cbid == want[i].cbid);

    /* cudaLaunchKernel (10) makes the runtime's own cuLaunchKernel (11): one record */
    uint64_t rt = 0, drv = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_ENTER, 10, &rt, 0);
    NEED(rt != 0); /* the start, kept for the exit */
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_ENTER, 11, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_EXIT, 11, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_EXIT, 10, &rt, 0);
    CUcontext cx[2];
    NEED(lp_launch_contexts(cx, 2) == 0); /* contexts are kept for windows only */
    /* the program's own cuLaunchKernel (12), failing: recorded with its status */
    drv = 0;
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_ENTER, 12, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_EXIT, 12, &drv, 700);
    /* untraced: cudaMalloc and the driver call it makes */
    uint64_t m = 0, ma = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_MALLOC, CUPTI_API_ENTER, 13, &m, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 2, CUPTI_API_ENTER, 14, &ma, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 2, CUPTI_API_EXIT, 14, &ma, 0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_MALLOC, CUPTI_API_EXIT, 13, &m, 0);
    NEED(m == 0 && ma == 0);
    /* an exit whose entry was not seen (no start) is no record */
    uint64_t none = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_GRAPH, CUPTI_API_EXIT, 15, &none, 0);
    lp_launch_drain();
    lp_launch_stop();
    /* after exit nothing more is kept */
    launch_kernel(16);
    lp_launch_drain();
    NEED(n_enables == 3); /* never switched off: not windowed */
}

static const struct lp_api_rec *api_of(const struct lp_trace *t, uint32_t correlation)
{
    for (size_t i = 0; i < t->n_apis; i++)
        if (t->apis[i].correlation == correlation)
            return &t->apis[i];
    return NULL;
}

/* Launch records from the callbacks: a runtime launch is one record, not two (its driver
 * call is the runtime's own), a direct driver launch is one, untraced calls and exits
 * without an entry none; names, domains, status and times reach the trace, and only the
 * traced calls' callbacks were switched on (recording every call cost +43...57 %). */
static void test_launch_records(void **state)
{
    (void)state;
    in_child("launch", launch_records_child);
    struct lp_trace *t = read_only_trace("launch");
    assert_int_equal(t->n_apis, 2);
    const struct lp_api_rec *rt = api_of(t, 10), *drv = api_of(t, 12);
    assert_non_null(rt);
    assert_non_null(drv);
    const struct lp_api_kind *rk = lp_trace_api_kind(t, rt), *dk = lp_trace_api_kind(t, drv);
    assert_string_equal(lp_trace_str(t, rk->name), "cudaLaunchKernel");
    assert_int_equal(rk->domain, LP_API_DOMAIN_RUNTIME);
    assert_int_equal(rk->cbid, CB_LAUNCH);
    assert_int_equal(rk->status, 0);
    assert_true(rt->start < lp_trace_api_end(t, rt));
    assert_string_equal(lp_trace_str(t, dk->name), "cuLaunchKernel");
    assert_int_equal(dk->domain, LP_API_DOMAIN_DRIVER);
    assert_int_equal(dk->cbid, 1);
    assert_int_equal(dk->status, 700);
    assert_true(drv->start < lp_trace_api_end(t, drv));
    assert_true(lp_trace_api_end(t, rt) < drv->start);
    assert_int_equal(rk->thread, dk->thread);
    assert_string_equal(lp_trace_meta(t, "launch_records"), "callbacks");
    assert_string_equal(lp_trace_meta(t, "api_calls_traced_runtime"), "2");
    assert_string_equal(lp_trace_meta(t, "api_calls_traced_driver"), "1");
    assert_string_equal(lp_trace_meta(t, "launch_records_recorded"), "2");
    assert_string_equal(lp_trace_meta(t, "launch_records_dropped"), "0");
    assert_null(lp_trace_meta(t, "capture_after_close")); /* not windowed */
    lp_trace_free(t);
}

static unsigned outside; /* in_window's answers of 0 */

static int in_window(uint32_t correlation)
{
    int in = lp_launch_in_window(correlation);
    outside += !in;
    return in;
}

/* No launch callback was ever switched off (windows switch only recording). */
static int never_disabled(void)
{
    NEED(n_enables <= sizeof enables / sizeof *enables); /* every switch logged */
    for (size_t i = 0; i < n_enables && i < sizeof enables / sizeof *enables; i++)
        if (!enables[i].on)
            return 0;
    return 1;
}

static void launch_windowed_child(void)
{
    hold_fake_sub();
    NEED(lp_launch_start(FAKE_SUB, 1, NULL) == 0);
    /* enabled once, for the whole run: disabling a callback while a call of it is in flight
     * corrupts CUPTI, so windows switch only recording */
    NEED(n_enables == 3);
    launch_kernel(5); /* before any window: not recorded */
    NEED(in_window(5) == 0);
    NEED(lp_launch_in_window(0) == 1); /* no correlation: kept */
    lp_launch_set_recording(1);
    CUcontext cx[2];
    NEED(lp_launch_contexts(cx, 2) == 0);
    launch_kernel(20);
    NEED(lp_launch_contexts(cx, 2) == 1 && cx[0] == FAKE_CTX); /* the window's context */
    launch_kernel(25);
    lp_launch_set_recording(0);
    lp_launch_set_recording(0); /* no change */
    launch_kernel(30); /* between windows: not recorded */
    lp_launch_set_recording(1); /* a window that launches nothing */
    lp_launch_set_recording(0);
    lp_launch_set_recording(1);
    launch_kernel(40);
    lp_launch_set_recording(0);
    NEED(n_enables == 3 && never_disabled());
    NEED(in_window(19) == 0);
    NEED(in_window(20) == 1);
    NEED(in_window(22) == 1);
    NEED(in_window(25) == 1);
    NEED(in_window(26) == 0);
    NEED(in_window(39) == 0);
    NEED(in_window(40) == 1);
    NEED(in_window(41) == 0);
    /* the open window's span has no end yet */
    lp_launch_set_recording(1);
    launch_kernel(50);
    NEED(in_window(50) == 1);
    NEED(in_window(60) == 1);
    lp_launch_set_recording(0);
    NEED(in_window(60) == 0);
    NEED(in_window(50) == 1);
    NEED(outside == 6);
    /* a call entered in one window and left in the next (another thread's, across a close
     * and an open): not recorded, and its work is outside both */
    lp_launch_set_recording(1);
    NEED(lp_launch_contexts(cx, 2) == 0); /* a new window: its own contexts */
    uint64_t slot = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_ENTER, 70, &slot, 0);
    lp_launch_set_recording(0);
    lp_launch_set_recording(1);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_EXIT, 70, &slot, 0);
    launch_kernel(80);
    lp_launch_set_recording(0);
    NEED(in_window(70) == 0);
    NEED(in_window(75) == 0);
    NEED(in_window(80) == 1);
    /* another thread's call in flight at the close: entered inside, it records its exit,
     * and its work is the window's; one entered after the close is not recorded */
    lp_launch_set_recording(1);
    launch_kernel(85);
    slot = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_ENTER, 90, &slot, 0);
    lp_launch_set_recording(0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_EXIT, 90, &slot, 0);
    uint64_t late = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_ENTER, 95, &late, 0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_EXIT, 95, &late, 0);
    NEED(in_window(90) == 1);
    NEED(in_window(95) == 0);
    NEED(n_enables == 3);
    lp_launch_stop();
}

/* A graph step closing its window (window.c) inside the next step's cudaGraphLaunch: the
 * close comes at its driver call's entry, after the runtime call entered; that call's work
 * is the next step's, so it is not recorded and its replay falls outside the window. */
static void launch_dropped_child(void)
{
    hold_fake_sub();
    NEED(lp_launch_start(FAKE_SUB, 1, NULL) == 0);
    lp_launch_set_recording(1);
    uint64_t rt = 0, drv = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_GRAPH, CUPTI_API_ENTER, 30, &rt, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_ENTER, 30, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_EXIT, 30, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_GRAPH, CUPTI_API_EXIT, 30, &rt, 0);
    rt = drv = 0;
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_GRAPH, CUPTI_API_ENTER, 31, &rt, 0);
    lp_launch_set_recording(0); /* what window.c does at the driver call's entry */
    lp_launch_drop_current();
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_ENTER, 31, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_DRIVER_API, 1, CUPTI_API_EXIT, 31, &drv, 0);
    api_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_GRAPH, CUPTI_API_EXIT, 31, &rt, 0);
    NEED(in_window(30) == 1);
    NEED(in_window(31) == 0);
    lp_launch_drop_current(); /* outside any call: the next call is recorded */
    lp_launch_set_recording(1);
    launch_kernel(40);
    lp_launch_set_recording(0);
    NEED(in_window(40) == 1);
    lp_launch_stop();
}

static void test_launch_dropped(void **state)
{
    (void)state;
    in_child("dropped", launch_dropped_child);
    struct lp_trace *t = read_only_trace("dropped");
    assert_int_equal(t->n_apis, 2);
    assert_non_null(api_of(t, 30));
    assert_null(api_of(t, 31));
    assert_non_null(api_of(t, 40));
    lp_trace_free(t);
}

/* Windowed launch records (record --capture): the callbacks stay enabled all run and each
 * window switches recording (calls outside windows leave no record); lp_launch_in_window
 * tells kernels launched inside a window (their correlation id within a window's span) from
 * those launched after it closed, also with a window that launched nothing in between, and
 * counts the others in the header. */
static void test_launch_windowed(void **state)
{
    (void)state;
    in_child("windowed", launch_windowed_child);
    struct lp_trace *t = read_only_trace("windowed");
    assert_int_equal(t->n_apis, 7);
    const uint32_t launched[] = {20, 25, 40, 50, 80, 85, 90};
    for (size_t i = 0; i < 7; i++)
        assert_non_null(api_of(t, launched[i]));
    const uint32_t outside_windows[] = {5, 30, 70, 95};
    for (size_t i = 0; i < 4; i++)
        assert_null(api_of(t, outside_windows[i]));
    assert_string_equal(lp_trace_meta(t, "capture_after_close"), "9");
    assert_string_equal(lp_trace_meta(t, "launch_records_recorded"), "7");
    lp_trace_free(t);
}

/* What the capture windows switch: K (kernel activity, first) and L, logged in order. */
static char switch_log[256];
static int kernel_switch_fails; /* switching K on fails */

static int log_switch(char name, int on)
{
    size_t n = strlen(switch_log);
    if (n + 3 <= sizeof switch_log) {
        switch_log[n] = name;
        switch_log[n + 1] = on ? '+' : '-';
        switch_log[n + 2] = 0;
    }
    return 0;
}
static int kernel_switch(int on)
{
    log_switch('K', on);
    return on && kernel_switch_fails ? -1 : 0;
}
static int launch_switch(int on) { return log_switch('L', on); }
static const lp_window_switch test_switches[] = {kernel_switch, launch_switch, NULL};

static void nvtx_call(CUpti_CallbackId cbid, const void *params)
{
    CUpti_NvtxData d = {.functionName = "nvtx", .functionParams = params};
    lp_nvtx_callback(CUPTI_CB_DOMAIN_NVTX, cbid, &d);
    lp_window_renew_point(CUPTI_CB_DOMAIN_NVTX, cbid, &d); /* last, as inject.c calls it */
}
static void push(const char *name)
{
    nvtxRangePushA_params p = {name};
    nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, &p);
}
static void pop(void)
{
    nvtxRangePop_params p = {NULL};
    nvtx_call(CUPTI_CBID_NVTX_nvtxRangePop, &p);
}

static void start_windows(const char *text, CUpti_SubscriberHandle sub)
{
    struct lp_capture_spec spec;
    char err[256];
    NEED(lp_capture_parse(text, &spec, err, sizeof err) == 0);
    if (sub)
        hold_fake_sub();
    lp_window_start(sub, &spec, text, test_switches);
}

static void nvtx_windows_child(void)
{
    start_windows("nvtx:^step$@2/2", FAKE_SUB);
    NEED(!strcmp(switch_log, "K-L-")); /* everything starts off */
    /* the NVTX range callbacks (push, pop, start and end), switched on for the subscriber,
     * then context creation's */
    NEED(n_enables == 13);
    for (size_t i = 0; i < 12; i++)
        NEED(enables[i].on == 1 && enables[i].sub == FAKE_SUB &&
             enables[i].domain == CUPTI_CB_DOMAIN_NVTX);
    NEED(enables[12].on == 1 && enables[12].domain == CUPTI_CB_DOMAIN_RESOURCE &&
         enables[12].cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    CUcontext cx[1];
    NEED(lp_launch_contexts(cx, 1) == 0); /* no launch: windows close at once, not deferred */
    const char *off = "K-L-";
    const char *a = "K-L-K+L+", *a_closed = "K-L-K+L+K-L-";
    push("step"); /* occurrence 1 */
    NEED(!strcmp(switch_log, off));
    pop();
    push("step"); /* 2: opens A */
    NEED(!strcmp(switch_log, a));
    push("step"); /* 3, nested */
    pop();
    push("step"); /* 4, nested: selected, but a window is open */
    NEED(!strcmp(switch_log, a));
    pop(); /* not the pop of A's range */
    NEED(!strcmp(switch_log, a));
    pop(); /* A's */
    NEED(!strcmp(switch_log, a_closed));
    push("decode"); /* no match: no occurrence */
    pop();
    push("steps");
    pop();
    push("Step"); /* 5 (the expression is case-insensitive) */
    pop();
    NEED(!strcmp(switch_log, a_closed));
    push("step"); /* 6: opens B */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+"));
    push("step"); /* 7, nested: counted all the same, or 8 would not be the next */
    pop();
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+"));
    pop(); /* B's */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+K-L-"));
    push("step"); /* 8: opens C */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+K-L-K+L+"));
    /* a range of another NVTX domain inside C: the default domain's pop still ends C */
    nvtxEventAttributes_t attr = {.version = NVTX_VERSION, .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
                                  .messageType = NVTX_MESSAGE_TYPE_ASCII,
                                  .message.ascii = "layer"};
    nvtxDomainRangePushEx_params dpush = {.domain = FAKE_NVTX_DOMAIN, .core = {&attr}};
    nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &dpush);
    pop();
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+K-L-K+L+K-L-"));
    nvtxDomainRangePop_params dpop = {FAKE_NVTX_DOMAIN};
    nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePop, &dpop);
    lp_window_stop();
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+K-L-K+L+K-L-")); /* none was open */
}

static void graph_launch(uintptr_t exec, int site)
{
    cuGraphLaunch_params p = {(CUgraphExec)exec, NULL};
    CUpti_CallbackData d = {.callbackSite = site, .functionName = "cuGraphLaunch",
                            .functionParams = &p};
    lp_window_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &d);
}
static void graph_step(uintptr_t exec)
{
    graph_launch(exec, CUPTI_API_ENTER);
    graph_launch(exec, CUPTI_API_EXIT); /* exits count nothing */
}
static int graph_callbacks_on(void)
{
    size_t n = 0;
    for (size_t i = 0; i < n_enables; i++)
        n += enables[i].on && enables[i].sub == FAKE_SUB &&
             enables[i].domain == CUPTI_CB_DOMAIN_DRIVER_API &&
             (enables[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
              enables[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
    return (int)n;
}

/* Steps by graph launches, a step being two pieces (graphs A then B): steps 2 and 4 chosen. */
static void graph_windows_child(void)
{
    start_windows("graphs@2/2", FAKE_SUB);
    NEED(!strcmp(switch_log, "K-L-") && graph_callbacks_on() == 2);
    graph_step(0xA0); /* step 1 */
    graph_step(0xB0);
    NEED(!strcmp(switch_log, "K-L-"));
    graph_step(0xA0); /* step 2: opens */
    NEED(!strcmp(switch_log, "K-L-K+L+"));
    graph_step(0xB0);
    graph_step(0xA0); /* step 3: closes; the graph launches stay watched */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-") && graph_callbacks_on() == 2);
    graph_step(0xB0);
    graph_step(0xC0); /* a graph new in step 3 joins it */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-"));
    graph_step(0xA0); /* step 4: opens */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+"));
    graph_step(0xB0);
    lp_window_stop(); /* the run's end closes it */
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-K+L+K-L-"));
}

/* Consecutive steps chosen (graphs@2-3) make one window; one graph per step. */
static void graph_merged_child(void)
{
    start_windows("graphs@2-3", FAKE_SUB);
    for (int i = 0; i < 5; i++)
        graph_step(0x40);
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-"));
    lp_window_stop();
}

/* --capture graphs: steps counted at graph launches' entries (capture.h), their windows
 * written with their cause. */
static void test_graph_windows(void **state)
{
    (void)state;
    in_child("graphs", graph_windows_child);
    struct lp_trace *t = read_only_trace("graphs");
    assert_int_equal(t->n_windows, 4); /* two, each written open and closed */
    for (size_t i = 0; i < t->n_windows; i++)
        assert_int_equal(t->windows[i].cause, LP_WINDOW_CAUSE_GRAPH_STEP);
    assert_string_equal(lp_trace_meta(t, "capture_windows"), "2");
    lp_trace_free(t);
    in_child("graphs-merged", graph_merged_child);
    t = read_only_trace("graphs-merged");
    assert_string_equal(lp_trace_meta(t, "capture_windows"), "1");
    lp_trace_free(t);
}

/* Capture windows on NVTX ranges (--capture nvtx:^step$@2/2): occurrences 2, 6 and 8 of
 * the range open a window at their push and close it at their pop, switching everything
 * on and off at once (kernel activity is not deferred: nothing was launched). Nested
 * matching pushes count as occurrences (capture.h) but neither open a window nor close
 * the open one at their pop; other names do not count. Each window is written when it
 * opens (end = start) and again closed, and the header counts 3. */
static void test_nvtx_windows(void **state)
{
    (void)state;
    in_child("nvtx", nvtx_windows_child);
    struct lp_trace *t = read_only_trace("nvtx");
    assert_int_equal(t->n_windows, 6);
    for (size_t i = 0; i < 6; i++) {
        const struct lp_window *w = &t->windows[i];
        assert_int_equal(w->cause, LP_WINDOW_CAUSE_NVTX);
        assert_int_equal(w->thread, t->windows[0].thread);
        if (i % 2 == 0) { /* opened */
            assert_true(w->end == w->start);
        } else { /* the same one, closed */
            assert_true(w->start == t->windows[i - 1].start);
            assert_true(w->end > w->start);
        }
        if (i >= 2 && i % 2 == 0)
            assert_true(w->start > t->windows[i - 1].end);
    }
    assert_string_equal(lp_trace_meta(t, "capture"), "nvtx:^step$@2/2");
    assert_string_equal(lp_trace_meta(t, "capture_windows"), "3");
    assert_non_null(lp_trace_meta(t, "capture_switch_ns"));
    lp_trace_free(t);
}

static void kernel_refused_child(void)
{
    kernel_switch_fails = 1;
    start_windows("nvtx:^step$", FAKE_SUB);
    push("step");
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-")); /* tried, and everything went off again */
    pop();
    NEED(!strcmp(switch_log, "K-L-K+L+K-L-"));
    lp_window_stop();
}

static void no_subscriber_child(void)
{
    start_windows("nvtx:^step$", NULL);
    NEED(!strcmp(switch_log, "K-L-K+L+")); /* windows cannot open: all is recorded */
    NEED(n_enables == 0);
    push("step"); /* no client: nothing happens */
    pop();
    NEED(!strcmp(switch_log, "K-L-K+L+"));
    lp_window_stop();
}

/* the first loss whose text holds TEXT, or NULL */
static const struct lp_loss *loss_of(const struct lp_trace *t, const char *text)
{
    for (size_t i = 0; i < t->n_losses; i++)
        if (strstr(lp_trace_str(t, t->losses[i].what), text))
            return &t->losses[i];
    return NULL;
}
static int has_loss(const struct lp_trace *t, const char *text) { return loss_of(t, text) != NULL; }

/* Capture windows fail open: a window whose kernel activity cannot be switched on stays
 * shut (and says so) instead of recording launches without kernels; without a subscriber
 * no window can open, so everything is recorded and the header says "all". */
static void test_windows_fail_open(void **state)
{
    (void)state;
    in_child("refused", kernel_refused_child);
    struct lp_trace *t = read_only_trace("refused");
    assert_int_equal(t->n_windows, 0);
    assert_true(has_loss(t, "could not enable kernel activity"));
    assert_string_equal(lp_trace_meta(t, "capture"), "nvtx:^step$");
    assert_string_equal(lp_trace_meta(t, "capture_windows"), "0");
    lp_trace_free(t);

    in_child("nosub", no_subscriber_child);
    t = read_only_trace("nosub");
    assert_int_equal(t->n_windows, 0);
    assert_true(has_loss(t, "capture windows (nvtx:^step$) cannot open here"));
    assert_string_equal(lp_trace_meta(t, "capture"), "all");
    assert_null(lp_trace_meta(t, "capture_windows"));
    lp_trace_free(t);
}

/* A program whose capture window never opens (it never calls cudaProfilerStart) records no
 * kernel: its trace is kept if it made a CUDA context, so the report says no window opened
 * instead of record saying the program never used CUDA; a process that made none (a
 * launcher's parent) still leaves no trace. */
static void unopened_used_child(void)
{
    start_windows("cuda-profiler", FAKE_SUB);
    CUpti_ResourceData rd = {0};
    lp_window_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                       &rd); /* not a creation */
    lp_window_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
    lp_window_stop();
}

static void unopened_unused_child(void)
{
    start_windows("cuda-profiler", FAKE_SUB);
    CUpti_ResourceData rd = {0};
    lp_window_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                       &rd);
    lp_window_stop();
}

static void test_windows_never_opened(void **state)
{
    (void)state;
    in_child_records_nothing = 1;
    in_child("unopened-used", unopened_used_child);
    in_child("unopened-unused", unopened_unused_child);
    in_child_records_nothing = 0;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/unopened-unused", dir);
    assert_int_equal(count_traces(sub), 0);
    struct lp_trace *t = read_only_trace("unopened-used");
    assert_int_equal(t->n_windows, 0);
    assert_int_equal(t->n_kernels, 0);
    assert_string_equal(lp_trace_meta(t, "capture"), "cuda-profiler");
    assert_string_equal(lp_trace_meta(t, "capture_windows"), "0");
    lp_trace_free(t);
}

/* Activity kinds as CUPTI sees them: each enable (+) and disable (-) of kernels (K) and
 * graph-level records (G), in order; graph-level records refused when GRAPH_REFUSED. */
static char kind_log[64];
static int graph_refused;
static void log_kind(CUpti_ActivityKind k, char sign)
{
    char c = k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? 'K'
             : k == CUPTI_ACTIVITY_KIND_GRAPH_TRACE    ? 'G'
                                                       : 0;
    size_t n = strlen(kind_log);
    if (c && n + 2 < sizeof kind_log) {
        kind_log[n] = c;
        kind_log[n + 1] = sign;
    }
}
static CUptiResult fake_activity_enable(CUpti_ActivityKind k)
{
    if (k == CUPTI_ACTIVITY_KIND_GRAPH_TRACE && graph_refused)
        return CUPTI_ERROR_NOT_SUPPORTED;
    log_kind(k, '+');
    return CUPTI_SUCCESS;
}
static CUptiResult fake_activity_disable(CUpti_ActivityKind k)
{
    log_kind(k, '-');
    return CUPTI_SUCCESS;
}
static CUptiResult fake_register(CUpti_BuffersCallbackRequestFunc a,
                                 CUpti_BuffersCallbackCompleteFunc b)
{
    (void)a, (void)b;
    return CUPTI_SUCCESS;
}


/* The subscriber's callback, passing calls on as inject.c's does. */
static void CUPTIAPI forward_callback(void *user, CUpti_CallbackDomain domain,
                                      CUpti_CallbackId cbid, const void *data)
{
    (void)user;
    lp_activity_callback(domain, cbid, data);
}

/* SUBSCRIBE: holding CUPTI's subscriber with a callback, as a record does (the instantiation
 * calls can then be watched). */
static void start_activity(int windowed, int subscribe)
{
    lp_cupti.ActivityEnable = fake_activity_enable;
    lp_cupti.ActivityDisable = fake_activity_disable;
    lp_cupti.ActivityRegisterCallbacks = fake_register;
    lp_cupti.Subscribe = fake_subscribe;
    struct lp_activity_options o = {.kinds = LP_KINDS_DEFAULT, .buffer_bytes = 65536,
                                    .max_buffers = 2, .windowed = windowed,
                                    .graph_replays = 1, .subscribe = subscribe,
                                    .callback = subscribe ? forward_callback : NULL};
    NEED(lp_activity_start(&o) == 0);
}

/* Without a subscriber graph-level records go on at the start, before any graph can be
 * instantiated, and are never switched after: windows switch kernel activity alone. */
static void graph_replays_child(void)
{
    start_activity(1, 0);
    NEED(!strcmp(kind_log, "G+")); /* windowed: kernels wait for the first window */
    NEED(lp_activity_graph_replays());
    NEED(lp_activity_set_recording(1) == 0);
    NEED(lp_activity_set_recording(0) == 0);
    NEED(lp_activity_set_recording(1) == 0);
    NEED(!strcmp(kind_log, "G+K+K-K+"));
}

/* The SITE callback of a call of DOMAIN and CBID, as CUPTI delivers it. */
static void activity_site(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          CUpti_ApiCallbackSite site)
{
    CUpti_CallbackData cd = {.callbackSite = site};
    forward_callback(NULL, domain, cbid, &cd);
}

/* With the subscriber they wait for the entry of the first graph instantiation (the
 * runtime's or the driver's), and then stay on. */
static void graph_lazy_child(void)
{
    start_activity(1, 1);
    NEED(!strcmp(kind_log, "")); /* nothing on before a window or a graph */
    int watched = 0;
    for (size_t i = 0; i < n_enables && i < 64; i++)
        watched += enables[i].on && enables[i].sub == FAKE_SUB &&
                   ((enables[i].domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                     enables[i].cbid == CB_INSTANTIATE) ||
                    (enables[i].domain == CUPTI_CB_DOMAIN_DRIVER_API &&
                     enables[i].cbid == DRV_INSTANTIATE));
    NEED(watched == 2);
    NEED(lp_activity_set_recording(1) == 0);
    NEED(lp_activity_set_recording(0) == 0);
    activity_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, CUPTI_API_ENTER);
    activity_site(CUPTI_CB_DOMAIN_DRIVER_API, DRV_INSTANTIATE, CUPTI_API_EXIT);
    NEED(!strcmp(kind_log, "K+K-"));
    activity_site(CUPTI_CB_DOMAIN_DRIVER_API, DRV_INSTANTIATE, CUPTI_API_ENTER);
    activity_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_INSTANTIATE, CUPTI_API_ENTER);
    NEED(!strcmp(kind_log, "K+K-G+")); /* once */
    NEED(lp_activity_graph_replays());
    NEED(lp_activity_set_recording(1) == 0);
    NEED(!strcmp(kind_log, "K+K-G+K+"));
}

/* An instantiation call that cannot be watched could make a graph while they are off: they
 * go on at the start, and the calls armed are disarmed. */
static void graph_unwatched_child(void)
{
    refused_driver_cbid = DRV_INSTANTIATE;
    start_activity(0, 1);
    NEED(!strcmp(kind_log, "K+G+"));
    int disarmed = 0;
    for (size_t i = 0; i < n_enables && i < 64; i++)
        disarmed += !enables[i].on && enables[i].domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                    enables[i].cbid == CB_INSTANTIATE;
    NEED(disarmed == 1);
    activity_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_INSTANTIATE, CUPTI_API_ENTER);
    NEED(!strcmp(kind_log, "K+G+"));
}

/* Refused at the first instantiation: replays are recorded node by node, the trace says so. */
static void graph_lazy_refused_child(void)
{
    graph_refused = 1;
    start_activity(0, 1);
    activity_site(CUPTI_CB_DOMAIN_RUNTIME_API, CB_INSTANTIATE, CUPTI_API_ENTER);
    NEED(!strcmp(kind_log, "K+"));
    NEED(!lp_activity_graph_replays());
}

/* Refused, they are not asked for again: replays are recorded node by node, with a warning. */
static void graph_refused_child(void)
{
    graph_refused = 1;
    start_activity(0, 0);
    NEED(!strcmp(kind_log, "K+"));
    NEED(!lp_activity_graph_replays());
}

/* Runs SCENARIO in a child (in_child) and checks its trace's losses: none when LOSS is NULL,
 * else one saying LOSS; and its header's "graphs" when GRAPHS is not NULL. */
static void graph_child(const char *name, void (*scenario)(void), const char *loss,
                        const char *graphs)
{
    in_child(name, scenario);
    struct lp_trace *t = read_only_trace(name);
    if (loss)
        assert_true(has_loss(t, loss));
    else
        assert_int_equal(t->n_losses, 0);
    if (graphs)
        assert_string_equal(lp_trace_meta(t, "graphs"), graphs);
    lp_trace_free(t);
}

static void test_graph_replays_switch(void **state)
{
    (void)state;
    graph_child("graph-replays", graph_replays_child, NULL, NULL);
    graph_child("graph-refused", graph_refused_child, "CUPTI refused graph-level records",
                NULL);
    graph_child("graph-lazy", graph_lazy_child, NULL, NULL);
    graph_child("graph-unwatched", graph_unwatched_child, "cuptiEnableCallback failed", NULL);
    graph_child("graph-lazy-refused", graph_lazy_refused_child,
                "CUPTI refused graph-level records", "node");
}

/* Host buffers: CUPTI is told they come zeroed, so llmprof zeroes each one after draining
 * it, on its own thread, and hands it out again zeroed. */
static CUpti_BuffersCallbackRequestFunc fake_requested;
static CUpti_BuffersCallbackCompleteFunc fake_completed;
static int zeroed_attr = -1;
static CUptiResult fake_register_keep(CUpti_BuffersCallbackRequestFunc a,
                                      CUpti_BuffersCallbackCompleteFunc b)
{
    fake_requested = a;
    fake_completed = b;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_set_attribute(CUpti_ActivityAttribute a, size_t *size, void *value)
{
    if (a == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && *size == sizeof(uint8_t))
        zeroed_attr = *(uint8_t *)value;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_no_drops(CUcontext c, uint32_t s, size_t *n)
{
    (void)c, (void)s;
    *n = 0;
    return CUPTI_SUCCESS;
}
static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}
static void zeroed_buffers_child(void)
{
    lp_cupti.ActivityEnable = fake_activity_enable;
    lp_cupti.ActivityRegisterCallbacks = fake_register_keep;
    lp_cupti.ActivitySetAttribute = fake_set_attribute;
    lp_cupti.ActivityGetNumDroppedRecords = fake_no_drops;
    struct lp_activity_options o = {.kinds = LP_KINDS_DEFAULT, .buffer_bytes = 65536,
                                    .max_buffers = 8};
    NEED(lp_activity_start(&o) == 0);
    NEED(zeroed_attr == 1 && fake_requested && fake_completed);
    uint8_t *b = NULL;
    size_t size = 0, max = 1;
    fake_requested(&b, &size, &max);
    NEED(b && size == 65536 && max == 0 && all_zero(b, size));
    memset(b, 0xab, size); /* CUPTI wrote it, past what it says is valid too */
    fake_completed(NULL, 0, b, size, 0);
    lp_activity_drain();
    /* the longest free comes first: the other preallocated ones, zeroed too, then b */
    uint8_t *again = NULL;
    for (int i = 0; i < 4 && again != b; i++) {
        fake_requested(&again, &size, &max);
        NEED(again && all_zero(again, size));
    }
    NEED(again == b);
    /* and new ones up to the bound */
    for (int i = 0; i < 4; i++) {
        fake_requested(&b, &size, &max);
        NEED(b && all_zero(b, size));
    }
}

/* A buffer CUPTI returns twice, or one it was never lent, is left alone: queued, drained
 * and lent once, the pool's lists never outgrow max_buffers (ASan sees the writes); a late
 * second return is told too, as long as the buffer was not lent again. */
static void buffers_returned_twice_child(void)
{
    lp_cupti.ActivityEnable = fake_activity_enable;
    lp_cupti.ActivityRegisterCallbacks = fake_register_keep;
    lp_cupti.ActivitySetAttribute = fake_set_attribute;
    lp_cupti.ActivityGetNumDroppedRecords = fake_no_drops;
    enum { MAX = 6 };
    struct lp_activity_options o = {.kinds = LP_KINDS_DEFAULT, .buffer_bytes = 4096,
                                    .max_buffers = MAX};
    NEED(lp_activity_start(&o) == 0);
    uint8_t *b = NULL, *spare = NULL, *lent[MAX + 1] = {0};
    size_t size = 0, max = 0;
    /* a late second return, after another buffer was lent: the longest free is lent first,
     * so the returned one is still free and told */
    fake_requested(&b, &size, &max);
    fake_completed(NULL, 0, b, size, 0);
    lp_activity_drain();
    fake_requested(&spare, &size, &max);
    NEED(spare && spare != b);
    fake_completed(NULL, 0, b, size, 0);
    fake_completed(NULL, 0, spare, size, 0);
    lp_activity_drain();
    fake_requested(&b, &size, &max);
    fake_requested(&spare, &size, &max);
    NEED(b && spare && b != spare);
    fake_completed(NULL, 0, spare, size, 0);
    lp_activity_drain(); /* spare is free again, never lent since */
    for (int round = 0; round < 3; round++) {
        fake_completed(NULL, 0, b, size, 0);
        fake_completed(NULL, 0, b, size, 0);
        fake_completed(NULL, 0, spare, size, 0);
        lp_activity_drain();
        fake_requested(&b, &size, &max);
        NEED(b);
    }
    /* the pool holds MAX distinct buffers: b is lent, MAX - 1 more, then none */
    lent[0] = b;
    for (int i = 1; i <= MAX; i++)
        fake_requested(&lent[i], &size, &max);
    for (int i = 0; i < MAX; i++)
        for (int j = 0; j < i; j++)
            NEED(lent[i] && lent[i] != lent[j]);
    NEED(lent[MAX] == NULL);
    lp_activity_finish();
}

/* A graph replay CUPTI gave no times (start and end 0): left out and counted as a loss,
 * beside a timed one that is kept. */
static uint8_t *replay_buffer;
static CUptiResult fake_next_record(uint8_t *buffer, size_t valid, CUpti_Activity **a)
{
    uint8_t *at = *a ? (uint8_t *)*a + sizeof(CUpti_ActivityGraphTrace2) : buffer;
    if (at + sizeof(CUpti_ActivityGraphTrace2) > buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *a = (CUpti_Activity *)at;
    return CUPTI_SUCCESS;
}
static void untimed_replay_child(void)
{
    lp_cupti.ActivityEnable = fake_activity_enable;
    lp_cupti.ActivityRegisterCallbacks = fake_register_keep;
    lp_cupti.ActivityGetNumDroppedRecords = fake_no_drops;
    lp_cupti.ActivityGetNextRecord = fake_next_record;
    struct lp_activity_options o = {.kinds = LP_KINDS_DEFAULT, .buffer_bytes = 65536,
                                    .max_buffers = 2, .graph_replays = 1};
    NEED(lp_activity_start(&o) == 0);
    size_t size = 0, max = 0;
    fake_requested(&replay_buffer, &size, &max);
    NEED(replay_buffer);
    CUpti_ActivityGraphTrace2 g[2] = {
        {.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE, .correlationId = 7, .graphId = 3},
        {.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE, .correlationId = 8, .graphId = 3,
         .start = 1000, .end = 2000}};
    memcpy(replay_buffer, g, sizeof g);
    fake_completed(NULL, 0, replay_buffer, size, sizeof g);
    lp_activity_drain();
    lp_activity_finish();
}

static void test_zeroed_buffers(void **state)
{
    (void)state;
    in_child("zeroed", zeroed_buffers_child);
    struct lp_trace *t = read_only_trace("zeroed");
    assert_int_equal(t->n_losses, 0);
    lp_trace_free(t);
}

/* CUPTI's device buffers: what was asked is set, the pool limit before the buffers made at
 * a context's creation (which must stay under it), and what CUPTI then holds goes into the
 * header; a value CUPTI refuses is warned about once and its default kept. */
static char attr_log[128];
static size_t attr_value[16];
static int refuse_size;
static CUptiResult fake_set_device_attr(CUpti_ActivityAttribute a, size_t *size, void *value)
{
    if (a == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER)
        return CUPTI_SUCCESS;
    if (*size != sizeof(size_t) || (unsigned)a >= 16)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (refuse_size && a == CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t n = strlen(attr_log);
    snprintf(attr_log + n, sizeof attr_log - n, "%d=%zu ", (int)a, *(size_t *)value);
    attr_value[a] = *(size_t *)value;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_get_device_attr(CUpti_ActivityAttribute a, size_t *size, void *value)
{
    if (*size != sizeof(size_t) || (unsigned)a >= 16)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *(size_t *)value = attr_value[a];
    return CUPTI_SUCCESS;
}
static void device_buffers_start(size_t bytes, size_t limit, size_t buffers)
{
    attr_value[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] = 3200000; /* CUPTI's defaults */
    attr_value[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] = 250;
    attr_value[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE] = 3;
    lp_cupti.ActivityEnable = fake_activity_enable;
    lp_cupti.ActivityRegisterCallbacks = fake_register_keep;
    lp_cupti.ActivitySetAttribute = fake_set_device_attr;
    lp_cupti.ActivityGetAttribute = fake_get_device_attr;
    lp_cupti.ActivityGetNumDroppedRecords = fake_no_drops;
    struct lp_activity_options o = {.kinds = LP_KINDS_DEFAULT, .buffer_bytes = 65536,
                                    .max_buffers = 8, .device_buffer_bytes = bytes,
                                    .device_buffer_limit = limit, .device_buffers = buffers};
    NEED(lp_activity_start(&o) == 0);
}
static void device_buffers_child(void)
{
    device_buffers_start(8u << 20, 400, 8);
    NEED(!strcmp(attr_log, "2=400 0=8388608 6=8 ")); /* limit, size, made at creation */
}
static void device_defaults_child(void)
{
    device_buffers_start(0, 0, 0);
    NEED(attr_log[0] == 0); /* nothing asked: CUPTI's defaults, untouched */
}
static void device_refused_child(void)
{
    refuse_size = 1;
    device_buffers_start(8u << 20, 0, 0);
}

static const char *meta_of(const struct lp_trace *t, const char *key)
{
    const char *v = lp_trace_meta(t, key);
    return v ? v : "(none)";
}

static void test_buffers_returned_twice(void **state)
{
    (void)state;
    in_child("returned-twice", buffers_returned_twice_child);
    struct lp_trace *t = read_only_trace("returned-twice");
    const struct lp_loss *l = loss_of(t, "CUPTI returned 7 activity buffers llmprof had not lent it");
    assert_non_null(l);
    assert_int_equal(l->count, 0); /* 7 buffers, not records: their records are unknown */
    assert_string_equal(meta_of(t, "activity_buffers_unlent"), "7");
    lp_trace_free(t);
}

static void test_device_buffers(void **state)
{
    (void)state;
    in_child("devbuf", device_buffers_child);
    struct lp_trace *t = read_only_trace("devbuf");
    assert_int_equal(t->n_losses, 0);
    assert_string_equal(meta_of(t, "cupti_device_buffer_bytes"), "8388608");
    assert_string_equal(meta_of(t, "cupti_device_buffer_limit"), "400");
    assert_string_equal(meta_of(t, "cupti_device_buffers"), "8");
    lp_trace_free(t);
    in_child("devbuf-defaults", device_defaults_child);
    t = read_only_trace("devbuf-defaults");
    assert_string_equal(meta_of(t, "cupti_device_buffer_bytes"), "3200000");
    assert_string_equal(meta_of(t, "cupti_device_buffer_limit"), "250");
    assert_string_equal(meta_of(t, "cupti_device_buffers"), "3");
    lp_trace_free(t);
    in_child("devbuf-refused", device_refused_child);
    t = read_only_trace("devbuf-refused");
    assert_true(has_loss(t, "CUPTI refused LLMPROF_DEVICE_BUFFER_KB=8192: its default is kept"));
    assert_string_equal(meta_of(t, "cupti_device_buffer_bytes"), "3200000");
    lp_trace_free(t);
}

static void test_untimed_replay(void **state)
{
    (void)state;
    in_child("untimed", untimed_replay_child);
    struct lp_trace *t = read_only_trace("untimed");
    assert_int_equal(t->n_kernels, 1); /* the timed replay, a kernel flagged REPLAY */
    assert_true(lp_trace_kernel_config(t, &t->kernels[0])->flags & LP_KERNEL_FLAG_REPLAY);
    assert_true(has_loss(t, "1 CUDA graph replays came without times from CUPTI"));
    lp_trace_free(t);
}

/* The CUDA driver calls window.c binds by name (found in this executable, exported): the
 * switching thread's context and synchronisations. */
static CUcontext fake_current;
static int n_syncs;
__attribute__((visibility("default"))) CUresult fake_ctx_set_current(CUcontext c)
    __asm__("cuCtxSetCurrent");
CUresult fake_ctx_set_current(CUcontext c)
{
    __atomic_store_n(&fake_current, c, __ATOMIC_SEQ_CST);
    return CUDA_SUCCESS;
}
__attribute__((visibility("default"))) CUresult fake_ctx_synchronize(void)
    __asm__("cuCtxSynchronize");
CUresult fake_ctx_synchronize(void)
{
    if (__atomic_load_n(&fake_current, __ATOMIC_SEQ_CST) == FAKE_CTX)
        __atomic_add_fetch(&n_syncs, 1, __ATOMIC_SEQ_CST);
    return CUDA_SUCCESS;
}

/* Kernel activity as a state the switching thread may change: on, and how often off. */
static int kernel_on, kernel_offs;
static int deferred_kernel_switch(int on)
{
    __atomic_store_n(&kernel_on, on, __ATOMIC_SEQ_CST);
    if (!on)
        __atomic_add_fetch(&kernel_offs, 1, __ATOMIC_SEQ_CST);
    return 0;
}
static const lp_window_switch deferred_switches[] = {deferred_kernel_switch,
                                                      lp_launch_set_recording, NULL};

/* Waits up to 2 s for *V to equal WANT. */
static int becomes(int *v, int want)
{
    for (int i = 0; i < 2000 && __atomic_load_n(v, __ATOMIC_SEQ_CST) != want; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return __atomic_load_n(v, __ATOMIC_SEQ_CST) == want;
}

static void capture_call(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site)
{
    int rv = 0;
    CUpti_CallbackData cd = {.callbackSite = site, .functionReturnValue = &rv,
                             .context = FAKE_CTX};
    lp_window_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &cd);
}

/* Waits up to 2 s for the switching thread to have seen the GPU run a closed window's work. */
static int ready(void)
{
    for (int i = 0; i < 2000 && !lp_window_disable_ready(); i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return lp_window_disable_ready();
}

/* The program's traced calls, one a millisecond for up to 2 s, until *V equals WANT: kernel
 * activity goes off at such a call, once the switching thread has waited for the GPU. */
static int becomes_at_calls(int *v, int want)
{
    for (int i = 0; i < 2000 && __atomic_load_n(v, __ATOMIC_SEQ_CST) != want; i++) {
        capture_call(CB_LAUNCH, CUPTI_API_ENTER);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return __atomic_load_n(v, __ATOMIC_SEQ_CST) == want;
}

static void deferred_child(void)
{
    hold_fake_sub();
    NEED(lp_launch_start(FAKE_SUB, 1, NULL) == 0);
    struct lp_capture_spec spec;
    char err[256];
    NEED(lp_capture_parse("nvtx:^step$", &spec, err, sizeof err) == 0);
    lp_window_start(FAKE_SUB, &spec, "nvtx:^step$", deferred_switches);
    NEED(kernel_offs == 1); /* everything starts off */
    /* a window that launches into a context, closed while a stream captures a graph */
    push("step");
    NEED(kernel_on == 1);
    launch_kernel(10);
    capture_call(CB_BEGIN_CAPTURE, CUPTI_API_ENTER);
    capture_call(CB_BEGIN_CAPTURE, CUPTI_API_EXIT);
    pop();
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    NEED(__atomic_load_n(&n_syncs, __ATOMIC_SEQ_CST) == 0); /* not while it captures */
    NEED(kernel_on == 1); /* so kernel activity stays on */
    capture_call(CB_END_CAPTURE, CUPTI_API_ENTER);
    capture_call(CB_END_CAPTURE, CUPTI_API_EXIT);
    NEED(becomes(&n_syncs, 1)); /* then the window's context is synchronised */
    NEED(ready());
    NEED(kernel_offs == 1 && kernel_on == 1); /* not by the switching thread */
    NEED(becomes_at_calls(&kernel_offs, 2)); /* but at the program's next call */
    NEED(kernel_on == 0);
    /* a window that opens again before the synchronisation: kernel activity stays on */
    push("step");
    launch_kernel(20);
    capture_call(CB_BEGIN_CAPTURE, CUPTI_API_ENTER);
    pop();
    nanosleep(&(struct timespec){0, 50000000}, NULL); /* the thread waits on the capture */
    push("step");
    capture_call(CB_END_CAPTURE, CUPTI_API_EXIT);
    NEED(becomes(&n_syncs, 2));
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    capture_call(CB_LAUNCH, CUPTI_API_ENTER);
    NEED(kernel_offs == 2 && kernel_on == 1);
    pop();
    NEED(becomes_at_calls(&kernel_offs, 3));
    /* a capture whose begin failed is not counted as in progress */
    push("step");
    launch_kernel(30);
    int rv = 900;
    CUpti_CallbackData failed = {.callbackSite = CUPTI_API_EXIT, .functionReturnValue = &rv};
    capture_call(CB_BEGIN_CAPTURE, CUPTI_API_ENTER);
    lp_window_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CB_BEGIN_CAPTURE, &failed);
    pop();
    NEED(becomes_at_calls(&kernel_offs, 4));
    /* ready, then a window opens and closes before a call: the readiness was the window
     * before's, so the call waits for the new window's synchronisation */
    push("step");
    launch_kernel(40);
    pop();
    NEED(ready());
    push("step");
    NEED(!lp_window_disable_ready());
    launch_kernel(41);
    capture_call(CB_BEGIN_CAPTURE, CUPTI_API_ENTER); /* holds the synchronisation */
    pop();
    capture_call(CB_LAUNCH, CUPTI_API_ENTER);
    NEED(kernel_offs == 4 && kernel_on == 1);
    capture_call(CB_END_CAPTURE, CUPTI_API_EXIT);
    NEED(becomes_at_calls(&kernel_offs, 5));
    /* ready when the program makes no more calls: off as the windows stop at exit */
    push("step");
    launch_kernel(50);
    pop();
    NEED(ready());
    NEED(kernel_offs == 5 && kernel_on == 1);
    lp_window_stop();
    NEED(kernel_offs == 6 && kernel_on == 0);
    lp_launch_stop();
}

/* Closing a window switches kernel activity off only after llmprof's thread synchronised
 * the contexts the window launched into, never while a stream captures a graph (that would
 * invalidate the capture), and not at all when a window opened again meanwhile; then at the
 * program's next traced call, not on llmprof's thread. */
static void test_window_deferred(void **state)
{
    (void)state;
    in_child("deferred", deferred_child);
    struct lp_trace *t = read_only_trace("deferred");
    assert_int_equal(t->n_apis, 6);
    assert_string_equal(lp_trace_meta(t, "capture_windows"), "7");
    lp_trace_free(t);
}

/* Finalizing CUPTI between windows (window.c, attach.c): a fake CUPTI that counts its
 * finalizes and subscriptions, completes the buffer waiting at a flush, and whose correlation
 * ids start again after a finalize. */
static int finalizes, subscribes;
static uint8_t *waiting_buffer; /* completed at the next flush */
static size_t waiting_valid;
static CUptiResult fake_finalize(void)
{
    finalizes++;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_flush(uint32_t flag)
{
    (void)flag;
    if (waiting_buffer)
        fake_completed(NULL, 0, waiting_buffer, 65536, waiting_valid);
    waiting_buffer = NULL;
    return CUPTI_SUCCESS;
}
static int refuse_resubscribe; /* another client took CUPTI while it was finalized */
static CUptiResult fake_subscribe_count(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb,
                                        void *user)
{
    if (refuse_resubscribe && subscribes)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscribes++;
    return fake_subscribe(sub, cb, user);
}
/* A replayed graph's record (a kernel to the trace) of CORRELATION in a buffer of CUPTI's,
 * completed at once or at the next flush (WAIT). */
static void replay_record(uint32_t correlation, int wait)
{
    uint8_t *b = NULL;
    size_t size = 0, max = 0;
    fake_requested(&b, &size, &max);
    NEED(b);
    CUpti_ActivityGraphTrace2 g = {.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
                                   .correlationId = correlation, .graphId = 3,
                                   .start = fake_now, .end = fake_now + 1000};
    memcpy(b, &g, sizeof g);
    if (wait) {
        waiting_buffer = b;
        waiting_valid = sizeof g;
    } else {
        fake_completed(NULL, 0, b, size, sizeof g);
    }
}
static void profiler_call(int start)
{
    int rv = 0;
    CUpti_CallbackData cd = {.callbackSite = start ? CUPTI_API_EXIT : CUPTI_API_ENTER,
                             .functionReturnValue = &rv};
    lp_window_callback(CUPTI_CB_DOMAIN_RUNTIME_API,
                       start ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                             : CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, &cd);
}
/* Exits where a finalize must not happen: a driver launch's (it may be nested in a runtime
 * call), and a runtime call's whose entry came before the arming (none seen). */
static void unsafe_exits(void)
{
    uint64_t slot = __atomic_load_n(&fake_now, __ATOMIC_RELAXED) + 1; /* entered after */
    CUpti_CallbackData cd = {.callbackSite = CUPTI_API_EXIT, .correlationData = &slot,
                             .correlationId = 30};
    lp_window_renew_point(CUPTI_CB_DOMAIN_DRIVER_API, 1, &cd);
    slot = 0;
    lp_window_renew_point(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &cd);
}
/* A launch of CORRELATION whose exit is also where a pending finalize happens (as inject.c
 * passes it on, after launch.c has seen it). */
static void launch_and_exit(uint32_t correlation)
{
    uint64_t slot = 0;
    int rv = 0;
    CUpti_CallbackData cd = {.callbackSite = CUPTI_API_ENTER, .functionReturnValue = &rv,
                             .context = FAKE_CTX, .correlationData = &slot,
                             .correlationId = correlation};
    lp_launch_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &cd);
    cd.callbackSite = CUPTI_API_EXIT;
    lp_launch_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &cd);
    lp_window_renew_point(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &cd);
}
/* Up to 2 s of the program's traced calls until the closed window's kernel activity went
 * off (at such a call, once the switching thread waited for the GPU). */
static int kernels_off(void)
{
    for (int i = 0; i < 2000; i++) {
        size_t n = strlen(kind_log);
        if (n >= 2 && !strcmp(kind_log + n - 2, "K-"))
            return 1;
        CUpti_CallbackData cd = {.callbackSite = CUPTI_API_ENTER, .context = FAKE_CTX};
        lp_window_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &cd);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return 0;
}
static int enabled_after(size_t from, CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    for (size_t i = from; i < n_enables && i < sizeof enables / sizeof *enables; i++)
        if (enables[i].on && enables[i].domain == domain && enables[i].cbid == cbid)
            return 1;
    return 0;
}
/* Waits up to 2 s for a finalize to be armed (at the next runtime call's exit). */
static int armed(void)
{
    for (int i = 0; i < 2000 && !lp_window_renew_armed(); i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return lp_window_renew_armed();
}
/* Waits up to 2 s for the switching thread to have set CUPTI up again. */
static int reattached(void)
{
    for (int i = 0; i < 2000 && lp_attach_renewing(); i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return !lp_attach_renewing();
}
static const lp_window_switch renew_switches[] = {lp_activity_set_recording,
                                                   lp_launch_set_recording, NULL};
static void renew_start(void)
{
    lp_cupti.ActivityEnable = fake_activity_enable;
    lp_cupti.ActivityDisable = fake_activity_disable;
    lp_cupti.ActivityRegisterCallbacks = fake_register_keep;
    lp_cupti.ActivityFlushAll = fake_flush;
    lp_cupti.ActivityGetNumDroppedRecords = fake_no_drops;
    lp_cupti.ActivityGetNextRecord = fake_next_record;
    lp_cupti.Subscribe = fake_subscribe_count;
    lp_cupti.Finalize = fake_finalize;
    struct lp_activity_options o = {.kinds = LP_KINDS_DEFAULT, .buffer_bytes = 65536,
                                    .max_buffers = 8, .windowed = 1, .graph_replays = 1,
                                    .subscribe = 1, .callback = forward_callback};
    NEED(lp_activity_start(&o) == 0);
    NEED(lp_launch_start(FAKE_SUB, 1, NULL) == 0);
    NEED(lp_nvtx_watch(FAKE_SUB) == 0);
    struct lp_capture_spec spec;
    char err[256];
    NEED(lp_capture_parse("cuda-profiler", &spec, err, sizeof err) == 0);
    setenv("LLMPROF_FINALIZE_AFTER_MS", "0", 1); /* at once, not after a second */
    lp_window_allow_renew(lp_attach_can_renew());
    lp_window_start(FAKE_SUB, &spec, "cuda-profiler", renew_switches);
}

/* CUPTI drops one record at each buffer completed while it is being finalized (as seen on
 * the H200), and DROP_NEXT at the next other buffer. */
static size_t drop_next;
static CUptiResult fake_drops_renewing(CUcontext c, uint32_t s, size_t *n)
{
    (void)c, (void)s;
    *n = lp_attach_renewing() ? 1 : drop_next;
    if (!lp_attach_renewing())
        drop_next = 0;
    return CUPTI_SUCCESS;
}
static void renew_child(void)
{
    renew_start();
    lp_launch_keep_enabled(CUPTI_CB_DOMAIN_DRIVER_API, 1); /* as window.c's graph launches */
    lp_cupti.ActivityGetNumDroppedRecords = fake_drops_renewing;
    NEED(subscribes == 1 && !strcmp(kind_log, ""));
    profiler_call(1);
    launch_kernel(10);
    replay_record(10, 1); /* still in CUPTI's buffer when the window closes */
    profiler_call(0);
    NEED(kernels_off()); /* the switching thread waited for the GPU, then a call came */
    NEED(armed()); /* then armed a finalize at a call's exit */
    unsafe_exits();
    NEED(finalizes == 0);
    size_t before = n_enables;
    launch_and_exit(11);  /* after the close: not recorded, but its id is seen */
    NEED(finalizes == 1);
    NEED(reattached() && subscribes == 2); /* the switching thread subscribed again */
    /* set up again as it was: NVTX, the profiler calls, the instantiation calls, contexts,
     * a call another part keeps on; kernel activity off, and the launch callbacks left off
     * by the finalize until the next window */
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxDomainRangeEnd));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_RUNTIME_API, CB_INSTANTIATE));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_DRIVER_API, DRV_INSTANTIATE));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
    NEED(!enabled_after(before, CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH));
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_DRIVER_API, 1)); /* kept on */
    NEED(fake_requested && !strcmp(kind_log, "K+K-"));
    /* CUPTI numbers from 1 again: llmprof's ids go on past 11; the launch callbacks go on
     * again with the window, and no callback was ever disabled (which corrupts CUPTI) */
    before = n_enables;
    profiler_call(1);
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH));
    NEED(never_disabled());
    launch_kernel(3);
    drop_next = 2;
    replay_record(3, 0);
    profiler_call(0);
    NEED(kernels_off());
    lp_window_stop();
    lp_activity_drain();
    lp_activity_finish();
    lp_launch_stop();
}

/* After a window's close: CUPTI is never armed to be finalized (again), FINALIZED times so
 * far. */
static void never_armed(int finalized)
{
    NEED(kernels_off());
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    NEED(!lp_window_renew_armed());
    launch_and_exit(21);
    NEED(finalizes == finalized);
    lp_window_stop();
    lp_launch_stop();
}
/* A last window once CUPTI was finalized and a graph may exist. */
static void last_window_once_finalized(void)
{
    profiler_call(1);
    launch_kernel(3);
    profiler_call(0);
    never_armed(1);
}
/* A window of one launch of ID, closed, then a finalize armed. */
static void window_then_armed(uint32_t id)
{
    profiler_call(1);
    launch_kernel(id);
    profiler_call(0);
    NEED(kernels_off());
    NEED(armed());
}
/* A first window and the finalize at the next call's exit after it. */
static void window_then_finalize(void)
{
    window_then_armed(10);
    launch_and_exit(11);
    NEED(finalizes == 1 && reattached());
}

/* An NVTX range open at the call's exit: the finalize waits for a later call's exit with
 * none open. Once a graph may exist, CUPTI is never finalized again. */
static void renew_nvtx_child(void)
{
    renew_start();
    push("request");
    window_then_armed(10);
    launch_and_exit(11);
    NEED(finalizes == 0); /* "request" is open: armed again later */
    NEED(armed());
    push("inner");
    launch_and_exit(12);
    NEED(finalizes == 0);
    pop();
    pop();
    NEED(finalizes == 0); /* not at a pop: finalizing in an NVTX callback crashed */
    NEED(armed());
    launch_and_exit(13);
    NEED(finalizes == 1);
    NEED(reattached() && subscribes == 2);
    CUpti_CallbackData cd = {.callbackSite = CUPTI_API_ENTER};
    forward_callback(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, CB_INSTANTIATE, &cd);
    /* the first graph came after a finalize: one may have been made unseen, so graph-level
     * records never go on (a replay of a graph made while they were off crashed CUPTI) */
    NEED(strchr(kind_log, 'G') == NULL);
    last_window_once_finalized();
}

/* A second thread of the program launched: CUPTI is never finalized. */
static void *second_launcher(void *arg)
{
    (void)arg;
    launch_kernel(20);
    return NULL;
}
static void renew_threads_child(void)
{
    renew_start();
    profiler_call(1);
    launch_kernel(10);
    pthread_t t;
    NEED(pthread_create(&t, NULL, second_launcher, NULL) == 0 && pthread_join(t, NULL) == 0);
    profiler_call(0);
    never_armed(0);
}

/* Another CUPTI client took the subscriber while CUPTI was finalized: llmprof says so with
 * CUPTI's result, and records no more windows. */
static void renew_refused_child(void)
{
    renew_start();
    refuse_resubscribe = 1;
    window_then_finalize();
    NEED(lp_attach_subscriber() == NULL);
    lp_window_stop();
    lp_launch_stop();
}

/* After a finalize, a graph launch between windows (the driver's, whose callback stays on),
 * its instantiation unseen as if made while CUPTI was away: replays go node by node, and
 * CUPTI is not finalized again. */
static void renew_graph_child(void)
{
    renew_start();
    NEED(enabled_after(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
    size_t before = n_enables;
    window_then_finalize();
    NEED(enabled_after(before, CUPTI_CB_DOMAIN_DRIVER_API,
                       CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz));
    CUpti_CallbackData cd = {.callbackSite = CUPTI_API_ENTER};
    lp_window_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &cd);
    last_window_once_finalized();
    NEED(strchr(kind_log, 'G') == NULL);
}

static void test_window_finalize(void **state)
{
    (void)state;
    in_child("renew", renew_child);
    struct lp_trace *t = read_only_trace("renew");
    assert_int_equal(t->n_apis, 2);
    assert_int_equal(t->n_kernels, 2);
    /* launches and kernels keep matching, growing ids: 3 after the finalize is 12 + 3 */
    assert_int_equal(t->apis[0].correlation, 10);
    assert_int_equal(t->apis[1].correlation, 15);
    uint32_t k0 = t->kernels[0].correlation, k1 = t->kernels[1].correlation;
    assert_true((k0 == 10 && k1 == 15) || (k0 == 15 && k1 == 10));
    assert_string_equal(meta_of(t, "capture_finalized"), "1");
    assert_string_equal(meta_of(t, "capture_finalize"), "on");
    assert_string_equal(meta_of(t, "capture_windows"), "2");
    /* the two dropped after the finalize, said with both causes as they came; the one
     * dropped at the finalize, said at the end */
    assert_int_equal(t->n_losses, 2);
    assert_int_equal(t->losses[0].count, 2);
    assert_non_null(strstr(lp_trace_str(t, t->losses[0].what),
                           "(buffers full, or as it was finalized between capture windows)"));
    assert_int_equal(t->losses[1].count, 1);
    assert_non_null(strstr(lp_trace_str(t, t->losses[1].what),
                           "dropped 1 activity record as it was finalized"));
    lp_trace_free(t);
    in_child("renew-nvtx", renew_nvtx_child);
    t = read_only_trace("renew-nvtx");
    assert_string_equal(meta_of(t, "capture_finalized"), "1");
    assert_string_equal(meta_of(t, "graphs"), "node");
    lp_trace_free(t);
    in_child("renew-graph", renew_graph_child);
    t = read_only_trace("renew-graph");
    assert_string_equal(meta_of(t, "capture_finalized"), "1");
    assert_string_equal(meta_of(t, "graphs"), "node");
    assert_true(has_loss(t, "instantiation was not seen"));
    lp_trace_free(t);
    in_child("renew-refused", renew_refused_child);
    t = read_only_trace("renew-refused");
    assert_string_equal(meta_of(t, "capture_finalized"), "0");
    assert_true(has_loss(t, "cuptiSubscribe failed after cuptiFinalize: "));
    assert_true(has_loss(t, "(39); llmprof lost CUPTI"));
    lp_trace_free(t);
    in_child("renew-threads", renew_threads_child);
    t = read_only_trace("renew-threads");
    assert_string_equal(meta_of(t, "capture_finalized"), "0");
    lp_trace_free(t);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_nvml_missing),
        cmocka_unit_test(test_cupti_missing),
        cmocka_unit_test(test_kinds_parse),
        cmocka_unit_test(test_kinds_default),
        cmocka_unit_test(test_dl_bind),
        cmocka_unit_test(test_launch_records),
        cmocka_unit_test(test_launch_windowed),
        cmocka_unit_test(test_launch_dropped),
        cmocka_unit_test(test_sink_ranks),
        cmocka_unit_test(test_sink_test_host),
        cmocka_unit_test(test_nvtx_windows),
        cmocka_unit_test(test_graph_windows),
        cmocka_unit_test(test_windows_fail_open),
        cmocka_unit_test(test_windows_never_opened),
        cmocka_unit_test(test_graph_replays_switch),
        cmocka_unit_test(test_zeroed_buffers),
        cmocka_unit_test(test_buffers_returned_twice),
        cmocka_unit_test(test_device_buffers),
        cmocka_unit_test(test_untimed_replay),
        cmocka_unit_test(test_window_deferred),
        cmocka_unit_test(test_window_finalize),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
