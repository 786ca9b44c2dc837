/* Trace format v1: writer/reader round trips, torn and corrupt files, version checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmprof/trace.h"

static char tmpdir[] = "/tmp/lp_test_trace_XXXXXX";

static void tmp_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
    unlink(buf);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* One record of each kind, fields set from the generator, names interned. */
static void make_records(struct lp_trace_writer *w, struct lp_record *out, size_t n)
{
    static const char *names[] = {"nvjet_sm90_tst_128x256", "vectorAdd", "flash_fwd_kernel",
                                  "a kernel with spaces", "x"};
    uint64_t ts = 1700000000000000000ull;
    for (size_t i = 0; i < n; i++) {
        struct lp_record *r = &out[i];
        memset(r, 0, sizeof *r);
        ts += rnd() % 100000;
        r->type = LP_REC_KERNEL + (uint32_t)(i % (LP_REC_TYPE_COUNT - LP_REC_KERNEL));
        lp_str name = lp_trace_writer_intern(w, names[rnd() % 5]);
        switch (r->type) {
        case LP_REC_KERNEL:
            r->u.kernel = (struct lp_kernel){.start = ts, .end = ts + rnd() % 50000, .name = name,
                .correlation = (uint32_t)rnd(), .device = (uint32_t)(rnd() % 8), .context = 1,
                .stream = (uint32_t)(rnd() % 100), .grid = {(int32_t)(rnd() % 100000), 1, -1},
                .block = {128, 2, 1}, .registers = 168, .static_smem = 16, .dynamic_smem = 232448,
                .local_mem_per_thread = 0, .graph_id = (uint32_t)(rnd() % 3),
                .graph_node_id = rnd(), .flags = LP_KERNEL_FLAG_GRAPH};
            break;
        case LP_REC_MEMCPY:
            r->u.memcpy = (struct lp_memcpy){.start = ts, .end = ts + 10, .bytes = rnd(),
                .correlation = 7, .device = 0, .context = 1, .stream = 7, .copy_kind = 1,
                .src_kind = 2, .dst_kind = 3, .graph_id = 0};
            break;
        case LP_REC_MEMSET:
            r->u.memset = (struct lp_memset){.start = ts, .end = ts + 3, .bytes = 4096,
                .correlation = 8, .value = 0xff, .memory_kind = 3};
            break;
        case LP_REC_MEMORY:
            r->u.memory = (struct lp_memory){.timestamp = ts, .address = rnd(), .bytes = 1u << 30,
                .correlation = 9, .op = LP_MEMORY_OP_FREE, .memory_kind = 3};
            break;
        case LP_REC_MARKER:
            r->u.marker = (struct lp_marker){.timestamp = ts, .id = (uint32_t)i,
                .flags = LP_MARKER_START, .name = name, .domain = 0, .thread = 12345};
            break;
        case LP_REC_API:
            r->u.api = (struct lp_api){.start = ts - 100, .end = ts + 900, .correlation = 11,
                .thread = 12345, .domain = LP_API_DRIVER, .cbid = 307, .name = name, .status = 0};
            break;
        case LP_REC_NVML:
            r->u.nvml = (struct lp_nvml_sample){.timestamp = ts, .query_ns = 80000, .device = 0,
                .valid = 0x1ff, .power_mw = 650123, .energy_mj = rnd(), .sm_mhz = 1980,
                .mem_mhz = 3201, .util_gpu = 100, .util_mem = 37, .temp_c = 55,
                .clock_events = 0x4, .mem_used = 80ull << 30};
            break;
        case LP_REC_DEVICE:
            r->u.device = (struct lp_device){.id = 3, .name = name, .uuid = {1, 2, 3, 255},
                .cc_major = 9, .cc_minor = 0, .sm_count = 132, .mem_bytes = 150ull << 30,
                .mem_bandwidth_kbps = 4800000000ull, .core_clock_khz = 1980000,
                .max_sm_mhz = 1980, .max_mem_mhz = 3201, .power_limit_mw = 700000};
            break;
        case LP_REC_OVERHEAD:
            r->u.overhead = (struct lp_overhead){.start = ts, .end = ts + 5, .kind = 1, .thread = 2};
            break;
        case LP_REC_LOSS:
            r->u.loss = (struct lp_loss){.source = LP_LOSS_CUPTI_DROPPED, .count = 42, .what = name};
            break;
        case LP_REC_GEMM:
            r->u.gemm = (struct lp_gemm){.start = ts, .end = ts + rnd() % 9000, .thread = 12345,
                .api = name, .m = 151936, .n = rnd() % 9000, .k = 1ull << 33, .batch = 32,
                .transa = 1, .transb = 0, .a_type = 14, .b_type = 28, .c_type = 0, .d_type = 2,
                .compute_type = 77, .algo = (int32_t)(rnd() % 3) - 1, .tile = name,
                .splitk = 4, .epilogue = 4, .status = 13, .flags = LP_GEMM_FLAG_ALGO_FIRST};
            break;
        }
    }
}

