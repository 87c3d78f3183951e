/* LMDB index (see store.h for the layout and guarantees).
 *
 * Invariants: at most one write transaction is open, and only between begin and
 * commit/abort; dictionary ids above `dict_saved` exist only in memory until the
 * next commit writes them (in the same transaction as the events that use them).
 * The map starts large (it is sparse on disk) and doubles on MDB_MAP_FULL.
 *
 * Event blocks and rollup chunks are stored packed: a tag byte, 'Z' and a zstd
 * frame when that is smaller, else 'R' and the bytes as they are (see packing).
 * Readers get the unpacked bytes in a buffer the store reuses.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "error.h"
#include "hugepages.h"
#include "rollup.h"
#include "sergroup.h"
#include "syncer.h"
#include "varint.h"

#define INITIAL_MAP ((size_t)1 << 34) /* 16 GiB of address space, not of disk */
#define DSQ_EMPTY_INDEX 1 /* read_txn: nothing to read (not an error) */

/* A series summary waiting for the commit (flush_series): its key as integers, and
 * where its entry starts in ser (later entries start later). */
typedef struct ser_ref {
    uint64_t a, b; /* run << 32 | field, host << 32 | rank + 1 (the key's order) */
    uint32_t source;
    uint32_t pad;
    size_t at;
} ser_ref;

/* A run rollup made as its series were written (put_series): a = field << 32 | run. */
typedef struct fresh_roll {
    uint64_t a;
    dsq_series_rec rec;
} fresh_roll;

/* Slots of the cache of fields a source's series noted (srcroll_series): with 64,
 * the fields of a source collided there and were noted again, and sort_unique sorted
 * the repeats (1024: the 1000-run archive -0.4 % instructions, the same index). */
#define SR_FSLOT_BITS 10
/* srcroll_series makes the (host, rank) pairs noted unique past this many more than
 * twice those left the last time */
#define SR_HMAX 4096

struct dsq_store {
    MDB_env *env;
    MDB_txn *txn;     /* the open write transaction, if any */
    MDB_txn *rtxn;    /* read-only stores: the snapshot every read uses */
    MDB_cursor *dict_cur; /* kept open on rtxn: lookups near the last one stay on its page */
    /* readers: after many lookups, every string's place in the map, by id (see
     * backing_str); the map stays valid while rtxn is open */
    const char **dict_all;
    uint32_t *dict_len;
    uint32_t dict_n, dict_lookups;
    MDB_dbi meta, dict_db, dictrev, events, sources, members, srcblocks, series, chunks, attrs,
        srcroll, runroll;
    dsq_dict *dict;
    uint32_t dict_saved; /* highest dictionary id already in the index */
    int readonly;
    int empty;        /* read-only: an environment without tables, read as an empty index */
    int map_full;
    int lock_fd;
    int statm_fd; /* /proc/self/statm, opened at the first look (-1: not yet, -2: cannot) */
    uint64_t size_at_open; /* writers: data.mdb's size when opened (see note_growth) */
    struct timespec last_sync; /* writers: commits are synced to disk a second apart, */
    dsq_syncer *syncer;        /* in the background with sync_behind (NULL: waited for;
                                  the last one, at the end, is waited for either way) */
    uint64_t commits;  /* writes committed since open (dsq_store_commits) */
    uint64_t reopens;  /* times the environment was opened again (dsq_store_reopens) */
    ZSTD_CCtx *zc;      /* event blocks and rollup chunks are stored compressed */
    ZSTD_DCtx *zd;
    unsigned char *packed, *unpacked; /* reused buffers */
    size_t packed_cap, unpacked_cap;
    unsigned char *looked; /* a looked-up series' own pairs (dsq_store_scan_chunks) */
    size_t looked_cap;
    unsigned char seek[8]; /* a scan's next key, from its visitor (SCAN_SEEK) */
    size_t seek_n;
    unsigned char *zrun;   /* own pairs packed (series_put) or unpacked (own_pairs) */
    size_t zrun_cap;
    dsq_block_cols *cols; /* event blocks are stored in columns: the encoder's buffers */
    /* the rollup keys of the source being written (srcroll_series, srcroll_attr):
     * a = run << 32 | field of its series, a = run << 32 | name of its attributes,
     * and a = run, b = host << 32 | rank + 1 of its series; sr_bytes: the encoded
     * record */
    struct ser_ref *sr_f, *sr_a, *sr_h; /* a and b only: sorted by sort_ser */
    uint32_t sr_fslot[1u << SR_FSLOT_BITS]; /* where in sr_f a field was noted last, by a
                                               hash of it */
    uint32_t sr_source;    /* the source they are of (a note of another empties them) */
    size_t sr_nf, sr_na, sr_nh, sr_fcap, sr_acap, sr_hcap;
    size_t sr_hmax; /* sr_h is made unique when it reaches this (srcroll_series) */
    unsigned char *sr_bytes;
    size_t sr_bytes_cap;
    /* series summaries put in the open write, not yet in LMDB (see flush_series):
     * entries of key, value length (u32), value and the record as put, and where
     * each starts */
    unsigned char *ser;
    size_t ser_len, ser_cap;
    struct ser_ref *ser_at, *ser_tmp;
    size_t ser_n, ser_at_cap, ser_tmp_cap;
    uint64_t *ser_keys; /* radix_ser's keys, two arrays of ser_keys_cap / 2 */
    size_t ser_keys_cap;
    int ser_put; /* the open write put waiting series into their groups already */
    /* while put_series runs (ser_appends): the series table's last key (ser_tail_n 0:
     * the table is empty); a record after it is appended (MDB_APPEND), which fills
     * pages where a put splits them in the middle (a big job's fresh index: series
     * pages 2,201 -> 1,710) */
    int ser_appends;
    unsigned char ser_tail[DSQ_SERIES_KEY_LEN];
    size_t ser_tail_n;
    /* the run rollups of runs new in the open write, merged from their groups as the
     * commit writes them (put_series), in key order: settle_runrolls writes these
     * at once instead of marking them stale and reading their series back */
    struct fresh_roll *fresh;
    size_t nfresh, fresh_cap;
    /* reading: the series being visited (its key and the pairs in its record), so
     * dsq_store_scan_chunks called from the visit needs no lookup; vis_n -1: none */
    unsigned char vis_key[DSQ_SERIES_KEY_LEN];
    const unsigned char *vis_pairs;
    ptrdiff_t vis_n;
    unsigned char *grp; /* a series group record being written (write_groups) */
    size_t grp_cap;
    unsigned char *grpz; /* its records packed by zstd (write_groups) */
    size_t grpz_cap;
    /* group records' bytes unpacked (group_bytes): by the writer (put_series,
     * drop_from_groups), a scan's visit, a lookup and a run rollup's merge, which
     * may run inside a visit */
    struct group_buf {
        unsigned char *p;
        size_t cap;
    } gb_put, gb_vis, gb_get, gb_roll;
    int vis_depth; /* visit_series calls under way (one inside another's callback) */
    dsq_group_entry *ment; /* the entries of a group being rewritten */
    size_t ment_cap;
    size_t *piece_end, *piece_first; /* write_groups: where each record's bytes end in
                                        grpz, and its first entry */
    size_t piece_cap, piece_first_cap;
    uint64_t read_since_release; /* group bytes read since the map was let go of */
    uint32_t puts_since_look;    /* puts since the map's resident size was looked at */
    uint64_t puts_in_write;      /* puts of the open write (see reopen_env) */
    uint64_t reopen_puts;        /* REOPEN_PUTS, or DSQ_REOPEN_PUTS (tests) */
    /* event blocks put in the open write, held until its commit (hold_block): entries
     * of the value's length (u32), block key, srcblocks key and value, 8-aligned */
    unsigned char *blk;
    size_t blk_len, blk_cap;
    const unsigned char **blk_by_key; /* the held blocks in key order (put_held_blocks) */
    size_t blk_by_key_cap;
    /* attributes put in the open write, held until its commit (put_held_attrs): their
     * records in the order put, and their keys, a = run << 32 | name, b = source <<
     * 32, `at` the record's index (hattr_tmp: room for sort_ser) */
    dsq_attr_rec *hattr;
    struct ser_ref *hattr_key, *hattr_tmp;
    size_t nhattr, hattr_cap, hattr_key_cap, hattr_tmp_cap;
    /* parts (dsq_store_parts): on while the caller allows them, a part committed
     * every part_puts chunk records */
    int parts;
    uint32_t part_puts;          /* PART_PUTS, or DSQ_PART_PUTS (tests) */
    size_t ser_flush;            /* SER_FLUSH_BYTES, or DSQ_SER_FLUSH_BYTES (tests) */
    size_t ser_flush_one;        /* SER_FLUSH_ONE, or DSQ_SER_FLUSH_BYTES */
    int ser_mixed;               /* the waiting series are of more than one source */
    uint64_t ser_flushes;        /* flushes of the waiting series since open (tests) */
    uint32_t puts_since_part;
    uint64_t parts_committed;
    int32_t *drop_rank; /* drop_from_groups: the ranks of the dropped series with chunks */
    size_t drop_rank_cap;
    struct ser_ref *due; /* run rollups the open write touched: a = field << 32 | run */
    size_t ndue, due_cap;
    /* run rollups marked stale in the index (see settle_runrolls), field << 32 | run in
     * key order; pend_next: the list being made by the open commit */
    uint64_t *pend, *pend_next;
    size_t npend, npend_next, pend_cap, pend_next_cap;
    int stale_meta;        /* the index's meta holds STALE_KEY */
    MDB_txn *scan_txn;     /* the transaction scan_table walks in */
    char dir[4096];
};

static int lmdb_error(dsq_error *err, int rc, const char *what)
{
    return dsq_error_set(err, rc == MDB_MAP_FULL ? DSQ_ELIMIT : DSQ_EINDEX, "%s: %s", what,
                         mdb_strerror(rc));
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be64(unsigned char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

static uint64_t get_be64(const unsigned char *p)
{
    return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

void dsq_block_key_pack(const dsq_block_key *k, unsigned char out[DSQ_BLOCK_KEY_LEN])
{
    put_be32(out, k->run);
    put_be32(out + 4, k->host);
    put_be32(out + 8, (uint32_t)k->rank + 1u);
    put_be64(out + 12, (uint64_t)k->t_us ^ (1ull << 63));
    put_be32(out + 20, k->source);
    put_be32(out + 24, k->seq);
}

void dsq_block_key_unpack(const unsigned char *in, dsq_block_key *k)
{
    k->run = get_be32(in);
    k->host = get_be32(in + 4);
    k->rank = (int32_t)get_be32(in + 8) - 1;
    k->t_us = (int64_t)(get_be64(in + 12) ^ (1ull << 63));
    k->source = get_be32(in + 20);
    k->seq = get_be32(in + 24);
}

/* How a kind of value is packed: zstd at `level` from min_zstd bytes on. Blocks:
 * level 2 packs them 1-4% smaller than level 1 in the same time (measured on the
 * bench inputs); blocks under 1 kB (the small files of a per-rank archive) are
 * stored as they are: a frame's set-up (some 15,000 instructions, mostly its
 * entropy tables) cost more than it saved (1000 runs of 10 kB files: under 512
 * bytes 5% less wall time; under 1 kB 4% fewer instructions again and 5% less CPU,
 * for an index 1.8% bigger). Chunks are encoded compactly already (rollup.c), and
 * level 2 is twice as slow on them for nothing. Under 1 kB (a big job's checkpoints
 * write one for each series past OWN_PAIRS_BYTES, 512-900 bytes: 80 % of the chunk
 * records of its log, stored as they were) they are packed at level -5: 21 % smaller
 * in 0.6 us each, where level 1 took 4.7 us for 23 % (a frame's set-up). */
typedef struct packing {
    int level;
    size_t min_zstd;
    size_t small;    /* under this many bytes: level small_level */
    int small_level;
    const char *what; /* for errors */
} packing;

static const packing pack_blocks = {2, 1024, 0, 0, "writing events"};
static const packing pack_chunks = {1, 512, 1024, -5, "writing rollups"};
/* a source's rollup keys (srcroll_put): zstd only for big ones */
static const packing pack_srcroll = {3, 4096, 0, 0, "writing rollups"};
#define SYNC_SECONDS 1
/* syncs in the background (sync_behind) cost the writer nothing: they run four times as
 * often, so the last one, which the end waits for, has less to write (the bench
 * archive's final fdatasync 21.7 -> 5.0 ms) */
#define SYNC_BEHIND_MS 250
#define STALE_KEY "stale" /* meta: some run rollups are marked stale (settle_runrolls) */

/* No series wait for the commit (flush_series). */
static void ser_clear(dsq_store *st)
{
    st->ser_len = st->ser_n = 0;
    st->ser_mixed = 0;
}

static int put_failed(dsq_store *st, int rc, dsq_error *err, const char *what);
static int load_stale(dsq_store *st, MDB_txn *txn, dsq_error *err);
static int put_held_attrs(dsq_store *st, dsq_error *err);

static int reserve(unsigned char **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < n)
        c *= 2;
    unsigned char *b = realloc(*buf, c);
    if (!b)
        return -1;
    *buf = b;
    *cap = c;
    return 0;
}

/* Room for element n of an array of cap elements of size bytes (doubling). */
static int grow_arr(void **a, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    void *b = realloc(*a, c * size);
    if (!b)
        return -1;
    *a = b;
    *cap = c;
    return 0;
}

/* Packs src[0..n) into st->packed as pk says; returns its length, 0 when out of
 * memory. */
static size_t pack(dsq_store *st, const void *src, size_t n, const packing *pk)
{
    size_t min_zstd = pk->min_zstd;
    size_t bound = ZSTD_compressBound(n) + 1;
    if (reserve(&st->packed, &st->packed_cap, bound > n + 1 ? bound : n + 1))
        return 0;
    if (n >= min_zstd && !st->zc && !(st->zc = ZSTD_createCCtx()))
        return 0;
    int level = n < pk->small ? pk->small_level : pk->level;
    size_t z = n >= min_zstd ? ZSTD_compressCCtx(st->zc, st->packed + 1, bound - 1, src, n, level) : n;
    if (!ZSTD_isError(z) && z + 1 < n + 1) {
        st->packed[0] = 'Z';
        return z + 1;
    }
    st->packed[0] = 'R';
    memcpy(st->packed + 1, src, n);
    return n + 1;
}

/* The zstd frame z[0..zn) decompressed into *buf (grown: *cap its room), *n its
 * length: 0, DSQ_ENOMEM, or -1 when the frame is damaged or says more than max. */
static int unzstd(dsq_store *st, const unsigned char *z, size_t zn, size_t max, unsigned char **buf,
                  size_t *cap, size_t *n)
{
    unsigned long long size = ZSTD_getFrameContentSize(z, zn);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > max)
        return -1;
    if (reserve(buf, cap, (size_t)size + 1) || (!st->zd && !(st->zd = ZSTD_createDCtx())))
        return DSQ_ENOMEM;
    size_t got = ZSTD_decompressDCtx(st->zd, *buf, (size_t)size + 1, z, zn);
    if (ZSTD_isError(got) || got != size)
        return -1;
    *n = got;
    return 0;
}

/* The bytes of a packed value; 0, or -1 when it is damaged (or memory ran out). */
static int unpack(dsq_store *st, const MDB_val *v, const void **data, size_t *n)
{
    const unsigned char *p = v->mv_data;
    if (v->mv_size < 1)
        return -1;
    if (p[0] == 'R') {
        *data = p + 1;
        *n = v->mv_size - 1;
        return 0;
    }
    if (p[0] != 'Z' || unzstd(st, p + 1, v->mv_size - 1, (size_t)1 << 30, &st->unpacked,
                              &st->unpacked_cap, n))
        return -1;
    *data = st->unpacked;
    return 0;
}

/* unpack's bytes copied or decompressed into *buf (grown: *cap its room), *n
 * their length: 0, DSQ_ENOMEM, or -1 when the value is damaged. */
static int unpack_into(dsq_store *st, const MDB_val *v, unsigned char **buf, size_t *cap, size_t *n)
{
    const unsigned char *p = v->mv_data;
    if (v->mv_size < 1 || (p[0] != 'R' && p[0] != 'Z'))
        return -1;
    if (p[0] == 'Z')
        return unzstd(st, p + 1, v->mv_size - 1, (size_t)1 << 30, buf, cap, n);
    if (reserve(buf, cap, v->mv_size))
        return DSQ_ENOMEM;
    memcpy(*buf, p + 1, v->mv_size - 1);
    *n = v->mv_size - 1;
    return 0;
}

static void note_put(dsq_store *st);
/* a write this big has LMDB opened again, and past this the heap trimmed (reopen_env) */
#define REOPEN_PUTS 8192
/* A write with parts on (dsq_store_parts) is committed every this many chunk
 * records: each lands on a page of its own in a big index (a series' chunks are
 * together, and its next one goes after them), and LMDB holds every page a write
 * touched in the heap until the commit: 15,000 chunk records of a checkpoint of an
 * 8 GB big job's log held 80 MB. */
#define PART_PUTS 2048
/* The series waiting for the commit are written into their groups (flush_series)
 * once their entries take this many bytes, or SER_FLUSH_ONE when they are all one
 * source's (a big file's checkpoint or end), and the open write is no longer
 * committed in parts: a launcher log of 8,192 ranks has 124,000 series, whose
 * records (with the pairs since their last chunk, ~540 bytes) are put at every
 * checkpoint and at the end: 67 MB waited in st->ser, beside the pages LMDB holds
 * (its 1 GB log: peak RSS 311 MB, 269 MB flushed at 1 MB, and no slower). A group
 * written twice in one write is merged again (put_series), as after a drop. The
 * series of a group of small files are not flushed: a commit of the 1000-run
 * archive (256 files) has a few MB of them, which flushed at 1 MB took 35 % longer
 * (its new runs' rollups are no longer made as their series are written). Parts
 * stop because a part would commit series whose keys the source's rollup record
 * (written after them) does not list yet: a crash there would leave them when the
 * redo drops the source (the rollup puts a checkpoint's chunks first: rollup.c,
 * put_checkpoint_chunks). */
#define SER_FLUSH_BYTES ((size_t)16 << 20)
#define SER_FLUSH_ONE ((size_t)1 << 20)
#define TRIM_RESIDENT ((uint64_t)192 << 20)
/* With huge pages a trim splits them (a 1 GB big job's index 4.0 -> 5.4 s, each
 * reopen past TRIM_RESIDENT trimming) and gave back less: only past this. */
#define TRIM_RESIDENT_HUGE ((uint64_t)240 << 20)

/* Puts src[0..n), packed as pk says. */
static int put_packed(dsq_store *st, MDB_dbi dbi, MDB_val *k, const void *src, size_t n,
                      const packing *pk, dsq_error *err)
{
    const char *what = pk->what;
    note_put(st);
    if (n < pk->min_zstd) { /* stored as it is: straight into the page */
        MDB_val v = {n + 1, NULL};
        int rc = mdb_put(st->txn, dbi, k, &v, MDB_RESERVE);
        if (rc)
            return put_failed(st, rc, err, what);
        *(unsigned char *)v.mv_data = 'R';
        memcpy((unsigned char *)v.mv_data + 1, src, n);
        return 0;
    }
    size_t len = pack(st, src, n, pk);
    if (!len)
        return dsq_error_set(err, DSQ_ENOMEM, "%s: out of memory", what);
    MDB_val v = {len, st->packed};
    int rc = mdb_put(st->txn, dbi, k, &v, 0);
    return rc ? put_failed(st, rc, err, what) : 0;
}

/* mkdir -p for the index directory. */
static int make_dirs(const char *dir, dsq_error *err)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return dsq_error_set(err, DSQ_EINDEX, "cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return dsq_error_set(err, DSQ_EINDEX, "cannot create %s: %s", buf, strerror(errno));
    return 0;
}

/* The writer lock of index directory dir (dsq.lock, flock): *fd holds it. */
static int lock_dir(const char *dir, int *fd, dsq_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/dsq.lock", dir);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return dsq_error_set(err, DSQ_EINDEX, "cannot open %s: %s", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0)
        return dsq_error_set(err, DSQ_EINDEX,
                             "another dsq index is writing to %s; wait for it to finish", dir);
    return 0;
}

/* The gate: compaction swaps data.mdb and lock.mdb for new files while holding it
 * exclusively; readers hold it shared only while they open the environment and
 * take their snapshot, so each reader sees both old files or both new ones (an
 * open environment keeps reading its own files after the swap). Writers create it,
 * so that a reader never opens an index ungated while a compaction runs. Returns
 * an fd (-1 when the file cannot be opened: a read-only index is never compacted). */
static int gate_take(const char *dir, int create, int how)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/dsq.gate", dir);
    int fd = create ? open(path, O_RDWR | O_CLOEXEC | O_CREAT, 0644) : open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && how)
        while (flock(fd, how) != 0 && errno == EINTR)
            ;
    return fd;
}

