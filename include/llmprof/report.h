/* llmprof's writers: they format what the model and analysis layers computed, and compute
 * nothing of their own. */
#ifndef LLMPROF_REPORT_H
#define LLMPROF_REPORT_H

#include <stdio.h>

#include "llmprof/model.h"

/* B may be NULL (no GPU chosen). Return 0, or -1 on a write error. */
int lp_report_model_md(FILE *out, const struct lp_model *m, const struct lp_workload *w,
                       const struct lp_model_result *r, const struct lp_model_bounds *b);
int lp_report_model_json(FILE *out, const struct lp_model *m, const struct lp_workload *w,
                         const struct lp_model_result *r, const struct lp_model_bounds *b);

#endif
