/* dsq command line: index log archives, answer queries.
 *
 * This file only parses arguments, formats what the library reports for people,
 * and chooses exit codes: 0 all good, 1 something was skipped or damaged (the rest
 * was indexed), 2 usage or query error, 3 the index itself failed.
 */
#ifndef DSQ_BUILD_NOTE
#define DSQ_BUILD_NOTE "" /* ", profile-guided build" and the like, from CMakeLists.txt */
#endif

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include "catalogue.h"
#include "coverage.h"
#include "dsq/dsq.h"
#include "error.h"
#include "explain.h"
#include "gunzip.h"
#include "hugepages.h"
#include "unzip.h"
#include "indexer.h"
#include "linescan.h"
#include "prune.h"
#include "query.h"
#include "report.h"
#include "result.h"
#include "runs.h"
#include "shard.h"
#include "store.h"
#include "walk.h"

#define EXIT_SKIPPED 1
#define EXIT_USAGE 2
#define EXIT_INDEX 3
#define MAX_DBS 1024

static const char usage_text[] =
    "dsq - index training-job logs and answer questions across runs\n"
    "\n"
    "Usage:\n"
    "  dsq index [--run NAME] PATH...   index files, directories and archives\n"
    "  dsq index --shard K/N PATH...    index only the runs of shard K of N (0 <= K < N),\n"
    "                                   e.g. one Slurm array task each (tools/slurm-index.sh)\n"
    "  dsq \"QUERY\"                      answer a query, e.g. dsq \"max Max_MA by run\"\n"
    "  dsq runs                         list runs: start, duration, hosts, ranks, failure,\n"
    "                                   peak Max_MA\n"
    "  dsq fields                       list numeric fields: unit, count, runs, min, max\n"
    "  dsq show [CONDITION]             the events a condition selects, in time order\n"
    "                                   across files, e.g. dsq show \"run = x and kind = failure\"\n"
    "  dsq prune                        drop indexed files that no longer exist (until\n"
    "                                   then they stay queryable, counted as missing)\n"
    "  dsq drop RUN...                  drop whole runs (to index them again from scratch)\n"
    "  dsq compact                      rewrite the index with each table in one piece, so\n"
    "                                   queries touch fewer pages (dsq index does this by\n"
    "                                   itself once an index over 64 MB grew by 20% and a\n"
    "                                   copy would be 15% smaller)\n"
    "  dsq explain FILE|-               the log line by line: family, level, fields, events\n"
    "                                   and what each line means (repeats are folded)\n"
    "  dsq explain --stats PATH...      what dsq recognizes in these logs: lines per\n"
    "                                   family, events per kind, unrecognized shapes\n"
    "  dsq report RUN                   one run on one screen: what ran, timeline, memory,\n"
    "                                   trends, errors, failure, diagnostics (--json,\n"
    "                                   --html FILE: a page with SVG charts, --lang zh)\n"
    "  dsq help                         this text\n"
    "\n"
    "Options (anywhere on the line):\n"
    "  --db DIR     index directory (default: $DSQ_DB, else $XDG_DATA_HOME/dsq/index,\n"
    "               else ~/.local/share/dsq/index). Queries accept several --db, and a\n"
    "               directory holding indexes (shards) stands for all of them\n"
    "  --run NAME   (index) put every input into run NAME instead of naming runs\n"
    "               after the top-level directory or archive below each PATH\n"
    "  --shard K/N  (index) only runs whose name hashes to shard K of N; a whole run is\n"
    "               in one shard. Query the shards with --db DIR-of-shards\n"
    "  --csv        comma-separated output, plain numbers\n"
    "  --json       one JSON object per line, plain numbers, units as *_unit\n"
    "  --limit N    (show) at most N events (default 200; 0: all)\n"
    "  -q, --quiet  (index) no progress line\n"
    "  --no-compact (index) never compact at the end (see dsq compact)\n"
    "  -j N         (index) N threads decode and scan files in parallel while one\n"
    "               writes the index (default: $DSQ_JOBS, else one per usable CPU,\n"
    "               2 to 8; -j 1: all in one thread). The index answers the same\n"
    "               whatever N is. The N threads run 5 nice steps below the writer\n"
    "               ($DSQ_WORKER_NICE: another number, 0 for none)\n"
    "  --stats      (explain) the coverage report; --top N shapes (default 30).\n"
    "               (index) where the time went: reading (decompressing), scanning,\n"
    "               waits between the threads, the final sync, CPU\n"
    "  --lang zh    (explain) explanations in Chinese (default: en)\n"
    "  --only problems  (explain) only warning, error and failure lines\n"
    "  --version    print the version, the line-splitting backend (DSQ_LINES_BACKEND=\n"
    "               scalar|avx2 forces one) and whether line shapes answer repeated lines\n"
    "               (DSQ_LINE_SHAPES=0 turns them off, =check checks every answer) and\n"
    "               whether dsq index asks for huge pages (DSQ_HUGE_PAGES=0: it does not)\n"
    "\n"
    "Query language:\n"
    "  AGG [FIELD] [, AGG FIELD ...] [by KEY[, KEY]] [where COND] [since T] [until T]\n"
    "      [every 10m|1h|1d] [order by COLUMN [asc|desc]] [limit N | top N]\n"
    "  AGG   count min max sum avg p50 p90 p95 p99 first last\n"
    "  KEY   run host rank kind label file family level, or a run attribute\n"
    "        (zero_stage, world_size, nccl_version, failure ...)\n"
    "  COND  KEY|FIELD|time (= != < <= > >= ~glob) VALUE, joined with and/or/not, ( )\n"
    "  Field names are as the log prints them: Max_MA, CurrSamplesPerSec, loss,\n"
    "  \"lm loss\" (quote names with spaces). `dsq fields` lists them.\n"
    "\n"
    "Examples:\n"
    "  dsq index /archive/logs\n"
    "  dsq \"max Max_MA by run\"\n"
    "  dsq \"max Max_MA, avg MA by run, host where run ~ 'llama*'\"\n"
    "  dsq \"p95 CurrSamplesPerSec by run order by p95 CurrSamplesPerSec desc limit 10\"\n"
    "  dsq \"avg loss by run every 1h since 2024-07-01\"\n"
    "  dsq \"count by run, failure where kind = failure\"\n"
    "  dsq --db /idx/shards \"count by host\"\n"
    "  dsq --csv \"count by run, kind\"\n"
    "\n"
    "Exit status: 0 ok, 1 some input was skipped or damaged (the rest is indexed),\n"
    "2 bad usage or query, 3 the index could not be used.\n";

