/* The LMDB index: write, commit, reopen read-only and scan in key order; the
 * dictionary across reopens; dropping a source; the writer lock; clear errors
 * for a missing or foreign directory. Each case works in its own temp dir. */
#include <lmdb.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <zstd.h>

#include "dsq/dsq.h"
#include "mapped.h"
#include "rollup.h"
#include "sergroup.h"
#include "store.h"
#include "table.h"
#include "test.h"
#include "timeconv.h"
#include "tmpdir.h"

static dsq_store *open_store(const char *dir, int readonly)
{
    dsq_store_params p = {dir, readonly, 0};
    dsq_store *st = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    int rc = dsq_store_open(&p, &st, &err);
    if (rc) {
        fprintf(stderr, "open %s: %s\n", dir, err.msg);
        test_failures++;
    }
    return st;
}

/* A fresh temp directory in tmp, err cleared, and a writable store in it (NULL, a
 * failure counted, when it does not open; the caller removes tmp either way). */
static dsq_store *new_store(char *tmp, dsq_error *err)
{
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_error_clear(err);
    return open_store(tmp, 0);
}

static uint32_t intern(dsq_store *st, const char *s)
{
    return dsq_dict_intern(dsq_store_dict(st), s, strlen(s));
}

static size_t table_entries(const char *dir, const char *name)
{
    return table_count(dir, name, TABLE_ENTRIES);
}

/* A 64-bit mix of x (splitmix64's finalizer): bytes zstd cannot pack. */
static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A series group record's bytes into buf (cap of room): unpacked when zstd packed
 * them (2 bytes 0x80 0x00, then the frame: store.c write_groups). Their length, or
 * SIZE_MAX when they do not unpack or fit. */
static size_t group_value(const MDB_val *v, unsigned char *buf, size_t cap)
{
    const unsigned char *p = v->mv_data;
    if (v->mv_size >= 2 && p[0] == 0x80 && p[1] == 0x00) {
        size_t n = ZSTD_decompress(buf, cap, p + 2, v->mv_size - 2);
        return ZSTD_isError(n) ? SIZE_MAX : n;
    }
    if (v->mv_size > cap)
        return SIZE_MAX;
    memcpy(buf, p, v->mv_size);
    return v->mv_size;
}

/* Whether table (of keys of key_len bytes) holds n entries (0: any number) in leaf
 * pages at least 90 % full: each entry its value, its key, an 8-byte node header, a
 * 2-byte index. */
static int table_filled(const char *dir, const char *table, size_t n, size_t key_len)
{
    size_t bytes = table_count(dir, table, TABLE_BYTES),
           pages = table_count(dir, table, TABLE_LEAF_PAGES), have = table_entries(dir, table);
    return (!n || have == n) && pages > 0 && (bytes + have * (key_len + 10)) * 10 >= pages * 4096 * 9;
}

/* A block of n events whose fields carry `tag`, starting at time t. */

static void fill_block(dsq_block *b, int n, double tag, int64_t t, uint32_t field)
{
    dsq_block_reset(b);
    for (int i = 0; i < n; i++) {
        dsq_event ev = {.kind = DSQ_EV_MEMORY, .t_us = t == DSQ_TIME_NONE ? t : t + i,
                        .line = (uint32_t)i + 1, .nf = 1};
        ev.f[0] = (dsq_field){field, 4, tag + i};
        CHECK_INT(dsq_block_add(b, &ev), 0);
    }
}

typedef struct seen {
    int n;
    dsq_block_key k[32];
    int events[32];
    double first_v[32];
    int bad_blocks;
} seen;

static int on_block(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    seen *s = ctx;
    dsq_block_iter it;
    dsq_event ev;
    int cnt = 0, r;
    if (s->n >= 32)
        return 1;
    s->k[s->n] = *k;
    if (dsq_block_iter_init(&it, data, n, k->t_us) != 0) {
        s->bad_blocks++;
        return 0;
    }
    while ((r = dsq_block_iter_next(&it, &ev)) == 1) {
        if (cnt == 0)
            s->first_v[s->n] = ev.f[0].v;
        if (cnt == 0 && ev.t_us != k->t_us)
            s->bad_blocks++;
        cnt++;
    }
    s->bad_blocks += r < 0;
    s->events[s->n++] = cnt;
    return 0;
}

static int key_is(const dsq_block_key *k, uint32_t run, uint32_t host, int32_t rank, int64_t t,
                  uint32_t source, uint32_t seq)
{
    return k->run == run && k->host == host && k->rank == rank && k->t_us == t &&
           k->source == source && k->seq == seq;
}

typedef struct srcs {
    int n;
    char path[4][64];
    dsq_source_rec rec[4];
} srcs;

static int on_source(void *ctx, const char *path, const dsq_source_rec *rec)
{
    srcs *s = ctx;
    if (s->n < 4) {
        snprintf(s->path[s->n], sizeof s->path[0], "%s", path);
        s->rec[s->n++] = *rec;
    }
    return 0;
}

static dsq_source_rec make_rec(uint32_t id, uint32_t run)
{
    dsq_source_rec r;
    memset(&r, 0, sizeof r);
    r.version = 1;
    r.id = id;
    r.run = run;
    r.members = 1;
    r.size = 1000 + id;
    r.mtime_ns = 1721511005202000000LL;
    r.fingerprint = 0x1234567890abcdefull * id;
    r.lines = 10 * id;
    r.events = id;
    r.family_lines[0] = 7;
    r.level_lines[2] = 3;
    return r;
}

/* Writes the index every case starts from; returns its ids through the pointers. */
static void write_sample(const char *dir, uint32_t *ra, uint32_t *rb, uint32_t *h1, uint32_t *h2)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store *st = open_store(dir, 0);
    if (!st)
        return;
    *ra = intern(st, "run-a");
    *rb = intern(st, "run-b");
    *h1 = intern(st, "gpu009");
    *h2 = intern(st, "gpu010");
    uint32_t f = intern(st, "Max_MA");
    CHECK_INT(dsq_store_begin(st, &err), 0);
    uint32_t s1 = 0, s2 = 0;
    CHECK_INT(dsq_store_source_new_id(st, &s1, &err), 0);
    CHECK_INT(dsq_store_source_new_id(st, &s2, &err), 0);
    CHECK_INT(s1, 1);
    CHECK_INT(s2, 2);
    const struct {
        dsq_block_key k;
        int n;
    } blocks[] = {
        {{*rb, *h1, 0, 100, s1, 0}, 1},           {{*ra, *h2, 1, 50, s1, 1}, 2},
        {{*ra, *h1, -1, 10, s1, 2}, 3},           {{*ra, *h1, 0, -5, s2, 0}, 4},
        {{*ra, *h1, 0, DSQ_TIME_NONE, s2, 1}, 5}, {{*ra, *h1, 0, 7, s1, 3}, 300},
    };
    dsq_block b;
    memset(&b, 0, sizeof b);
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        fill_block(&b, blocks[i].n, 10.0 * (double)(i + 1), blocks[i].k.t_us, f);
        CHECK_INT(dsq_store_block_put(st, &blocks[i].k, &b, &err), 0);
    }
    dsq_block_free_buf(&b);
    dsq_member_rec mr = {.size = 5, .lines = 2, .events = 1};
    CHECK_INT(dsq_store_member_put(st, s1, 0, &mr, "a/gpu009.log", &err), 0);
    CHECK_INT(dsq_store_member_put(st, s2, 0, &mr, "", &err), 0);
    dsq_source_rec r1 = make_rec(s1, *ra), r2 = make_rec(s2, *rb);
    CHECK_INT(dsq_store_source_put(st, "/x/run-b.log", &r2, &err), 0);
    CHECK_INT(dsq_store_source_put(st, "/x/run-a/gpu009.log", &r1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
}

static void test_write_reopen_scan(void)
{
    char tmp[64], dir[128];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    snprintf(dir, sizeof dir, "%s/idx/nested", tmp); /* writers create missing parents */
    uint32_t ra = 0, rb = 0, h1 = 0, h2 = 0;
    write_sample(dir, &ra, &rb, &h1, &h2);

    dsq_error err;
    dsq_error_clear(&err);
    dsq_store *st = open_store(dir, 1);
    if (!st)
        goto done;
    dsq_dict *d = dsq_store_dict(st);
    CHECK_INT(dsq_dict_count(d), 5);
    CHECK_INT(dsq_dict_find(d, "run-a", 5), ra);
    CHECK_INT(dsq_dict_find(d, "gpu010", 6), h2);
    CHECK_STR(dsq_dict_str(d, 5, NULL), "Max_MA");

    seen s = {0};
    CHECK_INT(dsq_store_scan_blocks(st, 0, on_block, &s, &err), 0);
    CHECK_INT(s.n, 6);
    CHECK_INT(s.bad_blocks, 0);
    /* key order: run, host, rank (unknown first), time (none, then negative first) */
    CHECK(key_is(&s.k[0], ra, h1, -1, 10, 1, 2));
    CHECK(key_is(&s.k[1], ra, h1, 0, DSQ_TIME_NONE, 2, 1));
    CHECK(key_is(&s.k[2], ra, h1, 0, -5, 2, 0));
    CHECK(key_is(&s.k[3], ra, h1, 0, 7, 1, 3));
    CHECK(key_is(&s.k[4], ra, h2, 1, 50, 1, 1));
    CHECK(key_is(&s.k[5], rb, h1, 0, 100, 1, 0));
    static const int counts[6] = {3, 5, 4, 300, 2, 1};
    static const double firsts[6] = {30, 50, 40, 60, 20, 10};
    for (int i = 0; i < 6 && i < s.n; i++) {
        CHECK_INT(s.events[i], counts[i]);
        CHECK_DBL(s.first_v[i], firsts[i]);
    }

    /* one run only */
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_blocks(st, rb, on_block, &s, &err), 0);
    CHECK_INT(s.n, 1);
    CHECK(key_is(&s.k[0], rb, h1, 0, 100, 1, 0));
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_blocks(st, ra, on_block, &s, &err), 0);
    CHECK_INT(s.n, 5);
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_blocks(st, 999, on_block, &s, &err), 0);
    CHECK_INT(s.n, 0);

    /* sources in path order, records as written */
    srcs ss = {0};
    CHECK_INT(dsq_store_scan_sources(st, on_source, &ss, &err), 0);
    CHECK_INT(ss.n, 2);
    CHECK_STR(ss.path[0], "/x/run-a/gpu009.log");
    CHECK_STR(ss.path[1], "/x/run-b.log");
    dsq_source_rec want = make_rec(1, ra);
    CHECK(memcmp(&ss.rec[0], &want, sizeof want) == 0);

    dsq_source_rec rec;
    CHECK_INT(dsq_store_source_find(st, "/x/run-b.log", &rec, &err), 1);
    CHECK_INT(rec.id, 2);
    CHECK_INT(rec.run, rb);
    CHECK_INT(rec.lines, 20);
    CHECK_INT(dsq_store_source_find(st, "/x/absent.log", &rec, &err), 0);

    /* a read-only store refuses writes */
    CHECK_INT(dsq_store_begin(st, &err), DSQ_EUSAGE);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

typedef struct blocks_seen {
    int n, bad;
    dsq_block_key prev, twice; /* twice: the key put twice */
    double twice_v;            /* its first value as stored */
} blocks_seen;

static int block_key_before(const dsq_block_key *x, const dsq_block_key *y)
{
    unsigned char a[DSQ_BLOCK_KEY_LEN], b[DSQ_BLOCK_KEY_LEN];
    dsq_block_key_pack(x, a);
    dsq_block_key_pack(y, b);
    return memcmp(a, b, sizeof a) < 0;
}

static int on_block_in_order(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    blocks_seen *s = ctx;
    if (s->n && !block_key_before(&s->prev, k))
        s->bad++; /* not in key order, or a key twice */
    s->prev = *k;
    s->n++;
    const dsq_block_key *t = &s->twice; /* field by field: the struct has padding */
    if (key_is(k, t->run, t->host, t->rank, t->t_us, t->source, t->seq)) {
        dsq_block_iter it;
        dsq_event ev;
        if (dsq_block_iter_init(&it, data, n, k->t_us) == 0 && dsq_block_iter_next(&it, &ev) == 1)
            s->twice_v = ev.f[0].v;
    }
    return 0;
}

/* A write's event blocks, held until its commit, go in key order: a new run's,
 * whose hosts' and ranks' files finish in any order, are appended after the
 * table's end and fill its pages (put in the order held, they split pages in the
 * middle: this check fails); a block before the end is put too, and a key held
 * twice keeps the block put last. */
