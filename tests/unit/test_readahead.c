/* Read-ahead: whatever moment the decoder thread takes over (never, at open, in
 * the middle of a member, at a member's end), the caller sees what reading the
 * input directly gives: the same members and names, chunks in the same order
 * with the same bytes (and, with buffers at least as big as a chunk, the same
 * boundaries), the same damage reports and errors after the same data, and the
 * same bytes_in. A file closed early, while the decoder waits for a free buffer,
 * gives every buffer back, and the handle reads the next file correctly; a handle
 * freed while its decoder runs stops it. Inputs are made in a temp dir. */
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

#include "dsq/dsq.h"
#include "input.h"
#include "readahead.h"
#include "test.h"
#include "testarchive.h"
#include "testbuf.h"
#include "tmpdir.h"

static char tmp[64];

typedef test_buf buf;
typedef test_member member;

static void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    test_buf_add(b, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
}

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
    test_write_archive(path_of(name), format, filter, m, n, 1);
}

static void write_file(const char *name, const void *p, size_t n)
{
    CHECK_INT(test_write_file(tmp, name, p, n), 0);
}

static void slurp(const char *name, buf *out)
{
    out->n = 0;
    test_read_file(path_of(name), out);
}

static void zstd_file(const char *name, const void *data, size_t n)
{
    size_t cap = ZSTD_compressBound(n);
    void *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, data, n, 1);
    CHECK(!ZSTD_isError(zn));
    write_file(name, z, zn);
    free(z);
}

/* --- traces: what a reader sees of a file, as text ------------------------------ */

typedef struct reader {
    dsq_input *in;     /* read directly, or */
    dsq_readahead *ra; /* through the read-ahead */
    long start_at;     /* ra: start before this read call (0: right after open), -1 never */
    int chunks;        /* trace every chunk's length (else each member's total) */
} reader;

static void trace_err(buf *t, const char *what, int rc, const dsq_error *e)
{
    buf_printf(t, "%s rc=%d code=%d msg=%s\n", what, rc, e->code, e->msg);
}

/* Reads the file like the indexer's workers do and writes down everything. */
static void trace_file(reader *r, const char *name, buf *t)
{
    dsq_error e;
    dsq_error_clear(&e);
    t->n = 0;
    test_buf_add(t, "", 0);
    int rc = r->ra ? dsq_readahead_open(r->ra, path_of(name), &e)
                   : dsq_input_open(r->in, path_of(name), &e);
    buf_printf(t, "open rc=%d %s\n", rc, rc ? e.msg : "");
    if (rc)
        return;
    long reads = 0;
    if (r->ra && r->start_at == 0)
        CHECK_INT(dsq_readahead_start(r->ra), 0);
    dsq_member_info mi;
    for (;;) {
        dsq_error_clear(&e);
        int m = r->ra ? dsq_readahead_next_member(r->ra, &mi, &e)
                      : dsq_input_next_member(r->in, &mi, &e);
        dsq_error d;
        dsq_error_clear(&d);
        if (r->ra ? dsq_readahead_take_damage(r->ra, &d) : dsq_input_take_damage(r->in, &d))
            trace_err(t, "damage", 1, &d);
        if (m <= 0) {
            trace_err(t, "end", m, &e);
            break;
        }
        buf_printf(t, "member '%s' mtime=%lld size=%lld\n", mi.name, (long long)mi.mtime_ns,
                   (long long)mi.size);
        uint64_t h = 0xcbf29ce484222325ull, total = 0;
        for (;;) {
            const char *data;
            size_t len;
            if (r->ra && reads++ == r->start_at)
                CHECK_INT(dsq_readahead_start(r->ra), 0);
            rc = r->ra ? dsq_readahead_read(r->ra, &data, &len, &e)
                       : dsq_input_read(r->in, &data, &len, &e);
            if (rc) {
                trace_err(t, "read", rc, &e);
                break;
            }
            if (len == 0)
                break;
            if (r->chunks)
                buf_printf(t, "chunk %zu\n", len);
            for (size_t i = 0; i < len; i++) /* FNV-1a: the same whatever the chunks */
                h = (h ^ (unsigned char)data[i]) * 0x100000001b3ull;
            total += len;
        }
        buf_printf(t, "data %llu bytes hash %016llx name '%s'\n", (unsigned long long)total,
                   (unsigned long long)h, mi.name); /* the name is still valid */
    }
    buf_printf(t, "bytes_in %llu\n",
               (unsigned long long)(r->ra ? dsq_readahead_bytes_in(r->ra)
                                          : dsq_input_bytes_in(r->in)));
    if (r->ra)
        dsq_readahead_close(r->ra);
    else
        dsq_input_close(r->in);
}

static const char *const files[] = {"plain.log", "big.log.zst", "big.log.gz",   "run.tar.gz",
                                    "run.tar",   "cut.log.zst", "cut.log.gz",   "cut.tar.gz",
                                    "bad.tar",   "bin.tar.gz",  "missing.log"};
#define NFILES (sizeof files / sizeof files[0])

