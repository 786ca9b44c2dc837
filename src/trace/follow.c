/* Following a growing trace (follow.h): the file is read from where the last poll stopped,
 * one whole chunk at a time; a chunk the writer has not finished is waited for. The writer
 * puts a chunk's header and payload in one write, so a reader can still see part of it: a
 * last chunk whose checksum fails is waited for a few polls before it counts as corrupt.
 * Memory: one chunk (at most LP_CHUNK_MAX_RAW decoded) and the string table, pruned to the
 * ids the writer can still use (it never uses one more than its table's size below its
 * newest). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "codec.h"
#include "llmprof/follow.h"

#define TORN_POLLS 3               /* polls a last chunk with a bad checksum is waited for */
#define MAX_META 1024              /* header pairs kept */
#define WRITER_STRINGS (1u << 18)  /* the writer's string table (max_strings' default) */
#define STRING_BYTES (64u << 20)   /* names kept at most; past it the oldest ids go first */
#define MAX_PAYLOAD (LP_CHUNK_MAX_RAW + (1u << 20))
#define POLL_RAW (256u << 20)      /* decoded in one poll at most: the caller gets a turn */
#define KEEP_BUFFER (2u << 20)     /* chunk buffers larger than this are freed after a poll */
#define SEQ_JUMP 65536u            /* a chunk number further ahead is not trusted */

struct str_slot {
    uint32_t id;                   /* 0: free */
    char *s;
};

struct lp_follow {
    char *path;
    int fd;                        /* open while the trace is being written */
    int known;                     /* a file was opened: DEV and INO are its */
    dev_t dev;
    ino_t ino;
    struct timespec mtime;         /* when last seen open: once closed, the number of a removed
                                      file's inode can come back with a new file */
    uint64_t raw_total, chunk_bytes; /* decoded, and of the chunks decoded: the budget */
    uint64_t poll_raw;             /* decoded in this poll */
    uint64_t off;                  /* next byte to read */
    int header_ok;
    int failed;                    /* LP_ERR_FORMAT or LP_ERR_VERSION: not a trace we read */
    char fail_msg[256];
    int torn_polls;                /* polls the chunk at OFF failed its checksum at the end */
    uint32_t last_seq;
    struct str_slot *slots;        /* open addressing by id */
    size_t n_slots, n_strs, str_bytes;
    uint32_t max_id;
    struct lp_meta_kv meta[MAX_META];
    size_t n_meta;
    uint8_t *payload, *raw;
    size_t payload_cap, raw_cap;
    struct lp_follow_stats st;
};

int lp_follow_open(struct lp_follow **out, const char *path)
{
    struct lp_follow *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return LP_ERR_NOMEM;
    }
    f->fd = -1;
    *out = f;
    return LP_OK;
}

static void strings_clear(struct lp_follow *f)
{
    for (size_t i = 0; i < f->n_slots; i++)
        free(f->slots[i].s);
    free(f->slots);
    f->slots = NULL;
    f->n_slots = f->n_strs = f->str_bytes = 0;
    f->max_id = 0;
}

static void meta_clear(struct lp_follow *f)
{
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    f->n_meta = 0;
}

/* Back to the start of a new file at PATH (a new process, or the old file replaced). */
static void restart(struct lp_follow *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->known = 0;
    f->off = 0;
    f->raw_total = f->chunk_bytes = 0;
    f->header_ok = f->failed = f->torn_polls = 0;
    f->last_seq = 0;
    strings_clear(f);
    meta_clear(f);
    uint64_t restarts = f->st.restarts;
    memset(&f->st, 0, sizeof f->st);
    f->st.restarts = restarts;
}

static size_t slot_of(const struct lp_follow *f, uint32_t id)
{
    size_t i = (id * 2654435761u) & (f->n_slots - 1);
    while (f->slots[i].id && f->slots[i].id != id)
        i = (i + 1) & (f->n_slots - 1);
    return i;
}

