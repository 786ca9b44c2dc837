/* Building traces in tests (tracebuild.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracebuild.h"

void tb_open(struct tb *b)
{
    snprintf(b->path, sizeof b->path, "/tmp/lp_test_trace.XXXXXX");
    int fd = mkstemp(b->path);
    assert_true(fd >= 0);
    close(fd);
    unlink(b->path);
    char err[256];
    assert_int_equal(lp_trace_writer_open(&b->w, b->path, NULL, err, sizeof err), LP_OK);
    lp_trace_writer_set_meta(b->w, "pid", "42");
    assert_int_equal(lp_trace_writer_write_header(b->w), LP_OK);
    b->next_id = 1;
    b->next_corr = 1;
}

void add(struct tb *b, struct lp_record *r)
{
    assert_int_equal(lp_trace_writer_add(b->w, r), LP_OK);
}

void range(struct tb *b, const char *name, uint32_t thread, uint64_t a, uint64_t e)
{
    uint32_t id = b->next_id++;
    struct lp_record r = {.type = LP_REC_MARKER};
    r.u.marker = (struct lp_marker){.timestamp = a, .id = id, .flags = LP_MARKER_FLAG_START,
                                    .name = lp_trace_writer_intern(b->w, name), .thread = thread};
    add(b, &r);
    r.u.marker = (struct lp_marker){.timestamp = e, .id = id, .flags = LP_MARKER_FLAG_END,
                                    .thread = thread};
    add(b, &r);
}

void api(struct tb *b, const char *name, uint32_t thread, uint64_t launch, uint32_t corr)
{
    struct lp_record r = {.type = LP_REC_API};
    r.u.api = (struct lp_api){.start = launch, .end = launch + 1000, .correlation = corr,
                              .thread = thread, .domain = LP_API_DOMAIN_RUNTIME,
                              .name = lp_trace_writer_intern(b->w, name)};
    add(b, &r);
}

void kernel(struct tb *b, const char *name, uint32_t thread, uint64_t launch, uint64_t s,
            uint64_t e)
{
    uint32_t corr = b->next_corr++;
    if (launch)
        api(b, "cudaLaunchKernel", thread, launch, corr);
    struct lp_record r = {.type = LP_REC_KERNEL};
    r.u.kernel = (struct lp_kernel){.start = s, .end = e, .correlation = corr, .stream = 7,
                                    .name = lp_trace_writer_intern(b->w, name)};
    add(b, &r);
}

struct lp_trace *tb_read(struct tb *b, int close_it)
{
    if (close_it)
        assert_int_equal(lp_trace_writer_close(b->w), LP_OK);
    struct lp_trace *t = NULL;
    char err[256];
    assert_int_equal(lp_trace_read(&t, b->path, err, sizeof err), LP_OK);
    unlink(b->path);
    return t;
}

struct lp_trace *tb_fixture(const char *dir, const char *name)
{
    char cmd[512], path[512] = "";
    snprintf(cmd, sizeof cmd, "ls %s/%s/*.lpt", dir, name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = 0;
    struct lp_trace *t = NULL;
    char err[256];
    assert_int_equal(lp_trace_read(&t, path, err, sizeof err), LP_OK);
    return t;
}

const struct lp_finding *finding(const struct lp_run *r, enum lp_finding_code c)
{
    for (size_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].code == c)
            return &r->findings[i];
    return NULL;
}

const struct lp_stage_report *stage(const struct lp_run *r, const char *name)
{
    for (size_t i = 0; i < r->n_stages; i++)
        if (!strcmp(r->stages[i].name, name))
            return &r->stages[i];
    return NULL;
}

void analyze(const struct lp_trace *t, const struct lp_run_options *o, struct lp_run *r)
{
    char err[256];
    assert_int_equal(lp_run_analyze(t, o, r, err, sizeof err), LP_OK);
}

char *write_to_string(int (*fn)(FILE *, const struct lp_run *), const struct lp_run *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(f, r), 0);
    fclose(f);
    return buf;
}
