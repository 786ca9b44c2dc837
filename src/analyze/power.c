/* Power from NVML samples: run and stage means and peaks, energy per stage from the energy
 * counter (or power x time where the counter is missing) interpolated at the edges of each
 * occurrence, clocks over time and the share of samples under each clock-event reason. */
#include <math.h>
#include <string.h>

#include "run_internal.h"
#include "llmprof/sat.h"

#define MAX_POINTS 1000

/* the GPU with the most samples: the one the program used, on a one-GPU process */
/* The GPU whose samples count: the one the kernels ran on when it was sampled (a process
 * samples every visible GPU until it runs work), else the most sampled. */
static int busiest_device(const struct lp_trace *t)
{
    int kd = lp_kernel_device(t);
    for (size_t i = 0; kd >= 0 && i < t->n_nvml; i++)
        if (t->nvml[i].device == (uint32_t)kd)
            return kd;
    size_t count[64] = {0};
    for (size_t i = 0; i < t->n_nvml; i++)
        if (t->nvml[i].device < 64)
            count[t->nvml[i].device]++;
    int best = -1;
    for (int d = 0; d < 64; d++)
        if (count[d] && (best < 0 || count[d] > count[best]))
            best = d;
    return best;
}

/* energy (J) at time TS by linear interpolation in the cumulative series; NaN outside */
static double energy_at(const uint64_t *ts, const double *cum, size_t n, uint64_t at)
{
    if (n < 2 || at < ts[0] || at > ts[n - 1])
        return NAN;
    size_t lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] <= at)
            lo = mid;
        else
            hi = mid;
    }
    double f = ts[hi] > ts[lo] ? (double)(at - ts[lo]) / (double)(ts[hi] - ts[lo]) : 0;
    return cum[lo] + f * (cum[hi] - cum[lo]);
}

/* NVML refreshes its readings less often than we may sample (every 100 ms on H200 where
 * samples come every 50 ms): the median time between changes is the real resolution.
 * TMP holds N pairs. */
static uint64_t update_period(const struct lp_nvml_sample **s, const uint64_t *ts, size_t n,
                              int counter, struct lp_kv *tmp)
{
    size_t m = 0;
    uint64_t last = 0;
    for (size_t i = 1; i < n; i++) {
        int changed = counter ? s[i]->energy_mj != s[i - 1]->energy_mj
                              : s[i]->power_mw != s[i - 1]->power_mw;
        if (!changed)
            continue;
        if (last)
            tmp[m++] = (struct lp_kv){ts[i] - last, 0};
        last = ts[i];
    }
    if (m == 0)
        return 0;
    lp_sort_kv(tmp, tmp + m, m);
    return tmp[m / 2].key;
}

/* One device's samples in time order, with the cumulative energy at each. */
struct series {
    const struct lp_nvml_sample **s;
    uint64_t *ts;
    double *cum;                  /* J since the first sample */
    size_t n;
    int counter;                  /* every sample has the energy counter */
};

/* The run's means, peaks and clock-event shares, and the cumulative energy: the counter
 * when every sample has it, else trapezoids of power. */
static void run_totals(struct lp_run *r, struct series *x)
{
    const struct lp_nvml_sample **s = x->s;
    size_t n = x->n, n_power = 0, throttle[LP_THROTTLE_BITS] = {0}, n_events = 0;
    double power_sum = 0;
    x->counter = 1;
    for (size_t i = 0; i < n; i++) {
        x->counter &= (s[i]->valid & LP_NVML_FIELD_ENERGY) != 0;
        if (s[i]->valid & LP_NVML_FIELD_POWER) {
            double w = s[i]->power_mw / 1000.0;
            power_sum += w;
            n_power++;
            if (w > r->power.peak_w)
                r->power.peak_w = w;
        }
        r->power.averaged |= (s[i]->valid & LP_NVML_FIELD_POWER_AVERAGED) != 0;
        if (s[i]->valid & LP_NVML_FIELD_CLOCK_EVENTS) {
            n_events++;
            for (int b = 0; b < LP_THROTTLE_BITS - 1; b++)
                throttle[b] += (s[i]->clock_events >> b) & 1;
            throttle[LP_THROTTLE_BITS - 1] += (s[i]->clock_events >> (LP_THROTTLE_BITS - 1)) != 0;
        }
    }
    r->power.samples = n;
    r->power.mean_w = n_power ? power_sum / (double)n_power : 0;
    for (int b = 0; b < LP_THROTTLE_BITS; b++)
        r->power.throttle_share[b] = n_events ? (double)throttle[b] / (double)n_events : 0;
    /* the counter's steps summed: a counter that goes back (the driver reloaded) adds
     * nothing for that step, where the difference to the first sample would wrap */
    uint64_t mj = 0;
    for (size_t i = 0; i < n; i++) {
        if (x->counter) {
            if (i > 0 && s[i]->energy_mj > s[i - 1]->energy_mj)
                mj = lp_sat_add_u64(mj, s[i]->energy_mj - s[i - 1]->energy_mj);
            x->cum[i] = (double)mj / 1000.0;
        } else if (i == 0) {
            x->cum[i] = 0;
        } else {
            x->cum[i] = x->cum[i - 1] + ((double)s[i]->power_mw + s[i - 1]->power_mw) / 2000.0 *
                                            (double)(x->ts[i] - x->ts[i - 1]) / 1e9;
        }
    }
    r->power.energy_j = n > 1 ? x->cum[n - 1] : 0;
}

