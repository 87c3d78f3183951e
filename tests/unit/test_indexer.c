/* Indexer end to end on a small archive made in a temp dir: run names from the
 * tree, all container kinds, the numbers a query gives back, re-indexing that
 * skips unchanged files and never duplicates changed ones, a damaged file reported
 * with what was read before kept, the index directory never indexed itself,
 * worker threads (jobs > 1) giving the same index as one thread, small files
 * sharing commits with or without workers, also when the map grows meanwhile, and
 * a file of many ranks indexed in bounded memory. */
#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zstd.h>

#include "dsq/dsq.h"
#include "indexer.h"
#include "query.h"
#include "table.h"
#include "test.h"
#include "tmpdir.h"

static char tmp[64];

typedef struct problems {
    int n;
    dsq_error last;
} problems;

static void on_problem(void *ctx, const dsq_error *err)
{
    problems *p = ctx;
    p->n++;
    p->last = *err;
}

/* A DeepSpeed memory report (3 lines) with the given Max_MA. */
static int report(char *out, size_t cap, const char *label, double max_ma)
{
    return snprintf(out, cap,
                    "[2024-07-20 21:30:05,202] [INFO] [utils.py:781:see_memory_usage] %s\n"
                    "[2024-07-20 21:30:05,203] [INFO] [utils.py:782:see_memory_usage] MA 1.0 GB "
                    "        Max_MA %g GB         CA 2.0 GB         Max_CA 3 GB \n"
                    "[2024-07-20 21:30:05,204] [INFO] [utils.py:789:see_memory_usage] CPU Virtual "
                    "Memory:  used = 100.5 GB, percent = 10.1%%\n",
                    label, max_ma);
}

static void mkdirs(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    CHECK_INT(mkdir(path, 0755), 0);
}

static void write_log(const char *rel, const double *peaks, int n)
{
    char text[8192];
    size_t len = 0;
    len += (size_t)snprintf(text, sizeof text, "starting\n");
    for (int i = 0; i < n; i++)
        len += (size_t)report(text + len, sizeof text - len, "step", peaks[i]);
    CHECK_INT(test_write_file(tmp, rel, text, len), 0);
}

static void write_zst(const char *rel, const double *peaks, int n)
{
    char text[8192];
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)report(text + len, sizeof text - len, "zst", peaks[i]);
    char z[8192];
    size_t zn = ZSTD_compress(z, sizeof z, text, len, 3);
    CHECK(!ZSTD_isError(zn));
    CHECK_INT(test_write_file(tmp, rel, z, zn), 0);
}

static void write_tgz(const char *rel, const char *const *names, const double *peaks, int n)
{
    char path[256], text[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    CHECK_INT(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (int i = 0; i < n; i++) {
        int len = report(text, sizeof text, names[i], peaks[i]);
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, len);
        CHECK_INT(archive_write_header(a, e), ARCHIVE_OK);
        CHECK_INT(archive_write_data(a, text, (size_t)len), len);
        archive_entry_free(e);
    }
    CHECK_INT(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

typedef struct ctx {
    dsq_store *st;
    dsq_indexer *ix;
    problems pr;
} ctx;

static int open_ctx_jobs(ctx *c, const char *db, const char *run, unsigned jobs)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", tmp, db);
    memset(c, 0, sizeof *c);
    dsq_store_params sp = {dir, 0, 0};
    dsq_error err;
    dsq_error_clear(&err);
    if (dsq_store_open(&sp, &c->st, &err) != 0)
        return -1;
    dsq_indexer_params ip = {.store = c->st, .run = run, .db_dir = dir, .problem = on_problem,
                             .ctx = &c->pr, .jobs = jobs};
    return dsq_indexer_new(&ip, &c->ix, &err);
}

static int open_ctx(ctx *c, const char *db, const char *run)
{
    return open_ctx_jobs(c, db, run, 1);
}

static void close_ctx(ctx *c)
{
    dsq_indexer_free(c->ix);
    dsq_store_close(c->st);
}

static int add(ctx *c, const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    dsq_error err;
    dsq_error_clear(&err);
    int rc = dsq_indexer_add(c->ix, path, &err);
    if (rc)
        fprintf(stderr, "index %s: %s\n", rel, err.msg);
    return rc;
}

static void expect_query(dsq_store *st, const char *text, const char *csv)
{
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    dsq_result *r = NULL;
    if (dsq_query_parse(text, &q, &err) || dsq_query_run(&q, &st, 1, &r, &err)) {
        fprintf(stderr, "\"%s\": %s\n", text, err.msg);
        test_failures++;
        return;
    }
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    dsq_result_print(r, f, DSQ_FMT_CSV);
    fclose(f);
    if (strcmp(out, csv) != 0) {
        fprintf(stderr, "\"%s\": got\n%s---\nexpected\n%s---\n", text, out, csv);
        test_failures++;
    }
    free(out);
    dsq_result_free(r);
}

static void make_archive(void)
{
    mkdirs("archive");
    mkdirs("archive/llama7b");
    const double l9[] = {6.54, 19.02}, l10[] = {21.37}, b[] = {1.5}, g[] = {3.25, 2};
    write_log("archive/llama7b/gpu009.log", l9, 2);
    write_zst("archive/llama7b/gpu010.log.zst", l10, 1);
    write_log("archive/bert.log", b, 1);
    const char *const names[] = {"gpt2/rank0.log", "gpt2/rank1.log"};
    write_tgz("archive/gpt2.tar.gz", names, g, 2);
}

static void test_index_and_query(void)
{
    make_archive();
    ctx c;
    CHECK_INT(open_ctx(&c, "db", NULL), 0);
    CHECK_INT(add(&c, "archive"), 0);
    const dsq_index_stats *s = dsq_indexer_stats(c.ix);
    CHECK_INT(s->files_seen, 4);
    CHECK_INT(s->files_indexed, 4);
    CHECK_INT(s->files_unchanged, 0);
    CHECK_INT(s->files_failed, 0);
    CHECK_INT(s->members, 5);
    CHECK_INT(s->events, 8); /* 6 reports, a rank_lines event for each gpt2 rank file */
    CHECK_INT(s->lines, 2 + 6 * 3);
    CHECK_INT(c.pr.n, 0);
    expect_query(c.st, "max Max_MA by run", "run,max Max_MA\nbert,1.5\ngpt2,3.25\nllama7b,21.37\n");
    expect_query(c.st, "count Max_MA, max CPU_percent by run",
                 "run,count Max_MA,max CPU_percent\nbert,1,10.1\ngpt2,2,10.1\nllama7b,3,10.1\n");
    expect_query(c.st, "count by label where run = gpt2",
                 "label,count\n-,2\ngpt2/rank0.log,1\ngpt2/rank1.log,1\n");
    char want[1024];
    snprintf(want, sizeof want,
             "file,count\n%s/archive/llama7b/gpu009.log,2\n%s/archive/llama7b/gpu010.log.zst,1\n",
             tmp, tmp);
    expect_query(c.st, "count by file where run = llama7b", want);

    /* unchanged files are skipped, nothing doubles */
    CHECK_INT(add(&c, "archive"), 0);
    CHECK_INT(s->files_seen, 8);
    CHECK_INT(s->files_indexed, 4);
    CHECK_INT(s->files_unchanged, 4);
    CHECK_INT(s->events, 8);
    expect_query(c.st, "count Max_MA by run", "run,count Max_MA\nbert,1\ngpt2,2\nllama7b,3\n");

    /* a grown file is re-indexed in place of the old one */
    const double b2[] = {1.5, 7.75};
    write_log("archive/bert.log", b2, 2);
    CHECK_INT(add(&c, "archive"), 0);
    CHECK_INT(s->files_indexed, 5);
    CHECK_INT(s->files_unchanged, 7);
    expect_query(c.st, "count Max_MA by run", "run,count Max_MA\nbert,2\ngpt2,2\nllama7b,3\n");
    expect_query(c.st, "max Max_MA where run = bert", "max Max_MA\n7.75\n");
    /* and a shrunk one too */
    const double b3[] = {0.5};
    write_log("archive/bert.log", b3, 1);
    CHECK_INT(add(&c, "archive/bert.log"), 0);
    expect_query(c.st, "count Max_MA, max Max_MA by run",
                 "run,count Max_MA,max Max_MA\nbert,1,0.5\ngpt2,2,3.25\nllama7b,3,21.37\n");
    close_ctx(&c);

    /* what was committed is there for a read-only reader */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/db", tmp);
    dsq_store_params rp = {dir, 1, 0};
    dsq_store *ro = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&rp, &ro, &err), 0);
    if (ro)
        expect_query(ro, "count Max_MA by run", "run,count Max_MA\nbert,1\ngpt2,2\nllama7b,3\n");
    dsq_store_close(ro);
}

