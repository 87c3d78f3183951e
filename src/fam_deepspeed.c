/* DeepSpeed handler: what a single-line recognizer cannot do.
 *
 * - Engine config JSON blocks: "[config.py:...:print_user_config]   json = {" (or a
 *   config key whose value is a JSON object, "activation_checkpointing_config {")
 *   is followed by unprefixed JSON lines up to the matching '}'. Each leaf becomes
 *   a run attribute labelled with its dotted path ("zero_optimization.stage"), and
 *   the leaves that have a common attribute name are emitted under it too
 *   (zero_stage, dtype, offload_optimizer, offload_param, optimizer, lr).
 * - A message printed on the line after its header (logger.info("\n...")): the
 *   header's message is empty, and the next line, when no family claims it, is
 *   classified as that header's message. An indented message goes on over the
 *   indented lines after it; all are claimed at the header's level.
 * - The runner's "cmd = ..." line: launcher_cmd, and world_info decoded from its
 *   base64 --world_info argument.
 * - Lines that carry a second attribute: "Creating fp16 ZeRO stage 3 optimizer"
 *   (dtype, besides zero_stage), "num_params = 291, num_elems = 8.03B"
 *   (num_params), the CPU Adam "Config:" line (weight_decay, besides lr), and the
 *   engine's zero_config / optimizer_params dump lines.
 * Lines of a JSON block and a continued message are claimed for the family
 * (handle returns 1). State is fixed-size; the JSON path is kept in a char array.
 * A block ends at its closing brace, at a line another family claims, or after
 * 4096 lines.
 */
#include "fam_deepspeed.h"

#include <stdio.h>
#include <string.h>

#include "event.h"
#include "num.h"

enum { MODE_NONE, MODE_NEXT_MESSAGE, MODE_JSON, MODE_MORE_MESSAGE };

#define MAX_MESSAGE_LINES 64

#define MAX_BLOCK_LINES 4096

static int emit_attr(const dsq_line_ctx *lc, const char *label, size_t label_n, const char *v,
                     size_t vn)
{
    dsq_mfield f;
    dsq_emit_args a = {.ev = DSQ_EV_ATTR, .label = {label, label_n}, .text = {v, vn}};
    double x;
    const char *stop = NULL;
    if (vn && dsq_num_parse(v, v + vn, &x, &stop) == 0 && stop == v + vn) {
        f = (dsq_mfield){{"value", 5}, x, DSQ_U_NONE};
        a.f = &f;
        a.nf = 1;
    }
    return dsq_scan_emit(lc, &a);
}

static const char *find(const char *p, const char *end, const char *what)
{
    size_t k = strlen(what);
    for (; p + k <= end; p++)
        if (*p == *what && memcmp(p, what, k) == 0)
            return p;
    return NULL;
}

