/* Kernels in depth, step 1: which kernels Nsight Compute should profile. From a recorded
 * run: per measured stage the top kernels by GPU time and any above a share of the stage,
 * each launch configuration of them (ncu's --filter-mode per-launch-config counts its skip
 * and count on kernel, grid and block), and how many kernels ncu will then profile: the
 * prediction `llmprof deep` budgets with. Facts only; the CLI builds the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/deep.h"

#define DEFAULT_TOP 10
#define DEFAULT_SHARE 0.05

/* a launch of a picked kernel, for sorting into configurations */
struct launch {
    uint32_t group;
    int32_t grid[3], block[3];
    int32_t stage;
    uint64_t start;
};

static int cmp_launch(const void *a, const void *b)
{
    const struct launch *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    int c = memcmp(x->grid, y->grid, sizeof x->grid);
    if (!c)
        c = memcmp(x->block, y->block, sizeof x->block);
    if (c)
        return c;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->stage > y->stage) - (x->stage < y->stage); /* then alike in every field */
}

static int same_config(const struct launch *x, const struct launch *y)
{
    return x->group == y->group && !memcmp(x->grid, y->grid, sizeof x->grid) &&
           !memcmp(x->block, y->block, sizeof x->block);
}

/* the pick of GROUP in STAGE, else the group's first pick; -1 when it has none */
static long pick_of(const struct lp_deep_plan *p, uint32_t group, int stage)
{
    long any = -1;
    for (size_t i = 0; i < p->n_picks; i++)
        if (p->picks[i].group == group) {
            if (p->picks[i].stage == stage)
                return (long)i;
            if (any < 0)
                any = (long)i;
        }
    return any;
}

static int pick_kernels(const struct lp_run *r, const struct lp_deep_plan_options *o,
                        struct lp_deep_plan *p)
{
    size_t top = o->top ? o->top : DEFAULT_TOP;
    double share = o->share > 0 ? o->share : DEFAULT_SHARE;
    const struct lp_trace *t = r->trace;
    for (size_t s = 0; s < r->n_stages; s++) {
        const struct lp_stage_report *st = &r->stages[s];
        if (!lp_stage_measured(st))
            continue;
        size_t taken = 0;
        for (size_t i = 0; i < st->top.n_groups; i++) {
            const struct lp_kernel_row *row = &st->top.v[i];
            enum lp_kcat cat = r->cats[row->group];
            if (cat == LP_KCAT_MEMCPY || cat == LP_KCAT_MEMSET || cat == LP_KCAT_GRAPH)
                continue;
            /* the range profiler's own kernel (record --counters): not the program's */
            if (r->counters.segments && !strcmp(r->names[row->group], "WaitNs"))
                continue;
            if (taken >= top && row->share <= share)
                break; /* by time, descending: none further is above the share either */
            struct lp_deep_pick *v = realloc(p->picks, (p->n_picks + 1) * sizeof *v);
            if (!v)
                return LP_ERR_NOMEM;
            p->picks = v;
            p->picks[p->n_picks++] = (struct lp_deep_pick){
                .stage = (int)s, .group = row->group, .gpu_ns = row->total_ns,
                .share = row->share};
            taken++;
        }
    }
    /* the trace's name of each picked group */
    for (size_t i = 0; i < t->n_kernels; i++) {
        uint32_t g = lp_run_kernel_group(r, i);
        for (size_t k = 0; k < p->n_picks; k++)
            if (p->picks[k].group == g && !p->picks[k].mangled)
                p->picks[k].mangled =
                    lp_trace_str(t, lp_trace_kernel_config(t, &t->kernels[i])->name);
    }
    return LP_OK;
}

/* the launch configurations of the picked kernels where ncu's filters see them: the picked
 * stages and warm-up (by NVTX), or the whole run (no ranges to filter on) */
static int configs(const struct lp_run *r, struct lp_deep_plan *p, int *stage_picked)
{
    const struct lp_trace *t = r->trace;
    uint8_t *group_picked = calloc(r->n_names ? r->n_names : 1, 1);
    struct launch *v = malloc((t->n_kernels ? t->n_kernels : 1) * sizeof *v);
    if (!group_picked || !v) {
        free(group_picked);
        free(v);
        return LP_ERR_NOMEM;
    }
    for (size_t k = 0; k < p->n_picks; k++)
        group_picked[p->picks[k].group] = 1;
    size_t n = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        int32_t s = lp_run_kernel_stage(r, i);
        if (!group_picked[lp_run_kernel_group(r, i)] || s < 0)
            continue;
        if (p->by_nvtx && !stage_picked[s] && r->stages[s].kind != LP_STAGE_KIND_WARMUP)
            continue;
        struct launch *l = &v[n++];
        l->group = lp_run_kernel_group(r, i);
        const struct lp_kernel_config *cf = lp_trace_kernel_config(t, k);
        memcpy(l->grid, cf->grid, sizeof l->grid);
        memcpy(l->block, cf->block, sizeof l->block);
        l->stage = s;
        l->start = k->start;
    }
    qsort(v, n, sizeof *v, cmp_launch);
    int rc = LP_OK;
    for (size_t i = 0, j; i < n; i = j) {
        long pick = -1;
        for (j = i; j < n && same_config(&v[i], &v[j]); j++)
            if (pick < 0 && stage_picked[v[j].stage])
                pick = pick_of(p, v[j].group, v[j].stage);
        if (pick < 0)
            continue; /* only in warm-up, or only where its kernel was not picked */
        struct lp_deep_config *c = realloc(p->configs, (p->n_configs + 1) * sizeof *c);
        if (!c) {
            rc = LP_ERR_NOMEM;
            break;
        }
        p->configs = c;
        c = &p->configs[p->n_configs++];
        *c = (struct lp_deep_config){.pick = (size_t)pick, .launches = j - i};
        memcpy(c->grid, v[i].grid, sizeof c->grid);
        memcpy(c->block, v[i].block, sizeof c->block);
    }
    free(group_picked);
    free(v);
    return rc;
}

