/* pdsh host prefix: "gpu009: ", "worker-5: ", "10.0.0.7: ".
 *
 * pdsh (and DeepSpeed's multi-node runner, which uses it) prefixes each line with
 * the host name and ": ". Words like "RuntimeError: " or "NCCL_DEBUG: " have the
 * same shape, so a host must contain a digit or a '-' and must not be digits only
 * (that is srun --label). Underscores never occur in host names (RFC 952).
 */
#include <string.h>

#include "grammar.h"

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

        @h0 host @h1 ": " { goto found; }
        *                 { return 0; }
    */
found:;
    int digit = 0, dash = 0, alpha = 0;
    for (const unsigned char *q = h0; q < h1; q++) {
        digit |= *q >= '0' && *q <= '9';
        dash |= *q == '-';
        alpha |= (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z');
    }
    if (!(digit || dash) || (!alpha && !memchr(h0, '.', (size_t)(h1 - h0))))
        return 0;
    m->kind = DSQ_MK_PREFIX;
    m->host.p = (const char *)h0;
    m->host.n = (size_t)(h1 - h0);
    m->body.p = (const char *)cur;
    m->body.n = len - (size_t)(cur - (const unsigned char *)line);
    return 1;
}
