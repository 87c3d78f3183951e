/* Event blocks: encode many events, decode them back exactly, and check that a
 * truncated or damaged block is reported as DSQ_EFORMAT and never overrun. The
 * value a block is stored as is built like dsq_store_block_put builds it: by
 * dsq_block_encode, in columns. */
#include <stdlib.h>

#include "dsq/dsq.h"
#include "event.h"
#include "test.h"
#include "timeconv.h"
#include "varint.h"

static dsq_block_cols *cols; /* the encoder's buffers, shared by every test */

/* The stored value of a block (dsq_block_encode), in an exact-size heap buffer. */
static unsigned char *stored_value(const dsq_block *b, size_t *n)
{
    const unsigned char *data = NULL;
    *n = 0;
    if (!cols)
        CHECK_INT(dsq_block_cols_new(&cols), 0);
    CHECK_INT(dsq_block_encode(cols, b, &data, n), 0);
    unsigned char *v = malloc(*n ? *n : 1);
    if (*n)
        memcpy(v, data, *n);
    return v;
}

/* Starts it on b's stored value, which is returned (the caller frees it). */
static unsigned char *iter_block(const dsq_block *b, dsq_block_iter *it)
{
    size_t n;
    unsigned char *v = stored_value(b, &n);
    CHECK_INT(dsq_block_iter_init(it, v, n, b->t_first), 0);
    return v;
}

/* A stored value put together by hand (event.h): count, the five streams, then
 * ncols value columns; each part is a string of bytes and its length. Returns the
 * value's length in out. */
typedef struct part {
    const char *b;
    size_t n;
} part;
#define PART(s) ((part){s, sizeof s - 1})
#define NONE ((part){"", 0})

static size_t hand_value(unsigned char *out, uint32_t count, const part st[5], const part *col,
                         uint32_t ncols)
{
    unsigned char *p = dsq_varint_put(out, count);
    p = dsq_varint_put(p, ncols);
    *p++ = 0; /* no starts: no value is in a series */
    for (int i = 0; i < 5; i++)
        p = dsq_varint_put(p, st[i].n);
    for (uint32_t i = 0; i < ncols; i++)
        p = dsq_varint_put(p, col[i].n);
    for (int i = 0; i < 5; i++)
        memcpy(p, st[i].b, st[i].n), p += st[i].n;
    for (uint32_t i = 0; i < ncols; i++)
        memcpy(p, col[i].b, col[i].n), p += col[i].n;
    return (size_t)(p - out);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Event i of a deterministic stream that exercises every encoding corner. */
static dsq_event make_event(int i)
{
    static const double vals[] = {0.0, -0.0, 1.75, -3.5e-300, 1e308, 6.54, 16.3, -1};
    dsq_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint16_t)(i % 3 == 0 ? DSQ_EV_MEMORY : i % 7);
    ev.host = 77; /* not encoded: the caller sets it */
    ev.rank = 3;
    switch (i % 6) {
    case 0: ev.t_us = 1721511005202000LL + (int64_t)i * 1000; break;
    case 1: ev.t_us = 1721511005202000LL - (int64_t)i * 5000000; break; /* going back */
    case 2: ev.t_us = DSQ_TIME_NONE; break;
    case 3: ev.t_us = -86400000000LL * 365 * (i % 50); break;           /* before 1970 */
    case 4: ev.t_us = INT64_MAX - i; break;
    default: ev.t_us = 0; break;
    }
    ev.label = (uint32_t)(i % 5 == 0 ? 0 : (uint32_t)i * 2654435761u);
    ev.line = i % 4 == 0 ? 1 + (uint32_t)i * 3 : (i % 4 == 1 ? 1 : UINT32_MAX - (uint32_t)i);
    ev.nf = (uint8_t)(i % (DSQ_EV_MAXF + 1));
    for (int f = 0; f < ev.nf; f++) {
        ev.f[f].name = (uint32_t)(f == 0 ? 1 : (uint32_t)(i + 1) * 131u * (uint32_t)f);
        ev.f[f].unit = (uint8_t)((i + f) % 14);
        ev.f[f].v = vals[(i + f) % 8] * (f + 1);
    }
    return ev;
}

