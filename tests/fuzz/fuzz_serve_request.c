/* libFuzzer target for llmprof serve's request parser (the body of POST /runs, from anyone
 * the server lets in) and the command a checked request becomes: any bytes give a request
 * with every field in range, or a reason; never a crash, never a command word taken from
 * the body other than a slot's whole value. */
#include <string.h>

#include "fuzz.h"
#include "serve/serve_internal.h"

enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lp_serve_runner runners[2];
    static int ready;
    char err[512];
    if (!ready) {
        if (lp_serve_runner_parse("fake=/bin/echo {model_path} {repeats} "
                                  "{use_flash_attn:--flash} {device}",
                                  &runners[0], err, sizeof err) != 0 ||
            lp_serve_runner_parse("other=/bin/true {input_dir} {max_new_tokens}", &runners[1],
                                  err, sizeof err) != 0)
            return 0;
        ready = 1;
    }
    struct lp_serve_config cfg = {.runners = runners, .n_runners = 2, .llmprof = "/llmprof"};
    const struct lp_serve_runner *runner = NULL;
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    json_t *req = lp_serve_request_check((const char *)data, size, &cfg, &runner, err,
                                         sizeof err);
    if (!req)
        return 0;
    char **argv = lp_serve_argv(&cfg, runner, req, "/runs/x");
    /* the command is profile's head, then the runner's words: as many as it has, less the
     * flash word when not asked for */
    size_t n = 0;
    while (argv && argv[n])
        n++;
    size_t head = argv && argv[5] && !strcmp(argv[5], "--model") ? 8 : 6;
    size_t want = head + runner->n_words -
                  (runner == &runners[0] && !json_is_true(json_object_get(req, "use_flash_attn")));
    if (argv && n == want && !strcmp(argv[head], runner->words[0]))
        lp_fuzz_verdict = LP_FUZZ_WHOLE;
    else
        __builtin_trap();
    lp_serve_argv_free(argv);
    json_decref(req);
    return 0;
}
