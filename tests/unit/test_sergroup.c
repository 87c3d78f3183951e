/* Series summaries packed, and groups of them (sergroup.h): every summary comes
 * back bit for bit whatever its times and the base they are coded from; an entry
 * copied as stored is the same bytes as one packed anew; damaged bytes end a group
 * with -1, never a read past its end. */
#include <math.h>
#include <stdlib.h>

#include "sergroup.h"
#include "test.h"
#include "timeconv.h"

static const int64_t times[] = {DSQ_TIME_NONE, INT64_MIN, INT64_MAX, -1, 0, 1,
                                1719835200000000, 1719835200000001, -5};

static dsq_series_rec rec_of(int i)
{
    dsq_series_rec r = {.count = (uint64_t)i * 977 + 1, .sum = 0.1 * i, .min = -0.0,
                        .max = i % 3 ? 1e300 : NAN, .first_v = 0.1 * i, .last_v = 4e-7,
                        .unit = (uint8_t)(i % 5), .nchunks = (uint32_t)(i % 2)};
    size_t n = sizeof times / sizeof times[0];
    r.first_t = times[(size_t)i % n];
    r.last_t = times[(size_t)(i * 7 + 3) % n];
    return r;
}

/* A summary against any base, the base any time: the wrapped differences undo. */
static void test_summary_round_trip_any_base(void)
{
    size_t n = sizeof times / sizeof times[0];
    for (int i = 0; i < 40; i++)
        for (size_t b = 0; b < n; b++) {
            dsq_series_rec r = rec_of(i), got;
            unsigned char buf[DSQ_SUMMARY_MAX + 3];
            size_t len = dsq_summary_put(buf, &r, times[b]);
            CHECK(len <= DSQ_SUMMARY_MAX);
            const unsigned char *pairs = NULL;
            size_t np = 99;
            CHECK_INT(dsq_summary_get(buf, len, times[b], &got, &pairs, &np), 0);
            CHECK(dsq_summary_same(&got, &r));
            CHECK(pairs == buf + len && np == 0);
            /* pairs follow a series without chunks, and (schema 11) the few after
             * the last chunk of one with chunks */
            memcpy(buf + len, "abc", 3);
            CHECK_INT(dsq_summary_get(buf, len + 3, times[b], &got, &pairs, &np), 0);
            CHECK(pairs == buf + len && np == 3);
            CHECK(dsq_summary_same(&got, &r));
        }
}

/* Entries packed one after another (times jumping both ways), read back in order
 * with their ranks, sources and pairs; then the group written again from what was
 * read (copied as stored) is the same bytes, and so is one with every entry
 * packed anew. */
static void test_group_round_trip_and_copy(void)
{
    enum { N = 30 };
    unsigned char *g = malloc(N * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX + 8));
    unsigned char *g2 = malloc(N * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX + 8));
    unsigned char *g3 = malloc(N * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX + 8));
    if (!g || !g2 || !g3)
        goto done;
    dsq_group_entry in[N];
    unsigned char *o = g;
    dsq_group_prev prev = {0, 0};
    for (int i = 0; i < N; i++) {
        /* hosts mostly in order, as groups keep them, but also back and far */
        uint32_t host = i == 5 ? UINT32_MAX : i == 6 ? 0 : (uint32_t)(i / 4 + 1);
        in[i] = (dsq_group_entry){.host = host,
                                  .rank = i == 0 ? -1 : i == 1 ? INT32_MAX - 1 : i % 9,
                                  .source = i == 2 ? UINT32_MAX : (uint32_t)(i * 131),
                                  .rec = rec_of(i)};
        in[i].pairs = (const unsigned char *)"\x01\x02\x03\x04\x05\x06\x07";
        in[i].npairs = (size_t)(i % 8); /* chunked or not (schema 11) */
        o = dsq_group_put(o, &prev, &in[i]);
    }
    size_t len = (size_t)(o - g);
    dsq_group_iter it;
    dsq_group_entry e;
    unsigned char *o2 = g2, *o3 = g3;
    dsq_group_prev p2 = {0, 0}, p3 = {0, 0};
    int n = 0;
    dsq_group_iter_init(&it, g, len);
    while (dsq_group_next(&it, &e) == 1) {
        if (n < N) {
            CHECK_INT(e.host, in[n].host);
            CHECK_INT(e.rank, in[n].rank);
            CHECK_INT(e.source, in[n].source);
            CHECK(dsq_summary_same(&e.rec, &in[n].rec));
            CHECK_INT(e.npairs, in[n].npairs);
            CHECK(e.npairs == 0 || memcmp(e.pairs, in[n].pairs, e.npairs) == 0);
        }
        o2 = dsq_group_put(o2, &p2, &e); /* copied */
        e.raw = NULL;
        o3 = dsq_group_put(o3, &p3, &e); /* packed anew */
        n++;
    }
    CHECK_INT(n, N);
    CHECK_INT((size_t)(o2 - g2), len);
    CHECK_INT((size_t)(o3 - g3), len);
    CHECK(memcmp(g2, g, len) == 0);
    CHECK(memcmp(g3, g, len) == 0);
    /* an entry left out: the next one is packed against the one before it */
    dsq_group_iter_init(&it, g, len);
    o2 = g2;
    p2 = (dsq_group_prev){0, 0};
    for (int i = 0; dsq_group_next(&it, &e) == 1; i++)
        if (i != 4)
            o2 = dsq_group_put(o2, &p2, &e);
    dsq_group_iter_init(&it, g2, (size_t)(o2 - g2));
    n = 0;
    while (dsq_group_next(&it, &e) == 1) {
        int want = n < 4 ? n : n + 1;
        CHECK(dsq_summary_same(&e.rec, &in[want].rec));
        CHECK_INT(e.source, in[want].source);
        CHECK_INT(e.host, in[want].host);
        n++;
    }
    CHECK_INT(n, N - 1);
