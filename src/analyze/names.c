/* Kernel names for people: demangled (through libiberty's demangler, the one c++filt and
 * libstdc++ use), shortened for tables, and sorted into categories by the words library
 * kernels carry in their names. */
#include <ctype.h>
#include <libiberty/demangle.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/analyze.h"

/* Names up to this length demangle on the caller's stack with the demangler's own limits.
 * Past it libiberty refuses (its arrays live on the stack: CUTLASS kernels reach 1-10 KiB),
 * so longer names are demangled without that limit on a thread whose stack is sized for
 * them. Names longer than MAX_IN stay mangled; output past MAX_OUT, or past OUT_PER_IN times
 * the name (substitutions repeat whole types: 170 bytes can demangle to 850 KB; real names
 * grow under 12 times), abandons the attempt: the name stays mangled. */
#define SHORT_IN 1024
#define MAX_IN (64 * 1024)
#define MAX_OUT (1 << 20)
#define OUT_PER_IN 16
#define OUT_FLOOR 4096

struct demangling {
    const char *in;
    int options;
    char *out;
    size_t len, cap, max;
    int ok;
    jmp_buf abandon;
};

/* The demangler's output callback. libiberty's callback interface keeps all its state on
 * the stack and allocates nothing, so leaving it through longjmp leaks nothing. */
static void put(const char *s, size_t n, void *opaque)
{
    struct demangling *d = opaque;
    if (d->len + n >= d->max)
        longjmp(d->abandon, 1);
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 256;
        while (cap < d->len + n + 1)
            cap *= 2;
        char *p = realloc(d->out, cap);
        if (!p)
            longjmp(d->abandon, 1);
        d->out = p;
        d->cap = cap;
    }
    memcpy(d->out + d->len, s, n);
    d->len += n;
    d->out[d->len] = 0;
}

static void *demangle_run(void *arg)
{
    struct demangling *d = arg;
    if (setjmp(d->abandon) == 0)
        d->ok = cplus_demangle_v3_callback(d->in, d->options, put, d) && d->len > 0;
    return NULL;
}

char *lp_kernel_demangle(const char *mangled)
{
    size_t n = strlen(mangled);
    if (mangled[0] == '_' && mangled[1] == 'Z' && n <= MAX_IN) {
        size_t max = OUT_PER_IN * n > OUT_FLOOR ? OUT_PER_IN * n : OUT_FLOOR;
        struct demangling d = {.in = mangled, .options = DMGL_PARAMS | DMGL_TYPES,
                               .max = max < MAX_OUT ? max : MAX_OUT};
        if (n <= SHORT_IN) {
            demangle_run(&d);
        } else {
            d.options |= DMGL_NO_RECURSE_LIMIT;
            pthread_attr_t attr;
            pthread_t th;
            if (pthread_attr_init(&attr) == 0) {
                if (pthread_attr_setstacksize(&attr, (16u << 20) + 256 * n) == 0 &&
                    pthread_create(&th, &attr, demangle_run, &d) == 0)
                    pthread_join(th, NULL);
                pthread_attr_destroy(&attr);
            }
        }
        if (d.ok)
            return d.out;
        free(d.out);
    }
    return strdup(mangled);
}

/* Namespaces that add width and no meaning in a table. */
static const char *const noise[] = {"(anonymous namespace)::", "at::native::", "at::cuda::",
                                    "c10::", "cutlass::", "cute::", "flash::", "std::",
                                    "void ", "at::", "pytorch_flash::", "detail::",
                                    "gemm::kernel::", "gemm::collective::", "gemm::",
                                    "epilogue::collective::", "epilogue::"};

/* Templates that only wrap the kernel that matters (CUTLASS's device_kernel<Operator>):
 * peeled from the start of a short name. */
static const char *const wrappers[] = {"device_kernel<", "enable_sm90_or_later<",
                                       "enable_sm80_to_sm89<"};

static size_t wrapper_len(const char *s)
{
    for (size_t k = 0; k < sizeof wrappers / sizeof *wrappers; k++)
        if (!strncmp(s, wrappers[k], strlen(wrappers[k])))
            return strlen(wrappers[k]);
    /* PyTorch's enable_3x_kernel_for_sm9x<, enable_3x_kernel_for_sm10_or_later< ... */
    const char *lt = strchr(s, '<');
    if (!strncmp(s, "enable_", 7) && lt && strstr(s, "kernel_for_sm") &&
        strstr(s, "kernel_for_sm") < lt)
        return (size_t)(lt - s) + 1;
    return 0;
}

size_t lp_kernel_name_end(const char *demangled)
{
    size_t n = strlen(demangled);
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = demangled[i];
        if (c == '<')
            depth++;
        else if (c == '>' && depth > 0)
            depth--;
        else if (c == '(' && depth == 0 && i > 0 && strncmp(demangled + i, "(anonymous", 10))
            return i;
    }
    return n;
}