static int same_event(const dsq_event *a, const dsq_event *b)
{
    if (a->kind != b->kind || a->t_us != b->t_us || a->label != b->label ||
        a->line != b->line || a->nf != b->nf)
        return 0;
    for (int f = 0; f < a->nf; f++)
        if (a->f[f].name != b->f[f].name || a->f[f].unit != b->f[f].unit ||
            memcmp(&a->f[f].v, &b->f[f].v, sizeof(double)) != 0)
            return 0;
    return 1;
}

static void build(dsq_block *b, int n)
{
    dsq_block_reset(b);
    for (int i = 0; i < n; i++) {
        dsq_event ev = make_event(i);
        CHECK_INT(dsq_block_add(b, &ev), 0);
    }
}

static void test_round_trip(void)
{
    dsq_block b;
    memset(&b, 0, sizeof b);
    enum { N = 5000 };
    build(&b, N);
    CHECK_INT(b.count, N);
    CHECK_INT(b.t_first, make_event(0).t_us);
    size_t n;
    unsigned char *v = stored_value(&b, &n);
    dsq_block_iter it;
    CHECK_INT(dsq_block_iter_init(&it, v, n, b.t_first), 0);
    int i = 0, r, bad = 0;
    dsq_event ev;
    while ((r = dsq_block_iter_next(&it, &ev)) == 1) {
        dsq_event want = make_event(i);
        if (!same_event(&ev, &want)) {
            if (!bad)
                fprintf(stderr, "event %d differs (t %lld vs %lld)\n", i, (long long)ev.t_us,
                        (long long)want.t_us);
            bad++;
        }
        i++;
    }
    CHECK_INT(r, 0);
    CHECK_INT(i, N);
    CHECK_INT(bad, 0);
    CHECK_INT(dsq_block_iter_next(&it, &ev), 0); /* stays at the end */
    free(v);

    /* reset keeps the buffer and starts a new block with its own first time */
    unsigned char *buf = b.buf;
    dsq_block_reset(&b);
    CHECK_INT(b.count, 0);
    CHECK_INT(b.len, 0);
    dsq_event one = make_event(2); /* DSQ_TIME_NONE first */
    CHECK_INT(dsq_block_add(&b, &one), 0);
    CHECK(b.buf == buf);
    CHECK_INT(b.t_first, DSQ_TIME_NONE);
    v = stored_value(&b, &n);
    CHECK_INT(dsq_block_iter_init(&it, v, n, b.t_first), 0);
    memset(&ev, 0, sizeof ev);
    ev.host = 5;
    ev.rank = 9;
    CHECK_INT(dsq_block_iter_next(&it, &ev), 1);
    CHECK(same_event(&ev, &one));
    CHECK_INT(ev.t_us, DSQ_TIME_NONE);
    CHECK_INT(ev.host, 5); /* host and rank are left as the caller set them */
    CHECK_INT(ev.rank, 9);
    CHECK_INT(dsq_block_iter_next(&it, &ev), 0);
    free(v);
    dsq_block_free_buf(&b);
    CHECK(b.buf == NULL && b.cap == 0);
}

static void test_full_event(void)
{
    dsq_block b;
    memset(&b, 0, sizeof b);
    dsq_event ev;
    memset(&ev, 0xff, sizeof ev); /* every encoded value at its widest */
    ev.nf = DSQ_EV_MAXF;
    ev.t_us = INT64_MIN + 1;
    for (int i = 0; i < 300; i++)
        CHECK_INT(dsq_block_add(&b, &ev), 0);
    CHECK(b.len <= b.cap);
    size_t n;
    unsigned char *v = stored_value(&b, &n);
    dsq_block_iter it;
    CHECK_INT(dsq_block_iter_init(&it, v, n, b.t_first), 0);
    dsq_event out;
    int k = 0;
    while (dsq_block_iter_next(&it, &out) == 1)
        k += same_event(&out, &ev);
    CHECK_INT(k, 300);
    free(v);
    dsq_block_free_buf(&b);
}

/* Decodes a whole value: DSQ_EFORMAT, or the number of events it held. */
static int decode_all(const unsigned char *data, size_t n, int64_t t_first)
{
    dsq_block_iter it;
    if (dsq_block_iter_init(&it, data, n, t_first) != 0)
        return DSQ_EFORMAT;
    dsq_event ev;
    int r, k = 0;
    while ((r = dsq_block_iter_next(&it, &ev)) == 1)
        k++;
    return r < 0 ? r : k;
}

