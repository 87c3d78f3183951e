/* gzip through dsq_input, in the three places ISA-L decodes it: a whole .gz file,
 * a .gz member of a tar, and the gzip layer under a tar. What each reports (cut
 * and corrupt streams, bad CRCs, bytes after the stream, magic bytes without
 * gzip, empty streams, binary content, the decompression-bomb limit), that reads
 * allocate nothing, and the differential test: the same inputs, generated and
 * from the corpus, read with libarchive's gzip reader and with ISA-L give the same
 * members, the same bytes and the same errors. Built without ISA-L, only the
 * libarchive side runs. */
#include <dirent.h>
#include <stdlib.h>

#include "alloc_count.h"
#include "dsq/dsq.h"
#include "gunzip.h"
#include "input.h"
#include "test.h"
#include "testarchive.h"
#include "testbuf.h"
#include "testgzip.h"
#include "testoutcome.h"
#include "tmpdir.h"

static char tmp[64];

typedef test_buf buf;

static const char *path_of(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

#define MAX_MEMBERS TEST_MAX_MEMBERS

typedef test_outcome outcome;
#define outcome_free test_outcome_free

static outcome *decode(const char *name, dsq_input_gzip by)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    outcome *o = dsq_input_set_gzip(in, by) == 0 ? test_decode(in, path_of(name)) : NULL;
    dsq_input_free(in);
    return o;
}

/* ---- the differential test ---------------------------------------------------------- */

/* How the two may differ, each a known gap of libarchive's gzip reader. */
#define D_CRC 1   /* it does not check CRC-32 and length: only ISA-L fails */
#define D_EMPTY 2 /* it refuses an empty .gz member ("Unrecognized archive format") */
#define D_TRAIL 4 /* it does not look past a tar.gz's stream: only ISA-L reports the garbage */

static int any_error_after(const outcome *o, int i)
{
    for (int k = i + 1; k < o->n && k < MAX_MEMBERS; k++)
        if (o->read_rc[k])
            return 1;
    return o->next_rc < 0;
}

#define prefix test_prefix

static int same(const buf *x, const buf *y) { return x->n == y->n && prefix(x, y); }

/* 1 when b (ISA-L) says what a (libarchive) says about a file: the same members
 * with the same bytes and the same errors, the messages aside, and the same first
 * 64 KiB chunk (the indexer keeps a hash of it). One way they may
 * differ everywhere: libarchive drops the block it was inflating when it meets
 * damage (and may fail at the open), ISA-L hands out everything before it and
 * reports the damage there or later (a tar.gz's end is checked after the tar). */
static int agree(const outcome *a, const outcome *b, int allow)
{
    if (a->open_rc != 0)
        return b->open_rc == a->open_rc || (a->n == 0 && b->open_rc == 0 && any_error_after(b, -1));
    if (b->open_rc != 0)
        return 0;
    int n = a->n < b->n ? a->n : b->n;
    for (int i = 0; i < n && i < MAX_MEMBERS; i++) {
        const buf *x = &a->data[i], *y = &b->data[i];
        int ea = a->read_rc[i] != 0, eb = b->read_rc[i] != 0;
        if (strcmp(a->name[i], b->name[i]) != 0)
            return 0;
        if (!ea && !eb && (!same(x, y) || a->first[i] != b->first[i]))
            return 0;
        if (ea && eb && !prefix(x, y))
            return 0;
        if (ea && !eb) { /* libarchive stopped here; ISA-L must report it later */
            int empty_ok = (allow & D_EMPTY) && y->n == 0 &&
                           strstr(a->read_msg[i], "Unrecognized archive format");
            if (!empty_ok && (!prefix(x, y) || i != a->n - 1 || !any_error_after(b, i)))
                return 0;
            if (!empty_ok)
                return 1;
        }
        if (!ea && eb &&
            !((allow & D_CRC) && strstr(b->read_msg[i], "CRC-32") && same(x, y)))
            return 0;
    }
    if (a->n != b->n)
        return 0;
    if ((a->next_rc < 0) == (b->next_rc < 0))
        return 1;
    return b->next_rc < 0 && (((allow & D_CRC) && strstr(b->next_msg, "CRC-32") != NULL) ||
                              ((allow & D_TRAIL) && strstr(b->next_msg, "trailing garbage") != NULL));
}

/* Reads name through libarchive's reader and through ISA-L and checks they
 * agree; with D_CRC, also that ISA-L saw the bad CRC-32 or length. */
