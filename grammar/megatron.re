/* Megatron-LM / Megatron-DeepSpeed / NeMo training-loop lines (bare prints, no
 * logger header).
 *
 * training.py training_log():
 *    iteration       10/    1000 | consumed samples:          640 | elapsed time per
 *    iteration (ms): 1234.5 | learning rate: 1.000E-04 | global batch size:    64 |
 *    lm loss: 7.123456E+00 | loss scale: 65536.0 | grad norm: 2.345 | ... |
 * (megatron-core puts " [2024-04-06 03:02:12]" before "iteration"); event
 * megatron_iter with fields iteration, train_iters and every "name: value" pair,
 * named as printed. An event holds DSQ_EV_MAXF fields, which a long line (MoE,
 * throughput) can exceed, so losses, grad norm, learning rate and the iteration
 * time come first.
 *    validation loss at iteration 2400 | lm loss value: 9.0E+00 | lm loss PPL: 8.1E+03 |
 * event megatron_validation;
 *   [Rank 0] (after 10 iterations) memory (MB) | allocated: 1234.5 | max allocated: ...
 * event megatron_memory (unit MB from the header);
 *   micro_batch_size ................................ 4
 * (the arguments dump) a run attribute: label is the argument name, or the common
 * attribute name when there is one (micro_batch_size -> train_micro_batch_size_per_gpu,
 * global_batch_size -> train_batch_size, "fp16/bf16 ... True" -> dtype).
 * argonne-lcf's ezpz logger header "[2024-06-16 18:24:28][INFO][training:1634] - "
 * is taken as Megatron's too (its time and level), with the shapes above after it.
 * Megatron's bare prints while it sets up and builds its datasets (" > building
 * dataset index ...", "    reading sizes...", "document indices in [...)", ...)
 * are the family's lines with no event; a " > " message must be one of the known
 * ones, since other tools print "> " too. Its progress marks "[after megatron is
 * initialized] datetime: 2023-08-22 03:42:58" give their time.
 */
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "fam_pairs.h"
#include "grammar.h"
#include "num.h"

#define MAX_PAIRS 24

/* Which pairs an event keeps first when it cannot keep them all: 0 for a loss,
 * 1 for grad norm, learning rate or the iteration time, 2 for the rest. */
static int pair_rank(dsq_span n)
{
    /* the first four bytes of each wanted phrase as one word: a word compare at each
     * position, the rest of the phrase only when the word matches */
    static const struct { const char *w; size_t k; } first[] = {
        {"loss", 4}, {"grad norm", 9}, {"learning rate", 13}, {"elapsed time", 12}};
    uint32_t w[4];
    for (size_t i = 0; i < 4; i++)
        memcpy(&w[i], first[i].w, 4);
    int best = 2;
    for (size_t j = 0; j + 4 <= n.n; j++) {
        uint32_t x;
        memcpy(&x, n.p + j, 4);
        if (x != w[0] && x != w[1] && x != w[2] && x != w[3])
            continue;
        for (size_t i = 0; i < sizeof first / sizeof *first; i++)
            if (x == w[i] && j + first[i].k <= n.n &&
                memcmp(n.p + j + 4, first[i].w + 4, first[i].k - 4) == 0) {
                if (i == 0)
                    return 0;
                best = 1;
            }
    }
    return best;
}

/* pair_rank of names seen before: Megatron prints the same names on every
 * iteration line. Slots by length and three bytes; a hit compares the whole name. */
#define RANK_SLOTS 64
#define RANK_NAME_MAX 48
typedef struct rank_slot {
    char s[RANK_NAME_MAX];
    unsigned char n, rank;
} rank_slot;
static _Thread_local rank_slot rank_memo[RANK_SLOTS];

