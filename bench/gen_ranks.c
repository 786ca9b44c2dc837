/* A synthetic run of RANKS tensor-parallel ranks on hosts of 8, for `llmprof report` of
 * many ranks and several hosts: each rank decodes STEPS steps of 32 layers (a GEMM, an
 * all-reduce of every rank, another GEMM, an elementwise kernel), each kernel with its launch
 * call. Rank r arrives at each all-reduce 0 to 40 us after the first (rank 3 of each host 30
 * us later still: a straggler), every rank's all-reduce ends at the same moment but for 0 to
 * 2 us, and host h's clock is OFFSET(h) ahead of host 0's: the report must find those
 * offsets from the all-reduces' ends. Not a measurement: only the analysis is checked and
 * timed on it. Writes DIR/trace.rankR.nodeH.PID.lpt and DIR/offsets.txt ("nodeH NS" per
 * host: how far its clock was set ahead).
 * Usage: gen_ranks DIR RANKS STEPS */
#include <stdio.h>
#include <stdlib.h>

#include "llmprof/trace.h"

#define PER_HOST 8
#define LAYERS 32

/* host H's clock ahead of host 0's, ns */
static uint64_t host_offset(unsigned h)
{
    return h * 250000ull + (h % 3) * 13000ull + h * h * 7ull;
}

/* a deterministic number in [0, N) for (A, B, C) */
static uint64_t spread(uint64_t a, uint64_t b, uint64_t c, uint64_t n)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ c * 0x165667b19e3779f9ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x % n;
}

static int rank_trace(const char *dir, unsigned rank, unsigned ranks, unsigned steps)
{
    unsigned host = rank / PER_HOST;
    char path[4096], v[32];
    snprintf(path, sizeof path, "%s/trace.rank%u.node%u.%u.lpt", dir, rank, host, 1000 + rank);
    struct lp_trace_writer *w;
    char err[256];
    if (lp_trace_writer_open(&w, path, NULL, err, sizeof err) != LP_OK) {
        fprintf(stderr, "gen_ranks: %s\n", err);
        return 1;
    }
    lp_trace_writer_set_meta(w, "command", "bench/gen_ranks (synthetic)");
    snprintf(v, sizeof v, "node%u", host);
    lp_trace_writer_set_meta(w, "host", v);
    snprintf(v, sizeof v, "%u", rank);
    lp_trace_writer_set_meta(w, "rank", v);
    snprintf(v, sizeof v, "%u", rank % PER_HOST);
    lp_trace_writer_set_meta(w, "local_rank", v);
    snprintf(v, sizeof v, "%u", ranks);
    lp_trace_writer_set_meta(w, "world_size", v);
    snprintf(v, sizeof v, "%u", 1000 + rank);
    lp_trace_writer_set_meta(w, "pid", v);
    int rc = lp_trace_writer_write_header(w);
    static const char *const names[] = {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
                                        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                                        "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN",
                                        "silu_and_mul_kernel"};
    lp_str id[4], launch = lp_trace_writer_intern(w, "cudaLaunchKernel");
    for (int i = 0; i < 4; i++)
        id[i] = lp_trace_writer_intern(w, names[i]);
    struct lp_record r = {.type = LP_REC_DEVICE};
    r.u.device = (struct lp_device){.id = rank % PER_HOST,
                                    .name = lp_trace_writer_intern(w, "NVIDIA H200"),
                                    .cc_major = 9, .sm_count = 132};
    r.u.device.uuid[0] = (uint8_t)rank;
    r.u.device.uuid[1] = (uint8_t)(rank >> 8);
    r.u.device.uuid[15] = 0x42;
    rc |= lp_trace_writer_add(w, &r);
    const uint64_t shift = host_offset(host);
    uint64_t t = 1000000000ull; /* the true time: the same schedule on every rank */
    uint32_t corr = 1;
    for (unsigned s = 0; s < steps && rc == 0; s++) {
        r.type = LP_REC_MARKER;
        char name[48];
        snprintf(name, sizeof name, "decode step=%u tokens=1", s);
        r.u.marker = (struct lp_marker){.timestamp = t + shift, .id = s + 1,
                                        .flags = LP_MARKER_FLAG_START,
                                        .name = lp_trace_writer_intern(w, name), .thread = 1};
        rc |= lp_trace_writer_add(w, &r);
        for (unsigned l = 0; l < LAYERS; l++) {
            /* this rank's arrival at the layer's all-reduce, and the moment it ends */
            uint64_t arrive = t + 20000 + spread(rank, s, l, 40000) + (rank % PER_HOST == 3) * 30000;
            uint64_t last = t + 20000 + 40000 + 30000, end = last + 8000 + spread(s, l, rank, 2000);
            uint64_t span[4][2] = {{t, t + 18000},
                                   {arrive, end},
                                   {end + 1000, end + 16000},
                                   {end + 17000, end + 20000}};
            for (int k = 0; k < 4; k++) {
                r.type = LP_REC_API;
                r.u.api = (struct lp_api){.start = span[k][0] - 3000 + shift,
                                          .end = span[k][0] - 1000 + shift, .correlation = corr,
                                          .thread = 1, .domain = LP_API_DOMAIN_RUNTIME,
                                          .cbid = 211, .name = launch};
                rc |= lp_trace_writer_add(w, &r);
                r.type = LP_REC_KERNEL;
                r.u.kernel = (struct lp_kernel){.start = span[k][0] + shift,
                                                .end = span[k][1] + shift, .name = id[k],
                                                .correlation = corr++, .device = rank % PER_HOST,
                                                .stream = k == 1 ? 21 : 7, .grid = {132, 1, 1},
                                                .block = {128, 1, 1}, .registers = 64};
                rc |= lp_trace_writer_add(w, &r);
            }
            t = last + 8000 + 2000 + 21000; /* after every rank's end */
        }
        r.type = LP_REC_MARKER;
        r.u.marker = (struct lp_marker){.timestamp = t + shift, .id = s + 1,
                                        .flags = LP_MARKER_FLAG_END, .thread = 1};
        rc |= lp_trace_writer_add(w, &r);
    }
    rc |= lp_trace_writer_close(w);
    if (rc)
        fprintf(stderr, "gen_ranks: writing %s failed\n", path);
    return rc != 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: gen_ranks DIR RANKS STEPS\n");
        return 2;
    }
    unsigned ranks = (unsigned)atoi(argv[2]), steps = (unsigned)atoi(argv[3]);
    if (ranks < 1 || ranks > 4096 || steps < 1 || steps > 100000) {
        fprintf(stderr, "gen_ranks: RANKS 1..4096, STEPS 1..100000\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/offsets.txt", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    for (unsigned h = 0; h * PER_HOST < ranks; h++)
        fprintf(f, "node%u %llu\n", h, (unsigned long long)host_offset(h));
    fclose(f);
    for (unsigned r = 0; r < ranks; r++)
        if (rank_trace(argv[1], r, ranks, steps))
            return 1;
    return 0;
}
