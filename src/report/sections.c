/* The run report's sections, listed once: report.md, report.json (and the HTML report that
 * embeds it) follow this order, and the CSV files are those of its sections. A new section is
 * one file (section_NAME.c), one line here and its declaration in section.h. */
#include <stddef.h>

#include "section.h"

const struct lp_section *const lp_sections[] = {
    &lp_section_header,
    &lp_section_capture,
    &lp_section_llm,
    &lp_section_serving,
    &lp_section_findings,
    &lp_section_stages,
    &lp_section_spread,
    &lp_section_communication,
    &lp_section_utilisation,
    &lp_section_counters,
    &lp_section_pm,
    &lp_section_gemms,
    &lp_section_graphs,
    &lp_section_kernels,
    &lp_section_deep,
    &lp_section_operators,
    &lp_section_timeline,
    &lp_section_overhead,
    &lp_section_power,
    &lp_section_notes,
    NULL,
};

const struct lp_report_csv *lp_report_csv_at(size_t i)
{
    for (const struct lp_section *const *s = lp_sections; *s; s++) {
        if ((*s)->csv.name && i-- == 0)
            return &(*s)->csv;
        if ((*s)->csv2.name && i-- == 0)
            return &(*s)->csv2;
    }
    return NULL;
}
