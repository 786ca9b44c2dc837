/* Shared by the model's files: bounded reading of input files and JSON (file.c), key access
 * for the family parsers (cfg.c), the parsers themselves (arch_*.c, called by config.c) and
 * the parameter count (analysis.c). */
#ifndef LP_MODEL_INTERNAL_H
#define LP_MODEL_INTERNAL_H

#include <jansson.h>

#include "llmprof/model.h"

#define LP_CFG_REQUIRED INT64_MIN

/* Input size bounds: bytes of a config.json, and JSON values (what jansson allocates, about
 * 40 bytes each) in any JSON text the model reads. */
#define LP_CONFIG_MAX_BYTES ((size_t)16 << 20)
#define LP_CONFIG_MAX_VALUES ((size_t)1 << 20)
#define LP_WEIGHTS_MAX_VALUES ((size_t)8 << 20)

struct lp_cfg {
    const char *name;       /* the file, for messages */
    const char *section;    /* "language_config" when reading a nested object */
    const char *model_type;
    char *err;
    size_t errlen;
    int failed;
};

/* "an object", "a string", ...: what V is, for messages */
const char *lp_cfg_json_kind(const json_t *v);
void lp_cfg_fail(struct lp_cfg *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer at KEY: DEF when absent (LP_CFG_REQUIRED: an error), MIN to MAX (one of the
 * LP_MODEL_MAX_* bounds; past it the message names the key, the value and the bound). */
int64_t lp_cfg_int(struct lp_cfg *c, json_t *obj, const char *key, int64_t def, int64_t min,
                   int64_t max);
int lp_cfg_bool(struct lp_cfg *c, json_t *obj, const char *key, int def);
const char *lp_cfg_str(struct lp_cfg *c, json_t *obj, const char *key, const char *def);
json_t *lp_cfg_obj(struct lp_cfg *c, json_t *obj, const char *key, int required);
/* An optional array at KEY of at most MAX integers, each LO to HI, into OUT (SECTION names
 * the object in messages; DEDUP skips repeated values). Returns the count (0: absent), or -1
 * through C. */
int lp_cfg_int_array(struct lp_cfg *c, json_t *obj, const char *section, const char *key,
                     int64_t *out, int max, int64_t lo, int64_t hi, int dedup);
/* Fails unless A is a multiple of B (the keys name them in the message). */
void lp_cfg_divides(struct lp_cfg *c, int64_t a, const char *a_key, int64_t b, const char *b_key);
/* Grouped-query attention's heads from O: num_attention_heads, num_key_value_heads (default:
 * the heads), head_dim given or HIDDEN / heads, each dividing as it must. LP_OK, or an error
 * through C. */
enum lp_status lp_cfg_gqa(struct lp_cfg *c, json_t *o, int64_t hidden, struct lp_attn_spec *a);
/* Adds COUNT layers to the group of their kind (a new one if none). */
enum lp_status lp_model_add_group(struct lp_cfg *c, struct lp_model *m, int64_t count,
                                  const struct lp_attn_spec *a, const struct lp_mlp_spec *mlp);

/* Reads the regular file PATH whole into *TEXT (NUL-terminated; free it) and *LEN, refusing
 * anything else (a FIFO would block) and files over MAX bytes (WHAT says what it should be).
 * LP_OK, or an error with ERR; *MISSING (may be NULL) is 1 when the error is that PATH does
 * not exist (ENOENT, ENOTDIR), which callers with a fallback tell apart. */
enum lp_status lp_model_file_read(const char *path, size_t max, const char *what, char **text,
                                  size_t *len, int *missing, char *err, size_t errlen);
/* Parses TEXT as JSON (jansson FLAGS), first refusing a text of more than MAX_VALUES values, so
 * that no input makes jansson allocate more than about 40 bytes x MAX_VALUES. NULL with ERR
 * (NAME names the text). */
json_t *lp_model_json_parse(const char *text, size_t len, size_t max_values, size_t flags,
                            const char *name, char *err, size_t errlen);

/* Parameters by module (the workload does not matter; active: per token), for the analysis
 * and for the parser's bound on the whole model. */
void lp_model_count_params(const struct lp_model *m, struct lp_params *p);

/* One parser per architecture family; each fills M from ROOT, or fails through C
 * (LP_ERR_FORMAT). */
enum lp_status lp_arch_llama(struct lp_cfg *c, json_t *root, struct lp_model *m);
enum lp_status lp_arch_gpt2(struct lp_cfg *c, json_t *root, struct lp_model *m);
enum lp_status lp_arch_deepseek(struct lp_cfg *c, json_t *root, struct lp_model *m);
enum lp_status lp_arch_deepseek_ocr(struct lp_cfg *c, json_t *root, struct lp_model *m);
enum lp_status lp_arch_deepseek_ocr2(struct lp_cfg *c, json_t *root, struct lp_model *m);
enum lp_status lp_arch_qwen_moe(struct lp_cfg *c, json_t *root, struct lp_model *m);
/* DeepSeek's decoder from object O (the root, or a nested text config), for the families
 * that put it behind a vision encoder. */
enum lp_status lp_arch_deepseek_decoder(struct lp_cfg *c, json_t *o, struct lp_model *m);

#endif
