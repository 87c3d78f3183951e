/* Query execution over a small index written through the store API, so every
 * expected number is known: each aggregate, grouping by every key, where filters
 * (strings, globs, numbers, unknown ranks, a pinned run), unit conversion inside a
 * group, top/limit, and "did you mean" errors with the word's position. */
#include <math.h>
#include <stdlib.h>

#include "dsq/dsq.h"
#include "num.h"
#include "query.h"
#include "rollup.h"
#include "store.h"
#include "test.h"
#include "tmpdir.h"

static char tmp[64];
static dsq_store *st;
static dsq_rollup *roll; /* the rollups of the source being written */
static uint32_t roll_src;

typedef struct ev_spec {
    int64_t t;
    const char *label;  /* NULL: none */
    double max_ma;      /* NAN: the event has no Max_MA */
    int unit;
} ev_spec;

static uint32_t id(const char *s)
{
    return s ? dsq_dict_intern(dsq_store_dict(st), s, strlen(s)) : 0;
}

/* Finishes the rollups of the source being written. */
static void roll_finish(void)
{
    dsq_error err;
    dsq_error_clear(&err);
    if (roll_src)
        CHECK_INT(dsq_rollup_finish(roll, &err), 0);
    dsq_rollup_free(roll);
    roll = NULL;
    roll_src = 0;
}

/* Feeds an event to the rollups of source `src` (sources are written one after
 * another, as the indexer does). */
static void roll_add(uint32_t src, const char *run, const dsq_event *ev)
{
    dsq_error err;
    dsq_error_clear(&err);
    if (src != roll_src) {
        roll_finish();
        CHECK_INT(dsq_rollup_new(st, &roll), 0);
        dsq_rollup_begin(roll, id(run), src);
        roll_src = src;
    }
    CHECK_INT(dsq_rollup_add(roll, ev, &err), 0);
}

/* Writes one block of events for (run, host, rank) from source `src`. */
static void put(uint32_t src, uint32_t seq, const char *run, const char *host, int rank,
                const ev_spec *e, int n)
{
    dsq_block b;
    dsq_error err;
    memset(&b, 0, sizeof b);
    dsq_error_clear(&err);
    for (int i = 0; i < n; i++) {
        dsq_event ev = {.kind = DSQ_EV_MEMORY, .t_us = e[i].t, .label = id(e[i].label),
                        .line = (uint32_t)i + 1};
        if (!isnan(e[i].max_ma))
            ev.f[ev.nf++] = (dsq_field){id("Max_MA"), (uint8_t)e[i].unit, e[i].max_ma};
        ev.f[ev.nf++] = (dsq_field){id("CPU_percent"), DSQ_U_PCT, 10.0 + i};
        CHECK_INT(dsq_block_add(&b, &ev), 0);
        ev.host = id(host);
        ev.rank = rank;
        roll_add(src, run, &ev);
    }
    dsq_block_key k = {id(run), id(host), rank, b.t_first, src, seq};
    CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
    dsq_block_free_buf(&b);
}

/* Writes one run attribute event (kind attr, label = name, text = value). */
static void put_attr(uint32_t src, uint32_t seq, const char *run, const char *name,
                     const char *text, double value, int64_t t)
{
    dsq_block b;
    dsq_error err;
    memset(&b, 0, sizeof b);
    dsq_error_clear(&err);
    dsq_event ev = {.kind = DSQ_EV_ATTR, .t_us = t, .label = id(name), .text = id(text), .nf = 1};
    ev.f[0] = (dsq_field){id("value"), 0, value};
    CHECK_INT(dsq_block_add(&b, &ev), 0);
    ev.rank = -1;
    roll_add(src, run, &ev);
    dsq_block_key k = {id(run), 0, -1, b.t_first, src, seq};
    CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
    dsq_block_free_buf(&b);
}

static void source(uint32_t sid, const char *path, const char *run)
{
    dsq_source_rec r;
    dsq_error err;
    memset(&r, 0, sizeof r);
    dsq_error_clear(&err);
    r.id = sid;
    r.run = id(run);
    r.family_lines[0] = 5 * sid; /* other */
    r.family_lines[1] = 10;      /* deepspeed */
    r.level_lines[2] = 10;       /* info */
    r.level_lines[0] = 5 * sid;  /* none */
    CHECK_INT(dsq_store_source_put(st, path, &r, &err), 0);
}