typedef struct cli {
    const char *db;      /* the index written by `dsq index` (the first --db) */
    const char *dbs[64]; /* every --db, for queries */
    int ndbs;
    const char *run;
    const char *shard;   /* --shard K/N as given */
    uint32_t shard_k, shard_n;
    int format;
    int quiet;
    int no_compact;
    uint64_t total_files, total_bytes; /* index on a terminal: what the walk will see */
    long jobs;         /* index -j N: 0 = not given */
    int stats;
    int top;
    const char *lang;  /* explain: catalogue language */
    int only_problems; /* explain: --only problems */
    long limit;
    int limit_set;
    const char *html;
    const char **args;
    int nargs;
    int problems;
    int tty;
    struct timespec last_progress;
    char db_buf[4096];
} cli;

static void default_db(cli *c)
{
    const char *env = getenv("DSQ_DB"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (c->db)
        return;
    if (env && *env)
        c->db = env;
    else if (xdg && *xdg)
        snprintf(c->db_buf, sizeof c->db_buf, "%s/dsq/index", xdg), c->db = c->db_buf;
    else
        snprintf(c->db_buf, sizeof c->db_buf, "%s/.local/share/dsq/index", home ? home : "."),
            c->db = c->db_buf;
}

static int parse_args(cli *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--db") == 0 || strcmp(a, "--run") == 0 || strcmp(a, "--shard") == 0) &&
            i + 1 >= argc) {
            fprintf(stderr, "dsq: %s needs a value\n", a);
            return -1;
        }
        if (strcmp(a, "--db") == 0 || strncmp(a, "--db=", 5) == 0) {
            const char *v = a[4] == '=' ? a + 5 : argv[++i];
            if (c->ndbs == (int)(sizeof c->dbs / sizeof c->dbs[0])) {
                fprintf(stderr, "dsq: too many --db (at most %d; give a directory of indexes)\n",
                        c->ndbs);
                return -1;
            }
            if (!c->db)
                c->db = v;
            c->dbs[c->ndbs++] = v;
        }
        else if (strcmp(a, "--run") == 0)
            c->run = argv[++i];
        else if (strncmp(a, "--run=", 6) == 0)
            c->run = a + 6;
        else if (strcmp(a, "--shard") == 0 || strncmp(a, "--shard=", 8) == 0) {
            dsq_error e;
            dsq_error_clear(&e);
            c->shard = a[7] == '=' ? a + 8 : argv[++i];
            if (dsq_shard_parse(c->shard, &c->shard_k, &c->shard_n, &e) != 0) {
                fprintf(stderr, "dsq: %s\n", e.msg);
                return -1;
            }
        }
        else if (strcmp(a, "--csv") == 0)
            c->format = DSQ_FMT_CSV;
        else if (strcmp(a, "--json") == 0)
            c->format = DSQ_FMT_JSON;
        else if (strcmp(a, "-j") == 0 || strncmp(a, "-j", 2) == 0 || strcmp(a, "--jobs") == 0 ||
                 strncmp(a, "--jobs=", 7) == 0) {
            const char *v = strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0
                                ? (i + 1 < argc ? argv[++i] : "")
                                : a + (a[1] == 'j' ? 2 : 7);
            char *end;
            c->jobs = strtol(v, &end, 10);
            if (!*v || *end || c->jobs < 1 || c->jobs > 256) {
                fprintf(stderr, "dsq: -j needs a number of threads from 1 to 256\n");
                return -1;
            }
        }
        else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
            c->quiet = 1;
        else if (strcmp(a, "--stats") == 0)
            c->stats = 1;
        else if (strcmp(a, "--no-compact") == 0)
            c->no_compact = 1;
        else if (strcmp(a, "--lang") == 0 && i + 1 < argc)
            c->lang = argv[++i];
        else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            if (strcmp(argv[++i], "problems") != 0) {
                fprintf(stderr, "dsq: --only takes 'problems'\n");
                return -1;
            }
            c->only_problems = 1;
        }
        else if (strcmp(a, "--top") == 0 && i + 1 < argc)
            c->top = atoi(argv[++i]);
        else if (strcmp(a, "--html") == 0 && i + 1 < argc)
            c->html = argv[++i];
        else if (strcmp(a, "--limit") == 0 && i + 1 < argc) {
            char *end;
            c->limit = strtol(argv[++i], &end, 10);
            c->limit_set = 1;
            if (*end || c->limit < 0) {
                fprintf(stderr, "dsq: --limit needs a whole number (0: no limit)\n");
                return -1;
            }
        }
        else if (strcmp(a, "--") == 0)
            while (++i < argc)
                c->args[c->nargs++] = argv[i];
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "--version") == 0)
            continue; /* handled in main */
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dsq: unknown option %s (see dsq --help)\n", a);
            return -1;
        } else
            c->args[c->nargs++] = a;
    }
    default_db(c);
    if (!c->ndbs)
        c->dbs[c->ndbs++] = c->db;
    return 0;
}

