/* Makes fuzz seeds from real traces (tests/fixtures): the META payload and the first
 * records of two RECORDS chunks, cut at record boundaries, as an input of
 * fuzz_trace_records (NAME.rec), and the same wrapped into a small whole trace for
 * fuzz_trace_reader (NAME.lpt). The records are the fixture's bytes, untouched.
 * With --extreme, the same from traces written here whose values sit at the edges of what
 * a trace can hold (issue 52): allocations of INT64_MAX bytes and sums past UINT64_MAX,
 * copies of UINT64_MAX bytes, times near UINT64_MAX, durations past 2^63, an energy counter
 * that goes back, records that end before they start; whole ones go to whole/, the last
 * (its records left out as implausible, with a warning) to partial/.
 * Usage: fuzz_make_seeds RECORDS_DIR TRACES_DIR FIXTURE.lpt...
 *        fuzz_make_seeds --extreme CORPUS_DIR (tests/fuzz/corpus) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "fuzz.h"
#include "llmprof/trace.h"
#include "trace/codec.h"

#define PART_BYTES 4096 /* records taken from each chunk: small seeds fuzz fast */

/* The decoded payload of the Nth chunk of TYPE in the file image, or NULL. */
static uint8_t *chunk_payload(const uint8_t *d, size_t n, uint32_t type, int nth, size_t *len)
{
    for (size_t off = LP_FILE_HEADER_SIZE; off + LP_CHUNK_HEADER_SIZE <= n;) {
        struct lp_chunk_header h;
        if (lp_chunk_header_unpack(d + off, &h) != 0 ||
            h.payload_size > n - off - LP_CHUNK_HEADER_SIZE || h.raw_size > LP_CHUNK_MAX_RAW)
            return NULL;
        const uint8_t *p = d + off + LP_CHUNK_HEADER_SIZE;
        off += LP_CHUNK_HEADER_SIZE + h.payload_size;
        if (h.type != type || nth-- > 0)
            continue;
        uint8_t *raw = malloc(h.raw_size ? h.raw_size : 1);
        if (!raw)
            return NULL;
        if (h.codec == LP_CODEC_RAW && h.raw_size == h.payload_size)
            memcpy(raw, p, h.raw_size);
        else if (h.codec != LP_CODEC_ZSTD ||
                 ZSTD_decompress(raw, h.raw_size, p, h.payload_size) != h.raw_size) {
            free(raw);
            return NULL;
        }
        *len = h.raw_size;
        return raw;
    }
    return NULL;
}

/* Length of the longest run of whole records at the start of S that fits MAX bytes and
 * holds no separator. */
static size_t record_prefix(const uint8_t *s, size_t n, size_t max)
{
    struct lp_cursor c = {s, s + n, 0};
    size_t keep = 0;
    while (c.p < c.end) {
        lp_cur_uvar(&c);
        uint64_t body = lp_cur_uvar(&c);
        if (c.bad || body > (size_t)(c.end - c.p))
            break;
        size_t next = (size_t)(c.p - s) + (size_t)body;
        if (next > max ||
            memmem(s, next, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1))
            break;
        c.p += body;
        keep = next;
    }
    return keep;
}

static int write_file(const char *dir, const char *name, const char *ext, const void *p,
                      size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(p, 1, n, f) != n;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad)
        fprintf(stderr, "cannot write %s\n", path);
    return bad ? -1 : 0;
}

/* NAME: the fixture's directory, e.g. tests/fixtures/hf-moe/trace.vm.588.lpt -> hf-moe */
static void seed_name(const char *path, char *name, size_t len)
{
    const char *end = strrchr(path, '/'), *start = end;
    while (start && start > path && start[-1] != '/')
        start--;
    if (!end || start == end)
        snprintf(name, len, "seed");
    else
        snprintf(name, len, "%.*s", (int)(end - start), start);
}

