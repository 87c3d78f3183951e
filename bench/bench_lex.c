/* bench_lex: how fast the in-memory path runs, next to a baseline measured in the
 * same run.
 *
 *   bench_lex FILE [RUNS [ROW...]]
 *
 * Loads FILE (plain text) into memory once, then times, RUNS times each (default
 * 7; the rows take turns within each round, so load from other jobs spreads over
 * all of them), and prints min and median:
 *   memchr-lines   counting '\n' with memchr: the floor any line splitter sits on
 *   split/<name>   dsq_lines over the buffer with each line-end backend this CPU
 *                  runs (linescan.h), empty per-line callback
 *   split+numbers  dsq_lines (default backend), and every number of each line found
 *                  and parsed by dsq_num_parse (a digit not after a letter, digit,
 *                  '_' or '.' starts one): the least any indexer that extracts the
 *                  values does, with no families, names or events; a ceiling for
 *                  split+scan
 *   split+scan     dsq_lines (default backend) + dsq_scan (prefixes, line shapes,
 *                  recognizers, events) with a sink that only counts events: what
 *                  indexing costs before LMDB
 *   split+scan/recognizers  the same without line shapes (src/shapes.h): the
 *                  recognizers read every line
 * Throughput is GB/s of input (1 GB = 1e9 bytes) over the median wall time, and
 * over the median CPU time of the thread (steadier on a shared machine), and
 * lines/s over the median wall time. ROW names limit the
 * run to those rows (e.g. split/avx2 alone, for perf).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dict.h"
#include "linescan.h"
#include "lines.h"
#include "num.h"
#include "scan.h"

typedef struct bench_params {
    const char *buf;
    size_t len;
    int runs;
} bench_params;

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static volatile uint64_t sink_count;

static int count_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    (void)ctx, (void)line, (void)len, (void)flags;
    sink_count++;
    return 0;
}

static int count_event(void *ctx, const dsq_event *ev)
{
    (void)ctx, (void)ev;
    sink_count++;
    return 0;
}

static uint64_t run_memchr(const bench_params *p, void *unused)
{
    (void)unused;
    uint64_t n = 0;
    const char *s = p->buf, *end = p->buf + p->len;
    while ((s = memchr(s, '\n', (size_t)(end - s))) != NULL) {
        n++;
        s++;
    }
    return n;
}

static uint64_t run_split(const bench_params *p, void *lb)
{
    dsq_lines_reset(lb);
    dsq_lines_feed(lb, p->buf, p->len);
    dsq_lines_finish(lb);
    return dsq_lines_stats_get(lb)->lines;
}

/* A byte after which a digit continues a word or a number, not starts one. */
static const unsigned char in_word[256] = {
    ['_'] = 1, ['.'] = 1,
#define W10(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1, [c + 4] = 1, [c + 5] = 1, \
                [c + 6] = 1, [c + 7] = 1, [c + 8] = 1, [c + 9] = 1
    W10('0'), W10('A'), W10('K'), ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1,
    ['Z'] = 1, W10('a'), W10('k'), ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1,
    ['z'] = 1,
#undef W10
};

static volatile double sink_sum;
static uint64_t numbers_seen; /* by split+numbers, over all its runs */

/* The number at p (a digit) parsed: sum and n updated; returns where to go on. */
static const char *take_number(const char *p, const char *end, double *sum, uint64_t *n)
{
    double v;
    const char *stop = p + 1;
    if (dsq_num_parse(p, end, &v, &stop) == 0) {
        *sum += v;
        (*n)++;
    }
    return stop > p ? stop : p + 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>

/* Bytes of v in lo..lo+n-1, as a 16-bit mask. */
static unsigned in_range(__m128i v, char lo, int n)
{
    __m128i t = _mm_sub_epi8(v, _mm_set1_epi8(lo));
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8((char)(n - 1))), t));
}
#endif

/* Every number of the line, parsed (see split+numbers above): number starts are
 * found 16 bytes at a time where SSE2 is, byte by byte after. */
static int number_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    (void)ctx, (void)flags;
    const char *p = line, *end = line + len;
    double sum = 0;
    uint64_t n = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    unsigned carry = 0; /* the byte before the block is a word byte */
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned dig = in_range(v, '0', 10);
        unsigned word = dig | in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 26) |
                        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('_'))) |
                        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
        unsigned starts = dig & ~((word << 1) | carry);
        if (!starts) {
            carry = word >> 15;
            p += 16;
            continue;
        }
        p = take_number(p + __builtin_ctz(starts), end, &sum, &n);
        carry = in_word[(unsigned char)p[-1]];
    }
#endif
    while (p < end) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d > 9 || (p > line && in_word[(unsigned char)p[-1]]))
            p++;
        else
            p = take_number(p, end, &sum, &n);
    }
    sink_sum += sum;
    numbers_seen += n;
    return 0;
}

typedef struct scan_ctx {
    dsq_lines *lb;
    dsq_scan *sc;
} scan_ctx;

static uint64_t run_scan(const bench_params *p, void *ctx)
{
    scan_ctx *s = ctx;
    dsq_lines_reset(s->lb);
    dsq_scan_begin(s->sc, 0, -1);
    dsq_lines_feed(s->lb, p->buf, p->len);
    dsq_lines_finish(s->lb);
    dsq_scan_end(s->sc);
    return dsq_lines_stats_get(s->lb)->lines;
}

typedef struct bench_row {
    char name[32];
    uint64_t (*fn)(const bench_params *, void *);
    void *ctx;
    double t[64];   /* wall seconds of each run */
    double cpu[64]; /* CPU seconds of this thread in each run */
    uint64_t lines;
} bench_row;

