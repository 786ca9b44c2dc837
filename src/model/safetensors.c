/* Reading safetensors headers only (an 8-byte little-endian length, then a JSON object of
 * tensor name -> dtype, shape, data offsets): exact parameter counts per dtype and per
 * tensor group of a model directory, without reading any weight. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/model.h"

const char *lp_weight_group_name(enum lp_weight_group g)
{
    static const char *const names[LP_WG_COUNT] = {
        "embedding", "attention", "mlp (dense)", "moe router", "moe routed experts",
        "moe shared experts", "norms", "lm_head", "vision", "mtp", "other"};
    return (unsigned)g < LP_WG_COUNT ? names[g] : "?";
}

double lp_weights_analytic(const struct lp_params *p, enum lp_weight_group g)
{
    static const int module_of[LP_WG_COUNT] = {
        [LP_WG_EMBED] = LP_MOD_EMBED,       [LP_WG_ATTN] = LP_MOD_ATTN_PROJ,
        [LP_WG_MLP] = LP_MOD_MLP,           [LP_WG_ROUTER] = LP_MOD_ROUTER,
        [LP_WG_EXPERTS] = LP_MOD_EXPERTS,   [LP_WG_SHARED] = LP_MOD_SHARED_EXPERTS,
        [LP_WG_NORMS] = LP_MOD_NORMS,       [LP_WG_LM_HEAD] = LP_MOD_LM_HEAD,
        [LP_WG_VISION] = -1, [LP_WG_MTP] = -1, [LP_WG_OTHER] = -1};
    if (g == LP_WG_VISION)
        return p->vision;
    if (g == LP_WG_MTP)
        return p->mtp;
    return (unsigned)g < LP_WG_COUNT && module_of[g] >= 0 ? p->per_module[module_of[g]] : 0;
}

static double dtype_size(const char *d)
{
    static const struct {
        const char *name;
        double size;
    } sizes[] = {{"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4},
                 {"F16", 2}, {"BF16", 2}, {"I16", 2}, {"U16", 2}, {"I8", 1}, {"U8", 1},
                 {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!strcmp(d, sizes[i].name))
            return sizes[i].size;
    return 0;
}

/* "model.layers.61.mlp..." -> 61, or -1 */
static long layer_index(const char *name)
{
    const char *p = strstr(name, "layers.");
    if (!p)
        return -1;
    char *end = NULL;
    long i = strtol(p + 7, &end, 10);
    return end != p + 7 && *end == '.' ? i : -1;
}

static enum lp_weight_group classify(const char *n, const struct lp_model *m)
{
    long layer = layer_index(n);
    if (m && m->mtp_layers > 0 && layer >= m->layers)
        return LP_WG_MTP;
    if (strstr(n, "sam_model") || strstr(n, "vision_model") || strstr(n, "vision_tower") ||
        strstr(n, "visual.") || strstr(n, "projector") || strstr(n, "image_newline") ||
        strstr(n, "view_seperator") || strstr(n, "view_separator"))
        return LP_WG_VISION;
    if (strstr(n, "lm_head"))
        return LP_WG_LM_HEAD;
    if (strstr(n, "embed") || strstr(n, "wte.") || strstr(n, "wpe."))
        return LP_WG_EMBED;
    if (strstr(n, "norm") || strstr(n, "ln_"))
        return LP_WG_NORMS;
    if (strstr(n, "shared_expert"))
        return LP_WG_SHARED;
    if (strstr(n, "experts."))
        return LP_WG_EXPERTS;
    if (strstr(n, ".gate.") || strstr(n, "e_score_correction_bias") || strstr(n, "router"))
        return LP_WG_ROUTER;
    if (strstr(n, "attn") || strstr(n, "attention"))
        return LP_WG_ATTN;
    if (strstr(n, "mlp") || strstr(n, "feed_forward"))
        return LP_WG_MLP;
    return LP_WG_OTHER;
}