static void test_run_override_and_db_inside(void)
{
    mkdirs("tree");
    mkdirs("tree/a");
    const double p[] = {4};
    write_log("tree/a/x.log", p, 1);
    write_log("tree/y.log", p, 1);
    ctx c;
    CHECK_INT(open_ctx(&c, "tree/idx", "forced"), 0); /* the index sits inside the tree */
    CHECK_INT(add(&c, "tree"), 0);
    const dsq_index_stats *s = dsq_indexer_stats(c.ix);
    CHECK_INT(s->files_seen, 2); /* not the index's own files */
    CHECK_INT(s->files_indexed, 2);
    expect_query(c.st, "count Max_MA by run", "run,count Max_MA\nforced,2\n");
    close_ctx(&c);
}

static void test_damaged_file(void)
{
    mkdirs("bad");
    /* 1000 reports: several zstd blocks, so the ones before the cut decode */
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap), *z = malloc(cap);
    for (int i = 0; i < 1000; i++)
        len += (size_t)report(text + len, cap - len, "r", i);
    size_t zn = ZSTD_compress(z, cap, text, len, 1);
    CHECK(!ZSTD_isError(zn));
    CHECK_INT(test_write_file(tmp, "bad/cut.log.zst", z, zn - 20), 0);
    /* a gzip header, then deflate data that does not decode */
    const char gz[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff garbage";
    CHECK_INT(test_write_file(tmp, "bad/broken.gz", gz, sizeof gz - 1), 0);
    free(text);
    free(z);
    ctx c;
    CHECK_INT(open_ctx(&c, "db-bad", NULL), 0);
    CHECK_INT(add(&c, "bad"), 0); /* per-file problems do not fail the run */
    const dsq_index_stats *s = dsq_indexer_stats(c.ix);
    CHECK_INT(s->files_seen, 2);
    CHECK(c.pr.n >= 2);
    CHECK(s->members_failed + s->files_failed >= 2);
    CHECK(strstr(c.pr.last.file, "bad/") != NULL);
    /* the events before the damage are kept */
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    dsq_result *r = NULL;
    CHECK_INT(dsq_query_parse("count Max_MA where run = cut", &q, &err), 0);
    CHECK_INT(dsq_query_run(&q, &c.st, 1, &r, &err), 0);
    if (r && dsq_result_rows(r) == 1) {
        double kept = dsq_result_cell(r, 0, 0)->v;
        CHECK(kept > 0 && kept < 1000);
    } else {
        CHECK(0);
    }
    dsq_result_free(r);
    /* a missing path is a problem, not a failure */
    int before = c.pr.n;
    CHECK_INT(add(&c, "bad/no-such-file.log"), 0);
    CHECK_INT(c.pr.n, before + 1);
    close_ctx(&c);
}

/* The answer of a query as CSV (caller frees), or NULL. */
static char *answer(dsq_store *st, const char *text)
{
    dsq_query q;
    dsq_error err;
    dsq_error_clear(&err);
    dsq_result *r = NULL;
    if (dsq_query_parse(text, &q, &err) || dsq_query_run(&q, &st, 1, &r, &err))
        return NULL;
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    dsq_result_print(r, f, DSQ_FMT_CSV);
    fclose(f);
    dsq_result_free(r);
    return out;
}

static void expect_same_stats(const dsq_index_stats *a, const dsq_index_stats *b)
{
    CHECK_INT(b->files_indexed, a->files_indexed);
    CHECK_INT(b->members, a->members);
    CHECK_INT(b->members_failed, a->members_failed);
    CHECK_INT(b->bytes_in, a->bytes_in);
    CHECK_INT(b->bytes_decoded, a->bytes_decoded);
    CHECK_INT(b->lines, a->lines);
    CHECK_INT(b->events, a->events);
}

/* Worker threads (jobs > 1) index the same as one thread: the same numbers, the
 * same problems (the last one reported is the same: walk order), the same answers;
 * two adds on one indexer, and a re-run that skips everything. */
