/* Number and unit parsing as logs print them. Inputs are parsed from exact-size
 * heap copies (no NUL after them) so ASan catches a read past `end`. */
#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "test.h"

/* Parses s; returns the status, the value in *v and the stop offset in *stop. */
static int parse(const char *s, double *v, long *stop)
{
    size_t n = strlen(s);
    char *copy = calloc(1, n ? n : 1);
    memcpy(copy, s, n);
    const char *st = NULL;
    *v = -12345.678; /* sentinel: must be left alone on failure */
    int rc = dsq_num_parse(copy, copy + n, v, &st);
    *stop = st ? (long)(st - copy) : -99;
    free(copy);
    return rc;
}

#define EXPECT_NUM(text, value, stop_at)                                                        \
    do {                                                                                        \
        double v_;                                                                              \
        long s_;                                                                                \
        CHECK_INT(parse(text, &v_, &s_), 0);                                                    \
        CHECK_DBL(v_, value);                                                                   \
        CHECK_INT(s_, stop_at);                                                                 \
    } while (0)

#define EXPECT_NONE(text)                                                                       \
    do {                                                                                        \
        double v_;                                                                              \
        long s_;                                                                                \
        CHECK_INT(parse(text, &v_, &s_), -1);                                                   \
        CHECK_INT(s_, 0);                                                                       \
        CHECK_DBL(v_, -12345.678);                                                              \
    } while (0)

static void test_integers(void)
{
    EXPECT_NUM("0", 0, 1);
    EXPECT_NUM("7", 7, 1);
    EXPECT_NUM("42", 42, 2);
    EXPECT_NUM("65536", 65536, 5);
    EXPECT_NUM("007", 7, 3);
    EXPECT_NUM("+5", 5, 2);
    EXPECT_NUM("291 params", 291, 3);
    EXPECT_NUM("18446744073709551616", 18446744073709551616.0, 20);
    EXPECT_NUM("123456789012345678901234", 123456789012345678901234.0, 24);
}

static void test_decimals(void)
{
    EXPECT_NUM("0.1", 0.1, 3);
    EXPECT_NUM("3.14", 3.14, 4);
    EXPECT_NUM("6.54", 6.54, 4);
    EXPECT_NUM("164.03 GB", 164.03, 6);
    EXPECT_NUM("16.3%", 16.3, 4);
    EXPECT_NUM(".5", 0.5, 2);
    EXPECT_NUM("0.000001", 1e-6, 8);
    EXPECT_NUM("1152.36 |", 1152.36, 7);
    EXPECT_NUM("0.12345678901234567890123", 0.12345678901234567890123, 25);
    EXPECT_NUM("0.00000000000000000000000012345", 1.2345e-25, 31);
}

static void test_thousands(void)
{
    EXPECT_NUM("19,200,000", 19200000, 10);
    EXPECT_NUM("9,223,372,036,854,775,807", 9223372036854775807.0, 25);
    EXPECT_NUM("1,234.5", 1234.5, 7);
    EXPECT_NUM("100,000.25 samples", 100000.25, 10);
    EXPECT_NUM("-12,345", -12345, 7);
    /* a ',' not followed by exactly three digits ends the number */
    EXPECT_NUM("1,23", 1, 1);
    EXPECT_NUM("1,2345", 1, 1);
    EXPECT_NUM("1,", 1, 1);
    EXPECT_NUM("1,234,56", 1234, 5);
    EXPECT_NUM("3,4,5", 3, 1);       /* a list, not a number with separators */
    EXPECT_NUM("0.9,0.999", 0.9, 3); /* betas=(0.9,0.999) */
    EXPECT_NUM("12, 345", 12, 2);
    EXPECT_NONE(",123");
}

static void test_exponents(void)
{
    EXPECT_NUM("9.9e-06", 9.9e-06, 7);
    EXPECT_NUM("1.024000e+03", 1024, 12);
    EXPECT_NUM("2.5E+01", 25, 7);
    EXPECT_NUM("1E+01", 10, 5);
    EXPECT_NUM("5e3", 5000, 3);
    EXPECT_NUM("3e-5,", 3e-5, 4);
    EXPECT_NUM("1e300", 1e300, 5);
    EXPECT_NUM("1e-300", 1e-300, 6);
    EXPECT_NUM("6.0e-05 lr", 6e-05, 7);
    /* an 'e' that does not start an exponent is not consumed */
    EXPECT_NUM("1e", 1, 1);
    EXPECT_NUM("1e+", 1, 1);
    EXPECT_NUM("2eta", 2, 1);
    EXPECT_NUM("4E-x", 4, 1);
}

