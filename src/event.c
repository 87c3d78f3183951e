/* Block encoding of events.
 *
 * A block is built in rows (dsq_block_add): per event, varint shape, [when shape is
 * 0: varint kind, byte nf, then nf times (varint name, byte unit)], zigzag varint
 * time delta, varint label, varint text, zigzag varint line delta, then nf packed
 * numbers (varint.h). Shape 0 spells the event's kind, names and units out and,
 * while the block has fewer than DSQ_BLOCK_SHAPES, makes them its next shape; shape
 * s > 0 reuses shape s - 1. Most events repeat a form (a timer line, a loss dict),
 * so a block holds its names once. The first time delta is relative to the block
 * key's time.
 *
 * It is stored in columns (schema 7, dsq_block_encode; event.h has the layout):
 * the rows are read once and each part goes to its stream or value column. A
 * column holds one field's values, so zstd packs a block in a third of the time it
 * took on rows, and a mantissa that moves little takes a byte. Decoding checks
 * every length against the end of the value, so a damaged block is reported,
 * never overrun.
 *
 * Values once (schema 9). The values the writer's rollup keeps as they are
 * (dsq_block_add_ref) are not in the block: one marker byte stands in their place,
 * and the block's starts say the number of its first event of each kind with
 * fields, so the reader knows each event's number and finds its values in their
 * series (evfill.h). The values were stored twice before, here and in the
 * rollups: on a 200 MB launcher log the blocks took 12.2 MB, 9.3 of them values;
 * now 2.3 MB.
 */
#include "event.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"
#include "varint.h"

/* decimal_of rounds by adding and taking away 1.5 * 2^52: doubles must be evaluated
 * as doubles and the two operations kept (tests check it against dsq_num_put). */
_Static_assert(FLT_EVAL_METHOD == 0, "event.c needs double evaluation of doubles");
#ifdef __FAST_MATH__
#error "event.c: decimal_of needs IEEE arithmetic (no -ffast-math)"
#endif

static const char *const kind_names[DSQ_EV_KIND_COUNT] = {
    [DSQ_EV_NONE] = "none",
    [DSQ_EV_MEMORY] = "memory",
    [DSQ_EV_ATTR] = "attr",
    [DSQ_EV_FAILURE] = "failure",
    [DSQ_EV_HF_LOSS] = "hf_loss",
    [DSQ_EV_HF_EVAL] = "hf_eval",
    [DSQ_EV_HF_TRAIN_END] = "hf_train_end",
    [DSQ_EV_HF_TRAIN_SETUP] = "hf_train_setup",
    [DSQ_EV_HF_CHECKPOINT] = "hf_checkpoint",
    [DSQ_EV_DS_TIMER] = "ds_timer",
    [DSQ_EV_DS_THROUGHPUT] = "ds_throughput",
    [DSQ_EV_DS_STEP] = "ds_step",
    [DSQ_EV_DS_OVERFLOW] = "ds_overflow",
    [DSQ_EV_DS_CACHE_FLUSH] = "ds_cache_flush",
    [DSQ_EV_DS_OP_LOAD] = "ds_op_load",
    [DSQ_EV_DS_LOSS_SCALE] = "ds_loss_scale",
    [DSQ_EV_DS_MEM_ESTIMATE] = "ds_mem_estimate",
    [DSQ_EV_MEGATRON_ITER] = "megatron_iter",
    [DSQ_EV_MEGATRON_VALIDATION] = "megatron_validation",
    [DSQ_EV_MEGATRON_MEMORY] = "megatron_memory",
    [DSQ_EV_MMENGINE_ITER] = "mmengine_iter",
    [DSQ_EV_NCCL_INIT] = "nccl_init",
    [DSQ_EV_NCCL_TOPOLOGY] = "nccl_topology",
    [DSQ_EV_NCCL_WARN] = "nccl_warn",
    [DSQ_EV_NCCL_DESTROY] = "nccl_destroy",
    [DSQ_EV_TRACEBACK] = "traceback",
    [DSQ_EV_PYWARN] = "pywarn",
    [DSQ_EV_TORCHRUN_CLOSING_SIGNAL] = "torchrun_closing_signal",
    [DSQ_EV_TORCHRUN_OMP] = "torchrun_omp_threads",
    [DSQ_EV_GLOG_DESYNC] = "glog_desync",
    [DSQ_EV_DSCHAT_PPO] = "dschat_ppo",
    [DSQ_EV_DSCHAT_REWARD] = "dschat_reward",
    [DSQ_EV_DSCHAT_TIMING] = "dschat_timing",
    [DSQ_EV_TITAN_STEP] = "titan_step",
    [DSQ_EV_METRIC_LOGGER] = "metric_logger",
    [DSQ_EV_RANK_LINES] = "rank_lines",
};

