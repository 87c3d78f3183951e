/* Event values from their series (see evfill.h). */
#include "evfill.h"

#include <stdlib.h>
#include <string.h>

#include "rollup.h"

#define SETS 64 /* a power of two */
#define WAYS 8

typedef struct cursor {
    dsq_series_key key; /* field 0: a free cursor */
    uint64_t used;      /* when last used (the set's least recent goes first) */
    dsq_series_rec rec;
    int one;            /* a series of one value, kept in its summary */
    uint32_t seq;       /* chunked (rec.nchunks): the chunk in buf; nchunks: its own
                           pairs after the chunks (schema 11), in own */
    unsigned char *buf; /* the chunk being read, or the series' own pairs */
    size_t n, cap;
    unsigned char *own; /* chunked: its own pairs after the chunks (own_n 0: none) */
    size_t own_n, own_cap;
    dsq_chunk_iter it;
    int have;           /* a pair read and not taken yet: */
    uint32_t kind;      /* ... the kind and number of its event, and its value */
    uint64_t event;
    double v;
} cursor;

struct dsq_evfill {
    cursor c[SETS][WAYS];
    uint64_t clock;
};

int dsq_evfill_new(dsq_evfill **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : DSQ_ENOMEM;
}

void dsq_evfill_free(dsq_evfill *f)
{
    if (!f)
        return;
    for (int s = 0; s < SETS; s++)
        for (int w = 0; w < WAYS; w++) {
            free(f->c[s][w].buf);
            free(f->c[s][w].own);
        }
    free(f);
}

void dsq_evfill_reset(dsq_evfill *f)
{
    for (int s = 0; s < SETS; s++)
        for (int w = 0; w < WAYS; w++)
            f->c[s][w].key.field = 0;
}

static int same_key(const dsq_series_key *a, const dsq_series_key *b)
{
    return a->field == b->field && a->run == b->run && a->host == b->host && a->rank == b->rank &&
           a->source == b->source;
}

/* The cursor of series k: the one open on it, else the least recently used one of
 * its set, closed (key.field 0) for the caller to open. */
static cursor *cursor_for(dsq_evfill *f, const dsq_series_key *k)
{
    uint64_t h = ((uint64_t)k->field << 32 | k->source) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)k->host << 32 | (uint32_t)k->rank) * 0xff51afd7ed558ccdull;
    cursor *set = f->c[(h >> 40) & (SETS - 1)], *old = &set[0];
    for (int w = 0; w < WAYS; w++) {
        if (set[w].key.field && same_key(&set[w].key, k))
            return &set[w];
        if (set[w].used < old->used)
            old = &set[w];
    }
    old->key.field = 0;
    return old;
}

static int damaged(const dsq_series_key *k, dsq_error *err)
{
    return dsq_error_set(err, DSQ_EINDEX, "damaged index: event values missing from their series (source %u)",
                         k->source);
}

/* Opens c on series k from its first pair. */
static int cursor_open(cursor *c, dsq_store *st, const dsq_series_key *k, dsq_error *err)
{
    c->key.field = 0;
    c->have = 0;
    c->one = 0;
    c->n = 0;
    int r = dsq_store_series_get(st, k, &c->rec, &c->buf, &c->n, &c->cap, err);
    if (r <= 0)
        return r < 0 ? r : damaged(k, err);
    c->seq = 0;
    c->own_n = 0;
    if (c->rec.nchunks) {
        if (c->n) { /* its own pairs after the chunks: kept aside */
            if (c->n > c->own_cap) {
                unsigned char *o = realloc(c->own, c->n);
                if (!o)
                    return dsq_error_set(err, DSQ_ENOMEM, "reading event values");
                c->own = o;
                c->own_cap = c->n;
            }
            memcpy(c->own, c->buf, c->n);
            c->own_n = c->n;
        }
        if ((r = dsq_store_chunk_get(st, k, 0, &c->buf, &c->n, &c->cap, err)) <= 0)
            return r < 0 ? r : damaged(k, err);
    } else if (c->n == 0) {
        if (c->rec.count != 1)
            return damaged(k, err);
        c->one = 1; /* its value is the summary's */
    }
    dsq_chunk_iter_init(&c->it, c->buf, c->n);
    c->key = *k;
    return 0;
}

/* The next pair into c (have); 1, 0 past the last one, or an error. */
static int cursor_next(cursor *c, dsq_store *st, dsq_error *err)
{
    for (;;) {
        int64_t t;
        int r = dsq_chunk_iter_next(&c->it, &t, &c->v);
        if (r == 1) {
            if (!c->it.by_event) /* field series name their values' events */
                return damaged(&c->key, err);
            c->kind = c->it.kind;
            c->event = c->it.event;
            c->have = 1;
            return 1;
        }
        if (r < 0)
            return damaged(&c->key, err);
        if (!c->rec.nchunks || c->seq >= c->rec.nchunks)
            return 0;
        if (++c->seq == c->rec.nchunks) { /* past the chunks: its own pairs, if any */
            if (!c->own_n)
                return 0;
            dsq_chunk_iter_init(&c->it, c->own, c->own_n);
            continue;
        }
        if ((r = dsq_store_chunk_get(st, &c->key, c->seq, &c->buf, &c->n, &c->cap, err)) <= 0)
            return r < 0 ? r : damaged(&c->key, err);
        dsq_chunk_iter_init(&c->it, c->buf, c->n);
    }
}

/* The value of the event-th event of kind in series k into *v. */
static int value_of(dsq_evfill *f, dsq_store *st, const dsq_series_key *k, uint32_t kind,
                    uint64_t event, double *v, dsq_error *err)
{
    cursor *c = cursor_for(f, k);
    int r, restarted = 0;
    c->used = ++f->clock;
    if (!c->key.field && (r = cursor_open(c, st, k, err)))
        return r;
    if (c->one) {
        *v = c->rec.first_v;
        return 0;
    }
    for (;;) {
        if (!c->have && (r = cursor_next(c, st, err)) < 0)
            return r;
        if (c->have && c->kind == kind && c->event == event) {
            c->have = 0;
            *v = c->v;
            return 0;
        }
        if (c->have && !(c->kind == kind && c->event > event)) {
            c->have = 0; /* before it, or another kind's: passed over */
            continue;
        }
        /* at the end, or past it: it is before where the cursor is (asked out of
         * order), so from the start once more */
        if (restarted)
            return damaged(k, err);
        restarted = 1;
        if ((r = cursor_open(c, st, k, err)))
            return r;
    }
}

int dsq_evfill_event(dsq_evfill *f, dsq_store *st, const dsq_block_key *k, dsq_event *ev,
                     uint64_t event, uint32_t in_series, dsq_error *err)
{
    dsq_series_key sk = {0, k->run, k->host, k->rank, k->source};
    for (uint32_t m = in_series; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        if (i >= ev->nf || !(sk.field = ev->f[i].name))
            return damaged(&sk, err);
        int r = value_of(f, st, &sk, ev->kind, event, &ev->f[i].v, err);
        if (r)
            return r;
    }
    return 0;
}
