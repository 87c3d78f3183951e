/* Shard assignment: parsing K/N, the same shard for the same name forever (fixed
 * values), every run in exactly one shard and the shards about even, and the
 * indexer keeping exactly its shard's runs (whole runs, every file of them). */
#include <stdlib.h>
#include <sys/stat.h>

#include "dict.h"
#include "dsq/dsq.h"
#include "indexer.h"
#include "shard.h"
#include "test.h"
#include "tmpdir.h"

static void test_parse(void)
{
    uint32_t k = 99, n = 99;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_shard_parse("0/1", &k, &n, &err), 0);
    CHECK_INT(k, 0);
    CHECK_INT(n, 1);
    CHECK_INT(dsq_shard_parse("7/8", &k, &n, &err), 0);
    CHECK_INT(k, 7);
    CHECK_INT(n, 8);
    CHECK_INT(dsq_shard_parse("999999/1000000", &k, &n, &err), 0);
    static const char *const bad[] = {"8/8", "9/8", "0/0", "1", "", "/", "1/", "/2", "a/2",
                                      "1/b", "-1/4", "1/-4", "+1/4", " 1/4", "1/4 ", "1/4/5",
                                      "0/1000001", "99999999999999999999/2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        k = n = 77;
        dsq_error_clear(&err);
        if (dsq_shard_parse(bad[i], &k, &n, &err) != DSQ_EUSAGE)
            fprintf(stderr, "accepted --shard '%s'\n", bad[i]), test_failures++;
        CHECK(err.msg[0] != 0);
        CHECK_INT(k, 77); /* untouched on error */
    }
    dsq_error_clear(&err);
    dsq_shard_parse("4/4", &k, &n, &err);
    CHECK(strstr(err.msg, "0 to 3") != NULL);
    CHECK_INT(dsq_shard_parse(NULL, &k, &n, &err), DSQ_EUSAGE);
}

/* Pinned values: if these change, every existing shard index is split wrongly. */
static void test_stable(void)
{
    static const struct { const char *run; uint32_t n, want; } pin[] = {
        {"llama7b-zero3", 2, 0}, {"llama7b-zero3", 3, 2}, {"llama7b-zero3", 8, 6},
        {"llama7b-zero3", 1000, 342}, {"gpt2-zero2", 8, 2}, {"bert-baseline", 8, 7},
        {"bert-baseline", 2, 1}, {"run-00000", 1000, 803}, {"run-00001", 1000, 829},
        {"", 1000, 986},
    };
    for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++)
        CHECK_INT(dsq_shard_of(pin[i].run, strlen(pin[i].run), pin[i].n), pin[i].want);
    CHECK_INT(dsq_shard_of("anything", 8, 1), 0);
    CHECK_INT(dsq_shard_of("anything", 8, 0), 0);
    /* the name's bytes only: a longer buffer does not matter */
    CHECK_INT(dsq_shard_of("gpt2-zero2-extra", 10, 8), 2);
    CHECK(dsq_hash64("x", 1, DSQ_SHARD_SEED) != dsq_hash64("x", 1, 0));
}

/* 80,000 names into 8 shards: each in one shard below N, every shard within 5% of
 * the mean; and a name's shard for N = 4 is its shard for N = 8 modulo 4. */
static void test_every_run_one_shard(void)
{
    enum { RUNS = 80000, N = 8 };
    unsigned count[N] = {0};
    char name[32];
    for (int i = 0; i < RUNS; i++) {
        int len = snprintf(name, sizeof name, "run-%05d", i);
        uint32_t s = dsq_shard_of(name, (size_t)len, N);
        CHECK(s < N);
        count[s < N ? s : 0]++;
        CHECK_INT(dsq_shard_of(name, (size_t)len, N), s);
        CHECK_INT(dsq_shard_of(name, (size_t)len, 4), s % 4);
    }
    unsigned total = 0;
    for (int s = 0; s < N; s++) {
        total += count[s];
        CHECK(count[s] > RUNS / N * 95 / 100 && count[s] < RUNS / N * 105 / 100);
    }
    CHECK_INT(total, RUNS);
}

static char tmp[64];

static void write_run(const char *run, int files)
{
    char path[512], text[256];
    snprintf(path, sizeof path, "%s/archive/%s", tmp, run);
    CHECK_INT(mkdir(path, 0755), 0);
    for (int f = 0; f < files; f++) {
        int len = snprintf(text, sizeof text,
                           "[2024-07-20 21:30:0%d,202] [INFO] [utils.py:782:see_memory_usage] MA "
                           "1.0 GB         Max_MA %d GB         CA 2.0 GB         Max_CA 3 GB \n",
                           f, f + 1);
        snprintf(path, sizeof path, "archive/%s/rank%d.log", run, f);
        CHECK_INT(test_write_file(tmp, path, text, (size_t)len), 0);
    }
}

/* Indexes a 12-run archive as 3 shards: each store holds exactly the runs that
 * hash to it, with all their files (other runs' directories are not walked);
 * re-running a shard changes nothing. */
static void test_indexer_keeps_its_shard(void)
{
    enum { RUNS = 12, N = 3 };
    char run[RUNS][16], path[256];
    CHECK_INT(test_tmpdir_new(tmp), 0);
    snprintf(path, sizeof path, "%s/archive", tmp);
    CHECK_INT(mkdir(path, 0755), 0);
    for (int r = 0; r < RUNS; r++) {
        snprintf(run[r], sizeof run[r], "job-%d", r);
        write_run(run[r], 1 + r % 3);
    }
    int seen[RUNS] = {0};
    uint64_t files = 0;
    for (uint32_t k = 0; k < N; k++) {
        for (int pass = 0; pass < 2; pass++) {
            char db[256];
            snprintf(db, sizeof db, "%s/shard-%u", tmp, k);
            dsq_store_params sp = {db, 0, 0};
            dsq_store *st = NULL;
            dsq_indexer *ix = NULL;
            dsq_error err;
            dsq_error_clear(&err);
            CHECK_INT(dsq_store_open(&sp, &st, &err), 0);
            dsq_indexer_params ip = {.store = st, .db_dir = db, .shard_k = k, .shard_n = N};
            CHECK_INT(dsq_indexer_new(&ip, &ix, &err), 0);
            CHECK_INT(dsq_indexer_add(ix, path, &err), 0);
            const dsq_index_stats *s = dsq_indexer_stats(ix);
            uint64_t mine = 0, mine_runs = 0;
            for (int r = 0; r < RUNS; r++) {
                int here = dsq_dict_find(dsq_store_dict(st), run[r], strlen(run[r])) != 0;
                CHECK_INT(here, dsq_shard_of(run[r], strlen(run[r]), N) == k);
                seen[r] += here && pass == 0;
                mine += here ? (uint64_t)(1 + r % 3) : 0;
                mine_runs += (uint64_t)here;
            }
            CHECK_INT(s->files_seen, mine);
            CHECK_INT(pass == 0 ? s->files_indexed : s->files_unchanged, mine);
            CHECK_INT(s->other_shard, RUNS - mine_runs); /* whole directories left */
            files += pass == 0 ? s->files_indexed : 0;
            dsq_indexer_free(ix);
            dsq_store_close(st);
        }
    }
    for (int r = 0; r < RUNS; r++)
        CHECK_INT(seen[r], 1);
    CHECK_INT(files, 24);
    test_tmpdir_remove(tmp);
}

TEST_MAIN(T(test_parse), T(test_stable), T(test_every_run_one_shard),
          T(test_indexer_keeps_its_shard))