const char *dsq_ev_kind_name(int kind)
{
    return (kind >= 0 && kind < DSQ_EV_KIND_COUNT && kind_names[kind]) ? kind_names[kind] : "?";
}

void dsq_block_reset(dsq_block *b)
{
    b->len = 0;
    b->count = 0;
    b->t_first = 0;
    b->t_prev = 0;
    b->line_prev = 0;
    b->nshapes = 0;
    b->started = 0;
    memset(b->last_shape, 0, sizeof b->last_shape);
}

void dsq_block_free_buf(dsq_block *b)
{
    free(b->buf);
    free(b->shapes);
    memset(b, 0, sizeof *b);
}

/* The e and m of dsq_num_put's loop from one product, s = v * 10^6, when |s| < 2^50.
 * If some e passes with m, v is m / 10^e within 2^-53 relatively, so s is within
 * |s| 2^-52 (under 1/4) of the integer N = m 10^(6-e): N is s's nearest integer t.
 * Then t / 10^6 is the rational m / 10^e, rounded alike: so when (double)t / 10^6
 * differs from v, no e passes. When it equals v, the e of t's trailing decimal
 * zeros (6 - their count, at most 6) passes with r = t / 10^(6-e) (v * 10^e is
 * within |r| 2^-52 of r, so the test rounds it to r), and no smaller e passes, as
 * its N = t would have more zeros. t is s rounded by adding and taking away
 * 1.5 * 2^52 (exact for |s| < 2^51; with any other rounding to an integer within
 * 1/2 the same holds). -0 comes out as -1 (t is 0, and -0 == 0). */
static int decimal_of(double v, int64_t *m)
{
    double s = v * 1e6;
    if (!(fabs(s) < 0x1p50))
        return dsq_num_decimal(v, m); /* NaN, infinities, big numbers */
    int64_t t = (int64_t)((s + 0x1.8p52) - 0x1.8p52); /* not folded: no -ffast-math */
    if ((double)t / 1e6 != v)
        return -1;
    if (t == 0) {
        *m = 0;
        return signbit(v) ? -1 : 0;
    }
    uint64_t a = t < 0 ? 0 - (uint64_t)t : (uint64_t)t; /* unsigned: cheaper tests */
    int e = 6;
    if (a % 1000 == 0) { /* at most 3 of the divisibility tests, 1 division by a constant */
        if (a % 1000000 == 0) {
            a /= 1000000;
            e = 0;
        } else if (a % 100000 == 0) {
            a /= 100000;
            e = 1;
        } else if (a % 10000 == 0) {
            a /= 10000;
            e = 2;
        } else {
            a /= 1000;
            e = 3;
        }
    } else if (a % 100 == 0) {
        a /= 100;
        e = 4;
    } else if (a % 10 == 0) {
        a /= 10;
        e = 5;
    }
    t = t < 0 ? -(int64_t)a : (int64_t)a;
    *m = t;
    return e;
}

int dsq_ev_decimal(double v, int64_t *m)
{
    *m = 0;
    return decimal_of(v, m);
}

void dsq_ev_forms(const dsq_event *ev, dsq_num_form *forms)
{
    int nf = ev->nf < DSQ_EV_MAXF ? ev->nf : DSQ_EV_MAXF;
    for (int i = 0; i < nf; i++)
        forms[i].e = dsq_ev_decimal(ev->f[i].v, &forms[i].m);
}

