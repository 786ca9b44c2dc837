/* Live figures of a trace being written (live.h): each record updates counts, sums and
 * histograms at once, nothing is kept per record. NVTX ranges are paired by their marker id
 * while open; a stage occurrence is a range its rule matches with no other stage range open
 * on its thread (the report's top-level occurrence); the request convention's TTFT, ITL and
 * TPOT are taken as its marks arrive (docs/serving.md), by the same definitions as the
 * report's. Windows are one-second bins of trace time in a ring. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/analyze.h"
#include "llmprof/live.h"

const double lp_live_bucket_le[LP_LIVE_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
    0.05,   0.075, 0.1,    0.25,  0.5,    1.0,  2.5,   5.0,  10.0};

#define MAX_THREADS 1024 /* threads inside a stage or warm-up range at once */

/* a range open now */
struct open_range {
    uint32_t marker;              /* its marker id; slot free when USED is 0 */
    uint8_t used;
    uint8_t stage_rule;           /* matched a stage rule: the thread's depth counts it */
    uint8_t warm;                 /* named warmup: the thread's warm count counts it */
    int16_t stage;                /* an occurrence of this stage (index into stages), -1 */
    int32_t req;                  /* its request slot, -1 */
    uint32_t thread;
    uint64_t start;
    uint64_t tokens;              /* tokens=N of its name */
};

struct request {
    char *id;                     /* NULL: slot free */
    uint64_t admit, first, last;
    uint64_t tokens;
};

struct thread_depth {
    uint32_t thread;
    uint32_t depth;               /* stage ranges open on it */
    uint32_t warm;                /* ranges named warmup open on it */
};

struct lp_live {
    regex_t *re;
    char **rule_names;
    size_t n_rules;
    struct lp_live_stage stages[LP_LIVE_MAX_STAGES];
    size_t n_stages;
    struct open_range *open;      /* open addressing by marker id, 2 x LP_LIVE_MAX_OPEN */
    size_t n_open;
    struct request *reqs;         /* LP_LIVE_MAX_OPEN slots */
    uint32_t *free_reqs;          /* the slots free, a stack */
    size_t n_free;
    uint32_t *req_slots;          /* open addressing by id: slot + 1, 0 free */
    struct thread_depth threads[MAX_THREADS];
    size_t n_threads;
    struct lp_live_device devices[LP_LIVE_MAX_DEVICES];
    struct lp_live_bin bins[LP_LIVE_BINS];
    struct lp_live_facts f;       /* the counters; arrays pointed at above */
    uint64_t start_ns;            /* the recording's start, 0 unknown */
};

#define OPEN_SLOTS (2 * LP_LIVE_MAX_OPEN)
#define REQ_SLOTS (2 * LP_LIVE_MAX_OPEN)

