/* Input decoding (see input.h).
 *
 * Every file is read once: a small one into a buffer kept for the next file, a
 * big one mmap'd (MADV_SEQUENTIAL). Plain text is handed out straight from there;
 * zstd is decompressed with one reused DCtx into one reused output buffer;
 * everything libarchive understands is read from memory with
 * archive_read_open_memory, so no byte is read from disk twice. Errors carry
 * the member name and the offset reached.
 *
 * gzip, the slowest decoder met, goes to ISA-L (gunzip.h) when the build has it:
 * a whole .gz file is inflated straight into the output buffer (K_OWN); under a
 * tar (or anything else libarchive must parse) libarchive reads the inflated bytes
 * from a read callback (layer), so it only parses the container; a .gz member
 * is inflated from the member's blocks (N_OWN). What each reports matches the
 * libarchive path, which stays for builds without ISA-L and for the differential
 * test (dsq_input_set_gzip); ISA-L also checks each member's CRC-32 and length,
 * which libarchive's gzip reader does not, and, inflating a tar.gz to its end, what
 * follows the tar's end-of-archive marker, which libarchive never decodes.
 *
 * xz goes to liblzma directly (unxz.h) the same ways, always: a whole .xz file (K_OWN,
 * own_xz), the xz layer under a tar (layer, own_xz), an .xz member (N_OWN, member_xz).
 * libarchive's xz filter reads concatenated streams and fails on anything after the
 * last one, losing what it had decoded; unxz stops at the end of the streams and
 * input.c judges what follows, as after gzip. (libarchive's xz filter still decodes
 * xz met under another compression, e.g. `xz | gzip`.)
 *
 * zstd over another compression (`gzip | zstd`, a .gz.zst file or member): zstd's
 * first decoded bytes are looked at once (a file's when it is opened, a member's
 * at its first chunk); with another compression's magic bytes there, what zstd
 * decodes (into zsrc_buf) is what the next decoder pulls, as it pulls a compressed
 * member's bytes: gzip by ISA-L, xz by liblzma, anything else by a libarchive reader
 * (open_inner). Bytes after that inner stream are judged in what zstd decodes
 * (member_trailing). A .zst file with a tar or zip under the inner compression is
 * read by libarchive from the map, every layer (zstd_again_holds_container). A plain
 * .zst goes on being decoded straight into zout, or the caller's buffer.
 *
 * A big .zst log (zdirect) is decoded block by block (ZSTD_decompressContinue)
 * into a ring of the input's own, where the frame's window stays: a read hands out
 * the blocks it decoded there, with no copy out of a decoder's window (a fifth of
 * the decoding thread's time). The ring keeps the last DSQ_INPUT_KEPT reads'
 * chunks as they were (the read-ahead's buffers each hold one).
 */
#include "input.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* block by block decoding (ZSTD_decompressContinue) */
#include <zstd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SNIFF_AVX2 1 /* dsq_input_sniff's 32-byte loop, where the CPU runs it */
#endif

#include "dict.h"
#include "error.h"
#include "gunzip.h"
#include "lazymem.h"
#include "linescan.h"
#include "unxz.h"
#include "unzip.h"

/* The fingerprint reads this much at each end of a file: enough to tell a file
 * rewritten with the same size and mtime, small enough that checking thousands of
 * unchanged files costs little more than their stat. */
#define FP_SPAN (4 * 1024)

enum kind { K_NONE, K_PLAIN, K_ZSTD, K_OWN, K_ARCHIVE };
/* how the current archive member is encoded inside its container */
enum nested { N_NONE, N_ZSTD, N_OWN, N_ARCHIVE };

/* Decoded bytes the gzip (xz) layer under a tar hands libarchive per callback:
 * 64 KiB, as libarchive's own gzip (xz) filter does, so that the tar reader cuts
 * members into the same blocks (the indexer keeps a hash of each member's first
 * block: the index stays byte for byte what the libarchive path writes). */
#define GZ_LAYER_CAP ((size_t)64 << 10)
/* Decoded bytes looked at to tell a gzip'd tar (or other container) from a log. */
#define GZ_PEEK 1024

/* Bytes of a member's first chunk looked at to tell text from binary data, the
 * least number of non-NUL ones that decides, and the share (percent) of control
 * bytes among those that makes a member binary. */
#define SNIFF_SPAN (64 * 1024)
#define SNIFF_MIN 64
#define SNIFF_BINARY_PCT 5
/* Files up to this size are read into a buffer, not mapped: most files of a
 * per-rank archive are a few kB, and mapping each cost a map, page faults and an
 * unmap that interrupts the other threads' cores to flush their TLBs (on 9,400
 * files of ~10 kB, the workers spent 16 % of their time in the kernel). */
#define READ_MAX ((size_t)1 << 20)

struct dsq_input {
    enum kind kind;
    const char *format;
    const unsigned char *map; /* the file's bytes: rbuf, or a mapping (mapped) */
    size_t size;
    int mapped;
    int cold; /* the open's read waited for the disk (dsq_input_was_cold) */
    unsigned char *rbuf;     /* small files are read into this (READ_MAX bytes) */
    int64_t mtime_ns;
    int member_done;         /* plain/zstd: the one member was handed out */
    int data_done;           /* plain: the whole file was handed out */
    size_t plain_off;        /* plain: where the next slice starts */
    size_t map_let_go;       /* compressed, mapped: the map's bytes let go of so far */
    /* zstd (whole file, or nested inside an archive member) */
    ZSTD_DCtx *dctx;
    ZSTD_inBuffer zin;
    size_t zlast;            /* last ZSTD_decompressStream result: 0 = frame complete */
    unsigned char *zout;
    size_t zout_cap;
    unsigned char *to;       /* dsq_input_read_into: where zstd decodes this read, else NULL */
    /* zdirect: a big .zst log decoded block by block into zring (see the top) */
    int zdirect, zdirect_begun;
    unsigned char *zring;
    size_t zring_cap, zring_at, zblock_max, zring_need;
    /* a .zst file of a log: what open decoded to look at it (zstd_holds), read first,
       the decoder going on from there (zkept: its state is the file's, not reset) */
    unsigned char zpeek[1024];
    size_t zpeek_n;
    int zkept;
    int zinner;              /* K_ZSTD: what zstd decodes is compressed again (open saw it) */
    int zsrc;                /* the member's (K_ZSTD file's) further decoder reads what zstd
                                decodes, not the member's bytes: zstd is the outer layer */
    unsigned char *zsrc_buf; /* zsrc: zstd's output (zout_cap bytes), allocated at the first */
    uint64_t src_len;        /* zsrc: bytes zstd decoded so far */
    uint64_t src_nz_end;     /* zsrc: offset after the last of them that is not NUL */
    int nested;              /* N_*: current archive member is compressed itself */
    struct archive *inner;   /* N_ARCHIVE: gzip/xz/bzip2 decoder fed from the member */
    int inner_own;           /* N_ARCHIVE: ... fed what dsq's own gzip or xz decoder decodes
                                from it (gz_member, xz_member: member_xz) */
    int inner_empty;         /* N_ARCHIVE: ... which decoded to nothing (an empty member) */
    const void *inner_first; /* the member's first block, handed to inner first */
    size_t inner_first_len;
    /* gzip by ISA-L (gunzip.h); handles and buffers allocated at the first gzip */
    dsq_input_gzip gzip_by;  /* DSQ_INPUT_GZIP_*: who decodes gzip from the next open */
    dsq_gunzip *gz;          /* K_OWN, and the gzip layer under a tar */
    dsq_gunzip *gz_member;   /* N_OWN: a .gz member */
    /* xz by liblzma (unxz.h), as gzip by ISA-L: a whole file, the layer under a tar, a
     * member; handles allocated at the first xz */
    dsq_unxz *xz;            /* K_OWN, and the xz layer under a tar */
    dsq_unxz *xz_member;     /* N_OWN: an .xz member */
    int own_xz;              /* K_OWN, layer: the file's decoder is xz (else gzip) */
    int member_xz;           /* N_OWN, inner_own: the member's decoder is xz (else gzip) */
    unsigned char *gz_out;   /* layer: decoded bytes handed to libarchive, in two
                                halves taken in turn, so that the one before the last
                                is still there to look at when the tar has ended */
    size_t layer_len[2];     /* bytes in each half */
    int layer_half;          /* the half handed out last */
    uint64_t layer_out;      /* bytes decoded by the layer so far */
    int layer;               /* K_ARCHIVE: libarchive reads from layer_read */
    int gz_fed;              /* the map was handed to gz (xz) */
    size_t peeked;           /* K_OWN: bytes open_own decoded into zout, not handed out */
    char own_bad[256];        /* K_OWN: why the file is no gzip (said by next_member) */
    char pending[256];       /* an error to report at the next read (data came with it) */
    uint64_t decoded;        /* bytes decoded from this file so far, all members */
    uint64_t decode_limit;   /* decoded beyond this: a decompression bomb (see input.h) */
    int stopped;             /* the decode limit was hit: no more members */
    uint64_t member_bytes;   /* bytes handed out for the current member */
    uint64_t member_raw;     /* bytes of it read from the container (before nested decoding) */
    uint64_t member_nz_end;  /* offset after its last raw byte that is not NUL */
    int64_t member_size;     /* its size as the container declares it, else -1 */
    uint64_t skip_pending;   /* bytes the next header read skips (decodes) to get there */
    int all_nul;             /* every byte of the current member so far was NUL */
    int member_started;
    int member_eof;
    int archive_eof;         /* next_header said EOF: libarchive must not be asked again */
    /* a .zip file's members decoded by ISA-L (unzip.h), libarchive reading its headers */
    int unzip_by;            /* DSQ_INPUT_GZIP_*: who decodes zip members from the next open */
    dsq_unzip *uz;           /* allocated at the first zip */
    int uz_open;             /* the file's directory was read: members may be paired */
    int uz_member;           /* the current member's data is decoded by uz */
    /* libarchive */
    struct archive *ar;
    const char *name;
    char last_name[256];     /* the last member read, to say where damage was */
    char damage[256];        /* damaged entries skipped since the last take_damage */
    char path[4096];
};

static int is_zstd(const unsigned char *p, size_t n)
{
    return n >= 4 && p[0] == 0x28 && p[1] == 0xB5 && p[2] == 0x2F && p[3] == 0xFD;
}

