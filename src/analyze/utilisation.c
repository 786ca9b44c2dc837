/* Tokens per stage and utilisation: the analytic FLOPs and bytes of `llmprof model` for the
 * measured token counts, over the measured time of the stage occurrences, against the peaks
 * of the recorded GPU. Token counts per occurrence come from steps.c (a flag wins, then
 * tokens= words in the range names, then GEMM shapes and the steps found). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "run_internal.h"

static int stage_tokens(struct lp_run_ctx *c, int s, double *v)
{
    struct lp_run *r = c->r;
    struct lp_stage_report *st = &r->stages[s];
    int64_t sum = 0, steps = 0;
    size_t with = 0, counted = 0, n_v = 0;
    for (size_t i = 0; i < c->n_occ; i++) {
        const struct lp_occ *o = &c->occ[i];
        if (o->stage != s)
            continue;
        /* a sum past int64 (counts from a crafted trace) is no count */
        if (o->n_tokens > 0 && !__builtin_add_overflow(sum, o->n_tokens, &sum)) {
            if (!with)
                st->tokens_source = o->tokens_source;
            with++;
        }
        if (o->steps > 0 && !__builtin_add_overflow(steps, o->steps, &steps)) {
            if (!counted)
                st->steps_source = o->steps_source;
            counted++;
        }
        for (uint32_t j = 0; j < o->n_step_ns; j++)
            v[n_v++] = c->step_ns[o->first_step + j];
    }
    st->batch = r->llm.batch;
    if (with && with == st->occurrences) {
        st->tokens = sum;
    } else {
        st->tokens_source = LP_TOKENS_NONE;
        if (with && lp_run_note(r, LP_NOTE_TOKENS_PARTIAL, s, (int64_t)with,
                                (int64_t)st->occurrences, 0))
            return LP_ERR_NOMEM;
    }
    if (st->kind == LP_STAGE_KIND_DECODE) {
        if (counted && counted == st->occurrences)
            st->steps = steps;
        else
            st->steps_source = LP_STEPS_NONE;
        if (lp_dist_compute(&st->step, v, n_v) != LP_OK)
            return LP_ERR_NOMEM;
    }
    if (st->tokens > 0 && st->wall.total > 0)
        st->tokens_per_s = (double)st->tokens / (st->wall.total / 1e9);
    if (st->tokens > 0 && st->energy_j > 0)
        st->j_per_token = st->energy_j / (double)st->tokens;
    return LP_OK;
}

static int first_stage(const struct lp_run *r, enum lp_stage_kind k)
{
    for (size_t i = 0; i < r->n_stages; i++)
        if (r->stages[i].kind == k && r->stages[i].occurrences > 0)
            return (int)i;
    return -1;
}

int lp_run_tokens(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    double *v = malloc((c->n_step_ns ? c->n_step_ns : 1) * sizeof *v);
    if (!v)
        return LP_ERR_NOMEM;
    int rc = LP_OK;
    for (size_t s = 0; s < r->n_stages && rc == LP_OK; s++)
        rc = stage_tokens(c, (int)s, v);
    free(v);
    struct lp_llm_metrics *m = &r->llm;
    int p = first_stage(r, LP_STAGE_KIND_PREFILL), d = first_stage(r, LP_STAGE_KIND_DECODE);
    if (p >= 0) {
        const struct lp_stage_report *st = &r->stages[p];
        m->prefill_tokens = st->tokens;
        m->prompt_tokens = st->tokens / (int64_t)st->occurrences;
        m->prompt_per_sequence = m->prompt_tokens / m->batch;
        m->prefill_source = st->tokens_source;
        m->prefill_tokens_per_s = st->tokens_per_s;
    }
    if (d >= 0) {
        const struct lp_stage_report *st = &r->stages[d];
        m->decode_tokens = st->tokens;
        m->decode_source = st->tokens_source;
        m->decode_tokens_per_s = st->tokens_per_s;
        m->decode_steps = st->steps;
        m->steps_source = st->steps_source;
    }
    return rc;
}

