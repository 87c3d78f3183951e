/* gen_runs: a deterministic archive of synthetic DeepSpeed runs, and the same events
 * as CSV, for the query benchmark (bench/bench_query.sh).
 *
 *   gen_runs [-n RUNS] [-s SEED] [-l ZSTD_LEVEL] OUTDIR
 *
 * Writes OUTDIR/runs/<run>/<host>.log.zst (one directory per run, one pdsh-prefixed
 * log per host, 2-8 hosts per run drawn from a pool of 1024 cluster hosts gpu0001..
 * gpu1024) and OUTDIR/events.csv.zst: one row per event dsq makes of those lines:
 *
 *   run,host,rank,t_us,kind,step,CurrSamplesPerSec,Max_MA,loss,grad_norm
 *
 * t_us is microseconds since 1970 (the log's naive times read as UTC); empty cells
 * are NULL. Numbers in the CSV are the exact text printed in the log, so both sides
 * parse the same decimal strings. Per host and step the log has a log_dist step
 * line (ds_step), a timer.py throughput line (ds_throughput) and an HF loss dict
 * (hf_loss); every 10 steps a three-line see_memory_usage report (memory). After
 * step 1 each host's rank-0 process sets up NCCL (bootstrap, net, env attributes, a
 * ring and an Init COMPLETE: attr x2, nccl_init, nccl_topology), and the first host
 * prints the NCCL version (attr). Runs have 250-469 steps 25-45 s apart, so each
 * spans hours. OUTDIR/counts.txt gets the number of events per kind.
 *
 * Everything is a function of (seed, run, host, step): the same flags give the same
 * bytes. One zstd context and one text buffer are reused for every file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#define GEN_POOL 1024         /* cluster hosts gpu0001..gpu1024 */
#define GEN_BUF (1u << 20)    /* text buffer flushed into zstd */
#define GEN_T0 1719792000LL   /* 2024-07-01 00:00:00 UTC */
#define GEN_MEM_EVERY 10      /* steps between see_memory_usage reports */

enum gen_kind { K_STEP, K_THR, K_LOSS, K_MEM, K_ATTR, K_INIT, K_TOPO, K_RANK_LINES, K_N };
static const char *const kind_name[K_N] = {"ds_step", "ds_throughput", "hf_loss",
                                           "memory",  "attr",          "nccl_init",
                                           "nccl_topology", "rank_lines"};

static const char *const prefixes[] = {
    "alpaca", "atlas",  "aurora", "bert",  "bloom", "chinchilla", "deberta", "falcon",
    "gemma",  "gpt",    "llama",  "mistral", "mixtral", "olmo",   "phi",     "qwen",
    "t5",     "Aquila", "yi",     "zephyr"};

/* A zstd-compressed output file fed from a text buffer. */
typedef struct gen_out {
    FILE *f;
    ZSTD_CCtx *cc;
    char *buf, *zbuf;
    size_t n, zcap;
} gen_out;

/* One run as drawn from the seed. */
typedef struct gen_run {
    char name[40];
    int idx, nhosts, host0, steps;
    int64_t t0_ms, dt_ms;
    int64_t thr_base;  /* CurrSamplesPerSec x 1e4 */
    int64_t mem_base;  /* Max_MA GB x 100 */
} gen_run;

typedef struct gen_params {
    int nruns;
    uint64_t seed;
    int level;
    const char *outdir;
} gen_params;

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* The k-th draw of stream (a, b, c), uniform in [0, n). */
static int64_t draw(uint64_t a, uint64_t b, uint64_t c, uint64_t k, int64_t n)
{
    uint64_t h = mix64(a ^ mix64(b ^ mix64(c ^ mix64(k))));
    return (int64_t)(h % (uint64_t)n);
}

/* ---- text output without printf in the loop ------------------------------------ */