static int is_tar(const unsigned char *p, size_t n)
{
    return n >= 262 && memcmp(p + 257, "ustar", 5) == 0;
}

static const char *archive_magic(const unsigned char *p, size_t n)
{
    if (n >= 2 && p[0] == 0x1F && p[1] == 0x8B)
        return "gzip";
    if (n >= 6 && memcmp(p, "\xFD" "7zXZ\0", 6) == 0)
        return "xz";
    /* bzip2's magic bytes are text ("BZh"): the block size digit and the first
     * block's magic number (or the end-of-stream one) must follow, as libarchive's
     * bidder wants, or a log that begins with "BZh" would be no log */
    if (n >= 10 && memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9' &&
        (memcmp(p + 4, "1AY&SY", 6) == 0 || memcmp(p + 4, "\x17\x72\x45\x38\x50\x90", 6) == 0))
        return "bzip2";
    if (n >= 4 && (memcmp(p, "PK\x03\x04", 4) == 0 || memcmp(p, "PK\x05\x06", 4) == 0))
        return "zip";
    if (is_tar(p, n))
        return "tar";
    return NULL;
}

int dsq_input_new(dsq_input **out)
{
    dsq_input *in = calloc(1, sizeof *in);
    if (!in)
        return DSQ_ENOMEM;
    in->gzip_by = dsq_gunzip_available() ? DSQ_INPUT_GZIP_ISAL : DSQ_INPUT_GZIP_LIBARCHIVE;
    in->unzip_by = dsq_unzip_available() ? DSQ_INPUT_GZIP_ISAL : DSQ_INPUT_GZIP_LIBARCHIVE;
    in->dctx = ZSTD_createDCtx();
    in->zout_cap = ZSTD_DStreamOutSize() * 8;
    /* once: reading a file allocates nothing; a small file touches a few pages */
    in->zout = dsq_lazy_alloc(in->zout_cap);
    in->rbuf = dsq_lazy_alloc(READ_MAX);
    if (!in->dctx || !in->zout || !in->rbuf) {
        dsq_input_free(in);
        return DSQ_ENOMEM;
    }
    *out = in;
    return 0;
}

void dsq_input_free(dsq_input *in)
{
    if (!in)
        return;
    dsq_input_close(in);
    ZSTD_freeDCtx(in->dctx);
    dsq_lazy_free(in->zout);
    free(in->zring);
    free(in->zsrc_buf);
    dsq_gunzip_free(in->gz);
    dsq_gunzip_free(in->gz_member);
    dsq_unxz_free(in->xz);
    dsq_unxz_free(in->xz_member);
    dsq_unzip_free(in->uz);
    free(in->gz_out);
    dsq_lazy_free(in->rbuf);
    free(in);
}

static void file_info_of(const struct stat *sb, dsq_file_info *fi)
{
    fi->size = (uint64_t)sb->st_size;
    fi->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
    fi->dev = (uint64_t)sb->st_dev;
    fi->ino = (uint64_t)sb->st_ino;
    fi->nlink = (uint64_t)sb->st_nlink;
}

/* The fingerprint of the open file fd of `size` bytes: 0 with *fp, or -1 (errno). */
static int fingerprint_fd(int fd, off_t size, uint64_t *fp)
{
    unsigned char buf[2 * FP_SPAN];
    uint64_t h = dsq_hash64(&size, sizeof size, 0);
    /* the first FP_SPAN bytes, then the last FP_SPAN when the file is longer; a
     * file of up to two spans is read once */
    size_t want = size <= 2 * FP_SPAN ? (size_t)size : FP_SPAN;
    ssize_t n = want ? pread(fd, buf, want, 0) : 0;
    if (n > 0)
        h = dsq_hash64(buf, (size_t)n < FP_SPAN ? (size_t)n : FP_SPAN, h);
    if (size > FP_SPAN && n >= 0) {
        const unsigned char *last = buf + (size_t)size - FP_SPAN;
        if (want == FP_SPAN) {
            n = pread(fd, buf, FP_SPAN, size - FP_SPAN);
            last = buf;
        }
        if (n > 0 && (want == FP_SPAN || (size_t)n == want))
            h = dsq_hash64(last, n < FP_SPAN ? (size_t)n : FP_SPAN, h);
    }
    *fp = h;
    return n < 0 ? -1 : 0;
}

/* The same from the whole file's `size` bytes at p (no read). */
static uint64_t fingerprint_mem(const unsigned char *p, off_t size)
{
    uint64_t h = dsq_hash64(&size, sizeof size, 0);
    if (size > 0)
        h = dsq_hash64(p, size < FP_SPAN ? (size_t)size : FP_SPAN, h);
    if (size > FP_SPAN)
        h = dsq_hash64(p + size - FP_SPAN, FP_SPAN, h);
    return h;
}

/* Opens path for reading and stats it: the descriptor, or -1 with *err set (DSQ_EIO). */
static int open_stat(const char *path, struct stat *sb, dsq_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, sb) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        dsq_error_set(err, DSQ_EIO, "%s", strerror(e));
        return -1;
    }
    return fd;
}

int dsq_input_stat(const char *path, dsq_file_info *fi, dsq_error *err)
{
    struct stat sb;
    int fd = open_stat(path, &sb, err);
    if (fd < 0)
        return DSQ_EIO;
    int r = fingerprint_fd(fd, sb.st_size, &fi->fingerprint);
    int e = errno;
    close(fd);
    if (r)
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(e));
    file_info_of(&sb, fi);
    fi->fp_known = 1;
    return 0;
}

int dsq_input_fingerprint(const char *path, dsq_file_info *fi, dsq_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(errno));
    int r = fingerprint_fd(fd, (off_t)fi->size, &fi->fingerprint);
    int e = errno;
    close(fd);
    if (r)
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(e));
    fi->fp_known = 1;
    return 0;
}

int dsq_input_fingerprint_open(const dsq_input *in, dsq_file_info *fi)
{
    if (in->mapped || (in->size && !in->map) || (uint64_t)in->size != fi->size)
        return -1;
    fi->fingerprint = fingerprint_mem((const unsigned char *)in->map, (off_t)in->size);
    fi->fp_known = 1;
    return 0;
}

void dsq_input_info_of(const struct stat *sb, dsq_file_info *fi)
{
    file_info_of(sb, fi);
    fi->fingerprint = 0;
    fi->fp_known = 0;
}

int dsq_input_stat_quick(const char *path, dsq_file_info *fi, dsq_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(errno));
    dsq_input_info_of(&sb, fi);
    return 0;
}

/* The compressions dsq reads, each decoded in-process by a library. Not
 * archive_read_support_filter_all: that also accepts lrzip, lzop and grzip by
 * running an external program, and dsq never runs programs. */
static void support_filters(struct archive *a)
{
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_bzip2(a);
    archive_read_support_filter_xz(a);
    archive_read_support_filter_lzma(a);
    archive_read_support_filter_lzip(a);
    archive_read_support_filter_zstd(a);
    archive_read_support_filter_lz4(a);
    archive_read_support_filter_compress(a);
}

/* The decoder dsq runs itself on a whole file or on the layer under a container
 * (K_OWN, layer): gzip by ISA-L, or xz by liblzma (own_xz). Both are pulled the same
 * way and say where their stream ended the same way. */
static int own_read(dsq_input *in, unsigned char *out, size_t cap, size_t *n, dsq_error *err)
{
    return in->own_xz ? dsq_unxz_read(in->xz, out, cap, n, err)
                      : dsq_gunzip_read(in->gz, out, cap, n, err);
}

static int own_end(const dsq_input *in, uint64_t *at)
{
    return in->own_xz ? dsq_unxz_end(in->xz, at) : dsq_gunzip_end(in->gz, at);
}

/* ... and on a compressed member (N_OWN, inner_own): member_xz says which. */
static int member_own_read(dsq_input *in, unsigned char *out, size_t cap, size_t *n,
                           dsq_error *err)
{
    return in->member_xz ? dsq_unxz_read(in->xz_member, out, cap, n, err)
                         : dsq_gunzip_read(in->gz_member, out, cap, n, err);
}

static int member_own_end(const dsq_input *in, uint64_t *at)
{
    return in->member_xz ? dsq_unxz_end(in->xz_member, at) : dsq_gunzip_end(in->gz_member, at);
}

/* libarchive read callback of the gzip or xz layer under a tar: dsq's own decoder
 * decodes the map. */
static la_ssize_t layer_read(struct archive *a, void *ctx, const void **buf)
{
    dsq_input *in = ctx;
    size_t n;
    dsq_error e;
    dsq_error_clear(&e);
    unsigned char *half = in->gz_out + (size_t)(in->layer_half ^ 1) * GZ_LAYER_CAP;
    if (own_read(in, half, GZ_LAYER_CAP, &n, &e) < 0) {
        archive_set_error(a, EIO, "%s", e.msg);
        return -1;
    }
    in->layer_half ^= 1;
    in->layer_len[in->layer_half] = n;
    in->layer_out += n;
    *buf = half;
    return (la_ssize_t)n;
}

/* The file through libarchive: from the map, or (layer) decoded by dsq's own gzip or
 * xz decoder. */
static int open_archive(dsq_input *in, dsq_error *err)
{
    in->ar = archive_read_new();
    if (!in->ar)
        return dsq_error_set(err, DSQ_ENOMEM, "libarchive");
    support_filters(in->ar);
    archive_read_support_format_tar(in->ar);
    archive_read_support_format_zip(in->ar);
    archive_read_support_format_raw(in->ar); /* a single compressed file */
    archive_read_support_format_empty(in->ar); /* ... that holds nothing */
    int r = in->layer ? archive_read_open(in->ar, in, NULL, layer_read, NULL)
                         : archive_read_open_memory(in->ar, in->map, in->size);
    if (r != ARCHIVE_OK)
        return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
    in->kind = K_ARCHIVE;
    return 0;
}

/* dsq_gunzip_pull (and dsq_unxz_pull) of a whole file: the map in one block. */
static int pull_map(void *ctx, const unsigned char **buf, size_t *len, dsq_error *err)
{
    dsq_input *in = ctx;
    (void)err;
    *buf = in->map;
    *len = in->gz_fed ? 0 : in->size;
    in->gz_fed = 1;
    return 0;
}