const char *lp_kernel_short_name(const char *demangled, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    size_t end = lp_kernel_name_end(demangled); /* the parameter list dropped */
    /* into a working copy long enough to peel wrappers, then cut to the table's width */
    char tmp[512];
    size_t o = 0;
    for (size_t i = 0; i < end && o + 1 < sizeof tmp;) {
        size_t skip = 0;
        for (size_t k = 0; k < sizeof noise / sizeof *noise; k++) {
            size_t kl = strlen(noise[k]);
            if (i + kl <= end && !strncmp(demangled + i, noise[k], kl)) {
                skip = kl;
                break;
            }
        }
        if (skip) {
            i += skip;
            continue;
        }
        if (demangled[i] == ' ' && i + 1 < end && demangled[i + 1] == '>') {
            i++; /* "> >" -> ">>" */
            continue;
        }
        tmp[o++] = demangled[i++];
    }
    tmp[o] = 0;
    size_t peel = 0, p;
    while ((p = wrapper_len(tmp + peel)) > 0)
        peel += p;
    const size_t cap = 90;
    snprintf(buf, len, "%s", tmp + peel);
    if (o - peel > cap && len > cap + 4)
        memcpy(buf + cap - 3, "...", 4);
    return buf;
}

static const char *const kcat_names[LP_KCAT_COUNT] = {
    [LP_KCAT_GEMM] = "gemm",           [LP_KCAT_ATTENTION] = "attention",
    [LP_KCAT_NORM] = "norm",           [LP_KCAT_ELEMENTWISE] = "elementwise",
    [LP_KCAT_REDUCTION] = "reduction", [LP_KCAT_MEMCPY] = "memcpy",
    [LP_KCAT_MEMSET] = "memset",       [LP_KCAT_COMMUNICATION] = "communication",
    [LP_KCAT_GRAPH] = "graph replay", [LP_KCAT_OTHER] = "other",
};

const char *lp_kcat_name(enum lp_kcat c)
{
    return c < LP_KCAT_COUNT ? kcat_names[c] : "other";
}

/* Words in the name, checked in this order: communication first (NCCL kernels mention
 * reductions), attention before GEMM (fused attention kernels are built from GEMMs),
 * norms before reductions. */
static const struct {
    enum lp_kcat cat;
    const char *words;
} rules[] = {
    {LP_KCAT_COMMUNICATION, "nccl|allreduce|all_reduce|allgather|all_gather|reducescatter|"
                            "reduce_scatter|alltoall|all_to_all|cross_device_reduce|sendrecv"},
    {LP_KCAT_ATTENTION, "flash|fmha|attention|attn|sdpa|mha_|_mha|efficient_"},
    {LP_KCAT_GEMM, "nvjet|gemm|gemv|cublas|cutlass|xmma|matmul|triton_mm|_mm_|wgmma|dot_kernel|"
                   "splitkreduce|sm90_|sm80_"},
    {LP_KCAT_NORM, "layer_norm|layernorm|rms_norm|rmsnorm|group_norm|groupnorm|batch_norm|"
                   "batchnorm|norm_kernel|l2norm|_norm<|_norm_"},
    {LP_KCAT_REDUCTION, "reduce|reduction|softmax|argmax|argmin|topk|sort|scan|cub::|"
                        "triton_red|triton_per|sum_kernel|max_kernel"},
    {LP_KCAT_ELEMENTWISE, "elementwise|triton_poi|copy|fill|cat_|index|gather|scatter|rotary|"
                          "silu|gelu|relu|mul|add|act_and_mul|embedding|arange|where|cast"},
};

static int has_word(const char *lower, const char *words)
{
    const char *w = words;
    while (*w) {
        const char *bar = strchr(w, '|');
        size_t wl = bar ? (size_t)(bar - w) : strlen(w);
        char word[48];
        if (wl < sizeof word) {
            memcpy(word, w, wl);
            word[wl] = 0;
            if (strstr(lower, word))
                return 1;
        }
        w += wl + (bar ? 1 : 0);
    }
    return 0;
}

/* Whether a whole word of LOWER (letters and digits between other characters) is one of
 * WORDS: a Triton matmul named "mm_kernel" or "triton_tem_fused_addmm_0" is a GEMM, a
 * "command" or "comm" kernel is not */
static int has_token(const char *lower, const char *const *words)
{
    for (const char *p = lower; *p;) {
        while (*p && !isalnum((unsigned char)*p))
            p++;
        const char *w = p;
        while (isalnum((unsigned char)*p))
            p++;
        for (size_t i = 0; words[i] && p > w; i++)
            if (strlen(words[i]) == (size_t)(p - w) && !strncmp(w, words[i], (size_t)(p - w)))
                return 1;
    }
    return 0;
}

/* matmuls written by hand or generated (Triton, torch.compile templates) say so in a word */
static const char *const matmul_words[] = {"mm", "bmm", "addmm", "baddbmm", "matmul",
                                           "gemm", NULL};

enum lp_kcat lp_kernel_category(const char *name)
{
    /* only the part before the parameter list: argument types mention anything */
    char lower[512];
    size_t o = 0;
    int depth = 0;
    for (const char *p = name; *p && o + 1 < sizeof lower; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (*p == '(' && depth == 0 && p != name && strncmp(p, "(anonymous", 10))
            break;
        lower[o++] = (char)tolower((unsigned char)*p);
    }
    lower[o] = 0;
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (has_word(lower, rules[i].words) ||
            (rules[i].cat == LP_KCAT_GEMM && has_token(lower, matmul_words)))
            return rules[i].cat;
    return LP_KCAT_OTHER;
}

int lp_kernel_grouped_gemm(const char *name)
{
    static const char *const words[] = {"GroupProblemShape", "grouped_gemm", "GroupedGemm",
                                        "grouped_mm", "fused_moe", "moe_gemm", "MoeGemm",
                                        "MoEGemm"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strstr(name, words[i]))
            return 1;
    return 0;
}
