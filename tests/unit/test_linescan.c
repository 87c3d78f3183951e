/* Line-end backends (linescan.h) against each other and against a bytewise loop:
 * the find primitive at every start and end near 32-byte boundaries, then whole
 * streams through the splitter with each backend and in random chunkings (lines,
 * flags and stats byte for byte), then how the backend is chosen. Every buffer is
 * an exact-size heap copy, so ASan catches a backend reading past its end. When the
 * CPU has no AVX2 only the scalar backend runs (and the test says so). */
#include <stdint.h>
#include <stdlib.h>

#include "dsq/dsq.h"
#include "linescan.h"
#include "lines.h"
#include "test.h"

static dsq_linescan_backend backends[DSQ_LINESCAN_COUNT];
static int nbackends;

static void list_backends(void)
{
    nbackends = 0;
    for (int b = DSQ_LINESCAN_SCALAR; b < DSQ_LINESCAN_COUNT; b++) {
        if (dsq_linescan_usable((dsq_linescan_backend)b))
            backends[nbackends++] = (dsq_linescan_backend)b;
        else
            fprintf(stderr, "note: backend %s not usable here, not compared\n",
                    dsq_linescan_name((dsq_linescan_backend)b));
    }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32) % n;
}

/* Bytes that are not terminators but sit next to them in value, or differ from them
 * only in the high bit, or are NUL: a backend comparing the wrong way trips on them. */
static const unsigned char fillers[] = {'a', ' ', 0x00, 0x09, 0x0b, 0x0c, 0x0e, 0x8a,
                                        0x8d, 0xff, 0x80, 0x2a, 0x1a, 0x1d, 0x4a, 0x4d};

static char filler(void) { return (char)fillers[rnd(sizeof fillers)]; }

static const char *find_naive(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p == '\n' || *p == '\r')
            return p;
    return NULL;
}

/* Every backend on [buf+s, buf+e) for all s <= e, against the bytewise loop (run
 * once from each start: next[s] is the first terminator at or after s). */
static void check_all_ranges(const char *buf, size_t len, const char *what)
{
    size_t next[512];
    next[len] = len;
    for (size_t i = len; i-- > 0;)
        next[i] = buf[i] == '\n' || buf[i] == '\r' ? i : next[i + 1];
    CHECK(find_naive(buf, buf + len) == (next[0] < len ? buf + next[0] : NULL));
    for (int k = 0; k < nbackends; k++) {
        dsq_linescan ls;
        CHECK_INT(dsq_linescan_init(&ls, backends[k]), 0);
        for (size_t e = 0; e <= len; e++) {
            for (size_t s = 0; s <= e; s++) {
                dsq_linescan_chunk(&ls);
                const char *got = dsq_linescan_find(&ls, buf + s, buf + e);
                const char *want = next[s] < e ? buf + next[s] : NULL;
                if (got != want) {
                    fprintf(stderr, "%s: backend %s, len %zu, range [%zu, %zu): got %td, "
                            "expected %td\n", what, dsq_linescan_name(backends[k]), len, s, e,
                            got ? got - buf : -1, want ? want - buf : -1);
                    test_failures++;
                    return;
                }
            }
        }
    }
}

/* One terminator ('\n' or '\r') at every position of buffers of every length up to
 * 100 (so before, on and after the 32- and 64-byte steps), and none. */
static void test_find_one_terminator_everywhere(void)
{
    for (size_t len = 0; len <= 100; len++) {
        char *buf = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = filler();
        check_all_ranges(buf, len, "no terminator");
        for (size_t t = 0; t < len; t++) {
            char keep = buf[t];
            buf[t] = '\n';
            check_all_ranges(buf, len, "one '\\n'");
            buf[t] = '\r';
            check_all_ranges(buf, len, "one '\\r'");
            buf[t] = keep;
        }
        free(buf);
    }
}

/* Random buffers with terminators at random densities: every range of each. */
static void test_find_random_buffers(void)
{
    for (int iter = 0; iter < 300; iter++) {
        size_t len = rnd(260);
        uint32_t density = 1 + rnd(80); /* about one terminator every density bytes */
        char *buf = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = rnd(density) == 0 ? (rnd(2) ? '\n' : '\r') : filler();
        check_all_ranges(buf, len, "random buffer");
        free(buf);
    }
}

/* Scanning one chunk line by line as lines.c does: p only moves forward, so the
 * scalar backend's cached '\n' is reused across lone '\r'. */
static void test_find_walks_a_chunk(void)
{
    for (int iter = 0; iter < 500; iter++) {
        size_t len = 1 + rnd(3000);
        char *buf = malloc(len);
        uint32_t density = 1 + rnd(200);
        for (size_t i = 0; i < len; i++)
            buf[i] = rnd(density) == 0 ? (rnd(3) ? '\r' : '\n') : filler();
        for (int k = 0; k < nbackends; k++) {
            dsq_linescan ls;
            dsq_linescan_init(&ls, backends[k]);
            dsq_linescan_chunk(&ls);
            const char *p = buf, *end = buf + len;
            for (;;) {
                const char *got = dsq_linescan_find(&ls, p, end);
                const char *want = find_naive(p, end);
                if (got != want) {
                    fprintf(stderr, "walk %d: backend %s at %td: got %td, expected %td\n", iter,
                            dsq_linescan_name(backends[k]), p - buf, got ? got - buf : -1,
                            want ? want - buf : -1);
                    test_failures++;
                    break;
                }
                if (!got)
                    break;
                p = got + 1;
            }
        }
        free(buf);
    }
}

