/* libFuzzer target for llmprof watch's reading: the input, a trace image, is written to a
 * file in pieces cut where its own bytes say, and followed as it grows (src/trace/follow.c)
 * with the live figures taken of every record handed on (src/analyze/live.c) and their
 * /metrics text written: never a crash, leak, hang or undefined behaviour. Verdict: refused
 * (not a trace), whole (its END chunk read, nothing skipped), else partial. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "llmprof/follow.h"
#include "llmprof/live.h"
#include "llmprof/report.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

static const char *name_of(void *ctx, lp_str id) { return lp_follow_str(ctx, id); }

static int on_record(void *ctx, struct lp_follow *f, const struct lp_record *r)
{
    return lp_live_add(ctx, r, name_of, f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/lp_fuzz_follow.%d", (int)getpid());
    unlink(path);
    struct lp_follow *f = NULL;
    struct lp_live *l = NULL;
    char err[256];
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    if (lp_follow_open(&f, path) != LP_OK || lp_live_init(&l, NULL, 0, err, sizeof err) != LP_OK)
        goto out;
    FILE *w = fopen(path, "wb");
    if (!w)
        goto out;
    int rc = LP_OK, more = 0;
    uint32_t cut = 2166136261u;
    for (size_t at = 0; at < size && rc == LP_OK;) {
        cut = (cut ^ data[at]) * 16777619u; /* piece sizes from the input itself */
        size_t n = 1 + cut % 4096;
        if (n > size - at)
            n = size - at;
        fwrite(data + at, 1, n, w);
        fflush(w);
        at += n;
        do
            rc = lp_follow_poll(f, 1u << 16, on_record, l, &more, err, sizeof err);
        while (rc == LP_OK && more);
    }
    fclose(w);
    for (int i = 0; i < 4 && rc == LP_OK; i++) /* a torn last chunk is waited for, then not */
        rc = lp_follow_poll(f, 0, on_record, l, &more, err, sizeof err);
    if (rc == LP_OK) {
        struct lp_follow_stats st = lp_follow_stats(f);
        struct lp_prom_source src = {.trace = "t", .follow = st, .facts = lp_live_facts(l),
                                     .window = lp_live_window(l, 10)};
        FILE *sink = fopen("/dev/null", "w");
        if (sink) {
            lp_report_prometheus(sink, &src, 1, 10);
            fclose(sink);
        }
        int whole = st.complete && !st.bad_chunks && !st.waiting && !st.missing && !st.repeated;
        lp_fuzz_verdict = whole ? LP_FUZZ_WHOLE : LP_FUZZ_PARTIAL;
    }
out:
    lp_live_free(l);
    lp_follow_free(f);
    unlink(path);
    return 0;
}
