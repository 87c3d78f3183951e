/* Input walking (see walk.h). Paths longer than PATH_MAX are skipped with a
 * problem report rather than truncated. */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
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

static int walk_dir(const walker *w, const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort), status = 0;
    if (n < 0) {
        report(w, dir, "cannot read directory", errno);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        char full[PATH_MAX];
        struct stat sb;
        if (status || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, nm) >= sizeof full) {
            report(w, dir, "path too long", ENAMETOOLONG);
            continue;
        }
        if (lstat(full, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            int skip = w->has_skip && sb.st_dev == w->skip_dev && sb.st_ino == w->skip_ino;
            skip = skip || (w->p->enter && w->p->enter(w->p->ctx, full, full + w->root_len + 1));
            if (!skip)
                status = walk_dir(w, full);
            continue;
        }
        int link = S_ISLNK(sb.st_mode);
        if (link && stat(full, &sb) != 0) {
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
