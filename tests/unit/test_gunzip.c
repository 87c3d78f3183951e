/* The ISA-L gzip decoder (gunzip.h) on its own: members back to back with every
 * header field, input pulled in blocks of every size and output taken in small
 * pieces, a stream cut at every byte, corrupt bodies and trailers, bytes after the
 * stream, input that is no gzip, and an error of the block source. Built without
 * ISA-L, it checks that the decoder says so. */
#include <stdlib.h>

#include "dsq/dsq.h"
#include "error.h"
#include "gunzip.h"
#include "test.h"
#include "testgzip.h"
#include "testpull.h"

static char tmp[64];

typedef test_result result;

TEST_PULL_DECODE(dsq_gunzip, dsq_gunzip, dsq_gunzip_members)

static int has(const result *r, const char *what) { return strstr(r->err.msg, what) != NULL; }

/* Three members (every optional header field, an empty one, a plain one) read
 * as one stream whatever the block and output sizes. */
static void test_members_in_any_block_size(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 200000;
    char *t = test_log_text(n, 5);
    test_buf z = {0}, want = {0};
    test_gzip_member(&z, tmp, t, n, TGZ_FHCRC | TGZ_FEXTRA | TGZ_FNAME | TGZ_FCOMMENT, "gzip");
    test_gzip_member(&z, tmp, "", 0, 0, "gzip");
    test_gzip_member(&z, tmp, t + 1000, 5000, TGZ_FNAME, "gzip-1");
    test_buf_add(&want, t, n);
    test_buf_add(&want, t + 1000, 5000);
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    every_size(g, &z, &want, z.n, 3);
    dsq_gunzip_free(g);
    free(z.p);
    free(want.p);
    free(t);
}

/* Two members cut at every byte: what comes out is a prefix of the text; a cut
 * inside the first header is no gzip, inside a body is truncated, inside the
 * second header ends the stream after the first member (the caller sees bytes
 * after it), and at the end of the first member is a whole stream. */
static void test_cut_at_every_byte(void)
{
    if (!dsq_gunzip_available())
        return;
    const char *a = "first member: a line\nand another line\n", *b = "second member\n";
    test_buf z = {0}, want = {0};
    test_gzip_member(&z, tmp, a, strlen(a), TGZ_FNAME, "gzip");
    size_t m1 = z.n;
    test_gzip_member(&z, tmp, b, strlen(b), TGZ_FNAME, "gzip");
    test_buf_add(&want, a, strlen(a));
    test_buf_add(&want, b, strlen(b));
    const size_t hdr = 10 + 10; /* base header + "node1.log\0" */
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    for (size_t cut = 0; cut < z.n; cut++) {
        for (size_t step = 1; step <= 64; step += 63) {
            result r = {0};
            decode(g, z.p, cut, step, 4096, SIZE_MAX, &r);
            CHECK(r.out.n <= want.n && memcmp(r.out.p ? r.out.p : "", want.p, r.out.n) == 0);
            if (cut < hdr) {
                CHECK_INT(r.rc, DSQ_EFORMAT);
                CHECK(has(&r, "starts with gzip magic bytes but is no valid gzip data"));
            } else if (cut < m1 || cut >= m1 + hdr) {
                CHECK_INT(r.rc, DSQ_EFORMAT);
                if (!has(&r, "gzip: truncated input"))
                    fprintf(stderr, "cut %zu: %s\n", cut, r.err.msg);
                CHECK(has(&r, "gzip: truncated input"));
            } else {
                CHECK_INT(r.rc, 0);
                CHECK_INT(r.out.n, strlen(a));
                CHECK_INT(r.ended, 1);
                CHECK_INT(r.end_at, m1);
            }
            free(r.out.p);
        }
    }
    dsq_gunzip_free(g);
    free(z.p);
    free(want.p);
}

/* A wrong CRC-32 or length in a trailer, and damaged deflate data, are errors. */
static void test_corrupt_member(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 100000;
    char *t = test_log_text(n, 8);
    test_buf z = {0};
    test_gzip_member(&z, tmp, t, n, 0, "gzip");
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    const size_t at[] = {z.n - 8, z.n - 5, z.n - 4, z.n - 1}; /* CRC-32, then ISIZE */
    for (size_t i = 0; i < 4; i++) {
        z.p[at[i]] ^= 0x01;
        result r = {0};
        decode(g, z.p, z.n, SIZE_MAX, 1 << 16, SIZE_MAX, &r);
        CHECK_INT(r.rc, DSQ_EFORMAT);
        CHECK(has(&r, "CRC-32 or length in the member's trailer does not match"));
        CHECK_INT(r.out.n, n); /* all of the data came before the complaint */
        z.p[at[i]] ^= 0x01;
        free(r.out.p);
    }
    for (size_t k = 0; k < 64; k++) /* the body damaged in the middle */
        z.p[z.n / 2 + k] ^= 0x55;
    result r = {0};
    decode(g, z.p, z.n, 4096, 1 << 16, SIZE_MAX, &r);
    CHECK_INT(r.rc, DSQ_EFORMAT);
    CHECK(has(&r, "gzip: "));
    CHECK(has(&r, "compressed offset"));
    free(r.out.p);
    dsq_gunzip_free(g);
    free(z.p);
    free(t);
}

/* Bytes after the last member end the stream there, whatever they are; magic
 * bytes followed by no valid header too. */
