/* The index: the only module that touches LMDB.
 *
 * One LMDB environment (a directory) holds these databases:
 *   meta      "schema" -> version, "next_source" -> next source id
 *   dict      id (u32 BE) -> string                 the string dictionary
 *   events    block key (28 bytes BE) -> event block, in columns (see event.h)
 *   sources   absolute path -> dsq_source_rec (packed: store.c)   one per input file
 *   members   source id, member index (BE) -> dsq_member_rec + name
 *   srcblocks source id, block seq (BE) -> block key   so a source can be dropped
 *   series    run, field, host, rank + 1, source (BE) of its first series -> a
 *             group of up to 256 series of that (run, field), in (host, rank,
 *             source) order: per series, its dsq_series_rec and a small series'
 *             pairs (a chunk, rollup.h), or a chunked one's few pairs after its
 *             last chunk, packed (sergroup.h); a record of 1.5 kB or more packed by
 *             zstd when that is shorter (store.c, write_groups)
 *   chunks    series key (run, field, host, rank + 1, source), chunk seq (BE) ->
 *             the values of that series with their events (or times), or a
 *             kind's times (rollup.c)
 *   runroll   field, run (BE) -> dsq_series_rec (packed)   the merge of the run's series of
 *             that field; an empty value while it is stale (a write touched the run
 *             and the run has not gone quiet yet: readers merge the series instead)
 *   attrs     run, name, source (BE) -> dsq_attr_rec   latest run attribute per source
 *   srcroll   source id (BE) -> its rollup keys: 'S' field run host rank | 'A' run
 *             name, one after another, packed (one record per source: for dropping)
 * Block keys are run/host/rank/time/source/seq, big-endian, so one run (or one
 * run's host, or rank) is a contiguous key range and keys sort by time within it.
 *
 * Writers take an exclusive lock file in the directory (a second indexer is refused
 * with a clear message); readers open the environment read-only and read one
 * snapshot (a read transaction held from open to close), committed data only.
 * All writes of one input file go into one transaction, so a killed
 * indexer leaves either all of a file or none of it. Commits are written to the
 * operating system at once but synced to disk at most SYNC_SECONDS apart and at
 * dsq_store_sync/close (one fsync per small file was most of the indexing time): a
 * killed process loses nothing committed; a machine crash can lose the last second
 * of commits, which the next run redoes like any file not yet indexed.
 */
#ifndef DSQ_STORE_H
#define DSQ_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "dict.h"
#include "dsq/dsq.h"
#include "event.h"

/* 3: rollup chunks encoded anew (rollup.c), block shapes (event.c), series values
 * packed, one srcroll record per source; 4: a small series' pairs in its record,
 * srcroll records listing fields and (host, rank) pairs, summaries and source
 * records packed; 5: series in groups, records of up to 64 series of one (field, run, host);
 * 6: run rollups marked stale (empty) until their run goes quiet; 7: event blocks stored
 * in columns (event.h); 8: a field's values name their event, whose time its kind's count
 * series keeps (DSQ_SERIES_TIMES_BASE, rollup.c); 11: a chunked series' few pairs
 * after its last chunk kept in its record (dsq_store_series_put); 12: series and chunk
 * keys run first (a new run's are appended: store.c, series_key_pack); 13: series
 * groups span the hosts of a (run, field), records of 256 bytes and more packed by
 * zstd (sergroup.h, store.c write_groups) */
#define DSQ_STORE_SCHEMA 13
#define DSQ_BLOCK_KEY_LEN 28
#define DSQ_REC_FAMILIES 32
#define DSQ_REC_LEVELS 8

typedef struct dsq_store dsq_store;

typedef struct dsq_store_params {
    const char *dir;  /* the environment directory; created by writers if missing */
    int readonly;     /* 1: open for queries (no lock file, no writes) */
    int sync_behind;  /* writers: 1 has the periodic syncs run on a thread of their own
                         (syncer.h), 0 waits for each (one thread does everything) */
} dsq_store_params;

typedef struct dsq_block_key {
    uint32_t run, host;
    int32_t rank;    /* -1 unknown */
    int64_t t_us;    /* time of the block's first event */
    uint32_t source, seq;
} dsq_block_key;

/* A series: one numeric field (a dictionary id), or DSQ_SERIES_KIND_BASE + event
 * kind for the count of that kind's events, in one run/host/rank/source. */
#define DSQ_SERIES_KIND_BASE 0xFF000000u
/* DSQ_SERIES_TIMES_BASE + event kind: the times of that kind's events with fields
 * (rollup.c), a series of their count and span whose pairs are times; no run
 * rollup. Apart from the kinds' count series, which counting queries read. */
