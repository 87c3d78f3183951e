/* Prefix layers other than pdsh's host (see pdsh.re). Each call peels one layer:
 *   [rank3]:            torchrun --tee / PyTorch rank tag        -> rank 3
 *   [rank=3 local_rank=1]   a training script's own print prefix -> rank 3
 *   [default3]:         torchrun's default log prefix (LOCAL rank) -> rank 3
 *   [1,3]<stdout>:      Open MPI --tag-output ([jobid,rank])     -> rank 3
 *   [trainer0|3]:       TorchX role|replica tag                 -> rank 3
 *   3: / 12:            srun --label (task id = global rank)    -> rank 3
 *   2024-07-20T21:30:05.123456789Z   container / k8s RFC 3339 stamp -> time
 *   [07:15:39.400163]   a time-of-day stamp (LLaMA2-Accessory)    -> m->tod_us
 *   ESC [ ... m         ANSI colour codes in front of a line
 *   (RayWorkerWrapper pid=927)   Ray's actor prefix (vLLM, Ray Train)
 * and two layers that may be one or not (returned as 2: the scanner takes them
 * only when a log line follows, or when the stream already had them):
 *   > / "> "            a markdown quote around a pasted log
 *   [155]               a launcher's rank tag (-> rank, below 65536), or a log
 *                       viewer's line number ([80746]; the scanner tells them apart)
 * Layers nest in any order; the scanner calls this until it returns 0. A layer
 * sets m->rank or m->t_us and m->body (the rest of the line).
 */
#include "grammar.h"

static int digits_value(const unsigned char *p, const unsigned char *e)
{
    int v = 0;
    for (; p < e && v < 100000000; p++)
        v = v * 10 + (*p - '0');
    return v;
}

static int finish(dsq_match *m, const char *line, size_t len, const unsigned char *cur)
{
    m->kind = DSQ_MK_PREFIX;
    m->body.p = (const char *)cur;
    m->body.n = len - (size_t)((const char *)cur - line);
    return 1;
}

int dsq_gram_prefix_dfa(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *r0, *r1, *t0;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    if (len == 1 && line[0] == '>') { /* an empty quoted line */
        finish(m, line, len, cur + 1);
        return 2;
    }
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        d    = [0-9];
        num  = d{1,8};

        "[rank" @r0 num @r1 "]:" " "?                  { m->rank = digits_value(r0, r1); return finish(m, line, len, cur); }
        "[rank=" @r0 num @r1 " local_rank=" num "] "   { m->rank = digits_value(r0, r1); return finish(m, line, len, cur); }
        "[default" @r0 num @r1 "]:" " "?               { m->rank = digits_value(r0, r1); return finish(m, line, len, cur); }
        "[" num "," @r0 num @r1 "]<std" ("out"|"err") ">:" " "? { m->rank = digits_value(r0, r1); return finish(m, line, len, cur); }
        "[" [a-z_]+ d* "|" @r0 num @r1 "]:" " "?       { m->rank = digits_value(r0, r1); return finish(m, line, len, cur); }
        @r0 num @r1 ": "                               { m->rank = digits_value(r0, r1); return finish(m, line, len, cur); }
        @t0 d{4} "-" d{2} "-" d{2} "T" d{2} ":" d{2} ":" d{2} ("." d{1,9})? ("Z" | [+-] d{2} ":" d{2}) " " {
            const char *t = (const char *)t0;
            int us = 0, n = 0;
            for (const char *q = t + 20; n < 6 && *q >= '0' && *q <= '9' && t[19] == '.'; q++, n++)
                us = us * 10 + (*q - '0');
            for (; n < 6 && t[19] == '.'; n++)
                us *= 10;
            m->t_us = dsq_time_from_civil(dsq_time_digits(t, 4), dsq_time_digits(t + 5, 2),
                                          dsq_time_digits(t + 8, 2), dsq_time_digits(t + 11, 2),
                                          dsq_time_digits(t + 14, 2), dsq_time_digits(t + 17, 2), us);
            return finish(m, line, len, cur);
        }
        "[" @t0 d{2} ":" d{2} ":" d{2} ("." d{1,9})? "] " {
            const char *t = (const char *)t0;
            int h = dsq_time_digits(t, 2), mi = dsq_time_digits(t + 3, 2), s = dsq_time_digits(t + 6, 2);
            if (h > 23 || mi > 59 || s > 60)
                return 0;
            int64_t us = 0, n = 0;
            for (const char *q = t + 9; t[8] == '.' && n < 6 && *q >= '0' && *q <= '9'; q++, n++)
                us = us * 10 + (*q - '0');
            for (; t[8] == '.' && n < 6; n++)
                us *= 10;
            m->tod_us = ((int64_t)h * 3600 + mi * 60 + s) * 1000000 + us;
            return finish(m, line, len, cur);
        }
        ("\x1b[" [0-9;]* [A-Za-z])+                    { return finish(m, line, len, cur); }
        "> "                                           { finish(m, line, len, cur); return 2; }
        "[" @r0 d{1,7} @r1 "] " {
            int v = digits_value(r0, r1);
            if (v < 65536)
                m->rank = v;
            finish(m, line, len, cur);
            return 2;
        }
        "(" [A-Za-z_][A-Za-z0-9_]* " pid=" d{1,10} (", ip=" [0-9a-fA-F.:]+)? ")" ("\x1b[0m")? " " { return finish(m, line, len, cur); }
        *                                              { return 0; }
    */
}

/* A line that starts with no layer's first byte (most lines: a host, a word) leaves
 * before the DFA, and so does one that starts with a logger's date stamp
 * ("[2024-07-01 01:16:35,696] [INFO] ...": no layer has '-' after "[" and 4 digits). */
int dsq_gram_prefix(const char *line, size_t len, dsq_match *m)
{
    if (!len || !dsq_gram_prefix_first((unsigned char)line[0]))
        return 0;
    if (dsq_gram_date_first(line, len))
        return 0;
    return dsq_gram_prefix_dfa(line, len, m);
}
