/* The collector's fail-open paths, without a GPU: a write failure (disk full), NVML
 * missing, CUPTI missing. Each must leave a warning and a loss record, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect/activity.h"
#include "collect/cupti_api.h"
#include "collect/dlbind.h"
#include "collect/nvml.h"
#include "collect/sink.h"
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

    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
