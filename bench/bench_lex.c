/* bench_lex: how fast the in-memory path runs, next to a baseline measured in the
 * same run.
 *
 *   bench_lex FILE [RUNS]
 *
 * Loads FILE (plain text) into memory once, then times, RUNS times each (default
 * 7), and prints min and median:
 *   memchr-lines   counting '\n' with memchr: the floor any line splitter sits on
 *   split          dsq_lines over the buffer, empty per-line callback
 *   split+scan     dsq_lines + dsq_scan (prefixes, recognizers, events) with a
 *                  sink that only counts events: what indexing costs before LMDB
 * Throughput is MB/s of input (1 MB = 1e6 bytes) and lines/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dict.h"
#include "lines.h"
#include "scan.h"

typedef struct bench_params {
    const char *buf;
    size_t len;
    int runs;
} bench_params;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
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

static void measure(const char *name, const bench_params *p,
                    uint64_t (*fn)(const bench_params *, void *), void *ctx)
{
    double t[64];
    uint64_t lines = 0;
    int runs = p->runs > 64 ? 64 : p->runs;
    for (int i = 0; i < runs; i++) {
        double t0 = now();
        lines = fn(p, ctx);
        t[i] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_d);
    double mb = (double)p->len / 1e6;
    printf("%-14s %10.1f MB/s (min %.4f s, median %.4f s)  %12.0f lines/s  %llu lines\n", name,
           mb / t[runs / 2], t[0], t[runs / 2], (double)lines / t[runs / 2],
           (unsigned long long)lines);
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
        fprintf(stderr, "usage: bench_lex FILE [RUNS]\n");
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
    dsq_lines *lb = NULL, *lb2 = NULL;
    dsq_scan *sc = NULL;
    dsq_lines_params lp = {0, count_line, NULL};
    dsq_dict_new(&d);
    dsq_scan_params sp = {.dict = d, .emit = count_event};
    dsq_lines_new(&lp, &lb);
    dsq_scan_new(&sp, &sc);
    dsq_lines_params lp2 = {0, dsq_scan_line, sc};
    dsq_lines_new(&lp2, &lb2);
    scan_ctx s = {lb2, sc};
    printf("input %s: %.1f MB, %d runs each\n", argv[1], (double)p.len / 1e6, p.runs);
    measure("memchr-lines", &p, run_memchr, NULL);
    measure("split", &p, run_split, lb);
    measure("split+scan", &p, run_scan, &s);
    dsq_lines_free(lb);
    dsq_lines_free(lb2);
    dsq_scan_free(sc);
    dsq_dict_free(d);
    free(buf);
    return 0;
}
