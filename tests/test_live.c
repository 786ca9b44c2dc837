/* llmprof watch's parts without a server: the follower on a trace written while it reads
 * (cut at every few bytes, torn, corrupt, replaced, strings over writer generations) and the
 * live figures from records (stages, warm-up, the request convention, windows, bounds). The
 * figures against report on real traces: tests/watch_scrape.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <zstd.h>

#include "llmprof/follow.h"
#include "llmprof/live.h"
#include "trace/codec.h"

/* ---- a trace written with small chunks, as bytes ---- */

struct built {
    uint8_t *data;
    size_t len;
    uint64_t records;             /* added, strings left out */
};

static void temp_path(char *path, size_t len, const char *tag)
{
    snprintf(path, len, "/tmp/lp_test_live_%s.%d", tag, (int)getpid());
}

static void slurp(const char *path, struct built *b)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    b->len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b->data = malloc(b->len);
    assert_non_null(b->data);
    assert_int_equal(fread(b->data, 1, b->len, f), b->len);
    fclose(f);
}

/* N ranges named "r<i % NAMES>" on thread 1, 1 us apart, a token mark in each, an NVML
 * sample every tenth; the writer's string table holds MAX_STRINGS (0: default) */
static void build(struct built *b, int n, int names, size_t max_strings)
{
    char path[128];
    temp_path(path, sizeof path, "build");
    unlink(path);
    struct lp_trace_writer *w = NULL;
    struct lp_trace_writer_options o = {.chunk_bytes = 256, .max_strings = max_strings};
    char err[256];
    assert_int_equal(lp_trace_writer_open(&w, path, &o, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(w, "pid", "77");
    assert_int_equal(lp_trace_writer_write_header(w), LP_OK);
    b->records = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i % names);
        uint64_t t = 1000000000000ull + (uint64_t)i * 1000;
        struct lp_record r = {.type = LP_REC_MARKER};
        r.u.marker = (struct lp_marker){.timestamp = t, .id = (uint32_t)i + 1,
                                        .flags = LP_MARKER_FLAG_START,
                                        .name = lp_trace_writer_intern(w, name), .thread = 1};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
        r.u.marker = (struct lp_marker){.timestamp = t + 500, .id = (uint32_t)i + 1,
                                        .flags = LP_MARKER_FLAG_END, .thread = 1};
        assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
        b->records += 2;
        if (i % 10 == 0) {
            r = (struct lp_record){.type = LP_REC_NVML};
            r.u.nvml = (struct lp_nvml_sample){.timestamp = t + 700, .valid = LP_NVML_FIELD_POWER,
                                               .power_mw = 100000 + (uint32_t)i};
            assert_int_equal(lp_trace_writer_add(w, &r), LP_OK);
            b->records++;
        }
    }
    assert_int_equal(lp_trace_writer_close(w), LP_OK);
    slurp(path, b);
    unlink(path);
}

/* what the follower handed on: records, and names checked against the builder's */
struct seen {
    uint64_t records, starts, wrong_names;
    int names;
};

static int on_record(void *ctx, struct lp_follow *f, const struct lp_record *r)
{
    struct seen *s = ctx;
    s->records++;
    if (r->type == LP_REC_MARKER && (r->u.marker.flags & LP_MARKER_FLAG_START)) {
        char want[32];
        snprintf(want, sizeof want, "r%u", (r->u.marker.id - 1) % (unsigned)s->names);
        s->wrong_names += strcmp(lp_follow_str(f, r->u.marker.name), want) != 0;
        s->starts++;
    }
    return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t len, const char *mode)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static int poll_once(struct lp_follow *f, struct seen *s)
{
    char err[256];
    int more = 1, rc = LP_OK;
    while (more && rc == LP_OK)
        rc = lp_follow_poll(f, 0, on_record, s, &more, err, sizeof err);
    return rc;
}

/* The file grows STEP bytes at a time, a poll after each: every record comes through once,
 * the chunk not yet whole is waited for */
