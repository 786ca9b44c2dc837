/* Serving engines (continuous batching): every forward pass ("iteration") of a serving loop
 * runs one flat batch of tokens, one per decoding sequence plus the prefill chunks of newly
 * admitted requests, and ends with the lm_head on the rows that sample. The lm_head, the GEMM
 * with the largest weight, is the anchor: one call per iteration, its token dimension the
 * sequences sampled; the GEMMs of its forward that read the hidden state give the tokens in
 * flight; a CUDA graph replay instead gives the size it was captured for. Whether a program
 * is a serving loop at all is decided from evidence only: the request convention's ranges and
 * marks, a decode batch that shrinks with no prefill between, or a prefill whose tokens are no
 * multiple of its sequences. Then no prefill or decode stage is inferred (stages.c), and
 * per-request figures come only from the convention (docs/serving.md). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

/* ---- the GEMMs: anchor shape, kernel times ---- */

struct gemm_times {
    uint64_t *start, *end;        /* per GEMM that ran: its kernels' first start and last end, 0 */
};

static int gemm_times(const struct lp_run_ctx *c, struct gemm_times *g)
{
    g->start = calloc(c->n_gemms ? c->n_gemms : 1, sizeof *g->start);
    g->end = calloc(c->n_gemms ? c->n_gemms : 1, sizeof *g->end);
    if (!g->start || !g->end)
        return LP_ERR_NOMEM;
    for (size_t i = 0; c->kernel_gemm && i < c->t->n_kernels; i++) {
        int32_t x = c->kernel_gemm[i];
        const struct lp_kernel_rec *k = &c->t->kernels[i];
        if (x < 0)
            continue;
        if (!g->start[x] || k->start < g->start[x])
            g->start[x] = k->start;
        if (lp_trace_kernel_end(c->t, k) > g->end[x])
            g->end[x] = lp_trace_kernel_end(c->t, k);
    }
    return LP_OK;
}

/* A call that can be a forward's linear layer or its lm_head: y = x W^T, PyTorch's way (m the
 * weight's rows, n the tokens, k the weight's columns). */
static int linear_call(const struct lp_gemm *g)
{
    const uint64_t big = (uint64_t)1 << 31; /* no real layer: a damaged record */
    return g->status == 0 && g->batch == 1 && g->m && g->n && g->k && g->m < big &&
           g->n < big && g->k < big;
}

/* GEMM indices by start, ties (the replays of one graph launch share its start) by index */
static int cmp_gemm_start(const void *a, const void *b, void *arg)
{
    const struct lp_run_ctx *c = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t si = lp_run_gemm_start(c, i), sj = lp_run_gemm_start(c, j);
    if (si != sj)
        return si < sj ? -1 : 1;
    return (i > j) - (i < j);
}

/* ---- CUDA graphs recorded whole: the token dimension each executable graph was captured
 * for, from the GEMM calls its nodes were made in ---- */

struct u32_pair {
    uint32_t key, val;
};

/* pairs by (key, value) */
static int cmp_pair(const void *a, const void *b)
{
    const struct u32_pair *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->val > y->val) - (x->val < y->val);
}

/* pairs by key alone: the search of pair_find */
static int cmp_pair_key(const void *a, const void *b)
{
    const struct u32_pair *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* a pair of KEY in V, sorted by cmp_pair */
static const struct u32_pair *pair_find(const struct u32_pair *v, size_t n, uint32_t key)
{
    struct u32_pair k = {key, 0};
    return n ? bsearch(&k, v, n, sizeof *v, cmp_pair_key) : NULL;
}

/* The GEMM call (a GEMM that ran, sorted by start in ORD) on THREAD that was running at
 * TS, -1 */
static int32_t call_at(const struct lp_run_ctx *c, const uint32_t *ord, size_t n,
                       uint32_t thread, uint64_t ts)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lp_run_gemm_start(c, ord[mid]) <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* calls on one thread do not overlap; look back a little for this thread's */
    for (size_t i = lo, seen = 0; i-- > 0 && seen < 64; seen++) {
        struct lp_gemm g = lp_run_gemm(c, ord[i]);
        if (g.thread == thread)
            return g.end >= ts ? (int32_t)ord[i] : -1;
    }
    return -1;
}

