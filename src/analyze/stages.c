/* Stages: NVTX ranges matched by stage rules (NAME=REGEX), their occurrences, and the stage
 * of every piece of GPU work. Work belongs to the range open on its launching thread when
 * its launching call began (launch correlation), not to a range it overlaps in time; only
 * work without a recorded launch call falls back to time. A stage range nested in another
 * (sam inside vision) is a sub-stage of the outer one: a note, never counted twice. */
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "run_internal.h"
#include "llmprof/sat.h"

static const char *const default_rules[] = {
    "encoder=^(vision_encoder|encoder)",
    "vision=^(vision|image_encoder|encode_image|get_image_features)", "sam=^sam", "clip=^clip",
    "projector=^(projector|multi_modal_projector|mm_projector)", "prefill=^prefill",
    "decode=^decode",
};

char *lp_stage_rules_regex(void)
{
    size_t n = sizeof default_rules / sizeof *default_rules, len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(default_rules[i]) + 3;
    char *re = malloc(len);
    if (!re)
        return NULL;
    re[0] = 0;
    for (size_t i = 0; i < n; i++) /* "(A)|(B)": each rule's regex, after its "NAME=" */
        strcat(strcat(strcat(strcat(re, i ? "|" : ""), "("), strchr(default_rules[i], '=') + 1),
               ")");
    return re;
}

static enum lp_stage_kind kind_of(const char *name)
{
    if (!strncasecmp(name, "prefill", 7))
        return LP_STAGE_KIND_PREFILL;
    if (!strncasecmp(name, "decode", 6))
        return LP_STAGE_KIND_DECODE;
    static const char *const vision[] = {"vision", "sam", "clip", "projector", "image",
                                         "encoder"};
    for (size_t i = 0; i < sizeof vision / sizeof *vision; i++)
        if (!strncasecmp(name, vision[i], strlen(vision[i])))
            return LP_STAGE_KIND_VISION;
    return LP_STAGE_KIND_OTHER;
}

const char *const *lp_stage_default_rules(size_t *n)
{
    *n = sizeof default_rules / sizeof *default_rules;
    return default_rules;
}

int64_t lp_stage_name_value(const char *name, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = name; (p = strstr(p, key)); p += kl) {
        if ((p == name || p[-1] == ' ' || p[-1] == ',') && p[kl] == '=') {
            char *end;
            long long v = strtoll(p + kl + 1, &end, 10);
            if (end != p + kl + 1 && v > 0)
                return v;
        }
    }
    return 0;
}

struct rules {
    regex_t *re;
    size_t n;
};

static int compile_rules(struct lp_run_ctx *c, struct rules *rs)
{
    const struct lp_run_options *o = &c->r->opt;
    const char *const *src = o->stage_rules ? o->stage_rules : default_rules;
    size_t n = o->stage_rules ? o->n_stage_rules : sizeof default_rules / sizeof *default_rules;
    if (n > LP_MAX_STAGES - 8) {
        snprintf(c->err, c->errlen, "%zu stage rules: at most %d", n, LP_MAX_STAGES - 8);
        return LP_ERR_ARG;
    }
    rs->re = calloc(n ? n : 1, sizeof *rs->re);
    c->rule_names = calloc(n ? n : 1, sizeof *c->rule_names);
    c->rule_stage = malloc((n ? n : 1) * sizeof *c->rule_stage);
    if (!rs->re || !c->rule_names || !c->rule_stage)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(src[i], '=');
        if (!eq || eq == src[i] || !eq[1]) {
            snprintf(c->err, c->errlen, "stage rule '%s': expected NAME=REGEX, e.g. "
                     "prefill='^prefill'", src[i]);
            return LP_ERR_ARG;
        }
        c->rule_names[i] = strndup(src[i], (size_t)(eq - src[i]));
        if (!c->rule_names[i])
            return LP_ERR_NOMEM;
        c->n_rules = i + 1;
        c->rule_stage[i] = -1;
        int e = regcomp(&rs->re[i], eq + 1, REG_EXTENDED | REG_ICASE | REG_NOSUB);
        if (e) {
            char msg[128];
            regerror(e, &rs->re[i], msg, sizeof msg);
            snprintf(c->err, c->errlen, "stage rule '%s': bad regular expression: %s", src[i],
                     msg);
            rs->n = i; /* this one was not compiled; its name is freed with the others */
            return LP_ERR_ARG;
        }
        rs->n = i + 1;
    }
    return LP_OK;
}

