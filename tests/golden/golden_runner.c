/* Golden-test runner: replays tests/golden/<family>/NNN-what.log through the real
 * pipeline (dsq_lines splitter -> the grammar recognizers line by line, and
 * dsq_scan for events) and compares a normalized rendering with NNN-what.expected,
 * byte for byte.
 *
 * Rendering, one record per line:
 *   L<n> family=F level=V [host=H] [rank=N] [time=T] [func=F] kind=K [v=[..]] body=".."
 *   L<n> family=other level=none kind=none text=".."      (nothing recognized it)
 *   E kind=memory host=H rank=N time=T line=N label=".." MA=1.75 GB Max_MA=...
 *   T lines=N cut=N events=N family:F=N... level:V=N...   (zero counts left out)
 * The per-line pass peels the pdsh prefix, then tries the DeepSpeed recognizer on
 * the rest, as scan.c does. An E record comes right after the L record of the line
 * that completed it; events flushed by dsq_scan_end follow the last L record.
 * An unknown host, rank or time prints as "-" in E records and is left out of L
 * records. Numbers print shortest-round-trip. Bytes that are not printable ASCII
 * or visible UTF-8 print as \xNN (\t \r \n \" \\ as such), so expected files are
 * plain text and a NUL or an escape code in a field shows.
 *
 * Lines longer than GOLDEN_MAX_LINE (4 KiB) are cut, marked "L<n> cut".
 * Each file is rendered three times: fed whole, and fed in 1- and 7-byte chunks,
 * each chunk copied to an exactly sized allocation so ASan catches a lexer that
 * reads past what it was given. The renderings must be identical (line splitting
 * must not depend on where chunks end), and the per-line pass must count the same
 * families and levels as dsq_scan.
 *
 * Usage: golden_runner DIR            check every DIR/NNN-*.log
 *        golden_runner --update DIR   (re)write the .expected files
 * Exit status: 0 all match, 1 a mismatch, 2 usage or I/O error.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "event.h"
#include "grammar.h"
#include "lines.h"
#include "num.h"
#include "scan.h"
#include "timeconv.h"

/* ---- growable output text --------------------------------------------------- */

typedef struct text {
    char *p;
    size_t n, cap;
    int oom;
} text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->oom)
        return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *q = realloc(t->p, cap);
        if (!q) {
            t->oom = 1;
            return;
        }
        t->p = q;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = 0;
}

