/* `dsq report RUN` (see report.h): gathers the facts of one run with queries over
 * the index, evaluates the diagnostic rules on them, and prints the result as text
 * or as one JSON object with the same facts.
 *
 * Facts come from small reads: the per-kind count series of the run (timeline,
 * hosts, ranks), aggregate queries answered from rollups (memory by rank,
 * throughput and loss buckets), and `show` queries over a few kinds (attributes,
 * failures, overflows, cache flushes), whose rows carry the file and line used as
 * evidence. A query naming a field the index does not have is not an error here:
 * that fact is just absent. Rules read only the gathered facts.
 */
#include "report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "error.h"
#include "idmap.h"
#include "event.h"
#include "num.h"
#include "query.h"
#include "result.h"
#include "runs.h"
#include "timeconv.h"

#define REP_MAX_RULES 16
#define REP_MAX_EVID 4
#define REP_SPARK 40
#define REP_Q 1024

typedef struct rep_rule {
    const char *name;        /* catalogue id is "rule:<name>" */
    char finding[400];       /* what was found, in numbers */
    char evid[REP_MAX_EVID][400]; /* "file:line  text" */
    int nevid;
} rep_rule;

typedef struct report {
    const dsq_report_params *p;
    dsq_store *const *stores;
    int nstores;
    dsq_error *err;
    char where[600];         /* "run = 'NAME'" */
    int64_t start, end, step_first, step_last;
    double capacity;         /* a GPU's total capacity in bytes, from an OOM message; 0 if unknown */
    uint64_t events;
    int32_t *ranks;          /* the run's ranks in the order met (4096 were kept: a job of
                                8192 said 4096), each with its last step event's time
                                (DSQ_TIME_NONE if none), found through rank_map */
    int64_t *rank_step;
    int nranks, ranks_cap;
    dsq_idmap *rank_map;     /* rank -> 1 + its place */
    dsq_dict *hosts;         /* the run's host names, in the order met */
    int nhosts;
    dsq_result *attrs, *mem, *problems, *levels, *failures, *thr, *loss;
    dsq_result *mem_t;       /* --html: memory by rank over time */
    const char *thr_field, *loss_field, *mem_field;
    rep_rule rules[REP_MAX_RULES];
    int nrules;
} report;

/* --- reading ------------------------------------------------------------------ */

static int is_step_kind(int kind)
{
    return kind == DSQ_EV_DS_STEP || kind == DSQ_EV_DS_THROUGHPUT || kind == DSQ_EV_HF_LOSS ||
           kind == DSQ_EV_MEGATRON_ITER || kind == DSQ_EV_MMENGINE_ITER ||
           kind == DSQ_EV_TITAN_STEP || kind == DSQ_EV_METRIC_LOGGER ||
           kind == DSQ_EV_DSCHAT_PPO;
}

static void span_add(int64_t *lo, int64_t *hi, int64_t a, int64_t b)
{
    if (a != DSQ_TIME_NONE && (*lo == DSQ_TIME_NONE || a < *lo))
        *lo = a;
    if (b != DSQ_TIME_NONE && (*hi == DSQ_TIME_NONE || b > *hi))
        *hi = b;
}

typedef struct series_ctx {
    report *rp;
    dsq_dict *dict;
    uint32_t run;
} series_ctx;

/* Every host is counted (64 names were kept, and the head said "64 hosts" of a run of
 * 256); the text names the first REP_HOSTS_SHOWN, JSON all of them. */
#define REP_HOSTS_SHOWN 64
static int note_host(report *rp, const char *h, size_t n)
{
    if (!dsq_dict_intern(rp->hosts, h, n))
        return dsq_error_set(rp->err, DSQ_ENOMEM, "report: out of memory");
    rp->nhosts = (int)dsq_dict_count(rp->hosts);
    return 0;
}

static const char *host_name(const report *rp, int i)
{
    return dsq_dict_str(rp->hosts, (uint32_t)i + 1, NULL);
}

/* Room for twice the ranks (256 at first); 0, or -1. */
static int grow_ranks(report *rp)
{
    int cap = rp->ranks_cap ? 2 * rp->ranks_cap : 256;
    int32_t *r = realloc(rp->ranks, (size_t)cap * sizeof *r);
    if (r)
        rp->ranks = r;
    int64_t *t = r ? realloc(rp->rank_step, (size_t)cap * sizeof *t) : NULL;
    if (!t)
        return -1;
    rp->rank_step = t;
    rp->ranks_cap = cap;
    return 0;
}

/* Notes a rank; last_step is the time of its last step event of this series. */
static int note_rank(report *rp, int32_t rank, int64_t last_step)
{
    uint32_t at = dsq_idmap_get(rp->rank_map, (uint32_t)rank);
    int i = at ? (int)at - 1 : rp->nranks;
    if (i == rp->nranks) {
        if ((rp->nranks == rp->ranks_cap && grow_ranks(rp)) ||
            dsq_idmap_put(rp->rank_map, (uint32_t)rank, (uint32_t)rp->nranks + 1))
            return dsq_error_set(rp->err, DSQ_ENOMEM, "report: out of memory");
        rp->ranks[rp->nranks++] = rank;
        rp->rank_step[i] = DSQ_TIME_NONE;
    }
    if (last_step != DSQ_TIME_NONE &&
        (rp->rank_step[i] == DSQ_TIME_NONE || last_step > rp->rank_step[i]))
        rp->rank_step[i] = last_step;
    return 0;
}

static int on_kind_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    series_ctx *sc = ctx;
    report *rp = sc->rp;
    if (k->run != sc->run || !rec->count)
        return 0;
    int kind = (int)(k->field - DSQ_SERIES_KIND_BASE);
    rp->events += rec->count;
    span_add(&rp->start, &rp->end, rec->first_t, rec->last_t);
    if (is_step_kind(kind))
        span_add(&rp->step_first, &rp->step_last, rec->first_t, rec->last_t);
    size_t n;
    const char *h = k->host ? dsq_dict_str(sc->dict, k->host, &n) : NULL;
    if (h && note_host(rp, h, n))
        return DSQ_ENOMEM;
    if (k->rank >= 0 && note_rank(rp, k->rank, is_step_kind(kind) ? rec->last_t : DSQ_TIME_NONE))
        return DSQ_ENOMEM;
    return 0;
}

