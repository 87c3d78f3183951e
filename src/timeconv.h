/* One clock for every timestamp style: microseconds since the Unix epoch, UTC as
 * printed (logs rarely say their zone; dsq keeps wall-clock times as printed). */
#ifndef DSQ_TIMECONV_H
#define DSQ_TIMECONV_H

#include <stdint.h>

/* Value meaning "no time known". */
#define DSQ_TIME_NONE INT64_MIN

/* Civil date and time to microseconds since 1970-01-01 00:00:00. Fields are not
 * range-checked beyond what the arithmetic needs; callers validate. */
int64_t dsq_time_from_civil(int y, int mo, int d, int h, int mi, int s, int us);

/* Inverse, for printing: writes "YYYY-MM-DD HH:MM:SS" (needs 64 bytes). */
void dsq_time_format(int64_t t_us, char out[64]);

/* The calendar year of a time (UTC). */
int dsq_time_year(int64_t t_us);

/* Parses fixed-width decimal digits; returns -1 if any is not a digit. Inline:
 * every stamped line parses seven of these. */
static inline int dsq_time_digits(const char *p, int n)
{
    int v = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)p[i] - '0';
        bad |= d > 9;
        v = v * 10 + (int)d;
    }
    return bad ? -1 : v;
}

/* Two digits at p, not checked (the stamps below: their callers matched them, a
 * line shape checked them; anything else gives some number, never -1). */
static inline int dsq_time_d2(const char *p) { return (p[0] - '0') * 10 + (p[1] - '0'); }

/* "YYYY-MM-DD HH:MM" at p (any separators): its time at second 0. A stamp is its
 * minute plus the rest below (the same sum as dsq_time_from_civil's, in another
 * order); a line shape keeps the minute of its last stamp (shapes.c). */
static inline int64_t dsq_time_stamp_minute(const char *p)
{
    return dsq_time_from_civil(dsq_time_d2(p) * 100 + dsq_time_d2(p + 2), dsq_time_d2(p + 5),
                               dsq_time_d2(p + 8), dsq_time_d2(p + 11), dsq_time_d2(p + 14),
                               0, 0);
}

/* The seconds of "YYYY-MM-DD HH:MM:SS" at p, in microseconds. */
static inline int64_t dsq_time_stamp_s_rest(const char *p)
{
    return dsq_time_d2(p + 17) * (int64_t)1000000;
}

/* The seconds and milliseconds of "YYYY-MM-DD HH:MM:SS,mmm" at p, in microseconds. */
static inline int64_t dsq_time_stamp_ms_rest(const char *p)
{
    return dsq_time_stamp_s_rest(p) + (dsq_time_d2(p + 20) * 10 + (p[22] - '0')) * 1000;
}

/* "YYYY-MM-DD HH:MM:SS" at p (any separators): the stamp DeepSpeed's, Megatron's
 * and others' headers print. Digits are not checked (callers matched them). */
static inline int64_t dsq_time_stamp_s(const char *p)
{
    return dsq_time_stamp_minute(p) + dsq_time_stamp_s_rest(p);
}

/* The same with milliseconds after a separator: "YYYY-MM-DD HH:MM:SS,mmm". */
static inline int64_t dsq_time_stamp_ms(const char *p)
{
    return dsq_time_stamp_minute(p) + dsq_time_stamp_ms_rest(p);
}

/* "MM/DD HH:MM:SS" at p as a year-less stamp (mmengine's logger): y = 0. The
 * caller's type (grammar.h's dsq_civil) is filled through its members. */
#define DSQ_TIME_CIVIL_MD(c, p)                                                          \
    ((c)->y = 0, (c)->mo = dsq_time_d2(p), (c)->d = dsq_time_d2((p) + 3),                \
     (c)->h = dsq_time_d2((p) + 6), (c)->mi = dsq_time_d2((p) + 9),                      \
     (c)->s = dsq_time_d2((p) + 12), (c)->us = 0)

#endif