static void test_jobs_same_index(void)
{
    ctx one, many;
    CHECK_INT(open_ctx_jobs(&one, "db-j1", NULL, 1), 0);
    CHECK_INT(open_ctx_jobs(&many, "db-j3", NULL, 3), 0);
    for (int pass = 0; pass < 2; pass++) {
        CHECK_INT(add(&one, "archive"), 0);
        CHECK_INT(add(&one, "bad"), 0);
        CHECK_INT(add(&many, "archive"), 0);
        CHECK_INT(add(&many, "bad"), 0);
        const dsq_index_stats *a = dsq_indexer_stats(one.ix), *b = dsq_indexer_stats(many.ix);
        CHECK_INT(b->files_seen, a->files_seen);
        CHECK_INT(b->files_unchanged, a->files_unchanged);
        CHECK_INT(b->files_failed, a->files_failed);
        expect_same_stats(a, b);
        CHECK_INT(many.pr.n, one.pr.n);
        CHECK_STR(many.pr.last.file, one.pr.last.file);
        CHECK_STR(many.pr.last.msg, one.pr.last.msg);
    }
    CHECK(dsq_indexer_stats(many.ix)->files_unchanged >= 5); /* the second pass skipped them */
    close_ctx(&one);
    close_ctx(&many);
    /* answers, from indexes opened for reading */
    static const char *const queries[] = {"max Max_MA, count Max_MA by run",
                                          "count by run, host, rank, kind",
                                          "p50 Max_MA, sum MA by run, file"};
    dsq_store *st[2] = {NULL, NULL};
    const char *dbs[2] = {"db-j1", "db-j3"};
    for (int i = 0; i < 2; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", tmp, dbs[i]);
        dsq_store_params sp = {dir, 1, 0};
        dsq_error err;
        dsq_error_clear(&err);
        CHECK_INT(dsq_store_open(&sp, &st[i], &err), 0);
    }
    for (size_t k = 0; st[0] && st[1] && k < sizeof queries / sizeof queries[0]; k++) {
        char *x = answer(st[0], queries[k]), *y = answer(st[1], queries[k]);
        CHECK(x && y && strlen(x) > 20);
        if (x && y)
            CHECK_STR(y, x);
        free(x);
        free(y);
    }
    dsq_store_close(st[0]);
    dsq_store_close(st[1]);
}

/* Writes text to tmp/rel. */
static void write_text(const char *rel, const char *text)
{
    CHECK_INT(test_write_file(tmp, rel, text, strlen(text)), 0);
}

/* Worker threads number the index's strings as one thread does: each file's new
 * strings while it is written, in walk order (its run's name first), whichever
 * worker read it and whatever it read before. Runs b and d name a host on a line
 * that gives no event (nothing in the file uses its id); d is the walk's last file,
 * so its worker reads no file after it. */
static void test_jobs_same_dictionary(void)
{
    mkdirs("dictorder");
    static const char *const runs[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "dictorder/%s", runs[i]);
        mkdirs(rel);
    }
    const double a[] = {1.5, 2.5}, c[] = {4};
    write_log("dictorder/a/gpu001.log", a, 2);
    write_text("dictorder/b/nodes.log", "node-b7:11:12 [0] NCCL INFO  0 : GPU/0 GPU/1\n");
    write_log("dictorder/c/gpu003.log", c, 1);
    write_text("dictorder/c/rank1.log", "[rank1]: RuntimeError: CUDA out of memory\n");
    write_text("dictorder/d/nodes.log", "node-d7:11:12 [0] NCCL INFO  0 : GPU/0 GPU/1\n");
    static const struct { const char *db; unsigned jobs; } ways[] = {
        {"dict-j1", 1}, {"dict-j2", 2}, {"dict-j3", 3}};
    dsq_store *st[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        ctx x;
        CHECK_INT(open_ctx_jobs(&x, ways[k].db, NULL, ways[k].jobs), 0);
        CHECK_INT(add(&x, "dictorder"), 0);
        close_ctx(&x);
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", tmp, ways[k].db);
        dsq_store_params sp = {dir, 1, 0};
        dsq_error err;
        dsq_error_clear(&err);
        CHECK_INT(dsq_store_open(&sp, &st[k], &err), 0);
    }
    const dsq_dict *one = st[0] ? dsq_store_dict(st[0]) : NULL;
    CHECK(one && dsq_dict_find(one, "node-d7", 7) != 0);
    for (int k = 1; one && k < 3; k++) {
        const dsq_dict *d = st[k] ? dsq_store_dict(st[k]) : NULL;
        if (!d)
            continue;
        CHECK_INT(dsq_dict_count(d), dsq_dict_count(one));
        for (uint32_t id = 1; id <= dsq_dict_count(one) && id <= dsq_dict_count(d); id++) {
            if (strcmp(dsq_dict_str(d, id, NULL), dsq_dict_str(one, id, NULL)) == 0)
                continue;
            fprintf(stderr, "-j %u: id %u is \"%s\", with -j 1 \"%s\"\n", ways[k].jobs, id,
                    dsq_dict_str(d, id, NULL), dsq_dict_str(one, id, NULL));
            test_failures++;
            break;
        }
    }
    for (int k = 0; k < 3; k++)
        dsq_store_close(st[k]);
}

/* An archive of 100 runs of one small file each, and a damaged file among them. */
static void make_many(void)
{
    char rel[64];
    mkdirs("many");
    for (int i = 0; i < 100; i++) {
        snprintf(rel, sizeof rel, "many/run-%03d", i);
        mkdirs(rel);
        snprintf(rel, sizeof rel, "many/run-%03d/gpu001.log", i);
        const double peak[] = {i + 0.5};
        write_log(rel, peak, 1);
    }
    const char gz[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff garbage";
    CHECK_INT(test_write_file(tmp, "many/run-050/broken.gz", gz, sizeof gz - 1), 0);
}

/* Indexes "many" into db with that many threads; returns the commits it took. */
static uint64_t index_many(const char *db, unsigned jobs, dsq_index_stats *st)
{
    ctx c;
    CHECK_INT(open_ctx_jobs(&c, db, NULL, jobs), 0);
    CHECK_INT(add(&c, "many"), 0);
    uint64_t commits = dsq_store_commits(c.st);
    *st = *dsq_indexer_stats(c.ix);
    CHECK(c.pr.n >= 1); /* the damaged file */
    close_ctx(&c);
    return commits;
}

static dsq_store *open_read(const char *db)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", tmp, db);
    dsq_store_params sp = {dir, 1, 0};
    dsq_store *st = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_store_open(&sp, &st, &err), 0);
    return st;
}

/* Indexes a and b give the same answers, each longer than `least` bytes (a line
 * per run, host or rank), to the queries. */
static void expect_same_answers_of(const char *a, const char *b, const char *const *queries,
                                   size_t n, size_t least)
{
    dsq_store *sa = open_read(a), *sb = open_read(b);
    for (size_t k = 0; sa && sb && k < n; k++) {
        char *x = answer(sa, queries[k]), *y = answer(sb, queries[k]);
        CHECK(x && y && strlen(x) > least);
        if (x && y)
            CHECK_STR(y, x);
        free(x);
        free(y);
    }
    dsq_store_close(sa);
    dsq_store_close(sb);
}

