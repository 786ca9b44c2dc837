/* libFuzzer target for the config.json parser and the analysis it feeds: any bytes give a
 * model or a clear error, never a crash; a model that parses is analysed on a small workload. */
#include <stddef.h>
#include <stdint.h>

#include "llmprof/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lp_model m;
    char err[512];
    if (lp_model_parse((const char *)data, size, "fuzz.json", &m, err, sizeof err) != 0)
        return 0;
    static struct lp_model_result r;
    struct lp_workload w;
    lp_workload_defaults(&w);
    w.prompt = 64;
    w.generated = 8;
    lp_model_analyze(&m, &w, &r, err, sizeof err);
    return 0;
}