/* dsq_num_put's bytes of v, whose form is f. */
static unsigned char *put_num(unsigned char *p, double v, const dsq_num_form *f)
{
    if (f->e >= 0)
        return dsq_varint_put(p, dsq_zigzag(f->m) << 3 | (uint64_t)f->e);
    uint64_t bits;
    memcpy(&bits, &v, 8);
    *p++ = 7;
    for (int i = 0; i < 8; i++)
        *p++ = (unsigned char)(bits >> (8 * i));
    return p;
}

unsigned char *dsq_ev_num_put(unsigned char *p, double v)
{
    dsq_num_form f;
    f.e = dsq_ev_decimal(v, &f.m);
    return put_num(p, v, &f);
}

static int reserve(dsq_block *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    /* a launcher log of thousands of ranks has a block open for each: 16,384 of 1 kB
     * took 12 MB more than of 256 bytes (an event is ~50-100); from 1 kB to 8 kB by
     * 512 bytes, else twice: 9,216 blocks of a log of 8,192 ranks, written at ~2 kB,
     * kept 31 MB of buffers, doubled, for 16 MB of events */
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap = cap >= 1024 && cap < 8192 ? cap + 512 : cap * 2;
    unsigned char *n = realloc(b->buf, cap);
    if (!n)
        return DSQ_ENOMEM;
    b->buf = n;
    b->cap = cap;
    return 0;
}

static void put_varint(dsq_block *b, uint64_t v)
{
    b->len = (size_t)(dsq_varint_put(b->buf + b->len, v) - b->buf);
}

static int same_shape(const dsq_ev_shape *s, const dsq_event *ev)
{
    if (s->kind != ev->kind || s->nf != ev->nf)
        return 0;
    for (int i = 0; i < ev->nf; i++)
        if (s->name[i] != ev->f[i].name || s->unit[i] != ev->f[i].unit)
            return 0;
    return 1;
}

/* The block's shape of ev: 1 + its index, or 0 when it has none (yet). */
static uint32_t find_shape(dsq_block *b, const dsq_event *ev)
{
    uint32_t last = ev->kind < DSQ_EV_KIND_COUNT ? b->last_shape[ev->kind] : 0;
    if (last && same_shape(&b->shapes[last - 1], ev))
        return last;
    for (uint32_t i = 0; i < b->nshapes; i++) {
        if (same_shape(&b->shapes[i], ev)) {
            if (ev->kind < DSQ_EV_KIND_COUNT)
                b->last_shape[ev->kind] = (uint8_t)(i + 1);
            return i + 1;
        }
    }
    return 0;
}

/* Writes ev's shape out (shape 0) and keeps it while there is room; DSQ_ENOMEM
 * when it could not be kept below DSQ_BLOCK_SHAPES (the reader keeps every one:
 * the numbers of later shapes would differ). */
static int put_new_shape(dsq_block *b, const dsq_event *ev)
{
    b->buf[b->len++] = 0;
    put_varint(b, ev->kind);
    b->buf[b->len++] = ev->nf;
    for (int i = 0; i < ev->nf; i++) {
        put_varint(b, ev->f[i].name);
        b->buf[b->len++] = ev->f[i].unit;
    }
    if (b->nshapes == DSQ_BLOCK_SHAPES)
        return 0;
    if (b->nshapes == b->shapes_cap) {
        uint32_t cap = b->shapes_cap ? 2 * b->shapes_cap : 4;
        dsq_ev_shape *sh = realloc(b->shapes, cap * sizeof *sh);
        if (!sh)
            return DSQ_ENOMEM;
        b->shapes = sh;
        b->shapes_cap = cap;
    }
    dsq_ev_shape *s = &b->shapes[b->nshapes++];
    /* dsq_block_add refused more fields; the bound again for GCC's -O3 range checks */
    unsigned nf = ev->nf <= DSQ_EV_MAXF ? ev->nf : DSQ_EV_MAXF;
    s->kind = ev->kind;
    s->nf = (uint8_t)nf;
    for (unsigned i = 0; i < nf; i++) {
        s->name[i] = ev->f[i].name;
        s->unit[i] = ev->f[i].unit;
    }
    if (ev->kind < DSQ_EV_KIND_COUNT)
        b->last_shape[ev->kind] = (uint8_t)b->nshapes;
    return 0;
}

