/* glog / c10 lines: PyTorch's C++ logging (ProcessGroupNCCL, socket.cpp, ...).
 *
 * Header shapes (level letter I W E F; the month is not always zero-padded):
 *   I0910 14:27:22.992898   134 ProcessGroupNCCL.cpp:686] msg     glog (thread id padded)
 *   [E901 05:20:04.798433587 ProcessGroupNCCL.cpp:1899] msg     c10 logging, torch >= 2.4
 *   [E ProcessGroupNCCL.cpp:737] msg                             c10 logging without glog
 * Python code can imitate the first shape (torch.distributed's logger, absl); a
 * ".py" file under torch/distributed/ belongs to the torchrun family (torch.re),
 * so this recognizer leaves it alone. Stamps have no year: m->civil is set.
 *
 * Messages with meaning:
 *   [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=.., OpType=..,
 *     NumelIn=.., NumelOut=.., Timeout(ms)=..) ran for N milliseconds before timing out.
 *       -> failure "nccl_timeout" with SeqNum NumelIn NumelOut Timeout(ms) "ran for" (ms)
 *   ProcessGroupNCCL initialized with following options:   then bare "KEY: value" lines
 *       -> one attribute per option line (pg_nccl_timeout_ms, pg_nccl.<KEY>)
 *   ProcessGroupNCCL initialization options: K: v, K: v, ... (one line; handler in
 *       src/fam_torch.c emits one attribute per pair)
 *   the lines of a desync report -> glog_desync events (see desync_line)
 * A "[Rank N]" / "[PG ID 1 PG GUID 1(x) Rank N]" tag at the start of the message
 * gives the rank. Restatements of a timeout (the watchdog thread's exception, the
 * terminate "what():") are not counted again.
 */
#include <string.h>

#include "event.h"
#include "fam_torch.h"
#include "grammar.h"
#include "num.h"

static int dig(const unsigned char *p, const unsigned char *e)
{
    int v = 0;
    for (; p < e && v < 100000000; p++)
        v = v * 10 + (*p - '0');
    return v;
}

static int glog_level(unsigned char c)
{
    switch (c) {
    case 'I': return DSQ_LV_INFO;
    case 'W': return DSQ_LV_WARNING;
    case 'E': return DSQ_LV_ERROR;
    default: return DSQ_LV_CRITICAL; /* F: fatal */
    }
}

/* Fills the civil stamp from "MDD HH:MM:SS.f..." (md has 3 or 4 digits). */
static void glog_civil(dsq_civil *c, const unsigned char *md, const unsigned char *tm,
                       const unsigned char *fr, const unsigned char *fre)
{
    int mdv = dig(md, tm - 1);
    c->y = 0;
    c->mo = mdv / 100;
    c->d = mdv % 100;
    c->h = dig(tm, tm + 2);
    c->mi = dig(tm + 3, tm + 5);
    c->s = dig(tm + 6, tm + 8);
    int us = 0, n = 0;
    for (const unsigned char *q = fr; q < fre && n < 6; q++, n++)
        us = us * 10 + (*q - '0');
    for (; n < 6; n++)
        us *= 10;
    c->us = us;
    if (c->mo < 1 || c->mo > 12 || c->d < 1 || c->d > 31)
        c->mo = 0;
}

int dsq_glog_header(const char *line, size_t len, dsq_glog_hdr *h)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *l, *md, *tm, *fr, *fre, *f0, *f1;
    (void)len;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    h->civil.mo = 0;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        d    = [0-9];
        lv   = [IWEF];
        file = [^ \t:\]\n\r0-9] [^ \t:\]\n\r]*;
        hms  = d{2} ":" d{2} ":" d{2} ".";

        "[" @l lv @md d{3,4} " " @tm hms @fr d{1,9} @fre (" " d+)? " "
            @f0 file @f1 ":" d+ "]" " "? { goto stamped; }
        @l lv @md d{3,4} " " @tm hms @fr d{1,9} @fre (" "+ d+)? " "
            @f0 file @f1 ":" d+ "]" " "? { goto stamped; }
        "[" @l lv " " @f0 file @f1 ":" d+ "]" " "? { goto plain; }
        * { return 0; }
    */
stamped:;
    glog_civil(&h->civil, md, tm, fr, fre);
plain:
    h->level = glog_level(*l);
    h->file.p = (const char *)f0;
    h->file.n = (size_t)(f1 - f0);
    h->body = (const char *)cur;
    return 1;
}

