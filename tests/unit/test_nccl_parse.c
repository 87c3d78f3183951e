/* The NCCL line parser's header fast path (grammar/nccl.re, info_header) against
 * the DFA alone (dsq_nccl_parse_dfa): for seed lines of every header shape, for
 * every cut of them and for every header byte replaced by each byte that changes
 * the shape, both must say the same and fill the same bytes. Then every line of the
 * corpus logs (when DSQ_CORPUS names it). Each line is an exact-size heap copy
 * with its '\n' sentinel (grammar.h), so ASan sees any read past it. Last, a
 * channel line's rest read 16 bytes at a time (ring lists) against a byte loop, the
 * comm lines' keys against the reader they had before, and the memo of a run of
 * channel lines (dsq_nccl_memo) against the parser. */
#include <stdint.h>
#include <stdlib.h>

#include "fam_nccl.h"
#include "scan.h"
#include "shapes.h"
#include "testbuf.h"
#include "test.h"

static const char *const seeds[] = {
    "gpu0856:32568:32639 [0] NCCL INFO Channel 00/0 : 31[7] -> 0[0] [receive] via NET/IB/0",
    "gpu0856:32568:32639 [3] NCCL INFO Channel 01/08 :   0   1   2   3",
    ("gpu0856:32568:32639 [0] NCCL INFO comm 0x55d026e7d858 rank 0 nranks 32 cudaDev 0 "
     "nvmlDev 0 busId 18000 commId 0x9c4d37a746762cd8 - Init START"),
    "gpu0856:32568:32568 [0] NCCL INFO Bootstrap : Using ib0:10.31.0.2<0>",
    "gpu0856:32568:32639 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1",
    "gpu0856:32568:32639 [0] NCCL INFO Trees [0] 1/-1/-1->0->31 [1] 1/-1/-1->0->31",
    "gpu0856:32568:32639 [0] NCCL INFO",
    "gpu0856:32568:32639 [0] NCCL INFO ",
    "gpu0856:32568:32639 [0] NCCL INFOx",
    "n1:1:2 [12] NCCL INFO 4 coll channels, 0 nvls channels, 4 p2p channels, 1 p2p channels per peer",
    "node:77 [0] NCCL INFO Using network IB",
    "node [0] NCCL INFO cudaDriverVersion 12020",
    "<cluster_name>:1:2 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so)",
    "a<b>:1:2 [0] NCCL INFO Using network Socket",
    "h:1:2 [-1] NCCL INFO Setting affinity for GPU 0 to ffff",
    "h:12345678901:2 [0] NCCL INFO eleven digits of pid",
    "h:1234567890:1234567890 [1234] NCCL INFO ten digits each",
    "h:1:2 [12345] NCCL INFO five digits of device",
    "h:12345678:87654321 [0] NCCL INFO eight digits each (read eight at a time)",
    "h:1234567:123456789 [7] NCCL INFO seven and nine",
    "h:00000001:0000002 [0009] NCCL INFO leading zeros",
    "h:9:99999999 [99] NCCL INFO",
    "  gpu1:1:2 [0] NCCL INFO indented",
    "[155] gpu1:1:2 [0] NCCL INFO with an MPI rank",
    "[2025-11-12 11:11:57] gpu1:1:2 [0] NCCL INFO stamped",
    "gpu1:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN Call to ibv_open_device failed",
    "gpu1:1:2 [0] enqueue.cc:301 (ncclLaunch) NCCL WARN Cuda failure",
    "gpu1:1:2 [0] 12.345 init.cc:100 NCCL TRACE something",
    "gpu1:1:2 NCCL CALL ncclAllReduce",
    "NCCL version 2.18.5+cuda12.2",
    "RCCL version : 2.27.7-HEAD:abc",
    "HIP version  : 6.0.1",
    "gpu1:1:2 [0] NCCL WARN bare warn",
    "gpu1:1:2 [0] NCCL INFO transport/net.cc:1034 -> 2",
    "gpu1:1:2\t[0] NCCL INFO a tab",
    "gpu1::2 [0] NCCL INFO empty pid",
};

/* Bytes that end or change a header's parts. */
static const char swaps[] = {' ', '\t', ':', '[', ']', '<', '>', '-', '0', '9', 'a', 'N', 'I', '\0', '.'};

static long lines_compared, lines_nccl;


