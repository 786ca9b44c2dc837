/* The LLMPROF_* environment's table and parser (llmprof/envconfig.h): the defaults, each
 * type, values out of range and malformed ones (nan, inf, hex, trailing text, overflow, a
 * fraction, a word not listed, empty) with the warning each gives; the table's own
 * consistency; and docs/collector.md's table of variables, which is written from it:
 * `test_envconfig --write` rewrites that section, the test fails when it differs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llmprof/envconfig.h"
#include "llmprof/trace.h"

/* ---- a fake environment ---- */

static const char *fake_env[LP_ENVCONFIG_VAR_COUNT];

static const char *fake_get(const char *name)
{
    for (int i = 0; i < LP_ENVCONFIG_VAR_COUNT; i++)
        if (!strcmp(lp_envconfig_table[i].name, name))
            return fake_env[i];
    return NULL;
}

static char warnings[LP_ENVCONFIG_VAR_COUNT][512];
static size_t n_warnings;

static void collect(void *ctx, enum lp_envconfig_var var, const char *message)
{
    (void)ctx;
    assert_true(n_warnings < LP_ENVCONFIG_VAR_COUNT);
    assert_int_equal(lp_envconfig_table[var].reader, LP_ENVCONFIG_READER_COLLECTOR);
    snprintf(warnings[n_warnings++], sizeof warnings[0], "%s", message);
}

/* Parses with only VAR set to VALUE (NULL: nothing set); returns the number of warnings. */
static size_t parse_one(struct lp_envconfig *c, enum lp_envconfig_var var, const char *value)
{
    memset(fake_env, 0, sizeof fake_env);
    n_warnings = 0;
    if (value)
        fake_env[var] = value;
    size_t bad = lp_envconfig_parse(c, fake_get, collect, NULL);
    assert_int_equal(bad, n_warnings);
    return bad;
}

/* VAR=VALUE is bad, warned with exactly WANT */
static void expect_warning(enum lp_envconfig_var var, const char *value, const char *want)
{
    struct lp_envconfig c;
    assert_int_equal(parse_one(&c, var, value), 1);
    assert_string_equal(warnings[0], want);
}

/* ---- the parser ---- */

static void test_defaults(void **state)
{
    (void)state;
    struct lp_envconfig c;
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_OUT, NULL), 0);
    assert_string_equal(c.out, ".");
    assert_int_equal(c.quiet, 0);
    assert_int_equal(c.light, 0);
    assert_null(c.kinds);
    assert_true(c.nvml_hz == 20);
    assert_true(c.flush_ms == 500);
    assert_int_equal(c.buffer_kb, 4096);
    assert_int_equal(c.max_buffers, 64);
    assert_int_equal(c.device_buffer_kb, 0);
    assert_int_equal(c.device_buffer_limit, 0);
    assert_int_equal(c.device_buffers, 0);
    assert_int_equal(c.subscribe, 1);
    assert_null(c.cupti_path);
    assert_null(c.nvml_path);
    assert_int_equal(c.graph_nodes, 1);
    assert_int_equal(c.gemm, 1);
    assert_null(c.counters);
    assert_string_equal(c.counter_ranges, "^(prefill|decode|vision|generate)");
    assert_int_equal(c.counter_segments, 512);
    assert_int_equal(c.graphs, LP_ENVCONFIG_GRAPHS_REPLAY);
    assert_null(c.capture);
    assert_int_equal(c.launch, LP_ENVCONFIG_LAUNCH_CALLBACKS);
    assert_int_equal(c.finalize, 0);
    assert_int_equal(c.finalize_after_ms, 1000);
    assert_true(c.pm_sampling_us == 0);
    assert_true(c.pm_buffer_mb == 64);
    /* NULL getter: the process's environment */
    setenv("LLMPROF_NVML_HZ", "7", 1);
    unsetenv("LLMPROF_OUT");
    assert_int_equal(lp_envconfig_parse(&c, NULL, NULL, NULL), 0);
    assert_true(c.nvml_hz == 7);
    assert_string_equal(c.out, ".");
    unsetenv("LLMPROF_NVML_HZ");
}