static void grow_by(size_t step)
{
    struct built b;
    build(&b, 600, 50, 0);
    char path[128];
    temp_path(path, sizeof path, "grow");
    unlink(path);
    struct lp_follow *f = NULL;
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    struct seen s = {.names = 50};
    assert_int_equal(poll_once(f, &s), LP_OK); /* not there yet: nothing, no error */
    int waited = 0;
    for (size_t at = 0; at < b.len; at += step) {
        size_t n = b.len - at < step ? b.len - at : step;
        write_file(path, b.data + at, n, at ? "ab" : "wb");
        assert_int_equal(poll_once(f, &s), LP_OK);
        waited |= lp_follow_stats(f).waiting;
        if (at + n < b.len)
            assert_false(lp_follow_stats(f).complete);
    }
    struct lp_follow_stats st = lp_follow_stats(f);
    assert_int_equal(s.records, b.records);
    assert_int_equal(s.starts, 600);
    assert_int_equal(s.wrong_names, 0);
    assert_true(st.complete);
    assert_int_equal(st.bytes, b.len);
    assert_int_equal(st.bad_chunks, 0);
    assert_int_equal(st.unknown_strings, 0);
    assert_true(waited || step >= b.len);
    assert_string_equal(lp_follow_meta(f, "pid"), "77");
    lp_follow_free(f);
    unlink(path);
    free(b.data);
}

static void test_follow_growing(void **state)
{
    (void)state;
    grow_by(1);
    grow_by(37);
    grow_by(1000);
    grow_by(1u << 30); /* all at once */
}

/* chunk offsets of a built trace */
static size_t chunk_offsets(const struct built *b, size_t *off, size_t max)
{
    size_t n = 0;
    for (size_t at = 16; at + 32 <= b->len && n < max;) {
        uint32_t payload;
        memcpy(&payload, b->data + at + 8, 4);
        off[n++] = at;
        at += 32 + payload;
    }
    return n;
}

/* A corrupt chunk amid the file is skipped and counted; a last chunk that fails its checksum
 * is waited for a few polls, then counted; a damaged header is skipped to the next one */
static void test_follow_damage(void **state)
{
    (void)state;
    struct built b;
    build(&b, 300, 20, 0);
    size_t off[4096];
    size_t n = chunk_offsets(&b, off, 4096);
    assert_true(n > 10);
    char path[128];
    temp_path(path, sizeof path, "damage");
    /* a payload byte of chunk 5 flipped */
    uint8_t *d = malloc(b.len);
    memcpy(d, b.data, b.len);
    d[off[5] + 40] ^= 0x55;
    /* chunk 8's header magic broken */
    d[off[8]] ^= 0xff;
    write_file(path, d, b.len, "wb");
    struct lp_follow *f = NULL;
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    struct seen s = {.names = 20};
    assert_int_equal(poll_once(f, &s), LP_OK);
    struct lp_follow_stats st = lp_follow_stats(f);
    assert_int_equal(st.bad_chunks, 2);
    assert_true(st.dropped_bytes > 0);
    assert_true(st.complete);
    assert_true(s.records < b.records);
    assert_true(s.records > b.records / 2);
    assert_int_equal(s.wrong_names, 0);
    lp_follow_free(f);

    /* the last chunk so far with a bad checksum: waited for 3 polls, then skipped */
    size_t cut = off[6];
    memcpy(d, b.data, b.len);
    d[off[5] + 40] ^= 0x55;
    write_file(path, d, cut, "wb");
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    s = (struct seen){.names = 20};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(poll_once(f, &s), LP_OK);
        assert_true(lp_follow_stats(f).waiting);
        assert_int_equal(lp_follow_stats(f).bad_chunks, 0);
    }
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(lp_follow_stats(f).bad_chunks, 1);
    assert_false(lp_follow_stats(f).waiting);
    /* the rest arrives and is read */
    write_file(path, b.data + cut, b.len - cut, "ab");
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_true(lp_follow_stats(f).complete);
    lp_follow_free(f);
    unlink(path);
    free(d);
    free(b.data);
}

