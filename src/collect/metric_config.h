/* One-pass metric sets for CUPTI's profiler host API, shared by the range profiler
 * (counters.c) and PM sampling (pmsample.c): a host object for the chip, a config image,
 * and when the set needs more than one pass, the greedy choice of what fits. */
#ifndef LP_COLLECT_METRIC_CONFIG_H
#define LP_COLLECT_METRIC_CONFIG_H

#include <cupti_result.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler_host.h"

enum { LP_METRIC_CONFIG_MAX = 16 };

struct lp_metric_config {
    CUpti_Profiler_Host_Object *host; /* evaluates the counter data */
    uint8_t *image;                   /* the config image */
    size_t image_size;
    const char *names[LP_METRIC_CONFIG_MAX]; /* the metrics kept, in the order asked */
    unsigned ids[LP_METRIC_CONFIG_MAX];      /* the caller's id of each */
    size_t n;
    size_t passes;     /* the whole set asked for needs this many (0: not a valid set) */
    char left[512];    /* metrics left out, comma-separated */
    char fits[1024];   /* metrics kept, comma-separated */
};

enum lp_metric_choice {
    LP_METRIC_CHOICE_ALL = 0,     /* every metric asked for, in one pass */
    LP_METRIC_CHOICE_TRIMMED = 1, /* those that fit, in the order asked (LEFT names the rest) */
    LP_METRIC_CHOICE_NONE = -1,   /* refused (ALL_OR_NONE) or nothing fits, or CUPTI failed */
};

/* Chooses for profiler TYPE (enum lp_profiler_type) on CHIP with the counter availability
 * AVAIL among the N metrics NAMES (with the caller's IDS): all of them if they fit one pass,
 * else (unless ALL_OR_NONE) the greedy prefix-order choice of those that do. CFG is zeroed
 * first; free it with lp_metric_config_free whatever the result. */
enum lp_metric_choice lp_metric_config_choose(struct lp_metric_config *cfg, int type,
                                              const char *chip, const uint8_t *avail,
                                              const char *const *names, const unsigned *ids,
                                              size_t n, int all_or_none);
void lp_metric_config_free(struct lp_metric_config *cfg);
/* Initialises CUPTI's profiler once it succeeds (it fails while CUDA is still being
 * initialised, so it is called when a context exists). Thread-safe. */
CUptiResult lp_profiler_load(void);
/* The metrics of CFG, comma-separated, into BUF. */
void lp_metric_config_list(const struct lp_metric_config *cfg, char *buf, size_t len);

#endif
