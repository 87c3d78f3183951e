/* Hugging Face lines: transformers' logger, LLaMA-Factory's, accelerate's padded
 * logger, the example scripts' logging, python's default format for HF loggers,
 * and the metric dicts the Trainer prints bare.
 *
 * Headers (the message follows; level comes from the header):
 *   [INFO|trainer.py:2078] 2024-07-20 21:30:42,543 >> message        transformers
 *   [INFO|2024-09-10 14:27:26] llamafactory.model.adapter:143 >> message  LLaMA-Factory
 *   [INFO     | __main__ ]: message                                    accelerate
 *   11/24/2022 00:51:19 - INFO - name -   message                      example scripts
 *   WARNING:transformers.modeling_utils:message                        python default
 * The python default shape ("LEVEL:name:") is only taken for HF-ecosystem logger
 * names; "WARNING:torch.distributed..." and friends belong to other families. A
 * header glued after a tqdm bar ("...9.96s/it][INFO|...") is found too.
 * Bare lines (no header, level none): "***** train metrics *****" and its
 * "  key = value" lines, "Training completed. ...", PEFT's "trainable params: ...",
 * and the Trainer's messages printed by a formatter-less handler (setup lines,
 * "Saving model checkpoint to ...").
 *
 * Messages with a meaning of their own:
 *   Saving model checkpoint to out/checkpoint-500   -> hf_checkpoint, text = path
 *   trainable params: 4,194,304 || all params: ...  -> attr trainable_params (also bare)
 *   "  Num examples = 19,200,000" (any "Key = number") -> label = key, text = the number
 *     as printed, f[0] named key: no event here; the handler (fam_hf.c) joins the
 *     "***** Running training *****" block into one hf_train_setup event.
 *
 * Metric dicts, printed by the Trainer's progress callback, alone on a line or after
 * a tqdm bar ("...it/s]"), a literal "^M" (cat -v paste) or an editor line number:
 *   {'loss': 1.8731, 'grad_norm': 0.912, 'learning_rate': 9.9e-06, 'epoch': 0.01}
 * A dict is HF's when every value is a number (or a quoted number, tensor(x, ...),
 * nan, inf, or a quoted string, which is skipped), it ends the line, and it has a
 * key "loss", "epoch", "train_loss" or one starting "eval_". Kind: hf_train_end
 * with "train_runtime", hf_eval with an "eval_" key, hf_loss otherwise. Fields are
 * named as the keys; "epoch" goes first so that it survives the event's field cap
 * when a DPO dict carries a dozen keys.
 */
#include <math.h>
#include <string.h>

#include "event.h"
#include "grammar.h"
#include "num.h"

#define HF_MAX_DICT 32

static int level_of(const unsigned char *p)
{
    switch (p[0]) {
    case 'D': return DSQ_LV_DEBUG;
    case 'I': return DSQ_LV_INFO;
    case 'W': return DSQ_LV_WARNING;
    case 'E': return DSQ_LV_ERROR;
    case 'C': case 'F': return DSQ_LV_CRITICAL;
    default: return DSQ_LV_NONE;
    }
}

/* The message of a header line: checkpoint saves, PEFT/LLaMA-Factory parameter
 * counts, and "Key = number" lines. Anything else is a plain HF log line. */
