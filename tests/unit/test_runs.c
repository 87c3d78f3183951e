/* Run listing over indexes written through the store and rollup APIs: files,
 * lines and damage from the source records; events, time span, hosts and ranks
 * from the count series; the first failure's class; the peak Max_MA across units;
 * files no longer on disk as missing;
 * and the same run spread over two indexes listed once, merged. */
#include <stdlib.h>

#include "dsq/dsq.h"
#include "num.h"
#include "rollup.h"
#include "runs.h"
#include "store.h"
#include "test.h"
#include "timeconv.h"
#include "tmpdir.h"

static uint32_t id(dsq_store *st, const char *s)
{
    return s ? dsq_dict_intern(dsq_store_dict(st), s, strlen(s)) : 0;
}

static void add_source(dsq_store *st, uint32_t sid, const char *path, const char *run,
                       uint64_t lines, uint32_t errors)
{
    dsq_source_rec r;
    dsq_error err;
    memset(&r, 0, sizeof r);
    dsq_error_clear(&err);
    r.id = sid;
    r.run = id(st, run);
    r.members = 1;
    r.lines = lines;
    r.errors = errors;
    CHECK_INT(dsq_store_source_put(st, path, &r, &err), 0);
}

typedef struct ev_spec {
    const char *host;
    int rank;
    int64_t t_s;      /* seconds after 2024-07-20 00:00; -1: no time */
    int kind;
    const char *label;
    double max_ma;    /* < 0: none */
    int unit;
} ev_spec;

/* Feeds one source's events to the rollups (the blocks do not matter here). */
static void add_events(dsq_store *st, uint32_t sid, const char *run, const ev_spec *e, int n)
{
    dsq_rollup *roll = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_rollup_new(st, &roll), 0);
    if (!roll)
        return;
    dsq_rollup_begin(roll, id(st, run), sid);
    int64_t base = dsq_time_from_civil(2024, 7, 20, 0, 0, 0, 0);
    for (int i = 0; i < n; i++) {
        dsq_event ev = {.kind = (uint16_t)e[i].kind, .host = id(st, e[i].host), .rank = e[i].rank,
                        .label = id(st, e[i].label),
                        .t_us = e[i].t_s < 0 ? DSQ_TIME_NONE : base + e[i].t_s * 1000000};
        if (e[i].max_ma >= 0)
            ev.f[ev.nf++] = (dsq_field){id(st, "Max_MA"), (uint8_t)e[i].unit, e[i].max_ma};
        CHECK_INT(dsq_rollup_add(roll, &ev, &err), 0);
    }
    CHECK_INT(dsq_rollup_finish(roll, &err), 0);
    dsq_rollup_free(roll);
}

static char *runs_csv(dsq_store *const *st, int n)
{
    dsq_result *r = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_runs_list(st, n, &r, &err), 0);
    if (!r)
        return NULL;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    dsq_result_print(r, f, DSQ_FMT_CSV);
    fclose(f);
    dsq_result_free(r);
    return out;
}

static dsq_store *open_store(const char *dir, int ro)
{
    dsq_store_params p = {dir, ro, 0};
    dsq_store *st = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    return st;
}

#define HEAD "run,start,duration,hosts,ranks,files,lines,events,failure,peak Max_MA,damaged,missing\n"

static void test_runs_columns_and_merge(void)
{
    char a[64], b[64];
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(test_tmpdir_new(a), 0);
    CHECK_INT(test_tmpdir_new(b), 0);
    dsq_store *st = open_store(a, 0);
    if (!st)
        return;
    char *csv = runs_csv(&st, 1); /* an empty index lists no runs */
    CHECK_STR(csv, HEAD);
    free(csv);

    CHECK_INT(dsq_store_begin(st, &err), 0);
    add_source(st, 1, "/a/zeta.log", "zeta", 10, 0); /* no events at all */
    add_source(st, 2, "/a/llama/gpu009.log", "llama", 100, 0);
    add_source(st, 3, "/a/llama/gpu010.log.zst", "llama", 50, 1);
    const ev_spec l1[] = {
        {"gpu009", 0, -1, DSQ_EV_NCCL_INIT, NULL, -1, 0},  /* no time: not in the span */
        {"gpu009", 0, 60, DSQ_EV_MEMORY, NULL, 6.5, DSQ_U_GB},
        {"gpu009", 1, 120, DSQ_EV_MEMORY, NULL, 2048, DSQ_U_MB},
        {"gpu009", 1, 3600, DSQ_EV_FAILURE, "nccl_timeout", -1, 0},
    };
    const ev_spec l2[] = {
        {"gpu010", 2, 30, DSQ_EV_MEMORY, NULL, 21.37, DSQ_U_GB},
        {"gpu010", 3, 1800, DSQ_EV_FAILURE, "cuda_oom", -1, 0}, /* the first failure */
        {NULL, -1, 7200, DSQ_EV_NONE, NULL, -1, 0},
    };
    add_events(st, 2, "llama", l1, 4);
    add_events(st, 3, "llama", l2, 3);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);

    st = open_store(a, 1);
    csv = runs_csv(&st, 1);
    /* the paths do not exist on this machine: every file counts as missing */
    CHECK_STR(csv, HEAD "llama,2024-07-20 00:00:30.000,7170,2,4,2,150,7,cuda_oom,21.37,1,2\n"
                        "zeta,,,0,0,1,10,0,-,,0,1\n");
    free(csv);

    /* a second index with more of llama (a later failure, a bigger peak in MB, a
     * host already seen) and a run of its own */
    dsq_store *st2 = open_store(b, 0);
    CHECK_INT(dsq_store_begin(st2, &err), 0);
    add_source(st2, 1, "/b/llama/gpu011.log", "llama", 5, 0);
    add_source(st2, 2, "/b/bert.log", "bert", 7, 0);
    const ev_spec l3[] = {
        {"gpu010", 4, 10, DSQ_EV_MEMORY, NULL, 30000, DSQ_U_MB},
        {"gpu011", 5, 5000, DSQ_EV_FAILURE, "signal", -1, 0},
    };
    const ev_spec b1[] = {{NULL, -1, -1, DSQ_EV_MEMORY, NULL, 1, DSQ_U_GB}};
    add_events(st2, 1, "llama", l3, 2);
    add_events(st2, 2, "bert", b1, 1);
    CHECK_INT(dsq_store_commit(st2, &err), 0);
    dsq_store_close(st2);
    st2 = open_store(b, 1);
    dsq_store *both[2] = {st, st2};
    csv = runs_csv(both, 2);
    CHECK_STR(csv, HEAD "bert,,,0,0,1,7,1,-,1,0,1\n"
                        "llama,2024-07-20 00:00:10.000,7190,3,6,3,155,9,cuda_oom,30,1,3\n"
                        "zeta,,,0,0,1,10,0,-,,0,1\n");
    free(csv);
    dsq_result *r = NULL;
    CHECK_INT(dsq_runs_list(both, 2, &r, &err), 0);
    if (r && dsq_result_rows(r) == 3) {
        CHECK_INT(dsq_result_cell(r, 1, 9)->unit, DSQ_U_GB); /* the first index's unit */
        CHECK_INT(dsq_result_cell(r, 2, 9)->is_null, 1);
        CHECK_INT(dsq_result_cell(r, 1, 2)->unit, DSQ_U_S);
    }
    dsq_result_free(r);
    dsq_store_close(st);
    dsq_store_close(st2);
    test_tmpdir_remove(a);
    test_tmpdir_remove(b);
}

TEST_MAIN(T(test_runs_columns_and_merge))
