/* Trace reader: loads a whole trace into typed arrays. Recovery is part of reading:
 * a torn tail (the process was killed mid-write) or a corrupt chunk is skipped with a
 * warning that says what was dropped, and everything else is kept. Whatever the file
 * holds, the reader's memory and time are bounded by its size (docs/trace-format.md,
 * "Reading"), and records whose times cannot be true are counted, named in one warning per
 * reason, and kept out of the arrays every total is summed from. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "codec.h"
#include "reader_internal.h"
#include "llmprof/trace.h"

/* What a file can make the reader do (docs/trace-format.md, "Reading"), both per byte of
 * the chunks it decodes (chunks of unknown types earn nothing): records decode to
 * LP_READ_RAW_BASE bytes plus LP_READ_RAW_PER_BYTE per byte at most (codec.h), and the
 * records and strings kept take MEM_BASE plus MEM_PER_BYTE per byte at most (real traces
 * 13-29 times, the synthetic one 75 times). */
#define RAW_BASE LP_READ_RAW_BASE
#define RAW_PER_BYTE LP_READ_RAW_PER_BYTE
#define MEM_BASE (64ull << 20)
#define MEM_PER_BYTE 128u
#define MAX_CHUNK_WARNINGS 32 /* lines about single chunks; past it they are counted */
#define DISTINCT_MAX 64       /* different chunks under one number told apart from copies */
#define MAX_META_PAIRS 16384  /* header pairs read; a collector writes about 100 */
#define MAX_META_KEYS 1024
#define MAX_DEVICE_RECORDS 16384 /* a collector writes two per GPU */
#define MAX_DEVICES 1024

/* One string definition in file order: its id and where its bytes are in the pool. */
struct strdef {
    uint32_t id;
    size_t off;
};

/* A table of distinct items kept once each (kernel configurations, API call and GEMM call
 * kinds): the items in the trace's array, and their indexes + 1 in slots by hash, 0 free */
struct intern {
    uint32_t *slots;
    size_t n_slots, cap;
    uint32_t last;            /* the item found or added last, + 1: calls come in runs */
};

/* What lives only while one trace is read. */
struct rd {
    struct lp_trace *t;
    size_t cap[LP_REC_TYPE_COUNT];
    size_t long_cap;                /* of t->long_ends */
    struct strdef *defs;
    size_t n_defs, cap_defs;
    char *pool;
    size_t pool_len, pool_cap;
    uint64_t raw_total;
    uint64_t chunk_bytes;             /* of the chunks decoded: what the budgets grow with */
    uint64_t mem_total, mem_dropped;  /* bytes kept in records and strings; records refused */
    uint64_t budget_chunks, budget_bytes;
    uint64_t chunk_warnings;
    uint64_t count_chunks, count_declared, count_decoded;
    size_t count_off;
    uint64_t meta_pairs, meta_dropped;
    uint64_t device_records, devices_dropped;
    uint64_t utf8_repaired;           /* bytes of names that were not UTF-8, now '?' */
    uint64_t read_by_type[LP_REC_TYPE_COUNT]; /* known records decoded (strings left out) */
    uint64_t read_unknown;            /* records of types this reader does not know */
    int newer_skipped;                /* chunks of a type of a newer minor version skipped */
    uint64_t missing, missing_after;  /* chunk numbers skipped; the number before the first */
    int account;                      /* the END chunk said the records written */
    int meta_read;                    /* a header chunk was read */
    uint8_t *raw;                     /* one zstd chunk, decompressed */
    size_t raw_cap;
    struct intern configs, api_kinds, gemm_kinds; /* what kernels, calls, GEMMs share */
    uint32_t by_name[256];            /* the configuration last seen with a name (id % 256),
                                         + 1: a kernel is mostly launched alike each time */
    struct tail_memo {                /* a record's tail remembered (read_row): */
        uint32_t name, index;         /* its kernel's name, its configuration or call kind */
        uint32_t len;                 /* its bytes, 0: none yet */
        uint8_t bytes[52];
    } tails[256], api_tail;           /* the last kernel's of a name (id % 256); call's */
};

