/* Shared by the run report writers: the JSON document (the HTML report embeds it), number
 * formatting for tables and the escaping of names. Not installed. */
#ifndef LP_REPORT_INTERNAL_H
#define LP_REPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "llmprof/analyze.h"
#include "llmprof/compare.h"
#include "llmprof/deep.h"

#define LP_REPORT_SCHEMA "llmprof-report/2"

/* ---- protobuf.c: one Protocol Buffers message built at a time ---- */

struct lp_pb {
    uint8_t *buf;
    size_t n, cap;
    int failed;                   /* out of memory: the message is incomplete */
};
void lp_pb_varint(struct lp_pb *p, uint32_t field, uint64_t v);
void lp_pb_fixed64(struct lp_pb *p, uint32_t field, uint64_t v);
void lp_pb_double(struct lp_pb *p, uint32_t field, double v);
void lp_pb_bytes(struct lp_pb *p, uint32_t field, const void *data, size_t n);
void lp_pb_str(struct lp_pb *p, uint32_t field, const char *s);
/* a nested message: lp_pb_begin's mark given to lp_pb_end once its fields are added */
size_t lp_pb_begin(struct lp_pb *p, uint32_t field);
void lp_pb_end(struct lp_pb *p, size_t mark);
/* writes the message as field FIELD of an enclosing one to F and empties P: 0, or -1 on a
 * write error or when the message is incomplete */
int lp_pb_emit(FILE *f, uint32_t field, struct lp_pb *p);
void lp_pb_free(struct lp_pb *p);

json_t *lp_report_run_json_value(const struct lp_run *r);
/* DOC (taken; NULL: out of memory) written as report.json is, with a newline: 0 or -1 */
int lp_report_json_put(FILE *out, json_t *doc);
/* diff.json's document (llmprof-diff/1), for diff.json and report.html's baseline section. */
json_t *lp_report_diff_json_value(const struct lp_diff *d);

/* ---- text.c: the sentences and keys of the analysis' codes ---- */

struct lp_finding_text {
    char title[128];
    char evidence[512];           /* the numbers it read */
    char advice[512];
};
void lp_text_finding(const struct lp_run *r, const struct lp_finding *f,
                     struct lp_finding_text *t);
const char *lp_text_finding_key(enum lp_finding_code c);
/* a note's sentence into BUF (1024 bytes hold every one) */
void lp_text_note(const struct lp_run *r, const struct lp_note *n, char *buf, size_t len);
const char *lp_text_note_key(enum lp_note_code c);
/* a GEMM row's hints, "; " between them, into BUF ("" none; 320 bytes hold them) */
void lp_text_gemm_hint(const struct lp_gemm_row *row, char *buf, size_t len);
/* the key of bit BIT of enum lp_gemm_hint; NULL past the last */
const char *lp_text_gemm_hint_key(int bit);
/* Why a stage's executed tensor work departs from the model's FLOPs (k->excess), and each
 * cause's key for report.json. */
void lp_text_excess(const struct lp_stage_counters *k, char *buf, size_t len);
const char *lp_text_excess_key(int bit);
/* why no prefill or decode was found (enum lp_llm_why_not) */
const char *lp_text_why_not(const struct lp_run *r);
/* the trace's GEMM capture state, or why it was not recorded */
const char *lp_text_gemm_state(const struct lp_run *r);
/* the utilisation note: the assumptions of MFU and MBU, or why they are missing */
void lp_text_util(const struct lp_run *r, char *buf, size_t len);
const char *lp_text_tokens_source(enum lp_tokens_source s);
const char *lp_text_steps_source(enum lp_steps_source s);
const char *lp_text_gap_cause(enum lp_gap_cause c);
const char *lp_text_gap_cause_key(enum lp_gap_cause c);
const char *lp_text_throttle(int bit);       /* NVML clock-event reason bit */
const char *lp_text_throttle_key(int bit);
const char *lp_text_coll_op(int bit);          /* bit of enum lp_coll_op */
const char *lp_text_coll_op_key(int bit);
/* CUPTI's overhead records: labels and keys of their kinds and classes */
const char *lp_text_overhead_kind(enum lp_overhead_kind k);
const char *lp_text_overhead_kind_key(enum lp_overhead_kind k);
const char *lp_text_overhead_class(enum lp_overhead_class c);
const char *lp_text_overhead_class_key(enum lp_overhead_class c);