static void text_printf(text *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (k > 0)
        text_add(t, buf, (size_t)k < sizeof buf ? (size_t)k : sizeof buf - 1);
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t k = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (p[0] > 0xf4 || k == 0 || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
        return 0; /* overlong, surrogate, or beyond U+10FFFF */
    return k;
}

/* Invisible code points a reader of an expected file would miss: C1 controls and
 * U+FEFF (a byte order mark). */
static int invisible(const unsigned char *p, size_t k)
{
    return (k == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||
           (k == 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf);
}

/* Appends s[0..n) with everything that is not visible text escaped. */
static void text_escaped(text *t, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t k = c >= 0x80 ? utf8_len(p + i, n - i) : 0;
        if (k && !invisible(p + i, k))
            text_add(t, s + i, k);
        else if (c == '"' || c == '\\')
            text_printf(t, "\\%c", c);
        else if (c == '\t' || c == '\r' || c == '\n')
            text_add(t, c == '\t' ? "\\t" : c == '\r' ? "\\r" : "\\n", 2);
        else if (c < 0x20 || c >= 0x7f)
            text_printf(t, "\\x%02x", c); /* invisible ones go byte by byte */
        else
            text_add(t, s + i, 1);
        i += k && !invisible(p + i, k) ? k : 1;
    }
}

/* Shortest text that reads back as the same double (plain decimals for the
 * magnitudes logs print, "%g" style beyond), then its unit if any. */
static void text_value(text *t, double v, int unit)
{
    char buf[64];
    double mag = v < 0 ? -v : v;
    int plain = mag == 0 || (mag >= 1e-4 && mag < 1e15), done = 0;
    for (int prec = 0; plain && prec <= 17 && !done; prec++) {
        snprintf(buf, sizeof buf, "%.*f", prec, v);
        done = strtod(buf, NULL) == v;
    }
    for (int prec = 1; prec <= 17 && !done; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        done = strtod(buf, NULL) == v;
    }
    text_printf(t, "%s", buf);
    const char *u = dsq_unit_name((enum dsq_unit)unit);
    if (*u)
        text_printf(t, " %s", u);
}

static void text_time(text *t, int64_t t_us)
{
    char buf[64];
    dsq_time_format(t_us, buf);
    if (t_us == DSQ_TIME_NONE) {
        text_printf(t, "%s", buf);
        return;
    }
    long long us = (long long)(t_us % 1000000);
    text_printf(t, "%s.%06lld", buf, us < 0 ? us + 1000000 : us);
}

/* ---- rendering one file --------------------------------------------------- */

/* Lines are cut at 4 KiB instead of the default 1 MiB, so a golden case can test
 * the cut path (head kept, rest skipped, next line intact) with a small file. */
#define GOLDEN_MAX_LINE 4096

static const char *const kind_names[] = {"none",         "prefix",    "ds_log",
                                         "ds_mem_label", "ds_mem_ma", "ds_mem_cpu"};

static const char *name_of(const char *const *tab, size_t count, int i)
{
    return i >= 0 && (size_t)i < count ? tab[i] : "?";
}

typedef struct render {
    text *out;
    dsq_dict *dict;
    dsq_scan *sc;
    uint32_t lineno;
    uint64_t fam[DSQ_FAM_COUNT];
    uint64_t lv[DSQ_LV_COUNT];
} render;

static int on_event(void *ctx, const dsq_event *ev)
{
    render *r = ctx;
    text *t = r->out;
    size_t n = 0;
    const char *s = dsq_dict_str(r->dict, ev->host, &n);
    text_printf(t, "E kind=%s host=", dsq_ev_kind_name(ev->kind));
    if (ev->host)
        text_escaped(t, s, n);
    else
        text_printf(t, "-");
    if (ev->rank >= 0)
        text_printf(t, " rank=%d time=", (int)ev->rank);
    else
        text_printf(t, " rank=- time=");
    text_time(t, ev->t_us);
    text_printf(t, " line=%u label=\"", (unsigned)ev->line);
    s = dsq_dict_str(r->dict, ev->label, &n);
    text_escaped(t, s, n);
    text_printf(t, "\"");
    if (ev->text) {
        s = dsq_dict_str(r->dict, ev->text, &n);
        text_printf(t, " text=\"");
        text_escaped(t, s, n);
        text_printf(t, "\"");
    }
    for (int i = 0; i < ev->nf; i++) {
        s = dsq_dict_str(r->dict, ev->f[i].name, &n);
        text_printf(t, " ");
        text_escaped(t, s, n);
        text_printf(t, "=");
        text_value(t, ev->f[i].v, ev->f[i].unit);
    }
    text_printf(t, "\n");
    return 0;
}

/* The scanner's view of one line (its observer callback). A line nothing
 * recognized is shown whole, so the golden file says what was rejected. */
static void render_match(text *t, const dsq_match *m, const char *line, size_t len)
{
    text_printf(t, " family=%s level=%s", dsq_family_name(m->family), dsq_level_name(m->level));
    if (m->host.n) {
        text_printf(t, " host=");
        text_escaped(t, m->host.p, m->host.n);
    }
    if (m->rank >= 0)
        text_printf(t, " rank=%d", m->rank);
    if (m->t_us != DSQ_TIME_NONE) {
        text_printf(t, " time=");
        text_time(t, m->t_us);
    }
    if (m->func.n) {
        text_printf(t, " func=");
        text_escaped(t, m->func.p, m->func.n);
    }
    size_t nkinds = sizeof kind_names / sizeof *kind_names;
    text_printf(t, " kind=%s", name_of(kind_names, nkinds, m->kind));
    if (m->ev)
        text_printf(t, " ev=%s", dsq_ev_kind_name(m->ev));
    for (int i = 0; i < m->nv; i++) {
        text_printf(t, i ? ", " : " v=[");
        text_value(t, m->v[i], m->unit[i]);
    }
    if (m->nv)
        text_printf(t, "]");
    if (m->label.n) {
        text_printf(t, " label=\"");
        text_escaped(t, m->label.p, m->label.n);
        text_printf(t, "\"");
    }
    for (int i = 0; i < m->nf; i++) {
        text_printf(t, " ");
        text_escaped(t, m->f[i].name.p, m->f[i].name.n);
        text_printf(t, "=");
        text_value(t, m->f[i].v, m->f[i].unit);
    }
    if (m->kind != DSQ_MK_NONE || m->family != DSQ_FAM_OTHER) {
        text_printf(t, " body=\"");
        text_escaped(t, m->body.p, m->body.n);
    } else {
        text_printf(t, " text=\"");
        text_escaped(t, line, len);
    }
    text_printf(t, "\"\n");
}

/* dsq_observe_fn: renders the line as the scanner saw it; the events it completes
 * are rendered by on_event right after, so they follow their line. */
static void on_observe(void *ctx, const dsq_match *m, const char *line, size_t len,
                       unsigned flags)
{
    render *r = ctx;
    r->lineno++;
    text_printf(r->out, "L%u%s", (unsigned)r->lineno, (flags & DSQ_LINE_CUT) ? " cut" : "");
    render_match(r->out, m, line, len);
    if (m->family >= 0 && m->family < DSQ_FAM_COUNT)
        r->fam[m->family]++;
    if (m->level >= 0 && m->level < DSQ_LV_COUNT)
        r->lv[m->level]++;
}

static void render_totals(render *r, uint64_t split_lines)
{
    const dsq_scan_stats *st = dsq_scan_stats_get(r->sc);
    text *t = r->out;
    text_printf(t, "T lines=%llu cut=%llu events=%llu", (unsigned long long)st->lines,
                (unsigned long long)st->cut, (unsigned long long)st->events);
    for (int i = 0; i < DSQ_FAM_COUNT; i++)
        if (st->family_lines[i])
            text_printf(t, " family:%s=%llu", dsq_family_name(i),
                        (unsigned long long)st->family_lines[i]);
    for (int i = 0; i < DSQ_LV_COUNT; i++)
        if (st->level_lines[i])
            text_printf(t, " level:%s=%llu", dsq_level_name(i),
                        (unsigned long long)st->level_lines[i]);
    text_printf(t, "\n");
    if (split_lines != st->lines || r->lineno != st->lines)
        text_printf(t, "! splitter delivered %llu lines, scanner counted %llu\n",
                    (unsigned long long)split_lines, (unsigned long long)st->lines);
    if (memcmp(r->fam, st->family_lines, sizeof r->fam) != 0 ||
        memcmp(r->lv, st->level_lines, sizeof r->lv) != 0)
        text_printf(t, "! per-line family/level counts differ from dsq_scan's\n");
}

/* Feeds data whole (chunk 0) or in chunks of that size, each copied to its own
 * exactly sized allocation. Returns the splitter's status or -1 on OOM. */
static int feed(dsq_lines *lb, const char *data, size_t n, size_t chunk)
{
    size_t step = chunk ? chunk : n;
    for (size_t off = 0; off < n; off += step) {
        size_t k = n - off < step ? n - off : step;
        char *copy = malloc(k);
        if (!copy)
            return -1;
        memcpy(copy, data + off, k);
        int rc = dsq_lines_feed(lb, copy, k);
        free(copy);
        if (rc)
            return rc;
    }
    return dsq_lines_finish(lb);
}

/* Renders data into out. Returns 0, or non-zero when the pipeline failed. */
static int render_file(const char *data, size_t n, size_t chunk, text *out)
{
    render r = {.out = out};
    dsq_lines *lb = NULL;
    int rc = -1;
    if (dsq_dict_new(&r.dict))
        goto done;
    dsq_scan_params sp = {.dict = r.dict, .emit = on_event, .ctx = &r, .observe = on_observe,
                          .observe_ctx = &r};
    if (dsq_scan_new(&sp, &r.sc))
        goto done;
    dsq_lines_params lp = {GOLDEN_MAX_LINE, dsq_scan_line, NULL};
    lp.ctx = r.sc;
    if (dsq_lines_new(&lp, &lb))
        goto done;
    dsq_scan_begin(r.sc, 0, -1);
    /* year-less stamps in golden files are 2024 unless said; a time-of-day-only stamp
     * with no earlier time takes the date of this pretend mtime */
    dsq_scan_set_written(r.sc, dsq_time_from_civil(2024, 12, 31, 23, 59, 0, 0));
    if ((rc = feed(lb, data, n, chunk)) != 0 || (rc = dsq_scan_end(r.sc)) != 0)
        goto done;
    render_totals(&r, dsq_lines_stats_get(lb)->lines);
    rc = out->oom ? -1 : 0;
done:
    dsq_lines_free(lb);
    dsq_scan_free(r.sc);
    dsq_dict_free(r.dict);
    return rc;
}

/* ---- files ------------------------------------------------------------------ */

/* Reads a whole file. Returns 0, or -1 with errno set. */
static int slurp(const char *path, char **data, size_t *n)
{
    FILE *f = fopen(path, "rb");
    text t = {0};
    char buf[65536];
    size_t k;
    if (!f)
        return -1;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        text_add(&t, buf, k);
    int bad = ferror(f) || t.oom;
    fclose(f);
    if (bad) {
        free(t.p);
        errno = t.oom ? ENOMEM : EIO;
        return -1;
    }
    *data = t.p ? t.p : calloc(1, 1);
    *n = t.n;
    return *data ? 0 : -1;
}

static int spit(const char *path, const text *t)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t k = fwrite(t->p, 1, t->n, f);
    return (fclose(f) != 0 || k != t->n) ? -1 : 0;
}

