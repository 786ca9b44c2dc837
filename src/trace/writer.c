/* Trace writer: encodes records into a chunk buffer, interns strings, and writes each
 * chunk compressed with zstd behind a checksummed header. Chunks are self-contained in
 * their delta state, so a reader can recover everything before a torn or corrupt chunk.
 * Single-threaded by design: the collector serialises calls under its own lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "codec.h"
#include "llmprof/trace.h"

struct lp_trace_writer {
    int fd;
    int failed;
    char err[256];
    struct lp_buf raw, comp;
    struct lp_delta_state delta;
    uint32_t pending_records;
    size_t chunk_bytes;
    int zstd_level;
    ZSTD_CCtx *cctx;
    /* string interning: open addressing over the strings of this generation; a string's id
     * is id_base + its index. At max_strings the table starts over (ids keep growing, so a
     * string seen again is defined again): memory stays bounded whatever the names. */
    char **strs;
    size_t n_strs, cap_strs, max_strings;
    lp_str id_base;
    uint32_t *slots; /* index + 1, 0 = empty */
    size_t n_slots;
    struct lp_meta_kv *meta;
    size_t n_meta;
    uint64_t records;
    uint64_t by_type[LP_REC_TYPE_COUNT]; /* records added, per type: the END chunk says them */
    uint32_t chunks;                     /* chunks written: the next one's number less one */
    uint64_t clock_shift_ns;             /* lp_trace_writer_options' */
};

static int fail(struct lp_trace_writer *w, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct lp_trace_writer *w, int status, const char *fmt, ...)
{
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
    }
    w->failed = 1;
    return status;
}

static int write_all(struct lp_trace_writer *w, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return fail(w, LP_ERR_IO, "write failed: %s", k < 0 ? strerror(errno) : "short write");
        p += k;
        n -= (size_t)k;
    }
    return LP_OK;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: a hash-table index, not a checksum */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int grow_slots(struct lp_trace_writer *w)
{
    size_t n = w->n_slots ? w->n_slots * 2 : 1024;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return LP_ERR_NOMEM;
    for (size_t k = 0; k < w->n_strs; k++) {
        size_t i = hash_str(w->strs[k]) & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = (uint32_t)k + 1;
    }
    free(w->slots);
    w->slots = slots;
    w->n_slots = n;
    return LP_OK;
}

static void start_new_generation(struct lp_trace_writer *w)
{
    for (size_t i = 0; i < w->n_strs; i++)
        free(w->strs[i]);
    w->id_base += (lp_str)w->n_strs;
    w->n_strs = 0;
    memset(w->slots, 0, w->n_slots * sizeof *w->slots);
}

lp_str lp_trace_writer_intern(struct lp_trace_writer *w, const char *s)
{
    if (!s || !*s)
        return 0;
    if (w->n_strs >= w->max_strings)
        start_new_generation(w);
    if ((w->n_strs + 1) * 2 > w->n_slots && grow_slots(w) != 0)
        return 0;
    size_t i = hash_str(s) & (w->n_slots - 1);
    while (w->slots[i]) {
        if (strcmp(w->strs[w->slots[i] - 1], s) == 0)
            return w->id_base + w->slots[i] - 1;
        i = (i + 1) & (w->n_slots - 1);
    }
    if (w->n_strs == w->cap_strs) {
        size_t cap = w->cap_strs * 2;
        char **strs = realloc(w->strs, cap * sizeof *strs);
        if (!strs)
            return 0;
        w->strs = strs;
        w->cap_strs = cap;
    }
    char *copy = strdup(s);
    if (!copy)
        return 0;
    w->strs[w->n_strs++] = copy;
    w->slots[i] = (uint32_t)w->n_strs;
    lp_str id = w->id_base + (lp_str)w->n_strs - 1;
    /* The definition precedes every record that uses it in the stream. A string past
     * LP_WRITER_MAX_STRING is cut there (at a UTF-8 boundary) so every chunk stays within
     * what the reader takes. */
    size_t len = strlen(s);
    if (len > LP_WRITER_MAX_STRING) {
        len = LP_WRITER_MAX_STRING;
        while (len > 0 && ((uint8_t)s[len] & 0xc0) == 0x80)
            len--;
    }
    struct lp_buf body = {0};
    lp_buf_put_uvar(&body, id);
    lp_buf_put_uvar(&body, len);
    lp_buf_put(&body, s, len);
    lp_buf_put_uvar(&w->raw, LP_REC_STRING);
    lp_buf_put_uvar(&w->raw, body.len);
    lp_buf_put(&w->raw, body.data, body.len);
    lp_buf_free(&body);
    w->pending_records++;
    /* strings interned with no record between them still end a chunk at chunk_bytes (a
     * failed write shows at the next add or close) */
    if (w->raw.len >= w->chunk_bytes)
        lp_trace_writer_flush(w);
    return id;
}