static int seed(const char *rec_dir, const char *trace_dir, const char *path,
                const char *name)
{
    int rc = -1;
    uint8_t *file = NULL, *meta = NULL, *first = NULL, *later = NULL;
    struct lp_buf in = {0}, image = {0};
    size_t n = 0, meta_len = 0, first_len = 0, later_len = 0;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        rewind(f);
        if (size > 0 && (file = malloc((size_t)size)) && fread(file, 1, (size_t)size, f) == (size_t)size)
            n = (size_t)size;
    }
    if (f)
        fclose(f);
    if (!n || !(meta = chunk_payload(file, n, LP_CHUNK_META, 0, &meta_len)) ||
        !(first = chunk_payload(file, n, LP_CHUNK_RECORDS, 0, &first_len))) {
        fprintf(stderr, "%s: not a trace with a META and a RECORDS chunk\n", path);
        goto out;
    }
    /* a later chunk: decode steps rather than start-up; its deltas start afresh too */
    later = chunk_payload(file, n, LP_CHUNK_RECORDS, 2, &later_len);
    if (!later)
        later = chunk_payload(file, n, LP_CHUNK_RECORDS, 1, &later_len);
    if (memmem(meta, meta_len, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1)) {
        fprintf(stderr, "%s: the META payload holds the separator\n", path);
        goto out;
    }
    lp_buf_put(&in, meta, meta_len);
    lp_buf_put(&in, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1);
    lp_buf_put(&in, first, record_prefix(first, first_len, PART_BYTES));
    if (later) {
        lp_buf_put(&in, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1);
        lp_buf_put(&in, later, record_prefix(later, later_len, PART_BYTES));
    }
    if (in.oom || lp_fuzz_trace_build(in.data, in.len, 1, &image) != 0) {
        fprintf(stderr, "out of memory\n");
        goto out;
    }
    if (write_file(rec_dir, name, "rec", in.data, in.len) == 0 &&
        write_file(trace_dir, name, "lpt", image.data, image.len) == 0) {
        printf("%s: %zu bytes of input, a %zu-byte trace\n", name, in.len, image.len);
        rc = 0;
    }
out:
    free(file);
    free(meta);
    free(first);
    free(later);
    lp_buf_free(&in);
    lp_buf_free(&image);
    return rc;
}

/* ---- traces at the edges (--extreme) ---- */

#define Q62 (1ull << 62)

struct gen {
    struct lp_trace_writer *w;
    uint32_t corr, id;
    int bad;
};

static void put(struct gen *g, struct lp_record *r)
{
    g->bad |= lp_trace_writer_add(g->w, r) != LP_OK;
}

static void g_range(struct gen *g, const char *name, uint64_t a, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_MARKER};
    uint32_t id = ++g->id;
    r.u.marker = (struct lp_marker){.timestamp = a, .id = id, .flags = LP_MARKER_FLAG_START,
                                    .name = lp_trace_writer_intern(g->w, name), .thread = 1};
    put(g, &r);
    r.u.marker = (struct lp_marker){.timestamp = e, .id = id, .flags = LP_MARKER_FLAG_END,
                                    .thread = 1};
    put(g, &r);
}

/* a kernel launched by a 1 us call at LAUNCH on thread 1 */
static void g_kernel(struct gen *g, const char *name, uint64_t launch, uint64_t s, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_API};
    uint32_t corr = ++g->corr;
    r.u.api = (struct lp_api){.start = launch, .end = launch + 1000, .correlation = corr,
                              .thread = 1, .domain = LP_API_DOMAIN_RUNTIME,
                              .name = lp_trace_writer_intern(g->w, "cudaLaunchKernel")};
    put(g, &r);
    r = (struct lp_record){.type = LP_REC_KERNEL};
    r.u.kernel = (struct lp_kernel){.start = s, .end = e, .correlation = corr, .stream = 7,
                                    .name = lp_trace_writer_intern(g->w, name),
                                    .static_smem = UINT32_MAX, .dynamic_smem = UINT32_MAX};
    put(g, &r);
}

static void g_copy(struct gen *g, uint64_t s, uint64_t e, uint64_t bytes, uint32_t kind)
{
    struct lp_record r = {.type = LP_REC_MEMCPY};
    r.u.memcpy = (struct lp_memcpy){.start = s, .end = e, .bytes = bytes, .stream = 7,
                                    .correlation = ++g->corr, .copy_kind = kind};
    put(g, &r);
}

static void g_set(struct gen *g, uint64_t s, uint64_t e, uint64_t bytes)
{
    struct lp_record r = {.type = LP_REC_MEMSET};
    r.u.memset = (struct lp_memset){.start = s, .end = e, .bytes = bytes, .stream = 7,
                                    .correlation = ++g->corr};
    put(g, &r);
}

static void g_memory(struct gen *g, uint32_t op, uint64_t ts, uint64_t address, uint64_t bytes)
{
    struct lp_record r = {.type = LP_REC_MEMORY};
    r.u.memory = (struct lp_memory){.timestamp = ts, .address = address, .bytes = bytes,
                                    .op = op, .memory_kind = 3};
    put(g, &r);
}

static void g_nvml(struct gen *g, uint64_t ts, uint32_t power_mw, uint64_t energy_mj)
{
    struct lp_record r = {.type = LP_REC_NVML};
    r.u.nvml = (struct lp_nvml_sample){
        .timestamp = ts, .valid = LP_NVML_FIELD_POWER | LP_NVML_FIELD_ENERGY |
                                  LP_NVML_FIELD_MEM_USED,
        .power_mw = power_mw, .energy_mj = energy_mj, .mem_used = UINT64_MAX};
    put(g, &r);
}