static void compare(const char *text, size_t len)
{
    char *line = test_line_copy(text, len);
    if (!line) {
        CHECK(line != NULL);
        return;
    }
    dsq_nccl_line fast, dfa;
    /* other bytes under each: a field one path leaves unset shows */
    memset(&fast, 0xA5, sizeof fast);
    memset(&dfa, 0x5A, sizeof dfa);
    int rf = dsq_nccl_parse(line, len, &fast), rd = dsq_nccl_parse_dfa(line, len, &dfa);
    lines_compared++;
    lines_nccl += rd;
    if (rf != rd || (rd && !dsq_nccl_line_same(&fast, &dfa))) {
        fprintf(stderr, "differs (%d vs %d): \"%.*s\"\n", rf, rd, (int)len, line);
        test_failures++;
    }
    free(line);
}

static void test_fast_header_same_as_dfa_on_variants(void)
{
    char buf[512];
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t n = strlen(seeds[s]);
        for (size_t cut = 0; cut <= n; cut++)
            compare(seeds[s], cut);
        /* every byte of the header part (up to 48) replaced by each swap byte */
        for (size_t i = 0; i < n && i < 48; i++) {
            for (size_t k = 0; k < sizeof swaps; k++) {
                memcpy(buf, seeds[s], n);
                buf[i] = swaps[k];
                compare(buf, n);
            }
        }
    }
    CHECK(lines_nccl > 1000); /* most variants still are NCCL lines: both paths ran */
}

/* Every line of every corpus log (the corpus is one directory; a line is cut at
 * '\n' or '\r' as lines.h cuts it), and what follows each blank of its start, as
 * after a peeled prefix ("gpu1: gpu1:12:34 [0] NCCL INFO ..."). */
static void test_fast_header_same_as_dfa_on_corpus(void)
{
    long before = lines_nccl;
    if (test_corpus_lines(64, compare) != 0)
        return;
    printf("  corpus: %ld NCCL lines among %ld compared\n", lines_nccl - before, lines_compared);
}

/* A channel line is a ring list when its rest after " : " is blanks and digits to
 * the end (read 16 bytes at a time with SSE2, the last 16 again): rests of every
 * length to 80, all blanks and digits, and with one other byte at each place, each
 * parsed by both paths and its kind checked against the bytes (the message ends
 * before trailing blanks and tabs). */
static void test_ring_list_rest_every_length_and_place(void)
{
    static const char head[] = "gpu0856:32568:32639 [3] NCCL INFO Channel 01/08 : ";
    static const char odd[] = {'x', '-', '>', '[', '\t', '/', ':', (char)0x80, (char)0xB9};
    char buf[256];
    size_t h = sizeof head - 1;
    int wrong = 0;
    long lists = 0;
    memcpy(buf, head, h);
    for (size_t n = 0; n <= 80; n++) {
        for (size_t i = 0; i < n; i++) /* "  0  1  2 ...": blanks and digits */
            buf[h + i] = i % 3 == 2 ? (char)('0' + i % 10) : ' ';
        for (size_t at = 0; at <= n; at++) /* at == n: none */
            for (size_t k = 0; k < (at < n ? sizeof odd : 1); k++) {
                char keep = buf[h + at];
                if (at < n)
                    buf[h + at] = odd[k];
                char *line = test_line_copy(buf, h + n);
                if (!line) {
                    CHECK(line != NULL);
                    return;
                }
                dsq_nccl_line o;
                size_t e = h + n; /* the message ends before trailing blanks and tabs */
                while (e > h && (buf[e - 1] == ' ' || buf[e - 1] == '\t'))
                    e--;
                int want = DSQ_NCCL_RING_LIST;
                for (size_t i = h; i < e; i++)
                    if (buf[i] != ' ' && (buf[i] < '0' || buf[i] > '9'))
                        want = DSQ_NCCL_GRAPH;
                if (!dsq_nccl_parse(line, h + n, &o) || (o.kind != want && o.kind != DSQ_NCCL_CONNECT)) {
                    fprintf(stderr, "rest of %zu, odd byte 0x%02x at %zu: kind %d, want %d\n", n, at < n ? (unsigned char)buf[h + at] : 0, at,
                            o.kind, want);
                    wrong++;
                }
                lists += o.kind == DSQ_NCCL_RING_LIST;
                free(line);
                compare(buf, h + n);
                if (at < n)
                    buf[h + at] = keep;
            }
    }
    CHECK_INT(wrong, 0);
    CHECK(lists > 81); /* each length's, and tabs trailing */
}

