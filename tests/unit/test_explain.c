/* dsq explain: what counts as a problem, folding of repeats, --only problems, the
 * language switch, and STYLE rule 7 (no allocation per line): explaining 100,000
 * lines costs exactly as many allocations as explaining 1,000 of the same kinds.
 * malloc, calloc and realloc are replaced (glibc: forwarded to __libc_*) to count. */
#include <stdlib.h>

#include "catalogue.h"
#include "event.h"
#include "explain.h"
#include "grammar.h"
#include "test.h"
#include "tmpdir.h"

#include "alloc_count.h"

/* A log of nlines lines cycling through memory reports, step and throughput lines,
 * NCCL channel lines, a cache-flush warning and plain prints. */
static char *make_log(int nlines, size_t *len)
{
    static const char *const shapes[] = {
        "node1: [2025-01-01 10:00:00,000] [INFO] [utils.py:800:see_memory_usage] After step\n"
        "node1: [2025-01-01 10:00:00,001] [INFO] [utils.py:801:see_memory_usage] MA 1.5 GB "
        "Max_MA 2.5 GB CA 3 GB Max_CA 4 GB \n"
        "node1: [2025-01-01 10:00:00,002] [INFO] [utils.py:808:see_memory_usage] CPU Virtual "
        "Memory:  used = 10.5 GB, percent = 5.1%%\n",
        "node1: [2025-01-01 10:00:01,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=%d, "
        "skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]\n",
        "node1: [2025-01-01 10:00:01,010] [INFO] [timer.py:260:stop] epoch=0/micro_step=%d/"
        "global_step=%d, RunningAvgSamplesPerSec=30.5, CurrSamplesPerSec=31.2, "
        "MemAllocated=2.1GB, MaxMemAllocated=3.7GB\n",
        "h1:11:22 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n",
        "node1: [2025-01-01 10:00:02,000] [WARNING] [stage3.py:2114:step] 2 pytorch allocator "
        "cache flushes since last step. this happens when there is high memory pressure\n",
        "a plain print %d\n"};
    size_t cap = (size_t)nlines * 400 + 1024, n = 0;
    char *buf = malloc(cap);
    for (int i = 0, line = 0; line < nlines; i++) {
        int k = i % 6;
        if (k == 0 && line + 3 > nlines)
            k = 5;
        n += (size_t)snprintf(buf + n, cap - n, shapes[k], i, i);
        line += k == 0 ? 3 : 1;
    }
    *len = n;
    return buf;
}

/* Explains the log of nlines lines into out; returns the allocations it took. */
static unsigned long explain_lines(const char *dir, const dsq_catalogue *cat, int nlines,
                                   int only_problems, FILE *out)
{
    size_t len;
    char *text = make_log(nlines, &len), path[128];
    CHECK_INT(test_write_file(dir, "x.log", text, len), 0);
    free(text);
    snprintf(path, sizeof path, "%s/x.log", dir);
    dsq_explain_params p = {.cat = cat, .out = out, .only_problems = only_problems};
    dsq_error err;
    dsq_error_clear(&err);
    unsigned long before = allocs;
    CHECK_INT(dsq_explain_path(&p, path, &err), 0);
    return allocs - before;
}

static void test_what_counts_as_a_problem(void)
{
    CHECK(dsq_explain_is_problem(DSQ_LV_WARNING, DSQ_FAM_DEEPSPEED, 0));
    CHECK(dsq_explain_is_problem(DSQ_LV_ERROR, DSQ_FAM_NCCL, 0));
    CHECK(dsq_explain_is_problem(DSQ_LV_NONE, DSQ_FAM_TRACEBACK, 0));
    CHECK(dsq_explain_is_problem(DSQ_LV_INFO, DSQ_FAM_NCCL, DSQ_EV_FAILURE));
    CHECK(dsq_explain_is_problem(DSQ_LV_INFO, DSQ_FAM_DEEPSPEED, DSQ_EV_DS_OVERFLOW));
    CHECK(!dsq_explain_is_problem(DSQ_LV_INFO, DSQ_FAM_DEEPSPEED, DSQ_EV_DS_STEP));
    CHECK(!dsq_explain_is_problem(DSQ_LV_INFO, DSQ_FAM_NCCL, DSQ_EV_NCCL_INIT));
    CHECK(!dsq_explain_is_problem(DSQ_LV_NONE, DSQ_FAM_OTHER, 0));
}

static char *read_all(FILE *f)
{
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    return s;
}

static void test_repeats_fold_and_problems_stay(void)
{
    char dir[64];
    dsq_catalogue *en = NULL, *zh = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    if (test_tmpdir_new(dir) != 0 || dsq_catalogue_open("en", &en, &err) ||
        dsq_catalogue_open("zh", &zh, &err)) {
        CHECK(0);
        goto done;
    }
    FILE *f = tmpfile();
    explain_lines(dir, en, 80, 0, f);
    char *s = read_all(f);
    fclose(f);
    CHECK(strstr(s, "> DeepSpeed step report: ") != NULL);   /* explained once ... */
    CHECK(strstr(s, "DeepSpeed step report ×") != NULL);     /* ... then folded */
    CHECK(strstr(s, "… and ") != NULL);
    /* lines 1-3 a memory report, 4 step, 5 throughput, 6 NCCL, 7 warning, 8 print, 9-16 again */
    CHECK(strstr(s, "L4  deepspeed info") != NULL);            /* the first step line */
    CHECK(strstr(s, "L12  deepspeed info") == NULL);           /* the second is folded */
    CHECK(strstr(s, "L15  deepspeed warning") != NULL);        /* problems always shown */
    CHECK(strstr(s, "(explained at line 7)") != NULL);
    CHECK(strstr(s, "-- 80 lines, ") != NULL);
    free(s);

    f = tmpfile();
    explain_lines(dir, en, 80, 1, f);
    s = read_all(f);
    fclose(f);
    CHECK(strstr(s, "step=") == NULL);
    CHECK(strstr(s, "cache flushes") != NULL);
    CHECK(strstr(s, "problem lines shown") != NULL);
    free(s);

    f = tmpfile();
    explain_lines(dir, zh, 80, 1, f);
    s = read_all(f);
    fclose(f);
    CHECK(strstr(s, "PyTorch 分配器缓存清空") != NULL);
    CHECK(strstr(s, "依据: ") != NULL);
    free(s);
done:
    dsq_catalogue_free(en);
    dsq_catalogue_free(zh);
    test_tmpdir_remove(dir);
}

static void test_no_allocation_per_line(void)
{
    char dir[64];
    dsq_catalogue *en = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    FILE *null = fopen("/dev/null", "w");
    if (!null || test_tmpdir_new(dir) != 0 || dsq_catalogue_open("en", &en, &err)) {
        CHECK(0);
        goto done;
    }
    explain_lines(dir, en, 1000, 0, null); /* warm-up: stdio buffers */
    unsigned long a1k = explain_lines(dir, en, 1000, 0, null);
    unsigned long a100k = explain_lines(dir, en, 100000, 0, null);
    CHECK_INT(a100k, a1k);
    unsigned long p1k = explain_lines(dir, en, 1000, 1, null);
    unsigned long p100k = explain_lines(dir, en, 100000, 1, null);
    CHECK_INT(p100k, p1k);
done:
    if (null)
        fclose(null);
    dsq_catalogue_free(en);
    test_tmpdir_remove(dir);
}

TEST_MAIN(T(test_what_counts_as_a_problem), T(test_repeats_fold_and_problems_stay),
          T(test_no_allocation_per_line))
