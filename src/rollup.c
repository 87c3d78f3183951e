/* Rollups (see rollup.h).
 *
 * Chunk encoding (schema 8). A chunk is a run of segments, each
 *   header       byte k << 4 | E, then the count of its pairs (1..65535) in two
 *                bytes, little-endian
 *   per pair     time, k < 15: zigzag varint of the change of the time step, in
 *                units of 10^k (k is 6, 3 or 0: every time of the segment is a
 *                multiple of 10^k, as logs print seconds or milliseconds;
 *                DSQ_TIME_NONE is not). Times are 64-bit two's complement, the
 *                step before the first is 0 and the time before it 0, so the first
 *                pair holds its whole time.
 *                time, k = 14 (a run of events): none. The header goes on with the
 *                varint of a kind and the varint of an event number e: the
 *                segment's pairs are of e and the events after it, one by one.
 *                time, k = 15 (pairs by event): the pair's event, the n-th of its
 *                kind's events with fields in the same (run, host, rank, source),
 *                whose times the kind's times series keeps (see below). A segment
 *                names up to 3 kinds, slots 0..2 in the order they come; per pair
 *                the varint zigzag(d) << 2 | slot, d the change of the step from
 *                the slot's previous event number to this one (0 and 0 before
 *                the first); slot 3 brings in a kind: the varint of the kind
 *                follows and it takes the next slot, then d as for that slot.
 *                value, E < 7: every value of the segment is m / 10^E exactly, with
 *                |m| < 2^53; the zigzag varint of m minus the previous m (0 first).
 *                value, E = 7: each value on its own: a decimal m / 10^e (e < 7) as
 *                the varint zigzag(m) << 3 | e (varint.h's packed number), else the
 *                byte 7 | z << 3 and, when z < 8, the varint of x >> 8z, where x is
 *                the value's bits XOR the previous value's bits and z the count of
 *                x's low zero bytes (doubles printed from floats end in zero bytes).
 *                E = 8 (k < 15): no value; the chunks of a kind's times series
 *                hold only times, one per event of that kind with fields.
 * Pairs are encoded as they come: a segment's k and E are those of its first pair
 * (E at least the previous segment's), and a pair whose time or value does not fit
 * them starts a new segment. E only grows and ends at 7, so a chunk has few
 * segments, and the builder holds encoded bytes only (no pairs waiting).
 * Every segment starts afresh (times, steps, event numbers and values from 0).
 * Decoding computes m / 10^e as the encoder checked it, so every double comes back
 * bit for bit; every byte is checked against the chunk's end. Steady step times
 * and slowly moving values take one or two bytes each, so chunks are stored
 * without zstd unless they are big (store.c).
 *
 * Times by event. An event's fields (about five of DeepSpeed's or HF's lines) all
 * have the event's time: stored with each field's values it was a third to a half
 * of the chunks' bytes after zstd (times to the millisecond). So the times of a
 * kind's events with fields are kept once, in its times series (field
 * DSQ_SERIES_TIMES_BASE + kind: their count, span and times), and a field
 * series' values say which event they came from: a chunk starts with runs of
 * events (k 14: nothing per value), and once a value is not of the event after
 * the one before (a field not in every event of its kind, or printed by lines of
 * two kinds, as HF's and DeepSpeed's `epoch` taking turns) the rest of the chunk
 * names each value's event (k 15: one byte, nearly always the same, which zstd
 * all but removes). Queries that need no times (percentiles) read only the
 * values.
 *
 * The builder keeps one source's series in an open-addressing table keyed by
 * (field, host, rank); each series has a summary and a chunk that is written out
 * when its bytes reach CHUNK_BYTES. Buffers are kept for the next source.
 */
#include "rollup.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "error.h"
#include "num.h"
#include "timeconv.h"
#include "varint.h"

#define MAX_ATTRS 256
/* bytes one encoded pair takes at most: its time or event (and a kind it brings in),
 * then a value's tag byte and varint */
#define PAIR_MAX (3 * DSQ_VARINT_MAX + 1)
#define SEG_HDR 3
/* a segment header with a run's kind and first event */
#define SEG_HDR_MAX (SEG_HDR + 2 * DSQ_VARINT_MAX)
#define SEG_PAIRS 65535
/* A chunk is written once its encoded bytes reach this: big values waste little of
 * their last LMDB overflow page (zstd packs them further, store.c). */
#define CHUNK_BYTES 32768
/* A series with no chunk written keeps up to this many bytes of pairs in its own
 * record (most series of a per-rank file are a few values). */
#define OWN_PAIRS_BYTES 512

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

#define K_RUN 14      /* a segment's k: pairs of a run of events (see the top) */
#define K_BY_EVENT 15 /* a segment's k: pairs by event number */
#define SLOT_NEW 3    /* a pair by event whose kind comes next (slots 0..2 named) */
#define E_NONE 8      /* a segment's E: no values (a kind's times) */
/* Rarely taken paths of the per-value code, kept out of its registers and lines. */
#define COLD __attribute__((noinline, cold))

static const int64_t time_scale[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};

/* A pair's time as the segments need it: the largest scale 10^k (6, 3 or 0) t is a
 * multiple of, and t / 10^k for each k. Found once per event, for its kind's times. */
typedef struct pair_time {
    int64_t x[7]; /* t / 10^k at k 0, 3 and 6 */
    int k;
} pair_time;

static void pair_time_of(pair_time *pt, int64_t t)
{
    pt->x[0] = t;
    pt->x[3] = t / 1000;
    pt->x[6] = t / 1000000;
    pt->k = pt->x[6] * 1000000 == t ? 6 : pt->x[3] * 1000 == t ? 3 : 0;
}

/* One value in form 7, whose form is f; *prev holds the previous value's bits. */
static unsigned char *put_value_alone(unsigned char *p, double v, const dsq_num_form *f,
                                      uint64_t *prev)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    uint64_t x = bits ^ *prev;
    *prev = bits;
    if (f->e >= 0)
        return dsq_varint_put(p, dsq_zigzag(f->m) << 3 | (uint64_t)f->e);
    unsigned z = x ? (unsigned)__builtin_ctzll(x) / 8 : 8;
    *p++ = (unsigned char)(7 | z << 3);
    return z < 8 ? dsq_varint_put(p, x >> (8 * z)) : p;
}

/* Whether v is m / 10^vm exactly with |m| < 2^53 (*m set): the test of
 * dsq_ev_decimal at vm alone (v being decimal at a smaller e is no matter). */
COLD static int fits_form_test(double v, int vm, int64_t *m)
{
    double s = v * dsq_pow10_small[vm];
    if (!(fabs(s) < 9007199254740992.0) || (v == 0 && signbit(v)))
        return 0;
    *m = (int64_t)(s < 0 ? s - 0.5 : s + 0.5);
    return fabs(s - (double)*m) <= fabs(s) * 0x1p-50 && (double)*m / dsq_pow10_small[vm] == v;
}