/* llama: gpu009 rank 0 (three events, one block out of time order), gpu010 rank 1
 * (3 GB then 2048 MB); bert: unknown host and rank, one event without Max_MA. */
static void test_setup(void)
{
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_store_params p = {tmp, 0, 0};
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    const ev_spec a[] = {{100, "init", 2, DSQ_U_GB}, {200, "step", 6, DSQ_U_GB}};
    const ev_spec a2[] = {{50, "init", 1, DSQ_U_GB}};
    const ev_spec b[] = {{100, NULL, 3, DSQ_U_GB}};
    const ev_spec b2[] = {{300, NULL, 2048, DSQ_U_MB}};
    const ev_spec c[] = {{INT64_MIN, NULL, 0.5, DSQ_U_GB},
                         {10, NULL, 1.5, DSQ_U_GB},
                         {20, "step", NAN, 0}};
    put(1, 0, "llama", "gpu009", 0, a, 2);
    put(1, 1, "llama", "gpu009", 0, a2, 1);
    put(2, 0, "llama", "gpu010", 1, b, 1);
    put(2, 1, "llama", "gpu010", 1, b2, 1);
    put(3, 0, "bert", NULL, -1, c, 3);
    source(1, "/data/llama/gpu009.log", "llama");
    source(2, "/data/llama/gpu010.log", "llama");
    source(3, "/data/bert.log", "bert");
    roll_finish();
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
    p.readonly = 1;
    st = NULL;
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
}

static void test_teardown(void)
{
    dsq_store_close(st);
    test_tmpdir_remove(tmp);
}

/* Runs text and returns its result as CSV text (caller frees), or NULL on error. */
static char *run_csv(const char *text, dsq_result **keep)
{
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    dsq_result *r = NULL, *scan = NULL;
    if (dsq_query_parse(text, &q, &err) || dsq_query_run(&q, &st, 1, &r, &err) ||
        dsq_query_run_opts(&q, &st, 1, 1, &scan, &err)) {
        fprintf(stderr, "\"%s\": %s\n", text, err.msg);
        test_failures++;
        dsq_result_free(r);
        return NULL;
    }
    char *out = NULL, *scan_out = NULL;
    size_t n = 0, sn = 0;
    FILE *f = open_memstream(&out, &n);
    dsq_result_print(r, f, DSQ_FMT_CSV);
    fclose(f);
    /* the answer from the rollups equals the answer from every event */
    f = open_memstream(&scan_out, &sn);
    dsq_result_print(scan, f, DSQ_FMT_CSV);
    fclose(f);
    if (strcmp(out, scan_out) != 0) {
        fprintf(stderr, "\"%s\": rollups say\n%s---\nevents say\n%s---\n", text, out, scan_out);
        test_failures++;
    }
    free(scan_out);
    dsq_result_free(scan);
    if (keep)
        *keep = r;
    else
        dsq_result_free(r);
    return out;
}

static void expect(const char *text, const char *csv)
{
    char *got = run_csv(text, NULL);
    if (got && strcmp(got, csv) != 0) {
        fprintf(stderr, "\"%s\": got\n%s---\nexpected\n%s---\n", text, got, csv);
        test_failures++;
    }
    free(got);
}

