/* Steps and tokens found in the trace, for programs that do not name them. Once work is
 * attributed to stage occurrences: each GEMM call's occurrence; each occurrence's effective
 * span (a range that closes before its GPU work ends lasts until that work ends); the token
 * dimension of its GEMM calls (prefill n = batch x prompt, decode n = batch); and, for
 * decode, the steps inside each range and where each one ends. Steps are found, in order,
 * from CUDA graph launches (one replay per step), from the lm_head (the largest GEMM, once
 * per forward pass), or from the kernel sequence that repeats once per step. Then the token
 * counts: a flag wins, then tokens= in range names, then shapes and steps. */
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

#define GRAPH_LABEL (1ull << 63)
#define MAX_TOKENS (1ll << 31) /* a token dimension past this is no token count */
#define MAX_CANDIDATES 3 /* step markers tried per occurrence, walking back from its end */
#define WALK_BACK 64

/* ---- GEMM calls: their occurrence and the end of their kernels ---- */

static int link_gemms(struct lp_run_ctx *c)
{
    int rc = lp_run_replays(c);
    if (rc || c->n_gemms == 0)
        return rc;
    c->gemm_occ = malloc(c->n_gemms * sizeof *c->gemm_occ);
    c->gemm_end = calloc(c->n_gemms, sizeof *c->gemm_end);
    if (!c->gemm_occ || !c->gemm_end)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_gemms; i++)
        c->gemm_occ[i] = -1;
    /* a call's occurrence is its earliest kernel's (equal starts: the first recorded), in
     * whatever order the kernels come */
    uint64_t *first = malloc(c->n_gemms * sizeof *first);
    if (!first)
        return LP_ERR_NOMEM;
    memset(first, 0xff, c->n_gemms * sizeof *first);
    for (size_t w = 0; c->kernel_gemm && w < c->n_work; w++) {
        const struct lp_work *x = &c->work[w];
        int32_t g = lp_work_kind(x) == LP_OP_KERNEL ? c->kernel_gemm[x->index] : -1;
        if (g < 0)
            continue;
        uint64_t start = lp_work_start(c->t, x);
        if (!c->gemm_end[g] || start < first[g]) {
            first[g] = start;
            c->gemm_occ[g] = x->occ;
        }
        uint64_t end = lp_work_end(c->t, x);
        c->gemm_end[g] = end > c->gemm_end[g] ? end : c->gemm_end[g];
    }
    free(first);
    /* a call that launched nothing (failed, or captured into a graph): where it was made */
    for (size_t i = 0; i < c->n_gemms; i++)
        if (!c->gemm_end[i])
            c->gemm_occ[i] = lp_run_occ_at(c, lp_run_gemm(c, i).thread, lp_run_gemm_start(c, i));
    return LP_OK;
}

/* ---- effective spans ---- */

static void effective_spans(struct lp_run_ctx *c)
{
    /* work given to an occurrence by time (no launch recorded) may not be its own */
    for (size_t i = 0; i < c->n_work; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t end = lp_work_end(c->t, w);
        if (w->occ >= 0 && w->call != LP_NO_CALL && end > c->occ[w->occ].gpu_end)
            c->occ[w->occ].gpu_end = end;
    }
    /* occurrences are sorted by start; one that opens after every earlier range closed
     * starts when the earlier ones' GPU work is done (the host ran ahead) */
    uint64_t ranges_end = 0, done = 0;
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        if (o->gpu_end > o->end)
            o->end = o->gpu_end;
        if (i > 0 && ranges_end <= o->start && done > o->start)
            o->start = done < o->end ? done : o->end;
        ranges_end = o->range_end > ranges_end ? o->range_end : ranges_end;
        done = o->end > done ? o->end : done;
    }
}

/* ---- the kernel sequence of an occurrence ---- */

/* Items of one occurrence in GPU order: a kernel, copy or set is labelled by its name
 * group; the kernels of one graph launch are one item labelled by the graph. */
struct items {
    uint64_t *label, *end, *sorted, *tmp;
    size_t n, cap;
};

