/* Late binding, one mechanism for every library the collector uses but does not link (CUPTI,
 * NVML, the CUDA driver, cuBLAS and cuBLASLt): each library has one list of the symbols it
 * is used through, and lp_dl_bind resolves a list. A required symbol missing makes the
 * library unusable; an optional one is left NULL and its users check. Where a library is
 * looked for (a loaded copy, a path, the global scope) stays with its user. */
#ifndef LP_COLLECT_DLBIND_H
#define LP_COLLECT_DLBIND_H

#include <stddef.h>

/* Where a symbol is looked for when the library's own handle lacks it (or there is none). */
enum lp_dl_fallback {
    LP_DL_FALLBACK_NONE,
    LP_DL_FALLBACK_DEFAULT, /* RTLD_DEFAULT: the global scope */
    LP_DL_FALLBACK_NEXT,    /* RTLD_NEXT: the objects after libllmprof.so (interposed names) */
};

/* One symbol of a list. An entry whose slot is already set is skipped: a later entry for
 * the same slot names an older spelling, and binding a list again fills only its gaps. */
struct lp_dl_sym {
    void **slot;
    const char *name;
    int required;
};
#define LP_DL_SYM(slot, name, required) {(void **)&(slot), (name), (required)}

/* NAME in HANDLE (NULL: none), else in the FALLBACK scope; never SELF (a wrapper of ours
 * standing in for NAME), NULL when not found. */
void *lp_dl_sym(void *handle, const char *name, enum lp_dl_fallback fallback, const void *self);
/* Binds the N symbols of LIST in order. Returns NULL, or the name of the first required
 * symbol not found: binding stops there and the rest stay as they were. */
const char *lp_dl_bind(void *handle, enum lp_dl_fallback fallback, const struct lp_dl_sym *list,
                       size_t n);

#endif
