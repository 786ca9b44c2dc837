/* The run queue's worker thread (worker.c): one run at a time, cancellable. */
#ifndef LP_SERVE_WORKER_H
#define LP_SERVE_WORKER_H

#include <sys/types.h>

#include "serve_internal.h"

struct lp_worker {
    const struct lp_serve_config *cfg;
    struct lp_store *store;
    const char *dir;              /* the runs directory, absolute */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int wake, stop, cancel_all;
    pid_t pid;                    /* the running run's process group; 0: none */
    char id[LP_SERVE_ID_LEN + 1]; /* and its id */
    int cancelled;
    int disk_low;                 /* the run was stopped: its disk had too little free */
    pthread_mutex_t files;        /* held while runs' files change (retention, removal) */
};
/* Starts the worker (it runs what an earlier server left queued first): 0 or -1. */
int lp_worker_start(struct lp_worker *w, const struct lp_serve_config *cfg,
                    struct lp_store *store, const char *dir);
/* A run was queued. */
void lp_worker_wake(struct lp_worker *w);
/* Cancels the run ID when it is the running one: 1, else 0. */
int lp_worker_cancel(struct lp_worker *w, const char *id);
/* Stops the running run (it ends failed: the server stopped) and the thread. */
void lp_worker_stop(struct lp_worker *w);

#endif
