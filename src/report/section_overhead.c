/* CUPTI's overhead records: host time CUPTI recorded, per kind and per stage
 * ("cupti_overhead" in report.json; the stages' own are in "stages"). */
#include <stdio.h>
#include "section.h"

/* CUPTI's overhead records: only when the trace has some. */
static void overhead_md(FILE *f, const struct lp_run *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    const struct lp_run_overhead *o = &r->overhead;
    if (!o->records)
        return;
    fprintf(f, "\n## Host time CUPTI recorded\n\nMeasured by CUPTI (%zu overhead records", 
            o->records);
    if (o->untimed)
        fprintf(f, "; %zu without a duration, left out", o->untimed);
    fprintf(f, "): host time it spent on its own work, time CUDA spent loading code, and "
               "launches that waited for space in a command buffer, summed as recorded. %s "
               "Not among these records: CUPTI's cost on each launch it traces, which only a "
               "run without the profiler shows.\n\n| kind | what | records | total | longest "
               "| on the program's threads | in measured stages |\n|---|---|---|---|---|---|---|"
               "\n",
            o->launches_known
                ? "The program's threads are those that made launch calls, pushed NVTX ranges "
                  "or called cuBLAS; the others are llmprof's and CUPTI's."
                : "The program's threads are those that pushed NVTX ranges or called cuBLAS "
                  "(the trace has no launch records: a thread that only launched work is "
                  "counted with llmprof's and CUPTI's).");
    for (size_t i = 0; i < o->n_rows; i++) {
        const struct lp_overhead_row *w = &o->rows[i];
        fprintf(f, "| %s | %s | %zu | %s | %s | ", lp_text_overhead_kind(w->kind),
                lp_text_overhead_class(w->cls), w->count, NS(w->total_ns), NS2(w->max_ns));
        fprintf(f, "%s | %s |\n", NS(w->program_ns),
                lp_fmt_ns((double)w->measured_ns, b4, sizeof b4));
    }
    /* the classes some stage has: "other" (kinds this build does not know) is rare */
    int shown[LP_OVERHEAD_CLASS_COUNT] = {0}, any = 0;
    for (size_t i = 0; i < r->n_stages; i++)
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            shown[k] |= k != LP_OVERHEAD_CLASS_OTHER || r->stages[i].overhead_ns[k] > 0;
    for (size_t i = 0; i < r->n_stages; i++)
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            any |= r->stages[i].overhead_ns[k] > 0;
    if (!any)
        return;
    fprintf(f, "\nPer stage, on the program's threads inside its occurrences (time, and its share "
               "of the stage's time; records on several threads add up):\n\n| stage |");
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        if (shown[k])
            fprintf(f, " %s |", lp_text_overhead_class(k));
    fprintf(f, "\n|---|");
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        if (shown[k])
            fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_stages; i++) {
        const struct lp_stage_report *s = &r->stages[i];
        int has = 0;
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            has |= s->overhead_ns[k] > 0;
        if (!has)
            continue;
        fprintf(f, "| ");
        lp_md_cell(f, s->name);
        fprintf(f, " |");
        for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
            if (shown[k] && s->overhead_ns[k])
                fprintf(f, " %s (%s) |", NS(s->overhead_ns[k]), PCT(s->overhead_share[k]));
            else if (shown[k])
                fprintf(f, " - |");
        fprintf(f, "\n");
    }
}

/* CUPTI's overhead records per kind, and on the program's threads per class; null without */
static json_t *overhead_json(const struct lp_run *r)
{
    const struct lp_run_overhead *o = &r->overhead;
    if (!o->records)
        return json_null();
    json_t *kinds = json_array();
    for (size_t i = 0; i < o->n_rows; i++) {
        const struct lp_overhead_row *w = &o->rows[i];
        json_array_append_new(
            kinds,
            json_pack("{s:s,s:s,s:s,s:I,s:o,s:o,s:o,s:o}", "kind",
                      lp_text_overhead_kind_key(w->kind), "label", lp_text_overhead_kind(w->kind),
                      "class", lp_text_overhead_class_key(w->cls), "count", (json_int_t)w->count,
                      "total_ns", lp_json_u64(w->total_ns), "max_ns", lp_json_u64(w->max_ns),
                      "program_ns", lp_json_u64(w->program_ns), "measured_ns",
                      lp_json_u64(w->measured_ns)));
    }
    json_t *labels = json_object();
    for (int k = 0; k < LP_OVERHEAD_CLASS_COUNT; k++)
        json_object_set_new(labels, lp_text_overhead_class_key(k),
                            json_string(lp_text_overhead_class(k)));
    return json_pack("{s:I,s:I,s:b,s:o,s:o,s:o,s:o}", "records", (json_int_t)o->records, "untimed",
                     (json_int_t)o->untimed, "launches_known", o->launches_known, "kinds", kinds,
                     "class_labels", labels, "program_ns",
                     lp_json_overhead_classes(NULL, o->program_ns), "measured_ns",
                     lp_json_overhead_classes(NULL, o->measured_ns));
}

static const struct lp_section_key keys[] = {
    {"cupti_overhead", overhead_json},
    {NULL, NULL},
};

const struct lp_section lp_section_overhead = {
    .name = "overhead",
    .md = overhead_md,
    .json = keys,
};
