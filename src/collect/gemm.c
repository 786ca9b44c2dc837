/* GEMM capture (see gemm.h). Why the public entry points: cuBLAS's front end calls
 * cuBLASLt's internal per-type functions (cublasLtTSTMatmul ...), so interposing the public
 * cublasLtMatmul alone misses every GEMM made through cublasGemmEx and PyTorch; and
 * cuBLASLt's logger, which sees them all, cost +8..19 % on HF decode when it formats every
 * call. So the documented cuBLAS GEMM functions and cublasLtMatmul are interposed (shape and
 * types come from their arguments, a few loads), and the logger is switched on only around
 * the first call of each new shape, to read the algorithm and tile cuBLASLt chose.
 *
 * A wrapper forwards to the function of the loaded libcublas/libcublasLt found by path
 * (dl_iterate_phdr), and to RTLD_NEXT's only when there is none: RTLD_NEXT alone misses
 * libraries dlopen'ed RTLD_LOCAL (Python extensions). Calls made inside a recorded call
 * (cuBLAS calling cublasLtMatmul) are not recorded again. Kernels are tied to a record in
 * analysis: launches on the same thread within the call's [start, end]. */
#include "gemm.h"

#include <cublasLt.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "dlbind.h"
#include "log.h"
#include "queue.h"
#include "sink.h"

#define LP_EXPORT __attribute__((visibility("default")))

/* ---- the real functions ---- */

enum { LIB_CUBLAS, LIB_CUBLASLT, LIB_COUNT };
static const char *const lib_prefix[LIB_COUNT] = {"libcublas.so", "libcublasLt.so"};

struct find_lib {
    const char *prefix;
    char path[4096];
};

