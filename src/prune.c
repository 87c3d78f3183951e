/* Pruning (see prune.h): collect the paths first (a read), then drop them in
 * write transactions of at most DROPS_PER_COMMIT sources each. */
#include "prune.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"

#define DROPS_PER_COMMIT 1000

typedef struct prune_ctx {
    dsq_store *st;
    const char *const *runs;
    int nruns;
    char **paths;
    size_t n, cap;
} prune_ctx;

static int wanted(prune_ctx *pc, const char *path, const dsq_source_rec *rec)
{
    if (pc->nruns == 0) {
        struct stat sb;
        return stat(path, &sb) != 0 && errno == ENOENT;
    }
    const char *run = dsq_dict_str(dsq_store_dict(pc->st), rec->run, NULL);
    for (int i = 0; run && i < pc->nruns; i++)
        if (strcmp(run, pc->runs[i]) == 0)
            return 1;
    return 0;
}

static int collect(void *ctx, const char *path, const dsq_source_rec *rec)
{
    prune_ctx *pc = ctx;
    if (!wanted(pc, path, rec))
        return 0;
    if (pc->n == pc->cap) {
        size_t cap = pc->cap ? pc->cap * 2 : 64;
        char **p = realloc(pc->paths, cap * sizeof *p);
        if (!p)
            return DSQ_ENOMEM;
        pc->paths = p;
        pc->cap = cap;
    }
    return (pc->paths[pc->n++] = strdup(path)) ? 0 : DSQ_ENOMEM;
}

int dsq_prune(dsq_store *st, const char *const *runs, int nruns, uint64_t *dropped,
              dsq_error *err)
{
    prune_ctx pc = {.st = st, .runs = runs, .nruns = nruns};
    int status = dsq_store_scan_sources(st, collect, &pc, err);
    if (status == DSQ_ENOMEM)
        dsq_error_set(err, DSQ_ENOMEM, "out of memory listing sources");
    *dropped = 0;
    for (size_t i = 0; !status && i < pc.n; i += DROPS_PER_COMMIT) {
        size_t end = i + DROPS_PER_COMMIT < pc.n ? i + DROPS_PER_COMMIT : pc.n;
        for (int attempt = 0; attempt < 10; attempt++) { /* DSQ_ELIMIT: map grown, redo */
            if ((status = dsq_store_begin(st, err)))
                break;
            for (size_t j = i; j < end && !status; j++)
                status = dsq_store_source_drop(st, pc.paths[j], err);
            if (status && dsq_store_writing(st) && status != DSQ_ELIMIT)
                dsq_store_abort(st);
            else if (!status || dsq_store_writing(st))
                status = dsq_store_commit(st, err);
            if (status != DSQ_ELIMIT)
                break;
        }
        if (!status)
            *dropped += end - i;
    }
    if (!status)
        status = dsq_store_settle(st, err);
    for (size_t i = 0; i < pc.n; i++)
        free(pc.paths[i]);
    free(pc.paths);
    return status;
}