static void gate_release(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the flock */
}

static uint64_t file_size(const char *dir, const char *name)
{
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Where the file `path` is mapped in this process (LMDB does not say: the address
 * mdb_env_info reports is only set with MDB_FIXEDMAP). 0 and the range, or -1. */
static int map_of(const char *path, void **addr, size_t *len)
{
    struct stat sb;
    char line[4600];
    int found = -1;
    if (stat(path, &sb) != 0)
        return -1;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    while (found != 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, ino;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) == 3 && ino == sb.st_ino &&
            ino != 0) {
            *addr = (void *)lo;
            *len = hi - lo;
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* Lets go of this process's mapped pages of the file: they stay in the page
 * cache and are mapped again when read. Keeps resident memory flat while a big
 * index is written or copied. */
static void release_map(const char *dir, const char *name)
{
    char path[4400];
    void *addr;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (map_of(path, &addr, &len) == 0)
        madvise(addr, len, MADV_DONTNEED);
}

/* Counts the map a write read through: each record read maps its page and, as
 * the kernel faults pages around the one read, up to 64 KiB of the file's cached
 * neighbours (other tables' pages too). Every READ_RELEASE of that the map's pages
 * are let go of (release_map), also in the middle of a write (LMDB only reads the
 * map, and pages let go of are mapped again when read): a write that walks a big
 * run's series (its run rollups) keeps the resident size flat, not the size of the
 * index around what it read. */
#define READ_RELEASE ((uint64_t)160 << 20)
#define READ_AROUND ((size_t)64 << 10)
static void note_read(dsq_store *st, size_t n)
{
    if ((st->read_since_release += n > READ_AROUND ? n : READ_AROUND) >= READ_RELEASE) {
        st->read_since_release = 0;
        release_map(st->dir, "data.mdb");
    }
}

/* Puts read the map too, on the way to the page they change: every leaf is
 * faulted in with its cached neighbours. A big job's log put a chunk of each of
 * its ~100,000 series at every checkpoint, each on another page (schema 10), and so
 * mapped most of a 300 MB index at each (90 MB resident at once for a 1 GB log, 190
 * MB for 2 GB). Every PUTS_LOOK puts the process's resident file pages (statm's shared,
 * its inputs' maps and libraries too) are looked at, and past MAP_RESIDENT the map
 * is let go of. Indexes of small files, whose puts stay on few pages, never get
 * there. */
#define PUTS_LOOK 256
#define MAP_RESIDENT ((uint64_t)16 << 20)
/* Huge pages (hugepages.h) cost some memory a 4 KiB page would not: a heap's 2 MiB
 * page is resident whole. Past HUGE_RESIDENT the process takes no more of them, so a
 * big job's peak (8,192 ranks: 230 MB without them) stays under goal 4's 256 MB. */
#define HUGE_RESIDENT ((uint64_t)160 << 20)
/* The process's resident bytes, and those of them in files (statm's shared); 0
 * when /proc cannot say. The file stays open: a look is one pread, not an open, a
 * read and a close (an archive's writer looked ~470 times). */
static int resident_bytes(dsq_store *st, uint64_t *all, uint64_t *files)
{
    char buf[128];
    *all = *files = 0;
    if (st->statm_fd == -1)
        st->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (st->statm_fd < 0) {
        st->statm_fd = -2;
        return 0;
    }
    ssize_t n = pread(st->statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long long size = 0, resident = 0, shared = 0;
    if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3)
        return 0;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *all = resident * page;
    *files = shared * page;
    return 1;
}

/* Every PUTS_LOOK puts or lookups of a write, the resident size looked at. */
static void look_resident(dsq_store *st)
{
    if (++st->puts_since_look < PUTS_LOOK)
        return;
    st->puts_since_look = 0;
    uint64_t all, files;
    if (!resident_bytes(st, &all, &files))
        return;
    if (all > HUGE_RESIDENT)
        dsq_hugepages_enough();
    if (files > MAP_RESIDENT) {
        st->read_since_release = 0;
        release_map(st->dir, "data.mdb");
    }
}

static void note_put(dsq_store *st)
{
    st->puts_in_write++;
    look_resident(st);
}

/* A writer's lookup of one series (dsq_store_series_get) maps its page and the
 * cached ones around it, anywhere in the index: a launcher log of 8,192 ranks in 8
 * GB took its series back after letting them go (rollup.c, resume_series), 124,000
 * lookups in a 1 GB index, and 100 MB of the map were resident at once. Looked at
 * as puts are (note_put). */
static void note_lookup(dsq_store *st)
{
    if (!st->readonly)
        look_resident(st);
}

/* LMDB's key order, memcmp's (shorter first on a tie), with the bytes compared 8 and
 * 4 at a time as big-endian words: the same order, so the same pages, as LMDB's own
 * comparison, which calls memcmp for each of the ~10 keys a put or a seek visits. */
static int key_cmp(const MDB_val *x, const MDB_val *y)
{
    const unsigned char *p = x->mv_data, *q = y->mv_data;
    size_t n = x->mv_size < y->mv_size ? x->mv_size : y->mv_size, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a = get_be64(p + i), b = get_be64(q + i);
        if (a != b)
            return a < b ? -1 : 1;
    }
    if (i + 4 <= n) {
        uint32_t a = get_be32(p + i), b = get_be32(q + i);
        if (a != b)
            return a < b ? -1 : 1;
        i += 4;
    }
    for (; i < n; i++)
        if (p[i] != q[i])
            return p[i] < q[i] ? -1 : 1;
    return (x->mv_size > y->mv_size) - (x->mv_size < y->mv_size);
}

static int open_dbis(dsq_store *st, MDB_txn *txn, dsq_error *err)
{
    unsigned fl = st->readonly ? 0 : MDB_CREATE;
    struct {
        const char *name;
        MDB_dbi *dbi;
    } t[] = {{"meta", &st->meta},       {"dict", &st->dict_db},   {"events", &st->events},
             {"sources", &st->sources}, {"members", &st->members}, {"srcblocks", &st->srcblocks},
             {"series", &st->series},   {"chunks", &st->chunks},   {"attrs", &st->attrs},
             {"srcroll", &st->srcroll}, {"dictrev", &st->dictrev}, {"runroll", &st->runroll}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int rc = mdb_dbi_open(txn, t[i].name, fl, t[i].dbi);
        MDB_dbi main_db;
        MDB_stat ms;
        if (rc == MDB_NOTFOUND && i == 0 && mdb_dbi_open(txn, NULL, 0, &main_db) == 0 &&
            mdb_stat(txn, main_db, &ms) == 0 && ms.ms_entries == 0) {
            st->empty = 1; /* created, then stopped before its first commit: no data yet */
            return 0;
        }
        if (rc == MDB_NOTFOUND && i > 0) /* a dsq index, from a version without this table */
            return dsq_error_set(err, DSQ_EINDEX,
                                 "%s was written by another dsq version (no '%s' table); index "
                                 "into a new directory",
                                 st->dir, t[i].name);
        if (rc == MDB_NOTFOUND)
            return dsq_error_set(err, DSQ_EINDEX, "%s is not a dsq index (no '%s' table)",
                                 st->dir, t[i].name);
        if (rc || (rc = mdb_set_compare(txn, *t[i].dbi, key_cmp)))
            return lmdb_error(err, rc, "opening index tables");
    }
    return 0;
}

static int check_schema(dsq_store *st, MDB_txn *txn, dsq_error *err)
{
    MDB_val k = {6, "schema"}, v;
    int rc = mdb_get(txn, st->meta, &k, &v);
    if (rc == MDB_NOTFOUND && !st->readonly) {
        unsigned char b[4];
        put_be32(b, DSQ_STORE_SCHEMA);
        v.mv_size = 4;
        v.mv_data = b;
        rc = mdb_put(txn, st->meta, &k, &v, 0);
        return rc ? lmdb_error(err, rc, "writing schema") : 0;
    }
    if (rc)
        return lmdb_error(err, rc, "reading schema");
    if (v.mv_size != 4 || get_be32(v.mv_data) != DSQ_STORE_SCHEMA)
        return dsq_error_set(err, DSQ_EINDEX,
                             "%s was written by another dsq version (schema %u, expected %u); "
                             "index into a new directory",
                             st->dir, v.mv_size == 4 ? get_be32(v.mv_data) : 0, DSQ_STORE_SCHEMA);
    return 0;
}

/* --- the dictionary of a read-only index: looked up in the snapshot on demand --- */

/* Places every string of the dictionary by one walk over its table: after enough
 * single lookups (a result with thousands of runs), this is the cheaper way. */
static int dict_load_all(dsq_store *st, uint32_t count)
{
    MDB_cursor *c = NULL;
    MDB_val k, v;
    st->dict_all = calloc((size_t)count + 1, sizeof *st->dict_all);
    st->dict_len = calloc((size_t)count + 1, sizeof *st->dict_len);
    if (!st->dict_all || !st->dict_len || mdb_cursor_open(st->rtxn, st->dict_db, &c) != 0)
        goto fail;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        uint32_t id = k.mv_size == 4 ? get_be32(k.mv_data) : 0;
        const char *s = v.mv_data;
        if (id == 0 || id > count || v.mv_size < 1 || s[v.mv_size - 1] != 0)
            continue; /* single lookups report it as missing too */
        st->dict_all[id] = s;
        st->dict_len[id] = (uint32_t)(v.mv_size - 1);
    }
    mdb_cursor_close(c);
    if (rc != MDB_NOTFOUND)
        goto fail;
    st->dict_n = count;
    return 0;
fail:
    free(st->dict_all);
    free(st->dict_len);
    st->dict_all = NULL;
    st->dict_len = NULL;
    return -1;
}

static const char *backing_str(void *ctx, uint32_t id, size_t *n)
{
    dsq_store *st = ctx;
    if (!st->dict_all && ++st->dict_lookups == 1024) {
        uint32_t count = dsq_dict_count(st->dict);
        if (count <= 64u * 1024 && count > 0) /* beyond that, a walk costs more than it saves */
            dict_load_all(st, count);
    }
    if (st->dict_all) {
        if (id == 0 || id > st->dict_n || !st->dict_all[id])
            return NULL;
        if (n)
            *n = st->dict_len[id];
        return st->dict_all[id];
    }
    unsigned char key[4];
    put_be32(key, id);
    MDB_val k = {4, key}, v;
    const char *s;
    if (!st->dict_cur && mdb_cursor_open(st->rtxn, st->dict_db, &st->dict_cur) != 0)
        return NULL;
    if (mdb_cursor_get(st->dict_cur, &k, &v, MDB_SET) != 0 || v.mv_size < 1 ||
        (s = v.mv_data)[v.mv_size - 1] != 0)
        return NULL;
    if (n)
        *n = v.mv_size - 1;
    return s;
}

static uint32_t backing_find(void *ctx, const char *s, size_t n)
{
    dsq_store *st = ctx;
    unsigned char pre[8];
    MDB_cursor *c = NULL;
    uint32_t found = 0;
    put_be64(pre, dsq_hash64(s, n, 0));
    if (mdb_cursor_open(st->rtxn, st->dictrev, &c) != 0)
        return 0;
    MDB_val k = {8, pre}, v;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0 && !found;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 12 || memcmp(k.mv_data, pre, 8) != 0)
            break;
        uint32_t id = get_be32((const unsigned char *)k.mv_data + 8);
        size_t len;
        const char *t = backing_str(st, id, &len);
        if (t && len == n && memcmp(t, s, n) == 0)
            found = id;
    }
    mdb_cursor_close(c);
    return found;
}

/* Readers: the dictionary stays in the index; only its size is read now. */
static int back_dict(dsq_store *st, dsq_error *err)
{
    MDB_cursor *c = NULL;
    MDB_val k, v;
    int rc = mdb_cursor_open(st->rtxn, st->dict_db, &c);
    if (rc)
        return lmdb_error(err, rc, "reading dictionary");
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND)
        return lmdb_error(err, rc, "reading dictionary");
    dsq_dict_backing b = {.ctx = st, .str = backing_str, .find = backing_find,
                          .count = rc == 0 && k.mv_size == 4 ? get_be32(k.mv_data) : 0};
    dsq_dict_set_backing(st->dict, &b);
    return 0;
}

static int load_dict(dsq_store *st, MDB_txn *txn, dsq_error *err)
{
    MDB_cursor *c = NULL;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, st->dict_db, &c);
    if (rc)
        return lmdb_error(err, rc, "reading dictionary");
    int status = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        uint32_t want = k.mv_size == 4 ? get_be32(k.mv_data) : 0;
        const char *str = v.mv_data; /* stored with its NUL */
        if (v.mv_size < 1 || str[v.mv_size - 1] != 0) {
            status = dsq_error_set(err, DSQ_EINDEX, "dictionary in %s is damaged (id %u)", st->dir,
                                   want);
            goto done;
        }
        uint32_t got = dsq_dict_intern(st->dict, str, v.mv_size - 1);
        if (got == 0) {
            status = dsq_error_set(err, DSQ_ENOMEM, "loading dictionary");
            goto done;
        }
        if (got != want) {
            status = dsq_error_set(err, DSQ_EINDEX, "dictionary in %s is damaged (id %u)", st->dir,
                                   want);
            goto done;
        }
    }
    if (rc != MDB_NOTFOUND)
        status = lmdb_error(err, rc, "reading dictionary");
    st->dict_saved = dsq_dict_count(st->dict);
done:
    mdb_cursor_close(c);
    return status;
}

/* Opens tables, checks the schema and loads the dictionary in one transaction. */
static int init_tables(dsq_store *st, dsq_error *err)
{
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(st->env, NULL, st->readonly ? MDB_RDONLY : 0, &txn);
    if (rc)
        return lmdb_error(err, rc, "starting transaction");
    int status = open_dbis(st, txn, err);
    if (!status && !st->empty)
        status = check_schema(st, txn, err);
    if (!status && !st->empty && !st->readonly)
        status = load_dict(st, txn, err);
    if (!status && !st->empty && !st->readonly)
        status = load_stale(st, txn, err);
    if (status) {
        mdb_txn_abort(txn);
        return status;
    }
    rc = mdb_txn_commit(txn);
    return rc ? lmdb_error(err, rc, "opening index") : 0;
}

int dsq_store_open(const dsq_store_params *params, dsq_store **out, dsq_error *err)
{
    int status = 0, rc, gate = -1;
    dsq_store *st = calloc(1, sizeof *st);
    if (!st)
        return dsq_error_set(err, DSQ_ENOMEM, "opening index");
    st->lock_fd = -1;
    st->statm_fd = -1;
    st->vis_n = -1;
    st->readonly = params->readonly;
    const char *rp = getenv("DSQ_REOPEN_PUTS");
    st->reopen_puts = rp && strtoull(rp, NULL, 10) > 0 ? strtoull(rp, NULL, 10) : REOPEN_PUTS;
    const char *pp = getenv("DSQ_PART_PUTS");
    st->part_puts = pp && strtoul(pp, NULL, 10) > 0 && strtoul(pp, NULL, 10) <= UINT32_MAX
                        ? (uint32_t)strtoul(pp, NULL, 10)
                        : PART_PUTS;
    const char *sf = getenv("DSQ_SER_FLUSH_BYTES");
    size_t sfb = sf ? (size_t)strtoull(sf, NULL, 10) : 0;
    st->ser_flush = sfb ? sfb : SER_FLUSH_BYTES;
    st->ser_flush_one = sfb ? sfb : SER_FLUSH_ONE;
    snprintf(st->dir, sizeof st->dir, "%s", params->dir);
    struct stat sb;
    if (st->readonly && stat(st->dir, &sb) != 0) {
        status = dsq_error_set(err, DSQ_EINDEX,
                               "no index at %s (run `dsq index PATH` first, or set --db / DSQ_DB)",
                               st->dir);
        goto fail;
    }
    if (!st->readonly && ((status = make_dirs(st->dir, err)) || (status = lock_dir(st->dir, &st->lock_fd, err))))
        goto fail;
    if (dsq_dict_new(&st->dict) != 0) {
        status = dsq_error_set(err, DSQ_ENOMEM, "opening index");
        goto fail;
    }
    gate = gate_take(st->dir, !st->readonly, st->readonly ? LOCK_SH : 0);
    st->size_at_open = file_size(st->dir, "data.mdb");
    char data_path[4200];
    snprintf(data_path, sizeof data_path, "%s/data.mdb", st->dir);
    /* Smaller than LMDB's two meta pages: a writer was killed between creating the
     * file and writing them, so nothing was ever committed. Readers see an empty
     * index (LMDB would try to write the pages); the writer, holding the lock, lets
     * LMDB start the file anew. */
    if (access(data_path, F_OK) == 0 && st->size_at_open < 2 * (uint64_t)sysconf(_SC_PAGESIZE)) {
        if (st->readonly) {
            st->empty = 1;
            gate_release(gate);
            *out = st;
            return 0;
        }
        if (truncate(data_path, 0) != 0) {
            status = dsq_error_set(err, DSQ_EIO, "cannot reset %s: %s", data_path, strerror(errno));
            goto fail;
        }
    }
    /* DSQ_MAP_BYTES: a smaller first map, so tests can make the map fill and grow */
    const char *mb = getenv("DSQ_MAP_BYTES");
    size_t map = mb && strtoull(mb, NULL, 10) >= 65536 ? (size_t)strtoull(mb, NULL, 10) : INITIAL_MAP;
    if ((rc = mdb_env_create(&st->env)) || (rc = mdb_env_set_maxdbs(st->env, 16)) ||
        (!st->readonly && (rc = mdb_env_set_mapsize(st->env, map))) ||
        (rc = mdb_env_open(st->env, st->dir,
                           MDB_NOTLS | (st->readonly ? MDB_RDONLY : MDB_NOSYNC), 0644))) {
        status = dsq_error_set(err, DSQ_EINDEX, "cannot open index %s: %s", st->dir,
                               mdb_strerror(rc));
        goto fail;
    }
    if ((status = init_tables(st, err)))
        goto fail;
    if (!st->readonly && params->sync_behind && dsq_syncer_new(data_path, &st->syncer) != 0) {
        status = dsq_error_set(err, DSQ_ENOMEM, "opening index");
        goto fail;
    }
    if (st->readonly && (rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &st->rtxn))) {
        status = lmdb_error(err, rc, "reading index");
        goto fail;
    }
    gate_release(gate);
    gate = -1;
    if (st->readonly && !st->empty && (status = back_dict(st, err)))
        goto fail;
    *out = st;
    return 0;
fail:
    gate_release(gate);
    dsq_store_close(st);
    return status;
}

void dsq_store_close(dsq_store *st)
{
    if (!st)
        return;
    if (st->txn)
        mdb_txn_abort(st->txn);
    if (st->dict_cur)
        mdb_cursor_close(st->dict_cur);
    if (st->rtxn)
        mdb_txn_abort(st->rtxn);
    dsq_syncer_free(st->syncer); /* (waits for a sync under way) */
    if (st->env && !st->readonly)
        mdb_env_sync(st->env, 1); /* errors were reported by dsq_store_sync, if called */
    if (st->env)
        mdb_env_close(st->env);
    dsq_dict_free(st->dict);
    ZSTD_freeCCtx(st->zc);
    ZSTD_freeDCtx(st->zd);
    free(st->pend);
    free(st->pend_next);
    free(st->fresh);
    dsq_block_cols_free(st->cols);
    free(st->packed);
    free(st->unpacked);
    free(st->looked);
    free(st->zrun);
    free(st->grpz);
    free(st->gb_put.p);
    free(st->gb_vis.p);
    free(st->gb_get.p);
    free(st->gb_roll.p);
    free(st->sr_f);
    free(st->sr_a);
    free(st->sr_h);
    free(st->sr_bytes);
    free(st->ser);
    free(st->blk);
    free(st->blk_by_key);
    free(st->hattr);
    free(st->hattr_key);
    free(st->hattr_tmp);
    free(st->ser_at);
    free(st->ser_tmp);
    free(st->ser_keys);
    free(st->due);
    free(st->grp);
    free(st->ment);
    free(st->piece_end);
    free(st->piece_first);
    free(st->drop_rank);
    free(st->dict_all);
    free(st->dict_len);
    if (st->lock_fd >= 0)
        close(st->lock_fd);
    if (st->statm_fd >= 0)
        close(st->statm_fd);
    free(st);
}