static void test_blocks_put_in_key_order_after_the_end(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st) {
        test_tmpdir_remove(tmp);
        return;
    }
    uint32_t ra = intern(st, "run-a"), rb = intern(st, "run-b"), f = intern(st, "loss");
    dsq_block b;
    memset(&b, 0, sizeof b);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (int i = 0; i < 500; i++) {
        dsq_block_key k = {ra, 1, i, 1000, 1, (uint32_t)i};
        fill_block(&b, 1, i, k.t_us, f);
        CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
    }
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    uint32_t x = 7;
    for (int i = 0; i < 3000; i++) { /* run b's 30 hosts x 100 ranks, in a shuffled order */
        x = x * 1103515245u + 12345u;
        int j = (int)((uint32_t)i * 1237u % 3000u); /* 1237 is prime to 3000: each once */
        dsq_block_key k = {rb, 10 + (uint32_t)(j / 100), j % 100, 2000, 2 + (uint32_t)(j / 100),
                           (uint32_t)(j % 100)};
        fill_block(&b, 1, 1000 + (x >> 20), k.t_us, f);
        CHECK_INT(dsq_store_block_put(st, &k, &b, &err), 0);
    }
    dsq_block_key before = {ra, 2, 0, 1000, 40, 0}, twice = {rb, 10, 0, 2000, 2, 0};
    fill_block(&b, 1, 5, before.t_us, f);
    CHECK_INT(dsq_store_block_put(st, &before, &b, &err), 0);
    fill_block(&b, 1, 77, twice.t_us, f); /* the second block of this key: the one kept */
    CHECK_INT(dsq_store_block_put(st, &twice, &b, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_block_free_buf(&b);
    dsq_store_close(st);
    CHECK(table_filled(tmp, "events", 3501, DSQ_BLOCK_KEY_LEN));
    blocks_seen s = {.twice = twice};
    st = open_store(tmp, 1);
    if (st) {
        CHECK_INT(dsq_store_scan_blocks(st, 0, on_block_in_order, &s, &err), 0);
        dsq_store_close(st);
    }
    CHECK_INT(s.n, 3501);
    CHECK_INT(s.bad, 0);
    CHECK_DBL(s.twice_v, 77);
    test_tmpdir_remove(tmp);
}

/* A callback's non-zero return stops the scan and comes back. */
static int stop_at_two(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    int *count = ctx;
    (void)k, (void)data, (void)n;
    return ++*count == 2 ? 42 : 0;
}

static void test_scan_stops(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    uint32_t ra, rb, h1, h2;
    write_sample(tmp, &ra, &rb, &h1, &h2);
    dsq_store *st = open_store(tmp, 1);
    dsq_error err;
    dsq_error_clear(&err);
    int count = 0;
    if (st)
        CHECK_INT(dsq_store_scan_blocks(st, 0, stop_at_two, &count, &err), 42);
    CHECK_INT(count, 2);
    dsq_store_close(st);
    test_tmpdir_remove(tmp);
}

static void test_source_drop(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    uint32_t ra = 0, rb = 0, h1 = 0, h2 = 0;
    write_sample(tmp, &ra, &rb, &h1, &h2);
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store *st = open_store(tmp, 0);
    if (!st)
        goto done;
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/run-a/gpu009.log", &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/never-indexed.log", &err), 0);
    /* inside the same write the source is already gone */
    dsq_source_rec rec;
    CHECK_INT(dsq_store_source_find(st, "/x/run-a/gpu009.log", &rec, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);

    st = open_store(tmp, 1);
    if (!st)
        goto done;
    seen s = {0};
    CHECK_INT(dsq_store_scan_blocks(st, 0, on_block, &s, &err), 0);
    CHECK_INT(s.n, 2); /* only source 2's blocks are left */
    CHECK(key_is(&s.k[0], ra, h1, 0, DSQ_TIME_NONE, 2, 1));
    CHECK(key_is(&s.k[1], ra, h1, 0, -5, 2, 0));
    srcs ss = {0};
    CHECK_INT(dsq_store_scan_sources(st, on_source, &ss, &err), 0);
    CHECK_INT(ss.n, 1);
    CHECK_STR(ss.path[0], "/x/run-b.log");
    dsq_store_close(st);

    /* an aborted drop leaves everything in place; new ids keep counting up */
    st = open_store(tmp, 0);
    if (!st)
        goto done;
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/run-b.log", &err), 0);
    uint32_t id = 0;
    CHECK_INT(dsq_store_source_new_id(st, &id, &err), 0);
    CHECK_INT(id, 3);
    dsq_store_abort(st);
    CHECK_INT(dsq_store_commit(st, &err), DSQ_EUSAGE); /* nothing to commit */
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_new_id(st, &id, &err), 0);
    CHECK_INT(id, 3);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_blocks(st, 0, on_block, &s, &err), 0);
    CHECK_INT(s.n, 2);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

#define SEEN_MAX 32
typedef struct series_seen {
    int n;
    dsq_series_key k[SEEN_MAX];
    dsq_series_rec r[SEEN_MAX];
} series_seen;

static int on_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    series_seen *s = ctx;
    if (s->n < SEEN_MAX) {
        s->k[s->n] = *k;
        s->r[s->n] = *rec;
    }
    s->n++;
    return 0;
}

/* Series summaries come back bit for bit (they are stored packed), the run rollup
 * merges them, and dropping the source removes them with its attributes and
 * chunks (all listed in its one srcroll record), rollups put twice listed once. */
static void test_series_round_trip_and_drop(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss"), name = intern(st, "zero_stage");
    dsq_series_rec a = {.count = 3, .sum = 0.1 + 0.2, .min = -0.0, .max = 1e300, .first_v = NAN,
                        .last_v = 4e-7, .first_t = DSQ_TIME_NONE, .last_t = INT64_MAX,
                        .nchunks = 2, .unit = 4};
    dsq_series_rec b = {.count = 1ull << 40, .sum = 12.5, .min = 12.5, .max = 12.5,
                        .first_v = 12.5, .last_v = 12.5, .first_t = -5, .last_t = -5};
    dsq_series_key ka = {f, run, 7, 3, 1}, kb = {f, run, 7, -1, 1};
    dsq_attr_rec at = {.t = 5, .num = 3, .is_num = 1};
    CHECK_INT(dsq_store_begin(st, &err), 0);
    uint32_t id = 0;
    CHECK_INT(dsq_store_source_new_id(st, &id, &err), 0);
    CHECK_INT(id, 1);
    for (int pass = 0; pass < 2; pass++) { /* a checkpoint, then the finish */
        CHECK_INT(dsq_store_series_put(st, &ka, &a, "ignored: a has chunks", 21, &err), 0);
        CHECK_INT(dsq_store_series_put(st, &kb, &b, NULL, 0, &err), 0);
        CHECK_INT(dsq_store_chunk_put(st, &ka, 0, "\x00\x01\x00\x00\x00", 5, &err), 0);
        CHECK_INT(dsq_store_attr_put(st, run, name, 1, &at, &err), 0);
        CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    }
    CHECK_INT(dsq_store_runroll_update(st, f, run, &err), 0);
    dsq_source_rec rec = {.version = 1, .id = 1, .run = run};
    CHECK_INT(dsq_store_source_put(st, "/x/a.log", &rec, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    series_seen s = {0};
    CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 2);
    CHECK(dsq_summary_same(&s.r[0], &b)); /* rank -1 sorts first */
    CHECK(dsq_summary_same(&s.r[1], &a));
    CHECK_INT(s.k[1].rank, 3);
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_runroll(st, f, f, run, on_series, &s, &err), 0);
    CHECK_INT(s.n, 1);
    CHECK_INT(s.r[0].count, (1ull << 40) + 3);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/a.log", &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_series(st, 0, UINT32_MAX, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 0);
    CHECK_INT(dsq_store_scan_runroll(st, 0, UINT32_MAX, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 0);
    CHECK_INT(dsq_store_settle(st, &err), 0); /* the run rollup was stale until now */
    dsq_store_close(st);
    /* nothing else is left: every table but meta and the dictionary is empty */
    const char *tabs[] = {"series", "chunks", "attrs", "srcroll", "runroll", "sources"};
    for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
        size_t left = table_entries(tmp, tabs[i]);
        if (left)
            fprintf(stderr, "table %s: %zu entries left\n", tabs[i], left);
        CHECK_INT(left, 0);
    }
done:
    test_tmpdir_remove(tmp);
}

/* The pairs a series gets back, chunk by chunk, decoded. */
typedef struct pairs_seen {
    dsq_store *st;
    int n, chunks;
    int64_t t[8];
    double v[8];
    int inner; /* pairs read from inside the series visit (without a lookup) */
} pairs_seen;

static int on_chunk(void *ctx, const void *data, size_t n)
{
    pairs_seen *ps = ctx;
    dsq_chunk_iter it;
    int64_t t;
    double v;
    int r;
    ps->chunks++;
    dsq_chunk_iter_init(&it, data, n);
    while ((r = dsq_chunk_iter_next(&it, &t, &v)) == 1) {
        if (ps->n < 8) {
            ps->t[ps->n] = t;
            ps->v[ps->n] = v;
        }
        ps->n++;
    }
    return r;
}

static int on_series_pairs(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    pairs_seen *ps = ctx;
    ps->inner++;
    dsq_error err;
    dsq_error_clear(&err);
    return dsq_store_scan_chunks(ps->st, k, rec, on_chunk, ps, &err);
}

/* Reads the pairs of field k's one series from inside a scan of the field (in) and
 * by key after the scan (out). */
static void series_pairs(dsq_store *st, const dsq_series_key *k, pairs_seen *in, pairs_seen *out)
{
    dsq_error err;
    dsq_error_clear(&err);
    *in = (pairs_seen){.st = st};
    *out = (pairs_seen){.st = st};
    CHECK_INT(dsq_store_scan_series(st, k->field, k->field, 0, on_series_pairs, in, &err), 0);
    series_seen s = {0};
    CHECK_INT(dsq_store_scan_series(st, k->field, k->field, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 1);
    if (s.n == 1)
        CHECK_INT(dsq_store_scan_chunks(st, &s.k[0], &s.r[0], on_chunk, out, &err), 0);
}

/* A write of many puts has the environment closed and opened again at its commit
 * (LMDB gives back the pages it keeps from a write only then): the writes after it
 * and the reads, in the writer and in a reader, find everything; a small write
 * does not reopen it. */
static void test_big_write_reopens_the_environment(void)
{
    char tmp[64];
    dsq_error err;
    setenv("DSQ_REOPEN_PUTS", "8", 1);
    dsq_store *st = new_store(tmp, &err);
    unsetenv("DSQ_REOPEN_PUTS");
    dsq_chunk c = {0};
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    CHECK_INT(dsq_chunk_add(&c, 1000000, 2.5), 0);
    dsq_chunk_finish(&c);
    static const int puts[] = {20, 3, 9}; /* big, small, big */
    int rank = 0;
    for (int w = 0; w < 3; w++) {
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int i = 0; i < puts[w]; i++, rank++) {
            dsq_series_key k = {f, run, 1, rank, 1};
            CHECK_INT(dsq_store_chunk_put(st, &k, 0, c.buf, c.len, &err), 0);
        }
        CHECK_INT(dsq_store_commit(st, &err), 0);
        CHECK_INT(dsq_store_reopens(st), w < 2 ? 1 : 2);
        for (int r = 0; r < rank; r++) { /* read back in the writer */
            dsq_series_key k = {f, run, 1, r, 1};
            unsigned char *buf = NULL;
            size_t n = 0, cap = 0;
            CHECK_INT(dsq_store_chunk_get(st, &k, 0, &buf, &n, &cap, &err), 1);
            CHECK(n == c.len && buf && memcmp(buf, c.buf, n) == 0);
            free(buf);
        }
    }
    CHECK_INT(dsq_store_commits(st), 3);
    dsq_store_close(st);
    if (!(st = open_store(tmp, 1)))
        goto done;
    CHECK_INT(table_entries(tmp, "chunks"), 32);
    dsq_series_key last = {f, run, 1, 31, 1};
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    CHECK_INT(dsq_store_chunk_get(st, &last, 0, &buf, &n, &cap, &err), 1);
    free(buf);
    dsq_store_close(st);
done:
    dsq_chunk_free(&c);
    test_tmpdir_remove(tmp);
}

/* A write in parts (dsq_store_parts) is committed every DSQ_PART_PUTS chunk
 * records. A reader between two parts sees the index of the last commit: a
 * series' pairs are its record's nchunks chunks and own pairs (not the chunk a
 * part put after them), a series with no record is not there, and event blocks
 * put in the write wait for its commit. After the commit all of it is there. */