int dsq_block_add(dsq_block *b, const dsq_event *ev)
{
    dsq_num_form forms[DSQ_EV_MAXF];
    dsq_ev_forms(ev, forms);
    return dsq_block_add_ref(b, ev, forms, 0, 0);
}

_Static_assert(DSQ_EV_KIND_COUNT <= 64, "a block's started kinds fit in 64 bits");

int dsq_block_add_ref(dsq_block *b, const dsq_event *ev, const dsq_num_form *forms,
                      uint32_t in_series, uint64_t event)
{
    /* worst case: 7 varints of 10 + 2 + nf * (5 + 1 + 9) */
    if (ev->nf > DSQ_EV_MAXF || reserve(b, 72 + (size_t)ev->nf * 15) != 0)
        return DSQ_ENOMEM;
    if (b->count == 0) {
        b->t_first = ev->t_us;
        b->t_prev = ev->t_us;
        b->line_prev = 0;
    }
    uint32_t shape = find_shape(b, ev);
    if (shape)
        put_varint(b, shape);
    else if (put_new_shape(b, ev))
        return DSQ_ENOMEM;
    /* the rest through a local pointer: byte stores may alias b's fields */
    int nf = ev->nf;
    int64_t dt = (int64_t)((uint64_t)ev->t_us - (uint64_t)b->t_prev);
    int64_t dl = (int64_t)ev->line - (int64_t)b->line_prev;
    b->t_prev = ev->t_us;
    b->line_prev = ev->line;
    b->count++;
    unsigned char *buf = b->buf, *p = buf + b->len;
    p = dsq_varint_put(p, dsq_zigzag(dt));
    p = dsq_varint_put(p, ev->label);
    p = dsq_varint_put(p, ev->text);
    p = dsq_varint_put(p, dsq_zigzag(dl));
    if (nf && ev->kind < DSQ_EV_KIND_COUNT && !(b->started >> ev->kind & 1)) {
        b->started |= 1ull << ev->kind;
        b->start[ev->kind] = event;
    }
    for (int i = 0; i < nf; i++) {
        if (in_series >> i & 1)
            *p++ = DSQ_VAL_IN_SERIES;
        else
            p = put_num(p, ev->f[i].v, &forms[i]);
    }
    b->len = (size_t)(p - buf);
    return 0;
}

/* Bytes the starts of b take at most, and the starts themselves (event.h). */
#define STARTS_MAX (DSQ_VARINT_MAX + 2 * DSQ_VARINT_MAX * DSQ_EV_KIND_COUNT)

static unsigned char *put_starts(unsigned char *p, const dsq_block *b)
{
    p = dsq_varint_put(p, (uint64_t)__builtin_popcountll(b->started));
    for (uint64_t m = b->started; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);
        p = dsq_varint_put(p, k);
        p = dsq_varint_put(p, b->start[k]);
    }
    return p;
}

/* --- stored in columns --------------------------------------------------------- */

typedef struct col_buf {
    unsigned char *b;
    size_t n, cap;
} col_buf;

struct dsq_block_cols {
    col_buf s[DSQ_BLOCK_STREAMS]; /* shapes, time deltas, labels, texts, line deltas */
    col_buf col[DSQ_BLOCK_COLS];
    int64_t m[DSQ_BLOCK_COLS]; /* each column's last mantissa and exponent (7: none) */
    uint8_t e[DSQ_BLOCK_COLS];
    unsigned char *out;
    size_t out_cap;
};

int dsq_block_cols_new(dsq_block_cols **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : DSQ_ENOMEM;
}

