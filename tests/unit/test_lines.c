/* Line splitter: terminators, chunk boundaries anywhere, cut lines, the sentinel
 * contract and the stats. Every chunk is fed from its own exact-size heap copy so
 * ASan catches any read past a chunk's end. Lines are recorded as one string,
 * "<line>" per line and "<line>!" for a cut one, so whole streams compare at once. */
#include <stdlib.h>

#include "dsq/dsq.h"
#include "lines.h"
#include "test.h"

typedef struct collect {
    char out[1 << 16];
    size_t n;
    int lines;
    int bad_sentinel;
    int stop_after;         /* return 7 from the callback after this many lines (0: never) */
    const char *chunk;      /* the chunk being fed, to tell in-place lines from copies */
    size_t chunk_len;
} collect;

static int on_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    collect *c = ctx;
    if (line[len] != '\n' && line[len] != '\r')
        c->bad_sentinel++;
    int in_place = c->chunk && line >= c->chunk && line + len < c->chunk + c->chunk_len;
    if (!in_place) { /* a copied line promises DSQ_LINES_PAD readable bytes after it */
        volatile char sink = 0;
        for (size_t i = 1; i <= DSQ_LINES_PAD; i++)
            sink ^= line[len + i];
        (void)sink;
    }
    if (len + 4 > sizeof c->out - c->n - 1) { /* keep the collector bounded: a marker */
        line = "...";
        len = 3;
    }
    c->out[c->n++] = '<';
    memcpy(c->out + c->n, line, len);
    c->n += len;
    c->out[c->n++] = '>';
    if (flags & DSQ_LINE_CUT)
        c->out[c->n++] = '!';
    c->lines++;
    return c->stop_after && c->lines >= c->stop_after ? 7 : 0;
}

static int feed_copy(dsq_lines *lb, collect *c, const char *data, size_t len)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    c->chunk = copy;
    c->chunk_len = len;
    int rc = dsq_lines_feed(lb, copy, len);
    c->chunk = NULL;
    free(copy);
    return rc;
}

static dsq_lines *new_lines(collect *c, size_t max_line)
{
    dsq_lines_params p = {max_line, on_line, c};
    dsq_lines *lb = NULL;
    CHECK_INT(dsq_lines_new(&p, &lb), 0);
    return lb;
}

/* Feeds text split at the given cut points (sorted, within [0, len]) and finishes. */
static void run_split(const char *text, size_t len, size_t max_line, const size_t *cuts,
                      int ncuts, collect *c)
{
    memset(c, 0, sizeof *c);
    dsq_lines *lb = new_lines(c, max_line);
    size_t at = 0;
    for (int i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        CHECK_INT(feed_copy(lb, c, text + at, to - at), 0);
        at = to;
    }
    CHECK_INT(dsq_lines_finish(lb), 0);
    CHECK_INT(c->bad_sentinel, 0);
    dsq_lines_free(lb);
}

static void expect_whole(const char *text, size_t max_line, const char *want)
{
    collect c;
    run_split(text, strlen(text), max_line, NULL, 0, &c);
    c.out[c.n] = 0;
    if (strcmp(c.out, want) != 0) {
        fprintf(stderr, "text \"%s\" (max_line %zu): got %s, expected %s\n", text, max_line,
                c.out, want);
        test_failures++;
    }
}

static void test_terminators(void)
{
    expect_whole("a\nbb\nccc\n", 0, "<a><bb><ccc>");
    expect_whole("a\r\nbb\r\nccc\r\n", 0, "<a><bb><ccc>");
    expect_whole("10%\r20%\r30%\ndone\n", 0, "<10%><20%><30%><done>");
    expect_whole("a\r\rb\r\n\r\nc", 0, "<a><><b><><c>");
    expect_whole("mixed\nlines\r\nand\rbars", 0, "<mixed><lines><and><bars>");
}

static void test_empty_and_unterminated(void)
{
    expect_whole("", 0, "");
    expect_whole("\n", 0, "<>");
    expect_whole("\n\n\n", 0, "<><><>");
    expect_whole("\r\n\r\n", 0, "<><>");
    expect_whole("no newline", 0, "<no newline>");
    expect_whole("one\ntwo", 0, "<one><two>");
    expect_whole("x", 0, "<x>");
    /* NUL bytes are ordinary bytes */
    collect c;
    run_split("a\0b\nc\n", 6, 0, NULL, 0, &c);
    CHECK_INT(c.lines, 2);
    CHECK_INT(c.n, 8);
    CHECK(memcmp(c.out, "<a\0b><c>", 8) == 0);
}