#define DSQ_SERIES_TIMES_BASE 0xFF800000u
#define DSQ_SERIES_KEY_LEN 20
#define DSQ_GROUP_PREFIX_LEN 8 /* run, field: what a series group record shares */

typedef struct dsq_series_key {
    uint32_t field, run, host;
    int32_t rank;
    uint32_t source;
} dsq_series_key;

/* A series' summary. Times are DSQ_TIME_NONE-aware: a value without a time sorts
 * first. Values are in `unit` (the unit of the first value; later values of the
 * same unit family are converted to it). */
typedef struct dsq_series_rec {
    uint64_t count;
    double sum, min, max, first_v, last_v;
    int64_t first_t, last_t;
    uint32_t nchunks;
    uint8_t unit;
    uint8_t pad[3];
} dsq_series_rec;

/* The latest value of one run attribute in one source. */
typedef struct dsq_attr_rec {
    int64_t t;
    double num;
    uint32_t text;   /* dictionary id of the value as printed */
    uint8_t is_num;
    uint8_t pad[3];
} dsq_attr_rec;

/* One indexed input file (a plain file, a compressed file or an archive). */
typedef struct dsq_source_rec {
    uint32_t version;
    uint32_t id;
    uint32_t run;          /* dictionary id */
    uint32_t members;      /* members read (1 for a plain or single compressed file) */
    uint64_t size;         /* bytes on disk */
    int64_t mtime_ns;
    uint64_t fingerprint;  /* hash of size, first and last 4 KiB (input.c) */
    uint64_t bytes_decoded;
    uint64_t lines;
    uint64_t cut_lines;
    uint64_t events;
    uint32_t nblocks;
    uint32_t errors;       /* members or reads that failed */
    uint32_t flags;        /* DSQ_SRC_PARTIAL: committed in part; redo it */
    uint64_t family_lines[DSQ_REC_FAMILIES];
    uint64_t level_lines[DSQ_REC_LEVELS];
} dsq_source_rec;

/* A source being indexed in several commits carries this flag until its last
 * commit; a killed indexer leaves it, and the next run redoes the source. */
#define DSQ_SRC_PARTIAL 1u

/* One member of a source (for a plain file: the file itself, name ""). */
typedef struct dsq_member_rec {
    uint64_t size;         /* decoded bytes */
    int64_t mtime_ns;      /* the member's own mtime in an archive, else the file's */
    uint64_t fingerprint;  /* hash of the member's first 4 KiB and its size (schema 13) */
    uint64_t lines;
    uint64_t events;
    uint32_t status;       /* 0 ok, else the DSQ_E* code that stopped it (negated) */
    uint32_t name_len;
} dsq_member_rec;

int dsq_store_open(const dsq_store_params *params, dsq_store **out, dsq_error *err);
void dsq_store_close(dsq_store *st);

/* Compaction. LMDB puts each rewritten page wherever a free page is, so after many
 * writes the small tables queries read (run rollups, the dictionary) are spread
 * over the whole file and a query faults in pages from all of it. A compacted copy
 * lays every table out in key order.
 *
 * note_growth (writers, outside a transaction) adds what data.mdb grew since open
 * to the growth recorded since the last compaction. When that growth reaches
 * DSQ_COMPACT_GROWTH_PCT of the file and the file is at least DSQ_COMPACT_MIN_BYTES
 * (env DSQ_COMPACT_MIN_BYTES overrides; small indexes gain nothing), it reads the
 * headers of the pages in use to size a compacted copy: *due is set when the copy
 * would be at least DSQ_COMPACT_GAIN_PCT smaller, else the growth counts from zero
 * again (a fresh
 * index of new runs, appended, is packed nearly as a copy: on the bench's 1000-run
 * archive 74.8 MB, a copy 68.6 MB, sized at 68.1 MB in 9 ms). DSQ_COMPACT_TRACE
 * prints the sizes. compact copies the index compactly
 * beside itself (needs free disk space for the copy), then swaps it in under the
 * writer lock; queries running meanwhile keep reading the old file. Killed at any
 * moment, it leaves the old index or the new one. */
#define DSQ_COMPACT_GROWTH_PCT 20
#define DSQ_COMPACT_GAIN_PCT 15
#define DSQ_COMPACT_MIN_BYTES (64ull << 20)
int dsq_store_note_growth(dsq_store *st, int *due, dsq_error *err);
int dsq_store_compact(const char *dir, uint64_t *before, uint64_t *after, dsq_error *err);

/* The dictionary: loaded at open; writers intern into it and new strings are
 * saved at the next commit. Borrowed; valid until close. */
