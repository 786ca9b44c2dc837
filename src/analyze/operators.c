/* Operators: ranges that are not stages (PyTorch's emit_nvtx and record_function ranges,
 * user ranges) grouped by name, and again by name and input shapes where the name gives them
 * (emit_nvtx(record_shapes=True): "aten::mm, seq = 1, sizes = [[4, 8], [8, 8]]"). A kernel
 * counts for every operator open around its launch (GPU time is inclusive, like the CPU time
 * of the range) and as self time for the innermost one, so nested operators never add up to
 * more than the run. */
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

/* ---- input shapes: the text of a range's sizes list, and the rows by it ---- */

#define SHAPES_DEPTH 8                /* PyTorch nests two deep: deeper is not its list */
static const char sizes_key[] = ", sizes = ";
static const char cut_mark[] = ", …]";

/* a text written up to LP_OP_SHAPES_MAX bytes; LEN counts on past them */
struct shapes_out {
    char *buf;
    size_t len;
};

static void shapes_put(struct shapes_out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, o->len++)
        if (o->len < LP_OP_SHAPES_MAX)
            o->buf[o->len] = s[i];
}

/* The list at P (its '[') into OUT (LP_OP_SHAPES_MAX + 1 bytes): no spaces but one after each
 * comma, cut as lp_op_shape_row says. Returns its length, or 0 when P holds no balanced list
 * of lists of integers followed by the name's end or a comma. Reads P up to its NUL at most
 * and writes OUT within its size, however long the list. */
static size_t shapes_text(const char *p, char *out)
{
    struct shapes_out o = {out, 0};
    size_t cut = 1; /* the length at the outer list's last comma that leaves room for the mark */
    int depth = 0;
    char prev = 0;  /* the last token: '[', ']', ',', or '0' for a number */
    for (;;) {
        while (*p == ' ')
            p++;
        char ch = *p;
        if (ch == '-' || (ch >= '0' && ch <= '9')) {
            if (prev != '[' && prev != ',')
                return 0;
            const char *s = p;
            p += ch == '-';
            if (*p < '0' || *p > '9')
                return 0;
            while (*p >= '0' && *p <= '9')
                p++;
            shapes_put(&o, s, (size_t)(p - s));
            prev = '0';
            continue;
        }
        if (ch == '[') {
            if (prev == ']' || prev == '0' || ++depth > SHAPES_DEPTH)
                return 0;
            shapes_put(&o, "[", 1);
        } else if (ch == ']') {
            if (prev != '[' && prev != ']' && prev != '0')
                return 0;
            shapes_put(&o, "]", 1);
            if (--depth == 0)
                break;
        } else if (ch == ',') {
            if (prev != ']' && prev != '0')
                return 0;
            if (depth == 1 && o.len + sizeof cut_mark - 1 <= LP_OP_SHAPES_MAX)
                cut = o.len;
            shapes_put(&o, ", ", 2);
        } else {
            return 0; /* the name's end inside the list, or a byte no list of sizes holds */
        }
        prev = ch;
        p++;
    }
    for (p++; *p == ' '; p++)
        ;
    if (*p && *p != ',')
        return 0;
    if (o.len > LP_OP_SHAPES_MAX) {
        /* "[…]" when even the first element is too long */
        const char *mark = cut > 1 ? cut_mark : cut_mark + 2;
        memcpy(out + cut, mark, strlen(mark));
        o.len = cut + strlen(mark);
    }
    out[o.len] = 0;
    return o.len;
}

/* The shapes text of operator range NAME into OUT: its length, 0 when NAME gives no sizes,
 * -1 when it gives sizes that cannot be read. */
static long name_shapes(const char *name, char *out)
{
    const char *p = strstr(name, sizes_key);
    if (!p)
        return 0;
    p += sizeof sizes_key - 1;
    size_t n = *p == '[' ? shapes_text(p, out) : 0;
    return n ? (long)n : -1;
}

/* rows by (operator, shapes text): open addressing over row index + 1 (0: empty) */
struct shape_map {
    uint32_t *slot;
    size_t cap, rows_cap;
};

static size_t shape_hash(size_t op, const char *s)
{
    uint64_t h = (14695981039346656037ull ^ op) * 1099511628211ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

static int shape_map_grow(struct shape_map *m, const struct lp_run *r)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < r->n_op_shapes; i++) {
        size_t s = shape_hash(r->op_shapes[i].op, r->op_shapes[i].shapes) & (cap - 1);
        while (slot[s])
            s = (s + 1) & (cap - 1);
        slot[s] = (uint32_t)i + 1;
    }
    free(m->slot);
    m->slot = slot;
    m->cap = cap;
    return LP_OK;
}

