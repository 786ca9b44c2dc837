/* Several GPUs (src/analyze/comm.c, ranks.c, src/report/ranks.c): communication/computation
 * overlap and waits in collectives on synthetic traces with known answers, and the run
 * report of the two-H200 fixtures (a tensor-parallel decoder under torchrun, transformers'
 * own tensor parallelism, two independent processes) against each trace. */
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/compare.h"
#include "llmprof/report.h"
#include "tracebuild.h"

#define US 1000ull

/* a kernel NAME on DEVICE and STREAM from S to E, no launch call */
static void kernel_on_stream(struct tb *b, const char *name, uint32_t device, uint32_t stream,
                             uint64_t s, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_KERNEL};
    r.u.kernel = (struct lp_kernel){.start = s, .end = e, .correlation = b->next_corr++,
                                    .device = device, .stream = stream,
                                    .name = lp_trace_writer_intern(b->w, name)};
    add(b, &r);
}

static void kernel_on(struct tb *b, const char *name, uint32_t device, uint64_t s, uint64_t e)
{
    kernel_on_stream(b, name, device, 7, s, e);
}

/* B's trace, read and analysed, kept as rank K */
static void take_rank(struct tb *b, struct lp_rank *k)
{
    struct lp_trace *t = tb_read(b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(lp_rank_take(&r, "/run/trace.lpt", k), LP_OK);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Overlap per stage: a 20 us all-reduce half under a GEMM, a 10 us one with compute only on
 * another GPU, a copy under the second (not compute): 10 of 30 us overlapped. */
static void test_comm_overlap(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "decode", 1, 0, 100 * US);
    kernel_on(&b, "gemm_bf16", 0, 10 * US, 50 * US);
    kernel_on(&b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 40 * US, 60 * US);
    kernel_on(&b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 70 * US, 80 * US);
    kernel_on(&b, "gemm_bf16", 1, 70 * US, 80 * US);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.comm.kernels, 2);
    assert_int_equal(r.comm.ns, 30 * US);
    assert_int_equal(r.comm.overlap_ns, 10 * US);
    assert_true(fabs(r.comm.overlap_share - 1.0 / 3) < 1e-12);
    const struct lp_stage_report *d = stage(&r, "decode");
    assert_non_null(d);
    assert_int_equal(d->comm_ns, 30 * US);
    assert_int_equal(d->comm_overlap_ns, 10 * US);
    lp_run_free(&r);
    lp_trace_free(t);

    /* no communication: no share */
    tb_open(&b);
    range(&b, "decode", 1, 0, 100 * US);
    kernel_on(&b, "gemm_bf16", 0, 10 * US, 50 * US);
    t = tb_read(&b, 1);
    analyze(t, NULL, &r);
    assert_int_equal(r.comm.kernels, 0);
    assert_true(isnan(r.comm.overlap_share));
    assert_true(isnan(stage(&r, "decode")->comm_overlap_share));
    lp_run_free(&r);
    lp_trace_free(t);
}

/* One rank's trace: a decode range 0..END, all-reduces starting at AR (each ends at the
 * same time on both ranks: the last arrival plus 10 us), an all-gather when GATHER. */
static void rank_trace(struct lp_rank *k, const char *rank, const char *host, uint64_t end,
                       const uint64_t *ar, int gather)
{
    static const uint64_t ends[3] = {130 * US, 240 * US, 340 * US};
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "rank", rank);
    lp_trace_writer_set_meta(b.w, "host", host);
    range(&b, "decode", 1, 0, end);
    for (int i = 0; i < 3; i++) {
        kernel_on(&b, "gemm_bf16", 0, ar[i] - 50 * US, ar[i] - 5 * US);
        kernel_on(&b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, ar[i], ends[i]);
    }
    if (gather)
        kernel_on(&b, "ncclDevKernel_AllGather_RING_LL", 0, 360 * US, 370 * US);
    take_rank(&b, k);
}

/* RK as ranks.md (JSON: ranks.json), a string to free */
static char *ranks_text(const struct lp_ranks *rk, int json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(json ? lp_report_ranks_json(f, rk) : lp_report_ranks_md(f, rk), 0);
    fclose(f);
    return text;
}

/* Rank 0 on host "a" and rank 1 on host "b", their all-reduces as rank_trace's */
static struct lp_rank *two_hosts(const uint64_t *ar0, const uint64_t *ar1)
{
    struct lp_rank *k = calloc(2, sizeof *k);
    assert_non_null(k);
    rank_trace(&k[0], "0", "a", 400 * US, ar0, 0);
    rank_trace(&k[1], "1", "b", 500 * US, ar1, 0);
    return k;
}

/* Ranks 0, 1 and 2 on HOSTS, arriving at AR[i]; rank SILENT's collectives taken away */
static struct lp_rank *three_ranks(const char *const hosts[3], const uint64_t *const ar[3],
                                   size_t silent)
{
    static const char *const rank[3] = {"0", "1", "2"};
    struct lp_rank *k = calloc(3, sizeof *k);
    assert_non_null(k);
    for (size_t i = 0; i < 3; i++)
        rank_trace(&k[i], rank[i], hosts[i], 400 * US, ar[i], 0);
    k[silent].n_coll = 0;
    return k;
}

/* A rank of two communicators, each on its own stream, running kernels of one name:
 * ARRIVE[i] and STREAM[i] the i-th launched (the same program order on both ranks), which
 * ends at 1200 + 100 i us. */
static void two_comm_rank(struct lp_rank *k, const char *rank, const uint64_t *arrive,
                          const uint32_t *stream)
{
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "rank", rank);
    lp_trace_writer_set_meta(b.w, "host", "h");
    range(&b, "decode", 1, 0, 2000 * US);
    /* the i-th launched ends at the same moment on every rank, as one communicator's does */
    for (int i = 0; i < 3; i++)
        kernel_on_stream(&b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, stream[i],
                         arrive[i], (1200 + 100 * (uint64_t)i) * US);
    take_rank(&b, k);
}

/* Two communicators whose all-reduces share a kernel name: the tensor-parallel one runs
 * twice, the other once, and on rank 1 the other one starts first. Matched by their ends:
 * TP 1 at 100/180 us (rank 0 waits 80), TP 2 at 300/350 (rank 0 waits 50), the other at
 * 200/120 (rank 1 waits 80). By name and start order alone they would pair as 100/120,
 * 200/180, 300/350: 70 and 20 us. */
