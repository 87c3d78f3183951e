/* Packed series summaries and groups of them (see sergroup.h). */
#include "sergroup.h"

#include <string.h>

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

size_t dsq_summary_put(unsigned char *out, const dsq_series_rec *r, int64_t base)
{
    unsigned char *p = dsq_varint_put(out, r->count);
    *p++ = r->unit;
    p = dsq_varint_put(p, r->nchunks);
    p = dsq_varint_put(p, dsq_zigzag((int64_t)((uint64_t)r->first_t - (uint64_t)base)));
    p = dsq_varint_put(p, dsq_zigzag((int64_t)((uint64_t)r->last_t - (uint64_t)r->first_t)));
    const double v[3] = {r->sum, r->min, r->max};
    unsigned char *flags = p++;
    *flags = same_bits(r->last_v, r->first_v) ? 0x40 : 0;
    p = dsq_ev_num_put(p, r->first_v);
    if (!*flags)
        p = dsq_ev_num_put(p, r->last_v);
    for (int i = 0; i < 3; i++) {
        unsigned code = same_bits(v[i], r->first_v) ? 1 : same_bits(v[i], r->last_v) ? 2 : 0;
        *flags |= (unsigned char)(code << (2 * i));
        if (!code)
            p = dsq_ev_num_put(p, v[i]);
    }
    return (size_t)(p - out);
}

int dsq_summary_get(const unsigned char *p, size_t n, int64_t base, dsq_series_rec *r,
                    const unsigned char **pairs, size_t *npairs)
{
    const unsigned char *end = p + n;
    uint64_t count, nchunks, t0, dt;
    double v[5];
    memset(r, 0, sizeof *r);
    if (dsq_varint_get(&p, end, &count) || p == end)
        return -1;
    r->unit = *p++;
    if (dsq_varint_get(&p, end, &nchunks) || nchunks > UINT32_MAX ||
        dsq_varint_get(&p, end, &t0) || dsq_varint_get(&p, end, &dt))
        return -1;
    if (p == end)
        return -1;
    unsigned flags = *p++;
    if ((flags & 0x80) || dsq_num_get(&p, end, &v[3])) /* first_v */
        return -1;
    if (flags & 0x40)
        v[4] = v[3];
    else if (dsq_num_get(&p, end, &v[4]))
        return -1;
    for (int i = 0; i < 3; i++) { /* sum, min, max */
        unsigned code = flags >> (2 * i) & 3;
        if (code == 3)
            return -1;
        if (code)
            v[i] = v[2 + code]; /* first_v or last_v */
        else if (dsq_num_get(&p, end, &v[i]))
            return -1;
    }
    if (pairs) {
        *pairs = p;
        *npairs = (size_t)(end - p);
    }
    r->count = count;
    r->nchunks = (uint32_t)nchunks;
    r->first_t = (int64_t)((uint64_t)base + (uint64_t)dsq_unzigzag(t0));
    r->last_t = (int64_t)((uint64_t)r->first_t + (uint64_t)dsq_unzigzag(dt));
    r->sum = v[0];
    r->min = v[1];
    r->max = v[2];
    r->first_v = v[3];
    r->last_v = v[4];
    return 0;
}

void dsq_group_iter_init(dsq_group_iter *it, const void *data, size_t n)
{
    it->p = data;
    it->end = it->p + n;
    it->prev = (dsq_group_prev){0, 0};
}

/* An entry's head at it->p: 0 with e's key, raw bytes, base and summary bytes
 * (it->p not moved), -1 when damaged. */
static int entry_head(const dsq_group_iter *it, dsq_group_entry *e)
{
    const unsigned char *p = it->p;
    uint64_t dhost, rank1, source, len;
    if (dsq_varint_get(&p, it->end, &dhost) || dhost > UINT32_MAX ||
        dsq_varint_get(&p, it->end, &rank1) || rank1 > UINT32_MAX ||
        dsq_varint_get(&p, it->end, &source) || source > UINT32_MAX ||
        dsq_varint_get(&p, it->end, &len) || len > (uint64_t)(it->end - p))
        return -1;
    e->host = it->prev.host + (uint32_t)dhost;
    e->rank = (int32_t)((uint32_t)rank1 - 1u);
    e->source = (uint32_t)source;
    e->raw = it->p;
    e->raw_len = (size_t)(p + len - it->p);
    e->base = it->prev;
    e->sum = p;
    e->sum_len = (size_t)len;
    return 0;
}

/* The summary's first_t (its fourth number) at s[0..n), against base; *t0_at and
 * *t0_end where its varint lies. 0, or -1 when damaged. */