static const int64_t pow10_int[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};
/* the m of a form whose m * 10^d stays under 2^50 */
static const int64_t scale_max[7] = {
    (1ll << 50) - 1,           ((1ll << 50) - 1) / 10,     ((1ll << 50) - 1) / 100,
    ((1ll << 50) - 1) / 1000,   ((1ll << 50) - 1) / 10000,  ((1ll << 50) - 1) / 100000,
    ((1ll << 50) - 1) / 1000000};

/* fits_form_test from v's form f (e, m), without its multiply and division: the
 * test fails at vm below e (e is the smallest that passes) and for e -1 (NaN, -0,
 * or nothing passes below a product past 2^53, which stays past it). At vm >= e,
 * m' = m 10^(vm - e) gives m' / 10^vm == v as m / 10^e does (the same rational,
 * correctly rounded), and when |m'| < 2^50, v * 10^vm is within |m'| 2^-52 (under
 * 1/4) of m', so the test rounds it to m' and passes. Past 2^50: the test itself. */
static inline int fits_form(double v, const dsq_num_form *f, int vm, int64_t *m)
{
    if (f->e < 0 || f->e > vm)
        return 0;
    int d = vm - f->e;
    if (f->m <= scale_max[d] && f->m >= -scale_max[d]) {
        *m = f->m * pow10_int[d];
        return 1;
    }
    return fits_form_test(v, vm, m);
}

/* Writes the open segment's pair count into its header in buf (c's or a copy). */
static void put_seg_count(const dsq_chunk *c, unsigned char *buf)
{
    if (c->seg_n) {
        buf[c->seg_at + 1] = (unsigned char)c->seg_n;
        buf[c->seg_at + 2] = (unsigned char)(c->seg_n >> 8);
    }
}

static void close_segment(dsq_chunk *c)
{
    put_seg_count(c, c->buf);
    c->seg_n = 0;
}

/* The bytes c would have once finished, into out (c->len of them), c left open
 * for more pairs. */
static void chunk_snapshot(const dsq_chunk *c, unsigned char *out)
{
    memcpy(out, c->buf, c->len);
    put_seg_count(c, out);
}

/* Starts a segment of time scale k (K_BY_EVENT: pairs by event; K_RUN: a run of
 * events from `event` of `kind`) for the value v of form f (NULL: times alone); *m
 * is v's mantissa at E when E < 7. */
COLD static void open_segment(dsq_chunk *c, int k, uint32_t kind, uint64_t event, double v,
                              const dsq_num_form *f, int64_t *m)
{
    int vm = c->seg_n && c->vm < 7 ? c->vm : 0; /* E only grows within a chunk */
    close_segment(c);
    if (!f) {
        vm = E_NONE;
    } else if (f->e < 0) {
        vm = 7;
    } else if (f->e >= vm || !fits_form(v, f, vm, m)) {
        vm = f->e;
        *m = f->m; /* the test at e rounds to dsq_ev_decimal's m */
    }
    c->k = (uint8_t)k;
    c->vm = (uint8_t)vm;
    c->nkinds = 0;
    c->x = c->dx = c->m = c->bits = 0;
    c->seg_at = c->len;
    c->buf[c->len] = (unsigned char)(k << 4 | vm);
    c->len += SEG_HDR;
    if (k == K_RUN) {
        c->kinds[0] = kind;
        c->ex[0] = event;
        unsigned char *p = dsq_varint_put(c->buf + c->len, kind);
        c->len = (size_t)(dsq_varint_put(p, event) - c->buf);
    }
}

/* Room for one more pair and a segment header. 0 or DSQ_ENOMEM. A buffer grows by
 * 128 bytes from 256 to 1 kB, else twice: a launcher log of 8,192 ranks keeps
 * 124,000 chunks of up to OWN_PAIRS_BYTES open (rollup.c, put_summaries), ~300
 * bytes each, and doubling gave them 67 MB of buffers for 35 MB. */
COLD static int chunk_grow(dsq_chunk *c)
{
    size_t need = c->len + SEG_HDR_MAX + PAIR_MAX;
    size_t cap = !c->cap ? 64 /* most series of a big job hold a few values */
                 : c->cap >= 256 && c->cap < 1024 ? c->cap + 128
                                                  : c->cap * 2;
    unsigned char *n = realloc(c->buf, cap > need ? cap : need);
    if (!n)
        return DSQ_ENOMEM;
    c->buf = n;
    c->cap = cap > need ? cap : need;
    return 0;
}

/* Whether v (bits vb, form f) fits the open segment's value form, *m set to its
 * mantissa there; the value of the pair before, again (a steady learning rate),
 * has the same mantissa. */
static inline int value_fits(const dsq_chunk *c, double v, uint64_t vb, const dsq_num_form *f,
                             int64_t *m)
{
    if (c->vm >= 7)
        return c->vm == 7;
    if (vb == c->last_bits) {
        *m = (int64_t)c->m;
        return 1;
    }
    return fits_form(v, f, c->vm, m);
}

/* Writes v (bits vb, mantissa m in the segment's form) at p after its pair's time.
 * The state is read and written before the bytes go out (byte stores may alias it). */
static inline unsigned char *put_value(dsq_chunk *c, unsigned char *p, double v, uint64_t vb,
                                       int64_t m, const dsq_num_form *f)
{
    int vm = c->vm;
    uint64_t dm = (uint64_t)m - c->m;
    if (vm < 7)
        c->m = (uint64_t)m;
    c->last_bits = vb;
    c->seg_n++;
    c->count++;
    if (vm == 7)
        return put_value_alone(p, v, f, &c->bits);
    return dsq_varint_put(p, dsq_zigzag((int64_t)dm));
}

/* dsq_chunk_add with the pair's time found (pair_time_of) and v's form f (the
 * builder writes values by event: chunk_put_by_event). */
static int chunk_put(dsq_chunk *c, const pair_time *pt, double v, const dsq_num_form *f)
{
    if (c->len + SEG_HDR_MAX + PAIR_MAX > c->cap && chunk_grow(c))
        return DSQ_ENOMEM;
    int64_t m = 0;
    uint64_t vb;
    memcpy(&vb, &v, 8);
    /* a segment holds times of its scale and values of its form */
    if (!c->seg_n || c->seg_n == SEG_PAIRS || pt->k < c->k || !value_fits(c, v, vb, f, &m))
        open_segment(c, pt->k, 0, 0, v, f, &m);
    uint64_t x = (uint64_t)pt->x[c->k], dx = x - c->x, ddx = dx - c->dx;
    c->x = x;
    c->dx = dx;
    unsigned char *buf = c->buf, *p = buf + c->len;
    p = dsq_varint_put(p, dsq_zigzag((int64_t)ddx));
    c->len = (size_t)(put_value(c, p, v, vb, m, f) - buf);
    return 0;
}

/* The slot of `kind` in the open segment of pairs by event: -1 when it is new
 * (SLOT_NEW), -2 when the segment has no room for it. */
static inline int kind_slot(const dsq_chunk *c, uint32_t kind)
{
    for (int i = 0; i < c->nkinds; i++)
        if (c->kinds[i] == kind)
            return i;
    return c->nkinds < SLOT_NEW ? -1 : -2;
}