static void test_crlf_split_across_feeds(void)
{
    collect c;
    const char *t = "first\r\nsecond\r\n";
    size_t cut = 6; /* "first\r" | "\nsecond\r\n" */
    run_split(t, strlen(t), 0, &cut, 1, &c);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<first><second>");
    /* a lone '\r' at a chunk end followed by text is a line end, not half of "\r\n" */
    t = "bar 1\rbar 2\r";
    cut = 6;
    run_split(t, strlen(t), 0, &cut, 1, &c);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<bar 1><bar 2>");
    /* "\r" | "" | "\n": an empty feed between does not lose the pending '\r' */
    memset(&c, 0, sizeof c);
    dsq_lines *lb = new_lines(&c, 0);
    CHECK_INT(feed_copy(lb, &c, "x\r", 2), 0);
    CHECK_INT(feed_copy(lb, &c, "", 0), 0);
    CHECK_INT(feed_copy(lb, &c, "\ny\n", 3), 0);
    CHECK_INT(dsq_lines_finish(lb), 0);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<x><y>");
    dsq_lines_free(lb);
}

/* Every way of cutting text into two and three chunks gives what one feed gives. */
static void check_all_splits(const char *text, size_t max_line)
{
    size_t len = strlen(text);
    collect whole, c;
    run_split(text, len, max_line, NULL, 0, &whole);
    for (size_t i = 0; i <= len; i++) {
        run_split(text, len, max_line, &i, 1, &c);
        if (c.n != whole.n || memcmp(c.out, whole.out, c.n) != 0) {
            fprintf(stderr, "split at %zu (max_line %zu) of \"%s\": got %.*s, expected %.*s\n",
                    i, max_line, text, (int)c.n, c.out, (int)whole.n, whole.out);
            test_failures++;
        }
        for (size_t j = i; j <= len; j++) {
            size_t cuts[2] = {i, j};
            run_split(text, len, max_line, cuts, 2, &c);
            if (c.n != whole.n || memcmp(c.out, whole.out, c.n) != 0) {
                fprintf(stderr, "split at %zu,%zu (max_line %zu) of \"%s\": got %.*s\n", i, j,
                        max_line, text, (int)c.n, c.out);
                test_failures++;
            }
        }
    }
}

static void test_every_split_point(void)
{
    check_all_splits("alpha\nbeta\r\ngamma\rdelta\n\n\r\nend", 0);
    check_all_splits("\r\n\r\r\n\n", 0);
    check_all_splits("a\r\n", 0);
}

static void test_every_split_point_with_cut_lines(void)
{
    /* max_line 4: lines of 3, 4 (not cut), 5 and 12 bytes (cut), ending in each terminator */
    const char *t = "abc\nabcd\r\nabcde\rabcdefghijkl\r\nxy\nlonglonglong";
    expect_whole(t, 4, "<abc><abcd><abcd>!<abcd>!<xy><long>!");
    check_all_splits(t, 4);
    check_all_splits("abcdefgh\r\n\r\nzz", 4);
}

static void test_long_line_cut(void)
{
    expect_whole("0123456789\nnext\n", 4, "<0123>!<next>");
    expect_whole("short\n0123456789\nnext\nlast", 6, "<short><012345>!<next><last>");
    /* exactly max_line is not cut */
    expect_whole("0123\n", 4, "<0123>");
    /* a cut line with no terminator at the very end */
    expect_whole("ok\n0123456789", 4, "<ok><0123>!");

    /* a long line spanning several chunks: head delivered once, next lines kept */
    collect c;
    memset(&c, 0, sizeof c);
    dsq_lines *lb = new_lines(&c, 8);
    const char *chunks[] = {"ab", "cdefg", "hijklmnop", "qrstuvwxyz", "0123", "\nafter\n", "tail"};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        CHECK_INT(feed_copy(lb, &c, chunks[i], strlen(chunks[i])), 0);
    CHECK_INT(dsq_lines_finish(lb), 0);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<abcdefgh>!<after><tail>");
    const dsq_lines_stats *st = dsq_lines_stats_get(lb);
    CHECK_INT(st->lines, 3);
    CHECK_INT(st->cut, 1);
    CHECK_INT(c.bad_sentinel, 0);
    dsq_lines_free(lb);

    /* a line of max_line bytes exactly filling the carry, then one more byte */
    memset(&c, 0, sizeof c);
    lb = new_lines(&c, 8);
    CHECK_INT(feed_copy(lb, &c, "12345678", 8), 0);
    CHECK_INT(feed_copy(lb, &c, "9\nok\n", 5), 0);
    CHECK_INT(dsq_lines_finish(lb), 0);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<12345678>!<ok>");
    dsq_lines_free(lb);
}

