/* dsq: index the logs of distributed training jobs and answer questions across runs.
 *
 * This is the whole public API. Every fallible function returns 0 or a negative
 * DSQ_E* code and fills a caller-supplied dsq_error. The library never prints,
 * never exits and never aborts on bad input. Handles are opaque; every _open/_new
 * has a _close/_free that accepts NULL.
 */
#ifndef DSQ_DSQ_H
#define DSQ_DSQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes sit outside errno's range (like LMDB's), so they never collide. */
enum {
    DSQ_OK = 0,
    DSQ_ENOMEM = -30900,  /* out of memory: stops the run */
    DSQ_EIO = -30901,     /* a file could not be opened or read */
    DSQ_EFORMAT = -30902, /* input is corrupt or not what its magic said */
    DSQ_EINDEX = -30903,  /* the index could not be opened or written */
    DSQ_EQUERY = -30904,  /* the query text is not valid */
    DSQ_EUSAGE = -30905,  /* a caller passed arguments that make no sense */
    DSQ_ELIMIT = -30906   /* a documented limit was hit (e.g. decompression ratio) */
};

/* Where and why something failed. `file`, `member`, `line` and `offset` are filled
 * when known (empty / -1 otherwise). For query errors `offset` is the byte offset of
 * the offending word in the query text and `length` its length. */
typedef struct dsq_error {
    int code;
    char msg[256];
    char file[512];
    char member[256];
    long long line;
    long long offset;
    long long length;
} dsq_error;

/* Clears an error struct to "no error". */
void dsq_error_clear(dsq_error *err);

/* Human text for a DSQ_E* code (static storage). */
const char *dsq_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