static void own_restart(dsq_input *in)
{
    in->gz_fed = 0;
    in->layer_len[0] = in->layer_len[1] = 0;
    in->layer_half = 0;
    in->layer_out = 0;
    if (in->own_xz)
        dsq_unxz_start(in->xz, pull_map, in);
    else
        dsq_gunzip_start(in->gz, pull_map, in);
}

/* A valid tar header checksum: the bytes of the 512-byte header, its checksum
 * field read as spaces, add up to the octal number in that field. What lets
 * libarchive take a tar without the ustar magic. */
static int tar_checksum_ok(const unsigned char *p, size_t n)
{
    if (n < 512)
        return 0;
    unsigned long sum = 0, want = 0;
    size_t i = 148;
    for (size_t j = 0; j < 512; j++)
        sum += j >= 148 && j < 156 ? ' ' : p[j];
    while (i < 156 && p[i] == ' ')
        i++;
    if (i == 156 || p[i] < '0' || p[i] > '7')
        return 0;
    for (; i < 156 && p[i] >= '0' && p[i] <= '7'; i++)
        want = want * 8 + (p[i] - '0');
    return sum == want;
}

/* The compression (one support_filters decodes) whose magic bytes p starts with,
 * else NULL. */
static const char *compression_magic(const unsigned char *p, size_t n)
{
    const char *m = archive_magic(p, n);
    if (m && strcmp(m, "zip") != 0 && strcmp(m, "tar") != 0)
        return m;
    if (is_zstd(p, n))
        return "zstd";
    if (n >= 5 && memcmp(p, "LZIP", 4) == 0 && p[4] <= 1) /* and its version */
        return "lzip";
    if (n >= 4 && memcmp(p, "\x04\x22\x4D\x18", 4) == 0)
        return "lz4";
    if (n >= 2 && p[0] == 0x1F && p[1] == 0x9D)
        return "compress";
    return NULL;
}

static int zstd_read(dsq_input *in, const char **data, size_t *len, dsq_error *err);

/* A .zst log this big (compressed) is decoded block by block (zdirect), when its
 * first frame's window is at most ZDIRECT_WINDOW_MAX; a read hands out about
 * ZDIRECT_CHUNK. Smaller ones are decoded as a stream, their first block once
 * (zstd_holds). */
#define ZDIRECT_MIN ((size_t)256 << 10)
#define ZDIRECT_WINDOW_MAX ((size_t)16 << 20)
#define ZDIRECT_CHUNK ((size_t)256 << 10)
static size_t zdirect_min = ZDIRECT_MIN; /* dsq_input_set_zdirect_min */

/* The ring a frame with this window needs: the window behind the block being
 * decoded, room for that block and the literals zstd may put after it, and the
 * chunks a caller may still hold (each at most ZDIRECT_CHUNK and a block). The
 * same whoever reads: a read-ahead's chunks are a direct reader's. */
static size_t zdirect_ring(size_t window, size_t block)
{
    return window + 3 * block + (DSQ_INPUT_KEPT + 1) * (ZDIRECT_CHUNK + block) + 4096;
}

/* Chooses block by block decoding for a .zst log open found (its first frame's
 * window and the ring for it); the decoder begins at the first read. */
static int zdirect_open(dsq_input *in, dsq_error *err)
{
    ZSTD_frameHeader fh;
    if (in->size < zdirect_min || ZSTD_getFrameHeader(&fh, in->map, in->size) != 0 ||
        fh.frameType != ZSTD_frame || fh.windowSize > ZDIRECT_WINDOW_MAX)
        return 0;
    size_t block = fh.blockSizeMax, need = zdirect_ring((size_t)fh.windowSize, block);
    if (need > in->zring_cap) {
        free(in->zring);
        in->zring_cap = 0;
        if (!(in->zring = malloc(need)))
            return dsq_error_set(err, DSQ_ENOMEM, "zstd ring (%zu bytes)", need);
        in->zring_cap = need;
    }
    in->zring_need = need;
    in->zblock_max = block;
    in->zdirect = 1;
    in->zkept = 0; /* decoded again from the start, block by block */
    in->zpeek_n = 0;
    return 0;
}

/* Begins the next frame of a zdirect file, at in->zin.pos: 0, 1 when its window
 * needs more than the ring (the rest of the file is then decoded as a stream,
 * into zout: the chunks handed out stay as they were), or an error. */
static int zdirect_frame(dsq_input *in, dsq_error *err)
{
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader(&fh, in->map + in->zin.pos, in->size - in->zin.pos);
    if (r == 0 && fh.frameType == ZSTD_frame &&
        (fh.blockSizeMax > in->zblock_max ||
         zdirect_ring((size_t)fh.windowSize, in->zblock_max) > in->zring_need)) {
        ZSTD_DCtx_reset(in->dctx, ZSTD_reset_session_only);
        in->zdirect = in->zdirect_begun = 0;
        in->zlast = 0;
        return 1;
    }
    r = ZSTD_decompressBegin(in->dctx);
    if (ZSTD_isError(r))
        return dsq_error_set(err, DSQ_EFORMAT, "zstd: %s", ZSTD_getErrorName(r));
    return 0;
}

/* A read of a zdirect file: blocks decoded into the ring after the last read's
 * (from its start when a block may not fit before its end) until ZDIRECT_CHUNK or
 * the end. An error after some bytes is told at the next read. */
static int zdirect_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    dsq_error e;
    dsq_error_clear(&e);
    int rc = 0;
    if (!in->zdirect_begun) {
        in->zin.pos = 0;
        in->zring_at = 0;
        in->zdirect_begun = 1;
        if ((rc = zdirect_frame(in, err)) != 0)
            return rc < 0 ? rc : zstd_read(in, data, len, err);
    }
    if (in->zring_need - in->zring_at < in->zblock_max)
        in->zring_at = 0;
    size_t start = in->zring_at, at = start;
    while (at - start < ZDIRECT_CHUNK) {
        size_t need = ZSTD_nextSrcSizeToDecompress(in->dctx);
        if (need == 0) { /* a frame ended */
            if (in->zin.pos == in->size || (rc = zdirect_frame(in, &e)) != 0)
                break;
            continue;
        }
        if (need > in->size - in->zin.pos) {
            rc = dsq_error_set(&e, DSQ_EFORMAT, "zstd: truncated input (stream ends mid-frame)");
            break;
        }
        if (in->zring_need - at < in->zblock_max)
            break; /* the next read starts over */
        size_t r = ZSTD_decompressContinue(in->dctx, in->zring + at, in->zblock_max,
                                           in->map + in->zin.pos, need);
        if (ZSTD_isError(r)) {
            rc = dsq_error_set(&e, DSQ_EFORMAT, "zstd: %s (compressed offset %zu)",
                               ZSTD_getErrorName(r), in->zin.pos);
            break;
        }
        in->zin.pos += need;
        at += r;
    }
    in->zring_at = at;
    if (rc > 0 && at == start) /* the next frame goes as a stream: from this read */
        return zstd_read(in, data, len, err);
    if (rc < 0 && at == start) {
        if (err)
            *err = e;
        return rc;
    }
    if (rc < 0)
        snprintf(in->pending, sizeof in->pending, "%s", e.msg);
    *data = (const char *)in->zring + start;
    *len = at - start;
    return 0;
}

/* What a .zst file's first decoded bytes hold: a tar (Z_TAR), another compression
 * (Z_AGAIN: a log compressed twice, or a tar or zip under that compression), or
 * the log itself (Z_LOG). */
enum zstd_holds { Z_LOG, Z_TAR, Z_AGAIN };

/* What a .zst file holds, from its first decoded bytes. A log's are kept, with the
 * decoder's state, for the first read (zpeek, zkept): zstd decodes a whole block to
 * hand out any of it, and a small file is one block, which was decoded twice. */
static enum zstd_holds zstd_holds(dsq_input *in)
{
    ZSTD_inBuffer zi = {in->map, in->size, 0};
    ZSTD_outBuffer zo = {in->zpeek, sizeof in->zpeek, 0};
    size_t r = 1;
    while (zo.pos < sizeof in->zpeek && zi.pos < zi.size) {
        r = ZSTD_decompressStream(in->dctx, &zo, &zi);
        if (ZSTD_isError(r) || r == 0)
            break;
    }
    enum zstd_holds h = is_tar(in->zpeek, zo.pos)             ? Z_TAR
                        : compression_magic(in->zpeek, zo.pos) ? Z_AGAIN
                                                               : Z_LOG;
    if (h == Z_LOG && !ZSTD_isError(r)) { /* (a damaged start: decoded again, and told) */
        in->zin = zi;
        in->zlast = r;
        in->zpeek_n = zo.pos;
        in->zkept = 1;
    } else {
        ZSTD_DCtx_reset(in->dctx, ZSTD_reset_session_only);
    }
    return h;
}

/* A .zst file holding another compression: 1 when libarchive finds a tar or zip
 * under it (read then as a tar.zst is, every layer by libarchive), 0 for anything
 * else (a log compressed twice, empty, or damaged: dsq decodes it layer by layer,
 * as a .gz.zst member). Decodes the first blocks once more, in files compressed
 * twice only. */
static int zstd_again_holds_container(const dsq_input *in)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    if (!a)
        return 0;
    support_filters(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_zip(a);
    archive_read_support_format_raw(a);
    archive_read_support_format_empty(a);
    int r = archive_read_open_memory(a, in->map, in->size);
    if (r == ARCHIVE_OK)
        r = archive_read_next_header(a, &e);
    int fmt = archive_format(a) & ARCHIVE_FORMAT_BASE_MASK;
    archive_read_free(a);
    return r >= ARCHIVE_WARN && r != ARCHIVE_EOF &&
           (fmt == ARCHIVE_FORMAT_TAR || fmt == ARCHIVE_FORMAT_ZIP);
}

/* Decoded gzip content libarchive has to parse rather than a log read as it is:
 * a tar (or its end-of-archive block of zeros), a zip, or a further compression. */
static int holds_container(const unsigned char *p, size_t n)
{
    size_t z = 0;
    while (z < n && z < 512 && p[z] == 0)
        z++;
    return z == 512 || is_tar(p, n) || tar_checksum_ok(p, n) || archive_magic(p, n) ||
           compression_magic(p, n);
}