int lp_trace_writer_open(struct lp_trace_writer **out, const char *path,
                         const struct lp_trace_writer_options *opt, char *err, size_t errlen)
{
    *out = NULL;
    struct lp_trace_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return LP_ERR_NOMEM;
    }
    w->fd = -1;
    w->zstd_level = opt && opt->zstd_level ? opt->zstd_level : 3;
    w->chunk_bytes = opt && opt->chunk_bytes ? opt->chunk_bytes : (1u << 20);
    if (w->chunk_bytes > LP_WRITER_MAX_CHUNK)
        w->chunk_bytes = LP_WRITER_MAX_CHUNK;
    w->cap_strs = 256;
    w->max_strings = opt && opt->max_strings ? opt->max_strings : (1u << 18);
    w->clock_shift_ns = opt ? opt->clock_shift_ns : 0;
    w->id_base = 1; /* id 0 is the empty string, never written */
    w->strs = malloc(w->cap_strs * sizeof *w->strs);
    w->cctx = ZSTD_createCCtx();
    if (!w->strs || !w->cctx || grow_slots(w) != 0) {
        snprintf(err, errlen, "out of memory");
        lp_trace_writer_close(w);
        return LP_ERR_NOMEM;
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        lp_trace_writer_close(w);
        return LP_ERR_IO;
    }
    uint8_t hdr[LP_FILE_HEADER_SIZE] = {0};
    memcpy(hdr, LP_TRACE_MAGIC, 8);
    hdr[8] = LP_TRACE_VERSION_MAJOR;
    hdr[10] = LP_TRACE_VERSION_MINOR;
    if (write_all(w, hdr, sizeof hdr) != LP_OK) {
        snprintf(err, errlen, "%s: %s", path, w->err);
        lp_trace_writer_close(w);
        return LP_ERR_IO;
    }
    *out = w;
    return LP_OK;
}

int lp_trace_writer_set_meta(struct lp_trace_writer *w, const char *key, const char *value)
{
    for (size_t i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta[i].key, key) == 0) {
            char *v = strdup(value ? value : "");
            if (!v)
                return LP_ERR_NOMEM;
            free(w->meta[i].value);
            w->meta[i].value = v;
            return LP_OK;
        }
    }
    struct lp_meta_kv *m = realloc(w->meta, (w->n_meta + 1) * sizeof *m);
    if (!m)
        return LP_ERR_NOMEM;
    w->meta = m;
    m[w->n_meta].key = strdup(key);
    m[w->n_meta].value = strdup(value ? value : "");
    if (!m[w->n_meta].key || !m[w->n_meta].value) {
        free(m[w->n_meta].key);
        free(m[w->n_meta].value);
        return LP_ERR_NOMEM;
    }
    w->n_meta++;
    return LP_OK;
}

static int write_chunk(struct lp_trace_writer *w, uint32_t type, const struct lp_buf *raw,
                       uint32_t n_records)
{
    if (w->failed)
        return LP_ERR_IO;
    if (raw->oom)
        return fail(w, LP_ERR_NOMEM, "out of memory while encoding records");
    if (raw->len > LP_CHUNK_MAX_RAW) /* readers drop such a chunk as corrupt */
        return fail(w, LP_ERR_ARG, "a chunk of %zu bytes is more than a reader takes (%u)",
                    raw->len, LP_CHUNK_MAX_RAW);
    size_t bound = ZSTD_compressBound(raw->len);
    w->comp.len = 0;
    lp_buf_reserve(&w->comp, bound);
    if (w->comp.oom)
        return fail(w, LP_ERR_NOMEM, "out of memory while compressing");
    size_t n = ZSTD_compressCCtx(w->cctx, w->comp.data, bound, raw->data, raw->len, w->zstd_level);
    if (ZSTD_isError(n))
        return fail(w, LP_ERR_IO, "zstd: %s", ZSTD_getErrorName(n));
    struct lp_chunk_header h = {
        .type = type,
        .codec = LP_CODEC_ZSTD,
        .payload_size = (uint32_t)n,
        .raw_size = (uint32_t)raw->len,
        .n_records = n_records,
        .payload_crc = lp_crc32(w->comp.data, n),
        .seq = w->chunks + 1,
    };
    uint8_t hdr[LP_CHUNK_HEADER_SIZE];
    lp_chunk_header_pack(&h, hdr);
    /* One write for header and payload keeps a torn chunk to the tail of the file. */
    struct lp_buf out = {0};
    lp_buf_put(&out, hdr, sizeof hdr);
    lp_buf_put(&out, w->comp.data, n);
    int rc = out.oom ? fail(w, LP_ERR_NOMEM, "out of memory") : write_all(w, out.data, out.len);
    lp_buf_free(&out);
    if (rc == LP_OK)
        w->chunks++;
    return rc;
}

