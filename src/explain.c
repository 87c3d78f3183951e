/* `dsq explain` (see explain.h).
 *
 * The scanner shows each line to observe() before it releases the events that line
 * completed, so a line is kept in one record until the next line arrives (or the
 * member ends): by then every event it completed has been attached, and the line is
 * rendered. Events whose own line is earlier (a memory report completed by its CPU
 * line, a topology summary completed by Init COMPLETE) are printed under the line
 * that completed them, with the line they started at.
 *
 * Which entry explains a line: each event's entry (catalogue_for_event), plus, when
 * the event is a failure with a negative exit code, the signal's entry; then an
 * entry for the fields of a line without events ("field:"), for what the line says
 * ("text:"), and for the line's own shape (memory report lines, NCCL line kinds,
 * NCCL messages; the family's only when nothing else explains the line). Folding: a line that is not a problem and whose entries
 * were all explained before is counted into the pending fold; lines no entry
 * explains (family "other", tqdm) are shown three in a row, then folded. A fold is
 * printed as one line before the next shown line and at the end of a member.
 *
 * Nothing is allocated per line: the record, its events and the fold are fixed-size.
 */
#include "explain.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dict.h"
#include "error.h"
#include "event.h"
#include "fam_nccl.h"
#include "grammar.h"
#include "input.h"
#include "lines.h"
#include "num.h"
#include "scan.h"

#define SHOW_MAX 300   /* bytes of a line shown */
#define REC_EVENTS 16
#define REC_FIELDS 16
#define FOLD_WHAT 8
#define OTHER_RUN 3    /* unexplained lines shown in a row before folding */
#define NENT (REC_EVENTS * 2 + 2)

typedef struct rec_field {
    char name[48];
    double v;
    int unit;
} rec_field;

typedef struct rec {
    int used;
    uint32_t lineno;
    int family, level, rank, mkind, nccl_kind;
    char host[64];
    char text[SHOW_MAX + 1];
    size_t text_n;
    int cut;
    char msg[128]; /* NCCL: the message after the header, for nccl_msg: entries */
    int nf;
    rec_field f[REC_FIELDS];
    int nev;
    dsq_event ev[REC_EVENTS];
} rec;

typedef struct fold {
    uint64_t n;
    uint32_t first, last;
    int nwhat;
    const char *what[FOLD_WHAT];
    uint64_t count[FOLD_WHAT];
} fold;

typedef struct ex {
    const dsq_explain_params *p;
    const dsq_catalogue *cat;
    FILE *out;
    dsq_dict *dict;
    dsq_input *in;
    dsq_lines *lines;
    dsq_scan *scan;
    uint32_t *first_seen; /* per catalogue entry: line it was explained at, 0 if not yet */
    rec cur;
    fold fold;
    int other_run;        /* unexplained lines in a row so far */
    uint32_t mline;       /* lines of the current member so far */
    uint64_t nlines, nproblems, nfolded;
} ex;

int dsq_explain_is_problem(int level, int family, int kind)
{
    if (level >= DSQ_LV_WARNING || family == DSQ_FAM_TRACEBACK || family == DSQ_FAM_PYWARN)
        return 1;
    switch (kind) {
    case DSQ_EV_FAILURE:
    case DSQ_EV_TRACEBACK:
    case DSQ_EV_NCCL_WARN:
    case DSQ_EV_GLOG_DESYNC:
    case DSQ_EV_DS_CACHE_FLUSH:
    case DSQ_EV_DS_OVERFLOW:
    case DSQ_EV_PYWARN:
    case DSQ_EV_TORCHRUN_CLOSING_SIGNAL:
        return 1;
    default:
        return 0;
    }
}

/* ---- output helpers ---------------------------------------------------------------- */

/* Prints s[0..n) with control bytes as '?' (UTF-8 passes through). */
static void put_clean(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 || c == 0x7f ? '?' : c, out);
    }
}

/* Prints a ui template, replacing {name} with the value of that name in kv
 * (name, value pairs, NULL-terminated). Unknown names print as they are. */
static void put_template(FILE *out, const char *t, const char *const *kv)
{
    while (*t) {
        const char *close = *t == '{' ? strchr(t, '}') : NULL;
        int done = 0;
        for (int i = 0; close && kv[i]; i += 2) {
            size_t n = strlen(kv[i]);
            if ((size_t)(close - t - 1) == n && memcmp(t + 1, kv[i], n) == 0) {
                fputs(kv[i + 1], out);
                t = close + 1;
                done = 1;
                break;
            }
        }
        if (!done)
            fputc(*t++, out);
    }
}