static void test_ranks_communicators(void **state)
{
    (void)state;
    static const uint64_t a0[3] = {100 * US, 200 * US, 300 * US};
    static const uint32_t s0[3] = {13, 14, 13};
    static const uint64_t a1[3] = {180 * US, 120 * US, 350 * US};
    static const uint32_t s1[3] = {21, 22, 21};
    struct lp_rank *k = calloc(2, sizeof *k);
    assert_non_null(k);
    two_comm_rank(&k[0], "0", a0, s0);
    two_comm_rank(&k[1], "1", a1, s1);
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.coll_matched, 3);
    assert_int_equal(rk.coll_names, 1);
    assert_int_equal(rk.coll_names_unmatched, 0);
    assert_int_equal(rk.ranks[0].wait_ns, 130 * US);
    assert_int_equal(rk.ranks[1].wait_ns, 80 * US);
    lp_ranks_free(&rk);
}

/* Two traces that both claim rank 0 (and one rank 1) are counted, not merged without a
 * word; distinct ranks count nothing. */
static void test_ranks_duplicate(void **state)
{
    (void)state;
    static const uint64_t a[3] = {100 * US, 200 * US, 300 * US};
    static const uint32_t s[3] = {13, 14, 13};
    const char *claims[2][3] = {{"0", "0", "1"}, {"0", "1", "2"}};
    for (int c = 0; c < 2; c++) {
        struct lp_rank *k = calloc(3, sizeof *k);
        assert_non_null(k);
        for (int i = 0; i < 3; i++)
            two_comm_rank(&k[i], claims[c][i], a, s);
        struct lp_ranks rk;
        assert_int_equal(lp_ranks_analyze(k, 3, &rk), LP_OK);
        assert_int_equal(rk.duplicate_ranks, c ? 0 : 1);
        if (!c)
            assert_int_equal(rk.duplicate_rank, 0);
        lp_ranks_free(&rk);
    }
}

/* Rank 0 arrives first at every all-reduce (by 20, 10, 30 us): it waits 60 us, rank 1 none;
 * rank 1's decode is the longer (500 against 400 us); the all-gather only rank 0 ran is left
 * out of the matching. From two hosts the waits are those of one once aligned, and without
 * that none. */
static void test_ranks_waits(void **state)
{
    (void)state;
    static const uint64_t ar0[3] = {100 * US, 200 * US, 300 * US};
    static const uint64_t ar1[3] = {120 * US, 210 * US, 330 * US};
    struct lp_rank *k = calloc(2, sizeof *k);
    assert_non_null(k);
    /* given in reverse: the analysis orders by rank */
    rank_trace(&k[0], "1", "h", 500 * US, ar1, 0);
    rank_trace(&k[1], "0", "h", 400 * US, ar0, 1);
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.n, 2);
    assert_int_equal(rk.ranks[0].rank, 0);
    assert_int_equal(rk.ranks[1].rank, 1);
    assert_int_equal(rk.one_host, 1);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.coll_matched, 3);
    assert_int_equal(rk.coll_names, 2);
    assert_int_equal(rk.coll_names_unmatched, 1);
    assert_int_equal(rk.coll_kernels, 7);
    assert_int_equal(rk.coll_unmatched, 1);
    assert_int_equal(rk.n_groups, 1);
    assert_int_equal(rk.groups[0].straggler, 1); /* rank 1 arrives last: waits least */
    assert_int_equal(rk.groups[0].member_wait_ns[0], 60 * US);
    assert_int_equal(rk.groups[0].replica_of, SIZE_MAX);
    assert_int_equal(rk.ranks[0].wait_ns, 60 * US);
    assert_int_equal(rk.ranks[1].wait_ns, 0);
    assert_int_equal(rk.wait_ns, 60 * US);
    assert_int_equal(rk.kernels, 13);
    assert_int_equal(rk.ranks[0].comm_kernels, 4);
    const struct lp_ranks_stage *d = NULL;
    for (size_t s = 0; s < rk.n_stages; s++)
        if (!strcmp(rk.stages[s].name, "decode"))
            d = &rk.stages[s];
    assert_non_null(d);
    assert_int_equal(d->n, 2);
    assert_true(d->wall_min == 400.0 * US && d->wall_max == 500.0 * US);
    assert_true(d->wall_median == 450.0 * US);
    assert_true(fabs(d->wall_spread - 100.0 / 450) < 1e-12);
    assert_int_equal(d->slowest, 1);
    assert_int_equal(d->wait_ns, 60 * US);
    /* the writers say it: the wait and the slowest rank */
    char *text = ranks_text(&rk, 0);
    assert_non_null(strstr(text, "| decode | decode | 2 | 450.0 us | 400.0 us | 500.0 us | "
                                 "22.2 % | rank 1 |"));
    assert_non_null(strstr(text, "3 collectives matched in 1 group (Groups above); 1 of the 7 "
                                 "communication kernels in none"));
    assert_non_null(strstr(text, "| 0 | ranks 0, 1 | 1 | 3 | all-reduce | 0 ns | 160.0 us | "
                                 "60.0 us | rank 1 | - |"));
    free(text);
    lp_ranks_free(&rk);

    /* two hosts, rank 1's clock 5 ms ahead: aligned on the collectives' ends (equal on
     * both ranks here), the waits those of one host */
    k = two_hosts(ar0, ar1);
    for (size_t j = 0; j < k[1].n_coll; j++) {
        k[1].coll[j].start += 5000 * US;
        k[1].coll[j].end += 5000 * US;
    }
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.one_host, 0);
    assert_int_equal(rk.aligned, 1);
    assert_int_equal(rk.n_hosts, 2);
    assert_string_equal(rk.hosts[0].name, "a");
    assert_int_equal(rk.hosts[0].how, LP_CLOCK_HOW_REFERENCE);
    assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_COLLECTIVES);
    assert_int_equal(rk.hosts[1].offset_ns, -5000 * (int64_t)US);
    assert_true(rk.hosts[1].uncertainty_ns == 0);
    assert_int_equal(rk.hosts[1].collectives, 3);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.ranks[0].wait_ns, 60 * US);
    assert_int_equal(rk.ranks[1].wait_ns, 0);
    text = ranks_text(&rk, 0);
    assert_non_null(strstr(text, "| b | 1 | -5.000 ms | 0 ns | 3 collectives |"));
    free(text);
    lp_ranks_free(&rk);

    /* a third host whose process ran no collective: not aligned, the waits computed all
     * the same */
    k = three_ranks((const char *const[3]){"a", "b", "c"},
                    (const uint64_t *const[3]){ar0, ar1, ar1}, 2);
    assert_int_equal(lp_ranks_analyze(k, 3, &rk), LP_OK);
    assert_int_equal(rk.n_hosts, 3);
    assert_int_equal(rk.hosts[2].how, LP_CLOCK_HOW_NONE);
    assert_int_equal(rk.aligned, 1);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.ranks[0].wait_ns, 60 * US);
    lp_ranks_free(&rk);

    /* two collectives only: too few to align, no waits; the unaligned rank in no group */
    k = two_hosts(ar0, ar1);
    k[0].n_coll = k[1].n_coll = 2;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.aligned, 0);
    assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_NONE);
    assert_int_equal(rk.hosts[1].collectives, 2);
    assert_true(isnan(rk.hosts[1].uncertainty_ns));
    assert_int_equal(rk.waits, LP_RANKS_WAIT_HOSTS);
    assert_int_equal(rk.wait_ns, 0);
    assert_int_equal(rk.coll_matched, 0);
    assert_int_equal(rk.n_groups, 0);
    lp_ranks_free(&rk);
}

