/* Spans: views into a line (never owned), and the few comparisons every
 * recognizer and handler needs. Header-only so they inline into the hot path. */
#ifndef DSQ_SPAN_H
#define DSQ_SPAN_H

#include <stddef.h>
#include <string.h>

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

#endif