/* A warning about one chunk: a file of many damaged chunks gives a few lines and a count. */
static void chunk_warn(struct rd *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void chunk_warn(struct rd *rd, const char *fmt, ...)
{
    if (rd->chunk_warnings++ >= MAX_CHUNK_WARNINGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    lp_trace_vwarn(rd->t, fmt, ap);
    va_end(ap);
}

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* ---- header pairs, devices, strings: counts bounded, lookups over bounded sets ---- */


static int set_meta(struct rd *rd, const char *k, size_t kl, const char *v, size_t vl)
{
    struct lp_trace *t = rd->t;
    if (++rd->meta_pairs > MAX_META_PAIRS) {
        rd->meta_dropped++;
        return LP_OK;
    }
    char *key = strndup(k, kl), *value = strndup(v, vl);
    if (!key || !value)
        goto oom;
    rd->utf8_repaired +=
        lp_utf8_repair(key, strlen(key)) + lp_utf8_repair(value, strlen(value));
    for (size_t i = 0; i < t->n_meta; i++) {
        if (strcmp(t->meta[i].key, key) == 0) {
            free(t->meta[i].value);
            t->meta[i].value = value;
            free(key);
            return LP_OK;
        }
    }
    if (t->n_meta >= MAX_META_KEYS) {
        rd->meta_dropped++;
        free(key);
        free(value);
        return LP_OK;
    }
    struct lp_meta_kv *m = realloc(t->meta, (t->n_meta + 1) * sizeof *m);
    if (!m)
        goto oom;
    t->meta = m;
    m[t->n_meta++] = (struct lp_meta_kv){key, value};
    return LP_OK;
oom:
    free(key);
    free(value);
    return LP_ERR_NOMEM;
}

/* Doubles *ARR's room of *CAP items of SIZE bytes */
static int grow(void **arr, size_t *cap, size_t size)
{
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, c * size);
    if (!p)
        return LP_ERR_NOMEM;
    *arr = p;
    *cap = c;
    return LP_OK;
}

/* inline: twenty million calls on a trace of ten million kernels, each of a known SIZE */
static inline int append(void **arr, size_t *n, size_t *cap, const void *item, size_t size)
{
    if (*n == *cap && grow(arr, cap, size) != LP_OK)
        return LP_ERR_NOMEM;
    memcpy((uint8_t *)*arr + *n * size, item, size);
    (*n)++;
    return LP_OK;
}

/* Counts BYTES against the memory budget; 0 when they fit, else 1 (the record is left out). */
static int charge(struct rd *rd, uint64_t bytes)
{
    if (rd->mem_total + bytes > MEM_BASE + (uint64_t)MEM_PER_BYTE * rd->chunk_bytes) {
        rd->mem_dropped++;
        return 1;
    }
    rd->mem_total += bytes;
    return 0;
}

/* Charges a row from START to END of SIZE bytes, and keeps END apart when the row's duration
 * field cannot hold it (LP_REC_LONG); sets *DUR. LP_OK; 1 when over the budget (the record
 * is left out); else an error. */
static inline int charge_row(struct rd *rd, size_t size, uint64_t start, uint64_t end,
                             uint32_t *dur)
{
    if (end >= start && end - start < LP_REC_LONG) {
        *dur = (uint32_t)(end - start);
        return charge(rd, size);
    }
    struct lp_trace *t = rd->t;
    if (t->n_long_ends >= LP_REC_LONG) { /* 16 GiB of them: past any budget */
        rd->mem_dropped++;
        return 1;
    }
    if (charge(rd, size + sizeof end))
        return 1;
    *dur = LP_REC_LONG | (uint32_t)t->n_long_ends;
    return append((void **)&t->long_ends, &t->n_long_ends, &rd->long_cap, &end, sizeof end);
}

/* Keeps the definition's bytes (cut at a NUL, as C strings are) in the pool; ids are
 * renumbered once everything is read (finish_strings). */
static int add_string(struct rd *rd, uint32_t id, const uint8_t *s, size_t len)
{
    if (id == 0) /* id 0 is "" and never defined: nothing to keep */
        return LP_OK;
    const uint8_t *nul = memchr(s, 0, len);
    if (nul)
        len = (size_t)(nul - s);
    if (charge(rd, len + 1 + sizeof(struct strdef)))
        return LP_OK;
    if (rd->pool_len + len + 1 > rd->pool_cap) {
        size_t c = rd->pool_cap ? rd->pool_cap : 4096;
        while (c < rd->pool_len + len + 1)
            c *= 2;
        char *p = realloc(rd->pool, c);
        if (!p)
            return LP_ERR_NOMEM;
        rd->pool = p;
        rd->pool_cap = c;
    }
    struct strdef d = {id, rd->pool_len};
    if (append((void **)&rd->defs, &rd->n_defs, &rd->cap_defs, &d, sizeof d) != 0)
        return LP_ERR_NOMEM;
    memcpy(rd->pool + rd->pool_len, s, len);
    rd->pool[rd->pool_len + len] = '\0';
    rd->utf8_repaired += lp_utf8_repair(rd->pool + rd->pool_len, len);
    rd->pool_len += len + 1;
    return LP_OK;
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

/* eight bytes a step (a byte a step was a tenth of reading a million kernels) */
static uint64_t item_hash(const void *item, size_t size)
{
    const uint8_t *p = item;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return h;
}

/* Whether A and B, of SIZE bytes (a multiple of 8), are alike: word by word, which the
 * compiler unrolls where SIZE is known (memcmp was a call per kernel) */
static inline int same_words(const void *a, const void *b, size_t size)
{
    const uint8_t *p = a, *q = b;
    for (size_t i = 0; i < size; i += 8) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        if (x != y)
            return 0;
    }
    return 1;
}

/* Puts ITEM (index IDX) in IN's slots, which have room */
static void intern_slot(struct intern *in, const void *item, size_t size, uint32_t idx)
{
    size_t mask = in->n_slots - 1, i = (size_t)item_hash(item, size) & mask;
    while (in->slots[i])
        i = (i + 1) & mask;
    in->slots[i] = idx + 1;
}

/* The index of ITEM (SIZE bytes, a multiple of 8, padding zeroed: compared as bytes) in the
 * array *ARR of *N, added when new: LP_OK; 1 when the memory budget refuses it;
 * LP_ERR_NOMEM */
static int intern_of(struct rd *rd, struct intern *in, void **arr, size_t *n, const void *item,
                     size_t size, uint32_t *idx)
{
    if (in->last && same_words((uint8_t *)*arr + (size_t)(in->last - 1) * size, item, size)) {
        *idx = in->last - 1;
        return LP_OK;
    }
    if (in->n_slots) {
        size_t mask = in->n_slots - 1;
        for (size_t i = (size_t)item_hash(item, size) & mask; in->slots[i]; i = (i + 1) & mask)
            if (same_words((uint8_t *)*arr + (size_t)(in->slots[i] - 1) * size, item, size)) {
                *idx = in->slots[i] - 1;
                in->last = in->slots[i];
                return LP_OK;
            }
    }
    if (*n >= UINT32_MAX - 1) {
        rd->mem_dropped++; /* counted and said with the records the budget refused */
        return 1;
    }
    /* the slots double when half full; their growth is charged with the item */
    size_t ns = 2 * (*n + 1) > in->n_slots ? (in->n_slots ? 2 * in->n_slots : 1024) : 0;
    size_t grow = ns ? ns - in->n_slots : 0;
    if (charge(rd, size + grow * sizeof *in->slots))
        return 1;
    if (ns) { /* half full at most */
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots)
            return LP_ERR_NOMEM;
        free(in->slots);
        in->slots = slots;
        in->n_slots = ns;
        for (size_t j = 0; j < *n; j++)
            intern_slot(in, (uint8_t *)*arr + j * size, size, (uint32_t)j);
    }
    *idx = (uint32_t)*n;
    if (append(arr, n, &in->cap, item, size))
        return LP_ERR_NOMEM;
    intern_slot(in, item, size, *idx);
    in->last = *idx + 1;
    return LP_OK;
}

/* The index of K's configuration (name, device, stream, graph, launch shape) in T's table,
 * added when new: as intern_of */
static int config_of(struct rd *rd, const struct lp_kernel *k, uint32_t *idx)
{
    _Static_assert(sizeof(struct lp_kernel_config) % 8 == 0, "hashed by words");
    struct lp_kernel_config c;
    memset(&c, 0, sizeof c); /* padding too: the table hashes and compares bytes */
    c.name = k->name;
    c.device = k->device;
    c.stream = k->stream;
    c.graph_id = k->graph_id;
    c.flags = k->flags;
    memcpy(c.grid, k->grid, sizeof c.grid);
    memcpy(c.block, k->block, sizeof c.block);
    c.registers = k->registers;
    c.static_smem = k->static_smem;
    c.dynamic_smem = k->dynamic_smem;
    c.local_mem_per_thread = k->local_mem_per_thread;
    c.context = k->context;
    c.graph_node_id = k->graph_node_id;
    struct lp_trace *t = rd->t;
    uint32_t *seen = &rd->by_name[k->name % 256];
    if (*seen && same_words(&t->kernel_configs[*seen - 1], &c, sizeof c)) {
        *idx = *seen - 1;
        return LP_OK;
    }
    int rc = intern_of(rd, &rd->configs, (void **)&t->kernel_configs, &t->n_kernel_configs, &c,
                       sizeof c, idx);
    if (rc == LP_OK)
        *seen = *idx + 1;
    return rc;
}

/* The index of what API call A shares with the calls alike (its thread, function and
 * status) in T's table, added when new: as intern_of */
