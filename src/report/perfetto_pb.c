/* Perfetto's own trace format (a Trace of TracePackets carrying TrackEvents), which
 * ui.perfetto.dev and trace_processor open: the tracks and events of perfetto.c's JSON (a
 * host process with each thread's NVTX ranges, CUDA calls, marks and CUPTI overhead; the
 * requests; one process per GPU with its streams' kernels, copies and sets, the serving
 * iterations, NVML and PM sampling counters; a flow from each launching call to its work).
 *
 * Streamed: each packet is built alone and written out. Each track's events form a packet
 * sequence of their own, in time order, so that timestamps are deltas on the sequence's
 * incremental clock (id 64, snapshotted against BOOTTIME at 0: times are ns from the first
 * record) and names are interned once per sequence. A slice that would cross the open one
 * of its track goes to an overlap track beside it (32 at most; past that it is cut to end
 * with the open one, and counted). Field numbers are those of Perfetto's
 * protos/perfetto/trace (trace_packet.proto, track_event/, interned_data/). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"
#include "report_internal.h"

#define GPU_PID_BASE 1000000 /* as perfetto.c's: GPUs shown as processes of their own */
#define MAX_LANES 32         /* a track and its overlap tracks */
#define MAX_REQUEST_LANES 4096

enum { /* TracePacket */
    PKT_CLOCK_SNAPSHOT = 6, PKT_TIMESTAMP = 8, PKT_SEQUENCE_ID = 10, PKT_TRACK_EVENT = 11,
    PKT_INTERNED = 12, PKT_SEQUENCE_FLAGS = 13, PKT_DEFAULTS = 59, PKT_TRACK_DESCRIPTOR = 60,
    SEQ_INCREMENTAL_STATE_CLEARED = 1,
};
enum { /* ClockSnapshot, its Clock; TracePacketDefaults, TrackEventDefaults */
    CS_CLOCKS = 1, CS_PRIMARY_CLOCK = 2, CLK_ID = 1, CLK_TIMESTAMP = 2, CLK_INCREMENTAL = 3,
    CLOCK_BOOTTIME = 6, CLOCK_SEQUENCE = 64,
    DEF_CLOCK_ID = 58, DEF_TRACK_EVENT = 11, TED_TRACK_UUID = 11,
};
enum { /* TrackEvent, DebugAnnotation */
    TE_CATEGORY_IIDS = 3, TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_NAME = 23,
    TE_DOUBLE_COUNTER = 44, TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48,
    TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
    DA_NAME_IID = 1, DA_UINT = 3, DA_INT = 4, DA_STRING = 6, DA_STRING_IID = 17,
};
enum { /* InternedData (entries: iid 1, name 2); TrackDescriptor and its parts */
    ID_CATEGORIES = 1, ID_NAMES = 2, ID_ANNOTATION_NAMES = 3, ID_ANNOTATION_STRINGS = 29,
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
    PD_PID = 1, PD_NAME = 6, THD_PID = 1, THD_TID = 2, CD_UNIT_NAME = 6,
};

/* categories: the fixed ones, then the kernel categories (iid CAT_KERNEL + enum lp_kcat) */
enum { CAT_NVTX = 1, CAT_REQUEST, CAT_API, CAT_OVERHEAD, CAT_MEMCPY, CAT_MEMSET, CAT_ITERATION,
       CAT_KERNEL };
static const char *const fixed_cats[] = {"nvtx", "request", "cuda_api", "cupti_overhead",
                                         "memcpy", "memset", "iteration"};
/* debug annotation names, iid = index + 1 */
enum { AN_LAUNCH = 1, AN_GRAPH, AN_CAPTURED, AN_BYTES, AN_STATUS, AN_CLASS, AN_ITERATION,
       AN_TOKENS, AN_SAMPLED, AN_DECODE, AN_PREFILL, AN_BUCKET, AN_PERIOD, AN_SOURCE, AN_COUNT };
static const char *const annotation_names[] = {
    "launch", "graph", "captured in", "bytes", "status", "class", "iteration", "tokens",
    "sampled", "decode", "prefill_tokens", "bucket", "period_ns", "decode_source"};

struct bits {
    uint64_t *w;
    size_t n;                 /* words */
};

struct lane {                 /* one track and the packet sequence of its events */
    uint64_t uuid;
    uint32_t seq;
    uint64_t last;            /* the sequence's clock: its last timestamp written */
    uint64_t *open;           /* ends of its open slices, innermost last */
    size_t depth, cap;
    struct bits names, strings; /* iids interned on the sequence */
};

struct track {                /* a thread, a stream or a named track, and its overlap lanes */
    uint64_t key;
    uint64_t parent;          /* where its overlap lanes (and a named track) go */
    char name[96];
    int thread;               /* a host thread: TID, under the host process */
    uint32_t tid;
    size_t max_lanes;
    struct lane *lanes;
    size_t n_lanes;
};

/* Correlation ids several GPU records share (the kernels of one CUDA graph launch): the
 * J-th of them written ends a flow of its own, (J << 32) | id, and the launching call starts
 * them all, as the JSON's flow ends all bind to their call's start. */
struct shared {
    uint32_t *key, *count, *taken; /* open addressing; key 0: empty */
    size_t cap, n;
};

struct pw {
    FILE *f;
    const struct lp_run *r;
    const struct lp_trace *t;
    uint64_t t0, from, to;
    struct lp_pb pb;
    struct track *tracks;
    size_t n_tracks, cap_tracks;
    uint32_t *slots;          /* hash of track keys: index + 1 */
    size_t n_slots;
    uint32_t next_seq;
    uint64_t next_uuid, host_uuid;
    long host_pid;
    uint8_t *launches;        /* per trace string: 0 not known yet, 1 no, 2 starts GPU work */
    uint32_t *shape_of;       /* per kernel configuration: its launch shape (number_shapes) */
    uint32_t *shape_rep;      /* per launch shape: its first configuration */
    size_t n_shapes;
    char **configs;           /* per launch shape: its annotation */
    uint64_t pending_names[8], pending_strings[8];
    size_t n_pending_names, n_pending_strings;
    struct lp_perfetto_stats *stats;
    struct unknown_device {   /* devices the trace does not describe, their process tracks */
        uint32_t device;
        uint64_t uuid;
    } unknown[16];
    size_t n_unknown;
    struct shared shared;
    int failed;
};