/* Whether a stored value holds its block as rows (event.h: a count, then 0). */
static int stored_as_rows(const unsigned char *v, size_t n)
{
    const unsigned char *p = v;
    uint64_t count, ncols;
    return dsq_varint_get(&p, v + n, &count) == 0 && dsq_varint_get(&p, v + n, &ncols) == 0 &&
           ncols == 0;
}

/* Every shorter prefix of the stored value v is refused as damaged. */
static void truncations_refused(const unsigned char *v, size_t n, int64_t t_first)
{
    int bad = 0;
    for (size_t len = 0; len < n; len++) {
        unsigned char *cut = malloc(len ? len : 1); /* exact size: ASan sees any overrun */
        memcpy(cut, v, len);
        int r = decode_all(cut, len, t_first);
        if (r != DSQ_EFORMAT) {
            if (!bad)
                fprintf(stderr, "truncated to %zu of %zu bytes: got %d\n", len, n, r);
            bad++;
        }
        free(cut);
    }
    CHECK_INT(bad, 0);
}

/* The stored value of a block of `events` events (build), checked to hold them as
 * rows when `rows`, in columns otherwise; *t_first: the block's first time. */
static unsigned char *stored_events(int events, int rows, int64_t *t_first, size_t *n)
{
    dsq_block b;
    memset(&b, 0, sizeof b);
    build(&b, events);
    unsigned char *v = stored_value(&b, n);
    CHECK_INT(stored_as_rows(v, *n), rows);
    CHECK_INT(decode_all(v, *n, b.t_first), events);
    *t_first = b.t_first;
    dsq_block_free_buf(&b);
    return v;
}

/* A block of 200 events is stored in columns, one of 6 as rows: both cut short
 * anywhere are refused. */
static void test_every_truncation(void)
{
    for (int events = 200; events > 0; events = events == 200 ? 6 : 0) {
        int64_t t_first;
        size_t n;
        unsigned char *v = stored_events(events, events == 6, &t_first, &n);
        truncations_refused(v, n, t_first);
        free(v);
    }
}

/* Damaged values, in columns and as rows: never a crash, never more events than
 * the bytes could hold. */
