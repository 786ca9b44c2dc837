/* Trace format v1: writer/reader round trips, torn and corrupt files, version checks, the
 * reader's work bounded by the file, and implausible records left out. */
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

#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <zstd.h>

#include "llmprof/capture.h"
#include "llmprof/trace.h"
#include "trace/codec.h"
#include "trace/reader_internal.h"

static char tmpdir[] = "/tmp/lp_test_trace_XXXXXX";

/* Writes one chunk (header and payload, both checksummed) at OUT whose header says the
 * payload decodes to RAW_SIZE bytes; returns its size. */
static uint32_t next_seq; /* chunks are numbered from 1 in each image, as the writer does */

static size_t put_chunk_sized(uint8_t *out, uint32_t type, uint32_t codec, const void *payload,
                              size_t len, size_t raw_size, uint32_t n_records)
{
    struct lp_chunk_header h = {.type = type, .codec = codec, .payload_size = (uint32_t)len,
                                .raw_size = (uint32_t)raw_size, .n_records = n_records,
                                .payload_crc = lp_crc32(payload, len), .seq = ++next_seq};
    lp_chunk_header_pack(&h, out);
    if (len)
        memcpy(out + LP_CHUNK_HEADER_SIZE, payload, len);
    return LP_CHUNK_HEADER_SIZE + len;
}

static size_t put_chunk(uint8_t *out, uint32_t type, uint32_t codec, const void *payload,
                        size_t len, uint32_t n_records)
{
    return put_chunk_sized(out, type, codec, payload, len, len, n_records);
}

/* A file image: the file header, then chunks put at IMG + *LEN. */
static size_t put_file_header(uint8_t *img)
{
    memset(img, 0, 16);
    memcpy(img, LP_TRACE_MAGIC, 8);
    img[8] = LP_TRACE_VERSION_MAJOR;
    img[10] = LP_TRACE_VERSION_MINOR;
    next_seq = 0;
    return 16;
}

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
                .flags = LP_MARKER_FLAG_START, .name = name, .domain = 0, .thread = 12345};
            break;
        case LP_REC_API:
            r->u.api = (struct lp_api){.start = ts - 100, .end = ts + 900, .correlation = 11,
                .thread = 12345 + (uint32_t)(rnd() % 2), .domain = LP_API_DOMAIN_DRIVER,
                .cbid = 307, .name = name, .status = rnd() % 3 ? 0 : 700}; /* kinds differ */
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
            r->u.loss = (struct lp_loss){.source = LP_LOSS_SOURCE_CUPTI_DROPPED, .count = 42, .what = name};
            break;
        case LP_REC_GEMM:
            r->u.gemm = (struct lp_gemm){.start = ts, .end = ts + rnd() % 9000, .thread = 12345,
                .api = name, .m = 151936, .n = rnd() % 9000, .k = 1ull << 33, .batch = 32,
                .transa = 1, .transb = 0, .a_type = 14, .b_type = 28, .c_type = 0, .d_type = 2,
                .compute_type = 77, .algo = (int32_t)(rnd() % 3) - 1, .tile = name,
                .splitk = 4, .epilogue = 4, .status = 13, .flags = LP_GEMM_FLAG_ALGO_FIRST};
            break;
        case LP_REC_GRAPH:
            r->u.graph = (struct lp_graph){.timestamp = ts, .thread = 12345,
                .event = LP_GRAPH_EVENT_NODE_CLONED, .graph_id = 2, .original_graph_id = 1,
                .exec_id = (uint32_t)rnd(), .node_type = 0, .node_id = 2ull << 32 | i,
                .original_node_id = rnd()};
            break;
        case LP_REC_COUNTERS:
            r->u.counters = (struct lp_counters){.start = ts, .end = ts + rnd() % 90000000,
                .thread = 12345, .device = 1, .index = (uint32_t)i,
                .valid = (1u << LP_COUNTER_COUNT) - 1};
            for (size_t k = 0; k < LP_COUNTER_COUNT; k++)
                r->u.counters.value[k] = rnd() >> (k * 4);
            break;
        case LP_REC_PM_SAMPLE:
            r->u.pm = (struct lp_pm_sample){.start = ts, .end = ts + 200000 + rnd() % 900,
                .device = 2, .valid = (1u << LP_PM_COUNT) - 1};
            for (size_t k = 0; k < LP_PM_COUNT; k++)
                r->u.pm.value[k] = (uint32_t)(rnd() % 10001);
            break;
        case LP_REC_WINDOW:
            r->u.window = (struct lp_window){.start = ts, .end = ts + rnd() % 900000000,
                .cause = LP_WINDOW_CAUSE_PROFILER_API, .thread = (uint32_t)rnd()};
            break;
        }
    }
}

/* Pointer to the i-th decoded record of TYPE and its size (NULL past the last). */
/* Kernel I of T as the record it was read from: its row and its configuration */
static struct lp_kernel kernel_record(const struct lp_trace *t, size_t i)
{
    struct lp_kernel k;
    memset(&k, 0, sizeof k);
    const struct lp_kernel_rec *r = &t->kernels[i];
    const struct lp_kernel_config *c = lp_trace_kernel_config(t, r);
    k.start = r->start;
    k.end = lp_trace_kernel_end(t, r);
    k.name = c->name;
    k.correlation = r->correlation;
    k.device = c->device;
    k.context = c->context;
    k.stream = c->stream;
    memcpy(k.grid, c->grid, sizeof k.grid);
    memcpy(k.block, c->block, sizeof k.block);
    k.registers = c->registers;
    k.static_smem = c->static_smem;
    k.dynamic_smem = c->dynamic_smem;
    k.local_mem_per_thread = c->local_mem_per_thread;
    k.graph_id = c->graph_id;
    k.graph_node_id = c->graph_node_id;
    k.flags = c->flags;
    return k;
}

/* API call I of T as the record it was read from */
static struct lp_api api_record(const struct lp_trace *t, size_t i)
{
    struct lp_api a;
    memset(&a, 0, sizeof a);
    const struct lp_api_rec *r = &t->apis[i];
    const struct lp_api_kind *k = lp_trace_api_kind(t, r);
    a.start = r->start;
    a.end = lp_trace_api_end(t, r);
    a.correlation = r->correlation;
    a.thread = k->thread;
    a.domain = k->domain;
    a.cbid = k->cbid;
    a.name = k->name;
    a.status = k->status;
    return a;
}

static const void *decoded(struct lp_trace *t, uint32_t type, size_t i, size_t *size)
{
    size_t *n;
    struct lp_record_layout l;
    void **arr = lp_trace_array_of(t, type, &n);
    if (!arr || lp_record_layout(type, &l) != 0 || i >= *n)
        return NULL;
    *size = l.size;
    return (const uint8_t *)*arr + i * l.size;
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
        if (recs[i].type == LP_REC_KERNEL) { /* kept as a row and a shared configuration */
            assert_true(seen[LP_REC_KERNEL] < t->n_kernels);
            struct lp_kernel k = kernel_record(t, seen[LP_REC_KERNEL]++);
            assert_memory_equal(&k, &recs[i].u.kernel, sizeof k);
            continue;
        }
        if (recs[i].type == LP_REC_API) { /* kept as a row and a shared kind */
            assert_true(seen[LP_REC_API] < t->n_apis);
            struct lp_api a = api_record(t, seen[LP_REC_API]++);
            assert_memory_equal(&a, &recs[i].u.api, sizeof a);
            continue;
        }
        if (recs[i].type == LP_REC_GEMM) { /* likewise; no padding but after the last field */
            assert_true(seen[LP_REC_GEMM] < t->n_gemms);
            struct lp_gemm g = lp_trace_gemm(t, seen[LP_REC_GEMM]++);
            assert_memory_equal(&g, &recs[i].u.gemm, offsetof(struct lp_gemm, flags) + 4);
            continue;
        }
        size_t size = 0;
        const void *d = decoded(t, recs[i].type, seen[recs[i].type]++, &size);
        assert_non_null(d);
        assert_memory_equal(d, &recs[i].u, size);
    }
    /* every configuration once */
    for (size_t a = 0; a < t->n_kernel_configs; a++)
        for (size_t b = a + 1; b < t->n_kernel_configs; b++)
            assert_memory_not_equal(&t->kernel_configs[a], &t->kernel_configs[b],
                                    sizeof t->kernel_configs[a]);
    assert_true(t->n_kernel_configs <= t->n_kernels);
    assert_int_equal(t->n_kernels, seen[LP_REC_KERNEL]);
    for (size_t a = 0; a < t->n_api_kinds; a++) /* and every API call kind */
        for (size_t b = a + 1; b < t->n_api_kinds; b++)
            assert_memory_not_equal(&t->api_kinds[a], &t->api_kinds[b], sizeof t->api_kinds[a]);
    assert_true(t->n_api_kinds > 0 && t->n_api_kinds <= t->n_apis);
    assert_int_equal(t->n_apis, seen[LP_REC_API]);
    for (size_t a = 0; a < t->n_gemm_kinds; a++) /* and every GEMM call kind */
        for (size_t b = a + 1; b < t->n_gemm_kinds; b++)
            assert_memory_not_equal(&t->gemm_kinds[a], &t->gemm_kinds[b], sizeof t->gemm_kinds[a]);
    assert_true(t->n_gemm_kinds > 0 && t->n_gemm_kinds <= t->n_gemms);
    assert_int_equal(t->n_losses, seen[LP_REC_LOSS]);
    assert_int_equal(t->n_gemms, seen[LP_REC_GEMM]);
    assert_true(t->n_gemms > 0);
    assert_string_equal(lp_trace_str(t, lp_trace_kernel_config(t, &t->kernels[0])->name),
                        lp_trace_str(t, recs[0].u.kernel.name));
    assert_string_equal(lp_trace_str(t, 0), "");
    assert_string_equal(lp_trace_str(t, 999999), "<unknown>");
    lp_trace_free(t);
    free(recs);
}