static void set_util(struct lp_stage_report *st, const struct lp_cost *per,
                     const struct lp_cost *modules, double steps, const struct lp_gpu *g,
                     enum lp_dtype dt)
{
    double secs = st->wall.total / 1e9;
    if (secs <= 0 || steps <= 0)
        return;
    st->has_util = 1;
    st->model_matmul_flops = per->matmul_flops;
    st->model_linear_flops = per->matmul_flops - modules[LP_MODULE_ATTN_CORE].matmul_flops;
    st->model_flops = lp_cost_flops(per);
    st->model_bytes = lp_cost_bytes(per);
    st->achieved_tflops = st->model_flops * steps / secs / 1e12;
    st->achieved_gbs = st->model_bytes * steps / secs / 1e9;
    st->mfu = g->tflops[dt] > 0 ? st->achieved_tflops / g->tflops[dt] : 0;
    st->mbu = g->mem_bw_gbs > 0 ? st->achieved_gbs / g->mem_bw_gbs : 0;
}

/* The tokens per measured request that went through the vision projector (GEMMs of its
 * shape, out x in, in vision stages). For DeepSeek-OCR-2 without a mode given, the mode whose
 * analytic projector work is those rows: the page alone (base) or with 2 to 9 crops. */
static void image_rows(struct lp_run_ctx *c, struct lp_workload *w)
{
    struct lp_run *r = c->r;
    const struct lp_model *m = r->opt.model;
    const struct lp_vision_spec *v = &m->vision;
    uint64_t rows = 0;
    for (size_t i = 0; c->gemm_occ && i < c->n_gemms; i++) {
        struct lp_gemm call = lp_run_gemm(c, i);
        const struct lp_gemm *g = &call;
        int32_t o = c->gemm_occ[i];
        if (o < 0 || g->m != (uint64_t)v->proj_out || g->k != (uint64_t)v->proj_in ||
            lp_occ_kind(c, &c->occ[o]) != LP_STAGE_KIND_VISION)
            continue;
        uint64_t b = g->batch ? g->batch : 1, x;
        if (__builtin_mul_overflow(g->n, b, &x) || __builtin_add_overflow(rows, x, &rows))
            return; /* a crafted trace */
    }
    if (!rows || !r->llm.requests)
        return;
    r->util.image_rows = (int64_t)(rows / r->llm.requests);
    if (v->kind != LP_VISION_KIND_DEEPSEEK_OCR2 || r->opt.vision_set)
        return;
    double want = 2.0 * (double)r->util.image_rows * (double)v->proj_in * (double)v->proj_out;
    for (int64_t crops = 0; crops <= 9; crops += crops ? 1 : 2) {
        struct lp_workload one = *w;
        struct lp_model_result res;
        char e[256];
        one.prompt = one.generated = 1;
        one.vision_mode = crops ? LP_VISION_MODE_GUNDAM : LP_VISION_MODE_BASE;
        one.tiles_w = crops ? crops : 1; /* the slots depend on the count alone */
        one.tiles_h = 1;
        if (lp_model_analyze(m, &one, &res, e, sizeof e) == LP_OK &&
            res.stage[LP_MODEL_STAGE_VISION][LP_MODULE_VISION_PROJ].matmul_flops == want) {
            w->vision_mode = one.vision_mode;
            w->tiles_w = one.tiles_w;
            w->tiles_h = 1;
            r->util.vision_crops = crops;
            r->util.vision_from_rows = 1;
            return;
        }
    }
}

/* The vision modules a vision stage's ranges run, by its name: sam, clip, encoder and
 * projector ranges their part; vision (image_encoder, ...) the whole tower, and the projector
 * too unless a projector stage was measured apart. */
static unsigned vision_modules(const struct lp_run *r, const char *name)
{
    static const struct {
        const char *prefix;
        unsigned mods;
    } parts[] = {{"sam", 1u << LP_MODULE_VISION_SAM},
                 {"clip", 1u << LP_MODULE_VISION_CLIP},
                 {"vision_encoder", 1u << LP_MODULE_VISION_ENCODER},
                 {"encoder", 1u << LP_MODULE_VISION_ENCODER},
                 {"projector", 1u << LP_MODULE_VISION_PROJ}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strncasecmp(name, parts[i].prefix, strlen(parts[i].prefix)))
            return parts[i].mods;
    unsigned all = 1u << LP_MODULE_VISION_SAM | 1u << LP_MODULE_VISION_CLIP |
                   1u << LP_MODULE_VISION_ENCODER;
    for (size_t s = 0; s < r->n_stages; s++)
        if (r->stages[s].kind == LP_STAGE_KIND_VISION && r->stages[s].occurrences &&
            !strncasecmp(r->stages[s].name, "projector", 9))
            return all;
    return all | 1u << LP_MODULE_VISION_PROJ;
}

