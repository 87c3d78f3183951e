/* The query language: parse text into a plan, run it over an index.
 *
 *   max Max_MA by run
 *   count, avg Max_MA, p95 Max_MA by run, host where run ~ 'llama*' and rank = 0
 *
 * Aggregates: count min max sum avg p50 p90 p95 p99 first last (several per query,
 * comma-separated); `by` any of run, host, rank, kind, label, file, a run attribute
 * (zero_stage, nccl_version ...), or family / level (line counts, `count` only);
 * `where` with = != < <= > >= and ~ (glob), and/or/not and parentheses, over those
 * keys, numeric fields, run attributes and time (`time >= '2024-07-01 12:00'`,
 * `since 2024-07-01`, `until ...`); `every 10m` time buckets (s m h d); `limit N`,
 * `top N`; `order by COLUMN [asc|desc]` (any output column: `order by max Max_MA
 * desc`, `order by host`). Keywords are case-insensitive; field names are
 * exact, quoted when they hold spaces ("lm loss"). Errors carry the byte offset
 * and length of the offending word (dsq_error.offset/.length) for a caret.
 */
#ifndef DSQ_QUERY_H
#define DSQ_QUERY_H

#include "dsq/dsq.h"
#include "result.h"
#include "store.h"

enum dsq_agg_fn {
    DSQ_AGG_COUNT, DSQ_AGG_MIN, DSQ_AGG_MAX, DSQ_AGG_SUM, DSQ_AGG_AVG, DSQ_AGG_P50,
    DSQ_AGG_P90, DSQ_AGG_P95, DSQ_AGG_P99, DSQ_AGG_FIRST, DSQ_AGG_LAST, DSQ_AGG_COUNT_FNS
};

enum dsq_key {
    DSQ_KEY_NONE = 0, DSQ_KEY_RUN, DSQ_KEY_HOST, DSQ_KEY_RANK, DSQ_KEY_KIND, DSQ_KEY_LABEL,
    DSQ_KEY_FILE, DSQ_KEY_FAMILY, DSQ_KEY_LEVEL, DSQ_KEY_TIME,
    DSQ_KEY_FIELD, /* any other name: a numeric field or a run attribute, decided by the index */
    DSQ_KEY_ATTR   /* a run attribute (zero_stage, nccl_version ...): resolved from DSQ_KEY_FIELD */
};

enum dsq_op { DSQ_OP_EQ, DSQ_OP_NE, DSQ_OP_LT, DSQ_OP_LE, DSQ_OP_GT, DSQ_OP_GE, DSQ_OP_GLOB };

#define DSQ_Q_MAX_AGGS 16
#define DSQ_Q_MAX_BY 4
#define DSQ_Q_MAX_NODES 64
#define DSQ_Q_NAME 256

typedef struct dsq_q_agg {
    int fn;                    /* enum dsq_agg_fn */
    char field[DSQ_Q_NAME];    /* "" for a bare count */
    int off, len;              /* where the field name is in the text */
} dsq_q_agg;

/* A where-clause node: a comparison or and/or/not of other nodes. */
typedef struct dsq_q_node {
    enum { DSQ_N_CMP, DSQ_N_AND, DSQ_N_OR, DSQ_N_NOT } type;
    int a, b;                  /* child node indexes (and/or: both, not: a) */
    int key;                   /* enum dsq_key */
    int op;                    /* enum dsq_op */
    char name[DSQ_Q_NAME];     /* field name when key is DSQ_KEY_FIELD */
    char value[256];           /* the literal as written */
    double num;                /* the literal as a number, if it is one */
    int is_num;
    int off, len;              /* the name's position, for errors */
} dsq_q_node;

typedef struct dsq_query {
    dsq_q_agg aggs[DSQ_Q_MAX_AGGS];
    int naggs;
    int by[DSQ_Q_MAX_BY];      /* enum dsq_key; DSQ_KEY_FIELD: a run attribute named in by_name */
    char by_name[DSQ_Q_MAX_BY][DSQ_Q_NAME];
    int by_off[DSQ_Q_MAX_BY], by_len[DSQ_Q_MAX_BY];
    int nby;
    dsq_q_node nodes[DSQ_Q_MAX_NODES];
    int nnodes;
    int where;                 /* root node, -1 when there is no where */
    long limit;                /* 0 = no limit */
    int64_t every_us;          /* `every 1h`: time bucket width (a last group key), 0 = none */
    int top;                   /* `top N`: order by the first aggregate, largest first */
    char order[DSQ_Q_NAME + 16]; /* `order by COL [asc|desc]`: an output column's name, "" if none */
    int order_desc;
    int order_off, order_len;
} dsq_query;

/* Parses text into q (syntax only; names are resolved by dsq_query_run). */
int dsq_query_parse(const char *text, dsq_query *q, dsq_error *err);

/* Runs q over one or several indexes and returns one result table (caller frees):
 * groups of the same key in different indexes are merged exactly (counts, sums,
 * min, max, first, last; percentiles over all values). Aggregates are answered
 * from rollups when the query allows (see rollup.h), else from the events.
 * Unknown names (in every index) are errors with a "did you mean" hint. */
int dsq_query_run(const dsq_query *q, dsq_store *const *stores, int nstores, dsq_result **out,
                  dsq_error *err);
/* The same; scan_only = 1 ignores rollups and reads every matching event (tests
 * compare the two). */
int dsq_query_run_opts(const dsq_query *q, dsq_store *const *stores, int nstores, int scan_only,
                       dsq_result **out, dsq_error *err);

/* The events q's where clause selects (its aggregates and groups are ignored), in
 * time order across files, hosts and indexes, as a table: time run host rank kind
 * label fields text file line. limit 0 = all; *matched = how many matched. */
int dsq_query_show(const dsq_query *q, dsq_store *const *stores, int nstores, size_t limit,
                   dsq_result **out, uint64_t *matched, dsq_error *err);

/* A time literal ("2024-07-20", "2024-07-20 21:30", "2024-07-20 21:30:05", 'T'
 * allowed) as microseconds since the epoch. 0 or -1. */
int dsq_query_time(const char *s, double *out);

/* Name of an aggregate function ("max") and of a key ("run"). */
const char *dsq_agg_name(int fn);
const char *dsq_key_name(int key);

#endif