static char *put_s(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

static char *put_u(char *p, uint64_t v)
{
    char t[24];
    int n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = t[--n];
    return p;
}

/* v / 10^dec with exactly dec decimals (v >= 0). */
static char *put_fix(char *p, int64_t v, int dec)
{
    int64_t scale = 1;
    for (int i = 0; i < dec; i++)
        scale *= 10;
    p = put_u(p, (uint64_t)(v / scale));
    if (dec) {
        *p++ = '.';
        int64_t f = v % scale;
        for (int64_t d = scale / 10; d; d /= 10) {
            *p++ = (char)('0' + f / d);
            f %= d;
        }
    }
    return p;
}

static char *put_2(char *p, int v)
{
    *p++ = (char)('0' + v / 10);
    *p++ = (char)('0' + v % 10);
    return p;
}

/* "YYYY-MM-DD HH:MM:SS,mmm" for ms since 1970 (UTC, civil-from-days). */
static char *put_ts(char *p, int64_t ms)
{
    int64_t s = ms / 1000, days = s / 86400, sod = s % 86400;
    int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1), m = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t y = yoe + era * 400 + (m <= 2);
    p = put_u(p, (uint64_t)y);
    *p++ = '-';
    p = put_2(p, m);
    *p++ = '-';
    p = put_2(p, d);
    *p++ = ' ';
    p = put_2(p, (int)(sod / 3600));
    *p++ = ':';
    p = put_2(p, (int)(sod / 60 % 60));
    *p++ = ':';
    p = put_2(p, (int)(sod % 60));
    *p++ = ',';
    *p++ = (char)('0' + ms % 1000 / 100);
    return put_2(p, (int)(ms % 100));
}

/* ---- zstd output --------------------------------------------------------------- */

static int out_drain(gen_out *o, ZSTD_EndDirective end)
{
    ZSTD_inBuffer in = {o->buf, o->n, 0};
    size_t left;
    do {
        ZSTD_outBuffer out = {o->zbuf, o->zcap, 0};
        left = ZSTD_compressStream2(o->cc, &out, &in, end);
        if (ZSTD_isError(left)) {
            fprintf(stderr, "gen_runs: zstd: %s\n", ZSTD_getErrorName(left));
            return -1;
        }
        if (fwrite(o->zbuf, 1, out.pos, o->f) != out.pos)
            return -1;
    } while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
    o->n = 0;
    return 0;
}

/* Room for one more line group; flushes the buffer into zstd when it is nearly full. */
static int out_room(gen_out *o)
{
    return o->n > GEN_BUF - 4096 ? out_drain(o, ZSTD_e_continue) : 0;
}

static int out_open(gen_out *o, const char *path)
{
    o->f = fopen(path, "wb");
    if (!o->f) {
        fprintf(stderr, "gen_runs: %s: %s\n", path, strerror(errno));
        return -1;
    }
    o->n = 0;
    ZSTD_CCtx_reset(o->cc, ZSTD_reset_session_only);
    return 0;
}

static int out_close(gen_out *o)
{
    int rc = out_drain(o, ZSTD_e_end);
    if (o->f && fclose(o->f) != 0)
        rc = -1;
    o->f = NULL;
    return rc;
}

/* ---- one run ------------------------------------------------------------------- */

static void run_draw(gen_run *r, uint64_t seed, int idx)
{
    const int np = (int)(sizeof prefixes / sizeof *prefixes);
    r->idx = idx;
    snprintf(r->name, sizeof r->name, "%s-%05d", prefixes[draw(seed, 1, (uint64_t)idx, 0, np)],
             idx);
    r->nhosts = 2 + (int)draw(seed, 1, (uint64_t)idx, 1, 7);
    r->host0 = (int)draw(seed, 1, (uint64_t)idx, 2, GEN_POOL);
    r->steps = 250 + (int)draw(seed, 1, (uint64_t)idx, 3, 220);
    r->t0_ms = (GEN_T0 + (int64_t)idx * 1800 + draw(seed, 1, (uint64_t)idx, 4, 1800)) * 1000;
    r->dt_ms = 25000 + draw(seed, 1, (uint64_t)idx, 5, 20000);
    r->thr_base = 200000 + draw(seed, 1, (uint64_t)idx, 6, 1800000);
    r->mem_base = 1000 + draw(seed, 1, (uint64_t)idx, 7, 6000);
}