static void test_damaged(void)
{
    for (int events = 100; events > 0; events = events == 100 ? 6 : 0) {
        int64_t t_first;
        size_t n;
        unsigned char *v = stored_events(events, events == 6, &t_first, &n);
        unsigned char *d = malloc(n);
        /* every byte set to each of a few values */
        static const unsigned char pokes[] = {0x00, 0x09, 0x7f, 0x80, 0xff};
        for (size_t i = 0; i < n; i++)
            for (size_t p = 0; p < sizeof pokes; p++) {
                memcpy(d, v, n);
                d[i] = pokes[p];
                int r = decode_all(d, n, t_first);
                CHECK(r == DSQ_EFORMAT || (r >= 0 && (size_t)r <= n / 5));
            }
        free(d);
        free(v);
    }
    /* random garbage */
    for (int round = 0; round < 2000; round++) {
        size_t len = (size_t)(rnd() % 200);
        unsigned char *g = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++)
            g[i] = (unsigned char)rnd();
        int r = decode_all(g, len, (int64_t)rnd());
        CHECK(r == DSQ_EFORMAT || (r >= 0 && (size_t)r <= len / 5));
        free(g);
    }

    /* hand-made values (hand_value): the streams are shapes, time deltas, labels,
     * texts, line deltas; one event claiming 17 fields */
    unsigned char hv[128];
    const part zero5[5] = {NONE, PART("\0"), PART("\0"), PART("\0"), PART("\0")};
    part st[5];
    memcpy(st, zero5, sizeof st);
    st[0] = PART("\0\1\21");
    CHECK_INT(decode_all(hv, hand_value(hv, 1, st, &NONE, 1), 0), DSQ_EFORMAT);
    /* a shape the block has not spelled out (shape 1 of none; shape 2 of one) */
    st[0] = PART("\1");
    CHECK_INT(decode_all(hv, hand_value(hv, 1, st, &NONE, 1), 0), DSQ_EFORMAT);
    const part two[5] = {PART("\0\1\0\2"), PART("\0\0"), PART("\0\0"), PART("\0\0"),
                         PART("\0\0")};
    CHECK_INT(decode_all(hv, hand_value(hv, 2, two, &NONE, 1), 0), DSQ_EFORMAT);
    /* a stream or column longer than the value; more columns than a block has */
    st[0] = PART("\0\1\0");
    size_t hn = hand_value(hv, 1, st, &NONE, 1);
    CHECK_INT(decode_all(hv, hn, 0), 1);
    hv[2] = 4; /* the shapes' length, 3 */
    CHECK_INT(decode_all(hv, hn, 0), DSQ_EFORMAT);
    hn = hand_value(hv, 1, st, &PART("\0"), 1);
    hv[7] = 3; /* column 0's length, 1 */
    CHECK_INT(decode_all(hv, hn, 0), DSQ_EFORMAT);
    const unsigned char toomany[] = {1, 0x82, 0x08}; /* 1026 columns */
    CHECK_INT(decode_all(toomany, sizeof toomany, 0), DSQ_EFORMAT);
    /* a count varint that never ends */
    const unsigned char endless[] = {0x80, 0x80, 0x80};
    CHECK_INT(decode_all(endless, sizeof endless, 0), DSQ_EFORMAT);
    /* a count above UINT32_MAX */
    const unsigned char huge[] = {0xff, 0xff, 0xff, 0xff, 0x7f};
    CHECK_INT(decode_all(huge, sizeof huge, 0), DSQ_EFORMAT);
    /* a line delta that would overflow a signed add: decoded without undefined
     * behaviour (the second event reuses the first one's shape) */
    const part wide[5] = {PART("\0\1\0\1"), PART("\0\0"), PART("\0\0"), PART("\0\0"),
                          PART("\310\1" /* line 100 */
                               "\376\377\377\377\377\377\377\377\377\1" /* + INT64_MAX */)};
    CHECK_INT(decode_all(hv, hand_value(hv, 2, wide, &NONE, 1), 0), 2);
    /* an empty block is fine; a value that is only a count of 0 is not one */
    dsq_block eb;
    memset(&eb, 0, sizeof eb);
    size_t en;
    unsigned char *ev0 = stored_value(&eb, &en);
    CHECK_INT(decode_all(ev0, en, 0), 0);
    free(ev0);
    const unsigned char empty[] = {0};
    CHECK_INT(decode_all(empty, sizeof empty, 0), DSQ_EFORMAT);
    /* one event with one field (column 1) whose raw double (tag 7) is cut short */
    st[0] = PART("\0\1\1\5\4");
    part c2[2] = {NONE, PART("\7\0\0\0\0\0\0")};
    CHECK_INT(decode_all(hv, hand_value(hv, 1, st, c2, 2), 0), DSQ_EFORMAT);
    /* a packed number whose varint runs off the end */
    c2[1] = PART("\200");
    CHECK_INT(decode_all(hv, hand_value(hv, 1, st, c2, 2), 0), DSQ_EFORMAT);
    /* a tag above 7 with exponent bits 7 is not a raw double (15 says the value is
     * in its series, which needs the event's number: the block has no starts) */
    c2[1] = PART("\17\0\0\0\0\0\0\360\77");
    CHECK_INT(decode_all(hv, hand_value(hv, 1, st, c2, 2), 0), DSQ_EFORMAT);
    /* the field's column is not in the value */
    CHECK_INT(decode_all(hv, hand_value(hv, 1, st, c2, 1), 0), DSQ_EFORMAT);
    c2[1] = PART("\7\0\0\0\0\0\0\360\77");
    /* the same event as rows (count, 0, no starts, the rows), then with its double
     * cut short */
    const unsigned char rows[] = {1, 0, 0, 0, 1, 1, 5, 4, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    CHECK_INT(decode_all(rows, sizeof rows, 0), 1);
    CHECK_INT(decode_all(rows, sizeof rows - 1, 0), DSQ_EFORMAT);
    dsq_block_iter it;
    dsq_event ev;
    CHECK_INT(dsq_block_iter_init(&it, hv, hand_value(hv, 1, st, c2, 2), 1000), 0);
    CHECK_INT(dsq_block_iter_next(&it, &ev), 1);
    CHECK_INT(ev.kind, 1);
    CHECK_INT(ev.t_us, 1000);
    CHECK_INT(ev.nf, 1);
    CHECK_INT(ev.f[0].name, 5);
    CHECK_INT(ev.f[0].unit, 4);
    CHECK_DBL(ev.f[0].v, 1.0);
}

/* A field's values go to its own column, each decimal one as the difference from
 * the value before it when both have the same exponent: a value that moves by a
 * little takes one byte, and every value comes back bit for bit, whatever comes
 * between (another exponent, a raw double, -0, the largest mantissas, an event of
 * another shape). */
