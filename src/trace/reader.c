/* Trace reader: loads a whole trace into typed arrays. Recovery is part of reading:
 * a torn tail (the process was killed mid-write) or a corrupt chunk is skipped with a
 * warning that says what was dropped, and everything else is kept. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec.h"
#include "llmprof/trace.h"

static void warn(struct lp_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct lp_trace *t, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char **w = realloc(t->warnings, (t->n_warnings + 1) * sizeof *w);
    if (!w)
        return;
    t->warnings = w;
    if ((w[t->n_warnings] = strdup(line)))
        t->n_warnings++;
}

static int set_meta(struct lp_trace *t, const char *k, size_t kl, const char *v, size_t vl)
{
    char *key = strndup(k, kl), *value = strndup(v, vl);
    if (!key || !value)
        goto oom;
    for (size_t i = 0; i < t->n_meta; i++) {
        if (strcmp(t->meta[i].key, key) == 0) {
            free(t->meta[i].value);
            t->meta[i].value = value;
            free(key);
            return 0;
        }
    }
    struct lp_meta_kv *m = realloc(t->meta, (t->n_meta + 1) * sizeof *m);
    if (!m)
        goto oom;
    t->meta = m;
    m[t->n_meta++] = (struct lp_meta_kv){key, value};
    return 0;
oom:
    free(key);
    free(value);
    return -1;
}

static int set_string(struct lp_trace *t, uint64_t id, const uint8_t *s, size_t len)
{
    if (id > (1u << 28)) /* far more strings than any trace holds: corrupt */
        return -1;
    if (id >= t->n_strings) {
        size_t n = t->n_strings ? t->n_strings : 64;
        while (n <= id)
            n *= 2;
        char **p = realloc(t->strings, n * sizeof *p);
        if (!p)
            return -1;
        memset(p + t->n_strings, 0, (n - t->n_strings) * sizeof *p);
        t->strings = p;
        t->n_strings = n;
    }
    char *copy = strndup((const char *)s, len);
    if (!copy)
        return -1;
    free(t->strings[id]);
    t->strings[id] = copy;
    return 0;
}

/* Capacities live beside the arrays only while reading. */
struct caps {
    size_t c[LP_REC_TYPE_COUNT];
};

static int append(void **arr, size_t *n, size_t *cap, const void *item, size_t size)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        void *p = realloc(*arr, c * size);
        if (!p)
            return -1;
        *arr = p;
        *cap = c;
    }
    memcpy((uint8_t *)*arr + *n * size, item, size);
    (*n)++;
    return 0;
}

/* The collector writes what CUPTI knows of a GPU and what NVML knows as two records with
 * one id: the reader keeps one device, each field from whichever record has it. */
static int merge_device(struct lp_trace *t, const struct lp_device *d)
{
    for (size_t i = 0; i < t->n_devices; i++) {
        struct lp_device *o = &t->devices[i];
        if (o->id != d->id)
            continue;
#define FILL(f) if (!o->f) o->f = d->f
        FILL(name); FILL(cc_major); FILL(cc_minor); FILL(sm_count); FILL(mem_bytes);
        FILL(mem_bandwidth_kbps); FILL(core_clock_khz); FILL(max_sm_mhz); FILL(max_mem_mhz);
        FILL(power_limit_mw);
#undef FILL
        static const uint8_t zero[16];
        if (!memcmp(o->uuid, zero, 16))
            memcpy(o->uuid, d->uuid, 16);
        return 1;
    }
    return 0;
}

static int store(struct lp_trace *t, struct caps *caps, const struct lp_record *r)
{
    if (r->type == LP_REC_DEVICE && merge_device(t, &r->u.device))
        return 0;
#define APPEND(arr, cnt, member) \
    append((void **)&t->arr, &t->cnt, &caps->c[r->type], &r->u.member, sizeof r->u.member)
    switch (r->type) {
    case LP_REC_KERNEL: return APPEND(kernels, n_kernels, kernel);
    case LP_REC_MEMCPY: return APPEND(memcpys, n_memcpys, memcpy);
    case LP_REC_MEMSET: return APPEND(memsets, n_memsets, memset);
    case LP_REC_MEMORY: return APPEND(memory, n_memory, memory);
    case LP_REC_MARKER: return APPEND(markers, n_markers, marker);
    case LP_REC_API: return APPEND(apis, n_apis, api);
    case LP_REC_NVML: return APPEND(nvml, n_nvml, nvml);
    case LP_REC_DEVICE: return APPEND(devices, n_devices, device);
    case LP_REC_OVERHEAD: return APPEND(overheads, n_overheads, overhead);
    case LP_REC_LOSS: return APPEND(losses, n_losses, loss);
    case LP_REC_GEMM: return APPEND(gemms, n_gemms, gemm);
    default: return 0;
    }
#undef APPEND
}