/* Per (run, host) state while its file is written. */
typedef struct gen_host {
    const gen_run *r;
    gen_out *log, *csv;
    uint64_t seed;
    int hi;           /* index within the run */
    char name[16];    /* gpu0001 */
    int rank0;        /* global rank of its local rank 0 */
    int64_t *counts;  /* events per kind */
} gen_host;

/* One CSV row's leading cells: run,host,rank,t_us,kind, */
static char *csv_head(char *p, const gen_host *h, int rank, int64_t ms, int kind)
{
    p = put_s(p, h->r->name);
    *p++ = ',';
    p = put_s(p, h->name);
    *p++ = ',';
    if (rank >= 0)
        p = put_u(p, (uint64_t)rank);
    *p++ = ',';
    p = put_u(p, (uint64_t)ms * 1000);
    *p++ = ',';
    p = put_s(p, kind_name[kind]);
    *p++ = ',';
    h->counts[kind]++;
    return p;
}

/* "gpu0001: [ts] [INFO] [file:line:func] " */
static char *ds_head(char *p, const gen_host *h, int64_t ms, const char *where)
{
    p = put_s(p, h->name);
    p = put_s(p, ": [");
    p = put_ts(p, ms);
    p = put_s(p, "] [INFO] [");
    p = put_s(p, where);
    return put_s(p, "] ");
}

/* The step line, the throughput line and the loss dict of one step. */
static void write_step(const gen_host *h, int step, int64_t ms)
{
    const gen_run *r = h->r;
    uint64_t a = h->seed, b = (uint64_t)r->idx, c = (uint64_t)(h->hi * 100000 + step);
    char *p = h->log->buf + h->log->n, *q = h->csv->buf + h->csv->n, lr[32];
    int64_t warm = step < 100 ? step : 100;
    snprintf(lr, sizeof lr, "%.2e", 1e-4 * (double)warm / 100.0);
    int64_t thr = r->thr_base * (9000 + draw(a, b, c, 0, 2000)) / 10000;
    int64_t loss = 5000 + 25000 * 300 / (300 + step) + draw(a, b, c, 1, 800);
    int64_t gn = 1000 + draw(a, b, c, 2, 30000);
    int skipped = step / 97;

    p = ds_head(p, h, ms, "logging.py:96:log_dist");
    p = put_s(p, "[Rank ");
    p = put_u(p, (uint64_t)h->rank0);
    p = put_s(p, "] step=");
    p = put_u(p, (uint64_t)step);
    p = put_s(p, ", skipped=");
    p = put_u(p, (uint64_t)skipped);
    p = put_s(p, ", lr=[");
    p = put_s(p, lr);
    p = put_s(p, "], mom=[(0.9, 0.999)]\n");
    q = csv_head(q, h, h->rank0, ms, K_STEP);
    q = put_u(q, (uint64_t)step);
    q = put_s(q, ",,,,\n");

    p = ds_head(p, h, ms, "timer.py:260:stop");
    p = put_s(p, "epoch=0/micro_step=");
    p = put_u(p, (uint64_t)step * 4);
    p = put_s(p, "/global_step=");
    p = put_u(p, (uint64_t)step);
    p = put_s(p, ", RunningAvgSamplesPerSec=");
    p = put_fix(p, r->thr_base, 4);
    p = put_s(p, ", CurrSamplesPerSec=");
    p = put_fix(p, thr, 4);
    p = put_s(p, ", MemAllocated=20.1GB, MaxMemAllocated=21.4GB\n");
    q = csv_head(q, h, -1, ms, K_THR);
    q = put_s(q, ",");
    q = put_fix(q, thr, 4);
    q = put_s(q, ",,,\n");

    p = put_s(p, h->name);
    p = put_s(p, ": {'loss': ");
    p = put_fix(p, loss, 4);
    p = put_s(p, ", 'grad_norm': ");
    p = put_fix(p, gn, 4);
    p = put_s(p, ", 'learning_rate': ");
    p = put_s(p, lr);
    p = put_s(p, ", 'epoch': ");
    p = put_fix(p, (int64_t)step * 10000 / r->steps, 4);
    p = put_s(p, "}\n");
    q = csv_head(q, h, -1, ms, K_LOSS);
    q = put_s(q, ",,,");
    q = put_fix(q, loss, 4);
    *q++ = ',';
    q = put_fix(q, gn, 4);
    *q++ = '\n';
    h->log->n = (size_t)(p - h->log->buf);
    h->csv->n = (size_t)(q - h->csv->buf);
}