static int find_lib_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find_lib *f = arg;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && !strncmp(base, f->prefix, strlen(f->prefix))) {
        snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* The loaded cuBLAS library LIB, found by path; NULL until it is loaded. */
static void *lib_handle(int lib)
{
    static void *handle[LIB_COUNT];
    void *h = __atomic_load_n(&handle[lib], __ATOMIC_ACQUIRE);
    if (!h) {
        struct find_lib f = {.prefix = lib_prefix[lib]};
        if (dl_iterate_phdr(find_lib_cb, &f) && (h = dlopen(f.path, RTLD_NOLOAD | RTLD_LAZY)))
            __atomic_store_n(&handle[lib], h, __ATOMIC_RELEASE);
    }
    return h;
}

/* NAME in the loaded cuBLAS library LIB, else after libllmprof.so; never one of our own
 * wrappers (SELF). */
static void *real_sym(int lib, const char *name, void *self)
{
    return lp_dl_sym(lib_handle(lib), name, LP_DL_FALLBACK_NEXT, self);
}

/* The functions llmprof calls itself (not interposed), one list per library:
 * X(NAME, RETURN, PARAMETERS) is cublas<NAME> or cublasLt<NAME>; all optional. They are
 * bound where first needed, when the library is surely loaded, and again while missing. */
#define CUBLAS_FUNCTIONS(X) X(GetMathMode, (cublasHandle_t, cublasMath_t *))
#define CUBLASLT_FUNCTIONS(X)                                                                  \
    X(LoggerSetCallback, (cublasLtLoggerCallback_t))                                           \
    X(LoggerSetFile, (FILE *))                                                                 \
    X(LoggerSetLevel, (int))                                                                   \
    X(MatmulDescGetAttribute,                                                                  \
      (cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *, size_t, size_t *))        \
    X(MatrixLayoutGetAttribute,                                                                \
      (cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *, size_t, size_t *))
#define HELPER_FIELD(name, params) cublasStatus_t(*name) params;
static struct {
    CUBLAS_FUNCTIONS(HELPER_FIELD)
} blas;
static struct {
    CUBLASLT_FUNCTIONS(HELPER_FIELD)
} lt;
#undef HELPER_FIELD

static void bind_helpers(int lib)
{
    static const struct lp_dl_sym blas_syms[] = {
#define BLAS_SYM(name, params) LP_DL_SYM(blas.name, "cublas" #name, 0),
        CUBLAS_FUNCTIONS(BLAS_SYM)
#undef BLAS_SYM
    };
    static const struct lp_dl_sym lt_syms[] = {
#define LT_SYM(name, params) LP_DL_SYM(lt.name, "cublasLt" #name, 0),
        CUBLASLT_FUNCTIONS(LT_SYM)
#undef LT_SYM
    };
    int blas_lib = lib == LIB_CUBLAS;
    lp_dl_bind(lib_handle(lib), LP_DL_FALLBACK_NEXT, blas_lib ? blas_syms : lt_syms,
               blas_lib ? sizeof blas_syms / sizeof *blas_syms : sizeof lt_syms / sizeof *lt_syms);
}

static cublasStatus_t missing(int lib, const char *name)
{
    lp_collect_warn(LP_LOSS_SOURCE_GEMM, 0, "%s was called but no loaded %s* has it: the call "
                    "returns CUBLAS_STATUS_NOT_INITIALIZED", name, lib_prefix[lib]);
    return CUBLAS_STATUS_NOT_INITIALIZED;
}

/* ---- state ---- */

/* The entry points wrapped, one line each: X(ID, FUNCTION, FAMILY, FAMILY's arguments).
 * FAMILY (below) writes the wrapper; ID is what a queued record carries until the flusher
 * turns it into FUNCTION's name, which is what the trace holds. */
#define GEMM_ENTRY_LIST(X)                                                                     \
    X(SGEMM, cublasSgemm_v2, TYPED_GEMM, float, int, CUDA_R_32F, fp32_compute(h))             \
    X(DGEMM, cublasDgemm_v2, TYPED_GEMM, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)         \
    X(HGEMM, cublasHgemm, TYPED_GEMM, lp_half, int, CUDA_R_16F, CUBLAS_COMPUTE_16F)           \
    X(CGEMM, cublasCgemm_v2, TYPED_GEMM, cuComplex, int, CUDA_C_32F, fp32_compute(h))         \
    X(ZGEMM, cublasZgemm_v2, TYPED_GEMM, cuDoubleComplex, int, CUDA_C_64F, CUBLAS_COMPUTE_64F) \
    X(SGEMM64, cublasSgemm_v2_64, TYPED_GEMM, float, int64_t, CUDA_R_32F, fp32_compute(h))    \
    X(DGEMM64, cublasDgemm_v2_64, TYPED_GEMM, double, int64_t, CUDA_R_64F, CUBLAS_COMPUTE_64F) \
    X(HGEMM64, cublasHgemm_64, TYPED_GEMM, lp_half, int64_t, CUDA_R_16F, CUBLAS_COMPUTE_16F)  \
    X(CGEMM64, cublasCgemm_v2_64, TYPED_GEMM, cuComplex, int64_t, CUDA_C_32F, fp32_compute(h)) \
    X(ZGEMM64, cublasZgemm_v2_64, TYPED_GEMM, cuDoubleComplex, int64_t, CUDA_C_64F,            \
      CUBLAS_COMPUTE_64F)                                                                      \
    X(SGEMM_SB, cublasSgemmStridedBatched, TYPED_GEMM_SB, float, int, CUDA_R_32F,               \
      fp32_compute(h))                                                                         \
    X(DGEMM_SB, cublasDgemmStridedBatched, TYPED_GEMM_SB, double, int, CUDA_R_64F,              \
      CUBLAS_COMPUTE_64F)                                                                      \
    X(HGEMM_SB, cublasHgemmStridedBatched, TYPED_GEMM_SB, lp_half, int, CUDA_R_16F,             \
      CUBLAS_COMPUTE_16F)                                                                      \
    X(CGEMM_SB, cublasCgemmStridedBatched, TYPED_GEMM_SB, cuComplex, int, CUDA_C_32F,           \
      fp32_compute(h))                                                                         \
    X(ZGEMM_SB, cublasZgemmStridedBatched, TYPED_GEMM_SB, cuDoubleComplex, int, CUDA_C_64F,     \
      CUBLAS_COMPUTE_64F)                                                                      \
    X(SGEMM_SB64, cublasSgemmStridedBatched_64, TYPED_GEMM_SB, float, int64_t, CUDA_R_32F,      \
      fp32_compute(h))                                                                         \
    X(DGEMM_SB64, cublasDgemmStridedBatched_64, TYPED_GEMM_SB, double, int64_t, CUDA_R_64F,     \
      CUBLAS_COMPUTE_64F)                                                                      \
    X(HGEMM_SB64, cublasHgemmStridedBatched_64, TYPED_GEMM_SB, lp_half, int64_t, CUDA_R_16F,    \
      CUBLAS_COMPUTE_16F)                                                                      \
    X(CGEMM_SB64, cublasCgemmStridedBatched_64, TYPED_GEMM_SB, cuComplex, int64_t, CUDA_C_32F,  \
      fp32_compute(h))                                                                         \
    X(ZGEMM_SB64, cublasZgemmStridedBatched_64, TYPED_GEMM_SB, cuDoubleComplex, int64_t,        \
      CUDA_C_64F, CUBLAS_COMPUTE_64F)                                                          \
    X(SGEMM_B, cublasSgemmBatched, TYPED_GEMM_B, float, int, CUDA_R_32F, fp32_compute(h))      \
    X(DGEMM_B, cublasDgemmBatched, TYPED_GEMM_B, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)  \
    X(HGEMM_B, cublasHgemmBatched, TYPED_GEMM_B, lp_half, int, CUDA_R_16F, CUBLAS_COMPUTE_16F) \
    X(SGEMM_B64, cublasSgemmBatched_64, TYPED_GEMM_B, float, int64_t, CUDA_R_32F,               \
      fp32_compute(h))                                                                         \
    X(DGEMM_B64, cublasDgemmBatched_64, TYPED_GEMM_B, double, int64_t, CUDA_R_64F,              \
      CUBLAS_COMPUTE_64F)                                                                      \
    X(HGEMM_B64, cublasHgemmBatched_64, TYPED_GEMM_B, lp_half, int64_t, CUDA_R_16F,             \
      CUBLAS_COMPUTE_16F)                                                                      \
    X(SGEMMEX, cublasSgemmEx, SGEMM_EX, int)                                                   \
    X(SGEMMEX64, cublasSgemmEx_64, SGEMM_EX, int64_t)                                          \
    X(GEMMEX, cublasGemmEx, GEMM_EX, int)                                                      \
    X(GEMMEX64, cublasGemmEx_64, GEMM_EX, int64_t)                                             \
    X(GEMM_SBEX, cublasGemmStridedBatchedEx, GEMM_SB_EX, int)                                  \
    X(GEMM_SBEX64, cublasGemmStridedBatchedEx_64, GEMM_SB_EX, int64_t)                         \
    X(GEMM_BEX, cublasGemmBatchedEx, GEMM_B_EX, int)                                           \
    X(GEMM_BEX64, cublasGemmBatchedEx_64, GEMM_B_EX, int64_t)                                  \
    X(LTMATMUL, cublasLtMatmul, LT_MATMUL, LIB_CUBLASLT)

enum api_id {
#define API_ID(id, function, ...) API_##id,
    GEMM_ENTRY_LIST(API_ID)
#undef API_ID
    API_COUNT
};
static const char *const api_names[API_COUNT] = {
#define API_NAME(id, function, ...) [API_##id] = #function,
    GEMM_ENTRY_LIST(API_NAME)
#undef API_NAME
};

enum { QUEUE_CAP = 16384, MAX_TILES = 64, SHAPES_CAP = 4096 };

static int enabled;                 /* read on every call: atomic */
static int in_window = 1;           /* capture windows: calls outside them are not recorded */
static struct lp_queue queue = LP_QUEUE_INIT(struct lp_gemm, QUEUE_CAP);

/* What one shape's first call told about the algorithm; later calls copy it. */
struct shape {
    uint64_t hash;                  /* 0: empty slot */
    uint8_t state;                  /* 0 not asked yet, 1 known, 2 not learnt */
    int32_t algo;
    uint32_t tile;                  /* index into tiles + 1, 0 unknown */
    uint32_t splitk, compute_type;
};
static pthread_mutex_t shapes_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shape *shapes;
static size_t n_shapes;
static char tiles[MAX_TILES][24];
static uint32_t n_tiles;

/* the logger, switched on around first calls of a shape */
static pthread_mutex_t logger_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t logger_once = PTHREAD_ONCE_INIT;
static int algo_wanted;             /* the library was preloaded: the wrappers are live */
static int algo_capture;            /* 0: off (the user logs, or no logger API) */

struct call {
    struct lp_gemm g;
    struct shape learnt;            /* filled by the logger callback */
    struct shape *learning;         /* the slot being learnt (the table never moves) */
    int heard;
};
static __thread int depth;          /* > 0 inside a wrapper: nested calls are not recorded */
static __thread struct call *listening;

/* ---- the logger: algorithm and tile of a shape's first call ---- */

static const char *after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? p + strlen(key) : NULL;
}