dsq_dict *dsq_store_dict(dsq_store *st) { return st->dict; }

/* The transaction a read uses: the snapshot, the open write, or a new read-only
 * one (*own set: the caller aborts it). */
static int read_txn(dsq_store *st, MDB_txn **txn, int *own, dsq_error *err)
{
    *own = 0;
    if (st->empty)
        return DSQ_EMPTY_INDEX;
    *txn = st->rtxn ? st->rtxn : st->txn;
    if (*txn)
        return 0;
    if (!st->env)
        return dsq_error_set(err, DSQ_EIO, "the index could not be opened again after a write");
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn);
    if (rc)
        return lmdb_error(err, rc, "reading index");
    *own = 1;
    return 0;
}

/* Source records are stored as varints (mtime zigzag), the per-family and per-level
 * line counts as a mask of the non-zero ones and their varints: about 60 bytes
 * instead of the record's 400 (most families never occur in a file), so the
 * records an unchanged re-run reads take a seventh of the pages. */
#define SOURCE_VAL_MAX ((13 + DSQ_REC_FAMILIES + DSQ_REC_LEVELS) * DSQ_VARINT_MAX + 5)

static size_t source_val_put(unsigned char *out, const dsq_source_rec *r)
{
    const uint64_t v[13] = {r->version, r->id, r->run, r->members, r->size,
                            dsq_zigzag(r->mtime_ns), r->fingerprint, r->bytes_decoded,
                            r->lines, r->cut_lines, r->events, r->nblocks,
                            (uint64_t)r->errors << 32 | r->flags};
    unsigned char *p = out;
    for (int i = 0; i < 13; i++)
        p = dsq_varint_put(p, v[i]);
    uint32_t fam = 0;
    uint8_t lev = 0;
    for (int i = 0; i < DSQ_REC_FAMILIES; i++)
        fam |= (uint32_t)(r->family_lines[i] != 0) << i;
    for (int i = 0; i < DSQ_REC_LEVELS; i++)
        lev |= (uint8_t)((r->level_lines[i] != 0) << i);
    memcpy(p, &fam, 4);
    p[4] = lev;
    p += 5;
    for (int i = 0; i < DSQ_REC_FAMILIES; i++)
        if (fam >> i & 1)
            p = dsq_varint_put(p, r->family_lines[i]);
    for (int i = 0; i < DSQ_REC_LEVELS; i++)
        if (lev >> i & 1)
            p = dsq_varint_put(p, r->level_lines[i]);
    return (size_t)(p - out);
}

/* 0 with *r, or -1 when the value is damaged. */
static int source_val_get(const MDB_val *val, dsq_source_rec *r)
{
    const unsigned char *p = val->mv_data, *end = p + val->mv_size;
    uint64_t v[13];
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 13; i++)
        if (dsq_varint_get(&p, end, &v[i]))
            return -1;
    if (end - p < 5 || v[0] > UINT32_MAX || v[1] > UINT32_MAX || v[2] > UINT32_MAX ||
        v[3] > UINT32_MAX || v[11] > UINT32_MAX)
        return -1;
    uint32_t fam;
    memcpy(&fam, p, 4);
    uint8_t lev = p[4];
    p += 5;
    for (int i = 0; i < DSQ_REC_FAMILIES; i++)
        if (fam >> i & 1 && dsq_varint_get(&p, end, &r->family_lines[i]))
            return -1;
    for (int i = 0; i < DSQ_REC_LEVELS; i++)
        if (lev >> i & 1 && dsq_varint_get(&p, end, &r->level_lines[i]))
            return -1;
    if (p != end)
        return -1;
    r->version = (uint32_t)v[0];
    r->id = (uint32_t)v[1];
    r->run = (uint32_t)v[2];
    r->members = (uint32_t)v[3];
    r->size = v[4];
    r->mtime_ns = dsq_unzigzag(v[5]);
    r->fingerprint = v[6];
    r->bytes_decoded = v[7];
    r->lines = v[8];
    r->cut_lines = v[9];
    r->events = v[10];
    r->nblocks = (uint32_t)v[11];
    r->errors = (uint32_t)(v[12] >> 32);
    r->flags = (uint32_t)v[12];
    return 0;
}

int dsq_store_source_find(dsq_store *st, const char *path, dsq_source_rec *rec, dsq_error *err)
{
    MDB_txn *txn;
    int own, rc, found = 0;
    if ((rc = read_txn(st, &txn, &own, err)))
        return rc == DSQ_EMPTY_INDEX ? 0 : rc;
    MDB_val k = {strlen(path), (void *)path}, v;
    rc = mdb_get(txn, st->sources, &k, &v);
    if (rc == 0 && source_val_get(&v, rec) == 0) {
        found = 1;
    } else if (rc && rc != MDB_NOTFOUND) {
        found = lmdb_error(err, rc, "reading sources");
    }
    if (own)
        mdb_txn_abort(txn);
    return found;
}

int dsq_store_begin(dsq_store *st, dsq_error *err)
{
    if (st->readonly)
        return dsq_error_set(err, DSQ_EUSAGE, "index opened read-only");
    if (!st->env)
        return dsq_error_set(err, DSQ_EIO, "the index could not be opened again after a write");
    st->map_full = 0;
    st->puts_in_write = 0;
    st->blk_len = 0;
    st->parts = 0;
    st->ndue = 0;
    ser_clear(st);
    st->ser_put = 0;
    st->nfresh = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &st->txn);
    return rc ? lmdb_error(err, rc, "starting write") : 0;
}

/* Records a failed put; MAP_FULL is remembered so commit grows the map. */
static int put_failed(dsq_store *st, int rc, dsq_error *err, const char *what)
{
    if (rc == MDB_MAP_FULL)
        st->map_full = 1;
    return lmdb_error(err, rc, what);
}

/* Deletes every key of `dbi` that starts with pre[0..n). */
static int drop_prefix(dsq_store *st, MDB_dbi dbi, const unsigned char *pre, size_t n,
                       dsq_error *err)
{
    MDB_cursor *c = NULL;
    int rc = mdb_cursor_open(st->txn, dbi, &c), status = 0;
    if (rc)
        return put_failed(st, rc, err, "dropping rollups");
    MDB_val k, v;
    for (;;) { /* re-seek after each delete */
        k.mv_size = n;
        k.mv_data = (void *)pre;
        if ((rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)))
            break;
        if (k.mv_size < n || memcmp(k.mv_data, pre, n) != 0)
            break;
        if ((rc = mdb_cursor_del(c, 0)))
            break;
    }
    if (rc && rc != MDB_NOTFOUND)
        status = put_failed(st, rc, err, "dropping rollups");
    mdb_cursor_close(c);
    return status;
}

/* Series summaries wait in st->ser until the write needs them in LMDB (its commit,
 * or a drop): then they go in key order into their groups (sergroup.h) through one
 * cursor, which finds the next key on the page it is on instead of searching from
 * the root. A group already in the index (the run's other hosts and sources, or
 * this source's previous commit) is merged with them, an entry of the same (host,
 * rank, source) replaced. A key put twice (a checkpoint, then the end of the source)
 * keeps the last value. */
static int ser_before(const ser_ref *x, const ser_ref *y)
{
    if (x->a != y->a)
        return x->a < y->a;
    if (x->b != y->b)
        return x->b < y->b;
    if (x->source != y->source)
        return x->source < y->source;
    return x->at < y->at; /* the same key: in the order put */
}

/* Sorts r[0..n) with the comparison inline (tmp: room for n): a bottom-up merge
 * sort, after insertion sorts of runs of 16. Returns r or tmp, whichever holds the
 * sorted entries (the passes alternate between them). */
static const ser_ref *sort_ser(ser_ref *r, ser_ref *tmp, size_t n)
{
    for (size_t lo = 0; lo < n; lo += 16) {
        size_t hi = lo + 16 < n ? lo + 16 : n;
        for (size_t i = lo + 1; i < hi; i++) {
            ser_ref x = r[i];
            size_t j = i;
            for (; j > lo && ser_before(&x, &r[j - 1]); j--)
                r[j] = r[j - 1];
            r[j] = x;
        }
    }
    for (size_t w = 16; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = ser_before(&r[j], &r[i]) ? r[j++] : r[i++];
            while (i < mid)
                tmp[k++] = r[i++];
            while (j < hi)
                tmp[k++] = r[j++];
        }
        ser_ref *t = r; /* the merged runs are in tmp: swap the roles */
        r = tmp;
        tmp = t;
    }
    return r;
}

/* Bits of x (0 for 0). */
static unsigned bit_width(uint64_t x) { return x ? 64 - (unsigned)__builtin_clzll(x) : 0; }

#define RADIX_BITS 11  /* bits sorted a pass; 8 under RADIX_BIG entries, whose counts
                          would cost more than they save */
#define RADIX_BIG 4096
#define RADIX_MIN 24   /* fewer entries: sort_ser's insertion sorts */

/* The parts of an entry's key, in order: run, field class (a field, a kind's count,
 * a kind's times: the pseudo-fields' ids are far above every field's), field within
 * its class, host, rank + 1, source. */
enum { KEY_PARTS = 6 };
static void key_parts(const ser_ref *e, uint64_t v[KEY_PARTS])
{
    uint32_t f = (uint32_t)e->a;
    uint32_t cls = f >= DSQ_SERIES_TIMES_BASE ? 2 : f >= DSQ_SERIES_KIND_BASE ? 1 : 0;
    v[0] = e->a >> 32;
    v[1] = cls;
    v[2] = f - (cls == 2 ? DSQ_SERIES_TIMES_BASE : cls == 1 ? DSQ_SERIES_KIND_BASE : 0);
    v[3] = e->b >> 32;
    v[4] = (uint32_t)e->b;
    v[5] = e->source;
}

/* sort_ser of entries in put order (at ascending), by radix: when the spans of the
 * key's parts in r (key_parts, each from its least) and the index of an entry fit
 * in 64 bits, the entries' packed keys are sorted RADIX_BITS (or 8) at a time from
 * the least significant, which keeps entries of one key in the order put, then the
 * entries are gathered into tmp in that order. About 180 instructions an entry
 * where the merge sort took ~310 (a commit holds some 18,000 series of the
 * 1000-run archive). NULL when the key does not fit: use sort_ser. keys: room for
 * two arrays of n. */
