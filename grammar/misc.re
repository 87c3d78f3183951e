/* Training-loop prints of smaller projects, one family ("misc").
 *
 * DeepSpeed-Chat step 3 (training/step3_rlhf_finetuning/main.py), bare prints:
 *   epoch: 0|step: 0|ppo_ep: 1|act_loss: 0.2099|cri_loss: 0.1204|unsuper_loss: 0.0
 *   Epoch: 0 | Step: 8 | PPO Epoch: 1 | Actor Loss: 0.0108 | Critic Loss: 0.02 | ...
 * event dschat_ppo, one field per "name: value" segment, named as printed;
 *   average reward score: 0.19
 *   Average reward score: 0.19 | EMA reward score: 0.17
 * event dschat_reward (fields "average reward score", ...);
 * and DeepSpeed's hybrid engine (deepspeed/runtime/hybrid_engine.py), per step:
 *   |E2E latency=7.99s |Gather latency=0.00s (0.00%) |Generate time=5.26s (65.81%)
 *   |Training time=2.52s (31.46%) |Others=0.21 (2.61%)|CurSamplesPerSec=8.01 |...
 * event dschat_timing, one field per "name=value" (units as printed: "Others" has
 * none; the parenthesized shares are dropped).
 *
 * torchtitan's logger: "[titan] 2025-07-21 15:57:42,774 - root - INFO - message";
 * the metrics line (colour codes, on by default, are skipped)
 *   step:  3  loss:  4.9925  grad_norm:  1.2  memory: 20.01GiB(21.06%)  tps: 1,234
 *   tflops: 56.7  mfu: 18.2%
 * is event titan_step with every pair as printed (memory in GiB, mfu in %); other
 * [titan] lines are the family's with no event.
 *
 * MetricLogger (DeiT / MAE / LLaMA2-Accessory utils/misc.py), bare prints:
 *   Epoch: [2]  [1480/1504]  eta: 0:00:11  lr: 0.000005  closs: 0.8662 (0.8558)
 *   time: 0.4123  data: 0.0001  max mem: 12345
 * event metric_logger: epoch, iter, then each pair's first number (the window
 * average in parentheses and the non-numeric eta are dropped); "max mem" is MB.
 * "Epoch: [2] Total time: 1:52:15" and "Averaged stats: ..." are the family's with
 * no event. LLaMA2-Accessory stamps each print with the time of day only,
 * "[07:15:39.400163] ": with no date it cannot make a time (the line keeps the
 * time inherited from the stream), so it is only skipped.
 *
 * Other ecosystems' headers (the family's lines, no event):
 *   2021-03-01 10:00:00.000000: W tensorflow/core/.../bfc_allocator.cc:431] msg
 *     TensorFlow (level letter, microseconds; its allocator's "ran out of memory
 *     trying to allocate" is a warning TF retries, not a CUDA OOM)
 *   2021-09-30 01:05:28,554 INFO [asr_datamodule.py:164] (0/6) msg
 *     icefall / k2 ("(rank/world)" gives the rank)
 *   | distributed init (rank 4): tcp://...   | initialized host H as rank 4
 *     fairseq's legacy launcher (rank; the second names the rank's host)
 *   #  Rank  0 Group  0 Pid 1789224 on H20-GPU-05 device  0 [0000:18:00] NVIDIA ...
 *     nccl-tests' device table (that rank and its host), and its "# nThread",
 *     "# Using devices", "#  Avg bus bandwidth" lines
 *   normalizer.cc(51) LOG(INFO) msg    sentencepiece's logging
 *   INFO 04-20 04:07:45 [__init__.py:239] msg    vLLM (year-less stamp)
 *   INFO:torchtune.utils._logging:msg    python's default format, for the loggers
 *     no other family claims (HF's and torch.distributed's are theirs)
 *   Memory access fault by GPU node-4 (...)   ROCm: a failure (cuda_error)
 *   ***** Evaluating perplexity, Epoch 2/2 *****, 'step':1000, 'ppl': 24.3, ...,
 *   Beginning of Epoch 1/1, Total Micro Batches 1840, chosen_last_scores (...) : ...
 *     DeepSpeedExamples' (DeepSpeed-Chat's) epoch and evaluation prints
 */
#include <string.h>

#include "event.h"
#include "fam_pairs.h"
#include "grammar.h"
#include "num.h"

#define MAX_PAIRS 16

static int level_word(const unsigned char *p)
{
    switch (p[0]) {
    case 'D': return DSQ_LV_DEBUG;
    case 'I': return DSQ_LV_INFO;
    case 'W': return DSQ_LV_WARNING;
    case 'E': return DSQ_LV_ERROR;
    case 'C': return DSQ_LV_CRITICAL;
    default: return DSQ_LV_NONE;
    }
}

