/* Reading safetensors headers only (an 8-byte little-endian length, then a JSON object of
 * tensor name -> dtype, shape, data offsets): exact parameter counts per dtype and per
 * tensor group of a model directory, without reading any weight. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_internal.h"

/* The format's own header limit (the reference reader's HeaderTooLarge), and the index's. */
#define LP_SAFETENSORS_MAX_HEADER UINT64_C(100000000)
#define LP_SAFETENSORS_MAX_INDEX ((size_t)64 << 20)

const char *lp_weight_group_name(enum lp_weight_group g)
{
    static const char *const names[LP_WEIGHT_GROUP_COUNT] = {
        "embedding", "attention", "mlp (dense)", "moe router", "moe routed experts",
        "moe shared experts", "norms", "lm_head", "vision", "mtp", "other"};
    return (unsigned)g < LP_WEIGHT_GROUP_COUNT ? names[g] : "?";
}

double lp_weights_analytic(const struct lp_params *p, enum lp_weight_group g)
{
    static const int module_of[LP_WEIGHT_GROUP_COUNT] = {
        [LP_WEIGHT_GROUP_EMBED] = LP_MODULE_EMBED,
        [LP_WEIGHT_GROUP_ATTN] = LP_MODULE_ATTN_PROJ,
        [LP_WEIGHT_GROUP_MLP] = LP_MODULE_MLP,
        [LP_WEIGHT_GROUP_ROUTER] = LP_MODULE_ROUTER,
        [LP_WEIGHT_GROUP_EXPERTS] = LP_MODULE_EXPERTS,
        [LP_WEIGHT_GROUP_SHARED] = LP_MODULE_SHARED_EXPERTS,
        [LP_WEIGHT_GROUP_NORMS] = LP_MODULE_NORMS,
        [LP_WEIGHT_GROUP_LM_HEAD] = LP_MODULE_LM_HEAD,
        [LP_WEIGHT_GROUP_VISION] = -1, [LP_WEIGHT_GROUP_MTP] = -1, [LP_WEIGHT_GROUP_OTHER] = -1};
    if (g == LP_WEIGHT_GROUP_VISION)
        return p->vision;
    if (g == LP_WEIGHT_GROUP_MTP)
        return p->mtp;
    return (unsigned)g < LP_WEIGHT_GROUP_COUNT && module_of[g] >= 0
               ? p->per_module[module_of[g]]
               : 0;
}

/* Bytes per element of a safetensors dtype; 0 for one this table does not know (packed
 * formats), whose data size is then not checked. */
static uint64_t dtype_size(const char *d)
{
    static const struct {
        const char *name;
        uint64_t size;
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
        return LP_WEIGHT_GROUP_MTP;
    if (strstr(n, "sam_model") || strstr(n, "vision_model") || strstr(n, "vision_tower") ||
        strstr(n, "visual.") || strstr(n, "projector") || strstr(n, "image_newline") ||
        strstr(n, "view_seperator") || strstr(n, "view_separator"))
        return LP_WEIGHT_GROUP_VISION;
    if (strstr(n, "lm_head"))
        return LP_WEIGHT_GROUP_LM_HEAD;
    if (strstr(n, "embed") || strstr(n, "wte.") || strstr(n, "wpe."))
        return LP_WEIGHT_GROUP_EMBED;
    if (strstr(n, "norm") || strstr(n, "ln_"))
        return LP_WEIGHT_GROUP_NORMS;
    if (strstr(n, "shared_expert"))
        return LP_WEIGHT_GROUP_SHARED;
    if (strstr(n, "experts."))
        return LP_WEIGHT_GROUP_EXPERTS;
    if (strstr(n, ".gate.") || strstr(n, "e_score_correction_bias") || strstr(n, "router"))
        return LP_WEIGHT_GROUP_ROUTER;
    if (strstr(n, "attn") || strstr(n, "attention"))
        return LP_WEIGHT_GROUP_ATTN;
    if (strstr(n, "mlp") || strstr(n, "feed_forward"))
        return LP_WEIGHT_GROUP_MLP;
    return LP_WEIGHT_GROUP_OTHER;
}

/* A whole number >= 0 at V into *X; 0 when V is not one. */
static int get_u64(const json_t *v, uint64_t *x)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return 0;
    *x = (uint64_t)json_integer_value(v);
    return 1;
}

/* Checks one tensor entry T named KEY and adds it to W. DATA_SIZE: the bytes after the
 * header, UINT64_MAX when unknown. Every size is a uint64 whose products are checked: no
 * input overflows or is taken at a wrong size. */
