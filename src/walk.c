/* Input walking (see walk.h). Paths longer than PATH_MAX are skipped with a
 * problem report rather than truncated. */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"

typedef struct walker {
    const dsq_walk_params *p;
    size_t root_len;
    int has_skip;         /* skip_dir exists: its device and inode, compared with */
    dev_t skip_dev;       /* each directory's (already lstat'ed), not its realpath */
    ino_t skip_ino;
} walker;

static void report(const walker *w, const char *path, const char *what, int e)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_error_set(&err, DSQ_EIO, "%s: %s", what, strerror(e));
    dsq_error_where(&err, path, NULL);
    if (w->p->problem)
        w->p->problem(w->p->ctx, &err);
}

/* Whether the directory link resolves to dir or a directory above it: following
 * it would walk the same files forever. (No directory link is followed anyway;
 * this only decides whether to say so.) */
static int links_to_ancestor(const char *dir, const char *link)
{
    char d[PATH_MAX], t[PATH_MAX];
    if (!realpath(dir, d) || !realpath(link, t))
        return 0;
    size_t n = strlen(t);
    if (strcmp(t, "/") == 0)
        return 1;
    return strncmp(d, t, n) == 0 && (d[n] == 0 || d[n] == '/');
}

static int by_name(const void *a, const void *b)
{
    return strcoll(*(char *const *)a, *(char *const *)b); /* (scandir's alphasort) */
}

/* A directory's names, sorted (*names and each name malloc'ed); -1 with errno. */
static int read_names(DIR *d, char ***names)
{
    char **v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *nm = strdup(e->d_name);
        if (n == cap) {
            char **more = nm && n < INT_MAX / 2 ? realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v) : NULL;
            if (!more) {
                free(nm);
                nm = NULL;
            } else {
                v = more;
            }
        }
        if (!nm) {
            while (n)
                free(v[--n]);
            free(v);
            errno = ENOMEM;
            return -1;
        }
        v[n++] = nm;
        errno = 0;
    }
    if (errno) {
        int e2 = errno;
        while (n)
            free(v[--n]);
        free(v);
        errno = e2;
        return -1;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, by_name);
    *names = v;
    return (int)n;
}

/* Each entry is stat'ed relative to the directory's descriptor: one name looked up,
 * not the whole path again (the path walk was most of a big tree's stat time). */
static int walk_dir(const walker *w, const char *dir)
{
    char **names = NULL;
    DIR *d = opendir(dir);
    int n = d ? read_names(d, &names) : -1, status = 0;
    if (n < 0) {
        report(w, dir, "cannot read directory", errno);
        if (d)
            closedir(d);
        return 0;
    }
    int dfd = dirfd(d);
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        char full[PATH_MAX];
        struct stat sb;
        if (status)
            continue;
        if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, nm) >= sizeof full) {
            report(w, dir, "path too long", ENAMETOOLONG);
            continue;
        }
        if (fstatat(dfd, nm, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            int skip = w->has_skip && sb.st_dev == w->skip_dev && sb.st_ino == w->skip_ino;
            skip = skip || (w->p->enter && w->p->enter(w->p->ctx, full, full + w->root_len + 1));
            if (!skip)
                status = walk_dir(w, full);
            continue;
        }
        int link = S_ISLNK(sb.st_mode);
        if (link && fstatat(dfd, nm, &sb, 0) != 0) {
            report(w, full, "broken symbolic link", errno);
            continue;
        }
        if (S_ISDIR(sb.st_mode) && links_to_ancestor(dir, full)) {
            report(w, full, "symbolic link loop (to a directory above it), not followed", ELOOP);
            continue;
        }
        if (S_ISREG(sb.st_mode))
            status = w->p->file(w->p->ctx, full, full + w->root_len + 1, link, &sb);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return status;
}

int dsq_walk(const dsq_walk_params *p, const char *path)
{
    char root[PATH_MAX];
    struct stat sb;
    snprintf(root, sizeof root, "%s", path);
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        root[--n] = 0;
    walker w = {p, n, 0, 0, 0};
    if (p->skip_dir && stat(p->skip_dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        w.has_skip = 1;
        w.skip_dev = sb.st_dev;
        w.skip_ino = sb.st_ino;
    }
    int found = stat(root, &sb) == 0;
    if (found && S_ISDIR(sb.st_mode))
        return walk_dir(&w, root);
    return p->file(p->ctx, root, "", -1, found ? &sb : NULL);
}