static void test_column_deltas(void)
{
    dsq_block b;
    memset(&b, 0, sizeof b);
    enum { N = 2000 };
    const double big = 9007199254740991.0; /* 2^53 - 1: the largest decimal mantissa */
    double want[N][2];
    for (int i = 0; i < N; i++) {
        dsq_event ev = {.kind = DSQ_EV_HF_LOSS, .t_us = 1000 * i, .line = (uint32_t)i + 1, .nf = 2};
        /* a moves by 0.002 (three decimals, the last odd: always e 3), c far */
        double a = (3001 + 2 * i) / 1000.0, c = i % 2 ? big : -big;
        if (i % 397 == 5)
            a = 0.1 + 0.2; /* not decimal: a raw double */
        else if (i % 389 == 7)
            a = -0.0;
        else if (i % 383 == 9)
            a = 12345; /* another exponent */
        ev.f[0] = (dsq_field){.name = 1, .v = a};
        ev.f[1] = (dsq_field){.name = 2, .v = c};
        want[i][0] = a;
        want[i][1] = c;
        CHECK_INT(dsq_block_add(&b, &ev), 0);
        if (i % 10 == 0) { /* another shape in between */
            dsq_event other = {.kind = DSQ_EV_DS_STEP, .t_us = 1000 * i, .nf = 1};
            other.f[0] = (dsq_field){.name = 3, .v = 7};
            CHECK_INT(dsq_block_add(&b, &other), 0);
        }
    }
    dsq_block_iter it;
    dsq_event ev;
    unsigned char *v = iter_block(&b, &it);
    int k = 0, bad = 0;
    while (dsq_block_iter_next(&it, &ev) == 1) {
        if (ev.kind != DSQ_EV_HF_LOSS) {
            bad += ev.nf != 1 || ev.f[0].v != 7;
            continue;
        }
        bad += ev.nf != 2 || memcmp(&ev.f[0].v, &want[k][0], 8) != 0 ||
               memcmp(&ev.f[1].v, &want[k][1], 8) != 0;
        k++;
    }
    CHECK_INT(k, N);
    CHECK_INT(bad, 0);
    CHECK(it.col[1].p == it.col[1].end && it.col[2].p == it.col[2].end); /* all read */
    /* column 1 (field 1) holds one byte per value that moved by 0.002, save those
     * around the raw doubles, -0 and 12345 (without differences: three each) */
    dsq_block_iter again;
    free(v);
    v = iter_block(&b, &again);
    size_t bytes1 = (size_t)(again.col[1].end - again.col[1].p);
    CHECK(bytes1 < N + 200);
    free(v);
    dsq_block_free_buf(&b);
}

/* Rows that are not a block are refused by the encoder, not stored in columns. */
static void test_encode_refuses_damaged_rows(void)
{
    dsq_block b;
    memset(&b, 0, sizeof b);
    build(&b, 200);
    CHECK(b.len >= DSQ_BLOCK_COLUMNS_MIN);
    const unsigned char *data;
    size_t n, len = b.len;
    b.len = len - 1; /* the last value cut */
    CHECK_INT(dsq_block_encode(cols, &b, &data, &n), DSQ_EFORMAT);
    b.len = len;
    b.count++; /* one event more than the rows hold */
    CHECK_INT(dsq_block_encode(cols, &b, &data, &n), DSQ_EFORMAT);
    b.count -= 2; /* one less: bytes left over */
    CHECK_INT(dsq_block_encode(cols, &b, &data, &n), DSQ_EFORMAT);
    b.count++;
    CHECK_INT(dsq_block_encode(cols, &b, &data, &n), 0);
    dsq_block_free_buf(&b);
}

/* Events cycling through 100 shapes: the first 64 a block meets are kept and
 * referred to, the others spelled out each time; all come back. A block of few
 * shapes keeps room for few (an open block per rank of a big job). */