static void print_where(const dsq_error *e)
{
    fprintf(stderr, "dsq: %s", e->file[0] ? e->file : "");
    if (e->member[0])
        fprintf(stderr, ": %s", e->member);
    if (e->line > 0)
        fprintf(stderr, ": after line %lld", e->line);
    if (e->offset > 0)
        fprintf(stderr, " (byte %lld)", e->offset);
    fprintf(stderr, ": %s\n", e->msg);
}

static void on_problem(void *ctx, const dsq_error *e)
{
    cli *c = ctx;
    if (c->tty && !c->quiet)
        fputs("\r\033[K", stderr);
    c->problems++;
    print_where(e);
}

/* "1h02m", "3m05s", "42s" */
static void duration_text(double s, char *out, size_t cap)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(out, cap, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(out, cap, "%lds", t);
}

/* The progress line: files done of all, bytes, speed, events, and the time left
 * estimated from the bytes of the files still to read at the speed of those read
 * so far (files skipped as unchanged cost nothing). */
static void on_progress(void *ctx, const dsq_index_stats *s, const char *path)
{
    cli *c = ctx;
    struct timespec now;
    if (!c->tty || c->quiet)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double dt = (double)(now.tv_sec - c->last_progress.tv_sec) +
                (double)(now.tv_nsec - c->last_progress.tv_nsec) / 1e9;
    if (dt < 0.2)
        return;
    c->last_progress = now;
    const char *base = strrchr(path, '/');
    char name[41], of[32] = "", eta[40] = "";
    snprintf(name, sizeof name, "%s", base ? base + 1 : path);
    for (char *p = name; *p; p++) /* a file name must not drive the terminal */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    uint64_t done = s->files_indexed + s->files_unchanged + s->files_failed + s->links_skipped;
    uint64_t bytes_done = s->bytes_in + s->bytes_unchanged;
    if (c->total_files)
        snprintf(of, sizeof of, "/%llu", (unsigned long long)c->total_files);
    if (c->total_bytes > bytes_done && s->bytes_in > 0 && s->seconds > 1) {
        char t[24];
        duration_text((double)(c->total_bytes - bytes_done) / ((double)s->bytes_in / s->seconds), t,
                      sizeof t);
        snprintf(eta, sizeof eta, ", ETA %s", t);
    }
    fprintf(stderr, "\r\033[Kindexing: %llu%s files, %.1f MB, %.0f MB/s, %llu events%s  %s",
            (unsigned long long)done, of, (double)s->bytes_decoded / 1e6,
            s->seconds > 0 ? (double)s->bytes_decoded / 1e6 / s->seconds : 0.0,
            (unsigned long long)s->events, eta, name);
}

/* Counts what indexing will walk, for the progress line (on a terminal only). */
static int count_file(void *ctx, const char *full, const char *rel, int link, const struct stat *sb)
{
    (void)link, (void)rel, (void)full;
    cli *c = ctx;
    if (sb) { /* the walk's stat */
        c->total_files++;
        c->total_bytes += (uint64_t)sb->st_size;
    }
    return 0;
}

static void count_inputs(cli *c)
{
    char db_real[PATH_MAX];
    dsq_walk_params wp = {.file = count_file, .ctx = c,
                          .skip_dir = realpath(c->db, db_real) ? db_real : NULL};
    for (int i = 1; i < c->nargs; i++)
        dsq_walk(&wp, c->args[i]);
}