/* Pointer to the i-th decoded record of TYPE and its size. */
static const void *decoded(const struct lp_trace *t, uint32_t type, size_t i, size_t *size)
{
#define CASE(T, arr, n) case T: *size = sizeof *t->arr; return i < t->n ? &t->arr[i] : NULL
    switch (type) {
    CASE(LP_REC_KERNEL, kernels, n_kernels);
    CASE(LP_REC_MEMCPY, memcpys, n_memcpys);
    CASE(LP_REC_MEMSET, memsets, n_memsets);
    CASE(LP_REC_MEMORY, memory, n_memory);
    CASE(LP_REC_MARKER, markers, n_markers);
    CASE(LP_REC_API, apis, n_apis);
    CASE(LP_REC_NVML, nvml, n_nvml);
    CASE(LP_REC_DEVICE, devices, n_devices);
    CASE(LP_REC_OVERHEAD, overheads, n_overheads);
    CASE(LP_REC_LOSS, losses, n_losses);
    CASE(LP_REC_GEMM, gemms, n_gemms);
    default: return NULL;
    }
#undef CASE
}

static void write_trace(const char *path, struct lp_record *recs, size_t n, size_t chunk_bytes)
{
    struct lp_trace_writer *w;
    char err[256];
    struct lp_trace_writer_options opt = {.chunk_bytes = chunk_bytes};
    assert_int_equal(lp_trace_writer_open(&w, path, &opt, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(w, "host", "testhost");
    lp_trace_writer_set_meta(w, "pid", "4242");
    assert_int_equal(lp_trace_writer_write_header(w), LP_OK);
    make_records(w, recs, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(lp_trace_writer_add(w, &recs[i]), LP_OK);
    lp_trace_writer_set_meta(w, "end_trace_ns", "99");
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
}

static void test_roundtrip_every_type(void **state)
{
    (void)state;
    char path[256];
    tmp_path(path, sizeof path, "rt.lpt");
    enum { N = 2000 };
    struct lp_record *recs = calloc(N, sizeof *recs);
    write_trace(path, recs, N, 4096);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_true(t->complete);
    assert_int_equal(t->n_warnings, 0);
    assert_true(t->n_chunks > 3);
    assert_string_equal(lp_trace_meta(t, "host"), "testhost");
    assert_string_equal(lp_trace_meta(t, "end_trace_ns"), "99");
    assert_int_equal(t->version_major, LP_TRACE_VERSION_MAJOR);
    size_t seen[LP_REC_TYPE_COUNT] = {0};
    for (size_t i = 0; i < N; i++) {
        if (recs[i].type == LP_REC_DEVICE)
            continue; /* merged by id: test_device_records_merge */
        size_t size = 0;
        const void *d = decoded(t, recs[i].type, seen[recs[i].type]++, &size);
        assert_non_null(d);
        assert_memory_equal(d, &recs[i].u, size);
    }
    assert_int_equal(t->n_kernels, seen[LP_REC_KERNEL]);
    assert_int_equal(t->n_losses, seen[LP_REC_LOSS]);
    assert_int_equal(t->n_gemms, seen[LP_REC_GEMM]);
    assert_true(t->n_gemms > 0);
    assert_string_equal(lp_trace_str(t, t->kernels[0].name), lp_trace_str(t, recs[0].u.kernel.name));
    assert_string_equal(lp_trace_str(t, 0), "");
    assert_string_equal(lp_trace_str(t, 999999), "<unknown>");
    lp_trace_free(t);
    free(recs);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static uint8_t *slurp(const char *path, long *size)
{
    *size = file_size(path);
    assert_true(*size > 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *data = malloc((size_t)*size);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    return data;
}

/* Cutting the file anywhere keeps every record of the chunks before the cut. */
static void test_torn_at_every_length(void **state)
{
    (void)state;
    char path[256], cut[256];
    tmp_path(path, sizeof path, "torn.lpt");
    tmp_path(cut, sizeof cut, "cut.lpt");
    enum { N = 600 };
    struct lp_record *recs = calloc(N, sizeof *recs);
    write_trace(path, recs, N, 512);
    long size = 0;
    uint8_t *data = slurp(path, &size);
    uint64_t prev = 0;
    for (long len = 16; len <= size; len += 7) {
        struct lp_trace *t;
        char err[256];
        assert_int_equal(lp_trace_read_mem(&t, data, (size_t)len, "cut", err, sizeof err), LP_OK);
        assert_true(t->n_records >= prev); /* more bytes never lose records */
        prev = t->n_records;
        if (len < size)
            assert_false(t->complete);
        if (t->n_warnings)
            assert_non_null(strstr(t->warnings[0], "torn"));
        lp_trace_free(t);
    }
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, data, (size_t)size, "full", err, sizeof err), LP_OK);
    assert_int_equal(t->n_warnings, 0);
    size_t n_str = 0;
    for (size_t i = 0; i < t->n_strings; i++)
        n_str += t->strings[i] != NULL;
    assert_int_equal(t->n_records, N + n_str); /* records plus string definitions */
    lp_trace_free(t);
    free(data);
    free(recs);
}

static void test_corrupt_chunk_is_skipped(void **state)
{
    (void)state;
    char path[256];
    tmp_path(path, sizeof path, "corrupt.lpt");
    enum { N = 800 };
    struct lp_record *recs = calloc(N, sizeof *recs);
    write_trace(path, recs, N, 1024);
    long size = 0;
    uint8_t *data = slurp(path, &size);
    struct lp_trace *good, *bad;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&good, data, (size_t)size, "good", err, sizeof err), LP_OK);
    /* damage a payload byte in the middle and a header byte further on */
    data[size / 2] ^= 0x5a;
    data[size * 3 / 4] ^= 0xff;
    assert_int_equal(lp_trace_read_mem(&bad, data, (size_t)size, "bad", err, sizeof err), LP_OK);
    assert_true(bad->n_warnings >= 1);
    assert_true(bad->dropped_bytes > 0);
    assert_true(bad->n_records < good->n_records);
    assert_true(bad->n_records > good->n_records / 3); /* chunks after the damage survive */
    assert_true(bad->complete); /* the END chunk was found again */
    lp_trace_free(good);
    lp_trace_free(bad);
    free(data);
    free(recs);
}

static void test_bad_magic_and_newer_version(void **state)
{
    (void)state;
    struct lp_trace *t;
    char err[256];
    uint8_t junk[64] = "definitely not a trace";
    assert_int_equal(lp_trace_read_mem(&t, junk, sizeof junk, "junk", err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "not an llmprof trace"));
    assert_int_equal(lp_trace_read_mem(&t, junk, 3, "tiny", err, sizeof err), LP_ERR_FORMAT);
    uint8_t hdr[16] = {0};
    memcpy(hdr, LP_TRACE_MAGIC, 8);
    hdr[8] = LP_TRACE_VERSION_MAJOR + 1;
    assert_int_equal(lp_trace_read_mem(&t, hdr, sizeof hdr, "future", err, sizeof err), LP_ERR_VERSION);
    assert_non_null(strstr(err, "newer"));
    assert_non_null(strstr(err, "upgrade"));
    hdr[8] = LP_TRACE_VERSION_MAJOR;
    hdr[10] = 99; /* a newer minor version is read */
    assert_int_equal(lp_trace_read_mem(&t, hdr, sizeof hdr, "minor", err, sizeof err), LP_OK);
    assert_int_equal(t->version_minor, 99);
    assert_int_equal(t->n_records, 0);
    lp_trace_free(t);
    assert_int_equal(lp_trace_read(&t, "/nonexistent/x.lpt", err, sizeof err), LP_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/x.lpt"));
}

static void test_writer_never_overwrites(void **state)
{
    (void)state;
    char path[256], err[256];
    tmp_path(path, sizeof path, "exists.lpt");
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    struct lp_trace_writer *w;
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_ERR_IO);
    assert_null(w);
    assert_non_null(strstr(err, path));
    assert_int_equal(file_size(path), 8);
    assert_int_equal(lp_trace_writer_open(&w, "/nonexistent-dir/t.lpt", NULL, err, sizeof err), LP_ERR_IO);
}

/* A record type from a newer minor version is skipped, the rest decodes. */
static void test_unknown_record_type_is_skipped(void **state)
{
    (void)state;
    char path[256], err[256];
    tmp_path(path, sizeof path, "unknown.lpt");
    struct lp_trace_writer *w;
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    struct lp_record r = {.type = 200};
    assert_int_equal(lp_trace_writer_add(w, &r), LP_ERR_ARG);
    r.type = LP_REC_KERNEL;
    r.u.kernel.start = 5;
    r.u.kernel.end = 9;
    assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, 1);
    assert_int_equal(t->kernels[0].end, 9);
    lp_trace_free(t);
}

