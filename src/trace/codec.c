/* Record codec of trace format v1 (see codec.h). Each record is: type (varint), length
 * of the body (varint), body. Bodies are field lists driven by one table per type:
 * timestamps as deltas against the previous record of the same type, end times as
 * durations, correlation ids as deltas, everything else as LEB128 varints. Repetitive
 * LLM kernel streams then compress to a few bytes per record under zstd. */
#include "codec.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum field_kind { F_TS, F_END, F_U32, F_STR, F_U64, F_I32, F_CORR, F_RAW16 };

struct field {
    uint16_t offset;
    uint8_t kind;
};

#define FLD(type, member, kind) {(uint16_t)offsetof(struct type, member), kind}

static const struct field kernel_fields[] = {
    FLD(lp_kernel, start, F_TS), FLD(lp_kernel, end, F_END),
    FLD(lp_kernel, name, F_STR), FLD(lp_kernel, correlation, F_CORR),
    FLD(lp_kernel, device, F_U32), FLD(lp_kernel, context, F_U32),
    FLD(lp_kernel, stream, F_U32),
    FLD(lp_kernel, grid[0], F_I32), FLD(lp_kernel, grid[1], F_I32), FLD(lp_kernel, grid[2], F_I32),
    FLD(lp_kernel, block[0], F_I32), FLD(lp_kernel, block[1], F_I32), FLD(lp_kernel, block[2], F_I32),
    FLD(lp_kernel, registers, F_U32), FLD(lp_kernel, static_smem, F_U32),
    FLD(lp_kernel, dynamic_smem, F_U32), FLD(lp_kernel, local_mem_per_thread, F_U32),
    FLD(lp_kernel, graph_id, F_U32), FLD(lp_kernel, graph_node_id, F_U64),
    FLD(lp_kernel, flags, F_U32),
};

static const struct field memcpy_fields[] = {
    FLD(lp_memcpy, start, F_TS), FLD(lp_memcpy, end, F_END), FLD(lp_memcpy, bytes, F_U64),
    FLD(lp_memcpy, correlation, F_CORR), FLD(lp_memcpy, device, F_U32),
    FLD(lp_memcpy, context, F_U32), FLD(lp_memcpy, stream, F_U32),
    FLD(lp_memcpy, copy_kind, F_U32), FLD(lp_memcpy, src_kind, F_U32),
    FLD(lp_memcpy, dst_kind, F_U32), FLD(lp_memcpy, graph_id, F_U32),
};

static const struct field memset_fields[] = {
    FLD(lp_memset, start, F_TS), FLD(lp_memset, end, F_END), FLD(lp_memset, bytes, F_U64),
    FLD(lp_memset, correlation, F_CORR), FLD(lp_memset, device, F_U32),
    FLD(lp_memset, context, F_U32), FLD(lp_memset, stream, F_U32),
    FLD(lp_memset, value, F_U32), FLD(lp_memset, memory_kind, F_U32),
    FLD(lp_memset, graph_id, F_U32),
};

static const struct field memory_fields[] = {
    FLD(lp_memory, timestamp, F_TS), FLD(lp_memory, address, F_U64),
    FLD(lp_memory, bytes, F_U64), FLD(lp_memory, correlation, F_CORR),
    FLD(lp_memory, device, F_U32), FLD(lp_memory, context, F_U32),
    FLD(lp_memory, stream, F_U32), FLD(lp_memory, op, F_U32),
    FLD(lp_memory, memory_kind, F_U32),
};

static const struct field marker_fields[] = {
    FLD(lp_marker, timestamp, F_TS), FLD(lp_marker, id, F_U32), FLD(lp_marker, flags, F_U32),
    FLD(lp_marker, name, F_STR), FLD(lp_marker, domain, F_STR), FLD(lp_marker, thread, F_U32),
};

