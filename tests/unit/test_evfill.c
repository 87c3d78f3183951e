/* Event values kept once, in their series (evfill.h): events written as the
 * indexer writes them (rollup first, then the block naming the values it kept)
 * read back through their blocks and dsq_evfill come back bit for bit: values in
 * many chunks, two kinds taking turns in one field, a field twice in an event,
 * values converted to the series' unit (kept in the block), a field of one value,
 * NaN and -0; asked out of order and past the cursor table's size; a series that
 * is not there is damage; a source committed in the middle finds its values; the
 * few values after a series' last chunk, kept in its record, are found. */
#include <math.h>
#include <stdlib.h>

#include "dsq/dsq.h"
#include "evfill.h"
#include "num.h"
#include "rollup.h"
#include "store.h"
#include "test.h"
#include "tmpdir.h"

#define NEV 40000
#define BLOCK_EVENTS 500
#define HOSTS 20
#define HOST_FIELDS 30

static dsq_event evs[NEV];
static dsq_event wide[HOSTS * 8];
static char dir[64];
static dsq_store *st;
static uint32_t run;

static uint32_t id(const char *s) { return dsq_dict_intern(dsq_store_dict(st), s, strlen(s)); }

static void make_events(void)
{
    uint32_t mem = id("mem"), loss = id("loss"), lonely = id("lonely"), step = id("step");
    for (int i = 0; i < NEV; i++) {
        dsq_event *e = &evs[i];
        memset(e, 0, sizeof *e);
        e->t_us = 1000000LL * i;
        e->line = (uint32_t)i + 1;
        e->rank = 0;
        e->host = 0;
        if (i % 5 == 4) { /* a second kind with `loss` too: the kinds take turns */
            e->kind = DSQ_EV_DS_STEP;
            e->f[e->nf++] = (dsq_field){step, DSQ_U_NONE, (double)i};
            e->f[e->nf++] = (dsq_field){loss, DSQ_U_NONE, 2.0 + i % 17};
            if (i % 25 == 4) /* a field twice */
                e->f[e->nf++] = (dsq_field){loss, DSQ_U_NONE, -3.5 - i};
            continue;
        }
        e->kind = DSQ_EV_MEMORY;
        /* GB, and now and then MB: converted to GB in the series, kept in the block */
        int mb = i % 7 == 3;
        e->f[e->nf++] = (dsq_field){mem, mb ? DSQ_U_MB : DSQ_U_GB, mb ? 1000.0 + i : 1.5 + i * 0.001};
        double l = 4.0 - i * 1e-4 + (i % 11) * 0.013;
        if (i % 1000 == 7)
            l = NAN;
        if (i % 1000 == 8)
            l = -0.0;
        e->f[e->nf++] = (dsq_field){loss, DSQ_U_NONE, l};
        if (i == 12345)
            e->f[e->nf++] = (dsq_field){lonely, DSQ_U_NONE, 42.125};
    }
    /* many series: HOSTS hosts of HOST_FIELDS fields, 8 events each */
    char name[32];
    for (int i = 0; i < HOSTS * 8; i++) {
        dsq_event *e = &wide[i];
        memset(e, 0, sizeof *e);
        e->kind = DSQ_EV_MEGATRON_ITER;
        e->t_us = 1000000LL * i;
        e->line = (uint32_t)i + 1;
        e->rank = -1;
        snprintf(name, sizeof name, "gpu%03d", i % HOSTS);
        e->host = id(name);
        for (int f = 0; f < HOST_FIELDS && f < DSQ_EV_MAXF; f++) {
            snprintf(name, sizeof name, "f%02d", f + (i % 2) * DSQ_EV_MAXF);
            e->f[e->nf++] = (dsq_field){id(name), DSQ_U_NONE, i * 100.0 + f + 0.5};
        }
    }
}

