/* Query parser: tokenizer and recursive descent over the grammar
 *
 *   query  := agg {"," agg} { "by" key {"," key} | "where" or | "limit" N | "top" N
 *             | "since" T | "until" T | "every" N unit | "order" "by" column ["asc"|"desc"] }
 *   column := AGG [field] | key                 an output column's name
 *   agg    := AGG [field]                       AGG: count min max ... first last
 *   or     := and {"or" and}      and := not {"and" not}
 *   not    := "not" not | "(" or ")" | name OP literal
 *
 * Every error names the offending token by offset and length (for the caret) and
 * says what was expected. The parser only checks syntax; names are resolved
 * against the index when the query runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "num.h"
#include "query.h"
#include "timeconv.h"

enum tok_type { T_END, T_IDENT, T_NUM, T_STR, T_COMMA, T_LP, T_RP, T_OP, T_BAD };

typedef struct tok {
    int type;
    int off, len;         /* in the query text */
    char text[256];       /* identifier / unquoted string / number / operator */
    int op;
    double num;
} tok;

typedef struct parser {
    const char *src;
    int pos;
    tok t;                /* current token */
    dsq_query *q;
    dsq_error *err;
    int depth;            /* parse_not nesting */
} parser;

static const char *const agg_names[DSQ_AGG_COUNT_FNS] = {
    "count", "min", "max", "sum", "avg", "p50", "p90", "p95", "p99", "first", "last"};
static const char *const key_names[] = {"",       "run",   "host",  "rank", "kind", "label",
                                        "file",   "family", "level", "time", ""};

int dsq_query_time(const char *s, double *out)
{
    int y, mo, d, h = 0, mi = 0, sec = 0;
    size_t n = strlen(s);
    if (n < 10 || s[4] != '-' || s[7] != '-')
        return -1;
    if ((y = dsq_time_digits(s, 4)) < 0 || (mo = dsq_time_digits(s + 5, 2)) < 1 || mo > 12 ||
        (d = dsq_time_digits(s + 8, 2)) < 1 || d > 31)
        return -1;
    if (n > 10) {
        if ((s[10] != ' ' && s[10] != 'T') || n < 16 || s[13] != ':' ||
            (h = dsq_time_digits(s + 11, 2)) < 0 || h > 23 || (mi = dsq_time_digits(s + 14, 2)) < 0 ||
            mi > 59)
            return -1;
        if (n > 16 && (n != 19 || s[16] != ':' || (sec = dsq_time_digits(s + 17, 2)) < 0 || sec > 60))
            return -1;
    }
    *out = (double)dsq_time_from_civil(y, mo, d, h, mi, sec, 0);
    return 0;
}

const char *dsq_agg_name(int fn) { return fn >= 0 && fn < DSQ_AGG_COUNT_FNS ? agg_names[fn] : "?"; }
const char *dsq_key_name(int key) { return key > 0 && key < DSQ_KEY_FIELD ? key_names[key] : "?"; }


static int is_ident_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (unsigned char)c >= 0x80;
}

static int is_ident(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '/' || c == '-';
}

static int fail(parser *p, const tok *t, const char *fmt, const char *what)
{
    dsq_error_set(p->err, DSQ_EQUERY, fmt, what);
    p->err->offset = t->off;
    p->err->length = t->len > 0 ? t->len : 1;
    return DSQ_EQUERY;
}

static int lex_string(parser *p, tok *t)
{
    const char *s = p->src;
    char quote = s[p->pos++];
    size_t n = 0;
    while (s[p->pos] && s[p->pos] != quote) {
        if (n + 1 < sizeof t->text)
            t->text[n++] = s[p->pos];
        p->pos++;
    }
    t->text[n] = 0;
    if (!s[p->pos]) {
        t->len = p->pos - t->off;
        return fail(p, t, "unterminated string: add the closing %s", quote == '"' ? "\"" : "'");
    }
    p->pos++;
    t->type = T_STR;
    return 0;
}

