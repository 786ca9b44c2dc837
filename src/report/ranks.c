/* The run report of several traces (ranks, or independent processes): ranks.md, ranks.json
 * (schema llmprof-ranks/1, docs/report-schema.md) and ranks.csv. Says what lp_ranks_analyze
 * found; each trace's own report stays in its subdirectory. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/report.h"
#include "llmprof/trace.h"
#include "report_internal.h"

#define LP_RANKS_SCHEMA "llmprof-ranks/1"

/* "rank 0", else "pid 901", else the trace's name */
static const char *label(const struct lp_rank *k, char *buf, size_t len)
{
    if (k->rank >= 0)
        snprintf(buf, len, "rank %lld", (long long)k->rank);
    else if (k->pid >= 0)
        snprintf(buf, len, "pid %lld", (long long)k->pid);
    else
        snprintf(buf, len, "%s", k->trace ? k->trace : "?");
    return buf;
}

/* the trace's subdirectory: its file name less the suffix */
static const char *page(const struct lp_rank *k, char *buf, size_t len)
{
    const char *n = k->trace ? k->trace : "";
    size_t l = strlen(n), sl = strlen(LP_TRACE_SUFFIX);
    if (l > sl && !strcmp(n + l - sl, LP_TRACE_SUFFIX))
        l -= sl;
    snprintf(buf, len, "%.*s", (int)l, n);
    return buf;
}

static const char *uuid_text(const struct lp_rank *k, char *buf, size_t len)
{
    if (!k->has_uuid) {
        snprintf(buf, len, "-");
        return buf;
    }
    return lp_fmt_uuid(k->uuid, buf, len);
}

static const char *ns_or_dash(double ns, char *buf, size_t len)
{
    if (!(ns > 0)) {
        snprintf(buf, len, "-");
        return buf;
    }
    return lp_fmt_ns(ns, buf, len);
}