static int items_of(struct lp_run_ctx *c, const uint32_t *work, size_t n, struct items *it)
{
    if (n > it->cap) {
        size_t cap = n;
        uint64_t *a = realloc(it->label, cap * sizeof *a);
        if (a)
            it->label = a;
        uint64_t *b = realloc(it->end, cap * sizeof *b);
        if (b)
            it->end = b;
        uint64_t *s = realloc(it->sorted, cap * sizeof *s);
        if (s)
            it->sorted = s;
        uint64_t *t = realloc(it->tmp, cap * sizeof *t);
        if (t)
            it->tmp = t;
        if (!a || !b || !s || !t)
            return LP_ERR_NOMEM;
        it->cap = cap;
    }
    it->n = 0;
    uint32_t graph_corr = 0;
    for (size_t i = 0; i < n; i++) {
        const struct lp_work *w = &c->work[work[i]];
        const struct lp_kernel_rec *k =
            lp_work_kind(w) == LP_OP_KERNEL ? &c->t->kernels[w->index] : NULL;
        const struct lp_kernel_config *kc = k ? lp_trace_kernel_config(c->t, k) : NULL;
        if (kc && (kc->flags & LP_KERNEL_FLAG_GRAPH)) {
            uint64_t label = GRAPH_LABEL | kc->graph_id;
            /* the kernels of one launch share its correlation id (0: unknown, then one
             * launch is what runs back to back) */
            if (it->n && it->label[it->n - 1] == label && k->correlation == graph_corr) {
                uint64_t end = lp_work_end(c->t, w);
                it->end[it->n - 1] = end > it->end[it->n - 1] ? end : it->end[it->n - 1];
                continue;
            }
            graph_corr = k->correlation;
            it->label[it->n] = label;
        } else {
            it->label[it->n] = w->group;
        }
        it->end[it->n++] = lp_work_end(c->t, w);
    }
    return LP_OK;
}

static size_t count_of(const struct items *it, uint64_t label)
{
    const uint64_t *lo = it->sorted, *hi = it->sorted + it->n;
    while (lo < hi) { /* first >= label */
        const uint64_t *mid = lo + (hi - lo) / 2;
        if (*mid < label)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = 0;
    while (lo + k < it->sorted + it->n && lo[k] == label)
        k++;
    return k;
}

/* Whether LABEL ends steps that repeat regularly: gaps between its items within 10 % of
 * their median D, a first step of 0.5-1.5 D, at most half a step after the last one, and
 * consecutive steps mostly the same kernels. POS receives its C positions. */
static int regular(const struct items *it, uint64_t label, size_t c, size_t *pos, double *gap,
                   size_t *period)
{
    size_t k = 0;
    for (size_t i = 0; i < it->n && k < c; i++)
        if (it->label[i] == label)
            pos[k++] = i;
    for (size_t j = 1; j < c; j++)
        gap[j - 1] = (double)(pos[j] - pos[j - 1]);
    qsort(gap, c - 1, sizeof *gap, lp_cmp_double);
    double d = gap[(c - 1) / 2];
    for (size_t j = 1; j < c; j++) {
        double g = (double)(pos[j] - pos[j - 1]);
        if (g < 0.9 * d - 1 || g > 1.1 * d + 1)
            return 0;
    }
    double head = (double)pos[0] + 1, tail = (double)(it->n - 1 - pos[c - 1]);
    if (head < 0.5 * d || head > 1.5 * d + 1 || tail > 0.5 * d)
        return 0;
    size_t alike = 0;
    for (size_t j = 0; j < c; j++) {
        size_t a = pos[j], b = j ? pos[j - 1] : 0; /* compare with the step before, from the end */
        size_t len = j ? pos[j] - pos[j - 1] : pos[0] + 1;
        size_t prev_len = j ? (j > 1 ? pos[j - 1] - pos[j - 2] : pos[0] + 1) : len;
        size_t m = len < prev_len ? len : prev_len, same = 0;
        for (size_t q = 0; j && q < m; q++)
            same += it->label[a - q] == it->label[b - q];
        alike += !j || 5 * same >= 4 * m;
    }
    *period = (size_t)d;
    return 10 * alike >= 9 * c;
}

/* Steps in an occurrence's sequence: the step ends with the label the sequence ends with,
 * or, walking back over labels that occur once (work after the loop), the last one that
 * repeats. GRAPHS: only graph launches can end a step. Eager kernels: PREFILL_ITEMS, the
 * items of a prefill, bounds a step (a decode step runs about what a prefill does); without
 * it nothing tells a layer from a step, so only the sequence's own last label may end one.
 * Returns the step count, 0 when none repeats regularly; POS receives each step's last
 * item. */
static size_t find_steps(const struct items *it, int graphs, double prefill_items, size_t *pos,
                         double *gap)
{
    if (it->n < 2)
        return 0;
    size_t walk = graphs || prefill_items > 0 ? WALK_BACK : 1;
    memcpy(it->sorted, it->label, it->n * sizeof *it->sorted);
    lp_sort_u64(it->sorted, it->tmp, it->n);
    uint64_t tried[MAX_CANDIDATES];
    size_t n_tried = 0;
    for (size_t k = it->n; k-- > 0 && it->n - k <= walk && n_tried < MAX_CANDIDATES;) {
        uint64_t label = it->label[k];
        if (graphs && !(label & GRAPH_LABEL))
            continue;
        size_t c = count_of(it, label);
        int seen = 0;
        for (size_t q = 0; q < n_tried; q++)
            seen |= tried[q] == label;
        if (c < 2 || seen)
            continue;
        tried[n_tried++] = label;
        size_t period = 0;
        if (!regular(it, label, c, pos, gap, &period))
            continue;
        if (!graphs && prefill_items > 0 &&
            ((double)period < 0.6 * prefill_items || (double)period > 1.6 * prefill_items))
            continue;
        return c;
    }
    return 0;
}

/* ---- per occurrence ---- */

/* The most common of V's N values (sorting V) and in *COUNT how often it occurs; 0 when N is 0. */
static uint64_t most_common(uint64_t *v, size_t n, size_t *count)
{
    qsort(v, n, sizeof *v, lp_cmp_u64);
    uint64_t best = 0;
    *count = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && v[j] == v[i]; j++)
            ;
        if (j - i > *count) {
            *count = j - i;
            best = v[i];
        }
    }
    return best;
}

