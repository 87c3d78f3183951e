/* HF family handler: the multi-line parts of HF output.
 *
 * - The Trainer's "***** Running training *****" block: the header line, then one
 *   "  Key = number" line each (Num examples, Num Epochs, Instantaneous batch size
 *   per device, Total train batch size (w. parallel, distributed & accumulation),
 *   Gradient Accumulation steps, Total optimization steps, Number of trainable
 *   parameters; versions differ in which they print). It becomes one hf_train_setup
 *   event at the header's time and line, with the fields named as printed; four of
 *   them are also run attributes, emitted at their own lines. Printed bare (no
 *   logger formatter) the block opens at its "Num examples" line, as the header
 *   line is left to other families; a block without "Num Epochs" or "Total
 *   optimization steps" (an evaluation's) emits no event. The block ends at its
 *   last known line, at any other HF line, after 64 lines of other families (a
 *   block interleaved with other hosts' output), or at the end of the stream.
 * - A config dump ("Model config LlamaConfig {" ... "}") is followed for its
 *   "transformers_version" line: the transformers_version attribute, once per
 *   stream. The dump's lines, up to its closing brace (nesting counted), are
 *   claimed for the family at the level of the line that opened the dump; a blank
 *   line or another family's line ends it early.
 *
 * Invariants: the state is fixed-size; field names are copied into it, since the
 * lines they were sliced from are gone by the time the block is emitted.
 */
#include "fam_hf.h"

#include <string.h>

#include "event.h"
#include "num.h"

#define HF_BLOCK_MAX_LINES 64
#define HF_JSON_MAX_LINES 400

static const char running_training[] = "***** Running training *****";

/* Setup keys that are also run attributes. */
static const struct {
    const char *key, *attr;
} setup_attrs[] = {
    {"Instantaneous batch size per device", "train_micro_batch_size_per_gpu"},
    {"Total train batch size (w. parallel, distributed & accumulation)", "train_batch_size"},
    {"Gradient Accumulation steps", "gradient_accumulation_steps"},
    {"Number of trainable parameters", "trainable_params"},
};

