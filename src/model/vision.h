/* Vision encoders in front of a decoder (DeepSeek-OCR's SAM + CLIP, DeepSeek-OCR-2's SAM +
 * Qwen2-style encoder), used by analysis.c. */
#ifndef LP_MODEL_VISION_H
#define LP_MODEL_VISION_H

#include "llmprof/model.h"

/* Adds the vision parameters to P (P->vision and P->per_module[LP_MODULE_VISION_*]). */
void lp_vision_params(const struct lp_model *m, struct lp_params *p);
/* Costs of encoding the images of W's batch into R->stage[LP_MODEL_STAGE_VISION], and the number
 * of decoder positions they take into R->vision_tokens. LP_OK, or LP_ERR_ARG with ERR for a
 * mode or tiles the encoder does not take. */
enum lp_status lp_vision_analyze(const struct lp_model *m, const struct lp_workload *w,
                                 double wb, double ab, struct lp_model_result *r, char *err,
                                 size_t errlen);
/* Decoder positions an image takes in MODE (with TILES for Gundam: DeepSeek-OCR-2's local
 * crops). */
int64_t lp_vision_slots(const struct lp_vision_spec *v, enum lp_vision_mode mode,
                        int64_t tiles_w, int64_t tiles_h);

#endif
