/* Line shapes: a line of a learned shape gets exactly the match the recognizers
 * would make of it; lines that differ in anything but the digits of a value, rank
 * or stamp do not; shapes that cannot be replayed (computed values, NCCL lines, a
 * time from a prefix layer) are refused. The corpus case changes the digits of
 * every real log line many times over and compares with the recognizers. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"
#include "shapes.h"
#include "test.h"

#define PAD 64

/* A line in its own buffer with the sentinel and padding dsq_lines gives. */
typedef struct line_buf {
    char *p;
    size_t n;
} line_buf;

static line_buf mk(const char *s, size_t n)
{
    line_buf b = {malloc(n + 1 + PAD), n};
    memcpy(b.p, s, n);
    memset(b.p + n, '\n', 1 + PAD);
    return b;
}

/* The match as the recognizers make it from a line after a prefix layer that named
 * a rank (or none: -1), and the shapes' answer: whether they answered, and alike. */
static int answer_ranked(dsq_shapes *s, const char *text, int rank, int *same)
{
    line_buf b = mk(text, strlen(text));
    dsq_match got, want;
    dsq_scan_match_init(&got);
    got.rank = rank;
    want = got;
    dsq_scan_recognize(&want, b.p, b.n);
    int hit = dsq_shapes_apply(s, b.p, b.n, &got, NULL, 0);
    if (!hit) {
        dsq_scan_recognize(&got, b.p, b.n);
        dsq_shapes_learn(s, b.p, b.n, &got);
    }
    *same = dsq_shapes_same_match(&got, &want);
    free(b.p);
    return hit;
}

/* answer_ranked after no prefix rank (the prefix state plain). */
static int answer(dsq_shapes *s, const char *text, int *same)
{
    return answer_ranked(s, text, -1, same);
}

#define EXPECT(s, text, want_hit)                                                  \
    do {                                                                           \
        int same_;                                                                 \
        CHECK_INT(answer(s, text, &same_), want_hit);                              \
        CHECK(same_);                                                              \
    } while (0)

static const char *const ds_lines[][2] = {
    {"[2024-07-01 01:16:35,696] [INFO] [logging.py:96:log_dist] [Rank 2] step=130, skipped=3, "
     "lr=[2.000000e-05], mom=[(0.9, 0.999)]",
     "[2024-07-02 11:06:05,106] [INFO] [logging.py:96:log_dist] [Rank 7] step=999, skipped=0, "
     "lr=[3.500000e-04], mom=[(0.9, 0.999)]"}, /* mom is no value: its digits are literal */
    {"[2024-07-01 01:16:35,696] [INFO] [logging.py:96:log_dist] [Rank 2] time (ms) | "
     "fwd_microstep: 11148.60 | bwd_microstep: 22297.20 | step_microstep: 1114.86",
     "[2024-07-01 01:16:35,697] [INFO] [logging.py:96:log_dist] [Rank 5] time (ms) | "
     "fwd_microstep: 99999.99 | bwd_microstep: 00001.00 | step_microstep: 7777.77"},
    {"[2024-07-01 01:16:35,696] [INFO] [timer.py:260:stop] epoch=0/micro_step=1040/"
     "global_step=130, RunningAvgSamplesPerSec=51.4628361589, CurrSamplesPerSec=49.2976551660, "
     "MemAllocated=22.19GB, MaxMemAllocated=36.80GB",
     "[2024-07-01 01:16:35,696] [INFO] [timer.py:260:stop] epoch=1/micro_step=2080/"
     "global_step=260, RunningAvgSamplesPerSec=12.0000000001, CurrSamplesPerSec=99.9999999999, "
     "MemAllocated=01.00GB, MaxMemAllocated=77.77GB"},
    {"[2024-07-01 01:16:35,813] [INFO] [utils.py:801:see_memory_usage] MA 22.19 GB         "
     "Max_MA 36.73 GB         CA 38.03 GB         Max_CA 39 GB ",
     "[2024-07-01 01:16:36,813] [INFO] [utils.py:801:see_memory_usage] MA 12.34 GB         "
     "Max_MA 56.78 GB         CA 90.12 GB         Max_CA 11 GB "},
    {"{'loss': 3.1647, 'grad_norm': 2.0045521891895, 'learning_rate': 2.0000000000000e-05, "
     "'epoch': 0.02}",
     "{'loss': 9.9999, 'grad_norm': 0.0000000000001, 'learning_rate': 7.1234567890123e-05, "
     "'epoch': 1.99}"},
    {" [2024-07-01 00:02:03] iteration       10/     100 | consumed samples:          640 | "
     "elapsed time per iteration (ms): 1234.5 | learning rate: 1.500E-04 | lm loss: "
     "7.123456E+00 | loss scale: 4096.0 | grad norm: 3.210 |",
     " [2024-08-11 10:12:13] iteration       20/     100 | consumed samples:          960 | "
     "elapsed time per iteration (ms): 9876.5 | learning rate: 2.500E-04 | lm loss: "
     "6.000001E+00 | loss scale: 2048.0 | grad norm: 0.001 |"},
    {"05/04 08:52:15 - mmengine - INFO - Iter(train) [  10/1920]  lr: 3.2145e-05  eta: 0:11:00  "
     "time: 0.3458  data_time: 0.0170  memory: 9793  loss: 2.9904",
     "12/31 23:59:59 - mmengine - INFO - Iter(train) [  90/1920]  lr: 9.9999e-05  eta: 0:11:00  "
     "time: 1.0000  data_time: 0.9999  memory: 1234  loss: 0.0001"}, /* eta is no value */
    {"[INFO|trainer.py:2405] 2025-03-06 12:04:09,913 >> ***** Running training *****",
     "[INFO|trainer.py:2405] 2026-11-30 23:59:59,999 >> ***** Running training *****"},
};

