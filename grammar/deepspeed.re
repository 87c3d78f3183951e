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
 */
#include <string.h>

#include "grammar.h"
#include "num.h"

/* Parses the number at p and the unit word that follows it (after blanks). */
static void take_value(dsq_match *m, const unsigned char *p, const char *end)
{
    const char *stop = NULL;
    double v = 0;
    if (m->nv >= DSQ_MATCH_MAXV || dsq_num_parse((const char *)p, end, &v, &stop) != 0)
        return;
    while (stop < end && (*stop == ' ' || *stop == '\t'))
        stop++;
    const char *u = stop;
    while (stop < end && ((*stop >= 'A' && *stop <= 'Z') || (*stop >= 'a' && *stop <= 'z') ||
                          *stop == '%'))
        stop++;
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
static const unsigned char *rank_tag(const unsigned char *cur, int *rank)
{
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
    const char *t = (const char *)ts;
    int y = dsq_time_digits(t, 4), mo = dsq_time_digits(t + 5, 2), dd = dsq_time_digits(t + 8, 2);
    int h = dsq_time_digits(t + 11, 2), mi = dsq_time_digits(t + 14, 2);
    int s = dsq_time_digits(t + 17, 2), ms = dsq_time_digits(t + 20, 3);
    m->family = DSQ_FAM_DEEPSPEED;
    m->level = level_of(lv0, (size_t)(lv1 - lv0));
    m->t_us = dsq_time_from_civil(y, mo, dd, h, mi, s, ms * 1000);
    m->func.p = (const char *)f0;
    m->func.n = (size_t)(f1 - f0);
    const unsigned char *after = rank_tag(cur, &m->rank);
    if (after)
        cur = after;
    m->body.p = (const char *)cur;
    m->body.n = (size_t)(end - (const char *)cur);
    m->kind = DSQ_MK_DS_LOG;
    if (m->func.n == 16 && memcmp(m->func.p, "see_memory_usage", 16) == 0)
        memory_body(m->body.p, end, m);
    return 1;
}