static void test_types(void **state)
{
    (void)state;
    struct lp_envconfig c;
    /* flag: a number, more than 0 on */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_QUIET, "1"), 0);
    assert_int_equal(c.quiet, 1);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_QUIET, "0.5"), 0);
    assert_int_equal(c.quiet, 1);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_GEMM, "0"), 0);
    assert_int_equal(c.gemm, 0);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_GRAPH_NODES, "0.0"), 0);
    assert_int_equal(c.graph_nodes, 0);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_SUBSCRIBE, "-0"), 0);
    assert_int_equal(c.subscribe, 0);
    /* number, fractions kept */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_NVML_HZ, "2.5"), 0);
    assert_true(c.nvml_hz == 2.5);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_NVML_HZ, "0"), 0);
    assert_true(c.nvml_hz == 0);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_PM_SAMPLING, "1e2"), 0);
    assert_true(c.pm_sampling_us == 100);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_PM_BUFFER_MB, "1.5"), 0);
    assert_true(c.pm_buffer_mb == 1.5);
    /* count: whole numbers, an exponent allowed */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_BUFFER_KB, "128"), 0);
    assert_int_equal(c.buffer_kb, 128);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_DEVICE_BUFFERS, "1e4"), 0);
    assert_int_equal(c.device_buffers, 10000);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_FINALIZE_AFTER_MS, "0"), 0);
    assert_int_equal(c.finalize_after_ms, 0);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_FINALIZE_AFTER_MS, " 3600000"), 0);
    assert_int_equal(c.finalize_after_ms, 3600000);
    /* word */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_GRAPHS, "node"), 0);
    assert_int_equal(c.graphs, LP_ENVCONFIG_GRAPHS_NODE);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_GRAPHS, "replay"), 0);
    assert_int_equal(c.graphs, LP_ENVCONFIG_GRAPHS_REPLAY);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_LAUNCH, "driver"), 0);
    assert_int_equal(c.launch, LP_ENVCONFIG_LAUNCH_DRIVER);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_LAUNCH, "activity"), 0);
    assert_int_equal(c.launch, LP_ENVCONFIG_LAUNCH_ACTIVITY);
    /* text: as given; "0" unsets a ZERO_OFF one */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_OUT, "/tmp/run"), 0);
    assert_string_equal(c.out, "/tmp/run");
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_COUNTERS, "bf16,fp16"), 0);
    assert_string_equal(c.counters, "bf16,fp16");
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_COUNTERS, "0"), 0);
    assert_null(c.counters);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_CAPTURE, "nvtx:^step$@2/2"), 0);
    assert_string_equal(c.capture, "nvtx:^step$@2/2");
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_COUNTER_RANGES, "^x"), 0);
    assert_string_equal(c.counter_ranges, "^x");
}

static void test_bounds(void **state)
{
    (void)state;
    struct lp_envconfig c;
    expect_warning(LP_ENVCONFIG_VAR_DEVICE_BUFFERS, "1e9",
                   "ignoring LLMPROF_DEVICE_BUFFERS=1e9: more than 10000; the default, 0, is used");
    expect_warning(LP_ENVCONFIG_VAR_FINALIZE_AFTER_MS, "3600001",
                   "ignoring LLMPROF_FINALIZE_AFTER_MS=3600001: more than 3600000; the default, "
                   "1000, is used");
    expect_warning(LP_ENVCONFIG_VAR_PM_SAMPLING, "5",
                   "ignoring LLMPROF_PM_SAMPLING=5: less than 10; the default, 0 (off), is used");
    expect_warning(LP_ENVCONFIG_VAR_PM_SAMPLING, "100001",
                   "ignoring LLMPROF_PM_SAMPLING=100001: more than 100000; the default, 0 (off), "
                   "is used");
    expect_warning(LP_ENVCONFIG_VAR_PM_BUFFER_MB, "0.5",
                   "ignoring LLMPROF_PM_BUFFER_MB=0.5: less than 1; the default, 64, is used");
    expect_warning(LP_ENVCONFIG_VAR_COUNTER_SEGMENTS, "1",
                   "ignoring LLMPROF_COUNTER_SEGMENTS=1: less than 2; the default, 512, is used");
    expect_warning(LP_ENVCONFIG_VAR_FLUSH_MS, "1e10",
                   "ignoring LLMPROF_FLUSH_MS=1e10: more than 4294967295; the default, 500, is "
                   "used");
    /* PM sampling's 0 is off, not out of range */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_PM_SAMPLING, "0"), 0);
    assert_true(c.pm_sampling_us == 0);
    /* RAISE: below the bound raised to it, unwarned */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_BUFFER_KB, "1"), 0);
    assert_int_equal(c.buffer_kb, 64);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_MAX_BUFFERS, "0"), 0);
    assert_int_equal(c.max_buffers, 2);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_FLUSH_MS, "2.5"), 0);
    assert_true(c.flush_ms == 10);
    /* the bounds themselves are in */
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_BUFFER_KB, "1048576"), 0);
    assert_int_equal(c.buffer_kb, 1048576);
    assert_int_equal(parse_one(&c, LP_ENVCONFIG_VAR_PM_SAMPLING, "10"), 0);
    assert_true(c.pm_sampling_us == 10);
}

