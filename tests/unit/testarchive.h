/* Archives for the input and read-ahead tests, written with libarchive. */
#ifndef DSQ_TEST_TESTARCHIVE_H
#define DSQ_TEST_TESTARCHIVE_H

#include <archive.h>
#include <archive_entry.h>
#include <string.h>

#include "test.h"

typedef struct test_member {
    const char *name;
    const void *data;
    size_t len;
    int is_dir;
} test_member;

/* Writes members to path: format "pax", "zip" or "raw"; filter "none", "gzip", "gzip-1"
 * (fastest level), "zstd", "xz", "bzip2". Member i gets mtime 1721511005 + i * mtime_step. */
static inline void test_write_archive(const char *path, const char *format, const char *filter,
                                      const test_member *m, int n, int mtime_step)
{
    struct archive *a = archive_write_new();
    if (strcmp(format, "zip") == 0)
        archive_write_set_format_zip(a);
    else if (strcmp(format, "raw") == 0)
        archive_write_set_format_raw(a);
    else
        archive_write_set_format_pax_restricted(a);
    if (strncmp(filter, "gzip", 4) == 0) {
        archive_write_add_filter_gzip(a);
        if (strcmp(filter, "gzip-1") == 0)
            archive_write_set_filter_option(a, "gzip", "compression-level", "1");
    } else if (strcmp(filter, "zstd") == 0) {
        archive_write_add_filter_zstd(a);
    } else if (strcmp(filter, "xz") == 0) {
        archive_write_add_filter_xz(a);
    } else if (strcmp(filter, "bzip2") == 0) {
        archive_write_add_filter_bzip2(a);
    }
    CHECK_INT(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, m[i].name);
        archive_entry_set_filetype(e, m[i].is_dir ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_mtime(e, 1721511005 + (time_t)i * mtime_step, 5);
        if (!m[i].is_dir)
            archive_entry_set_size(e, (la_int64_t)m[i].len);
        CHECK_INT(archive_write_header(a, e), ARCHIVE_OK);
        if (!m[i].is_dir && m[i].len)
            CHECK_INT(archive_write_data(a, m[i].data, m[i].len), (la_ssize_t)m[i].len);
        archive_entry_free(e);
    }
    CHECK_INT(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

#endif