static const ser_ref *radix_ser(uint64_t *keys, const ser_ref *r, ser_ref *tmp, size_t n)
{
    uint64_t lo[KEY_PARTS], hi[KEY_PARTS], v[KEY_PARTS];
    for (int j = 0; j < KEY_PARTS; j++)
        lo[j] = UINT64_MAX, hi[j] = 0;
    for (size_t i = 0; i < n; i++) {
        key_parts(&r[i], v);
        for (int j = 0; j < KEY_PARTS; j++) {
            lo[j] = v[j] < lo[j] ? v[j] : lo[j];
            hi[j] = v[j] > hi[j] ? v[j] : hi[j];
        }
    }
    unsigned w[KEY_PARTS], ibits = bit_width(n - 1), kbits = 0;
    for (int j = 0; j < KEY_PARTS; j++)
        kbits += w[j] = bit_width(hi[j] - lo[j]);
    if (kbits + ibits > 64)
        return NULL;
    unsigned pos[KEY_PARTS], at_bit = ibits; /* where each part goes (the index below) */
    for (int j = KEY_PARTS - 1; j >= 0; j--) {
        pos[j] = w[j] ? at_bit : 0; /* (a part of one value adds 0) */
        at_bit += w[j];
    }
    uint64_t *k = keys, *k2 = keys + n;
    for (size_t i = 0; i < n; i++) {
        key_parts(&r[i], v);
        uint64_t key = i;
        for (int j = 0; j < KEY_PARTS; j++)
            key |= (v[j] - lo[j]) << pos[j];
        k[i] = key;
    }
    const unsigned bits = n >= RADIX_BIG ? RADIX_BITS : 8;
    for (unsigned shift = ibits; shift < ibits + kbits; shift += bits) {
        uint32_t count[1u << RADIX_BITS];
        const uint64_t mask = (1u << bits) - 1;
        memset(count, 0, (mask + 1) * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[k[i] >> shift & mask]++;
        uint32_t at = 0;
        for (size_t d = 0; d <= mask; d++) {
            uint32_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            k2[count[k[i] >> shift & mask]++] = k[i];
        uint64_t *t = k;
        k = k2;
        k2 = t;
    }
    const uint64_t imask = ibits ? (ibits == 64 ? UINT64_MAX : (1ull << ibits) - 1) : 0;
    for (size_t i = 0; i < n; i++)
        tmp[i] = r[k[i] & imask];
    return tmp;
}

/* The waiting series sorted (ser_before): in r or st->ser_tmp, which has room for n
 * (dsq_store_series_put); without memory for the keys, by sort_ser. */
static const ser_ref *sort_series(dsq_store *st, ser_ref *r, size_t n)
{
    int room = n >= RADIX_MIN;
    while (room && st->ser_keys_cap < 2 * n)
        room = !grow_arr((void **)&st->ser_keys, &st->ser_keys_cap, st->ser_keys_cap,
                         sizeof *st->ser_keys);
    const ser_ref *s = room ? radix_ser(st->ser_keys, r, st->ser_tmp, n) : NULL;
    return s ? s : sort_ser(r, st->ser_tmp, n);
}

int dsq_store_sort_check(size_t n, uint64_t seed, const uint32_t span[5])
{
    ser_ref *r = malloc(n * sizeof *r), *copy = malloc(n * sizeof *r);
    ser_ref *t1 = malloc(n * sizeof *r), *t2 = malloc(n * sizeof *r);
    uint64_t *keys = malloc(2 * n * sizeof *keys);
    int rc = -1;
    if (!r || !copy || !t1 || !t2 || !keys)
        goto out;
    for (size_t i = 0; i < n; i++) { /* xorshift: each part within its span, `at` ascending */
        uint64_t v[5];
        for (int j = 0; j < 5; j++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            v[j] = span[j] ? seed % span[j] + 1000u * (unsigned)j : 7;
        }
        if (span[1] && seed % 3) /* a kind's count or times series */
            v[1] = (seed % 3 == 1 ? DSQ_SERIES_KIND_BASE : DSQ_SERIES_TIMES_BASE) + seed % 61;
        r[i] = (ser_ref){v[0] << 32 | v[1], v[2] << 32 | v[3], (uint32_t)v[4], 0, i * 3};
    }
    memcpy(copy, r, n * sizeof *r);
    const ser_ref *x = radix_ser(keys, r, t1, n), *y = sort_ser(copy, t2, n);
    rc = !x ? 0 : memcmp(x, y, n * sizeof *x) == 0 ? 1 : -1;
out:
    free(r);
    free(copy);
    free(t1);
    free(t2);
    free(keys);
    return rc;
}

/* A waiting series (its entry: key, pairs' length (u32), pairs, record as put) as
 * a group entry. */
static void pending_entry(const dsq_store *st, const ser_ref *r, dsq_group_entry *e)
{
    const unsigned char *p = st->ser + r->at;
    uint32_t n;
    memcpy(&n, p + DSQ_SERIES_KEY_LEN, 4);
    e->host = (uint32_t)(r->b >> 32);
    e->rank = (int32_t)((uint32_t)r->b - 1u);
    e->source = r->source;
    e->pairs = p + DSQ_SERIES_KEY_LEN + 4;
    e->npairs = n;
    memcpy(&e->rec, e->pairs + n, sizeof e->rec);
    e->raw = e->sum = NULL;
    e->sum_len = 0;
    e->skimmed = 0;
}

/* A waiting series put_series reads SER_AHEAD entries later, asked of the caches now:
 * in the sorted order the entries lie anywhere in st->ser (some MB at a commit of the
 * 1000-run archive), and reading their pair counts and summaries missed the caches
 * (~45 % of put_series' samples). Its key, count and first bytes, and its summary
 * where the entry is short. */
#define SER_AHEAD 8
static void prefetch_entry(const dsq_store *st, const ser_ref *r)
{
    const unsigned char *p = st->ser + r->at;
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
}

/* Where waiting series r goes against stored entry e in their group's order (host,
 * rank + 1, source): < 0 before it, 0 in its place, > 0 after it. */
static int entry_cmp(const ser_ref *r, const dsq_group_entry *e)
{
    uint64_t b = (uint64_t)e->host << 32 | ((uint32_t)e->rank + 1u);
    if (r->b != b)
        return r->b < b ? -1 : 1;
    return (r->source > e->source) - (r->source < e->source);
}

/* The group record of the series key target (20 bytes): the last record of its
 * (run, field) whose key is not after target, or else the first of them; 0 with
 * the cursor on it (*k, *v), MDB_NOTFOUND when (run, field) has none, or an LMDB
 * error. */
static int group_at(MDB_cursor *c, const unsigned char *target, MDB_val *k, MDB_val *v)
{
    *k = (MDB_val){DSQ_SERIES_KEY_LEN, (void *)target};
    int rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    if (rc == 0 && key_cmp(k, &(MDB_val){DSQ_SERIES_KEY_LEN, (void *)target}) == 0)
        return 0;
    MDB_val pk, pv;
    int rp = mdb_cursor_get(c, &pk, &pv, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
    if (rp && rp != MDB_NOTFOUND)
        return rp;
    if (rp == 0 && pk.mv_size == DSQ_SERIES_KEY_LEN && memcmp(pk.mv_data, target, DSQ_GROUP_PREFIX_LEN) == 0) {
        *k = pk;
        *v = pv;
        return 0;
    }
    *k = (MDB_val){DSQ_SERIES_KEY_LEN, (void *)target}; /* none before: the first after */
    if ((rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE)))
        return rc;
    return k->mv_size == DSQ_SERIES_KEY_LEN && memcmp(k->mv_data, target, DSQ_GROUP_PREFIX_LEN) == 0
               ? 0
               : MDB_NOTFOUND;
}

/* A group record packed by zstd is GROUP_ZMARK and then the frame: a varint that
 * is never written (0 in two bytes), so no record of entries starts with it. */
static const unsigned char GROUP_ZMARK[2] = {0x80, 0x00};
static const unsigned char GROUP_NONE[1]; /* what a damaged record is read as */
#define GROUP_UNPACKED_MAX ((size_t)1 << 24)

/* A group record's bytes (v's own or, packed, unpacked into b): 0, DSQ_ENOMEM, or
 * -1 when the record is damaged. */
static int group_bytes(dsq_store *st, struct group_buf *b, const MDB_val *v,
                       const unsigned char **p, size_t *n)
{
    const unsigned char *d = v->mv_data;
    if (v->mv_size < sizeof GROUP_ZMARK || memcmp(d, GROUP_ZMARK, sizeof GROUP_ZMARK) != 0) {
        *p = d;
        *n = v->mv_size;
        return 0;
    }
    int r = unzstd(st, d + sizeof GROUP_ZMARK, v->mv_size - sizeof GROUP_ZMARK, GROUP_UNPACKED_MAX,
                   &b->p, &b->cap, n);
    *p = b->p;
    return r;
}

/* group_bytes for an iterator: a damaged record reads as no entries (as the rest
 * of a record after a damaged entry does); 0 or DSQ_ENOMEM. */
static int group_iter(dsq_store *st, struct group_buf *b, const MDB_val *v, dsq_group_iter *it)
{
    const unsigned char *p;
    size_t n;
    int r = group_bytes(st, b, v, &p, &n);
    if (r == DSQ_ENOMEM)
        return r;
    dsq_group_iter_init(it, r ? GROUP_NONE : p, r ? 0 : n);
    return 0;
}

/* Writes st->ment[0..n) (one (run, field), in order; prefix: its 8 key bytes) as
 * group records, each keyed by its first entry, after deleting the record of key
 * old (NULL: none). A record holds at most GROUP_MAX entries of GROUP_RAW bytes,
 * packed by zstd at GROUP_LEVEL when they are GROUP_ZMIN bytes or more and that is
 * shorter, and takes at most GROUP_STORED bytes so (one entry bigger alone): four
 * fill a B-tree page (a record past half a page takes overflow pages of its own,
 * which LMDB frees and finds again on every rewrite, searching its free list; and
 * pages of records of 1-1.5 kB were a quarter empty). Records under GROUP_ZMIN are
 * stored as they are, and so is one that would pack too little to hold more
 * entries under GROUP_STORED (from GROUP_ZMIN on, only what packs to 64 % or less):
 * the 1000-run archive's records (some 600 bytes each, written once, 40 MB) packed
 * from 256 bytes took 0.115 s of CPU for an index 31 % smaller, from 1 kB 0.045 s
 * for 16 % (its wall time up 2-5 %); from 1.5 kB next to nothing, for 6 %. A big
 * job's records are of ranks logging alike, rewritten at each commit (100 MB log:
 * index 12.7 -> 9.5 MB, its .zst 9.9; 8,000 per-rank files of one run: 40.2 -> 18.6
 * MB). The entries may point into the record deleted: all are packed before
 * anything is deleted. */
#define GROUP_MAX 256
#define GROUP_RAW 8192
#define GROUP_STORED 980
#define GROUP_ZMIN 1536
#define GROUP_LEVEL (-1)

/* The record of the n bytes of entries in st->grp, into out (room for
 * ZSTD_compressBound(n) + 2): packed (GROUP_ZMARK, frame) when that is shorter.
 * Returns its length. */
static size_t group_record(dsq_store *st, size_t n, unsigned char *out, size_t room)
{
    if (n >= GROUP_ZMIN) {
        size_t z = ZSTD_compressCCtx(st->zc, out + sizeof GROUP_ZMARK, room - sizeof GROUP_ZMARK,
                                     st->grp, n, GROUP_LEVEL);
        if (!ZSTD_isError(z) && z + sizeof GROUP_ZMARK < n) {
            memcpy(out, GROUP_ZMARK, sizeof GROUP_ZMARK);
            return z + sizeof GROUP_ZMARK;
        }
    }
    memcpy(out, st->grp, n);
    return n;
}

static int write_groups(dsq_store *st, MDB_cursor *c, const unsigned char *prefix,
                        const unsigned char *old, size_t n, dsq_error *err)
{
    size_t pieces = 0, out = 0, limit = GROUP_RAW;
    if (!st->zc && !(st->zc = ZSTD_createCCtx()))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    for (size_t i = 0; i < n;) {
        /* as many entries as `limit` bytes hold (ends[k]: the bytes of the first k),
         * then fewer while they take more than GROUP_STORED bytes: as many as fit
         * at their ratio, or unpacked; a prefix of the entries packed already */
        size_t ends[GROUP_MAX + 1], m = 0;
        unsigned char *o = st->grp;
        dsq_group_prev prev = {0, 0};
        ends[0] = 0;
        while (i + m < n && m < GROUP_MAX) {
            unsigned char *e = dsq_group_put(o, &prev, &st->ment[i + m]);
            if (m && (size_t)(e - st->grp) > limit)
                break;
            o = e;
            ends[++m] = (size_t)(o - st->grp);
        }
        for (;;) {
            if (ends[m] < GROUP_ZMIN && ends[m] > GROUP_STORED && m > 1) /* not packed */
                while (m > 1 && ends[m] > GROUP_STORED)
                    m--;
            size_t raw = ends[m], room = ZSTD_compressBound(raw) + sizeof GROUP_ZMARK;
            if (reserve(&st->grpz, &st->grpz_cap, out + room) ||
                grow_arr((void **)&st->piece_end, &st->piece_cap, pieces, sizeof *st->piece_end) ||
                grow_arr((void **)&st->piece_first, &st->piece_first_cap, pieces, sizeof *st->piece_first))
                return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
            size_t len = group_record(st, raw, st->grpz + out, room);
            if (raw >= GROUP_ZMIN) {
                /* the next record's entries at this ratio (the hosts of a field log
                 * alike): bytes zstd does not pack stay under GROUP_ZMIN, not tried
                 * again (a big job's timings, each rank's own: packing 8 kB each
                 * time to keep 1 kB, 29 MB for 6, made indexing it 27 % slower) */
                limit = raw * GROUP_STORED / len;
                limit = limit < GROUP_STORED ? GROUP_STORED : limit > GROUP_RAW ? GROUP_RAW : limit;
            }
            if (len <= GROUP_STORED || m == 1) {
                st->piece_first[pieces] = i;
                st->piece_end[pieces++] = out += len;
                i += m;
                break;
            }
            size_t keep = m * GROUP_STORED / len;
            m = keep < 1 ? 1 : keep < m ? keep : m - 1;
        }
    }
    int rc = 0;
    if (old) {
        MDB_val k = {DSQ_SERIES_KEY_LEN, (void *)old}, v;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET);
        if (!rc)
            rc = mdb_cursor_del(c, 0);
    }
    for (size_t p = 0; p < pieces && !rc; p++) {
        size_t lo = st->piece_first[p], from = p ? st->piece_end[p - 1] : 0;
        unsigned char key[DSQ_SERIES_KEY_LEN];
        memcpy(key, prefix, DSQ_GROUP_PREFIX_LEN);
        put_be32(key + 8, st->ment[lo].host);
        put_be32(key + 12, (uint32_t)st->ment[lo].rank + 1u);
        put_be32(key + 16, st->ment[lo].source);
        MDB_val k = {sizeof key, key}, v = {st->piece_end[p] - from, st->grpz + from};
        MDB_val tail = {st->ser_tail_n, st->ser_tail};
        int append = st->ser_appends && (!st->ser_tail_n || key_cmp(&k, &tail) > 0);
        note_put(st);
        rc = mdb_cursor_put(c, &k, &v, append ? MDB_APPEND : 0);
        if (!rc && append) {
            memcpy(st->ser_tail, key, sizeof key);
            st->ser_tail_n = sizeof key;
        }
    }
    return rc ? put_failed(st, rc, err, "writing rollups") : 0;
}

/* put_series: series that all go after a record that is full (three quarters of
 * write_groups' GROUP_STORED bytes, GROUP_RAW bytes of entries or GROUP_MAX
 * entries) start records of their own; the record is not merged with them, packed
 * again (a run's files indexed a commit after another add series after its last:
 * one run of 8,000 files packed 29 MB for 1 MB of records) */
#define GROUP_FULL (GROUP_STORED * 3 / 4)

/* Whether a group record is full (stored bytes v, its entries p[0..n)) and waiting
 * series r goes after all its entries. */
static int full_before(const MDB_val *v, const unsigned char *p, size_t n, const ser_ref *r)
{
    dsq_group_entry last = {0};
    size_t count;
    if (!dsq_group_last(p, n, &last.host, &last.rank, &last.source, &count))
        return 0;
    return (v->mv_size >= GROUP_FULL || n >= GROUP_RAW * 3 / 4 || count >= GROUP_MAX * 3 / 4) &&
           entry_cmp(r, &last) > 0;
}

/* Room for n entries in st->ment and for a group of `bytes` stored bytes (its
 * entries unpacked) and `extra` new ones re-packed in st->grp: a new base (host
 * and time) adds at most 2 DSQ_VARINT_MAX to an entry's head and summary. */
static int group_room(dsq_store *st, size_t n, size_t bytes, size_t extra)
{
    while (st->ment_cap < n)
        if (grow_arr((void **)&st->ment, &st->ment_cap, st->ment_cap, sizeof *st->ment))
            return -1;
    return reserve(&st->grp, &st->grp_cap, bytes + extra + (n + 1) * 2 * DSQ_VARINT_MAX);
}

/* Merges a group's entries into the run rollup of its (field, run), made anew
 * when the last one in st->fresh is another's: the groups come in key order, the
 * order runroll_merge reads them in, so the sums are the same bit for bit. */
static int fresh_add(dsq_store *st, uint32_t field, uint32_t run, const dsq_group_entry *e,
                     size_t n)
{
    uint64_t a = (uint64_t)field << 32 | run;
    if (field >= DSQ_SERIES_TIMES_BASE)
        return 0; /* no run rollup (dsq_store_runroll_update) */
    if (!st->nfresh || st->fresh[st->nfresh - 1].a != a) {
        if (grow_arr((void **)&st->fresh, &st->fresh_cap, st->nfresh, sizeof *st->fresh))
            return -1;
        st->fresh[st->nfresh] = (fresh_roll){.a = a};
        st->nfresh++;
    }
    for (size_t i = 0; i < n; i++) {
        const dsq_series_rec *rec = &e[i].rec;
        dsq_series_rec whole;
        if (e[i].skimmed) { /* an entry put_series kept (it skims them) */
            if (dsq_group_entry_rec(&e[i], &whole))
                continue; /* damaged: left out */
            rec = &whole;
        }
        dsq_series_merge(&st->fresh[st->nfresh - 1].rec, rec, field >= DSQ_SERIES_KIND_BASE);
    }
    return 0;
}

static int fresh_cmp(const void *x, const void *y)
{
    uint64_t a = ((const fresh_roll *)x)->a, b = ((const fresh_roll *)y)->a;
    return (a > b) - (a < b);
}

/* Puts the waiting series into their groups, in key order; they stay waiting
 * until the caller drops them (flush_series). Each group record found is merged
 * with the waiting series that go before the next record of its (run, field), an
 * entry of the same (host, rank, source) replaced (a full record that they all go
 * after is left as it is: full_before). at_commit: the commit's
 * put, the open write's last, which makes the run rollups of its new runs
 * (st->fresh). */
static int put_series(dsq_store *st, int at_commit, dsq_error *err)
{
    if (!st->ser_n)
        return 0;
    const ser_ref *r = sort_series(st, st->ser_at, st->ser_n);
    MDB_cursor *c = NULL;
    int rc = mdb_cursor_open(st->txn, st->series, &c), status = 0;
    if (!rc) { /* the table's last key, for appends (write_groups); a key of another
                  length (damage): no appends */
        MDB_val lk, lv;
        int lr = mdb_cursor_get(c, &lk, &lv, MDB_LAST);
        st->ser_tail_n = 0;
        st->ser_appends = lr == MDB_NOTFOUND || (!lr && lk.mv_size == DSQ_SERIES_KEY_LEN);
        if (!lr && st->ser_appends) {
            memcpy(st->ser_tail, lk.mv_data, DSQ_SERIES_KEY_LEN);
            st->ser_tail_n = DSQ_SERIES_KEY_LEN;
        } else if (lr && lr != MDB_NOTFOUND) {
            rc = lr;
        }
    }
    /* A run whose name is newer than the last commit's dictionary has no group
     * record in the index, unless this write put some (a drop flushes the waiting
     * series): most of a nightly index's runs, whose groups need no lookup. */
    uint32_t fresh_above = st->ser_put ? UINT32_MAX : st->dict_saved;
    int make_fresh = at_commit && !st->ser_put;
    st->ser_put = 1;
    for (size_t x = 0; x < st->ser_n && !rc && !status;) {
        const unsigned char *target = st->ser + r[x].at; /* its key */
        unsigned char old[DSQ_SERIES_KEY_LEN], next[DSQ_SERIES_KEY_LEN];
        MDB_val k, v = {0, NULL}, nk, nv;
        uint32_t run = (uint32_t)(r[x].a >> 32), field = (uint32_t)r[x].a;
        int at = run > fresh_above ? MDB_NOTFOUND : group_at(c, target, &k, &v);
        int has_next = 0;
        if (at && at != MDB_NOTFOUND) {
            rc = at;
            break;
        }
        int found = at == 0; /* a record to merge into (the cursor is on it) */
        if (found) {
            memcpy(old, k.mv_data, sizeof old);
            int rn = mdb_cursor_get(c, &nk, &nv, MDB_NEXT);
            if (rn && rn != MDB_NOTFOUND) {
                rc = rn;
                break;
            }
            has_next = !rn && nk.mv_size == DSQ_SERIES_KEY_LEN &&
                       memcmp(nk.mv_data, target, DSQ_GROUP_PREFIX_LEN) == 0;
            if (has_next)
                memcpy(next, nk.mv_data, sizeof next);
        }
        /* the waiting series of this record: same (run, field), before next */
        size_t y = x, extra = 0;
        for (; y < st->ser_n && r[y].a == r[x].a; y++) {
            const unsigned char *ky = st->ser + r[y].at;
            if (y + SER_AHEAD < st->ser_n) /* in sorted order, they lie anywhere in ser */
                prefetch_entry(st, &r[y + SER_AHEAD]);
            if (has_next && memcmp(ky + DSQ_GROUP_PREFIX_LEN, next + DSQ_GROUP_PREFIX_LEN,
                                   DSQ_SERIES_KEY_LEN - DSQ_GROUP_PREFIX_LEN) >= 0)
                break;
            uint32_t np;
            memcpy(&np, ky + DSQ_SERIES_KEY_LEN, 4);
            extra += DSQ_GROUP_HEAD_MAX + DSQ_SUMMARY_MAX + np;
        }
        const unsigned char *gp = NULL;
        size_t stored = 0;
        if (found) {
            note_read(st, v.mv_size);
            int g = group_bytes(st, &st->gb_put, &v, &gp, &stored);
            if (g == DSQ_ENOMEM) {
                status = dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
                break;
            }
            if (g) /* damaged: its entries are left out */
                stored = 0;
            else if (full_before(&v, gp, stored, &r[x]))
                found = 0, stored = 0; /* full, and the waiting series all after it:
                                          they start records of their own */
        }
        if (group_room(st, (y - x) + stored / 8 + 1, stored, extra)) {
            status = dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
            break;
        }
        dsq_group_iter it;
        dsq_group_entry oe;
        int have_old = 0;
        if (found) {
            dsq_group_iter_init(&it, gp, stored);
            have_old = dsq_group_skim(&it, &oe) == 1; /* a damaged rest is left out */
        }
        size_t n = 0;
        for (size_t i = x; i < y || have_old;) {
            while (i + 1 < y && r[i + 1].b == r[i].b && r[i + 1].source == r[i].source)
                i++; /* the last put is the one stored */
            int cmp = i >= y ? 1 : have_old ? entry_cmp(&r[i], &oe) : -1;
            if (cmp <= 0) {
                if (cmp == 0) /* replaced */
                    have_old = dsq_group_skim(&it, &oe) == 1;
                pending_entry(st, &r[i++], &st->ment[n++]);
            } else {
                st->ment[n++] = oe;
                have_old = dsq_group_skim(&it, &oe) == 1;
            }
        }
        /* (the run rollup first: the entries kept were skimmed, and their bytes may
         * lie in the record write_groups deletes) */
        if (make_fresh && run > fresh_above && fresh_add(st, field, run, st->ment, n))
            status = dsq_error_set(err, DSQ_ENOMEM, "writing run rollups: out of memory");
        if (!status)
            status = write_groups(st, c, target, found ? old : NULL, n, err);
        x = y;
    }
    st->ser_appends = 0; /* drop_from_groups rewrites groups in the middle */
    if (make_fresh && st->nfresh > 1) /* made in the series' order, run first: */
        qsort(st->fresh, st->nfresh, sizeof *st->fresh, fresh_cmp); /* settle's order */
    if (c)
        mdb_cursor_close(c);
    if (rc)
        return put_failed(st, rc, err, "writing rollups");
    return status;
}

static int flush_series(dsq_store *st, dsq_error *err)
{
    int status = put_series(st, 0, err);
    ser_clear(st);
    return status;
}

/* Takes the entries of `source` of one host out of the group records of its (run,
 * field) (prefix: 12 key bytes, run, field and host), and the chunks of those that
 * have any: the records from the one holding the host's first entries (group_at) to
 * the last that starts at the host. */
static int drop_from_groups(dsq_store *st, const unsigned char *prefix, uint32_t source,
                            dsq_error *err)
{
    MDB_cursor *c = NULL;
    int rc = mdb_cursor_open(st->txn, st->series, &c), status = 0, first = 1;
    const uint32_t host = get_be32(prefix + 8);
    unsigned char at[DSQ_SERIES_KEY_LEN];
    memcpy(at, prefix, 12);
    memset(at + 12, 0, sizeof at - 12);
    size_t nchunked = 0;
    while (!rc && !status) { /* each record from `at` on */
        MDB_val k = {sizeof at, at}, v;
        if (first)
            rc = group_at(c, at, &k, &v);
        else if (!(rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) &&
                 (k.mv_size != DSQ_SERIES_KEY_LEN || memcmp(k.mv_data, prefix, DSQ_GROUP_PREFIX_LEN) != 0))
            rc = MDB_NOTFOUND;
        first = 0;
        if (rc)
            break;
        if (get_be32((const unsigned char *)k.mv_data + 8) > host) {
            rc = MDB_NOTFOUND; /* the records of later hosts */
            break;
        }
        unsigned char old[DSQ_SERIES_KEY_LEN];
        memcpy(old, k.mv_data, sizeof old);
        const unsigned char *gp;
        size_t gn;
        int g = group_bytes(st, &st->gb_put, &v, &gp, &gn);
        if (g == DSQ_ENOMEM || (!g && group_room(st, gn / 8 + 1, gn, 0))) {
            status = dsq_error_set(err, DSQ_ENOMEM, "dropping rollups: out of memory");
            break;
        }
        dsq_group_iter it;
        dsq_group_entry e;
        size_t n = 0, dropped = 0;
        dsq_group_iter_init(&it, g ? GROUP_NONE : gp, g ? 0 : gn); /* damaged: left as it is */
        while (dsq_group_next(&it, &e) == 1) {
            if (e.source != source || e.host != host) {
                st->ment[n++] = e;
                continue;
            }
            dropped++;
            if (e.rec.nchunks) { /* its chunks go after the group is written */
                if (grow_arr((void **)&st->drop_rank, &st->drop_rank_cap, nchunked,
                             sizeof *st->drop_rank)) {
                    status = dsq_error_set(err, DSQ_ENOMEM, "dropping rollups: out of memory");
                    break;
                }
                st->drop_rank[nchunked++] = e.rank;
            }
        }
        if (!status && dropped) /* a damaged rest stays only when nothing was dropped */
            status = write_groups(st, c, prefix, old, n, err);
        /* the next record: after old (a record rewritten without the source's
         * entries starts at or after old, and is read again, for nothing) */
        memcpy(at, old, sizeof at);
        int i = DSQ_SERIES_KEY_LEN - 1;
        while (i >= DSQ_GROUP_PREFIX_LEN && ++at[i] == 0)
            i--;
        if (i < DSQ_GROUP_PREFIX_LEN)
            break; /* old was the last key of the prefix */
    }
    if (c)
        mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND && !status)
        status = put_failed(st, rc, err, "dropping rollups");
    unsigned char sk[DSQ_SERIES_KEY_LEN];
    memcpy(sk, prefix, 12); /* run, field, host */
    put_be32(sk + 16, source);
    for (size_t i = 0; i < nchunked && !status; i++) {
        put_be32(sk + 12, (uint32_t)st->drop_rank[i] + 1u);
        status = drop_prefix(st, st->chunks, sk, sizeof sk, err);
    }
    return status;
}

/* The key of an attribute: run, name, source. */
static void attr_key(unsigned char key[12], uint32_t run, uint32_t name, uint32_t source)
{
    put_be32(key, run);
    put_be32(key + 4, name);
    put_be32(key + 8, source);
}

/* Drops a source's series (summaries and chunks) and attributes, listed in its
 * srcroll record, then recomputes the run rollups of the fields it had. */