/* Not a trace: said with the file's name, and said again; a trace replaced by another (a new
 * run in the same place) is read from its start */
static void test_follow_refused_and_replaced(void **state)
{
    (void)state;
    char path[128], other[140], err[512];
    temp_path(path, sizeof path, "refused");
    write_file(path, (const uint8_t *)"hello, this is not a trace at all\n", 34, "wb");
    struct lp_follow *f = NULL;
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    int more = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(lp_follow_poll(f, 0, on_record, NULL, &more, err, sizeof err),
                         LP_ERR_FORMAT);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, "not an llmprof trace"));
    }
    lp_follow_free(f);

    struct built a, b;
    build(&a, 100, 10, 0);
    build(&b, 40, 10, 0);
    write_file(path, a.data, a.len, "wb");
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    struct seen s = {.names = 10};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(s.records, a.records);
    /* removed, then written again: what was read stays until the new file appears */
    unlink(path);
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_true(lp_follow_stats(f).complete);
    assert_int_equal(lp_follow_stats(f).restarts, 0);
    assert_string_equal(lp_follow_meta(f, "pid"), "77");
    write_file(path, a.data, a.len, "wb");
    s = (struct seen){.names = 10};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(s.records, a.records);
    assert_int_equal(lp_follow_stats(f).restarts, 1);
    snprintf(other, sizeof other, "%s.new", path);
    write_file(other, b.data, b.len, "wb");
    assert_int_equal(rename(other, path), 0);
    s = (struct seen){.names = 10};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(s.records, b.records);
    assert_int_equal(lp_follow_stats(f).restarts, 2);
    /* cut shorter in place: read again too */
    write_file(path, b.data, b.len / 2, "wb");
    s = (struct seen){.names = 10};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(lp_follow_stats(f).restarts, 3);
    assert_true(s.records < b.records);
    lp_follow_free(f);
    unlink(path);
    free(a.data);
    free(b.data);
}

/* A flipped bit in a chunk's number (outside the header's checksum) skips nothing; a chunk
 * that would decode to 64 MiB from a few KB is skipped by the decode budget, quickly */
static void test_follow_numbers_and_budget(void **state)
{
    (void)state;
    struct built b;
    build(&b, 300, 20, 0);
    size_t off[4096];
    assert_true(chunk_offsets(&b, off, 4096) > 6);
    char path[128];
    temp_path(path, sizeof path, "seq");
    uint8_t *d = malloc(b.len);
    memcpy(d, b.data, b.len);
    d[off[3] + 31] ^= 0x80; /* bit 31 of chunk 3's number */
    write_file(path, d, b.len, "wb");
    struct lp_follow *f = NULL;
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    struct seen s = {.names = 20};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(s.records, b.records);
    assert_true(lp_follow_stats(f).complete);
    assert_int_equal(lp_follow_stats(f).missing, 0);
    lp_follow_free(f);
    free(d);

    /* a file header and one chunk: a zstd frame of 64 MiB of zeros */
    size_t raw = 64u << 20, cap = ZSTD_compressBound(raw);
    uint8_t *zeros = calloc(1, raw), *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, zeros, raw, 1);
    assert_false(ZSTD_isError(zn));
    struct lp_chunk_header h = {.type = LP_CHUNK_RECORDS, .codec = LP_CODEC_ZSTD,
                                .payload_size = (uint32_t)zn, .raw_size = (uint32_t)raw,
                                .n_records = 1, .payload_crc = lp_crc32(z, zn), .seq = 2};
    uint8_t hdr[LP_CHUNK_HEADER_SIZE];
    lp_chunk_header_pack(&h, hdr);
    write_file(path, b.data, LP_FILE_HEADER_SIZE, "wb");
    write_file(path, hdr, sizeof hdr, "ab");
    write_file(path, z, zn, "ab");
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    s = (struct seen){.names = 20};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(lp_follow_stats(f).over_budget, 1);
    assert_int_equal(s.records, 0);
    lp_follow_free(f);
    unlink(path);
    free(zeros);
    free(z);
    free(b.data);
}

