/* libFuzzer targets for the surfaces below the grammars (see fuzz_target.c for
 * how targets are built and replayed):
 *
 *   lines   bytes -> line splitter in input-chosen chunks; every line handed out
 *           must respect the cap and end on its sentinel ('\n' or '\r'); run with
 *           every line-end backend the CPU has (linescan.h), in those chunks and in
 *           one feed, which must all hand out the same lines, flags and stats
 *   time    bytes -> the query time literal parser, and civil <-> epoch
 *           conversions of the numbers the bytes make (round trips checked)
 *   query   bytes -> the query parser; an error must point inside the text
 *   input   bytes -> a file -> format detection and every decoder (zstd, gzip,
 *           xz, bzip2, tar, zip, nested members), every member read to the end
 *   values  bytes -> the event block, rollup chunk and series group decoders (an
 *           exact-size copy: damage must be reported, never overrun); and bytes as
 *           (time, value) pairs -> a chunk, as (kind, event, value) -> a chunk, as
 *           events -> a block stored in rows or columns (dsq_block_encode), and
 *           as series summaries -> a group, each decoded back bit for bit
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_surfaces.h"
#include "input.h"
#include "linescan.h"
#include "lines.h"
#include "sergroup.h"
#include "event.h"
#include "query.h"
#include "rollup.h"
#include "timeconv.h"

#define MAX_LINE 4096

/* What one splitter handed out: per line its flags, length and bytes, then the
 * stats. Sized once per input (lines <= size + 1, their bytes <= size). */
typedef struct lines_record {
    unsigned char *buf;
    size_t n, cap;
} lines_record;

static void record_put(lines_record *r, const void *p, size_t n)
{
    if (n > r->cap - r->n)
        abort(); /* the bound above is wrong */
    memcpy(r->buf + r->n, p, n);
    r->n += n;
}

static int check_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    if (len > MAX_LINE || (line[len] != '\n' && line[len] != '\r'))
        abort();
    lines_record *r = ctx;
    unsigned char f = (unsigned char)flags;
    record_put(r, &f, 1);
    record_put(r, &len, sizeof len);
    record_put(r, line, len);
    return 0;
}

void fuzz_feed(dsq_lines *lb, const uint8_t *data, size_t size, size_t max_chunk)
{
    size_t chunk = size ? (size_t)data[0] % max_chunk + 1 : 1;
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        char *copy = malloc(n); /* exact size: ASan sees any read past the chunk */
        memcpy(copy, data + off, n);
        dsq_lines_feed(lb, copy, n);
        free(copy);
    }
}

/* Splits data with backend b (chunks chosen by fuzz_feed, or one feed) into r. */
static void split_lines(dsq_lines *lb, dsq_linescan_backend b, const uint8_t *data, size_t size,
                        int one_feed, lines_record *r)
{
    r->n = 0;
    if (dsq_lines_set_backend(lb, b) != 0)
        abort();
    dsq_lines_reset(lb);
    if (one_feed) {
        char *copy = malloc(size ? size : 1);
        memcpy(copy, data, size);
        dsq_lines_feed(lb, copy, size);
        free(copy);
    } else {
        fuzz_feed(lb, data, size, 97);
    }
    dsq_lines_finish(lb);
    record_put(r, dsq_lines_stats_get(lb), sizeof(dsq_lines_stats));
}

static void fuzz_lines(const uint8_t *data, size_t size)
{
    static lines_record want, got;
    static dsq_lines *ref, *lb; /* their callbacks fill want and got */
    if (!lb) {
        dsq_lines_params pw = {MAX_LINE, check_line, &want}, pg = {MAX_LINE, check_line, &got};
        if (dsq_lines_new(&pw, &ref) || dsq_lines_new(&pg, &lb))
            abort();
    }
    size_t cap = (size + 1) * (1 + sizeof(size_t)) + size + sizeof(dsq_lines_stats);
    want.buf = malloc(cap);
    got.buf = malloc(cap);
    if (!want.buf || !got.buf)
        abort();
    want.cap = got.cap = cap;
    split_lines(ref, DSQ_LINESCAN_SCALAR, data, size, 0, &want);
    for (int b = DSQ_LINESCAN_SCALAR; b < DSQ_LINESCAN_COUNT; b++) {
        if (!dsq_linescan_usable((dsq_linescan_backend)b))
            continue;
        for (int one_feed = 0; one_feed <= 1; one_feed++) {
            split_lines(lb, (dsq_linescan_backend)b, data, size, one_feed, &got);
            if (got.n != want.n || memcmp(got.buf, want.buf, want.n) != 0)
                abort(); /* backends or chunkings disagree */
        }
    }
    free(want.buf);
    free(got.buf);
    want.buf = got.buf = NULL;
}

