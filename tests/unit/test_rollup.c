/* Rollup value chunks: every (time, value) pair comes back bit for bit whatever the
 * mix of times (seconds, milliseconds, microseconds, DSQ_TIME_NONE) and values
 * (decimals, doubles printed from floats, -0, NaN, infinities, 2^53 and beyond),
 * segments start where the form changes, and a cut or damaged chunk is reported
 * as DSQ_EFORMAT or read as a prefix, never overrun. The builder writes each
 * source's series whole, its table grown or not. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"
#include "num.h"
#include "rollup.h"
#include "store.h"
#include "test.h"
#include "timeconv.h"
#include "tmpdir.h"
#include "varint.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Pair i of a stream that changes form every few hundred pairs. */
static void make_pair(int i, int64_t *t, double *v)
{
    static int64_t now = 1719847077000000;
    int phase = (i / 300) % 6;
    now += phase == 0 ? 1000000 : phase == 1 ? (int64_t)(rnd() % 40000) * 1000 : (int64_t)(rnd() % 9999999);
    *t = phase == 5 && i % 7 == 0 ? DSQ_TIME_NONE : now;
    switch ((i / 150) % 8) {
    case 0: *v = (double)(rnd() % 100000) / 100; break;                 /* 15.74 */
    case 1: *v = (double)(i % 50); break;                               /* small integers */
    case 2: *v = (double)(float)((double)(rnd() % 1000000) / 7919); break; /* float printed in full */
    case 3: *v = (double)(rnd() % 1000) / 1000000 - 0.0005; break;      /* 1e-6 steps, signs */
    case 4: *v = (double)(rnd() >> 11) * 0x1p-20; break;                /* any double */
    case 5: { /* corners */
        static const double odd[] = {0.0, -0.0, 1e300, -1e-300, 9007199254740992.0,
                                     9007199254740993.0 * 4, 123456789.123456, 4e-7};
        *v = odd[i % 8];
        if (i % 11 == 0)
            *v = i % 2 ? INFINITY : NAN;
        break;
    }
    case 6: *v = 1e6 + (double)(i % 3); break;
    default: *v = (double)(rnd() % 2000000) / 1000 - 1000; break;    /* -1000.000 .. 999.999 */
    }
}

/* Whether the k-th pair decoded (it after dsq_chunk_iter_next gave t, v) is the
 * k-th of those made (want). */
typedef int (*pair_is_fn)(const dsq_chunk_iter *it, int64_t t, double v, int k, const void *want);

/* Decodes a chunk: the iterator's error, -1000 - k at the first pair k that is not
 * as made, or the number of pairs (a prefix of the max made). */
static int decode_with(const unsigned char *data, size_t n, pair_is_fn is, const void *want,
                       int max)
{
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int r, k = 0;
    dsq_chunk_iter_init(&it, data, n);
    while ((r = dsq_chunk_iter_next(&it, &t, &v)) == 1) {
        if (k >= max || !is(&it, t, v, k, want))
            return -1000 - k;
        k++;
    }
    return r < 0 ? r : k;
}

typedef struct timed_pairs {
    const int64_t *ts;
    const double *vs;
} timed_pairs;

static int timed_pair_is(const dsq_chunk_iter *it, int64_t t, double v, int k, const void *want)
{
    const timed_pairs *w = want;
    (void)it;
    return t == w->ts[k] && same_bits(v, w->vs[k]);
}

/* Decodes a chunk of (time, value) pairs, checked against ts[] and vs[]. */
static int decode_check(const unsigned char *data, size_t n, const int64_t *ts, const double *vs,
                        int max)
{
    timed_pairs w = {ts, vs};
    return decode_with(data, n, timed_pair_is, &w, max);
}

static void test_round_trip_bit_for_bit(void)
{
    enum { N = 5000 };
    static int64_t ts[N];
    static double vs[N];
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < N; i++) {
        make_pair(i, &ts[i], &vs[i]);
        CHECK_INT(dsq_chunk_add(&c, ts[i], vs[i]), 0);
    }
    dsq_chunk_finish(&c);
    CHECK_INT(c.count, N);
    CHECK_INT(decode_check(c.buf, c.len, ts, vs, N), N);
    /* finish twice changes nothing; reset empties and keeps the buffer */
    size_t len = c.len;
    dsq_chunk_finish(&c);
    CHECK_INT(c.len, len);
    dsq_chunk_reset(&c);
    CHECK_INT(c.len, 0);
    CHECK_INT(decode_check(c.buf, 0, ts, vs, N), 0);
    CHECK_INT(dsq_chunk_add(&c, ts[7], vs[7]), 0);
    dsq_chunk_finish(&c);
    CHECK_INT(decode_check(c.buf, c.len, ts + 7, vs + 7, 1), 1);
    dsq_chunk_free(&c);
    dsq_chunk_free(&c); /* twice: a no-op */
}

/* Steady steps and decimals of one form take about two bytes a pair. */
static void test_steady_series_is_small(void)
{
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    int64_t t = 1719847077516000;
    for (int i = 0; i < 1000; i++) {
        t += 40000000 + (int64_t)(rnd() % 500) * 1000; /* 40 s, ms jitter */
        CHECK_INT(dsq_chunk_add(&c, t, 15.0 + (double)(rnd() % 100) / 100), 0);
    }
    dsq_chunk_finish(&c);
    CHECK(c.len < 4000);
    /* 16 then 15.74: the second value needs E = 2, a new segment; back to 16 fits */
    dsq_chunk_reset(&c);
    int64_t ts[3] = {1000000, 2000000, 3000000};
    double vs[3] = {16, 15.74, 16};
    for (int i = 0; i < 3; i++)
        CHECK_INT(dsq_chunk_add(&c, ts[i], vs[i]), 0);
    dsq_chunk_finish(&c);
    CHECK_INT(c.buf[0], 6 << 4 | 0);
    CHECK_INT(decode_check(c.buf, c.len, ts, vs, 3), 3);
    dsq_chunk_free(&c);
}

