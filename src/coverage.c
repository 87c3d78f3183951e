/* Coverage report (see coverage.h). The shape table is fixed-size open
 * addressing; once full, new shapes are counted together as "(other shapes)",
 * so memory stays bounded whatever the input. */
#include "coverage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "event.h"
#include "grammar.h"
#include "input.h"
#include "lines.h"
#include "scan.h"
#include "walk.h"

#define SHAPES 65536
#define SHAPE_LEN 60
#define EXAMPLE_LEN 120

typedef struct shape {
    uint64_t count;
    char key[SHAPE_LEN + 1];
    char example[EXAMPLE_LEN + 1];
} shape;

typedef struct cov {
    const dsq_coverage_params *p;
    dsq_dict *dict;
    dsq_input *in;
    dsq_lines *lines;
    dsq_scan *scan;
    shape *shapes;
    size_t nshapes;
    uint64_t overflow;
    uint64_t fam[DSQ_FAM_COUNT];
    uint64_t kinds[DSQ_EV_KIND_COUNT];
    dsq_coverage *out;
} cov;

/* Folds a line to its shape: digit runs become '#', at most SHAPE_LEN bytes,
 * trailing blanks dropped. */
static void shape_of(const char *s, size_t n, char *key)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < SHAPE_LEN; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= '0' && c <= '9') {
            while (i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')
                i++;
            key[k++] = '#';
        } else {
            key[k++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        }
    }
    while (k && key[k - 1] == ' ')
        k--;
    key[k] = 0;
    if (k == 0)
        snprintf(key, SHAPE_LEN + 1, "(blank)");
}

static void add_shape(cov *c, const char *s, size_t n)
{
    char key[SHAPE_LEN + 1];
    shape_of(s, n, key);
    uint64_t h = dsq_hash64(key, strlen(key), 7);
    for (size_t i = h & (SHAPES - 1), probes = 0; probes < 64; i = (i + 1) & (SHAPES - 1), probes++) {
        shape *sh = &c->shapes[i];
        if (sh->count && strcmp(sh->key, key) == 0) {
            sh->count++;
            return;
        }
        if (!sh->count) {
            if (c->nshapes * 4 >= SHAPES * 3)
                break;
            memcpy(sh->key, key, sizeof key);
            snprintf(sh->example, sizeof sh->example, "%.*s", (int)(n < EXAMPLE_LEN ? n : EXAMPLE_LEN), s);
            for (char *q = sh->example; *q; q++)
                if ((unsigned char)*q < 0x20)
                    *q = '?';
            sh->count = 1;
            c->nshapes++;
            return;
        }
    }
    c->overflow++;
}

static void observe(void *ctx, const dsq_match *m, const char *line, size_t len, unsigned flags)
{
    cov *c = ctx;
    (void)flags;
    if (m->family >= 0 && m->family < DSQ_FAM_COUNT)
        c->fam[m->family]++;
    if (m->family != DSQ_FAM_OTHER)
        return;
    if (m->kind == DSQ_MK_PREFIX)
        add_shape(c, m->body.p, m->body.n);
    else
        add_shape(c, line, len);
}

static int on_event(void *ctx, const dsq_event *ev)
{
    cov *c = ctx;
    if (ev->kind < DSQ_EV_KIND_COUNT)
        c->kinds[ev->kind]++;
    return 0;
}

static void report(cov *c, dsq_error *e, const char *file, const char *member)
{
    dsq_error_where(e, file, member);
    if (c->p->problem)
        c->p->problem(c->p->ctx, e);
}

/* dsq_walk callback: decodes every member of one file through the scanner. */
static int cover_file(void *ctx, const char *full, const char *rel, int link, const struct stat *sb)
{
    (void)link, (void)sb;
    cov *c = ctx;
    dsq_error e;
    dsq_member_info mi;
    (void)rel;
    dsq_error_clear(&e);
    if (dsq_input_open(c->in, full, &e) != 0) {
        report(c, &e, full, NULL);
        return 0;
    }
    c->out->files++;
    int r;
    while ((r = dsq_input_next_member(c->in, &mi, &e)) == 1) {
        dsq_lines_reset(c->lines);
        dsq_scan_begin(c->scan, 0, -1);
        for (;;) {
            const char *data;
            size_t len;
            if (dsq_input_read(c->in, &data, &len, &e) != 0) {
                report(c, &e, full, mi.name);
                break;
            }
            if (len == 0)
                break;
            dsq_lines_feed(c->lines, data, len);
        }
        dsq_lines_finish(c->lines);
        dsq_scan_end(c->scan);
        c->out->lines += dsq_lines_stats_get(c->lines)->lines;
    }
    if (r < 0)
        report(c, &e, full, NULL);
    dsq_input_close(c->in);
    return 0;
}