static void test_shapes(void)
{
    dsq_block b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < 50; i++) {
        dsq_event ev = {.kind = DSQ_EV_DS_STEP, .t_us = i, .nf = 1};
        ev.f[0] = (dsq_field){.name = (uint32_t)(1 + i % 2), .v = i};
        CHECK_INT(dsq_block_add(&b, &ev), 0);
    }
    CHECK_INT(b.nshapes, 2);
    CHECK(b.shapes_cap >= 2 && b.shapes_cap <= 4);
    enum { N = 3000 };
    for (int pass = 0; pass < 2; pass++) { /* the second time in a reset block */
        dsq_block_reset(&b);
        for (int i = 0; i < N; i++) {
            dsq_event ev = {.kind = (uint16_t)(i % 100 % DSQ_EV_KIND_COUNT), .t_us = 1000 * i,
                            .line = (uint32_t)i, .nf = (uint8_t)(i % 100 % 5 + 1)};
            for (int f = 0; f < ev.nf; f++)
                ev.f[f] = (dsq_field){.name = (uint32_t)(i % 100 * 7 + f), .unit = (uint8_t)f,
                                      .v = i + f / 4.0};
            CHECK_INT(dsq_block_add(&b, &ev), 0);
        }
        CHECK_INT(b.nshapes, DSQ_BLOCK_SHAPES);
        CHECK_INT(b.shapes_cap, DSQ_BLOCK_SHAPES);
        dsq_block_iter it;
        dsq_event ev;
        unsigned char *v = iter_block(&b, &it);
        int k = 0, bad = 0;
        while (dsq_block_iter_next(&it, &ev) == 1) {
            bad += ev.kind != k % 100 % DSQ_EV_KIND_COUNT || ev.nf != k % 100 % 5 + 1 ||
                   ev.t_us != 1000 * k || ev.line != (uint32_t)k;
            for (int f = 0; f < ev.nf; f++)
                bad += ev.f[f].name != (uint32_t)(k % 100 * 7 + f) || ev.f[f].unit != f ||
                       ev.f[f].v != k + f / 4.0;
            k++;
        }
        CHECK_INT(k, N);
        CHECK_INT(bad, 0);
        free(v);
    }
    dsq_block_free_buf(&b);
}

static void test_kind_names(void)
{
    CHECK_STR(dsq_ev_kind_name(DSQ_EV_MEMORY), "memory");
    CHECK_STR(dsq_ev_kind_name(DSQ_EV_NONE), "none");
    CHECK_STR(dsq_ev_kind_name(DSQ_EV_KIND_COUNT), "?");
    CHECK_STR(dsq_ev_kind_name(-1), "?");
    CHECK_STR(dsq_ev_kind_name(60000), "?");
}

/* dsq_ev_decimal finds the e of dsq_num_put's loop (the block bytes stay the same),
 * and dsq_ev_num_put writes dsq_num_put's bytes, over decimals of every exponent,
 * their neighbours one ulp away, and the rest. */
static void test_decimal_matches_num_put(void)
{
    int wrong = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t r = rnd();
        double v;
        switch (i % 5) {
        case 0: v = (double)(int64_t)(r % 20000001 - 10000000) / dsq_pow10_small[r % 7 + 0]; break;
        case 1: v = (double)(int64_t)(r >> 10) / dsq_pow10_small[(r >> 3) % 7]; break;
        case 2: v = nextafter((double)(int64_t)(r % 100000) / 100, (r & 1) ? INFINITY : -INFINITY); break;
        case 3: memcpy(&v, &r, 8); break;
        default: v = (double)(float)((double)(r % 1000000) / 7919); break;
        }
        unsigned char a[16], b[16];
        size_t na = (size_t)(dsq_num_put(a, v) - a);
        int64_t m;
        int e = dsq_ev_decimal(v, &m);
        size_t nb = e >= 0 ? (size_t)(dsq_varint_put(b, dsq_zigzag(m) << 3 | (uint64_t)e) - b) : 9;
        if (e < 0)
            memcpy(b, a, 9); /* the raw form: only the decision is compared */
        wrong += (e < 0) != (a[0] == 7 && na == 9) || na != nb || memcmp(a, b, na) != 0;
        unsigned char c[16];
        wrong += (size_t)(dsq_ev_num_put(c, v) - c) != na || memcmp(a, c, na) != 0;
    }
    static const double odd[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 9007199254740992.0,
                                 9007199254740991.0, 1e-7, 0.1, 0.3, 1e300};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        unsigned char a[16];
        int64_t m;
        wrong += (dsq_ev_decimal(odd[i], &m) < 0) != (dsq_num_put(a, odd[i]) - a == 9);
        unsigned char c[16];
        size_t na = (size_t)(dsq_num_put(a, odd[i]) - a);
        wrong += (size_t)(dsq_ev_num_put(c, odd[i]) - c) != na || memcmp(a, c, na) != 0;
    }
    CHECK_INT(wrong, 0);
}

