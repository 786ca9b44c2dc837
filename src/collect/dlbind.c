/* Late binding of symbol lists (see dlbind.h). RTLD_NEXT is resolved from this file, which
 * is part of libllmprof.so: "next" is after the collector, as the cuBLAS wrappers need. */
#include "dlbind.h"

#include <dlfcn.h>

void *lp_dl_sym(void *handle, const char *name, enum lp_dl_fallback fallback, const void *self)
{
    void *p = handle ? dlsym(handle, name) : NULL;
    if (!p || p == self) {
        if (fallback == LP_DL_FALLBACK_DEFAULT)
            p = dlsym(RTLD_DEFAULT, name);
        else if (fallback == LP_DL_FALLBACK_NEXT)
            p = dlsym(RTLD_NEXT, name);
    }
    return p == self ? NULL : p;
}

const char *lp_dl_bind(void *handle, enum lp_dl_fallback fallback, const struct lp_dl_sym *list,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (*list[i].slot)
            continue;
        *list[i].slot = lp_dl_sym(handle, list[i].name, fallback, NULL);
        if (!*list[i].slot && list[i].required)
            return list[i].name;
    }
    return NULL;
}
