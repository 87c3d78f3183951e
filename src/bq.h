/* A bounded blocking queue of pointers, for handing work between threads.
 *
 * First in, first out (a pool: last in, first out); push waits while the queue is
 * full, pop while it is empty. Closing wakes every waiter: push then fails and pop
 * returns what is left, then NULL. The ring is allocated once (at new); push and pop
 * never allocate.
 */
#ifndef DSQ_BQ_H
#define DSQ_BQ_H

#include <stddef.h>

typedef struct dsq_bq dsq_bq;

/* A queue holding at most cap pointers. 0 or DSQ_ENOMEM. */
int dsq_bq_new(size_t cap, dsq_bq **out);
/* A queue whose pop takes the newest pointer (last in, first out): a pool of
 * buffers handed back and forth reuses the ones used last, still in the cache and
 * their pages already touched (a fresh page costs a fault, and on a VM far more
 * than the page's use). Otherwise as dsq_bq_new. */
int dsq_bq_new_pool(size_t cap, dsq_bq **out);
/* Frees the queue (not what it still holds). No thread may be waiting on it. */
void dsq_bq_free(dsq_bq *q);

/* Appends p (not NULL), waiting for room. 0, or -1 when the queue is closed. */
int dsq_bq_push(dsq_bq *q, void *p);
/* Takes the oldest pointer, waiting for one; NULL once closed and empty. */
void *dsq_bq_pop(dsq_bq *q);
/* Wakes all waiters; later pushes fail, pops drain what is left. */
void dsq_bq_close(dsq_bq *q);

#endif
