/* DeepSpeed logger lines.
 *
 * Header (deepspeed/utils/logging.py):
 *   [2024-07-20 21:30:05,202] [INFO] [logging.py:96:log_dist] [Rank 0] message
 * and, for lines from see_memory_usage (deepspeed/runtime/utils.py), the three
 * lines of a memory report, which the scanner joins into one event:
 *   ... [utils.py:800:see_memory_usage] Stage 3 initialize beginning
 *   ... [utils.py:801:see_memory_usage] MA 1.75 GB Max_MA 6.54 GB CA 4.14 GB Max_CA 7 GB
 *   ... [utils.py:808:see_memory_usage] CPU Virtual Memory: used = 164.03 GB, percent = 16.3%
 * Spacing varies by version (runs of spaces, a trailing space) and pastes collapse
 * it, so separators are "one or more blanks". Numbers are parsed as printed and
 * keep their printed unit ("GB", although DeepSpeed divides by 1024^3).
 *
 * Other messages become single-line events (ds_message): wall-clock timers
 * "time (ms) | name: v | ..." (ds_timer, unit ms), timer.py throughput in its new
 * "epoch=E/micro_step=M/global_step=G, ..." and old "E/M, ..." forms
 * (ds_throughput), "step=10, skipped=0, lr=[...]" (ds_step), the loss scaler's
 * overflow and scale messages (ds_overflow, ds_loss_scale), allocator cache
 * flushes (ds_cache_flush), the launcher's "exits with return code = N" (failure
 * launcher_exit), and run attributes (deepspeed_version, zero_stage, bucket sizes,
 * optimizer, num_elems, nodes, world_size, the engine config dump's keys). What
 * spans lines or carries a second attribute is src/fam_deepspeed.c's handler.
 * dsq_gram_deepspeed_bare, registered after every header family, takes
 * DeepSpeed's bare prints (op load times, CPU Adam config, memory estimates).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "fam_deepspeed.h"
#include "fam_pairs.h"
#include "grammar.h"
#include "num.h"

/* Parses the number at p and the unit word that follows it (after blanks). */
static void take_value(dsq_match *m, const unsigned char *p, const char *end)
{
    const char *stop = NULL;
    double v = 0;
    if (m->nv >= DSQ_MATCH_MAXV || dsq_num_parse((const char *)p, end, &v, &stop) != 0)
        return;
    const char *num_end = stop;
    while (stop < end && (*stop == ' ' || *stop == '\t'))
        stop++;
    const char *u = stop;
    while (stop < end && ((*stop >= 'A' && *stop <= 'Z') || (*stop >= 'a' && *stop <= 'z') ||
                          *stop == '%'))
        stop++;
    dsq_match_src(m, DSQ_SRC_V, m->nv, (const char *)p, num_end);
    m->v[m->nv] = v;
    m->unit[m->nv] = (uint8_t)dsq_unit_parse(u, (size_t)(stop - u));
    m->nv++;
}

/* Classifies the message of a see_memory_usage line. */
static int memory_body(const char *body, const char *end, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)body, *mar;
    const unsigned char *a, *b, *c, *d, *u, *pc;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        ws   = [ \t]+;
        num  = "-"? [0-9]+ ("." [0-9]*)?;
        unit = [A-Za-z]+;

        "MA" ws @a num ws unit ws "Max_MA" ws @b num ws unit ws
        "CA" ws @c num ws unit ws "Max_CA" ws @d num ws unit {
            m->kind = DSQ_MK_DS_MEM_MA;
            take_value(m, a, end);
            take_value(m, b, end);
            take_value(m, c, end);
            take_value(m, d, end);
            return 1;
        }
        "CPU Virtual Memory:" ws "used" ws? "=" ws? @u num ws? unit "," ws
        "percent" ws? "=" ws? @pc num "%" {
            m->kind = DSQ_MK_DS_MEM_CPU;
            take_value(m, u, end);
            take_value(m, pc, end);
            return 1;
        }
        * {
            m->kind = DSQ_MK_DS_MEM_LABEL;
            return 1;
        }
    */
}

