/* The collector's configuration: the LLMPROF_* environment (llmprof/envconfig.h), read once
 * at the collector's start; each part reads its fields here instead of the environment. */
#ifndef LP_COLLECT_CONFIG_H
#define LP_COLLECT_CONFIG_H

#include "llmprof/envconfig.h"

/* Parses the environment into the configuration (once, at the start, before any part
 * starts); the warnings about bad values wait for lp_config_warn. */
void lp_config_load(void);
/* Says each bad value once (lp_collect_warn), best once the trace is open so that the loss
 * records reach it. */
void lp_config_warn(void);
/* The configuration. Before lp_config_load (unit tests driving one part, never the
 * injected collector) it is read from the environment as it is now, at each call, bad
 * values warned about at once. */
const struct lp_envconfig *lp_config_get(void);

#endif
