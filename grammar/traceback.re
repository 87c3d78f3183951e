/* Python tracebacks, C++ terminate / c10 stack traces, and Python warnings.
 *
 * Traceback lines (the handler in src/fam_traceback.c makes the events):
 *   Traceback (most recent call last):
 *     File "train.py", line 12, in main            func = "main", v[0] = 12
 *       ^^^^^^^^^^                                  (3.11+ carets, also ~~~^^^)
 *   During handling of the above exception, another exception occurred:
 *   The above exception was the direct cause of the following exception:
 *   RuntimeError: CUDA out of memory. ...          label = type, text = message
 * An exception line is an identifier (dotted) ending in Error, Exception, Interrupt,
 * Exit or Failure (a bare "Error" is some tool's message, a bare "Exception" is
 * Python's), then ':' at the start of the line; code lines between frames
 * are indistinguishable from other indented text and stay "other".
 * C++ side: "terminate called after throwing an instance of 'T'", "  what():  msg"
 * (label "what()", text = msg), "Exception raised from f at file:N (most recent call
 * first):", "frame #3: ...".
 *
 * Warnings (warnings.showwarning): "path/file.py:56: UserWarning: message" ->
 * a pywarn event, label = the warning class, text = the message.
 */
#include <string.h>

#include "event.h"
#include "grammar.h"
#include "num.h"

static void rest(dsq_match *m, const char *line, size_t len, const unsigned char *cur)
{
    m->body.p = (const char *)cur;
    m->body.n = len - (size_t)((const char *)cur - line);
}

/* A line of a traceback rich prints in a box (accelerate, typer): its top rule
 * "╭───── Traceback (most recent call last) ─────╮", the frame and code lines
 * "│ ❱  81 │   torch.distributed.barrier()   │" and the bottom rule "╰────╯". The
 * exception line after the box is an ordinary one. Level none, as code lines. */
static int rich_box(const char *line, size_t len, dsq_match *m)
{
    static const char v[] = "\xe2\x94\x82", top[] = "\xe2\x95\xad\xe2\x94\x80",
                      bottom[] = "\xe2\x95\xb0\xe2\x94\x80";
    dsq_span t = dsq_trim(line, line + len);
    int ok = (t.n >= 6 && memcmp(t.p, v, 3) == 0 && memcmp(t.p + t.n - 3, v, 3) == 0) ||
             (t.n >= 6 && memcmp(t.p, top, 6) == 0 && memmem(t.p, t.n, DSQ_LIT("Traceback"))) ||
             (t.n >= 6 && memcmp(t.p, bottom, 6) == 0);
    if (!ok)
        return 0;
    m->family = DSQ_FAM_TRACEBACK;
    m->body.p = line;
    m->body.n = len;
    return 1;
}

int dsq_gram_traceback(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *a0, *a1, *b0, *b1;
    unsigned char c = (unsigned char)line[0];
    if (c == 0xE2)
        return rich_box(line, len, m);
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ' ' || c == '\t'))
        return 0;
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
        ws    = [ \t];
        id    = [A-Za-z_] [A-Za-z0-9_]*;
        etype = (id ".")* ([A-Za-z0-9_]+ ("Error" | "Exception" | "Interrupt" | "Exit" | "Failure")
                | "Exception");

        "Traceback (most recent call last):" {
            m->level = DSQ_LV_ERROR;
            rest(m, line, len, (const unsigned char *)line);
            return 1;
        }
        ws* "File \"" [^"\n\r]+ "\", line " @a0 d+ @a1 (", in " @b0 [^\n\r]+ @b1)? {
            m->level = DSQ_LV_ERROR;
            m->nv = 1;
            m->v[0] = 0;
            for (const unsigned char *q = a0; q < a1 && m->v[0] < 1e9; q++)
                m->v[0] = m->v[0] * 10 + (*q - '0');
            m->unit[0] = DSQ_U_NONE;
            if (b0) {
                m->func.p = (const char *)b0;
                m->func.n = (size_t)(b1 - b0);
            }
            rest(m, line, len, (const unsigned char *)line);
            return 1;
        }
        ws+ [~]* "^" [~^]* ws* {
            for (const unsigned char *q = cur; q < (const unsigned char *)line + len; q++)
                if (*q != ' ' && *q != '\t')
                    return 0;
            m->level = DSQ_LV_ERROR;
            rest(m, line, len, (const unsigned char *)line);
            return 1;
        }
        "During handling of the above exception, another exception occurred:"
        | "The above exception was the direct cause of the following exception:" {
            m->level = DSQ_LV_ERROR;
            rest(m, line, len, (const unsigned char *)line);
            return 1;
        }
        @a0 etype @a1 ":" ws* {
            m->level = DSQ_LV_ERROR;
            m->label.p = (const char *)a0;
            m->label.n = (size_t)(a1 - a0);
            rest(m, line, len, cur);
            m->text = m->body;
            return 1;
        }
        "terminate called after throwing an instance of '" [^'\n\r]+ "'" {
            m->level = DSQ_LV_CRITICAL;
            rest(m, line, len, (const unsigned char *)line);
            return 1;
        }
        ws* @a0 "what()" @a1 ":" ws* {
            m->level = DSQ_LV_CRITICAL;
            m->label.p = (const char *)a0;
            m->label.n = (size_t)(a1 - a0);
            rest(m, line, len, cur);
            m->text = m->body;
            return 1;
        }
        "Exception raised from " [^\n\r]+ " (most recent call first):"
        | "frame #" d+ ": " {
            m->level = DSQ_LV_ERROR;
            rest(m, line, len, (const unsigned char *)line);
            return 1;
        }
        * { return 0; }
    */
}

int dsq_gram_pywarn(const char *line, size_t len, dsq_match *m)
{
    if (len < 20 || !memmem(line, len, "Warning: ", 9))
        return 0;
    const unsigned char *cur = (const unsigned char *)line, *mar, *c0, *c1;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        [^\n\r]* ".py:" [0-9]+ ": " @c0 ([A-Za-z_][A-Za-z0-9_]* ".")* [A-Za-z0-9_]* "Warning" @c1 ": " {
            m->level = DSQ_LV_WARNING;
            m->ev = DSQ_EV_PYWARN;
            m->label.p = (const char *)c0;
            m->label.n = (size_t)(c1 - c0);
            m->body.p = (const char *)cur;
            m->body.n = len - (size_t)((const char *)cur - line);
            m->text = m->body;
            return 1;
        }
        * { return 0; }
    */
}