/* Kernels launched alike share one configuration: 6,000 kernels over 700 configurations
 * (past the table's first growth) keep 700, each kernel reading back its own */
static void test_kernel_configs_shared(void **state)
{
    (void)state;
    char path[256], err[256];
    tmp_path(path, sizeof path, "configs.lpt");
    struct lp_trace_writer *w;
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    assert_int_equal(lp_trace_writer_write_header(w), LP_OK);
    lp_str name = lp_trace_writer_intern(w, "gemm");
    for (uint32_t i = 0; i < 6000; i++) {
        struct lp_record r = {.type = LP_REC_KERNEL};
        uint32_t c = (i * 13) % 700;
        r.u.kernel = (struct lp_kernel){.start = 1000 + 10ull * i, .end = 1005 + 10ull * i,
                                        .name = name, .correlation = i + 1, .stream = 7,
                                        .grid = {(int32_t)c + 1, 2, 1}, .block = {128, 1, 1},
                                        .registers = c % 5, .dynamic_smem = c / 5,
                                        .graph_node_id = c == 3 ? 1ull << 40 : 0};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, 6000);
    assert_int_equal(t->n_kernel_configs, 700);
    for (uint32_t i = 0; i < 6000; i++) {
        const struct lp_kernel_config *c = lp_trace_kernel_config(t, &t->kernels[i]);
        uint32_t want = (i * 13) % 700;
        assert_int_equal(c->grid[0], (int32_t)want + 1);
        assert_int_equal(c->registers, want % 5);
        assert_int_equal(c->dynamic_smem, want / 5);
        assert_true(c->graph_node_id == (want == 3 ? 1ull << 40 : 0));
        assert_int_equal(t->kernels[i].correlation, i + 1);
    }
    struct lp_kernel_rec bad = {.config = 700}; /* past the table: a configuration of zeros */
    assert_int_equal(lp_trace_kernel_config(t, &bad)->grid[0], 0);
    lp_trace_free(t);
}

/* A newer minor version's record of an unknown type (17) in a raw RECORDS chunk, counted by
 * the END chunk: skipped, and no record counted lost. */
static void test_account_newer_records(void **state)
{
    (void)state;
    uint8_t img[256];
    size_t len = put_file_header(img);
    img[10] = LP_TRACE_VERSION_MINOR + 1;
    const uint8_t meta[] = {4, 'h', 'o', 's', 't', 1, 'x'};
    const uint8_t rec[] = {17, 1, 0};
    const uint8_t end[] = {15, 'r', 'e', 'c', 'o', 'r', 'd', 's', '_', 'w', 'r', 'i', 't', 't',
                           'e', 'n', 1, '1'};
    len += put_chunk(img + len, LP_CHUNK_META, LP_CODEC_RAW, meta, sizeof meta, 1);
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, rec, sizeof rec, 1);
    len += put_chunk(img + len, LP_CHUNK_END, LP_CODEC_RAW, end, sizeof end, 1);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "newer", err, sizeof err), LP_OK);
    assert_true(t->complete);
    assert_string_equal(lp_trace_meta(t, "records_written"), "1");
    assert_int_equal(t->records_unread, 0);
    assert_int_equal(t->altered, 0);
    assert_int_equal(t->n_warnings, 0);
    lp_trace_free(t);
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

/* ---- chunks against the writer's account: repeated, missing, reordered, retyped ---- */

struct slices {
    size_t off[512], len[512], n;
};

/* the chunks of IMG after its file header */
static void slice(const uint8_t *img, size_t len, struct slices *s)
{
    s->n = 0;
    for (size_t o = LP_FILE_HEADER_SIZE; o + LP_CHUNK_HEADER_SIZE <= len && s->n < 512;) {
        struct lp_chunk_header h;
        assert_int_equal(lp_chunk_header_unpack(img + o, &h), LP_OK);
        s->off[s->n] = o;
        s->len[s->n++] = LP_CHUNK_HEADER_SIZE + h.payload_size;
        o += LP_CHUNK_HEADER_SIZE + h.payload_size;
    }
}

/* a file of IMG's header and the chunks ORDER names (indexes into S; N of them) */
static uint8_t *assemble(const uint8_t *img, const struct slices *s, const size_t *order,
                         size_t n, size_t *len)
{
    size_t total = LP_FILE_HEADER_SIZE;
    for (size_t i = 0; i < n; i++)
        total += s->len[order[i]];
    uint8_t *out = malloc(total);
    memcpy(out, img, LP_FILE_HEADER_SIZE);
    *len = LP_FILE_HEADER_SIZE;
    for (size_t i = 0; i < n; i++) {
        memcpy(out + *len, img + s->off[order[i]], s->len[order[i]]);
        *len += s->len[order[i]];
    }
    return out;
}

static struct lp_trace *read_img(const uint8_t *img, size_t len)
{
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "mutated", err, sizeof err), LP_OK);
    return t;
}

static int warned(const struct lp_trace *t, const char *what)
{
    for (size_t i = 0; i < t->n_warnings; i++)
        if (strstr(t->warnings[i], what))
            return 1;
    return 0;
}

/* Whole chunks (checksums valid) repeated, removed, reordered or retyped: each is said, and
 * no record counts twice. Format 1.8 numbers the chunks; a 1.7 trace (numbers zeroed) still
 * has copies found by content and missing records by the END chunk's account. */
