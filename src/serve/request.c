/* A profiling request as the contract defines it (docs/openapi.yaml, LLMProfileRequest):
 * checked field by field, with its defaults filled, and turned into a command from a runner
 * template configured on the server. A request never supplies a command or a word of one:
 * only typed values, each one whole argument, into the template's named slots. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "llmprof/model.h"
#include "serve_internal.h"

static const char *const slots[] = {"model_path", "input_dir", "repeats", "device",
                                    "max_new_tokens", NULL};
#define FLASH_SLOT "{use_flash_attn:"

int lp_serve_runner_parse(const char *spec, struct lp_serve_runner *out, char *err, size_t len)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(spec, '=');
    size_t nl = eq ? (size_t)(eq - spec) : 0;
    if (!eq || nl == 0 || nl > 64 || strspn(spec, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                                                   "vwxyz0123456789_.-") != nl) {
        snprintf(err, len, "--runner '%s': give NAME=TEMPLATE, NAME of letters, digits, '_', "
                           "'.' and '-' (at most 64)", spec);
        return -1;
    }
    char *copy = strdup(eq + 1);
    out->name = strndup(spec, nl);
    out->words = calloc(strlen(eq + 1) / 2 + 2, sizeof *out->words);
    if (!copy || !out->name || !out->words) {
        free(copy);
        lp_serve_runner_free(out);
        snprintf(err, len, "out of memory");
        return -1;
    }
    char *save = NULL;
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
        out->words[out->n_words++] = strdup(w);
    free(copy);
    for (size_t i = 0; i < out->n_words; i++) {
        const char *w = out->words[i];
        int known = !w || w[0] != '{';
        for (int k = 0; !known && slots[k]; k++)
            known = strlen(w) == strlen(slots[k]) + 2 && !strncmp(w + 1, slots[k],
                                                                  strlen(slots[k])) &&
                    w[strlen(w) - 1] == '}';
        known |= w && !strncmp(w, FLASH_SLOT, strlen(FLASH_SLOT)) && w[strlen(w) - 1] == '}' &&
                 strlen(w) > strlen(FLASH_SLOT) + 1;
        if (!w || !known) {
            snprintf(err, len, "--runner %s: %s '%s' (slots: {model_path} {input_dir} {repeats} "
                               "{device} {max_new_tokens} {use_flash_attn:WORD})",
                     out->name, w ? "unknown slot" : "out of memory", w ? w : "");
            lp_serve_runner_free(out);
            return -1;
        }
    }
    if (out->n_words == 0 || out->words[0][0] == '{') {
        snprintf(err, len, "--runner %s: the template must start with a program", out->name);
        lp_serve_runner_free(out);
        return -1;
    }
    return 0;
}

void lp_serve_runner_free(struct lp_serve_runner *r)
{
    for (size_t i = 0; r->words && i < r->n_words; i++)
        free(r->words[i]);
    free(r->words);
    free(r->name);
    memset(r, 0, sizeof *r);
}

static int matches(const char *s, const char *pattern)
{
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return 0;
    int ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* FIELD of REQ, a string matching PATTERN (NULL: any) or absent (DEF): 0, or -1 with ERR */
static int string_field(json_t *req, const char *field, const char *pattern, const char *def,
                        size_t max, char *err, size_t len)
{
    json_t *v = json_object_get(req, field);
    if (!v && def) {
        json_object_set_new(req, field, json_string(def));
        return 0;
    }
    if (!v) {
        snprintf(err, len, "field '%s' is required", field);
        return -1;
    }
    if (!json_is_string(v) || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v) ||
        (pattern && !matches(json_string_value(v), pattern))) {
        snprintf(err, len, "field '%s' must be a string%s%s", field,
                 pattern ? " matching " : " of at most 4096 bytes", pattern ? pattern : "");
        return -1;
    }
    return 0;
}

static int int_field(json_t *req, const char *field, json_int_t lo, json_int_t hi, json_int_t def,
                     char *err, size_t len)
{
    json_t *v = json_object_get(req, field);
    if (!v) {
        json_object_set_new(req, field, json_integer(def));
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, len, "field '%s' must be an integer from %lld to %lld", field,
                 (long long)lo, (long long)hi);
        return -1;
    }
    return 0;
}

/* a path field: absolute, existing, a directory when DIR */
static int path_field(json_t *req, const char *field, int dir, char *err, size_t len)
{
    if (string_field(req, field, NULL, NULL, 4096, err, len) != 0)
        return -1;
    const char *p = json_string_value(json_object_get(req, field));
    struct stat st;
    if (p[0] != '/' || stat(p, &st) != 0 || (dir && !S_ISDIR(st.st_mode))) {
        snprintf(err, len, "field '%s': %s on the server", field,
                 p[0] != '/' ? "give an absolute path"
                 : dir       ? "no such directory"
                             : "no such file or directory");
        return -1;
    }
    return 0;
}

