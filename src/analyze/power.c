/* Power from NVML samples: run and stage means and peaks, energy per stage from the energy
 * counter (or power x time where the counter is missing) interpolated at the edges of each
 * occurrence, clocks over time and the share of samples under each clock-event reason. */
#include <math.h>
#include <string.h>

#include "run_internal.h"

#define MAX_POINTS 1000

/* the GPU with the most samples: the one the program used, on a one-GPU process */
static int busiest_device(const struct lp_trace *t)
{
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

int lp_run_power(struct lp_run_ctx *c)
{
    const struct lp_trace *t = c->t;
    struct lp_run *r = c->r;
    int dev = busiest_device(t);
    r->nvml_device = dev;
    if (dev < 0)
        return LP_OK;
    size_t n = 0;
    for (size_t i = 0; i < t->n_nvml; i++)
        n += t->nvml[i].device == (uint32_t)dev;
    struct lp_kv *kv = malloc(2 * n * sizeof *kv);
    uint64_t *ts = malloc(n * sizeof *ts);
    double *cum = malloc(n * sizeof *cum);
    const struct lp_nvml_sample **s = malloc(n * sizeof *s);
    int rc = LP_ERR_NOMEM;
    if (!kv || !ts || !cum || !s)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < t->n_nvml; i++)
        if (t->nvml[i].device == (uint32_t)dev)
            kv[k++] = (struct lp_kv){t->nvml[i].timestamp, i};
    lp_sort_kv(kv, kv + n, n);
    int counter = 1;
    size_t n_power = 0, throttle[LP_THROTTLE_BITS] = {0}, n_events = 0;
    double power_sum = 0;
    for (size_t i = 0; i < n; i++) {
        s[i] = &t->nvml[kv[i].val];
        ts[i] = s[i]->timestamp;
        counter &= (s[i]->valid & LP_NVML_ENERGY) != 0;
        if (s[i]->valid & LP_NVML_POWER) {
            double w = s[i]->power_mw / 1000.0;
            power_sum += w;
            n_power++;
            if (w > r->power_peak_w)
                r->power_peak_w = w;
        }
        r->power_averaged |= (s[i]->valid & LP_NVML_POWER_AVERAGED) != 0;
        if (s[i]->valid & LP_NVML_CLOCK_EVENTS) {
            n_events++;
            for (int b = 0; b < LP_THROTTLE_BITS - 1; b++)
                throttle[b] += (s[i]->clock_events >> b) & 1;
            throttle[LP_THROTTLE_BITS - 1] += (s[i]->clock_events >> (LP_THROTTLE_BITS - 1)) != 0;
        }
    }
    r->nvml_samples = n;
    r->power_mean_w = n_power ? power_sum / (double)n_power : 0;
    for (int b = 0; b < LP_THROTTLE_BITS; b++)
        r->throttle_share[b] = n_events ? (double)throttle[b] / (double)n_events : 0;
    /* cumulative energy: the counter when every sample has it, else trapezoids of power */
    for (size_t i = 0; i < n; i++) {
        if (counter)
            cum[i] = (double)(s[i]->energy_mj - s[0]->energy_mj) / 1000.0;
        else if (i == 0)
            cum[i] = 0;
        else
            cum[i] = cum[i - 1] + (s[i]->power_mw + s[i - 1]->power_mw) / 2000.0 *
                                      (double)(ts[i] - ts[i - 1]) / 1e9;
    }
    r->energy_j = n > 1 ? cum[n - 1] : 0;
    r->nvml_update_ns = update_period(s, ts, n, counter, kv);
    /* per stage: energy over the occurrences the samples bracket */
    double *covered = calloc(r->n_stages, sizeof *covered);
    if (!covered)
        goto out;
    for (size_t o = 0; o < c->n_occ; o++) {
        const struct lp_occ *x = &c->occ[o];
        struct lp_stage_report *st = &r->stages[x->stage];
        double e = energy_at(ts, cum, n, x->end) - energy_at(ts, cum, n, x->start);
        if (!isnan(e)) {
            st->energy_j += e;
            covered[x->stage] += (double)(x->end - x->start) / 1e9;
        }
        /* samples inside the occurrence */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ts[mid] < x->start)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < n && ts[i] <= x->end; i++) {
            st->nvml_samples++;
            if ((s[i]->valid & LP_NVML_POWER) && s[i]->power_mw / 1000.0 > st->power_peak_w)
                st->power_peak_w = s[i]->power_mw / 1000.0;
            if ((s[i]->valid & LP_NVML_MEM_USED) && s[i]->mem_used > st->peak_nvml_used_bytes)
                st->peak_nvml_used_bytes = s[i]->mem_used;
        }
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        struct lp_stage_report *st = &r->stages[i];
        st->energy_from_counter = counter;
        st->power_coarse = st->wall.total < 2.0 * (double)r->nvml_update_ns;
        if (covered[i] > 0) {
            st->power_mean_w = st->energy_j / covered[i];
            /* occurrences outside the sampled span get the mean power of the covered ones */
            st->energy_j = st->power_mean_w * st->wall.total / 1e9;
        }
    }
    free(covered);
    /* the series for charts */
    size_t stride = n > MAX_POINTS ? (n + MAX_POINTS - 1) / MAX_POINTS : 1;
    r->power = malloc(((n + stride - 1) / stride + 1) * sizeof *r->power);
    if (!r->power)
        goto out;
    for (size_t i = 0; i < n; i += stride) {
        const struct lp_nvml_sample *x = s[i];
        r->power[r->n_power++] = (struct lp_power_point){
            .t = x->timestamp,
            .power_w = (x->valid & LP_NVML_POWER) ? (float)(x->power_mw / 1000.0) : NAN,
            .sm_mhz = (x->valid & LP_NVML_SM_CLOCK) ? (float)x->sm_mhz : NAN,
            .mem_mhz = (x->valid & LP_NVML_MEM_CLOCK) ? (float)x->mem_mhz : NAN,
            .util = (x->valid & LP_NVML_UTIL) ? (float)x->util_gpu : NAN,
            .temp_c = (x->valid & LP_NVML_TEMP) ? (float)x->temp_c : NAN};
    }
    rc = LP_OK;
out:
    free(kv);
    free(ts);
    free(cum);
    free(s);
    return rc;
}

void lp_run_power_free(struct lp_run *r)
{
    free(r->power);
}
