/* report.json: the whole analysis of a run as versioned JSON (schema llmprof-report/2,
 * docs/report-schema.md), each section's keys (sections.c) in the table's order. Times are
 * integer nanoseconds on the trace clock unless a key says otherwise; shares are fractions
 * 0..1. The HTML report embeds this same document. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llmprof/version.h"
#include "section.h"

/* the nearest integer of a real ns value, within int64 */
static json_int_t ns_round(double x)
{
    return x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (json_int_t)llround(x);
}

/* Times are whole nanoseconds: a real under a key ending in _ns, or directly in an object or
 * array (of arrays) under one, becomes the nearest integer, so no reader meets 1.14244e+09
 * ns. NS: V sits under such a key. */
static void ns_integers(json_t *v, int ns)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x)
        {
            size_t l = strlen(key);
            int under = l >= 3 && !strcmp(key + l - 3, "_ns");
            if ((under || ns) && json_is_real(x))
                json_object_set_new(v, key, json_integer(ns_round(json_real_value(x))));
            else
                ns_integers(x, under);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *x = json_array_get(v, i);
            if (ns && json_is_real(x))
                json_array_set_new(v, i, json_integer(ns_round(json_real_value(x))));
            else
                ns_integers(x, ns && json_is_array(x));
        }
    }
}

json_t *lp_report_run_json_value(const struct lp_run *r)
{
    json_t *root = json_pack("{s:s,s:s}", "schema", LP_REPORT_SCHEMA, "llmprof_version",
                             LLMPROF_VERSION);
    for (const struct lp_section *const *s = lp_sections; *s; s++)
        for (const struct lp_section_key *k = (*s)->json; k && k->key; k++) {
            json_t *v = k->value(r);
            if (v)
                json_object_set_new(root, k->key, v);
        }
    ns_integers(root, 0);
    return root;
}

int lp_report_json_put(FILE *out, json_t *doc)
{
    if (!doc)
        return -1;
    int rc = json_dumpf(doc, out, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    if (rc == 0 && fputc('\n', out) == EOF)
        rc = -1;
    return rc ? -1 : 0;
}

int lp_report_run_json(FILE *out, const struct lp_run *r)
{
    return lp_report_json_put(out, lp_report_run_json_value(r));
}