static const struct field api_fields[] = {
    FLD(lp_api, start, F_TS), FLD(lp_api, end, F_END), FLD(lp_api, correlation, F_CORR),
    FLD(lp_api, thread, F_U32), FLD(lp_api, domain, F_U32), FLD(lp_api, cbid, F_U32),
    FLD(lp_api, name, F_STR), FLD(lp_api, status, F_U32),
};

static const struct field nvml_fields[] = {
    FLD(lp_nvml_sample, timestamp, F_TS), FLD(lp_nvml_sample, query_ns, F_U32),
    FLD(lp_nvml_sample, device, F_U32), FLD(lp_nvml_sample, valid, F_U32),
    FLD(lp_nvml_sample, power_mw, F_U32), FLD(lp_nvml_sample, energy_mj, F_U64),
    FLD(lp_nvml_sample, sm_mhz, F_U32), FLD(lp_nvml_sample, mem_mhz, F_U32),
    FLD(lp_nvml_sample, util_gpu, F_U32), FLD(lp_nvml_sample, util_mem, F_U32),
    FLD(lp_nvml_sample, temp_c, F_U32), FLD(lp_nvml_sample, clock_events, F_U64),
    FLD(lp_nvml_sample, mem_used, F_U64),
};

static const struct field device_fields[] = {
    FLD(lp_device, id, F_U32), FLD(lp_device, name, F_STR), FLD(lp_device, uuid, F_RAW16),
    FLD(lp_device, cc_major, F_U32), FLD(lp_device, cc_minor, F_U32),
    FLD(lp_device, sm_count, F_U32), FLD(lp_device, mem_bytes, F_U64),
    FLD(lp_device, mem_bandwidth_kbps, F_U64), FLD(lp_device, core_clock_khz, F_U32),
    FLD(lp_device, max_sm_mhz, F_U32), FLD(lp_device, max_mem_mhz, F_U32),
    FLD(lp_device, power_limit_mw, F_U32),
};

static const struct field overhead_fields[] = {
    FLD(lp_overhead, start, F_TS), FLD(lp_overhead, end, F_END),
    FLD(lp_overhead, kind, F_U32), FLD(lp_overhead, thread, F_U32),
};

static const struct field loss_fields[] = {
    FLD(lp_loss, source, F_U32), FLD(lp_loss, count, F_U64), FLD(lp_loss, what, F_STR),
};

static const struct field gemm_fields[] = {
    FLD(lp_gemm, start, F_TS), FLD(lp_gemm, end, F_END), FLD(lp_gemm, thread, F_U32),
    FLD(lp_gemm, api, F_STR), FLD(lp_gemm, m, F_U64), FLD(lp_gemm, n, F_U64),
    FLD(lp_gemm, k, F_U64), FLD(lp_gemm, batch, F_U64), FLD(lp_gemm, transa, F_U32),
    FLD(lp_gemm, transb, F_U32), FLD(lp_gemm, a_type, F_U32), FLD(lp_gemm, b_type, F_U32),
    FLD(lp_gemm, c_type, F_U32), FLD(lp_gemm, d_type, F_U32),
    FLD(lp_gemm, compute_type, F_U32), FLD(lp_gemm, algo, F_I32), FLD(lp_gemm, tile, F_STR),
    FLD(lp_gemm, splitk, F_U32), FLD(lp_gemm, epilogue, F_U32), FLD(lp_gemm, status, F_U32),
    FLD(lp_gemm, flags, F_U32),
};

static const struct field graph_fields[] = {
    FLD(lp_graph, timestamp, F_TS), FLD(lp_graph, thread, F_U32), FLD(lp_graph, event, F_U32),
    FLD(lp_graph, graph_id, F_U32), FLD(lp_graph, original_graph_id, F_U32),
    FLD(lp_graph, exec_id, F_U32), FLD(lp_graph, node_type, F_U32),
    FLD(lp_graph, node_id, F_U64), FLD(lp_graph, original_node_id, F_U64),
};