/* The handles of dsq's own gzip (ISA-L) or xz decoder, and the layer's buffer. */
static int own_ready(dsq_input *in, int xz)
{
    if (xz && !in->xz && dsq_unxz_new(&in->xz) != 0)
        return DSQ_ENOMEM;
    if (xz && !in->xz_member && dsq_unxz_new(&in->xz_member) != 0)
        return DSQ_ENOMEM;
    if (!xz && !in->gz && dsq_gunzip_new(&in->gz) != 0)
        return DSQ_ENOMEM;
    if (!xz && !in->gz_member && dsq_gunzip_new(&in->gz_member) != 0)
        return DSQ_ENOMEM;
    if (!in->gz_out && !(in->gz_out = malloc(2 * GZ_LAYER_CAP)))
        return DSQ_ENOMEM;
    return 0;
}

/* A gzip file for ISA-L, or an xz file for liblzma (xz): its first decoded bytes say
 * whether libarchive must parse them (layer: decoded again from the start) or they
 * are the log itself (K_OWN: they are kept in zout for the first read, so that a
 * small file, often a single deflate block, is not decoded twice). A file that is no
 * gzip (xz) is reported by next_member, as libarchive's path does. */
static int open_own(dsq_input *in, int xz, dsq_error *err)
{
    size_t n = 0;
    dsq_error e;
    dsq_error_clear(&e);
    in->own_xz = xz;
    if (own_ready(in, xz) != 0)
        return dsq_error_set(err, DSQ_ENOMEM, "%s decoder", xz ? "xz" : "gzip");
    own_restart(in);
    int r = own_read(in, in->zout, GZ_PEEK, &n, &e);
    if (r < 0 && (xz ? dsq_unxz_streams(in->xz) : dsq_gunzip_members(in->gz)) == 0)
        snprintf(in->own_bad, sizeof in->own_bad, "%s", e.msg);
    if (!in->own_bad[0] && holds_container(in->zout, n)) {
        own_restart(in);
        in->layer = 1;
        return open_archive(in, err);
    }
    in->peeked = n;
    in->kind = K_OWN;
    return 0;
}

static int map_file(dsq_input *in, int fd, dsq_error *err)
{
    void *m = mmap(NULL, in->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return dsq_error_set(err, DSQ_EIO, "mmap: %s", strerror(errno));
    madvise(m, in->size, MADV_SEQUENTIAL);
    in->map = m;
    in->mapped = 1;
    return 0;
}

/* Whether a read of fd at 0 would wait for the disk: a read of what is in memory
 * only (RWF_NOWAIT) gave less than asked or EAGAIN. dst gets what it read (n bytes
 * asked, *got read; got may be NULL). A kernel without RWF_NOWAIT (EOPNOTSUPP) says
 * no. */
static int would_wait(int fd, unsigned char *dst, size_t n, size_t *got)
{
    struct iovec iov = {dst, n};
    ssize_t r;
    do
        r = preadv2(fd, &iov, 1, 0, RWF_NOWAIT);
    while (r < 0 && errno == EINTR);
    if (got)
        *got = r > 0 ? (size_t)r : 0;
    return r < 0 ? errno == EAGAIN : (size_t)r < n;
}

/* The whole of a small file (up to READ_MAX) into rbuf; a file cut short meanwhile
 * is what was read. What is in memory is read first without waiting (RWF_NOWAIT):
 * when the rest has to come from the disk, the file was cold. */
static int read_file(dsq_input *in, int fd, dsq_error *err)
{
    size_t got = 0;
    in->cold = would_wait(fd, in->rbuf, in->size, &got);
    while (got < in->size) {
        ssize_t n = pread(fd, in->rbuf + got, in->size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return dsq_error_set(err, DSQ_EIO, "%s", strerror(errno));
        if (n == 0)
            break;
        got += (size_t)n;
    }
    in->size = got;
    in->map = got ? in->rbuf : NULL;
    return 0;
}

int dsq_input_was_cold(const dsq_input *in) { return in->cold; }

int dsq_input_prefetch(const char *path, uint64_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) /* O_NOATIME: only for the file's owner */
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    unsigned char first;
    int cold = size > 0 && would_wait(fd, &first, 1, NULL);
    if (cold)
        posix_fadvise(fd, 0, (off_t)(size < DSQ_INPUT_PREFETCH_MAX ? size : DSQ_INPUT_PREFETCH_MAX),
                      POSIX_FADV_WILLNEED);
    close(fd);
    return cold;
}

int dsq_input_open(dsq_input *in, const char *path, dsq_error *err)
{
    struct stat sb;
    dsq_input_close(in);
    snprintf(in->path, sizeof in->path, "%s", path);
    int fd = open_stat(path, &sb, err);
    if (fd < 0)
        return DSQ_EIO;
    in->size = (size_t)sb.st_size;
    in->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    in->decode_limit = (uint64_t)in->size > DSQ_INPUT_MAX_DECODED / DSQ_INPUT_MAX_RATIO
                           ? (uint64_t)in->size * DSQ_INPUT_MAX_RATIO
                           : DSQ_INPUT_MAX_DECODED;
    unsigned char first; /* a big file's first page tells whether it is cold */
    in->cold = in->size > READ_MAX && would_wait(fd, &first, 1, NULL);
    int rc = in->size > READ_MAX ? map_file(in, fd, err) : in->size ? read_file(in, fd, err) : 0;
    close(fd);
    if (rc)
        return rc;
    const char *am = archive_magic(in->map, in->size);
    if (is_zstd(in->map, in->size)) {
        enum zstd_holds h = zstd_holds(in);
        in->format = h == Z_TAR ? "tar.zst" : "zstd";
        if (h == Z_TAR || (h == Z_AGAIN && zstd_again_holds_container(in)))
            return open_archive(in, err);
        in->zinner = h == Z_AGAIN;
        in->kind = K_ZSTD;
        if (!in->zkept) {
            in->zin = (ZSTD_inBuffer){in->map, in->size, 0};
            in->zlast = 0;
        }
        return in->zinner ? 0 : zdirect_open(in, err);
    }
    if (am) {
        in->format = am;
        if (strcmp(am, "gzip") == 0 && in->gzip_by == DSQ_INPUT_GZIP_ISAL)
            return open_own(in, 0, err);
        if (strcmp(am, "xz") == 0)
            return open_own(in, 1, err);
        rc = open_archive(in, err);
        if (!rc && strcmp(am, "zip") == 0 && in->unzip_by == DSQ_INPUT_GZIP_ISAL &&
            (in->uz || dsq_unzip_new(&in->uz) == 0)) {
            int got = dsq_unzip_open(in->uz, in->map, in->size);
            if (got < 0)
                return dsq_error_set(err, got, "reading the zip directory");
            in->uz_open = got;
        }
        return rc;
    }
    in->kind = K_PLAIN;
    in->format = "plain";
    return 0;
}

int dsq_input_set_gzip(dsq_input *in, dsq_input_gzip by)
{
    if (by == DSQ_INPUT_GZIP_ISAL && !dsq_gunzip_available())
        return DSQ_EUSAGE;
    in->gzip_by = by;
    return 0;
}

int dsq_input_set_unzip(dsq_input *in, dsq_input_gzip by)
{
    if (by == DSQ_INPUT_GZIP_ISAL && !dsq_unzip_available())
        return DSQ_EUSAGE;
    in->unzip_by = by;
    return 0;
}

int dsq_input_unzipped(const dsq_input *in) { return in->uz_member; }

const char *dsq_input_format(const dsq_input *in) { return in->format ? in->format : "?"; }

uint64_t dsq_input_bytes_in(const dsq_input *in)
{
    if (in->kind == K_ZSTD)
        return in->zin.pos;
    if (in->kind == K_OWN || in->layer)
        return in->own_xz ? dsq_unxz_bytes_in(in->xz) : dsq_gunzip_bytes_in(in->gz);
    if (in->kind == K_ARCHIVE && in->ar) {
        uint64_t la = (uint64_t)archive_filter_bytes(in->ar, -1);
        uint64_t own = in->uz_open ? dsq_unzip_bytes_in(in->uz) : 0;
        return la > own ? la : own;
    }
    return in->size;
}

/* Ends the current member's own decoding (a nested compressed stream). */
static void end_nested(dsq_input *in)
{
    if (in->inner)
        archive_read_free(in->inner);
    in->inner = NULL;
    in->inner_own = in->member_xz = in->inner_empty = 0;
    in->inner_first_len = 0;
    in->nested = N_NONE;
    in->zsrc = 0;
    in->src_len = in->src_nz_end = 0;
}

static void start_member(dsq_input *in)
{
    end_nested(in);
    in->member_started = in->member_eof = 0;
    in->member_bytes = in->member_raw = in->member_nz_end = 0;
    in->member_size = -1;
    in->all_nul = 1;
    in->pending[0] = 0;
    if (in->zkept) { /* a .zst log's one member: the decoder goes on from open's look */
        in->zkept = 0;
        return;
    }
    if (in->dctx)
        ZSTD_DCtx_reset(in->dctx, ZSTD_reset_session_only);
    in->zlast = 0;
    in->zpeek_n = 0;
}

void dsq_input_close(dsq_input *in)
{
    in->zkept = 0;
    in->zdirect = in->zdirect_begun = 0; /* (start_member resets the decoder's state) */
    start_member(in);
    if (in->ar)
        archive_read_free(in->ar);
    in->ar = NULL;
    if (in->map && in->mapped)
        munmap((void *)in->map, in->size);
    in->map = NULL;
    in->mapped = 0;
    in->size = 0;
    in->kind = K_NONE;
    in->format = NULL;
    in->member_done = in->data_done = 0;
    in->plain_off = in->map_let_go = 0;
    in->archive_eof = in->stopped = 0;
    in->uz_open = in->uz_member = 0;
    in->layer = in->gz_fed = in->own_xz = 0;
    in->zinner = 0;
    in->peeked = 0;
    in->own_bad[0] = 0;
    in->decoded = in->skip_pending = 0;
    in->last_name[0] = in->damage[0] = 0;
}

/* Copies a name for a message with control bytes (ANSI escapes...) made harmless. */
static void safe_copy(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (char)(c < 0x20 || c == 0x7F ? '?' : c);
    }
    dst[i] = 0;
}