/* Indexes a and b answer the same. */
static void expect_same_answers(const char *a, const char *b)
{
    static const char *const queries[] = {"count, sum Max_MA by run",
                                          "count by run, host, kind, file"};
    expect_same_answers_of(a, b, queries, sizeof queries / sizeof queries[0], 500);
}

/* Small files share commits with one thread as with workers (a commit costs far
 * more than a small file's writes): 101 files take a handful of commits, not one
 * each. When the map fills with a group open (DSQ_MAP_BYTES: a 64 KiB first map),
 * the group is indexed again file by file (more commits) and the index and its
 * numbers are those of a clean run. */
static void test_small_files_share_commits(void)
{
    make_many();
    dsq_index_stats one, many, grown;
    uint64_t c1 = index_many("db-group1", 1, &one);
    uint64_t c3 = index_many("db-group3", 3, &many);
    CHECK_INT(one.files_indexed + one.files_failed, 101);
    CHECK_INT(one.events, 100); /* a memory report per file */
    CHECK(c1 >= 1 && c1 <= 101 / 16);
    CHECK(c3 >= 1 && c3 <= 101 / 16);
    expect_same_stats(&one, &many);
    expect_same_answers("db-group1", "db-group3");
    setenv("DSQ_MAP_BYTES", "65536", 1);
    uint64_t cg = index_many("db-grown1", 1, &grown);
    unsetenv("DSQ_MAP_BYTES");
    CHECK(cg > c1); /* files of a group lost to the full map were committed one by one */
    expect_same_stats(&one, &grown);
    expect_same_answers("db-group1", "db-grown1");
    dsq_store *st = open_read("db-grown1");
    if (st)
        expect_query(st, "count Max_MA, sum Max_MA", "count Max_MA,sum Max_MA\n100,5000\n");
    dsq_store_close(st);
}

typedef struct prog {
    uint64_t size;    /* the file's size on disk */
    uint64_t last_in; /* bytes_in of the call before */
    int inside;       /* calls while the file was under way with 0 < bytes_in < size */
    int backwards;    /* calls whose bytes_in was below the one before */
} prog;

static void on_progress(void *arg, const dsq_index_stats *st, const char *path)
{
    prog *p = arg;
    (void)path;
    if (st->files_indexed == 0 && st->bytes_in > 0 && st->bytes_in < p->size)
        p->inside++;
    if (st->bytes_in < p->last_in)
        p->backwards++;
    p->last_in = st->bytes_in;
}

/* Inside one big compressed file the progress says how much of it was read (the
 * compressed bytes), so a time left can be given before it ends: with one thread,
 * with workers, and with the decoder thread reading ahead. */
static void test_progress_inside_one_file(void)
{
    size_t cap = 6 << 20, len = 0;
    char *text = malloc(cap), *z = malloc(cap);
    uint32_t r = 12345;
    for (int i = 0; len + 200 < cap - (1 << 20); i++) {
        r = r * 1103515245u + 12345u;
        len += (size_t)snprintf(text + len, cap - len,
                                "[2024-07-20 21:%02d:%02d,%03u] [INFO] [logging.py:96:log_dist] "
                                "[Rank %u] step=%d, skipped=0, lr=[%u.%ue-05], mom=[(0.9, 0.999)]\n",
                                i / 60 % 60, i % 60, r % 1000, r >> 28, i, (r >> 8) % 10, r >> 12);
    }
    size_t zn = ZSTD_compress(z, cap, text, len, 1);
    CHECK(!ZSTD_isError(zn));
    CHECK_INT(test_write_file(tmp, "big.log.zst", z, zn), 0);
    static const struct { unsigned jobs; const char *ahead; } ways[] = {
        {1, "never"}, {2, "never"}, {2, "always"}};
    for (size_t k = 0; k < sizeof ways / sizeof ways[0]; k++) {
        char db[32], dir[256];
        snprintf(db, sizeof db, "db-progress-%zu", k);
        snprintf(dir, sizeof dir, "%s/%s", tmp, db);
        setenv("DSQ_READAHEAD", ways[k].ahead, 1);
        dsq_store *st = NULL;
        dsq_indexer *ix = NULL;
        dsq_store_params sp = {dir, 0, 0};
        dsq_error err;
        dsq_error_clear(&err);
        prog p = {.size = zn};
        dsq_indexer_params ip = {.db_dir = dir, .progress = on_progress, .ctx = &p,
                                 .jobs = ways[k].jobs, .progress_bytes = 64 << 10};
        CHECK_INT(dsq_store_open(&sp, &st, &err), 0);
        ip.store = st;
        CHECK_INT(dsq_indexer_new(&ip, &ix, &err), 0);
        char path[256];
        snprintf(path, sizeof path, "%s/big.log.zst", tmp);
        CHECK_INT(dsq_indexer_add(ix, path, &err), 0);
        CHECK_INT(dsq_indexer_stats(ix)->bytes_in, zn);
        CHECK_INT(dsq_indexer_stats(ix)->bytes_decoded, len);
        if (p.inside < 3)
            fprintf(stderr, "jobs %u, read-ahead %s: %d calls inside the file\n", ways[k].jobs,
                    ways[k].ahead, p.inside);
        CHECK(p.inside >= 3); /* one per decoded chunk (about 1 MiB) at least */
        CHECK_INT(p.backwards, 0);
        CHECK_INT(p.last_in, zn);
        dsq_indexer_free(ix);
        dsq_store_close(st);
    }
    unsetenv("DSQ_READAHEAD");
    free(text);
    free(z);
}

/* A worker decodes a big compressed file ahead, on a thread of its own, only while a
 * core is spare (indexer.c's w_ahead): with two workers and the writer on two cores
 * the three threads would share them. One file of 1.5 MB of zstd, no other: on two
 * cores not ahead, on three (or cores not given: jobs + 1) ahead; DSQ_READAHEAD
 * overrides the choice; -j 1 has no workers. */
