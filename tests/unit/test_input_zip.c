/* zip members through dsq_input: their data decoded by ISA-L (unzip.h) while
 * libarchive reads the headers. The differential test: the same zip files, written
 * by libarchive and built here byte by byte (stored and deflated members, sizes
 * after the data, comments, damage, encryption, other methods, bytes before the
 * archive, a cut file), read with libarchive alone and with ISA-L give the same
 * members, the same bytes and the same errors; that ISA-L really decoded the
 * members it should (dsq_input_unzipped), and left the others to libarchive; and
 * that reads allocate nothing. Built without ISA-L, only the libarchive side runs. */
#include <stdint.h>
#include <stdlib.h>

#include "alloc_count.h"
#include "dsq/dsq.h"
#include "input.h"
#include "test.h"
#include "testarchive.h"
#include "testbuf.h"
#include "testgzip.h"
#include "testoutcome.h"
#include "tmpdir.h"
#include "unzip.h"

static char tmp[64];

typedef test_buf buf;

static const char *path_of(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

static void write_file(const char *name, const void *p, size_t n)
{
    CHECK_INT(test_write_file(tmp, name, p, n), 0);
}

#define MAX_MEMBERS TEST_MAX_MEMBERS

typedef test_outcome outcome;
#define outcome_free test_outcome_free
#define prefix test_prefix

static outcome *decode(const char *name, dsq_input_gzip by)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    outcome *o = dsq_input_set_unzip(in, by) == 0 ? test_decode(in, path_of(name)) : NULL;
    dsq_input_free(in);
    return o;
}

/* How the two may differ where a deflated member is damaged: libarchive drops the
 * block it was inflating (ISA-L hands out every byte before the damage), zlib and
 * ISA-L name the damage in their own words, and libarchive may stop reading the
 * archive there, where ISA-L goes on with the next members. */
#define D_DAMAGE 1

/* 1 when b (ISA-L) says what a (libarchive) says about a file. */
static int agree(const outcome *a, const outcome *b, int allow)
{
    if (a->open_rc != b->open_rc)
        return 0;
    if (a->n != b->n && !((allow & D_DAMAGE) && a->n < b->n))
        return 0;
    for (int i = 0; i < a->n && i < MAX_MEMBERS; i++) {
        const buf *x = &a->data[i], *y = &b->data[i];
        if (strcmp(a->name[i], b->name[i]) != 0 || (a->read_rc[i] != 0) != (b->read_rc[i] != 0))
            return 0;
        if (!a->read_rc[i] && (x->n != y->n || !prefix(x, y)))
            return 0;
        if (a->read_rc[i] && !((allow & D_DAMAGE) ? prefix(x, y)
                                                   : x->n == y->n && prefix(x, y) &&
                                                         strcmp(a->read_msg[i], b->read_msg[i]) == 0))
            return 0;
    }
    if (a->n < b->n)
        return 1;
    return (a->next_rc < 0) == (b->next_rc < 0) &&
           ((allow & D_DAMAGE) || strcmp(a->next_msg, b->next_msg) == 0);
}

/* Reads name both ways and checks they agree, and that ISA-L decoded exactly the
 * members in own_mask (bit i: member i). */
static void differ(const char *name, int allow, uint32_t own_mask)
{
    outcome *a = decode(name, DSQ_INPUT_GZIP_LIBARCHIVE);
    outcome *b = decode(name, DSQ_INPUT_GZIP_ISAL);
    if (!b) { /* no ISA-L in this build */
        outcome_free(a);
        return;
    }
    uint32_t own = 0;
    for (int i = 0; i < b->n && i < MAX_MEMBERS; i++)
        own |= (uint32_t)b->own[i] << i;
    for (int i = 0; i < a->n && i < MAX_MEMBERS; i++)
        CHECK_INT(a->own[i], 0);
    if (!agree(a, b, allow) || own != own_mask) {
        fprintf(stderr, "%s: decoded by ISA-L 0x%x, expected 0x%x\n", name, own, own_mask);
        test_outcome_report(name, a, b);
    }
    outcome_free(a);
    outcome_free(b);
}

/* ---- zip files built byte by byte ------------------------------------------------ */

typedef struct zent {
    const char *name;
    const void *data;
    size_t n;
    unsigned method;    /* 0 stored, 8 deflated; another: the data stored under that number */
    unsigned flags;     /* general purpose bits: 8 = sizes in a descriptor after the data */
    uint32_t crc_delta; /* added to the CRC-32 written: a bad CRC */
} zent;

static void put16(buf *b, unsigned v)
{
    unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    test_buf_add(b, x, 2);
}

static void put32(buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    test_buf_add(b, x, 4);
}

/* Raw deflate of p[0..n): a gzip member without its header and trailer. */
static void deflate_raw(buf *out, const void *p, size_t n)
{
    buf g = {0};
    test_gzip_member(&g, tmp, p, n, 0, "gzip");
    test_buf_add(out, g.p + 10, g.n - 18);
    free(g.p);
}

