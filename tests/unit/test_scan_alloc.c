/* STYLE rule 7: splitting and scanning do not allocate per line. malloc, calloc,
 * realloc and free are replaced (glibc: forwarded to __libc_*) to count calls; after
 * a warm-up over the same hosts and labels, 100,000 lines must cost exactly as many
 * allocations as 1,000 (none, in fact). The events go into a reused block buffer,
 * as in the indexer. */
#include <stdlib.h>

#include "event.h"
#include "lines.h"
#include "scan.h"
#include "test.h"

#include "alloc_count.h"

typedef struct sink {
    dsq_block b;
    uint64_t events;
} sink;

static int on_event(void *ctx, const dsq_event *ev)
{
    sink *s = ctx;
    if (s->b.count == 128) /* small blocks: the warm-up reaches the buffer's full size */
        dsq_block_reset(&s->b);
    s->events++;
    return dsq_block_add(&s->b, ev);
}

/* Writes `nlines` lines of a mixed log (memory reports of 8 hosts via pdsh, other
 * DeepSpeed lines, prints, tqdm bars) to buf; returns the length and, in *reports,
 * how many events it holds (memory reports and log_dist step lines). */
static size_t make_log(char *buf, size_t cap, int nlines, uint64_t *reports)
{
    static const char *const labels[] = {"Before initializing optimizer states",
                                         "After initializing optimizer states",
                                         "Stage 3 initialize beginning", "DeepSpeedEngine.step"};
    size_t n = 0;
    int line = 0;
    for (int i = 0; line < nlines; i++) {
        int h = i % 8, s = i % 60, ms = (i * 7) % 1000;
        const char *ts = "[2024-07-20 21:30:%02d,%03d] [INFO] [utils.py:%d:see_memory_usage] ";
        char hdr[128];
        int k = i % 5;
        if (k < 2 && line + 3 <= nlines) { /* a whole report: three lines */
            snprintf(hdr, sizeof hdr, ts, s, ms, 781);
            n += (size_t)snprintf(buf + n, cap - n, "gpu%03d: %s%s\n", h, hdr, labels[i % 4]);
            snprintf(hdr, sizeof hdr, ts, s, ms, 782);
            n += (size_t)snprintf(buf + n, cap - n,
                                  "gpu%03d: %sMA %d.%02d GB         Max_MA %d.5 GB         CA "
                                  "%d GB         Max_CA %d GB \n",
                                  h, hdr, i % 40, i % 100, i % 50, i % 60, i % 70);
            snprintf(hdr, sizeof hdr, ts, s, ms, 789);
            n += (size_t)snprintf(buf + n, cap - n,
                                  "gpu%03d: %sCPU Virtual Memory:  used = %d.03 GB, percent = "
                                  "%d.3%%\n",
                                  h, hdr, 100 + i % 100, i % 100);
            line += 3;
            ++*reports;
        } else if (k == 2 || k < 2) {
            n += (size_t)snprintf(buf + n, cap - n,
                                  "gpu%03d: [2024-07-20 21:30:%02d,%03d] [INFO] "
                                  "[logging.py:96:log_dist] [Rank %d] step=%d, skipped=0, "
                                  "lr=[0.0001], mom=[(0.9, 0.999)]\n",
                                  h, s, ms, h, i);
            line++;
            ++*reports; /* a ds_step event */
        } else if (k == 3) {
            n += (size_t)snprintf(buf + n, cap - n, " %d%%|#####     | %d/1000 [00:10<00:12]\r",
                                  i % 100, i % 1000);
            line++;
        } else {
            n += (size_t)snprintf(buf + n, cap - n, "gpu%03d: plain print %d\r\n", h, i);
            line++;
        }
    }
    return n;
}

/* Splits and scans text as a stream fed in 64 KiB chunks; returns allocations made. */
static unsigned long scan_stream(dsq_lines *lb, dsq_scan *sc, const char *text, size_t len)
{
    unsigned long before = allocs;
    dsq_lines_reset(lb);
    dsq_scan_begin(sc, 0, -1);
    for (size_t at = 0; at < len; at += 65536) {
        size_t n = len - at < 65536 ? len - at : 65536;
        CHECK_INT(dsq_lines_feed(lb, text + at, n), 0);
    }
    CHECK_INT(dsq_lines_finish(lb), 0);
    CHECK_INT(dsq_scan_end(sc), 0);
    return allocs - before;
}

static void test_no_allocation_per_line(void)
{
    size_t cap = 100000u * 200;
    char *small = malloc(1000 * 200), *big = malloc(cap);
    uint64_t rsmall = 0, rbig = 0;
    size_t nsmall = make_log(small, 1000 * 200, 1000, &rsmall);
    size_t nbig = make_log(big, cap, 100000, &rbig);
    rsmall += 8; /* and one rank_lines event per (host, rank): gpu00h has [Rank h] */
    rbig += 8;
    dsq_dict *dict = NULL;
    dsq_scan *sc = NULL;
    dsq_lines *lb = NULL;
    sink out;
    memset(&out, 0, sizeof out);
    CHECK_INT(dsq_dict_new(&dict), 0);
    dsq_scan_params sp = {.dict = dict, .emit = on_event, .ctx = &out};
    CHECK_INT(dsq_scan_new(&sp, &sc), 0);
    dsq_lines_params lp = {0, dsq_scan_line, sc};
    CHECK_INT(dsq_lines_new(&lp, &lb), 0);

    scan_stream(lb, sc, small, nsmall); /* warm-up: hosts, labels, block buffer */
    unsigned long a1k = scan_stream(lb, sc, small, nsmall);
    uint64_t ev1k = dsq_scan_stats_get(sc)->events;
    CHECK_INT(dsq_scan_stats_get(sc)->lines, 1000);
    unsigned long a100k = scan_stream(lb, sc, big, nbig);
    const dsq_scan_stats *st = dsq_scan_stats_get(sc);
    CHECK_INT(st->lines, 100000);
    CHECK_INT(st->events, rbig); /* every report was recognized, */
    CHECK_INT(ev1k, rsmall);
    CHECK_INT(a100k, a1k);       /* and cost no allocation per line */
    CHECK_INT(a100k, 0);
    printf("allocations: %lu for 1k lines, %lu for 100k lines (%llu events)\n", a1k, a100k,
           (unsigned long long)st->events);

    /* the counter itself works: a new host name interns (the dictionary allocates
     * only when its table or a string chunk fills, so force that) */
    unsigned long before = allocs;
    char name[32];
    for (int i = 0; i < 5000; i++)
        dsq_dict_intern(dict, name, (size_t)snprintf(name, sizeof name, "new-host-%d", i));
    CHECK(allocs > before);

    dsq_block_free_buf(&out.b);
    dsq_lines_free(lb);
    dsq_scan_free(sc);
    dsq_dict_free(dict);
    free(small);
    free(big);
}

TEST_MAIN(T(test_no_allocation_per_line))