json_t *lp_serve_request_check(const char *body, size_t n, const struct lp_serve_config *cfg,
                               const struct lp_serve_runner **runner, char *err, size_t len)
{
    json_error_t e;
    json_t *req = json_loadb(body, n, JSON_REJECT_DUPLICATES, &e);
    if (!req) {
        snprintf(err, len, "the body is not JSON (line %d: %s)", e.line, e.text);
        /* an integer past 64 bits: read as a number to name the field it is in */
        json_t *wide = strstr(e.text, "too big integer")
                           ? json_loadb(body, n, JSON_DECODE_INT_AS_REAL, NULL)
                           : NULL;
        static const char *const ints[] = {"repeats", "max_new_tokens"};
        for (size_t i = 0; i < 2; i++) {
            json_t *v = json_object_get(wide, ints[i]);
            if (json_is_real(v) && (json_real_value(v) > 9.2e18 || json_real_value(v) < -9.2e18))
                snprintf(err, len, "field '%s' must be an integer from %d to %d", ints[i],
                         i ? 2 : 1, i ? 8192 : 1000);
        }
        json_decref(wide);
        return NULL;
    }
    static const char *const known[] = {"runner", "model_path", "input_dir", "repeats",
                                        "use_flash_attn", "device", "max_new_tokens", "tag",
                                        NULL};
    const char *key;
    json_t *v;
    int bad = !json_is_object(req);
    if (bad)
        snprintf(err, len, "the body must be a JSON object (LLMProfileRequest)");
    json_object_foreach(req, key, v) {
        int k = 0;
        while (known[k] && strcmp(known[k], key))
            k++;
        if (!bad && !known[k]) {
            /* the name as given when it is short plain ASCII (the message must stay UTF-8) */
            int plain = strlen(key) <= 64;
            for (const char *q = key; plain && *q; q++)
                plain = *q >= 0x20 && *q < 0x7f;
            snprintf(err, len, "unknown field '%s' (LLMProfileRequest: runner, model_path, "
                               "input_dir, repeats, use_flash_attn, device, max_new_tokens, "
                               "tag)", plain ? key : "(a name not shown)");
            bad = 1;
        }
    }
    bad = bad || string_field(req, "runner", "^[A-Za-z0-9_.-]{1,64}$", cfg->runners[0].name,
                              64, err, len) ||
          path_field(req, "model_path", 0, err, len) || path_field(req, "input_dir", 1, err, len) ||
          int_field(req, "repeats", 1, 1000, 3, err, len) ||
          string_field(req, "device", "^cuda(:[0-9]{1,3})?$", "cuda:0", 16, err, len) ||
          int_field(req, "max_new_tokens", 2, 8192, 64, err, len) ||
          string_field(req, "tag", "^[A-Za-z0-9_.-]{1,64}$", "default", 64, err, len);
    if (!bad) {
        v = json_object_get(req, "use_flash_attn");
        if (!v)
            json_object_set_new(req, "use_flash_attn", json_false());
        else if (!json_is_boolean(v)) {
            snprintf(err, len, "field 'use_flash_attn' must be true or false");
            bad = 1;
        }
    }
    *runner = NULL;
    for (size_t i = 0; !bad && i < cfg->n_runners; i++)
        if (!strcmp(cfg->runners[i].name, json_string_value(json_object_get(req, "runner"))))
            *runner = &cfg->runners[i];
    if (!bad && !*runner) {
        snprintf(err, len, "field 'runner': '%s' is not a runner of this server",
                 json_string_value(json_object_get(req, "runner")));
        bad = 1;
    }
    if (bad) {
        json_decref(req);
        return NULL;
    }
    return req;
}

int lp_serve_id_valid(const char *id)
{
    static const char shape[] = "99999999-999999-xxxxxx";
    if (strlen(id) != LP_SERVE_ID_LEN)
        return 0;
    for (size_t i = 0; i < LP_SERVE_ID_LEN; i++) {
        char c = id[i];
        if (shape[i] == '9' ? !(c >= '0' && c <= '9')
            : shape[i] == 'x' ? !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
                              : c != shape[i])
            return 0;
    }
    return 1;
}

/* the request's value for the template word W as one argument; NULL: no argument */
static char *slot_value(const char *w, const json_t *req)
{
    if (w[0] != '{')
        return strdup(w);
    if (!strncmp(w, FLASH_SLOT, strlen(FLASH_SLOT)))
        return json_is_true(json_object_get(req, "use_flash_attn"))
                   ? strndup(w + strlen(FLASH_SLOT), strlen(w) - strlen(FLASH_SLOT) - 1)
                   : NULL;
    char field[32];
    snprintf(field, sizeof field, "%.*s", (int)strlen(w) - 2, w + 1);
    json_t *v = json_object_get(req, field);
    if (json_is_string(v))
        return strdup(json_string_value(v));
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    return strdup(num);
}

/* MODEL_PATH/config.json when llmprof's model analysis reads it (its MFU and MBU then go
 * into the report and the headline), else NULL */
static char *model_config(const char *model_path)
{
    char *path = NULL;
    struct lp_model m;
    char err[256];
    if (asprintf(&path, "%s/config.json", model_path) < 0)
        return NULL;
    if (lp_model_load(path, &m, err, sizeof err) != LP_OK) {
        free(path);
        return NULL;
    }
    return path;
}

char **lp_serve_argv(const struct lp_serve_config *cfg, const struct lp_serve_runner *runner,
                     const json_t *request, const char *out)
{
    char *config = model_config(json_string_value(json_object_get(request, "model_path")));
    const char *head[] = {cfg->llmprof, "profile", "-o", out, "--quiet", "--model", config, "--"};
    size_t nh = sizeof head / sizeof *head, n = 0;
    if (!config) { /* no --model: the report without MFU */
        head[5] = "--";
        nh = 6;
    }
    char **argv = calloc(nh + runner->n_words + 1, sizeof *argv);
    if (!argv) {
        free(config);
        return NULL;
    }
    for (size_t i = 0; i < nh; i++)
        if (!(argv[n++] = strdup(head[i])))
            goto fail;
    for (size_t i = 0; i < runner->n_words; i++) {
        int optional = !strncmp(runner->words[i], FLASH_SLOT, strlen(FLASH_SLOT));
        char *a = slot_value(runner->words[i], request);
        if (!a && !optional)
            goto fail;
        if (a)
            argv[n++] = a;
    }
    free(config);
    return argv;
fail:
    free(config);
    lp_serve_argv_free(argv);
    return NULL;
}

void lp_serve_argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}