#define DOS_TIME ((21u << 11) | (30u << 5) | 2u)
#define DOS_DATE (((2024u - 1980u) << 9) | (7u << 5) | 20u)

/* A zip of the entries, after `before` (bytes before the archive, its offsets
 * not corrected), with an archive comment. */
static void zip_build(buf *z, const zent *e, int n, const char *before, const char *comment)
{
    uint32_t off[16];
    buf body[16];
    size_t start = strlen(before);
    test_buf_add(z, before, start);
    for (int i = 0; i < n; i++) {
        body[i] = (buf){0};
        if (e[i].method == 8)
            deflate_raw(&body[i], e[i].data, e[i].n);
        else
            test_buf_add(&body[i], e[i].data, e[i].n);
        uint32_t crc = test_crc32(e[i].data, e[i].n) + e[i].crc_delta;
        int dd = (e[i].flags & 8) != 0;
        off[i] = (uint32_t)(z->n - start);
        put32(z, 0x04034b50);
        put16(z, 20), put16(z, e[i].flags), put16(z, e[i].method);
        put16(z, DOS_TIME), put16(z, DOS_DATE);
        put32(z, dd ? 0 : crc), put32(z, dd ? 0 : (uint32_t)body[i].n), put32(z, dd ? 0 : (uint32_t)e[i].n);
        put16(z, (unsigned)strlen(e[i].name)), put16(z, 0);
        test_buf_add(z, e[i].name, strlen(e[i].name));
        test_buf_add(z, body[i].p, body[i].n);
        if (dd) {
            put32(z, 0x08074b50);
            put32(z, crc), put32(z, (uint32_t)body[i].n), put32(z, (uint32_t)e[i].n);
        }
    }
    size_t cd = z->n;
    for (int i = 0; i < n; i++) {
        uint32_t crc = test_crc32(e[i].data, e[i].n) + e[i].crc_delta;
        put32(z, 0x02014b50);
        put16(z, 0x031E), put16(z, 20), put16(z, e[i].flags), put16(z, e[i].method);
        put16(z, DOS_TIME), put16(z, DOS_DATE);
        put32(z, crc), put32(z, (uint32_t)body[i].n), put32(z, (uint32_t)e[i].n);
        put16(z, (unsigned)strlen(e[i].name)), put16(z, 0), put16(z, 0), put16(z, 0), put16(z, 0);
        put32(z, 0100644u << 16), put32(z, off[i]);
        test_buf_add(z, e[i].name, strlen(e[i].name));
        free(body[i].p);
    }
    size_t cd_size = z->n - cd;
    put32(z, 0x06054b50);
    put16(z, 0), put16(z, 0), put16(z, (unsigned)n), put16(z, (unsigned)n);
    put32(z, (uint32_t)cd_size), put32(z, (uint32_t)(cd - start));
    put16(z, (unsigned)strlen(comment));
    test_buf_add(z, comment, strlen(comment));
}

/* ---- the tests ------------------------------------------------------------------- */

static void test_zip_written_by_libarchive(void)
{
    size_t nbig = 1200000;
    char *a = test_log_text(200000, 1), *big = test_log_text(nbig, 2);
    unsigned char *rnd = malloc(300000);
    for (size_t i = 0; i < 300000; i++)
        rnd[i] = (unsigned char)((i * 2654435761u) >> 13);
    buf gz = {0};
    test_gzip_member(&gz, tmp, a, 200000, 0, "gzip");
    test_member m[] = {{"run/a.log", a, 200000, 0}, {"run/empty.log", "", 0, 0},
                       {"run/dir", NULL, 0, 1},     {"run/big.log", big, nbig, 0},
                       {"run/rnd.bin", rnd, 300000, 0}, {"run/nested.log.gz", gz.p, gz.n, 0}};
    test_write_archive(path_of("la.zip"), "zip", "none", m, 6, 1);
    differ("la.zip", 0, 0x1F); /* every member (the directory is not one) */
    free(a);
    free(big);
    free(rnd);
    free(gz.p);
}