/* event-name iids: kernel groups, then copy directions and the set, then trace strings */
static uint64_t iid_group(const struct pw *w, uint32_t g) { (void)w; return 1 + (uint64_t)g; }
static uint64_t iid_copy(const struct pw *w, int d) { return 1 + w->r->n_names + (uint64_t)d; }
static uint64_t iid_str(const struct pw *w, lp_str s) { return 1 + w->r->n_names + 5 + s; }

static const char *name_of(const struct pw *w, uint64_t iid)
{
    uint64_t i = iid - 1, n = w->r->n_names;
    if (i < n)
        return w->r->short_names[i];
    if (i < n + 4)
        return w->r->names[i - n];
    if (i == n + 4)
        return "[CUDA memset]";
    return lp_trace_str(w->t, (lp_str)(i - n - 5));
}

/* A kernel configuration's launch shape: what the annotation says and what tells launches
 * apart (context, graph node), without its name, device, stream or graph */
struct shape {
    int32_t grid[3], block[3];
    uint32_t registers, static_smem, dynamic_smem, local_mem_per_thread, context;
    uint64_t graph_node_id;
    uint32_t index;           /* the configuration's */
};

static int by_shape(const void *a, const void *b)
{
    const struct shape *x = a, *y = b;
    int c = memcmp(x, y, offsetof(struct shape, index));
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

static int by_rep(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* W's launch shapes, numbered by their first configuration (the order of first use), each
 * annotation interned once however many names and streams launch it; 0, or -1 out of memory */
static int number_shapes(struct pw *w)
{
    const struct lp_trace *t = w->t;
    size_t n = t->n_kernel_configs;
    struct shape *v = calloc(n ? n : 1, sizeof *v); /* padding zeroed: compared as bytes */
    w->shape_of = malloc((n ? n : 1) * sizeof *w->shape_of);
    w->shape_rep = malloc((n ? n : 1) * sizeof *w->shape_rep);
    if (!v || !w->shape_of || !w->shape_rep) {
        free(v);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const struct lp_kernel_config *c = &t->kernel_configs[i];
        memcpy(v[i].grid, c->grid, sizeof v[i].grid);
        memcpy(v[i].block, c->block, sizeof v[i].block);
        v[i].registers = c->registers;
        v[i].static_smem = c->static_smem;
        v[i].dynamic_smem = c->dynamic_smem;
        v[i].local_mem_per_thread = c->local_mem_per_thread;
        v[i].context = c->context;
        v[i].graph_node_id = c->graph_node_id;
        v[i].index = (uint32_t)i;
    }
    if (n)
        qsort(v, n, sizeof *v, by_shape);
    size_t k = 0; /* each shape's first configuration, then the shapes in that order */
    for (size_t i = 0; i < n; i++)
        if (i == 0 || memcmp(&v[i], &v[i - 1], offsetof(struct shape, index)))
            w->shape_rep[k++] = v[i].index;
    if (k)
        qsort(w->shape_rep, k, sizeof *w->shape_rep, by_rep);
    w->n_shapes = k;
    for (size_t i = 0, s = 0; i < n; i++) { /* shape_of of each rep, then of the rest */
        if (i == 0 || memcmp(&v[i], &v[i - 1], offsetof(struct shape, index))) {
            size_t lo = 0, hi = k; /* the rep's shape number */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (w->shape_rep[mid] < v[i].index)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            s = lo;
        }
        w->shape_of[v[i].index] = (uint32_t)s;
    }
    free(v);
    return 0;
}

/* annotation-string iids: launch shapes, then trace strings */
static uint64_t sid_config(const struct pw *w, uint32_t c) { return 1 + (uint64_t)w->shape_of[c]; }
static uint64_t sid_str(const struct pw *w, lp_str s) { return 1 + w->n_shapes + s; }

static const char *string_of(struct pw *w, uint64_t iid)
{
    uint64_t i = iid - 1;
    if (i >= w->n_shapes)
        return lp_trace_str(w->t, (lp_str)(i - w->n_shapes));
    if (!w->configs[i]) {
        const struct lp_kernel_config *c = &w->t->kernel_configs[w->shape_rep[i]];
        char buf[192];
        snprintf(buf, sizeof buf, "grid [%d,%d,%d] block [%d,%d,%d], %u registers per thread, "
                 "%llu B shared memory", c->grid[0], c->grid[1], c->grid[2], c->block[0],
                 c->block[1], c->block[2], c->registers,
                 (unsigned long long)c->static_smem + c->dynamic_smem);
        w->configs[i] = strdup(buf);
        if (!w->configs[i]) {
            w->failed = 1;
            return "";
        }
    }
    return w->configs[i];
}

/* 1 when IID was not yet set in B (it is now); -1 out of memory */
static int bits_first(struct bits *b, uint64_t iid)
{
    size_t word = (size_t)(iid / 64);
    if (word >= b->n) {
        size_t n = b->n ? b->n : 4;
        while (n <= word)
            n *= 2;
        uint64_t *v = realloc(b->w, n * sizeof *v);
        if (!v)
            return -1;
        memset(v + b->n, 0, (n - b->n) * sizeof *v);
        b->w = v;
        b->n = n;
    }
    uint64_t bit = 1ull << (iid % 64);
    if (b->w[word] & bit)
        return 0;
    b->w[word] |= bit;
    return 1;
}

static uint64_t rel(const struct pw *w, uint64_t ns) { return ns > w->t0 ? ns - w->t0 : 0; }

static int emit(struct pw *w)
{
    if (lp_pb_emit(w->f, 1, &w->pb) != 0)
        w->failed = 1;
    return w->failed ? -1 : 0;
}

/* ---- flows ---- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

static int in_window(const struct pw *w, uint64_t a, uint64_t b)
{
    return b >= w->from && a <= w->to;
}

static size_t shared_slot(const struct shared *h, uint32_t key)
{
    size_t mask = h->cap - 1, i = (size_t)mix(key) & mask;
    while (h->key[i] && h->key[i] != key)
        i = (i + 1) & mask;
    return i;
}

static int shared_add(struct shared *h, uint32_t key)
{
    if ((h->n + 1) * 2 > h->cap) {
        struct shared g = {.cap = h->cap ? 2 * h->cap : 64};
        g.key = calloc(g.cap, sizeof *g.key);
        g.count = calloc(g.cap, sizeof *g.count);
        g.taken = calloc(g.cap, sizeof *g.taken);
        if (!g.key || !g.count || !g.taken) {
            free(g.key);
            free(g.count);
            free(g.taken);
            return -1;
        }
        for (size_t i = 0; i < h->cap; i++)
            if (h->key[i]) {
                size_t j = shared_slot(&g, h->key[i]);
                g.key[j] = h->key[i];
                g.count[j] = h->count[i];
            }
        g.n = h->n;
        free(h->key);
        free(h->count);
        free(h->taken);
        *h = g;
    }
    size_t i = shared_slot(h, key);
    if (!h->key[i]) {
        h->key[i] = key;
        h->n++;
    }
    h->count[i]++;
    return 0;
}

/* how many GPU records written share KEY (0: none of a graph) */
static uint32_t shared_count(const struct shared *h, uint32_t key)
{
    return h->cap ? h->count[shared_slot(h, key)] : 0;
}

/* the flow ID the next GPU record of correlation CORR ends */
static uint64_t flow_end(struct pw *w, uint32_t corr)
{
    struct shared *h = &w->shared;
    if (shared_count(h, corr) <= 1)
        return corr;
    size_t i = shared_slot(h, corr);
    return (uint64_t)h->taken[i]++ << 32 | corr;
}

/* the flows a launching call of correlation CORR starts: one per GPU record of it */
static void flow_starts(struct pw *w, uint32_t corr)
{
    uint32_t n = shared_count(&w->shared, corr);
    for (uint32_t j = 0; j < (n > 1 ? n : 1); j++)
        lp_pb_fixed64(&w->pb, TE_FLOW_IDS, (uint64_t)j << 32 | corr);
}

/* the correlation ids the CUDA-graph records written share, counted */
static int share(struct pw *w)
{
    const struct lp_trace *t = w->t;
    for (size_t i = 0; i < t->n_kernels; i++) {
        const struct lp_kernel_rec *k = &t->kernels[i];
        const struct lp_kernel_config *kc = lp_trace_kernel_config(t, k);
        if (k->correlation && (kc->graph_id || (kc->flags & LP_KERNEL_FLAG_GRAPH)) &&
            in_window(w, k->start, lp_trace_kernel_end(t, k)) &&
            shared_add(&w->shared, k->correlation) != 0)
            return -1;
    }
    for (size_t i = 0; i < t->n_memcpys; i++) {
        const struct lp_memcpy *m = &t->memcpys[i];
        if (m->correlation && m->graph_id && in_window(w, m->start, m->end) &&
            shared_add(&w->shared, m->correlation) != 0)
            return -1;
    }
    for (size_t i = 0; i < t->n_memsets; i++) {
        const struct lp_memset *m = &t->memsets[i];
        if (m->correlation && m->graph_id && in_window(w, m->start, m->end) &&
            shared_add(&w->shared, m->correlation) != 0)
            return -1;
    }
    return 0;
}

/* ---- tracks ---- */

static void descriptor(struct pw *w, const struct track *k, const struct lane *l, size_t lane)
{
    struct lp_pb *p = &w->pb;
    lp_pb_varint(p, PKT_SEQUENCE_ID, 1);
    size_t td = lp_pb_begin(p, PKT_TRACK_DESCRIPTOR);
    lp_pb_varint(p, TD_UUID, l->uuid);
    if (k->thread && lane == 0) {
        size_t th = lp_pb_begin(p, TD_THREAD);
        lp_pb_varint(p, THD_PID, (uint64_t)w->host_pid);
        lp_pb_varint(p, THD_TID, k->tid);
        lp_pb_end(p, th);
    } else {
        char name[160];
        if (lane)
            snprintf(name, sizeof name, "%s (overlapping %zu)", k->name, lane);
        else
            snprintf(name, sizeof name, "%s", k->name);
        lp_pb_varint(p, TD_PARENT, lane && k->thread ? k->lanes[0].uuid : k->parent);
        const char *unit = k->key >> 60 == 5 ? strstr(name, " | ") : NULL;
        lp_pb_bytes(p, TD_NAME, name, unit ? (size_t)(unit - name) : strlen(name));
        if (unit) { /* a counter: its unit after the name's " | " */
            size_t cd = lp_pb_begin(p, TD_COUNTER);
            lp_pb_str(p, CD_UNIT_NAME, unit + 3);
            lp_pb_end(p, cd);
        }
    }
    lp_pb_end(p, td);
    emit(w);
}

/* The first packet of a lane's sequence: its state cleared, its clock and default track,
 * the categories and annotation names every event may use. */
static void lane_open(struct pw *w, struct lane *l)
{
    struct lp_pb *p = &w->pb;
    lp_pb_varint(p, PKT_SEQUENCE_ID, l->seq);
    lp_pb_varint(p, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t d = lp_pb_begin(p, PKT_DEFAULTS);
    lp_pb_varint(p, DEF_CLOCK_ID, CLOCK_SEQUENCE);
    size_t ted = lp_pb_begin(p, DEF_TRACK_EVENT);
    lp_pb_varint(p, TED_TRACK_UUID, l->uuid);
    lp_pb_end(p, ted);
    lp_pb_end(p, d);
    size_t in = lp_pb_begin(p, PKT_INTERNED);
    for (size_t i = 0; i < CAT_KERNEL - 1 + LP_KCAT_COUNT; i++) {
        size_t e = lp_pb_begin(p, ID_CATEGORIES);
        lp_pb_varint(p, 1, i + 1);
        lp_pb_str(p, 2, i < CAT_KERNEL - 1 ? fixed_cats[i]
                                            : lp_kcat_name((enum lp_kcat)(i - CAT_KERNEL + 1)));
        lp_pb_end(p, e);
    }
    for (size_t i = 0; i < AN_COUNT - 1; i++) {
        size_t e = lp_pb_begin(p, ID_ANNOTATION_NAMES);
        lp_pb_varint(p, 1, i + 1);
        lp_pb_str(p, 2, annotation_names[i]);
        lp_pb_end(p, e);
    }
    lp_pb_end(p, in);
    size_t cs = lp_pb_begin(p, PKT_CLOCK_SNAPSHOT);
    size_t c = lp_pb_begin(p, CS_CLOCKS);
    lp_pb_varint(p, CLK_ID, CLOCK_SEQUENCE);
    lp_pb_varint(p, CLK_TIMESTAMP, 0);
    lp_pb_varint(p, CLK_INCREMENTAL, 1);
    lp_pb_end(p, c);
    c = lp_pb_begin(p, CS_CLOCKS);
    lp_pb_varint(p, CLK_ID, CLOCK_BOOTTIME);
    lp_pb_varint(p, CLK_TIMESTAMP, 0);
    lp_pb_end(p, c);
    lp_pb_varint(p, CS_PRIMARY_CLOCK, CLOCK_BOOTTIME);
    lp_pb_end(p, cs);
    emit(w);
}

static struct lane *lane_add(struct pw *w, struct track *k)
{
    struct lane *v = realloc(k->lanes, (k->n_lanes + 1) * sizeof *v);
    if (!v) {
        w->failed = 1;
        return NULL;
    }
    k->lanes = v;
    struct lane *l = &v[k->n_lanes];
    memset(l, 0, sizeof *l);
    l->uuid = w->next_uuid++;
    l->seq = w->next_seq++;
    descriptor(w, k, l, k->n_lanes);
    lane_open(w, l);
    k->n_lanes++;
    return l;
}

/* The track of KEY, made (with its first lane) on first use; NULL when out of memory. */
static struct track *track_get(struct pw *w, uint64_t key, uint64_t parent, const char *name,
                               size_t max_lanes)
{
    size_t mask = w->n_slots - 1, i = (size_t)mix(key) & mask;
    for (; w->slots[i]; i = (i + 1) & mask)
        if (w->tracks[w->slots[i] - 1].key == key)
            return &w->tracks[w->slots[i] - 1];
    if ((w->n_tracks + 1) * 2 > w->n_slots) { /* grow the table, then look again */
        size_t n = w->n_slots * 2;
        uint32_t *s = calloc(n, sizeof *s);
        if (!s) {
            w->failed = 1;
            return NULL;
        }
        for (size_t j = 0; j < w->n_tracks; j++) {
            size_t h = (size_t)mix(w->tracks[j].key) & (n - 1);
            while (s[h])
                h = (h + 1) & (n - 1);
            s[h] = (uint32_t)j + 1;
        }
        free(w->slots);
        w->slots = s;
        w->n_slots = n;
        return track_get(w, key, parent, name, max_lanes);
    }
    if (w->n_tracks == w->cap_tracks) {
        size_t cap = w->cap_tracks ? 2 * w->cap_tracks : 16;
        struct track *v = realloc(w->tracks, cap * sizeof *v);
        if (!v) {
            w->failed = 1;
            return NULL;
        }
        w->tracks = v;
        w->cap_tracks = cap;
    }
    struct track *k = &w->tracks[w->n_tracks];
    memset(k, 0, sizeof *k);
    k->key = key;
    k->parent = parent;
    k->max_lanes = max_lanes;
    if (key >> 60 == 1) {
        k->thread = 1;
        k->tid = (uint32_t)key;
        snprintf(k->name, sizeof k->name, "thread %u", k->tid);
    } else {
        snprintf(k->name, sizeof k->name, "%s", name);
    }
    if (!lane_add(w, k))
        return NULL;
    w->slots[i] = (uint32_t)++w->n_tracks;
    return k;
}

static void process(struct pw *w, uint64_t uuid, long pid, const char *name)
{
    lp_pb_varint(&w->pb, PKT_SEQUENCE_ID, 1);
    size_t td = lp_pb_begin(&w->pb, PKT_TRACK_DESCRIPTOR);
    lp_pb_varint(&w->pb, TD_UUID, uuid);
    size_t pd = lp_pb_begin(&w->pb, TD_PROCESS);
    lp_pb_varint(&w->pb, PD_PID, (uint64_t)pid);
    lp_pb_str(&w->pb, PD_NAME, name);
    lp_pb_end(&w->pb, pd);
    lp_pb_end(&w->pb, td);
    emit(w);
}

/* the process track of DEVICE: a device the trace does not describe gets one of its own
 * when its first work is written */
static uint64_t gpu_uuid(struct pw *w, uint32_t device)
{
    for (size_t i = 0; i < w->t->n_devices; i++)
        if (w->t->devices[i].id == device)
            return 2 + i;
    for (size_t i = 0; i < w->n_unknown; i++)
        if (w->unknown[i].device == device)
            return w->unknown[i].uuid;
    if (w->n_unknown == sizeof w->unknown / sizeof *w->unknown)
        return 2; /* past 16 such devices, their work goes to the first one's */
    char name[80];
    snprintf(name, sizeof name, "GPU %u (not described by the trace)", device);
    uint64_t uuid = w->next_uuid++;
    process(w, uuid, GPU_PID_BASE + (long)device, name);
    w->unknown[w->n_unknown++] = (struct unknown_device){device, uuid};
    return uuid;
}

/* the host (uuid 1) and each GPU the trace describes (2 ...) */
static void processes(struct pw *w)
{
    char name[160];
    snprintf(name, sizeof name, "host (pid %ld)", w->host_pid);
    process(w, 1, w->host_pid, name);
    for (size_t i = 0; i < w->t->n_devices; i++) {
        snprintf(name, sizeof name, "GPU %u: %s", w->t->devices[i].id,
                 lp_trace_str(w->t, w->t->devices[i].name));
        process(w, 2 + i, GPU_PID_BASE + (long)w->t->devices[i].id, name);
    }
    w->host_uuid = 1;
    w->next_uuid = 2 + w->t->n_devices;
}

/* ---- events ---- */

/* a packet of L's sequence at TS: its delta, the sequence, the TrackEvent opened */
static size_t event_open(struct pw *w, struct lane *l, uint64_t ts, int type)
{
    lp_pb_varint(&w->pb, PKT_TIMESTAMP, ts - l->last);
    l->last = ts;
    lp_pb_varint(&w->pb, PKT_SEQUENCE_ID, l->seq);
    size_t te = lp_pb_begin(&w->pb, PKT_TRACK_EVENT);
    lp_pb_varint(&w->pb, TE_TYPE, (uint64_t)type);
    return te;
}

static void event_name(struct pw *w, struct lane *l, uint64_t iid)
{
    lp_pb_varint(&w->pb, TE_NAME_IID, iid);
    int first = bits_first(&l->names, iid);
    if (first < 0)
        w->failed = 1;
    else if (first && w->n_pending_names < 8)
        w->pending_names[w->n_pending_names++] = iid;
}

static void annotation_string(struct pw *w, struct lane *l, uint32_t name, uint64_t iid)
{
    size_t a = lp_pb_begin(&w->pb, TE_ANNOTATIONS);
    lp_pb_varint(&w->pb, DA_NAME_IID, name);
    lp_pb_varint(&w->pb, DA_STRING_IID, iid);
    lp_pb_end(&w->pb, a);
    int first = bits_first(&l->strings, iid);
    if (first < 0)
        w->failed = 1;
    else if (first && w->n_pending_strings < 8)
        w->pending_strings[w->n_pending_strings++] = iid;
}

static void annotation_uint(struct pw *w, uint32_t name, int field, uint64_t v)
{
    size_t a = lp_pb_begin(&w->pb, TE_ANNOTATIONS);
    lp_pb_varint(&w->pb, DA_NAME_IID, name);
    lp_pb_varint(&w->pb, (uint32_t)field, v);
    lp_pb_end(&w->pb, a);
}

/* closes the TrackEvent, adds the names first used in it, writes the packet */
static void event_close(struct pw *w, size_t te)
{
    struct lp_pb *p = &w->pb;
    lp_pb_end(p, te);
    if (w->n_pending_names || w->n_pending_strings) {
        size_t in = lp_pb_begin(p, PKT_INTERNED);
        for (size_t i = 0; i < w->n_pending_names; i++) {
            size_t e = lp_pb_begin(p, ID_NAMES);
            lp_pb_varint(p, 1, w->pending_names[i]);
            lp_pb_str(p, 2, name_of(w, w->pending_names[i]));
            lp_pb_end(p, e);
        }
        for (size_t i = 0; i < w->n_pending_strings; i++) {
            size_t e = lp_pb_begin(p, ID_ANNOTATION_STRINGS);
            lp_pb_varint(p, 1, w->pending_strings[i]);
            lp_pb_str(p, 2, string_of(w, w->pending_strings[i]));
            lp_pb_end(p, e);
        }
        lp_pb_end(p, in);
        w->n_pending_names = w->n_pending_strings = 0;
    }
    emit(w);
}

/* ends the slices open on L that end by TS */
static void close_until(struct pw *w, struct lane *l, uint64_t ts)
{
    while (l->depth && l->open[l->depth - 1] <= ts)
        event_close(w, event_open(w, l, l->open[--l->depth], TYPE_END));
}

/* The lane of K where a slice [S, E] nests, its open slices ended by S; E is cut to the
 * open slice's end when every lane would cross. NULL when out of memory. */
static struct lane *place(struct pw *w, struct track *k, uint64_t s, uint64_t *e)
{
    for (size_t i = 0;; i++) {
        if (i == k->n_lanes && (i == k->max_lanes || !lane_add(w, k))) {
            struct lane *l = &k->lanes[k->n_lanes - 1];
            *e = l->open[l->depth - 1];
            w->stats->shortened++;
            return w->failed ? NULL : l;
        }
        struct lane *l = &k->lanes[i];
        close_until(w, l, s);
        if (l->depth == 0 || *e <= l->open[l->depth - 1])
            return l;
    }
}

static int push(struct pw *w, struct lane *l, uint64_t end)
{
    if (l->depth == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        uint64_t *v = realloc(l->open, cap * sizeof *v);
        if (!v) {
            w->failed = 1;
            return -1;
        }
        l->open = v;
        l->cap = cap;
    }
    l->open[l->depth++] = end;
    return 0;
}

static void close_all(struct pw *w)
{
    for (size_t i = 0; i < w->n_tracks; i++)
        for (size_t j = 0; j < w->tracks[i].n_lanes; j++)
            close_until(w, &w->tracks[i].lanes[j], UINT64_MAX);
}

/* ---- the records, ordered ---- */

/* A record for the sort: by start, the longer first, then by I, its index among the
 * records of every kind sorted together (struct kinds): what nesting needs. The length is
 * exact to the nanosecond up to 2^31 ns, then in steps of 2^32 ns. */
static struct lp_kv order_key(uint64_t start, uint64_t end, size_t i)
{
    uint64_t d = end > start ? end - start : 0;
    if (d >= 1ull << 31)
        d = (1ull << 31) + (d >> 32 < (1ull << 31) - 1 ? d >> 32 : (1ull << 31) - 1);
    return (struct lp_kv){start, (0xffffffffull - d) << 32 | i};
}

/* Appends to V (at *M) the records, N of them and numbered from BASE, that overlap the
 * window, the I_-th from A to B (expressions of I_). */
#define SPANS(v, m, n, a, b, base)                                                             \
    for (size_t i_ = 0; i_ < (n); i_++)                                                        \
        if (in_window(w, (a), (b)))                                                            \
            (v)[(*(m))++] = order_key((a), (b), (base) + i_)

/* the kinds sorted together: kind K's records are indices BASE[K] to BASE[K + 1] - 1 */
struct kinds {
    size_t base[5];
    unsigned n;
};

/* a launching call: the start of a flow to the work it queued (the JSON's test) */
static int launches(struct pw *w, lp_str name)
{
    if (name < w->t->n_strings && w->launches[name])
        return w->launches[name] == 2;
    const char *n = lp_trace_str(w->t, name);
    int yes = strstr(n, "aunch") || strstr(n, "emcpy") || strstr(n, "emset");
    if (name < w->t->n_strings)
        w->launches[name] = yes ? 2 : 1;
    return yes;
}

enum { HOST_RANGE, HOST_API, HOST_OVERHEAD, HOST_MARK };

static void host_event(struct pw *w, unsigned kind, size_t i)
{
    const struct lp_trace *t = w->t;
    uint64_t s, e;
    uint32_t thread;
    if (kind == HOST_RANGE) {
        s = w->r->ranges.v[i].start, e = w->r->ranges.v[i].end, thread = w->r->ranges.v[i].thread;
    } else if (kind == HOST_API) {
        s = t->apis[i].start, e = lp_trace_api_end(t, &t->apis[i]);
        thread = lp_trace_api_kind(t, &t->apis[i])->thread;
    } else if (kind == HOST_OVERHEAD) {
        s = t->overheads[i].start, e = t->overheads[i].end, thread = t->overheads[i].thread;
    } else {
        s = e = t->markers[i].timestamp, thread = t->markers[i].thread;
    }
    struct track *k = track_get(w, 1ull << 60 | thread, w->host_uuid, "", MAX_LANES);
    if (!k)
        return;
    s = rel(w, s);
    e = rel(w, e);
    if (e < s)
        e = s;
    if (kind == HOST_MARK) { /* an instant: on the thread's own lane */
        struct lane *l = &k->lanes[0];
        close_until(w, l, s);
        size_t te = event_open(w, l, s, TYPE_INSTANT);
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_NVTX);
        event_name(w, l, iid_str(w, t->markers[i].name));
        event_close(w, te);
        return;
    }
    struct lane *l = place(w, k, s, &e);
    if (!l)
        return;
    size_t te = event_open(w, l, s, TYPE_BEGIN);
    if (kind == HOST_RANGE) {
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_NVTX);
        event_name(w, l, iid_str(w, w->r->ranges.v[i].name));
    } else if (kind == HOST_API) {
        const struct lp_api_rec *a = &t->apis[i];
        const struct lp_api_kind *ak = lp_trace_api_kind(t, a);
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_API);
        event_name(w, l, iid_str(w, ak->name));
        if (ak->status)
            annotation_uint(w, AN_STATUS, DA_UINT, ak->status);
        if (a->correlation && launches(w, ak->name))
            flow_starts(w, a->correlation);
    } else {
        enum lp_overhead_kind ok = lp_overhead_kind_of(t->overheads[i].kind);
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_OVERHEAD);
        lp_pb_str(&w->pb, TE_NAME, lp_text_overhead_kind(ok));
        size_t a = lp_pb_begin(&w->pb, TE_ANNOTATIONS);
        lp_pb_varint(&w->pb, DA_NAME_IID, AN_CLASS);
        lp_pb_str(&w->pb, DA_STRING, lp_text_overhead_class_key(lp_overhead_kind_class(ok)));
        lp_pb_end(&w->pb, a);
    }
    event_close(w, te);
    push(w, l, e);
}