/* Length of an ANSI colour sequence "\x1b[...m" at p (0 if none). */
static size_t ansi_len(const char *p, const char *end)
{
    if (p + 1 >= end || p[0] != '\x1b' || p[1] != '[')
        return 0;
    const char *q = p + 2;
    while (q < end && ((*q >= '0' && *q <= '9') || *q == ';'))
        q++;
    return q < end && *q == 'm' ? (size_t)(q + 1 - p) : 0;
}

/* Skips blanks and colour codes. */
static const char *skip_gap(const char *p, const char *end)
{
    for (;;) {
        if (p < end && (*p == ' ' || *p == '\t')) {
            p++;
            continue;
        }
        size_t k = ansi_len(p, end);
        if (!k)
            return p;
        p += k;
    }
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '/' || c == '-';
}

/* Blank-separated "name: value" pairs (MetricLogger, torchtitan). A name is words
 * joined by single blanks ("max mem"); a value is the token after the colon and
 * counts only when it is a number with an optional unit, followed by the token's
 * end or '(' ("20.01GiB(21.06%)"); "eta: 0:00:11" is skipped, and so is a
 * "(average)" token after a value. mb_name names the field given MB (or NULL). */
static void blank_pairs(dsq_match *m, const char *p, const char *end, const char *mb_name)
{
    while (p < end) {
        p = skip_gap(p, end);
        if (p >= end)
            break;
        if (*p == '(') { /* a window average: "(0.8558)" */
            while (p < end && *p != ' ' && *p != '\t' && !ansi_len(p, end))
                p++;
            continue;
        }
        const char *n0 = p, *n1 = NULL;
        while (p < end) {
            if (name_char(*p)) {
                p++;
            } else if (*p == ' ' && p > n0 && p + 1 < end && name_char(p[1]) && name_char(p[-1])) {
                p++; /* a blank inside a name */
            } else {
                break;
            }
        }
        if (p < end && *p == ':' && p > n0)
            n1 = p++;
        if (!n1) { /* not a pair: skip the token */
            while (p < end && *p != ' ' && *p != '\t' && !ansi_len(p, end))
                p++;
            continue;
        }
        const char *v = skip_gap(p, end), *t = v;
        while (t < end && *t != ' ' && *t != '\t' && !ansi_len(t, end))
            t++;
        p = t;
        double x;
        const char *stop = NULL;
        if (dsq_num_parse(v, t, &x, &stop) != 0)
            continue;
        while (stop < t && ((*stop >= 'A' && *stop <= 'Z') || (*stop >= 'a' && *stop <= 'z') ||
                            *stop == '%'))
            stop++;
        if (stop != t && *stop != '(')
            continue;
        size_t nn = (size_t)(n1 - n0);
        int before = m->nf;
        dsq_match_field(m, n0, nn, v, t);
        if (mb_name && m->nf > before && m->f[m->nf - 1].unit == DSQ_U_NONE &&
            strlen(mb_name) == nn && memcmp(n0, mb_name, nn) == 0)
            m->f[m->nf - 1].unit = DSQ_U_MB;
    }
}

/* "name: value|name: value" segments (DeepSpeed-Chat), all as printed. */
static void pipe_pairs(dsq_match *m, const char *p, const char *end, int ev)
{
    dsq_pair pr[MAX_PAIRS];
    int n = dsq_pairs_pipe(p, end, pr, MAX_PAIRS);
    for (int i = 0; i < n; i++)
        dsq_match_field(m, pr[i].name.p, pr[i].name.n, pr[i].val, end);
    if (m->nf)
        m->ev = ev;
}

/* "|name=value |name=value (share%)|..." (the hybrid engine's step timing). */
static void eq_pairs(dsq_match *m, const char *p, const char *end)
{
    while (p < end) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        const char *e = bar ? bar : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (eq) {
            const char *n0 = p, *n1 = eq;
            while (n0 < n1 && (*n0 == ' ' || *n0 == '\t'))
                n0++;
            while (n1 > n0 && (n1[-1] == ' ' || n1[-1] == '\t'))
                n1--;
            if (n1 > n0)
                dsq_match_field(m, n0, (size_t)(n1 - n0), eq + 1, e);
        }
        p = bar ? bar + 1 : end;
    }
    if (m->nf)
        m->ev = DSQ_EV_DSCHAT_TIMING;
}