static void free_rules(struct rules *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        regfree(&rs->re[i]);
    free(rs->re);
}

static int add_stage(struct lp_run *r, const char *name, enum lp_stage_kind kind)
{
    if (r->n_stages >= LP_MAX_STAGES) /* the rules are bounded below it */
        return -1;
    struct lp_stage_report *s = realloc(r->stages, (r->n_stages + 1) * sizeof *s);
    if (!s)
        return -1;
    r->stages = s;
    s = &r->stages[r->n_stages];
    memset(s, 0, sizeof *s);
    if (!(s->name = strdup(name)))
        return -1;
    s->kind = kind;
    return (int)r->n_stages++;
}

/* Operator groups: range names up to the first ',' (PyTorch's emit_nvtx appends
 * "seq = N, op_id = M, sizes = ...") without key=value words; found through BY_NAME (a hash
 * of the group's name -> index + 1), as a trace can name every range apart. The group's
 * index, -2 out of memory. */
static int op_group(struct lp_run *r, struct lp_u64map *by_name, const char *name)
{
    char buf[256];
    size_t l = strcspn(name, ",");
    if (l >= sizeof buf)
        l = sizeof buf - 1;
    char cut[256];
    memcpy(cut, name, l);
    cut[l] = 0;
    lp_range_group_name(cut, buf, sizeof buf);
    if (!buf[0])
        snprintf(buf, sizeof buf, "%s", cut[0] ? cut : "(unnamed)");
    uint64_t h = 1469598103934665603ull;
    for (const char *p = buf; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    uint64_t *at = lp_u64map_at(by_name, h >> 1, NULL); /* UINT64_MAX: an empty slot */
    if (!at)
        return -2;
    if (*at && !strcmp(r->ops[*at - 1].name, buf))
        return (int)(*at - 1);
    for (size_t i = r->n_ops; *at && i-- > 0;) /* two names of one hash: one by one */
        if (!strcmp(r->ops[i].name, buf))
            return (int)i;
    if (r->n_ops >= 16 ? !(r->n_ops & (r->n_ops - 1)) : !r->n_ops) { /* doubled at 16, 32.. */
        struct lp_op_row *p = realloc(r->ops, (r->n_ops ? 2 * r->n_ops : 16) * sizeof *p);
        if (!p)
            return -2;
        r->ops = p;
    }
    memset(&r->ops[r->n_ops], 0, sizeof *r->ops);
    if (!(r->ops[r->n_ops].name = strdup(buf)))
        return -2;
    if (!*at)
        *at = r->n_ops + 1;
    return (int)r->n_ops++;
}

/* Occurrences by start, ties (two threads' ranges clipped to one window's start) in the
 * order they were made */
static int cmp_occ(const void *a, const void *b)
{
    const struct lp_occ *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->made > y->made) - (x->made < y->made);
}

/* What a range's name says, worked out once per name: ranges are many (one per operator,
 * step or request), their names fewer, and a name can be long */
struct name_facts {
    int64_t tokens, batch;        /* its tokens=N and batch=N words, 0 none */
    int32_t rule;                 /* the first stage rule it matches, -1 none */
    int32_t op;                   /* without a rule: its operator (r->ops), -1 not yet */
    uint8_t warmup;               /* it says warmup */
    uint8_t known;                /* the fields above are set */
};