/* A writer whose string table starts over every 4 names defines names again: each record's
 * name is the one it was written with */
static void test_follow_string_generations(void **state)
{
    (void)state;
    struct built b;
    build(&b, 500, 37, 4);
    char path[128];
    temp_path(path, sizeof path, "gen");
    write_file(path, b.data, b.len, "wb");
    struct lp_follow *f = NULL;
    assert_int_equal(lp_follow_open(&f, path), LP_OK);
    struct seen s = {.names = 37};
    assert_int_equal(poll_once(f, &s), LP_OK);
    assert_int_equal(s.starts, 500);
    assert_int_equal(s.wrong_names, 0);
    assert_int_equal(lp_follow_stats(f).unknown_strings, 0);
    lp_follow_free(f);
    unlink(path);
    free(b.data);
}

/* ---- live figures from records ---- */

static const char *names[] = {"", "decode tokens=8", "prefill tokens=100", "warmup",
                              "request a1", "request b2", "token a1", "token b2", "token zz",
                              "step", "other"};
enum { N_EMPTY, N_DECODE, N_PREFILL, N_WARMUP, N_REQ_A, N_REQ_B, N_TOK_A, N_TOK_B, N_TOK_ZZ,
       N_STEP, N_OTHER };

static const char *name_of(void *ctx, lp_str id)
{
    (void)ctx;
    return id < sizeof names / sizeof *names ? names[id] : "<unknown>";
}

static void mark(struct lp_live *l, uint32_t flags, uint32_t id, lp_str name, uint32_t thread,
                 uint64_t ts)
{
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = ts, .id = id, .flags = flags, .name = name,
                                    .thread = thread};
    assert_int_equal(lp_live_add(l, &r, name_of, NULL), LP_OK);
}

#define MS 1000000ull
#define T0 (5000ull * 1000000000ull)

static const struct lp_live_stage *stage_named(const struct lp_live_facts *f, const char *n)
{
    for (size_t i = 0; i < f->n_stages; i++)
        if (!strcmp(f->stages[i].name, n))
            return &f->stages[i];
    return NULL;
}