/* "name=value" fields separated by ',', '/' and blanks (timer.py throughput,
 * log_dist "step=10, skipped=0, lr=[1e-05], mom=[...]"): a value may open with
 * one '[' (its first element is taken); values that are not numbers are skipped. */
enum { KV_NAME = 1, KV_SEP = 2, KV_END = 4 };

/* Byte classes of kv_fields: a name byte (a letter or '_'), a separator before a
 * name (' ', ',', '/'), the end of a pair (',', '/'). One load per byte. */
static const unsigned char kv_class[256] = {
    [' '] = KV_SEP, [','] = KV_SEP | KV_END, ['/'] = KV_SEP | KV_END, ['_'] = KV_NAME,
#define KV_LETTERS(c) [c] = KV_NAME, [c + 32] = KV_NAME
    KV_LETTERS('A'), KV_LETTERS('B'), KV_LETTERS('C'), KV_LETTERS('D'), KV_LETTERS('E'),
    KV_LETTERS('F'), KV_LETTERS('G'), KV_LETTERS('H'), KV_LETTERS('I'), KV_LETTERS('J'),
    KV_LETTERS('K'), KV_LETTERS('L'), KV_LETTERS('M'), KV_LETTERS('N'), KV_LETTERS('O'),
    KV_LETTERS('P'), KV_LETTERS('Q'), KV_LETTERS('R'), KV_LETTERS('S'), KV_LETTERS('T'),
    KV_LETTERS('U'), KV_LETTERS('V'), KV_LETTERS('W'), KV_LETTERS('X'), KV_LETTERS('Y'),
    KV_LETTERS('Z'),
#undef KV_LETTERS
};

static int kv_is(const char *p, int cls) { return kv_class[(unsigned char)*p] & cls; }

static void kv_fields(dsq_match *m, const char *p, const char *end)
{
    while (p < end) {
        while (p < end && kv_is(p, KV_SEP))
            p++;
        const char *n0 = p;
        while (p < end && kv_is(p, KV_NAME))
            p++;
        if (p < end && *p == '=' && p > n0) {
            const char *v = p + 1 + (p + 1 < end && p[1] == '[');
            p = dsq_match_field(m, n0, (size_t)(p - n0), v, end);
        }
        while (p < end && !kv_is(p, KV_END))
            p++;
    }
}

/* The parts a timer prints in parentheses after its value (the MoE breakdown,
 * "fwd: 55.10 (fwd_moe: 12.30, 1st_a2a: 3.20, top_k: 1.05)"): fields in ms. */
static void timer_parts(dsq_match *m, const char *p, const char *end)
{
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p != '(')
        return;
    const char *close = memchr(p, ')', (size_t)(end - p));
    if (!close)
        return;
    p++;
    while (p < close) {
        const char *e = memchr(p, ',', (size_t)(close - p));
        e = e ? e : close;
        const char *colon = memchr(p, ':', (size_t)(e - p));
        if (colon) {
            dsq_span name = dsq_trim(p, colon);
            const char *v = colon + 1;
            while (v < e && *v == ' ')
                v++;
            int before = m->nf;
            if (name.n)
                dsq_match_field(m, name.p, name.n, v, e);
            if (m->nf > before)
                m->f[m->nf - 1].unit = DSQ_U_MS;
        }
        p = e + 1;
    }
}

/* The number after the first occurrence of what in p..end, as field name. */
static void field_after(dsq_match *m, const char *p, const char *end, const char *what,
                        const char *name)
{
    size_t k = strlen(what);
    for (; p + k <= end; p++)
        if (*p == *what && memcmp(p, what, k) == 0) {
            dsq_match_field(m, name, strlen(name), p + k, end);
            return;
        }
}

/* Fields of a loss-scaler overflow message, named as printed. */
static void overflow_fields(dsq_match *m, const char *p, const char *end)
{
    m->ev = DSQ_EV_DS_OVERFLOW;
    field_after(m, p, end, "Attempted loss scale: ", "Attempted loss scale");
    field_after(m, p, end, "reducing to ", "reducing to");
    field_after(m, p, end, "but hysteresis is ", "hysteresis");
    field_after(m, p, end, "Reducing hysteresis to ", "Reducing hysteresis to");
}