const char *dsq_ds_dtype_name(const char *p, size_t n)
{
    static const struct {
        const char *printed, *name;
    } map[] = {
        {"torch.bfloat16", "bf16"}, {"bfloat16", "bf16"}, {"bf16", "bf16"},
        {"torch.float16", "fp16"},  {"float16", "fp16"},  {"fp16", "fp16"},
        {"torch.half", "fp16"},     {"torch.float32", "fp32"}, {"float32", "fp32"},
        {"fp32", "fp32"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strlen(map[i].printed) == n && memcmp(p, map[i].printed, n) == 0)
            return map[i].name;
    return "?";
}

/* The token after what in p..end, up to a blank or one of stops. */
static int attr_after(const dsq_line_ctx *lc, const char *label, const char *p, const char *end,
                      const char *what, const char *stops)
{
    const char *v = find(p, end, what);
    if (!v)
        return 0;
    v += strlen(what);
    const char *e = v;
    while (e < end && *e != ' ' && !strchr(stops, *e))
        e++;
    while (e > v && (e[-1] == '\'' || e[-1] == '"'))
        e--;
    while (v < e && (*v == '\'' || *v == '"'))
        v++;
    return e > v ? emit_attr(lc, label, strlen(label), v, (size_t)(e - v)) : 0;
}

/* The offload device of one part in the engine's zero_config dump:
 * "offload_param=DeepSpeedZeroOffloadParamConfig(device='cpu', ...)" or "=None". */
static int offload_device(const dsq_line_ctx *lc, const char *label, const char *p,
                          const char *end)
{
    char key[32];
    snprintf(key, sizeof key, "%s=", label);
    const char *at = find(p, end, key);
    if (!at)
        return 0;
    at += strlen(key);
    if (dsq_starts(at, end, DSQ_LIT("None")))
        return emit_attr(lc, label, strlen(label), "none", 4);
    const char *close = memchr(at, ')', (size_t)(end - at));
    return attr_after(lc, label, at, close ? close : end, "device=", ",)");
}

/* "zero_config .... stage=3 contiguous_gradients=True ... offload_param=...":
 * zero_stage and the offload devices. */
static int zero_config(const dsq_line_ctx *lc, const char *p, const char *end)
{
    int rc = attr_after(lc, "zero_stage", p, end, " stage=", ",");
    if (!rc)
        rc = offload_device(lc, "offload_param", p, end);
    if (!rc)
        rc = offload_device(lc, "offload_optimizer", p, end);
    return rc;
}

/* The launcher echoes the NCCL environment it passes on: "0 NCCL_IB_DISABLE 1"
 * (launch.py / runner.py main). An attribute nccl_env.<VAR> = value. */
static int launcher_env(const dsq_line_ctx *lc, const char *p, const char *end)
{
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p >= end || *p != ' ' || !dsq_starts(p + 1, end, DSQ_LIT("NCCL_")))
        return 0;
    const char *k = ++p;
    while (p < end && ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
        p++;
    if (p >= end || *p != ' ' || p - k > 64)
        return 0;
    char label[80];
    memcpy(label, "nccl_env.", 9);
    memcpy(label + 9, k, (size_t)(p - k));
    const char *v = p + 1, *ve = end;
    while (ve > v && ve[-1] == ' ')
        ve--;
    return emit_attr(lc, label, 9 + (size_t)(p - k), v, (size_t)(ve - v));
}

/* Decodes base64 (standard or URL-safe alphabet) into out; returns the length, or
 * -1 on a bad character or when out is too small. */
static int b64_decode(const char *p, const char *end, char *out, size_t cap)
{
    unsigned acc = 0;
    int bits = 0;
    size_t n = 0;
    for (; p < end && *p != '='; p++) {
        char c = *p;
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26
              : c >= '0' && c <= '9' ? c - '0' + 52 : c == '+' || c == '-' ? 62
              : c == '/' || c == '_' ? 63 : -1;
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n >= cap)
                return -1;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    return (int)n;
}

/* The multi-node runner's "cmd = ... deepspeed.launcher.launch --world_info=<b64>
 * ...": attributes launcher_cmd (the command as printed) and world_info (the
 * decoded JSON of hosts and their GPU slots, {"gpu1": [0, 1], ...}). */
static int launcher_cmd(const dsq_line_ctx *lc, const char *p, const char *end)
{
    dsq_span cmd = dsq_trim(p + 6, end);
    int rc = emit_attr(lc, "launcher_cmd", 12, cmd.p, cmd.n);
    const char *w = rc ? NULL : find(p, end, "--world_info=");
    if (!w)
        return rc;
    w += 13;
    const char *we = w;
    while (we < end && *we != ' ')
        we++;
    char json[512];
    int n = b64_decode(w, we, json, sizeof json);
    return n > 0 ? emit_attr(lc, "world_info", 10, json, (size_t)n) : 0;
}

/* Second attributes of single lines (header messages and bare prints). */
static int extra_attrs(const dsq_line_ctx *lc, const dsq_match *m)
{
    const char *p = m->body.p, *end = p + m->body.n;
    while (p < end && *p == ' ')
        p++;
    if (m->ev == 0 && m->func.n == 4 && memcmp(m->func.p, "main", 4) == 0 && p < end &&
        *p >= '0' && *p <= '9')
        return launcher_env(lc, p, end);
    if (m->ev == 0 && m->func.n == 4 && memcmp(m->func.p, "main", 4) == 0 &&
        dsq_starts(p, end, DSQ_LIT("cmd = ")))
        return launcher_cmd(lc, p, end);
    if (m->ev != DSQ_EV_ATTR)
        return 0;
    if (dsq_starts(p, end, DSQ_LIT("Creating ")) && find(p, end, " ZeRO stage ")) {
        const char *d0 = p + 9, *d1 = d0;
        while (d1 < end && *d1 != ' ')
            d1++;
        const char *dt = dsq_ds_dtype_name(d0, (size_t)(d1 - d0));
        return emit_attr(lc, "dtype", 5, dt, strlen(dt));
    }
    if (dsq_starts(p, end, DSQ_LIT("finished initializing model")))
        return attr_after(lc, "num_params", p, end, "num_params = ", ",");
    if (dsq_starts(p, end, DSQ_LIT("Config: alpha=")))
        return attr_after(lc, "weight_decay", p, end, "weight_decay=", ",");
    if (dsq_starts(p, end, DSQ_LIT("zero_config ")))
        return zero_config(lc, p, end);
    if (dsq_starts(p, end, DSQ_LIT("optimizer_params ")))
        return attr_after(lc, "lr", p, end, "'lr': ", ",}");
    return 0;
}

/* The common attribute a JSON leaf stands for, if any. */
static int json_common(const dsq_line_ctx *lc, const char *path, const char *v, size_t vn)
{
    static const struct {
        const char *path, *label;
    } map[] = {
        {"zero_optimization.stage", "zero_stage"},
        {"zero_optimization.offload_optimizer.device", "offload_optimizer"},
        {"zero_optimization.offload_param.device", "offload_param"},
        {"optimizer.type", "optimizer"},
        {"optimizer.params.lr", "lr"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(path, map[i].path) == 0)
            return emit_attr(lc, map[i].label, strlen(map[i].label), v, vn);
    if ((strcmp(path, "bf16.enabled") == 0 || strcmp(path, "bfloat16.enabled") == 0 ||
         strcmp(path, "fp16.enabled") == 0) &&
        vn == 4 && memcmp(v, "true", 4) == 0)
    {
        const char *dt = dsq_ds_dtype_name(path, (size_t)(strchr(path, '.') - path));
        return emit_attr(lc, "dtype", 5, dt, strlen(dt));
    }
    return 0;
}

/* plen[d] is the path's length at depth d; deeper than the array, the path stays. */
static size_t path_len(const dsq_ds_state *st)
{
    return st->plen[st->depth < 15 ? st->depth : 15];
}

static void push(dsq_ds_state *st, const char *k, size_t kn)
{
    size_t at = path_len(st);
    if (st->depth < 15) {
        if (at && at + 1 < sizeof st->path)
            st->path[at++] = '.';
        if (kn > sizeof st->path - 1 - at)
            kn = sizeof st->path - 1 - at;
        if (kn) /* an array level pushes "" */
            memcpy(st->path + at, k, kn);
        at += kn;
        st->path[at] = 0;
        st->plen[st->depth + 1] = at;
    }
    st->depth++;
}

static void pop(dsq_ds_state *st)
{
    if (st->depth > 0)
        st->depth--;
    st->path[path_len(st)] = 0;
}

/* One line inside a JSON block. */
static int json_line(dsq_ds_state *st, const dsq_line_ctx *lc, const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == ','))
        end--;
    if (p == end)
        return 0;
    if (*p == '}' || *p == ']') {
        pop(st);
        if (st->depth == 0)
            st->mode = MODE_NONE, st->base.active = 0;
        return 0;
    }
    if (*p != '"') { /* an array element */
        if (end[-1] == '{' || end[-1] == '[')
            push(st, "", 0);
        return 0;
    }
    const char *k = p + 1, *ke = memchr(k, '"', (size_t)(end - k));
    if (!ke)
        return 0;
    const char *v = ke + 1;
    while (v < end && (*v == ':' || *v == ' '))
        v++;
    if (v + 1 == end && (*v == '{' || *v == '[')) {
        push(st, k, (size_t)(ke - k));
        return 0;
    }
    if (end - v >= 2 && *v == '"' && end[-1] == '"')
        v++, end--;
    char label[DSQ_DS_PATH_MAX + 64];
    size_t at = path_len(st);
    size_t kn = (size_t)(ke - k);
    if (kn > 63)
        kn = 63;
    memcpy(label, st->path, at);
    if (at)
        label[at++] = '.';
    memcpy(label + at, k, kn);
    label[at + kn] = 0;
    int rc = emit_attr(lc, label, at + kn, v, (size_t)(end - v));
    if (!rc)
        rc = json_common(lc, label, v, (size_t)(end - v));
    return rc;
}

