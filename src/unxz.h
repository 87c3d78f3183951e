/* xz streams decoded by liblzma, for input.c.
 *
 * A stream is one or more xz streams back to back, read as one like `xz -dc`: after
 * a stream ends, zero bytes (stream padding) are passed over, and when their count is
 * a multiple of four, bytes that begin a valid xz stream header start the next
 * stream; anything else (garbage, padding of another length, a bad header) ends the
 * stream there, and dsq_unxz_end says where, so a caller can judge what follows (as
 * after a gzip stream: gunzip.h). Each stream's integrity check is verified.
 *
 * Compressed input is pulled from a callback in blocks of any size (a memory map in
 * one piece, or an archive member's blocks); output goes into the caller's buffer.
 * liblzma allocates its decoder state at each stream's start (reused when the next
 * stream's dictionary fits), never per read.
 */
#ifndef DSQ_UNXZ_H
#define DSQ_UNXZ_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"
#include "pull.h"

typedef struct dsq_unxz dsq_unxz;

/* Next block of compressed input (pull.h). */
typedef dsq_pull_fn dsq_unxz_pull;

/* 0 or DSQ_ENOMEM. */
int dsq_unxz_new(dsq_unxz **out);
void dsq_unxz_free(dsq_unxz *x);

/* Starts a new stream read through pull(ctx, ...); ctx is borrowed until the next
 * start. */
void dsq_unxz_start(dsq_unxz *x, dsq_unxz_pull pull, void *ctx);

/* Decodes up to cap bytes into out: 0 and *len > 0; 0 and *len == 0 at the end of
 * the stream; < 0 (DSQ_EFORMAT, DSQ_ENOMEM, or the pull's error) when the data is
 * corrupt or cut short, after which it only returns that error again. Bytes decoded
 * before an error are handed out first (the error comes at the next read). Input
 * whose first stream header is not valid fails with "starts with xz magic bytes but
 * is no valid xz data" or "xz: corrupted input data". */
int dsq_unxz_read(dsq_unxz *x, unsigned char *out, size_t cap, size_t *len, dsq_error *err);

/* Streams whose header was read so far (0: the input is no xz stream yet). */
uint64_t dsq_unxz_streams(const dsq_unxz *x);

/* Compressed bytes consumed so far. */
uint64_t dsq_unxz_bytes_in(const dsq_unxz *x);

/* 1 once read returned the end of the stream, and then *at = the offset of the
 * first compressed byte after its last stream (where trailing bytes, if any,
 * begin); else 0. */
int dsq_unxz_end(const dsq_unxz *x, uint64_t *at);

#endif
