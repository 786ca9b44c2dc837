/* The run index (src/serve/store.c) under concurrent submissions: every submission it
 * accepts is in the index, every one it refuses (the queue full) is not, and the queue's
 * bound holds, while other threads cancel queued runs and take them. A submission once
 * read the count of changed rows after releasing the lock, so another thread's refused
 * insert could answer for an accepted one (and the reverse): an accepted run then never
 * existed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve/serve_internal.h"

enum { THREADS = 6, EACH = 150, QUEUE = 4 };

struct sub {
    struct lp_store *s;
    int thread;
    char ids[EACH][LP_SERVE_ID_LEN + 1];
    int rc[EACH];
};

static void *submitter(void *arg)
{
    struct sub *x = arg;
    json_t *req = json_pack("{s:s}", "model_path", "/m");
    for (int i = 0; i < EACH; i++) {
        snprintf(x->ids[i], sizeof x->ids[i], "20261127-0%05d-%06d", x->thread, i);
        x->rc[i] = lp_store_add(x->s, x->ids[i], "default", "t", req, QUEUE);
        if (x->rc[i] == 0 && i % 3 == 0) /* some cancelled at once: slots free again */
            lp_store_cancel_queued(x->s, x->ids[i]);
    }
    json_decref(req);
    return NULL;
}

static volatile int stop_taking;

static void *taker(void *arg)
{
    struct lp_store *s = arg;
    while (!stop_taking) {
        char id[LP_SERVE_ID_LEN + 1], *runner = NULL;
        json_t *request = NULL;
        int got = lp_store_take(s, id, &runner, &request);
        if (got == 1)
            lp_store_finish(s, id, "done", 0, NULL, NULL);
        free(runner);
        json_decref(request);
    }
    return NULL;
}

static void test_concurrent_adds(void **state)
{
    (void)state;
    char dir[] = "/tmp/lp_test_store_XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/index.db", dir);
    struct lp_store s;
    assert_int_equal(lp_store_open(&s, path, 0, err, sizeof err), 0);
    static struct sub subs[THREADS];
    pthread_t th[THREADS], take;
    assert_int_equal(pthread_create(&take, NULL, taker, &s), 0);
    for (int i = 0; i < THREADS; i++) {
        subs[i] = (struct sub){.s = &s, .thread = i};
        assert_int_equal(pthread_create(&th[i], NULL, submitter, &subs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    stop_taking = 1;
    pthread_join(take, NULL);
    int accepted = 0, refused = 0;
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < EACH; k++) {
            json_t *run = lp_store_get(&s, subs[i].ids[k]);
            assert_true(subs[i].rc[k] == 0 || subs[i].rc[k] == 1);
            if (subs[i].rc[k] == 0) {
                assert_non_null(run); /* accepted: in the index */
                accepted++;
            } else {
                assert_null(run);     /* refused: not */
                refused++;
            }
            json_decref(run);
        }
    json_t *all = lp_store_list(&s);
    assert_int_equal((int)json_array_size(all), accepted);
    size_t i, queued = 0;
    json_t *run;
    json_array_foreach(all, i, run)
        queued += !strcmp(json_string_value(json_object_get(run, "status")), "queued");
    assert_true(queued <= QUEUE);
    json_decref(all);
    assert_true(accepted > 0 && refused > 0); /* both paths taken */
    lp_store_close(&s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_adds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