/* Rebuilds the table at N_SLOTS, keeping the ids at or above KEEP_FROM. */
static int rehash(struct lp_follow *f, size_t n_slots, uint32_t keep_from)
{
    struct str_slot *old = f->slots;
    size_t n_old = f->n_slots;
    f->slots = calloc(n_slots, sizeof *f->slots);
    if (!f->slots) {
        f->slots = old;
        return LP_ERR_NOMEM;
    }
    f->n_slots = n_slots;
    f->n_strs = f->str_bytes = 0;
    for (size_t i = 0; i < n_old; i++) {
        if (!old[i].id)
            continue;
        if (old[i].id < keep_from) {
            free(old[i].s);
            continue;
        }
        f->slots[slot_of(f, old[i].id)] = old[i];
        f->n_strs++;
        f->str_bytes += strlen(old[i].s) + 1;
    }
    free(old);
    return LP_OK;
}

static int add_string(struct lp_follow *f, uint32_t id, const uint8_t *s, size_t len)
{
    if (id == 0)
        return LP_OK;
    if (id > f->max_id)
        f->max_id = id;
    uint32_t floor = f->max_id > WRITER_STRINGS ? f->max_id - WRITER_STRINGS : 0;
    if (id < floor)
        return LP_OK; /* a copy of an old chunk: the writer no longer uses the id */
    if ((f->n_strs + 1) * 2 > f->n_slots || f->str_bytes + len + 1 > STRING_BYTES) {
        /* grow, or drop what the writer can no longer use; past the bytes, half the span */
        uint32_t keep = floor;
        if (f->str_bytes + len + 1 > STRING_BYTES)
            keep = floor + (f->max_id - floor) / 2;
        size_t want = f->n_slots ? f->n_slots : 1024;
        while ((f->n_strs + 1) * 2 > want && want < ((size_t)WRITER_STRINGS << 2))
            want *= 2;
        if (rehash(f, want, keep) != LP_OK)
            return LP_ERR_NOMEM;
        if (id < keep)
            return LP_OK;
    }
    char *c = malloc(len + 1);
    if (!c)
        return LP_ERR_NOMEM;
    memcpy(c, s, len);
    c[len] = 0;
    lp_utf8_repair(c, len); /* as the reader does: labels must be UTF-8 */
    size_t i = slot_of(f, id);
    if (f->slots[i].id) {
        f->str_bytes -= strlen(f->slots[i].s) + 1;
        free(f->slots[i].s);
    } else {
        f->n_strs++;
    }
    f->slots[i] = (struct str_slot){id, c};
    f->str_bytes += len + 1;
    return LP_OK;
}

const char *lp_follow_str(struct lp_follow *f, lp_str id)
{
    if (id == 0)
        return "";
    if (f->n_slots) {
        size_t i = slot_of(f, id);
        if (f->slots[i].id)
            return f->slots[i].s;
    }
    f->st.unknown_strings++;
    return "<unknown>";
}

static int set_meta(struct lp_follow *f, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    size_t i = 0;
    while (i < f->n_meta && !(strlen(f->meta[i].key) == kl && !memcmp(f->meta[i].key, k, kl)))
        i++;
    if (i == MAX_META)
        return LP_OK;
    char *val = strndup((const char *)v, vl);
    if (!val)
        return LP_ERR_NOMEM;
    lp_utf8_repair(val, strlen(val));
    if (i == f->n_meta) {
        if (!(f->meta[i].key = strndup((const char *)k, kl))) {
            free(val);
            return LP_ERR_NOMEM;
        }
        lp_utf8_repair(f->meta[i].key, strlen(f->meta[i].key));
        f->n_meta++;
    } else {
        free(f->meta[i].value);
    }
    f->meta[i].value = val;
    return LP_OK;
}

const char *lp_follow_meta(const struct lp_follow *f, const char *key)
{
    for (size_t i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta[i].key, key))
            return f->meta[i].value;
    return NULL;
}

struct lp_follow_stats lp_follow_stats(const struct lp_follow *f) { return f->st; }

static int fail(struct lp_follow *f, int rc, char *err, size_t errlen, const char *msg)
{
    f->failed = rc;
    snprintf(f->fail_msg, sizeof f->fail_msg, "%s: %s", f->path, msg);
    if (errlen)
        snprintf(err, errlen, "%s", f->fail_msg);
    return rc;
}

static int read_at(struct lp_follow *f, void *buf, size_t n, uint64_t at)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(f->fd, (uint8_t *)buf + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return LP_ERR_IO;
        got += (size_t)r;
    }
    return LP_OK;
}