static void test_chunk_account(void **state)
{
    (void)state;
    char path[256];
    tmp_path(path, sizeof path, "acct.lpt");
    enum { N = 3000 };
    struct lp_record *recs = calloc(N, sizeof *recs);
    write_trace(path, recs, N, 4096);
    free(recs);
    long size;
    uint8_t *img = slurp(path, &size);
    struct slices s;
    slice(img, (size_t)size, &s);
    assert_true(s.n > 8);
    struct lp_trace *ref = read_img(img, (size_t)size);
    assert_int_equal(ref->altered, 0);
    assert_int_equal(ref->records_unread, 0);
    assert_int_equal(ref->n_warnings, 0);
    assert_non_null(lp_trace_meta(ref, "records_by_type"));
    assert_int_equal(strtoull(lp_trace_meta(ref, "records_written"), NULL, 10), N);
    size_t order[1024], n, len, mid = s.n / 2;
    for (int old = 0; old < 2; old++) {
        if (old) { /* format 1.7: no chunk numbers */
            img[10] = 7;
            for (size_t i = 0; i < s.n; i++)
                memset(img + s.off[i] + 28, 0, 4);
        }
        /* every chunk but the first and the END twice */
        n = 0;
        for (size_t i = 0; i < s.n; i++) {
            order[n++] = i;
            if (i && i + 1 < s.n)
                order[n++] = i;
        }
        uint8_t *m = assemble(img, &s, order, n, &len);
        struct lp_trace *t = read_img(m, len);
        assert_int_equal(t->altered, LP_TRACE_ALTERED_REPEATED);
        assert_int_equal(t->n_kernels, ref->n_kernels);
        assert_int_equal(t->n_records, ref->n_records);
        assert_int_equal(t->records_unread, 0);
        assert_true(warned(t, "each read once"));
        lp_trace_free(t);
        free(m);
        /* a middle chunk removed */
        n = 0;
        for (size_t i = 0; i < s.n; i++)
            if (i != mid)
                order[n++] = i;
        m = assemble(img, &s, order, n, &len);
        t = read_img(m, len);
        assert_int_equal(t->altered, old ? 0 : LP_TRACE_ALTERED_MISSING);
        assert_true(t->records_unread > 0);
        assert_true(t->n_records < ref->n_records);
        assert_true(warned(t, "records the END chunk says were written were not read"));
        assert_true(old || warned(t, "1 chunk is missing"));
        lp_trace_free(t);
        free(m);
    }
    free(img);
    img = slurp(path, &size); /* numbered again */
    /* every chunk after the META in reverse order: read in the written order */
    n = 0;
    order[n++] = 0;
    for (size_t i = s.n; i-- > 1;)
        order[n++] = i;
    uint8_t *m = assemble(img, &s, order, n, &len);
    struct lp_trace *t = read_img(m, len);
    assert_int_equal(t->altered, LP_TRACE_ALTERED_ORDER);
    assert_int_equal(t->n_kernels, ref->n_kernels);
    for (size_t i = 0; i < t->n_kernels; i++)
        assert_int_equal(t->kernels[i].start, ref->kernels[i].start);
    assert_true(warned(t, "not in the order they were written"));
    lp_trace_free(t);
    free(m);
    /* a middle chunk's type changed (its header checksum made valid again) */
    struct lp_chunk_header h;
    assert_int_equal(lp_chunk_header_unpack(img + s.off[mid], &h), LP_OK);
    assert_int_equal(h.type, LP_CHUNK_RECORDS);
    h.type = 9;
    lp_chunk_header_pack(&h, img + s.off[mid]);
    t = read_img(img, (size_t)size);
    assert_int_equal(t->altered, LP_TRACE_ALTERED_UNKNOWN);
    assert_true(t->records_unread > 0);
    assert_true(warned(t, "of a type format 1.8 does not have"));
    lp_trace_free(t);
    /* a chunk of an unknown type in a newer minor version is skipped as such: nothing altered,
     * nothing counted lost (the chunk may hold what the END chunk counts) */
    img[10] = LP_TRACE_VERSION_MINOR + 1;
    t = read_img(img, (size_t)size);
    assert_int_equal(t->altered, 0);
    assert_int_equal(t->records_unread, 0);
    lp_trace_free(t);
    img[10] = LP_TRACE_VERSION_MINOR;
    h.type = LP_CHUNK_RECORDS;
    lp_chunk_header_pack(&h, img + s.off[mid]);
    /* a second, different chunk with a number already taken: both read, said */
    n = 0;
    for (size_t i = 0; i + 1 < s.n; i++)
        order[n++] = i;
    order[n++] = mid;
    order[n++] = s.n - 1;
    m = assemble(img, &s, order, n, &len);
    size_t at = len - s.len[s.n - 1] - s.len[mid]; /* the copy */
    m[at + LP_CHUNK_HEADER_SIZE] ^= 1;
    assert_int_equal(lp_chunk_header_unpack(m + at, &h), LP_OK);
    h.payload_crc = lp_crc32(m + at + LP_CHUNK_HEADER_SIZE, h.payload_size);
    lp_chunk_header_pack(&h, m + at);
    t = read_img(m, len);
    assert_true(t->altered & LP_TRACE_ALTERED_REPEATED);
    /* both read (the flipped one decoded, or dropped as damaged): nothing of the first lost,
     * and either more records than written or the damage said */
    assert_true(warned(t, "carries the number of another, different chunk"));
    assert_true((t->n_records > ref->n_records && (t->altered & LP_TRACE_ALTERED_EXTRA)) ||
                (t->n_records == ref->n_records &&
                 (warned(t, "does not decompress") || warned(t, "not one zstd frame"))));
    lp_trace_free(t);
    free(m);
    /* a damaged copy before the chunk it copies hides nothing: the intact one is read, the
     * damaged one dropped as corrupt (numbered, then as format 1.7 without numbers) */
    for (int old = 0; old < 2; old++) {
        n = 0;
        for (size_t i = 0; i < s.n; i++) {
            if (i == mid)
                order[n++] = mid;
            order[n++] = i;
        }
        m = assemble(img, &s, order, n, &len);
        size_t bad = LP_FILE_HEADER_SIZE;
        for (size_t i = 0; i < mid; i++)
            bad += s.len[i];
        m[bad + LP_CHUNK_HEADER_SIZE + 5] ^= 0x40; /* its checksum no longer holds */
        if (old) {
            m[10] = 7;
            for (size_t o = LP_FILE_HEADER_SIZE; o < len;) {
                struct lp_chunk_header hh;
                assert_int_equal(lp_chunk_header_unpack(m + o, &hh), LP_OK);
                memset(m + o + 28, 0, 4);
                o += LP_CHUNK_HEADER_SIZE + hh.payload_size;
            }
        }
        t = read_img(m, len);
        assert_int_equal(t->n_records, ref->n_records);
        assert_int_equal(t->records_unread, 0);
        assert_false(t->altered & LP_TRACE_ALTERED_REPEATED);
        assert_true(warned(t, "corrupt chunk"));
        lp_trace_free(t);
        free(m);
    }
    /* the END chunk's number made huge: numbers skip, but every record was read */
    memcpy(m = malloc((size_t)size), img, (size_t)size);
    memset(m + s.off[s.n - 1] + 28, 0xff, 4);
    t = read_img(m, (size_t)size);
    assert_int_equal(t->altered, LP_TRACE_ALTERED_MISSING);
    assert_int_equal(t->records_unread, 0);
    assert_true(warned(t, "the numbers were altered"));
    assert_false(warned(t, "their records are lost"));
    lp_trace_free(t);
    /* every chunk one number: none is a copy of another, all read */
    for (size_t i = 0; i < s.n; i++)
        memset(m + s.off[i] + 28, 0xff, 4);
    t = read_img(m, (size_t)size);
    assert_int_equal(t->n_records, ref->n_records);
    assert_true(t->altered & LP_TRACE_ALTERED_REPEATED);
    lp_trace_free(t);
    /* format 1.8 with every number zeroed: said, read where they lie */
    for (size_t i = 0; i < s.n; i++)
        memset(m + s.off[i] + 28, 0, 4);
    t = read_img(m, (size_t)size);
    assert_int_equal(t->altered, LP_TRACE_ALTERED_UNNUMBERED);
    assert_int_equal(t->n_records, ref->n_records);
    assert_true(warned(t, "numbers its chunks, and none of these"));
    lp_trace_free(t);
    /* format 1.7: the header chunk twice (read once), or gone while the END is there */
    m[10] = 7;
    n = 0;
    order[n++] = 0;
    for (size_t i = 0; i < s.n; i++)
        order[n++] = i;
    uint8_t *m2 = assemble(m, &s, order, n, &len);
    t = read_img(m2, len);
    assert_int_equal(t->altered, LP_TRACE_ALTERED_REPEATED);
    assert_int_equal(t->n_records, ref->n_records);
    lp_trace_free(t);
    free(m2);
    m2 = assemble(m, &s, order + 2, n - 2, &len);
    t = read_img(m2, len);
    assert_true(t->altered & LP_TRACE_ALTERED_MISSING);
    assert_true(warned(t, "no header chunk (META) was read"));
    lp_trace_free(t);
    free(m2);
    free(m);
    lp_trace_free(ref);
    free(img);
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
        if (len == 16) { /* the file header alone: an error that says so */
            assert_int_equal(lp_trace_read_mem(&t, data, 16, "cut", err, sizeof err), LP_ERR_FORMAT);
            continue;
        }
        assert_int_equal(lp_trace_read_mem(&t, data, (size_t)len, "cut", err, sizeof err), LP_OK);
        assert_true(t->n_records >= prev); /* more bytes never lose records */
        prev = t->n_records;
        if (len < size)
            assert_false(t->complete);
        if (t->n_warnings)
            assert_non_null(strstr(t->warnings[0], "torn"));
        /* a killed process's trace is cut, not altered: no chunk missing, nothing unread */
        assert_int_equal(t->altered, 0);
        assert_int_equal(t->records_unread, 0);
        assert_true(t->n_warnings <= 1);
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
    uint8_t minor[16 + 32] = {0}; /* a newer minor version is read */
    memcpy(minor, LP_TRACE_MAGIC, 8);
    minor[8] = LP_TRACE_VERSION_MAJOR;
    minor[10] = 99;
    next_seq = 0;
    put_chunk(minor + 16, LP_CHUNK_META, LP_CODEC_RAW, NULL, 0, 0);
    assert_int_equal(lp_trace_read_mem(&t, minor, sizeof minor, "minor", err, sizeof err), LP_OK);
    assert_int_equal(t->version_minor, 99);
    assert_int_equal(t->n_records, 0);
    assert_int_equal(t->n_warnings, 0);
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
    assert_int_equal(lp_trace_kernel_end(t, &t->kernels[0]), 9);
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
                                        .flags = LP_MARKER_FLAG_START, .name = lp_trace_writer_intern(w, name)};
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

/* ---- work bounded by the file (issue 11) ---- */

/* The 57-byte trace of issue 11: one string of id 2^28. The reader used to size its string
 * table by the largest id (4 GiB, cleared); it is read in a child whose peak memory is
 * measured. */
static void test_sparse_string_id_is_cheap(void **state)
{
    (void)state;
    uint8_t img[64];
    size_t len = put_file_header(img);
    const uint8_t rec[] = {LP_REC_STRING, 7, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 'x'};
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, rec, sizeof rec, 1);
    assert_int_equal(len, 57);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a hang fails too */
        struct rusage before, after;
        getrusage(RUSAGE_SELF, &before);
        struct lp_trace *t;
        char err[256];
        if (lp_trace_read_mem(&t, img, len, "sparse", err, sizeof err) != LP_OK)
            _exit(2);
        getrusage(RUSAGE_SELF, &after);
        int ok = t->n_strings <= 2 && after.ru_maxrss - before.ru_maxrss < 32 * 1024; /* KiB */
        lp_trace_free(t);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Sparse ids are renumbered densely; records keep their strings. */
static void test_string_ids_renumbered(void **state)
{
    (void)state;
    struct lp_buf b = {0}, def = {0};
    struct lp_delta_state d = {0};
    lp_buf_put_uvar(&def, 1u << 28);
    lp_buf_put_uvar(&def, 5);
    lp_buf_put(&def, "flash", 5);
    lp_buf_put_uvar(&b, LP_REC_STRING);
    lp_buf_put_uvar(&b, def.len);
    lp_buf_put(&b, def.data, def.len);
    struct lp_record r = {.type = LP_REC_KERNEL};
    lp_str names[] = {1u << 28, 77 /* never defined */, 0, UINT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        r.type = LP_REC_KERNEL;
        r.u.kernel = (struct lp_kernel){.start = 1000 * i, .end = 1000 * i + 10, .name = names[i]};
        lp_record_encode(&b, &d, &r);
        r.type = LP_REC_API; /* a call's name is kept in its kind */
        r.u.api = (struct lp_api){.start = 1000 * i, .end = 1000 * i + 5, .name = names[i]};
        lp_record_encode(&b, &d, &r);
    }
    uint8_t *img = malloc(16 + 32 + b.len);
    size_t len = put_file_header(img);
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, b.data, b.len, 9);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "ids", err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, 4);
    assert_true(t->n_strings <= 3);
#define KNAME(i) lp_trace_kernel_config(t, &t->kernels[i])->name
    assert_string_equal(lp_trace_str(t, KNAME(0)), "flash");
    assert_true(KNAME(0) < t->n_strings);
    assert_string_equal(lp_trace_str(t, KNAME(1)), "<unknown>");
    assert_string_equal(lp_trace_str(t, KNAME(2)), "");
    assert_string_equal(lp_trace_str(t, KNAME(3)), "<unknown>");
