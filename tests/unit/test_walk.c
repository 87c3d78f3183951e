/* The walk (src/walk.h): dsq_walk_ahead, which reads the tree on a thread of its
 * own, calls back exactly as dsq_walk does (the same files and problems, in the
 * same order, with the same paths, link flags and stats, the same directories
 * entered) on trees with nested directories, thousands of files (more than the
 * thread hands over at once), links to files and directories, a dangling link, a
 * link to an ancestor, a directory to skip and one the enter callback refuses; and
 * a file callback that stops the walk after k files stops both after the same k
 * with the same status. The note a file gets is its note callback's (dsq_walk: for
 * every file; dsq_walk_ahead: when it was ahead, else none). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "tmpdir.h"
#include "walk.h"

/* What the callbacks saw, one line each. */
typedef struct trace {
    char *buf;
    size_t len, cap;
    long files, stop_at;
    int stop_status;
    uint64_t note;    /* note_out */
    long noted, bad_notes; /* files with a note, with another than their own */
} trace;

static void say(trace *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 2 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        while (cap < t->len + n + 2)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            test_failures++;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len++] = '\n';
    t->buf[t->len] = 0;
}

static int on_file(void *ctx, const char *full, const char *rel, int link, const struct stat *sb)
{
    trace *t = ctx;
    char line[8192];
    if (t->note) {
        t->noted++;
        t->bad_notes += !sb || t->note != (uint64_t)sb->st_ino * 3 + (uint64_t)sb->st_size;
    }
    snprintf(line, sizeof line, "file %s | %s | %d | %lld %lld", full, rel, link,
             sb ? (long long)sb->st_size : -1LL, sb ? (long long)sb->st_ino : -1LL);
    say(t, line);
    return ++t->files == t->stop_at ? t->stop_status : 0;
}

static void on_problem(void *ctx, const dsq_error *err)
{
    char line[8192];
    snprintf(line, sizeof line, "problem %s: %s", err->file, err->msg);
    say(ctx, line);
}

/* Refuses directories named "no" (called on the walk's thread by dsq_walk_ahead:
 * it only reads its arguments). */
static int on_enter(void *ctx, const char *full, const char *rel)
{
    (void)ctx;
    (void)full;
    const char *base = strrchr(rel, '/');
    return strcmp(base ? base + 1 : rel, "no") == 0;
}

/* The note of a file (on the walk's thread with dsq_walk_ahead): never 0. */
static uint64_t on_note(void *ctx, const char *full, const struct stat *sb)
{
    (void)ctx;
    (void)full;
    return (uint64_t)sb->st_ino * 3 + (uint64_t)sb->st_size;
}

static int walk_with(int ahead, const char *root, const char *skip, long stop_at, trace *t)
{
    memset(t, 0, sizeof *t);
    t->stop_at = stop_at;
    t->stop_status = 7;
    dsq_walk_params p = {.file = on_file, .problem = on_problem, .ctx = t, .skip_dir = skip,
                         .enter = on_enter, .note = on_note, .note_out = &t->note};
    return ahead ? dsq_walk_ahead(&p, root) : dsq_walk(&p, root);
}

static int make_tree(const char *root, int nfiles)
{
    char path[4096];
    static const char *const dirs[] = {"a", "a/b", "a/b/c", "big", "no", "skip", "z"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        if (mkdir(path, 0755) != 0)
            return -1;
    }
    char name[64];
    for (int i = 0; i < nfiles; i++) {
        snprintf(name, sizeof name, "big/f%05d.log", (i * 7919) % nfiles);
        if (test_write_file(root, name, "x\nyz", 2 + (size_t)(i % 3)) != 0) /* sizes 2-4 */
            return -1;
    }
    static const char *const files[] = {"a/one.log", "a/b/two.log", "a/b/c/three.log",
                                        "no/hidden.log", "skip/hidden.log", "z/last.log",
                                        "top.log"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        if (test_write_file(root, files[i], "y\n", 2) != 0)
            return -1;
    struct {
        const char *target, *link;
    } links[] = {{"one.log", "a/link-to-file.log"}, {"missing.log", "a/dangling.log"},
                 {"..", "a/b/up"},                  {"../z", "a/to-dir"}};
    for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
        snprintf(path, sizeof path, "%s/%s", root, links[i].link);
        if (symlink(links[i].target, path) != 0)
            return -1;
    }
    return 0;
}

static void test_ahead_calls_back_as_walk(void)
{
    char root[64], skip[128];
    CHECK_INT(test_tmpdir_new(root), 0);
    CHECK_INT(make_tree(root, 3000), 0);
    snprintf(skip, sizeof skip, "%s/skip", root);
    trace a, b;
    int ra = walk_with(0, root, skip, -1, &a), rb = walk_with(1, root, skip, -1, &b);
    CHECK_INT(ra, 0);
    CHECK_INT(rb, 0);
    CHECK(a.buf && b.buf && strcmp(a.buf, b.buf) == 0);
    CHECK_INT(a.files, 3000 + 5 + 1); /* big/, the four files walked, the link to a file */
    CHECK(strstr(a.buf, "dangling.log") && strstr(a.buf, "up: symbolic link loop"));
    CHECK(!strstr(a.buf, "hidden.log"));
    CHECK_INT(a.noted, a.files); /* dsq_walk: every file noted */
    CHECK_INT(a.bad_notes, 0);
    CHECK_INT(b.bad_notes, 0); /* ahead: some, each its own */
    CHECK(b.noted <= b.files);
    free(a.buf);
    free(b.buf);
    /* stopped by the file callback after k files: the same files, the same status */
    static const long ks[] = {1, 2, 63, 64, 65, 1000, 2048, 3005, 3006};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        ra = walk_with(0, root, skip, ks[i], &a);
        rb = walk_with(1, root, skip, ks[i], &b);
        CHECK_INT(ra, 7);
        CHECK_INT(rb, 7);
        CHECK_INT(b.files, ks[i]);
        if (!(a.buf && b.buf && strcmp(a.buf, b.buf) == 0)) {
            fprintf(stderr, "stopped after %ld files: the calls differ\n", ks[i]);
            test_failures++;
        }
        free(a.buf);
        free(b.buf);
    }
    test_tmpdir_remove(root);
}

/* A root that is a file, or missing: the same single call. */
static void test_ahead_on_a_file_root(void)
{
    char root[64], file[128];
    CHECK_INT(test_tmpdir_new(root), 0);
    CHECK_INT(test_write_file(root, "only.log", "z\n", 2), 0);
    snprintf(file, sizeof file, "%s/only.log", root);
    trace a, b;
    CHECK_INT(walk_with(0, file, NULL, -1, &a), 0);
    CHECK_INT(walk_with(1, file, NULL, -1, &b), 0);
    CHECK(a.buf && b.buf && strcmp(a.buf, b.buf) == 0);
    free(a.buf);
    free(b.buf);
    snprintf(file, sizeof file, "%s/missing.log", root);
    CHECK_INT(walk_with(0, file, NULL, -1, &a), 0);
    CHECK_INT(walk_with(1, file, NULL, -1, &b), 0);
    CHECK(a.buf && b.buf && strcmp(a.buf, b.buf) == 0);
    free(a.buf);
    free(b.buf);
    test_tmpdir_remove(root);
}

TEST_MAIN(T(test_ahead_calls_back_as_walk), T(test_ahead_on_a_file_root))