/* The comm lines' "key value" reader (kv_scan) as it was before it read a word as a
 * number only after a key of that word's length: the reference for the test below. */
static int ref_is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

static long ref_number(const char *p, const char *e)
{
    if (p >= e || e - p > 15)
        return -1;
    for (const char *q = p; q < e; q++)
        if (*q < '0' || *q > '9')
            return -1;
    long v = 0; /* the value stops growing past 10^11 */
    for (const char *q = p; q < e && v < 100000000000L; q++)
        v = v * 10 + (*q - '0');
    return v;
}

static void ref_kv_scan(dsq_nccl_line *o, const char *p, const char *end)
{
    const char *pp = NULL;
    size_t pn = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != ',')
            p++;
        if (p == w)
            break;
        long v = ref_number(w, p);
        if (pn && v >= 0) {
            if (ref_is(pp, pn, "rank"))
                o->rank = v;
            else if (ref_is(pp, pn, "nranks") || ref_is(pp, pn, "nRanks"))
                o->nranks = v;
            else if (ref_is(pp, pn, "cudaDev"))
                o->cuda_dev = v;
            else if (ref_is(pp, pn, "nvmlDev"))
                o->nvml_dev = v;
            else if (ref_is(pp, pn, "nNodes"))
                o->nnodes = v;
            else if (ref_is(pp, pn, "used"))
                o->used = v;
        }
        if (ref_is(pp, pn, "commId"))
            o->b = (dsq_span){w, (size_t)(p - w)};
        if (ref_is(w, (size_t)(p - w), "parent"))
            o->split = 1;
        pp = w;
        pn = (size_t)(p - w);
    }
}

/* Comm lines of random words (every key, near misses, numbers of 1 to 16 digits and
 * not quite numbers, blanks, tabs and commas between), with and without "- Init
 * COMPLETE" / "- Destroy COMPLETE": the numbers, commId and the split mark as the
 * reference reads them from the line's message. */
static void test_comm_keys_same_as_reference(void)
{
    static const char *const words[] = {
        "rank", "nranks", "nRanks", "nNodes", "cudaDev", "nvmlDev", "used", "commId",
        "parent", "busId", "Rank", "ranks", "rank:", "nranksx", "cudadev", "usedd", "comm",
        "0", "7", "31", "18000", "123456789012345", "1234567890123456", "12a", "-1", "0x1f",
        "0x55d02cd7d5b9", "-", "Init", "x"};
    static const char *const seps[] = {" ", "  ", "\t", ", ", ","};
    static const char *const ends[] = {"", " - Init COMPLETE", " - Init START", " - Destroy COMPLETE"};
    uint64_t r = 0x9e3779b97f4a7c15ull;
    int wrong = 0;
    long checked = 0;
    char buf[512];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(buf, sizeof buf, "gpu1:1:2 [0] NCCL INFO %s", i % 3 ? "comm 0x1" : "ncclCommInitRank comm 0x1");
        int nw = (int)(i % 14);
        for (int k = 0; k < nw; k++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s", seps[r % 5],
                          words[(r >> 8) % (sizeof words / sizeof words[0])]);
        }
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s", ends[(r >> 20) % 4]);
        char *line = test_line_copy(buf, (size_t)n);
        if (!line)
            break;
        dsq_nccl_line o;
        if (dsq_nccl_parse(line, (size_t)n, &o) &&
            (o.kind == DSQ_NCCL_COMM || o.kind == DSQ_NCCL_INIT || o.kind == DSQ_NCCL_INIT_START ||
             o.kind == DSQ_NCCL_DESTROY)) {
            dsq_nccl_line ref;
            ref.rank = ref.nranks = ref.cuda_dev = ref.nvml_dev = ref.nnodes = ref.used = -1;
            ref.b = (dsq_span){NULL, 0};
            ref.split = 0;
            ref_kv_scan(&ref, o.msg.p, o.msg.p + o.msg.n);
            if (o.rank != ref.rank || o.nranks != ref.nranks || o.cuda_dev != ref.cuda_dev ||
                o.nvml_dev != ref.nvml_dev || o.nnodes != ref.nnodes || o.used != ref.used ||
                o.b.p != ref.b.p || o.b.n != ref.b.n || o.split != ref.split) {
                if (wrong++ < 5)
                    fprintf(stderr, "differs: \"%.*s\"\n", n, line);
            }
            checked++;
        }
        free(line);
    }
    CHECK_INT(wrong, 0);
    CHECK(checked > 15000);
}