static char *cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

static void fuzz_time(const uint8_t *data, size_t size)
{
    char *s = cstr(data, size);
    double t;
    char out[64];
    if (dsq_query_time(s, &t) == 0)
        dsq_time_format((int64_t)t, out);
    if (size >= 8) { /* civil fields from the bytes; in range ones must round-trip */
        int y = 1900 + data[0] % 200, mo = 1 + data[1] % 12, d = 1 + data[2] % 28;
        int h = data[3] % 24, mi = data[4] % 60, sec = data[5] % 60, us = (data[6] << 8 | data[7]) * 15;
        int64_t e = dsq_time_from_civil(y, mo, d, h, mi, sec, us);
        if (dsq_time_year(e) != y)
            abort();
        dsq_time_format(e, out);
        int64_t any;
        memcpy(&any, data, 8);
        dsq_time_year(any);
        dsq_time_format(any, out);
    }
    free(s);
}

static void fuzz_query(const uint8_t *data, size_t size)
{
    char *s = cstr(data, size);
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    if (dsq_query_parse(s, &q, &err) != 0 &&
        (err.offset < 0 || (size_t)err.offset > strlen(s) || err.length < 0))
        abort();
    free(s);
}

static void fuzz_input(const uint8_t *data, size_t size)
{
    static dsq_input *in;
    static char path[64];
    if (!in) {
        snprintf(path, sizeof path, "/tmp/dsq-fuzz-input-%d", (int)getpid());
        if (dsq_input_new(&in))
            abort();
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(data, 1, size, f);
    fclose(f);
    dsq_error err;
    dsq_error_clear(&err);
    /* zstd both ways: as a stream, and block by block into the ring */
    dsq_input_set_zdirect_min(size % 2 ? 0 : (size_t)256 << 10);
    if (dsq_input_open(in, path, &err) == 0) {
        dsq_member_info mi;
        uint64_t total = 0;
        while (total < ((uint64_t)64 << 20) && dsq_input_next_member(in, &mi, &err) == 1) {
            const char *p;
            size_t n;
            while (dsq_input_read(in, &p, &n, &err) == 0 && n > 0 && total < ((uint64_t)64 << 20)) {
                volatile char first = p[0], last = p[n - 1]; /* the view must be readable */
                (void)first, (void)last;
                total += n;
            }
            dsq_input_take_damage(in, &err);
        }
        dsq_input_close(in);
    }
    unlink(path);
}

/* The bytes as a series group (sergroup.h): read from an exact-size copy; then
 * as summaries (76 bytes each), packed into a group and read back bit for bit. */
static void fuzz_groups(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    dsq_group_iter it;
    dsq_group_entry e;
    dsq_group_iter_init(&it, copy, size);
    while (dsq_group_next(&it, &e) == 1) /* (pairs may follow chunks: schema 11) */
        if (e.pairs < copy || e.pairs + e.npairs > copy + size)
            abort();
    dsq_group_iter_init(&it, copy, size); /* skimmed: the same bytes, summaries read on asking */
    while (dsq_group_skim(&it, &e) == 1) {
        dsq_series_rec r;
        if (e.sum < copy || e.sum + e.sum_len > copy + size || e.raw + e.raw_len > copy + size)
            abort();
        (void)dsq_group_entry_rec(&e, &r);
    }
    free(copy);
    enum { REC = 76 };
    size_t n = size / REC;
    dsq_group_entry *in = calloc(n ? n : 1, sizeof *in);
    unsigned char *g = malloc(n * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX) + 1);
    unsigned char *o = g;
    dsq_group_prev prev = {0, 0};
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data + REC * i;
        dsq_series_rec *r = &in[i].rec;
        memcpy(&r->count, p, 8);
        memcpy(&r->sum, p + 8, 8);
        memcpy(&r->min, p + 16, 8);
        memcpy(&r->max, p + 24, 8);
        memcpy(&r->first_v, p + 32, 8);
        memcpy(&r->last_v, p + 40, 8);
        memcpy(&r->first_t, p + 48, 8);
        memcpy(&r->last_t, p + 56, 8);
        memcpy(&r->nchunks, p + 64, 4);
        r->unit = p[68];
        memcpy(&in[i].rank, p + 69, 4);
        in[i].source = (uint32_t)p[73] | (uint32_t)p[74] << 8 | (uint32_t)p[75] << 16;
        in[i].host = (uint32_t)p[74] * 16777619u + p[75]; /* any order: deltas wrap */
        o = dsq_group_put(o, &prev, &in[i]);
    }
    dsq_group_iter_init(&it, g, (size_t)(o - g));
    size_t k = 0;
    int got;
    while ((got = dsq_group_next(&it, &e)) == 1) {
        if (k >= n || e.host != in[k].host || e.rank != in[k].rank || e.source != in[k].source || e.npairs ||
            !dsq_summary_same(&in[k].rec, &e.rec))
            abort();
        k++;
    }
    if (got != 0 || k != n)
        abort();
    /* the last entry's key read off the heads alone: the walk's last */
    uint32_t host, source;
    int32_t rank;
    size_t count;
    int last = dsq_group_last(g, (size_t)(o - g), &host, &rank, &source, &count);
    if (last != (n > 0) || (n && (count != n || host != in[n - 1].host || rank != in[n - 1].rank ||
                                  source != in[n - 1].source)))
        abort();
    (void)dsq_group_last(data, size, &host, &rank, &source, &count); /* any bytes: no crash */
    /* every other entry left out: skimmed entries rebased from their bytes, as the
     * entries read whole and packed anew */
    unsigned char *ga = malloc(n * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX) + 1);
    unsigned char *gb = malloc(n * (DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX) + 1);
    unsigned char *oa = ga, *ob = gb;
    dsq_group_iter is;
    dsq_group_entry s;
    dsq_group_prev pa = {0, 0}, pb = {0, 0};
    dsq_group_iter_init(&it, g, (size_t)(o - g));
    dsq_group_iter_init(&is, g, (size_t)(o - g));
    for (size_t i = 0; dsq_group_next(&it, &e) == 1; i++) {
        if (dsq_group_skim(&is, &s) != 1)
            abort();
        if (i % 2 == (size > 0 ? data[0] & 1 : 0))
            continue;
        oa = dsq_group_put(oa, &pa, &s);
        e.raw = NULL;
        ob = dsq_group_put(ob, &pb, &e);
    }
    if (oa - ga != ob - gb || memcmp(ga, gb, (size_t)(ob - gb)) != 0)
        abort();
    free(ga);
    free(gb);
    free(in);
    free(g);
}