enum { GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET };

static void gpu_event(struct pw *w, unsigned kind, size_t i)
{
    const struct lp_trace *t = w->t;
    uint64_t s, e;
    uint32_t device, stream, correlation;
    if (kind == GPU_KERNEL) {
        const struct lp_kernel_rec *x = &t->kernels[i];
        const struct lp_kernel_config *xc = lp_trace_kernel_config(t, x);
        s = x->start, e = lp_trace_kernel_end(t, x), device = xc->device, stream = xc->stream;
        correlation = x->correlation;
    } else if (kind == GPU_MEMCPY) {
        const struct lp_memcpy *x = &t->memcpys[i];
        s = x->start, e = x->end, device = x->device, stream = x->stream;
        correlation = x->correlation;
    } else {
        const struct lp_memset *x = &t->memsets[i];
        s = x->start, e = x->end, device = x->device, stream = x->stream;
        correlation = x->correlation;
    }
    char name[64];
    snprintf(name, sizeof name, "stream %u", stream);
    struct track *k = track_get(w, 2ull << 60 | (uint64_t)(device & 0xfffffff) << 32 | stream,
                                gpu_uuid(w, device), name, MAX_LANES);
    if (!k)
        return;
    s = rel(w, s);
    e = rel(w, e);
    if (e < s)
        e = s;
    struct lane *l = place(w, k, s, &e);
    if (!l)
        return;
    size_t te = event_open(w, l, s, TYPE_BEGIN);
    if (kind == GPU_KERNEL) {
        const struct lp_kernel_rec *x = &t->kernels[i];
        uint32_t g = lp_run_kernel_group(w->r, i);
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_KERNEL + (uint64_t)w->r->cats[g]);
        event_name(w, l, iid_group(w, g));
        if (x->config < t->n_kernel_configs)
            annotation_string(w, l, AN_LAUNCH, sid_config(w, x->config));
        uint32_t graph = lp_trace_kernel_config(t, x)->graph_id;
        if (graph)
            annotation_uint(w, AN_GRAPH, DA_UINT, graph);
        int32_t cr = w->r->kernel_capture_range ? w->r->kernel_capture_range[i] : -1;
        if (cr >= 0) /* a replay: where its node was captured */
            annotation_string(w, l, AN_CAPTURED, sid_str(w, w->r->ranges.v[cr].name));
    } else if (kind == GPU_MEMCPY) {
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_MEMCPY);
        event_name(w, l, iid_copy(w, lp_copy_direction(t->memcpys[i].copy_kind)));
        annotation_uint(w, AN_BYTES, DA_UINT, t->memcpys[i].bytes);
    } else {
        lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_MEMSET);
        event_name(w, l, iid_copy(w, 4));
        annotation_uint(w, AN_BYTES, DA_UINT, t->memsets[i].bytes);
    }
    if (correlation)
        lp_pb_fixed64(&w->pb, TE_TERMINATING_FLOW_IDS, flow_end(w, correlation));
    event_close(w, te);
    push(w, l, e);
}