static enum lp_status add_tensor(const char *name, const char *key, json_t *t, uint64_t data_size,
                                 const struct lp_model *m, struct lp_weights *w, char *err,
                                 size_t errlen)
{
    json_t *dtype = json_object_get(t, "dtype"), *shape = json_object_get(t, "shape");
    json_t *off = json_object_get(t, "data_offsets");
    if (!json_is_object(t) || !json_is_string(dtype) || !json_is_array(shape) ||
        !json_is_array(off) || json_array_size(off) != 2) {
        snprintf(err, errlen, "%s: tensor \"%.80s\" lacks dtype, shape or data_offsets (a pair)",
                 name, key);
        return LP_ERR_FORMAT;
    }
    const char *dn = json_string_value(dtype);
    /* the element count: a zero dimension makes it 0 whatever the others are */
    uint64_t numel = 1, dim;
    int zero = 0;
    size_t i;
    json_t *d;
    json_array_foreach(shape, i, d) {
        if (!get_u64(d, &dim)) {
            snprintf(err, errlen, "%s: tensor \"%.80s\": shape[%zu] is not a whole number >= 0",
                     name, key, i);
            return LP_ERR_FORMAT;
        }
        zero |= dim == 0;
    }
    json_array_foreach(shape, i, d) {
        if (!zero && __builtin_mul_overflow(numel, (uint64_t)json_integer_value(d), &numel)) {
            snprintf(err, errlen, "%s: tensor \"%.80s\": its shape's element count overflows 64 "
                                  "bits: the header is corrupt", name, key);
            return LP_ERR_FORMAT;
        }
    }
    if (zero)
        numel = 0;
    uint64_t begin, end;
    if (!get_u64(json_array_get(off, 0), &begin) || !get_u64(json_array_get(off, 1), &end)) {
        snprintf(err, errlen, "%s: tensor \"%.80s\": data_offsets must be two whole numbers >= 0 "
                              "(begin, end): the header is corrupt", name, key);
        return LP_ERR_FORMAT;
    }
    if (begin > end) {
        snprintf(err, errlen, "%s: tensor \"%.80s\": data_offsets begin at %llu, after their end "
                              "%llu: the header is corrupt", name, key, (unsigned long long)begin,
                 (unsigned long long)end);
        return LP_ERR_FORMAT;
    }
    uint64_t size = dtype_size(dn), bytes = 0;
    if (size > 0 && (__builtin_mul_overflow(numel, size, &bytes) || end - begin != bytes)) {
        snprintf(err, errlen, "%s: tensor \"%.80s\": data_offsets [%llu, %llu] hold %llu bytes, "
                              "but %llu elements of %s need %s%llu: the header is corrupt",
                 name, key, (unsigned long long)begin, (unsigned long long)end,
                 (unsigned long long)(end - begin), (unsigned long long)numel, dn,
                 bytes < numel ? "more than " : "", (unsigned long long)(bytes < numel ? numel : bytes));
        return LP_ERR_FORMAT;
    }
    if (size == 0 && numel / 8 > end - begin) {
        /* a dtype not in the table: no format packs more than 8 elements in a byte */
        snprintf(err, errlen, "%s: tensor \"%.80s\": %llu elements of %s in %llu bytes: the "
                              "header is corrupt", name, key, (unsigned long long)numel, dn,
                 (unsigned long long)(end - begin));
        return LP_ERR_FORMAT;
    }
    if (end > data_size) {
        snprintf(err, errlen, "%s: tensor \"%.80s\": data_offsets end at %llu, past the %llu bytes "
                              "of data after the header: the file is cut short or corrupt",
                 name, key, (unsigned long long)end, (unsigned long long)data_size);
        return LP_ERR_FORMAT;
    }
    if (w->tensors == INT_MAX) {
        snprintf(err, errlen, "%s: more than %d tensors in all", name, INT_MAX);
        return LP_ERR_FORMAT;
    }
    w->tensors++;
    w->params += (double)numel;
    w->bytes += (double)(end - begin);
    w->by_group[classify(key, m)] += (double)numel;
    int k = 0;
    while (k < w->n_dtypes && strcmp(w->by_dtype[k].name, dn))
        k++;
    if (k == w->n_dtypes && k < LP_MAX_DTYPES) {
        snprintf(w->by_dtype[k].name, sizeof w->by_dtype[k].name, "%s", dn);
        w->n_dtypes++;
    }
    if (k < w->n_dtypes)
        w->by_dtype[k].params += (double)numel;
    return LP_OK;
}

static enum lp_status parse_header(const char *text, size_t len, const char *name,
                                   uint64_t data_size, const struct lp_model *m,
                                   struct lp_weights *w, char *err, size_t errlen)
{
    if (len > LP_SAFETENSORS_MAX_HEADER) {
        snprintf(err, errlen, "%s: the safetensors header is %zu bytes, over the format's limit of "
                              "%llu", name, len, (unsigned long long)LP_SAFETENSORS_MAX_HEADER);
        return LP_ERR_FORMAT;
    }
    char jerr[512];
    json_t *root = lp_model_json_parse(text, len, LP_WEIGHTS_MAX_VALUES, JSON_REJECT_DUPLICATES,
                                       name, jerr, sizeof jerr);
    if (!root || !json_is_object(root)) {
        snprintf(err, errlen, "%s: the safetensors header is not a JSON object (%s)", name,
                 root ? "other JSON" : jerr);
        json_decref(root);
        return LP_ERR_FORMAT;
    }
    const char *key;
    json_t *t;
    enum lp_status rc = LP_OK;
    json_object_foreach(root, key, t) {
        if (strcmp(key, "__metadata__") != 0 &&
            (rc = add_tensor(name, key, t, data_size, m, w, err, errlen)) != LP_OK)
            break;
    }
    json_decref(root);
    return rc;
}