static int pair_rank_memo(dsq_span n)
{
    if (n.n == 0 || n.n > RANK_NAME_MAX)
        return pair_rank(n);
    unsigned h = (unsigned)n.n * 31u + (unsigned char)n.p[0] * 7u +
                 (unsigned char)n.p[n.n / 2] * 3u + (unsigned char)n.p[n.n - 1];
    rank_slot *e = &rank_memo[h & (RANK_SLOTS - 1)];
    if (e->n == n.n && dsq_same_bytes(e->s, n.p, n.n))
        return e->rank;
    int r = pair_rank(n);
    memcpy(e->s, n.p, n.n);
    e->n = (unsigned char)n.n;
    e->rank = (unsigned char)r;
    return r;
}

/* Appends the pipe-separated pairs of p..end, most wanted first. */
static void add_pairs(dsq_match *m, const char *p, const char *end, int unit)
{
    dsq_pair pr[MAX_PAIRS];
    unsigned char rank[MAX_PAIRS];
    int n = dsq_pairs_pipe(p, end, pr, MAX_PAIRS);
    for (int i = 0; i < n; i++)
        rank[i] = (unsigned char)pair_rank_memo(pr[i].name);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n; i++) {
            if (rank[i] != pass)
                continue;
            int u = dsq_pairs_name_unit(pr[i].name);
            size_t before = (size_t)m->nf;
            dsq_match_field(m, pr[i].name.p, pr[i].name.n, pr[i].val, end);
            if ((size_t)m->nf > before && m->f[m->nf - 1].unit == DSQ_U_NONE)
                m->f[m->nf - 1].unit = (uint8_t)(u != DSQ_U_NONE ? u : unit);
        }
}

static int is_word(const char *p, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(p, w, n) == 0;
}

/* An argument of the dump: a common attribute name when one applies. */
static void argument(dsq_match *m, const char *k0, const char *k1, const char *v0,
                     const char *end)
{
    size_t kn = (size_t)(k1 - k0);
    const char *v1 = end;
    while (v1 > v0 && (v1[-1] == ' ' || v1[-1] == '\t'))
        v1--;
    size_t vn = (size_t)(v1 - v0);
    m->ev = DSQ_EV_ATTR;
    m->label = (dsq_span){k0, kn};
    m->text = (dsq_span){v0, vn};
    if (is_word(k0, kn, "micro_batch_size"))
        m->label = (dsq_span){"train_micro_batch_size_per_gpu", 30};
    else if (is_word(k0, kn, "global_batch_size"))
        m->label = (dsq_span){"train_batch_size", 16};
    else if ((is_word(k0, kn, "fp16") || is_word(k0, kn, "bf16")) && is_word(v0, vn, "True")) {
        m->label = (dsq_span){"dtype", 5};
        m->text = (dsq_span){k0, kn};
        return;
    }
    double x;
    const char *stop = NULL;
    if (dsq_num_parse(v0, v1, &x, &stop) == 0 && stop == v1)
        dsq_match_value(m, "value", 5, x, DSQ_U_NONE);
}

/* The training-loop shapes, on a bare line or after an ezpz header. Returns 1
 * when the text is one of them. */
