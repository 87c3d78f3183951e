/* Input decoding: every container and compression the spec lists, detected by
 * magic (names are made misleading on purpose), member names in order, and the
 * exact bytes read back. Inputs are made in a temp dir with libzstd and
 * libarchive's write API. Damaged inputs must give an error after what could be
 * read, never a crash. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "dsq/dsq.h"
#include "dict.h"
#include "gunzip.h"
#include "input.h"
#include "mapped.h"
#include "test.h"
#include "testarchive.h"
#include "testbuf.h"
#include "tmpdir.h"

static char tmp[64];

typedef test_buf buf;

typedef test_member member;

static const char *path_of(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

/* An archive in tmp (testarchive.h). */
static void write_archive(const char *name, const char *format, const char *filter,
                          const member *m, int n)
{
    test_write_archive(path_of(name), format, filter, m, n, 0);
}

/* zstd frame(s) of data, appended to out. */
static void zstd_frame(buf *out, const void *data, size_t n, int level)
{
    size_t cap = ZSTD_compressBound(n);
    void *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, data, n, level);
    CHECK(!ZSTD_isError(zn));
    test_buf_add(out, z, zn);
    free(z);
}

/* A zstd frame of data at level 1 with a window of 2^wlog bytes, appended to out. */
static void zstd_frame_window(buf *out, const void *data, size_t n, int wlog)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(n);
    void *z = malloc(cap);
    CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1)));
    CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, wlog)));
    size_t zn = ZSTD_compress2(c, z, cap, data, n);
    CHECK(!ZSTD_isError(zn));
    test_buf_add(out, z, zn);
    free(z);
    ZSTD_freeCCtx(c);
}

/* Reads the current member to its end into out; returns the last status. */
static int read_member(dsq_input *in, buf *out, dsq_error *err)
{
    out->n = 0;
    for (int guard = 0; guard < 1000000; guard++) {
        const char *data;
        size_t len;
        int rc = dsq_input_read(in, &data, &len, err);
        if (rc)
            return rc;
        if (len == 0)
            return 0;
        test_buf_add(out, data, len);
    }
    return -1;
}

/* Opens name, checks its format and that its members are exactly `want`. */
static void expect_file(const char *name, const char *format, const member *want, int n)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    int rc = dsq_input_open(in, path_of(name), &err);
    if (rc) {
        fprintf(stderr, "%s: open failed: %s\n", name, err.msg);
        test_failures++;
        dsq_input_free(in);
        return;
    }
    if (strcmp(dsq_input_format(in), format) != 0) {
        fprintf(stderr, "%s: format %s, expected %s\n", name, dsq_input_format(in), format);
        test_failures++;
    }
    buf got = {0};
    int k = 0;
    dsq_member_info mi;
    while ((rc = dsq_input_next_member(in, &mi, &err)) == 1) {
        char mname[256];
        snprintf(mname, sizeof mname, "%s", mi.name);
        int rrc = read_member(in, &got, &err);
        if (k >= n) {
            fprintf(stderr, "%s: unexpected member '%s'\n", name, mname);
            test_failures++;
        } else {
            if (strcmp(mname, want[k].name) != 0 || rrc != 0 || got.n != want[k].len ||
                (got.n && memcmp(got.p, want[k].data, got.n) != 0)) {
                fprintf(stderr, "%s: member %d '%s' (%zu bytes, rc %d: %s), expected '%s' (%zu)\n",
                        name, k, mname, got.n, rrc, err.msg, want[k].name, want[k].len);
                test_failures++;
            }
            CHECK(mi.mtime_ns > 0);
        }
        k++;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(k, n);
    CHECK_INT(dsq_input_next_member(in, &mi, &err), 0); /* stays at the end */
    CHECK(dsq_input_bytes_in(in) > 0 || n == 0 || want[0].len == 0);
    dsq_input_close(in);
    free(got.p);
    dsq_input_free(in);
}

static void test_plain(void)
{
    const char text[] = "hello\nworld\r\nlast";
    CHECK_INT(test_write_file(tmp, "plain.log", text, sizeof text - 1), 0);
    member m = {"", text, sizeof text - 1, 0};
    expect_file("plain.log", "plain", &m, 1);
    /* a plain file whose name says otherwise is still plain */
    CHECK_INT(test_write_file(tmp, "looks-like.tar.gz", text, sizeof text - 1), 0);
    expect_file("looks-like.tar.gz", "plain", &m, 1);
    /* a log that begins with bzip2's magic bytes ("BZh") is a log, plain or gzip'd */
    const char bzh[] = "BZh9 begins this log line, which is text\nand so is this one\n";
    CHECK_INT(test_write_file(tmp, "bzh.log", bzh, sizeof bzh - 1), 0);
    member b = {"", bzh, sizeof bzh - 1, 0};
    expect_file("bzh.log", "plain", &b, 1);
    member braw = {"payload", bzh, sizeof bzh - 1, 0};
    write_archive("bzh.log.gz", "raw", "gzip", &braw, 1);
    expect_file("bzh.log.gz", "gzip", &b, 1);
    /* empty file: one empty member */
    CHECK_INT(test_write_file(tmp, "empty.log", "", 0), 0);
    member e = {"", "", 0, 0};
    expect_file("empty.log", "plain", &e, 1);
    /* binary junk with NULs is plain too */
    const char junk[] = "\0\x01\xff\xfe\x80junk\0\n";
    CHECK_INT(test_write_file(tmp, "junk.bin", junk, sizeof junk - 1), 0);
    member j = {"", junk, sizeof junk - 1, 0};
    expect_file("junk.bin", "plain", &j, 1);
}

/* Small files are read into a buffer, big ones (over 1 MiB) mapped: one handle
 * reused across both kinds, in turns, hands out every file's bytes exactly, plain
 * (the big one in slices) or zstd. */
static void test_read_or_mapped(void)
{
    const size_t sizes[] = {(1u << 20) + 1, 100, 1u << 20, (5u << 20) + 3, (1u << 20) - 1, 0, 7};
    size_t most = (5u << 20) + 3;
    char *text = malloc(most);
    if (!text) {
        CHECK(0);
        return;
    }
    for (size_t i = 0; i < most; i++) /* lines of varying length, no two alike */
        text[i] = i % 61 == 60 ? '\n' : (char)('a' + (i * 7 + i / 61) % 26);
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    buf got = {0}, z = {0};
    for (size_t k = 0; in && k < 2 * sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k % (sizeof sizes / sizeof sizes[0])];
        int zstd = k >= sizeof sizes / sizeof sizes[0];
        char name[32];
        snprintf(name, sizeof name, "f%zu.%s", k, zstd ? "zst" : "log");
        if (zstd) {
            z.n = 0;
            zstd_frame(&z, text, n, 1);
            CHECK_INT(test_write_file(tmp, name, z.p, z.n), 0);
        } else {
            CHECK_INT(test_write_file(tmp, name, text, n), 0);
        }
        dsq_member_info mi;
        CHECK_INT(dsq_input_open(in, path_of(name), &err), 0);
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        CHECK_INT(read_member(in, &got, &err), 0);
        if (got.n != n || (n && memcmp(got.p, text, n) != 0)) {
            fprintf(stderr, "%s: %zu bytes read back, expected %zu\n", name, got.n, n);
            test_failures++;
        }
        dsq_input_close(in);
    }
    dsq_input_free(in);
    free(got.p);
    free(z.p);
    free(text);
}

/* Drops path's pages from the page cache (clean: written back first) and tells
 * whether none is left (mincore) a moment later: a read-ahead of the last open may
 * still be landing, so the drop is tried again until none comes back. Not on a
 * file system that keeps files in memory (tmpfs), where being cold cannot be
 * tested. */
static int evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat sb;
    int gone = 0;
    if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size > 0) {
        fdatasync(fd);
        long page = sysconf(_SC_PAGESIZE);
        size_t pages = ((size_t)sb.st_size + (size_t)page - 1) / (size_t)page;
        unsigned char *vec = malloc(pages);
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
        for (int tries = 0; tries < 5 && !gone && vec && m != MAP_FAILED; tries++) {
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            usleep(20000);
            if (mincore(m, (size_t)sb.st_size, vec) != 0)
                break;
            gone = 1;
            for (size_t i = 0; i < pages; i++)
                gone &= !(vec[i] & 1);
        }
        if (m != MAP_FAILED)
            munmap(m, (size_t)sb.st_size);
        free(vec);
    }
    if (fd >= 0)
        close(fd);
    return gone;
}

/* A file read from the disk is cold, the same file read again is not (a small
 * file read whole, a big one mapped); prefetching one that is cold asks for it (1)
 * and one in memory is left alone (0); a missing file does not open (-1). What is
 * read is the file either way. */