/* Timeline, hosts and ranks from the run's per-kind count series. */
static int read_timeline(report *rp)
{
    for (int i = 0; i < rp->nstores; i++) {
        series_ctx sc = {.rp = rp, .dict = dsq_store_dict(rp->stores[i])};
        sc.run = dsq_dict_find(sc.dict, rp->p->run, strlen(rp->p->run));
        if (!sc.run)
            continue;
        /* the run's keys only (series keys are run first) */
        int status = dsq_store_scan_series(rp->stores[i], DSQ_SERIES_KIND_BASE,
                                           DSQ_SERIES_KIND_BASE + DSQ_EV_KIND_COUNT, sc.run,
                                           on_kind_series, &sc, rp->err);
        if (status)
            return status;
    }
    return 0;
}

static const dsq_cell *cell(const dsq_result *r, size_t row, const char *col)
{
    int c = r ? dsq_result_col_index(r, col) : -1;
    return c < 0 || row >= dsq_result_rows(r) ? NULL : dsq_result_cell(r, row, c);
}

static const char *cell_s(const dsq_result *r, size_t row, const char *col)
{
    const dsq_cell *c = cell(r, row, col);
    return c && c->s && !c->is_null ? c->s : "";
}

static int cell_num(const dsq_result *r, size_t row, const char *col, double *v)
{
    const dsq_cell *c = cell(r, row, col);
    if (!c || c->s || c->is_null)
        return 0;
    *v = c->v;
    return 1;
}

/* Runs an aggregate query; *out is NULL when the query names a field or
 * attribute no index has (the fact is absent, not an error). */
static int rep_query(report *rp, const char *text, dsq_result **out)
{
    dsq_query q;
    dsq_error e;
    dsq_error_clear(&e);
    *out = NULL;
    if (dsq_query_parse(text, &q, &e) != 0)
        return dsq_error_set(rp->err, DSQ_EQUERY, "report: %s (in %s)", e.msg, text);
    int status = dsq_query_run(&q, rp->stores, rp->nstores, out, &e);
    if (status == DSQ_EQUERY)
        return 0;
    if (status)
        *rp->err = e;
    return status;
}

/* The events a condition selects, in time order (at most limit; 0 = all); *out
 * is NULL when none does. The count comes first, from rollups when it can: most
 * conditions match nothing in a healthy run, and then no event block is read
 * (dsq_query_show also sorts an empty set with a null pointer, which UBSan flags). */
static int rep_show(report *rp, const char *cond, size_t limit, dsq_result **out)
{
    char text[REP_Q];
    dsq_query q;
    dsq_error e;
    dsq_result *count = NULL;
    uint64_t matched = 0;
    double n = 0;
    dsq_error_clear(&e);
    *out = NULL;
    snprintf(text, sizeof text, "count where %s and (%s)", rp->where, cond);
    int status = rep_query(rp, text, &count);
    if (!status && count)
        cell_num(count, 0, dsq_result_col_name(count, 0), &n);
    dsq_result_free(count);
    if (status || n <= 0)
        return status;
    if (dsq_query_parse(text, &q, &e) != 0)
        return dsq_error_set(rp->err, DSQ_EQUERY, "report: %s (in %s)", e.msg, text);
    status = dsq_query_show(&q, rp->stores, rp->nstores, limit, out, &matched, &e);
    if (status == DSQ_EQUERY)
        return 0;
    if (status)
        *rp->err = e;
    return status;
}

/* A named number in a show row's fields text ("SeqNum=4410 free=1.2 GiB"). */
static int field_num(const char *fields, const char *name, double *v)
{
    size_t n = strlen(name);
    for (const char *p = fields; (p = strstr(p, name)) != NULL; p++) {
        if ((p == fields || p[-1] == ' ') && p[n] == '=') {
            char *end;
            *v = strtod(p + n + 1, &end);
            return end != p + n + 1;
        }
    }
    return 0;
}

/* Like field_num, and the unit printed after the number ("GiB"; "" if none). */
static int field_unit(const char *fields, const char *name, double *v, char unit[16])
{
    char key[64];
    snprintf(key, sizeof key, "%s=", name);
    const char *p = strstr(fields, key);
    unit[0] = 0;
    if (!p || !field_num(fields, name, v))
        return 0;
    p = strchr(p + strlen(key), ' ');
    size_t n = p ? strcspn(p + 1, " ") : 0;
    if (n && n < 16 && dsq_unit_parse(p + 1, n) != DSQ_U_NONE)
        snprintf(unit, 16, "%.*s", (int)n, p + 1);
    return 1;
}

/* The first of names that the index has (an aggregate over it works), else NULL. */
static int first_field(report *rp, const char *const *names, const char **found)
{
    char text[REP_Q];
    *found = NULL;
    for (int i = 0; names[i] && !*found; i++) {
        dsq_result *r = NULL;
        snprintf(text, sizeof text, "count \"%s\" where %s", names[i], rp->where);
        int status = rep_query(rp, text, &r);
        double v = 0;
        if (status)
            return status;
        if (r && cell_num(r, 0, dsq_result_col_name(r, 0), &v) && v > 0)
            *found = names[i];
        dsq_result_free(r);
    }
    return 0;
}

/* avg FIELD in time buckets across the step span (or the whole run). */
static int read_trend(report *rp, const char *field, dsq_result **out)
{
    char text[REP_Q];
    int64_t a = rp->step_first != DSQ_TIME_NONE ? rp->step_first : rp->start;
    int64_t b = rp->step_first != DSQ_TIME_NONE ? rp->step_last : rp->end;
    *out = NULL;
    if (!field)
        return 0;
    if (a == DSQ_TIME_NONE || b <= a) {
        snprintf(text, sizeof text, "avg \"%s\" where %s", field, rp->where);
    } else {
        long every = (long)ceil((double)(b - a) / 1e6 / REP_SPARK);
        snprintf(text, sizeof text, "avg \"%s\" where %s every %lds", field, rp->where,
                 every < 1 ? 1 : every);
    }
    return rep_query(rp, text, out);
}

static int gather(report *rp)
{
    static const char *const thr_names[] = {"CurrSamplesPerSec", "samples per second",
                                            "throughput per GPU (TFLOP/s/GPU)", NULL};
    static const char *const loss_names[] = {"loss", "lm loss", "act_loss", NULL};
    static const char *const mem_names[] = {"Max_MA", "MaxMemAllocated", "max allocated", NULL};
    char text[REP_Q];
    int status;
    if ((status = rep_show(rp, "kind = attr", 0, &rp->attrs)) ||
        (status = rep_show(rp, "kind = failure", 0, &rp->failures)) ||
        (status = first_field(rp, thr_names, &rp->thr_field)) ||
        (status = first_field(rp, loss_names, &rp->loss_field)) ||
        (status = first_field(rp, mem_names, &rp->mem_field)) ||
        (status = read_trend(rp, rp->thr_field, &rp->thr)) ||
        (status = read_trend(rp, rp->loss_field, &rp->loss)))
        return status;
    if (rp->mem_field) {
        snprintf(text, sizeof text, "max \"%s\" by rank where %s", rp->mem_field, rp->where);
        if ((status = rep_query(rp, text, &rp->mem)))
            return status;
    }
    snprintf(text, sizeof text,
             "count by kind, label where %s and (kind = failure or kind = nccl_warn or "
             "kind = pywarn or kind = traceback or kind = ds_overflow or kind = ds_cache_flush "
             "or kind = glog_desync or kind = torchrun_closing_signal) order by count desc",
             rp->where);
    if ((status = rep_query(rp, text, &rp->problems)))
        return status;
    snprintf(text, sizeof text, "count by level where %s", rp->where);
    return rep_query(rp, text, &rp->levels);
}

