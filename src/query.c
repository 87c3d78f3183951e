/* Query execution: resolve names against the index, scan event blocks (one run's
 * key range when the where clause pins the run), filter, aggregate per group,
 * and build a sorted result table.
 *
 * String predicates (run/host/label/file = or ~) are decided once per dictionary
 * id and cached, so the per-event cost is an array lookup. Values of one group are
 * converted to the unit of the first value seen when a field is printed in
 * several units of one kind (MB and GB). Percentiles are exact (values are kept
 * per group and sorted; nearest-rank definition).
 */
#include "query.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "error.h"
#include "evfill.h"
#include "grammar.h"
#include "num.h"
#include "rollup.h"
#include "timeconv.h"

/* `time` as an aggregate's field: the event's own time ("min time by run where
 * kind = failure" is when each run first failed). */
#define TIME_FIELD UINT32_MAX
/* a name this store does not have: nothing matches it here */
#define MISSING (UINT32_MAX - 1)

typedef struct acc {
    uint64_t count;
    double sum, min, max, first_v, last_v;
    int64_t first_t, last_t;
    uint8_t unit;
    double *vals;
    size_t nvals, cap;
} acc;

typedef struct group {
    uint64_t k[DSQ_Q_MAX_BY + 1]; /* by keys (global ids), then the time bucket with `every` */
    int used;
    acc *accs;
} group;

/* A run attribute's latest value (by log time) in one run. */
typedef struct attr_entry {
    uint32_t run, name, text;
    int64_t t;
    double num;
    int is_num;
} attr_entry;

/* Execution over one or several indexes. Group keys that are strings are ids in
 * `gdict`, shared by all indexes, so groups of several indexes merge; everything
 * from `st` down is about the index being read now. */
typedef struct exec {
    const dsq_query *q;
    dsq_dict *gdict;
    group *groups;
    size_t ngroups, gcap; /* groups[0..ngroups), dense */
    uint32_t *slots;      /* open addressing over groups (index + 1); cap is a power of two */
    size_t cap;
    int rollups;          /* answer from rollups (plan_rollups) */
    int need_values;      /* rollups: read chunks (percentiles, every, time ranges) */
    int run_level;        /* rollups: one merged record per run is enough (plan_rollups) */
    int single;           /* one index: group keys are its dictionary ids (no gdict) */
    struct acc_block *acc_blocks; /* where the groups' accumulators live */
    int time_nodes;       /* the where clause tests time */
    dsq_pairs *pairs;     /* reads chunks (with need_values) */
    dsq_evfill *fill;     /* event values kept in their series (each_event) */
    /* the event each_event hands on, whose values in their series are read when
     * first needed (fill_pending): many events are passed over on their kind,
     * run or label alone */
    dsq_event *pend_ev;
    const dsq_block_key *pend_k;
    uint64_t pend_event;
    uint32_t pend_in_series;
    int fill_status;      /* why a fill failed (each_event returns it) */
    dsq_error *err;
    /* the index being read */
    dsq_store *st;
    dsq_dict *dict;
    uint32_t dict_n;
    uint32_t *xlat;       /* local dictionary id -> gdict id, 0 until first used */
    uint32_t agg_field[DSQ_Q_MAX_AGGS];
    uint32_t node_field[DSQ_Q_MAX_NODES];
    int node_key[DSQ_Q_MAX_NODES];     /* resolved key: DSQ_KEY_FIELD becomes DSQ_KEY_ATTR for attributes */
    uint32_t by_attr[DSQ_Q_MAX_BY];    /* attribute name id for by keys that are attributes */
    attr_entry *attrs;                 /* (run, name) -> latest value, open addressing */
    uint32_t failure_name;             /* id of the attribute "failure" */
    size_t nattrs, attr_cap;
    signed char *str_match[DSQ_Q_MAX_NODES]; /* per dictionary id: -1 unknown, 0, 1 */
    uint32_t *source_gid; /* by source id: the path's gdict id (when file is used) */
    struct show_ctx *show; /* dsq_query_show's collection */
    uint32_t nsources;
} exec;

/* --- name resolution ------------------------------------------------------ */

static int unknown_field(exec *x, const char *name, int off, int len)
{
    const char *best = NULL;
    size_t bd = 3;
    for (uint32_t id = 1; id <= x->dict_n; id++) {
        const char *s = dsq_dict_str(x->dict, id, NULL);
        size_t d = dsq_name_distance(name, s);
        if (d < bd) {
            bd = d;
            best = s;
        }
    }
    if (best)
        dsq_error_set(x->err, DSQ_EQUERY, "unknown field `%s`; did you mean `%s`?", name, best);
    else
        dsq_error_set(x->err, DSQ_EQUERY,
                      "unknown field or attribute `%s` (no such name in this index)", name);
    x->err->offset = off;
    x->err->length = len;
    return DSQ_EQUERY;
}

/* --- run attributes -------------------------------------------------------- */

static size_t attr_slot(const exec *x, uint32_t run, uint32_t name)
{
    uint64_t h = ((uint64_t)run << 32 | name) * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (x->attr_cap - 1);
    while (x->attrs[i].name && (x->attrs[i].run != run || x->attrs[i].name != name))
        i = (i + 1) & (x->attr_cap - 1);
    return i;
}

static int attr_grow(exec *x)
{
    size_t old = x->attr_cap, cap = old ? old * 2 : 1024;
    attr_entry *prev = x->attrs;
    if (!(x->attrs = calloc(cap, sizeof *x->attrs))) {
        x->attrs = prev;
        return DSQ_ENOMEM;
    }
    x->attr_cap = cap;
    for (size_t i = 0; i < old; i++)
        if (prev[i].name)
            x->attrs[attr_slot(x, prev[i].run, prev[i].name)] = prev[i];
    free(prev);
    return 0;
}

static const attr_entry *attr_get(const exec *x, uint32_t run, uint32_t name)
{
    if (!x->attr_cap)
        return NULL;
    const attr_entry *a = &x->attrs[attr_slot(x, run, name)];
    return a->name ? a : NULL;
}

/* Reads the values of the event each_event handed on that are kept in their series
 * (evfill.h), once; 0 or an error (also kept in fill_status). */
static int fill_pending(exec *x)
{
    uint32_t m = x->pend_in_series;
    if (!m)
        return 0;
    x->pend_in_series = 0;
    int rc = !x->fill && dsq_evfill_new(&x->fill)
                 ? dsq_error_set(x->err, DSQ_ENOMEM, "out of memory reading events")
                 : dsq_evfill_event(x->fill, x->st, x->pend_k, x->pend_ev, x->pend_event, m, x->err);
    if (rc)
        x->fill_status = rc;
    return rc;
}