int lp_live_init(struct lp_live **out, const char *const *rules, size_t n_rules, char *err,
                 size_t errlen)
{
    *out = NULL;
    size_t n_default = 0;
    const char *const *def = lp_stage_default_rules(&n_default);
    if (!rules) {
        rules = def;
        n_rules = n_default;
    }
    struct lp_live *l = calloc(1, sizeof *l);
    if (!l)
        return LP_ERR_NOMEM;
    l->re = calloc(n_rules ? n_rules : 1, sizeof *l->re);
    l->rule_names = calloc(n_rules ? n_rules : 1, sizeof *l->rule_names);
    l->open = calloc(OPEN_SLOTS, sizeof *l->open);
    l->reqs = calloc(LP_LIVE_MAX_OPEN, sizeof *l->reqs);
    l->req_slots = calloc(REQ_SLOTS, sizeof *l->req_slots);
    l->free_reqs = malloc(LP_LIVE_MAX_OPEN * sizeof *l->free_reqs);
    if (!l->re || !l->rule_names || !l->open || !l->reqs || !l->req_slots || !l->free_reqs) {
        lp_live_free(l);
        return LP_ERR_NOMEM;
    }
    for (size_t i = 0; i < n_rules; i++) {
        const char *eq = strchr(rules[i], '=');
        if (!eq || eq == rules[i]) {
            snprintf(err, errlen, "stage rule '%s': expected NAME=REGEX, e.g. decode=^decode",
                     rules[i]);
            lp_live_free(l);
            return LP_ERR_ARG;
        }
        if (!(l->rule_names[i] = strndup(rules[i], (size_t)(eq - rules[i])))) {
            lp_live_free(l);
            return LP_ERR_NOMEM;
        }
        l->n_rules = i + 1;
        int rc = regcomp(&l->re[i], eq + 1, REG_EXTENDED | REG_ICASE | REG_NOSUB);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &l->re[i], msg, sizeof msg);
            snprintf(err, errlen, "stage rule '%s': bad regular expression: %s", rules[i], msg);
            free(l->rule_names[i]);
            l->rule_names[i] = NULL;
            l->n_rules = i;
            lp_live_free(l);
            return LP_ERR_ARG;
        }
    }
    for (size_t i = 0; i < LP_LIVE_MAX_OPEN; i++)
        l->free_reqs[i] = LP_LIVE_MAX_OPEN - 1 - (uint32_t)i;
    l->n_free = LP_LIVE_MAX_OPEN;
    for (size_t i = 0; i < LP_LIVE_BINS; i++)
        l->bins[i].second = -1;
    l->f.stages = l->stages;
    l->f.devices = l->devices;
    *out = l;
    return LP_OK;
}

void lp_live_free(struct lp_live *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n_rules; i++) {
        regfree(&l->re[i]);
        free(l->rule_names[i]);
    }
    free(l->re);
    free(l->rule_names);
    for (size_t i = 0; i < l->n_stages; i++)
        free(l->stages[i].name);
    if (l->reqs)
        for (size_t i = 0; i < LP_LIVE_MAX_OPEN; i++)
            free(l->reqs[i].id);
    free(l->reqs);
    free(l->free_reqs);
    free(l->req_slots);
    free(l->open);
    free(l);
}

static void observe(struct lp_live_hist *h, uint64_t ns)
{
    h->count++;
    h->sum_ns += ns;
    for (size_t i = 0; i < LP_LIVE_BUCKETS; i++) /* in whole ns: a bound holds its value */
        if (ns <= (uint64_t)(lp_live_bucket_le[i] * 1e9 + 0.5)) {
            h->bucket[i]++;
            break;
        }
}

static struct lp_live_bin *bin_at(struct lp_live *l, uint64_t ts)
{
    int64_t sec = (int64_t)(ts / 1000000000u);
    struct lp_live_bin *b = &l->bins[(uint64_t)sec % LP_LIVE_BINS];
    if (b->second != sec) {
        if (b->second > sec)
            return NULL; /* older than the ring: in the totals only */
        memset(b, 0, sizeof *b);
        b->second = sec;
    }
    return b;
}

/* ---- open ranges, by marker id ---- */

static size_t open_slot(const struct lp_live *l, uint32_t marker)
{
    size_t i = (marker * 2654435761u) & (OPEN_SLOTS - 1);
    while (l->open[i].used && l->open[i].marker != marker)
        i = (i + 1) & (OPEN_SLOTS - 1);
    return i;
}