static void differ(const char *name, int allow)
{
    outcome *a = decode(name, DSQ_INPUT_GZIP_LIBARCHIVE);
    outcome *b = decode(name, DSQ_INPUT_GZIP_ISAL);
    if (!b) { /* no ISA-L in this build */
        outcome_free(a);
        return;
    }
    int bad = !agree(a, b, allow);
    if (allow & D_TRAIL)
        bad |= !(b->next_rc < 0 && strstr(b->next_msg, "7 bytes of trailing garbage after the gzip"));
    if (allow & D_CRC) {
        int seen = b->next_rc < 0 && strstr(b->next_msg, "CRC-32");
        for (int i = 0; i < b->n && i < MAX_MEMBERS; i++)
            seen |= b->read_rc[i] != 0 && strstr(b->read_msg[i], "CRC-32") != NULL;
        bad |= !seen;
    }
    if (bad)
        test_outcome_report(name, a, b);
    outcome_free(a);
    outcome_free(b);
}

/* A 512-byte ustar header of a regular file. */
static void tar_header(buf *out, const char *name, uint64_t size)
{
    unsigned char h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011o", 1721511005u);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    test_buf_add(out, h, 512);
}

static void write_file(const char *name, const void *p, size_t n)
{
    CHECK_INT(test_write_file(tmp, name, p, n), 0);
}

static void gz(buf *out, const void *p, size_t n) { test_gzip_member(out, tmp, p, n, 0, "gzip"); }

/* The same gzip bytes as a file, and as a member of a tar before a plain one. */
static void differ_both_ways(const char *name, const buf *z, int allow)
{
    char n2[128];
    write_file(name, z->p, z->n);
    differ(name, allow & ~D_EMPTY);
    test_member m[] = {{"node1.log.gz", z->p, z->n, 0}, {"node2.log", "plain\n", 6, 0}};
    snprintf(n2, sizeof n2, "in-%s.tar", name);
    test_write_archive(path_of(n2), "pax", "none", m, 2, 0);
    differ(n2, allow);
}

static void test_differential_generated(void)
{
    size_t n = 300000;
    char *t = test_log_text(n, 21);
    buf one = {0}, multi = {0}, z = {0};
    gz(&one, t, n);
    test_gzip_member(&multi, tmp, t, n / 3, TGZ_FNAME | TGZ_FHCRC | TGZ_FEXTRA | TGZ_FCOMMENT,
                     "gzip");
    test_gzip_member(&multi, tmp, "", 0, 0, "gzip");
    test_gzip_member(&multi, tmp, t + n / 3, n - n / 3, 0, "gzip-1");
    differ_both_ways("one.gz", &one, 0);
    differ_both_ways("multi.gz", &multi, 0);
    const char *tails[] = {"\0\0\0\0\0\0\0\0", "GARBAGE after it\n", "\x1f\x8bjunk", "\x1f"};
    const size_t tl[] = {8, 17, 6, 1};
    for (int i = 0; i < 4; i++) {
        char nm[32];
        z.n = 0;
        test_buf_add(&z, one.p, one.n);
        test_buf_add(&z, tails[i], tl[i]);
        snprintf(nm, sizeof nm, "tail%d.gz", i);
        differ_both_ways(nm, &z, 0);
    }
    const size_t cuts[] = {5, 12, one.n / 3, one.n - 9, one.n - 1};
    for (int i = 0; i < 5; i++) {
        char nm[32];
        z.n = 0;
        test_buf_add(&z, one.p, cuts[i]);
        snprintf(nm, sizeof nm, "cut%d.gz", i);
        differ_both_ways(nm, &z, 0);
    }
    z.n = 0; /* damaged deflate data */
    test_buf_add(&z, one.p, one.n);
    for (size_t k = 0; k < 64; k++)
        z.p[z.n / 2 + k] ^= 0x55;
    differ_both_ways("corrupt.gz", &z, D_CRC);
    z.p[z.n / 2] ^= 0x55; /* or only a CRC */
    memcpy(z.p, one.p, one.n);
    z.p[one.n - 6] ^= 1;
    differ_both_ways("badcrc.gz", &z, D_CRC);
    z.n = 0;
    test_buf_add(&z, "\x1f\x8bjunk junk junk junk junk", 26);
    differ_both_ways("fake.gz", &z, 0);
    z.n = 0;
    gz(&z, "", 0);
    differ_both_ways("empty.gz", &z, D_EMPTY);
    char *junk = malloc(20000);
    for (size_t i = 0; i < 20000; i++)
        junk[i] = (char)((i * 2654435761u) >> 13);
    z.n = 0;
    gz(&z, junk, 20000);
    differ_both_ways("binary.gz", &z, 0);
    free(junk);
    free(one.p);
    free(multi.p);
    free(z.p);
    free(t);
}