/* GEMM calls of one occurrence: the token dimension (the value most calls share in m or
 * n) and the largest-weight call, the lm_head (*LM: LM_CALL, or NULL) */
static void gemm_shapes(struct lp_run_ctx *c, struct lp_occ *o, const uint32_t *calls, size_t n,
                        uint64_t *vals, struct lp_gemm *lm_call, const struct lp_gemm **lm)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct lp_gemm g = lp_run_gemm(c, calls[i]);
        vals[k++] = g.m;
        if (g.n != g.m)
            vals[k++] = g.n;
    }
    size_t best = 0;
    uint64_t mode = most_common(vals, k, &best);
    if (2 * best >= n && mode < (uint64_t)MAX_TOKENS)
        o->shape_tokens = (int64_t)mode;
    /* of equal weights, the call at the occurrence's token dimension: a decode range that
     * also holds its prefill still counts the decode's lm_head; then the smaller shape, so
     * that the order of the calls does not decide */
    *lm = NULL;
    uint64_t top = 0;
    int top_at_mode = 0;
    for (size_t i = 0; i < n; i++) {
        struct lp_gemm g = lp_run_gemm(c, calls[i]);
        int at_mode = g.m == mode || g.n == mode;
        uint64_t w = lp_gemm_weight(&g, mode);
        if (!*lm || w > top || (w == top && at_mode && !top_at_mode) ||
            (w == top && at_mode == top_at_mode && lp_gemm_shape_cmp(&g, *lm) < 0)) {
            top = w;
            top_at_mode = at_mode;
            *lm_call = g;
            *lm = lm_call;
        }
    }
    if (*lm && lp_gemm_tokens(*lm) < (uint64_t)MAX_TOKENS)
        o->lm_head_tokens = (int64_t)lp_gemm_tokens(*lm);
}

