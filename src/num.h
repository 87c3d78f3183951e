/* Numbers and units as logs print them. */
#ifndef DSQ_NUM_H
#define DSQ_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Units a value was printed with. Values are stored as printed, with their unit;
 * queries convert to a common base only when one group mixes units. */
enum dsq_unit {
    DSQ_U_NONE = 0,
    DSQ_U_B, DSQ_U_KB, DSQ_U_MB, DSQ_U_GB, DSQ_U_TB,
    DSQ_U_KIB, DSQ_U_MIB, DSQ_U_GIB, DSQ_U_TIB,
    DSQ_U_PCT, DSQ_U_US, DSQ_U_MS, DSQ_U_S,
    DSQ_U_TIME, /* a point in time: microseconds since the epoch, shown as a timestamp */
    DSQ_U_COUNT
};

/* Parses a decimal number at p (sign, digits, '.', exponent; ',' thousands
 * separators between digit groups). Stops at the first byte that cannot continue
 * it; *stop (may be NULL) receives that position. Returns 0 and *out, or -1 if no
 * digits were found. Reads no further than end. */
int dsq_num_parse(const char *p, const char *end, double *out, const char **stop);

/* A number whose layout a line shape fixes (shapes.h): an optional sign, k integer
 * digits, when f > 0 a '.' and f fraction digits, and when ex > 0 an 'e' or 'E',
 * an optional sign and ex exponent digits ("2.000000e-05"), the digits' values
 * free. dsq_num_plan_of tells whether the n bytes at p are such a number that
 * dsq_num_parse reads whole (k + f <= 14, ex <= 3, no separator), and
 * dsq_num_planned_at gives the values of numbers of known layouts, the same bits
 * dsq_num_parse gives, without finding their digits again. The caller has checked
 * that every digit of each layout is one (the other bytes are the layout's). */
typedef struct dsq_num_plan {
    double div;   /* the value is the digits' integer divided by this: 10^f, negated
                     for a '-' (the same bits as a division then a negation) */
    uint16_t shuf; /* the digit shuffle of k and f (num.c) */
    uint8_t ok;   /* 1: the layout is planned (0: use dsq_num_parse) */
    uint8_t skip; /* bytes of sign */
    uint8_t neg, n, k, f;
    uint8_t ex;    /* exponent digits (0: no exponent) */
    uint8_t exneg; /* the exponent's sign is '-' */
    uint8_t exat;  /* its first digit, in bytes after the sign */
} dsq_num_plan;

void dsq_num_plan_of(const char *p, size_t n, dsq_num_plan *pl);
/* The number of layout pl[i] at base + off[i] stored as a double at (char *)out +
 * out_off[i], for i < n <= 64: a line's values in one call, each where its match
 * keeps it. */
void dsq_num_planned_at(const dsq_num_plan *pl, const uint16_t *off, int n, const char *base,
                        void *out, const uint16_t *out_off);

/* v as an int when it is one of 0 .. 10^9 - 1 (a rank, a count; its fraction cut),
 * else -1: never a cast of a value out of int's range (inf, 1e300). */
static inline int dsq_num_small_int(double v) { return v >= 0 && v < 1e9 ? (int)v : -1; }

/* Unit from its printed name ("GB", "MiB", "%", "ms"...); DSQ_U_NONE if unknown. */
enum dsq_unit dsq_unit_parse(const char *p, size_t n);

/* Printed name of a unit ("" for none). */
const char *dsq_unit_name(enum dsq_unit u);

/* Factor from a unit to its family's base (bytes, seconds, percent points). Units
 * of different families never mix: dsq_unit_family tells them apart. */
double dsq_unit_factor(enum dsq_unit u);
int dsq_unit_family(enum dsq_unit u);

#endif
