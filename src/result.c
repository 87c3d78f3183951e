/* Result tables (see result.h). Text cells are copied into chunked storage owned
 * by the result, so a result outlives the index it came from. */
#include "result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"
#include "num.h"
#include "timeconv.h"

typedef struct text_chunk {
    struct text_chunk *next;
    size_t used, cap;
    char data[];
} text_chunk;

struct dsq_result {
    int ncols;
    char **names;
    dsq_cell *cells;
    size_t nrows, cap;
    text_chunk *text;
};

dsq_result *dsq_result_new(int ncols, const char *const *names)
{
    dsq_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->ncols = ncols;
    r->names = calloc((size_t)ncols, sizeof *r->names);
    if (!r->names)
        goto fail;
    for (int i = 0; i < ncols; i++)
        if (!(r->names[i] = strdup(names[i])))
            goto fail;
    return r;
fail:
    dsq_result_free(r);
    return NULL;
}

void dsq_result_free(dsq_result *r)
{
    if (!r)
        return;
    for (int i = 0; r->names && i < r->ncols; i++)
        free(r->names[i]);
    free(r->names);
    free(r->cells);
    for (text_chunk *c = r->text, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(r);
}

static const char *copy_text(dsq_result *r, const char *s)
{
    size_t n = strlen(s) + 1;
    text_chunk *c = r->text;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = r->text;
        r->text = c;
    }
    char *p = c->data + c->used;
    memcpy(p, s, n);
    c->used += n;
    return p;
}

int dsq_result_add_row(dsq_result *r, const dsq_cell *cells)
{
    if (r->nrows == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        dsq_cell *n = realloc(r->cells, cap * (size_t)r->ncols * sizeof *n);
        if (!n)
            return DSQ_ENOMEM;
        r->cells = n;
        r->cap = cap;
    }
    dsq_cell *row = r->cells + r->nrows * (size_t)r->ncols;
    for (int i = 0; i < r->ncols; i++) {
        row[i] = cells[i];
        if (cells[i].s && !(row[i].s = copy_text(r, cells[i].s)))
            return DSQ_ENOMEM;
    }
    r->nrows++;
    return 0;
}

size_t dsq_result_rows(const dsq_result *r) { return r->nrows; }
int dsq_result_cols(const dsq_result *r) { return r->ncols; }

const dsq_cell *dsq_result_cell(const dsq_result *r, size_t row, int col)
{
    return &r->cells[row * (size_t)r->ncols + (size_t)col];
}

static int cmp_cell(const dsq_cell *a, const dsq_cell *b)
{
    if (a->is_null != b->is_null)
        return a->is_null ? 1 : -1;
    if (a->s && b->s)
        return strcmp(a->s, b->s);
    if (a->s || b->s)
        return a->s ? 1 : -1;
    return (a->v > b->v) - (a->v < b->v);
}

static int sort_keys; /* qsort has no context argument; sorting is not reentrant */

static int cmp_row(const void *x, const void *y)
{
    const dsq_cell *a = x, *b = y;
    for (int i = 0; i < sort_keys; i++) {
        int c = cmp_cell(&a[i], &b[i]);
        if (c)
            return c;
    }
    return 0;
}

void dsq_result_sort(dsq_result *r, int nkeys)
{
    if (nkeys <= 0 || r->nrows < 2)
        return;
    sort_keys = nkeys < r->ncols ? nkeys : r->ncols;
    qsort(r->cells, r->nrows, (size_t)r->ncols * sizeof(dsq_cell), cmp_row);
}

static int order_col, order_desc;

static int cmp_order(const void *x, const void *y)
{
    const dsq_cell *a = x, *b = y;
    if (a[order_col].is_null != b[order_col].is_null)
        return a[order_col].is_null ? 1 : -1; /* empty cells last either way */
    int c = order_desc ? cmp_cell(&b[order_col], &a[order_col]) : cmp_cell(&a[order_col], &b[order_col]);
    return c ? c : cmp_row(x, y);
}

