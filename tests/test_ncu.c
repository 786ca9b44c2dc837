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
#include <dirent.h>

#include "llmprof/analyze.h"
#include "llmprof/deep.h"
#include "llmprof/report.h"
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
    for (int m = 0; m < LP_NCU_METRIC_COUNT; m++) /* the sections' metrics; not the extra
                                                     ones deep.sh did not ask for */
        assert_int_equal(has(sq, (enum lp_ncu_metric)m), m < LP_NCU_OPS_BF16);
    assert_int_equal(sq->grid[0], 2);
    assert_int_equal(sq->grid[1], 66);
    assert_int_equal(sq->grid[2], 1);
    assert_int_equal(sq->block[0], 384);
    assert_int_equal(sq->block[1], 1);
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
        "\"launch__grid_size\",\"sm__ops_path_tensor_src_bf16_dst_fp32.sum\","
        "\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\","
        "\"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum\",\"Grid Size\",\"Block Size\"\n"
        "\"\",\"\",\"msecond\",\"%\",\"%\",\"Gbyte/s\",\"Mhz\",\"\",\"Gop\",\"inst\",\"\",\"\","
        "\"\"\n"
        "\"7\",\"k\",\"1.5\",\"10\",\"20\",\"1,200.5\",\"1,755\",\"n/a\",\"2.5\",\"3\",\"4\","
        "\"(4, 22, 1)\",\"(384, 1)\"\n";
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
    assert_true(fabs(k->metric[LP_NCU_OPS_BF16] - 2.5e9) < 1); /* a prefix on a count */
    assert_true(k->metric[LP_NCU_FFMA] == 3 && k->metric[LP_NCU_FADD] == 4);
    assert_int_equal(k->grid[1], 22);
    assert_int_equal(k->block[0], 0); /* not three sizes: left absent */
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

/* ---- a deep dive set in its run: tests/fixtures/deep-* (llmprof deep on the H200) ---- */

struct dived {
    struct lp_trace *t;
    struct lp_run r;
};

static void dive_read(struct dived *d, const char *run, const char *csv)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", LP_FIXTURES, run);
    DIR *dir = opendir(path);
    assert_non_null(dir);
    struct dirent *e;
    char trace[768] = "";
    while ((e = readdir(dir)))
        if (strstr(e->d_name, ".lpt"))
            snprintf(trace, sizeof trace, "%s/%s", path, e->d_name);
    closedir(dir);
    assert_int_equal(lp_trace_read(&d->t, trace, err, sizeof err), LP_OK);
    struct lp_gpu_table *gpus = malloc(sizeof *gpus);
    assert_int_equal(lp_gpu_table_load(gpus, NULL, err, sizeof err), LP_OK);
    struct lp_run_options o = {.gpus = gpus};
    assert_int_equal(lp_run_analyze(d->t, &o, &d->r, err, sizeof err), LP_OK);
    lp_gpu_table_free(gpus);
    free(gpus);
    if (csv) {
        struct lp_ncu_report *n;
        snprintf(path, sizeof path, "%s/%s/deep/%s", LP_FIXTURES, run, csv);
        assert_int_equal(lp_ncu_read(&n, path, err, sizeof err), LP_OK);
        assert_int_equal(lp_run_deep(&d->r, n), LP_OK);
    }
}

static void dive_free(struct dived *d)
{
    lp_run_free(&d->r);
    lp_trace_free(d->t);
}

static const struct lp_deep_row *first_row(const struct lp_run *r, enum lp_stage_kind kind)
{
    for (size_t i = 0; i < r->deep->n_rows; i++)
        if (r->stages[r->deep->rows[i].stage].kind == kind)
            return &r->deep->rows[i];
    return NULL;
}

/* the checks on Llama-3-8B's layer shape: the top decode GEMV memory bound at half of
 * DRAM bandwidth or more, the top prefill GEMM compute bound; each kernel in the stage its
 * NVTX ranges name */