static void test_cold_and_prefetch(void)
{
    size_t sizes[] = {5000, (3u << 20) + 11};
    char *text = malloc(sizes[1]);
    dsq_input *in = NULL;
    if (!text || dsq_input_new(&in) != 0) {
        CHECK(0);
        free(text);
        return;
    }
    for (size_t i = 0; i < sizes[1]; i++)
        text[i] = i % 50 == 49 ? '\n' : (char)('a' + i % 26);
    dsq_error err;
    dsq_error_clear(&err);
    buf got = {0};
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "cold%d.log", k);
        CHECK_INT(test_write_file(tmp, name, text, sizes[k]), 0);
        const char *p = path_of(name);
        int evicted = evict(p);
        dsq_member_info mi;
        CHECK_INT(dsq_input_open(in, p, &err), 0);
        int cold = dsq_input_was_cold(in);
        /* under other files' writeback, a read-ahead of the last read can land after
         * evict looked (seen with a 3 GB write beside: 2 runs in 6): the file is
         * dropped and opened again, a few times */
        for (int again = 0; evicted && !cold && again < 4; again++) {
            dsq_input_close(in);
            evicted = evict(p);
            CHECK_INT(dsq_input_open(in, p, &err), 0);
            cold = dsq_input_was_cold(in);
        }
        if (!evicted)
            fprintf(stderr, "  (%s stays in memory here: its cold read is not tested)\n", name);
        CHECK_INT(cold, evicted);
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        got.n = 0;
        CHECK_INT(read_member(in, &got, &err), 0);
        CHECK(got.n == sizes[k] && memcmp(got.p, text, sizes[k]) == 0);
        dsq_input_close(in);
        CHECK_INT(dsq_input_open(in, p, &err), 0);
        CHECK_INT(dsq_input_was_cold(in), 0); /* in memory now */
        dsq_input_close(in);
        CHECK_INT(dsq_input_prefetch(p, sizes[k]), 0);
        if (evict(p)) {
            int asked = dsq_input_prefetch(p, sizes[k]);
            for (int again = 0; asked != 1 && again < 4 && evict(p); again++)
                asked = dsq_input_prefetch(p, sizes[k]); /* (as above) */
            CHECK_INT(asked, 1);
            cold = 1; /* the kernel's read ends: the file is in memory */
            for (int tries = 0; tries < 200 && cold; tries++) {
                usleep(10000);
                cold = dsq_input_prefetch(p, sizes[k]);
            }
            CHECK_INT(cold, 0);
        }
    }
    CHECK_INT(dsq_input_prefetch(path_of("no-such-file"), 10), -1);
    dsq_input_free(in);
    free(got.p);
    free(text);
}

static void test_zstd(void)
{
    /* single frame, named as if it were plain */
    size_t n1 = 3u << 20; /* several output buffers' worth */
    char *t1 = test_log_text(n1, 1);
    buf z = {0};
    zstd_frame(&z, t1, n1, 3);
    CHECK_INT(test_write_file(tmp, "rank0.log", z.p, z.n), 0);
    member m1 = {"", t1, n1, 0};
    expect_file("rank0.log", "zstd", &m1, 1);

    /* two frames concatenated decode to both texts in order */
    const char *t2 = "second frame\nno newline at end";
    zstd_frame(&z, t2, strlen(t2), 19);
    CHECK_INT(test_write_file(tmp, "multi.zst", z.p, z.n), 0);
    buf both = {0};
    test_buf_add(&both, t1, n1);
    test_buf_add(&both, t2, strlen(t2));
    member m2 = {"", both.p, both.n, 0};
    expect_file("multi.zst", "zstd", &m2, 1);

    /* a skippable frame between data frames is ignored */
    buf s = {0};
    zstd_frame(&s, "a\n", 2, 1);
    const unsigned char skip[] = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
    test_buf_add(&s, skip, sizeof skip);
    zstd_frame(&s, "b\n", 2, 1);
    CHECK_INT(test_write_file(tmp, "skip.zst", s.p, s.n), 0);
    member m3 = {"", "a\nb\n", 4, 0};
    expect_file("skip.zst", "zstd", &m3, 1);
    free(s.p);
    free(both.p);
    free(z.p);
    free(t1);
}

/* A small .zst log is one zstd block, which open decodes to see what the file
 * holds: the first read hands out all of it in one chunk (the 1 kB open looked at
 * and the rest the decoder held), into the caller's buffer with read_into, then
 * the end. */
static void test_zstd_small_file_one_chunk(void)
{
    size_t n = 5000;
    char *t = test_log_text(n, 3);
    buf z = {0};
    zstd_frame(&z, t, n, 3);
    CHECK_INT(test_write_file(tmp, "small.log.zst", z.p, z.n), 0);
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    size_t cap = dsq_input_chunk_max(in);
    char *dst = malloc(cap);
    for (int into = 0; into < 2 && dst; into++) {
        CHECK_INT(dsq_input_open(in, path_of("small.log.zst"), &err), 0);
        CHECK_STR(dsq_input_format(in), "zstd");
        dsq_member_info mi;
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        const char *data = NULL;
        size_t len = 0;
        CHECK_INT(into ? dsq_input_read_into(in, dst, cap, &data, &len, &err)
                       : dsq_input_read(in, &data, &len, &err),
                  0);
        CHECK_INT(len, n);
        CHECK(data && len == n && memcmp(data, t, n) == 0);
        if (into)
            CHECK(data == dst);
        CHECK_INT(dsq_input_read(in, &data, &len, &err), 0);
        CHECK_INT(len, 0);
        dsq_input_close(in);
    }
    free(dst);
    dsq_input_free(in);
    free(z.p);
    free(t);
}

/* A big .zst log is decoded block by block into the input's ring: its chunks are
 * kept there (dsq_input_keeps_chunks) and are the text's bytes, over frames (one
 * with a window bigger than the first's ring: from there on decoded as a stream)
 * and when the file is cut (the bytes before the cut, then an error naming zstd). */
static void test_zstd_block_by_block(void)
{
    size_t n = 6u << 20;
    char *t = test_log_text(n, 11);
    const char *tail = "the third frame\n";
    buf z = {0}, both = {0};
    zstd_frame_window(&z, t, n / 2, 20);
    zstd_frame_window(&z, t + n / 2, n - n / 2, 23); /* 8 MB: more than the ring */
    zstd_frame(&z, tail, strlen(tail), 3);
    test_buf_add(&both, t, n);
    test_buf_add(&both, tail, strlen(tail));
    CHECK_INT(test_write_file(tmp, "frames.log.zst", z.p, z.n), 0);
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_input_open(in, path_of("frames.log.zst"), &err), 0);
    CHECK(dsq_input_keeps_chunks(in));
    CHECK_INT(dsq_input_decodes_zstd(in), 0);
    dsq_member_info mi;
    CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
    buf got = {0};
    size_t kept = 0, chunks = 0;
    for (;;) {
        const char *data;
        size_t len;
        int kept_now = dsq_input_keeps_chunks(in);
        CHECK_INT(dsq_input_read(in, &data, &len, &err), 0);
        if (len == 0)
            break;
        chunks++;
        kept += kept_now;
        test_buf_add(&got, data, len);
    }
    CHECK(got.n == both.n && memcmp(got.p, both.p, both.n) == 0);
    CHECK(kept >= 8 && kept < chunks); /* the first frame's chunks, not the second's */
    CHECK_INT(dsq_input_keeps_chunks(in), 0);
    CHECK_INT(dsq_input_bytes_in(in), z.n);
    dsq_input_close(in);
    /* cut inside the first frame */
    buf one = {0};
    zstd_frame_window(&one, t, n, 20);
    CHECK_INT(test_write_file(tmp, "cut.log.zst", one.p, one.n / 2), 0);
    CHECK_INT(dsq_input_open(in, path_of("cut.log.zst"), &err), 0);
    CHECK(dsq_input_keeps_chunks(in));
    CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
    CHECK_INT(read_member(in, &got, &err), DSQ_EFORMAT);
    CHECK(strstr(err.msg, "zstd: truncated input") != NULL);
    CHECK(got.n > n / 4 && got.n < n && memcmp(got.p, t, got.n) == 0);
    dsq_input_close(in);
    free(got.p);
    free(one.p);
    free(both.p);
    free(z.p);
    free(t);
    dsq_input_free(in);
}

static void test_truncated_zstd(void);

/* Every .zst case (frames, a skippable frame, cuts, garbage) decoded block by
 * block, however small the file. */
static void test_zstd_cases_block_by_block(void)
{
    dsq_input_set_zdirect_min(0);
    test_zstd();
    test_truncated_zstd();
    dsq_input_set_zdirect_min((size_t)256 << 10);
}

static void test_truncated_zstd(void)
{
    size_t n = 1u << 20;
    char *t = test_log_text(n, 7);
    buf z = {0};
    zstd_frame(&z, t, n, 1);
    for (int cut = 0; cut < 3; cut++) {
        size_t keep = cut == 0 ? z.n / 2 : cut == 1 ? z.n - 1 : 10;
        CHECK_INT(test_write_file(tmp, "cut.zst", z.p, keep), 0);
        dsq_input *in = NULL;
        CHECK_INT(dsq_input_new(&in), 0);
        dsq_error err;
        dsq_error_clear(&err);
        CHECK_INT(dsq_input_open(in, path_of("cut.zst"), &err), 0);
        CHECK_STR(dsq_input_format(in), "zstd");
        dsq_member_info mi;
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        buf got = {0};
        int rc = read_member(in, &got, &err);
        CHECK_INT(rc, DSQ_EFORMAT);
        CHECK(strstr(err.msg, "zstd") != NULL);
        /* what was delivered before the error is a true prefix of the text */
        CHECK(got.n < n);
        CHECK(got.n == 0 || memcmp(got.p, t, got.n) == 0);
        if (cut == 0)
            CHECK(got.n > 0);
        free(got.p);
        dsq_input_free(in);
    }
    /* garbage after a valid zstd magic */
    const unsigned char bad[] = {0x28, 0xB5, 0x2F, 0xFD, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3};
    CHECK_INT(test_write_file(tmp, "bad.zst", bad, sizeof bad), 0);
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_input_open(in, path_of("bad.zst"), &err), 0);
    dsq_member_info mi;
    CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
    buf got = {0};
    CHECK_INT(read_member(in, &got, &err), DSQ_EFORMAT);
    free(got.p);
    dsq_input_free(in);
    free(z.p);
    free(t);
}

