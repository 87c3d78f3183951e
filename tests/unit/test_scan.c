/* Scanner: lines in, events out. The DeepSpeed memory report (three lines) is one
 * event; reports of different hosts or ranks interleaved line by line stay apart;
 * a report missing its CPU line is still emitted; every line is counted by family
 * and level. Text goes through the real line splitter, as the indexer does it. */
#include <stdlib.h>

#include "dsq/dsq.h"
#include "lines.h"
#include "num.h"
#include "scan.h"
#include "test.h"
#include "timeconv.h"

#define MAXEV 4096

typedef struct sink {
    int n;
    dsq_event ev[MAXEV];
    int stop_at; /* return 9 from emit at this event (1-based), 0: never */
    int ranks;   /* keep the rank_lines events (test_rank_lines); others skip them */
    int only_ranks; /* ... and nothing else */
} sink;

static int on_event(void *ctx, const dsq_event *ev)
{
    sink *s = ctx;
    if (ev->kind == DSQ_EV_RANK_LINES ? !s->ranks : s->only_ranks)
        return 0;
    if (s->n < MAXEV)
        s->ev[s->n] = *ev;
    s->n++;
    return s->stop_at && s->n == s->stop_at ? 9 : 0;
}

typedef struct fixture {
    dsq_dict *dict;
    dsq_scan *sc;
    dsq_lines *lines;
    sink out;
} fixture;

static fixture *fx_new(size_t max_line)
{
    fixture *f = calloc(1, sizeof *f);
    CHECK_INT(dsq_dict_new(&f->dict), 0);
    dsq_scan_params sp = {.dict = f->dict, .emit = on_event, .ctx = &f->out};
    CHECK_INT(dsq_scan_new(&sp, &f->sc), 0);
    dsq_lines_params lp = {max_line, dsq_scan_line, f->sc};
    CHECK_INT(dsq_lines_new(&lp, &f->lines), 0);
    dsq_scan_begin(f->sc, 0, -1);
    return f;
}

static void fx_free(fixture *f)
{
    dsq_lines_free(f->lines);
    dsq_scan_free(f->sc);
    dsq_dict_free(f->dict);
    free(f);
}

/* Feeds a whole stream and ends it; returns the first non-zero status. */
static int fx_scan(fixture *f, const char *text)
{
    dsq_lines_reset(f->lines);
    int rc = dsq_lines_feed(f->lines, text, strlen(text));
    if (!rc)
        rc = dsq_lines_finish(f->lines);
    if (!rc)
        rc = dsq_scan_end(f->sc);
    return rc;
}

static uint32_t id_of(fixture *f, const char *s) { return dsq_dict_find(f->dict, s, strlen(s)); }

/* Checks field i of ev: name, value, unit. */
static void expect_field(fixture *f, const dsq_event *ev, int i, const char *name, double v,
                         int unit)
{
    if (i >= ev->nf) {
        fprintf(stderr, "field %d (%s) missing: nf = %d\n", i, name, ev->nf);
        test_failures++;
        return;
    }
    CHECK_STR(dsq_dict_str(f->dict, ev->f[i].name, NULL), name);
    CHECK_DBL(ev->f[i].v, v);
    CHECK_INT(ev->f[i].unit, unit);
}

#define DS "[2024-07-20 21:30:05,%03d] [INFO] [utils.py:%d:see_memory_usage] "
#define LABEL "[2024-07-20 21:30:05,202] [INFO] [utils.py:781:see_memory_usage] "
#define MA_L "[2024-07-20 21:30:05,203] [INFO] [utils.py:782:see_memory_usage] "
#define CPU_L "[2024-07-20 21:30:05,204] [INFO] [utils.py:789:see_memory_usage] "

static const char report[] =
    LABEL "Stage 3 initialize beginning\n" MA_L
    "MA 1.75 GB         Max_MA 6.54 GB         CA 4.14 GB         Max_CA 7 GB \n" CPU_L
    "CPU Virtual Memory:  used = 164.03 GB, percent = 16.3%\n";

static void check_report_event(fixture *f, const dsq_event *ev, uint32_t line)
{
    CHECK_INT(ev->kind, DSQ_EV_MEMORY);
    CHECK_STR(dsq_dict_str(f->dict, ev->label, NULL), "Stage 3 initialize beginning");
    CHECK_INT(ev->t_us, dsq_time_from_civil(2024, 7, 20, 21, 30, 5, 203000));
    CHECK_INT(ev->line, line);
    CHECK_INT(ev->nf, 6);
    expect_field(f, ev, 0, "MA", 1.75, DSQ_U_GB);
    expect_field(f, ev, 1, "Max_MA", 6.54, DSQ_U_GB);
    expect_field(f, ev, 2, "CA", 4.14, DSQ_U_GB);
    expect_field(f, ev, 3, "Max_CA", 7, DSQ_U_GB);
    expect_field(f, ev, 4, "CPU_used", 164.03, DSQ_U_GB);
    expect_field(f, ev, 5, "CPU_percent", 16.3, DSQ_U_PCT);
}

static void test_memory_report(void)
{
    fixture *f = fx_new(0);
    CHECK_INT(fx_scan(f, report), 0);
    CHECK_INT(f->out.n, 1);
    check_report_event(f, &f->out.ev[0], 2);
    CHECK_INT(f->out.ev[0].host, 0);
    CHECK_INT(f->out.ev[0].rank, -1);
    const dsq_scan_stats *st = dsq_scan_stats_get(f->sc);
    CHECK_INT(st->lines, 3);
    CHECK_INT(st->events, 1);
    CHECK_INT(st->family_lines[DSQ_FAM_DEEPSPEED], 3);
    CHECK_INT(st->level_lines[DSQ_LV_INFO], 3);

    /* the same report with \r\n line ends, and with default host and rank */
    uint32_t h = dsq_dict_intern(f->dict, "node-7", 6);
    dsq_scan_begin(f->sc, h, 2);
    f->out.n = 0;
    CHECK_INT(fx_scan(f, LABEL "Stage 3 initialize beginning\r\n" MA_L
                         "MA 1.75 GB Max_MA 6.54 GB CA 4.14 GB Max_CA 7 GB\r\n" CPU_L
                         "CPU Virtual Memory: used = 164.03 GB, percent = 16.3%\r\n"),
              0);
    CHECK_INT(f->out.n, 1);
    check_report_event(f, &f->out.ev[0], 2);
    CHECK_INT(f->out.ev[0].host, h);
    CHECK_INT(f->out.ev[0].rank, 2);
    fx_free(f);
}