/* sorts V (N records of the kinds K) and writes each through EACH, with its kind and its
 * index in its kind's array */
static int ordered(struct pw *w, struct lp_kv *v, size_t n, const struct kinds *k,
                   void (*each)(struct pw *, unsigned, size_t))
{
    lp_sort_kv_inplace(v, n);
    for (size_t i = 0; i < n && !w->failed; i++) {
        size_t g = (size_t)(v[i].val & 0xffffffffu);
        unsigned kind = 0;
        while (kind + 1 < k->n && g >= k->base[kind + 1])
            kind++;
        each(w, kind, g - k->base[kind]);
    }
    return w->failed ? -1 : 0;
}

static int host(struct pw *w)
{
    const struct lp_trace *t = w->t;
    const struct lp_ranges *rg = &w->r->ranges;
    struct kinds k = {{0, rg->n, rg->n + t->n_apis, rg->n + t->n_apis + t->n_overheads}, 4};
    size_t n = k.base[3] + t->n_markers, m = 0;
    struct lp_kv *v = n < UINT32_MAX ? malloc((n + 1) * sizeof *v) : NULL;
    if (!v)
        return -1;
    SPANS(v, &m, rg->n, rg->v[i_].start, rg->v[i_].end, k.base[HOST_RANGE]);
    SPANS(v, &m, t->n_apis, t->apis[i_].start, lp_trace_api_end(t, &t->apis[i_]),
          k.base[HOST_API]);
    SPANS(v, &m, t->n_overheads, t->overheads[i_].start, t->overheads[i_].end,
          k.base[HOST_OVERHEAD]);
    for (size_t i = 0; i < t->n_markers; i++) {
        const struct lp_marker *x = &t->markers[i];
        if ((x->flags & LP_MARKER_FLAG_INSTANT) && in_window(w, x->timestamp, x->timestamp))
            v[m++] = order_key(x->timestamp, x->timestamp, k.base[HOST_MARK] + i);
    }
    int rc = ordered(w, v, m, &k, host_event);
    free(v);
    return rc;
}