static void test_read_ahead_only_on_a_spare_core(void)
{
    size_t cap = 8 << 20, len = 0;
    char *text = malloc(cap), *z = malloc(cap);
    uint64_t r = 88172645463325252ull;
    for (int i = 0; len < (6u << 20); i++) { /* hex noise: zstd keeps it near half */
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        len += (size_t)snprintf(text + len, cap - len,
                                "[2024-07-20 21:%02d:%02d,000] [INFO] [log.py:1:f] x=%016llx "
                                "loss=%d.%02d\n", i / 60 % 60, i % 60, (unsigned long long)r,
                                (int)(r % 5), (int)(r >> 40) % 100);
    }
    size_t zn = ZSTD_compress(z, cap, text, len, 1);
    CHECK(!ZSTD_isError(zn));
    CHECK(zn >= (1u << 20)); /* AHEAD_MIN_BYTES */
    CHECK_INT(test_write_file(tmp, "ahead.log.zst", z, zn), 0);
    static const struct {
        unsigned jobs, cores;
        const char *mode; /* DSQ_READAHEAD, NULL: unset */
        uint64_t ahead;
    } ways[] = {{2, 2, NULL, 0},     {2, 3, NULL, 1},  {2, 0, NULL, 1}, {4, 2, NULL, 0},
                {2, 2, "always", 1}, {2, 8, "never", 0}, {1, 8, NULL, 0}};
    for (size_t k = 0; k < sizeof ways / sizeof ways[0]; k++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/db-ahead-%zu", tmp, k);
        if (ways[k].mode)
            setenv("DSQ_READAHEAD", ways[k].mode, 1);
        else
            unsetenv("DSQ_READAHEAD");
        dsq_store *st = NULL;
        dsq_indexer *ix = NULL;
        dsq_store_params sp = {dir, 0, 0};
        dsq_error err;
        dsq_error_clear(&err);
        CHECK_INT(dsq_store_open(&sp, &st, &err), 0);
        dsq_indexer_params ip = {.store = st, .db_dir = dir, .jobs = ways[k].jobs,
                                 .cores = ways[k].cores};
        CHECK_INT(dsq_indexer_new(&ip, &ix, &err), 0);
        char path[256];
        snprintf(path, sizeof path, "%s/ahead.log.zst", tmp);
        CHECK_INT(dsq_indexer_add(ix, path, &err), 0);
        const dsq_index_stats *s = dsq_indexer_stats(ix);
        CHECK_INT(s->files_indexed, 1);
        CHECK_INT(s->bytes_decoded, len);
        if (s->files_ahead != ways[k].ahead)
            fprintf(stderr, "jobs %u, cores %u, DSQ_READAHEAD %s: files ahead %llu\n",
                    ways[k].jobs, ways[k].cores, ways[k].mode ? ways[k].mode : "unset",
                    (unsigned long long)s->files_ahead);
        CHECK_INT(s->files_ahead, ways[k].ahead);
        dsq_indexer_free(ix);
        dsq_store_close(st);
    }
    unsetenv("DSQ_READAHEAD");
    free(text);
    free(z);
}

typedef struct block_count {
    size_t blocks;
    int in_order; /* each (host, rank)'s blocks come in time order */
    uint32_t host;
    int32_t rank;
    int64_t t;
} block_count;

static int count_block(void *arg, const dsq_block_key *k, const void *data, size_t n)
{
    (void)data, (void)n;
    block_count *c = arg;
    if (c->blocks && k->host == c->host && k->rank == c->rank && k->t_us < c->t)
        c->in_order = 0;
    c->blocks++;
    c->host = k->host;
    c->rank = k->rank;
    c->t = k->t_us;
    return 0;
}

/* A launcher log of many ranks, each of whose events come one per round across
 * the file (pairs x 3 rounds of DeepSpeed step lines, and each rank's count of
 * lines: 4 events a rank). Every (host, rank) keeps its open block whatever the
 * number of ranks: 600 ranks give 600 blocks (at most 256 open blocks wrote out
 * one event per block, 2,400), and 9,000 (a launcher log of 8,192 ranks has 9,216
 * pairs) 9,000 blocks; past the most blocks kept open (here 8,192: the default
 * was that), and with a small budget of open bytes, all are written out and start
 * anew, more blocks. The answers are the same every way, with and without workers. */
static void test_many_ranks_in_one_file(void)
{
    static const struct {
        int pairs;
        const char *budget;  /* DSQ_OPEN_BLOCK_BYTES, NULL: the default */
        const char *maxopen; /* DSQ_OPEN_BLOCKS_MAX, NULL: the default */
        size_t blocks_min, blocks_max;
    } ways[] = {{600, NULL, NULL, 600, 600},
                {600, "4096", NULL, 601, 2400},
                {9000, NULL, NULL, 9000, 9000},
                {9000, NULL, "8192", 9001, 36000}};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        int pairs = ways[w].pairs;
        size_t cap = (size_t)pairs * 3 * 160, len = 0;
        char *text = malloc(cap);
        long long sum = 0;
        for (int round = 0; round < 3; round++)
            for (int p = 0; p < pairs; p++) {
                len += (size_t)snprintf(text + len, cap - len,
                                        "node%04d: [2024-07-20 21:%02d:05,%03d] [INFO] "
                                        "[logging.py:96:log_dist] [Rank %d] step=%d, skipped=0, "
                                        "lr=[1.0e-05], mom=[(0.9, 0.999)]\n",
                                        p / 8, 30 + round, p % 1000, p, round * 100000 + p);
                sum += round * 100000 + p;
            }
        CHECK_INT(test_write_file(tmp, "many.log", text, len), 0);
        free(text);
        char want_sum[64], want_count[64];
        snprintf(want_sum, sizeof want_sum, "run,sum step\nr,%lld\n", sum);
        snprintf(want_count, sizeof want_count, "run,count step\nr,%d\n", 3 * pairs);
        if (ways[w].budget)
            setenv("DSQ_OPEN_BLOCK_BYTES", ways[w].budget, 1);
        if (ways[w].maxopen)
            setenv("DSQ_OPEN_BLOCKS_MAX", ways[w].maxopen, 1);
        for (unsigned jobs = 1; jobs <= 2; jobs++) {
            char db[32];
            snprintf(db, sizeof db, "db-many-%zu-%u", w, jobs);
            ctx c;
            CHECK_INT(open_ctx_jobs(&c, db, "r", jobs), 0);
            CHECK_INT(add(&c, "many.log"), 0);
            CHECK_INT(c.pr.n, 0);
            expect_query(c.st, "sum step by run", want_sum);
            expect_query(c.st, "count step by run", want_count);
            expect_query(c.st, "max step by host where host = 'node0001'",
                         "host,max step\nnode0001,200015\n");
            block_count bc = {.in_order = 1};
            dsq_error err;
            dsq_error_clear(&err);
            CHECK_INT(dsq_store_scan_blocks(c.st, 0, count_block, &bc, &err), 0);
            CHECK(bc.blocks >= ways[w].blocks_min && bc.blocks <= ways[w].blocks_max);
            CHECK(bc.in_order);
            close_ctx(&c);
        }
        unsetenv("DSQ_OPEN_BLOCK_BYTES");
        unsetenv("DSQ_OPEN_BLOCKS_MAX");
    }
}

