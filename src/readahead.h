/* Read-ahead: an input (input.h) decoded on a thread of its own, so that the
 * decoder works on chunk k+1 while the caller lexes chunk k.
 *
 * The calls mirror input.h one for one (open, next_member, take_damage, read,
 * bytes_in, close) and give the same members, the same chunks (same bytes, same
 * boundaries: a chunk longer than a buffer comes as several), the same damage
 * reports and errors in the same order, and the same decode-limit behaviour: the
 * decoder thread runs the very same dsq_input calls in the same order, and what
 * they return is replayed to the caller.
 *
 * A file is opened in the caller's thread and read directly (no thread, no copy)
 * until dsq_readahead_start: from then on, up to the file's end, a decoder thread
 * runs open's dsq_input — the rest of the current member, then next_member,
 * take_damage and read in the loop of input.h — and copies what it gets into a
 * fixed ring of buffers (params.bufs of params.buf_bytes each) that are handed to
 * the caller full and in order, and come back once read (zstd decodes in place
 * there; a chunk the input keeps in its own ring, a big .zst log's, is handed out
 * from that ring, one per buffer: dsq_input_keeps_chunks). start may be called at
 * any moment between reads, so a caller can decide late (when a core turns idle).
 * The thread and the ring are made at the first start and reused for every later
 * file; a handle that never starts costs one dsq_input. Nothing is allocated per
 * chunk (a member name longer than every name before it grows one buffer; a name
 * longer than a buffer, which no real archive has, is cut once decoded ahead).
 *
 * Differences from reading the input directly, both invisible to a caller that
 * reads every member to its end: the decoder runs ahead by up to the ring's size,
 * and next_member called before a member's end skips the rest of it after it was
 * decoded (input.h would count the skipped bytes against the decode limit without
 * decoding them; the decoder counted them as it decoded them).
 *
 * One caller thread per handle. Views (member names, chunks) are valid until the
 * next call on the handle, as in input.h.
 */
#ifndef DSQ_READAHEAD_H
#define DSQ_READAHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"
#include "input.h"

typedef struct dsq_readahead dsq_readahead;

typedef struct dsq_readahead_params {
    size_t buf_bytes; /* bytes of chunks per buffer; 0: DSQ_READAHEAD_BUF_BYTES */
    int bufs;         /* buffers in the ring (at least 2); 0: DSQ_READAHEAD_BUFS */
} dsq_readahead_params;

#define DSQ_READAHEAD_BUF_BYTES ((size_t)2 << 20)
#define DSQ_READAHEAD_BUFS 4

/* A handle and its dsq_input (params may be NULL). 0 or DSQ_ENOMEM. */
int dsq_readahead_new(const dsq_readahead_params *params, dsq_readahead **out);
/* Stops the decoder thread (closing the open file first) and frees everything. */
void dsq_readahead_free(dsq_readahead *ra);

/* dsq_input_open, in the caller's thread; closes the file open before. */
int dsq_readahead_open(dsq_readahead *ra, const char *path, dsq_error *err);
/* dsq_input_fingerprint_open of the file just opened (before the first member). */
int dsq_readahead_fingerprint(const dsq_readahead *ra, dsq_file_info *fi);
/* Format of the open file (dsq_input_format). */
const char *dsq_readahead_format(const dsq_readahead *ra);
/* dsq_input_was_cold of the file open (before it started decoding ahead). */
int dsq_readahead_was_cold(const dsq_readahead *ra);

/* Hands the rest of the open file to the decoder thread. 0; DSQ_ENOMEM when the
 * thread or the ring cannot be made (the file is then still read directly, so a
 * caller may ignore the status). Does nothing when already started or when no
 * file is open or the file has ended. Views from earlier reads become invalid. */
int dsq_readahead_start(dsq_readahead *ra);
/* 1 after start for the open file, else 0. */
int dsq_readahead_started(const dsq_readahead *ra);

/* As dsq_input_next_member, dsq_input_take_damage and dsq_input_read. */
int dsq_readahead_next_member(dsq_readahead *ra, dsq_member_info *mi, dsq_error *err);
int dsq_readahead_take_damage(dsq_readahead *ra, dsq_error *err);
int dsq_readahead_read(dsq_readahead *ra, const char **data, size_t *len, dsq_error *err);

/* dsq_input_bytes_in as of the last member boundary the caller has reached (after
 * next_member returned 0 or < 0: the file's total, as in input.h). */
uint64_t dsq_readahead_bytes_in(const dsq_readahead *ra);

/* For progress: the bytes of the file read by the time the chunk last returned was
 * decoded (compressed side; for a progress line, not exact at member ends). */
uint64_t dsq_readahead_read_in(const dsq_readahead *ra);

/* Closes the file. A running decoder is told to stop and its buffers are taken
 * back (it may be waiting for one); returns once it no longer touches the file. */
void dsq_readahead_close(dsq_readahead *ra);

#endif