/* chunk_put of a value of event number `event` among the events of `kind` (with
 * fields) of the series' run, host, rank and source: its time is that event's.
 * Inline in the builder's loop over an event's fields: one call per value cost
 * more than its common path (a value that goes on its segment). */
__attribute__((always_inline)) static inline int chunk_put_by_event(dsq_chunk *c, uint32_t kind,
                                                                    uint64_t event, double v,
                                                                    const dsq_num_form *f)
{
    if (c->len + SEG_HDR_MAX + PAIR_MAX > c->cap && chunk_grow(c))
        return DSQ_ENOMEM;
    int64_t m = 0;
    uint64_t vb;
    memcpy(&vb, &v, 8);
    int slot = -2;
    if (!c->runs_end) {
        if (c->seg_n && c->k == K_RUN && (c->kinds[0] != kind || event != c->ex[0] + 1)) {
            c->runs_end = 1; /* not the next event: events named from here on */
        } else {
            if (!c->seg_n || c->k != K_RUN || c->seg_n == SEG_PAIRS || !value_fits(c, v, vb, f, &m))
                open_segment(c, K_RUN, kind, event, v, f, &m);
            c->ex[0] = event;
            c->len = (size_t)(put_value(c, c->buf + c->len, v, vb, m, f) - c->buf);
            return 0;
        }
    }
    if (!c->seg_n || c->seg_n == SEG_PAIRS || c->k != K_BY_EVENT ||
        (slot = kind_slot(c, kind)) == -2 || !value_fits(c, v, vb, f, &m)) {
        open_segment(c, K_BY_EVENT, 0, 0, v, f, &m);
        slot = -1;
    }
    int is_new = slot < 0;
    if (is_new) { /* the kind's first pair in the segment: its step starts at 0 */
        slot = c->nkinds++;
        c->kinds[slot] = kind;
        c->ex[slot] = c->edx[slot] = 0;
    }
    uint64_t d = event - c->ex[slot], dd = d - c->edx[slot];
    c->ex[slot] = event;
    c->edx[slot] = d;
    unsigned char *buf = c->buf, *p = buf + c->len;
    p = dsq_varint_put(p, dsq_zigzag((int64_t)dd) << 2 | (uint64_t)(is_new ? SLOT_NEW : slot));
    if (is_new)
        p = dsq_varint_put(p, kind);
    c->len = (size_t)(put_value(c, p, v, vb, m, f) - buf);
    return 0;
}

/* Appends the time of a kind's next event with fields to its times series' chunk. */
static int chunk_put_time(dsq_chunk *c, const pair_time *pt)
{
    if (c->len + SEG_HDR_MAX + PAIR_MAX > c->cap && chunk_grow(c))
        return DSQ_ENOMEM;
    if (!c->seg_n || c->seg_n == SEG_PAIRS || pt->k < c->k || c->vm != E_NONE)
        open_segment(c, pt->k, 0, 0, 0, NULL, NULL);
    uint64_t x = (uint64_t)pt->x[c->k], dx = x - c->x, ddx = dx - c->dx;
    c->x = x;
    c->dx = dx;
    c->seg_n++;
    c->count++;
    c->len = (size_t)(dsq_varint_put(c->buf + c->len, dsq_zigzag((int64_t)ddx)) - c->buf);
    return 0;
}

int dsq_chunk_add(dsq_chunk *c, int64_t t, double v)
{
    pair_time pt;
    dsq_num_form f;
    pair_time_of(&pt, t);
    f.e = dsq_ev_decimal(v, &f.m);
    return chunk_put(c, &pt, v, &f);
}

int dsq_chunk_add_event(dsq_chunk *c, uint32_t kind, uint64_t event, double v)
{
    dsq_num_form f;
    f.e = dsq_ev_decimal(v, &f.m);
    return chunk_put_by_event(c, kind, event, v, &f);
}

void dsq_chunk_finish(dsq_chunk *c) { close_segment(c); }

void dsq_chunk_reset(dsq_chunk *c)
{
    c->runs_end = 0;
    c->len = 0;
    c->count = c->seg_n = 0;
}

void dsq_chunk_free(dsq_chunk *c)
{
    free(c->buf);
    memset(c, 0, sizeof *c);
}

_Static_assert(DSQ_CHUNK_ONE_MAX >= SEG_HDR_MAX + PAIR_MAX, "room for one pair");

size_t dsq_chunk_one(unsigned char *out, int64_t t, double v)
{
    dsq_chunk c = {.buf = out, .cap = DSQ_CHUNK_ONE_MAX}; /* room enough: never grown */
    dsq_chunk_add(&c, t, v);
    dsq_chunk_finish(&c);
    return c.len;
}

void dsq_chunk_iter_init(dsq_chunk_iter *it, const void *data, size_t n)
{
    memset(it, 0, sizeof *it);
    it->p = data;
    it->end = n ? it->p + n : it->p; /* data may be NULL when n is 0 */
    it->scale = 1;
}

/* Reads the next segment's header. 0 or -1. */
static int next_segment(dsq_chunk_iter *it)
{
    if (it->end - it->p < SEG_HDR)
        return -1;
    unsigned hdr = it->p[0], count = it->p[1] | (unsigned)it->p[2] << 8;
    unsigned k = hdr >> 4, e = hdr & 15;
    it->p += SEG_HDR;
    if ((k > 6 && k < K_RUN) || e > E_NONE || (k >= K_RUN && e == E_NONE) || count == 0)
        return -1;
    it->by_event = k >= K_RUN;
    it->run = k == K_RUN;
    it->nkinds = 0;
    uint64_t kind = 0, first = 0;
    if (it->run && (dsq_varint_get(&it->p, it->end, &kind) || kind > UINT32_MAX ||
                    dsq_varint_get(&it->p, it->end, &first)))
        return -1;
    if (!it->by_event)
        it->scale = time_scale[k];
    it->vmode = (uint8_t)e;
    it->left = (uint32_t)count;
    it->x = it->dx = it->m = it->bits = 0;
    it->kind = (uint32_t)kind;
    it->event = first - 1; /* a run's: one before its first */
    return 0;
}

/* A value of form 7 (see the top). 0 or -1. */
static int get_value_alone(dsq_chunk_iter *it, double *v)
{
    uint64_t tag, y = 0;
    if (dsq_varint_get(&it->p, it->end, &tag))
        return -1;
    if ((tag & 7) < 7) {
        *v = (double)dsq_unzigzag(tag >> 3) / dsq_pow10_small[tag & 7];
        memcpy(&it->bits, v, 8);
        return 0;
    }
    unsigned z = (unsigned)(tag >> 3);
    if (z > 8 || (z < 8 && (dsq_varint_get(&it->p, it->end, &y) || (z && y >> (64 - 8 * z)))))
        return -1;
    it->bits ^= z < 8 ? y << (8 * z) : 0;
    memcpy(v, &it->bits, 8);
    return 0;
}

