/* Rollups (see rollup.h).
 *
 * Chunk encoding: per pair, the time as a zigzag varint of its difference from the
 * previous time (the first from 0, times taken as 64-bit two's complement so
 * DSQ_TIME_NONE encodes too), then the value as a packed number (varint.h).
 *
 * The builder keeps one source's series in an open-addressing table keyed by
 * (field, host, rank); each series has a summary and a chunk buffer that is written
 * out when it reaches CHUNK_BYTES. Buffers are kept for the next source.
 */
#include "rollup.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "num.h"
#include "timeconv.h"
#include "varint.h"

/* A chunk holds up to 32 KiB of pairs before it is written (zstd-packed by the
 * store, typically to 8-12 KiB: whole LMDB overflow pages waste little); a pair
 * takes at most DSQ_VARINT_MAX + DSQ_NUM_MAX bytes. */
#define CHUNK_BYTES (32768 - DSQ_VARINT_MAX - DSQ_NUM_MAX)
#define MAX_ATTRS 256

double dsq_unit_convert(double v, uint8_t from, uint8_t to)
{
    if (from == to || dsq_unit_family(from) != dsq_unit_family(to))
        return v;
    return v * dsq_unit_factor(from) / dsq_unit_factor(to);
}

void dsq_series_add(dsq_series_rec *r, int64_t t, double v, uint8_t unit)
{
    if (r->count == 0) {
        r->unit = unit;
        r->min = r->max = r->first_v = r->last_v = v;
        r->first_t = r->last_t = t;
        r->sum = v;
        r->count = 1;
        return;
    }
    r->count++;
    r->sum += v;
    if (v < r->min)
        r->min = v;
    if (v > r->max)
        r->max = v;
    if (t < r->first_t) {
        r->first_t = t;
        r->first_v = v;
    }
    if (t >= r->last_t) {
        r->last_t = t;
        r->last_v = v;
    }
}

void dsq_series_merge(dsq_series_rec *to, const dsq_series_rec *from, int counting)
{
    if (!from->count)
        return;
    if (!to->count) {
        *to = *from;
        to->nchunks = 0;
        return;
    }
    if (counting) {
        to->count += from->count;
        if (from->first_t != DSQ_TIME_NONE &&
            (to->first_t == DSQ_TIME_NONE || from->first_t < to->first_t))
            to->first_t = from->first_t;
        if (from->last_t != DSQ_TIME_NONE &&
            (to->last_t == DSQ_TIME_NONE || from->last_t > to->last_t))
            to->last_t = from->last_t;
        return;
    }
    uint8_t u = from->unit;
    double mn = dsq_unit_convert(from->min, u, to->unit), mx = dsq_unit_convert(from->max, u, to->unit);
    to->count += from->count;
    to->sum += dsq_unit_convert(from->sum, u, to->unit);
    if (mn < to->min)
        to->min = mn;
    if (mx > to->max)
        to->max = mx;
    if (from->first_t < to->first_t) {
        to->first_t = from->first_t;
        to->first_v = dsq_unit_convert(from->first_v, u, to->unit);
    }
    if (from->last_t >= to->last_t) {
        to->last_t = from->last_t;
        to->last_v = dsq_unit_convert(from->last_v, u, to->unit);
    }
}

/* --- chunks ------------------------------------------------------------------ */

int dsq_chunk_add(dsq_chunk *c, int64_t t, double v)
{
    if (c->len + 32 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        unsigned char *n = realloc(c->buf, cap);
        if (!n)
            return DSQ_ENOMEM;
        c->buf = n;
        c->cap = cap;
    }
    unsigned char *p = c->buf + c->len;
    p = dsq_varint_put(p, dsq_zigzag((int64_t)((uint64_t)t - (uint64_t)c->t_prev)));
    c->t_prev = t;
    p = dsq_num_put(p, v);
    c->len = (size_t)(p - c->buf);
    c->count++;
    return 0;
}

void dsq_chunk_reset(dsq_chunk *c)
{
    c->len = 0;
    c->count = 0;
    c->t_prev = 0;
}

void dsq_chunk_free(dsq_chunk *c)
{
    free(c->buf);
    memset(c, 0, sizeof *c);
}

void dsq_chunk_iter_init(dsq_chunk_iter *it, const void *data, size_t n)
{
    it->p = data;
    it->end = it->p + n;
    it->t_prev = 0;
}