static void test_single_compressed(void)
{
    size_t n = 200000;
    char *t = test_log_text(n, 3);
    member m = {"payload", t, n, 0};
    member want = {"", t, n, 0};
    static const struct {
        const char *filter, *name, *format;
    } tab[] = {{"gzip", "g.log", "gzip"}, {"xz", "x.txt", "xz"}, {"bzip2", "b.gz", "bzip2"}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        write_archive(tab[i].name, "raw", tab[i].filter, &m, 1);
        expect_file(tab[i].name, tab[i].format, &want, 1);
    }
    free(t);
}

static void test_archives(void)
{
    size_t nb = 300000;
    char *big = test_log_text(nb, 11);
    const char *a = "[Rank 0] first member\n";
    const char *b = "gpu010: second member\r\n";
    member in[] = {{"run7/", NULL, 0, 1},
                   {"run7/gpu009.log", a, strlen(a), 0},
                   {"run7/logs/", NULL, 0, 1},
                   {"run7/logs/gpu010.log", b, strlen(b), 0},
                   {"run7/empty.log", "", 0, 0},
                   {"run7/big.log", big, nb, 0}};
    member out[] = {in[1], in[3], in[4], in[5]}; /* directories are not members */
    static const struct {
        const char *format, *filter, *name, *detected;
    } tab[] = {{"pax", "none", "run7.tar", "tar"},     {"pax", "gzip", "run7.tgz", "gzip"},
               {"pax", "zstd", "run7.log", "tar.zst"}, {"pax", "xz", "run7.tar.xz", "xz"},
               {"pax", "bzip2", "run7.zip", "bzip2"},  {"zip", "none", "run7.tar.zst", "zip"}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        write_archive(tab[i].name, tab[i].format, tab[i].filter, in, 6);
        expect_file(tab[i].name, tab[i].detected, out, 4);
    }
    free(big);
}

static void test_zstd_member_in_archive(void)
{
    size_t n = 2u << 20; /* decodes to more than one output buffer */
    char *t = test_log_text(n, 5);
    buf z1 = {0}, z2 = {0};
    zstd_frame(&z1, t, n, 3);
    zstd_frame(&z2, "frame one\n", 10, 1);
    zstd_frame(&z2, "frame two\n", 10, 1);
    const char *plain = "plain member\n";
    member in[] = {{"a/rank0.log.zst", z1.p, z1.n, 0},
                   {"a/rank1.log", plain, strlen(plain), 0},
                   {"a/rank2.log.zst", z2.p, z2.n, 0}};
    member out[] = {{"a/rank0.log.zst", t, n, 0},
                    {"a/rank1.log", plain, strlen(plain), 0},
                    {"a/rank2.log.zst", "frame one\nframe two\n", 20, 0}};
    write_archive("nested.tar", "pax", "none", in, 3);
    expect_file("nested.tar", "tar", out, 3);
    write_archive("nested.tar.gz", "pax", "gzip", in, 3);
    expect_file("nested.tar.gz", "gzip", out, 3);
    write_archive("nested.zip", "zip", "none", in, 3);
    expect_file("nested.zip", "zip", out, 3);

    /* a truncated zstd member: an error for it, then the next member still reads */
    member cut[] = {{"c/bad.log.zst", z1.p, z1.n / 2, 0}, {"c/ok.log", plain, strlen(plain), 0}};
    write_archive("cutmember.tar", "pax", "none", cut, 2);
    dsq_input *inp = NULL;
    CHECK_INT(dsq_input_new(&inp), 0);
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_input_open(inp, path_of("cutmember.tar"), &err), 0);
    dsq_member_info mi;
    buf got = {0};
    CHECK_INT(dsq_input_next_member(inp, &mi, &err), 1);
    CHECK_STR(mi.name, "c/bad.log.zst");
    CHECK_INT(read_member(inp, &got, &err), DSQ_EFORMAT);
    CHECK(got.n > 0 && got.n < n && memcmp(got.p, t, got.n) == 0);
    CHECK_INT(dsq_input_next_member(inp, &mi, &err), 1);
    CHECK_STR(mi.name, "c/ok.log");
    CHECK_INT(read_member(inp, &got, &err), 0);
    CHECK_INT(got.n, strlen(plain));
    CHECK_INT(dsq_input_next_member(inp, &mi, &err), 0);
    dsq_input_free(inp);
    free(got.p);
    free(z1.p);
    free(z2.p);
    free(t);
}

static void test_damaged_archives(void)
{
    /* a tar.gz cut in half: whatever is read, it ends in an error, not a crash */
    size_t n = 400000;
    char *t = test_log_text(n, 9);
    member in[] = {{"r/a.log", t, n, 0}, {"r/b.log", t, n / 2, 0}};
    write_archive("whole.tgz", "pax", "gzip", in, 2);
    FILE *f = fopen(path_of("whole.tgz"), "rb");
    char *raw = malloc(1 << 22);
    size_t rn = fread(raw, 1, 1 << 22, f);
    fclose(f);
    for (int cut = 0; cut < 3; cut++) {
        size_t keep = cut == 0 ? rn / 2 : cut == 1 ? rn - 9 : 30;
        CHECK_INT(test_write_file(tmp, "cut.tgz", raw, keep), 0);
        dsq_input *inp = NULL;
        CHECK_INT(dsq_input_new(&inp), 0);
        dsq_error err;
        dsq_error_clear(&err);
        int failed = 0;
        if (dsq_input_open(inp, path_of("cut.tgz"), &err) != 0) {
            failed = 1;
        } else {
            dsq_member_info mi;
            buf got = {0};
            int rc;
            while ((rc = dsq_input_next_member(inp, &mi, &err)) == 1) {
                if (read_member(inp, &got, &err) != 0) {
                    failed = 1;
                    break;
                }
            }
            failed |= rc < 0;
            free(got.p);
        }
        CHECK(failed);
        CHECK(err.msg[0] != 0);
        dsq_input_free(inp);
    }
    free(raw);
    free(t);
}

static void test_errors_and_reuse(void)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_input_open(in, path_of("does-not-exist.log"), &err), DSQ_EIO);
    CHECK(strstr(err.msg, "No such file") != NULL);
    const char *d;
    size_t len;
    CHECK_INT(dsq_input_read(in, &d, &len, &err), DSQ_EUSAGE); /* nothing open */
    dsq_member_info mi;
    /* one handle, many files of different kinds, one after another */
    const char *t = "reuse\n";
    buf z = {0};
    zstd_frame(&z, t, 6, 1);
    CHECK_INT(test_write_file(tmp, "r1.zst", z.p, z.n), 0);
    CHECK_INT(test_write_file(tmp, "r2.log", t, 6), 0);
    member m = {"x.log", t, 6, 0};
    write_archive("r3.tar", "pax", "none", &m, 1);
    const char *names[] = {"r1.zst", "r2.log", "r3.tar", "r1.zst"};
    buf got = {0};
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 4; i++) {
            CHECK_INT(dsq_input_open(in, path_of(names[i]), &err), 0);
            CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
            CHECK_INT(read_member(in, &got, &err), 0);
            CHECK(got.n == 6 && memcmp(got.p, t, 6) == 0);
            /* a file may be closed before its members are all read */
            if (i != 1)
                CHECK_INT(dsq_input_next_member(in, &mi, &err), 0);
        }
    dsq_input_close(in);
    dsq_input_close(in);
    free(got.p);
    free(z.p);
    dsq_input_free(in);
    dsq_input_free(NULL);
}

static void test_stat(void)
{
    dsq_file_info a, b, c;
    dsq_error err;
    dsq_error_clear(&err);
    size_t n = 300000;
    char *t = test_log_text(n, 2);
    CHECK_INT(test_write_file(tmp, "s.log", t, n), 0);
    CHECK_INT(dsq_input_stat(path_of("s.log"), &a, &err), 0);
    CHECK_INT(a.size, n);
    CHECK_INT(dsq_input_stat(path_of("s.log"), &b, &err), 0);
    CHECK(a.fingerprint == b.fingerprint);
    t[n - 10] ^= 1; /* same size, last 64 KiB differ */
    CHECK_INT(test_write_file(tmp, "s.log", t, n), 0);
    CHECK_INT(dsq_input_stat(path_of("s.log"), &c, &err), 0);
    CHECK(c.fingerprint != a.fingerprint);
    t[n - 10] ^= 1;
    t[5] ^= 1; /* first 64 KiB differ */
    CHECK_INT(test_write_file(tmp, "s.log", t, n), 0);
    CHECK_INT(dsq_input_stat(path_of("s.log"), &c, &err), 0);
    CHECK(c.fingerprint != a.fingerprint);
    CHECK_INT(test_write_file(tmp, "s.log", t, n - 1), 0); /* size alone changes it */
    CHECK_INT(dsq_input_stat(path_of("s.log"), &c, &err), 0);
    CHECK_INT(c.size, n - 1);
    CHECK_INT(dsq_input_stat(path_of("nope"), &c, &err), DSQ_EIO);
    free(t);
}