/* A segment holds at most 65535 pairs (its count takes two bytes): more go on. */
static void test_long_segment_splits(void)
{
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 70000; i++)
        CHECK_INT(dsq_chunk_add(&c, (int64_t)i * 1000000, 2.5), 0);
    dsq_chunk_finish(&c);
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int r, k = 0, wrong = 0;
    dsq_chunk_iter_init(&it, c.buf, c.len);
    while ((r = dsq_chunk_iter_next(&it, &t, &v)) == 1)
        wrong += t != (int64_t)k++ * 1000000 || v != 2.5;
    CHECK_INT(r, 0);
    CHECK_INT(k, 70000);
    CHECK_INT(wrong, 0);
    CHECK_INT(c.buf[1] | c.buf[2] << 8, 65535);
    dsq_chunk_free(&c);
}

/* Times without one (DSQ_TIME_NONE) and values of every kind, one pair each. */
static void test_single_pairs(void)
{
    static const double vals[] = {0, -0.0, 1, -1, 0.1, 2.5e-7, 1e22, NAN, -INFINITY, 65536};
    static const int64_t times[] = {DSQ_TIME_NONE, 0, -1, 1719847077000000, INT64_MAX};
    for (size_t a = 0; a < sizeof times / sizeof times[0]; a++)
        for (size_t b = 0; b < sizeof vals / sizeof vals[0]; b++) {
            dsq_chunk c;
            memset(&c, 0, sizeof c);
            CHECK_INT(dsq_chunk_add(&c, times[a], vals[b]), 0);
            dsq_chunk_finish(&c);
            CHECK_INT(decode_check(c.buf, c.len, &times[a], &vals[b], 1), 1);
            dsq_chunk_free(&c);
        }
}

/* --- the encoder as first written (one value's tests at a time), for the bytes -- */

typedef struct ref_chunk {
    unsigned char buf[1 << 16];
    size_t len, seg_at;
    uint32_t seg_n;
    int k, vm;
    uint64_t x, dx, m, bits, last_bits;
} ref_chunk;

static int ref_fits(double v, int vm, int64_t *m)
{
    double s = v * dsq_pow10_small[vm];
    if (!(fabs(s) < 9007199254740992.0) || (v == 0 && signbit(v)))
        return 0;
    *m = (int64_t)(s < 0 ? s - 0.5 : s + 0.5);
    return fabs(s - (double)*m) <= fabs(s) * 0x1p-50 && (double)*m / dsq_pow10_small[vm] == v;
}

static void ref_close(ref_chunk *c)
{
    if (c->seg_n) {
        c->buf[c->seg_at + 1] = (unsigned char)c->seg_n;
        c->buf[c->seg_at + 2] = (unsigned char)(c->seg_n >> 8);
    }
    c->seg_n = 0;
}