static int grow(uint8_t **p, size_t *cap, size_t n)
{
    if (n <= *cap && *p)
        return LP_OK;
    uint8_t *q = realloc(*p, n ? n : 1);
    if (!q)
        return LP_ERR_NOMEM;
    *p = q;
    *cap = n;
    return LP_OK;
}

static int decode_records(struct lp_follow *f, const uint8_t *raw, size_t len, lp_follow_fn fn,
                          void *ctx, int *bad)
{
    struct lp_cursor c = {raw, raw + len, 0};
    struct lp_delta_state delta = {0};
    while (c.p < c.end) {
        uint64_t type = lp_cur_uvar(&c);
        uint64_t body = lp_cur_uvar(&c);
        if (c.bad || body > (size_t)(c.end - c.p)) {
            *bad = 1;
            return LP_OK;
        }
        if (type == LP_REC_STRING) {
            struct lp_cursor s = {c.p, c.p + body, 0};
            uint64_t id = lp_cur_uvar(&s), slen = lp_cur_uvar(&s);
            const uint8_t *bytes = s.bad ? NULL : lp_cur_bytes(&s, slen);
            if (!bytes || id > UINT32_MAX) {
                *bad = 1;
                return LP_OK;
            }
            if (add_string(f, (uint32_t)id, bytes, slen) != LP_OK)
                return LP_ERR_NOMEM;
            c.p += body;
        } else if (type < LP_REC_TYPE_COUNT && lp_record_type_known((uint32_t)type)) {
            struct lp_record r;
            if (lp_record_decode(&c, body, &delta, (uint32_t)type, &r) != 0) {
                *bad = 1;
                return LP_OK;
            }
            f->st.records++;
            int rc = fn ? fn(ctx, f, &r) : 0;
            if (rc)
                return rc;
        } else {
            c.p += body;
        }
    }
    return LP_OK;
}

static int decode_meta(struct lp_follow *f, const uint8_t *raw, size_t len)
{
    struct lp_cursor c = {raw, raw + len, 0};
    const uint8_t *k, *v;
    size_t kl, vl;
    while (lp_meta_next(&c, &k, &kl, &v, &vl) > 0) /* a malformed rest is left */
        if (set_meta(f, k, kl, v, vl) != LP_OK)
            return LP_ERR_NOMEM;
    return LP_OK;
}

/* Skips a corrupt chunk header at f->off: to the next valid one among the SIZE bytes there
 * are, or, when none follows yet, to all but the last header's worth (a header can be cut by
 * the end of what was written). */
static int resync(struct lp_follow *f, uint64_t size)
{
    uint8_t buf[65536];
    uint64_t at = f->off + 1;
    while (at + LP_CHUNK_HEADER_SIZE <= size) {
        size_t n = size - at < sizeof buf ? (size_t)(size - at) : sizeof buf;
        if (read_at(f, buf, n, at) != LP_OK)
            return LP_ERR_IO;
        for (size_t i = 0; i + LP_CHUNK_HEADER_SIZE <= n; i++) {
            struct lp_chunk_header h;
            if (buf[i] == 'L' && lp_chunk_header_unpack(buf + i, &h) == 0) {
                f->st.dropped_bytes += at + i - f->off;
                f->off = at + i;
                return LP_OK;
            }
        }
        at += n - LP_CHUNK_HEADER_SIZE + 1;
    }
    uint64_t to = size > LP_CHUNK_HEADER_SIZE ? size - LP_CHUNK_HEADER_SIZE + 1 : f->off;
    if (to > f->off) {
        f->st.dropped_bytes += to - f->off;
        f->off = to;
    }
    return LP_OK;
}

/* The file at PATH against the one followed so far, opened while it is being written; *SIZE:
 * how far it may be read. A file removed keeps what was read (and is read on to its end
 * through the descriptor still open); a file replaced, or cut shorter, is a new trace. */