/* Top-level stage ranges only; warm-up apart; tokens=N; the buckets' edges */
static void test_live_stages(void **state)
{
    (void)state;
    struct lp_live *l = NULL;
    char err[256];
    assert_int_equal(lp_live_init(&l, NULL, 0, err, sizeof err), LP_OK);
    /* a warm-up holding a prefill (the warm-up's, not the prefill's) */
    mark(l, LP_MARKER_FLAG_START, 1, N_WARMUP, 1, T0);
    mark(l, LP_MARKER_FLAG_START, 2, N_PREFILL, 1, T0 + 1 * MS);
    mark(l, LP_MARKER_FLAG_END, 2, 0, 1, T0 + 11 * MS);
    mark(l, LP_MARKER_FLAG_END, 1, 0, 1, T0 + 12 * MS);
    /* a prefill of exactly 10 ms (the 0.01 bucket holds it), then a decode holding a decode
     * (one occurrence) on thread 1, and a decode on thread 2 meanwhile (its own) */
    mark(l, LP_MARKER_FLAG_START, 3, N_PREFILL, 1, T0 + 20 * MS);
    mark(l, LP_MARKER_FLAG_END, 3, 0, 1, T0 + 30 * MS);
    mark(l, LP_MARKER_FLAG_START, 4, N_DECODE, 1, T0 + 40 * MS);
    mark(l, LP_MARKER_FLAG_START, 5, N_DECODE, 1, T0 + 41 * MS);
    mark(l, LP_MARKER_FLAG_START, 6, N_DECODE, 2, T0 + 42 * MS);
    mark(l, LP_MARKER_FLAG_END, 5, 0, 1, T0 + 43 * MS);
    mark(l, LP_MARKER_FLAG_END, 6, 0, 2, T0 + 44 * MS);
    mark(l, LP_MARKER_FLAG_END, 4, 0, 1, T0 + 60 * MS);
    /* no stage: a range of no rule; an end never begun */
    mark(l, LP_MARKER_FLAG_START, 7, N_OTHER, 1, T0 + 70 * MS);
    mark(l, LP_MARKER_FLAG_END, 7, 0, 1, T0 + 71 * MS);
    mark(l, LP_MARKER_FLAG_END, 99, 0, 1, T0 + 72 * MS);
    struct lp_live_facts f = lp_live_facts(l);
    assert_int_equal(f.n_stages, 3);
    const struct lp_live_stage *w = stage_named(&f, "warmup"), *p = stage_named(&f, "prefill"),
                               *d = stage_named(&f, "decode");
    assert_non_null(w);
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(w->wall.count, 1);
    assert_int_equal(w->wall.sum_ns, 10 * MS);
    assert_int_equal(w->tokens, 100);
    assert_int_equal(p->wall.count, 1);
    assert_int_equal(p->wall.sum_ns, 10 * MS);
    assert_int_equal(p->tokens, 100);
    assert_int_equal(p->wall.bucket[5], 1); /* le 0.01 */
    assert_int_equal(d->wall.count, 2);
    assert_int_equal(d->wall.sum_ns, 20 * MS + 2 * MS);
    assert_int_equal(d->tokens, 16);
    assert_int_equal(d->wall.bucket[7], 1); /* 20 ms: le 0.02 */
    assert_int_equal(d->wall.bucket[2], 1); /* 2 ms: le 0.0025 */
    assert_int_equal(f.ranges_unmatched, 1);
    assert_int_equal(f.records[LP_REC_MARKER], 15);
    lp_live_free(l);

    /* rules of one's own; a bad one refused, saying which */
    const char *rules[] = {"iteration=^step"};
    assert_int_equal(lp_live_init(&l, rules, 1, err, sizeof err), LP_OK);
    mark(l, LP_MARKER_FLAG_START, 1, N_STEP, 1, T0);
    mark(l, LP_MARKER_FLAG_END, 1, 0, 1, T0 + 3 * MS);
    mark(l, LP_MARKER_FLAG_START, 2, N_DECODE, 1, T0 + 4 * MS);
    mark(l, LP_MARKER_FLAG_END, 2, 0, 1, T0 + 5 * MS);
    f = lp_live_facts(l);
    assert_int_equal(f.n_stages, 1);
    assert_string_equal(f.stages[0].name, "iteration");
    lp_live_free(l);
    const char *bad[] = {"x=("};
    assert_int_equal(lp_live_init(&l, bad, 1, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "x=("));
    const char *no_eq[] = {"decode"};
    assert_int_equal(lp_live_init(&l, no_eq, 1, err, sizeof err), LP_ERR_ARG);
    assert_non_null(strstr(err, "NAME=REGEX"));
}