static void ref_add(ref_chunk *c, int64_t t, double v)
{
    static const int64_t q[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    int64_t m = 0;
    uint64_t vb;
    memcpy(&vb, &v, 8);
    int again = c->seg_n && c->vm < 7 && vb == c->last_bits;
    if (again)
        m = (int64_t)c->m;
    if (!c->seg_n || c->seg_n == 65535 || t % q[c->k] != 0 ||
        (c->vm < 7 && !again && !ref_fits(v, c->vm, &m))) {
        int vm = c->seg_n && c->vm < 7 ? c->vm : 0, e = dsq_num_decimal(v, &m); /* dsq_num_put's loop */
        ref_close(c);
        if (e < 0)
            vm = 7;
        else if (e >= vm || !ref_fits(v, vm, &m))
            vm = e;
        if (vm < 7)
            ref_fits(v, vm, &m);
        c->k = t % 1000000 == 0 ? 6 : t % 1000 == 0 ? 3 : 0;
        c->vm = vm;
        c->x = c->dx = c->m = c->bits = 0;
        c->seg_at = c->len;
        c->buf[c->len] = (unsigned char)(c->k << 4 | c->vm);
        c->len += 3;
    }
    unsigned char *p = c->buf + c->len;
    uint64_t x = (uint64_t)(t / q[c->k]), dx = x - c->x;
    p = dsq_varint_put(p, dsq_zigzag((int64_t)(dx - c->dx)));
    c->x = x;
    c->dx = dx;
    if (c->vm == 7) {
        int64_t dm;
        int e = dsq_num_decimal(v, &dm);
        uint64_t xb = vb ^ c->bits;
        c->bits = vb;
        if (e >= 0) {
            p = dsq_varint_put(p, dsq_zigzag(dm) << 3 | (uint64_t)e);
        } else {
            unsigned z = xb ? (unsigned)__builtin_ctzll(xb) / 8 : 8;
            *p++ = (unsigned char)(7 | z << 3);
            if (z < 8)
                p = dsq_varint_put(p, xb >> (8 * z));
        }
    } else {
        p = dsq_varint_put(p, dsq_zigzag((int64_t)((uint64_t)m - c->m)));
        c->m = (uint64_t)m;
    }
    c->len = (size_t)(p - c->buf);
    c->last_bits = vb;
    c->seg_n++;
}

/* A value of a stream whose decimal exponent wanders (so segments keep the larger
 * E and scale mantissas up), with mantissas near 2^50 and 2^53 at every E, values
 * repeated, and the odd ones. */
static double wandering_value(uint64_t r, double prev, int decimals_only)
{
    int e = (int)(r % 7);
    static const int decimal_cases[] = {0, 1, 2, 3, 4, 8};
    switch (decimals_only ? decimal_cases[(r >> 3) % 6] : (int)((r >> 3) % 9)) {
    case 0: return prev; /* the same again */
    case 1: return (double)(int64_t)((r >> 8) % 2000000 - 1000000) / dsq_pow10_small[e];
    case 2: return (double)(((int64_t)1 << 50) / (int64_t)dsq_pow10_small[6 - e] / 10 +
                            (int64_t)((r >> 8) % 100)) / dsq_pow10_small[e];
    case 3: return (double)(((int64_t)1 << (47 + (int)((r >> 8) % 7))) - (int64_t)((r >> 12) % 50)) /
                   dsq_pow10_small[e];
    case 4: return (double)(int64_t)((r >> 8) % 1000);
    case 5: return nextafter((double)(int64_t)((r >> 8) % 100000) / 100, INFINITY);
    case 6: {
        static const double odd[] = {0.0, -0.0, NAN, INFINITY, 1e-7, 9007199254740993.0, 1e300, 0.1};
        return odd[(r >> 8) % 8];
    }
    case 7: return (double)(float)((double)((r >> 8) % 1000000) / 7919);
    default: return (double)(int64_t)((r >> 8) % 100000000000000ull) / dsq_pow10_small[e];
    }
}

/* dsq_chunk_add writes the bytes of the encoder as first written (each value's
 * forms tested one by one), pair for pair, over streams that move the exponent. */
static void test_chunk_bytes_as_first_written(void)
{
    static ref_chunk ref;
    int wrong = 0;
    for (int stream = 0; stream < 600 && !wrong; stream++) {
        dsq_chunk c;
        memset(&c, 0, sizeof c);
        memset(&ref, 0, sizeof ref);
        int64_t t = 1719847077000000;
        double v = 1.5;
        int n = 1 + (int)(rnd() % 1000);
        for (int i = 0; i < n; i++) {
            uint64_t r = rnd();
            t += r % 5 == 0 ? 1000000 : r % 5 == 1 ? (int64_t)(r >> 40) % 40000 * 1000 : (int64_t)(r >> 40) % 9999999;
            v = wandering_value(rnd(), v, stream % 3 != 0); /* else E ends at 7 soon */
            int64_t tt = (r >> 20) % 97 == 0 ? DSQ_TIME_NONE : t;
            CHECK_INT(dsq_chunk_add(&c, tt, v), 0);
            ref_add(&ref, tt, v);
        }
        dsq_chunk_finish(&c);
        ref_close(&ref);
        wrong += c.len != ref.len || memcmp(c.buf, ref.buf, c.len) != 0;
        dsq_chunk_free(&c);
    }
    CHECK_INT(wrong, 0);
}


/* Values by event: (kind, event, value) of each pair made, and a decoder check. */
typedef struct ev_pair {
    uint32_t kind;
    uint64_t event;
    double v;
} ev_pair;

static int event_pair_is(const dsq_chunk_iter *it, int64_t t, double v, int k, const void *want)
{
    const ev_pair *w = (const ev_pair *)want + k;
    return it->by_event && t == DSQ_TIME_NONE && it->kind == w->kind && it->event == w->event &&
           same_bits(v, w->v);
}

/* Decodes data[0..n) as pairs by event, checked against want[] (decode_with). */
static int event_check(const unsigned char *data, size_t n, const ev_pair *want, int max)
{
    return decode_with(data, n, event_pair_is, want, max);
}

/* A run of events (one kind, one after another) takes its values' bytes and a
 * header; after a gap (an event without the field) every value names its event,
 * up to three kinds taking turns in a segment and a fourth opening the next; all
 * come back bit for bit, and every cut or flipped byte is refused or read short,
 * never past the end. */
static void test_values_by_event_round_trip(void)
{
    enum { N = 3000 };
    static ev_pair p[N];
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    uint64_t next[5] = {0};
    for (int i = 0; i < N; i++) {
        uint32_t kind = i < 1000 ? 4 : (uint32_t)(rnd() % (i < 2000 ? 3 : 5));
        uint64_t skip = i == 1000 ? 0 : i > 1000 ? rnd() % 3 : 0;
        next[kind] += skip;
        p[i] = (ev_pair){kind, next[kind]++, (double)(rnd() % 100000) / 100};
        CHECK_INT(dsq_chunk_add_event(&c, p[i].kind, p[i].event, p[i].v), 0);
        if (i == 999) { /* the run so far: a header, then the values alone (E 2: up to 3 bytes) */
            CHECK(c.len < 1000 * 3 + 16);
            CHECK_INT(c.runs_end, 0);
        }
    }
    dsq_chunk_finish(&c);
    CHECK_INT(c.runs_end, 1);
    CHECK_INT(event_check(c.buf, c.len, p, N), N);
    int wrong = 0;
    for (size_t len = 0; len < c.len; len += 7) {
        unsigned char *cut = malloc(len ? len : 1); /* exact size: ASan sees any overrun */
        memcpy(cut, c.buf, len);
        int r = event_check(cut, len, p, N);
        wrong += r != DSQ_EFORMAT && (r < 0 || r >= N);
        free(cut);
    }
    CHECK_INT(wrong, 0);
    for (int i = 0; i < 2000; i++) {
        unsigned char *bad = malloc(c.len);
        memcpy(bad, c.buf, c.len);
        bad[rnd() % c.len] ^= (unsigned char)(1u << (rnd() % 8));
        event_check(bad, c.len, p, N); /* any answer but a crash or an overrun */
        free(bad);
    }
    dsq_chunk_free(&c);
}

static void test_cut_or_damaged_never_overruns(void)
{
    enum { N = 700 };
    static int64_t ts[N];
    static double vs[N];
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < N; i++) {
        make_pair(i * 3, &ts[i], &vs[i]);
        dsq_chunk_add(&c, ts[i], vs[i]);
    }
    dsq_chunk_finish(&c);
    int wrong = 0;
    for (size_t len = 0; len < c.len; len++) {
        unsigned char *cut = malloc(len ? len : 1); /* exact size: ASan sees any overrun */
        memcpy(cut, c.buf, len);
        int r = decode_check(cut, len, ts, vs, N);
        wrong += r != DSQ_EFORMAT && (r < 0 || r >= N); /* an error or a true prefix */
        free(cut);
    }
    CHECK_INT(wrong, 0);
    /* flipped bytes: any answer but a crash or an overrun (ASan, UBSan) */
    for (int i = 0; i < 2000; i++) {
        unsigned char *bad = malloc(c.len);
        memcpy(bad, c.buf, c.len);
        bad[rnd() % c.len] ^= (unsigned char)(1u << (rnd() % 8));
        dsq_chunk_iter it;
        int64_t t;
        double v;
        dsq_chunk_iter_init(&it, bad, c.len);
        while (dsq_chunk_iter_next(&it, &t, &v) == 1)
            ;
        free(bad);
    }
    /* a bad header: time scale past 10^6 (not by event), form past 8 (no values), no
     * pairs, by event without values, by event without its kind */
    static const unsigned char h1[] = {7 << 4, 1, 0, 0, 0}, h2[] = {9, 1, 0, 0, 0}, h3[] = {0, 0, 0},
                               h4[] = {15 << 4 | 8, 1, 0, 1, 0, 0}, h5[] = {15 << 4, 1, 0};
    int64_t t;
    double v;
    dsq_chunk_iter it;
    dsq_chunk_iter_init(&it, h1, sizeof h1);
    CHECK_INT(dsq_chunk_iter_next(&it, &t, &v), DSQ_EFORMAT);
    dsq_chunk_iter_init(&it, h2, sizeof h2);
    CHECK_INT(dsq_chunk_iter_next(&it, &t, &v), DSQ_EFORMAT);
    dsq_chunk_iter_init(&it, h3, sizeof h3);
    CHECK_INT(dsq_chunk_iter_next(&it, &t, &v), DSQ_EFORMAT);
    dsq_chunk_iter_init(&it, h4, sizeof h4);
    CHECK_INT(dsq_chunk_iter_next(&it, &t, &v), DSQ_EFORMAT);
    dsq_chunk_iter_init(&it, h5, sizeof h5);
    CHECK_INT(dsq_chunk_iter_next(&it, &t, &v), DSQ_EFORMAT);
    dsq_chunk_free(&c);
}

