/* Internal helpers to fill a dsq_error. */
#ifndef DSQ_ERROR_H
#define DSQ_ERROR_H

#include "dsq/dsq.h"

/* Sets err->code and a printf-formatted message; returns code so callers can
 * `return dsq_error_set(err, DSQ_EIO, "...")`. err may be NULL. */
int dsq_error_set(dsq_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records which file (and archive member, may be NULL) the error is about. */
void dsq_error_where(dsq_error *err, const char *file, const char *member);

#endif