static int name_facts(struct lp_run *r, const struct rules *rs, struct lp_u64map *ops,
                      const char *name, struct name_facts *f)
{
    if (f->known)
        return LP_OK;
    *f = (struct name_facts){.rule = -1, .op = -1, .known = 1,
                             .warmup = strcasestr(name, "warmup") != NULL};
    for (size_t k = 0; k < rs->n && f->rule < 0; k++)
        if (regexec(&rs->re[k], name, 0, NULL, 0) == 0)
            f->rule = (int32_t)k;
    if (f->rule < 0) {
        int op = op_group(r, ops, name);
        if (op < 0)
            return LP_ERR_NOMEM;
        f->op = op;
    } else {
        f->tokens = lp_stage_name_value(name, "tokens");
        f->batch = lp_stage_name_value(name, "batch");
    }
    return LP_OK;
}

/* Classifies every range (parents come before their children in r->ranges). The
 * occurrences grow as stage ranges are met: a trace of per-operator ranges has one range per
 * kernel or more, and few of them are stages. */
static int classify_ranges(struct lp_run_ctx *c, struct rules *rs)
{
    struct lp_run *r = c->r;
    const struct lp_trace *t = c->t;
    size_t n = r->ranges.n;
    c->ri = calloc(n ? n : 1, sizeof *c->ri);
    /* by name id; the last one for ids no string was defined for */
    struct name_facts *facts = calloc(t->n_strings + 1, sizeof *facts);
    struct lp_u64map ops = {0};
    if (!c->ri || !facts || lp_occ_reserve(c, 1) != LP_OK) {
        free(facts);
        return LP_ERR_NOMEM;
    }
    int rc = LP_OK;
    for (size_t i = 0; i < n && rc == LP_OK; i++) {
        const struct lp_range *g = &r->ranges.v[i];
        struct lp_range_info *x = &c->ri[i];
        const struct lp_range_info *p = g->parent >= 0 ? &c->ri[g->parent] : NULL;
        const char *name = lp_trace_str(t, g->name);
        struct name_facts *f = &facts[g->name < t->n_strings ? g->name : t->n_strings];
        if ((rc = name_facts(r, rs, &ops, name, f)) != LP_OK)
            break;
        x->occ = p ? p->occ : -1;
        x->sub = p ? p->sub : -1;
        x->rule = f->rule;
        x->op = -1;
        x->warmup = (p && p->warmup) || f->warmup;
        if (x->rule < 0) {
            int op = x->op = f->op;
            r->op_ranges++;
            r->ops[op].calls++;
            r->ops[op].cpu_ns = lp_sat_add(r->ops[op].cpu_ns, g->end - g->start);
        } else if (x->occ >= 0 && kind_of(c->rule_names[x->rule]) == LP_STAGE_KIND_VISION &&
                   kind_of(c->rule_names[c->occ[x->occ].stage]) == LP_STAGE_KIND_PREFILL) {
            /* vision inside a prefill (HF models run their vision tower inside the first
             * forward): an occurrence of its own, cut out of the prefill's time */
            if ((rc = lp_occ_reserve(c, c->n_occ + 1)) != LP_OK)
                break;
            struct lp_occ *o = &c->occ[c->n_occ];
            *o = (struct lp_occ){.start = g->start, .end = g->end, .range_end = g->end,
                                 .stage = x->rule, .warmup = x->warmup, .range = (int32_t)i,
                                 .request = -1, .carved_from = x->occ,
                                 .tokens = f->tokens, .batch = f->batch};
            x->occ = (int32_t)c->n_occ++;
            x->sub = -1;
        } else if (x->occ >= 0) {
            /* nested stage range: a sub-stage of the occurrence's stage */
            int outer = c->occ[x->occ].stage; /* still the rule index here */
            size_t s = 0;
            while (s < c->n_subs && !(c->subs[s].stage == outer && c->subs[s].rule == x->rule))
                s++;
            if (s == c->n_subs) {
                void *p2 = realloc(c->subs, (c->n_subs + 1) * sizeof *c->subs);
                if (!p2) {
                    rc = LP_ERR_NOMEM;
                    break;
                }
                c->subs = p2;
                c->subs[s].stage = outer;
                c->subs[s].rule = x->rule;
                c->n_subs++;
            }
            x->sub = (int32_t)s;
        } else {
            if ((rc = lp_occ_reserve(c, c->n_occ + 1)) != LP_OK)
                break;
            struct lp_occ *o = &c->occ[c->n_occ];
            *o = (struct lp_occ){.start = g->start, .end = g->end, .range_end = g->end,
                                 .stage = x->rule, .warmup = x->warmup, .range = (int32_t)i,
                                 .request = -1, .carved_from = -1,
                                 .tokens = f->tokens, .batch = f->batch};
            x->occ = (int32_t)c->n_occ++;
            x->sub = -1;
        }
    }
    free(facts);
    lp_u64map_free(&ops);
    if (rc != LP_OK)
        return rc;
    /* a prefill with vision cut out starts after its last vision range; the request still
     * starts at the prefill range's own start */
    for (size_t i = 0; i < c->n_occ; i++) {
        const struct lp_occ *v = &c->occ[i];
        if (v->carved_from < 0)
            continue;
        struct lp_occ *p = &c->occ[v->carved_from];
        if (!p->open_start)
            p->open_start = p->start;
        if (v->range_end > p->start)
            p->start = v->range_end;
    }
    return LP_OK;
}