static void test_parts_readers_see_the_last_commit(void)
{
    char tmp[64];
    dsq_error err;
    setenv("DSQ_PART_PUTS", "2", 1);
    dsq_store *st = new_store(tmp, &err), *rd = NULL;
    unsetenv("DSQ_PART_PUTS");
    dsq_chunk a = {0}, b = {0};
    dsq_block blk = {0};
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss"), h = intern(st, "gpu009");
    CHECK_INT(dsq_chunk_add(&a, 1000000, 2.5), 0);
    CHECK_INT(dsq_chunk_add(&a, 2000000, 2.25), 0);
    dsq_chunk_finish(&a);
    CHECK_INT(dsq_chunk_add(&b, 3000000, 2.0), 0);
    CHECK_INT(dsq_chunk_add(&b, 4000000, 1.75), 0);
    dsq_chunk_finish(&b);
    dsq_series_key k = {f, run, h, 0, 1}, k2 = {f, run, h, 1, 1};
    dsq_series_rec r1 = {.count = 2, .sum = 4.75, .min = 2.25, .max = 2.5, .first_v = 2.5,
                         .last_v = 2.25, .first_t = 1000000, .last_t = 2000000, .nchunks = 1};
    dsq_series_rec r2 = {.count = 4, .sum = 8.5, .min = 1.75, .max = 2.5, .first_v = 2.5,
                         .last_v = 1.75, .first_t = 1000000, .last_t = 4000000, .nchunks = 2};
    dsq_series_rec r3 = {.count = 2, .sum = 3.75, .min = 1.75, .max = 2.0, .first_v = 2.0,
                         .last_v = 1.75, .first_t = 3000000, .last_t = 4000000, .nchunks = 1};
    /* the first write: k's first chunk and record, one block */
    CHECK_INT(dsq_store_begin(st, &err), 0);
    fill_block(&blk, 3, 1.0, 1000000, f);
    dsq_block_key bk = {run, h, 0, 1000000, 1, 0};
    CHECK_INT(dsq_store_block_put(st, &bk, &blk, &err), 0);
    CHECK_INT(dsq_store_chunk_put(st, &k, 0, a.buf, a.len, &err), 0);
    CHECK_INT(dsq_store_series_put(st, &k, &r1, NULL, 0, &err), 0);
    CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK_INT(dsq_store_parts_committed(st), 0); /* parts were not on */
    /* the second, in parts: a block, then two chunk records (a part) */
    CHECK_INT(dsq_store_begin(st, &err), 0);
    dsq_store_parts(st, 1);
    fill_block(&blk, 3, 5.0, 3000000, f);
    dsq_block_key bk2 = {run, h, 0, 3000000, 1, 1};
    CHECK_INT(dsq_store_block_put(st, &bk2, &blk, &err), 0);
    CHECK_INT(dsq_store_chunk_put(st, &k, 1, b.buf, b.len, &err), 0);
    CHECK_INT(dsq_store_chunk_put(st, &k2, 0, b.buf, b.len, &err), 0);
    CHECK_INT(dsq_store_parts_committed(st), 1);
    CHECK_INT(table_entries(tmp, "chunks"), 3); /* committed */
    if (!(rd = open_store(tmp, 1)))
        goto done;
    pairs_seen p1 = {.st = rd}, p2 = {.st = rd};
    CHECK_INT(dsq_store_scan_chunks(rd, &k, NULL, on_chunk, &p1, &err), 0);
    CHECK_INT(p1.chunks, 1); /* the chunk its record counts, not the part's */
    CHECK_INT(p1.n, 2);
    CHECK(p1.v[0] == 2.5 && p1.v[1] == 2.25);
    CHECK_INT(dsq_store_scan_chunks(rd, &k2, NULL, on_chunk, &p2, &err), 0);
    CHECK_INT(p2.n, 0); /* no record yet */
    seen s = {0};
    CHECK_INT(dsq_store_scan_blocks(rd, 0, on_block, &s, &err), 0);
    CHECK_INT(s.n, 1); /* the write's block waits for its commit */
    CHECK_INT(s.bad_blocks, 0);
    dsq_store_close(rd);
    rd = NULL;
    CHECK_INT(dsq_store_series_put(st, &k, &r2, NULL, 0, &err), 0);
    CHECK_INT(dsq_store_series_put(st, &k2, &r3, NULL, 0, &err), 0);
    CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK_INT(dsq_store_parts_committed(st), 1);
    /* the third: parts were turned off by the commit */
    CHECK_INT(dsq_store_begin(st, &err), 0);
    dsq_series_key k3 = {f, run, h, 2, 1};
    CHECK_INT(dsq_store_chunk_put(st, &k3, 0, b.buf, b.len, &err), 0);
    CHECK_INT(dsq_store_chunk_put(st, &k3, 1, b.buf, b.len, &err), 0);
    CHECK_INT(dsq_store_parts_committed(st), 1);
    dsq_store_abort(st);
    if (!(rd = open_store(tmp, 1)))
        goto done;
    pairs_seen q1 = {.st = rd}, q2 = {.st = rd};
    CHECK_INT(dsq_store_scan_chunks(rd, &k, NULL, on_chunk, &q1, &err), 0);
    CHECK_INT(q1.chunks, 2);
    CHECK_INT(q1.n, 4);
    CHECK(q1.v[0] == 2.5 && q1.v[1] == 2.25 && q1.v[2] == 2.0 && q1.v[3] == 1.75);
    CHECK_INT(dsq_store_scan_chunks(rd, &k2, NULL, on_chunk, &q2, &err), 0);
    CHECK_INT(q2.n, 2);
    seen s2 = {0};
    CHECK_INT(dsq_store_scan_blocks(rd, 0, on_block, &s2, &err), 0);
    CHECK_INT(s2.n, 2);
    CHECK_INT(s2.bad_blocks, 0);
    CHECK(s2.n == 2 && key_is(&s2.k[1], run, h, 0, 3000000, 1, 1) && s2.first_v[1] == 5.0);
    CHECK_INT(table_entries(tmp, "srcblocks"), 2);
done:
    if (rd)
        dsq_store_close(rd);
    if (st)
        dsq_store_close(st);
    dsq_block_free_buf(&blk);
    dsq_chunk_free(&a);
    dsq_chunk_free(&b);
    test_tmpdir_remove(tmp);
}

typedef struct packed_seen {
    char tags[4];     /* each record's first byte: 'R' as it is, 'Z' zstd */
    size_t stored[3]; /* its bytes */
    int n;
} packed_seen;

static int on_packed(void *ctx, const MDB_val *k, const MDB_val *v)
{
    (void)k;
    packed_seen *ps = ctx;
    if (ps->n == 3)
        return 1;
    ps->tags[ps->n] = *(const char *)v->mv_data;
    ps->stored[ps->n++] = v->mv_size;
    return 0;
}

/* Chunk records are packed by size: under 512 bytes stored as they are, under 1 kB
 * at zstd's fastest level (a big job's checkpoints write hundreds of thousands of
 * them), bigger ones at level 1. Each reads back byte for byte. */
static void test_chunks_packed_by_size(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    static const size_t sizes[] = {300, 700, 3000};
    unsigned char data[3000];
    for (size_t i = 0; i < sizeof data; i++) /* pairs-like: small varints, repeating */
        data[i] = (unsigned char)(i % 7 == 0 ? 0x81 : (i * 13) % 5);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (int r = 0; r < 3; r++) {
        dsq_series_key k = {f, run, 1, r, 1};
        CHECK_INT(dsq_store_chunk_put(st, &k, 0, data, sizes[r], &err), 0);
    }
    CHECK_INT(dsq_store_commit(st, &err), 0);
    for (int r = 0; r < 3; r++) {
        dsq_series_key k = {f, run, 1, r, 1};
        unsigned char *buf = NULL;
        size_t n = 0, cap = 0;
        CHECK_INT(dsq_store_chunk_get(st, &k, 0, &buf, &n, &cap, &err), 1);
        CHECK(n == sizes[r] && buf && memcmp(buf, data, n) == 0);
        free(buf);
    }
    dsq_store_close(st);
    packed_seen ps = {{0}, {0}, 0};
    CHECK_INT(table_each(tmp, "chunks", on_packed, &ps), 3); /* in rank order */
    CHECK_STR(ps.tags, "RZZ");
    CHECK(ps.stored[0] == 301 && ps.stored[1] < 700 / 2 && ps.stored[2] < 3000 / 2);
done:
    test_tmpdir_remove(tmp);
}

/* A field series keeps its pairs in its own record when it has no chunks: the
 * chunk bytes given (several values), or nothing for one value, whose pair is its
 * summary's first; a series with chunks reads them, then the few pairs after them
 * kept in its record (schema 11). Read during a scan of the series, looked up by
 * key with its summary at hand or without, the pairs are the same. */
/* A writer's lookups of series (dsq_store_series_get: the indexer taking back the
 * series it let go of) let go of the index's map as they go (store.c,
 * note_lookup): 240,000 series of 200 bytes (~60 MB of index), looked up in a
 * scattered order in a write, leave at most 40 MB of it resident (all of it was). */
static void test_writer_lookups_let_go_of_the_map(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        return;
    const uint32_t n = 240000;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    unsigned char pairs[200];
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (uint32_t i = 0; i < n; i++) {
        for (size_t b = 0; b < sizeof pairs; b += 8) {
            uint64_t x = mix((uint64_t)i << 8 | b) | 0x0101010101010101u; /* no zero runs */
            memcpy(pairs + b, &x, 8);
        }
        dsq_series_key k = {f, run, 1 + i / 8, (int32_t)(i % 8), 1};
        dsq_series_rec rec = {.count = 2, .sum = 3, .min = 1, .max = 2, .first_v = 1,
                              .last_v = 2, .first_t = 1000, .last_t = 2000};
        CHECK_INT(dsq_store_series_put(st, &k, &rec, pairs, sizeof pairs, &err), 0);
    }
    CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
    if (!(st = open_store(tmp, 0)))
        goto out;
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", tmp);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    unsigned char *got = NULL;
    size_t np = 0, cap = 0;
    long long most = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = (uint32_t)(((uint64_t)j * 100003u) % n); /* scattered, each once */
        dsq_series_key k = {f, run, 1 + i / 8, (int32_t)(i % 8), 1};
        dsq_series_rec rec;
        CHECK_INT(dsq_store_series_get(st, &k, &rec, &got, &np, &cap, &err), 1);
        if (j % 4096 == 0) {
            long long kb = mapped_rss_kb(path);
            most = kb > most ? kb : most;
        }
    }
    CHECK(np == sizeof pairs);
    CHECK(most > 0 && most <= 40 * 1024);
    free(got);
    dsq_store_abort(st);
    dsq_store_close(st);
out:
    test_tmpdir_remove(tmp);
}

static void test_series_own_pairs(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store *st = open_store(tmp, 0);
    dsq_chunk c = {0}, d = {0};
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss"), g = intern(st, "lr"),
             h = intern(st, "grad");
    CHECK_INT(dsq_chunk_add(&c, 1000000, 2.5), 0);
    CHECK_INT(dsq_chunk_add(&c, 2000000, 2.25), 0);
    dsq_chunk_finish(&c);
    dsq_series_rec two = {.count = 2, .sum = 4.75, .min = 2.25, .max = 2.5, .first_v = 2.5,
                          .last_v = 2.25, .first_t = 1000000, .last_t = 2000000};
    dsq_series_rec one = {.count = 1, .sum = 0.125, .min = 0.125, .max = 0.125, .first_v = 0.125,
                          .last_v = 0.125, .first_t = -7, .last_t = -7};
    CHECK_INT(dsq_chunk_add(&d, 3000000, 2.0), 0); /* the pair after the chunk: in the record */
    dsq_chunk_finish(&d);
    dsq_series_rec chunked = two;
    chunked.nchunks = 1;
    chunked.count = 3;
    chunked.min = chunked.last_v = 2.0;
    chunked.last_t = 3000000;
    dsq_series_key k2 = {f, run, 1, 0, 1}, k1 = {g, run, 1, 0, 1}, kc = {h, run, 1, 0, 1};
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_series_put(st, &k2, &two, c.buf, c.len, &err), 0);
    CHECK_INT(dsq_store_series_put(st, &k1, &one, NULL, 0, &err), 0);
    CHECK_INT(dsq_store_series_put(st, &kc, &chunked, d.buf, d.len, &err), 0); /* has chunks */
    CHECK_INT(dsq_store_chunk_put(st, &kc, 0, c.buf, c.len, &err), 0);
    CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
    if (!(st = open_store(tmp, 1)))
        goto done;
    pairs_seen in, out;
    series_pairs(st, &k2, &in, &out);
    CHECK_INT(in.inner, 1);
    CHECK_INT(in.chunks, 1);
    CHECK_INT(out.chunks, 1);
    CHECK_INT(in.n, 2);
    CHECK_INT(out.n, 2);
    CHECK(in.t[0] == 1000000 && in.v[0] == 2.5 && in.t[1] == 2000000 && in.v[1] == 2.25);
    CHECK(out.t[0] == 1000000 && out.v[0] == 2.5 && out.t[1] == 2000000 && out.v[1] == 2.25);
    series_pairs(st, &k1, &in, &out);
    CHECK_INT(in.n, 1);
    CHECK_INT(out.n, 1);
    CHECK(in.t[0] == -7 && in.v[0] == 0.125 && out.t[0] == -7 && out.v[0] == 0.125);
    series_pairs(st, &kc, &in, &out);
    CHECK_INT(in.n, 3);
    CHECK_INT(out.n, 3);
    CHECK_INT(in.chunks, 2); /* its chunk record, then its record's pairs */
    CHECK_INT(out.chunks, 2);
    CHECK(in.t[1] == 2000000 && in.v[1] == 2.25 && in.t[2] == 3000000 && in.v[2] == 2.0);
    CHECK(out.t[1] == 2000000 && out.v[1] == 2.25 && out.t[2] == 3000000 && out.v[2] == 2.0);
    pairs_seen none = {.st = st}; /* no summary at hand: looked up */
    CHECK_INT(dsq_store_scan_chunks(st, &kc, NULL, on_chunk, &none, &err), 0);
    CHECK_INT(none.n, 3);
    CHECK(none.t[2] == 3000000 && none.v[2] == 2.0);
    dsq_series_rec got;
    unsigned char *own = NULL;
    size_t nown = 0, cap = 0;
    CHECK_INT(dsq_store_series_get(st, &kc, &got, &own, &nown, &cap, &err), 1);
    CHECK_INT(got.nchunks, 1);
    CHECK(nown == d.len && own && memcmp(own, d.buf, d.len) == 0);
    free(own);
    dsq_store_close(st);
done:
    dsq_chunk_free(&d);
    dsq_chunk_free(&c);
    test_tmpdir_remove(tmp);
}

/* Own pairs with runs of zero bytes (unchanged values and steps) are stored packed
 * (store.c, zrun_pack) and read back byte for byte, scanned, looked up by key and
 * through dsq_store_series_get: a run longer than 256 zeros, one at the end, and
 * pairs without zeros (kept as they are). */
