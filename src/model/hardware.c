/* The hardware table: data/hardware.tsv (compiled in) and a user's --hw-file rows, and the
 * lookup of a GPU by table name or by the device name a trace records. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hardware_tsv.h" /* generated: lp_hardware_tsv[] */
#include "model_internal.h"

#define LP_HW_FILE_MAX_BYTES ((size_t)1 << 20)

/* Parses TEXT's rows into T (prepending them when FIRST). NAME names the file in errors. */
static enum lp_status parse_rows(struct lp_gpu_table *t, const char *text, const char *name,
                                 int first, char *err, size_t errlen)
{
    struct lp_gpu *rows = NULL;
    size_t n = 0, cap = 0;
    int line_no = 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[1024];
        line_no++;
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line too long", name, line_no);
            free(rows);
            return LP_ERR_FORMAT;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (end ? 1 : 0);
        if (len && line[len - 1] == '\r')
            line[--len] = 0;
        if (line[0] == '#' || strspn(line, " \t") == len)
            continue;
        struct lp_gpu g = {0};
        char *save = NULL, *f[11];
        int nf = 0;
        for (char *tok = strtok_r(line, "\t", &save); tok && nf < 11; tok = strtok_r(NULL, "\t", &save))
            f[nf++] = tok;
        if (nf != 11) {
            snprintf(err, errlen, "%s:%d: %d columns; expected 11 tab-separated: name, match, fp32, "
                                  "tf32, bf16, fp16, fp8, int8, int4 (TFLOP/s), mem_gb, mem_bw_gbs",
                     name, line_no, nf);
            free(rows);
            return LP_ERR_FORMAT;
        }
        snprintf(g.name, sizeof g.name, "%s", f[0]);
        snprintf(g.match, sizeof g.match, "%s", f[1]);
        double vals[9];
        for (int i = 0; i < 9; i++) {
            char *e = NULL;
            errno = 0;
            vals[i] = strtod(f[2 + i], &e);
            if (errno || *e || vals[i] < 0 || !isfinite(vals[i])) {
                snprintf(err, errlen, "%s:%d: column %d (\"%s\") must be a number >= 0", name,
                         line_no, 3 + i, f[2 + i]);
                free(rows);
                return LP_ERR_FORMAT;
            }
            double max = i < 7 ? LP_MODEL_MAX_TFLOPS : i == 7 ? LP_MODEL_MAX_MEM_GB
                                                             : LP_MODEL_MAX_BW_GBS;
            if (vals[i] > max) {
                snprintf(err, errlen, "%s:%d: column %d (\"%s\") is past llmprof's limit of %.0f "
                                      "(about 100 times any GPU's datasheet figure)",
                         name, line_no, 3 + i, f[2 + i], max);
                free(rows);
                return LP_ERR_FORMAT;
            }
        }
        for (int i = 0; i < LP_DTYPE_COUNT; i++)
            g.tflops[i] = vals[i];
        g.mem_gb = vals[7];
        g.mem_bw_gbs = vals[8];
        if (g.mem_bw_gbs <= 0) {
            snprintf(err, errlen, "%s:%d: mem_bw_gbs must be above 0", name, line_no);
            free(rows);
            return LP_ERR_FORMAT;
        }
        if (n == cap) { /* geometric growth: linear in the rows */
            cap = cap ? 2 * cap : 16;
            struct lp_gpu *r = realloc(rows, cap * sizeof *r);
            if (!r) {
                free(rows);
                snprintf(err, errlen, "out of memory");
                return LP_ERR_NOMEM;
            }
            rows = r;
        }
        rows[n++] = g;
    }
    /* a user's row with a known name replaces that row; the others go first */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < t->n; j++) {
            if (!strcasecmp(t->v[j].name, rows[i].name)) {
                if (j + 1 < t->n)
                    memmove(&t->v[j], &t->v[j + 1], (t->n - j - 1) * sizeof *t->v);
                t->n--;
                break;
            }
        }
    }
    struct lp_gpu *all = malloc((t->n + n + 1) * sizeof *all);
    if (!all) {
        free(rows);
        snprintf(err, errlen, "out of memory");
        return LP_ERR_NOMEM;
    }
    /* the user's rows first, so they win the name matching */
    struct lp_gpu *front = first ? rows : t->v, *back = first ? t->v : rows;
    size_t n_front = first ? n : t->n, n_back = first ? t->n : n;
    if (n_front)
        memcpy(all, front, n_front * sizeof *all);
    if (n_back)
        memcpy(all + n_front, back, n_back * sizeof *all);
    free(t->v);
    free(rows);
    t->v = all;
    t->n += n;
    return LP_OK;
}