/* tar.gz: the gzip layer under a tar, whole, in several gzip members, cut, with
 * garbage after it, holding .gz members; gzip'd content libarchive must parse. */
static void test_differential_tar_gz(void)
{
    size_t n = 200000;
    char *t = test_log_text(n, 23);
    buf g1 = {0}, tarb = {0}, z = {0};
    gz(&g1, t, n / 2);
    test_member m[] = {{"run/node1.log", t, n, 0},
                       {"run/dir", NULL, 0, 1},
                       {"run/node2.log.gz", g1.p, g1.n, 0},
                       {"run/node3.log", t, n / 4, 0}};
    test_write_archive(path_of("run.tar"), "pax", "none", m, 4, 1);
    test_write_archive(path_of("run.tar.gz"), "pax", "gzip", m, 4, 1);
    differ("run.tar.gz", 0);
    CHECK_INT(test_read_file(path_of("run.tar"), &tarb), 0);
    size_t half = tarb.n / 2; /* the tar in two gzip members, split mid-header */
    gz(&z, tarb.p, half + 100);
    gz(&z, tarb.p + half + 100, tarb.n - half - 100);
    write_file("split.tar.gz", z.p, z.n);
    differ("split.tar.gz", 0);
    buf whole = {0};
    CHECK_INT(test_read_file(path_of("run.tar.gz"), &whole), 0);
    const size_t cuts[] = {whole.n / 3, whole.n - 9, whole.n - 1};
    for (int i = 0; i < 3; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "cut%d.tar.gz", i);
        write_file(nm, whole.p, cuts[i]);
        differ(nm, 0);
    }
    z.n = 0;
    test_buf_add(&z, whole.p, whole.n);
    test_buf_add(&z, "GARBAGE", 7);
    write_file("trail.tar.gz", z.p, z.n);
    differ("trail.tar.gz", D_TRAIL);
    z.p[z.n - 7 - 6] ^= 1; /* the gzip CRC of the tar: only ISA-L sees it */
    write_file("badcrc.tar.gz", z.p, z.n - 7);
    differ("badcrc.tar.gz", D_CRC);
    char zeros[1024] = {0}; /* an empty tar: its end-of-archive blocks */
    z.n = 0;
    gz(&z, zeros, sizeof zeros);
    write_file("emptytar.gz", z.p, z.n);
    differ("emptytar.gz", 0);
    test_member x = {"x", t, n, 0}; /* gzip'd xz, gzip'd zip: libarchive parses them */
    test_write_archive(path_of("x.xz"), "raw", "xz", &x, 1, 0);
    test_write_archive(path_of("x.zip"), "zip", "none", &x, 1, 0);
    const char *inner[] = {"x.xz", "x.zip"}, *outer[] = {"xz.gz", "zip.gz"};
    for (int i = 0; i < 2; i++) {
        buf b = {0};
        CHECK_INT(test_read_file(path_of(inner[i]), &b), 0);
        z.n = 0;
        gz(&z, b.p, b.n);
        write_file(outer[i], z.p, z.n);
        differ(outer[i], 0);
        free(b.p);
    }
    free(whole.p);
    free(tarb.p);
    free(g1.p);
    free(z.p);
    free(t);
}

/* Every corpus log, gzip'd alone, as a member of a tar, and all in one tar.gz. */
static void test_differential_corpus(void)
{
    const char *dir = getenv("DSQ_CORPUS");
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        printf("  (no corpus: DSQ_CORPUS unset or unreadable)\n");
        return;
    }
    test_member all[MAX_MEMBERS - 2];
    buf data[MAX_MEMBERS - 2];
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < MAX_MEMBERS - 2) {
        size_t l = strlen(e->d_name);
        char p[1024];
        if (e->d_name[0] == '.')
            continue;
        int is_gz = l > 3 && strcmp(e->d_name + l - 3, ".gz") == 0;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        data[k] = (buf){0};
        if (test_read_file(p, &data[k]) != 0)
            continue;
        buf z = {0};
        if (is_gz) /* a corpus .gz as it is */
            test_buf_add(&z, data[k].p, data[k].n);
        else
            gz(&z, data[k].p, data[k].n);
        differ_both_ways("corpus.gz", &z, 0);
        free(z.p);
        all[k] = (test_member){e->d_name, data[k].p, data[k].n, 0};
        k++;
    }
    closedir(d);
    test_write_archive(path_of("corpus.tar.gz"), "pax", "gzip", all, k, 1);
    differ("corpus.tar.gz", 0);
    printf("  %d corpus files\n", k);
    for (int i = 0; i < k; i++)
        free(data[i].p);
}