static void test_malformed(void **state)
{
    (void)state;
    struct lp_envconfig c;
    expect_warning(LP_ENVCONFIG_VAR_MAX_BUFFERS, "nan",
                   "ignoring LLMPROF_MAX_BUFFERS=nan: not a non-negative number; the default, "
                   "64, is used");
    expect_warning(LP_ENVCONFIG_VAR_FLUSH_MS, "inf",
                   "ignoring LLMPROF_FLUSH_MS=inf: not a non-negative number; the default, 500, "
                   "is used");
    expect_warning(LP_ENVCONFIG_VAR_BUFFER_KB, "0x100",
                   "ignoring LLMPROF_BUFFER_KB=0x100: not a decimal number; the default, 4096, "
                   "is used");
    expect_warning(LP_ENVCONFIG_VAR_PM_SAMPLING, " -0X1p4",
                   "ignoring LLMPROF_PM_SAMPLING= -0X1p4: not a decimal number; the default, 0 "
                   "(off), is used");
    expect_warning(LP_ENVCONFIG_VAR_FINALIZE_AFTER_MS, "x",
                   "ignoring LLMPROF_FINALIZE_AFTER_MS=x: not a non-negative number; the "
                   "default, 1000, is used");
    expect_warning(LP_ENVCONFIG_VAR_NVML_HZ, "12abc",
                   "ignoring LLMPROF_NVML_HZ=12abc: not a non-negative number; the default, 20, "
                   "is used");
    expect_warning(LP_ENVCONFIG_VAR_NVML_HZ, "5 ",
                   "ignoring LLMPROF_NVML_HZ=5 : not a non-negative number; the default, 20, is "
                   "used");
    expect_warning(LP_ENVCONFIG_VAR_NVML_HZ, "1e999",
                   "ignoring LLMPROF_NVML_HZ=1e999: not a non-negative number; the default, 20, "
                   "is used");
    expect_warning(LP_ENVCONFIG_VAR_DEVICE_BUFFER_KB, "-1",
                   "ignoring LLMPROF_DEVICE_BUFFER_KB=-1: not a non-negative number; the default, "
                   "0, is used");
    expect_warning(LP_ENVCONFIG_VAR_BUFFER_KB, "0.5",
                   "ignoring LLMPROF_BUFFER_KB=0.5: not a whole number; the default, 4096, is "
                   "used");
    expect_warning(LP_ENVCONFIG_VAR_COUNTER_SEGMENTS, "100abc",
                   "ignoring LLMPROF_COUNTER_SEGMENTS=100abc: not a non-negative number; the "
                   "default, 512, is used");
    expect_warning(LP_ENVCONFIG_VAR_QUIET, "yes",
                   "ignoring LLMPROF_QUIET=yes: not a non-negative number; the default, 0, is "
                   "used");
    expect_warning(LP_ENVCONFIG_VAR_GEMM, "off",
                   "ignoring LLMPROF_GEMM=off: not a non-negative number; the default, 1, is "
                   "used");
    expect_warning(LP_ENVCONFIG_VAR_GRAPHS, "nodes",
                   "ignoring LLMPROF_GRAPHS=nodes: not one of replay, node; the default, replay, "
                   "is used");
    expect_warning(LP_ENVCONFIG_VAR_LAUNCH, "Driver",
                   "ignoring LLMPROF_LAUNCH=Driver: not one of callbacks, activity, driver; the "
                   "default, callbacks, is used");
    /* the default stands after each */
    parse_one(&c, LP_ENVCONFIG_VAR_PM_SAMPLING, "0x20");
    assert_true(c.pm_sampling_us == 0);
    parse_one(&c, LP_ENVCONFIG_VAR_GEMM, "no");
    assert_int_equal(c.gemm, 1);
    /* empty is unset, for every type */
    for (int i = 0; i < LP_ENVCONFIG_VAR_COUNT; i++) {
        struct lp_envconfig def, empty;
        parse_one(&def, (enum lp_envconfig_var)i, NULL);
        assert_int_equal(parse_one(&empty, (enum lp_envconfig_var)i, ""), 0);
        assert_memory_equal(&def, &empty, sizeof def);
    }
    /* several bad values: one warning each, in the table's order */
    memset(fake_env, 0, sizeof fake_env);
    n_warnings = 0;
    fake_env[LP_ENVCONFIG_VAR_MAX_BUFFERS] = "nan";
    fake_env[LP_ENVCONFIG_VAR_FLUSH_MS] = "inf";
    fake_env[LP_ENVCONFIG_VAR_OUT] = "/x";
    assert_int_equal(lp_envconfig_parse(&c, fake_get, collect, NULL), 2);
    assert_non_null(strstr(warnings[0], "LLMPROF_FLUSH_MS"));
    assert_non_null(strstr(warnings[1], "LLMPROF_MAX_BUFFERS"));
    assert_int_equal(lp_envconfig_parse(&c, fake_get, NULL, NULL), 2); /* no warner: counted */
}

