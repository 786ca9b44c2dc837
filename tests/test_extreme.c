/* Recorded quantities at the edges of what a CRC-valid trace can hold (issue 52): an
 * allocation of INT64_MAX bytes, allocations summing past INT64_MAX and UINT64_MAX, copies
 * and sets of UINT64_MAX bytes, a kernel that ends before it starts, times near UINT64_MAX,
 * durations near 2^62 under a header that allows them, an energy counter that goes back.
 * Each is analysed and written by every writer (report.md, report.json, the CSVs, the
 * SQLite export, Perfetto JSON) to temporary files; sums saturate at INT64_MAX (what JSON
 * readers and SQLite hold) instead of wrapping, and no output holds a negative byte count or
 * duration. Under the sanitizer build an overflow of a signed sum aborts the test. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
#include "llmprof/report.h"
#include "tracebuild.h"

#define GIB 1073741824ull

/* ---- records tracebuild.h has no helper for ---- */

/* tb_open with the recording window of the header (START 0: none), so that the plausibility
 * pass keeps what lies inside it */
static void open_window(struct tb *b, uint64_t start)
{
    snprintf(b->path, sizeof b->path, "/tmp/lp_test_extreme.XXXXXX");
    int fd = mkstemp(b->path);
    assert_true(fd >= 0);
    close(fd);
    unlink(b->path);
    char err[256], v[32];
    assert_int_equal(lp_trace_writer_open(&b->w, b->path, NULL, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(b->w, "pid", "42");
    if (start) {
        snprintf(v, sizeof v, "%llu", (unsigned long long)start);
        lp_trace_writer_set_meta(b->w, "start_trace_ns", v);
    }
    assert_int_equal(lp_trace_writer_write_header(b->w), LP_OK);
    b->next_id = 1;
    b->next_corr = 1;
}

static void end_window(struct tb *b, uint64_t end)
{
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)end);
    lp_trace_writer_set_meta(b->w, "end_trace_ns", v);
}

static void memory(struct tb *b, uint32_t op, uint64_t ts, uint64_t address, uint64_t bytes)
{
    struct lp_record r = {.type = LP_REC_MEMORY};
    r.u.memory = (struct lp_memory){.timestamp = ts, .address = address, .bytes = bytes,
                                    .op = op, .memory_kind = 3};
    add(b, &r);
}

static void copy(struct tb *b, uint64_t s, uint64_t e, uint64_t bytes, uint32_t copy_kind)
{
    struct lp_record r = {.type = LP_REC_MEMCPY};
    r.u.memcpy = (struct lp_memcpy){.start = s, .end = e, .bytes = bytes, .stream = 7,
                                    .correlation = b->next_corr++, .copy_kind = copy_kind,
                                    .src_kind = 2, .dst_kind = 3};
    add(b, &r);
}

static void set(struct tb *b, uint64_t s, uint64_t e, uint64_t bytes)
{
    struct lp_record r = {.type = LP_REC_MEMSET};
    r.u.memset = (struct lp_memset){.start = s, .end = e, .bytes = bytes, .stream = 7,
                                    .correlation = b->next_corr++, .memory_kind = 3};
    add(b, &r);
}

static void nvml(struct tb *b, uint64_t ts, uint32_t power_mw, uint64_t energy_mj)
{
    struct lp_record r = {.type = LP_REC_NVML};
    r.u.nvml = (struct lp_nvml_sample){
        .timestamp = ts, .valid = LP_NVML_FIELD_POWER | LP_NVML_FIELD_ENERGY |
                                  LP_NVML_FIELD_MEM_USED,
        .power_mw = power_mw, .energy_mj = energy_mj, .mem_used = UINT64_MAX};
    add(b, &r);
}

static void overhead(struct tb *b, uint32_t thread, uint64_t s, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_OVERHEAD};
    r.u.overhead = (struct lp_overhead){.start = s, .end = e, .kind = 1u << 16, .thread = thread};
    add(b, &r);
}

static void loss(struct tb *b, uint64_t count)
{
    struct lp_record r = {.type = LP_REC_LOSS};
    r.u.loss = (struct lp_loss){.source = LP_LOSS_SOURCE_CUPTI_DROPPED, .count = count,
                                .what = lp_trace_writer_intern(b->w, "dropped")};
    add(b, &r);
}

static void window(struct tb *b, uint64_t s, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_WINDOW};
    r.u.window = (struct lp_window){.start = s, .end = e, .thread = 1};
    add(b, &r);
}

/* a bf16 cublasGemmEx call M x N x 4096 on thread 1 from A to E (host times) */
static void gemm(struct tb *b, uint64_t a, uint64_t e, uint64_t m, uint64_t n)
{
    struct lp_record r = {.type = LP_REC_GEMM};
    r.u.gemm = (struct lp_gemm){.start = a, .end = e, .thread = 1,
                                .api = lp_trace_writer_intern(b->w, "cublasGemmEx"), .m = m,
                                .n = n, .k = 4096, .batch = 1, .transa = 1, .a_type = 14,
                                .b_type = 14, .c_type = 14, .d_type = 14, .compute_type = 68,
                                .algo = -1, .epilogue = 1};
    add(b, &r);
}