static uint32_t tile_index(const char *s, size_t len)
{
    if (len == 0 || len >= sizeof tiles[0])
        return 0;
    for (uint32_t i = 0; i < n_tiles; i++)
        if (strlen(tiles[i]) == len && !memcmp(tiles[i], s, len))
            return i + 1;
    if (n_tiles == MAX_TILES)
        return 0;
    memcpy(tiles[n_tiles], s, len);
    tiles[n_tiles][len] = 0;
    return ++n_tiles;
}

static uint32_t compute_type_of(const char *p)
{
    static const struct {
        const char *name;
        uint32_t v;
    } names[] = {
        {"COMPUTE_32F_FAST_TF32", CUBLAS_COMPUTE_32F_FAST_TF32},
        {"COMPUTE_32F_FAST_16BF", CUBLAS_COMPUTE_32F_FAST_16BF},
        {"COMPUTE_32F_FAST_16F", CUBLAS_COMPUTE_32F_FAST_16F},
        {"COMPUTE_32F_PEDANTIC", CUBLAS_COMPUTE_32F_PEDANTIC},
        {"COMPUTE_32F", CUBLAS_COMPUTE_32F}, {"COMPUTE_16F", CUBLAS_COMPUTE_16F},
        {"COMPUTE_64F", CUBLAS_COMPUTE_64F}, {"COMPUTE_32I", CUBLAS_COMPUTE_32I},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t l = strlen(names[i].name);
        if (!strncmp(p, names[i].name, l) && (p[l] == ' ' || p[l] == ']'))
            return names[i].v;
    }
    return 0;
}