static void test_same_shape_other_digits_replayed(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    for (size_t i = 0; i < sizeof ds_lines / sizeof ds_lines[0]; i++) {
        EXPECT(s, ds_lines[i][0], 0); /* seen */
        EXPECT(s, ds_lines[i][0], 0); /* seen again: learned */
        EXPECT(s, ds_lines[i][0], 1);
        EXPECT(s, ds_lines[i][1], 1); /* other values, rank and stamp: the same answer */
    }
    CHECK_INT(dsq_shapes_stats_get(s)->learned, sizeof ds_lines / sizeof ds_lines[0]);
    dsq_shapes_free(s);
}

static void test_other_bytes_not_replayed(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    /* a digit that is no value (the file's line number) is literal */
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [utils.py:800:see_memory_usage] After step 130", 0);
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [utils.py:800:see_memory_usage] After step 130", 0);
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [utils.py:800:see_memory_usage] After step 130", 1);
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [utils.py:800:see_memory_usage] After step 131", 0);
    EXPECT(s, "[2024-07-01 01:16:35,699] [INFO] [utils.py:800:see_memory_usage] After step 131", 1);
    EXPECT(s, "[2024-07-01 01:16:35,699] [INFO] [utils.py:801:see_memory_usage] After step 131", 0);
    /* a letter for a digit, a digit for a letter, one byte more */
    EXPECT(s, ds_lines[0][0], 0);
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [logging.py:96:log_dist] [Rank 2] step=1x0, "
              "skipped=3, lr=[2.000000e-05], mom=[(0.9, 0.999)]", 0);
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [logging.py:96:log_dist] [Rank 2] step=130, "
              "skipped=3, lr=[2.000000e-05], mom=[(0.9, 0.999)] ", 0);
    /* lines nobody recognizes: every digit literal */
    EXPECT(s, "[data] rank 3: loaded 100 samples", 0);
    EXPECT(s, "[data] rank 3: loaded 100 samples", 0);
    EXPECT(s, "[data] rank 3: loaded 100 samples", 1);
    EXPECT(s, "[data] rank 4: loaded 100 samples", 0);
    dsq_shapes_free(s);
}

static void test_shapes_refused(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    /* NCCL: its handler reads what the recognizer parsed beyond the match */
    for (int i = 0; i < 2; i++) /* the second time is learned: refused */
        EXPECT(s, "gpu0856:32568:32639 [0] NCCL INFO comm 0x55d026e7d858 rank 0 nranks 32 cudaDev 0 "
                  "nvmlDev 0 busId 18000 commId 0x9c4d37a746762cd8 - Init START", 0);
    CHECK_INT(dsq_shapes_stats_get(s)->refused, 1);
    EXPECT(s, "gpu0856:32568:32639 [0] NCCL INFO comm 0x55d026e7d858 rank 0 nranks 32 cudaDev 0 "
              "nvmlDev 0 busId 18000 commId 0x9c4d37a746762cd8 - Init START", 0);
    /* a computed value (exit code through dsq_match_value) */
    EXPECT(s, "[2024-07-01 01:16:35,696] [INFO] [launch.py:351:main] Process 12345 exits "
              "successfully.", 0);
    const char *failed = "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/"
                         "multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 (pid: "
                         "2630) of binary: /root/miniconda3/bin/python";
    EXPECT(s, failed, 0);
    EXPECT(s, failed, 0);
    CHECK(dsq_shapes_stats_get(s)->refused >= 2);
    /* a time from a prefix layer: not looked up, not learned */
    line_buf b = mk(ds_lines[0][0], strlen(ds_lines[0][0]));
    dsq_match m;
    dsq_scan_match_init(&m);
    m.t_us = 1;
    uint64_t learned = dsq_shapes_stats_get(s)->learned;
    CHECK_INT(dsq_shapes_apply(s, b.p, b.n, &m, NULL, 0), 0);
    dsq_scan_recognize(&m, b.p, b.n);
    dsq_shapes_learn(s, b.p, b.n, &m);
    CHECK_INT(dsq_shapes_stats_get(s)->learned, learned);
    free(b.p);
    dsq_shapes_free(s);
}