/* Executable graph id -> tokens its GEMMs were captured with (the largest), sorted by id */
static int graph_buckets(const struct lp_run_ctx *c, const uint32_t *ord, size_t n,
                         struct u32_pair **out, size_t *n_out)
{
    const struct lp_trace *t = c->t;
    *out = NULL;
    *n_out = 0;
    size_t n_made = 0, n_exec = 0;
    for (size_t i = 0; i < t->n_graphs; i++) {
        n_made += t->graphs[i].event == LP_GRAPH_EVENT_NODE_CREATED;
        n_exec += t->graphs[i].event == LP_GRAPH_EVENT_EXEC_CREATED;
    }
    if (!n_made || !n_exec)
        return LP_OK;
    struct u32_pair *made = malloc(n_made * sizeof *made), *exec = malloc(n_exec * sizeof *exec);
    if (!made || !exec) {
        free(made);
        free(exec);
        return LP_ERR_NOMEM;
    }
    size_t a = 0, b = 0;
    for (size_t i = 0; i < t->n_graphs; i++) {
        const struct lp_graph *e = &t->graphs[i];
        if (e->event == LP_GRAPH_EVENT_NODE_CREATED) {
            int32_t g = call_at(c, ord, n, e->thread, e->timestamp);
            struct lp_gemm call = g >= 0 ? lp_run_gemm(c, (size_t)g) : (struct lp_gemm){0};
            if (g >= 0 && (size_t)g < t->n_gemms && linear_call(&call))
                made[a++] = (struct u32_pair){e->graph_id, (uint32_t)call.n};
        } else if (e->event == LP_GRAPH_EVENT_EXEC_CREATED) {
            exec[b++] = (struct u32_pair){e->graph_id, e->exec_id};
        }
    }
    /* the largest per graph: its linear layers' tokens (an lm_head captured with it samples
     * no more rows than it has) */
    qsort(made, a, sizeof *made, cmp_pair);
    size_t m = 0;
    for (size_t i = 0; i < a; i++) {
        if (m && made[m - 1].key == made[i].key) {
            if (made[i].val > made[m - 1].val)
                made[m - 1].val = made[i].val;
        } else {
            made[m++] = made[i];
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < b; i++) {
        const struct u32_pair *p = pair_find(made, m, exec[i].key);
        if (p)
            exec[k++] = (struct u32_pair){exec[i].val, p->val};
    }
    qsort(exec, k, sizeof *exec, cmp_pair);
    free(made);
    *out = exec;
    *n_out = k;
    return LP_OK;
}

static double median_of(double *v, size_t n);

/* ---- iterations ---- */

struct anchor {
    uint32_t gemm;
    int64_t tokens;               /* the forward's linear GEMMs' token dimension, 0 unknown */
    int64_t bucket;               /* the forward ran as replays of GEMMs captured for it */
    uint64_t fwd_start;           /* kernel start of the forward's first GEMM, 0 unknown */
    int after_break;              /* the anchor before it was left out (no kernels) */
};

/* The anchors in time order with the forward before each: the GEMM calls on the anchor's
 * thread since the previous anchor, back from the anchor to a call captured into a graph
 * (graph captures are no forward of the loop) or one of the other kind (eager, replayed). Its
 * tokens in flight are the largest token dimension of those that read the hidden state (the
 * lm_head's k: q/k/v, gate/up, the router; not a MoE expert's down projection, which sees only
 * the tokens routed to it, nor a rotary embedding's or a vision tower's), its start the first
 * call with that many. */
static int find_anchors(const struct lp_run_ctx *c, const struct gemm_times *gt,
                        const uint32_t *ord, size_t n, uint64_t key_m, uint64_t key_k,
                        struct anchor **out, size_t *n_out, size_t *outside)
{
    struct anchor *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    size_t na = 0;
    int broke = 0;
    ptrdiff_t prev = -1;
    for (size_t p = 0; p < n; p++) {
        struct lp_gemm a = lp_run_gemm(c, ord[p]);
        if (a.m != key_m || a.k != key_k)
            continue;
        if (!gt->end[ord[p]]) { /* no kernel: outside a capture window, or captured */
            (*outside)++;
            broke = 1;
            prev = (ptrdiff_t)p;
            continue;
        }
        struct anchor x = {.gemm = ord[p], .after_break = broke};
        broke = 0;
        int64_t tokens = 0;
        int graph = 0, seen = 0;
        for (ptrdiff_t q = (ptrdiff_t)p - 1; q > prev; q--) {
            uint32_t gi = ord[q];
            struct lp_gemm g = lp_run_gemm(c, gi);
            if (g.thread != a.thread)
                continue;
            int is_graph = gi >= c->t->n_gemms; /* a replay */
            if (!gt->end[gi] || (seen && is_graph != graph))
                break;
            seen = 1;
            graph = is_graph;
            if (g.k != key_k)
                continue;
            if ((int64_t)g.n > tokens) {
                tokens = (int64_t)g.n;
                x.fwd_start = 0;
            }
            if ((int64_t)g.n == tokens && (!x.fwd_start || gt->start[gi] < x.fwd_start))
                x.fwd_start = gt->start[gi];
        }
        x.tokens = graph ? 0 : tokens;
        x.bucket = graph ? tokens : 0;
        v[na++] = x;
        prev = (ptrdiff_t)p;
    }
    *out = v;
    *n_out = na;
    return LP_OK;
}

/* The anchor shape: the (m, k) weight of the largest linear call, when it ran at least three
 * times. 0: none. */
static void anchor_shape(const struct lp_run_ctx *c, uint64_t *m, uint64_t *k)
{
    *m = *k = 0;
    struct lp_gemm big = {0}; /* the largest weight, exactly; then m, then k */
    int found = 0;
    for (size_t i = 0; i < c->n_gemms; i++) {
        struct lp_gemm g = lp_run_gemm(c, i);
        if (linear_call(&g) && (!found || lp_gemm_weight_cmp(&g, &big) > 0)) {
            big = g;
            found = 1;
        }
    }
    if (!found)
        return;
    *m = big.m;
    *k = big.k;
    size_t calls = 0;
    for (size_t i = 0; i < c->n_gemms && calls < 3; i++) {
        struct lp_gemm g = lp_run_gemm(c, i);
        calls += linear_call(&g) && g.m == *m && g.k == *k;
    }
    if (calls < 3)
        *m = *k = 0;
}

/* GPU start, busy time and graph replays of each iteration's period, from the work in
 * (previous end, end] (c->work is by start). */
static void sweep_work(const struct lp_run_ctx *c, struct lp_iteration *it, size_t n,
                       const struct anchor *an, const struct u32_pair *buckets,
                       size_t n_buckets)
{
    const struct lp_trace *t = c->t;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        /* the first of a run: its graph replays since the iteration before it, if any */
        uint64_t a = it[i].period_ns ? it[i].end - it[i].period_ns : i ? it[i - 1].end : 0;
        uint64_t b = it[i].end, reach = a, graph_start = 0;
        int64_t bucket = 0;
        int graph = 0;
        while (w < c->n_work && lp_work_start(t, &c->work[w]) <= a)
            w++;
        for (size_t j = w; j < c->n_work && lp_work_start(t, &c->work[j]) < b; j++) {
            const struct lp_work *x = &c->work[j];
            uint64_t start = lp_work_start(t, x), end = lp_work_end(t, x);
            uint64_t s = start > reach ? start : reach, e = end < b ? end : b;
            if (e > s && it[i].period_ns)
                it[i].busy_ns += e - s;
            if (end > reach)
                reach = end;
            const struct lp_kernel_config *kc =
                lp_work_kind(x) == LP_OP_KERNEL ? lp_trace_kernel_config(t, &t->kernels[x->index])
                                                : NULL;
            if (kc && (kc->flags & LP_KERNEL_FLAG_GRAPH)) {
                if (!graph)
                    graph_start = start;
                graph = 1;
                const struct u32_pair *p = pair_find(buckets, n_buckets, kc->graph_id);
                if (p && (int64_t)p->val > bucket)
                    bucket = p->val;
            }
        }
        /* a forward recorded whole as graph replays: no eager GEMM showed its tokens */
        if (!an[i].tokens && !an[i].bucket && graph) {
            it[i].start = graph_start;
            it[i].bucket = bucket;
            it[i].kind = LP_ITER_KIND_DECODE;
        }
    }
}