static int gpu(struct pw *w)
{
    const struct lp_trace *t = w->t;
    struct kinds k = {{0, t->n_kernels, t->n_kernels + t->n_memcpys}, 3};
    size_t n = k.base[2] + t->n_memsets, m = 0;
    struct lp_kv *v = n < UINT32_MAX ? malloc((n + 1) * sizeof *v) : NULL;
    if (!v)
        return -1;
    SPANS(v, &m, t->n_kernels, t->kernels[i_].start, lp_trace_kernel_end(t, &t->kernels[i_]),
          k.base[GPU_KERNEL]);
    SPANS(v, &m, t->n_memcpys, t->memcpys[i_].start, t->memcpys[i_].end,
          k.base[GPU_MEMCPY]);
    SPANS(v, &m, t->n_memsets, t->memsets[i_].start, t->memsets[i_].end,
          k.base[GPU_MEMSET]);
    int rc = ordered(w, v, m, &k, gpu_event);
    free(v);
    return rc;
}

/* the requests of the request convention: they overlap, so each takes a free lane */
static void request_event(struct pw *w, unsigned kind, size_t i)
{
    (void)kind;
    const struct lp_range *g = &w->r->ranges.req[i];
    struct track *k = track_get(w, 3ull << 60, w->host_uuid, "requests", MAX_REQUEST_LANES);
    uint64_t s = rel(w, g->start), e = rel(w, g->end);
    if (e < s)
        e = s;
    struct lane *l = k ? place(w, k, s, &e) : NULL;
    if (!l)
        return;
    size_t te = event_open(w, l, s, TYPE_BEGIN);
    lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_REQUEST);
    lp_pb_str(&w->pb, TE_NAME, lp_trace_str(w->t, g->name));
    event_close(w, te);
    push(w, l, e);
}

