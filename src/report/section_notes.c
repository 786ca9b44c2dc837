/* Losses and notes: records lost, the reader's warnings and the analysis' notes (their
 * sentences from text.c); report.json's "notes" and their keys, "note_codes". */
#include <stdio.h>
#include "section.h"

static void notes_md(FILE *f, const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    fprintf(f, "\n## Losses and notes\n\n");
    fprintf(f, "- records lost: %llu", (unsigned long long)r->lost_records);
    if (r->losses_uncounted)
        fprintf(f, "; %zu loss note%s without a count", r->losses_uncounted,
                r->losses_uncounted == 1 ? "" : "s");
    fprintf(f, "%s\n",
            t->complete ? "" : "; the trace has no end chunk (the process did not exit cleanly)");
    for (size_t i = 0; i < t->n_losses; i++) {
        fprintf(f, "- loss: ");
        lp_fmt_puts(f, lp_trace_str(t, t->losses[i].what));
        if (t->losses[i].count)
            fprintf(f, " (%llu record%s)\n", (unsigned long long)t->losses[i].count,
                    t->losses[i].count == 1 ? "" : "s");
        else
            fprintf(f, " (no count)\n");
    }
    for (size_t i = 0; i < t->n_warnings; i++) {
        fprintf(f, "- reader: ");
        lp_fmt_puts(f, t->warnings[i]);
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < r->n_notes; i++) {
        char text[1024];
        lp_text_note(r, &r->notes[i], text, sizeof text);
        fprintf(f, "- ");
        lp_fmt_puts(f, text);
        fprintf(f, "\n");
    }
}

static json_t *notes_json(const struct lp_run *r)
{
    json_t *notes = json_array();
    for (size_t i = 0; i < r->n_notes; i++) {
        char text[1024];
        lp_text_note(r, &r->notes[i], text, sizeof text);
        json_array_append_new(notes, json_string(text));
    }
    return notes;
}

static json_t *note_codes_json(const struct lp_run *r)
{
    json_t *codes = json_array();
    for (size_t i = 0; i < r->n_notes; i++)
        json_array_append_new(codes, json_string(lp_text_note_key(r->notes[i].code)));
    return codes;
}

static const struct lp_section_key keys[] = {
    {"notes", notes_json},
    {"note_codes", note_codes_json},
    {NULL, NULL},
};

const struct lp_section lp_section_notes = {
    .name = "notes",
    .md = notes_md,
    .json = keys,
};