static int megatron_body(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *ts, *it, *tot, *r0, *k0, *k1, *v0;
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

        d     = [0-9];
        sp    = " "+;
        stamp = "[" d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} "]";

        " "* (@ts stamp sp)? "iteration" sp @it d+ "/" " "* @tot d+ " "* "|" {
            m->ev = DSQ_EV_MEGATRON_ITER;
            dsq_match_field(m, "iteration", 9, (const char *)it, end);
            add_pairs(m, (const char *)cur, end, DSQ_U_NONE);
            dsq_match_field(m, "train_iters", 11, (const char *)tot, end);
            goto found;
        }
        " "* (@ts stamp sp)? "validation loss at iteration" sp @it d+ [^|\n\r]* "|" {
            ts = NULL;
            m->ev = DSQ_EV_MEGATRON_VALIDATION;
            dsq_match_field(m, "iteration", 9, (const char *)it, end);
            add_pairs(m, (const char *)cur, end, DSQ_U_NONE);
            goto found;
        }
        "[Rank " @r0 d+ "] (after " @it d+ " iterations) memory (MB)" " "* "|" {
            ts = NULL;
            m->ev = DSQ_EV_MEGATRON_MEMORY;
            m->rank = (int)strtol((const char *)r0, NULL, 10);
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            dsq_match_field(m, "iteration", 9, (const char *)it, end);
            add_pairs(m, (const char *)cur, end, DSQ_U_MB);
            goto found;
        }
        "  " @k0 [a-z_] [a-z0-9_]* @k1 " " "."{2,} " " @v0 [^\n\r]* {
            ts = NULL;
            argument(m, (const char *)k0, (const char *)k1, (const char *)v0, end);
            goto found;
        }
        "[" [a-z][a-z ,]* "] datetime: " @ts d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} {
            ts = ts - 1; /* "[after megatron is initialized] datetime: 2023-08-22 03:42:58" */
            goto found;
        }
        " "* "> " ("building dataset index" | "finished creating indexed dataset" |
                   "dataset split:" | "datasets target sizes" | "building train, validation, and test datasets" |
                   "loading doc-idx mapping" | "loading sample-idx mapping" |
                   "loading shuffle-idx mapping" | "loaded indexed file" |
                   "total number of samples:" | "total number of epochs:" |
                   "elapsed time to build and save" | "number of parameters on" |
                   "setting random seeds" | "initializing torch distributed" |
                   "initialized tensor model parallel" | "compiling dataset index builder" |
                   "compiling and loading fused kernels" | "building GPT2BPETokenizer" |
                   "padded vocab") {
            ts = NULL; /* the data pipeline's and setup's bare prints: no event */
            goto found;
        }
        " "* ("reading sizes..." | "reading pointers..." | "reading document index..." |
              "creating numpy buffer of mmap..." | "creating memory view of numpy buffer..." |
              "number of documents: " | "Single data path provided for train, valid & test" |
              "document indices in [" | ">>> done with dataset index builder") {
            ts = NULL;
            goto found;
        }
        * { return 0; }
    */
found:
    if (ts) {
        m->t_us = dsq_time_stamp_s((const char *)ts + 1);
        dsq_match_src(m, DSQ_SRC_STAMP_S, 0, (const char *)ts + 1, (const char *)ts + 20);
    }
    return 1;
}

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

/* argonne-lcf Megatron-DeepSpeed's ezpz logger: "[2024-06-16 18:24:28][INFO][training:1634] - ". */
static const char *ezpz_header(const char *line, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *ts, *lv;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        " "* "[" @ts d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} "]["
        @lv ("DEBUG" | "INFO" | "WARNING" | "ERROR" | "CRITICAL") "]["
        [A-Za-z0-9_.]+ ":" d+ "] - " {
            const char *t = (const char *)ts;
            m->level = level_word(lv);
            m->t_us = dsq_time_from_civil(dsq_time_digits(t, 4), dsq_time_digits(t + 5, 2),
                                          dsq_time_digits(t + 8, 2), dsq_time_digits(t + 11, 2),
                                          dsq_time_digits(t + 14, 2), dsq_time_digits(t + 17, 2), 0);
            return (const char *)cur;
        }
        * { return NULL; }
    */
}

int dsq_gram_megatron(const char *line, size_t len, dsq_match *m)
{
    /* every shape starts with one of these ('i' and 'v' after a prefix layer took
     * the space Megatron prints first: "[default7]: iteration ...") */
    if (line[0] != ' ' && line[0] != '[' && line[0] != 'i' && line[0] != 'v' &&
        line[0] != '>' && line[0] != 'S' && line[0] != 'r' && line[0] != 'c' && line[0] != 'n' &&
        line[0] != 'd')
        return 0;
    const char *end = line + len, *body = ezpz_header(line, m);
    if (body) {
        int64_t t = m->t_us;
        megatron_body(body, (size_t)(end - body), m);
        if (m->t_us == DSQ_TIME_NONE)
            m->t_us = t;
    } else if (!megatron_body(line, len, m)) {
        return 0;
    }
    m->family = DSQ_FAM_MEGATRON;
    m->body.p = body ? body : line;
    m->body.n = (size_t)(end - m->body.p);
    return 1;
}