static void iteration_event(struct pw *w, unsigned kind, size_t i)
{
    (void)kind;
    const struct lp_serving *sv = &w->r->serving;
    const struct lp_iteration *x = &sv->iters[i];
    struct track *k = track_get(w, 4ull << 60 | sv->device, gpu_uuid(w, (uint32_t)sv->device),
                                "serving iterations", MAX_LANES);
    uint64_t s = rel(w, x->start ? x->start : x->end), e = rel(w, x->end);
    if (e < s)
        e = s;
    struct lane *l = k ? place(w, k, s, &e) : NULL;
    if (!l)
        return;
    size_t te = event_open(w, l, s, TYPE_BEGIN);
    lp_pb_varint(&w->pb, TE_CATEGORY_IIDS, CAT_ITERATION);
    lp_pb_str(&w->pb, TE_NAME, lp_text_iter_kind_key(x->kind));
    annotation_uint(w, AN_ITERATION, DA_UINT, i);
    annotation_uint(w, AN_TOKENS, DA_INT, (uint64_t)x->tokens);
    annotation_uint(w, AN_SAMPLED, DA_INT, (uint64_t)x->sampled);
    annotation_uint(w, AN_DECODE, DA_INT, (uint64_t)x->decode);
    annotation_uint(w, AN_PREFILL, DA_INT, (uint64_t)x->prefill_tokens);
    annotation_uint(w, AN_BUCKET, DA_INT, (uint64_t)x->bucket);
    annotation_uint(w, AN_PERIOD, DA_UINT, x->period_ns);
    size_t a = lp_pb_begin(&w->pb, TE_ANNOTATIONS);
    lp_pb_varint(&w->pb, DA_NAME_IID, AN_SOURCE);
    lp_pb_str(&w->pb, DA_STRING, lp_text_iter_source_key(x->source));
    lp_pb_end(&w->pb, a);
    event_close(w, te);
    push(w, l, e);
}

