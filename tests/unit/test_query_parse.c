/* Query parser: each construct parses into the expected plan, and each mistake is
 * DSQ_EQUERY with the offset and length of the offending word (for the caret). */
#include "dsq/dsq.h"
#include "query.h"
#include "test.h"

static dsq_query q;

static int parse(const char *text, dsq_error *err)
{
    dsq_error_clear(err);
    return dsq_query_parse(text, &q, err);
}

static void ok(const char *text)
{
    dsq_error err;
    if (parse(text, &err) != 0) {
        fprintf(stderr, "\"%s\" failed: %s (offset %lld)\n", text, err.msg, err.offset);
        test_failures++;
    }
}

/* Expects an error at [off, off+len) whose message contains `words`. */
static void bad(const char *text, long long off, long long len, const char *words)
{
    dsq_error err;
    int rc = parse(text, &err);
    if (rc != DSQ_EQUERY || err.code != DSQ_EQUERY || err.offset != off || err.length != len ||
        !strstr(err.msg, words)) {
        fprintf(stderr, "\"%s\": rc %d, \"%s\" at %lld+%lld; expected \"%s\" at %lld+%lld\n", text,
                rc, err.msg, err.offset, err.length, words, off, len);
        test_failures++;
    }
}

static void test_simple(void)
{
    ok("max Max_MA by run");
    CHECK_INT(q.naggs, 1);
    CHECK_INT(q.aggs[0].fn, DSQ_AGG_MAX);
    CHECK_STR(q.aggs[0].field, "Max_MA");
    CHECK_INT(q.aggs[0].off, 4);
    CHECK_INT(q.aggs[0].len, 6);
    CHECK_INT(q.nby, 1);
    CHECK_INT(q.by[0], DSQ_KEY_RUN);
    CHECK_INT(q.where, -1);
    CHECK_INT(q.nnodes, 0);
    CHECK_INT(q.limit, 0);
    CHECK_INT(q.top, 0);

    ok("count");
    CHECK_INT(q.naggs, 1);
    CHECK_INT(q.aggs[0].fn, DSQ_AGG_COUNT);
    CHECK_STR(q.aggs[0].field, "");
    CHECK_INT(q.nby, 0);

    ok("count by host");
    CHECK_INT(q.aggs[0].fn, DSQ_AGG_COUNT);
    CHECK_STR(q.aggs[0].field, "");
    CHECK_INT(q.by[0], DSQ_KEY_HOST);

    ok("count Max_MA");
    CHECK_STR(q.aggs[0].field, "Max_MA");
}

static void test_every_aggregate_and_key(void)
{
    ok("count, min a, max b, sum c, avg d, p50 e, p90 f, p95 g, p99 h, first i, last j "
       "by run, host, rank, kind");
    CHECK_INT(q.naggs, 11);
    for (int i = 0; i < 11; i++)
        CHECK_INT(q.aggs[i].fn, i);
    CHECK_STR(q.aggs[10].field, "j");
    CHECK_INT(q.nby, 4);
    CHECK_INT(q.by[0], DSQ_KEY_RUN);
    CHECK_INT(q.by[1], DSQ_KEY_HOST);
    CHECK_INT(q.by[2], DSQ_KEY_RANK);
    CHECK_INT(q.by[3], DSQ_KEY_KIND);
    ok("avg x by label, file");
    CHECK_INT(q.by[0], DSQ_KEY_LABEL);
    CHECK_INT(q.by[1], DSQ_KEY_FILE);
    /* names of functions and keys */
    CHECK_STR(dsq_agg_name(DSQ_AGG_P95), "p95");
    CHECK_STR(dsq_agg_name(DSQ_AGG_COUNT_FNS), "?");
    CHECK_STR(dsq_key_name(DSQ_KEY_LABEL), "label");
    CHECK_STR(dsq_key_name(DSQ_KEY_NONE), "?");
    CHECK_STR(dsq_key_name(DSQ_KEY_FIELD), "?");
}

