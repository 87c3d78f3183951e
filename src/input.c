/* Input decoding (see input.h).
 *
 * Every file is mmap'd once (MADV_SEQUENTIAL). Plain text is handed out as one
 * chunk straight from the map; zstd is decompressed with one reused DCtx into one
 * reused output buffer; everything libarchive understands is read from the map
 * with archive_read_open_memory, so no byte is read from disk twice. Errors carry
 * the member name and the offset reached.
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
#include <unistd.h>
#include <zstd.h>

#include "dict.h"
#include "error.h"

#define FP_SPAN (64 * 1024)

enum kind { K_NONE, K_PLAIN, K_ZSTD, K_ARCHIVE };

struct dsq_input {
    enum kind kind;
    const char *format;
    const unsigned char *map;
    size_t size;
    int64_t mtime_ns;
    int member_done;         /* plain/zstd: the one member was handed out */
    int data_done;           /* plain: the one chunk was handed out */
    /* zstd (whole file, or nested inside an archive member) */
    ZSTD_DCtx *dctx;
    ZSTD_inBuffer zin;
    size_t zlast;            /* last ZSTD_decompressStream result: 0 = frame complete */
    unsigned char *zout;
    size_t zout_cap;
    int nested_zstd;         /* current archive member is zstd-compressed */
    int member_started;
    int member_eof;
    int archive_eof;         /* next_header said EOF: libarchive must not be asked again */
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
    if (n >= 3 && memcmp(p, "BZh", 3) == 0)
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
    in->dctx = ZSTD_createDCtx();
    in->zout_cap = ZSTD_DStreamOutSize() * 8;
    in->zout = malloc(in->zout_cap);
    if (!in->dctx || !in->zout) {
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
    free(in->zout);
    free(in);
}

int dsq_input_stat(const char *path, dsq_file_info *fi, dsq_error *err)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(e));
    }
    unsigned char buf[FP_SPAN];
    uint64_t h = dsq_hash64(&sb.st_size, sizeof sb.st_size, 0);
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    if (n > 0)
        h = dsq_hash64(buf, (size_t)n, h);
    if (sb.st_size > FP_SPAN) {
        n = pread(fd, buf, sizeof buf, sb.st_size - FP_SPAN);
        if (n > 0)
            h = dsq_hash64(buf, (size_t)n, h);
    }
    close(fd);
    if (n < 0)
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(errno));
    fi->size = (uint64_t)sb.st_size;
    fi->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    fi->fingerprint = h;
    return 0;
}

/* Decompresses the first bytes of a zstd stream to see whether it holds a tar. */
static int zstd_holds_tar(dsq_input *in)
{
    unsigned char peek[1024];
    ZSTD_inBuffer zi = {in->map, in->size, 0};
    ZSTD_outBuffer zo = {peek, sizeof peek, 0};
    while (zo.pos < sizeof peek && zi.pos < zi.size) {
        size_t r = ZSTD_decompressStream(in->dctx, &zo, &zi);
        if (ZSTD_isError(r) || r == 0)
            break;
    }
    ZSTD_DCtx_reset(in->dctx, ZSTD_reset_session_only);
    return is_tar(peek, zo.pos);
}

static int open_archive(dsq_input *in, dsq_error *err)
{
    in->ar = archive_read_new();
    if (!in->ar)
        return dsq_error_set(err, DSQ_ENOMEM, "libarchive");
    archive_read_support_filter_all(in->ar);
    archive_read_support_format_tar(in->ar);
    archive_read_support_format_zip(in->ar);
    archive_read_support_format_raw(in->ar); /* a single compressed file */
    if (archive_read_open_memory(in->ar, in->map, in->size) != ARCHIVE_OK)
        return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
    in->kind = K_ARCHIVE;
    return 0;
}

int dsq_input_open(dsq_input *in, const char *path, dsq_error *err)
{
    struct stat sb;
    dsq_input_close(in);
    snprintf(in->path, sizeof in->path, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return dsq_error_set(err, DSQ_EIO, "%s", strerror(e));
    }
    in->size = (size_t)sb.st_size;
    in->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    if (in->size > 0) {
        void *m = mmap(NULL, in->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return dsq_error_set(err, DSQ_EIO, "mmap: %s", strerror(e));
        }
        madvise(m, in->size, MADV_SEQUENTIAL);
        in->map = m;
    }
    close(fd);
    const char *am = archive_magic(in->map, in->size);
    if (is_zstd(in->map, in->size)) {
        in->format = zstd_holds_tar(in) ? "tar.zst" : "zstd";
        if (strcmp(in->format, "zstd") != 0)
            return open_archive(in, err);
        in->kind = K_ZSTD;
        in->zin = (ZSTD_inBuffer){in->map, in->size, 0};
        in->zlast = 0;
        return 0;
    }
    if (am) {
        in->format = am;
        return open_archive(in, err);
    }
    in->kind = K_PLAIN;
    in->format = "plain";
    return 0;
}

const char *dsq_input_format(const dsq_input *in) { return in->format ? in->format : "?"; }

uint64_t dsq_input_bytes_in(const dsq_input *in)
{
    if (in->kind == K_ZSTD)
        return in->zin.pos;
    if (in->kind == K_ARCHIVE && in->ar)
        return (uint64_t)archive_filter_bytes(in->ar, -1);
    return in->size;
}

