/* Indexer (see indexer.h).
 *
 * Per file: stat + fingerprint -> skip if unchanged (and complete); else a write
 * transaction: drop the old source, decode members, split lines, scan, buffer
 * events per (host, rank) into blocks and rollups, write full blocks, then the
 * member and source records, commit. A big file is committed every COMMIT_BYTES
 * with its source record marked partial, so a killed run leaves whole commits and
 * the next run redoes the file (drop, then index again). Decoder, splitter, scanner and block buffers are created once and reused
 * for every file. Statistics are added only after a commit succeeds, so a retried
 * file (map grown) is not counted twice.
 */
#include "indexer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "error.h"
#include "input.h"
#include "lines.h"
#include "rollup.h"
#include "scan.h"
#include "shard.h"
#include "timeconv.h"
#include "walk.h"

#define MAX_OPEN_BLOCKS 256
#define BLOCK_EVENTS 1024
#define BLOCK_BYTES (64 * 1024)
#define PROGRESS_BYTES (32u << 20)
#define MAX_MAP_RETRIES 10
/* A file is committed every COMMIT_BYTES of decoded text, so the open write (its
 * dirty pages) stays small whatever the file's size. DSQ_COMMIT_BYTES overrides it
 * (tests use small values to get many commits from small files). */
#define COMMIT_BYTES ((uint64_t)64 << 20)

typedef struct open_block {
    uint32_t host;
    int32_t rank;
    int used;
    dsq_block b;
} open_block;

struct dsq_indexer {
    dsq_indexer_params p;
    dsq_input *in;
    dsq_lines *lines;
    dsq_scan *scan;
    dsq_rollup *roll;
    open_block ob[MAX_OPEN_BLOCKS];
    int last_ob;
    /* the file being indexed */
    const char *cur_path;
    const char *cur_inner;  /* the file's path inside its run directory, or NULL */
    dsq_error *walk_err;    /* where index failures during a walk go */
    uint32_t cur_source, cur_run, cur_seq;
    dsq_error *cur_err;     /* where a write failure inside the emit callback goes */
    dsq_index_stats pend;   /* this file's numbers until its commit succeeds */
    const char *cur_abs;    /* the file's absolute path (its source record's key) */
    dsq_source_rec *cur_rec; /* its record so far */
    uint64_t commit_bytes, since_commit;
    dsq_index_stats st;
    uint64_t progress_mark;
    struct timespec t0;
    char db_real[PATH_MAX];
};