static void test_pdsh_interleaved(void)
{
    fixture *f = fx_new(0);
    char text[4096];
    snprintf(text, sizeof text,
             "gpu009: " DS "before step\n"
             "gpu010: " DS "after step\n"
             "gpu009: " DS "MA 1 GB Max_MA 2 GB CA 3 GB Max_CA 4 GB\n"
             "gpu010: " DS "MA 11 GB Max_MA 12 GB CA 13 GB Max_CA 14 GB\n"
             "gpu009: " DS "CPU Virtual Memory:  used = 5 GB, percent = 6%%\n"
             "gpu010: " DS "CPU Virtual Memory:  used = 15 GB, percent = 16%%\n",
             1, 781, 2, 781, 3, 782, 4, 782, 5, 789, 6, 789);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(f->out.n, 2);
    uint32_t h9 = id_of(f, "gpu009"), h10 = id_of(f, "gpu010");
    CHECK(h9 != 0 && h10 != 0 && h9 != h10);
    for (int i = 0; i < 2 && i < f->out.n; i++) {
        const dsq_event *ev = &f->out.ev[i];
        int base = i == 0 ? 0 : 10; /* gpu009's CPU line comes first */
        CHECK_INT(ev->host, i == 0 ? h9 : h10);
        CHECK_STR(dsq_dict_str(f->dict, ev->label, NULL), i == 0 ? "before step" : "after step");
        CHECK_INT(ev->line, 3 + (uint32_t)i);
        CHECK_INT(ev->t_us, dsq_time_from_civil(2024, 7, 20, 21, 30, 5, (3 + i) * 1000));
        CHECK_INT(ev->nf, 6);
        expect_field(f, ev, 0, "MA", base + 1, DSQ_U_GB);
        expect_field(f, ev, 1, "Max_MA", base + 2, DSQ_U_GB);
        expect_field(f, ev, 2, "CA", base + 3, DSQ_U_GB);
        expect_field(f, ev, 3, "Max_CA", base + 4, DSQ_U_GB);
        expect_field(f, ev, 4, "CPU_used", base + 5, DSQ_U_GB);
        expect_field(f, ev, 5, "CPU_percent", base + 6, DSQ_U_PCT);
    }
    fx_free(f);
}

/* More hosts interleave than the scanner keeps without the grammar (PDSH_HOSTS):
 * every line keeps its own host, the same host ids line after line. */
static void test_pdsh_many_hosts_interleaved(void)
{
    fixture *f = fx_new(0);
    char text[8192];
    size_t n = 0;
    for (int round = 0; round < 5; round++)
        for (int h = 0; h < 7; h++) /* 3, 4, ... hosts back: some found again, some not */
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "node%d: {'loss': %d.%d, 'epoch': 0.%d}\n",
                                  h % 4 == 3 ? h : h * 10, round, h, round);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(f->out.n, 5 * 7);
    for (int i = 0; i < f->out.n && i < 5 * 7; i++) {
        int h = i % 7;
        char name[16];
        snprintf(name, sizeof name, "node%d", h % 4 == 3 ? h : h * 10);
        const dsq_event *ev = &f->out.ev[i];
        CHECK_INT(ev->host, id_of(f, name));
        double loss = -1;
        for (int k = 0; k < ev->nf; k++)
            if (ev->f[k].name == id_of(f, "loss"))
                loss = ev->f[k].v;
        CHECK_DBL(loss, i / 7 + h / 10.0);
    }
    fx_free(f);
}

/* A line whose first byte dsq_gram_layer_first refuses is taken by neither prefix
 * grammar, whatever follows. */
static void test_layer_first_bytes(void)
{
    static const char *const rests[] = {"gpu1: x", "[rank1]: x", "1: x", "[1,0]<stdout>: x",
                                        "> x", "(pid=1) x", "2024-07-01T00:00:00Z x", ""};
    int refused = 0;
    for (int c = 0; c < 256; c++) {
        if (dsq_gram_layer_first((unsigned char)c))
            continue;
        refused++;
        for (size_t i = 0; i < sizeof rests / sizeof rests[0]; i++) {
            for (int skip = 0; skip < 2; skip++) { /* c before the layer, or in its place */
                char line[64];
                int n = snprintf(line, sizeof line, "%c%s", c, rests[i] + (skip && rests[i][0]));
                dsq_match m;
                dsq_scan_match_init(&m);
                CHECK_INT(dsq_gram_pdsh(line, (size_t)n, &m), 0);
                dsq_scan_match_init(&m);
                CHECK_INT(dsq_gram_prefix(line, (size_t)n, &m), 0);
            }
        }
    }
    CHECK(refused > 150);
    CHECK(dsq_gram_layer_first('g') && dsq_gram_layer_first('[') && dsq_gram_layer_first('7'));
    CHECK(!dsq_gram_layer_first('{') && !dsq_gram_layer_first(' '));
}