/* Writes events as the indexer does, BLOCK_EVENTS to a block per (host, rank). */
static void write_source(dsq_rollup *roll, const dsq_event *ev, int n, uint32_t source)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_rollup_begin(roll, run, source);
    dsq_block b[HOSTS + 1];
    memset(b, 0, sizeof b);
    uint32_t seq = 0, host_of[HOSTS + 1] = {0};
    for (int i = 0; i < n; i++) {
        int h = 0;
        while (h < HOSTS && host_of[h] && host_of[h] != ev[i].host + 1)
            h++;
        host_of[h] = ev[i].host + 1;
        dsq_num_form forms[DSQ_EV_MAXF];
        uint64_t event = 0;
        uint32_t kept = 0;
        dsq_ev_forms(&ev[i], forms);
        CHECK_INT(dsq_rollup_add_forms(roll, &ev[i], forms, &event, &kept, &err), 0);
        CHECK_INT(dsq_block_add_ref(&b[h], &ev[i], forms, kept, event), 0);
        if (b[h].count == BLOCK_EVENTS || i == n - 1) {
            dsq_block_key k = {run, ev[i].host, ev[i].rank, b[h].t_first, source, seq++};
            CHECK_INT(dsq_store_block_put(st, &k, &b[h], &err), 0);
            dsq_block_reset(&b[h]);
        }
    }
    for (int h = 0; h <= HOSTS; h++) {
        if (b[h].count) {
            dsq_block_key k = {run, host_of[h] - 1, ev[0].rank, b[h].t_first, source, seq++};
            CHECK_INT(dsq_store_block_put(st, &k, &b[h], &err), 0);
        }
        dsq_block_free_buf(&b[h]);
    }
    CHECK_INT(dsq_rollup_finish(roll, &err), 0);
}

static void test_setup(void)
{
    dsq_store_params p = {dir, 0, 0};
    dsq_error err;
    dsq_error_clear(&err);
    dsq_rollup *roll = NULL;
    CHECK_INT(test_tmpdir_new(dir), 0);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    CHECK_INT(dsq_rollup_new(st, &roll), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    run = id("run");
    make_events();
    write_source(roll, evs, NEV, 1);
    write_source(roll, wide, HOSTS * 8, 2);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_rollup_free(roll);
}

static int same_event(const dsq_event *a, const dsq_event *b)
{
    if (a->kind != b->kind || a->nf != b->nf || a->t_us != b->t_us || a->line != b->line)
        return 0;
    for (int f = 0; f < a->nf; f++)
        if (a->f[f].name != b->f[f].name || a->f[f].unit != b->f[f].unit ||
            memcmp(&a->f[f].v, &b->f[f].v, sizeof a->f[f].v) != 0)
            return 0;
    return 1;
}

typedef struct reader {
    dsq_evfill *fill;
    int seen[2], wrong, in_series;
    dsq_error err;
} reader;

static int read_block(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    reader *r = ctx;
    dsq_block_iter it;
    dsq_event ev;
    CHECK_INT(dsq_block_iter_init(&it, data, n, k->t_us), 0);
    int got;
    while ((got = dsq_block_iter_next(&it, &ev)) == 1) {
        ev.host = k->host;
        ev.rank = k->rank;
        r->in_series += __builtin_popcount(it.in_series);
        if (it.in_series)
            CHECK_INT(dsq_evfill_event(r->fill, st, k, &ev, it.event, it.in_series, &r->err), 0);
        const dsq_event *want = k->source == 1 ? &evs[ev.line - 1] : &wide[ev.line - 1];
        r->wrong += !same_event(&ev, want);
        r->seen[k->source - 1]++;
    }
    CHECK_INT(got, 0);
    return 0;
}

static void test_read_back(void)
{
    reader r = {0};
    dsq_error_clear(&r.err);
    CHECK_INT(dsq_evfill_new(&r.fill), 0);
    CHECK_INT(dsq_store_scan_blocks(st, run, read_block, &r, &r.err), 0);
    CHECK_INT(r.seen[0], NEV);
    CHECK_INT(r.seen[1], HOSTS * 8);
    CHECK_INT(r.wrong, 0);
    /* every value but the converted ones (a seventh of the 4/5 `mem`) was in its series */
    CHECK(r.in_series > NEV * 2 - NEV / 5);
    dsq_evfill_free(r.fill);
}

/* Asked backwards (a cursor goes back to its series' start), and round-robin over
 * more series than the cursor table holds (each reopened). */
static void test_out_of_order(void)
{
    dsq_evfill *fill;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_evfill_new(&fill), 0);
    dsq_block_key k = {run, 0, 0, 0, 1, 0};
    int wrong = 0;
    for (int i = NEV - 1; i >= 0; i -= 997) {
        if (evs[i].kind != DSQ_EV_MEMORY || i % 7 == 3)
            continue;
        dsq_event ev = evs[i];
        ev.f[1].v = 0;
        uint64_t n = (uint64_t)(i - i / 5); /* MEMORY events before it */
        CHECK_INT(dsq_evfill_event(fill, st, &k, &ev, n, 2, &err), 0);
        wrong += memcmp(&ev.f[1].v, &evs[i].f[1].v, 8) != 0;
    }
    for (int round = 0; round < 8; round++) {
        for (int i = round; i < HOSTS * 8; i += 8) { /* event `round` of each host */
            dsq_event ev = wide[i];
            dsq_block_key wk = {run, ev.host, -1, 0, 2, 0};
            for (int f = 0; f < ev.nf; f++)
                ev.f[f].v = 0;
            CHECK_INT(dsq_evfill_event(fill, st, &wk, &ev, (uint64_t)(i / HOSTS), (1u << ev.nf) - 1,
                                       &err), 0);
            wrong += !same_event(&ev, &wide[i]);
        }
    }
    CHECK_INT(wrong, 0);
    /* a source the index does not have, and an event past the series' end */
    dsq_event ev = evs[0];
    k.source = 9;
    CHECK_INT(dsq_evfill_event(fill, st, &k, &ev, 0, 2, &err), DSQ_EINDEX);
    CHECK(strstr(err.msg, "source 9") != NULL);
    k.source = 1;
    CHECK_INT(dsq_evfill_event(fill, st, &k, &ev, NEV, 2, &err), DSQ_EINDEX);
    dsq_evfill_free(fill);
}