static void test_negative(void)
{
    EXPECT_NUM("-1", -1, 2);
    EXPECT_NUM("-0.5", -0.5, 4);
    EXPECT_NUM("-9.9e-06", -9.9e-06, 8);
    EXPECT_NUM("-1.5e3", -1500, 6);
    EXPECT_NUM("-123456789012345678901234", -123456789012345678901234.0, 25);
    EXPECT_NONE("--1");
}

static void test_no_digits(void)
{
    EXPECT_NONE("");
    EXPECT_NONE("abc");
    EXPECT_NONE("-");
    EXPECT_NONE("+");
    EXPECT_NONE(".");
    EXPECT_NONE("-.");
    EXPECT_NONE("-x1");
    EXPECT_NONE(" 1");
    EXPECT_NONE("e5");
    EXPECT_NONE("nan");
}

static void test_stop_and_end(void)
{
    /* never reads past end, even in the middle of a number */
    const char *s = "12345.678e9";
    double v;
    const char *stop;
    CHECK_INT(dsq_num_parse(s, s + 3, &v, &stop), 0);
    CHECK_DBL(v, 123);
    CHECK(stop == s + 3);
    CHECK_INT(dsq_num_parse(s, s + 7, &v, &stop), 0);
    CHECK_DBL(v, 12345.6);
    CHECK(stop == s + 7);
    CHECK_INT(dsq_num_parse(s, s + 10, &v, &stop), 0); /* "12345.678e" */
    CHECK_DBL(v, 12345.678);
    CHECK(stop == s + 9);
    const char *t = "1,234";
    CHECK_INT(dsq_num_parse(t, t + 4, &v, &stop), 0); /* "1,23": not a separator */
    CHECK_DBL(v, 1);
    CHECK(stop == t + 1);
    /* stop may be NULL */
    CHECK_INT(dsq_num_parse(s, s + 11, &v, NULL), 0);
    CHECK_DBL(v, 12345.678e9);
    CHECK_INT(dsq_num_parse(s, s, &v, NULL), -1);
}

/* Every cut of these texts parses the same whether blanks or what would continue a
 * number (digits, ".5e+5,555") follow end in memory: the 16-byte path may read past
 * end (within a page) but counts nothing there. */
static void test_cut_anywhere(void)
{
    static const char *const texts[] = {"-12345.678e9 tail", "1,234,567.5", ".5e-3x", "+7.",
                                        "-.25", "1e", "12.5GB", "0.000123456789012345678",
                                        "123456789012345678901234", "-", "3.5e+07,"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        size_t n = strlen(texts[i]);
        for (size_t e = 0; e <= n; e++) {
            char dig[64], blank[64];
            memset(blank, ' ', sizeof blank);
            for (size_t j = 0; j < sizeof dig; j++) /* what would continue a number */
                dig[j] = (i & 1) ? '7' : ".5e+5,555"[j % 9];
            memcpy(dig, texts[i], e);
            memcpy(blank, texts[i], e);
            double want = 0, got = 0;
            const char *ws = NULL, *gs = NULL;
            int wr = dsq_num_parse(blank, blank + e, &want, &ws);
            int gr = dsq_num_parse(dig, dig + e, &got, &gs);
            if (wr != gr || (wr == 0 && got != want) || gs - dig != ws - blank) {
                fprintf(stderr, "\"%s\" cut at %zu: %d %.17g stop %td, digits after: %d %.17g stop %td\n",
                        texts[i], e, wr, want, ws - blank, gr, got, gs - dig);
                test_failures++;
            }
        }
    }
}

