/* record --capture's values (see capture.h). The range selection is read from the right, so
 * a regular expression may hold '@' and '/' as long as it does not end like a selection. */
#include "llmprof/capture.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LP_CAPTURE_FORMS                                                                       \
    "all, cuda-profiler, signal, graphs[@FIRST[-LAST]][/EVERY] or "                               \
    "nvtx:REGEX[@FIRST[-LAST]][/EVERY]"

/* The decimal number ending at END (exclusive) in [BEGIN, END): its start, or NULL. */
static const char *number_before(const char *begin, const char *end, uint64_t *v)
{
    const char *p = end;
    while (p > begin && isdigit((unsigned char)p[-1]))
        p--;
    if (p == end || end - p > 12)
        return NULL;
    *v = strtoull(p, NULL, 10);
    return p;
}

static int fail(char *err, size_t errlen, const char *text, const char *why)
{
    snprintf(err, errlen, "--capture '%.200s': %s", text, why);
    return -1;
}

/* Reads "[@FIRST[-LAST]][/EVERY]" from the end of [BODY, *END) into S and moves *END to
 * before it. */
static int parse_selection(const char *text, const char *body, const char **end,
                           struct lp_capture_spec *s, char *err, size_t errlen)
{
    s->first = 1;
    s->every = 1;
    uint64_t v;
    const char *p = number_before(body, *end, &v);
    if (p && p > body && p[-1] == '/') { /* /EVERY */
        s->every = v;
        *end = p - 1;
        p = number_before(body, *end, &v);
    }
    if (p && p > body && (p[-1] == '-' || p[-1] == '@')) { /* @FIRST-LAST or @FIRST */
        uint64_t last = 0;
        const char *q = p;
        if (p[-1] == '-') {
            last = v;
            q = number_before(body, p - 1, &v);
        }
        if (q && q > body && q[-1] == '@') {
            s->first = v;
            s->last = last;
            *end = q - 1;
        }
    }
    if (s->every == 0 || s->first == 0)
        return fail(err, errlen, text, "occurrences count from 1 and EVERY is at least 1");
    if (s->last && s->last < s->first)
        return fail(err, errlen, text, "LAST is before FIRST");
    return 0;
}

static int parse_nvtx(const char *text, struct lp_capture_spec *s, char *err, size_t errlen)
{
    const char *body = text + 5, *end = body + strlen(body);
    if (parse_selection(text, body, &end, s, err, errlen) != 0)
        return -1;
    size_t len = (size_t)(end - body);
    if (len == 0)
        return fail(err, errlen, text, "no range is named: give a regular expression of "
                    "range names, e.g. nvtx:^decode@100-131");
    if (len >= sizeof s->range)
        return fail(err, errlen, text, "the range expression is longer than 255 characters");
    memcpy(s->range, body, len);
    s->range[len] = 0;
    regex_t re;
    int rc = regcomp(&re, s->range, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc != 0) {
        char why[128];
        regerror(rc, &re, why, sizeof why);
        snprintf(err, errlen, "--capture '%.200s': '%s' is not a regular expression: %s", text,
                 s->range, why);
        return -1;
    }
    regfree(&re);
    return 0;
}

/* "graphs[@FIRST[-LAST]][/EVERY]": the selection and nothing else after the word. */
static int parse_graphs(const char *text, struct lp_capture_spec *s, char *err, size_t errlen)
{
    const char *body = text + 6, *end = body + strlen(body);
    if (*body != '@' && *body != '/' && *body)
        return -2; /* another word: not this form */
    if (parse_selection(text, body, &end, s, err, errlen) != 0)
        return -1;
    if (end != body)
        return fail(err, errlen, text, "after 'graphs' come only @FIRST[-LAST] and /EVERY, "
                    "e.g. graphs@100-131 or graphs/8");
    return 0;
}

int lp_capture_parse(const char *text, struct lp_capture_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text || !strcmp(text, "all"))
        return 0;
    if (!strcmp(text, "cuda-profiler")) {
        out->mode = LP_CAPTURE_MODE_CUDA_PROFILER;
        return 0;
    }
    if (!strcmp(text, "signal")) {
        out->mode = LP_CAPTURE_MODE_SIGNAL;
        return 0;
    }
    if (!strncmp(text, "nvtx:", 5)) {
        out->mode = LP_CAPTURE_MODE_NVTX;
        return parse_nvtx(text, out, err, errlen);
    }
    if (!strncmp(text, "graphs", 6)) {
        out->mode = LP_CAPTURE_MODE_GRAPHS;
        int rc = parse_graphs(text, out, err, errlen);
        if (rc != -2)
            return rc;
        memset(out, 0, sizeof *out);
    }
    snprintf(err, errlen, "--capture takes " LP_CAPTURE_FORMS ", not '%.100s'", text);
    return -1;
}

int lp_capture_selects(const struct lp_capture_spec *s, uint64_t n)
{
    return n >= s->first && (s->last == 0 || n <= s->last) && (n - s->first) % s->every == 0;
}