static double elapsed(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static const char *const strip_exts[] = {".zst", ".zstd", ".gz", ".tgz", ".xz", ".txz", ".bz2",
                                         ".tbz2", ".tar", ".zip", ".log", ".txt", ".out", ".err"};

void dsq_name_strip_ext(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s", name);
    for (int changed = 1; changed;) {
        changed = 0;
        size_t n = strlen(out);
        for (size_t i = 0; i < sizeof strip_exts / sizeof strip_exts[0]; i++) {
            size_t e = strlen(strip_exts[i]);
            if (n > e && strcasecmp(out + n - e, strip_exts[i]) == 0) {
                out[n - e] = 0;
                changed = 1;
                break;
            }
        }
    }
}

static void problem(dsq_indexer *ix, dsq_error *e, const char *member)
{
    dsq_error_where(e, ix->cur_path, member);
    if (ix->p.problem)
        ix->p.problem(ix->p.ctx, e);
}

/* Writes one buffered block and empties it. */
static int put_block(dsq_indexer *ix, open_block *o)
{
    if (o->b.count == 0)
        return 0;
    dsq_block_key k = {ix->cur_run, o->host, o->rank, o->b.t_first, ix->cur_source, ix->cur_seq++};
    int rc = dsq_store_block_put(ix->p.store, &k, &o->b, ix->cur_err);
    dsq_block_reset(&o->b);
    return rc;
}

static int flush_blocks(dsq_indexer *ix)
{
    for (int i = 0; i < MAX_OPEN_BLOCKS; i++) {
        if (!ix->ob[i].used)
            continue;
        int rc = put_block(ix, &ix->ob[i]);
        ix->ob[i].used = 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* The open block of (host, rank); when all are taken, every block is written out. */
static open_block *block_for(dsq_indexer *ix, uint32_t host, int32_t rank, int *rc)
{
    open_block *o = &ix->ob[ix->last_ob];
    if (o->used && o->host == host && o->rank == rank)
        return o;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < MAX_OPEN_BLOCKS; i++) {
            o = &ix->ob[i];
            if (o->used && o->host == host && o->rank == rank) {
                ix->last_ob = i;
                return o;
            }
        }
        for (int i = 0; i < MAX_OPEN_BLOCKS; i++) {
            o = &ix->ob[i];
            if (!o->used) {
                o->used = 1;
                o->host = host;
                o->rank = rank;
                dsq_block_reset(&o->b);
                ix->last_ob = i;
                return o;
            }
        }
        if ((*rc = flush_blocks(ix)))
            return NULL;
    }
    return NULL;
}

static int on_event(void *ctx, const dsq_event *ev)
{
    dsq_indexer *ix = ctx;
    int rc = 0;
    open_block *o = block_for(ix, ev->host, ev->rank, &rc);
    if (!o)
        return rc ? rc : dsq_error_set(ix->cur_err, DSQ_ENOMEM, "block table");
    if ((rc = dsq_block_add(&o->b, ev)))
        return dsq_error_set(ix->cur_err, rc, "out of memory buffering events");
    if ((rc = dsq_rollup_add(ix->roll, ev, ix->cur_err)))
        return rc;
    ix->pend.events++;
    if (o->b.count >= BLOCK_EVENTS || o->b.len >= BLOCK_BYTES)
        return put_block(ix, o);
    return 0;
}

int dsq_indexer_new(const dsq_indexer_params *params, dsq_indexer **out, dsq_error *err)
{
    dsq_indexer *ix = calloc(1, sizeof *ix);
    if (!ix)
        return dsq_error_set(err, DSQ_ENOMEM, "indexer");
    ix->p = *params;
    dsq_lines_params lp = {params->max_line, dsq_scan_line, NULL};
    dsq_scan_params sp = {.dict = dsq_store_dict(params->store), .emit = on_event, .ctx = ix};
    if (dsq_input_new(&ix->in) || dsq_scan_new(&sp, &ix->scan) ||
        dsq_rollup_new(params->store, &ix->roll))
        goto nomem;
    lp.ctx = ix->scan;
    if (dsq_lines_new(&lp, &ix->lines))
        goto nomem;
    if (!params->db_dir || !realpath(params->db_dir, ix->db_real))
        ix->db_real[0] = 0;
    const char *cb = getenv("DSQ_COMMIT_BYTES");
    ix->commit_bytes = cb && strtoull(cb, NULL, 10) > 0 ? strtoull(cb, NULL, 10) : COMMIT_BYTES;
    clock_gettime(CLOCK_MONOTONIC, &ix->t0);
    *out = ix;
    return 0;
nomem:
    dsq_indexer_free(ix);
    return dsq_error_set(err, DSQ_ENOMEM, "indexer");
}

void dsq_indexer_free(dsq_indexer *ix)
{
    if (!ix)
        return;
    for (int i = 0; i < MAX_OPEN_BLOCKS; i++)
        dsq_block_free_buf(&ix->ob[i].b);
    dsq_input_free(ix->in);
    dsq_lines_free(ix->lines);
    dsq_scan_free(ix->scan);
    dsq_rollup_free(ix->roll);
    free(ix);
}

const dsq_index_stats *dsq_indexer_stats(const dsq_indexer *ix) { return &ix->st; }

static void maybe_progress(dsq_indexer *ix, int force)
{
    uint64_t done = ix->st.bytes_decoded + ix->pend.bytes_decoded;
    if (!ix->p.progress || (!force && done - ix->progress_mark < PROGRESS_BYTES))
        return;
    ix->progress_mark = done;
    dsq_index_stats now = ix->st;
    now.bytes_decoded = done;
    now.seconds = elapsed(&ix->t0);
    ix->p.progress(ix->p.ctx, &now, ix->cur_path);
}

/* Rank named by a file or member name: "rank3.log", "train_rank12.txt"; else -1. */
static int rank_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = base; (p = strcasestr(p, "rank")) != NULL; p += 4) {
        const char *d = p + 4;
        if (*d == '_' || *d == '-')
            d++;
        if (*d < '0' || *d > '9')
            continue;
        long r = 0;
        for (; *d >= '0' && *d <= '9' && r < 10000000; d++)
            r = r * 10 + (*d - '0');
        return (int)r;
    }
    return -1;
}

/* Whether a path component names a host: gpu009, node-3, worker-5, 10.0.0.7,
 * rdma-gpu-train-worker-0. Words that name ranks, runs, jobs or streams do not. */
