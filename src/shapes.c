/* Line shapes: see shapes.h. A set-associative table of learned shapes, found by a
 * hash of the line with its digits zeroed, checked byte for byte before use. */
#include "shapes.h"

#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"
#include "lazymem.h"
#include "num.h"
#include "sanitizer.h"
#include "timeconv.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SHAPE_LINE_MAX 384 /* longer lines are not learned */
#define SETS 256
#define WAYS 4
#define GIVE_UP_FAILS 32   /* a shape whose literal digits keep changing stops being learned */
#define NEG_KEY 2ull       /* in keys[]: a shape the recognizers must always read */
#define SEEN 4096          /* a shape is learned the second time it is seen: one-off lines
                              (NCCL's set-up, messages) cost no learning and evict nothing */

/* A span of the match: left as the prefix layers set it, an offset into the line,
 * or a pointer outside the line (a name the recognizer holds as a literal). */
enum { REF_KEEP = 0, REF_LINE, REF_ABS };

/* A span replay writes at byte `at` of the match: n bytes at `off` in the line, or
 * (lit_span) a span outside it. */
typedef struct rel_span {
    uint16_t at, off;
    uint32_t n;
} rel_span;

/* A field's name in the line and its unit: f[i] at byte `at` of the match. */
typedef struct rel_field {
    uint16_t at, off, n;
    uint8_t unit;
} rel_field;

typedef struct lit_span {
    size_t at;
    dsq_span v;
} lit_span;
typedef struct ref {
    const char *abs;
    uint32_t off, n;
    uint8_t how;
} ref;

/* the match's spans a shape may set: host, func, body, label, text, proc, f[].name */
#define SPANS_MAX (6 + DSQ_MATCH_MAXF)

typedef struct source {
    uint16_t off, n;
    uint8_t kind, slot;
} source;

typedef struct shape {
    uint64_t state;   /* prefix_state of its lines (the key has it too) */
    int32_t next[2];  /* the slots of the shapes that answered the line after, the
                         latest first, or -1 */
    uint32_t hits, fails;
    uint16_t len;
    uint8_t nsrc;
    int kind, family, level, rank, ev, nf, nv;
    int64_t t_us, tod_us;
    dsq_civil civil;
    uint8_t funit[DSQ_MATCH_MAXF];
    uint8_t vunit[DSQ_MATCH_MAXV];
    /* the spans replay writes (those not REF_KEEP): into the line, or not */
    uint8_t nrel, nlit, nrelf;
    uint8_t funits; /* a field's name is not in the line: funit[] gives the units */
    rel_span rel[SPANS_MAX];
    rel_field relf[DSQ_MATCH_MAXF];
    lit_span lit[SPANS_MAX];
    source src[DSQ_MATCH_MAXSRC];
    /* the values whose layout is planned (num.h), read in one call straight into
       the match: plan[j] at plan_off[j] in the line, to plan_dst[j] in the match;
       the values not planned are src[restv[0..nrestv)], read whole; the rank's,
       the stamp's (STAMP_MS or STAMP_S) and the civil stamp's sources are
       src[rank_src], src[time_src], src[civil_src] (-1: none) */
    uint8_t nplan, nrestv;
    int8_t rank_src, time_src, civil_src;
    uint8_t restv[DSQ_MATCH_MAXSRC];
    uint16_t plan_off[DSQ_MATCH_MAXSRC], plan_dst[DSQ_MATCH_MAXSRC];
    dsq_num_plan plan[DSQ_MATCH_MAXSRC];
    dsq_emit_ids ids; /* filled by the scanner as it emits the shape's events */
    /* the minute of the stamp read last ("YYYY-MM-DD HH:MM", 0: none) and its time:
       a shape's lines mostly share it */
    uint64_t minute[2];
    int64_t minute_t;
    unsigned char bytes[SHAPE_LINE_MAX + 16]; /* the line and its sentinel (what follows:
                                                  an earlier shape's, never compared),
                                                  '0' where a source digit is */
    unsigned char wild[SHAPE_LINE_MAX + 16];  /* 9 where a source digit is, else 0 */
} shape;

/* What dsq_shapes_apply saw of a line it did not know, for dsq_shapes_learn. */
typedef struct noted {
    const char *line;
    size_t len;
    uint64_t key, state;
    int kind, family, level, rank;
    dsq_span host, body;
} noted;

struct dsq_shapes {
    uint64_t keys[SETS * WAYS]; /* each shape's key (| NEG_KEY), together: one line read */
    shape *sets;          /* SETS x WAYS */
    unsigned char next[SETS]; /* the way a new shape takes next, round robin */
    uint32_t seen[SEEN];  /* keys of shapes seen once (tags): learned when seen again */
    noted nt;
    int have_noted;
    int32_t prev;  /* the slot of the shape that answered the last line, -1 after a miss */
    dsq_shapes_stats st;
};

int dsq_shapes_new(dsq_shapes **out)
{
    dsq_shapes *s = calloc(1, sizeof *s);
    if (!s)
        return DSQ_ENOMEM;
    s->sets = dsq_lazy_alloc((size_t)SETS * WAYS * sizeof *s->sets); /* a few sets used */
    if (!s->sets) {
        free(s);
        return DSQ_ENOMEM;
    }
    s->prev = -1;
    *out = s;
    return 0;
}

void dsq_shapes_free(dsq_shapes *s)
{
    if (!s)
        return;
    dsq_lazy_free(s->sets);
    free(s);
}

const dsq_shapes_stats *dsq_shapes_stats_get(const dsq_shapes *s) { return &s->st; }

/* 8 bytes with each digit made '0' (SWAR: a byte is a digit when it is '0'..'9'). */
static uint64_t skeleton8(uint64_t x)
{
    const uint64_t lo7 = 0x7F7F7F7F7F7F7F7Full, hi = 0x8080808080808080ull;
    uint64_t a = x ^ 0x3030303030303030ull;
    uint64_t not_digit = (((a & lo7) + 0x7676767676767676ull) | a) & hi;
    uint64_t digit = ((~not_digit & hi) >> 7) * 0xFF;
    return (x & ~digit) | (0x3030303030303030ull & digit);
}

static uint64_t word_at(const char *line, size_t len, size_t at)
{
    uint64_t x = 0;
    if (len >= 8)
        memcpy(&x, line + (at + 8 <= len ? at : len - 8), 8);
    else
        memcpy(&x, line, len);
    return x;
}

/* The key of a line's shape: its length, five of its words with digits zeroed
 * (a line of the same shape has the same; others rarely do, and every use is
 * checked byte for byte), and what the prefix layers left in the match. */
static uint64_t shape_key(const char *line, size_t len, uint64_t state)
{
    uint64_t h = (len + 1) * 0x9E3779B97F4A7C15ull ^ state;
    size_t at[5] = {0, len / 4, len / 2, len - len / 4, len >= 8 ? len - 8 : 0};
    for (int i = 0; i < 5; i++) {
        h = (h ^ skeleton8(word_at(line, len, at[i]))) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 31;
    }
    return (h & ~3ull) | 1; /* bit 0: not empty; bit 1: free for NEG_KEY */
}

/* Whether the line's bytes are the shape's: the same bytes but where a source
 * digit was, which must be a digit. The sentinel line[len] is compared too. One
 * test does both: the byte minus the shape's ('0' at a source digit) is at most
 * wild[] (9 there, 0 elsewhere), as an unsigned byte. */
#if defined(__SSE2__)
/* Bits of the 16 bytes at b that are the shape's at i (see same_bytes). */
static unsigned same16(const shape *sh, size_t i, const unsigned char *b)
{
    __m128i vb = _mm_loadu_si128((const __m128i *)(const void *)b);
    __m128i va = _mm_loadu_si128((const __m128i *)(const void *)(sh->bytes + i));
    __m128i vw = _mm_loadu_si128((const __m128i *)(const void *)(sh->wild + i));
    __m128i d = _mm_sub_epi8(vb, va);
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, vw), d));
}
#endif