static void test_big_default_cap(void)
{
    /* default cap is 1 MiB: a 3 MiB line in 64 KiB chunks comes out as its first MiB */
    size_t big = 3u << 20, chunk = 1 << 16;
    char *t = malloc(big + 16);
    for (size_t i = 0; i < big; i++)
        t[i] = (char)('a' + i % 26);
    memcpy(t + big, "\nnext\n", 6);
    size_t total = big + 6;
    collect c;
    memset(&c, 0, sizeof c);
    dsq_lines *lb = new_lines(&c, 0);
    for (size_t at = 0; at < total; at += chunk) {
        size_t n = total - at < chunk ? total - at : chunk;
        CHECK_INT(feed_copy(lb, &c, t + at, n), 0);
    }
    CHECK_INT(dsq_lines_finish(lb), 0);
    const dsq_lines_stats *st = dsq_lines_stats_get(lb);
    CHECK_INT(st->lines, 2);
    CHECK_INT(st->cut, 1);
    CHECK_INT(st->bytes, total);
    CHECK_INT(c.lines, 2);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<...>!<next>");
    dsq_lines_free(lb);
    free(t);
}

static int record_len(void *ctx, const char *line, size_t len, unsigned flags)
{
    size_t *v = ctx;
    v[0]++;
    v[1] = len;
    v[2] = flags;
    v[3] = (size_t)(unsigned char)line[0];
    v[4] = (size_t)(unsigned char)line[len - 1];
    v[5] = (size_t)(unsigned char)line[len];
    return 0;
}

static void test_cut_keeps_first_bytes(void)
{
    size_t v[6] = {0};
    dsq_lines_params p = {1000, record_len, v};
    dsq_lines *lb = NULL;
    CHECK_INT(dsq_lines_new(&p, &lb), 0);
    char buf[5000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)('0' + i % 10);
    buf[sizeof buf - 1] = '\n';
    CHECK_INT(dsq_lines_feed(lb, buf, sizeof buf), 0);
    CHECK_INT(v[0], 1);
    CHECK_INT(v[1], 1000);
    CHECK_INT(v[2], DSQ_LINE_CUT);
    CHECK_INT(v[3], '0');
    CHECK_INT(v[4], '9'); /* byte 999 */
    CHECK(v[5] == '\n' || v[5] == '\r');
    dsq_lines_free(lb);
}

static void test_stats_and_reset(void)
{
    collect c;
    memset(&c, 0, sizeof c);
    dsq_lines *lb = new_lines(&c, 4);
    CHECK_INT(feed_copy(lb, &c, "a\r\nbbbbbbbb\ncc", 14), 0);
    CHECK_INT(dsq_lines_finish(lb), 0);
    const dsq_lines_stats *st = dsq_lines_stats_get(lb);
    CHECK_INT(st->lines, 3);
    CHECK_INT(st->cut, 1);
    CHECK_INT(st->bytes, 14);

    /* reset forgets a partial line and zeroes the stats */
    CHECK_INT(feed_copy(lb, &c, "partial", 7), 0);
    dsq_lines_reset(lb);
    CHECK_INT(st->lines, 0);
    CHECK_INT(st->cut, 0);
    CHECK_INT(st->bytes, 0);
    c.n = 0;
    CHECK_INT(feed_copy(lb, &c, "new\n", 4), 0);
    CHECK_INT(dsq_lines_finish(lb), 0);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<new>");
    CHECK_INT(st->lines, 1);

    /* reset also forgets a pending "\r" and a line being skipped */
    CHECK_INT(feed_copy(lb, &c, "x\r", 2), 0);
    dsq_lines_reset(lb);
    CHECK_INT(feed_copy(lb, &c, "0123456789", 10), 0); /* cut head delivered, rest skipped */
    dsq_lines_reset(lb);
    c.n = 0;
    CHECK_INT(feed_copy(lb, &c, "\nz\n", 3), 0);
    CHECK_INT(dsq_lines_finish(lb), 0);
    c.out[c.n] = 0;
    CHECK_STR(c.out, "<><z>");
    dsq_lines_free(lb);
}

static void test_callback_stops_feed(void)
{
    collect c;
    memset(&c, 0, sizeof c);
    c.stop_after = 2;
    dsq_lines *lb = new_lines(&c, 0);
    CHECK_INT(feed_copy(lb, &c, "1\n2\n3\n4\n", 8), 7);
    CHECK_INT(c.lines, 2);
    /* also when the stopping line is delivered by finish */
    dsq_lines_reset(lb);
    c.lines = 1;
    c.n = 0;
    CHECK_INT(feed_copy(lb, &c, "last", 4), 0);
    CHECK_INT(dsq_lines_finish(lb), 7);
    dsq_lines_free(lb);
    dsq_lines_free(NULL);
}

TEST_MAIN(T(test_terminators), T(test_empty_and_unterminated), T(test_crlf_split_across_feeds),
          T(test_every_split_point), T(test_every_split_point_with_cut_lines), T(test_long_line_cut),
          T(test_big_default_cap), T(test_cut_keeps_first_bytes), T(test_stats_and_reset),
          T(test_callback_stops_feed))