static const char *ui(const ex *x, const char *key) { return dsq_catalogue_ui(x->cat, key); }

static void put_value(FILE *out, double v, int unit)
{
    if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(long long)v)
        fprintf(out, "%lld", (long long)v); /* exact integers print whole (below 2^53) */
    else
        fprintf(out, "%.10g", v);
    const char *u = dsq_unit_name((enum dsq_unit)unit);
    if (u && *u)
        fprintf(out, unit == DSQ_U_PCT ? "%s" : " %s", u);
}

/* ---- which entries explain a line -------------------------------------------------- */

static const char *const nccl_kind_names[] = {
    "other", "version", "rccl_block", "bootstrap", "plugin", "net_ib", "net_socket",
    "using_net", "env", "init_start", "init", "destroy", "comm", "chan_counts",
    "ring_list", "connect", "graph", "errtrace", "affinity", "warn"};

static int add_entry(const dsq_cat_entry **ents, int n, const dsq_cat_entry *e)
{
    if (!e || n >= NENT)
        return n;
    for (int i = 0; i < n; i++)
        if (ents[i] == e)
            return n;
    ents[n] = e;
    return n + 1;
}

/* The exit code a failure event carries ("exitcode", "return code"), or 0. */
static int exit_code(const ex *x, const dsq_event *ev)
{
    for (int i = 0; i < ev->nf; i++) {
        const char *name = dsq_dict_str(x->dict, ev->f[i].name, NULL);
        if (strcmp(name, "exitcode") == 0 || strcmp(name, "return code") == 0)
            return (int)ev->f[i].v;
    }
    return 0;
}

static int event_entries(const ex *x, const dsq_event *ev, const dsq_cat_entry **ents, int n)
{
    const char *label = dsq_dict_str(x->dict, ev->label, NULL);
    const char *text = dsq_dict_str(x->dict, ev->text, NULL);
    n = add_entry(ents, n, dsq_catalogue_for_event(x->cat, dsq_ev_kind_name(ev->kind), label, text));
    int code = ev->kind == DSQ_EV_FAILURE ? exit_code(x, ev) : 0;
    if (code < 0 && code > -65) {
        char id[16];
        snprintf(id, sizeof id, "signal:%d", -code);
        n = add_entry(ents, n, dsq_catalogue_get(x->cat, id));
    }
    return n;
}

/* The entry for the line's own shape, or NULL. *family_only is set when that entry
 * is only the family's (it explains the family, not this particular line). */
static const dsq_cat_entry *line_entry(const ex *x, const rec *r, int *family_only)
{
    const dsq_cat_entry *e = NULL;
    char id[64];
    *family_only = 0;
    if (r->mkind == DSQ_MK_DS_MEM_LABEL)
        return dsq_catalogue_get(x->cat, "line:ds_memory_label");
    if (r->mkind == DSQ_MK_DS_MEM_MA)
        return dsq_catalogue_get(x->cat, "kind:memory");
    if (r->mkind == DSQ_MK_DS_MEM_CPU)
        return dsq_catalogue_get(x->cat, "line:ds_memory_cpu");
    if (r->family == DSQ_FAM_NCCL) {
        if (r->nccl_kind > 0 && (size_t)r->nccl_kind < sizeof nccl_kind_names / sizeof *nccl_kind_names) {
            snprintf(id, sizeof id, "nccl:%s", nccl_kind_names[r->nccl_kind]);
            e = dsq_catalogue_get(x->cat, id);
        }
        if (!e)
            e = dsq_catalogue_for_prefix(x->cat, "nccl_msg", r->msg, strlen(r->msg));
        if (e)
            return e;
    }
    if (r->family == DSQ_FAM_OTHER)
        return NULL;
    snprintf(id, sizeof id, "family:%s", dsq_family_name(r->family));
    *family_only = 1;
    return dsq_catalogue_get(x->cat, id);
}

/* ---- folding ----------------------------------------------------------------------- */

static void fold_add(ex *x, const char *what, uint32_t lineno)
{
    fold *f = &x->fold;
    if (!f->n)
        f->first = lineno;
    f->last = lineno;
    f->n++;
    x->nfolded++;
    for (int i = 0; i < f->nwhat; i++)
        if (f->what[i] == what || strcmp(f->what[i], what) == 0) {
            f->count[i]++;
            return;
        }
    if (f->nwhat < FOLD_WHAT) {
        f->what[f->nwhat] = what;
        f->count[f->nwhat++] = 1;
    }
}