/* Reading 16 bytes from p cannot fault when they lie in p's page (bytes past the
 * line are masked out). Not under AddressSanitizer, which reports such reads. */
#define SHAPE_PAGE_READS (!DSQ_SANITIZED)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SHAPE_AVX2 __attribute__((target("avx2")))
static int have_avx2;

__attribute__((constructor)) static void shapes_init(void)
{
    __builtin_cpu_init();
    have_avx2 = __builtin_cpu_supports("avx2") != 0;
}

/* same16 on 32 bytes, as a mask of bytes (0xFF: the shape's). */
static SHAPE_AVX2 inline __m256i same32(const shape *sh, size_t i, const unsigned char *b)
{
    __m256i vb = _mm256_loadu_si256((const __m256i *)(const void *)b);
    __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)(sh->bytes + i));
    __m256i vw = _mm256_loadu_si256((const __m256i *)(const void *)(sh->wild + i));
    __m256i d = _mm256_sub_epi8(vb, va);
    return _mm256_cmpeq_epi8(_mm256_min_epu8(d, vw), d);
}

/* same_bytes of n >= 32 bytes (the sentinel counted), 32 at a time, the last 32
 * overlapping the ones before: nothing is read past the sentinel. The masks are
 * combined and tested once: a line checked is nearly always its shape's. */
