/* Names that attack a terminal or a Markdown table (issue 52): a trace whose kernel, device,
 * NVTX range, API, loss, host and command strings hold an OSC title sequence, a clear-screen
 * escape, a C1 control, newlines that forge a table row, pipes and backticks. Every text
 * writer (report.md, summary.md, the CSV files, diff.md and its headline, ranks.md and
 * ranks.csv, model.md) is rendered into memory and must hold no control byte, keep each
 * table row's cells, and show the escapes. `test_escape --write PATH a|b` writes the trace
 * instead (tests/cli_escape.sh runs the CLI on it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/analyze.h"
#include "llmprof/model.h"
#include "llmprof/report.h"
#include "report/report_internal.h"
#include "tracebuild.h"

#define OSC "\x1b]0;pwned\x07"     /* sets the terminal's title */
#define CLS "\x1b[2J"              /* clears the screen */
#define C1 "\xc2\x9b" "31m"        /* CSI as one UTF-8 character (U+009B) */
#define FORGE "\n| forged | row |" /* a line of its own, a table row */

/* a stage named so (a stage rule's name: the analysis takes it as given) */
#define STAGE "ev" CLS "il|`st`age" FORGE
static const char *const rules[] = {"prefill=^prefill", "decode=^decode", STAGE "=^hostile"};

/* ---- the rule itself ---- */

/* what F makes of S, as a malloc'd string */
static char *put(void (*fn)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fn(f, s);
    fclose(f);
    return buf;
}

static void same(void (*fn)(FILE *, const char *), const char *s, const char *want)
{
    char *got = put(fn, s);
    if (strcmp(got, want))
        fail_msg("'%s' written as '%s', wanted '%s'", s, got, want);
    free(got);
}