static int lex_op(parser *p, tok *t)
{
    static const struct {
        const char *s;
        int op;
    } ops[] = {{"!=", DSQ_OP_NE}, {"<=", DSQ_OP_LE}, {">=", DSQ_OP_GE}, {"==", DSQ_OP_EQ},
               {"=", DSQ_OP_EQ},  {"<", DSQ_OP_LT},  {">", DSQ_OP_GT},  {"~", DSQ_OP_GLOB}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].s);
        if (strncmp(p->src + p->pos, ops[i].s, n) == 0) {
            t->type = T_OP;
            t->op = ops[i].op;
            snprintf(t->text, sizeof t->text, "%s", ops[i].s);
            p->pos += (int)n;
            return 0;
        }
    }
    t->type = T_BAD;
    t->len = 1;
    snprintf(t->text, sizeof t->text, "%c", p->src[p->pos]);
    return fail(p, t, "unexpected character '%s'", t->text);
}

/* Reads the next token into p->t. */
static int next(parser *p)
{
    const char *s = p->src;
    tok *t = &p->t;
    while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n')
        p->pos++;
    memset(t, 0, sizeof *t);
    t->off = p->pos;
    char c = s[p->pos];
    int rc = 0;
    if (!c) {
        t->type = T_END;
    } else if (c == ',' || c == '(' || c == ')') {
        t->type = c == ',' ? T_COMMA : c == '(' ? T_LP : T_RP;
        t->text[0] = c;
        p->pos++;
    } else if (c == '\'' || c == '"') {
        rc = lex_string(p, t);
    } else if ((c >= '0' && c <= '9') || ((c == '-' || c == '.') && s[p->pos + 1] >= '0' &&
                                           s[p->pos + 1] <= '9')) {
        const char *stop;
        dsq_num_parse(s + p->pos, s + strlen(s), &t->num, &stop);
        while (is_ident(*stop) || *stop == ':') /* 2024-07-01, 12:00, 10GB: keep as one word */
            stop++;
        t->type = T_NUM;
        snprintf(t->text, sizeof t->text, "%.*s", (int)(stop - (s + p->pos)), s + p->pos);
        p->pos = (int)(stop - s);
    } else if (is_ident_start(c)) {
        int b = p->pos;
        while (is_ident(s[p->pos]))
            p->pos++;
        t->type = T_IDENT;
        snprintf(t->text, sizeof t->text, "%.*s", p->pos - b, s + b);
    } else {
        rc = lex_op(p, t);
    }
    if (!t->len)
        t->len = p->pos - t->off;
    return rc;
}

static int is_kw(const tok *t, const char *kw)
{
    return t->type == T_IDENT && strcasecmp(t->text, kw) == 0;
}

static int agg_fn(const tok *t)
{
    for (int i = 0; i < DSQ_AGG_COUNT_FNS; i++)
        if (is_kw(t, agg_names[i]))
            return i;
    return -1;
}

static int key_of(const char *s)
{
    for (int k = DSQ_KEY_RUN; k < DSQ_KEY_FIELD; k++)
        if (strcasecmp(s, key_names[k]) == 0)
            return k;
    return DSQ_KEY_NONE;
}

static int is_clause_kw(const tok *t)
{
    return is_kw(t, "by") || is_kw(t, "where") || is_kw(t, "limit") || is_kw(t, "top") ||
           is_kw(t, "since") || is_kw(t, "until") || is_kw(t, "every") || is_kw(t, "order");
}

static int parse_agg(parser *p)
{
    int fn = agg_fn(&p->t);
    if (fn < 0)
        return fail(p, &p->t,
                    "expected an aggregate (count min max sum avg p50 p90 p95 p99 first last), "
                    "found '%s'",
                    p->t.type == T_END ? "end of query" : p->t.text);
    if (p->q->naggs == DSQ_Q_MAX_AGGS)
        return fail(p, &p->t, "too many aggregates (at most 16)%s", "");
    dsq_q_agg *a = &p->q->aggs[p->q->naggs++];
    a->fn = fn;
    int rc = next(p);
    if (rc)
        return rc;
    if ((p->t.type == T_IDENT && !is_clause_kw(&p->t)) || p->t.type == T_STR) {
        snprintf(a->field, sizeof a->field, "%s", p->t.text);
        a->off = p->t.off;
        a->len = p->t.len;
        return next(p);
    }
    if (fn != DSQ_AGG_COUNT)
        return fail(p, &p->t, "'%s' needs a field name after it (e.g. max Max_MA)", agg_names[fn]);
    return 0;
}

