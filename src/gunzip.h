/* gzip streams decoded by ISA-L (igzip), for input.c.
 *
 * A stream is one or more gzip members back to back, read as one like `gzip -dc`:
 * after a member ends, bytes that begin a valid gzip header start the next one;
 * anything else (zero padding, garbage, a bad or cut header) ends the stream there,
 * and dsq_gunzip_end says where, so a caller can judge what follows. Each member's
 * header is parsed with isal_read_gzip_header and its body inflated with the CRC-32
 * and length in its trailer checked (ISAL_GZIP_NO_HDR_VER).
 *
 * Compressed input is pulled from a callback in blocks of any size (a memory map in
 * one piece, or an archive member's blocks); output goes into the caller's buffer.
 * No allocation after dsq_gunzip_new. Built without ISA-L (DSQ_HAVE_ISAL undefined)
 * every function exists, dsq_gunzip_new fails with DSQ_EUSAGE and input.c keeps
 * decoding gzip with libarchive.
 */
#ifndef DSQ_GUNZIP_H
#define DSQ_GUNZIP_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"
#include "pull.h"

typedef struct dsq_gunzip dsq_gunzip;

/* Next block of compressed input (pull.h). */
typedef dsq_pull_fn dsq_gunzip_pull;

/* 1 when this build decodes gzip with ISA-L, else 0. */
int dsq_gunzip_available(void);

/* "ISA-L 2.30.0 (igzip)" or "zlib (libarchive)": what decodes gzip in this build. */
const char *dsq_gunzip_backend(void);

/* 0, DSQ_ENOMEM, or DSQ_EUSAGE when built without ISA-L. */
int dsq_gunzip_new(dsq_gunzip **out);
void dsq_gunzip_free(dsq_gunzip *g);

/* Starts a new stream read through pull(ctx, ...); ctx is borrowed until the next
 * start. */
void dsq_gunzip_start(dsq_gunzip *g, dsq_gunzip_pull pull, void *ctx);

/* Decodes up to cap bytes into out: 0 and *len > 0; 0 and *len == 0 at the end of
 * the stream; < 0 (DSQ_EFORMAT, or the pull's error) when the data is corrupt or
 * cut short, after which it only returns that error again. Input that does not
 * begin with a valid gzip header fails with "starts with gzip magic bytes but is
 * no valid gzip data". */
int dsq_gunzip_read(dsq_gunzip *g, unsigned char *out, size_t cap, size_t *len,
                    dsq_error *err);

/* Members whose header was read so far (0: the input is no gzip stream yet). */
uint64_t dsq_gunzip_members(const dsq_gunzip *g);

/* Compressed bytes consumed so far. */
uint64_t dsq_gunzip_bytes_in(const dsq_gunzip *g);

/* 1 once read returned the end of the stream, and then *at = the offset of the
 * first compressed byte after its last member (where trailing bytes, if any,
 * begin); else 0. */
int dsq_gunzip_end(const dsq_gunzip *g, uint64_t *at);

#endif