void dsq_input_close(dsq_input *in)
{
    if (in->ar)
        archive_read_free(in->ar);
    in->ar = NULL;
    if (in->map)
        munmap((void *)in->map, in->size);
    in->map = NULL;
    in->size = 0;
    in->kind = K_NONE;
    in->format = NULL;
    in->member_done = in->data_done = 0;
    in->nested_zstd = in->member_started = in->member_eof = in->archive_eof = 0;
    in->last_name[0] = in->damage[0] = 0;
    if (in->dctx)
        ZSTD_DCtx_reset(in->dctx, ZSTD_reset_session_only);
}

static int archive_next(dsq_input *in, dsq_member_info *mi, dsq_error *err)
{
    struct archive_entry *e;
    if (in->archive_eof)
        return 0;
    for (;;) {
        int r = archive_read_next_header(in->ar, &e);
        if (r == ARCHIVE_EOF) {
            in->archive_eof = 1;
            return 0;
        }
        if (r == ARCHIVE_FATAL)
            return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
        if (r == ARCHIVE_RETRY) { /* a damaged header: libarchive skips ahead; say so once */
            if (!in->damage[0]) {
                const char *why = archive_error_string(in->ar);
                snprintf(in->damage, sizeof in->damage,
                         "%.80s%s%.120s: skipped to the next readable member",
                         why ? why : "damaged archive entry",
                         in->last_name[0] ? " after member " : "", in->last_name);
            }
            continue;
        }
        /* ARCHIVE_OK or ARCHIVE_WARN: the header is usable */
        if (archive_format(in->ar) != ARCHIVE_FORMAT_RAW && archive_entry_filetype(e) != AE_IFREG)
            continue;
        const char *name = archive_entry_pathname(e);
        in->name = archive_format(in->ar) == ARCHIVE_FORMAT_RAW ? "" : (name ? name : "?");
        mi->name = in->name;
        snprintf(in->last_name, sizeof in->last_name, "%s", in->name);
        mi->mtime_ns = archive_entry_mtime_is_set(e)
                           ? (int64_t)archive_entry_mtime(e) * 1000000000 +
                                 archive_entry_mtime_nsec(e)
                           : in->mtime_ns;
        mi->size = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
        in->nested_zstd = in->member_started = in->member_eof = 0;
        ZSTD_DCtx_reset(in->dctx, ZSTD_reset_session_only);
        in->zlast = 0;
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
    mi->name = "";
    mi->mtime_ns = in->mtime_ns;
    mi->size = in->kind == K_PLAIN ? (int64_t)in->size : -1;
    return 1;
}

/* Decompresses from in->zin into zout; refills zin from the archive member when
 * the zstd stream is nested. One call yields at least one byte or the end. */
static int zstd_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    ZSTD_outBuffer zo = {in->zout, in->zout_cap, 0};
    while (zo.pos == 0) {
        if (in->zin.pos == in->zin.size) {
            if (in->kind != K_ARCHIVE || in->member_eof)
                break;
            const void *buf;
            size_t sz;
            la_int64_t off;
            int r = archive_read_data_block(in->ar, &buf, &sz, &off);
            if (r == ARCHIVE_EOF) {
                in->member_eof = 1;
                break;
            }
            if (r < ARCHIVE_WARN)
                return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
            in->zin = (ZSTD_inBuffer){buf, sz, 0};
            continue;
        }
        size_t r = ZSTD_decompressStream(in->dctx, &zo, &in->zin);
        if (ZSTD_isError(r))
            return dsq_error_set(err, DSQ_EFORMAT, "zstd: %s (compressed offset %zu)",
                                 ZSTD_getErrorName(r), in->zin.pos);
        in->zlast = r;
    }
    if (zo.pos == 0 && in->zlast != 0)
        return dsq_error_set(err, DSQ_EFORMAT, "zstd: truncated input (stream ends mid-frame)");
    *data = (const char *)in->zout;
    *len = zo.pos;
    return 0;
}

static int archive_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    if (in->nested_zstd)
        return zstd_read(in, data, len, err);
    if (in->member_eof) {
        *len = 0;
        return 0;
    }
    const void *buf;
    size_t sz;
    la_int64_t off;
    int r = archive_read_data_block(in->ar, &buf, &sz, &off);
    if (r == ARCHIVE_EOF) {
        in->member_eof = 1;
        *len = 0;
        return 0;
    }
    if (r < ARCHIVE_WARN)
        return dsq_error_set(err, DSQ_EFORMAT, "%s", archive_error_string(in->ar));
    if (!in->member_started && is_zstd(buf, sz)) { /* a .zst member: decode it on the fly */
        in->member_started = 1;
        in->nested_zstd = 1;
        in->zin = (ZSTD_inBuffer){buf, sz, 0};
        return zstd_read(in, data, len, err);
    }
    in->member_started = 1;
    *data = buf;
    *len = sz;
    return 0;
}

int dsq_input_read(dsq_input *in, const char **data, size_t *len, dsq_error *err)
{
    switch (in->kind) {
    case K_PLAIN:
        *data = (const char *)in->map;
        *len = in->data_done ? 0 : in->size;
        in->data_done = 1;
        return 0;
    case K_ZSTD:
        return zstd_read(in, data, len, err);
    case K_ARCHIVE:
        return archive_read(in, data, len, err);
    default:
        return dsq_error_set(err, DSQ_EUSAGE, "no file open");
    }
}
