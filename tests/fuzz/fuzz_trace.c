/* Trace images for the trace fuzz targets: made from a record stream (the input format of
 * fuzz_trace_records, whose chunks must carry valid checksums to reach the decoder), and
 * run through what `llmprof report` and `llmprof export` do: read, analyse, every writer,
 * the Perfetto JSON and the SQLite export (into memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzz.h"
#include "llmprof/analyze.h"
#include "llmprof/report.h"
#include "trace/codec.h"

/* Records (type, then a length-prefixed body) or META pairs (a length-prefixed key, then
 * value) in P: the count a chunk header declares, as the writer would. */
static uint32_t count_units(const uint8_t *p, size_t n, uint32_t type)
{
    struct lp_cursor c = {p, p + n, 0};
    uint32_t units = 0;
    while (c.p < c.end) {
        uint64_t first = lp_cur_uvar(&c);
        if (type != LP_CHUNK_RECORDS)
            lp_cur_bytes(&c, first);
        lp_cur_bytes(&c, lp_cur_uvar(&c));
        if (c.bad)
            break;
        units++;
    }
    return units;
}

/* One chunk as the writer lays it out, numbered SEQ; zstd only when asked (the seeds'
 * traces): raw chunks keep the fuzzer's time on the decoder. */
static void put_chunk(struct lp_buf *out, uint32_t type, const uint8_t *p, size_t n, int zstd,
                      uint32_t seq)
{
    struct lp_chunk_header h = {.type = type, .codec = LP_CODEC_RAW,
                                .payload_size = (uint32_t)n, .raw_size = (uint32_t)n,
                                .n_records = count_units(p, n, type), .seq = seq};
    uint8_t *z = NULL;
    if (zstd && (z = malloc(ZSTD_compressBound(n)))) {
        size_t k = ZSTD_compress(z, ZSTD_compressBound(n), p, n, 3);
        if (!ZSTD_isError(k)) {
            h.codec = LP_CODEC_ZSTD;
            h.payload_size = (uint32_t)k;
            p = z;
        }
    }
    h.payload_crc = lp_crc32(p, h.payload_size);
    uint8_t hdr[LP_CHUNK_HEADER_SIZE];
    lp_chunk_header_pack(&h, hdr);
    lp_buf_put(out, hdr, sizeof hdr);
    lp_buf_put(out, p, h.payload_size);
    free(z);
}

int lp_fuzz_trace_build(const uint8_t *in, size_t n, int zstd, struct lp_buf *out)
{
    static const char sep[] = LP_FUZZ_CHUNK_SEP;
    const size_t sep_len = sizeof sep - 1;
    uint8_t hdr[LP_FILE_HEADER_SIZE] = {0};
    memcpy(hdr, LP_TRACE_MAGIC, 8);
    hdr[8] = LP_TRACE_VERSION_MAJOR;
    hdr[10] = LP_TRACE_VERSION_MINOR;
    out->len = 0;
    out->oom = 0;
    lp_buf_put(out, hdr, sizeof hdr);
    const uint8_t *end = in + n, *meta = in;
    size_t meta_len = n;
    uint32_t type = LP_CHUNK_META, seq = 0;
    for (const uint8_t *p = in;;) {
        const uint8_t *cut = n ? memmem(p, (size_t)(end - p), sep, sep_len) : NULL;
        size_t len = cut ? (size_t)(cut - p) : (size_t)(end - p);
        if (type == LP_CHUNK_META)
            meta_len = len;
        put_chunk(out, type, p, len, zstd, ++seq);
        if (!cut)
            break;
        p = cut + sep_len;
        type = LP_CHUNK_RECORDS;
    }
    put_chunk(out, LP_CHUNK_END, meta, meta_len, zstd, ++seq);
    return out->oom ? -1 : 0;
}

/* R's rows in an in-memory database kept across inputs (making its tables took more time
 * than the rows), each input under a trace id of its own; a new one every 256 inputs, so
 * that it stays small. 0, or -1 when a call failed. */
static int sqlite_rows(const struct lp_run *r)
{
    static struct sqlite3 *db;
    static int64_t id;
    char err[256];
    if (db && id % 256 == 0) {
        lp_sqlite_close(db, err, sizeof err);
        db = NULL;
    }
    if (!db && lp_sqlite_open(&db, ":memory:", err, sizeof err) != 0)
        return -1;
    if (lp_sqlite_add_trace(db, ++id, "fuzz", r, err, sizeof err) != 0) {
        lp_sqlite_close(db, err, sizeof err); /* its state is unknown: start afresh */
        db = NULL;
        return -1;
    }
    return 0;
}

enum lp_fuzz_verdict lp_fuzz_trace_image(const uint8_t *data, size_t size)
{
    /* opened once, with a large buffer: the fuzzer calls this millions of times and the
     * writers are most of its time */
    static FILE *sink;
    if (!sink) {
        if (!(sink = fopen("/dev/null", "w")))
            return LP_FUZZ_REJECTED;
        setvbuf(sink, NULL, _IOFBF, 1u << 20);
    }
    struct lp_trace *t = NULL;
    char err[256];
    if (lp_trace_read_mem(&t, data, size, "fuzz", err, sizeof err) != LP_OK)
        return LP_FUZZ_REJECTED;
    enum lp_fuzz_verdict v = LP_FUZZ_REJECTED;
    struct lp_run r;
    if (lp_run_analyze(t, NULL, &r, err, sizeof err) == LP_OK) {
        int bad = 0;
        /* large real fixtures only slow the replay: their analysis is what counts */
        if (t->n_records < 20000) {
            bad |= lp_report_run_md(sink, &r);
            bad |= lp_report_summary_md(sink, &r);
            bad |= lp_report_run_json(sink, &r);
            bad |= lp_report_run_html(sink, &r);
            bad |= lp_report_kernels_csv(sink, &r);
            bad |= lp_report_operators_csv(sink, &r);
            bad |= lp_report_operator_shapes_csv(sink, &r);
            bad |= lp_report_stages_csv(sink, &r);
            bad |= lp_report_gemms_csv(sink, &r);
            bad |= lp_report_perfetto(sink, &r, 0, 0);
            struct lp_perfetto_stats ps;
            bad |= lp_report_perfetto_pb(sink, &r, 0, 0, &ps);
            bad |= sqlite_rows(&r);
        }
        if (!bad)
            v = t->complete && t->n_warnings == 0 ? LP_FUZZ_WHOLE : LP_FUZZ_PARTIAL;
        lp_run_free(&r);
    }
    lp_trace_free(t);
    return v;
}
