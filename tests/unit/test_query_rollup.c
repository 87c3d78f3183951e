/* Query answers against a brute-force pass over the same events, kept in memory by
 * this test (not the rollups, not the query engine's own event scan).
 *
 * Random events (4 runs, 3 hosts, ranks 0-3 or unknown, 12 sources, times over
 * six hours, some without a time and then without values, Max_MA and loss
 * present or not) are written the
 * way the indexer writes them: event blocks plus rollups, each value once (in its
 * series; the blocks name them by their events, which the event scan reads back
 * out of the time order they are stored in). Sources 1-6 go to index
 * A, 7-12 to index B, all of them to index C. Every query is checked three ways:
 * rollups over C, rollups over A and B merged, and the event scan over C; each
 * must equal the brute force (counts, min, max, first, last and percentiles
 * exactly; sums and averages to 1e-9 relative).
 */
#include <math.h>
#include <stdlib.h>

#include "dsq/dsq.h"
#include "num.h"
#include "query.h"
#include "rollup.h"
#include "store.h"
#include "test.h"
#include "timeconv.h"
#include "tmpdir.h"

#define NEV 6000
#define T0 1721433600000000LL /* 2024-07-20 00:00 UTC */

typedef struct tev {
    int run, host, rank, source;
    int64_t t;          /* DSQ_TIME_NONE: none */
    double max_ma, loss; /* NAN: absent */
} tev;

static tev evs[NEV];
static const char *const runs[] = {"alpha", "apex", "bert", "gpt"};
static const char *const hosts[] = {"gpu001", "gpu002", "gpu003"};
static const char *const stages[] = {"3", "2", "3", "1"}; /* zero_stage per run */
static char dir_a[64], dir_b[64], dir_c[64];
static dsq_store *sa, *sb, *sc;

static uint32_t id(dsq_store *st, const char *s)
{
    return dsq_dict_intern(dsq_store_dict(st), s, strlen(s));
}

static void make_events(void)
{
    srand(42);
    for (int i = 0; i < NEV; i++) {
        tev *e = &evs[i];
        e->source = 1 + rand() % 12;
        e->run = (e->source - 1) % 4; /* a source belongs to one run */
        e->host = rand() % 3;
        e->rank = rand() % 5 - 1;
        e->t = rand() % 50 == 0 ? DSQ_TIME_NONE : T0 + (int64_t)(rand() % 21600) * 1000000 + i;
        e->max_ma = rand() % 4 == 0 ? NAN : (double)(rand() % 100000) / 100;
        e->loss = rand() % 3 == 0 ? NAN : (double)(rand() % 5000) / 1000;
        if (e->t == DSQ_TIME_NONE) /* counted, but no values: first/last have no ties */
            e->max_ma = e->loss = NAN;
    }
}