/* ---- diff ------------------------------------------------------------------- */

typedef struct tline {
    const char *p;
    size_t n;
} tline;

/* Splits text into lines (without '\n'). Returns the count, or SIZE_MAX on OOM. */
static size_t split_text(const char *s, size_t n, tline **out)
{
    size_t count = 0, cap = 64;
    tline *v = malloc(cap * sizeof *v);
    for (size_t i = 0; v && i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (s + i)) : n - i;
        if (count == cap) {
            tline *w = realloc(v, (cap *= 2) * sizeof *v);
            if (!w) {
                free(v);
                v = NULL;
                break;
            }
            v = w;
        }
        v[count++] = (tline){s + i, k};
        i += k + 1;
    }
    *out = v;
    return v ? count : SIZE_MAX;
}

static int tline_eq(tline a, tline b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

/* Cap on the LCS table (cells of 4 bytes) for the diff of a failed case. */
#define DIFF_MAX_CELLS ((size_t)1 << 24)

/* Edit script between a and b from an LCS table: ops[i] is ' ', '-' or '+'. */
static size_t edit_script(const tline *a, size_t na, const tline *b, size_t nb, char *ops)
{
    size_t w = nb + 1, k = 0;
    unsigned *L = calloc((na + 1) * w, sizeof *L);
    if (!L)
        return SIZE_MAX;
    for (size_t i = na; i-- > 0;)
        for (size_t j = nb; j-- > 0;)
            L[i * w + j] = tline_eq(a[i], b[j]) ? L[(i + 1) * w + j + 1] + 1
                           : L[(i + 1) * w + j] > L[i * w + j + 1] ? L[(i + 1) * w + j]
                                                                   : L[i * w + j + 1];
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        if (i < na && j < nb && tline_eq(a[i], b[j]))
            ops[k++] = ' ', i++, j++;
        else if (i < na && (j == nb || L[(i + 1) * w + j] >= L[i * w + j + 1]))
            ops[k++] = '-', i++;
        else
            ops[k++] = '+', j++;
    }
    free(L);
    return k;
}