/* A host gap this long before a forward, and ten times the median period, is a server with
 * nothing to run (waiting for requests, or warming up), not sequences waiting for a token. */
#define IDLE_NS 100000000ull

/* Decode sequences and prompt tokens from the shapes: exact when every token in flight is
 * sampled (or the forward is a graph, taken as decode-only), else the sequences the iteration
 * before sampled carried on (at most the ones sampled now), none after an idle server. */
static void classify(struct lp_iteration *it, size_t n, const struct anchor *an, uint64_t idle,
                     int windowed)
{
    for (size_t i = 0; i < n; i++) {
        struct lp_iteration *x = &it[i];
        x->source = LP_ITER_SOURCE_SHAPES;
        if (an[i].bucket || (x->kind == LP_ITER_KIND_DECODE && !an[i].tokens)) {
            if (an[i].bucket)
                x->bucket = an[i].bucket;
            x->kind = LP_ITER_KIND_DECODE;
            x->tokens = x->decode = x->sampled;
            continue;
        }
        x->tokens = an[i].tokens;
        if (!x->tokens || x->tokens < x->sampled) {
            x->kind = LP_ITER_KIND_UNKNOWN;
            continue;
        }
        if (x->tokens == x->sampled) {
            x->kind = LP_ITER_KIND_DECODE;
            x->decode = x->sampled;
            continue;
        }
        int64_t carried = i > 0 && !an[i].after_break && x->gap_ns < idle ? it[i - 1].sampled
                                                                           : 0;
        x->decode = carried < x->sampled ? carried : x->sampled;
        if (x->decode > x->tokens - 1)
            x->decode = x->tokens - 1;
        x->prefill_tokens = x->tokens - x->decode;
        x->kind = x->decode ? LP_ITER_KIND_MIXED : LP_ITER_KIND_PREFILL;
        /* the program's first forward had nothing to decode; a window's first may have */
        x->source = i == 0 && !windowed ? LP_ITER_SOURCE_SHAPES : LP_ITER_SOURCE_CARRIED;
    }
}

/* ---- the request convention ---- */

/* A request by id, then admission (ids are reused: a client numbering from 0 each run) */
struct req_key {
    const char *id;
    size_t len;
    uint64_t admit;
    uint64_t reach;               /* the latest end of the requests of its id admitted before
                                     it or with it (itself included): increasing, searched */
    uint32_t req;
};

/* X's id against Y's: the longer one after the shorter one it starts with */
static int cmp_id(const struct req_key *x, const struct req_key *y)
{
    size_t n = x->len < y->len ? x->len : y->len;
    int d = memcmp(x->id, y->id, n);
    if (d)
        return d;
    return (x->len > y->len) - (x->len < y->len);
}

static int cmp_req_key(const void *a, const void *b)
{
    const struct req_key *x = a, *y = b;
    int d = cmp_id(x, y);
    if (d)
        return d;
    if (x->admit != y->admit)
        return x->admit < y->admit ? -1 : 1;
    return (x->req > y->req) - (x->req < y->req);
}

struct mark {
    uint64_t t;
    uint32_t req;
    int64_t tokens;               /* a prefill mark's tokens=N; -1 a token mark */
};

static int cmp_mark(const void *a, const void *b)
{
    const struct mark *x = a, *y = b;
    if (x->req != y->req)
        return x->req < y->req ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* TO - FROM in ns, exact: absolute trace times (~1.8e18) as doubles are 256 ns apart */
static double ns_between(uint64_t from, uint64_t to)
{
    return to >= from ? (double)(to - from) : -(double)(from - to);
}

/* N=value word of NAME ("prompt=812"), 0 absent */
static int64_t word_value(const char *name, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = name; (p = strstr(p, key)) != NULL; p += k)
        if ((p == name || p[-1] == ' ') && p[k] == '=') {
            char *e;
            long long v = strtoll(p + k + 1, &e, 10);
            /* more than 2^31 tokens in one prompt or chunk: not a count */
            return e > p + k + 1 && v > 0 && v < (1ll << 31) ? (int64_t)v : 0;
        }
    return 0;
}

/* The first key of KEYS (N) from LO on at which AT (on keys) turns true, N none: AT is
 * false, then true */