/* --- the memos of a run of channel lines and of a process's header -------------- */

/* One of the scanner's two ways to answer from the memo, with its own memo. */
typedef struct memo_run {
    dsq_nccl_memo memo;
    int (*answer)(const dsq_nccl_memo *, const char *, size_t, dsq_match *);
    const char *what;
    long hits, tries;
} memo_run;

static memo_run channel_run = {.answer = dsq_nccl_memo_match, .what = "memo"};
static memo_run head_run = {.answer = dsq_nccl_memo_head, .what = "header memo"};

/* The line after the memo's: when the memo answers, the match and the parse the
 * handler reads are the parser's; then the line is kept, as the scanner keeps it
 * (the header not again when the header memo answered). */
static void memo_step(memo_run *r, const char *text, size_t len)
{
    char *line = test_line_copy(text, len);
    if (!line) {
        CHECK(line != NULL);
        return;
    }
    dsq_match got, want;
    dsq_scan_match_init(&got);
    dsq_scan_match_init(&want);
    r->tries++;
    int hit = r->answer(&r->memo, line, len, &got);
    int parsed = dsq_gram_nccl(line, len, &want);
    if (hit) {
        r->hits++;
        if (!parsed || !dsq_shapes_same_match(&got, &want) ||
            !dsq_nccl_line_same((const dsq_nccl_line *)got.aux.bytes,
                                (const dsq_nccl_line *)want.aux.bytes)) {
            fprintf(stderr, "%s differs from the parser: \"%.*s\"\n", r->what, (int)len, line);
            test_failures++;
        }
    }
    if (parsed)
        dsq_nccl_memo_keep(&r->memo, line, len, &want, hit && r == &head_run);
    else
        r->memo.len = r->memo.head_n = 0;
    free(line);
}

static void memo_next(const char *text, size_t len) { memo_step(&channel_run, text, len); }
static void head_next(const char *text, size_t len) { memo_step(&head_run, text, len); }

/* Channel lines of each kind kept, then each with its channel number's digits
 * changed (the memo answers), each other byte changed to each swap byte and the
 * line cut anywhere (the memo answers as the parser, or not at all); then each
 * corpus line after the one before it. */
static void test_memo_reads_channel_runs_as_the_parser(void)
{
    static const char *const runs[] = {
        "gpu0856:32568:32639 [0] NCCL INFO Channel 00/0 : 31[7] -> 0[0] [receive] via NET/IB/0",
        "gpu1007:28308:28379 [0] NCCL INFO Channel 07/0 : 0[0] -> 1[1] via P2P/IPC/read",
        "gpu0856:32568:32639 [3] NCCL INFO Channel 01/08 :   0   1   2   3",
        "n1:5:6 [1] NCCL INFO Ring 02 : 1 -> 0 -> 1",
        "n1:5:6 [1] NCCL INFO Tree 3 : -1 -> 0 -> 1/-1/-1",
        "[2025-11-12 11:11:57] gpu1:1:2 [0] NCCL INFO Channel 12/24 : 0[0] -> 1[1] via SHM/direct/direct",
    };
    char buf[512];
    long hits_before = 0;
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const char *seed = runs[r];
        size_t n = strlen(seed);
        const char *num = strstr(seed, "Channel ") ? strstr(seed, "Channel ") + 8
                          : strstr(seed, "Ring ")  ? strstr(seed, "Ring ") + 5
                                                   : strstr(seed, "Tree ") + 5;
        size_t lo = (size_t)(num - seed), hi = lo;
        while (seed[hi] >= '0' && seed[hi] <= '9')
            hi++;
        hits_before = channel_run.hits;
        for (int v = 0; v < 40; v++) { /* the digits changed: each is read from the memo */
            memcpy(buf, seed, n);
            for (size_t i = lo; i < hi; i++)
                buf[i] = (char)('0' + (v * 7 + (int)i * 3) % 10);
            memo_next(seed, n);
            memo_next(buf, n);
        }
        if (channel_run.hits - hits_before < 40) {
            fprintf(stderr, "memo answered %ld of 40 channel lines after \"%s\"\n",
                    channel_run.hits - hits_before, seed);
            test_failures++;
        }
        for (size_t i = 0; i < n; i++) /* any other byte changed: answered alike or not */
            for (size_t k = 0; k < sizeof swaps; k++) {
                memcpy(buf, seed, n);
                buf[i] = swaps[k];
                memo_next(seed, n);
                memo_next(buf, n);
            }
        for (size_t cut = 0; cut <= n; cut++) {
            memo_next(seed, n);
            memo_next(seed, cut);
        }
    }
    channel_run.memo.len = 0;
    if (test_corpus_lines(0, memo_next) == 0)
        printf("  corpus: the memo answered %ld of %ld lines\n", channel_run.hits, channel_run.tries);
}

