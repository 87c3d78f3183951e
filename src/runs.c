/* Run listing: sums source records per run, then asks the query engine for each
 * run's peak Max_MA, so the two views can never disagree. */
#include "runs.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "query.h"

typedef struct run_sum {
    uint32_t run;
    uint64_t files, members, lines, events, errors;
} run_sum;

typedef struct runs_ctx {
    run_sum *v;
    size_t n, cap;
} runs_ctx;

static int add_source(void *ctx, const char *path, const dsq_source_rec *rec)
{
    runs_ctx *rc = ctx;
    (void)path;
    size_t i;
    for (i = 0; i < rc->n && rc->v[i].run != rec->run; i++)
        ;
    if (i == rc->n) {
        if (rc->n == rc->cap) {
            size_t cap = rc->cap ? rc->cap * 2 : 64;
            run_sum *n = realloc(rc->v, cap * sizeof *n);
            if (!n)
                return DSQ_ENOMEM;
            rc->v = n;
            rc->cap = cap;
        }
        memset(&rc->v[rc->n++], 0, sizeof rc->v[0]);
        rc->v[i].run = rec->run;
    }
    rc->v[i].files++;
    rc->v[i].members += rec->members;
    rc->v[i].lines += rec->lines;
    rc->v[i].events += rec->events;
    rc->v[i].errors += rec->errors;
    return 0;
}

/* Peak Max_MA of one run from a "max Max_MA by run" result, or a null cell. */
static dsq_cell peak_of(const dsq_result *peaks, const char *run)
{
    dsq_cell none = {.is_null = 1};
    for (size_t i = 0; peaks && i < dsq_result_rows(peaks); i++)
        if (strcmp(dsq_result_cell(peaks, i, 0)->s, run) == 0)
            return *dsq_result_cell(peaks, i, 1);
    return none;
}

int dsq_runs_list(dsq_store *st, dsq_result **out, dsq_error *err)
{
    runs_ctx rc = {0};
    dsq_result *peaks = NULL, *r = NULL;
    dsq_query q;
    int status = dsq_store_scan_sources(st, add_source, &rc, err);
    if (status)
        goto done;
    dsq_dict *d = dsq_store_dict(st);
    if (dsq_dict_find(d, "Max_MA", 6) && dsq_query_parse("max Max_MA by run", &q, err) == 0 &&
        (status = dsq_query_run(&q, &st, 1, &peaks, err)))
        goto done;
    static const char *const names[] = {"run", "files", "members", "lines", "events",
                                        "damaged", "peak Max_MA"};
    if (!(r = dsq_result_new(7, names))) {
        status = dsq_error_set(err, DSQ_ENOMEM, "runs");
        goto done;
    }
    for (size_t i = 0; i < rc.n; i++) {
        const run_sum *s = &rc.v[i];
        const char *name = dsq_dict_str(d, s->run, NULL);
        dsq_cell cells[7] = {{.s = name},
                             {.v = (double)s->files, .is_int = 1},
                             {.v = (double)s->members, .is_int = 1},
                             {.v = (double)s->lines, .is_int = 1},
                             {.v = (double)s->events, .is_int = 1},
                             {.v = (double)s->errors, .is_int = 1},
                             peak_of(peaks, name)};
        if ((status = dsq_result_add_row(r, cells)))
            goto done;
    }
    dsq_result_sort(r, 1);
    *out = r;
    r = NULL;
done:
    dsq_result_free(r);
    dsq_result_free(peaks);
    free(rc.v);
    return status;
}