static void test_ranks_interleaved(void)
{
    fixture *f = fx_new(0);
    char text[4096];
    snprintf(text, sizeof text,
             DS "[Rank 3] label three\n" DS "[Rank 15] label fifteen\n"
             DS "[Rank 15] MA 1.5 MB Max_MA 2.5 MB CA 3.5 MB Max_CA 4.5 MB\n"
             DS "[Rank 3] MA 1 GB Max_MA 2 GB CA 3 GB Max_CA 4 GB\n"
             DS "[Rank 3] CPU Virtual Memory:  used = 5 GB, percent = 6%%\n"
             DS "[Rank 15] CPU Virtual Memory:  used = 7 GB, percent = 8%%\n",
             1, 781, 2, 781, 3, 782, 4, 782, 5, 789, 6, 789);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(f->out.n, 2);
    CHECK_INT(f->out.ev[0].rank, 3);
    CHECK_STR(dsq_dict_str(f->dict, f->out.ev[0].label, NULL), "label three");
    expect_field(f, &f->out.ev[0], 1, "Max_MA", 2, DSQ_U_GB);
    expect_field(f, &f->out.ev[0], 5, "CPU_percent", 6, DSQ_U_PCT);
    CHECK_INT(f->out.ev[1].rank, 15);
    CHECK_STR(dsq_dict_str(f->dict, f->out.ev[1].label, NULL), "label fifteen");
    expect_field(f, &f->out.ev[1], 1, "Max_MA", 2.5, DSQ_U_MB);
    expect_field(f, &f->out.ev[1], 4, "CPU_used", 7, DSQ_U_GB);
    fx_free(f);
}

/* More reports waiting at once than the scanner holds (64): 70 ranks print their
 * labels, then their MA lines, then their CPU lines. A report is let go of oldest
 * first (a label alone is dropped, one with its MA line is emitted as it is), so
 * every MA line is one event: the first 6 ranks' without their CPU line, the
 * other 64 whole. */
static void test_reports_beyond_the_slots(void)
{
    enum { RANKS = 70 };
    fixture *f = fx_new(0);
    static char text[RANKS * 3 * 160];
    size_t at = 0;
    for (int r = 0; r < RANKS; r++)
        at += (size_t)snprintf(text + at, sizeof text - at, DS "[Rank %d] label %d\n", 1, 781, r, r);
    for (int r = 0; r < RANKS; r++)
        at += (size_t)snprintf(text + at, sizeof text - at,
                               DS "[Rank %d] MA 1 GB Max_MA %d GB CA 3 GB Max_CA 4 GB\n", 2, 782, r, r);
    for (int r = 0; r < RANKS; r++)
        at += (size_t)snprintf(text + at, sizeof text - at,
                               DS "[Rank %d] CPU Virtual Memory:  used = %d GB, percent = 6%%\n", 3, 789,
                               r, 100 + r);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(f->out.n, RANKS);
    int seen[RANKS] = {0};
    for (int i = 0; i < f->out.n && i < MAXEV; i++) {
        const dsq_event *ev = &f->out.ev[i];
        int r = ev->rank;
        CHECK_INT(ev->kind, DSQ_EV_MEMORY);
        if (r < 0 || r >= RANKS) {
            CHECK_INT(r, 0);
            continue;
        }
        seen[r]++;
        expect_field(f, ev, 1, "Max_MA", r, DSQ_U_GB);
        CHECK_INT(ev->nf, r < RANKS - 64 ? 4 : 6);
        if (r >= RANKS - 64)
            expect_field(f, ev, 4, "CPU_used", 100 + r, DSQ_U_GB);
    }
    for (int r = 0; r < RANKS; r++)
        CHECK_INT(seen[r], 1);
    fx_free(f);
}

static void test_report_without_cpu_line(void)
{
    fixture *f = fx_new(0);
    const char *text = LABEL "no cpu line follows\n" MA_L
                             "MA 1.75 GB Max_MA 6.54 GB CA 4.14 GB Max_CA 7 GB\n"
                             "some print in between\n";
    dsq_lines_reset(f->lines);
    CHECK_INT(dsq_lines_feed(f->lines, text, strlen(text)), 0);
    CHECK_INT(dsq_lines_finish(f->lines), 0);
    CHECK_INT(f->out.n, 0); /* still waiting for the CPU line */
    CHECK_INT(dsq_scan_end(f->sc), 0);
    CHECK_INT(f->out.n, 1);
    const dsq_event *ev = &f->out.ev[0];
    CHECK_INT(ev->nf, 4);
    CHECK_STR(dsq_dict_str(f->dict, ev->label, NULL), "no cpu line follows");
    expect_field(f, ev, 3, "Max_CA", 7, DSQ_U_GB);
    CHECK_INT(dsq_scan_end(f->sc), 0); /* nothing twice */
    CHECK_INT(f->out.n, 1);

    /* a new report on the same stream completes the one before it */
    dsq_scan_begin(f->sc, 0, -1);
    f->out.n = 0;
    CHECK_INT(fx_scan(f, LABEL "first\n" MA_L "MA 1 GB Max_MA 2 GB CA 3 GB Max_CA 4 GB\n" LABEL
                         "second\n" MA_L "MA 5 GB Max_MA 6 GB CA 7 GB Max_CA 8 GB\n" MA_L
                         "MA 9 GB Max_MA 10 GB CA 11 GB Max_CA 12 GB\n" CPU_L
                         "CPU Virtual Memory: used = 1 GB, percent = 2%\n"),
              0);
    CHECK_INT(f->out.n, 3);
    if (f->out.n == 3) {
        CHECK_STR(dsq_dict_str(f->dict, f->out.ev[0].label, NULL), "first");
        CHECK_INT(f->out.ev[0].nf, 4);
        CHECK_STR(dsq_dict_str(f->dict, f->out.ev[1].label, NULL), "second");
        CHECK_INT(f->out.ev[1].nf, 4);
        expect_field(f, &f->out.ev[1], 0, "MA", 5, DSQ_U_GB);
        CHECK_INT(f->out.ev[2].label, 0); /* a second MA line starts an unlabeled report */
        CHECK_INT(f->out.ev[2].nf, 6);
        expect_field(f, &f->out.ev[2], 0, "MA", 9, DSQ_U_GB);
    }

    /* a CPU line with nothing before it, and a label alone, make no event */
    dsq_scan_begin(f->sc, 0, -1);
    f->out.n = 0;
    CHECK_INT(fx_scan(f, CPU_L "CPU Virtual Memory: used = 1 GB, percent = 2%\n" LABEL
                            "label alone\n"),
              0);
    CHECK_INT(f->out.n, 0);

    /* begin starts afresh: a report pending from the last stream is not carried over */
    dsq_scan_begin(f->sc, 0, -1);
    dsq_lines_reset(f->lines);
    const char *half = LABEL "pending\n" MA_L "MA 1 GB Max_MA 2 GB CA 3 GB Max_CA 4 GB\n";
    CHECK_INT(dsq_lines_feed(f->lines, half, strlen(half)), 0);
    dsq_scan_begin(f->sc, 0, -1);
    CHECK_INT(dsq_scan_end(f->sc), 0);
    CHECK_INT(f->out.n, 0);
    CHECK_INT(dsq_scan_stats_get(f->sc)->lines, 0);
    fx_free(f);
}