/* TTFT, ITL and TPOT by the report's definitions; what cannot be counted is counted apart */
static void test_live_requests(void **state)
{
    (void)state;
    struct lp_live *l = NULL;
    char err[256];
    assert_int_equal(lp_live_init(&l, NULL, 0, err, sizeof err), LP_OK);
    mark(l, LP_MARKER_FLAG_START, 1, N_REQ_A, 1, T0);
    mark(l, LP_MARKER_FLAG_START, 2, N_REQ_B, 1, T0 + 5 * MS);
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_A, 1, T0 + 100 * MS); /* TTFT 100 ms */
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_A, 1, T0 + 110 * MS); /* ITL 10 */
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_A, 1, T0 + 130 * MS); /* ITL 20 */
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_ZZ, 1, T0 + 131 * MS); /* no such request */
    mark(l, LP_MARKER_FLAG_END, 1, 0, 1, T0 + 140 * MS);          /* TPOT 30 / 2 */
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_A, 1, T0 + 150 * MS); /* after its end */
    struct lp_live_facts f = lp_live_facts(l);
    assert_true(f.convention);
    assert_int_equal(f.requests_started, 2);
    assert_int_equal(f.requests_done, 1);
    assert_int_equal(f.requests_open, 1);
    assert_int_equal(f.token_marks, 5);
    assert_int_equal(f.marks_unknown, 2);
    assert_int_equal(f.ttft.count, 1);
    assert_int_equal(f.ttft.sum_ns, 100 * MS);
    assert_int_equal(f.itl.count, 2);
    assert_int_equal(f.itl.sum_ns, 30 * MS);
    assert_int_equal(f.tpot.count, 1);
    assert_int_equal(f.tpot.sum_ns, 15 * MS);
    /* b2 begun again while in flight: the later range takes its marks; the first is dropped */
    mark(l, LP_MARKER_FLAG_START, 3, N_REQ_B, 1, T0 + 200 * MS);
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_B, 1, T0 + 250 * MS);
    mark(l, LP_MARKER_FLAG_END, 2, 0, 1, T0 + 260 * MS);
    mark(l, LP_MARKER_FLAG_END, 3, 0, 1, T0 + 270 * MS);
    f = lp_live_facts(l);
    assert_int_equal(f.ids_reused, 1);
    assert_int_equal(f.requests_dropped, 1);
    assert_int_equal(f.requests_open, 0);
    assert_int_equal(f.requests_done, 2);
    assert_int_equal(f.ttft.count, 2);
    assert_int_equal(f.ttft.sum_ns, 150 * MS); /* 100 + 50 from the later b2 */
    /* a request that ends without a token */
    mark(l, LP_MARKER_FLAG_START, 4, N_REQ_A, 1, T0 + 300 * MS);
    mark(l, LP_MARKER_FLAG_END, 4, 0, 1, T0 + 310 * MS);
    f = lp_live_facts(l);
    assert_int_equal(f.requests_no_token, 1);
    assert_int_equal(f.ttft.count, 2);
    lp_live_free(l);
}

/* Requests open past the bound are counted, not followed; the tables stay sound when ranges
 * come and go by the hundred thousand */
static void test_live_bounds(void **state)
{
    (void)state;
    struct lp_live *l = NULL;
    char err[256];
    assert_int_equal(lp_live_init(&l, NULL, 0, err, sizeof err), LP_OK);
    for (uint32_t i = 0; i < LP_LIVE_MAX_OPEN + 10; i++)
        mark(l, LP_MARKER_FLAG_START, i + 1, N_OTHER, 1, T0 + i);
    struct lp_live_facts f = lp_live_facts(l);
    assert_int_equal(f.ranges_unmatched, 10);
    for (uint32_t i = 0; i < LP_LIVE_MAX_OPEN; i++)
        mark(l, LP_MARKER_FLAG_END, i + 1, 0, 1, T0 + MS + i);
    f = lp_live_facts(l);
    assert_int_equal(f.ranges_unmatched, 10);
    /* 200,000 decode ranges, 64 open at a time, ids reused: every one counted */
    for (uint32_t i = 0; i < 200000; i++) {
        uint32_t id = 1000000 + i;
        mark(l, LP_MARKER_FLAG_START, id, N_DECODE, 3 + i % 64, T0 + 2 * MS + i * 10ull);
        if (i >= 63)
            mark(l, LP_MARKER_FLAG_END, id - 63, 0, 3 + (i - 63) % 64,
                 T0 + 2 * MS + i * 10ull + 5);
    }
    f = lp_live_facts(l);
    assert_int_equal(stage_named(&f, "decode")->wall.count, 200000 - 63);
    assert_int_equal(f.ranges_unmatched, 10);
    /* a pool of threads that come and go: 3,000 threads, a decode each, one at a time */
    for (uint32_t i = 0; i < 3000; i++) {
        mark(l, LP_MARKER_FLAG_START, 5000000 + i, N_DECODE, 100000 + i, T0 + 3 * MS + i);
        mark(l, LP_MARKER_FLAG_END, 5000000 + i, 0, 100000 + i, T0 + 3 * MS + i + 1);
    }
    f = lp_live_facts(l);
    assert_int_equal(stage_named(&f, "decode")->wall.count, 200000 - 63 + 3000);
    assert_int_equal(f.threads_dropped, 0);
    lp_live_free(l);

    /* with the recording's start known, a time of 2^61 ns or 0 is counted, not used */
    assert_int_equal(lp_live_init(&l, NULL, 0, err, sizeof err), LP_OK);
    lp_live_set_start(l, T0);
    mark(l, LP_MARKER_FLAG_START, 1, N_DECODE, 1, T0 + MS);
    mark(l, LP_MARKER_FLAG_END, 1, 0, 1, 1ull << 61);
    mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_A, 1, 0);
    mark(l, LP_MARKER_FLAG_END, 1, 0, 1, T0 + 2 * MS);
    f = lp_live_facts(l);
    assert_int_equal(f.implausible, 2);
    assert_int_equal(f.last_ts, T0 + 2 * MS);
    assert_int_equal(stage_named(&f, "decode")->wall.sum_ns, MS);
    lp_live_free(l);
}