/* Writes the events of sources [lo, hi] into the index at dir, source by source. */
static dsq_store *write_index(const char *dir, int lo, int hi)
{
    dsq_store_params p = {dir, 0, 0};
    dsq_store *st = NULL;
    dsq_rollup *roll = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    CHECK_INT(dsq_rollup_new(st, &roll), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (int src = lo; src <= hi; src++) {
        const char *run = runs[(src - 1) % 4];
        dsq_rollup_begin(roll, id(st, run), (uint32_t)src);
        uint32_t seq = 0;
        for (int i = 0; i < NEV; i++) {
            const tev *e = &evs[i];
            if (e->source != src)
                continue;
            dsq_event ev = {.kind = DSQ_EV_MEMORY, .t_us = e->t, .host = id(st, hosts[e->host]),
                            .rank = e->rank, .line = (uint32_t)i + 1};
            if (!isnan(e->max_ma))
                ev.f[ev.nf++] = (dsq_field){id(st, "Max_MA"), DSQ_U_GB, e->max_ma};
            if (!isnan(e->loss))
                ev.f[ev.nf++] = (dsq_field){id(st, "loss"), DSQ_U_NONE, e->loss};
            /* as the indexer: values the rollup keeps are not in the block (the
             * event scan reads them from their series: evfill.h) */
            dsq_num_form forms[DSQ_EV_MAXF];
            uint64_t event = 0;
            uint32_t kept = 0;
            dsq_ev_forms(&ev, forms);
            CHECK_INT(dsq_rollup_add_forms(roll, &ev, forms, &event, &kept, &err), 0);
            CHECK_INT(kept, (1u << ev.nf) - 1);
            dsq_block b;
            memset(&b, 0, sizeof b);
            CHECK_INT(dsq_block_add_ref(&b, &ev, forms, kept, event), 0);
            dsq_block_key k = {id(st, run), ev.host, ev.rank, ev.t_us, (uint32_t)src, seq++};
            CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
            dsq_block_free_buf(&b);
        }
        /* the run's ZeRO stage, an attribute event in every source */
        dsq_event at = {.kind = DSQ_EV_ATTR, .t_us = T0, .label = id(st, "zero_stage"),
                        .text = id(st, stages[(src - 1) % 4]), .rank = -1};
        dsq_block b;
        memset(&b, 0, sizeof b);
        CHECK_INT(dsq_block_add(&b, &at), 0);
        dsq_block_key k = {id(st, run), 0, -1, T0, (uint32_t)src, seq++};
        CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
        dsq_block_free_buf(&b);
        CHECK_INT(dsq_rollup_add(roll, &at, &err), 0);
        CHECK_INT(dsq_rollup_finish(roll, &err), 0);
        char path[64];
        snprintf(path, sizeof path, "/logs/%s/src%d.log", run, src);
        dsq_source_rec r;
        memset(&r, 0, sizeof r);
        r.id = (uint32_t)src;
        r.run = id(st, run);
        CHECK_INT(dsq_store_source_put(st, path, &r, &err), 0);
    }
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_rollup_free(roll);
    dsq_store_close(st);
    p.readonly = 1;
    st = NULL;
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    return st;
}

static void test_setup(void)
{
    make_events();
    CHECK_INT(test_tmpdir_new(dir_a), 0);
    CHECK_INT(test_tmpdir_new(dir_b), 0);
    CHECK_INT(test_tmpdir_new(dir_c), 0);
    sa = write_index(dir_a, 1, 6);
    sb = write_index(dir_b, 7, 12);
    sc = write_index(dir_c, 1, 12);
}

static void test_teardown(void)
{
    dsq_store_close(sa);
    dsq_store_close(sb);
    dsq_store_close(sc);
    test_tmpdir_remove(dir_a);
    test_tmpdir_remove(dir_b);
    test_tmpdir_remove(dir_c);
}

/* --- brute force ---------------------------------------------------------------- */

enum { K_RUN, K_HOST, K_RANK, K_STAGE, K_HOUR };

typedef struct bf_group {
    char key[64];
    double vals[NEV];
    int64_t ts[NEV];
    int n;
} bf_group;

static bf_group groups[64];
static int ngroups;

static void key_of(const tev *e, const int *keys, int nkeys, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < nkeys; i++) {
        char part[40];
        switch (keys[i]) {
        case K_RUN: snprintf(part, sizeof part, "%s", runs[e->run]); break;
        case K_HOST: snprintf(part, sizeof part, "%s", hosts[e->host]); break;
        case K_RANK: snprintf(part, sizeof part, "%d", e->rank); break;
        case K_STAGE: snprintf(part, sizeof part, "%s", stages[e->run]); break;
        default:
            snprintf(part, sizeof part, "%lld",
                     e->t == DSQ_TIME_NONE ? -1LL : (long long)((e->t / 3600000000LL) * 3600000000LL));
        }
        snprintf(out + strlen(out), cap - strlen(out), "%s|", part);
    }
}

typedef int (*filter_fn)(const tev *e);