/* A host prefix left its host and body: a recognizer that sets neither leaves
 * them to the line being answered. */
static void test_prefix_spans_kept(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    const char *full[3] = {"gpu0001: {'loss': 3.1647, 'epoch': 0.02}",
                           "gpu0001: {'loss': 3.1647, 'epoch': 0.02}",
                           "gpu0002: {'loss': 1.2345, 'epoch': 0.04}"};
    for (int i = 0; i < 3; i++) {
        line_buf b = mk(full[i], strlen(full[i]));
        const char *rest = b.p + 9;
        size_t n = b.n - 9;
        dsq_match got, want;
        dsq_scan_match_init(&got);
        got.kind = DSQ_MK_PREFIX;
        got.host = (dsq_span){b.p, 7};
        got.body = (dsq_span){rest, n};
        want = got;
        dsq_scan_recognize(&want, rest, n);
        int hit = dsq_shapes_apply(s, rest, n, &got, NULL, 0);
        CHECK_INT(hit, i == 2);
        if (!hit) {
            dsq_scan_recognize(&got, rest, n);
            dsq_shapes_learn(s, rest, n, &got);
        }
        CHECK(dsq_shapes_same_match(&got, &want));
        CHECK(got.host.p == b.p);
        free(b.p);
    }
    dsq_shapes_free(s);
}

/* A shape whose literal digits change on every line is given up after a while:
 * learned no more, its lines left to the recognizers (and still answered right). */
static void test_changing_literals_given_up(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    char text[64];
    for (int i = 0; i < 60; i++) {
        snprintf(text, sizeof text, "[data] rank %d: loaded 100 samples", 10 + i);
        EXPECT(s, text, 0);
    }
    const dsq_shapes_stats *st = dsq_shapes_stats_get(s);
    CHECK(st->refused >= 1);
    uint64_t learned = st->learned;
    CHECK(learned < 40);
    for (int i = 0; i < 20; i++) {
        snprintf(text, sizeof text, "[data] rank %d: loaded 100 samples", 70 + i);
        EXPECT(s, text, 0);
    }
    CHECK_INT(st->learned, learned);
    dsq_shapes_free(s);
}

/* Two shapes with one key (the same length and the same bytes where the key looks,
 * another letter elsewhere) are both kept, each answering its own lines. */
static void test_shapes_sharing_a_key_both_kept(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    char a[256], b[256];
    snprintf(a, sizeof a, "%s", ds_lines[0][0]);
    snprintf(b, sizeof b, "%s", a);
    size_t n = strlen(a);
    size_t at = n / 4 + 12; /* between the words the key reads (n / 4 and n / 2) */
    CHECK(at + 8 < n / 2);
    CHECK(b[at] >= 'a' && b[at] <= 'z');
    b[at] = b[at] == 'x' ? 'y' : 'x';
    int same;
    for (int i = 0; i < 2; i++) { /* seen, learned (in either order) */
        answer(s, a, &same);
        CHECK(same);
        answer(s, b, &same);
        CHECK(same);
    }
    for (int i = 0; i < 3; i++) { /* one replacing the other would miss every time */
        EXPECT(s, a, 1);
        EXPECT(s, b, 1);
    }
    CHECK_INT(dsq_shapes_stats_get(s)->learned, 2);
    dsq_shapes_free(s);
}

/* A shape is tried first after the shape that came before it last time; it still
 * answers only a line after the same prefix layers (a loss dict keeps the rank a
 * prefix named: learned without one, it must not answer a line with one). */
