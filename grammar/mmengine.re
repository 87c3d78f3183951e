/* mmengine / xtuner logger lines.
 *
 * Header (mmengine/logging/logger.py, MMFormatter), a stamp without a year:
 *   09/10 14:27:26 - mmengine - INFO - message
 * and, inside it, the training-loop line of mmengine's LogProcessor:
 *   Iter(train) [  10/1000]  lr: 2.0000e-04  eta: 0:23:45  time: 0.5123  data_time: 0.0123
 *   memory: 12345  loss: 1.2345  grad_norm: 3.0729
 *   Epoch(train)  [1][ 10/500]  lr: ...
 * Pairs are "name: value" separated by two blanks; a value that is not a number
 * (eta "0:23:45") is skipped. The event is mmengine_iter with fields iter, the
 * pairs as printed, then max_iters (iters_per_epoch on Epoch lines; last, so it
 * is the first to go when a line has more pairs than an event holds); label is the
 * mode ("train", "val", "test"); Epoch lines add epoch first.
 * The year comes from the scanner (m->civil.y == 0).
 */
#include <string.h>

#include "event.h"
#include "grammar.h"
#include "num.h"

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

/* "name: value" pairs separated by blanks, up to end. Names run up to ':' and
 * contain no blank; values that are not numbers are skipped. */
static void iter_pairs(dsq_match *m, const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *n0 = p;
        while (p < end && *p != ':' && *p != ' ' && *p != '\t')
            p++;
        if (p >= end || *p != ':' || p == n0) {
            while (p < end && *p != ' ' && *p != '\t')
                p++;
            continue;
        }
        const char *n1 = p++;
        while (p < end && *p == ' ')
            p++;
        const char *v = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        double x;
        const char *stop = NULL;
        if (dsq_num_parse(v, p, &x, &stop) == 0 && stop == p)
            dsq_match_value_at(m, n0, (size_t)(n1 - n0), x, DSQ_U_NONE, v, stop);
    }
}

/* The LogProcessor line: "Iter(mode) [ i/n]" or "Epoch(mode) [e][ i/n]". */
static void iter_body(dsq_match *m, const char *body, const char *end)
{
    const unsigned char *cur = (const unsigned char *)body, *mar;
    const unsigned char *md0, *md1, *e0, *i0, *n0;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        sp   = " "*;
        mode = [a-z]+;
        cnt  = sp [0-9]+;

        "Iter(" @md0 mode @md1 ")" sp "[" @i0 cnt "/" @n0 cnt "]" {
            e0 = NULL;
            goto found;
        }
        "Epoch(" @md0 mode @md1 ")" sp "[" @e0 cnt "]" "[" @i0 cnt "/" @n0 cnt "]" {
            goto found;
        }
        * { return; }
    */
found:
    m->ev = DSQ_EV_MMENGINE_ITER;
    m->label.p = (const char *)md0;
    m->label.n = (size_t)(md1 - md0);
    if (e0)
        dsq_match_field(m, "epoch", 5, (const char *)e0 + strspn((const char *)e0, " "), end);
    dsq_match_field(m, "iter", 4, (const char *)i0 + strspn((const char *)i0, " "), end);
    iter_pairs(m, (const char *)cur, end);
    n0 += strspn((const char *)n0, " ");
    if (e0)
        dsq_match_field(m, "iters_per_epoch", 15, (const char *)n0, end);
    else
        dsq_match_field(m, "max_iters", 9, (const char *)n0, end);
}

int dsq_gram_mmengine(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *ts, *lv;
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
        lw = "DEBUG" | "INFO" | "WARNING" | "ERROR" | "CRITICAL";

        @ts d{2} "/" d{2} " " d{2} ":" d{2} ":" d{2} " - " [A-Za-z_][A-Za-z0-9_.]* " - "
        @lv lw " - " { goto header; }
        * { return 0; }
    */
header:;
    const char *t = (const char *)ts;
    m->family = DSQ_FAM_MMENGINE;
    m->level = level_word(lv);
    DSQ_TIME_CIVIL_MD(&m->civil, t);
    dsq_match_src(m, DSQ_SRC_CIVIL_MD, 0, t, t + 14);
    m->body.p = (const char *)cur;
    m->body.n = (size_t)(end - (const char *)cur);
    iter_body(m, m->body.p, end);
    return 1;
}