/* the distinct names of the ranges that open STAGE's occurrences (and warm-up's of the same
 * names), as ncu's NVTX filter will match them */
static int stage_ranges(const struct lp_run *r, int stage, struct lp_deep_stage_ranges *out)
{
    const struct lp_trace *t = r->trace;
    *out = (struct lp_deep_stage_ranges){.stage = stage, .domain = ""};
    size_t prefix_len = 0;
    const char *first = NULL;
    int more = 0;
    for (size_t i = 0; i < r->ranges.n; i++) {
        if (r->range_stage[i] != stage)
            continue;
        const char *name = lp_trace_str(t, r->ranges.v[i].name);
        const char *domain = lp_trace_str(t, r->ranges.v[i].domain);
        if (!first) {
            first = name;
            prefix_len = strlen(name);
            out->domain = domain ? domain : "";
        }
        size_t l = 0;
        while (l < prefix_len && name[l] == first[l])
            l++;
        prefix_len = l;
        size_t k = 0;
        while (k < out->n_names && strcmp(out->names[k], name))
            k++;
        if (k == out->n_names && out->n_names < LP_DEEP_MAX_RANGE_NAMES)
            out->names[out->n_names++] = name;
        else if (k == out->n_names)
            more = 1;
    }
    if (more) {
        out->prefix = strndup(first, prefix_len);
        if (!out->prefix)
            return LP_ERR_NOMEM;
    }
    return LP_OK;
}

int lp_deep_plan_make(const struct lp_run *r, const struct lp_deep_plan_options *o,
                      struct lp_deep_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (!r->kernels_recorded || !r->trace->n_kernels) {
        snprintf(err, errlen, "the run recorded no kernels%s: nothing to pick; record it again "
                 "with kernels", r->kernels_recorded ? "" : " (a light record)");
        return LP_ERR_ARG;
    }
    int rc = pick_kernels(r, o, p);
    if (rc)
        goto fail;
    if (!p->n_picks) {
        snprintf(err, errlen, "no measured stage ran a kernel (all of them are warm-up or "
                 "outside the stages): nothing to profile");
        rc = LP_ERR_ARG;
        goto fail;
    }
    int *stage_picked = calloc(r->n_stages ? r->n_stages : 1, sizeof *stage_picked);
    if (!stage_picked) {
        rc = LP_ERR_NOMEM;
        goto fail;
    }
    p->by_nvtx = !r->stages_inferred;
    for (size_t k = 0; k < p->n_picks; k++) {
        const struct lp_stage_report *st = &r->stages[p->picks[k].stage];
        stage_picked[p->picks[k].stage] = 1;
        if (st->kind == LP_STAGE_KIND_RUN)
            p->by_nvtx = 0;
    }
    rc = configs(r, p, stage_picked);
    for (size_t s = 0; rc == LP_OK && p->by_nvtx && s < r->n_stages; s++) {
        if (!stage_picked[s])
            continue;
        struct lp_deep_stage_ranges *v = realloc(p->ranges, (p->n_ranges + 1) * sizeof *v);
        if (!v) {
            rc = LP_ERR_NOMEM;
            break;
        }
        p->ranges = v;
        rc = stage_ranges(r, (int)s, &p->ranges[p->n_ranges]);
        if (rc == LP_OK && p->ranges[p->n_ranges].n_names == 0)
            p->by_nvtx = 0; /* a stage without a range of its own: filter on nothing */
        p->n_ranges++;
    }
    free(stage_picked);
    if (rc)
        goto fail;
    /* skip the first launch of each configuration (its first-use costs), unless a picked
     * configuration runs only once in its stage's filter; then profile up to INSTANCES */
    p->skip = o->skip;
    if (p->skip == UINT64_MAX) {
        p->skip = 1;
        for (size_t i = 0; i < p->n_configs; i++)
            if (p->configs[i].launches < 2)
                p->skip = 0;
    }
    p->instances = o->instances ? o->instances : 1;
    for (size_t i = 0; i < p->n_configs; i++) {
        struct lp_deep_config *c = &p->configs[i];
        uint64_t left = c->launches > p->skip ? c->launches - p->skip : 0;
        c->profiled = left < p->instances ? left : p->instances;
        p->picks[c->pick].profiled += c->profiled;
        p->profiled += c->profiled;
    }
    return LP_OK;
fail:
    lp_deep_plan_free(p);
    if (rc == LP_ERR_NOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

void lp_deep_plan_free(struct lp_deep_plan *p)
{
    for (size_t i = 0; i < p->n_ranges; i++)
        free(p->ranges[i].prefix);
    free(p->ranges);
    free(p->picks);
    free(p->configs);
    memset(p, 0, sizeof *p);
}