static int requests_and_iterations(struct pw *w)
{
    const struct lp_ranges *rg = &w->r->ranges;
    const struct lp_serving *sv = &w->r->serving;
    size_t m = 0;
    struct lp_kv *v = rg->n_req < UINT32_MAX ? malloc((rg->n_req + 1) * sizeof *v) : NULL;
    if (!v)
        return -1;
    SPANS(v, &m, rg->n_req, rg->req[i_].start, rg->req[i_].end, 0);
    const struct kinds one = {{0}, 1};
    int rc = ordered(w, v, m, &one, request_event);
    free(v);
    m = 0;
    v = sv->n_iters < UINT32_MAX ? malloc((sv->n_iters + 1) * sizeof *v) : NULL;
    if (rc != 0 || !v) {
        free(v);
        return -1;
    }
    for (size_t i = 0; i < sv->n_iters; i++) {
        uint64_t a = sv->iters[i].start ? sv->iters[i].start : sv->iters[i].end;
        if (in_window(w, a, sv->iters[i].end))
            v[m++] = order_key(a, sv->iters[i].end, i);
    }
    rc = ordered(w, v, m, &one, iteration_event);
    free(v);
    return rc;
}

/* ---- counters ---- */

/* one counter value at TS on the track of (DEVICE, WHAT); NAME "name | unit" */
static void counter(struct pw *w, uint32_t device, unsigned what, const char *name, uint64_t ts,
                    double value)
{
    if (!isfinite(value)) /* no value: no sample (nor a track for none) */
        return;
    struct track *k = track_get(w, 5ull << 60 | (uint64_t)(device & 0xfffffff) << 16 | what,
                                gpu_uuid(w, device), name, 1);
    if (!k)
        return;
    struct lane *l = &k->lanes[0];
    size_t te = event_open(w, l, rel(w, ts), TYPE_COUNTER);
    lp_pb_double(&w->pb, TE_DOUBLE_COUNTER, value);
    event_close(w, te);
}