void dsq_block_cols_free(dsq_block_cols *c)
{
    if (!c)
        return;
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++)
        free(c->s[i].b);
    for (int i = 0; i < DSQ_BLOCK_COLS; i++)
        free(c->col[i].b);
    free(c->out);
    free(c);
}

/* Room for `more` bytes in a buffer (doubling). 0 or DSQ_ENOMEM. */
static int col_room(unsigned char **b, size_t *cap, size_t n, size_t more)
{
    if (n + more <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < n + more)
        c *= 2;
    unsigned char *nb = realloc(*b, c);
    if (!nb)
        return DSQ_ENOMEM;
    *b = nb;
    *cap = c;
    return 0;
}

/* Copies the varint at *pp (before end) to the stream at *out, which has room for
 * it (streams get as much room as the rows have bytes); *v its value. 0 or -1.
 * dsq_varint_get's loop with a store in it: decoding first and copying after cost
 * 0.5 % more of all the instructions of indexing per-host files. */
static inline int copy_varint(unsigned char **out, const unsigned char **pp,
                              const unsigned char *end, uint64_t *v)
{
    const unsigned char *p = *pp;
    unsigned char *o = *out;
    uint64_t x = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
        unsigned char b = *p++;
        *o++ = b;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = o;
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Room for one more value in column i (a varint, or 7 and 8 bytes). */
static int col_value_room(dsq_block_cols *c, int i)
{
    col_buf *cb = &c->col[i];
    return col_room(&cb->b, &cb->cap, cb->n, DSQ_VARINT_MAX + 8);
}

/* One packed number of the rows at *pp into column i (see event.h). */
static inline int put_col_value(dsq_block_cols *c, int i, const unsigned char **pp,
                                const unsigned char *end)
{
    col_buf *cb = &c->col[i];
    uint64_t tag;
    if (dsq_varint_get(pp, end, &tag))
        return DSQ_EFORMAT;
    if (cb->n + DSQ_VARINT_MAX + 8 > cb->cap && col_value_room(c, i))
        return DSQ_ENOMEM;
    if (tag == DSQ_VAL_IN_SERIES) { /* the column's value before stays the base */
        cb->b[cb->n++] = DSQ_VAL_IN_SERIES;
        return 0;
    }
    unsigned e = (unsigned)(tag & 7);
    if (e == 7) {
        if (tag != 7 || end - *pp < 8)
            return DSQ_EFORMAT;
        cb->b[cb->n] = 7;
        memcpy(cb->b + cb->n + 1, *pp, 8);
        cb->n += 9;
        *pp += 8;
        c->e[i] = 7;
        return 0;
    }
    int64_t m = dsq_unzigzag(tag >> 3);
    if (m >= (int64_t)1 << 53 || m <= -((int64_t)1 << 53))
        return DSQ_EFORMAT; /* not a form dsq_ev_decimal gives: its difference could wrap */
    uint64_t code = c->e[i] == e ? dsq_zigzag(m - c->m[i]) << 3 | e : tag;
    c->e[i] = (uint8_t)e;
    c->m[i] = m;
    cb->n = (size_t)(dsq_varint_put(cb->b + cb->n, code) - cb->b);
    return 0;
}

/* Reads b's rows into the streams and columns; *ncols: the columns used. */
static int split_rows(dsq_block_cols *c, const dsq_block *b, uint32_t *ncols)
{
    const unsigned char *p = b->buf, *end = b->buf + b->len;
    unsigned char *o[DSQ_BLOCK_STREAMS];
    uint8_t nf_of[DSQ_BLOCK_SHAPES];
    uint16_t base[DSQ_BLOCK_SHAPES];
    uint32_t nshapes = 0, used = 1; /* column 0: the fields of shapes not kept */
    int rc = 0;
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++) {
        if (col_room(&c->s[i].b, &c->s[i].cap, 0, b->len + 1))
            return DSQ_ENOMEM;
        o[i] = c->s[i].b;
    }
    c->col[0].n = 0;
    c->e[0] = 7;
    *ncols = 0;
    for (uint32_t k = 0; k < b->count && !rc; k++) {
        uint64_t shape, v;
        int first = 0;
        unsigned nf;
        if (copy_varint(&o[0], &p, end, &shape))
            return DSQ_EFORMAT;
        if (shape == 0) { /* spelled out: copied as it is */
            const unsigned char *q = p;
            if (dsq_varint_get(&p, end, &v) || p >= end || (nf = *p++) > DSQ_EV_MAXF)
                return DSQ_EFORMAT;
            for (unsigned j = 0; j < nf; j++)
                if (dsq_varint_get(&p, end, &v) || p++ >= end)
                    return DSQ_EFORMAT;
            memcpy(o[0], q, (size_t)(p - q));
            o[0] += p - q;
            if (nshapes < DSQ_BLOCK_SHAPES) { /* kept: its fields get columns */
                nf_of[nshapes] = (uint8_t)nf;
                base[nshapes] = (uint16_t)used;
                for (unsigned j = 0; j < nf; j++) {
                    c->col[used + j].n = 0;
                    c->e[used + j] = 7;
                }
                first = (int)used;
                used += nf;
                nshapes++;
            }
        } else if (shape > nshapes) {
            return DSQ_EFORMAT;
        } else {
            nf = nf_of[shape - 1];
            first = base[shape - 1];
        }
        if (copy_varint(&o[1], &p, end, &v) || copy_varint(&o[2], &p, end, &v) ||
            copy_varint(&o[3], &p, end, &v) || copy_varint(&o[4], &p, end, &v))
            return DSQ_EFORMAT;
        for (unsigned j = 0; j < nf && !rc; j++) {
            int i = first ? first + (int)j : 0;
            col_buf *cb = &c->col[i];
            if (p < end && *p == DSQ_VAL_IN_SERIES && cb->n < cb->cap) { /* most values */
                cb->b[cb->n++] = DSQ_VAL_IN_SERIES;
                p++;
                continue;
            }
            rc = put_col_value(c, i, &p, end);
        }
    }
    if (!rc && p != end)
        rc = DSQ_EFORMAT;
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++)
        c->s[i].n = (size_t)(o[i] - c->s[i].b);
    *ncols = used;
    return rc;
}

