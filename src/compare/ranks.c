/* Several traces of one run (the ranks of torchrun, mpirun or srun, or independent
 * processes): what each one's analysis found, kept small (lp_rank_take), then compared
 * (lp_ranks_analyze): each stage's time per rank and its spread, the slowest rank, the
 * groups of ranks whose collectives end together (collectives.c) and the time each rank
 * waits in their collectives: the latest member's start minus its own, since an NCCL kernel
 * starts when its rank arrives and cannot finish before the last one does. That needs one
 * clock: traces from one host share CUPTI's (CLOCK_REALTIME); several hosts' clocks are
 * first aligned (clocks.c), and without that the waits are not computed. Replicas (groups
 * that ran the same collectives on other ranks) are compared by their time in the stages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"
#include "llmprof/sat.h"

static char *dup_or_null(const char *s, int *failed)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *failed = 1;
    return d;
}

static int64_t meta_int(const struct lp_trace *t, const char *key)
{
    const char *v = lp_trace_meta(t, key);
    char *end;
    if (!v || !*v)
        return -1;
    long long n = strtoll(v, &end, 10);
    return *end || n < 0 ? -1 : (int64_t)n;
}

/* FNV-1a: names compared across traces, whose string tables differ */
static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int coll_by_start(const void *a, const void *b)
{
    const struct lp_rank_coll *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* What an NCCL kernel does, from its name */
static uint32_t coll_op(const char *name)
{
    static const struct {
        const char *word;
        uint32_t op;
    } ops[] = {{"AllReduce", LP_COLL_OP_ALL_REDUCE}, {"AllGather", LP_COLL_OP_ALL_GATHER},
               {"ReduceScatter", LP_COLL_OP_REDUCE_SCATTER},
               {"Broadcast", LP_COLL_OP_BROADCAST}, {"SendRecv", LP_COLL_OP_SEND_RECV},
               {"AllToAll", LP_COLL_OP_SEND_RECV}, {"Send", LP_COLL_OP_SEND_RECV},
               {"Recv", LP_COLL_OP_SEND_RECV}, {"Reduce", LP_COLL_OP_REDUCE}};
    for (size_t i = 0; name && i < sizeof ops / sizeof *ops; i++)
        if (strstr(name, ops[i].word))
            return ops[i].op;
    return LP_COLL_OP_OTHER;
}

/* The device most kernels ran on (the first device record without kernels), and its facts. */
static void pick_device(const struct lp_trace *t, struct lp_rank *k, int *failed)
{
    int kd = lp_kernel_device(t);
    k->device = kd >= 0 ? (uint32_t)kd : t->n_devices ? t->devices[0].id : 0;
    static const uint8_t zero[16];
    for (size_t d = 0; d < t->n_devices; d++) {
        const struct lp_device *dv = &t->devices[d];
        if (dv->id != k->device)
            continue;
        if (!k->has_uuid && memcmp(dv->uuid, zero, 16)) {
            memcpy(k->uuid, dv->uuid, 16);
            k->has_uuid = 1;
        }
        if (!k->gpu_name && dv->name)
            k->gpu_name = dup_or_null(lp_trace_str(t, dv->name), failed);
    }
}

int lp_rank_take(const struct lp_run *r, const char *trace_path, struct lp_rank *k)
{
    const struct lp_trace *t = r->trace;
    int failed = 0;
    memset(k, 0, sizeof *k);
    const char *slash = trace_path ? strrchr(trace_path, '/') : NULL;
    k->trace = dup_or_null(slash ? slash + 1 : trace_path ? trace_path : "", &failed);
    k->rank = meta_int(t, "rank");
    k->local_rank = meta_int(t, "local_rank");
    k->world_size = meta_int(t, "world_size");
    k->pid = meta_int(t, "pid");
    k->host = dup_or_null(lp_trace_meta(t, "host"), &failed);
    pick_device(t, k, &failed);
    k->kernels = t->n_kernels;
    for (size_t i = 0; i < t->n_kernels; i++) {
        uint64_t start = t->kernels[i].start, end = lp_trace_kernel_end(t, &t->kernels[i]);
        if (end > start)
            k->kernel_ns = lp_sat_add(k->kernel_ns, end - start);
    }
    k->comm_kernels = r->comm.kernels;
    k->comm_ns = r->comm.ns;
    k->comm_overlap_ns = r->comm.overlap_ns;
    k->comm_overlap_share = r->comm.overlap_share;
    /* its power only when the samples are of the GPU the row names */
    int own = r->power.samples && r->power.device == (int)k->device;
    k->nvml_samples = own ? r->power.samples : 0;
    k->energy_j = own ? r->power.energy_j : NAN;
    k->power_mean_w = own ? r->power.mean_w : NAN;
    k->ttft_s = r->llm.ttft_s;
    k->tpot_s = r->llm.tpot_s;
    if (r->n_stages && !(k->stages = calloc(r->n_stages, sizeof *k->stages)))
        failed = 1;
    for (size_t s = 0; k->stages && s < r->n_stages; s++) {
        const struct lp_stage_report *st = &r->stages[s];
        k->stages[s] = (struct lp_rank_stage){
            .name = dup_or_null(st->name, &failed), .kind = st->kind,
            .occurrences = st->occurrences, .wall_ns = lp_sat_from_double(st->wall.total),
            .busy_ns = st->busy_ns, .gpu_ns = st->gpu_ns, .comm_ns = st->comm_ns,
            .comm_overlap_ns = st->comm_overlap_ns};
        k->n_stages = s + 1;
    }
    if (r->comm.kernels && !(k->coll = malloc(r->comm.kernels * sizeof *k->coll)))
        failed = 1;
    for (size_t i = 0; k->coll && i < t->n_kernels; i++) {
        const struct lp_kernel_rec *kn = &t->kernels[i];
        uint32_t g = lp_run_kernel_group(r, i);
        if (r->cats[g] != LP_KCAT_COMMUNICATION || lp_trace_kernel_end(t, kn) <= kn->start ||
            k->n_coll == r->comm.kernels)
            continue;
        k->coll[k->n_coll++] = (struct lp_rank_coll){
            kn->start, lp_trace_kernel_end(t, kn), name_hash(r->names[g]),
            lp_run_kernel_stage(r, i), coll_op(r->names[g])};
    }
    if (k->coll)
        qsort(k->coll, k->n_coll, sizeof *k->coll, coll_by_start);
    if (failed) {
        lp_rank_free(k);
        return LP_ERR_NOMEM;
    }
    return LP_OK;
}

void lp_rank_free(struct lp_rank *k)
{
    if (!k)
        return;
    free(k->trace);
    free(k->host);
    free(k->gpu_name);
    for (size_t s = 0; s < k->n_stages; s++)
        free(k->stages[s].name);
    free(k->stages);
    free(k->coll);
    memset(k, 0, sizeof *k);
}

void lp_ranks_free(struct lp_ranks *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        lp_rank_free(&r->ranks[i]);
    free(r->ranks);
    for (size_t s = 0; s < r->n_stages; s++)
        free(r->stages[s].name);
    free(r->stages);
    for (size_t h = 0; r->hosts && h < r->n_hosts; h++)
        free(r->hosts[h].name);
    free(r->hosts);
    for (size_t g = 0; g < r->n_groups; g++) {
        free(r->groups[g].members);
        free(r->groups[g].member_wait_ns);
        free(r->groups[g].coll);
    }
    free(r->groups);
    memset(r, 0, sizeof *r);
}

static int by_rank(const void *a, const void *b)
{
    const struct lp_rank *x = a, *y = b;
    /* unknown ranks after the known */
    uint64_t rx = (uint64_t)x->rank, ry = (uint64_t)y->rank;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* One matched collective: each member's wait for the latest one, added to the member, its
 * stage and its place in group G; its end spread and kernel time added to G */
struct tally {
    struct lp_ranks *out;
    double *spread;                     /* per matched collective, by group */
    size_t n_spread;
    int waits;                          /* add waits too */
};

static void tally_one(size_t g, struct lp_rank *const *k, const struct lp_rank_coll *const *c,
                      size_t m, void *ctx)
{
    struct tally *t = ctx;
    struct lp_ranks_group *gr = &t->out->groups[g];
    uint64_t latest = 0, lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < m; i++) {
        latest = c[i]->start > latest ? c[i]->start : latest;
        lo = c[i]->end < lo ? c[i]->end : lo;
        hi = c[i]->end > hi ? c[i]->end : hi;
        gr->comm_ns = lp_sat_add(gr->comm_ns, c[i]->end - c[i]->start);
        gr->ops |= c[i]->op;
    }
    t->spread[t->n_spread++] = (double)(hi - lo);
    for (size_t i = 0; t->waits && i < m; i++) {
        uint64_t w = latest - c[i]->start, d = c[i]->end - c[i]->start;
        w = w < d ? w : d; /* a kernel cannot wait longer than it ran */
        k[i]->wait_ns = lp_sat_add(k[i]->wait_ns, w);
        gr->member_wait_ns[i] = lp_sat_add(gr->member_wait_ns[i], w);
        gr->wait_ns = lp_sat_add(gr->wait_ns, w);
        if (c[i]->stage >= 0 && (size_t)c[i]->stage < k[i]->n_stages)
            k[i]->stages[c[i]->stage].wait_ns =
                lp_sat_add(k[i]->stages[c[i]->stage].wait_ns, w);
    }
}

static double median_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Each group's distinct names (its first member's collectives'), and its signature: those
 * names */
static int group_names(struct lp_ranks *out)
{
    for (size_t g = 0; g < out->n_groups; g++) {
        struct lp_ranks_group *gr = &out->groups[g];
        const struct lp_rank *k0 = &out->ranks[gr->members[0]];
        uint64_t *h = malloc((gr->collectives ? gr->collectives : 1) * sizeof *h);
        if (!h)
            return LP_ERR_NOMEM;
        for (size_t e = 0; e < gr->collectives; e++)
            h[e] = k0->coll[gr->coll[e * gr->n_members]].name_hash;
        qsort(h, gr->collectives, sizeof *h, lp_cmp_u64);
        gr->names = 0;
        gr->signature = 0;
        for (size_t e = 0; e < gr->collectives; e++)
            if (!e || h[e] != h[e - 1]) {
                gr->names++;
                gr->signature += h[e]; /* FNV hashes, summed: order-free */
            }
        free(h);
    }
    return LP_OK;
}

/* The groups (collectives.c) and, on one clock, the waits in their collectives. Not
 * computed when the hosts could not be aligned: a group across an unaligned host would be
 * found without its ranks there, and the latest of them missed. */
static int waits(struct lp_ranks *out)
{
    size_t m = 0;
    for (size_t i = 0; i < out->n; i++)
        m += out->ranks[i].n_coll > 0;
    out->coll_end_spread_ns = NAN;
    if (m < 2) {
        out->waits = LP_RANKS_WAIT_NO_COMM;
        return LP_OK;
    }
    int rc = lp_ranks_find_groups(out);
    if (rc != LP_OK)
        return rc;
    out->coll_matched = 0;
    for (size_t g = 0; g < out->n_groups; g++)
        out->coll_matched += out->groups[g].collectives;
    out->waits = !out->aligned        ? LP_RANKS_WAIT_HOSTS
                 : !out->coll_matched ? LP_RANKS_WAIT_UNMATCHED
                                      : LP_RANKS_WAIT_DONE;
    struct tally t = {.out = out, .waits = out->waits == LP_RANKS_WAIT_DONE};
    t.spread = malloc((out->coll_matched ? out->coll_matched : 1) * sizeof *t.spread);
    if (!t.spread)
        rc = LP_ERR_NOMEM;
    if (rc == LP_OK)
        rc = lp_coll_match(out, tally_one, &t);
    if (rc == LP_OK)
        rc = group_names(out);
    for (size_t g = 0, at = 0; rc == LP_OK && g < out->n_groups; g++) {
        struct lp_ranks_group *gr = &out->groups[g];
        size_t n = gr->collectives;
        qsort(t.spread + at, n, sizeof *t.spread, lp_cmp_double);
        gr->end_spread_ns = n ? median_sorted(t.spread + at, n) : NAN;
        at += n;
        size_t least = SIZE_MAX;
        for (size_t q = 0; q < gr->n_members; q++) {
            const struct lp_rank *k = &out->ranks[gr->members[q]];
            int seen = 0; /* its host counted for an earlier member */
            for (size_t p = 0; p < q && !seen; p++)
                seen = out->ranks[gr->members[p]].host_index == k->host_index;
            gr->n_hosts += !seen;
            gr->kernel_ns = lp_sat_add(gr->kernel_ns, k->kernel_ns);
            if (t.waits && (least == SIZE_MAX || gr->member_wait_ns[q] < gr->member_wait_ns[least]))
                least = q;
        }
        gr->straggler = least == SIZE_MAX ? SIZE_MAX : gr->members[least];
    }
    if (rc == LP_OK && out->coll_matched) {
        qsort(t.spread, out->coll_matched, sizeof *t.spread, lp_cmp_double);
        out->coll_end_spread_ns = median_sorted(t.spread, out->coll_matched);
    }
    free(t.spread);
    return rc;
}

/* What the groups leave: communication kernels in no matched collective, and names never
 * matched. LP_OK or LP_ERR_NOMEM. */
static int unmatched(struct lp_ranks *out)
{
    size_t names = 0, kernels = 0;
    uint64_t *seen = NULL;
    for (size_t i = 0; i < out->n; i++)
        kernels += out->ranks[i].n_coll;
    if (kernels && !(seen = malloc(kernels * sizeof *seen)))
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < out->n; i++)
        for (size_t j = 0; j < out->ranks[i].n_coll; j++)
            seen[names++] = out->ranks[i].coll[j].name_hash;
    size_t matched_kernels = 0;
    for (size_t g = 0; g < out->n_groups; g++)
        matched_kernels += out->groups[g].collectives * out->groups[g].n_members;
    out->coll_kernels = kernels;
    out->coll_unmatched = kernels - matched_kernels;
    if (!seen)
        return LP_OK;
    qsort(seen, names, sizeof *seen, lp_cmp_u64);
    size_t d = 0;
    for (size_t i = 0; i < names; i++)
        if (!i || seen[i] != seen[i - 1])
            seen[d++] = seen[i];
    out->coll_names = d;
    out->coll_names_unmatched = 0;
    for (size_t q = 0; q < d; q++) {
        int hit = 0;
        for (size_t g = 0; g < out->n_groups && !hit; g++) {
            const struct lp_ranks_group *gr = &out->groups[g];
            const struct lp_rank *k0 = &out->ranks[gr->members[0]];
            for (size_t e = 0; e < gr->collectives && !hit; e++)
                hit = k0->coll[gr->coll[e * gr->n_members]].name_hash == seen[q];
        }
        out->coll_names_unmatched += !hit;
    }
    free(seen);
    return LP_OK;
}