/* The blocks of an index, counted by the minute their first event has. */
typedef struct block_minutes {
    size_t blocks;
    size_t by_minute[60];
} block_minutes;

static int count_block_minute(void *arg, const dsq_block_key *k, const void *data, size_t n)
{
    (void)data, (void)n;
    block_minutes *c = arg;
    c->blocks++;
    c->by_minute[(k->t_us / 60000000) % 60]++;
    return 0;
}

/* Once the open blocks hold their budget (DSQ_OPEN_BLOCK_BYTES), some of them are
 * written out, oldest first, not all at once (indexer.c, OB_FLUSH_PART): in a
 * launcher log of 512 ranks taking turns for 24 rounds (a minute each, in log
 * order), the ranks' blocks after the first round start in different rounds, at
 * most 5/8 of the ranks' in one (written all at once, nearly every rank's next
 * block started in the same round), and fewer blocks are written (not those just
 * opened). The answers are right, with and without workers. */
static void test_open_blocks_budget_writes_some_at_a_time(void)
{
    const int pairs = 512, rounds = 24;
    size_t cap = (size_t)pairs * rounds * 160, len = 0;
    char *text = malloc(cap);
    long long sum = 0;
    for (int round = 0; round < rounds; round++)
        for (int p = 0; p < pairs; p++) {
            len += (size_t)snprintf(text + len, cap - len,
                                    "node%04d: [2024-07-20 21:%02d:05,%03d] [INFO] "
                                    "[logging.py:96:log_dist] [Rank %d] step=%d, skipped=0, "
                                    "lr=[1.0e-05], mom=[(0.9, 0.999)]\n",
                                    p / 8, 30 + round, p % 1000, p, round * 100000 + p * 7 % 1009);
            sum += round * 100000 + p * 7 % 1009;
        }
    CHECK_INT(test_write_file(tmp, "budget.log", text, len), 0);
    free(text);
    char want_sum[64];
    snprintf(want_sum, sizeof want_sum, "run,sum step\nr,%lld\n", sum);
    setenv("DSQ_OPEN_BLOCK_BYTES", "16384", 1);
    setenv("DSQ_REORDER_PAIRS", "0", 1); /* in log order: the ranks take turns */
    for (unsigned jobs = 1; jobs <= 2; jobs++) {
        char db[32];
        snprintf(db, sizeof db, "db-budget-%u", jobs);
        ctx c;
        CHECK_INT(open_ctx_jobs(&c, db, "r", jobs), 0);
        CHECK_INT(add(&c, "budget.log"), 0);
        CHECK_INT(c.pr.n, 0);
        expect_query(c.st, "sum step by run", want_sum);
        block_minutes bm = {0};
        dsq_error err;
        dsq_error_clear(&err);
        CHECK_INT(dsq_store_scan_blocks(c.st, 0, count_block_minute, &bm, &err), 0);
        size_t most = 0;
        for (int m = 31; m < 30 + rounds; m++)
            if (bm.by_minute[m] > most)
                most = bm.by_minute[m];
        /* the budget was reached again and again: 3,584 blocks (5,970 written all
         * at once, every block just opened among them) */
        CHECK(bm.blocks >= 2 * (size_t)pairs && bm.blocks < 8 * (size_t)pairs);
        CHECK(most > 0 && most <= (size_t)pairs * 5 / 8); /* 275 (all at once: 506) */
        close_ctx(&c);
    }
    unsetenv("DSQ_OPEN_BLOCK_BYTES");
    unsetenv("DSQ_REORDER_PAIRS");
}

/* The entries of table `name` of the index in db (under tmp). */
static size_t table_entries(const char *db, const char *name)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", tmp, db);
    return table_count(dir, name, TABLE_ENTRIES);
}

/* A launcher log of `ranks` ranks on ranks / 8 hosts, `rounds` rounds of a step
 * line and a timer line each; ranks of a host print at the same millisecond (time
 * ties); values whose sums depend on their order. */
static void write_ranks_log(const char *rel, int ranks, int rounds, const char *tail)
{
    size_t cap = (size_t)ranks * rounds * 400 + 256, len = 0;
    char *text = malloc(cap);
    for (int round = 0; round < rounds; round++)
        for (int p = 0; p < ranks; p++) {
            int ms = (p / 8) % 1000;
            len += (size_t)snprintf(text + len, cap - len,
                                    "node%03d: [2024-07-20 21:%02d:05,%03d] [INFO] "
                                    "[logging.py:96:log_dist] [Rank %d] step=%d, skipped=%d, "
                                    "lr=[%.4e], mom=[(0.9, 0.999)]\n"
                                    "node%03d: [2024-07-20 21:%02d:06,%03d] [INFO] "
                                    "[logging.py:96:log_dist] [Rank %d] time (ms) | "
                                    "fwd_microstep: %.2f | bwd_microstep: %.3f\n",
                                    p / 8, 30 + round, ms, p, round * 10 + p % 7, round % 2,
                                    1e-5 / (1 + p % 13 + round), p / 8, 30 + round, ms, p,
                                    100.0 / (3 + p % 11) + round, 0.1 * p + 1.0 / (round + 3));
        }
    len += (size_t)snprintf(text + len, cap - len, "%s", tail);
    CHECK_INT(test_write_file(tmp, rel, text, len), 0);
    free(text);
}

/* A source whose series pass DSQ_SERIES_MAX (a launcher log of thousands of ranks:
 * 37 series a rank) has them let go of after a checkpoint, and read back when their
 * rank prints again: the answers are those of the source kept whole in memory, bit
 * for bit (sums in the same order, first/last on time ties), with and without
 * workers, and the pairs read back go on in their chunks (no chunk record more).
 * Re-indexing the changed file drops every series of the old one (its keys listed
 * across the checkpoints): the tables are those of a fresh index. */
