/* Shared by the model's files: JSON access for the family parsers (arch_*.c). */
#ifndef LP_MODEL_INTERNAL_H
#define LP_MODEL_INTERNAL_H

#include <jansson.h>

#include "llmprof/model.h"

#define LP_CFG_REQUIRED INT64_MIN
#define LP_CFG_MAX_DIM ((int64_t)1 << 40)

struct lp_cfg {
    const char *name;       /* the file, for messages */
    const char *section;    /* "language_config" when reading a nested object */
    const char *model_type;
    char *err;
    size_t errlen;
    int failed;
};

void lp_cfg_fail(struct lp_cfg *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer at KEY: DEF when absent (LP_CFG_REQUIRED: an error), at least MIN. */
int64_t lp_cfg_int(struct lp_cfg *c, json_t *obj, const char *key, int64_t def, int64_t min);
int lp_cfg_bool(struct lp_cfg *c, json_t *obj, const char *key, int def);
const char *lp_cfg_str(struct lp_cfg *c, json_t *obj, const char *key, const char *def);
json_t *lp_cfg_obj(struct lp_cfg *c, json_t *obj, const char *key, int required);
/* Fails unless A is a multiple of B (the keys name them in the message). */
void lp_cfg_divides(struct lp_cfg *c, int64_t a, const char *a_key, int64_t b, const char *b_key);
/* Adds COUNT layers to the group of their kind (a new one if none). */
int lp_model_add_group(struct lp_cfg *c, struct lp_model *m, int64_t count,
                       const struct lp_attn_spec *a, const struct lp_mlp_spec *mlp);

/* One parser per architecture family; each fills M from ROOT or fails through C. */
int lp_arch_llama(struct lp_cfg *c, json_t *root, struct lp_model *m);
int lp_arch_gpt2(struct lp_cfg *c, json_t *root, struct lp_model *m);
int lp_arch_deepseek(struct lp_cfg *c, json_t *root, struct lp_model *m);
int lp_arch_deepseek_ocr(struct lp_cfg *c, json_t *root, struct lp_model *m);

#endif