static SHAPE_AVX2 int same_bytes_avx2(const shape *sh, const unsigned char *b, size_t n)
{
    __m256i ok = same32(sh, n - 32, b + n - 32);
    for (size_t i = 0; i + 32 <= n; i += 32)
        ok = _mm256_and_si256(ok, same32(sh, i, b + i));
    return (uint32_t)_mm256_movemask_epi8(ok) == 0xFFFFFFFFu;
}
#endif

/* Inlined where a line is answered: their calls were ~5 % of a line's instructions. */
#define SHAPE_INLINE static inline __attribute__((always_inline))

SHAPE_INLINE int same_bytes(const shape *sh, const char *line, size_t len)
{
    const unsigned char *b = (const unsigned char *)line;
    size_t n = len + 1, i = 0;
#ifdef SHAPE_AVX2
    if (have_avx2 && n >= 32)
        return same_bytes_avx2(sh, b, n);
#endif
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16)
        if (same16(sh, i, b + i) != 0xFFFF)
            return 0;
    if (i < n && SHAPE_PAGE_READS && ((uintptr_t)(b + i) & 4095) <= 4096 - 16) {
        unsigned want = (1u << (n - i)) - 1;
        return (same16(sh, i, b + i) & want) == want;
    }
#endif
    for (; i < n; i++) {
        if ((unsigned char)(b[i] - sh->bytes[i]) > sh->wild[i])
            return 0;
    }
    return 1;
}

/* Whether the line is the shape's but for its digits (any digit anywhere one was):
 * the same shape with other literal digits, not another shape with the same key. */
static int same_skeleton(const shape *sh, const char *line, size_t len)
{
    const unsigned char *b = (const unsigned char *)line;
    for (size_t i = 0; i <= len; i++)
        if (sh->bytes[i] != b[i] && ((unsigned)(b[i] - '0') > 9 || (unsigned)(sh->bytes[i] - '0') > 9))
            return 0;
    return 1;
}

/* What the prefix layers left in m (shapes.h: a kind, host, body, rank or time),
 * as far as recognizers could tell it apart; -1 when m has something a shape does
 * not keep (a time) or cannot pack. */
static int64_t prefix_state(const dsq_match *m, const char *line, size_t len)
{
    int body = !m->body.p ? 0 : m->body.p == line && m->body.n == len ? 1 : -1;
    if (m->t_us != DSQ_TIME_NONE || m->tod_us >= 0 || body < 0 || (unsigned)m->kind > 255 ||
        (unsigned)m->level > 15 || (unsigned)m->family > 255 ||
        (unsigned)(m->rank + 1) > 0x1000000)
        return -1;
    return (int64_t)((uint64_t)(uint32_t)(m->rank + 1) << 24 | (uint64_t)m->kind << 16 |
                     (uint64_t)m->family << 8 | (uint64_t)m->level << 4 |
                     (uint64_t)(m->host.n != 0) << 1 | (uint64_t)body);
}