static int kind_of(struct rd *rd, const struct lp_api *a, uint32_t *idx)
{
    _Static_assert(sizeof(struct lp_api_kind) % 8 == 0, "hashed by words");
    struct lp_api_kind kind;
    memset(&kind, 0, sizeof kind);
    kind.thread = a->thread;
    kind.domain = a->domain;
    kind.cbid = a->cbid;
    kind.name = a->name;
    kind.status = a->status;
    struct lp_trace *t = rd->t;
    return intern_of(rd, &rd->api_kinds, (void **)&t->api_kinds, &t->n_api_kinds, &kind,
                     sizeof kind, idx);
}

/* An API call kept as lp_api_rec, what it shares with the calls alike being kind IDX: as
 * keep_kernel */
static int keep_api(struct rd *rd, const struct lp_api *a, uint32_t idx)
{
    struct lp_api_rec row = {.start = a->start, .correlation = a->correlation, .kind = idx};
    int rc = charge_row(rd, sizeof row, a->start, a->end, &row.dur);
    if (rc != LP_OK)
        return rc == 1 ? LP_OK : rc;
    struct lp_trace *t = rd->t;
    return append((void **)&t->apis, &t->n_apis, &rd->cap[LP_REC_API], &row, sizeof row);
}

/* A GEMM call kept as lp_gemm_rec, what it shares with the calls alike interned as
 * config_of does, then its row charged and kept as keep_kernel does */
static int keep_gemm(struct rd *rd, const struct lp_gemm *g)
{
    _Static_assert(sizeof(struct lp_gemm_kind) % 8 == 0, "hashed by words");
    struct lp_gemm_kind kind;
    memset(&kind, 0, sizeof kind);
    kind.thread = g->thread;
    kind.api = g->api;
    kind.m = g->m;
    kind.n = g->n;
    kind.k = g->k;
    kind.batch = g->batch;
    kind.transa = g->transa;
    kind.transb = g->transb;
    kind.a_type = g->a_type;
    kind.b_type = g->b_type;
    kind.c_type = g->c_type;
    kind.d_type = g->d_type;
    kind.compute_type = g->compute_type;
    kind.algo = g->algo;
    kind.tile = g->tile;
    kind.splitk = g->splitk;
    kind.epilogue = g->epilogue;
    kind.status = g->status;
    kind.flags = g->flags;
    uint32_t idx = 0;
    struct lp_trace *t = rd->t;
    int rc = intern_of(rd, &rd->gemm_kinds, (void **)&t->gemm_kinds, &t->n_gemm_kinds, &kind,
                       sizeof kind, &idx);
    if (rc != LP_OK)
        return rc == 1 ? LP_OK : rc;
    struct lp_gemm_rec row = {.start = g->start, .kind = idx};
    if ((rc = charge_row(rd, sizeof row, g->start, g->end, &row.dur)) != LP_OK)
        return rc == 1 ? LP_OK : rc;
    return append((void **)&t->gemms, &t->n_gemms, &rd->cap[LP_REC_GEMM], &row, sizeof row);
}

/* A kernel kept as lp_kernel_rec, what it shares with kernels launched alike being
 * configuration IDX (bounded by the budget as any record) */
static int keep_kernel(struct rd *rd, const struct lp_kernel *k, uint32_t idx)
{
    struct lp_kernel_rec row = {.start = k->start, .correlation = k->correlation, .config = idx};
    int rc = charge_row(rd, sizeof row, k->start, k->end, &row.dur);
    if (rc != LP_OK)
        return rc == 1 ? LP_OK : rc;
    struct lp_trace *t = rd->t;
    return append((void **)&t->kernels, &t->n_kernels, &rd->cap[LP_REC_KERNEL], &row,
                  sizeof row);
}

/* Whether the record of NAME whose tail is LEN bytes at AT has the tail M remembers */
static int tail_known(const struct tail_memo *m, uint32_t name, const uint8_t *at, size_t len)
{
    return m->len && m->len == len && m->name == name && !memcmp(m->bytes, at, len);
}

/* The kernel or API call record (TYPE) of BODY bytes at C, decoded and kept: its tail (what
 * kernels launched alike, or calls alike, share) is decoded and looked up only when it
 * differs from the last one remembered, byte for byte: a kernel's of its name, a call's of
 * any (most launches repeat one: decoding those fields and finding what they made was a
 * third of reading a trace). LP_OK; 1 when malformed; LP_ERR_NOMEM. */
static int read_row(struct rd *rd, uint32_t type, struct lp_cursor *c, size_t body,
                    struct lp_delta_state *delta)
{
    struct lp_record r;
    struct lp_cursor tail;
    if (lp_record_decode_head(c, body, delta, type, &r, &tail) != LP_OK)
        return 1;
    int kernel = type == LP_REC_KERNEL;
    uint32_t name = kernel ? r.u.kernel.name : 0;
    struct tail_memo *m = kernel ? &rd->tails[name % 256] : &rd->api_tail;
    const uint8_t *at = tail.p;
    size_t len = (size_t)(tail.end - tail.p);
    uint32_t idx;
    if (tail_known(m, name, at, len)) {
        idx = m->index; /* the tail's fields left unread: keep_* read the head's */
    } else {
        if (lp_record_decode_tail(&tail, type, &r) != LP_OK)
            return 1;
        int rc = kernel ? config_of(rd, &r.u.kernel, &idx) : kind_of(rd, &r.u.api, &idx);
        if (rc != LP_OK) { /* 1: refused by the budget, the record left out */
            rd->read_by_type[type] += rc == 1;
            return rc == 1 ? LP_OK : rc;
        }
        if (len <= sizeof m->bytes) {
            *m = (struct tail_memo){.name = name, .index = idx, .len = (uint32_t)len};
            memcpy(m->bytes, at, len);
        }
    }
    rd->read_by_type[type]++;
    return kernel ? keep_kernel(rd, &r.u.kernel, idx) : keep_api(rd, &r.u.api, idx);
}

static int store(struct rd *rd, const struct lp_record *r)
{
    struct lp_trace *t = rd->t;
    if (r->type == LP_REC_DEVICE) {
        /* bounded, so merging by a scan of the devices stays cheap */
        if (++rd->device_records > MAX_DEVICE_RECORDS) {
            rd->devices_dropped++;
            return LP_OK;
        }
        if (merge_device(t, &r->u.device))
            return LP_OK;
        if (t->n_devices >= MAX_DEVICES) {
            rd->devices_dropped++;
            return LP_OK;
        }
    }
#define APPEND(arr, cnt, member)                                                               \
    (charge(rd, sizeof r->u.member)                                                            \
         ? LP_OK                                                                               \
         : append((void **)&t->arr, &t->cnt, &rd->cap[r->type], &r->u.member, sizeof r->u.member))
    switch (r->type) { /* kernels and API calls: read_row */
    case LP_REC_MEMCPY: return APPEND(memcpys, n_memcpys, memcpy);
    case LP_REC_MEMSET: return APPEND(memsets, n_memsets, memset);
    case LP_REC_MEMORY: return APPEND(memory, n_memory, memory);
    case LP_REC_MARKER: return APPEND(markers, n_markers, marker);
    case LP_REC_NVML: return APPEND(nvml, n_nvml, nvml);
    case LP_REC_DEVICE: return APPEND(devices, n_devices, device);
    case LP_REC_OVERHEAD: return APPEND(overheads, n_overheads, overhead);
    case LP_REC_LOSS: return APPEND(losses, n_losses, loss);
    case LP_REC_GEMM: return keep_gemm(rd, &r->u.gemm);
    case LP_REC_GRAPH: return APPEND(graphs, n_graphs, graph);
    case LP_REC_COUNTERS: return APPEND(counters, n_counters, counters);
    case LP_REC_PM_SAMPLE: return APPEND(pm, n_pm, pm);
    case LP_REC_WINDOW: return APPEND(windows, n_windows, window);
    default: return LP_OK;
    }
#undef APPEND
}

