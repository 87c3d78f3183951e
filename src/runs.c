/* Discovery listings (see runs.h): runs and fields, merged by name over every index.
 *
 * Runs: one line per run. Files whose path no longer exists are counted as missing
 * (one stat per file).
 *
 * Everything comes from small tables: the source records (files, lines, damage),
 * the per-kind count series (events, time span, hosts, ranks), the Max_MA series
 * (peak, converted to the unit of the first one seen) and the `failure` attribute
 * (the class of a run's first failure). No event block is read.
 */
#include "runs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dict.h"
#include "error.h"
#include "num.h"
#include "rollup.h"
#include "timeconv.h"

typedef struct run_info {
    uint64_t files, lines, events, errors, hosts, ranks, missing;
    int64_t start, end;   /* DSQ_TIME_NONE when no event had a time */
    uint32_t failure;     /* gdict id of the failure class, 0 if none */
    int64_t failure_t;
    int has_peak;
    double peak;
    uint8_t peak_unit;
} run_info;

typedef struct runs_ctx {
    dsq_dict *names;      /* run, host and failure names, shared by every index */
    run_info *v;          /* by run name id */
    size_t cap;
    uint64_t *seen;       /* open-addressing set of run<<32|host and run<<32|rank keys */
    size_t nseen, seen_cap;
    dsq_dict *dict;       /* the index being read */
    uint32_t *xlat;       /* its run ids -> names ids (0: not yet), when it fits */
    uint32_t nxlat;
    uint32_t max_ma;      /* its id of "Max_MA" */
    dsq_error *err;
} runs_ctx;

static run_info *info(runs_ctx *rc, uint32_t local_run)
{
    size_t n;
    uint32_t id = rc->xlat && local_run <= rc->nxlat ? rc->xlat[local_run] : 0;
    if (!id) { /* first time this index names the run: by name, shared by every index */
        const char *s = dsq_dict_str(rc->dict, local_run, &n);
        id = s ? dsq_dict_intern(rc->names, s, n) : 0;
        if (!id)
            return NULL;
        if (rc->xlat && local_run <= rc->nxlat)
            rc->xlat[local_run] = id;
    }
    if (id >= rc->cap) {
        size_t cap = rc->cap ? rc->cap : 64;
        while (cap <= id)
            cap *= 2;
        run_info *v = realloc(rc->v, cap * sizeof *v);
        if (!v)
            return NULL;
        for (size_t i = rc->cap; i < cap; i++)
            v[i] = (run_info){.start = DSQ_TIME_NONE, .end = DSQ_TIME_NONE};
        rc->v = v;
        rc->cap = cap;
    }
    return &rc->v[id];
}

/* Adds key to the set; 1 if it was new, 0 if seen, -1 out of memory. */
static int see(runs_ctx *rc, uint64_t key)
{
    key = key * 2 + 1; /* never 0 */
    if ((rc->nseen + 1) * 2 > rc->seen_cap) {
        size_t old = rc->seen_cap, cap = old ? old * 2 : 1024;
        uint64_t *n = calloc(cap, sizeof *n), *prev = rc->seen;
        if (!n)
            return -1;
        rc->seen = n;
        rc->seen_cap = cap;
        for (size_t i = 0; i < old; i++) {
            if (!prev[i])
                continue;
            size_t j = (size_t)dsq_mix64(prev[i]) & (cap - 1);
            while (n[j])
                j = (j + 1) & (cap - 1);
            n[j] = prev[i];
        }
        free(prev);
    }
    size_t j = (size_t)dsq_mix64(key) & (rc->seen_cap - 1);
    for (; rc->seen[j]; j = (j + 1) & (rc->seen_cap - 1))
        if (rc->seen[j] == key)
            return 0;
    rc->seen[j] = key;
    rc->nseen++;
    return 1;
}

static int add_source(void *ctx, const char *path, const dsq_source_rec *rec)
{
    runs_ctx *rc = ctx;
    run_info *ri = info(rc, rec->run);
    if (!ri)
        return dsq_error_set(rc->err, DSQ_ENOMEM, "runs");
    ri->files++;
    ri->lines += rec->lines;
    ri->errors += rec->errors;
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        ri->missing++; /* still queryable until `dsq prune` */
    return 0;
}