#undef KNAME
    assert_int_equal(t->n_apis, 4);
#define ANAME(i) lp_trace_api_kind(t, &t->apis[i])->name
    assert_string_equal(lp_trace_str(t, ANAME(0)), "flash");
    assert_int_equal(ANAME(0), lp_trace_kernel_config(t, &t->kernels[0])->name);
    assert_string_equal(lp_trace_str(t, ANAME(1)), "<unknown>");
    assert_string_equal(lp_trace_str(t, ANAME(2)), "");
    assert_string_equal(lp_trace_str(t, ANAME(3)), "<unknown>");
#undef ANAME
    assert_int_equal(t->n_warnings, 0);
    lp_trace_free(t);
    lp_buf_free(&b);
    lp_buf_free(&def);
    free(img);
}

/* A record shorter than its type's fields is malformed: two bytes can no longer become a
 * 100-byte record of zeros. */
static void test_short_record_is_malformed(void **state)
{
    (void)state;
    uint8_t img[128];
    size_t len = put_file_header(img);
    const uint8_t rec[] = {LP_REC_GEMM, 0, LP_REC_GEMM, 0};
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, rec, sizeof rec, 2);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "short", err, sizeof err), LP_OK);
    assert_int_equal(t->n_gemms, 0);
    assert_int_equal(t->n_warnings, 1);
    assert_non_null(strstr(t->warnings[0], "malformed record"));
    lp_trace_free(t);
}

/* Chunks decode to at most 16 MiB + 128 bytes per byte of the file: zstd frames of zeros
 * past that are dropped with one warning, before they are decompressed. */
static void test_decoded_bytes_bounded(void **state)
{
    (void)state;
    size_t raw_len = 12u << 20;
    uint8_t *zeros = calloc(raw_len, 1); /* 6 Mi records of an unknown type 0, empty */
    size_t bound = ZSTD_compressBound(raw_len);
    uint8_t *z = malloc(bound);
    size_t zn = ZSTD_compress(z, bound, zeros, raw_len, 3);
    assert_false(ZSTD_isError(zn));
    uint8_t *img = malloc(16 + 3 * (32 + zn));
    size_t len = put_file_header(img);
    for (int i = 0; i < 3; i++)
        len += put_chunk_sized(img + len, LP_CHUNK_RECORDS, LP_CODEC_ZSTD, z, zn, raw_len,
                               (uint32_t)(raw_len / 2));
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "bomb", err, sizeof err), LP_OK);
    assert_int_equal(t->n_records, raw_len / 2); /* the first chunk only */
    assert_int_equal(t->dropped_bytes, 2 * (32 + zn));
    assert_int_equal(t->n_warnings, 1);
    assert_non_null(strstr(t->warnings[0], "2 chunks"));
    assert_non_null(strstr(t->warnings[0], "exhaust memory"));
    lp_trace_free(t);
    /* a frame that holds another size than its header gives is dropped unread */
    len = put_file_header(img);
    len += put_chunk_sized(img + len, LP_CHUNK_RECORDS, LP_CODEC_ZSTD, z, zn, 8u << 20, 1);
    assert_int_equal(lp_trace_read_mem(&t, img, len, "frame", err, sizeof err), LP_OK);
    assert_int_equal(t->n_records, 0);
    assert_int_equal(t->n_warnings, 1);
    assert_non_null(strstr(t->warnings[0], "not one zstd frame"));
    lp_trace_free(t);
    free(img);
    free(z);
    free(zeros);
}

/* Records take memory in proportion to the chunks decoded: minimal kernel records (22 bytes
 * on disk, a ~100-byte struct in memory) compressed 1000 times, behind a padding chunk of an
 * unknown type that used to earn budget, once took gigabytes from a 2 MB file. */
static void test_memory_bounded(void **state)
{
    (void)state;
    struct lp_buf raw = {0};
    struct lp_delta_state st = {0};
    struct lp_record r = {.type = LP_REC_KERNEL};
    while (raw.len < (12u << 20) - 64)
        lp_record_encode(&raw, &st, &r);
    uint32_t per_chunk = 0;
    struct lp_cursor c = {raw.data, raw.data + raw.len, 0};
    while (c.p < c.end && !c.bad) {
        lp_cur_uvar(&c);
        lp_cur_bytes(&c, lp_cur_uvar(&c));
        per_chunk++;
    }
    size_t bound = ZSTD_compressBound(raw.len);
    uint8_t *z = malloc(bound);
    size_t zn = ZSTD_compress(z, bound, raw.data, raw.len, 3);
    assert_false(ZSTD_isError(zn));
    size_t pad = 2u << 20;
    uint8_t *padding = calloc(pad, 1);
    uint8_t *img = malloc(16 + 32 + pad + 8 * (32 + zn));
    size_t len = put_file_header(img);
    len += put_chunk(img + len, 77, LP_CODEC_RAW, padding, pad, 0);
    size_t decodable = 0;
    for (int i = 0; i < 8; i++) {
        size_t k = put_chunk_sized(img + len, LP_CHUNK_RECORDS, LP_CODEC_ZSTD, z, zn, raw.len,
                                   per_chunk);
        len += k;
        decodable += k;
    }
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "bomb", err, sizeof err), LP_OK);
    /* within 64 MiB + 128 bytes per byte of the chunks decoded; the padding earns nothing */
    assert_true(t->n_kernels > 0);
    assert_true((uint64_t)t->n_kernels * sizeof *t->kernels <= (64ull << 20) + 128 * decodable);
    int said = 0;
    for (size_t i = 0; i < t->n_warnings; i++)
        said |= strstr(t->warnings[i], "exhaust memory") != NULL;
    assert_true(said);
    lp_trace_free(t);
    free(img);
    free(padding);
    free(z);
    lp_buf_free(&raw);
}

/* A file of many damaged chunks gives a few warning lines, then one that counts the rest. */
static void test_warnings_bounded(void **state)
{
    (void)state;
    enum { N = 100 };
    uint8_t *img = malloc(16 + N * 36);
    size_t len = put_file_header(img);
    for (int i = 0; i < N; i++) {
        struct lp_chunk_header h = {.type = LP_CHUNK_RECORDS, .codec = LP_CODEC_RAW,
                                    .payload_size = 4, .raw_size = 4, .payload_crc = 1};
        lp_chunk_header_pack(&h, img + len);
        memset(img + len + 32, 0, 4);
        len += 36;
    }
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "damaged", err, sizeof err), LP_OK);
    assert_true(t->n_warnings <= 40);
    assert_non_null(strstr(t->warnings[t->n_warnings - 1], "more damaged chunks"));
    assert_int_equal(t->dropped_bytes, N * 36);
    lp_trace_free(t);
    free(img);
}

/* Device ids and header keys: a file cannot make the reader keep (or scan) millions. */
static void test_devices_and_meta_bounded(void **state)
{
    (void)state;
    struct lp_buf b = {0}, m = {0};
    struct lp_delta_state d = {0};
    for (uint32_t i = 0; i < 20000; i++) {
        struct lp_record r = {.type = LP_REC_DEVICE};
        r.u.device.id = i * 7919u;
        lp_record_encode(&b, &d, &r);
    }
    for (int i = 0; i < 5000; i++) {
        char k[32];
        int kl = snprintf(k, sizeof k, "key%d", i);
        lp_buf_put_uvar(&m, (uint64_t)kl);
        lp_buf_put(&m, k, (size_t)kl);
        lp_buf_put_uvar(&m, 1);
        lp_buf_put(&m, "v", 1);
    }
    uint8_t *img = malloc(16 + 64 + b.len + m.len);
    size_t len = put_file_header(img);
    len += put_chunk(img + len, LP_CHUNK_META, LP_CODEC_RAW, m.data, m.len, 5000);
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, b.data, b.len, 20000);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "many", err, sizeof err), LP_OK);
    assert_int_equal(t->n_devices, 1024);
    assert_int_equal(t->n_meta, 1024);
    assert_string_equal(lp_trace_meta(t, "key0"), "v");
    int dev = 0, meta = 0;
    for (size_t i = 0; i < t->n_warnings; i++) {
        dev += strstr(t->warnings[i], "device records dropped") != NULL;
        meta += strstr(t->warnings[i], "header key/value pairs dropped") != NULL;
    }
    assert_int_equal(dev, 1);
    assert_int_equal(meta, 1);
    lp_trace_free(t);
    lp_buf_free(&b);
    lp_buf_free(&m);
    free(img);
}

/* The header's record count is checked against the records: one warning for the trace,
 * records kept. */
static void test_record_count_mismatch(void **state)
{
    (void)state;
    uint8_t img[256];
    size_t len = put_file_header(img);
    const uint8_t a[] = {LP_REC_STRING, 3, 1, 1, 'a'}, b[] = {LP_REC_STRING, 3, 2, 1, 'b'};
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, a, sizeof a, 5);
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, b, sizeof b, 0);
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, a, sizeof a, 1);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "counts", err, sizeof err), LP_OK);
    assert_int_equal(t->n_records, 3);
    assert_string_equal(lp_trace_str(t, 2), "b");
    assert_int_equal(t->n_warnings, 1);
    assert_non_null(strstr(t->warnings[0], "2 chunks declared a record count"));
    assert_non_null(strstr(t->warnings[0], "5 declared, 2 decoded"));
    assert_non_null(strstr(t->warnings[0], "kept"));
    lp_trace_free(t);
}

