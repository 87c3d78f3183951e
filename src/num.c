/* Number parsing without strtod's locale dependence or NUL requirement. The fast
 * path (<= 19 significant digits, small exponent) is exact for what logs print:
 * an integer mantissa scaled by one power of ten, which IEEE rounds once when the
 * mantissa fits in 53 bits. Anything else falls back to strtod on a local copy. */
#include "num.h"

#include <stdlib.h>
#include <string.h>

#include "sanitizer.h"

static const double pow10_tab[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static const uint64_t pow10_int[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                      100000000};

/* The digits at the start of the 8 bytes at p (the caller has 8 to read): how many
 * (0-8), and their value. Eight bytes at a time instead of a loop per digit. */
static int lead_digits8(const char *p, uint64_t *val)
{
    uint64_t x;
    memcpy(&x, p, 8); /* little endian: p[0] is the low byte */
    uint64_t a = x ^ 0x3030303030303030ull; /* a digit becomes 0..9 */
    uint64_t bad = ((((a & 0x7F7F7F7F7F7F7F7Full) + 0x7676767676767676ull) | a) &
                    0x8080808080808080ull);
    int k = bad ? __builtin_ctzll(bad) >> 3 : 8;
    *val = 0;
    if (k == 0)
        return 0;
    uint64_t v = k == 8 ? a : a << (8 * (8 - k)); /* the k digits in the high bytes */
    v = v * 10 + (v >> 8);
    v = (((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
    *val = (uint32_t)v;
    return k;
}

/* Slow path: strtod over a bounded copy without thousands separators. */
static double slow_parse(const char *p, const char *q)
{
    char buf[128];
    size_t n = 0;
    for (; p < q && n + 1 < sizeof buf; p++)
        if (*p != ',')
            buf[n++] = *p;
    buf[n] = 0;
    return strtod(buf, NULL);
}

/* A ',' continues a number only as a thousands separator: three digits follow. */
static int is_thousands(const char *p, const char *end, const char *d0)
{
    return *p == ',' && p > d0 && p + 3 < end && is_digit(p[1]) && is_digit(p[2]) &&
           is_digit(p[3]) && (p + 4 >= end || !is_digit(p[4]));
}

/* lead_digits8 on the bytes from p that are before end (zeros stand in for the
 * rest: they are not digits). */
static inline __attribute__((always_inline)) int lead_digits(const char *p, const char *end,
                                                          uint64_t *val)
{
    if (end - p >= 8)
        return lead_digits8(p, val);
    char b[8] = {0};
    if (end > p)
        memcpy(b, p, (size_t)(end - p));
    return lead_digits8(b, val);
}

/* Every number: digits 8 at a time, then one by one, thousands separators, any
 * exponent; s is where the number began (its sign), p after the sign. Out of line,
 * so the plain path saves no registers for it. */
static __attribute__((noinline)) int parse_general(const char *s, const char *p,
                                                   const char *end, int neg, double *out,
                                                   const char **stop)
{
    uint64_t mant = 0;
    int sig = 0, scale = 0, exact = 1, ndig = 0;
    const char *d0 = p;
    /* Eight digits at a time while the mantissa has room for them; `sig` then
     * counts leading zeros too (an upper bound): a number with 19 digits or more
     * may take the exact slow path sooner, never a wrong one. */
    for (uint64_t v; end - p >= 8 && sig <= 11;) {
        int k = lead_digits8(p, &v);
        mant = mant * pow10_int[k] + v;
        sig += k;
        ndig += k;
        p += k;
        if (k < 8)
            break;
    }
    for (; p < end; p++) {
        if (is_digit(*p)) {
            ndig++;
            if (sig < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                sig += mant != 0;
            } else {
                scale++;
                exact = 0;
            }
        } else if (!is_thousands(p, end, d0)) {
            break;
        }
    }
    if (p < end && *p == '.') {
        const char *f = p + 1;
        p = f;
        for (uint64_t v; end - p >= 8 && sig <= 11;) {
            int k = lead_digits8(p, &v);
            mant = mant * pow10_int[k] + v;
            sig += k;
            scale -= k;
            ndig += k;
            p += k;
            if (k < 8)
                break;
        }
        for (; p < end && is_digit(*p); p++, ndig++) {
            if (sig < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                sig += mant != 0;
                scale--;
            } else {
                exact = 0;
            }
        }
        if (p == f && ndig == 0)
            p = f - 1;
    }
    if (ndig == 0) {
        if (stop)
            *stop = s;
        return -1;
    }
    if (p + 1 < end && (*p == 'e' || *p == 'E')) {
        const char *e = p + 1;
        int eneg = 0, ev = 0;
        if (e < end && (*e == '-' || *e == '+'))
            eneg = *e++ == '-';
        if (e < end && is_digit(*e)) {
            for (; e < end && is_digit(*e); e++)
                if (ev < 10000)
                    ev = ev * 10 + (*e - '0');
            scale += eneg ? -ev : ev;
            p = e;
        }
    }
    if (stop)
        *stop = p;
    double v;
    if (exact && mant < (1ull << 53) && scale >= -22 && scale <= 22)
        v = scale < 0 ? (double)mant / pow10_tab[-scale] : (double)mant * pow10_tab[scale];
    else
        v = slow_parse(neg ? s + 1 : s, p);
    *out = neg ? -v : v;
    return 0;
}

/* mant * 10^scale (|scale| <= 22), rounded once, with its sign: a plain number's
 * value, read or planned. */
static inline double scaled(uint64_t mant, int scale, int neg)
{
    double v = scale < 0 ? (double)mant / pow10_tab[-scale] : (double)mant * pow10_tab[scale];
    return neg ? -v : v;
}

/* The end of a plain number whose digits gave mant, f of them after a '.', the
 * number's text running to q (s: its start, with the sign): an optional exponent
 * of up to 3 digits, then the value, rounded once, and the results. The general
 * path takes a long or large exponent. */
static int plain_value(const char *s, const char *p, uint64_t mant, int f, const char *q,
                       const char *end, int neg, double *out, const char **stop)
{
    int scale = -f;
    if (q + 1 < end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        int eneg = 0, ev = 0, n = 0;
        if (*e == '-' || *e == '+')
            eneg = *e++ == '-';
        for (; e < end && is_digit(*e) && n < 4; e++, n++)
            ev = ev * 10 + (*e - '0');
        if (n > 3)
            return parse_general(s, p, end, neg, out, stop);
        if (n) {
            scale += eneg ? -ev : ev;
            q = e;
            if (scale < -22 || scale > 22)
                return parse_general(s, p, end, neg, out, stop);
        }
    }
    if (stop)
        *stop = q;
    *out = scaled(mant, scale, neg);
    return 0;
}

/* No number at s. */
static int no_number(const char *s, const char **stop)
{
    if (stop)
        *stop = s;
    return -1;
}

/* What logs print most: up to 7 integer digits, an optional fraction, at most 15
 * digits in all, an optional exponent of up to 3 digits. Everything else (more
 * digits, a thousands separator, a large exponent) goes to the general path. */
static __attribute__((noinline)) int parse_plain(const char *p, const char *end, double *out,
                                                 const char **stop)
{
    const char *s = p;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    uint64_t mant, b;
    int k = lead_digits(p, end, &mant), f = 0;
    if (k == 8)
        return parse_general(s, p, end, neg, out, stop);
    const char *q = p + k;
    if (q < end && *q == '.') {
        f = lead_digits(q + 1, end, &b);
        if (f == 8) {
            uint64_t c;
            int f2 = lead_digits(q + 9, end, &c);
            if (f2 == 8 || k + 8 + f2 > 15)
                return parse_general(s, p, end, neg, out, stop);
            mant = (mant * 100000000u + b) * pow10_int[f2] + c;
            f += f2;
        } else {
            mant = mant * pow10_int[f] + b;
        }
        if (k + f == 0)
            return no_number(s, stop); /* "." */
        q += 1 + f;
    } else if (k == 0) {
        return no_number(s, stop);
    } else if (q < end && *q == ',' && is_thousands(q, end, p)) {
        return parse_general(s, p, end, neg, out, stop);
    }
    return plain_value(s, p, mant, f, q, end, neg, out, stop);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define NUM_SSE __attribute__((target("sse4.1")))

/* The same as parse_plain with 16 bytes to read after the sign, in SSE4.1: one
 * compare finds the digits and the '.', one shuffle packs the digits right-aligned
 * without the '.', and three multiply-adds sum them (up to 15 digits). */
static int have_sse41;
static unsigned char num_shuffle[16 * 16][16]; /* [k integer digits * 16 + f fraction digits] */

__attribute__((constructor)) static void num_init(void)
{
    __builtin_cpu_init();
    have_sse41 = __builtin_cpu_supports("sse4.1") != 0;
    for (int k = 0; k < 16; k++)
        for (int f = 0; k + f < 16; f++) {
            int n = k + f;
            for (int lane = 0; lane < 16; lane++) {
                int i = lane - (16 - n); /* the i-th digit of the number */
                num_shuffle[k * 16 + f][lane] = (unsigned char)(i < 0 ? 0x80 : i < k ? i : i + 1);
            }
        }
}

/* The value of the k + f digits of t (bytes minus '0'; a '.' after the first k when
 * f > 0): one shuffle packs them right-aligned without the '.', three multiply-adds
 * sum them (k + f <= 15). */
static inline NUM_SSE uint64_t sum_shuffled(__m128i d)
{
    __m128i m1 = _mm_maddubs_epi16(d, _mm_set1_epi16(0x010A)); /* bytes 10, 1, 10, 1, ... */
    __m128i m2 = _mm_madd_epi16(m1, _mm_setr_epi16(100, 1, 100, 1, 100, 1, 100, 1));
    __m128i m3 = _mm_packus_epi32(m2, m2);
    __m128i m4 = _mm_madd_epi16(m3, _mm_setr_epi16(10000, 1, 10000, 1, 10000, 1, 10000, 1));
    return (uint64_t)(uint32_t)_mm_cvtsi128_si32(m4) * 100000000u +
           (uint32_t)_mm_extract_epi32(m4, 1);
}

static inline NUM_SSE uint64_t sum_digits(__m128i t, int k, int f)
{
    const __m128i *shuf = (const __m128i *)(const void *)num_shuffle[k * 16 + f];
    return sum_shuffled(_mm_shuffle_epi8(t, _mm_loadu_si128(shuf)));
}

NUM_SSE static int parse_sse(const char *p, const char *end, double *out, const char **stop)
{
    const char *s = p;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i t = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    __m128i is_d = _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t);
    unsigned md = (unsigned)_mm_movemask_epi8(is_d);
    ptrdiff_t avail = end - p; /* under 16: the load went past end, within its page */
    if (avail < 16)
        md &= (1u << (avail > 0 ? avail : 0)) - 1;
    int k = __builtin_ctz(~md), f = 0; /* ~md has bit 16 set: k <= 16 */
    if (k == 16)
        return parse_general(s, p, end, neg, out, stop);
    const char *q = p + k;
    if (k < avail && *q == '.') {
        f = __builtin_ctz(~(md >> (k + 1)));
        if (k + 1 + f >= 16) /* the digits may go on past the 16 bytes */
            return parse_general(s, p, end, neg, out, stop);
        if (k + f == 0)
            return no_number(s, stop);
        q += 1 + f;
    } else if (k == 0) {
        return no_number(s, stop);
    } else if (k < avail && *q == ',' && is_thousands(q, end, p)) {
        return parse_general(s, p, end, neg, out, stop);
    }
    return plain_value(s, p, sum_digits(t, k, f), f, q, end, neg, out, stop);
}
#endif

/* Whether 17 bytes from p (a sign and 16) lie in p's page, so reading them cannot
 * fault even past end (bytes past end are masked out and never count). Not under
 * AddressSanitizer, which rightly reports any read past the buffer. */
#define NUM_PAGE_READS (!DSQ_SANITIZED)

static int in_page(const char *p) { return NUM_PAGE_READS && ((uintptr_t)p & 4095) <= 4096 - 17; }

int dsq_num_parse(const char *p, const char *end, double *out, const char **stop)
{
#ifdef NUM_SSE
    if (have_sse41 && (end - p >= 17 || in_page(p))) /* a sign and 16 bytes */
        return parse_sse(p, end, out, stop);
#endif
    return parse_plain(p, end, out, stop);
}

/* The layout of the n bytes at p, when dsq_num_parse would read them whole as an
 * optional sign, digits and an optional '.' with digits (its plain path). */
void dsq_num_plan_of(const char *p, size_t n, dsq_num_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    size_t i = 0, k = 0, f = 0;
    if (n && (p[0] == '-' || p[0] == '+'))
        i = 1;
    while (i + k < n && is_digit(p[i + k]))
        k++;
    size_t q = i + k; /* past the mantissa */
    if (q < n && p[q] == '.') {
        while (q + 1 + f < n && is_digit(p[q + 1 + f]))
            f++;
        if (f == 0)
            return; /* "5." */
        q += 1 + f;
    }
    size_t ex = 0, exat = 0;
    int exneg = 0;
    if (q < n && (p[q] == 'e' || p[q] == 'E')) {
        exat = q + 1;
        if (exat < n && (p[exat] == '-' || p[exat] == '+'))
            exneg = p[exat++] == '-';
        while (exat + ex < n && is_digit(p[exat + ex]))
            ex++;
        if (ex == 0 || ex > 3)
            return; /* no exponent digits ("1e" is not read whole), or the general path's */
        q = exat + ex;
    }
    if (q != n || k + f == 0 || k + f > 14 || n > 255)
        return; /* more after the number, or not the plain path's */
    int neg = i && p[0] == '-';
    *pl = (dsq_num_plan){neg ? -pow10_tab[f] : pow10_tab[f], (uint16_t)(k * 16 + f), 1,
                         (uint8_t)i, (uint8_t)neg, (uint8_t)(n - i), (uint8_t)k, (uint8_t)f,
                         (uint8_t)ex, (uint8_t)exneg, (uint8_t)(ex ? exat - i : 0)};
}

/* The same for a layout with an exponent (p: the number after its sign); one that
 * takes the scale past 10^+-22 is read by dsq_num_parse (its general path). Out of
 * line: the plain layouts' loop stays as tight as without exponents. */
/* The power of ten a layout with an exponent scales its digits by: the exponent
 * less the fraction's digits (p: the number after its sign). */
static inline int exponent_scale(const dsq_num_plan *pl, const char *p)
{
    const char *e = p + pl->exat;
    int ev = e[0] - '0';
    for (int i = 1; i < pl->ex; i++)
        ev = ev * 10 + (e[i] - '0');
    return (pl->exneg ? -ev : ev) - (int)pl->f;
}

static __attribute__((noinline)) double exponent_value(const dsq_num_plan *pl, uint64_t mant,
                                                       const char *p)
{
    int scale = exponent_scale(pl, p);
    if (scale >= -22 && scale <= 22)
        return scaled(mant, scale, pl->neg);
    double v = 0;
    dsq_num_parse(p - pl->skip, p + pl->n, &v, NULL);
    return v;
}

/* The value of a planned layout from its mantissa's digits (p: the number after its
 * sign): plain_value's rounding, or exponent_value's. */
static inline double planned_value(const dsq_num_plan *pl, uint64_t mant, const char *p)
{
    if (__builtin_expect(pl->ex != 0, 0))
        return exponent_value(pl, mant, p);
    return (double)mant / pl->div; /* scaled(mant, -f, neg): -(a / b) is a / -b */
}

static double planned_plain(const dsq_num_plan *pl, const char *p)
{
    uint64_t mant = 0;
    for (int i = 0; i < pl->k; i++)
        mant = mant * 10 + (uint64_t)(p[i] - '0');
    for (int i = 0; i < pl->f; i++)
        mant = mant * 10 + (uint64_t)(p[pl->k + 1 + i] - '0');
    return planned_value(pl, mant, p);
}

#ifdef NUM_SSE
/* The digits of the layout in the 16 bytes v (from its first digit), summed as
 * parse_sse sums them. */
static inline NUM_SSE uint64_t planned_digits(const dsq_num_plan *pl, __m128i v)
{
    const __m128i *shuf = (const __m128i *)(const void *)num_shuffle[pl->shuf];
    __m128i t = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    return sum_shuffled(_mm_shuffle_epi8(t, _mm_loadu_si128(shuf)));
}

/* A value planned_at_sse leaves out: its 16 bytes are not all in its page (the
 * number's are copied, never a byte past it), or its exponent scales it up. */
static __attribute__((noinline)) NUM_SSE double planned_slow(const dsq_num_plan *pl,
                                                             const char *p)
{
    char b[16] = {0};
    memcpy(b, p, pl->k + (pl->f ? 1u + pl->f : 0u)); /* the mantissa's bytes */
    uint64_t mant = planned_digits(pl, _mm_loadu_si128((const __m128i *)(const void *)b));
    return pl->ex ? exponent_value(pl, mant, p) : (double)mant / pl->div;
}

/* The values in two passes: the loop reads the 16 bytes in place and makes no call
 * (its registers then need no saving); the few it leaves out go after it. */
static NUM_SSE void planned_at_sse(const dsq_num_plan *pl, const uint16_t *off, int n,
                                   const char *base, unsigned char *out, const uint16_t *out_off)
{
    uint64_t slow = 0;
    for (int i = 0; i < n; i++) {
        const dsq_num_plan *q = &pl[i];
        const char *p = base + off[i] + q->skip;
        double div = q->div;
        if (q->ex) { /* a learning rate's "2.0e-05": a division by 10^(5 + f) here */
            int scale = exponent_scale(q, p);
            if (scale > 0 || scale < -22) { /* a product: scaled's other branch */
                slow |= 1ull << i;
                continue;
            }
            div = q->neg ? -pow10_tab[-scale] : pow10_tab[-scale];
        }
        if (!in_page(p)) {
            slow |= 1ull << i;
            continue;
        }
        __m128i bytes = _mm_loadu_si128((const __m128i *)(const void *)p);
        double v = (double)planned_digits(q, bytes) / div;
        memcpy(out + out_off[i], &v, sizeof v);
    }
    for (; slow; slow &= slow - 1) {
        int i = __builtin_ctzll(slow);
        double v = planned_slow(&pl[i], base + off[i] + pl[i].skip);
        memcpy(out + out_off[i], &v, sizeof v);
    }
}
#endif

/* Out of line: dsq_num_planned_at stays a jump to the path this CPU takes. */
static __attribute__((noinline)) void planned_at_plain(const dsq_num_plan *pl,
                                                       const uint16_t *off, int n,
                                                       const char *base, unsigned char *out,
                                                       const uint16_t *out_off)
{
    for (int i = 0; i < n; i++) {
        double v = planned_plain(&pl[i], base + off[i] + pl[i].skip);
        memcpy(out + out_off[i], &v, sizeof v);
    }
}

void dsq_num_planned_at(const dsq_num_plan *pl, const uint16_t *off, int n, const char *base,
                        void *out, const uint16_t *out_off)
{
#ifdef NUM_SSE
    if (have_sse41) {
        planned_at_sse(pl, off, n, base, out, out_off);
        return;
    }
#endif
    planned_at_plain(pl, off, n, base, out, out_off);
}

static const struct {
    const char *name;
    double factor;
    int family;
} unit_tab[DSQ_U_COUNT] = {
    [DSQ_U_NONE] = {"", 1, 0},
    [DSQ_U_B] = {"B", 1, 1},
    [DSQ_U_KB] = {"KB", 1e3, 1},
    [DSQ_U_MB] = {"MB", 1e6, 1},
    [DSQ_U_GB] = {"GB", 1e9, 1},
    [DSQ_U_TB] = {"TB", 1e12, 1},
    [DSQ_U_KIB] = {"KiB", 1024.0, 1},
    [DSQ_U_MIB] = {"MiB", 1048576.0, 1},
    [DSQ_U_GIB] = {"GiB", 1073741824.0, 1},
    [DSQ_U_TIB] = {"TiB", 1099511627776.0, 1},
    [DSQ_U_PCT] = {"%", 1, 2},
    [DSQ_U_US] = {"us", 1e-6, 3},
    [DSQ_U_MS] = {"ms", 1e-3, 3},
    [DSQ_U_S] = {"s", 1, 3},
    [DSQ_U_TIME] = {"", 1, 4}, /* never parsed from text: only the `time` pseudo-field */
};

enum dsq_unit dsq_unit_parse(const char *p, size_t n)
{
    if (n == 0 || n > 3) /* every unit name has 1 to 3 bytes: most words leave here */
        return DSQ_U_NONE;
    for (int u = 1; u < DSQ_U_COUNT; u++)
        if (unit_tab[u].name[0] == p[0] && strlen(unit_tab[u].name) == n &&
            memcmp(unit_tab[u].name, p, n) == 0)
            return (enum dsq_unit)u;
    return DSQ_U_NONE;
}

const char *dsq_unit_name(enum dsq_unit u) { return u < DSQ_U_COUNT ? unit_tab[u].name : ""; }
double dsq_unit_factor(enum dsq_unit u) { return u < DSQ_U_COUNT ? unit_tab[u].factor : 1; }
int dsq_unit_family(enum dsq_unit u) { return u < DSQ_U_COUNT ? unit_tab[u].family : 0; }