int dsq_chunk_iter_next(dsq_chunk_iter *it, int64_t *t, double *v)
{
    uint64_t dt;
    if (it->p == it->end)
        return 0;
    if (dsq_varint_get(&it->p, it->end, &dt) || dsq_num_get(&it->p, it->end, v))
        return DSQ_EFORMAT;
    it->t_prev = (int64_t)((uint64_t)it->t_prev + (uint64_t)dsq_unzigzag(dt));
    *t = it->t_prev;
    return 1;
}

/* --- the builder --------------------------------------------------------------- */

typedef struct open_series {
    uint32_t field, host; /* field 0: a free slot */
    int32_t rank;
    uint32_t nchunks;
    dsq_series_rec rec;
    dsq_chunk chunk;
} open_series;

typedef struct open_attr {
    uint32_t name;
    dsq_attr_rec rec;
} open_attr;

struct dsq_rollup {
    dsq_store *st;
    uint32_t run, source;
    open_series *tab;
    size_t n, cap; /* cap: a power of two */
    open_attr attrs[MAX_ATTRS];
    int nattrs;
    uint32_t failure_name; /* dictionary id of "failure" */
};

int dsq_rollup_new(dsq_store *st, dsq_rollup **out)
{
    dsq_rollup *r = calloc(1, sizeof *r);
    if (!r)
        return DSQ_ENOMEM;
    r->st = st;
    r->cap = 64;
    r->failure_name = dsq_dict_intern(dsq_store_dict(st), "failure", 7);
    if (!(r->tab = calloc(r->cap, sizeof *r->tab))) {
        free(r);
        return DSQ_ENOMEM;
    }
    *out = r;
    return 0;
}

void dsq_rollup_free(dsq_rollup *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->cap; i++)
        dsq_chunk_free(&r->tab[i].chunk);
    free(r->tab);
    free(r);
}

static size_t slot(const dsq_rollup *r, uint32_t field, uint32_t host, int32_t rank)
{
    uint64_t h = ((uint64_t)field << 32 | host) * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)rank * 0xff51afd7ed558ccdull;
    size_t i = (size_t)(h >> 29) & (r->cap - 1);
    while (r->tab[i].field &&
           (r->tab[i].field != field || r->tab[i].host != host || r->tab[i].rank != rank))
        i = (i + 1) & (r->cap - 1);
    return i;
}

void dsq_rollup_begin(dsq_rollup *r, uint32_t run, uint32_t source)
{
    for (size_t i = 0; i < r->cap; i++) {
        if (!r->tab[i].field)
            continue;
        dsq_chunk c = r->tab[i].chunk; /* keep the buffer */
        dsq_chunk_reset(&c);
        memset(&r->tab[i], 0, sizeof r->tab[i]);
        r->tab[i].chunk = c;
    }
    r->n = 0;
    r->nattrs = 0;
    r->run = run;
    r->source = source;
}

/* Doubles the table (the buffers of free slots are let go). */
static int grow(dsq_rollup *r)
{
    size_t old = r->cap;
    open_series *prev = r->tab;
    if (!(r->tab = calloc(old * 2, sizeof *r->tab))) {
        r->tab = prev;
        return DSQ_ENOMEM;
    }
    r->cap = old * 2;
    for (size_t i = 0; i < old; i++) {
        if (prev[i].field)
            r->tab[slot(r, prev[i].field, prev[i].host, prev[i].rank)] = prev[i];
        else
            dsq_chunk_free(&prev[i].chunk);
    }
    free(prev);
    return 0;
}

static dsq_series_key key_of(const dsq_rollup *r, const open_series *s)
{
    return (dsq_series_key){s->field, r->run, s->host, s->rank, r->source};
}

static int write_chunk(dsq_rollup *r, open_series *s, dsq_error *err)
{
    if (!s->chunk.count)
        return 0;
    dsq_series_key k = key_of(r, s);
    int rc = dsq_store_chunk_put(r->st, &k, s->nchunks++, s->chunk.buf, s->chunk.len, err);
    dsq_chunk_reset(&s->chunk);
    return rc;
}

static open_series *series_for(dsq_rollup *r, uint32_t field, uint32_t host, int32_t rank)
{
    if ((r->n + 1) * 4 > r->cap * 3 && grow(r))
        return NULL;
    open_series *s = &r->tab[slot(r, field, host, rank)];
    if (!s->field) {
        s->field = field;
        s->host = host;
        s->rank = rank;
        r->n++;
    }
    return s;
}

