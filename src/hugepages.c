/* Huge pages for malloc's heap (see hugepages.h). */
#include "hugepages.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sanitizer.h"

#define TUNABLE "glibc.malloc.hugetlb"
#define THP_MODE "/sys/kernel/mm/transparent_hugepage/enabled"

/* Address space the heap takes at its next growth, advised for huge pages at once
 * (touched only as used: no memory until then). Past it the heap grows in 4 KiB
 * pages; goal 4 keeps a run's whole peak under 256 MB. */
#define HEAP_RESERVE ((size_t)256 << 20)
/* Blocks below this come from the heap, not a mapping of their own: a mapping is
 * faulted afresh in 4 KiB pages each time (glibc's own threshold starts at 128 KiB
 * and moves up only as such blocks are freed: a .tar.zst's 2.4 MB zstd window was
 * mapped and faulted again and again). glibc's largest. */
#define FROM_HEAP_BELOW (32 << 20)
/* The heap is grown by allocating blocks this big until the break moves */
#define PROBE ((size_t)64 << 10)
#define PROBES 64

static int started; /* dsq_hugepages_start advised the heap */

int dsq_hugepages_plan(const char *opt, const char *tunables, const char *preload,
                       const char *thp_mode, const char **why)
{
    const char *w = NULL;
    if (opt && strcmp(opt, "0") == 0)
        w = "off (DSQ_HUGE_PAGES=0)";
    else if (preload && strstr(preload, "vgpreload"))
        w = "off (under valgrind)";
    else if (tunables && strstr(tunables, TUNABLE))
        w = "as GLIBC_TUNABLES says";
    else if (!thp_mode || !strstr(thp_mode, "[madvise]"))
        w = thp_mode && strstr(thp_mode, "[always]") ? "by the kernel (THP always)"
                                                     : "off (the kernel has no THP madvise mode)";
    else if (DSQ_SANITIZED)
        w = "off (a sanitizer's malloc)"; /* not glibc's: no heap to advise */
    if (why)
        *why = w ? w : "on (malloc's heap advised MADV_HUGEPAGE)";
    return w == NULL;
}

static const char *thp_mode(char *buf, size_t n)
{
    FILE *f = fopen(THP_MODE, "re");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    if (f)
        fclose(f);
    buf[got] = 0;
    return got ? buf : NULL;
}

/* dsq_hugepages_plan from this process's environment and the kernel's mode. */
static int plan_here(const char **why)
{
    char mode[128];
    return dsq_hugepages_plan(getenv("DSQ_HUGE_PAGES"), getenv("GLIBC_TUNABLES"),
                              getenv("LD_PRELOAD"), thp_mode(mode, sizeof mode), why);
}

/* Whether the user's GLIBC_TUNABLES sets glibc.malloc.<name> (theirs stays). */
static int user_sets(const char *name)
{
    const char *t = getenv("GLIBC_TUNABLES");
    char full[64];
    snprintf(full, sizeof full, "glibc.malloc.%s", name);
    return t && strstr(t, full) != NULL;
}

/* Grows the heap by its pad (malloc's next growth of the break) and advises what it
 * grew for huge pages. 0 when the break did not move (another allocator, or a heap
 * that is not grown by brk) or the advice failed. */
static int advise_heap(void)
{
    void *blocks[PROBES];
    int n = 0, ok = 0;
    uintptr_t before = (uintptr_t)sbrk(0);
    while (n < PROBES && (uintptr_t)sbrk(0) - before < HEAP_RESERVE / 2 &&
           (blocks[n] = malloc(PROBE)) != NULL)
        n++;
    uintptr_t end = (uintptr_t)sbrk(0);
    if (n > 0 && end - before >= HEAP_RESERVE / 2) {
        /* from the first block's page: below the break, in the heap's mapping */
        uintptr_t lo = (uintptr_t)blocks[0] & ~(uintptr_t)4095;
        ok = lo < end && madvise((void *)lo, end - lo, MADV_HUGEPAGE) == 0;
    }
    while (n > 0)
        free(blocks[--n]);
    return ok;
}

int dsq_hugepages_start(void)
{
    if (started || !plan_here(NULL))
        return started;
    if (!user_sets("arena_max"))
        mallopt(M_ARENA_MAX, 1);
    if (!user_sets("mmap_threshold"))
        mallopt(M_MMAP_THRESHOLD, FROM_HEAP_BELOW);
    mallopt(M_TOP_PAD, (int)HEAP_RESERVE);
    started = advise_heap();
    return started;
}

int dsq_hugepages_in_use(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    return started || (t && strstr(t, TUNABLE "=1") != NULL);
}

void dsq_hugepages_enough(void)
{
    static int done; /* (the writer's thread alone calls it) */
    if (done || !dsq_hugepages_in_use())
        return;
    done = 1;
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}

const char *dsq_hugepages_state(void)
{
    const char *why = NULL;
    plan_here(&why);
    return why;
}