/* Each group's time in the run's measured stages (its slowest member's wall per stage, warm-up
 * left out as in each rank's report), and the
 * replicas: groups of as many other ranks that ran collectives of the same names, as often
 * within LP_REPLICA_SLACK of the set's first group (a replica's first collectives can fail to
 * end together while NCCL sets up its connections), sharing no rank with any group of the
 * set; each one's time against the fastest of them */
#define LP_REPLICA_SLACK 0.05

static int shares_rank(const struct lp_ranks_group *a, const struct lp_ranks_group *b)
{
    for (size_t x = 0; x < a->n_members; x++)
        for (size_t y = 0; y < b->n_members; y++)
            if (a->members[x] == b->members[y])
                return 1;
    return 0;
}

static void replicas(struct lp_ranks *out)
{
    for (size_t g = 0; g < out->n_groups; g++) {
        struct lp_ranks_group *gr = &out->groups[g];
        for (size_t s = 0; s < out->n_stages; s++) {
            const struct lp_ranks_stage *st = &out->stages[s];
            uint64_t slowest = 0;
            for (size_t q = 0; lp_stage_kind_measured(st->kind) && q < gr->n_members; q++) {
                const struct lp_rank *k = &out->ranks[gr->members[q]];
                for (size_t j = 0; j < k->n_stages; j++)
                    if (k->stages[j].kind == st->kind &&
                        !strcmp(k->stages[j].name ? k->stages[j].name : "", st->name) &&
                        k->stages[j].wall_ns > slowest)
                        slowest = k->stages[j].wall_ns;
            }
            gr->wall_ns = lp_sat_add(gr->wall_ns, slowest);
        }
        gr->vs_fastest = NAN;
        /* the first earlier group that heads a set of replicas (or none yet) it is like,
           sharing no rank with any group of that set */
        for (size_t f = 0; f < g && gr->replica_of == SIZE_MAX; f++) {
            struct lp_ranks_group *o = &out->groups[f];
            if (o->replica_of != SIZE_MAX && o->replica_of != f)
                continue;
            size_t more = o->collectives > gr->collectives ? o->collectives : gr->collectives,
                   less = o->collectives + gr->collectives - more;
            if (o->signature != gr->signature || o->n_members != gr->n_members ||
                (double)(more - less) > LP_REPLICA_SLACK * (double)more)
                continue;
            int shared = 0;
            for (size_t c = f; c < g && !shared; c++)
                if (c == f || out->groups[c].replica_of == f)
                    shared = shares_rank(gr, &out->groups[c]);
            if (shared)
                continue;
            o->replica_of = f;
            gr->replica_of = f;
        }
    }
    for (size_t g = 0; g < out->n_groups; g++) {
        struct lp_ranks_group *gr = &out->groups[g];
        if (gr->replica_of == SIZE_MAX)
            continue;
        uint64_t least = UINT64_MAX;
        for (size_t f = 0; f < out->n_groups; f++)
            if (out->groups[f].replica_of == gr->replica_of && out->groups[f].wall_ns < least)
                least = out->groups[f].wall_ns;
        if (least && gr->wall_ns)
            gr->vs_fastest = (double)gr->wall_ns / (double)least - 1;
    }
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, lp_cmp_double);
    return median_sorted(v, n);
}