/* The fingerprint is what indexes store: the hash of the size, the first 4 KiB and
 * (past 4 KiB) the last 4 KiB, whichever way they are read (a small file in one
 * read, or the bytes dsq_input_open read, with a size from dsq_input_stat_quick):
 * the same value for every size around the spans, and a changed last byte changes
 * it. The open's bytes do not tell when the size is not the stat's or the file is
 * mapped (big). */
static void test_stat_fingerprint_definition(void)
{
    static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 6000, 8191, 8192, 8193, 20000};
    char *t = test_log_text(20000, 3);
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        uint64_t size = n;
        uint64_t want = dsq_hash64(&size, sizeof size, 0);
        if (n)
            want = dsq_hash64(t, n < 4096 ? n : 4096, want);
        if (n > 4096)
            want = dsq_hash64(t + n - 4096, 4096, want);
        dsq_file_info a, b;
        dsq_error err;
        dsq_error_clear(&err);
        CHECK_INT(test_write_file(tmp, "fp.log", t, n), 0);
        CHECK_INT(dsq_input_stat(path_of("fp.log"), &a, &err), 0);
        CHECK(a.fingerprint == want);
        dsq_file_info q;
        CHECK_INT(dsq_input_stat_quick(path_of("fp.log"), &q, &err), 0);
        CHECK_INT(q.fp_known, 0);
        CHECK_INT(dsq_input_open(in, path_of("fp.log"), &err), 0);
        CHECK_INT(dsq_input_fingerprint_open(in, &q), 0);
        CHECK(q.fp_known && q.fingerprint == want);
        q.size = n + 1; /* the file changed since the stat */
        q.fp_known = 0;
        CHECK_INT(dsq_input_fingerprint_open(in, &q), -1);
        CHECK_INT(q.fp_known, 0);
        if (n) {
            t[n - 1] ^= 1;
            CHECK_INT(test_write_file(tmp, "fp.log", t, n), 0);
            CHECK_INT(dsq_input_stat(path_of("fp.log"), &b, &err), 0);
            CHECK(b.fingerprint != a.fingerprint);
            t[n - 1] ^= 1;
        }
    }
    size_t big = (size_t)3 << 20; /* mapped, not read: the open's bytes do not tell */
    char *b = test_log_text(big, 4);
    dsq_file_info q;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(test_write_file(tmp, "fp.log", b, big), 0);
    CHECK_INT(dsq_input_stat_quick(path_of("fp.log"), &q, &err), 0);
    CHECK_INT(dsq_input_open(in, path_of("fp.log"), &err), 0);
    CHECK_INT(dsq_input_fingerprint_open(in, &q), -1);
    CHECK_INT(dsq_input_fingerprint(path_of("fp.log"), &q, &err), 0);
    uint64_t size = big, want = dsq_hash64(&size, sizeof size, 0);
    want = dsq_hash64(b + big - 4096, 4096, dsq_hash64(b, 4096, want));
    CHECK(q.fingerprint == want);
    dsq_input_free(in);
    free(b);
    free(t);
}

/* The bytes of a file in tmp, appended to out. */
static void slurp(const char *name, buf *out)
{
    CHECK_INT(test_read_file(path_of(name), out), 0);
}

/* Reads every member of name: some step must fail with a message containing
 * `why`; *read_out gets the bytes read before. Returns the member names seen. */
static int expect_failure(const char *name, const char *why, size_t *read_out)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    int failed = 0, members = 0;
    size_t total = 0;
    buf got = {0};
    if (dsq_input_open(in, path_of(name), &err) != 0) {
        failed = 1;
    } else {
        dsq_member_info mi;
        int rc;
        while (!failed && (rc = dsq_input_next_member(in, &mi, &err)) == 1) {
            members++;
            failed = read_member(in, &got, &err) != 0;
            total += got.n;
        }
        failed |= !failed && rc < 0;
    }
    if (!failed || !strstr(err.msg, why)) {
        fprintf(stderr, "%s: expected a failure saying '%s', got %s'%s'\n", name, why,
                failed ? "" : "none ", err.msg);
        test_failures++;
    }
    if (read_out)
        *read_out = total;
    free(got.p);
    dsq_input_free(in);
    return members;
}

/* gzip, xz and bzip2 members inside a tar are decoded like zstd ones. */
static void test_compressed_members(void)
{
    size_t n = 300000;
    char *t = test_log_text(n, 13);
    member m = {"payload", t, n, 0};
    const char *filters[] = {"gzip", "xz", "bzip2"};
    const char *names[] = {"node1.log.gz", "node2.log.xz", "node3.log.bz2"};
    buf z[3] = {{0}, {0}, {0}};
    member in[3], out[3];
    for (int i = 0; i < 3; i++) {
        write_archive("one", "raw", filters[i], &m, 1);
        slurp("one", &z[i]);
        in[i] = (member){names[i], z[i].p, z[i].n, 0};
        out[i] = (member){names[i], t, n, 0};
    }
    write_archive("nested.tar", "pax", "none", in, 3);
    expect_file("nested.tar", "tar", out, 3);
    write_archive("nested.zip", "zip", "none", in, 3);
    expect_file("nested.zip", "zip", out, 3);
    /* a member with gzip magic and garbage behind it is reported, not read as text */
    const char fake[] = "\x1f\x8b not gzip at all, just text behind the magic bytes\n";
    member bad[] = {{"fake.log.gz", fake, sizeof fake - 1, 0}, in[0]};
    write_archive("fake-member.tar", "pax", "none", bad, 2);
    CHECK_INT(expect_failure("fake-member.tar", "magic bytes but is no valid gzip", NULL), 1);
    for (int i = 0; i < 3; i++)
        free(z[i].p);
    free(t);
}

/* Single compressed files: garbage after the stream, garbage behind the magic
 * bytes, and an empty stream. */
static void test_compressed_edges(void)
{
    size_t n = 100000, got;
    char *t = test_log_text(n, 17);
    member m = {"payload", t, n, 0};
    write_archive("t.gz", "raw", "gzip", &m, 1);
    buf g = {0};
    slurp("t.gz", &g);
    size_t gz_len = g.n;
    test_buf_add(&g, "GARBAGE", 7);
    CHECK_INT(test_write_file(tmp, "trail.gz", g.p, g.n), 0);
    CHECK_INT(expect_failure("trail.gz", "7 bytes of trailing garbage after the gzip data", &got),
              1);
    CHECK_INT(got, n); /* all of the data, then the complaint */
    char at[64];
    snprintf(at, sizeof at, "(at byte %zu)", gz_len);
    expect_failure("trail.gz", at, NULL); /* says where the garbage starts */
    g.n = gz_len;
    test_buf_add(&g, "\0\0\0\0\0\0\0\0", 8); /* zero padding is fine */
    CHECK_INT(test_write_file(tmp, "pad.gz", g.p, g.n), 0);
    member want = {"", t, n, 0};
    expect_file("pad.gz", "gzip", &want, 1);
    g.n = gz_len; /* two gzip members back to back are one stream */
    slurp("t.gz", &g);
    CHECK_INT(test_write_file(tmp, "two.gz", g.p, g.n), 0);
    char *tt = malloc(2 * n);
    memcpy(tt, t, n);
    memcpy(tt + n, t, n);
    member want2 = {"", tt, 2 * n, 0};
    expect_file("two.gz", "gzip", &want2, 1);
    /* magic bytes, then garbage (bzip2's: the block header's too; "BZh9" and text is a
     * log: test_plain) */
    const char *fakes[][3] = {
        {"fake.gz", "\x1f\x8bjunk junk junk junk junk junk junk", "magic bytes but is no valid"},
        {"fake.bz2", "BZh91AY&SYjunk junk junk junk junk junk junk", "bzip decompression failed"}};
    for (int i = 0; i < 2; i++) {
        CHECK_INT(test_write_file(tmp, fakes[i][0], fakes[i][1], strlen(fakes[i][1])), 0);
        expect_failure(fakes[i][0], fakes[i][2], NULL);
    }
    /* an empty compressed stream is one empty member, like an empty file */
    member none = {"payload", "", 0, 0};
    member empty = {"", "", 0, 0};
    write_archive("empty.gz", "raw", "gzip", &none, 1);
    expect_file("empty.gz", "gzip", &empty, 1);
    free(g.p);
    free(tt);
    free(t);
}

/* data compressed by filter (test_write_archive's), into out. */
static void compress_to(buf *out, const char *filter, const void *data, size_t n)
{
    member m = {"payload", data, n, 0};
    write_archive("one", "raw", filter, &m, 1);
    slurp("one", out);
}

/* An input handle whose gzip decoder is `by`, with the file `name` of the test
 * directory open; NULL when this build has no such decoder (no ISA-L). */
static dsq_input *open_with_gzip(int by, const char *name, dsq_error *err)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    if (!in || dsq_input_set_gzip(in, (dsq_input_gzip)by) != 0) {
        dsq_input_free(in);
        return NULL;
    }
    dsq_error_clear(err);
    CHECK_INT(dsq_input_open(in, path_of(name), err), 0);
    return in;
}