static void test_rule(void **state)
{
    (void)state;
    char b[64];
    /* control characters as \xNN, one per byte; a backslash, UTF-8 and the rest kept */
    assert_string_equal(lp_fmt_escape(b, sizeof b, "a" OSC "b"), "a\\x1b]0;pwned\\x07b");
    assert_string_equal(lp_fmt_escape(b, sizeof b, "x\ty\r\n\x7f"), "x\\x09y\\x0d\\x0a\\x7f");
    assert_string_equal(lp_fmt_escape(b, sizeof b, C1), "\\xc2\\x9b31m");
    /* bidirectional controls (a right-to-left override reorders the line) as \xNN; other
     * characters of their block kept (U+2010, a hyphen) */
    assert_string_equal(lp_fmt_escape(b, sizeof b, "a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x80\x90"),
                        "a\\xe2\\x80\\xaeb\\xe2\\x81\\xa6c\xe2\x80\x90");
    assert_string_equal(lp_fmt_escape(b, sizeof b, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(lp_fmt_escape(b, sizeof b, "back\\slash | `tick`"),
                        "back\\slash | `tick`");
    /* bytes that are not UTF-8: overlong, surrogate, cut short, stray */
    assert_string_equal(lp_fmt_escape(b, sizeof b, "\xc0\xaf \xed\xa0\x80 \xe2\x82 \xff"),
                        "\\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82 \\xff");
    /* a buffer ends at a whole escape or character */
    assert_string_equal(lp_fmt_escape(b, 6, "ab\x1b"), "ab");
    assert_string_equal(lp_fmt_escape(b, 7, "ab\x1b"), "ab\\x1b");
    assert_string_equal(lp_fmt_escape(b, 5, "abc\xe2\x82\xac"), "abc");
    same(lp_fmt_puts, "one\ntwo" CLS, "one\\x0atwo\\x1b[2J");
    same(lp_fmt_put_lines, "one\ntwo" CLS "\n", "one\ntwo\\x1b[2J\n");
    /* Markdown cells: '|' escaped, a backslash before it shown as \x5c, '`' escaped */
    same(lp_md_cell, "a|b\\|c`d" FORGE, "a\\|b\\x5c\\|c\\`d\\x0a\\| forged \\| row \\|");
    /* code spans: a fence longer than any run of backticks inside, padded when the name
     * starts or ends with one; '|' escaped in a cell only */
    same(lp_md_code_cell, "plain|x", "`plain\\|x`");
    same(lp_md_code, "plain|x", "`plain|x`");
    same(lp_md_code_cell, "a`b``c", "```a`b``c```");
    same(lp_md_code_cell, "`edge`", "`` `edge` ``");
    same(lp_md_code, " both ", "`  both  `");
    same(lp_md_code, "", "``");
    /* CSV: quoted for commas and quotes only, control characters escaped */
    same(lp_csv_field, "plain", "plain");
    same(lp_csv_field, "a,\"b\"" FORGE, "\"a,\"\"b\"\"\\x0a| forged | row |\"");
    same(lp_csv_field, "k" OSC, "k\\x1b]0;pwned\\x07");
}

/* ---- the hostile trace ---- */

static void gemm_call(struct tb *b, uint64_t a, uint64_t e, const char *api, const char *tile)
{
    struct lp_record r = {.type = LP_REC_GEMM};
    r.u.gemm = (struct lp_gemm){.start = a, .end = e, .thread = 1,
                                .api = lp_trace_writer_intern(b->w, api), .m = 4096, .n = 8,
                                .k = 4096, .batch = 1, .transa = 1, .a_type = 14, .b_type = 14,
                                .c_type = 14, .d_type = 14, .compute_type = 68, .algo = 66,
                                .tile = lp_trace_writer_intern(b->w, tile), .epilogue = 1};
    add(b, &r);
}

/* Run A, or B (EXTRA): B's kernels take longer and it has a kernel and an operator more, so
 * that diff.md lists them. The writer is open, its header written. */
static void hostile_trace(struct tb *b, int extra)
{
    uint64_t x = extra ? 3 : 1;
    lp_trace_writer_set_meta(b->w, "host", "node" OSC "|7");
    lp_trace_writer_set_meta(b->w, "command", "python3 infer.py " OSC CLS FORGE " `x`");
    lp_trace_writer_set_meta(b->w, "mode", "full" CLS);
    lp_trace_writer_set_meta(b->w, "gemm", "on" OSC);
    struct lp_record d = {.type = LP_REC_DEVICE};
    d.u.device = (struct lp_device){.id = 0, .cc_major = 9, .sm_count = 132,
                                    .name = lp_trace_writer_intern(b->w, "GPU " OSC "|" C1 FORGE)};
    add(b, &d);
    struct lp_record l = {.type = LP_REC_LOSS};
    l.u.loss = (struct lp_loss){.source = LP_LOSS_SOURCE_COLLECTOR, .count = 0,
                                .what = lp_trace_writer_intern(b->w, "lost " OSC FORGE)};
    add(b, &l);
    range(b, "prefill tokens=8", 1, 0, 100000);
    range(b, "op " OSC CLS FORGE " `tick` a|b", 1, 100, 90000);
    range(b, "aten::" OSC "mm" CLS ", seq = 1, sizes = [[4, 8], [8, 8]]", 1, 150, 80000);
    if (extra)
        range(b, "op_b " OSC, 1, 91000, 99000);
    kernel(b, "k_osc" OSC "_end", 1, 200, 1000, 1000 + 2000 * x);
    gemm_call(b, 10000, 15000, "cublas" OSC "Gemm", "256x" CLS "|128");
    kernel(b, "k`tick`|pipe\\|bs", 1, 11000, 12000, 12000 + 5000 * x);
    kernel(b, "k,\"q\"" CLS, 1, 30000, 31000, 31000 + 1000 * x);
    if (extra)
        kernel(b, "k_only_b" OSC, 1, 92000, 93000, 94000);
    for (uint64_t s = 0; s < 4; s++) { /* decode steps, one of them waiting on a host call */
        uint64_t t0 = 200000 + s * 400000;
        range(b, "decode", 1, t0, t0 + 390000);
        kernel(b, "k_cls" CLS FORGE, 1, t0 + 1000, t0 + 2000, t0 + 2000 + 3000 * x);
        api(b, "cudaWait" OSC "|", 1, t0 + 10000, 0);
        kernel(b, "k_c1" C1 "_end", 1, t0 + 300000, t0 + 301000, t0 + 302000);
    }
    range(b, "hostile step", 1, 2000000, 2100000);
    kernel(b, "k_osc" OSC "_end", 1, 2001000, 2002000, 2010000);
}

static struct lp_trace *read_hostile(int extra)
{
    struct tb b;
    tb_open(&b);
    hostile_trace(&b, extra);
    return tb_read(&b, 1);
}

/* ---- checks on what the writers make ---- */

/* no control byte but the newline, no DEL, no C1 character */
static void clean(const char *what, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; u[i]; i++)
        if ((u[i] < 0x20 && u[i] != '\n') || u[i] == 0x7f ||
            (u[i] == 0xc2 && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f))
            fail_msg("%s: byte 0x%02x at %zu, after '%.40s'", what, u[i], i,
                     s + (i > 40 ? i - 40 : 0));
    if (strstr(s, "\n| forged"))
        fail_msg("%s: a name forged a line", what);
}

/* the pipes of a Markdown line that split cells: those after no backslash or an even run */
static size_t pipes(const char *line, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (line[i] != '|')
            continue;
        size_t bs = 0;
        while (bs < i && line[i - 1 - bs] == '\\')
            bs++;
        n += bs % 2 == 0;
    }
    return n;
}