/* record onto a full disk leaves 0 bytes, or the header alone: say so, not "bad magic". */
static void test_empty_and_header_only(void **state)
{
    (void)state;
    char path[256], err[512];
    struct lp_trace *t = NULL;
    tmp_path(path, sizeof path, "empty.lpt");
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_ERR_FORMAT);
    assert_null(t);
    assert_non_null(strstr(err, "empty trace: nothing was written (disk full?)"));
    assert_non_null(strstr(err, path));
    uint8_t hdr[16];
    put_file_header(hdr);
    assert_int_equal(lp_trace_read_mem(&t, hdr, 16, "hdr", err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(
        strstr(err, "no records: the process wrote the trace's header and nothing else"));
    assert_int_equal(lp_trace_read_mem(&t, hdr, 11, "cut", err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "only 11 of the 16 header bytes"));
    /* an endless non-trace is not read to its end; a directory is no trace */
    assert_int_equal(lp_trace_read(&t, "/dev/zero", err, sizeof err), LP_ERR_FORMAT);
    assert_non_null(strstr(err, "bad magic"));
    assert_int_equal(lp_trace_read(&t, tmpdir, err, sizeof err), LP_ERR_IO);
    assert_non_null(strstr(err, "directory"));
}

/* The writer keeps every chunk within what a reader takes. */
static void test_writer_limits(void **state)
{
    (void)state;
    char path[256], err[256];
    tmp_path(path, sizeof path, "long.lpt");
    struct lp_trace_writer *w;
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    size_t n = 2u << 20;
    char *big = malloc(n + 1);
    memset(big, 'k', n);
    big[n] = '\0';
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = 5, .flags = LP_MARKER_FLAG_INSTANT,
                                    .name = lp_trace_writer_intern(w, big)};
    assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_markers, 1);
    assert_int_equal(strlen(lp_trace_str(t, t->markers[0].name)), 1u << 20);
    lp_trace_free(t);
    free(big);
    /* a header larger than a chunk may be is an error, not a chunk readers drop */
    tmp_path(path, sizeof path, "bighdr.lpt");
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    n = 65u << 20;
    big = malloc(n + 1);
    memset(big, 'v', n);
    big[n] = '\0';
    assert_int_equal(lp_trace_writer_set_meta(w, "argv", big), LP_OK);
    assert_int_not_equal(lp_trace_writer_write_header(w), LP_OK);
    assert_non_null(strstr(lp_trace_writer_error(w), "more than a reader takes"));
    lp_trace_writer_close(w);
    free(big);
    /* strings interned with no record in between end chunks at chunk_bytes too */
    tmp_path(path, sizeof path, "names.lpt");
    struct lp_trace_writer_options opt = {.chunk_bytes = 4096};
    assert_int_equal(lp_trace_writer_open(&w, path, &opt, err, sizeof err), LP_OK);
    char name[1001];
    for (int i = 0; i < 100; i++) {
        memset(name, 'a' + i % 26, 1000);
        snprintf(name, 8, "%07d", i);
        name[7] = '_';
        name[1000] = '\0';
        assert_int_not_equal(lp_trace_writer_intern(w, name), 0);
    }
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_true(t->n_chunks > 10);
    assert_int_equal(t->n_strings, 101);
    lp_trace_free(t);
}

/* ---- implausible values (issue 11) ---- */

#define T0 1700000000000000000ull
#define MS 1000000ull
#define SEC 1000000000ull

/* A 12.3 s recording from T0: 100 kernels of 1 ms, 100 ms apart, from T0 + 1 s; then
 * EXTRA. *BEFORE_END is the file's size before its END chunk: that prefix reads as the
 * trace of a killed process. */
static void write_recording(const char *path, const char *start, const struct lp_record *extra,
                            size_t n_extra, long *before_end)
{
    struct lp_trace_writer *w;
    char err[256], end[32];
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(w, "start_trace_ns", start);
    assert_int_equal(lp_trace_writer_write_header(w), LP_OK);
    for (uint64_t i = 0; i < 100; i++) {
        struct lp_record r = {.type = LP_REC_KERNEL};
        r.u.kernel = (struct lp_kernel){.start = T0 + SEC + i * 100 * MS,
                                        .end = T0 + SEC + i * 100 * MS + MS,
                                        .name = lp_trace_writer_intern(w, "gemm")};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    for (size_t i = 0; i < n_extra; i++)
        assert_int_equal(lp_trace_writer_add(w, &extra[i]), LP_OK);
    assert_int_equal(lp_trace_writer_flush(w), LP_OK);
    *before_end = file_size(path);
    uint64_t s = strtoull(start, NULL, 10);
    snprintf(end, sizeof end, "%llu", (unsigned long long)(s + 12300 * MS));
    lp_trace_writer_set_meta(w, "end_trace_ns", end);
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
}

static uint64_t kernel_ns(const struct lp_trace *t)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        sum += lp_trace_kernel_end(t, &t->kernels[i]) - t->kernels[i].start;
    return sum;
}

static const char *warning_with(const struct lp_trace *t, const char *text)
{
    for (size_t i = 0; i < t->n_warnings; i++)
        if (strstr(t->warnings[i], text))
            return t->warnings[i];
    return NULL;
}

/* Issue 11: a kernel of 2^61 ns (73 years) was reported as 100 % of GPU time. It is left
 * out, with one warning, whether the trace has an END chunk or not. */
static void test_implausible_duration(void **state)
{
    (void)state;
    char path[256], start[32];
    tmp_path(path, sizeof path, "long-kernel.lpt");
    snprintf(start, sizeof start, "%llu", (unsigned long long)T0);
    struct lp_record x = {.type = LP_REC_KERNEL};
    x.u.kernel = (struct lp_kernel){.start = T0 + 5 * SEC, .end = T0 + 5 * SEC + (1ull << 61)};
    long before_end = 0, size = 0;
    write_recording(path, start, &x, 1, &before_end);
    uint8_t *data = slurp(path, &size);
    for (int killed = 0; killed < 2; killed++) {
        struct lp_trace *t;
        char err[256];
        size_t len = (size_t)(killed ? before_end : size);
        assert_int_equal(lp_trace_read_mem(&t, data, len, "long", err, sizeof err), LP_OK);
        assert_int_equal(t->complete, !killed);
        assert_int_equal(t->n_kernels, 100);
        assert_int_equal(kernel_ns(t), 100 * MS);
        assert_int_equal(t->implausible, 1);
        assert_int_equal(t->n_warnings, 1);
        const char *wl = warning_with(t, "1 record with an implausible duration");
        assert_non_null(wl);
        assert_non_null(strstr(wl, "(1 kernel)"));
        assert_non_null(strstr(wl, "2305843009213693952 ns (73.1 years)"));
        if (!killed)
            assert_non_null(strstr(wl, "longer than the 12.300 s recording"));
        lp_trace_free(t);
    }
    free(data);
}

/* A kept kernel or call is 20 bytes: durations from 2^31 ns on, and an end before the start,
 * are kept apart (LP_REC_LONG), and every end reads back as recorded; the implausible ones
 * are then left out as before. */
static void test_row_long_durations(void **state)
{
    (void)state;
    _Static_assert(sizeof(struct lp_kernel_rec) == 20 && sizeof(struct lp_api_rec) == 20,
                   "rows of 20 bytes");
    char path[256], start[32];
    tmp_path(path, sizeof path, "long-rows.lpt");
    snprintf(start, sizeof start, "%llu", (unsigned long long)T0);
    const uint64_t durs[] = {0, 1, (1ull << 31) - 1, 1ull << 31, (1ull << 32) + 7, 10 * SEC};
    enum { N = sizeof durs / sizeof *durs };
    struct lp_record x[2 * N + 1];
    memset(x, 0, sizeof x);
    for (size_t i = 0; i < N; i++) {
        uint64_t s = T0 + SEC / 2 + i;
        x[i].type = LP_REC_KERNEL;
        x[i].u.kernel = (struct lp_kernel){.start = s, .end = s + durs[i], .correlation = 7};
        x[N + i].type = LP_REC_API;
        x[N + i].u.api = (struct lp_api){.start = s, .end = s + durs[i], .correlation = 9};
    }
    x[2 * N].type = LP_REC_API; /* ends 3 ns before it starts: apart, then left out */
    x[2 * N].u.api = (struct lp_api){.start = T0 + 2 * SEC, .end = T0 + 2 * SEC - 3};
    long before_end = 0;
    write_recording(path, start, x, 2 * N + 1, &before_end);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, 100 + N);
    assert_int_equal(t->n_apis, N);
    assert_int_equal(t->n_long_ends, 2 * 3 + 1);
    assert_int_equal(t->implausible, 1);
    size_t seen = 0;
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        if (k->correlation != 7)
            continue;
        size_t at = (size_t)(k->start - (T0 + SEC / 2));
        assert_true(at < N);
        assert_int_equal(lp_trace_kernel_end(t, k), k->start + durs[at]);
        assert_int_equal((k->dur & LP_REC_LONG) != 0, durs[at] >= 1ull << 31);
        seen |= 1u << at;
    }
    for (size_t i = 0; i < t->n_apis; i++) {
        const struct lp_api_rec *a = &t->apis[i];
        size_t at = (size_t)(a->start - (T0 + SEC / 2));
        assert_true(at < N);
        assert_int_equal(a->correlation, 9);
        assert_int_equal(lp_trace_api_end(t, a), a->start + durs[at]);
        seen |= 1u << (N + at);
    }
    assert_int_equal(seen, (1u << 2 * N) - 1);
    assert_non_null(warning_with(t, "1 record that ends before it starts"));
    lp_trace_free(t);
}

/* GEMM calls are kept as 16-byte rows and a table of what calls alike share: each call reads
 * back whole (lp_trace_gemm) as written, calls differing in any field but their times get
 * their own kind, a long call keeps its end apart, and a name never defined reads as
 * "<unknown>". */