static void fold_flush(ex *x)
{
    fold *f = &x->fold;
    if (!f->n)
        return;
    char n[24], lines[40], what[512];
    size_t w = 0;
    snprintf(n, sizeof n, "%llu", (unsigned long long)f->n);
    if (f->first == f->last)
        snprintf(lines, sizeof lines, "%u", f->first);
    else
        snprintf(lines, sizeof lines, "%u–%u", f->first, f->last);
    what[0] = 0;
    for (int i = 0; i < f->nwhat && w < sizeof what; i++) {
        int k = f->nwhat == 1 ? snprintf(what + w, sizeof what - w, "%s", f->what[i])
                              : snprintf(what + w, sizeof what - w, "%s%s ×%llu", i ? ", " : "",
                                         f->what[i], (unsigned long long)f->count[i]);
        if (k > 0)
            w += (size_t)k;
    }
    const char *kv[] = {"n", n, "lines", lines, "what", what, NULL};
    fputs("  ", x->out);
    put_template(x->out, ui(x, f->nwhat == 1 ? "fold_one" : "fold_many"), kv);
    fputc('\n', x->out);
    memset(f, 0, sizeof *f);
}

/* ---- rendering ---------------------------------------------------------------------- */

static void print_header(ex *x, const rec *r)
{
    FILE *o = x->out;
    fprintf(o, "L%u  %s %s", r->lineno, dsq_family_name(r->family), dsq_level_name(r->level));
    if (r->host[0])
        fprintf(o, "  %s=%s", ui(x, "host"), r->host);
    if (r->rank >= 0)
        fprintf(o, "  %s=%d", ui(x, "rank"), r->rank);
    fputs("\n  | ", o);
    put_clean(o, r->text, r->text_n);
    fputs(r->cut ? "…\n" : "\n", o);
    if (r->nf && !r->nev) {
        fputs("  = ", o);
        for (int i = 0; i < r->nf; i++) {
            fprintf(o, "%s%s=", i ? ", " : "", r->f[i].name);
            put_value(o, r->f[i].v, r->f[i].unit);
        }
        fputc('\n', o);
    }
}

static void print_str(ex *x, const char *name, uint32_t id)
{
    size_t n;
    const char *s = dsq_dict_str(x->dict, id, &n);
    if (!id || !n)
        return;
    fprintf(x->out, " %s=\"", name);
    put_clean(x->out, s, n < 160 ? n : 160);
    fputs(n > 160 ? "…\"" : "\"", x->out);
}

/* " (" + the ui template key with {line} + ")". */
static void put_line_note(ex *x, const char *key, uint32_t line)
{
    char n[16];
    snprintf(n, sizeof n, "%u", line);
    const char *kv[] = {"line", n, NULL};
    fputs(" (", x->out);
    put_template(x->out, ui(x, key), kv);
    fputc(')', x->out);
}

static void print_event(ex *x, const rec *r, const dsq_event *ev)
{
    FILE *o = x->out;
    fprintf(o, "  + %s", dsq_ev_kind_name(ev->kind));
    if (ev->line && ev->line != r->lineno)
        put_line_note(x, "from_line", ev->line);
    print_str(x, "label", ev->label);
    print_str(x, "text", ev->text);
    for (int i = 0; i < ev->nf; i++) {
        fprintf(o, "%s%s=", i ? ", " : "  ", dsq_dict_str(x->dict, ev->f[i].name, NULL));
        put_value(o, ev->f[i].v, ev->f[i].unit);
    }
    fputc('\n', o);
}

static void print_entry(ex *x, const dsq_cat_entry *e, uint32_t lineno)
{
    FILE *o = x->out;
    uint32_t *seen = &x->first_seen[e->index];
    if (*seen && *seen != lineno) {
        fprintf(o, "  > %s", e->title);
        put_line_note(x, "see_line", *seen);
        fputc('\n', o);
        return;
    }
    *seen = lineno;
    fprintf(o, "  > %s: %s\n", e->title, e->means);
    if (*e->normal)
        fprintf(o, "    %s: %s\n", ui(x, "normal"), e->normal);
    if (*e->check)
        fprintf(o, "    %s: %s\n", ui(x, "check"), e->check);
    if (*e->source)
        fprintf(o, "    %s: %s\n", ui(x, "source"), e->source);
}