/* One Trace line per matmul: "... computeDesc=[computeType=COMPUTE_32F ...]
 * algo=[algoId=66 tile=MATMUL_TILE_256x128 stages=... ]". Runs on the calling thread. */
static void logger_cb(int level, const char *fn, const char *msg)
{
    (void)level;
    struct call *c = listening;
    if (!c || c->heard || !fn || !msg || !strstr(fn, "Matmul"))
        return;
    const char *a = after(msg, " algo=[algoId=");
    if (!a)
        return;
    c->heard = 1;
    c->learnt.algo = atoi(a);
    const char *t = after(a, "tile=MATMUL_TILE_");
    if (t) {
        pthread_mutex_lock(&shapes_mu); /* the flusher reads the tile names under it */
        c->learnt.tile = tile_index(t, strcspn(t, " ]"));
        pthread_mutex_unlock(&shapes_mu);
    }
    const char *s = after(a, "splitK=");
    if (s)
        c->learnt.splitk = (uint32_t)atoi(s);
    const char *ct = after(msg, "computeType=");
    if (ct)
        c->learnt.compute_type = compute_type_of(ct);
}

static void logger_init(void)
{
    const char *lvl = getenv("CUBLASLT_LOG_LEVEL"), *mask = getenv("CUBLASLT_LOG_MASK");
    const char *file = getenv("CUBLASLT_LOG_FILE");
    if ((lvl && *lvl && strcmp(lvl, "0")) || (mask && *mask && strcmp(mask, "0"))) {
        lp_sink_set_meta("gemm_algo", "off: CUBLASLT_LOG_LEVEL/MASK is set by the user, whose "
                                      "logging llmprof leaves alone");
        return;
    }
    /* cuBLASLt reads CUBLASLT_LOG_FILE when it loads and would print to stdout without it:
     * `llmprof record` sets it to /dev/null; without that, stay off the program's output */
    if (!file || strcmp(file, "/dev/null")) {
        lp_sink_set_meta("gemm_algo", file ? "off: CUBLASLT_LOG_FILE is set by the user"
                                           : "off: CUBLASLT_LOG_FILE is not /dev/null (not "
                                             "started by llmprof record)");
        return;
    }
    bind_helpers(LIB_CUBLASLT);
    FILE *null = fopen("/dev/null", "w");
    if (!lt.LoggerSetCallback || !lt.LoggerSetFile || !lt.LoggerSetLevel || !null ||
        lt.LoggerSetFile(null) != CUBLAS_STATUS_SUCCESS ||
        lt.LoggerSetCallback(logger_cb) != CUBLAS_STATUS_SUCCESS) {
        lp_sink_set_meta("gemm_algo", "off: cuBLASLt's logger API is not available");
        return;
    }
    algo_capture = 1;
    lp_sink_set_meta("gemm_algo", "cuBLASLt logger on the first call of each shape");
}