/* ---- the table ---- */

static void test_table(void **state)
{
    (void)state;
    for (int i = 0; i < LP_ENVCONFIG_VAR_COUNT; i++) {
        const struct lp_envconfig_entry *e = &lp_envconfig_table[i];
        assert_non_null(e->name);
        assert_ptr_equal(lp_envconfig_name((enum lp_envconfig_var)i), e->name);
        assert_true(!strncmp(e->name, "LLMPROF_", 8));
        assert_non_null(e->doc);
        assert_non_null(e->lands);
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(e->name, lp_envconfig_table[j].name);
            if (e->reader == LP_ENVCONFIG_READER_COLLECTOR &&
                lp_envconfig_table[j].reader == LP_ENVCONFIG_READER_COLLECTOR)
                assert_true(e->offset != lp_envconfig_table[j].offset);
        }
        if (e->reader == LP_ENVCONFIG_READER_COLLECTOR) {
            assert_true(e->offset < sizeof(struct lp_envconfig));
            assert_true(e->loss_source == LP_LOSS_SOURCE_COLLECTOR ||
                        e->loss_source == LP_LOSS_SOURCE_COUNTERS ||
                        e->loss_source == LP_LOSS_SOURCE_PM);
        }
        if (e->type == LP_ENVCONFIG_TYPE_NUMBER || e->type == LP_ENVCONFIG_TYPE_COUNT) {
            assert_true(e->min >= 0 && e->min <= e->max);
            assert_true((e->def >= e->min && e->def <= e->max) ||
                        ((e->flags & LP_ENVCONFIG_FLAG_ZERO_OFF) && e->def == 0));
        }
        if (e->type == LP_ENVCONFIG_TYPE_WORD) {
            size_t n = 0;
            while (e->words[n])
                n++;
            assert_true(e->def >= 0 && e->def < (double)n);
        }
        if (e->type == LP_ENVCONFIG_TYPE_FLAG)
            assert_true(e->def == 0 || e->def == 1);
    }
    assert_null(lp_envconfig_name(LP_ENVCONFIG_VAR_COUNT));
    assert_string_equal(lp_envconfig_name(LP_ENVCONFIG_VAR_LIB), "LLMPROF_LIB");
    assert_int_equal(lp_envconfig_table[LP_ENVCONFIG_VAR_EXPORT_WARN_MIB].reader,
                     LP_ENVCONFIG_READER_CLI);
}

/* ---- docs/collector.md's table, written from the table ---- */

