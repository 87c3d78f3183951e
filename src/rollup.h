/* Rollups: what queries read instead of event blocks.
 *
 * A series is the values of one numeric field in one (run, host, rank, source):
 * its summary (count, sum, min, max, first and last by time, the unit of its first
 * value) answers count/sum/min/max/avg/first/last exactly and merges exactly with
 * other series' summaries, also across indexes. Its values are kept in chunks in
 * the order they were logged, each with the event it came from, so percentiles
 * (exact), `every` buckets and time ranges read only that field's values, never
 * the event blocks.
 *
 * Events of one kind in one (run, host, rank, source) form a count-only series
 * under the pseudo-field DSQ_SERIES_KIND_BASE + kind (count, and first_t/last_t
 * spanning the events that have a time): `count by run` or `count by host where
 * kind = 'failure'` read those (no chunks). The times of its events with fields
 * are a series under DSQ_SERIES_TIMES_BASE + kind, kept once for all their fields
 * (dsq_pairs_scan finds a value's time there).
 *
 * Run attributes (kind attr events) are kept as (run, name, source) -> the latest
 * value in that source, so `by zero_stage` reads a small table. The class of the
 * first failure event is kept the same way as the attribute `failure` (the
 * earliest wins), so `by failure` and `dsq runs` need no event.
 *
 * Per (field, run), the merge of all that run's series is kept too (the run
 * rollup: a query by run reads one record per run, not one per host and file); the
 * store recomputes it once the commits writing or dropping the run's sources are
 * over (store.h, dsq_store_runroll_update).
 *
 * The builder collects one source's series in memory (chunks are written as they
 * fill) and writes the summaries into the open store transaction at the end, or
 * at checkpoints, after which it may let go of them (dsq_rollup_let_go).
 */
#ifndef DSQ_ROLLUP_H
#define DSQ_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"
#include "event.h"
#include "store.h"

/* --- summaries --------------------------------------------------------------- */

/* Adds one value (already in rec->unit, or in `unit` when rec is empty). */
void dsq_series_add(dsq_series_rec *rec, int64_t t, double v, uint8_t unit);

/* Merges summary `from` into `to`, converting units like dsq_series_add (an empty
 * `to` takes `from` as it is). counting: count series, whose times span only the
 * events that have one (DSQ_TIME_NONE is "no time", not "earliest"). */
void dsq_series_merge(dsq_series_rec *to, const dsq_series_rec *from, int counting);

/* Converts v from unit `from` to unit `to` when both measure the same thing
 * (MB and GB); otherwise returns v. */
double dsq_unit_convert(double v, uint8_t from, uint8_t to);

/* --- chunks: (time, value) pairs, (event, value) pairs, a kind's times ------ */

/* A chunk is a run of segments encoded as pairs come (rollup.c): each segment has
 * one time scale and one number form, and a pair that fits neither starts the next
 * segment. The encoded bytes are buf[0..len) once dsq_chunk_finish was called. */
typedef struct dsq_chunk {
    unsigned char *buf;
    size_t len, cap;
    uint32_t count;     /* pairs in the chunk */
    /* the open segment (seg_n == 0: none) */
    size_t seg_at;      /* where its header is */
    uint32_t seg_n;     /* its pairs */
    uint8_t k, vm;      /* its time scale 10^k (15: pairs by event) and value form */
    uint8_t runs_end;   /* a value was not of the event after the one before: the
                           chunk's later values name their events (rollup.c) */
    uint8_t nkinds;     /* pairs by event: the kinds named so far, their last event
                           numbers and steps (a run's kind and last event: [0]) */
    uint32_t kinds[3];
    uint64_t ex[3], edx[3];
    uint64_t x, dx, m, bits; /* the previous pair's scaled time (or event number),
                                step, mantissa, bits */
    uint64_t last_bits;      /* the previous pair's value's bits, in every form */
} dsq_chunk;

/* Appends one pair; 0 or DSQ_ENOMEM. */
int dsq_chunk_add(dsq_chunk *c, int64_t t, double v);
/* Appends the value of the event-th event (with fields) of `kind`, whose time its
 * kind's times series keeps (rollup.c); event numbers of a kind only grow in a
 * chunk. 0 or DSQ_ENOMEM. */
int dsq_chunk_add_event(dsq_chunk *c, uint32_t kind, uint64_t event, double v);
/* Closes the open segment: the chunk's bytes are then buf[0..len). */
void dsq_chunk_finish(dsq_chunk *c);
void dsq_chunk_reset(dsq_chunk *c);
void dsq_chunk_free(dsq_chunk *c);
/* The chunk of the one pair (t, v) into out; its length (at most DSQ_CHUNK_ONE_MAX). */
#define DSQ_CHUNK_ONE_MAX 64
size_t dsq_chunk_one(unsigned char *out, int64_t t, double v);