/* --- rules ---------------------------------------------------------------------- */

static rep_rule *rule_add(report *rp, const char *name, const char *fmt, ...)
{
    if (rp->nrules == REP_MAX_RULES)
        return NULL;
    rep_rule *ru = &rp->rules[rp->nrules++];
    memset(ru, 0, sizeof *ru);
    ru->name = name;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ru->finding, sizeof ru->finding, fmt, ap);
    va_end(ap);
    return ru;
}

/* Adds a show row as evidence: "file:line  text". */
static void evidence(rep_rule *ru, const dsq_result *r, size_t row)
{
    double line = 0;
    if (!ru || ru->nevid == REP_MAX_EVID || row >= dsq_result_rows(r))
        return;
    cell_num(r, row, "line", &line);
    const char *text = cell_s(r, row, "text");
    if (!*text)
        text = cell_s(r, row, "fields");
    if (!*text)
        text = cell_s(r, row, "label");
    snprintf(ru->evid[ru->nevid++], sizeof ru->evid[0], "%s:%.0f  %.200s", cell_s(r, row, "file"),
             line, text);
}

static void evidence_spread(rep_rule *ru, const dsq_result *r)
{
    size_t n = dsq_result_rows(r);
    evidence(ru, r, 0);
    if (n > 2)
        evidence(ru, r, n / 2);
    if (n > 1)
        evidence(ru, r, n - 1);
}

static int rule_cache_flush(report *rp)
{
    dsq_result *r = NULL;
    int status = rep_show(rp, "kind = ds_cache_flush", 0, &r);
    size_t n = r ? dsq_result_rows(r) : 0;
    if (!status && n) {
        double total = 0, v;
        for (size_t i = 0; i < n; i++)
            if (field_num(cell_s(r, i, "fields"), "flushes", &v))
                total += v;
        evidence_spread(rule_add(rp, "cache_flush",
                                 "%zu reports of allocator cache flushes, %.0f flushes in all",
                                 n, total),
                        r);
    }
    dsq_result_free(r);
    return status;
}

/* Overflows are normal while the loss scale settles before training gets going;
 * flagged when they continue after the first step was logged, or are many. */
static int rule_overflow(report *rp)
{
    dsq_result *r = NULL;
    int status = rep_show(rp, "kind = ds_overflow", 0, &r);
    size_t n = r ? dsq_result_rows(r) : 0, late = 0;
    double t, scale = 0;
    for (size_t i = 0; i < n; i++)
        if (cell_num(r, i, "time", &t) && rp->step_first != DSQ_TIME_NONE &&
            t > (double)rp->step_first)
            late++;
    if (!status && n >= 2 && (late >= 2 || n >= 20)) {
        field_num(cell_s(r, n - 1, "fields"), "reducing to", &scale);
        evidence_spread(rule_add(rp, "loss_scale_overflow",
                                 "%zu fp16 overflows (skipped steps), %zu after training started; "
                                 "last loss scale %g",
                                 n, late, scale),
                        r);
    }
    dsq_result_free(r);
    return status;
}

static int rule_nccl_net(report *rp)
{
    size_t n = rp->attrs ? dsq_result_rows(rp->attrs) : 0;
    rep_rule *sock = NULL, *ib = NULL, *mixed = NULL;
    const char *first_net = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *label = cell_s(rp->attrs, i, "label"), *val = cell_s(rp->attrs, i, "text");
        if (strcmp(label, "nccl_net") == 0) {
            if (strcmp(val, "Socket") == 0 && !sock)
                sock = rule_add(rp, "nccl_socket", "NCCL uses the Socket transport (no IB/RoCE)");
            if (strcmp(val, "Socket") == 0)
                evidence(sock, rp->attrs, i);
            if (!first_net)
                first_net = val;
            else if (strcmp(first_net, val) != 0 && !mixed)
                evidence(mixed = rule_add(rp, "nccl_mixed_transport",
                                          "ranks use different NCCL transports: %s and %s",
                                          first_net, val),
                         rp->attrs, i);
        } else if (strcmp(label, "nccl_env.NCCL_IB_DISABLE") == 0 && atoi(val) == 1 && !ib) {
            evidence(ib = rule_add(rp, "nccl_ib_disabled", "NCCL_IB_DISABLE=1 in the environment"),
                     rp->attrs, i);
        }
    }
    return 0;
}

static int rule_failures(report *rp)
{
    size_t n = rp->failures ? dsq_result_rows(rp->failures) : 0;
    rep_rule *wd = NULL, *oom = NULL, *kill = NULL;
    double seq_lo = 0, seq_hi = 0, lo_rank = -1, v;
    int nseq = 0;
    for (size_t i = 0; i < n; i++) {
        const char *cls = cell_s(rp->failures, i, "label");
        const char *fields = cell_s(rp->failures, i, "fields");
        const char *host = cell_s(rp->failures, i, "host");
        host = strcmp(host, "-") == 0 ? "" : host;
        double rank = -1;
        cell_num(rp->failures, i, "rank", &rank);
        if (strcmp(cls, "nccl_timeout") == 0) {
            if (!wd)
                wd = rule_add(rp, "watchdog_timeout", "first collective timeout on rank %.0f%s%s",
                              rank, *host ? " host " : "", host);
            evidence(wd, rp->failures, i);
            if (field_num(fields, "SeqNum", &v)) {
                if (!nseq || v < seq_lo)
                    lo_rank = rank;
                seq_lo = nseq && seq_lo < v ? seq_lo : v;
                seq_hi = nseq && seq_hi > v ? seq_hi : v;
                nseq++;
            }
        } else if (strcmp(cls, "cuda_oom") == 0 && !oom) {
            double want = 0, avail = 0, cap = 0;
            char uw[16], uf[16], uc[16];
            int has_w = field_unit(fields, "tried to allocate", &want, uw);
            int has_f = field_unit(fields, "free", &avail, uf);
            int has_c = field_unit(fields, "total capacity", &cap, uc);
            if (has_c)
                rp->capacity = cap * dsq_unit_factor(dsq_unit_parse(uc, strlen(uc)));
            if (has_w && has_f)
                oom = rule_add(rp, "oom", "CUDA out of memory: requested %g %s, %g %s free%s%.4g %s",
                               want, uw, avail, uf, has_c ? " of " : "", has_c ? cap : 0.0,
                               has_c ? uc : "");
            else
                oom = rule_add(rp, "oom", "CUDA out of memory");
            evidence(oom, rp->failures, i);
        }
        double code = 0;
        if ((field_num(fields, "exitcode", &code) || field_num(fields, "return code", &code) ||
             field_num(fields, "exit code", &code)) && code == -9) {
            if (!kill)
                kill = rule_add(rp, "sigkill", "a process was killed by SIGKILL (exit code -9)");
            evidence(kill, rp->failures, i);
        }
    }
    if (wd && nseq > 1)
        snprintf(wd->finding + strlen(wd->finding), sizeof wd->finding - strlen(wd->finding),
                 "; %d timeouts, SeqNum %.0f..%.0f (spread %.0f), lowest on rank %.0f", nseq,
                 seq_lo, seq_hi, seq_hi - seq_lo, lo_rank);
    return 0;
}