/* ---- chunks ---- */

/* Returns records read (strings and unknown types included); sets *bad when the chunk's
 * record stream is malformed. */
static uint64_t decode_records(struct rd *rd, const uint8_t *raw, size_t len, int *bad, int *oom)
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
            if (!bytes || id > UINT32_MAX) {
                *bad = 1;
                break;
            }
            if (add_string(rd, (uint32_t)id, bytes, slen) != 0) {
                *oom = 1;
                break;
            }
            c.p += body;
        } else if (type == LP_REC_KERNEL || type == LP_REC_API) {
            int rc = read_row(rd, (uint32_t)type, &c, body, &delta);
            if (rc != LP_OK) {
                *(rc == 1 ? bad : oom) = 1;
                break;
            }
        } else if (type < LP_REC_TYPE_COUNT && lp_record_type_known((uint32_t)type)) {
            struct lp_record r;
            if (lp_record_decode(&c, body, &delta, (uint32_t)type, &r) != 0) {
                *bad = 1;
                break;
            }
            rd->read_by_type[type]++;
            if (store(rd, &r) != 0) {
                *oom = 1;
                break;
            }
        } else {
            c.p += body; /* a record type from a newer minor version */
            rd->read_unknown++; /* written and read: the END chunk's account holds it */
        }
        kept++;
    }
    return kept;
}

/* Counts the pairs read in *PAIRS; sets *bad when malformed. LP_OK, or LP_ERR_NOMEM. */
static int decode_meta(struct rd *rd, const uint8_t *raw, size_t len, int *bad, uint64_t *pairs)
{
    struct lp_cursor c = {raw, raw + len, 0};
    *pairs = 0;
    const uint8_t *k, *v;
    size_t kl, vl;
    int more;
    while ((more = lp_meta_next(&c, &k, &kl, &v, &vl)) != 0) {
        if (more < 0) {
            *bad = 1;
            break;
        }
        int rc = set_meta(rd, (const char *)k, kl, (const char *)v, vl);
        if (rc != LP_OK)
            return rc;
        (*pairs)++;
    }
    return LP_OK;
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

/* A RECORDS, META or END chunk's body, checked and decoded; LP_OK, or LP_ERR_NOMEM. */
static int read_chunk(struct rd *rd, const struct lp_chunk_header *h, const uint8_t *body,
                      size_t off)
{
    struct lp_trace *t = rd->t;
    int bad = 0, oom = 0;
    uint64_t n;
    t->n_chunks++;
    if (h->type == LP_CHUNK_RECORDS) {
        n = decode_records(rd, body, h->raw_size, &bad, &oom);
        if (oom)
            return LP_ERR_NOMEM;
        if (bad)
            chunk_warn(rd, "malformed record in chunk at byte %zu: %llu of %u records kept", off,
                       (unsigned long long)n, h->n_records);
        t->n_records += n;
    } else {
        if (decode_meta(rd, body, h->raw_size, &bad, &n) != LP_OK)
            return LP_ERR_NOMEM;
        if (bad)
            chunk_warn(rd, "malformed header chunk at byte %zu: part of it dropped", off);
        if (h->type == LP_CHUNK_END)
            t->complete = 1;
        rd->meta_read |= h->type == LP_CHUNK_META;
    }
    /* The header's count is redundant with the payload, whose checksum held: what was
     * decoded is kept, and the disagreement is reported once for the trace. */
    if (!bad && n != h->n_records) {
        if (!rd->count_chunks++)
            rd->count_off = off;
        rd->count_declared += h->n_records;
        rd->count_decoded += n;
    }
    return LP_OK;
}

/* ---- strings: renumbered densely, so nothing is sized by the largest id ---- */

static int cmp_def(const void *a, const void *b)
{
    const struct strdef *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* SID holds the D distinct ids defined, sorted: id SID[i] becomes i + 1. */
static uint32_t dense_id(const uint32_t *sid, size_t d, uint32_t id, uint32_t unknown,
                         int *used_unknown)
{
    if (id == 0)
        return 0;
    if (id <= d && sid[id - 1] == id) /* the writer's ids: 1, 2, 3 ... */
        return id;
    size_t a = 0, b = d;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (sid[m] < id)
            a = m + 1;
        else
            b = m;
    }
    if (a < d && sid[a] == id)
        return (uint32_t)(a + 1);
    *used_unknown = 1;
    return unknown;
}

/* The last definition of an id wins, as it would in a table filled in file order. Ids
 * used but never defined (their chunk was lost) share one NULL entry: "<unknown>". */
static int finish_strings(struct rd *rd)
{
    struct lp_trace *t = rd->t;
    if (rd->n_defs)
        qsort(rd->defs, rd->n_defs, sizeof *rd->defs, cmp_def);
    size_t d = 0, bytes = 0;
    for (size_t i = 0; i < rd->n_defs; i++) {
        if (i + 1 < rd->n_defs && rd->defs[i + 1].id == rd->defs[i].id)
            continue;
        rd->defs[d++] = rd->defs[i];
        bytes += strlen(rd->pool + rd->defs[i].off) + 1;
    }
    if (d >= UINT32_MAX - 1)
        return LP_ERR_NOMEM;
    uint32_t *sid = malloc((d ? d : 1) * sizeof *sid);
    if (!sid)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < d; i++)
        sid[i] = rd->defs[i].id;
    uint32_t unknown = (uint32_t)d + 1;
    int used_unknown = 0;
    for (uint32_t type = 1; type < LP_REC_TYPE_COUNT; type++) {
        struct lp_record_layout l;
        size_t *n;
        void **arr = lp_trace_array_of(t, type, &n);
        if (!arr || lp_trace_layout(type, &l) != 0 || l.n_str == 0)
            continue;
        for (size_t i = 0; i < *n; i++) {
            uint8_t *rec = (uint8_t *)*arr + i * l.size;
            for (size_t f = 0; f < l.n_str; f++) {
                uint32_t id;
                memcpy(&id, rec + l.str[f], 4);
                id = dense_id(sid, d, id, unknown, &used_unknown);
                memcpy(rec + l.str[f], &id, 4);
            }
        }
    }
    for (size_t i = 0; i < t->n_kernel_configs; i++) /* kernels' names are kept here */
        t->kernel_configs[i].name =
            dense_id(sid, d, t->kernel_configs[i].name, unknown, &used_unknown);
    for (size_t i = 0; i < t->n_api_kinds; i++) /* and API calls' */
        t->api_kinds[i].name = dense_id(sid, d, t->api_kinds[i].name, unknown, &used_unknown);
    for (size_t i = 0; i < t->n_gemm_kinds; i++) { /* and GEMM calls' */
        t->gemm_kinds[i].api = dense_id(sid, d, t->gemm_kinds[i].api, unknown, &used_unknown);
        t->gemm_kinds[i].tile = dense_id(sid, d, t->gemm_kinds[i].tile, unknown, &used_unknown);
    }
    free(sid);
    /* one block: the pointers, then the strings they point at */
    size_t n = d + 1 + (used_unknown ? 1 : 0);
    char **block = calloc(1, n * sizeof *block + bytes);
    if (!block)
        return LP_ERR_NOMEM;
    char *p = (char *)(block + n);
    for (size_t i = 0; i < d; i++) {
        size_t len = strlen(rd->pool + rd->defs[i].off);
        memcpy(p, rd->pool + rd->defs[i].off, len + 1);
        block[i + 1] = p;
        p += len + 1;
    }
    t->strings = block;
    t->n_strings = n;
    free(rd->defs);
    free(rd->pool);
    rd->defs = NULL;
    rd->pool = NULL;
    return LP_OK;
}