/* Lines of one process after one another, each body after each (the header memo
 * answers every one), one line with each byte changed to each swap byte and cut
 * anywhere (answered as the parser, or not at all), then each corpus line after the
 * one before it. */
static void test_head_memo_reads_a_process_lines_as_the_parser(void)
{
    static const char *const heads[] = {"gpu0793:22698:22769 [0] NCCL INFO ",
                                        "n1:5:6 [1] NCCL INFO ", "<cluster>:12:13 [7] NCCL INFO "};
    static const char *const bodies[] = {
        "Bootstrap : Using ib0:10.31.0.3<0>",
        ("comm 0x55d06a69787c rank 8 nranks 32 cudaDev 0 nvmlDev 0 busId 18000 commId "
         "0xf4309a4df40b4eac - Init START"),
        "Trees [0] 9/-1/-1->8->7 [1] 9/-1/-1->8->7",
        "Channel 00/0 : 7[7] -> 8[0] [receive] via NET/IB/0",
        "Channel 01/08 :   0   1   2   3",
        "Connected all rings",
        "threadThresholds 8/8/64 | 256/8/64 | 512 | 512",
        "32 coll channels, 0 nvls channels, 32 p2p channels, 2 p2p channels per peer",
        "x",
        "",
    };
    char buf[512], seed[512];
    size_t nb = sizeof bodies / sizeof bodies[0];
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
        for (size_t i = 0; i < nb; i++)
            for (size_t j = 0; j < nb; j++) {
                int n = snprintf(buf, sizeof buf, "%s%s", heads[h], bodies[i]);
                head_next(buf, (size_t)n);
                long before = head_run.hits;
                n = snprintf(buf, sizeof buf, "%s%s", heads[h], bodies[j]);
                head_next(buf, (size_t)n);
                if (head_run.hits != before + 1) {
                    fprintf(stderr, "header memo did not answer \"%s\" after \"%s\"\n", buf,
                            bodies[i]);
                    test_failures++;
                }
            }
    int n = snprintf(seed, sizeof seed, "%s%s", heads[0], bodies[1]);
    for (int i = 0; i < n; i++) /* any byte changed: answered alike or not */
        for (size_t k = 0; k < sizeof swaps; k++) {
            memcpy(buf, seed, (size_t)n);
            buf[i] = swaps[k];
            head_next(seed, (size_t)n);
            head_next(buf, (size_t)n);
        }
    for (int cut = 0; cut <= n; cut++) {
        head_next(seed, (size_t)n);
        head_next(seed, (size_t)cut);
    }
    head_run.memo.len = head_run.memo.head_n = 0;
    if (test_corpus_lines(0, head_next) == 0)
        printf("  corpus: the header memo answered %ld of %ld lines\n", head_run.hits, head_run.tries);
}

TEST_MAIN({"fast_header_same_as_dfa_on_variants", test_fast_header_same_as_dfa_on_variants},
          {"fast_header_same_as_dfa_on_corpus", test_fast_header_same_as_dfa_on_corpus},
          {"ring_list_rest_every_length_and_place", test_ring_list_rest_every_length_and_place},
          {"comm_keys_same_as_reference", test_comm_keys_same_as_reference},
          {"memo_reads_channel_runs_as_the_parser", test_memo_reads_channel_runs_as_the_parser},
          {"head_memo_reads_a_process_lines_as_the_parser",
           test_head_memo_reads_a_process_lines_as_the_parser})