/* Steps stopped long before the log did: a hang or a slow death. */
static int rule_stalled(report *rp)
{
    if (rp->step_last == DSQ_TIME_NONE || rp->end == DSQ_TIME_NONE || rp->start == DSQ_TIME_NONE)
        return 0;
    double gap = (double)(rp->end - rp->step_last) / 1e6;
    double span = (double)(rp->end - rp->start) / 1e6;
    if (gap < 300 || gap < 0.2 * span)
        return 0;
    char a[64], b[64];
    dsq_time_format(rp->step_last, a);
    dsq_time_format(rp->end, b);
    rep_rule *ru = rule_add(rp, "stalled", "last step logged at %s, last line at %s: %.0f s later",
                            a, b, gap);
    dsq_result *r = NULL;
    char cond[400];
    snprintf(cond, sizeof cond,
             "time >= '%s' and (kind = ds_step or kind = ds_throughput or kind = hf_loss or "
             "kind = megatron_iter or kind = mmengine_iter or kind = titan_step or "
             "kind = metric_logger or kind = dschat_ppo)",
             a);
    /* the times are whole seconds: the events of that second, the last of them */
    int status = rep_show(rp, cond, 0, &r);
    if (!status && r && dsq_result_rows(r))
        evidence(ru, r, dsq_result_rows(r) - 1);
    dsq_result_free(r);
    r = NULL;
    snprintf(cond, sizeof cond, "time >= '%s' and kind != rank_lines", b);
    if (!status && !(status = rep_show(rp, cond, 0, &r)) && r && dsq_result_rows(r))
        evidence(ru, r, dsq_result_rows(r) - 1);
    dsq_result_free(r);
    return status;
}

/* avg of the throughput field in [a, b) (whole seconds); *n values. */
static int window_avg(report *rp, const char *a, const char *b, double *avg, double *n)
{
    char text[REP_Q];
    dsq_result *r = NULL;
    snprintf(text, sizeof text, "avg \"%s\", count \"%s\" where %s and time >= '%s' and time < '%s'",
             rp->thr_field, rp->thr_field, rp->where, a, b);
    int status = rep_query(rp, text, &r);
    *n = 0;
    if (!status && r && dsq_result_rows(r)) {
        cell_num(r, 0, dsq_result_col_name(r, 0), avg);
        cell_num(r, 0, dsq_result_col_name(r, 1), n);
    }
    dsq_result_free(r);
    return status;
}