static int parse_by(parser *p)
{
    for (;;) {
        int rc = next(p);
        if (rc)
            return rc;
        if ((p->t.type != T_IDENT && p->t.type != T_STR) || is_clause_kw(&p->t))
            return fail(p, &p->t,
                        "expected what to group by (run, host, rank, kind, label, file, family, "
                        "level or a run attribute), found '%s'",
                        p->t.type == T_END ? "end of query" : p->t.text);
        int k = p->t.type == T_IDENT ? key_of(p->t.text) : DSQ_KEY_NONE;
        if (k == DSQ_KEY_TIME)
            return fail(p, &p->t, "cannot group by '%s' (time buckets are planned: `every 1h`)",
                        p->t.text);
        if (p->q->nby == DSQ_Q_MAX_BY)
            return fail(p, &p->t, "too many group keys (at most 4)%s", "");
        int i = p->q->nby++;
        p->q->by[i] = k == DSQ_KEY_NONE ? DSQ_KEY_FIELD : k; /* an attribute, checked at run time */
        snprintf(p->q->by_name[i], DSQ_Q_NAME, "%s", p->t.text);
        p->q->by_off[i] = p->t.off;
        p->q->by_len[i] = p->t.len;
        if ((rc = next(p)))
            return rc;
        if (p->t.type != T_COMMA)
            return 0;
    }
}

static int parse_or(parser *p, int *out);

static int new_node(parser *p, int *out)
{
    if (p->q->nnodes == DSQ_Q_MAX_NODES)
        return fail(p, &p->t, "where clause too long (at most 64 terms)%s", "");
    *out = p->q->nnodes++;
    memset(&p->q->nodes[*out], 0, sizeof p->q->nodes[0]);
    return 0;
}

static int parse_cmp(parser *p, int *out)
{
    tok name = p->t;
    if (name.type != T_IDENT && name.type != T_STR)
        return fail(p, &name, "expected a key or field name, found '%s'",
                    name.type == T_END ? "end of query" : name.text);
    int rc = next(p);
    if (rc)
        return rc;
    if (p->t.type != T_OP)
        return fail(p, &p->t, "expected an operator (= != < <= > >= ~) after '%s'", name.text);
    int op = p->t.op;
    if ((rc = next(p)))
        return rc;
    if (p->t.type != T_NUM && p->t.type != T_STR && p->t.type != T_IDENT)
        return fail(p, &p->t, "expected a value, found '%s'",
                    p->t.type == T_END ? "end of query" : p->t.text);
    if ((rc = new_node(p, out)))
        return rc;
    dsq_q_node *n = &p->q->nodes[*out];
    n->type = DSQ_N_CMP;
    n->op = op;
    n->key = name.type == T_IDENT ? key_of(name.text) : DSQ_KEY_NONE;
    if (n->key == DSQ_KEY_NONE)
        n->key = DSQ_KEY_FIELD;
    snprintf(n->name, sizeof n->name, "%s", name.text);
    snprintf(n->value, sizeof n->value, "%s", p->t.text);
    const char *stop;
    n->is_num = dsq_num_parse(n->value, n->value + strlen(n->value), &n->num, &stop) == 0 && !*stop;
    n->off = name.off;
    n->len = name.len;
    if (n->key == DSQ_KEY_TIME && dsq_query_time(n->value, &n->num) != 0)
        return fail(p, &p->t, "'%s' is not a time: write 2024-07-20, '2024-07-20 21:30' or "
                              "'2024-07-20 21:30:05'", p->t.text);
    return next(p);
}

#define MAX_DEPTH 32 /* parentheses and `not`s nest at most this deep */

static int parse_not_nested(parser *p, int *out);

/* Counts the nesting so that a hostile query cannot exhaust the stack. */
static int parse_not(parser *p, int *out)
{
    if (p->depth == MAX_DEPTH)
        return fail(p, &p->t, "conditions nested too deeply at '%s' (at most 32 levels of "
                              "parentheses and not)",
                    p->t.type == T_END ? "end of query" : p->t.text);
    p->depth++;
    int rc = parse_not_nested(p, out);
    p->depth--;
    return rc;
}