/* The row of operator OP with shapes text S (LEN bytes), added when new: its index, -1 when
 * there is no room for another (the range counts in its operator's row only), -2 out of
 * memory. */
static int32_t shape_row(struct lp_run *r, struct shape_map *m, size_t op, const char *s,
                         size_t len)
{
    if (2 * (r->n_op_shapes + 1) > m->cap && shape_map_grow(m, r))
        return -2;
    size_t i = shape_hash(op, s) & (m->cap - 1);
    for (; m->slot[i]; i = (i + 1) & (m->cap - 1)) {
        const struct lp_op_shape_row *x = &r->op_shapes[m->slot[i] - 1];
        if (x->op == op && !strcmp(x->shapes, s))
            return (int32_t)(m->slot[i] - 1);
    }
    if (r->n_op_shapes >= INT32_MAX - 1)
        return -1;
    if (r->n_op_shapes == m->rows_cap) {
        size_t cap = m->rows_cap ? m->rows_cap * 2 : 64;
        struct lp_op_shape_row *v = realloc(r->op_shapes, cap * sizeof *v);
        if (!v)
            return -2;
        r->op_shapes = v;
        m->rows_cap = cap;
    }
    char *text = malloc(len + 1);
    if (!text)
        return -2;
    memcpy(text, s, len + 1);
    r->op_shapes[r->n_op_shapes] = (struct lp_op_shape_row){.op = op, .shapes = text};
    m->slot[i] = (uint32_t)r->n_op_shapes + 1;
    return (int32_t)r->n_op_shapes++;
}

/* Each operator range's row by shapes into SHAPE_OF (parallel to the ranges, -1: none), with
 * its calls and CPU time. */
static int shapes_group(struct lp_run_ctx *c, int32_t *shape_of)
{
    struct lp_run *r = c->r;
    struct shape_map m = {0};
    char text[LP_OP_SHAPES_MAX + 1];
    int rc = LP_OK;
    for (size_t i = 0; i < r->ranges.n; i++) {
        shape_of[i] = -1;
        if (c->ri[i].op < 0)
            continue;
        const struct lp_range *g = &r->ranges.v[i];
        long n = name_shapes(lp_trace_str(c->t, g->name), text);
        int32_t row = n > 0 ? shape_row(r, &m, (size_t)c->ri[i].op, text, (size_t)n) : -1;
        if (row == -2) {
            rc = LP_ERR_NOMEM;
            break;
        }
        if (row < 0) {
            r->op_shapes_unread += n != 0;
            continue;
        }
        struct lp_op_shape_row *x = &r->op_shapes[row];
        shape_of[i] = row;
        x->calls++;
        x->cpu_ns = lp_sat_add(x->cpu_ns, g->end - g->start);
    }
    free(m.slot);
    return rc;
}

/* ---- GPU time under each operator ---- */

static int seen_add(int32_t *seen, int *n, int32_t v)
{
    for (int q = 0; q < *n; q++)
        if (seen[q] == v)
            return 0;
    if (*n < 64)
        seen[(*n)++] = v;
    return 1;
}

/* Every piece of work counted for the operators (and their rows by shapes) open around its
 * launch, once each; its time by (operator, kernel group) into M. */
static int attribute(struct lp_run_ctx *c, const int32_t *shape_of, struct lp_u64map *m)
{
    struct lp_run *r = c->r;
    size_t hint = 0;
    for (size_t i = 0; i < c->n_work; i++) {
        const struct lp_work *w = &c->work[i];
        uint64_t d = lp_work_dur(c->t, w);
        int32_t seen[64], seen_shapes[64];
        int n_seen = 0, n_seen_shapes = 0, innermost = 1;
        for (int64_t j = lp_work_range(c, w, &hint); j >= 0; j = r->ranges.v[j].parent) {
            int32_t op = c->ri[j].op;
            if (op < 0)
                continue;
            int self = innermost;
            innermost = 0;
            int32_t s = shape_of[j];
            if (s >= 0 && seen_add(seen_shapes, &n_seen_shapes, s)) {
                struct lp_op_shape_row *x = &r->op_shapes[s];
                if (self)
                    x->self_gpu_ns = lp_sat_add(x->self_gpu_ns, d);
                x->gpu_ns = lp_sat_add(x->gpu_ns, d);
                x->kernels++;
            }
            if (!seen_add(seen, &n_seen, op))
                continue;
            struct lp_op_row *o = &r->ops[op];
            if (self)
                o->self_gpu_ns = lp_sat_add(o->self_gpu_ns, d);
            o->gpu_ns = lp_sat_add(o->gpu_ns, d);
            o->kernels++;
            uint64_t *ns = lp_u64map_at(m, (uint64_t)op << 32 | w->group, NULL);
            if (!ns)
                return LP_ERR_NOMEM;
            *ns = lp_sat_add(*ns, d);
        }
    }
    return LP_OK;
}