/* The three-line see_memory_usage report after a step. */
static void write_mem(const gen_host *h, int step, int64_t ms)
{
    const gen_run *r = h->r;
    char *p = h->log->buf + h->log->n, *q = h->csv->buf + h->csv->n;
    int64_t mx = r->mem_base + h->hi * 37 + step * 3 % 250 +
                 draw(h->seed, (uint64_t)r->idx, (uint64_t)(h->hi * 100000 + step), 3, 100);
    int64_t ma = mx * 3 / 4;

    p = ds_head(p, h, ms, "utils.py:800:see_memory_usage");
    p = put_s(p, "After step ");
    p = put_u(p, (uint64_t)step);
    *p++ = '\n';
    p = ds_head(p, h, ms, "utils.py:801:see_memory_usage");
    p = put_s(p, "MA ");
    p = put_fix(p, ma, 2);
    p = put_s(p, " GB         Max_MA ");
    p = put_fix(p, mx, 2);
    p = put_s(p, " GB         CA ");
    p = put_fix(p, mx + 150, 2);
    p = put_s(p, " GB         Max_CA ");
    p = put_u(p, (uint64_t)(mx + 250) / 100);
    p = put_s(p, " GB \n");
    p = ds_head(p, h, ms, "utils.py:808:see_memory_usage");
    p = put_s(p, "CPU Virtual Memory:  used = 164.03 GB, percent = 16.3%\n");
    q = csv_head(q, h, -1, ms, K_MEM);
    q = put_s(q, ",,");
    q = put_fix(q, mx, 2);
    q = put_s(q, ",,\n");
    h->log->n = (size_t)(p - h->log->buf);
    h->csv->n = (size_t)(q - h->csv->buf);
}