/* removes slot I, moving later entries of its run back (no tombstones) */
static void open_remove(struct lp_live *l, size_t i)
{
    size_t j = i;
    for (;;) {
        l->open[i].used = 0;
        for (;;) {
            j = (j + 1) & (OPEN_SLOTS - 1);
            if (!l->open[j].used)
                return;
            size_t home = (l->open[j].marker * 2654435761u) & (OPEN_SLOTS - 1);
            /* J may move to I when its home is not within (I, J] cyclically */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        l->open[i] = l->open[j];
        i = j;
    }
}

/* ---- requests, by id ---- */

static uint64_t hash_id(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static size_t req_slot(const struct lp_live *l, const char *id, size_t n)
{
    size_t i = hash_id(id, n) & (REQ_SLOTS - 1);
    while (l->req_slots[i]) {
        const char *o = l->reqs[l->req_slots[i] - 1].id;
        if (strlen(o) == n && !memcmp(o, id, n))
            break;
        i = (i + 1) & (REQ_SLOTS - 1);
    }
    return i;
}

static void req_remove(struct lp_live *l, size_t i)
{
    size_t j = i;
    for (;;) {
        l->req_slots[i] = 0;
        for (;;) {
            j = (j + 1) & (REQ_SLOTS - 1);
            if (!l->req_slots[j])
                return;
            const char *o = l->reqs[l->req_slots[j] - 1].id;
            size_t home = hash_id(o, strlen(o)) & (REQ_SLOTS - 1);
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        l->req_slots[i] = l->req_slots[j];
        i = j;
    }
}

static struct thread_depth *thread_of(struct lp_live *l, uint32_t thread)
{
    for (size_t i = 0; i < l->n_threads; i++)
        if (l->threads[i].thread == thread)
            return &l->threads[i];
    if (l->n_threads == MAX_THREADS)
        return NULL;
    l->threads[l->n_threads] = (struct thread_depth){thread, 0, 0};
    return &l->threads[l->n_threads++];
}

static int16_t stage_index(struct lp_live *l, const char *name)
{
    for (size_t i = 0; i < l->n_stages; i++)
        if (!strcmp(l->stages[i].name, name))
            return (int16_t)i;
    if (l->n_stages == LP_LIVE_MAX_STAGES)
        return -2;
    if (!(l->stages[l->n_stages].name = strdup(name)))
        return -3;
    return (int16_t)l->n_stages++;
}

static int range_start(struct lp_live *l, const struct lp_marker *m, const char *name)
{
    if (l->n_open >= LP_LIVE_MAX_OPEN) {
        l->f.ranges_unmatched++;
        return LP_OK;
    }
    size_t i = open_slot(l, m->id);
    if (l->open[i].used)
        return LP_OK; /* the id is open already: a repeated record */
    struct open_range o = {.marker = m->id, .used = 1, .stage = -1, .req = -1,
                           .thread = m->thread, .start = m->timestamp};
    size_t idlen = lp_request_word(name, "request");
    if (idlen) {
        /* a request of the convention once a token mark is seen; kept from its start, so
         * that marks before the first token mark still count */
        if (l->n_free == 0) {
            l->f.requests_dropped++;
        } else {
            size_t s = req_slot(l, name + 8, idlen);
            if (l->req_slots[s]) { /* the id is in flight: the later range takes its marks */
                l->f.ids_reused++;
                int32_t old = (int32_t)l->req_slots[s] - 1;
                req_remove(l, s);
                for (size_t k = 0; k < OPEN_SLOTS; k++)
                    if (l->open[k].used && l->open[k].req == old)
                        l->open[k].req = -1;
                free(l->reqs[old].id);
                l->reqs[old] = (struct request){0};
                l->free_reqs[l->n_free++] = (uint32_t)old;
                l->f.requests_dropped++;
                l->f.requests_open--;
                s = req_slot(l, name + 8, idlen);
            }
            uint32_t free_req = l->free_reqs[l->n_free - 1];
            if (!(l->reqs[free_req].id = strndup(name + 8, idlen)))
                return LP_ERR_NOMEM;
            l->reqs[free_req].admit = m->timestamp;
            l->n_free--;
            l->req_slots[s] = free_req + 1;
            o.req = (int32_t)free_req;
            l->f.requests_started++;
            l->f.requests_open++;
        }
    }
    /* the thread's entry lives while a stage or warm-up range is open on it */
    struct thread_depth *th = thread_of(l, m->thread);
    if (!th)
        l->f.threads_dropped++;
    if ((!idlen || !l->f.convention) && th) {
        /* warm-up is a stage of its own, as in the report: a range named so, and the stage
         * ranges inside one */
        int warm = th->warm > 0;
        if (strcasestr(name, "warmup")) {
            o.warm = 1;
            th->warm++;
        }
        for (size_t k = 0; k < l->n_rules; k++) {
            if (regexec(&l->re[k], name, 0, NULL, 0) != 0)
                continue;
            o.stage_rule = 1;
            if (th->depth++ == 0) {
                o.stage = stage_index(l, warm || o.warm ? "warmup" : l->rule_names[k]);
                if (o.stage == -3)
                    return LP_ERR_NOMEM;
                int64_t tok = lp_stage_name_value(name, "tokens");
                o.tokens = tok > 0 ? (uint64_t)tok : 0;
            }
            break;
        }
    }
    if (th && !th->depth && !th->warm)
        *th = l->threads[--l->n_threads];
    l->open[i] = o;
    l->n_open++;
    return LP_OK;
}

static void range_end(struct lp_live *l, const struct lp_marker *m)
{
    size_t i = open_slot(l, m->id);
    if (!l->open[i].used) {
        l->f.ranges_unmatched++;
        return;
    }
    struct open_range o = l->open[i];
    open_remove(l, i);
    l->n_open--;
    struct thread_depth *th = o.stage_rule || o.warm ? thread_of(l, o.thread) : NULL;
    if (th && o.stage_rule && th->depth)
        th->depth--;
    if (th && o.warm && th->warm)
        th->warm--;
    if (th && !th->depth && !th->warm) /* forgotten: threads come and go (a pool) */
        *th = l->threads[--l->n_threads];
    uint64_t wall = m->timestamp > o.start ? m->timestamp - o.start : 0;
    if (o.stage >= 0) {
        struct lp_live_stage *s = &l->stages[o.stage];
        observe(&s->wall, wall);
        s->tokens += o.tokens;
        struct lp_live_bin *b = bin_at(l, m->timestamp);
        if (b)
            b->stage_tokens += o.tokens;
    } else if (o.stage == -2) {
        l->f.stages_dropped++;
    }
    if (o.req >= 0) {
        struct request *q = &l->reqs[o.req];
        if (q->tokens >= 2)
            observe(&l->f.tpot, (q->last - q->first) / (q->tokens - 1));
        l->f.requests_done++;
        l->f.requests_no_token += q->tokens == 0;
        l->f.requests_open--;
        req_remove(l, req_slot(l, q->id, strlen(q->id)));
        free(q->id);
        *q = (struct request){0};
        l->free_reqs[l->n_free++] = (uint32_t)o.req;
    }
}

static void token_mark(struct lp_live *l, const struct lp_marker *m, const char *id, size_t n)
{
    l->f.convention = 1;
    l->f.token_marks++;
    size_t s = req_slot(l, id, n);
    if (!l->req_slots[s]) {
        l->f.marks_unknown++;
        return;
    }
    struct request *q = &l->reqs[l->req_slots[s] - 1];
    if (m->timestamp < q->admit) {
        l->f.marks_unknown++;
        return;
    }
    if (q->tokens == 0) {
        q->first = m->timestamp;
        observe(&l->f.ttft, m->timestamp - q->admit);
    } else {
        observe(&l->f.itl, m->timestamp > q->last ? m->timestamp - q->last : 0);
    }
    q->last = m->timestamp;
    q->tokens++;
    struct lp_live_bin *b = bin_at(l, m->timestamp);
    if (b)
        b->tokens++;
}

static int marker(struct lp_live *l, const struct lp_marker *m, const char *name)
{
    if (m->flags & LP_MARKER_FLAG_START)
        return range_start(l, m, name);
    if (m->flags & LP_MARKER_FLAG_END) {
        range_end(l, m);
        return LP_OK;
    }
    size_t n = lp_request_word(name, "token");
    if (n)
        token_mark(l, m, name + 6, n);
    return LP_OK;
}

static struct lp_live_device *device(struct lp_live *l, uint32_t id)
{
    for (size_t i = 0; i < l->f.n_devices; i++)
        if (l->devices[i].id == id)
            return &l->devices[i];
    if (l->f.n_devices == LP_LIVE_MAX_DEVICES)
        return NULL;
    struct lp_live_device *d = &l->devices[l->f.n_devices++];
    d->id = id;
    d->power_w = -1;
    return d;
}

static void nvml(struct lp_live *l, const struct lp_nvml_sample *s)
{
    struct lp_live_device *d = device(l, s->device);
    if (!d)
        return;
    d->nvml_samples++;
    if (s->timestamp < d->nvml_ts)
        return; /* an older sample: counted, not the latest */
    d->nvml_ts = s->timestamp;
    if (s->valid & LP_NVML_FIELD_POWER) {
        d->power_w = s->power_mw * 1e-3;
        d->power_averaged = (s->valid & LP_NVML_FIELD_POWER_AVERAGED) != 0;
    }
    if (s->valid & LP_NVML_FIELD_ENERGY) {
        if (d->last_energy_mj && s->energy_mj >= d->last_energy_mj) {
            uint64_t step = s->energy_mj - d->last_energy_mj;
            d->energy_mj += step;
            struct lp_live_bin *b = bin_at(l, s->timestamp);
            if (b)
                b->energy_mj += step;
        }
        d->last_energy_mj = s->energy_mj;
    }
    if (s->valid & LP_NVML_FIELD_SM_CLOCK)
        d->sm_mhz = s->sm_mhz;
    if (s->valid & LP_NVML_FIELD_TEMP)
        d->temp_c = s->temp_c;
    if (s->valid & LP_NVML_FIELD_MEM_USED)
        d->mem_used = s->mem_used;
}

static void pm(struct lp_live *l, const struct lp_pm_sample *s)
{
    struct lp_live_device *d = device(l, s->device);
    if (!d || s->end <= s->start)
        return;
    uint64_t ns = s->end - s->start;
    d->pm_samples++;
    d->pm_ns += ns;
    struct lp_live_bin *b = bin_at(l, s->end);
    if (b)
        b->pm_ns += ns;
#define HAS(p) (s->valid & (1u << (p)))
    if (HAS(LP_PM_TENSOR)) {
        double t = lp_pm_value(s, LP_PM_TENSOR) / 100.0 * (double)ns;
        d->tensor_ns += t;
        if (b)
            b->tensor_ns += t;
    }
    if (HAS(LP_PM_SM_ACTIVE))
        d->sm_active_ns += lp_pm_value(s, LP_PM_SM_ACTIVE) / 100.0 * (double)ns;
    if (HAS(LP_PM_GR_ACTIVE))
        d->gr_active_ns += lp_pm_value(s, LP_PM_GR_ACTIVE) / 100.0 * (double)ns;
    double rd = HAS(LP_PM_DRAM_READ) ? lp_pm_value(s, LP_PM_DRAM_READ) : 0;
    double wr = HAS(LP_PM_DRAM_WRITE) ? lp_pm_value(s, LP_PM_DRAM_WRITE) : 0;
#undef HAS
    d->dram_read += rd;
    d->dram_write += wr;
    if (b)
        b->dram_bytes += rd + wr;
}

static uint64_t record_time(const struct lp_record *r)
{
    switch (r->type) {
    case LP_REC_MARKER: return r->u.marker.timestamp;
    case LP_REC_NVML: return r->u.nvml.timestamp;
    case LP_REC_PM_SAMPLE: return r->u.pm.end;
    case LP_REC_KERNEL: return r->u.kernel.end;
    case LP_REC_API: return r->u.api.end;
    default: return 0;
    }
}

void lp_live_set_start(struct lp_live *l, uint64_t start_ns) { l->start_ns = start_ns; }

int lp_live_add(struct lp_live *l, const struct lp_record *r,
                const char *(*name_of)(void *ctx, lp_str id), void *ctx)
{
    if (r->type >= LP_REC_TYPE_COUNT)
        return LP_OK;
    l->f.records[r->type]++;
    uint64_t ts = record_time(r);
    const uint64_t minute = 60000000000ull, year = 366ull * 86400 * 1000000000ull;
    if (l->start_ns && r->type != LP_REC_DEVICE && r->type != LP_REC_LOSS &&
        (ts == 0 || ts + minute < l->start_ns || ts - l->start_ns > year)) {
        l->f.implausible++; /* one such time would hold the windows and the lag for good */
        return LP_OK;
    }
    if (ts) {
        if (!l->f.first_ts || ts < l->f.first_ts)
            l->f.first_ts = ts;
        if (ts > l->f.last_ts)
            l->f.last_ts = ts;
    }
    switch (r->type) {
    case LP_REC_MARKER: return marker(l, &r->u.marker, name_of(ctx, r->u.marker.name));
    case LP_REC_NVML: nvml(l, &r->u.nvml); break;
    case LP_REC_PM_SAMPLE: pm(l, &r->u.pm); break;
    case LP_REC_DEVICE: {
        struct lp_live_device *d = device(l, r->u.device.id);
        /* a GPU is described twice (CUPTI's record, NVML's): each says what it knows */
        static const uint8_t no_uuid[16];
        if (d && r->u.device.mem_bandwidth_kbps)
            d->dram_peak_bps = r->u.device.mem_bandwidth_kbps * 1000u;
        if (d && memcmp(r->u.device.uuid, no_uuid, sizeof no_uuid)) {
            memcpy(d->uuid, r->u.device.uuid, sizeof d->uuid);
            d->has_uuid = 1;
        }
        break;
    }
    case LP_REC_LOSS:
        if (r->u.loss.source < sizeof l->f.lost / sizeof *l->f.lost) {
            l->f.lost[r->u.loss.source] += r->u.loss.count;
            l->f.lost_unknown += r->u.loss.count == 0;
        }
        break;
    default: break;
    }
    return LP_OK;
}

struct lp_live_facts lp_live_facts(const struct lp_live *l)
{
    struct lp_live_facts f = l->f;
    f.n_stages = l->n_stages;
    return f;
}

struct lp_live_window lp_live_window(const struct lp_live *l, unsigned seconds)
{
    struct lp_live_window w = {.energy_per_token_j = -1, .tensor_ratio = -1,
                               .dram_bytes_per_s = -1};
    if (!l->f.last_ts || seconds == 0)
        return w;
    if (seconds > LP_LIVE_BINS - 1)
        seconds = LP_LIVE_BINS - 1;
    int64_t last = (int64_t)(l->f.last_ts / 1000000000u) - 1; /* the latest whole second */
    int64_t first = (int64_t)(l->f.first_ts / 1000000000u);
    int64_t from = last - (int64_t)seconds + 1;
    if (from < first)
        from = first;
    if (last < from)
        return w;
    uint64_t tokens = 0, stage_tokens = 0, energy = 0, pm_ns = 0;
    double tensor = 0, dram = 0;
    for (int64_t s = from; s <= last; s++) {
        const struct lp_live_bin *b = &l->bins[(uint64_t)s % LP_LIVE_BINS];
        if (b->second != s)
            continue;
        tokens += b->tokens;
        stage_tokens += b->stage_tokens;
        energy += b->energy_mj;
        pm_ns += b->pm_ns;
        tensor += b->tensor_ns;
        dram += b->dram_bytes;
    }
    /* the first second counts from the first record: a run starts within it */
    double from_ns = (double)from * 1e9;
    if ((double)l->f.first_ts > from_ns)
        from_ns = (double)l->f.first_ts;
    w.seconds = ((double)(last + 1) * 1e9 - from_ns) * 1e-9;
    if (w.seconds <= 0)
        return w;
    w.tokens_source = l->f.convention ? 1 : stage_tokens ? 2 : 0;
    uint64_t tok = l->f.convention ? tokens : stage_tokens;
    w.tokens_per_s = (double)tok / w.seconds;
    if (tok && energy)
        w.energy_per_token_j = (double)energy * 1e-3 / (double)tok;
    if (pm_ns) { /* per sampled second: samples decoded late do not lower it */
        w.tensor_ratio = tensor / (double)pm_ns;
        w.dram_bytes_per_s = dram / ((double)pm_ns * 1e-9);
    }
    return w;
}