/* dsq_walk problem callback: forwards to the caller's. */
static void walk_problem(void *ctx, const dsq_error *e)
{
    cov *c = ctx;
    if (c->p->problem)
        c->p->problem(c->p->ctx, e);
}

static int cmp_shape(const void *a, const void *b)
{
    const shape *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->key, y->key);
}

static int build_tables(cov *c)
{
    static const char *const fam_cols[] = {"family", "lines", "share %"};
    static const char *const kind_cols[] = {"kind", "events"};
    static const char *const shape_cols[] = {"lines", "shape (digits as #)", "example"};
    dsq_coverage *o = c->out;
    if (!(o->families = dsq_result_new(3, fam_cols)) || !(o->kinds = dsq_result_new(2, kind_cols)) ||
        !(o->shapes = dsq_result_new(3, shape_cols)))
        return DSQ_ENOMEM;
    for (int f = 0; f < DSQ_FAM_COUNT; f++) {
        if (!c->fam[f])
            continue;
        double share = o->lines ? 100.0 * (double)c->fam[f] / (double)o->lines : 0;
        dsq_cell row[3] = {{.s = dsq_family_name(f)}, {.v = (double)c->fam[f], .is_int = 1},
                           {.v = (double)(long)(share * 10 + 0.5) / 10}};
        if (dsq_result_add_row(o->families, row))
            return DSQ_ENOMEM;
        if (f != DSQ_FAM_OTHER)
            o->recognized += c->fam[f];
    }
    for (int k = 1; k < DSQ_EV_KIND_COUNT; k++) {
        dsq_cell row[2] = {{.s = dsq_ev_kind_name(k)}, {.v = (double)c->kinds[k], .is_int = 1}};
        o->events += c->kinds[k];
        if (c->kinds[k] && dsq_result_add_row(o->kinds, row))
            return DSQ_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < SHAPES; i++)
        if (c->shapes[i].count)
            c->shapes[n++] = c->shapes[i];
    qsort(c->shapes, n, sizeof *c->shapes, cmp_shape);
    size_t top = c->p->top > 0 ? (size_t)c->p->top : 30;
    for (size_t i = 0; i < n && i < top; i++) {
        dsq_cell row[3] = {{.v = (double)c->shapes[i].count, .is_int = 1},
                           {.s = c->shapes[i].key}, {.s = c->shapes[i].example}};
        if (dsq_result_add_row(o->shapes, row))
            return DSQ_ENOMEM;
    }
    return 0;
}

int dsq_coverage_run(const dsq_coverage_params *p, const char *const *paths, int npaths,
                     dsq_coverage *out, dsq_error *err)
{
    cov c = {.p = p, .out = out};
    int status = 0;
    memset(out, 0, sizeof *out);
    dsq_scan_params sp = {.emit = on_event, .ctx = &c, .observe = observe, .observe_ctx = &c};
    dsq_lines_params lp = {0, dsq_scan_line, NULL};
    if (dsq_dict_new(&c.dict) || dsq_input_new(&c.in) || !(c.shapes = calloc(SHAPES, sizeof *c.shapes)))
        goto nomem;
    sp.dict = c.dict;
    if (dsq_scan_new(&sp, &c.scan))
        goto nomem;
    lp.ctx = c.scan;
    if (dsq_lines_new(&lp, &c.lines))
        goto nomem;
    dsq_walk_params wp = {.file = cover_file, .problem = walk_problem, .ctx = &c};
    for (int i = 0; i < npaths && !status; i++)
        status = dsq_walk(&wp, paths[i]);
    if (!status && build_tables(&c))
        goto nomem;
    goto done;
nomem:
    status = dsq_error_set(err, DSQ_ENOMEM, "out of memory");
done:
    dsq_lines_free(c.lines);
    dsq_scan_free(c.scan);
    dsq_input_free(c.in);
    dsq_dict_free(c.dict);
    free(c.shapes);
    return status;
}

void dsq_coverage_free(dsq_coverage *c)
{
    if (!c)
        return;
    dsq_result_free(c->families);
    dsq_result_free(c->kinds);
    dsq_result_free(c->shapes);
    memset(c, 0, sizeof *c);
}