dsq_dict *dsq_store_dict(dsq_store *st);

/* Looks up a source by absolute path. Returns 1 found (rec filled), 0 absent, <0 error. */
int dsq_store_source_find(dsq_store *st, const char *path, dsq_source_rec *rec, dsq_error *err);

/* --- writing: begin, any puts, commit or abort -------------------------------- */
int dsq_store_begin(dsq_store *st, dsq_error *err);
/* Removes a source with its blocks and members. Absent is fine. */
int dsq_store_source_drop(dsq_store *st, const char *path, dsq_error *err);
/* Allocates a new source id. */
int dsq_store_source_new_id(dsq_store *st, uint32_t *id, dsq_error *err);
int dsq_store_block_put(dsq_store *st, const dsq_block_key *k, const dsq_block *b, dsq_error *err);
int dsq_store_member_put(dsq_store *st, uint32_t source, uint32_t idx, const dsq_member_rec *rec,
                         const char *name, dsq_error *err);
int dsq_store_source_put(dsq_store *st, const char *path, const dsq_source_rec *rec,
                         dsq_error *err);
/* Rollups (see rollup.h). Series and attributes of one source are put, then
 * dsq_store_rollups_put records all their keys under the source (for dropping)
 * and has the run rollups of their fields brought up to date (marked stale at the
 * commit, recomputed once the run goes quiet: dsq_store_runroll_update); each call
 * of it replaces the record with what was put since the source's last
 * dsq_store_rollups_put. dsq_store_rollups_checkpoint does the same in the middle
 * of a source, and keeps its keys (also across commits): the next record lists
 * them too, whether or not their series are put again (rollup.h,
 * dsq_rollup_let_go). dsq_store_abort forgets them. */
/* A series' pairs are in its nchunks chunk records (dsq_store_chunk_put), in that
 * order, then in its own record: the chunk `pairs` (n > 0; schema 11: also after
 * chunks, the few pairs after the last, which spares a chunk record each time a
 * checkpoint or the end of a source comes), or nothing; with nchunks 0 and n 0 a
 * field series has one value (its pair is (first_t, first_v)). */
int dsq_store_series_put(dsq_store *st, const dsq_series_key *k, const dsq_series_rec *rec,
                         const void *pairs, size_t n, dsq_error *err);
int dsq_store_chunk_put(dsq_store *st, const dsq_series_key *k, uint32_t seq, const void *data,
                        size_t n, dsq_error *err);
int dsq_store_attr_put(dsq_store *st, uint32_t run, uint32_t name, uint32_t source,
                       const dsq_attr_rec *rec, dsq_error *err);
int dsq_store_rollups_put(dsq_store *st, uint32_t source, dsq_error *err);
int dsq_store_rollups_checkpoint(dsq_store *st, uint32_t source, dsq_error *err);
/* Has the run rollup of (field, run) brought up to date with that run's series:
 * the next commit marks it stale (once, however many sources of the run asked),
 * the first later commit that does not touch it, or dsq_store_settle, recomputes
 * it (removed when no series is left). Readers of a stale one merge the series
 * themselves, the same way. 0 or DSQ_ENOMEM. */
int dsq_store_runroll_update(dsq_store *st, uint32_t field, uint32_t run, dsq_error *err);
/* (nothing for a kind's times: DSQ_SERIES_TIMES_BASE and up) */
/* Recomputes the run rollups still marked stale (store.c, settle_runrolls) in a write
 * of its own; writers call it when they are done (the indexer, prune). Without it
 * the index answers the same, reading those runs' series, until a writer settles. */
int dsq_store_settle(dsq_store *st, dsq_error *err);
/* Commits, saving new dictionary strings first. When the map is full the write is
 * aborted, the map grown, and DSQ_ELIMIT returned so the caller redoes its work. */
int dsq_store_commit(dsq_store *st, dsq_error *err);
void dsq_store_abort(dsq_store *st);
/* 1 while a write transaction is open. */
int dsq_store_writing(const dsq_store *st);
/* Writes committed since open (tests check that small files share commits). */
uint64_t dsq_store_commits(const dsq_store *st);
/* Times the LMDB environment was closed and opened again after a big write, which
 * gives back the pages LMDB keeps from it (DSQ_REOPEN_PUTS: the puts that make a
 * write big; tests). */