/* Members compressed twice (`xz -c f | gzip -c`), read by each gzip decoder: every
 * layer is decoded, as in a single file; garbage after the outer stream is
 * reported after the data; a .gz holding something that only starts like xz is
 * refused with a reason, and the next member read; a gzip'd log that begins with
 * "BZh" is a log. */
static void test_twice_compressed_members(void)
{
    size_t n = 100000;
    char *t = test_log_text(n, 29);
    buf x = {0}, zs = {0}, a = {0}, b = {0}, c = {0}, d = {0}, e = {0};
    compress_to(&x, "xz", t, n);
    zstd_frame(&zs, t, n, 3);
    compress_to(&a, "gzip", x.p, x.n);
    compress_to(&b, "gzip", zs.p, zs.n);
    compress_to(&c, "gzip", x.p, x.n);
    test_buf_add(&c, "GARBAGE", 7);
    const char fake[] = "\xFD" "7zXZ\0 is no xz stream, only its magic bytes, then text\n";
    compress_to(&d, "gzip", fake, sizeof fake - 1);
    const char bzh[] = "BZh, bzip2's magic bytes, begin this log, which is text\n";
    compress_to(&e, "gzip", bzh, sizeof bzh - 1);
    member in[] = {{"a.log.xz.gz", a.p, a.n, 0}, {"b.log.zst.gz", b.p, b.n, 0},
                   {"c.log.xz.gz", c.p, c.n, 0}, {"d.log.gz", d.p, d.n, 0},
                   {"e.log", t, n, 0},           {"f.log.gz", e.p, e.n, 0}};
    const char *why[] = {NULL, NULL, "7 bytes of trailing garbage after the gzip data",
                         "" /* any reason */, NULL, NULL};
    const char *want[] = {t, t, t, t, t, bzh};
    const size_t want_n[] = {n, n, n, 0, n, sizeof bzh - 1};
    write_archive("twice.tar", "pax", "none", in, 6);
    for (int by = DSQ_INPUT_GZIP_LIBARCHIVE; by <= DSQ_INPUT_GZIP_ISAL; by++) {
        dsq_error err;
        dsq_input *inp = open_with_gzip(by, "twice.tar", &err);
        if (!inp)
            continue;
        buf got = {0};
        dsq_member_info mi;
        for (int i = 0; i < 6; i++) {
            CHECK_INT(dsq_input_next_member(inp, &mi, &err), 1);
            dsq_error_clear(&err);
            int rc = read_member(inp, &got, &err);
            int ok = got.n == want_n[i] && memcmp(got.p, want[i], got.n) == 0 &&
                     (rc != 0) == (why[i] != NULL) && (!why[i] || strstr(err.msg, why[i]));
            if (!ok) {
                fprintf(stderr, "twice.tar %s (gzip by %d): %zu bytes, rc %d '%s'\n", in[i].name,
                        by, got.n, rc, err.msg);
                test_failures++;
            }
        }
        CHECK_INT(dsq_input_next_member(inp, &mi, &err), 0);
        free(got.p);
        dsq_input_free(inp);
    }
    free(x.p);
    free(zs.p);
    free(a.p);
    free(b.p);
    free(c.p);
    free(d.p);
    free(e.p);
    free(t);
}

/* Compressed members of a tar with bytes behind their streams, read by each gzip
 * decoder: garbage is reported after all of the member's data, naming the
 * compression and where in the member it starts, as after a single .gz; zero
 * padding is not; the members after are read as usual. */
static void test_member_trailing_garbage(void)
{
    size_t n = 100000;
    char *t = test_log_text(n, 19);
    member m = {"payload", t, n, 0};
    const char *filters[] = {"gzip", "bzip2", "gzip"};
    const char *tails[] = {"GARBAGE", "GARBAGE", "\0\0\0\0\0\0\0"};
    const char *names[] = {"node1.log.gz", "node2.log.bz2", "node3.log.gz"};
    const char *want[] = {"7 bytes of trailing garbage after the gzip data (at byte %zu)",
                          "7 bytes of trailing garbage after the bzip2 data (at byte %zu)", NULL};
    buf z[3] = {{0}, {0}, {0}};
    size_t zn[3];
    member in[4];
    for (int i = 0; i < 3; i++) {
        write_archive("one", "raw", filters[i], &m, 1);
        slurp("one", &z[i]);
        zn[i] = z[i].n;
        test_buf_add(&z[i], tails[i], 7);
        in[i] = (member){names[i], z[i].p, z[i].n, 0};
    }
    in[3] = (member){"node4.log", t, n, 0};
    write_archive("trail.tar", "pax", "none", in, 4);
    for (int by = DSQ_INPUT_GZIP_LIBARCHIVE; by <= DSQ_INPUT_GZIP_ISAL; by++) {
        dsq_error err;
        dsq_input *inp = open_with_gzip(by, "trail.tar", &err);
        if (!inp)
            continue;
        buf got = {0};
        dsq_member_info mi;
        for (int i = 0; i < 4; i++) {
            CHECK_INT(dsq_input_next_member(inp, &mi, &err), 1);
            dsq_error_clear(&err);
            int rc = read_member(inp, &got, &err);
            CHECK_INT(got.n, n); /* all of the data, then the complaint */
            char msg[128] = "";
            if (i < 3 && want[i])
                snprintf(msg, sizeof msg, want[i], zn[i]);
            if ((rc != 0) != (msg[0] != 0) || (msg[0] && strcmp(err.msg, msg) != 0)) {
                fprintf(stderr, "trail.tar %s (gzip by %d): rc %d '%s', expected '%s'\n",
                        in[i].name, by, rc, err.msg, msg);
                test_failures++;
            }
        }
        CHECK_INT(dsq_input_next_member(inp, &mi, &err), 0);
        free(got.p);
        dsq_input_free(inp);
    }
    for (int i = 0; i < 3; i++)
        free(z[i].p);
    free(t);
}

/* A tar of one member, m, into out (written as end.tar). */
static void one_member_tar(const member *m, buf *out)
{
    write_archive("end.tar", "pax", "none", m, 1);
    slurp("end.tar", out);
}

/* Bytes after a tar's end-of-archive marker (libarchive stops there): in a plain
 * tar and inside a tar.gz's gzip stream (by ISA-L, the default gzip decoder: the
 * libarchive one is not asked) garbage is reported after every member was read,
 * naming where it starts; zero padding is not. */
static void test_tar_trailing_garbage(void)
{
    size_t n = 50000, got;
    char *t = test_log_text(n, 31);
    member m = {"node1.log", t, n, 0};
    buf tarb = {0}, z = {0};
    one_member_tar(&m, &tarb);
    size_t tar_n = tarb.n;
    test_buf_add(&tarb, "GARBAGE", 7);
    CHECK_INT(test_write_file(tmp, "garbage.tar", tarb.p, tarb.n), 0);
    char want[128];
    snprintf(want, sizeof want,
             "7 bytes of trailing garbage after the tar's end-of-archive marker (at byte %zu of "
             "the tar)",
             tar_n);
    CHECK_INT(expect_failure("garbage.tar", want, &got), 1);
    CHECK_INT(got, n);
    compress_to(&z, "gzip", tarb.p, tarb.n);
    CHECK_INT(test_write_file(tmp, "garbage.tar.gz", z.p, z.n), 0);
    if (dsq_gunzip_available()) {
        CHECK_INT(expect_failure("garbage.tar.gz", want, &got), 1);
        CHECK_INT(got, n);
    }
    member out = {"node1.log", t, n, 0};
    tarb.n = tar_n;
    test_buf_add(&tarb, "\0\0\0\0\0\0\0", 7); /* zero padding, not even a whole block */
    CHECK_INT(test_write_file(tmp, "padded.tar", tarb.p, tarb.n), 0);
    expect_file("padded.tar", "tar", &out, 1);
    z.n = 0;
    compress_to(&z, "gzip", tarb.p, tarb.n);
    CHECK_INT(test_write_file(tmp, "padded.tar.gz", z.p, z.n), 0);
    expect_file("padded.tar.gz", "gzip", &out, 1);
    free(tarb.p);
    free(z.p);
    free(t);
}

/* xz (liblzma: unxz.c) with bytes behind its stream, as a single file: all of the
 * data is read, then garbage is reported naming where it starts, as after a gzip
 * stream; streams back to back, with stream padding of whole 4-byte words between
 * them, are one stream; zero bytes at the end are no garbage; zero bytes of another
 * length between streams, or xz magic bytes with a bad header, are garbage from the
 * first stream's end; a stream cut short is an error. */