/* A torchtitan message: the metrics line, or nothing to emit. */
static void titan_body(dsq_match *m, const char *p, const char *end)
{
    p = skip_gap(p, end);
    if (end - p < 5 || memcmp(p, "step:", 5) != 0)
        return;
    blank_pairs(m, p, end, NULL);
    if (m->nf)
        m->ev = DSQ_EV_TITAN_STEP;
}

static int level_letter(unsigned char c)
{
    switch (c) {
    case 'D': return DSQ_LV_DEBUG;
    case 'I': return DSQ_LV_INFO;
    case 'W': return DSQ_LV_WARNING;
    case 'E': return DSQ_LV_ERROR;
    case 'C': case 'F': return DSQ_LV_CRITICAL;
    default: return DSQ_LV_NONE;
    }
}

static int small_int(const unsigned char *p)
{
    int v = 0;
    for (int n = 0; n < 7 && *p >= '0' && *p <= '9'; p++, n++)
        v = v * 10 + (*p - '0');
    return v;
}

/* "YYYY-MM-DD HH:MM:SS" at t, with us microseconds. */
static int64_t iso_us(const unsigned char *t, int us)
{
    const char *s = (const char *)t;
    return dsq_time_from_civil(dsq_time_digits(s, 4), dsq_time_digits(s + 5, 2),
                               dsq_time_digits(s + 8, 2), dsq_time_digits(s + 11, 2),
                               dsq_time_digits(s + 14, 2), dsq_time_digits(s + 17, 2), us);
}

/* Headers of other ecosystems' loggers and launchers (see the top of the file). */
static int misc_headers(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *ts, *lv, *f0, *f1, *r0, *h0, *h1, *us;
    const char *end = line + len;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        d    = [0-9];
        date = d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2};
        lw   = "DEBUG" | "INFO" | "WARNING" | "ERROR" | "CRITICAL";

        @ts date "." @us d{6} ": " @lv [DIWEF] " " @f0 [^ \]\n\r]+ ":" d+ @f1 "] " {
            m->level = level_letter(*lv);
            m->t_us = iso_us(ts, small_int(us));
            m->func = (dsq_span){(const char *)f0, (size_t)(f1 - f0)};
            goto header;
        }
        @ts date "," @us d{3} " " @lv lw " [" @f0 [^ \]\n\r]+ ":" d+ @f1 "] " {
            m->level = level_letter(*lv);
            m->t_us = iso_us(ts, small_int(us) * 1000);
            m->func = (dsq_span){(const char *)f0, (size_t)(f1 - f0)};
            if (*cur == '(') { /* icefall's "(rank/world) " */
                const unsigned char *q = cur + 1, *r = q;
                while (*q >= '0' && *q <= '9')
                    q++;
                if (q > r && *q == '/') {
                    const unsigned char *w = ++q;
                    while (*q >= '0' && *q <= '9')
                        q++;
                    if (q > w && q[0] == ')' && q[1] == ' ') {
                        m->rank = small_int(r);
                        dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
                        cur = q + 2;
                    }
                }
            }
            goto header;
        }
        @lv lw " " @ts d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} " [" @f0 [^ \]\n\r]+ ":" d+ @f1 "] " {
            const char *t = (const char *)ts; /* vLLM: "INFO 04-20 04:07:45 [file.py:239] " */
            m->level = level_letter(*lv);
            m->civil = (dsq_civil){0, dsq_time_digits(t, 2), dsq_time_digits(t + 3, 2),
                                   dsq_time_digits(t + 6, 2), dsq_time_digits(t + 9, 2),
                                   dsq_time_digits(t + 12, 2), 0};
            m->func = (dsq_span){(const char *)f0, (size_t)(f1 - f0)};
            goto header;
        }
        @lv lw ":" [A-Za-z_] [A-Za-z0-9_.]* ":" {
            m->level = level_letter(*lv); /* python's default format, other loggers */
            goto header;
        }
        "Memory access fault by GPU node-" d+ {
            m->level = DSQ_LV_ERROR; /* ROCm's runtime, before it aborts the process */
            m->ev = DSQ_EV_FAILURE;
            m->label = (dsq_span){"cuda_error", 10};
            m->text = dsq_trim(line, end);
            goto found;
        }
        "| distributed init (rank " @r0 d{1,6} "): " {
            m->level = DSQ_LV_INFO;
            m->rank = small_int(r0);
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            goto found;
        }
        "| initialized host " {
            static const char as[] = " as rank ";
            const char *q = end - (sizeof as - 1);
            while (q > (const char *)cur && memcmp(q, as, sizeof as - 1) != 0)
                q--;
            if (q <= (const char *)cur || q[sizeof as - 1] < '0' || q[sizeof as - 1] > '9')
                return 0;
            m->level = DSQ_LV_INFO;
            m->rank = small_int((const unsigned char *)q + sizeof as - 1);
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            m->host = dsq_trim((const char *)cur, q); /* the machine's name */
            goto found;
        }
        "#  Rank " " "* @r0 d{1,6} " Group " " "* d+ " Pid " " "* d+ " on " @h0 [^ \n\r]+ @h1 " device " {
            m->rank = small_int(r0); /* nccl-tests: the rank, its host and device */
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            m->host = (dsq_span){(const char *)h0, (size_t)(h1 - h0)};
            goto found;
        }
        "# nThread " d+ " nGpus " | "# Using devices" | "#  Avg bus bandwidth" | "# Out of bounds values" {
            goto found;
        }
        [a-z_]+ ".cc(" d+ ") LOG(" @lv [A-Z]+ ") " {
            m->level = level_letter(*lv); /* sentencepiece */
            goto found;
        }
        "***** Evaluating " [a-z]+ ", Epoch " d+ "/" d+ " *****" | "'step':" d+ ", 'ppl': "
        | "Beginning of Epoch " d+ "/" d+ ", Total " | "Before cleaning, Epoch at " d+ " with "
        | "chosen_last_scores (higher is better) : " {
            goto found;
        }
        * { return 0; }
    */
