/* A file's data written to disk in the background (fdatasync on a thread of its own).
 *
 * The index's writer syncs its commits a second apart (store.c); an fdatasync takes
 * 1-25 ms on this project's machines, and while the writer waited for it the
 * workers' queues filled and every thread stood still (the bench archive: five such
 * waits, ~80 ms of a ~1 s run). With a syncer the writer asks for the sync and goes
 * on; the sync covers what was written before it began, as a synchronous one would.
 * Each sync opens the file by its path, so a file replaced since (a compaction) is
 * the one synced. The thread starts at the first request.
 */
#ifndef DSQ_SYNCER_H
#define DSQ_SYNCER_H

typedef struct dsq_syncer dsq_syncer;

/* A syncer of the file at path (copied). 0 or DSQ_ENOMEM. */
int dsq_syncer_new(const char *path, dsq_syncer **out);
/* Waits for a sync under way, stops the thread and frees (NULL: nothing). */
void dsq_syncer_free(dsq_syncer *s);

/* Begins a sync in the background: 1 when it began, 0 when one is still under way
 * (nothing more is asked). Without a thread (it could not start), the sync is done
 * here before returning 1. */
int dsq_syncer_begin(dsq_syncer *s);
/* Waits until no sync is under way. */
void dsq_syncer_wait(dsq_syncer *s);
/* The errno of the first sync that failed since the last call (or open), else 0;
 * does not wait. */
int dsq_syncer_error(dsq_syncer *s);

#endif