/* Per stage: energy over the occurrences the samples bracket, peaks of the samples inside. */
static int stage_power(struct lp_run_ctx *c, const struct series *x)
{
    struct lp_run *r = c->r;
    const uint64_t *ts = x->ts;
    size_t n = x->n;
    double *covered = calloc(r->n_stages, sizeof *covered);
    if (!covered)
        return LP_ERR_NOMEM;
    for (size_t o = 0; o < c->n_occ; o++) {
        const struct lp_occ *oc = &c->occ[o];
        struct lp_stage_report *st = &r->stages[oc->stage];
        double e = energy_at(ts, x->cum, n, oc->end) - energy_at(ts, x->cum, n, oc->start);
        if (!isnan(e) && oc->end > oc->start) {
            st->energy_j += e;
            covered[oc->stage] += (double)(oc->end - oc->start) / 1e9;
        }
        /* samples inside the occurrence */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ts[mid] < oc->start)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < n && ts[i] <= oc->end; i++) {
            const struct lp_nvml_sample *sm = x->s[i];
            st->nvml_samples++;
            if ((sm->valid & LP_NVML_FIELD_POWER) && sm->power_mw / 1000.0 > st->power_peak_w)
                st->power_peak_w = sm->power_mw / 1000.0;
            if ((sm->valid & LP_NVML_FIELD_MEM_USED) && sm->mem_used > st->peak_nvml_used_bytes)
                st->peak_nvml_used_bytes = lp_sat_clamp(sm->mem_used);
        }
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        struct lp_stage_report *st = &r->stages[i];
        st->energy_from_counter = x->counter;
        st->power_coarse = st->wall.total < 2.0 * (double)r->power.update_ns;
        if (covered[i] > 0) {
            st->power_mean_w = st->energy_j / covered[i];
            /* occurrences outside the sampled span get the mean power of the covered ones */
            st->energy_j = st->power_mean_w * st->wall.total / 1e9;
        }
    }
    free(covered);
    return LP_OK;
}

/* Capture windows: energy over each window the samples bracket, their sum and mean power. */
static int window_power(struct lp_run *r, const struct series *x)
{
    struct lp_capture_facts *cf = &r->capture;
    if (!cf->n_windows)
        return LP_OK;
    cf->window_energy_j = malloc(cf->n_windows * sizeof *cf->window_energy_j);
    if (!cf->window_energy_j)
        return LP_ERR_NOMEM;
    double covered = 0;
    for (size_t i = 0; i < cf->n_windows; i++) {
        const struct lp_window *w = &cf->windows[i];
        double e = energy_at(x->ts, x->cum, x->n, w->end) -
                   energy_at(x->ts, x->cum, x->n, w->start);
        cf->window_energy_j[i] = e;
        if (isnan(e) || w->end < w->start)
            continue;
        cf->energy_j += e;
        covered += (double)(w->end - w->start) / 1e9;
        cf->n_energy++;
    }
    cf->power_mean_w = covered > 0 ? cf->energy_j / covered : 0;
    return LP_OK;
}

/* The series for charts: at most MAX_POINTS samples, evenly strided. */
static int chart_points(struct lp_run *r, const struct series *x)
{
    size_t n = x->n, stride = n > MAX_POINTS ? (n + MAX_POINTS - 1) / MAX_POINTS : 1;
    r->power.points = malloc(((n + stride - 1) / stride + 1) * sizeof *r->power.points);
    if (!r->power.points)
        return LP_ERR_NOMEM;
    for (size_t i = 0; i < n; i += stride) {
        const struct lp_nvml_sample *s = x->s[i];
        r->power.points[r->power.n_points++] = (struct lp_power_point){
            .t = s->timestamp,
            .power_w = (s->valid & LP_NVML_FIELD_POWER) ? (float)(s->power_mw / 1000.0) : NAN,
            .sm_mhz = (s->valid & LP_NVML_FIELD_SM_CLOCK) ? (float)s->sm_mhz : NAN,
            .mem_mhz = (s->valid & LP_NVML_FIELD_MEM_CLOCK) ? (float)s->mem_mhz : NAN,
            .util = (s->valid & LP_NVML_FIELD_UTIL) ? (float)s->util_gpu : NAN,
            .temp_c = (s->valid & LP_NVML_FIELD_TEMP) ? (float)s->temp_c : NAN};
    }
    return LP_OK;
}

int lp_run_power(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    int dev = busiest_device(t);
    r->power.device = dev;
    if (dev < 0)
        return LP_OK;
    struct series x = {0};
    for (size_t i = 0; i < t->n_nvml; i++)
        x.n += t->nvml[i].device == (uint32_t)dev;
    struct lp_kv *kv = malloc(2 * x.n * sizeof *kv);
    x.ts = malloc(x.n * sizeof *x.ts);
    x.cum = malloc(x.n * sizeof *x.cum);
    x.s = malloc(x.n * sizeof *x.s);
    int rc = LP_ERR_NOMEM;
    if (kv && x.ts && x.cum && x.s) {
        size_t k = 0;
        for (size_t i = 0; i < t->n_nvml; i++)
            if (t->nvml[i].device == (uint32_t)dev)
                kv[k++] = (struct lp_kv){t->nvml[i].timestamp, i};
        lp_sort_kv(kv, kv + x.n, x.n);
        for (size_t i = 0; i < x.n; i++) {
            x.s[i] = &t->nvml[kv[i].val];
            x.ts[i] = x.s[i]->timestamp;
        }
        run_totals(r, &x);
        r->power.update_ns = update_period(x.s, x.ts, x.n, x.counter, kv);
        rc = stage_power(c, &x);
        if (rc == LP_OK)
            rc = window_power(r, &x);
        if (rc == LP_OK)
            rc = chart_points(r, &x);
    }
    free(kv);
    free(x.ts);
    free(x.cum);
    free(x.s);
    return rc;
}

void lp_run_power_free(struct lp_run *r)
{
    free(r->power.points);
    free(r->capture.window_energy_j);
}