/* Collects, per group, the values of a field (NULL: one per event) passing the filter. */
static void brute(const char *field, const int *keys, int nkeys, filter_fn keep)
{
    ngroups = 0;
    for (int i = 0; i < NEV; i++) {
        const tev *e = &evs[i];
        double v = !field ? 1 : strcmp(field, "Max_MA") == 0 ? e->max_ma : e->loss;
        if (isnan(v) || (keep && !keep(e)))
            continue;
        char key[64];
        key_of(e, keys, nkeys, key, sizeof key);
        int g;
        for (g = 0; g < ngroups && strcmp(groups[g].key, key) != 0; g++)
            ;
        if (g == ngroups) {
            snprintf(groups[g].key, sizeof groups[g].key, "%s", key);
            groups[g].n = 0;
            ngroups++;
        }
        groups[g].vals[groups[g].n] = v;
        groups[g].ts[groups[g].n++] = e->t;
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double agg(bf_group *g, const char *fn)
{
    double s = 0, mn = INFINITY, mx = -INFINITY, first = 0, last = 0;
    int64_t ft = INT64_MAX, lt = INT64_MIN;
    for (int i = 0; i < g->n; i++) {
        double v = g->vals[i];
        s += v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        if (g->ts[i] < ft)
            ft = g->ts[i], first = v;
        if (g->ts[i] >= lt)
            lt = g->ts[i], last = v;
    }
    if (!strcmp(fn, "count"))
        return g->n;
    if (!strcmp(fn, "sum"))
        return s;
    if (!strcmp(fn, "avg"))
        return s / g->n;
    if (!strcmp(fn, "min"))
        return mn;
    if (!strcmp(fn, "max"))
        return mx;
    if (!strcmp(fn, "first"))
        return first;
    if (!strcmp(fn, "last"))
        return last;
    double pct = atof(fn + 1);
    qsort(g->vals, (size_t)g->n, sizeof g->vals[0], cmp_d);
    double r = ceil(pct / 100.0 * g->n);
    return g->vals[r < 1 ? 0 : (int)r - 1];
}

/* --- comparison ------------------------------------------------------------------ */

static int run_query(const char *text, dsq_store *const *st, int n, int scan_only, dsq_result **r)
{
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    *r = NULL;
    if (dsq_query_parse(text, &q, &err) || dsq_query_run_opts(&q, st, n, scan_only, r, &err)) {
        fprintf(stderr, "\"%s\": %s\n", text, err.msg);
        return -1;
    }
    return 0;
}

/* The result's key columns as the brute force writes them (rank -1 for none,
 * time buckets in microseconds, -1 for none). */
static void row_key(const dsq_result *r, size_t row, int nkeys, char *out, size_t cap)
{
    out[0] = 0;
    for (int c = 0; c < nkeys; c++) {
        const dsq_cell *cell = dsq_result_cell(r, row, c);
        char part[40];
        if (cell->s)
            snprintf(part, sizeof part, "%s", cell->s);
        else
            snprintf(part, sizeof part, "%lld", cell->is_null ? -1LL : (long long)cell->v);
        snprintf(out + strlen(out), cap - strlen(out), "%s|", part);
    }
}

static int close_enough(const char *fn, double got, double want)
{
    if (!strcmp(fn, "sum") || !strcmp(fn, "avg"))
        return fabs(got - want) <= 1e-9 * fmax(1, fabs(want));
    return got == want;
}

/* Checks `fn field by keys [where ...]` three ways against the brute force. */
static void check(const char *text, const char *fn, const char *field, const int *keys, int nkeys,
                  filter_fn keep)
{
    brute(field, keys, nkeys, keep);
    dsq_store *merged[2] = {sa, sb};
    struct {
        dsq_store *const *st;
        int n, scan;
        const char *how;
    } ways[] = {{&sc, 1, 0, "rollups"}, {merged, 2, 0, "two indexes"}, {&sc, 1, 1, "event scan"}};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        dsq_result *r;
        if (run_query(text, ways[w].st, ways[w].n, ways[w].scan, &r)) {
            test_failures++;
            continue;
        }
        int bad = (int)dsq_result_rows(r) != ngroups;
        for (size_t row = 0; row < dsq_result_rows(r) && !bad; row++) {
            char key[64];
            row_key(r, row, nkeys, key, sizeof key);
            int g;
            for (g = 0; g < ngroups && strcmp(groups[g].key, key) != 0; g++)
                ;
            double got = dsq_result_cell(r, row, nkeys)->v;
            if (g == ngroups || !close_enough(fn, got, agg(&groups[g], fn))) {
                fprintf(stderr, "\"%s\" (%s): group %s: got %.17g, want %.17g\n", text,
                        ways[w].how, key, got, g < ngroups ? agg(&groups[g], fn) : NAN);
                bad = 1;
            }
        }
        if (bad && (int)dsq_result_rows(r) != ngroups)
            fprintf(stderr, "\"%s\" (%s): %zu groups, want %d\n", text, ways[w].how,
                    dsq_result_rows(r), ngroups);
        test_failures += bad;
        dsq_result_free(r);
    }
}

static int run_a(const tev *e) { return runs[e->run][0] == 'a'; }
static int rank0(const tev *e) { return e->rank == 0; }
static int afternoon(const tev *e) { return e->t != DSQ_TIME_NONE && e->t >= T0 + 3 * 3600000000LL; }
static int not_gpu2_or_bert(const tev *e) { return e->host != 1 || e->run == 2; }
static int stage3(const tev *e) { return stages[e->run][0] == '3'; }

static void test_every_aggregate_by_run(void)
{
    static const char *const fns[] = {"count", "min", "max", "sum", "avg", "p50",
                                      "p90",   "p95", "p99", "first", "last"};
    const int k[] = {K_RUN};
    char text[128];
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        snprintf(text, sizeof text, "%s Max_MA by run", fns[i]);
        check(text, fns[i], "Max_MA", k, 1, NULL);
        snprintf(text, sizeof text, "%s loss by run", fns[i]);
        check(text, fns[i], "loss", k, 1, NULL);
    }
    check("count by run where kind = memory", "count", NULL, k, 1, NULL);
}