/* "12.3 UNIT", "-" not finite */
static const char *num_or_dash(double v, const char *unit, char *buf, size_t len)
{
    if (!isfinite(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f %s", v, unit);
    return buf;
}

static const char *share_or_dash(double v, char *buf, size_t len)
{
    return lp_fmt_pct(isfinite(v) ? v : -1, buf, len);
}

static void waits_sentence(FILE *f, const struct lp_ranks *r)
{
    char sp[64];
    switch (r->waits) {
    case LP_RANKS_WAIT_DONE:
        fprintf(f, "Waits in collectives: %zu collectives matched in %zu group%s (Groups above)",
                r->coll_matched, r->n_groups, r->n_groups == 1 ? "" : "s");
        if (r->coll_unmatched)
            fprintf(f, "; %zu of the %zu communication kernels in none", r->coll_unmatched,
                    r->coll_kernels);
        fprintf(f, ". A rank's wait in one is the latest rank's start minus its own (an NCCL "
                   "kernel cannot finish before the last rank arrives); inferred, %s.\n",
                r->one_host ? "on the clock the ranks share on one host"
                            : "on the hosts' clocks as aligned above: a wait across hosts "
                              "carries the uncertainty of their offset");
        break;
    case LP_RANKS_WAIT_HOSTS:
        fprintf(f, "Waits in collectives are not computed: the traces come from several hosts, "
                   "whose clocks could not all be aligned (see Hosts above).\n");
        break;
    case LP_RANKS_WAIT_UNMATCHED:
        fprintf(f, "Waits in collectives are not computed: no group of ranks was found. "
                   "Collectives of one kernel name (of %zu names) have to end within %s of "
                   "each other on two ranks, at least 3 times and for at least half of them, "
                   "as one communicator's do: the processes did not communicate with each "
                   "other, or too rarely, or not as NCCL's collectives do.\n",
                r->coll_names, lp_fmt_ns((double)LP_COLL_TOGETHER_NS, sp, sizeof sp));
        break;
    case LP_RANKS_WAIT_NO_COMM:
        fprintf(f, "No communication kernels on two ranks or more: no waits in collectives "
                   "to compare.\n");
        break;
    }
}

/* The members of a group: "ranks 0-3, 8" where every member has a rank, else labels */
static void members_md(FILE *f, const struct lp_ranks *r, const struct lp_ranks_group *g)
{
    int ranked = 1;
    for (size_t q = 0; q < g->n_members; q++)
        ranked &= r->ranks[g->members[q]].rank >= 0;
    char l[64];
    for (size_t q = 0, next; q < g->n_members; q = next) {
        const struct lp_rank *k = &r->ranks[g->members[q]];
        next = q + 1;
        if (!ranked) {
            fprintf(f, "%s", q ? ", " : "");
            lp_md_cell(f, label(k, l, sizeof l));
            continue;
        }
        while (next < g->n_members && r->ranks[g->members[next]].rank ==
                                          k->rank + (int64_t)(next - q))
            next++;
        fprintf(f, "%s%lld", q ? ", " : "ranks ", (long long)k->rank);
        if (next - q > 1)
            fprintf(f, "%s%lld", next - q > 2 ? "-" : ", ",
                    (long long)r->ranks[g->members[next - 1]].rank);
    }
}

/* past this many groups ranks.md lists the first ones; ranks.json has them all */
#define LP_RANKS_GROUPS_MAX 32

/* The groups of ranks whose collectives end together, and the replicas among them */
static void groups_md(FILE *f, const struct lp_ranks *r)
{
    if (!r->n_groups)
        return;
    char a[64], b[64], c2[64], l[64];
    fprintf(f, "## Groups\n\n");
    fprintf(f, "Ranks whose collectives end together (within %s on every member, for at least "
               "half of their kernels of one name), as one communicator's do: a process group "
               "(communicators over the same ranks are one group here; the trace does not "
               "record communicators). Inferred from the kernels' ends on %s. Waits: each "
               "member's wait for the latest one, summed; the member waiting least is the "
               "one the others wait for. A collective whose ends lie further apart (the last "
               "rank's kernel can run on after the others end) is matched by its order "
               "between two that ended together (\"by order\").\n\n",
            lp_fmt_ns((double)LP_COLL_TOGETHER_NS, a, sizeof a),
            r->one_host ? "the host's clock" : "the aligned clock");
    if (!r->aligned)
        fprintf(f, "The processes of hosts whose clocks could not be aligned take no part: "
                   "groups with members there are shown without them, and no waits are "
                   "computed.\n\n");
    fprintf(f, "| group | members | hosts | collectives | operations | end spread (median) | "
               "communication | waits | waited for | replica of |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|\n");
    size_t shown = r->n_groups < LP_RANKS_GROUPS_MAX ? r->n_groups : LP_RANKS_GROUPS_MAX;
    for (size_t g = 0; g < shown; g++) {
        const struct lp_ranks_group *gr = &r->groups[g];
        fprintf(f, "| %zu | ", g);
        members_md(f, r, gr);
        fprintf(f, " | %zu | %zu", gr->n_hosts, gr->collectives);
        if (gr->by_order)
            fprintf(f, " (%zu by order)", gr->by_order);
        fprintf(f, " | ");
        for (int o = 0, n = 0; o < LP_COLL_OP_COUNT; o++)
            if (gr->ops & (1u << o))
                fprintf(f, "%s%s", n++ ? ", " : "", lp_text_coll_op(o));
        int w = r->waits == LP_RANKS_WAIT_DONE;
        fprintf(f, " | %s | %s | %s | ", lp_fmt_ns(gr->end_spread_ns, a, sizeof a),
                lp_fmt_ns((double)gr->comm_ns, b, sizeof b),
                w ? lp_fmt_ns((double)gr->wait_ns, c2, sizeof c2) : "-");
        lp_md_cell(f, w && gr->wait_ns && gr->straggler < r->n
                          ? label(&r->ranks[gr->straggler], l, sizeof l) : "-");
        if (gr->replica_of == SIZE_MAX)
            fprintf(f, " | - |\n");
        else if (gr->replica_of == g)
            fprintf(f, " | first |\n");
        else
            fprintf(f, " | %zu |\n", gr->replica_of);
    }
    if (shown < r->n_groups)
        fprintf(f, "\n%zu more groups, and their replicas, are in ranks.json.\n",
                r->n_groups - shown);
    int any = 0;
    for (size_t g = 0; g < r->n_groups; g++)
        any |= r->groups[g].replica_of != SIZE_MAX;
    if (!any) {
        fprintf(f, "\n");
        return;
    }
    fprintf(f, "\nReplicas: groups of as many other ranks that ran collectives of the same names, "
               "as often within 5 %%, such as the tensor-parallel groups of data-parallel "
               "replicas. Each one's time in the stages is its slowest member's wall per stage, "
               "summed over the measured stages (warm-up left out; measured), against the "
               "fastest of its replicas.\n\n");
    fprintf(f, "| replicas | group | members | time in stages | against the fastest | members' "
               "kernel time (whole run) | waits in the group |\n|---|---|---|---|---|---|---|\n");
    for (size_t c = 0; c < shown; c++) { /* each set of replicas by its first group */
        if (r->groups[c].replica_of != c)
            continue;
        for (size_t g = c; g < shown; g++) {
            const struct lp_ranks_group *gr = &r->groups[g];
            if (gr->replica_of != c)
                continue;
            fprintf(f, "| of group %zu | %zu | ", c, g);
            members_md(f, r, gr);
            fprintf(f, " | %s | ", ns_or_dash((double)gr->wall_ns, a, sizeof a));
            if (isfinite(gr->vs_fastest))
                fprintf(f, "%+.1f %%", 100 * gr->vs_fastest);
            else
                fprintf(f, "-");
            fprintf(f, " | %s | %s |\n", lp_fmt_ns((double)gr->kernel_ns, b, sizeof b),
                    r->waits == LP_RANKS_WAIT_DONE ? lp_fmt_ns((double)gr->wait_ns, c2,
                                                               sizeof c2)
                                                    : "-");
        }
    }
    fprintf(f, "\n");
}

/* "+1.234 ms", "-56.7 us": a signed offset */
static const char *signed_ns(int64_t ns, char *buf, size_t len)
{
    char t[64];
    uint64_t mag = ns < 0 ? (uint64_t)-(ns + 1) + 1 : (uint64_t)ns;
    snprintf(buf, len, "%s%s", ns < 0 ? "-" : "+", lp_fmt_ns((double)mag, t, sizeof t));
    return buf;
}

/* Several hosts: each one's clock offset from the reference host's, and how it was found */
static void hosts_md(FILE *f, const struct lp_ranks *r)
{
    if (r->one_host)
        return;
    char o[80], u[64];
    fprintf(f, "## Hosts\n\n");
    fprintf(f, "Each host's clock is set against the reference host's (that of the lowest "
               "rank that ran collectives) where their ranks ran the same collectives: an NCCL "
               "collective ends at nearly the same moment on every rank of its communicator, "
               "so each collective two hosts' ranks ran together gives an estimate (the "
               "difference of their ends). The offset is the median of the estimates, its "
               "uncertainty half their interquartile range; inferred. A host may be aligned "
               "through another one aligned before it. ");
    if (r->aligned)
        fprintf(f, "Times across hosts below are on the reference host's clock.\n\n");
    else
        fprintf(f, "A host needs %d such collectives; without every host that ran "
                   "collectives aligned, times are compared only as durations.\n\n",
                LP_CLOCK_MIN_COLLECTIVES);
    fprintf(f, "| host | processes | clock offset | uncertainty | from |\n|---|---|---|---|---|\n");
    for (size_t h = 0; h < r->n_hosts; h++) {
        const struct lp_ranks_host *x = &r->hosts[h];
        fprintf(f, "| ");
        lp_md_cell(f, x->name ? x->name : "-");
        if (x->how == LP_CLOCK_HOW_REFERENCE)
            fprintf(f, " | %zu | reference | - | host of the lowest rank with collectives |\n",
                    x->ranks);
        else if (x->how == LP_CLOCK_HOW_COLLECTIVES)
            fprintf(f, " | %zu | %s | %s | %zu collectives |\n", x->ranks,
                    signed_ns(x->offset_ns, o, sizeof o),
                    lp_fmt_ns(x->uncertainty_ns, u, sizeof u), x->collectives);
        else if (x->how == LP_CLOCK_HOW_DISAGREE)
            fprintf(f, " | %zu | not aligned | %s | %zu collectives whose ends do not agree on "
                       "one offset (groups that do not communicate across the hosts, or that "
                       "keep in step at a steady lag) |\n",
                    x->ranks, lp_fmt_ns(x->uncertainty_ns, u, sizeof u), x->collectives);
        else
            fprintf(f, " | %zu | not aligned | - | %zu collective%s with an aligned host's |\n",
                    x->ranks, x->collectives, x->collectives == 1 ? "" : "s");
    }
    fprintf(f, "\n");
}

/* One row per process */
static void processes_md(FILE *f, const struct lp_ranks *r)
{
    char a[64], b[64], c[64], d[64], e[64], g[64], h[64], l[64], p[64], u[64], tp[64],
        pg[256];
    fprintf(f, "| process | host | pid | GPU | UUID | kernels | kernel time | communication | "
               "overlap | wait in collectives | energy | mean power | TTFT | TPOT | report |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n; i++) {
        const struct lp_rank *k = &r->ranks[i];
        fprintf(f, "| ");
        lp_md_cell(f, label(k, l, sizeof l));
        if (k->local_rank >= 0 && k->rank >= 0)
            fprintf(f, " (local %lld)", (long long)k->local_rank);
        fprintf(f, " | ");
        lp_md_cell(f, k->host ? k->host : "-");
        fprintf(f, " | %s | %u: ", k->pid >= 0 ? (snprintf(p, sizeof p, "%lld",
                                                          (long long)k->pid), p) : "-",
                k->device);
        lp_md_cell(f, k->gpu_name ? k->gpu_name : "");
        fprintf(f, " | %s | %zu | %s | %s | %s | %s | %s | %s | %s | %s | [",
                uuid_text(k, u, sizeof u), k->kernels,
                lp_fmt_ns((double)k->kernel_ns, a, sizeof a),
                ns_or_dash((double)k->comm_ns, b, sizeof b),
                share_or_dash(k->comm_overlap_share, c, sizeof c),
                r->waits == LP_RANKS_WAIT_DONE && k->n_coll ? lp_fmt_ns((double)k->wait_ns, d,
                                                                        sizeof d) : "-",
                num_or_dash(k->energy_j, "J", e, sizeof e),
                num_or_dash(k->power_mean_w, "W", g, sizeof g),
                ns_or_dash(k->ttft_s * 1e9, h, sizeof h),
                k->tpot_s > 0 ? lp_fmt_ns(k->tpot_s * 1e9, tp, sizeof tp) : "-");
        /* the subdirectory is named after the trace's file: its link's text and target */
        page(k, pg, sizeof pg);
        lp_md_cell(f, pg);
        fprintf(f, "](");
        lp_md_cell(f, pg);
        fprintf(f, "/report.md) |\n");
    }
}

/* Past LP_RANKS_TABLE_MAX processes: each figure's distribution over them */
static void processes_dist_md(FILE *f, const struct lp_ranks *r)
{
    static const struct {
        const char *name, *unit; /* unit NULL: a time; "%": a share */
    } fig[LP_RANKS_FIGURE_COUNT] = {
        [LP_RANKS_FIGURE_KERNEL_NS] = {"kernel time", NULL},
        [LP_RANKS_FIGURE_COMM_NS] = {"communication", NULL},
        [LP_RANKS_FIGURE_OVERLAP] = {"overlap", "%"},
        [LP_RANKS_FIGURE_WAIT_NS] = {"wait in collectives", NULL},
        [LP_RANKS_FIGURE_ENERGY_J] = {"energy", "J"},
        [LP_RANKS_FIGURE_POWER_W] = {"mean power", "W"},
        [LP_RANKS_FIGURE_TTFT_NS] = {"TTFT", NULL},
        [LP_RANKS_FIGURE_TPOT_NS] = {"TPOT", NULL},
    };
    fprintf(f, "%zu processes: each one's row is in ranks.csv and ranks.json, its report in the "
               "subdirectory named after its trace. Here each figure over the processes that "
               "have it (percentiles by nearest rank). In waits, the process that waits least "
               "is the one the others wait for.\n\n", r->n);
    fprintf(f, "| figure | processes | p50 | p90 | min (process) | max (process) |\n"
               "|---|---|---|---|---|---|\n");
    for (int i = 0; i < LP_RANKS_FIGURE_COUNT; i++) {
        const struct lp_ranks_dist *x = &r->dist[i];
        if (!x->n)
            continue;
        char v[4][64], lo[64], hi[64];
        const double q[4] = {x->p50, x->p90, x->min, x->max};
        for (int j = 0; j < 4; j++) {
            if (!fig[i].unit)
                lp_fmt_ns(q[j], v[j], sizeof v[j]);
            else if (fig[i].unit[0] == '%')
                share_or_dash(q[j], v[j], sizeof v[j]);
            else
                num_or_dash(q[j], fig[i].unit, v[j], sizeof v[j]);
        }
        fprintf(f, "| %s | %zu | %s | %s | %s (", fig[i].name, x->n, v[0], v[1], v[2]);
        lp_md_cell(f, label(&r->ranks[x->min_at], lo, sizeof lo));
        fprintf(f, ") | %s (", v[3]);
        lp_md_cell(f, label(&r->ranks[x->max_at], hi, sizeof hi));
        fprintf(f, ") |\n");
    }
}

int lp_report_ranks_md(FILE *f, const struct lp_ranks *r)
{
    char a[64], b[64], c[64], d[64], e[64], g[64], h[64], l[64], p[64];
    fprintf(f, "# llmprof run report: %zu processes\n\n", r->n);
    fprintf(f, "Each process's own report is in its subdirectory (%s). Kernels: %zu "
               "records, %s of GPU time over the processes (measured). %s\n\n",
            r->n > LP_RANKS_TABLE_MAX ? "named after its trace" : "linked below", r->kernels,
            lp_fmt_ns((double)r->kernel_ns, a, sizeof a),
            r->one_host  ? "All traces come from one host: their times share one clock."
            : r->aligned ? "The traces come from several hosts, whose clocks were aligned "
                           "(Hosts below)."
                         : "The traces come from several hosts whose clocks could not all be "
                           "aligned (Hosts below): times are compared only as durations.");
    if (r->n_unread) {
        fprintf(f, "**Left out:** %zu trace%s of the run could not be read; everything below "
                   "is over the other %zu:\n\n", r->n_unread, r->n_unread == 1 ? "" : "s", r->n);
        for (size_t i = 0; i < r->n_unread; i++) {
            fprintf(f, "- ");
            lp_md_code(f, r->unread[i].trace);
            fprintf(f, ": ");
            lp_fmt_puts(f, r->unread[i].reason);
            fprintf(f, "\n");
        }
        fprintf(f, "\n");
    }
    hosts_md(f, r);
    groups_md(f, r);
    fprintf(f, "## Processes\n\n");
    if (r->n > LP_RANKS_TABLE_MAX)
        processes_dist_md(f, r);
    else
        processes_md(f, r);
    fprintf(f, "\nGPU: the CUDA ordinal most of the process's kernels ran on, and its name and "
               "UUID (NVML's form). Energy and mean power: that GPU over the process's "
               "recording (NVML, measured). Overlap: of the communication kernels' time, the "
               "share with a computation kernel running on the same GPU (HTA's definition).\n");
    if (r->shared_gpus)
        fprintf(f, "\n%zu processes used a GPU another one used too: its energy is counted "
                   "once.\n", r->shared_gpus);
    if (r->duplicate_ranks)
        fprintf(f, "\n**Warning:** %zu trace%s claim%s a rank another trace claims (first: rank "
                   "%lld): two runs in one directory, or a launcher's rank passed to several "
                   "processes; the ranks' comparison mixes them.\n",
                r->duplicate_ranks, r->duplicate_ranks == 1 ? "" : "s",
                r->duplicate_ranks == 1 ? "s" : "", (long long)r->duplicate_rank);
    if (r->energy_gpus)
        fprintf(f, "\nEnergy over the %zu GPU%s with NVML samples: %.1f J.\n", r->energy_gpus,
                r->energy_gpus == 1 ? "" : "s", r->energy_j);

    fprintf(f, "\n## Stages across processes\n\n");
    if (!r->n_stages)
        fprintf(f, "No stages.\n");
    else {
        fprintf(f, "Wall time of each stage's measured occurrences per process (NVTX ranges, "
                   "measured): its median, range and spread ((max - min) / median), and the "
                   "process that took longest; GPU busy time likewise.\n\n");
        fprintf(f, "| stage | kind | processes | wall median | wall min | wall max | spread | "
                   "slowest | GPU busy median (min - max) | communication | overlap | wait |\n");
        fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (size_t s = 0; s < r->n_stages; s++) {
            const struct lp_ranks_stage *st = &r->stages[s];
            char m1[64], m2[64];
            fprintf(f, "| ");
            lp_md_cell(f, st->name);
            fprintf(f, " | %s | %zu | %s | %s | %s | %s | ", lp_stage_kind_name(st->kind),
                    st->n, ns_or_dash(st->wall_median, a, sizeof a),
                    ns_or_dash(st->wall_min, b, sizeof b), ns_or_dash(st->wall_max, c, sizeof c),
                    share_or_dash(st->wall_spread, d, sizeof d));
            lp_md_cell(f, st->n > 1 && st->slowest < r->n
                              ? label(&r->ranks[st->slowest], l, sizeof l) : "-");
            fprintf(f, " | %s (%s - %s) | %s | %s | %s |\n",
                    lp_fmt_ns(st->busy_median, e, sizeof e),
                    lp_fmt_ns(st->busy_min, m1, sizeof m1),
                    lp_fmt_ns(st->busy_max, m2, sizeof m2),
                    ns_or_dash((double)st->comm_ns, g, sizeof g),
                    share_or_dash(st->comm_overlap_share, h, sizeof h),
                    r->waits == LP_RANKS_WAIT_DONE && st->comm_ns
                        ? lp_fmt_ns((double)st->wait_ns, p, sizeof p) : "-");
        }
    }
    fprintf(f, "\n## Communication\n\n");
    if (!r->comm_ns)
        fprintf(f, "No communication kernels (by name: nccl, all_reduce, all_gather, ...).\n\n");
    else
        fprintf(f, "Communication kernels ran %s over the processes; a computation kernel ran "
                   "beside them on the same GPU for %s of it (overlap, measured).\n\n",
                lp_fmt_ns((double)r->comm_ns, a, sizeof a),
                share_or_dash(r->comm_overlap_share, b, sizeof b));
    waits_sentence(f, r);
    if (r->waits == LP_RANKS_WAIT_DONE)
        fprintf(f, "\nWaiting in all: %s, %s of the communication time; the rest moved data or "
                   "ran the reduction.\n", lp_fmt_ns((double)r->wait_ns, a, sizeof a),
                share_or_dash(r->wait_share, b, sizeof b));
    return ferror(f) ? -1 : 0;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *int_or_null(int64_t v)
{
    return v >= 0 ? json_integer((json_int_t)v) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static const char *wait_key(enum lp_ranks_wait w)
{
    static const char *const k[] = {"done", "no_communication", "several_hosts", "unmatched"};
    return (size_t)w < sizeof k / sizeof *k ? k[w] : "unknown";
}

static json_t *groups_json(const struct lp_ranks *r)
{
    json_t *a = json_array();
    int w = r->waits == LP_RANKS_WAIT_DONE;
    for (size_t g = 0; g < r->n_groups; g++) {
        const struct lp_ranks_group *gr = &r->groups[g];
        json_t *members = json_array(), *ranks = json_array(), *waits = json_array(),
               *ops = json_array();
        for (size_t q = 0; q < gr->n_members; q++) {
            json_array_append_new(members, json_integer((json_int_t)gr->members[q]));
            json_array_append_new(ranks, int_or_null(r->ranks[gr->members[q]].rank));
            json_array_append_new(waits, w ? json_integer((json_int_t)gr->member_wait_ns[q])
                                           : json_null());
        }
        for (int o = 0; o < LP_COLL_OP_COUNT; o++)
            if (gr->ops & (1u << o))
                json_array_append_new(ops, json_string(lp_text_coll_op_key(o)));
        json_t *o = json_pack("{s:o,s:o,s:I,s:I,s:I,s:o,s:I,s:o,s:o,s:o}", "members", members,
                              "ranks", ranks, "hosts", (json_int_t)gr->n_hosts, "collectives",
                              (json_int_t)gr->collectives, "names", (json_int_t)gr->names,
                              "operations", ops, "comm_ns", (json_int_t)gr->comm_ns, "wait_ns",
                              w ? json_integer((json_int_t)gr->wait_ns) : json_null(),
                              "member_wait_ns", waits, "end_spread_ns",
                              num(gr->end_spread_ns));
        json_object_set_new(o, "waited_for", w && gr->straggler < r->n
                                                 ? json_integer((json_int_t)gr->straggler)
                                                 : json_null());
        json_object_set_new(o, "replica_of", gr->replica_of == SIZE_MAX
                                                 ? json_null()
                                                 : json_integer((json_int_t)gr->replica_of));
        json_object_set_new(o, "by_order", json_integer((json_int_t)gr->by_order));
        json_object_set_new(o, "kernel_ns", json_integer((json_int_t)gr->kernel_ns));
        json_object_set_new(o, "stage_wall_ns", json_integer((json_int_t)gr->wall_ns));
        json_object_set_new(o, "vs_fastest_replica", num(gr->vs_fastest));
        json_array_append_new(a, o);
    }
    return a;
}

int lp_report_ranks_json(FILE *f, const struct lp_ranks *r)
{
    char u[64], p[256];
    json_t *ranks = json_array(), *stages = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct lp_rank *k = &r->ranks[i];
        json_t *ks = json_array();
        for (size_t s = 0; s < k->n_stages; s++) {
            const struct lp_rank_stage *st = &k->stages[s];
            json_array_append_new(ks, json_pack(
                "{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "name", st->name ? st->name : "",
                "kind", lp_stage_kind_name(st->kind), "occurrences", (json_int_t)st->occurrences,
                "wall_ns", (json_int_t)st->wall_ns, "busy_ns", (json_int_t)st->busy_ns,
                "gpu_ns", (json_int_t)st->gpu_ns, "comm_ns", (json_int_t)st->comm_ns,
                "comm_overlap_ns", (json_int_t)st->comm_overlap_ns, "wait_ns",
                r->waits == LP_RANKS_WAIT_DONE && st->comm_ns ? json_integer((json_int_t)st->wait_ns)
                                                              : json_null()));
        }
        json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:s,s:I}", "trace",
                              k->trace ? k->trace : "", "rank", int_or_null(k->rank),
                              "local_rank", int_or_null(k->local_rank), "world_size",
                              int_or_null(k->world_size), "pid", int_or_null(k->pid), "host",
                              str_or_null(k->host), "report_dir", page(k, p, sizeof p),
                              "device", (json_int_t)k->device);
        json_object_set_new(o, "gpu_name", str_or_null(k->gpu_name));
        json_object_set_new(o, "gpu_uuid", k->has_uuid ? json_string(uuid_text(k, u, sizeof u))
                                                       : json_null());
        json_object_set_new(o, "kernels", json_integer((json_int_t)k->kernels));
        json_object_set_new(o, "kernel_ns", json_integer((json_int_t)k->kernel_ns));
        json_object_set_new(o, "comm_kernels", json_integer((json_int_t)k->comm_kernels));
        json_object_set_new(o, "comm_ns", json_integer((json_int_t)k->comm_ns));
        json_object_set_new(o, "comm_overlap_ns", json_integer((json_int_t)k->comm_overlap_ns));
        json_object_set_new(o, "comm_overlap_share", num(k->comm_overlap_share));
        json_object_set_new(o, "wait_ns", r->waits == LP_RANKS_WAIT_DONE && k->n_coll
                                              ? json_integer((json_int_t)k->wait_ns)
                                              : json_null());
        json_object_set_new(o, "energy_j", num(k->energy_j));
        json_object_set_new(o, "power_mean_w", num(k->power_mean_w));
        json_object_set_new(o, "nvml_samples", json_integer((json_int_t)k->nvml_samples));
        json_object_set_new(o, "ttft_s", k->ttft_s > 0 ? json_real(k->ttft_s) : json_null());
        json_object_set_new(o, "tpot_s", k->tpot_s > 0 ? json_real(k->tpot_s) : json_null());
        json_object_set_new(o, "stages", ks);
        json_array_append_new(ranks, o);
    }
    for (size_t s = 0; s < r->n_stages; s++) {
        const struct lp_ranks_stage *st = &r->stages[s];
        json_array_append_new(stages, json_pack(
            "{s:s,s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:o,s:o}", "name", st->name,
            "kind", lp_stage_kind_name(st->kind), "processes", (json_int_t)st->n,
            "wall_median_ns", num(st->wall_median), "wall_min_ns", num(st->wall_min),
            "wall_max_ns", num(st->wall_max), "wall_spread", num(st->wall_spread),
            "slowest", st->n > 1 && st->slowest < r->n ? json_integer((json_int_t)st->slowest)
                                                       : json_null(),
            "busy_median_ns", num(st->busy_median), "busy_min_ns", num(st->busy_min),
            "busy_max_ns", num(st->busy_max), "comm_ns", (json_int_t)st->comm_ns,
            "comm_overlap_ns", (json_int_t)st->comm_overlap_ns, "comm_overlap_share",
            num(st->comm_overlap_share), "wait_ns",
            r->waits == LP_RANKS_WAIT_DONE && st->comm_ns ? json_integer((json_int_t)st->wait_ns)
                                                          : json_null()));
    }
    json_t *doc = json_pack(
        "{s:s,s:I,s:b,s:I,s:I,s:I,s:o,s:{s:s,s:I,s:I,s:I,s:o},s:{s:I,s:o,s:I},s:o,s:o}",
        "schema", LP_RANKS_SCHEMA, "processes", (json_int_t)r->n, "one_host", r->one_host,
        "kernels", (json_int_t)r->kernels, "kernel_ns", (json_int_t)r->kernel_ns, "comm_ns",
        (json_int_t)r->comm_ns, "comm_overlap_share", num(r->comm_overlap_share), "waits",
        "status", wait_key(r->waits), "collectives_matched", (json_int_t)r->coll_matched,
        "names", (json_int_t)r->coll_names, "names_unmatched",
        (json_int_t)r->coll_names_unmatched, "wait_ns",
        r->waits == LP_RANKS_WAIT_DONE ? json_integer((json_int_t)r->wait_ns) : json_null(),
        "energy", "gpus", (json_int_t)r->energy_gpus, "energy_j",
        r->energy_gpus ? json_real(r->energy_j) : json_null(), "shared_gpus",
        (json_int_t)r->shared_gpus, "ranks", ranks, "stages", stages);
    if (!doc)
        return -1;
    json_object_set_new(json_object_get(doc, "waits"), "wait_share", num(r->wait_share));
    json_object_set_new(json_object_get(doc, "waits"), "end_spread_ns",
                        num(r->coll_end_spread_ns));
    json_object_set_new(json_object_get(doc, "waits"), "kernels",
                        json_integer((json_int_t)r->coll_kernels));
    json_object_set_new(json_object_get(doc, "waits"), "kernels_unmatched",
                        json_integer((json_int_t)r->coll_unmatched));
    json_object_set_new(doc, "groups", groups_json(r));
    json_object_set_new(doc, "duplicate_ranks", json_integer((json_int_t)r->duplicate_ranks));
    static const char *const how[] = {"reference", "collectives", "none", "disagree"};
    json_t *hosts = json_array();
    for (size_t h = 0; h < r->n_hosts; h++) {
        const struct lp_ranks_host *x = &r->hosts[h];
        int known = x->how == LP_CLOCK_HOW_REFERENCE || x->how == LP_CLOCK_HOW_COLLECTIVES;
        json_array_append_new(
            hosts, json_pack("{s:o,s:I,s:s,s:o,s:o,s:I}", "name", str_or_null(x->name),
                             "processes", (json_int_t)x->ranks, "clock", how[x->how],
                             "offset_ns", known ? json_integer(x->offset_ns) : json_null(),
                             "uncertainty_ns", num(x->uncertainty_ns), "collectives",
                             (json_int_t)x->collectives));
    }
    json_object_set_new(doc, "hosts", hosts);
    static const char *const fig[LP_RANKS_FIGURE_COUNT] = {
        "kernel_ns", "comm_ns", "comm_overlap_share", "wait_ns", "energy_j", "power_mean_w",
        "ttft_ns", "tpot_ns"};
    json_t *dists = json_object();
    for (int i = 0; i < LP_RANKS_FIGURE_COUNT; i++) {
        const struct lp_ranks_dist *x = &r->dist[i];
        json_object_set_new(
            dists, fig[i],
            x->n ? json_pack("{s:I,s:o,s:o,s:o,s:o,s:I,s:I}", "processes", (json_int_t)x->n,
                             "p50", num(x->p50), "p90", num(x->p90), "min", num(x->min), "max",
                             num(x->max), "min_at", (json_int_t)x->min_at, "max_at",
                             (json_int_t)x->max_at)
                 : json_null());
    }
    json_object_set_new(doc, "distributions", dists);
    json_object_set_new(doc, "clocks_aligned", json_boolean(r->aligned));
    json_t *unread = json_array();
    for (size_t i = 0; i < r->n_unread; i++)
        json_array_append_new(unread, json_pack("{s:s,s:s}", "trace", r->unread[i].trace,
                                                "reason", r->unread[i].reason));
    json_object_set_new(doc, "unreadable", unread);
    int rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) == 0 ? 0 : -1;
    fputc('\n', f);
    json_decref(doc);
    return rc == 0 && !ferror(f) ? 0 : -1;
}