/* ---- the whole file ---- */

/* Everything that is known only once every chunk was read. */
/* ---- the chunks against the writer's account ---- */

/* A whole chunk the scan found, in file order. */
struct found {
    size_t off, total;
    struct lp_chunk_header h;
    uint64_t key;  /* its place in the order written */
    int repeat;    /* another copy of a chunk read: not read */
    int crc_ok;    /* its payload's checksum holds (a damaged chunk is nobody's copy) */
};

static int cmp_found(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

/* the same chunk: type, size, record count and payload checksum all alike */
static int same_chunk(const struct found *x, const struct found *y)
{
    return x->h.type == y->h.type && x->h.payload_size == y->h.payload_size &&
           x->h.n_records == y->h.n_records && x->h.payload_crc == y->h.payload_crc;
}

static int cmp_content(const void *a, const void *b)
{
    const struct found *x = *(const struct found *const *)a, *y = *(const struct found *const *)b;
    const uint32_t u[] = {x->h.payload_crc, x->h.payload_size, x->h.type, x->h.n_records};
    const uint32_t v[] = {y->h.payload_crc, y->h.payload_size, y->h.type, y->h.n_records};
    for (int i = 0; i < 4; i++)
        if (u[i] != v[i])
            return u[i] < v[i] ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

/* What ordering the chunks found: copies dropped, chunks sharing a number, chunks without
 * one (the first offset of each, for the warning) */
struct tally {
    uint64_t repeats, unnumbered, shared;
    size_t repeat_off, shared_off;
};

/* Unnumbered chunks keep the file order; among chunks alike, the first whose checksum holds
 * is read and the others that hold are its copies; a damaged one is no copy (it is dropped
 * as such, hiding nothing). */
static int order_unnumbered(const struct lp_trace *t, struct found *f, size_t n,
                            struct tally *tl)
{
    const struct found **by = malloc((n ? n : 1) * sizeof *by);
    if (!by)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        f[i].key = i;
        by[i] = &f[i];
    }
    qsort(by, n, sizeof *by, cmp_content);
    for (size_t i = 0, j; i < n; i = j) {
        const struct found *kept = NULL;
        for (j = i; j < n && same_chunk(by[j], by[i]); j++) {
            if (!by[j]->crc_ok)
                continue;
            if (!kept) {
                kept = by[j];
                continue;
            }
            f[by[j] - f].repeat = 1;
            if (!tl->repeats++)
                tl->repeat_off = by[j]->off;
        }
    }
    free(by);
    if (n && t->version_minor >= 8)
        tl->unnumbered = n;
    return LP_OK;
}

/* Numbered chunks (format 1.8) go by number: a copy with the same number is read once;
 * different chunks with one number are all read, where they lie; numbers skipped are kept
 * (rd->missing); a file order that is not the number order is said. */
static void order_numbered(struct rd *rd, struct found *f, size_t n, struct tally *tl)
{
    struct lp_trace *t = rd->t;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i].h.seq)
            prev = f[i].h.seq;
        else
            tl->unnumbered++;
        f[i].key = f[i].h.seq ? (uint64_t)f[i].h.seq << 1 : prev << 1 | 1;
    }
    qsort(f, n, sizeof *f, cmp_found);
    /* among chunks of one number, a copy of one before it is a repeat; another chunk
     * is read too (and its order is its file order: the key ties break by offset) */
    uint64_t last = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && f[j].key == f[i].key; j++)
            ;
        /* the distinct intact chunks of this number so far: a copy is one of them (a
         * file of millions of different chunks under one number compares each with the
         * first DISTINCT_MAX only, so reading stays linear) */
        size_t distinct[DISTINCT_MAX], n_distinct = 0;
        for (size_t k = i; f[i].h.seq && k < j; k++) {
            if (!f[k].crc_ok) /* damaged: dropped as such, nobody's copy or rival */
                continue;
            int copy = 0, before = n_distinct > 0;
            for (size_t q = 0; q < n_distinct && !copy; q++)
                copy = same_chunk(&f[k], &f[distinct[q]]);
            if (!copy && n_distinct < DISTINCT_MAX)
                distinct[n_distinct++] = k;
            if (copy) {
                f[k].repeat = 1;
                if (!tl->repeats++)
                    tl->repeat_off = f[k].off;
            } else if (before && !tl->shared++) {
                tl->shared_off = f[k].off;
            }
        }
        uint64_t seq = f[i].h.seq;
        if (!seq)
            continue;
        if (seq > last + 1) {
            if (!rd->missing)
                rd->missing_after = last;
            rd->missing += seq - last - 1;
        }
        last = seq;
    }
    size_t prev_off = 0, back = 0;
    int first = 1;
    for (size_t i = 0; i < n && !back; i++) {
        if (f[i].repeat)
            continue;
        if (!first && f[i].off < prev_off)
            back = f[i].off ? f[i].off : 1;
        prev_off = f[i].off;
        first = 0;
    }
    if (back) {
        t->altered |= LP_TRACE_ALTERED_ORDER;
        lp_trace_warn(t, "the chunks are not in the order they were written (the chunk at "
                         "byte %zu comes before one written earlier): read in their written "
                         "order", back);
    }
}

/* Puts the N chunks F found in the order they were written and marks repeats (a copy of a
 * chunk read: type, size, record count and payload checksum alike, the checksum holding).
 * Numbered chunks (format 1.8) go by number: a copy with the same number is read once;
 * different chunks with one number are all read, where they lie, and said; numbers skipped
 * are kept (rd->missing) for finish() to weigh against the END chunk's account; a file
 * order that is not the number order is said. A chunk without a number among numbered ones
 * stays after the numbered chunk before it. Unnumbered chunks keep the file order (said in a
 * 1.8 file, whose writer numbers them all), and a copy is read once. */