/* Everything a splitter hands out, as bytes: per line its flags, length and text. */
typedef struct record {
    char *out;
    size_t n, cap;
    int bad_sentinel;
} record;

static void rec_put(record *r, const void *p, size_t n)
{
    if (r->n + n > r->cap) {
        r->cap = (r->n + n) * 2 + 256;
        r->out = realloc(r->out, r->cap);
    }
    memcpy(r->out + r->n, p, n);
    r->n += n;
}

static int on_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    record *r = ctx;
    if (line[len] != '\n' && line[len] != '\r')
        r->bad_sentinel++;
    unsigned char f = (unsigned char)flags;
    rec_put(r, &f, 1);
    rec_put(r, &len, sizeof len);
    rec_put(r, line, len);
    return 0;
}

/* Splits text fed in chunks of the given sizes (cycled; 0 = all at once) with
 * backend b, into r (lines, then the stats). */
static void split_with(dsq_linescan_backend b, const char *text, size_t len, size_t max_line,
                       const size_t *chunks, int nchunks, record *r)
{
    r->n = 0;
    r->bad_sentinel = 0;
    dsq_lines_params p = {max_line, on_line, r};
    dsq_lines *lb = NULL;
    CHECK_INT(dsq_lines_new(&p, &lb), 0);
    CHECK_INT(dsq_lines_set_backend(lb, b), 0);
    CHECK_INT(dsq_lines_backend(lb), b);
    size_t at = 0;
    for (int i = 0; at < len; i++) {
        size_t n = nchunks ? chunks[i % nchunks] : len - at;
        if (n > len - at)
            n = len - at;
        char *copy = malloc(n ? n : 1);
        memcpy(copy, text + at, n);
        CHECK_INT(dsq_lines_feed(lb, copy, n), 0);
        free(copy);
        at += n;
    }
    CHECK_INT(dsq_lines_finish(lb), 0);
    const dsq_lines_stats *st = dsq_lines_stats_get(lb);
    rec_put(r, st, sizeof *st);
    CHECK_INT(r->bad_sentinel, 0);
    dsq_lines_free(lb);
}

/* A stream of log-like pieces: text runs, every terminator kind, runs of '\r'
 * (tqdm), lines longer than the cap, NULs and high bytes, terminators placed just
 * before, on and after 32-byte steps. */
static size_t make_stream(char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 200 < cap) {
        switch (rnd(10)) {
        case 0:
            buf[n++] = '\n';
            break;
        case 1:
            buf[n++] = '\r';
            buf[n++] = '\n';
            break;
        case 2:
            buf[n++] = '\r';
            break;
        case 3: { /* text ending 31, 32 or 33 bytes on, then a terminator */
            size_t k = 30 + rnd(5);
            for (size_t i = 0; i < k; i++)
                buf[n++] = filler();
            buf[n++] = "\n\r"[rnd(2)];
            break;
        }
        case 4: { /* a long run with no terminator (over most caps) */
            size_t k = 60 + rnd(140);
            for (size_t i = 0; i < k; i++)
                buf[n++] = filler();
            break;
        }
        default: {
            size_t k = rnd(40);
            for (size_t i = 0; i < k; i++)
                buf[n++] = filler();
            break;
        }
        }
    }
    return n;
}

static void expect_same(const record *a, const record *b, const char *what, int iter)
{
    if (a->n != b->n || memcmp(a->out, b->out, a->n) != 0) {
        fprintf(stderr, "stream %d: %s differs from scalar in one feed (%zu vs %zu bytes)\n",
                iter, what, b->n, a->n);
        test_failures++;
    }
}

/* Each backend, in one feed and in random chunkings, splits exactly as the scalar
 * backend does in one feed. */
static void test_backends_split_alike(void)
{
    static const size_t caps[] = {1, 7, 31, 32, 33, 64, 100, 1000, 0};
    size_t bufcap = 8192;
    char *buf = malloc(bufcap);
    record want = {0}, got = {0};
    for (int iter = 0; iter < 1500; iter++) {
        size_t len = make_stream(buf, 200 + rnd((uint32_t)bufcap - 200));
        size_t max_line = caps[rnd(sizeof caps / sizeof caps[0])];
        split_with(DSQ_LINESCAN_SCALAR, buf, len, max_line, NULL, 0, &want);
        for (int k = 0; k < nbackends; k++) {
            char what[96];
            split_with(backends[k], buf, len, max_line, NULL, 0, &got);
            snprintf(what, sizeof what, "%s, one feed", dsq_linescan_name(backends[k]));
            expect_same(&want, &got, what, iter);
            size_t chunks[4];
            int nchunks = 1 + (int)rnd(4);
            for (int c = 0; c < nchunks; c++) /* small, near 32 and 64, or large */
                chunks[c] = rnd(3) == 0 ? 1 + rnd(8) : rnd(2) ? 28 + rnd(40) : 1 + rnd(700);
            split_with(backends[k], buf, len, max_line, chunks, nchunks, &got);
            snprintf(what, sizeof what, "%s, chunks of %zu..", dsq_linescan_name(backends[k]),
                     chunks[0]);
            expect_same(&want, &got, what, iter);
        }
    }
    free(want.out);
    free(got.out);
    free(buf);
}