#define NFIELDS 300
#define T0 1719847077000000LL

typedef struct seen {
    dsq_store *st;
    int series[3];      /* field series per source */
    int bad;            /* a count or pair not as written */
} seen;

typedef struct want {
    seen *s;
    int k;              /* field f<k> of source 1; -1: source 2's */
    int n;
} want;

static int check_pairs(void *ctx, const int64_t *t, const double *v, size_t n)
{
    want *w = ctx;
    for (size_t j = 0; j < n; j++) {
        int i = w->k < 0 ? 1000 + w->n : w->k + NFIELDS * w->n; /* the event that made it */
        w->s->bad += t[j] != T0 + (int64_t)i * 1000000 || v[j] != i * 0.5;
        w->n++;
    }
    return 0;
}

static int on_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    seen *s = ctx;
    if (k->field >= DSQ_SERIES_KIND_BASE || k->source < 1 || k->source > 2)
        return 0;
    s->series[k->source]++;
    const char *name = dsq_dict_str(dsq_store_dict(s->st), k->field, NULL);
    want w = {s, k->source == 2 ? -1 : atoi(name + 1), 0};
    s->bad += (int)rec->count != (k->source == 2 ? 3 : 2);
    dsq_error err;
    dsq_error_clear(&err);
    dsq_pairs *pr = NULL;
    if (dsq_pairs_new(&pr))
        return DSQ_ENOMEM;
    int rc = dsq_pairs_scan(pr, s->st, k, rec, 1, check_pairs, &w, &err);
    dsq_pairs_free(pr);
    s->bad += w.n != (int)rec->count;
    return rc;
}

/* A source of 300 series grows the builder's table several times while they are
 * open; the next source, of one series, writes only its own; every series comes
 * back with its count and its pairs. */
