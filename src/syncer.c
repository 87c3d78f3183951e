/* Background fdatasync of one file (see syncer.h). */
#include "syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsq/dsq.h"

struct dsq_syncer {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* a request or quit for the thread; the end of a sync for waiters */
    pthread_t th;
    int have_thread, thread_failed;
    int asked, busy, quit;
    int error;           /* errno of the first failed sync not yet reported */
    char *path;
};

/* fdatasync of the file as its path names it now: 0 or errno. */
static int sync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int rc = fdatasync(fd) != 0 ? errno : 0;
    close(fd);
    return rc;
}

static void *syncer_main(void *arg)
{
    dsq_syncer *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->asked && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->asked)
            break; /* quit, nothing asked */
        s->asked = 0;
        s->busy = 1;
        pthread_mutex_unlock(&s->mu);
        int rc = sync_path(s->path);
        pthread_mutex_lock(&s->mu);
        s->busy = 0;
        if (rc && !s->error)
            s->error = rc;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int dsq_syncer_new(const char *path, dsq_syncer **out)
{
    dsq_syncer *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return DSQ_ENOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    *out = s;
    return 0;
}

void dsq_syncer_free(dsq_syncer *s)
{
    if (!s)
        return;
    if (s->have_thread) {
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL); /* (a sync asked before quit is done first) */
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s);
}

int dsq_syncer_begin(dsq_syncer *s)
{
    if (!s->have_thread && !s->thread_failed) {
        if (pthread_create(&s->th, NULL, syncer_main, s) == 0)
            s->have_thread = 1;
        else
            s->thread_failed = 1;
    }
    if (!s->have_thread) {
        int rc = sync_path(s->path);
        if (rc && !s->error)
            s->error = rc;
        return 1;
    }
    pthread_mutex_lock(&s->mu);
    int begin = !s->asked && !s->busy;
    if (begin) {
        s->asked = 1;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return begin;
}

void dsq_syncer_wait(dsq_syncer *s)
{
    pthread_mutex_lock(&s->mu);
    while (s->asked || s->busy)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

int dsq_syncer_error(dsq_syncer *s)
{
    pthread_mutex_lock(&s->mu);
    int e = s->error;
    s->error = 0;
    pthread_mutex_unlock(&s->mu);
    return e;
}