/* Two groups on one host (ranks 0 and 1, ranks 2 and 3: two tensor-parallel groups) whose
 * all-reduces end 100 us apart: found apart, each with its waits (rank 0 and rank 2 wait 60
 * us for their partner), replicas of each other; the run's end spread is each group's */
static void test_ranks_groups(void **state)
{
    (void)state;
    static const uint64_t ar0[3] = {100 * US, 200 * US, 300 * US};
    static const uint64_t ar1[3] = {120 * US, 210 * US, 330 * US};
    static const char *const rank[4] = {"0", "1", "2", "3"};
    struct lp_rank *k = calloc(4, sizeof *k);
    assert_non_null(k);
    for (size_t i = 0; i < 4; i++) {
        rank_trace(&k[i], rank[i], "h", i < 2 ? 500 * US : 550 * US, i % 2 ? ar1 : ar0, 0);
        for (size_t j = 0; i >= 2 && j < k[i].n_coll; j++)
            k[i].coll[j].end += 100 * US;
    }
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 4, &rk), LP_OK);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.coll_matched, 6);
    assert_int_equal(rk.n_groups, 2);
    for (size_t g = 0; g < 2; g++) {
        const struct lp_ranks_group *gr = &rk.groups[g];
        assert_int_equal(gr->n_members, 2);
        assert_int_equal(gr->members[0], 2 * g);
        assert_int_equal(gr->members[1], 2 * g + 1);
        assert_int_equal(gr->collectives, 3);
        assert_int_equal(gr->wait_ns, 60 * US);
        assert_int_equal(gr->straggler, 2 * g + 1);
        assert_int_equal(gr->replica_of, 0);
        assert_int_equal(gr->ops, LP_COLL_OP_ALL_REDUCE);
        assert_int_equal(gr->wall_ns, g ? 550 * US : 500 * US);
    }
    assert_true(rk.groups[0].vs_fastest == 0);
    assert_true(fabs(rk.groups[1].vs_fastest - 0.1) < 1e-12);
    assert_int_equal(rk.ranks[0].wait_ns, 60 * US);
    assert_int_equal(rk.ranks[2].wait_ns, 60 * US);
    assert_true(rk.coll_end_spread_ns == 0);
    char *text = ranks_text(&rk, 0);
    assert_non_null(strstr(text, "| 1 | ranks 2, 3 | 1 | 3 | all-reduce | 0 ns | 760.0 us | "
                                 "60.0 us | rank 3 | 0 |"));
    assert_non_null(strstr(text, "| of group 0 | 1 | ranks 2, 3 | 550.0 us | +10.0 % |"));
    free(text);
    text = ranks_text(&rk, 1);
    assert_non_null(strstr(text, "\"replica_of\": 0"));
    assert_non_null(strstr(text, "\"member_wait_ns\": [\n        60000,\n        0\n      ]"));
    free(text);
    lp_ranks_free(&rk);
}

/* a rank of the TP x DP layout below: its all-reduces of one kernel name, ending at E[i] */
static void layout_rank(struct lp_rank *k, const char *rank, const uint64_t *e, size_t n)
{
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "rank", rank);
    range(&b, "decode", 1, 0, 5000 * US);
    for (size_t i = 0; i < n; i++)
        kernel_on(&b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, e[i] - 20 * US, e[i]);
    take_rank(&b, k);
}

/* Two TP groups (ranks 0 and 1, 2 and 3) of six all-reduces each and two DP groups (0 and
 * 2, 1 and 3) of three, all of one kernel name, the two replicas 50 us apart: each rank's
 * DP all-reduces are a third of its kernels of that name, under the half a pair needs, so
 * the TP groups are found first and the DP groups among what is left */
static void test_ranks_groups_one_name(void **state)
{
    (void)state;
    uint64_t e[4][9];
    for (size_t r = 0; r < 4; r++)
        for (size_t i = 0; i < 9; i++) /* per step: two TP all-reduces, then the DP one */
            e[r][i] = (1000 + 300 * (i / 3) + 100 * (i % 3)) * US +
                      (i % 3 < 2 && r >= 2 ? 50 * US : (i % 3 == 2 && r % 2 ? 30 * US : 0));
    static const char *const rank[4] = {"0", "1", "2", "3"};
    struct lp_rank *k = calloc(4, sizeof *k);
    assert_non_null(k);
    for (size_t r = 0; r < 4; r++)
        layout_rank(&k[r], rank[r], e[r], 9);
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 4, &rk), LP_OK);
    assert_int_equal(rk.n_groups, 4);
    static const size_t members[4][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
    static const size_t count[4] = {6, 3, 3, 6};
    for (size_t g = 0; g < 4; g++) {
        assert_int_equal(rk.groups[g].members[0], members[g][0]);
        assert_int_equal(rk.groups[g].members[1], members[g][1]);
        assert_int_equal(rk.groups[g].collectives, count[g]);
    }
    assert_int_equal(rk.groups[3].replica_of, 0);
    assert_int_equal(rk.groups[2].replica_of, 1);
    assert_int_equal(rk.coll_unmatched, 0);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    lp_ranks_free(&rk);
}

/* Hosts at the edges: collectives whose ends drift apart across the hosts (groups that
 * never communicate across them: estimates 0, -200 and -400 us against all-reduces of 30 to
 * 40 us) not aligned; a lowest rank without collectives not the reference; an estimate past
 * INT64_MAX not aligned */