static int looks_like_host(const char *s, size_t n)
{
    static const char *const not_hosts[] = {"rank", "local_rank", "run", "job", "slurm", "log",
                                            "logs", "stdout", "stderr", "out", "err", "output",
                                            "train", "step", "epoch", "events", "trace", "default"};
    int digit = 0;
    if (n == 0 || n > 63 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
                              (s[0] >= '0' && s[0] <= '9')))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return 0;
        digit |= c >= '0' && c <= '9';
    }
    for (size_t i = 0; i < sizeof not_hosts / sizeof not_hosts[0]; i++) {
        size_t k = strlen(not_hosts[i]);
        if (n >= k && strncasecmp(s, not_hosts[i], k) == 0 &&
            (n == k || s[k] == '-' || s[k] == '_' || s[k] == '.' || (s[k] >= '0' && s[k] <= '9')))
            return 0;
    }
    return digit;
}

/* Host named by a path inside a run: the file name without extensions
 * ("gpu009.log.zst"), else the nearest directory that looks like a host
 * ("node-3/stdout.txt"). 0 when none does. */
static uint32_t host_from_path(dsq_indexer *ix, const char *path)
{
    char base[256];
    if (!path || !*path)
        return 0;
    const char *slash = strrchr(path, '/');
    dsq_name_strip_ext(slash ? slash + 1 : path, base, sizeof base);
    dsq_dict *d = dsq_store_dict(ix->p.store);
    if (looks_like_host(base, strlen(base)))
        return dsq_dict_intern(d, base, strlen(base));
    while (slash && slash > path) {
        const char *start = slash - 1;
        while (start > path && start[-1] != '/')
            start--;
        if (looks_like_host(start, (size_t)(slash - start)))
            return dsq_dict_intern(d, start, (size_t)(slash - start));
        slash = start > path ? start - 1 : NULL;
    }
    return 0;
}

/* Commits what a big file has given so far, its source record marked partial, and
 * opens the next write. Events the scanner still holds (a memory report waiting
 * for its last line) go into a later commit. */
static int checkpoint(dsq_indexer *ix)
{
    dsq_source_rec rec = *ix->cur_rec;
    int rc;
    ix->since_commit = 0;
    if ((rc = flush_blocks(ix)) || (rc = dsq_rollup_checkpoint(ix->roll, ix->cur_err)))
        return rc;
    rec.id = ix->cur_source;
    rec.nblocks = ix->cur_seq;
    rec.flags |= DSQ_SRC_PARTIAL;
    if ((rc = dsq_store_source_put(ix->p.store, ix->cur_abs, &rec, ix->cur_err)) ||
        (rc = dsq_store_commit(ix->p.store, ix->cur_err)))
        return rc;
    return dsq_store_begin(ix->p.store, ix->cur_err);
}

/* Streams one member through splitter and scanner. Returns a write error (stop);
 * a damaged member is reported and ends with what was read. */
static int index_member(dsq_indexer *ix, const dsq_member_info *mi, dsq_source_rec *rec,
                        uint32_t idx)
{
    dsq_error e;
    dsq_error_clear(&e);
    dsq_lines_reset(ix->lines);
    const char *inner = mi->name[0] ? mi->name : ix->cur_inner;
    dsq_scan_begin(ix->scan, host_from_path(ix, inner),
                   rank_from_name(mi->name[0] ? mi->name : ix->cur_path));
    dsq_scan_set_written(ix->scan, mi->mtime_ns / 1000);
    dsq_member_rec mr = {.mtime_ns = mi->mtime_ns};
    int rc = 0;
    for (;;) {
        const char *data;
        size_t len;
        if (dsq_input_read(ix->in, &data, &len, &e) != 0) {
            e.line = (long long)dsq_lines_stats_get(ix->lines)->lines;
            e.offset = (long long)dsq_lines_stats_get(ix->lines)->bytes;
            problem(ix, &e, mi->name);
            ix->pend.members_failed++;
            rec->errors++;
            mr.status = (uint32_t)-e.code;
            break;
        }
        if (len == 0)
            break;
        if (mr.size == 0)
            mr.fingerprint = dsq_hash64(data, len < 65536 ? len : 65536, 0);
        mr.size += len;
        if ((rc = dsq_lines_feed(ix->lines, data, len)))
            return rc;
        ix->pend.bytes_decoded += len;
        maybe_progress(ix, 0);
        if ((ix->since_commit += len) >= ix->commit_bytes && (rc = checkpoint(ix)))
            return rc;
    }
    if ((rc = dsq_lines_finish(ix->lines)) || (rc = dsq_scan_end(ix->scan)))
        return rc;
    const dsq_scan_stats *ss = dsq_scan_stats_get(ix->scan);
    mr.lines = ss->lines;
    mr.events = ss->events;
    mr.fingerprint = dsq_hash64(&mr.size, sizeof mr.size, mr.fingerprint);
    rec->lines += ss->lines;
    rec->cut_lines += ss->cut;
    rec->events += ss->events;
    rec->bytes_decoded += mr.size;
    rec->members++;
    for (int f = 0; f < DSQ_FAM_COUNT && f < DSQ_REC_FAMILIES; f++)
        rec->family_lines[f] += ss->family_lines[f];
    for (int l = 0; l < DSQ_LV_COUNT && l < DSQ_REC_LEVELS; l++)
        rec->level_lines[l] += ss->level_lines[l];
    ix->pend.members++;
    ix->pend.lines += ss->lines;
    ix->pend.cut_lines += ss->cut;
    return dsq_store_member_put(ix->p.store, ix->cur_source, idx, &mr, mi->name, ix->cur_err);
}

