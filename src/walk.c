/* Input walking (see walk.h). Paths longer than PATH_MAX are skipped with a
 * problem report rather than truncated. */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
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
        if (n == cap) {
            char **more = n < INT_MAX / 2 ? realloc(v, (cap ? 2 * cap : 64) * sizeof *v) : NULL;
            if (!more)
                goto nomem;
            v = more;
            cap = cap ? 2 * cap : 64;
        }
        if (!(v[n] = strdup(e->d_name)))
            goto nomem;
        n++;
        errno = 0;
    }
    if (errno)
        goto fail;
    if (n > 1)
        qsort(v, n, sizeof *v, by_name);
    *names = v;
    return (int)n;
nomem:
    errno = ENOMEM;
fail:;
    int e2 = errno;
    while (n)
        free(v[--n]);
    free(v);
    errno = e2;
    return -1;
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
        if (S_ISREG(sb.st_mode)) {
            if (w->p->note_out)
                *w->p->note_out = w->p->note ? w->p->note(w->p->ctx, full, &sb) : 0;
            status = w->p->file(w->p->ctx, full, full + w->root_len + 1, link, &sb);
        }
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
    if (p->note_out)
        *p->note_out = p->note && found ? p->note(p->ctx, root, &sb) : 0;
    return p->file(p->ctx, root, "", -1, found ? &sb : NULL);
}

/* --- the walk on a thread of its own -------------------------------------------- */

/* What the walk's thread found, in order: a file (full path, where rel starts, the
 * link flag and the stat) or a problem. */
typedef struct ahead_item {
    char *full;     /* NULL: a problem */
    dsq_error *err; /* the problem (allocated: problems are rare, items many) */
    size_t rel_at;
    uint64_t note;
    int link, has_sb;
    struct stat sb;
} ahead_item;

#define AHEAD_CHUNK 64 /* items handed over at once */
#define AHEAD_CHUNKS 32 /* chunks waiting at most */
#define AHEAD_NOTE_MIN 2 /* chunks waiting: the walk is ahead, and takes notes */

typedef struct ahead {
    const dsq_walk_params *user;
    const char *path;
    dsq_walk_params p; /* the walk's own callbacks, which queue */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ahead_item *ring[AHEAD_CHUNKS]; /* full chunks, oldest at head */
    int counts[AHEAD_CHUNKS];
    int head, n;
    atomic_int waiting; /* n, for the walk to read without the lock */
    ahead_item *fill; /* the walk's chunk being filled */
    int nfill;
    int done, stop, status; /* the walk ended (its status); the caller stopped it */
} ahead;