/* The container the magic bytes promised must be the one libarchive reads: a file
 * that starts like gzip but holds garbage is otherwise read raw, as if it were text. */
static int check_container(dsq_input *in, dsq_error *err)
{
    const char *f = in->format;
    int fmt = archive_format(in->ar) & ARCHIVE_FORMAT_BASE_MASK;
    int filtered = archive_filter_count(in->ar) > 1 &&
                   archive_filter_code(in->ar, 0) != ARCHIVE_FILTER_NONE;
    int ok = 1;
    if (strcmp(f, "zip") == 0)
        ok = fmt == ARCHIVE_FORMAT_ZIP;
    else if (strcmp(f, "tar") == 0)
        ok = fmt == ARCHIVE_FORMAT_TAR;
    else
        ok = filtered || in->layer; /* layer: dsq's own decoder read the header */
    if (ok)
        return 0;
    return dsq_error_set(err, DSQ_EFORMAT, "starts with %s magic bytes but is no valid %s data",
                         f, f);
}

static int limit_error(dsq_input *in, dsq_error *err)
{
    in->stopped = 1;
    return dsq_error_set(err, DSQ_ELIMIT,
                         "decompression bomb: %llu bytes decoded from a %zu-byte file, over the "
                         "limit (%d GiB and %dx the file size): rest of the file skipped",
                         (unsigned long long)in->decoded, in->size,
                         (int)(DSQ_INPUT_MAX_DECODED >> 30), DSQ_INPUT_MAX_RATIO);
}

/* In a compressed container, getting past what the caller did not read (the rest
 * of a member refused as binary, a member that is no regular file, a damaged
 * region) means decoding it: that counts against the limit too, and is checked
 * before libarchive does it. */
static int check_skip(dsq_input *in, dsq_error *err)
{
    if (archive_filter_count(in->ar) < 2 && !in->layer) {
        in->skip_pending = 0; /* not compressed: skipping is free */
        return 0;
    }
    la_int64_t pos = archive_filter_bytes(in->ar, 0);
    if (in->decoded + in->skip_pending > in->decode_limit ||
        (pos > 0 && (uint64_t)pos > in->decode_limit)) {
        in->stopped = in->archive_eof = 1;
        return dsq_error_set(err, DSQ_ELIMIT,
                             "decompression bomb: skipping past member %.120s would decode "
                             "%llu more bytes from a %zu-byte file, over the limit (%d GiB and "
                             "%dx the file size): rest of the file skipped",
                             in->last_name, (unsigned long long)in->skip_pending, in->size,
                             (int)(DSQ_INPUT_MAX_DECODED >> 30), DSQ_INPUT_MAX_RATIO);
    }
    in->decoded += in->skip_pending;
    in->skip_pending = 0;
    return 0;
}

static int trailing_error(dsq_input *in, uint64_t used, const char *what, dsq_error *err);

/* Offset of the first byte of p[0..n) that is not NUL, n when none is (comparing
 * the bytes with themselves one further on is memcmp's vectorized loop). */
static size_t first_non_nul(const unsigned char *p, size_t n)
{
    size_t i = 0;
    if (n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0))
        return n;
    while (p[i] == 0)
        i++;
    return i;
}

/* The tar libarchive read (from the map, or from the gzip or xz layer) ended at its
 * end-of-archive marker, byte `end` of the tar, which goes on to byte `total`;
 * the first byte after the marker that is not NUL is at `at` (total: none). Zero
 * padding (the rest of the tar's last record) is all a tar has there; anything
 * else, garbage or a second tar appended, libarchive does not read: said here. */
static int tar_trailing(uint64_t end, uint64_t at, uint64_t total, dsq_error *err)
{
    if (at >= total || at < end)
        return 0;
    return dsq_error_set(err, DSQ_EFORMAT,
                         "%llu bytes of trailing garbage after the tar's end-of-archive marker "
                         "(at byte %llu of the tar): not read (garbage, or another tar "
                         "appended)",
                         (unsigned long long)(total - at), (unsigned long long)at);
}

/* Where the tar under the gzip (xz) layer ended (when libarchive reads it with no
 * filter of its own), else -1. */
