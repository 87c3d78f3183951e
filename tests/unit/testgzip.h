/* gzip members for the gzip tests, with any header fields: libarchive's gzip writer
 * makes the deflate body and trailer, and the header is written here (RFC 1952), so
 * no zlib is needed. */
#ifndef DSQ_TEST_TESTGZIP_H
#define DSQ_TEST_TESTGZIP_H

#include <stdint.h>

#include "testarchive.h"
#include "testbuf.h"
#include "tmpdir.h"

/* header flags (RFC 1952) */
#define TGZ_FHCRC 0x02
#define TGZ_FEXTRA 0x04
#define TGZ_FNAME 0x08
#define TGZ_FCOMMENT 0x10

static inline uint32_t test_crc32(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

/* Appends one gzip member of data[0..n) to out, its header carrying the fields in
 * flags; level "gzip" or "gzip-1". dir is a scratch directory. */
static inline void test_gzip_member(test_buf *out, const char *dir, const void *data, size_t n,
                                    unsigned flags, const char *level)
{
    char path[256];
    snprintf(path, sizeof path, "%s/tgz-scratch.gz", dir);
    test_member m = {"x", data, n, 0};
    test_write_archive(path, "raw", level, &m, 1, 0);
    test_buf z = {0};
    CHECK_INT(test_read_file(path, &z), 0);
    size_t hl = 10; /* libarchive's header: no optional fields (checked) */
    CHECK_INT((unsigned char)z.p[3] & 0x1E, 0);
    test_buf h = {0};
    unsigned char base[10] = {0x1F, 0x8B, 8, (unsigned char)flags, 0x4D, 0x5A, 0x9D, 0x66, 0, 3};
    test_buf_add(&h, base, 10);
    if (flags & TGZ_FEXTRA)
        test_buf_add(&h, "\x08\x00" "AB\x04\x00wxyz", 10); /* XLEN 8: one subfield AB */
    if (flags & TGZ_FNAME)
        test_buf_add(&h, "node1.log", 10);
    if (flags & TGZ_FCOMMENT)
        test_buf_add(&h, "a comment", 10);
    if (flags & TGZ_FHCRC) {
        uint32_t c = test_crc32(h.p, h.n);
        unsigned char lo[2] = {(unsigned char)c, (unsigned char)(c >> 8)};
        test_buf_add(&h, lo, 2);
    }
    test_buf_add(out, h.p, h.n);
    test_buf_add(out, z.p + hl, z.n - hl);
    free(h.p);
    free(z.p);
}

#endif
