/* The request convention of llmprof (docs/serving.md), for C and C++ serving loops: one NVTX
 * start/end range per request, from admission to completion ("request <id>", more words
 * allowed: "request 17 prompt=812"), one NVTX mark per token it emits ("token <id>"), and
 * optionally one mark per prefill chunk scheduled ("prefill <id> tokens=<n>"). Start/end
 * ranges may overlap, as requests do; push/pop ranges cannot. Ids are words without spaces,
 * unique over the recording. Header only; needs NVTX 3 (the CUDA toolkit's
 * <nvtx3/nvToolsExt.h>), nothing of llmprof. */
#ifndef LLMPROF_REQUESTS_H
#define LLMPROF_REQUESTS_H

#include <stdio.h>

#include <nvtx3/nvToolsExt.h>

/* Admission of request ID; PROMPT > 0 adds "prompt=PROMPT". Returns what the end takes. */
static inline nvtxRangeId_t llmprof_request_start(const char *id, long prompt)
{
    char msg[160];
    if (prompt > 0)
        snprintf(msg, sizeof msg, "request %s prompt=%ld", id, prompt);
    else
        snprintf(msg, sizeof msg, "request %s", id);
    return nvtxRangeStartA(msg);
}

static inline void llmprof_request_end(nvtxRangeId_t range)
{
    nvtxRangeEnd(range);
}

/* One token of request ID leaving the engine: the first ends its time to first token. */
static inline void llmprof_token(const char *id)
{
    char msg[160];
    snprintf(msg, sizeof msg, "token %s", id);
    nvtxMarkA(msg);
}

/* A prefill chunk of TOKENS prompt tokens of request ID scheduled into the next forward. */
static inline void llmprof_prefill(const char *id, long tokens)
{
    char msg[160];
    snprintf(msg, sizeof msg, "prefill %s tokens=%ld", id, tokens);
    nvtxMarkA(msg);
}

#endif
