/* Result tables: columns of text or numbers with units, printed as an aligned
 * table for people, CSV, or NDJSON for scripts. Numbers keep their unit in the
 * table ("6.54 GB") and are plain in CSV and JSON; NDJSON adds the unit under
 * "<column>_unit". CSV stays a plain rectangle of values (no unit columns). */
#ifndef DSQ_RESULT_H
#define DSQ_RESULT_H

#include <stddef.h>
#include <stdio.h>

typedef struct dsq_result dsq_result;

enum dsq_format { DSQ_FMT_TABLE, DSQ_FMT_CSV, DSQ_FMT_JSON };

typedef struct dsq_cell {
    const char *s;     /* text, or NULL for a number */
    double v;
    unsigned char unit; /* enum dsq_unit */
    unsigned char is_int;
    unsigned char is_null;
} dsq_cell;

/* A result with ncols named columns; names are copied. */
dsq_result *dsq_result_new(int ncols, const char *const *names);
void dsq_result_free(dsq_result *r);

/* Appends a row (cells copied; text copied into the result). 0 or DSQ_ENOMEM. */
int dsq_result_add_row(dsq_result *r, const dsq_cell *cells);

size_t dsq_result_rows(const dsq_result *r);
int dsq_result_cols(const dsq_result *r);
const dsq_cell *dsq_result_cell(const dsq_result *r, size_t row, int col);

/* Sorts rows by the first `nkeys` columns (text by bytes, numbers by value). */
void dsq_result_sort(dsq_result *r, int nkeys);

/* Re-sorts by column `col`, largest first (for `top N`); rows that tie are ordered
 * by the columns before `col` (the group keys), as dsq_result_sort orders them. */
void dsq_result_sort_desc(dsq_result *r, int col);
/* Sorts by one column, ascending or descending, empty cells last; ties keep the
 * order of the first nkeys columns. */
void dsq_result_sort_by(dsq_result *r, int col, int desc, int nkeys);
/* A column's index by its name, -1 if none; a column's name. */
int dsq_result_col_index(const dsq_result *r, const char *name);
const char *dsq_result_col_name(const dsq_result *r, int col);

/* Keeps at most n rows. */
void dsq_result_truncate(dsq_result *r, size_t n);

void dsq_result_print(const dsq_result *r, FILE *f, enum dsq_format fmt);

/* Formats a number the way tables show it (%.6g, integer when whole), exactly as
 * printf would, without printf for the common cases. Returns the text's length
 * (cut to cap - 1). */
size_t dsq_format_number(double v, int is_int, char *out, size_t cap);

/* The shortest text that reads back as v, as CSV and JSON write numbers ("%.15g" if
 * that reads back, else "%.17g"; numbers with few decimals without printf). Returns
 * the length (cut to cap - 1). */
size_t dsq_plain_number(double v, char *out, size_t cap);

#endif