static void render(ex *x)
{
    rec *r = &x->cur;
    const dsq_cat_entry *ents[NENT];
    int n = 0, problem = dsq_explain_is_problem(r->level, r->family, 0), family_only;
    if (!r->used)
        return;
    r->used = 0;
    x->nlines++;
    for (int i = 0; i < r->nev; i++) {
        n = event_entries(x, &r->ev[i], ents, n);
        problem |= dsq_explain_is_problem(r->level, r->family, r->ev[i].kind);
    }
    for (int i = 0; i < r->nf && !r->nev; i++) { /* "field:Num Epochs" */
        char id[64];
        snprintf(id, sizeof id, "field:%s", r->f[i].name);
        n = add_entry(ents, n, dsq_catalogue_get(x->cat, id));
    }
    n = add_entry(ents, n, dsq_catalogue_for_text(x->cat, r->text, r->text_n));
    const dsq_cat_entry *le = line_entry(x, r, &family_only);
    if (family_only && n > 0)
        le = NULL; /* a family's entry only for a line nothing else explains */
    family_only = family_only && le;
    n = add_entry(ents, n, le);
    x->nproblems += (uint64_t)problem;
    if (x->p->only_problems && !problem)
        return;
    int explained = n > 0 && !family_only;
    int all_seen = explained;
    for (int i = 0; i < n && all_seen; i++)
        all_seen = x->first_seen[ents[i]->index] != 0;
    x->other_run = explained ? 0 : x->other_run + 1;
    if (!problem && all_seen) {
        fold_add(x, ents[0]->title, r->lineno);
        return;
    }
    if (!problem && !explained && x->other_run > OTHER_RUN &&
        (r->family == DSQ_FAM_OTHER || r->family == DSQ_FAM_TQDM)) {
        fold_add(x, ui(x, r->family == DSQ_FAM_OTHER ? "unexplained" : "progress"), r->lineno);
        return;
    }
    fold_flush(x);
    print_header(x, r);
    for (int i = 0; i < r->nev; i++)
        print_event(x, r, &r->ev[i]);
    for (int i = 0; i < n; i++)
        if (!(family_only && ents[i] == le && x->first_seen[le->index]))
            print_entry(x, ents[i], r->lineno);
}

/* ---- scanner callbacks -------------------------------------------------------------- */

static void copy_span(char *dst, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = 0;
}

static void keep_fields(rec *r, const dsq_match *m)
{
    static const char *const mem_names[] = {"MA", "Max_MA", "CA", "Max_CA"};
    static const char *const cpu_names[] = {"CPU_used", "CPU_percent"};
    r->nf = 0;
    if (m->kind == DSQ_MK_DS_MEM_MA || m->kind == DSQ_MK_DS_MEM_CPU) {
        const char *const *names = m->kind == DSQ_MK_DS_MEM_MA ? mem_names : cpu_names;
        int k = m->kind == DSQ_MK_DS_MEM_MA ? 4 : 2;
        for (int i = 0; i < k && i < m->nv; i++) {
            copy_span(r->f[r->nf].name, sizeof r->f[0].name, names[i], strlen(names[i]));
            r->f[r->nf].v = m->v[i];
            r->f[r->nf++].unit = m->unit[i];
        }
        return;
    }
    for (int i = 0; i < m->nf && r->nf < REC_FIELDS; i++) {
        copy_span(r->f[r->nf].name, sizeof r->f[0].name, m->f[i].name.p, m->f[i].name.n);
        r->f[r->nf].v = m->f[i].v;
        r->f[r->nf++].unit = m->f[i].unit;
    }
}

static void observe(void *ctx, const dsq_match *m, const char *line, size_t len, unsigned flags)
{
    ex *x = ctx;
    render(x);
    rec *r = &x->cur;
    r->used = 1;
    r->lineno = ++x->mline;
    r->family = m->family;
    r->level = m->level;
    r->rank = m->rank;
    r->mkind = m->kind;
    r->nev = 0;
    r->nccl_kind = 0;
    r->msg[0] = 0;
    copy_span(r->host, sizeof r->host, m->host.p ? m->host.p : "", m->host.n);
    r->cut = len > SHOW_MAX || (flags & DSQ_LINE_CUT);
    r->text_n = len > SHOW_MAX ? SHOW_MAX : len;
    while (r->text_n < len && r->text_n > 0 && ((unsigned char)line[r->text_n] & 0xC0) == 0x80)
        r->text_n--; /* never cut inside a UTF-8 sequence */
    memcpy(r->text, line, r->text_n);
    if (m->family == DSQ_FAM_NCCL) {
        const dsq_nccl_line *o = (const dsq_nccl_line *)m->aux.bytes;
        r->nccl_kind = o->kind;
        if (o->msg.p)
            copy_span(r->msg, sizeof r->msg, o->msg.p, o->msg.n);
    }
    keep_fields(r, m);
}