/* Every table of MD keeps its header's cells in each row; returns how many rows hold an
 * escaped name (\x1b). At least MIN_TABLES tables. */
static size_t tables(const char *what, const char *md, size_t min_tables)
{
    size_t n_tables = 0, escaped = 0;
    const char *p = md;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *next = e ? e + 1 : p + len;
        if (p[0] == '|' && (!strncmp(next, "|---", 4) || !strncmp(next, "|:", 2))) {
            size_t cells = pipes(p, len);
            n_tables++;
            const char *q = next;
            while (*q == '|') {
                const char *qe = strchr(q, '\n');
                size_t ql = qe ? (size_t)(qe - q) : strlen(q);
                if (pipes(q, ql) != cells)
                    fail_msg("%s: a row of %zu cells under a header of %zu: '%.*s' (header '%.*s')",
                             what, pipes(q, ql), cells, (int)ql, q, (int)len, p);
                escaped += memmem(q, ql, "\\x1b", 4) != NULL;
                q = qe ? qe + 1 : q + ql;
            }
            next = q;
        }
        p = next;
    }
    if (n_tables < min_tables)
        fail_msg("%s: %zu tables, expected %zu or more", what, n_tables, min_tables);
    return escaped;
}

/* Every line of a CSV has the header's fields (a quoted field never spans lines). */
static void csv(const char *what, const char *text, size_t min_rows)
{
    size_t fields0 = 0, rows = 0;
    for (const char *p = text; *p;) {
        size_t fields = 1;
        int quoted = 0;
        for (; *p && (*p != '\n' || quoted); p++) {
            if (*p == '"')
                quoted = !quoted;
            else if (*p == ',' && !quoted)
                fields++;
        }
        if (*p)
            p++;
        if (!rows++)
            fields0 = fields;
        else if (fields != fields0)
            fail_msg("%s: row %zu has %zu fields, the header %zu", what, rows, fields, fields0);
    }
    if (rows < min_rows)
        fail_msg("%s: %zu rows, expected %zu or more", what, rows, min_rows);
}

static void has(const char *what, const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("%s lacks '%s'", what, want);
}

static void analyze_hostile(struct lp_trace *t, struct lp_run *r)
{
    struct lp_run_options o = {.stage_rules = rules, .n_stage_rules = 3};
    analyze(t, &o, r);
}