/* No stage ranges but GEMM records: prefill and decode occurrences from the tokens in
 * flight, stated as inferred. Only stages that got occurrences are made. */
static int infer_stages(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    size_t first = c->n_occ; /* vision occurrences from ranges */
    int made = lp_run_infer_stages(c, 0, 1);
    if (made < 0)
        return LP_ERR_NOMEM;
    int has[2] = {0, 0}, index[2] = {-1, -1};
    for (size_t i = first; i < c->n_occ; i++)
        has[c->occ[i].stage] = 1;
    for (int k = 0; k < 2; k++)
        if (has[k] && (index[k] = add_stage(r, k ? "decode" : "prefill",
                                            k ? LP_STAGE_KIND_DECODE : LP_STAGE_KIND_PREFILL)) < 0)
            return LP_ERR_NOMEM;
    for (size_t i = first; i < c->n_occ; i++)
        c->occ[i].stage = index[c->occ[i].stage];
    if (made == 0)
        return LP_OK;
    r->stages_inferred = 1;
    return lp_run_note(r, LP_NOTE_STAGES_INFERRED, -1, first ? 1 : 0, 0, 0);
}

/* Whether every occurrence found so far is a vision stage's (hooks on a vision tower, with
 * no prefill or decode range): prefill and decode are then inferred around them. */
static int vision_only(const struct lp_run_ctx *c)
{
    for (size_t i = 0; i < c->n_occ; i++) {
        int s = c->occ[i].stage;
        if (s < 0 || c->r->stages[s].kind != LP_STAGE_KIND_VISION)
            return 0;
    }
    return 1;
}

int lp_run_warmup_stage(struct lp_run_ctx *c)
{
    if (c->warmup_stage < 0)
        c->warmup_stage = add_stage(c->r, "warmup", LP_STAGE_KIND_WARMUP);
    return c->warmup_stage;
}

/* run mode: the occurrence of work starting at T (one per capture window, else one) */
static int32_t run_window(const struct lp_run_ctx *c, uint64_t t)
{
    int64_t k = c->n_windows ? lp_run_window_of(c, t) : 0;
    return k < 0 ? 0 : (int32_t)k;
}

/* Stage reports: one per rule with occurrences (rule order), then warmup when named; the work
 * outside every stage and a warmup found later (requests.c) are appended when they appear;
 * or one stage for the whole run. Occurrences get their stage index. */