static int add_kind_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    runs_ctx *rc = ctx;
    run_info *ri = info(rc, k->run);
    if (!ri)
        return dsq_error_set(rc->err, DSQ_ENOMEM, "runs");
    uint32_t run = (uint32_t)(ri - rc->v);
    ri->events += rec->count;
    if (rec->first_t == DSQ_TIME_NONE && rec->last_t != DSQ_TIME_NONE) {
        /* the span of the timed events is unknown; the last time still counts */
    } else if (rec->first_t != DSQ_TIME_NONE &&
               (ri->start == DSQ_TIME_NONE || rec->first_t < ri->start)) {
        ri->start = rec->first_t;
    }
    if (rec->last_t != DSQ_TIME_NONE && (ri->end == DSQ_TIME_NONE || rec->last_t > ri->end))
        ri->end = rec->last_t;
    size_t n;
    const char *host = k->host ? dsq_dict_str(rc->dict, k->host, &n) : NULL;
    uint32_t h = host ? dsq_dict_intern(rc->names, host, n) : 0;
    int a = h ? see(rc, (uint64_t)run << 32 | h) : 0;
    int b = k->rank >= 0 ? see(rc, (uint64_t)run << 32 | (1u << 31) | (uint32_t)k->rank) : 0;
    if (a < 0 || b < 0 || (host && !h))
        return dsq_error_set(rc->err, DSQ_ENOMEM, "runs");
    ri->hosts += (uint64_t)a;
    ri->ranks += (uint64_t)b;
    return 0;
}

static int add_peak(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    runs_ctx *rc = ctx;
    run_info *ri = info(rc, k->run);
    if (!ri)
        return dsq_error_set(rc->err, DSQ_ENOMEM, "runs");
    if (!rec->count)
        return 0;
    if (!ri->has_peak) {
        ri->has_peak = 1;
        ri->peak = rec->max;
        ri->peak_unit = rec->unit;
    } else {
        double v = dsq_unit_convert(rec->max, rec->unit, ri->peak_unit);
        if (v > ri->peak)
            ri->peak = v;
    }
    return 0;
}

static int add_failure(void *ctx, uint32_t run, uint32_t name, uint32_t source,
                       const dsq_attr_rec *rec)
{
    runs_ctx *rc = ctx;
    (void)source;
    size_t n;
    const char *nm = dsq_dict_str(rc->dict, name, &n);
    if (!nm || n != 7 || memcmp(nm, "failure", 7) != 0)
        return 0;
    run_info *ri = info(rc, run);
    const char *cls = dsq_dict_str(rc->dict, rec->text, &n);
    if (!ri)
        return dsq_error_set(rc->err, DSQ_ENOMEM, "runs");
    if (cls && (!ri->failure || rec->t < ri->failure_t)) {
        ri->failure = dsq_dict_intern(rc->names, cls, n);
        ri->failure_t = rec->t;
    }
    return 0;
}

static int read_store(runs_ctx *rc, dsq_store *st)
{
    int status;
    rc->dict = dsq_store_dict(st);
    free(rc->xlat);
    rc->nxlat = dsq_dict_count(rc->dict);
    rc->xlat = calloc((size_t)rc->nxlat + 1, sizeof *rc->xlat); /* NULL: look names up */
    rc->max_ma = dsq_dict_find(rc->dict, "Max_MA", 6);
    if ((status = dsq_store_scan_sources(st, add_source, rc, rc->err)) ||
        (status = dsq_store_scan_series(st, DSQ_SERIES_KIND_BASE,
                                        DSQ_SERIES_KIND_BASE + DSQ_EV_KIND_COUNT, 0,
                                        add_kind_series, rc, rc->err)) ||
        (rc->max_ma &&
         (status = dsq_store_scan_series(st, rc->max_ma, rc->max_ma, 0, add_peak, rc, rc->err))))
        return status;
    return dsq_store_scan_attrs(st, add_failure, rc, rc->err);
}

int dsq_runs_list(dsq_store *const *stores, int nstores, dsq_result **out, dsq_error *err)
{
    runs_ctx rc = {.err = err};
    dsq_result *r = NULL;
    int status = 0;
    static const char *const names[] = {"run",     "start",       "duration", "hosts",
                                        "ranks",   "files",       "lines",    "events",
                                        "failure", "peak Max_MA", "damaged",  "missing"};
    if (dsq_dict_new(&rc.names) || !(r = dsq_result_new(12, names))) {
        status = dsq_error_set(err, DSQ_ENOMEM, "runs");
        goto done;
    }
    for (int i = 0; i < nstores; i++)
        if ((status = read_store(&rc, stores[i])))
            goto done;
    for (size_t id = 1; id < rc.cap; id++) {
        const run_info *ri = &rc.v[id];
        if (!ri->files && !ri->events)
            continue;
        int timed = ri->start != DSQ_TIME_NONE && ri->end != DSQ_TIME_NONE;
        dsq_cell cells[12] = {
            {.s = dsq_dict_str(rc.names, (uint32_t)id, NULL)},
            {.v = (double)ri->start, .unit = DSQ_U_TIME, .is_null = ri->start == DSQ_TIME_NONE},
            {.v = timed ? (double)(ri->end - ri->start) / 1e6 : 0, .unit = DSQ_U_S,
             .is_null = !timed},
            {.v = (double)ri->hosts, .is_int = 1},
            {.v = (double)ri->ranks, .is_int = 1},
            {.v = (double)ri->files, .is_int = 1},
            {.v = (double)ri->lines, .is_int = 1},
            {.v = (double)ri->events, .is_int = 1},
            {.s = ri->failure ? dsq_dict_str(rc.names, ri->failure, NULL) : "-"},
            {.v = ri->peak, .unit = ri->peak_unit, .is_null = !ri->has_peak},
            {.v = (double)ri->errors, .is_int = 1},
            {.v = (double)ri->missing, .is_int = 1},
        };
        if (dsq_result_add_row(r, cells)) {
            status = dsq_error_set(err, DSQ_ENOMEM, "runs");
            goto done;
        }
    }
    dsq_result_sort(r, 1);
    *out = r;
    r = NULL;
done:
    dsq_result_free(r);
    dsq_dict_free(rc.names);
    free(rc.v);
    free(rc.seen);
    free(rc.xlat);
    return status;
}