static int parse_not_nested(parser *p, int *out)
{
    int rc;
    if (is_kw(&p->t, "not")) {
        if ((rc = next(p)) || (rc = new_node(p, out)))
            return rc;
        int child;
        if ((rc = parse_not(p, &child)))
            return rc;
        p->q->nodes[*out].type = DSQ_N_NOT;
        p->q->nodes[*out].a = child;
        return 0;
    }
    if (p->t.type == T_LP) {
        tok open = p->t;
        if ((rc = next(p)) || (rc = parse_or(p, out)))
            return rc;
        if (p->t.type != T_RP)
            return fail(p, &open, "this '%s' is never closed", "(");
        return next(p);
    }
    return parse_cmp(p, out);
}

/* and/or chains share this: `kw` joins terms parsed by `sub`. */
static int parse_chain(parser *p, int *out, const char *kw, int type, int (*sub)(parser *, int *))
{
    int rc = sub(p, out);
    while (!rc && is_kw(&p->t, kw)) {
        int rhs, node;
        if ((rc = next(p)) || (rc = sub(p, &rhs)) || (rc = new_node(p, &node)))
            return rc;
        p->q->nodes[node].type = type;
        p->q->nodes[node].a = *out;
        p->q->nodes[node].b = rhs;
        *out = node;
    }
    return rc;
}

static int parse_and(parser *p, int *out) { return parse_chain(p, out, "and", DSQ_N_AND, parse_not); }
static int parse_or(parser *p, int *out) { return parse_chain(p, out, "or", DSQ_N_OR, parse_and); }

static int parse_limit(parser *p)
{
    if (is_kw(&p->t, "top")) /* `top N` orders by the first aggregate; a later limit keeps it */
        p->q->top = 1;
    int rc = next(p);
    if (rc)
        return rc;
    /* range first: converting a double outside long's range is undefined */
    if (p->t.type != T_NUM || p->t.num < 1 || p->t.num > 1e15 ||
        p->t.num != (double)(long)p->t.num)
        return fail(p, &p->t, "expected a positive whole number, found '%s'",
                    p->t.type == T_END ? "end of query" : p->t.text);
    p->q->limit = (long)p->t.num;
    return next(p);
}

/* `since T` / `until T`: and-ed onto the where clause as time >= T / time < T. */
static int parse_since(parser *p)
{
    int op = is_kw(&p->t, "since") ? DSQ_OP_GE : DSQ_OP_LT, rc, cmp, node;
    tok kw = p->t;
    if ((rc = next(p)))
        return rc;
    double t;
    if ((p->t.type != T_NUM && p->t.type != T_STR) || dsq_query_time(p->t.text, &t) != 0)
        return fail(p, &p->t, "expected a time after since/until (2024-07-20 or '2024-07-20 21:30'), found '%s'",
                    p->t.type == T_END ? "end of query" : p->t.text);
    if ((rc = new_node(p, &cmp)))
        return rc;
    dsq_q_node *n = &p->q->nodes[cmp];
    n->type = DSQ_N_CMP;
    n->key = DSQ_KEY_TIME;
    n->op = op;
    n->num = t;
    n->is_num = 1;
    snprintf(n->name, sizeof n->name, "time");
    snprintf(n->value, sizeof n->value, "%s", p->t.text);
    n->off = kw.off;
    n->len = kw.len;
    if (p->q->where >= 0) {
        if ((rc = new_node(p, &node)))
            return rc;
        p->q->nodes[node].type = DSQ_N_AND;
        p->q->nodes[node].a = p->q->where;
        p->q->nodes[node].b = cmp;
        p->q->where = node;
    } else {
        p->q->where = cmp;
    }
    return next(p);
}