/* a kernel of CUDA graph GRAPH, launched (cudaGraphLaunch) on thread 1 at LAUNCH */
static void graph_kernel(struct tb *b, uint32_t graph, uint64_t launch, uint64_t s, uint64_t e)
{
    uint32_t corr = b->next_corr++;
    api(b, "cudaGraphLaunch", 1, launch, corr);
    struct lp_record r = {.type = LP_REC_KERNEL};
    r.u.kernel = (struct lp_kernel){.start = s, .end = e, .correlation = corr, .stream = 7,
                                    .name = lp_trace_writer_intern(b->w, "gemm_graph"),
                                    .graph_id = graph, .graph_node_id = 1,
                                    .flags = LP_KERNEL_FLAG_GRAPH};
    add(b, &r);
}

/* ---- what every output must hold ---- */

/* Times of the trace clock, not sums: past INT64_MAX (near the clock's end) report.json's
 * writer casts them to a negative json_int_t, its own to change; they are not checked. */
static const char *const clock_keys[] = {"first_ns", "last_ns", "start_ns", "end_ns",
                                         "busy_bins_from_ns", "t0_ns"};

/* No integer under a key that counts bytes or nanoseconds is negative (a wrapped sum, or a
 * value past INT64_MAX cast to json_int_t); reals are not checked. */
static void no_negative(json_t *v, const char *key, const char *where)
{
    for (size_t i = 0; key && i < sizeof clock_keys / sizeof *clock_keys; i++)
        if (!strcmp(key, clock_keys[i]))
            return;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
            no_negative(x, k, where);
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            no_negative(json_array_get(v, i), key, where);
    } else if (json_is_integer(v) && key &&
               (strstr(key, "bytes") || strstr(key, "_ns") || !strcmp(key, "dur"))) {
        if (json_integer_value(v) < 0)
            fail_msg("%s: %s is %lld", where, key, (long long)json_integer_value(v));
    }
}

static char *write_file(int (*fn)(FILE *, const struct lp_run *), const struct lp_run *r,
                        const char *name)
{
    char path[] = "/tmp/lp_extreme_out.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    assert_non_null(f);
    if (fn(f, r) != 0)
        fail_msg("%s: the writer failed", name);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    char *s = malloc((size_t)len + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)len, f), (size_t)len);
    s[len] = 0;
    fclose(f);
    unlink(path);
    return s;
}

static int perfetto_all(FILE *f, const struct lp_run *r)
{
    return lp_report_perfetto(f, r, 0, 0);
}

/* One integer a query on DB answers. */
static int64_t query_i64(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Every writer on R, into temporary files: each succeeds, the JSON parses and counts no
 * negative bytes or durations, the database holds none either. */
static void write_all(const struct lp_run *r)
{
    static const struct {
        const char *name;
        int (*fn)(FILE *, const struct lp_run *);
    } text[] = {
        {"report.md", lp_report_run_md},       {"summary.md", lp_report_summary_md},
        {"report.html", lp_report_run_html},   {"kernels.csv", lp_report_kernels_csv},
        {"operators.csv", lp_report_operators_csv}, {"stages.csv", lp_report_stages_csv},
        {"gemms.csv", lp_report_gemms_csv},    {"iterations.csv", lp_report_iterations_csv},
        {"operator_shapes.csv", lp_report_operator_shapes_csv},
    };
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        char *s = write_file(text[i].fn, r, text[i].name);
        /* a count past INT64_MAX cast to a signed integer prints near -2^63 */
        const char *w = strstr(s, "-922337203685477");
        if (w)
            fail_msg("%s holds a wrapped number: ...%.160s", text[i].name, w > s + 80 ? w - 80 : s);
        free(s);
    }
    json_error_t je;
    char *s = write_file(lp_report_run_json, r, "report.json");
    json_t *root = json_loads(s, 0, &je);
    if (!root)
        fail_msg("report.json: %s at line %d", je.text, je.line);
    no_negative(root, NULL, "report.json");
    json_decref(root);
    free(s);
    s = write_file(perfetto_all, r, "trace.json");
    /* a record's own value (a copy of UINT64_MAX bytes) is written as it is: past json_int_t */
    root = json_loads(s, JSON_DECODE_INT_AS_REAL, &je);
    if (!root)
        fail_msg("trace.json: %s at line %d", je.text, je.line);
    json_t *ev = json_object_get(root, "traceEvents");
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *dur = json_object_get(json_array_get(ev, i), "dur");
        if (dur && json_number_value(dur) < 0)
            fail_msg("trace.json: a slice lasting %g us", json_number_value(dur));
    }
    json_decref(root);
    free(s);
    char path[] = "/tmp/lp_extreme_db.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *db = NULL;
    char err[512] = "";
    assert_int_equal(lp_sqlite_open(&db, path, err, sizeof err), 0);
    if (lp_sqlite_add_trace(db, 1, "extreme", r, err, sizeof err) != 0)
        fail_msg("sqlite: %s", err);
    assert_int_equal(lp_sqlite_close(db, err, sizeof err), 0);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    static const char *const checks[] = {
        "SELECT COUNT(*) FROM memcpys WHERE bytes < 0 OR start_ns < 0 OR end_ns < start_ns",
        "SELECT COUNT(*) FROM memsets WHERE bytes < 0 OR start_ns < 0 OR end_ns < start_ns",
        "SELECT COUNT(*) FROM kernels WHERE start_ns < 0 OR end_ns < start_ns",
        "SELECT COUNT(*) FROM ranges WHERE start_ns < 0 OR end_ns < start_ns",
        "SELECT COUNT(*) FROM nvml WHERE ts_ns < 0 OR mem_used_bytes < 0 OR energy_j < 0",
        "SELECT COUNT(*) FROM traces WHERE first_ns < 0 OR last_ns < first_ns",
    };
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++)
        if (query_i64(db, checks[i]) != 0)
            fail_msg("%s: not 0", checks[i]);
    sqlite3_close(db);
    unlink(path);
}

