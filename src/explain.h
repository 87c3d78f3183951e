/* `dsq explain FILE|-`: a log, line by line, with what dsq understood of each line
 * and what it means.
 *
 * Each line goes through the same decoder, splitter and scanner as `dsq index`;
 * explain prints the line with its family, level, host, rank and the fields or
 * events it yielded, then the catalogue entry that explains it (catalogue.h).
 * An entry is explained in full the first time; later lines it explains are folded
 * into one "... and N more like this" line unless they are problems (warning or
 * worse, a failure, a traceback, an NCCL WARN), which are always shown. With
 * only_problems, nothing else is printed. Writes to params->out; reports unreadable
 * input through params->problem and goes on.
 */
#ifndef DSQ_EXPLAIN_H
#define DSQ_EXPLAIN_H

#include <stdio.h>

#include "catalogue.h"
#include "dsq/dsq.h"

typedef struct dsq_explain_params {
    const dsq_catalogue *cat; /* borrowed */
    FILE *out;                /* where the explanation goes */
    int only_problems;        /* 1: only warning / error / failure lines */
    void (*problem)(void *ctx, const dsq_error *err); /* unreadable input; may be NULL */
    void *ctx;
} dsq_explain_params;

/* Explains one file (plain, compressed or an archive: every member in turn), or
 * standard input when path is "-" (also plain or compressed). 0, or DSQ_ENOMEM /
 * DSQ_EIO when nothing could be read at all. */
int dsq_explain_path(const dsq_explain_params *p, const char *path, dsq_error *err);

/* 1 when a line of this level, family and event kind counts as a problem (what
 * --only problems keeps). kind is enum dsq_ev_kind or 0 for a line without events. */
int dsq_explain_is_problem(int level, int family, int kind);

#endif