/* Prints the hunks of an edit script with 3 lines of context. */
static void print_hunks(const char *ops, size_t nops, const tline *a, const tline *b)
{
    const size_t ctx = 3;
    size_t i = 0, ai = 0, bi = 0;
    while (i < nops) {
        if (ops[i] == ' ') {
            i++, ai++, bi++;
            continue;
        }
        size_t back = i < ctx ? i : ctx, s = i - back, a0 = ai - back, b0 = bi - back;
        size_t e = i, quiet = 0; /* hunk ends after ctx*2 unchanged ops */
        for (; e < nops && quiet <= 2 * ctx; e++)
            quiet = ops[e] == ' ' ? quiet + 1 : 0;
        e -= quiet > ctx ? quiet - ctx : 0;
        size_t na = 0, nb = 0;
        for (size_t k = s; k < e; k++)
            na += ops[k] != '+', nb += ops[k] != '-';
        printf("@@ -%zu,%zu +%zu,%zu @@\n", a0 + 1, na, b0 + 1, nb);
        for (size_t k = s, x = a0, y = b0; k < e; k++) {
            const tline *l = ops[k] == '+' ? &b[y] : &a[x];
            printf("%c%.*s\n", ops[k], (int)l->n, l->p);
            x += ops[k] != '+';
            y += ops[k] != '-';
        }
        for (size_t k = i; k < e; k++)
            ai += ops[k] != '+', bi += ops[k] != '-';
        i = e;
    }
}

