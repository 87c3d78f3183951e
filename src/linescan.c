/* Line-end scanners (see linescan.h): a portable one always, an AVX2 one on x86-64.
 *
 * Invariant of every backend: reads stay inside [p, end). Chunks come from callers
 * (decoders, tests with exact-size heap copies) and carry no padding, so the AVX2
 * loop takes whole 32-byte blocks only while they fit and finishes bytewise.
 * Choosing a backend reads the environment and the CPU once per scanner set-up,
 * never per line.
 */
#include "linescan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"

#define DSQ_LINESCAN_ENV "DSQ_LINES_BACKEND"

static const char *const backend_names[DSQ_LINESCAN_COUNT] = {"auto", "scalar", "avx2"};

/* memchr for '\n' (cached per chunk), then memchr for '\r' before it. */
static const char *find_scalar(dsq_linescan *ls, const char *p, const char *end)
{
    if (!ls->nl || ls->nl < p) {
        const char *n = memchr(p, '\n', (size_t)(end - p));
        ls->nl = n ? n : end;
    }
    const char *cr = memchr(p, '\r', (size_t)(ls->nl - p));
    if (cr)
        return cr;
    return ls->nl < end ? ls->nl : NULL;
}

/* The bytewise end of every backend: [p, end) is short. */
static const char *find_bytes(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p == '\n' || *p == '\r')
            return p;
    return NULL;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define DSQ_LINESCAN_HAVE_AVX2 1
#define DSQ_AVX2 __attribute__((target("avx2")))

/* Bit i set when byte i of the 32 at p is '\n' or '\r'. */
DSQ_AVX2 static inline unsigned eol_mask32(const char *p, __m256i nl, __m256i cr)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i hit = _mm256_or_si256(_mm256_cmpeq_epi8(v, nl), _mm256_cmpeq_epi8(v, cr));
    return (unsigned)_mm256_movemask_epi8(hit);
}

/* Scans 64 bytes a turn and keeps the last block's terminator bits: the lines after
 * a line end in the same block (most lines are shorter than two blocks) are found
 * from the bits, so each byte of a chunk is compared once. A block is kept only
 * when it lies wholly inside the chunk; the last bytes go 32 at a time, then one
 * by one. */
DSQ_AVX2 static const char *find_avx2(dsq_linescan *ls, const char *p, const char *end)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)ls->blk;
    if (off < 64) {
        uint64_t m = ls->bits & (~(uint64_t)0 << off);
        if (m)
            return ls->blk + __builtin_ctzll(m);
        p = ls->blk + 64;
    }
    const __m256i nl = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
    while (end - p >= 64) {
        uint64_t m = eol_mask32(p, nl, cr) | (uint64_t)eol_mask32(p + 32, nl, cr) << 32;
        if (m) {
            ls->blk = p;
            ls->bits = m;
            return p + __builtin_ctzll(m);
        }
        p += 64;
    }
    if (end - p >= 32) {
        unsigned m = eol_mask32(p, nl, cr);
        if (m)
            return p + __builtin_ctz(m);
        p += 32;
    }
    return find_bytes(p, end);
}

static int cpu_has_avx2(void) { return __builtin_cpu_supports("avx2") != 0; }

#else
#define DSQ_LINESCAN_HAVE_AVX2 0

static const char *find_avx2(dsq_linescan *ls, const char *p, const char *end)
{
    (void)ls;
    return find_bytes(p, end); /* never chosen: cpu_has_avx2() is 0 here */
}

static int cpu_has_avx2(void) { return 0; }
#endif

int dsq_linescan_usable(dsq_linescan_backend b)
{
    switch (b) {
    case DSQ_LINESCAN_AUTO:
    case DSQ_LINESCAN_SCALAR:
        return 1;
    case DSQ_LINESCAN_AVX2:
        return DSQ_LINESCAN_HAVE_AVX2 && cpu_has_avx2();
    default:
        return 0;
    }
}

const char *dsq_linescan_name(dsq_linescan_backend b)
{
    return (unsigned)b < DSQ_LINESCAN_COUNT ? backend_names[b] : "?";
}

/* The backend DSQ_LINES_BACKEND names, or AUTO when it is unset or names none. */
static dsq_linescan_backend from_env(void)
{
    const char *v = getenv(DSQ_LINESCAN_ENV);
    if (!v)
        return DSQ_LINESCAN_AUTO;
    for (int i = DSQ_LINESCAN_SCALAR; i < DSQ_LINESCAN_COUNT; i++)
        if (strcmp(v, backend_names[i]) == 0)
            return (dsq_linescan_backend)i;
    return DSQ_LINESCAN_AUTO;
}

dsq_linescan_backend dsq_linescan_resolve(dsq_linescan_backend b)
{
    if (b != DSQ_LINESCAN_AUTO)
        return b;
    b = from_env();
    if (b != DSQ_LINESCAN_AUTO && dsq_linescan_usable(b))
        return b;
    return dsq_linescan_usable(DSQ_LINESCAN_AVX2) ? DSQ_LINESCAN_AVX2 : DSQ_LINESCAN_SCALAR;
}

int dsq_linescan_init(dsq_linescan *ls, dsq_linescan_backend b)
{
    b = dsq_linescan_resolve(b);
    int rc = dsq_linescan_usable(b) ? 0 : DSQ_EUSAGE;
    if (rc)
        b = DSQ_LINESCAN_SCALAR;
    ls->backend = b;
    ls->find = b == DSQ_LINESCAN_AVX2 ? find_avx2 : find_scalar;
    dsq_linescan_chunk(ls);
    return rc;
}
