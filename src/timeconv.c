/* Civil time conversion (proleptic Gregorian, days-from-civil), no libc time zone
 * machinery, so it is fast and thread-safe on the per-line path. */
#include "timeconv.h"

#include <stdio.h>

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Lines of a log share their date: the last date's day number, per thread. */
static _Thread_local struct {
    int y, mo, d;
    int64_t days;
} last_date = {1970, 1, 1, 0};

int64_t dsq_time_from_civil(int y, int mo, int d, int h, int mi, int s, int us)
{
    if (y != last_date.y || mo != last_date.mo || d != last_date.d) {
        last_date.days = days_from_civil(y, mo, d);
        last_date.y = y, last_date.mo = mo, last_date.d = d;
    }
    int64_t days = last_date.days;
    return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000000) + us;
}

/* Days since the epoch to year, month, day (inverse of days_from_civil). */
static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const int64_t doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

/* a / b rounded down (b > 0), for every a: no negation, so INT64_MIN + 1 is fine. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

void dsq_time_format(int64_t t_us, char out[64])
{
    if (t_us == DSQ_TIME_NONE) {
        snprintf(out, 64, "-");
        return;
    }
    int64_t secs = floor_div(t_us, 1000000);
    int64_t z = floor_div(secs, 86400), sod = secs - z * 86400, y, m, d;
    civil_from_days(z, &y, &m, &d);
    snprintf(out, 64, "%04d-%02d-%02d %02d:%02d:%02d", (int)y, (int)m, (int)d, (int)(sod / 3600),
             (int)(sod / 60 % 60), (int)(sod % 60));
}

int dsq_time_year(int64_t t_us)
{
    int64_t y, m, d;
    if (t_us == DSQ_TIME_NONE)
        return 1970;
    civil_from_days(floor_div(floor_div(t_us, 1000000), 86400), &y, &m, &d);
    return (int)y;
}

