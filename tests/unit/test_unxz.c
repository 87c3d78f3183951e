/* The liblzma xz decoder (unxz.h) on its own: streams back to back with stream
 * padding between them, input pulled in blocks of every size (a stream header cut
 * between blocks too) and output taken in small pieces, bytes after the stream
 * (garbage, padding of a length that is no multiple of four, magic bytes with a bad
 * header, a second stream cut short), a stream cut at every byte, a corrupt byte,
 * input that is no xz, and an error of the block source. */
#include <stdlib.h>

#include "alloc_count.h"
#include "dsq/dsq.h"
#include "error.h"
#include "test.h"
#include "testarchive.h"
#include "testpull.h"
#include "tmpdir.h"
#include "unxz.h"

static char tmp[64];

typedef test_result result;

TEST_PULL_DECODE(dsq_unxz, dsq_unxz, dsq_unxz_streams)

/* One xz stream of data[0..n), appended to out (libarchive's xz writer). */
static void xz_stream(test_buf *out, const void *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/one.xz", tmp);
    test_member m = {"x", data, n, 0};
    test_write_archive(path, "raw", "xz", &m, 1, 0);
    CHECK_INT(test_read_file(path, out), 0);
}

static int has(const result *r, const char *what) { return strstr(r->err.msg, what) != NULL; }

/* n bytes of log text (seed), one xz stream of them, and a decoder. */
typedef struct xz_case {
    size_t n;
    char *t;
    test_buf z;
    dsq_unxz *x;
} xz_case;

static xz_case xz_case_new(size_t n, int seed)
{
    xz_case c = {n, test_log_text(n, seed), {0}, NULL};
    xz_stream(&c.z, c.t, n);
    CHECK_INT(dsq_unxz_new(&c.x), 0);
    return c;
}

static void xz_case_free(xz_case *c)
{
    dsq_unxz_free(c->x);
    free(c->z.p);
    free(c->t);
}

/* Three streams (one empty) with padding of 4 and 8 zero bytes between them and 3
 * after, read as one stream whatever the block and output sizes: the stream ends
 * after the last one (the zero bytes after it are for the caller to judge). */
static void test_streams_in_any_block_size(void)
{
    size_t n = 200000;
    char *t = test_log_text(n, 7);
    test_buf z = {0}, want = {0};
    xz_stream(&z, t, n);
    test_buf_add(&z, "\0\0\0\0", 4);
    xz_stream(&z, "", 0);
    test_buf_add(&z, "\0\0\0\0\0\0\0\0", 8);
    xz_stream(&z, t + 1000, 5000);
    size_t end = z.n;
    test_buf_add(&z, "\0\0\0", 3);
    test_buf_add(&want, t, n);
    test_buf_add(&want, t + 1000, 5000);
    dsq_unxz *x = NULL;
    CHECK_INT(dsq_unxz_new(&x), 0);
    every_size(x, &z, &want, end, 3);
    dsq_unxz_free(x);
    free(z.p);
    free(want.p);
    free(t);
}

/* What follows a stream that is no next stream ends the stream before it, whatever
 * the block size: garbage; zero bytes of a length that is no multiple of four, even
 * before a stream; xz magic bytes with a bad header, or cut before a whole header.
 * A second stream whose header checks out but whose data is cut short is damage. */
static void test_bytes_after_the_stream(void)
{
    size_t n = 30000;
    char *t = test_log_text(n, 11);
    test_buf one = {0};
    xz_stream(&one, t, n);
    static const struct {
        const char *tail;
        size_t len;
        int stream_after; /* a whole second stream follows the tail */
    } tails[] = {{"GARBAGE", 7, 0},
                 {"\0\0\0\0GARBAGE", 11, 0},
                 {"\0\0", 2, 1},
                 {"\0\0\0\0\0", 5, 1},
                 {"\xFD" "7zXZ\0junk junk", 15, 0},
                 {"\xFD" "7zXZ", 5, 0}};
    dsq_unxz *x = NULL;
    CHECK_INT(dsq_unxz_new(&x), 0);
    const size_t steps[] = {1, 5, 4096, SIZE_MAX};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        test_buf z = {0};
        test_buf_add(&z, one.p, one.n);
        test_buf_add(&z, tails[i].tail, tails[i].len);
        if (tails[i].stream_after)
            test_buf_add(&z, one.p, one.n);
        for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
            result r = {0};
            decode(x, z.p, z.n, steps[k], 4096, SIZE_MAX, &r);
            if (r.rc != 0 || r.out.n != n || !r.ended || r.end_at != one.n)
                fprintf(stderr, "tail %zu step %zu: rc %d (%s), %zu bytes, end %d at %llu\n", i,
                        steps[k], r.rc, r.err.msg, r.out.n, r.ended,
                        (unsigned long long)r.end_at);
            CHECK_INT(r.rc, 0);
            CHECK(r.out.n == n && memcmp(r.out.p, t, n) == 0);
            CHECK_INT(r.ended, 1);
            CHECK_INT(r.end_at, one.n);
            free(r.out.p);
        }
        free(z.p);
    }
    test_buf two = {0};
    test_buf_add(&two, one.p, one.n);
    test_buf_add(&two, one.p, one.n);
    two.n -= 20;
    result r = {0};
    decode(x, two.p, two.n, 1000, 4096, SIZE_MAX, &r);
    CHECK(r.rc < 0 && has(&r, "xz: truncated input"));
    CHECK_INT(r.ended, 0);
    CHECK(r.out.n >= n && memcmp(r.out.p, t, n) == 0); /* the first stream whole */
    free(r.out.p);
    dsq_unxz_free(x);
    free(two.p);
    free(one.p);
    free(t);
}