/* The bytes as events (a shape byte picks kind and field count out of 80 forms,
 * then time, line and one double per field), through a block and its stored value
 * and back: every event bit for bit, in order. The line's top bits say which
 * values are in their series (dsq_block_add_ref: a marker each, back as NaN with
 * the event's number, from the first such line of its kind on). */
static void block_round_trip(const uint8_t *data, size_t size)
{
    static dsq_block_cols *cols;
    if (!cols && dsq_block_cols_new(&cols))
        abort();
    dsq_block b;
    memset(&b, 0, sizeof b);
    const uint8_t *p = data, *end = data + size;
    int n = 0;
    while (end - p >= 13 && end - p >= 13 + 8 * (p[0] % 80 % 5)) { /* whole events only */
        dsq_event ev;
        memset(&ev, 0, sizeof ev);
        unsigned form = p[0] % 80; /* more than a block keeps: column 0 too */
        ev.kind = (uint16_t)(1 + form % 30);
        ev.nf = (uint8_t)(form % 5);
        memcpy(&ev.t_us, p + 1, 8);
        memcpy(&ev.line, p + 9, 4);
        p += 13;
        for (int i = 0; i < ev.nf; i++, p += 8) {
            ev.f[i].name = form * 16 + (unsigned)i + 1;
            memcpy(&ev.f[i].v, p, 8);
        }
        dsq_num_form forms[DSQ_EV_MAXF];
        dsq_ev_forms(&ev, forms);
        uint32_t in_series = ev.nf ? (ev.line >> 28) & ((1u << ev.nf) - 1) : 0;
        if (dsq_block_add_ref(&b, &ev, forms, in_series, ev.line))
            abort();
        n++;
    }
    uint64_t next[64], started = 0;
    const unsigned char *v;
    size_t vn;
    if (dsq_block_encode(cols, &b, &v, &vn))
        abort();
    dsq_block_iter it;
    dsq_event ev;
    if (dsq_block_iter_init(&it, v, vn, b.t_first))
        abort();
    p = data;
    int k = 0, r;
    while ((r = dsq_block_iter_next(&it, &ev)) == 1) {
        unsigned form = p[0] % 80;
        int64_t t;
        uint32_t line;
        memcpy(&t, p + 1, 8);
        memcpy(&line, p + 9, 4);
        p += 13;
        if (k >= n || ev.kind != 1 + form % 30 || ev.nf != form % 5 || ev.t_us != t ||
            ev.line != line)
            abort();
        uint32_t in_series = ev.nf ? (line >> 28) & ((1u << ev.nf) - 1) : 0;
        if (ev.nf && !(started >> ev.kind & 1)) {
            started |= 1ull << ev.kind;
            next[ev.kind] = line;
        }
        if (it.in_series != in_series || it.event != (ev.nf ? next[ev.kind]++ : UINT64_MAX))
            abort();
        for (int i = 0; i < ev.nf; i++, p += 8)
            if (ev.f[i].name != form * 16 + (unsigned)i + 1 ||
                (in_series >> i & 1 ? !isnan(ev.f[i].v) : memcmp(&ev.f[i].v, p, 8) != 0))
                abort();
        k++;
    }
    if (r != 0 || k != n)
        abort();
    dsq_block_free_buf(&b);
}