found: /* a bare print: the line is the message */
    cur = (const unsigned char *)line + (line[0] == '|' && line[1] == ' ' ? 2 : 0);
header:
    m->family = DSQ_FAM_MISC;
    m->body.p = (const char *)cur;
    m->body.n = (size_t)(end - (const char *)cur);
    return 1;
}

int dsq_gram_misc(const char *line, size_t len, dsq_match *m)
{
    switch (line[0]) { /* every shape starts with one of these */
    case '[': case 'e': case 'a': case 'A': break;
    case '|': case 'E':
        if (misc_headers(line, len, m))
            return 1;
        break;
    case '1': case '2': case '#': case '*': case '\'': case 'n': case 's': case 't': case 'u':
    case 'I': case 'W': case 'D': case 'C': case 'M': case 'B': case 'c':
        return misc_headers(line, len, m);
    default: return 0;
    }
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *ts, *lv, *e0, *i0;
    const char *end = line + len, *start = line;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
stamped:
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        sp = " "+;

        "[titan] " @ts d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} "," d{3}
        " - " [^ \n\r]+ " - " @lv lw " - " {
            const char *t = (const char *)ts;
            m->family = DSQ_FAM_MISC;
            m->level = level_word(lv);
            m->t_us = dsq_time_from_civil(dsq_time_digits(t, 4), dsq_time_digits(t + 5, 2),
                                          dsq_time_digits(t + 8, 2), dsq_time_digits(t + 11, 2),
                                          dsq_time_digits(t + 14, 2), dsq_time_digits(t + 17, 2),
                                          dsq_time_digits(t + 20, 3) * 1000);
            m->body.p = (const char *)cur;
            m->body.n = (size_t)(end - (const char *)cur);
            titan_body(m, m->body.p, end);
            return 1;
        }
        "[" d{2} ":" d{2} ":" d{2} "." d{6} "] " {
            if (start != line) /* one stamp only */
                return 0;
            start = (const char *)cur;
            goto stamped;
        }
        "Epoch: [" @e0 d+ "]" sp "[" " "* @i0 d+ "/" " "* d+ "]" {
            m->ev = DSQ_EV_METRIC_LOGGER;
            dsq_match_field(m, "epoch", 5, (const char *)e0, end);
            dsq_match_field(m, "iter", 4, (const char *)i0, end);
            blank_pairs(m, (const char *)cur, end, "max mem");
            goto found;
        }
        "Epoch: [" d+ "]" sp "Total time: " | "Averaged stats:" { goto found; }
        ("epoch: " d+ "|step: " d+ "|ppo_ep: " | "Epoch: " d+ " | Step: " d+ " | PPO Epoch: ") {
            pipe_pairs(m, start, end, DSQ_EV_DSCHAT_PPO);
            goto found;
        }
        ("average" | "Average") " reward score: " {
            pipe_pairs(m, start, end, DSQ_EV_DSCHAT_REWARD);
            goto found;
        }
        "|E2E latency=" {
            eq_pairs(m, start, end);
            goto found;
        }
        * { return 0; }
    */
found:
    m->family = DSQ_FAM_MISC;
    m->body.p = start;
    m->body.n = (size_t)(end - start);
    return 1;
}