static void test_xz_trailing_bytes(void)
{
    size_t n = 100000, got;
    char *t = test_log_text(n, 37);
    char *tt = malloc(2 * n);
    memcpy(tt, t, n);
    memcpy(tt + n, t, n);
    buf x = {0}, f = {0};
    compress_to(&x, "xz", t, n);
    member one = {"", t, n, 0}, two = {"", tt, 2 * n, 0};
    static const struct {
        const char *name, *tail;
        size_t tail_n;
        int garbage, second; /* the tail is garbage; a second stream follows it */
    } tab[] = {{"garbage.xz", "GARBAGE", 7, 1, 0},
               {"pad.xz", "\0\0\0\0\0\0\0\0", 8, 0, 0},
               {"odd-pad.xz", "\0\0\0", 3, 0, 0},
               {"two.xz", "", 0, 0, 1},
               {"two-pad.xz", "\0\0\0\0", 4, 0, 1},
               {"two-odd-pad.xz", "\0\0", 2, 1, 1},
               {"bad-header.xz", "\xFD" "7zXZ\0junk junk", 15, 1, 0}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        f.n = 0;
        test_buf_add(&f, x.p, x.n);
        test_buf_add(&f, tab[i].tail, tab[i].tail_n);
        if (tab[i].second)
            test_buf_add(&f, x.p, x.n);
        CHECK_INT(test_write_file(tmp, tab[i].name, f.p, f.n), 0);
        if (!tab[i].garbage) {
            expect_file(tab[i].name, "xz", tab[i].second ? &two : &one, 1);
            continue;
        }
        char want[128];
        snprintf(want, sizeof want, "%zu bytes of trailing garbage after the xz data (at byte %zu)",
                 f.n - x.n, x.n);
        CHECK_INT(expect_failure(tab[i].name, want, &got), 1);
        CHECK_INT(got, n); /* all of the data, then the complaint */
    }
    CHECK_INT(test_write_file(tmp, "cut.xz", x.p, x.n - 10), 0);
    CHECK_INT(expect_failure("cut.xz", "xz: truncated input", NULL), 1);
    free(x.p);
    free(f.p);
    free(tt);
    free(t);
}

/* .xz members of a tar with bytes behind their streams: garbage is reported after
 * all of the member's data, naming where in the member it starts; two streams, zero
 * padding, are no garbage; the members after are read as usual. */
static void test_xz_member_trailing_bytes(void)
{
    size_t n = 100000;
    char *t = test_log_text(n, 41);
    char *tt = malloc(2 * n);
    memcpy(tt, t, n);
    memcpy(tt + n, t, n);
    buf x = {0}, z[3] = {{0}, {0}, {0}};
    compress_to(&x, "xz", t, n);
    const char *tails[] = {"GARBAGE", "\0\0\0\0", "\0\0\0\0\0\0\0"};
    for (int i = 0; i < 3; i++) {
        test_buf_add(&z[i], x.p, x.n);
        test_buf_add(&z[i], tails[i], 7 - 3 * (i == 1));
        if (i == 1)
            test_buf_add(&z[i], x.p, x.n);
    }
    member in[] = {{"node1.log.xz", z[0].p, z[0].n, 0}, {"node2.log.xz", z[1].p, z[1].n, 0},
                   {"node3.log.xz", z[2].p, z[2].n, 0}, {"node4.log", t, n, 0}};
    const size_t want_n[] = {n, 2 * n, n, n};
    char want[128];
    snprintf(want, sizeof want, "7 bytes of trailing garbage after the xz data (at byte %zu)", x.n);
    write_archive("xz-trail.tar", "pax", "none", in, 4);
    dsq_error err;
    dsq_input *inp = open_with_gzip(DSQ_INPUT_GZIP_LIBARCHIVE, "xz-trail.tar", &err);
    buf got = {0};
    dsq_member_info mi;
    for (int i = 0; inp && i < 4; i++) {
        CHECK_INT(dsq_input_next_member(inp, &mi, &err), 1);
        dsq_error_clear(&err);
        int rc = read_member(inp, &got, &err);
        int ok = got.n == want_n[i] && memcmp(got.p, tt, got.n) == 0 && (rc != 0) == (i == 0) &&
                 (i != 0 || strcmp(err.msg, want) == 0);
        if (!ok) {
            fprintf(stderr, "xz-trail.tar %s: %zu bytes, rc %d '%s'\n", in[i].name, got.n, rc,
                    err.msg);
            test_failures++;
        }
    }
    if (inp)
        CHECK_INT(dsq_input_next_member(inp, &mi, &err), 0);
    dsq_input_free(inp);
    for (int i = 0; i < 3; i++)
        free(z[i].p);
    free(got.p);
    free(x.p);
    free(tt);
    free(t);
}

/* A tar.xz: liblzma decodes the xz stream under libarchive's tar reader, so garbage
 * after the xz stream, and after the tar's end-of-archive marker inside it, is
 * reported after every member was read, as in a tar.gz; zero padding is not. */
static void test_tar_xz_trailing_garbage(void)
{
    size_t n = 50000, got;
    char *t = test_log_text(n, 43);
    member m = {"node1.log", t, n, 0};
    buf tarb = {0}, z = {0};
    one_member_tar(&m, &tarb);
    size_t tar_n = tarb.n;
    compress_to(&z, "xz", tarb.p, tarb.n);
    size_t z_n = z.n;
    test_buf_add(&z, "GARBAGE", 7);
    CHECK_INT(test_write_file(tmp, "garbage-after.tar.xz", z.p, z.n), 0);
    char want[160];
    snprintf(want, sizeof want, "7 bytes of trailing garbage after the xz data (at byte %zu)", z_n);
    CHECK_INT(expect_failure("garbage-after.tar.xz", want, &got), 1);
    CHECK_INT(got, n);
    z.n = z_n;
    test_buf_add(&z, "\0\0\0\0", 4);
    CHECK_INT(test_write_file(tmp, "padded.tar.xz", z.p, z.n), 0);
    expect_file("padded.tar.xz", "xz", &m, 1);
    test_buf_add(&tarb, "GARBAGE", 7);
    z.n = 0;
    compress_to(&z, "xz", tarb.p, tarb.n);
    CHECK_INT(test_write_file(tmp, "garbage-inside.tar.xz", z.p, z.n), 0);
    snprintf(want, sizeof want,
             "7 bytes of trailing garbage after the tar's end-of-archive marker (at byte %zu of "
             "the tar)",
             tar_n);
    CHECK_INT(expect_failure("garbage-inside.tar.xz", want, &got), 1);
    CHECK_INT(got, n);
    free(tarb.p);
    free(z.p);
    free(t);
}

/* Reads every member of the open input: each must be empty and read without error;
 * returns how many there were. */
static int count_empty_members(dsq_input *inp, const char *name, int by)
{
    dsq_error err;
    dsq_member_info mi;
    buf got = {0};
    int k = 0, rc;
    dsq_error_clear(&err);
    while ((rc = dsq_input_next_member(inp, &mi, &err)) == 1) {
        int rrc = read_member(inp, &got, &err);
        if (rrc != 0 || got.n != 0) {
            fprintf(stderr, "%s member %d (gzip by %d): %zu bytes, rc %d '%s'\n", name, k, by,
                    got.n, rrc, err.msg);
            test_failures++;
        }
        k++;
    }
    if (rc != 0) {
        fprintf(stderr, "%s (gzip by %d): next_member %d '%s'\n", name, by, rc, err.msg);
        test_failures++;
    }
    free(got.p);
    return k;
}

/* An empty log compressed twice (`printf '' | gzip | xz`), in every order of gzip, xz,
 * bzip2 and zstd: an empty log, no error, as a single file and as a tar member, by
 * each gzip decoder. */
static void test_empty_twice_compressed(void)
{
    const char *filters[] = {"gzip", "xz", "bzip2", "zstd"};
    char names[16][32];
    buf z[16];
    member in[16];
    int k = 0;
    for (int o = 0; o < 4; o++) {
        for (int i = 0; i < 4; i++, k++) {
            buf inner = {0};
            if (i < 3)
                compress_to(&inner, filters[i], "", 0);
            else
                zstd_frame(&inner, "", 0, 3);
            z[k] = (buf){0};
            compress_to(&z[k], filters[o], inner.p, inner.n);
            free(inner.p);
            snprintf(names[k], sizeof names[k], "empty.%s.%s", filters[i], filters[o]);
            CHECK_INT(test_write_file(tmp, names[k], z[k].p, z[k].n), 0);
            in[k] = (member){names[k], z[k].p, z[k].n, 0};
        }
    }
    write_archive("empty-twice.tar", "pax", "none", in, 16);
    for (int by = DSQ_INPUT_GZIP_LIBARCHIVE; by <= DSQ_INPUT_GZIP_ISAL; by++) {
        for (int j = 0; j <= 16; j++) {
            const char *name = j < 16 ? names[j] : "empty-twice.tar";
            dsq_error err;
            dsq_input *inp = open_with_gzip(by, name, &err);
            if (!inp)
                break;
            CHECK_INT(count_empty_members(inp, name, by), j < 16 ? 1 : 16);
            dsq_input_free(inp);
        }
    }
    for (int j = 0; j < 16; j++)
        free(z[j].p);
}

/* Reads every member of name by gzip decoder `by`: member i must be want[i] (want_n[i]
 * bytes) read to its end, then fail with a message containing why[i] when that is
 * not NULL, else succeed; the input must end after the n of them. */
static void expect_members_by(int by, const char *name, int n, const char *const *want,
                              const size_t *want_n, const char *const *why)
{
    dsq_error err;
    dsq_input *inp = open_with_gzip(by, name, &err);
    if (!inp)
        return;
    buf got = {0};
    dsq_member_info mi;
    for (int i = 0; i < n; i++) {
        CHECK_INT(dsq_input_next_member(inp, &mi, &err), 1);
        dsq_error_clear(&err);
        int rc = read_member(inp, &got, &err);
        int ok = got.n == want_n[i] && memcmp(got.p, want[i], got.n) == 0 &&
                 (rc != 0) == (why[i] != NULL) && (!why[i] || strstr(err.msg, why[i]));
        if (!ok) {
            fprintf(stderr, "%s member %d (gzip by %d): %zu bytes (want %zu), rc %d '%s'\n", name,
                    i, by, got.n, want_n[i], rc, err.msg);
            test_failures++;
        }
    }
    CHECK_INT(dsq_input_next_member(inp, &mi, &err), 0);
    free(got.p);
    dsq_input_free(inp);
}