static void test_many_streams(void)
{
    /* more (host, rank) streams with open reports than the scanner keeps at once */
    fixture *f = fx_new(0);
    size_t cap = 200 * 300, n = 0;
    char *text = malloc(cap);
    for (int h = 0; h < 100; h++)
        n += (size_t)snprintf(text + n, cap - n,
                              "node-%03d: " LABEL "report %d\nnode-%03d: " MA_L
                              "MA %d GB Max_MA 2 GB CA 3 GB Max_CA 4 GB\n",
                              h, h, h, h);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(f->out.n, 100); /* each exactly once, none lost */
    int seen[100] = {0};
    for (int i = 0; i < f->out.n && i < MAXEV; i++) {
        int v = (int)f->out.ev[i].f[0].v;
        if (v >= 0 && v < 100)
            seen[v]++;
    }
    int once = 0;
    for (int h = 0; h < 100; h++)
        once += seen[h] == 1;
    CHECK_INT(once, 100);
    free(text);
    fx_free(f);
}

/* NCCL setup of more threads than the handler keeps slots for: each thread's
 * topology comes out once, at its eviction or at the end of the stream; the next
 * stream starts with none left over, also after a stream cut short (the state is
 * cleared slot by slot). */
static int count_kind(const fixture *f, int kind, int from)
{
    int n = 0;
    for (int i = from; i < f->out.n && i < MAXEV; i++)
        n += f->out.ev[i].kind == kind;
    return n;
}

static void test_nccl_threads_beyond_slots(void)
{
    fixture *f = fx_new(0);
    size_t cap = 100 * 200, n = 0;
    char *text = malloc(cap);
    for (int t = 0; t < 70; t++)
        n += (size_t)snprintf(text + n, cap - n,
                              "node-a07:4411:%d [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via "
                              "P2P/IPC/read\n",
                              5000 + t);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(count_kind(f, DSQ_EV_NCCL_TOPOLOGY, 0), 70);
    /* a stream cut short (no end: a member that failed) leaves slots in use, which
     * the next stream must not see */
    dsq_scan_begin(f->sc, 0, -1);
    dsq_lines_reset(f->lines);
    CHECK_INT(dsq_lines_feed(f->lines, text, n / 2), 0);
    int before = f->out.n;
    dsq_scan_begin(f->sc, 0, -1);
    CHECK_INT(fx_scan(f, "node-b01:77:78 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct\n"
                         "node-b01:77:79 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct\n"),
              0);
    CHECK_INT(count_kind(f, DSQ_EV_NCCL_TOPOLOGY, before), 2);
    for (int i = before; i < f->out.n && i < MAXEV; i++) /* nothing of the cut stream's */
        CHECK_STR(dsq_dict_str(f->dict, f->out.ev[i].label, NULL), "SHM/direct");
    free(text);
    fx_free(f);
}

/* Two hosts whose NCCL processes have the same pid and tid stay two processes:
 * each keeps the rank its comm line named (also on its other threads' lines) and
 * its own topology. */
static void test_nccl_same_pid_two_hosts(void)
{
    fixture *f = fx_new(0);
    CHECK_INT(fx_scan(f, "node-a:77:78 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 "
                         "localRank 0 MNNVL 0\n"
                         "node-b:77:78 [1] NCCL INFO comm 0x2 rank 5 nRanks 8 nNodes 2 localRanks 4 "
                         "localRank 1 MNNVL 0\n"
                         "node-a:77:78 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
                         "node-b:77:78 [1] NCCL INFO Channel 00/0 : 5[1] -> 6[0] via SHM/direct\n"
                         "node-a:77:78 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
                         "node-b:77:78 [1] NCCL INFO Channel 01/0 : 5[1] -> 6[0] via SHM/direct\n"
                         "node-a:77:90 [0] misc/socket.cc:50 NCCL WARN Net : Connection closed\n"
                         "node-b:77:90 [1] misc/socket.cc:50 NCCL WARN Net : Connection closed\n"),
              0);
    CHECK_INT(count_kind(f, DSQ_EV_NCCL_TOPOLOGY, 0), 2);
    CHECK_INT(count_kind(f, DSQ_EV_NCCL_WARN, 0), 2);
    for (int i = 0; i < f->out.n && i < MAXEV; i++) /* the rank a process's comm line named */
        if (f->out.ev[i].kind == DSQ_EV_NCCL_WARN)
            CHECK_INT(f->out.ev[i].rank,
                      strcmp(dsq_dict_str(f->dict, f->out.ev[i].host, NULL), "node-a") == 0 ? 0 : 5);
    int seen = 0;
    for (int i = 0; i < f->out.n && i < MAXEV; i++) {
        const dsq_event *ev = &f->out.ev[i];
        if (ev->kind != DSQ_EV_NCCL_TOPOLOGY)
            continue;
        const char *host = dsq_dict_str(f->dict, ev->host, NULL);
        const char *label = dsq_dict_str(f->dict, ev->label, NULL);
        if (host && strcmp(host, "node-a") == 0) {
            CHECK_INT(ev->rank, 0);
            CHECK_STR(label, "P2P/IPC/read");
            seen |= 1;
        } else {
            CHECK_STR(host, "node-b");
            CHECK_INT(ev->rank, 5);
            CHECK_STR(label, "SHM/direct");
            seen |= 2;
        }
    }
    CHECK_INT(seen, 3);
    fx_free(f);
}