/* "532 B", "12.4 kB", "3.1 MB", "2.0 GB" (decimal units, like the MB/s figures). */
static const char *human_bytes(uint64_t n, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1000 && u < 4)
        v /= 1000, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/* dsq index --stats: where the time went, from the indexer's stats and the process's
 * CPU time (getrusage). */
static void print_times(const dsq_index_stats *s)
{
    struct rusage ru;
    double user = 0, sys = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
        sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    }
    printf("  where the time went (seconds; spans of wall time, CPU time apart):\n");
    if (s->workers)
        printf("    %u workers (nice +%d): %.3f CPU; reading (opening, decompressing) %.3f,"
               " scanning %.3f, waiting for the writer %.3f; %llu batches sent\n"
               "    writer: %.3f CPU; waiting for the workers %.3f, the final sync %.3f\n",
               s->workers, s->workers_nice, s->workers_cpu, s->reading, s->scanning,
               s->workers_waited, (unsigned long long)s->worker_batches, s->writer_cpu,
               s->writer_waited, s->syncing);
    else
        printf("    one thread: %.3f CPU; reading (opening, decompressing) %.3f, scanning and"
               " writing %.3f, the final sync %.3f\n",
               s->writer_cpu, s->reading, s->seconds - s->reading - s->syncing, s->syncing);
    printf("    process: %.3f wall, %.3f CPU (%.3f user, %.3f system)\n", s->seconds, user + sys,
           user, sys);
}

static void print_summary(const dsq_index_stats *s, const char *db)
{
    char in[32], out[32];
    double mb = (double)s->bytes_decoded / 1e6;
    printf("indexed %llu files (%llu members) into %s\n", (unsigned long long)s->files_indexed,
           (unsigned long long)s->members, db);
    printf("  read %s, decompressed %s, %llu lines, %llu events in %.2f s (%.1f MB/s)\n",
           human_bytes(s->bytes_in, in, sizeof in), human_bytes(s->bytes_decoded, out, sizeof out),
           (unsigned long long)s->lines, (unsigned long long)s->events, s->seconds,
           s->seconds > 0 ? mb / s->seconds : 0.0);
    if (s->files_unchanged)
        printf("  skipped %llu unchanged files\n", (unsigned long long)s->files_unchanged);
    if (s->links_skipped)
        printf("  skipped %llu links to files indexed under another name\n",
               (unsigned long long)s->links_skipped);
    if (s->other_shard)
        printf("  left %llu run directories and files to other shards\n",
               (unsigned long long)s->other_shard);
    if (s->cut_lines)
        printf("  cut %llu lines longer than the line cap\n", (unsigned long long)s->cut_lines);
    if (s->files_failed || s->members_failed)
        printf("  problems: %llu unreadable files, %llu damaged members (reasons above)\n",
               (unsigned long long)s->files_failed, (unsigned long long)s->members_failed);
}

/* Whether dir is a directory of shard indexes (indexes one level down, none of
 * its own). Writing there would make an index that hides the shards from queries. */
static int holds_shards(const char *dir)
{
    char path[4200];
    int found = 0;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    DIR *d = access(path, F_OK) == 0 ? NULL : opendir(dir);
    for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
        snprintf(path, sizeof path, "%s/%s/data.mdb", dir, e->d_name);
        found = e->d_name[0] != '.' && access(path, F_OK) == 0;
    }
    if (d)
        closedir(d);
    return found;
}

static int refuse_shards_dir(const cli *c, const char *cmd)
{
    if (!holds_shards(c->db))
        return 0;
    fprintf(stderr, "dsq %s: %s holds shard indexes; name one of them (--db %s/shard-0)%s\n",
            cmd, c->db, c->db, strcmp(cmd, "index") == 0 ? "" : ", one at a time");
    return EXIT_USAGE;
}