/* ---- shapes ---- */

static uint64_t shape_hash(const struct lp_gemm *g)
{
    const uint64_t v[] = {g->api, g->m, g->n, g->k, g->batch,
                          (uint64_t)g->transa << 32 | g->transb,
                          (uint64_t)g->a_type << 32 | g->b_type,
                          (uint64_t)g->c_type << 32 | g->d_type,
                          (uint64_t)g->compute_type << 32 | g->epilogue};
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* The slot of G's shape (created empty), or NULL when the table is full. */
static struct shape *shape_slot(uint64_t h)
{
    if (!shapes && !(shapes = calloc(SHAPES_CAP, sizeof *shapes)))
        return NULL;
    for (size_t i = h & (SHAPES_CAP - 1), n = 0; n < SHAPES_CAP; i = (i + 1) & (SHAPES_CAP - 1), n++) {
        if (shapes[i].hash == h)
            return &shapes[i];
        if (shapes[i].hash == 0) {
            if (n_shapes >= SHAPES_CAP / 2)
                return NULL;
            n_shapes++;
            shapes[i].hash = h;
            shapes[i].algo = -1;
            return &shapes[i];
        }
    }
    return NULL;
}

static void apply_shape(struct lp_gemm *g, const struct shape *s)
{
    g->algo = s->algo;
    g->tile = s->tile;
    g->splitk = s->splitk;
    if (s->compute_type)
        g->compute_type = s->compute_type;
}

/* ---- a call ---- */

/* 0: not recording this call (off, or nested in a recorded one) */
static int call_begin(struct call *c, enum api_id api)
{
    if (depth++ > 0 || !__atomic_load_n(&enabled, __ATOMIC_RELAXED) ||
        !__atomic_load_n(&in_window, __ATOMIC_RELAXED))
        return 0;
    memset(c, 0, sizeof *c);
    c->g.api = api;
    c->g.batch = 1;
    c->g.algo = -1;
    c->g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    c->g.thread = (uint32_t)pthread_self(); /* CUPTI's thread ids are pthread_self's low bits */
    c->g.start = lp_clock_ns();
    return 1;
}

/* After the arguments are known, before the real call: learn the algorithm of a new shape. */
static void call_ready(struct call *c)
{
    /* at the first call, not at CUDA's start: cuBLASLt is surely loaded by now */
    if (algo_wanted)
        pthread_once(&logger_once, logger_init);
    if (!algo_capture)
        return;
    uint64_t h = shape_hash(&c->g);
    pthread_mutex_lock(&shapes_mu);
    struct shape *s = shape_slot(h);
    if (s && s->state == 1) {
        apply_shape(&c->g, s);
        c->g.flags |= LP_GEMM_FLAG_ALGO_FIRST;
    }
    int learn = s && s->state == 0;
    pthread_mutex_unlock(&shapes_mu);
    /* one thread at a time switches the logger on; others try again on a later call */
    if (learn && pthread_mutex_trylock(&logger_mu) == 0) {
        c->learning = s;
        c->learnt.algo = -1;
        listening = c;
        lt.LoggerSetLevel(2);
    }
}

static cublasStatus_t call_end(struct call *c, int recording, cublasStatus_t st)
{
    depth--;
    if (!recording)
        return st;
    c->g.end = lp_clock_ns();
    c->g.status = (uint32_t)st;
    if (c->learning) {
        lt.LoggerSetLevel(0);
        listening = NULL;
        pthread_mutex_unlock(&logger_mu);
        pthread_mutex_lock(&shapes_mu);
        struct shape *s = c->learning;
        if (s->state == 0) {
            s->state = c->heard ? 1 : 2;
            s->algo = c->learnt.algo;
            s->tile = c->learnt.tile;
            s->splitk = c->learnt.splitk;
            s->compute_type = c->learnt.compute_type;
        }
        pthread_mutex_unlock(&shapes_mu);
        if (c->heard)
            apply_shape(&c->g, &c->learnt);
    }
    lp_queue_push(&queue, &c->g);
    return st;
}

static void set_shape(struct call *c, int ta, int tb, int64_t m, int64_t n, int64_t k,
                      int64_t batch, uint32_t a, uint32_t b, uint32_t cd, uint32_t compute)
{
    struct lp_gemm *g = &c->g;
    g->transa = (uint32_t)ta;
    g->transb = (uint32_t)tb;
    g->m = m > 0 ? (uint64_t)m : 0;
    g->n = n > 0 ? (uint64_t)n : 0;
    g->k = k > 0 ? (uint64_t)k : 0;
    g->batch = batch > 0 ? (uint64_t)batch : 0;
    g->a_type = a;
    g->b_type = b;
    g->c_type = g->d_type = cd;
    g->compute_type = compute;
}

/* fp32 GEMMs run on TF32 tensor cores when the handle's math mode allows it */
static uint32_t fp32_compute(cublasHandle_t h)
{
    if (!blas.GetMathMode)
        bind_helpers(LIB_CUBLAS);
    cublasMath_t mode = CUBLAS_DEFAULT_MATH;
    if (blas.GetMathMode && blas.GetMathMode(h, &mode) == CUBLAS_STATUS_SUCCESS &&
        (mode & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH)
        return CUBLAS_COMPUTE_32F_FAST_TF32;
    return CUBLAS_COMPUTE_32F;
}

/* ---- the wrappers ---- */

/* One wrapper: resolves the real function once, records around it. DESCRIBE fills c.g
 * from the arguments. */
#define LP_WRAP(lib, api, name, params, args, describe)                                        \
    LP_EXPORT cublasStatus_t name params                                                       \
    {                                                                                          \
        typedef cublasStatus_t(*fn_t) params;                                                  \
        static fn_t real;                                                                      \
        fn_t f = __atomic_load_n(&real, __ATOMIC_RELAXED);                                     \
        if (!f) {                                                                              \
            f = (fn_t)real_sym(lib, #name, (void *)name);                                      \
            if (!f)                                                                            \
                return missing(lib, #name);                                                    \
            __atomic_store_n(&real, f, __ATOMIC_RELAXED);                                      \
        }                                                                                      \
        struct call c;                                                                         \
        int rec = call_begin(&c, api);                                                         \
        if (rec) {                                                                             \
            describe;                                                                          \
            call_ready(&c);                                                                    \
        }                                                                                      \
        return call_end(&c, rec, f args);                                                      \
    }

/* cublas_api.h declares the Hgemm family for C++ only; pointers are all they take */
typedef struct {
    unsigned short bits;
} lp_half;

/* typed GEMM: Sgemm, Dgemm, Hgemm, Cgemm, Zgemm and their _64 forms */
#define TYPED_GEMM(api, name, T, I, ty, compute)                                               \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const T *alpha, const T *A, I lda, const T *B, I ldb, const T *beta, T *C, I ldc), \
            (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc),                         \
            set_shape(&c, ta, tb, m, n, k, 1, ty, ty, ty, compute))

#define TYPED_GEMM_SB(api, name, T, I, ty, compute)                                            \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const T *alpha, const T *A, I lda, long long sa, const T *B, I ldb, long long sb, \
             const T *beta, T *C, I ldc, long long sc, I batch),                               \
            (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch),      \
            set_shape(&c, ta, tb, m, n, k, batch, ty, ty, ty, compute))

#define TYPED_GEMM_B(api, name, T, I, ty, compute)                                             \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const T *alpha, const T *const A[], I lda, const T *const B[], I ldb,             \
             const T *beta, T *const C[], I ldc, I batch),                                     \
            (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch),                  \
            set_shape(&c, ta, tb, m, n, k, batch, ty, ty, ty, compute))