/* Each measured vision stage against the modules it runs: the model's cost per request
 * spread over the stage's occurrences (a page and its crops may take two). */
static void vision_util(struct lp_run *r, const struct lp_model_result *res)
{
    double requests = (double)r->llm.requests;
    for (size_t s = 0; s < r->n_stages && requests > 0; s++) {
        struct lp_stage_report *st = &r->stages[s];
        if (st->kind != LP_STAGE_KIND_VISION || !st->occurrences)
            continue;
        unsigned mods = vision_modules(r, st->name);
        struct lp_cost per = {0}, by_mod[LP_MODULE_COUNT];
        memset(by_mod, 0, sizeof by_mod);
        double k = requests / (double)st->occurrences;
        for (int mod = 0; mod < LP_MODULE_COUNT; mod++) {
            if (!(mods >> mod & 1))
                continue;
            const struct lp_cost *c = &res->stage[LP_MODEL_STAGE_VISION][mod];
            struct lp_cost *d = &by_mod[mod];
            d->matmul_flops = k * c->matmul_flops;
            d->other_flops = k * c->other_flops;
            d->weight_bytes = k * c->weight_bytes;
            d->act_bytes = k * c->act_bytes;
            per.matmul_flops += d->matmul_flops;
            per.other_flops += d->other_flops;
            per.weight_bytes += d->weight_bytes;
            per.act_bytes += d->act_bytes;
        }
        if (lp_cost_flops(&per) > 0)
            set_util(st, &per, by_mod, (double)st->occurrences, &r->util.gpu, r->util.dtype);
    }
}

/* A figure past the GPU's peak cannot be: the model's FLOPs, or bytes it must move at least,
 * over the measured time. The workload (a token or batch flag) or the model is not the run's:
 * MFU and MBU are withheld, and the largest value found is kept to say so. */
static void over_peak(struct lp_run *r)
{
    double worst = 1;
    int what = -2, bytes = 0;
    for (size_t s = 0; s < r->n_stages; s++) {
        const struct lp_stage_report *st = &r->stages[s];
        if (!st->has_util)
            continue;
        if (st->mfu > worst) {
            worst = st->mfu;
            what = (int)s;
            bytes = 0;
        }
        if (st->mbu > worst) {
            worst = st->mbu;
            what = (int)s;
            bytes = 1;
        }
    }
    if (r->util.mfu > worst || r->util.mbu > worst) {
        bytes = r->util.mbu > r->util.mfu;
        worst = bytes ? r->util.mbu : r->util.mfu;
        what = -1;
    }
    if (what == -2)
        return;
    r->util.over = worst;
    r->util.over_what = what;
    r->util.over_bytes = bytes;
    r->util.status = LP_UTIL_OVER_PEAK;
    r->util.has = 0;
    /* the token rates made from a flag's count go with it (a rate the GPU cannot reach) */
    struct lp_llm_metrics *m = &r->llm;
    int batch_given = m->batch_source == LP_TOKENS_FLAG;
    if (m->decode_source == LP_TOKENS_FLAG || batch_given)
        m->decode_tokens_per_s = 0;
    if (m->prefill_source == LP_TOKENS_FLAG)
        m->prefill_tokens_per_s = 0;
    for (size_t s = 0; s < r->n_stages; s++) {
        struct lp_stage_report *st = &r->stages[s];
        st->has_util = 0;
        if (st->tokens_source == LP_TOKENS_FLAG ||
            (batch_given && st->kind == LP_STAGE_KIND_DECODE))
            st->tokens_per_s = 0;
    }
}

/* The recorded GPU's row of the hardware table (or --gpu's), with the overrides; the run's
 * dtype is W's activation dtype. A GPU named that is not the recorded one (both in the table,
 * different rows) is said in a note: its peaks make the MFU and MBU (issue 46). */
