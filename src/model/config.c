/* Reading a Hugging Face config.json into an lp_model: JSON access with errors that name
 * the file, the key and what is expected, and the dispatch on model_type to one parser per
 * architecture family (arch_*.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_internal.h"

void lp_cfg_fail(struct lp_cfg *c, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = 1;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", c->name, msg);
}

/* "language_config.hidden_size" style names in messages */
static void key_path(const struct lp_cfg *c, const char *key, char *buf, size_t len)
{
    if (c->section && *c->section)
        snprintf(buf, len, "%s.%s", c->section, key);
    else
        snprintf(buf, len, "%s", key);
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

int64_t lp_cfg_int(struct lp_cfg *c, json_t *obj, const char *key, int64_t def, int64_t min)
{
    char path[128];
    key_path(c, key, path, sizeof path);
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        if (def == LP_CFG_REQUIRED)
            lp_cfg_fail(c, "key \"%s\" is missing; model_type \"%s\" needs it", path, c->model_type);
        return def == LP_CFG_REQUIRED ? 0 : def;
    }
    if (!json_is_integer(v)) {
        lp_cfg_fail(c, "key \"%s\" must be an integer, not %s", path, json_kind(v));
        return 0;
    }
    int64_t x = (int64_t)json_integer_value(v);
    if (x < min) {
        lp_cfg_fail(c, "key \"%s\" is %lld; it must be at least %lld", path, (long long)x,
                    (long long)min);
        return min;
    }
    if (x > LP_CFG_MAX_DIM) {
        lp_cfg_fail(c, "key \"%s\" is %lld, larger than any model (limit %lld)", path,
                    (long long)x, (long long)LP_CFG_MAX_DIM);
        return min;
    }
    return x;
}

int lp_cfg_bool(struct lp_cfg *c, json_t *obj, const char *key, int def)
{
    char path[128];
    key_path(c, key, path, sizeof path);
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v))
        return def;
    if (!json_is_boolean(v)) {
        lp_cfg_fail(c, "key \"%s\" must be true or false, not %s", path, json_kind(v));
        return def;
    }
    return json_is_true(v);
}

const char *lp_cfg_str(struct lp_cfg *c, json_t *obj, const char *key, const char *def)
{
    char path[128];
    key_path(c, key, path, sizeof path);
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v))
        return def;
    if (!json_is_string(v)) {
        lp_cfg_fail(c, "key \"%s\" must be a string, not %s", path, json_kind(v));
        return def;
    }
    return json_string_value(v);
}

json_t *lp_cfg_obj(struct lp_cfg *c, json_t *obj, const char *key, int required)
{
    char path[128];
    key_path(c, key, path, sizeof path);
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        if (required)
            lp_cfg_fail(c, "key \"%s\" is missing; model_type \"%s\" needs it", path, c->model_type);
        return NULL;
    }
    if (!json_is_object(v)) {
        lp_cfg_fail(c, "key \"%s\" must be an object, not %s", path, json_kind(v));
        return NULL;
    }
    return v;
}

void lp_cfg_divides(struct lp_cfg *c, int64_t a, const char *a_key, int64_t b, const char *b_key)
{
    if (!c->failed && a > 0 && b > 0 && a % b != 0)
        lp_cfg_fail(c, "\"%s\" (%lld) is not a multiple of \"%s\" (%lld)", a_key, (long long)a,
                    b_key, (long long)b);
}

int lp_model_add_group(struct lp_cfg *c, struct lp_model *m, int64_t count,
                       const struct lp_attn_spec *a, const struct lp_mlp_spec *mlp)
{
    if (count <= 0)
        return 0;
    /* layers of one kind share a group wherever they are (moe_layer_freq 2 alternates) */
    for (int i = 0; i < m->n_groups; i++) {
        struct lp_layer_group *g = &m->groups[i];
        if (!memcmp(&g->attn, a, sizeof *a) && !memcmp(&g->mlp, mlp, sizeof *mlp)) {
            g->count += count;
            m->last_group = i;
            return 0;
        }
    }
    if (m->n_groups == LP_MAX_LAYER_GROUPS) {
        lp_cfg_fail(c, "more than %d distinct kinds of layer", LP_MAX_LAYER_GROUPS);
        return -1;
    }
    m->last_group = m->n_groups;
    struct lp_layer_group *g = &m->groups[m->n_groups++];
    memset(g, 0, sizeof *g);
    g->count = count;
    g->attn = *a;
    g->mlp = *mlp;
    return 0;
}

static const struct {
    const char *model_type;
    int (*parse)(struct lp_cfg *c, json_t *root, struct lp_model *m);
} families[] = {
    {"llama", lp_arch_llama},       {"mistral", lp_arch_llama},
    {"qwen2", lp_arch_llama},       {"qwen3", lp_arch_llama},
    {"mixtral", lp_arch_llama},     {"gpt2", lp_arch_gpt2},
    {"deepseek_v2", lp_arch_deepseek}, {"deepseek_v3", lp_arch_deepseek},
    {"deepseek_vl_v2", lp_arch_deepseek_ocr},
};

int lp_model_parse(const char *text, size_t len, const char *name, struct lp_model *m, char *err,
                   size_t errlen)
{
    memset(m, 0, sizeof *m);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err, errlen, "%s: not valid JSON (line %d, column %d: %s)", name, jerr.line,
                 jerr.column, jerr.text);
        return -1;
    }
    struct lp_cfg c = {.name = name, .err = err, .errlen = errlen, .model_type = "?"};
    int rc = -1;
    if (!json_is_object(root)) {
        lp_cfg_fail(&c, "the top level must be a JSON object, not %s", json_kind(root));
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
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        if (strcmp(type, families[i].model_type) != 0)
            continue;
        snprintf(m->model_type, sizeof m->model_type, "%s", type);
        rc = families[i].parse(&c, root, m) == 0 && !c.failed ? 0 : -1;
        if (rc != 0 && !c.failed)
            lp_cfg_fail(&c, "cannot model this config");
        goto out;
    }
    lp_cfg_fail(&c, "model_type \"%.60s\" is not supported; supported: llama, mistral, qwen2, "
                    "qwen3, mixtral, gpt2, deepseek_v2, deepseek_v3, deepseek_vl_v2 (DeepSeek-OCR)",
                type);
out:
    json_decref(root);
    return rc;
}

int lp_model_load(const char *path, struct lp_model *m, char *err, size_t errlen)
{
    char file[4096];
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        snprintf(file, sizeof file, "%s/config.json", path);
    else
        snprintf(file, sizeof file, "%s", path);
    FILE *f = fopen(file, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s%s", file, strerror(errno),
                 S_ISDIR(st.st_mode) ? " (a model directory must hold config.json)" : "");
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char buf[65536];
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (len + n > (64u << 20)) {
            fclose(f);
            free(text);
            snprintf(err, errlen, "%s: larger than 64 MiB: not a config.json", file);
            return -1;
        }
        if (len + n > cap) {
            cap = (len + n) * 2;
            char *p = realloc(text, cap);
            if (!p) {
                fclose(f);
                free(text);
                snprintf(err, errlen, "%s: out of memory", file);
                return -1;
            }
            text = p;
        }
        memcpy(text + len, buf, n);
        len += n;
    }
    fclose(f);
    int rc = lp_model_parse(text ? text : "", len, file, m, err, errlen);
    free(text);
    return rc;
}
