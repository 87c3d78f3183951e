/* Inputs: one file in, a sequence of members out, each a stream of byte chunks.
 *
 * Formats are detected by magic bytes, never by name alone: plain text (mmap'd,
 * handed out in one chunk), zstd (libzstd streaming, multi-frame), xz (liblzma:
 * unxz.h, multi-stream), gzip (ISA-L: gunzip.h, else libarchive), and through
 * libarchive bzip2 single files and tar, tar.zst, tar.gz, tar.xz, zip archives,
 * whose members are streamed in place (nothing is extracted to disk, member paths
 * are only recorded, never followed). A zstd, gzip, xz or bzip2 member inside an
 * archive is decompressed on the fly; under gzip, xz, bzip2 or zstd (a single file's
 * or a member's) a further compression is decoded too (`xz -c f | gzip -c`,
 * `gzip -c f | zstd -c`), and a tar under it read as a tar (a single file's). A
 * member that decodes to nothing, however many times compressed, is an empty member.
 *
 * Hostile input is refused with a reason, never read as if it were text: magic
 * bytes followed by something else, bytes after the end of a gzip / xz / bzip2
 * stream, a single file's or a member's, or inside the zstd data around it (zero
 * padding excepted; after its data),
 * bytes after a tar's end-of-archive marker but zero padding (in a plain tar, and
 * in a tar.gz decoded by ISA-L and in a tar.xz; libarchive's own decoders stop at
 * the marker),
 * a zip member failing its CRC (after its data), a member whose first chunk is
 * binary (SNIFF_* in input.c: 5% or more control bytes other than whitespace,
 * backspace and ESC, NUL bytes not counted; text in any encoding has next to
 * none), a member of NUL bytes only (at its end), and decoding beyond the limit
 * below.
 *
 * The loop follows libarchive's: open, then next_member until it returns 0, and
 * read until it returns an empty chunk. Chunks are views valid until the next read
 * or next_member. A handle is reused across files so its contexts and buffers are
 * allocated once.
 */
#ifndef DSQ_INPUT_H
#define DSQ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "dsq/dsq.h"

typedef struct dsq_input dsq_input;

/* Decompression bomb guard: a file stops being decoded once its members together
 * have produced more than DSQ_INPUT_MAX_DECODED bytes AND more than
 * DSQ_INPUT_MAX_RATIO times the file's own size. The read that crosses the limit
 * fails with DSQ_ELIMIT (what was read before stays valid) and next_member then
 * says the file has ended. What a compressed archive would decode only to skip
 * (the unread rest of a member, entries that are no files) counts too: next_member
 * fails with DSQ_ELIMIT before decoding it. Plain files are never limited. */
#define DSQ_INPUT_MAX_DECODED (1ull << 30)
#define DSQ_INPUT_MAX_RATIO 1000

typedef struct dsq_member_info {
    const char *name;    /* "" for the file itself; view valid until next_member */
    int64_t mtime_ns;    /* member mtime in an archive, else the file's */
    int64_t size;        /* decoded size when the container says, else -1 */
} dsq_member_info;

typedef struct dsq_file_info {
    uint64_t size;
    int64_t mtime_ns;
    uint64_t fingerprint;
    int fp_known;        /* fingerprint computed (dsq_input_stat, not dsq_input_stat_quick) */
    uint64_t dev, ino;   /* which file this is, whatever its name (hard links share them) */
    uint64_t nlink;      /* its names (hard links) */
} dsq_file_info;

int dsq_input_new(dsq_input **out);
void dsq_input_free(dsq_input *in);

/* Stats a file and computes its fingerprint (size, first and last 4 KiB) without
 * decoding it: what decides whether an indexed file changed. Its device, inode and
 * link count are filled too. */
int dsq_input_stat(const char *path, dsq_file_info *fi, dsq_error *err);

/* The same without opening the file: one stat, no fingerprint (fp_known 0). What a
 * walk needs to decide that a file must be indexed (its size, mtime or name is
 * new); its fingerprint is then computed by whoever reads it. */
int dsq_input_stat_quick(const char *path, dsq_file_info *fi, dsq_error *err);
/* What dsq_input_stat_quick fills, from a stat already made (sb). */
void dsq_input_info_of(const struct stat *sb, dsq_file_info *fi);
/* The fingerprint of a file stat'ed that way, for the size in fi (no second stat:
 * a file that changed since gets another fingerprint than dsq_input_stat would
 * give it, so it is not taken for unchanged). */
int dsq_input_fingerprint(const char *path, dsq_file_info *fi, dsq_error *err);

/* The same from the bytes dsq_input_open read of the open file, with no system
 * call: 0, or -1 when they cannot tell (a big file is mapped, not read, or its
 * size is not fi's: it changed since the stat), and then dsq_input_fingerprint. */
int dsq_input_fingerprint_open(const dsq_input *in, dsq_file_info *fi);

/* Who decodes gzip (files, the gzip layer under a tar, .gz members): ISA-L, the
 * default when the build has it (gunzip.h), or libarchive's zlib-based reader. */