/* Unified-diff-like report of the old text (-) against the new one (+). */
static void report_diff(const char *old_name, const char *exp, size_t nexp, const char *new_name,
                        const text *act)
{
    tline *a = NULL, *b = NULL;
    char *ops = NULL;
    size_t na = split_text(exp, nexp, &a), nb = split_text(act->p, act->n, &b);
    printf("--- %s\n+++ %s\n", old_name, new_name);
    if (na == SIZE_MAX || nb == SIZE_MAX || !(ops = malloc(na + nb + 1)))
        goto done;
    size_t nops = (na + 1) * (nb + 1) <= DIFF_MAX_CELLS ? edit_script(a, na, b, nb, ops) : SIZE_MAX;
    if (nops != SIZE_MAX) {
        print_hunks(ops, nops, a, b);
        goto done;
    }
    size_t i = 0; /* too big (or no memory) for the LCS table: the first difference */
    while (i < na && i < nb && tline_eq(a[i], b[i]))
        i++;
    printf("@@ first difference at line %zu @@\n", i + 1);
    if (i < na)
        printf("-%.*s\n", (int)a[i].n, a[i].p);
    if (i < nb)
        printf("+%.*s\n", (int)b[i].n, b[i].p);
done:
    free(ops);
    free(a);
    free(b);
}

/* ---- one golden case ---------------------------------------------------------- */

static const size_t chunk_sizes[] = {0, 1, 7};

/* Renders one .log in every chunking; *out gets the whole-file rendering.
 * Returns 0, 1 when renderings disagree, 2 on a pipeline or memory failure. */
static int render_all(const char *name, const char *data, size_t n, text *out)
{
    int rc = 0;
    for (size_t c = 0; c < sizeof chunk_sizes / sizeof *chunk_sizes && rc == 0; c++) {
        text t = {0};
        if (render_file(data, n, chunk_sizes[c], c ? &t : out) != 0) {
            printf("%s: pipeline failed (chunk %zu)\n", name, chunk_sizes[c]);
            rc = 2;
        } else if (c && (t.n != out->n || memcmp(t.p, out->p, t.n) != 0)) {
            char how[64];
            snprintf(how, sizeof how, "%s fed in %zu-byte chunks", name, chunk_sizes[c]);
            printf("%s: the rendering depends on where chunks end\n", name);
            report_diff(name, out->p, out->n, how, &t);
            rc = 1;
        }
        free(t.p);
    }
    return rc;
}