static void test_device_records_merge(void **state)
{
    (void)state;
    char path[256], err[256];
    tmp_path(path, sizeof path, "devices.lpt");
    struct lp_trace_writer *w;
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    struct lp_record cupti = {.type = LP_REC_DEVICE}, nvml = {.type = LP_REC_DEVICE};
    cupti.u.device = (struct lp_device){.id = 1, .name = lp_trace_writer_intern(w, "NVIDIA H200"),
                                        .sm_count = 132, .cc_major = 9};
    nvml.u.device = (struct lp_device){.id = 1, .max_sm_mhz = 1980, .power_limit_mw = 700000,
                                       .sm_count = 1};
    struct lp_record other = nvml;
    other.u.device.id = 0;
    assert_int_equal(lp_trace_writer_add(w, &cupti), LP_OK);
    assert_int_equal(lp_trace_writer_add(w, &nvml), LP_OK);
    assert_int_equal(lp_trace_writer_add(w, &other), LP_OK);
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_devices, 2);
    assert_string_equal(lp_trace_str(t, t->devices[0].name), "NVIDIA H200");
    assert_int_equal(t->devices[0].sm_count, 132); /* the first record's value wins */
    assert_int_equal(t->devices[0].max_sm_mhz, 1980);
    assert_int_equal(t->devices[0].power_limit_mw, 700000);
    assert_int_equal(t->devices[1].id, 0);
    lp_trace_free(t);
}