static void test_builder_grows_then_writes_only_its_own(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_store_params p = {tmp, 0, 0};
    dsq_store *st = NULL;
    dsq_rollup *r = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    if (!st)
        goto done;
    CHECK_INT(dsq_rollup_new(st, &r), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    dsq_dict *d = dsq_store_dict(st);
    uint32_t run = dsq_dict_intern(d, "run", 3), host = dsq_dict_intern(d, "gpu1", 4);
    for (int src = 1; src <= 2; src++) {
        dsq_rollup_begin(r, run, (uint32_t)src);
        for (int i = src == 1 ? 0 : 1000; i < (src == 1 ? 2 * NFIELDS : 1003); i++) {
            char name[16];
            int n = snprintf(name, sizeof name, "f%d", src == 1 ? i % NFIELDS : 0);
            dsq_event ev = {.kind = DSQ_EV_METRIC_LOGGER, .t_us = T0 + (int64_t)i * 1000000,
                            .host = host, .rank = 0, .nf = 1};
            ev.f[0] = (dsq_field){dsq_dict_intern(d, name, (size_t)n), DSQ_U_NONE, i * 0.5};
            CHECK_INT(dsq_rollup_add(r, &ev, &err), 0);
        }
        CHECK_INT(dsq_rollup_finish(r, &err), 0);
    }
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_rollup_free(r);
    dsq_store_close(st);
    p.readonly = 1;
    st = NULL;
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    if (!st)
        goto done;
    seen s = {.st = st};
    CHECK_INT(dsq_store_scan_series(st, 1, DSQ_SERIES_KIND_BASE - 1, 0, on_series, &s, &err), 0);
    CHECK_INT(s.series[1], NFIELDS);
    CHECK_INT(s.series[2], 1);
    CHECK_INT(s.bad, 0);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

/* A store in a fresh directory, a rollup builder on it and an open write. */
typedef struct builder_fx {
    char tmp[64];
    dsq_store *st;
    dsq_rollup *r;
    dsq_dict *d;
    dsq_error err;
} builder_fx;

static int builder_open(builder_fx *fx)
{
    fx->tmp[0] = 0;
    fx->st = NULL;
    fx->r = NULL;
    dsq_error_clear(&fx->err);
    CHECK_INT(test_tmpdir_new(fx->tmp), 0);
    dsq_store_params p = {fx->tmp, 0, 0};
    CHECK_INT(dsq_store_open(&p, &fx->st, &fx->err), 0);
    if (!fx->st)
        return -1;
    CHECK_INT(dsq_rollup_new(fx->st, &fx->r), 0);
    CHECK_INT(dsq_store_begin(fx->st, &fx->err), 0);
    fx->d = dsq_store_dict(fx->st);
    return 0;
}

static void builder_close(builder_fx *fx)
{
    if (fx->r)
        dsq_rollup_free(fx->r);
    if (fx->st)
        dsq_store_close(fx->st);
    test_tmpdir_remove(fx->tmp);
}

typedef struct many_seen {
    dsq_store *st;
    int series[4]; /* field series per source */
    int bad;       /* a count or sum not as written */
} many_seen;

static int on_many(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    many_seen *s = ctx;
    if (k->field >= DSQ_SERIES_KIND_BASE || k->source < 1 || k->source > 3)
        return 0;
    s->series[k->source]++;
    int i = atoi(dsq_dict_str(dsq_store_dict(s->st), k->field, NULL) + 1);
    s->bad += rec->count != 3 || rec->sum != 3.0 * i + 0.75 || rec->last_v != i + 0.5;
    return 0;
}

/* A source of many series (past 8,192) lets go of the builder's table and chunk
 * buffers at its end (dsq_rollup_trim); one of few keeps them. The next source is
 * written as usual (under ASan, a pointer left into the table let go of fails). */
static void test_builder_lets_go_after_many_series(void)
{
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), host = dsq_dict_intern(fx.d, "gpu1", 4);
    static const int fields[] = {100, 9000, 3};
    size_t held[3] = {0}, after[3] = {0};
    for (int src = 1; src <= 3; src++) {
        dsq_rollup_begin(fx.r, run, (uint32_t)src);
        for (int i = 0; i < fields[src - 1]; i++)
            for (int v = 0; v < 3; v++) {
                char name[16];
                int n = snprintf(name, sizeof name, "g%d", i);
                dsq_event ev = {.kind = DSQ_EV_METRIC_LOGGER, .t_us = T0 + (int64_t)v * 1000000,
                                .host = host, .rank = 0, .nf = 1};
                ev.f[0] = (dsq_field){dsq_dict_intern(fx.d, name, (size_t)n), DSQ_U_NONE, i + v * 0.25};
                CHECK_INT(dsq_rollup_add(fx.r, &ev, &fx.err), 0);
            }
        CHECK_INT(dsq_rollup_finish(fx.r, &fx.err), 0);
        held[src - 1] = dsq_rollup_held(fx.r);
        dsq_rollup_trim(fx.r);
        after[src - 1] = dsq_rollup_held(fx.r);
    }
    CHECK(after[0] == held[0]);                          /* few: kept */
    CHECK(held[1] > 9000 * 200 && after[1] < 64 * 1024); /* many: let go of */
    CHECK(after[2] == held[2]);
    CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
    many_seen s = {.st = fx.st};
    CHECK_INT(dsq_store_scan_series(fx.st, 1, DSQ_SERIES_KIND_BASE - 1, 0, on_many, &s, &fx.err), 0);
    CHECK_INT(s.series[1], 100);
    CHECK_INT(s.series[2], 9000);
    CHECK_INT(s.series[3], 3);
    CHECK_INT(s.bad, 0);
    builder_close(&fx);
}

typedef struct field_sum {
    uint32_t field;
    uint64_t count;
    double sum;
} field_sum;

static int on_field_sum(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    field_sum *f = ctx;
    if (k->field == f->field) {
        f->count += rec->count;
        f->sum += rec->sum;
    }
    return 0;
}

/* Events of one form (fields a, bN, c) where each bN is a new series: the table
 * grows while an event is half added, and its last field (found through the memo
 * of the event before) still lands in the moved table: c counts every event. (A
 * memo left pointing into the old table reads freed memory: the ASan build fails.) */
static void test_builder_grows_in_the_middle_of_an_event(void)
{
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), host = dsq_dict_intern(fx.d, "gpu1", 4);
    uint32_t a = dsq_dict_intern(fx.d, "a", 1), c = dsq_dict_intern(fx.d, "c", 1);
    enum { N = 700 };
    dsq_rollup_begin(fx.r, run, 1);
    for (int i = 0; i < N; i++) {
        char name[16];
        int n = snprintf(name, sizeof name, "b%d", i);
        dsq_event ev = {.kind = DSQ_EV_METRIC_LOGGER, .t_us = T0 + (int64_t)i * 1000000,
                        .host = host, .rank = 0, .nf = 3};
        ev.f[0] = (dsq_field){a, DSQ_U_NONE, 1};
        ev.f[1] = (dsq_field){dsq_dict_intern(fx.d, name, (size_t)n), DSQ_U_NONE, 2};
        ev.f[2] = (dsq_field){c, DSQ_U_NONE, i};
        CHECK_INT(dsq_rollup_add(fx.r, &ev, &fx.err), 0);
    }
    CHECK_INT(dsq_rollup_finish(fx.r, &fx.err), 0);
    CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
    field_sum fs = {c, 0, 0};
    CHECK_INT(dsq_store_scan_series(fx.st, 1, DSQ_SERIES_KIND_BASE - 1, 0, on_field_sum, &fs,
                                    &fx.err),
              0);
    CHECK_INT(fs.count, N);
    CHECK(fs.sum == (double)N * (N - 1) / 2);
    builder_close(&fx);
}