static void message(const char *body, const char *end, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)body, *mar;
    const unsigned char *k0, *v0, *p0;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        sp   = [ \t];
        dnum = [0-9] [0-9,]* ("." [0-9]+)?;

        "Saving model checkpoint to " sp* @p0 [^\n\r]+ {
            const char *p = (const char *)p0, *e = end;
            while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            m->ev = DSQ_EV_HF_CHECKPOINT;
            m->text.p = p;
            m->text.n = (size_t)(e - p);
            for (const char *q = e; q > p; q--)
                if (q - p >= 11 && memcmp(q - 11, "checkpoint-", 11) == 0) {
                    dsq_match_field(m, "checkpoint", 10, q, e);
                    break;
                }
            return;
        }
        "trainable params: " @v0 dnum sp* "||" {
            m->ev = DSQ_EV_ATTR;
            m->label.p = "trainable_params";
            m->label.n = 16;
            const char *stop = dsq_match_field(m, "value", 5, (const char *)v0, end);
            m->text.p = (const char *)v0;
            m->text.n = (size_t)(stop - (const char *)v0);
            return;
        }
        sp* @k0 [A-Za-z] [^=\n\r]* "=" sp+ @v0 dnum sp* {
            if ((const char *)cur != end)
                return;
            const unsigned char *k1 = v0; /* the key ends before the blanks before '=' */
            while (k1[-1] != '=')
                k1--;
            for (k1--; k1 > k0 && (k1[-1] == ' ' || k1[-1] == '\t'); k1--)
                ;
            const char *stop = dsq_match_field(m, (const char *)k0, (size_t)(k1 - k0),
                                               (const char *)v0, end);
            m->label.p = (const char *)k0;
            m->label.n = (size_t)(k1 - k0);
            m->text.p = (const char *)v0;
            m->text.n = (size_t)(stop - (const char *)v0);
            return;
        }
        * { return; }
    */
}

/* --- metric dicts ------------------------------------------------------------ */

typedef struct dict_kv {
    const char *k;
    size_t kn;
    double v;
    const char *vp, *vstop; /* where the number was read */
} dict_kv;

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

static int has_prefix(const char *p, size_t n, const char *pre)
{
    size_t pn = strlen(pre);
    return n >= pn && memcmp(p, pre, pn) == 0;
}

/* A number as Python prints one: decimal, exponent, nan, inf, -inf. Returns the
 * position after it, or NULL. */
static const char *py_number(const char *p, const char *end, double *v)
{
    const char *stop;
    int neg = p < end && *p == '-';
    const char *w = p + neg;
    if (end - w >= 3 && (memcmp(w, "nan", 3) == 0 || memcmp(w, "inf", 3) == 0)) {
        *v = w[0] == 'n' ? (double)NAN : neg ? -(double)INFINITY : (double)INFINITY;
        return w + 3;
    }
    if (dsq_num_parse(p, end, v, &stop) != 0 || stop[-1] == ',')
        return NULL;
    return stop;
}

/* A value: number, 'number' (transformers >= 4.48 prints floats as f"{v:.4g}"
 * strings), tensor(number, device=...), or another quoted string (*numeric = 0).
 * Returns the position after it, or NULL if it is none of these. */
static const char *dict_value(const char *p, const char *end, double *v, int *numeric,
                              const char **vp, const char **vstop)
{
    *numeric = 1;
    if (end - p >= 7 && memcmp(p, "tensor(", 7) == 0) {
        const char *q = py_number(p + 7, end, v);
        *vp = p + 7, *vstop = q;
        while (q && q < end && *q != ')' && *q != '{' && *q != '}')
            q++;
        return q && q < end && *q == ')' ? q + 1 : NULL;
    }
    if (p < end && *p == '\'') {
        const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));
        if (!q)
            return NULL;
        *numeric = py_number(p + 1, q, v) == q;
        *vp = p + 1, *vstop = q;
        return q + 1;
    }
    *vp = p;
    return *vstop = py_number(p, end, v);
}

/* Parses "{'k': v, ...}" at p up to the end of the line into kv; returns the pair
 * count (numeric ones only), or -1 when it is not such a dict. */
static int dict_parse(const char *p, const char *end, dict_kv *kv)
{
    int n = 0;
    p++; /* '{' */
    for (;;) {
        if (p >= end || *p != '\'')
            return -1;
        const char *k = p + 1;
        const char *q = memchr(k, '\'', (size_t)(end - k));
        if (!q || q == k || end - q < 3 || q[1] != ':' || q[2] != ' ')
            return -1;
        double v = 0;
        int numeric;
        const char *vp = NULL, *vstop = NULL;
        p = dict_value(skip_blanks(q + 2, end), end, &v, &numeric, &vp, &vstop);
        if (!p)
            return -1;
        if (numeric && n < HF_MAX_DICT)
            kv[n++] = (dict_kv){k, (size_t)(q - k), v, vp, vstop};
        if (p < end && *p == '}')
            return skip_blanks(p + 1, end) == end ? n : -1;
        if (end - p < 2 || p[0] != ',' || p[1] != ' ')
            return -1;
        p += 2;
    }
}

