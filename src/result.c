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

/* Sorting by a text first key: rows are ordered through (the key's first 16 bytes
 * as big-endian numbers, row) pairs, which compare as strcmp would and mostly
 * without touching the strings; ties fall back to the whole rows. */
typedef struct sort_ent {
    uint64_t prefix[2]; /* the key's first 16 bytes, big-endian */
    const dsq_cell *row;
} sort_ent;

static int cmp_ent(const void *x, const void *y)
{
    const sort_ent *a = x, *b = y;
    for (int i = 0; i < 2; i++)
        if (a->prefix[i] != b->prefix[i])
            return a->prefix[i] < b->prefix[i] ? -1 : 1;
    return cmp_row(a->row, b->row);
}

static int sort_by_prefix(dsq_result *r)
{
    size_t w = (size_t)r->ncols;
    sort_ent *e = malloc(r->nrows * sizeof *e);
    dsq_cell *sorted = malloc(r->nrows * w * sizeof *sorted);
    if (!e || !sorted) {
        free(e);
        free(sorted);
        return -1;
    }
    memset(e, 0, r->nrows * sizeof *e);
    for (size_t i = 0; i < r->nrows; i++) {
        const dsq_cell *row = &r->cells[i * w];
        int ended = 0;
        for (int k = 0; k < 16; k++) { /* bytes after the end count as 0, as strcmp's NUL */
            unsigned char ch = ended ? 0 : (unsigned char)row->s[k];
            ended = !ch;
            e[i].prefix[k / 8] = e[i].prefix[k / 8] << 8 | ch;
        }
        e[i].row = row;
    }
    qsort(e, r->nrows, sizeof *e, cmp_ent);
    for (size_t i = 0; i < r->nrows; i++)
        memcpy(&sorted[i * w], e[i].row, w * sizeof *sorted);
    free(r->cells);
    r->cells = sorted;
    r->cap = r->nrows;
    free(e);
    return 0;
}