static void test_deep_llama(void **state)
{
    (void)state;
    struct dived d;
    dive_read(&d, "deep-llama3-8b", "ncu-raw.csv");
    const struct lp_deep *dp = d.r.deep;
    assert_int_equal(dp->n_kernels, 21);
    assert_int_equal(dp->unmatched, 0);
    const struct lp_deep_row *dec = first_row(&d.r, LP_STAGE_KIND_DECODE);
    const struct lp_deep_row *pre = first_row(&d.r, LP_STAGE_KIND_PREFILL);
    assert_non_null(dec);
    assert_non_null(pre);
    assert_non_null(strstr(d.r.names[dec->group], "_v_bz_")); /* a GEMV (nvjet's v tiles) */
    assert_int_equal(dec->j.bound, LP_DEEP_BOUND_MEMORY);
    assert_true(dec->j.k->metric[LP_NCU_SOL_DRAM] >= 50);
    assert_int_equal(dec->advice, LP_DEEP_ADVICE_FEWER_BYTES);
    assert_true(dec->intensity < dec->ridge);
    /* the prefill's top GEMM keeps SM and memory (L1, shared) past 60 %: the roofline puts it
     * above the ridge, compute bound */
    assert_int_equal(pre->j.bound, LP_DEEP_BOUND_COMPUTE);
    assert_true(pre->flags & LP_DEEP_ROW_BY_ROOFLINE);
    assert_true(pre->intensity > pre->ridge && pre->ridge > 100);
    assert_int_equal(pre->peak_dtype, LP_DTYPE_BF16);
    for (size_t i = 0; i < dp->n_rows; i++) {
        const struct lp_deep_row *w = &dp->rows[i];
        char want[64];
        snprintf(want, sizeof want, ":%s:", d.r.stages[w->stage].name);
        assert_non_null(strstr(w->j.k->nvtx, want));
        assert_true(w->instances >= 1 && w->run_calls >= w->instances);
        assert_true(i == 0 || w->stage > dp->rows[i - 1].stage ||
                    w->run_ns <= dp->rows[i - 1].run_ns);
    }
    dive_free(&d);
}

/* Tensor-core work tells a matmul its name does not: no kernel of the Llama dive is flagged
 * (its GEMMs are named so, its elementwise kernels counted no tensor FLOPs); the same dive
 * with the prefill's top GEMM named like an elementwise kernel (its category changed before
 * the join) flags that row alone and says it in report.md. */
static void test_deep_tensor_unnamed(void **state)
{
    (void)state;
    struct dived d;
    dive_read(&d, "deep-llama3-8b", "ncu-raw.csv");
    for (size_t i = 0; i < d.r.deep->n_rows; i++)
        assert_false(d.r.deep->rows[i].flags & LP_DEEP_ROW_TENSOR_UNNAMED);
    size_t top = first_row(&d.r, LP_STAGE_KIND_PREFILL)->group;
    dive_free(&d);

    dive_read(&d, "deep-llama3-8b", NULL);
    assert_int_equal(d.r.cats[top], LP_KCAT_GEMM);
    d.r.cats[top] = LP_KCAT_ELEMENTWISE;
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/deep-llama3-8b/deep/ncu-raw.csv", LP_FIXTURES);
    struct lp_ncu_report *n;
    assert_int_equal(lp_ncu_read(&n, path, err, sizeof err), LP_OK);
    assert_int_equal(lp_run_deep(&d.r, n), LP_OK);
    size_t flagged = 0;
    for (size_t i = 0; i < d.r.deep->n_rows; i++) {
        const struct lp_deep_row *w = &d.r.deep->rows[i];
        if (w->flags & LP_DEEP_ROW_TENSOR_UNNAMED) {
            flagged++;
            assert_int_equal(w->group, top);
            assert_true(w->tensor_flops > 1e10);
        }
    }
    assert_true(flagged >= 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_run_md(f, &d.r), 0);
    fclose(f);
    assert_non_null(strstr(buf, "Tensor-core work in kernels whose name says neither GEMM"));
    assert_non_null(strstr(buf, "counted as elementwise."));
    free(buf);
    dive_free(&d);
}