static void test_gemm_rows(void **state)
{
    (void)state;
    _Static_assert(sizeof(struct lp_gemm_rec) == 16, "GEMM rows of 16 bytes");
    char path[256], err[256];
    tmp_path(path, sizeof path, "gemm-rows.lpt");
    struct lp_trace_writer *w;
    assert_int_equal(lp_trace_writer_open(&w, path, NULL, err, sizeof err), LP_OK);
    char start[32];
    snprintf(start, sizeof start, "%llu", (unsigned long long)T0);
    lp_trace_writer_set_meta(w, "start_trace_ns", start);
    assert_int_equal(lp_trace_writer_write_header(w), LP_OK);
    lp_str ex = lp_trace_writer_intern(w, "cublasGemmEx");
    lp_str lt = lp_trace_writer_intern(w, "cublasLtMatmul");
    lp_str tile = lp_trace_writer_intern(w, "256x128");
    const struct lp_gemm kinds[] = {
        {.thread = 1, .api = ex, .m = 4096, .n = 7, .k = 4096, .batch = 1, .a_type = 14,
         .b_type = 14, .c_type = 14, .d_type = 14, .compute_type = 68, .algo = -1, .epilogue = 1},
        {.thread = 2, .api = ex, .m = 4096, .n = 7, .k = 4096, .batch = 1, .a_type = 14,
         .b_type = 14, .c_type = 14, .d_type = 14, .compute_type = 68, .algo = -1, .epilogue = 1},
        {.thread = 3, .api = lt, .m = 1ull << 40, .n = 3, .k = 5, .batch = 32, .transa = 1,
         .transb = 2, .a_type = 28, .b_type = 29, .c_type = 2, .d_type = 0, .compute_type = 77,
         .algo = 21, .tile = tile, .splitk = 4, .epilogue = 3, .status = 7,
         .flags = LP_GEMM_FLAG_ALGO_FIRST},
        /* its entry point's name never defined */
        {.thread = 1, .api = 1u << 20, .m = 8, .n = 8, .k = 8, .batch = 1, .algo = -1},
    };
    enum { K = sizeof kinds / sizeof *kinds, N = 60 };
    const uint64_t durs[] = {0, 1, 900, 1ull << 31, (1ull << 32) + 7, 3 * SEC};
    struct lp_gemm want[N];
    for (size_t i = 0; i < N; i++) {
        want[i] = kinds[i % K];
        want[i].start = T0 + SEC + i * 10 * MS;
        want[i].end = want[i].start + durs[i % 6];
        struct lp_record r = {.type = LP_REC_GEMM};
        r.u.gemm = want[i];
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
    }
    struct lp_record back = {.type = LP_REC_GEMM}; /* ends before it starts: left out */
    back.u.gemm = kinds[0];
    back.u.gemm.start = T0 + 2 * SEC;
    back.u.gemm.end = T0 + 2 * SEC - 3;
    assert_int_equal(lp_trace_writer_add(w, &back), LP_OK);
    snprintf(start, sizeof start, "%llu", (unsigned long long)(T0 + 10 * SEC));
    lp_trace_writer_set_meta(w, "end_trace_ns", start);
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    struct lp_trace *t;
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_gemms, N);
    assert_int_equal(t->n_gemm_kinds, K);
    assert_int_equal(t->implausible, 1);
    assert_int_equal(t->n_long_ends, 3 * N / 6 + 1); /* 2^31, 2^32 + 7, 3 s; and the back one */
    for (size_t i = 0; i < N; i++) {
        const struct lp_gemm g = lp_trace_gemm(t, i), *x = &want[i];
        assert_int_equal(g.start, x->start);
        assert_int_equal(g.end, x->end);
        assert_int_equal((t->gemms[i].dur & LP_REC_LONG) != 0, durs[i % 6] >= 1ull << 31);
        assert_int_equal(g.thread, x->thread);
        const char *api = i % K == 3 ? "<unknown>" : i % K == 2 ? "cublasLtMatmul" : "cublasGemmEx";
        assert_string_equal(lp_trace_str(t, g.api), api);
        assert_string_equal(lp_trace_str(t, g.tile), i % K == 2 ? "256x128" : "");
        assert_true(g.m == x->m && g.n == x->n && g.k == x->k && g.batch == x->batch);
        assert_true(g.transa == x->transa && g.transb == x->transb && g.a_type == x->a_type &&
                    g.b_type == x->b_type && g.c_type == x->c_type && g.d_type == x->d_type &&
                    g.compute_type == x->compute_type && g.algo == x->algo);
        assert_true(g.splitk == x->splitk && g.epilogue == x->epilogue &&
                    g.status == x->status && g.flags == x->flags);
        assert_int_equal(t->gemms[i].kind, t->gemms[i % K].kind); /* alike: one kind */
    }
    assert_non_null(warning_with(t, "1 record that ends before it starts"));
    lp_trace_free(t);
}

/* A kernel's tail (what kernels launched alike share) is decoded only when it differs from
 * that of the last kernel of its name, an API call's when it differs from the last call's:
 * kernels of two names in one memo slot (ids 1 and 257), equal tails under other names,
 * tails too long to keep, calls of two kinds in turn, and a tail cut short after an intact
 * one of its name (malformed, as ever) all read back as written. */
static void test_kernel_tails(void **state)
{
    (void)state;
    struct lp_buf b = {0};
    struct lp_delta_state d = {0};
    const lp_str ids[2] = {1, 257};
    for (int i = 0; i < 2; i++) {
        struct lp_buf def = {0};
        lp_buf_put_uvar(&def, ids[i]);
        lp_buf_put_uvar(&def, 2);
        lp_buf_put(&def, i ? "k1" : "k0", 2);
        lp_buf_put_uvar(&b, LP_REC_STRING);
        lp_buf_put_uvar(&b, def.len);
        lp_buf_put(&b, def.data, def.len);
        lp_buf_free(&def);
    }
    const struct lp_kernel a = {.device = 0, .stream = 7, .grid = {8, 1, 1}, .block = {128, 1, 1},
                                .registers = 32};
    struct lp_kernel bb = a, big = a;
    bb.grid[0] = 9;
    big.grid[0] = big.grid[1] = big.grid[2] = INT32_MIN; /* a tail of about 70 bytes */
    big.block[0] = big.block[1] = big.block[2] = INT32_MAX;
    big.registers = big.static_smem = big.dynamic_smem = big.local_mem_per_thread = UINT32_MAX;
    big.graph_id = UINT32_MAX;
    big.graph_node_id = UINT64_MAX;
    const struct {
        const struct lp_kernel *k;
        int name;
    } seq[] = {{&a, 0}, {&a, 1}, {&a, 0}, {&bb, 0}, {&big, 0}, {&big, 0}, {&a, 1}, {&a, 0}};
    enum { N = sizeof seq / sizeof *seq };
    struct lp_kernel want[N];
    struct lp_api calls[N];
    for (size_t i = 0; i < N; i++) {
        want[i] = *seq[i].k;
        want[i].name = ids[seq[i].name];
        want[i].start = 1000 * (i + 1);
        want[i].end = want[i].start + 10 + i;
        want[i].correlation = (uint32_t)(5 + i);
        struct lp_record r = {.type = LP_REC_KERNEL, .u.kernel = want[i]};
        lp_record_encode(&b, &d, &r);
        calls[i] = (struct lp_api){.start = want[i].start - 50, .end = want[i].start - 40 + i,
                                   .correlation = want[i].correlation,
                                   .thread = 1 + (i / 2) % 2, .domain = LP_API_DOMAIN_RUNTIME,
                                   .cbid = 211, .name = ids[(i / 2) % 2]}; /* in pairs */
        if (i == 5) /* every field at its widest */
            calls[i].thread = calls[i].cbid = calls[i].status = UINT32_MAX;
        r = (struct lp_record){.type = LP_REC_API, .u.api = calls[i]};
        lp_record_encode(&b, &d, &r);
    }
    /* the last kernel again with its tail three bytes short: malformed */
    struct lp_buf cut = {0};
    struct lp_record r = {.type = LP_REC_KERNEL, .u.kernel = want[N - 1]};
    r.u.kernel.start += 1000;
    lp_record_encode(&cut, &d, &r);
    assert_true(cut.len > 5 && cut.data[0] == LP_REC_KERNEL && cut.data[1] < 0x80);
    uint8_t short_len = (uint8_t)(cut.data[1] - 3);
    lp_buf_put(&b, cut.data, 1);
    lp_buf_put(&b, &short_len, 1);
    lp_buf_put(&b, cut.data + 2, short_len);
    lp_buf_free(&cut);
    uint8_t *img = malloc(16 + 32 + b.len);
    size_t len = put_file_header(img);
    len += put_chunk(img + len, LP_CHUNK_RECORDS, LP_CODEC_RAW, b.data, b.len, 2 * N + 3);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read_mem(&t, img, len, "tails", err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, N);
    assert_non_null(warning_with(t, "malformed record"));
    for (size_t i = 0; i < N; i++) {
        struct lp_kernel k = kernel_record(t, i);
        assert_string_equal(lp_trace_str(t, k.name), seq[i].name ? "k1" : "k0");
        k.name = want[i].name;
        assert_memory_equal(&k, &want[i], sizeof k);
    }
    assert_int_equal(t->n_kernel_configs, 4); /* a under each name, bb, big */
    assert_int_equal(t->n_apis, N);
    for (size_t i = 0; i < N; i++) {
        struct lp_api call = api_record(t, i);
        assert_string_equal(lp_trace_str(t, call.name), (i / 2) % 2 ? "k1" : "k0");
        call.name = calls[i].name;
        assert_memory_equal(&call, &calls[i], sizeof call);
    }
    assert_int_equal(t->n_api_kinds, 3);
    lp_trace_free(t);
    free(img);
    lp_buf_free(&b);
}