static void test_units(void)
{
    static const struct {
        const char *name;
        enum dsq_unit u;
        double factor;
    } tab[] = {{"B", DSQ_U_B, 1},           {"KB", DSQ_U_KB, 1e3},
               {"MB", DSQ_U_MB, 1e6},       {"GB", DSQ_U_GB, 1e9},
               {"TB", DSQ_U_TB, 1e12},      {"KiB", DSQ_U_KIB, 1024},
               {"MiB", DSQ_U_MIB, 1048576}, {"GiB", DSQ_U_GIB, 1073741824.0},
               {"TiB", DSQ_U_TIB, 1099511627776.0}, {"%", DSQ_U_PCT, 1},
               {"us", DSQ_U_US, 1e-6},      {"ms", DSQ_U_MS, 1e-3},
               {"s", DSQ_U_S, 1}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        CHECK_INT(dsq_unit_parse(tab[i].name, strlen(tab[i].name)), tab[i].u);
        CHECK_STR(dsq_unit_name(tab[i].u), tab[i].name);
        CHECK_DBL(dsq_unit_factor(tab[i].u), tab[i].factor);
    }
    CHECK_INT(dsq_unit_parse("GBs", 2), DSQ_U_GB); /* only n bytes are looked at */
    CHECK_INT(dsq_unit_parse("gb", 2), DSQ_U_NONE);
    CHECK_INT(dsq_unit_parse("G", 1), DSQ_U_NONE);
    CHECK_INT(dsq_unit_parse("", 0), DSQ_U_NONE);
    CHECK_INT(dsq_unit_parse("params", 6), DSQ_U_NONE);
    CHECK_STR(dsq_unit_name(DSQ_U_NONE), "");
    CHECK_STR(dsq_unit_name(DSQ_U_COUNT), "");
    CHECK_DBL(dsq_unit_factor(DSQ_U_NONE), 1);

    /* families: bytes mix with bytes, never with percent or time */
    CHECK_INT(dsq_unit_family(DSQ_U_GB), dsq_unit_family(DSQ_U_MIB));
    CHECK_INT(dsq_unit_family(DSQ_U_B), dsq_unit_family(DSQ_U_TIB));
    CHECK_INT(dsq_unit_family(DSQ_U_MS), dsq_unit_family(DSQ_U_S));
    CHECK(dsq_unit_family(DSQ_U_GB) != dsq_unit_family(DSQ_U_PCT));
    CHECK(dsq_unit_family(DSQ_U_GB) != dsq_unit_family(DSQ_U_MS));
    CHECK(dsq_unit_family(DSQ_U_PCT) != dsq_unit_family(DSQ_U_S));
    CHECK(dsq_unit_family(DSQ_U_NONE) != dsq_unit_family(DSQ_U_B));
    /* 1536 MiB is 1.5 GiB */
    CHECK_DBL(1536 * dsq_unit_factor(DSQ_U_MIB) / dsq_unit_factor(DSQ_U_GIB), 1.5);
}

/* The fast path must round exactly like strtod for what logs print. */
static void test_same_as_strtod(void)
{
    static const char *const tab[] = {
        "0.1",     "0.2",      "0.3",        "6.54",       "164.03",   "16.3",
        "9.9e-06", "2.63",     "1152.36",    "0.000123",   "3.0517578125e-05",
        "1e-22",   "1e22",     "123456789.123456789",      "4.94065645841246544e-324",
        "1.7976931348623157e308", "9007199254740993",      "0.30000000000000004",
        "2.2250738585072014e-308", "65504.0", "8.03",      "7.999999999999999"};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        double v;
        long stop;
        CHECK_INT(parse(tab[i], &v, &stop), 0);
        CHECK_INT(stop, (long)strlen(tab[i]));
        if (v != strtod(tab[i], NULL)) {
            fprintf(stderr, "%s: parsed %.17g, strtod %.17g\n", tab[i], v, strtod(tab[i], NULL));
            test_failures++;
        }
    }
}

/* Random digit strings of every length around the eight-at-a-time steps (8, 16,
 * 19 digits; leading zeros; an integer part, a fraction, an exponent), each
 * followed by a non-digit: value and stop position exactly as strtod says. */
static void test_random_same_as_strtod(void)
{
    uint64_t seed = 0x243F6A8885A308D3ull;
    char buf[96];
    int bad = 0;
    for (int iter = 0; iter < 200000 && bad < 5; iter++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = seed >> 11;
        int n = 0;
        if (r & 1)
            buf[n++] = '-';
        int ni = (int)((r >> 1) % 24), nf = (int)((r >> 6) % 24), zeros = (int)((r >> 11) % 12);
        for (int i = 0; i < ni; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[n++] = (char)('0' + (i < zeros ? 0 : (int)((seed >> 33) % 10)));
        }
        if (nf || !ni) {
            buf[n++] = '.';
            for (int i = 0; i < nf + !ni; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                buf[n++] = (char)('0' + (int)((seed >> 33) % 10));
            }
        }
        if ((r >> 16) % 4 == 0)
            n += snprintf(buf + n, 8, "e%d", (int)((r >> 20) % 61) - 30);
        int tail = n;
        buf[n++] = (r >> 30) & 1 ? ' ' : 'z';
        memcpy(buf + n, "12345678", 8); /* digits after the stop must not be read into it */
        n += 8;
        double v = 0;
        const char *stop = NULL;
        char *want_stop;
        double want = strtod(buf, &want_stop);
        if (dsq_num_parse(buf, buf + n, &v, &stop) != 0 || v != want || stop != want_stop ||
            stop != buf + tail) {
            buf[tail] = 0;
            fprintf(stderr, "%s: parsed %.17g, strtod %.17g\n", buf, v, want);
            bad++;
            continue;
        }
        /* the same number ending exactly at end, digits right after it in memory */
        memcpy(buf + tail, "98765432", 8);
        if (dsq_num_parse(buf, buf + tail, &v, &stop) != 0 || v != want || stop != buf + tail) {
            buf[tail] = 0;
            fprintf(stderr, "%s (ending at end): parsed %.17g, strtod %.17g\n", buf, v, want);
            bad++;
        }
    }
    CHECK_INT(bad, 0);
}