/* Keeps an attribute's latest value in this source (the earliest with `first`). */
static void add_attr(dsq_rollup *r, uint32_t name, const dsq_event *ev, int first)
{
    int i;
    for (i = 0; i < r->nattrs && r->attrs[i].name != name; i++)
        ;
    if (i == MAX_ATTRS)
        return; /* the event blocks still hold it */
    open_attr *a = &r->attrs[i];
    if (i == r->nattrs)
        r->nattrs++;
    else if (first ? ev->t_us >= a->rec.t : ev->t_us < a->rec.t)
        return;
    memset(a, 0, sizeof *a);
    a->name = name;
    a->rec.t = ev->t_us;
    a->rec.text = ev->text;
    for (int f = 0; f < ev->nf; f++) {
        a->rec.num = ev->f[f].v;
        a->rec.is_num = 1;
    }
}

/* Counts an event in its kind's series: the span covers events with a time. */
static void count_event(dsq_series_rec *rec, int64_t t)
{
    if (rec->count++ == 0)
        rec->first_t = rec->last_t = DSQ_TIME_NONE;
    if (t == DSQ_TIME_NONE)
        return;
    if (rec->first_t == DSQ_TIME_NONE || t < rec->first_t)
        rec->first_t = t;
    if (rec->last_t == DSQ_TIME_NONE || t > rec->last_t)
        rec->last_t = t;
}

int dsq_rollup_add(dsq_rollup *r, const dsq_event *ev, dsq_error *err)
{
    open_series *s = series_for(r, DSQ_SERIES_KIND_BASE + ev->kind, ev->host, ev->rank);
    if (!s)
        return dsq_error_set(err, DSQ_ENOMEM, "rollups");
    count_event(&s->rec, ev->t_us);
    if (ev->kind == DSQ_EV_ATTR && ev->label)
        add_attr(r, ev->label, ev, 0);
    if (ev->kind == DSQ_EV_FAILURE && ev->label && r->failure_name) {
        dsq_event f = {.t_us = ev->t_us, .text = ev->label}; /* the class, as an attribute */
        add_attr(r, r->failure_name, &f, 1);
    }
    for (int i = 0; i < ev->nf; i++) {
        const dsq_field *f = &ev->f[i];
        if (!f->name || !(s = series_for(r, f->name, ev->host, ev->rank)))
            return f->name ? dsq_error_set(err, DSQ_ENOMEM, "rollups") : 0;
        double v = s->rec.count ? dsq_unit_convert(f->v, f->unit, s->rec.unit) : f->v;
        dsq_series_add(&s->rec, ev->t_us, v, f->unit);
        if (dsq_chunk_add(&s->chunk, ev->t_us, v))
            return dsq_error_set(err, DSQ_ENOMEM, "rollups");
        if (s->chunk.len >= CHUNK_BYTES) {
            int rc = write_chunk(r, s, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Recomputes the run rollup of every field this source has, once per field. */
static int update_run_rollups(dsq_rollup *r, dsq_error *err)
{
    uint32_t *f = malloc((r->n ? r->n : 1) * sizeof *f);
    size_t n = 0;
    int rc = 0;
    if (!f)
        return dsq_error_set(err, DSQ_ENOMEM, "rollups");
    for (size_t i = 0; i < r->cap && n < r->n; i++)
        if (r->tab[i].field)
            f[n++] = r->tab[i].field;
    qsort(f, n, sizeof *f, cmp_u32);
    for (size_t i = 0; i < n && !rc; i++)
        if (i == 0 || f[i] != f[i - 1])
            rc = dsq_store_runroll_update(r->st, f[i], r->run, err);
    free(f);
    return rc;
}

int dsq_rollup_checkpoint(dsq_rollup *r, dsq_error *err) { return dsq_rollup_finish(r, err); }

int dsq_rollup_finish(dsq_rollup *r, dsq_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < r->cap && !rc; i++) {
        open_series *s = &r->tab[i];
        if (!s->field)
            continue;
        if (!(rc = write_chunk(r, s, err))) {
            s->rec.nchunks = s->nchunks;
            dsq_series_key k = key_of(r, s);
            rc = dsq_store_series_put(r->st, &k, &s->rec, err);
        }
    }
    for (int i = 0; i < r->nattrs && !rc; i++)
        rc = dsq_store_attr_put(r->st, r->run, r->attrs[i].name, r->source, &r->attrs[i].rec, err);
    return rc ? rc : update_run_rollups(r, err);
}
