/* A bounded queue of fixed-size records between the threads that make them (the program's,
 * inside a callback or a wrapper) and the flusher that moves them to the sink. Pushing
 * copies one record under a mutex and never blocks on the sink; a full queue drops and
 * counts. The flusher swaps the whole batch out, so a push never waits for a write. */
#ifndef LP_COLLECT_QUEUE_H
#define LP_COLLECT_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct lp_queue {
    pthread_mutex_t mu;
    size_t elem, cap;               /* record size, records per batch */
    void (*notify)(void);           /* wakes the flusher when half full; may be NULL */
    uint8_t *items, *spare;         /* allocated at the first push */
    size_t n;
    uint64_t recorded, dropped, dropped_taken;
};

#define LP_QUEUE_INIT(type, capacity) \
    {PTHREAD_MUTEX_INITIALIZER, sizeof(type), (capacity), NULL, NULL, NULL, 0, 0, 0, 0}

/* Copies ITEM in: 0, or -1 when dropped (queue full or out of memory). */
int lp_queue_push(struct lp_queue *q, const void *item);
/* The batch pushed so far (NULL when none) and its count in *N; *LOST: drops since the last
 * take. Give the batch back with lp_queue_release once its records are written. */
void *lp_queue_take(struct lp_queue *q, size_t *n, uint64_t *lost);
void lp_queue_release(struct lp_queue *q, void *batch);
/* Records pushed and dropped since the start. */
void lp_queue_counts(struct lp_queue *q, uint64_t *recorded, uint64_t *dropped);

#endif