#define CTR(i) FLD(lp_counters, value[i], F_U64)
static const struct field counters_fields[] = {
    FLD(lp_counters, start, F_TS), FLD(lp_counters, end, F_END),
    FLD(lp_counters, thread, F_U32), FLD(lp_counters, device, F_U32),
    FLD(lp_counters, index, F_U32), FLD(lp_counters, valid, F_U32),
    CTR(0), CTR(1), CTR(2), CTR(3), CTR(4), CTR(5), CTR(6), CTR(7),
    CTR(8), CTR(9), CTR(10), CTR(11), CTR(12), CTR(13), CTR(14), CTR(15),
};
#undef CTR
_Static_assert(LP_COUNTER_COUNT <= LP_COUNTER_SLOTS, "counters record slots");

#define PMV(i) FLD(lp_pm_sample, value[i], F_U32)
static const struct field pm_fields[] = {
    FLD(lp_pm_sample, start, F_TS), FLD(lp_pm_sample, end, F_END),
    FLD(lp_pm_sample, device, F_U32), FLD(lp_pm_sample, valid, F_U32),
    PMV(0), PMV(1), PMV(2), PMV(3), PMV(4), PMV(5), PMV(6), PMV(7), PMV(8), PMV(9), PMV(10),
    PMV(11),
};
#undef PMV
_Static_assert(LP_PM_COUNT <= LP_PM_SLOTS, "PM sample slots");

static const struct field window_fields[] = {
    FLD(lp_window, start, F_TS), FLD(lp_window, end, F_END), FLD(lp_window, cause, F_U32),
    FLD(lp_window, thread, F_U32),
};

/* MIN is how many fields every record of the type carries: all of them as of format 1.1.
 * A later minor version that appends fields keeps MIN at the old count, so old records,
 * which lack the new fields, still decode (the new fields read as 0). A record shorter
 * than MIN fields is malformed; the bound also keeps a decoded record at most a few times
 * the bytes it took in the file. */
#define TABLE(t, s) {t, sizeof t / sizeof t[0], sizeof t / sizeof t[0], sizeof(struct s)}
static const struct {
    const struct field *fields;
    size_t n, min;
    size_t size; /* of the record's struct */
} tables[LP_REC_TYPE_COUNT] = {
    [LP_REC_KERNEL] = TABLE(kernel_fields, lp_kernel),
    [LP_REC_MEMCPY] = TABLE(memcpy_fields, lp_memcpy),
    [LP_REC_MEMSET] = TABLE(memset_fields, lp_memset),
    [LP_REC_MEMORY] = TABLE(memory_fields, lp_memory),
    [LP_REC_MARKER] = TABLE(marker_fields, lp_marker),
    [LP_REC_API] = TABLE(api_fields, lp_api),
    [LP_REC_NVML] = TABLE(nvml_fields, lp_nvml_sample),
    [LP_REC_DEVICE] = TABLE(device_fields, lp_device),
    [LP_REC_OVERHEAD] = TABLE(overhead_fields, lp_overhead),
    [LP_REC_LOSS] = TABLE(loss_fields, lp_loss),
    [LP_REC_GEMM] = TABLE(gemm_fields, lp_gemm),
    [LP_REC_GRAPH] = TABLE(graph_fields, lp_graph),
    [LP_REC_COUNTERS] = TABLE(counters_fields, lp_counters),
    [LP_REC_PM_SAMPLE] = TABLE(pm_fields, lp_pm_sample),
    [LP_REC_WINDOW] = TABLE(window_fields, lp_window),
};

int lp_record_type_known(uint32_t type)
{
    return type > 0 && type < LP_REC_TYPE_COUNT && (type == LP_REC_STRING || tables[type].n > 0);
}

int lp_record_layout(uint32_t type, struct lp_record_layout *l)
{
    memset(l, 0, sizeof *l);
    if (type >= LP_REC_TYPE_COUNT || tables[type].n == 0)
        return LP_ERR_ARG;
    l->size = tables[type].size;
    for (size_t i = 0; i < tables[type].n; i++) {
        const struct field *f = &tables[type].fields[i];
        if (f->kind == F_TS && !l->has_ts) {
            l->has_ts = 1;
            l->ts = f->offset;
        } else if (f->kind == F_END && !l->has_end) {
            l->has_end = 1;
            l->end = f->offset;
        } else if (f->kind == F_STR && l->n_str < sizeof l->str / sizeof l->str[0]) {
            l->str[l->n_str++] = f->offset;
        }
    }
    return LP_OK;
}