/* Reads every member of the open input into the open transaction. */
static int index_members(dsq_indexer *ix, dsq_source_rec *rec)
{
    dsq_member_info mi;
    dsq_error e;
    for (uint32_t idx = 0;; idx++) {
        dsq_error_clear(&e);
        int r = dsq_input_next_member(ix->in, &mi, &e);
        dsq_error d;
        dsq_error_clear(&d);
        if (dsq_input_take_damage(ix->in, &d)) {
            problem(ix, &d, NULL);
            ix->pend.members_failed++;
            rec->errors++;
        }
        if (r == 0)
            return 0;
        if (r < 0) {
            problem(ix, &e, NULL);
            ix->pend.members_failed++;
            rec->errors++;
            return 0;
        }
        if ((r = index_member(ix, &mi, rec, idx)))
            return r;
    }
}

/* One attempt at a file inside one transaction. DSQ_ELIMIT means "map grown: redo". */
static int index_file_once(dsq_indexer *ix, const char *abs, const dsq_file_info *fi,
                           dsq_error *err)
{
    dsq_source_rec rec = {.version = 1, .run = ix->cur_run, .size = fi->size,
                          .mtime_ns = fi->mtime_ns, .fingerprint = fi->fingerprint};
    dsq_error e;
    dsq_error_clear(&e);
    memset(&ix->pend, 0, sizeof ix->pend);
    ix->cur_err = err;
    ix->cur_seq = 0;
    ix->cur_abs = abs;
    ix->cur_rec = &rec;
    ix->since_commit = 0;
    int status = dsq_store_begin(ix->p.store, err);
    if (status)
        return status;
    if ((status = dsq_store_source_drop(ix->p.store, abs, err)) ||
        (status = dsq_store_source_new_id(ix->p.store, &ix->cur_source, err)))
        goto fail;
    dsq_rollup_begin(ix->roll, ix->cur_run, ix->cur_source);
    if (dsq_input_open(ix->in, abs, &e) != 0) {
        problem(ix, &e, NULL);
        dsq_store_abort(ix->p.store);
        ix->st.files_failed++;
        return 0;
    }
    status = index_members(ix, &rec);
    ix->pend.bytes_in = dsq_input_bytes_in(ix->in);
    dsq_input_close(ix->in);
    if (status || (status = flush_blocks(ix)) || (status = dsq_rollup_finish(ix->roll, err)))
        goto fail;
    rec.id = ix->cur_source;
    rec.nblocks = ix->cur_seq;
    if ((status = dsq_store_source_put(ix->p.store, abs, &rec, err)))
        goto fail;
    return dsq_store_commit(ix->p.store, err);
fail:
    for (int i = 0; i < MAX_OPEN_BLOCKS; i++)
        ix->ob[i].used = 0;
    if (status == DSQ_ELIMIT) /* the map is full: abort, grow it (done if a commit hit it) */
        return dsq_store_writing(ix->p.store) ? dsq_store_commit(ix->p.store, err) : DSQ_ELIMIT;
    dsq_store_abort(ix->p.store);
    return status;
}

static void add_stats(dsq_index_stats *to, const dsq_index_stats *from)
{
    to->members += from->members;
    to->members_failed += from->members_failed;
    to->bytes_in += from->bytes_in;
    to->bytes_decoded += from->bytes_decoded;
    to->lines += from->lines;
    to->cut_lines += from->cut_lines;
    to->events += from->events;
}