static void attr_span(dsq_match *m, dsq_span label, const char *v0, const char *v1)
{
    m->ev = DSQ_EV_ATTR;
    m->label = label;
    m->text = (dsq_span){v0, (size_t)(v1 - v0)};
    double x;
    const char *stop = NULL;
    if (dsq_num_parse(v0, v1, &x, &stop) == 0 && stop == v1)
        dsq_match_value(m, "value", 5, x, DSQ_U_NONE);
}

static void attr(dsq_match *m, const char *label, const char *v0, const char *v1)
{
    attr_span(m, (dsq_span){label, strlen(label)}, v0, v1);
}

static const char *trim_end(const char *p, const char *end)
{
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return end;
}

/* The common attribute name of an engine config key, or the key itself. */
static dsq_span config_label(const char *k, size_t n)
{
    static const char *const same[] = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                       "gradient_accumulation_steps"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        if (strlen(same[i]) == n && memcmp(k, same[i], n) == 0)
            return (dsq_span){same[i], n};
    if (n == 23 && memcmp(k, "zero_optimization_stage", 23) == 0)
        return (dsq_span){"zero_stage", 10};
    if (n == 14 && memcmp(k, "optimizer_name", 14) == 0)
        return (dsq_span){"optimizer", 9};
    return (dsq_span){k, n};
}

/* Whether the logger function is the engine config printer. */
static int config_printer(const dsq_match *m)
{
    return m->func.n == 5 && memcmp(m->func.p, "print", 5) == 0;
}

/* launch.py sigkill_handler: "['python', '-u', ...] exits with return code = 1". */
static int launcher_exit(dsq_match *m, const char *body, const char *end)
{
    static const char what[] = " exits with return code = ";
    const size_t k = sizeof what - 1;
    if (m->func.n && !(m->func.n == 15 && memcmp(m->func.p, "sigkill_handler", 15) == 0))
        return 0;
    for (const char *p = body; p + k <= end; p++)
        if (*p == ' ' && memcmp(p, what, k) == 0) {
            m->ev = DSQ_EV_FAILURE;
            m->label = (dsq_span){"launcher_exit", 13};
            m->text = (dsq_span){body, (size_t)(trim_end(body, end) - body)};
            dsq_match_field(m, "return code", 11, p + k, end);
            return 1;
        }
    return 0;
}

/* Classifies the message of a DeepSpeed logger line (or a line that continues
 * one): sets m->ev and fields when it is a known message. Returns 1 if known. */