/* ---- the cases ---- */

/* An allocation of INT64_MAX bytes on top of 1944521688 held (the overflow), and
 * its free: the peak saturates at INT64_MAX, and what is held after the free is exact. */
static void test_alloc_int64_max(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    range(&b, "decode", 1, 200000, 300000);
    kernel(&b, "gemm_a", 1, 2000, 3000, 50000);
    kernel(&b, "gemm_b", 1, 201000, 202000, 250000);
    memory(&b, LP_MEMORY_OP_ALLOC, 1500, 0x1000, 1944521688);
    memory(&b, LP_MEMORY_OP_ALLOC, 4000, 0x2000, INT64_MAX);
    memory(&b, LP_MEMORY_OP_FREE, 6000, 0x2000, INT64_MAX);
    memory(&b, LP_MEMORY_OP_ALLOC, 210000, 0x3000, 100);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.peak_alloc_bytes, INT64_MAX);
    assert_int_equal(stage(&r, "prefill")->peak_alloc_bytes, INT64_MAX);
    /* the free of INT64_MAX left the first allocation held: 1944521688 + 100 in decode */
    assert_int_equal(stage(&r, "decode")->peak_alloc_bytes, 1944521688ull + 100);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Allocations whose sum passes INT64_MAX, then UINT64_MAX, and one of UINT64_MAX bytes:
 * each held sum saturates at INT64_MAX; frees of more than is held leave 0. */
