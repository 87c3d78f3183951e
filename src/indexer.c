/* Indexer (see indexer.h).
 *
 * Per file: stat + fingerprint -> skip if unchanged (and complete); else, in the
 * open write transaction: drop the old source, decode members, split lines, scan,
 * buffer events per (host, rank) into blocks and rollups, write full blocks, then
 * the member and source records. Small files share a commit (section "files
 * committed in groups"): a commit costs more than a small file's writes. A big
 * file is committed every COMMIT_BYTES with its source record marked partial, so a
 * killed run leaves whole files or partial-marked ones and the next run redoes the
 * rest (drop, then index again). Decoder, splitter, scanner and block buffers are
 * created once and reused for every file. Statistics are added only after a commit
 * succeeds, so a file written again (map grown) is not counted twice.
 *
 * With worker threads (params.jobs > 1; section "Indexing with worker threads"),
 * the decode/split/scan part of a file runs in a worker and this thread replays its
 * events through the same writing code, file after file in walk order, into the
 * same groups.
 */
#include "indexer.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "batch.h"
#include "bq.h"
#include "dict.h"
#include "error.h"
#include "idmap.h"
#include "input.h"
#include "lines.h"
#include "readahead.h"
#include "rollup.h"
#include "scan.h"
#include "shard.h"
#include "threadprio.h"
#include "timeconv.h"
#include "walk.h"

/* Events are buffered in one open block per (host, rank) of the file. There are
 * OPEN_BLOCKS_FIRST at first, twice as many each time all are taken, up to
 * OPEN_BLOCKS_MAX; then every one is written out (once the open blocks hold
 * OPEN_BLOCK_BYTES, some are: OB_FLUSH_PART). A launcher log of 2,048 ranks had
 * its blocks written out every 256 ranks' events: 3.6 events a block. One of 8,192
 * ranks has 9,216 pairs (each host's own lines too): at 8,192 blocks every block was written out each time the
 * ranks went round, 7.5 events a block, and the 1 GB log took 15.3 s, peak RSS 354
 * MB, an index of 232 MB for 99 MB of .zst; with 16,384, 9.6 s, 331 MB, 115 MB. An
 * open block takes ~0.75 kB besides its buffer, whose bytes the budget bounds: a
 * log of 16,384 ranks (past this cap again) 233 -> 246 MB in 200 MB.
 * DSQ_OPEN_BLOCKS_MAX overrides it (tests). */
#define OPEN_BLOCKS_FIRST 256
#define OPEN_BLOCKS_MAX 16384
#define OPEN_BLOCK_BYTES ((size_t)16 << 20) /* DSQ_OPEN_BLOCK_BYTES overrides it (tests) */
/* Once the open blocks hold the budget, blocks are written out in the order they
 * were opened, going on from where the last time stopped, until they hold
 * 1 / OB_FLUSH_PART of it less; they stay open. Each is written when it has had
 * about the same time to fill as when all were written at once, but a commit holds
 * a part of them: writing all at once put a block in each (host, rank)'s place of
 * the events table in one commit, a page of LMDB's each (a launcher log of 8,192
 * ranks: 9,216 pages, ~37 MB, and the blocks themselves held until the commit). */
#define OB_FLUSH_PART 4
/* A source's series are let go of (dsq_rollup_let_go) after a checkpoint when
 * there would be more than this many in memory (about 300 bytes each in the
 * rollup, 200 waiting for the commit): a launcher log of 8,192 ranks has 306,000
 * (37 a rank), which took 140 MB. DSQ_SERIES_MAX overrides it (tests). */
#define SERIES_MAX ((size_t)1 << 17)
/* A file whose events came from REORDER_PAIRS (host, rank) pairs with blocks open
 * at once (a launcher log of many ranks, taking turns line by line) has its events
 * written in windows of up to WINDOW_EVENTS (or WINDOW_BYTES), each window by
 * (host, rank), in the order the pairs first came, each pair's events in their
 * order: a pair's series, chunks and open block then stay in the caches for its
 * run of events, where taking turns missed them at every event (the big job's 100
 * MB .zst of 2,048 ranks: 0.55 -> 0.40 s, CPU 0.76 -> 0.52 s; answers the same,
 * blocks cut elsewhere). Run attributes and failures, which keep the latest or
 * earliest of a source whatever its rank, are written in log order (the window is
 * written out first). DSQ_REORDER_PAIRS overrides it (0: never; tests). */
#define REORDER_PAIRS 64
#define WINDOW_EVENTS 65536
#define WINDOW_BYTES ((size_t)8 << 20)
#define BLOCK_EVENTS 4096
#define BLOCK_BYTES (64 * 1024)
/* A written block keeps its buffer for the next when it is at most this big, or
 * when so few blocks are set up that all of them at BLOCK_BYTES fit the budget,
 * else lets go of it: the budget counts the bytes the open blocks hold, and
 * buffers grown once to BLOCK_BYTES stayed so (a 1 GB launcher log of 2,048 ranks:
 * 62 MB of buffers for 16 MB of events); a log of 32 ranks keeps its 32. */
#define BLOCK_KEEP_CAP ((size_t)8 << 10)
/* A member's fingerprint hashes its first this many decoded bytes and its size (as a
 * file's hashes 4 KiB at each end): no reader uses it yet, and 64 KiB was ~0.9 % of
 * indexing the 1000-run archive. */
#define MEMBER_FP_SPAN 4096
#define PROGRESS_BYTES (32u << 20)
/* With workers, walking and writing take turns (write_window): once this many
 * jobs wait, the writer writes the older half before the walk goes on, and lets
 * go of the jobs done. The job list stays that long whatever the number of files
 * (200,000 files of one line: peak RSS 46 -> 12 MB, when the whole walk came
 * first), and writing starts before the walk ends. DSQ_JOB_WINDOW overrides it. */
#define JOB_WINDOW 1024
#define MAX_MAP_RETRIES 10
/* A file is committed every COMMIT_BYTES of decoded text, so the open write (its
 * dirty pages) stays small whatever the file's size. DSQ_COMMIT_BYTES overrides it
 * (tests use small values to get many commits from small files). */
#define COMMIT_BYTES ((uint64_t)64 << 20)
/* Decoded data is fed to the splitter at most this much at a time, so a plain file
 * (handed out as one mapped chunk) is checkpointed and shows progress like the rest. */
#define FEED_SLICE ((size_t)4 << 20)

/* Work for the worker threads, in walk order (see "Indexing with worker threads"). */
enum job_kind { JOB_INDEX, JOB_PROBLEM, JOB_WALK_PROBLEM };

typedef struct open_block {
    uint32_t host;
    int32_t rank;
    dsq_block b;
} open_block;

struct dsq_indexer {
    dsq_indexer_params p;
    dsq_input *in;
    dsq_lines *lines;
    dsq_scan *scan;
    dsq_rollup *roll;
    open_block *ob; /* the open blocks: nob taken, in the order their (host, rank) came;
                       the first ob_init are set up, with a buffer or none (set when
                       first taken: pages of the table no file used are never touched;
                       a big buffer is let go of once written: BLOCK_KEEP_CAP) */
    int nob, ob_cap, ob_init, last_ob;
    int ob_next;       /* the open block the budget writes out next (flush_part) */
    dsq_idmap *ob_map; /* host << 32 | rank -> 1 + its open block */
    size_t ob_bytes, ob_budget; /* the bytes the open blocks hold, and may hold */
    int ob_max;                 /* the most open blocks: OPEN_BLOCKS_MAX, or DSQ_OPEN_BLOCKS_MAX */
    size_t series_max;          /* SERIES_MAX, or DSQ_SERIES_MAX */
    /* the window of events written by (host, rank) (see REORDER_PAIRS): each event
     * (its header and the fields it uses) at win_at[i] in win_buf, of the pair
     * win_pair[i] (1 + its place among the window's pairs, win_map) */
    int reorder;                /* the file's events go through the window */
    size_t reorder_pairs;       /* REORDER_PAIRS, or DSQ_REORDER_PAIRS */
    unsigned char *win_buf;
    size_t win_len, win_cap;
    uint32_t *win_at, *win_pair, *win_order, *win_count;
    size_t win_n, win_pairs, win_count_cap;
    dsq_idmap *win_map;
    size_t series_peak;         /* the most series a source had in memory */
    /* the file being indexed */
    const char *cur_path;
    const char *cur_inner;  /* the file's path inside its run directory, or NULL */
    int walk_link;          /* the walk's file is a symbolic link: 1, 0, -1 not known */
    const char *walk_rel;   /* ... its path below the walked directory */
    const struct stat *walk_sb; /* ... its stat as the walk found it (NULL: none) */
    const char *walk_run;   /* ... its run's name (a job keeps a copy) */
    atomic_size_t other_shard_dirs; /* run directories walk_enter skipped (another shard's) */
    uint64_t walk_note;     /* the walk's file: its fingerprint read ahead (walk_note), 0: none */
    atomic_int fp_ahead;    /* the last file prepared was indexed as its stat says: the
                               walk's thread reads fingerprints ahead (walk_note) */
    char walk_root[PATH_MAX]; /* the walked directory, resolved; "" when none */
    dsq_dict *link_targets; /* files outside the walked directories reached by a link */
    dsq_dict *linked_files; /* (device, inode) of the files with hard links met so far */
    dsq_error *walk_err;    /* where index failures during a walk go */
    uint32_t cur_source, cur_run, cur_seq;
    uint32_t cur_checkpoints; /* checkpoints of the file so far (see checkpoint) */
    /* problems of the current file's attempt so far, and how many of them to keep
     * quiet: an earlier attempt at it (lost when the map grew) said them already */
    uint32_t file_problems, mute;
    dsq_error *cur_err;     /* where a write failure inside the emit callback goes */
    dsq_index_stats pend;   /* this file's numbers until its commit succeeds */
    const char *cur_abs;    /* the file's absolute path (its source record's key) */
    dsq_source_rec *cur_rec; /* its record so far */
    uint64_t commit_bytes, since_commit;
    size_t feed_slice; /* FEED_SLICE, or commit_bytes when smaller */
    dsq_index_stats st;
    uint64_t progress_mark;
    uint64_t progress_bytes;  /* p.progress_bytes or PROGRESS_BYTES */
    uint64_t cur_in;          /* bytes read so far of the file under way */
    int under_way;            /* a file's numbers are in pend, not yet in st or group_st */
    int in_plain;             /* ... which is plain text: its bytes read are those fed */
    uint64_t t0; /* mono_ns when made */
    char db_real[PATH_MAX];
    /* the directory of the last file resolved, as given and resolved (see resolve) */
    char dir_given[PATH_MAX], dir_real[PATH_MAX];
    size_t dir_len;
    /* indexing with worker threads (p.jobs > 1): see "Indexing with worker threads" */
    int defer;              /* walking: files and problems become jobs */
    pthread_mutex_t mu;     /* guards the job list, next_job, walk_done, stop */
    pthread_cond_t cv;      /* a job was added or taken, or the walk ended */
    struct job *jobs;
    size_t njobs, jobs_cap, next_job;
    size_t jobs_done;       /* the writer's next job (see write_window) */
    size_t job_window;      /* JOB_WINDOW, or DSQ_JOB_WINDOW */
    int walk_done, stop;
    int writing;            /* the writer is in write_jobs: it may wait for any batch */
    struct worker *w;
    int nw;
    /* the prefetcher (see prefetch_main): the next job it looks at, the jobs below
     * pf_until it may read ahead, and its thread (guarded by mu) */
    size_t pf_next, pf_until;
    int pf_quit, pf_started;
    pthread_cond_t pf_cv; /* pf_until grew, a job came that it waits for, or quit */
    pthread_t pf_th;
    /* with workers, files are committed in groups: the jobs written since the last
     * commit, and their numbers (added to st once committed) */
    size_t *group;
    size_t ngroup, group_cap;
    dsq_index_stats group_st;
};

/* The calling thread's CPU time in ns (a system call on some VMs, ~1.4 us: once a
 * thread, not per call). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Nanoseconds on the monotonic clock: the run's time, and a thread's time in a call
 * (stats' where the time went; a read or a queue's wait each, not a line or an
 * event). */
static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Seconds since t0 (mono_ns). */
static double secs_since(uint64_t t0) { return (double)(mono_ns() - t0) / 1e9; }

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

