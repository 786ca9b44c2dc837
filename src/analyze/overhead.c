/* CUPTI's overhead records: host time CUPTI says it spent on its own work (buffers,
 * instrumentation, its resources), time CUDA spent loading code (lazy loading, JIT), and
 * launches that waited for command-buffer space. Per kind over the run, split by thread (the
 * program's, or llmprof's and CUPTI's own), and per stage: a record on a program thread
 * belongs to the occurrence host work there would (the range open on its thread), for its
 * part inside that occurrence's span; several threads' records add up. These
 * records leave out CUPTI's cost on each traced launch, which only a run without the profiler
 * shows (bench/overhead.sh). */
#include <stdlib.h>

#include "run_internal.h"
#include "llmprof/sat.h"

/* CUpti_ActivityOverheadKind's values (cupti_activity.h), as the trace records them, and
 * what each is host time of */
static const struct {
    uint32_t cupti;
    enum lp_overhead_class cls;
} kinds[LP_OVERHEAD_KIND_COUNT] = {
    [LP_OVERHEAD_KIND_UNKNOWN] = {0, LP_OVERHEAD_CLASS_OTHER},
    [LP_OVERHEAD_KIND_COMPILER] = {1, LP_OVERHEAD_CLASS_LOADING},
    [LP_OVERHEAD_KIND_BUFFER_FLUSH] = {1u << 16, LP_OVERHEAD_CLASS_PROFILER},
    [LP_OVERHEAD_KIND_INSTRUMENTATION] = {2u << 16, LP_OVERHEAD_CLASS_PROFILER},
    [LP_OVERHEAD_KIND_RESOURCE] = {3u << 16, LP_OVERHEAD_CLASS_PROFILER},
    [LP_OVERHEAD_KIND_MODULE_LOADING] = {4u << 16, LP_OVERHEAD_CLASS_LOADING},
    [LP_OVERHEAD_KIND_LAZY_LOADING] = {5u << 16, LP_OVERHEAD_CLASS_LOADING},
    [LP_OVERHEAD_KIND_COMMAND_BUFFER_FULL] = {6u << 16, LP_OVERHEAD_CLASS_QUEUE},
    [LP_OVERHEAD_KIND_BUFFER_REQUEST] = {7u << 16, LP_OVERHEAD_CLASS_PROFILER},
    [LP_OVERHEAD_KIND_UVM_INIT] = {8u << 16, LP_OVERHEAD_CLASS_PROFILER},
};

enum lp_overhead_kind lp_overhead_kind_of(uint32_t cupti_kind)
{
    for (int k = 1; k < LP_OVERHEAD_KIND_COUNT; k++)
        if (kinds[k].cupti == cupti_kind)
            return (enum lp_overhead_kind)k;
    return LP_OVERHEAD_KIND_UNKNOWN;
}

enum lp_overhead_class lp_overhead_kind_class(enum lp_overhead_kind k)
{
    return (unsigned)k < LP_OVERHEAD_KIND_COUNT ? kinds[k].cls : LP_OVERHEAD_CLASS_OTHER;
}

/* The program's threads, sorted and unique: those that made launch calls, pushed NVTX ranges
 * or called cuBLAS. *N gets their number; NULL out of memory. */
static uint32_t *program_threads(const struct lp_trace *t, size_t *n)
{
    size_t cap = t->n_apis + t->n_markers + t->n_gemms;
    uint32_t *v = malloc((cap ? cap : 1) * sizeof *v);
    if (!v)
        return NULL;
    /* records come in runs from one thread: keep a thread once per run, then sort the few */
    size_t k = 0;
#define KEEP(x) (k && v[k - 1] == (x) ? (void)0 : (void)(v[k++] = (x)))
    for (size_t i = 0; i < t->n_apis; i++)
        KEEP(lp_trace_api_kind(t, &t->apis[i])->thread);
    for (size_t i = 0; i < t->n_markers; i++)
        KEEP(t->markers[i].thread);
    for (size_t i = 0; i < t->n_gemms; i++)
        KEEP(lp_trace_gemm_kind(t, &t->gemms[i])->thread);
#undef KEEP
    qsort(v, k, sizeof *v, lp_cmp_u32);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    *n = m;
    return v;
}

static int cmp_row(const void *a, const void *b)
{
    const struct lp_overhead_row *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

int lp_run_overhead(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    struct lp_run_overhead *o = &r->overhead;
    if (!t->n_overheads)
        return LP_OK;
    size_t n_threads = 0;
    uint32_t *threads = program_threads(t, &n_threads);
    struct lp_overhead_row acc[LP_OVERHEAD_KIND_COUNT] = {0};
    if (!threads)
        return LP_ERR_NOMEM;
    o->launches_known = t->n_apis > 0;
    for (size_t i = 0; i < t->n_overheads; i++) {
        const struct lp_overhead *v = &t->overheads[i];
        o->records++;
        if (v->end <= v->start) { /* CUPTI could not time it (it gives 0 and 0) */
            o->untimed++;
            continue;
        }
        uint64_t d = v->end - v->start;
        enum lp_overhead_kind kind = lp_overhead_kind_of(v->kind);
        enum lp_overhead_class cls = lp_overhead_kind_class(kind);
        struct lp_overhead_row *row = &acc[kind];
        row->count++;
        row->total_ns = lp_sat_add(row->total_ns, d);
        row->max_ns = d > row->max_ns ? lp_sat_clamp(d) : row->max_ns;
        if (!bsearch(&v->thread, threads, n_threads, sizeof *threads, lp_cmp_u32))
            continue;
        row->program_ns = lp_sat_add(row->program_ns, d);
        o->program_ns[cls] = lp_sat_add(o->program_ns[cls], d);
        /* the occurrence a launch there would get, and only the part inside its span (a run
         * without stages answers its one occurrence at any time) */
        int32_t occ = lp_run_occ_at(c, v->thread, v->start);
        if (occ < 0)
            continue;
        const struct lp_occ *oc = &c->occ[occ];
        uint64_t a = v->start > oc->start ? v->start : oc->start;
        uint64_t b = v->end < oc->end ? v->end : oc->end;
        if (b <= a)
            continue;
        struct lp_stage_report *s = &r->stages[oc->stage];
        s->overhead_ns[cls] = lp_sat_add(s->overhead_ns[cls], b - a);
        s->overhead_n[cls]++;
        if (lp_stage_measured(s)) {
            row->measured_ns = lp_sat_add(row->measured_ns, b - a);
            o->measured_ns[cls] = lp_sat_add(o->measured_ns[cls], b - a);
        }
    }
    free(threads);
    o->rows = malloc(sizeof acc);
    if (!o->rows)
        return LP_ERR_NOMEM;
    for (int k = 0; k < LP_OVERHEAD_KIND_COUNT; k++) {
        if (!acc[k].count)
            continue;
        acc[k].kind = (enum lp_overhead_kind)k;
        acc[k].cls = lp_overhead_kind_class(acc[k].kind);
        o->rows[o->n_rows++] = acc[k];
    }
    qsort(o->rows, o->n_rows, sizeof *o->rows, cmp_row);
    for (size_t i = 0; i < r->n_stages; i++) {
        struct lp_stage_report *s = &r->stages[i];
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            s->overhead_share[k] = s->wall.total > 0 ? (double)s->overhead_ns[k] / s->wall.total
                                                     : 0;
    }
    return LP_OK;
}

void lp_run_overhead_free(struct lp_run *r)
{
    free(r->overhead.rows);
}