static int order_chunks(struct rd *rd, const uint8_t *data, struct found *f, size_t n)
{
    struct lp_trace *t = rd->t;
    for (size_t i = 0; i < n; i++)
        f[i].crc_ok = lp_crc32(data + f[i].off + LP_CHUNK_HEADER_SIZE, f[i].h.payload_size) ==
                      f[i].h.payload_crc;
    int numbered = 0;
    for (size_t i = 0; i < n; i++)
        numbered |= f[i].h.seq != 0;
    struct tally tl = {0};
    if (numbered)
        order_numbered(rd, f, n, &tl);
    else if (order_unnumbered(t, f, n, &tl) != LP_OK)
        return LP_ERR_NOMEM;
    if (tl.shared) {
        t->altered |= LP_TRACE_ALTERED_REPEATED;
        lp_trace_warn(t, "%llu chunk%s carr%s the number of another, different chunk (first at "
                         "byte %zu): all read, where they lie; the file was altered",
                      (unsigned long long)tl.shared, plural(tl.shared),
                      tl.shared == 1 ? "ies" : "y", tl.shared_off);
    }
    if (tl.repeats) {
        t->altered |= LP_TRACE_ALTERED_REPEATED;
        lp_trace_warn(t, "%llu chunk%s repeat%s another one (first at byte %zu): each read once, "
                         "so no record counts twice; the file was altered",
                      (unsigned long long)tl.repeats, plural(tl.repeats),
                      tl.repeats == 1 ? "s" : "", tl.repeat_off);
    }
    if (tl.unnumbered) {
        t->altered |= LP_TRACE_ALTERED_UNNUMBERED;
        if (numbered)
            lp_trace_warn(t, "%llu chunk%s without a number among numbered ones: read where "
                             "%s", (unsigned long long)tl.unnumbered, plural(tl.unnumbered),
                          tl.unnumbered == 1 ? "it lies" : "they lie");
        else
            lp_trace_warn(t, "format %u.%u numbers its chunks, and none of these %llu has a "
                             "number: read where they lie; chunks missing or out of order "
                             "cannot be told", t->version_major, t->version_minor,
                          (unsigned long long)tl.unnumbered);
    }
    return LP_OK;
}

/* Numbers skipped (order_chunks), weighed against the END chunk's account: with every
 * record it says was written read, the numbers were changed, not chunks lost. */
static void say_missing(struct rd *rd)
{
    struct lp_trace *t = rd->t;
    if (!rd->missing)
        return;
    t->altered |= LP_TRACE_ALTERED_MISSING;
    char where[64];
    if (rd->missing_after)
        snprintf(where, sizeof where, "first after chunk %llu",
                 (unsigned long long)rd->missing_after);
    else
        snprintf(where, sizeof where, "the first chunk among them");
    /* the account counts records, not the header's pairs or names: a lost header is lost */
    if (rd->account && !t->records_unread && rd->meta_read && rd->missing_after)
        lp_trace_warn(t, "chunk numbers skip %llu (%s), yet every record the END chunk says was "
                         "written was read: the numbers were altered (or the chunks skipped "
                         "held names only)",
                      (unsigned long long)rd->missing, where);
    else
        lp_trace_warn(t, "%llu chunk%s missing (numbers skipped, %s): their records are lost",
                      (unsigned long long)rd->missing, rd->missing == 1 ? " is" : "s are", where);
}

/* Record type names, for the END chunk's account (docs/trace-format.md) */
static const char *const type_names[LP_REC_TYPE_COUNT] = {
    [LP_REC_KERNEL] = "kernel",  [LP_REC_MEMCPY] = "memcpy",     [LP_REC_MEMSET] = "memset",
    [LP_REC_MEMORY] = "memory",  [LP_REC_MARKER] = "marker",     [LP_REC_API] = "api",
    [LP_REC_NVML] = "nvml",      [LP_REC_DEVICE] = "device",     [LP_REC_OVERHEAD] = "overhead",
    [LP_REC_LOSS] = "loss",      [LP_REC_GEMM] = "gemm",         [LP_REC_GRAPH] = "graph",
    [LP_REC_COUNTERS] = "counters", [LP_REC_PM_SAMPLE] = "pm", [LP_REC_WINDOW] = "window",
};

/* The records read against the END chunk's records_written and records_by_type ("TYPE:N,"
 * list): more read than written is an altered trace; fewer are records lost (in chunks
 * missing or damaged), counted in records_unread. */
static void check_account(struct rd *rd)
{
    struct lp_trace *t = rd->t;
    const char *w = t->complete ? lp_trace_meta(t, "records_written") : NULL;
    char *end;
    if (!w || !*w)
        return;
    unsigned long long written = strtoull(w, &end, 10);
    if (*end)
        return;
    rd->account = 1;
    uint64_t read = rd->read_unknown;
    for (int i = 0; i < LP_REC_TYPE_COUNT; i++)
        read += rd->read_by_type[i];
    /* which kinds differ, where the END chunk says them */
    char kinds[256] = "";
    size_t kl = 0;
    const char *p = lp_trace_meta(t, "records_by_type");
    while (p && *p && kl + 64 < sizeof kinds) {
        unsigned long ty = strtoul(p, &end, 10);
        if (*end != ':' || ty >= LP_REC_TYPE_COUNT)
            break;
        unsigned long long cnt = strtoull(end + 1, &end, 10);
        if (cnt != rd->read_by_type[ty] && type_names[ty])
            kl += (size_t)snprintf(kinds + kl, sizeof kinds - kl, "%s%s %llu of %llu",
                                   kl ? ", " : "; ", type_names[ty],
                                   (unsigned long long)rd->read_by_type[ty], cnt);
        if (*end != ',')
            break;
        p = end + 1;
    }
    if (read > written) {
        t->altered |= LP_TRACE_ALTERED_EXTRA;
        lp_trace_warn(t, "%llu records read where the END chunk says %llu were written%s: the "
                         "file was altered, figures may count records twice",
                      (unsigned long long)read, written, kinds);
    } else if (read < written && !rd->newer_skipped) { /* a newer chunk type may hold them */
        t->records_unread = written - read;
        lp_trace_warn(t, "%llu of the %llu records the END chunk says were written were not "
                         "read%s: lost in chunks missing or damaged",
                      (unsigned long long)t->records_unread, written, kinds);
    }
}

