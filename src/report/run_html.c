/* report.html: one self-contained file (no network) from the template data/report.html,
 * compiled in, with report.json embedded; the page's script draws the tables and charts. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "llmprof/report.h"
#include "report_html.h"
#include "report_internal.h"

#define PLACEHOLDER "/*LLMPROF_DATA*/"

int lp_report_run_html(FILE *f, const struct lp_run *r)
{
    const char *tpl = lp_report_html;
    const char *at = strstr(tpl, PLACEHOLDER);
    json_t *root = lp_report_run_json_value(r);
    char *json = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(root);
    if (!at || !json) {
        free(json);
        return -1;
    }
    fwrite(tpl, 1, (size_t)(at - tpl), f);
    /* '<' only occurs inside JSON strings: escaping it keeps "</script>" out of the page */
    for (const char *p = json;;) {
        size_t run = strcspn(p, "<"); /* whole runs: one call each, not one per byte */
        fwrite(p, 1, run, f);
        if (!p[run])
            break;
        fputs("\\u003c", f);
        p += run + 1;
    }
    fputs(at + strlen(PLACEHOLDER), f);
    free(json);
    return ferror(f) ? -1 : 0;
}