/* A setup's transports, each once in the order first seen, compared as whole words:
 * one that is a prefix, a suffix or a longer form of another is its own; and past
 * the 16 words the list indexes (fam_nccl.h), the same. */
static void test_nccl_transports_whole_words(void)
{
    fixture *f = fx_new(0);
    static const char *const via[] = {"NET/IB/0", "NET/IB/01", "IB/0", "NET/IB/0", "NET/IB",
                                      "NET/IB/01", "P2P/IPC", "IB/0", "NET/IB"};
    char text[2048];
    int n = snprintf(text, sizeof text, "h:7:8 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2\n");
    for (size_t i = 0; i < sizeof via / sizeof via[0]; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "h:7:8 [0] NCCL INFO Channel %02zu/0 : 0[0] -> 1[1] via %s\n", i, via[i]);
    snprintf(text + n, sizeof text - (size_t)n,
             "h:7:8 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n");
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(count_kind(f, DSQ_EV_NCCL_TOPOLOGY, 0), 1);
    for (int i = 0; i < f->out.n && i < MAXEV; i++)
        if (f->out.ev[i].kind == DSQ_EV_NCCL_TOPOLOGY)
            CHECK_STR(dsq_dict_str(f->dict, f->out.ev[i].label, NULL),
                      "NET/IB/0 NET/IB/01 IB/0 NET/IB P2P/IPC");
    fx_free(f);
    /* more transports than the list's word index holds (16): T0 .. T29, then again
     * backwards, and T1 against T10 .. T19 */
    f = fx_new(0);
    char *big = malloc(16384), want[256] = "";
    if (!big) {
        CHECK(big != NULL);
        fx_free(f);
        return;
    }
    n = snprintf(big, 16384, "h:7:8 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2\n");
    for (int i = 0; i < 60; i++) {
        int k = i < 30 ? i : 59 - i;
        n += snprintf(big + n, 16384 - (size_t)n,
                      "h:7:8 [0] NCCL INFO Channel %02d/0 : 0[0] -> 1[1] via T%d\n", i % 64, k);
        if (i < 30)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%sT%d", i ? " " : "", k);
    }
    snprintf(big + n, 16384 - (size_t)n,
             "h:7:8 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n");
    CHECK_INT(fx_scan(f, big), 0);
    CHECK_INT(count_kind(f, DSQ_EV_NCCL_TOPOLOGY, 0), 1);
    for (int i = 0; i < f->out.n && i < MAXEV; i++)
        if (f->out.ev[i].kind == DSQ_EV_NCCL_TOPOLOGY)
            CHECK_STR(dsq_dict_str(f->dict, f->out.ev[i].label, NULL), want);
    free(big);
    fx_free(f);
}

static void test_counts_add_up(void)
{
    fixture *f = fx_new(0);
    const char *text =
        "[2024-07-20 21:30:05,202] [INFO] [engine.py:1142:_configure] Using DeepSpeed Optimizer\n"
        "[2024-07-20 21:30:06,000] [WARNING] [stage3.py:1850:step] 1 pytorch allocator cache "
        "flushes since last step\n"
        "[2024-07-20 21:30:07,000] [ERROR] [launch.py:321:sigkill_handler] exits with code 1\n"
        "[2024-07-20 21:30:07,000] [DEBUG] [x.py:1:y] debug\n"
        "[2024-07-20 21:30:07,000] [CRITICAL] [x.py:1:y] boom\n"
        "gpu009: [2024-07-20 21:30:08,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10\n"
        "gpu009: plain print through pdsh\n"
        "Traceback (most recent call last):\n"
        "  File \"train.py\", line 3, in <module>\n"
        "\n"
        "RuntimeError: CUDA out of memory\n"
        " 45%|####5     | 45/100 [00:10<00:12]\r"
        " 46%|####6     | 46/100 [00:10<00:12]\r"
        "[2024-07-20 bad header\n"
        "[2024-07-20 21:30:05,202] [INFO] no function part\n";
    CHECK_INT(fx_scan(f, text), 0);
    const dsq_scan_stats *st = dsq_scan_stats_get(f->sc);
    CHECK_INT(st->lines, 15);
    CHECK_INT(st->lines, dsq_lines_stats_get(f->lines)->lines);
    uint64_t fam = 0, lv = 0;
    for (int i = 0; i < DSQ_FAM_COUNT; i++)
        fam += st->family_lines[i];
    for (int i = 0; i < DSQ_LV_COUNT; i++)
        lv += st->level_lines[i];
    CHECK_INT(fam, st->lines);
    CHECK_INT(lv, st->lines);
    CHECK_INT(st->family_lines[DSQ_FAM_DEEPSPEED], 6);
    CHECK_INT(st->family_lines[DSQ_FAM_TRACEBACK], 3);
    CHECK_INT(st->family_lines[DSQ_FAM_OTHER], 6);
    CHECK_INT(st->level_lines[DSQ_LV_INFO], 2);
    CHECK_INT(st->level_lines[DSQ_LV_WARNING], 1);
    CHECK_INT(st->level_lines[DSQ_LV_ERROR], 4); /* the launcher line and the traceback */
    CHECK_INT(st->level_lines[DSQ_LV_DEBUG], 1);
    CHECK_INT(st->level_lines[DSQ_LV_CRITICAL], 1);
    CHECK_INT(st->level_lines[DSQ_LV_NONE], 6);
    /* ds_cache_flush, and the traceback with its cuda_oom failure (and rank_lines) */
    CHECK_INT(st->events, 4);
    CHECK_INT(f->out.n, 3);
    fx_free(f);
}