/* dsq_time_stamp_minute of the stamp at p, found again only when its minute differs
 * from the last one this shape read. */
static int64_t stamp_minute(shape *sh, const char *p)
{
    uint64_t k[2];
    memcpy(k, p, sizeof k);
    if (k[0] != sh->minute[0] || k[1] != sh->minute[1]) {
        sh->minute[0] = k[0];
        sh->minute[1] = k[1];
        sh->minute_t = dsq_time_stamp_minute(p);
    }
    return sh->minute_t;
}

/* The values of the shape's sources read whole (not planned) in this line; 0 if
 * one does not read as it did when the shape was learned (it always does: a
 * guard). */
static int read_values(const shape *sh, const char *line, size_t len, double *vals)
{
    for (int j = 0; j < sh->nrestv; j++) {
        int i = sh->restv[j];
        const char *p = line + sh->src[i].off, *stop = NULL;
        if (dsq_num_parse(p, line + len, &vals[i], &stop) != 0 || stop != p + sh->src[i].n)
            return 0;
    }
    return 1;
}

/* Fills m from the shape for this line (its bytes already checked). */
SHAPE_INLINE int replay(shape *sh, const char *line, size_t len, dsq_match *m, int lean)
{
    double vals[DSQ_MATCH_MAXSRC];
    if (sh->nrestv && !read_values(sh, line, len, vals))
        return 0;
    int rank = sh->rank;
    if (sh->rank_src >= 0)
        rank = dsq_time_digits(line + sh->src[sh->rank_src].off, sh->src[sh->rank_src].n);
    int64_t t_us = sh->t_us;
    if (sh->time_src >= 0) {
        const source *sr = &sh->src[sh->time_src];
        const char *p = line + sr->off;
        t_us = stamp_minute(sh, p) + (sr->kind == DSQ_SRC_STAMP_MS ? dsq_time_stamp_ms_rest(p)
                                                                     : dsq_time_stamp_s_rest(p));
    }
    m->kind = sh->kind;
    m->family = sh->family;
    m->level = sh->level;
    m->rank = rank;
    m->t_us = t_us;
    m->tod_us = sh->tod_us;
    if (sh->civil.mo) {
        m->civil = sh->civil;
        if (sh->civil_src >= 0)
            DSQ_TIME_CIVIL_MD(&m->civil, line + sh->src[sh->civil_src].off);
    } else {
        m->civil.mo = 0;
    }
    for (int j = 0; !lean && j < sh->nrelf; j++) { /* fields named in the line, units */
        rel_field r = sh->relf[j];
        dsq_mfield *f = (dsq_mfield *)(void *)((char *)m + r.at);
        f->name.p = line + r.off;
        f->name.n = r.n;
        f->unit = r.unit;
    }
    for (int j = 0; j < sh->nrel; j++) { /* the line's other spans at their offsets */
        rel_span r = sh->rel[j];
        dsq_span v = {line + r.off, r.n};
        memcpy((char *)m + r.at, &v, sizeof v);
    }
    for (int j = 0; j < sh->nlit; j++)
        memcpy((char *)m + sh->lit[j].at, &sh->lit[j].v, sizeof sh->lit[j].v);
    m->ev = sh->ev;
    m->nf = sh->nf;
    m->nv = sh->nv;
    for (int i = 0; sh->funits && !lean && i < sh->nf; i++)
        m->f[i].unit = sh->funit[i];
    for (int i = 0; i < sh->nv; i++)
        m->unit[i] = sh->vunit[i];
    /* their digits are digits (same_bytes): no search for them */
    dsq_num_planned_at(sh->plan, sh->plan_off, sh->nplan, line, m, sh->plan_dst);
    for (int j = 0; j < sh->nrestv; j++) { /* values read whole (read_values) */
        const source *sr = &sh->src[sh->restv[j]];
        if (sr->kind == DSQ_SRC_FIELD)
            m->f[sr->slot].v = vals[sh->restv[j]];
        else
            m->v[sr->slot] = vals[sh->restv[j]];
    }
    m->nsrc = 0;
    return 1;
}

