/* "name: value" pairs as training loops print them, shared by the recognizers of
 * several families (DeepSpeed timers, Megatron iteration lines). Pure functions:
 * they only slice the line and append fields to a dsq_match. */
#ifndef DSQ_FAM_PAIRS_H
#define DSQ_FAM_PAIRS_H

#include <stddef.h>

#include "grammar.h"

/* A pair found in a line: the name as printed (trimmed) and where its value starts. */
typedef struct dsq_pair {
    dsq_span name;
    const char *val;
} dsq_pair;

/* Splits p..end at '|' into "name: value" segments; a segment whose value does not
 * start with a number is skipped. Fills at most max pairs, returns how many. */
int dsq_pairs_pipe(const char *p, const char *end, dsq_pair *out, int max);

/* Unit named at the end of a field name ("elapsed time per iteration (ms)" -> ms,
 * "memory (MB)" -> MB), DSQ_U_NONE if none. */
int dsq_pairs_name_unit(dsq_span name);

#endif