static int index_file(dsq_indexer *ix, const char *path, const char *run, dsq_error *err)
{
    char abs[PATH_MAX];
    dsq_file_info fi;
    dsq_source_rec old;
    dsq_error e;
    dsq_error_clear(&e);
    ix->cur_path = path;
    ix->st.files_seen++;
    if (!realpath(path, abs) || dsq_input_stat(abs, &fi, &e) != 0) {
        if (e.code == 0)
            dsq_error_set(&e, DSQ_EIO, "%s", strerror(errno));
        problem(ix, &e, NULL);
        ix->st.files_failed++;
        return 0;
    }
    ix->cur_run = dsq_dict_intern(dsq_store_dict(ix->p.store), run, strlen(run));
    if (!ix->cur_run)
        return dsq_error_set(err, DSQ_ENOMEM, "dictionary");
    int found = dsq_store_source_find(ix->p.store, abs, &old, err);
    if (found < 0)
        return found;
    if (found && old.size == fi.size && old.mtime_ns == fi.mtime_ns &&
        old.fingerprint == fi.fingerprint && old.run == ix->cur_run &&
        !(old.flags & DSQ_SRC_PARTIAL)) {
        ix->st.files_unchanged++;
        if (old.errors) { /* the same damage as last time: say so again */
            dsq_error_set(&e, DSQ_EFORMAT,
                          "unchanged since it was indexed with %u damaged members or reads (the "
                          "rest is indexed)",
                          old.errors);
            problem(ix, &e, NULL);
        }
        return 0;
    }
    int status = DSQ_ELIMIT;
    for (int i = 0; i < MAX_MAP_RETRIES && status == DSQ_ELIMIT; i++)
        status = index_file_once(ix, abs, &fi, err);
    if (status == 0 && ix->pend.members + ix->pend.members_failed > 0) {
        ix->st.files_indexed++;
        add_stats(&ix->st, &ix->pend);
    }
    maybe_progress(ix, 1);
    return status;
}

/* Run of a file found under root: the first path component below root, or the
 * file's own name without extensions when it sits directly in root. */
static void run_name(const dsq_indexer *ix, const char *rel, char *out, size_t cap)
{
    if (ix->p.run) {
        snprintf(out, cap, "%s", ix->p.run);
        return;
    }
    const char *slash = strchr(rel, '/');
    if (slash) {
        snprintf(out, cap, "%.*s", (int)(slash - rel), rel);
        return;
    }
    dsq_name_strip_ext(rel, out, cap);
}

/* dsq_walk callback: names the run (and the path inside it) and indexes the file. */
static int walk_file(void *ctx, const char *full, const char *rel)
{
    dsq_indexer *ix = ctx;
    char run[256];
    if (!*rel) { /* the indexed path itself is a file: its own run */
        const char *base = strrchr(full, '/');
        base = base ? base + 1 : full;
        if (ix->p.run)
            snprintf(run, sizeof run, "%s", ix->p.run);
        else
            dsq_name_strip_ext(base, run, sizeof run);
        ix->cur_inner = NULL;
    } else {
        const char *inner = strchr(rel, '/');
        run_name(ix, rel, run, sizeof run);
        ix->cur_inner = inner && !ix->p.run ? inner + 1 : NULL;
    }
    if (ix->p.shard_n && dsq_shard_of(run, strlen(run), ix->p.shard_n) != ix->p.shard_k) {
        ix->st.other_shard++; /* another shard's run (a file in the root): not even stat'ed */
        ix->cur_inner = NULL;
        return 0;
    }
    int status = index_file(ix, full, run, ix->walk_err);
    ix->cur_inner = NULL;
    return status;
}

/* dsq_walk enter callback: another shard's run directory is not walked at all. */
static int walk_enter(void *ctx, const char *full, const char *rel)
{
    dsq_indexer *ix = ctx;
    char run[256];
    (void)full;
    if (!ix->p.shard_n || strchr(rel, '/'))
        return 0;
    snprintf(run, sizeof run, "%s", ix->p.run ? ix->p.run : rel); /* as run_name does */
    if (dsq_shard_of(run, strlen(run), ix->p.shard_n) == ix->p.shard_k)
        return 0;
    ix->st.other_shard++;
    return 1;
}

/* dsq_walk problem callback: a directory or link that could not be read. */
static void walk_problem(void *ctx, const dsq_error *e)
{
    dsq_indexer *ix = ctx;
    ix->st.files_seen++;
    ix->st.files_failed++;
    if (ix->p.problem)
        ix->p.problem(ix->p.ctx, e);
}

int dsq_indexer_add(dsq_indexer *ix, const char *path, dsq_error *err)
{
    dsq_walk_params wp = {.file = walk_file, .problem = walk_problem, .enter = walk_enter,
                          .ctx = ix, .skip_dir = ix->db_real[0] ? ix->db_real : NULL};
    ix->walk_err = err;
    int status = dsq_walk(&wp, path);
    if (!status)
        status = dsq_store_sync(ix->p.store, err);
    ix->st.seconds = elapsed(&ix->t0);
    return status;
}
