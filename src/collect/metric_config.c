/* One-pass metric sets (see metric_config.h). The host object and config image are made
 * per trial: CUPTI's host API has no way to take a metric back out of a set. */
#include "metric_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_api.h"

static void host_free(CUpti_Profiler_Host_Object *host)
{
    if (!host)
        return;
    struct lp_host_deinit_params hd = LP_HOST_PARAMS(lp_host_deinit_params);
    hd.pHostObject = host;
    lp_cupti.ProfilerHostDeinitialize(&hd);
}

/* A host object and config image for NAMES: the passes they need (0: invalid set or a
 * CUPTI failure). On 1 pass the object and image go to CFG, else they are freed. Invalid
 * metric names are an expected answer here, so the calls are made without warnings. */
static size_t trial(struct lp_metric_config *cfg, int type, const char *chip,
                    const uint8_t *avail, const char **names, size_t n)
{
    struct lp_host_init_params hi = LP_HOST_PARAMS(lp_host_init_params);
    hi.profilerType = type;
    hi.pChipName = chip;
    hi.pCounterAvailabilityImage = avail;
    if (lp_cupti.ProfilerHostInitialize(&hi) != CUPTI_SUCCESS)
        return 0;
    size_t passes = 0;
    struct lp_host_add_metrics_params am = LP_HOST_PARAMS(lp_host_add_metrics_params);
    am.pHostObject = hi.pHostObject;
    am.ppMetricNames = names;
    am.numMetrics = n;
    struct lp_host_config_size_params cs = LP_HOST_PARAMS(lp_host_config_size_params);
    cs.pHostObject = hi.pHostObject;
    uint8_t *image = NULL;
    if (lp_cupti.ProfilerHostConfigAddMetrics(&am) == CUPTI_SUCCESS &&
        lp_cupti.ProfilerHostGetConfigImageSize(&cs) == CUPTI_SUCCESS &&
        (image = calloc(1, cs.configImageSize ? cs.configImageSize : 1))) {
        struct lp_host_config_image_params ci = LP_HOST_PARAMS(lp_host_config_image_params);
        ci.pHostObject = hi.pHostObject;
        ci.configImageSize = cs.configImageSize;
        ci.pConfigImage = image;
        struct lp_host_passes_params np = LP_HOST_PARAMS(lp_host_passes_params);
        np.configImageSize = cs.configImageSize;
        np.pConfigImage = image;
        if (lp_cupti.ProfilerHostGetConfigImage(&ci) == CUPTI_SUCCESS &&
            lp_cupti.ProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS)
            passes = np.numOfPasses;
    }
    if (passes == 1) {
        free(cfg->image);
        host_free(cfg->host);
        cfg->image = image;
        cfg->image_size = cs.configImageSize;
        cfg->host = hi.pHostObject;
        return 1;
    }
    free(image);
    host_free(hi.pHostObject);
    return passes;
}

static void append(char *buf, size_t len, const char *name)
{
    size_t at = strlen(buf);
    snprintf(buf + at, len - at, "%s%s", at ? ", " : "", name);
}

enum lp_metric_choice lp_metric_config_choose(struct lp_metric_config *cfg, int type,
                                              const char *chip, const uint8_t *avail,
                                              const char *const *names, const unsigned *ids,
                                              size_t n, int all_or_none)
{
    memset(cfg, 0, sizeof *cfg);
    if (n > LP_METRIC_CONFIG_MAX)
        n = LP_METRIC_CONFIG_MAX;
    const char *all[LP_METRIC_CONFIG_MAX];
    memcpy(all, names, n * sizeof *names);
    cfg->passes = trial(cfg, type, chip, avail, all, n);
    if (cfg->passes == 1) {
        memcpy(cfg->names, all, n * sizeof *all);
        memcpy(cfg->ids, ids, n * sizeof *ids);
        cfg->n = n;
        for (size_t i = 0; i < n; i++)
            append(cfg->fits, sizeof cfg->fits, all[i]);
        return LP_METRIC_CHOICE_ALL;
    }
    /* greedy: each metric in order, kept when the set still fits one pass */
    for (size_t i = 0; i < n; i++) {
        cfg->names[cfg->n] = all[i];
        cfg->ids[cfg->n] = ids[i];
        if (trial(cfg, type, chip, avail, cfg->names, cfg->n + 1) == 1) {
            cfg->n++;
            append(cfg->fits, sizeof cfg->fits, all[i]);
        } else {
            append(cfg->left, sizeof cfg->left, all[i]);
        }
    }
    if (all_or_none || cfg->n == 0) {
        cfg->n = 0;
        return LP_METRIC_CHOICE_NONE;
    }
    /* the last trial that fitted was of the kept set: CFG holds its config */
    return LP_METRIC_CHOICE_TRIMMED;
}

void lp_metric_config_free(struct lp_metric_config *cfg)
{
    host_free(cfg->host);
    free(cfg->image);
    cfg->host = NULL;
    cfg->image = NULL;
    cfg->n = 0;
}

void lp_metric_config_list(const struct lp_metric_config *cfg, char *buf, size_t len)
{
    if (len)
        *buf = 0;
    for (size_t i = 0; i < cfg->n; i++) {
        size_t at = strlen(buf);
        snprintf(buf + at, len - at, "%s%s", i ? "," : "", cfg->names[i]);
    }
}

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

CUptiResult lp_profiler_load(void)
{
    pthread_mutex_lock(&load_mu);
    CUptiResult rc = CUPTI_SUCCESS;
    if (!loaded) {
        CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        rc = lp_cupti.ProfilerInitialize ? lp_cupti.ProfilerInitialize(&pi)
                                         : CUPTI_ERROR_NOT_SUPPORTED;
        loaded = rc == CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&load_mu);
    return rc;
}