static int64_t layer_tar_end(const dsq_input *in)
{
    if ((archive_format(in->ar) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR ||
        archive_filter_count(in->ar) != 1)
        return -1;
    return archive_filter_bytes(in->ar, 0);
}

/* The first byte not NUL from `end` on, among what the layer's two halves hold
 * (the marker lies in the last one or, a block away, the one before); the layer's
 * total when there is none. */
static uint64_t layer_tail(const dsq_input *in, uint64_t end)
{
    uint64_t base = in->layer_out - in->layer_len[0] - in->layer_len[1];
    for (int k = 0; k < 2; k++) {
        int h = in->layer_half ^ (k == 0); /* the older half first */
        size_t len = in->layer_len[h], from = 0;
        if (end > base)
            from = end - base < len ? (size_t)(end - base) : len;
        size_t i = from + first_non_nul(in->gz_out + (size_t)h * GZ_LAYER_CAP + from, len - from);
        if (i < len)
            return base + i;
        base += len;
    }
    return in->layer_out;
}

/* The tar under a gzip (xz) layer ended: decodes what is left of the stream, so
 * that a cut or corrupt end (a bad CRC) is reported as libarchive's reader,
 * decoding ahead, would, and then bytes after the stream as after a single file's,
 * and bytes after the tar's end-of-archive marker that are not zero padding.
 * What this decodes counts against the limit. */
static int drain_layer(dsq_input *in, dsq_error *err)
{
    int64_t tar_end = layer_tar_end(in);
    uint64_t at = tar_end >= 0 ? layer_tail(in, (uint64_t)tar_end) : UINT64_MAX;
    size_t n;
    do {
        if (own_read(in, in->gz_out, GZ_LAYER_CAP, &n, err) < 0)
            return DSQ_EFORMAT;
        if (at == in->layer_out)
            at += first_non_nul(in->gz_out, n);
        in->layer_out += n;
        in->skip_pending += n;
        if (check_skip(in, err) != 0)
            return DSQ_ELIMIT;
    } while (n > 0);
    uint64_t end;
    int rc = own_end(in, &end) ? trailing_error(in, end, in->format, err) : 0;
    return rc ? rc : tar_end < 0 ? 0 : tar_trailing((uint64_t)tar_end, at, in->layer_out, err);
}

/* A tar read from the map ended: bytes after its end-of-archive marker that are
 * not zero padding are reported (libarchive stops at the marker). */
static int map_tar_end(dsq_input *in, dsq_error *err)
{
    if ((archive_format(in->ar) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR ||
        archive_filter_count(in->ar) != 1)
        return 0;
    la_int64_t end = archive_filter_bytes(in->ar, 0);
    if (end < 0 || (uint64_t)end >= in->size)
        return 0;
    size_t at = (size_t)end + first_non_nul(in->map + end, in->size - (size_t)end);
    return tar_trailing((uint64_t)end, at, in->size, err);
}

static int archive_next(dsq_input *in, dsq_member_info *mi, dsq_error *err)
{
    struct archive_entry *e;
    if (in->archive_eof || in->stopped)
        return 0;
    if (in->member_size > 0 && !in->member_eof && (uint64_t)in->member_size > in->member_raw)
        in->skip_pending += (uint64_t)in->member_size - in->member_raw; /* its unread rest */
    in->member_size = -1;
    for (;;) {
        if (check_skip(in, err) != 0)
            return DSQ_ELIMIT;
        int first = archive_file_count(in->ar) == 0;
        int r = archive_read_next_header(in->ar, &e);
        int drained = r != ARCHIVE_EOF ? 0
                      : in->layer   ? drain_layer(in, err)
                                       : map_tar_end(in, err);
        if (drained != 0) {
            in->archive_eof = 1;
            return drained;
        }
        if (r == ARCHIVE_EOF) {
            in->archive_eof = 1;
            if (first && archive_format(in->ar) == ARCHIVE_FORMAT_EMPTY &&
                archive_filter_count(in->ar) > 1) { /* an empty .gz: one empty member */
                start_member(in);
                in->member_eof = in->member_started = 1;
                *mi = (dsq_member_info){"", in->mtime_ns, 0};
                return 1;
            }
            return 0;
        }
        if (r == ARCHIVE_FATAL) {
            in->archive_eof = 1;
            return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
        }
        if (r == ARCHIVE_RETRY) { /* a damaged header: libarchive skips ahead; say so once */
            if (in->uz_open)
                dsq_unzip_decline(in->uz);
            if (!in->damage[0]) {
                const char *why = archive_error_string(in->ar);
                snprintf(in->damage, sizeof in->damage,
                         "%.80s%s%.120s: skipped to the next readable member",
                         why ? why : "damaged archive entry",
                         in->last_name[0] ? " after member " : "", in->last_name);
            }
            continue;
        }
        if (first && check_container(in, err) != 0) {
            in->archive_eof = 1;
            return DSQ_EFORMAT;
        }
        /* ARCHIVE_OK or ARCHIVE_WARN: the header is usable */
        if (in->uz_open) { /* every header, to keep the pairing */
            const char *n = archive_entry_pathname(e);
            in->uz_member = dsq_unzip_next(in->uz, n ? n : "",
                                           archive_entry_size_is_set(e) ? archive_entry_size(e) : -1);
        }
        if (archive_format(in->ar) != ARCHIVE_FORMAT_RAW && archive_entry_filetype(e) != AE_IFREG) {
            if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
                in->skip_pending += (uint64_t)archive_entry_size(e);
            continue;
        }
        const char *name = archive_entry_pathname(e);
        in->name = archive_format(in->ar) == ARCHIVE_FORMAT_RAW ? "" : (name ? name : "?");
        mi->name = in->name;
        safe_copy(in->last_name, sizeof in->last_name, in->name);
        mi->mtime_ns = archive_entry_mtime_is_set(e)
                           ? (int64_t)archive_entry_mtime(e) * 1000000000 +
                                 archive_entry_mtime_nsec(e)
                           : in->mtime_ns;
        mi->size = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
        start_member(in);
        in->member_size = mi->size;
        return 1;
    }
}

int dsq_input_take_damage(dsq_input *in, dsq_error *err)
{
    if (!in->damage[0])
        return 0;
    dsq_error_set(err, DSQ_EFORMAT, "%s", in->damage);
    in->damage[0] = 0;
    return 1;
}

int dsq_input_next_member(dsq_input *in, dsq_member_info *mi, dsq_error *err)
{
    if (in->kind == K_ARCHIVE)
        return archive_next(in, mi, err);
    if (in->member_done)
        return 0;
    in->member_done = 1;
    if (in->own_bad[0])
        return dsq_error_set(err, DSQ_EFORMAT, "%s", in->own_bad);
    start_member(in);
    mi->name = "";
    mi->mtime_ns = in->mtime_ns;
    mi->size = in->kind == K_PLAIN ? (int64_t)in->size : -1;
    return 1;
}

/* One past the last byte of p[0..n) that is not NUL, 0 when none is: compressed
 * data ends in one, so the look stops at once. */
static size_t non_nul_end(const unsigned char *p, size_t n)
{
    if (n == 0 || p[n - 1] != 0)
        return n;
    if (first_non_nul(p, n) == n)
        return 0;
    while (p[n - 1] == 0)
        n--;
    return n;
}

/* Next data block of the current archive member, skipping empty ones: 1 and the
 * block, 0 at the member's end, < 0 on damage. A block that came with a warning
 * (a zip member whose CRC does not match) is returned and the warning kept for the
 * next read. Where a compressed member's last non-NUL byte is, is noted
 * (member_nz_end), so that bytes after its stream can be judged once its decoder
 * has taken the blocks they were in. */
static int member_block(dsq_input *in, const void **buf, size_t *sz, dsq_error *err)
{
    for (;;) {
        la_int64_t off;
        if (in->member_eof)
            return 0;
        if (in->uz_member) { /* decoded by ISA-L (unzip.h) */
            int u = dsq_unzip_block(in->uz, buf, sz, err);
            if (u <= 0) {
                in->member_eof = 1;
                return u;
            }
        }
        int r = in->uz_member ? ARCHIVE_OK : archive_read_data_block(in->ar, buf, sz, &off);
        if (r == ARCHIVE_EOF) {
            in->member_eof = 1;
            return 0;
        }
        if (r < ARCHIVE_WARN) {
            in->member_eof = 1;
            return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
        }
        if (r == ARCHIVE_WARN) {
            const char *why = archive_error_string(in->ar);
            in->member_eof = 1;
            if (*sz == 0)
                return dsq_error_set(err, DSQ_EFORMAT, "%s", why ? why : "damaged member");
            snprintf(in->pending, sizeof in->pending, "%s", why ? why : "damaged member");
        }
        if (*sz > 0) {
            size_t end = in->nested != N_NONE || !in->member_started ? non_nul_end(*buf, *sz) : 0;
            if (end > 0)
                in->member_nz_end = in->member_raw + end;
            in->member_raw += *sz;
            return 1;
        }
    }
}

static int src_block(dsq_input *in, const void **buf, size_t *sz, dsq_error *err);

/* A member's nested gzip/xz/bzip2 stream ended at byte `at` of the member (zsrc: of
 * what zstd decodes from the member or .zst file): the rest is read (decoding an
 * outer layer, which counts against the limit as a skip does) and bytes after the
 * stream, zero padding excepted, are reported as after a single file's; then a
 * warning its last block came with (a zip CRC). */
static int member_trailing(dsq_input *in, uint64_t at, const char *what, dsq_error *err)
{
    const void *buf;
    size_t sz;
    int r;
    while ((r = src_block(in, &buf, &sz, err)) == 1) {
        if (in->zsrc) { /* decoded by zstd just to be looked at */
            if ((in->decoded += sz) > in->decode_limit)
                return limit_error(in, err);
            continue;
        }
        in->skip_pending += sz;
        if (check_skip(in, err) != 0)
            return DSQ_ELIMIT;
    }
    uint64_t nz_end = in->zsrc ? in->src_nz_end : in->member_nz_end;
    uint64_t total = in->zsrc ? in->src_len : in->member_raw;
    if (r == 0 && nz_end <= at && in->pending[0]) {
        r = dsq_error_set(err, DSQ_EFORMAT, "%s", in->pending);
        in->pending[0] = 0;
    }
    if (r < 0 || nz_end <= at)
        return r;
    return dsq_error_set(err, DSQ_EFORMAT,
                         "%llu bytes of trailing garbage after the %s data (at byte %llu%s)",
                         (unsigned long long)(total - at), what, (unsigned long long)at,
                         in->zsrc ? " of the decoded zstd data" : "");
}

/* Decompresses from in->zin into out[start..zout_cap) (out[0..start) holds bytes
 * decoded before); refills zin from the archive member when the zstd stream is
 * nested. One call yields at least one byte or the end. With the input all read,
 * the decoder is asked once more while its frame is not done: it may hold decoded
 * bytes it had no room for (open's look at a .zst file took 1 kB of a block). */
static int zstd_decode(dsq_input *in, unsigned char *out, size_t start, const char **data,
                       size_t *len, dsq_error *err)
{
    ZSTD_outBuffer zo = {out, in->zout_cap, start};
    while (zo.pos == start) {
        int drained = in->zin.pos == in->zin.size;
        if (drained && in->kind == K_ARCHIVE) {
            const void *buf;
            size_t sz;
            int r = member_block(in, &buf, &sz, err);
            if (r < 0)
                return r;
            if (r > 0) {
                in->zin = (ZSTD_inBuffer){buf, sz, 0};
                continue;
            }
        }
        if (drained && in->zlast == 0)
            break;
        size_t r = ZSTD_decompressStream(in->dctx, &zo, &in->zin);
        if (ZSTD_isError(r) && zo.pos) { /* bytes before the damage (open's look): */
            snprintf(in->pending, sizeof in->pending, "zstd: %s (compressed offset %zu)",
                     ZSTD_getErrorName(r), in->zin.pos); /* handed out, the error next */
            break;
        }
        if (ZSTD_isError(r))
            return dsq_error_set(err, DSQ_EFORMAT, "zstd: %s (compressed offset %zu)",
                                 ZSTD_getErrorName(r), in->zin.pos);
        in->zlast = r;
        if (drained && zo.pos == start)
            break; /* nothing held: the input ends mid-frame */
    }
    if (zo.pos == 0 && in->zlast != 0) /* (after bytes from before: at the next read) */
        return dsq_error_set(err, DSQ_EFORMAT, "zstd: truncated input (stream ends mid-frame)");
    *data = (const char *)zo.dst;
    *len = zo.pos;
    return 0;
}

/* zstd decoded into zout, or where dsq_input_read_into said. */
static int zstd_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    if (in->zdirect)
        return zdirect_read(in, data, len, err);
    unsigned char *out = in->to ? in->to : in->zout;
    size_t start = in->zpeek_n; /* open decoded these to look at them: first */
    if (start) {
        memcpy(out, in->zpeek, start);
        in->zpeek_n = 0;
    }
    return zstd_decode(in, out, start, data, len, err);
}

/* Next block of what the current member's further decoder reads: 1 and the block,
 * 0 at its end, < 0 on damage. The member's own bytes (member_block), or (zsrc)
 * what zstd decodes from them (from the map, in a .zst file), whose length and last
 * byte not NUL are noted as member_block notes the member's. */
static int src_block(dsq_input *in, const void **buf, size_t *sz, dsq_error *err)
{
    if (!in->zsrc)
        return member_block(in, buf, sz, err);
    const char *d;
    int r = zstd_decode(in, in->zsrc_buf, 0, &d, sz, err);
    if (r < 0)
        return r;
    *buf = d;
    size_t end = non_nul_end((const unsigned char *)d, *sz);
    if (end > 0)
        in->src_nz_end = in->src_len + end;
    in->src_len += *sz;
    return *sz > 0;
}

/* libarchive read callback of a nested decoder: the member's blocks, the first one
 * (already read to look at its magic) first; or (inner_own) what dsq's own gzip or
 * xz decoder decodes from them, the first chunk (looked at too) first. */
static la_ssize_t inner_feed(struct archive *a, void *ctx, const void **buf)
{
    dsq_input *in = ctx;
    if (in->inner_first_len) {
        size_t n = in->inner_first_len;
        *buf = in->inner_first;
        in->inner_first_len = 0;
        return (la_ssize_t)n;
    }
    size_t sz;
    dsq_error e;
    dsq_error_clear(&e);
    int r;
    if (in->inner_own) {
        r = member_own_read(in, in->zout, in->zout_cap, &sz, &e);
        *buf = in->zout;
        r = r < 0 ? r : sz > 0;
    } else {
        r = src_block(in, buf, &sz, &e);
    }
    if (r < 0) {
        archive_set_error(a, EIO, "%s", e.msg);
        return -1;
    }
    return r == 0 ? 0 : (la_ssize_t)sz;
}

/* A gzip or bzip2 member inside an archive (or, inner_own, what a .gz or .xz member
 * decodes to, which is compressed again): a second libarchive reader decodes it,
 * through every further layer. What decodes to nothing is an empty member
 * (inner_empty), as an empty single file is one. */
static int open_inner(dsq_input *in, const void *buf, size_t sz, const char *what,
                      dsq_error *err)
{
    struct archive_entry *e;
    in->inner = archive_read_new();
    if (!in->inner)
        return dsq_error_set(err, DSQ_ENOMEM, "libarchive");
    support_filters(in->inner);
    archive_read_support_format_raw(in->inner);
    archive_read_support_format_empty(in->inner);
    in->inner_first = buf;
    in->inner_first_len = sz;
    in->nested = N_ARCHIVE;
    int r = archive_read_open(in->inner, in, NULL, inner_feed, NULL);
    if (r == ARCHIVE_OK)
        r = archive_read_next_header(in->inner, &e);
    if (r < ARCHIVE_WARN)
        return dsq_error_set(err, DSQ_EFORMAT, "%s member: %s", what,
                             archive_error_string(in->inner));
    in->inner_empty = r == ARCHIVE_EOF;
    if (archive_filter_count(in->inner) < 2 ||
        archive_filter_code(in->inner, 0) == ARCHIVE_FILTER_NONE)
        return dsq_error_set(err, DSQ_EFORMAT,
                             "starts with %s magic bytes but is no valid %s data", what, what);
    return 0;
}

/* The decoder fed by dsq's own ended: the rest of the .gz (.xz) member is decoded
 * (counted against the limit; what follows the inner stream inside the gzip data is
 * not judged, as in a single .gz file) and bytes after its gzip (xz) stream reported. */
static int inner_own_end(dsq_input *in, dsq_error *err)
{
    size_t n;
    uint64_t end;
    do {
        int r = member_own_read(in, in->zout, in->zout_cap, &n, err);
        if (r < 0)
            return r;
        if ((in->decoded += n) > in->decode_limit)
            return limit_error(in, err);
    } while (n > 0);
    return member_own_end(in, &end) ? member_trailing(in, end, in->member_xz ? "xz" : "gzip", err)
                                    : 0;
}

static int inner_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    const void *buf;
    size_t sz = 0;
    la_int64_t off;
    int r = ARCHIVE_EOF;
    while (!in->inner_empty &&
           ((r = archive_read_data_block(in->inner, &buf, &sz, &off)) >= ARCHIVE_WARN &&
            r != ARCHIVE_EOF && sz == 0))
        ;
    if (r == ARCHIVE_EOF) { /* what follows the outermost compression is judged */
        *len = 0;
        if (in->inner_own)
            return inner_own_end(in, err);
        la_int64_t used = archive_filter_bytes(in->inner, -1);
        int outer = archive_filter_count(in->inner) - 2;
        return used < 0 || outer < 0 ? 0
                                     : member_trailing(in, (uint64_t)used,
                                                       archive_filter_name(in->inner, outer), err);
    }
    if (r < ARCHIVE_WARN) {
        const char *why = archive_error_string(in->inner);
        return dsq_error_set(err, DSQ_EFORMAT, "%s", why ? why : "damaged compressed member");
    }
    *data = buf;
    *len = sz;
    return 0;
}

