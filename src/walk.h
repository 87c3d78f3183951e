/* Walking inputs: a file, or a directory tree in name order.
 *
 * Directories are read in name order (strcoll, as scandir's alphasort: runs are
 * indexed in a stable order), symlinked directories are not followed (no loops), symlinks to
 * files are, and a directory that cannot be read, a dangling link, and a link to
 * the directory it sits in or one above it (a loop) are reported to `problem`
 * without stopping the walk.
 */
#ifndef DSQ_WALK_H
#define DSQ_WALK_H

#include <stdint.h>
#include <sys/stat.h>

#include "dsq/dsq.h"

typedef struct dsq_walk_params {
    /* a regular file: full path, its path relative to the root ("" when the root
     * itself is the file), whether the name is a symbolic link to it (-1: not
     * known, the root) and the file's stat as the walk found it (a link's target's;
     * NULL when the root could not be stat'ed). A non-zero return stops the walk. */
    int (*file)(void *ctx, const char *full, const char *rel, int link, const struct stat *sb);
    /* something could not be walked; err names it (file filled). May be NULL. */
    void (*problem)(void *ctx, const dsq_error *err);
    void *ctx;
    const char *skip_dir;  /* a directory never entered (the same device and inode), e.g. the
                              index. May be NULL. */
    /* a directory about to be entered (rel: its path below the root); non-zero
     * skips it and everything below. May be NULL. */
    int (*enter)(void *ctx, const char *full, const char *rel);
    /* May be NULL: work on a regular file that the walk may do before `file` is
     * called for it; what it returns (0: nothing) is in *note_out while `file` runs
     * for that file. dsq_walk calls it for every file; dsq_walk_ahead, on its thread,
     * only while it is ahead of the callbacks (some of its files wait), so that a
     * caller that keeps up does the work itself. Takes the file's arguments. */
    uint64_t (*note)(void *ctx, const char *full, const struct stat *sb);
    uint64_t *note_out;
} dsq_walk_params;

/* Walks path. Returns 0 or what a callback returned. */
int dsq_walk(const dsq_walk_params *p, const char *path);

/* The same, the directories read and their entries stat'ed on a thread of its own
 * ahead of the callbacks: `file` and `problem` are called on the caller's thread,
 * in the same order with the same arguments as dsq_walk's, `enter` on the walk's
 * thread (it must not touch what the other callbacks do). A `file` that returns
 * non-zero stops the walk there, as in dsq_walk. Falls back to dsq_walk when no
 * thread can be started. */
int dsq_walk_ahead(const dsq_walk_params *p, const char *path);

#endif