int dsq_block_encode(dsq_block_cols *c, const dsq_block *b, const unsigned char **data,
                     size_t *n)
{
    uint32_t ncols = 0;
    if (b->len < DSQ_BLOCK_COLUMNS_MIN) { /* stored as rows, as they are */
        if (col_room(&c->out, &c->out_cap, 0, DSQ_VARINT_MAX + 1 + STARTS_MAX + b->len))
            return DSQ_ENOMEM;
        unsigned char *p = dsq_varint_put(c->out, b->count);
        *p++ = 0;
        p = put_starts(p, b);
        if (b->len)
            memcpy(p, b->buf, b->len);
        *data = c->out;
        *n = (size_t)(p - c->out) + b->len;
        return 0;
    }
    int rc = split_rows(c, b, &ncols);
    if (rc)
        return rc;
    size_t total = (3 + DSQ_BLOCK_STREAMS + (size_t)ncols) * DSQ_VARINT_MAX + STARTS_MAX;
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++)
        total += c->s[i].n;
    for (uint32_t i = 0; i < ncols; i++)
        total += c->col[i].n;
    if (col_room(&c->out, &c->out_cap, 0, total))
        return DSQ_ENOMEM;
    unsigned char *p = c->out;
    p = dsq_varint_put(p, b->count);
    p = dsq_varint_put(p, ncols);
    p = put_starts(p, b);
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++)
        p = dsq_varint_put(p, c->s[i].n);
    for (uint32_t i = 0; i < ncols; i++)
        p = dsq_varint_put(p, c->col[i].n);
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++) {
        if (c->s[i].n)
            memcpy(p, c->s[i].b, c->s[i].n);
        p += c->s[i].n;
    }
    for (uint32_t i = 0; i < ncols; i++) {
        if (c->col[i].n)
            memcpy(p, c->col[i].b, c->col[i].n);
        p += c->col[i].n;
    }
    *data = c->out;
    *n = (size_t)(p - c->out);
    return 0;
}