static int drop_rollups(dsq_store *st, uint32_t source, dsq_error *err)
{
    unsigned char pre[4], key[DSQ_SERIES_KEY_LEN];
    unsigned char *list = NULL;
    int status = flush_series(st, err);
    if (!status) /* (the held attributes put first, in case some are of this source) */
        status = put_held_attrs(st, err);
    if (status)
        return status;
    put_be32(pre, source);
    MDB_val k = {4, pre}, v;
    int rc = mdb_get(st->txn, st->srcroll, &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? 0 : put_failed(st, rc, err, "dropping rollups");
    const void *data;
    size_t n;
    if (unpack(st, &v, &data, &n) || !(list = malloc(n ? n : 1)))
        return dsq_error_set(err, DSQ_EINDEX, "damaged list of rollups (source %u)", source);
    memcpy(list, data, n); /* copied: the deletes below may move the page it is on */
    const unsigned char *p = list, *end = list + n;
    while (p < end && !status) { /* per run: fields, (host, rank + 1) pairs, names */
        uint64_t run, nf, nh, na, x, y;
        const unsigned char *fields, *pairs;
        if (dsq_varint_get(&p, end, &run) || dsq_varint_get(&p, end, &nf))
            break;
        fields = p;
        for (uint64_t i = 0; i < nf && !dsq_varint_get(&p, end, &x); i++)
            ;
        if (dsq_varint_get(&p, end, &nh))
            break;
        pairs = p;
        for (uint64_t i = 0; i < nh && !dsq_varint_get(&p, end, &x) && !dsq_varint_get(&p, end, &y); i++)
            ;
        put_be32(key, (uint32_t)run);
        const unsigned char *fp = fields;
        for (uint64_t i = 0; i < nf && !status && !dsq_varint_get(&fp, end, &x); i++) {
            put_be32(key + 4, (uint32_t)x);
            const unsigned char *hp = pairs;
            uint64_t last_host = UINT64_MAX; /* pairs go by host: each group once */
            for (uint64_t j = 0; j < nh && !status && !dsq_varint_get(&hp, end, &x) &&
                                 !dsq_varint_get(&hp, end, &y);
                 j++) {
                if (x == last_host)
                    continue;
                last_host = x;
                put_be32(key + 8, (uint32_t)x);
                status = drop_from_groups(st, key, source, err);
            }
            if (!status) /* recomputed at commit: removed when no series is left */
                status = dsq_store_runroll_update(st, get_be32(key + 4), (uint32_t)run, err);
        }
        if (dsq_varint_get(&p, end, &na))
            break;
        for (uint64_t i = 0; i < na && !status && !dsq_varint_get(&p, end, &x); i++) {
            attr_key(key, (uint32_t)run, (uint32_t)x, source);
            MDB_val ak = {12, key};
            int drc = mdb_del(st->txn, st->attrs, &ak, NULL);
            if (drc && drc != MDB_NOTFOUND)
                status = put_failed(st, drc, err, "dropping rollups");
        }
    } /* a damaged list: what it lists so far is dropped */
    if (!status && (rc = mdb_del(st->txn, st->srcroll, &k, NULL)) && rc != MDB_NOTFOUND)
        status = put_failed(st, rc, err, "dropping rollups");
    free(list);
    return status;
}

int dsq_store_runroll_update(dsq_store *st, uint32_t field, uint32_t run, dsq_error *err)
{
    if (field >= DSQ_SERIES_TIMES_BASE)
        return 0; /* a kind's times: nobody asks for them by run */
    if (grow_arr((void **)&st->due, &st->due_cap, st->ndue, sizeof *st->due))
        return dsq_error_set(err, DSQ_ENOMEM, "writing run rollups");
    st->due[st->ndue++] = (ser_ref){(uint64_t)field << 32 | run, 0, 0, 0, 0};
    return 0;
}

/* The key of (field, run)'s run rollup. */
static void runroll_key(unsigned char pre[8], uint32_t field, uint32_t run)
{
    put_be32(pre, field);
    put_be32(pre + 4, run);
}

/* The prefix of the keys of (field, run)'s series: run first (series_key_pack). */
static void series_prefix(unsigned char pre[8], uint32_t field, uint32_t run)
{
    put_be32(pre, run);
    put_be32(pre + 4, field);
}

/* The merge of (field, run)'s series as txn sees them: their groups in key order,
 * the order every run rollup is made in, so its sums are the same bit for bit
 * whoever makes it. 0 or LMDB's code. */
static int runroll_merge(dsq_store *st, MDB_txn *txn, uint32_t field, uint32_t run,
                         dsq_series_rec *acc)
{
    unsigned char pre[8];
    MDB_cursor *c = NULL;
    memset(acc, 0, sizeof *acc);
    series_prefix(pre, field, run);
    int rc = mdb_cursor_open(txn, st->series, &c);
    if (rc)
        return rc;
    MDB_val k = {8, pre}, v;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != DSQ_SERIES_KEY_LEN || memcmp(k.mv_data, pre, 8) != 0)
            break;
        if (!st->readonly)
            note_read(st, v.mv_size);
        dsq_group_iter it;
        dsq_group_entry e;
        if (group_iter(st, &st->gb_roll, &v, &it)) {
            rc = ENOMEM;
            break;
        }
        while (dsq_group_next(&it, &e) == 1)
            dsq_series_merge(acc, &e.rec, field >= DSQ_SERIES_KIND_BASE);
    }
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Writes acc as the run rollup of (field, run), or removes it when acc is empty,
 * through c, a cursor on the run rollups: settle_runrolls goes in key order, so a
 * put mostly lands on the page the last one left the cursor on, which LMDB takes
 * without searching from the root (the 1000-run archive: 162 -> 112 M instructions
 * for 50,000 rollups). */
static int runroll_write(dsq_store *st, MDB_cursor *c, uint32_t field, uint32_t run,
                         const dsq_series_rec *acc, dsq_error *err)
{
    unsigned char pre[8], val[DSQ_SUMMARY_MAX];
    runroll_key(pre, field, run);
    MDB_val rk = {8, pre}, rv = {dsq_summary_put(val, acc, 0), val}, found;
    int rc;
    if (acc->count)
        rc = mdb_cursor_put(c, &rk, &rv, 0);
    else if ((rc = mdb_cursor_get(c, &rk, &found, MDB_SET)) == 0)
        rc = mdb_cursor_del(c, 0);
    return rc && rc != MDB_NOTFOUND ? put_failed(st, rc, err, "writing run rollups") : 0;
}

/* Recomputes the run rollup of (field, run) from that run's series in the open
 * write; removes it when no series is left. */
static int runroll_recompute(dsq_store *st, MDB_cursor *c, uint32_t field, uint32_t run,
                             dsq_error *err)
{
    dsq_series_rec acc;
    int rc = runroll_merge(st, st->txn, field, run, &acc);
    if (rc)
        return put_failed(st, rc, err, "writing run rollups");
    return runroll_write(st, c, field, run, &acc, err);
}

/* Run rollups are recomputed once their run goes quiet, not at every commit that
 * touches the run: a run of thousands of files, written over hundreds of commits,
 * would otherwise have all its series read again at each (quadratic). A commit
 * marks the run rollups it touches stale (an empty value: readers merge the run's
 * series instead, visit_series) and lists them in pend; the next commit that does
 * not touch one recomputes it, and dsq_store_settle recomputes the rest. While any
 * is marked, meta holds STALE_KEY, so a writer killed before settling leaves the
 * next writer a reason to look for them (load_stale). Fills pend_next, the list
 * once this commit succeeds. A run new in this commit has its rollups made by
 * put_series (st->fresh) and written at once, final until a later commit adds to
 * the run: on a 1000-run archive that saved reading 200,000 group records back
 * and two puts of each of 50,000 rollups. */
static int settle_runrolls(dsq_store *st, const ser_ref *due, size_t ndue, dsq_error *err)
{
    while (st->pend_next_cap < ndue)
        if (grow_arr((void **)&st->pend_next, &st->pend_next_cap, st->pend_next_cap, sizeof *st->pend_next))
            return dsq_error_set(err, DSQ_ENOMEM, "writing run rollups");
    size_t i = 0, j = 0, n = 0, f = 0;
    MDB_cursor *c = NULL;
    int status = 0, rc = 0;
    if ((st->npend || ndue) && (rc = mdb_cursor_open(st->txn, st->runroll, &c)) != 0)
        return put_failed(st, rc, err, "writing run rollups");
    while (!status && (i < st->npend || j < ndue)) {
        if (j == ndue || (i < st->npend && st->pend[i] < due[j].a)) { /* gone quiet */
            status = runroll_recompute(st, c, (uint32_t)(st->pend[i] >> 32), (uint32_t)st->pend[i], err);
            i++;
            continue;
        }
        while (f < st->nfresh && st->fresh[f].a < due[j].a)
            f++;
        if (i < st->npend && st->pend[i] == due[j].a) {
            i++; /* marked already */
        } else if (f < st->nfresh && st->fresh[f].a == due[j].a) {
            /* a run new in this write: its rollup as put_series made it, final
             * unless a later write adds to the run (which marks it stale then) */
            status = runroll_write(st, c, (uint32_t)(due[j].a >> 32), (uint32_t)due[j].a,
                                   &st->fresh[f].rec, err);
            j++;
            continue;
        } else {
            unsigned char pre[8];
            runroll_key(pre, (uint32_t)(due[j].a >> 32), (uint32_t)due[j].a);
            MDB_val rk = {8, pre}, rv = {0, pre};
            if ((rc = mdb_cursor_put(c, &rk, &rv, 0)) != 0)
                status = put_failed(st, rc, err, "writing run rollups");
        }
        st->pend_next[n++] = due[j++].a;
    }
    if (c)
        mdb_cursor_close(c);
    MDB_val mk = {sizeof STALE_KEY - 1, STALE_KEY}, mv = {1, "1"};
    rc = 0;
    if (!status && n && !st->stale_meta)
        rc = mdb_put(st->txn, st->meta, &mk, &mv, 0);
    else if (!status && !n && st->stale_meta)
        rc = mdb_del(st->txn, st->meta, &mk, NULL);
    if (rc && rc != MDB_NOTFOUND)
        status = put_failed(st, rc, err, "writing run rollups");
    st->npend_next = n;
    return status;
}

/* Writers: the run rollups a writer killed before settling left marked stale. */
static int load_stale(dsq_store *st, MDB_txn *txn, dsq_error *err)
{
    MDB_val mk = {sizeof STALE_KEY - 1, STALE_KEY}, k, v;
    MDB_cursor *c = NULL;
    int rc = mdb_get(txn, st->meta, &mk, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc || (rc = mdb_cursor_open(txn, st->runroll, &c)))
        return lmdb_error(err, rc, "reading run rollups");
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8 || v.mv_size != 0)
            continue;
        if (grow_arr((void **)&st->pend, &st->pend_cap, st->npend, sizeof *st->pend)) {
            mdb_cursor_close(c);
            return dsq_error_set(err, DSQ_ENOMEM, "reading run rollups");
        }
        st->pend[st->npend++] = get_be64(k.mv_data);
    }
    mdb_cursor_close(c);
    st->stale_meta = 1;
    return rc == MDB_NOTFOUND ? 0 : lmdb_error(err, rc, "reading run rollups");
}

int dsq_store_settle(dsq_store *st, dsq_error *err)
{
    if (st->readonly || (!st->npend && !st->stale_meta))
        return 0;
    if (st->txn)
        return dsq_error_set(err, DSQ_EUSAGE, "settling run rollups inside a write");
    int status = 0;
    for (int attempt = 0; attempt < 10; attempt++) { /* DSQ_ELIMIT: map grown, redo */
        if ((status = dsq_store_begin(st, err)) || (status = dsq_store_commit(st, err)) != DSQ_ELIMIT)
            break;
    }
    return status;
}

static int put_held_blocks(dsq_store *st, dsq_error *err);

int dsq_store_source_drop(dsq_store *st, const char *path, dsq_error *err)
{
    dsq_source_rec rec;
    int found = dsq_store_source_find(st, path, &rec, err);
    if (found <= 0)
        return found;
    /* (the write's held blocks put first, in case some are of this source) */
    if (st->blk_len && (found = put_held_blocks(st, err)) != 0)
        return found;
    MDB_cursor *c = NULL;
    unsigned char pre[4];
    put_be32(pre, rec.id);
    int rc, status = 0;
    MDB_val k, v;
    MDB_dbi tabs[2] = {st->srcblocks, st->members};
    for (int t = 0; t < 2 && !status; t++) {
        if ((rc = mdb_cursor_open(st->txn, tabs[t], &c)))
            return put_failed(st, rc, err, "dropping source");
        for (;;) { /* re-seek after each delete: simplest correct cursor use */
            k.mv_size = 4;
            k.mv_data = pre;
            rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
            if (rc || k.mv_size < 4 || memcmp(k.mv_data, pre, 4) != 0)
                break;
            if (t == 0) {
                MDB_val bk = v;
                int drc = mdb_del(st->txn, st->events, &bk, NULL);
                if (drc && drc != MDB_NOTFOUND) {
                    status = put_failed(st, drc, err, "dropping events");
                    break;
                }
            }
            if ((rc = mdb_cursor_del(c, 0))) {
                status = put_failed(st, rc, err, "dropping source");
                break;
            }
        }
        mdb_cursor_close(c);
    }
    if (status || (status = drop_rollups(st, rec.id, err)))
        return status;
    k.mv_size = strlen(path);
    k.mv_data = (void *)path;
    rc = mdb_del(st->txn, st->sources, &k, NULL);
    return (rc && rc != MDB_NOTFOUND) ? put_failed(st, rc, err, "dropping source") : 0;
}

int dsq_store_source_new_id(dsq_store *st, uint32_t *id, dsq_error *err)
{
    MDB_val k = {11, "next_source"}, v;
    uint32_t next = 1;
    int rc = mdb_get(st->txn, st->meta, &k, &v);
    if (rc == 0 && v.mv_size == 4)
        next = get_be32(v.mv_data);
    else if (rc && rc != MDB_NOTFOUND)
        return lmdb_error(err, rc, "allocating source id");
    unsigned char b[4];
    put_be32(b, next + 1);
    v.mv_size = 4;
    v.mv_data = b;
    if ((rc = mdb_put(st->txn, st->meta, &k, &v, 0)))
        return put_failed(st, rc, err, "allocating source id");
    *id = next;
    return 0;
}

/* Event blocks wait in st->blk until the write's commit puts them (put_held_blocks),
 * after every part of the write (dsq_store_parts): blocks name their values by
 * event, and a reader between two parts would find values missing for a block's
 * events (evfill.c calls that damage). A write holds a few MB of them at most: a
 * checkpoint of a big job's log (64 MB of text) about 600 blocks of 2 kB. */
#define BLK_HEAD (4 + DSQ_BLOCK_KEY_LEN + 8)
static int hold_block(dsq_store *st, const unsigned char *key, const unsigned char *skey,
                      const void *data, size_t n, dsq_error *err)
{
    size_t len = pack(st, data, n, &pack_blocks);
    size_t need = st->blk_len + BLK_HEAD + ((len + 7) & ~(size_t)7);
    if (!len || len > UINT32_MAX || reserve(&st->blk, &st->blk_cap, need))
        return dsq_error_set(err, DSQ_ENOMEM, "writing events: out of memory");
    unsigned char *p = st->blk + st->blk_len;
    uint32_t l = (uint32_t)len;
    memcpy(p, &l, 4);
    memcpy(p + 4, key, DSQ_BLOCK_KEY_LEN);
    memcpy(p + 4 + DSQ_BLOCK_KEY_LEN, skey, 8);
    memcpy(p + BLK_HEAD, st->packed, len);
    st->blk_len = need;
    return 0;
}

/* A held block's length, and the bytes its entry takes (to the next one). */
static size_t held_entry(const unsigned char *p, uint32_t *len)
{
    memcpy(len, p, 4);
    return BLK_HEAD + (((size_t)*len + 7) & ~(size_t)7);
}

/* Key order; a key held twice in the order held (the last put is the one kept). */
static int held_before(const void *x, const void *y)
{
    const unsigned char *a = *(const unsigned char *const *)x, *b = *(const unsigned char *const *)y;
    int d = memcmp(a + 4, b + 4, DSQ_BLOCK_KEY_LEN);
    return d ? d : (a > b) - (a < b);
}

/* Puts the held blocks: those before the table's last key as held, the others (a
 * new run's, whose hosts' and ranks' files finish in any order) in key order,
 * appended, which fills their pages (put as held they split pages in the middle);
 * then their srcblocks entries, in the order held (by source). */
static int put_held_blocks(dsq_store *st, dsq_error *err)
{
    MDB_cursor *c = NULL;
    MDB_val tail = {0, NULL}, tv;
    unsigned char last[DSQ_BLOCK_KEY_LEN];
    int rc = mdb_cursor_open(st->txn, st->events, &c);
    if (!rc && (rc = mdb_cursor_get(c, &tail, &tv, MDB_LAST)) == MDB_NOTFOUND)
        rc = 0, tail.mv_size = 0;
    int appends = !rc && (tail.mv_size == 0 || tail.mv_size == DSQ_BLOCK_KEY_LEN);
    if (appends && tail.mv_size)
        memcpy(last, tail.mv_data, DSQ_BLOCK_KEY_LEN);
    size_t n = 0; /* blocks after the end, in st->blk_by_key */
    uint32_t len;
    for (size_t at = 0, step; at < st->blk_len && !rc; at += step) {
        const unsigned char *p = st->blk + at;
        step = held_entry(p, &len);
        if (!appends || (tail.mv_size && memcmp(p + 4, last, DSQ_BLOCK_KEY_LEN) <= 0)) {
            MDB_val k = {DSQ_BLOCK_KEY_LEN, (void *)(p + 4)}, v = {len, (void *)(p + BLK_HEAD)};
            note_put(st);
            rc = mdb_cursor_put(c, &k, &v, 0);
        } else if (grow_arr((void **)&st->blk_by_key, &st->blk_by_key_cap, n, sizeof *st->blk_by_key)) {
            mdb_cursor_close(c);
            return dsq_error_set(err, DSQ_ENOMEM, "writing events: out of memory");
        } else {
            st->blk_by_key[n++] = p;
        }
    }
    if (!rc && n > 1)
        qsort(st->blk_by_key, n, sizeof *st->blk_by_key, held_before);
    for (size_t i = 0; i < n && !rc; i++) {
        const unsigned char *p = st->blk_by_key[i];
        held_entry(p, &len);
        MDB_val k = {DSQ_BLOCK_KEY_LEN, (void *)(p + 4)}, v = {len, (void *)(p + BLK_HEAD)};
        int again = i && memcmp(p + 4, st->blk_by_key[i - 1] + 4, DSQ_BLOCK_KEY_LEN) == 0;
        note_put(st);
        rc = mdb_cursor_put(c, &k, &v, again ? 0 : MDB_APPEND);
    }
    if (c)
        mdb_cursor_close(c);
    for (size_t at = 0; at < st->blk_len && !rc; at += held_entry(st->blk + at, &len)) {
        unsigned char *p = st->blk + at;
        MDB_val sk = {8, p + 4 + DSQ_BLOCK_KEY_LEN}, sv = {DSQ_BLOCK_KEY_LEN, p + 4};
        rc = mdb_put(st->txn, st->srcblocks, &sk, &sv, 0);
    }
    if (rc)
        return put_failed(st, rc, err, "writing events");
    st->blk_len = 0;
    return 0;
}

/* Puts the held attributes in key order through one cursor, the last put of a key
 * kept: a put mostly lands on the page the one before left the cursor on (a new
 * run's at the table's end), which LMDB takes without searching from the root,
 * where a put as the rollups made them went from the root to a page anywhere in
 * the table (the 1000-run archive: 59,000 puts of ~2,500 instructions each). */
static int put_held_attrs(dsq_store *st, dsq_error *err)
{
    size_t n = st->nhattr;
    if (!n)
        return 0;
    /* in key order, a key put twice in the order put (sort_ser: `at` breaks ties) */
    const ser_ref *r = sort_ser(st->hattr_key, st->hattr_tmp, n);
    MDB_cursor *c = NULL;
    int rc = mdb_cursor_open(st->txn, st->attrs, &c);
    for (size_t i = 0; i < n && !rc; i++) {
        if (i + 1 < n && r[i + 1].a == r[i].a && r[i + 1].b == r[i].b)
            continue; /* put again later */
        unsigned char key[12];
        attr_key(key, (uint32_t)(r[i].a >> 32), (uint32_t)r[i].a, (uint32_t)(r[i].b >> 32));
        MDB_val k = {sizeof key, key}, v = {sizeof *st->hattr, &st->hattr[r[i].at]};
        rc = mdb_cursor_put(c, &k, &v, 0);
    }
    if (c)
        mdb_cursor_close(c);
    if (rc)
        return put_failed(st, rc, err, "writing attributes");
    st->nhattr = 0;
    return 0;
}