/* The default 1 MiB cap: a 1.5 MiB line among short ones and tqdm bars, whole and
 * in 64 KiB chunks, splits alike with every backend. */
static void test_backends_split_alike_at_default_cap(void)
{
    size_t len = 3u << 20;
    char *buf = malloc(len);
    size_t n = 0;
    while (n < len) {
        size_t k = n > (1u << 20) && n < (5u << 19) ? (3u << 19) : 10 + rnd(150);
        for (size_t i = 0; i < k && n < len; i++)
            buf[n++] = (char)('a' + rnd(26));
        if (n < len)
            buf[n++] = "\n\r\n\r"[rnd(4)];
    }
    record want = {0}, got = {0};
    size_t chunk = 1 << 16;
    split_with(DSQ_LINESCAN_SCALAR, buf, len, 0, NULL, 0, &want);
    for (int k = 0; k < nbackends; k++) {
        split_with(backends[k], buf, len, 0, NULL, 0, &got);
        expect_same(&want, &got, dsq_linescan_name(backends[k]), 0);
        split_with(backends[k], buf, len, 0, &chunk, 1, &got);
        expect_same(&want, &got, dsq_linescan_name(backends[k]), 1);
    }
    dsq_lines_stats st; /* the record ends with the stats */
    memcpy(&st, want.out + want.n - sizeof st, sizeof st);
    CHECK_INT(st.cut, 1);
    free(want.out);
    free(got.out);
    free(buf);
}

/* AUTO follows DSQ_LINES_BACKEND when the CPU runs what it names, else takes the
 * fastest usable backend; a backend the CPU cannot run is refused. */
static void test_backend_choice(void)
{
    dsq_linescan_backend best =
        dsq_linescan_usable(DSQ_LINESCAN_AVX2) ? DSQ_LINESCAN_AVX2 : DSQ_LINESCAN_SCALAR;
    unsetenv("DSQ_LINES_BACKEND");
    CHECK_INT(dsq_linescan_resolve(DSQ_LINESCAN_AUTO), best);
    setenv("DSQ_LINES_BACKEND", "scalar", 1);
    CHECK_INT(dsq_linescan_resolve(DSQ_LINESCAN_AUTO), DSQ_LINESCAN_SCALAR);
    dsq_lines_params p = {0, on_line, NULL};
    dsq_lines *lb = NULL;
    CHECK_INT(dsq_lines_new(&p, &lb), 0);
    CHECK_INT(dsq_lines_backend(lb), DSQ_LINESCAN_SCALAR);
    dsq_lines_free(lb);
    setenv("DSQ_LINES_BACKEND", "avx2", 1);
    CHECK_INT(dsq_linescan_resolve(DSQ_LINESCAN_AUTO), best);
    setenv("DSQ_LINES_BACKEND", "sse9", 1);
    CHECK_INT(dsq_linescan_resolve(DSQ_LINESCAN_AUTO), best);
    unsetenv("DSQ_LINES_BACKEND");
    CHECK_INT(dsq_linescan_resolve(DSQ_LINESCAN_SCALAR), DSQ_LINESCAN_SCALAR);

    dsq_linescan ls;
    int avx2 = dsq_linescan_usable(DSQ_LINESCAN_AVX2);
    CHECK_INT(dsq_linescan_init(&ls, DSQ_LINESCAN_AVX2), avx2 ? 0 : DSQ_EUSAGE);
    CHECK_INT(ls.backend, avx2 ? DSQ_LINESCAN_AVX2 : DSQ_LINESCAN_SCALAR);
    CHECK_INT(dsq_linescan_init(&ls, DSQ_LINESCAN_COUNT), DSQ_EUSAGE);
    CHECK_INT(ls.backend, DSQ_LINESCAN_SCALAR);
    CHECK_STR(dsq_linescan_name(DSQ_LINESCAN_SCALAR), "scalar");
    CHECK_STR(dsq_linescan_name(DSQ_LINESCAN_AVX2), "avx2");
    CHECK_STR(dsq_linescan_name(DSQ_LINESCAN_COUNT), "?");
}

static void test_setup(void) { list_backends(); }

TEST_MAIN(T(test_setup), T(test_find_one_terminator_everywhere), T(test_find_random_buffers),
          T(test_find_walks_a_chunk), T(test_backends_split_alike),
          T(test_backends_split_alike_at_default_cap), T(test_backend_choice))