/* The shape in slot i answers the line: its bytes and prefix state are the line's
 * (then its key is the line's too). */
SHAPE_INLINE int answer_from(dsq_shapes *s, int32_t i, int32_t prev, const char *line, size_t len,
                             dsq_match *m, int lean)
{
    shape *sh = &s->sets[i];
    if (!same_bytes(sh, line, len) || !replay(sh, line, len, m, lean && sh->ids.lean))
        return 0;
    if (prev >= 0 && s->sets[prev].next[0] != i) { /* the guesses for the line after */
        s->sets[prev].next[1] = s->sets[prev].next[0];  /* prev's next time */
        s->sets[prev].next[0] = i;
    }
    sh->hits++;
    s->st.hits++;
    s->prev = i;
    return 1;
}

int dsq_shapes_apply(dsq_shapes *s, const char *line, size_t len, dsq_match *m,
                     dsq_emit_ids **ids, int lean)
{
    int32_t prev = s->prev;
    s->have_noted = 0;
    s->prev = -1;
    int64_t state = prefix_state(m, line, len);
    if (state < 0 || len > SHAPE_LINE_MAX)
        return 0;
    /* logs repeat their sequence of shapes (a step's lines, rank after rank): the
     * last two shapes that followed the last line's shape are tried first, no key
     * (one of another length is no guess) */
    for (int k = 0; k < 2 && prev >= 0; k++) {
        int32_t next = s->sets[prev].next[k];
        if (next >= 0 && s->keys[next] && !(s->keys[next] & NEG_KEY) &&
            s->sets[next].len == len && s->sets[next].state == (uint64_t)state &&
            answer_from(s, next, prev, line, len, m, lean)) {
            if (ids)
                *ids = &s->sets[next].ids;
            return 1;
        }
    }
    uint64_t key = shape_key(line, len, (uint64_t)state);
    size_t at = (key >> 24) % SETS * WAYS;
    for (int w = 0; w < WAYS; w++) {
        if ((s->keys[at + w] & ~NEG_KEY) != key)
            continue;
        if (s->keys[at + w] & NEG_KEY) {
            s->st.misses++;
            return 0; /* not noted: nothing to learn */
        }
        /* no length check: the sentinel (line[len], never inside a line) differs */
        shape *sh = &s->sets[at + w];
        if (answer_from(s, (int32_t)(at + w), prev, line, len, m, lean)) {
            if (ids)
                *ids = &sh->ids;
            return 1;
        }
        if (same_skeleton(sh, line, len))
            sh->fails++; /* other literal digits (else another shape with its key) */
    }
    s->st.misses++;
    s->nt = (noted){.line = line, .len = len, .key = key, .state = (uint64_t)state,
                    .kind = m->kind, .family = m->family, .level = m->level, .rank = m->rank,
                    .host = m->host, .body = m->body};
    s->have_noted = 1;
    return 0;
}

/* The last source of this kind and slot, or NULL. */
static const dsq_msrc *last_src(const dsq_match *m, int kind, int slot)
{
    for (int i = m->nsrc - 1; i >= 0; i--)
        if (m->src[i].kind == kind && m->src[i].slot == slot)
            return &m->src[i];
    return NULL;
}

static int in_line(const char *p, const char *line, size_t len)
{
    return p && p >= line && p <= line + len;
}

static ref ref_of(dsq_span out, dsq_span in, const char *line, size_t len)
{
    if (out.p == in.p && out.n == in.n)
        return (ref){0};
    if (in_line(out.p, line, len) && out.n <= len - (size_t)(out.p - line))
        return (ref){NULL, (uint32_t)(out.p - line), (uint32_t)out.n, REF_LINE};
    return (ref){out.p, 0, (uint32_t)out.n, REF_ABS};
}

