/* Shared by the run report writers: the JSON document (the HTML report embeds it) and
 * number formatting for tables. Not installed. */
#ifndef LP_REPORT_INTERNAL_H
#define LP_REPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "llmprof/analyze.h"

#define LP_REPORT_SCHEMA "llmprof-report/2"

json_t *lp_report_run_json_value(const struct lp_run *r);

/* "12.345 ms", "870.2 us", "1.234 s" into BUF */
const char *lp_fmt_ns(double ns, char *buf, size_t len);
/* "1.5 GiB" into BUF */
const char *lp_fmt_bytes(double bytes, char *buf, size_t len);
/* "12.3 %" or "-" for a negative (unknown) share */
const char *lp_fmt_pct(double share, char *buf, size_t len);
/* Markdown table cell: '|' and newlines escaped */
void lp_md_cell(FILE *f, const char *s);

#endif