/* Past max_strings the writer forgets old strings: ids keep growing, every record still
 * reads back with its own name, and the writer's memory does not grow with the names. */
static void test_intern_table_is_bounded(void **state)
{
    (void)state;
    char path[256], err[256];
    tmp_path(path, sizeof path, "strings.lpt");
    struct lp_trace_writer *w;
    struct lp_trace_writer_options opt = {.max_strings = 100};
    assert_int_equal(lp_trace_writer_open(&w, path, &opt, err, sizeof err), LP_OK);
    enum { N = 1000 };
    lp_str first = 0;
    for (int i = 0; i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "decode step=%d", i % 250); /* repeats after 250 */
        struct lp_record r = {.type = LP_REC_MARKER};
        r.u.marker = (struct lp_marker){.timestamp = (uint64_t)i, .id = (uint32_t)i,
                                        .flags = LP_MARKER_START, .name = lp_trace_writer_intern(w, name)};
        if (i == 0)
            first = r.u.marker.name;
        assert_int_not_equal(r.u.marker.name, 0);
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    assert_int_equal(lp_trace_writer_intern(w, "decode step=0"), first + N); /* defined anew */
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_markers, N);
    for (int i = 0; i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "decode step=%d", i % 250);
        assert_string_equal(lp_trace_str(t, t->markers[i].name), name);
    }
    lp_trace_free(t);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_type),
        cmocka_unit_test(test_torn_at_every_length),
        cmocka_unit_test(test_corrupt_chunk_is_skipped),
        cmocka_unit_test(test_bad_magic_and_newer_version),
        cmocka_unit_test(test_writer_never_overwrites),
        cmocka_unit_test(test_unknown_record_type_is_skipped),
        cmocka_unit_test(test_device_records_merge),
        cmocka_unit_test(test_intern_table_is_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