/* --- fields: from the run rollups (one record per field and run) ------------- */

typedef struct field_info {
    uint64_t count, runs;
    double min, max;
    uint8_t unit;
} field_info;

typedef struct fields_ctx {
    runs_ctx rc;          /* names (fields and runs) and the seen set */
    field_info *v;        /* by field name id */
    size_t cap;
} fields_ctx;

static int add_field_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    fields_ctx *fc = ctx;
    size_t n, rn;
    const char *name = dsq_dict_str(fc->rc.dict, k->field, &n);
    const char *run = dsq_dict_str(fc->rc.dict, k->run, &rn);
    uint32_t id = name ? dsq_dict_intern(fc->rc.names, name, n) : 0;
    uint32_t rid = run ? dsq_dict_intern(fc->rc.names, run, rn) : 0;
    if (!name || !rec->count)
        return 0;
    if (!id || (run && !rid))
        return dsq_error_set(fc->rc.err, DSQ_ENOMEM, "fields");
    if (id >= fc->cap) {
        size_t cap = fc->cap ? fc->cap : 64;
        while (cap <= id)
            cap *= 2;
        field_info *v = realloc(fc->v, cap * sizeof *v);
        if (!v)
            return dsq_error_set(fc->rc.err, DSQ_ENOMEM, "fields");
        memset(v + fc->cap, 0, (cap - fc->cap) * sizeof *v);
        fc->v = v;
        fc->cap = cap;
    }
    field_info *f = &fc->v[id];
    double mn = rec->min, mx = rec->max;
    if (!f->count) {
        f->unit = rec->unit;
        f->min = mn;
        f->max = mx;
    } else {
        mn = dsq_unit_convert(mn, rec->unit, f->unit);
        mx = dsq_unit_convert(mx, rec->unit, f->unit);
        f->min = mn < f->min ? mn : f->min;
        f->max = mx > f->max ? mx : f->max;
    }
    f->count += rec->count;
    int fresh = see(&fc->rc, (uint64_t)id << 32 | rid);
    if (fresh < 0)
        return dsq_error_set(fc->rc.err, DSQ_ENOMEM, "fields");
    f->runs += (uint64_t)fresh;
    return 0;
}

int dsq_fields_list(dsq_store *const *stores, int nstores, dsq_result **out, dsq_error *err)
{
    fields_ctx fc = {.rc = {.err = err}};
    dsq_result *r = NULL;
    int status = 0;
    static const char *const names[] = {"field", "unit", "count", "runs", "min", "max"};
    if (dsq_dict_new(&fc.rc.names) || !(r = dsq_result_new(6, names))) {
        status = dsq_error_set(err, DSQ_ENOMEM, "fields");
        goto done;
    }
    for (int i = 0; i < nstores; i++) {
        fc.rc.dict = dsq_store_dict(stores[i]);
        if ((status = dsq_store_scan_runroll(stores[i], 1, DSQ_SERIES_KIND_BASE - 1, 0,
                                            add_field_series, &fc, err)))
            goto done;
    }
    for (size_t id = 1; id < fc.cap; id++) {
        const field_info *f = &fc.v[id];
        if (!f->count)
            continue;
        dsq_cell cells[6] = {
            {.s = dsq_dict_str(fc.rc.names, (uint32_t)id, NULL)},
            {.s = dsq_unit_name(f->unit)},
            {.v = (double)f->count, .is_int = 1},
            {.v = (double)f->runs, .is_int = 1},
            {.v = f->min, .unit = f->unit},
            {.v = f->max, .unit = f->unit},
        };
        if (dsq_result_add_row(r, cells)) {
            status = dsq_error_set(err, DSQ_ENOMEM, "fields");
            goto done;
        }
    }
    dsq_result_sort(r, 1);
    *out = r;
    r = NULL;
done:
    dsq_result_free(r);
    dsq_dict_free(fc.rc.names);
    free(fc.rc.seen);
    free(fc.v);
    return status;
}