static void test_case_and_quotes(void)
{
    ok("MAX Max_MA BY Run WHERE RANK >= 2 LIMIT 5");
    CHECK_INT(q.aggs[0].fn, DSQ_AGG_MAX);
    CHECK_STR(q.aggs[0].field, "Max_MA");
    CHECK_INT(q.by[0], DSQ_KEY_RUN);
    CHECK_INT(q.nodes[q.where].key, DSQ_KEY_RANK);
    CHECK_INT(q.nodes[q.where].op, DSQ_OP_GE);
    CHECK_INT(q.limit, 5);

    ok("max \"lm loss\" by run");
    CHECK_STR(q.aggs[0].field, "lm loss");
    CHECK_INT(q.aggs[0].off, 4);
    CHECK_INT(q.aggs[0].len, 9);
    ok("avg 'elapsed time per iteration (ms)'");
    CHECK_STR(q.aggs[0].field, "elapsed time per iteration (ms)");
    /* field names are exact: case is kept */
    ok("max max_ma");
    CHECK_STR(q.aggs[0].field, "max_ma");
    ok("  max\tMax_MA\n by  run  ");
    CHECK_INT(q.aggs[0].off, 6);
    CHECK_INT(q.nby, 1);
}

static void test_where(void)
{
    ok("count, avg Max_MA, p95 Max_MA by run, host where run ~ 'llama*' and rank = 0");
    CHECK_INT(q.naggs, 3);
    CHECK_INT(q.aggs[2].fn, DSQ_AGG_P95);
    CHECK_INT(q.nby, 2);
    CHECK_INT(q.nnodes, 3);
    CHECK_INT(q.where, 2);
    CHECK_INT(q.nodes[2].type, DSQ_N_AND);
    CHECK_INT(q.nodes[2].a, 0);
    CHECK_INT(q.nodes[2].b, 1);
    CHECK_INT(q.nodes[0].type, DSQ_N_CMP);
    CHECK_INT(q.nodes[0].key, DSQ_KEY_RUN);
    CHECK_INT(q.nodes[0].op, DSQ_OP_GLOB);
    CHECK_STR(q.nodes[0].value, "llama*");
    CHECK_INT(q.nodes[0].is_num, 0);
    CHECK_INT(q.nodes[0].off, 49);
    CHECK_INT(q.nodes[0].len, 3);
    CHECK_INT(q.nodes[1].key, DSQ_KEY_RANK);
    CHECK_INT(q.nodes[1].op, DSQ_OP_EQ);
    CHECK_INT(q.nodes[1].is_num, 1);
    CHECK_DBL(q.nodes[1].num, 0);

    /* and binds tighter than or */
    ok("count where rank = 0 or rank = 1 and host = gpu009");
    CHECK_INT(q.nnodes, 5);
    CHECK_INT(q.where, 4);
    CHECK_INT(q.nodes[4].type, DSQ_N_OR);
    CHECK_INT(q.nodes[4].a, 0);
    CHECK_INT(q.nodes[4].b, 3);
    CHECK_INT(q.nodes[3].type, DSQ_N_AND);
    CHECK_INT(q.nodes[3].a, 1);
    CHECK_INT(q.nodes[3].b, 2);
    CHECK_INT(q.nodes[2].key, DSQ_KEY_HOST);
    CHECK_STR(q.nodes[2].value, "gpu009");

    /* not and parentheses */
    ok("count where not (rank = 0 or rank = 1) and label = 'Stage 3 initialize beginning'");
    CHECK_INT(q.nodes[q.where].type, DSQ_N_AND);
    int n = q.nodes[q.where].a;
    CHECK_INT(q.nodes[n].type, DSQ_N_NOT);
    CHECK_INT(q.nodes[q.nodes[n].a].type, DSQ_N_OR);
    int lab = q.nodes[q.where].b;
    CHECK_INT(q.nodes[lab].key, DSQ_KEY_LABEL);
    CHECK_STR(q.nodes[lab].value, "Stage 3 initialize beginning");
    ok("count where not not rank = 3");
    CHECK_INT(q.nodes[q.where].type, DSQ_N_NOT);
    CHECK_INT(q.nodes[q.nodes[q.where].a].type, DSQ_N_NOT);
    ok("count where ((rank = 1))");
    CHECK_INT(q.nodes[q.where].type, DSQ_N_CMP);

    /* numeric fields */
    ok("count where Max_MA > 5.5 and \"lm loss\" <= 2e-3");
    CHECK_INT(q.nodes[0].key, DSQ_KEY_FIELD);
    CHECK_STR(q.nodes[0].name, "Max_MA");
    CHECK_INT(q.nodes[0].op, DSQ_OP_GT);
    CHECK_DBL(q.nodes[0].num, 5.5);
    CHECK_INT(q.nodes[1].key, DSQ_KEY_FIELD);
    CHECK_STR(q.nodes[1].name, "lm loss");
    CHECK_DBL(q.nodes[1].num, 2e-3);
    ok("count where rank != -1");
    CHECK_INT(q.nodes[0].op, DSQ_OP_NE);
    CHECK_DBL(q.nodes[0].num, -1);
    /* a date-like literal stays one word and is not a number */
    ok("count where run = 2024-07-01");
    CHECK_STR(q.nodes[0].value, "2024-07-01");
    CHECK_INT(q.nodes[0].is_num, 0);
    ok("count where host=gpu-9");
    CHECK_STR(q.nodes[0].name, "host");
    CHECK_STR(q.nodes[0].value, "gpu-9");
}