void dsq_result_sort_by(dsq_result *r, int col, int desc, int nkeys)
{
    if (col < 0 || col >= r->ncols || r->nrows < 2)
        return;
    order_col = col;
    order_desc = desc;
    sort_keys = nkeys < r->ncols ? nkeys : r->ncols;
    qsort(r->cells, r->nrows, (size_t)r->ncols * sizeof(dsq_cell), cmp_order);
}

void dsq_result_sort_desc(dsq_result *r, int col) { dsq_result_sort_by(r, col, 1, col); }

int dsq_result_col_index(const dsq_result *r, const char *name)
{
    for (int i = 0; i < r->ncols; i++)
        if (strcmp(r->names[i], name) == 0)
            return i;
    return -1;
}

const char *dsq_result_col_name(const dsq_result *r, int col)
{
    return col >= 0 && col < r->ncols ? r->names[col] : NULL;
}

void dsq_result_truncate(dsq_result *r, size_t n)
{
    if (n < r->nrows)
        r->nrows = n;
}

void dsq_format_number(double v, int is_int, char *out, size_t cap)
{
    if (isnan(v)) {
        snprintf(out, cap, "nan");
    } else if (is_int || (fabs(v) < 1e15 && v == floor(v))) {
        snprintf(out, cap, "%.0f", v);
    } else {
        snprintf(out, cap, "%.6g", v);
    }
}

/* "2024-07-20 21:30:05.202" for a time in microseconds. */
static void time_text(double v, char *out, size_t cap)
{
    char buf[64];
    int64_t t = (int64_t)v;
    dsq_time_format(t, buf);
    long long ms = ((t % 1000000) + 1000000) % 1000000 / 1000;
    snprintf(out, cap, "%.40s.%03lld", buf, ms);
}

/* Copies text taken from logs (labels, names) with its control bytes made '?':
 * an ANSI escape in a log line must not reach the reader's terminal. */
static void defused(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[i] = (char)(ch < 0x20 || ch == 0x7F ? '?' : ch);
    }
    out[i] = 0;
}

/* The text a table shows for a cell. */
static void cell_text(const dsq_cell *c, char *out, size_t cap, int with_unit)
{
    if (c->is_null) {
        snprintf(out, cap, "-");
        return;
    }
    if (c->s) {
        defused(c->s, out, cap);
        return;
    }
    if (c->unit == DSQ_U_TIME) {
        time_text(c->v, out, cap);
        return;
    }
    dsq_format_number(c->v, c->is_int, out, cap);
    const char *u = dsq_unit_name(c->unit);
    if (with_unit && *u) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s", c->unit == DSQ_U_PCT ? "" : " ", u);
    }
}

static void print_table(const dsq_result *r, FILE *f)
{
    size_t *w = calloc((size_t)r->ncols, sizeof *w);
    char buf[512];
    if (!w)
        return;
    for (int c = 0; c < r->ncols; c++)
        w[c] = strlen(r->names[c]);
    for (size_t i = 0; i < r->nrows; i++)
        for (int c = 0; c < r->ncols; c++) {
            cell_text(dsq_result_cell(r, i, c), buf, sizeof buf, 1);
            if (strlen(buf) > w[c])
                w[c] = strlen(buf);
        }
    for (int c = 0; c < r->ncols; c++) { /* headers align like their column's cells */
        int right = r->nrows > 0 && !dsq_result_cell(r, 0, c)->s;
        if (c + 1 == r->ncols && !right)
            fprintf(f, "%s\n", r->names[c]);
        else
            fprintf(f, right ? "%*s%s" : "%-*s%s", (int)w[c], r->names[c],
                    c + 1 == r->ncols ? "\n" : "  ");
    }
    for (size_t i = 0; i < r->nrows; i++)
        for (int c = 0; c < r->ncols; c++) {
            const dsq_cell *cell = dsq_result_cell(r, i, c);
            cell_text(cell, buf, sizeof buf, 1);
            int right = !cell->s; /* numbers, and the "-" of a missing number */
            int width = (int)w[c];
            if (c + 1 == r->ncols && !right)
                fprintf(f, "%s\n", buf);
            else
                fprintf(f, right ? "%*s%s" : "%-*s%s", width, buf, c + 1 == r->ncols ? "\n" : "  ");
        }
    free(w);
}