typedef struct partial_reader {
    dsq_evfill *fill;
    uint32_t source;
    int events, missing;
} partial_reader;

static int read_partial(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    partial_reader *r = ctx;
    if (k->source != r->source)
        return 0;
    dsq_block_iter it;
    dsq_event ev;
    dsq_error err;
    CHECK_INT(dsq_block_iter_init(&it, data, n, k->t_us), 0);
    while (dsq_block_iter_next(&it, &ev) == 1) {
        r->events++;
        if (it.in_series && dsq_evfill_event(r->fill, st, k, &ev, it.event, it.in_series, &err) != 0)
            r->missing++;
        else
            r->missing += !same_event(&ev, &wide[ev.line - 1]);
    }
    return 0;
}

/* Writes ev as the indexer does (the rollup first, then a block naming the values
 * it kept), in a block of its own, written at once; the bits of the values kept. */
static uint32_t write_alone(dsq_rollup *roll, const dsq_event *ev, uint32_t source, uint32_t *seq)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_block b;
    memset(&b, 0, sizeof b);
    dsq_num_form forms[DSQ_EV_MAXF];
    uint64_t event = 0;
    uint32_t kept = 0;
    dsq_ev_forms(ev, forms);
    CHECK_INT(dsq_rollup_add_forms(roll, ev, forms, &event, &kept, &err), 0);
    CHECK_INT(dsq_block_add_ref(&b, ev, forms, kept, event), 0);
    dsq_block_key k = {run, ev->host, ev->rank, b.t_first, source, (*seq)++};
    CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
    dsq_block_free_buf(&b);
    return kept;
}

/* A source committed in the middle (a checkpoint) after blocks were written: the
 * blocks name values kept in their series, so the checkpoint must write every
 * series whole (indexer.c does once a block is written): every value is found.
 * One that writes only the series with chunks leaves these (8 values each, none in
 * a chunk) out: the partial source's events miss their values. */