static int make_stages(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        int warm = o->warmup && !r->opt.keep_warmup;
        if (warm)
            continue;
        if (c->rule_stage[o->stage] < 0)
            c->rule_stage[o->stage] = 0; /* mark: has measured occurrences */
    }
    for (size_t k = 0; k < c->n_rules; k++) {
        int has = c->rule_stage[k] == 0;
        c->rule_stage[k] = -1;
        if (has) {
            int s = add_stage(r, c->rule_names[k], kind_of(c->rule_names[k]));
            if (s < 0)
                return LP_ERR_NOMEM;
            c->rule_stage[k] = s;
        }
    }
    for (size_t i = 0; i < c->n_occ; i++) {
        struct lp_occ *o = &c->occ[i];
        if (o->warmup && !r->opt.keep_warmup) {
            if ((o->stage = lp_run_warmup_stage(c)) < 0)
                return LP_ERR_NOMEM;
        } else {
            o->stage = c->rule_stage[o->stage];
        }
    }
    /* a serving loop's forwards mix prefill and decode: no stages to infer from shapes */
    if (c->t->n_gemms && vision_only(c) && r->serving.cause == LP_SERVING_CAUSE_NONE) {
        size_t first = c->n_occ;
        int rc = infer_stages(c);
        if (rc == LP_OK) /* inferred from GEMM calls, which are recorded outside windows too */
            rc = lp_run_windows_clip(c, first);
        if (rc)
            return rc;
    }
    if (c->n_occ == 0) {
        /* no stage ranges: the run is one stage and one occurrence */
        if (add_stage(r, "run", LP_STAGE_KIND_RUN) < 0)
            return LP_ERR_NOMEM;
        uint64_t a = c->n_work ? lp_work_start(c->t, &c->work[0]) : 0, b = 0;
        for (size_t i = 0; i < c->n_work; i++) {
            uint64_t end = lp_work_end(c->t, &c->work[i]);
            b = end > b ? end : b;
        }
        c->occ[0] = (struct lp_occ){.start = a, .end = b, .range_end = b, .stage = 0,
                                    .carved_from = -1, .range = -1, .request = -1};
        c->n_occ = 1;
        if (c->n_windows) {
            /* capture windows: one occurrence per window, to the end of its last work, so
             * the time between windows is in no occurrence */
            struct lp_occ *p = realloc(c->occ, c->n_windows * sizeof *p);
            if (!p)
                return LP_ERR_NOMEM;
            c->occ = p;
            c->occ_cap = c->n_occ = c->n_windows;
            for (size_t k = 0; k < c->n_windows; k++)
                c->occ[k] = (struct lp_occ){.start = c->windows[k].start,
                                            .end = c->windows[k].end, .stage = 0,
                                            .carved_from = -1, .range = -1, .request = -1};
            for (size_t i = 0; i < c->n_work; i++) {
                struct lp_occ *o = &c->occ[run_window(c, lp_work_start(c->t, &c->work[i]))];
                uint64_t end = lp_work_end(c->t, &c->work[i]);
                o->end = end > o->end ? end : o->end;
            }
            for (size_t k = 0; k < c->n_windows; k++)
                c->occ[k].range_end = c->occ[k].end;
        }
        int rc = lp_run_note(r, LP_NOTE_ONE_STAGE, -1, (int64_t)r->ranges.n, 0, 0);
        if (rc)
            return rc;
    }
    /* sub-stages become notes of their outer stage */
    for (size_t s = 0; s < c->n_subs; s++) {
        int outer = c->rule_stage[c->subs[s].stage];
        if (outer < 0)
            outer = c->warmup_stage;
        if (outer < 0)
            continue;
        struct lp_stage_report *st = &r->stages[outer];
        struct lp_substage *p = realloc(st->sub, (st->n_sub + 1) * sizeof *p);
        if (!p)
            return LP_ERR_NOMEM;
        st->sub = p;
        memset(&p[st->n_sub], 0, sizeof *p);
        if (!(p[st->n_sub].name = strdup(c->rule_names[c->subs[s].rule])))
            return LP_ERR_NOMEM;
        c->subs[s].stage = outer;
        c->subs[s].rule = (int)st->n_sub++;
    }
    return LP_OK;
}

static uint32_t work_correlation(const struct lp_trace *t, const struct lp_work *w)
{
    switch (lp_work_kind(w)) {
    case LP_OP_KERNEL: return t->kernels[w->index].correlation;
    case LP_OP_MEMCPY: return t->memcpys[w->index].correlation;
    default: return t->memsets[w->index].correlation;
    }
}