static int summary_first_t(const unsigned char *s, size_t n, int64_t base, int64_t *first_t,
                           const unsigned char **t0_at, const unsigned char **t0_end)
{
    const unsigned char *p = s, *end = s + n;
    uint64_t count, nchunks, t0;
    if (dsq_varint_get(&p, end, &count) || p == end)
        return -1;
    p++; /* unit */
    if (dsq_varint_get(&p, end, &nchunks) || nchunks > UINT32_MAX)
        return -1;
    *t0_at = p;
    if (dsq_varint_get(&p, end, &t0))
        return -1;
    *t0_end = p;
    *first_t = (int64_t)((uint64_t)base + (uint64_t)dsq_unzigzag(t0));
    return 0;
}

int dsq_group_next(dsq_group_iter *it, dsq_group_entry *e)
{
    if (it->p == it->end)
        return 0;
    if (entry_head(it, e) ||
        dsq_summary_get(e->sum, e->sum_len, it->prev.t, &e->rec, &e->pairs, &e->npairs)) {
        it->p = it->end; /* the entries after a damaged one cannot be found */
        return -1;
    }
    e->skimmed = 0;
    it->prev = (dsq_group_prev){e->rec.first_t, e->host};
    it->p = e->raw + e->raw_len;
    return 1;
}

int dsq_group_skim(dsq_group_iter *it, dsq_group_entry *e)
{
    if (it->p == it->end)
        return 0;
    const unsigned char *t0_at, *t0_end;
    int64_t first_t;
    if (entry_head(it, e) ||
        summary_first_t(e->sum, e->sum_len, it->prev.t, &first_t, &t0_at, &t0_end)) {
        it->p = it->end;
        return -1;
    }
    memset(&e->rec, 0, sizeof e->rec);
    e->rec.first_t = first_t;
    e->pairs = NULL;
    e->npairs = 0;
    e->skimmed = 1;
    it->prev = (dsq_group_prev){first_t, e->host};
    it->p = e->raw + e->raw_len;
    return 1;
}

int dsq_group_entry_rec(const dsq_group_entry *e, dsq_series_rec *r)
{
    if (!e->skimmed) {
        *r = e->rec;
        return 0;
    }
    return dsq_summary_get(e->sum, e->sum_len, e->base.t, r, NULL, NULL);
}

int dsq_group_last(const void *data, size_t n, uint32_t *host, int32_t *rank, uint32_t *source,
                   size_t *count)
{
    const unsigned char *p = data, *end = p + n;
    uint32_t h = 0;
    uint64_t dhost, rank1 = 0, src = 0, len;
    *count = 0;
    while (p < end) {
        if (dsq_varint_get(&p, end, &dhost) || dhost > UINT32_MAX ||
            dsq_varint_get(&p, end, &rank1) || rank1 > UINT32_MAX ||
            dsq_varint_get(&p, end, &src) || src > UINT32_MAX ||
            dsq_varint_get(&p, end, &len) || len > (uint64_t)(end - p))
            return 0;
        h += (uint32_t)dhost;
        p += len;
        (*count)++;
    }
    *host = h;
    *rank = (int32_t)((uint32_t)rank1 - 1u);
    *source = (uint32_t)src;
    return *count > 0;
}

unsigned char *dsq_group_put(unsigned char *out, dsq_group_prev *prev, const dsq_group_entry *e)
{
    const dsq_group_prev was = *prev;
    *prev = (dsq_group_prev){e->rec.first_t, e->host};
    if (e->raw && e->base.t == was.t && e->base.host == was.host) { /* as stored: nothing
                                                                        before it changed */
        memcpy(out, e->raw, e->raw_len);
        return out + e->raw_len;
    }
    const unsigned char *t0_at, *t0_end;
    int64_t first_t;
    if (e->raw && !summary_first_t(e->sum, e->sum_len, e->base.t, &first_t, &t0_at, &t0_end)) {
        /* its bytes against another base: the head and first_t's varint anew */
        unsigned char t0[DSQ_VARINT_MAX];
        size_t nt = (size_t)(dsq_varint_put(t0, dsq_zigzag((int64_t)((uint64_t)first_t -
                                                                     (uint64_t)was.t))) - t0);
        size_t before = (size_t)(t0_at - e->sum), after = e->sum_len - (size_t)(t0_end - e->sum);
        unsigned char *p = dsq_varint_put(out, e->host - was.host);
        p = dsq_varint_put(p, (uint32_t)e->rank + 1u);
        p = dsq_varint_put(p, e->source);
        p = dsq_varint_put(p, before + nt + after);
        memcpy(p, e->sum, before);
        memcpy(p + before, t0, nt);
        memcpy(p + before + nt, t0_end, after);
        return p + before + nt + after;
    }
    unsigned char body[DSQ_SUMMARY_MAX];
    size_t n = dsq_summary_put(body, &e->rec, was.t);
    unsigned char *p = dsq_varint_put(out, e->host - was.host);
    p = dsq_varint_put(p, (uint32_t)e->rank + 1u);
    p = dsq_varint_put(p, e->source);
    p = dsq_varint_put(p, n + e->npairs);
    memcpy(p, body, n);
    p += n;
    if (e->npairs)
        memcpy(p, e->pairs, e->npairs);
    return p + e->npairs;
}
