/* The data of zip members decoded by ISA-L, for input.c.
 *
 * libarchive reads a .zip file's headers as before (names, times, types, the
 * order of the members: by where their local headers are); only the members'
 * bytes are decoded here, because libarchive inflates them with zlib and checks
 * their CRC-32 with zlib's, about twice the cost of ISA-L's inflate and its folded
 * CRC (6.3 and 3.9 instructions a byte where ISA-L takes about 3). Stored members
 * are handed out from the file's bytes as they are.
 *
 * dsq_unzip_open reads the central directory itself. Each header libarchive reads
 * is then paired with the next entry in local-header order (dsq_unzip_next): the
 * entry is decoded here only when libarchive gave the same name and size and the
 * entry is one this reader takes whole (stored or deflated, not encrypted, its
 * local header where the directory says, its data before the directory). Anything
 * else, in a member or in the whole file (zip64, a directory not where the end
 * record says, entries sharing an offset), is left to libarchive, as it was
 * before; after one pairing fails, the rest of the file is too.
 *
 * A decoded member's end is checked as libarchive checks it, with the same
 * messages: its CRC-32 ("ZIP bad CRC: 0x... should be 0x..."), its size, the
 * compressed bytes the deflate stream took. Unlike libarchive, every byte decoded
 * is handed out before such an error (libarchive drops the block it found it in).
 *
 * Built without ISA-L (DSQ_HAVE_ISAL undefined) dsq_unzip_new fails with
 * DSQ_EUSAGE and libarchive decodes every member. No allocation after open.
 */
#ifndef DSQ_UNZIP_H
#define DSQ_UNZIP_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"

typedef struct dsq_unzip dsq_unzip;

/* 1 when this build decodes zip members with ISA-L, else 0. */
int dsq_unzip_available(void);

/* 0, DSQ_ENOMEM, or DSQ_EUSAGE when built without ISA-L. */
int dsq_unzip_new(dsq_unzip **out);
void dsq_unzip_free(dsq_unzip *z);

/* Reads the central directory of the zip file p[0..n) (borrowed until the next
 * open): 1 when members may be decoded here, 0 when libarchive decodes them all
 * (no usable directory, zip64, ...), DSQ_ENOMEM. */
int dsq_unzip_open(dsq_unzip *z, const unsigned char *p, size_t n);

/* The header libarchive read next (every one, directories too: name as it gave it,
 * size -1 when unknown): 1 when its data is decoded here (dsq_unzip_block), 0 when
 * libarchive must decode it. */
int dsq_unzip_next(dsq_unzip *z, const char *name, int64_t size);

/* libarchive skipped damaged entries: the pairing is lost, so it decodes the rest. */
void dsq_unzip_decline(dsq_unzip *z);

/* The next block of the paired member's data: 1 with *buf and *len (> 0; valid
 * until the next call), 0 at its end (size and CRC-32 checked), DSQ_EFORMAT with
 * the reason in err (the member's later calls return 0). */
int dsq_unzip_block(dsq_unzip *z, const void **buf, size_t *len, dsq_error *err);

/* The offset after the last compressed byte taken from the file so far (0 before
 * the first paired member): libarchive's count does not see those. */
uint64_t dsq_unzip_bytes_in(const dsq_unzip *z);

#endif
