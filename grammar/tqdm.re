/* Progress bars (tqdm and its look-alikes), printed between log lines:
 *   Loading checkpoint shards:  33%|###3      | 1/3 [00:01<00:03,  1.55s/it]
 *     1%|          | 1/101 [00:20<34:51, 20.91s/it]
 *   100% 1344997306/1344997306 [01:36<00:00, 13866079.69B/s]   (Colab, no bar)
 *   Generating train split: 24000 examples [00:02, 13070.82 examples/s]
 * A line is a bar when it ends (blanks aside) with tqdm's status bracket: elapsed
 * time, optionally "<" remaining time (or "?"), a comma and a rate (the next print's
 * prefix tag may follow, "...examples/s][trainer0|0]:", when the bar printed no
 * line end). A bar with a
 * logger line glued after it does not end so: the scanner finds that line (see
 * scan.c). Registered last: only lines no other family took are looked at, and
 * the search starts from the line's end. No event: bars are counted as lines.
 */
#include <string.h>

#include "grammar.h"

int dsq_gram_tqdm(const char *line, size_t len, dsq_match *m)
{
    const char *end = line + len;
    while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (end - line >= 12 && end[-1] == ':' && end[-2] == ']') {
        /* the next print's prefix tag, glued after the bar ("...[trainer0|0]:") */
        const char *o = end - 2;
        while (o > line && end - o < 40 && *o != '[' && *o != ' ')
            o--;
        if (*o == '[')
            end = o;
    }
    if (end - line < 10 || end[-1] != ']')
        return 0;
    const char *open = end - 1;
    while (open > line && *open != '[')
        open--;
    if (*open != '[' || open == line)
        return 0;
    const unsigned char *cur = (const unsigned char *)open, *mar;
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:sentinel = 10;

        d  = [0-9];
        tm = d+ ":" d{2} (":" d{2})?;

        "[" tm ("<" (tm | "?"))? "," [ ]* [^\]\n\r]* "]" { goto bar; }
        * { return 0; }
    */
bar:
    if ((const char *)cur != end)
        return 0;
    m->family = DSQ_FAM_TQDM;
    m->body.p = line;
    m->body.n = len;
    return 1;
}