int lp_report_ranks_csv(FILE *f, const struct lp_ranks *r)
{
    fprintf(f, "trace,rank,local_rank,pid,host,device,gpu_uuid,stage,kind,occurrences,wall_ns,"
               "busy_ns,gpu_ns,comm_ns,comm_overlap_ns,wait_ns\n");
    char u[64];
    for (size_t i = 0; i < r->n; i++) {
        const struct lp_rank *k = &r->ranks[i];
        for (size_t s = 0; s < k->n_stages; s++) {
            const struct lp_rank_stage *st = &k->stages[s];
            lp_csv_field(f, k->trace ? k->trace : "");
            fprintf(f, ",%lld,%lld,%lld,", (long long)k->rank, (long long)k->local_rank,
                    (long long)k->pid);
            lp_csv_field(f, k->host ? k->host : "");
            fprintf(f, ",%u,%s,", k->device, k->has_uuid ? uuid_text(k, u, sizeof u) : "");
            lp_csv_field(f, st->name ? st->name : "");
            fprintf(f, ",%s,%zu,%llu,%llu,%llu,%llu,%llu,", lp_stage_kind_name(st->kind),
                    st->occurrences, (unsigned long long)st->wall_ns,
                    (unsigned long long)st->busy_ns, (unsigned long long)st->gpu_ns,
                    (unsigned long long)st->comm_ns, (unsigned long long)st->comm_overlap_ns);
            if (r->waits == LP_RANKS_WAIT_DONE && st->comm_ns)
                fprintf(f, "%llu", (unsigned long long)st->wait_ns);
            fputc('\n', f);
        }
    }
    return ferror(f) ? -1 : 0;
}
