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

/* Parses fixed-width decimal digits; returns -1 if any is not a digit. */
int dsq_time_digits(const char *p, int n);

#endif