static int open_file(struct lp_follow *f, uint64_t *size, char *err, size_t errlen)
{
    struct stat st;
    *size = f->off;
    if (f->known) {
        if (stat(f->path, &st) != 0) {
            if (errno != ENOENT) {
                if (errlen)
                    snprintf(err, errlen, "cannot look at %s: %s", f->path, strerror(errno));
                return LP_ERR_IO;
            }
            if (f->fd < 0)
                return LP_OK; /* removed once whole: nothing more to read */
        } else if (st.st_ino != f->ino || st.st_dev != f->dev ||
                   (f->fd < 0 && (st.st_mtim.tv_sec != f->mtime.tv_sec ||
                                  st.st_mtim.tv_nsec != f->mtime.tv_nsec))) {
            f->st.restarts++; /* replaced */
            restart(f);
        } else if (f->fd < 0) { /* whole (its END chunk read) and closed */
            if ((uint64_t)st.st_size < f->off) {
                f->st.restarts++;
                restart(f);
            } else {
                return LP_OK;
            }
        }
    }
    if (f->fd < 0) {
        int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT)
                return LP_OK;
            if (errlen)
                snprintf(err, errlen, "cannot open %s: %s", f->path, strerror(errno));
            return LP_ERR_IO;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return fail(f, LP_ERR_FORMAT, err, errlen, "not a regular file");
        }
        f->fd = fd;
        f->known = 1;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
    }
    if (fstat(f->fd, &st) != 0) {
        if (errlen)
            snprintf(err, errlen, "cannot read %s: %s", f->path, strerror(errno));
        return LP_ERR_IO;
    }
    if ((uint64_t)st.st_size < f->off) { /* cut shorter: a new trace in its place */
        f->st.restarts++;
        restart(f);
        return open_file(f, size, err, errlen);
    }
    f->mtime = st.st_mtim;
    *size = (uint64_t)st.st_size;
    return LP_OK;
}

static int check_file_header(struct lp_follow *f, uint64_t size, char *err, size_t errlen)
{
    uint8_t h[LP_FILE_HEADER_SIZE];
    size_t have = size < sizeof h ? (size_t)size : sizeof h;
    if (read_at(f, h, have, 0) != LP_OK) {
        if (errlen)
            snprintf(err, errlen, "cannot read %s", f->path);
        return LP_ERR_IO;
    }
    if (memcmp(h, LP_TRACE_MAGIC, have < 8 ? have : 8) != 0)
        return fail(f, LP_ERR_FORMAT, err, errlen, "not an llmprof trace (bad magic)");
    if (have < sizeof h)
        return LP_OK; /* the rest of the header is not written yet */
    uint32_t major = h[8] | (uint32_t)h[9] << 8;
    if (major == 0 || major > LP_TRACE_VERSION_MAJOR)
        return fail(f, LP_ERR_VERSION, err, errlen,
                    "a trace format version this llmprof does not read; upgrade llmprof");
    f->header_ok = 1;
    f->off = LP_FILE_HEADER_SIZE;
    f->st.bytes = LP_FILE_HEADER_SIZE;
    return LP_OK;
}