/* Bytes of the file after its compressed stream, which ended at byte used. */
static int trailing_error(dsq_input *in, uint64_t used, const char *what, dsq_error *err)
{
    if (used >= in->size)
        return 0;
    size_t at = (size_t)used, extra = in->size - at;
    size_t nz = 0;
    while (at + nz < in->size && in->map[at + nz] == 0)
        nz++;
    if (nz == extra) /* zero padding (tape blocks): harmless, like gzip says */
        return 0;
    return dsq_error_set(err, DSQ_EFORMAT,
                         "%zu bytes of trailing garbage after the %s data (at byte %zu)", extra,
                         what, at);
}

/* End of a single gzip/xz/bzip2 file: bytes after the compressed stream are reported. */
static int check_trailing(dsq_input *in, dsq_error *err)
{
    uint64_t end;
    if (archive_format(in->ar) != ARCHIVE_FORMAT_RAW)
        return 0;
    if (in->layer) /* a gzip'd (xz'd) compressed file: what follows the gzip (xz) stream */
        return own_end(in, &end) ? trailing_error(in, end, in->format, err) : 0;
    if (archive_filter_count(in->ar) < 2)
        return 0;
    la_int64_t used = archive_filter_bytes(in->ar, -1);
    if (used < 0)
        return 0;
    return trailing_error(in, (uint64_t)used, archive_filter_name(in->ar, 0), err);
}

/* A whole .gz file by ISA-L (.xz by liblzma); at its end, bytes after the stream are
 * reported. The first read tops up what open_own decoded (the binary sniff sees a
 * full chunk). */
static int own_file_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    uint64_t end;
    size_t have = in->peeked;
    in->peeked = 0;
    int r = own_read(in, in->zout + have, in->zout_cap - have, len, err);
    if (r < 0 && have == 0)
        return r; /* (with bytes before it, the error comes again at the next read) */
    *len = r < 0 ? have : *len + have;
    *data = (const char *)in->zout;
    if (*len == 0 && own_end(in, &end))
        return trailing_error(in, end, in->format, err);
    return 0;
}

/* dsq_gunzip_pull (dsq_unxz_pull) of a .gz (.xz) member: its first block (read to
 * see the magic) first. */
static int pull_member(void *ctx, const unsigned char **buf, size_t *len, dsq_error *err)
{
    dsq_input *in = ctx;
    if (in->inner_first_len) {
        *buf = in->inner_first;
        *len = in->inner_first_len;
        in->inner_first_len = 0;
        return 0;
    }
    const void *b = NULL;
    int r = src_block(in, &b, len, err);
    *buf = b;
    if (r == 0)
        *len = 0;
    return r < 0 ? r : 0;
}

/* A .gz member by ISA-L (.xz by liblzma); at its end, bytes after the stream are
 * reported. */
static int own_member_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    uint64_t end;
    int r = member_own_read(in, in->zout, in->zout_cap, len, err);
    *data = (const char *)in->zout;
    if (r == 0 && *len == 0 && member_own_end(in, &end))
        return member_trailing(in, end, in->member_xz ? "xz" : "gzip", err);
    return r;
}

/* A .gz (.xz) member for ISA-L (liblzma), whose first block buf[0..sz) was read: the
 * first chunk it decodes; when that is compressed again, libarchive decodes what
 * dsq's decoder hands it (inner_own). */
static int own_member_start(dsq_input *in, const void *buf, size_t sz, int xz, const char **data,
                            size_t *len, dsq_error *err)
{
    int r;
    const char *m;
    in->nested = N_OWN;
    in->member_xz = xz;
    in->inner_first = buf;
    in->inner_first_len = sz;
    if (xz)
        dsq_unxz_start(in->xz_member, pull_member, in);
    else
        dsq_gunzip_start(in->gz_member, pull_member, in);
    if ((r = own_member_read(in, data, len, err)) != 0 ||
        !(m = compression_magic((const unsigned char *)*data, *len)))
        return r;
    in->inner_own = 1; /* compressed twice */
    if ((r = open_inner(in, *data, *len, m, err)) != 0)
        return r;
    return inner_read(in, data, len, err);
}

/* A member's compressed stream (or, zsrc, what zstd decoded from one), whose first
 * block buf[0..sz) starts with m's magic bytes: gzip by ISA-L and xz by liblzma
 * (N_OWN), else libarchive (N_ARCHIVE); the first chunk it decodes. */
static int compressed_start(dsq_input *in, const void *buf, size_t sz, const char *m,
                            const char **data, size_t *len, dsq_error *err)
{
    int r, xz = strcmp(m, "xz") == 0;
    if (((strcmp(m, "gzip") == 0 && in->gzip_by == DSQ_INPUT_GZIP_ISAL) || xz) &&
        own_ready(in, xz) == 0)
        return own_member_start(in, buf, sz, xz, data, len, err);
    if ((r = open_inner(in, buf, sz, m, err)) != 0)
        return r;
    return inner_read(in, data, len, err);
}

/* The first chunk zstd decoded of a member (or of a .zst file that open saw holds
 * another compression): when it starts with another compression's magic bytes, what
 * zstd decodes is the source (zsrc) of a further decoder, as a .gz member's bytes
 * are of the gzip decoder, and that decoder's first chunk is handed out; else the
 * chunk is the log's. Once per member: the chunks after go straight out. */
static int zstd_first_chunk(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    const char *m = compression_magic((const unsigned char *)*data, *len);
    if (!m)
        return 0;
    if (!in->zsrc_buf && !(in->zsrc_buf = malloc(in->zout_cap)))
        return dsq_error_set(err, DSQ_ENOMEM, "zstd layer buffer");
    memcpy(in->zsrc_buf, *data, *len); /* the further decoder may write where it was */
    in->zsrc = 1;
    in->src_len = *len;
    in->src_nz_end = non_nul_end(in->zsrc_buf, *len);
    return compressed_start(in, in->zsrc_buf, *len, m, data, len, err);
}

/* A .zst file whose decoded bytes are compressed again (zinner), read as a .gz.zst
 * (.xz.zst...) member is. */
static int zstd_again_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    int r;
    if (in->nested == N_OWN)
        return own_member_read(in, data, len, err);
    if (in->nested == N_ARCHIVE)
        return inner_read(in, data, len, err);
    if ((r = zstd_read(in, data, len, err)) != 0 || in->member_started)
        return r;
    in->member_started = 1;
    return zstd_first_chunk(in, data, len, err);
}

static int archive_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    if (in->nested == N_ZSTD)
        return zstd_read(in, data, len, err);
    if (in->nested == N_ARCHIVE)
        return inner_read(in, data, len, err);
    if (in->nested == N_OWN)
        return own_member_read(in, data, len, err);
    const void *buf;
    size_t sz;
    int r = member_block(in, &buf, &sz, err);
    if (r < 0)
        return r;
    if (r == 0) {
        *len = 0;
        return in->member_started ? check_trailing(in, err) : 0;
    }
    if (!in->member_started) { /* a compressed member: decode it on the fly */
        in->member_started = 1;
        const char *m = is_zstd(buf, sz) ? "zstd" : archive_magic(buf, sz);
        if (m && strcmp(m, "zstd") == 0) {
            in->nested = N_ZSTD;
            in->zin = (ZSTD_inBuffer){buf, sz, 0};
            if ((r = zstd_read(in, data, len, err)) != 0)
                return r;
            return zstd_first_chunk(in, data, len, err);
        }
        if (m && (strcmp(m, "gzip") == 0 || strcmp(m, "bzip2") == 0 || strcmp(m, "xz") == 0))
            return compressed_start(in, buf, sz, m, data, len, err);
    }
    *data = buf;
    *len = sz;
    return 0;
}

/* Share of control bytes (but whitespace, backspace and ESC) in a sample, NUL
 * bytes left out: about 10% in random or compressed data, almost none in text
 * whatever its encoding (GBK or Latin-1 logs are not UTF-8, and are still logs). */
/* A control byte that text does not have: 0x01-0x1F but tab, newline, vertical tab,
 * form feed, carriage return, backspace and ESC (bits of the mask), and DEL. */
static unsigned is_control(unsigned char c)
{
    return c < 0x20 ? (0xF7FFC0FEu >> c) & 1 : c == 0x7F;
}