/* Work without a launch record: the latest occurrence that began before it. */
static int32_t occ_by_time(const struct lp_run_ctx *c, uint64_t ts)
{
    size_t n = lp_count_until(c->occ, c->n_occ, sizeof *c->occ, offsetof(struct lp_occ, start),
                              ts);
    return n ? (int32_t)(n - 1) : -1;
}

/* The occurrence whose span holds TS, or -1. */
static int32_t occ_holding(const struct lp_run_ctx *c, uint64_t ts)
{
    int32_t occ = occ_by_time(c, ts);
    return occ >= 0 && ts <= c->occ[occ].end ? occ : -1;
}

/* The occurrence host work at TS belongs to, given RANGE, the innermost range open on its
 * thread: the range's, or with inferred stages the one whose span holds TS. */
static int32_t occ_at(const struct lp_run_ctx *c, int32_t range, uint64_t ts)
{
    if (!lp_run_in_window(c, ts)) /* a call outside the windows: in no occurrence */
        return -1;
    if (!c->r->stages_inferred) {
        int32_t o = range >= 0 ? c->ri[range].occ : -1;
        /* a range split at capture windows: its part that holds TS */
        for (int32_t j = o + 1; o >= 0 && (size_t)j < c->n_occ && c->occ[j].start <= ts; j++)
            if (c->occ[j].range == c->occ[o].range && c->occ[j].part)
                o = j;
        return o;
    }
    return occ_holding(c, ts);
}

int32_t lp_run_occ_span_at(const struct lp_run_ctx *c, uint64_t ts)
{
    if (c->r->n_stages == 1 && c->r->stages[0].kind == LP_STAGE_KIND_RUN)
        return 0;
    return occ_holding(c, ts);
}

int32_t lp_run_occ_at(const struct lp_run_ctx *c, uint32_t thread, uint64_t ts)
{
    const struct lp_run *r = c->r;
    return r->n_stages == 1 && r->stages[0].kind == LP_STAGE_KIND_RUN
               ? run_window(c, ts)
               : occ_at(c, lp_ranges_at(&r->ranges, thread, ts), ts);
}


static int attribute_work(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    struct lp_corr_map m = {0};
    int rc = lp_corr_build(t, &m);
    if (rc)
        goto out;
    int run_mode = r->n_stages == 1 && r->stages[0].kind == LP_STAGE_KIND_RUN;
    size_t hint = 0;
    for (size_t i = 0; i < c->n_work; i++) {
        struct lp_work *w = &c->work[i];
        const struct lp_api_rec *a = lp_corr_find(t, &m, work_correlation(t, w));
        if (a) {
            w->call = (uint32_t)(a - t->apis);
            w->occ = occ_at(c, lp_work_range(c, w, &hint), a->start);
            r->attribution.by_launch++;
        } else {
            uint64_t start = lp_work_start(t, w);
            w->occ = run_mode ? run_window(c, start) : occ_by_time(c, start);
            r->attribution.by_time++;
        }
        if (run_mode)
            w->occ = run_window(c, lp_work_start(t, w));
        if (w->occ < 0) { /* its stage: the outside stage (lp_work_stage), made once */
            if (c->outside_stage < 0) {
                c->outside_stage = add_stage(r, "(outside stages)", LP_STAGE_KIND_OUTSIDE);
                if (c->outside_stage < 0) {
                    rc = LP_ERR_NOMEM;
                    goto out;
                }
            }
            r->attribution.outside++;
        }
    }
    if (r->attribution.by_time && !run_mode)
        rc = lp_run_note(r, LP_NOTE_WORK_BY_TIME, -1, (int64_t)r->attribution.by_time,
                         (int64_t)c->n_work, 0);
out:
    lp_corr_free(&m);
    return rc;
}

/* Per occurrence and per stage: GPU busy (union of work intervals), sub-stage totals and
 * the stage statistics. */
