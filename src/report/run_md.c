/* report.md: everything, for engineers; each section (sections.c) in the table's order. Every
 * section says where its numbers come from: measured (CUPTI activity and NVTX ranges),
 * analytic (llmprof model) or counter (NVML). summary.md: summary_md.c. */
#include <stdio.h>

#include "section.h"

int lp_report_run_md(FILE *f, const struct lp_run *r)
{
    fprintf(f, "# llmprof report\n\n");
    for (const struct lp_section *const *s = lp_sections; *s; s++)
        if ((*s)->md)
            (*s)->md(f, r);
    return ferror(f) ? -1 : 0;
}