static int on_event(void *ctx, const dsq_event *ev)
{
    ex *x = ctx;
    if (ev->kind == DSQ_EV_RANK_LINES)
        return 0; /* dsq's own bookkeeping at the end of a file, not what a line says */
    if (x->cur.used && x->cur.nev < REC_EVENTS)
        x->cur.ev[x->cur.nev++] = *ev;
    return 0;
}

/* ---- inputs ------------------------------------------------------------------------- */

static void report(ex *x, dsq_error *e, const char *file, const char *member)
{
    dsq_error_where(e, file, member);
    if (x->p->problem)
        x->p->problem(x->p->ctx, e);
}

/* One member through the scanner, explained. */
static void explain_member(ex *x, const char *shown, const dsq_member_info *mi)
{
    dsq_error e;
    dsq_error_clear(&e);
    if (mi->name && mi->name[0])
        fprintf(x->out, "== %s: %s ==\n", ui(x, "member"), mi->name);
    x->mline = 0;
    x->other_run = 0;
    memset(&x->cur, 0, sizeof x->cur);
    dsq_lines_reset(x->lines);
    dsq_scan_begin(x->scan, 0, -1);
    dsq_scan_set_written(x->scan, mi->mtime_ns / 1000);
    for (;;) {
        const char *data;
        size_t len;
        if (dsq_input_read(x->in, &data, &len, &e) != 0) {
            report(x, &e, shown, mi->name);
            break;
        }
        if (len == 0)
            break;
        dsq_lines_feed(x->lines, data, len);
    }
    dsq_lines_finish(x->lines);
    dsq_scan_end(x->scan);
    render(x);
    fold_flush(x);
}

static int explain_file(ex *x, const char *path, const char *shown, dsq_error *err)
{
    dsq_member_info mi;
    int r;
    if (dsq_input_open(x->in, path, err) != 0) {
        dsq_error_where(err, shown, NULL);
        return err->code ? err->code : DSQ_EIO;
    }
    while ((r = dsq_input_next_member(x->in, &mi, err)) == 1)
        explain_member(x, shown, &mi);
    if (r < 0)
        report(x, err, shown, NULL);
    dsq_input_close(x->in);
    return 0;
}

/* Standard input goes to a temporary file first, so compressed input is detected
 * and decoded like any file. */
static int explain_stdin(ex *x, dsq_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[4096], buf[65536];
    snprintf(path, sizeof path, "%s/dsq-explain-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return dsq_error_set(err, DSQ_EIO, "cannot create a temporary file for stdin: %s",
                             strerror(errno));
    int rc = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        if (write(fd, buf, n) != (ssize_t)n) {
            rc = dsq_error_set(err, DSQ_EIO, "cannot write %s: %s", path, strerror(errno));
            break;
        }
    close(fd);
    if (!rc)
        rc = explain_file(x, path, "-", err);
    unlink(path);
    return rc;
}

static void print_summary(ex *x)
{
    char lines[24], problems[24], folded[24];
    snprintf(lines, sizeof lines, "%llu", (unsigned long long)x->nlines);
    snprintf(problems, sizeof problems, "%llu", (unsigned long long)x->nproblems);
    snprintf(folded, sizeof folded, "%llu", (unsigned long long)x->nfolded);
    const char *kv[] = {"lines", lines, "problems", problems, "folded", folded, NULL};
    put_template(x->out, ui(x, x->p->only_problems ? "summary_problems" : "summary"), kv);
    fputc('\n', x->out);
}

int dsq_explain_path(const dsq_explain_params *p, const char *path, dsq_error *err)
{
    ex x = {.p = p, .cat = p->cat, .out = p->out};
    int status = 0;
    dsq_scan_params sp = {.emit = on_event, .ctx = &x, .observe = observe, .observe_ctx = &x};
    dsq_lines_params lp = {0, dsq_scan_line, NULL};
    if (dsq_dict_new(&x.dict) || dsq_input_new(&x.in) ||
        !(x.first_seen = calloc(dsq_catalogue_count(p->cat) + 1, sizeof *x.first_seen)))
        goto nomem;
    sp.dict = x.dict;
    if (dsq_scan_new(&sp, &x.scan))
        goto nomem;
    lp.ctx = x.scan;
    if (dsq_lines_new(&lp, &x.lines))
        goto nomem;
    status = strcmp(path, "-") == 0 ? explain_stdin(&x, err) : explain_file(&x, path, path, err);
    if (!status)
        print_summary(&x);
    goto done;
nomem:
    status = dsq_error_set(err, DSQ_ENOMEM, "out of memory");
done:
    dsq_lines_free(x.lines);
    dsq_scan_free(x.scan);
    dsq_input_free(x.in);
    dsq_dict_free(x.dict);
    free(x.first_seen);
    return status;
}