static int rule_throughput_drop(report *rp)
{
    if (!rp->thr_field || rp->step_first == DSQ_TIME_NONE || rp->step_last - rp->step_first < 8000000)
        return 0;
    int64_t q = (rp->step_last - rp->step_first) / 4;
    char t0[64], t1[64], t3[64], t4[64];
    dsq_time_format(rp->step_first, t0);
    dsq_time_format(rp->step_first + q, t1);
    dsq_time_format(rp->step_last - q, t3);
    dsq_time_format(rp->step_last + 1000000, t4);
    double first = 0, last = 0, n1, n4;
    int status;
    if ((status = window_avg(rp, t0, t1, &first, &n1)) || (status = window_avg(rp, t3, t4, &last, &n4)))
        return status;
    if (n1 >= 2 && n4 >= 2 && first > 0 && last < 0.8 * first)
        rule_add(rp, "throughput_drop",
                 "%s fell from %.4g (first quarter, avg of %.0f) to %.4g (last quarter, avg of %.0f): "
                 "-%.0f%%",
                 rp->thr_field, first, n1, last, n4, 100.0 * (1 - last / first));
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int straggler_add(report *rp, double rank, double v, double med, size_t n)
{
    char cond[400];
    dsq_result *r = NULL;
    rep_rule *ru = rule_add(rp, "straggler", "rank %.0f: %s %.4g, median of %zu ranks %.4g (-%.0f%%)",
                            rank, rp->thr_field, v, n, med, 100.0 * (1 - v / med));
    snprintf(cond, sizeof cond, "rank = %.0f and \"%s\" >= 0", rank, rp->thr_field);
    int status = rep_show(rp, cond, 1, &r);
    if (!status && r && dsq_result_rows(r))
        evidence(ru, r, 0);
    dsq_result_free(r);
    return status;
}

/* A rank whose average throughput is far below the median of all ranks. */
static int rule_straggler(report *rp)
{
    char text[REP_Q];
    dsq_result *r = NULL;
    if (!rp->thr_field)
        return 0;
    snprintf(text, sizeof text, "avg \"%s\" by rank where %s and rank >= 0", rp->thr_field,
             rp->where);
    int status = rep_query(rp, text, &r);
    size_t n = r ? dsq_result_rows(r) : 0;
    double *v = n >= 3 ? calloc(n, sizeof *v) : NULL;
    if (!status && v) {
        for (size_t i = 0; i < n; i++)
            cell_num(r, i, dsq_result_col_name(r, 1), &v[i]);
        double *s = calloc(n, sizeof *s);
        if (!s) {
            status = dsq_error_set(rp->err, DSQ_ENOMEM, "report");
        } else {
            memcpy(s, v, n * sizeof *s);
            qsort(s, n, sizeof *s, cmp_double);
            double med = s[n / 2];
            for (size_t i = 0; i < n && med > 0; i++) {
                double rank = -1;
                cell_num(r, i, "rank", &rank);
                if (v[i] < 0.75 * med && !status)
                    status = straggler_add(rp, rank, v[i], med, n);
            }
            free(s);
        }
    }
    free(v);
    dsq_result_free(r);
    return status;
}

/* A rank's peak memory within 10% of the GPU's capacity (known from an OOM message):
 * that rank is one allocation away from running out. */
static int rule_near_capacity(report *rp)
{
    size_t n = rp->mem ? dsq_result_rows(rp->mem) : 0;
    int vc = rp->mem ? dsq_result_cols(rp->mem) - 1 : 0;
    rep_rule *ru = NULL;
    if (rp->capacity <= 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const dsq_cell *c = dsq_result_cell(rp->mem, i, vc), *rank = dsq_result_cell(rp->mem, i, 0);
        if (c->is_null || c->s)
            continue;
        /* DeepSpeed's see_memory_usage divides by 1024^3 and prints "GB" */
        double bytes = c->v * (c->unit == DSQ_U_GB && strcmp(rp->mem_field, "Max_MA") == 0
                                   ? 1073741824.0
                                   : dsq_unit_factor(c->unit));
        if (bytes < 0.9 * rp->capacity)
            continue;
        char v[64], r[24];
        dsq_format_number(c->v, 0, v, sizeof v);
        if (rank->is_null)
            snprintf(r, sizeof r, "-");
        else
            snprintf(r, sizeof r, "%.0f", rank->v);
        if (!ru)
            ru = rule_add(rp, "memory_near_capacity",
                          "peak %s within 10%% of the GPU's %.4g GiB capacity:", rp->mem_field,
                          rp->capacity / 1073741824.0);
        size_t len = strlen(ru->finding);
        snprintf(ru->finding + len, sizeof ru->finding - len, " rank %s %s %s", r, v,
                 dsq_unit_name(c->unit));
    }
    return 0;
}

static int run_rules(report *rp)
{
    int status;
    if ((status = rule_cache_flush(rp)) || (status = rule_overflow(rp)) ||
        (status = rule_nccl_net(rp)) || (status = rule_failures(rp)) ||
        (status = rule_stalled(rp)) || (status = rule_throughput_drop(rp)) ||
        (status = rule_near_capacity(rp)))
        return status;
    return rule_straggler(rp);
}

/* --- the run's name ------------------------------------------------------------- */

/* 0 when the run exists; else DSQ_EUSAGE with a suggestion or the list of runs. */
static int check_run(report *rp)
{
    dsq_result *runs = NULL;
    int status = dsq_runs_list(rp->stores, rp->nstores, &runs, rp->err);
    if (status)
        return status;
    size_t n = dsq_result_rows(runs), best_d = (size_t)-1, best = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = dsq_result_cell(runs, i, 0)->s;
        if (name && strcmp(name, rp->p->run) == 0)
            goto done;
        size_t d = name ? dsq_name_distance(name, rp->p->run) : (size_t)-1;
        if (d < best_d)
            best_d = d, best = i;
    }
    size_t len = strlen(rp->p->run);
    if (n && best_d <= (len / 3 > 2 ? len / 3 : 2)) {
        status = dsq_error_set(rp->err, DSQ_EUSAGE, "no run '%s' in the index; did you mean '%s'?",
                               rp->p->run, dsq_result_cell(runs, best, 0)->s);
    } else {
        char list[300] = "";
        for (size_t i = 0; i < n && i < 10; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", dsq_result_cell(runs, i, 0)->s);
        }
        status = dsq_error_set(rp->err, DSQ_EUSAGE, "no run '%s' in the index; runs: %s%s",
                               rp->p->run, n ? list : "(none)", n > 10 ? ", ... (dsq runs)" : "");
    }
done:
    dsq_result_free(runs);
    return status;
}

/* --- text output ------------------------------------------------------------------ */