/* Adds a source to the shape and marks its digits as wildcards; 0 if it is not in
 * the line or reads otherwise than the match has it. */
static int add_source(shape *sh, const dsq_msrc *sr, const char *line, size_t len,
                      const dsq_match *m)
{
    if (!sr || !in_line(sr->p, line, len) || sr->n == 0 ||
        sr->n > len - (size_t)(sr->p - line))
        return 0;
    const char *p = sr->p, *stop = NULL;
    switch (sr->kind) {
    case DSQ_SRC_FIELD:
    case DSQ_SRC_V: {
        double v, want = sr->kind == DSQ_SRC_FIELD ? m->f[sr->slot].v : m->v[sr->slot];
        if (dsq_num_parse(p, line + len, &v, &stop) != 0 || stop != p + sr->n ||
            memcmp(&v, &want, sizeof v) != 0)
            return 0;
        break;
    }
    case DSQ_SRC_RANK:
        if (sr->n > 7 || dsq_time_digits(p, sr->n) != m->rank)
            return 0;
        break;
    case DSQ_SRC_STAMP_MS:
        if (sr->n != 23 || dsq_time_stamp_ms(p) != m->t_us)
            return 0;
        break;
    case DSQ_SRC_STAMP_S:
        if (sr->n != 19 || dsq_time_stamp_s(p) != m->t_us)
            return 0;
        break;
    case DSQ_SRC_CIVIL_MD: {
        dsq_civil c;
        DSQ_TIME_CIVIL_MD(&c, p);
        if (sr->n != 14 || !m->civil.mo || memcmp(&c, &m->civil, sizeof c) != 0)
            return 0;
        break;
    }
    default: return 0;
    }
    size_t off = (size_t)(p - line);
    for (size_t i = off; i < off + sr->n; i++)
        if ((unsigned)(line[i] - '0') <= 9) {
            sh->wild[i] = 9;
            sh->bytes[i] = '0';
        }
    sh->src[sh->nsrc] = (source){(uint16_t)off, sr->n, sr->kind, sr->slot};
    dsq_num_plan *pl = &sh->plan[sh->nplan];
    int value = sr->kind == DSQ_SRC_FIELD || sr->kind == DSQ_SRC_V;
    if (value)
        dsq_num_plan_of(p, sr->n, pl);
    if (value && pl->ok) {
        size_t field_v = offsetof(dsq_match, f) + sr->slot * sizeof m->f[0] + offsetof(dsq_mfield, v);
        size_t v = offsetof(dsq_match, v) + sr->slot * sizeof m->v[0];
        sh->plan_off[sh->nplan] = (uint16_t)off;
        sh->plan_dst[sh->nplan++] = (uint16_t)(sr->kind == DSQ_SRC_FIELD ? field_v : v);
    } else if (value) {
        sh->restv[sh->nrestv++] = sh->nsrc;
    } else if (sr->kind == DSQ_SRC_RANK) {
        sh->rank_src = (int8_t)sh->nsrc;
    } else if (sr->kind == DSQ_SRC_CIVIL_MD) {
        sh->civil_src = (int8_t)sh->nsrc;
    } else {
        sh->time_src = (int8_t)sh->nsrc;
    }
    sh->nsrc++;
    return 1;
}

/* Notes the span `out` the match has at byte `at` (the prefix layers left `in`
 * there): replay writes it unless it is `in` (REF_KEEP). Returns its ref. */
static ref add_span(shape *sh, size_t at, dsq_span out, dsq_span in, const char *line,
                    size_t len)
{
    ref r = ref_of(out, in, line, len);
    if (r.how == REF_KEEP)
        return r;
    if (r.how == REF_LINE)
        sh->rel[sh->nrel++] = (rel_span){(uint16_t)at, (uint16_t)r.off, r.n};
    else
        sh->lit[sh->nlit++] = (lit_span){at, {r.abs, r.n}};
    return r;
}