static int push_steps(struct lp_run_ctx *c, struct lp_occ *o, const uint64_t *ends, size_t n)
{
    if (c->n_step_ns + n > c->step_cap) {
        size_t cap = 2 * c->step_cap > c->n_step_ns + n ? 2 * c->step_cap : c->n_step_ns + n;
        double *p = realloc(c->step_ns, cap * sizeof *p);
        if (!p)
            return LP_ERR_NOMEM;
        c->step_ns = p;
        c->step_cap = cap;
    }
    double *p = c->step_ns;
    o->first_step = (uint32_t)c->n_step_ns;
    o->n_step_ns = (uint32_t)n;
    uint64_t prev = o->start;
    for (size_t j = 0; j < n; j++) {
        uint64_t e = j + 1 == n ? o->end : ends[j];
        p[c->n_step_ns++] = e > prev ? (double)(e - prev) : 0;
        prev = e > prev ? e : prev;
    }
    return LP_OK;
}

/* work and GEMM calls grouped by occurrence, in time order within each */
struct by_occ {
    uint32_t *work, *gemm;
    size_t *work_at, *gemm_at; /* n_occ + 1 offsets */
};

/* a GEMM that tells tokens and steps: it ran (a call captured into a graph ran only in its
 * replays), did not fail, one product of known size */
static int counts(const struct lp_run_ctx *c, size_t i)
{
    struct lp_gemm g = lp_run_gemm(c, i);
    return c->gemm_occ[i] >= 0 && !g.status && g.batch == 1 && g.m && g.n &&
           !(i < c->t->n_gemms && c->gemm_replays && c->gemm_replays[i]);
}

static int group_by_occ(struct lp_run_ctx *c, struct by_occ *b)
{
    size_t n = c->n_occ;
    b->work_at = calloc(n + 2, sizeof *b->work_at);
    b->gemm_at = calloc(n + 2, sizeof *b->gemm_at);
    b->work = malloc((c->n_work ? c->n_work : 1) * sizeof *b->work);
    b->gemm = malloc((c->n_gemms ? c->n_gemms : 1) * sizeof *b->gemm);
    if (!b->work_at || !b->gemm_at || !b->work || !b->gemm)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_work; i++)
        if (c->work[i].occ >= 0)
            b->work_at[c->work[i].occ + 2]++;
    for (size_t i = 0; c->gemm_occ && i < c->n_gemms; i++)
        if (counts(c, i))
            b->gemm_at[c->gemm_occ[i] + 2]++;
    for (size_t i = 2; i < n + 2; i++) {
        b->work_at[i] += b->work_at[i - 1];
        b->gemm_at[i] += b->gemm_at[i - 1];
    }
    /* work is sorted by start; GEMM records by call per thread, which is enough here */
    for (size_t i = 0; i < c->n_work; i++)
        if (c->work[i].occ >= 0)
            b->work[b->work_at[c->work[i].occ + 1]++] = (uint32_t)i;
    for (size_t i = 0; c->gemm_occ && i < c->n_gemms; i++)
        if (counts(c, i))
            b->gemm[b->gemm_at[c->gemm_occ[i] + 1]++] = (uint32_t)i;
    return LP_OK;
}

/* Decode steps of occurrence O: graph launches when graphs ran most of it, else the
 * lm_head's calls, else the repeating kernel sequence; one step when nothing repeats and it
 * is no longer than about a prefill. */