/* Prints s with control characters replaced: log text must not drive the terminal. */
static void put_safe(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

static void put_time(FILE *f, int64_t t)
{
    char b[64];
    if (t == DSQ_TIME_NONE) {
        fputs("-", f);
        return;
    }
    dsq_time_format(t, b);
    fputs(b, f);
}

static void put_cell(FILE *f, const dsq_cell *c)
{
    char b[64];
    if (!c || c->is_null) {
        fputs("-", f);
        return;
    }
    if (c->s) {
        put_safe(f, c->s);
        return;
    }
    if (c->unit == DSQ_U_TIME) {
        put_time(f, (int64_t)c->v);
        return;
    }
    dsq_format_number(c->v, c->is_int, b, sizeof b);
    fputs(b, f);
    if (*dsq_unit_name(c->unit))
        fprintf(f, " %s", dsq_unit_name(c->unit));
}

/* "▁▂▃▅▇█" over a bucket table's value column; min and max alongside. */
static void put_spark(FILE *f, const char *name, const dsq_result *r)
{
    static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    size_t n = r ? dsq_result_rows(r) : 0;
    int col = r ? dsq_result_cols(r) - 1 : 0;
    double lo = INFINITY, hi = -INFINITY, first = NAN, last = NAN;
    for (size_t i = 0; i < n; i++) {
        const dsq_cell *c = dsq_result_cell(r, i, col);
        if (c->is_null || c->s)
            continue;
        lo = c->v < lo ? c->v : lo;
        hi = c->v > hi ? c->v : hi;
        first = isnan(first) ? c->v : first;
        last = c->v;
    }
    if (isnan(first))
        return;
    fprintf(f, "  %-20s ", name);
    for (size_t i = 0; i < n; i++) {
        const dsq_cell *c = dsq_result_cell(r, i, col);
        int k = hi > lo ? (int)((c->v - lo) / (hi - lo) * 7.999) : 3;
        fputs(c->is_null || c->s ? " " : bars[k < 0 ? 0 : k > 7 ? 7 : k], f);
    }
    fprintf(f, "  first %.4g, last %.4g, min %.4g, max %.4g\n", first, last, lo, hi);
}

static const char *cat_text(const report *rp, const char *name, int title)
{
    char id[64];
    snprintf(id, sizeof id, "rule:%s", name);
    const dsq_cat_entry *e = rp->p->cat ? dsq_catalogue_get(rp->p->cat, id) : NULL;
    return !e ? "" : title ? e->title : e->check;
}

/* Attributes shown on the screen; the others are counted (--json has them all). */
static int attr_on_screen(const char *name)
{
    static const char *const keep[] = {
        "zero_stage", "dtype", "world_size", "nodes", "trainable_params", "num_params",
        "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
        "optimizer", "nccl_net", NULL};
    size_t n = strlen(name);
    if (n > 8 && strcmp(name + n - 8, "_version") == 0)
        return 1;
    for (int i = 0; keep[i]; i++)
        if (strcmp(name, keep[i]) == 0)
            return 1;
    return 0;
}

static void print_attrs(const report *rp, FILE *f)
{
    size_t n = rp->attrs ? dsq_result_rows(rp->attrs) : 0;
    int col = 0, more = 0;
    for (size_t i = 0; i < n; i++) {
        const char *label = cell_s(rp->attrs, i, "label");
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = strcmp(label, cell_s(rp->attrs, j, "label")) == 0;
        if (dup || strcmp(label, "failure") == 0)
            continue;
        if (!attr_on_screen(label)) {
            more++;
            continue;
        }
        fputs(col % 3 ? "  " : "\n  ", f);
        put_safe(f, label);
        fputs(" = ", f);
        put_safe(f, cell_s(rp->attrs, i, "text"));
        col++;
    }
    if (more)
        fprintf(f, "\n  (%d more attribute%s: --json lists them)", more, more == 1 ? "" : "s");
    fputs("\n", f);
}

static int has_rule(const report *rp, const char *name)
{
    for (int i = 0; i < rp->nrules; i++)
        if (strcmp(rp->rules[i].name, name) == 0)
            return 1;
    return 0;
}

/* Whether rank place a's last step comes before b's (ties: the lower rank first). */
static int step_before(const report *rp, int a, int b)
{
    int64_t x = rp->rank_step[a], y = rp->rank_step[b];
    return x < y || (x == y && rp->ranks[a] < rp->ranks[b]);
}

/* For a hang: each rank's last step, earliest first (the rank behind leads): the 16
 * earliest, kept in order as the ranks pass (a job of thousands of ranks). */
static void print_progress(const report *rp, FILE *f)
{
    int order[16], n = 0;
    for (int i = 0; i < rp->nranks; i++) {
        if (n == 16 && !step_before(rp, i, order[15]))
            continue;
        int j = n < 16 ? n++ : 15;
        for (; j > 0 && step_before(rp, i, order[j - 1]); j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    fputs("\nlast step by rank:\n", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "  rank %d: ", rp->ranks[order[i]]);
        put_time(f, rp->rank_step[order[i]]);
        fputs(rp->rank_step[order[i]] == DSQ_TIME_NONE ? " (no step logged)\n" : "\n", f);
    }
    if (rp->nranks > 16)
        fprintf(f, "  ... %d ranks in all\n", rp->nranks);
}

/* What ran and the timeline. */
static void print_head(const report *rp, FILE *f)
{
    fprintf(f, "run ");
    put_safe(f, rp->p->run);
    fprintf(f, ": %llu event%s, %d host%s, %d rank%s\n", (unsigned long long)rp->events,
            rp->events == 1 ? "" : "s", rp->nhosts, rp->nhosts == 1 ? "" : "s", rp->nranks,
            rp->nranks == 1 ? "" : "s");
    fputs("\nwhat ran:", f);
    if (rp->nhosts) {
        fputs("\n  hosts: ", f);
        for (int i = 0; i < rp->nhosts && i < REP_HOSTS_SHOWN; i++)
            fprintf(f, "%s", i ? ", " : ""), put_safe(f, host_name(rp, i));
        fputs(rp->nhosts > REP_HOSTS_SHOWN ? ", ..." : "", f);
    }
    print_attrs(rp, f);
    fputs("\ntimeline:\n  start       ", f);
    put_time(f, rp->start);
    fputs("\n  first step  ", f);
    put_time(f, rp->step_first);
    fputs("\n  last step   ", f);
    put_time(f, rp->step_last);
    fputs("\n  end         ", f);
    put_time(f, rp->end);
    fputs("\n", f);
}

/* Memory by rank, trends, warnings and errors. */
static void print_numbers(const report *rp, FILE *f)
{
    size_t n = rp->mem ? dsq_result_rows(rp->mem) : 0;
    if (n) {
        fprintf(f, "\nmemory peaks by rank (max %s):\n", rp->mem_field);
        for (size_t i = 0; i < n && i < 16; i++) {
            fputs("  rank ", f);
            put_cell(f, dsq_result_cell(rp->mem, i, 0));
            fputs(": ", f);
            put_cell(f, dsq_result_cell(rp->mem, i, 1));
            fputs("\n", f);
        }
        if (n > 16)
            fprintf(f, "  ... %zu ranks in all\n", n);
    }
    if (rp->thr || rp->loss) {
        fputs("\ntrends:\n", f);
        put_spark(f, rp->thr_field ? rp->thr_field : "", rp->thr);
        put_spark(f, rp->loss_field ? rp->loss_field : "", rp->loss);
    }
    double warn = 0, error = 0, v;
    for (size_t i = 0; rp->levels && i < dsq_result_rows(rp->levels); i++) {
        const char *lv = cell_s(rp->levels, i, "level");
        if (!cell_num(rp->levels, i, "count", &v))
            continue;
        if (strcmp(lv, "warning") == 0)
            warn += v;
        else if (strcmp(lv, "error") == 0)
            error += v;
    }
    n = rp->problems ? dsq_result_rows(rp->problems) : 0;
    if (n > 0 || warn > 0 || error > 0)
        fprintf(f, "\nwarnings and errors (%.0f warning lines, %.0f error lines; events by kind "
                   "and label):\n", warn, error);
    for (size_t i = 0; i < n && i < 12; i++) {
        fputs("  ", f);
        put_cell(f, dsq_result_cell(rp->problems, i, 2));
        fputs("  ", f);
        put_safe(f, cell_s(rp->problems, i, "kind"));
        fputs("  ", f);
        put_safe(f, cell_s(rp->problems, i, "label"));
        fputs("\n", f);
    }
}

/* The first failure in time; later ones are counted. */
static void print_failure(const report *rp, FILE *f)
{
    size_t n = rp->failures ? dsq_result_rows(rp->failures) : 0;
    fputs("\nfailure:", f);
    if (!n) {
        fputs(" none recorded\n", f);
    } else {
        const dsq_result *r = rp->failures;
        fputs(" ", f);
        put_safe(f, cell_s(r, 0, "label"));
        fputs(" at ", f);
        put_cell(f, cell(r, 0, "time"));
        fputs(", rank ", f);
        put_cell(f, cell(r, 0, "rank"));
        fputs(", host ", f);
        put_cell(f, cell(r, 0, "host"));
        fputs("\n  ", f);
        put_safe(f, cell_s(r, 0, "text"));
        double line = 0;
        cell_num(r, 0, "line", &line);
        fputs("\n  at ", f);
        put_safe(f, cell_s(r, 0, "file"));
        fprintf(f, ":%.0f\n", line);
        if (n > 1)
            fprintf(f, "  (%zu failure events in all; later ones are usually consequences)\n", n);
    }
}

static void print_rules(const report *rp, FILE *f)
{
    fprintf(f, "\ndiagnostics:%s\n", rp->nrules ? "" : " none triggered");
    for (int i = 0; i < rp->nrules; i++) {
        const rep_rule *ru = &rp->rules[i];
        fprintf(f, "  [%s] %s\n    ", ru->name, cat_text(rp, ru->name, 1));
        put_safe(f, ru->finding);
        fputs("\n", f);
        for (int j = 0; j < ru->nevid; j++) {
            fputs("    at ", f);
            put_safe(f, ru->evid[j]);
            fputs("\n", f);
        }
        const char *check = cat_text(rp, ru->name, 0);
        if (*check)
            fprintf(f, "    -> %s\n", check);
    }
}

static void print_text(const report *rp, FILE *f)
{
    print_head(rp, f);
    print_numbers(rp, f);
    print_failure(rp, f);
    if (has_rule(rp, "watchdog_timeout") || has_rule(rp, "stalled"))
        print_progress(rp, f);
    print_rules(rp, f);
}

/* --- HTML page: the text report and SVG charts, nothing loaded from anywhere ---- */

#define SVG_W 720
#define SVG_H 220
#define SVG_M 48

static void html_text(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc((unsigned char)s[i] < 0x20 && s[i] != '\n' ? '?' : s[i], f);
        }
    }
}

