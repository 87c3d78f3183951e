/* Run listing: per-run sums of the source records and the peak Max_MA, over an
 * index written through the store API. */
#include <stdlib.h>

#include "dsq/dsq.h"
#include "num.h"
#include "rollup.h"
#include "runs.h"
#include "store.h"
#include "test.h"
#include "tmpdir.h"

static uint32_t id(dsq_store *st, const char *s)
{
    return dsq_dict_intern(dsq_store_dict(st), s, strlen(s));
}

static void add_source(dsq_store *st, uint32_t sid, const char *path, const char *run,
                       uint32_t members, uint64_t lines, uint64_t events, uint32_t errors)
{
    dsq_source_rec r;
    dsq_error err;
    memset(&r, 0, sizeof r);
    dsq_error_clear(&err);
    r.id = sid;
    r.run = id(st, run);
    r.members = members;
    r.lines = lines;
    r.events = events;
    r.errors = errors;
    CHECK_INT(dsq_store_source_put(st, path, &r, &err), 0);
}

static void add_peak(dsq_store *st, uint32_t sid, const char *run, double v)
{
    dsq_block b;
    dsq_error err;
    memset(&b, 0, sizeof b);
    dsq_error_clear(&err);
    dsq_rollup *roll = NULL;
    CHECK_INT(dsq_rollup_new(st, &roll), 0);
    dsq_rollup_begin(roll, id(st, run), sid);
    dsq_event ev = {.kind = DSQ_EV_MEMORY, .t_us = 5, .nf = 1, .rank = -1};
    ev.f[0] = (dsq_field){id(st, "Max_MA"), DSQ_U_GB, v};
    CHECK_INT(dsq_block_add(&b, &ev), 0);
    CHECK_INT(dsq_rollup_add(roll, &ev, &err), 0);
    ev.f[0].v = v / 2;
    CHECK_INT(dsq_block_add(&b, &ev), 0);
    CHECK_INT(dsq_rollup_add(roll, &ev, &err), 0);
    CHECK_INT(dsq_rollup_finish(roll, &err), 0);
    dsq_rollup_free(roll);
    dsq_block_key k = {id(st, run), 0, -1, 5, sid, 0};
    CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
    dsq_block_free_buf(&b);
}

static char *runs_csv(dsq_store *st)
{
    dsq_result *r = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_runs_list(st, &r, &err), 0);
    if (!r)
        return NULL;
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    dsq_result_print(r, f, DSQ_FMT_CSV);
    fclose(f);
    dsq_result_free(r);
    return out;
}

static void test_runs(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_store_params p = {tmp, 0};
    dsq_store *st = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    if (!st)
        goto done;

    /* an empty index lists no runs */
    char *csv = runs_csv(st);
    CHECK_STR(csv, "run,files,members,lines,events,damaged,peak Max_MA\n");
    free(csv);

    /* runs without any Max_MA: the peak is empty */
    CHECK_INT(dsq_store_begin(st, &err), 0);
    add_source(st, 1, "/a/zeta.log", "zeta", 1, 10, 0, 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    csv = runs_csv(st);
    CHECK_STR(csv, "run,files,members,lines,events,damaged,peak Max_MA\nzeta,1,1,10,0,0,\n");
    free(csv);

    CHECK_INT(dsq_store_begin(st, &err), 0);
    add_source(st, 2, "/a/llama/gpu009.log", "llama", 1, 100, 2, 0);
    add_source(st, 3, "/a/llama/gpu010.log.zst", "llama", 1, 50, 2, 1);
    add_source(st, 4, "/a/alpha.tar.zst", "alpha", 12, 1000, 2, 2);
    add_peak(st, 2, "llama", 6.5);
    add_peak(st, 3, "llama", 21.37);
    add_peak(st, 4, "alpha", 3);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);

    p.readonly = 1;
    st = NULL;
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    if (!st)
        goto done;
    csv = runs_csv(st);
    CHECK_STR(csv, "run,files,members,lines,events,damaged,peak Max_MA\n"
                   "alpha,1,12,1000,2,2,3\n"
                   "llama,2,2,150,4,1,21.37\n"
                   "zeta,1,1,10,0,0,\n");
    free(csv);
    dsq_result *r = NULL;
    CHECK_INT(dsq_runs_list(st, &r, &err), 0);
    if (r && dsq_result_rows(r) == 3) {
        CHECK_INT(dsq_result_cell(r, 1, 6)->unit, DSQ_U_GB);
        CHECK_INT(dsq_result_cell(r, 2, 6)->is_null, 1);
    }
    dsq_result_free(r);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

TEST_MAIN(T(test_runs))