/* dsq_num_put's decision for v as dsq_ev_decimal reports it: e and m, or -1. */
static int num_put_form(double v, int64_t *m)
{
    unsigned char a[16];
    const unsigned char *p = a;
    size_t n = (size_t)(dsq_num_put(a, v) - a);
    uint64_t tag;
    if (n == 9 && a[0] == 7)
        return -1;
    if (dsq_varint_get(&p, a + n, &tag))
        return -2;
    *m = dsq_unzigzag(tag >> 3);
    return (int)(tag & 7);
}

/* One value against dsq_num_put's loop: the same e and the same m. */
static int decimal_differs(double v)
{
    int64_t m1 = 0, m2 = 0;
    int e1 = num_put_form(v, &m1), e2 = dsq_ev_decimal(v, &m2);
    if (e1 != e2 || (e1 >= 0 && m1 != m2)) {
        fprintf(stderr, "%.17g (%a): loop e %d m %lld, dsq_ev_decimal e %d m %lld\n", v, v, e1,
                (long long)m1, e2, (long long)m2);
        return 1;
    }
    return 0;
}

/* The edges of dsq_ev_decimal's shortcut (one product v * 10^6 under 2^50, its
 * nearest integer's trailing zeros) against the loop: mantissas near 2^50, 2^51
 * and 2^53 at every e, 15 to 17 significant digits, the decimal exponent changing,
 * tiny and subnormal values, and every neighbour a few ulps away. */
static void test_decimal_edges(void)
{
    int wrong = 0;
    static const double fixed[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 1e-7, -1e-7, 1e-6,
                                   5e-7, 1.5e-6, 0.1, 0.3, 0.7, 1.0, 10.0, 1e6, 1e15, 1e16,
                                   1e300, -1e300, 5e-324, -5e-324, 2.2250738585072014e-308,
                                   9007199254740992.0, 9007199254740991.0, 9007199254740993.0,
                                   1125899906842624.0, 1125899906.842624, 1125899906.842623,
                                   1125899906.842625, 2251799813.685248, 0.1234567890123456,
                                   123456789.123456, 9007199254.740991, 4503599627.370496,
                                   0.30000000000000004, 1.7976931348623157e308,
                                   4503599627370496.0, 4503599627370495.0, 2251799813685248.0,
                                   1125899906.0, 1125900000.0, 42.0, -7.0};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (int k = -3; k <= 3; k++) {
            double v = fixed[i];
            for (int j = 0; j < (k < 0 ? -k : k); j++)
                v = nextafter(v, k < 0 ? -INFINITY : INFINITY);
            wrong += decimal_differs(v);
            wrong += decimal_differs(-v);
        }
    for (int i = 0; i < 400000; i++) {
        uint64_t r = rnd();
        int e = (int)(r % 7);
        int64_t lim = (int64_t)1 << (50 + (int)((r >> 3) % 4)); /* 2^50 .. 2^53 */
        int64_t m;
        switch ((r >> 5) % 6) {
        case 0: m = lim / (int64_t)dsq_pow10_small[6 - e] - (int64_t)((r >> 8) % 2000) + 1000; break;
        case 1: m = lim - (int64_t)((r >> 8) % 5000); break;                  /* near the limit */
        case 2: m = (int64_t)((r >> 8) % 100000000000000000ull) % lim; break;  /* 15-17 digits */
        case 3: m = (int64_t)((r >> 8) % 1000) * (int64_t)dsq_pow10_small[(r >> 20) % 7]; break;
        case 4: m = (int64_t)(r >> 12); break;                                 /* past 2^53 too */
        default: m = (int64_t)((r >> 8) % 10000000); break;
        }
        double v = (double)m / dsq_pow10_small[e];
        if (r >> 63)
            v = -v;
        int k = (int)((r >> 40) % 5) - 2; /* a few ulps either way */
        for (int j = 0; j < (k < 0 ? -k : k); j++)
            v = nextafter(v, k < 0 ? -INFINITY : INFINITY);
        wrong += decimal_differs(v);
        if (i % 4 == 0)
            wrong += decimal_differs(v * 1e-10); /* tiny: nothing passes */
        if (wrong > 20)
            break;
    }
    CHECK_INT(wrong, 0);
}