/* Ends before starts and times far outside the recording are left out; times a little
 * outside it (a range begun before the collector started) are kept. */
static void test_implausible_times(void **state)
{
    (void)state;
    char path[256], start[32];
    tmp_path(path, sizeof path, "odd-times.lpt");
    snprintf(start, sizeof start, "%llu", (unsigned long long)T0);
    struct lp_record x[8];
    memset(x, 0, sizeof x);
    x[0].type = LP_REC_MEMCPY; /* ends 5 us before it starts */
    x[0].u.memcpy = (struct lp_memcpy){.start = T0 + 2 * SEC, .end = T0 + 2 * SEC - 5000};
    x[1].type = LP_REC_MARKER; /* at 5 ns after 1970 */
    x[1].u.marker = (struct lp_marker){.timestamp = 5, .flags = LP_MARKER_FLAG_INSTANT};
    x[2].type = LP_REC_API; /* 400 days on */
    x[2].u.api = (struct lp_api){.start = T0 + 400 * 86400 * SEC,
                                 .end = T0 + 400 * 86400 * SEC + 900};
    x[3].type = LP_REC_MARKER; /* a range started 30 s before the collector: kept */
    x[3].u.marker = (struct lp_marker){.timestamp = T0 - 30 * SEC, .flags = LP_MARKER_FLAG_START,
                                       .id = 1};
    x[4].type = LP_REC_MARKER;
    x[4].u.marker = (struct lp_marker){.timestamp = T0 + 2 * SEC, .flags = LP_MARKER_FLAG_END, .id = 1};
    x[5].type = LP_REC_NVML; /* 20 s after the end: kept */
    x[5].u.nvml = (struct lp_nvml_sample){.timestamp = T0 + 32300 * MS};
    /* incomplete, as CUPTI flushes records the GPU has not finished: an end or both times 0 */
    x[6].type = LP_REC_KERNEL;
    x[6].u.kernel = (struct lp_kernel){.start = T0 + SEC, .end = 0};
    x[7].type = LP_REC_MEMSET;
    long before_end = 0, size = 0;
    write_recording(path, start, x, 8, &before_end);
    uint8_t *data = slurp(path, &size);
    for (int killed = 0; killed < 2; killed++) {
        struct lp_trace *t;
        char err[256];
        size_t len = (size_t)(killed ? before_end : size);
        assert_int_equal(lp_trace_read_mem(&t, data, len, "odd", err, sizeof err), LP_OK);
        assert_int_equal(t->n_kernels, 100);
        assert_int_equal(t->n_memcpys, 0);
        assert_int_equal(t->n_apis, 0);
        assert_int_equal(t->n_markers, 2);
        assert_int_equal(t->markers[0].timestamp, T0 - 30 * SEC);
        assert_int_equal(t->n_nvml, 1);
        assert_int_equal(t->n_memsets, 0);
        assert_int_equal(t->implausible, 5);
        assert_int_equal(t->n_warnings, 3);
        const char *incomplete = warning_with(t, "2 incomplete records left out");
        assert_non_null(incomplete);
        assert_non_null(strstr(incomplete, "(1 kernel, 1 memset)"));
        const char *back = warning_with(t, "1 record that ends before it starts");
        assert_non_null(back);
        assert_non_null(strstr(back, "(1 memcpy)"));
        assert_non_null(strstr(back, "5000 ns (5.0 us) before its start"));
        const char *far = warning_with(t, "2 records far outside the");
        assert_non_null(far);
        assert_non_null(strstr(far, "(1 marker, 1 api)"));
        assert_non_null(strstr(far, "before it began"));
        lp_trace_free(t);
    }
    free(data);
}

/* A header window that most records disagree with (a clock that jumped) gives way to the
 * records' own: nothing is left out, and a warning says why. */
static void test_header_window_disagrees(void **state)
{
    (void)state;
    char path[256], start[32];
    tmp_path(path, sizeof path, "jumped.lpt");
    snprintf(start, sizeof start, "%llu", (unsigned long long)(T0 + 400 * 86400 * SEC));
    long before_end = 0;
    write_recording(path, start, NULL, 0, &before_end);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, 100);
    assert_int_equal(t->implausible, 0);
    assert_int_equal(t->n_warnings, 1);
    assert_non_null(strstr(t->warnings[0], "the window was taken from the records"));
    lp_trace_free(t);
}

/* The records' own window (no usable header) is found around their median start: records
 * days before or after it are left out however many bytes their times share with it */
static void test_records_window_outliers(void **state)
{
    (void)state;
    char path[256], start[32];
    tmp_path(path, sizeof path, "jumped-outliers.lpt");
    snprintf(start, sizeof start, "%llu", (unsigned long long)(T0 + 400 * 86400 * SEC));
    struct lp_record x[3];
    memset(x, 0, sizeof x);
    x[0].type = LP_REC_MARKER; /* 5 ns after 1970 */
    x[0].u.marker = (struct lp_marker){.timestamp = 5, .flags = LP_MARKER_FLAG_INSTANT};
    x[1].type = LP_REC_API; /* 800 days on */
    x[1].u.api = (struct lp_api){.start = T0 + 800 * 86400 * SEC,
                                 .end = T0 + 800 * 86400 * SEC + 900};
    x[2].type = LP_REC_KERNEL; /* a kernel 1 ns before the first: the window's start */
    x[2].u.kernel = (struct lp_kernel){.start = T0 + SEC - 1, .end = T0 + SEC + MS};
    long before_end = 0;
    write_recording(path, start, x, 3, &before_end);
    struct lp_trace *t;
    char err[256];
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    assert_int_equal(t->n_kernels, 101);
    assert_int_equal(t->n_markers, 0);
    assert_int_equal(t->n_apis, 0);
    assert_int_equal(t->implausible, 2);
    assert_non_null(warning_with(t, "the window was taken from the records"));
    const char *far = warning_with(t, "2 records far outside the 9.901 s recording");
    assert_non_null(far);
    lp_trace_free(t);
}

/* Every real trace under tests/fixtures (the killed one without an END chunk too) reads
 * without a record left out and without a warning but for a torn tail. */
static void test_fixtures_lose_nothing(void **state)
{
    (void)state;
    char root[512];
    snprintf(root, sizeof root, "%s", __FILE__);
    char *slash = strrchr(root, '/');
    assert_non_null(slash);
    snprintf(slash, sizeof root - (size_t)(slash - root), "/fixtures");
    DIR *dir = opendir(root);
    assert_non_null(dir);
    int traces = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", root, e->d_name);
        DIR *d = opendir(sub);
        if (!d)
            continue;
        for (struct dirent *f; (f = readdir(d));) {
            size_t n = strlen(f->d_name);
            if (n < 4 || strcmp(f->d_name + n - 4, LP_TRACE_SUFFIX) != 0)
                continue;
            char path[1536], err[512];
            snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
            struct lp_trace *t;
            assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
            if (t->implausible || (t->n_warnings && !strstr(t->warnings[0], "torn")))
                fail_msg("%s: %llu records left out; %s", path,
                         (unsigned long long)t->implausible,
                         t->n_warnings ? t->warnings[0] : "");
            lp_trace_free(t);
            traces++;
        }
        closedir(d);
    }
    closedir(dir);
    assert_true(traces >= 10);
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

/* The tensor dtypes --counters takes, as their counters; an unknown one is named. */
static void test_counter_dtypes(void **state)
{
    (void)state;
    char err[256] = "";
    unsigned bits = 99;
    assert_int_equal(lp_counter_parse_dtypes("", &bits, err, sizeof err), LP_OK);
    assert_int_equal(bits, 0);
    assert_int_equal(lp_counter_parse_dtypes("bf16,fp8", &bits, err, sizeof err), LP_OK);
    assert_int_equal(bits, 1u << LP_COUNTER_TENSOR_BF16 | 1u << LP_COUNTER_TENSOR_FP8);
    assert_int_equal(lp_counter_parse_dtypes("tf32,fp16,", &bits, err, sizeof err), LP_OK);
    assert_int_equal(bits, 1u << LP_COUNTER_TENSOR_TF32 | 1u << LP_COUNTER_TENSOR_FP16);
    assert_int_equal(lp_counter_parse_dtypes("bf16,int4", &bits, err, sizeof err), LP_ERR_ARG);
    assert_string_equal(err, "unknown tensor dtype 'int4' (known: bf16, fp16, fp8, tf32)");
    assert_int_equal(lp_counter_parse_dtypes("bf1", &bits, err, sizeof err), LP_ERR_ARG);
    /* every counter has a name; only the tensor ones a dtype */
    for (unsigned c = 0; c < LP_COUNTER_COUNT; c++) {
        assert_non_null(lp_counter_name(c));
        assert_true(!lp_counter_dtype(c) == (c < LP_COUNTER_TENSOR_BF16));
    }
    assert_null(lp_counter_name(LP_COUNTER_COUNT));
    /* PM values: names for all; percent from hundredths, bytes from KiB, the clock as is */
    for (unsigned p = 0; p < LP_PM_COUNT; p++)
        assert_non_null(lp_pm_name(p));
    assert_null(lp_pm_name(LP_PM_COUNT));
    struct lp_pm_sample s = {.value = {[LP_PM_TENSOR] = 4321, [LP_PM_DRAM_READ] = 3,
                                       [LP_PM_GPC_MHZ] = 1980}};
    assert_true(lp_pm_value(&s, LP_PM_TENSOR) == 43.21);
    assert_true(lp_pm_value(&s, LP_PM_DRAM_READ) == 3072);
    assert_true(lp_pm_value(&s, LP_PM_GPC_MHZ) == 1980);
}