int dsq_store_block_put(dsq_store *st, const dsq_block_key *bk, const dsq_block *b, dsq_error *err)
{
    unsigned char key[DSQ_BLOCK_KEY_LEN], skey[8];
    const unsigned char *data;
    size_t n;
    int rc = st->cols ? 0 : dsq_block_cols_new(&st->cols);
    if (!rc)
        rc = dsq_block_encode(st->cols, b, &data, &n); /* in columns (event.h) */
    if (rc)
        return dsq_error_set(err, rc, rc == DSQ_ENOMEM ? "writing events: out of memory"
                                                       : "writing events: a damaged block");
    dsq_block_key_pack(bk, key);
    put_be32(skey, bk->source);
    put_be32(skey + 4, bk->seq);
    return hold_block(st, key, skey, data, n, err);
}

int dsq_store_member_put(dsq_store *st, uint32_t source, uint32_t idx, const dsq_member_rec *rec,
                         const char *name, dsq_error *err)
{
    unsigned char key[8];
    put_be32(key, source);
    put_be32(key + 4, idx);
    size_t n = strlen(name);
    MDB_val k = {8, key}, v = {sizeof *rec + n, NULL};
    int rc = mdb_put(st->txn, st->members, &k, &v, MDB_RESERVE);
    if (rc)
        return put_failed(st, rc, err, "writing member");
    dsq_member_rec r = *rec;
    r.name_len = (uint32_t)n;
    memcpy(v.mv_data, &r, sizeof r);
    memcpy((char *)v.mv_data + sizeof r, name, n);
    return 0;
}

int dsq_store_source_put(dsq_store *st, const char *path, const dsq_source_rec *rec,
                         dsq_error *err)
{
    unsigned char val[SOURCE_VAL_MAX];
    MDB_val k = {strlen(path), (void *)path}, v = {source_val_put(val, rec), val};
    int rc = mdb_put(st->txn, st->sources, &k, &v, 0);
    return rc ? put_failed(st, rc, err, "writing source") : 0;
}

/* Run first: a run's series (and chunks) are one range of keys, so a new run's
 * are appended to the table, its pages filled (a field first put every new run's
 * in the middle of each field's: pages two-thirds full, 40 % of a 1000-run
 * archive's fresh index). */
static void series_key_pack(const dsq_series_key *k, unsigned char *out)
{
    put_be32(out, k->run);
    put_be32(out + 4, k->field);
    put_be32(out + 8, k->host);
    put_be32(out + 12, (uint32_t)k->rank + 1u);
    put_be32(out + 16, k->source);
}

/* --- srcroll: the rollup keys of a source, for dropping it ---------------------
 * A source's series are the fields it has times the hosts and ranks it has, nearly
 * (counting series make most fields appear on every host and rank), all of one run:
 * so its record lists, per run, the fields, the (host, rank) pairs and the
 * attribute names, each once, as varints (a few hundred bytes instead of 17 per
 * series). Dropping tries every field on every pair. */

/* Empties the notes when they are of another source than `source` (a write
 * that ended without the last record of its source: a full map). */
static void srcroll_of(dsq_store *st, uint32_t source)
{
    if (st->sr_source != source)
        st->sr_nf = st->sr_na = st->sr_nh = 0;
    st->sr_source = source;
}

/* Notes an attribute (run, name) of the source being written. */
static int srcroll_attr(dsq_store *st, uint32_t run, uint32_t name, uint32_t source,
                        dsq_error *err)
{
    srcroll_of(st, source);
    if (grow_arr((void **)&st->sr_a, &st->sr_acap, st->sr_na, sizeof *st->sr_a))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    st->sr_a[st->sr_na++] = (ser_ref){(uint64_t)run << 32 | name, 0, 0, 0, 0};
    return 0;
}

static ptrdiff_t sort_unique(dsq_store *st, ser_ref *a, size_t n);

/* Notes a series of the source being written: its field and its (host, rank). */
static int srcroll_series(dsq_store *st, const dsq_series_key *k, dsq_error *err)
{
    srcroll_of(st, k->source);
    if (grow_arr((void **)&st->sr_f, &st->sr_fcap, st->sr_nf, sizeof *st->sr_f) ||
        grow_arr((void **)&st->sr_h, &st->sr_hcap, st->sr_nh, sizeof *st->sr_h))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    /* a source's series cycle through its fields (in the order first seen): most are
     * found in sr_fslot and not noted again (sort_unique drops the rest) */
    uint64_t fr = (uint64_t)k->run << 32 | k->field;
    uint32_t *slot = &st->sr_fslot[(fr * 0x9e3779b97f4a7c15u) >> (64 - SR_FSLOT_BITS)];
    if (*slot >= st->sr_nf || st->sr_f[*slot].a != fr) {
        *slot = (uint32_t)st->sr_nf;
        st->sr_f[st->sr_nf++] = (ser_ref){fr, 0, 0, 0, 0};
    }
    /* consecutive series repeat a (host, rank): only changes are kept; a source of
     * many series puts them by field (rollup.c, ORDER_MIN), each field's through
     * every (host, rank): those are made unique every so often (a launcher log of
     * 8,192 ranks: 9,216 of them, noted 124,000 times) */
    uint64_t hr = (uint64_t)k->host << 32 | ((uint32_t)k->rank + 1u);
    if (!st->sr_nh || st->sr_h[st->sr_nh - 1].a != k->run || st->sr_h[st->sr_nh - 1].b != hr)
        st->sr_h[st->sr_nh++] = (ser_ref){k->run, hr, 0, 0, 0};
    if (st->sr_nh >= SR_HMAX && st->sr_nh >= st->sr_hmax) {
        ptrdiff_t u = sort_unique(st, st->sr_h, st->sr_nh);
        if (u < 0)
            return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
        st->sr_nh = (size_t)u;
        st->sr_hmax = 2 * st->sr_nh + SR_HMAX;
    }
    return 0;
}

/* sort_unique sorts this many entries or fewer by insertion: a source notes some 40
 * fields and a few (host, rank) pairs, whose radix passes (their counts cleared and
 * summed each time) cost ~11,000 instructions a call on the 1000-run archive
 * (insertion up to 48: archive 13.49 -> 13.47 G instructions, the same tables). */
#define UNIQUE_INSERTION 48

/* Sorts a[0..n) by (a, b) and keeps each once (the other fields are 0); returns
 * how many are left, in a, or -1 when out of memory (st->ser_tmp: the room). */