static const struct {
    uint32_t field;
    const char *name;
} nvml_tracks[] = {
    {LP_NVML_FIELD_POWER, "power | W"},
    {LP_NVML_FIELD_SM_CLOCK, "SM clock | MHz"},
    {LP_NVML_FIELD_MEM_CLOCK, "memory clock | MHz"},
    {LP_NVML_FIELD_UTIL, "GPU utilisation (NVML) | %"},
    {LP_NVML_FIELD_TEMP, "temperature | C"},
    {LP_NVML_FIELD_MEM_USED, "memory used | GiB"},
};

static double nvml_value(const struct lp_nvml_sample *s, uint32_t field)
{
    switch (field) {
    case LP_NVML_FIELD_POWER: return s->power_mw / 1000.0;
    case LP_NVML_FIELD_SM_CLOCK: return s->sm_mhz;
    case LP_NVML_FIELD_MEM_CLOCK: return s->mem_mhz;
    case LP_NVML_FIELD_UTIL: return s->util_gpu;
    case LP_NVML_FIELD_TEMP: return s->temp_c;
    default: return (double)s->mem_used / 1073741824.0;
    }
}

enum { SAMPLE_NVML, SAMPLE_PM };

static void sample_event(struct pw *w, unsigned kind, size_t i)
{
    char name[96];
    if (kind == SAMPLE_NVML) {
        const struct lp_nvml_sample *s = &w->t->nvml[i];
        for (unsigned f = 0; f < sizeof nvml_tracks / sizeof *nvml_tracks; f++)
            if (s->valid & nvml_tracks[f].field)
                counter(w, s->device, f, nvml_tracks[f].name, s->timestamp,
                        nvml_value(s, nvml_tracks[f].field));
        return;
    }
    const struct lp_pm_sample *s = &w->t->pm[i];
    for (unsigned p = 0; p < LP_PM_COUNT; p++) {
        if (!(s->valid & 1u << p))
            continue;
        int dram = p == LP_PM_DRAM_READ || p == LP_PM_DRAM_WRITE;
        double v = lp_pm_value(s, (enum lp_pm)p);
        if (dram) /* bytes in the sample: a rate, bytes per ns being GB/s */
            v = s->end > s->start ? v / (double)(s->end - s->start) : 0;
        snprintf(name, sizeof name, "PM %s | %s", lp_pm_name((enum lp_pm)p),
                 dram ? "GB/s" : p == LP_PM_GPC_MHZ ? "MHz" : "%");
        counter(w, s->device, 64 + p, name, s->start, v);
    }
}

static int samples(struct pw *w)
{
    const struct lp_trace *t = w->t;
    size_t m = 0;
    struct kinds k = {{0, t->n_nvml}, 2};
    size_t n = t->n_nvml + t->n_pm;
    struct lp_kv *v = n < UINT32_MAX ? malloc((n + 1) * sizeof *v) : NULL;
    if (!v)
        return -1;
    SPANS(v, &m, t->n_nvml, t->nvml[i_].timestamp, t->nvml[i_].timestamp, k.base[SAMPLE_NVML]);
    SPANS(v, &m, t->n_pm, t->pm[i_].start, t->pm[i_].start, k.base[SAMPLE_PM]);
    int rc = ordered(w, v, m, &k, sample_event);
    free(v);
    return rc;
}

static uint64_t ms_after(uint64_t t0, uint64_t ms)
{
    uint64_t ns, t;
    if (__builtin_mul_overflow(ms, 1000000, &ns) || __builtin_add_overflow(t0, ns, &t))
        return UINT64_MAX;
    return t;
}

int lp_report_perfetto_pb(FILE *f, const struct lp_run *r, uint64_t from_ms, uint64_t to_ms,
                          struct lp_perfetto_stats *stats)
{
    const struct lp_trace *t = r->trace;
    const char *pid_s = lp_trace_meta(t, "pid");
    struct pw w = {.f = f, .r = r, .t = t, .t0 = r->t0_ns, .stats = stats, .next_seq = 2,
                   .host_pid = pid_s ? strtol(pid_s, NULL, 10) : 1,
                   .from = ms_after(r->t0_ns, from_ms),
                   .to = to_ms ? ms_after(r->t0_ns, to_ms) : UINT64_MAX};
    memset(stats, 0, sizeof *stats);
    w.n_slots = 64;
    w.slots = calloc(w.n_slots, sizeof *w.slots);
    w.launches = calloc(t->n_strings + 1, 1);
    w.configs = calloc(t->n_kernel_configs + 1, sizeof *w.configs);
    int rc = -1;
    if (!w.slots || !w.launches || !w.configs || number_shapes(&w) != 0)
        goto out;
    processes(&w);
    if (share(&w) != 0 || host(&w) != 0 || gpu(&w) != 0 || requests_and_iterations(&w) != 0 ||
        samples(&w) != 0)
        goto out;
    close_all(&w);
    rc = w.failed || ferror(f) ? -1 : 0;
out:
    for (size_t i = 0; i < w.n_tracks; i++) {
        for (size_t j = 0; j < w.tracks[i].n_lanes; j++) {
            free(w.tracks[i].lanes[j].open);
            free(w.tracks[i].lanes[j].names.w);
            free(w.tracks[i].lanes[j].strings.w);
        }
        stats->tracks += w.tracks[i].n_lanes;
        free(w.tracks[i].lanes);
    }
    for (size_t i = 0; w.configs && i < t->n_kernel_configs; i++)
        free(w.configs[i]);
    free(w.configs);
    free(w.shape_of);
    free(w.shape_rep);
    free(w.tracks);
    free(w.slots);
    free(w.shared.key);
    free(w.shared.count);
    free(w.shared.taken);
    free(w.launches);
    lp_pb_free(&w.pb);
    return rc;
}