static int stage_stats(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    uint64_t *stage_end = calloc(r->n_stages, sizeof *stage_end);
    double *v = malloc((c->n_occ ? c->n_occ : 1) * sizeof *v);
    if (!stage_end || !v) {
        free(stage_end);
        free(v);
        return LP_ERR_NOMEM;
    }
    size_t hint = 0;
    for (size_t i = 0; i < c->n_work; i++) {
        const struct lp_work *w = &c->work[i];
        int stage = lp_work_stage(c, w);
        struct lp_stage_report *s = &r->stages[stage];
        uint64_t *e = &stage_end[stage];
        uint64_t start = lp_work_start(c->t, w), end = lp_work_end(c->t, w);
        if (start >= *e)
            s->busy_ns = lp_sat_add(s->busy_ns, end - start);
        else if (end > *e)
            s->busy_ns = lp_sat_add(s->busy_ns, end - *e);
        if (end > *e)
            *e = end;
        if (w->occ >= 0) {
            struct lp_occ *o = &c->occ[w->occ];
            if (start >= o->cur_end)
                o->busy = lp_sat_add(o->busy, end - start);
            else if (end > o->cur_end)
                o->busy = lp_sat_add(o->busy, end - o->cur_end);
            if (end > o->cur_end)
                o->cur_end = end;
        }
        int32_t rg = c->n_subs && w->occ >= 0 ? lp_work_range(c, w, &hint) : -1;
        if (rg >= 0 && c->ri[rg].sub >= 0 &&
            c->subs[c->ri[rg].sub].stage == c->occ[w->occ].stage) {
            int sub = c->ri[rg].sub;
            struct lp_substage *ss = &r->stages[c->subs[sub].stage].sub[c->subs[sub].rule];
            ss->gpu_ns = lp_sat_add(ss->gpu_ns, end - start);
        }
    }
    for (size_t i = 0; i < r->ranges.n; i++) {
        const struct lp_range_info *x = &c->ri[i];
        if (x->rule >= 0 && x->sub >= 0 && x->occ >= 0 &&
            c->subs[x->sub].stage == c->occ[x->occ].stage &&
            (r->ranges.v[i].parent < 0 || c->ri[r->ranges.v[i].parent].sub != x->sub)) {
            struct lp_substage *sub = &r->stages[c->subs[x->sub].stage].sub[c->subs[x->sub].rule];
            sub->count++;
            sub->wall_ns = lp_sat_add(sub->wall_ns, r->ranges.v[i].end - r->ranges.v[i].start);
        }
    }
    for (size_t s = 0; s < r->n_stages; s++) {
        struct lp_stage_report *st = &r->stages[s];
        size_t n = 0;
        for (size_t i = 0; i < c->n_occ; i++)
            if (c->occ[i].stage == (int)s)
                v[n++] = (double)(c->occ[i].end - c->occ[i].start);
        lp_stat_compute(&st->wall, v, n);
        st->occurrences = n;
        st->variable = n > 1 && st->wall.cv > 0.10;
        n = 0;
        for (size_t i = 0; i < c->n_occ; i++)
            if (c->occ[i].stage == (int)s)
                v[n++] = (double)c->occ[i].busy;
        lp_stat_compute(&st->busy, v, n);
        st->busy_share = st->wall.total > 0 ? (double)st->busy_ns / st->wall.total : 0;
    }
    free(stage_end);
    free(v);
    return LP_OK;
}

/* Stage spans for timelines: consecutive occurrences of one stage merged. */
static int stage_spans(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    r->spans = malloc((c->n_occ ? c->n_occ : 1) * sizeof *r->spans);
    r->range_stage = malloc((r->ranges.n ? r->ranges.n : 1) * sizeof *r->range_stage);
    if (!r->spans || !r->range_stage)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < r->ranges.n; i++)
        r->range_stage[i] = -1;
    for (size_t i = 0; i < c->n_occ; i++) {
        const struct lp_occ *o = &c->occ[i];
        if (o->range >= 0 && (size_t)o->range < r->ranges.n)
            r->range_stage[o->range] = o->stage;
        struct lp_span *last = r->n_spans ? &r->spans[r->n_spans - 1] : NULL;
        if (last && last->stage == o->stage && o->start <= last->end + (o->end - o->start)) {
            last->end = o->end > last->end ? o->end : last->end;
            continue;
        }
        r->spans[r->n_spans++] = (struct lp_span){o->start, o->end, o->stage};
    }
    return LP_OK;
}