done:
    free(g);
    free(g2);
    free(g3);
}

/* A group cut at every length, or with any byte changed, gives its entries up to
 * the damage and then -1 (or fewer, consistent entries), reading only its bytes
 * (ASan: each copy is its own allocation of exactly that length). */
static void test_group_damage_stops_inside(void)
{
    unsigned char g[6 * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX + 8)];
    unsigned char *o = g;
    dsq_group_prev prev = {0, 0};
    for (int i = 0; i < 6; i++) {
        dsq_group_entry e = {.host = (uint32_t)i / 2 + 7, .rank = i, .source = (uint32_t)i + 1, .rec = rec_of(i + 3)};
        e.pairs = (const unsigned char *)"xyz";
        e.npairs = 3;
        o = dsq_group_put(o, &prev, &e);
    }
    size_t len = (size_t)(o - g);
    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *c = malloc(cut ? cut : 1);
        if (!c)
            return;
        memcpy(c, g, cut);
        dsq_group_iter it;
        dsq_group_entry e;
        int r, n = 0;
        dsq_group_iter_init(&it, c, cut);
        while ((r = dsq_group_next(&it, &e)) == 1)
            n++;
        CHECK(n < 6);
        CHECK(r == -1 || (r == 0 && n >= 0));
        CHECK_INT(dsq_group_next(&it, &e), 0); /* after damage: the end */
        free(c);
    }
    for (size_t at = 0; at < len; at++) {
        unsigned char *c = malloc(len);
        if (!c)
            return;
        memcpy(c, g, len);
        c[at] ^= 0xFF;
        dsq_group_iter it;
        dsq_group_entry e;
        int n = 0;
        dsq_group_iter_init(&it, c, len);
        while (dsq_group_next(&it, &e) == 1 && n < 100)
            n++;
        CHECK(n < 100); /* each entry takes bytes: the walk ends */
        free(c);
    }
}

/* Skimming a group (dsq_group_skim) finds the keys, bases and bytes that reading it
 * whole finds, and the same summary when asked (dsq_group_entry_rec); skimmed
 * entries put back with any of them left out (each one after rebased from its
 * bytes: head and first_t anew) give the bytes that entries read whole and packed
 * anew give. */
static void test_group_skim_same_as_next(void)
{
    enum { N = 24 };
    size_t room = N * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX + 8);
    unsigned char *g = malloc(room), *a = malloc(room), *b = malloc(room);
    if (!g || !a || !b)
        goto done;
    unsigned char *o = g;
    dsq_group_prev prev = {0, 0};
    for (int i = 0; i < N; i++) {
        dsq_group_entry e = {.host = i == 3 ? UINT32_MAX : (uint32_t)(i / 5 + 2),
                             .rank = i % 7 - 1,
                             .source = (uint32_t)(i * 977),
                             .rec = rec_of(i)};
        e.rec.first_t = i == 9 ? INT64_MIN : i == 10 ? INT64_MAX : e.rec.first_t; /* far bases */
        e.pairs = (const unsigned char *)"\x01\x02\x03\x04\x05\x06\x07";
        e.npairs = (size_t)(i % 8);
        o = dsq_group_put(o, &prev, &e);
    }
    size_t len = (size_t)(o - g);
    dsq_group_iter it, is;
    dsq_group_entry e, k;
    int n = 0, r;
    dsq_group_iter_init(&it, g, len);
    dsq_group_iter_init(&is, g, len);
    while ((r = dsq_group_next(&it, &e)) == 1) {
        CHECK_INT(dsq_group_skim(&is, &k), 1);
        CHECK(k.skimmed && !e.skimmed);
        CHECK(k.host == e.host && k.rank == e.rank && k.source == e.source);
        CHECK(k.raw == e.raw && k.raw_len == e.raw_len && k.sum == e.sum && k.sum_len == e.sum_len);
        CHECK(k.base.t == e.base.t && k.base.host == e.base.host);
        CHECK(k.rec.first_t == e.rec.first_t);
        dsq_series_rec rk, re;
        CHECK_INT(dsq_group_entry_rec(&k, &rk), 0);
        CHECK_INT(dsq_group_entry_rec(&e, &re), 0);
        CHECK(dsq_summary_same(&rk, &e.rec) && dsq_summary_same(&re, &e.rec));
        n++;
    }
    CHECK_INT(r, 0);
    CHECK_INT(dsq_group_skim(&is, &k), 0);
    CHECK_INT(n, N);
    for (int out = -1; out < N; out++) { /* entry `out` left out (-1: none) */
        unsigned char *oa = a, *ob = b;
        dsq_group_prev pa = {0, 0}, pb = {0, 0};
        dsq_group_iter_init(&it, g, len);
        dsq_group_iter_init(&is, g, len);
        for (int i = 0; dsq_group_next(&it, &e) == 1 && dsq_group_skim(&is, &k) == 1; i++) {
            if (i == out)
                continue;
            oa = dsq_group_put(oa, &pa, &k); /* skimmed: copied or rebased */
            e.raw = NULL;
            ob = dsq_group_put(ob, &pb, &e); /* read whole: packed anew */
        }
        CHECK_INT((size_t)(oa - a), (size_t)(ob - b));
        CHECK(memcmp(a, b, (size_t)(ob - b)) == 0);
    }
done:
    free(g);
    free(a);
    free(b);
}

TEST_MAIN(T(test_summary_round_trip_any_base), T(test_group_round_trip_and_copy),
          T(test_group_damage_stops_inside), T(test_group_skim_same_as_next))