static size_t first_key(const struct req_key *keys, size_t lo, size_t n,
                        int (*at)(const struct req_key *, const struct req_key *),
                        const struct req_key *k)
{
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at(&keys[mid], k))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int id_from(const struct req_key *x, const struct req_key *k) { return cmp_id(x, k) >= 0; }
static int admitted_after(const struct req_key *x, const struct req_key *k)
{
    int d = cmp_id(x, k);
    return d > 0 || (d == 0 && x->admit > k->admit);
}
static int reaching(const struct req_key *x, const struct req_key *k)
{
    return x->reach >= k->reach;
}

/* The first admitted of the requests whose id is ID (LEN) and whose range holds TS, -1: in
 * log time, as a client can reuse one id for every request */
static int32_t req_of(const struct lp_serving *s, const struct req_key *keys, const char *id,
                      size_t len, uint64_t ts)
{
    struct req_key k = {.id = id, .len = len, .admit = ts, .reach = ts};
    size_t lo = first_key(keys, 0, s->n_reqs, id_from, &k);
    size_t hi = first_key(keys, lo, s->n_reqs, admitted_after, &k); /* admitted by TS */
    size_t i = first_key(keys, lo, hi, reaching, &k);
    return i < hi ? (int32_t)keys[i].req : -1;
}

/* The iteration whose END is the last at or before TS (a token leaves after its sampling),
 * -1 */
static int32_t iter_ending_before(const struct lp_serving *s, uint64_t ts)
{
    return (int32_t)lp_count_until(s->iters, s->n_iters, sizeof *s->iters,
                                   offsetof(struct lp_iteration, end), ts) - 1;
}

/* The first iteration whose lm_head call started after TS (a prefill chunk is scheduled
 * before its forward), -1 */
static int32_t iter_after(const struct lp_serving *s, uint64_t ts)
{
    size_t k = lp_count_until(s->iters, s->n_iters, sizeof *s->iters,
                              offsetof(struct lp_iteration, host_ns), ts);
    return k < s->n_iters ? (int32_t)k : -1;
}

/* The request convention's working arrays: the requests' ids sorted, the marks that name a
 * known request (by request, then time), and per iteration its tokens (all, first tokens)
 * and prompt tokens from the prefill marks. */
struct req_work {
    struct req_key *keys;
    struct mark *marks;
    size_t n_marks;
    int have_prefill;
    int64_t *tok_first, *tok_all, *pre;
    size_t n_gaps;                /* gaps between a request's tokens */
};

/* the request ranges as requests, their ids sorted (reused ids counted) */
static int requests_from_ranges(const struct lp_trace *t, const struct lp_ranges *rg,
                                struct lp_serving *s, struct req_work *w)
{
    for (size_t i = 0; i < rg->n_req; i++) {
        const struct lp_range *g = &rg->req[i];
        const char *name = lp_trace_str(t, g->name);
        size_t len = lp_request_word(name, "request");
        struct lp_serving_request *q = &s->reqs[i];
        if (!(q->id = strndup(name + 8, len)))
            return LP_ERR_NOMEM;
        q->prompt = word_value(name, "prompt");
        q->admit = g->start;
        q->end = g->end;
        q->cut = (g->flags & LP_RANGE_UNCLOSED) != 0;
        q->ttft_ns = q->queue_ns = q->tpot_ns = q->prefill_ns = -1;
        w->keys[i] = (struct req_key){.id = q->id, .len = len, .admit = q->admit,
                                      .req = (uint32_t)i};
        s->n_reqs++;
    }
    qsort(w->keys, s->n_reqs, sizeof *w->keys, cmp_req_key);
    for (size_t i = 0; i < s->n_reqs; i++) {
        struct req_key *k = &w->keys[i];
        uint64_t end = s->reqs[k->req].end;
        int reused = i && !cmp_id(k, k - 1);
        s->ids_reused += reused;
        k->reach = reused && k[-1].reach > end ? k[-1].reach : end;
    }
    return LP_OK;
}

/* the token and prefill marks that name a request in flight, by request then time */
static void marks_of_requests(const struct lp_trace *t, struct lp_serving *s,
                              struct req_work *w)
{
    size_t nm = 0;
    for (size_t i = 0; i < t->n_markers; i++) {
        const struct lp_marker *k = &t->markers[i];
        if (!(k->flags & LP_MARKER_FLAG_INSTANT))
            continue;
        const char *name = lp_trace_str(t, k->name);
        size_t len = lp_request_word(name, "token");
        int prefill = 0;
        if (!len && (len = lp_request_word(name, "prefill")) != 0)
            prefill = 1;
        if (!len)
            continue;
        s->token_marks += !prefill;
        s->prefill_marks += prefill;
        int32_t q = req_of(s, w->keys, name + (prefill ? 8 : 6), len, k->timestamp);
        if (q < 0) {
            s->marks_unknown++;
            continue;
        }
        w->have_prefill |= prefill;
        w->marks[nm++] = (struct mark){k->timestamp, (uint32_t)q,
                                       prefill ? word_value(name, "tokens") : -1};
    }
    w->n_marks = nm;
    qsort(w->marks, nm, sizeof *w->marks, cmp_mark);
}

/* per request: tokens, prefill chunks; per iteration: tokens and first tokens, prompt
 * tokens */
