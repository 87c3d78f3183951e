/* dsq_hugepages_plan: dsq index advises malloc's heap for huge pages only when the
 * kernel's THP mode is madvise, the user did not turn it off (DSQ_HUGE_PAGES=0) and
 * GLIBC_TUNABLES does not name glibc.malloc.hugetlb, and not under valgrind; the
 * reason for --version in every case; dsq_hugepages_enough stops them for the
 * process; dsq_hugepages_start advises the heap, from which every thread and big
 * blocks then allocate. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "hugepages.h"
#include "sanitizer.h"
#include "test.h"

#define MADVISE "always [madvise] never\n"

/* AddressSanitizer's allocator is not glibc's: no arenas to look at */
#define GLIBC_MALLOC (!DSQ_SANITIZED)

static void test_plan_says_on(void)
{
    const char *why = NULL;
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, MADVISE, &why), GLIBC_MALLOC);
    CHECK_STR(why, GLIBC_MALLOC ? "on (malloc's heap advised MADV_HUGEPAGE)" : "off (a sanitizer's malloc)");
    CHECK_INT(dsq_hugepages_plan(NULL, "", NULL, MADVISE, NULL), GLIBC_MALLOC);
    CHECK_INT(dsq_hugepages_plan("1", "glibc.malloc.check=3", "libfoo.so", MADVISE, NULL), GLIBC_MALLOC);
}

static void test_plan_leaves_it_alone(void)
{
    const char *why = NULL;
    CHECK_INT(dsq_hugepages_plan("0", NULL, NULL, MADVISE, &why), 0);
    CHECK_STR(why, "off (DSQ_HUGE_PAGES=0)");
    CHECK_INT(dsq_hugepages_plan(NULL, "glibc.malloc.hugetlb=0", NULL, MADVISE, &why), 0);
    CHECK_STR(why, "as GLIBC_TUNABLES says");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
                                 MADVISE, &why), 0);
    CHECK_STR(why, "off (under valgrind)");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, "[always] madvise never\n", &why), 0);
    CHECK_STR(why, "by the kernel (THP always)");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, "always madvise [never]\n", &why), 0);
    CHECK_STR(why, "off (the kernel has no THP madvise mode)");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, NULL, &why), 0);
    CHECK_STR(why, "off (the kernel has no THP madvise mode)");
}

/* in use as the environment says; enough stops them for the process when in use */
static void test_enough_stops_them(void)
{
    unsetenv("GLIBC_TUNABLES");
    CHECK_INT(dsq_hugepages_in_use(), 0);
    dsq_hugepages_enough(); /* not in use: nothing to stop */
    CHECK_INT(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), 0);
    setenv("GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.hugetlb=0", 1);
    CHECK_INT(dsq_hugepages_in_use(), 0);
    setenv("GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.hugetlb=1", 1);
    CHECK_INT(dsq_hugepages_in_use(), 1);
    dsq_hugepages_enough();
    CHECK_INT(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), 1);
    unsetenv("GLIBC_TUNABLES");
}

static void *alloc_in_thread(void *arg)
{
    *(void **)arg = malloc(4096);
    return NULL;
}

/* Whether the mapping holding p is advised for huge pages ("hg" in its VmFlags). */
static int advised_huge(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    char line[512];
    int in = 0, hg = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0)
            hg = strstr(line, " hg") != NULL;
    }
    if (f)
        fclose(f);
    return hg;
}

/* Off as DSQ_HUGE_PAGES=0 says (nothing changed); on where the kernel's mode is
 * madvise and malloc is glibc's: the heap's memory advised, every thread's and a big
 * block's from that heap (below the program break); once only. */
static void test_start_advises_the_heap(void)
{
    setenv("DSQ_HUGE_PAGES", "0", 1);
    CHECK_INT(dsq_hugepages_start(), 0);
    CHECK_INT(dsq_hugepages_in_use(), 0);
    unsetenv("DSQ_HUGE_PAGES");
    unsetenv("GLIBC_TUNABLES");
    int on = strncmp(dsq_hugepages_state(), "on", 2) == 0;
    CHECK_INT(dsq_hugepages_start(), on);
    CHECK_INT(dsq_hugepages_in_use(), on);
    CHECK_INT(dsq_hugepages_start(), on); /* once: the same answer */
    if (!on)
        return;
    void *small = malloc(100), *big = malloc((size_t)4 << 20), *th_block = NULL;
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, alloc_in_thread, &th_block), 0);
    CHECK_INT(pthread_join(th, NULL), 0);
    CHECK(small && big && th_block);
    uintptr_t brk_end = (uintptr_t)sbrk(0);
    CHECK((uintptr_t)big < brk_end && (uintptr_t)th_block < brk_end);
    CHECK(advised_huge(small) && advised_huge(big) && advised_huge(th_block));
    free(small);
    free(big);
    free(th_block);
}

TEST_MAIN(T(test_plan_says_on), T(test_plan_leaves_it_alone), T(test_enough_stops_them),
          T(test_start_advises_the_heap))