static void test_cut_lines_counted(void)
{
    fixture *f = fx_new(40);
    char text[8192];
    snprintf(text, sizeof text, "short\n%0500d\n" LABEL "cut label line\nend\n", 7);
    CHECK_INT(fx_scan(f, text), 0);
    const dsq_scan_stats *st = dsq_scan_stats_get(f->sc);
    CHECK_INT(st->lines, 4);
    CHECK_INT(st->cut, 2);
    CHECK_INT(f->out.n, 0);
    fx_free(f);
}

static void test_emit_stops(void)
{
    fixture *f = fx_new(0);
    f->out.stop_at = 1;
    dsq_lines_reset(f->lines);
    CHECK_INT(dsq_lines_feed(f->lines, report, strlen(report)), 9);
    CHECK_INT(f->out.n, 1);
    fx_free(f);
}

/* Lines handed straight to dsq_scan_line, each ended by its own sentinel, including
 * NUL bytes, escape codes and invalid UTF-8: counted, no event, no crash. */
static void test_odd_bytes(void)
{
    fixture *f = fx_new(0);
    static const char *const odd[] = {
        "\x1b[32m[2024-07-20 21:30:05,202] [INFO] [a.py:1:b] colored\x1b[0m",
        "\xff\xfe\x80 invalid utf-8 \xc3",
        "gpu009: ",
        ": ",
        "[2024-07-20 21:30:05,202] [INFO] [utils.py:782:see_memory_usage] MA 1 GB Max_MA",
        "[2024-07-20 21:30:05,202] [INFO] [utils.py:782:see_memory_usage] [Rank 99999999] x",
        "[",
        ""};
    char buf[512];
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        size_t n = strlen(odd[i]);
        memcpy(buf, odd[i], n);
        buf[n] = '\n';
        memset(buf + n + 1, 0, DSQ_LINES_PAD);
        CHECK_INT(dsq_scan_line(f->sc, buf, n, 0), 0);
    }
    const char nul[] = "before\0after [2024-07-20 21:30:05,202]\n";
    CHECK_INT(dsq_scan_line(f->sc, nul, sizeof nul - 2, 0), 0);
    CHECK_INT(dsq_scan_end(f->sc), 0);
    const dsq_scan_stats *st = dsq_scan_stats_get(f->sc);
    CHECK_INT(st->lines, 9);
    /* a half MA line starts no report: only the label-shaped line is pending, no event */
    CHECK_INT(f->out.n, 0);
    fx_free(f);
}

/* Which ranks a stream had: one rank_lines event per (host, rank) at the end of the
 * stream, in order of first appearance, at its first line, with its line count;
 * lines without a rank count for none. Many ranks: the table fills, nothing breaks. */
/* The rank an NCCL process's comm line named applies to its later lines whatever
 * id the dictionary gave its host: an indexing worker's dictionary numbers hosts
 * otherwise than the index's, by the files it read before, and the index must not
 * depend on which worker read which file. Two processes of one host, scanned with
 * 0 to 299 strings interned first (their host ids made processes of one host share
 * a slot, the older forgotten, for some of them). */
static void test_nccl_ranks_whatever_the_host_id(void)
{
    static const char text[] =
        "TARS:829507:829507 [0] NCCL INFO Bootstrap : Using eno1:10.0.20.2<0>\n"
        "TARS:829507:829550 [0] NCCL INFO ncclCommInitRankConfig_impl comm 0x2bc1f840 rank 0 "
        "nranks 2 cudaDev 0 nvmlDev 0 busId 3000 commId 0xcde2ea451c75c2ba - Init START\n"
        "TARS:829508:829551 [1] NCCL INFO ncclCommInitRankConfig_impl comm 0x3ab1b680 rank 1 "
        "nranks 2 cudaDev 1 nvmlDev 1 busId d000 commId 0xcde2ea451c75c2ba - Init START\n"
        "TARS:829507:829550 [0] NCCL INFO Retrieving state for Socket\n"
        "TARS:829508:829551 [1] NCCL INFO Retrieving state for Socket\n"
        "TARS:829507:829550 [0] NCCL INFO Initialized state 0 for Socket\n";
    int bad = 0;
    for (int k = 0; k < 300; k++) {
        fixture *f = fx_new(0);
        f->out.ranks = 1;
        for (int i = 0; i < k; i++) {
            char s[32];
            int n = snprintf(s, sizeof s, "filler-%d", i);
            CHECK(dsq_dict_intern(f->dict, s, (size_t)n) != 0);
        }
        CHECK_INT(fx_scan(f, text), 0);
        double lines[2] = {0, 0};
        for (int i = 0; i < f->out.n && i < MAXEV; i++) {
            const dsq_event *ev = &f->out.ev[i];
            if (ev->kind == DSQ_EV_RANK_LINES && ev->rank >= 0 && ev->rank < 2)
                lines[ev->rank] += ev->f[0].v;
        }
        if (lines[0] != 3 || lines[1] != 2) { /* the first line names no rank */
            if (bad++ < 3)
                fprintf(stderr, "%d strings first: rank 0 %g lines, rank 1 %g (want 3, 2)\n", k,
                        lines[0], lines[1]);
        }
        fx_free(f);
    }
    CHECK_INT(bad, 0);
}