static void test_operators(void)
{
    static const struct {
        const char *text;
        int op;
    } tab[] = {{"count where rank = 1", DSQ_OP_EQ},  {"count where rank == 1", DSQ_OP_EQ},
               {"count where rank != 1", DSQ_OP_NE}, {"count where rank < 1", DSQ_OP_LT},
               {"count where rank <= 1", DSQ_OP_LE}, {"count where rank > 1", DSQ_OP_GT},
               {"count where rank >= 1", DSQ_OP_GE}, {"count where run ~ 'a*'", DSQ_OP_GLOB},
               {"count where rank>=1", DSQ_OP_GE},   {"count where run~x", DSQ_OP_GLOB}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        ok(tab[i].text);
        CHECK_INT(q.nodes[q.where].op, tab[i].op);
    }
}

static void test_limit_and_top(void)
{
    ok("max Max_MA by run limit 10");
    CHECK_INT(q.limit, 10);
    CHECK_INT(q.top, 0);
    ok("max Max_MA by run top 3");
    CHECK_INT(q.limit, 3);
    CHECK_INT(q.top, 1);
    /* clauses in any order */
    ok("max Max_MA top 2 by host where rank = 0");
    CHECK_INT(q.top, 1);
    CHECK_INT(q.limit, 2);
    CHECK_INT(q.by[0], DSQ_KEY_HOST);
    CHECK(q.where >= 0);
    /* a later limit does not undo top */
    ok("max Max_MA by run top 5 limit 3");
    CHECK_INT(q.top, 1);
    CHECK_INT(q.limit, 3);
}

static void test_order_by(void)
{
    ok("max Max_MA by run order by max Max_MA desc");
    CHECK_STR(q.order, "max Max_MA");
    CHECK_INT(q.order_desc, 1);
    CHECK_INT(q.order_off, 27);
    CHECK_INT(q.order_len, 10);
    ok("Max Max_MA by run Order By MAX \"Max_MA\" limit 3");
    CHECK_STR(q.order, "max Max_MA");
    CHECK_INT(q.order_desc, 0);
    CHECK_INT(q.limit, 3);
    ok("count by Host order by HOST asc");
    CHECK_STR(q.order, "host");
    ok("count by zero_stage order by zero_stage");
    CHECK_STR(q.order, "zero_stage");
    ok("count order by count desc where run = x");
    CHECK_STR(q.order, "count");
    CHECK(q.where >= 0);
    bad("count by run order run", 19, 3, "expected 'by' after order");
    bad("count by run order by", 21, 1, "expected a column to order by");
    bad("count by run order by where", 22, 5, "expected a column to order by");
}

/* Nesting is bounded (a hostile query found by fuzz_query overflowed the stack). */
static void test_deep_nesting(void)
{
    char text[4096];
    int n = 0;
    n += snprintf(text + n, sizeof text - (size_t)n, "count where ");
    for (int i = 0; i < 31; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "(");
    n += snprintf(text + n, sizeof text - (size_t)n, "rank = 0");
    for (int i = 0; i < 31; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, ")");
    ok(text);
    n = snprintf(text, sizeof text, "count where ");
    for (int i = 0; i < 1000 && n < 3000; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, i % 3 ? "(" : "not ");
    dsq_error err;
    dsq_error_clear(&err);
    CHECK(dsq_query_parse(text, &q, &err) == DSQ_EQUERY);
    CHECK(strstr(err.msg, "nested too deeply") != NULL);
}

