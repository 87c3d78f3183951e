/* Line splitter (see lines.h for the contract).
 *
 * Complete lines inside a fed chunk are handed out in place: no copy. Only a line
 * that straddles two chunks, the last unterminated line, and the kept head of a cut
 * line go through the carry buffer, which is padded so the lexer's sentinel rule
 * holds there too. Line ends are found by the backend of linescan.h chosen when the
 * splitter is made; dsq_linescan_chunk starts each fed chunk, since the scalar
 * backend caches the chunk's next '\n'.
 */
#include "lines.h"

#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"
#include "lazymem.h"

#define DSQ_LINES_DEFAULT_MAX (1u << 20)

struct dsq_lines {
    dsq_lines_params p;
    char *carry;        /* max_line + DSQ_LINES_PAD + 1 bytes */
    size_t carry_len;
    int carry_cut;      /* the carried line already exceeded max_line */
    int skipping;       /* inside the dropped tail of a cut line */
    int last_cr;        /* previous chunk ended with '\r': a leading '\n' belongs to it */
    int after_cr;       /* the next line starts after a lone '\r' */
    dsq_linescan scan;  /* finds the next '\n' or '\r' */
    dsq_lines_stats st;
};

int dsq_lines_new(const dsq_lines_params *params, dsq_lines **out)
{
    dsq_lines *lb = calloc(1, sizeof *lb);
    if (!lb)
        return DSQ_ENOMEM;
    dsq_linescan_init(&lb->scan, DSQ_LINESCAN_AUTO); /* AUTO always succeeds */
    lb->p = *params;
    if (lb->p.max_line == 0)
        lb->p.max_line = DSQ_LINES_DEFAULT_MAX;
    lb->carry = dsq_lazy_alloc(lb->p.max_line + DSQ_LINES_PAD + 1); /* a line's tail at a time */
    if (!lb->carry) {
        free(lb);
        return DSQ_ENOMEM;
    }
    *out = lb;
    return 0;
}

void dsq_lines_free(dsq_lines *lb)
{
    if (!lb)
        return;
    dsq_lazy_free(lb->carry);
    free(lb);
}

void dsq_lines_reset(dsq_lines *lb)
{
    lb->carry_len = 0;
    lb->carry_cut = 0;
    lb->skipping = 0;
    lb->last_cr = 0;
    lb->after_cr = 0;
    memset(&lb->st, 0, sizeof lb->st);
}

const dsq_lines_stats *dsq_lines_stats_get(const dsq_lines *lb) { return &lb->st; }

int dsq_lines_set_backend(dsq_lines *lb, dsq_linescan_backend b)
{
    return dsq_linescan_init(&lb->scan, b);
}

dsq_linescan_backend dsq_lines_backend(const dsq_lines *lb) { return lb->scan.backend; }

/* Hands the carry buffer out as one line, with the sentinel and padding set. */
static int emit_carry(dsq_lines *lb)
{
    char *c = lb->carry;
    c[lb->carry_len] = '\n';
    memset(c + lb->carry_len + 1, 0, DSQ_LINES_PAD);
    unsigned flags = (lb->carry_cut ? DSQ_LINE_CUT : 0) | (lb->after_cr ? DSQ_LINE_AFTER_CR : 0);
    lb->after_cr = 0;
    lb->st.lines++;
    if (lb->carry_cut)
        lb->st.cut++;
    size_t n = lb->carry_len;
    lb->carry_len = 0;
    lb->carry_cut = 0;
    return lb->p.fn(lb->p.ctx, c, n, flags);
}

/* Appends to the carry buffer, keeping at most max_line bytes. */
static void carry_append(dsq_lines *lb, const char *p, size_t n)
{
    size_t room = lb->p.max_line - lb->carry_len;
    if (n > room) {
        n = room;
        lb->carry_cut = 1;
    }
    memcpy(lb->carry + lb->carry_len, p, n);
    lb->carry_len += n;
}

/* Steps past the terminator at eol, swallowing the '\n' of a "\r\n". */
static const char *past_eol(dsq_lines *lb, const char *eol, const char *end)
{
    if (*eol == '\r') {
        if (eol + 1 < end && eol[1] == '\n')
            return eol + 2;
        if (eol + 1 == end)
            lb->last_cr = 1; /* decided by the next chunk's first byte */
        else
            lb->after_cr = 1;
    }
    return eol + 1;
}

/* Finishes a line begun in an earlier chunk. Returns the callback's status; *pp is
 * advanced past the line end, or to end if the line goes on. */
static int finish_carried(dsq_lines *lb, const char **pp, const char *end)
{
    const char *p = *pp;
    const char *eol = dsq_linescan_find(&lb->scan, p, end);
    const char *stop = eol ? eol : end;
    if (!lb->skipping)
        carry_append(lb, p, (size_t)(stop - p));
    if (!eol) {
        *pp = end;
        if (!lb->skipping && lb->carry_cut) {
            lb->skipping = 1; /* deliver the head now; drop the rest until the end */
            return emit_carry(lb);
        }
        return 0;
    }
    int rc = 0;
    if (lb->skipping) /* the head of this cut line was delivered already */
        lb->skipping = 0;
    else
        rc = emit_carry(lb); /* before past_eol: it may flag the next line */
    *pp = past_eol(lb, eol, end);
    return rc;
}

int dsq_lines_feed(dsq_lines *lb, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    const char *p = data, *end = data + len;
    int rc = 0;
    lb->st.bytes += len;
    dsq_linescan_chunk(&lb->scan);
    if (lb->last_cr && p < end && *p == '\n')
        p++;
    else if (lb->last_cr)
        lb->after_cr = 1;
    lb->last_cr = 0;
    if ((lb->carry_len > 0 || lb->skipping || lb->carry_cut) && p < end) {
        rc = finish_carried(lb, &p, end);
        if (rc)
            return rc;
    }
    const size_t max = lb->p.max_line;
    while (p < end) {
        const char *eol = dsq_linescan_find(&lb->scan, p, end);
        if (!eol)
            break;
        size_t n = (size_t)(eol - p);
        if (n <= max) {
            unsigned flags = lb->after_cr ? DSQ_LINE_AFTER_CR : 0;
            lb->after_cr = 0;
            lb->st.lines++;
            rc = lb->p.fn(lb->p.ctx, p, n, flags);
        } else {
            carry_append(lb, p, n);
            rc = emit_carry(lb);
        }
        if (rc)
            return rc;
        p = past_eol(lb, eol, end);
    }
    if (p < end) { /* a partial line: keep it for the next chunk */
        carry_append(lb, p, (size_t)(end - p));
        if (lb->carry_cut) {
            lb->skipping = 1;
            rc = emit_carry(lb);
        }
    }
    return rc;
}

int dsq_lines_finish(dsq_lines *lb)
{
    int rc = 0;
    if (lb->carry_len > 0 && !lb->skipping)
        rc = emit_carry(lb);
    lb->carry_len = 0;
    lb->carry_cut = 0;
    lb->skipping = 0;
    lb->last_cr = 0;
    lb->after_cr = 0;
    return rc;
}