static int decode_steps(struct lp_run_ctx *c, struct lp_occ *o, const uint32_t *work, size_t n_work,
                        const uint32_t *calls, size_t n_calls, const struct lp_gemm *lm,
                        double prefill_items, struct items *it, size_t *pos, double *gap,
                        uint64_t *ends)
{
    const struct lp_trace *t = c->t;
    size_t graph = 0, kernels = 0, whole = 0;
    uint64_t graph_ns = 0, kernel_ns = 0;
    for (size_t i = 0; i < n_work; i++) {
        const struct lp_work *w = &c->work[work[i]];
        if (lp_work_kind(w) == LP_OP_KERNEL) {
            uint32_t flags = lp_trace_kernel_config(t, &t->kernels[w->index])->flags;
            kernels++;
            graph += (flags & LP_KERNEL_FLAG_GRAPH) != 0;
            whole += (flags & LP_KERNEL_FLAG_REPLAY) != 0;
            kernel_ns += lp_work_dur(c->t, w);
            graph_ns += flags & LP_KERNEL_FLAG_GRAPH ? lp_work_dur(c->t, w) : 0;
        }
    }
    int rc = items_of(c, work, n_work, it);
    if (rc)
        return rc;
    size_t s = 0;
    /* a replay recorded whole stands for all its kernels: then GPU time tells */
    int graphs = graph && (whole ? 2 * graph_ns >= kernel_ns : 2 * graph >= kernels);
    if (graphs) {
        s = find_steps(it, 1, 0, pos, gap);
    } else if (lm) {
        size_t unlinked = 0;
        for (size_t i = 0; i < n_calls; i++) {
            struct lp_gemm g = lp_run_gemm(c, calls[i]);
            if (lp_gemm_same_shape(&g, lm)) {
                unlinked += !c->gemm_end[calls[i]];
                ends[s++] = c->gemm_end[calls[i]];
            }
        }
        qsort(ends, s, sizeof *ends, lp_cmp_u64);
        o->steps = (int64_t)s;
        o->steps_source = LP_STEPS_LM_HEAD;
        return unlinked ? LP_OK : push_steps(c, o, ends, s);
    } else {
        s = find_steps(it, 0, prefill_items, pos, gap);
    }
    if (s) {
        uint64_t e = 0;
        for (size_t j = 0, i = 0; j < s; j++) {
            for (; i <= pos[j]; i++)
                e = it->end[i] > e ? it->end[i] : e;
            ends[j] = e;
        }
        o->steps = (int64_t)s;
        o->steps_source = graphs ? LP_STEPS_GRAPHS : LP_STEPS_SEQUENCE;
        return push_steps(c, o, ends, s);
    }
    /* one step: graphs each launched once (one pass of piecewise graphs), or eager work no
     * longer than about a prefill; else unknown (without a prefill nothing tells) */
    int once = 1;
    for (size_t i = 0; graphs && it->n >= 2 && i < it->n && once; i++)
        if (it->label[i] & GRAPH_LABEL)
            once = count_of(it, it->label[i]) == 1;
    if (graphs ? once : prefill_items > 0 && (double)it->n <= 1.6 * prefill_items) {
        o->steps = 1;
        o->steps_source = LP_STEPS_RANGES;
        return push_steps(c, o, ends, 1);
    }
    return LP_OK;
}

/* the decode occurrences' most common token dimension (one batch for the run) */
static int64_t mode_batch(const struct lp_run_ctx *c)
{
    uint64_t *v = malloc((c->n_occ ? c->n_occ : 1) * sizeof *v);
    if (!v)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < c->n_occ; i++)
        if (lp_occ_kind(c, &c->occ[i]) == LP_STAGE_KIND_DECODE && c->occ[i].shape_tokens > 0)
            v[n++] = (uint64_t)c->occ[i].shape_tokens;
    size_t count;
    uint64_t best = most_common(v, n, &count);
    free(v);
    return (int64_t)best;
}

/* Of N occurrences' evidence V, how many differ from GIVEN (*DIFFER), and the value most
 * of those show (0: none differs); V is reordered. */
static int64_t evidence(int64_t *v, size_t n, int64_t given, size_t *differ)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] != given)
            v[k++] = v[i];
    *differ = k;
    size_t count;
    return k ? (int64_t)most_common((uint64_t *)v, k, &count) : 0;
}

/* Token and batch flags against what the trace shows before they replace it: the prefills'
 * GEMM token dimension, the decode steps found times the batch, the decode GEMMs' token
 * dimension. A disagreement is a note naming both; the flag's value is used. */
