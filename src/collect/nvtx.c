/* NVTX range pushes and pops for the collector's clients (see nvtx.h). The stack is the
 * thread's own, so pops match pushes without a lock; a pop ends the innermost open range
 * of its NVTX domain. Deeper than the stack's room, ranges are seen by no client. */
#include "nvtx.h"

#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <string.h>

#include "attach.h"
#include "clock.h"
#include "cupti_api.h"

enum { MAX_CLIENTS = 4, STACK = 256 };
static const struct lp_nvtx_client *clients[MAX_CLIENTS];
static unsigned n_clients;
static pthread_mutex_t add_lock = PTHREAD_MUTEX_INITIALIZER;

struct open_range {
    const void *domain;
    uint8_t told; /* bit i: client i hears of the pop */
};
static _Thread_local struct open_range stack[STACK];
static _Thread_local unsigned depth;
static int watched;          /* the callbacks are on (atomic) */
static int64_t open_ranges;  /* on every thread, pushed or started (atomic) */
static int64_t started;      /* of them, start/end ranges (atomic) */

/* Enables the range callbacks once: 0, or -1 when CUPTI refused one. */
static int watch(void)
{
    static const CUpti_CallbackId cbids[] = {
        CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushW,
        CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
        CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePop,
        CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxRangeStartW,
        CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
        CUPTI_CBID_NVTX_nvtxRangeEnd, CUPTI_CBID_NVTX_nvtxDomainRangeEnd};
    pthread_mutex_lock(&add_lock);
    int rc = 0;
    if (!watched) {
        unsigned on = 0;
        for (size_t i = 0; i < sizeof cbids / sizeof *cbids; i++)
            on += lp_attach_callback(1, CUPTI_CB_DOMAIN_NVTX, cbids[i]) == CUPTI_SUCCESS;
        if (on == sizeof cbids / sizeof *cbids)
            __atomic_store_n(&watched, 1, __ATOMIC_RELEASE);
        else
            rc = -1;
    }
    pthread_mutex_unlock(&add_lock);
    return rc;
}

int lp_nvtx_add_client(CUpti_SubscriberHandle subscriber, const struct lp_nvtx_client *client)
{
    if (!subscriber || watch() != 0)
        return -1;
    pthread_mutex_lock(&add_lock);
    int rc = -1;
    if (n_clients < MAX_CLIENTS) {
        clients[n_clients] = client;
        __atomic_store_n(&n_clients, n_clients + 1, __ATOMIC_RELEASE);
        rc = 0;
    }
    pthread_mutex_unlock(&add_lock);
    return rc;
}

int lp_nvtx_watch(CUpti_SubscriberHandle subscriber)
{
    return subscriber ? watch() : -1;
}

int64_t lp_nvtx_open_ranges(void)
{
    return __atomic_load_n(&watched, __ATOMIC_ACQUIRE) ? __atomic_load_n(&open_ranges,
                                                                         __ATOMIC_SEQ_CST)
                                                        : -1;
}

/* A start/end range's end: counted down, never below 0 (an end of a range started before
 * the watch). */
static void end_one(void)
{
    int64_t n = __atomic_load_n(&started, __ATOMIC_RELAXED);
    while (n > 0 && !__atomic_compare_exchange_n(&started, &n, n - 1, 0, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_RELAXED))
        ;
    if (n > 0)
        __atomic_sub_fetch(&open_ranges, 1, __ATOMIC_SEQ_CST);
}

static const char *message_of(const nvtxEventAttributes_t *a)
{
    return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL;
}

void lp_nvtx_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    unsigned n = __atomic_load_n(&n_clients, __ATOMIC_ACQUIRE);
    if (domain != CUPTI_CB_DOMAIN_NVTX || !data || !__atomic_load_n(&watched, __ATOMIC_ACQUIRE))
        return;
    const void *params = ((const CUpti_NvtxData *)data)->functionParams;
    const char *msg = NULL;
    const void *dom = NULL;
    int is_push = 1;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: msg = ((const nvtxRangePushA_params *)params)->message; break;
    case CUPTI_CBID_NVTX_nvtxRangePushW: break; /* a wide name: seen, so its pop matches */
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        msg = message_of(((const nvtxRangePushEx_params *)params)->eventAttrib);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        dom = ((const nvtxDomainRangePushEx_params *)params)->domain;
        msg = message_of(((const nvtxDomainRangePushEx_params *)params)->core.eventAttrib);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop: is_push = 0; break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        dom = ((const nvtxDomainRangePop_params *)params)->domain;
        is_push = 0;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&open_ranges, 1, __ATOMIC_SEQ_CST);
        return;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: end_one(); return;
    default: return;
    }
    uint32_t self = (uint32_t)pthread_self();
    if (is_push) {
        __atomic_add_fetch(&open_ranges, 1, __ATOMIC_SEQ_CST);
        uint8_t told = 0;
        if (depth < STACK) {
            uint64_t now = lp_clock_ns();
            for (unsigned i = 0; i < n; i++)
                if (clients[i]->push(msg, self, now))
                    told |= (uint8_t)(1u << i);
            stack[depth] = (struct open_range){dom, told};
        }
        depth++;
        return;
    }
    if (!depth)
        return;
    unsigned top = depth > STACK ? STACK : depth;
    unsigned i = top;
    while (i > 0 && stack[i - 1].domain != dom)
        i--;
    if (depth > STACK) { /* the pop of a range beyond the stack's room */
        depth--;
        __atomic_sub_fetch(&open_ranges, 1, __ATOMIC_SEQ_CST);
        return;
    }
    if (i == 0) /* nothing of that domain is open */
        return;
    __atomic_sub_fetch(&open_ranges, 1, __ATOMIC_SEQ_CST);
    uint8_t told = stack[i - 1].told;
    memmove(&stack[i - 1], &stack[i], (top - i) * sizeof stack[0]);
    depth--;
    if (!told)
        return;
    uint64_t now = lp_clock_ns();
    for (unsigned k = 0; k < n; k++)
        if (told & 1u << k)
            clients[k]->pop(self, now);
}
