/* integrations/llmprof_requests.h compiles as C17 with warnings as errors and runs without a
 * tool attached (NVTX calls are then no-ops): the request convention's C side. */
#include "../integrations/llmprof_requests.h"

int main(void)
{
    nvtxRangeId_t r = llmprof_request_start("17", 812);
    llmprof_prefill("17", 512);
    llmprof_token("17");
    llmprof_request_end(r);
    llmprof_request_end(llmprof_request_start("18", 0));
    return 0;
}