static void test_alloc_sums(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    range(&b, "decode", 1, 200000, 300000);
    kernel(&b, "gemm_a", 1, 2000, 3000, 50000);
    kernel(&b, "gemm_b", 1, 201000, 202000, 250000);
    for (int i = 0; i < 5; i++) /* 2^62 each: 2^63 after two, past 2^64 after four */
        memory(&b, LP_MEMORY_OP_ALLOC, 2000 + 100 * (uint64_t)i, 0x1000 * (uint64_t)(i + 1),
               1ull << 62);
    memory(&b, LP_MEMORY_OP_ALLOC, 3000, 0x9000, UINT64_MAX);
    for (int i = 0; i < 5; i++)
        memory(&b, LP_MEMORY_OP_FREE, 4000 + 100 * (uint64_t)i, 0x1000 * (uint64_t)(i + 1),
               1ull << 62);
    memory(&b, LP_MEMORY_OP_FREE, 5000, 0x9000, UINT64_MAX);
    memory(&b, LP_MEMORY_OP_FREE, 6000, 0xa000, UINT64_MAX); /* allocated before recording */
    memory(&b, LP_MEMORY_OP_ALLOC, 210000, 0xb000, 4 * GIB);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.peak_alloc_bytes, INT64_MAX);
    assert_int_equal(stage(&r, "prefill")->peak_alloc_bytes, INT64_MAX);
    assert_int_equal(stage(&r, "decode")->peak_alloc_bytes, 4 * GIB);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Copies and sets of UINT64_MAX bytes beside small ones: the byte totals saturate at
 * INT64_MAX (they wrapped to the small ones' sum), per direction and per stage. */
static void test_copy_bytes(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    kernel(&b, "gemm_a", 1, 2000, 3000, 50000);
    copy(&b, 51000, 52000, UINT64_MAX, 1);
    copy(&b, 53000, 54000, 10, 1);
    copy(&b, 55000, 56000, INT64_MAX, 2);
    copy(&b, 57000, 58000, INT64_MAX, 2);
    copy(&b, 59000, 60000, 1000, 8);
    set(&b, 61000, 62000, UINT64_MAX);
    set(&b, 63000, 64000, 5);
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.memcpy_bytes[0], INT64_MAX);
    assert_int_equal(r.timeline.memcpy_bytes[1], INT64_MAX);
    assert_int_equal(r.timeline.memcpy_bytes[2], 1000);
    assert_int_equal(r.timeline.memset_bytes, INT64_MAX);
    const struct lp_stage_report *s = stage(&r, "prefill");
    assert_non_null(s);
    assert_int_equal(s->memcpy_bytes[0], INT64_MAX);
    assert_int_equal(s->memcpy_bytes[1], INT64_MAX);
    assert_int_equal(s->memset_bytes, INT64_MAX);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A kernel that ends before it starts is left out by the reader (counted as implausible);
 * what remains analyses as usual. */
static void test_end_before_start(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    range(&b, "prefill", 1, 1000, 100000);
    kernel(&b, "gemm_a", 1, 2000, 3000, 50000);
    kernel(&b, "gemm_back", 1, 51000, 60000, 52000);
    copy(&b, 70000, 61000, 100, 1);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 2);
    assert_int_equal(t->n_kernels, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.timeline.busy_ns, 47000);
    assert_int_equal(r.all_kernels.gpu_ns, 47000);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Every time near UINT64_MAX (a recording the records alone place there): the bins, gaps,
 * busy time and spans stay within the recording, none wraps past 2^64. */
static void test_times_near_max(void **state)
{
    (void)state;
    const uint64_t t0 = UINT64_MAX - 1000000;
    struct tb b;
    tb_open(&b);
    range(&b, "warmup", 1, t0, t0 + 1000);
    range(&b, "prefill", 1, t0 + 2000, t0 + 500000);
    range(&b, "decode", 1, t0 + 600000, UINT64_MAX - 1);
    kernel(&b, "gemm_w", 1, t0 + 10, t0 + 100, t0 + 900);
    kernel(&b, "gemm_a", 1, t0 + 2100, t0 + 3000, t0 + 400000);
    kernel(&b, "gemm_b", 1, t0 + 600100, t0 + 601000, UINT64_MAX - 3);
    kernel(&b, "gemm_c", 1, t0 + 999000, UINT64_MAX - 2, UINT64_MAX - 1);
    copy(&b, t0 + 450000, t0 + 460000, 1 << 20, 1);
    memory(&b, LP_MEMORY_OP_ALLOC, t0 + 2500, 0x1000, 1 << 30);
    nvml(&b, t0 + 1, 300000, 5000);
    nvml(&b, t0 + 500001, 400000, 6000);
    nvml(&b, UINT64_MAX - 1, 350000, 7000);
    overhead(&b, 1, t0 + 2200, t0 + 2900);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_true(r.timeline.last_ns >= r.timeline.first_ns);
    assert_true(r.timeline.busy_ns <= r.timeline.last_ns - r.timeline.first_ns);
    assert_true(r.timeline.n_bins > 0);
    for (size_t i = 0; i < r.timeline.n_bins; i++) {
        assert_true(r.timeline.bins[i].start >= r.timeline.bins_from_ns &&
                    r.timeline.bins[i].start <= r.timeline.last_ns);
        if (!(r.timeline.bins[i].busy >= 0 && r.timeline.bins[i].busy <= 1.0001))
            fail_msg("bin %zu: busy %g", i, (double)r.timeline.bins[i].busy);
    }
    assert_true(r.timeline.busy_share >= 0 && r.timeline.busy_share <= 1);
    for (size_t i = 0; i < r.timeline.n_top_gaps; i++)
        assert_true(r.timeline.top_gaps[i].dur <= r.timeline.last_ns - r.timeline.first_ns);
    assert_true(r.power.energy_j >= 0 && r.power.energy_j < 10);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* A header whose recording spans the whole clock lets long durations through: kernels,
 * copies and overhead records of 0.75 x 2^63 ns, overlapping, sum past INT64_MAX; kernel,
 * communication and overhead times saturate there, min, max and median of durations past
 * 68 s are exact, and an energy counter that goes back (a driver reload) adds no energy. */
static void test_long_durations(void **state)
{
    (void)state;
    const uint64_t d = (1ull << 62) + (1ull << 61);
    struct tb b;
    open_window(&b, 1);
    range(&b, "prefill", 1, 10, 5000 + d);
    for (int i = 0; i < 3; i++)
        kernel(&b, "gemm_a", 1, 100 + 10 * (uint64_t)i, 1000, 1000 + d);
    kernel(&b, "nccl_allreduce", 1, 400, 500, 500 + d);
    kernel(&b, "nccl_allreduce", 1, 600, 700, 700 + d / 2);
    kernel(&b, "nccl_allreduce", 1, 650, 800, 800 + d / 4);
    copy(&b, 4000, 4000 + d / 2, UINT64_MAX, 1);
    overhead(&b, 1, 20, 20 + d);
    overhead(&b, 1, 30, 30 + d);
    nvml(&b, 50, 300000, UINT64_MAX - 1000);
    nvml(&b, 50 + d / 2, UINT32_MAX, 5); /* back to 5: a reset, not 2^64 mJ */
    nvml(&b, 50 + d, UINT32_MAX, 9005);
    end_window(&b, UINT64_MAX - 10); /* the header reads no number quite as large as UINT64_MAX */
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.all_kernels.gpu_ns, INT64_MAX);
    const struct lp_stage_report *s = stage(&r, "prefill");
    assert_non_null(s);
    assert_int_equal(s->gpu_ns, INT64_MAX);
    assert_int_equal(r.measured_gpu_ns, INT64_MAX);
    size_t seen = 0;
    for (size_t i = 0; i < r.all_kernels.n; i++) {
        const struct lp_kernel_row *k = &r.all_kernels.v[i];
        const char *name = r.names[k->group];
        if (!strcmp(name, "gemm_a")) {
            assert_int_equal(k->total_ns, INT64_MAX);
            assert_int_equal(k->median_ns, d);
            seen++;
        } else if (!strcmp(name, "nccl_allreduce")) {
            assert_int_equal(k->total_ns, INT64_MAX);
            assert_int_equal(k->min_ns, d / 4);
            assert_int_equal(k->max_ns, d);
            assert_int_equal(k->median_ns, d / 2);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    assert_int_equal(r.comm.ns, INT64_MAX);
    assert_true(r.comm.overlap_ns <= r.comm.ns);
    assert_true(r.timeline.busy_ns <= d + 10000);
    assert_true(r.timeline.memcpy_bytes[0] == INT64_MAX && s->memcpy_bytes[0] == INT64_MAX);
    assert_int_equal(r.overhead.n_rows, 1);
    assert_int_equal(r.overhead.rows[0].total_ns, INT64_MAX);
    assert_int_equal(r.overhead.program_ns[r.overhead.rows[0].cls], INT64_MAX);
    /* 9 J counted after the reset; the difference to the first sample wrapped to 1.8e16 J */
    assert_true(r.power.energy_j > 8.9 && r.power.energy_j < 9.1);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Durations past INT64_MAX (a kernel of 0.9 x 2^64 ns): a kernel row's median of two does
 * not wrap past 2^64, and every duration it reports stops at INT64_MAX. Analysis only: the
 * report writers' rounding of such times is theirs. */
static void test_durations_past_int64(void **state)
{
    (void)state;
    const uint64_t d = UINT64_MAX / 10 * 9;
    struct tb b;
    open_window(&b, 1);
    kernel(&b, "gemm_a", 1, 100, 1000, 1000 + d);
    kernel(&b, "gemm_a", 1, 200, 2000, 2000 + d - 1000);
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.all_kernels.n, 1);
    const struct lp_kernel_row *k = &r.all_kernels.v[0];
    assert_int_equal(k->calls, 2);
    assert_int_equal(k->total_ns, INT64_MAX);
    assert_int_equal(k->min_ns, INT64_MAX);
    assert_int_equal(k->max_ns, INT64_MAX);
    assert_int_equal(k->median_ns, INT64_MAX); /* (d + d - 1000) / 2 wrapped to 0.4 x 2^64 */
    assert_true(r.timeline.busy_ns <= INT64_MAX && r.all_kernels.gpu_ns == INT64_MAX);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* 0.75 x 2^63 ns: two sum past INT64_MAX, three past UINT64_MAX (wrapping to 0.25 x 2^63) */
#define LONG_NS ((1ull << 62) + (1ull << 61))

/* `llmprof info`'s totals (lp_trace_summarize) and the run's records lost: copies and sets
 * of UINT64_MAX bytes twice (they wrapped to 8 and 4 bytes), losses of 2^63 records twice
 * (to 0) and 100 unread, three overlapping kernels, windows and top-level ranges of LONG_NS
 * each; every total stops at INT64_MAX. */
static void test_summary_sums(void **state)
{
    (void)state;
    const uint64_t d = LONG_NS;
    struct tb b;
    open_window(&b, 1);
    for (uint32_t th = 1; th <= 3; th++)
        range(&b, "decode", th, 10, 10 + d);
    for (int i = 0; i < 3; i++) {
        kernel(&b, "gemm_a", 1, 0, 100, 100 + d);
        window(&b, 1 + (uint64_t)i, 1 + (uint64_t)i + d);
    }
    copy(&b, 1000, 2000, UINT64_MAX, 1);
    copy(&b, 3000, 4000, UINT64_MAX, 1);
    copy(&b, 5000, 6000, 10, 1);
    set(&b, 7000, 8000, UINT64_MAX);
    set(&b, 9000, 10000, UINT64_MAX);
    set(&b, 11000, 12000, 5);
    loss(&b, 1ull << 63);
    loss(&b, 1ull << 63);
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    /* records an END chunk says were written that no chunk holds (the writer writes its own
     * count, so set here): 100 on top of the losses' INT64_MAX */
    t->records_unread = 100;
    struct lp_trace_summary s;
    assert_int_equal(lp_trace_summarize(t, &s), LP_OK);
    assert_int_equal(s.memcpy_bytes, INT64_MAX);
    assert_int_equal(s.memset_bytes, INT64_MAX);
    assert_int_equal(s.lost_records, INT64_MAX);
    assert_int_equal(s.n_loss_notes, 0);
    assert_int_equal(s.kernel_ns, INT64_MAX);
    assert_int_equal(s.window_ns, INT64_MAX);
    assert_int_equal(s.n_top, 1);
    assert_int_equal(s.top[0].count, 3);
    assert_int_equal(s.top[0].total_ns, INT64_MAX);
    assert_int_equal(s.top[0].max_ns, d);
    lp_trace_summary_free(&s);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(r.lost_records, INT64_MAX);
    assert_non_null(finding(&r, LP_FINDING_TRACE_NOT_WHOLE));
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Busy time: a stage's union of its work adds a kernel after the others whole, or the part
 * of one that outlasts them. The prefill's last addition (a kernel outlasting the first by
 * D / 2) passes INT64_MAX, the decode's (a kernel after the others) comes once past it.
 * The prefill also has two nested "attn" sub-stage ranges of LONG_NS, each holding an
 * operator range and launching one of its kernels, and a CUDA graph of three overlapping
 * LONG_NS kernels. Busy times, sub-stage wall and GPU time, operator CPU time and the
 * graph's GPU time stop at INT64_MAX (past it, report.json and SQLite read them as
 * negative). */
static void test_stage_sums(void **state)
{
    (void)state;
    const uint64_t d = LONG_NS;
    static const char *const rules[] = {"prefill=^prefill", "decode=^decode", "attn=^attn"};
    struct lp_run_options o = {.stage_rules = rules, .n_stage_rules = 3};
    struct tb b;
    open_window(&b, 1);
    range(&b, "prefill", 1, 10, 300 + 2 * d);
    range(&b, "attn", 1, 20, 20 + d);
    range(&b, "mlp", 1, 25, 15 + d);
    range(&b, "attn", 1, 30 + d, 30 + 2 * d);
    range(&b, "mlp", 1, 35 + d, 25 + 2 * d);
    kernel(&b, "gemm_a", 1, 27, 100, 100 + d);
    kernel(&b, "gemm_b", 1, 40 + d, 200, 200 + d + d / 2);
    for (int i = 0; i < 3; i++)
        graph_kernel(&b, 5, 12, 150, 150 + d);
    range(&b, "decode", 2, 10, 1000); /* its kernels run over the prefill's: other stages */
    kernel(&b, "gemm_a", 2, 20, 100, 100 + d);
    kernel(&b, "gemm_b", 2, 30, 200, 200 + d + d / 2);
    kernel(&b, "gemm_c", 2, 40, 300 + d + d / 2, 300 + d + d / 2 + d / 8);
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, &o, &r);
    const struct lp_stage_report *s = stage(&r, "prefill"), *dec = stage(&r, "decode");
    assert_non_null(s);
    assert_non_null(dec);
    assert_int_equal(s->occurrences, 1);
    assert_int_equal(dec->occurrences, 1);
    assert_int_equal(s->busy_ns, INT64_MAX);
    assert_int_equal(dec->busy_ns, INT64_MAX);
    /* the occurrence's own busy time, as a double: INT64_MAX reads as 2^63 */
    assert_true(s->busy.max <= (double)INT64_MAX && dec->busy.max <= (double)INT64_MAX);
    size_t seen = 0;
    for (size_t i = 0; i < s->n_sub; i++)
        if (!strcmp(s->sub[i].name, "attn")) {
            assert_int_equal(s->sub[i].count, 2);
            assert_int_equal(s->sub[i].wall_ns, INT64_MAX);
            assert_int_equal(s->sub[i].gpu_ns, INT64_MAX);
            seen++;
        }
    for (size_t i = 0; i < r.n_ops; i++)
        if (!strcmp(r.ops[i].name, "mlp")) {
            assert_int_equal(r.ops[i].calls, 2);
            assert_int_equal(r.ops[i].cpu_ns, INT64_MAX);
            seen++;
        }
    assert_int_equal(seen, 2);
    assert_int_equal(r.n_graphs, 1);
    assert_int_equal(r.graphs[0].kernels, 3);
    assert_int_equal(r.graphs[0].gpu_ns, INT64_MAX);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* GEMM calls whose kernels run LONG_NS, overlapping: a prefill row of a call of three
 * kernels (their sum wrapped) and one of a kernel of D / 4, a decode row merged from four
 * calls stepping through n, and three grouped GEMM kernels no call launched; the calls',
 * rows', stages' and run's GEMM times stop at INT64_MAX. */
static void test_gemm_sums(void **state)
{
    (void)state;
    const uint64_t d = LONG_NS;
    struct tb b;
    open_window(&b, 1);
    range(&b, "prefill", 1, 10, 5000);
    gemm(&b, 1000, 2000, 4096, 8);
    for (int i = 0; i < 3; i++)
        kernel(&b, "gemm_a", 1, 1100 + 100 * (uint64_t)i, 10000, 10000 + d);
    gemm(&b, 3000, 4000, 4096, 8);
    kernel(&b, "gemm_a", 1, 3100, 10000, 10000 + d / 4);
    for (int i = 0; i < 3; i++)
        kernel(&b, "cutlass_grouped_gemm_bf16", 1, 4500 + 100 * (uint64_t)i, 20000, 20000 + d);
    for (uint64_t i = 0; i < 4; i++) {
        range(&b, "decode", 1, 6000 + 1000 * i, 6500 + 1000 * i);
        gemm(&b, 6100 + 1000 * i, 6200 + 1000 * i, 4096, 8 + i);
        kernel(&b, "gemm_b", 1, 6150 + 1000 * i, 30000, 30000 + d);
    }
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    const struct lp_stage_report *p = stage(&r, "prefill"), *dec = stage(&r, "decode");
    assert_non_null(p);
    assert_non_null(dec);
    assert_int_equal(r.gemm.linked, 6);
    assert_int_equal(r.gemm.ns, INT64_MAX);
    assert_int_equal(p->gemm_calls, 2);
    assert_int_equal(p->gemm_ns, INT64_MAX);
    assert_int_equal(dec->gemm_ns, INT64_MAX);
    size_t seen = 0;
    for (size_t i = 0; i < r.gemm.n_rows; i++) {
        const struct lp_gemm_row *g = &r.gemm.rows[i];
        if (&r.stages[g->stage] == p) {
            assert_int_equal(g->calls, 2);
            assert_int_equal(g->kernels, 4);
            assert_int_equal(g->gpu_ns, INT64_MAX);
            seen++;
        } else if (&r.stages[g->stage] == dec) {
            assert_int_equal(g->vary_dim, 'n');
            assert_int_equal(g->calls, 4);
            assert_int_equal(g->gpu_ns, INT64_MAX);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    assert_int_equal(p->gemm_unshaped_ns, INT64_MAX);
    assert_int_equal(p->moe_gemm_ns, INT64_MAX);
    assert_int_equal(r.gemm.unshaped_ns, INT64_MAX);
    assert_int_equal(r.gemm.n_unshaped, 1);
    assert_int_equal(r.gemm.unshaped[0].calls, 3);
    assert_int_equal(r.gemm.unshaped[0].gpu_ns, INT64_MAX);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* With a Mixtral config, two batched expert GEMM calls (8 experts, hidden 4096 to twice the
 * expert width) in a decode step, each launching a LONG_NS kernel: the stage's MoE GEMM time
 * stops at INT64_MAX. */
static void test_moe_gemm_sums(void **state)
{
    (void)state;
    static const char config[] =
        "{\"model_type\": \"mixtral\", \"hidden_size\": 4096, \"intermediate_size\": 14336, "
        "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
        "\"num_local_experts\": 8, \"num_experts_per_tok\": 2, \"vocab_size\": 32000, "
        "\"max_position_embeddings\": 32768}";
    struct lp_model m;
    char err[512];
    if (lp_model_parse(config, strlen(config), "config.json", &m, err, sizeof err) != LP_OK)
        fail_msg("%s", err);
    struct lp_run_options o = {.model = &m};
    const uint64_t d = LONG_NS;
    struct tb b;
    open_window(&b, 1);
    range(&b, "decode", 1, 10, 5000);
    for (uint64_t i = 0; i < 2; i++) {
        struct lp_record rec = {.type = LP_REC_GEMM};
        rec.u.gemm = (struct lp_gemm){
            .start = 1000 + 1000 * i, .end = 1500 + 1000 * i, .thread = 1,
            .api = lp_trace_writer_intern(b.w, "cublasGemmStridedBatchedEx"), .m = 2 * 14336,
            .n = 16, .k = 4096, .batch = 8, .transa = 1, .a_type = 14, .b_type = 14,
            .c_type = 14, .d_type = 14, .compute_type = 68, .algo = -1, .epilogue = 1};
        add(&b, &rec);
        kernel(&b, "gemm_bf16", 1, 1100 + 1000 * i, 10000, 10000 + d);
    }
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, &o, &r);
    const struct lp_stage_report *dec = stage(&r, "decode");
    assert_non_null(dec);
    assert_int_equal(dec->gemm_calls, 2);
    assert_int_equal(dec->moe_gemm_kernels, 2);
    assert_int_equal(dec->moe_gemm_ns, INT64_MAX);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Two capture windows of LONG_NS: the time recorded stops at INT64_MAX. */
static void test_window_sums(void **state)
{
    (void)state;
    const uint64_t d = LONG_NS;
    struct tb b;
    open_window(&b, 1);
    lp_trace_writer_set_meta(b.w, "capture", "ranges");
    window(&b, 1, 1 + d);
    window(&b, 2 + d, 2 + 2 * d);
    range(&b, "prefill", 1, 10, 1000);
    kernel(&b, "gemm_a", 1, 20, 100, 200);
    range(&b, "decode", 1, 10 + d, 1000 + d);
    kernel(&b, "gemm_b", 1, 20 + d, 100 + d, 200 + d);
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_true(r.capture.windowed);
    assert_int_equal(r.capture.n_windows, 2);
    assert_int_equal(r.capture.recorded_ns, INT64_MAX);
    write_all(&r);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Rank RANK of two on one host: three overlapping LONG_NS kernels, and three all-reduces,
 * each ending at one moment on both ranks: two starting at 100 and 200 on rank 0, LONG_NS
 * later on rank 1 (rank 0 waits LONG_NS in each), then one where rank 0 comes 100 ns late
 * (rank 1 waits 100 ns). Each rank's kernels overlap its first two all-reduces. */
static void long_rank(struct lp_rank *k, int rank)
{
    const uint64_t d = LONG_NS, late = rank ? d : 0;
    struct tb b;
    open_window(&b, 1);
    lp_trace_writer_set_meta(b.w, "rank", rank ? "1" : "0");
    lp_trace_writer_set_meta(b.w, "host", "h");
    range(&b, "decode", 1, 10, 2000 + 2 * d);
    for (int i = 0; i < 3; i++)
        kernel(&b, "gemm_bf16", 1, 0, 50 + late, 50 + late + d);
    const char *ar = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
    /* each all-reduce ends at one moment on both ranks, as one communicator's does */
    kernel(&b, ar, 1, 0, 100 + late, 100 + d + d);
    kernel(&b, ar, 1, 0, 200 + late, 200 + d + d);
    kernel(&b, ar, 1, 0, 300 + d + (rank ? 0 : 100), 500 + d);
    end_window(&b, UINT64_MAX - 10);
    struct lp_trace *t = tb_read(&b, 1);
    assert_int_equal(t->implausible, 0);
    struct lp_run r;
    analyze(t, NULL, &r);
    assert_int_equal(lp_rank_take(&r, "/run/trace.lpt", k), LP_OK);
    lp_run_free(&r);
    lp_trace_free(t);
}

/* Two ranks of such times: each rank's kernel time, wait and stage wall, and the sums over
 * the ranks (kernel, communication, overlap and wait times, per stage too) stop at
 * INT64_MAX; rank 1's 100 ns of waiting come on top of rank 0's INT64_MAX. */
static void test_rank_sums(void **state)
{
    (void)state;
    struct lp_rank *k = calloc(2, sizeof *k);
    assert_non_null(k);
    long_rank(&k[0], 0);
    long_rank(&k[1], 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(k[i].kernel_ns, INT64_MAX);
        assert_int_equal(k[i].comm_overlap_ns, INT64_MAX);
        assert_int_equal(k[i].n_stages, 1);
        assert_int_equal(k[i].stages[0].wall_ns, INT64_MAX);
    }
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    assert_int_equal(rk.waits, LP_RANKS_WAIT_DONE);
    assert_int_equal(rk.coll_matched, 3);
    assert_int_equal(rk.ranks[0].wait_ns, INT64_MAX);
    assert_int_equal(rk.ranks[0].stages[0].wait_ns, INT64_MAX);
    assert_int_equal(rk.ranks[1].wait_ns, 100);
    assert_int_equal(rk.ranks[1].stages[0].wait_ns, 100);
    assert_int_equal(rk.kernel_ns, INT64_MAX);
    assert_int_equal(rk.comm_ns, INT64_MAX);
    assert_int_equal(rk.comm_overlap_ns, INT64_MAX);
    assert_int_equal(rk.wait_ns, INT64_MAX);
    assert_int_equal(rk.n_stages, 1);
    assert_int_equal(rk.stages[0].n, 2);
    assert_int_equal(rk.stages[0].comm_ns, INT64_MAX);
    assert_int_equal(rk.stages[0].comm_overlap_ns, INT64_MAX);
    assert_int_equal(rk.stages[0].wait_ns, INT64_MAX);
    lp_ranks_free(&rk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_int64_max),  cmocka_unit_test(test_alloc_sums),
        cmocka_unit_test(test_copy_bytes),       cmocka_unit_test(test_end_before_start),
        cmocka_unit_test(test_times_near_max),   cmocka_unit_test(test_long_durations),
        cmocka_unit_test(test_durations_past_int64), cmocka_unit_test(test_summary_sums),
        cmocka_unit_test(test_stage_sums),       cmocka_unit_test(test_gemm_sums),
        cmocka_unit_test(test_moe_gemm_sums),    cmocka_unit_test(test_window_sums),
        cmocka_unit_test(test_rank_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
