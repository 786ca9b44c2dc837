/* llmprof's writers: they format what the model and analysis layers computed, and compute
 * nothing of their own. */
#ifndef LLMPROF_REPORT_H
#define LLMPROF_REPORT_H

#include <stdio.h>

#include "llmprof/model.h"

/* What `llmprof model` reports. B (no GPU chosen) and WT (no safetensors) may be NULL. */
struct lp_model_report {
    const struct lp_model *model;
    const struct lp_workload *workload;
    const struct lp_model_result *result;
    const struct lp_model_bounds *bounds;
    const struct lp_weights *weights;
};

/* Return 0, or -1 on a write error. */
int lp_report_model_md(FILE *out, const struct lp_model_report *rep);
int lp_report_model_json(FILE *out, const struct lp_model_report *rep);

#endif
