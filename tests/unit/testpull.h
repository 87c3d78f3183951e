/* The stream decoders' tests (test_gunzip, test_unxz): a block source handing out
 * its input step bytes at a time (failing once fail_at is reached), and one decode
 * loop over either decoder. */
#ifndef DSQ_TEST_TESTPULL_H
#define DSQ_TEST_TESTPULL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pull.h"
#include "test.h"
#include "testbuf.h"

typedef struct test_source {
    const unsigned char *p;
    size_t n, pos, step;
    size_t fail_at; /* the pull fails once pos reaches this (SIZE_MAX: never) */
} test_source;

static inline int test_pull(void *ctx, const unsigned char **buf, size_t *len, dsq_error *err)
{
    test_source *s = ctx;
    if (s->pos >= s->fail_at)
        return dsq_error_set(err, DSQ_EIO, "the source broke");
    size_t k = s->n - s->pos < s->step ? s->n - s->pos : s->step;
    if (s->fail_at - s->pos < k)
        k = s->fail_at - s->pos;
    *buf = s->p + s->pos;
    *len = k;
    s->pos += k;
    return 0;
}

typedef struct test_result {
    test_buf out;
    int rc;
    dsq_error err;
    int ended;
    uint64_t end_at;
} test_result;

/* A decoder's handle and its functions (dsq_gunzip_*, dsq_unxz_*); units: the
 * members (streams) whose header was read. */
typedef struct test_decoder {
    void *d;
    void (*start)(void *d, dsq_pull_fn pull, void *ctx);
    int (*read)(void *d, unsigned char *out, size_t cap, size_t *len, dsq_error *err);
    int (*end)(const void *d, uint64_t *at);
    uint64_t (*bytes_in)(const void *d);
    uint64_t (*units)(const void *d);
} test_decoder;

/* Decodes p[0..n) pulled step bytes at a time, read cap bytes at a time. */
static inline void test_decode(const test_decoder *dec, const void *p, size_t n, size_t step,
                               size_t cap, size_t fail_at, test_result *r)
{
    test_source s = {p, n, 0, step, fail_at};
    unsigned char *o = malloc(cap);
    r->out.n = 0;
    dsq_error_clear(&r->err);
    dec->start(dec->d, test_pull, &s);
    size_t len = 0;
    for (int guard = 0; guard < 10000000; guard++) {
        r->rc = dec->read(dec->d, o, cap, &len, &r->err);
        if (r->rc < 0 || len == 0)
            break;
        CHECK(len <= cap);
        test_buf_add(&r->out, o, len);
    }
    if (r->rc < 0) /* it stays failed */
        CHECK_INT(dec->read(dec->d, o, cap, &len, NULL), r->rc);
    r->ended = dec->end(dec->d, &r->end_at);
    free(o);
}

/* z decoded in blocks of every size and read in pieces of every size (but pairs of
 * small ones: slow, and they add nothing): every run gives want, ends at end_at,
 * consumes all of z and reads `units` members (streams). */
static inline void test_decode_every_size(const test_decoder *dec, const test_buf *z,
                                          const test_buf *want, uint64_t end_at, uint64_t units)
{
    const size_t steps[] = {1, 2, 3, 7, 509, 65536, SIZE_MAX};
    const size_t caps[] = {1, 13, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        for (size_t j = 0; j < sizeof caps / sizeof *caps; j++) {
            if (steps[i] < 8 && caps[j] < 4096)
                continue;
            test_result r = {0};
            test_decode(dec, z->p, z->n, steps[i], caps[j], SIZE_MAX, &r);
            if (r.rc != 0 || r.out.n != want->n || memcmp(r.out.p, want->p, want->n) != 0)
                fprintf(stderr, "step %zu cap %zu: rc %d (%s), %zu bytes\n", steps[i], caps[j],
                        r.rc, r.err.msg, r.out.n);
            CHECK_INT(r.rc, 0);
            CHECK_INT(r.out.n, want->n);
            CHECK(r.out.n == want->n && memcmp(r.out.p, want->p, want->n) == 0);
            CHECK_INT(r.ended, 1);
            CHECK_INT(r.end_at, end_at);
            CHECK_INT(dec->bytes_in(dec->d), z->n);
            CHECK_INT(dec->units(dec->d), units);
            free(r.out.p);
        }
}

/* Defines decode(handle, p, n, step, cap, fail_at, result), test_decode over the
 * decoder whose functions are PREFIX_start, _read, _end, _bytes_in and UNITS
 * (dsq_gunzip, dsq_unxz), whose handle is a TYPE *; and every_size(handle, z, want,
 * end_at, units), test_decode_every_size over it. */
#define TEST_PULL_DECODE(TYPE, PREFIX, UNITS)                                               \
    static void decode_start(void *d, dsq_pull_fn pull, void *ctx)                         \
    {                                                                                       \
        PREFIX##_start(d, pull, ctx);                                                       \
    }                                                                                       \
    static int decode_read(void *d, unsigned char *o, size_t cap, size_t *len,              \
                           dsq_error *err)                                                  \
    {                                                                                       \
        return PREFIX##_read(d, o, cap, len, err);                                          \
    }                                                                                       \
    static int decode_end(const void *d, uint64_t *at) { return PREFIX##_end(d, at); }      \
    static uint64_t decode_bytes_in(const void *d) { return PREFIX##_bytes_in(d); }         \
    static uint64_t decode_units(const void *d) { return UNITS(d); }                        \
    static void decode(TYPE *h, const void *p, size_t n, size_t step, size_t cap,           \
                       size_t fail_at, test_result *r)                                      \
    {                                                                                       \
        test_decoder dec = {h, decode_start, decode_read, decode_end, decode_bytes_in,      \
                            decode_units};                                                  \
        test_decode(&dec, p, n, step, cap, fail_at, r);                                     \
    }                                                                                       \
    static void every_size(TYPE *h, const test_buf *z, const test_buf *want, uint64_t end_at, \
                           uint64_t units)                                                  \
    {                                                                                       \
        test_decoder dec = {h, decode_start, decode_read, decode_end, decode_bytes_in,      \
                            decode_units};                                                  \
        test_decode_every_size(&dec, z, want, end_at, units);                               \
    }

#endif