typedef enum dsq_input_gzip { DSQ_INPUT_GZIP_LIBARCHIVE, DSQ_INPUT_GZIP_ISAL } dsq_input_gzip;

/* Takes effect at the next open. DSQ_EUSAGE (nothing changed) when ISA-L is asked
 * for and this build has none. */
int dsq_input_set_gzip(dsq_input *in, dsq_input_gzip by);

/* Who decodes the members of a .zip file: ISA-L, the default when the build has it
 * (unzip.h: libarchive still reads the headers), or libarchive. Takes effect at
 * the next open; DSQ_EUSAGE (nothing changed) when ISA-L is asked for and this
 * build has none. */
int dsq_input_set_unzip(dsq_input *in, dsq_input_gzip by);
/* 1 when the current member's data is decoded by ISA-L (unzip.h), else 0. */
int dsq_input_unzipped(const dsq_input *in);

/* Opens path and detects its format. */
int dsq_input_open(dsq_input *in, const char *path, dsq_error *err);

/* 1 when the open had to wait for the disk for the file's bytes (some were not in
 * the page cache: a small file's read, a big one's first page), else 0. */
int dsq_input_was_cold(const dsq_input *in);

/* Starts reading a file that is not in memory, without waiting for it: when its
 * first page is not in the page cache, asks the kernel to read its first
 * DSQ_INPUT_PREFETCH_MAX bytes (or all of it) in the background
 * (POSIX_FADV_WILLNEED). 1 when it asked, 0 when the file is in memory (nothing
 * done), -1 when it does not open. */
int dsq_input_prefetch(const char *path, uint64_t size);
#define DSQ_INPUT_PREFETCH_MAX ((uint64_t)8 << 20)

/* Format name of the open file: "plain", "zstd", "gzip", "tar", "zip"... */
const char *dsq_input_format(const dsq_input *in);

/* 1 and *mi for the next member, 0 at the end, < 0 when the container is broken
 * beyond this point (err says where). */
int dsq_input_next_member(dsq_input *in, dsq_member_info *mi, dsq_error *err);

/* 1 and err filled when next_member skipped damaged entries (an archive header
 * that does not check out: libarchive resynchronizes on the next good one) since
 * the last call, else 0. Lets the caller count what was lost between members. */
int dsq_input_take_damage(dsq_input *in, dsq_error *err);

/* Next chunk of the current member: 0 with *len == 0 at its end; < 0 when the
 * member is damaged (what was read before stays valid). */
int dsq_input_read(dsq_input *in, const char **data, size_t *len, dsq_error *err);

/* dsq_input_read, but zstd (a .zst file, or the .zst member being read) is decoded
 * into dst[0..cap) rather than the input's own buffer when cap is at least
 * dsq_input_chunk_max: *data is dst then, and the chunk the same as dsq_input_read's.
 * Other formats hand out their own bytes, and so does a big .zst log decoded in the
 * input's ring (dsq_input_keeps_chunks). Saves a caller that keeps chunks (the
 * read-ahead ring) a copy of every decoded byte. */
int dsq_input_read_into(dsq_input *in, char *dst, size_t cap, const char **data, size_t *len,
                        dsq_error *err);

/* The most bytes one read hands out of a decoder's buffer. */
size_t dsq_input_chunk_max(const dsq_input *in);

/* 1 when the next read decodes zstd (what dsq_input_read_into can put in place). */
int dsq_input_decodes_zstd(const dsq_input *in);

/* 1 when the open file's chunks are decoded in place in the input's own ring (a big
 * .zst log, decoded block by block): a chunk stays as it was through the next
 * DSQ_INPUT_KEPT reads, so a caller may keep that many without a copy. */
#define DSQ_INPUT_KEPT 8
int dsq_input_keeps_chunks(const dsq_input *in);

/* Tests and fuzzing: .zst logs of at least this many bytes are decoded block by
 * block (default 256 kB; SIZE_MAX: none). For the whole process: set it before
 * any file is opened. */
void dsq_input_set_zdirect_min(size_t bytes);

/* Bytes consumed from the file so far (compressed side). */
uint64_t dsq_input_bytes_in(const dsq_input *in);

/* Closes the file; the handle can open another. */
void dsq_input_close(dsq_input *in);

/* The binary sniff of a member's first bytes: *bad control bytes that text does
 * not have (0x01-0x1F but tab, newlines, vertical tab, form feed, carriage return,
 * backspace and ESC; and DEL) among *seen bytes that are not NUL; 1 when that is
 * binary data (enough bytes seen and 5 % or more of them bad). */
int dsq_input_sniff(const unsigned char *p, size_t n, size_t *bad, size_t *seen);

/* Tests: the sniff's 32-byte (AVX2) loop off (0) or on where the CPU has it (1);
 * returns whether it is on. The 16-byte (SSE2) and byte loops are always built. */
int dsq_input_sniff_wide(int on);

#endif