/* ---- buffers and varints ---- */

void lp_buf_reserve(struct lp_buf *b, size_t extra)
{
    if (b->oom || b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->data = p;
    b->cap = cap;
}

void lp_buf_put(struct lp_buf *b, const void *p, size_t n)
{
    lp_buf_reserve(b, n);
    if (b->oom || n == 0)
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void lp_buf_put_uvar(struct lp_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    lp_buf_put(b, tmp, n);
}

void lp_buf_free(struct lp_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint64_t lp_cur_uvar_slow(struct lp_cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) {
            c->bad = 1;
            return 0;
        }
        uint8_t byte = *c->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

const uint8_t *lp_cur_bytes(struct lp_cursor *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += n;
    return p;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* ---- records ---- */

static void encode_fields(struct lp_buf *b, struct lp_delta_state *st, uint32_t type,
                          const uint8_t *base)
{
    uint64_t last_ts = 0;
    for (size_t i = 0; i < tables[type].n; i++) {
        const struct field *f = &tables[type].fields[i];
        const uint8_t *p = base + f->offset;
        uint64_t u64;
        uint32_t u32;
        int32_t i32;
        switch (f->kind) {
        case F_TS:
            memcpy(&u64, p, 8);
            lp_buf_put_uvar(b, zigzag((int64_t)(u64 - st->ts[type])));
            st->ts[type] = last_ts = u64;
            break;
        case F_END:
            memcpy(&u64, p, 8);
            lp_buf_put_uvar(b, zigzag((int64_t)(u64 - last_ts)));
            break;
        case F_U32:
        case F_STR:
            memcpy(&u32, p, 4);
            lp_buf_put_uvar(b, u32);
            break;
        case F_U64:
            memcpy(&u64, p, 8);
            lp_buf_put_uvar(b, u64);
            break;
        case F_I32:
            memcpy(&i32, p, 4);
            lp_buf_put_uvar(b, zigzag(i32));
            break;
        case F_CORR:
            memcpy(&u32, p, 4);
            lp_buf_put_uvar(b, zigzag((int64_t)u32 - (int64_t)st->corr[type]));
            st->corr[type] = u32;
            break;
        case F_RAW16:
            lp_buf_put(b, p, 16);
            break;
        }
    }
}

void lp_record_encode(struct lp_buf *b, struct lp_delta_state *st, const struct lp_record *r)
{
    struct lp_buf body = {0};
    /* At most 20 varints of 10 bytes plus 16 raw bytes: never reallocates. */
    uint8_t stack[256];
    /* Encode into a stack buffer first to learn the length. */
    body.data = stack;
    body.cap = sizeof stack;
    encode_fields(&body, st, r->type, (const uint8_t *)&r->u);
    lp_buf_put_uvar(b, r->type);
    lp_buf_put_uvar(b, body.len);
    lp_buf_put(b, body.data, body.len);
}

/* The field loop for fields FROM to N - 1 of one table, from BODY into R; returns the index
 * of the first field the body did not hold. Inlined with a constant table for the types
 * every kernel brings (kernels and their launch calls), so that the compiler unrolls it and
 * each field decodes without the table walk and switch: half the reader's time was spent
 * here. */
static inline __attribute__((always_inline)) size_t
decode_range(struct lp_cursor *body_, struct lp_delta_state *st, uint32_t type,
             const struct field *fields, size_t from, size_t n, struct lp_record *r)
{
    struct lp_cursor body = *body_;
    uint8_t *base = (uint8_t *)&r->u;
    uint64_t last_ts = 0;
    size_t i = from;
#pragma GCC unroll 32
    for (; i < n; i++) {
        if (body.p >= body.end)
            break;
        const struct field *f = &fields[i];
        uint8_t *p = base + f->offset;
        uint64_t v = 0, u64;
        uint32_t u32;
        int32_t i32;
        const uint8_t *raw;
        if (f->kind != F_RAW16)
            v = lp_cur_uvar(&body);
        switch (f->kind) {
        case F_TS:
            u64 = st->ts[type] + (uint64_t)unzigzag(v);
            st->ts[type] = last_ts = u64;
            memcpy(p, &u64, 8);
            break;
        case F_END:
            u64 = last_ts + (uint64_t)unzigzag(v);
            memcpy(p, &u64, 8);
            break;
        case F_U32:
        case F_STR:
            u32 = (uint32_t)v;
            memcpy(p, &u32, 4);
            break;
        case F_U64:
            memcpy(p, &v, 8);
            break;
        case F_I32:
            i32 = (int32_t)unzigzag(v);
            memcpy(p, &i32, 4);
            break;
        case F_CORR:
            u32 = (uint32_t)((int64_t)st->corr[type] + unzigzag(v));
            st->corr[type] = u32;
            memcpy(p, &u32, 4);
            break;
        case F_RAW16:
            raw = lp_cur_bytes(&body, 16);
            if (raw)
                memcpy(p, raw, 16);
            break;
        }
    }
    *body_ = body;
    return i;
}

/* A record's body of LEN bytes at C: taken from C, the record R cleared to its type's
 * SIZE. LP_OK, or LP_ERR_FORMAT when C holds fewer bytes. */
static inline __attribute__((always_inline)) int
open_body(struct lp_cursor *c, size_t len, uint32_t type, size_t size, struct lp_record *r,
          struct lp_cursor *body)
{
    *body = (struct lp_cursor){c->p, c->p + len, 0};
    if (!lp_cur_bytes(c, len))
        return LP_ERR_FORMAT;
    /* only the type's own struct: the union is up to 168 bytes */
    memset(r, 0, offsetof(struct lp_record, u) + size);
    r->type = type;
    return LP_OK;
}

static inline __attribute__((always_inline)) int
decode_fields(struct lp_cursor *c, size_t len, struct lp_delta_state *st, uint32_t type,
              const struct field *fields, size_t n, size_t min, size_t size,
              struct lp_record *r)
{
    struct lp_cursor body;
    if (open_body(c, len, type, size, r, &body) != LP_OK)
        return LP_ERR_FORMAT;
    size_t i = decode_range(&body, st, type, fields, 0, n, r);
    return body.bad || i < min ? LP_ERR_FORMAT : LP_OK;
}

#define DECODE_WITH(tt, arr, s)                                                                \
    decode_fields(c, len, st, tt, arr, sizeof arr / sizeof arr[0], tables[tt].min,            \
                  sizeof(struct s), r)

int lp_record_decode(struct lp_cursor *c, size_t len, struct lp_delta_state *st, uint32_t type,
                     struct lp_record *r)
{
    _Static_assert(sizeof kernel_fields / sizeof kernel_fields[0] <= 32, "unrolled whole");
    switch (type) {
    case LP_REC_KERNEL: return DECODE_WITH(LP_REC_KERNEL, kernel_fields, lp_kernel);
    case LP_REC_API: return DECODE_WITH(LP_REC_API, api_fields, lp_api);
    default:
        return decode_fields(c, len, st, type, tables[type].fields, tables[type].n,
                             tables[type].min, tables[type].size, r);
    }
}
#undef DECODE_WITH

/* The fields before a record's tail: start, end, name and correlation id of a kernel;
 * start, end and correlation id of an API call (its thread, domain, callback, name and
 * status are its tail) */
enum { KERNEL_HEAD = 4, API_HEAD = 3 };
_Static_assert(KERNEL_HEAD < sizeof kernel_fields / sizeof kernel_fields[0] &&
               API_HEAD < sizeof api_fields / sizeof api_fields[0], "a tail");

/* The head (TAIL 0) or the tail (1) of a kernel's or call's fields: constant tables, unrolled */
static inline __attribute__((always_inline)) size_t
decode_part(struct lp_cursor *body, struct lp_delta_state *st, uint32_t type, int tail,
            struct lp_record *r)
{
#define PART(arr, head)                                                                        \
    decode_range(body, st, type, arr, tail ? head : 0,                                         \
                 tail ? sizeof arr / sizeof arr[0] : head, r)
    return type == LP_REC_KERNEL ? PART(kernel_fields, KERNEL_HEAD) : PART(api_fields, API_HEAD);
#undef PART
}

int lp_record_decode_head(struct lp_cursor *c, size_t len, struct lp_delta_state *st,
                          uint32_t type, struct lp_record *r, struct lp_cursor *tail)
{
    if ((type != LP_REC_KERNEL && type != LP_REC_API) ||
        open_body(c, len, type, tables[type].size, r, tail) != LP_OK)
        return LP_ERR_FORMAT;
    size_t head = type == LP_REC_KERNEL ? KERNEL_HEAD : API_HEAD;
    size_t i = decode_part(tail, st, type, 0, r);
    return tail->bad || i < head ? LP_ERR_FORMAT : LP_OK;
}

int lp_record_decode_tail(struct lp_cursor *tail, uint32_t type, struct lp_record *r)
{
    if (type != LP_REC_KERNEL && type != LP_REC_API)
        return LP_ERR_FORMAT;
    /* the tail's fields are plain values: the delta state is not read */
    struct lp_delta_state none = {0};
    size_t i = decode_part(tail, &none, type, 1, r);
    return tail->bad || i < tables[type].min ? LP_ERR_FORMAT : LP_OK;
}

/* ---- chunk headers ---- */

uint32_t lp_crc32(const void *data, size_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    const Bytef *p = data;
    while (n > 0) { /* zlib takes uInt lengths */
        uInt step = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, step);
        p += step;
        n -= step;
    }
    return (uint32_t)crc;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void lp_chunk_header_pack(const struct lp_chunk_header *h, uint8_t out[LP_CHUNK_HEADER_SIZE])
{
    memset(out, 0, LP_CHUNK_HEADER_SIZE);
    put_le32(out, LP_CHUNK_MAGIC);
    put_le32(out + 4, (h->type & 0xffff) | (h->codec & 0xffff) << 16);
    put_le32(out + 8, h->payload_size);
    put_le32(out + 12, h->raw_size);
    put_le32(out + 16, h->n_records);
    put_le32(out + 20, h->payload_crc);
    put_le32(out + 24, lp_crc32(out, 24));
    put_le32(out + 28, h->seq); /* after the header's checksum: readers before 1.8 skip it */
}

int lp_chunk_header_unpack(const uint8_t in[LP_CHUNK_HEADER_SIZE], struct lp_chunk_header *h)
{
    if (get_le32(in) != LP_CHUNK_MAGIC || get_le32(in + 24) != lp_crc32(in, 24))
        return LP_ERR_FORMAT;
    uint32_t tc = get_le32(in + 4);
    h->type = tc & 0xffff;
    h->codec = tc >> 16;
    h->payload_size = get_le32(in + 8);
    h->raw_size = get_le32(in + 12);
    h->n_records = get_le32(in + 16);
    h->payload_crc = get_le32(in + 20);
    h->seq = get_le32(in + 28);
    return LP_OK;
}

int lp_meta_next(struct lp_cursor *c, const uint8_t **k, size_t *kl, const uint8_t **v,
                 size_t *vl)
{
    if (c->p >= c->end)
        return 0;
    uint64_t n = lp_cur_uvar(c);
    *k = lp_cur_bytes(c, n);
    *kl = (size_t)n;
    n = lp_cur_uvar(c);
    *v = lp_cur_bytes(c, n);
    *vl = (size_t)n;
    return *k && *v && !c->bad ? 1 : -1;
}