/* Classifies a parsed dict; 0 when it is not one of the Trainer's. */
static int dict_kind(const dict_kv *kv, int n)
{
    int hf = 0, eval = 0;
    for (int i = 0; i < n; i++) {
        const char *k = kv[i].k;
        size_t kn = kv[i].kn;
        if (kn == 13 && memcmp(k, "train_runtime", 13) == 0)
            return DSQ_EV_HF_TRAIN_END;
        eval |= has_prefix(k, kn, "eval_");
        hf |= (kn == 4 && memcmp(k, "loss", 4) == 0) || (kn == 5 && memcmp(k, "epoch", 5) == 0) ||
              (kn == 10 && memcmp(k, "train_loss", 10) == 0);
    }
    return eval ? DSQ_EV_HF_EVAL : hf ? DSQ_EV_HF_LOSS : 0;
}

/* Whether the text ending at e ends a tqdm bar ("[00:11<08:40,  1.88it/s]") or a
 * literal "^M" (a carriage return shown by cat -v). */
static int after_bar(const char *line, const char *e)
{
    if (e - line >= 2 && e[-2] == '^' && e[-1] == 'M')
        return 1;
    return e - line >= 5 && (memcmp(e - 5, "it/s]", 5) == 0 || memcmp(e - 5, "s/it]", 5) == 0);
}

/* What may come before a dict: nothing, a progress bar, a literal "^M", or an
 * editor's line number; other text means another family's line. */
static int dict_lead(const char *line, const char *brace)
{
    const char *e = brace;
    while (e > line && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (e == line || after_bar(line, e))
        return 1;
    for (const char *q = line; q < e; q++)
        if (!(*q == ' ' || *q == '\t' || (*q >= '0' && *q <= '9')))
            return 0;
    return 1;
}

/* A metric dict at the end of the line, after a progress bar or line number. */
static int metric_dict(const char *line, size_t len, dsq_match *m)
{
    const char *end = line + len, *p = line;
    const char *brace;
    while ((brace = memchr(p, '{', (size_t)(end - p))) != NULL) {
        if (brace + 1 < end && brace[1] == '\'')
            break;
        p = brace + 1;
    }
    if (!brace || !dict_lead(line, brace))
        return 0;
    dict_kv kv[HF_MAX_DICT];
    int n = dict_parse(brace, end, kv);
    int ev = n > 0 ? dict_kind(kv, n) : 0;
    if (!ev)
        return 0;
    m->ev = ev;
    for (int i = 0; i < n; i++) /* epoch first: see the top of the file */
        if (kv[i].kn == 5 && memcmp(kv[i].k, "epoch", 5) == 0)
            dsq_match_value_at(m, kv[i].k, kv[i].kn, kv[i].v, DSQ_U_NONE, kv[i].vp, kv[i].vstop);
    for (int i = 0; i < n; i++)
        if (!(kv[i].kn == 5 && memcmp(kv[i].k, "epoch", 5) == 0))
            dsq_match_value_at(m, kv[i].k, kv[i].kn, kv[i].v, DSQ_U_NONE, kv[i].vp, kv[i].vstop);
    m->body.p = brace;
    m->body.n = (size_t)(end - brace);
    return 1;
}

/* --- headers ------------------------------------------------------------------ */

/* "MM/DD/YYYY HH:MM:SS" at t. */
static int64_t us_time(const unsigned char *t)
{
    const char *s = (const char *)t;
    return dsq_time_from_civil(dsq_time_digits(s + 6, 4), dsq_time_digits(s, 2),
                               dsq_time_digits(s + 3, 2), dsq_time_digits(s + 11, 2),
                               dsq_time_digits(s + 14, 2), dsq_time_digits(s + 17, 2), 0);
}

/* The logger headers; 0 when the line starts with none of them. */
static int header(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *lv, *ts, *f0, *f1;
    const char *end = line + len;
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
        level = "DEBUG" | "INFO" | "WARNING" | "WARN" | "ERROR" | "CRITICAL" | "FATAL";
        date  = d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2};
        hfpkg = "transformers" | "accelerate" | "trl" | "peft" | "datasets"
              | "huggingface_hub" | "llamafactory" | "sentence_transformers" | "diffusers";

        "[" @lv level "|" @f0 [^|\]\n\r:]+ ":" d+ @f1 "]" " "+ @ts date "," d{3} " >>" " "? {
            m->t_us = dsq_time_stamp_ms((const char *)ts);
            dsq_match_src(m, DSQ_SRC_STAMP_MS, 0, (const char *)ts, (const char *)ts + 23);
            goto header;
        }
        "[" @lv level "|" @ts date "]" " "+ @f0 [^ :\n\r]+ ":" d+ @f1 " >>" " "? {
            m->t_us = dsq_time_stamp_s((const char *)ts);
            dsq_match_src(m, DSQ_SRC_STAMP_S, 0, (const char *)ts, (const char *)ts + 19);
            goto header;
        }
        "[" @lv level " "* "|" " "+ @f0 [^ \]\n\r]+ @f1 " "* "]:" " "? { goto header; }
        @ts d{2} "/" d{2} "/" d{4} " " d{2} ":" d{2} ":" d{2} " - " @lv level " - "
        @f0 [^ \n\r]+ @f1 " - " " "* {
            m->t_us = us_time(ts);
            goto header;
        }
        @lv level ":" @f0 hfpkg ("." [^ :\n\r]+)? @f1 ":" { goto header; }
        * { return 0; }
    */