typedef struct count_check {
    uint32_t field;
    int series, bad;
} count_check;

static int on_count_one(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    count_check *cc = ctx;
    if (k->field == cc->field) {
        cc->series++;
        cc->bad += rec->count != 1;
    }
    return 0;
}

/* Sources of 20 hosts each, then host h0, all with one value of field F: h0's memo
 * from the source before points into the table the next source refills (20 new
 * hosts' series of F take its slots), so a memo kept across sources would add h0's
 * value to another host's series. Every (source, host) has its own series of one. */
static void test_builder_forgets_memos_between_sources(void)
{
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), f = dsq_dict_intern(fx.d, "F", 1);
    enum { SOURCES = 30, HOSTS = 20 };
    for (int src = 1; src <= SOURCES; src++) {
        dsq_rollup_begin(fx.r, run, (uint32_t)src);
        for (int h = 0; h <= HOSTS; h++) {
            char name[16];
            int n = h == HOSTS ? snprintf(name, sizeof name, "h0")
                               : snprintf(name, sizeof name, "s%dh%d", src, h + 1);
            dsq_event ev = {.kind = DSQ_EV_METRIC_LOGGER, .t_us = T0,
                            .host = dsq_dict_intern(fx.d, name, (size_t)n), .rank = 0, .nf = 1};
            ev.f[0] = (dsq_field){f, DSQ_U_NONE, h};
            CHECK_INT(dsq_rollup_add(fx.r, &ev, &fx.err), 0);
        }
        CHECK_INT(dsq_rollup_finish(fx.r, &fx.err), 0);
    }
    CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
    count_check cc = {f, 0, 0};
    CHECK_INT(dsq_store_scan_series(fx.st, 1, DSQ_SERIES_KIND_BASE - 1, 0, on_count_one, &cc,
                                    &fx.err),
              0);
    CHECK_INT(cc.series, SOURCES * (HOSTS + 1));
    CHECK_INT(cc.bad, 0);
    builder_close(&fx);
}

/* What a series' pairs should be: (t, v) of each value, in order. */
typedef struct expect {
    int64_t t[3][40000];
    double v[3][40000];
    int n[3];
} expect;

typedef struct got_pairs {
    const expect *e;
    int f, n, bad;
    int by_event_none; /* with_times 0: values that came without their time */
} got_pairs;

static int on_got(void *ctx, const int64_t *t, const double *v, size_t n)
{
    got_pairs *g = ctx;
    for (size_t j = 0; j < n; j++, g->n++) {
        if (g->n >= g->e->n[g->f]) {
            g->bad++;
            continue;
        }
        g->bad += memcmp(&v[j], &g->e->v[g->f][g->n], 8) != 0;
        if (t[j] == DSQ_TIME_NONE && g->e->t[g->f][g->n] != DSQ_TIME_NONE)
            g->by_event_none++;
        else
            g->bad += t[j] != g->e->t[g->f][g->n];
    }
    return 0;
}

typedef struct pairs_check {
    dsq_store *st;
    uint32_t field[3];
    const expect *e;
    int with_times;
    got_pairs got[3];
    int status;
} pairs_check;

static int on_check_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    pairs_check *pc = ctx;
    for (int f = 0; f < 3; f++) {
        if (k->field != pc->field[f])
            continue;
        dsq_pairs *pr = NULL;
        dsq_error err;
        dsq_error_clear(&err);
        if (dsq_pairs_new(&pr))
            return DSQ_ENOMEM;
        pc->got[f] = (got_pairs){pc->e, f, 0, 0, 0};
        pc->status |= dsq_pairs_scan(pr, pc->st, k, rec, pc->with_times, on_got, &pc->got[f], &err);
        dsq_pairs_free(pr);
    }
    return 0;
}

/* Fields a, b and c of DeepSpeed step events (b in every one: runs of events; a in
 * most, c in every third,
 * times irregular to the millisecond, some events without a time), and a also in
 * memory events now and then (two kinds in its segments); a checkpoint (an
 * intermediate commit) in the middle and enough events for the kinds' times to
 * fill chunks. Every value comes back with its own time, bit for bit; read
 * without times, they come without theirs (kept once, with their kind). */