/* Decodes one block and hands each event (with the key's host and rank) to fn,
 * which reads its values kept in their series through fill_pending. */
static int each_event(exec *x, const dsq_block_key *k, const void *data, size_t n,
                      int (*fn)(exec *, const dsq_block_key *, const dsq_event *))
{
    dsq_block_iter it;
    dsq_event ev;
    int r = dsq_block_iter_init(&it, data, n, k->t_us) != 0 ? -1 : 1;
    while (r == 1 && (r = dsq_block_iter_next(&it, &ev)) == 1) {
        ev.host = k->host;
        ev.rank = k->rank;
        x->pend_ev = &ev;
        x->pend_k = k;
        x->pend_event = it.event;
        x->pend_in_series = it.in_series;
        int rc = fn(x, k, &ev);
        x->pend_in_series = 0;
        if (!rc)
            rc = x->fill_status;
        if (rc)
            return rc;
    }
    return r < 0 ? dsq_error_set(x->err, DSQ_EINDEX, "damaged event block (source %u)", k->source)
                 : 0;
}

/* The latest value of every attribute of every run, from the attribute table. */
static int attr_row(void *ctx, uint32_t run, uint32_t name, uint32_t source, const dsq_attr_rec *rec)
{
    exec *x = ctx;
    (void)source;
    if ((x->nattrs + 1) * 2 > x->attr_cap && attr_grow(x))
        return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory reading attributes");
    attr_entry *a = &x->attrs[attr_slot(x, run, name)];
    if (a->name && (name == x->failure_name ? rec->t >= a->t : rec->t < a->t))
        return 0; /* the latest value wins; for `failure`, the first failure */
    if (!a->name)
        x->nattrs++;
    *a = (attr_entry){run, name, rec->text, rec->t, rec->num, rec->is_num};
    return 0;
}

static int is_attr_name(const exec *x, uint32_t name)
{
    for (size_t i = 0; name && i < x->attr_cap; i++)
        if (x->attrs[i].name == name)
            return 1;
    return 0;
}

static uint32_t find_name(const exec *x, const char *name)
{
    uint32_t id = dsq_dict_find(x->dict, name, strlen(name));
    return id ? id : MISSING;
}

/* Resolves names against the index being read. A name this index lacks matches
 * nothing here (MISSING); check_names has made sure some index has it. */
static void resolve(exec *x)
{
    const dsq_query *q = x->q;
    for (int i = 0; i < q->naggs; i++) {
        const char *f = q->aggs[i].field;
        x->agg_field[i] = !f[0] ? 0 : strcmp(f, "time") == 0 ? TIME_FIELD : find_name(x, f);
    }
    for (int i = 0; i < q->nby; i++)
        x->by_attr[i] = q->by[i] == DSQ_KEY_FIELD ? find_name(x, q->by_name[i]) : 0;
    for (int i = 0; i < q->nnodes; i++) {
        const dsq_q_node *n = &q->nodes[i];
        x->node_key[i] = n->key;
        if (n->type != DSQ_N_CMP || n->key != DSQ_KEY_FIELD)
            continue;
        x->node_field[i] = find_name(x, n->name);
        if (is_attr_name(x, x->node_field[i]))
            x->node_key[i] = DSQ_KEY_ATTR;
    }
}

/* What one index knows of the query's names, or-ed over indexes by check_names. */
typedef struct name_seen {
    char agg[DSQ_Q_MAX_AGGS], by_attr[DSQ_Q_MAX_BY], node[DSQ_Q_MAX_NODES], node_attr[DSQ_Q_MAX_NODES];
} name_seen;

static void note_names(exec *x, name_seen *seen)
{
    const dsq_query *q = x->q;
    resolve(x);
    for (int i = 0; i < q->naggs; i++)
        seen->agg[i] |= x->agg_field[i] != MISSING;
    for (int i = 0; i < q->nby; i++)
        seen->by_attr[i] |= q->by[i] != DSQ_KEY_FIELD || is_attr_name(x, x->by_attr[i]);
    for (int i = 0; i < q->nnodes; i++) {
        seen->node[i] |= x->node_field[i] != MISSING || q->nodes[i].key != DSQ_KEY_FIELD;
        seen->node_attr[i] |= x->node_key[i] == DSQ_KEY_ATTR;
    }
}

/* Unknown names are errors once no index has them; the hint comes from the index
 * being read (the last one). */
static int names_error(exec *x, const name_seen *seen)
{
    const dsq_query *q = x->q;
    for (int i = 0; i < q->naggs; i++)
        if (!seen->agg[i])
            return unknown_field(x, q->aggs[i].field, q->aggs[i].off, q->aggs[i].len);
    for (int i = 0; i < q->nby; i++)
        if (!seen->by_attr[i])
            return unknown_field(x, q->by_name[i], q->by_off[i], q->by_len[i]);
    for (int i = 0; i < q->nnodes; i++) {
        const dsq_q_node *n = &q->nodes[i];
        if (n->type != DSQ_N_CMP || n->key != DSQ_KEY_FIELD)
            continue;
        if (!seen->node[i])
            return unknown_field(x, n->name, n->off, n->len);
        if (!seen->node_attr[i] && !n->is_num) {
            dsq_error_set(x->err, DSQ_EQUERY, "`%s` is a number field: compare it with a number",
                          n->name);
            x->err->offset = n->off;
            x->err->length = n->len;
            return DSQ_EQUERY;
        }
    }
    return 0;
}

/* --- predicates ----------------------------------------------------------- */

static int cmp_op(int op, double a, double b)
{
    switch (op) {
    case DSQ_OP_EQ: return a == b;
    case DSQ_OP_NE: return a != b;
    case DSQ_OP_LT: return a < b;
    case DSQ_OP_LE: return a <= b;
    case DSQ_OP_GT: return a > b;
    case DSQ_OP_GE: return a >= b;
    default: return 0;
    }
}

static int str_op(int op, const char *s, const char *v)
{
    if (op == DSQ_OP_GLOB)
        return fnmatch(v, s, 0) == 0;
    int c = strcmp(s, v);
    return cmp_op(op, (double)c, 0.0);
}

/* Decides a string comparison for one id, caching the answer. */
static int str_node(exec *x, int ni, uint32_t id, const char *s)
{
    signed char *cache = x->str_match[ni];
    if (cache && id <= x->dict_n && cache[id] >= 0)
        return cache[id];
    int r = str_op(x->q->nodes[ni].op, s, x->q->nodes[ni].value);
    if (cache && id <= x->dict_n)
        cache[id] = (signed char)r;
    return r;
}

/* The value of `field` in ev (each_event's: its values in their series read
 * first); 0 when it has none (or they could not be read: fill_status). */
