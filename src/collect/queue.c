/* Bounded record queue (see queue.h). */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

int lp_queue_push(struct lp_queue *q, const void *item)
{
    pthread_mutex_lock(&q->mu);
    int rc = -1;
    if (!q->items)
        q->items = malloc(q->cap * q->elem);
    if (q->items && q->n < q->cap) {
        memcpy(q->items + q->n++ * q->elem, item, q->elem);
        q->recorded++;
        rc = 0;
    } else {
        q->dropped++;
    }
    int wake = q->n == q->cap / 2 && rc == 0;
    pthread_mutex_unlock(&q->mu);
    if (wake && q->notify)
        q->notify();
    return rc;
}

void *lp_queue_take(struct lp_queue *q, size_t *n, uint64_t *lost)
{
    pthread_mutex_lock(&q->mu);
    void *batch = q->items;
    *n = q->n;
    *lost = q->dropped - q->dropped_taken;
    q->dropped_taken = q->dropped;
    q->items = q->spare;
    q->spare = NULL;
    q->n = 0;
    pthread_mutex_unlock(&q->mu);
    return batch;
}

void lp_queue_release(struct lp_queue *q, void *batch)
{
    pthread_mutex_lock(&q->mu);
    if (!q->spare) {
        q->spare = batch;
        batch = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    free(batch);
}

void lp_queue_counts(struct lp_queue *q, uint64_t *recorded, uint64_t *dropped)
{
    pthread_mutex_lock(&q->mu);
    *recorded = q->recorded;
    *dropped = q->dropped;
    pthread_mutex_unlock(&q->mu);
}