static void test_many_series_let_go(void)
{
    static const char *const queries[] = {
        ("count, sum step, avg lr, min lr, max lr, first lr, last lr, p50 fwd_microstep, "
         "p90 bwd_microstep, sum bwd_microstep by run"),
        "count by run, host, rank, kind",
        "sum fwd_microstep, first step, last step, count lr, last bwd_microstep by rank",
        "max step, sum lr by host every 1m", "first lr, last lr, first bwd_microstep by host",
        "sum step, max lr, count by rank where skipped = 1", /* events read, values filled */
        "count, sum bwd_microstep by host where fwd_microstep > 20"};
    write_ranks_log("ranks.log", 240, 4, "");
    /* ranks taking turns event by event; the last index also through windows by rank
     * (series let go of in the middle of writing a window) */
    const char *dbs[] = {"db-whole", "db-let-go-1", "db-let-go-2", "db-let-go-window"};
    uint64_t commits[4] = {0};
    size_t peak[4] = {0};
    for (int k = 0; k < 4; k++) {
        setenv("DSQ_REORDER_PAIRS", k == 3 ? "8" : "0", 1);
        if (k)
            setenv("DSQ_SERIES_MAX", "100", 1);
        ctx c;
        CHECK_INT(open_ctx_jobs(&c, dbs[k], "r", k == 2 ? 2 : 1), 0);
        CHECK_INT(add(&c, "ranks.log"), 0);
        CHECK_INT(c.pr.n, 0);
        commits[k] = dsq_store_commits(c.st);
        peak[k] = dsq_indexer_series_peak(c.ix);
        close_ctx(&c);
        unsetenv("DSQ_SERIES_MAX");
    }
    CHECK(commits[0] <= 3);
    CHECK(commits[1] >= 20 && commits[2] >= 20 && commits[3] >= 20); /* every 82 series or so */
    CHECK(peak[0] > 2000 && peak[1] <= 100 && peak[2] <= 100 && peak[3] <= 100);
    /* pairs read back went on in their chunk: no chunk record the whole index lacks */
    CHECK_INT(table_entries(dbs[1], "chunks"), table_entries(dbs[0], "chunks"));
    CHECK_INT(table_entries(dbs[2], "chunks"), table_entries(dbs[0], "chunks"));
    for (int k = 1; k < 4; k++)
        expect_same_answers_of(dbs[0], dbs[k], queries, sizeof queries / sizeof queries[0], 150);
    setenv("DSQ_REORDER_PAIRS", "0", 1);
    /* the file changed: indexed again over the let-go index, and fresh */
    write_ranks_log("ranks.log", 240, 4,
                    "node000: [2024-07-20 21:40:00,000] [INFO] [logging.py:96:log_dist] "
                    "[Rank 0] step=99, skipped=0, lr=[1.0e-05], mom=[(0.9, 0.999)]\n");
    setenv("DSQ_SERIES_MAX", "100", 1);
    const char *again[] = {"db-let-go-1", "db-fresh"};
    for (int k = 0; k < 2; k++) {
        ctx c;
        CHECK_INT(open_ctx(&c, again[k], "r"), 0);
        CHECK_INT(add(&c, "ranks.log"), 0);
        CHECK_INT(c.pr.n, 0);
        close_ctx(&c);
    }
    unsetenv("DSQ_SERIES_MAX");
    expect_same_answers_of(again[0], again[1], queries, sizeof queries / sizeof queries[0], 150);
    static const char *const tables[] = {"series", "chunks", "srcroll", "attrs", "events"};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        CHECK_INT(table_entries(again[0], tables[t]), table_entries(again[1], tables[t]));
    unsetenv("DSQ_REORDER_PAIRS");
}

/* A big file is committed every DSQ_COMMIT_BYTES of text (checkpoints): its open
 * blocks stay open across them and a series of few values keeps them in its record
 * (its chunk left open), so the index holds what one commit writes: as many event
 * blocks and chunks, and the same answers. Before, every checkpoint wrote out
 * every open block and gave every series a chunk record. */
static void test_checkpoints_write_what_one_commit_does(void)
{
    static const char *const queries[] = {
        "count, sum step, avg lr, first lr, last lr, p50 fwd_microstep by run, host",
        "count by run, host, rank, kind"};
    write_ranks_log("ckpt.log", 240, 4, "");
    const char *dbs[] = {"db-one-commit", "db-checkpoints"};
    uint64_t commits[2] = {0};
    for (int k = 0; k < 2; k++) {
        if (k)
            setenv("DSQ_COMMIT_BYTES", "8000", 1);
        ctx c;
        CHECK_INT(open_ctx(&c, dbs[k], "r"), 0);
        CHECK_INT(add(&c, "ckpt.log"), 0);
        commits[k] = dsq_store_commits(c.st);
        close_ctx(&c);
        unsetenv("DSQ_COMMIT_BYTES");
    }
    CHECK(commits[0] <= 2 && commits[1] >= 20);
    expect_same_answers_of(dbs[0], dbs[1], queries, sizeof queries / sizeof queries[0], 150);
    CHECK_INT(table_entries(dbs[1], "events"), table_entries(dbs[0], "events"));
    CHECK_INT(table_entries(dbs[1], "chunks"), table_entries(dbs[0], "chunks"));
    CHECK_INT(table_entries(dbs[1], "series"), table_entries(dbs[0], "series"));
}

/* Checkpoints after a file's first are written in parts (dsq_store_parts; here a
 * part after every chunk record, DSQ_PART_PUTS 1): a long log of two ranks, whose
 * series write chunk records at checkpoints, has the same answers and tables as
 * one commit, and as checkpoints in one piece; with workers too. So has a write
 * whose series are put into their groups as they come (DSQ_SER_FLUSH_BYTES 1: each
 * one), which ends the write's parts once its chunks are written. */
