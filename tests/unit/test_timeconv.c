/* Civil time conversion: known epoch values (computed with Python's
 * calendar.timegm), leap years, and dsq_time_format as the exact inverse. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "test.h"
#include "timeconv.h"

#define S 1000000LL /* microseconds per second */

static void test_known_values(void)
{
    CHECK_INT(dsq_time_from_civil(1970, 1, 1, 0, 0, 0, 0), 0);
    CHECK_INT(dsq_time_from_civil(1970, 1, 1, 0, 0, 0, 1), 1);
    CHECK_INT(dsq_time_from_civil(1970, 1, 2, 0, 0, 0, 0), 86400 * S);
    /* the DeepSpeed stamp [2024-07-20 21:30:05,202] */
    CHECK_INT(dsq_time_from_civil(2024, 7, 20, 21, 30, 5, 202000), 1721511005 * S + 202000);
    CHECK_INT(dsq_time_from_civil(1969, 12, 31, 23, 59, 59, 0), -1 * S);
    CHECK_INT(dsq_time_from_civil(1969, 12, 31, 23, 59, 59, 999999), -1);
    CHECK_INT(dsq_time_from_civil(2038, 1, 19, 3, 14, 8, 0), 2147483648LL * S);
    CHECK_INT(dsq_time_from_civil(1900, 3, 1, 0, 0, 0, 0), -2203891200LL * S);
    CHECK_INT(dsq_time_from_civil(2100, 3, 1, 0, 0, 0, 0), 4107542400LL * S);
    CHECK_INT(dsq_time_from_civil(1600, 1, 1, 0, 0, 0, 0), -11676096000LL * S);
    CHECK_INT(dsq_time_from_civil(9999, 12, 31, 23, 59, 59, 0), 253402300799LL * S);
}

static void test_leap_years(void)
{
    CHECK_INT(dsq_time_from_civil(2000, 2, 29, 0, 0, 0, 0), 951782400LL * S);
    CHECK_INT(dsq_time_from_civil(2024, 2, 29, 23, 59, 59, 0), 1709251199LL * S);
    /* Feb 29 exists in 2024 and 2000, not in 2023, 1900 or 2100: count days to Mar 1 */
    static const struct {
        int y, days;
    } feb[] = {{2024, 29}, {2023, 28}, {2000, 29}, {1900, 28}, {2100, 28}, {2400, 29}, {1996, 29}};
    for (size_t i = 0; i < sizeof feb / sizeof feb[0]; i++) {
        int64_t a = dsq_time_from_civil(feb[i].y, 2, 1, 0, 0, 0, 0);
        int64_t b = dsq_time_from_civil(feb[i].y, 3, 1, 0, 0, 0, 0);
        CHECK_INT((b - a) / (86400 * S), feb[i].days);
    }
    /* a year is 366 days exactly when it is a leap year */
    for (int y = 1890; y < 2110; y++) {
        int64_t a = dsq_time_from_civil(y, 1, 1, 0, 0, 0, 0);
        int64_t b = dsq_time_from_civil(y + 1, 1, 1, 0, 0, 0, 0);
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        CHECK_INT((b - a) / (86400 * S), leap ? 366 : 365);
    }
}

static void test_format(void)
{
    char out[64];
    dsq_time_format(0, out);
    CHECK_STR(out, "1970-01-01 00:00:00");
    dsq_time_format(1721511005 * S + 202000, out);
    CHECK_STR(out, "2024-07-20 21:30:05");
    dsq_time_format(951782400LL * S, out);
    CHECK_STR(out, "2000-02-29 00:00:00");
    /* before the epoch, sub-second parts round down, not toward zero */
    dsq_time_format(-1, out);
    CHECK_STR(out, "1969-12-31 23:59:59");
    dsq_time_format(-1 * S, out);
    CHECK_STR(out, "1969-12-31 23:59:59");
    dsq_time_format(-1 * S - 1, out);
    CHECK_STR(out, "1969-12-31 23:59:58");
    dsq_time_format(-2203891200LL * S, out);
    CHECK_STR(out, "1900-03-01 00:00:00");
    dsq_time_format(253402300799LL * S, out);
    CHECK_STR(out, "9999-12-31 23:59:59");
    dsq_time_format(DSQ_TIME_NONE, out);
    CHECK_STR(out, "-");
}

/* Formatting then reading back gives the same second, over a sweep of odd steps
 * (which land on every hour, leap days and month ends), also checked against timegm. */