static int span_is(dsq_span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

/* Whether the kept fields make a training setup (an evaluation block printed bare
 * has "Num examples" and "Batch size" only). */
static int is_training(const dsq_hf_state *st)
{
    for (int i = 0; i < st->nf; i++) {
        dsq_span n = st->f[i].name;
        if (span_is(n, "Num Epochs") || span_is(n, "Total optimization steps"))
            return 1;
    }
    return 0;
}

static int flush_setup(dsq_hf_state *st, const dsq_line_ctx *lc)
{
    int rc = 0;
    if (st->setup && is_training(st)) {
        dsq_line_ctx at = *lc; /* where the block began, also when the stream ends */
        at.host = st->host;
        at.rank = st->rank;
        dsq_emit_args a = {.ev = DSQ_EV_HF_TRAIN_SETUP, .f = st->f, .nf = st->nf,
                           .t_us = st->t_us, .lineno = st->lineno};
        rc = dsq_scan_emit(&at, &a);
    }
    st->setup = 0;
    st->nf = 0;
    return rc;
}

/* One "Key = number" line of an open block: keep the field, emit its attribute. */
static int setup_line(dsq_hf_state *st, const dsq_line_ctx *lc, const dsq_match *m)
{
    const dsq_mfield *f = &m->f[0];
    if (st->nf < DSQ_HF_SETUP_MAXF && f->name.n <= DSQ_HF_NAME_MAX) {
        memcpy(st->name[st->nf], f->name.p, f->name.n);
        st->f[st->nf] = (dsq_mfield){{st->name[st->nf], f->name.n}, f->v, f->unit};
        st->nf++;
    }
    for (size_t i = 0; i < sizeof setup_attrs / sizeof setup_attrs[0]; i++) {
        if (!span_is(m->label, setup_attrs[i].key))
            continue;
        dsq_mfield v = {{"value", 5}, f->v, DSQ_U_NONE};
        dsq_emit_args a = {.ev = DSQ_EV_ATTR, .label = {setup_attrs[i].attr,
                                                        strlen(setup_attrs[i].attr)},
                           .text = m->text, .f = &v, .nf = 1};
        int rc = dsq_scan_emit(lc, &a);
        if (rc)
            return rc;
    }
    if (span_is(m->label, "Number of trainable parameters")) /* the block's last line */
        return flush_setup(st, lc);
    return 0;
}

/* A line inside a config dump: '  "transformers_version": "4.44.0",', a nested
 * object's brace, or the dump's closing brace. Returns 1 (the line is the dump's:
 * the scanner gives it to the family) or < 0 on error. */
static int json_line(dsq_hf_state *st, const dsq_line_ctx *lc, const char *line, size_t len)
{
    static const char key[] = "\"transformers_version\":";
    dsq_span s = dsq_span_trim((dsq_span){line, len});
    if (s.n == 0 || ++st->lines > HF_JSON_MAX_LINES) { /* dumps have no blank line */
        st->json = 0;
        return 0;
    }
    if (s.p[0] == '}' || s.p[0] == ']') {
        if (--st->json_depth <= 0)
            st->json = 0;
        return 1;
    }
    char last = s.p[s.n - 1] == ',' && s.n > 1 ? s.p[s.n - 2] : s.p[s.n - 1];
    if (last == '{' || last == '[')
        st->json_depth++;
    if (st->version_done || s.n < sizeof key || memcmp(s.p, key, sizeof key - 1) != 0)
        return 1;
    const char *v = memchr(s.p + sizeof key - 1, '"', s.n - (sizeof key - 1));
    const char *e = v ? memchr(v + 1, '"', (size_t)(s.p + s.n - v - 1)) : NULL;
    if (!e)
        return 0;
    st->version_done = 1;
    dsq_emit_args a = {.ev = DSQ_EV_ATTR, .label = {"transformers_version", 20},
                       .text = {v + 1, (size_t)(e - v - 1)}};
    int rc = dsq_scan_emit(lc, &a);
    return rc < 0 ? rc : 1;
}

static void open_setup(dsq_hf_state *st, const dsq_line_ctx *lc)
{
    st->setup = 1;
    st->nf = 0;
    st->lines = 0;
    st->t_us = lc->t_us;
    st->lineno = lc->lineno;
    st->host = lc->host;
    st->rank = lc->rank;
}

/* An HF line that may open a block. */
static int maybe_open(dsq_hf_state *st, const dsq_line_ctx *lc, const dsq_match *m)
{
    dsq_span b = dsq_span_trim(m->body);
    if (span_is(b, running_training)) {
        open_setup(st, lc);
    } else if (m->level == DSQ_LV_NONE && m->nf == 1 && span_is(m->label, "Num examples")) {
        open_setup(st, lc); /* printed bare: the header line was not ours to take */
        return setup_line(st, lc, m);
    } else if (b.n && b.p[b.n - 1] == '{' && !m->ev) {
        st->json = 1;
        st->json_depth = 1;
        st->json_level = m->level;
        st->lines = 0;
    }
    return 0;
}

/* While idle (no setup block, no JSON), dsq_hf_handle does nothing with an HF line
 * unless maybe_open opens a block. */
int dsq_hf_quiet(const dsq_match *m)
{
    if (m->family != DSQ_FAM_HF)
        return 0;
    dsq_span b = dsq_span_trim(m->body);
    return !span_is(b, running_training) && !(b.n && b.p[b.n - 1] == '{') &&
           !(m->level == DSQ_LV_NONE && m->nf == 1 && span_is(m->label, "Num examples"));
}

int dsq_hf_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                  size_t len)
{
    dsq_hf_state *st = state;
    int hf = m->family == DSQ_FAM_HF, rc = 0;
    if (st->setup) {
        if (hf && m->label.n && m->nf == 1 && !m->ev && m->text.n)
            return setup_line(st, lc, m);
        if (hf || ++st->lines > HF_BLOCK_MAX_LINES)
            rc = flush_setup(st, lc);
    }
    int claim = 0;
    if (!rc && st->json) {
        if (hf || m->family != DSQ_FAM_OTHER) {
            st->json = 0;
        } else {
            rc = json_line(st, lc, line, len);
            claim = rc > 0;
            rc = rc > 0 ? 0 : rc;
            st->base.claim_level = st->json_level;
        }
    }
    if (!rc && hf)
        rc = maybe_open(st, lc, m);
    st->base.active = st->setup || st->json;
    return rc < 0 ? rc : claim;
}

int dsq_hf_finish(void *state, const dsq_line_ctx *lc)
{
    dsq_hf_state *st = state;
    int rc = flush_setup(st, lc);
    st->json = 0;
    st->base.active = 0;
    return rc;
}