/* "[Rank 3] ", "[PG 1 Rank 0] ", "[PG ID 0 PG GUID 0(default_pg) Rank 4] " at the
 * start of a message: returns the rank (or -1) and moves *p past the tag. */
static int rank_tag(const char **p, const char *end)
{
    const char *s = *p;
    if (end - s < 8 || s[0] != '[' || (memcmp(s + 1, "Rank ", 5) != 0 && memcmp(s + 1, "PG ", 3) != 0))
        return -1;
    const char *close = memchr(s, ']', (size_t)(end - s) < 96 ? (size_t)(end - s) : 96);
    if (!close)
        return -1;
    const char *r = NULL;
    for (const char *q = s; q + 5 <= close; q++)
        if (memcmp(q, "Rank ", 5) == 0)
            r = q + 5;
    if (!r || r >= close || *r < '0' || *r > '9')
        return -1;
    int v = 0;
    for (; r < close && *r >= '0' && *r <= '9' && v < 10000000; r++)
        v = v * 10 + (*r - '0');
    const char *q = close + 1;
    while (q < end && *q == ' ')
        q++;
    *p = q;
    return v;
}

/* "Watchdog caught collective operation timeout: WorkNCCL(K=v, ...) ran for N
 * milliseconds ...": every numeric K=v becomes a field, named as printed. */
void dsq_glog_watchdog(dsq_match *m, const char *msg, const char *end)
{
    m->ev = DSQ_EV_FAILURE;
    m->label.p = "nccl_timeout";
    m->label.n = 12;
    m->text.p = msg;
    m->text.n = (size_t)(end - msg);
    const char *p = memchr(msg, '(', (size_t)(end - msg));
    if (!p)
        return;
    p++;
    while (p < end && *p != '\n') {
        const char *k = p;
        while (p < end && *p != '=' && *p != ',' && *p != ' ')
            p++;
        if (p >= end || *p != '=')
            break;
        const char *ke = p++;
        const char *v = p;
        while (p < end && *p != ',' && !(*p == ')' && (p + 1 >= end || p[1] == ' ')))
            p++;
        if (v < p && ((*v >= '0' && *v <= '9') || *v == '-')) {
            int is_ms = ke - k == 11 && memcmp(k, "Timeout(ms)", 11) == 0;
            double x;
            if (dsq_num_parse(v, p, &x, NULL) == 0)
                dsq_match_value(m, k, (size_t)(ke - k), x, is_ms ? DSQ_U_MS : DSQ_U_NONE);
        }
        if (p >= end || *p == ')')
            break;
        p++; /* ',' */
        while (p < end && *p == ' ')
            p++;
    }
    if (p < end && *p == ')' && dsq_starts(p + 1, end, DSQ_LIT(" ran for "))) {
        const char *v = p + 10;
        double x;
        if (dsq_num_parse(v, end, &x, NULL) == 0)
            dsq_match_value(m, "ran for", 7, x, DSQ_U_MS);
    }
}

/* A bare option line of the multi-line init block, "TIMEOUT(ms): 1800000". Only
 * the handler (src/fam_torch.c) asks, and only right after the block's header:
 * alone, "NCCL_DEBUG: INFO" is not a ProcessGroupNCCL option. */