static void test_checkpoint_parts_write_what_one_commit_does(void)
{
    static const char *const queries[] = {
        ("count, sum fwd_microstep, avg bwd_microstep, first fwd_microstep, last "
         "bwd_microstep, p50 fwd_microstep by run, rank"),
        "count by run, rank, kind", "max fwd_microstep by rank"};
    size_t cap = 8000 * 2 * 200, len = 0; /* 2 MB: blocks written (past 4,096 events
                                             a rank), then whole checkpoints */
    char *text = malloc(cap);
    for (int i = 0; i < 8000; i++)
        for (int r = 0; r < 2; r++)
            len += (size_t)snprintf(text + len, cap - len,
                                    "[2024-07-20 %02d:%02d:%02d,%03d] [INFO] [logging.py:96:log_dist] "
                                    "[Rank %d] time (ms) | fwd_microstep: %.2f | bwd_microstep: %.3f\n",
                                    10 + i / 3600, i / 60 % 60, i % 60, r * 7, r,
                                    100.0 + (i * 7919 + r * 11) % 10007 / 100.0,
                                    0.5 * r + (i * 104729 % 8191) / 1000.0);
    CHECK_INT(test_write_file(tmp, "long.log", text, len), 0);
    free(text);
    static const struct {
        const char *commit_bytes, *part_puts, *ser_flush;
        unsigned jobs;
        const char *db;
    } ways[] = {{NULL, NULL, NULL, 1, "db-long-one"},
                {"100000", "1000000", NULL, 1, "db-long-ckpt"},
                {"100000", "1", NULL, 1, "db-long-parts"},
                {"100000", "1", NULL, 2, "db-long-parts-2"},
                {"100000", "1", "1", 1, "db-long-ser-flush"},
                {"100000", "1", "1", 2, "db-long-ser-flush-2"}};
    uint64_t parts[6] = {0}, flushes[6] = {0};
    for (size_t w = 0; w < 6; w++) {
        if (ways[w].commit_bytes)
            setenv("DSQ_COMMIT_BYTES", ways[w].commit_bytes, 1);
        if (ways[w].part_puts)
            setenv("DSQ_PART_PUTS", ways[w].part_puts, 1);
        if (ways[w].ser_flush)
            setenv("DSQ_SER_FLUSH_BYTES", ways[w].ser_flush, 1);
        ctx c;
        CHECK_INT(open_ctx_jobs(&c, ways[w].db, "r", ways[w].jobs), 0);
        CHECK_INT(add(&c, "long.log"), 0);
        CHECK_INT(c.pr.n, 0);
        parts[w] = dsq_store_parts_committed(c.st);
        flushes[w] = dsq_store_series_flushes(c.st);
        close_ctx(&c);
        unsetenv("DSQ_COMMIT_BYTES");
        unsetenv("DSQ_PART_PUTS");
        unsetenv("DSQ_SER_FLUSH_BYTES");
    }
    CHECK(parts[0] == 0 && parts[1] == 0 && parts[2] >= 20 && parts[3] == parts[2]);
    /* a checkpoint's chunk records come before its series: all still in parts */
    CHECK(parts[4] == parts[2] && parts[5] == parts[4]);
    CHECK(flushes[0] == 0 && flushes[1] == 0 && flushes[2] == 0 && flushes[4] >= 20 &&
          flushes[5] == flushes[4]);
    static const char *const tables[] = {"series", "chunks", "srcroll", "srcblocks", "events"};
    for (size_t w = 1; w < 6; w++) {
        expect_same_answers_of(ways[0].db, ways[w].db, queries, sizeof queries / sizeof queries[0],
                               20);
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
            if (w > 1) /* (checkpoints leave chunk records one commit does not) */
                CHECK_INT(table_entries(ways[w].db, tables[t]), table_entries(ways[1].db, tables[t]));
    }
}

/* A file of many ranks taking turns (past DSQ_REORDER_PAIRS pairs with open
 * blocks) is written in windows by (host, rank): the answers are those of log
 * order, with and without workers (which write the same tables). A run attribute
 * is written in log order: of two printed at the same time by two hosts, the last
 * printed is the run's, though the other's host came first in its window. */
static void test_events_by_rank_window_same_answers(void)
{
    static const char *const queries[] = {
        ("count, sum step, avg lr, first lr, last lr, p50 fwd_microstep, sum bwd_microstep "
         "by run, host"),
        "count by run, host, rank, kind",
        "sum fwd_microstep, first step, last step, last bwd_microstep by rank"};
    const char tail[] =
        "node001: [2024-07-20 21:40:00,000] [INFO] [logging.py:96:log_dist] [Rank 8] "
        "step=7, skipped=0, lr=[1.0e-05], mom=[(0.9, 0.999)]\n"
        "node000: [2024-07-20 21:40:00,000] [INFO] [logging.py:96:log_dist] [Rank 8] "
        "Creating fp16 ZeRO stage 3 optimizer\n"
        "node001: [2024-07-20 21:40:00,000] [INFO] [logging.py:96:log_dist] [Rank 8] "
        "Creating torch.bfloat16 ZeRO stage 3 optimizer\n";
    write_ranks_log("turns.log", 240, 4, tail);
    static const struct {
        const char *pairs; /* DSQ_REORDER_PAIRS */
        unsigned jobs;
        const char *db;
    } ways[] = {{"0", 1, "db-log-order"}, {NULL, 1, "db-window-1"}, {NULL, 2, "db-window-2"},
                {"2", 1, "db-window-small"}};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        if (ways[w].pairs)
            setenv("DSQ_REORDER_PAIRS", ways[w].pairs, 1);
        ctx c;
        CHECK_INT(open_ctx_jobs(&c, ways[w].db, "r", ways[w].jobs), 0);
        CHECK_INT(add(&c, "turns.log"), 0);
        CHECK_INT(c.pr.n, 0);
        expect_query(c.st, "count by run, dtype", "run,dtype,count\nr,bf16,2166\n");
        close_ctx(&c);
        unsetenv("DSQ_REORDER_PAIRS");
    }
    for (size_t w = 1; w < sizeof ways / sizeof ways[0]; w++)
        expect_same_answers_of(ways[0].db, ways[w].db, queries, sizeof queries / sizeof queries[0],
                               20);
    static const char *const tables[] = {"events", "series", "chunks", "srcroll", "attrs"};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        CHECK_INT(table_entries(ways[2].db, tables[t]), table_entries(ways[1].db, tables[t]));
}

static void test_strip_ext(void)
{
    static const char *const tab[][2] = {
        {"run7.tar.zst", "run7"}, {"gpu009.log.gz", "gpu009"}, {"llama.tgz", "llama"},
        {"a.b.c", "a.b.c"},       {"rank3.LOG", "rank3"},       {"x.txt.bz2", "x"},
        {".log", ".log"},          {"job.out", "job"},           {"job.err.xz", "job"},
        {"archive.zip", "archive"}, {"plain", "plain"},          {"v1.2.log", "v1.2"}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        char out[64];
        dsq_name_strip_ext(tab[i][0], out, sizeof out);
        CHECK_STR(out, tab[i][1]);
    }
    char small[4];
    dsq_name_strip_ext("abcdef.log", small, sizeof small);
    CHECK_STR(small, "abc");
}

static void test_setup(void) { CHECK_INT(test_tmpdir_new(tmp), 0); }
static void test_teardown(void) { test_tmpdir_remove(tmp); }

TEST_MAIN(T(test_setup), T(test_index_and_query), T(test_run_override_and_db_inside),
          T(test_damaged_file), T(test_jobs_same_index), T(test_jobs_same_dictionary),
          T(test_small_files_share_commits),
          T(test_progress_inside_one_file), T(test_read_ahead_only_on_a_spare_core),
          T(test_many_ranks_in_one_file), T(test_open_blocks_budget_writes_some_at_a_time),
          T(test_many_series_let_go),
          T(test_checkpoints_write_what_one_commit_does),
          T(test_checkpoint_parts_write_what_one_commit_does),
          T(test_events_by_rank_window_same_answers),
          T(test_strip_ext),
          T(test_teardown))
