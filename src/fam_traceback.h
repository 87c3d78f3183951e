/* Traceback family handler (src/fam_traceback.c): one traceback event per Python
 * traceback plus a failure classified by its message; tracebacks of several
 * (host, rank) streams may interleave. */
#ifndef DSQ_FAM_TRACEBACK_H
#define DSQ_FAM_TRACEBACK_H

#include <stdint.h>

#include "grammar.h"

#define DSQ_TB_SLOTS 32

/* Tracebacks started and not yet ended by an exception line, per stream. */
typedef struct dsq_tb_slot {
    uint32_t host;
    int rank;
    int pending;        /* "Traceback (most recent call last):" lines not yet closed */
    int64_t t_us;       /* of the oldest pending start */
    uint32_t lineno;
} dsq_tb_slot;

typedef struct dsq_tb_state {
    dsq_fam_state base;
    int after_frame;    /* the previous lines were a frame and its code lines */
    dsq_tb_slot slot[DSQ_TB_SLOTS];
} dsq_tb_state;

int dsq_tb_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                  size_t len);

/* Emits a traceback event (no label) for every traceback whose exception line
 * never came (a log cut short). */
int dsq_tb_finish(void *state, const dsq_line_ctx *lc);

/* Failure class of an exception (type, message): "cuda_oom", "nccl_timeout",
 * "nccl_error", "cuda_error", "exception", or NULL when it is not counted as a
 * failure of its own (the launcher's ChildFailedError, a restated watchdog
 * timeout in a C++ what()). */
const char *dsq_tb_classify(dsq_span type, dsq_span msg);

/* The CUDA OOM message's numbers ("tried to allocate", "total capacity", "free",
 * ...), units as printed. Returns the number of fields written (at most max). */
int dsq_tb_oom_fields(dsq_span msg, dsq_mfield *f, int max);

/* pywarn handler: the source line Python prints under a warning ("  warnings.warn(")
 * belongs to the warning: the indented line right after a warning is claimed. */
typedef struct dsq_pywarn_state {
    dsq_fam_state base; /* active on the line after a warning */
    uint32_t host;      /* the warning's stream */
    int rank;
} dsq_pywarn_state;

int dsq_pywarn_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m,
                      const char *line, size_t len);

#endif
