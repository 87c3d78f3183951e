/* Handlers of the glog and torchrun families (recognizers: grammar/glog.re and
 * grammar/torch.re).
 *
 * glog: ProcessGroupNCCL prints its options either as a block (a header line, then
 * bare "NCCL_ASYNC_ERROR_HANDLING: 1" lines, which glog.re claims on their own
 * shape) or, since torch 2.0, on one line "ProcessGroupNCCL initialization options:
 * K: v, K: v, ...". Each option becomes a run attribute: TIMEOUT(ms) is
 * pg_nccl_timeout_ms, "NCCL version" is nccl_version, an upper-case KEY is
 * pg_nccl.KEY; other pairs (size, global rank, PG Name) are left out.
 *
 * A terminal's hard wrap cuts long lines: a watchdog timeout line that lacks its
 * end (" ran for ") waits for its continuation before its failure is emitted; any
 * other glog line as long as that wrapped one (the terminal's width) claims the
 * next line when no family took it and it does not start with a blank.
 *
 * torchrun: a ChildFailedError report lists failures as entries of key : value
 * lines; the entry under "Root Cause (first observed failure):" ends with its
 * traceback line, where one failure event is emitted with the entry's time and
 * rank, and the host the entry names. The report's other lines (its '=' and '-'
 * rules, the "train.py FAILED" title, the code and exception lines of an entry's
 * traceback) are claimed for the family: the report opens at the exception line
 * "...ChildFailedError: " (a traceback line, which the handler watches for) or at
 * its "Failures:" / "Root Cause" line, and closes at its last '=' rule.
 */
#include "fam_torch.h"

#include <stdio.h>
#include <string.h>

#include "event.h"
#include "num.h"

#define REPORT_MAX_LINES 400
#define REPORT_LOOSE 6 /* unindented lines a report takes after its last key line */

/* Emits one option as an attribute (see the file comment for the names). */
static int pg_option(const dsq_line_ctx *lc, dsq_span key, dsq_span val)
{
    char label[96];
    dsq_emit_args a = {.ev = DSQ_EV_ATTR, .text = val};
    if (key.n == 11 && memcmp(key.p, "TIMEOUT(ms)", 11) == 0) {
        a.label = (dsq_span){"pg_nccl_timeout_ms", 18};
    } else if (key.n == 12 && memcmp(key.p, "NCCL version", 12) == 0) {
        a.label = (dsq_span){"nccl_version", 12};
    } else {
        if (key.n == 0 || key.n > sizeof label - 9 || key.p[0] < 'A' || key.p[0] > 'Z')
            return 0;
        for (size_t i = 0; i < key.n; i++) {
            char c = key.p[i];
            if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
                return 0;
        }
        memcpy(label, "pg_nccl.", 8);
        memcpy(label + 8, key.p, key.n);
        a.label = (dsq_span){label, 8 + key.n};
    }
    if (val.n == 0)
        return 0;
    dsq_mfield f;
    double x;
    const char *stop = NULL;
    if (dsq_num_parse(val.p, val.p + val.n, &x, &stop) == 0 && stop == val.p + val.n) {
        f = (dsq_mfield){{"value", 5}, x, DSQ_U_NONE};
        a.f = &f;
        a.nf = 1;
    }
    return dsq_scan_emit(lc, &a);
}

/* "K: v, K: v, ..." after the one-line header. */
static int pg_option_list(const dsq_line_ctx *lc, const char *p, const char *end)
{
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        const char *colon = memchr(p, ':', (size_t)(e - p));
        if (colon) {
            int rc = pg_option(lc, dsq_trim(p, colon), dsq_trim(colon + 1, e));
            if (rc)
                return rc;
        }
        p = comma ? comma + 1 : end;
    }
    return 0;
}

/* Emits the wrapped watchdog line kept in the state, joined with what came. */
static int watchdog_emit(dsq_glog_state *s, const dsq_line_ctx *lc)
{
    dsq_match t;
    memset(&t, 0, sizeof t);
    dsq_glog_watchdog(&t, s->wd_text, s->wd_text + s->wd_n);
    dsq_line_ctx at = *lc;
    at.host = s->wd_host;
    at.rank = s->wd_rank;
    dsq_emit_args a = {.ev = t.ev, .label = t.label, .text = t.text, .f = t.f, .nf = t.nf,
                       .t_us = s->wd_t_us, .lineno = s->wd_lineno};
    s->wd_pending = 0;
    return dsq_scan_emit(&at, &a);
}