static int check_flags(struct lp_run_ctx *c, int64_t shape_batch)
{
    struct lp_run *r = c->r;
    const struct lp_run_options *opt = &r->opt;
    int64_t *v = malloc((c->n_occ ? c->n_occ : 1) * sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    int rc = LP_OK;
    for (int what = 0; what < 3 && rc == LP_OK; what++) {
        int64_t given = what == 0 ? opt->prefill_tokens : what == 1 ? opt->decode_tokens
                                                                    : opt->batch;
        size_t n = 0, differ;
        for (size_t i = 0; given > 0 && i < c->n_occ; i++) {
            const struct lp_occ *o = &c->occ[i];
            enum lp_stage_kind k = lp_occ_kind(c, o);
            if (o->cut)
                continue;
            if (what == 0 && k == LP_STAGE_KIND_PREFILL && o->shape_tokens > 0)
                v[n++] = o->shape_tokens;
            else if (what == 1 && k == LP_STAGE_KIND_DECODE && o->steps > 0 &&
                     (o->steps_source == LP_STEPS_LM_HEAD || o->steps_source == LP_STEPS_GRAPHS ||
                      o->steps_source == LP_STEPS_SEQUENCE))
                v[n++] = o->steps * (o->shape_tokens > 0 ? o->shape_tokens
                                     : shape_batch > 0   ? shape_batch
                                                         : 1);
            else if (what == 2 && k == LP_STAGE_KIND_DECODE && o->shape_tokens > 0)
                v[n++] = o->shape_tokens;
        }
        int64_t seen = evidence(v, n, given, &differ);
        if (differ)
            rc = lp_run_note(r, what == 0   ? LP_NOTE_PREFILL_TOKENS_GIVEN
                                : what == 1 ? LP_NOTE_DECODE_TOKENS_GIVEN
                                            : LP_NOTE_BATCH_GIVEN,
                             -1, given, seen, (double)differ);
    }
    free(v);
    return rc;
}

/* Token counts and steps of every occurrence: flag, then range name, then shapes/steps. A
 * flag's count the run cannot hold is withheld, the trace's own count standing in its place
 * (*IMPOSSIBLE counts the occurrences): a
 * prefill past MAX_TOKENS, or a decode of more steps than it ran pieces of GPU work (each
 * step launches one at least; B gives them, with kernels recorded; a range that holds none
 * may have its work launched from another thread: nothing tells). */
static void resolve_tokens(struct lp_run_ctx *c, const struct by_occ *b, size_t *impossible)
{
    struct lp_run *r = c->r;
    const struct lp_run_options *opt = &r->opt;
    struct lp_llm_metrics *m = &r->llm;
    m->batch = opt->batch;
    m->batch_source = LP_TOKENS_FLAG;
    for (size_t i = 0; i < c->n_occ && m->batch <= 0; i++)
        if (c->occ[i].batch > 0) {
            m->batch = c->occ[i].batch;
            m->batch_source = LP_TOKENS_RANGE_NAME;
        }
    if (m->batch <= 0 && (m->batch = mode_batch(c)) > 0)
        m->batch_source = LP_TOKENS_SHAPES;
    if (m->batch <= 0) {
        m->batch = 1;
        m->batch_source = LP_TOKENS_NONE;
    }
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        enum lp_stage_kind k = lp_occ_kind(c, o);
        /* the flags count a whole occurrence's tokens: not a part cut by a capture window */
        int64_t flag = o->cut                      ? 0
                       : k == LP_STAGE_KIND_PREFILL ? opt->prefill_tokens
                       : k == LP_STAGE_KIND_DECODE  ? opt->decode_tokens
                                                    : 0;
        size_t items = b->work_at[i + 1] - b->work_at[i];
        int64_t per_step = m->batch > 0 ? m->batch : 1;
        if (flag > 0 && ((k == LP_STAGE_KIND_PREFILL && flag >= MAX_TOKENS) ||
                         (k == LP_STAGE_KIND_DECODE && lp_trace_kernels_recorded(c->t) &&
                          items && (uint64_t)(flag / per_step) > items))) {
            (*impossible)++;
            flag = 0; /* withheld: the trace's own count stands */
        }
        if (flag > 0) {
            o->n_tokens = flag;
            o->tokens_source = LP_TOKENS_FLAG;
        } else if (o->tokens > 0) {
            o->n_tokens = o->tokens;
            o->tokens_source = LP_TOKENS_RANGE_NAME;
        } else if (k == LP_STAGE_KIND_PREFILL && o->shape_tokens > 0) {
            o->n_tokens = o->shape_tokens;
            o->tokens_source = LP_TOKENS_SHAPES;
        } else if (k == LP_STAGE_KIND_DECODE && o->steps > 0) {
            /* its own batch when the shapes tell it, else the run's */
            int64_t per = m->batch_source == LP_TOKENS_SHAPES && o->shape_tokens > 0
                              ? o->shape_tokens
                              : m->batch;
            if (!__builtin_mul_overflow(o->steps, per, &o->n_tokens))
                o->tokens_source = LP_TOKENS_STEPS;
            else
                o->n_tokens = 0;
        }
        if (k == LP_STAGE_KIND_DECODE && o->tokens_source != LP_TOKENS_STEPS &&
            o->n_tokens > 0) {
            int64_t steps = o->n_tokens / m->batch > 0 ? o->n_tokens / m->batch : 1;
            if (steps != o->steps)
                o->n_step_ns = 0; /* the bounds found disagree with the count given */
            o->steps = steps;
            o->steps_source = LP_STEPS_TOKENS;
        }
        if (k == LP_STAGE_KIND_PREFILL && o->lm_head_tokens > 0 && o->shape_tokens > m->batch &&
            !m->prefill_logits)
            m->prefill_logits = o->lm_head_tokens == o->shape_tokens ? 2
                                : o->lm_head_tokens == m->batch    ? 1
                                                                   : 0;
    }
}