static void test_run_writers(void **state)
{
    (void)state;
    struct lp_trace *t = read_hostile(0);
    struct lp_run r;
    analyze_hostile(t, &r);
    /* the names reached the analysis as they were */
    assert_non_null(stage(&r, STAGE));
    assert_non_null(strstr(lp_trace_str(t, t->devices[0].name), OSC));

    char *md = write_to_string(lp_report_run_md, &r);
    clean("report.md", md);
    assert_true(tables("report.md", md, 8) >= 4); /* kernels, operators, GEMMs, stages ... */
    has("report.md", md, "k_osc\\x1b]0;pwned\\x07_end");
    has("report.md", md, "``k`tick`\\|pipe\\x5c\\|bs``"); /* a longer fence, pipes escaped */
    has("report.md", md, "GPU \\x1b]0;pwned\\x07|\\xc2\\x9b31m\\x0a| forged | row |");
    has("report.md", md, "| ev\\x1b[2Jil\\|\\`st\\`age\\x0a\\| forged \\| row \\| |");
    has("report.md", md, "`op \\x1b]0;pwned\\x07\\x1b[2J\\x0a\\| forged \\| row \\| `");
    has("report.md", md, "- loss: lost \\x1b]0;pwned\\x07\\x0a| forged | row |");
    has("report.md", md, "256x\\x1b[2J\\|128");
    has("report.md", md, "- command: `` python3 infer.py \\x1b]0;pwned\\x07"); /* ends with '`' */
    free(md);

    char *sum = write_to_string(lp_report_summary_md, &r);
    clean("summary.md", sum);
    tables("summary.md", sum, 0);
    has("summary.md", sum,
        "`` python3 infer.py \\x1b]0;pwned\\x07\\x1b[2J\\x0a| forged | row | `x` ``");
    has("summary.md", sum, " on GPU \\x1b]0;pwned\\x07");
    free(sum);

    static const struct {
        const char *name;
        int (*fn)(FILE *, const struct lp_run *);
        size_t rows;
        const char *want;         /* an escaped name it must hold, or NULL */
    } csvs[] = {
        {"kernels.csv", lp_report_kernels_csv, 8, "\"k,\"\"q\"\"\\x1b[2J\""},
        {"operators.csv", lp_report_operators_csv, 2, "op \\x1b]0;pwned\\x07\\x1b[2J\\x0a|"},
        {"stages.csv", lp_report_stages_csv, 4, "ev\\x1b[2Jil|`st`age\\x0a| forged | row |,"},
        {"gemms.csv", lp_report_gemms_csv, 2, "cublas\\x1b]0;pwned\\x07Gemm"},
        {"iterations.csv", lp_report_iterations_csv, 1, NULL},
        {"operator_shapes.csv", lp_report_operator_shapes_csv, 2,
         "aten::\\x1b]0;pwned\\x07mm\\x1b[2J"},
    };
    for (size_t i = 0; i < sizeof csvs / sizeof *csvs; i++) {
        char *text = write_to_string(csvs[i].fn, &r);
        clean(csvs[i].name, text);
        csv(csvs[i].name, text, csvs[i].rows);
        if (csvs[i].want)
            has(csvs[i].name, text, csvs[i].want);
        free(text);
    }
    lp_run_free(&r);
    lp_trace_free(t);
}

/* The capture mode is the trace's string too: one code span with its flag, in report.md and
 * summary.md. */
static void test_capture_mode(void **state)
{
    (void)state;
    struct tb b;
    tb_open(&b);
    lp_trace_writer_set_meta(b.w, "capture", "signal" OSC "`");
    range(&b, "decode", 1, 0, 100000); /* no window opened: no kernels */
    struct lp_trace *t = tb_read(&b, 1);
    struct lp_run r;
    analyze(t, NULL, &r);
    for (int i = 0; i < 2; i++) {
        char *md = write_to_string(i ? lp_report_summary_md : lp_report_run_md, &r);
        const char *what = i ? "summary.md" : "report.md";
        clean(what, md);
        has(what, md, "- **Capture windows** (`` --capture signal\\x1b]0;pwned\\x07` ``)");
        free(md);
    }
    lp_run_free(&r);
    lp_trace_free(t);
}

/* what FN makes of D, as a malloc'd string */
static char *diff_string(int (*fn)(FILE *, const struct lp_diff *), const struct lp_diff *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(f, d), 0);
    fclose(f);
    return buf;
}

