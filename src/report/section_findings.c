/* The diagnosis: the findings (codes, with the sentences text.c makes), in report.md and as
 * report.json's "findings". */
#include <stdio.h>
#include "section.h"

static void findings_md(FILE *f, const struct lp_run *r)
{
    static const char *const sev[] = {"fyi", "look", "act"};
    fprintf(f, "\n## Diagnosis\n\n");
    if (r->n_findings == 0)
        fprintf(f, "No rule fired: no launch-bound stage, low utilisation, throttling, high "
                   "variance or loss was seen.\n");
    for (size_t i = 0; i < r->n_findings; i++) {
        const struct lp_finding *x = &r->findings[i];
        struct lp_finding_text t;
        lp_text_finding(r, x, &t);
        fprintf(f, "%zu. **[%s] ", i + 1,
                sev[x->severity < 0 ? 0 : x->severity > 2 ? 2 : x->severity]);
        lp_fmt_puts(f, t.title);
        fprintf(f, ".** ");
        lp_fmt_puts(f, t.evidence);
        fprintf(f, "  \n   *Next:* ");
        lp_fmt_puts(f, t.advice);
        fprintf(f, "\n");
    }
}

/* each finding: its machine key, severity and the sentences text.c makes */
static json_t *findings_json(const struct lp_run *r)
{
    json_t *fs = json_array();
    for (size_t i = 0; i < r->n_findings; i++) {
        const struct lp_finding *f = &r->findings[i];
        struct lp_finding_text x;
        lp_text_finding(r, f, &x);
        json_array_append_new(fs, json_pack("{s:s,s:i,s:s,s:s,s:s}", "code",
                                            lp_text_finding_key(f->code), "severity",
                                            f->severity, "title", x.title, "evidence",
                                            x.evidence, "advice", x.advice));
    }
    return fs;
}

static const struct lp_section_key keys[] = {
    {"findings", findings_json},
    {NULL, NULL},
};

const struct lp_section lp_section_findings = {
    .name = "findings",
    .md = findings_md,
    .json = keys,
};