static void test_group_keys_and_filters(void)
{
    const int host[] = {K_HOST}, rank[] = {K_RANK}, run_host[] = {K_RUN, K_HOST},
              stage[] = {K_STAGE}, run_hour[] = {K_RUN, K_HOUR}, none[] = {0};
    check("max Max_MA by host", "max", "Max_MA", host, 1, NULL);
    check("p95 Max_MA by rank", "p95", "Max_MA", rank, 1, NULL);
    check("avg loss by run, host", "avg", "loss", run_host, 2, NULL);
    check("sum Max_MA by zero_stage", "sum", "Max_MA", stage, 1, NULL);
    check("max Max_MA by run where run ~ 'a*'", "max", "Max_MA", run_host, 1, run_a);
    check("last loss by host where rank = 0", "last", "loss", host, 1, rank0);
    check("count Max_MA by run where not host = gpu002 or run = bert", "count", "Max_MA",
          run_host, 1, not_gpu2_or_bert);
    check("min loss by run where zero_stage = 3", "min", "loss", run_host, 1, stage3);
    check("avg loss by run every 1h where run ~ 'a*'", "avg", "loss", run_hour, 2, run_a);
    check("p50 Max_MA by run every 1h", "p50", "Max_MA", run_hour, 2, NULL);
    check("count loss by run since '2024-07-20 03:00'", "count", "loss", run_host, 1, afternoon);
    /* values whose times are looked up in their kind's times (rollup.c) */
    check("first loss by run every 1h", "first", "loss", run_hour, 2, NULL);
    check("last Max_MA by run every 1h", "last", "Max_MA", run_hour, 2, NULL);
    check("p90 loss by run since '2024-07-20 03:00'", "p90", "loss", run_host, 1, afternoon);
    check("max Max_MA", "max", "Max_MA", none, 0, NULL);
}

TEST_MAIN(T(test_setup), T(test_every_aggregate_by_run), T(test_group_keys_and_filters),
          T(test_teardown))