int lp_run_steps(struct lp_run_ctx *c)
{
    int rc = link_gemms(c);
    if (rc)
        return rc;
    effective_spans(c);
    struct by_occ b = {0};
    struct items it = {0};
    size_t max_decode = 0, max_calls = 0;
    size_t *pos = NULL;
    double *gap = NULL;
    uint64_t *ends = NULL, *vals = NULL;
    double *pre = malloc((c->n_occ ? c->n_occ : 1) * sizeof *pre);
    if (!pre || (rc = group_by_occ(c, &b)))
        goto out;
    /* the step search's buffers for the largest decode occurrence only (a run that is one
     * occurrence of another kind needs none), the GEMM shapes' for the most calls */
    for (size_t i = 0; i < c->n_occ; i++) {
        size_t w = b.work_at[i + 1] - b.work_at[i], g = b.gemm_at[i + 1] - b.gemm_at[i];
        max_calls = g > max_calls ? g : max_calls;
        size_t m = w > g ? w : g;
        if (lp_occ_kind(c, &c->occ[i]) == LP_STAGE_KIND_DECODE && m > max_decode)
            max_decode = m;
    }
    rc = LP_ERR_NOMEM;
    size_t cap = max_decode + 1;
    pos = malloc(cap * sizeof *pos);
    gap = malloc(cap * sizeof *gap);
    ends = malloc(cap * sizeof *ends);
    vals = malloc(2 * (max_calls + 1) * sizeof *vals);
    if (!pos || !gap || !ends || !vals)
        goto out;
    /* prefill size in items: what one eager forward pass launches */
    size_t n_pre = 0;
    for (size_t i = 0; i < c->n_occ; i++)
        if (lp_occ_kind(c, &c->occ[i]) == LP_STAGE_KIND_PREFILL)
            pre[n_pre++] = (double)(b.work_at[i + 1] - b.work_at[i]);
    qsort(pre, n_pre, sizeof *pre, lp_cmp_double);
    double prefill_items = n_pre ? pre[n_pre / 2] : 0;
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        const uint32_t *calls = b.gemm + b.gemm_at[i];
        size_t n_calls = b.gemm_at[i + 1] - b.gemm_at[i];
        struct lp_gemm lm_call;
        const struct lp_gemm *lm = NULL;
        if (n_calls)
            gemm_shapes(c, o, calls, n_calls, vals, &lm_call, &lm);
        if (lp_occ_kind(c, o) != LP_STAGE_KIND_DECODE)
            continue;
        if ((rc = decode_steps(c, o, b.work + b.work_at[i], b.work_at[i + 1] - b.work_at[i],
                               calls, n_calls, lm, prefill_items, &it, pos, gap, ends)))
            goto out;
    }
    if ((rc = check_flags(c, mode_batch(c))))
        goto out;
    size_t impossible = 0;
    resolve_tokens(c, &b, &impossible);
    rc = impossible ? lp_run_note(c->r, LP_NOTE_TOKENS_IMPOSSIBLE, -1, 0, 0, (double)impossible)
                    : LP_OK;
out:
    free(pre);
    free(b.work);
    free(b.gemm);
    free(b.work_at);
    free(b.gemm_at);
    free(it.label);
    free(it.end);
    free(it.sorted);
    free(it.tmp);
    free(pos);
    free(gap);
    free(ends);
    free(vals);
    return rc;
}