int dsq_chunk_iter_next(dsq_chunk_iter *it, int64_t *t, double *v)
{
    uint64_t dd, dm;
    if (it->left == 0) {
        if (it->p == it->end)
            return 0;
        if (next_segment(it))
            return DSQ_EFORMAT;
    }
    if (it->run) {
        it->event++;
        *t = DSQ_TIME_NONE;
    } else if (dsq_varint_get(&it->p, it->end, &dd)) {
        return DSQ_EFORMAT;
    } else if (it->by_event) {
        unsigned slot = (unsigned)(dd & 3);
        if (slot == SLOT_NEW) {
            uint64_t kind;
            if (it->nkinds == SLOT_NEW || dsq_varint_get(&it->p, it->end, &kind) ||
                kind > UINT32_MAX)
                return DSQ_EFORMAT;
            slot = it->nkinds++;
            it->kinds[slot] = (uint32_t)kind;
            it->ex[slot] = it->edx[slot] = 0;
        } else if (slot >= it->nkinds) {
            return DSQ_EFORMAT;
        }
        it->edx[slot] += (uint64_t)dsq_unzigzag(dd >> 2);
        it->ex[slot] += it->edx[slot];
        it->kind = it->kinds[slot];
        it->event = it->ex[slot];
        *t = DSQ_TIME_NONE;
    } else {
        it->dx += (uint64_t)dsq_unzigzag(dd);
        it->x += it->dx;
        *t = (int64_t)(it->x * (uint64_t)it->scale);
    }
    if (it->vmode == E_NONE) {
        *v = 0;
    } else if (it->vmode == 7) {
        if (get_value_alone(it, v))
            return DSQ_EFORMAT;
    } else {
        if (dsq_varint_get(&it->p, it->end, &dm))
            return DSQ_EFORMAT;
        it->m += (uint64_t)dsq_unzigzag(dm);
        *v = (double)(int64_t)it->m / dsq_pow10_small[it->vmode];
    }
    it->left--;
    return 1;
}

/* --- the builder --------------------------------------------------------------- */

typedef struct open_series {
    uint32_t field, host;
    int32_t rank;
    uint32_t ix_at;       /* its slot in the index (series_ix) */
    uint32_t nchunks;
    uint64_t kinds;       /* a field's: the kinds its values came from, a bit each */
    int needed;           /* a kind's times: a field's values kept in pairs name its events,
                             or a checkpoint put it (its record is made whole at the end) */
    dsq_series_rec rec;
    dsq_chunk chunk;
} open_series;

/* The series of an event of (host, rank, form): s[0] its kind's, s[1 + i] its
 * field i's (NULL when unknown). kind UINT32_MAX: an empty set. */
#define MEMO_SETS 256 /* memo_for takes a hash's top 8 bits */
typedef struct memo_set {
    uint32_t host;
    int32_t rank;
    uint32_t kind, f0; /* the event's kind and first field name */
    uint32_t gen;      /* the set holds its tag's series while this is the rollup's */
    open_series *s[2 + DSQ_EV_MAXF];
} memo_set;
#define MEMO_TIMES (1 + DSQ_EV_MAXF) /* the slot of the kind's times */

typedef struct open_attr {
    uint32_t name;
    dsq_attr_rec rec;
} open_attr;

/* A slot of the index of a source's series: (field, host, rank) -> where. Probes
 * read these 16 bytes, not the series (270 bytes each): a launcher log of 2,048
 * ranks has 100,000 series, and the index of them stays in the caches. */
typedef struct series_slot {
    uint32_t field, host; /* field 0: a free slot */
    int32_t rank;
    uint32_t at;          /* the series' place in tab */
} series_slot;

struct dsq_rollup {
    dsq_store *st;
    uint32_t run, source;
    open_series *tab; /* the source's n series in the order they came; the tab_cap - n
                         after them keep their chunk buffers for the next ones */
    size_t n, tab_cap;
    series_slot *ix;  /* open addressing, at most half full */
    size_t cap;       /* its slots: a power of two */
    open_attr attrs[MAX_ATTRS];
    int nattrs;
    uint32_t failure_name; /* dictionary id of "failure" */
    /* the series of the last event of each (host, rank, form) seen, by a hash of it:
     * the next event of the same form finds its series here, also when ranks or
     * forms take turns in a file */
    memo_set memo[MEMO_SETS];
    uint32_t memo_gen; /* sets of another generation are empty (memo_forget) */
    /* the source's series were let go of after a checkpoint (dsq_rollup_let_go):
     * a series taken anew continues its summary and chunks from the index */
    int resumed;
    uint64_t *gone;      /* ... a bit for each series let go of, by a hash of its key: a
                            series without one is new, and needs no lookup (of 580,000
                            on a log of 8,192 ranks, 175,000 found nothing) */
    int fail;            /* why series_for gave NULL: DSQ_ENOMEM or a read error */
    dsq_error fail_err;  /* ... the read error */
    unsigned char *own;  /* a series read back: its own pairs */
    size_t own_cap;
    unsigned char snap[OWN_PAIRS_BYTES]; /* a checkpoint: an open chunk's pairs so far */
    /* a source of ORDER_MIN series or more: tab[0..norder) in key order (put_order) */
    struct order_ent *order, *order_tmp;
    size_t norder, order_cap;
};

/* Forgets every memo also in the middle of an event (the table moved: the set in
 * use must not hand out its old pointers). */
static void memo_clear(dsq_rollup *r)
{
    r->memo_gen = 1;
    for (int i = 0; i < MEMO_SETS; i++) {
        r->memo[i].gen = 0;
        memset(r->memo[i].s, 0, sizeof r->memo[i].s);
    }
}

/* Forgets every memo set at the start of a source: the next event re-tags (and
 * empties) its own. A new generation, not a pass over the 40 kB of sets at every
 * source (a per-rank archive has tens of thousands of small sources). */
static void memo_forget(dsq_rollup *r)
{
    if (++r->memo_gen == 0)
        memo_clear(r);
}