/* A header that opens a JSON block: "json = {" or "key {" as its whole message. */
static int json_start(dsq_ds_state *st, const dsq_match *m)
{
    const char *p = m->body.p, *end = p + m->body.n;
    while (p < end && *p == ' ')
        p++;
    while (end > p && end[-1] == ' ')
        end--;
    if (end == p || end[-1] != '{' || m->func.n < 5 || memcmp(m->func.p, "print", 5) != 0)
        return 0;
    const char *k = p;
    while (p < end && *p != ' ' && *p != '{')
        p++;
    memset(st->plen, 0, sizeof st->plen);
    st->path[0] = 0;
    st->depth = 0;
    if (p - k == 4 && memcmp(k, "json", 4) == 0)
        st->depth = 1; /* the user config: paths start at its top level */
    else
        push(st, k, (size_t)(p - k));
    st->mode = MODE_JSON;
    st->lines = 0;
    st->base.active = 1;
    return 1;
}

/* What dsq_ds_handle does with a DeepSpeed line while idle (mode none): nothing
 * unless json_start or an empty message opens a block, or extra_attrs emits. The
 * bytes looked at are literal bytes of the line (none is a digit those read). */
int dsq_ds_quiet(const dsq_match *m)
{
    if (m->family != DSQ_FAM_DEEPSPEED || m->ev == DSQ_EV_ATTR ||
        (m->ev == 0 && m->func.n == 4 && memcmp(m->func.p, "main", 4) == 0))
        return 0;
    if (m->kind != DSQ_MK_DS_LOG)
        return 1;
    const char *p = m->body.p, *end = p + m->body.n;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return end > p && end[-1] != '{'; /* a message, not a block's opening */
}