static void test_round_trip(void)
{
    int bad = 0;
    for (int64_t t = -2300000000LL * S; t < 4200000000LL * S; t += 3601 * 797 * S + 123457) {
        char out[64];
        dsq_time_format(t, out);
        int y, mo, d, h, mi, s;
        if (sscanf(out, "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &s) != 6) {
            bad++;
            continue;
        }
        int64_t secs = t >= 0 ? t / S : -((-t + S - 1) / S);
        if (dsq_time_from_civil(y, mo, d, h, mi, s, 0) != secs * S)
            bad++;
        struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
                        .tm_min = mi, .tm_sec = s};
        if ((int64_t)timegm(&tm) != secs)
            bad++;
        if (bad == 1) {
            fprintf(stderr, "round trip of %lld failed at %s\n", (long long)t, out);
            bad++;
        }
    }
    CHECK_INT(bad, 0);
}

static void test_digits(void)
{
    CHECK_INT(dsq_time_digits("2024", 4), 2024);
    CHECK_INT(dsq_time_digits("07", 2), 7);
    CHECK_INT(dsq_time_digits("202", 3), 202);
    CHECK_INT(dsq_time_digits("20a4", 4), -1);
    CHECK_INT(dsq_time_digits(" 7", 2), -1);
    CHECK_INT(dsq_time_digits("-1", 2), -1);
    CHECK_INT(dsq_time_digits("123x", 3), 123); /* only n bytes are looked at */
    CHECK_INT(dsq_time_digits("", 0), 0);
}

/* The most negative times (found by fuzzing: rounding down used to negate them
 * and overflow) format and give a year without undefined behaviour. */
static void test_extreme_times(void)
{
    char out[64];
    const int64_t ts[] = {INT64_MIN + 1, INT64_MIN + 5, -1, INT64_MAX, INT64_MAX - 999999};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        dsq_time_format(ts[i], out);
        CHECK(out[0] != 0);
        (void)dsq_time_year(ts[i]);
    }
    dsq_time_format(-1, out);
    CHECK_STR(out, "1969-12-31 23:59:59");
    CHECK_INT(dsq_time_year(-1), 1969);
}

/* The stamps lines print, read at once: every field as dsq_time_digits reads it,
 * for random stamps (separators of any kind). */
static void test_stamps(void)
{
    unsigned x = 12345;
    int bad = 0;
    for (int i = 0; i < 5000; i++) {
        char t[32];
        int f[7];
        for (int k = 0; k < 7; k++) {
            x = x * 1103515245u + 12345u;
            f[k] = (int)(x >> 8);
        }
        snprintf(t, sizeof t, "%04d-%02d-%02d %02d:%02d:%02d,%03d", 1900 + f[0] % 200,
                 1 + f[1] % 12, 1 + f[2] % 28, f[3] % 24, f[4] % 60, f[5] % 60, f[6] % 1000);
        int64_t want_ms = dsq_time_from_civil(
            dsq_time_digits(t, 4), dsq_time_digits(t + 5, 2), dsq_time_digits(t + 8, 2),
            dsq_time_digits(t + 11, 2), dsq_time_digits(t + 14, 2), dsq_time_digits(t + 17, 2),
            dsq_time_digits(t + 20, 3) * 1000);
        int64_t want_s = want_ms - dsq_time_digits(t + 20, 3) * 1000;
        struct { int y, mo, d, h, mi, s, us; } c; /* the members dsq_civil has */
        DSQ_TIME_CIVIL_MD(&c, t + 5); /* "MM-DD HH:MM:SS" */
        if (dsq_time_stamp_ms(t) != want_ms || dsq_time_stamp_s(t) != want_s ||
            c.y != 0 || c.mo != dsq_time_digits(t + 5, 2) || c.d != dsq_time_digits(t + 8, 2) ||
            c.h != dsq_time_digits(t + 11, 2) || c.mi != dsq_time_digits(t + 14, 2) ||
            c.s != dsq_time_digits(t + 17, 2) || c.us != 0) {
            fprintf(stderr, "%s: read otherwise\n", t);
            bad++;
        }
    }
    CHECK_INT(bad, 0);
}

TEST_MAIN(T(test_stamps), T(test_extreme_times), T(test_known_values), T(test_leap_years), T(test_format), T(test_round_trip),
          T(test_digits))