int dsq_block_iter_init(dsq_block_iter *it, const void *data, size_t n, int64_t t_first)
{
    const unsigned char *p = data, *end = p + n;
    uint64_t count, ncols, len[DSQ_BLOCK_STREAMS];
    it->t_prev = t_first;
    it->line_prev = 0;
    it->nshapes = 0;
    it->cols_used = 1;
    if (dsq_varint_get(&p, end, &count) || count > UINT32_MAX ||
        dsq_varint_get(&p, end, &ncols) || ncols > DSQ_BLOCK_COLS)
        return DSQ_EFORMAT;
    it->left = (uint32_t)count;
    it->ncols = (uint32_t)ncols;
    it->rows = ncols == 0; /* stored as rows: every part in p[0] */
    it->started = 0;
    it->event = UINT64_MAX;
    it->in_series = 0;
    uint64_t nstarts, kind, start;
    if (dsq_varint_get(&p, end, &nstarts) || nstarts > DSQ_EV_KIND_COUNT)
        return DSQ_EFORMAT;
    for (uint64_t i = 0; i < nstarts; i++) {
        if (dsq_varint_get(&p, end, &kind) || kind >= DSQ_EV_KIND_COUNT ||
            it->started >> kind & 1 || dsq_varint_get(&p, end, &start))
            return DSQ_EFORMAT;
        it->started |= 1ull << kind;
        it->next[kind] = start;
    }
    if (it->rows) {
        it->p[0] = p;
        it->end[0] = end;
        return 0;
    }
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++)
        if (dsq_varint_get(&p, end, &len[i]))
            return DSQ_EFORMAT;
    /* the columns' lengths are read twice: to check that all parts fit, then to
     * place each column after the streams */
    const unsigned char *lens = p;
    uint64_t total = 0, l = 0;
    for (uint32_t i = 0; i < it->ncols; i++) {
        if (dsq_varint_get(&p, end, &l) || l > (uint64_t)(end - p))
            return DSQ_EFORMAT;
        total += l;
    }
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++)
        total += len[i] > (uint64_t)(end - p) ? (uint64_t)(end - p) + 1 : len[i];
    if (total > (uint64_t)(end - p))
        return DSQ_EFORMAT;
    for (int i = 0; i < DSQ_BLOCK_STREAMS; i++) {
        it->p[i] = p;
        it->end[i] = p += len[i];
    }
    for (uint32_t i = 0; i < it->ncols; i++) {
        dsq_varint_get(&lens, end, &l); /* read and checked above */
        it->col[i].p = p;
        it->col[i].end = p += l;
        it->col[i].e = 7;
        it->col[i].m = 0;
    }
    return 0;
}

/* Reads a shape spelled out (after its 0) into *s, keeping it, with its columns,
 * while there is room: *first is then its first column, else 0 (column 0). */
static int get_new_shape(dsq_block_iter *it, dsq_ev_shape *s, uint32_t *first)
{
    uint64_t kind, name;
    const unsigned char **p = &it->p[0], *end = it->end[0]; /* the shapes, or the rows */
    if (dsq_varint_get(p, end, &kind) || kind > UINT16_MAX || *p >= end)
        return DSQ_EFORMAT;
    s->kind = (uint16_t)kind;
    s->nf = *(*p)++;
    if (s->nf > DSQ_EV_MAXF)
        return DSQ_EFORMAT;
    for (int i = 0; i < s->nf; i++) {
        if (dsq_varint_get(p, end, &name) || name > UINT32_MAX || *p >= end)
            return DSQ_EFORMAT;
        s->name[i] = (uint32_t)name;
        s->unit[i] = *(*p)++;
    }
    *first = 0;
    if (it->nshapes < DSQ_BLOCK_SHAPES) {
        it->col_base[it->nshapes] = (uint16_t)it->cols_used;
        it->shapes[it->nshapes++] = *s;
        *first = it->cols_used;
        it->cols_used += s->nf;
    }
    return 0;
}