int dsq_ds_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                  size_t len)
{
    dsq_ds_state *st = state;
    if (m->family == DSQ_FAM_DEEPSPEED) {
        int claim = 0;
        if (st->mode == MODE_NEXT_MESSAGE && m->func.n == 0 && m->t_us == DSQ_TIME_NONE) {
            st->base.claim_level = st->next_level; /* a bare print that is the message */
            claim = 1;
        }
        st->mode = MODE_NONE;
        st->base.active = 0;
        if (m->kind == DSQ_MK_DS_LOG && !json_start(st, m)) {
            const char *p = m->body.p, *end = p + m->body.n;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            if (p == end) {
                st->mode = MODE_NEXT_MESSAGE, st->base.active = 1;
                st->next_level = m->level;
            }
        }
        int rc = extra_attrs(lc, m);
        return rc < 0 ? rc : claim;
    }
    if (st->mode == MODE_MORE_MESSAGE) { /* indented lines of a multi-line message */
        if (m->family == DSQ_FAM_OTHER && len > 2 && line[0] == ' ' && line[1] == ' ' &&
            ++st->lines <= MAX_MESSAGE_LINES) {
            st->base.claim_level = st->next_level;
            return 1;
        }
        st->mode = MODE_NONE;
        st->base.active = 0;
        return 0;
    }
    if (st->mode == MODE_NEXT_MESSAGE) {
        st->mode = MODE_NONE;
        st->base.active = 0;
        if (m->family != DSQ_FAM_OTHER)
            return 0;
        dsq_match mm;
        memset(&mm, 0, sizeof mm);
        mm.rank = -1;
        mm.t_us = DSQ_TIME_NONE;
        int known = dsq_gram_deepspeed_message(line, len, &mm) && mm.ev;
        int indented = len > 2 && line[0] == ' ' && line[1] == ' ';
        if (!known && !indented)
            return 0;
        int rc = 0;
        if (known) {
            dsq_emit_args a = {.ev = mm.ev, .label = mm.label, .text = mm.text, .f = mm.f,
                               .nf = mm.nf};
            rc = dsq_scan_emit(lc, &a);
        }
        if (indented) { /* logger.info("\n    a\n    b"): the message goes on */
            st->mode = MODE_MORE_MESSAGE;
            st->lines = 0;
            st->base.active = 1;
        }
        st->base.claim_level = st->next_level;
        return rc < 0 ? rc : 1; /* the header's message: claim the line, at its level */
    }
    if (st->mode == MODE_JSON) {
        if (m->family != DSQ_FAM_OTHER || ++st->lines > MAX_BLOCK_LINES) {
            st->mode = MODE_NONE;
            st->base.active = 0;
            return 0;
        }
        int rc = json_line(st, lc, line, line + len);
        return rc < 0 ? rc : 1; /* a line of the block: claim it */
    }
    return 0;
}

int dsq_ds_finish(void *state, const dsq_line_ctx *lc)
{
    dsq_ds_state *st = state;
    (void)lc;
    st->mode = MODE_NONE;
    st->base.active = 0;
    return 0;
}
