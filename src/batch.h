/* Batches: what an indexing worker thread hands the index writer.
 *
 * A batch is a byte buffer of messages, each a small header (type, length) and a
 * payload padded to 8 bytes. Workers scan with a dictionary of their own, so the
 * ids in their events are local: before an event that uses new local ids, the
 * worker puts those strings (STR messages, in id order), and the writer's remap
 * turns each local id into the index dictionary's id. Batches are allocated once
 * and reused; putting and reading messages never allocates (except to grow an
 * empty batch for a message bigger than it).
 */
#ifndef DSQ_BATCH_H
#define DSQ_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dsq/dsq.h"

#include "dict.h"
#include "event.h"

/* Message layout: a header (type, length: u32 each), the payload padded to 8 bytes;
 * an event's payload is its head and its nf fields. The readers below are inline:
 * the writer reads each event this way (a call each cost more than its body). */
#define DSQ_BATCH_HDR 8u
#define DSQ_BATCH_EV_HEAD offsetof(dsq_event, f)
static inline size_t dsq_batch_pad8(size_t n) { return (n + 7) & ~(size_t)7; }

typedef struct dsq_batch {
    unsigned char *buf;
    size_t len, cap;
} dsq_batch;

/* A batch of cap bytes; its buffer is allocated by the first put (a worker's 96
 * batches of 64 KiB, most never used on a small input, were 12 MB allocated at
 * start; with huge pages each 2 MiB of them touched was zeroed). 0 (DSQ_ENOMEM
 * comes from a put). */
int dsq_batch_init(dsq_batch *b, size_t cap);
void dsq_batch_free(dsq_batch *b);
static inline void dsq_batch_clear(dsq_batch *b) { b->len = 0; }

/* Appends a message of `type` (> 0) whose payload is a[0..na) then c[0..nc) (c may
 * be NULL). Returns 0, 1 when it does not fit (the batch holds messages: send it
 * and put again), or DSQ_ENOMEM. */
int dsq_batch_put(dsq_batch *b, uint32_t type, const void *a, size_t na, const void *c,
                  size_t nc);

/* The STR message type, used by put_strings. Callers' types must differ. */
#define DSQ_BATCH_STR 1u

/* Puts the strings of d's ids *sent+1 .. count, advancing *sent past each one put.
 * 0 when all are in, 1 when the batch filled first (send it and call again), or
 * DSQ_ENOMEM. */
int dsq_batch_put_strings(dsq_batch *b, const dsq_dict *d, uint32_t *sent);

/* An event: its header and only the nf fields it uses. Same returns as put. */
int dsq_batch_put_event(dsq_batch *b, uint32_t type, const dsq_event *ev);
/* The event of a payload where it lies, for its reader to change (the remap) and
 * read until the batch is cleared or reused: its header and its nf fields, none
 * after them. 0 with *ev, or DSQ_EFORMAT. */
static inline int dsq_batch_take_event(const void *data, size_t n, dsq_event **ev)
{
    if (n < DSQ_BATCH_EV_HEAD || (n - DSQ_BATCH_EV_HEAD) % sizeof (*ev)->f[0] != 0)
        return DSQ_EFORMAT;
    /* payloads are 8-byte aligned in a buffer the batch allocated (never const) */
    dsq_event *e = (dsq_event *)(uintptr_t)data;
    if (e->nf != (n - DSQ_BATCH_EV_HEAD) / sizeof e->f[0])
        return DSQ_EFORMAT;
    *ev = e;
    return 0;
}

typedef struct dsq_batch_iter {
    const unsigned char *p, *end;
} dsq_batch_iter;

void dsq_batch_iter_init(dsq_batch_iter *it, const dsq_batch *b);
/* The next message: 1 with its type and payload (8-byte aligned), 0 at the end. */
static inline int dsq_batch_next(dsq_batch_iter *it, uint32_t *type, const void **data,
                                 size_t *n)
{
    uint32_t h[2];
    if ((size_t)(it->end - it->p) < DSQ_BATCH_HDR)
        return 0;
    memcpy(h, it->p, DSQ_BATCH_HDR);
    if ((size_t)(it->end - it->p) - DSQ_BATCH_HDR < dsq_batch_pad8(h[1]))
        return 0;
    *type = h[0];
    *n = h[1];
    *data = it->p + DSQ_BATCH_HDR;
    it->p += DSQ_BATCH_HDR + dsq_batch_pad8(h[1]);
    return 1;
}

/* --- remap: a worker's local dictionary ids -> the index's ids --------------- */
typedef struct dsq_remap {
    uint32_t *to;   /* to[local] = global; to[0] = 0 */
    uint32_t count; /* local ids known: 1..count */
    uint32_t cap;
} dsq_remap;

/* The next local id (count + 1) is `global`. 0 or DSQ_ENOMEM. */
int dsq_remap_add(dsq_remap *r, uint32_t global);
/* Interns a STR payload into `into` and adds its id. 0 or DSQ_ENOMEM. */
int dsq_remap_add_str(dsq_remap *r, dsq_dict *into, const void *data, size_t n);
/* One id rewritten (0 stays 0). 0, or DSQ_EFORMAT when it is not known. */
static inline int dsq_remap_id(const dsq_remap *r, uint32_t *id)
{
    if (*id == 0)
        return 0;
    if (*id > r->count)
        return DSQ_EFORMAT;
    *id = r->to[*id];
    return 0;
}

/* Rewrites the ids of an event (host, label, text, field names). 0, or
 * DSQ_EFORMAT when one is not known. */
static inline int dsq_remap_event(const dsq_remap *r, dsq_event *ev)
{
    if (dsq_remap_id(r, &ev->host) || dsq_remap_id(r, &ev->label) || dsq_remap_id(r, &ev->text))
        return DSQ_EFORMAT;
    for (unsigned i = 0; i < ev->nf && i < DSQ_EV_MAXF; i++)
        if (dsq_remap_id(r, &ev->f[i].name))
            return DSQ_EFORMAT;
    return 0;
}

void dsq_remap_free(dsq_remap *r);

#endif