static int finish(struct rd *rd)
{
    struct lp_trace *t = rd->t;
    if (rd->chunk_warnings > MAX_CHUNK_WARNINGS)
        lp_trace_warn(t, "%llu more damaged chunks like the ones above (%llu bytes skipped in all)",
             (unsigned long long)(rd->chunk_warnings - MAX_CHUNK_WARNINGS),
             (unsigned long long)t->dropped_bytes);
    int rc = finish_strings(rd);
    if (rc != LP_OK)
        return rc;
    if (rd->budget_chunks)
        lp_trace_warn(t, "%llu chunk%s (%llu bytes) dropped: the chunks before them already decoded to "
                "%llu bytes, the most a file of this size may hold (%llu + %u per byte of its "
                "chunks); the file is corrupt or was made to exhaust memory",
             (unsigned long long)rd->budget_chunks, plural(rd->budget_chunks),
             (unsigned long long)rd->budget_bytes, (unsigned long long)rd->raw_total,
             (unsigned long long)RAW_BASE, RAW_PER_BYTE);
    if (rd->utf8_repaired)
        lp_trace_warn(t, "%llu byte%s of names or header values were not UTF-8 (another "
                         "encoding, or a name cut short): each shown as '?'",
                      (unsigned long long)rd->utf8_repaired, plural(rd->utf8_repaired));
    if (rd->mem_dropped)
        lp_trace_warn(t, "%llu records or strings left out: those before them already take %llu bytes, "
                "the most a file of this size may hold (%llu + %u per byte of its chunks); the "
                "file is corrupt or was made to exhaust memory",
             (unsigned long long)rd->mem_dropped,
             (unsigned long long)rd->mem_total, (unsigned long long)MEM_BASE, MEM_PER_BYTE);
    if (rd->count_chunks)
        lp_trace_warn(t, "%llu chunk%s declared a record count that differs from the records they hold "
                "(first at byte %zu; %llu declared, %llu decoded in all): the records decoded "
                "were kept",
             (unsigned long long)rd->count_chunks, plural(rd->count_chunks), rd->count_off,
             (unsigned long long)rd->count_declared, (unsigned long long)rd->count_decoded);
    if (rd->meta_dropped)
        lp_trace_warn(t, "%llu header key/value pair%s dropped: more than %d pairs or %d keys is not a "
                "trace the collector writes",
             (unsigned long long)rd->meta_dropped, plural(rd->meta_dropped), MAX_META_PAIRS,
             MAX_META_KEYS);
    check_account(rd);
    say_missing(rd);
    /* a writer writes the header first and the END last: an END without one lost it */
    if (!rd->meta_read && t->complete) {
        t->altered |= LP_TRACE_ALTERED_MISSING;
        lp_trace_warn(t, "no header chunk (META) was read: the start time, host, process and "
                         "settings it holds are unknown");
    }
    if (rd->devices_dropped)
        lp_trace_warn(t, "%llu device record%s dropped: more than %d device records or %d devices is "
                "not a trace the collector writes",
             (unsigned long long)rd->devices_dropped, plural(rd->devices_dropped),
             MAX_DEVICE_RECORDS, MAX_DEVICES);
    return lp_trace_drop_implausible(t);
}

/* Checks the file header; 0 when the chunks can be read. */
static int check_header(const uint8_t *data, size_t size, const char *name, char *err,
                        size_t errlen)
{
    if (size == 0) {
        snprintf(err, errlen, "%s: empty trace: nothing was written (disk full?)", name);
        return LP_ERR_FORMAT;
    }
    if (size < LP_FILE_HEADER_SIZE && memcmp(data, LP_TRACE_MAGIC, size < 8 ? size : 8) == 0) {
        snprintf(err, errlen,
                 "%s: truncated trace: only %zu of the %d header bytes were written (disk full, "
                 "or the process was killed as it started?)",
                 name, size, LP_FILE_HEADER_SIZE);
        return LP_ERR_FORMAT;
    }
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
    if (size == LP_FILE_HEADER_SIZE) {
        snprintf(err, errlen,
                 "%s: no records: the process wrote the trace's header and nothing else (it "
                 "was killed as it started, or the disk was full)",
                 name);
        return LP_ERR_FORMAT;
    }
    return LP_OK;
}

/* What the reader finds at a chunk's offset. */
enum header_fate {
    HEADER_CHUNK,    /* a whole chunk: H and *TOTAL describe it */
    HEADER_RESYNCED, /* a corrupt header, skipped: *OFF moved to the next one */
    HEADER_TORN,     /* the file ends inside a chunk (dropped) */
};

/* Reads the chunk header at *OFF. */
static enum header_fate chunk_at(struct rd *rd, const uint8_t *data, size_t size, size_t *off,
                    struct lp_chunk_header *h, size_t *total)
{
    struct lp_trace *t = rd->t;
    size_t left = size - *off;
    if (left < LP_CHUNK_HEADER_SIZE) {
        chunk_warn(rd, "torn chunk header at byte %zu (%zu bytes): the process stopped "
                       "while writing; dropped", *off, left);
        t->dropped_bytes += left;
        return HEADER_TORN;
    }
    if (lp_chunk_header_unpack(data + *off, h) != 0) {
        size_t next = resync(data, size, *off);
        chunk_warn(rd, "corrupt chunk header at byte %zu: skipped %zu bytes", *off, next - *off);
        t->dropped_bytes += next - *off;
        *off = next;
        return HEADER_RESYNCED;
    }
    *total = LP_CHUNK_HEADER_SIZE + (size_t)h->payload_size;
    if (*total > left) {
        chunk_warn(rd, "torn chunk at byte %zu (%u records, %zu of %zu bytes present): "
                       "the process stopped while writing; dropped",
                   *off, h->n_records, left, *total);
        t->dropped_bytes += left;
        return HEADER_TORN;
    }
    return HEADER_CHUNK;
}

/* What becomes of a whole chunk. */
enum chunk_fate {
    CHUNK_READ,    /* its body is ready to decode */
    CHUNK_SKIPPED, /* a chunk type from a newer minor version: nothing lost */
    CHUNK_DROPPED, /* corrupt, or past the decode budget: its bytes are dropped */
    CHUNK_NOMEM,
};

/* Checks the chunk at OFF (header H, TOTAL bytes with PAYLOAD, whose checksum holds when
 * CRC_OK) and sets *BODY to its raw bytes: the payload itself, or the payload decompressed
 * into rd->raw. */
