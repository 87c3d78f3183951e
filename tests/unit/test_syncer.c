/* dsq_syncer: a sync begins in the background and is waited for; one asked while
 * another is under way is not begun; a failed sync's errno is reported once; the
 * file is opened by its path at each sync; free waits and stops the thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syncer.h"
#include "test.h"

static void make_file(const char *path)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("some data\n", f);
        fclose(f);
    }
}

/* A new empty file's name in path (a mkstemp template). */
static void make_temp(char *path)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
}

static void test_sync_begins_and_is_waited_for(void)
{
    char path[] = "/tmp/dsq-test-syncer-XXXXXX";
    make_temp(path);
    make_file(path);
    dsq_syncer *s = NULL;
    CHECK_INT(dsq_syncer_new(path, &s), 0);
    CHECK_INT(dsq_syncer_error(s), 0);
    CHECK_INT(dsq_syncer_begin(s), 1);
    /* a second one now is begun only if the first already ended */
    int again = dsq_syncer_begin(s);
    CHECK(again == 0 || again == 1);
    dsq_syncer_wait(s);
    CHECK_INT(dsq_syncer_error(s), 0);
    CHECK_INT(dsq_syncer_begin(s), 1); /* nothing under way after the wait */
    dsq_syncer_free(s);
    unlink(path);
}

static void test_failed_sync_is_reported_once(void)
{
    dsq_syncer *s = NULL;
    CHECK_INT(dsq_syncer_new("/nonexistent/dsq-test-syncer/data.mdb", &s), 0);
    CHECK_INT(dsq_syncer_begin(s), 1);
    dsq_syncer_wait(s);
    CHECK_INT(dsq_syncer_error(s), ENOENT);
    CHECK_INT(dsq_syncer_error(s), 0);
    dsq_syncer_free(s);
}

static void test_file_replaced_is_synced_by_path(void)
{
    char path[] = "/tmp/dsq-test-syncer-XXXXXX";
    make_temp(path);
    dsq_syncer *s = NULL;
    CHECK_INT(dsq_syncer_new(path, &s), 0);
    unlink(path); /* gone: the sync fails */
    CHECK_INT(dsq_syncer_begin(s), 1);
    dsq_syncer_wait(s);
    CHECK_INT(dsq_syncer_error(s), ENOENT);
    make_file(path); /* there again (a compaction's new file): synced */
    CHECK_INT(dsq_syncer_begin(s), 1);
    dsq_syncer_wait(s);
    CHECK_INT(dsq_syncer_error(s), 0);
    dsq_syncer_free(s);
    unlink(path);
}

static void test_free_without_a_sync(void)
{
    dsq_syncer *s = NULL;
    CHECK_INT(dsq_syncer_new("/tmp/never-synced", &s), 0);
    dsq_syncer_wait(s); /* no thread, nothing under way: returns */
    dsq_syncer_free(s);
    dsq_syncer_free(NULL);
}

TEST_MAIN(T(test_sync_begins_and_is_waited_for), T(test_failed_sync_is_reported_once),
          T(test_file_replaced_is_synced_by_path), T(test_free_without_a_sync))