/* A layout planned from one number reads every other number of that layout as
 * dsq_num_parse does, bit for bit, also where the 16 bytes after it would cross
 * into the next page (the number ends a page-aligned buffer); with an exponent
 * too ("2.000000e-05"), also one that takes the scale past 10^+-22. */
static void test_planned_same_as_parse(void)
{
    char *page = aligned_alloc(4096, 4096);
    CHECK(page != NULL);
    if (!page)
        return;
    srand(7);
    int bad = 0, planned = 0, with_ex = 0;
    for (int round = 0; round < 40000; round++) {
        int sign = rand() % 3, k = rand() % 15, f = rand() % (15 - k);
        int ex = round & 1 ? 1 + rand() % 3 : 0, exsign = rand() % 3, e_char = rand() % 2;
        if (k + f == 0)
            continue;
        char a[40], b[40];
        size_t n = 0;
        for (char *t = a; t; t = t == a ? b : NULL) {
            n = 0;
            if (sign)
                t[n++] = sign == 1 ? '-' : '+';
            for (int i = 0; i < k; i++)
                t[n++] = (char)('0' + rand() % 10);
            if (f) {
                t[n++] = '.';
                for (int i = 0; i < f; i++)
                    t[n++] = (char)('0' + rand() % 10);
            }
            if (ex) {
                t[n++] = e_char ? 'e' : 'E';
                if (exsign)
                    t[n++] = exsign == 1 ? '-' : '+';
                for (int i = 0; i < ex; i++) /* small exponents most: 0-2 digits first */
                    t[n++] = (char)('0' + (i + 1 < ex ? rand() % 3 : rand() % 10));
            }
        }
        with_ex += ex > 0;
        dsq_num_plan pl;
        dsq_num_plan_of(a, n, &pl);
        if (!pl.ok) {
            fprintf(stderr, "%.*s: not planned\n", (int)n, a);
            bad++;
            continue;
        }
        planned++;
        /* b at the page's end, or at its start with digits after it */
        char *at = round & 1 ? page + 4096 - n : page;
        memset(page, '7', 4096);
        memcpy(at, b, n);
        double want = 0, got = 0;
        uint16_t off = 0;
        dsq_num_planned_at(&pl, &off, 1, at, &got, &off);
        const char *stop = NULL;
        if (dsq_num_parse(at, at + n, &want, &stop) != 0 || stop != at + n ||
            memcmp(&want, &got, sizeof got) != 0) {
            fprintf(stderr, "%.*s planned from %.*s: %.17g, parsed %.17g\n", (int)n, b, (int)n,
                    a, got, want);
            bad++;
        }
    }
    free(page);
    CHECK_INT(bad, 0);
    CHECK(planned > 30000 && with_ex > 15000);
    /* what the plain path does not read whole is not planned */
    static const char *const refused[] = {"5.", "1,234", "123456789012345", "1.23456789012345",
                                          "", "-", ".", "1.2.3", "12a", "--1", "1e", "1e-",
                                          "1.5e+", "1e1234", "2e5x", "1e-0005", "e5", ".e5",
                                          "5.e3", "1.5e-05e3"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        dsq_num_plan pl;
        dsq_num_plan_of(refused[i], strlen(refused[i]), &pl);
        if (pl.ok) {
            fprintf(stderr, "\"%s\" planned\n", refused[i]);
            test_failures++;
        }
    }
}

TEST_MAIN(T(test_planned_same_as_parse), T(test_cut_anywhere), T(test_same_as_strtod), T(test_random_same_as_strtod), T(test_integers), T(test_decimals), T(test_thousands), T(test_exponents),
          T(test_negative), T(test_no_digits), T(test_stop_and_end), T(test_units))