static void test_errors(void)
{
    bad("max by run", 4, 2, "'max' needs a field name");
    bad("p95", 3, 1, "'p95' needs a field name");
    bad("max Max_MA by where", 14, 5, "expected what to group by");
    bad("max 'Max_MA by run", 4, 14, "unterminated string");
    bad("max \"Max_MA", 4, 7, "add the closing \"");
    bad("count where run = ", 18, 1, "expected a value, found 'end of query'");
    bad("count where run =", 17, 1, "expected a value");
    bad("maxx Max_MA", 0, 4, "expected an aggregate");
    bad("maxx Max_MA", 0, 4, "found 'maxx'");
    bad("", 0, 1, "empty query");
    bad("   ", 3, 1, "empty query");
    bad("max Max_MA by", 13, 1, "expected what to group by (run, host, rank, kind, label, file, family, level or a run attribute), found 'end of query'");
    bad("max Max_MA by run,", 18, 1, "expected what to group by");
    bad("count by time", 9, 4, "cannot group by 'time'");
    bad("count where time > yesterday", 19, 9, "is not a time");
    bad("count since 07/20", 12, 5, "expected a time after since/until");
    bad("count every 5x", 12, 2, "expected a bucket width");
    bad("count every", 11, 1, "expected a bucket width");
    bad("max Max_MA where", 16, 1, "expected a key or field name");
    bad("count where (rank = 0", 12, 1, "never closed");
    bad("count where rank 1", 17, 1, "expected an operator");
    bad("count where rank @ 1", 17, 1, "unexpected character '@'");
    bad("count where rank = 0 or", 23, 1, "expected a key or field name");
    bad("count where rank = 0 where rank = 1", 21, 5, "only one 'where'");
    bad("max Max_MA by run run", 18, 3, "unexpected 'run'");
    bad("max Max_MA, by run", 12, 2, "expected an aggregate");
    bad("max Max_MA limit 0", 17, 1, "positive whole number");
    bad("max Max_MA limit 2.5", 17, 3, "positive whole number");
    bad("max Max_MA limit -3", 17, 2, "positive whole number");
    bad("max Max_MA limit", 16, 1, "found 'end of query'");
    bad("max Max_MA top x", 15, 1, "found 'x'");
    bad("max Max_MA limit 1e300", 17, 5, "positive whole number");
    bad("max Max_MA top 1e19", 15, 4, "positive whole number");
}

static void test_limits(void)
{
    char text[4096];
    size_t n = 0;
    for (int i = 0; i < 17; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%smax f%d", i ? ", " : "", i);
    bad(text, (long long)n - 7, 3, "too many aggregates"); /* the 17th "max" */
    text[n - 9] = 0; /* 16 aggregates are fine */
    ok(text);
    CHECK_INT(q.naggs, 16);
    bad("count by run, host, rank, kind, label", 32, 5, "too many group keys");
    /* 64 where nodes at most */
    n = (size_t)snprintf(text, sizeof text, "count where rank = 0");
    for (int i = 1; i < 33; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, " or rank = %d", i);
    dsq_error err;
    CHECK_INT(parse(text, &err), DSQ_EQUERY);
    CHECK(strstr(err.msg, "too long") != NULL);
    n = (size_t)snprintf(text, sizeof text, "count where rank = 0");
    for (int i = 1; i < 32; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, " or rank = %d", i);
    ok(text);
    CHECK_INT(q.nnodes, 63);
    /* a very long word is kept to its first 255 bytes, not overrun */
    memset(text, 'x', 1000);
    memcpy(text, "max ", 4);
    text[1000] = 0;
    ok(text);
    CHECK_INT(strlen(q.aggs[0].field), 255);
}

TEST_MAIN(T(test_simple), T(test_every_aggregate_and_key), T(test_case_and_quotes), T(test_where),
          T(test_operators), T(test_limit_and_top), T(test_order_by), T(test_deep_nesting), T(test_errors), T(test_limits))