/* 1 when row is to run: no names given, or one of them is its name. */
static int row_wanted(const bench_row *row, int argc, char **argv)
{
    if (argc <= 3)
        return 1;
    for (int i = 3; i < argc; i++)
        if (strcmp(argv[i], row->name) == 0)
            return 1;
    return 0;
}

/* Times every row p->runs times, one run of each row per round. */
static void measure(const bench_params *p, bench_row *rows, int nrows)
{
    int runs = p->runs > 64 ? 64 : p->runs;
    for (int i = 0; i < runs; i++) {
        for (int r = 0; r < nrows; r++) {
            double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
            rows[r].lines = rows[r].fn(p, rows[r].ctx);
            rows[r].cpu[i] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
            rows[r].t[i] = clock_s(CLOCK_MONOTONIC) - t0;
        }
    }
    printf("%-22s %9s %9s %9s %9s %12s %10s\n", "row", "GB/s", "cpu GB/s", "min s", "median s",
           "lines/s", "lines");
    for (int r = 0; r < nrows; r++) {
        double *t = rows[r].t, *c = rows[r].cpu;
        qsort(t, (size_t)runs, sizeof t[0], cmp_d);
        qsort(c, (size_t)runs, sizeof c[0], cmp_d);
        double gb = (double)p->len / 1e9;
        printf("%-22s %9.3f %9.3f %9.4f %9.4f %12.0f %10llu\n", rows[r].name, gb / t[runs / 2],
               gb / c[runs / 2], t[0], t[runs / 2], (double)rows[r].lines / t[runs / 2],
               (unsigned long long)rows[r].lines);
    }
}

static char *load(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 64);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_lex FILE [RUNS [ROW...]]\n");
        return 2;
    }
    bench_params p = {.runs = argc > 2 ? atoi(argv[2]) : 7};
    if (p.runs < 1)
        p.runs = 1;
    char *buf = load(argv[1], &p.len);
    if (!buf) {
        fprintf(stderr, "bench_lex: cannot read %s\n", argv[1]);
        return 1;
    }
    p.buf = buf;
    dsq_dict *d = NULL;
    dsq_lines *lb[DSQ_LINESCAN_COUNT] = {NULL}, *lb2 = NULL, *lbn = NULL;
    dsq_scan *sc = NULL;
    bench_row rows[DSQ_LINESCAN_COUNT + 4];
    int nrows = 0;
    memset(rows, 0, sizeof rows);
    rows[nrows++] = (bench_row){.name = "memchr-lines", .fn = run_memchr};
    for (int b = DSQ_LINESCAN_SCALAR; b < DSQ_LINESCAN_COUNT; b++) {
        dsq_lines_params lp = {0, count_line, NULL};
        if (!dsq_linescan_usable((dsq_linescan_backend)b) || dsq_lines_new(&lp, &lb[b]) != 0)
            continue;
        dsq_lines_set_backend(lb[b], (dsq_linescan_backend)b);
        rows[nrows] = (bench_row){.fn = run_split, .ctx = lb[b]};
        snprintf(rows[nrows].name, sizeof rows[nrows].name, "split/%s",
                 dsq_linescan_name((dsq_linescan_backend)b));
        nrows++;
    }
    dsq_lines_params lpn = {0, number_line, NULL};
    if (dsq_lines_new(&lpn, &lbn) == 0)
        rows[nrows++] = (bench_row){.name = "split+numbers", .fn = run_split, .ctx = lbn};
    dsq_dict_new(&d);
    dsq_scan_params sp = {.dict = d, .emit = count_event};
    dsq_scan_new(&sp, &sc);
    dsq_lines_params lp2 = {0, dsq_scan_line, sc};
    dsq_lines_new(&lp2, &lb2);
    scan_ctx s = {lb2, sc};
    rows[nrows++] = (bench_row){.name = "split+scan", .fn = run_scan, .ctx = &s};
    dsq_scan_params sp3 = {.dict = d, .emit = count_event, .no_shapes = 1};
    dsq_scan *sc3 = NULL;
    dsq_lines *lb3 = NULL;
    dsq_scan_new(&sp3, &sc3);
    dsq_lines_params lp3 = {0, dsq_scan_line, sc3};
    dsq_lines_new(&lp3, &lb3);
    scan_ctx s3 = {lb3, sc3};
    rows[nrows++] = (bench_row){.name = "split+scan/recognizers", .fn = run_scan, .ctx = &s3};
    printf("input %s: %.1f MB, %d runs each, default line-end backend %s\n", argv[1],
           (double)p.len / 1e6, p.runs, dsq_linescan_name(dsq_lines_backend(lb2)));
    int kept = 0;
    for (int r = 0; r < nrows; r++)
        if (row_wanted(&rows[r], argc, argv))
            rows[kept++] = rows[r];
    measure(&p, rows, kept);
    for (int r = 0; r < kept; r++)
        if (rows[r].ctx == lbn && numbers_seen)
            printf("split+numbers: %.0f numbers per run, %.0f per MB\n",
                   (double)numbers_seen / p.runs, (double)numbers_seen / p.runs / ((double)p.len / 1e6));
    for (int b = 0; b < DSQ_LINESCAN_COUNT; b++)
        dsq_lines_free(lb[b]);
    dsq_lines_free(lb2);
    dsq_lines_free(lb3);
    dsq_scan_free(sc3);
    dsq_lines_free(lbn);
    dsq_scan_free(sc);
    dsq_dict_free(d);
    free(buf);
    return 0;
}