/* serving loops: labels and keys of an iteration's kind and source and of what showed the
 * loop; the cause with its numbers, into BUF (256 bytes hold every one) */
const char *lp_text_iter_kind(enum lp_iter_kind k);
const char *lp_text_iter_kind_key(enum lp_iter_kind k);
const char *lp_text_iter_source(enum lp_iter_source s);
const char *lp_text_iter_source_key(enum lp_iter_source s);
const char *lp_text_serving_cause_key(enum lp_serving_cause c);
void lp_text_serving_cause(const struct lp_serving *s, char *buf, size_t len);

/* kernels in depth: labels and keys of the bound class and the occupancy limits; the next
 * step, citing the row's numbers, into BUF (320 bytes hold every one) */
const char *lp_text_deep_bound(enum lp_deep_bound b);
const char *lp_text_deep_bound_key(enum lp_deep_bound b);
const char *lp_text_deep_limit(int limit);
const char *lp_text_deep_limit_key(int limit);
const char *lp_text_deep_advice_key(enum lp_deep_advice a);
void lp_text_deep_advice(const struct lp_deep *d, const struct lp_deep_row *w, char *buf,
                         size_t len);

/* repeats: labels and keys of the figures compared (enum lp_repeat_figure, enum
 * lp_repeat_stage_figure) and of the verdict */
const char *lp_text_repeat_figure(int f);
const char *lp_text_repeat_figure_key(int f);
const char *lp_text_repeat_stage_figure(int f);
const char *lp_text_repeat_stage_figure_key(int f);
const char *lp_text_repeats_verdict(enum lp_repeats_verdict v);
const char *lp_text_repeats_verdict_key(enum lp_repeats_verdict v);

/* two runs compared: labels (text) and keys of the diff's enums; a warning by its bit */
const char *lp_text_diff_verdict(enum lp_diff_verdict v);
const char *lp_text_diff_verdict_key(enum lp_diff_verdict v);
const char *lp_text_diff_basis_key(enum lp_diff_basis b);
const char *lp_text_diff_status(enum lp_diff_status s);
const char *lp_text_diff_status_key(enum lp_diff_status s);
const char *lp_text_diff_result(enum lp_diff_rule_result r);
const char *lp_text_diff_result_key(enum lp_diff_rule_result r);
const char *lp_text_diff_warning(int bit);
const char *lp_text_diff_warning_key(int bit);

/* "12.3 %" or "-" for a negative (unknown) share */
const char *lp_fmt_pct(double share, char *buf, size_t len);
/* A name from the trace that every row of a table or event of an export repeats (the range a
 * graph was captured in, a GEMM's entry point or tile, a range's name in the Perfetto JSON)
 * cut to LP_NAME_CUT bytes, before a character it would split, with "…" after: in BUF when
 * cut, else S itself. A trace can give every row one name of a megabyte; real names are
 * under 400 bytes. */
#define LP_NAME_CUT 1024
const char *lp_fmt_cut(const char *s, char (*buf)[LP_NAME_CUT + 4]);
/* The length of S's part lp_fmt_cut keeps (all of S when it fits) */
size_t lp_fmt_cut_len(const char *s);

/* lp_fmt_puts, lp_fmt_put_lines, lp_fmt_escape: in llmprof/report.h (the CLI prints with
 * them too) */
/* a Markdown table cell: also '|' as "\|" and '`' as "\`" */
void lp_md_cell(FILE *f, const char *s);
/* a Markdown code span, fenced by more backticks than S holds in a row: in prose, and in a
 * table cell ('|' as "\|") */
void lp_md_code(FILE *f, const char *s);
void lp_md_code_cell(FILE *f, const char *s);
/* lp_md_code of S's first MAX bytes (cut back to a character's start) and " …" after it
 * when S was longer: 1 when cut */
int lp_md_code_cut(FILE *f, const char *s, size_t max);
/* a CSV field (RFC 4180): quoted when it holds a comma or a quote */
void lp_csv_field(FILE *f, const char *s);

#endif
