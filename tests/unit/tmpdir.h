/* Temporary directories for unit tests: made with mkdtemp under /tmp, removed with
 * everything in them when the test is done. */
#ifndef DSQ_TEST_TMPDIR_H
#define DSQ_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Makes a fresh directory; dir must hold 64 bytes. Returns 0 or -1. */
static inline int test_tmpdir_new(char *dir)
{
    snprintf(dir, 64, "/tmp/dsq-unit-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static inline int test_tmpdir_rm1(const char *path, const struct stat *sb, int type,
                                  struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    return remove(path);
}

/* Removes dir and everything below it (only ever under /tmp/dsq-unit-). */
static inline void test_tmpdir_remove(const char *dir)
{
    if (strncmp(dir, "/tmp/dsq-unit-", 14) == 0)
        nftw(dir, test_tmpdir_rm1, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes n bytes to dir/name; returns 0 or -1. */
static inline int test_write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

#endif
