/* Scanner: turns the lines of one stream (a file or archive member) into events.
 *
 * For each line it peels prefix layers (pdsh host), runs the family recognizers,
 * keeps the stream's context (last time seen, which host and rank a line belongs
 * to), joins multi-line events (the DeepSpeed memory report: label, MA line, CPU
 * line; interleaved reports of different hosts/ranks are kept apart), counts every
 * line by family and level, and hands finished events to the sink. Nothing is
 * allocated per line: events are built on the stack, names are dictionary ids.
 */
#ifndef DSQ_SCAN_H
#define DSQ_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "dict.h"
#include "event.h"
#include "grammar.h"

typedef struct dsq_scan dsq_scan;

/* Receives each finished event; a non-zero return stops the scan. */
typedef int (*dsq_emit_fn)(void *ctx, const dsq_event *ev);

/* Sees every line as the scanner understood it (after prefix layers and
 * recognizers, before events are built): for golden tests and `explain`. */
typedef void (*dsq_observe_fn)(void *ctx, const dsq_match *m, const char *line, size_t len,
                               unsigned flags);

typedef struct dsq_scan_params {
    dsq_dict *dict;     /* borrowed: where host names, labels and field names go */
    dsq_emit_fn emit;
    void *ctx;
    dsq_observe_fn observe; /* may be NULL */
    void *observe_ctx;
    int no_shapes; /* 1: the recognizers read every line (no line shapes, src/shapes.h),
                      as DSQ_LINE_SHAPES=0 does */
} dsq_scan_params;

typedef struct dsq_scan_stats {
    uint64_t lines;
    uint64_t cut;
    uint64_t events;
    uint64_t family_lines[DSQ_FAM_COUNT];
    uint64_t level_lines[DSQ_LV_COUNT];
} dsq_scan_stats;

int dsq_scan_new(const dsq_scan_params *params, dsq_scan **out);
void dsq_scan_free(dsq_scan *sc);

/* Starts a stream. Lines without a host/rank prefix get these (0 / -1: unknown). */
void dsq_scan_begin(dsq_scan *sc, uint32_t default_host, int default_rank);

/* Year for stamps that print none, until a stamp with a year is seen (the
 * indexer passes the file's mtime year). Call after dsq_scan_begin. */
void dsq_scan_set_year(dsq_scan *sc, int year);

/* Like dsq_scan_set_year with the year of t_us (the file's mtime), and a stamp
 * that would fall after t_us is taken to be from the year before. */
void dsq_scan_set_written(dsq_scan *sc, int64_t t_us);

/* One line (a dsq_line_fn: ctx is the scanner). */
int dsq_scan_line(void *scanner, const char *line, size_t len, unsigned flags);

/* Ends the stream: emits events still waiting for lines that never came. */
int dsq_scan_end(dsq_scan *sc);

const dsq_scan_stats *dsq_scan_stats_get(const dsq_scan *sc);

/* What dsq_scan_line does to a line after its prefix layers, for tests and
 * fuzzers: a match cleared as before the prefix layers, and the recognizers run on
 * the line (the first that takes it; a progress bar's glued line). No shapes. */
void dsq_scan_match_init(dsq_match *m);
void dsq_scan_recognize(dsq_match *m, const char *line, size_t len);

#endif