uint64_t dsq_store_reopens(const dsq_store *st);
/* Parts: while on, the open write is committed every few thousand chunk records
 * (DSQ_PART_PUTS: how many; tests) and goes on in a new one, so that the pages it
 * holds stay few; the commit turns them off. Readers between parts see the index of
 * the last commit, with some chunk records more that no record counts yet (a
 * series' pairs are in the nchunks chunks its record counts, which they read), and
 * no event blocks: those wait for the commit. The caller turns them on only when
 * the write holds nothing else a reader could see half done (the indexer: a big
 * file's checkpoint, once the file's first is committed). */
void dsq_store_parts(dsq_store *st, int on);
/* Parts committed since open (tests). */
uint64_t dsq_store_parts_committed(const dsq_store *st);
/* Times the series waiting for the commit were written into their groups before it
 * because they took many bytes (store.c, SER_FLUSH_BYTES), since open (tests). */
uint64_t dsq_store_series_flushes(const dsq_store *st);
/* Syncs committed writes to disk (a full disk or I/O error is reported here). */
int dsq_store_sync(dsq_store *st, dsq_error *err);

/* --- reading ------------------------------------------------------------------ */
/* Called for each block; a non-zero return stops the scan and is returned. */
typedef int (*dsq_store_block_fn)(void *ctx, const dsq_block_key *k, const void *data, size_t n);
/* Scans blocks of one run (run != 0) or all of them, in key order. */
int dsq_store_scan_blocks(dsq_store *st, uint32_t run, dsq_store_block_fn fn, void *ctx,
                          dsq_error *err);

/* Series with field in [field_lo, field_hi] (and of one run when run != 0), in key
 * order: run, field, host, rank, source. */
typedef int (*dsq_store_series_fn)(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec);
int dsq_store_scan_series(dsq_store *st, uint32_t field_lo, uint32_t field_hi, uint32_t run,
                          dsq_store_series_fn fn, void *ctx, dsq_error *err);
/* Run rollups with field in [field_lo, field_hi] (one run's when run != 0, which
 * needs field_lo == field_hi); the key's host is 0, rank -1, source 0. */
int dsq_store_scan_runroll(dsq_store *st, uint32_t field_lo, uint32_t field_hi, uint32_t run,
                           dsq_store_series_fn fn, void *ctx, dsq_error *err);
/* The pairs of one series (rec: its summary, as scanned; NULL: looked up), chunk
 * by chunk in order, its own pairs last (one chunk more); a series kept in its
 * record gives one chunk. A kind's count
 * series gives the times of its events with fields (rollup.c). Readers of field
 * series go through dsq_pairs_scan (rollup.h), which finds their times. */
typedef int (*dsq_store_chunk_fn)(void *ctx, const void *data, size_t n);
int dsq_store_scan_chunks(dsq_store *st, const dsq_series_key *k, const dsq_series_rec *rec,
                          dsq_store_chunk_fn fn, void *ctx, dsq_error *err);
/* One series looked up by key: its summary and, when it keeps some in its record,
 * its own pairs copied into *pairs (*npairs 0 when none; *pairs grows, *cap its
 * room). 1 found, 0 not in the index, or an error. */
int dsq_store_series_get(dsq_store *st, const dsq_series_key *k, dsq_series_rec *rec,
                         unsigned char **pairs, size_t *npairs, size_t *cap, dsq_error *err);
/* Chunk seq (0 first) of series k, unpacked, copied into *buf the same way: 1, 0
 * when there is none, or an error. */
int dsq_store_chunk_get(dsq_store *st, const dsq_series_key *k, uint32_t seq, unsigned char **buf,
                        size_t *n, size_t *cap, dsq_error *err);
typedef int (*dsq_store_attr_fn)(void *ctx, uint32_t run, uint32_t name, uint32_t source,
                                 const dsq_attr_rec *rec);
int dsq_store_scan_attrs(dsq_store *st, dsq_store_attr_fn fn, void *ctx, dsq_error *err);

typedef int (*dsq_store_source_fn)(void *ctx, const char *path, const dsq_source_rec *rec);
int dsq_store_scan_sources(dsq_store *st, dsq_store_source_fn fn, void *ctx, dsq_error *err);

/* Tests: n random keys of waiting series (part j of (run, field, host, rank + 1,
 * source) among span[j] values, one when 0; fields and the kinds' pseudo-fields
 * mixed) sorted by the commit's radix sort and by
 * its merge sort: 1 when both give the same order, 0 when the keys are too wide
 * for the radix sort (it declines), -1 when they differ or memory ran out. */
int dsq_store_sort_check(size_t n, uint64_t seed, const uint32_t span[5]);

void dsq_block_key_pack(const dsq_block_key *k, unsigned char out[DSQ_BLOCK_KEY_LEN]);
void dsq_block_key_unpack(const unsigned char *in, dsq_block_key *k);

#endif
