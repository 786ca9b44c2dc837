/* Late binding of CUPTI (see cupti_api.h). The search prefers a copy that is already
 * loaded: a PyTorch process has its wheel's libcupti.so.13, and activity enabled in one
 * copy is invisible to another. */
#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dlbind.h"
#include "log.h"

struct lp_cupti_api lp_cupti;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -1;
static char load_err[1024];

static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

static void *try_open(void)
{
    const char *forced = lp_config_get()->cupti_path;
    if (forced)
        return dlopen(forced, RTLD_NOW | RTLD_GLOBAL);
    for (size_t i = 0; i < sizeof sonames / sizeof *sonames; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof sonames / sizeof *sonames; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_GLOBAL);
        if (h)
            return h;
    }
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    const char *subdirs[] = {"lib64", "extras/CUPTI/lib64", "targets/x86_64-linux/lib"};
    for (size_t r = 0; r < 3; r++) {
        if (!roots[r] || !*roots[r])
            continue;
        for (size_t s = 0; s < 3; s++) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s/libcupti.so", roots[r], subdirs[s]);
            void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (h)
                return h;
        }
    }
    return NULL;
}

static void load(void)
{
    static const struct lp_dl_sym syms[] = {
#define LP_CUPTI_SYM(name, required, params) LP_DL_SYM(lp_cupti.name, "cupti" #name, required),
        LP_CUPTI_FUNCTIONS(LP_CUPTI_SYM)
#undef LP_CUPTI_SYM
        LP_DL_SYM(lp_cupti.InitializeInjectionNvtx2, "InitializeInjectionNvtx2", 0),
    };
    void *h = try_open();
    if (!h) {
        snprintf(load_err, sizeof load_err,
                 "no CUPTI library found (tried the loaded one, libcupti.so.13/.12, "
                 "$CUDA_HOME and /usr/local/cuda; set LLMPROF_CUPTI_PATH): %s", dlerror());
        return;
    }
    lp_cupti.handle = h;
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
        snprintf(lp_cupti.path, sizeof lp_cupti.path, "%s", lm->l_name);
    const char *missing = lp_dl_bind(h, LP_DL_FALLBACK_NONE, syms, sizeof syms / sizeof *syms);
    if (missing) {
        snprintf(load_err, sizeof load_err, "%.900s lacks %s", lp_cupti.path, missing);
        return;
    }
    if (lp_cupti.GetVersion(&lp_cupti.version) != CUPTI_SUCCESS)
        lp_cupti.version = 0;
    load_rc = 0;
}

int lp_cupti_load(char *err, size_t errlen)
{
    pthread_once(&load_once, load);
    if (load_rc != 0 && err)
        snprintf(err, errlen, "%s", load_err);
    return load_rc;
}

/* NOLOAD takes a reference to the driver, given back once the list is bound: the driver
 * stays loaded. */
void lp_cuda_driver_bind(const struct lp_dl_sym *list, size_t n)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    lp_dl_bind(h, LP_DL_FALLBACK_DEFAULT, list, n);
    if (h)
        dlclose(h);
}

void *lp_cuda_driver_sym(const char *name)
{
    void *sym = NULL;
    const struct lp_dl_sym one = LP_DL_SYM(sym, name, 0);
    lp_cuda_driver_bind(&one, 1);
    return sym;
}

CUptiResult lp_cupti_check(CUptiResult rc, const char *what)
{
    if (rc == CUPTI_SUCCESS)
        return rc;
    const char *msg = NULL;
    if (!lp_cupti.GetResultString || lp_cupti.GetResultString(rc, &msg) != CUPTI_SUCCESS)
        msg = NULL;
    lp_collect_warn(LP_LOSS_SOURCE_COLLECTOR, 0, "%s failed: %s (%d)", what,
                    msg ? msg : "unknown", (int)rc);
    return rc;
}