static int ds_message(const char *body, const char *end, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)body, *mar;
    const unsigned char *a, *b, *k0, *k1, *v0;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        dd   = [0-9];
        nm   = "-"? dd+ ("." dd*)? ([eE] [-+]? dd+)?;
        any  = [^\n\r]*;

        "time (ms)" " "* "|" {
            dsq_pair pr[DSQ_MATCH_MAXF];
            int n = dsq_pairs_pipe((const char *)cur, end, pr, DSQ_MATCH_MAXF);
            if (n == 0)
                return 0;
            m->ev = DSQ_EV_DS_TIMER;
            for (int i = 0; i < n; i++) {
                int before = m->nf;
                const char *q = dsq_match_field(m, pr[i].name.p, pr[i].name.n, pr[i].val, end);
                if (m->nf > before)
                    m->f[m->nf - 1].unit = DSQ_U_MS;
                if (m->nf > before)
                    timer_parts(m, q, end);
            }
            return 1;
        }
        "epoch=" dd+ "/micro_step=" dd+ "/global_step=" dd+ "," {
            m->ev = DSQ_EV_DS_THROUGHPUT;
            kv_fields(m, body, end);
            return 1;
        }
        @a dd+ "/" @b dd+ ", RunningAvgSamplesPerSec=" {
            m->ev = DSQ_EV_DS_THROUGHPUT;
            dsq_match_field(m, "epoch", 5, (const char *)a, end);
            dsq_match_field(m, "micro_step", 10, (const char *)b, end);
            kv_fields(m, (const char *)cur - 24, end);
            return 1;
        }
        "step=" dd+ ", skipped=" dd+ "," {
            m->ev = DSQ_EV_DS_STEP;
            kv_fields(m, body, end);
            return 1;
        }
        "[deepspeed] OVERFLOW! Rank " @a dd+ " " {
            m->rank = (int)strtol((const char *)a, NULL, 10);
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            overflow_fields(m, body, end);
            return 1;
        }
        ("[deepspeed] fp16 dynamic loss scale overflow!" | "Overflow detected.") {
            overflow_fields(m, body, end);
            return 1;
        }
        "Grad overflow on iteration" ":"? " "+ @a dd+ {
            m->ev = DSQ_EV_DS_OVERFLOW;
            dsq_match_field(m, "iteration", 9, (const char *)a, end);
            return 1;
        }
        @k0 ("Reducing" | "Increasing") @k1 " dynamic loss scale from " @a nm " to " @b nm {
            m->ev = DSQ_EV_DS_LOSS_SCALE;
            m->label = (dsq_span){(const char *)k0, (size_t)(k1 - k0)};
            dsq_match_field(m, "from", 4, (const char *)a, end);
            dsq_match_field(m, "to", 2, (const char *)b, end);
            return 1;
        }
        @a dd+ " pytorch allocator cache flushes since last step" {
            m->ev = DSQ_EV_DS_CACHE_FLUSH;
            dsq_match_field(m, "flushes", 7, (const char *)a, end);
            return 1;
        }
        "DeepSpeed info: version=" @a [^,\n\r]+ @b {
            attr(m, "deepspeed_version", (const char *)a, (const char *)b);
            return 1;
        }
        "Creating " [^ \n\r]+ " ZeRO stage " @a dd+ @b {
            attr(m, "zero_stage", (const char *)a, (const char *)b);
            return 1;
        }
        "Reduce bucket size " @a [0-9,]+ @b {
            attr(m, "reduce_bucket_size", (const char *)a, (const char *)b);
            return 1;
        }
        "Prefetch bucket size " @a [0-9,]+ @b {
            attr(m, "prefetch_bucket_size", (const char *)a, (const char *)b);
            return 1;
        }
        "Allgather bucket size " @a [0-9,]+ @b {
            attr(m, "allgather_bucket_size", (const char *)a, (const char *)b);
            return 1;
        }
        "DeepSpeed Basic Optimizer = " @a [^ \n\r]+ @b {
            attr(m, "optimizer", (const char *)a, (const char *)b);
            return 1;
        }
        "DeepSpeed Final Optimizer = " @a [^ \n\r]+ @b {
            attr(m, "final_optimizer", (const char *)a, (const char *)b);
            return 1;
        }
        "finished initializing model - num_params = " dd+ ", num_elems = " @a nm "B"? @b {
            attr(m, "num_elems", (const char *)a, (const char *)b);
            if (m->nf == 0 && b[-1] == 'B') { /* "8.03B": billions */
                double x;
                if (dsq_num_parse((const char *)a, (const char *)b - 1, &x, NULL) == 0)
                    dsq_match_value(m, "value", 5, (double)llround(x * 1e9), DSQ_U_NONE);
            }
            return 1;
        }
        "dist_world_size=" @a dd+ @b {
            attr(m, "world_size", (const char *)a, (const char *)b);
            return 1;
        }
        "nnodes=" @a dd+ @b "," {
            attr(m, "nodes", (const char *)a, (const char *)b);
            return 1;
        }
        " "* @k0 [a-z_] [a-z0-9_]* @k1 (" " "."+ " " | "  ") @v0 [^ \n\r] any {
            const char *v1 = trim_end((const char *)v0, end);
            size_t kn = (size_t)(k1 - k0);
            if (!config_printer(m))
                return 0;
            if (v1 - (const char *)v0 == 1 && *v0 == '{')
                return 1; /* a JSON block follows: the handler reads it */
            if ((kn == 16 && memcmp(k0, "bfloat16_enabled", 16) == 0) ||
                (kn == 12 && memcmp(k0, "fp16_enabled", 12) == 0) ||
                (kn == 12 && memcmp(k0, "bf16_enabled", 12) == 0)) {
                if (v1 - (const char *)v0 == 4 && memcmp(v0, "True", 4) == 0) {
                    const char *dt = dsq_ds_dtype_name((const char *)k0, kn - 8);
                    attr(m, "dtype", dt, dt + strlen(dt));
                    return 1;
                }
            }
            attr_span(m, config_label((const char *)k0, kn), (const char *)v0, v1);
            return 1;
        }
        * { return launcher_exit(m, body, end); }
    */
}

