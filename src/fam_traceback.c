/* Traceback family handler (recognizer: grammar/traceback.re).
 *
 * Events: each exception line ("RuntimeError: CUDA out of memory. ...") gives one
 * traceback event (label = exception type, text = message) and, unless the
 * exception is only a consequence reported elsewhere, one failure classified by
 * dsq_tb_classify (with the OOM numbers for cuda_oom). A C++ "what():" line gives
 * a failure only. Exception lines are counted even when their "Traceback" line
 * was cut off.
 *
 * Ranks without prefixes print their tracebacks at the same time, so starts and
 * exception lines interleave. The state counts, per (host, rank) stream, the
 * "Traceback (most recent call last):" lines not yet closed by an exception line;
 * each exception line closes one. Tracebacks still open at the end of the stream
 * (a log cut short, an exception line of an unknown shape) become label-less
 * traceback events, so every traceback is one event. The table is fixed-size; a
 * new stream beyond it evicts the stream seen least recently, flushing it.
 */
#include "fam_traceback.h"

#include <string.h>

#include "event.h"
#include "num.h"

const char *dsq_tb_classify(dsq_span type, dsq_span msg)
{
    if (dsq_span_ends(type, DSQ_LIT("ChildFailedError")))
        return NULL; /* the launcher's report: its table is the failure */
    if (dsq_span_ends(type, DSQ_LIT("OutOfMemoryError")) || dsq_span_has(msg, DSQ_LIT("CUDA out of memory")) ||
        dsq_span_has(msg, DSQ_LIT("HIP out of memory")) || dsq_span_has(msg, DSQ_LIT("CUDA error: out of memory")))
        return "cuda_oom";
    if (dsq_span_has(msg, DSQ_LIT("Watchdog caught collective operation timeout")))
        return type.n == 6 && memcmp(type.p, "what()", 6) == 0 ? NULL : "nccl_timeout";
    if (dsq_span_has(msg, DSQ_LIT("NCCL error")) || dsq_span_has(msg, DSQ_LIT("ncclRemoteError")) ||
        dsq_span_has(msg, DSQ_LIT("ncclSystemError")) || dsq_span_has(msg, DSQ_LIT("ncclInternalError")) ||
        dsq_span_has(msg, DSQ_LIT("ncclUnhandledCudaError")) || dsq_span_has(msg, DSQ_LIT("ncclInvalidUsage")) ||
        dsq_span_ends(type, DSQ_LIT("DistBackendError")) || dsq_span_has(msg, DSQ_LIT("NCCL communicator")))
        return "nccl_error";
    if (dsq_span_has(msg, DSQ_LIT("CUDA error")) || dsq_span_has(msg, DSQ_LIT("HIP error")) ||
        dsq_span_has(msg, DSQ_LIT("illegal memory access")) || dsq_span_has(msg, DSQ_LIT("ECC error")) ||
        dsq_span_has(msg, DSQ_LIT("CUBLAS_STATUS_")) || dsq_span_has(msg, DSQ_LIT("CUDNN_STATUS_")) ||
        dsq_span_has(msg, DSQ_LIT("device-side assert")) || dsq_span_has(msg, DSQ_LIT("cuDNN error")))
        return "cuda_error";
    return "exception";
}

/* Parses "N UNIT" at p into f; "bytes" is B. Returns the position after, or NULL. */
static const char *amount(const char *p, const char *end, const char *name, size_t name_n,
                          dsq_mfield *f)
{
    double v;
    const char *stop = NULL;
    if (dsq_num_parse(p, end, &v, &stop) != 0)
        return NULL;
    const char *u = stop;
    while (u < end && *u == ' ')
        u++;
    const char *ue = u;
    while (ue < end && ((*ue >= 'A' && *ue <= 'Z') || (*ue >= 'a' && *ue <= 'z')))
        ue++;
    int unit = (ue - u == 5 && memcmp(u, "bytes", 5) == 0) ? DSQ_U_B
                                                            : (int)dsq_unit_parse(u, (size_t)(ue - u));
    *f = (dsq_mfield){{name, name_n}, v, (uint8_t)unit};
    return unit != DSQ_U_NONE ? ue : stop;
}