static void test_ranks_hosts_edges(void **state)
{
    (void)state;
    static const uint64_t ar0[3] = {100 * US, 200 * US, 300 * US};
    static const uint64_t ar1[3] = {120 * US, 210 * US, 330 * US};
    struct lp_rank *k = two_hosts(ar0, ar1);
    for (size_t j = 0; j < k[1].n_coll; j++) {
        k[1].coll[j].start += 200 * US * j;
        k[1].coll[j].end += 200 * US * j;
    }
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_DISAGREE);
    assert_true(rk.hosts[1].uncertainty_ns == 200.0 * US);
    assert_int_equal(rk.aligned, 0);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_HOSTS);
    char *text = ranks_text(&rk, 0);
    assert_non_null(strstr(text, "| b | 1 | not aligned | 200.0 us | 3 collectives whose ends "
                                 "do not agree on one offset"));
    free(text);
    text = ranks_text(&rk, 1);
    assert_non_null(strstr(text, "\"clock\": \"disagree\",\n      \"offset_ns\": null"));
    free(text);
    lp_ranks_free(&rk);

    /* rank 0 on host "a" ran no collective; ranks 1 and 2 on "b" did: "b" is the reference */
    k = three_ranks((const char *const[3]){"a", "b", "b"},
                    (const uint64_t *const[3]){ar0, ar0, ar1}, 0);
    assert_int_equal(lp_ranks_analyze(k, 3, &rk), LP_OK);
    assert_string_equal(rk.hosts[rk.ref_host].name, "b");
    assert_int_equal(rk.hosts[rk.ref_host].how, LP_CLOCK_HOW_REFERENCE);
    assert_int_equal(rk.aligned, 1);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.ranks[1].wait_ns, 60 * US);
    lp_ranks_free(&rk);

    /* host b's clock past 2^63 ns ahead: an estimate clamped, not aligned */
    k = two_hosts(ar0, ar1);
    for (size_t j = 0; j < k[1].n_coll; j++) {
        k[1].coll[j].start += 1ull << 63;
        k[1].coll[j].end += 1ull << 63;
    }
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_NONE);
    assert_int_equal(rk.hosts[1].collectives, 3);
    assert_int_equal(rk.aligned, 0);
    lp_ranks_free(&rk);
}

/* Every trace of a committed run, analysed and taken; *N gets how many. */
static struct lp_rank *fixture_ranks(const char *name, size_t *n, struct lp_trace ***traces)
{
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/%s/*.lpt", LP_FIXTURES, name);
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    struct lp_rank *k = calloc(g.gl_pathc, sizeof *k);
    *traces = calloc(g.gl_pathc, sizeof **traces);
    assert_non_null(k);
    assert_non_null(*traces);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char err[256];
        assert_int_equal(lp_trace_read(&(*traces)[i], g.gl_pathv[i], err, sizeof err), LP_OK);
        struct lp_run r;
        analyze((*traces)[i], NULL, &r);
        assert_int_equal(lp_rank_take(&r, g.gl_pathv[i], &k[i]), LP_OK);
        lp_run_free(&r);
    }
    *n = g.gl_pathc;
    globfree(&g);
    return k;
}

/* The kernel records and GPU time of the trace named TRACE among TS (N). */
static void trace_totals(struct lp_trace **ts, size_t n, int64_t pid, size_t *kernels,
                         uint64_t *ns)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = lp_trace_meta(ts[i], "pid");
        if (!p || atoll(p) != pid)
            continue;
        *kernels = ts[i]->n_kernels;
        *ns = 0;
        for (size_t j = 0; j < ts[i]->n_kernels; j++)
            *ns += lp_trace_kernel_end(ts[i], &ts[i]->kernels[j]) - ts[i]->kernels[j].start;
        return;
    }
    fail_msg("no trace of pid %lld", (long long)pid);
}

/* The two-H200 fixtures: each process's kernel totals are its trace's; the TP runs match
 * every collective (both ranks ran each the same number of times) and find their waits; the
 * independent processes have no ranks, two GPUs and nothing to match. */
static void test_ranks_fixtures(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int ranked;
        enum lp_ranks_wait waits;
    } runs[] = {{"tp-manual", 1, LP_RANKS_WAIT_DONE},
                {"tp-hf", 1, LP_RANKS_WAIT_DONE},
                {"two-procs", 0, LP_RANKS_WAIT_NO_COMM}};
    for (size_t run = 0; run < sizeof runs / sizeof *runs; run++) {
        size_t n;
        struct lp_trace **ts;
        struct lp_rank *k = fixture_ranks(runs[run].name, &n, &ts);
        assert_int_equal(n, 2);
        struct lp_ranks rk;
        assert_int_equal(lp_ranks_analyze(k, n, &rk), LP_OK);
        assert_int_equal(rk.one_host, 1);
        assert_int_equal(rk.waits, runs[run].waits);
        assert_int_equal(rk.shared_gpus, 0);
        assert_true(rk.ranks[0].has_uuid && rk.ranks[1].has_uuid);
        assert_memory_not_equal(rk.ranks[0].uuid, rk.ranks[1].uuid, 16);
        assert_int_equal(rk.energy_gpus, 2);
        size_t sum_k = 0;
        uint64_t sum_ns = 0;
        for (size_t i = 0; i < n; i++) {
            size_t kernels = 0;
            uint64_t ns = 0;
            trace_totals(ts, n, rk.ranks[i].pid, &kernels, &ns);
            assert_int_equal(rk.ranks[i].kernels, kernels);
            assert_int_equal(rk.ranks[i].kernel_ns, ns);
            sum_k += kernels;
            sum_ns += ns;
            if (runs[run].ranked) {
                assert_int_equal(rk.ranks[i].rank, (int64_t)i);
                assert_int_equal(rk.ranks[i].local_rank, (int64_t)i);
                assert_int_equal(rk.ranks[i].world_size, 2);
                assert_true(rk.ranks[i].comm_kernels > 0);
                assert_true(rk.ranks[i].wait_ns > 0); /* each waits for the other at times */
            } else {
                assert_int_equal(rk.ranks[i].rank, -1);
                assert_int_equal(rk.ranks[i].comm_kernels, 0);
            }
        }
        assert_int_equal(rk.kernels, sum_k);
        assert_int_equal(rk.kernel_ns, sum_ns);
        if (runs[run].ranked) {
            /* every collective matched but tp-hf's first: the only one of its name, it ended
               apart on the two ranks while NCCL connected, and no group was found for it */
            assert_int_equal(rk.ranks[0].comm_kernels, rk.ranks[1].comm_kernels);
            assert_int_equal(rk.n_groups, 1);
            assert_int_equal(rk.coll_kernels, 2 * rk.ranks[0].comm_kernels);
            assert_int_equal(rk.coll_unmatched, run == 1 ? 2 : 0);
            assert_int_equal(rk.coll_matched + (run == 1), rk.ranks[0].comm_kernels);
            assert_true(rk.coll_names_unmatched <= 1);
            assert_true(rk.wait_ns > 0);
        }
        char *text = ranks_text(&rk, 1);
        assert_non_null(strstr(text, "\"schema\": \"llmprof-ranks/1\""));
        free(text);
        lp_ranks_free(&rk);
        for (size_t i = 0; i < n; i++)
            lp_trace_free(ts[i]);
        free(ts);
    }
}

