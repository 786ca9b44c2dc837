/* The reader of Nsight Compute's raw page (src/ncu/raw.c) on real exports from the H200
 * (tests/fixtures/ncu-raw-h200, made by tests/gpu/deep.sh) and on bad ones: values in base
 * units, stall reasons found by their columns' names, and a clear error naming the file and
 * the column for everything it cannot read. Then each kernel judged (src/analyze/deep.c):
 * bound class, occupancy limit, largest stalls. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
#include "llmprof/ncu.h"
#include "llmprof/status.h"

static struct lp_ncu_report *read_fixture(const char *file)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/ncu-raw-h200/%s", LP_FIXTURES, file);
    struct lp_ncu_report *r = NULL;
    int rc = lp_ncu_read(&r, path, err, sizeof err);
    if (rc != LP_OK)
        print_message("%s\n", err);
    assert_int_equal(rc, LP_OK);
    return r;
}

static int has(const struct lp_ncu_kernel *k, enum lp_ncu_metric m)
{
    return (k->valid >> m) & 1;
}

/* the three GEMMs of counters_check: ncu's own numbers, in base units */
static void test_check(void **state)
{
    (void)state;
    struct lp_ncu_report *r = read_fixture("deep-check.raw.csv");
    assert_int_equal(r->n_kernels, 3);
    assert_string_equal(r->device, "NVIDIA H200");
    const struct lp_ncu_kernel *sq = &r->kernels[0], *gemv = &r->kernels[1];
    assert_int_equal(sq->id, 0);
    assert_non_null(strstr(sq->name, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA"));
    assert_true(fabs(sq->metric[LP_NCU_DURATION] - 157440) < 1); /* 157.44 us */
    assert_true(fabs(sq->metric[LP_NCU_SOL_SM] - 90.371997) < 1e-6);
    assert_true(fabs(gemv->metric[LP_NCU_SOL_DRAM] - 76.979393) < 1e-6);
    assert_true(fabs(gemv->metric[LP_NCU_DRAM_BW] - 3.700049e12) < 1e6); /* Tbyte/s */
    assert_true(sq->metric[LP_NCU_SM_CLOCK] > 1e9 && sq->metric[LP_NCU_SM_CLOCK] < 2.1e9);
    for (int m = 0; m < LP_NCU_METRIC_COUNT; m++)
        assert_true(has(sq, (enum lp_ncu_metric)m)); /* the sections deep.sh asks for */
    assert_int_equal((int)sq->metric[LP_NCU_GRID], 132);
    assert_int_equal((int)sq->metric[LP_NCU_BLOCK], 384);
    assert_int_equal((int)sq->metric[LP_NCU_SM_COUNT], 132);
    assert_int_equal((int)sq->metric[LP_NCU_LIMIT_REGISTERS], 1);
    /* the stall reasons ncu 2025.3 reports, gmma (Hopper's warpgroup MMA) among them */
    assert_int_equal(r->n_stalls, 19);
    size_t gmma = r->n_stalls;
    for (size_t i = 0; i < r->n_stalls; i++)
        if (!strcmp(r->stall_names[i], "gmma"))
            gmma = i;
    assert_true(gmma < r->n_stalls);
    assert_true(sq->stall[gmma] > 0);
    lp_ncu_free(r);
}

/* decode's GEMVs and prefill's GEMMs of the HF harness */
static void test_harness(void **state)
{
    (void)state;
    struct lp_ncu_report *d = read_fixture("deep-hf-decode.raw.csv");
    assert_int_equal(d->n_kernels, 4);
    assert_true(fabs(d->kernels[0].metric[LP_NCU_DURATION] - 7680) < 1);
    assert_true(d->kernels[0].metric[LP_NCU_WAVES] < 1); /* 32 blocks on 132 SMs */
    assert_true(fabs(d->kernels[1].metric[LP_NCU_SOL_DRAM] - 52.354704) < 1e-6);
    lp_ncu_free(d);
    struct lp_ncu_report *p = read_fixture("deep-hf-prefill.raw.csv");
    assert_int_equal(p->n_kernels, 4);
    assert_true(p->kernels[0].metric[LP_NCU_TENSOR] > 60);
    /* profiled with --nvtx: each kernel's ranges, the stage among them */
    for (size_t i = 0; i < p->n_kernels; i++)
        assert_non_null(strstr(p->kernels[i].nvtx, ":prefill:"));
    assert_true(p->kernels[0].metric[LP_NCU_LIMIT_BARRIERS] == 21);
    lp_ncu_free(p);
}

/* units converted, thousands separators read, an absent value left absent */
static void test_units(void **state)
{
    (void)state;
    const char *csv =
        "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
        "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
        "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\","
        "\"dram__bytes.sum.per_second\",\"sm__cycles_elapsed.avg.per_second\","
        "\"launch__grid_size\"\n"
        "\"\",\"\",\"msecond\",\"%\",\"%\",\"Gbyte/s\",\"Mhz\",\"\"\n"
        "\"7\",\"k\",\"1.5\",\"10\",\"20\",\"1,200.5\",\"1,755\",\"n/a\"\n";
    char err[512];
    struct lp_ncu_report *r;
    assert_int_equal(lp_ncu_parse(&r, csv, strlen(csv), "t.csv", err, sizeof err), LP_OK);
    const struct lp_ncu_kernel *k = &r->kernels[0];
    assert_int_equal(k->id, 7);
    assert_true(fabs(k->metric[LP_NCU_DURATION] - 1.5e6) < 1e-3);
    assert_true(fabs(k->metric[LP_NCU_DRAM_BW] - 1.2005e12) < 1);
    assert_true(fabs(k->metric[LP_NCU_SM_CLOCK] - 1.755e9) < 1);
    assert_false(has(k, LP_NCU_GRID));
    assert_false(has(k, LP_NCU_SOL_DRAM));
    assert_int_equal(r->n_stalls, 0);
    lp_ncu_free(r);
}

/* each bad input: refused, and the message names the file and what is wrong */
static void test_bad(void **state)
{
    (void)state;
    static const struct {
        const char *csv, *says;
    } cases[] = {
        {"", "empty"},
        {"a,b\n1,2\n", "no 'ID' column"},
        {"\"ID\",\"Kernel Name\"\n\"\",\"\"\n\"0\",\"k\"\n", "no 'gpu__time_duration.sum' column"},
        {"\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
         "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
         "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
         "\"\",\"\",\"fortnight\",\"%\",\"%\"\n\"0\",\"k\",\"1\",\"2\",\"3\"\n",
         "'gpu__time_duration.sum' is in 'fortnight'"},
        {"\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
         "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
         "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
         "\"\",\"\",\"us\",\"%\",\"%\"\n", "no kernel rows"},
        {"\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
         "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
         "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
         "\"0\",\"k\",\"1\",\"2\",\"3\"\n", "not the units row"},
        {"\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
         "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
         "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
         "\"\",\"\",\"us\",\"%\",\"%\"\n\"0\",\"k\",\"1\",\"2\"\n", "row 3 has 4 fields"},
        {"\"ID\",\"Kernel Name\",\"ID\"\n", "column 'ID' appears twice"},
        {"\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
         "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
         "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
         "\"\",\"\",\"us\",\"%\",\"%\"\n\"0\",\"k\",\"1\",\"2\",\"3", "the file is cut"},
        {"\xff\xfeI\0D\0", "NUL byte"},
        {"\xff\xfeID,Kernel Name\n", "UTF-16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[512] = "";
        struct lp_ncu_report *r = (void *)1;
        size_t len = strlen(cases[i].csv);
        if (!strncmp(cases[i].csv, "\xff\xfeI", 3))
            len = 6; /* UTF-16 with its NULs */
        int rc = lp_ncu_parse(&r, cases[i].csv, len, "bad.csv", err, sizeof err);
        print_message("%s\n", err);
        assert_int_equal(rc, LP_ERR_FORMAT);
        assert_null(r);
        assert_true(!strncmp(err, "bad.csv: ", 9));
        assert_non_null(strstr(err, cases[i].says));
    }
    char err[512];
    struct lp_ncu_report *r;
    assert_int_equal(lp_ncu_read(&r, "/nonexistent/x.csv", err, sizeof err), LP_ERR_IO);
    assert_int_equal(lp_ncu_read(&r, "/dev/null", err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not a regular file"));
    /* a FIFO is refused at once, not waited on */
    char fifo[] = "/tmp/lp_ncu_fifo.XXXXXX";
    assert_non_null(mkdtemp(fifo));
    char path[64];
    snprintf(path, sizeof path, "%s/f", fifo);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(lp_ncu_read(&r, path, err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    rmdir(fifo);
    /* more stall columns than ncu writes: refused before a row is read */
    size_t cap = 100 * 80 + 256, n = 0;
    char *many = malloc(cap);
    assert_non_null(many);
    n += (size_t)snprintf(many + n, cap - n, "ID,Kernel Name");
    for (int i = 0; i < 65; i++)
        n += (size_t)snprintf(many + n, cap - n,
                              ",smsp__average_warps_issue_stalled_r%d_per_issue_active.ratio", i);
    n += (size_t)snprintf(many + n, cap - n, "\n");
    assert_int_equal(lp_ncu_parse(&r, many, n, "many.csv", err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "65 warp-stall columns, more than 64"));
    free(many);
}

/* what is forgiven: a UTF-8 byte-order mark, an optional metric in a unit not read (left
 * absent), a required one that is no number (absent: the kernel's bound is then unknown),
 * older ncu's cycle/nsecond and byte/second units */
static void test_forgiven(void **state)
{
    (void)state;
    const char *csv =
        "\xef\xbb\xbf\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
        "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
        "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\","
        "\"launch__waves_per_multiprocessor\",\"sm__cycles_elapsed.avg.per_second\","
        "\"dram__bytes.sum.per_second\",\"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
        "\"\",\"\",\"us\",\"%\",\"%\",\"\",\"cycle/nsecond\",\"Gbyte/second\",\"ratio\"\n"
        "\"0\",\"k\",\"1\",\"n/a\",\"3\",\"2\",\"1.98\",\"10\",\"5\"\n";
    char err[512];
    struct lp_ncu_report *r;
    int rc = lp_ncu_parse(&r, csv, strlen(csv), "f.csv", err, sizeof err);
    if (rc)
        print_message("%s\n", err);
    assert_int_equal(rc, LP_OK);
    const struct lp_ncu_kernel *k = &r->kernels[0];
    assert_false(has(k, LP_NCU_SOL_SM));
    assert_false(has(k, LP_NCU_SOL_DRAM)); /* "ratio" is no percentage */
    assert_true(fabs(k->metric[LP_NCU_SM_CLOCK] - 1.98e9) < 1);
    assert_true(fabs(k->metric[LP_NCU_DRAM_BW] - 1e10) < 1);
    assert_string_equal(k->nvtx, "");
    struct lp_deep_kernel *d;
    assert_int_equal(lp_deep_judge(r, &d), LP_OK);
    assert_int_equal(d[0].bound, LP_DEEP_BOUND_UNKNOWN);
    free(d);
    lp_ncu_free(r);
}

static size_t stall_index(const struct lp_ncu_report *r, const char *name)
{
    for (size_t i = 0; i < r->n_stalls; i++)
        if (!strcmp(r->stall_names[i], name))
            return i;
    return (size_t)-1;
}

/* The classes on the H200 kernels: the square GEMM compute bound (SOL SM 90 %), the
 * 8192 x 8192 GEMV memory bound (77 %), the middle GEMM (both under 60 %, a full wave)
 * latency bound; the HF decode GEMVs too small (0.24 and 0.67 waves: 32 and 88 blocks on 132
 * SMs), prefill's largest GEMM compute bound. Occupancy: registers and shared memory tie at
 * one block per SM. The square GEMM's warps wait most at barriers, then on their warpgroup
 * MMAs (gmma); the GEMV's on memory (long scoreboard). "selected" is never a stall. */
static void test_judge(void **state)
{
    (void)state;
    struct lp_ncu_report *r = read_fixture("deep-check.raw.csv");
    struct lp_deep_kernel *d;
    assert_int_equal(lp_deep_judge(r, &d), LP_OK);
    assert_int_equal(d[0].bound, LP_DEEP_BOUND_COMPUTE);
    assert_int_equal(d[1].bound, LP_DEEP_BOUND_MEMORY);
    assert_int_equal(d[2].bound, LP_DEEP_BOUND_LATENCY);
    assert_int_equal(d[0].limits,
                     1u << LP_DEEP_LIMIT_REGISTERS | 1u << LP_DEEP_LIMIT_SHARED_MEM);
    assert_true(d[0].limit_blocks == 1);
    assert_int_equal((size_t)d[0].stall[0], stall_index(r, "barrier"));
    assert_int_equal((size_t)d[0].stall[1], stall_index(r, "gmma"));
    assert_int_equal((size_t)d[1].stall[0], stall_index(r, "long_scoreboard"));
    for (size_t i = 0; i < r->n_kernels; i++) {
        /* the three largest, largest first, none twice */
        const double *v = r->kernels[i].stall;
        assert_true(d[i].stall[0] >= 0 && d[i].stall[1] >= 0 && d[i].stall[2] >= 0);
        assert_true(v[d[i].stall[0]] >= v[d[i].stall[1]] && v[d[i].stall[1]] >= v[d[i].stall[2]]);
        assert_true(d[i].stall[0] != d[i].stall[1] && d[i].stall[1] != d[i].stall[2] &&
                    d[i].stall[0] != d[i].stall[2]);
        size_t selected = stall_index(r, "selected");
        for (size_t s = 0; s < r->n_stalls; s++)
            if ((int)s != d[i].stall[0] && (int)s != d[i].stall[1] && (int)s != d[i].stall[2] &&
                s != selected)
                assert_true(!(v[s] > v[d[i].stall[2]]));
        assert_true(d[i].stall[0] != (int)selected && d[i].stall[1] != (int)selected &&
                    d[i].stall[2] != (int)selected);
    }
    free(d);
    lp_ncu_free(r);
    r = read_fixture("deep-hf-decode.raw.csv");
    assert_int_equal(lp_deep_judge(r, &d), LP_OK);
    for (size_t i = 0; i < r->n_kernels; i++)
        assert_int_equal(d[i].bound, LP_DEEP_BOUND_SMALL);
    free(d);
    lp_ncu_free(r);
    r = read_fixture("deep-hf-prefill.raw.csv");
    assert_int_equal(lp_deep_judge(r, &d), LP_OK);
    assert_int_equal(d[0].bound, LP_DEEP_BOUND_COMPUTE);
    free(d);
    lp_ncu_free(r);
    /* only the required columns: low throughputs and no waves read as latency bound, no
     * limits and no stalls as none */
    const char *csv =
        "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
        "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
        "\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
        "\"\",\"\",\"us\",\"%\",\"%\"\n\"0\",\"k\",\"1\",\"2\",\"3\"\n";
    char err[256];
    assert_int_equal(lp_ncu_parse(&r, csv, strlen(csv), "t.csv", err, sizeof err), LP_OK);
    assert_int_equal(lp_deep_judge(r, &d), LP_OK);
    assert_int_equal(d[0].bound, LP_DEEP_BOUND_LATENCY);
    assert_int_equal(d[0].limits, 0);
    assert_true(d[0].stall[0] == -1 && d[0].stall[1] == -1 && d[0].stall[2] == -1);
    free(d);
    lp_ncu_free(r);
}

/* the rules at their edges: 60 % bounds, the higher unit names it (a tie: compute); 0.8
 * waves and more is a full enough grid */
static void test_judge_edges(void **state)
{
    (void)state;
    static const struct {
        const char *sm, *mem, *waves;
        enum lp_deep_bound bound;
    } cases[] = {
        {"60", "10", "0.1", LP_DEEP_BOUND_COMPUTE},   {"59.99", "10", "0.8", LP_DEEP_BOUND_LATENCY},
        {"10", "60", "0.1", LP_DEEP_BOUND_MEMORY},    {"70", "70", "1", LP_DEEP_BOUND_COMPUTE},
        {"70", "70.01", "1", LP_DEEP_BOUND_MEMORY},   {"10", "10", "0.79", LP_DEEP_BOUND_SMALL},
        {"10", "10", "0.8", LP_DEEP_BOUND_LATENCY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char csv[1024], err[256];
        snprintf(csv, sizeof csv,
                 "ID,Kernel Name,gpu__time_duration.sum,"
                 "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
                 "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
                 "launch__waves_per_multiprocessor,launch__occupancy_limit_warps,"
                 "launch__occupancy_limit_barriers\n,,us,%%,%%,,block,block\n"
                 "0,k,1,%s,%s,%s,4,2\n", cases[i].sm, cases[i].mem, cases[i].waves);
        struct lp_ncu_report *r;
        assert_int_equal(lp_ncu_parse(&r, csv, strlen(csv), "e.csv", err, sizeof err), LP_OK);
        struct lp_deep_kernel *d;
        assert_int_equal(lp_deep_judge(r, &d), LP_OK);
        assert_int_equal(d[0].bound, cases[i].bound);
        assert_int_equal(d[0].limits, 1u << LP_DEEP_LIMIT_BARRIERS);
        assert_true(d[0].limit_blocks == 2);
        free(d);
        lp_ncu_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_judge_edges),
        cmocka_unit_test(test_forgiven),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_harness),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
