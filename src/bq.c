/* Bounded blocking queue (see bq.h): a ring under one mutex, two condition variables. */
#include "bq.h"

#include <pthread.h>
#include <stdlib.h>

#include "dsq/dsq.h"

struct dsq_bq {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    size_t cap, head, count;
    int closed;
    int newest_first; /* pop takes the newest (dsq_bq_new_pool) */
    void **ring;
};

static int make(size_t cap, int newest_first, dsq_bq **out)
{
    dsq_bq *q = calloc(1, sizeof *q);
    if (!q || cap == 0 || !(q->ring = calloc(cap, sizeof *q->ring))) {
        free(q);
        return DSQ_ENOMEM;
    }
    q->cap = cap;
    q->newest_first = newest_first;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    *out = q;
    return 0;
}

int dsq_bq_new(size_t cap, dsq_bq **out)
{
    return make(cap, 0, out);
}

int dsq_bq_new_pool(size_t cap, dsq_bq **out)
{
    return make(cap, 1, out);
}

void dsq_bq_free(dsq_bq *q)
{
    if (!q)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->ring);
    free(q);
}

int dsq_bq_push(dsq_bq *q, void *p)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == q->cap && !q->closed)
        pthread_cond_wait(&q->not_full, &q->mu);
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    q->ring[(q->head + q->count++) % q->cap] = p;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

void *dsq_bq_pop(dsq_bq *q)
{
    void *p = NULL;
    pthread_mutex_lock(&q->mu);
    while (q->count == 0 && !q->closed)
        pthread_cond_wait(&q->not_empty, &q->mu);
    if (q->count > 0) {
        if (q->newest_first) {
            p = q->ring[(q->head + q->count - 1) % q->cap];
        } else {
            p = q->ring[q->head];
            q->head = (q->head + 1) % q->cap;
        }
        q->count--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->mu);
    return p;
}

void dsq_bq_close(dsq_bq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
}