static void test_aggregates(void)
{
    expect("max Max_MA by run", "run,max Max_MA\nbert,1.5\nllama,6\n");
    expect("count by run", "run,count\nbert,3\nllama,5\n");
    expect("count Max_MA by run", "run,count Max_MA\nbert,2\nllama,5\n");
    expect("min Max_MA, sum Max_MA, avg Max_MA by run",
           "run,min Max_MA,sum Max_MA,avg Max_MA\nbert,0.5,2,1\nllama,1,14.048,2.8096\n");
    /* first/last by time, not by storage order (an unknown time sorts first) */
    expect("first Max_MA, last Max_MA by host where run = llama",
           "host,first Max_MA,last Max_MA\ngpu009,1,6\ngpu010,3,2.048\n");
    expect("first Max_MA, last Max_MA where run = bert", "first Max_MA,last Max_MA\n0.5,1.5\n");
    /* nearest-rank percentiles over 0.5 1 1.5 2 2.048 3 6 */
    expect("p50 Max_MA, p90 Max_MA, p95 Max_MA, p99 Max_MA, count",
           "p50 Max_MA,p90 Max_MA,p95 Max_MA,p99 Max_MA,count\n2,6,6,6,8\n");
    expect("p50 Max_MA by run", "run,p50 Max_MA\nbert,0.5\nllama,2.048\n");

    /* units: a group's values are in the unit of its first value */
    dsq_result *r = NULL;
    char *csv = run_csv("max Max_MA, max CPU_percent, count by host", &r);
    CHECK_STR(csv, "host,max Max_MA,max CPU_percent,count\n-,1.5,12,3\ngpu009,6,11,3\n"
                   "gpu010,3,10,2\n");
    if (r && dsq_result_rows(r) == 3) {
        CHECK_INT(dsq_result_cell(r, 0, 1)->unit, DSQ_U_GB);
        CHECK_INT(dsq_result_cell(r, 0, 2)->unit, DSQ_U_PCT);
        CHECK_INT(dsq_result_cell(r, 0, 3)->unit, DSQ_U_NONE);
        CHECK_INT(dsq_result_cell(r, 0, 3)->is_int, 1);
    }
    dsq_result_free(r);
    free(csv);
}

static void test_group_keys(void)
{
    expect("count by rank", "rank,count\n0,3\n1,2\n,3\n"); /* unknown rank last */
    expect("count by kind", "kind,count\nmemory,8\n");
    expect("count by label", "label,count\n-,4\ninit,2\nstep,2\n");
    expect("count by file",
           "file,count\n/data/bert.log,3\n/data/llama/gpu009.log,3\n/data/llama/gpu010.log,2\n");
    expect("count by run, host, rank",
           "run,host,rank,count\nbert,-,,3\nllama,gpu009,0,3\nllama,gpu010,1,2\n");
    expect("count by label, run",
           "label,run,count\n-,bert,2\n-,llama,2\ninit,llama,2\nstep,bert,1\nstep,llama,1\n");
}

static void test_where(void)
{
    expect("count where rank = 0", "count\n3\n");
    expect("count where rank != 0", "count\n2\n"); /* unknown ranks compare as nothing */
    expect("count where rank >= 0", "count\n5\n");
    expect("count where run ~ 'll*'", "count\n5\n");
    expect("count where host ~ 'gpu01?'", "count\n2\n");
    expect("count where host != gpu009", "count\n5\n");
    expect("count where Max_MA > 2", "count\n3\n");
    expect("count where Max_MA >= 2 and not host = gpu010", "count\n2\n");
    expect("count where Max_MA < 1 or label = step", "count\n3\n");
    expect("count where label = init", "count\n2\n");
    expect("count where kind = memory", "count\n8\n");
    expect("count where file ~ '*gpu*'", "count\n5\n");
    expect("count where run = bert", "count\n3\n");
    expect("count where run = bert or run = llama", "count\n8\n");
    expect("count where run = bert and Max_MA > 1", "count\n1\n");
    /* a run not in the index: no rows, not an error */
    expect("count where run = nosuch", "count\n");
    expect("max Max_MA by run where run = nosuch", "run,max Max_MA\n");
    expect("count by run where (run = llama or run = bert) and rank < 1",
           "run,count\nllama,3\n");
}

static void test_top_and_limit(void)
{
    expect("max Max_MA by host top 1", "host,max Max_MA\ngpu009,6\n");
    expect("max Max_MA by host top 2", "host,max Max_MA\ngpu009,6\ngpu010,3\n");
    expect("count by host limit 2", "host,count\n-,3\ngpu009,3\n");
    /* ties in top follow the group keys */
    expect("count by host top 3", "host,count\n-,3\ngpu009,3\ngpu010,2\n");
}

static void test_order_by(void)
{
    expect("max Max_MA by host order by max Max_MA",
           "host,max Max_MA\n-,1.5\ngpu010,3\ngpu009,6\n");
    expect("max Max_MA by host ORDER BY MAX Max_MA DESC",
           "host,max Max_MA\ngpu009,6\ngpu010,3\n-,1.5\n");
    expect("count by host order by host desc", "host,count\ngpu010,2\ngpu009,3\n-,3\n");
    /* ties keep the group keys' order; limit applies after ordering */
    expect("count by host order by count desc limit 1", "host,count\n-,3\n");
    expect("count by rank order by rank desc", "rank,count\n1,2\n0,3\n,3\n"); /* empty last */
    expect("max Max_MA by run order by run asc", "run,max Max_MA\nbert,1.5\nllama,6\n");
}