static void test_zip_built(void)
{
    char *t = test_log_text(90000, 3), *u = test_log_text(400000, 4);
    zent e[] = {{"node 1/rank0.log", t, 90000, 0, 0, 0}, {"node1/rank1.log", u, 400000, 8, 0, 0},
                {"node1/rank2.log", t, 90000, 8, 8, 0},  {"node1/rank3.log", u, 400000, 0, 8, 0},
                {"node1/empty.log", "", 0, 0, 0, 0},     {"node1/same.log", t, 1000, 8, 0, 0},
                {"node1/same.log", u, 2000, 8, 0, 0}};
    buf z = {0};
    zip_build(&z, e, 7, "", "");
    write_file("built.zip", z.p, z.n);
    differ("built.zip", 0, 0x7F);

    z.n = 0; /* an archive comment that holds the end record's signature */
    zip_build(&z, e, 3, "", "made by PK\005\006 test");
    write_file("comment.zip", z.p, z.n);
    differ("comment.zip", 0, 0x7);

    z.n = 0; /* bytes before the archive: libarchive corrects the offsets, ISA-L leaves it */
    zip_build(&z, e, 3, "#!/bin/sh\nexit 0\n", "");
    write_file("sfx.zip", z.p, z.n);
    differ("sfx.zip", 0, 0);

    z.n = 0; /* cut in the middle: no directory, libarchive reads it as a stream */
    zip_build(&z, e, 4, "", "");
    write_file("cut.zip", z.p, z.n * 3 / 5);
    differ("cut.zip", D_DAMAGE, 0);

    z.n = 0; /* encrypted, and a method ISA-L does not take: libarchive's */
    zent odd[] = {{"a.log", t, 5000, 0, 1, 0}, {"b.log", t, 5000, 8, 0, 0},
                  {"c.log", t, 5000, 12, 0, 0}, {"d.log", t, 5000, 0, 0, 0}};
    zip_build(&z, odd, 4, "", "");
    write_file("odd.zip", z.p, z.n);
    differ("odd.zip", 0, 0x2 | 0x8);
    free(z.p);
    free(t);
    free(u);
}

static void test_zip_damage(void)
{
    char *t = test_log_text(300000, 5);
    buf z = {0};
    /* a stored member's CRC: all its bytes, then the same message */
    zent s[] = {{"a.log", t, 3000, 0, 0, 0}, {"b.log", t, 300000, 0, 0, 7}, {"c.log", t, 3000, 0, 0, 0}};
    zip_build(&z, s, 3, "", "");
    write_file("storedcrc.zip", z.p, z.n);
    differ("storedcrc.zip", 0, 0x7);

    z.n = 0; /* a deflated member's CRC */
    zent d[] = {{"a.log", t, 3000, 8, 0, 0}, {"b.log", t, 300000, 8, 0, 7}, {"c.log", t, 3000, 8, 0, 0}};
    zip_build(&z, d, 3, "", "");
    write_file("deflcrc.zip", z.p, z.n);
    differ("deflcrc.zip", D_DAMAGE, 0x7);
    outcome *o = decode("deflcrc.zip", DSQ_INPUT_GZIP_ISAL);
    if (o) { /* every byte, then the CRC */
        CHECK_INT(o->data[1].n, 300000);
        CHECK(strstr(o->read_msg[1], "ZIP bad CRC") != NULL);
        CHECK_INT(o->read_rc[2], 0);
        outcome_free(o);
    }

    z.n = 0; /* a deflated member's bytes */
    zip_build(&z, d, 3, "", "");
    char *hit = memmem(z.p, z.n, "b.log", 5) + 5 + 20000;
    for (int i = 0; i < 64; i++)
        hit[i] = (char)(hit[i] ^ 0x5A);
    write_file("deflbad.zip", z.p, z.n);
    differ("deflbad.zip", D_DAMAGE, 0x7);
    o = decode("deflbad.zip", DSQ_INPUT_GZIP_ISAL);
    if (o) { /* named, and the next member read */
        CHECK(o->read_rc[1] != 0);
        CHECK(strstr(o->read_msg[1], "ZIP") != NULL);
        CHECK_INT(o->n, 3);
        CHECK_INT(o->data[2].n, 3000);
        outcome_free(o);
    }
    free(z.p);
    free(t);
}

static void test_zip_reads_allocate_nothing(void)
{
    if (!dsq_unzip_available())
        return;
    size_t n = 2000000;
    char *t = test_log_text(n, 9);
    zent e[] = {{"a.log", t, n, 8, 0, 0}, {"b.log", t, n, 0, 0, 0}};
    buf z = {0};
    zip_build(&z, e, 2, "", "");
    write_file("alloc.zip", z.p, z.n);
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_member_info mi;
    CHECK_INT(dsq_input_open(in, path_of("alloc.zip"), &err), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        CHECK_INT(dsq_input_unzipped(in), 1);
        unsigned long before = allocs;
        size_t got = 0, len, chunks = 0;
        const char *d;
        while (dsq_input_read(in, &d, &len, &err) == 0 && len > 0)
            got += len, chunks++;
        CHECK_INT(got, n);
        CHECK_INT(allocs - before, 0);
    }
    dsq_input_free(in);
    free(z.p);
    free(t);
}

static void test_setup(void) { CHECK_INT(test_tmpdir_new(tmp), 0); }
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_zip_written_by_libarchive), T(test_zip_built), T(test_zip_damage),
          T(test_zip_reads_allocate_nothing), T(test_teardown))
