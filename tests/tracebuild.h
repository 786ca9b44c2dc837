/* Building traces in tests: a trace writer on a temporary file, records added one call each
 * (ranges, launch calls, kernels), read back for the analysis. Shared by the analysis tests;
 * each fails the running cmocka test on any error. */
#ifndef LP_TESTS_TRACEBUILD_H
#define LP_TESTS_TRACEBUILD_H

#include <stdint.h>
#include <stdio.h>

#include "llmprof/analyze.h"

struct tb {
    struct lp_trace_writer *w;
    char path[64];
    uint32_t next_id, next_corr;
};

void tb_open(struct tb *b);
void add(struct tb *b, struct lp_record *r);
/* a range from A to E on THREAD */
void range(struct tb *b, const char *name, uint32_t thread, uint64_t a, uint64_t e);
/* a 1 us launch call NAME at LAUNCH on THREAD with correlation CORR */
void api(struct tb *b, const char *name, uint32_t thread, uint64_t launch, uint32_t corr);
/* a kernel NAME launched on THREAD at LAUNCH (a 1 us call; none when LAUNCH is 0), running
 * from S to E */
void kernel(struct tb *b, const char *name, uint32_t thread, uint64_t launch, uint64_t s,
            uint64_t e);
/* closes the writer when CLOSE_IT (else the trace has no END chunk), reads the trace back */
struct lp_trace *tb_read(struct tb *b, int close_it);
/* the (first) trace of the run directory DIR/NAME, read; a committed fixture */
struct lp_trace *tb_fixture(const char *dir, const char *name);
/* the first finding of code C, or NULL */
const struct lp_finding *finding(const struct lp_run *r, enum lp_finding_code c);
/* the stage named NAME, or NULL */
const struct lp_stage_report *stage(const struct lp_run *r, const char *name);
/* What a writer (report.md, report.json ...) makes of R, as a malloc'd string; it must
 * succeed */
char *write_to_string(int (*fn)(FILE *, const struct lp_run *), const struct lp_run *r);
/* lp_run_analyze, which must succeed */
void analyze(const struct lp_trace *t, const struct lp_run_options *o, struct lp_run *r);

#endif
