/* Block encoding of events (schema 3).
 *
 * Layout: varint count, then per event: varint shape, [when shape is 0: varint
 * kind, byte nf, then nf times (varint name, byte unit)], zigzag varint time
 * delta, varint label, varint text, zigzag varint line delta, then nf packed
 * numbers (varint.h). Shape 0 spells the event's kind, names and units out and,
 * while the block has fewer than DSQ_BLOCK_SHAPES, makes them its next shape; shape
 * s > 0 reuses shape s - 1. Most events repeat a form (a timer line, a loss dict),
 * so a block holds its names once and zstd has a third less to pack. The first
 * time delta is relative to the block key's time. Decoding checks every length
 * against the end of the value, so a damaged block is reported, never overrun.
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
    memset(b->last_shape, 0, sizeof b->last_shape);
}

void dsq_block_free_buf(dsq_block *b)
{
    free(b->buf);
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

static int reserve(dsq_block *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + more)
        cap *= 2;
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

/* Writes ev's shape out (shape 0) and keeps it while there is room. */
static void put_new_shape(dsq_block *b, const dsq_event *ev)
{
    b->buf[b->len++] = 0;
    put_varint(b, ev->kind);
    b->buf[b->len++] = ev->nf;
    for (int i = 0; i < ev->nf; i++) {
        put_varint(b, ev->f[i].name);
        b->buf[b->len++] = ev->f[i].unit;
    }
    if (b->nshapes == DSQ_BLOCK_SHAPES)
        return;
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
}

int dsq_block_add(dsq_block *b, const dsq_event *ev)
{
    dsq_num_form forms[DSQ_EV_MAXF];
    dsq_ev_forms(ev, forms);
    return dsq_block_add_forms(b, ev, forms);
}

int dsq_block_add_forms(dsq_block *b, const dsq_event *ev, const dsq_num_form *forms)
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
    else
        put_new_shape(b, ev);
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
    for (int i = 0; i < nf; i++)
        p = put_num(p, ev->f[i].v, &forms[i]);
    b->len = (size_t)(p - buf);
    return 0;
}

static int get_varint(dsq_block_iter *it, uint64_t *out)
{
    return dsq_varint_get(&it->p, it->end, out);
}

int dsq_block_iter_init(dsq_block_iter *it, const void *data, size_t n, int64_t t_first)
{
    it->p = data;
    it->end = it->p + n;
    it->t_prev = t_first;
    it->line_prev = 0;
    it->nshapes = 0;
    uint64_t c;
    if (get_varint(it, &c) != 0 || c > UINT32_MAX)
        return DSQ_EFORMAT;
    it->left = (uint32_t)c;
    return 0;
}

/* Reads a shape spelled out (after its 0) into *s, keeping it while there is room. */
static int get_new_shape(dsq_block_iter *it, dsq_ev_shape *s)
{
    uint64_t kind, name;
    if (get_varint(it, &kind) || kind > UINT16_MAX || it->p >= it->end)
        return DSQ_EFORMAT;
    s->kind = (uint16_t)kind;
    s->nf = *it->p++;
    if (s->nf > DSQ_EV_MAXF)
        return DSQ_EFORMAT;
    for (int i = 0; i < s->nf; i++) {
        if (get_varint(it, &name) || name > UINT32_MAX || it->p >= it->end)
            return DSQ_EFORMAT;
        s->name[i] = (uint32_t)name;
        s->unit[i] = *it->p++;
    }
    if (it->nshapes < DSQ_BLOCK_SHAPES)
        it->shapes[it->nshapes++] = *s;
    return 0;
}

int dsq_block_iter_next(dsq_block_iter *it, dsq_event *ev)
{
    if (it->left == 0)
        return 0;
    uint64_t shape, dt, label, text, dl;
    dsq_ev_shape fresh;
    const dsq_ev_shape *s = &fresh;
    if (get_varint(it, &shape))
        return DSQ_EFORMAT;
    if (shape == 0 ? get_new_shape(it, &fresh) != 0 : shape > it->nshapes)
        return DSQ_EFORMAT;
    if (shape)
        s = &it->shapes[shape - 1];
    if (get_varint(it, &dt) || get_varint(it, &label) || get_varint(it, &text) ||
        get_varint(it, &dl))
        return DSQ_EFORMAT;
    ev->kind = s->kind;
    ev->t_us = (int64_t)((uint64_t)it->t_prev + (uint64_t)dsq_unzigzag(dt));
    ev->label = (uint32_t)label;
    ev->text = (uint32_t)text;
    ev->line = it->line_prev + (uint32_t)dsq_unzigzag(dl); /* mod 2^32: no signed overflow */
    ev->nf = s->nf;
    for (int i = 0; i < ev->nf; i++) {
        ev->f[i].name = s->name[i];
        ev->f[i].unit = s->unit[i];
        if (dsq_num_get(&it->p, it->end, &ev->f[i].v))
            return DSQ_EFORMAT;
    }
    it->t_prev = ev->t_us;
    it->line_prev = ev->line;
    it->left--;
    return 1;
}