static void make_inputs(void)
{
    size_t n = 3u << 20;
    char *t = test_log_text(n, 1), *u = test_log_text(300000, 2);
    write_file("plain.log", u, strlen(u));
    zstd_file("big.log.zst", t, n);
    member raw = {"", t, n, 0};
    write_archive("big.log.gz", "raw", "gzip-1", &raw, 1);
    char junk[20000];
    unsigned x = 7;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (char)(x >> 16);
    }
    member m[] = {{"run/rank0.log", t, n / 2, 0},
                  {"run/sub", NULL, 0, 1},
                  {"run/empty.log", "", 0, 0},
                  {"run/rank1.log", u, 250000, 0},
                  {"run/rank2.log", t + 1000, 70000, 0}};
    write_archive("run.tar.gz", "pax", "gzip-1", m, 5);
    write_archive("run.tar", "pax", "none", m, 5);
    member b[] = {{"run/rank0.log", u, 100000, 0},
                  {"run/core.bin", junk, sizeof junk, 0},
                  {"run/rank1.log", u, 5000, 0}};
    write_archive("bin.tar.gz", "pax", "gzip-1", b, 3);
    buf z = {0};
    const char *cuts[][2] = {{"big.log.zst", "cut.log.zst"},
                             {"big.log.gz", "cut.log.gz"},
                             {"run.tar.gz", "cut.tar.gz"}};
    for (int i = 0; i < 3; i++) { /* cut in the middle: an error after some data */
        slurp(cuts[i][0], &z);
        write_file(cuts[i][1], z.p, z.n * 2 / 3);
    }
    slurp("run.tar", &z); /* a header that does not check out: damage, then resync */
    char *hdr = memmem(z.p + 512, z.n - 512, "run/rank1.log", 13);
    CHECK(hdr != NULL);
    if (hdr)
        hdr[148] ^= 0x55; /* its checksum */
    write_file("bad.tar", z.p, z.n);
    free(z.p);
    free(t);
    free(u);
}

/* Every file, read through the read-ahead started at each kind of moment, and with
 * small buffers (chunks then come in pieces: only the bytes are compared), traces
 * as reading directly does. One handle each for all files, so reuse is tested. */
static void test_same_as_direct(void)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_readahead_params small = {64 << 10, 2};
    dsq_readahead *big_ra = NULL, *small_ra = NULL;
    CHECK_INT(dsq_readahead_new(NULL, &big_ra), 0);
    CHECK_INT(dsq_readahead_new(&small, &small_ra), 0);
    buf want = {0}, got = {0};
    const long starts[] = {-1, 0, 1, 2, 3, 5, 40};
    int damage_seen = 0, errors_seen = 0;
    for (size_t f = 0; f < NFILES; f++)
        for (int chunks = 0; chunks < 2; chunks++) {
            reader direct = {in, NULL, -1, chunks};
            trace_file(&direct, files[f], &want);
            damage_seen += strstr(want.p, "damage rc=1") != NULL;
            errors_seen += strstr(want.p, "read rc=") != NULL;
            for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
                reader ahead = {NULL, chunks ? big_ra : small_ra, starts[s], chunks};
                trace_file(&ahead, files[f], &got);
                if (strcmp(want.p, got.p) != 0) {
                    fprintf(stderr, "%s, start at read %ld, %s buffers:\n--- direct\n%s--- ahead\n%s",
                            files[f], starts[s], chunks ? "big" : "small", want.p, got.p);
                    test_failures++;
                }
            }
        }
    CHECK(damage_seen > 0);     /* bad.tar */
    CHECK_INT(errors_seen, 2 * 4); /* the cut files, core.bin */
    free(want.p);
    free(got.p);
    dsq_readahead_free(big_ra);
    dsq_readahead_free(small_ra);
    dsq_input_free(in);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A file closed after one chunk while the decoder waits for a free buffer (two
 * small ones, both full), or before anything was read, or while in its second
 * member; then the next file reads as it should. */
static void test_close_early(void)
{
    dsq_input *in = NULL;
    CHECK_INT(dsq_input_new(&in), 0);
    dsq_readahead_params small = {64 << 10, 2};
    dsq_readahead *ra = NULL;
    CHECK_INT(dsq_readahead_new(&small, &ra), 0);
    dsq_error e;
    dsq_error_clear(&e);
    dsq_member_info mi;
    const char *data;
    size_t len;
    buf want = {0}, got = {0};
    reader direct = {in, NULL, -1, 0};
    trace_file(&direct, "run.tar.gz", &want);
    for (int round = 0; round < 3; round++) {
        CHECK_INT(dsq_readahead_open(ra, path_of(round == 2 ? "run.tar.gz" : "big.log.gz"), &e),
                  0);
        CHECK_INT(dsq_readahead_start(ra), 0);
        CHECK_INT(dsq_readahead_started(ra), 1);
        if (round > 0) {
            CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 1);
            CHECK_INT(dsq_readahead_read(ra, &data, &len, &e), 0);
            CHECK(len > 0);
        }
        if (round == 2) { /* into the second file member, which is short */
            do
                CHECK_INT(dsq_readahead_read(ra, &data, &len, &e), 0);
            while (len > 0);
            CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 1);
            CHECK_STR(mi.name, "run/empty.log");
        }
        sleep_ms(30); /* the decoder fills both buffers and waits */
        dsq_readahead_close(ra);
        CHECK_INT(dsq_readahead_started(ra), 0);
        reader ahead = {NULL, ra, 1, 0};
        trace_file(&ahead, "run.tar.gz", &got);
        CHECK_STR(got.p, want.p);
    }
    dsq_readahead_close(ra); /* twice is fine */
    free(want.p);
    free(got.p);
    dsq_readahead_free(ra);
    dsq_input_free(in);
}