/* `every 1h`: a number and a unit (s, m, h, d), written together or apart. */
static int parse_every(parser *p)
{
    int rc = next(p);
    if (rc)
        return rc;
    tok t = p->t;
    char unit = 0;
    double n = t.num;
    if (t.type == T_NUM) {
        const char *u = t.text;
        while ((*u >= '0' && *u <= '9') || *u == '.')
            u++;
        unit = *u && !u[1] ? *u : 0;
        if (!*u) { /* "every 1 h" */
            if ((rc = next(p)))
                return rc;
            unit = p->t.type == T_IDENT && !p->t.text[1] ? p->t.text[0] : 0;
        }
    }
    static const struct { char u; double us; } units[] = {{'s', 1e6}, {'m', 6e7}, {'h', 3.6e9}, {'d', 8.64e10}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (unit == units[i].u && n > 0 && n * units[i].us >= 1e6 && n * units[i].us < 3.2e16) {
            p->q->every_us = (int64_t)(n * units[i].us);
            return next(p);
        }
    return fail(p, &t, "expected a bucket width like 30s, 10m, 1h or 1d after every, found '%s'",
                t.type == T_END ? "end of query" : t.text);
}

/* `order by COLUMN [asc|desc]`: the column as the output names it ("max Max_MA",
 * "run", "count"); keywords are folded to lower case. Resolved when results are built. */
static int parse_order(parser *p)
{
    int rc = next(p);
    if (rc)
        return rc;
    if (!is_kw(&p->t, "by"))
        return fail(p, &p->t, "expected 'by' after order, found '%s'",
                    p->t.type == T_END ? "end of query" : p->t.text);
    if ((rc = next(p)))
        return rc;
    tok first = p->t;
    if ((first.type != T_IDENT && first.type != T_STR) || is_clause_kw(&first))
        return fail(p, &first, "expected a column to order by (e.g. order by max Max_MA desc), found '%s'",
                    first.type == T_END ? "end of query" : first.text);
    int fn = first.type == T_IDENT ? agg_fn(&first) : -1;
    int k = first.type == T_IDENT ? key_of(first.text) : DSQ_KEY_NONE;
    const char *name = fn >= 0 ? agg_names[fn] : k != DSQ_KEY_NONE ? key_names[k] : first.text;
    snprintf(p->q->order, sizeof p->q->order, "%s", name);
    p->q->order_off = first.off;
    p->q->order_len = first.len;
    if ((rc = next(p)))
        return rc;
    if (fn >= 0 && (p->t.type == T_IDENT || p->t.type == T_STR) && !is_clause_kw(&p->t) &&
        !is_kw(&p->t, "asc") && !is_kw(&p->t, "desc")) {
        snprintf(p->q->order, sizeof p->q->order, "%s %s", agg_names[fn], p->t.text);
        p->q->order_len = p->t.off + p->t.len - first.off;
        if ((rc = next(p)))
            return rc;
    }
    if (is_kw(&p->t, "asc") || is_kw(&p->t, "desc")) {
        p->q->order_desc = is_kw(&p->t, "desc");
        return next(p);
    }
    return 0;
}

static int parse_clauses(parser *p)
{
    int rc = 0;
    while (!rc && p->t.type != T_END) {
        if (is_kw(&p->t, "by"))
            rc = parse_by(p);
        else if (is_kw(&p->t, "where")) {
            if (p->q->where >= 0)
                return fail(p, &p->t, "only one '%s' clause; join conditions with and/or", "where");
            int w;
            if (!(rc = next(p)) && !(rc = parse_or(p, &w)))
                p->q->where = w;
        } else if (is_kw(&p->t, "limit") || is_kw(&p->t, "top"))
            rc = parse_limit(p);
        else if (is_kw(&p->t, "since") || is_kw(&p->t, "until"))
            rc = parse_since(p);
        else if (is_kw(&p->t, "every"))
            rc = parse_every(p);
        else if (is_kw(&p->t, "order"))
            rc = parse_order(p);
        else
            return fail(p, &p->t,
                        "unexpected '%s': expected by, where, since, until, every, order by, "
                        "limit, top or a comma",
                        p->t.text);
    }
    return rc;
}

int dsq_query_parse(const char *text, dsq_query *q, dsq_error *err)
{
    parser p = {.src = text, .q = q, .err = err};
    memset(q, 0, sizeof *q);
    q->where = -1;
    int rc = next(&p);
    if (!rc && p.t.type == T_END)
        return fail(&p, &p.t, "empty query%s: try e.g. 'max Max_MA by run'", "");
    while (!rc) {
        if ((rc = parse_agg(&p)))
            break;
        if (p.t.type != T_COMMA)
            break;
        rc = next(&p);
    }
    if (!rc)
        rc = parse_clauses(&p);
    return rc;
}