/* each operator's three costliest kernel groups, from M */
static void top_kernels(struct lp_run *r, const struct lp_u64map *m)
{
    for (size_t i = 0; i < r->n_ops; i++)
        for (int k = 0; k < 3; k++)
            r->ops[i].top_group[k] = SIZE_MAX;
    for (size_t s = 0; s < m->cap; s++) {
        if (m->key[s] == UINT64_MAX)
            continue;
        struct lp_op_row *o = &r->ops[m->key[s] >> 32];
        size_t g = (size_t)(m->key[s] & 0xffffffffu);
        uint64_t ns = m->val[s];
        for (int k = 0; k < 3; k++) {
            /* equal times: the smaller group first, not the map slot's order */
            if (o->top_group[k] == SIZE_MAX || ns > o->top_ns[k] ||
                (ns == o->top_ns[k] && g < o->top_group[k])) {
                for (int q = 2; q > k; q--) {
                    o->top_group[q] = o->top_group[q - 1];
                    o->top_ns[q] = o->top_ns[q - 1];
                }
                o->top_group[k] = g;
                o->top_ns[k] = ns;
                break;
            }
        }
    }
}

/* ---- order: by GPU time, then CPU time ---- */

struct op_at {
    struct lp_op_row row;
    size_t at; /* its index before sorting: equal rows keep their order */
};

static int cmp_time(uint64_t gpu_a, uint64_t cpu_a, uint64_t gpu_b, uint64_t cpu_b)
{
    if (gpu_a != gpu_b)
        return gpu_a < gpu_b ? 1 : -1;
    return (cpu_a < cpu_b) - (cpu_a > cpu_b);
}

static int cmp_op_at(const void *a, const void *b)
{
    const struct op_at *x = a, *y = b;
    int d = cmp_time(x->row.gpu_ns, x->row.cpu_ns, y->row.gpu_ns, y->row.cpu_ns);
    return d ? d : (x->at > y->at) - (x->at < y->at);
}

static int cmp_shape_row(const void *a, const void *b)
{
    const struct lp_op_shape_row *x = a, *y = b;
    int d = cmp_time(x->gpu_ns, x->cpu_ns, y->gpu_ns, y->cpu_ns);
    if (d)
        return d;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return strcmp(x->shapes, y->shapes);
}

/* The operators sorted, and the rows by shapes after them (their operators renumbered). */
static int sort_rows(struct lp_run *r)
{
    struct op_at *v = malloc(r->n_ops * sizeof *v);
    size_t *now_at = malloc(r->n_ops * sizeof *now_at);
    if (!v || !now_at) {
        free(v);
        free(now_at);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < r->n_ops; i++)
        v[i] = (struct op_at){r->ops[i], i};
    qsort(v, r->n_ops, sizeof *v, cmp_op_at);
    for (size_t i = 0; i < r->n_ops; i++) {
        r->ops[i] = v[i].row;
        now_at[v[i].at] = i;
    }
    for (size_t i = 0; i < r->n_op_shapes; i++)
        r->op_shapes[i].op = now_at[r->op_shapes[i].op];
    if (r->n_op_shapes > 1)
        qsort(r->op_shapes, r->n_op_shapes, sizeof *r->op_shapes, cmp_shape_row);
    free(v);
    free(now_at);
    return LP_OK;
}

int lp_run_operators(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    if (r->n_ops == 0)
        return LP_OK;
    int32_t *shape_of = malloc(r->ranges.n * sizeof *shape_of);
    if (!shape_of)
        return LP_ERR_NOMEM;
    struct lp_u64map m = {0}; /* (operator, group) -> GPU time */
    int rc = shapes_group(c, shape_of);
    if (rc == LP_OK)
        rc = attribute(c, shape_of, &m);
    if (rc == LP_OK)
        top_kernels(r, &m);
    lp_u64map_free(&m);
    free(shape_of);
    return rc == LP_OK ? sort_rows(r) : rc;
}

void lp_run_operators_free(struct lp_run *r)
{
    for (size_t i = 0; i < r->n_ops; i++)
        free(r->ops[i].name);
    free(r->ops);
    for (size_t i = 0; i < r->n_op_shapes; i++)
        free(r->op_shapes[i].shapes);
    free(r->op_shapes);
}