/* Values kept in their series (dsq_block_add_ref): the block holds one marker byte
 * for each and numbers its events per kind from its starts; the values beside
 * them, and the column differences around a marker, come back bit for bit, in
 * rows and in columns; damaged starts and markers without a number are refused. */
static void test_in_series(void)
{
    for (int events = 6; events <= 600; events += 594) { /* rows, then columns */
        dsq_block b;
        memset(&b, 0, sizeof b);
        for (int i = 0; i < events; i++) {
            int other = i % 3 == 2; /* a second kind takes turns */
            dsq_event ev = {.kind = other ? DSQ_EV_DS_STEP : DSQ_EV_MEMORY, .t_us = 1000 + i,
                            .line = (uint32_t)i + 1, .nf = 3};
            for (int f = 0; f < 3; f++)
                ev.f[f] = (dsq_field){(uint32_t)(10 + f), 0, 1.25 * i + f};
            if (i == 1)
                ev.nf = 0; /* no fields: no number */
            dsq_num_form forms[DSQ_EV_MAXF];
            dsq_ev_forms(&ev, forms);
            uint32_t in_series = (i % 4 == 0) ? 5u : 2u; /* fields 0 and 2, or 1 */
            CHECK_INT(dsq_block_add_ref(&b, &ev, forms, ev.nf ? in_series : 0, other ? 7 : 100),
                      0);
        }
        dsq_block_iter it;
        unsigned char *v = iter_block(&b, &it);
        CHECK_INT(it.rows, events < 100);
        dsq_event ev;
        uint64_t next[2] = {100, 7};
        for (int i = 0; i < events; i++) {
            CHECK_INT(dsq_block_iter_next(&it, &ev), 1);
            int other = i % 3 == 2;
            if (i == 1) {
                CHECK(it.event == UINT64_MAX && it.in_series == 0 && ev.nf == 0);
                continue;
            }
            CHECK(it.event == next[other]++);
            uint32_t in_series = (i % 4 == 0) ? 5u : 2u;
            CHECK_INT(it.in_series, in_series);
            for (int f = 0; f < 3; f++) {
                if (in_series >> f & 1)
                    CHECK(isnan(ev.f[f].v));
                else
                    CHECK(ev.f[f].v == 1.25 * i + f);
            }
        }
        CHECK_INT(dsq_block_iter_next(&it, &ev), 0);
        size_t n;
        free(v);
        v = stored_value(&b, &n);
        truncations_refused(v, n, b.t_first);
        free(v);
        dsq_block_free_buf(&b);
    }
    /* hand-made: an event of kind 1 with one field in its series, as rows */
    const unsigned char ok[] = {1, 0, 1, 1, 9, 0, 1, 1, 5, 0, 0, 0, 0, 0, DSQ_VAL_IN_SERIES};
    dsq_block_iter it;
    dsq_event ev;
    CHECK_INT(dsq_block_iter_init(&it, ok, sizeof ok, 0), 0);
    CHECK_INT(dsq_block_iter_next(&it, &ev), 1);
    CHECK(it.event == 9 && it.in_series == 1 && isnan(ev.f[0].v));
    unsigned char bad[sizeof ok];
    memcpy(bad, ok, sizeof ok);
    bad[3] = DSQ_EV_KIND_COUNT; /* a start of no kind */
    CHECK_INT(decode_all(bad, sizeof bad, 0), DSQ_EFORMAT);
    memcpy(bad, ok, sizeof ok);
    bad[3] = 2; /* the start is of another kind: the marker has no number */
    CHECK_INT(decode_all(bad, sizeof bad, 0), DSQ_EFORMAT);
    const unsigned char twice[] = {1, 0, 2, 1, 9, 1, 9, 0, 1, 1, 5, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    CHECK_INT(decode_all(twice, sizeof twice, 0), DSQ_EFORMAT); /* a kind started twice */
    const unsigned char many[] = {1, 0, DSQ_EV_KIND_COUNT + 1};
    CHECK_INT(decode_all(many, sizeof many, 0), DSQ_EFORMAT);
}

TEST_MAIN(T(test_decimal_matches_num_put), T(test_decimal_edges), T(test_round_trip), T(test_full_event), T(test_every_truncation), T(test_damaged),
          T(test_column_deltas), T(test_encode_refuses_damaged_rows), T(test_shapes), T(test_kind_names),
          T(test_in_series))