static void test_rank_lines(void)
{
    fixture *f = fx_new(0);
    f->out.ranks = 1;
    CHECK_INT(fx_scan(f, "[rank3]: a\n"
                         "gpu1: [rank0]: b\n"
                         "no rank\n"
                         "[rank3]: c\n"
                         "gpu2: [rank0]: d\n"
                         "gpu1: [rank0]: e\n"),
              0);
    CHECK_INT(f->out.n, 3);
    uint32_t g1 = id_of(f, "gpu1"), g2 = id_of(f, "gpu2");
    static const struct { int rank; uint32_t line; double lines; } want[] = {
        {3, 1, 2}, {0, 2, 2}, {0, 5, 1}};
    for (int i = 0; i < 3 && i < f->out.n; i++) {
        const dsq_event *ev = &f->out.ev[i];
        CHECK_INT(ev->kind, DSQ_EV_RANK_LINES);
        CHECK_INT(ev->rank, want[i].rank);
        CHECK_INT(ev->host, i == 0 ? 0 : i == 1 ? g1 : g2);
        CHECK_INT(ev->line, want[i].line);
        CHECK_INT(ev->nf, 1);
        CHECK_STR(dsq_dict_str(f->dict, ev->f[0].name, NULL), "lines");
        CHECK(ev->f[0].v == want[i].lines);
    }

    /* a file named after its rank: every line is that rank's */
    dsq_scan_begin(f->sc, 0, 5);
    f->out.n = 0;
    CHECK_INT(fx_scan(f, "x\ny\n"), 0);
    CHECK_INT(f->out.n, 1);
    CHECK_INT(f->out.ev[0].rank, 5);
    CHECK(f->out.ev[0].f[0].v == 2);

    /* more ranks than the table holds at first (it grows: every one is counted, in
     * order, also on a later stream that grows it again) */
    static char many[3000 * 16];
    for (int round = 0; round < 2; round++) {
        int ranks = round ? 3000 : 2000;
        dsq_scan_begin(f->sc, 0, -1);
        f->out.n = 0;
        size_t at = 0;
        for (int r = 0; r < ranks; r++)
            at += (size_t)snprintf(many + at, sizeof many - at, "[rank%d]: x\n", r);
        CHECK_INT(fx_scan(f, many), 0);
        CHECK_INT(f->out.n, ranks);
        int bad = 0;
        for (int i = 0; i < f->out.n && i < MAXEV; i++)
            bad += f->out.ev[i].kind != DSQ_EV_RANK_LINES || f->out.ev[i].rank != i ||
                   f->out.ev[i].f[0].v != 1;
        CHECK_INT(bad, 0);
    }
    fx_free(f);
}

/* A process's rank is the one its biggest communicator named: a tensor-parallel
 * group's comm line ("rank 1 nranks 8" of the process of rank 9 of 16) and the lines
 * after it keep rank 9, whichever comes first. */
static void test_nccl_subcommunicator_keeps_global_rank(void)
{
    static const char *const texts[2] = {
        "n1:300:301 [1] NCCL INFO comm 0xa rank 9 nranks 16 cudaDev 1 busId 1000 - Init COMPLETE\n"
        "n1:300:301 [1] NCCL INFO comm 0xb rank 1 nranks 8 cudaDev 1 busId 1000 - Init COMPLETE\n"
        "n1:300:301 [1] NCCL INFO Channel 00/08 :   0   1\n",
        "n1:300:301 [1] NCCL INFO comm 0xb rank 1 nranks 8 cudaDev 1 busId 1000 - Init COMPLETE\n"
        "n1:300:301 [1] NCCL INFO comm 0xa rank 9 nranks 16 cudaDev 1 busId 1000 - Init COMPLETE\n"
        "n1:300:301 [1] NCCL INFO Channel 00/08 :   0   1\n"};
    for (int k = 0; k < 2; k++) {
        fixture *f = fx_new(0);
        f->out.ranks = f->out.only_ranks = 1;
        CHECK_INT(fx_scan(f, texts[k]), 0);
        /* the lines of rank 9: all three, or the two from its world comm on */
        CHECK_INT(f->out.n, k ? 2 : 1);
        CHECK_INT(f->out.ev[f->out.n - 1].rank, 9);
        CHECK(f->out.ev[f->out.n - 1].f[0].v == (k ? 2 : 3));
        fx_free(f);
    }
}

/* A launcher log of many processes, each of which names its rank once (NCCL's comm
 * line) before any of its other lines: every later line keeps its process's rank
 * (256 slots direct-mapped forgot colliding processes: 10 of 64 lost theirs), past
 * the table's first size, and a next stream starts with none of them. */
static void test_nccl_many_processes_keep_their_ranks(void)
{
    fixture *f = fx_new(0);
    f->out.ranks = f->out.only_ranks = 1;
    int procs = 1500;
    size_t cap = (size_t)procs * 300, n = 0;
    char *text = malloc(cap);
    for (int p = 0; p < procs; p++)
        n += (size_t)snprintf(text + n, cap - n,
                              "node%03d:%d:%d [%d] NCCL INFO comm 0x55d0%08x rank %d nranks %d "
                              "cudaDev %d busId 18000 commId 0x9c4d - Init COMPLETE\n",
                              p / 8, 30000 + p, 31000 + p, p % 8, p, p, procs, p % 8);
    for (int p = 0; p < procs; p++)
        n += (size_t)snprintf(text + n, cap - n,
                              "node%03d:%d:%d [%d] NCCL INFO Channel 00/08 :   0   1   2   3\n",
                              p / 8, 30000 + p, 31000 + p, p % 8);
    CHECK_INT(fx_scan(f, text), 0);
    CHECK_INT(f->out.n, procs); /* one rank_lines event per process: 2 lines each */
    int bad = 0;
    for (int i = 0; i < f->out.n && i < MAXEV; i++)
        bad += f->out.ev[i].rank != i || f->out.ev[i].f[0].v != 2;
    CHECK_INT(bad, 0);
    dsq_scan_begin(f->sc, 0, -1); /* a new stream: the processes are forgotten */
    f->out.n = 0;
    CHECK_INT(fx_scan(f, "node000:30000:31000 [0] NCCL INFO Channel 00/08 :   0   1\n"), 0);
    CHECK_INT(f->out.n, 0); /* no rank: no rank_lines event */
    free(text);
    fx_free(f);
}