/* a CUDA-graph decode: ncu reached the kernels replayed from the graph (--graph-profiling
 * node) inside the decode range, and the join puts them in decode; the plan asked for what
 * ncu measured (48 kernels) */
static void test_deep_graph(void **state)
{
    (void)state;
    struct dived d;
    char err[256];
    dive_read(&d, "deep-graph-decode", NULL);
    struct lp_deep_plan p;
    struct lp_deep_plan_options o = {.top = 6, .skip = UINT64_MAX, .instances = 2};
    assert_int_equal(lp_deep_plan_make(&d.r, &o, &p, err, sizeof err), LP_OK);
    assert_int_equal(p.profiled, 48);
    lp_deep_plan_free(&p);
    dive_free(&d);

    dive_read(&d, "deep-graph-decode", "ncu-raw.csv");
    const struct lp_deep *dp = d.r.deep;
    assert_int_equal(dp->n_kernels, 48);
    assert_int_equal(dp->unmatched, 0);
    size_t decode_rows = 0;
    for (size_t i = 0; i < dp->n_rows; i++) {
        const struct lp_deep_row *w = &dp->rows[i];
        if (d.r.stages[w->stage].kind != LP_STAGE_KIND_DECODE)
            continue;
        decode_rows++;
        /* every launch of this configuration in decode came from the graph */
        size_t launches = 0;
        for (size_t k = 0; k < d.t->n_kernels; k++) {
            const struct lp_kernel_config *kk = lp_trace_kernel_config(d.t, &d.t->kernels[k]);
            if (lp_run_kernel_group(&d.r, k) != w->group ||
                lp_run_kernel_stage(&d.r, k) != w->stage ||
                memcmp(kk->grid, w->grid, sizeof kk->grid) || memcmp(kk->block, w->block,
                                                                    sizeof kk->block))
                continue;
            launches++;
            assert_true(kk->flags & LP_KERNEL_FLAG_GRAPH);
        }
        assert_int_equal(launches, w->run_calls);
    }
    assert_true(decode_rows >= 6);
    /* the top decode GEMV (4096 -> 2 x 5632, grid 4x22) */
    const struct lp_deep_row *dec = first_row(&d.r, LP_STAGE_KIND_DECODE);
    assert_non_null(strstr(d.r.names[dec->group], "_v_bz_"));
    assert_int_equal(dec->j.bound, LP_DEEP_BOUND_MEMORY);
    assert_true(dec->j.k->metric[LP_NCU_SOL_DRAM] >= 50);
    dive_free(&d);
}

/* the plan: what was asked of ncu on the H200 is what it measured (21 kernels); the range
 * profiler's own WaitNs kernels of a --counters run are not picked */
static void test_deep_plan(void **state)
{
    (void)state;
    struct dived d;
    char err[256];
    dive_read(&d, "deep-llama3-8b", NULL);
    struct lp_deep_plan p;
    struct lp_deep_plan_options o = {.top = 4, .skip = UINT64_MAX, .instances = 2};
    assert_int_equal(lp_deep_plan_make(&d.r, &o, &p, err, sizeof err), LP_OK);
    assert_int_equal(p.profiled, 21);
    assert_int_equal(p.skip, 1);
    assert_true(p.by_nvtx);
    assert_int_equal(p.n_ranges, 2);
    for (size_t i = 0; i < p.n_ranges; i++) {
        assert_int_equal(p.ranges[i].n_names, 1);
        assert_null(p.ranges[i].prefix);
        assert_string_equal(p.ranges[i].names[0], d.r.stages[p.ranges[i].stage].name);
    }
    lp_deep_plan_free(&p);
    dive_free(&d);
    dive_read(&d, "deep-ctr-check", NULL);
    assert_int_equal(lp_deep_plan_make(&d.r, &o, &p, err, sizeof err), LP_OK);
    assert_int_equal(p.profiled, 3); /* what ncu measured: WaitNs left out */
    for (size_t i = 0; i < p.n_picks; i++)
        assert_string_not_equal(d.r.names[p.picks[i].group], "WaitNs");
    lp_deep_plan_free(&p);
    dive_free(&d);
}