/* Returns records kept; sets *bad when the chunk's record stream is malformed. */
static uint64_t decode_records(struct lp_trace *t, struct caps *caps, const uint8_t *raw,
                               size_t len, int *bad, int *oom)
{
    struct lp_cursor c = {raw, raw + len, 0};
    struct lp_delta_state delta = {0};
    uint64_t kept = 0;
    while (c.p < c.end) {
        uint64_t type = lp_cur_uvar(&c);
        uint64_t body = lp_cur_uvar(&c);
        if (c.bad || body > (size_t)(c.end - c.p)) {
            *bad = 1;
            break;
        }
        if (type == LP_REC_STRING) {
            struct lp_cursor s = {c.p, c.p + body, 0};
            uint64_t id = lp_cur_uvar(&s), slen = lp_cur_uvar(&s);
            const uint8_t *bytes = s.bad ? NULL : lp_cur_bytes(&s, slen);
            if (!bytes || set_string(t, id, bytes, slen) != 0) {
                *bad = 1;
                break;
            }
            c.p += body;
        } else if (type < LP_REC_TYPE_COUNT && lp_record_type_known((uint32_t)type)) {
            struct lp_record r;
            if (lp_record_decode(&c, body, &delta, (uint32_t)type, &r) != 0) {
                *bad = 1;
                break;
            }
            if (store(t, caps, &r) != 0) {
                *oom = 1;
                break;
            }
        } else {
            c.p += body; /* a record type from a newer minor version */
        }
        kept++;
    }
    return kept;
}

static int decode_meta(struct lp_trace *t, const uint8_t *raw, size_t len)
{
    struct lp_cursor c = {raw, raw + len, 0};
    while (c.p < c.end && !c.bad) {
        uint64_t kl = lp_cur_uvar(&c);
        const uint8_t *k = lp_cur_bytes(&c, kl);
        uint64_t vl = lp_cur_uvar(&c);
        const uint8_t *v = lp_cur_bytes(&c, vl);
        if (!k || !v || c.bad)
            return -1;
        if (set_meta(t, (const char *)k, kl, (const char *)v, vl) != 0)
            return -1;
    }
    return c.bad ? -1 : 0;
}

/* Next offset after OFF where a valid chunk header starts, or SIZE. */
static size_t resync(const uint8_t *data, size_t size, size_t off)
{
    struct lp_chunk_header h;
    for (size_t o = off + 1; o + LP_CHUNK_HEADER_SIZE <= size; o++)
        if (data[o] == 'L' && lp_chunk_header_unpack(data + o, &h) == 0)
            return o;
    return size;
}