/* A line after a wrapped watchdog line: its continuation (an unclaimed line of
 * the same stream) is appended and claimed; anything else, or the message's end
 * (" ran for "), emits the failure. Returns 1 to claim the line, < 0 on error. */
static int watchdog_wrap(dsq_glog_state *s, const dsq_line_ctx *lc, const dsq_match *m,
                         const char *line, size_t len)
{
    dsq_span t = dsq_trim(line, line + len);
    if (m->family != DSQ_FAM_OTHER || lc->host != s->wd_host || t.n == 0 ||
        s->wd_n + len > sizeof s->wd_text) {
        int rc = watchdog_emit(s, lc);
        return rc < 0 ? rc : 0;
    }
    memcpy(s->wd_text + s->wd_n, line, len);
    s->wd_n += len;
    if (s->wd_pending == 1)
        s->wrap_width = s->wd_len; /* the terminal's width, as this stream's lines see it */
    s->base.claim_level = DSQ_LV_ERROR;
    if (memmem(s->wd_text, s->wd_n, ") ran for ", 10) || ++s->wd_pending > 3) {
        int rc = watchdog_emit(s, lc);
        return rc < 0 ? rc : 1;
    }
    return 1;
}

int dsq_glog_finish(void *state, const dsq_line_ctx *lc)
{
    dsq_glog_state *s = state;
    s->base.active = s->opts = 0;
    return s->wd_pending ? watchdog_emit(s, lc) : 0;
}

int dsq_glog_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                    size_t len)
{
    dsq_glog_state *s = state;
    const char *end = line + len, *b = m->body.p;
    if (s->wd_pending) {
        int rc = watchdog_wrap(s, lc, m, line, len);
        s->base.active = s->wd_pending != 0 || s->opts;
        if (rc)
            return rc;
    }
    if (s->wrap_level) { /* the line after a long glog line cut mid-sentence */
        int level = s->wrap_level;
        s->wrap_level = 0;
        s->base.active = s->wd_pending != 0 || s->opts;
        if (m->family == DSQ_FAM_OTHER && len && line[0] != ' ' && line[0] != '\t' &&
            lc->host == s->wrap_host) {
            s->base.claim_level = level;
            return 1;
        }
    }
    if (m->family == DSQ_FAM_GLOG && !m->ev && s->wrap_width && len == s->wrap_width &&
        m->level != DSQ_LV_NONE && !(m->label.n == 12 && !m->ev)) {
        s->wrap_level = m->level; /* maybe hard-wrapped: see above */
        s->wrap_host = lc->host;
        s->base.active = 1;
    }
    if (m->family == DSQ_FAM_GLOG && !m->ev && m->label.n == 12 && b &&
        memcmp(m->label.p, "nccl_timeout", 12) == 0 && m->body.n <= sizeof s->wd_text) {
        memcpy(s->wd_text, m->body.p, m->body.n); /* a wrapped watchdog line */
        s->wd_n = m->body.n;
        s->wd_pending = 1;
        s->wd_len = len;
        s->wd_host = lc->host;
        s->wd_rank = lc->rank;
        s->wd_t_us = lc->t_us;
        s->wd_lineno = lc->lineno;
        s->base.active = 1;
        return 0;
    }
    if (s->opts) { /* inside an options block: its bare "KEY: value" lines */
        if (m->family == DSQ_FAM_OTHER && dsq_glog_is_option(line, len)) {
            const char *colon = memchr(line, ':', len);
            dsq_line_ctx at = *lc;
            if (at.rank < 0 && s->host == lc->host)
                at.rank = s->rank;
            int rc = pg_option(&at, dsq_trim(line, colon), dsq_trim(colon + 1, end));
            return rc < 0 ? rc : 1; /* the line belongs to the block */
        }
        s->opts = 0;
        s->base.active = s->wd_pending != 0;
    }
    if (m->family != DSQ_FAM_GLOG || !b)
        return 0;
    if (dsq_starts(b, end, DSQ_LIT("ProcessGroupNCCL initialized with following options:"))) {
        s->have = 1;
        s->opts = 1;
        s->base.active = 1;
        s->host = lc->host;
        s->rank = lc->rank;
        return 0;
    }
    if (dsq_starts(b, end, DSQ_LIT("ProcessGroupNCCL initialization options:")))
        return pg_option_list(lc, b + 40, end);
    if (dsq_starts(b, end, DSQ_LIT("ProcessGroupNCCL environments:")))
        return pg_option_list(lc, b + 30, end);
    return 0;
}