/* One row per stage (name and kind) across the ranks that have it. */
static int stages(struct lp_ranks *out)
{
    size_t cap = 0;
    for (size_t i = 0; i < out->n; i++)
        cap += out->ranks[i].n_stages;
    double *wall = malloc((out->n ? out->n : 1) * sizeof *wall),
           *busy = malloc((out->n ? out->n : 1) * sizeof *busy);
    out->stages = cap ? calloc(cap, sizeof *out->stages) : NULL;
    if (!wall || !busy || (cap && !out->stages)) {
        free(wall);
        free(busy);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < out->n; i++)
        for (size_t s = 0; s < out->ranks[i].n_stages; s++) {
            const struct lp_rank_stage *rs = &out->ranks[i].stages[s];
            size_t j = 0;
            while (j < out->n_stages && (out->stages[j].kind != rs->kind ||
                                         strcmp(out->stages[j].name, rs->name ? rs->name : "")))
                j++;
            if (j < out->n_stages)
                continue;
            struct lp_ranks_stage *st = &out->stages[out->n_stages];
            if (!(st->name = strdup(rs->name ? rs->name : ""))) {
                free(wall);
                free(busy);
                return LP_ERR_NOMEM;
            }
            out->n_stages++;
            st->kind = rs->kind;
            double longest = -1;
            for (size_t r = 0; r < out->n; r++)
                for (size_t q = 0; q < out->ranks[r].n_stages; q++) {
                    const struct lp_rank_stage *o = &out->ranks[r].stages[q];
                    if (o->kind != rs->kind || strcmp(o->name ? o->name : "", st->name))
                        continue;
                    wall[st->n] = (double)o->wall_ns;
                    busy[st->n] = (double)o->busy_ns;
                    if (wall[st->n] > longest) {
                        longest = wall[st->n];
                        st->slowest = r;
                    }
                    st->comm_ns = lp_sat_add(st->comm_ns, o->comm_ns);
                    st->comm_overlap_ns = lp_sat_add(st->comm_overlap_ns, o->comm_overlap_ns);
                    st->wait_ns = lp_sat_add(st->wait_ns, o->wait_ns);
                    st->n++;
                    break;
                }
            st->wall_median = median(wall, st->n);
            st->wall_min = wall[0];
            st->wall_max = wall[st->n - 1];
            if (st->kind == LP_STAGE_KIND_OUTSIDE) { /* work outside every range: no wall */
                st->wall_median = st->wall_min = st->wall_max = NAN;
                st->slowest = SIZE_MAX;
            }
            st->busy_median = median(busy, st->n);
            st->busy_min = busy[0];
            st->busy_max = busy[st->n - 1];
            st->comm_overlap_share = st->comm_ns ? (double)st->comm_overlap_ns /
                                                       (double)st->comm_ns : NAN;
            st->wall_spread = st->n > 1 && st->wall_median > 0 /* NaN fails too */
                                  ? (st->wall_max - st->wall_min) / st->wall_median : NAN;
        }
    free(wall);
    free(busy);
    return LP_OK;
}