/* zstd as the outer layer (`gzip -c f | zstd -c`, a .gz.zst): what zstd decodes is
 * decoded again, gzip, xz, bzip2 or zstd, as a single file and as a tar member, by
 * each gzip decoder; the inner stream longer than one chunk of zstd's output; bytes
 * after the inner stream (inside the zstd data) are reported after all of the data,
 * with where they start in the decoded zstd data, zero padding is not; a tar under
 * gzip under zstd is read as a tar. */
static void test_zstd_outer_layer(void)
{
    size_t n = 100000;
    char *t = test_log_text(n, 47);
    buf big = {0}; /* a log whose gzip'd bytes outgrow a chunk of zstd's output */
    test_buf_add(&big, t, n);
    unsigned x = 12345;
    while (big.n < ((size_t)3 << 20)) {
        char line[96];
        int k = snprintf(line, sizeof line, "noise");
        for (int j = 0; j < 8; j++, x = x * 1103515245u + 12345u)
            k += snprintf(line + k, sizeof line - (size_t)k, " %08x", x);
        line[k++] = '\n';
        test_buf_add(&big, line, (size_t)k);
    }
    const char *filters[] = {"gzip", "xz", "bzip2", "zstd"};
    buf in[7], z[7], g = {0};
    memset(in, 0, sizeof in);
    memset(z, 0, sizeof z);
    for (int i = 0; i < 4; i++)
        compress_to(&in[i], filters[i], t, n);
    compress_to(&in[4], "gzip", big.p, big.n);
    dsq_input *probe = NULL;
    CHECK_INT(dsq_input_new(&probe), 0);
    CHECK(probe && in[4].n > dsq_input_chunk_max(probe)); /* zstd decodes it in several */
    dsq_input_free(probe);
    test_buf_add(&in[5], in[0].p, in[0].n);
    test_buf_add(&in[5], "GARBAGE", 7);
    test_buf_add(&in[6], in[0].p, in[0].n);
    test_buf_add(&in[6], "\0\0\0\0\0\0\0", 7);
    const char *names[] = {"a.log.gz.zst", "b.log.xz.zst", "c.log.bz2.zst", "d.log.zst.zst",
                           "e.log.gz.zst", "f.log.gz.zst", "g.log.gz.zst"};
    char garbage[128];
    snprintf(garbage, sizeof garbage,
             "7 bytes of trailing garbage after the gzip data (at byte %zu of the decoded zstd "
             "data)",
             in[0].n);
    const char *want[] = {t, t, t, t, big.p, t, t, t};
    const size_t want_n[] = {n, n, n, n, big.n, n, n, n};
    const char *why[] = {NULL, NULL, NULL, NULL, NULL, garbage, NULL, NULL};
    member m[8];
    for (int i = 0; i < 7; i++) {
        zstd_frame(&z[i], in[i].p, in[i].n, 3);
        CHECK_INT(test_write_file(tmp, names[i], z[i].p, z[i].n), 0);
        m[i] = (member){names[i], z[i].p, z[i].n, 0};
    }
    m[7] = (member){"h.log", t, n, 0};
    write_archive("zstd-outer.tar", "pax", "none", m, 8);
    for (int by = DSQ_INPUT_GZIP_LIBARCHIVE; by <= DSQ_INPUT_GZIP_ISAL; by++) {
        for (int i = 0; i < 7; i++)
            expect_members_by(by, names[i], 1, want + i, want_n + i, why + i);
        expect_members_by(by, "zstd-outer.tar", 8, want, want_n, why);
    }
    expect_file("a.log.gz.zst", "zstd", &(member){"", t, n, 0}, 1);
    /* a tar under gzip under zstd: its members */
    buf tarb = {0};
    member tm = {"node1.log", t, n, 0};
    one_member_tar(&tm, &tarb);
    compress_to(&g, "gzip", tarb.p, tarb.n);
    tarb.n = 0;
    zstd_frame(&tarb, g.p, g.n, 3);
    CHECK_INT(test_write_file(tmp, "run.tar.gz.zst", tarb.p, tarb.n), 0);
    expect_file("run.tar.gz.zst", "zstd", &tm, 1);
    for (int i = 0; i < 7; i++) {
        free(in[i].p);
        free(z[i].p);
    }
    free(tarb.p);
    free(g.p);
    free(big.p);
    free(t);
}

/* A stored zip member whose bytes do not match its CRC: its data, then an error. */
static void test_zip_bad_crc(void)
{
    const char *a = "first member\n", *b = "second member, to be damaged\n";
    member in[] = {{"a.log", a, strlen(a), 0}, {"b.log", b, strlen(b), 0}};
    struct archive *w = archive_write_new();
    archive_write_set_format_zip(w);
    CHECK_INT(archive_write_set_options(w, "zip:compression=store"), ARCHIVE_OK);
    CHECK_INT(archive_write_open_filename(w, path_of("crc.zip")), ARCHIVE_OK);
    for (int i = 0; i < 2; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, in[i].name);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)in[i].len);
        CHECK_INT(archive_write_header(w, e), ARCHIVE_OK);
        CHECK_INT(archive_write_data(w, in[i].data, in[i].len), (la_ssize_t)in[i].len);
        archive_entry_free(e);
    }
    CHECK_INT(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);
    buf z = {0};
    slurp("crc.zip", &z);
    char *hit = memmem(z.p, z.n, "to be damaged", 13);
    CHECK(hit != NULL);
    if (hit)
        hit[0] = 'T';
    CHECK_INT(test_write_file(tmp, "crc.zip", z.p, z.n), 0);
    size_t got;
    CHECK_INT(expect_failure("crc.zip", "CRC", &got), 2);
    CHECK_INT(got, strlen(a) + strlen(b)); /* both members' bytes were handed out */
    free(z.p);
}

/* A deflated zip member holding a .gz stream, zero padding after it (longer than
 * a block, so that the CRC is checked on a block read after the stream's end) and
 * a zip CRC that does not match: the member's data, then the CRC failure. */
static void test_zip_bad_crc_after_gz_member(void)
{
    size_t n = 20000, pad = 600000;
    char *t = test_log_text(n, 37);
    buf g = {0}, z = {0};
    compress_to(&g, "gzip", t, n);
    char *zeros = calloc(1, pad);
    test_buf_add(&g, zeros, pad);
    member m = {"a.log.gz", g.p, g.n, 0};
    write_archive("gzcrc.zip", "zip", "none", &m, 1);
    slurp("gzcrc.zip", &z);
    unsigned char *cd = memmem(z.p, z.n, "PK\x01\x02", 4); /* central directory: CRC at 16 */
    CHECK(cd != NULL);
    if (cd) {
        unsigned char crc[4];
        memcpy(crc, cd + 16, 4);
        for (size_t i = 0; i + 4 <= z.n; i++) /* in the local header or data descriptor too */
            if (memcmp(z.p + i, crc, 4) == 0)
                ((unsigned char *)z.p)[i] ^= 1;
    }
    CHECK_INT(test_write_file(tmp, "gzcrc.zip", z.p, z.n), 0);
    for (int by = DSQ_INPUT_GZIP_LIBARCHIVE; by <= DSQ_INPUT_GZIP_ISAL; by++) {
        dsq_error err;
        dsq_input *in = open_with_gzip(by, "gzcrc.zip", &err);
        if (!in)
            continue;
        dsq_member_info mi;
        buf got = {0};
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        int rc = read_member(in, &got, &err);
        CHECK_INT(got.n, n);
        if (rc == 0 || !strstr(err.msg, "CRC")) {
            fprintf(stderr, "gzcrc.zip (gzip by %d): rc %d '%s', expected a CRC failure\n", by,
                    rc, err.msg);
            test_failures++;
        }
        free(got.p);
        dsq_input_free(in);
    }
    free(zeros);
    free(g.p);
    free(z.p);
    free(t);
}

/* The sniff's counts, whatever path a byte takes (16 at a time, 8 at a time, one
 * by one): the same as counting byte by byte, for every byte value at every
 * offset and length, and over random mixes of text, controls and NULs. */
static void sniff_reference(const unsigned char *p, size_t n, size_t *bad, size_t *seen)
{
    *bad = *seen = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = p[i];
        *seen += c != 0;
        *bad += (c >= 1 && c <= 7) || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F) ||
                c == 0x7F;
    }
}