typedef struct dsq_chunk_iter {
    const unsigned char *p, *end;
    uint32_t left;    /* pairs left in the segment */
    uint8_t vmode;    /* 0..6: every value is m / 10^vmode, m delta-coded; 7: each its own;
                         8: no values (a kind's times) */
    uint8_t by_event; /* the segment's pairs are of events instead of times: the last
                         pair's is the event-th of `kind` (with fields) */
    uint8_t run;      /* ... one event after another from the header's */
    uint8_t nkinds;   /* the kinds the segment named so far, their events and steps */
    uint32_t kind;
    uint64_t event;
    uint32_t kinds[3];
    uint64_t ex[3], edx[3];
    int64_t scale;    /* times are x * scale */
    uint64_t x, dx;   /* previous scaled time (or event number) and its difference */
    uint64_t m;       /* previous mantissa (vmode < 7) */
    uint64_t bits;    /* previous value's bits (vmode 7) */
} dsq_chunk_iter;

void dsq_chunk_iter_init(dsq_chunk_iter *it, const void *data, size_t n);
/* 1 with *t and *v, 0 at the end, DSQ_EFORMAT when the chunk is damaged. A pair by
 * event has *t DSQ_TIME_NONE, it->by_event set and its event in it->event (the
 * number among it->kind's): dsq_pairs_scan looks its time up. A kind's times have
 * *v 0. */
int dsq_chunk_iter_next(dsq_chunk_iter *it, int64_t *t, double *v);

/* --- reading a series' pairs ------------------------------------------------- */

/* Reads field series' pairs with their times, looking up the times of values kept
 * by event in their kind's times series (rollup.c). Keeps its buffers between
 * series: one per query. */
typedef struct dsq_pairs dsq_pairs;
/* Up to some hundred pairs of one series at a time, in the series' order. */
typedef int (*dsq_pairs_fn)(void *ctx, const int64_t *t, const double *v, size_t n);

int dsq_pairs_new(dsq_pairs **out);
void dsq_pairs_free(dsq_pairs *pr);
/* Calls fn with the pairs of series k (rec: its summary, as scanned). with_times 0:
 * values kept by event come with DSQ_TIME_NONE (their times are not read). */
int dsq_pairs_scan(dsq_pairs *pr, dsq_store *st, const dsq_series_key *k,
                   const dsq_series_rec *rec, int with_times, dsq_pairs_fn fn, void *ctx,
                   dsq_error *err);

/* --- the builder --------------------------------------------------------------- */

typedef struct dsq_rollup dsq_rollup;

int dsq_rollup_new(dsq_store *st, dsq_rollup **out);
void dsq_rollup_free(dsq_rollup *r);

/* Starts a source of one run (forgets anything not finished). */
void dsq_rollup_begin(dsq_rollup *r, uint32_t run, uint32_t source);
/* Adds one event (its host and rank set). May write full chunks. */
int dsq_rollup_add(dsq_rollup *r, const dsq_event *ev, dsq_error *err);
/* The same with the forms of ev's fields (dsq_ev_forms of ev; borrowed). When not
 * NULL, *event is set to the event's number among its kind's events with fields
 * in its (host, rank) of the source (when it has fields), and *kept to the fields
 * whose values its series keep as they are, a bit each (not converted to another
 * unit): an event block need not hold those (dsq_block_add_ref). */
int dsq_rollup_add_forms(dsq_rollup *r, const dsq_event *ev, const dsq_num_form *forms,
                         uint64_t *event, uint32_t *kept, dsq_error *err);
/* Writes the remaining chunks, the summaries and the attributes. */
int dsq_rollup_finish(dsq_rollup *r, dsq_error *err);
/* The same in the middle of a source, before an intermediate commit (summaries
 * are rewritten by later checkpoints and finish). whole: everything so far is
 * written, as dsq_rollup_let_go needs. Else only what dropping the source needs:
 * the series that wrote chunks have their chunk and summary written; the others
 * are left in memory alone, so the index ends as one commit would leave it. */
int dsq_rollup_checkpoint(dsq_rollup *r, int whole, dsq_error *err);
/* How many series the source has in memory. */
size_t dsq_rollup_series(const dsq_rollup *r);
/* After a checkpoint was committed: lets go of the source's series (the memory
 * they take), which the index now holds. A series that comes again is read back
 * (its summary and chunk count) and goes on from there: a source of a big job
 * (thousands of ranks, each with its fields) is indexed in bounded memory. */
void dsq_rollup_let_go(dsq_rollup *r);
/* After dsq_rollup_finish: a source of many series (a big job's log, 78,000 of them:
 * a table of 35 MB and 42 MB of chunk buffers for 1 GB) lets go of the table and
 * buffers, so that they are not held through the commit and the next sources; one
 * of fewer keeps them for the next. The source's series are forgotten. */
void dsq_rollup_trim(dsq_rollup *r);
/* The bytes the builder holds for series: its table and their chunk buffers. */
size_t dsq_rollup_held(const dsq_rollup *r);

#endif