/* A time-value table's column index by name prefix ("avg ", "max "), -1 if none. */
static int value_col(const dsq_result *r)
{
    return r ? dsq_result_cols(r) - 1 : -1;
}

static int time_col(const dsq_result *r)
{
    for (int c = 0; r && c < dsq_result_cols(r); c++)
        if (strcmp(dsq_result_col_name(r, c), "time") == 0)
            return c;
    return -1;
}

/* One chart: a line per series (rank), x = time, y = value. series_col < 0: one line. */
static void svg_chart(FILE *f, const char *title, const dsq_result *r, int series_col)
{
    int tc = time_col(r), vc = value_col(r);
    size_t n = r ? dsq_result_rows(r) : 0;
    double t0 = 0, t1 = 0, v0 = 0, v1 = 0;
    int have = 0;
    for (size_t i = 0; i < n && tc >= 0; i++) {
        const dsq_cell *t = dsq_result_cell(r, i, tc), *v = dsq_result_cell(r, i, vc);
        if (t->is_null || v->is_null || v->s)
            continue;
        if (!have || t->v < t0) t0 = t->v;
        if (!have || t->v > t1) t1 = t->v;
        if (!have || v->v < v0) v0 = v->v;
        if (!have || v->v > v1) v1 = v->v;
        have = 1;
    }
    fputs("<h2>", f);
    html_text(f, title, strlen(title));
    fputs("</h2>\n", f);
    if (!have) {
        fputs("<p>no values over time</p>\n", f);
        return;
    }
    if (t1 <= t0) t1 = t0 + 1;
    if (v1 <= v0) v1 = v0 + 1;
    fprintf(f, "<svg width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\">\n", SVG_W, SVG_H, SVG_W, SVG_H);
    fprintf(f, "<rect x=\"%d\" y=\"8\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#bbb\"/>\n",
            SVG_M, SVG_W - SVG_M - 8, SVG_H - SVG_M - 8);
    char a[64], b[64];
    dsq_format_number(v1, 0, a, sizeof a);
    dsq_format_number(v0, 0, b, sizeof b);
    fprintf(f, "<text x=\"4\" y=\"18\" font-size=\"11\">%s</text><text x=\"4\" y=\"%d\" "
               "font-size=\"11\">%s</text>\n", a, SVG_H - SVG_M, b);
    dsq_time_format((int64_t)t0, a);
    dsq_time_format((int64_t)t1, b);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text><text x=\"%d\" y=\"%d\" "
               "font-size=\"11\" text-anchor=\"end\">%s</text>\n",
            SVG_M, SVG_H - SVG_M + 18, a, SVG_W - 8, SVG_H - SVG_M + 18, b);
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                         "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
    int line = 0;
    for (size_t i = 0; i < n;) { /* rows are sorted by the series column, then time */
        size_t j = i;
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"%s\" points=\"",
                colors[line++ % 8]);
        for (; j < n; j++) {
            if (series_col >= 0 && j > i &&
                dsq_result_cell(r, j, series_col)->v != dsq_result_cell(r, i, series_col)->v)
                break;
            const dsq_cell *t = dsq_result_cell(r, j, tc), *v = dsq_result_cell(r, j, vc);
            if (t->is_null || v->is_null || v->s)
                continue;
            double x = SVG_M + (t->v - t0) / (t1 - t0) * (SVG_W - SVG_M - 8);
            double y = 8 + (1 - (v->v - v0) / (v1 - v0)) * (SVG_H - SVG_M - 8);
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fputs("\"/>\n", f);
        if (series_col >= 0) {
            const dsq_cell *s = dsq_result_cell(r, i, series_col);
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"%s\">rank %s</text>\n",
                    SVG_W - 70, 20 + 12 * (line - 1), colors[(line - 1) % 8],
                    s->is_null ? "-" : (snprintf(a, sizeof a, "%.0f", s->v), a));
        }
        i = j;
    }
    fputs("</svg>\n", f);
}

static void print_html(const report *rp, FILE *f)
{
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    if (m) {
        print_text(rp, m);
        fclose(m);
    }
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dsq report ", f);
    html_text(f, rp->p->run, strlen(rp->p->run));
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:60em}"
          "pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style></head><body>\n<h1>", f);
    html_text(f, rp->p->run, strlen(rp->p->run));
    fputs("</h1>\n<pre>", f);
    if (text)
        html_text(f, text, n);
    fputs("</pre>\n", f);
    char title[256];
    snprintf(title, sizeof title, "loss (%s)", rp->loss_field ? rp->loss_field : "none");
    svg_chart(f, title, rp->loss, -1);
    snprintf(title, sizeof title, "throughput (%s)", rp->thr_field ? rp->thr_field : "none");
    svg_chart(f, title, rp->thr, -1);
    snprintf(title, sizeof title, "memory by rank (%s)", rp->mem_field ? rp->mem_field : "none");
    svg_chart(f, title, rp->mem_t, 0);
    fputs("</body></html>\n", f);
    free(text);
}

