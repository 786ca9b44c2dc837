/* Reading a Hugging Face config.json into an lp_model: the one list of the architecture
 * families llmprof models (their model_type values) and the dispatch to one parser per
 * family (arch_*.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_internal.h"

/* The families, in the order messages and --help list them; NOTE names the model where the
 * model_type does not. */
static const struct {
    const char *model_type;
    const char *note;
    enum lp_status (*parse)(struct lp_cfg *c, json_t *root, struct lp_model *m);
} families[] = {
    {"llama", NULL, lp_arch_llama},
    {"mistral", NULL, lp_arch_llama},
    {"qwen2", NULL, lp_arch_llama},
    {"qwen3", NULL, lp_arch_llama},
    {"qwen2_moe", NULL, lp_arch_qwen_moe},
    {"qwen3_moe", NULL, lp_arch_qwen_moe},
    {"mixtral", NULL, lp_arch_llama},
    {"gpt2", NULL, lp_arch_gpt2},
    {"deepseek_v2", NULL, lp_arch_deepseek},
    {"deepseek_v3", NULL, lp_arch_deepseek},
    {"deepseek_vl_v2", "DeepSeek-OCR", lp_arch_deepseek_ocr},
    {"deepseek_ocr2", "DeepSeek-OCR-2", lp_arch_deepseek_ocr2},
};
#define N_FAMILIES (sizeof families / sizeof *families)

void lp_model_types(char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = 0;
    for (size_t i = 0; i < N_FAMILIES && o < len; i++) {
        int n = snprintf(buf + o, len - o, "%s%s%s%s%s", i ? ", " : "", families[i].model_type,
                         families[i].note ? " (" : "", families[i].note ? families[i].note : "",
                         families[i].note ? ")" : "");
        o += n > 0 ? (size_t)n : 0;
    }
}

enum lp_status lp_model_parse(const char *text, size_t len, const char *name, struct lp_model *m,
                              char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    json_t *root = lp_model_json_parse(text, len, LP_CONFIG_MAX_VALUES, JSON_REJECT_DUPLICATES,
                                       name, err, errlen);
    if (!root)
        return LP_ERR_FORMAT;
    struct lp_cfg c = {.name = name, .err = err, .errlen = errlen, .model_type = "?"};
    enum lp_status rc = LP_ERR_FORMAT;
    if (!json_is_object(root)) {
        lp_cfg_fail(&c, "the top level must be a JSON object, not %s", lp_cfg_json_kind(root));
        goto out;
    }
    const char *type = lp_cfg_str(&c, root, "model_type", NULL);
    if (c.failed)
        goto out;
    if (!type) {
        lp_cfg_fail(&c, "key \"model_type\" is missing; is this a Hugging Face config.json?");
        goto out;
    }
    c.model_type = type;
    for (size_t i = 0; i < N_FAMILIES; i++) {
        if (strcmp(type, families[i].model_type) != 0)
            continue;
        snprintf(m->model_type, sizeof m->model_type, "%s", type);
        rc = families[i].parse(&c, root, m) == LP_OK && !c.failed ? LP_OK : LP_ERR_FORMAT;
        if (rc != LP_OK && !c.failed)
            lp_cfg_fail(&c, "cannot model this config");
        if (rc == LP_OK) {
            /* sizes each within bounds can still multiply into an absurd model */
            struct lp_params p;
            lp_model_count_params(m, &p);
            if (!(p.total + p.mtp <= LP_MODEL_MAX_PARAMS)) {
                lp_cfg_fail(&c, "its sizes (hidden_size, intermediate sizes, layers, experts, "
                                "vocab_size, ...) make %.3g parameters, past llmprof's limit of "
                                "2^53 (%.0f), far above any published model",
                            p.total + p.mtp, LP_MODEL_MAX_PARAMS);
                rc = LP_ERR_FORMAT;
            }
        }
        goto out;
    }
    char supported[256];
    lp_model_types(supported, sizeof supported);
    lp_cfg_fail(&c, "model_type \"%.60s\" is not supported; supported: %s", type, supported);
out:
    json_decref(root);
    return rc;
}

enum lp_status lp_model_load(const char *path, struct lp_model *m, char *err, size_t errlen)
{
    char file[4096];
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return LP_ERR_IO;
    }
    int dir = S_ISDIR(st.st_mode);
    if (snprintf(file, sizeof file, dir ? "%s/config.json" : "%s", path) >= (int)sizeof file) {
        snprintf(err, errlen, "%.200s...: the path is too long", path);
        return LP_ERR_IO;
    }
    char *text = NULL;
    size_t len = 0;
    int missing = 0;
    enum lp_status rc = lp_model_file_read(file, LP_CONFIG_MAX_BYTES, "a Hugging Face config.json",
                                           &text, &len, &missing, err, errlen);
    if (rc != LP_OK) {
        if (missing && dir) {
            size_t n = strlen(err);
            snprintf(err + n, errlen > n ? errlen - n : 0, " (a model directory must hold config.json)");
        }
        return rc;
    }
    rc = lp_model_parse(text, len, file, m, err, errlen);
    free(text);
    return rc;
}
