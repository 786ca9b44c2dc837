/* libFuzzer target for the config.json parser and what `llmprof model` does with a model
 * that parses: the analysis of a small workload, its roofline bounds on an H200 and both
 * writers. Any bytes give a report or a clear error, never a crash. */
#include <stdio.h>

#include "fuzz.h"
#include "llmprof/model.h"
#include "llmprof/report.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* loaded once: the fuzzer calls this millions of times */
    static struct lp_gpu_table gpus;
    static const struct lp_gpu *gpu;
    static FILE *sink;
    char err[512];
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    if (!sink) {
        if (lp_gpu_table_load(&gpus, NULL, err, sizeof err) == LP_OK)
            gpu = lp_gpu_find(&gpus, "H200");
        sink = fopen("/dev/null", "w");
    }
    if (!gpu || !sink)
        return 0;
    struct lp_model m;
    if (lp_model_parse((const char *)data, size, "fuzz.json", &m, err, sizeof err) != LP_OK)
        return 0;
    static struct lp_model_result r;
    struct lp_workload w;
    lp_workload_defaults(&w);
    w.prompt = 64;
    w.generated = 8;
    if (lp_model_analyze(&m, &w, &r, err, sizeof err) != LP_OK)
        return 0;
    struct lp_model_bounds b;
    lp_model_bounds_compute(&r, &w, gpu, &b);
    struct lp_model_report rep = {&m, &w, &r, &b, NULL};
    if (lp_report_model_md(sink, &rep) == 0 && lp_report_model_json(sink, &rep) == 0)
        lp_fuzz_verdict = LP_FUZZ_WHOLE;
    return 0;
}