/* Field names of one length that share their first, middle and last bytes land in
 * the same slot of the scanner's name cache: each keeps its own id, for every
 * length the cache holds (whole words, a last partial word, short names). */
static void test_field_names_sharing_a_slot(void)
{
    for (int n = 2; n <= 33; n++) {
        for (int j = 1; j < n - 1; j++) {
            if (j == n / 2)
                continue;
            char a[40], b[40], text[512];
            memset(a, 'x', (size_t)n);
            a[0] = 'f', a[n / 2] = 'm', a[n - 1] = 'l', a[n] = 0;
            memcpy(b, a, (size_t)n + 1);
            b[j] = 'Q';
            fixture *f = fx_new(4096);
            snprintf(text, sizeof text,
                     "[2024-07-20 21:30:05,202] [INFO] [logging.py:96:log_dist] [Rank 0] "
                     "step=1, skipped=0, %s=1, %s=2\n"
                     "[2024-07-20 21:30:06,202] [INFO] [logging.py:96:log_dist] [Rank 0] "
                     "step=2, skipped=0, %s=3, %s=4\n",
                     a, b, b, a);
            CHECK_INT(fx_scan(f, text), 0);
            CHECK_INT(f->out.n, 2);
            if (f->out.n == 2) {
                expect_field(f, &f->out.ev[0], 2, a, 1, DSQ_U_NONE);
                expect_field(f, &f->out.ev[0], 3, b, 2, DSQ_U_NONE);
                expect_field(f, &f->out.ev[1], 2, b, 3, DSQ_U_NONE);
                expect_field(f, &f->out.ev[1], 3, a, 4, DSQ_U_NONE);
            }
            fx_free(f);
        }
    }
}

/* A line shape's field ids (dsq_emit_ids) are kept once found and then copied, all
 * at once, except the ids of names that vary line by line (f_vary), found on every
 * line: events of three lines whose second name changes carry its three ids. */
static void test_emit_ids_of_varying_names(void)
{
    const char *names[] = {"layer1_ms", "layer2_ms", "layer3_ms"};
    for (uint32_t vary = 0; vary < 4; vary++) {
        fixture *f = fx_new(4096);
        dsq_emit_ids ids;
        memset(&ids, 0, sizeof ids);
        ids.f_vary = vary | 2u; /* field 1's name varies; field 0's as the loop says */
        dsq_line_ctx lc = {f->sc, 0, 0, DSQ_TIME_NONE, 1};
        for (int k = 0; k < 3; k++) {
            dsq_mfield fl[2] = {{{"loss", 4}, 1.0 + k, DSQ_U_NONE},
                                {{names[k], strlen(names[k])}, 10.0 + k, DSQ_U_NONE}};
            dsq_emit_args a = {.ev = DSQ_EV_HF_LOSS, .f = fl, .nf = 2, .ids = &ids};
            CHECK_INT(dsq_scan_emit(&lc, &a), 0);
        }
        CHECK_INT(f->out.n, 3);
        for (int k = 0; k < 3 && k < f->out.n; k++) {
            expect_field(f, &f->out.ev[k], 0, "loss", 1.0 + k, DSQ_U_NONE);
            expect_field(f, &f->out.ev[k], 1, names[k], 10.0 + k, DSQ_U_NONE);
        }
        fx_free(f);
    }
}

/* Megatron keeps a loss first among an iteration line's pairs. Two names that share
 * the rank cache's slot (same length, first, middle and last bytes), one with
 * "loss" in it: each keeps its own rank, line after line. */
static void test_megatron_pair_ranks_sharing_a_slot(void)
{
    fixture *f = fx_new(4096);
    CHECK_INT(fx_scan(f, " iteration       10/    1000 | axxsxxb: 1 | aloss_b: 2 |\n"
                         " iteration       11/    1000 | aloss_b: 3 | axxsxxb: 4 |\n"
                         " iteration       12/    1000 | axxsxxb: 5 | aloss_b: 6 |\n"),
              0);
    CHECK_INT(f->out.n, 3);
    for (int i = 0; i < f->out.n && i < 3; i++) {
        const dsq_event *ev = &f->out.ev[i];
        expect_field(f, ev, 0, "iteration", 10 + i, DSQ_U_NONE);
        expect_field(f, ev, 1, "aloss_b", i == 1 ? 3 : 2 * i + 2, DSQ_U_NONE);
        expect_field(f, ev, 2, "axxsxxb", i == 1 ? 4 : 2 * i + 1, DSQ_U_NONE);
    }
    fx_free(f);
}

TEST_MAIN(T(test_pdsh_many_hosts_interleaved), T(test_layer_first_bytes),
          T(test_nccl_threads_beyond_slots), T(test_nccl_many_processes_keep_their_ranks), T(test_nccl_subcommunicator_keeps_global_rank), T(test_nccl_ranks_whatever_the_host_id), T(test_nccl_same_pid_two_hosts), T(test_nccl_transports_whole_words), T(test_field_names_sharing_a_slot), T(test_emit_ids_of_varying_names),
          T(test_megatron_pair_ranks_sharing_a_slot), T(test_memory_report), T(test_pdsh_interleaved), T(test_ranks_interleaved),
          T(test_report_without_cpu_line), T(test_reports_beyond_the_slots), T(test_many_streams), T(test_counts_add_up),
          T(test_cut_lines_counted), T(test_emit_stops), T(test_odd_bytes), T(test_rank_lines))