/* Whether a span of the line covers a source digit (its bytes vary by line). */
static int has_wild(const shape *sh, ref r)
{
    if (r.how != REF_LINE)
        return 0;
    for (uint32_t i = r.off; i < r.off + r.n; i++)
        if (sh->wild[i])
            return 1;
    return 0;
}

/* Fills the shape from the line and the recognizers' match; 0 if it cannot be
 * replayed. */
static int build(shape *sh, const noted *nt, const dsq_match *m)
{
    const char *line = nt->line;
    size_t len = nt->len;
    /* bytes past len + 1 are never compared (same_bytes masks them out) */
    memset(sh->wild, 0, len + 1);
    memcpy(sh->bytes, line, len + 1); /* kept when refused too: same_skeleton reads it */
    if (m->family == DSQ_FAM_NCCL || m->nsrc > DSQ_MATCH_MAXSRC || m->nf > DSQ_MATCH_MAXF ||
        m->nv > DSQ_MATCH_MAXV || m->nf < 0 || m->nv < 0)
        return 0;
    sh->nsrc = sh->nplan = sh->nrestv = 0;
    sh->rank_src = sh->time_src = sh->civil_src = -1;
    sh->minute[0] = sh->minute[1] = 0;
    sh->state = nt->state;
    sh->next[0] = sh->next[1] = -1;
    for (int i = 0; i < m->nf; i++)
        if (!add_source(sh, last_src(m, DSQ_SRC_FIELD, i), line, len, m))
            return 0;
    for (int i = 0; i < m->nv; i++)
        if (!add_source(sh, last_src(m, DSQ_SRC_V, i), line, len, m))
            return 0;
    /* a rank or stamp read without a source keeps its digits literal */
    const dsq_msrc *r = last_src(m, DSQ_SRC_RANK, 0);
    if (r && r->p && !add_source(sh, r, line, len, m))
        return 0;
    const dsq_msrc *t = NULL;
    for (int i = m->nsrc - 1; i >= 0 && !t; i--)
        if (m->src[i].kind == DSQ_SRC_STAMP_MS || m->src[i].kind == DSQ_SRC_STAMP_S)
            t = &m->src[i];
    if (t && t->p && !add_source(sh, t, line, len, m))
        return 0;
    const dsq_msrc *c = last_src(m, DSQ_SRC_CIVIL_MD, 0);
    if (c && c->p && !add_source(sh, c, line, len, m))
        return 0;
    sh->kind = m->kind;
    sh->family = m->family;
    sh->level = m->level;
    sh->rank = m->rank;
    sh->ev = m->ev;
    sh->nf = m->nf;
    sh->nv = m->nv;
    sh->t_us = m->t_us;
    sh->tod_us = m->tod_us;
    sh->civil = m->civil.mo ? m->civil : (dsq_civil){0};
    dsq_span none = {NULL, 0};
    sh->nrel = sh->nlit = sh->nrelf = sh->funits = 0;
    add_span(sh, offsetof(dsq_match, host), m->host, nt->host, line, len);
    add_span(sh, offsetof(dsq_match, func), m->func, none, line, len);
    add_span(sh, offsetof(dsq_match, body), m->body, nt->body, line, len);
    ref label = add_span(sh, offsetof(dsq_match, label), m->label, none, line, len);
    ref text = add_span(sh, offsetof(dsq_match, text), m->text, none, line, len);
    add_span(sh, offsetof(dsq_match, proc), m->proc, none, line, len);
    memset(&sh->ids, 0, sizeof sh->ids);
    sh->ids.label_same = !has_wild(sh, label);
    sh->ids.text_same = !has_wild(sh, text);
    for (int i = 0; i < m->nf; i++) {
        size_t at = offsetof(dsq_match, f) + (size_t)i * sizeof m->f[0];
        ref name = ref_of(m->f[i].name, none, line, len);
        if (name.how == REF_LINE) { /* the name and the unit together */
            sh->relf[sh->nrelf++] = (rel_field){(uint16_t)at, (uint16_t)name.off,
                                                (uint16_t)name.n, m->f[i].unit};
        } else {
            sh->funits = 1;
            add_span(sh, at + offsetof(dsq_mfield, name), m->f[i].name, none, line, len);
        }
        if (has_wild(sh, name))
            sh->ids.f_vary |= 1u << i;
        sh->funit[i] = m->f[i].unit;
    }
    for (int i = 0; i < m->nv; i++)
        sh->vunit[i] = m->unit[i];
    /* the shape gives back this very match from this very line, or is not kept */
    dsq_match again;
    again.kind = nt->kind, again.family = nt->family, again.level = nt->level;
    again.rank = nt->rank, again.host = nt->host, again.body = nt->body;
    again.t_us = DSQ_TIME_NONE, again.tod_us = -1, again.civil.mo = 0;
    again.func = again.label = again.text = again.proc = none;
    again.nf = again.nv = again.ev = again.nsrc = 0;
    return replay(sh, line, len, &again, 0) && dsq_shapes_same_match(&again, m);
}