static int add_job(dsq_indexer *ix, int kind, const char *path, const char *abs,
                   const dsq_file_info *fi, const dsq_error *e, dsq_error *err);
static int write_window(dsq_indexer *ix, dsq_error *err);

/* Reports a problem of the file being indexed, unless an earlier attempt at it
 * said it already (a file is read again after the map grew: the problems come in
 * the same order each time). */
static void file_problem(dsq_indexer *ix, const dsq_error *e)
{
    ix->file_problems++;
    if (ix->mute) {
        ix->mute--;
        return;
    }
    if (ix->p.problem)
        ix->p.problem(ix->p.ctx, e);
}

static void problem(dsq_indexer *ix, dsq_error *e, const char *member)
{
    dsq_error_where(e, ix->cur_path, member);
    if (ix->defer) { /* walking for workers: reported in walk order, by the writer */
        if (add_job(ix, JOB_PROBLEM, NULL, NULL, NULL, e, ix->walk_err) == 0)
            return;
    }
    file_problem(ix, e);
}

/* Writes one buffered block and empties it. */
static int put_block(dsq_indexer *ix, open_block *o)
{
    if (o->b.count == 0)
        return 0;
    dsq_block_key k = {ix->cur_run, o->host, o->rank, o->b.t_first, ix->cur_source, ix->cur_seq++};
    int rc = dsq_store_block_put(ix->p.store, &k, &o->b, ix->cur_err);
    ix->ob_bytes -= o->b.len;
    if (o->b.cap > BLOCK_KEEP_CAP && (size_t)ix->ob_init * BLOCK_BYTES > ix->ob_budget)
        dsq_block_free_buf(&o->b);
    else
        dsq_block_reset(&o->b);
    return rc;
}

/* Lets go of every open block (written out or not). */
static void drop_blocks(dsq_indexer *ix)
{
    dsq_idmap_clear(ix->ob_map);
    ix->nob = ix->last_ob = ix->ob_next = 0;
    ix->ob_bytes = 0;
}

/* The open blocks hold the budget: some are written out (OB_FLUSH_PART). */
static int flush_part(dsq_indexer *ix)
{
    size_t keep = ix->ob_budget - ix->ob_budget / OB_FLUSH_PART;
    int rc = 0;
    for (int n = 0; n < ix->nob && ix->ob_bytes > keep && !rc; n++) {
        if (ix->ob_next >= ix->nob)
            ix->ob_next = 0;
        rc = put_block(ix, &ix->ob[ix->ob_next++]);
    }
    return rc;
}

/* Writes out every open block, in the order they were opened. */
static int flush_blocks(dsq_indexer *ix)
{
    int rc = 0;
    for (int i = 0; i < ix->nob && !rc; i++)
        rc = put_block(ix, &ix->ob[i]);
    drop_blocks(ix);
    return rc;
}

/* Room for twice the open blocks; 0, or -1 when out of memory. */
static int grow_blocks(dsq_indexer *ix)
{
    int cap = ix->ob_cap ? 2 * ix->ob_cap : OPEN_BLOCKS_FIRST;
    open_block *ob = realloc(ix->ob, (size_t)cap * sizeof *ob);
    if (!ob)
        return -1;
    ix->ob = ob;
    ix->ob_cap = cap;
    return 0;
}

/* The open block of (host, rank): a new one when it has none, after every block
 * is written out when all are taken and there may be no more. */
static open_block *block_for(dsq_indexer *ix, uint32_t host, int32_t rank, int *rc)
{
    open_block *o = &ix->ob[ix->last_ob];
    if (ix->last_ob < ix->nob && o->host == host && o->rank == rank)
        return o;
    uint64_t key = (uint64_t)host << 32 | (uint32_t)rank;
    uint32_t at = dsq_idmap_get(ix->ob_map, key);
    if (at) {
        ix->last_ob = (int)at - 1;
        return &ix->ob[ix->last_ob];
    }
    if (ix->nob == ix->ob_cap) {
        if (ix->ob_cap < ix->ob_max) {
            if (grow_blocks(ix))
                return NULL;
        } else if ((*rc = flush_blocks(ix))) {
            return NULL;
        }
    }
    if (dsq_idmap_put(ix->ob_map, key, (uint32_t)ix->nob + 1))
        return NULL;
    o = &ix->ob[ix->nob];
    if (ix->nob == ix->ob_init) { /* first taken */
        o->b.buf = NULL;
        o->b.cap = 0;
        o->b.shapes = NULL;
        o->b.shapes_cap = 0;
        ix->ob_init++;
    }
    o->host = host;
    o->rank = rank;
    dsq_block_reset(&o->b);
    ix->last_ob = ix->nob++;
    return o;
}

static int checkpoint(dsq_indexer *ix, int let_go);

/* Buffers one event of the current file (ids of the index's dictionary). */
static int write_now(dsq_indexer *ix, const dsq_event *ev)
{
    int rc = 0;
    open_block *o = block_for(ix, ev->host, ev->rank, &rc);
    if (!o)
        return rc ? rc : dsq_error_set(ix->cur_err, DSQ_ENOMEM, "block table");
    size_t before = o->b.len;
    dsq_num_form forms[DSQ_EV_MAXF]; /* each value's decimal form, found once */
    dsq_ev_forms(ev, forms);
    /* the values the rollup keeps as they are are stored there only: the block
     * names them by the event's number (values once: schema 9) */
    uint64_t event = 0;
    uint32_t kept = 0;
    if ((rc = dsq_rollup_add_forms(ix->roll, ev, forms, &event, &kept, ix->cur_err)))
        return rc;
    if ((rc = dsq_block_add_ref(&o->b, ev, forms, kept, event)))
        return dsq_error_set(ix->cur_err, rc, "out of memory buffering events");
    ix->pend.events++;
    if ((ix->ob_bytes += o->b.len - before) >= ix->ob_budget)
        rc = flush_part(ix);
    else if (o->b.count >= BLOCK_EVENTS || o->b.len >= BLOCK_BYTES)
        rc = put_block(ix, o);
    /* room for the next event's series (its kind's, its times and its fields'), or
     * a checkpoint and the series let go of */
    size_t nseries = dsq_rollup_series(ix->roll);
    if (nseries > ix->series_peak)
        ix->series_peak = nseries;
    if (!rc && nseries + 2 + DSQ_EV_MAXF > ix->series_max && !(rc = checkpoint(ix, 1)))
        dsq_rollup_let_go(ix->roll);
    return rc;
}

/* Forgets the window's events (a file that failed, or one beginning). */
static void window_drop(dsq_indexer *ix)
{
    ix->win_n = ix->win_len = ix->win_pairs = 0;
    dsq_idmap_clear(ix->win_map);
}