static int find_gpu(struct lp_run_ctx *c, const struct lp_workload *w)
{
    struct lp_run *r = c->r;
    const struct lp_run_options *o = &r->opt;
    const struct lp_gpu *g = NULL;
    const char *dev = c->t->n_devices ? lp_trace_str(c->t, c->t->devices[0].name) : "";
    if (o->gpus)
        g = lp_gpu_find(o->gpus, o->gpu_name ? o->gpu_name : dev);
    const struct lp_gpu *recorded = o->gpus && dev[0] ? lp_gpu_find(o->gpus, dev) : NULL;
    int other = o->gpu_name && g && recorded && g != recorded;
    if (g)
        r->util.gpu = *g;
    else
        snprintf(r->util.gpu.name, sizeof r->util.gpu.name, "%s", o->gpu_name ? o->gpu_name : dev);
    r->util.dtype = w->activations;
    lp_gpu_override(&r->util.gpu, r->util.dtype, o->peak_tflops, o->mem_bw_gbs);
    return other ? lp_run_note(r, LP_NOTE_GPU_GIVEN, -1, 0, 0, 0) : LP_OK;
}

/* The model given against the recorded GEMMs (issue 46): its hidden size should be the k of
 * many linear calls (q/k/v, gate/up, the router read the hidden state), and the largest
 * weight, the lm_head, vocabulary x hidden (a tensor-parallel shard of the vocabulary too). A
 * config of another model (hidden 4096 for a 2048-wide trace) fits neither. Traces without
 * three linear GEMM calls are not checked. */
static int check_model(struct lp_run_ctx *c, const struct lp_model *m)
{
    struct lp_run *r = c->r;
    size_t calls = 0, reading = 0;
    struct lp_gemm big = {0};
    for (size_t i = 0; i < c->n_gemms; i++) {
        struct lp_gemm g = lp_run_gemm(c, i);
        if (g.status || g.batch != 1 || !g.m || !g.n || !g.k)
            continue;
        /* the first counted, then the largest exactly, in any order */
        if (!calls++ || lp_gemm_weight_cmp(&g, &big) > 0)
            big = g;
        reading += (int64_t)g.k == m->hidden;
    }
    if (calls < 3 || m->hidden <= 0 || m->vocab <= 0)
        return LP_OK;
    double share = (double)reading / (double)calls;
    int64_t bk = (int64_t)big.k, bm = (int64_t)big.m;
    int vocab_fits = bm == m->vocab || (bm < m->vocab && m->vocab % bm == 0 &&
                                        m->vocab / bm <= 64);
    int misfit = share < 0.05 || (bk == m->hidden && bm > m->hidden && !vocab_fits);
    if (!misfit)
        return LP_OK;
    r->util.model_misfit = 1;
    return lp_run_note(r, LP_NOTE_MODEL_MISFIT, -1, bk, bm, share);
}

