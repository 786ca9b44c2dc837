/* Reading a Hugging Face config.json into an lp_model: bounded reading of the file and its
 * JSON, access to keys with errors that name the file, the key and what is expected (every
 * integer within one of the LP_MODEL_MAX_* bounds), and the dispatch on model_type to one
 * parser per architecture family (arch_*.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int64_t lp_cfg_int(struct lp_cfg *c, json_t *obj, const char *key, int64_t def, int64_t min,
                   int64_t max)
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

int lp_cfg_gqa(struct lp_cfg *c, json_t *o, int64_t hidden, struct lp_attn_spec *a)
{
    a->kind = LP_ATTN_MHA;
    a->heads = lp_cfg_int(c, o, "num_attention_heads", LP_CFG_REQUIRED, 1, LP_MODEL_MAX_HEADS);
    a->kv_heads = lp_cfg_int(c, o, "num_key_value_heads", a->heads, 1, LP_MODEL_MAX_HEADS);
    a->head_dim = lp_cfg_int(c, o, "head_dim", 0, 1, LP_MODEL_MAX_HEAD_DIM);
    if (c->failed)
        return -1;
    if (a->head_dim == 0) {
        lp_cfg_divides(c, hidden, "hidden_size", a->heads, "num_attention_heads");
        a->head_dim = hidden / a->heads;
    }
    lp_cfg_divides(c, a->heads, "num_attention_heads", a->kv_heads, "num_key_value_heads");
    a->v_head_dim = a->head_dim;
    return c->failed ? -1 : 0;
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
    {"deepseek_vl_v2", lp_arch_deepseek_ocr}, {"deepseek_ocr2", lp_arch_deepseek_ocr2},
    {"qwen2_moe", lp_arch_qwen_moe},  {"qwen3_moe", lp_arch_qwen_moe},
};

int lp_model_file_read(const char *path, size_t max, const char *what, char **text, size_t *len,
                       char *err, size_t errlen)
{
    *text = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked next */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return errno == ENOENT || errno == ENOTDIR ? 1 : -1;
    }
    int rc = -1;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file; %s", path, what);
        goto out;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(err, errlen, "%s: %lld bytes, larger than %zu: not %s", path,
                 (long long)st.st_size, max, what);
        goto out;
    }
    size_t size = (size_t)st.st_size, got = 0;
    buf = malloc(size + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* an error, or a file that shrank while read */
            snprintf(err, errlen, "%s: %s", path, n < 0 ? strerror(errno) : "cut short while read");
            goto out;
        }
        got += (size_t)n;
    }
    buf[size] = 0;
    *text = buf;
    *len = size;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

/* An upper bound of the values (and members) a JSON text makes: one plus its commas, colons
 * and opening brackets outside strings. */
static size_t json_values_bound(const char *t, size_t len)
{
    size_t n = 1;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = t[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = 0;
        } else if (ch == '"') {
            in_string = 1;
        } else if (ch == ',' || ch == ':' || ch == '[' || ch == '{') {
            n++;
        }
    }
    return n;
}

json_t *lp_model_json_parse(const char *text, size_t len, size_t max_values, size_t flags,
                            const char *name, char *err, size_t errlen)
{
    size_t values = json_values_bound(text, len);
    if (values > max_values) {
        snprintf(err, errlen, "%s: about %zu JSON values, more than the %zu llmprof reads in one "
                              "file: not a model's file", name, values, max_values);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, flags, &jerr);
    if (!root)
        snprintf(err, errlen, "%s: not valid JSON (line %d, column %d: %s)", name, jerr.line,
                 jerr.column, jerr.text);
    return root;
}

int lp_model_parse(const char *text, size_t len, const char *name, struct lp_model *m, char *err,
                   size_t errlen)
{
    memset(m, 0, sizeof *m);
    json_t *root = lp_model_json_parse(text, len, LP_CONFIG_MAX_VALUES, JSON_REJECT_DUPLICATES,
                                       name, err, errlen);
    if (!root)
        return -1;
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
        if (rc == 0) {
            /* sizes each within bounds can still multiply into an absurd model */
            struct lp_params p;
            lp_model_count_params(m, &p);
            if (!(p.total + p.mtp <= LP_MODEL_MAX_PARAMS)) {
                lp_cfg_fail(&c, "its sizes (hidden_size, intermediate sizes, layers, experts, "
                                "vocab_size, ...) make %.3g parameters, past llmprof's limit of "
                                "2^53 (%.0f), far above any published model",
                            p.total + p.mtp, LP_MODEL_MAX_PARAMS);
                rc = -1;
            }
        }
        goto out;
    }
    lp_cfg_fail(&c, "model_type \"%.60s\" is not supported; supported: llama, mistral, qwen2, "
                    "qwen3, qwen2_moe, qwen3_moe, mixtral, gpt2, deepseek_v2, deepseek_v3, "
                    "deepseek_vl_v2 (DeepSeek-OCR), deepseek_ocr2 (DeepSeek-OCR-2)",
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
    int dir = S_ISDIR(st.st_mode);
    if (snprintf(file, sizeof file, dir ? "%s/config.json" : "%s", path) >= (int)sizeof file) {
        snprintf(err, errlen, "%.200s...: the path is too long", path);
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = lp_model_file_read(file, LP_CONFIG_MAX_BYTES, "a Hugging Face config.json", &text,
                                &len, err, errlen);
    if (rc != 0) {
        if (rc > 0 && dir) {
            size_t n = strlen(err);
            snprintf(err + n, errlen > n ? errlen - n : 0, " (a model directory must hold config.json)");
        }
        return -1;
    }
    rc = lp_model_parse(text, len, file, m, err, errlen);
    free(text);
    return rc;
}