/* The next value of column c into *v (see event.h). 0, 1 when it is in its series
 * (DSQ_VAL_IN_SERIES), or -1. */
static int get_col_value(dsq_block_col *c, double *v)
{
    uint64_t tag;
    if (dsq_varint_get(&c->p, c->end, &tag))
        return -1;
    if (tag == DSQ_VAL_IN_SERIES)
        return 1; /* in its series; the column's state stays */
    unsigned e = (unsigned)(tag & 7);
    if (e == 7) {
        const unsigned char *p = c->p;
        if (tag != 7 || c->end - p < 8)
            return -1;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++)
            bits |= (uint64_t)p[i] << (8 * i);
        c->p += 8;
        memcpy(v, &bits, 8);
        c->e = 7;
        return 0;
    }
    /* a difference from the value before when it had this exponent (mod 2^64: a
     * damaged block wraps, never overflows) */
    int64_t m = dsq_unzigzag(tag >> 3);
    if ((unsigned)c->e == e)
        m = (int64_t)((uint64_t)c->m + (uint64_t)m);
    c->m = m;
    c->e = (int)e;
    *v = (double)m / dsq_pow10_small[e]; /* as dsq_num_get: the same double */
    return 0;
}

int dsq_block_iter_next(dsq_block_iter *it, dsq_event *ev)
{
    if (it->left == 0)
        return 0;
    uint64_t shape, dt, label, text, dl;
    uint32_t first = 0;
    dsq_ev_shape fresh;
    const dsq_ev_shape *s = &fresh;
    if (dsq_varint_get(&it->p[0], it->end[0], &shape))
        return DSQ_EFORMAT;
    if (shape == 0 ? get_new_shape(it, &fresh, &first) != 0 : shape > it->nshapes)
        return DSQ_EFORMAT;
    if (shape) {
        s = &it->shapes[shape - 1];
        first = it->col_base[shape - 1];
    }
    int r = !it->rows; /* the stream of each part: all 0 in rows */
    if (dsq_varint_get(&it->p[r], it->end[r], &dt) ||
        dsq_varint_get(&it->p[2 * r], it->end[2 * r], &label) ||
        dsq_varint_get(&it->p[3 * r], it->end[3 * r], &text) ||
        dsq_varint_get(&it->p[4 * r], it->end[4 * r], &dl) || label > UINT32_MAX ||
        text > UINT32_MAX)
        return DSQ_EFORMAT;
    ev->kind = s->kind;
    ev->t_us = (int64_t)((uint64_t)it->t_prev + (uint64_t)dsq_unzigzag(dt));
    ev->label = (uint32_t)label;
    ev->text = (uint32_t)text;
    ev->line = it->line_prev + (uint32_t)dsq_unzigzag(dl); /* mod 2^32: no signed overflow */
    ev->nf = s->nf;
    it->event = UINT64_MAX;
    it->in_series = 0;
    if (ev->nf && s->kind < DSQ_EV_KIND_COUNT && it->started >> s->kind & 1)
        it->event = it->next[s->kind]++;
    for (uint32_t i = 0; i < ev->nf; i++) {
        uint32_t k = first ? first + i : 0;
        int got;
        ev->f[i].name = s->name[i];
        ev->f[i].unit = s->unit[i];
        if (it->rows) {
            if (it->p[0] < it->end[0] && *it->p[0] == DSQ_VAL_IN_SERIES) {
                it->p[0]++;
                got = 1;
            } else {
                got = dsq_num_get(&it->p[0], it->end[0], &ev->f[i].v) != 0 ? -1 : 0;
            }
        } else {
            got = k >= it->ncols ? -1 : get_col_value(&it->col[k], &ev->f[i].v);
        }
        if (got < 0 || (got == 1 && it->event == UINT64_MAX))
            return DSQ_EFORMAT; /* (a value in a series needs its event's number) */
        if (got == 1) {
            ev->f[i].v = NAN;
            it->in_series |= 1u << i;
        }
    }
    it->t_prev = ev->t_us;
    it->line_prev = ev->line;
    it->left--;
    return 1;
}
