/* Spans: views into a line (never owned), and the few comparisons every
 * recognizer and handler needs. Header-only so they inline into the hot path. */
#ifndef DSQ_SPAN_H
#define DSQ_SPAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct dsq_span {
    const char *p;
    size_t n;
} dsq_span;

/* A string literal and its length, for the functions below. */
#define DSQ_LIT(s) s, sizeof s - 1

/* [p, end) starts with lit. */
static inline int dsq_starts(const char *p, const char *end, const char *lit, size_t n)
{
    return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0;
}

/* [p, e) without leading and trailing blanks (spaces and tabs). */
static inline dsq_span dsq_trim(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    return (dsq_span){p, (size_t)(e - p)};
}

static inline dsq_span dsq_span_trim(dsq_span s) { return dsq_trim(s.p, s.p + s.n); }

static inline int dsq_span_starts(dsq_span s, const char *lit, size_t n)
{
    return s.n >= n && memcmp(s.p, lit, n) == 0;
}

static inline int dsq_span_ends(dsq_span s, const char *lit, size_t n)
{
    return s.n >= n && memcmp(s.p + s.n - n, lit, n) == 0;
}

static inline int dsq_span_has(dsq_span s, const char *lit, size_t n)
{
    return s.n >= n && memmem(s.p, s.n, lit, n) != NULL;
}

/* a[0..n) == b[0..n), a word at a time (the last word overlapping the one before):
 * a library memcmp call costs more than the compare of a short name. */
static inline int dsq_same_bytes(const char *a, const char *b, size_t n)
{
    uint64_t x, y;
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, a + i, 8), memcpy(&y, b + i, 8);
            if (x != y)
                return 0;
        }
        if (i == n)
            return 1;
        memcpy(&x, a + n - 8, 8), memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    uint32_t u, v, u2, v2;
    if (n >= 4) {
        memcpy(&u, a, 4), memcpy(&v, b, 4), memcpy(&u2, a + n - 4, 4), memcpy(&v2, b + n - 4, 4);
        return u == v && u2 == v2;
    }
    uint16_t h, g, h2, g2;
    if (n >= 2) {
        memcpy(&h, a, 2), memcpy(&g, b, 2), memcpy(&h2, a + n - 2, 2), memcpy(&g2, b + n - 2, 2);
        return h == g && h2 == g2;
    }
    return n == 0 || a[0] == b[0];
}

/* The first byte of [p, end) that is one of set[0..nset), or end. With SSE2, 16
 * bytes at a time while 16 are left; called with a literal set, the compares
 * unroll. For a recognizer's stop bytes: a host's end, a word's, the first ':'. */
static inline const char *dsq_find_any_bytes(const char *p, const char *end, const char *set,
                                             size_t nset)
{
    for (; p < end; p++)
        for (size_t k = 0; k < nset; k++)
            if (*p == set[k])
                return p;
    return end;
}
#ifdef __SSE2__
static inline const char *dsq_find_any(const char *p, const char *end, const char *set,
                                       size_t nset)
{
    for (; end - p >= 16; p += 16) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i hit = _mm_cmpeq_epi8(c, _mm_set1_epi8(set[0]));
        for (size_t k = 1; k < nset; k++)
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(c, _mm_set1_epi8(set[k])));
        unsigned bits = (unsigned)_mm_movemask_epi8(hit);
        if (bits)
            return p + __builtin_ctz(bits);
    }
    return dsq_find_any_bytes(p, end, set, nset);
}
#else
static inline const char *dsq_find_any(const char *p, const char *end, const char *set,
                                       size_t nset)
{
    return dsq_find_any_bytes(p, end, set, nset);
}
#endif

#endif