static void test_series_own_pairs_zero_runs(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store *st = open_store(tmp, 0);
    dsq_chunk c[3] = {{0}};
    unsigned char *got = NULL;
    size_t raw = 0;
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a");
    for (int i = 0; i < 300; i++) /* steady: zero step changes and values */
        CHECK_INT(dsq_chunk_add(&c[0], 1000000LL * (i + 1), 2.5), 0);
    for (int i = 0; i < 40; i++) /* moving: no zero bytes after the first pair */
        CHECK_INT(dsq_chunk_add(&c[1], 1000LL * i * i, 1.0 + i * i * 0.001), 0);
    for (int i = 0; i < 20; i++) /* moving, then steady to the end */
        CHECK_INT(dsq_chunk_add(&c[2], 1000000LL * (i + 1), i < 5 ? i * 0.5 : 9.0), 0);
    dsq_series_key k[3];
    dsq_series_rec rec[3];
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (int i = 0; i < 3; i++) {
        dsq_chunk_finish(&c[i]);
        raw += c[i].len;
        k[i] = (dsq_series_key){intern(st, i == 0 ? "steady" : i == 1 ? "moving" : "tail"), run, 1, 0, 1};
        rec[i] = (dsq_series_rec){.count = c[i].count, .first_t = 1000000, .last_t = 300000000};
        CHECK_INT(dsq_store_series_put(st, &k[i], &rec[i], c[i].buf, c[i].len, &err), 0);
    }
    CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
    /* the steady series' 600-odd bytes take a few dozen */
    CHECK(table_count(tmp, "series", TABLE_BYTES) < raw - 400);
    if (!(st = open_store(tmp, 1)))
        goto done;
    for (int i = 0; i < 3; i++) {
        size_t n = 0, cap = 0;
        dsq_series_rec r;
        CHECK_INT(dsq_store_series_get(st, &k[i], &r, &got, &n, &cap, &err), 1);
        CHECK(n == c[i].len && got && memcmp(got, c[i].buf, n) == 0);
        CHECK(r.count == c[i].count);
        pairs_seen in, out;
        series_pairs(st, &k[i], &in, &out);
        CHECK((uint32_t)in.n == c[i].count && (uint32_t)out.n == c[i].count);
        CHECK(in.v[7] == out.v[7] && in.t[7] == out.t[7]);
        free(got);
        got = NULL;
    }
    dsq_store_close(st);
done:
    free(got);
    for (int i = 0; i < 3; i++)
        dsq_chunk_free(&c[i]);
    test_tmpdir_remove(tmp);
}

/* Series summaries reach LMDB at the commit, in key order: a key put twice in one
 * write keeps the last value, and a source dropped in the write that put its
 * series (a file read again) leaves none of them. */
static void test_series_last_put_wins_and_drop_sees_pending(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    dsq_series_rec one = {.count = 1, .sum = 1, .min = 1, .max = 1, .first_v = 1, .last_v = 1};
    dsq_series_rec two = {.count = 2, .sum = 3, .min = 1, .max = 2, .first_v = 1, .last_v = 2};
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (uint32_t src = 1; src <= 2; src++) {
        dsq_series_key k = {f, run, 0, (int32_t)src, src};
        CHECK_INT(dsq_store_series_put(st, &k, &one, NULL, 0, &err), 0);
        CHECK_INT(dsq_store_series_put(st, &k, &two, "\x20\x02\x00\x00\x00\x00\x02", 7, &err), 0);
        CHECK_INT(dsq_store_rollups_put(st, src, &err), 0);
        dsq_source_rec rec = {.version = 1, .id = src, .run = run};
        CHECK_INT(dsq_store_source_put(st, src == 1 ? "/x/1.log" : "/x/2.log", &rec, &err), 0);
    }
    CHECK_INT(dsq_store_source_drop(st, "/x/1.log", &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    series_seen s = {0};
    CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 1);
    CHECK_INT(s.k[0].source, 2);
    CHECK(dsq_summary_same(&s.r[0], &two));
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

typedef struct attrs_seen {
    int n;
    uint32_t source[8];
} attrs_seen;

static int on_attr(void *ctx, uint32_t run, uint32_t name, uint32_t source, const dsq_attr_rec *rec)
{
    attrs_seen *a = ctx;
    (void)run, (void)name, (void)rec;
    if (a->n < 8)
        a->source[a->n] = source;
    a->n++;
    return 0;
}

/* The record of one attribute name, as scanned. */
typedef struct attr_last {
    uint32_t name;
    int seen;
    double num;
} attr_last;

static int on_attr_last(void *ctx, uint32_t run, uint32_t name, uint32_t source,
                        const dsq_attr_rec *rec)
{
    attr_last *l = ctx;
    (void)run, (void)source;
    if (name == l->name) {
        l->seen++;
        l->num = rec->num;
    }
    return 0;
}

/* Attributes wait for the commit (put_held_attrs): a key put twice keeps the last
 * record; a scan in the open write sees them; a source dropped in the write that put
 * its attributes loses them; the rest are in the table after the commit. */
static void test_attrs_held_last_wins_scanned_and_dropped(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run_b = intern(st, "run-b"), run_a = intern(st, "run-a");
    uint32_t stage = intern(st, "zero_stage"), world = intern(st, "world_size");
    dsq_attr_rec first = {.t = 5, .num = 3, .is_num = 1}, last = {.t = 6, .num = 4, .is_num = 1};
    CHECK_INT(dsq_store_begin(st, &err), 0);
    uint32_t s1 = 0, s2 = 0;
    CHECK_INT(dsq_store_source_new_id(st, &s1, &err), 0);
    CHECK_INT(dsq_store_attr_put(st, run_b, world, s1, &first, &err), 0);
    CHECK_INT(dsq_store_attr_put(st, run_b, stage, s1, &first, &err), 0);
    CHECK_INT(dsq_store_attr_put(st, run_b, world, s1, &last, &err), 0); /* again: kept */
    CHECK_INT(dsq_store_rollups_put(st, s1, &err), 0);
    dsq_source_rec r1 = {.version = 1, .id = s1, .run = run_b};
    CHECK_INT(dsq_store_source_put(st, "/x/1.log", &r1, &err), 0);
    attrs_seen a = {0};
    CHECK_INT(dsq_store_scan_attrs(st, on_attr, &a, &err), 0); /* in the open write */
    CHECK_INT(a.n, 2);
    CHECK_INT(dsq_store_source_new_id(st, &s2, &err), 0);
    CHECK_INT(dsq_store_attr_put(st, run_a, stage, s2, &first, &err), 0);
    CHECK_INT(dsq_store_rollups_put(st, s2, &err), 0);
    dsq_source_rec r2 = {.version = 1, .id = s2, .run = run_a};
    CHECK_INT(dsq_store_source_put(st, "/x/2.log", &r2, &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/2.log", &err), 0); /* its attribute held */
    CHECK_INT(dsq_store_commit(st, &err), 0);
    memset(&a, 0, sizeof a);
    CHECK_INT(dsq_store_scan_attrs(st, on_attr, &a, &err), 0);
    CHECK_INT(a.n, 2);
    CHECK(a.source[0] == s1 && a.source[1] == s1);
    attr_last l = {world, 0, 0};
    CHECK_INT(dsq_store_scan_attrs(st, on_attr_last, &l, &err), 0);
    CHECK_INT(l.seen, 1);
    CHECK(l.num == 4); /* the last put of (run-b, world_size) */
    dsq_store_close(st);
    CHECK_INT(table_entries(tmp, "attrs"), 2);
done:
    test_tmpdir_remove(tmp);
}

/* Dropping a source removes exactly its series (listed per run as fields times
 * (host, rank) pairs, so the drop also tries pairs it never had), their chunks and
 * its attributes, in two runs, and the run rollups then merge the other source's
 * series only. */
static void test_drop_lists_fields_times_pairs(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t runs[2] = {intern(st, "run-a"), intern(st, "run-b")};
    uint32_t fields[3] = {intern(st, "loss"), intern(st, "lr"), DSQ_SERIES_KIND_BASE + 1};
    uint32_t name = intern(st, "zero_stage");
    dsq_attr_rec at = {.t = 5, .num = 3, .is_num = 1};
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (uint32_t src = 1; src <= 2; src++) {
        for (int i = 0; i < 12; i++) { /* sparse: not every field on every pair */
            if (src == 1 && i % 4 == 3)
                continue;
            dsq_series_key k = {fields[i % 3], runs[i / 6], 10 + (uint32_t)(i % 2), i % 5 - 1, src};
            dsq_series_rec r = {.count = src, .sum = 1, .min = 1, .max = 1, .first_v = 1,
                                .last_v = 1, .nchunks = i == 0};
            CHECK_INT(dsq_store_series_put(st, &k, &r, NULL, 0, &err), 0);
            if (i == 0)
                CHECK_INT(dsq_store_chunk_put(st, &k, 0, "\x00\x00\x00", 3, &err), 0);
            CHECK_INT(dsq_store_runroll_update(st, k.field, k.run, &err), 0);
        }
        for (int r = 0; r < 2; r++)
            CHECK_INT(dsq_store_attr_put(st, runs[r], name, src, &at, &err), 0);
        CHECK_INT(dsq_store_rollups_put(st, src, &err), 0);
        dsq_source_rec rec = {.version = 1, .id = src, .run = runs[0]};
        CHECK_INT(dsq_store_source_put(st, src == 1 ? "/x/1.log" : "/x/2.log", &rec, &err), 0);
    }
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/1.log", &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    series_seen s = {0};
    CHECK_INT(dsq_store_scan_series(st, 0, UINT32_MAX, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 12);
    int others = 0;
    for (int i = 0; i < s.n && i < 8; i++)
        others += s.k[i].source != 2;
    CHECK_INT(others, 0);
    memset(&s, 0, sizeof s);
    CHECK_INT(dsq_store_scan_runroll(st, 0, UINT32_MAX, 0, on_series, &s, &err), 0);
    CHECK_INT(s.n, 6); /* 3 fields x 2 runs, each of source 2's series alone */
    for (int i = 0; i < s.n && i < 8; i++)
        CHECK_INT(s.r[i].count, 2 * 2);
    attrs_seen a = {0};
    CHECK_INT(dsq_store_scan_attrs(st, on_attr, &a, &err), 0);
    CHECK_INT(a.n, 2);
    CHECK(a.source[0] == 2 && a.source[1] == 2);
    dsq_store_close(st);
    /* the chunk of source 1's first series went with it: one chunk left */
    CHECK_INT(table_entries(tmp, "chunks"), 1);
done:
    test_tmpdir_remove(tmp);
}

/* The model of test_series_groups_across_sources: source s has ranks -1 (odd s),
 * 0, s and 7 (not s 2) on host 1, and rank 0 on host 2 (s 4); a series with an
 * odd s + rank has a chunk record, the others keep their two pairs. */
static int group_ranks(uint32_t s, int32_t *ranks)
{
    int n = 0;
    if (s % 2)
        ranks[n++] = -1;
    ranks[n++] = 0;
    ranks[n++] = (int32_t)s;
    if (s != 2)
        ranks[n++] = 7;
    return n;
}

static dsq_series_rec group_rec(uint32_t s, int32_t rank, int version)
{
    /* first times far apart and both ways: the delta from the previous entry wraps */
    static const int64_t t0[] = {DSQ_TIME_NONE, INT64_MAX - 20, -3, 1719835200000000, 7};
    int64_t t = t0[(s + (uint32_t)(rank + 1)) % 5] + version;
    double v = s * 10.0 + rank + version / 8.0;
    return (dsq_series_rec){.count = 2, .sum = 2 * v + 0.5, .min = v, .max = v + 0.5,
                            .first_v = v, .last_v = v + 0.5, .first_t = t, .last_t = t + 9,
                            .nchunks = (s + (uint32_t)rank) % 2 ? 1u : 0u, .unit = (uint8_t)s};
}

static void group_write(dsq_store *st, uint32_t f, uint32_t run, uint32_t s, int version)
{
    dsq_error err;
    dsq_error_clear(&err);
    int32_t ranks[4];
    int n = group_ranks(s, ranks);
    for (int i = 0; i <= n; i++) {
        dsq_series_key k = {f, run, i < n ? 1 : 2, i < n ? ranks[i] : 0, s};
        if (i == n && s != 4)
            break;
        dsq_series_rec r = group_rec(s, k.rank, version);
        dsq_chunk c = {0};
        CHECK_INT(dsq_chunk_add(&c, r.first_t, r.first_v), 0);
        CHECK_INT(dsq_chunk_add(&c, r.last_t, r.last_v), 0);
        dsq_chunk_finish(&c);
        /* (pairs kept in the record too would follow the chunk's: schema 11) */
        CHECK_INT(dsq_store_series_put(st, &k, &r, r.nchunks ? NULL : c.buf, r.nchunks ? 0 : c.len,
                                       &err), 0);
        if (r.nchunks)
            CHECK_INT(dsq_store_chunk_put(st, &k, 0, c.buf, c.len, &err), 0);
        dsq_chunk_free(&c);
    }
    CHECK_INT(dsq_store_rollups_put(st, s, &err), 0);
}

typedef struct group_seen {
    series_seen seen;
    dsq_store *st;
    int bad, inner_pairs;
} group_seen;

/* on_series, and each series' pairs read back through its chunks. */
static int on_group_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    group_seen *g = ctx;
    on_series(&g->seen, k, rec);
    pairs_seen ps = {.st = g->st};
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_scan_chunks(g->st, k, rec, on_chunk, &ps, &err), 0);
    g->bad += ps.n != 2 || ps.t[0] != rec->first_t || memcmp(&ps.v[1], &rec->last_v, 8) != 0;
    g->inner_pairs += ps.n;
    return 0;
}

static void test_series_groups_across_sources(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    static const uint32_t order[] = {3, 1, 5, 2, 4};
    for (int i = 0; i < 5; i++) { /* one commit each: later ones merge into the group */
        CHECK_INT(dsq_store_begin(st, &err), 0);
        group_write(st, f, run, order[i], 0);
        char path[32];
        snprintf(path, sizeof path, "/x/%u.log", order[i]);
        dsq_source_rec rec = {.version = 1, .id = order[i], .run = run};
        CHECK_INT(dsq_store_source_put(st, path, &rec, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
    }
    CHECK_INT(dsq_store_begin(st, &err), 0); /* source 3 again: its entries replaced */
    group_write(st, f, run, 3, 1);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/2.log", &err), 0);
    CHECK_INT(dsq_store_source_drop(st, "/x/1.log", &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);
    if (!(st = open_store(tmp, 1)))
        goto done;
    /* what is left, in key order: host 1 by (rank, source), then host 2 */
    dsq_series_key want[16];
    int nwant = 0, nchunked = 0;
    for (int32_t rank = -1; rank <= 7; rank++)
        for (uint32_t s = 3; s <= 5; s++) {
            int32_t ranks[4];
            int n = group_ranks(s, ranks);
            for (int i = 0; i < n; i++)
                if (ranks[i] == rank)
                    want[nwant++] = (dsq_series_key){f, run, 1, rank, s};
        }
    want[nwant++] = (dsq_series_key){f, run, 2, 0, 4};
    group_seen g = {.st = st};
    CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_group_series, &g, &err), 0);
    const series_seen *gs = &g.seen;
    CHECK_INT(gs->n, nwant);
    CHECK_INT(g.bad, 0);
    CHECK_INT(g.inner_pairs, 2 * nwant);
    dsq_series_rec sum = {0};
    for (int i = 0; i < gs->n && i < nwant; i++) {
        CHECK(gs->k[i].host == want[i].host && gs->k[i].rank == want[i].rank &&
              gs->k[i].source == want[i].source);
        dsq_series_rec r = group_rec(want[i].source, want[i].rank, want[i].source == 3);
        CHECK(dsq_summary_same(&gs->r[i], &r));
        dsq_series_merge(&sum, &r, 0);
        nchunked += r.nchunks != 0;
    }
    pairs_seen out = {.st = st}; /* an own-pairs series looked up, not visited */
    CHECK_INT(dsq_store_scan_chunks(st, &gs->k[1], &gs->r[1], on_chunk, &out, &err), 0);
    CHECK_INT(out.n, 2);
    CHECK(out.t[1] == gs->r[1].last_t);
    series_seen rr = {0};
    CHECK_INT(dsq_store_scan_runroll(st, f, f, run, on_series, &rr, &err), 0);
    CHECK_INT(rr.n, 1);
    CHECK(dsq_summary_same(&rr.r[0], &sum));
    dsq_store_close(st);
    CHECK_INT(table_entries(tmp, "chunks"), (size_t)nchunked); /* the dropped ones' went */
    CHECK_INT(table_entries(tmp, "series"), 1); /* one record for both hosts (schema 13) */
done:
    test_tmpdir_remove(tmp);
}

/* Records of a group hold at most 64 series: a model of one (field, run, host)
 * (which (rank, source) series exist, in which version) against the index over
 * random writes (sources with many ranks, written again with others) and drops,
 * one commit each: after every commit the scan gives exactly the model's series
 * in key order with their summaries, and every record has 1 to 256 of them in at
 * most 8192 bytes, stored in at most 980 (or one alone): four to a page. */
typedef struct model_seen {
    int n, bad;
    const int (*ver)[40]; /* [source][rank + 1]: version + 1, 0 absent */
    uint32_t prev_host;
    int prev_rank;
    uint32_t prev_source;
} model_seen;

/* The model's host of a rank: the ranks spread over three hosts, whose series
 * share records (schema 13). */
static uint32_t model_host(int32_t rank)
{
    return 5 + (uint32_t)(rank + 1) % 3;
}

static int on_model_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    model_seen *m = ctx;
    if (m->n && (k->host < m->prev_host ||
                 (k->host == m->prev_host &&
                  ((int)k->rank < m->prev_rank || (k->rank == m->prev_rank && k->source <= m->prev_source)))))
        m->bad++; /* out of order, or twice */
    m->prev_host = k->host;
    m->prev_rank = k->rank;
    m->prev_source = k->source;
    m->n++;
    if (k->source >= 40 || k->rank + 1 < 0 || k->rank + 1 >= 40 || k->host != model_host(k->rank) ||
        !m->ver[k->source][k->rank + 1]) {
        m->bad++;
        return 0;
    }
    dsq_series_rec want = group_rec(k->source, k->rank, m->ver[k->source][k->rank + 1] - 1);
    want.nchunks = 0;
    m->bad += !dsq_summary_same(rec, &want);
    return 0;
}

static void test_series_groups_split_and_merge(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    static int ver[40][40];
    memset(ver, 0, sizeof ver);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int step = 0; step < 60; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t src = 1 + (uint32_t)(x % 39);
        char path[32];
        snprintf(path, sizeof path, "/x/%u.log", src);
        CHECK_INT(dsq_store_begin(st, &err), 0);
        if (x % 5 == 0) { /* drop it */
            CHECK_INT(dsq_store_source_drop(st, path, &err), 0);
            memset(ver[src], 0, sizeof ver[src]);
        } else { /* (re)write it with some of ranks -1..38 */
            CHECK_INT(dsq_store_source_drop(st, path, &err), 0);
            memset(ver[src], 0, sizeof ver[src]);
            int v = step % 7;
            for (int r = -1; r < 39; r++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                if (x % 3)
                    continue;
                dsq_series_key k = {f, run, model_host(r), r, src};
                dsq_series_rec rec = group_rec(src, r, v);
                rec.nchunks = 0;
                /* own pairs (not read here) alike in every series: records of many
                   entries pack well, and are packed */
                static const char alike[] = "0123456789abcdefghijklmnopqrstuvwxyz"
                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ#$";
                CHECK_INT(dsq_store_series_put(st, &k, &rec, alike, sizeof alike - 1, &err), 0);
                ver[src][r + 1] = v + 1;
            }
            CHECK_INT(dsq_store_rollups_put(st, src, &err), 0);
            dsq_source_rec rec = {.version = 1, .id = src, .run = run};
            CHECK_INT(dsq_store_source_put(st, path, &rec, &err), 0);
        }
        CHECK_INT(dsq_store_commit(st, &err), 0);
        model_seen m = {.ver = (const int (*)[40])ver};
        CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_model_series, &m, &err), 0);
        int want = 0;
        for (int a = 0; a < 40; a++)
            for (int b = 0; b < 40; b++)
                want += ver[a][b] != 0;
        CHECK_INT(m.bad, 0);
        CHECK_INT(m.n, want);
        if (m.bad || m.n != want) {
            fprintf(stderr, "after step %d\n", step);
            break;
        }
    }
    dsq_store_close(st);
    MDB_env *env; /* every record holds 1 to 256 series, keyed by its first */
    MDB_txn *txn;
    MDB_cursor *c;
    CHECK_INT(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 16);
    if (mdb_env_open(env, tmp, MDB_RDONLY, 0644) == 0 && mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        MDB_dbi dbi;
        MDB_val k, v;
        int records = 0, bad = 0, packed = 0;
        CHECK_INT(mdb_dbi_open(txn, "series", 0, &dbi), 0);
        CHECK_INT(mdb_cursor_open(txn, dbi, &c), 0);
        static unsigned char raw[1 << 16];
        while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
            dsq_group_iter it;
            dsq_group_entry e;
            int n = 0;
            size_t len = group_value(&v, raw, sizeof raw);
            bad += len == SIZE_MAX;
            dsq_group_iter_init(&it, raw, len == SIZE_MAX ? 0 : len);
            while (dsq_group_next(&it, &e) == 1) {
                const unsigned char *kb = k.mv_data;
                uint32_t h = (uint32_t)kb[8] << 24 | (uint32_t)kb[9] << 16 | (uint32_t)kb[10] << 8 | kb[11];
                uint32_t r1 = (uint32_t)kb[12] << 24 | (uint32_t)kb[13] << 16 | (uint32_t)kb[14] << 8 | kb[15];
                uint32_t so = (uint32_t)kb[16] << 24 | (uint32_t)kb[17] << 16 | (uint32_t)kb[18] << 8 | kb[19];
                bad += n == 0 && (h != e.host || r1 != (uint32_t)e.rank + 1u || so != e.source);
                n++;
            }
            bad += n < 1 || n > 256 || (n > 1 && (len > 8192 || v.mv_size > 980)); /* 4 a page */
            packed += len != v.mv_size;
            records++;
        }
        CHECK(packed > 0); /* records of 256 bytes and more are packed */
        CHECK_INT(bad, 0);
        CHECK(records >= 3); /* the model holds well over 64 series at the end */
        mdb_cursor_close(c);
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
done:
    test_tmpdir_remove(tmp);
}

