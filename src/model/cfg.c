/* Keys of a config.json for the family parsers (arch_*.c): each read with an error that
 * names the file, the key and what is expected, every integer within one of the
 * LP_MODEL_MAX_* bounds; and the layer groups they fill. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

const char *lp_cfg_json_kind(const json_t *v)
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

int64_t lp_cfg_int(struct lp_cfg *c, json_t *obj, const char *key, int64_t def, int64_t min,
                   int64_t max)
{
    char path[128];
    key_path(c, key, path, sizeof path);
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        if (def == LP_CFG_REQUIRED)
            lp_cfg_fail(c, "key \"%s\" is missing; model_type \"%s\" needs it", path,
                        c->model_type);
        return def == LP_CFG_REQUIRED ? 0 : def;
    }
    if (!json_is_integer(v)) {
        lp_cfg_fail(c, "key \"%s\" must be an integer, not %s", path, lp_cfg_json_kind(v));
        return 0;
    }
    int64_t x = (int64_t)json_integer_value(v);
    if (x < min) {
        lp_cfg_fail(c, "key \"%s\" is %lld; it must be at least %lld", path, (long long)x,
                    (long long)min);
        return min;
    }
    if (x > max) {
        lp_cfg_fail(c, "key \"%s\" is %lld, past llmprof's limit of %lld (far above any "
                       "published model; docs/model.md lists the bounds)", path, (long long)x,
                    (long long)max);
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
        lp_cfg_fail(c, "key \"%s\" must be true or false, not %s", path, lp_cfg_json_kind(v));
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
        lp_cfg_fail(c, "key \"%s\" must be a string, not %s", path, lp_cfg_json_kind(v));
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
            lp_cfg_fail(c, "key \"%s\" is missing; model_type \"%s\" needs it", path,
                        c->model_type);
        return NULL;
    }
    if (!json_is_object(v)) {
        lp_cfg_fail(c, "key \"%s\" must be an object, not %s", path, lp_cfg_json_kind(v));
        return NULL;
    }
    return v;
}

int lp_cfg_int_array(struct lp_cfg *c, json_t *obj, const char *section, const char *key,
                     int64_t *out, int max, int64_t lo, int64_t hi, int dedup)
{
    json_t *arr = json_object_get(obj, key);
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > (size_t)max) {
        lp_cfg_fail(c, "key \"%s.%s\" must be an array of at most %d integers", section, key, max);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *val;
    json_array_foreach(arr, i, val) {
        json_int_t x = json_is_integer(val) ? json_integer_value(val) : 0;
        if (!json_is_integer(val) || x < lo || x > hi) {
            lp_cfg_fail(c, "key \"%s.%s\"[%zu] must be an integer from %lld to %lld", section,
                        key, i, (long long)lo, (long long)hi);
            return -1;
        }
        int seen = 0;
        for (int k = 0; dedup && k < n; k++)
            seen |= out[k] == x;
        if (!seen)
            out[n++] = x;
    }
    return n;
}

void lp_cfg_divides(struct lp_cfg *c, int64_t a, const char *a_key, int64_t b, const char *b_key)
{
    if (!c->failed && a > 0 && b > 0 && a % b != 0)
        lp_cfg_fail(c, "\"%s\" (%lld) is not a multiple of \"%s\" (%lld)", a_key, (long long)a,
                    b_key, (long long)b);
}

enum lp_status lp_cfg_gqa(struct lp_cfg *c, json_t *o, int64_t hidden, struct lp_attn_spec *a)
{
    a->kind = LP_ATTN_KIND_MHA;
    a->heads = lp_cfg_int(c, o, "num_attention_heads", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_HEADS);
    a->kv_heads = lp_cfg_int(c, o, "num_key_value_heads", a->heads, 1, LP_MODEL_MAX_HEADS);
    a->head_dim = lp_cfg_int(c, o, "head_dim", 0, 1, LP_MODEL_MAX_HEAD_DIM);
    if (c->failed)
        return LP_ERR_FORMAT;
    if (a->head_dim == 0) {
        lp_cfg_divides(c, hidden, "hidden_size", a->heads, "num_attention_heads");
        a->head_dim = hidden / a->heads;
    }
    lp_cfg_divides(c, a->heads, "num_attention_heads", a->kv_heads, "num_key_value_heads");
    a->v_head_dim = a->head_dim;
    return c->failed ? LP_ERR_FORMAT : LP_OK;
}

enum lp_status lp_model_add_group(struct lp_cfg *c, struct lp_model *m, int64_t count,
                                  const struct lp_attn_spec *a, const struct lp_mlp_spec *mlp)
{
    if (count <= 0)
        return LP_OK;
    /* layers of one kind share a group wherever they are (moe_layer_freq 2 alternates) */
    for (int i = 0; i < m->n_groups; i++) {
        struct lp_layer_group *g = &m->groups[i];
        if (!memcmp(&g->attn, a, sizeof *a) && !memcmp(&g->mlp, mlp, sizeof *mlp)) {
            g->count += count;
            m->last_group = i;
            return LP_OK;
        }
    }
    if (m->n_groups == LP_MAX_LAYER_GROUPS) {
        lp_cfg_fail(c, "more than %d distinct kinds of layer", LP_MAX_LAYER_GROUPS);
        return LP_ERR_FORMAT;
    }
    m->last_group = m->n_groups;
    struct lp_layer_group *g = &m->groups[m->n_groups++];
    memset(g, 0, sizeof *g);
    g->count = count;
    g->attn = *a;
    g->mlp = *mlp;
    return LP_OK;
}