/* --- torchrun: the ChildFailedError report -------------------------------- */

static void entry_reset(dsq_torchrun_state *s)
{
    s->t_us = DSQ_TIME_NONE;
    s->nf = 0;
    s->exitcode[0] = 0;
    s->host_n = 0;
}

static void entry_field(dsq_torchrun_state *s, const char *name, size_t n, double v)
{
    if (s->nf < (int)(sizeof s->f / sizeof s->f[0]))
        s->f[s->nf++] = (dsq_mfield){{name, n}, v, DSQ_U_NONE};
}

/* "2024-09-10_14:30:01" (isoformat with '_'; ' ' and 'T' accepted too). */
static int64_t entry_time(dsq_span v)
{
    const char *t = v.p;
    if (v.n < 19 || t[4] != '-' || t[7] != '-' || t[13] != ':' || t[16] != ':')
        return DSQ_TIME_NONE;
    int y = dsq_time_digits(t, 4), mo = dsq_time_digits(t + 5, 2), d = dsq_time_digits(t + 8, 2);
    int h = dsq_time_digits(t + 11, 2), mi = dsq_time_digits(t + 14, 2);
    int s = dsq_time_digits(t + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || mi < 0 || s < 0)
        return DSQ_TIME_NONE;
    return dsq_time_from_civil(y, mo, d, h, mi, s, 0);
}

/* Reads "N" or "N (local_rank: M)" / "N (pid: P)" values into fields. */
static void entry_numbers(dsq_torchrun_state *s, dsq_span v, const char *name, size_t n,
                          const char *inner, size_t inner_n)
{
    const char *end = v.p + v.n, *stop = NULL;
    double x;
    if (dsq_num_parse(v.p, end, &x, &stop) != 0)
        return;
    entry_field(s, name, n, x);
    const char *q = memmem(stop, (size_t)(end - stop), inner, inner_n);
    if (q && dsq_num_parse(q + inner_n, end, &x, NULL) == 0)
        entry_field(s, inner + 1, inner_n - 3, x); /* "(pid: " -> "pid" */
}

static int entry_emit(dsq_torchrun_state *s, const dsq_line_ctx *lc, dsq_span tb)
{
    char text[96];
    dsq_line_ctx at = *lc;
    int is_signal = dsq_starts(tb.p, tb.p + tb.n, DSQ_LIT("Signal ")) ||
                    dsq_starts(tb.p, tb.p + tb.n, DSQ_LIT("signal "));
    dsq_emit_args a = {.ev = DSQ_EV_FAILURE, .f = s->f, .nf = s->nf};
    a.label = is_signal ? (dsq_span){"signal", 6} : (dsq_span){"launcher_exit", 13};
    a.text = tb;
    if (!is_signal && (tb.n == 0 || dsq_starts(tb.p, tb.p + tb.n, DSQ_LIT("<N/A>")) ||
                       dsq_starts(tb.p, tb.p + tb.n, DSQ_LIT("Traceback (")))) {
        int k = snprintf(text, sizeof text, "exitcode: %s", s->exitcode);
        a.text = (dsq_span){text, k > 0 ? (size_t)k : 0};
    }
    for (int i = 0; i < s->nf; i++) {
        int r = dsq_num_small_int(s->f[i].v);
        if (r >= 0 && s->f[i].name.n == 4 && memcmp(s->f[i].name.p, "rank", 4) == 0)
            at.rank = r;
    }
    if (s->t_us != DSQ_TIME_NONE)
        a.t_us = s->t_us;
    a.host = (dsq_span){s->host, s->host_n}; /* the table names the failing host */
    s->section = 0;
    return dsq_scan_emit(&at, &a);
}

