/* Indexer: walks inputs, decodes them, scans lines into events and writes them.
 *
 * One input file is one unit of work: either all of a file's events are committed
 * with its source record, or none are (small files share a commit, a few dozen at a
 * time; a big one is committed in pieces, its record marked partial until the
 * last, and indexed again when a run was killed before that). An unchanged
 * file (same size, mtime and fingerprint as recorded) is skipped without being
 * decoded; a changed one has its old events dropped in the same transaction that
 * writes the new ones, so re-indexing never duplicates.
 *
 * With params.jobs > 1, worker threads decode and scan files (one file each at a
 * time) and hand batches of events to the calling thread, the only one writing the
 * index; files are written in walk order, each exactly as without workers.
 *
 * Problems with one file or member are reported through the `problem` callback and
 * counted; the rest is indexed. Only an unusable index or out-of-memory stops.
 */
#ifndef DSQ_INDEXER_H
#define DSQ_INDEXER_H

#include <stdint.h>

#include "dsq/dsq.h"
#include "store.h"

typedef struct dsq_indexer dsq_indexer;

typedef struct dsq_index_stats {
    uint64_t files_seen;
    uint64_t files_indexed;
    uint64_t files_unchanged;   /* skipped: same size, mtime and fingerprint */
    uint64_t bytes_unchanged;   /* their sizes */
    uint64_t files_failed;      /* could not be read at all */
    uint64_t other_shard;       /* run directories and files of other shards' runs, not read */
    uint64_t links_skipped;     /* symbolic links to a file indexed under another name in
                                   the walk: its own inside the walked directory, or the
                                   first link's to it from outside; and hard links to a
                                   file the walk met under another name first; not read */
    uint64_t members;
    uint64_t members_failed;    /* damaged members (what was read before is kept) */
    uint64_t bytes_in;          /* bytes of the files read */
    uint64_t bytes_decoded;     /* bytes after decompression */
    uint64_t lines;
    uint64_t cut_lines;
    uint64_t events;
    uint64_t files_ahead;       /* files decoded on a read-ahead thread, from some point */
    double seconds;
    /* Where the time went (dsq index --stats), seconds summed over the threads. With
     * workers (jobs > 1): `reading` is their time in the input's calls (opening a
     * file, finding its members, reading them: the reads and the decoding of
     * compressed bytes, or the wait for a read-ahead thread decoding them); `scanning`
     * the rest of their time on files (lines into events, batches); they waited
     * `workers_waited` for the writer to take their batches, and the writer
     * `writer_waited` for their batches. In one thread (jobs 1): `reading` alone,
     * the rest of the time is that thread's scanning and writing. `syncing`: the end's
     * wait for the index to reach the disk. These are wall-clock spans: with more
     * busy threads than cores they include time a thread waited for a core. The
     * CPU time each used: `workers_cpu` (summed), `writer_cpu` (the calling
     * thread's: the writer, or the one thread). `workers_nice`: the nice steps the
     * workers ran below the writer (threadprio.h); `worker_batches`: the batches
     * they handed to the writer (files share them: fewer than files when small). */
    unsigned workers;
    int workers_nice;
    uint64_t worker_batches;
    double reading, scanning, workers_waited, writer_waited, syncing;
    double workers_cpu, writer_cpu;
} dsq_index_stats;

typedef struct dsq_indexer_params {
    dsq_store *store;       /* borrowed; opened for writing */
    const char *run;        /* if set, every input belongs to this run */
    const char *db_dir;     /* the index directory: never indexed itself. May be NULL. */
    size_t max_line;        /* line cap, 0 = default */
    /* if shard_n > 0, only runs with dsq_shard_of(run) == shard_k are indexed
     * (shard.h); other runs' directories are not even walked (stats: other_shard) */
    uint32_t shard_k, shard_n;
    /* worker threads decoding and scanning files in parallel while this thread
     * alone writes the index; 0 or 1: none, all in the calling thread. The index
     * is the same either way (dictionary ids aside). */
    unsigned jobs;
    /* the CPUs the threads share (a worker decodes a big file ahead on a thread of
     * its own only while one is spare, see w_ahead); 0: jobs + 1 */
    unsigned cores;
    /* a file or member could not be (fully) read; err names it. May be NULL. */
    void (*problem)(void *ctx, const dsq_error *err);
    /* called after each file and during long ones (every progress_bytes decoded; 0:
     * 32 MiB); bytes_in then includes what was read so far of the file under way
     * (compressed bytes, or for a plain file the bytes scanned), so a time left can
     * be estimated inside one big file too. May be NULL. */
    void (*progress)(void *ctx, const dsq_index_stats *st, const char *path);
    uint64_t progress_bytes;
    void *ctx;
} dsq_indexer_params;

int dsq_indexer_new(const dsq_indexer_params *params, dsq_indexer **out, dsq_error *err);
void dsq_indexer_free(dsq_indexer *ix);

/* Indexes a file or a directory tree. Runs are named after the top-level entry
 * below `path` (a directory's name, or a file's name without its extensions), or
 * after `path` itself when it is a file. Returns 0 unless the index itself failed;
 * per-file problems go to the callback and the stats. */
int dsq_indexer_add(dsq_indexer *ix, const char *path, dsq_error *err);

const dsq_index_stats *dsq_indexer_stats(const dsq_indexer *ix);
/* The most numeric series one source had in memory at once: at most DSQ_SERIES_MAX
 * (default 131,072), past which they are let go of after a checkpoint. */
size_t dsq_indexer_series_peak(const dsq_indexer *ix);

/* A file or member name without its log/compression/archive extensions:
 * "run7.tar.zst" -> "run7", "gpu009.log.gz" -> "gpu009". Writes into out. */
void dsq_name_strip_ext(const char *name, char *out, size_t cap);

#endif
