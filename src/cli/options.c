/* Parsing a subcommand's arguments, and its --help, from its option table (options.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "llmprof/report.h"

/* Levenshtein distance of A and B, stopping at LIMIT + 1: only near misses matter. */
size_t lp_cli_edit_distance(const char *a, const char *b, size_t limit)
{
    size_t la = strlen(a), lb = strlen(b);
    enum { MAX_LEN = 32 };
    if (la > MAX_LEN || lb > MAX_LEN || (la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    size_t row[MAX_LEN + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* D edits from WORD to a name are few enough to suggest that name: at most two, and fewer
 * than WORD's letters past its first SKIP (the "--" of an option): a word of one or two
 * letters is within two edits of too much. */
static int near_enough(size_t d, const char *word, size_t skip)
{
    return d <= 2 && d + skip < strlen(word);
}

const char *lp_cli_nearest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; word && i < n; i++) {
        size_t d = lp_cli_edit_distance(word, names[i], 2);
        if (d < best_d && near_enough(d, word, 0)) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

int lp_cli_bad_value(const char *cmd, const char *opt, const char *v, const char *const *names,
                     size_t n)
{
    char list[512];
    size_t o = 0;
    list[0] = 0;
    for (size_t k = 0; k < n && o < sizeof list; k++) {
        int w = snprintf(list + o, sizeof list - o, "%s%s", !k ? "" : k + 1 < n ? ", " : " or ",
                         names[k]);
        o += w > 0 ? (size_t)w : 0;
    }
    const char *near = lp_cli_nearest(v, names, n);
    char said[256]; /* the value as given: escaped */
    lp_fmt_escape(said, sizeof said, v ? v : "(nothing)");
    if (near)
        lp_cli_error(cmd, "%s takes %s, not '%s'; did you mean '%s'?", opt, list, said, near);
    else
        lp_cli_error(cmd, "%s takes %s, not '%s'", opt, list, said);
    return -1;
}

/* The option name of TABLE (and the tables it takes in) within two edits of A, nearest
 * first; NULL when none is. */
static const char *nearest(const struct lp_cli_opt *table, const char *a, size_t *best_d)
{
    const char *best = NULL;
    for (const struct lp_cli_opt *o = table; o->kind != LP_CLI_OPT_KIND_END; o++) {
        if (o->kind == LP_CLI_OPT_KIND_TABLE) {
            const char *sub = nearest(o->table, a, best_d);
            best = sub ? sub : best;
        } else if (o->kind != LP_CLI_OPT_KIND_TEXT && o->name) {
            size_t d = lp_cli_edit_distance(a, o->name, 2);
            if (d < *best_d && near_enough(d, a, 2)) {
                best = o->name;
                *best_d = d;
            }
        }
    }
    return best;
}

/* The entry of TABLE (or of a table it takes in) spelt A, with *CTX moved to that table's
 * struct; NULL when none is. */
static const struct lp_cli_opt *find(const struct lp_cli_opt *table, const char *a, char **ctx)
{
    for (const struct lp_cli_opt *o = table; o->kind != LP_CLI_OPT_KIND_END; o++) {
        if (o->kind == LP_CLI_OPT_KIND_TABLE) {
            char *sub = *ctx + o->off;
            const struct lp_cli_opt *hit = find(o->table, a, &sub);
            if (hit) {
                *ctx = sub;
                return hit;
            }
        } else if (o->kind != LP_CLI_OPT_KIND_TEXT &&
                   ((o->name && !strcmp(a, o->name)) || (o->alias && !strcmp(a, o->alias)))) {
            return o;
        }
    }
    return NULL;
}

/* Sets O's value in CTX from ARG (NULL: the command line ended); A is how it was spelt. */
static int take(const struct lp_cli_cmd *c, const struct lp_cli_opt *o, char *ctx,
                const char *a, const char *arg)
{
    void *value = ctx + o->off;
    switch (o->kind) {
    case LP_CLI_OPT_KIND_FLAG:
        *(int *)value = o->set;
        return 0;
    case LP_CLI_OPT_KIND_STRING:
        if (!arg || (o->empty && !*arg)) {
            lp_cli_error(c->name, "%s needs %s", a, arg ? o->empty : o->missing ? o->missing
                                                                            : "a value");
            return -1;
        }
        *(const char **)value = arg;
        return 0;
    case LP_CLI_OPT_KIND_INT:
        return lp_cli_parse_range(c->name, a, arg, o->min, o->max, value);
    case LP_CLI_OPT_KIND_DOUBLE:
        return lp_cli_parse_double(c->name, a, arg, o->dmax, value);
    case LP_CLI_OPT_KIND_CALLBACK:
        return o->parse(o, value, c->name, a, arg);
    default:
        return -1;
    }
}

/* Every spelling TABLE (and the tables it takes in) accepts, one a line, with the value's
 * name after a tab when it takes one. */
static void list_options(const struct lp_cli_opt *table, FILE *f)
{
    for (const struct lp_cli_opt *o = table; o->kind != LP_CLI_OPT_KIND_END; o++) {
        if (o->kind == LP_CLI_OPT_KIND_TABLE) {
            list_options(o->table, f);
            continue;
        }
        for (int k = 0; o->kind != LP_CLI_OPT_KIND_TEXT && k < 2; k++) {
            const char *spelt = k ? o->alias : o->name;
            if (spelt)
                fprintf(f, "%s%s%s\n", spelt, o->arg ? "\t" : "", o->arg ? o->arg : "");
        }
    }
}

int lp_cli_list_options(const struct lp_cli_cmd *c, const char *word)
{
    if (!word || strcmp(word, LP_CLI_LIST_OPTIONS))
        return 0;
    list_options(c->opts, stdout);
    return 1;
}

int lp_cli_parse(const struct lp_cli_cmd *c, void *ctx, int argc, char **argv, int *first)
{
    int i = 1;
    if (argc > 1 && lp_cli_list_options(c, argv[1]))
        return 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (c->stops_at_command && !strcmp(a, "--")) {
            i++;
            break;
        }
        if (c->stops_at_command && a[0] != '-')
            break;
        char *at = ctx;
        const struct lp_cli_opt *o = a[0] == '-' ? find(c->opts, a, &at) : NULL;
        if (o && o->kind == LP_CLI_OPT_KIND_HELP) {
            lp_cli_help(c, stdout);
            return 1;
        }
        if (o) {
            /* a value is the next word, whatever it looks like */
            const char *arg = o->arg && i + 1 < argc ? argv[i + 1] : NULL;
            if (take(c, o, at, a, arg) != 0)
                return -1;
            i += o->arg != NULL;
            continue;
        }
        const char **operand = c->operand ? (const char **)((char *)ctx + c->operand_off) : NULL;
        int k = 0;
        while (operand && k < c->operand && operand[k])
            k++;
        if (a[0] != '-' && operand && k < c->operand) {
            operand[k] = a;
        } else if (a[0] != '-' && operand && c->too_many) {
            lp_cli_error(c->name, "%s: '%s' and '%s'", c->too_many, operand[k - 1], a);
            return -1;
        } else {
            size_t d = 3;
            const char *near = a[0] == '-' ? nearest(c->opts, a, &d) : NULL;
            if (near)
                lp_cli_error(c->name, "%s '%s'; did you mean '%s'? (see 'llmprof %s --help')",
                             c->unexpected ? "unexpected" : "unknown option", a, near, c->name);
            else
                lp_cli_error(c->name, "%s '%s'; see 'llmprof %s --help'",
                             c->unexpected ? "unexpected" : "unknown option", a, c->name);
            return -1;
        }
    }
    if (first)
        *first = i;
    return 0;
}

int lp_cli_is_help(const struct lp_cli_cmd *c, const char *word)
{
    char none = 0, *at = &none;
    const struct lp_cli_opt *o = find(c->opts, word, &at);
    return o && o->kind == LP_CLI_OPT_KIND_HELP;
}

void lp_cli_wrap(FILE *f, const char *text, int width)
{
    int col = 0;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col && col + 1 + (int)word > width) {
            fputc('\n', f);
            col = 0;
        } else if (col) {
            fputc(' ', f);
            col++;
        }
        fwrite(text, 1, word, f);
        col += (int)word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

/* One option's lines: its spelling, then its help from the help column. */
static void help_line(const struct lp_cli_cmd *c, const struct lp_cli_opt *o, FILE *f)
{
    char left[128];
    if (o->spell)
        snprintf(left, sizeof left, "%s", o->spell);
    else
        snprintf(left, sizeof left, "%s%s%s%s%s", o->alias ? o->alias : "",
                 o->alias && o->name ? ", " : "", o->name ? o->name : "", o->arg ? " " : "",
                 o->arg ? o->arg : "");
    int pad = c->help_col - 2 - (int)strlen(left);
    fprintf(f, "  %s%*s", left, pad < 3 ? 3 : pad, "");
    for (const char *h = o->help; *h;) {
        size_t n = strcspn(h, "\n");
        fwrite(h, 1, n, f);
        h += n;
        if (*h) {
            h++;
            fprintf(f, "\n%*s", c->help_col, "");
        }
    }
    fputc('\n', f);
}

void lp_cli_help(const struct lp_cli_cmd *c, FILE *f)
{
    for (const struct lp_cli_opt *o = c->opts; o->kind != LP_CLI_OPT_KIND_END; o++) {
        if (o->kind == LP_CLI_OPT_KIND_TEXT && o->print)
            o->print(f);
        else if (o->kind == LP_CLI_OPT_KIND_TEXT)
            fputs(o->help, f);
        else if (o->kind != LP_CLI_OPT_KIND_TABLE && o->help)
            help_line(c, o, f);
    }
}

/* The spelling of O in a list of options: "-o/--output DIR" */
static int spelling(char *buf, size_t len, const struct lp_cli_opt *o)
{
    return snprintf(buf, len, "%s%s%s%s%s", o->alias ? o->alias : "",
                    o->alias && o->name ? "/" : "", o->name ? o->name : "", o->arg ? " " : "",
                    o->arg ? o->arg : "");
}

/* lp_cli_help_names' items from TABLE, at column *COL of a line of WIDTH. */
static void help_names(FILE *f, const struct lp_cli_opt *table, const char *const *except,
                       int *col, int *n)
{
    for (const struct lp_cli_opt *o = table; o->kind != LP_CLI_OPT_KIND_END; o++) {
        if (o->kind == LP_CLI_OPT_KIND_TABLE) {
            help_names(f, o->table, except, col, n);
            continue;
        }
        if (o->kind == LP_CLI_OPT_KIND_TEXT || o->kind == LP_CLI_OPT_KIND_HELP || !o->name)
            continue;
        int skip = 0;
        for (size_t k = 0; except && except[k]; k++)
            skip |= !strcmp(except[k], o->name);
        if (skip)
            continue;
        char item[160];
        int w = spelling(item, sizeof item, o);
        /* a line holds its items and the ',' (or the tail's '.') after the last */
        const char *sep = *n ? ", " : *col ? " " : "";
        if (*col && *col + (int)strlen(sep) + w + 1 > LP_CLI_HELP_WIDTH) {
            fputs(*n ? ",\n" : "\n", f);
            *col = 0;
        } else {
            fputs(sep, f);
            *col += (int)strlen(sep);
        }
        fputs(item, f);
        *col += w;
        (*n)++;
    }
}

void lp_cli_help_names(FILE *f, const char *lead, const struct lp_cli_opt *table,
                       const char *const *except, const char *tail)
{
    int col = 0, n = 0;
    /* the lead as a paragraph whose last line the names continue */
    const char *last = strrchr(lead, '\n');
    fputs(lead, f);
    col = (int)strlen(last ? last + 1 : lead);
    help_names(f, table, except, &col, &n);
    fprintf(f, "%s\n", tail ? tail : "");
}

/* ---- values ---- */

int lp_cli_parse_range(const char *cmd, const char *opt, const char *v, int64_t min,
                       int64_t max, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    int range = errno == ERANGE;
    if (v && *v && !*end && ((range && x > 0) || (!range && x > max))) {
        lp_cli_error(cmd, "%s %s is too large (at most %lld)", opt, v, (long long)max);
        return -1;
    }
    if (!v || !*v || *end || range || x < min) {
        if (max < INT64_MAX)
            lp_cli_error(cmd, "%s takes a whole number from %lld to %lld, not '%s'", opt,
                         (long long)min, (long long)max, v ? v : "(nothing)");
        else
            lp_cli_error(cmd, "%s takes a whole number >= %lld, not '%s'", opt, (long long)min,
                         v ? v : "(nothing)");
        return -1;
    }
    *out = x;
    return 0;
}

int lp_cli_opt_append(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                      const char *arg)
{
    struct lp_cli_words *w = value;
    if (!arg) {
        lp_cli_error(cmd, "%s needs %s", opt, o->arg);
        return -1;
    }
    const char **p = realloc(w->v, (w->n + 1) * sizeof *p);
    if (!p) {
        lp_cli_error(cmd, "out of memory");
        return -1;
    }
    w->v = p;
    p[w->n++] = arg;
    return 0;
}

int lp_cli_opt_stage(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg)
{
    if (!arg || !strchr(arg, '=')) {
        lp_cli_error(cmd, "%s takes NAME=REGEX, e.g. --stage decode='^step', not '%s'", opt,
                     arg ? arg : "(nothing)");
        return -1;
    }
    return lp_cli_opt_append(o, value, cmd, opt, arg);
}

int lp_cli_opt_bytes(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg)
{
    (void)o;
    static const char units[] = "KMGT";
    size_t n = arg ? strspn(arg, "0123456789") : 0;
    const char *u = n && arg[n] ? strchr(units, arg[n]) : NULL;
    int shift = u ? 10 * (int)(u - units + 1) : 0;
    char digits[24];
    int64_t x = 0;
    if (!arg || n == 0 || n >= sizeof digits || (arg[n] && (!u || arg[n + 1]))) {
        lp_cli_error(cmd, "%s takes a size in bytes, with K, M, G or T for powers of 1024 "
                          "(2G), not '%s'", opt, arg ? arg : "(nothing)");
        return -1;
    }
    memcpy(digits, arg, n);
    digits[n] = 0;
    errno = 0;
    unsigned long long v = strtoull(digits, NULL, 10);
    if (errno == ERANGE || v > (unsigned long long)(INT64_MAX >> shift)) {
        lp_cli_error(cmd, "%s %s is too large (below 8 EiB)", opt, arg);
        return -1;
    }
    x = (int64_t)v;
    *(uint64_t *)value = (uint64_t)x << shift;
    return 0;
}

int lp_cli_parse_double(const char *cmd, const char *opt, const char *v, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    int whole = v && *v && !*end;
    if (whole && x > 0 && (isinf(x) || (errno == ERANGE && x > 1))) {
        lp_cli_error(cmd, "%s %s is too large", opt, v);
        return -1;
    }
    if (whole && errno == ERANGE && !signbit(x) && x <= 1) {
        lp_cli_error(cmd, "%s %s is too small to be told from 0", opt, v);
        return -1;
    }
    /* !(x > 0) and !(x <= max), not x <= 0 and x > max: NaN fails both */
    if (!whole || !(x > 0)) {
        lp_cli_error(cmd, "%s takes a number above 0 and at most %g, not '%s'", opt, max,
                     v ? v : "(nothing)");
        return -1;
    }
    if (!(x <= max)) {
        lp_cli_error(cmd, "%s %s is too large (at most %g)", opt, v, max);
        return -1;
    }
    *out = x;
    return 0;
}

int lp_cli_split_listen(const char *cmd, const char *spec, char *buf, size_t len, unsigned *port)
{
    const char *colon = strrchr(spec, ':'), *host = spec;
    size_t n = colon ? (size_t)(colon - spec) : 0;
    if (spec[0] == '[') { /* [::1]:8470 */
        host = spec + 1;
        n = n >= 2 && spec[n - 1] == ']' ? n - 2 : 0;
    }
    int64_t p = -1;
    if (!colon || n == 0 || n >= len || memchr(host, ']', n) ||
        lp_cli_parse_range(cmd, "--listen", colon + 1, 0, 65535, &p) != 0) {
        lp_cli_error(cmd, "--listen takes HOST:PORT (127.0.0.1:8470, [::1]:8470), not '%s'",
                     spec);
        return -1;
    }
    snprintf(buf, len, "%.*s", (int)n, host);
    if (!strcmp(buf, "localhost"))
        snprintf(buf, len, "127.0.0.1");
    *port = (unsigned)p;
    return 0;
}