/* cublasSgemmEx: fp32 in, any types of A, B and C */
#define SGEMM_EX(api, name, I)                                                                 \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const float *alpha, const void *A, cudaDataType at, I lda, const void *B,         \
             cudaDataType bt, I ldb, const float *beta, void *C, cudaDataType ct, I ldc),      \
            (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc),             \
            set_shape(&c, ta, tb, m, n, k, 1, at, bt, ct, fp32_compute(h)))

#define GEMM_EX(api, name, I)                                                                  \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const void *alpha, const void *A, cudaDataType at, I lda, const void *B,          \
             cudaDataType bt, I ldb, const void *beta, void *C, cudaDataType ct, I ldc,        \
             cublasComputeType_t compute, cublasGemmAlgo_t algo),                              \
            (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute,     \
             algo),                                                                            \
            set_shape(&c, ta, tb, m, n, k, 1, at, bt, ct, compute))

#define GEMM_SB_EX(api, name, I)                                                               \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const void *alpha, const void *A, cudaDataType at, I lda, long long sa,           \
             const void *B, cudaDataType bt, I ldb, long long sb, const void *beta, void *C,   \
             cudaDataType ct, I ldc, long long sc, I batch, cublasComputeType_t compute,       \
             cublasGemmAlgo_t algo),                                                           \
            (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,  \
             batch, compute, algo),                                                            \
            set_shape(&c, ta, tb, m, n, k, batch, at, bt, ct, compute))