static void apply_marks(struct lp_run_ctx *c, struct lp_serving *s, struct req_work *w)
{
    for (size_t i = 0; i < w->n_marks; i++) {
        const struct mark *m = &w->marks[i];
        struct lp_serving_request *q = &s->reqs[m->req];
        /* a mark outside every capture window has no recorded iteration */
        int recorded = lp_run_in_window(c, m->t);
        if (m->tokens >= 0) {
            int32_t it = recorded ? iter_after(s, m->t) : -1;
            q->prefill_tokens += m->tokens;
            if (it >= 0) {
                w->pre[it] += m->tokens;
                if (s->iters[it].tokens > m->tokens)
                    q->shared_tokens += s->iters[it].tokens - m->tokens;
                if (!q->prefill_iterations && s->iters[it].start) {
                    q->queue_ns = ns_between(q->admit, s->iters[it].start);
                    q->prefill_from = s->iters[it].start;
                }
                /* chunks of one request go to distinct iterations, in time order */
                q->prefill_iterations++;
            }
            continue;
        }
        int32_t it = recorded ? iter_ending_before(s, m->t) : -1;
        if (it >= 0) {
            w->tok_all[it]++;
            w->tok_first[it] += q->tokens == 0;
        }
        if (q->tokens == 0)
            q->first_token = m->t;
        else
            w->n_gaps++;
        q->last_token = m->t;
        q->tokens++;
    }
}

/* the iterations the marks fell in: decodes counted, prompt tokens from the prefill marks
 * (else what the tokens in flight leave) */
static void iterations_from_marks(struct lp_serving *s, const struct req_work *w)
{
    for (size_t i = 0; i < s->n_iters && s->token_marks; i++) {
        struct lp_iteration *x = &s->iters[i];
        s->marked_tokens += w->tok_all[i];
        if (!w->tok_all[i] && !w->pre[i])
            continue; /* no mark: a warm-up, or cut off; the shapes stay */
        x->decode = w->tok_all[i] - w->tok_first[i];
        x->prefill_tokens = w->have_prefill ? w->pre[i]
                            : x->tokens > x->decode ? x->tokens - x->decode : 0;
        x->source = LP_ITER_SOURCE_MARKS;
        x->kind = x->prefill_tokens == 0 ? LP_ITER_KIND_DECODE
                  : x->decode ? LP_ITER_KIND_MIXED : LP_ITER_KIND_PREFILL;
    }
}

/* each request's TTFT, TPOT and prefill time, and the distributions over the requests that
 * ended (the cut ones are counted apart): TTFT, TPOT, queueing, the gaps between tokens */
static int request_dists(struct lp_serving *s, const struct req_work *w)
{
    size_t nv = s->n_reqs > w->n_gaps ? s->n_reqs : w->n_gaps;
    double *v = malloc((nv ? nv : 1) * sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < s->n_reqs; i++) {
        struct lp_serving_request *q = &s->reqs[i];
        s->reqs_cut += q->cut;
        s->reqs_no_token += !q->cut && !q->tokens;
        if (q->tokens)
            q->ttft_ns = ns_between(q->admit, q->first_token);
        if (q->tokens > 1)
            q->tpot_ns = (double)(q->last_token - q->first_token) / (double)(q->tokens - 1);
        if (q->tokens && q->prefill_from)
            q->prefill_ns = ns_between(q->prefill_from, q->first_token);
        if (!q->cut && q->tokens)
            v[k++] = q->ttft_ns;
    }
    int rc = lp_dist_compute(&s->ttft, v, k);
    k = 0;
    for (size_t i = 0; i < s->n_reqs; i++)
        if (!s->reqs[i].cut && s->reqs[i].tpot_ns >= 0)
            v[k++] = s->reqs[i].tpot_ns;
    if (rc == LP_OK)
        rc = lp_dist_compute(&s->tpot, v, k);
    k = 0;
    for (size_t i = 0; i < s->n_reqs; i++)
        if (!s->reqs[i].cut && s->reqs[i].queue_ns >= 0)
            v[k++] = s->reqs[i].queue_ns;
    if (rc == LP_OK)
        rc = lp_dist_compute(&s->queue, v, k);
    k = 0;
    uint64_t prev_t = 0;
    const struct mark *m = w->marks;
    for (size_t i = 0; i < w->n_marks; i++) { /* by request, then time: each token's gap */
        if (i == 0 || m[i].req != m[i - 1].req)
            prev_t = 0;
        if (m[i].tokens >= 0)
            continue;
        if (prev_t && !s->reqs[m[i].req].cut)
            v[k++] = (double)(m[i].t - prev_t);
        prev_t = m[i].t;
    }
    if (rc == LP_OK)
        rc = lp_dist_compute(&s->req_itl, v, k);
    free(v);
    return rc;
}

/* the slowest first tokens, slowest first */
static void slowest_requests(struct lp_serving *s)
{
    for (size_t i = 0; i < s->n_reqs; i++) {
        const struct lp_serving_request *q = &s->reqs[i];
        if (q->cut || q->ttft_ns < 0)
            continue;
        size_t at = s->n_slowest;
        while (at > 0 && s->reqs[s->slowest[at - 1]].ttft_ns < q->ttft_ns)
            at--;
        if (at >= LP_SERVING_SLOWEST)
            continue;
        size_t last = s->n_slowest < LP_SERVING_SLOWEST ? s->n_slowest : LP_SERVING_SLOWEST - 1;
        memmove(&s->slowest[at + 1], &s->slowest[at], (last - at) * sizeof *s->slowest);
        s->slowest[at] = i;
        if (s->n_slowest < LP_SERVING_SLOWEST)
            s->n_slowest++;
    }
}