int lp_trace_read_mem(struct lp_trace **out, const void *data_, size_t size, const char *name,
                      char *err, size_t errlen)
{
    const uint8_t *data = data_;
    *out = NULL;
    if (size < LP_FILE_HEADER_SIZE || memcmp(data, LP_TRACE_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not an llmprof trace (bad magic)", name);
        return LP_ERR_FORMAT;
    }
    uint32_t major = data[8] | (uint32_t)data[9] << 8, minor = data[10] | (uint32_t)data[11] << 8;
    if (major > LP_TRACE_VERSION_MAJOR) {
        snprintf(err, errlen,
                 "%s: trace format version %u.%u is newer than this llmprof reads (%d.x); "
                 "upgrade llmprof to read it",
                 name, major, minor, LP_TRACE_VERSION_MAJOR);
        return LP_ERR_VERSION;
    }
    if (major == 0) {
        snprintf(err, errlen, "%s: trace format version 0 is not valid", name);
        return LP_ERR_FORMAT;
    }
    struct lp_trace *t = calloc(1, sizeof *t);
    struct caps caps = {{0}};
    uint8_t *raw = NULL;
    size_t raw_cap = 0;
    if (!t || !(t->path = strdup(name)))
        goto oom;
    t->version_major = major;
    t->version_minor = minor;
    t->file_bytes = size;
    size_t off = LP_FILE_HEADER_SIZE;
    while (off < size) {
        struct lp_chunk_header h;
        size_t left = size - off;
        if (left < LP_CHUNK_HEADER_SIZE) {
            warn(t, "torn chunk header at byte %zu (%zu bytes): the process stopped while "
                    "writing; dropped", off, left);
            t->dropped_bytes += left;
            break;
        }
        if (lp_chunk_header_unpack(data + off, &h) != 0) {
            size_t next = resync(data, size, off);
            warn(t, "corrupt chunk header at byte %zu: skipped %zu bytes", off, next - off);
            t->dropped_bytes += next - off;
            off = next;
            continue;
        }
        size_t total = LP_CHUNK_HEADER_SIZE + (size_t)h.payload_size;
        if (total > left) {
            warn(t, "torn chunk at byte %zu (%u records, %zu of %zu bytes present): the "
                    "process stopped while writing; dropped", off, h.n_records, left, total);
            t->dropped_bytes += left;
            break;
        }
        const uint8_t *payload = data + off + LP_CHUNK_HEADER_SIZE;
        if (lp_crc32(payload, h.payload_size) != h.payload_crc || h.raw_size > LP_CHUNK_MAX_RAW ||
            (h.codec != LP_CODEC_ZSTD && h.codec != LP_CODEC_RAW)) {
            warn(t, "corrupt chunk at byte %zu (checksum or size): %u records dropped", off,
                 h.n_records);
            t->dropped_bytes += total;
            off += total;
            continue;
        }
        const uint8_t *body = payload;
        if (h.codec == LP_CODEC_ZSTD) {
            if (h.raw_size > raw_cap) {
                uint8_t *p = realloc(raw, h.raw_size);
                if (!p)
                    goto oom;
                raw = p;
                raw_cap = h.raw_size;
            }
            size_t n = ZSTD_decompress(raw, h.raw_size, payload, h.payload_size);
            if (ZSTD_isError(n) || n != h.raw_size) {
                warn(t, "chunk at byte %zu does not decompress: %u records dropped", off,
                     h.n_records);
                t->dropped_bytes += total;
                off += total;
                continue;
            }
            body = raw;
        } else if (h.raw_size != h.payload_size) {
            warn(t, "corrupt raw chunk at byte %zu: %u records dropped", off, h.n_records);
            t->dropped_bytes += total;
            off += total;
            continue;
        }
        t->n_chunks++;
        if (h.type == LP_CHUNK_META || h.type == LP_CHUNK_END) {
            if (decode_meta(t, body, h.raw_size) != 0)
                warn(t, "malformed header chunk at byte %zu: part of it dropped", off);
            if (h.type == LP_CHUNK_END)
                t->complete = 1;
        } else if (h.type == LP_CHUNK_RECORDS) {
            int bad = 0, oom = 0;
            uint64_t kept = decode_records(t, &caps, body, h.raw_size, &bad, &oom);
            if (oom)
                goto oom;
            if (bad)
                warn(t, "malformed record in chunk at byte %zu: %llu of %u records kept", off,
                     (unsigned long long)kept, h.n_records);
            t->n_records += kept;
        } /* unknown chunk types come from newer minor versions: skipped */
        off += total;
    }
    free(raw);
    *out = t;
    return LP_OK;
oom:
    free(raw);
    lp_trace_free(t);
    snprintf(err, errlen, "%s: out of memory", name);
    return LP_ERR_NOMEM;
}

int lp_trace_read(struct lp_trace **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return LP_ERR_IO;
    }
    uint8_t *data = NULL;
    size_t len = 0, cap = 0;
    int rc = LP_OK;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : (1u << 20);
            uint8_t *p = realloc(data, cap);
            if (!p) {
                rc = LP_ERR_NOMEM;
                snprintf(err, errlen, "%s: out of memory", path);
                break;
            }
            data = p;
        }
        size_t n = fread(data + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                rc = LP_ERR_IO;
                snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            }
            break;
        }
    }
    fclose(f);
    if (rc == LP_OK)
        rc = lp_trace_read_mem(out, data, len, path, err, errlen);
    free(data);
    return rc;
}

void lp_trace_free(struct lp_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_meta; i++) {
        free(t->meta[i].key);
        free(t->meta[i].value);
    }
    for (size_t i = 0; i < t->n_strings; i++)
        free(t->strings[i]);
    for (size_t i = 0; i < t->n_warnings; i++)
        free(t->warnings[i]);
    free(t->meta);
    free(t->strings);
    free(t->warnings);
    free(t->kernels);
    free(t->memcpys);
    free(t->memsets);
    free(t->memory);
    free(t->markers);
    free(t->apis);
    free(t->nvml);
    free(t->devices);
    free(t->overheads);
    free(t->losses);
    free(t->gemms);
    free(t->path);
    free(t);
}

const char *lp_trace_meta(const struct lp_trace *t, const char *key)
{
    for (size_t i = 0; i < t->n_meta; i++)
        if (strcmp(t->meta[i].key, key) == 0)
            return t->meta[i].value;
    return NULL;
}

const char *lp_trace_str(const struct lp_trace *t, lp_str id)
{
    if (id == 0)
        return "";
    if (id < t->n_strings && t->strings[id])
        return t->strings[id];
    return "<unknown>";
}