/* Writes the window's events by pair, each pair's in their order. */
static int window_write(dsq_indexer *ix)
{
    int rc = 0;
    size_t n = ix->win_n;
    if (!n)
        return 0;
    if (ix->win_pairs > 1) { /* counting sort: where each pair's events start */
        memset(ix->win_count, 0, (ix->win_pairs + 1) * sizeof *ix->win_count);
        for (size_t i = 0; i < n; i++)
            ix->win_count[ix->win_pair[i]]++;
        uint32_t at = 0;
        for (size_t p = 1; p <= ix->win_pairs; p++) {
            uint32_t c = ix->win_count[p];
            ix->win_count[p] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            ix->win_order[ix->win_count[ix->win_pair[i]]++] = (uint32_t)i;
    } else {
        for (size_t i = 0; i < n; i++)
            ix->win_order[i] = (uint32_t)i;
    }
    dsq_event ev;
    for (size_t i = 0; i < n && !rc; i++) {
        const unsigned char *e = ix->win_buf + ix->win_at[ix->win_order[i]];
        memcpy(&ev, e, offsetof(dsq_event, f));
        memcpy(ev.f, e + offsetof(dsq_event, f), ev.nf * sizeof ev.f[0]);
        rc = write_now(ix, &ev);
    }
    window_drop(ix);
    return rc;
}

/* Room in the window for one more event of up to `bytes`; -1 when out of memory. */
static int window_room(dsq_indexer *ix, size_t bytes)
{
    if ((!ix->win_at && !(ix->win_at = malloc(WINDOW_EVENTS * sizeof *ix->win_at))) ||
        (!ix->win_pair && !(ix->win_pair = malloc(WINDOW_EVENTS * sizeof *ix->win_pair))) ||
        (!ix->win_order && !(ix->win_order = malloc(WINDOW_EVENTS * sizeof *ix->win_order))))
        return -1;
    if (ix->win_len + bytes > ix->win_cap) {
        size_t cap = ix->win_cap ? 2 * ix->win_cap : (size_t)1 << 20;
        while (cap < ix->win_len + bytes)
            cap *= 2;
        unsigned char *b = realloc(ix->win_buf, cap);
        if (!b)
            return -1;
        ix->win_buf = b;
        ix->win_cap = cap;
    }
    if (ix->win_pairs + 2 > ix->win_count_cap) {
        size_t cap = ix->win_count_cap ? 2 * ix->win_count_cap : 1024;
        uint32_t *c = realloc(ix->win_count, cap * sizeof *c);
        if (!c)
            return -1;
        ix->win_count = c;
        ix->win_count_cap = cap;
    }
    return 0;
}

/* Writes one event of the current file: at once, or through the window once the
 * file has had REORDER_PAIRS pairs with blocks open. */
static int write_event(dsq_indexer *ix, const dsq_event *ev)
{
    if (!ix->reorder) {
        int rc = write_now(ix, ev);
        if (ix->reorder_pairs && (size_t)ix->nob >= ix->reorder_pairs)
            ix->reorder = 1;
        return rc;
    }
    if (ev->kind == DSQ_EV_ATTR || ev->kind == DSQ_EV_FAILURE || ev->nf > DSQ_EV_MAXF) {
        /* in log order (more fields than an event has: refused there) */
        int rc = window_write(ix);
        return rc ? rc : write_now(ix, ev);
    }
    size_t head = offsetof(dsq_event, f), bytes = (head + ev->nf * sizeof ev->f[0] + 7) & ~(size_t)7;
    if (ix->win_n == WINDOW_EVENTS || ix->win_len + bytes > WINDOW_BYTES) {
        int rc = window_write(ix);
        if (rc)
            return rc;
    }
    if (window_room(ix, bytes))
        return dsq_error_set(ix->cur_err, DSQ_ENOMEM, "out of memory buffering events");
    uint64_t key = (uint64_t)ev->host << 32 | (uint32_t)ev->rank;
    uint32_t pair = dsq_idmap_get(ix->win_map, key);
    if (!pair) {
        pair = (uint32_t)++ix->win_pairs;
        if (dsq_idmap_put(ix->win_map, key, pair))
            return dsq_error_set(ix->cur_err, DSQ_ENOMEM, "out of memory buffering events");
    }
    unsigned char *e = ix->win_buf + ix->win_len;
    memcpy(e, ev, head);
    memcpy(e + head, ev->f, ev->nf * sizeof ev->f[0]);
    ix->win_at[ix->win_n] = (uint32_t)ix->win_len;
    ix->win_pair[ix->win_n++] = pair;
    ix->win_len += bytes;
    return 0;
}

static int on_event(void *ctx, const dsq_event *ev) { return write_event(ctx, ev); }

int dsq_indexer_new(const dsq_indexer_params *params, dsq_indexer **out, dsq_error *err)
{
    dsq_indexer *ix = calloc(1, sizeof *ix);
    if (!ix)
        return dsq_error_set(err, DSQ_ENOMEM, "indexer");
    ix->p = *params;
    ix->walk_link = -1;
    ix->progress_bytes = params->progress_bytes ? params->progress_bytes : PROGRESS_BYTES;
    pthread_mutex_init(&ix->mu, NULL);
    pthread_cond_init(&ix->cv, NULL);
    pthread_cond_init(&ix->pf_cv, NULL);
    dsq_lines_params lp = {params->max_line, dsq_scan_line, NULL};
    dsq_scan_params sp = {.dict = dsq_store_dict(params->store), .emit = on_event, .ctx = ix};
    if (dsq_input_new(&ix->in) || dsq_scan_new(&sp, &ix->scan) ||
        dsq_rollup_new(params->store, &ix->roll) || dsq_dict_new(&ix->link_targets) ||
        dsq_dict_new(&ix->linked_files) || grow_blocks(ix) ||
        dsq_idmap_new(OPEN_BLOCKS_FIRST, &ix->ob_map) || dsq_idmap_new(1024, &ix->win_map))
        goto nomem;
    lp.ctx = ix->scan;
    if (dsq_lines_new(&lp, &ix->lines))
        goto nomem;
    if (!params->db_dir || !realpath(params->db_dir, ix->db_real))
        ix->db_real[0] = 0;
    const char *cb = getenv("DSQ_COMMIT_BYTES");
    ix->commit_bytes = cb && strtoull(cb, NULL, 10) > 0 ? strtoull(cb, NULL, 10) : COMMIT_BYTES;
    ix->feed_slice = ix->commit_bytes < FEED_SLICE ? (size_t)ix->commit_bytes : FEED_SLICE;
    const char *ob = getenv("DSQ_OPEN_BLOCK_BYTES");
    ix->ob_budget = ob && strtoull(ob, NULL, 10) > 0 ? (size_t)strtoull(ob, NULL, 10) : OPEN_BLOCK_BYTES;
    const char *om = getenv("DSQ_OPEN_BLOCKS_MAX"); /* (the table doubles from 256 under it) */
    long omv = om ? strtol(om, NULL, 10) : 0;
    ix->ob_max = omv >= OPEN_BLOCKS_FIRST && omv <= OPEN_BLOCKS_MAX * 4 ? (int)omv : OPEN_BLOCKS_MAX;
    const char *rp = getenv("DSQ_REORDER_PAIRS");
    ix->reorder_pairs = rp && *rp ? (size_t)strtoull(rp, NULL, 10) : REORDER_PAIRS;
    const char *sm = getenv("DSQ_SERIES_MAX");
    ix->series_max = sm && strtoull(sm, NULL, 10) > 0 ? (size_t)strtoull(sm, NULL, 10) : SERIES_MAX;
    const char *jw = getenv("DSQ_JOB_WINDOW"); /* tests: a small one on few files */
    ix->job_window = jw && strtoull(jw, NULL, 10) >= 2 ? (size_t)strtoull(jw, NULL, 10) : JOB_WINDOW;
    ix->t0 = mono_ns();
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
    for (int i = 0; i < ix->ob_init; i++)
        dsq_block_free_buf(&ix->ob[i].b);
    free(ix->ob);
    dsq_idmap_free(ix->ob_map);
    dsq_idmap_free(ix->win_map);
    free(ix->win_buf);
    free(ix->win_at);
    free(ix->win_pair);
    free(ix->win_order);
    free(ix->win_count);
    dsq_input_free(ix->in);
    dsq_lines_free(ix->lines);
    dsq_scan_free(ix->scan);
    dsq_rollup_free(ix->roll);
    dsq_dict_free(ix->link_targets);
    dsq_dict_free(ix->linked_files);
    free(ix->group);
    pthread_mutex_destroy(&ix->mu);
    pthread_cond_destroy(&ix->cv);
    pthread_cond_destroy(&ix->pf_cv);
    free(ix);
}

size_t dsq_indexer_series_peak(const dsq_indexer *ix) { return ix->series_peak; }

const dsq_index_stats *dsq_indexer_stats(const dsq_indexer *ix) { return &ix->st; }

static void add_stats(dsq_index_stats *to, const dsq_index_stats *from)
{
    to->members += from->members;
    to->members_failed += from->members_failed;
    to->bytes_in += from->bytes_in;
    to->bytes_decoded += from->bytes_decoded;
    to->lines += from->lines;
    to->cut_lines += from->cut_lines;
    to->events += from->events;
    to->files_ahead += from->files_ahead;
}

/* The numbers so far (files written but not yet committed in a group included). */
static void maybe_progress(dsq_indexer *ix, int force)
{
    const dsq_index_stats *cur = ix->under_way ? &ix->pend : NULL;
    uint64_t done = ix->st.bytes_decoded + ix->group_st.bytes_decoded +
                    (cur ? cur->bytes_decoded : 0);
    if (!ix->p.progress || (!force && done - ix->progress_mark < ix->progress_bytes))
        return;
    ix->progress_mark = done;
    dsq_index_stats now = ix->st;
    now.files_indexed += ix->group_st.files_indexed;
    add_stats(&now, &ix->group_st);
    now.bytes_decoded = done;
    if (cur) { /* the file under way: what was read and found of it so far */
        now.bytes_in += ix->cur_in;
        now.events += cur->events;
    }
    now.seconds = secs_since(ix->t0);
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
static uint32_t host_from_path(dsq_dict *d, const char *path)
{
    char base[256];
    if (!path || !*path)
        return 0;
    const char *slash = strrchr(path, '/');
    dsq_name_strip_ext(slash ? slash + 1 : path, base, sizeof base);
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

/* The files of the open group are committed: count them. */
static void group_committed(dsq_indexer *ix)
{
    ix->st.files_indexed += ix->group_st.files_indexed;
    add_stats(&ix->st, &ix->group_st);
    memset(&ix->group_st, 0, sizeof ix->group_st);
    ix->ngroup = 0;
}

/* Commits what a big file has given so far, its source record marked partial, and
 * opens the next write. Events the scanner still holds (a memory report waiting
 * for its last line), and those of the open blocks, go into a later commit: the
 * blocks stay open (writing them all out here gave a big job's log, 2,048 ranks
 * in 100 MB, twice the blocks and 2.7 times the block pages). */
static int checkpoint(dsq_indexer *ix, int let_go)
{
    dsq_source_rec rec = *ix->cur_rec;
    int rc;
    ix->since_commit = 0;
    /* in parts once the file's first checkpoint is committed: the write then holds
     * this file's chunks, blocks (held to the end) and member records only, where
     * the first may drop its old source or carry the group's other files */
    dsq_store_parts(ix->p.store, ix->cur_checkpoints++ > 0);
    /* (a checkpoint that lets series go comes from write_now, maybe while the
     * window is written: its other events go into a later commit). Once blocks
     * are written, which name values kept in their series by event, every series
     * is written whole, so that a query of the partial source finds every value
     * (evfill.c); before, only the series that wrote chunks. */
    if ((!let_go && (rc = window_write(ix))) ||
        (rc = dsq_rollup_checkpoint(ix->roll, let_go || ix->cur_seq > 0, ix->cur_err)))
        return rc;
    rec.id = ix->cur_source;
    rec.nblocks = ix->cur_seq;
    rec.flags |= DSQ_SRC_PARTIAL;
    if ((rc = dsq_store_source_put(ix->p.store, ix->cur_abs, &rec, ix->cur_err)) ||
        (rc = dsq_store_commit(ix->p.store, ix->cur_err)))
        return rc;
    group_committed(ix);
    return dsq_store_begin(ix->p.store, ix->cur_err);
}

static int member_done(dsq_indexer *ix, dsq_source_rec *rec, dsq_member_rec *mr,
                       const dsq_scan_stats *ss, const char *name, uint32_t idx);

/* Streams one member through splitter and scanner. Returns a write error (stop);
 * a damaged member is reported and ends with what was read. */
static int index_member(dsq_indexer *ix, const dsq_member_info *mi, dsq_source_rec *rec,
                        uint32_t idx)
{
    dsq_error e;
    dsq_error_clear(&e);
    dsq_lines_reset(ix->lines);
    const char *inner = mi->name[0] ? mi->name : ix->cur_inner;
    dsq_scan_begin(ix->scan, host_from_path(dsq_store_dict(ix->p.store), inner),
                   rank_from_name(mi->name[0] ? mi->name : ix->cur_path));
    dsq_scan_set_written(ix->scan, mi->mtime_ns / 1000);
    dsq_member_rec mr = {.mtime_ns = mi->mtime_ns};
    int rc = 0;
    for (;;) {
        const char *data;
        size_t len;
        uint64_t t = mono_ns();
        int rr = dsq_input_read(ix->in, &data, &len, &e);
        ix->st.reading += secs_since(t);
        if (rr != 0) {
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
            mr.fingerprint = dsq_hash64_bulk(data, len < MEMBER_FP_SPAN ? len : MEMBER_FP_SPAN, 0);
        mr.size += len;
        for (size_t off = 0, n; off < len; off += n) { /* a mapped plain file is one chunk */
            n = len - off < ix->feed_slice ? len - off : ix->feed_slice;
            if ((rc = dsq_lines_feed(ix->lines, data + off, n)))
                return rc;
            ix->pend.bytes_decoded += n;
            ix->cur_in = ix->in_plain ? ix->pend.bytes_decoded : dsq_input_bytes_in(ix->in);
            maybe_progress(ix, 0);
            if ((ix->since_commit += n) >= ix->commit_bytes && (rc = checkpoint(ix, 0)))
                return rc;
        }
    }
    if ((rc = dsq_lines_finish(ix->lines)) || (rc = dsq_scan_end(ix->scan)))
        return rc;
    return member_done(ix, rec, &mr, dsq_scan_stats_get(ix->scan), mi->name, idx);
}

/* A member has been read: its numbers go into the file's record and its member
 * record is written. mr has size, mtime, status and the fingerprint of its start. */
static int member_done(dsq_indexer *ix, dsq_source_rec *rec, dsq_member_rec *mr,
                       const dsq_scan_stats *ss, const char *name, uint32_t idx)
{
    mr->lines = ss->lines;
    mr->events = ss->events;
    mr->fingerprint = dsq_hash64(&mr->size, sizeof mr->size, mr->fingerprint);
    rec->lines += ss->lines;
    rec->cut_lines += ss->cut;
    rec->events += ss->events;
    rec->bytes_decoded += mr->size;
    rec->members++;
    for (int f = 0; f < DSQ_FAM_COUNT && f < DSQ_REC_FAMILIES; f++)
        rec->family_lines[f] += ss->family_lines[f];
    for (int l = 0; l < DSQ_LV_COUNT && l < DSQ_REC_LEVELS; l++)
        rec->level_lines[l] += ss->level_lines[l];
    ix->pend.members++;
    ix->pend.lines += ss->lines;
    ix->pend.cut_lines += ss->cut;
    return dsq_store_member_put(ix->p.store, ix->cur_source, idx, mr, name, ix->cur_err);
}

/* Reads every member of the open input into the open transaction. */
static int index_members(dsq_indexer *ix, dsq_source_rec *rec)
{
    dsq_member_info mi;
    dsq_error e;
    for (uint32_t idx = 0;; idx++) {
        dsq_error_clear(&e);
        uint64_t t = mono_ns();
        int r = dsq_input_next_member(ix->in, &mi, &e);
        dsq_error d;
        dsq_error_clear(&d);
        int damaged = dsq_input_take_damage(ix->in, &d);
        ix->st.reading += secs_since(t);
        if (damaged) {
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

/* A write of the current file failed: abort it. DSQ_ELIMIT: the map is full and
 * grown (by the abort, or by a commit that hit it), redo the file. */
static int file_failed(dsq_indexer *ix, int status, dsq_error *err)
{
    drop_blocks(ix);
    window_drop(ix);
    ix->under_way = 0;
    if (status == DSQ_ELIMIT)
        return dsq_store_writing(ix->p.store) ? dsq_store_commit(ix->p.store, err) : DSQ_ELIMIT;
    dsq_store_abort(ix->p.store);
    return status;
}

/* At the end of a file whose events took much memory (a big job's log: its series'
 * table and chunk buffers, thousands of open blocks' buffers, the window: ~85 MB for
 * 2,048 ranks), it is let go of before its last commit, and is not held through the
 * files after it. A file of few series and ranks keeps it for the next. */
#define WINDOW_KEEP ((size_t)1 << 20)
static void let_go_of_big(dsq_indexer *ix)
{
    dsq_rollup_trim(ix->roll);
    if ((size_t)ix->ob_init * BLOCK_BYTES > ix->ob_budget)
        for (int i = 0; i < ix->ob_init; i++)
            dsq_block_free_buf(&ix->ob[i].b);
    if (ix->win_cap > WINDOW_KEEP) {
        free(ix->win_buf);
        ix->win_buf = NULL;
        ix->win_cap = 0;
    }
}

/* The current file has been read: its last blocks, rollups and its source record
 * (complete), in the open write (the caller commits). */
static int file_done(dsq_indexer *ix, const char *abs, dsq_source_rec *rec, dsq_error *err)
{
    int status;
    if ((status = window_write(ix)) || (status = flush_blocks(ix)) ||
        (status = dsq_rollup_finish(ix->roll, err)))
        return file_failed(ix, status, err);
    let_go_of_big(ix);
    rec->id = ix->cur_source;
    rec->nblocks = ix->cur_seq;
    if ((status = dsq_store_source_put(ix->p.store, abs, rec, err)))
        return file_failed(ix, status, err);
    return 0;
}

/* Starts the write of a file: its old source dropped, a new id, an empty rollup. */
static int file_begin(dsq_indexer *ix, const char *abs, dsq_source_rec *rec,
                      const dsq_file_info *fi, dsq_error *err)
{
    *rec = (dsq_source_rec){.version = 1, .run = ix->cur_run, .size = fi->size,
                            .mtime_ns = fi->mtime_ns, .fingerprint = fi->fingerprint};
    memset(&ix->pend, 0, sizeof ix->pend);
    window_drop(ix);
    ix->reorder = 0;
    ix->cur_in = 0;
    ix->under_way = 1;
    ix->cur_err = err;
    ix->cur_seq = 0;
    ix->cur_checkpoints = 0;
    ix->cur_abs = abs;
    ix->cur_rec = rec;
    ix->since_commit = 0;
    int status = dsq_store_writing(ix->p.store) ? 0 : dsq_store_begin(ix->p.store, err);
    if (status) /* (a write is open when files are committed in groups) */
        return status;
    if ((status = dsq_store_source_drop(ix->p.store, abs, err)) ||
        (status = dsq_store_source_new_id(ix->p.store, &ix->cur_source, err)))
        return file_failed(ix, status, err);
    dsq_rollup_begin(ix->roll, ix->cur_run, ix->cur_source);
    return 0;
}

/* One attempt at a file, into the open write (begun here when none is open); the
 * caller commits. 0: written; 1: it could not be opened (reported and counted,
 * nothing written); DSQ_ELIMIT: the map grew and the open write is gone; another
 * error: the write is aborted. The input is opened before anything is written, so
 * a file that cannot be read leaves the open write, and the group in it, alone. */
static int index_file_once(dsq_indexer *ix, const char *abs, const dsq_file_info *fi,
                           dsq_error *err)
{
    dsq_source_rec rec;
    dsq_error e;
    dsq_error_clear(&e);
    dsq_file_info fp;
    if (!fi->fp_known) { /* walked for workers: the fingerprint is the reader's (size
                            and mtime stay the walk's: a file changed since is indexed
                            again next time, never skipped wrongly) */
        fp = *fi;
        if (dsq_input_fingerprint(abs, &fp, &e) == 0)
            fi = &fp;
    }
    uint64_t t = mono_ns();
    int failed = e.code || dsq_input_open(ix->in, abs, &e) != 0;
    ix->st.reading += secs_since(t);
    if (failed) {
        problem(ix, &e, NULL);
        memset(&ix->pend, 0, sizeof ix->pend);
        ix->st.files_failed++;
        return 1;
    }
    ix->in_plain = strcmp(dsq_input_format(ix->in), "plain") == 0;
    int status = file_begin(ix, abs, &rec, fi, err);
    if (status) {
        dsq_input_close(ix->in);
        return status;
    }
    status = index_members(ix, &rec);
    ix->pend.bytes_in = dsq_input_bytes_in(ix->in);
    dsq_input_close(ix->in);
    if (status)
        return file_failed(ix, status, err);
    return file_done(ix, abs, &rec, err);
}

/* Whether abs is indexed as it is now (complete, same size, mtime, fingerprint and
 * run): then it is skipped and its old damage reported again. 1 skipped, 0 not,
 * <0 the index failed. */
static int skip_unchanged(dsq_indexer *ix, const char *abs, const dsq_file_info *fi,
                          dsq_error *err)
{
    dsq_source_rec old;
    dsq_error e;
    dsq_error_clear(&e);
    int found = dsq_store_source_find(ix->p.store, abs, &old, err);
    if (found < 0)
        return found;
    int same = found && old.size == fi->size && old.mtime_ns == fi->mtime_ns &&
               old.run == ix->cur_run && !(old.flags & DSQ_SRC_PARTIAL);
    atomic_store_explicit(&ix->fp_ahead, same, memory_order_relaxed); /* (a re-run) */
    if (!same)
        return 0;
    dsq_file_info now = *fi;
    if (!now.fp_known && dsq_input_fingerprint(abs, &now, &e) != 0)
        return 0; /* indexed, and whatever keeps it from being read reported then */
    if (old.fingerprint != now.fingerprint)
        return 0;
    ix->st.files_unchanged++;
    ix->st.bytes_unchanged += fi->size;
    if (old.errors) { /* the same damage as last time: say so again */
        dsq_error_set(&e, DSQ_EFORMAT,
                      "unchanged since it was indexed with %u damaged members or reads (the "
                      "rest is indexed)",
                      old.errors);
        problem(ix, &e, NULL);
    }
    return 1;
}

/* The file under way is done with: the progress says so. */
static void file_end(dsq_indexer *ix)
{
    ix->under_way = 0;
    maybe_progress(ix, 1);
}

/* Indexes a file here, in a commit of its own (a new attempt when the map grew),
 * and counts it. No file may be waiting for a commit in the open write (the open
 * group is empty). */
static int index_file_now(dsq_indexer *ix, const char *abs, const dsq_file_info *fi,
                          uint32_t said, dsq_error *err)
{
    int status = DSQ_ELIMIT;
    for (int i = 0; i < MAX_MAP_RETRIES && status == DSQ_ELIMIT; i++) {
        ix->file_problems = 0;
        ix->mute = said;
        if ((status = index_file_once(ix, abs, fi, err)) == 0)
            status = dsq_store_commit(ix->p.store, err);
        if (ix->file_problems > said)
            said = ix->file_problems;
    }
    ix->mute = 0;
    if (status == 0 && ix->pend.members + ix->pend.members_failed > 0) {
        ix->st.files_indexed++;
        add_stats(&ix->st, &ix->pend);
    }
    file_end(ix);
    return status > 0 ? 0 : status;
}

/* The absolute, resolved path of a file. Files of one directory come one after
 * another in a walk, so the directory is resolved once and the name appended; only
 * a file that is itself a symbolic link is resolved whole (the walk says which
 * are: ix->walk_link; else lstat tells). -1 with errno. */
static int resolve(dsq_indexer *ix, const char *path, char *abs)
{
    const char *slash = strrchr(path, '/');
    struct stat sb;
    /* a walk enters real directories only (no directory link is followed): below
     * the resolved root, a file that is no link is where its path says */
    if (ix->walk_link == 0 && ix->walk_root[0] && ix->walk_rel && *ix->walk_rel) {
        const char *sep = strcmp(ix->walk_root, "/") == 0 ? "" : "/";
        if ((size_t)snprintf(abs, PATH_MAX, "%s%s%s", ix->walk_root, sep, ix->walk_rel) >=
            PATH_MAX) {
            errno = ENAMETOOLONG;
            return -1;
        }
        return 0;
    }
    if (!slash || ix->walk_link == 1 ||
        (ix->walk_link < 0 && (lstat(path, &sb) != 0 || S_ISLNK(sb.st_mode))))
        return realpath(path, abs) ? 0 : -1;
    size_t dn = (size_t)(slash - path);
    if (!ix->dir_len || dn != ix->dir_len || memcmp(path, ix->dir_given, dn) != 0) {
        char d[PATH_MAX];
        ix->dir_len = 0;
        if (dn >= sizeof d)
            return realpath(path, abs) ? 0 : -1;
        memcpy(d, path, dn);
        d[dn] = 0;
        if (!realpath(dn ? d : "/", ix->dir_real))
            return -1;
        memcpy(ix->dir_given, path, dn);
        ix->dir_len = dn ? dn : 1; /* "/x": the root, remembered as given "" */
        if (!dn)
            ix->dir_given[0] = '/';
    }
    const char *sep = strcmp(ix->dir_real, "/") == 0 ? "" : "/";
    if ((size_t)snprintf(abs, PATH_MAX, "%s%s%s", ix->dir_real, sep, slash + 1) >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* Whether the walk's file, resolved to abs, is a symbolic link to a file it indexes
 * under another name: one inside the walked directory (walked under its own name,
 * before or after the link), or one outside it that an earlier link reached. The
 * file is indexed once, in the run its own name (or first link) gives, whichever
 * name the walk meets first, so -j 1 and -j 2 and every re-run agree. 1 such a
 * link; 0 not; <0 out of memory. */
static int link_skipped(dsq_indexer *ix, const char *abs)
{
    size_t n = strlen(ix->walk_root);
    if (ix->walk_link != 1 || !n)
        return 0;
    int inside = strcmp(ix->walk_root, "/") == 0 ||
                 (strncmp(abs, ix->walk_root, n) == 0 && abs[n] == '/');
    size_t db = strlen(ix->db_real); /* (the index is never walked: a link into it is not) */
    if (inside && !(db && strncmp(abs, ix->db_real, db) == 0 && abs[db] == '/'))
        return 1;
    uint32_t known = dsq_dict_count(ix->link_targets);
    if (!dsq_dict_intern(ix->link_targets, abs, strlen(abs)))
        return DSQ_ENOMEM;
    return dsq_dict_count(ix->link_targets) == known;
}

/* Whether the file (stat'ed into fi) is a hard link to one met before under another
 * name: the first name the walk meets is the one indexed, so -j 1 and -j 2 and every
 * re-run agree. Only files with more than one name are remembered. 1 such a name;
 * 0 not; <0 out of memory. */
static int hard_link_skipped(dsq_indexer *ix, const dsq_file_info *fi)
{
    if (fi->nlink < 2)
        return 0;
    uint64_t key[2] = {fi->dev, fi->ino};
    uint32_t known = dsq_dict_count(ix->linked_files);
    if (!dsq_dict_intern(ix->linked_files, (const char *)key, sizeof key))
        return DSQ_ENOMEM;
    return dsq_dict_count(ix->linked_files) == known;
}

/* Resolves and stats a file, names its run (ix->cur_run) and skips it when
 * unchanged or a link to a file indexed under another name. 1: it needs indexing
 * (abs and fi filled); 0: done with (skipped, or a problem reported); <0: the
 * index failed. */
static int prepare_file(dsq_indexer *ix, const char *path, const char *run, char *abs,
                        dsq_file_info *fi, dsq_error *err)
{
    dsq_error e;
    dsq_error_clear(&e);
    ix->cur_path = path;
    ix->st.files_seen++;
    int resolved = resolve(ix, path, abs);
    int link = resolved == 0 ? link_skipped(ix, abs) : 0;
    if (link < 0)
        return dsq_error_set(err, DSQ_ENOMEM, "link targets");
    if (link) {
        ix->st.links_skipped++;
        return 0;
    }
    /* walking for workers, the file is only stat'ed (by the walk, when it did so
     * already): its reader fingerprints it; during a re-run the walk's thread may
     * have read its fingerprint ahead (walk_note), for skip_unchanged only */
    if (resolved == 0 && ix->defer && ix->walk_sb) {
        dsq_input_info_of(ix->walk_sb, fi);
        if (ix->walk_note) {
            fi->fingerprint = ix->walk_note;
            fi->fp_known = 1;
        }
    } else if (resolved != 0 ||
             (ix->defer ? dsq_input_stat_quick(abs, fi, &e) : dsq_input_stat(abs, fi, &e)) != 0) {
        if (e.code == 0)
            dsq_error_set(&e, DSQ_EIO, "%s", strerror(errno));
        problem(ix, &e, NULL);
        ix->st.files_failed++;
        return 0;
    }
    if ((link = hard_link_skipped(ix, fi)) != 0) {
        if (link < 0)
            return dsq_error_set(err, DSQ_ENOMEM, "hard links");
        ix->st.links_skipped++;
        return 0;
    }
    /* walking for workers, a new run is interned by the writer when it writes the
     * file (par_job), so ids follow the files, not how far the walk ran ahead; a
     * run not interned yet has no file indexed */
    dsq_dict *d = dsq_store_dict(ix->p.store);
    ix->cur_run = ix->defer ? dsq_dict_find(d, run, strlen(run))
                            : dsq_dict_intern(d, run, strlen(run));
    if (!ix->cur_run && !ix->defer)
        return dsq_error_set(err, DSQ_ENOMEM, "dictionary");
    int r = ix->cur_run ? skip_unchanged(ix, abs, fi, err) : 0;
    if (r == 0 && ix->defer && ix->walk_note)
        fi->fp_known = 0; /* to index: its worker's fingerprint is of the bytes it reads */
    return r < 0 ? r : !r;
}

/* ==== Indexing with worker threads (jobs > 1) ===================================
 *
 * The walk (in the writer, the calling thread) turns files into jobs, in walk order; a
 * file that needs no decoding (skipped, failed to stat) becomes a job that only
 * reports its problem. Walking and writing take turns (write_window), so the job list
 * stays short however many files there are. Worker threads take the files to index in
 * that order, each decoding, splitting and scanning one file at a time with its own
 * decoder, scanner and dictionary, and put what they find into batches (batch.h):
 * events with worker-local ids, the new strings before them (and at the file's end
 * those after its last event), decoded byte counts, member results and problems. So
 * the index's dictionary takes each file's new strings while the writer writes it,
 * after its run's name (interned there too, not in the walk), as in one thread: its
 * ids do not depend on which worker read which file, nor on how far the walk ran
 * ahead. Each worker has a few batches circulating between a free queue and a full
 * queue (bq.h), which bounds memory and lets it run ahead of the writer by that much.
 * The writer takes jobs in order and replays each file's messages exactly as the
 * single-threaded path writes a file: into the open group, checkpoints every
 * commit_bytes, the same blocks, rollups and records. Only the writer touches the
 * store. When the map is full the file's remaining messages are drained and the writer
 * indexes the group and the file again itself. A worker decodes a big compressed file
 * on a second thread when a core is spare (w_ahead). */

typedef struct job {
    int kind;
    int worker;        /* JOB_INDEX: the worker that took it; -1 until one does */
    char *path, *abs, *inner, *run; /* one allocation (inner may be NULL) */
    dsq_file_info fi;
    dsq_error *err;    /* JOB_*PROBLEM: what to report */
    uint32_t said;     /* JOB_INDEX: the problems its attempt reported (file_problem) */
} job;

enum msg_type {
    MSG_EVENT = DSQ_BATCH_STR + 1,
    MSG_BYTES,       /* uint64_t[2]: decoded bytes fed to the splitter, and the bytes of
                        the file read so far (compressed; for a plain file those fed) */
    MSG_PROBLEM,     /* msg_problem */
    MSG_MEMBER_END,  /* msg_member, then the member's name */
    MSG_OPEN_FAILED, /* dsq_error */
    MSG_FILE_START,  /* uint64_t: the file's fingerprint (the walk only stat'ed it) */
    MSG_FILE_END     /* msg_file_end */
};

typedef struct msg_problem {
    dsq_error e;   /* where it happened already filled */
    int counts;    /* a damaged member or read (counted in the file's errors) */
} msg_problem;

typedef struct msg_member {
    dsq_member_rec mr;
    dsq_scan_stats ss;
    uint32_t idx;
} msg_member;

typedef struct msg_file_end {
    uint64_t bytes_in;
    int64_t status; /* 0, or why the worker stopped (out of memory) */
    uint64_t ahead; /* the file was decoded ahead (from some point) */
} msg_file_end;

/* A batch holding a file's end is sent once the next file has fed this much text:
 * a big file that gives few events (whose messages would take long to fill the
 * batch) does not keep the writer waiting for the small file before it. */
#define HELD_END_BYTES ((uint64_t)1 << 20)

/* A worker can run ahead of the writer by WORKER_BATCHES batches: many small
 * batches, not a few big ones, let it go on with the next small files while the writer
 * is still on the other worker's big one (6 of 1 MiB kept both cores 70-80 % busy;
 * 96 of 64 KiB, the same memory: 100-run archive -20 %, 1000 runs -23 %, one big file
 * -13 %; 192 gained nothing more there; on the 2 GB single log 192 kept the worker from
 * waiting ~0.1 s for the writer's bursts, but the 8 GB log of 2,048 ranks, whose writer
 * is behind, went 10-20 % slower and its peak RSS 246 -> 253 MB).
 *
 * Files share batches: a batch is sent when full, once the file after the end it
 * holds fed HELD_END_BYTES, when its worker waits for a job while the writer writes
 * (write_jobs; while the writer walks it waits for no batch), or as it stops. When
 * every file ended its batch, 96 of them held 96 small files (on the 1000-run
 * archive ~10 kB of messages a file in 64 KiB), both workers often waited for a
 * writer's burst and a core idled: sharing batches took the archive from 0.77 to
 * 0.72 s, its peak RSS 71 -> 65 MB. The free batches are a pool (bq.h): the one the
 * writer handed back last is filled next, so a worker whose writer keeps up touches
 * a few batches' pages, not all 96 (a fresh page costs a fault). */
#define WORKER_BATCHES 96
#define WORKER_BATCH_BYTES ((size_t)64 << 10)
/* all workers' batches together stay under this (smaller batches with many workers) */
#define BATCH_BUDGET ((size_t)48 << 20)
#define WORKER_STOPPED 1 /* internal: the writer asked the workers to stop */

typedef struct worker {
    dsq_indexer *ix;
    pthread_t th;
    int started;
    dsq_dict *dict;
    dsq_readahead *ra;  /* the worker's input, decoded ahead on a thread when it pays */
    int ahead_mode;     /* AHEAD_*: when to decode ahead (DSQ_READAHEAD, see w_ahead) */
    int ahead_ok;       /* worker: the open file may still start decoding ahead */
    atomic_int busy;    /* 1 while the worker has a file (read by the others) */
    atomic_int ahead_on; /* 1 while its file is decoded ahead (read by the others) */
    dsq_lines *lines;
    dsq_scan *scan;
    dsq_bq *free_q, *full_q;
    dsq_batch batches[WORKER_BATCHES];
    dsq_batch *cur;     /* worker: the batch being filled */
    uint32_t sent;      /* worker: local ids whose strings were put */
    const char *path;   /* worker: the file being read, as walked */
    int plain;          /* worker: ... is plain text (read = fed), and how much was fed */
    uint64_t fed;
    /* worker: its time in the input's calls (open, members, reads: reading and
     * decoding), on files, and waiting for free batches (ns; the writer sums them
     * into the stats once the worker is joined) */
    uint64_t read_ns, file_ns, wait_ns, cpu_ns;
    uint64_t sent_batches; /* worker: batches it handed to the writer */
    int held_end;       /* worker: cur holds a file's end (see HELD_END_BYTES) */
    int nice;           /* worker: dsq_thread_nicer's result (-1: refused) */
    /* writer side */
    dsq_remap remap;
    dsq_batch *rd;      /* the batch being read, NULL when none */
    dsq_batch_iter it;
} worker;

/* --- the walk: jobs ---------------------------------------------------------- */

static int add_job(dsq_indexer *ix, int kind, const char *path, const char *abs,
                   const dsq_file_info *fi, const dsq_error *e, dsq_error *err)
{
    job j = {.kind = kind, .worker = -1};
    if (kind == JOB_INDEX) {
        size_t lp = strlen(path) + 1, la = strlen(abs) + 1, lr = strlen(ix->walk_run) + 1;
        size_t li = ix->cur_inner ? strlen(ix->cur_inner) + 1 : 0;
        if (!(j.path = malloc(lp + la + lr + li)))
            return dsq_error_set(err, DSQ_ENOMEM, "job list");
        memcpy(j.path, path, lp);
        j.abs = memcpy(j.path + lp, abs, la);
        j.run = memcpy(j.path + lp + la, ix->walk_run, lr);
        j.inner = li ? memcpy(j.path + lp + la + lr, ix->cur_inner, li) : NULL;
        j.fi = *fi;
    } else {
        if (!(j.err = malloc(sizeof *j.err)))
            return dsq_error_set(err, DSQ_ENOMEM, "job list");
        *j.err = *e;
    }
    pthread_mutex_lock(&ix->mu);
    if (ix->njobs == ix->jobs_cap) {
        size_t cap = ix->jobs_cap ? ix->jobs_cap * 2 : 256;
        job *nj = realloc(ix->jobs, cap * sizeof *nj);
        if (!nj) {
            pthread_mutex_unlock(&ix->mu);
            free(j.path);
            free(j.err);
            return dsq_error_set(err, DSQ_ENOMEM, "job list");
        }
        ix->jobs = nj;
        ix->jobs_cap = cap;
    }
    ix->jobs[ix->njobs++] = j;
    pthread_cond_broadcast(&ix->cv);
    if (ix->pf_until >= ix->njobs) /* the prefetcher waits for this one */
        pthread_cond_signal(&ix->pf_cv);
    pthread_mutex_unlock(&ix->mu);
    return 0;
}

/* Empties the job list, keeping its array. */
static void clear_jobs(dsq_indexer *ix)
{
    for (size_t i = 0; i < ix->njobs; i++) {
        free(ix->jobs[i].path);
        free(ix->jobs[i].err);
    }
    ix->njobs = ix->next_job = ix->jobs_done = 0;
}

/* Lets go of the jobs the writer is done with, moving the rest to the front; only
 * between groups, as the open group's files may be read again (redo_group). */
static void trim_jobs(dsq_indexer *ix)
{
    size_t k = ix->jobs_done;
    if (ix->ngroup || k == 0)
        return;
    for (size_t i = 0; i < k; i++) {
        free(ix->jobs[i].path);
        free(ix->jobs[i].err);
    }
    pthread_mutex_lock(&ix->mu);
    memmove(ix->jobs, ix->jobs + k, (ix->njobs - k) * sizeof *ix->jobs);
    ix->njobs -= k;
    /* workers took every job index written before k (problems they skip) */
    ix->next_job = ix->next_job > k ? ix->next_job - k : 0;
    ix->pf_next = ix->pf_next > k ? ix->pf_next - k : 0;
    ix->pf_until = ix->pf_until > k ? ix->pf_until - k : 0;
    pthread_mutex_unlock(&ix->mu);
    ix->jobs_done = 0;
}

static void free_jobs(dsq_indexer *ix)
{
    clear_jobs(ix);
    free(ix->jobs);
    ix->jobs = NULL;
    ix->jobs_cap = 0;
}

/* --- files committed in groups (with or without workers) ---------------------
 *
 * A commit costs far more than a small file's writes (LMDB writes every page the
 * write touched, and copies the path of pages to each changed one), so files are
 * written into one open write until GROUP_FILES of them or commit_bytes of text
 * are in it. The open group is the list of its files' jobs (ix->group, indexes
 * into ix->jobs) and their numbers (group_st), added to the statistics only once
 * the group is committed. When the map fills, LMDB's write is lost with every file
 * of the group: they are indexed again one by one (redo_group). A kill loses the
 * open group only; what was committed holds whole files or partial-marked ones. */

/* Files are committed together until this many, or commit_bytes of text. Every
 * commit writes each page it touched: on 1000 runs of ~10 kB per-rank files, 32
 * files a commit wrote 470 MB of pages for an 83 MB index, 128 wrote 288 MB and
 * took 7 % less CPU, 256 250 MB (peak RSS 66 -> 70 -> 76 MB). 256 gained little
 * while the writer waited for batches; once the workers' files shared batches
 * (WORKER_BATCHES) the writer's CPU counts in full: 128 -> 256 took the 1000-run
 * archive 0.73 -> 0.71 s (CPU -3 %, 15 alternating rounds), the 8,000-file run 0.30
 * -> 0.29 s, peak RSS 66 -> 73 MB, the index 1 % smaller. */
#define GROUP_FILES 256

/* Makes room in the open group for one more file. */
static int group_reserve(dsq_indexer *ix, dsq_error *err)
{
    if (ix->ngroup < ix->group_cap)
        return 0;
    size_t cap = ix->group_cap ? ix->group_cap * 2 : GROUP_FILES;
    size_t *g = realloc(ix->group, cap * sizeof *g);
    if (!g)
        return dsq_error_set(err, DSQ_ENOMEM, "indexer");
    ix->group = g;
    ix->group_cap = cap;
    return 0;
}

/* Makes job j's file the current one (its run interned: see prepare_file). */
static int job_current(dsq_indexer *ix, const job *j, dsq_error *err)
{
    ix->cur_path = j->path;
    ix->cur_inner = j->inner;
    ix->cur_run = dsq_dict_intern(dsq_store_dict(ix->p.store), j->run, strlen(j->run));
    return ix->cur_run ? 0 : dsq_error_set(err, DSQ_ENOMEM, "dictionary");
}

/* Indexes the file of job i here, in a commit of its own. */
static int job_now(dsq_indexer *ix, size_t i, dsq_error *err)
{
    const job *j = &ix->jobs[i];
    int status = job_current(ix, j, err);
    return status ? status : index_file_now(ix, j->abs, &j->fi, j->said, err);
}

/* The map filled and grew, and the open write is gone with the files of the open
 * group: they are read again here, one commit each. */
static int redo_group(dsq_indexer *ix, dsq_error *err)
{
    size_t n = ix->ngroup;
    int status = 0;
    ix->ngroup = 0;
    memset(&ix->group_st, 0, sizeof ix->group_st);
    for (size_t k = 0; k < n && !status; k++)
        status = job_now(ix, ix->group[k], err);
    return status;
}

/* The map grew while job i was being written: the open group is gone, and that
 * file with it. All are indexed again. */
static int redo_group_and(dsq_indexer *ix, size_t i, dsq_error *err)
{
    int status = redo_group(ix, err);
    return status ? status : job_now(ix, i, err);
}

/* Commits the open group of files. */
static int commit_group(dsq_indexer *ix, dsq_error *err)
{
    if (!dsq_store_writing(ix->p.store))
        return 0;
    int status = dsq_store_commit(ix->p.store, err);
    if (status == 0)
        group_committed(ix);
    else if (status == DSQ_ELIMIT)
        status = redo_group(ix, err);
    return status;
}

/* The file of job i is written into the open write: it joins the open group (its
 * numbers wait there for the commit), which is committed once full. */
static int group_add(dsq_indexer *ix, size_t i, dsq_error *err)
{
    int status = 0;
    if (ix->pend.members + ix->pend.members_failed > 0) {
        ix->group_st.files_indexed++;
        add_stats(&ix->group_st, &ix->pend);
    }
    ix->group[ix->ngroup++] = i; /* room made by group_reserve */
    if (ix->ngroup >= GROUP_FILES || ix->group_st.bytes_decoded >= ix->commit_bytes)
        status = commit_group(ix, err);
    file_end(ix);
    return status;
}

/* What the attempt at job i's file gave (index_file_once's result): the file
 * joins the open group; or the map grew, and the group and the file are read
 * again; or it could not be opened. */
static int group_take(dsq_indexer *ix, size_t i, int status, dsq_error *err)
{
    ix->jobs[i].said = ix->file_problems;
    if (status == DSQ_ELIMIT)
        return redo_group_and(ix, i, err);
    if (status < 0)
        return status;
    if (status > 0) { /* not opened: nothing written */
        file_end(ix);
        return 0;
    }
    return group_add(ix, i, err);
}

/* The end of an add: the open group is committed, or on failure dropped with the
 * open write. */
static int group_finish(dsq_indexer *ix, int status, dsq_error *err)
{
    if (!status)
        status = commit_group(ix, err);
    if (status) {
        dsq_store_abort(ix->p.store);
        ix->ngroup = 0;
        memset(&ix->group_st, 0, sizeof ix->group_st);
    }
    return status;
}

/* --- without workers (jobs <= 1) ----------------------------------------------
 *
 * The walk's files are indexed as they come, in this thread, into the open group.
 * The job list holds the files of the open group only (to read them again after
 * the map grew): it is emptied whenever the group is. */

/* Indexes a file the walk found (prepare_file said it needs it). */
static int serial_file(dsq_indexer *ix, const char *path, const char *abs,
                       const dsq_file_info *fi, dsq_error *err)
{
    if (ix->ngroup == 0)
        clear_jobs(ix); /* committed (a big file's checkpoint commits the group too) */
    int status = add_job(ix, JOB_INDEX, path, abs, fi, NULL, err);
    if (status || (status = group_reserve(ix, err)))
        return status;
    size_t i = ix->njobs - 1;
    ix->file_problems = 0;
    return group_take(ix, i, index_file_once(ix, abs, fi, err), err);
}

/* Indexes path in this thread. */
static int serial_add(dsq_indexer *ix, const dsq_walk_params *wp, const char *path,
                      dsq_error *err)
{
    int status = group_finish(ix, dsq_walk(wp, path), err);
    free_jobs(ix);
    return status;
}

/* --- workers ----------------------------------------------------------------- */

/* Hands the full batch to the writer and takes an empty one. */
static int w_send(worker *w)
{
    if (dsq_bq_push(w->full_q, w->cur) != 0)
        return WORKER_STOPPED;
    w->sent_batches++;
    w->held_end = 0;
    uint64_t t = mono_ns();
    w->cur = dsq_bq_pop(w->free_q);
    w->wait_ns += mono_ns() - t;
    if (!w->cur)
        return WORKER_STOPPED;
    dsq_batch_clear(w->cur);
    return 0;
}

/* Hands the batch under way to the writer as the worker stops (none taken after it). */
static void w_send_last(worker *w)
{
    if (w->cur->len && dsq_bq_push(w->full_q, w->cur) == 0)
        w->sent_batches++;
}

static int w_put(worker *w, uint32_t type, const void *a, size_t na, const void *c, size_t nc)
{
    int rc;
    while ((rc = dsq_batch_put(w->cur, type, a, na, c, nc)) == 1)
        if ((rc = w_send(w)))
            return rc;
    return rc;
}

/* Puts the strings of the worker's dictionary the writer has not seen. */
static int w_strings(worker *w)
{
    int rc = 0;
    if (dsq_dict_count(w->dict) == w->sent) /* (most events: none new) */
        return 0;
    while ((rc = dsq_batch_put_strings(w->cur, w->dict, &w->sent)) == 1)
        if ((rc = w_send(w)))
            return rc;
    return rc;
}

/* Scanner sink: the strings the event may use that the writer has not seen, then
 * the event. */
static int w_on_event(void *ctx, const dsq_event *ev)
{
    worker *w = ctx;
    int rc = w_strings(w);
    if (rc)
        return rc;
    while ((rc = dsq_batch_put_event(w->cur, MSG_EVENT, ev)) == 1)
        if ((rc = w_send(w)))
            return rc;
    return rc;
}

static int w_problem(worker *w, dsq_error *e, const char *member, int counts)
{
    msg_problem m = {.counts = counts};
    dsq_error_where(e, w->path, member);
    m.e = *e;
    return w_put(w, MSG_PROBLEM, &m, sizeof m, NULL, 0);
}

/* Read-ahead (readahead.h): a worker decodes a compressed file of at least
 * AHEAD_MIN_BYTES on a second thread while a core is spare: fewer threads busy than
 * the cores (p.cores) counting the writer's, the workers' with a file and the
 * read-aheads' running, and no file waiting in the job list for an idle worker (one
 * big file, the end of a walk, more cores than workers). Then decoding chunk k+1
 * overlaps lexing chunk k. Without a spare core the three threads would share two
 * and the hand-off only costs: on two cores, where the writer keeps one busy, the
 * 200 MB single log's .zst took 0.31 s with it against 0.26 s without on the bench
 * machine's fast minutes (its .gz 0.29 against 0.23 s, the big job 0.31 against
 * 0.28 s), the same wall time on slower ones, and always less CPU (0.50 against
 * 0.42 s, 0.59 against 0.54 s: time slices, wake-ups, the text crossing cores).
 * Plain files are never decoded
 * ahead: they are read from the map. DSQ_READAHEAD=always or =never overrides this
 * (tests, benchmarks). */
#define AHEAD_MIN_BYTES ((uint64_t)1 << 20)
enum { AHEAD_AUTO, AHEAD_ALWAYS, AHEAD_NEVER };

/* Whether the rest of the open file goes to the read-ahead now (and if so, starts
 * it; a failure to start leaves the file read directly, which is fine). Another
 * worker is idle when it has no file and no file waits in the job list for it
 * (right after the start, a worker without a file is about to take one). */
static int w_ahead(worker *w)
{
    dsq_indexer *ix = w->ix;
    unsigned cores = ix->p.cores ? ix->p.cores : (unsigned)ix->nw + 1;
    unsigned threads = 2; /* the writer's and this worker's */
    for (int i = 0; i < ix->nw; i++)
        if (&ix->w[i] != w)
            threads += (unsigned)atomic_load_explicit(&ix->w[i].busy, memory_order_relaxed) +
                       (unsigned)atomic_load_explicit(&ix->w[i].ahead_on, memory_order_relaxed);
    int idle = w->ahead_mode == AHEAD_ALWAYS || threads < cores;
    if (idle && w->ahead_mode == AHEAD_AUTO) {
        pthread_mutex_lock(&ix->mu);
        for (size_t k = ix->next_job; k < ix->njobs && idle; k++)
            idle = ix->jobs[k].kind != JOB_INDEX;
        pthread_mutex_unlock(&ix->mu);
    }
    if (idle) { /* (a failed start leaves the file read directly: not counted) */
        dsq_readahead_start(w->ra);
        atomic_store(&w->ahead_on, dsq_readahead_started(w->ra));
    }
    return idle;
}

/* index_member, in a worker. */
static int w_member(worker *w, const job *j, const dsq_member_info *mi, uint32_t idx)
{
    dsq_error e;
    dsq_error_clear(&e);
    dsq_lines_reset(w->lines);
    const char *inner = mi->name[0] ? mi->name : j->inner;
    dsq_scan_begin(w->scan, host_from_path(w->dict, inner),
                   rank_from_name(mi->name[0] ? mi->name : j->path));
    dsq_scan_set_written(w->scan, mi->mtime_ns / 1000);
    msg_member m = {.mr = {.mtime_ns = mi->mtime_ns}, .idx = idx};
    int rc = 0;
    for (;;) {
        const char *data;
        size_t len;
        if (w->ahead_ok && w_ahead(w))
            w->ahead_ok = 0;
        uint64_t t = mono_ns();
        int rr = dsq_readahead_read(w->ra, &data, &len, &e);
        w->read_ns += mono_ns() - t;
        if (rr != 0) {
            e.line = (long long)dsq_lines_stats_get(w->lines)->lines;
            e.offset = (long long)dsq_lines_stats_get(w->lines)->bytes;
            if ((rc = w_problem(w, &e, mi->name, 1)))
                return rc;
            m.mr.status = (uint32_t)-e.code;
            break;
        }
        if (len == 0)
            break;
        if (m.mr.size == 0)
            m.mr.fingerprint = dsq_hash64_bulk(data, len < MEMBER_FP_SPAN ? len : MEMBER_FP_SPAN, 0);
        m.mr.size += len;
        for (size_t off = 0, n; off < len; off += n) {
            n = len - off < w->ix->feed_slice ? len - off : w->ix->feed_slice;
            w->fed += n;
            uint64_t b[2] = {n, w->plain ? w->fed : dsq_readahead_read_in(w->ra)};
            if ((rc = dsq_lines_feed(w->lines, data + off, n)) ||
                (rc = w_put(w, MSG_BYTES, b, sizeof b, NULL, 0)) ||
                (w->held_end && w->fed >= HELD_END_BYTES && (rc = w_send(w))))
                return rc;
        }
    }
    if ((rc = dsq_lines_finish(w->lines)) || (rc = dsq_scan_end(w->scan)))
        return rc;
    m.ss = *dsq_scan_stats_get(w->scan);
    return w_put(w, MSG_MEMBER_END, &m, sizeof m, mi->name, strlen(mi->name) + 1);
}

/* Prefetching. A cold file (not in the page cache: a nightly run's archive) has a
 * worker wait for the disk, one file at a time (1000 runs: 1.69 s against 0.88 s
 * with the files in memory). A worker whose file had to be read from the disk
 * (dsq_readahead_was_cold) has the prefetcher look at the next PREFETCH_AHEAD
 * jobs: each one that is not in memory is asked of the kernel without waiting
 * (dsq_input_prefetch: posix_fadvise WILLNEED), and each such one extends the reach
 * by as much again, so a cold archive is read ahead of the workers while a warm one
 * costs nothing (no worker ever finds a cold file: the prefetcher never opens one). */
#define PREFETCH_AHEAD 64

/* A worker found its file cold: the prefetcher looks ahead of the next job. */
static void prefetch_from(dsq_indexer *ix)
{
    pthread_mutex_lock(&ix->mu);
    if (ix->next_job + PREFETCH_AHEAD > ix->pf_until) {
        ix->pf_until = ix->next_job + PREFETCH_AHEAD;
        pthread_cond_signal(&ix->pf_cv);
    }
    pthread_mutex_unlock(&ix->mu);
}

static void *prefetch_main(void *arg)
{
    dsq_indexer *ix = arg;
    char path[PATH_MAX];
    pthread_mutex_lock(&ix->mu);
    while (!ix->pf_quit && !ix->stop) {
        if (ix->pf_next < ix->next_job) /* (the workers took it already) */
            ix->pf_next = ix->next_job;
        size_t end = ix->pf_until < ix->njobs ? ix->pf_until : ix->njobs;
        while (ix->pf_next < end && ix->jobs[ix->pf_next].kind != JOB_INDEX)
            ix->pf_next++;
        if (ix->pf_next >= end) { /* (its own condition: the workers' wakes often) */
            pthread_cond_wait(&ix->pf_cv, &ix->mu);
            continue;
        }
        const job *j = &ix->jobs[ix->pf_next++];
        snprintf(path, sizeof path, "%s", j->abs);
        uint64_t size = (uint64_t)j->fi.size;
        pthread_mutex_unlock(&ix->mu);
        int cold = dsq_input_prefetch(path, size) == 1;
        pthread_mutex_lock(&ix->mu);
        if (cold && ix->pf_next + PREFETCH_AHEAD > ix->pf_until)
            ix->pf_until = ix->pf_next + PREFETCH_AHEAD;
    }
    pthread_mutex_unlock(&ix->mu);
    return NULL;
}

/* index_members and the reading part of index_file_once, in a worker. */
static int w_file_in(worker *w, const job *j)
{
    dsq_error e;
    dsq_error_clear(&e);
    int rc = 0;
    w->path = j->path;
    dsq_file_info fi = j->fi;
    /* the fingerprint here, not in the walk: the walk is the writer's (a whole
     * archive's opens and reads were 5 % of the writer's time), and from the bytes
     * the open read, not by opening the file again */
    uint64_t t = mono_ns();
    int failed = dsq_readahead_open(w->ra, j->abs, &e) != 0 ||
                 (!fi.fp_known && dsq_readahead_fingerprint(w->ra, &fi) != 0 &&
                  dsq_input_fingerprint(j->abs, &fi, &e) != 0);
    w->read_ns += mono_ns() - t;
    if (failed) {
        dsq_error_where(&e, j->path, NULL);
        rc = w_put(w, MSG_OPEN_FAILED, &e, sizeof e, NULL, 0);
    } else if (!(rc = w_put(w, MSG_FILE_START, &fi.fingerprint, sizeof fi.fingerprint, NULL, 0))) {
        dsq_member_info mi;
        if (dsq_readahead_was_cold(w->ra))
            prefetch_from(w->ix);
        w->plain = strcmp(dsq_readahead_format(w->ra), "plain") == 0;
        w->fed = 0;
        w->ahead_ok = w->ahead_mode != AHEAD_NEVER && !w->plain &&
                      (j->fi.size >= AHEAD_MIN_BYTES || w->ahead_mode == AHEAD_ALWAYS);
        for (uint32_t idx = 0; rc == 0; idx++) {
            dsq_error_clear(&e);
            t = mono_ns();
            int r = dsq_readahead_next_member(w->ra, &mi, &e);
            dsq_error d;
            dsq_error_clear(&d);
            int damaged = dsq_readahead_take_damage(w->ra, &d);
            w->read_ns += mono_ns() - t;
            if (damaged && (rc = w_problem(w, &d, NULL, 1)))
                break;
            if (r == 0)
                break;
            if (r < 0) {
                rc = w_problem(w, &e, NULL, 1);
                break;
            }
            rc = w_member(w, j, &mi, idx);
        }
    }
    msg_file_end fe = {.bytes_in = dsq_readahead_bytes_in(w->ra), .status = rc,
                       .ahead = (uint64_t)dsq_readahead_started(w->ra)};
    dsq_readahead_close(w->ra);
    atomic_store(&w->ahead_on, 0);
    if (rc == WORKER_STOPPED)
        return rc;
    /* the strings the file added after its last event (a host named by lines that
     * gave no event) go with it: the writer interns every file's new strings while
     * writing that file, as the single-threaded path does, not with whichever file
     * this worker happens to take next */
    int rc2 = w_strings(w);
    if (!rc2 && !(rc2 = w_put(w, MSG_FILE_END, &fe, sizeof fe, NULL, 0)))
        w->held_end = 1; /* sent with the next files' messages: see WORKER_BATCHES */
    return rc ? rc : rc2;
}

/* w_file_in, its time counted. */
static int w_file(worker *w, const job *j)
{
    uint64_t t = mono_ns();
    int rc = w_file_in(w, j);
    w->file_ns += mono_ns() - t;
    return rc;
}

/* A worker's jobs until there are no more (or it is stopped). */
static void *worker_loop(worker *w)
{
    dsq_indexer *ix = w->ix;
    int me = (int)(w - ix->w);
    w->cur = dsq_bq_pop(w->free_q);
    if (!w->cur)
        return NULL;
    dsq_batch_clear(w->cur);
    for (;;) {
        pthread_mutex_lock(&ix->mu);
        for (;;) {
            while (ix->next_job < ix->njobs && ix->jobs[ix->next_job].kind != JOB_INDEX)
                ix->next_job++;
            if (ix->stop || ix->next_job < ix->njobs || ix->walk_done)
                break;
            if (w->cur->len && ix->writing) { /* the writer may wait for a file's end in it */
                pthread_mutex_unlock(&ix->mu);
                if (w_send(w))
                    return NULL;
                pthread_mutex_lock(&ix->mu);
                continue;
            }
            pthread_cond_wait(&ix->cv, &ix->mu);
        }
        if (ix->stop || ix->next_job == ix->njobs) {
            int stopped = ix->stop;
            pthread_mutex_unlock(&ix->mu);
            if (!stopped)
                w_send_last(w); /* the last files' ends */
            return NULL;
        }
        job j = ix->jobs[ix->next_job];
        ix->jobs[ix->next_job++].worker = me;
        atomic_store(&w->busy, 1);
        pthread_cond_broadcast(&ix->cv);
        pthread_mutex_unlock(&ix->mu);
        int rc = w_file(w, &j);
        atomic_store(&w->busy, 0);
        if (rc) { /* stopped, or the writer learns why from the file's end (sent now) */
            if (rc != WORKER_STOPPED)
                w_send_last(w);
            return NULL;
        }
    }
}

/* A worker thread: worker_loop, its CPU time counted. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    w->nice = dsq_thread_nicer(dsq_worker_nice()); /* below the writer (threadprio.h) */
    uint64_t t = thread_cpu_ns();
    void *r = worker_loop(w);
    w->cpu_ns = thread_cpu_ns() - t;
    return r;
}

static void worker_free(worker *w)
{
    dsq_readahead_free(w->ra);
    dsq_lines_free(w->lines);
    dsq_scan_free(w->scan);
    dsq_dict_free(w->dict);
    dsq_bq_free(w->free_q);
    dsq_bq_free(w->full_q);
    for (int i = 0; i < WORKER_BATCHES; i++)
        dsq_batch_free(&w->batches[i]);
    dsq_remap_free(&w->remap);
}

static int worker_init(dsq_indexer *ix, worker *w, size_t batch_bytes)
{
    memset(w, 0, sizeof *w);
    w->ix = ix;
    const char *ahead = getenv("DSQ_READAHEAD");
    w->ahead_mode = !ahead ? AHEAD_AUTO
                    : strcmp(ahead, "always") == 0 ? AHEAD_ALWAYS
                    : strcmp(ahead, "never") == 0  ? AHEAD_NEVER
                                                   : AHEAD_AUTO;
    dsq_scan_params sp = {.emit = w_on_event, .ctx = w};
    if (dsq_dict_new(&w->dict) || dsq_readahead_new(NULL, &w->ra))
        return DSQ_ENOMEM;
    sp.dict = w->dict;
    if (dsq_scan_new(&sp, &w->scan))
        return DSQ_ENOMEM;
    dsq_lines_params lp = {ix->p.max_line, dsq_scan_line, w->scan};
    if (dsq_lines_new(&lp, &w->lines) || dsq_bq_new_pool(WORKER_BATCHES, &w->free_q) ||
        dsq_bq_new(WORKER_BATCHES, &w->full_q))
        return DSQ_ENOMEM;
    for (int i = 0; i < WORKER_BATCHES; i++)
        if (dsq_batch_init(&w->batches[i], batch_bytes) ||
            dsq_bq_push(w->free_q, &w->batches[i]))
            return DSQ_ENOMEM;
    return 0;
}

/* Asks every worker to stop (they leave at their next batch or job). */
static void stop_workers(dsq_indexer *ix)
{
    pthread_mutex_lock(&ix->mu);
    ix->stop = 1;
    pthread_cond_broadcast(&ix->cv);
    pthread_cond_signal(&ix->pf_cv);
    pthread_mutex_unlock(&ix->mu);
    for (int i = 0; i < ix->nw; i++) {
        if (ix->w[i].free_q)
            dsq_bq_close(ix->w[i].free_q);
        if (ix->w[i].full_q)
            dsq_bq_close(ix->w[i].full_q);
    }
}

/* --- the writer ---------------------------------------------------------------- */

/* The next message of worker w (its strings go into the remap on the way), have
 * saying whether *type, *data and *n hold one read already. 0, or an error when
 * the worker's stream ended early. */
static int next_msg_more(dsq_indexer *ix, worker *w, uint32_t *type, const void **data,
                         size_t *n, dsq_error *err, int have)
{
    for (;;) {
        if (have) { /* a message read: a string is the remap's, anything else the caller's */
            if (*type != DSQ_BATCH_STR)
                return 0;
            if (dsq_remap_add_str(&w->remap, dsq_store_dict(ix->p.store), *data, *n))
                return dsq_error_set(err, DSQ_ENOMEM, "dictionary");
        } else { /* the batch read to its end (or none yet): the next one */
            if (w->rd && dsq_bq_push(w->free_q, w->rd) != 0)
                return dsq_error_set(err, DSQ_EUSAGE, "indexing threads stopped");
            uint64_t t = mono_ns();
            w->rd = dsq_bq_pop(w->full_q);
            ix->st.writer_waited += secs_since(t);
            if (!w->rd)
                return dsq_error_set(err, DSQ_EUSAGE, "indexing threads stopped");
            dsq_batch_iter_init(&w->it, w->rd);
        }
        have = dsq_batch_next(&w->it, type, data, n);
    }
}

/* The common case, an event of the batch being read, without a call (the writer
 * reads every event of a file this way). */
static inline int next_msg(dsq_indexer *ix, worker *w, uint32_t *type, const void **data,
                           size_t *n, dsq_error *err)
{
    int have = w->rd && dsq_batch_next(&w->it, type, data, n);
    if (have && *type != DSQ_BATCH_STR)
        return 0;
    return next_msg_more(ix, w, type, data, n, err, have);
}

/* Reads a file's messages up to its end without writing them (strings still go
 * into the remap). */
static int drain_file(dsq_indexer *ix, worker *w, dsq_error *err)
{
    uint32_t type;
    const void *data;
    size_t n;
    int rc;
    while ((rc = next_msg(ix, w, &type, &data, &n, err)) == 0 && type != MSG_FILE_END)
        ;
    return rc;
}

/* index_file_once for a file a worker reads: the same writes from its messages,
 * and the same results (1: it could not be opened). *drained is set once the
 * file's end message was read. */
static int par_file_once(dsq_indexer *ix, worker *w, const job *j, int *drained, dsq_error *err)
{
    dsq_source_rec rec;
    uint32_t type;
    const void *data;
    size_t n;
    int status = next_msg(ix, w, &type, &data, &n, err);
    if (status)
        return status;
    if (type == MSG_OPEN_FAILED) { /* first, before anything is written */
        dsq_error e;
        memcpy(&e, data, sizeof e);
        file_problem(ix, &e);
        ix->st.files_failed++;
        memset(&ix->pend, 0, sizeof ix->pend);
        if ((status = drain_file(ix, w, err)))
            return status;
        *drained = 1;
        return 1;
    }
    /* the first message of a file opened: its fingerprint, which the source
     * record has from the start (a checkpoint writes it), as in one thread */
    dsq_file_info fi = j->fi;
    if (type != MSG_FILE_START || n != sizeof fi.fingerprint) {
        dsq_error_set(err, DSQ_EFORMAT, "internal: a damaged batch from a worker");
        return DSQ_EFORMAT;
    }
    memcpy(&fi.fingerprint, data, sizeof fi.fingerprint);
    if ((status = file_begin(ix, j->abs, &rec, &fi, err)))
        return status;
    status = next_msg(ix, w, &type, &data, &n, err);
    for (;; status = next_msg(ix, w, &type, &data, &n, err)) {
        if (status)
            return status; /* fatal: the store is aborted by the caller's stop */
        if (type == MSG_EVENT) {
            dsq_event *ev; /* in the batch: no copy of it (the writer owns the batch) */
            if (dsq_batch_take_event(data, n, &ev) || dsq_remap_event(&w->remap, ev)) {
                dsq_error_set(err, DSQ_EFORMAT, "internal: a damaged batch from a worker");
                return file_failed(ix, DSQ_EFORMAT, err);
            }
            if ((status = write_event(ix, ev)))
                return file_failed(ix, status, err);
        } else if (type == MSG_BYTES) {
            uint64_t len[2]; /* decoded bytes fed, bytes of the file read so far */
            memcpy(len, data, sizeof len);
            ix->pend.bytes_decoded += len[0];
            ix->cur_in = len[1];
            maybe_progress(ix, 0);
            if ((ix->since_commit += len[0]) >= ix->commit_bytes && (status = checkpoint(ix, 0)))
                return file_failed(ix, status, err);
        } else if (type == MSG_PROBLEM) {
            msg_problem m;
            memcpy(&m, data, sizeof m);
            file_problem(ix, &m.e);
            if (m.counts) {
                ix->pend.members_failed++;
                rec.errors++;
            }
        } else if (type == MSG_MEMBER_END) {
            msg_member m;
            memcpy(&m, data, sizeof m);
            const char *name = (const char *)data + sizeof m;
            if ((status = member_done(ix, &rec, &m.mr, &m.ss, name, m.idx)))
                return file_failed(ix, status, err);
        } else if (type == MSG_FILE_END) {
            msg_file_end fe;
            memcpy(&fe, data, sizeof fe);
            *drained = 1;
            if (fe.status) {
                dsq_store_abort(ix->p.store);
                return dsq_error_set(err, (int)fe.status,
                                     "an indexing thread stopped: %s", dsq_strerror((int)fe.status));
            }
            ix->pend.bytes_in = fe.bytes_in;
            ix->pend.files_ahead = fe.ahead;
            return file_done(ix, j->abs, &rec, err);
        }
    }
}

/* The writer's part of job i. */
static int par_job(dsq_indexer *ix, size_t i, dsq_error *err)
{
    job *j = &ix->jobs[i];
    if (j->kind != JOB_INDEX) {
        if (ix->p.problem)
            ix->p.problem(ix->p.ctx, j->err);
        return 0;
    }
    pthread_mutex_lock(&ix->mu);
    while (j->worker < 0)
        pthread_cond_wait(&ix->cv, &ix->mu);
    worker *w = &ix->w[j->worker];
    pthread_mutex_unlock(&ix->mu);
    int status = job_current(ix, j, err);
    if (status)
        return status;
    /* the same file twice (a path given twice; links: link_skipped): the first
     * one's index is kept, as in the single-threaded path (the open write sees the
     * first one) */
    status = skip_unchanged(ix, j->abs, &j->fi, err);
    if (status)
        return status < 0 ? status : drain_file(ix, w, err);
    if ((status = group_reserve(ix, err)))
        return status;
    int drained = 0;
    ix->file_problems = 0;
    status = par_file_once(ix, w, j, &drained, err);
    /* the map grew and the open write is gone: what the worker read of this file
     * too, which is read again here */
    int rc = status == DSQ_ELIMIT && !drained ? drain_file(ix, w, err) : 0;
    return rc ? rc : group_take(ix, i, status, err);
}

/* The writer's part of the jobs from jobs_done up to `upto`. */
static int write_jobs(dsq_indexer *ix, size_t upto, dsq_error *err)
{
    int status = 0;
    pthread_mutex_lock(&ix->mu); /* workers waiting for a job send what they hold */
    ix->writing = 1;
    pthread_cond_broadcast(&ix->cv);
    pthread_mutex_unlock(&ix->mu);
    while (!status && ix->jobs_done < upto)
        status = par_job(ix, ix->jobs_done++, err);
    pthread_mutex_lock(&ix->mu);
    ix->writing = 0;
    pthread_mutex_unlock(&ix->mu);
    return status;
}

/* Walking with workers: once job_window jobs wait (JOB_WINDOW), the older half is
 * written here, in the walk (whose file, just added as a job, needs no more of
 * the writer's state: the next file sets it anew). */
static int write_window(dsq_indexer *ix, dsq_error *err)
{
    if (ix->njobs - ix->jobs_done < ix->job_window)
        return 0;
    ix->defer = 0; /* problems met now are reported now, in walk order */
    int status = write_jobs(ix, ix->njobs - ix->job_window / 2, err);
    ix->defer = 1;
    if (!status) /* at most a group's files more than the window wait */
        trim_jobs(ix);
    return status;
}

/* dsq_walk note callback, on dsq_walk_ahead's thread: the file's fingerprint while
 * files come out indexed as their stat says (a re-run: skip_unchanged needs it), so
 * the writer does not open them; 0 otherwise (and when it cannot be read). */
static uint64_t walk_note(void *ctx, const char *full, const struct stat *sb)
{
    dsq_indexer *ix = ctx;
    if (!atomic_load_explicit(&ix->fp_ahead, memory_order_relaxed))
        return 0;
    dsq_file_info fi;
    dsq_error e;
    dsq_error_clear(&e);
    dsq_input_info_of(sb, &fi);
    return dsq_input_fingerprint(full, &fi, &e) == 0 ? fi.fingerprint : 0;
}

/* Indexes path with ix->p.jobs workers (see above). */
static int par_add(dsq_indexer *ix, const dsq_walk_params *wp, const char *path, dsq_error *err)
{
    int status = 0;
    ix->nw = (int)ix->p.jobs;
    ix->stop = ix->walk_done = 0;
    size_t batch_bytes = BATCH_BUDGET / WORKER_BATCHES / (size_t)ix->nw;
    batch_bytes = batch_bytes > WORKER_BATCH_BYTES ? WORKER_BATCH_BYTES
                  : batch_bytes < 65536        ? 65536
                                               : batch_bytes;
    if (!(ix->w = calloc((size_t)ix->nw, sizeof *ix->w)))
        return dsq_error_set(err, DSQ_ENOMEM, "indexing threads");
    for (int i = 0; i < ix->nw && !status; i++) {
        if (worker_init(ix, &ix->w[i], batch_bytes))
            status = dsq_error_set(err, DSQ_ENOMEM, "indexing threads");
        else if (pthread_create(&ix->w[i].th, NULL, worker_main, &ix->w[i]) != 0)
            status = dsq_error_set(err, DSQ_ENOMEM, "starting an indexing thread");
        else
            ix->w[i].started = 1;
    }
    ix->pf_quit = 0;
    ix->pf_next = ix->pf_until = 0;
    ix->pf_started = !status && pthread_create(&ix->pf_th, NULL, prefetch_main, ix) == 0;
    if (!status) {
        dsq_walk_params ahead = *wp; /* walk_enter and walk_note on the walk's thread */
        ahead.note = walk_note;
        ahead.note_out = &ix->walk_note;
        ix->defer = 1;
        status = dsq_walk_ahead(&ahead, path);
        ix->defer = 0;
        ix->walk_note = 0;
    }
    pthread_mutex_lock(&ix->mu);
    ix->walk_done = 1;
    pthread_cond_broadcast(&ix->cv);
    pthread_mutex_unlock(&ix->mu);
    if (!status)
        status = write_jobs(ix, ix->njobs, err);
    if ((status = group_finish(ix, status, err)))
        stop_workers(ix);
    for (int i = 0; i < ix->nw; i++) {
        worker *w = &ix->w[i];
        if (w->started)
            pthread_join(w->th, NULL);
        /* (a file's waits count as waits, not scanning) */
        uint64_t other = w->read_ns + w->wait_ns;
        uint64_t busy = w->file_ns > other ? w->file_ns - other : 0;
        ix->st.reading += (double)w->read_ns / 1e9;
        ix->st.scanning += (double)busy / 1e9;
        ix->st.workers_waited += (double)w->wait_ns / 1e9;
        ix->st.workers_cpu += (double)w->cpu_ns / 1e9;
        ix->st.worker_batches += w->sent_batches;
        if (w->nice > ix->st.workers_nice) /* (0 for a worker never started) */
            ix->st.workers_nice = w->nice;
        worker_free(w);
    }
    if ((unsigned)ix->nw > ix->st.workers)
        ix->st.workers = (unsigned)ix->nw;
    if (ix->pf_started) {
        pthread_mutex_lock(&ix->mu);
        ix->pf_quit = 1;
        pthread_cond_signal(&ix->pf_cv);
        pthread_mutex_unlock(&ix->mu);
        pthread_join(ix->pf_th, NULL);
        ix->pf_started = 0;
    }
    free(ix->w);
    ix->w = NULL;
    ix->nw = 0;
    free_jobs(ix);
    return status;
}

static int index_file(dsq_indexer *ix, const char *path, const char *run, dsq_error *err)
{
    char abs[PATH_MAX];
    dsq_file_info fi;
    int r = prepare_file(ix, path, run, abs, &fi, err);
    if (r <= 0)
        return r;
    if (ix->defer) {
        int rc = add_job(ix, JOB_INDEX, path, abs, &fi, NULL, err);
        return rc ? rc : write_window(ix, err);
    }
    return serial_file(ix, path, abs, &fi, err);
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
static int walk_file(void *ctx, const char *full, const char *rel, int link, const struct stat *sb)
{
    dsq_indexer *ix = ctx;
    ix->walk_link = link;
    ix->walk_rel = rel;
    ix->walk_sb = sb;
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
    ix->walk_run = run;
    int status = index_file(ix, full, run, ix->walk_err);
    ix->walk_run = NULL;
    ix->cur_inner = NULL;
    ix->walk_link = -1;
    ix->walk_rel = NULL;
    ix->walk_sb = NULL;
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
    atomic_fetch_add(&ix->other_shard_dirs, 1); /* (on dsq_walk_ahead's thread) */
    return 1;
}

/* dsq_walk problem callback: a directory or link that could not be read. */
static void walk_problem(void *ctx, const dsq_error *e)
{
    dsq_indexer *ix = ctx;
    ix->st.files_seen++;
    ix->st.files_failed++;
    if (ix->defer && add_job(ix, JOB_WALK_PROBLEM, NULL, NULL, NULL, e, ix->walk_err) == 0)
        return;
    if (ix->p.problem)
        ix->p.problem(ix->p.ctx, e);
}

int dsq_indexer_add(dsq_indexer *ix, const char *path, dsq_error *err)
{
    dsq_walk_params wp = {.file = walk_file, .problem = walk_problem, .enter = walk_enter,
                          .ctx = ix, .skip_dir = ix->db_real[0] ? ix->db_real : NULL};
    ix->walk_err = err;
    uint64_t cpu0 = thread_cpu_ns();
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) || !realpath(path, ix->walk_root))
        ix->walk_root[0] = 0;
    int status = ix->p.jobs > 1 ? par_add(ix, &wp, path, err) : serial_add(ix, &wp, path, err);
    ix->st.other_shard += atomic_exchange(&ix->other_shard_dirs, 0);
    ix->walk_root[0] = 0;
    if (!status) /* the run rollups of runs written last, then to disk */
        status = dsq_store_settle(ix->p.store, err);
    uint64_t t = mono_ns();
    if (!status)
        status = dsq_store_sync(ix->p.store, err);
    ix->st.syncing += secs_since(t);
    ix->st.writer_cpu += (double)(thread_cpu_ns() - cpu0) / 1e9;
    ix->st.seconds = secs_since(ix->t0);
    return status;
}