static void csv_field(FILE *f, const char *s)
{
    int quote = strpbrk(s, ",\"\n\r") != NULL;
    if (quote)
        fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"')
            fputc('"', f);
        fputc(ch == '\n' || ch == '\r' || (ch >= 0x20 && ch != 0x7F) ? ch : '?', f);
    }
    if (quote)
        fputc('"', f);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xC2 && p[0] <= 0xDF ? 2
             : p[0] >= 0xE0 && p[0] <= 0xEF ? 3 : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((n == 3 && p[0] == 0xE0 && p[1] < 0xA0) || (n == 3 && p[0] == 0xED && p[1] >= 0xA0) ||
        (n == 4 && p[0] == 0xF0 && p[1] < 0x90) || (n == 4 && p[0] == 0xF4 && p[1] >= 0x90))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return n;
}

/* A JSON string; bytes that are not UTF-8 (logs are not always) become U+FFFD. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
            p++;
        } else if (*p < 0x20 || *p == 0x7F) {
            fprintf(f, "\\u%04x", *p);
            p++;
        } else {
            fwrite(p, 1, n, f);
            p += n;
        }
    }
    fputc('"', f);
}

/* Shortest text that reads back as the same double. */
static void plain_number(FILE *f, const dsq_cell *c)
{
    char buf[64];
    if (c->unit == DSQ_U_TIME) { /* times stay readable in CSV / JSON too */
        time_text(c->v, buf, sizeof buf);
        fprintf(f, "\"%s\"", buf);
        return;
    }
    if (c->is_int) {
        fprintf(f, "%.0f", c->v);
        return;
    }
    snprintf(buf, sizeof buf, "%.15g", c->v);
    if (strtod(buf, NULL) != c->v)
        snprintf(buf, sizeof buf, "%.17g", c->v);
    fputs(buf, f);
}

static void print_csv(const dsq_result *r, FILE *f)
{
    for (int c = 0; c < r->ncols; c++) {
        if (c)
            fputc(',', f);
        csv_field(f, r->names[c]);
    }
    fputc('\n', f);
    for (size_t i = 0; i < r->nrows; i++) {
        for (int c = 0; c < r->ncols; c++) {
            const dsq_cell *cell = dsq_result_cell(r, i, c);
            if (c)
                fputc(',', f);
            if (cell->is_null)
                continue;
            char tbuf[64];
            if (cell->s)
                csv_field(f, cell->s);
            else if (cell->unit == DSQ_U_TIME)
                time_text(cell->v, tbuf, sizeof tbuf), fputs(tbuf, f);
            else
                plain_number(f, cell);
        }
        fputc('\n', f);
    }
}

static void print_json(const dsq_result *r, FILE *f)
{
    for (size_t i = 0; i < r->nrows; i++) {
        fputc('{', f);
        for (int c = 0; c < r->ncols; c++) {
            const dsq_cell *cell = dsq_result_cell(r, i, c);
            if (c)
                fputc(',', f);
            json_string(f, r->names[c]);
            fputc(':', f);
            int number = !cell->s && !cell->is_null && isfinite(cell->v);
            if (cell->s)
                json_string(f, cell->s);
            else if (!number) /* missing, or inf/nan, which JSON cannot hold */
                fputs("null", f);
            else
                plain_number(f, cell);
            if (number && *dsq_unit_name(cell->unit)) {
                fputc(',', f);
                char key[300];
                snprintf(key, sizeof key, "%s_unit", r->names[c]);
                json_string(f, key);
                fputc(':', f);
                json_string(f, dsq_unit_name(cell->unit));
            }
        }
        fputs("}\n", f);
    }
}

void dsq_result_print(const dsq_result *r, FILE *f, enum dsq_format fmt)
{
    switch (fmt) {
    case DSQ_FMT_CSV: print_csv(r, f); break;
    case DSQ_FMT_JSON: print_json(r, f); break;
    default: print_table(r, f); break;
    }
}