/* The request convention: request ranges, token and prefill marks (docs/serving.md) */
static int requests(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_serving *s = &c->r->serving;
    const struct lp_ranges *rg = &c->r->ranges;
    size_t n_marks = 0;
    for (size_t i = 0; i < t->n_markers; i++)
        if (t->markers[i].flags & LP_MARKER_FLAG_INSTANT) {
            const char *name = lp_trace_str(t, t->markers[i].name);
            n_marks += lp_request_word(name, "token") || lp_request_word(name, "prefill");
        }
    if (!rg->n_req && !n_marks)
        return LP_OK;
    struct req_work w = {0};
    size_t n_it = s->n_iters ? s->n_iters : 1;
    s->reqs = calloc(rg->n_req ? rg->n_req : 1, sizeof *s->reqs);
    w.keys = malloc((rg->n_req ? rg->n_req : 1) * sizeof *w.keys);
    w.marks = malloc((n_marks ? n_marks : 1) * sizeof *w.marks);
    w.tok_first = calloc(n_it, sizeof *w.tok_first);
    w.tok_all = calloc(n_it, sizeof *w.tok_all);
    w.pre = calloc(n_it, sizeof *w.pre);
    int rc = LP_ERR_NOMEM;
    if (s->reqs && w.keys && w.marks && w.tok_first && w.tok_all && w.pre &&
        (rc = requests_from_ranges(t, rg, s, &w)) == LP_OK) {
        marks_of_requests(t, s, &w);
        apply_marks(c, s, &w);
        iterations_from_marks(s, &w);
        if ((rc = request_dists(s, &w)) == LP_OK)
            slowest_requests(s);
    }
    free(w.keys);
    free(w.marks);
    free(w.tok_first);
    free(w.tok_all);
    free(w.pre);
    return rc;
}

/* ---- whether it is a serving loop ---- */

static int decode_like(const struct lp_iteration *x)
{
    return x->kind == LP_ITER_KIND_DECODE && x->source == LP_ITER_SOURCE_SHAPES;
}

static void find_cause(struct lp_serving *s, const struct anchor *an)
{
    if (s->n_reqs || s->token_marks) {
        s->cause = LP_SERVING_CAUSE_CONVENTION;
        return;
    }
    for (size_t i = 0; i < s->n_iters; i++) {
        const struct lp_iteration *x = &s->iters[i];
        /* three decode-only iterations in a row, the last with fewer sequences: one left
         * while the others ran on (a static batch keeps its finished rows) */
        if (i >= 2 && !an[i].after_break && !an[i - 1].after_break && decode_like(x) &&
            decode_like(&s->iters[i - 1]) && decode_like(&s->iters[i - 2]) &&
            s->iters[i - 2].sampled == s->iters[i - 1].sampled &&
            x->sampled < s->iters[i - 1].sampled) {
            s->cause = LP_SERVING_CAUSE_SHRANK;
            s->cause_value[0] = s->iters[i - 1].sampled;
            s->cause_value[1] = x->sampled;
            s->cause_value[2] = (int64_t)i;
            return;
        }
        /* several prompts of different lengths in one flat batch (a padded batch holds a
         * multiple of its sequences) */
        if (x->sampled >= 2 && x->tokens > x->sampled && x->tokens % x->sampled != 0) {
            s->cause = LP_SERVING_CAUSE_RAGGED;
            s->cause_value[0] = x->tokens;
            s->cause_value[1] = x->sampled;
            s->cause_value[2] = (int64_t)i;
            return;
        }
    }
}

/* ---- statistics ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the Q quantile of V (sorted in place), 0 when empty */
static double quantile_of(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, lp_cmp_double);
    return lp_quantile_sorted(v, n, q);
}

static double median_of(double *v, size_t n)
{
    return quantile_of(v, n, 0.5);
}

/* the last batch of the row that starts at LO */
static int64_t row_hi(int64_t lo)
{
    return lo < 3 ? lo : 2 * (lo - 1);
}

static int batch_rows(struct lp_serving *s, double *v)
{
    int64_t top = 0;
    for (size_t i = 0; i < s->n_iters; i++)
        if (s->iters[i].decode > top)
            top = s->iters[i].decode;
    /* rows 1, 2, 3-4, 5-8, ...: the decodes' cost scales with them */
    size_t nb = 0;
    for (int64_t lo = 1; lo <= top; lo = row_hi(lo) + 1)
        nb++;
    if (!nb)
        return LP_OK;
    if (!(s->batches = calloc(nb, sizeof *s->batches)))
        return LP_ERR_NOMEM;
    double *ratios = malloc(nb * sizeof *ratios);
    if (!ratios)
        return LP_ERR_NOMEM;
    size_t nr = 0;
    for (int64_t lo = 1, hi; lo <= top; lo = hi + 1) {
        hi = row_hi(lo);
        struct lp_batch_row b = {.lo = lo, .hi = hi};
        double pre = 0;
        for (int mixed = 0; mixed < 2; mixed++) {
            size_t k = 0;
            for (size_t i = 0; i < s->n_iters; i++) {
                const struct lp_iteration *x = &s->iters[i];
                if (!x->start || x->decode < lo || x->decode > hi ||
                    x->kind != (mixed ? LP_ITER_KIND_MIXED : LP_ITER_KIND_DECODE))
                    continue;
                v[k++] = (double)(x->end - x->start);
                pre += mixed ? (double)x->prefill_tokens : 0;
            }
            if (mixed) {
                b.n_mixed = k;
                b.mixed_p50_ns = median_of(v, k);
                b.mixed_p90_ns = quantile_of(v, k, 0.9);
                b.mixed_prefill_mean = k ? pre / (double)k : 0;
            } else {
                b.n_decode = k;
                b.decode_p50_ns = median_of(v, k);
                b.decode_p90_ns = quantile_of(v, k, 0.9);
            }
        }
        if (b.n_decode || b.n_mixed)
            s->batches[s->n_batches++] = b;
        if (b.n_decode && b.n_mixed && b.decode_p50_ns > 0)
            ratios[nr++] = b.mixed_p50_ns / b.decode_p50_ns;
    }
    s->interference_rows = nr;
    s->interference = median_of(ratios, nr);
    free(ratios);
    return LP_OK;
}

