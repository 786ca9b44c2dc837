/* report.html: one self-contained file (no network) from the template data/report.html,
 * compiled in, with report.json embedded, and diff.json when a baseline was given; the
 * page's script draws the tables and charts. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"
#include "report_html.h"
#include "report_internal.h"

/* The template's two data scripts, in the order they occur. */
#define PLACEHOLDER_RUN "/*LLMPROF_DATA*/"
#define PLACEHOLDER_BASELINE "/*LLMPROF_BASELINE*/"

/* DOC (taken) as compact JSON into F, "null" for NULL; '<' only occurs inside JSON strings:
 * escaping it keeps "</script>" out of the page. -1 when it cannot be dumped. */
static int put_json(FILE *f, json_t *doc)
{
    char *json = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : strdup("null");
    json_decref(doc);
    if (!json)
        return -1;
    for (const char *p = json;;) {
        size_t run = strcspn(p, "<"); /* whole runs: one call each, not one per byte */
        fwrite(p, 1, run, f);
        if (!p[run])
            break;
        fputs("\\u003c", f);
        p += run + 1;
    }
    free(json);
    return 0;
}

int lp_report_run_html_baseline(FILE *f, const struct lp_run *r, const struct lp_diff *d)
{
    const char *tpl = lp_report_html;
    const char *at = strstr(tpl, PLACEHOLDER_RUN);
    const char *at_base = at ? strstr(at, PLACEHOLDER_BASELINE) : NULL;
    json_t *run = lp_report_run_json_value(r), *base = d ? lp_report_diff_json_value(d) : NULL;
    if (!at_base || !run || (d && !base)) {
        json_decref(run);
        json_decref(base);
        return -1;
    }
    fwrite(tpl, 1, (size_t)(at - tpl), f);
    int rc = put_json(f, run);
    at += strlen(PLACEHOLDER_RUN);
    fwrite(at, 1, (size_t)(at_base - at), f);
    rc |= put_json(f, base);
    fputs(at_base + strlen(PLACEHOLDER_BASELINE), f);
    return rc == 0 && !ferror(f) ? 0 : -1;
}

int lp_report_run_html(FILE *f, const struct lp_run *r)
{
    return lp_report_run_html_baseline(f, r, NULL);
}