static int field_value(exec *x, const dsq_event *ev, uint32_t field, double *v, uint8_t *unit)
{
    for (int i = 0; i < ev->nf; i++)
        if (ev->f[i].name == field) {
            if (fill_pending(x))
                return 0;
            *v = ev->f[i].v;
            *unit = ev->f[i].unit;
            return 1;
        }
    return 0;
}

static const char *source_path(const exec *x, uint32_t id)
{
    uint32_t g = id < x->nsources ? x->source_gid[id] : 0;
    return g ? dsq_dict_str(x->gdict, g, NULL) : "";
}

static int eval(exec *x, int ni, const dsq_block_key *k, const dsq_event *ev)
{
    const dsq_q_node *n = &x->q->nodes[ni];
    double v;
    uint8_t u;
    switch (n->type) {
    case DSQ_N_AND: return eval(x, n->a, k, ev) && eval(x, n->b, k, ev);
    case DSQ_N_OR: return eval(x, n->a, k, ev) || eval(x, n->b, k, ev);
    case DSQ_N_NOT: return !eval(x, n->a, k, ev);
    default: break;
    }
    switch (x->node_key[ni]) {
    case DSQ_KEY_TIME: return ev->t_us != DSQ_TIME_NONE && cmp_op(n->op, (double)ev->t_us, n->num);
    case DSQ_KEY_ATTR: {
        const attr_entry *a = attr_get(x, k->run, x->node_field[ni]);
        if (!a)
            return n->op == DSQ_OP_NE;
        if (a->is_num && n->is_num && n->op != DSQ_OP_GLOB)
            return cmp_op(n->op, a->num, n->num);
        return str_node(x, ni, a->text, dsq_dict_str(x->dict, a->text, NULL));
    }
    case DSQ_KEY_RUN: return str_node(x, ni, k->run, dsq_dict_str(x->dict, k->run, NULL));
    case DSQ_KEY_HOST: return str_node(x, ni, k->host, dsq_dict_str(x->dict, k->host, NULL));
    case DSQ_KEY_LABEL: return str_node(x, ni, ev->label, dsq_dict_str(x->dict, ev->label, NULL));
    case DSQ_KEY_FILE: return str_op(n->op, source_path(x, k->source), n->value);
    case DSQ_KEY_KIND: return str_op(n->op, dsq_ev_kind_name(ev->kind), n->value);
    case DSQ_KEY_RANK:
        if (n->is_num)
            return k->rank >= 0 && cmp_op(n->op, k->rank, n->num);
        return str_op(n->op, k->rank >= 0 ? "" : "-", n->value);
    default:
        return field_value(x, ev, x->node_field[ni], &v, &u) && cmp_op(n->op, v, n->num);
    }
}

/* --- groups --------------------------------------------------------------- */

/* A local dictionary id as an id in the shared dictionary of group keys. */
static uint64_t global_id(exec *x, uint32_t id)
{
    if (!id || id > x->dict_n)
        return 0;
    if (x->single)
        return id; /* one index: its own ids are the group keys */
    if (!x->xlat[id]) {
        size_t n;
        const char *s = dsq_dict_str(x->dict, id, &n);
        x->xlat[id] = dsq_dict_intern(x->gdict, s, n); /* 0 only when out of memory */
    }
    return x->xlat[id];
}

static uint64_t key_part(exec *x, int bi, const dsq_block_key *k, const dsq_event *ev)
{
    switch (x->q->by[bi]) {
    case DSQ_KEY_FIELD: {
        const attr_entry *a = attr_get(x, k->run, x->by_attr[bi]);
        return a ? global_id(x, a->text) : 0;
    }
    case DSQ_KEY_RUN: return global_id(x, k->run);
    case DSQ_KEY_HOST: return global_id(x, k->host);
    case DSQ_KEY_RANK: return (uint64_t)(int64_t)k->rank;
    case DSQ_KEY_KIND: return ev->kind;
    case DSQ_KEY_LABEL: return global_id(x, ev->label);
    case DSQ_KEY_FILE: return k->source < x->nsources ? x->source_gid[k->source] : 0;
    default: return 0;
    }
}

/* The start of t's `every` bucket; values without a time share INT64_MIN. */
static uint64_t bucket_of(const dsq_query *q, int64_t t)
{
    if (t == DSQ_TIME_NONE)
        return (uint64_t)INT64_MIN;
    return (uint64_t)(t - ((t % q->every_us) + q->every_us) % q->every_us);
}

static uint64_t hash_key(const uint64_t *k, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        h ^= k[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 33);
}

/* Group keys: the by keys, plus the time bucket with `every`. */
static int nkeys(const dsq_query *q) { return q->nby + (q->every_us ? 1 : 0); }

/* Groups live in a dense array (in order of creation); an open-addressing table
 * of indexes (+1, 0 = free) finds them. The table doubles at 50% load. */