/* Freed while the decoder runs (nothing read, or one chunk read), and freed
 * without ever starting; free(NULL) is a no-op. */
static void test_free_running(void)
{
    for (int round = 0; round < 3; round++) {
        dsq_readahead_params small = {64 << 10, 3};
        dsq_readahead *ra = NULL;
        dsq_error e;
        dsq_error_clear(&e);
        CHECK_INT(dsq_readahead_new(&small, &ra), 0);
        CHECK_INT(dsq_readahead_open(ra, path_of("big.log.zst"), &e), 0);
        CHECK_STR(dsq_readahead_format(ra), "zstd");
        if (round < 2)
            CHECK_INT(dsq_readahead_start(ra), 0);
        if (round == 1) {
            dsq_member_info mi;
            const char *data;
            size_t len;
            CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 1);
            CHECK_INT(dsq_readahead_read(ra, &data, &len, &e), 0);
            CHECK(len > 0);
        }
        dsq_readahead_free(ra);
    }
    dsq_readahead_free(NULL);
}

/* A big .zst log's chunks are handed out from the input's ring (no copy): each is
 * still the text's bytes after the decoder has run as far ahead as the buffers
 * let it (DSQ_INPUT_KEPT of them, each holding one chunk), while it is read. */
static void test_kept_chunks_unchanged_while_read(void)
{
    size_t n = 6u << 20;
    char *t = test_log_text(n, 5);
    zstd_file("kept.log.zst", t, n);
    dsq_readahead_params p = {64 << 10, DSQ_INPUT_KEPT};
    dsq_readahead *ra = NULL;
    dsq_error e;
    dsq_error_clear(&e);
    CHECK_INT(dsq_readahead_new(&p, &ra), 0);
    CHECK_INT(dsq_readahead_open(ra, path_of("kept.log.zst"), &e), 0);
    CHECK_INT(dsq_readahead_start(ra), 0);
    dsq_member_info mi;
    CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 1);
    size_t at = 0;
    int reads = 0, bad = 0;
    for (;;) {
        const char *data;
        size_t len;
        CHECK_INT(dsq_readahead_read(ra, &data, &len, &e), 0);
        if (len == 0)
            break;
        sleep_ms(2); /* the decoder fills every buffer it has */
        bad += at + len > n || memcmp(data, t + at, len) != 0;
        at += len;
        reads++;
    }
    CHECK_INT(at, n);
    CHECK_INT(bad, 0);
    CHECK(reads > 2 * DSQ_INPUT_KEPT);
    dsq_readahead_free(ra);
    free(t);
}

/* start before open, after the file's end, and twice: nothing happens. */
static void test_start_when_nothing_to_do(void)
{
    dsq_readahead *ra = NULL;
    dsq_error e;
    dsq_error_clear(&e);
    dsq_member_info mi;
    CHECK_INT(dsq_readahead_new(NULL, &ra), 0);
    CHECK_INT(dsq_readahead_start(ra), 0);
    CHECK_INT(dsq_readahead_started(ra), 0);
    CHECK_INT(dsq_readahead_open(ra, path_of("missing.log"), &e), DSQ_EIO);
    CHECK_INT(dsq_readahead_start(ra), 0);
    CHECK_INT(dsq_readahead_started(ra), 0);
    CHECK_INT(dsq_readahead_open(ra, path_of("plain.log"), &e), 0);
    CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 1);
    CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 0);
    CHECK_INT(dsq_readahead_start(ra), 0); /* the file has ended */
    CHECK_INT(dsq_readahead_started(ra), 0);
    CHECK_INT(dsq_readahead_open(ra, path_of("big.log.zst"), &e), 0);
    CHECK_INT(dsq_readahead_start(ra), 0);
    CHECK_INT(dsq_readahead_start(ra), 0);
    CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 1);
    CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 0); /* the rest is skipped */
    CHECK_INT(dsq_readahead_next_member(ra, &mi, &e), 0);
    CHECK(dsq_readahead_bytes_in(ra) > 0);
    dsq_readahead_free(ra);
}

static void test_setup(void)
{
    CHECK_INT(test_tmpdir_new(tmp), 0);
    make_inputs();
}
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_same_as_direct), T(test_close_early), T(test_free_running),
          T(test_kept_chunks_unchanged_while_read), T(test_start_when_nothing_to_do),
          T(test_teardown))
