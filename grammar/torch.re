/* torch.distributed.run / elastic launcher lines.
 *
 * Headers, by PyTorch version:
 *   [2024-09-10 14:26:48,892] torch.distributed.run: [WARNING] msg       torch 2.0 - 2.2
 *   W0910 14:27:22.992000 134 torch/distributed/run.py:757] msg          torch >= 2.3
 *     (glog-shaped; the header is parsed by glog.re's dsq_glog_header)
 *   WARNING:torch.distributed.elastic.multiprocessing.api:msg          logging.basicConfig
 * Messages with meaning:
 *   failed (exitcode: -9) local_rank: 3 (pid: 1234) of binary: /usr/bin/python
 *       -> failure: label "signal" when the exit code is negative, else "launcher_exit";
 *          fields exitcode, local_rank, pid
 *   Sending process 1234 closing signal SIGTERM -> torchrun_closing_signal (label = signal, pid)
 *   Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
 *       -> torchrun_omp_threads (field OMP_NUM_THREADS)
 * and the ChildFailedError report's lines, which the handler in src/fam_torch.c
 * joins into one failure:
 *   Failures: / Root Cause (first observed failure): / [0]: /
 *     time      : 2024-09-10_14:30:01      host      : gpu009
 *     rank      : 3 (local_rank: 3)        exitcode  : -9 (pid: 2606)
 *     error_file: <N/A>                    traceback : Signal 9 (SIGKILL) received by PID 2606
 * For those lines m->func names the part ("time", "host", ..., "root", "failures",
 * "entry") and m->body is the value.
 */
#include <string.h>

#include "event.h"
#include "fam_torch.h"
#include "grammar.h"
#include "num.h"

static int level_word(const unsigned char *p)
{
    switch (p[0]) {
    case 'D': return DSQ_LV_DEBUG;
    case 'I': return DSQ_LV_INFO;
    case 'W': return DSQ_LV_WARNING;
    case 'E': return DSQ_LV_ERROR;
    default: return DSQ_LV_CRITICAL;
    }
}

/* The number after lit in [p, end), or NULL. */
static const char *after(const char *p, const char *end, const char *lit, size_t n)
{
    const char *q = memmem(p, (size_t)(end - p), lit, n);
    return q ? q + n : NULL;
}

/* Gives the elastic agent's messages their events. */
static void message(dsq_match *m, const char *msg, const char *end)
{
    const char *v;
    if (dsq_starts(msg, end, DSQ_LIT("failed (exitcode: "))) {
        double code = 0;
        v = msg + 18;
        if (dsq_num_parse(v, end, &code, NULL) != 0)
            return;
        m->ev = DSQ_EV_FAILURE;
        m->label.p = code < 0 ? "signal" : "launcher_exit";
        m->label.n = code < 0 ? 6 : 13;
        m->text.p = msg;
        m->text.n = (size_t)(end - msg);
        dsq_match_value(m, "exitcode", 8, code, DSQ_U_NONE);
        if ((v = after(msg, end, DSQ_LIT("local_rank: "))))
            dsq_match_field(m, "local_rank", 10, v, end);
        if ((v = after(msg, end, DSQ_LIT("(pid: "))))
            dsq_match_field(m, "pid", 3, v, end);
    } else if (dsq_starts(msg, end, DSQ_LIT("Sending process ")) &&
               (v = after(msg, end, DSQ_LIT(" closing signal ")))) {
        m->ev = DSQ_EV_TORCHRUN_CLOSING_SIGNAL;
        const char *e = v;
        while (e < end && *e >= 'A' && *e <= 'Z')
            e++;
        m->label.p = v;
        m->label.n = (size_t)(e - v);
        dsq_match_field(m, "pid", 3, msg + 16, end);
    } else if (dsq_starts(msg, end, DSQ_LIT("Setting OMP_NUM_THREADS environment variable for each process to be "))) {
        m->ev = DSQ_EV_TORCHRUN_OMP;
        dsq_match_field(m, "OMP_NUM_THREADS", 15, msg + 68, end);
    }
}

/* The lines of a ChildFailedError report. */
static int report_line(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar, *k0, *k1;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        key = "time" | "host" | "rank" | "exitcode" | "error_file" | "traceback";

        "  " @k0 key @k1 " "* ": " { m->func.p = (const char *)k0; m->func.n = (size_t)(k1 - k0); goto value; }
        "Root Cause (first observed failure):" { m->func.p = "root"; m->func.n = 4; goto whole; }
        "Failures:" { m->func.p = "failures"; m->func.n = 8; goto whole; }
        "  <NO_OTHER_FAILURES>" { m->func.p = "none"; m->func.n = 4; goto whole; }
        "[" [0-9]{1,6} "]:" { m->func.p = "entry"; m->func.n = 5; goto whole; }
        * { return 0; }
    */
whole: /* these parts are whole lines (trailing blanks aside) */
    for (const unsigned char *q = cur; q < (const unsigned char *)line + len; q++)
        if (*q != ' ' && *q != '\t') {
            m->func.p = NULL;
            m->func.n = 0;
            return 0;
        }
value:
    m->level = DSQ_LV_ERROR;
    m->body.p = (const char *)cur;
    m->body.n = len - (size_t)((const char *)cur - line);
    return 1;
}

int dsq_gram_torchrun(const char *line, size_t len, dsq_match *m)
{
    const char *end = line + len;
    const unsigned char *cur = (const unsigned char *)line, *mar, *ts, *lv, *b;
    unsigned char c = (unsigned char)line[0];
    if (c == 'I' || c == 'W' || c == 'E' || c == 'F') {
        dsq_glog_hdr h;
        if (line[1] >= '0' && line[1] <= '9' && dsq_glog_header(line, len, &h) &&
            dsq_glog_is_torchrun(&h)) {
            m->level = h.level;
            m->civil = h.civil;
            m->func = h.file;
            m->body.p = h.body;
            m->body.n = (size_t)(end - h.body);
            message(m, h.body, end);
            return 1;
        }
    } else if (c != '[' && c != 'D' && c != 'C' && c != ' ' && c != 'R') {
        return 0;
    }
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        d   = [0-9];
        lvw = "DEBUG" | "INFO" | "WARNING" | "ERROR" | "CRITICAL";
        mod = "torch." [A-Za-z0-9_.]+;

        "[" @ts d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} "," d{3} "] "
            mod ": [" @lv lvw "] " @b { goto stamped; }
        @lv lvw ":" mod ":" @b { goto plain; }
        * { return report_line(line, len, m); }
    */
stamped:;
    {
        const char *t = (const char *)ts;
        m->t_us = dsq_time_from_civil(dsq_time_digits(t, 4), dsq_time_digits(t + 5, 2),
                                      dsq_time_digits(t + 8, 2), dsq_time_digits(t + 11, 2),
                                      dsq_time_digits(t + 14, 2), dsq_time_digits(t + 17, 2),
                                      dsq_time_digits(t + 20, 3) * 1000);
    }
plain:
    m->level = level_word(lv);
    m->body.p = (const char *)b;
    m->body.n = (size_t)(end - (const char *)b);
    message(m, (const char *)b, end);
    return 1;
}