static void test_diff_and_ranks(void **state)
{
    (void)state;
    struct lp_trace *t[2] = {read_hostile(0), read_hostile(1)};
    struct lp_run r[2];
    for (int x = 0; x < 2; x++)
        analyze_hostile(t[x], &r[x]);
    struct lp_diff d;
    assert_int_equal(lp_diff_build(&r[0], &r[1], NULL, &d), LP_OK);
    d.label[0] = "runs/a" OSC;
    d.label[1] = "runs/b|" CLS;
    char *md = diff_string(lp_report_diff_md, &d);
    clean("diff.md", md);
    assert_true(tables("diff.md", md, 4) >= 2); /* the kernel and operator added in B */
    has("diff.md", md, "| `k_only_b\\x1b]0;pwned\\x07` | added |");
    has("diff.md", md, "| `op_b \\x1b]0;pwned\\x07` | added |");
    has("diff.md", md, "| figure | runs/a\\x1b]0;pwned\\x07 | runs/b\\|\\x1b[2J |");
    has("diff.md", md, "### ev\\x1b[2Jil|`st`age\\x0a| forged | row |\n");
    free(md);
    char *head = diff_string(lp_report_diff_headline, &d);
    clean("the diff's headline", head);
    has("the diff's headline", head, "against runs/a\\x1b]0;pwned\\x07:\n");
    has("the diff's headline", head, "  ev\\x1b[2Jil|`st`age\\x0a| forged | row | ");
    free(head);
    lp_diff_free(&d);

    struct lp_rank *k = calloc(2, sizeof *k); /* the run report takes it */
    assert_non_null(k);
    assert_int_equal(lp_rank_take(&r[0], "/run/trace-a" OSC ".lpt", &k[0]), LP_OK);
    assert_int_equal(lp_rank_take(&r[1], "/run/trace-b|" CLS ".lpt", &k[1]), LP_OK);
    k[0].pid = k[1].pid = -1; /* labelled by their traces' names */
    struct lp_ranks rk;
    assert_int_equal(lp_ranks_analyze(k, 2, &rk), LP_OK);
    const struct lp_ranks_unread unread = {"trace-c" OSC ".lpt", "damaged " CLS FORGE};
    rk.unread = &unread;
    rk.n_unread = 1;
    char *ranks = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&ranks, &len);
    assert_int_equal(lp_report_ranks_md(f, &rk), 0);
    fclose(f);
    clean("ranks.md", ranks);
    assert_true(tables("ranks.md", ranks, 2) >= 2);
    has("ranks.md", ranks, "| trace-a\\x1b]0;pwned\\x07.lpt | node\\x1b]0;pwned\\x07\\|7 | - |");
    has("ranks.md", ranks, "[trace-b\\|\\x1b[2J](trace-b\\|\\x1b[2J/report.md)");
    has("ranks.md", ranks, "- `trace-c\\x1b]0;pwned\\x07.lpt`: damaged \\x1b[2J\\x0a| forged");
    free(ranks);
    f = open_memstream(&ranks, &len);
    assert_int_equal(lp_report_ranks_csv(f, &rk), 0);
    fclose(f);
    clean("ranks.csv", ranks);
    csv("ranks.csv", ranks, 3);
    has("ranks.csv", ranks, "node\\x1b]0;pwned\\x07|7");
    free(ranks);
    lp_ranks_free(&rk);
    for (int x = 0; x < 2; x++) {
        lp_run_free(&r[x]);
        lp_trace_free(t[x]);
    }
}

/* llmprof model's Markdown: the config's strings escaped (a model_type llmprof does not
 * know is refused, so the test writes one into the parsed model) */
static void test_model_md(void **state)
{
    (void)state;
    static const char config[] =
        "{\"model_type\": \"llama\", \"hidden_size\": 256, \"intermediate_size\": 512, "
        "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"num_key_value_heads\": 4, "
        "\"vocab_size\": 1000, \"max_position_embeddings\": 4096}";
    struct lp_model m;
    char err[512];
    if (lp_model_parse(config, strlen(config), "config.json", &m, err, sizeof err) != LP_OK)
        fail_msg("%s", err);
    snprintf(m.model_type, sizeof m.model_type, "llama" OSC FORGE);
    struct lp_workload w;
    lp_workload_defaults(&w);
    static struct lp_model_result res;
    if (lp_model_analyze(&m, &w, &res, err, sizeof err) != LP_OK)
        fail_msg("%s", err);
    struct lp_model_report rep = {.model = &m, .workload = &w, .result = &res};
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    assert_int_equal(lp_report_model_md(f, &rep), 0);
    fclose(f);
    clean("model.md", md);
    has("model.md", md, "# llama\\x1b]0;pwned\\x07\\x0a| forged | row | (");
    tables("model.md", md, 3);
    free(md);
}

/* --write PATH a|b: the trace for tests/cli_escape.sh */
static const char *write_path;
static int write_extra;

static void test_write_trace(void **state)
{
    (void)state;
    struct tb b = {.next_id = 1, .next_corr = 1};
    char err[256];
    assert_int_equal(lp_trace_writer_open(&b.w, write_path, NULL, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(b.w, "pid", "42");
    assert_int_equal(lp_trace_writer_write_header(b.w), LP_OK);
    hostile_trace(&b, write_extra);
    assert_int_equal(lp_trace_writer_close(b.w), LP_OK);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--write")) {
        write_path = argv[2];
        write_extra = !strcmp(argv[3], "b");
        const struct CMUnitTest write[] = {cmocka_unit_test(test_write_trace)};
        return cmocka_run_group_tests(write, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_run_writers),
        cmocka_unit_test(test_capture_mode),
        cmocka_unit_test(test_diff_and_ranks),
        cmocka_unit_test(test_model_md),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