#define DOC_BEGIN                                                                              \
    "<!-- envconfig: written from src/trace/envconfig.c by `test_envconfig --write` -->\n"
#define DOC_END "<!-- envconfig end -->\n"

/* S into F, a Markdown table cell: pipes escaped */
static void cell(FILE *f, const char *s)
{
    for (; *s; s++)
        fprintf(f, *s == '|' ? "\\|" : "%c", *s);
}

static const char *const type_names[] = {
    [LP_ENVCONFIG_TYPE_FLAG] = "flag", [LP_ENVCONFIG_TYPE_NUMBER] = "number",
    [LP_ENVCONFIG_TYPE_COUNT] = "whole number", [LP_ENVCONFIG_TYPE_WORD] = "word",
    [LP_ENVCONFIG_TYPE_TEXT] = "text",
};

/* The section between the markers, as the table makes it (malloc'd). */
static char *doc_table(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fputs("| variable | type | default | bounds | read by | what it does |\n"
          "|---|---|---|---|---|---|\n", f);
    for (int i = 0; i < LP_ENVCONFIG_VAR_COUNT; i++) {
        const struct lp_envconfig_entry *e = &lp_envconfig_table[i];
        char def[128], bounds[128];
        lp_envconfig_default_text(e, def, sizeof def);
        lp_envconfig_bounds_text(e, bounds, sizeof bounds);
        fprintf(f, "| `%s` | %s | ", e->name, type_names[e->type]);
        if (e->type == LP_ENVCONFIG_TYPE_TEXT && e->def_text) {
            fputc('`', f);
            cell(f, def);
            fputc('`', f);
        } else {
            cell(f, def);
        }
        fputs(" | ", f);
        cell(f, *bounds ? bounds : "—");
        fputs(" | ", f);
        if (e->reader == LP_ENVCONFIG_READER_CLI)
            fputs("CLI side: ", f);
        cell(f, e->lands);
        fputs(" | ", f);
        cell(f, e->doc);
        fputs(" |\n", f);
    }
    fclose(f);
    return buf;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, n;
    char chunk[65536];
    FILE *m = open_memstream(&buf, &len);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(m);
    fclose(f);
    return buf;
}

/* The docs with the section replaced by TABLE (malloc'd), or NULL without the markers. */
static char *docs_with(const char *docs, const char *table, char **section)
{
    const char *b = strstr(docs, DOC_BEGIN);
    const char *e = b ? strstr(b, DOC_END) : NULL;
    if (!e)
        return NULL;
    b += strlen(DOC_BEGIN);
    if (section)
        *section = strndup(b, (size_t)(e - b));
    char *out = NULL;
    if (asprintf(&out, "%.*s%s%s", (int)(b - docs), docs, table, e) < 0)
        return NULL;
    return out;
}

static void test_docs(void **state)
{
    (void)state;
    char *docs = read_all(LP_DOCS);
    assert_non_null(docs);
    char *table = doc_table(), *section = NULL;
    char *updated = docs_with(docs, table, &section);
    if (!updated)
        fail_msg("%s lacks the markers of the table of variables (%s...%s)", LP_DOCS, DOC_BEGIN,
                 DOC_END);
    if (strcmp(section, table))
        fail_msg("%s's table of variables differs from src/trace/envconfig.c's: run "
                 "test_envconfig --write (it holds:\n%s\nthe table makes:\n%s)",
                 LP_DOCS, section, table);
    free(updated);
    free(section);
    free(table);
    free(docs);
}

static int write_docs(void)
{
    char *docs = read_all(LP_DOCS), *table = doc_table();
    char *updated = docs ? docs_with(docs, table, NULL) : NULL;
    FILE *f = updated ? fopen(LP_DOCS, "wb") : NULL;
    int rc = f && fputs(updated, f) >= 0 ? 0 : 1;
    if (f && fclose(f) != 0)
        rc = 1;
    fprintf(stderr, rc ? "test_envconfig: cannot write %s (markers missing?)\n"
                       : "test_envconfig: wrote %s\n", LP_DOCS);
    free(updated);
    free(table);
    free(docs);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--write"))
        return write_docs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),  cmocka_unit_test(test_types),
        cmocka_unit_test(test_bounds),    cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_table),     cmocka_unit_test(test_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