static void test_values_name_their_event_times_kept_once(void)
{
    static expect e;
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), host = dsq_dict_intern(fx.d, "gpu1", 4);
    uint32_t fa = dsq_dict_intern(fx.d, "a", 1), fb = dsq_dict_intern(fx.d, "b", 1),
             fc = dsq_dict_intern(fx.d, "c", 1);
    memset(&e, 0, sizeof e);
    int64_t now = T0;
    int from_memory = 0;
    dsq_rollup_begin(fx.r, run, 1);
    for (int i = 0; i < 36000; i++) {
        now += 1000 + (int64_t)(rnd() % 5000) * 1000;
        dsq_event ev = {.kind = DSQ_EV_DS_STEP, .t_us = i % 97 == 5 ? DSQ_TIME_NONE : now,
                        .host = host, .rank = 3};
        double x = (double)(rnd() % 100000) / 1000;
        if (i % 50 == 7) { /* a memory event: a's value with its own time */
            ev.kind = DSQ_EV_MEMORY;
            from_memory++;
        }
        if (i % 3 != 2 || ev.kind == DSQ_EV_MEMORY)
            ev.f[ev.nf++] = (dsq_field){fa, DSQ_U_NONE, x};
        if (ev.kind != DSQ_EV_MEMORY)
            ev.f[ev.nf++] = (dsq_field){fb, DSQ_U_NONE, x * 2};
        if (i % 3 == 2 && ev.kind != DSQ_EV_MEMORY)
            ev.f[ev.nf++] = (dsq_field){fc, DSQ_U_NONE, (double)i};
        for (int j = 0; j < ev.nf; j++) {
            int f = ev.f[j].name == fa ? 0 : ev.f[j].name == fb ? 1 : 2;
            e.t[f][e.n[f]] = ev.t_us;
            e.v[f][e.n[f]++] = ev.f[j].v;
        }
        CHECK_INT(dsq_rollup_add(fx.r, &ev, &fx.err), 0);
        if (i == 20000 || i == 30000) /* a checkpoint, then a whole one */
            CHECK_INT(dsq_rollup_checkpoint(fx.r, i == 30000, &fx.err), 0);
    }
    CHECK_INT(dsq_rollup_finish(fx.r, &fx.err), 0);
    CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
    for (int with_times = 1; with_times >= 0; with_times--) {
        pairs_check pc = {fx.st, {fa, fb, fc}, &e, with_times, {{0}}, 0};
        CHECK_INT(dsq_store_scan_series(fx.st, 1, DSQ_SERIES_KIND_BASE - 1, 0, on_check_series, &pc,
                                        &fx.err),
                  0);
        CHECK_INT(pc.status, 0);
        for (int f = 0; f < 3; f++) {
            CHECK_INT(pc.got[f].n, e.n[f]);
            CHECK_INT(pc.got[f].bad, 0);
        }
        if (with_times) {
            for (int f = 0; f < 3; f++)
                CHECK_INT(pc.got[f].by_event_none, 0);
        } else { /* every value that has a time comes without it */
            for (int f = 0; f < 3; f++) {
                int timed = 0;
                for (int j = 0; j < e.n[f]; j++)
                    timed += e.t[f][j] != DSQ_TIME_NONE;
                CHECK_INT(pc.got[f].by_event_none, timed);
            }
        }
    }
    CHECK(from_memory > 0);
    builder_close(&fx);
}

/* A checkpoint that is not whole writes only the series that have chunks, and
 * the times their values name: committed, every value has its time (here a field
 * of wide values filled chunks while its kind's steady times stayed few bytes,
 * kept open). The finished source has them all. */
static void test_checkpoint_leaves_values_with_their_times(void)
{
    static expect e;
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), host = dsq_dict_intern(fx.d, "gpu1", 4);
    uint32_t fa = dsq_dict_intern(fx.d, "a", 1);
    memset(&e, 0, sizeof e);
    dsq_rollup_begin(fx.r, run, 1);
    for (int stage = 0; stage < 2; stage++) {
        for (int i = 0; i < 6000; i++) {
            dsq_event ev = {.kind = DSQ_EV_DS_STEP, .t_us = T0 + (int64_t)e.n[0] * 1000000,
                            .host = host, .rank = 0, .nf = 1};
            ev.f[0] = (dsq_field){fa, DSQ_U_NONE, (double)(rnd() >> 11) / 7.0};
            e.t[0][e.n[0]] = ev.t_us;
            e.v[0][e.n[0]++] = ev.f[0].v;
            CHECK_INT(dsq_rollup_add(fx.r, &ev, &fx.err), 0);
        }
        if (stage == 0)
            CHECK_INT(dsq_rollup_checkpoint(fx.r, 0, &fx.err), 0);
        else
            CHECK_INT(dsq_rollup_finish(fx.r, &fx.err), 0);
        CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
        pairs_check pc = {fx.st, {fa, 0, 0}, &e, 1, {{0}}, 0};
        CHECK_INT(dsq_store_scan_series(fx.st, 1, DSQ_SERIES_KIND_BASE - 1, 0, on_check_series, &pc,
                                        &fx.err),
                  0);
        CHECK_INT(pc.status, 0);
        CHECK_INT(pc.got[0].n, e.n[0]);
        CHECK_INT(pc.got[0].bad, 0);
        CHECK_INT(dsq_store_begin(fx.st, &fx.err), 0);
    }
    dsq_store_abort(fx.st);
    builder_close(&fx);
}

static int on_nothing(void *ctx, const int64_t *t, const double *v, size_t n)
{
    (void)t;
    (void)v;
    *(size_t *)ctx += n;
    return 0;
}

/* A series whose values name events its kind has no times for (a damaged index):
 * read with times, the scan says the chunk is damaged, naming the source; read
 * without times, its values still come. */
