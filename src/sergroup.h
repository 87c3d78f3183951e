/* How series summaries are laid out in the index's values (no LMDB here: store.c
 * keeps them in its tables).
 *
 * A summary (dsq_series_rec) is packed as: varint count, byte unit, varint
 * nchunks, zigzag varints of first_t - base and of last_t - first_t, a byte saying
 * which values repeat another, then first_v and those of last_v, sum, min and max
 * that do not, as packed numbers (varint.h): bit for bit, about 25 bytes instead of
 * the record's 72, and 12 for the many series of one value. The byte: bits 0-1 for
 * sum, 2-3 for min, 4-5 for max: 1 the same as first_v, 2 as last_v, 0 stored;
 * bit 6: last_v the same as first_v. `base` is 0 for a run rollup.
 *
 * A group is series of one (run, field) in one value (store.c keeps up to GROUP_MAX
 * in one, keyed by the first), in (host, rank, source) order: per series varint
 * host - the previous series' host (the host itself for the first), varint rank + 1,
 * varint source, varint length, then that many bytes: its summary packed with
 * base = the previous series' first_t (0 for the first), then the series' own
 * pairs (a chunk, rollup.h): all of them when it has no chunk records, else those
 * after its last chunk when they are few (schema 11). One key per group instead
 * of one per series: a small file's series were 70 % of its index, a third of it
 * keys, and the ranks of one host start logging at nearly the same time. Groups
 * span hosts (schema 13): the hosts of a job log the same fields alike, which
 * store.c's zstd of a whole record finds (a big job's series 5.7 -> ~3.3 MB).
 */
#ifndef DSQ_SERGROUP_H
#define DSQ_SERGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store.h"
#include "varint.h"

/* Bytes a packed summary takes at most. */
#define DSQ_SUMMARY_MAX (3 * DSQ_VARINT_MAX + 1 + 2 * DSQ_VARINT_MAX + 1 + 5 * DSQ_NUM_MAX)
/* Bytes a group entry's head (host, rank, source, length) takes at most. */
#define DSQ_GROUP_HEAD_MAX (4 * DSQ_VARINT_MAX)

/* Packs r into out (room for DSQ_SUMMARY_MAX); returns the bytes written. */
size_t dsq_summary_put(unsigned char *out, const dsq_series_rec *r, int64_t base);

/* Unpacks a summary from p[0..n): 0 with *r and, when pairs is not NULL, what
 * follows the summary in *pairs and *npairs (the series' own pairs, after its
 * chunks when it has any), or -1 when the bytes are damaged. */
int dsq_summary_get(const unsigned char *p, size_t n, int64_t base, dsq_series_rec *r,
                    const unsigned char **pairs, size_t *npairs);

/* Whether a and b are the same summary bit for bit (NaN and -0 included): what
 * packing and unpacking keep. */
static inline int dsq_summary_same(const dsq_series_rec *a, const dsq_series_rec *b)
{
    return a->count == b->count && a->unit == b->unit && a->nchunks == b->nchunks &&
           a->first_t == b->first_t && a->last_t == b->last_t &&
           memcmp(&a->sum, &b->sum, 8) == 0 && memcmp(&a->min, &b->min, 8) == 0 &&
           memcmp(&a->max, &b->max, 8) == 0 && memcmp(&a->first_v, &b->first_v, 8) == 0 &&
           memcmp(&a->last_v, &b->last_v, 8) == 0;
}

/* What an entry is packed against: the previous entry's host and first_t (both 0
 * before the first). */
typedef struct dsq_group_prev {
    int64_t t;
    uint32_t host;
} dsq_group_prev;

/* One series of a group. */
typedef struct dsq_group_entry {
    uint32_t host;
    int32_t rank;
    uint32_t source;
    dsq_series_rec rec;
    const unsigned char *pairs; /* its own pairs (none: npairs 0) */
    size_t npairs;
    /* dsq_group_next: the entry's bytes as stored and what they were packed
     * against; dsq_group_put copies them when that is the same (raw NULL: packs
     * the entry anew) */
    const unsigned char *raw;
    size_t raw_len;
    dsq_group_prev base;
    /* its summary's bytes within raw (then its pairs: sum_len runs to raw's end);
     * skimmed (dsq_group_skim): of rec, only first_t was read */
    const unsigned char *sum;
    size_t sum_len;
    int skimmed;
} dsq_group_entry;

/* Walks a group's entries in order. */
typedef struct dsq_group_iter {
    const unsigned char *p, *end;
    dsq_group_prev prev; /* the base of the next entry */
} dsq_group_iter;

void dsq_group_iter_init(dsq_group_iter *it, const void *data, size_t n);
/* 1 with *e (its pairs and raw bytes point into the group's bytes), 0 at the end,
 * -1 when the rest of the group is damaged. */
int dsq_group_next(dsq_group_iter *it, dsq_group_entry *e);

/* dsq_group_next that reads of each summary only first_t, which the next entry's
 * base needs (e->skimmed set, the rest of e->rec 0): for a writer that puts entries
 * back as they are (dsq_group_put copies or rebases their bytes) and reads few
 * summaries (dsq_group_entry_rec). The values are not checked here. */
int dsq_group_skim(dsq_group_iter *it, dsq_group_entry *e);

/* e's whole summary into *r (a skimmed entry's read now): 0, or -1 when damaged. */
int dsq_group_entry_rec(const dsq_group_entry *e, dsq_series_rec *r);

/* The key of a group's last entry (host, rank, source) read off the entries' heads
 * alone, and their count: 1, or 0 when the group is empty or damaged. */
int dsq_group_last(const void *data, size_t n, uint32_t *host, int32_t *rank, uint32_t *source,
                   size_t *count);

/* Appends entry e after the entry *prev says ({0, 0} for the first) and sets
 * *prev to e's; out needs room for DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX +
 * e->npairs bytes (an entry read from a group: its raw_len + DSQ_GROUP_HEAD_MAX +
 * DSQ_VARINT_MAX). An entry read from a group keeps its bytes, copied as they are
 * when *prev is its base, else with its head and its summary's first_t written
 * against *prev. Returns the end of what was written. */
unsigned char *dsq_group_put(unsigned char *out, dsq_group_prev *prev, const dsq_group_entry *e);

#endif