enum lp_status lp_safetensors_header_parse(const char *text, size_t len, const char *name,
                                           const struct lp_model *m, struct lp_weights *w,
                                           char *err, size_t errlen)
{
    return parse_header(text, len, name, UINT64_MAX, m, w, err, errlen);
}

/* Reads the header of the safetensors file PATH (checking its length against the file's
 * size before allocating) into W. */
static enum lp_status read_header(const char *path, const struct lp_model *m,
                                  struct lp_weights *w, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO must not block the open; only regular files are read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return LP_ERR_IO;
    }
    enum lp_status rc = LP_ERR_IO;
    char *text = NULL;
    struct stat st;
    unsigned char len8[8];
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file; a safetensors file is expected", path);
        rc = LP_ERR_FORMAT;
        goto out;
    }
    uint64_t file_size = (uint64_t)st.st_size;
    if (file_size < 8 || pread(fd, len8, 8, 0) != 8) {
        snprintf(err, errlen, "%s: shorter than a safetensors header (8 bytes of length)", path);
        rc = LP_ERR_FORMAT;
        goto out;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len8[i];
    if (n == 0 || n > LP_SAFETENSORS_MAX_HEADER) {
        snprintf(err, errlen, "%s: header length %llu is not plausible (1 to %llu bytes): not a "
                              "safetensors file", path, (unsigned long long)n,
                 (unsigned long long)LP_SAFETENSORS_MAX_HEADER);
        rc = LP_ERR_FORMAT;
        goto out;
    }
    if (n > file_size - 8) {
        snprintf(err, errlen, "%s: header length %llu is past the end of the %llu-byte file: cut "
                              "short or not a safetensors file", path, (unsigned long long)n,
                 (unsigned long long)file_size);
        rc = LP_ERR_FORMAT;
        goto out;
    }
    text = malloc(n);
    size_t got = 0;
    while (text && got < n) {
        ssize_t r = pread(fd, text + got, n - got, (off_t)(8 + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (!text || got != n) {
        snprintf(err, errlen, "%s: %s", path, text ? "header cut short while read" : "out of memory");
        rc = text ? LP_ERR_IO : LP_ERR_NOMEM;
        goto out;
    }
    rc = parse_header(text, n, path, file_size - 8 - n, m, w, err, errlen);
    w->files += rc == LP_OK;
out:
    free(text);
    close(fd);
    return rc;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

enum lp_status lp_weights_scan(const char *dir, const struct lp_model *m, struct lp_weights *w,
                               int *found, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    *found = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    char *text = NULL;
    size_t len = 0;
    int missing = 0;
    enum lp_status rc = lp_model_file_read(path, LP_SAFETENSORS_MAX_INDEX,
                                           "a safetensors index (model.safetensors.index.json)",
                                           &text, &len, &missing, err, errlen);
    if (rc != LP_OK && !missing)
        return rc;
    if (rc == LP_OK) {
        json_t *index = lp_model_json_parse(text, len, LP_WEIGHTS_MAX_VALUES,
                                            JSON_REJECT_DUPLICATES, path, err, errlen);
        free(text);
        if (!index)
            return LP_ERR_FORMAT;
        json_t *map = json_object_get(index, "weight_map");
        if (!json_is_object(map)) {
            snprintf(err, errlen, "%s: no \"weight_map\" object", path);
            json_decref(index);
            return LP_ERR_FORMAT;
        }
        /* each shard once, in the order first named */
        json_t *seen = json_object();
        const char *key;
        json_t *file;
        json_object_foreach(map, key, file) {
            if (!json_is_string(file) || !*json_string_value(file) ||
                strchr(json_string_value(file), '/')) {
                snprintf(err, errlen, "%s: weight_map[\"%.80s\"] is not a file name in the "
                                      "directory", path, key);
                rc = LP_ERR_FORMAT;
                break;
            }
            if (json_object_get(seen, json_string_value(file)))
                continue;
            json_object_set_new(seen, json_string_value(file), json_true());
            char shard[4096 + 256];
            snprintf(shard, sizeof shard, "%s/%s", dir, json_string_value(file));
            if ((rc = read_header(shard, m, w, err, errlen)) != LP_OK)
                break;
        }
        json_decref(seen);
        json_decref(index);
        *found = rc == LP_OK;
        return rc;
    }
    DIR *d = opendir(dir);
    if (!d)
        return LP_OK; /* none found */
    struct dirent *e;
    rc = LP_OK;
    while ((e = readdir(d))) {
        if (!has_suffix(e->d_name, ".safetensors"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if ((rc = read_header(path, m, w, err, errlen)) != LP_OK)
            break;
        *found = 1;
    }
    closedir(d);
    return rc;
}