static ptrdiff_t sort_unique(dsq_store *st, ser_ref *a, size_t n)
{
    if (n < 2)
        return (ptrdiff_t)n;
    while (st->ser_tmp_cap < n)
        if (grow_arr((void **)&st->ser_tmp, &st->ser_tmp_cap, st->ser_tmp_cap, sizeof *st->ser_tmp))
            return -1;
    const ser_ref *r = a;
    if (n <= UNIQUE_INSERTION) /* (a, b) alone, in place: what sort_series gives them */
        for (size_t i = 1; i < n; i++) {
            ser_ref x = a[i];
            size_t j = i;
            for (; j > 0 && (a[j - 1].a > x.a || (a[j - 1].a == x.a && a[j - 1].b > x.b)); j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
    else
        r = sort_series(st, a, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || a[k - 1].a != r[i].a || a[k - 1].b != r[i].b)
            a[k++] = r[i];
    return (ptrdiff_t)k;
}

/* dsq_store_rollups_put, and with `keep` dsq_store_rollups_checkpoint: the keys
 * noted stay noted, each once, for the source's next record. */
static int rollups_write(dsq_store *st, uint32_t source, int keep, dsq_error *err)
{
    srcroll_of(st, source);
    unsigned char key[4];
    put_be32(key, source);
    MDB_val k = {4, key};
    ptrdiff_t snf = sort_unique(st, st->sr_f, st->sr_nf), sna = sort_unique(st, st->sr_a, st->sr_na),
              snh = sort_unique(st, st->sr_h, st->sr_nh);
    st->sr_nf = st->sr_na = st->sr_nh = 0;
    if (snf < 0 || sna < 0 || snh < 0)
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    if (keep) {
        st->sr_nf = (size_t)snf, st->sr_na = (size_t)sna, st->sr_nh = (size_t)snh;
        memset(st->sr_fslot, 0xFF, sizeof st->sr_fslot); /* places moved: none noted */
    }
    size_t nf = (size_t)snf, na = (size_t)sna, nh = (size_t)snh;
    for (size_t i = 0; i < nf; i++) { /* the run rollups of the source's fields */
        int rc = dsq_store_runroll_update(st, (uint32_t)st->sr_f[i].a, (uint32_t)(st->sr_f[i].a >> 32), err);
        if (rc)
            return rc;
    }
    if (!nf && !na) {
        int rc = mdb_del(st->txn, st->srcroll, &k, NULL);
        return rc && rc != MDB_NOTFOUND ? put_failed(st, rc, err, "writing rollups") : 0;
    }
    if (reserve(&st->sr_bytes, &st->sr_bytes_cap, (nf + na + 2 * nh + 4) * 2 * DSQ_VARINT_MAX))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    unsigned char *p = st->sr_bytes;
    size_t f = 0, a = 0, h = 0;
    while (f < nf || a < na) { /* one group per run, runs ascending */
        uint32_t run = f < nf ? (uint32_t)(st->sr_f[f].a >> 32) : UINT32_MAX;
        if (a < na && (uint32_t)(st->sr_a[a].a >> 32) < run)
            run = (uint32_t)(st->sr_a[a].a >> 32);
        size_t f1 = f, a1 = a, h1;
        while (f1 < nf && (uint32_t)(st->sr_f[f1].a >> 32) == run)
            f1++;
        while (a1 < na && (uint32_t)(st->sr_a[a1].a >> 32) == run)
            a1++;
        while (h < nh && st->sr_h[h].a < run)
            h++;
        for (h1 = h; h1 < nh && st->sr_h[h1].a == run;)
            h1++;
        p = dsq_varint_put(p, run);
        p = dsq_varint_put(p, f1 - f);
        for (; f < f1; f++)
            p = dsq_varint_put(p, (uint32_t)st->sr_f[f].a);
        p = dsq_varint_put(p, h1 - h);
        for (; h < h1; h++) {
            p = dsq_varint_put(p, (uint32_t)(st->sr_h[h].b >> 32));
            p = dsq_varint_put(p, (uint32_t)st->sr_h[h].b);
        }
        p = dsq_varint_put(p, a1 - a);
        for (; a < a1; a++)
            p = dsq_varint_put(p, (uint32_t)st->sr_a[a].a);
    }
    return put_packed(st, st->srcroll, &k, st->sr_bytes, (size_t)(p - st->sr_bytes), &pack_srcroll,
                      err);
}

int dsq_store_rollups_put(dsq_store *st, uint32_t source, dsq_error *err)
{
    return rollups_write(st, source, 0, err);
}

int dsq_store_rollups_checkpoint(dsq_store *st, uint32_t source, dsq_error *err)
{
    return rollups_write(st, source, 1, err);
}

/* A series' own pairs in its group entry (schema 10): the chunk as it is or, when
 * shorter, ZRUN and then the chunk with every run of zero bytes written as a 0 and
 * the run's length - 1 (one byte: runs of up to 256). The varints of unchanged values
 * and steps are zeros: 59 % of the own pairs' bytes of the 10,000-run bench archive,
 * which this halves. A chunk never starts with ZRUN (a segment header's high nibble
 * is its k, at most 15, and its low one E, at most 8). */
#define ZRUN 0xFF
#define ZRUN_MAX ((size_t)1 << 20) /* unpacked own pairs are far smaller (rollup.c) */

/* p[0..n) packed into out (room for 1 + 2n); returns the packed length. */
static size_t zrun_pack(unsigned char *out, const unsigned char *p, size_t n)
{
    unsigned char *o = out;
    *o++ = ZRUN;
    for (size_t i = 0; i < n;) {
        if (p[i]) {
            *o++ = p[i++];
            continue;
        }
        size_t j = i + 1;
        while (j < n && !p[j] && j - i < 256)
            j++;
        *o++ = 0;
        *o++ = (unsigned char)(j - i - 1);
        i = j;
    }
    return (size_t)(o - out);
}

/* Own pairs as stored, p[0..n), as chunk bytes: p itself, or unpacked into *buf
 * (grown; *cap its room). 0, DSQ_ENOMEM, or -1 when they are damaged. */
static int zrun_unpack(const unsigned char *p, size_t n, unsigned char **buf, size_t *cap,
                       const unsigned char **out, size_t *out_n)
{
    if (!n || p[0] != ZRUN) {
        *out = p;
        *out_n = n;
        return 0;
    }
    size_t len = 0;
    for (size_t i = 1; i < n; i++) { /* the unpacked length first: one reservation */
        if (p[i])
            len++;
        else if (++i < n)
            len += (size_t)p[i] + 1;
        else
            return -1;
    }
    if (len > ZRUN_MAX)
        return -1;
    if (reserve(buf, cap, len ? len : 1))
        return DSQ_ENOMEM;
    unsigned char *o = *buf;
    for (size_t i = 1; i < n; i++) {
        if (p[i]) {
            *o++ = p[i];
        } else {
            size_t r = (size_t)p[++i] + 1;
            memset(o, 0, r);
            o += r;
        }
    }
    *out = *buf;
    *out_n = len;
    return 0;
}

int dsq_store_series_put(dsq_store *st, const dsq_series_key *sk, const dsq_series_rec *rec,
                         const void *pairs, size_t n, dsq_error *err)
{
    if (n) { /* packed when that is shorter (zrun_pack) */
        if (reserve(&st->zrun, &st->zrun_cap, 1 + 2 * n))
            return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
        size_t z = zrun_pack(st->zrun, pairs, n);
        if (z < n) {
            pairs = st->zrun;
            n = z;
        }
    }
    size_t at = st->ser_len;
    if (grow_arr((void **)&st->ser_at, &st->ser_at_cap, st->ser_n, sizeof *st->ser_at) ||
        grow_arr((void **)&st->ser_tmp, &st->ser_tmp_cap, st->ser_n, sizeof *st->ser_tmp))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    if (n > UINT32_MAX - DSQ_SUMMARY_MAX - DSQ_GROUP_HEAD_MAX ||
        reserve(&st->ser, &st->ser_cap, at + DSQ_SERIES_KEY_LEN + 4 + n + sizeof *rec))
        return dsq_error_set(err, DSQ_ENOMEM, "writing rollups: out of memory");
    unsigned char *e = st->ser + at; /* key, pairs' length, pairs, record */
    series_key_pack(sk, e);
    uint32_t len = (uint32_t)n;
    memcpy(e + DSQ_SERIES_KEY_LEN, &len, 4);
    if (n)
        memcpy(e + DSQ_SERIES_KEY_LEN + 4, pairs, n);
    memcpy(e + DSQ_SERIES_KEY_LEN + 4 + n, rec, sizeof *rec);
    st->ser_len = at + DSQ_SERIES_KEY_LEN + 4 + n + sizeof *rec;
    st->ser_at[st->ser_n++] = (ser_ref){(uint64_t)sk->run << 32 | sk->field,
                                        (uint64_t)sk->host << 32 | ((uint32_t)sk->rank + 1u),
                                        sk->source, 0, at};
    int rc = srcroll_series(st, sk, err);
    if (st->ser_n > 1 && st->ser_at[0].source != sk->source)
        st->ser_mixed = 1;
    if (!rc && st->ser_len >= (st->ser_mixed ? st->ser_flush : st->ser_flush_one)) {
        /* (SER_FLUSH_BYTES) */
        st->parts = 0;
        st->ser_flushes++;
        rc = flush_series(st, err);
    }
    return rc;
}

static int write_error(dsq_store *st, dsq_error *err, int rc, const char *what);

/* mdb_txn_commit of the open write, which is gone either way (st->txn NULL). When
 * the map filled it is grown and DSQ_ELIMIT returned: the caller redoes the write. */
static int commit_txn(dsq_store *st, dsq_error *err)
{
    int rc = mdb_txn_commit(st->txn);
    st->txn = NULL;
    if (rc == MDB_MAP_FULL) {
        MDB_envinfo info;
        mdb_env_info(st->env, &info);
        mdb_env_set_mapsize(st->env, info.me_mapsize * 2);
        return dsq_error_set(err, DSQ_ELIMIT, "index map grown; redo the write");
    }
    return rc ? write_error(st, err, rc, "committing") : 0;
}

/* Commits the open write as it is and opens the next (dsq_store_parts). Failing,
 * the write is gone: the caller aborts, or redoes it after DSQ_ELIMIT. */
static int commit_part(dsq_store *st, dsq_error *err)
{
    st->puts_since_part = 0;
    int rc = commit_txn(st, err);
    if (rc)
        return rc;
    st->parts_committed++;
    rc = mdb_txn_begin(st->env, NULL, 0, &st->txn);
    return rc ? lmdb_error(err, rc, "starting write") : 0;
}

void dsq_store_parts(dsq_store *st, int on)
{
    st->parts = on;
    st->puts_since_part = 0;
}

uint64_t dsq_store_parts_committed(const dsq_store *st) { return st->parts_committed; }

uint64_t dsq_store_series_flushes(const dsq_store *st) { return st->ser_flushes; }

int dsq_store_chunk_put(dsq_store *st, const dsq_series_key *sk, uint32_t seq, const void *data,
                        size_t n, dsq_error *err)
{
    unsigned char key[DSQ_SERIES_KEY_LEN + 4];
    series_key_pack(sk, key);
    put_be32(key + DSQ_SERIES_KEY_LEN, seq);
    MDB_val k = {sizeof key, key};
    int rc = put_packed(st, st->chunks, &k, data, n, &pack_chunks, err);
    if (!rc && st->parts && ++st->puts_since_part >= st->part_puts)
        rc = commit_part(st, err);
    return rc;
}

int dsq_store_attr_put(dsq_store *st, uint32_t run, uint32_t name, uint32_t source,
                       const dsq_attr_rec *rec, dsq_error *err)
{
    size_t n = st->nhattr;
    if (grow_arr((void **)&st->hattr, &st->hattr_cap, n, sizeof *st->hattr) ||
        grow_arr((void **)&st->hattr_key, &st->hattr_key_cap, n, sizeof *st->hattr_key) ||
        grow_arr((void **)&st->hattr_tmp, &st->hattr_tmp_cap, n, sizeof *st->hattr_tmp))
        return dsq_error_set(err, DSQ_ENOMEM, "writing attributes: out of memory");
    st->hattr[n] = *rec;
    st->hattr_key[n] = (ser_ref){(uint64_t)run << 32 | name, (uint64_t)source << 32, 0, 0, n};
    st->nhattr = n + 1;
    return srcroll_attr(st, run, name, source, err);
}

static int save_dict(dsq_store *st, dsq_error *err)
{
    uint32_t n = dsq_dict_count(st->dict);
    for (uint32_t id = st->dict_saved + 1; id <= n; id++) {
        unsigned char key[4];
        size_t len;
        const char *s = dsq_dict_str(st->dict, id, &len);
        unsigned char rev[12];
        put_be32(key, id);
        put_be64(rev, dsq_hash64(s, len, 0));
        put_be32(rev + 8, id);
        MDB_val k = {4, key}, v = {len + 1, (void *)s}, rk = {12, rev}, rv = {0, ""};
        int rc = mdb_put(st->txn, st->dict_db, &k, &v, MDB_APPEND); /* with its NUL */
        if (!rc)
            rc = mdb_put(st->txn, st->dictrev, &rk, &rv, 0);
        if (rc)
            return put_failed(st, rc, err, "writing dictionary");
    }
    return 0;
}

/* LMDB keeps every page a write dirtied (a copy in the heap) for later writes and
 * gives none back until the environment closes, so the process kept the pages of
 * its biggest write so far (a big job's checkpoint puts a record for each of its
 * series, each on its own page: 1,500-14,700 chunk records a write in a 2 GB log,
 * the heap 154 -> 211 MB over the run). After a write of reopen_puts puts or more the
 * environment is closed and opened again (the writer lock, held apart, stays; so
 * no compaction can swap the file meanwhile) and the heap's free pages are given
 * back when the process is past TRIM_RESIDENT: peak RSS of that log 274 -> 243 MB, 1 GB
 * 233 -> 213 MB. Failing, st->env stays NULL and every later write or read says so. */
static int reopen_env(dsq_store *st)
{
    MDB_envinfo info;
    mdb_env_info(st->env, &info);
    mdb_env_close(st->env);
    st->env = NULL;
    MDB_txn *txn = NULL;
    dsq_error e;
    int rc;
    if ((rc = mdb_env_create(&st->env)) || (rc = mdb_env_set_maxdbs(st->env, 16)) ||
        (rc = mdb_env_set_mapsize(st->env, info.me_mapsize)) ||
        (rc = mdb_env_open(st->env, st->dir, MDB_NOTLS | MDB_NOSYNC, 0644)) ||
        (rc = mdb_txn_begin(st->env, NULL, 0, &txn)))
        goto cleanup;
    if (open_dbis(st, txn, &e)) {
        rc = MDB_INVALID;
        goto cleanup;
    }
    rc = mdb_txn_commit(txn); /* (which frees txn either way) */
    txn = NULL;
cleanup:
    if (rc) {
        if (txn)
            mdb_txn_abort(txn);
        if (st->env)
            mdb_env_close(st->env);
        st->env = NULL;
        return rc;
    }
    st->reopens++;
    /* the pages LMDB let go of are free in the heap, for later allocations; given back
     * to the system only past TRIM_RESIDENT: a trim walks the whole heap (~25 ms at
     * 200 MB; every reopen of a 1 GB big job: 3.3 -> 3.5 s) */
    uint64_t all, files;
    if (resident_bytes(st, &all, &files) &&
        all > (dsq_hugepages_in_use() ? TRIM_RESIDENT_HUGE : TRIM_RESIDENT))
        malloc_trim(0);
    return 0;
}

/* Aborts the write and doubles the map after MDB_MAP_FULL. */
static int grow_map(dsq_store *st, dsq_error *err)
{
    MDB_envinfo info;
    mdb_txn_abort(st->txn);
    st->txn = NULL;
    st->map_full = 0;
    st->blk_len = 0;
    st->nhattr = 0;
    st->parts = 0;
    st->ndue = 0;
    mdb_env_info(st->env, &info);
    int rc = mdb_env_set_mapsize(st->env, info.me_mapsize * 2);
    if (rc)
        return lmdb_error(err, rc, "growing the index map");
    return dsq_error_set(err, DSQ_ELIMIT, "index map grown to %zu MiB; redo the write",
                         info.me_mapsize * 2 >> 20);
}

/* A write that failed: a full disk (LMDB reports a short write as EIO) is named as
 * such, since that is what the user can do something about. */
static int write_error(dsq_store *st, dsq_error *err, int rc, const char *what)
{
    struct statvfs fs;
    if ((rc == ENOSPC || rc == EIO || rc == EDQUOT) && statvfs(st->dir, &fs) == 0 &&
        (uint64_t)fs.f_bavail * fs.f_frsize < ((uint64_t)16 << 20))
        return dsq_error_set(err, DSQ_EIO,
                             "%s: the disk holding %s is full (%llu kB free): what was committed "
                             "before stays in the index; free some space and run dsq index again "
                             "to go on from there",
                             what, st->dir,
                             (unsigned long long)((uint64_t)fs.f_bavail * fs.f_frsize / 1024));
    return dsq_error_set(err, DSQ_EIO, "%s %s: %s", what, st->dir, mdb_strerror(rc));
}

int dsq_store_commit(dsq_store *st, dsq_error *err)
{
    if (!st->txn)
        return dsq_error_set(err, DSQ_EUSAGE, "commit without a write");
    if (st->map_full)
        return grow_map(st, err);
    /* each run rollup once, however many sources asked for it (sorted first: the
     * series' sort may leave them in st->ser_tmp, which this sort uses) */
    ptrdiff_t ndue = sort_unique(st, st->due, st->ndue);
    st->nfresh = 0;
    st->parts = 0;
    int status = put_held_blocks(st, err);
    if (!status)
        status = put_held_attrs(st, err);
    if (!status)
        status = put_series(st, 1, err);
    if (ndue < 0 && !status)
        status = dsq_error_set(err, DSQ_ENOMEM, "writing run rollups");
    if (!status)
        status = settle_runrolls(st, st->due, (size_t)ndue, err);
    ser_clear(st);
    st->ndue = 0;
    if (!status)
        status = save_dict(st, err);
    if (status)
        return st->map_full ? grow_map(st, err) : (dsq_store_abort(st), status);
    int rc = commit_txn(st, err);
    if (rc)
        return rc;
    if (st->puts_in_write >= st->reopen_puts && (rc = reopen_env(st)) != 0)
        return lmdb_error(err, rc, "opening the index again after a write");
    uint64_t *t = st->pend; /* the stale run rollups as committed */
    st->pend = st->pend_next;
    st->pend_next = t;
    size_t tc = st->pend_cap;
    st->pend_cap = st->pend_next_cap;
    st->pend_next_cap = tc;
    st->npend = st->npend_next;
    st->stale_meta = st->npend > 0;
    st->commits++;
    st->dict_saved = dsq_dict_count(st->dict);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)(now.tv_sec - st->last_sync.tv_sec) * 1000 +
                 (now.tv_nsec - st->last_sync.tv_nsec) / 1000000;
    if (ms < (st->syncer ? SYNC_BEHIND_MS : SYNC_SECONDS * 1000)) {
        mdb_filehandle_t fd;
        /* between syncs, the commit's pages start on their way to the disk now (no
         * wait, no cache flush): the sync the end waits for has less to write (the
         * single log's 9-11 -> 7-8 ms) */
        if (st->syncer && mdb_env_get_fd(st->env, &fd) == 0)
            sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        return 0;
    }
    if (!st->syncer)
        return dsq_store_sync(st, err);
    if (dsq_syncer_begin(st->syncer)) {
        st->last_sync = now;
        release_map(st->dir, "data.mdb");
    }
    int e = dsq_syncer_error(st->syncer);
    return e ? write_error(st, err, e, "writing the index to disk") : 0;
}

int dsq_store_sync(dsq_store *st, dsq_error *err)
{
    clock_gettime(CLOCK_MONOTONIC, &st->last_sync);
    if (st->readonly || !st->env)
        return 0;
    int rc = 0;
    if (st->syncer) {
        dsq_syncer_wait(st->syncer);
        rc = dsq_syncer_error(st->syncer);
    }
    if (!rc)
        rc = mdb_env_sync(st->env, 1);
    if (rc)
        return write_error(st, err, rc, "writing the index to disk");
    /* The index's pages the writer has read stay in the page cache, but letting go of
     * their mapping keeps the indexer's resident size flat however big the index
     * grows (they are mapped again, from the cache, when next read). */
    release_map(st->dir, "data.mdb");
    return 0;
}

int dsq_store_writing(const dsq_store *st) { return st->txn != NULL; }

uint64_t dsq_store_commits(const dsq_store *st) { return st->commits; }

uint64_t dsq_store_reopens(const dsq_store *st) { return st->reopens; }

void dsq_store_abort(dsq_store *st)
{
    if (st->txn)
        mdb_txn_abort(st->txn);
    st->txn = NULL;
    st->ndue = 0;
    ser_clear(st);
    st->sr_nf = st->sr_na = st->sr_nh = 0;
    st->map_full = 0;
    st->blk_len = 0;
    st->nhattr = 0;
    st->parts = 0;
}

/* --- reading: one cursor walk, a visitor per table ------------------------------ */

#define SCAN_STOP 0x5CA57095 /* a visitor's "past the range": the scan ends without error */
#define SCAN_SEEK 0x5CA55EE4 /* a visitor's "go on from st->seek": the first key >= it */

typedef int (*visit_fn)(dsq_store *st, void *ctx, const MDB_val *k, const MDB_val *v);

/* Walks dbi in key order from the first key >= from[0..n) (n == 0: from the start),
 * handing each entry to visit until it returns non-zero: SCAN_STOP ends the walk
 * with 0, SCAN_SEEK goes on from the first key >= st->seek[0..seek_n) (skipping
 * what the visitor does not want), anything else is returned. `what` names the
 * table in LMDB errors. */
static int scan_table(dsq_store *st, MDB_dbi dbi, const void *from, size_t n, visit_fn visit,
                      void *ctx, const char *what, dsq_error *err)
{
    MDB_txn *txn = NULL;
    MDB_cursor *c = NULL;
    int status, rc, own = 0;
    if ((status = read_txn(st, &txn, &own, err)))
        return status == DSQ_EMPTY_INDEX ? 0 : status;
    if ((rc = mdb_cursor_open(txn, dbi, &c))) {
        status = lmdb_error(err, rc, what);
        goto done;
    }
    MDB_val k = {n, (void *)from}, v;
    MDB_txn *outer = st->scan_txn; /* a visit may scan too (in its own transaction) */
    st->scan_txn = txn;
    for (rc = mdb_cursor_get(c, &k, &v, n ? MDB_SET_RANGE : MDB_FIRST); rc == 0 && !status;) {
        status = visit(st, ctx, &k, &v);
        if (status == SCAN_SEEK) {
            status = 0;
            k = (MDB_val){st->seek_n, st->seek};
            rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        } else {
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
    }
    st->scan_txn = outer;
    if (status == SCAN_STOP)
        status = 0;
    else if (!status && rc && rc != MDB_NOTFOUND)
        status = lmdb_error(err, rc, what);
done:
    if (c)
        mdb_cursor_close(c);
    if (own)
        mdb_txn_abort(txn);
    return status;
}

typedef struct block_scan {
    dsq_store_block_fn fn;
    void *ctx;
    dsq_error *err;
    uint32_t run;
    unsigned char pre[4];
} block_scan;

static int visit_block(dsq_store *st, void *ctx, const MDB_val *k, const MDB_val *v)
{
    block_scan *bs = ctx;
    if (k->mv_size != DSQ_BLOCK_KEY_LEN)
        return 0;
    if (bs->run && memcmp(k->mv_data, bs->pre, 4) != 0)
        return SCAN_STOP;
    dsq_block_key bk;
    const void *data;
    size_t n;
    dsq_block_key_unpack(k->mv_data, &bk);
    if (unpack(st, v, &data, &n))
        return dsq_error_set(bs->err, DSQ_EINDEX, "damaged event block (source %u)", bk.source);
    return bs->fn(bs->ctx, &bk, data, n);
}

int dsq_store_scan_blocks(dsq_store *st, uint32_t run, dsq_store_block_fn fn, void *ctx,
                          dsq_error *err)
{
    block_scan bs = {fn, ctx, err, run, {0}};
    put_be32(bs.pre, run);
    return scan_table(st, st->events, bs.pre, run ? 4 : 0, visit_block, &bs, "reading events", err);
}

typedef struct source_scan {
    dsq_store_source_fn fn;
    void *ctx;
    char path[4096];
} source_scan;

static int visit_source(dsq_store *st, void *ctx, const MDB_val *k, const MDB_val *v)
{
    source_scan *ss = ctx;
    (void)st;
    dsq_source_rec rec;
    if (k->mv_size >= sizeof ss->path || source_val_get(v, &rec))
        return 0;
    memcpy(ss->path, k->mv_data, k->mv_size);
    ss->path[k->mv_size] = 0;
    return ss->fn(ss->ctx, ss->path, &rec);
}

int dsq_store_scan_sources(dsq_store *st, dsq_store_source_fn fn, void *ctx, dsq_error *err)
{
    source_scan *ss = malloc(sizeof *ss);
    if (!ss)
        return dsq_error_set(err, DSQ_ENOMEM, "reading sources");
    ss->fn = fn;
    ss->ctx = ctx;
    int status = scan_table(st, st->sources, NULL, 0, visit_source, ss, "reading sources", err);
    free(ss);
    return status;
}

static int scan_series_in(dsq_store *st, MDB_dbi dbi, uint32_t field_lo, uint32_t field_hi,
                          uint32_t run, dsq_store_series_fn fn, void *ctx, dsq_error *err);

int dsq_store_scan_series(dsq_store *st, uint32_t field_lo, uint32_t field_hi, uint32_t run,
                          dsq_store_series_fn fn, void *ctx, dsq_error *err)
{
    return scan_series_in(st, st->series, field_lo, field_hi, run, fn, ctx, err);
}

int dsq_store_scan_runroll(dsq_store *st, uint32_t field_lo, uint32_t field_hi, uint32_t run,
                           dsq_store_series_fn fn, void *ctx, dsq_error *err)
{
    return scan_series_in(st, st->runroll, field_lo, field_hi, run, fn, ctx, err);
}

typedef struct series_scan {
    dsq_store_series_fn fn;
    void *ctx;
    uint32_t field_lo, field_hi, run;
    int run_level; /* run rollups: keys of 8 bytes (field, run) */
    dsq_error *err;
} series_scan;

static int visit_series(dsq_store *st, void *ctx, const MDB_val *k, const MDB_val *v)
{
    series_scan *ss = ctx;
    dsq_series_key sk = {.rank = -1};
    if (k->mv_size != (ss->run_level ? 8u : DSQ_SERIES_KEY_LEN))
        return 0;
    if (ss->run_level) { /* field, run */
        sk.field = get_be32(k->mv_data);
        sk.run = get_be32((const unsigned char *)k->mv_data + 4);
        if (sk.field > ss->field_hi || (ss->run && sk.run != ss->run))
            return SCAN_STOP;
    } else { /* run, field: each run's fields in range, the runs one after another */
        sk.run = get_be32(k->mv_data);
        sk.field = get_be32((const unsigned char *)k->mv_data + 4);
        if (ss->run && sk.run != ss->run)
            return SCAN_STOP;
        if (sk.field < ss->field_lo || sk.field > ss->field_hi) {
            uint32_t next = sk.field < ss->field_lo ? sk.run : sk.run + 1;
            if (next < sk.run || (sk.field > ss->field_hi && ss->run))
                return SCAN_STOP; /* past the last run, or the pinned run's fields */
            series_prefix(st->seek, ss->field_lo, next);
            st->seek_n = 8;
            return SCAN_SEEK;
        }
    }
    if (ss->run_level) {
        dsq_series_rec rec;
        if (v->mv_size == 0) { /* stale (settle_runrolls): merged from the run's series */
            int rc = runroll_merge(st, st->scan_txn, sk.field, sk.run, &rec);
            if (rc)
                return lmdb_error(ss->err, rc, "reading rollups");
            return rec.count ? ss->fn(ss->ctx, &sk, &rec) : 0;
        }
        if (dsq_summary_get(v->mv_data, v->mv_size, 0, &rec, NULL, NULL))
            return 0;
        return ss->fn(ss->ctx, &sk, &rec);
    }
    dsq_group_iter it;
    dsq_group_entry e;
    int status = 0;
    /* a visit inside a visit (a callback scanning series again) unpacks into a
     * buffer of its own: the outer one's entries point into st->gb_vis */
    struct group_buf own = {NULL, 0}, *gb = st->vis_depth ? &own : &st->gb_vis;
    if (group_iter(st, gb, v, &it))
        return dsq_error_set(ss->err, DSQ_ENOMEM, "reading rollups");
    st->vis_depth++;
    while (!status && dsq_group_next(&it, &e) == 1) { /* a damaged rest is skipped */
        sk.host = e.host;
        sk.rank = e.rank;
        sk.source = e.source;
        series_key_pack(&sk, st->vis_key);
        st->vis_pairs = e.pairs;
        st->vis_n = (ptrdiff_t)e.npairs;
        status = ss->fn(ss->ctx, &sk, &e.rec);
        st->vis_n = -1;
    }
    st->vis_depth--;
    free(own.p);
    return status;
}

/* Scans series groups (keys of 20 bytes: run, field, and the first entry's host,
 * rank + 1 and source) or run rollups (8 bytes: field, run). */
static int scan_series_in(dsq_store *st, MDB_dbi dbi, uint32_t field_lo, uint32_t field_hi,
                          uint32_t run, dsq_store_series_fn fn, void *ctx, dsq_error *err)
{
    series_scan ss = {fn, ctx, field_lo, field_hi, run, dbi == st->runroll, err};
    unsigned char pre[8];
    if (ss.run_level) {
        runroll_key(pre, field_lo, run);
        return scan_table(st, dbi, pre, run ? 8 : 4, visit_series, &ss, "reading rollups", err);
    }
    series_prefix(pre, field_lo, run);
    return scan_table(st, dbi, pre, 8, visit_series, &ss, "reading rollups", err);
}

typedef struct chunk_scan {
    dsq_store_chunk_fn fn;
    void *ctx;
    dsq_error *err;
    uint32_t field, source;
    uint32_t nchunks; /* the chunks its record counts: a write's parts may have put
                         more, for a record not yet committed (dsq_store_parts) */
    unsigned char pre[DSQ_SERIES_KEY_LEN];
} chunk_scan;

static int visit_chunk(dsq_store *st, void *ctx, const MDB_val *k, const MDB_val *v)
{
    chunk_scan *cs = ctx;
    if (k->mv_size != sizeof cs->pre + 4 || memcmp(k->mv_data, cs->pre, sizeof cs->pre) != 0 ||
        get_be32((const unsigned char *)k->mv_data + sizeof cs->pre) >= cs->nchunks)
        return SCAN_STOP;
    const void *data;
    size_t n;
    if (unpack(st, v, &data, &n))
        return dsq_error_set(cs->err, DSQ_EINDEX, "damaged rollup chunk (source %u)", cs->source);
    return cs->fn(cs->ctx, data, n);
}

/* Hands a series' own pairs as stored (zrun_pack), or its one value, to cs->fn. */
static int own_pairs(dsq_store *st, chunk_scan *cs, const dsq_series_rec *rec,
                     const unsigned char *p, size_t n)
{
    if (n) {
        int r = zrun_unpack(p, n, &st->zrun, &st->zrun_cap, &p, &n);
        if (r)
            return r == DSQ_ENOMEM ? dsq_error_set(cs->err, r, "reading rollups")
                                   : dsq_error_set(cs->err, DSQ_EINDEX, "damaged rollup (source %u)",
                                                   cs->source);
        return cs->fn(cs->ctx, p, n);
    }
    if (rec->count != 1 ||
        (cs->field >= DSQ_SERIES_KIND_BASE && cs->field < DSQ_SERIES_TIMES_BASE))
        return 0; /* (a kind's count has no pairs) */
    unsigned char one[DSQ_CHUNK_ONE_MAX]; /* one value: its pair is the summary's first */
    return cs->fn(cs->ctx, one, dsq_chunk_one(one, rec->first_t, rec->first_v));
}

/* A chunked series' chunks, then its own pairs after them (schema 11), if any:
 * own[0..n_own) when the visit has them at hand, else (n_own -1) its record looked
 * up after the chunks' reads (their callbacks may look up other series). */
static int chunked_pairs(dsq_store *st, const dsq_series_key *sk, chunk_scan *cs,
                         const dsq_series_rec *rec, const unsigned char *own, ptrdiff_t n_own,
                         dsq_error *err)
{
    cs->nchunks = rec->nchunks;
    int r = scan_table(st, st->chunks, cs->pre, sizeof cs->pre, visit_chunk, cs,
                       "reading rollups", err);
    if (r)
        return r;
    if (n_own < 0) { /* not at hand: the record looked up */
        dsq_series_rec found;
        size_t n;
        if ((r = dsq_store_series_get(st, sk, &found, &st->looked, &n, &st->looked_cap, err)) <= 0)
            return r;
        own = st->looked;
        n_own = (ptrdiff_t)n;
    }
    return n_own > 0 ? own_pairs(st, cs, rec, own, (size_t)n_own) : 0;
}

int dsq_store_scan_chunks(dsq_store *st, const dsq_series_key *sk, const dsq_series_rec *rec,
                          dsq_store_chunk_fn fn, void *ctx, dsq_error *err)
{
    chunk_scan cs = {fn, ctx, err, sk->field, sk->source, 0, {0}};
    series_key_pack(sk, cs.pre);
    int visiting = rec && st->vis_n >= 0 && memcmp(st->vis_key, cs.pre, sizeof cs.pre) == 0;
    if (rec && rec->nchunks)
        return chunked_pairs(st, sk, &cs, rec, visiting ? st->vis_pairs : NULL,
                             visiting ? st->vis_n : -1, err);
    if (visiting)
        return own_pairs(st, &cs, rec, st->vis_pairs, (size_t)st->vis_n);
    /* looked up: the series is not being visited (or its summary is not at hand) */
    dsq_series_rec found;
    size_t n;
    int r = dsq_store_series_get(st, sk, &found, &st->looked, &n, &st->looked_cap, err);
    if (r <= 0)
        return r;
    if (found.nchunks) /* its own pairs looked up again after the chunks' reads */
        return chunked_pairs(st, sk, &cs, &found, NULL, -1, err);
    return own_pairs(st, &cs, &found, st->looked, n);
}

/* The series of key sk: its summary into *rec and, for a series kept in its record,
 * its own pairs copied into *pairs (grown as needed; *npairs 0 when none). 1 found,
 * 0 not in the index, or an error. */
int dsq_store_series_get(dsq_store *st, const dsq_series_key *sk, dsq_series_rec *rec,
                         unsigned char **pairs, size_t *npairs, size_t *cap, dsq_error *err)
{
    unsigned char pre[DSQ_SERIES_KEY_LEN];
    series_key_pack(sk, pre);
    MDB_txn *txn = NULL;
    MDB_cursor *c = NULL;
    MDB_val k, v;
    int status, rc, own = 0, found = 0;
    *npairs = 0;
    if ((status = read_txn(st, &txn, &own, err)))
        return status == DSQ_EMPTY_INDEX ? 0 : status;
    if ((rc = mdb_cursor_open(txn, st->series, &c)) == 0 && (rc = group_at(c, pre, &k, &v)) == 0) {
        dsq_group_iter it;
        dsq_group_entry e;
        int got = 0;
        note_lookup(st);
        if (group_iter(st, &st->gb_get, &v, &it))
            status = dsq_error_set(err, DSQ_ENOMEM, "reading rollups");
        else
            while ((got = dsq_group_next(&it, &e)) == 1 &&
                   !(e.host == sk->host && e.rank == sk->rank && e.source == sk->source))
                ;
        if (got == 1) { /* its own pairs, unpacked (zrun_pack) or copied */
            const unsigned char *q;
            size_t qn;
            int r = zrun_unpack(e.pairs, e.npairs, pairs, cap, &q, &qn);
            *rec = e.rec;
            found = 1;
            if (!r && q == e.pairs && qn) /* stored as they are: copied out of the page */
                r = reserve(pairs, cap, qn) ? DSQ_ENOMEM : (memcpy(*pairs, q, qn), 0);
            *npairs = r ? 0 : qn;
            if (r)
                status = r == DSQ_ENOMEM ? dsq_error_set(err, r, "reading rollups")
                                         : dsq_error_set(err, DSQ_EINDEX, "damaged rollup (source %u)",
                                                         sk->source);
        } else if (got < 0) {
            status = dsq_error_set(err, DSQ_EINDEX, "damaged rollup (source %u)", sk->source);
        }
    }
    if (rc && rc != MDB_NOTFOUND)
        status = lmdb_error(err, rc, "reading rollups");
    if (c)
        mdb_cursor_close(c);
    if (own)
        mdb_txn_abort(txn);
    return status ? status : found;
}

/* Chunk seq of series sk, unpacked and copied into *buf (grown as needed; *n its
 * bytes). 1, 0 when there is no such chunk, or an error. */
int dsq_store_chunk_get(dsq_store *st, const dsq_series_key *sk, uint32_t seq, unsigned char **buf,
                        size_t *n, size_t *cap, dsq_error *err)
{
    unsigned char key[DSQ_SERIES_KEY_LEN + 4];
    series_key_pack(sk, key);
    put_be32(key + DSQ_SERIES_KEY_LEN, seq);
    MDB_txn *txn = NULL;
    MDB_val k = {sizeof key, key}, v;
    int status, rc, own = 0, found = 0;
    if ((status = read_txn(st, &txn, &own, err)))
        return status == DSQ_EMPTY_INDEX ? 0 : status;
    if ((rc = mdb_get(txn, st->chunks, &k, &v)) == 0) {
        /* into the caller's buffer, not the store's: the reader of an event block
         * asks for chunks while the block's bytes are in that one */
        int r = unpack_into(st, &v, buf, cap, n);
        if (r == DSQ_ENOMEM)
            status = dsq_error_set(err, DSQ_ENOMEM, "reading rollups");
        else if (r)
            status = dsq_error_set(err, DSQ_EINDEX, "damaged rollup chunk (source %u)", sk->source);
        else
            found = 1;
    } else if (rc != MDB_NOTFOUND) {
        status = lmdb_error(err, rc, "reading rollups");
    }
    if (own)
        mdb_txn_abort(txn);
    return status ? status : found;
}

typedef struct attr_scan {
    dsq_store_attr_fn fn;
    void *ctx;
} attr_scan;

static int visit_attr(dsq_store *st, void *ctx, const MDB_val *k, const MDB_val *v)
{
    attr_scan *as = ctx;
    (void)st;
    if (k->mv_size != 12 || v->mv_size != sizeof(dsq_attr_rec))
        return 0;
    const unsigned char *p = k->mv_data;
    dsq_attr_rec rec;
    memcpy(&rec, v->mv_data, sizeof rec);
    return as->fn(as->ctx, get_be32(p), get_be32(p + 4), get_be32(p + 8), &rec);
}

int dsq_store_scan_attrs(dsq_store *st, dsq_store_attr_fn fn, void *ctx, dsq_error *err)
{
    if (st->txn && st->nhattr) { /* read in the open write: its attributes too */
        int rc = put_held_attrs(st, err);
        if (rc)
            return rc;
    }
    attr_scan as = {fn, ctx};
    return scan_table(st, st->attrs, NULL, 0, visit_attr, &as, "reading attributes", err);
}

/* --- compaction ------------------------------------------------------------ */

#define GROWN_KEY "grown"

static int meta_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t *v)
{
    MDB_val k = {strlen(key), (void *)key}, d;
    int rc = mdb_get(txn, meta, &k, &d);
    *v = 0;
    if (rc == 0 && d.mv_size == 8)
        for (int i = 0; i < 8; i++)
            *v = *v << 8 | ((const unsigned char *)d.mv_data)[i];
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int meta_put_u64(MDB_txn *txn, MDB_dbi meta, const char *key, uint64_t v)
{
    unsigned char b[8];
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
    MDB_val k = {strlen(key), (void *)key}, d = {8, b};
    return mdb_put(txn, meta, &k, &d, 0);
}

/* LMDB's page format (mdb.c; its data format is stable): a page begins with its
 * number (8 bytes), 2 bytes of padding and its flags (2), then the two ends of its
 * free space (2 + 2: `lower` after the 16-byte header and a 2-byte slot per node,
 * `upper` where its nodes begin, packed from the page's end) or, on the first page
 * of a value on overflow pages, how many pages it takes (4). Free pages keep what
 * they held: the free list says which they are. */
#define PG_HDR 16
#define PG_LEAF 0x02
#define PG_OVERFLOW 0x04
#define PG_META 0x08
#define WALK_READ ((size_t)1 << 20) /* the file is read this much at a time */

/* In a read-only transaction (LMDB opens no cursor on its free list in a write;
 * the last commit's, which the caller's write has not changed): marks in bits (a
 * bit per page, npages of them) the free pages LMDB's free list (its table 0:
 * records of a count and as many page numbers) names, and sets *ends to the pages
 * a copy spends on its tables' ends: a part-filled last leaf for each table with
 * entries, and a root branch page for each of more than one leaf. 0 or LMDB's
 * code. */
static int free_pages_and_ends(dsq_store *st, uint64_t *bits, uint64_t npages, uint64_t *ends)
{
    MDB_txn *txn = NULL;
    MDB_cursor *c = NULL;
    MDB_val k, v;
    MDB_dbi t[] = {st->meta,   st->dict_db, st->events, st->sources, st->members, st->srcblocks,
                   st->series, st->chunks,  st->attrs,  st->srcroll, st->dictrev, st->runroll};
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return rc;
    *ends = 0;
    for (size_t i = 0; !rc && i < sizeof t / sizeof t[0]; i++) {
        MDB_stat ts;
        if (!(rc = mdb_stat(txn, t[i], &ts)))
            *ends += (ts.ms_entries > 0) + (ts.ms_leaf_pages > 1);
    }
    if (!rc)
        rc = mdb_cursor_open(txn, 0, &c);
    for (rc = rc ? rc : mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        size_t n = v.mv_size / sizeof(size_t), count;
        if (n == 0)
            continue;
        memcpy(&count, v.mv_data, sizeof count);
        for (size_t i = 1; i <= count && i < n; i++) {
            size_t pg;
            memcpy(&pg, (const char *)v.mv_data + i * sizeof pg, sizeof pg);
            if (pg < npages)
                bits[pg / 64] |= 1ull << (pg % 64);
        }
    }
    if (c)
        mdb_cursor_close(c);
    mdb_txn_abort(txn);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The bytes a compacted copy of the index would take, about: its leaf nodes
 * (their bytes and 2-byte slots, read off the headers of the pages in use) packed
 * into pages as the copy's appends pack them, a branch page per 64 leaves, the
 * overflow pages as they are, the meta pages. The file is read in file order, a
 * WALK_READ at a time, past the free pages; nothing of it is mapped. Walking every
 * entry through LMDB's map instead faulted its pages in leaf by leaf and let the
 * map go every 8 MB to keep resident memory flat: 90 ms on the bench's 1000-run
 * archive (75 MB), 9 % of its indexing; this reads it in 9 ms. 0, LMDB's code,
 * or DSQ_ENOMEM / an errno when the file cannot be read. */
static int compacted_bytes(dsq_store *st, uint64_t *out)
{
    MDB_stat es;
    MDB_envinfo ei;
    int rc = mdb_env_stat(st->env, &es);
    if (!rc)
        rc = mdb_env_info(st->env, &ei);
    if (rc)
        return rc;
    const uint64_t psize = es.ms_psize, room = psize - PG_HDR;
    uint64_t npages = (uint64_t)ei.me_last_pgno + 1, pages = 3, ends = 0;
    double leaves = 0;
    uint64_t *free_bits = calloc(npages / 64 + 1, sizeof *free_bits);
    unsigned char *buf = malloc(WALK_READ);
    char path[4400];
    snprintf(path, sizeof path, "%s/data.mdb", st->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!free_bits || !buf)
        rc = DSQ_ENOMEM;
    else if (fd < 0)
        rc = errno;
    else
        rc = free_pages_and_ends(st, free_bits, npages, &ends);
    uint64_t per_read = WALK_READ / psize, base = 0, have = 0; /* buf holds pages base.. */
    for (uint64_t pg = 2; !rc && pg < npages; pg++) { /* 0 and 1: the meta pages */
        if (free_bits[pg / 64] >> (pg % 64) & 1)
            continue;
        if (pg >= base + have) {
            ssize_t got = pread(fd, buf, per_read * psize, (off_t)(pg * psize));
            if (got < (ssize_t)PG_HDR) {
                rc = got < 0 ? errno : EIO;
                break;
            }
            base = pg;
            have = (uint64_t)got / psize;
        }
        const unsigned char *h = buf + (pg - base) * psize;
        uint16_t flags, lower, upper;
        memcpy(&flags, h + 10, 2);
        memcpy(&lower, h + 12, 2);
        memcpy(&upper, h + 14, 2);
        if (flags & PG_OVERFLOW) { /* the value's pages as they are */
            uint32_t n;
            memcpy(&n, h + 12, 4);
            pages += n;
            pg += n ? n - 1 : 0;
        } else if ((flags & (PG_LEAF | PG_META)) == PG_LEAF && lower > PG_HDR && upper >= lower &&
                   upper <= psize) {
            /* its bytes in the copy's pages, which end with room for half a node on
               average (the node size of its table: this page's) */
            double used = (double)((psize - upper) + (lower - PG_HDR)), n = (lower - PG_HDR) / 2;
            leaves += used / ((double)room - used / n / 2);
        }
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    free(free_bits);
    uint64_t copy_leaves = (uint64_t)leaves;
    pages += copy_leaves + copy_leaves / 64 + ends;
    *out = pages * psize;
    return rc;
}

int dsq_store_note_growth(dsq_store *st, int *due, dsq_error *err)
{
    *due = 0;
    if (st->readonly || st->txn || !st->env)
        return 0;
    uint64_t now = file_size(st->dir, "data.mdb"), grown = 0, packed = 0;
    if (now <= st->size_at_open)
        return 0;
    const char *env = getenv("DSQ_COMPACT_MIN_BYTES"); /* tests set a small one */
    uint64_t min = env && *env ? strtoull(env, NULL, 10) : DSQ_COMPACT_MIN_BYTES;
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (!rc && !(rc = meta_u64(txn, st->meta, GROWN_KEY, &grown)))
        grown += now - st->size_at_open;
    int grew = now >= min && grown * 100 >= now * DSQ_COMPACT_GROWTH_PCT;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!rc && grew && !(rc = compacted_bytes(st, &packed))) {
        *due = packed * 100 <= now * (100 - DSQ_COMPACT_GAIN_PCT);
        if (!*due)
            grown = 0; /* packed nearly as a copy would be: growth counts from here */
    }
    if (!rc)
        rc = meta_put_u64(txn, st->meta, GROWN_KEY, grown);
    if (!rc) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (txn)
        mdb_txn_abort(txn);
    if (rc) {
        *due = 0;
        return lmdb_error(err, rc, "noting the index's growth");
    }
    st->size_at_open = now;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (getenv("DSQ_COMPACT_TRACE"))
        fprintf(stderr, "dsq: index %llu bytes, grown %llu, a compacted copy about %llu (%.3f s)\n",
                (unsigned long long)now, (unsigned long long)grown, (unsigned long long)packed,
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}

/* The tables in the order a compacted file holds them: what queries read first,
 * together at the start of the file, the bulk (chunks, events) after. */
static const char *const compact_order[] = {"meta", "dict", "dictrev", "runroll", "attrs",
                                            "series", "srcroll", "sources", "members",
                                            "srcblocks", "chunks", "events"};

/* Copies every table of src into the new environment dst in key order (appends,
 * so each table's pages come out in one run). Commits every 32 MiB and lets go of
 * the copy's pages then, and of the source's every 512 KiB read: in a file whose
 * pages are scattered each fault maps its neighbours too (16 times what was read
 * on a 500 MB index: 4 MiB steps left 120 MB resident). Memory stays flat
 * whatever the index's size. */
static int copy_tables(MDB_env *src, MDB_env *dst, const char *dir, const char *tmpdir,
                       dsq_error *err)
{
    MDB_txn *rt = NULL, *wt = NULL;
    MDB_cursor *c = NULL, *wc = NULL; /* wc: kept at the table's end, appends need no search */
    int rc = mdb_txn_begin(src, NULL, MDB_RDONLY, &rt);
    size_t batch = 0, src_len = 0;
    void *src_map = NULL;
    char src_path[4400];
    snprintf(src_path, sizeof src_path, "%s/data.mdb", dir);
    if (map_of(src_path, &src_map, &src_len) != 0) /* the map is fixed while src is open */
        src_len = 0;
    for (size_t i = 0; !rc && i < sizeof compact_order / sizeof compact_order[0]; i++) {
        MDB_dbi from, to;
        MDB_val k, v;
        if ((rc = mdb_dbi_open(rt, compact_order[i], 0, &from)) == MDB_NOTFOUND) {
            rc = 0;
            continue;
        }
        if (rc || (!wt && (rc = mdb_txn_begin(dst, NULL, 0, &wt))) ||
            (rc = mdb_dbi_open(wt, compact_order[i], MDB_CREATE, &to)) ||
            (rc = mdb_cursor_open(rt, from, &c)) || (rc = mdb_cursor_open(wt, to, &wc)))
            break;
        for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
            if (i == 0 && k.mv_size == strlen(GROWN_KEY) && memcmp(k.mv_data, GROWN_KEY, k.mv_size) == 0)
                continue; /* the copy starts with nothing grown since compaction */
            if ((rc = mdb_cursor_put(wc, &k, &v, MDB_APPEND)))
                break;
            batch += k.mv_size + v.mv_size;
            if (src_len && batch % ((size_t)512 << 10) < k.mv_size + v.mv_size)
                madvise(src_map, src_len, MADV_DONTNEED);
            if (batch >= ((size_t)32 << 20)) {
                batch = 0;
                wc = NULL; /* a write cursor ends with its transaction */
                rc = mdb_txn_commit(wt);
                wt = NULL;
                if (rc || (rc = mdb_txn_begin(dst, NULL, 0, &wt)) || (rc = mdb_cursor_open(wt, to, &wc)))
                    break;
                release_map(tmpdir, "data.mdb");
            }
        }
        if (rc == MDB_NOTFOUND)
            rc = 0;
        mdb_cursor_close(c);
        c = NULL;
        if (wc)
            mdb_cursor_close(wc);
        wc = NULL;
    }
    if (!rc && wt) {
        rc = mdb_txn_commit(wt);
        wt = NULL;
    }
    if (wt)
        mdb_txn_abort(wt);
    if (rt)
        mdb_txn_abort(rt);
    if (!rc && (rc = mdb_env_sync(dst, 1)) == 0)
        return 0;
    return dsq_error_set(err, rc == ENOSPC || rc == EIO || rc == MDB_MAP_FULL ? DSQ_ELIMIT : DSQ_EIO,
                         "compacting %s: %s (the index is unchanged)", dir, mdb_strerror(rc));
}

int dsq_store_compact(const char *dir, uint64_t *before, uint64_t *after, dsq_error *err)
{
    char lock[4300], tmp[4200], from[4300], to[4300];
    int status = 0, rc = 0, lock_fd = -1, gate = -1, fd = -1;
    MDB_env *src = NULL, *dst = NULL;
    *before = *after = file_size(dir, "data.mdb");
    snprintf(tmp, sizeof tmp, "%s/compact.tmp", dir);
    snprintf(from, sizeof from, "%s/data.mdb", tmp);
    snprintf(to, sizeof to, "%s/data.mdb", dir);
    if (access(to, F_OK) != 0)
        return dsq_error_set(err, DSQ_EINDEX, "no index at %s", dir);
    if ((status = lock_dir(dir, &lock_fd, err)))
        goto cleanup;
    snprintf(lock, sizeof lock, "%s/lock.mdb", tmp);
    unlink(from); /* left by a compaction that was killed */
    unlink(lock);
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
        status = dsq_error_set(err, DSQ_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if ((rc = mdb_env_create(&src)) || (rc = mdb_env_set_maxdbs(src, 16)) ||
        (rc = mdb_env_open(src, dir, MDB_RDONLY | MDB_NOTLS, 0644)) ||
        (rc = mdb_env_create(&dst)) || (rc = mdb_env_set_maxdbs(dst, 16)) ||
        (rc = mdb_env_set_mapsize(dst, INITIAL_MAP > *before * 2 ? INITIAL_MAP : *before * 2)) ||
        (rc = mdb_env_open(dst, tmp, MDB_NOTLS | MDB_NOSYNC, 0644))) {
        status = lmdb_error(err, rc, "opening the index to compact it");
        goto cleanup;
    }
    if ((status = copy_tables(src, dst, dir, tmp, err)))
        goto cleanup;
    mdb_env_close(dst);
    dst = NULL;
    mdb_env_close(src);
    src = NULL;
    if ((fd = open(from, O_RDONLY | O_CLOEXEC)) < 0 || fsync(fd) != 0) {
        status = dsq_error_set(err, DSQ_EIO, "writing %s: %s (the index is unchanged)", from,
                               strerror(errno));
        goto cleanup;
    }
    close(fd);
    fd = -1;
    /* The swap: the old lock file goes first, so whatever moment this stops at, the
     * next reader finds either the old data or the new, and a fresh lock file. */
    gate = gate_take(dir, 1, LOCK_EX);
    snprintf(lock, sizeof lock, "%s/lock.mdb", dir);
    if ((unlink(lock) != 0 && errno != ENOENT) || rename(from, to) != 0) {
        status = dsq_error_set(err, DSQ_EIO, "replacing %s: %s", to, strerror(errno));
        goto cleanup;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
        fsync(fd);
    *after = file_size(dir, "data.mdb");
cleanup:
    if (fd >= 0)
        close(fd);
    gate_release(gate);
    if (dst)
        mdb_env_close(dst);
    if (src)
        mdb_env_close(src);
    unlink(from);
    snprintf(lock, sizeof lock, "%s/lock.mdb", tmp);
    unlink(lock);
    rmdir(tmp);
    if (lock_fd >= 0)
        close(lock_fd);
    return status;
}
