/* Line splitting: one small API in front of whatever finds line ends.
 *
 * Lines end in "\n", "\r\n" or a lone "\r" (tqdm rewrites its bar with "\r").
 * The callback receives each line without its terminator. Contract for the
 * callback: line[len] is always readable and is '\n' or '\r', which acts as the
 * lexer's sentinel, and at least DSQ_LINES_PAD bytes after line[len] are readable
 * when the line was copied (in-place lines point into the caller's data, whose
 * terminator is the sentinel). A line longer than max_line is cut to max_line bytes,
 * passed with DSQ_LINE_CUT, and the rest of it up to its end is skipped: the lines
 * after it are not lost. Chunks may split a line (or a "\r\n") anywhere.
 *
 * Line ends are found by a backend of linescan.h (scalar or AVX2), chosen once per
 * splitter; every backend yields the same lines, flags and stats.
 */
#ifndef DSQ_LINES_H
#define DSQ_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "linescan.h"

#define DSQ_LINES_PAD 64
#define DSQ_LINE_CUT 1u
/* The line began right after a lone '\r' (a tqdm rewrite): it is a segment of the
 * same physical line as the one before, so it shares that line's prefixes. */
#define DSQ_LINE_AFTER_CR 2u

typedef struct dsq_lines dsq_lines;

/* Called once per line. A non-zero return stops feeding and is returned by feed. */
typedef int (*dsq_line_fn)(void *ctx, const char *line, size_t len, unsigned flags);

typedef struct dsq_lines_params {
    size_t max_line;  /* cap on one line's length; 0 means the default (1 MiB) */
    dsq_line_fn fn;   /* receives each line */
    void *ctx;        /* passed to fn */
} dsq_lines_params;

typedef struct dsq_lines_stats {
    uint64_t lines;     /* lines delivered, cut ones included */
    uint64_t cut;       /* lines longer than max_line */
    uint64_t bytes;     /* bytes fed */
} dsq_lines_stats;

/* Allocates a splitter (the only allocation: its carry buffer), finding line ends
 * with the DSQ_LINESCAN_AUTO backend. Returns 0 or DSQ_ENOMEM. */
int dsq_lines_new(const dsq_lines_params *params, dsq_lines **out);
void dsq_lines_free(dsq_lines *lb);

/* Starts a new stream: forgets any partial line and zeroes the stats. */
void dsq_lines_reset(dsq_lines *lb);

/* Feeds the next chunk of the stream. data borrows; only a trailing partial line is
 * copied. Returns 0 or what the callback returned. */
int dsq_lines_feed(dsq_lines *lb, const char *data, size_t len);

/* Ends the stream: delivers a last line that had no terminator. */
int dsq_lines_finish(dsq_lines *lb);

const dsq_lines_stats *dsq_lines_stats_get(const dsq_lines *lb);

/* Makes the splitter find line ends with backend b from the next feed on (tests and
 * benchmarks compare backends this way). Returns 0, or DSQ_EUSAGE when this CPU
 * cannot run b (the splitter then uses the scalar backend). */
int dsq_lines_set_backend(dsq_lines *lb, dsq_linescan_backend b);

/* The backend this splitter finds line ends with (never AUTO). */
dsq_linescan_backend dsq_lines_backend(const dsq_lines *lb);

#endif