static void g_overhead(struct gen *g, uint64_t s, uint64_t e)
{
    struct lp_record r = {.type = LP_REC_OVERHEAD};
    r.u.overhead = (struct lp_overhead){.start = s, .end = e, .kind = 1u << 16, .thread = 1};
    put(g, &r);
}

static void g_loss(struct gen *g, uint64_t count)
{
    struct lp_record r = {.type = LP_REC_LOSS};
    r.u.loss = (struct lp_loss){.source = LP_LOSS_SOURCE_CUPTI_DROPPED, .count = count,
                                .what = lp_trace_writer_intern(g->w, "dropped")};
    put(g, &r);
}

/* a cuBLAS call of M x N x K on thread 1 */
static void g_gemm(struct gen *g, uint64_t s, uint64_t e, uint64_t m, uint64_t n, uint64_t k)
{
    struct lp_record r = {.type = LP_REC_GEMM};
    r.u.gemm = (struct lp_gemm){.start = s, .end = e, .thread = 1, .m = m, .n = n, .k = k,
                                .batch = 1, .api = lp_trace_writer_intern(g->w, "cublasGemmEx"),
                                .a_type = 14, .b_type = 14, .c_type = 14, .d_type = 14,
                                .compute_type = 68, .algo = -1, .epilogue = 1};
    put(g, &r);
}

/* Bytes and counts at the edges, times small: allocation sums past INT64_MAX and UINT64_MAX
 * and the frees that give them back, copies and sets of UINT64_MAX bytes, NVML's counters
 * wrapped, loss counts whose sum wraps to 0, GEMM shapes past any layer. */
static void extreme_bytes(struct gen *g)
{
    g_range(g, "prefill", 1000, 100000);
    g_range(g, "decode", 200000, 300000);
    g_kernel(g, "gemm_a", 2000, 3000, 50000);
    g_kernel(g, "gemm_b", 201000, 202000, 250000);
    g_memory(g, LP_MEMORY_OP_ALLOC, 1500, 0x1000, 1944521688);
    g_memory(g, LP_MEMORY_OP_ALLOC, 4000, 0x2000, INT64_MAX);
    g_memory(g, LP_MEMORY_OP_FREE, 6000, 0x2000, INT64_MAX);
    for (uint64_t i = 0; i < 5; i++)
        g_memory(g, LP_MEMORY_OP_ALLOC, 7000 + i, 0x3000 + i, Q62);
    g_memory(g, LP_MEMORY_OP_ALLOC, 8000, 0x4000, UINT64_MAX);
    g_memory(g, LP_MEMORY_OP_FREE, 210000, 0x4000, UINT64_MAX);
    g_memory(g, LP_MEMORY_OP_FREE, 211000, 0x5000, UINT64_MAX);
    g_copy(g, 51000, 52000, UINT64_MAX, 1);
    g_copy(g, 53000, 54000, 10, 1);
    g_copy(g, 55000, 56000, INT64_MAX, 2);
    g_copy(g, 57000, 58000, INT64_MAX, 2);
    g_set(g, 61000, 62000, UINT64_MAX);
    g_set(g, 63000, 64000, 5);
    g_nvml(g, 500, 300000, UINT64_MAX - 1000);
    g_nvml(g, 150000, UINT32_MAX, 5);
    g_nvml(g, 299000, UINT32_MAX, 9005);
    g_loss(g, 1ull << 63);
    g_loss(g, 1ull << 63);
    g_gemm(g, 1900, 2100, UINT64_MAX, UINT64_MAX, UINT64_MAX);
    g_gemm(g, 200500, 201500, INT64_MAX, 1, INT64_MAX);
}

/* Every time near UINT64_MAX: the recording the records place at the clock's end. */
static void extreme_late(struct gen *g)
{
    const uint64_t t0 = UINT64_MAX - 1000000;
    g_range(g, "warmup", t0, t0 + 1000);
    g_range(g, "prefill", t0 + 2000, t0 + 500000);
    g_range(g, "decode", t0 + 600000, UINT64_MAX - 1);
    g_kernel(g, "gemm_w", t0 + 10, t0 + 100, t0 + 900);
    g_kernel(g, "gemm_a", t0 + 2100, t0 + 3000, t0 + 400000);
    g_kernel(g, "nccl_allreduce", t0 + 600100, t0 + 601000, UINT64_MAX - 3);
    g_kernel(g, "gemm_c", t0 + 990000, UINT64_MAX - 2, UINT64_MAX);
    g_copy(g, t0 + 450000, t0 + 460000, 1 << 20, 1);
    g_memory(g, LP_MEMORY_OP_ALLOC, t0 + 2500, 0x1000, 1 << 30);
    g_nvml(g, t0 + 1, 300000, 5000);
    g_nvml(g, UINT64_MAX, 350000, 7000);
    g_overhead(g, t0 + 2200, UINT64_MAX);
}