#define GEMM_B_EX(api, name, I)                                                                \
    LP_WRAP(LIB_CUBLAS, api, name,                                                             \
            (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,      \
             const void *alpha, const void *const A[], cudaDataType at, I lda,                 \
             const void *const B[], cudaDataType bt, I ldb, const void *beta,                  \
             void *const C[], cudaDataType ct, I ldc, I batch, cublasComputeType_t compute,    \
             cublasGemmAlgo_t algo),                                                           \
            (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, batch,       \
             compute, algo),                                                                   \
            set_shape(&c, ta, tb, m, n, k, batch, at, bt, ct, compute))

/* cublasLtMatmul: the shape is in the descriptors */
static void describe_lt(struct call *c, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                        cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t cl,
                        cublasLtMatrixLayout_t d)
{
    if (!lt.MatmulDescGetAttribute || !lt.MatrixLayoutGetAttribute)
        bind_helpers(LIB_CUBLASLT);
    cublasStatus_t (*desc_get)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *,
                               size_t, size_t *) = lt.MatmulDescGetAttribute;
    cublasStatus_t (*layout_get)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *,
                                 size_t, size_t *) = lt.MatrixLayoutGetAttribute;
    if (!desc_get || !layout_get)
        return;
    size_t w;
    int32_t ta = 0, tb = 0, compute = 0;
    uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT, ty[4] = {0};
    uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
    int32_t batch = 1;
    desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta, &w);
    desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb, &w);
    desc_get(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, sizeof compute, &w);
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi, &w);
    cublasLtMatrixLayout_t lay[4] = {a, b, cl, d};
    for (int i = 0; i < 4; i++)
        if (lay[i])
            layout_get(lay[i], CUBLASLT_MATRIX_LAYOUT_TYPE, &ty[i], sizeof ty[i], &w);
    layout_get(a, CUBLASLT_MATRIX_LAYOUT_ROWS, &a_rows, sizeof a_rows, &w);
    layout_get(a, CUBLASLT_MATRIX_LAYOUT_COLS, &a_cols, sizeof a_cols, &w);
    layout_get(d, CUBLASLT_MATRIX_LAYOUT_ROWS, &d_rows, sizeof d_rows, &w);
    layout_get(d, CUBLASLT_MATRIX_LAYOUT_COLS, &d_cols, sizeof d_cols, &w);
    layout_get(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch, &w);
    set_shape(c, ta, tb, (int64_t)d_rows, (int64_t)d_cols,
              (int64_t)(ta == CUBLAS_OP_N ? a_cols : a_rows), batch, ty[0], ty[1],
              cl ? ty[2] : ty[3], (uint32_t)compute);
    c->g.d_type = ty[3];
    c->g.epilogue = epi;
}