void dsq_shapes_learn(dsq_shapes *s, const char *line, size_t len, const dsq_match *m)
{
    if (!s->have_noted || s->nt.line != line || s->nt.len != len)
        return;
    s->have_noted = 0;
    uint64_t key = s->nt.key;
    uint32_t tag = (uint32_t)(key >> 32) | 1, *seen = &s->seen[key % SEEN];
    if (*seen != tag) {
        *seen = tag;
        return;
    }
    size_t at = (key >> 24) % SETS * WAYS;
    shape *set = &s->sets[at], *sh = NULL;
    uint32_t fails = 0, hits = 0;
    for (int w = 0; w < WAYS && !sh; w++)
        if (s->keys[at + w] == key && set[w].len == len && same_skeleton(&set[w], line, len)) {
            sh = &set[w]; /* the same shape with other literal digits: replaced */
            fails = sh->fails, hits = sh->hits;
        }
    for (int w = 0; w < WAYS && !sh; w++)
        if (!s->keys[at + w])
            sh = &set[w];
    if (!sh) {
        unsigned char *nx = &s->next[(key >> 24) % SETS];
        sh = &set[*nx % WAYS];
        *nx = (unsigned char)((*nx + 1) % WAYS);
    }
    s->keys[at + (size_t)(sh - set)] = key;
    sh->len = (uint16_t)len;
    sh->fails = fails;
    sh->hits = hits;
    if (!build(sh, &s->nt, m) || (fails >= GIVE_UP_FAILS && hits < fails)) {
        s->keys[at + (size_t)(sh - set)] = key | NEG_KEY;
        s->st.refused++;
    } else {
        s->st.learned++;
    }
}

static int same_span(dsq_span a, dsq_span b) { return a.p == b.p && a.n == b.n; }

static int same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

int dsq_shapes_same_match(const dsq_match *a, const dsq_match *b)
{
    if (a->kind != b->kind || a->family != b->family || a->level != b->level ||
        a->rank != b->rank || a->t_us != b->t_us || a->tod_us != b->tod_us || a->ev != b->ev ||
        a->nf != b->nf || a->nv != b->nv || a->civil.mo != b->civil.mo)
        return 0;
    if (a->civil.mo && memcmp(&a->civil, &b->civil, sizeof a->civil) != 0)
        return 0;
    if (!same_span(a->host, b->host) || !same_span(a->func, b->func) ||
        !same_span(a->body, b->body) || !same_span(a->label, b->label) ||
        !same_span(a->text, b->text) || !same_span(a->proc, b->proc))
        return 0;
    for (int i = 0; i < a->nv && i < DSQ_MATCH_MAXV; i++)
        if (!same_double(a->v[i], b->v[i]) || a->unit[i] != b->unit[i])
            return 0;
    for (int i = 0; i < a->nf && i < DSQ_MATCH_MAXF; i++)
        if (!same_span(a->f[i].name, b->f[i].name) || !same_double(a->f[i].v, b->f[i].v) ||
            a->f[i].unit != b->f[i].unit)
            return 0;
    return 1;
}