/* The two-H200 tensor-parallel runs with rank 1 moved to a simulated second host whose
 * clock is SHIFT ns off (its collectives' times moved by it, as that host's clock would
 * have them): the offset is recovered from the real collectives' ends within 50 us (issue
 * 50's bound; here within 10 us), and each rank's wait is the one-host wait but for that
 * error on each collective. */
static void test_ranks_two_hosts(void **state)
{
    (void)state;
    static const char *runs[] = {"tp-manual", "tp-hf"};
    static const int64_t shifts[] = {1234567, -987654321};
    for (size_t run = 0; run < 2; run++)
        for (size_t sh = 0; sh < 2; sh++) {
            size_t n;
            struct lp_trace **ts;
            struct lp_rank *k = fixture_ranks(runs[run], &n, &ts);
            struct lp_ranks one;
            assert_int_equal(lp_ranks_analyze(k, n, &one), LP_OK);
            assert_int_equal(one.waits, LP_RANKS_WAIT_DONE);
            struct lp_trace **ts2;
            struct lp_rank *k2 = fixture_ranks(runs[run], &n, &ts2);
            size_t r1 = k2[0].rank == 1 ? 0 : 1;
            free(k2[r1].host);
            k2[r1].host = strdup("sim-host-b");
            for (size_t j = 0; j < k2[r1].n_coll; j++) {
                k2[r1].coll[j].start += (uint64_t)shifts[sh];
                k2[r1].coll[j].end += (uint64_t)shifts[sh];
            }
            struct lp_ranks two;
            assert_int_equal(lp_ranks_analyze(k2, n, &two), LP_OK);
            assert_int_equal(two.one_host, 0);
            assert_int_equal(two.aligned, 1);
            assert_int_equal(two.n_hosts, 2);
            const struct lp_ranks_host *b = &two.hosts[1];
            assert_string_equal(b->name, "sim-host-b");
            assert_int_equal(b->how, LP_CLOCK_HOW_COLLECTIVES);
            /* every collective linked but tp-hf's first (on one host, in no group either) */
            assert_true(b->collectives >= one.coll_matched);
            int64_t err = b->offset_ns + shifts[sh];
            assert_true(llabs(err) <= 10 * (int64_t)US);
            assert_true(b->uncertainty_ns >= 0 && b->uncertainty_ns <= 10.0 * US);
            assert_int_equal(two.waits, LP_RANKS_WAIT_DONE);
            assert_int_equal(two.coll_matched, one.coll_matched);
            for (size_t i = 0; i < n; i++) {
                double d = fabs((double)two.ranks[i].wait_ns - (double)one.ranks[i].wait_ns);
                assert_true(d <= (double)llabs(err) * (double)one.coll_matched);
            }
            char *text = ranks_text(&two, 1), want[128];
            assert_non_null(strstr(text, "\"clocks_aligned\": true"));
            snprintf(want, sizeof want, "\"clock\": \"collectives\",\n      \"offset_ns\": %lld",
                     (long long)b->offset_ns);
            assert_non_null(strstr(text, want));
            free(text);
            lp_ranks_free(&one);
            lp_ranks_free(&two);
            for (size_t i = 0; i < n; i++) {
                lp_trace_free(ts[i]);
                lp_trace_free(ts2[i]);
            }
            free(ts);
            free(ts2);
        }
}

/* The two-H200 run with rank 1 recorded as a simulated second host (LLMPROF_TEST_HOST,
 * LLMPROF_TEST_CLOCK_SHIFT_NS=1234567890: tests/gpu/multi_gpu.sh hosts): its clock offset
 * found within 50 us of the shift (54 ns off on the run), every collective matched and the
 * waits computed on the aligned clock; and the overlapped TP decoder (multi_gpu.sh overlap:
 * each row-parallel GEMM in 4 blocks, each block's all-reduce beside the next block's GEMM)
 * overlaps on both ranks, where the same decoder without it does not (tp-manual). */