/* the deep dive's tensor FLOPs against 2 m n k and against record --counters on the same
 * program: equal */
static void test_deep_flops(void **state)
{
    (void)state;
    struct dived d;
    dive_read(&d, "deep-ctr-check", "ncu-raw.csv");
    const struct lp_deep *dp = d.r.deep;
    assert_int_equal(dp->n_rows, 3);
    int seen = 0;
    for (size_t i = 0; i < dp->n_rows; i++) {
        const struct lp_deep_row *w = &dp->rows[i];
        const struct lp_stage_report *s = &d.r.stages[w->stage];
        if (strstr(d.r.names[w->group], "256x128")) { /* the square GEMM, 4096^3 */
            assert_true(fabs(w->tensor_flops / (2.0 * 4096 * 4096 * 4096) - 1) < 1e-5);
            seen++;
        }
        if (s->kind == LP_STAGE_KIND_DECODE) { /* the stage's one GEMV, counted by both */
            assert_true(s->ctr.segments > 0);
            assert_true(fabs(w->tensor_flops / s->ctr.tensor_flops - 1) < 1e-3);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    dive_free(&d);
}

/* the raw page in ncu's default units (us, Tbyte/s, Ghz ...; what llmprof deep imports now)
 * reads as the one exported with --print-units base (what the fixtures' ncu-raw.csv hold):
 * the import equals ncu's own numbers in either, within what each prints (base units give
 * percentages and ratios two decimals; scaled units about four significant digits). */
static void test_deep_units(void **state)
{
    (void)state;
    const char *runs[] = {"deep-llama3-8b", "deep-ctr-check"};
    for (size_t q = 0; q < 2; q++) {
        char a[512], b[512], err[512];
        snprintf(a, sizeof a, "%s/%s/deep/ncu-raw.csv", LP_FIXTURES, runs[q]);
        snprintf(b, sizeof b, "%s/%s/deep/ncu-default-units.csv", LP_FIXTURES, runs[q]);
        struct lp_ncu_report *base, *dflt;
        assert_int_equal(lp_ncu_read(&base, a, err, sizeof err), LP_OK);
        assert_int_equal(lp_ncu_read(&dflt, b, err, sizeof err), LP_OK);
        assert_int_equal(base->n_kernels, dflt->n_kernels);
        size_t compared = 0;
        for (size_t i = 0; i < base->n_kernels; i++) {
            const struct lp_ncu_kernel *x = &base->kernels[i], *y = &dflt->kernels[i];
            assert_int_equal(x->id, y->id);
            for (int m = 0; m < LP_NCU_METRIC_COUNT; m++) {
                if (!has(x, (enum lp_ncu_metric)m) || !has(y, (enum lp_ncu_metric)m))
                    continue;
                double u = x->metric[m], v = y->metric[m];
                if (fabs(u - v) > 1e-3 * fabs(u) + 0.005) {
                    print_message("%s kernel %u %s: %g against %g\n", runs[q], x->id,
                                  lp_ncu_metric_column((enum lp_ncu_metric)m), u, v);
                    fail();
                }
                compared++;
            }
        }
        assert_true(compared > 20 * base->n_kernels);
        lp_ncu_free(base);
        lp_ncu_free(dflt);
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
        cmocka_unit_test(test_deep_llama),
        cmocka_unit_test(test_deep_tensor_unnamed),
        cmocka_unit_test(test_deep_plan),
        cmocka_unit_test(test_deep_graph),
        cmocka_unit_test(test_deep_flops),
        cmocka_unit_test(test_deep_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