static enum chunk_fate open_chunk(struct rd *rd, const struct lp_chunk_header *h,
                                  const uint8_t *payload, int crc_ok, size_t off, size_t total,
                                  const uint8_t **body)
{
    if (!crc_ok || h->raw_size > LP_CHUNK_MAX_RAW ||
        (h->codec != LP_CODEC_ZSTD && h->codec != LP_CODEC_RAW) ||
        (h->codec == LP_CODEC_RAW && h->raw_size != h->payload_size)) {
        chunk_warn(rd, "corrupt chunk at byte %zu (checksum or size): %u records dropped", off,
                   h->n_records);
        return CHUNK_DROPPED;
    }
    if (h->type != LP_CHUNK_META && h->type != LP_CHUNK_RECORDS && h->type != LP_CHUNK_END)
        return CHUNK_SKIPPED;
    if (h->raw_size >
        RAW_BASE + (uint64_t)RAW_PER_BYTE * (rd->chunk_bytes + total) - rd->raw_total) {
        rd->budget_chunks++;
        rd->budget_bytes += total;
        return CHUNK_DROPPED;
    }
    *body = payload;
    if (h->codec != LP_CODEC_ZSTD)
        return CHUNK_READ;
    /* a single frame that says it holds raw_size bytes, before any memory is taken */
    size_t frame = ZSTD_findFrameCompressedSize(payload, h->payload_size);
    if (ZSTD_getFrameContentSize(payload, h->payload_size) != h->raw_size ||
        ZSTD_isError(frame) || frame != h->payload_size) {
        chunk_warn(rd, "chunk at byte %zu is not one zstd frame of the size its header "
                       "gives: %u records dropped", off, h->n_records);
        return CHUNK_DROPPED;
    }
    if (h->raw_size > rd->raw_cap || !rd->raw) {
        uint8_t *p = realloc(rd->raw, h->raw_size ? h->raw_size : 1);
        if (!p)
            return CHUNK_NOMEM;
        rd->raw = p;
        rd->raw_cap = h->raw_size;
    }
    size_t n = ZSTD_decompress(rd->raw, h->raw_size, payload, h->payload_size);
    if (ZSTD_isError(n) || n != h->raw_size) {
        chunk_warn(rd, "chunk at byte %zu does not decompress: %u records dropped", off,
                   h->n_records);
        return CHUNK_DROPPED;
    }
    *body = rd->raw;
    return CHUNK_READ;
}

/* Frees what lives only while reading; T stays. */
static void rd_free(struct rd *rd)
{
    free(rd->configs.slots);
    free(rd->api_kinds.slots);
    free(rd->gemm_kinds.slots);
    rd->configs.slots = rd->api_kinds.slots = rd->gemm_kinds.slots = NULL;
    free(rd->raw);
    free(rd->defs);
    free(rd->pool);
    rd->raw = NULL;
    rd->defs = NULL;
    rd->pool = NULL;
}

int lp_trace_read_mem(struct lp_trace **out, const void *data_, size_t size, const char *name,
                      char *err, size_t errlen)
{
    const uint8_t *data = data_;
    *out = NULL;
    int rc = check_header(data, size, name, err, errlen);
    if (rc != LP_OK)
        return rc;
    struct rd rd = {0};
    struct lp_trace *t = rd.t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(name)))
        goto oom;
    t->version_major = data[8] | (uint32_t)data[9] << 8;
    t->version_minor = data[10] | (uint32_t)data[11] << 8;
    t->file_bytes = size;
    /* the chunks first (at most one per 32 bytes), then read in the order written */
    struct found *found = NULL;
    size_t n_found = 0, cap_found = 0;
    size_t off = LP_FILE_HEADER_SIZE;
    while (off < size) {
        struct found x = {.off = off};
        enum header_fate at = chunk_at(&rd, data, size, &off, &x.h, &x.total);
        if (at == HEADER_TORN)
            break;
        if (at == HEADER_RESYNCED)
            continue;
        x.off = off;
        if (append((void **)&found, &n_found, &cap_found, &x, sizeof x) != 0)
            goto oom_found;
        off += x.total;
    }
    if (order_chunks(&rd, data, found, n_found) != LP_OK)
        goto oom_found;
    uint64_t unknown = 0, unknown_records = 0;
    size_t unknown_off = 0;
    for (size_t i = 0; i < n_found; i++) {
        const struct found *x = &found[i];
        if (x->repeat)
            continue;
        const uint8_t *body = NULL;
        enum chunk_fate fate =
            open_chunk(&rd, &x->h, data + x->off + LP_CHUNK_HEADER_SIZE, x->crc_ok, x->off,
                       x->total, &body);
        if (fate == CHUNK_NOMEM)
            goto oom_found;
        if (fate == CHUNK_DROPPED)
            t->dropped_bytes += x->total;
        /* a chunk type of a newer minor version is skipped as such; in a version this reader
         * knows every type of, it is a chunk whose type was changed */
        rd.newer_skipped |= fate == CHUNK_SKIPPED && t->version_minor > LP_TRACE_VERSION_MINOR;
        if (fate == CHUNK_SKIPPED && t->version_minor <= LP_TRACE_VERSION_MINOR) {
            if (!unknown++)
                unknown_off = x->off;
            unknown_records += x->h.n_records;
        }
        if (fate == CHUNK_READ) {
            rd.raw_total += x->h.raw_size;
            rd.chunk_bytes += x->total;
            if (read_chunk(&rd, &x->h, body, x->off) != 0)
                goto oom_found;
        }
    }
    free(found);
    found = NULL;
    if (unknown) {
        t->altered |= LP_TRACE_ALTERED_UNKNOWN;
        lp_trace_warn(t, "%llu chunk%s of a type format %u.%u does not have (first at byte %zu, "
                         "%llu records): skipped; the file was altered",
                      (unsigned long long)unknown, plural(unknown), t->version_major,
                      t->version_minor, unknown_off, (unsigned long long)unknown_records);
    }
    free(rd.raw);
    rd.raw = NULL;
    if (finish(&rd) != 0)
        goto oom;
    rd_free(&rd);
    *out = t;
    return LP_OK;
oom_found:
    free(found);
oom:
    rd_free(&rd);
    lp_trace_free(t);
    snprintf(err, errlen, "%s: out of memory", name);
    return LP_ERR_NOMEM;
}

int lp_trace_read(struct lp_trace **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    /* never blocks in open: a FIFO nobody writes opens and then reads as empty */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = NULL;
    if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
        f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return LP_ERR_IO;
    }
    struct stat st;
    int have_st = fstat(fileno(f), &st) == 0;
    if (have_st && S_ISDIR(st.st_mode)) {
        fclose(f);
        snprintf(err, errlen, "cannot read %s: it is a directory", path);
        return LP_ERR_IO;
    }
    /* A regular file is read into one allocation of its size (one byte more, to see the
     * end); a pipe, or a file still growing, doubles the buffer as it comes. */
    size_t len = 0, cap = have_st && S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : (1u << 20);
    uint8_t *data = malloc(cap);
    int rc = data ? LP_OK : LP_ERR_NOMEM;
    while (rc == LP_OK) {
        if (len == cap) {
            uint8_t *p = realloc(data, cap * 2);
            if (!p) {
                rc = LP_ERR_NOMEM;
                break;
            }
            data = p;
            cap *= 2;
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
        if (len >= 8 && memcmp(data, LP_TRACE_MAGIC, 8) != 0)
            break; /* not a trace (/dev/zero, say): reading on would not change that */
    }
    fclose(f);
    if (rc == LP_ERR_NOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
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
    for (size_t i = 0; i < t->n_warnings; i++)
        free(t->warnings[i]);
    free(t->meta);
    free(t->strings); /* one block with the strings */
    free(t->warnings);
    free(t->kernels);
    free(t->kernel_configs);
    free(t->api_kinds);
    free(t->gemm_kinds);
    free(t->long_ends);
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
    free(t->graphs);
    free(t->counters);
    free(t->pm);
    free(t->windows);
    free(t->path);
    free(t);
}