static void test_next_shape_keeps_prefix_state(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    const char *step = ds_lines[0][0], *loss = ds_lines[4][0];
    int same;
    for (int i = 0; i < 3; i++) { /* learned, then step -> loss twice */
        answer_ranked(s, step, -1, &same);
        CHECK(same);
        answer_ranked(s, loss, -1, &same);
        CHECK(same);
    }
    CHECK_INT(answer_ranked(s, step, -1, &same), 1);
    CHECK_INT(answer_ranked(s, loss, 5, &same), 0); /* another prefix state: not this shape */
    CHECK(same);
    for (int i = 0; i < 2; i++) { /* rank 5's loss dict learned too; both answered */
        answer_ranked(s, step, -1, &same);
        answer_ranked(s, loss, 5, &same);
    }
    CHECK_INT(answer_ranked(s, step, -1, &same), 1);
    CHECK_INT(answer_ranked(s, loss, 5, &same), 1);
    CHECK(same);
    CHECK_INT(answer_ranked(s, step, -1, &same), 1);
    CHECK_INT(answer_ranked(s, loss, -1, &same), 1);
    CHECK(same);
    dsq_shapes_free(s);
}

/* Lines longer than the longest shape kept are left to the recognizers. */
static void test_long_lines_not_learned(void)
{
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    char text[512];
    for (int len = 384; len <= 385; len++) {
        memset(text, 'x', sizeof text);
        memcpy(text, "[data] rank 3: ", 15);
        text[len] = 0;
        for (int i = 0; i < 3; i++)
            EXPECT(s, text, len == 384 && i == 2);
    }
    dsq_shapes_free(s);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static unsigned next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 32);
}

/* Every line of the corpus' plain-text logs, learned, then 12 copies with random
 * digits in place of every digit: where the shapes answer a copy, the answer is
 * the recognizers'. */
static void test_corpus_digits_changed(void)
{
    const char *dir = getenv("DSQ_CORPUS");
    if (!dir) {
        fprintf(stderr, "test_corpus_digits_changed: DSQ_CORPUS not set, skipped\n");
        return;
    }
    DIR *d = opendir(dir);
    if (!d) { /* a clone without ../shared: the other cases still run */
        fprintf(stderr, "test_corpus_digits_changed: no corpus at %s, skipped\n", dir);
        return;
    }
    dsq_shapes *s = NULL;
    CHECK_INT(dsq_shapes_new(&s), 0);
    uint64_t hits = 0, wrong = 0, lines = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || (strcmp(e->d_name + nl - 4, ".log") != 0 && strcmp(e->d_name + nl - 4, ".txt") != 0))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        char text[8192];
        while (fgets(text, sizeof text, f)) {
            size_t n = strcspn(text, "\r\n");
            /* a pdsh host prefix ("gpu0856: ") is peeled as the scanner would */
            const char *start = text;
            size_t h = strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789-_.");
            if (h > 0 && h + 2 <= n && text[h] == ':' && text[h + 1] == ' ')
                start = text + h + 2, n -= h + 2;
            line_buf b = mk(start, n);
            lines++;
            for (int round = 0; round <= 12; round++) {
                if (round > 0)
                    for (size_t i = 0; i < n; i++)
                        if (b.p[i] >= '0' && b.p[i] <= '9' && next_rand() % 3 == 0)
                            b.p[i] = (char)('0' + next_rand() % 10);
                dsq_match got, want;
                dsq_scan_match_init(&got);
                dsq_scan_match_init(&want);
                dsq_scan_recognize(&want, b.p, b.n);
                if (dsq_shapes_apply(s, b.p, b.n, &got, NULL, 0)) {
                    hits++;
                    if (!dsq_shapes_same_match(&got, &want)) {
                        wrong++;
                        fprintf(stderr, "%s: shape answer differs for: %.*s\n", e->d_name,
                                (int)b.n, b.p);
                    }
                } else {
                    dsq_shapes_learn(s, b.p, b.n, &want);
                }
            }
            free(b.p);
        }
        fclose(f);
    }
    closedir(d);
    fprintf(stderr, "corpus: %llu lines, %llu answers from shapes\n", (unsigned long long)lines,
            (unsigned long long)hits);
    CHECK(lines > 500);
    CHECK(hits > 1000);
    CHECK_INT(wrong, 0);
    dsq_shapes_free(s);
}

/* Every byte of a learned line is compared, whatever the line's length (the
 * compare goes 32 or 16 bytes at a time, the last ones overlapping): a line of
 * 20 to 140 bytes with a value's digit changed for another digit is answered, and
 * with any other byte changed is not. */