static int graph_rows(struct lp_serving *s)
{
    int64_t *b = malloc((s->n_iters ? s->n_iters : 1) * sizeof *b);
    if (!b)
        return LP_ERR_NOMEM;
    size_t n = 0;
    double rows = 0, padded = 0;
    for (size_t i = 0; i < s->n_iters; i++)
        if (s->iters[i].bucket > 0) {
            b[n++] = s->iters[i].bucket;
            rows += (double)s->iters[i].bucket;
            padded += (double)(s->iters[i].bucket - s->iters[i].sampled);
        }
    s->padding_share = rows > 0 ? padded / rows : NAN;
    qsort(b, n, sizeof *b, cmp_i64);
    size_t nb = 0;
    for (size_t i = 0; i < n; i++)
        nb += i == 0 || b[i] != b[i - 1];
    if (nb && !(s->buckets = calloc(nb, sizeof *s->buckets))) {
        free(b);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (i == 0 || b[i] != b[i - 1])
            s->buckets[s->n_buckets++].bucket = b[i];
    free(b);
    for (size_t i = 0; i < s->n_iters; i++) {
        const struct lp_iteration *x = &s->iters[i];
        for (size_t j = 0; x->bucket > 0 && j < s->n_buckets; j++)
            if (s->buckets[j].bucket == x->bucket) {
                s->buckets[j].n++;
                s->buckets[j].sampled += x->sampled;
            }
    }
    for (size_t j = 0; j < s->n_buckets; j++) {
        struct lp_graph_bucket *g = &s->buckets[j];
        g->mean_sampled = (double)g->sampled / (double)g->n;
        g->padding_share = 1 - g->mean_sampled / (double)g->bucket;
    }
    return LP_OK;
}

struct weighted {
    double v;
    uint64_t w;
};

static int cmp_weighted(const void *a, const void *b)
{
    double x = ((const struct weighted *)a)->v, y = ((const struct weighted *)b)->v;
    return (x > y) - (x < y);
}

/* The value of rank K (from 0) of the N sorted values each repeated W times */
static double weighted_rank(const struct weighted *p, size_t n, uint64_t k)
{
    for (size_t i = 0; i < n; i++) {
        if (k < p[i].w)
            return p[i].v;
        k -= p[i].w;
    }
    return n ? p[n - 1].v : 0;
}

/* D over the N values of P each counted W times, as lp_dist_compute over them repeated would
 * make it (linear between the closest ranks), without repeating them: a generated token each,
 * which an hour of serving has millions of. D's values are not kept (v NULL). P is sorted. */
static void weighted_dist(struct lp_dist *d, struct weighted *p, size_t n)
{
    memset(d, 0, sizeof *d);
    uint64_t total = 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        total += p[i].w;
        sum += p[i].v * (double)p[i].w;
    }
    if (!total)
        return;
    qsort(p, n, sizeof *p, cmp_weighted);
    d->n = (size_t)total;
    d->mean = sum / (double)total;
    d->min = p[0].v;
    d->max = p[n - 1].v;
    const double q[3] = {0.5, 0.9, 0.99};
    double *out[3] = {&d->p50, &d->p90, &d->p99};
    for (int j = 0; j < 3; j++) {
        double x = q[j] * (double)(total - 1), f = x - floor(x);
        uint64_t k = (uint64_t)x;
        double a = weighted_rank(p, n, k), b = k + 1 < total ? weighted_rank(p, n, k + 1) : a;
        *out[j] = a + (b - a) * f;
    }
}

static int statistics(struct lp_serving *s)
{
    size_t cap = s->n_iters;
    double *v = malloc((cap ? cap : 1) * sizeof *v);
    struct weighted *pw = malloc((cap ? cap : 1) * sizeof *pw);
    if (!v || !pw) {
        free(v);
        free(pw);
        return LP_ERR_NOMEM;
    }
    int rc = LP_OK;
    for (int kind = 0; kind < LP_ITER_KIND_COUNT && rc == LP_OK; kind++) {
        struct lp_iter_class *cl = &s->cls[kind];
        size_t k = 0;
        for (size_t i = 0; i < s->n_iters; i++) {
            const struct lp_iteration *x = &s->iters[i];
            if ((int)x->kind != kind)
                continue;
            cl->n++;
            cl->tokens += x->tokens;
            cl->decode += x->decode;
            cl->prefill_tokens += x->prefill_tokens;
            cl->sampled += x->sampled;
            if (x->start && x->end > x->start)
                v[k++] = (double)(x->end - x->start);
        }
        rc = lp_dist_compute(&cl->time, v, k);
    }
    size_t k = 0, ki = 0;
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < s->n_iters; i++) {
        const struct lp_iteration *x = &s->iters[i];
        uint64_t from = x->start ? x->start : x->end;
        if (!first || from < first)
            first = from;
        if (x->end > last)
            last = x->end;
        s->prefill_tokens += x->prefill_tokens;
        s->generated += x->sampled;
        if (!x->period_ns)
            continue;
        v[k++] = (double)x->period_ns;
        if (x->decode > 0) {
            s->sched_gap_ns += x->gap_ns;
            s->sched_period_ns += x->period_ns;
            s->sched_busy_ns += x->busy_ns;
        }
    }
    if (rc == LP_OK)
        rc = lp_dist_compute(&s->period, v, k);
    for (size_t i = 0; i < s->n_iters; i++) {
        const struct lp_iteration *x = &s->iters[i];
        if (!x->period_ns || x->decode <= 0)
            continue;
        pw[ki++] = (struct weighted){(double)x->period_ns, (uint64_t)x->decode};
        s->itl_inferred += x->source == LP_ITER_SOURCE_CARRIED ? (size_t)x->decode : 0;
    }
    weighted_dist(&s->itl, pw, ki);
    free(pw);
    if (s->token_marks) /* the tokens the program said it emitted in those iterations */
        s->generated = s->marked_tokens;
    s->span_ns = last > first ? last - first : 0;
    s->generated_per_s = s->span_ns ? (double)s->generated * 1e9 / (double)s->span_ns : 0;
    s->prefill_per_s = s->span_ns ? (double)s->prefill_tokens * 1e9 / (double)s->span_ns : 0;
    s->sched_share = s->sched_period_ns ? (double)s->sched_gap_ns / (double)s->sched_period_ns
                                        : NAN;
    s->decode_busy_share = s->sched_period_ns
                               ? (double)s->sched_busy_ns / (double)s->sched_period_ns
                               : NAN;
    if (rc == LP_OK)
        rc = batch_rows(s, v);
    free(v);
    return rc == LP_OK ? graph_rows(s) : rc;
}