static void test_event_without_its_time_is_damage(void)
{
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), host = dsq_dict_intern(fx.d, "gpu1", 4);
    uint32_t fa = dsq_dict_intern(fx.d, "a", 1);
    /* two pairs by event of kind DS_STEP: events 0 (its kind brought in: slot 3)
     * and 5 (step 5 in slot 0), values 1 and 2 (E 0) */
    static const unsigned char pairs[] = {15 << 4, 2, 0, 3, DSQ_EV_DS_STEP, 2, 10 << 2, 2};
    dsq_series_key k = {fa, run, host, 0, 9};
    dsq_series_rec rec = {.count = 2, .sum = 3, .min = 1, .max = 2, .first_v = 1, .last_v = 2,
                          .first_t = T0, .last_t = T0 + 5};
    CHECK_INT(dsq_store_series_put(fx.st, &k, &rec, pairs, sizeof pairs, &fx.err), 0);
    /* the kind's times: only one event's */
    dsq_series_key kk = {DSQ_SERIES_TIMES_BASE + DSQ_EV_DS_STEP, run, host, 0, 9};
    dsq_series_rec krec = {.count = 1, .first_t = T0, .last_t = T0};
    static const unsigned char one_time[] = {6 << 4 | 8, 1, 0, 0x80, 0x80, 0x01}; /* 8192 s */
    CHECK_INT(dsq_store_series_put(fx.st, &kk, &krec, one_time, sizeof one_time, &fx.err), 0);
    /* and a series of event 0 alone, whose time is there */
    static const unsigned char pairs0[] = {15 << 4, 1, 0, 3, DSQ_EV_DS_STEP, 2};
    dsq_series_key k0 = {fa, run, host, 0, 10}, kk0 = kk;
    kk0.source = 10;
    dsq_series_rec rec0 = rec;
    rec0.count = 1;
    CHECK_INT(dsq_store_series_put(fx.st, &k0, &rec0, pairs0, sizeof pairs0, &fx.err), 0);
    CHECK_INT(dsq_store_series_put(fx.st, &kk0, &krec, one_time, sizeof one_time, &fx.err), 0);
    CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
    dsq_pairs *pr = NULL;
    CHECK_INT(dsq_pairs_new(&pr), 0);
    size_t n = 0;
    dsq_error err;
    dsq_error_clear(&err);
    static expect e0; /* big: not on the stack */
    e0.n[0] = 1;
    e0.t[0][0] = 8192000000;
    e0.v[0][0] = 1;
    got_pairs g = {&e0, 0, 0, 0, 0};
    CHECK_INT(dsq_pairs_scan(pr, fx.st, &k0, &rec0, 1, on_got, &g, &err), 0);
    CHECK_INT(g.n, 1);
    CHECK_INT(g.bad, 0);
    CHECK_INT(dsq_pairs_scan(pr, fx.st, &k, &rec, 1, on_nothing, &n, &err), DSQ_EINDEX);
    CHECK(strstr(err.msg, "damaged rollup chunk (source 9)") != NULL);
    n = 0;
    dsq_error_clear(&err);
    CHECK_INT(dsq_pairs_scan(pr, fx.st, &k, &rec, 0, on_nothing, &n, &err), 0);
    CHECK_INT(n, 2);
    dsq_pairs_free(pr);
    builder_close(&fx);
}

static int on_times_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    int *per_source = ctx;
    if (k->source >= 1 && k->source <= 2 && k->field == DSQ_SERIES_TIMES_BASE + DSQ_EV_DS_STEP)
        per_source[k->source] += (int)rec->count;
    return 0;
}

/* A kind's times are kept where values kept in pairs need them: a source with one
 * step event (each field's one value has its time in its summary) keeps none, a
 * source with two keeps both times. */
static void test_times_only_where_values_need_them(void)
{
    builder_fx fx;
    if (builder_open(&fx) != 0) {
        builder_close(&fx);
        return;
    }
    uint32_t run = dsq_dict_intern(fx.d, "run", 3), host = dsq_dict_intern(fx.d, "gpu1", 4);
    uint32_t fa = dsq_dict_intern(fx.d, "a", 1);
    for (int src = 1; src <= 2; src++) {
        dsq_rollup_begin(fx.r, run, (uint32_t)src);
        for (int i = 0; i < src; i++) {
            dsq_event ev = {.kind = DSQ_EV_DS_STEP, .t_us = T0 + i, .host = host, .rank = 0, .nf = 1};
            ev.f[0] = (dsq_field){fa, DSQ_U_NONE, i};
            CHECK_INT(dsq_rollup_add(fx.r, &ev, &fx.err), 0);
        }
        CHECK_INT(dsq_rollup_finish(fx.r, &fx.err), 0);
    }
    CHECK_INT(dsq_store_commit(fx.st, &fx.err), 0);
    int per_source[3] = {0};
    CHECK_INT(dsq_store_scan_series(fx.st, DSQ_SERIES_TIMES_BASE,
                                    DSQ_SERIES_TIMES_BASE + DSQ_EV_KIND_COUNT, 0, on_times_series,
                                    per_source, &fx.err),
              0);
    CHECK_INT(per_source[1], 0);
    CHECK_INT(per_source[2], 2);
    builder_close(&fx);
}

TEST_MAIN(T(test_values_name_their_event_times_kept_once), T(test_checkpoint_leaves_values_with_their_times), T(test_times_only_where_values_need_them), T(test_values_by_event_round_trip), T(test_event_without_its_time_is_damage),
          T(test_round_trip_bit_for_bit), T(test_builder_forgets_memos_between_sources), T(test_builder_grows_in_the_middle_of_an_event), T(test_chunk_bytes_as_first_written), T(test_steady_series_is_small), T(test_long_segment_splits),
          T(test_single_pairs),
          T(test_cut_or_damaged_never_overruns), T(test_builder_grows_then_writes_only_its_own),
          T(test_builder_lets_go_after_many_series))