/* NCCL set-up of the host's local rank 0 (after step 1, as NCCL inits lazily). */
static void write_nccl(const gen_host *h, int64_t ms)
{
    const gen_run *r = h->r;
    char *p = h->log->buf + h->log->n, *q = h->csv->buf + h->csv->n, pre[64], line[2048];
    int pid = 2000 + (int)draw(h->seed, (uint64_t)r->idx, (uint64_t)h->hi, 4, 60000);
    int n = r->nhosts * 8, g = h->rank0, prev = (g + n - 8) % n;
    unsigned long long comm = 0x55d000000000ULL + (unsigned long long)(r->idx * 64 + h->hi);
    unsigned long long cid = mix64(h->seed ^ (uint64_t)r->idx);

    snprintf(pre, sizeof pre, "%s: %s:%d:%d [0] NCCL INFO ", h->name, h->name, pid, pid + 117);
    snprintf(line, sizeof line, "%s: %s:%d:%d [0] NCCL INFO Bootstrap : Using ib0:10.31.%d.%d<0>\n",
             h->name, h->name, pid, pid, (h->r->host0 + h->hi) % GEN_POOL / 256,
             (h->r->host0 + h->hi) % 256);
    p = put_s(p, line);
    q = csv_head(q, h, -1, ms, K_ATTR);
    q = put_s(q, ",,,,\n");
    if (h->hi == 0) {
        p = put_s(p, h->name);
        p = put_s(p, ": NCCL version 2.18.5+cuda12.2\n");
        q = csv_head(q, h, -1, ms, K_ATTR);
        q = put_s(q, ",,,,\n");
    }
    p = put_s(p, pre);
    p = put_s(p, "NCCL_IB_DISABLE set by environment to 0.\n");
    q = csv_head(q, h, -1, ms, K_ATTR);
    q = put_s(q, ",,,,\n");
    p = put_s(p, pre);
    p = put_s(p, "Using network IB\n"); /* no event: dsq takes nccl_net from NET/IB lines */
    snprintf(line, sizeof line,
             "%scomm 0x%llx rank %d nRanks %d nNodes %d localRanks 8 localRank 0 MNNVL 0\n"
             "%sChannel 00/02 :    0   1   2   3   4   5   6   7\n"
             "%sChannel 01/02 :    0   1   2   3   4   5   6   7\n"
             "%sChannel 00/0 : %d[7] -> %d[0] [receive] via NET/IB/0\n"
             "%sChannel 01/0 : %d[7] -> %d[0] [receive] via NET/IB/0\n"
             "%sChannel 00/0 : %d[0] -> %d[1] via P2P/IPC/read\n"
             "%sChannel 01/0 : %d[0] -> %d[1] via P2P/IPC/read\n"
             "%sConnected all rings\n",
             pre, comm, g, n, r->nhosts, pre, pre, pre, prev + 7, g, pre, prev + 7, g, pre, g,
             g + 1, pre, g, g + 1, pre);
    p = put_s(p, line);
    snprintf(line, sizeof line,
             "%s2 coll channels, 0 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p "
             "channels per peer\n"
             "%sncclCommInitRank comm 0x%llx rank %d nranks %d cudaDev 0 nvmlDev 0 busId 1b000 "
             "commId 0x%llx - Init COMPLETE\n",
             pre, pre, comm, g, n, cid);
    p = put_s(p, line);
    for (int k = K_INIT; k <= K_TOPO; k++) {
        q = csv_head(q, h, g, ms, k);
        q = put_s(q, ",,,,\n");
    }
    h->log->n = (size_t)(p - h->log->buf);
    h->csv->n = (size_t)(q - h->csv->buf);
}

/* One host's whole log. */
static int write_host(gen_host *h, const char *rundir)
{
    char path[640];
    int64_t jit = draw(h->seed, (uint64_t)h->r->idx, (uint64_t)h->hi, 5, 900);
    snprintf(path, sizeof path, "%s/%s.log.zst", rundir, h->name);
    if (out_open(h->log, path) != 0)
        return -1;
    int64_t ms = 0;
    for (int s = 1; s <= h->r->steps; s++) {
        ms = h->r->t0_ms + (int64_t)s * h->r->dt_ms + jit + s % 7;
        write_step(h, s, ms);
        if (s == 1)
            write_nccl(h, ms);
        if (s % GEN_MEM_EVERY == 0)
            write_mem(h, s, ms + 40);
        if (out_room(h->log) != 0 || out_room(h->csv) != 0)
            return -1;
    }
    /* what dsq adds at the end of a file: the NCCL world_size and nodes attributes,
     * and the rank_lines record of the rank the file's lines belong to */
    char *q = h->csv->buf + h->csv->n;
    for (int k = 0; k < 2; k++) {
        q = csv_head(q, h, -1, ms, K_ATTR);
        q = put_s(q, ",,,,\n");
    }
    q = csv_head(q, h, h->rank0, ms, K_RANK_LINES);
    q = put_s(q, ",,,,\n");
    h->csv->n = (size_t)(q - h->csv->buf);
    return out_close(h->log);
}