/* ---- the pass ---- */

int lp_run_serving(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    struct lp_serving *s = &r->serving;
    int rc = lp_run_replays(c);
    if (rc != LP_OK)
        return rc;
    uint64_t key_m, key_k;
    anchor_shape(c, &key_m, &key_k);
    struct gemm_times gt = {0};
    struct anchor *an = NULL;
    struct u32_pair *buckets = NULL;
    size_t n_an = 0, n_buckets = 0, n = 0;
    uint32_t *ord = malloc((c->n_gemms ? c->n_gemms : 1) * sizeof *ord);
    rc = ord ? gemm_times(c, &gt) : LP_ERR_NOMEM;
    if (rc != LP_OK)
        goto out;
    for (size_t i = 0; key_m && i < c->n_gemms; i++) {
        struct lp_gemm g = lp_run_gemm(c, i);
        if (linear_call(&g))
            ord[n++] = (uint32_t)i;
    }
    qsort_r(ord, n, sizeof *ord, cmp_gemm_start, c);
    if ((rc = find_anchors(c, &gt, ord, n, key_m, key_k, &an, &n_an, &s->anchors_outside)) ||
        (rc = graph_buckets(c, ord, n, &buckets, &n_buckets)))
        goto out;
    /* iterations need three passes at least; the requests stand without them */
    if (n_an >= 3 && !(s->iters = calloc(n_an, sizeof *s->iters))) {
        rc = LP_ERR_NOMEM;
        goto out;
    }
    s->n_iters = n_an >= 3 ? n_an : 0;
    s->device = lp_kernel_device(c->t) > 0 ? (uint32_t)lp_kernel_device(c->t) : 0;
    for (size_t i = 0; i < s->n_iters; i++) {
        struct lp_iteration *x = &s->iters[i];
        struct lp_gemm a = lp_run_gemm(c, an[i].gemm);
        x->host_ns = a.start;
        x->end = gt.end[an[i].gemm];
        x->sampled = (int64_t)a.n;
        x->start = an[i].fwd_start;
        x->kind = LP_ITER_KIND_UNKNOWN; /* until its forward is seen: GEMMs or a graph */
        if (i > 0 && !an[i].after_break && x->end > s->iters[i - 1].end)
            x->period_ns = x->end - s->iters[i - 1].end;
    }
    sweep_work(c, s->iters, s->n_iters, an, buckets, n_buckets);
    double *periods = malloc((s->n_iters ? s->n_iters : 1) * sizeof *periods);
    if (!periods) {
        rc = LP_ERR_NOMEM;
        goto out;
    }
    size_t np = 0;
    for (size_t i = 0; i < s->n_iters; i++) {
        struct lp_iteration *x = &s->iters[i];
        uint64_t prev = x->period_ns ? x->end - x->period_ns : 0;
        if (x->start && x->start >= x->end)
            x->start = 0; /* its forward started after its lm_head ended: not one pass */
        if (x->start && prev && x->start > prev)
            x->gap_ns = x->start - prev;
        if (x->period_ns)
            periods[np++] = (double)x->period_ns;
    }
    double idle = 10 * median_of(periods, np);
    free(periods);
    classify(s->iters, s->n_iters, an, idle > IDLE_NS ? (uint64_t)idle : IDLE_NS,
             c->n_windows > 0);
    if ((rc = requests(c)) != LP_OK)
        goto out;
    find_cause(s, an);
    if (s->cause != LP_SERVING_CAUSE_NONE)
        rc = statistics(s);
out:
    free(ord);
    free(gt.start);
    free(gt.end);
    free(an);
    free(buckets);
    if (rc == LP_OK && s->cause == LP_SERVING_CAUSE_NONE) {
        /* a one-request-at-a-time program: nothing of this is reported */
        lp_run_serving_free(r);
    }
    return rc;
}

void lp_run_serving_free(struct lp_run *r)
{
    struct lp_serving *s = &r->serving;
    free(s->iters);
    for (int k = 0; k < LP_ITER_KIND_COUNT; k++)
        lp_dist_free(&s->cls[k].time);
    lp_dist_free(&s->period);
    lp_dist_free(&s->itl);
    free(s->batches);
    free(s->buckets);
    for (size_t i = 0; i < s->n_reqs; i++)
        free(s->reqs[i].id);
    free(s->reqs);
    lp_dist_free(&s->ttft);
    lp_dist_free(&s->tpot);
    lp_dist_free(&s->queue);
    lp_dist_free(&s->req_itl);
    memset(s, 0, sizeof *s);
}