/* A header whose recording spans the clock: overlapping durations of 0.75 x 2^63 and 0.9 x
 * 2^64 ns whose sums pass INT64_MAX and UINT64_MAX. */
static void extreme_long(struct gen *g)
{
    const uint64_t d = Q62 + Q62 / 2, huge = UINT64_MAX / 10 * 9;
    g_range(g, "prefill", 10, 5000 + d);
    g_range(g, "decode", 6000 + d, UINT64_MAX - 20);
    for (uint64_t i = 0; i < 3; i++)
        g_kernel(g, "gemm_a", 100 + 10 * i, 1000, 1000 + d);
    g_kernel(g, "nccl_allreduce", 400, 500, 500 + d);
    g_kernel(g, "nccl_allreduce", 600, 700, 700 + d / 2);
    g_kernel(g, "gemm_b", 7000 + d, 8000 + d, 8000 + d + huge / 20);
    g_kernel(g, "gemm_huge", 300, 900, 900 + huge);
    g_kernel(g, "gemm_huge", 350, 950, 950 + huge - 1000);
    g_copy(g, 4000, 4000 + d / 2, UINT64_MAX, 1);
    g_overhead(g, 20, 20 + d);
    g_overhead(g, 30, 30 + huge);
    g_nvml(g, 50, 300000, UINT64_MAX - 1000);
    g_nvml(g, 50 + d, UINT32_MAX, 5);
}

/* Records that end before they start (left out with a warning: a partial seed). */
static void extreme_backwards(struct gen *g)
{
    g_range(g, "prefill", 1000, 100000);
    g_kernel(g, "gemm_a", 2000, 3000, 50000);
    g_kernel(g, "gemm_back", 51000, 60000, 52000);
    g_copy(g, 70000, 61000, UINT64_MAX, 1);
    g_set(g, 80000, 79999, 5);
    g_overhead(g, 90000, 1);
    g_memory(g, LP_MEMORY_OP_ALLOC, 95000, 0x1000, INT64_MAX);
}

/* Writes the trace FILL makes (a header window of START to END when START), then its seeds
 * as NAME under CORPUS's trace_records/ and trace_reader/ in DIR (whole or partial). */
static int extreme(const char *corpus, const char *dir, const char *name, uint64_t start,
                   uint64_t end, void (*fill)(struct gen *))
{
    char path[] = "/tmp/lp_fuzz_seed.XXXXXX", err[256], v[32], rec[4096], lpt[4096];
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return -1;
    }
    close(fd);
    unlink(path); /* the writer creates it anew */
    struct gen g = {0};
    if (lp_trace_writer_open(&g.w, path, NULL, err, sizeof err) != LP_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    lp_trace_writer_set_meta(g.w, "pid", "42");
    /* both in the header: a seed's END chunk repeats the META chunk (fuzz.h) */
    if (start) {
        snprintf(v, sizeof v, "%llu", (unsigned long long)start);
        lp_trace_writer_set_meta(g.w, "start_trace_ns", v);
        snprintf(v, sizeof v, "%llu", (unsigned long long)end);
        lp_trace_writer_set_meta(g.w, "end_trace_ns", v);
    }
    g.bad |= lp_trace_writer_write_header(g.w) != LP_OK;
    fill(&g);
    g.bad |= lp_trace_writer_close(g.w) != LP_OK;
    snprintf(rec, sizeof rec, "%s/trace_records/%s", corpus, dir);
    snprintf(lpt, sizeof lpt, "%s/trace_reader/%s", corpus, dir);
    int rc = g.bad ? -1 : seed(rec, lpt, path, name);
    if (g.bad)
        fprintf(stderr, "%s: the trace could not be written\n", name);
    unlink(path);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--extreme")) {
        /* the header reads no number quite as large as UINT64_MAX */
        int bad = extreme(argv[2], "whole", "extreme-bytes", 0, 0, extreme_bytes) |
                  extreme(argv[2], "whole", "extreme-late", 0, 0, extreme_late) |
                  extreme(argv[2], "whole", "extreme-long", 1, UINT64_MAX - 10, extreme_long) |
                  extreme(argv[2], "partial", "extreme-backwards", 0, 0, extreme_backwards);
        return bad ? 1 : 0;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: %s RECORDS_DIR TRACES_DIR FIXTURE.lpt...\n"
                        "       %s --extreme CORPUS_DIR\n", argv[0], argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 3; i < argc; i++) {
        char name[256];
        seed_name(argv[i], name, sizeof name);
        if (seed(argv[1], argv[2], argv[i], name) != 0)
            rc = 1;
    }
    return rc;
}