typedef struct series_count {
    int n, bad;
    uint64_t want[4][4][4][4]; /* count last put per (field, host, rank, source) */
    dsq_series_key prev;
} series_count;

/* Series keys in key order: run, field, host, rank, source. */
static int key_before(const dsq_series_key *x, const dsq_series_key *y)
{
    const uint32_t a[5] = {x->run, x->field, x->host, (uint32_t)(x->rank + 1), x->source};
    const uint32_t b[5] = {y->run, y->field, y->host, (uint32_t)(y->rank + 1), y->source};
    for (int i = 0; i < 5; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return 0;
}

static int on_series_check(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    series_count *c = ctx;
    if (c->n && !key_before(&c->prev, k))
        c->bad++; /* not in key order, or a key twice */
    c->bad += rec->count != c->want[k->field % 4][k->host % 4][k->rank + 1][k->source % 4];
    c->prev = *k;
    c->n++;
    return 0;
}

/* Thousands of summaries put in random order in one write, many keys more than
 * once, come back in key order with the last value put for each (the commit sorts
 * them: sizes around its runs of 16 and merge passes). */
/* Replaces every value of the series table by what damage(value, its length, out)
 * makes of it (returns its new length). */
static void damage_series(const char *dir, size_t (*damage)(const unsigned char *, size_t, unsigned char *))
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    static unsigned char out[1 << 16];
    CHECK_INT(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 16);
    if (mdb_env_open(env, dir, 0, 0644) == 0 && mdb_txn_begin(env, NULL, 0, &txn) == 0) {
        CHECK_INT(mdb_dbi_open(txn, "series", 0, &dbi), 0);
        CHECK_INT(mdb_cursor_open(txn, dbi, &c), 0);
        while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0 && v.mv_size <= sizeof out) {
            MDB_val nv = {damage(v.mv_data, v.mv_size, out), out};
            CHECK_INT(mdb_cursor_put(c, &k, &nv, MDB_CURRENT), 0);
        }
        mdb_cursor_close(c);
        CHECK_INT(mdb_txn_commit(txn), 0);
    }
    mdb_env_close(env);
}

/* a packed record with a byte of its frame changed (one the frame then fails on:
 * without a checksum, others may decode to other entries) */
static size_t frame_byte_flipped(const unsigned char *p, size_t n, unsigned char *out)
{
    CHECK(n > 2 && p[0] == 0x80 && p[1] == 0x00); /* packed */
    memcpy(out, p, n);
    if (n > 12)
        out[n - 5] ^= 0x5A;
    return n;
}

/* a packed record cut short */
static size_t frame_cut(const unsigned char *p, size_t n, unsigned char *out)
{
    memcpy(out, p, n);
    return n > 8 ? n / 2 : n;
}

/* the mark alone, or with a frame saying it holds 2^40 bytes */
static size_t frame_huge(const unsigned char *p, size_t n, unsigned char *out)
{
    (void)p;
    static const unsigned char huge[] = {0x80, 0x00, 0x28, 0xB5, 0x2F, 0xFD, 0xA0, 0,
                                         0,    0,    0,    1,    0,    0,    0};
    memcpy(out, huge, sizeof huge);
    return n % 2 ? 2 : sizeof huge;
}

/* A packed series group record that is damaged (a byte changed, cut short, a frame
 * claiming 1 TB) so that it does not unpack reads as no series: the scan and the lookup find nothing and say
 * nothing is wrong with the rest, and a write into its group replaces it. */
static void test_series_group_damaged_packed_record(void)
{
    size_t (*const damages[])(const unsigned char *, size_t, unsigned char *) = {
        frame_byte_flipped, frame_cut, frame_huge};
    for (size_t d = 0; d < sizeof damages / sizeof damages[0]; d++) {
        char tmp[64];
        dsq_error err;
        dsq_store *st = new_store(tmp, &err);
        if (!st)
            continue;
        uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int32_t rank = 0; rank < 128; rank++) { /* alike: one record, packed */
            dsq_series_key k = {f, run, 1 + (uint32_t)rank / 8, rank, 1};
            dsq_series_rec rec = {.count = 2, .sum = 3, .min = 1, .max = 2, .first_v = 1,
                                  .last_v = 2, .first_t = 1000, .last_t = 2000};
            CHECK_INT(dsq_store_series_put(st, &k, &rec, "\x01\x02\x03\x04\x05\x06\x07\x08", 8, &err), 0);
        }
        CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        dsq_store_close(st);
        CHECK_INT(table_entries(tmp, "series"), 1);
        damage_series(tmp, damages[d]);
        if (!(st = open_store(tmp, 0)))
            goto next;
        series_seen s = {0};
        CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_series, &s, &err), 0);
        CHECK_INT(s.n, 0);
        dsq_series_key k5 = {f, run, 1, 5, 1};
        dsq_series_rec got;
        unsigned char *pairs = NULL;
        size_t np = 0, cap = 0;
        CHECK_INT(dsq_store_series_get(st, &k5, &got, &pairs, &np, &cap, &err), 0);
        free(pairs);
        CHECK_INT(dsq_store_begin(st, &err), 0); /* a new series of the group */
        dsq_series_rec one = {.count = 1, .sum = 7, .min = 7, .max = 7, .first_v = 7,
                              .last_v = 7, .first_t = 5, .last_t = 5};
        CHECK_INT(dsq_store_series_put(st, &k5, &one, NULL, 0, &err), 0);
        CHECK_INT(dsq_store_rollups_put(st, 2, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        memset(&s, 0, sizeof s);
        CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_series, &s, &err), 0);
        CHECK_INT(s.n, 1);
        CHECK(s.n == 1 && dsq_summary_same(&s.r[0], &one));
        dsq_store_close(st);
    next:
        test_tmpdir_remove(tmp);
    }
}