static int grow_groups(exec *x)
{
    size_t cap = x->cap ? x->cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return DSQ_ENOMEM;
    for (size_t i = 0; i < x->ngroups; i++) {
        size_t j = hash_key(x->groups[i].k, nkeys(x->q)) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(x->slots);
    x->slots = t;
    x->cap = cap;
    return 0;
}

/* Accumulators of a new group, from blocks of ACC_BLOCK groups' worth (freed
 * together at the end), instead of one allocation per group. */
#define ACC_BLOCK 1024

typedef struct acc_block {
    struct acc_block *next;
    size_t used;
    acc a[];
} acc_block;

static acc *new_accs(exec *x)
{
    size_t n = (size_t)x->q->naggs;
    acc_block *b = x->acc_blocks;
    if (!b || b->used + n > (size_t)ACC_BLOCK * DSQ_Q_MAX_AGGS) {
        if (!(b = calloc(1, sizeof *b + (size_t)ACC_BLOCK * DSQ_Q_MAX_AGGS * sizeof(acc))))
            return NULL;
        b->next = x->acc_blocks;
        x->acc_blocks = b;
    }
    acc *a = &b->a[b->used];
    b->used += n;
    return a;
}

static group *group_for(exec *x, const uint64_t *k)
{
    if ((x->ngroups + 1) * 2 > x->cap && grow_groups(x) != 0)
        return NULL;
    int n = nkeys(x->q);
    size_t j = hash_key(k, n) & (x->cap - 1);
    for (; x->slots[j]; j = (j + 1) & (x->cap - 1))
        if (memcmp(x->groups[x->slots[j] - 1].k, k, (size_t)n * sizeof *k) == 0)
            return &x->groups[x->slots[j] - 1];
    if (x->ngroups == x->gcap) {
        size_t gcap = x->gcap ? x->gcap * 2 : 256;
        group *ng = realloc(x->groups, gcap * sizeof *ng);
        if (!ng)
            return NULL;
        x->groups = ng;
        x->gcap = gcap;
    }
    group *g = &x->groups[x->ngroups];
    memset(g, 0, sizeof *g);
    if (!(g->accs = new_accs(x)))
        return NULL;
    g->used = 1;
    memcpy(g->k, k, sizeof g->k);
    x->slots[j] = (uint32_t)++x->ngroups;
    return g;
}

static int is_pct(int fn) { return fn >= DSQ_AGG_P50 && fn <= DSQ_AGG_P99; }

static int add_value(acc *a, int fn, double v, uint8_t unit, int64_t t)
{
    if (a->count == 0) {
        a->unit = unit;
        a->min = a->max = a->first_v = a->last_v = v;
        a->first_t = a->last_t = t;
    } else if (unit != a->unit && dsq_unit_family(unit) == dsq_unit_family(a->unit)) {
        v = v * dsq_unit_factor(unit) / dsq_unit_factor(a->unit);
    }
    a->count++;
    a->sum += v;
    if (v < a->min)
        a->min = v;
    if (v > a->max)
        a->max = v;
    if (t < a->first_t) {
        a->first_t = t;
        a->first_v = v;
    }
    if (t >= a->last_t) {
        a->last_t = t;
        a->last_v = v;
    }
    if (is_pct(fn)) {
        if (a->nvals == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 64;
            double *n = realloc(a->vals, cap * sizeof *n);
            if (!n)
                return DSQ_ENOMEM;
            a->vals = n;
            a->cap = cap;
        }
        a->vals[a->nvals++] = v;
    }
    return 0;
}

static int on_event(exec *x, const dsq_block_key *k, const dsq_event *ev)
{
    const dsq_query *q = x->q;
    if (q->where >= 0 && !eval(x, q->where, k, ev))
        return 0;
    uint64_t key[DSQ_Q_MAX_BY + 1] = {0};
    for (int i = 0; i < q->nby; i++)
        key[i] = key_part(x, i, k, ev);
    if (q->every_us)
        key[q->nby] = bucket_of(q, ev->t_us);
    group *g = NULL;
    for (int i = 0; i < q->naggs; i++) {
        double v = 1;
        uint8_t unit = 0;
        if (x->agg_field[i] == TIME_FIELD) {
            if (ev->t_us == DSQ_TIME_NONE)
                continue;
            v = (double)ev->t_us;
            unit = DSQ_U_TIME;
        } else if (x->agg_field[i] && !field_value(x, ev, x->agg_field[i], &v, &unit)) {
            continue;
        }
        if (!g && !(g = group_for(x, key)))
            return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory grouping");
        if (add_value(&g->accs[i], q->aggs[i].fn, v, unit, ev->t_us))
            return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory for percentiles");
    }
    return 0;
}

static int on_block(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    return each_event(ctx, k, data, n, on_event);
}

/* --- rollups -------------------------------------------------------------- */

/* Adds a series' summary to an accumulator (converting units as add_value does). */
static void acc_merge(acc *a, const dsq_series_rec *r)
{
    if (!r->count)
        return;
    if (a->count == 0) {
        a->count = r->count;
        a->unit = r->unit;
        a->sum = r->sum;
        a->min = r->min;
        a->max = r->max;
        a->first_v = r->first_v;
        a->last_v = r->last_v;
        a->first_t = r->first_t;
        a->last_t = r->last_t;
        return;
    }
    uint8_t u = r->unit;
    a->count += r->count;
    a->sum += dsq_unit_convert(r->sum, u, a->unit);
    double mn = dsq_unit_convert(r->min, u, a->unit), mx = dsq_unit_convert(r->max, u, a->unit);
    if (mn < a->min)
        a->min = mn;
    if (mx > a->max)
        a->max = mx;
    if (r->first_t < a->first_t) {
        a->first_t = r->first_t;
        a->first_v = dsq_unit_convert(r->first_v, u, a->unit);
    }
    if (r->last_t >= a->last_t) {
        a->last_t = r->last_t;
        a->last_v = dsq_unit_convert(r->last_v, u, a->unit);
    }
}

/* Whether rollups can answer q: aggregates of named fields or bare counts, grouped
 * and filtered by run, host, rank, file, run attributes and time (kind too when
 * every aggregate is a bare count, which the per-kind count series answer). Labels,
 * comparisons of numeric fields and `time` as a value need the events. */
static int plan_rollups(exec *x)
{
    const dsq_query *q = x->q;
    int counts = 0, fields = 0;
    for (int i = 0; i < q->naggs; i++) {
        if (!q->aggs[i].field[0])
            counts = 1;
        else if (strcmp(q->aggs[i].field, "time") == 0)
            return 0;
        else
            fields = 1;
        if (is_pct(q->aggs[i].fn))
            x->need_values = 1;
    }
    for (int i = 0; i < q->nnodes; i++)
        if (q->nodes[i].type == DSQ_N_CMP && q->nodes[i].key == DSQ_KEY_TIME)
            x->time_nodes = 1;
    if (q->every_us || x->time_nodes)
        x->need_values = 1;
    if (counts && x->need_values && (q->every_us || x->time_nodes))
        return 0; /* count series have no times to bucket or filter */
    for (int i = 0; i < q->nby; i++) {
        int k = q->by[i];
        if (k == DSQ_KEY_LABEL || (k == DSQ_KEY_KIND && fields))
            return 0;
    }
    x->run_level = !x->need_values;
    for (int i = 0; i < q->nby; i++)
        if (q->by[i] != DSQ_KEY_RUN && q->by[i] != DSQ_KEY_FIELD && q->by[i] != DSQ_KEY_KIND)
            x->run_level = 0;
    for (int i = 0; i < q->nnodes; i++) {
        if (q->nodes[i].type != DSQ_N_CMP)
            continue;
        int k = x->node_key[i];
        if (k == DSQ_KEY_LABEL || (k == DSQ_KEY_KIND && fields) || k == DSQ_KEY_FIELD)
            return 0;
        if (k != DSQ_KEY_RUN && k != DSQ_KEY_ATTR && k != DSQ_KEY_KIND)
            x->run_level = 0; /* host, rank, file, time: per-series records */
    }
    return 1;
}

typedef struct roll_ctx {
    exec *x;
    int agg;             /* the aggregate being answered */
    int status;
    dsq_block_key k;     /* the series' run/host/rank/source */
    dsq_event ev;        /* its kind (count series) and, value by value, its time */
    const dsq_series_rec *rec;
} roll_ctx;

static int roll_values(void *ctx, const int64_t *t, const double *v, size_t n)
{
    roll_ctx *rc = ctx;
    exec *x = rc->x;
    const dsq_query *q = x->q;
    uint64_t key[DSQ_Q_MAX_BY + 1] = {0};
    for (int i = 0; i < q->nby; i++)
        key[i] = key_part(x, i, &rc->k, &rc->ev);
    acc *a = NULL; /* without `every`, one group for the whole batch */
    for (size_t j = 0; j < n; j++) {
        rc->ev.t_us = t[j];
        if (x->time_nodes && !eval(x, q->where, &rc->k, &rc->ev))
            continue;
        if (q->every_us || !a) {
            if (q->every_us)
                key[q->nby] = bucket_of(q, t[j]);
            group *g = group_for(x, key);
            if (!g)
                return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory grouping");
            a = &g->accs[rc->agg];
        }
        if (add_value(a, q->aggs[rc->agg].fn, v[j], rc->rec->unit, t[j]))
            return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory for percentiles");
    }
    return 0;
}

static int roll_series(void *ctx, const dsq_series_key *sk, const dsq_series_rec *rec)
{
    roll_ctx *rc = ctx;
    exec *x = rc->x;
    const dsq_query *q = x->q;
    rc->k = (dsq_block_key){.run = sk->run, .host = sk->host, .rank = sk->rank, .source = sk->source};
    rc->ev = (dsq_event){.t_us = DSQ_TIME_NONE, .rank = sk->rank, .host = sk->host};
    if (sk->field >= DSQ_SERIES_KIND_BASE)
        rc->ev.kind = (uint16_t)(sk->field - DSQ_SERIES_KIND_BASE);
    rc->rec = rec;
    if (!x->time_nodes && q->where >= 0 && !eval(x, q->where, &rc->k, &rc->ev))
        return 0;
    int counting = !q->aggs[rc->agg].field[0];
    if (x->need_values && !counting) {
        /* a percentile alone needs no times */
        int fn = q->aggs[rc->agg].fn;
        int times = q->every_us || x->time_nodes || fn == DSQ_AGG_FIRST || fn == DSQ_AGG_LAST;
        if (!x->pairs && dsq_pairs_new(&x->pairs))
            return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory reading rollups");
        return dsq_pairs_scan(x->pairs, x->st, sk, rec, times, roll_values, rc, x->err);
    }
    uint64_t key[DSQ_Q_MAX_BY + 1] = {0};
    for (int i = 0; i < q->nby; i++)
        key[i] = key_part(x, i, &rc->k, &rc->ev);
    group *g = group_for(x, key);
    if (!g)
        return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory grouping");
    acc *a = &g->accs[rc->agg];
    if (counting)
        a->count += rec->count;
    else
        acc_merge(a, rec);
    return 0;
}

/* Answers every aggregate from the series of its field (bare counts: of every
 * kind), one run's key range when the where clause pins the run. */
static int run_rollups(exec *x, uint32_t run)
{
    const dsq_query *q = x->q;
    roll_ctx rc = {.x = x};
    int status = 0;
    /* per run (one merged record) or per run/host/rank/file series */
    int (*scan)(dsq_store *, uint32_t, uint32_t, uint32_t, dsq_store_series_fn, void *,
                dsq_error *) = x->run_level ? dsq_store_scan_runroll : dsq_store_scan_series;
    for (int i = 0; i < q->naggs && !status; i++) {
        rc.agg = i;
        uint32_t f = x->agg_field[i];
        if (f == MISSING)
            continue;
        if (f)
            status = scan(x->st, f, f, run, roll_series, &rc, x->err);
        else if (!run)
            status = scan(x->st, DSQ_SERIES_KIND_BASE, DSQ_SERIES_KIND_BASE + DSQ_EV_KIND_COUNT, 0,
                          roll_series, &rc, x->err);
        else
            for (uint32_t kd = 0; kd < DSQ_EV_KIND_COUNT && !status; kd++)
                status = scan(x->st, DSQ_SERIES_KIND_BASE + kd, DSQ_SERIES_KIND_BASE + kd, run,
                              roll_series, &rc, x->err);
    }
    return status;
}

/* --- results -------------------------------------------------------------- */

/* The k-th smallest of v[0..n) (0-based), reordering v: quickselect with a
 * three-way partition, so equal values (and NaN, which compares neither way)
 * always shrink the range. Expected linear time. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* the answer is in v[lo..hi) */
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ n;
    while (hi - lo > 1) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double p = v[lo + (size_t)(seed >> 33) % (hi - lo)];
        size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < p, [lt,i) == p, [gt,hi) > p */
        while (i < gt) {
            double x = v[i];
            if (x < p) {
                v[i++] = v[lt];
                v[lt++] = x;
            } else if (x > p) {
                v[i] = v[--gt];
                v[gt] = x;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return p;
    }
    return v[lo];
}

static dsq_cell agg_cell(acc *a, int fn)
{
    dsq_cell c = {.unit = a->unit};
    static const double pct[] = {50, 90, 95, 99};
    if (a->count == 0) {
        c.is_null = 1;
        return c;
    }
    switch (fn) {
    case DSQ_AGG_COUNT: c.v = (double)a->count; c.is_int = 1; c.unit = 0; break;
    case DSQ_AGG_MIN: c.v = a->min; break;
    case DSQ_AGG_MAX: c.v = a->max; break;
    case DSQ_AGG_SUM: c.v = a->sum; break;
    case DSQ_AGG_AVG: c.v = a->sum / (double)a->count; break;
    case DSQ_AGG_FIRST: c.v = a->first_v; break;
    case DSQ_AGG_LAST: c.v = a->last_v; break;
    default: { /* nearest rank */
        double r = ceil(pct[fn - DSQ_AGG_P50] / 100.0 * (double)a->nvals);
        size_t i = r < 1 ? 0 : (size_t)r - 1;
        c.v = select_kth(a->vals, a->nvals, i < a->nvals ? i : a->nvals - 1);
    }
    }
    return c;
}

static dsq_cell key_cell(const exec *x, int key, uint64_t v)
{
    dsq_cell c = {0};
    switch (key) {
    case DSQ_KEY_RANK:
        if ((int64_t)v < 0)
            c.is_null = 1;
        c.v = (double)(int64_t)v;
        c.is_int = 1;
        break;
    case DSQ_KEY_KIND: c.s = dsq_ev_kind_name((int)v); break;
    case DSQ_KEY_FAMILY: c.s = dsq_family_name((int)v); break;
    case DSQ_KEY_LEVEL: c.s = dsq_level_name((int)v); break;
    case DSQ_KEY_FILE: c.s = v ? dsq_dict_str(x->gdict, (uint32_t)v, NULL) : "-"; break;
    default: /* run host label attribute: ids of the index, or shared ones (several) */
        c.s = v ? dsq_dict_str(x->single ? x->dict : x->gdict, (uint32_t)v, NULL) : "-";
        break;
    }
    return c;
}

static int build_result(exec *x, dsq_result **out)
{
    const dsq_query *q = x->q;
    const char *names[DSQ_Q_MAX_BY + 1 + DSQ_Q_MAX_AGGS];
    char agg_names[DSQ_Q_MAX_AGGS][DSQ_Q_NAME + 8];
    int nc = 0;
    for (int i = 0; i < q->nby; i++)
        names[nc++] = q->by[i] == DSQ_KEY_FIELD ? q->by_name[i] : dsq_key_name(q->by[i]);
    if (q->every_us)
        names[nc++] = "time";
    for (int i = 0; i < q->naggs; i++) {
        snprintf(agg_names[i], sizeof agg_names[i], "%s%s%s", dsq_agg_name(q->aggs[i].fn),
                 q->aggs[i].field[0] ? " " : "", q->aggs[i].field);
        names[nc++] = agg_names[i];
    }
    dsq_result *r = dsq_result_new(nc, names);
    if (!r)
        return dsq_error_set(x->err, DSQ_ENOMEM, "result");
    dsq_cell cells[DSQ_Q_MAX_BY + 1 + DSQ_Q_MAX_AGGS];
    int nk = nkeys(q);
    for (size_t gi = 0; gi < x->ngroups; gi++) {
        group *g = &x->groups[gi];
        if (!g->used)
            continue;
        for (int i = 0; i < q->nby; i++)
            cells[i] = key_cell(x, q->by[i], g->k[i]);
        if (q->every_us)
            cells[q->nby] = (int64_t)g->k[q->nby] == INT64_MIN
                                ? (dsq_cell){.is_null = 1}
                                : (dsq_cell){.v = (double)(int64_t)g->k[q->nby], .unit = DSQ_U_TIME};
        for (int i = 0; i < q->naggs; i++)
            cells[nk + i] = agg_cell(&g->accs[i], q->aggs[i].fn);
        if (dsq_result_add_row(r, cells)) {
            dsq_result_free(r);
            return dsq_error_set(x->err, DSQ_ENOMEM, "result");
        }
    }
    dsq_result_sort(r, nk);
    if (q->order[0]) {
        int col = dsq_result_col_index(r, q->order);
        if (col < 0) {
            char cols[512] = "";
            for (int i = 0; i < nc; i++)
                snprintf(cols + strlen(cols), sizeof cols - strlen(cols), "%s%s", i ? ", " : "",
                         names[i]);
            const char *hint = NULL; /* `order by Max_MA` for the column `max Max_MA` */
            for (int i = 0; i < nc; i++) {
                const char *sp = strchr(names[i], ' ');
                if (sp && strcmp(sp + 1, q->order) == 0)
                    hint = names[i];
            }
            if (hint)
                dsq_error_set(x->err, DSQ_EQUERY, "cannot order by `%s`; did you mean `%s`?",
                              q->order, hint);
            else
                dsq_error_set(x->err, DSQ_EQUERY, "cannot order by `%s`: the columns are %s",
                              q->order, cols);
            dsq_result_free(r);
            x->err->offset = q->order_off;
            x->err->length = q->order_len;
            return DSQ_EQUERY;
        }
        dsq_result_sort_by(r, col, q->order_desc, nk);
    } else if (q->top) {
        dsq_result_sort_desc(r, nk);
    }
    if (q->limit > 0)
        dsq_result_truncate(r, (size_t)q->limit);
    *out = r;
    return 0;
}

static int uses_key(const dsq_query *q, int key);

/* --- line counts: by family / level come from the source records ---------- */

/* Adds one source's line counts (per family or per level) to the groups. */
static int count_source_lines(void *ctx, const char *path, const dsq_source_rec *rec)
{
    exec *x = ctx;
    const dsq_query *q = x->q;
    dsq_block_key k = {.run = rec->run, .source = rec->id, .rank = -1};
    dsq_event ev = {.t_us = DSQ_TIME_NONE};
    (void)path;
    if (q->where >= 0 && !eval(x, q->where, &k, &ev))
        return 0;
    int by_fam = uses_key(q, DSQ_KEY_FAMILY);
    int n = by_fam ? DSQ_REC_FAMILIES : DSQ_REC_LEVELS;
    for (int f = 0; f < n; f++) {
        uint64_t count = by_fam ? rec->family_lines[f] : rec->level_lines[f];
        uint64_t key[DSQ_Q_MAX_BY + 1] = {0};
        if (!count)
            continue;
        for (int i = 0; i < q->nby; i++)
            key[i] = q->by[i] == DSQ_KEY_RUN    ? global_id(x, rec->run)
                     : q->by[i] == DSQ_KEY_FILE ? x->source_gid[rec->id]
                                                : (uint64_t)f;
        group *g = group_for(x, key);
        if (!g)
            return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory grouping");
        for (int i = 0; i < q->naggs; i++)
            g->accs[i].count += count;
    }
    return 0;
}

/* family and level group lines, which only the source records count. */
static int check_line_query(exec *x)
{
    const dsq_query *q = x->q;
    const char *why = NULL;
    int off = 0, len = 0;
    if (uses_key(q, DSQ_KEY_FAMILY) && uses_key(q, DSQ_KEY_LEVEL))
        why = "lines are counted by family and by level separately: group by one of them";
    if (q->every_us)
        why = "line counts are per file, not per time: drop `every`";
    for (int i = 0; i < q->naggs && !why; i++)
        if (q->aggs[i].fn != DSQ_AGG_COUNT || q->aggs[i].field[0])
            why = "family and level group lines: only `count` applies", off = q->aggs[i].off,
            len = q->aggs[i].len;
    for (int i = 0; i < q->nby && !why; i++)
        if (q->by[i] != DSQ_KEY_RUN && q->by[i] != DSQ_KEY_FILE && q->by[i] != DSQ_KEY_FAMILY &&
            q->by[i] != DSQ_KEY_LEVEL)
            why = "lines are counted per file: group them by run, file, family or level",
            off = q->by_off[i], len = q->by_len[i];
    for (int i = 0; i < q->nnodes && !why; i++)
        if (q->nodes[i].type == DSQ_N_CMP && q->nodes[i].key != DSQ_KEY_RUN &&
            q->nodes[i].key != DSQ_KEY_FILE)
            why = "line counts can be filtered by run and file only", off = q->nodes[i].off,
            len = q->nodes[i].len;
    if (!why)
        return 0;
    dsq_error_set(x->err, DSQ_EQUERY, "%s", why);
    x->err->offset = off;
    x->err->length = len;
    return DSQ_EQUERY;
}

/* --- setup and teardown --------------------------------------------------- */

static int uses_key(const dsq_query *q, int key)
{
    for (int i = 0; i < q->nby; i++)
        if (q->by[i] == key)
            return 1;
    for (int i = 0; i < q->nnodes; i++)
        if (q->nodes[i].type == DSQ_N_CMP && q->nodes[i].key == key)
            return 1;
    return 0;
}

static int note_source(void *ctx, const char *path, const dsq_source_rec *rec)
{
    exec *x = ctx;
    if (rec->id >= x->nsources) {
        uint32_t n = rec->id + 64;
        uint32_t *p = realloc(x->source_gid, n * sizeof *p);
        if (!p)
            return DSQ_ENOMEM;
        memset(p + x->nsources, 0, (n - x->nsources) * sizeof *p);
        x->source_gid = p;
        x->nsources = n;
    }
    return (x->source_gid[rec->id] = dsq_dict_intern(x->gdict, path, strlen(path))) ? 0 : DSQ_ENOMEM;
}

/* The run a where clause pins with `run = 'x'` at its top-level and-chain: 0 if none,
 * UINT32_MAX if the run is not in the index (so nothing can match). */
static uint32_t pinned_run(const exec *x, int ni)
{
    if (ni < 0)
        return 0;
    const dsq_q_node *n = &x->q->nodes[ni];
    if (n->type == DSQ_N_AND) {
        uint32_t a = pinned_run(x, n->a);
        return a ? a : pinned_run(x, n->b);
    }
    if (n->type == DSQ_N_CMP && n->key == DSQ_KEY_RUN && n->op == DSQ_OP_EQ) {
        uint32_t id = dsq_dict_find(x->dict, n->value, strlen(n->value));
        return id ? id : UINT32_MAX;
    }
    return 0;
}

static int store_open(exec *x, dsq_store *st);

/* Every name of the query must be in some index (else an error with a hint). */
static int check_names(exec *x, dsq_store *const *stores, int nstores)
{
    name_seen seen;
    memset(&seen, 0, sizeof seen);
    for (int i = 0; i < nstores; i++) {
        int status = store_open(x, stores[i]);
        if (status)
            return status;
        note_names(x, &seen);
    }
    return names_error(x, &seen);
}

/* Forgets what was about the previous index. */
static void store_reset(exec *x)
{
    for (int i = 0; i < DSQ_Q_MAX_NODES; i++) {
        free(x->str_match[i]);
        x->str_match[i] = NULL;
    }
    free(x->source_gid);
    free(x->attrs);
    free(x->xlat);
    x->source_gid = NULL;
    x->nsources = 0;
    x->attrs = NULL;
    x->nattrs = x->attr_cap = 0;
    x->xlat = NULL;
    x->st = NULL;
    if (x->fill)
        dsq_evfill_reset(x->fill); /* its cursors are of the index before */
    x->rollups = x->need_values = x->time_nodes = x->run_level = 0;
}

/* Makes st the index being read: its dictionary, attributes and sources. */
static int store_open(exec *x, dsq_store *st)
{
    const dsq_query *q = x->q;
    store_reset(x);
    x->st = st;
    x->dict = dsq_store_dict(st);
    x->dict_n = dsq_dict_count(x->dict);
    if (!(x->xlat = calloc((size_t)x->dict_n + 1, sizeof *x->xlat)))
        return dsq_error_set(x->err, DSQ_ENOMEM, "query");
    x->failure_name = dsq_dict_find(x->dict, "failure", 7);
    if (uses_key(q, DSQ_KEY_FIELD)) {
        int status = dsq_store_scan_attrs(st, attr_row, x, x->err);
        if (status)
            return status;
    }
    for (int i = 0; i < q->nnodes; i++) {
        if (q->nodes[i].type != DSQ_N_CMP || q->nodes[i].key == DSQ_KEY_FIELD)
            continue;
        if (!(x->str_match[i] = malloc(x->dict_n + 1)))
            return dsq_error_set(x->err, DSQ_ENOMEM, "query");
        memset(x->str_match[i], -1, x->dict_n + 1);
    }
    if (uses_key(q, DSQ_KEY_FILE))
        return dsq_store_scan_sources(st, note_source, x, x->err);
    return 0;
}

/* Reads one index into the groups. */
static int run_store(exec *x, int lines_query, int scan_only)
{
    const dsq_query *q = x->q;
    resolve(x);
    if (lines_query)
        return dsq_store_scan_sources(x->st, count_source_lines, x, x->err);
    uint32_t run = pinned_run(x, q->where);
    if (run == UINT32_MAX)
        return 0;
    x->rollups = !scan_only && plan_rollups(x);
    if (x->rollups)
        return run_rollups(x, run);
    return dsq_store_scan_blocks(x->st, run, on_block, x, x->err);
}

static void exec_free(exec *x)
{
    dsq_pairs_free(x->pairs);
    dsq_evfill_free(x->fill);
    x->fill = NULL;
    for (size_t i = 0; i < x->ngroups; i++)
        for (int a = 0; a < x->q->naggs; a++)
            free(x->groups[i].accs[a].vals);
    free(x->groups);
    free(x->slots);
    for (struct acc_block *b = x->acc_blocks, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    store_reset(x);
    dsq_dict_free(x->gdict);
}

int dsq_query_run_opts(const dsq_query *q, dsq_store *const *stores, int nstores, int scan_only,
                       dsq_result **out, dsq_error *err)
{
    exec x = {.q = q, .err = err, .single = nstores == 1};
    int lines_query = uses_key(q, DSQ_KEY_FAMILY) || uses_key(q, DSQ_KEY_LEVEL);
    int status = lines_query ? check_line_query(&x) : 0;
    if (status)
        return status;
    if (dsq_dict_new(&x.gdict) || grow_groups(&x)) {
        status = dsq_error_set(err, DSQ_ENOMEM, "query");
        goto done;
    }
    if ((status = check_names(&x, stores, nstores)))
        goto done;
    for (int i = 0; i < nstores; i++)
        if ((status = store_open(&x, stores[i])) || (status = run_store(&x, lines_query, scan_only)))
            goto done;
    status = build_result(&x, out);
done:
    exec_free(&x);
    return status;
}

int dsq_query_run(const dsq_query *q, dsq_store *const *stores, int nstores, dsq_result **out,
                  dsq_error *err)
{
    return dsq_query_run_opts(q, stores, nstores, 0, out, err);
}

/* --- show: matching events in time order ------------------------------------- */

#define SHOW_MAX_EVENTS 20000000

typedef struct shown {
    int64_t t;
    uint32_t run, host, label, text, file; /* gdict ids */
    int32_t rank;
    uint32_t line;
    uint16_t kind;
    uint8_t nf;
    dsq_field f[DSQ_EV_MAXF];  /* names as gdict ids */
} shown;

typedef struct show_ctx {
    shown *v;
    size_t n, cap;
    uint64_t total;
} show_ctx;

static int show_event(exec *x, const dsq_block_key *k, const dsq_event *ev)
{
    show_ctx *sc = x->show;
    if (x->q->where >= 0 && !eval(x, x->q->where, k, ev))
        return 0;
    int rc = fill_pending(x); /* (ev is each_event's: filled in place) */
    if (rc)
        return rc;
    if (sc->n == SHOW_MAX_EVENTS)
        return dsq_error_set(x->err, DSQ_ELIMIT,
                             "more than %d events match: narrow the condition (run, host, "
                             "rank, kind, since ...)",
                             SHOW_MAX_EVENTS);
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 1024;
        shown *n = realloc(sc->v, cap * sizeof *n);
        if (!n)
            return dsq_error_set(x->err, DSQ_ENOMEM, "out of memory collecting events");
        sc->v = n;
        sc->cap = cap;
    }
    shown *e = &sc->v[sc->n++];
    e->t = ev->t_us;
    e->run = (uint32_t)global_id(x, k->run);
    e->host = (uint32_t)global_id(x, k->host);
    e->rank = k->rank;
    e->label = (uint32_t)global_id(x, ev->label);
    e->text = (uint32_t)global_id(x, ev->text);
    e->file = k->source < x->nsources ? x->source_gid[k->source] : 0;
    e->line = ev->line;
    e->kind = ev->kind;
    e->nf = ev->nf;
    for (int i = 0; i < ev->nf; i++) {
        e->f[i] = ev->f[i];
        e->f[i].name = (uint32_t)global_id(x, ev->f[i].name);
    }
    sc->total++;
    return 0;
}

static int show_block(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    return each_event(ctx, k, data, n, show_event);
}

static const dsq_dict *sort_dict; /* qsort has no context argument */

static int str_cmp_ids(uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    return strcmp(a ? dsq_dict_str(sort_dict, a, NULL) : "", b ? dsq_dict_str(sort_dict, b, NULL) : "");
}

/* Time order; ties by run, host, rank, file, line, then what the events say. */
static int cmp_shown(const void *pa, const void *pb)
{
    const shown *a = pa, *b = pb;
    int c;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if ((c = str_cmp_ids(a->run, b->run)) || (c = str_cmp_ids(a->host, b->host)))
        return c;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if ((c = str_cmp_ids(a->file, b->file)))
        return c;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    /* events of one line (a file's closing records): a total order, so the output
     * never depends on the order the index handed them out */
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if ((c = str_cmp_ids(a->label, b->label)) || (c = str_cmp_ids(a->text, b->text)))
        return c;
    for (int i = 0; i < a->nf && i < b->nf; i++) {
        if ((c = str_cmp_ids(a->f[i].name, b->f[i].name)))
            return c;
        if (a->f[i].v != b->f[i].v)
            return a->f[i].v < b->f[i].v ? -1 : 1;
    }
    return (a->nf > b->nf) - (a->nf < b->nf);
}

static int show_result(exec *x, show_ctx *sc, size_t limit, dsq_result **out)
{
    static const char *const names[] = {"time", "run", "host", "rank", "kind", "label",
                                        "fields", "text", "file", "line"};
    size_t cap = DSQ_EV_MAXF * (DSQ_Q_NAME + 48);
    dsq_result *r = dsq_result_new(10, names);
    char *fields = malloc(cap);
    if (!r || !fields) {
        dsq_result_free(r);
        free(fields);
        return dsq_error_set(x->err, DSQ_ENOMEM, "result");
    }
    sort_dict = x->gdict;
    if (sc->n > 1)
        qsort(sc->v, sc->n, sizeof *sc->v, cmp_shown);
    size_t n = limit && limit < sc->n ? limit : sc->n;
    for (size_t i = 0; i < n; i++) {
        const shown *e = &sc->v[i];
        size_t len = 0;
        fields[0] = 0;
        for (int f = 0; f < e->nf && len < cap; f++) {
            char num[64];
            dsq_format_number(e->f[f].v, 0, num, sizeof num);
            const char *u = dsq_unit_name(e->f[f].unit);
            len += (size_t)snprintf(fields + len, cap - len, "%s%s=%s%s%s", f ? " " : "",
                                    dsq_dict_str(x->gdict, e->f[f].name, NULL), num,
                                    *u && *u != '%' ? " " : "", u);
        }
        dsq_cell cells[10] = {
            {.v = (double)e->t, .unit = DSQ_U_TIME, .is_null = e->t == DSQ_TIME_NONE},
            {.s = e->run ? dsq_dict_str(x->gdict, e->run, NULL) : "-"},
            {.s = e->host ? dsq_dict_str(x->gdict, e->host, NULL) : "-"},
            {.v = e->rank, .is_int = 1, .is_null = e->rank < 0},
            {.s = dsq_ev_kind_name(e->kind)},
            {.s = e->label ? dsq_dict_str(x->gdict, e->label, NULL) : ""},
            {.s = fields},
            {.s = e->text ? dsq_dict_str(x->gdict, e->text, NULL) : ""},
            {.s = e->file ? dsq_dict_str(x->gdict, e->file, NULL) : ""},
            {.v = e->line, .is_int = 1},
        };
        if (dsq_result_add_row(r, cells)) {
            dsq_result_free(r);
            free(fields);
            return dsq_error_set(x->err, DSQ_ENOMEM, "result");
        }
    }
    free(fields);
    *out = r;
    return 0;
}

int dsq_query_show(const dsq_query *q, dsq_store *const *stores, int nstores, size_t limit,
                   dsq_result **out, uint64_t *matched, dsq_error *err)
{
    exec x = {.q = q, .err = err};
    show_ctx sc = {0};
    int status = 0;
    x.show = &sc;
    if (dsq_dict_new(&x.gdict)) {
        status = dsq_error_set(err, DSQ_ENOMEM, "query");
        goto done;
    }
    if ((status = check_names(&x, stores, nstores)))
        goto done;
    for (int i = 0; i < nstores; i++) {
        if ((status = store_open(&x, stores[i])) ||
            (status = dsq_store_scan_sources(stores[i], note_source, &x, err)))
            goto done;
        resolve(&x);
        uint32_t run = pinned_run(&x, q->where);
        if (run != UINT32_MAX && (status = dsq_store_scan_blocks(x.st, run, show_block, &x, err)))
            goto done;
    }
    *matched = sc.total;
    status = show_result(&x, &sc, limit, out);
done:
    free(sc.v);
    exec_free(&x);
    return status;
}