static int write_meta_chunk(struct lp_trace_writer *w, uint32_t type)
{
    struct lp_buf b = {0};
    for (size_t i = 0; i < w->n_meta; i++) {
        size_t kl = strlen(w->meta[i].key), vl = strlen(w->meta[i].value);
        lp_buf_put_uvar(&b, kl);
        lp_buf_put(&b, w->meta[i].key, kl);
        lp_buf_put_uvar(&b, vl);
        lp_buf_put(&b, w->meta[i].value, vl);
    }
    int rc = write_chunk(w, type, &b, (uint32_t)w->n_meta);
    lp_buf_free(&b);
    return rc;
}

int lp_trace_writer_write_header(struct lp_trace_writer *w)
{
    return write_meta_chunk(w, LP_CHUNK_META);
}

int lp_trace_writer_flush(struct lp_trace_writer *w)
{
    if (w->raw.len == 0)
        return w->failed ? LP_ERR_IO : LP_OK;
    int rc = write_chunk(w, LP_CHUNK_RECORDS, &w->raw, w->pending_records);
    w->raw.len = 0;
    w->raw.oom = 0;
    w->pending_records = 0;
    memset(&w->delta, 0, sizeof w->delta);
    return rc;
}

int lp_trace_writer_add(struct lp_trace_writer *w, const struct lp_record *r)
{
    if (!lp_record_type_known(r->type) || r->type == LP_REC_STRING)
        return LP_ERR_ARG;
    struct lp_record moved;
    struct lp_record_layout l;
    if (w->clock_shift_ns && lp_record_layout(r->type, &l) == LP_OK) {
        moved = *r;
        uint8_t *base = (uint8_t *)&moved.u;
        for (int f = 0; f < 2; f++) {
            size_t at = f ? l.end : l.ts;
            uint64_t t;
            if (!(f ? l.has_end : l.has_ts))
                continue;
            memcpy(&t, base + at, 8);
            if (t) /* 0: not known */
                t += w->clock_shift_ns;
            memcpy(base + at, &t, 8);
        }
        r = &moved;
    }
    lp_record_encode(&w->raw, &w->delta, r);
    w->pending_records++;
    w->records++;
    w->by_type[r->type]++;
    if (w->raw.len >= w->chunk_bytes)
        return lp_trace_writer_flush(w);
    return w->failed ? LP_ERR_IO : LP_OK;
}

int lp_trace_writer_close(struct lp_trace_writer *w)
{
    if (!w)
        return LP_OK;
    int rc = LP_OK;
    if (w->fd >= 0) {
        rc = lp_trace_writer_flush(w);
        /* what was written, for the reader to hold the chunks it reads against */
        char buf[32 * LP_REC_TYPE_COUNT];
        size_t len = 0;
        for (int i = 0; i < LP_REC_TYPE_COUNT && len < sizeof buf; i++)
            if (w->by_type[i])
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d:%llu", len ? "," : "",
                                        i, (unsigned long long)w->by_type[i]);
        buf[len < sizeof buf ? len : sizeof buf - 1] = 0;
        char n[24];
        snprintf(n, sizeof n, "%llu", (unsigned long long)w->records);
        if (lp_trace_writer_set_meta(w, "records_written", n) != LP_OK ||
            lp_trace_writer_set_meta(w, "records_by_type", buf) != LP_OK)
            rc = rc == LP_OK ? fail(w, LP_ERR_NOMEM, "out of memory") : rc;
        /* The END chunk marks a clean exit and holds the final meta (end times ...). */
        int rc2 = write_meta_chunk(w, LP_CHUNK_END);
        if (rc == LP_OK)
            rc = rc2;
        if (close(w->fd) != 0 && rc == LP_OK)
            rc = fail(w, LP_ERR_IO, "close failed: %s", strerror(errno));
    }
    for (size_t i = 0; i < w->n_strs; i++)
        free(w->strs[i]);
    for (size_t i = 0; i < w->n_meta; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->strs);
    free(w->slots);
    free(w->meta);
    lp_buf_free(&w->raw);
    lp_buf_free(&w->comp);
    ZSTD_freeCCtx(w->cctx);
    free(w);
    return rc;
}

const char *lp_trace_writer_error(const struct lp_trace_writer *w) { return w->err; }
uint64_t lp_trace_writer_records(const struct lp_trace_writer *w) { return w->records; }