static void test_ranks_fixture_hosts_overlap(void **state)
{
    (void)state;
    size_t n;
    struct lp_trace **ts;
    struct lp_rank *k = fixture_ranks("tp-hosts", &n, &ts);
    assert_int_equal(n, 2);
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, n, &rk), LP_OK);
    assert_int_equal(rk.one_host, 0);
    assert_int_equal(rk.aligned, 1);
    assert_int_equal(rk.n_hosts, 2);
    assert_string_equal(rk.hosts[0].name, "vm");
    assert_string_equal(rk.hosts[1].name, "sim-host-b");
    assert_int_equal(rk.hosts[1].ranks, 1);
    assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_COLLECTIVES);
    assert_true(llabs(rk.hosts[1].offset_ns + 1234567890) <= 50 * (int64_t)US);
    assert_true(rk.hosts[1].uncertainty_ns < 1.0 * US);
    assert_int_equal(rk.hosts[1].collectives, rk.coll_matched);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.coll_matched, rk.ranks[0].comm_kernels);
    assert_int_equal(rk.coll_names_unmatched, 0);
    /* the same waits as the run taken on one host, rank 1's times moved back by the offset */
    struct lp_trace **ts1;
    struct lp_rank *k1 = fixture_ranks("tp-hosts", &n, &ts1);
    size_t r1 = k1[0].rank == 1 ? 0 : 1;
    free(k1[r1].host);
    k1[r1].host = strdup("vm");
    for (size_t j = 0; j < k1[r1].n_coll; j++) {
        k1[r1].coll[j].start += (uint64_t)rk.hosts[1].offset_ns;
        k1[r1].coll[j].end += (uint64_t)rk.hosts[1].offset_ns;
    }
    struct lp_ranks one;
    assert_int_equal(lp_ranks_analyze(k1, n, &one), LP_OK);
    assert_int_equal(one.one_host, 1);
    for (size_t i = 0; i < n; i++) {
        assert_true(rk.ranks[i].wait_ns > 0);
        assert_int_equal(rk.ranks[i].wait_ns, one.ranks[i].wait_ns);
    }
    lp_ranks_free(&one);
    lp_ranks_free(&rk);
    for (size_t i = 0; i < n; i++) {
        lp_trace_free(ts[i]);
        lp_trace_free(ts1[i]);
    }
    free(ts);
    free(ts1);

    static const char *runs[] = {"tp-overlap", "tp-manual"};
    for (size_t run = 0; run < 2; run++) {
        k = fixture_ranks(runs[run], &n, &ts);
        assert_int_equal(lp_ranks_analyze(k, n, &rk), LP_OK);
        assert_int_equal(rk.one_host, 1);
        for (size_t i = 0; i < n; i++) {
            assert_true(rk.ranks[i].comm_ns > 0);
            if (run == 0)
                assert_true(rk.ranks[i].comm_overlap_ns > 0 &&
                            rk.ranks[i].comm_overlap_share > 0.01);
            else
                assert_int_equal(rk.ranks[i].comm_overlap_ns, 0);
        }
        lp_ranks_free(&rk);
        for (size_t i = 0; i < n; i++)
            lp_trace_free(ts[i]);
        free(ts);
    }
}

/* A collective of a synthetic rank: kernel NAME from S to E */
struct sc {
    const char *name;
    uint64_t s, e;
};

/* Rank RANK on HOST with the N collectives V, each moved by SHIFT (its host's clock) */
static void coll_rank(struct lp_rank *k, const char *rank, const char *host,
                      const struct sc *v, size_t n, uint64_t shift)
{
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "rank", rank);
    lp_trace_writer_set_meta(b.w, "host", host);
    range(&b, "decode", 1, shift, shift + 20000 * US);
    for (size_t i = 0; i < n; i++)
        kernel_on(&b, v[i].name, 0, v[i].s + shift, v[i].e + shift);
    take_rank(&b, k);
}

#define AR_BF16 "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
#define AR_I64 "ncclDevKernel_AllReduce_Sum_i64_RING_LL"
#define SENDRECV "ncclDevKernel_SendRecv"

/* Steps of irregular length, as real ones are (a steady period would let collectives
 * paired one step off pass for a clock offset): the start of step T, in us */
static uint64_t step_us(size_t t)
{
    return 1000 + 1000 * t + (37 * t * t) % 300;
}

/* Two TP-2 replicas, one per host (host b's clock 5 ms ahead), whose TP all-reduces keep in
 * step 50 us apart, and two DP groups across the hosts (another kernel name) whose
 * all-reduces end together. A steady lag is a clock offset as far as the collectives can
 * tell: the TP all-reduces point to an offset 50 us off the DP groups', and the host is left
 * unaligned (half the candidates' spread its uncertainty) rather than aligned on either.
 * With the lag varying from step to step (as it does: the replicas drift), the TP
 * all-reduces do not end together and the DP groups give the offset, exactly. */
static void test_ranks_lockstep_hosts(void **state)
{
    (void)state;
    for (int drift = 0; drift < 2; drift++) {
        struct lp_rank *k = calloc(4, sizeof *k);
        assert_non_null(k);
        static const char *const rank[4] = {"0", "1", "2", "3"};
        for (size_t r = 0; r < 4; r++) {
            struct sc v[20];
            for (size_t t = 0; t < 10; t++) {
                uint64_t base = step_us(t) * US;
                uint64_t lag = r < 2 ? 0 : (drift ? 50 + (t * 29) % 90 : 50) * US;
                v[2 * t] = (struct sc){AR_BF16, base + lag, base + lag + 20 * US};
                /* each DP group its own end, the second's 30 to 69 us after the first's */
                uint64_t dp = (r % 2 ? 530 + (t * 13) % 40 : 500) * US;
                v[2 * t + 1] = (struct sc){AR_I64, base + dp - 20 * US, base + dp};
            }
            coll_rank(&k[r], rank[r], r >= 2 ? "b" : "a", v, 20, r >= 2 ? 5000 * US : 0);
        }
        struct lp_ranks rk;
        assert_int_equal(lp_ranks_analyze(k, 4, &rk), LP_OK);
        if (drift) {
            assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_COLLECTIVES);
            assert_int_equal(rk.hosts[1].offset_ns, -5000 * (int64_t)US);
            assert_int_equal(rk.n_groups, 4);
            assert_int_equal(rk.coll_unmatched, 0);
            assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
        } else {
            assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_DISAGREE);
            assert_true(rk.hosts[1].uncertainty_ns >= 25.0 * US); /* half the 50 us at least */
            assert_int_equal(rk.aligned, 0);
            assert_int_equal(rk.waits, LP_RANKS_WAIT_HOSTS);
        }
        lp_ranks_free(&rk);
    }
}

/* Host b's rank ran one all-reduce fewer (its recording started later): aligned all the
 * same, its collectives paired from the last */
static void test_ranks_hosts_unequal(void **state)
{
    (void)state;
    struct sc v[21];
    for (size_t t = 0; t < 21; t++)
        v[t] = (struct sc){AR_BF16, step_us(t) * US, (step_us(t) + 20) * US};
    struct lp_rank *k = calloc(2, sizeof *k);
    assert_non_null(k);
    coll_rank(&k[0], "0", "a", v, 21, 0);
    coll_rank(&k[1], "1", "b", v + 1, 20, 5000 * US);
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_COLLECTIVES);
    assert_int_equal(rk.hosts[1].offset_ns, -5000 * (int64_t)US);
    assert_int_equal(rk.hosts[1].collectives, 20);
    assert_int_equal(rk.coll_matched, 20);
    assert_int_equal(rk.coll_unmatched, 1);
    lp_ranks_free(&rk);
}

/* Relations that are not cliques, split: a TP and a DP group of one kernel name run as
 * often (each rank relates to its TP and its DP partner: a ring of four), and a chain of
 * pipeline pairs (0-1, 1-2) on send/receive; one group over hosts a, b, a, b counts two
 * hosts; and two DP all-reduces per rank, too few for a group, are not taken by the TP
 * groups' matching by order */