/* A stream cut at every byte: an error (never a crash, never an end), after what
 * could be decoded, which is a prefix of the data. */
static void test_cut_at_every_byte(void)
{
    xz_case c = xz_case_new(3000, 13);
    for (size_t cut = 0; cut < c.z.n; cut++) {
        result r = {0};
        decode(c.x, c.z.p, cut, cut % 2 ? 1 : 4096, 4096, SIZE_MAX, &r);
        CHECK(r.rc < 0);
        CHECK_INT(r.ended, 0);
        CHECK(r.out.n <= c.n && (r.out.n == 0 || memcmp(r.out.p, c.t, r.out.n) == 0));
        free(r.out.p);
    }
    xz_case_free(&c);
}

/* A flipped byte in the compressed data, input that is no xz behind the magic
 * bytes, input that is no xz at all, and a failing block source: errors that say
 * so (the source's own), repeated by every later read. */
static void test_damage(void)
{
    xz_case c = xz_case_new(100000, 17);
    size_t n = c.n;
    char *t = c.t;
    test_buf *z = &c.z;
    dsq_unxz *x = c.x;
    z->p[z->n / 2] ^= 0x55;
    result r = {0};
    decode(x, z->p, z->n, 4096, 4096, SIZE_MAX, &r);
    CHECK(r.rc < 0 && has(&r, "xz: corrupted input data (compressed offset"));
    free(r.out.p);
    z->p[z->n / 2] ^= 0x55;
    static const char junk[] = "\xFD" "7zXZ\0 junk junk junk", text[] = "no xz at all, just text";
    const char *fakes[] = {junk, text};
    const size_t len[] = {sizeof junk - 1, sizeof text - 1};
    const char *why[] = {"xz: corrupted input data", "starts with xz magic bytes but is no valid xz"};
    for (int i = 0; i < 2; i++) {
        result f = {0};
        decode(x, fakes[i], len[i], SIZE_MAX, 4096, SIZE_MAX, &f);
        CHECK(f.rc < 0 && has(&f, why[i]));
        CHECK_INT(f.out.n, 0);
        CHECK_INT(dsq_unxz_streams(x), 0);
        free(f.out.p);
    }
    result s = {0};
    decode(x, z->p, z->n, 1000, 1 << 16, z->n / 2, &s);
    CHECK(s.rc < 0);
    CHECK_STR(s.err.msg, "the source broke");
    CHECK(s.out.n < n && memcmp(s.out.p, t, s.out.n) == 0);
    free(s.out.p);
    xz_case_free(&c);
}

/* Once a stream's first bytes are decoded (liblzma allocates its decoder and
 * dictionary there), reading the rest allocates nothing. */
static void test_reads_allocate_nothing(void)
{
    xz_case c = xz_case_new(3000000, 19);
    size_t n = c.n;
    dsq_unxz *x = c.x;
    test_source s = {(const unsigned char *)c.z.p, c.z.n, 0, 65536, SIZE_MAX};
    unsigned char *o = malloc(65536);
    unsigned long at_start = allocs;
    dsq_unxz_start(x, test_pull, &s);
    size_t len, got = 0, reads = 0;
    dsq_error err;
    CHECK_INT(dsq_unxz_read(x, o, 65536, &len, &err), 0);
    got += len;
    unsigned long before = allocs;
    CHECK(before > at_start); /* (the count sees liblzma's allocations) */
    while (dsq_unxz_read(x, o, 65536, &len, &err) == 0 && len > 0)
        got += len, reads++;
    CHECK_INT(got, n);
    CHECK(reads > 10);
    CHECK_INT(allocs - before, 0);
    free(o);
    xz_case_free(&c);
}

static void test_setup(void) { CHECK_INT(test_tmpdir_new(tmp), 0); }
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_streams_in_any_block_size), T(test_bytes_after_the_stream),
          T(test_cut_at_every_byte), T(test_damage), T(test_reads_allocate_nothing),
          T(test_teardown))