int dsq_glog_is_option(const char *line, size_t len)
{
    const char *end = line + len, *p = line;
    if (dsq_starts(p, end, DSQ_LIT("TIMEOUT(ms): ")))
        p += 11;
    else {
        if (!dsq_starts(p, end, DSQ_LIT("NCCL_")) && !dsq_starts(p, end, DSQ_LIT("TORCH_")) &&
            !dsq_starts(p, end, DSQ_LIT("USE_HIGH_PRIORITY_STREAM: ")))
            return 0;
        while (p < end && ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            p++;
        if (!dsq_starts(p, end, DSQ_LIT(": ")))
            return 0;
    }
    const char *v = p + 2, *ve = end;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
        ve--;
    return !(ve == v || memchr(v, ' ', (size_t)(ve - v))); /* options print one word */
}

static dsq_span span_of(const unsigned char *a, const unsigned char *b)
{
    return (dsq_span){(const char *)a, (size_t)(b - a)};
}

/* The lines of a desync report (TORCH_NCCL_DESYNC_DEBUG=1), printed after the
 * watchdog's timeout, indented by tabs (spaces once pasted):
 *   - [3] Timeout at collective: ALLREDUCE, #1234
 *   - To our best knowledge, ranks [0, 2] are the lagging ranks that caused this timeout. ...
 *   - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:
 *     - [0, 1] joined but didn't finish collective #1234 (count from 1)
 *       [2] finished collective #1234, but didn't join collective #1235 (count from 1)
 *   - Snapshot of ranks' latest states:   #1234 started ranks:   [0, 1] started ALLREDUCE
 * Each finding is a glog_desync event: label = what was found, text = the ranks (or
 * the collective's type), field "collective" = its sequence number. */
static int desync_line(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar, *a0, *a1, *b0, *b1;
    const char *what;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        ind   = [ \t]+;
        ranks = [0-9]+ (", " [0-9]+)*;

        ind "- [" @a0 [0-9]+ @a1 "] Timeout at collective: " @b0 [^,\n\r]+ @b1 ", #" {
            m->rank = dig(a0, a1);
            dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
            a0 = b0;
            a1 = b1;
            what = "timeout_at";
            goto found;
        }
        ind "- To our best knowledge, ranks [" @a0 ranks @a1 "] are the lagging ranks" {
            what = "never_joined";
            goto found;
        }
        ind "- [" @a0 ranks @a1 "] joined but didn't finish collective #" {
            what = "joined_not_finished";
            goto found;
        }
        ind "[" @a0 ranks @a1 "] finished collective #" {
            what = "finished_not_joined";
            goto found;
        }
        ind "- To our best knowledge, the lagging/dead/mismatched ranks"
        | ind "- Snapshot of ranks' latest states:"
        | ind "#" [0-9]+ " " ("started" | "finished") " ranks:"
        | ind "[" ranks "] " ("started" | "finished") " " { what = NULL; goto found; }
        * { return 0; }
    */
found:
    m->family = DSQ_FAM_GLOG;
    m->level = DSQ_LV_ERROR;
    m->body.p = line;
    m->body.n = len;
    if (!what)
        return 1;
    m->ev = DSQ_EV_GLOG_DESYNC;
    m->label.p = what;
    m->label.n = strlen(what);
    m->text = span_of(a0, a1);
    if (*cur >= '0' && *cur <= '9')
        dsq_match_field(m, "collective", 10, (const char *)cur, line + len);
    return 1;
}

int dsq_gram_glog(const char *line, size_t len, dsq_match *m)
{
    unsigned char c = (unsigned char)line[0];
    if (c == '\t' || c == ' ')
        return desync_line(line, len, m);
    if (c != '[' && c != 'I' && c != 'W' && c != 'E' && c != 'F')
        return 0;
    dsq_glog_hdr h;
    if (!dsq_glog_header(line, len, &h)) {
        if (!dsq_starts(line, line + len, DSQ_LIT("WARNING: Logging before InitGoogleLogging()")))
            return 0;
        m->level = DSQ_LV_WARNING;
        m->body.p = line;
        m->body.n = len;
        return 1;
    }
    if (dsq_glog_is_torchrun(&h))
        return 0;
    const char *end = line + len, *msg = h.body;
    m->family = DSQ_FAM_GLOG;
    m->level = h.level;
    m->civil = h.civil;
    m->func = h.file;
    m->rank = rank_tag(&msg, end);
    dsq_match_src(m, DSQ_SRC_RANK, 0, NULL, NULL); /* read here: not a source */
    m->body.p = msg;
    m->body.n = (size_t)(end - msg);
    if (dsq_starts(msg, end, DSQ_LIT("Watchdog caught collective operation timeout"))) {
        if (memmem(msg, (size_t)(end - msg), ") ran for ", 10)) {
            dsq_glog_watchdog(m, msg, end);
        } else { /* hard-wrapped (or cut): the handler joins the next line first */
            m->label.p = "nccl_timeout";
            m->label.n = 12;
        }
    }
    return 1;
}

int dsq_glog_is_torchrun(const dsq_glog_hdr *h)
{
    const char *f = h->file.p;
    size_t n = h->file.n;
    if (n < 3 || memcmp(f + n - 3, ".py", 3) != 0)
        return 0;
    for (size_t i = 0; i + 18 <= n; i++)
        if (memcmp(f + i, "torch/distributed/", 18) == 0)
            return 1;
    return 0;
}