/* One chunk at f->off of a file of SIZE bytes: *WAIT when it is not all there yet. */
static int one_chunk(struct lp_follow *f, uint64_t size, lp_follow_fn fn, void *ctx, int *wait)
{
    uint8_t hb[LP_CHUNK_HEADER_SIZE];
    struct lp_chunk_header h;
    uint64_t at = f->off;
    if (size - at < LP_CHUNK_HEADER_SIZE) {
        *wait = 1;
        return LP_OK;
    }
    if (read_at(f, hb, sizeof hb, at) != LP_OK)
        return LP_ERR_IO;
    if (lp_chunk_header_unpack(hb, &h) != 0 || h.payload_size > MAX_PAYLOAD) {
        f->st.bad_chunks++;
        return resync(f, size);
    }
    uint64_t total = LP_CHUNK_HEADER_SIZE + (uint64_t)h.payload_size;
    if (size - at < total) {
        *wait = 1;
        return LP_OK;
    }
    if (grow(&f->payload, &f->payload_cap, h.payload_size) != LP_OK)
        return LP_ERR_NOMEM;
    if (read_at(f, f->payload, h.payload_size, at + LP_CHUNK_HEADER_SIZE) != LP_OK)
        return LP_ERR_IO;
    int ok = lp_crc32(f->payload, h.payload_size) == h.payload_crc;
    if (!ok && at + total == size && f->torn_polls < TORN_POLLS) {
        f->torn_polls++; /* maybe still being written */
        *wait = 1;
        return LP_OK;
    }
    f->torn_polls = 0;
    f->off = at + total;
    f->st.bytes = f->off;
    /* the number is outside the header's checksum: trusted only with the payload's, and
     * only near the last one (a flipped bit must not skip the rest of the file) */
    if (ok && h.seq && h.seq <= f->last_seq) {
        f->st.repeated++;
        return LP_OK;
    }
    if (ok && h.seq && (!f->last_seq || h.seq - f->last_seq <= SEQ_JUMP)) {
        if (f->last_seq && h.seq > f->last_seq + 1)
            f->st.missing += h.seq - f->last_seq - 1;
        f->last_seq = h.seq;
    } else if (ok && h.seq) {
        f->last_seq++; /* a number too far ahead: taken as the next one's */
    }
    /* the decode budget, as the whole-file reader's */
    if (ok && h.raw_size > LP_READ_RAW_BASE + (uint64_t)LP_READ_RAW_PER_BYTE *
                                                 (f->chunk_bytes + total) - f->raw_total) {
        f->st.over_budget++;
        f->st.dropped_bytes += total;
        return LP_OK;
    }
    f->chunk_bytes += total;
    f->raw_total += h.raw_size;
    f->poll_raw += h.raw_size;
    const uint8_t *body = f->payload;
    if (ok && h.codec == LP_CODEC_ZSTD && h.raw_size <= LP_CHUNK_MAX_RAW &&
        ZSTD_getFrameContentSize(f->payload, h.payload_size) == h.raw_size) {
        if (grow(&f->raw, &f->raw_cap, h.raw_size) != LP_OK)
            return LP_ERR_NOMEM;
        size_t n = ZSTD_decompress(f->raw, h.raw_size, f->payload, h.payload_size);
        ok = !ZSTD_isError(n) && n == h.raw_size;
        body = f->raw;
    } else if (h.codec != LP_CODEC_RAW || h.raw_size != h.payload_size) {
        ok = 0;
    }
    if (!ok) {
        f->st.bad_chunks++;
        f->st.dropped_bytes += total;
        return LP_OK;
    }
    f->st.chunks++;
    if (h.type == LP_CHUNK_RECORDS) {
        int bad = 0;
        int rc = decode_records(f, body, h.raw_size, fn, ctx, &bad);
        f->st.bad_chunks += bad;
        return rc;
    }
    if (h.type == LP_CHUNK_META || h.type == LP_CHUNK_END) {
        int rc = decode_meta(f, body, h.raw_size);
        if (h.type == LP_CHUNK_END) { /* nothing follows: the descriptor is not kept */
            f->st.complete = 1;
            close(f->fd);
            f->fd = -1;
        }
        return rc;
    }
    return LP_OK; /* a chunk type of a newer minor version */
}

int lp_follow_poll(struct lp_follow *f, uint64_t max_bytes, lp_follow_fn fn, void *ctx,
                   int *more, char *err, size_t errlen)
{
    *more = 0;
    if (errlen)
        err[0] = 0;
    uint64_t size = 0, restarts = f->st.restarts;
    int rc = open_file(f, &size, err, errlen);
    if (rc != LP_OK)
        return rc;
    if (f->st.restarts != restarts) {
        *more = 1; /* a new file: nothing of it read before the caller starts over */
        return LP_OK;
    }
    if (f->failed) {
        if (errlen)
            snprintf(err, errlen, "%s", f->fail_msg);
        return f->failed;
    }
    if (f->fd < 0)
        return LP_OK; /* not there yet, or whole and closed */
    if (!f->header_ok && (rc = check_file_header(f, size, err, errlen)) != LP_OK)
        return rc;
    if (!f->header_ok)
        return LP_OK;
    uint64_t start = f->off;
    int wait = 0;
    f->poll_raw = 0;
    while (!wait && f->off < size && f->fd >= 0) {
        if ((max_bytes && f->off - start >= max_bytes) || f->poll_raw >= POLL_RAW) {
            *more = 1;
            break;
        }
        if ((rc = one_chunk(f, size, fn, ctx, &wait)) != LP_OK)
            break;
    }
    f->st.waiting = wait;
    if (f->payload_cap > KEEP_BUFFER || f->raw_cap > KEEP_BUFFER) {
        free(f->payload);
        free(f->raw);
        f->payload = f->raw = NULL;
        f->payload_cap = f->raw_cap = 0;
    }
    return rc;
}

void lp_follow_free(struct lp_follow *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    strings_clear(f);
    meta_clear(f);
    free(f->payload);
    free(f->raw);
    free(f->path);
    free(f);
}