#define LT_MATMUL(api, name, lib)                                                              \
    LP_WRAP(lib, api, name,                                                                    \
            (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,  \
             cublasLtMatrixLayout_t ad, const void *B, cublasLtMatrixLayout_t bd,              \
             const void *beta, const void *C, cublasLtMatrixLayout_t cd, void *D,              \
             cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo, void *ws,            \
             size_t ws_size, cudaStream_t stream),                                             \
            (h, desc, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, ws_size, stream),     \
            describe_lt(&c, desc, ad, bd, cd, dd))

/* every wrapper, from the list */
#define GEMM_WRAPPER(id, function, family, ...) family(API_##id, function, __VA_ARGS__)
GEMM_ENTRY_LIST(GEMM_WRAPPER)
#undef GEMM_WRAPPER

/* ---- start, drain, stop ---- */

void lp_gemm_start(void (*notify)(void))
{
    if (!lp_config_get()->gemm) {
        lp_sink_set_meta("gemm", "off (LLMPROF_GEMM=0)");
        return;
    }
    queue.notify = notify;
    /* calls reach the wrappers when this library comes first in the lookup: preloaded */
    Dl_info self, bound;
    void *sym = dlsym(RTLD_DEFAULT, "cublasGemmEx");
    int interposed = sym && dladdr((void *)logger_cb, &self) && dladdr(sym, &bound) &&
                     self.dli_fbase == bound.dli_fbase;
    lp_sink_set_meta("gemm", interposed ? "on" : "off: libllmprof.so was not preloaded");
    algo_wanted = interposed;
    __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
}

void lp_gemm_drain(void)
{
    size_t n;
    uint64_t lost;
    struct lp_gemm *batch = lp_queue_take(&queue, &n, &lost);
    if (lost)
        lp_collect_warn(LP_LOSS_SOURCE_GEMM, lost, "GEMM records dropped: the queue of %d was full "
                        "between two flushes", QUEUE_CAP);
    if (!batch)
        return;
    lp_sink_lock();
    lp_str api_str[API_COUNT] = {0};
    pthread_mutex_lock(&shapes_mu); /* tiles are appended under it */
    for (size_t i = 0; i < n; i++) {
        struct lp_record r = {.type = LP_REC_GEMM, .u.gemm = batch[i]};
        struct lp_gemm *g = &r.u.gemm;
        uint32_t api = g->api < API_COUNT ? g->api : 0;
        if (!api_str[api])
            api_str[api] = lp_sink_intern(api_names[api]);
        g->api = api_str[api];
        g->tile = g->tile && g->tile <= n_tiles ? lp_sink_intern(tiles[g->tile - 1]) : 0;
        lp_sink_add(&r);
    }
    pthread_mutex_unlock(&shapes_mu);
    lp_sink_unlock();
    lp_queue_release(&queue, batch);
}

void lp_gemm_stop(void)
{
    __atomic_store_n(&enabled, 0, __ATOMIC_RELEASE);
    lp_gemm_drain();
    uint64_t rec, drop;
    lp_queue_counts(&queue, &rec, &drop);
    lp_sink_set_meta_u64("gemm_calls_recorded", rec);
    lp_sink_set_meta_u64("gemm_calls_dropped", drop);
}

int lp_gemm_set_recording(int on)
{
    __atomic_store_n(&in_window, on, __ATOMIC_RELAXED);
    return 0;
}

void lp_gemm_forget(void)
{
    __atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
}