static void test_checkpoint_keeps_what_blocks_name(void)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_rollup *roll = NULL;
    CHECK_INT(dsq_rollup_new(st, &roll), 0);
    for (int whole = 1; roll && whole >= 0; whole--) {
        uint32_t source = whole ? 3 : 4;
        CHECK_INT(dsq_store_begin(st, &err), 0);
        dsq_rollup_begin(roll, run, source);
        uint32_t seq = 0;
        for (int i = 0; i < HOSTS * 8; i++)
            write_alone(roll, &wide[i], source, &seq);
        CHECK_INT(dsq_rollup_checkpoint(roll, whole, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        partial_reader r = {.source = source};
        CHECK_INT(dsq_evfill_new(&r.fill), 0);
        CHECK_INT(dsq_store_scan_blocks(st, run, read_partial, &r, &err), 0);
        CHECK_INT(r.events, HOSTS * 8);
        if (whole)
            CHECK_INT(r.missing, 0);
        else
            CHECK_INT(r.missing, HOSTS * 8);
        dsq_evfill_free(r.fill);
    }
    dsq_rollup_free(roll);
}

static int count_pairs(void *ctx, const void *data, size_t n)
{
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int r;
    dsq_chunk_iter_init(&it, data, n);
    while ((r = dsq_chunk_iter_next(&it, &t, &v)) == 1)
        ++*(int *)ctx;
    return r;
}

/* A series with a chunk record keeps the few pairs after it in its own record
 * (schema 11), at a checkpoint (the chunk left open) and at the end, where it
 * wrote a chunk record each time before: its values are found through blocks,
 * and its pairs read back in order, after each commit. */
static void test_values_after_the_last_chunk(void)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_rollup *roll = NULL;
    CHECK_INT(dsq_rollup_new(st, &roll), 0);
    enum { N = 140 };
    static dsq_event ev[N];
    uint32_t pi = id("pi"), solo = id("solo");
    for (int i = 0; i < N; i++) {
        memset(&ev[i], 0, sizeof ev[i]);
        ev[i].kind = DSQ_EV_MEMORY;
        ev[i].t_us = 1000000LL * (i + 1);
        ev[i].line = (uint32_t)i + 1;
        ev[i].host = solo;
        ev[i].f[ev[i].nf++] = (dsq_field){pi, DSQ_U_NONE, M_PI * (i + 1)}; /* 9 bytes a pair */
    }
    const uint32_t source = 5;
    dsq_series_key key = {pi, run, solo, 0, source};
    CHECK_INT(dsq_store_begin(st, &err), 0);
    dsq_rollup_begin(roll, run, source);
    uint32_t seq = 0;
    /* 100 values (900 bytes: a chunk record at the checkpoint), 20 (in the record at
     * the next one), 20 more (in the record at the end) */
    static const int upto[] = {100, 120, N};
    for (int phase = 0, i = 0; roll && phase < 3; phase++) {
        for (; i < upto[phase]; i++)
            CHECK_INT(write_alone(roll, &ev[i], source, &seq), 1);
        CHECK_INT(phase < 2 ? dsq_rollup_checkpoint(roll, 1, &err) : dsq_rollup_finish(roll, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        dsq_series_rec rec;
        unsigned char *own = NULL;
        size_t nown = 0, cap = 0;
        CHECK_INT(dsq_store_series_get(st, &key, &rec, &own, &nown, &cap, &err), 1);
        CHECK_INT(rec.nchunks, 1);
        CHECK_INT(rec.count, (uint64_t)i);
        CHECK(phase == 0 ? nown == 0 : nown > 0 && nown <= 512);
        free(own);
        int pairs = 0;
        CHECK_INT(dsq_store_scan_chunks(st, &key, &rec, count_pairs, &pairs, &err), 0);
        CHECK_INT(pairs, i);
        dsq_evfill *fill = NULL;
        CHECK_INT(dsq_evfill_new(&fill), 0);
        dsq_block_key k = {run, solo, 0, 0, source, 0};
        int wrong = 0;
        for (int j = 0; fill && j < i; j++) { /* in order, then one asked again from the start */
            dsq_event e = ev[j];
            e.f[0].v = 0;
            CHECK_INT(dsq_evfill_event(fill, st, &k, &e, (uint64_t)j, 1, &err), 0);
            wrong += memcmp(&e.f[0].v, &ev[j].f[0].v, 8) != 0;
        }
        dsq_event e = ev[0];
        CHECK_INT(dsq_evfill_event(fill, st, &k, &e, 0, 1, &err), 0);
        CHECK_INT(wrong, 0);
        CHECK_INT(dsq_evfill_event(fill, st, &k, &e, (uint64_t)i, 1, &err), DSQ_EINDEX); /* past */
        dsq_evfill_free(fill);
        if (phase < 2)
            CHECK_INT(dsq_store_begin(st, &err), 0);
    }
    dsq_rollup_free(roll);
}

static void test_teardown(void)
{
    dsq_store_close(st);
    test_tmpdir_remove(dir);
}

TEST_MAIN(T(test_setup), T(test_read_back), T(test_out_of_order),
          T(test_checkpoint_keeps_what_blocks_name), T(test_values_after_the_last_chunk),
          T(test_teardown))
