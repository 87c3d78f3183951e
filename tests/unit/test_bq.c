/* Bounded blocking queue: first in first out (a pool: last in first out), a full
 * queue makes push wait until a pop, close wakes waiters (push fails, pop drains
 * then returns NULL), and a producer and a consumer thread pass 100k items through
 * a small ring in order. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "bq.h"
#include "test.h"

static void test_fifo(void)
{
    dsq_bq *q = NULL;
    int v[5];
    CHECK_INT(dsq_bq_new(3, &q), 0);
    for (int round = 0; round < 4; round++) { /* the ring wraps */
        for (int i = 0; i < 3; i++)
            CHECK_INT(dsq_bq_push(q, &v[i]), 0);
        for (int i = 0; i < 3; i++)
            CHECK(dsq_bq_pop(q) == &v[i]);
    }
    dsq_bq_free(q);
    CHECK(dsq_bq_new(0, &q) != 0); /* a queue holds something */
}

/* a pool hands back the pointer pushed last (the buffer used last), across the
 * ring's wrap too, and still waits and closes as a queue does */
static void test_pool_newest_first(void)
{
    dsq_bq *q = NULL;
    int v[4];
    CHECK_INT(dsq_bq_new_pool(4, &q), 0);
    for (int i = 0; i < 4; i++)
        CHECK_INT(dsq_bq_push(q, &v[i]), 0);
    CHECK(dsq_bq_pop(q) == &v[3]);
    CHECK(dsq_bq_pop(q) == &v[2]);
    CHECK_INT(dsq_bq_push(q, &v[3]), 0); /* back in, first out again */
    CHECK(dsq_bq_pop(q) == &v[3]);
    for (int round = 0; round < 5; round++) { /* a FIFO's head moved: the ring wraps */
        CHECK(dsq_bq_pop(q) == &v[1]);
        CHECK_INT(dsq_bq_push(q, &v[2]), 0);
        CHECK_INT(dsq_bq_push(q, &v[1]), 0);
        CHECK(dsq_bq_pop(q) == &v[1]);
        CHECK(dsq_bq_pop(q) == &v[2]);
        CHECK_INT(dsq_bq_push(q, &v[1]), 0);
    }
    CHECK(dsq_bq_pop(q) == &v[1]);
    CHECK(dsq_bq_pop(q) == &v[0]);
    dsq_bq_close(q);
    CHECK(dsq_bq_pop(q) == NULL);
    CHECK_INT(dsq_bq_push(q, &v[0]), -1);
    dsq_bq_free(q);
    CHECK(dsq_bq_new_pool(0, &q) != 0);
}

static void *pop_later(void *arg)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return dsq_bq_pop(arg);
}

static void test_full_waits(void)
{
    dsq_bq *q = NULL;
    int a, b;
    pthread_t th;
    CHECK_INT(dsq_bq_new(1, &q), 0);
    CHECK_INT(dsq_bq_push(q, &a), 0);
    CHECK_INT(pthread_create(&th, NULL, pop_later, q), 0);
    CHECK_INT(dsq_bq_push(q, &b), 0); /* waits until the thread took a */
    void *got = NULL;
    pthread_join(th, &got);
    CHECK(got == &a);
    CHECK(dsq_bq_pop(q) == &b);
    dsq_bq_free(q);
}

static void *pop_one(void *arg) { return dsq_bq_pop(arg); }

static void test_close(void)
{
    dsq_bq *q = NULL;
    int a;
    pthread_t th;
    CHECK_INT(dsq_bq_new(2, &q), 0);
    CHECK_INT(pthread_create(&th, NULL, pop_one, q), 0);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    dsq_bq_close(q); /* wakes the waiting pop, which gets nothing */
    void *got = &a;
    pthread_join(th, &got);
    CHECK(got == NULL);
    CHECK_INT(dsq_bq_push(q, &a), -1);
    dsq_bq_free(q);

    CHECK_INT(dsq_bq_new(2, &q), 0); /* what was queued before close is still popped */
    CHECK_INT(dsq_bq_push(q, &a), 0);
    dsq_bq_close(q);
    CHECK(dsq_bq_pop(q) == &a);
    CHECK(dsq_bq_pop(q) == NULL);
    dsq_bq_free(q);
}

enum { ITEMS = 100000 };

static void *produce(void *arg)
{
    for (uintptr_t i = 1; i <= ITEMS; i++)
        if (dsq_bq_push(arg, (void *)i) != 0)
            break;
    return NULL;
}

static void test_threads_in_order(void)
{
    dsq_bq *q = NULL;
    pthread_t th;
    CHECK_INT(dsq_bq_new(4, &q), 0);
    CHECK_INT(pthread_create(&th, NULL, produce, q), 0);
    uintptr_t bad = 0;
    for (uintptr_t i = 1; i <= ITEMS; i++)
        bad += (uintptr_t)dsq_bq_pop(q) != i;
    pthread_join(th, NULL);
    CHECK_INT(bad, 0);
    dsq_bq_free(q);
}

TEST_MAIN(T(test_fifo), T(test_pool_newest_first), T(test_full_waits), T(test_close),
          T(test_threads_in_order))
