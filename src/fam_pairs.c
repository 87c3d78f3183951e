/* "name: value | name: value" splitting (see fam_pairs.h). Segments are cut at
 * '|', names are what precedes the first ':' of a segment, trimmed of blanks; the
 * value must start with a number (sign, digit or '.'), other segments ("eta:
 * 0:11:00" aside, a bare "time (ms)" head) are skipped. Nothing is allocated and
 * nothing past end is read. */
#include "fam_pairs.h"

#include <string.h>

#include "num.h"

static int blank(char c) { return c == ' ' || c == '\t'; }

/* The pair in s..e ("  lm loss: 7.1E+00 "), or 0 when the segment has none. */
static int one_pair(const char *s, const char *e, dsq_pair *out)
{
    const char *colon = memchr(s, ':', (size_t)(e - s));
    if (!colon)
        return 0;
    const char *n0 = s, *n1 = colon, *v = colon + 1;
    while (n0 < n1 && blank(*n0))
        n0++;
    while (n1 > n0 && blank(n1[-1]))
        n1--;
    while (v < e && blank(*v))
        v++;
    if (n1 == n0 || v >= e)
        return 0;
    if (!((*v >= '0' && *v <= '9') || *v == '-' || *v == '+' || *v == '.'))
        return 0;
    out->name.p = n0;
    out->name.n = (size_t)(n1 - n0);
    out->val = v;
    return 1;
}

int dsq_pairs_pipe(const char *p, const char *end, dsq_pair *out, int max)
{
    int n = 0;
    while (p < end && n < max) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        const char *e = bar ? bar : end;
        n += one_pair(p, e, &out[n]);
        p = bar ? bar + 1 : end;
    }
    return n;
}

int dsq_pairs_name_unit(dsq_span name)
{
    if (name.n < 4 || name.p[name.n - 1] != ')')
        return DSQ_U_NONE;
    const char *open = NULL;
    for (size_t i = name.n - 1; i-- > 0;)
        if (name.p[i] == '(') {
            open = name.p + i + 1;
            break;
        }
    if (!open)
        return DSQ_U_NONE;
    return (int)dsq_unit_parse(open, (size_t)(name.p + name.n - 1 - open));
}