void dsq_result_sort(dsq_result *r, int nkeys)
{
    if (nkeys <= 0 || r->nrows < 2)
        return;
    sort_keys = nkeys < r->ncols ? nkeys : r->ncols;
    int text_key = 1;
    for (size_t i = 0; i < r->nrows && text_key; i++)
        text_key = !r->cells[i * (size_t)r->ncols].is_null && r->cells[i * (size_t)r->ncols].s;
    if (text_key && r->nrows >= 64 && sort_by_prefix(r) == 0)
        return;
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

/* Writes the decimal digits of v at out (no terminator); returns their count. */
static size_t u64_digits(uint64_t v, char *out)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* Writes m / 10^decimals as text ("-0.0042", "123.5", "17"), terminated; returns
 * its length. */
static size_t put_decimal(uint64_t m, int decimals, int negative, char *out)
{
    char d[20];
    size_t nd = u64_digits(m, d), n = 0, dec = (size_t)decimals;
    if (negative)
        out[n++] = '-';
    if (nd <= dec) { /* 0.00ddd */
        out[n++] = '0';
        out[n++] = '.';
        for (size_t i = nd; i < dec; i++)
            out[n++] = '0';
        memcpy(out + n, d, nd);
        n += nd;
    } else {
        memcpy(out + n, d, nd - dec);
        n += nd - dec;
        if (dec) {
            out[n++] = '.';
            memcpy(out + n, d + nd - dec, dec);
            n += dec;
        }
    }
    out[n] = 0;
    return n;
}

static const double pow10_tab[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

/* "%.6g" without printf for the values tables mostly hold (1e-4 <= |v| < 1e6):
 * six significant digits, trailing zeros dropped. Returns 0 when the rounding is
 * too close to a tie to decide from a double product (the caller then asks printf,
 * which rounds the exact binary value), or the text's length. */
static size_t fast_g6(double v, char *out)
{
    double a = fabs(v);
    if (!(a >= 1e-4 && a < 1e6))
        return 0;
    int e = 5; /* a >= 10^e, the exponent %g would print */
    while (e > 0 && a < pow10_tab[e])
        e--;
    if (e == 0 && a < 1.0) {
        e = -1;
        while (e > -4 && a < 1.0 / pow10_tab[-e])
            e--;
    }
    int decimals = 5 - e; /* 0..9 */
    double scaled = a * pow10_tab[decimals], fl = floor(scaled), fr = scaled - fl;
    if (fabs(fr - 0.5) < 1e-6)
        return 0;
    uint64_t m = (uint64_t)fl + (fr > 0.5);
    if (m < 100000 || m >= 1000000) /* rounding crossed a power of ten */
        return 0;
    while (decimals > 0 && m % 10 == 0) { /* %g drops trailing zeros */
        m /= 10;
        decimals--;
    }
    return put_decimal(m, decimals, v < 0, out);
}

/* Copies n bytes of text to out, cut to cap - 1, terminated; returns the length. */
static size_t copy_out(const char *buf, size_t n, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, buf, n);
    out[n] = 0;
    return n;
}

size_t dsq_format_number(double v, int is_int, char *out, size_t cap)
{
    char buf[40];
    size_t n = 0;
    int whole = is_int || (fabs(v) < 1e15 && v == floor(v));
    if (isnan(v)) {
        n = (size_t)snprintf(buf, sizeof buf, "nan");
    } else if (whole && v == floor(v) && fabs(v) < 1e15 && !(v == 0 && signbit(v))) {
        if (v < 0)
            buf[n++] = '-';
        n += u64_digits((uint64_t)fabs(v), buf + n);
        buf[n] = 0;
    } else if (whole) {
        n = (size_t)snprintf(buf, sizeof buf, "%.0f", v);
    } else if (!(n = fast_g6(v, buf))) {
        n = (size_t)snprintf(buf, sizeof buf, "%.6g", v);
    }
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    return copy_out(buf, n, out, cap);
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

/* The text a table shows for a cell; returns its length. */
static size_t cell_text(const dsq_cell *c, char *out, size_t cap, int with_unit)
{
    if (c->is_null) {
        snprintf(out, cap, "-");
        return strlen(out);
    }
    if (c->s) {
        defused(c->s, out, cap);
        return strlen(out);
    }
    if (c->unit == DSQ_U_TIME) {
        time_text(c->v, out, cap);
        return strlen(out);
    }
    size_t n = dsq_format_number(c->v, c->is_int, out, cap);
    const char *u = dsq_unit_name(c->unit);
    size_t ul = strlen(u);
    if (with_unit && ul && n + ul + 2 < cap) {
        if (c->unit != DSQ_U_PCT)
            out[n++] = ' ';
        memcpy(out + n, u, ul + 1);
        n += ul;
    }
    return n;
}

/* Output collected in a buffer and written in large pieces. */
typedef struct {
    FILE *f;
    size_t n;
    char b[1 << 16];
} outbuf;

static void out_flush(outbuf *o)
{
    fwrite(o->b, 1, o->n, o->f);
    o->n = 0;
}

static void out_put(outbuf *o, const char *s, size_t n)
{
    while (n > 0) {
        if (o->n == sizeof o->b)
            out_flush(o);
        size_t k = sizeof o->b - o->n < n ? sizeof o->b - o->n : n;
        memcpy(o->b + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

static void out_pad(outbuf *o, size_t n)
{
    static const char spaces[] = "                                ";
    for (; n > sizeof spaces - 1; n -= sizeof spaces - 1)
        out_put(o, spaces, sizeof spaces - 1);
    out_put(o, spaces, n);
}

/* One cell padded to width w (right-aligned numbers, left-aligned text; the last
 * column's text is not padded), then the separator or the end of the line. */
static void out_cell(outbuf *o, const char *s, size_t n, size_t w, int right, int last)
{
    if (right && n < w)
        out_pad(o, w - n);
    out_put(o, s, n);
    if (last) {
        out_put(o, "\n", 1);
        return;
    }
    if (!right && n < w)
        out_pad(o, w - n);
    out_put(o, "  ", 2);
}

/* Cells are formatted once into one text buffer (offsets per cell), measured,
 * then written aligned. */
static void print_table(const dsq_result *r, FILE *f)
{
    size_t ncells = r->nrows * (size_t)r->ncols, tcap = ncells * 16 + 64, tlen = 0;
    size_t *w = calloc((size_t)r->ncols, sizeof *w);
    size_t *off = malloc((ncells + 1) * sizeof *off);
    char *text = malloc(tcap);
    outbuf *o = malloc(sizeof *o);
    if (!w || !off || !text || !o)
        goto cleanup;
    for (int c = 0; c < r->ncols; c++)
        w[c] = strlen(r->names[c]);
    for (size_t i = 0; i < ncells; i++) {
        if (tcap - tlen < 512) {
            char *nt = realloc(text, tcap * 2);
            if (!nt)
                goto cleanup;
            text = nt;
            tcap *= 2;
        }
        off[i] = tlen;
        size_t n = cell_text(&r->cells[i], text + tlen, 512, 1);
        tlen += n;
        if (n > w[i % (size_t)r->ncols])
            w[i % (size_t)r->ncols] = n;
    }
    off[ncells] = tlen;
    o->f = f;
    o->n = 0;
    for (int c = 0; c < r->ncols; c++) { /* headers align like their column's cells */
        int right = r->nrows > 0 && !dsq_result_cell(r, 0, c)->s;
        out_cell(o, r->names[c], strlen(r->names[c]), w[c], right, c + 1 == r->ncols);
    }
    for (size_t i = 0; i < ncells; i++) {
        int c = (int)(i % (size_t)r->ncols);
        int right = !r->cells[i].s; /* numbers, and the "-" of a missing number */
        out_cell(o, text + off[i], off[i + 1] - off[i], w[c], right, c + 1 == r->ncols);
    }
    out_flush(o);
cleanup:
    free(o);
    free(text);
    free(off);
    free(w);
}

static void csv_field(FILE *f, const char *s)
{
    size_t n = 0;
    while (s[n] && s[n] != ',' && s[n] != '"' && (unsigned char)s[n] >= 0x20 && s[n] != 0x7F)
        n++;
    if (!s[n]) { /* nothing to quote or defuse: the common case, in one write */
        fwrite(s, 1, n, f);
        return;
    }
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

/* A number logs print with at most six decimals (v == m / 10^e exactly, the least
 * such e), written as m with e decimals: the very text "%.15g" gives for it (when
 * 1e-4 <= |v| < 1e15 and m has at most 15 digits: the double is far closer to
 * m / 10^e than half a unit of the 15th digit), found without printf. 0 if v is
 * not such a number. */
static size_t short_decimal(double v, char *out)
{
    double a = fabs(v);
    if (!(a >= 1e-4 && a < 1e15))
        return 0;
    for (int e = 0; e < 7; e++) {
        double s = a * pow10_tab[e];
        if (!(s < 1e15))
            return 0;
        uint64_t m = (uint64_t)(s + 0.5);
        if ((double)m / pow10_tab[e] != a)
            continue;
        return put_decimal(m, e, v < 0, out);
    }
    return 0;
}

/* Shortest text that reads back as the same double ("%.15g" when that reads back,
 * else "%.17g"). */
size_t dsq_plain_number(double v, char *out, size_t cap)
{
    char buf[64];
    size_t n = short_decimal(v, buf);
    if (!n) {
        snprintf(buf, sizeof buf, "%.15g", v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, sizeof buf, "%.17g", v);
        n = strlen(buf);
    }
    return copy_out(buf, n, out, cap);
}

static void plain_number(FILE *f, const dsq_cell *c)
{
    char buf[64];
    if (c->unit == DSQ_U_TIME) { /* times stay readable in CSV / JSON too */
        time_text(c->v, buf, sizeof buf);
        fprintf(f, "\"%s\"", buf);
        return;
    }
    if (c->is_int && fabs(c->v) < 1e15 && c->v == floor(c->v) && !(c->v == 0 && signbit(c->v))) {
        size_t n = 0;
        if (c->v < 0)
            buf[n++] = '-';
        n += u64_digits((uint64_t)fabs(c->v), buf + n);
        fwrite(buf, 1, n, f);
        return;
    }
    if (c->is_int) {
        fprintf(f, "%.0f", c->v);
        return;
    }
    fwrite(buf, 1, dsq_plain_number(c->v, buf, sizeof buf), f);
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