/* The series table's last record whose key's host is under `host`: its key and
 * value (up to 64 kB) and the value's length (0: none). */
typedef struct host_record {
    uint32_t host;
    unsigned char *k, *v;
    size_t n;
} host_record;

static int before_host(void *ctx, const MDB_val *k, const MDB_val *v)
{
    host_record *h = ctx;
    const unsigned char *kb = k->mv_data;
    if (k->mv_size != DSQ_SERIES_KEY_LEN || v->mv_size > 65536 ||
        ((uint32_t)kb[8] << 24 | (uint32_t)kb[9] << 16 | (uint32_t)kb[10] << 8 | kb[11]) >= h->host)
        return 1;
    memcpy(h->k, k->mv_data, k->mv_size);
    memcpy(h->v, v->mv_data, v->mv_size);
    h->n = v->mv_size;
    return 0;
}

static size_t record_before_host(const char *dir, uint32_t host, unsigned char *k, unsigned char *v)
{
    host_record h = {host, k, v, 0};
    table_each(dir, "series", before_host, &h);
    return h.n;
}

typedef struct order_seen {
    int n, bad;
    dsq_series_key last;
} order_seen;

static int on_series_order(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    order_seen *o = ctx;
    uint32_t want_host = 1 + (uint32_t)o->n / 512;
    int32_t want_rank = o->n % 512;
    o->bad += k->host != want_host || k->rank != want_rank || rec->count != (uint64_t)want_rank + 1;
    o->n++;
    return 0;
}

/* Series that all go after a full record (a run's next host, in the next commit)
 * start records of their own: the full record (packed, near 980 bytes) is left as
 * it was, not unpacked and packed again (merged, it changes); the scan gives every
 * series in key order. */
static void test_series_after_full_record_not_merged(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    static unsigned char k1[DSQ_SERIES_KEY_LEN], v1[65536], k2[DSQ_SERIES_KEY_LEN], v2[65536];
    size_t n1 = 0, n2 = 0;
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss");
    for (uint32_t host = 1; host <= 2 && st; host++) { /* one commit each */
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int32_t rank = 0; rank < 512; rank++) { /* a few records a host */
            dsq_series_key k = {f, run, host, rank, host};
            dsq_series_rec rec = {.count = (uint64_t)rank + 1, .sum = 1, .min = 1, .max = 1,
                                  .first_v = 1, .last_v = 1, .first_t = 1000, .last_t = 2000};
            CHECK_INT(dsq_store_series_put(st, &k, &rec, NULL, 0, &err), 0);
        }
        CHECK_INT(dsq_store_rollups_put(st, host, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        dsq_store_close(st);
        if (host == 1)
            n1 = record_before_host(tmp, 2, k1, v1);
        else
            n2 = record_before_host(tmp, 2, k2, v2);
        st = open_store(tmp, 0);
    }
    CHECK(n1 > 0 && n1 == n2 && memcmp(k1, k2, sizeof k1) == 0 && memcmp(v1, v2, n1) == 0);
    CHECK(n1 >= 2 && v1[0] == 0x80 && v1[1] == 0x00); /* packed */
    order_seen o = {0};
    if (st)
        CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_series_order, &o, &err), 0);
    CHECK_INT(o.n, 1024);
    CHECK_INT(o.bad, 0);
    if (st)
        dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

typedef struct nested_seen {
    dsq_store *st;
    uint32_t inner_field;
    int outer, inner, bad;
} nested_seen;

static int on_inner_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    nested_seen *ns = ctx;
    ns->bad += rec->count != (uint64_t)k->rank + 2;
    ns->inner++;
    return 0;
}

/* each outer series: its summary checked after a whole scan of the other field */
static int on_outer_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    nested_seen *ns = ctx;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_scan_series(ns->st, ns->inner_field, ns->inner_field, 0, on_inner_series,
                                    ns, &err), 0);
    ns->bad += rec->count != (uint64_t)k->rank + 1 || k->rank != ns->outer % 128;
    ns->outer++;
    return 0;
}

/* A scan of series inside a visit's callback (both of packed records) leaves the
 * outer visit's entries whole (ASan: they are not in a buffer the inner one grew). */
static void test_series_scan_inside_a_visit(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run-a"), f = intern(st, "loss"), g = intern(st, "lr");
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (uint32_t field = f; field <= g; field += g - f)
        for (int32_t rank = 0; rank < 128; rank++) {
            dsq_series_key k = {field, run, 1, rank, 1};
            dsq_series_rec rec = {.count = (uint64_t)rank + 1 + (field == g), .sum = 1, .min = 1,
                                  .max = 1, .first_v = 1, .last_v = 1, .first_t = 5, .last_t = 9};
            CHECK_INT(dsq_store_series_put(st, &k, &rec, "pairs alike in every series", 27, &err), 0);
        }
    CHECK_INT(dsq_store_rollups_put(st, 1, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    nested_seen ns = {.st = st, .inner_field = g};
    CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_outer_series, &ns, &err), 0);
    CHECK_INT(ns.outer, 128);
    CHECK_INT(ns.inner, 128 * 128);
    CHECK_INT(ns.bad, 0);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

static void test_series_many_in_one_write_last_wins(void)
{
    static const int sizes[] = {1, 15, 16, 17, 33, 1000, 4099};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        char tmp[64];
        dsq_error err;
        dsq_store *st = new_store(tmp, &err);
        if (!st) {
            test_tmpdir_remove(tmp);
            continue;
        }
        uint32_t run = intern(st, "run");
        static series_count c;
        memset(&c, 0, sizeof c);
        int distinct = 0;
        uint32_t x = 12345u + (uint32_t)z;
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int i = 0; i < sizes[z]; i++) {
            x = x * 1103515245u + 12345u;
            uint32_t r = x >> 8;
            dsq_series_key k = {4 + r % 4, run, 8 + (r >> 2) % 4, (int32_t)((r >> 4) % 4) - 1,
                                4 + (r >> 6) % 4};
            uint64_t *w = &c.want[k.field % 4][k.host % 4][k.rank + 1][k.source % 4];
            distinct += *w == 0;
            *w = (uint64_t)i + 1;
            dsq_series_rec rec = {.count = *w, .sum = 1, .min = 1, .max = 1, .first_v = 1, .last_v = 1};
            CHECK_INT(dsq_store_series_put(st, &k, &rec, NULL, 0, &err), 0);
        }
        CHECK_INT(dsq_store_commit(st, &err), 0);
        CHECK_INT(dsq_store_scan_series(st, 0, UINT32_MAX, 0, on_series_check, &c, &err), 0);
        CHECK_INT(c.n, distinct);
        CHECK_INT(c.bad, 0);
        dsq_store_close(st);
        test_tmpdir_remove(tmp);
    }
}

static int count_series(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    (void)k, (void)rec;
    ++*(int *)ctx;
    return 0;
}

/* Group records after the series table's last key are appended, which fills its
 * pages: a fresh index of 3,000 groups of 330 bytes keeps them in pages at least
 * 90 % full (93 %; 84 % when put, which splits a page in the middle). A later
 * write's records before, between and after them are put as usual, and every
 * series is there. */
static void test_series_table_filled_in_key_order(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st) {
        test_tmpdir_remove(tmp);
        return;
    }
    uint32_t run = intern(st, "run");
    for (int write = 0; write < 2; write++) {
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int i = 0; i < 3000; i++) {
            /* write 1: fields 10..12; write 2: 9 (before), 11 (between), 13 (after) */
            uint32_t field = write ? 9 + 2 * (uint32_t)(i % 3) : 10 + (uint32_t)(i % 3);
            dsq_series_key k = {field, run, 100 + (uint32_t)i + (uint32_t)write * 5000, 0, 1};
            dsq_series_rec rec = {.count = 3, .sum = i, .min = 0, .max = i, .first_v = 0,
                                  .last_v = i, .first_t = 1000, .last_t = 2000};
            unsigned char pairs[300]; /* its own pairs (not read here): entries of 330 bytes
                                         that zstd cannot pack, a few to a record */
            for (size_t b = 0; b < sizeof pairs; b++)
                pairs[b] = (unsigned char)(1 + (mix((uint64_t)i << 32 | b) % 251));
            CHECK_INT(dsq_store_series_put(st, &k, &rec, pairs, sizeof pairs, &err), 0);
        }
        CHECK_INT(dsq_store_commit(st, &err), 0);
        if (write == 0) {
            dsq_store_close(st);
            /* (the hosts' series share records: a few of 330 bytes in one) */
            CHECK(table_filled(tmp, "series", 0, DSQ_SERIES_KEY_LEN));
            CHECK(table_entries(tmp, "series") >= 3000 / 4);
            st = open_store(tmp, 0);
            if (!st)
                break;
        }
    }
    int found = 0;
    if (st) {
        CHECK_INT(dsq_store_scan_series(st, 0, UINT32_MAX, 0, count_series, &found, &err), 0);
        dsq_store_close(st);
    }
    CHECK_INT(found, 6000);
    test_tmpdir_remove(tmp);
}

typedef struct range_seen {
    int n, bad;
    uint32_t lo, hi, run; /* what the scan asked for (run 0: every run) */
    dsq_series_key prev;
} range_seen;

static int on_series_in_range(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    range_seen *c = ctx;
    c->bad += k->field < c->lo || k->field > c->hi || (c->run && k->run != c->run) ||
              rec->count != k->host + 1u;
    if (c->n && !key_before(&c->prev, k))
        c->bad++; /* not in key order (run first), or a key twice */
    c->prev = *k;
    c->n++;
    return 0;
}

/* A run's series are one range of keys, run first: a later write's new run is
 * appended after the runs before it, and the pages stay at least 90 % full (keys
 * field first put each new run's series in the middle of every field's range,
 * splitting pages in the middle: this check fails). A scan of a field range over
 * every run goes from run to run, past a run with none of those fields and the
 * fields outside the range. */
/* The commit's radix sort of waiting series gives the merge sort's order, entries of
 * one key in the order put: on keys of a commit's shape (a few runs, a hundred
 * fields, hosts, ranks, sources), on many repeated keys, on one key, and it declines
 * keys too wide to pack with their index in 64 bits. */
static void test_series_sort_radix_as_merge(void)
{
    const uint32_t commit[5] = {14, 600, 56, 9, 250}, dup[5] = {2, 3, 2, 2, 2},
                   one[5] = {0, 0, 0, 0, 0}, wide[5] = {4000000000u, 4000000000u, 4000000000u,
                                                        4000000000u, 4000000000u};
    const size_t sizes[] = {1, 2, 17, 513, 2048, 18000, 70001};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_INT(dsq_store_sort_check(sizes[i], 0x9E3779B97F4A7C15ull + i, commit), 1);
        CHECK_INT(dsq_store_sort_check(sizes[i], 77 + i, dup), 1);
        CHECK_INT(dsq_store_sort_check(sizes[i], 5 + i, one), 1);
    }
    CHECK_INT(dsq_store_sort_check(1000, 3, wide), 0);
}

static void test_new_runs_appended_and_scanned_by_field(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st) {
        test_tmpdir_remove(tmp);
        return;
    }
    /* runs in id order: a, c (fields 10 and 14 only), b; one write each */
    uint32_t runs[3] = {intern(st, "run-a"), intern(st, "run-c"), intern(st, "run-b")};
    for (int w = 0; w < 3 && st; w++) {
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (uint32_t host = 0; host < 400; host++)
            for (uint32_t field = 10; field <= 14; field++) {
                if (w == 1 && field != 10 && field != 14)
                    continue;
                dsq_series_key k = {field, runs[w], host, 0, 1};
                dsq_series_rec rec = {.count = host + 1, .sum = 1, .min = 1, .max = 1,
                                      .first_v = 1, .last_v = 1, .first_t = 1000, .last_t = 2000};
                unsigned char pairs[300];
                for (size_t b = 0; b < sizeof pairs; b++)
                    pairs[b] = (unsigned char)(1 + mix((uint64_t)(host * 16 + field) << 32 | b) % 251);
                CHECK_INT(dsq_store_series_put(st, &k, &rec, pairs, sizeof pairs, &err), 0);
            }
        CHECK_INT(dsq_store_commit(st, &err), 0);
        dsq_store_close(st);
        st = open_store(tmp, 0);
    }
    CHECK(table_filled(tmp, "series", 0, DSQ_SERIES_KEY_LEN));
    CHECK(table_entries(tmp, "series") >= 4800 / 4);
    range_seen c = {.lo = 11, .hi = 13};
    if (st)
        CHECK_INT(dsq_store_scan_series(st, 11, 13, 0, on_series_in_range, &c, &err), 0);
    CHECK_INT(c.n, 2 * 3 * 400);
    CHECK_INT(c.bad, 0);
    range_seen one = {.lo = 11, .hi = 13, .run = runs[2]}, none = {.lo = 11, .hi = 13, .run = runs[1]};
    range_seen edge = {.lo = 14, .hi = UINT32_MAX}; /* the last run's last field, then none */
    if (st) {
        CHECK_INT(dsq_store_scan_series(st, 11, 13, runs[2], on_series_in_range, &one, &err), 0);
        CHECK_INT(dsq_store_scan_series(st, 11, 13, runs[1], on_series_in_range, &none, &err), 0);
        CHECK_INT(dsq_store_scan_series(st, 14, UINT32_MAX, 0, on_series_in_range, &edge, &err), 0);
        dsq_store_close(st);
    }
    CHECK_INT(one.n, 3 * 400);
    CHECK_INT(none.n, 0);
    CHECK_INT(edge.n, 3 * 400);
    CHECK_INT(one.bad + none.bad + edge.bad, 0);
    test_tmpdir_remove(tmp);
}