/* Checks (or with update, rewrites) DIR/NAME.expected. 0 ok, 1 mismatch, 2 error. */
static int run_case(const char *dir, const char *log, int update)
{
    char path[4096], exp_path[4096];
    char *data = NULL, *exp = NULL;
    size_t n = 0, nexp = 0;
    text out = {0};
    int rc = 2;
    snprintf(path, sizeof path, "%s/%s", dir, log);
    snprintf(exp_path, sizeof exp_path, "%s/%.*s.expected", dir, (int)(strlen(log) - 4), log);
    if (slurp(path, &data, &n) != 0) {
        printf("%s: %s\n", path, strerror(errno));
        goto done;
    }
    if ((rc = render_all(log, data, n, &out)) != 0)
        goto done;
    if (update) {
        rc = spit(exp_path, &out) ? 2 : 0;
        printf("%s %s\n", rc ? "cannot write" : "wrote", exp_path);
    } else if (slurp(exp_path, &exp, &nexp) != 0) {
        printf("%s: %s (run golden_runner --update %s)\n", exp_path, strerror(errno), dir);
        rc = 1;
    } else if (nexp != out.n || memcmp(exp, out.p, nexp) != 0) {
        report_diff(exp_path, exp, nexp, "actual", &out);
        rc = 1;
    } else {
        printf("ok %s\n", log);
    }
done:
    free(out.p);
    free(exp);
    free(data);
    return rc;
}

/* ---- the directory ------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A case name is NNN-what.log or NNN-what.expected. */
static int good_name(const char *s)
{
    return s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' &&
           s[2] <= '9' && s[3] == '-' && s[4] != '.';
}

/* Whether DIR/NNN-what.log exists for DIR/NNN-what.expected. */
static int has_log(const char *dir, const char *expected)
{
    char log[4096];
    snprintf(log, sizeof log, "%s/%.*s.log", dir, (int)(strlen(expected) - 9), expected);
    FILE *f = fopen(log, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* Lists the case files of dir, sorted, into *out. Returns the count, or -1 when
 * the directory cannot be read. Stray names and .expected files without a .log
 * (stale goldens) are reported and set *bad. */
static int list_cases(const char *dir, char ***out, int *bad)
{
    DIR *d = opendir(dir);
    char **v = NULL;
    int n = 0;
    struct dirent *e;
    *out = NULL;
    if (!d) {
        printf("%s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        int is_log = ends_with(name, ".log"), is_exp = ends_with(name, ".expected");
        if (name[0] == '.' || (!is_log && !is_exp))
            continue;
        if (!good_name(name)) {
            printf("%s/%s: golden files are named NNN-what.log / .expected\n", dir, name);
            *bad = 1;
        } else if (is_exp && !has_log(dir, name)) {
            printf("%s/%s: no matching .log (stale expected file)\n", dir, name);
            *bad = 1;
        } else if (is_log) {
            char **w = realloc(v, (size_t)(n + 1) * sizeof *v);
            if (!w || !(w[n] = strdup(name))) {
                v = w ? w : v;
                n = -1 - n; /* out of memory: free what was listed */
                break;
            }
            v = w;
            n++;
        }
    }
    closedir(d);
    if (n < 0) {
        for (int i = 0; i < -1 - n; i++)
            free(v[i]);
        free(v);
        printf("%s: out of memory\n", dir);
        return -1;
    }
    if (v)
        qsort(v, (size_t)n, sizeof *v, cmp_names);
    *out = v;
    return n;
}

int main(int argc, char **argv)
{
    int update = argc == 3 && strcmp(argv[1], "--update") == 0;
    if (argc != 2 + update || argv[argc - 1][0] == '-') {
        fprintf(stderr, "usage: golden_runner [--update] DIR\n");
        return 2;
    }
    const char *dir = argv[argc - 1];
    char **names = NULL;
    int bad = 0;
    int n = list_cases(dir, &names, &bad);
    if (n < 0)
        return 2;
    int worst = bad;
    if (n == 0) {
        printf("%s: no NNN-what.log cases\n", dir);
        worst = 1;
    }
    for (int i = 0; i < n; i++) {
        int rc = run_case(dir, names[i], update);
        worst = rc > worst ? rc : worst;
        free(names[i]);
    }
    free(names);
    printf("%s: %d case(s), %s\n", dir, n, worst ? "FAILED" : "all match");
    return worst;
}