/* Old format: "(GPU 0; 15.78 GiB total capacity; 1.2 GiB already allocated; 0 bytes
 * free; 14 MiB cached)": each "N UNIT words" part is a field named by its words. */
static int oom_parts(const char *p, const char *end, dsq_mfield *f, int n, int max)
{
    while (p < end && *p != ')' && n < max) {
        while (p < end && *p == ' ')
            p++;
        const char *e = p;
        while (e < end && *e != ';' && *e != ')')
            e++;
        if (dsq_span_starts((dsq_span){p, (size_t)(e - p)}, DSQ_LIT("GPU "))) {
            if (amount(p + 4, e, "GPU", 3, &f[n]))
                n++;
        } else {
            const char *w = amount(p, e, "", 0, &f[n]);
            while (w && w < e && *w == ' ')
                w++;
            if (w && w < e) {
                f[n].name = (dsq_span){w, (size_t)(e - w)};
                n++;
            }
        }
        p = e < end && *e == ';' ? e + 1 : e;
    }
    return n;
}

int dsq_tb_oom_fields(dsq_span msg, dsq_mfield *f, int max)
{
    const char *end = msg.p + msg.n, *p;
    int n = 0;
    if (max <= 0)
        return 0;
    if ((p = memmem(msg.p, msg.n, "Tried to allocate ", 18)) &&
        (p = amount(p + 18, end, "tried to allocate", 17, &f[n])))
        n++;
    if (!p)
        return n;
    while (p < end && *p == ' ')
        p++;
    if (p < end && *p == '(')
        return oom_parts(p + 1, end, f, n, max);
    static const struct {
        const char *lit;
        size_t n;
        const char *name;
    } after[] = {
        {DSQ_LIT("GPU "), "GPU"},
        {DSQ_LIT("total capacity of "), "total capacity"},
        {DSQ_LIT(" of which "), "free"},
        {DSQ_LIT("Of the allocated memory "), "allocated by PyTorch"},
        {DSQ_LIT(" is allocated by PyTorch, and "), "reserved by PyTorch but unallocated"},
    };
    for (size_t i = 0; i < sizeof after / sizeof after[0] && n < max; i++) {
        const char *q = memmem(p, (size_t)(end - p), after[i].lit, after[i].n);
        if (q && amount(q + after[i].n, end, after[i].name, strlen(after[i].name), &f[n]))
            n++;
    }
    return n;
}

/* The slot of (host, rank); with create, a new one (evicting the least recently
 * used stream, whose open tracebacks are flushed). */
static dsq_tb_slot *slot_for(dsq_tb_state *s, const dsq_line_ctx *lc, int create, int *rc);

static int flush_slot(dsq_tb_slot *sl, const dsq_line_ctx *lc)
{
    dsq_line_ctx at = *lc;
    at.host = sl->host;
    at.rank = sl->rank;
    dsq_emit_args a = {.ev = DSQ_EV_TRACEBACK, .t_us = sl->t_us, .lineno = sl->lineno};
    for (; sl->pending > 0; sl->pending--) {
        int rc = dsq_scan_emit(&at, &a);
        if (rc)
            return rc;
    }
    return 0;
}

static dsq_tb_slot *slot_for(dsq_tb_state *s, const dsq_line_ctx *lc, int create, int *rc)
{
    dsq_tb_slot *free_slot = NULL, *oldest = &s->slot[0];
    for (int i = 0; i < DSQ_TB_SLOTS; i++) {
        dsq_tb_slot *sl = &s->slot[i];
        if (sl->pending && sl->host == lc->host && sl->rank == lc->rank)
            return sl;
        if (!sl->pending && !free_slot)
            free_slot = sl;
        if (sl->lineno < oldest->lineno)
            oldest = sl;
    }
    if (!create)
        return NULL;
    if (!free_slot) {
        *rc = flush_slot(oldest, lc);
        free_slot = oldest;
    }
    *free_slot = (dsq_tb_slot){lc->host, lc->rank, 0, lc->t_us, lc->lineno};
    return free_slot;
}