static void expect_error(const char *text, long long off, long long len, const char *words)
{
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    dsq_result *r = NULL;
    CHECK_INT(dsq_query_parse(text, &q, &err), 0);
    int rc = dsq_query_run(&q, &st, 1, &r, &err);
    if (rc != DSQ_EQUERY || err.offset != off || err.length != len || !strstr(err.msg, words)) {
        fprintf(stderr, "\"%s\": rc %d \"%s\" at %lld+%lld\n", text, rc, err.msg, err.offset,
                err.length);
        test_failures++;
    }
    CHECK(r == NULL);
}

/* Reopens the index for writing and adds run attributes (after the tests above,
 * whose counts they would change). */
static void test_add_attributes(void)
{
    dsq_store_params p = {tmp, 0, 0};
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store_close(st);
    st = NULL;
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    put_attr(1, 9, "llama", "zero_stage", "3", 3, 100);
    put_attr(3, 9, "bert", "zero_stage", "2", 2, 5);
    put_attr(3, 10, "bert", "zero_stage", "1", 1, 30); /* later: wins */
    roll_finish();
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
    p.readonly = 1;
    st = NULL;
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
}

static void test_attributes(void)
{
    expect("max Max_MA by zero_stage", "zero_stage,max Max_MA\n1,1.5\n3,6\n");
    expect("count Max_MA by run where zero_stage = 3", "run,count Max_MA\nllama,5\n");
    expect("count Max_MA by run where zero_stage < 3", "run,count Max_MA\nbert,2\n");
    expect("count Max_MA by run where zero_stage ~ '[13]'",
           "run,count Max_MA\nbert,2\nllama,5\n");
    expect("count by kind where kind = attr", "kind,count\nattr,3\n");
}

static void test_line_counts(void)
{
    /* sources 1..3: other 5*id lines, deepspeed 10 lines each; llama = sources 1, 2 */
    expect("count by family", "family,count\ndeepspeed,30\nother,30\n");
    expect("count by run, family",
           "run,family,count\nbert,deepspeed,10\nbert,other,15\nllama,deepspeed,20\nllama,other,15\n");
    expect("count by level where run = 'bert'", "level,count\ninfo,10\nnone,15\n");
}

static void test_time_conditions(void)
{
    /* all times are a few microseconds after the epoch; bert has one event without a time */
    expect("count Max_MA by run since 1970-01-01", "run,count Max_MA\nbert,1\nllama,5\n");
    expect("count Max_MA by run until 1970-01-01", "run,count Max_MA\n");
    expect("count Max_MA by run where time >= '1970-01-01 00:00'",
           "run,count Max_MA\nbert,1\nllama,5\n");
    expect("count Max_MA every 1d", "time,count Max_MA\n1970-01-01 00:00:00.000,6\n,1\n");
    /* `time` as an aggregate: when (microseconds after the epoch here) */
    expect("min time, max time by run where kind = memory",
           "run,min time,max time\nbert,1970-01-01 00:00:00.000,1970-01-01 00:00:00.000\n"
           "llama,1970-01-01 00:00:00.000,1970-01-01 00:00:00.000\n");
}

static void test_unknown_names(void)
{
    expect_error("max Max_MA by run order by Max_MA", 27, 6, "did you mean `max Max_MA`");
    expect_error("max Max_MA by run order by host", 27, 4, "the columns are run, max Max_MA");
    expect_error("max Max_Ma by run", 4, 6, "did you mean `Max_MA`");
    expect_error("avg CPU_percnt", 4, 10, "did you mean `CPU_percent`");
    expect_error("max max_MA", 4, 6, "did you mean `Max_MA`");
    expect_error("count where Max_Ma > 1", 12, 6, "did you mean `Max_MA`");
    expect_error("max Zzzzzzzzzz", 4, 10, "no such name");
}

TEST_MAIN(T(test_setup), T(test_aggregates), T(test_group_keys), T(test_where),
          T(test_top_and_limit), T(test_order_by), T(test_unknown_names), T(test_add_attributes),
          T(test_attributes), T(test_line_counts), T(test_time_conditions), T(test_teardown))