/* --- JSON output ------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_time(FILE *f, const char *key, int64_t t)
{
    char b[64];
    fprintf(f, "\"%s\":", key);
    if (t == DSQ_TIME_NONE) {
        fputs("null", f);
        return;
    }
    dsq_time_format(t, b);
    json_str(f, b);
}

static void json_cell(FILE *f, const dsq_cell *c)
{
    char b[64];
    if (!c || c->is_null) {
        fputs("null", f);
    } else if (c->s) {
        json_str(f, c->s);
    } else if (c->unit == DSQ_U_TIME) {
        dsq_time_format((int64_t)c->v, b);
        json_str(f, b);
    } else if (!isfinite(c->v)) {
        fputs("null", f);
    } else {
        dsq_format_number(c->v, c->is_int, b, sizeof b);
        fputs(b, f);
    }
}

/* A result as an array of objects, column names as keys. */
static void json_table(FILE *f, const char *key, const dsq_result *r)
{
    fprintf(f, ",\"%s\":[", key);
    size_t n = r ? dsq_result_rows(r) : 0;
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",{" : "{", f);
        for (int c = 0; c < dsq_result_cols(r); c++) {
            fputs(c ? "," : "", f);
            json_str(f, dsq_result_col_name(r, c));
            fputc(':', f);
            json_cell(f, dsq_result_cell(r, i, c));
        }
        fputs("}", f);
    }
    fputs("]", f);
}

/* Attributes as {name: value}, the first value of each (as the text shows). */
static void json_attrs(FILE *f, const dsq_result *r)
{
    size_t n = r ? dsq_result_rows(r) : 0;
    int first = 1;
    fputs(",\"attributes\":{", f);
    for (size_t i = 0; i < n; i++) {
        const char *label = cell_s(r, i, "label");
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = strcmp(label, cell_s(r, j, "label")) == 0;
        if (dup || strcmp(label, "failure") == 0)
            continue;
        fputs(first ? "" : ",", f);
        json_str(f, label);
        fputc(':', f);
        json_str(f, cell_s(r, i, "text"));
        first = 0;
    }
    fputs("}", f);
}

static void print_json(const report *rp, FILE *f)
{
    fputs("{\"run\":", f);
    json_str(f, rp->p->run);
    fprintf(f, ",\"events\":%llu,\"hosts\":[", (unsigned long long)rp->events);
    for (int i = 0; i < rp->nhosts; i++)
        fputs(i ? "," : "", f), json_str(f, host_name(rp, i));
    fprintf(f, "],\"ranks\":%d,\"last_step_by_rank\":{", rp->nranks);
    for (int i = 0; i < rp->nranks; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", rp->ranks[i]);
        fputs(i ? "," : "", f);
        json_time(f, key, rp->rank_step[i]);
    }
    fputs("},\"timeline\":{", f);
    json_time(f, "start", rp->start);
    fputc(',', f);
    json_time(f, "first_step", rp->step_first);
    fputc(',', f);
    json_time(f, "last_step", rp->step_last);
    fputc(',', f);
    json_time(f, "end", rp->end);
    fputs("}", f);
    json_attrs(f, rp->attrs);
    fputs(",\"memory_field\":", f);
    rp->mem_field ? json_str(f, rp->mem_field) : (void)fputs("null", f);
    json_table(f, "memory_by_rank", rp->mem);
    fputs(",\"throughput_field\":", f);
    rp->thr_field ? json_str(f, rp->thr_field) : (void)fputs("null", f);
    json_table(f, "throughput", rp->thr);
    fputs(",\"loss_field\":", f);
    rp->loss_field ? json_str(f, rp->loss_field) : (void)fputs("null", f);
    json_table(f, "loss", rp->loss);
    json_table(f, "problems", rp->problems);
    json_table(f, "lines_by_level", rp->levels);
    json_table(f, "failures", rp->failures);
    fputs(",\"diagnostics\":[", f);
    for (int i = 0; i < rp->nrules; i++) {
        const rep_rule *ru = &rp->rules[i];
        fputs(i ? ",{\"rule\":" : "{\"rule\":", f);
        json_str(f, ru->name);
        fputs(",\"title\":", f);
        json_str(f, cat_text(rp, ru->name, 1));
        fputs(",\"finding\":", f);
        json_str(f, ru->finding);
        fputs(",\"evidence\":[", f);
        for (int j = 0; j < ru->nevid; j++)
            fputs(j ? "," : "", f), json_str(f, ru->evid[j]);
        fputs("],\"check\":", f);
        json_str(f, cat_text(rp, ru->name, 0));
        fputs("}", f);
    }
    fputs("]}\n", f);
}

int dsq_report_run(const dsq_report_params *p, dsq_store *const *stores, int nstores,
                   dsq_error *err)
{
    report *rp = calloc(1, sizeof *rp);
    int status = 0;
    if (!rp)
        return dsq_error_set(err, DSQ_ENOMEM, "report");
    *rp = (report){.p = p, .stores = stores, .nstores = nstores, .err = err,
                   .start = DSQ_TIME_NONE, .end = DSQ_TIME_NONE, .step_first = DSQ_TIME_NONE,
                   .step_last = DSQ_TIME_NONE};
    if (dsq_dict_new(&rp->hosts) || dsq_idmap_new(256, &rp->rank_map)) {
        status = dsq_error_set(err, DSQ_ENOMEM, "report");
        goto done;
    }
    if (!p->run || !*p->run || strchr(p->run, '\'') || strlen(p->run) > 500) {
        status = dsq_error_set(err, DSQ_EUSAGE, "report: give a run name as `dsq runs` lists it");
        goto done;
    }
    snprintf(rp->where, sizeof rp->where, "run = '%s'", p->run);
    /* the run listing (one stat per file) only when the run has no events */
    if ((status = read_timeline(rp)) || (!rp->events && (status = check_run(rp))) ||
        (status = gather(rp)) || (status = run_rules(rp)))
        goto done;
    if (p->html && rp->mem_field && rp->step_first != DSQ_TIME_NONE && rp->step_last > rp->step_first) {
        char text[REP_Q];
        long every = (long)ceil((double)(rp->step_last - rp->step_first) / 1e6 / REP_SPARK);
        snprintf(text, sizeof text, "max \"%s\" by rank where %s every %lds", rp->mem_field,
                 rp->where, every < 1 ? 1 : every);
        if ((status = rep_query(rp, text, &rp->mem_t)))
            goto done;
    }
    if (p->json)
        print_json(rp, p->out);
    else
        print_text(rp, p->out);
    if (p->html)
        print_html(rp, p->html);
done:
    dsq_result_free(rp->attrs);
    dsq_result_free(rp->mem);
    dsq_result_free(rp->problems);
    dsq_result_free(rp->levels);
    dsq_result_free(rp->failures);
    dsq_result_free(rp->thr);
    dsq_result_free(rp->loss);
    dsq_result_free(rp->mem_t);
    dsq_dict_free(rp->hosts);
    free(rp->ranks);
    free(rp->rank_step);
    dsq_idmap_free(rp->rank_map);
    free(rp);
    return status;
}