static int level_of(const unsigned char *p, size_t n)
{
    switch (p[0]) {
    case 'D': return DSQ_LV_DEBUG;
    case 'I': return DSQ_LV_INFO;
    case 'W': return DSQ_LV_WARNING;
    case 'E': return DSQ_LV_ERROR;
    case 'C': return DSQ_LV_CRITICAL;
    default: return n ? DSQ_LV_NONE : DSQ_LV_NONE;
    }
}

/* "[Rank N] " right after the header: the rank, and where the message starts.
 * "[Rank -1]" (log_dist called before torch.distributed is up) names no rank. */
static const unsigned char *rank_tag(const unsigned char *cur, dsq_match *m)
{
    int *rank = &m->rank;
    const unsigned char *mar, *r0, *r1;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        "[Rank " @r0 [0-9]{1,7} @r1 "]" " "? {
            int v = 0;
            for (const unsigned char *q = r0; q < r1; q++)
                v = v * 10 + (*q - '0');
            *rank = v;
            dsq_match_src(m, DSQ_SRC_RANK, 0, (const char *)r0, (const char *)r1);
            return cur;
        }
        "[Rank -1]" " "? { *rank = -1; return cur; } /* log_dist before dist init */
        * { *rank = -1; return NULL; }
    */
}

int dsq_gram_deepspeed(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *ts, *lv0, *lv1, *f0, *f1;
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

        d  = [0-9];
        lv = "DEBUG" | "INFO" | "WARNING" | "WARN" | "ERROR" | "CRITICAL";

        "[" @ts d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} "," d{3} "]" " "+
        "[" @lv0 lv @lv1 "]" " "+
        "[" [^:\]\n\r]+ ":" d+ ":" @f0 [^\]\n\r]+ @f1 "]" " "? { goto header; }
        * { return 0; }
    */
header:;
    m->family = DSQ_FAM_DEEPSPEED;
    m->level = level_of(lv0, (size_t)(lv1 - lv0));
    m->t_us = dsq_time_stamp_ms((const char *)ts);
    dsq_match_src(m, DSQ_SRC_STAMP_MS, 0, (const char *)ts, (const char *)ts + 23);
    m->func.p = (const char *)f0;
    m->func.n = (size_t)(f1 - f0);
    const unsigned char *after = rank_tag(cur, m);
    if (after)
        cur = after;
    m->body.p = (const char *)cur;
    m->body.n = (size_t)(end - (const char *)cur);
    m->kind = DSQ_MK_DS_LOG;
    if (m->func.n == 16 && memcmp(m->func.p, "see_memory_usage", 16) == 0)
        memory_body(m->body.p, end, m);
    else
        ds_message(m->body.p, end, m);
    return 1;
}

int dsq_gram_deepspeed_message(const char *line, size_t len, dsq_match *m)
{
    return ds_message(line, line + len, m);
}


/* runtime/utils.py memory_status: "RANK=0 MEMSTATS <msg> device=cuda:0 current
 * alloc=1.2GB (delta=0.1GB max=2.0GB) current cache=3.0GB (delta=0.0GB max=3.5GB)":
 * a memory event labelled msg with current alloc, max alloc, current cache and
 * max cache (each "max" named after the figure it qualifies). */
