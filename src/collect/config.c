/* The collector's configuration (config.h): lp_envconfig_parse's result, kept for the run,
 * with the warnings it gave held until the trace is open. */
#include "config.h"

#include <stdio.h>

#include "log.h"

static struct lp_envconfig loaded, now;
static int is_loaded;
static struct pending {
    enum lp_envconfig_var var;
    char message[512];
} pending[LP_ENVCONFIG_VAR_COUNT];
static size_t n_pending;

static void hold(void *ctx, enum lp_envconfig_var var, const char *message)
{
    (void)ctx;
    if (n_pending < sizeof pending / sizeof *pending) {
        pending[n_pending].var = var;
        snprintf(pending[n_pending].message, sizeof pending[n_pending].message, "%s", message);
        n_pending++;
    }
}

static void say(void *ctx, enum lp_envconfig_var var, const char *message)
{
    (void)ctx;
    lp_collect_warn(lp_envconfig_table[var].loss_source, 0, "%s", message);
}

void lp_config_load(void)
{
    n_pending = 0;
    lp_envconfig_parse(&loaded, NULL, hold, NULL);
    is_loaded = 1;
}

void lp_config_warn(void)
{
    for (size_t i = 0; i < n_pending; i++)
        say(NULL, pending[i].var, pending[i].message);
    n_pending = 0;
}

const struct lp_envconfig *lp_config_get(void)
{
    if (is_loaded)
        return &loaded;
    lp_envconfig_parse(&now, NULL, say, NULL);
    return &now;
}
