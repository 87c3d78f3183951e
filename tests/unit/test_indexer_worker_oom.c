/* A worker thread that runs out of memory on a file stops the indexing with an
 * error, as the writer learns from that file's end: the batch holding the end is
 * sent though files share batches (a worker used to leave it unsent and the writer
 * waited for it forever). Memory runs out for real: this program's realloc
 * (alloc_count.h) fails for big blocks in any thread but the test's own once armed,
 * and a file of many field names grows a worker's dictionary past that size.
 * alarm() turns a hang into a failure. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsq/dsq.h"
#include "indexer.h"
#include "test.h"
#include "tmpdir.h"
#include "alloc_count.h"

static pthread_t test_thread;
static volatile int armed;           /* realloc fails for blocks this big, or 0 */
static volatile unsigned long failed; /* reallocs refused */

static int refuse(size_t n)
{
    if (!armed || n < (size_t)armed || pthread_equal(pthread_self(), test_thread))
        return 0;
    failed++;
    return 1;
}

static char tmp[64];

/* HF Trainer dicts of `fields` field names, one each: every name a string of the
 * worker's dictionary. */
static void write_fields_log(const char *rel, int fields)
{
    size_t cap = (size_t)fields * 48, n = 0;
    char *text = malloc(cap);
    CHECK(text != NULL);
    if (!text)
        return;
    for (int i = 0; i < fields; i++)
        n += (size_t)snprintf(text + n, cap - n, "{'k%06d': 1.5, 'epoch': %d.0}\n", i, i);
    CHECK_INT(test_write_file(tmp, rel, text, n), 0);
    free(text);
}

/* Indexes dir with two workers, realloc armed at `limit` bytes (0: not armed).
 * Returns dsq_indexer_add's status. */
static int index_dir(const char *dir, int limit, dsq_error *err)
{
    char db[256], path[256];
    snprintf(db, sizeof db, "%s/db-%d", tmp, limit);
    snprintf(path, sizeof path, "%s/%s", tmp, dir);
    dsq_store_params sp = {db, 0, 0};
    dsq_store *st = NULL;
    dsq_indexer *ix = NULL;
    dsq_error_clear(err);
    int rc = dsq_store_open(&sp, &st, err);
    CHECK_INT(rc, 0);
    if (rc)
        return rc;
    dsq_indexer_params ip = {.store = st, .db_dir = db, .jobs = 2};
    rc = dsq_indexer_new(&ip, &ix, err);
    CHECK_INT(rc, 0);
    if (!rc) {
        armed = limit;
        rc = dsq_indexer_add(ix, path, err);
        armed = 0;
    }
    dsq_indexer_free(ix);
    dsq_store_close(st);
    return rc;
}

static void test_worker_out_of_memory_stops_with_an_error(void)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/logs", tmp);
    CHECK_INT(mkdir(dir, 0755), 0);
    /* small files around the big one: the end of a file shares its batch */
    for (int i = 0; i < 8; i++) {
        char rel[64], line[128];
        snprintf(rel, sizeof rel, "logs/a%d.log", i);
        int n = snprintf(line, sizeof line, "[2024-07-20 21:30:05,202] [INFO] step %d\n", i);
        CHECK_INT(test_write_file(tmp, rel, line, (size_t)n), 0);
    }
    write_fields_log("logs/b-fields.log", 200000);
    dsq_error err;
    /* unarmed: the files index */
    CHECK_INT(index_dir("logs", 0, &err), 0);
    /* armed: the worker on the many names' file runs out of memory, and says so */
    failed = 0;
    alarm(120); /* a writer waiting forever for that file's end fails here */
    int rc = index_dir("logs", 1 << 20, &err);
    alarm(0);
    CHECK(failed > 0);
    CHECK(rc != 0);
    CHECK(strstr(err.msg, "an indexing thread stopped") != NULL);
    CHECK(strstr(err.msg, dsq_strerror(DSQ_ENOMEM)) != NULL);
}

static void test_setup(void)
{
    test_thread = pthread_self();
    realloc_refuse = refuse;
    CHECK_INT(test_tmpdir_new(tmp), 0);
}

static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_worker_out_of_memory_stops_with_an_error), T(test_teardown))