typedef struct runroll_ref {
    dsq_series_rec acc[8]; /* by field - 4: the series merged in key order */
    dsq_series_rec got[8]; /* by field - 4: the stored run rollups */
    int n;
} runroll_ref;

static int on_series_merge(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    runroll_ref *rr = ctx;
    dsq_series_merge(&rr->acc[k->field - 4], rec, k->field >= DSQ_SERIES_KIND_BASE);
    return 0;
}

static int on_runroll(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    runroll_ref *rr = ctx;
    rr->got[k->field - 4] = *rec;
    rr->n++;
    return 0;
}

/* A run rollup is its series merged in key order, bit for bit (sums that depend on
 * the order of additions), whether the series were put in this write (some more
 * than once: the last counts) or in an earlier one, interleaved in key order. */
static void test_runroll_merges_series_in_key_order(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t run = intern(st, "run");
    uint32_t x = 777;
    for (int w = 0; w < 3; w++) {
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int i = 0; i < 300; i++) {
            x = x * 1103515245u + 12345u;
            uint32_t r = x >> 8;
            dsq_series_key k = {4 + r % 4, run, 8 + (r >> 2) % 4, (int32_t)((r >> 4) % 4) - 1,
                                4 + (r >> 6) % 4};
            double v = (double)(r >> 8 & 1023) * 0.1 + (r & 1 ? 1e15 : 0);
            dsq_series_rec rec = {.count = 1 + r % 5, .sum = v * 3, .min = v, .max = v * 2,
                                  .first_v = v, .last_v = v * 2, .first_t = (int64_t)(r >> 20),
                                  .last_t = (int64_t)(r >> 20) + 5};
            CHECK_INT(dsq_store_series_put(st, &k, &rec, NULL, 0, &err), 0);
            CHECK_INT(dsq_store_runroll_update(st, k.field, run, &err), 0);
        }
        CHECK_INT(dsq_store_commit(st, &err), 0);
        static runroll_ref rr;
        memset(&rr, 0, sizeof rr);
        CHECK_INT(dsq_store_scan_series(st, 4, 7, run, on_series_merge, &rr, &err), 0);
        CHECK_INT(dsq_store_scan_runroll(st, 4, 7, run, on_runroll, &rr, &err), 0);
        CHECK_INT(rr.n, 4);
        for (int f = 0; f < 4; f++) {
            CHECK(rr.acc[f].count > 0);
            CHECK(dsq_summary_same(&rr.got[f], &rr.acc[f]));
        }
    }
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

/* Whether the run rollups of fields 4-7 in `run` read back as the merge of its
 * series in key order, bit for bit (stale or not); *nfields: how many there are. */
static int runroll_matches_in(dsq_store *st, uint32_t field_lo, uint32_t field_hi, uint32_t run,
                              int *nfields)
{
    static runroll_ref rr;
    dsq_error err;
    dsq_error_clear(&err);
    memset(&rr, 0, sizeof rr);
    if (dsq_store_scan_series(st, field_lo, field_hi, run, on_series_merge, &rr, &err) ||
        dsq_store_scan_runroll(st, field_lo, field_hi, run, on_runroll, &rr, &err))
        return 0;
    int same = 1;
    for (int f = 0; f < 4; f++)
        same &= dsq_summary_same(&rr.got[f], &rr.acc[f]);
    *nfields = rr.n;
    return same;
}

static int runroll_matches(dsq_store *st, uint32_t run, int *nfields)
{
    return runroll_matches_in(st, 4, 7, run, nfields);
}

/* One source's series of field 4 in `run` (two ranks), its run rollup noted. */
static void put_source_series(dsq_store *st, uint32_t run, uint32_t source, double v)
{
    dsq_error err;
    dsq_error_clear(&err);
    for (int32_t rank = 0; rank < 2; rank++) {
        dsq_series_key k = {4, run, 9, rank, source};
        dsq_series_rec rec = {.count = 2, .sum = v + 0.1, .min = 0.1, .max = v,
                              .first_v = v, .last_v = 0.1, .first_t = source, .last_t = 99};
        CHECK_INT(dsq_store_series_put(st, &k, &rec, NULL, 0, &err), 0);
    }
    CHECK_INT(dsq_store_runroll_update(st, 4, run, &err), 0);
}

/* A run rollup is written by the commit that writes its run's first series (made
 * from them as they go into their groups: a new run has nothing else to read); a
 * later commit that adds to the run marks it stale, and the first commit that does
 * not touch it (or dsq_store_settle) recomputes it. Readers merge a stale one's
 * series, so the answers are the same throughout. A writer closed before settling
 * (killed) leaves its stale ones to the next writer. */
static void test_runroll_stale_until_its_run_goes_quiet(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t a = intern(st, "run-a"), b;
    int n = 0;
    CHECK_INT(dsq_store_begin(st, &err), 0);
    put_source_series(st, a, 1, 1e15);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK(runroll_matches(st, a, &n));
    CHECK_INT(n, 1);
    dsq_store_close(st);
    CHECK_INT(table_count(tmp, "runroll", TABLE_ENTRIES), 1);
    CHECK_INT(table_count(tmp, "runroll", TABLE_EMPTY), 0); /* a new run's: final at once */
    if (!(st = open_store(tmp, 0)))
        goto done;
    CHECK_INT(dsq_store_begin(st, &err), 0); /* run-a again: stale */
    put_source_series(st, a, 2, 0.3);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK(runroll_matches(st, a, &n));
    CHECK_INT(n, 1);
    dsq_store_close(st); /* not settled */
    CHECK_INT(table_count(tmp, "runroll", TABLE_EMPTY), 1);
    if (!(st = open_store(tmp, 1))) /* a reader of the stale one */
        goto done;
    CHECK(runroll_matches(st, a, &n));
    CHECK_INT(n, 1);
    dsq_store_close(st);
    if (!(st = open_store(tmp, 0)))
        goto done;
    b = intern(st, "run-b"); /* a new run, as the indexer names it: when it writes it */
    CHECK_INT(dsq_store_begin(st, &err), 0); /* run-a goes quiet: recomputed */
    put_source_series(st, b, 3, 1e-3);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK(runroll_matches(st, a, &n) && runroll_matches(st, b, &n));
    dsq_store_close(st);
    CHECK_INT(table_count(tmp, "runroll", TABLE_ENTRIES), 2);
    CHECK_INT(table_count(tmp, "runroll", TABLE_EMPTY), 0);
    if (!(st = open_store(tmp, 0)))
        goto done;
    for (uint32_t src = 4; src < 6; src++) { /* run-b still being written: stays stale */
        CHECK_INT(dsq_store_begin(st, &err), 0);
        put_source_series(st, b, src, 7.0 * src);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        CHECK(runroll_matches(st, b, &n));
        CHECK_INT(n, 1);
    }
    CHECK_INT(dsq_store_settle(st, &err), 0);
    CHECK(runroll_matches(st, a, &n) && runroll_matches(st, b, &n));
    dsq_store_close(st);
    CHECK_INT(table_count(tmp, "runroll", TABLE_EMPTY), 0);
    CHECK_INT(table_count(tmp, "runroll", TABLE_ENTRIES), 2);
    CHECK_INT(table_count(tmp, "meta", TABLE_ENTRIES), 1); /* the schema: "stale" is gone */
done:
    test_tmpdir_remove(tmp);
}

/* A new run's rollup made as its series go into their groups is the one a
 * recompute makes, bit for bit: many hosts, ranks and sources whose sums depend
 * on the order they are added in, some groups split in several records; also
 * when a drop in the same write puts half of them into their groups early (the
 * commit then merges the rest into those groups, and the rollup is marked stale
 * and recomputed instead). */