/* An exception line (or a C++ what()): the traceback event and the failure. */
static int exception_line(dsq_tb_state *s, const dsq_line_ctx *lc, const dsq_match *m)
{
    dsq_span type = m->label, msg = m->text;
    int is_what = type.n == 6 && memcmp(type.p, "what()", 6) == 0, rc = 0;
    if (!is_what) {
        if (type.n > 4 && memcmp(type.p, "nccl", 4) == 0 && type.p[4] >= 'A' && type.p[4] <= 'Z')
            return 0; /* "ncclSystemError: ..." continues an NCCL what() message */
        dsq_tb_slot *sl = slot_for(s, lc, 0, &rc);
        if (sl)
            sl->pending--;
        dsq_emit_args a = {.ev = DSQ_EV_TRACEBACK, .label = type, .text = msg};
        if ((rc = dsq_scan_emit(lc, &a)))
            return rc;
    }
    const char *cls = dsq_tb_classify(type, msg);
    if (!cls)
        return 0;
    dsq_mfield f[DSQ_MATCH_MAXF];
    dsq_emit_args a = {.ev = DSQ_EV_FAILURE, .label = {cls, strlen(cls)}, .text = msg, .f = f};
    if (strcmp(cls, "cuda_oom") == 0)
        a.nf = dsq_tb_oom_fields(msg, f, 8);
    return dsq_scan_emit(lc, &a);
}

/* Whether an unrecognized line is part of a traceback body: a source line under
 * a frame (indented four spaces) or Python 3.11's caret line ("    ^^^^^"). */
static int code_line(const char *line, size_t len)
{
    return len >= 5 && memcmp(line, "    ", 4) == 0;
}

static int any_pending(const dsq_tb_state *s)
{
    for (int i = 0; i < DSQ_TB_SLOTS; i++)
        if (s->slot[i].pending)
            return 1;
    return 0;
}

int dsq_tb_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                  size_t len)
{
    dsq_tb_state *s = state;
    if (m->family == DSQ_FAM_OTHER) { /* only while a traceback or frame is open (active) */
        int code = code_line(line, len);
        if (!code)
            s->after_frame = 0;
        s->base.active = s->after_frame || any_pending(s);
        return code;
    }
    if (m->family != DSQ_FAM_TRACEBACK)
        return 0;
    /* a frame line ("  File ..., line 8, in main"): the code lines under it are the
     * traceback's even when its start was cut off (an excerpt that begins mid-way) */
    s->after_frame = m->func.n > 0;
    if (s->after_frame)
        s->base.active = 1;
    if (m->label.n) {
        int rc = exception_line(s, lc, m);
        s->base.active = any_pending(s);
        return rc;
    }
    if (dsq_span_starts(m->body, DSQ_LIT("Traceback (most recent call last):"))) {
        int rc = 0;
        dsq_tb_slot *sl = slot_for(s, lc, 1, &rc);
        if (sl->pending++ == 0) {
            sl->t_us = lc->t_us;
            sl->lineno = lc->lineno;
        }
        s->base.active = 1;
        return rc;
    }
    return 0;
}

int dsq_tb_finish(void *state, const dsq_line_ctx *lc)
{
    dsq_tb_state *s = state;
    for (int i = 0; i < DSQ_TB_SLOTS; i++) {
        int rc = flush_slot(&s->slot[i], lc);
        if (rc)
            return rc;
    }
    return 0;
}

int dsq_pywarn_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m,
                      const char *line, size_t len)
{
    dsq_pywarn_state *st = state;
    if (m->family == DSQ_FAM_PYWARN) {
        st->base.active = 1;
        st->host = lc->host;
        st->rank = lc->rank;
        return 0;
    }
    st->base.active = 0;
    if (m->family != DSQ_FAM_OTHER || lc->host != st->host || lc->rank != st->rank ||
        len < 3 || line[0] != ' ')
        return 0;
    dsq_span t = dsq_trim(line, line + len);
    if (t.n == 0)
        return 0;
    st->base.claim_level = DSQ_LV_WARNING;
    return 1;
}