#ifdef __SSE2__
/* Bits set in a 16-bit mask (without -mpopcnt __builtin_popcount is a call). */
static size_t pop16(unsigned x)
{
    x -= (x >> 1) & 0x5555u;
    x = (x & 0x3333u) + ((x >> 2) & 0x3333u);
    x = (x + (x >> 4)) & 0x0F0Fu;
    return (x + (x >> 8)) & 0x1Fu;
}
#endif

#ifdef SNIFF_AVX2
static int sniff_avx2_cpu, sniff_avx2_ok;

__attribute__((constructor)) static void sniff_init(void)
{
    __builtin_cpu_init(); /* (a constructor may run before libgcc's) */
    /* the line splitter's AVX2 test, and popcnt (bit tricks instead: +1.5 % of an
     * archive's instructions) */
    sniff_avx2_cpu = dsq_linescan_usable(DSQ_LINESCAN_AVX2) && __builtin_cpu_supports("popcnt");
    sniff_avx2_ok = sniff_avx2_cpu;
}

/* The SSE2 loop of dsq_input_sniff 32 bytes at a time: where the bytes under 0x20
 * are newlines every line or so, the test of a block that has none is the cost
 * (a first chunk of up to 64 KiB of nearly every member, 3 % of indexing an archive
 * of small files). Counts into *bad and *seen; returns where it stopped. */
__attribute__((target("avx2,popcnt"))) static size_t sniff32(const unsigned char *p, size_t n,
                                                            size_t *bad, size_t *seen)
{
    const __m256i top = _mm256_set1_epi8(0x1F), del = _mm256_set1_epi8(0x7F),
                  zero = _mm256_setzero_si256(), eight = _mm256_set1_epi8(8),
                  five = _mm256_set1_epi8(5), esc = _mm256_set1_epi8(0x1B);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        __m256i low = _mm256_cmpeq_epi8(_mm256_min_epu8(x, top), x), d = _mm256_cmpeq_epi8(x, del);
        if (!_mm256_movemask_epi8(_mm256_or_si256(low, d))) {
            *seen += 32;
            continue;
        }
        __m256i y = _mm256_sub_epi8(x, eight);
        __m256i ok = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_min_epu8(y, five), y),
                                     _mm256_cmpeq_epi8(x, esc));
        __m256i nul = _mm256_cmpeq_epi8(x, zero);
        __m256i ctl = _mm256_or_si256(_mm256_andnot_si256(_mm256_or_si256(nul, ok), low), d);
        *seen += 32 - (size_t)__builtin_popcount((unsigned)_mm256_movemask_epi8(nul));
        *bad += (size_t)__builtin_popcount((unsigned)_mm256_movemask_epi8(ctl));
    }
    return i;
}
#endif

int dsq_input_sniff_wide(int on)
{
#ifdef SNIFF_AVX2
    sniff_avx2_ok = on && sniff_avx2_cpu;
    return sniff_avx2_ok;
#else
    (void)on;
    return 0;
#endif
}

int dsq_input_sniff(const unsigned char *p, size_t n, size_t *bad_out, size_t *seen_out)
{
    size_t bad = 0, seen = 0, i = 0;
#ifdef SNIFF_AVX2
    if (sniff_avx2_ok)
        i = sniff32(p, n, &bad, &seen);
#endif
#ifdef __SSE2__
    /* 16 bytes at a time, counted exactly: NULs are not seen; 0x00-0x1F but NUL,
     * 0x08-0x0D and ESC, and 0x7F are bad (is_control). The test was ~3
     * instructions a byte over small files, which it reads whole. */
    const __m128i top = _mm_set1_epi8(0x1F), del = _mm_set1_epi8(0x7F), zero = _mm_setzero_si128(),
                  eight = _mm_set1_epi8(8), five = _mm_set1_epi8(5), esc = _mm_set1_epi8(0x1B);
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(x, top), x), d = _mm_cmpeq_epi8(x, del);
        if (!_mm_movemask_epi8(_mm_or_si128(low, d))) {
            seen += 16; /* most text: no byte below 0x20 */
            continue;
        }
        __m128i y = _mm_sub_epi8(x, eight);
        __m128i ok = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(y, five), y), _mm_cmpeq_epi8(x, esc));
        __m128i nul = _mm_cmpeq_epi8(x, zero);
        __m128i ctl = _mm_or_si128(_mm_andnot_si128(_mm_or_si128(nul, ok), low), d);
        seen += 16 - pop16((unsigned)_mm_movemask_epi8(nul));
        bad += pop16((unsigned)_mm_movemask_epi8(ctl));
    }
#endif
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    /* 8 bytes none of which is below 0x20 or 0x7F are all seen and none bad (the test
     * ran at ~10 cycles a byte over the first 64 KiB of every member); the others
     * byte by byte */
    for (; i < n; i += 8) {
        uint64_t x, d = 0x7F * ones;
        if (i + 8 <= n) {
            memcpy(&x, p + i, 8);
            if (!(((x - 0x20 * ones) & ~x & highs) | (((x ^ d) - ones) & ~(x ^ d) & highs))) {
                seen += 8;
                continue;
            }
        }
        for (size_t j = i; j < i + 8 && j < n; j++) {
            seen += p[j] != 0;
            bad += is_control(p[j]);
        }
    }
    *bad_out = bad;
    *seen_out = seen;
    return seen >= SNIFF_MIN && bad * 100 >= seen * SNIFF_BINARY_PCT;
}

/* What every chunk goes through whatever its container: the decode limit, the
 * binary sniff of a member's first chunk, and the NUL-only check at its end. */
static int check_chunk(dsq_input *in, const char *data, size_t len, dsq_error *err)
{
    if (len == 0) {
        if (in->member_bytes > 0 && in->all_nul)
            return dsq_error_set(err, DSQ_EFORMAT,
                                 "only NUL bytes (%llu of them), no text: skipped",
                                 (unsigned long long)in->member_bytes);
        return 0;
    }
    if (in->kind != K_PLAIN) {
        in->decoded += len;
        if (in->decoded > in->decode_limit)
            return limit_error(in, err);
    }
    if (in->member_bytes == 0) {
        size_t bad, seen;
        if (dsq_input_sniff((const unsigned char *)data, len < SNIFF_SPAN ? len : SNIFF_SPAN, &bad,
                         &seen)) {
            in->all_nul = 0;
            return dsq_error_set(err, DSQ_EFORMAT,
                                 "binary data, not text (%zu%% of the first %zu bytes are "
                                 "control bytes): skipped",
                                 bad * 100 / seen, len < SNIFF_SPAN ? len : SNIFF_SPAN);
        }
    }
    if (in->all_nul) {
        size_t i = 0;
        while (i < len && data[i] == 0)
            i++;
        in->all_nul = i == len;
    }
    in->member_bytes += len;
    return 0;
}

/* A plain file is handed out in slices of the mapping. The slice before is let go
 * first (its lines are done; the splitter copies a line cut by a slice's end), so
 * a big file does not stay resident as it is read. */
#define PLAIN_SLICE ((size_t)4 << 20)

static void plain_read(dsq_input *in, const char **data, size_t *len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), done = in->plain_off / page * page;
    if (done > 0 && in->mapped)
        madvise((void *)(uintptr_t)in->map, done, MADV_DONTNEED);
    *data = (const char *)in->map; /* NULL for an empty file: no arithmetic on it */
    if (in->map)
        *data += in->plain_off;
    *len = in->data_done ? 0 : in->size - in->plain_off < PLAIN_SLICE ? in->size - in->plain_off
                                                                       : PLAIN_SLICE;
    in->plain_off += *len;
    if (in->plain_off >= in->size)
        in->data_done = 1;
}

int dsq_input_read_into(dsq_input *in, char *dst, size_t cap, const char **data, size_t *len,
                        dsq_error *err)
{
    in->to = cap >= in->zout_cap ? (unsigned char *)dst : NULL;
    int rc = dsq_input_read(in, data, len, err);
    in->to = NULL;
    return rc;
}

size_t dsq_input_chunk_max(const dsq_input *in) { return in->zout_cap; }

int dsq_input_decodes_zstd(const dsq_input *in)
{
    return (in->kind == K_ZSTD && !in->zinner && !in->zdirect) ||
           (in->kind == K_ARCHIVE && in->nested == N_ZSTD);
}

int dsq_input_keeps_chunks(const dsq_input *in) { return in->kind == K_ZSTD && in->zdirect; }

void dsq_input_set_zdirect_min(size_t bytes) { zdirect_min = bytes; }

/* A compressed file's map is let go of behind what its decoder has read, in steps
 * of MAP_LET_GO, MAP_LET_GO short of that place: a big file does not stay resident
 * as it is read (a 216 MB .zst held 230 MB at its end: 287 MB peak RSS for its
 * index, over goal 4's 256). Pages read again (an archive reader going back) are
 * mapped again from the page cache. Plain files let go in plain_read. */
#define MAP_LET_GO ((size_t)4 << 20)

static void let_go_of_read(dsq_input *in)
{
    if (!in->mapped || in->kind == K_PLAIN)
        return;
    uint64_t at = dsq_input_bytes_in(in);
    if (at > in->size || at < in->map_let_go + 2 * MAP_LET_GO)
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), upto = (size_t)(at - MAP_LET_GO) / page * page;
    madvise((void *)(uintptr_t)in->map, upto, MADV_DONTNEED);
    in->map_let_go = upto;
}

int dsq_input_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    int rc;
    if (in->pending[0]) { /* a warning that came with the last chunk */
        rc = dsq_error_set(err, DSQ_EFORMAT, "%s", in->pending);
        in->pending[0] = 0;
        return rc;
    }
    if (in->stopped)
        return dsq_error_set(err, DSQ_ELIMIT, "decode limit reached");
    switch (in->kind) {
    case K_PLAIN:
        plain_read(in, data, len);
        rc = 0;
        break;
    case K_ZSTD:
        rc = in->zinner ? zstd_again_read(in, data, len, err) : zstd_read(in, data, len, err);
        break;
    case K_OWN:
        rc = own_file_read(in, data, len, err);
        break;
    case K_ARCHIVE:
        rc = archive_read(in, data, len, err);
        break;
    default:
        return dsq_error_set(err, DSQ_EUSAGE, "no file open");
    }
    if (rc)
        return rc;
    let_go_of_read(in);
    return check_chunk(in, *data, *len, err);
}