int lp_safetensors_header_parse(const char *text, size_t len, const char *name,
                                const struct lp_model *m, struct lp_weights *w, char *err,
                                size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        snprintf(err, errlen, "%s: the safetensors header is not a JSON object (%s)", name,
                 root ? "other JSON" : jerr.text);
        json_decref(root);
        return -1;
    }
    const char *key;
    json_t *t;
    int rc = 0;
    json_object_foreach(root, key, t) {
        if (!strcmp(key, "__metadata__"))
            continue;
        json_t *dtype = json_object_get(t, "dtype"), *shape = json_object_get(t, "shape");
        json_t *off = json_object_get(t, "data_offsets");
        if (!json_is_object(t) || !json_is_string(dtype) || !json_is_array(shape) ||
            !json_is_array(off) || json_array_size(off) != 2) {
            snprintf(err, errlen, "%s: tensor \"%.80s\" lacks dtype, shape or data_offsets", name, key);
            rc = -1;
            break;
        }
        double numel = 1;
        size_t i;
        json_t *d;
        json_array_foreach(shape, i, d) {
            if (!json_is_integer(d) || json_integer_value(d) < 0) {
                snprintf(err, errlen, "%s: tensor \"%.80s\" has a shape that is not whole numbers",
                         name, key);
                rc = -1;
                break;
            }
            numel *= (double)json_integer_value(d);
        }
        if (rc)
            break;
        json_t *a = json_array_get(off, 0), *b = json_array_get(off, 1);
        double size = dtype_size(json_string_value(dtype));
        if (!json_is_integer(a) || !json_is_integer(b) || json_integer_value(b) < json_integer_value(a) ||
            (size > 0 && (double)(json_integer_value(b) - json_integer_value(a)) != numel * size)) {
            snprintf(err, errlen, "%s: tensor \"%.80s\": data_offsets do not match its shape and "
                                  "dtype %s", name, key, json_string_value(dtype));
            rc = -1;
            break;
        }
        w->tensors++;
        w->params += numel;
        w->bytes += (double)(json_integer_value(b) - json_integer_value(a));
        w->by_group[classify(key, m)] += numel;
        const char *dn = json_string_value(dtype);
        int k = 0;
        while (k < w->n_dtypes && strcmp(w->by_dtype[k].name, dn))
            k++;
        if (k == w->n_dtypes && k < LP_MAX_DTYPES) {
            snprintf(w->by_dtype[k].name, sizeof w->by_dtype[k].name, "%s", dn);
            w->n_dtypes++;
        }
        if (k < w->n_dtypes)
            w->by_dtype[k].params += numel;
    }
    json_decref(root);
    return rc;
}

static int read_header(const char *path, const struct lp_model *m, struct lp_weights *w,
                       char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char len8[8];
    int rc = -1;
    char *text = NULL;
    if (fread(len8, 1, 8, f) != 8) {
        snprintf(err, errlen, "%s: shorter than a safetensors header", path);
        goto out;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len8[i];
    if (n == 0 || n > (100u << 20)) {
        snprintf(err, errlen, "%s: header length %llu is not plausible (0 or over 100 MiB)", path,
                 (unsigned long long)n);
        goto out;
    }
    text = malloc(n);
    if (!text || fread(text, 1, n, f) != n) {
        snprintf(err, errlen, "%s: header cut short (%llu bytes announced)", path,
                 (unsigned long long)n);
        goto out;
    }
    rc = lp_safetensors_header_parse(text, n, path, m, w, err, errlen);
    w->files += rc == 0;
out:
    free(text);
    fclose(f);
    return rc;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

int lp_weights_scan(const char *dir, const struct lp_model *m, struct lp_weights *w, char *err,
                    size_t errlen)
{
    memset(w, 0, sizeof *w);
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_error_t jerr;
    json_t *index = json_load_file(path, 0, &jerr);
    if (index) {
        json_t *map = json_object_get(index, "weight_map");
        if (!json_is_object(map)) {
            snprintf(err, errlen, "%s: no \"weight_map\" object", path);
            json_decref(index);
            return -1;
        }
        /* each shard once, in the order first named */
        json_t *seen = json_object();
        const char *key;
        json_t *file;
        int rc = 0;
        json_object_foreach(map, key, file) {
            if (!json_is_string(file) || strchr(json_string_value(file), '/')) {
                snprintf(err, errlen, "%s: weight_map[\"%.80s\"] is not a file name", path, key);
                rc = -1;
                break;
            }
            if (json_object_get(seen, json_string_value(file)))
                continue;
            json_object_set_new(seen, json_string_value(file), json_true());
            char shard[4096 + 256];
            snprintf(shard, sizeof shard, "%s/%s", dir, json_string_value(file));
            if ((rc = read_header(shard, m, w, err, errlen)) != 0)
                break;
        }
        json_decref(seen);
        json_decref(index);
        return rc;
    }
    DIR *d = opendir(dir);
    if (!d)
        return 1;
    struct dirent *e;
    int rc = 1;
    while ((e = readdir(d))) {
        if (!has_suffix(e->d_name, ".safetensors"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if ((rc = read_header(path, m, w, err, errlen)) != 0)
            break;
    }
    closedir(d);
    return rc;
}