/* ---- what the ISA-L paths report --------------------------------------------------- */

static int has(const char *msg, const char *what) { return strstr(msg, what) != NULL; }

/* A .gz file: multi-member, cut, bad CRC, trailing bytes, no gzip, empty, binary. */
static void test_gzip_file(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 250000;
    char *t = test_log_text(n, 31);
    buf z = {0};
    gz(&z, t, n / 2);
    gz(&z, t + n / 2, n - n / 2);
    size_t zn = z.n;
    write_file("multi.gz", z.p, z.n);
    outcome *o = decode("multi.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->n, 1);
    CHECK_INT(o->read_rc[0], 0);
    CHECK(o->data[0].n == n && memcmp(o->data[0].p, t, n) == 0);
    outcome_free(o);
    write_file("cut.gz", z.p, zn - 2000);
    o = decode("cut.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->read_rc[0], DSQ_EFORMAT);
    CHECK(has(o->read_msg[0], "gzip: truncated input (the stream ends inside member 2"));
    CHECK(o->data[0].n > n / 2 && memcmp(o->data[0].p, t, o->data[0].n) == 0);
    outcome_free(o);
    z.p[zn - 8] ^= 0x10;
    write_file("crc.gz", z.p, zn);
    o = decode("crc.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->read_rc[0], DSQ_EFORMAT);
    CHECK(has(o->read_msg[0], "CRC-32 or length in the member's trailer does not match"));
    CHECK(o->data[0].n == n && memcmp(o->data[0].p, t, n) == 0);
    outcome_free(o);
    z.p[zn - 8] ^= 0x10;
    test_buf_add(&z, "GARBAGE", 7);
    write_file("trail.gz", z.p, z.n);
    o = decode("trail.gz", DSQ_INPUT_GZIP_ISAL);
    char want[96];
    snprintf(want, sizeof want, "7 bytes of trailing garbage after the gzip data (at byte %zu)", zn);
    CHECK_STR(o->read_msg[0], want);
    CHECK_INT(o->data[0].n, n);
    outcome_free(o);
    memset(z.p + zn, 0, 7);
    write_file("pad.gz", z.p, z.n);
    o = decode("pad.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->read_rc[0], 0);
    CHECK_INT(o->data[0].n, n);
    outcome_free(o);
    write_file("fake.gz", "\x1f\x8bnot gzip, just text\n", 22);
    o = decode("fake.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->n, 0);
    CHECK_INT(o->next_rc, DSQ_EFORMAT);
    CHECK_STR(o->next_msg, "starts with gzip magic bytes but is no valid gzip data");
    outcome_free(o);
    z.n = 0;
    gz(&z, "", 0);
    write_file("empty.gz", z.p, z.n);
    o = decode("empty.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->n, 1);
    CHECK_INT(o->read_rc[0], 0);
    CHECK_INT(o->data[0].n, 0);
    CHECK_INT(o->next_rc, 0);
    outcome_free(o);
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)((i * 2654435761u) >> 11);
    z.n = 0;
    gz(&z, junk, sizeof junk);
    write_file("core.bin.gz", z.p, z.n);
    o = decode("core.bin.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK(has(o->read_msg[0], "binary data, not text"));
    outcome_free(o);
    free(z.p);
    free(t);
}

/* .gz members of a tar: each error stays with its member, the next is read. */
static void test_gzip_members(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 100000;
    char *t = test_log_text(n, 33);
    buf multi = {0}, cut = {0}, crc = {0}, trail = {0}, empty = {0};
    buf *each[] = {&multi, &cut, &crc, &trail};
    for (int i = 0; i < 4; i++) { /* two members each; the same bytes every time */
        gz(each[i], t, n / 2);
        gz(each[i], t + n / 2, n - n / 2);
    }
    cut.n -= 500;
    crc.p[crc.n - 3] ^= 1; /* ISIZE */
    test_buf_add(&trail, "GARBAGE", 7);
    gz(&empty, "", 0);
    const char *fake = "\x1f\x8bnot gzip, just text\n";
    test_member m[] = {{"a.log.gz", multi.p, multi.n, 0}, {"b.log.gz", cut.p, cut.n, 0},
                       {"c.log.gz", crc.p, crc.n, 0},     {"d.log.gz", trail.p, trail.n, 0},
                       {"e.log.gz", fake, 22, 0},         {"f.log.gz", empty.p, empty.n, 0},
                       {"g.log", "plain\n", 6, 0}};
    test_write_archive(path_of("members.tar"), "pax", "none", m, 7, 0);
    outcome *o = decode("members.tar", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->n, 7);
    CHECK_INT(o->next_rc, 0);
    CHECK(o->data[0].n == n && memcmp(o->data[0].p, t, n) == 0 && o->read_rc[0] == 0);
    CHECK(has(o->read_msg[1], "gzip: truncated input"));
    CHECK(o->data[1].n > n / 2 && memcmp(o->data[1].p, t, o->data[1].n) == 0);
    CHECK(has(o->read_msg[2], "CRC-32 or length"));
    CHECK(o->data[2].n == n && memcmp(o->data[2].p, t, n) == 0);
    CHECK(has(o->read_msg[3], "7 bytes of trailing garbage after the gzip data (at byte"));
    CHECK_INT(o->data[3].n, n); /* bytes after a member's stream: after all of its data */
    CHECK_STR(o->read_msg[4], "starts with gzip magic bytes but is no valid gzip data");
    CHECK_INT(o->read_rc[5], 0);
    CHECK_INT(o->data[5].n, 0);
    CHECK(o->data[6].n == 6 && o->read_rc[6] == 0);
    outcome_free(o);
    free(multi.p);
    free(cut.p);
    free(crc.p);
    free(trail.p);
    free(empty.p);
    free(t);
}

/* The gzip layer under a tar: members before the damage are read whole, then the
 * damage is named; a bad CRC at the end of the stream is reported after the tar. */
static void test_gzip_layer(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 300000;
    char *t = test_log_text(n, 35);
    test_member m[] = {{"a.log", t, n, 0}, {"b.log", t, n, 0}, {"c.log", t, 1000, 0}};
    test_write_archive(path_of("l.tar.gz"), "pax", "gzip", m, 3, 0);
    buf z = {0};
    CHECK_INT(test_read_file(path_of("l.tar.gz"), &z), 0);
    write_file("lcut.tar.gz", z.p, z.n * 3 / 4);
    outcome *o = decode("lcut.tar.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK(o->n >= 1 && o->data[0].n == n && o->read_rc[0] == 0);
    CHECK(o->next_rc < 0 || (o->n >= 2 && o->read_rc[o->n - 1] < 0));
    CHECK(has(o->n >= 2 && o->read_rc[o->n - 1] < 0 ? o->read_msg[o->n - 1] : o->next_msg,
              "gzip: truncated input"));
    outcome_free(o);
    z.p[z.n - 7] ^= 1;
    write_file("lcrc.tar.gz", z.p, z.n);
    o = decode("lcrc.tar.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->n, 3);
    CHECK(o->read_rc[0] == 0 && o->read_rc[1] == 0 && o->read_rc[2] == 0);
    CHECK_INT(o->next_rc, DSQ_EFORMAT);
    CHECK(has(o->next_msg, "CRC-32 or length"));
    outcome_free(o);
    free(z.p);
    free(t);
}

/* The decompression-bomb limit in all three places, and a skipped member of a
 * tar.gz counted against it before it is inflated. The inputs are one gzip member
 * of 64 MiB repeated: 1.25 GiB from about 1.3 MB, over 1000 times the file size. */
static void test_gzip_bomb(void)
{
    if (!dsq_gunzip_available())
        return;
    const size_t chunk = (size_t)64 << 20, reps = 20;
    char *text = malloc(chunk), *bin = malloc(chunk);
    for (size_t i = 0; i < chunk; i++) {
        text[i] = 'A'; /* deflate's best ratio (about 1030:1) needs runs */
        bin[i] = (char)(1 + i % 4);
    }
    buf gt = {0}, gb = {0}, f = {0}, good = {0};
    gz(&gt, text, chunk);
    gz(&gb, bin, chunk);
    gz(&good, "node2 was here\n", 15);
    for (size_t i = 0; i < reps; i++)
        test_buf_add(&f, gt.p, gt.n);
    write_file("bomb.log.gz", f.p, f.n);
    test_member m = {"bomb.log.gz", f.p, f.n, 0};
    test_write_archive(path_of("bomb-member.tar"), "pax", "none", &m, 1, 0);
    const char *names[] = {"bomb.log.gz", "bomb-member.tar", "bomb.tar.gz"};
    buf tz = {0}, hb = {0}; /* bomb.tar.gz: a tar header, the text, the end, gzip'd */
    tar_header(&hb, "big.log", (uint64_t)chunk * reps);
    gz(&tz, hb.p, hb.n);
    test_buf_add(&tz, f.p, f.n);
    char zeros[1024] = {0};
    gz(&tz, zeros, sizeof zeros);
    write_file("bomb.tar.gz", tz.p, tz.n);
    for (int i = 0; i < 3; i++) {
        outcome *o = decode(names[i], DSQ_INPUT_GZIP_ISAL);
        CHECK_INT(o->n, 1);
        CHECK_INT(o->read_rc[0], DSQ_ELIMIT);
        if (!has(o->read_msg[0], "decompression bomb"))
            fprintf(stderr, "%s: %s\n", names[i], o->read_msg[0]);
        CHECK(has(o->read_msg[0], "decompression bomb"));
        CHECK(has(o->read_msg[0], "1 GiB and 1000x the file size"));
        CHECK(o->data[0].n > ((size_t)1 << 30) && o->data[0].n < chunk * reps);
        CHECK_INT(o->next_rc, 0);
        outcome_free(o);
    }
    tz.n = 0; /* a binary member (refused), then a log: getting there means decoding it */
    hb.n = 0;
    tar_header(&hb, "core.bin", (uint64_t)chunk * reps);
    gz(&tz, hb.p, hb.n);
    for (size_t i = 0; i < reps; i++)
        test_buf_add(&tz, gb.p, gb.n);
    hb.n = 0;
    tar_header(&hb, "node2.log", 15);
    test_buf_add(&hb, "node2 was here\n", 15);
    test_buf_add(&hb, zeros, 512 - 15); /* data padded to 512 */
    test_buf_add(&hb, zeros, 1024);     /* the end of the archive */
    gz(&tz, hb.p, hb.n);
    write_file("skip.tar.gz", tz.p, tz.n);
    outcome *o = decode("skip.tar.gz", DSQ_INPUT_GZIP_ISAL);
    CHECK_INT(o->n, 1);
    CHECK(has(o->read_msg[0], "binary data"));
    CHECK_INT(o->next_rc, DSQ_ELIMIT);
    CHECK(has(o->next_msg, "skipping past member core.bin would decode"));
    outcome_free(o);
    free(hb.p);
    free(tz.p);
    free(gt.p);
    free(gb.p);
    free(good.p);
    free(f.p);
    free(text);
    free(bin);
}

/* After the open and next_member, reading a gzip'd member allocates nothing, in
 * any of the three places. */
static void test_gzip_reads_allocate_nothing(void)
{
    if (!dsq_gunzip_available())
        return;
    size_t n = 3000000;
    char *t = test_log_text(n, 37);
    buf z = {0};
    gz(&z, t, n);
    write_file("alloc.gz", z.p, z.n);
    test_member m[] = {{"a.log.gz", z.p, z.n, 0}};
    test_write_archive(path_of("alloc.tar"), "pax", "none", m, 1, 0);
    test_member p[] = {{"a.log", t, n, 0}};
    test_write_archive(path_of("alloc.tar.gz"), "pax", "gzip", p, 1, 0);
    const char *names[] = {"alloc.gz", "alloc.tar", "alloc.tar.gz"};
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    for (int i = 0; i < 3; i++) {
        dsq_error err;
        dsq_member_info mi;
        CHECK_INT(dsq_input_open(in, path_of(names[i]), &err), 0);
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        unsigned long before = allocs;
        size_t got = 0, len, chunks = 0;
        const char *d;
        while (dsq_input_read(in, &d, &len, &err) == 0 && len > 0)
            got += len, chunks++;
        CHECK_INT(got, n);
        CHECK(chunks > 1);
        if (allocs != before)
            fprintf(stderr, "%s: %lu allocations in %zu reads\n", names[i], allocs - before,
                    chunks);
        CHECK_INT(allocs - before, 0);
        dsq_input_close(in);
    }
    dsq_input_free(in);
    free(z.p);
    free(t);
}

static void test_setup(void) { CHECK_INT(test_tmpdir_new(tmp), 0); }
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_gzip_file), T(test_gzip_members), T(test_gzip_layer),
          T(test_gzip_reads_allocate_nothing), T(test_differential_generated),
          T(test_differential_tar_gz), T(test_differential_corpus), T(test_gzip_bomb),
          T(test_teardown))