/* Compacts the index (see dsq_store_compact), saying so on stderr. */
static int compact(cli *c, int automatic)
{
    dsq_error err;
    uint64_t before, after;
    struct timespec t0, t1;
    dsq_error_clear(&err);
    if (c->tty && !c->quiet)
        fprintf(stderr, "compacting %s ...", c->db);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = dsq_store_compact(c->db, &before, &after, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (c->tty && !c->quiet)
        fputs("\r\033[K", stderr);
    if (rc != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        return EXIT_INDEX;
    }
    printf("%scompacted %s: %.1f MB -> %.1f MB in %.1f s%s\n", automatic ? "  " : "", c->db,
            (double)before / 1e6, (double)after / 1e6,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
            automatic ? " (it grew by 20% since the last compaction, and had room to spare)" : "");
    return 0;
}

static int cmd_compact(cli *c)
{
    if (c->nargs != 1) {
        fprintf(stderr, "dsq compact takes no arguments (it compacts the --db index)\n");
        return EXIT_USAGE;
    }
    if (c->ndbs > 1 || refuse_shards_dir(c, "compact")) {
        if (c->ndbs > 1)
            fprintf(stderr, "dsq compact: compacts one index: give one --db\n");
        return EXIT_USAGE;
    }
    return compact(c, 0);
}

/* -j N, else $DSQ_JOBS, else the number of cores (at most 8). */
/* The CPUs this process may run on (a Slurm task's or a taskset's, not the
 * machine's), else those online. */
static long usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* -j, else DSQ_JOBS, else one worker per usable CPU: at least 2 (chosen when only
 * the threaded path committed small files in groups: on one CPU -j 2 indexed a
 * 1000-run archive of small files in 10.9 s against 17.5 s for -j 1; now that -j 1
 * groups its commits too they are even there, 7.4-7.7 s against 7.2-7.5 s), at most
 * 8, since one writer keeps up with a few workers, not with dozens. */
static unsigned index_jobs(const cli *c)
{
    const char *env = getenv("DSQ_JOBS");
    long n = c->jobs;
    if (n < 1 && env && *env)
        n = strtol(env, NULL, 10);
    if (n < 1) {
        long cpus = usable_cpus();
        n = cpus < 2 ? 2 : cpus > 8 ? 8 : cpus;
    }
    return n < 1 ? 1u : n > 256 ? 256u : (unsigned)n;
}

static int cmd_index(cli *c)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store *st = NULL;
    dsq_indexer *ix = NULL;
    int code = 0;
    if (c->nargs < 2) {
        fprintf(stderr, "dsq index: give one or more files or directories to index\n");
        return EXIT_USAGE;
    }
    if (c->ndbs > 1) {
        fprintf(stderr, "dsq index: writes one index: give one --db\n");
        return EXIT_USAGE;
    }
    if (refuse_shards_dir(c, "index"))
        return EXIT_USAGE;
    dsq_indexer_params ip = {.run = c->run, .db_dir = c->db, .problem = on_problem,
                             .progress = on_progress, .ctx = c,
                             .shard_k = c->shard_k, .shard_n = c->shard_n,
                             .jobs = index_jobs(c), .cores = (unsigned)usable_cpus()};
    /* with worker threads the writer does not wait for its periodic syncs (-j 1: one
     * thread does everything) */
    dsq_store_params sp = {.dir = c->db, .readonly = 0, .sync_behind = ip.jobs > 1};
    if (c->tty && !c->quiet)
        count_inputs(c);
    if (dsq_store_open(&sp, &st, &err) != 0)
        goto index_failed;
    ip.store = st;
    if (dsq_indexer_new(&ip, &ix, &err) != 0)
        goto index_failed;
    for (int i = 1; i < c->nargs; i++)
        if (dsq_indexer_add(ix, c->args[i], &err) != 0)
            goto index_failed;
    if (c->tty && !c->quiet)
        fputs("\r\033[K", stderr);
    print_summary(dsq_indexer_stats(ix), c->db);
    if (c->stats)
        print_times(dsq_indexer_stats(ix));
    code = c->problems ? EXIT_SKIPPED : 0;
    int due = 0;
    dsq_indexer_free(ix); /* its buffers gone before note_growth reads the whole index */
    ix = NULL;
    if (dsq_store_note_growth(st, &due, &err) != 0)
        goto index_failed;
    dsq_store_close(st);
    st = NULL;
    if (due && !c->no_compact)
        compact(c, 1); /* a failure is reported; the index itself is fine as it is */
    goto done;
index_failed:
    if (c->tty && !c->quiet)
        fputs("\r\033[K", stderr);
    fprintf(stderr, "dsq: %s%s%s\n", err.file[0] ? err.file : "", err.file[0] ? ": " : "", err.msg);
    code = EXIT_INDEX;
done:
    dsq_indexer_free(ix);
    dsq_store_close(st);
    return code;
}

static void print_query_error(const char *text, const dsq_error *e)
{
    fprintf(stderr, "dsq: %s\n", e->msg);
    if (e->offset < 0)
        return;
    fprintf(stderr, "  %s\n  ", text);
    for (long long i = 0; i < e->offset; i++)
        fputc(text[i] == '\t' ? '\t' : ' ', stderr);
    for (long long i = 0; i < (e->length > 0 ? e->length : 1); i++)
        fputc('^', stderr);
    fputc('\n', stderr);
}

typedef struct readers {
    dsq_store *st[MAX_DBS];
    int n;
} readers;

static void close_readers(readers *r)
{
    for (int i = 0; i < r->n; i++)
        dsq_store_close(r->st[i]);
    r->n = 0;
}