static void test_ranks_groups_split(void **state)
{
    (void)state;
    static const char *const rank[4] = {"0", "1", "2", "3"};
    struct lp_rank *k = calloc(4, sizeof *k);
    assert_non_null(k);
    for (size_t r = 0; r < 4; r++) {
        struct sc v[20];
        for (size_t t = 0; t < 10; t++) {
            uint64_t base = step_us(t) * US;
            v[2 * t] = (struct sc){AR_BF16, base, base + (r >= 2 ? 70 : 20) * US};
            v[2 * t + 1] = (struct sc){AR_BF16, base + 400 * US,
                                       base + (r % 2 ? 530 : 500) * US};
        }
        coll_rank(&k[r], rank[r], "a", v, 20, 0);
    }
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 4, &rk), LP_OK);
    assert_int_equal(rk.n_groups, 4);
    static const size_t members[4][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
    for (size_t g = 0; g < 4; g++) {
        assert_int_equal(rk.groups[g].members[0], members[g][0]);
        assert_int_equal(rk.groups[g].members[1], members[g][1]);
        assert_int_equal(rk.groups[g].collectives, 10);
    }
    assert_int_equal(rk.coll_unmatched, 0);
    lp_ranks_free(&rk);

    k = calloc(3, sizeof *k);
    assert_non_null(k);
    for (size_t r = 0; r < 3; r++) {
        struct sc v[20];
        size_t n = 0;
        for (size_t t = 0; t < 10; t++) {
            uint64_t base = step_us(t) * US;
            if (r <= 1)
                v[n++] = (struct sc){SENDRECV, base, base + 20 * US};
            if (r >= 1)
                v[n++] = (struct sc){SENDRECV, base + 100 * US, base + 120 * US};
        }
        coll_rank(&k[r], rank[r], "a", v, n, 0);
    }
    assert_int_equal(lp_ranks_analyze(k, 3, &rk), LP_OK);
    assert_int_equal(rk.n_groups, 2);
    assert_int_equal(rk.groups[0].members[1], 1);
    assert_int_equal(rk.groups[1].members[0], 1);
    assert_int_equal(rk.groups[1].members[1], 2);
    assert_int_equal(rk.groups[0].ops, LP_COLL_OP_SEND_RECV);
    assert_int_equal(rk.coll_unmatched, 0);
    lp_ranks_free(&rk);

    static const char *const hosts[4] = {"a", "b", "a", "b"};
    k = calloc(4, sizeof *k);
    assert_non_null(k);
    for (size_t r = 0; r < 4; r++) {
        struct sc v[12];
        for (size_t t = 0; t < 10; t++) {
            uint64_t base = step_us(t) * US;
            v[t] = (struct sc){AR_BF16, base, base + 20 * US};
        }
        for (size_t t = 0; t < 2; t++) /* DP: ends 30 us apart on its two ranks */
            v[10 + t] = (struct sc){AR_I64, (1400 + 1000 * t) * US,
                                    (1500 + 1000 * t + (r >= 2 ? 30 : 0)) * US};
        coll_rank(&k[r], rank[r], hosts[r], v, 12, 0);
    }
    assert_int_equal(lp_ranks_analyze(k, 4, &rk), LP_OK);
    assert_int_equal(rk.aligned, 1);
    assert_int_equal(rk.n_groups, 1);
    assert_int_equal(rk.groups[0].n_members, 4);
    assert_int_equal(rk.groups[0].n_hosts, 2);
    assert_int_equal(rk.groups[0].by_order, 0);
    assert_int_equal(rk.groups[0].collectives, 10);
    assert_int_equal(rk.coll_unmatched, 8);
    lp_ranks_free(&rk);
}

/* The four-H200 pipeline run (multi_gpu.sh groups, tp-pipeline: two stages of TP 2, the
 * hidden states sent from rank 0 to 2 and 1 to 3, the token back, by NCCL send/recv, every
 * kind on one stream): the TP groups of each stage (all-reduces; the last stage's also
 * all-gathers) and the two pipeline pairs (send/receive, 102 each: two per forward pass),
 * replicas of each other; the TP groups are not (the stages run different collectives).
 * The stage-0 ranks' sends end together as they wait for the same step, but are left to
 * the pipeline pairs. */
static void test_ranks_fixture_pipeline(void **state)
{
    (void)state;
    size_t n;
    struct lp_trace **ts;
    struct lp_rank *k = fixture_ranks("tp-pipeline", &n, &ts);
    assert_int_equal(n, 4);
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, n, &rk), LP_OK);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.n_groups, 4);
    static const size_t members[4][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
    static const uint32_t ops[4] = {
        LP_COLL_OP_ALL_REDUCE, LP_COLL_OP_SEND_RECV, LP_COLL_OP_SEND_RECV,
        LP_COLL_OP_ALL_REDUCE | LP_COLL_OP_ALL_GATHER};
    static const size_t count[4] = {204, 102, 102, 255};
    static const size_t replica[4] = {SIZE_MAX, 1, 1, SIZE_MAX};
    for (size_t g = 0; g < 4; g++) {
        const struct lp_ranks_group *gr = &rk.groups[g];
        assert_int_equal(gr->members[0], members[g][0]);
        assert_int_equal(gr->members[1], members[g][1]);
        assert_int_equal(gr->ops, ops[g]);
        assert_int_equal(gr->collectives, count[g]);
        assert_int_equal(gr->replica_of, replica[g]);
    }
    assert_int_equal(rk.coll_unmatched, 0);
    char *text = ranks_text(&rk, 0);
    assert_non_null(strstr(text, "| 1 | ranks 0, 2 | 1 | 102 (3 by order) | send/receive |"));
    free(text);
    lp_ranks_free(&rk);
    for (size_t i = 0; i < n; i++)
        lp_trace_free(ts[i]);
    free(ts);
}

/* A collective whose last rank's kernel ran on 48 us past the other's end (as 9 of 48 did on
 * a four-H200 run) is matched by its order between two that ended together; where one rank
 * ran one more there, none of them is */