/* The bytes as values of events, 9 bytes each: a byte picks the kind (of 5, so
 * segments run out of slots) and how far its event number moves (0..3 past the
 * next: runs of events and their ends), then the value's bits; through a chunk and
 * back, kinds, events and values bit for bit. */
static void event_round_trip(const uint8_t *data, size_t size)
{
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    uint64_t next[5] = {0};
    size_t n = size / 9;
    for (size_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, data + 9 * i + 1, 8);
        unsigned kind = data[9 * i] % 5;
        next[kind] += data[9 * i] / 5 % 4;
        if (dsq_chunk_add_event(&c, kind, next[kind]++, v))
            abort();
    }
    dsq_chunk_finish(&c);
    memset(next, 0, sizeof next);
    dsq_chunk_iter ci;
    int64_t t;
    double v;
    int r;
    size_t k = 0;
    dsq_chunk_iter_init(&ci, c.buf, c.len);
    while ((r = dsq_chunk_iter_next(&ci, &t, &v)) == 1) {
        if (k >= n)
            abort();
        unsigned kind = data[9 * k] % 5;
        next[kind] += data[9 * k] / 5 % 4;
        if (!ci.by_event || t != DSQ_TIME_NONE || ci.kind != kind || ci.event != next[kind]++ ||
            memcmp(&v, data + 9 * k + 1, 8) != 0)
            abort();
        k++;
    }
    if (r != 0 || k != n)
        abort();
    dsq_chunk_free(&c);
}

static void fuzz_values(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    dsq_block_iter bi;
    dsq_event ev;
    if (dsq_block_iter_init(&bi, copy, size, 0) == 0)
        while (dsq_block_iter_next(&bi, &ev) == 1)
            if (ev.nf > DSQ_EV_MAXF)
                abort();
    dsq_chunk_iter ci;
    int64_t t;
    double v;
    dsq_chunk_iter_init(&ci, copy, size);
    while (dsq_chunk_iter_next(&ci, &t, &v) == 1)
        ;
    free(copy);
    /* the bytes as pairs, through a chunk and back */
    dsq_chunk c;
    memset(&c, 0, sizeof c);
    size_t n = size / 16;
    for (size_t i = 0; i < n; i++) {
        memcpy(&t, data + 16 * i, 8);
        memcpy(&v, data + 16 * i + 8, 8);
        if (dsq_chunk_add(&c, t, v))
            abort();
    }
    dsq_chunk_finish(&c);
    dsq_chunk_iter_init(&ci, c.buf, c.len);
    size_t k = 0;
    int r;
    while ((r = dsq_chunk_iter_next(&ci, &t, &v)) == 1) {
        if (k >= n || memcmp(&t, data + 16 * k, 8) != 0 || memcmp(&v, data + 16 * k + 8, 8) != 0)
            abort();
        k++;
    }
    if (r != 0 || k != n)
        abort();
    dsq_chunk_free(&c);
    event_round_trip(data, size);
    block_round_trip(data, size);
    fuzz_groups(data, size);
}

int fuzz_surface(const char *name, const uint8_t *data, size_t size)
{
    if (strcmp(name, "lines") == 0)
        fuzz_lines(data, size);
    else if (strcmp(name, "time") == 0)
        fuzz_time(data, size);
    else if (strcmp(name, "query") == 0)
        fuzz_query(data, size);
    else if (strcmp(name, "input") == 0)
        fuzz_input(data, size);
    else if (strcmp(name, "values") == 0)
        fuzz_values(data, size);
    else
        return 0;
    return 1;
}