static void test_every_byte_compared(void)
{
    for (size_t len = 20; len <= 140; len++) {
        dsq_shapes *s = NULL;
        CHECK_INT(dsq_shapes_new(&s), 0);
        char line[160], other[160];
        /* an HF loss dict (its values are sources) padded out with a quoted string,
           or when shorter, with the loss's fraction digits */
        const char *head = "{'loss': 3.1647, 'epoch': 0.02, 'k': '";
        size_t hn = strlen(head);
        if (len >= hn + 2) {
            memcpy(line, head, hn);
            for (size_t i = hn; i < len - 2; i++)
                line[i] = (char)('a' + i % 26);
            memcpy(line + len - 2, "'}", 2);
        } else {
            memcpy(line, "{'loss': 3.", 11);
            memset(line + 11, '1', len - 12);
            line[len - 1] = '}';
        }
        line[len] = 0;
        EXPECT(s, line, 0);
        EXPECT(s, line, 0);
        EXPECT(s, line, 1);
        memcpy(other, line, len + 1);
        other[11] = other[11] == '9' ? '1' : '9'; /* a digit of 3.1647 */
        EXPECT(s, other, 1);
        for (size_t i = 0; i < len; i++) {
            memcpy(other, line, len + 1);
            unsigned char c = (unsigned char)line[i];
            other[i] = c >= '0' && c <= '9' ? 'x' : c == '#' ? '@' : '#';
            int same;
            if (answer(s, other, &same) != 0) {
                fprintf(stderr, "length %zu, byte %zu changed: answered\n", len, i);
                test_failures++;
            }
            CHECK(same);
        }
        dsq_shapes_free(s);
    }
}

/* A handler is quiet (dsq_family_def.quiet: its call skipped for a shape's lines
 * while idle) for the lines it only lets pass, never for one it acts on. */
static void test_handlers_quiet_for_lines_they_pass(void)
{
    static const struct {
        const char *line;
        int quiet;
    } cases[] = {
        {"[2024-07-01 00:03:37,244] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | "
         "fwd_microstep: 9357.71 | bwd_microstep: 18715.43", 1},
        {"[2024-07-01 00:03:37,244] [INFO] [timer.py:260:stop] epoch=0/micro_step=8/"
         "global_step=1, RunningAvgSamplesPerSec=51.4628361589, CurrSamplesPerSec=47.52", 1},
        {"{'loss': 2.2059, 'grad_norm': 0.6049427643941, 'learning_rate': 2.0e-05, "
         "'epoch': 0.04}", 1},
        /* an attribute, a JSON block, a message on the next line, the launcher */
        {"[2024-07-20 21:30:05,394] [INFO] [logging.py:96:log_dist] [Rank 0] Creating "
         "torch.bfloat16 ZeRO stage 3 optimizer", 0},
        {"[2024-07-20 21:30:42,881] [INFO] [config.py:991:print] activation_checkpointing_config {",
         0},
        {"[2024-03-01 18:29:08,854] [INFO] [memory_profile_utils.py:28:get_nvidia_gpu_memory] ", 0},
        {"[2021-02-08 22:59:17,910] [INFO] [runner.py:355:main] cmd = /opt/conda/bin/python -u "
         "-m deepspeed.launcher.launch --master_port=29500 ./trainer.py", 0},
        {"***** Running training *****", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        line_buf b = mk(cases[i].line, strlen(cases[i].line));
        dsq_match m;
        dsq_scan_match_init(&m);
        dsq_scan_recognize(&m, b.p, b.n);
        int quiet = 0;
        for (size_t f = 0; f < dsq_nfamilies; f++)
            if (dsq_families[f].quiet && dsq_families[f].quiet(&m))
                quiet = 1;
        if (quiet != cases[i].quiet)
            fprintf(stderr, "case %zu: %s\n", i, cases[i].line);
        CHECK_INT(quiet, cases[i].quiet);
        free(b.p);
    }
}

TEST_MAIN({"test_every_byte_compared", test_every_byte_compared},
          {"test_handlers_quiet_for_lines_they_pass", test_handlers_quiet_for_lines_they_pass},
          {"test_same_shape_other_digits_replayed", test_same_shape_other_digits_replayed},
          {"test_other_bytes_not_replayed", test_other_bytes_not_replayed},
          {"test_shapes_refused", test_shapes_refused},
          {"test_prefix_spans_kept", test_prefix_spans_kept},
          {"test_changing_literals_given_up", test_changing_literals_given_up},
          {"test_shapes_sharing_a_key_both_kept", test_shapes_sharing_a_key_both_kept},
          {"test_long_lines_not_learned", test_long_lines_not_learned},
          {"test_next_shape_keeps_prefix_state", test_next_shape_keeps_prefix_state},
          {"test_corpus_digits_changed", test_corpus_digits_changed})