enum lp_status lp_gpu_table_load(struct lp_gpu_table *t, const char *file, char *err,
                                 size_t errlen)
{
    memset(t, 0, sizeof *t);
    enum lp_status rc = parse_rows(t, lp_hardware_tsv, "data/hardware.tsv", 0, err, errlen);
    if (rc != LP_OK || !file)
        return rc;
    /* whole or not at all: a longer file was cut at 1 MiB, and a FIFO blocked the open */
    char *text = NULL;
    size_t len = 0;
    rc = lp_model_file_read(file, LP_HW_FILE_MAX_BYTES, "a hardware table (--hw-file, "
                            "tab-separated rows as in data/hardware.tsv)", &text, &len, NULL, err,
                            errlen);
    if (rc == LP_OK && strlen(text) != len) {
        snprintf(err, errlen, "%s: holds a NUL byte: not a hardware table", file);
        rc = LP_ERR_FORMAT;
    }
    if (rc == LP_OK)
        rc = parse_rows(t, text, file, 1, err, errlen);
    free(text);
    if (rc != LP_OK)
        lp_gpu_table_free(t);
    return rc;
}

void lp_gpu_table_free(struct lp_gpu_table *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}

static int contains_nocase(const char *hay, const char *needle, size_t nlen)
{
    size_t hlen = strlen(hay);
    for (size_t i = 0; nlen && i + nlen <= hlen; i++)
        if (!strncasecmp(hay + i, needle, nlen))
            return 1;
    return 0;
}

const struct lp_gpu *lp_gpu_resolve(const struct lp_gpu_table *t, const char *name, char *err,
                                    size_t errlen)
{
    const struct lp_gpu *g = lp_gpu_find(t, name);
    if (g || !errlen)
        return g;
    int len = snprintf(err, errlen, "--gpu '%s' is not in the hardware table", name);
    size_t at = len > 0 && (size_t)len < errlen ? (size_t)len : errlen - 1, shown = 0;
    for (int pass = 0; pass < 2 && !shown; pass++) /* those holding NAME, else every row */
        for (size_t i = 0; i < t->n && at + 1 < errlen; i++) {
            if (!pass && !contains_nocase(t->v[i].name, name, strlen(name)))
                continue;
            len = snprintf(err + at, errlen - at, "%s'%s'", shown++ ? ", " : "; did you mean ",
                           t->v[i].name);
            at += len > 0 && (size_t)len < errlen - at ? (size_t)len : errlen - at - 1;
        }
    snprintf(err + at, errlen - at, "? (llmprof model --list-gpus lists them; --hw-file adds rows)");
    return NULL;
}

const struct lp_gpu *lp_gpu_find(const struct lp_gpu_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcasecmp(t->v[i].name, name))
            return &t->v[i];
    for (size_t i = 0; i < t->n; i++) {
        const char *m = t->v[i].match;
        while (*m) {
            size_t len = strcspn(m, "|");
            if (contains_nocase(name, m, len))
                return &t->v[i];
            m += len + (m[len] == '|');
        }
    }
    return NULL;
}

void lp_gpu_override(struct lp_gpu *g, enum lp_dtype dtype, double peak_tflops,
                     double mem_bw_gbs)
{
    if (peak_tflops > 0 && (unsigned)dtype < LP_DTYPE_COUNT)
        g->tflops[dtype] = peak_tflops;
    if (mem_bw_gbs > 0)
        g->mem_bw_gbs = mem_bw_gbs;
}