static void test_runroll_of_new_run_same_as_recomputed(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    uint32_t runs[2], z = intern(st, "run-z");
    int n = 0;
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_put(st, "/gone", &(dsq_source_rec){.version = 1, .id = 999,
                                                                   .run = z}, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    uint64_t seed = 7;
    for (int w = 0; w < 2; w++) {
        uint32_t run = runs[w] = intern(st, w ? "run-y" : "run-x"); /* new: named when written */
        CHECK_INT(dsq_store_begin(st, &err), 0);
        for (int32_t rank = 0; rank < 90; rank++) /* past a group record's 64 entries */
            for (uint32_t host = 1; host <= 3; host++) {
                if (w == 1 && rank == 45 && host == 1) /* a drop puts what waits early */
                    CHECK_INT(dsq_store_source_drop(st, "/gone", &err), 0);
                for (uint32_t f = 4; f < 7; f++) {
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    double v = (double)(seed >> 11) * 0x1p-53 * (f == 5 ? 1e17 : 1.0) - 0.25;
                    dsq_series_key k = {f, run, host, rank, (uint32_t)(100 * w + rank + 1)};
                    dsq_series_rec rec = {.count = 1 + (seed & 3), .sum = v * 3.1, .min = v - 1,
                                          .max = v + 1, .first_v = v, .last_v = -v,
                                          .first_t = (int64_t)(seed >> 40), .last_t = 1 << 30};
                    CHECK_INT(dsq_store_series_put(st, &k, &rec, NULL, 0, &err), 0);
                }
            }
        for (uint32_t f = 4; f < 7; f++)
            CHECK_INT(dsq_store_runroll_update(st, f, run, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
        for (uint32_t f = 4; f < 7; f++) { /* a run's scan is of one field */
            CHECK(runroll_matches_in(st, f, f, run, &n));
            CHECK_INT(n, 1);
        }
    }
    CHECK_INT(dsq_store_settle(st, &err), 0);
    for (uint32_t f = 4; f < 7; f++) {
        CHECK(runroll_matches_in(st, f, f, runs[0], &n));
        CHECK(runroll_matches_in(st, f, f, runs[1], &n));
    }
    dsq_store_close(st);
    CHECK_INT(table_count(tmp, "runroll", TABLE_ENTRIES), 6);
    CHECK_INT(table_count(tmp, "runroll", TABLE_EMPTY), 0);
done:
    test_tmpdir_remove(tmp);
}

typedef struct recs_check {
    const dsq_series_rec *want; /* by source - 1 */
    int n, bad;
} recs_check;

static int on_series_same(void *ctx, const dsq_series_key *k, const dsq_series_rec *rec)
{
    recs_check *c = ctx;
    c->bad += !dsq_summary_same(rec, &c->want[k->source - 1]);
    c->n++;
    return 0;
}

/* Summaries whose values repeat one another in every way (one value; min the
 * first, max the last; NaN and -0 kept apart from 0) come back bit for bit. */
static void test_series_values_repeating_round_trip(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    static const double pick[4] = {1.5, -0.0, NAN, 0.0};
    static dsq_series_rec put[1024];
    uint32_t f = intern(st, "loss"), run = intern(st, "run");
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (int i = 0; i < 1024; i++) { /* sum, min, max, first, last: each of pick */
        put[i] = (dsq_series_rec){.count = (uint64_t)i + 1, .sum = pick[i & 3], .min = pick[i >> 2 & 3],
                                  .max = pick[i >> 4 & 3], .first_v = pick[i >> 6 & 3],
                                  .last_v = pick[i >> 8 & 3], .first_t = -i, .last_t = i};
        dsq_series_key k = {f, run, 0, -1, (uint32_t)i + 1};
        CHECK_INT(dsq_store_series_put(st, &k, &put[i], NULL, 0, &err), 0);
    }
    CHECK_INT(dsq_store_commit(st, &err), 0);
    recs_check c = {put, 0, 0};
    CHECK_INT(dsq_store_scan_series(st, f, f, 0, on_series_same, &c, &err), 0);
    CHECK_INT(c.n, 1024);
    CHECK_INT(c.bad, 0);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

typedef struct paths {
    int n;
    char path[16][16];
} paths;

static int on_path(void *ctx, const char *path, const dsq_source_rec *rec)
{
    paths *ps = ctx;
    (void)rec;
    if (ps->n < 16)
        snprintf(ps->path[ps->n++], sizeof ps->path[0], "%s", path);
    return 0;
}

/* Keys come back in memcmp order, a shorter key before the longer one it begins:
 * paths that differ in an 8-byte word, in the 4 bytes after it, in a byte after
 * that, or only in length (the store's key comparison takes them in those steps). */
static void test_keys_in_byte_order(void)
{
    static const char *const put[] = {"/b",         "/a",         "/ab",         "/",
                                      "/abd",       "/abc",       "/abcdefgh",   "/abcdefg",
                                      "/abcdefgi1", "/abcdefgh0", "/abcdefgh1x", "/abcdefgh0123"};
    static const char *const want[] = {"/",           "/a",         "/ab",        "/abc",
                                       "/abcdefg",    "/abcdefgh",  "/abcdefgh0", "/abcdefgh0123",
                                       "/abcdefgh1x", "/abcdefgi1", "/abd",       "/b"};
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    dsq_source_rec rec;
    memset(&rec, 0, sizeof rec);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    for (size_t i = 0; i < sizeof put / sizeof put[0]; i++)
        CHECK_INT(dsq_store_source_put(st, put[i], &rec, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    paths ps = {0};
    CHECK_INT(dsq_store_scan_sources(st, on_path, &ps, &err), 0);
    CHECK_INT(ps.n, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < ps.n && i < (int)(sizeof want / sizeof want[0]); i++)
        CHECK_STR(ps.path[i], want[i]);
    for (size_t i = 0; i < sizeof put / sizeof put[0]; i++)
        CHECK_INT(dsq_store_source_find(st, put[i], &rec, &err), 1);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

/* Source records come back field for field (they are stored packed): the
 * largest values, a negative mtime, the first and last family and level. */
static void test_source_record_round_trip(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    dsq_source_rec a, b, got;
    memset(&a, 0, sizeof a);
    a.version = UINT32_MAX;
    a.id = 7;
    a.run = UINT32_MAX - 1;
    a.members = 3;
    a.size = UINT64_MAX;
    a.mtime_ns = INT64_MIN;
    a.fingerprint = 0x8000000000000001ull;
    a.bytes_decoded = 1ull << 40;
    a.lines = 12345;
    a.cut_lines = 1;
    a.events = UINT64_MAX - 1;
    a.nblocks = UINT32_MAX;
    a.errors = UINT32_MAX;
    a.flags = 1;
    a.family_lines[0] = 5;
    a.family_lines[DSQ_REC_FAMILIES - 1] = UINT64_MAX;
    a.level_lines[DSQ_REC_LEVELS - 1] = 9;
    memset(&b, 0, sizeof b); /* all zero */
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_source_put(st, "/a.log", &a, &err), 0);
    CHECK_INT(dsq_store_source_put(st, "/b.log", &b, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    CHECK_INT(dsq_store_source_find(st, "/a.log", &got, &err), 1);
    CHECK(memcmp(&got, &a, sizeof a) == 0);
    CHECK_INT(dsq_store_source_find(st, "/b.log", &got, &err), 1);
    CHECK(memcmp(&got, &b, sizeof b) == 0);
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

static void test_dict_persistence(void)
{
    char tmp[64];
    dsq_error err;
    dsq_store *st = new_store(tmp, &err);
    if (!st)
        goto done;
    CHECK_INT(intern(st, "alpha"), 1);
    CHECK_INT(intern(st, "beta"), 2);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    CHECK_INT(dsq_store_commit(st, &err), 0);
    dsq_store_close(st);

    st = open_store(tmp, 0);
    if (!st)
        goto done;
    CHECK_INT(dsq_dict_count(dsq_store_dict(st)), 2);
    CHECK_INT(intern(st, "beta"), 2);
    CHECK_INT(intern(st, "gamma"), 3);
    CHECK_INT(dsq_store_begin(st, &err), 0);
    dsq_store_abort(st); /* gamma was never committed */
    dsq_store_close(st);

    st = open_store(tmp, 1);
    if (!st)
        goto done;
    CHECK_INT(dsq_dict_count(dsq_store_dict(st)), 2);
    CHECK_INT(dsq_dict_find(dsq_store_dict(st), "gamma", 5), 0);
    dsq_store_close(st);

    /* many strings, committed in two writes */
    st = open_store(tmp, 0);
    if (!st)
        goto done;
    char buf[32];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 5000; i++) {
            int n = snprintf(buf, sizeof buf, "name-%d-%d", round, i);
            dsq_dict_intern(dsq_store_dict(st), buf, (size_t)n);
        }
        CHECK_INT(dsq_store_begin(st, &err), 0);
        CHECK_INT(dsq_store_commit(st, &err), 0);
    }
    dsq_store_close(st);
    st = open_store(tmp, 1);
    if (!st)
        goto done;
    dsq_dict *d = dsq_store_dict(st);
    CHECK_INT(dsq_dict_count(d), 10002);
    CHECK_STR(dsq_dict_str(d, 1, NULL), "alpha");
    CHECK_STR(dsq_dict_str(d, 3, NULL), "name-0-0");
    CHECK_STR(dsq_dict_str(d, 10002, NULL), "name-1-4999");
    CHECK_INT(dsq_dict_find(d, "name-1-0", 8), 5003);
    /* thousands of lookups: past the first 1024 the reader places all strings by
     * one walk of the table; every id still gives its own string and length */
    int wrong = 0;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 5000; i++) {
            size_t len = 0;
            int n = snprintf(buf, sizeof buf, "name-%d-%d", round, i);
            const char *got = dsq_dict_str(d, (uint32_t)(3 + round * 5000 + i), &len);
            wrong += strcmp(got, buf) != 0 || len != (size_t)n;
        }
    CHECK_INT(wrong, 0);
    CHECK_STR(dsq_dict_str(d, 2, NULL), "beta");
    CHECK_STR(dsq_dict_str(d, 10003, NULL), ""); /* beyond the last id */
    dsq_store_close(st);
done:
    test_tmpdir_remove(tmp);
}

static void test_second_writer_refused(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_store *a = open_store(tmp, 0);
    dsq_store_params p = {tmp, 0, 0};
    dsq_store *b = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &b, &err), DSQ_EINDEX);
    CHECK(b == NULL);
    CHECK_INT(err.code, DSQ_EINDEX);
    CHECK(strstr(err.msg, "another dsq index is writing") != NULL);
    CHECK(strstr(err.msg, tmp) != NULL);

    /* another process is refused too, and can read what the writer committed */
    dsq_error_clear(&err);
    if (a) {
        intern(a, "x");
        CHECK_INT(dsq_store_begin(a, &err), 0);
        CHECK_INT(dsq_store_commit(a, &err), 0);
        CHECK_INT(dsq_store_begin(a, &err), 0); /* hold a write open meanwhile */
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dsq_store *c = NULL;
        int refused = dsq_store_open(&p, &c, &err) == DSQ_EINDEX;
        dsq_store_params rp = {tmp, 1, 0};
        int read_ok = dsq_store_open(&rp, &c, &err) == 0 &&
                      dsq_dict_find(dsq_store_dict(c), "x", 1) == 1;
        dsq_store_close(c);
        _exit(refused && read_ok ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    dsq_store_close(a); /* aborts the open write and releases the lock */

    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &b, &err), 0);
    dsq_store_close(b);
    test_tmpdir_remove(tmp);
}

static void test_missing_or_foreign_dir(void)
{
    char tmp[64], dir[128];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    snprintf(dir, sizeof dir, "%s/no-such-index", tmp);
    dsq_store_params p = {dir, 1, 0};
    dsq_store *st = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), DSQ_EINDEX);
    CHECK(st == NULL);
    CHECK(strstr(err.msg, "no index at") != NULL);
    CHECK(strstr(err.msg, dir) != NULL);
    CHECK(strstr(err.msg, "dsq index") != NULL); /* says how to make one */

    /* an existing directory that holds no index */
    p.dir = tmp;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), DSQ_EINDEX);
    CHECK(st == NULL);
    CHECK(strstr(err.msg, tmp) != NULL);

    /* a writer cannot create its directory under a file */
    CHECK_INT(test_write_file(tmp, "file", "x", 1), 0);
    snprintf(dir, sizeof dir, "%s/file/idx", tmp);
    dsq_store_params w = {dir, 0, 0};
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&w, &st, &err), DSQ_EINDEX);
    CHECK(strstr(err.msg, "cannot create") != NULL);
    dsq_store_close(NULL);
    test_tmpdir_remove(tmp);
}

static int count_block(void *ctx, const dsq_block_key *k, const void *data, size_t n)
{
    (void)k, (void)data, (void)n;
    ++*(int *)ctx;
    return 0;
}

/* An environment created by an indexer killed before its first commit (no tables
 * yet) reads as an empty index, not as a broken one. */
/* A reader of dir opens it and finds nothing in it. */
static void expect_reads_empty(const char *dir)
{
    dsq_store_params p = {dir, 1, 0};
    dsq_store *st = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&p, &st, &err), 0);
    int n = 0;
    dsq_source_rec rec;
    if (st) {
        CHECK_INT(dsq_store_scan_blocks(st, 0, count_block, &n, &err), 0);
        CHECK_INT(n, 0);
        CHECK_INT(dsq_store_source_find(st, "/x", &rec, &err), 0);
    }
    dsq_store_close(st);
}

static void test_killed_before_first_commit_reads_empty(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    MDB_env *env = NULL;
    CHECK_INT(mdb_env_create(&env), 0);
    CHECK_INT(mdb_env_open(env, tmp, 0, 0644), 0);
    mdb_env_close(env);
    expect_reads_empty(tmp);
    test_tmpdir_remove(tmp);
}

/* Killed earlier still: data.mdb created but its meta pages not (all) written (0
 * bytes, or one page). Readers see an empty index; a writer starts it afresh. */
static void test_killed_before_meta_pages_reads_empty(void)
{
    static const size_t sizes[] = {0, 4096};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char tmp[64], path[128];
        CHECK_INT(test_tmpdir_new(tmp), 0);
        snprintf(path, sizeof path, "%s/data.mdb", tmp);
        FILE *f = fopen(path, "wb");
        for (size_t k = 0; f && k < sizes[i]; k++)
            fputc(0, f);
        if (f)
            fclose(f);
        expect_reads_empty(tmp);
        dsq_error err;
        dsq_error_clear(&err);
        dsq_store *st = open_store(tmp, 0); /* a writer starts it afresh */
        CHECK(st != NULL);
        if (st) {
            CHECK_INT(intern(st, "alpha"), 1);
            CHECK_INT(dsq_store_begin(st, &err), 0);
            CHECK_INT(dsq_store_commit(st, &err), 0);
        }
        dsq_store_close(st);
        test_tmpdir_remove(tmp);
    }
}

/* An index written with another schema version is refused, with a hint. */
static void test_schema_mismatch(void)
{
    char tmp[64];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    dsq_store *st = open_store(tmp, 0);
    dsq_store_close(st);
    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    MDB_dbi meta;
    unsigned char v2[4] = {0, 0, 0, DSQ_STORE_SCHEMA + 1}; /* a newer dsq's index */
    MDB_val k = {6, "schema"}, v = {4, v2};
    CHECK_INT(mdb_env_create(&env), 0);
    CHECK_INT(mdb_env_set_maxdbs(env, 16), 0);
    CHECK_INT(mdb_env_open(env, tmp, 0, 0644), 0);
    CHECK_INT(mdb_txn_begin(env, NULL, 0, &txn), 0);
    CHECK_INT(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    CHECK_INT(mdb_put(txn, meta, &k, &v, 0), 0);
    CHECK_INT(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    for (int ro = 0; ro < 2; ro++) {
        dsq_store_params p = {tmp, ro, 0};
        dsq_error err;
        dsq_error_clear(&err);
        st = NULL;
        CHECK_INT(dsq_store_open(&p, &st, &err), DSQ_EINDEX);
        CHECK(st == NULL);
        char want[64];
        snprintf(want, sizeof want, "schema %d, expected %d", DSQ_STORE_SCHEMA + 1, DSQ_STORE_SCHEMA);
        CHECK(strstr(err.msg, want) != NULL);
    }
    test_tmpdir_remove(tmp);
}

static void test_key_pack(void)
{
    const dsq_block_key keys[] = {
        {0, 0, -1, INT64_MIN, 0, 0},        {0, 0, -1, -1, 0, 0},
        {0, 0, -1, 0, 0, 0},                {0, 0, -1, INT64_MAX, 0, 0},
        {0, 0, 0, INT64_MIN, 0, 0},         {0, 0, INT32_MAX - 1, 0, 0, 0},
        {0, 1, -1, 0, 0, 0},                {1, 0, -1, 0, 0, 0},
        {1, 0, -1, 0, 0, 1},                {1, 0, -1, 0, 1, 0},
        {UINT32_MAX, UINT32_MAX, INT32_MAX - 1, INT64_MAX, UINT32_MAX, UINT32_MAX},
    };
    size_t n = sizeof keys / sizeof keys[0];
    unsigned char prev[DSQ_BLOCK_KEY_LEN], cur[DSQ_BLOCK_KEY_LEN];
    for (size_t i = 0; i < n; i++) {
        dsq_block_key_pack(&keys[i], cur);
        dsq_block_key back;
        dsq_block_key_unpack(cur, &back);
        CHECK(key_is(&back, keys[i].run, keys[i].host, keys[i].rank, keys[i].t_us,
                     keys[i].source, keys[i].seq));
        if (i > 0)
            CHECK(memcmp(prev, cur, DSQ_BLOCK_KEY_LEN) < 0); /* bytes sort like the tuple */
        memcpy(prev, cur, sizeof prev);
    }
    dsq_block_key k = {0x01020304, 0, -1, 0, 0, 0};
    dsq_block_key_pack(&k, cur);
    CHECK(cur[0] == 1 && cur[1] == 2 && cur[2] == 3 && cur[3] == 4); /* big-endian */
    CHECK(cur[8] == 0 && cur[11] == 0);                              /* rank -1 packs as 0 */
}

TEST_MAIN(T(test_write_reopen_scan), T(test_blocks_put_in_key_order_after_the_end), T(test_big_write_reopens_the_environment), T(test_parts_readers_see_the_last_commit), T(test_chunks_packed_by_size), T(test_series_table_filled_in_key_order), T(test_series_sort_radix_as_merge), T(test_new_runs_appended_and_scanned_by_field), T(test_scan_stops), T(test_source_drop),
          T(test_dict_persistence), T(test_second_writer_refused), T(test_missing_or_foreign_dir),
          T(test_killed_before_first_commit_reads_empty), T(test_killed_before_meta_pages_reads_empty), T(test_schema_mismatch), T(test_series_round_trip_and_drop),
          T(test_series_own_pairs), T(test_writer_lookups_let_go_of_the_map),
          T(test_series_own_pairs_zero_runs), T(test_series_last_put_wins_and_drop_sees_pending),
          T(test_series_groups_across_sources), T(test_series_groups_split_and_merge), T(test_series_group_damaged_packed_record),
          T(test_series_after_full_record_not_merged), T(test_series_scan_inside_a_visit),
          T(test_attrs_held_last_wins_scanned_and_dropped),
          T(test_drop_lists_fields_times_pairs), T(test_series_many_in_one_write_last_wins), T(test_runroll_merges_series_in_key_order),
          T(test_runroll_stale_until_its_run_goes_quiet),
          T(test_runroll_of_new_run_same_as_recomputed),
          T(test_series_values_repeating_round_trip), T(test_source_record_round_trip), T(test_keys_in_byte_order),
          T(test_key_pack))