/* One pass of test_sniff_counts_every_byte (the sniff's loops as set). */
static void sniff_counts(void)
{
    unsigned char sb[112];
    size_t bad, seen, rbad, rseen;
    for (unsigned c = 0; c < 256; c++)
        for (size_t at = 0; at < 72; at++)
            for (size_t n = at + 1; n <= 72; n += 7) {
                memset(sb, 'a', sizeof sb);
                sb[at] = (unsigned char)c;
                dsq_input_sniff(sb, n, &bad, &seen);
                sniff_reference(sb, n, &rbad, &rseen);
                if (bad != rbad || seen != rseen) {
                    fprintf(stderr, "byte 0x%02x at %zu of %zu: %zu/%zu, want %zu/%zu\n", c, at, n,
                            bad, seen, rbad, rseen);
                    test_failures++;
                    return;
                }
            }
    uint64_t x = 88172645463325252ull;
    static const unsigned char pool[] = "abc \t\n\r\x1b\x08\x0d\x0e\x01\x1f\x7f\x80\xff\x00\x1a\x1c";
    for (int round = 0; round < 20000; round++) {
        size_t n = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        n = x % sizeof sb;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            sb[i] = pool[x % (sizeof pool - 1)];
        }
        int r = dsq_input_sniff(sb, n, &bad, &seen);
        sniff_reference(sb, n, &rbad, &rseen);
        CHECK_INT(bad, rbad);
        CHECK_INT(seen, rseen);
        CHECK_INT(r, rseen >= 64 && rbad * 100 >= rseen * 5);
        if (bad != rbad || seen != rseen)
            return;
    }
}

/* Every byte value at every place of short buffers, and random mixes, counted as
 * the byte-by-byte reference counts them: with the 32-byte (AVX2) loop where the
 * CPU has it, and with the 16-byte (SSE2) and byte loops alone. */
static void test_sniff_counts_every_byte(void)
{
    sniff_counts();
    if (dsq_input_sniff_wide(0) == 0)
        sniff_counts();
    dsq_input_sniff_wide(1);
}

/* The binary test counts exactly: 99 control bytes (0x01-0x1F but tab, newlines,
 * form feed, backspace, ESC; and 0x7F) among 1980 non-NUL bytes are 5% and make a
 * member binary, among 1981 they do not; allowed controls, NULs and bytes from
 * 0x80 count as text, wherever they sit in 8-byte words. */
static void test_binary_threshold_is_exact(void)
{
    static const char bad[] = {0x01, 0x7F, 0x1F, 0x0E, 0x1A, 0x1C, 0x07};
    static const char fine[] = {'\t', '\n', '\r', '\v', '\f', '\b', 0x1B, (char)0x80, (char)0xFF};
    for (int nuls = 19; nuls <= 20; nuls++) {
        char b[2000];
        memset(b, 'a', sizeof b);
        for (int i = 0; i < 99; i++)
            b[i * 20 + 3 + i % 8] = bad[i % 7];
        for (int i = 0; i < 45; i++) /* positions apart from the bad bytes' (mod 20) */
            b[i * 40 + 11 + i % 3] = fine[i % 9];
        for (int i = 0; i < nuls; i++)
            b[i * 100 + 17 + i % 2] = 0;
        const char *name = nuls == 20 ? "t20.log" : "t19.log";
        CHECK_INT(test_write_file(tmp, name, b, sizeof b), 0);
        if (nuls == 20) {
            expect_failure(name, "binary data, not text (5% of the first 2000 bytes", NULL);
        } else {
            member m = {"", b, sizeof b, 0};
            expect_file(name, "plain", &m, 1);
        }
    }
}

/* Binary data and NUL-only members are refused with a reason; text with NUL runs
 * (a crashed writer's tail, a copytruncate hole), stray control bytes or text that
 * is not UTF-8 is not. */
static void test_binary_and_nul(void)
{
    size_t n = 20000;
    char *junk = malloc(n);
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (char)(x >> 16);
    }
    CHECK_INT(test_write_file(tmp, "core.bin", junk, n), 0);
    expect_failure("core.bin", "binary data, not text", NULL);
    buf z = {0};
    zstd_frame(&z, junk, n, 1);
    CHECK_INT(test_write_file(tmp, "core.bin.zst", z.p, z.n), 0);
    expect_failure("core.bin.zst", "binary data, not text", NULL);
    char *zeros = calloc(1, n);
    CHECK_INT(test_write_file(tmp, "zeros.log", zeros, n), 0);
    expect_failure("zeros.log", "only NUL bytes (20000 of them)", NULL);
    /* text, then NULs; NULs, then text; text with a few bad bytes */
    char *text = test_log_text(5000, 3);
    size_t tn = strlen(text);
    buf m = {0};
    test_buf_add(&m, text, tn);
    test_buf_add(&m, zeros, n);
    CHECK_INT(test_write_file(tmp, "tail.log", m.p, m.n), 0);
    member w1 = {"", m.p, m.n, 0};
    expect_file("tail.log", "plain", &w1, 1);
    buf m2 = {0};
    test_buf_add(&m2, zeros, n);
    test_buf_add(&m2, text, tn);
    CHECK_INT(test_write_file(tmp, "hole.log", m2.p, m2.n), 0);
    member w2 = {"", m2.p, m2.n, 0};
    expect_file("hole.log", "plain", &w2, 1);
    text[10] = '\xff';
    text[20] = '\x01';
    text[30] = '\xc3';
    CHECK_INT(test_write_file(tmp, "latin.log", text, tn), 0);
    member w3 = {"", text, tn, 0};
    expect_file("latin.log", "plain", &w3, 1);
    /* a log in GBK: mostly bytes that are not UTF-8, still text */
    buf gbk = {0};
    for (int i = 0; i < 200; i++)
        test_buf_add(&gbk, "[INFO] \xd1\xb5\xc1\xb7\xbf\xaa\xca\xbc \xb2\xbd\xd6\xe8 \xcb\xf0\xca\xa7\n", 26);
    CHECK_INT(test_write_file(tmp, "gbk.log", gbk.p, gbk.n), 0);
    member w4 = {"", gbk.p, gbk.n, 0};
    expect_file("gbk.log", "plain", &w4, 1);
    free(gbk.p);
    free(m.p);
    free(m2.p);
    free(z.p);
    free(text);
    free(zeros);
    free(junk);
}

/* A big compressed file is not kept resident as it is read: the map is let go of
 * behind its decoder (a 216 MB .zst held all of it at its end: a 287 MB peak RSS
 * for its index). Each container reads 32-36 MB of compressed bytes; the part of
 * its map resident at any time stays a few MB (here: under 16). */
static void test_big_compressed_map_let_go(void)
{
    size_t n = 42u << 20;
    char *t = malloc(n);
    if (!t) {
        CHECK(0);
        return;
    }
    uint64_t x = 88172645463325252ull; /* xorshift: text zstd and gzip cannot shrink much */
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t[i] = i % 100 == 99 ? '\n' : (char)(' ' + (x >> 58) + 1);
    }
    buf z = {0};
    zstd_frame(&z, t, n, 1);
    CHECK_INT(test_write_file(tmp, "big.zst", z.p, z.n), 0);
    free(z.p);
    member m = {"run/big.log", t, n, 0};
    write_archive("big.gz", "raw", "gzip-1", &m, 1);
    write_archive("big.tar.gz", "pax", "gzip-1", &m, 1);
    write_archive("big.tar.zst", "pax", "zstd", &m, 1);
    static const char *const names[] = {"big.zst", "big.gz", "big.tar.gz", "big.tar.zst"};
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_error err;
    dsq_error_clear(&err);
    for (size_t k = 0; in && k < sizeof names / sizeof names[0]; k++) {
        dsq_member_info mi;
        char path[300];
        CHECK(realpath(path_of(names[k]), path) != NULL);
        CHECK_INT(dsq_input_open(in, path, &err), 0);
        CHECK_INT(dsq_input_next_member(in, &mi, &err), 1);
        size_t got = 0, next_look = 0;
        long long most = -1;
        int same = 1;
        for (;;) {
            const char *data;
            size_t len;
            if (dsq_input_read(in, &data, &len, &err) != 0 || len == 0)
                break;
            same &= got + len <= n && memcmp(data, t + got, len) == 0;
            got += len;
            if (got >= next_look) { /* every 2 MB read */
                long long kb = mapped_rss_kb(path);
                most = kb > most ? kb : most;
                next_look = got + (2u << 20);
            }
        }
        if (got != n || !same || most < 0 || most > 16 * 1024) {
            fprintf(stderr, "%s: %zu of %zu bytes read back (%s), map resident at most %lld kB\n",
                    names[k], got, n, same ? "same" : "different", most);
            test_failures++;
        }
        dsq_input_close(in);
    }
    dsq_input_free(in);
    free(t);
}

static void test_setup(void) { CHECK_INT(test_tmpdir_new(tmp), 0); }
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_plain), T(test_read_or_mapped), T(test_cold_and_prefetch), T(test_zstd), T(test_zstd_small_file_one_chunk), T(test_zstd_block_by_block), T(test_truncated_zstd),
          T(test_zstd_cases_block_by_block),
          T(test_single_compressed), T(test_archives), T(test_zstd_member_in_archive),
          T(test_damaged_archives), T(test_compressed_members), T(test_compressed_edges),
          T(test_member_trailing_garbage), T(test_twice_compressed_members),
          T(test_tar_trailing_garbage), T(test_xz_trailing_bytes), T(test_xz_member_trailing_bytes),
          T(test_tar_xz_trailing_garbage), T(test_empty_twice_compressed),
          T(test_zstd_outer_layer),
          T(test_zip_bad_crc), T(test_zip_bad_crc_after_gz_member), T(test_binary_and_nul), T(test_binary_threshold_is_exact), T(test_sniff_counts_every_byte), T(test_errors_and_reuse), T(test_stat), T(test_stat_fingerprint_definition),
          T(test_big_compressed_map_let_go), T(test_teardown))