static void memstats(dsq_match *m, const char *p, const char *end)
{
    const char *dev = p, *cache = end;
    static const char dv[] = " device=", cc[] = "current cache=";
    for (; dev + sizeof dv - 1 <= end && memcmp(dev, dv, sizeof dv - 1) != 0; dev++)
        ;
    for (const char *q = p; q + sizeof cc - 1 <= end; q++)
        if (memcmp(q, cc, sizeof cc - 1) == 0) {
            cache = q;
            break;
        }
    m->ev = DSQ_EV_MEMORY;
    m->label = (dsq_span){p, (size_t)((dev < end ? dev : end) - p)};
    field_after(m, p, cache, "current alloc=", "current alloc");
    field_after(m, p, cache, "max=", "max alloc");
    field_after(m, cache, end, "current cache=", "current cache");
    field_after(m, cache, end, "max=", "max cache");
}

/* DeepSpeed's bare prints, which carry no logger header: the op builder's load
 * time, the CPU Adam banner and its "Config:" line, ZeRO-Offload's persistent
 * parameters, ZeRO memory estimate tables, and the overflow message that
 * fused_optimizer logs on the line after its header. Most lines start with none
 * of these words, and the DFA rejects them on the first bytes. */
int dsq_gram_deepspeed_bare(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *a, *b, *c, *n1;
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

        "Time to load " @a [A-Za-z0-9_]+ @b " op" @n1 ": " @c nm " seconds" {
            m->ev = DSQ_EV_DS_OP_LOAD;
            m->label = (dsq_span){(const char *)a, (size_t)(b - a)};
            dsq_match_field(m, line, (size_t)((const char *)n1 - line), (const char *)c, end);
            if (m->nf)
                m->f[m->nf - 1].unit = DSQ_U_S;
            goto found;
        }
        [A-Z][a-z]+ " Optimizer #" dd+ " is created with " any { goto found; }
        "Config: alpha=" @a nm @b "," {
            attr(m, "lr", (const char *)a, (const char *)b);
            goto found;
        }
        "Parameter Offload: Total persistent parameters: " @a dd+ @b " in " dd+ " params" {
            attr(m, "persistent_parameters", (const char *)a, (const char *)b);
            goto found;
        }
        "RANK=" @a dd+ " MEMSTATS " @b any {
            m->rank = (int)strtol((const char *)a, NULL, 10);
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            memstats(m, (const char *)b, end);
            goto found;
        }
        "Estimated memory needed for params, optim states and gradients for a:" { goto found; }
        "HW: Setup with " dd+ " node" any { goto found; }
        "SW: Model with " dd+ "M total params" any { goto found; }
        " "+ "per CPU" " "+ "|" " "+ "per GPU" " "+ "|" " "+ "Options" { goto found; }
        " "* @a nm "GB" " "+ "|" " "* @b nm "GB" " "+ "|" " "* @c any {
            m->ev = DSQ_EV_DS_MEM_ESTIMATE;
            m->label = (dsq_span){(const char *)c, (size_t)(trim_end((const char *)c, end) - (const char *)c)};
            dsq_match_field(m, "per CPU", 7, (const char *)a, end);
            dsq_match_field(m, "per GPU", 7, (const char *)b, end);
            goto found;
        }
        "Grad overflow on iteration" ":"? " "+ @a dd+ {
            m->ev = DSQ_EV_DS_OVERFLOW;
            dsq_match_field(m, "iteration", 9, (const char *)a, end);
            goto found;
        }
        ("Loading" | "Building") " extension module " [A-Za-z0-9_]+ "..." { goto found; }
        "Using " [^ \n\r]+ " as PyTorch extensions root..." { goto found; }
        "Emitting ninja build file " any { goto found; }
        "Detected CUDA files, patching ldflags" | "ninja: no work to do."
        | "Allowing ninja to set a default number of workers..." { goto found; }
        "Detected " [A-Z_]* "VISIBLE_DEVICES=" [0-9,]* ": setting --include=" { goto found; }
        * { return 0; }
    */
found:
    m->family = DSQ_FAM_DEEPSPEED;
    m->body.p = line;
    m->body.n = len;
    return 1;
}
