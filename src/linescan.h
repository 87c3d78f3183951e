/* Finding line ends: the one primitive under the line splitter (lines.c).
 *
 * A backend returns the first '\n' or '\r' in [p, end), or NULL. Two are built:
 *   scalar  portable C, always compiled: memchr for '\n', then memchr for '\r' up to
 *           it; the '\n' found is cached for the rest of the chunk, so a run of
 *           lone '\r' (tqdm) scans the chunk for '\n' once, not once per segment
 *   avx2    x86-64 only: 64 bytes a turn compared against both bytes in one pass,
 *           the block's terminator bits kept for the lines that follow in it;
 *           compiled with a target attribute (the rest of the build keeps default
 *           flags) and used only when the CPU runs it
 * A backend never reads outside [p, end): chunks are caller data with no padding.
 *
 * The backend is chosen once, when a scanner is set up: DSQ_LINESCAN_AUTO takes
 * DSQ_LINES_BACKEND from the environment (scalar or avx2; for tests and benchmarks)
 * when the CPU runs it, else the fastest backend the CPU runs.
 */
#ifndef DSQ_LINESCAN_H
#define DSQ_LINESCAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum dsq_linescan_backend {
    DSQ_LINESCAN_AUTO = 0, /* DSQ_LINES_BACKEND if usable, else the fastest usable */
    DSQ_LINESCAN_SCALAR,
    DSQ_LINESCAN_AVX2,
    DSQ_LINESCAN_COUNT
} dsq_linescan_backend;

typedef struct dsq_linescan dsq_linescan;

/* Scanner state, embedded by its user (no allocation). */
struct dsq_linescan {
    const char *(*find)(dsq_linescan *ls, const char *p, const char *end);
    const char *nl;   /* scalar: the chunk's next '\n' at or after the last p, or end */
    const char *blk;  /* avx2: the last 64-byte block scanned (inside the chunk), or NULL */
    uint64_t bits;    /* avx2: its terminator bits, bit i for blk[i] */
    dsq_linescan_backend backend; /* never AUTO once set up */
};

/* Sets up ls for backend b (AUTO resolves as above). Returns 0, or DSQ_EUSAGE when
 * b is not built or this CPU cannot run it (ls is then set up as scalar). */
int dsq_linescan_init(dsq_linescan *ls, dsq_linescan_backend b);

/* Starts a new chunk: must be called before the first find in each chunk. Between
 * two calls every find passes the same end and a p that never moves backwards. */
static inline void dsq_linescan_chunk(dsq_linescan *ls)
{
    ls->nl = NULL;
    ls->blk = NULL;
}

/* First '\n' or '\r' in [p, end) (p <= end), or NULL when there is none. */
static inline const char *dsq_linescan_find(dsq_linescan *ls, const char *p, const char *end)
{
    return ls->find(ls, p, end);
}

/* 1 when backend b is built and this CPU runs it (AUTO and SCALAR: always). */
int dsq_linescan_usable(dsq_linescan_backend b);

/* The concrete backend AUTO stands for in this process now (reads the environment). */
dsq_linescan_backend dsq_linescan_resolve(dsq_linescan_backend b);

/* "auto", "scalar", "avx2" (static storage); "?" for a value out of range. */
const char *dsq_linescan_name(dsq_linescan_backend b);

#endif
