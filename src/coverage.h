/* Coverage: how much of a set of logs dsq understands.
 *
 * Reads files, directories and archives like the indexer does (same decoder,
 * splitter and scanner) but writes no index: it counts lines per family, events
 * per kind, and groups the lines no family recognized by shape (digits folded to
 * '#', first 60 bytes after prefix layers), most frequent first. This is what
 * `dsq explain --stats` prints, and how grammar work measures its progress.
 */
#ifndef DSQ_COVERAGE_H
#define DSQ_COVERAGE_H

#include <stdint.h>

#include "dsq/dsq.h"
#include "result.h"

typedef struct dsq_coverage {
    uint64_t files, lines, recognized, events;
    dsq_result *families;  /* family, lines, share */
    dsq_result *kinds;     /* kind, events */
    dsq_result *shapes;    /* unrecognized shape, lines, example */
} dsq_coverage;

typedef struct dsq_coverage_params {
    int top;               /* shapes to list (0: 30) */
    void (*problem)(void *ctx, const dsq_error *err); /* unreadable input; may be NULL */
    void *ctx;
} dsq_coverage_params;

/* Runs over paths and fills out (caller frees with dsq_coverage_free). */
int dsq_coverage_run(const dsq_coverage_params *p, const char *const *paths, int npaths,
                     dsq_coverage *out, dsq_error *err);
void dsq_coverage_free(dsq_coverage *c);

#endif
