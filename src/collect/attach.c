/* CUPTI's set-up, remembered and renewed (see attach.h). One lock guards the memory and the
 * CUPTI calls that change it, but not the flush and finalize: a finalize might wait for a
 * callback of another thread that waits for this lock. While the subscriber is gone, a
 * change is only remembered, and the new subscription applies it. */
#include "attach.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cupti_api.h"

enum { MAX_CBID = 2048, MAX_ATTRS = 8 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle subscriber;
static CUpti_CallbackFunc callback_fn;
static uint8_t callbacks[CUPTI_CB_DOMAIN_SIZE][MAX_CBID]; /* enabled */
static uint8_t kinds[CUPTI_ACTIVITY_KIND_COUNT];          /* enabled */
static struct {
    CUpti_ActivityAttribute attr;
    size_t size;
    uint64_t value;
} attrs[MAX_ATTRS];
static size_t n_attrs;
static CUpti_BuffersCallbackRequestFunc requested_fn;
static CUpti_BuffersCallbackCompleteFunc completed_fn;
static int renewing; /* atomic */
static unsigned finalized; /* lp_attach_finalized (atomic) */

CUptiResult lp_attach_subscribe(CUpti_CallbackFunc callback)
{
    pthread_mutex_lock(&lock);
    CUpti_SubscriberHandle s = NULL;
    CUptiResult r = lp_cupti.Subscribe ? lp_cupti.Subscribe(&s, callback, NULL)
                                       : CUPTI_ERROR_NOT_INITIALIZED;
    if (r == CUPTI_SUCCESS) {
        subscriber = s;
        callback_fn = callback;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUpti_SubscriberHandle lp_attach_subscriber(void)
{
    pthread_mutex_lock(&lock);
    CUpti_SubscriberHandle s = subscriber;
    pthread_mutex_unlock(&lock);
    return s;
}

CUptiResult lp_attach_callback(uint32_t on, CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if ((unsigned)domain >= CUPTI_CB_DOMAIN_SIZE || cbid >= MAX_CBID)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_NOT_INITIALIZED;
    if (subscriber)
        r = LP_CUPTI(EnableCallback, on, subscriber, domain, cbid);
    else if (__atomic_load_n(&renewing, __ATOMIC_SEQ_CST))
        r = CUPTI_SUCCESS; /* the new subscription applies it */
    if (r == CUPTI_SUCCESS)
        callbacks[domain][cbid] = on != 0;
    pthread_mutex_unlock(&lock);
    return r;
}

CUptiResult lp_attach_kind(int on, CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_SUCCESS;
    if (!__atomic_load_n(&renewing, __ATOMIC_SEQ_CST) || subscriber)
        r = on ? LP_CUPTI(ActivityEnable, kind) : LP_CUPTI(ActivityDisable, kind);
    if (r == CUPTI_SUCCESS)
        kinds[kind] = on != 0;
    pthread_mutex_unlock(&lock);
    return r;
}

CUptiResult lp_attach_attribute(CUpti_ActivityAttribute attr, size_t size, const void *value)
{
    if (size > sizeof attrs[0].value)
        return CUPTI_ERROR_INVALID_PARAMETER;
    uint64_t v = 0;
    memcpy(&v, value, size);
    pthread_mutex_lock(&lock);
    size_t sz = size;
    CUptiResult r = lp_cupti.ActivitySetAttribute ? lp_cupti.ActivitySetAttribute(attr, &sz, &v)
                                                  : CUPTI_ERROR_NOT_INITIALIZED;
    size_t i = 0;
    while (i < n_attrs && attrs[i].attr != attr)
        i++;
    if (r == CUPTI_SUCCESS && i < MAX_ATTRS) {
        attrs[i].attr = attr;
        attrs[i].size = size;
        attrs[i].value = v;
        n_attrs += i == n_attrs;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUptiResult lp_attach_buffers(CUpti_BuffersCallbackRequestFunc requested,
                              CUpti_BuffersCallbackCompleteFunc completed)
{
    pthread_mutex_lock(&lock);
    CUptiResult r = LP_CUPTI(ActivityRegisterCallbacks, requested, completed);
    if (r == CUPTI_SUCCESS) {
        requested_fn = requested;
        completed_fn = completed;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

int lp_attach_can_renew(void)
{
    return lp_cupti.Finalize && lp_cupti.Subscribe && lp_attach_subscriber() != NULL;
}

int lp_attach_renewing(void) { return __atomic_load_n(&renewing, __ATOMIC_SEQ_CST); }

unsigned lp_attach_finalized(void) { return __atomic_load_n(&finalized, __ATOMIC_SEQ_CST); }

/* With the lock held: everything remembered, on the new subscription. NULL, or the step
 * CUPTI refused and its result in *R. */
static const char *apply(CUptiResult *r)
{
    CUpti_SubscriberHandle s = NULL;
    if ((*r = lp_cupti.Subscribe(&s, callback_fn, NULL)) != CUPTI_SUCCESS)
        return "cuptiSubscribe";
    subscriber = s;
    for (size_t i = 0; i < n_attrs; i++) {
        size_t sz = attrs[i].size;
        uint64_t v = attrs[i].value;
        *r = lp_cupti.ActivitySetAttribute ? lp_cupti.ActivitySetAttribute(attrs[i].attr, &sz, &v)
                                           : CUPTI_ERROR_NOT_INITIALIZED;
        if (*r != CUPTI_SUCCESS)
            return "cuptiActivitySetAttribute";
    }
    if (requested_fn && (*r = lp_cupti.ActivityRegisterCallbacks(requested_fn, completed_fn)) !=
                            CUPTI_SUCCESS)
        return "cuptiActivityRegisterCallbacks";
    for (unsigned k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
        if (kinds[k] && (*r = lp_cupti.ActivityEnable((CUpti_ActivityKind)k)) != CUPTI_SUCCESS)
            return "cuptiActivityEnable";
    for (unsigned d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++)
        for (uint32_t c = 0; c < MAX_CBID; c++)
            if (callbacks[d][c] && (*r = lp_cupti.EnableCallback ? lp_cupti.EnableCallback(
                                                 1, s, (CUpti_CallbackDomain)d, c)
                                           : CUPTI_ERROR_NOT_INITIALIZED) != CUPTI_SUCCESS)
                return "cuptiEnableCallback";
    return NULL;
}

/* "CUPTI's text for R (R)" into BUF. */
static const char *result_text(CUptiResult r, char *buf, size_t len)
{
    const char *msg = NULL;
    if (!lp_cupti.GetResultString || lp_cupti.GetResultString(r, &msg) != CUPTI_SUCCESS || !msg)
        msg = "unknown";
    snprintf(buf, len, "%s (%d)", msg, (int)r);
    return buf;
}

int lp_attach_detach(const struct lp_attach_renewal *r, char *why, size_t len)
{
    __atomic_store_n(&renewing, 1, __ATOMIC_SEQ_CST);
    if (r->still_allowed && !r->still_allowed()) {
        __atomic_store_n(&renewing, 0, __ATOMIC_SEQ_CST);
        return 1;
    }
    /* every buffer of this subscription completes now, before anything is renumbered */
    LP_CUPTI(ActivityFlushAll, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&lock);
    CUpti_SubscriberHandle old = subscriber;
    subscriber = NULL;
    pthread_mutex_unlock(&lock);
    CUptiResult fr = lp_cupti.Finalize ? lp_cupti.Finalize() : CUPTI_ERROR_NOT_INITIALIZED;
    if (fr != CUPTI_SUCCESS) {
        pthread_mutex_lock(&lock);
        subscriber = old;
        pthread_mutex_unlock(&lock);
        __atomic_store_n(&renewing, 0, __ATOMIC_SEQ_CST);
        char text[160];
        snprintf(why, len, "cuptiFinalize failed: %s", result_text(fr, text, sizeof text));
        return -1;
    }
    __atomic_add_fetch(&finalized, 1, __ATOMIC_SEQ_CST);
    if (r->between)
        r->between();
    return 0;
}

int lp_attach_reattach(char *why, size_t len)
{
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_SUCCESS;
    const char *failed = apply(&r);
    if (failed && subscriber) { /* half set up: nothing of it is to cost the program */
        for (unsigned k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
            if (kinds[k])
                lp_cupti.ActivityDisable((CUpti_ActivityKind)k);
        if (lp_cupti.Unsubscribe)
            lp_cupti.Unsubscribe(subscriber);
    }
    if (failed)
        subscriber = NULL;
    pthread_mutex_unlock(&lock);
    __atomic_store_n(&renewing, 0, __ATOMIC_SEQ_CST);
    if (failed) {
        char text[160];
        snprintf(why, len, "%s failed after cuptiFinalize: %s", failed,
                 result_text(r, text, sizeof text));
        return -1;
    }
    return 0;
}
