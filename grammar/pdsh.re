/* pdsh host prefix: "gpu009: ", "worker-5: ", "10.0.0.7: ".
 *
 * pdsh (and DeepSpeed's multi-node runner, which uses it) prefixes each line with
 * the host name and ": ". Words like "RuntimeError: " or "NCCL_DEBUG: " have the
 * same shape, so a named host must contain a letter and a digit or a '-'; a host
 * without letters must be a dotted IPv4 address (bare digits are srun --label,
 * "0.12.2" is a version). "localhost" is the one letters-only name accepted: it is
 * common in DeepSpeed hostfiles. Underscores never occur in host names (RFC 952).
 * Letters-only names and lookalikes ("bf16: true", "step-40: loss=2.1") are
 * returned as maybe-hosts (2): the scanner decides by what follows.
 */
#include <string.h>

#include "grammar.h"

/* Words that, followed by digits or "-digits", name a dtype, a hash, a version or
 * a training counter rather than a host ("bf16", "sha256", "v2", "step-40"). */
static int lookalike_stem(const unsigned char *p, size_t n)
{
#define S(lit) {lit, sizeof lit - 1}
    static const struct {
        const char *s;
        size_t n;
    } stems[] = {
        S("bf"), S("fp"), S("int"), S("uint"), S("float"), S("sha"), S("md"), S("v"),
        S("step"), S("steps"), S("epoch"), S("iter"), S("iteration"), S("checkpoint"),
        S("layer"), S("layers"), S("block"), S("stage"), S("batch"), S("sample"),
        S("python"), S("py"), S("cuda"), S("cu"), S("sm"), S("tf"), S("e"), S("x"), S("top"),
        S("version"), S("rc"), S("loss"), S("lr"), S("test"), S("train"), S("eval"), S("utf"),
        S("ckpt"), S("gfx"),
    };
#undef S
    if (n > 10 || *p < 'a' || *p > 'z') /* every stem is short and lower-case */
        return 0;
    for (size_t i = 0; i < sizeof stems / sizeof *stems; i++)
        if (stems[i].n == n && stems[i].s[0] == (char)*p && memcmp(stems[i].s, p, n) == 0)
            return 1;
    return 0;
}

/* A name from the generic rule: 1 for a sure host, letters plus a digit or a '-'
 * ("gpu009", "worker-5"); 2 for a name that may be a host or not: letters only
 * ("brutasse", but also "RuntimeError", "Warning") or a lookalike ("bf16",
 * "step-40"): the scanner takes those only when what follows is a log line. */
static int named_host(const unsigned char *p, const unsigned char *end)
{
    int digit = 0, dash = 0, alpha = 0;
    const unsigned char *stem_end = NULL;
    for (const unsigned char *q = p; q < end; q++) {
        int d = *q >= '0' && *q <= '9';
        if ((d || *q == '-' || *q == '.') && !stem_end)
            stem_end = q;
        digit |= d;
        dash |= *q == '-';
        alpha |= (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z');
    }
    if (!alpha)
        return 0;
    if (!digit && !dash)
        return 2;
    if (stem_end && lookalike_stem(p, (size_t)(stem_end - p)))
        return 2;
    return 1;
}

int dsq_gram_pdsh_dfa(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *h0, *h1;
    int sure = 1;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        alnum = [A-Za-z0-9];
        host  = alnum [A-Za-z0-9.-]*;
        octet = [0-9]{1,3};

        @h0 "localhost" @h1 ": "            { goto found; }
        @h0 octet ("." octet){3} @h1 ": "   { goto found; }
        @h0 host @h1 ": "                   { sure = named_host(h0, h1); if (sure) goto found; return 0; }
        *                                   { return 0; }
    */
found:
    m->kind = DSQ_MK_PREFIX;
    m->host.p = (const char *)h0;
    m->host.n = (size_t)(h1 - h0);
    m->body.p = (const char *)cur;
    m->body.n = len - (size_t)(cur - (const unsigned char *)line);
    return sure;
}

/* Whether the first ':' of [p, end) is followed by a blank: a host holds no ':', so
 * a prefix needs both (most lines are NCCL's "gpu0871:48869:48940 [0] ...", whose
 * first ':' is followed by the pid). */
static int colon_blank(const char *p, const char *end)
{
    const char *c = dsq_find_any(p, end, DSQ_LIT(":"));
    return c + 1 < end && c[1] == ' ';
}

/* Every rule starts with a letter or a digit and needs ": " after the host: a line
 * without them is no prefix, told without the DFA. */
int dsq_gram_pdsh(const char *line, size_t len, dsq_match *m)
{
    if (!len || !dsq_gram_host_first((unsigned char)line[0]) || !colon_blank(line, line + len))
        return 0;
    return dsq_gram_pdsh_dfa(line, len, m);
}