int dsq_rollup_new(dsq_store *st, dsq_rollup **out)
{
    dsq_rollup *r = calloc(1, sizeof *r);
    if (!r)
        return DSQ_ENOMEM;
    r->st = st;
    r->cap = 128;
    r->tab_cap = 64;
    r->failure_name = dsq_dict_intern(dsq_store_dict(st), "failure", 7);
    memo_clear(r);
    if (!(r->tab = calloc(r->tab_cap, sizeof *r->tab)) || !(r->ix = calloc(r->cap, sizeof *r->ix))) {
        free(r->tab);
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
    for (size_t i = 0; i < r->tab_cap; i++)
        dsq_chunk_free(&r->tab[i].chunk);
    free(r->tab);
    free(r->ix);
    free(r->own);
    free(r->gone);
    free(r->order);
    free(r->order_tmp);
    free(r);
}

/* The hash of a series' key (field, host, rank), mixed whole (a multiply of field
 * and host alone, then rank, left long runs of taken slots: 2.8 probes a lookup on
 * a log of 256 ranks). */
static uint64_t key_hash(uint32_t field, uint32_t host, int32_t rank)
{
    return dsq_mix64(((uint64_t)field << 32 | host) ^ (uint64_t)(uint32_t)rank * 0x9e3779b97f4a7c15ull);
}

/* The index slot of (field, host, rank): the one holding it, or the free one where
 * it goes. */
static size_t slot(const dsq_rollup *r, uint32_t field, uint32_t host, int32_t rank)
{
    size_t i = (size_t)key_hash(field, host, rank) & (r->cap - 1);
    const series_slot *x = r->ix;
    while (x[i].field && (x[i].field != field || x[i].host != host || x[i].rank != rank))
        i = (i + 1) & (r->cap - 1);
    return i;
}

/* Lets go of every series: series_for makes a slot anew when it takes it,
 * clearing what must start empty (clearing every slot whole, 270 bytes each with
 * its chunk's state, was 2 % of indexing a per-rank archive). */
static void forget_series(dsq_rollup *r)
{
    for (size_t k = 0; k < r->n; k++) /* every slot taken is let go: no probe run breaks */
        r->ix[r->tab[k].ix_at].field = 0;
    r->n = 0;
    r->norder = 0;
    memo_forget(r);
}

#define GONE_BITS ((size_t)1 << 22) /* 512 kB: 7 % of lookups for nothing at 300,000 */

static size_t gone_bit(uint32_t field, uint32_t host, int32_t rank)
{
    return (size_t)(key_hash(field, host, rank) >> 20) & (GONE_BITS - 1);
}

void dsq_rollup_begin(dsq_rollup *r, uint32_t run, uint32_t source)
{
    forget_series(r);
    r->nattrs = 0;
    if (r->resumed && r->gone)
        memset(r->gone, 0, GONE_BITS / 8);
    r->resumed = 0;
    r->run = run;
    r->source = source;
}

size_t dsq_rollup_series(const dsq_rollup *r) { return r->n; }

/* A source of more series than this lets go of its table and their chunk buffers
 * at its end (dsq_rollup_trim); a source of fewer keeps them for the next. */
#define KEEP_SERIES 8192

size_t dsq_rollup_held(const dsq_rollup *r)
{
    size_t n = r->tab_cap * sizeof *r->tab + r->cap * sizeof *r->ix;
    for (size_t i = 0; i < r->tab_cap; i++)
        n += r->tab[i].chunk.cap;
    return n;
}

void dsq_rollup_trim(dsq_rollup *r)
{
    if (r->tab_cap <= KEEP_SERIES)
        return;
    open_series *tab = calloc(64, sizeof *tab);
    series_slot *ix = calloc(128, sizeof *ix);
    if (!tab || !ix) { /* kept as they are */
        free(tab);
        free(ix);
        return;
    }
    for (size_t i = 0; i < r->tab_cap; i++)
        dsq_chunk_free(&r->tab[i].chunk);
    free(r->tab);
    free(r->ix);
    r->tab = tab;
    r->tab_cap = 64;
    r->ix = ix;
    r->cap = 128;
    r->n = 0;
    r->norder = 0;
    memo_clear(r);
}

void dsq_rollup_let_go(dsq_rollup *r)
{
    if (!r->gone)
        r->gone = calloc(GONE_BITS / 8, 1); /* none: every new series is looked up */
    for (size_t k = 0; r->gone && k < r->n; k++) {
        size_t b = gone_bit(r->tab[k].field, r->tab[k].host, r->tab[k].rank);
        r->gone[b / 64] |= 1ull << (b % 64);
    }
    forget_series(r);
    r->resumed = 1;
}

/* Doubles the index (the series stay where they are). */
static int grow_ix(dsq_rollup *r)
{
    size_t cap = r->cap * 2;
    series_slot *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return DSQ_ENOMEM;
    free(r->ix);
    r->ix = ix;
    r->cap = cap;
    for (size_t k = 0; k < r->n; k++) {
        open_series *s = &r->tab[k];
        size_t i = slot(r, s->field, s->host, s->rank);
        ix[i] = (series_slot){s->field, s->host, s->rank, (uint32_t)k};
        s->ix_at = (uint32_t)i;
    }
    return 0;
}

/* Doubles the series' room: they move, so every memo is forgotten. */
static int grow_tab(dsq_rollup *r)
{
    size_t cap = r->tab_cap * 2;
    open_series *tab = realloc(r->tab, cap * sizeof *tab);
    if (!tab)
        return DSQ_ENOMEM;
    memset(tab + r->tab_cap, 0, (cap - r->tab_cap) * sizeof *tab);
    r->tab = tab;
    r->tab_cap = cap;
    memo_clear(r);
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
    dsq_chunk_finish(&s->chunk);
    int rc = dsq_store_chunk_put(r->st, &k, s->nchunks++, s->chunk.buf, s->chunk.len, err);
    dsq_chunk_reset(&s->chunk);
    return rc;
}

/* Adds the pairs of a record (a whole checkpoint's) to s's empty chunk, as they
 * were added: a field's by event, a kind's times by time. 0, or -1 when they are
 * not pairs of s's kind of series (or out of memory): the chunk is emptied. */
static int reload_pairs(open_series *s, const unsigned char *pairs, size_t n)
{
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int got, times = s->field >= DSQ_SERIES_TIMES_BASE;
    dsq_chunk_iter_init(&it, pairs, n);
    while ((got = dsq_chunk_iter_next(&it, &t, &v)) == 1) {
        pair_time pt;
        if (times ? it.by_event : !it.by_event || it.kind >= DSQ_EV_KIND_COUNT)
            break;
        if (times)
            pair_time_of(&pt, t);
        if (times ? chunk_put_time(&s->chunk, &pt)
                  : dsq_chunk_add_event(&s->chunk, it.kind, it.event, v))
            break;
        if (!times)
            s->kinds |= 1ull << it.kind;
    }
    if (got == 0 && s->chunk.count)
        return 0;
    dsq_chunk_reset(&s->chunk);
    return -1;
}

/* A series let go of (dsq_rollup_let_go) taken again: its summary and chunk count
 * as the checkpoint wrote them, so its values go on from there (the same sums as
 * when it was kept). Pairs kept in its record (a whole checkpoint keeps a few
 * there) go back into its open chunk, so the source's last put stores what one
 * that kept the series would (a record that does not read back becomes its first
 * chunk); a kind's times read back are written again at the end. 0 or an error
 * (r->fail_err). */
static int resume_series(dsq_rollup *r, open_series *s)
{
    dsq_series_key k = key_of(r, s);
    size_t npairs = 0;
    int found = dsq_store_series_get(r->st, &k, &s->rec, &r->own, &npairs, &r->own_cap, &r->fail_err);
    if (found < 0)
        return found;
    if (!found) {
        memset(&s->rec, 0, sizeof s->rec);
        return 0;
    }
    s->nchunks = s->rec.nchunks;
    s->needed = s->field >= DSQ_SERIES_TIMES_BASE;
    if (npairs && reload_pairs(s, r->own, npairs) != 0) {
        int rc = dsq_store_chunk_put(r->st, &k, s->nchunks++, r->own, npairs, &r->fail_err);
        if (rc)
            return rc;
    }
    return 0;
}

static open_series *series_for(dsq_rollup *r, uint32_t field, uint32_t host, int32_t rank)
{
    r->fail = DSQ_ENOMEM;
    if ((r->n + 1) * 2 > r->cap && grow_ix(r))
        return NULL;
    size_t i = slot(r, field, host, rank);
    if (r->ix[i].field)
        return &r->tab[r->ix[i].at];
    if (r->n == r->tab_cap && grow_tab(r))
        return NULL;
    open_series *s = &r->tab[r->n]; /* anew: its chunk emptied, its buffer kept */
    s->nchunks = 0;
    s->kinds = 0;
    s->needed = 0;
    memset(&s->rec, 0, sizeof s->rec);
    dsq_chunk_reset(&s->chunk);
    s->field = field;
    s->host = host;
    s->rank = rank;
    size_t b = r->resumed && r->gone ? gone_bit(field, host, rank) : 0;
    if (r->resumed && (!r->gone || r->gone[b / 64] >> (b % 64) & 1) &&
        (r->fail = resume_series(r, s)) != 0)
        return NULL;
    s->ix_at = (uint32_t)i;
    r->ix[i] = (series_slot){field, host, rank, (uint32_t)r->n++};
    return s;
}

/* The error of a series_for that gave NULL. */
static int series_failed(dsq_rollup *r, dsq_error *err)
{
    if (r->fail == DSQ_ENOMEM)
        return dsq_error_set(err, DSQ_ENOMEM, "rollups");
    if (err)
        *err = r->fail_err;
    return r->fail;
}

/* The memo set of (host, rank, form), emptied when it held another. An event's form
 * is its kind and its first field's name (a kind's lines often come in a few field
 * lists, e.g. DeepSpeed's timer lines, which take turns). */
static memo_set *memo_for(dsq_rollup *r, uint32_t host, int32_t rank, uint32_t kind, uint32_t f0)
{
    uint64_t form = kind ^ (uint64_t)f0 << 16;
    uint64_t h = (((uint64_t)host << 32 | (uint32_t)rank) + form * 0x100000001b3ull) *
                 0x9e3779b97f4a7c15ull;
    memo_set *ms = &r->memo[h >> 56]; /* MEMO_SETS is 2^8 */
    if (ms->gen != r->memo_gen || ms->host != host || ms->rank != rank || ms->kind != kind ||
        ms->f0 != f0) {
        ms->gen = r->memo_gen;
        ms->host = host;
        ms->rank = rank;
        ms->kind = kind;
        ms->f0 = f0;
        memset(ms->s, 0, sizeof ms->s);
    }
    return ms;
}

/* series_for through the memo set's slot i (its series are of the set's host and
 * rank: the field alone tells). */
static open_series *series_memo(dsq_rollup *r, memo_set *ms, int i, uint32_t field)
{
    open_series *s = ms->s[i];
    if (s && s->field == field)
        return s;
    s = series_for(r, field, ms->host, ms->rank);
    ms->s[i] = s;
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
    dsq_num_form forms[DSQ_EV_MAXF];
    dsq_ev_forms(ev, forms);
    return dsq_rollup_add_forms(r, ev, forms, NULL, NULL, err);
}

int dsq_rollup_add_forms(dsq_rollup *r, const dsq_event *ev, const dsq_num_form *forms,
                         uint64_t *event_out, uint32_t *kept, dsq_error *err)
{
    if (kept)
        *kept = 0;
    memo_set *ms = memo_for(r, ev->host, ev->rank, ev->kind, ev->nf ? ev->f[0].name : 0);
    open_series *s = series_memo(r, ms, 0, DSQ_SERIES_KIND_BASE + ev->kind);
    if (!s)
        return series_failed(r, err);
    count_event(&s->rec, ev->t_us);
    if (ev->kind == DSQ_EV_ATTR && ev->label)
        add_attr(r, ev->label, ev, 0);
    if (ev->kind == DSQ_EV_FAILURE && ev->label && r->failure_name) {
        dsq_event f = {.t_us = ev->t_us, .text = ev->label}; /* the class, as an attribute */
        add_attr(r, r->failure_name, &f, 1);
    }
    int nf = ev->nf < DSQ_EV_MAXF ? ev->nf : DSQ_EV_MAXF;
    if (!nf)
        return 0;
    int64_t t = ev->t_us;
    pair_time pt;
    pair_time_of(&pt, t);
    /* the event's time, once, in its kind's times (before the fields' series are
     * found: a new one may move the table) */
    if (!(s = series_memo(r, ms, MEMO_TIMES, DSQ_SERIES_TIMES_BASE + ev->kind)))
        return series_failed(r, err);
    uint64_t event = s->rec.count;
    if (event_out)
        *event_out = event;
    count_event(&s->rec, t);
    if (chunk_put_time(&s->chunk, &pt))
        return dsq_error_set(err, DSQ_ENOMEM, "rollups");
    if (s->chunk.len >= CHUNK_BYTES) {
        int rc = write_chunk(r, s, err);
        if (rc)
            return rc;
    }
    for (int i = 0; i < nf; i++) {
        const dsq_field *f = &ev->f[i];
        if (!f->name || !(s = series_memo(r, ms, 1 + i, f->name)))
            return f->name ? series_failed(r, err) : 0;
        double v = f->v;
        const dsq_num_form *form = &forms[i];
        dsq_num_form conv;
        if (s->rec.count && f->unit != s->rec.unit) { /* in the series' unit: another form */
            v = dsq_unit_convert(f->v, f->unit, s->rec.unit);
            conv.e = dsq_ev_decimal(v, &conv.m);
            form = &conv;
        } else if (kept) {
            *kept |= 1u << i; /* the value as the event has it */
        }
        dsq_series_add(&s->rec, t, v, f->unit);
        s->kinds |= 1ull << ev->kind;
        if (chunk_put_by_event(&s->chunk, ev->kind, event, v, form))
            return dsq_error_set(err, DSQ_ENOMEM, "rollups");
        if (s->chunk.len >= CHUNK_BYTES) {
            int rc = write_chunk(r, s, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

_Static_assert(DSQ_EV_KIND_COUNT <= 64, "a field's kinds fit in 64 bits");

/* Marks the kinds' times that values kept in pairs need: those of the fields with
 * more than one value (one is kept in its summary, with its time); chunked: those
 * of the fields that have written chunks (a checkpoint's). */
static void mark_needed_times(dsq_rollup *r, int chunked)
{
    for (size_t u = 0; u < r->n; u++) {
        const open_series *s = &r->tab[u];
        if (s->field >= DSQ_SERIES_KIND_BASE || (s->rec.count < 2 && !s->nchunks) ||
            (chunked && !s->nchunks))
            continue;
        for (uint64_t m = s->kinds; m; m &= m - 1) {
            const series_slot *x =
                &r->ix[slot(r, DSQ_SERIES_TIMES_BASE + (uint32_t)__builtin_ctzll(m), s->host, s->rank)];
            if (x->field)
                r->tab[x->at].needed = 1;
        }
    }
}

/* Writes the summaries (see dsq_rollup_finish, dsq_rollup_checkpoint). At the end
 * of a source, a series keeps its last pairs in its own record when they are few
 * (store.h): none for one value of a series without chunks (or time: the summary's
 * first), else its chunk up to OWN_PAIRS_BYTES, after its chunk records if it has
 * some (schema 11); and a kind's times that no value kept in pairs needs are left
 * out. At a whole checkpoint (more values may follow) a series keeps its few pairs
 * since its last chunk in its record, its chunk left open; bigger chunks are
 * written out. A big job's log (~100,000 series) wrote a chunk record for each of
 * them at every checkpoint, each on its own page, all held by LMDB until the
 * commit: 98 MB at the peak for 1 GB, 31 MB now. A checkpoint that is not whole writes only the series
 * with chunks, and the kinds' times their values name (a query of the partial
 * source finds every value's time). */
enum { PUT_END, PUT_WHOLE, PUT_CHUNKED };
/* A chunk a checkpoint wrote out lets go of its buffer when it is bigger than this
 * (the buffer grows again with the values that come): a launcher log of 8,192
 * ranks has 124,000 series, whose chunks grow past OWN_PAIRS_BYTES between two
 * checkpoints and are written out at the next, and their buffers of 1 kB stayed,
 * filling again from nothing: 82 MB of buffers for 35 MB of pairs. */
#define CHECKPOINT_KEEP_CAP 256

/* The series put_summaries skips: times no value needs, or (a checkpoint that
 * is not whole) nothing in the index yet, with no written chunk naming its events. */
static int skipped(const open_series *s, int how)
{
    if (how == PUT_END && s->field >= DSQ_SERIES_TIMES_BASE && !s->needed && !s->nchunks)
        return 1; /* times no value needs (a checkpoint wrote the others' chunks) */
    /* nothing of it in the index yet, and no chunk written names its events: its
       chunk stays open */
    return how == PUT_CHUNKED && !s->nchunks && !(s->field >= DSQ_SERIES_TIMES_BASE && s->needed);
}

/* A source of this many series or more puts them in key order (field, host, rank):
 * the store writes the series waiting for the commit into their groups once they
 * take 1 MB (store.c, SER_FLUSH_ONE), and in the order they came (each rank's
 * fields) every such part went into the middle of every field's groups, splitting
 * pages: a launcher log of 2,048 ranks in 100 MB had 27 % more series pages. */
#define ORDER_MIN 1024

typedef struct order_ent {
    uint64_t a; /* field << 32 | host */
    uint32_t b; /* rank + 1 */
    uint32_t u; /* its place in tab */
} order_ent;

static int order_cmp(const void *x, const void *y)
{
    const order_ent *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* r->order brought up to the n series: those that came since sorted and merged in
 * (a checkpoint's are few but the first's). 0, or DSQ_ENOMEM. */
static int put_order(dsq_rollup *r)
{
    if (r->n > r->order_cap) {
        size_t cap = r->order_cap ? r->order_cap : 1024;
        while (cap < r->n)
            cap *= 2;
        order_ent *o = realloc(r->order, cap * sizeof *o), *t;
        if (o)
            r->order = o;
        if (!o || !(t = realloc(r->order_tmp, cap * sizeof *t)))
            return DSQ_ENOMEM;
        r->order_tmp = t;
        r->order_cap = cap;
    }
    size_t old = r->norder, add = r->n - old;
    order_ent *fresh = r->order_tmp;
    for (size_t i = 0; i < add; i++) {
        const open_series *s = &r->tab[old + i];
        fresh[i] = (order_ent){(uint64_t)s->field << 32 | s->host, (uint32_t)s->rank + 1u,
                               (uint32_t)(old + i)};
    }
    qsort(fresh, add, sizeof *fresh, order_cmp);
    /* merged from the back, into order (room for n) */
    size_t i = old, j = add, k = r->n;
    while (j > 0) {
        if (i > 0 && order_cmp(&r->order[i - 1], &fresh[j - 1]) > 0)
            r->order[--k] = r->order[--i];
        else
            r->order[--k] = fresh[--j];
    }
    r->norder = r->n;
    return 0;
}

/* The u-th series put_summaries puts (see ORDER_MIN). */
static inline open_series *put_at(dsq_rollup *r, size_t u)
{
    return &r->tab[r->n >= ORDER_MIN ? r->order[u].u : u];
}

/* A checkpoint writes out the chunks bigger than OWN_PAIRS_BYTES first, then puts
 * every record, so that the chunk records are written while the store may commit
 * them in parts, and the records while it may write them into their groups as they
 * come (store.c, SER_FLUSH_BYTES: that ends the parts). */
static int put_checkpoint_chunks(dsq_rollup *r, int how, dsq_error *err)
{
    int rc = 0;
    for (size_t u = 0; u < r->n && !rc; u++) {
        open_series *s = put_at(r, u);
        if (skipped(s, how) || s->chunk.len <= OWN_PAIRS_BYTES)
            continue;
        rc = write_chunk(r, s, err);
        if (s->chunk.cap > CHECKPOINT_KEEP_CAP) {
            free(s->chunk.buf); /* written out (CHECKPOINT_KEEP_CAP) */
            s->chunk.buf = NULL;
            s->chunk.cap = 0;
        }
    }
    return rc;
}

static int put_summaries(dsq_rollup *r, int how, dsq_error *err)
{
    int rc = 0, at_end = how == PUT_END;
    if (how != PUT_WHOLE) /* (a whole checkpoint writes every times series) */
        mark_needed_times(r, how == PUT_CHUNKED);
    if (r->n >= ORDER_MIN && put_order(r))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    if (!at_end)
        rc = put_checkpoint_chunks(r, how, err);
    for (size_t u = 0; u < r->n && !rc; u++) {
        open_series *s = put_at(r, u);
        const void *pairs = NULL;
        size_t n = 0;
        if (skipped(s, how))
            continue;
        if (at_end && s->chunk.count) {
            dsq_chunk_finish(&s->chunk);
            /* one value alone: the summary's first; a few pairs: in the record, after
             * the chunks if there are some (schema 11), not in a chunk record of
             * their own */
            if ((s->chunk.count > 1 || s->nchunks) && s->chunk.len <= OWN_PAIRS_BYTES) {
                pairs = s->chunk.buf;
                n = s->chunk.len;
            }
            if ((s->chunk.count == 1 && !s->nchunks) || n)
                dsq_chunk_reset(&s->chunk);
            else if ((rc = write_chunk(r, s, err)))
                break;
        } else if (!at_end && s->chunk.count) {
            /* a checkpoint: the few pairs so far in the record, the chunk left open
             * (the last put replaces the record; bigger chunks were written out):
             * a chunk record of under 32 bytes saved for each series a whole
             * checkpoint lets go of; a times series written chunks need, whole at
             * the end as one commit would have it */
            chunk_snapshot(&s->chunk, r->snap);
            pairs = r->snap;
            n = s->chunk.len;
            if (s->field >= DSQ_SERIES_TIMES_BASE)
                s->needed = 1;
        }
        s->rec.nchunks = s->nchunks;
        dsq_series_key k = key_of(r, s);
        rc = dsq_store_series_put(r->st, &k, &s->rec, pairs, n, err);
    }
    for (int i = 0; i < r->nattrs && !rc; i++)
        rc = dsq_store_attr_put(r->st, r->run, r->attrs[i].name, r->source, &r->attrs[i].rec, err);
    if (!rc) /* which also has the run rollups of the source's fields recomputed */
        rc = at_end ? dsq_store_rollups_put(r->st, r->source, err)
                    : dsq_store_rollups_checkpoint(r->st, r->source, err);
    return rc;
}

int dsq_rollup_checkpoint(dsq_rollup *r, int whole, dsq_error *err)
{
    return put_summaries(r, whole ? PUT_WHOLE : PUT_CHUNKED, err);
}

int dsq_rollup_finish(dsq_rollup *r, dsq_error *err) { return put_summaries(r, PUT_END, err); }

/* --- reading a series' pairs ------------------------------------------------------ */

#define PAIRS_BATCH 256
/* the kinds whose times are kept at once (a segment names up to 3) */
#define TIME_SETS 4

/* The times of one kind's events with fields in the (run, host, rank, source) of
 * dsq_pairs' tkey. */
typedef struct time_set {
    int64_t *t;
    size_t n, cap;
    uint32_t kind;
    int valid;
    unsigned used; /* when last used (the least recently used set is reloaded) */
} time_set;

struct dsq_pairs {
    time_set ts[TIME_SETS];
    dsq_series_key tkey; /* whose times the sets hold (field: the times series read last) */
    unsigned clock;
    time_set *loading;
    unsigned char *rest; /* a chunk's unread bytes, moved there while times are read */
    size_t rest_cap;
    int64_t bt[PAIRS_BATCH];
    double bv[PAIRS_BATCH];
    /* the scan under way */
    dsq_store *st;
    const dsq_series_key *sk;
    int with_times;
    dsq_pairs_fn fn;
    void *ctx;
    dsq_error *err;
};

int dsq_pairs_new(dsq_pairs **out)
{
    return (*out = calloc(1, sizeof **out)) ? 0 : DSQ_ENOMEM;
}

void dsq_pairs_free(dsq_pairs *pr)
{
    if (!pr)
        return;
    for (int i = 0; i < TIME_SETS; i++)
        free(pr->ts[i].t);
    free(pr->rest);
    free(pr);
}

static int damaged(dsq_pairs *pr)
{
    return dsq_error_set(pr->err, DSQ_EINDEX, "damaged rollup chunk (source %u)", pr->sk->source);
}

/* A chunk of a kind's times: appended to the set being loaded. */
static int on_times(void *ctx, const void *data, size_t n)
{
    dsq_pairs *pr = ctx;
    time_set *ts = pr->loading;
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int r;
    dsq_chunk_iter_init(&it, data, n);
    while ((r = dsq_chunk_iter_next(&it, &t, &v)) == 1) {
        if (it.by_event)
            return damaged(pr);
        if (ts->n == ts->cap) {
            size_t cap = ts->cap ? ts->cap * 2 : 1024;
            int64_t *nt = realloc(ts->t, cap * sizeof *nt);
            if (!nt)
                return dsq_error_set(pr->err, DSQ_ENOMEM, "out of memory reading times");
            ts->t = nt;
            ts->cap = cap;
        }
        ts->t[ts->n++] = t;
    }
    return r < 0 ? damaged(pr) : 0;
}

/* Moves the unread bytes of the chunk `it` reads into pr->rest (the store's buffer
 * they may be in is reused by the next read). */
static int keep_rest(dsq_pairs *pr, dsq_chunk_iter *it)
{
    size_t rest = (size_t)(it->end - it->p);
    if (it->p >= pr->rest && it->p <= pr->rest + pr->rest_cap) {
        memmove(pr->rest, it->p, rest); /* moved before: the rest only shrinks */
    } else {
        if (rest > pr->rest_cap) {
            unsigned char *nb = realloc(pr->rest, rest);
            if (!nb)
                return dsq_error_set(pr->err, DSQ_ENOMEM, "out of memory reading times");
            pr->rest = nb;
            pr->rest_cap = rest;
        }
        if (rest)
            memcpy(pr->rest, it->p, rest);
    }
    it->p = pr->rest;
    it->end = pr->rest + rest;
    return 0;
}

/* The times of `kind` in the scanned series' run, host, rank and source: kept, or
 * read into the least recently used set (NULL: *status says why). */
static time_set *times_of(dsq_pairs *pr, dsq_chunk_iter *it, uint32_t kind, int *status)
{
    const dsq_series_key *a = &pr->tkey, *b = pr->sk;
    if (a->run != b->run || a->host != b->host || a->rank != b->rank || a->source != b->source) {
        for (int i = 0; i < TIME_SETS; i++)
            pr->ts[i].valid = 0;
        pr->tkey = *b;
    }
    time_set *ts = &pr->ts[0];
    for (int i = 0; i < TIME_SETS; i++) {
        time_set *c = &pr->ts[i];
        if (c->valid && c->kind == kind) {
            c->used = ++pr->clock;
            return c;
        }
        if (!c->valid ? ts->valid : ts->valid && c->used < ts->used)
            ts = c;
    }
    if ((*status = keep_rest(pr, it)))
        return NULL;
    ts->n = 0;
    ts->valid = 0;
    ts->kind = kind;
    ts->used = ++pr->clock;
    pr->loading = ts;
    pr->tkey.field = DSQ_SERIES_TIMES_BASE + kind;
    if ((*status = dsq_store_scan_chunks(pr->st, &pr->tkey, NULL, on_times, pr, pr->err)))
        return NULL;
    ts->valid = 1;
    return ts;
}

static int on_pairs(void *ctx, const void *data, size_t n)
{
    dsq_pairs *pr = ctx;
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int r, status = 0;
    size_t nb = 0;
    dsq_chunk_iter_init(&it, data, n);
    while ((r = dsq_chunk_iter_next(&it, &t, &v)) == 1) {
        if (it.vmode == E_NONE)
            return damaged(pr);
        if (it.by_event && pr->with_times) {
            time_set *ts;
            if (it.kind >= DSQ_EV_KIND_COUNT)
                return damaged(pr);
            if (!(ts = times_of(pr, &it, it.kind, &status)))
                return status;
            if (it.event >= ts->n)
                return damaged(pr);
            t = ts->t[it.event];
        }
        pr->bt[nb] = t;
        pr->bv[nb] = v;
        if (++nb == PAIRS_BATCH) {
            if ((status = pr->fn(pr->ctx, pr->bt, pr->bv, nb)))
                return status;
            nb = 0;
        }
    }
    if (r < 0)
        return damaged(pr);
    return nb ? pr->fn(pr->ctx, pr->bt, pr->bv, nb) : 0;
}

int dsq_pairs_scan(dsq_pairs *pr, dsq_store *st, const dsq_series_key *k,
                   const dsq_series_rec *rec, int with_times, dsq_pairs_fn fn, void *ctx,
                   dsq_error *err)
{
    if (pr->st != st) /* times are of one index (its read snapshot) */
        for (int i = 0; i < TIME_SETS; i++)
            pr->ts[i].valid = 0;
    pr->st = st;
    pr->sk = k;
    pr->with_times = with_times;
    pr->fn = fn;
    pr->ctx = ctx;
    pr->err = err;
    return dsq_store_scan_chunks(st, k, rec, on_pairs, pr, err);
}