static int write_run(const gen_params *gp, int idx, gen_out *log, gen_out *csv, int64_t *counts)
{
    gen_run r;
    char rundir[512];
    run_draw(&r, gp->seed, idx);
    snprintf(rundir, sizeof rundir, "%s/runs/%s", gp->outdir, r.name);
    if (mkdir(rundir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_runs: mkdir %s: %s\n", rundir, strerror(errno));
        return -1;
    }
    for (int hi = 0; hi < r.nhosts; hi++) {
        gen_host h = {&r, log, csv, gp->seed, hi, "", hi * 8, counts};
        snprintf(h.name, sizeof h.name, "gpu%04d", (r.host0 + hi) % GEN_POOL + 1);
        if (write_host(&h, rundir) != 0)
            return -1;
    }
    return 0;
}

static int out_init(gen_out *o, int level)
{
    o->cc = ZSTD_createCCtx();
    o->buf = malloc(GEN_BUF);
    o->zcap = ZSTD_CStreamOutSize();
    o->zbuf = malloc(o->zcap);
    if (!o->cc || !o->buf || !o->zbuf)
        return -1;
    ZSTD_CCtx_setParameter(o->cc, ZSTD_c_compressionLevel, level);
    return 0;
}

static void out_free(gen_out *o)
{
    if (o->f)
        fclose(o->f);
    ZSTD_freeCCtx(o->cc);
    free(o->buf);
    free(o->zbuf);
}

static int write_counts(const gen_params *gp, const int64_t *counts)
{
    char path[512];
    int64_t total = 0;
    snprintf(path, sizeof path, "%s/counts.txt", gp->outdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (int k = 0; k < K_N; k++) {
        fprintf(f, "%s %lld\n", kind_name[k], (long long)counts[k]);
        total += counts[k];
    }
    fprintf(f, "total %lld\n", (long long)total);
    fprintf(stderr, "gen_runs: %d runs, %lld events\n", gp->nruns, (long long)total);
    return fclose(f);
}

static int generate(const gen_params *gp)
{
    gen_out log = {0}, csv = {0};
    int64_t counts[K_N] = {0};
    char path[512];
    int rc = -1;
    snprintf(path, sizeof path, "%s/runs", gp->outdir);
    if ((mkdir(gp->outdir, 0777) != 0 && errno != EEXIST) ||
        (mkdir(path, 0777) != 0 && errno != EEXIST)) {
        fprintf(stderr, "gen_runs: mkdir %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (out_init(&log, gp->level) != 0 || out_init(&csv, gp->level) != 0)
        goto cleanup;
    snprintf(path, sizeof path, "%s/events.csv.zst", gp->outdir);
    if (out_open(&csv, path) != 0)
        goto cleanup;
    csv.n = (size_t)(put_s(csv.buf, "run,host,rank,t_us,kind,step,CurrSamplesPerSec,Max_MA,"
                                    "loss,grad_norm\n") - csv.buf);
    for (int i = 0; i < gp->nruns; i++)
        if (write_run(gp, i, &log, &csv, counts) != 0)
            goto cleanup;
    if (out_close(&csv) != 0)
        goto cleanup;
    rc = write_counts(gp, counts);
cleanup:
    out_free(&log);
    out_free(&csv);
    return rc;
}

int main(int argc, char **argv)
{
    gen_params gp = {10000, 1, 1, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            gp.nruns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            gp.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-l") && i + 1 < argc)
            gp.level = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !gp.outdir)
            gp.outdir = argv[i];
        else
            gp.outdir = NULL, i = argc;
    }
    if (!gp.outdir || gp.nruns < 1) {
        fprintf(stderr, "usage: gen_runs [-n RUNS] [-s SEED] [-l ZSTD_LEVEL] OUTDIR\n");
        return 2;
    }
    return generate(&gp) == 0 ? 0 : 1;
}