static int open_one(readers *r, const char *dir)
{
    dsq_error err;
    dsq_error_clear(&err);
    dsq_store_params sp = {.dir = dir, .readonly = 1};
    if (r->n == MAX_DBS) {
        fprintf(stderr, "dsq: more than %d indexes\n", MAX_DBS);
        return EXIT_USAGE;
    }
    if (dsq_store_open(&sp, &r->st[r->n], &err) == 0) {
        r->n++;
        return 0;
    }
    fprintf(stderr, "dsq: %s\n", err.msg);
    return EXIT_INDEX;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Opens every --db read-only. A directory without an index of its own but with
 * indexes one level down (shard-0, shard-1 ...) stands for all of them. */
static int open_for_reading(cli *c, readers *r)
{
    char path[4200];
    r->n = 0;
    for (int i = 0; i < c->ndbs; i++) {
        snprintf(path, sizeof path, "%s/data.mdb", c->dbs[i]);
        struct dirent **ents = NULL;
        int n = access(path, F_OK) == 0 ? -1 : scandir(c->dbs[i], &ents, NULL, by_name);
        int found = 0, code = 0;
        for (int j = 0; j < n; j++) {
            snprintf(path, sizeof path, "%s/%s/data.mdb", c->dbs[i], ents[j]->d_name);
            if (!code && ents[j]->d_name[0] != '.' && access(path, F_OK) == 0) {
                snprintf(path, sizeof path, "%s/%s", c->dbs[i], ents[j]->d_name);
                code = open_one(r, path);
                found++;
            }
            free(ents[j]);
        }
        free(ents);
        if (!code && !found)
            code = open_one(r, c->dbs[i]);
        if (code) {
            close_readers(r);
            return code;
        }
    }
    return 0;
}

static int cmd_query(cli *c, const char *text)
{
    dsq_error err;
    dsq_query q;
    readers rd;
    dsq_result *r = NULL;
    dsq_error_clear(&err);
    if (dsq_query_parse(text, &q, &err) != 0) {
        print_query_error(text, &err);
        return EXIT_USAGE;
    }
    int code = open_for_reading(c, &rd);
    if (code)
        return code;
    if (dsq_query_run(&q, rd.st, rd.n, &r, &err) != 0) {
        print_query_error(text, &err);
        code = err.code == DSQ_EQUERY ? EXIT_USAGE : EXIT_INDEX;
    } else {
        dsq_result_print(r, stdout, (enum dsq_format)c->format);
    }
    dsq_result_free(r);
    close_readers(&rd);
    return code;
}

/* `dsq runs`, `dsq fields`: a listing over every --db. */
static int cmd_listing(cli *c, int (*list)(dsq_store *const *, int, dsq_result **, dsq_error *))
{
    readers rd;
    dsq_result *r = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    int code = open_for_reading(c, &rd);
    if (code)
        return code;
    if (list(rd.st, rd.n, &r, &err) != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        code = EXIT_INDEX;
    } else {
        dsq_result_print(r, stdout, (enum dsq_format)c->format);
    }
    dsq_result_free(r);
    close_readers(&rd);
    return code;
}

/* `dsq prune` (files gone from disk) and `dsq drop RUN...` (whole runs). */
static int cmd_prune(cli *c, int drop)
{
    dsq_error err;
    dsq_store *st = NULL;
    uint64_t dropped = 0;
    dsq_error_clear(&err);
    if (drop ? c->nargs < 2 : c->nargs != 1) {
        fprintf(stderr, drop ? "dsq drop: name the runs to drop: dsq drop RUN...\n"
                             : "dsq prune takes no arguments (it drops files that are gone)\n");
        return EXIT_USAGE;
    }
    if (c->ndbs > 1) {
        fprintf(stderr, "dsq %s: changes one index: give one --db\n", drop ? "drop" : "prune");
        return EXIT_USAGE;
    }
    if (refuse_shards_dir(c, drop ? "drop" : "prune"))
        return EXIT_USAGE;
    struct stat sb;
    if (stat(c->db, &sb) != 0) {
        fprintf(stderr, "dsq: no index at %s\n", c->db);
        return EXIT_INDEX;
    }
    dsq_store_params sp = {.dir = c->db, .readonly = 0};
    int code = 0;
    if (dsq_store_open(&sp, &st, &err) != 0 ||
        dsq_prune(st, drop ? c->args + 1 : NULL, drop ? c->nargs - 1 : 0, &dropped, &err) != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        code = EXIT_INDEX;
    } else {
        printf("dropped %llu %s from %s\n", (unsigned long long)dropped,
               dropped == 1 ? "file" : "files", c->db);
        if (drop && dropped == 0) {
            fprintf(stderr, "dsq drop: no such run in the index (dsq runs lists them)\n");
            code = EXIT_SKIPPED;
        }
    }
    dsq_store_close(st);
    return code;
}


/* `dsq show [CONDITION]`: the condition is a where clause, parsed as one. */
static int cmd_show(cli *c)
{
    static const char prefix[] = "count where ";
    const char *cond = c->nargs > 1 ? c->args[1] : "";
    dsq_error err;
    dsq_query q;
    readers rd;
    dsq_result *r = NULL;
    uint64_t matched = 0;
    dsq_error_clear(&err);
    if (c->nargs > 2) {
        fprintf(stderr, "dsq show: put the condition in quotes: dsq show \"run = x and rank = 0\"\n");
        return EXIT_USAGE;
    }
    size_t n = sizeof prefix + strlen(cond);
    char *text = malloc(n);
    if (!text)
        return EXIT_INDEX;
    snprintf(text, n, "%s%s", *cond ? prefix : "count", cond);
    int code = 0;
    if (dsq_query_parse(text, &q, &err) != 0 || (q.naggs != 1 || q.nby || q.limit || q.every_us)) {
        if (!err.msg[0])
            dsq_error_set(&err, DSQ_EQUERY, "show takes a condition only (no by, every or limit; "
                                            "use --limit N)");
        if (err.offset >= (long long)sizeof prefix - 1)
            err.offset -= (long long)sizeof prefix - 1;
        print_query_error(cond, &err);
        free(text);
        return EXIT_USAGE;
    }
    if ((code = open_for_reading(c, &rd))) {
        free(text);
        return code;
    }
    size_t limit = c->limit_set ? (size_t)c->limit : 200;
    if (dsq_query_show(&q, rd.st, rd.n, limit, &r, &matched, &err) != 0) {
        if (err.offset >= (long long)sizeof prefix - 1)
            err.offset -= (long long)sizeof prefix - 1;
        print_query_error(cond, &err);
        code = err.code == DSQ_EQUERY ? EXIT_USAGE : EXIT_INDEX;
    } else {
        dsq_result_print(r, stdout, (enum dsq_format)c->format);
        if (matched > dsq_result_rows(r))
            fprintf(stderr, "dsq: showed the first %zu of %llu events (--limit N, or --limit 0 for all)\n",
                    dsq_result_rows(r), (unsigned long long)matched);
    }
    dsq_result_free(r);
    close_readers(&rd);
    free(text);
    return code;
}

/* `dsq explain FILE|-`: each line with what it means (explain.h). */
static int cmd_explain_lines(cli *c)
{
    dsq_catalogue *cat = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    if (c->nargs != 2) {
        fprintf(stderr, "usage: dsq explain [--lang zh] [--only problems] FILE|-\n"
                        "       dsq explain --stats PATH...\n");
        return EXIT_USAGE;
    }
    if (dsq_catalogue_open(c->lang ? c->lang : "en", &cat, &err) != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        return err.code == DSQ_EUSAGE ? EXIT_USAGE : EXIT_INDEX;
    }
    dsq_explain_params p = {.cat = cat, .out = stdout, .only_problems = c->only_problems,
                            .problem = on_problem, .ctx = c};
    int code = 0;
    if (dsq_explain_path(&p, c->args[1], &err) != 0) {
        print_where(&err);
        code = err.code == DSQ_ENOMEM ? EXIT_INDEX : EXIT_SKIPPED;
    }
    dsq_catalogue_free(cat);
    return code ? code : c->problems ? EXIT_SKIPPED : 0;
}

static int cmd_explain(cli *c)
{
    dsq_coverage cov;
    dsq_error err;
    dsq_error_clear(&err);
    if (!c->stats)
        return cmd_explain_lines(c);
    if (c->nargs < 2) {
        fprintf(stderr, "usage: dsq explain --stats PATH...\n");
        return EXIT_USAGE;
    }
    dsq_coverage_params p = {.top = c->top, .problem = on_problem, .ctx = c};
    if (dsq_coverage_run(&p, c->args + 1, c->nargs - 1, &cov, &err) != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        return EXIT_INDEX;
    }
    double share = cov.lines ? 100.0 * (double)cov.recognized / (double)cov.lines : 0;
    printf("%llu files, %llu lines, %llu recognized by a family (%.1f%%), %llu events\n\n",
           (unsigned long long)cov.files, (unsigned long long)cov.lines,
           (unsigned long long)cov.recognized, share, (unsigned long long)cov.events);
    dsq_result_print(cov.families, stdout, (enum dsq_format)c->format);
    if (dsq_result_rows(cov.kinds)) {
        printf("\n");
        dsq_result_print(cov.kinds, stdout, (enum dsq_format)c->format);
    }
    if (dsq_result_rows(cov.shapes)) {
        printf("\nmost frequent unrecognized shapes:\n");
        dsq_result_print(cov.shapes, stdout, (enum dsq_format)c->format);
    }
    dsq_coverage_free(&cov);
    return c->problems ? EXIT_SKIPPED : 0;
}

/* `dsq report RUN`: one run on one screen (report.h). */
static int cmd_report(cli *c)
{
    dsq_catalogue *cat = NULL;
    readers rd;
    dsq_error err;
    dsq_error_clear(&err);
    if (c->nargs != 2) {
        fprintf(stderr, "usage: dsq report [--json] [--html FILE] [--lang zh] RUN (dsq runs lists "
                        "them)\n");
        return EXIT_USAGE;
    }
    if (dsq_catalogue_open(c->lang ? c->lang : "en", &cat, &err) != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        return err.code == DSQ_EUSAGE ? EXIT_USAGE : EXIT_INDEX;
    }
    int code = open_for_reading(c, &rd);
    if (code) {
        dsq_catalogue_free(cat);
        return code;
    }
    dsq_report_params p = {.run = c->args[1], .cat = cat, .out = stdout,
                           .json = c->format == DSQ_FMT_JSON};
    if (c->html && !(p.html = fopen(c->html, "w"))) {
        fprintf(stderr, "dsq: cannot write %s: %s\n", c->html, strerror(errno));
        close_readers(&rd);
        dsq_catalogue_free(cat);
        return EXIT_USAGE;
    }
    if (dsq_report_run(&p, rd.st, rd.n, &err) != 0) {
        fprintf(stderr, "dsq: %s\n", err.msg);
        code = err.code == DSQ_EUSAGE ? EXIT_USAGE : EXIT_INDEX;
    }
    if (p.html && fclose(p.html) != 0 && !code) {
        fprintf(stderr, "dsq: cannot write %s: %s\n", c->html, strerror(errno));
        code = EXIT_INDEX;
    }
    close_readers(&rd);
    dsq_catalogue_free(cat);
    return code;
}

int main(int argc, char **argv)
{
    cli c = {0};
    /* big tables (query groups, buffers) come from the heap and are reused, not
     * mapped and unmapped page by page: a short query spent a third of its time there */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    /* libarchive turns each zip entry's time into seconds with mktime, and glibc's
     * mktime stats /etc/localtime at every call while TZ is unset (1 % of a worker
     * on the bench archive); naming the same zone lets glibc read it once */
    setenv("TZ", ":/etc/localtime", 0);
    c.args = calloc((size_t)argc + 1, sizeof *c.args);
    if (!c.args)
        return EXIT_INDEX;
    c.tty = isatty(2);
    int code, help_asked = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        help_asked |= strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
    if (parse_args(&c, argc, argv) != 0) {
        code = EXIT_USAGE;
    } else if (help_asked && c.nargs > 0) { /* dsq index --help */
        fputs(usage_text, stdout);
        code = 0;
    } else if (c.nargs == 0) {
        int help = 0, version = 0;
        for (int i = 1; i < argc; i++) {
            help |= strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
            version |= strcmp(argv[i], "--version") == 0;
        }
        if (version) {
            const char *shapes = getenv("DSQ_LINE_SHAPES");
            printf("dsq %s (line splitting: %s%s)\ngzip: %s\nzip members: %s\nline shapes: %s\n"
                   "huge pages (index): %s\n",
                   DSQ_VERSION, dsq_linescan_name(dsq_linescan_resolve(DSQ_LINESCAN_AUTO)),
                   DSQ_BUILD_NOTE, dsq_gunzip_backend(),
                   dsq_unzip_available() ? "ISA-L (libarchive reads the headers)" : "zlib (libarchive)",
                   !shapes ? "on"
                   : strcmp(shapes, "0") == 0 ? "off (DSQ_LINE_SHAPES=0)"
                   : strcmp(shapes, "check") == 0 ? "on, every answer checked (DSQ_LINE_SHAPES=check)"
                   : strcmp(shapes, "stats") == 0 ? "on, counts on stderr (DSQ_LINE_SHAPES=stats)"
                                                  : "on",
                   dsq_hugepages_state());
        }
        else
            fputs(usage_text, help ? stdout : stderr);
        code = (help || version) ? 0 : EXIT_USAGE;
    } else if (c.shard && strcmp(c.args[0], "index") != 0) {
        fprintf(stderr, "dsq: --shard is for dsq index (queries take the shards as --db DIR)\n");
        code = EXIT_USAGE;
    } else if (strcmp(c.args[0], "help") == 0) {
        fputs(usage_text, stdout);
        code = 0;
    } else if (strcmp(c.args[0], "index") == 0) {
        dsq_hugepages_start();
        code = cmd_index(&c);
    } else if (strcmp(c.args[0], "explain") == 0) {
        code = cmd_explain(&c);
    } else if (strcmp(c.args[0], "runs") == 0) {
        code = cmd_listing(&c, dsq_runs_list);
    } else if (strcmp(c.args[0], "fields") == 0 && c.nargs == 1) {
        code = cmd_listing(&c, dsq_fields_list);
    } else if (strcmp(c.args[0], "report") == 0) {
        code = cmd_report(&c);
    } else if (strcmp(c.args[0], "show") == 0) {
        code = cmd_show(&c);
    } else if (strcmp(c.args[0], "prune") == 0) {
        code = cmd_prune(&c, 0);
    } else if (strcmp(c.args[0], "drop") == 0) {
        code = cmd_prune(&c, 1);
    } else if (strcmp(c.args[0], "compact") == 0) {
        code = cmd_compact(&c);
    } else if (strcmp(c.args[0], "query") == 0 && c.nargs == 2) {
        code = cmd_query(&c, c.args[1]);
    } else if (c.nargs == 1) {
        code = cmd_query(&c, c.args[0]);
    } else {
        fprintf(stderr, "dsq: put the query in quotes: dsq \"max Max_MA by run\"\n");
        code = EXIT_USAGE;
    }
    free(c.args);
    return code;
}