/* Parses TEXT, which must be accepted, and checks what it asks for. */
static void capture_ok(const char *text, enum lp_capture_mode mode, const char *range,
                       uint64_t first, uint64_t last, uint64_t every)
{
    struct lp_capture_spec s;
    char err[512] = "";
    assert_int_equal(lp_capture_parse(text, &s, err, sizeof err), 0);
    assert_int_equal(s.mode, mode);
    assert_string_equal(s.range, range);
    assert_int_equal(s.first, first);
    assert_int_equal(s.last, last);
    assert_int_equal(s.every, every);
}

/* Parses TEXT, which must be refused with exactly WHY. */
static void capture_refused(const char *text, const char *why)
{
    struct lp_capture_spec s;
    char err[512] = "";
    assert_int_equal(lp_capture_parse(text, &s, err, sizeof err), -1);
    assert_string_equal(err, why);
}

/* --capture's values: the modes by name, the nvtx selection read from the right (so a
 * regular expression may itself end in "-5" or a number), and every refusal saying what is
 * wrong, since the CLI passes the text on to the user as it is. */
static void test_capture_parse(void **state)
{
    (void)state;
    capture_ok(NULL, LP_CAPTURE_MODE_ALL, "", 0, 0, 0);
    capture_ok("", LP_CAPTURE_MODE_ALL, "", 0, 0, 0);
    capture_ok("all", LP_CAPTURE_MODE_ALL, "", 0, 0, 0);
    capture_ok("cuda-profiler", LP_CAPTURE_MODE_CUDA_PROFILER, "", 0, 0, 0);
    capture_ok("signal", LP_CAPTURE_MODE_SIGNAL, "", 0, 0, 0);
    capture_ok("nvtx:^step$", LP_CAPTURE_MODE_NVTX, "^step$", 1, 0, 1);
    capture_ok("nvtx:step@100-131", LP_CAPTURE_MODE_NVTX, "step", 100, 131, 1);
    capture_ok("nvtx:step@5", LP_CAPTURE_MODE_NVTX, "step", 5, 0, 1);
    capture_ok("nvtx:step/8", LP_CAPTURE_MODE_NVTX, "step", 1, 0, 8);
    capture_ok("nvtx:step@3/2", LP_CAPTURE_MODE_NVTX, "step", 3, 0, 2);
    capture_ok("nvtx:x@2-9/3", LP_CAPTURE_MODE_NVTX, "x", 2, 9, 3);
    capture_ok("nvtx:step@7-7", LP_CAPTURE_MODE_NVTX, "step", 7, 7, 1);
    /* no '@' before the "-5": all of it is the expression, nothing is selected */
    capture_ok("nvtx:a-5", LP_CAPTURE_MODE_NVTX, "a-5", 1, 0, 1);
    capture_ok("nvtx:v1-5", LP_CAPTURE_MODE_NVTX, "v1-5", 1, 0, 1);
    capture_ok("nvtx:12-34", LP_CAPTURE_MODE_NVTX, "12-34", 1, 0, 1);
    capture_ok("nvtx:layer10", LP_CAPTURE_MODE_NVTX, "layer10", 1, 0, 1);
    capture_ok("nvtx:a|b@2", LP_CAPTURE_MODE_NVTX, "a|b", 2, 0, 1);

    capture_refused("nvtx:@4", "--capture 'nvtx:@4': no range is named: give a regular "
                               "expression of range names, e.g. nvtx:^decode@100-131");
    capture_refused("nvtx:", "--capture 'nvtx:': no range is named: give a regular "
                             "expression of range names, e.g. nvtx:^decode@100-131");
    capture_refused("nvtx:a@5-3", "--capture 'nvtx:a@5-3': LAST is before FIRST");
    capture_refused("nvtx:a/0", "--capture 'nvtx:a/0': occurrences count from 1 and EVERY is "
                                "at least 1");
    capture_refused("nvtx:a@0", "--capture 'nvtx:a@0': occurrences count from 1 and EVERY is "
                                "at least 1");
#define FORMS                                                                                  \
    "--capture takes all, cuda-profiler, signal, graphs[@FIRST[-LAST]][/EVERY] or "               \
    "nvtx:REGEX[@FIRST[-LAST]][/EVERY], not "
    capture_refused("bogus", FORMS "'bogus'");
    capture_refused("NVTX:step", FORMS "'NVTX:step'");
    capture_refused("graphsx", FORMS "'graphsx'");
    capture_refused("graphs:1", FORMS "'graphs:1'");
#undef FORMS
    /* graphs: steps counted by graph launches, the same selection and nothing else */
    capture_ok("graphs", LP_CAPTURE_MODE_GRAPHS, "", 1, 0, 1);
    capture_ok("graphs@100-131", LP_CAPTURE_MODE_GRAPHS, "", 100, 131, 1);
    capture_ok("graphs/8", LP_CAPTURE_MODE_GRAPHS, "", 1, 0, 8);
    capture_ok("graphs@3/2", LP_CAPTURE_MODE_GRAPHS, "", 3, 0, 2);
    capture_refused("graphs@5x", "--capture 'graphs@5x': after 'graphs' come only "
                                 "@FIRST[-LAST] and /EVERY, e.g. graphs@100-131 or graphs/8");
    capture_refused("graphs@/8", "--capture 'graphs@/8': after 'graphs' come only "
                                 "@FIRST[-LAST] and /EVERY, e.g. graphs@100-131 or graphs/8");
    capture_refused("graphs@9-3", "--capture 'graphs@9-3': LAST is before FIRST");
    capture_refused("graphs/0", "--capture 'graphs/0': occurrences count from 1 and EVERY is "
                                "at least 1");
    /* the regex library's own words follow: only the start is ours */
    struct lp_capture_spec s;
    char err[512] = "";
    assert_int_equal(lp_capture_parse("nvtx:(a", &s, err, sizeof err), -1);
    const char *head = "--capture 'nvtx:(a': '(a' is not a regular expression: ";
    assert_memory_equal(err, head, strlen(head));
    assert_true(strlen(err) > strlen(head));
    /* a short ERR is cut, never overrun */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    assert_int_equal(lp_capture_parse("bogus", &s, tiny, 4), -1);
    assert_string_equal(tiny, "--c");
    assert_int_equal(tiny[4], 'x');
}

/* Which occurrences open a window: from FIRST, every EVERY-th, up to LAST (0: no end). */
static void test_capture_selects(void **state)
{
    (void)state;
    struct lp_capture_spec s;
    char err[256];
    assert_int_equal(lp_capture_parse("nvtx:x@2-9/3", &s, err, sizeof err), 0);
    char got[32] = "", want[] = ".x..x..x............";
    for (uint64_t n = 1; n <= 20; n++)
        got[n - 1] = lp_capture_selects(&s, n) ? 'x' : '.';
    assert_string_equal(got, want); /* 2, 5 and 8 only */
    assert_false(lp_capture_selects(&s, 0));
    assert_int_equal(lp_capture_parse("nvtx:^step$", &s, err, sizeof err), 0);
    for (uint64_t n = 1; n <= 20; n++)
        assert_true(lp_capture_selects(&s, n));
    assert_true(lp_capture_selects(&s, UINT64_MAX)); /* no LAST: no end */
    assert_int_equal(lp_capture_parse("nvtx:step@3/2", &s, err, sizeof err), 0);
    for (uint64_t n = 1; n <= 20; n++)
        assert_int_equal(lp_capture_selects(&s, n), n >= 3 && n % 2 == 1);
    assert_int_equal(lp_capture_parse("nvtx:step@100-131", &s, err, sizeof err), 0);
    assert_false(lp_capture_selects(&s, 99));
    assert_true(lp_capture_selects(&s, 100));
    assert_true(lp_capture_selects(&s, 131));
    assert_false(lp_capture_selects(&s, 132));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_type),
        cmocka_unit_test(test_kernel_configs_shared),
        cmocka_unit_test(test_chunk_account),
        cmocka_unit_test(test_account_newer_records),
        cmocka_unit_test(test_counter_dtypes),
        cmocka_unit_test(test_torn_at_every_length),
        cmocka_unit_test(test_corrupt_chunk_is_skipped),
        cmocka_unit_test(test_bad_magic_and_newer_version),
        cmocka_unit_test(test_writer_never_overwrites),
        cmocka_unit_test(test_unknown_record_type_is_skipped),
        cmocka_unit_test(test_device_records_merge),
        cmocka_unit_test(test_intern_table_is_bounded),
        cmocka_unit_test(test_sparse_string_id_is_cheap),
        cmocka_unit_test(test_string_ids_renumbered),
        cmocka_unit_test(test_short_record_is_malformed),
        cmocka_unit_test(test_decoded_bytes_bounded),
        cmocka_unit_test(test_memory_bounded),
        cmocka_unit_test(test_warnings_bounded),
        cmocka_unit_test(test_devices_and_meta_bounded),
        cmocka_unit_test(test_record_count_mismatch),
        cmocka_unit_test(test_empty_and_header_only),
        cmocka_unit_test(test_writer_limits),
        cmocka_unit_test(test_implausible_duration),
        cmocka_unit_test(test_row_long_durations),
        cmocka_unit_test(test_gemm_rows),
        cmocka_unit_test(test_kernel_tails),
        cmocka_unit_test(test_implausible_times),
        cmocka_unit_test(test_records_window_outliers),
        cmocka_unit_test(test_header_window_disagrees),
        cmocka_unit_test(test_fixtures_lose_nothing),
        cmocka_unit_test(test_capture_parse),
        cmocka_unit_test(test_capture_selects),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