/* A rule of the report: a run of '=' (its first and last line) or '-' (between
 * sections), at least 20 long. */
static int report_rule(dsq_span s, char c)
{
    if (s.n < 20)
        return 0;
    for (size_t i = 0; i < s.n; i++)
        if (s.p[i] != c)
            return 0;
    return 1;
}

/* A line of an open ChildFailedError report that no family took: its rules, its
 * "train.py FAILED" title, and the lines of an entry's traceback (code lines, the
 * exception). Returns 1 to claim the line. */
static int report_line(dsq_torchrun_state *s, const char *line, size_t len)
{
    dsq_span t = dsq_trim(line, line + len);
    if (++s->report_lines > REPORT_MAX_LINES) {
        s->report = 0;
        return 0;
    }
    int title = t.n > 7 && memcmp(t.p + t.n - 7, " FAILED", 7) == 0;
    if (s->report == 1) { /* right after the exception line: the opening rule (or title) */
        s->report = report_rule(t, '=') || title ? 2 : 0;
        return s->report == 2;
    }
    if (report_rule(t, '=')) { /* the closing rule */
        s->report = 0;
        return 1;
    }
    if (report_rule(t, '-') || len == 0 || line[0] == ' ' || line[0] == '\t' || title)
        return 1; /* a section rule, a line of an entry (its traceback), the title */
    if (++s->report_loose <= REPORT_LOOSE)
        return 1; /* near the report's keys: an entry retyped without its indent */
    s->report = 0; /* unindented lines of something else: the report was cut */
    return 0;
}

static int ends_with(dsq_span s, const char *lit, size_t n)
{
    return s.n >= n && memcmp(s.p + s.n - n, lit, n) == 0;
}

int dsq_torchrun_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m,
                        const char *line, size_t len)
{
    dsq_torchrun_state *s = state;
    if (m->family == DSQ_FAM_TRACEBACK) { /* "...errors.ChildFailedError: " opens a report */
        if (ends_with(m->label, DSQ_LIT("ChildFailedError")))
            s->report = 1, s->report_lines = 0, s->report_loose = 0;
        s->base.active = s->report != 0;
        return 0;
    }
    if (m->family == DSQ_FAM_OTHER) {
        int claim = s->report ? report_line(s, line, len) : 0;
        s->base.active = s->report != 0;
        s->base.claim_level = DSQ_LV_ERROR;
        return claim;
    }
    if (m->family != DSQ_FAM_TORCHRUN || m->func.n == 0 || m->func.n > 10)
        return 0;
    s->report_loose = 0;
    if (!s->report && ((m->func.n == 4 && memcmp(m->func.p, "root", 4) == 0) ||
                       (m->func.n == 8 && memcmp(m->func.p, "failures", 8) == 0))) {
        s->report = 2; /* a report whose first lines were cut */
        s->report_lines = 0;
        s->base.active = 1;
    }
    dsq_span k = m->func, v = dsq_trim(m->body.p, m->body.p + m->body.n);
#define KEY(lit) (k.n == sizeof lit - 1 && memcmp(k.p, lit, k.n) == 0)
    if (KEY("root")) {
        s->section = 2;
        entry_reset(s);
    } else if (KEY("failures")) {
        s->section = 1;
    } else if (KEY("entry")) {
        entry_reset(s);
    } else if (s->section != 2) {
        return 0;
    } else if (KEY("time")) {
        s->t_us = entry_time(v);
    } else if (KEY("host")) {
        s->host_n = v.n < sizeof s->host ? v.n : sizeof s->host;
        memcpy(s->host, v.p, s->host_n);
    } else if (KEY("rank")) {
        entry_numbers(s, v, "rank", 4, "(local_rank: ", 13);
    } else if (KEY("exitcode")) {
        size_t n = v.n < sizeof s->exitcode - 1 ? v.n : sizeof s->exitcode - 1;
        memcpy(s->exitcode, v.p, n);
        s->exitcode[n] = 0;
        entry_numbers(s, v, "exitcode", 8, "(pid: ", 6);
    } else if (KEY("traceback")) {
        s->report_loose = REPORT_LOOSE; /* the root cause's last key: indented lines only */
        return entry_emit(s, lc, v);
    }
#undef KEY
    return 0;
}