static void test_bytes_after_the_stream(void)
{
    if (!dsq_gunzip_available())
        return;
    const char *a = "the only member\n";
    const char *tails[] = {"", "\0", "\0\0\0\0\0\0\0\0", "GARBAGE", "\x1f", "\x1f\x8b",
                           "\x1f\x8bjunk junk junk", "\x1f\x8b\x08\xe0\0\0\0\0\0\3xyz"};
    const size_t tail_len[] = {0, 1, 8, 7, 1, 2, 16, 13};
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        test_buf z = {0};
        test_gzip_member(&z, tmp, a, strlen(a), 0, "gzip");
        size_t m1 = z.n;
        test_buf_add(&z, tails[i], tail_len[i]);
        for (size_t step = 1; step <= 4096; step *= 64) {
            result r = {0};
            decode(g, z.p, z.n, step, 4096, SIZE_MAX, &r);
            CHECK_INT(r.rc, 0);
            CHECK_INT(r.out.n, strlen(a));
            CHECK_INT(r.ended, 1);
            CHECK_INT(r.end_at, m1);
            free(r.out.p);
        }
        free(z.p);
    }
    dsq_gunzip_free(g);
}

/* Magic bytes and then no gzip header: said so, nothing decoded. */
static void test_no_gzip_behind_the_magic(void)
{
    if (!dsq_gunzip_available())
        return;
    const char *fakes[] = {"\x1f\x8bjunk junk junk junk", "\x1f\x8b", "\x1f\x8b\x07\0\0\0\0\0\0\3abc",
                           "\x1f\x8b\x08\xe0\0\0\0\0\0\3abc", ""};
    const size_t len[] = {21, 2, 13, 13, 0};
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    for (size_t i = 0; i < sizeof fakes / sizeof *fakes; i++) {
        result r = {0};
        decode(g, fakes[i], len[i], SIZE_MAX, 4096, SIZE_MAX, &r);
        CHECK_INT(r.rc, DSQ_EFORMAT);
        CHECK(has(&r, "starts with gzip magic bytes but is no valid gzip data"));
        CHECK_INT(r.out.n, 0);
        CHECK_INT(dsq_gunzip_members(g), 0);
        free(r.out.p);
    }
    dsq_gunzip_free(g);
}

/* Header fields far longer than ISA-L's own header buffer (a 3000-byte name and
 * comment, a 40,000-byte extra field), cut into blocks of any size. */
static void test_long_header_fields(void)
{
    if (!dsq_gunzip_available())
        return;
    const char *a = "behind a long header\n";
    test_buf m = {0}, z = {0};
    test_gzip_member(&m, tmp, a, strlen(a), 0, "gzip");
    unsigned char base[10] = {0x1F, 0x8B, 8, TGZ_FEXTRA | TGZ_FNAME | TGZ_FCOMMENT, 0, 0, 0, 0, 0, 3};
    test_buf_add(&z, base, 10);
    unsigned char xlen[2] = {40000 & 0xFF, 40000 >> 8};
    test_buf_add(&z, xlen, 2);
    for (int i = 0; i < 40000; i++)
        test_buf_add(&z, "x", 1);
    for (int f = 0; f < 2; f++) { /* name, comment */
        for (int i = 0; i < 3000; i++)
            test_buf_add(&z, "n", 1);
        test_buf_add(&z, "", 1);
    }
    test_buf_add(&z, m.p + 10, m.n - 10);
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    const size_t steps[] = {1, 7, 4096, SIZE_MAX};
    for (size_t i = 0; i < 4; i++) {
        result r = {0};
        decode(g, z.p, z.n, steps[i], 4096, SIZE_MAX, &r);
        CHECK_INT(r.rc, 0);
        CHECK(r.out.n == strlen(a) && memcmp(r.out.p, a, r.out.n) == 0);
        CHECK_INT(r.end_at, z.n);
        free(r.out.p);
    }
    dsq_gunzip_free(g);
    free(m.p);
    free(z.p);
}

/* The block source failing: what was decoded before, then its error. */
static void test_source_error(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 300000;
    char *t = test_log_text(n, 2);
    test_buf z = {0};
    test_gzip_member(&z, tmp, t, n, 0, "gzip");
    dsq_gunzip *g = NULL;
    CHECK_INT(dsq_gunzip_new(&g), 0);
    result r = {0};
    decode(g, z.p, z.n, 1000, 1 << 16, z.n / 2, &r);
    CHECK_INT(r.rc, DSQ_EIO);
    CHECK_STR(r.err.msg, "the source broke");
    CHECK(r.out.n > 0 && r.out.n < n && memcmp(r.out.p, t, r.out.n) == 0);
    free(r.out.p);
    dsq_gunzip_free(g);
    free(z.p);
    free(t);
}

static void test_backend(void)
{
    dsq_gunzip *g = NULL;
    if (dsq_gunzip_available()) {
        CHECK(strncmp(dsq_gunzip_backend(), "ISA-L ", 6) == 0);
        CHECK_INT(dsq_gunzip_new(&g), 0);
    } else {
        CHECK_STR(dsq_gunzip_backend(), "zlib (libarchive)");
        CHECK_INT(dsq_gunzip_new(&g), DSQ_EUSAGE);
    }
    dsq_gunzip_free(g);
}

static void test_setup(void) { CHECK_INT(test_tmpdir_new(tmp), 0); }
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_backend), T(test_members_in_any_block_size),
          T(test_cut_at_every_byte), T(test_corrupt_member), T(test_bytes_after_the_stream),
          T(test_no_gzip_behind_the_magic), T(test_long_header_fields), T(test_source_error), T(test_teardown))
