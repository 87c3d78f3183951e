/* pdsh host prefix: "gpu009: ", "worker-5: ", "10.0.0.7: ".
 *
 * pdsh (and DeepSpeed's multi-node runner, which uses it) prefixes each line with
 * the host name and ": ". Words like "RuntimeError: " or "NCCL_DEBUG: " have the
 * same shape, so a named host must contain a letter and a digit or a '-'; a host
 * without letters must be a dotted IPv4 address (bare digits are srun --label,
 * "0.12.2" is a version). "localhost" is the one letters-only name accepted: it is
 * common in DeepSpeed hostfiles. Underscores never occur in host names (RFC 952).
 */
#include "grammar.h"

/* A name from the generic rule: letters plus a digit or a '-' ("gpu009", "worker-5"),
 * so words like "RuntimeError" or "Warning" are not taken for hosts. */
static int named_host(const unsigned char *p, const unsigned char *end)
{
    int digit = 0, dash = 0, alpha = 0;
    for (; p < end; p++) {
        digit |= *p >= '0' && *p <= '9';
        dash |= *p == '-';
        alpha |= (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z');
    }
    return alpha && (digit || dash);
}

int dsq_gram_pdsh(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *h0, *h1;
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
        @h0 host @h1 ": "                   { if (named_host(h0, h1)) goto found; return 0; }
        *                                   { return 0; }
    */
found:
    m->kind = DSQ_MK_PREFIX;
    m->host.p = (const char *)h0;
    m->host.n = (size_t)(h1 - h0);
    m->body.p = (const char *)cur;
    m->body.n = len - (size_t)(cur - (const unsigned char *)line);
    return 1;
}