int lp_run_utilisation(struct lp_run_ctx *c)
{
    struct lp_run *r = c->r;
    const struct lp_run_options *o = &r->opt;
    struct lp_workload w;
    if (o->workload)
        w = *o->workload;
    else
        lp_workload_defaults(&w);
    int rc = find_gpu(c, &w);
    if (rc != LP_OK)
        return rc;
    r->util.workload = w;
    if (!o->model) {
        r->util.status = LP_UTIL_NO_MODEL;
        return LP_OK;
    }
    if ((rc = check_model(c, o->model)) != LP_OK)
        return rc;
    if (r->util.gpu.tflops[r->util.dtype] <= 0 || r->util.gpu.mem_bw_gbs <= 0) {
        r->util.status = LP_UTIL_NO_PEAK;
        return LP_OK;
    }
    int p = first_stage(r, LP_STAGE_KIND_PREFILL), d = first_stage(r, LP_STAGE_KIND_DECODE),
        v = first_stage(r, LP_STAGE_KIND_VISION);
    const struct lp_llm_metrics *m = &r->llm;
    if (p < 0 || r->stages[p].tokens <= 0) {
        r->util.status = LP_UTIL_NO_PREFILL;
        return LP_OK;
    }
    const struct lp_stage_report *ps = &r->stages[p];
    w.batch = m->batch;
    w.prompt = ps->tokens / (int64_t)ps->occurrences / m->batch;
    if (w.prompt <= 0)
        w.prompt = 1;
    /* the measured prompt holds the image slots: the model's text prompt is the rest. Without
     * a measured vision stage the images are not modelled (their work, if any, is unnamed). */
    if (o->model->vision.kind == LP_VISION_KIND_NONE || v < 0)
        w.vision_mode = LP_VISION_MODE_NONE;
    if (w.vision_mode != LP_VISION_MODE_NONE)
        image_rows(c, &w);
    r->util.vision_mode = w.vision_mode;
    if (w.vision_mode != LP_VISION_MODE_NONE) {
        struct lp_workload one = w;
        struct lp_model_result slots;
        one.prompt = 1;
        one.generated = 1;
        if (lp_model_analyze(o->model, &one, &slots, r->util.error, sizeof r->util.error) !=
            LP_OK) {
            r->util.status = LP_UTIL_MODEL_REFUSED;
            return LP_OK;
        }
        r->util.vision_tokens = slots.vision_tokens;
        r->util.text_tokens = w.prompt - slots.vision_tokens;
        if (r->util.text_tokens < 0) {
            r->util.workload = w;
            r->util.status = LP_UTIL_PROMPT_UNDER_SLOTS;
            return LP_OK;
        }
        w.prompt = r->util.text_tokens > 0 ? r->util.text_tokens : 1;
    }
    if (!o->prefill_logits_set && m->prefill_logits)
        w.prefill_logits_all = m->prefill_logits == 2;
    /* the prefill yields the first token; each decode step one more */
    double steps = d >= 0 ? (double)r->stages[d].steps : 0;
    double steps_per_request = steps / (double)ps->occurrences;
    /* past the model's bound the analysis refuses it; the cast would be undefined */
    w.generated = steps_per_request < (double)LP_MODEL_MAX_TOKENS
                      ? (int64_t)(steps_per_request + 0.5) + 1
                      : LP_MODEL_MAX_TOKENS + 1;
    struct lp_model_result res;
    r->util.workload = w;
    if (lp_model_analyze(o->model, &w, &res, r->util.error, sizeof r->util.error) != LP_OK) {
        r->util.status = LP_UTIL_MODEL_REFUSED;
        return LP_OK;
    }
    r->util.has = 1;
    set_util(&r->stages[p], &res.total[LP_MODEL_STAGE_PREFILL], res.stage[LP_MODEL_STAGE_PREFILL],
             (double)ps->occurrences, &r->util.gpu, r->util.dtype);
    if (d >= 0 && steps > 0)
        set_util(&r->stages[d], &res.total[LP_MODEL_STAGE_DECODE_STEP],
                 res.stage[LP_MODEL_STAGE_DECODE_STEP], steps, &r->util.gpu, r->util.dtype);
    if (res.vision_tokens > 0)
        vision_util(r, &res);
    const struct lp_vision_spec *vs = &o->model->vision;
    double projected = res.stage[LP_MODEL_STAGE_VISION][LP_MODULE_VISION_PROJ].matmul_flops /
                       (2.0 * (double)vs->proj_in * (double)vs->proj_out);
    if (r->util.image_rows > 0 && res.vision_tokens > 0 && projected != (double)r->util.image_rows)
        (void)lp_run_note(r, LP_NOTE_VISION_ROWS, -1, r->util.image_rows, 0, projected);
    /* the request: TTFT plus the decode steps at the measured TPOT (medians) */
    /* a decode whose steps are unknown leaves the request unknown (its TTFT is not all of it) */
    int decode_unknown = d >= 0 && r->stages[d].occurrences && steps <= 0;
    r->util.request_s = decode_unknown ? 0
                                  : m->ttft_s + (m->tpot_s > 0 ? steps_per_request * m->tpot_s : 0);
    r->util.request_flops = lp_cost_flops(&res.total[LP_MODEL_STAGE_REQUEST]);
    r->util.request_bytes = lp_cost_bytes(&res.total[LP_MODEL_STAGE_REQUEST]);
    if (r->util.request_s > 0) {
        r->util.request_tflops = r->util.request_flops / r->util.request_s / 1e12;
        r->util.request_gbs = r->util.request_bytes / r->util.request_s / 1e9;
        r->util.mfu =
            r->util.request_flops / r->util.request_s / 1e12 / r->util.gpu.tflops[r->util.dtype];
        r->util.mbu = r->util.request_bytes / r->util.request_s / 1e9 / r->util.gpu.mem_bw_gbs;
    }
    r->util.decode_context = res.decode_context;
    r->util.logits_source = o->prefill_logits_set ? LP_LOGITS_GIVEN
                            : m->prefill_logits   ? LP_LOGITS_LM_HEAD_SHAPE
                                                  : LP_LOGITS_ASSUMED;
    over_peak(r);
    return LP_OK;
}