/* Hands the chunk being filled over (the walk's thread). 0, or 1 when stopped. */
static int ahead_flush(ahead *a)
{
    pthread_mutex_lock(&a->mu);
    while (a->n == AHEAD_CHUNKS && !a->stop)
        pthread_cond_wait(&a->cv, &a->mu);
    int stop = a->stop;
    if (!stop && a->nfill) {
        int at = (a->head + a->n) % AHEAD_CHUNKS;
        a->ring[at] = a->fill;
        a->counts[at] = a->nfill;
        atomic_store_explicit(&a->waiting, ++a->n, memory_order_relaxed);
        a->fill = NULL;
        a->nfill = 0;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return stop;
}

/* The next slot of the chunk being filled (the walk's thread); NULL: stop. */
static ahead_item *ahead_slot(ahead *a)
{
    if (a->nfill == AHEAD_CHUNK && ahead_flush(a))
        return NULL;
    if (!a->fill && !(a->fill = malloc(AHEAD_CHUNK * sizeof *a->fill)))
        return NULL;
    return &a->fill[a->nfill];
}

static int ahead_file(void *ctx, const char *full, const char *rel, int link, const struct stat *sb)
{
    ahead *a = ctx;
    ahead_item *it = ahead_slot(a);
    if (!it || !(it->full = strdup(full)))
        return DSQ_ENOMEM; /* (or stopped: then no one reads it) */
    it->err = NULL;
    it->rel_at = (size_t)(rel - full);
    it->note = a->user->note && sb &&
                       atomic_load_explicit(&a->waiting, memory_order_relaxed) >= AHEAD_NOTE_MIN
                   ? a->user->note(a->user->ctx, full, sb)
                   : 0;
    it->link = link;
    it->has_sb = sb != NULL;
    if (sb)
        it->sb = *sb;
    a->nfill++;
    return 0;
}

static void ahead_problem(void *ctx, const dsq_error *err)
{
    ahead *a = ctx;
    ahead_item *it = ahead_slot(a);
    if (!it || !(it->err = malloc(sizeof *it->err)))
        return;
    it->full = NULL;
    *it->err = *err;
    a->nfill++;
}

static int ahead_enter(void *ctx, const char *full, const char *rel)
{
    ahead *a = ctx;
    return a->user->enter(a->user->ctx, full, rel);
}

static void *ahead_main(void *arg)
{
    ahead *a = arg;
    int status = dsq_walk(&a->p, a->path);
    ahead_flush(a);
    pthread_mutex_lock(&a->mu);
    a->done = 1;
    a->status = a->stop ? 0 : status;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static void free_chunk(ahead_item *c, int from, int n)
{
    for (int i = from; i < n; i++) {
        free(c[i].full);
        if (!c[i].full)
            free(c[i].err);
    }
    free(c);
}

int dsq_walk_ahead(const dsq_walk_params *p, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return dsq_walk(p, path); /* one file: nothing to read ahead */
    ahead a = {.user = p, .path = path};
    a.p = (dsq_walk_params){.file = ahead_file, .problem = ahead_problem, .ctx = &a,
                            .skip_dir = p->skip_dir, .enter = p->enter ? ahead_enter : NULL};
    pthread_t th;
    if (pthread_mutex_init(&a.mu, NULL) != 0)
        return dsq_walk(p, path);
    if (pthread_cond_init(&a.cv, NULL) != 0) {
        pthread_mutex_destroy(&a.mu);
        return dsq_walk(p, path);
    }
    if (pthread_create(&th, NULL, ahead_main, &a) != 0) {
        pthread_cond_destroy(&a.cv);
        pthread_mutex_destroy(&a.mu);
        return dsq_walk(p, path);
    }
    int status = 0;
    for (;;) {
        pthread_mutex_lock(&a.mu);
        while (a.n == 0 && !a.done)
            pthread_cond_wait(&a.cv, &a.mu);
        if (a.n == 0) { /* done, everything taken */
            if (!status)
                status = a.status;
            pthread_mutex_unlock(&a.mu);
            break;
        }
        ahead_item *c = a.ring[a.head];
        int n = a.counts[a.head];
        a.head = (a.head + 1) % AHEAD_CHUNKS;
        atomic_store_explicit(&a.waiting, --a.n, memory_order_relaxed);
        pthread_cond_broadcast(&a.cv);
        pthread_mutex_unlock(&a.mu);
        int i = 0;
        for (; i < n && !status; i++) {
            ahead_item *it = &c[i];
            if (!it->full) {
                if (p->problem)
                    p->problem(p->ctx, it->err);
                free(it->err);
                it->err = NULL;
                continue;
            }
            if (p->note_out)
                *p->note_out = it->note;
            status = p->file(p->ctx, it->full, it->full + it->rel_at, it->link,
                             it->has_sb ? &it->sb : NULL);
            free(it->full);
            it->full = NULL;
        }
        free_chunk(c, i, n);
        if (status) { /* stop the walk; what it queued is dropped */
            pthread_mutex_lock(&a.mu);
            a.stop = 1;
            pthread_cond_broadcast(&a.cv);
            pthread_mutex_unlock(&a.mu);
            break;
        }
    }
    pthread_join(th, NULL);
    for (; a.n > 0; a.n--, a.head = (a.head + 1) % AHEAD_CHUNKS)
        free_chunk(a.ring[a.head], 0, a.counts[a.head]);
    if (a.fill)
        free_chunk(a.fill, 0, a.nfill);
    pthread_cond_destroy(&a.cv);
    pthread_mutex_destroy(&a.mu);
    return status;
}