/* Process I's value of figure F; NaN when it has none */
static double figure(const struct lp_ranks *out, size_t i, enum lp_ranks_figure f)
{
    const struct lp_rank *k = &out->ranks[i];
    int comm = k->n_coll > 0 || k->comm_ns > 0;
    switch (f) {
    case LP_RANKS_FIGURE_KERNEL_NS: return (double)k->kernel_ns;
    case LP_RANKS_FIGURE_COMM_NS: return comm ? (double)k->comm_ns : NAN;
    case LP_RANKS_FIGURE_OVERLAP: return comm ? k->comm_overlap_share : NAN;
    case LP_RANKS_FIGURE_WAIT_NS:
        return out->waits == LP_RANKS_WAIT_DONE && k->n_coll ? (double)k->wait_ns : NAN;
    case LP_RANKS_FIGURE_ENERGY_J: return k->energy_j;
    case LP_RANKS_FIGURE_POWER_W: return k->power_mean_w;
    case LP_RANKS_FIGURE_TTFT_NS: return k->ttft_s > 0 ? k->ttft_s * 1e9 : NAN;
    case LP_RANKS_FIGURE_TPOT_NS: return k->tpot_s > 0 ? k->tpot_s * 1e9 : NAN;
    default: return NAN;
    }
}

/* each figure's distribution over the processes that have it */
static int distributions(struct lp_ranks *out)
{
    double *v = malloc((out->n ? out->n : 1) * sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    for (int f = 0; f < LP_RANKS_FIGURE_COUNT; f++) {
        struct lp_ranks_dist *d = &out->dist[f];
        *d = (struct lp_ranks_dist){0};
        for (size_t i = 0; i < out->n; i++) {
            double x = figure(out, i, (enum lp_ranks_figure)f);
            if (isnan(x))
                continue;
            if (!d->n || x < d->min)
                d->min = x, d->min_at = i;
            if (!d->n || x > d->max)
                d->max = x, d->max_at = i;
            v[d->n++] = x;
        }
        if (!d->n)
            continue;
        qsort(v, d->n, sizeof *v, lp_cmp_double);
        d->p50 = v[(d->n + 1) / 2 - 1];             /* nearest rank: ceil(p n) - 1 */
        d->p90 = v[(9 * d->n + 9) / 10 - 1];
    }
    free(v);
    return LP_OK;
}

int lp_ranks_analyze(struct lp_rank *ranks, size_t n, struct lp_ranks *out)
{
    memset(out, 0, sizeof *out);
    out->ranks = ranks;
    out->n = n;
    if (n)
        qsort(ranks, n, sizeof *ranks, by_rank);
    for (size_t i = 0; i < n; i++) {
        const struct lp_rank *k = &ranks[i];
        if (i && k->rank >= 0 && k->rank == ranks[i - 1].rank && !out->duplicate_ranks++)
            out->duplicate_rank = k->rank; /* sorted by rank: the claims sit together */
        out->kernels += k->kernels;
        out->kernel_ns = lp_sat_add(out->kernel_ns, k->kernel_ns);
        out->comm_ns = lp_sat_add(out->comm_ns, k->comm_ns);
        out->comm_overlap_ns = lp_sat_add(out->comm_overlap_ns, k->comm_overlap_ns);
        int shared = 0, counted = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i && k->has_uuid && ranks[j].has_uuid &&
                !memcmp(k->uuid, ranks[j].uuid, 16)) {
                shared = 1;
                counted |= j < i && !isnan(ranks[j].energy_j);
            }
        out->shared_gpus += shared;
        if (!isnan(k->energy_j) && !counted) { /* a GPU's energy once */
            out->energy_j += k->energy_j;
            out->energy_gpus++;
        }
    }
    int rc = lp_ranks_align(out);
    if (rc == LP_OK)
        rc = waits(out);
    if (rc == LP_OK)
        rc = unmatched(out);
    if (rc == LP_OK)
        rc = stages(out);
    if (rc == LP_OK)
        replicas(out);
    if (rc == LP_OK)
        rc = distributions(out);
    for (size_t i = 0; rc == LP_OK && i < n; i++)
        out->wait_ns = lp_sat_add(out->wait_ns, ranks[i].wait_ns);
    out->wait_share = out->waits == LP_RANKS_WAIT_DONE && out->comm_ns
                          ? (double)out->wait_ns / (double)out->comm_ns : NAN;
    out->comm_overlap_share = out->comm_ns ? (double)out->comm_overlap_ns / (double)out->comm_ns
                                           : NAN;
    if (rc != LP_OK)
        lp_ranks_free(out);
    return rc;
}