/* The window gauges: the trailing whole seconds, the first one from the first record */
static void test_live_window(void **state)
{
    (void)state;
    struct lp_live *l = NULL;
    char err[256];
    assert_int_equal(lp_live_init(&l, NULL, 0, err, sizeof err), LP_OK);
    struct lp_live_window w = lp_live_window(l, 10);
    assert_true(w.seconds == 0);
    /* a request from T0 + 0.5 s, a token every 10 ms for 22 s: 100 tokens a second */
    mark(l, LP_MARKER_FLAG_START, 1, N_REQ_A, 1, T0 + 500 * MS);
    for (int i = 0; i < 2200; i++)
        mark(l, LP_MARKER_FLAG_INSTANT, 0, N_TOK_A, 1, T0 + 500 * MS + (uint64_t)i * 10 * MS);
    /* NVML: 300 J a second */
    for (int s = 0; s <= 22; s++) {
        struct lp_record r = {.type = LP_REC_NVML};
        r.u.nvml = (struct lp_nvml_sample){.timestamp = T0 + (uint64_t)s * 1000 * MS + 600 * MS,
                                           .valid = LP_NVML_FIELD_ENERGY,
                                           .energy_mj = 1000000 + (uint64_t)s * 300000};
        assert_int_equal(lp_live_add(l, &r, name_of, NULL), LP_OK);
    }
    w = lp_live_window(l, 10);
    assert_true(w.seconds == 10);
    assert_int_equal(w.tokens_source, 1);
    assert_true(w.tokens_per_s == 100);
    assert_true(w.energy_per_token_j > 2.999 && w.energy_per_token_j < 3.001);
    assert_true(w.tensor_ratio < 0); /* no PM samples: left out */
    w = lp_live_window(l, 299);
    assert_true(w.seconds > 21.49 && w.seconds < 21.51); /* from the first record */
    struct lp_live_facts f = lp_live_facts(l);
    assert_int_equal(f.devices[0].energy_mj, 22 * 300000);
    lp_live_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follow_growing),
        cmocka_unit_test(test_follow_damage),
        cmocka_unit_test(test_follow_refused_and_replaced),
        cmocka_unit_test(test_follow_numbers_and_budget),
        cmocka_unit_test(test_follow_string_generations),
        cmocka_unit_test(test_live_stages),
        cmocka_unit_test(test_live_requests),
        cmocka_unit_test(test_live_bounds),
        cmocka_unit_test(test_live_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
