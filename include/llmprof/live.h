/* Live figures of one trace while its process writes it (llmprof watch): records are added
 * as the follower reads them, and what a monitor needs is kept as counts, sums and
 * histograms over everything read, plus trailing windows of one-second bins. Memory is
 * bounded whatever the run's length: stages, devices, requests in flight and loss sources are
 * capped and what passes a cap is counted. Facts only: src/report/prometheus.c writes them. */
#ifndef LLMPROF_LIVE_H
#define LLMPROF_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/trace.h"

/* Upper bounds of the latency histograms' buckets, seconds (the last bucket, +Inf, is the
 * count) */
#define LP_LIVE_BUCKETS 18
extern const double lp_live_bucket_le[LP_LIVE_BUCKETS];

#define LP_LIVE_MAX_STAGES 64     /* stage names kept; more are counted apart */
#define LP_LIVE_MAX_DEVICES 64
#define LP_LIVE_MAX_OPEN 16384    /* NVTX ranges and requests open at once (a power of 2) */
#define LP_LIVE_BINS 300          /* one-second bins kept: the longest window */

struct lp_live_hist {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t bucket[LP_LIVE_BUCKETS]; /* observations at most each bound (not cumulative) */
};

/* One stage: the top-level occurrences of the ranges its rule matches (a stage range inside
 * another stage's range is part of that one, as in the report). */
struct lp_live_stage {
    char *name;
    struct lp_live_hist wall;     /* each occurrence's range, start to end */
    uint64_t tokens;              /* "tokens=N" in the range names */
};

struct lp_live_device {
    uint32_t id;                  /* CUDA device ordinal in the process */
    uint8_t uuid[16];             /* from its device record, when HAS_UUID */
    int has_uuid;
    /* NVML */
    uint64_t nvml_samples;
    uint64_t nvml_ts;             /* the latest sample's time */
    double power_w;               /* the latest sample's, -1 unknown */
    int power_averaged;           /* NVML's ~1 s average, not instantaneous */
    uint64_t energy_mj;           /* summed from the energy counter's steps */
    uint64_t last_energy_mj;      /* the counter at the latest sample, 0 none */
    uint32_t sm_mhz, temp_c;
    uint64_t mem_used;
    /* PM sampling */
    uint64_t pm_samples;
    uint64_t pm_ns;               /* time sampled */
    double tensor_ns, sm_active_ns, gr_active_ns; /* of it, with the unit active */
    double dram_read, dram_write; /* bytes */
    uint64_t dram_peak_bps;       /* from the device record, 0 unknown */
};

/* What happened within one second of trace time (window gauges) */
struct lp_live_bin {
    int64_t second;               /* trace time / 1 s; -1 empty */
    uint64_t tokens, stage_tokens;
    uint64_t energy_mj;
    uint64_t pm_ns;
    double tensor_ns, dram_bytes;
};

/* Figures over the trailing window (lp_live_window) */
struct lp_live_window {
    double seconds;               /* trace time covered, 0: nothing yet */
    double tokens_per_s;          /* token marks, or else the stages' tokens=N */
    int tokens_source;            /* 1 token marks, 2 range names, 0 none */
    double energy_per_token_j;    /* -1 when no tokens or no energy */
    double tensor_ratio;          /* mean tensor-pipe activity, -1 unsampled */
    double dram_bytes_per_s;      /* per second sampled; -1 unsampled */
};

struct lp_live;

/* STAGE_RULES: NAME=REGEX as report --stage takes them, NULL for the report's default.
 * LP_OK, LP_ERR_ARG (ERR says which rule), LP_ERR_NOMEM. */
int lp_live_init(struct lp_live **l, const char *const *stage_rules, size_t n_rules, char *err,
                 size_t errlen);
/* Adds one record; NAME_OF resolves its string ids. LP_OK or LP_ERR_NOMEM. */
int lp_live_add(struct lp_live *l, const struct lp_record *r,
                const char *(*name_of)(void *ctx, lp_str id), void *ctx);
/* The recording's start (the trace header's start_trace_ns): from then on, a record timed
 * more than a minute before it or more than a year after it, or at 0, cannot be the run's and
 * is counted (implausible) instead of added, as the reader leaves such records out. */
void lp_live_set_start(struct lp_live *l, uint64_t start_ns);
void lp_live_free(struct lp_live *l);

/* What was added, read by the writer */
struct lp_live_facts {
    uint64_t records[LP_REC_TYPE_COUNT];
    uint64_t first_ts, last_ts;   /* trace clock, of the records with a time; 0 none */
    const struct lp_live_stage *stages;
    size_t n_stages;
    uint64_t stages_dropped;      /* occurrences of names past LP_LIVE_MAX_STAGES */
    uint64_t ranges_unmatched;    /* ends without their start, starts past the open bound */
    uint64_t threads_dropped;     /* ranges on a thread past 1,024 inside stage ranges at once:
                                     not classified */
    uint64_t implausible;         /* records whose time cannot be the run's: counted only */
    /* the request convention */
    int convention;               /* a token mark was seen */
    uint64_t requests_started, requests_done, requests_open, requests_dropped;
    uint64_t requests_no_token;   /* ended without a token mark: no TTFT */
    uint64_t token_marks, marks_unknown, ids_reused;
    struct lp_live_hist ttft, tpot, itl;
    const struct lp_live_device *devices;
    size_t n_devices;
    uint64_t lost[16];            /* LOSS records' counts by enum lp_loss_source */
    uint64_t lost_unknown;        /* LOSS records of a whole source, count unknown */
};
struct lp_live_facts lp_live_facts(const struct lp_live *l);
/* The last SECONDS whole seconds of trace time before the latest record's second. */
struct lp_live_window lp_live_window(const struct lp_live *l, unsigned seconds);

#endif