static void test_ranks_late_end(void **state)
{
    (void)state;
    static const uint64_t e0[5] = {1000 * US, 1100 * US, 1200 * US, 1300 * US, 1400 * US};
    static const uint64_t e1[5] = {1000 * US, 1100 * US, 1248 * US, 1300 * US, 1400 * US};
    static const uint64_t e0x[6] = {1000 * US, 1100 * US, 1150 * US, 1200 * US, 1300 * US,
                                    1400 * US};
    for (int extra = 0; extra < 2; extra++) {
        struct lp_rank *k = calloc(2, sizeof *k);
        assert_non_null(k);
        layout_rank(&k[0], "0", extra ? e0x : e0, extra ? 6 : 5);
        layout_rank(&k[1], "1", e1, 5);
        struct lp_ranks rk;
        assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
        assert_int_equal(rk.n_groups, 1);
        assert_int_equal(rk.groups[0].collectives, extra ? 4 : 5);
        assert_int_equal(rk.coll_unmatched, extra ? 3 : 0);
        /* the late one: each started 20 us before its end, rank 0 48 us before rank 1 (a
           wait capped at its own 20 us) */
        assert_int_equal(rk.ranks[0].wait_ns, extra ? 0 : 20 * US);
        assert_true(rk.groups[0].end_spread_ns == 0);
        lp_ranks_free(&rk);
    }
}

/* The four-H200 runs (tests/gpu/multi_gpu.sh groups): the TP decoder as two replicas of TP
 * 2, whose ranks all launch every communicator's kernels on one stream. tp-groups: two TP
 * groups (459 all-reduces and all-gathers each) and two DP groups (48 one-element
 * all-reduces, once per decode step), of which 9 and 10 ended 25 to 48 us apart (the last
 * rank's kernel ran on) and are matched by their order; tp-replicas: the TP groups only,
 * replicas that never communicate, the second 23 % slower by the script's own timers (9.47
 * against 7.69 ms per token); tp-groups-hosts: tp-groups with ranks 2 and 3 on a simulated
 * host whose clock is 1,234,567,890 ns ahead, aligned through the DP groups alone. */
static void test_ranks_fixture_groups(void **state)
{
    (void)state;
    static const char *runs[] = {"tp-groups", "tp-replicas", "tp-groups-hosts"};
    for (size_t run = 0; run < 3; run++) {
        size_t n;
        struct lp_trace **ts;
        struct lp_rank *k = fixture_ranks(runs[run], &n, &ts);
        assert_int_equal(n, 4);
        struct lp_ranks rk;
        assert_int_equal(lp_ranks_analyze(k, n, &rk), LP_OK);
        assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
        assert_int_equal(rk.aligned, 1);
        static const size_t tp[2][2] = {{0, 1}, {2, 3}}, dp[2][2] = {{0, 2}, {1, 3}};
        size_t found_tp = 0, found_dp = 0;
        for (size_t g = 0; g < rk.n_groups; g++) {
            const struct lp_ranks_group *gr = &rk.groups[g];
            assert_int_equal(gr->n_members, 2);
            for (size_t q = 0; q < 2; q++) {
                if (gr->members[0] == tp[q][0] && gr->members[1] == tp[q][1]) {
                    found_tp++;
                    assert_int_equal(gr->collectives, 459);
                    assert_int_equal(gr->ops, LP_COLL_OP_ALL_REDUCE | LP_COLL_OP_ALL_GATHER);
                    assert_int_equal(gr->n_hosts, 1);
                }
                if (gr->members[0] == dp[q][0] && gr->members[1] == dp[q][1]) {
                    found_dp++;
                    assert_int_equal(gr->collectives, 48);
                    assert_int_equal(gr->ops, LP_COLL_OP_ALL_REDUCE);
                    if (run == 0) /* the late rank's kernel ran on: 9 and 10 ended apart */
                        assert_int_equal(gr->by_order, q ? 10 : 9);
                    assert_int_equal(gr->n_hosts, run == 2 ? 2 : 1);
                }
            }
            assert_true(gr->end_spread_ns < 2.0 * US);
            assert_int_equal(rk.coll_unmatched, 0);
            /* the group's waits are its members', and the one waited for waits least; a
               rank's waits are the sum over its groups (checked below) */
            assert_int_equal(gr->wait_ns, gr->member_wait_ns[0] + gr->member_wait_ns[1]);
            assert_int_equal(gr->straggler,
                             gr->members[gr->member_wait_ns[1] < gr->member_wait_ns[0]]);
            assert_true(gr->wait_ns > 0);
            assert_true(gr->replica_of != SIZE_MAX); /* each has its replica */
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t sum = 0;
            for (size_t g = 0; g < rk.n_groups; g++)
                for (size_t q = 0; q < 2; q++)
                    sum += rk.groups[g].members[q] == i ? rk.groups[g].member_wait_ns[q] : 0;
            assert_int_equal(rk.ranks[i].wait_ns, sum);
        }
        assert_int_equal(found_tp, 2);
        assert_int_equal(found_dp, run == 1 ? 0 : 2);
        assert_int_equal(rk.n_groups, found_tp + found_dp);
        const struct lp_ranks_group *second = &rk.groups[rk.n_groups - 1]; /* ranks 2, 3 */
        assert_int_equal(second->replica_of, 0);
        if (run == 1)
            assert_true(second->vs_fastest > 0.15 && second->vs_fastest < 0.30);
        if (run == 2) {
            assert_int_equal(rk.n_hosts, 2);
            assert_int_equal(rk.hosts[1].how, LP_CLOCK_HOW_COLLECTIVES);
            assert_true(llabs(rk.hosts[1].offset_ns + 1234567890) <= 50 * (int64_t)US);
            assert_true(rk.hosts[1].uncertainty_ns < 1.0 * US);
        }
        lp_ranks_free(&rk);
        for (size_t i = 0; i < n; i++)
            lp_trace_free(ts[i]);
        free(ts);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comm_overlap),
        cmocka_unit_test(test_ranks_waits),
        cmocka_unit_test(test_ranks_hosts_edges),
        cmocka_unit_test(test_ranks_groups),
        cmocka_unit_test(test_ranks_groups_one_name),
        cmocka_unit_test(test_ranks_fixture_groups),
        cmocka_unit_test(test_ranks_late_end),
        cmocka_unit_test(test_ranks_fixture_pipeline),
        cmocka_unit_test(test_ranks_lockstep_hosts),
        cmocka_unit_test(test_ranks_hosts_unequal),
        cmocka_unit_test(test_ranks_groups_split),
        cmocka_unit_test(test_ranks_communicators),
        cmocka_unit_test(test_ranks_duplicate),
        cmocka_unit_test(test_ranks_fixtures),
        cmocka_unit_test(test_ranks_two_hosts),
        cmocka_unit_test(test_ranks_fixture_hosts_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