header:
    m->level = level_of(lv);
    m->func.p = (const char *)f0;
    m->func.n = (size_t)(f1 - f0);
    m->body.p = (const char *)cur;
    m->body.n = (size_t)(end - (const char *)cur);
    message(m->body.p, end, m);
    return 1;
}

/* Trainer output printed without a logger header: print()ed metric blocks, PEFT's
 * parameter count, and logger messages when no formatter is set (transformers'
 * default handler prints the bare message). A bare "***** Running training *****"
 * is not taken: DeepSpeed-Chat prints the same words; the handler opens a bare
 * block at its "Num examples" line instead. 0 when the line is none of these. */
static int bare(const char *line, size_t len, dsq_match *m)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const char *end = line + len;
    (void)mar;
    m->body.p = line;
    m->body.n = len;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        setup = "Num examples" | "Num Epochs" | "Instantaneous batch size per device"
              | "Total train batch size" | "Gradient Accumulation steps"
              | "Total optimization steps" | "Number of trainable parameters" | "Batch size";
        mval  = "-"? dnum | d+ ":" d{2} ":" d{2} ("." d+)? | d+ ("GF" | "MB");

        "trainable params: " d | "Saving model checkpoint to " | " "+ setup [^=\n\r]* "= " {
            message(line, end, m);
            return 1;
        }
        "***** " [a-z]+ " metrics *****"
        | "Training completed. Do not forget to share your model" { return 1; }
        "  " [a-z] [a-z0-9_/]* " "+ "= " " "* mval sp* { return (const char *)cur == end; }
        * { return 0; }
    */
}

/* A header glued after a progress bar that ended without a '\r' ("...9.96s/it]
 * [INFO|...", or "...]^M[INFO|..." in a cat -v paste). */
static int glued_header(const char *line, size_t len, dsq_match *m)
{
    const char *end = line + len, *p = line + 1;
    const char *b;
    while (p < end && (b = memchr(p, '[', (size_t)(end - p))) != NULL) {
        if (after_bar(line, b) && header(b, (size_t)(end - b), m))
            return 1;
        p = b + 1;
    }
    return 0;
}

int dsq_gram_hf(const char *line, size_t len, dsq_match *m)
{
    if (!header(line, len, m) && !bare(line, len, m) && !metric_dict(line, len, m) &&
        !glued_header(line, len, m))
        return 0;
    m->family = DSQ_FAM_HF;
    m->kind = DSQ_MK_NONE; /* not a prefix layer, whatever peeled before us said */
    return 1;
}