/* A rule the user gave that matches none of a trace's ranges would leave its stage out without
 * a word (issue 46): refused, naming the trace's top-level ranges. A trace with no ranges at
 * all says so in its notes (LP_NOTE_ONE_STAGE) instead: several processes' traces share the
 * rules, and a helper process marks nothing. */
static int check_rules(struct lp_run_ctx *c)
{
    const struct lp_run *r = c->r;
    if (!r->opt.stage_rules || r->ranges.n == 0)
        return LP_OK;
    for (size_t k = 0; k < c->n_rules; k++) {
        size_t hits = 0;
        for (size_t i = 0; i < r->ranges.n && !hits; i++)
            hits += c->ri[i].rule == (int32_t)k;
        if (hits)
            continue;
        char names[160] = "";
        size_t o = 0, shown = 0;
        for (size_t i = 0; i < r->ranges.n && shown < 4; i++) {
            char g[64];
            if (r->ranges.v[i].depth != 0)
                continue;
            lp_range_group_name(lp_trace_str(c->t, r->ranges.v[i].name), g, sizeof g);
            if (!g[0] || strstr(names, g))
                continue;
            int w = snprintf(names + o, sizeof names - o, "%s'%s'", shown ? ", " : "", g);
            if (w < 0 || (size_t)w >= sizeof names - o)
                break;
            o += (size_t)w;
            shown++;
        }
        snprintf(c->err, c->errlen, "stage rule '%s' matches none of the trace's %zu NVTX "
                 "ranges (top-level names: %s): correct its expression, or go without it for "
                 "the default rules",
                 r->opt.stage_rules[k], r->ranges.n, names[0] ? names : "none");
        return LP_ERR_ARG;
    }
    return LP_OK;
}

int lp_run_stages(struct lp_run_ctx *c)
{
    struct rules rs = {0};
    int32_t *occ_new = NULL;
    int rc = compile_rules(c, &rs);
    if (rc == LP_OK)
        rc = classify_ranges(c, &rs);
    if (rc == LP_OK)
        rc = check_rules(c);
    if (rc == LP_OK)
        rc = lp_run_windows_clip(c, 0);
    if (rc == LP_OK)
        rc = make_stages(c);
    if (rc == LP_OK) {
        /* occurrences in time order; each range learns its occurrence's new index through
         * the range that opened it, which still holds the old one */
        for (size_t i = 0; i < c->n_occ; i++)
            c->occ[i].made = (uint32_t)i;
        qsort(c->occ, c->n_occ, sizeof *c->occ, cmp_occ);
        occ_new = malloc((c->n_occ ? c->n_occ : 1) * sizeof *occ_new);
        if (!occ_new)
            rc = LP_ERR_NOMEM;
    }
    if (rc == LP_OK) {
        for (size_t i = 0; i < c->n_occ; i++)
            if (c->occ[i].range >= 0 && !c->occ[i].part) /* the range names its first part */
                occ_new[c->ri[c->occ[i].range].occ] = (int32_t)i;
        for (size_t i = 0; i < c->r->ranges.n; i++)
            if (c->ri[i].occ >= 0)
                c->ri[i].occ = occ_new[c->ri[i].occ];
        rc = attribute_work(c);
    }
    free(occ_new);
    free_rules(&rs);
    return rc;
}

int lp_run_stage_stats(struct lp_run_ctx *c)
{
    int rc = stage_stats(c);
    return rc == LP_OK ? stage_spans(c) : rc;
}

void lp_run_stages_free(struct lp_run *r)
{
    free(r->capture.windows);
    for (size_t i = 0; i < r->n_stages; i++) {
        struct lp_stage_report *s = &r->stages[i];
        free(s->name);
        free(s->top.v);
        lp_dist_free(&s->step);
        for (size_t j = 0; j < s->n_sub; j++)
            free(s->sub[j].name);
        free(s->sub);
    }
    free(r->stages);
    free(r->spans);
    free(r->range_stage);
}
