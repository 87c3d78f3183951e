/* dsq_hugepages_plan: dsq index starts itself again with glibc.malloc.hugetlb=1
 * appended to GLIBC_TUNABLES only when the kernel's THP mode is madvise, the user
 * did not turn it off (DSQ_HUGE_PAGES=0) and GLIBC_TUNABLES does not name the tunable
 * already, and not under valgrind; the reason for --version in every case; and
 * dsq_hugepages_enough stops them for the process; with them, dsq_hugepages_one_arena
 * has threads allocate from the main arena's heap. */
#include <pthread.h>
#include <stdint.h>
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

static void test_plan_appends_the_tunable(void)
{
    char out[256];
    const char *why = NULL;
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, MADVISE, out, sizeof out, &why), 1);
    CHECK_STR(out, "glibc.malloc.hugetlb=1");
    CHECK_STR(why, "on (glibc.malloc.hugetlb=1)");
    CHECK_INT(dsq_hugepages_plan(NULL, "", NULL, MADVISE, out, sizeof out, NULL), 1);
    CHECK_STR(out, "glibc.malloc.hugetlb=1");
    CHECK_INT(dsq_hugepages_plan("1", "glibc.malloc.check=3", "libfoo.so", MADVISE, out, sizeof out, NULL), 1);
    CHECK_STR(out, "glibc.malloc.check=3:glibc.malloc.hugetlb=1");
}

static void test_plan_leaves_it_alone(void)
{
    char out[64];
    const char *why = NULL;
    CHECK_INT(dsq_hugepages_plan("0", NULL, NULL, MADVISE, out, sizeof out, &why), 0);
    CHECK_STR(why, "off (DSQ_HUGE_PAGES=0)");
    CHECK_INT(dsq_hugepages_plan(NULL, "glibc.malloc.hugetlb=0", NULL, MADVISE, out, sizeof out, &why), 0);
    CHECK_STR(why, "as GLIBC_TUNABLES says");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
                                 MADVISE, out, sizeof out, &why), 0);
    CHECK_STR(why, "off (under valgrind)");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, "[always] madvise never\n", out, sizeof out, &why), 0);
    CHECK_STR(why, "by the kernel (THP always)");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, "always madvise [never]\n", out, sizeof out, &why), 0);
    CHECK_STR(why, "off (the kernel has no THP madvise mode)");
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, NULL, out, sizeof out, &why), 0);
    CHECK_STR(why, "off (the kernel has no THP madvise mode)");
    /* room for the value and its terminator, or nothing */
    char tiny[22];
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, MADVISE, tiny, sizeof tiny, &why), 0);
    CHECK_STR(why, "off (GLIBC_TUNABLES too long)");
    char fits[23];
    CHECK_INT(dsq_hugepages_plan(NULL, NULL, NULL, MADVISE, fits, sizeof fits, &why), 1);
    CHECK_STR(fits, "glibc.malloc.hugetlb=1");
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

static void test_one_arena_for_every_thread(void)
{
    setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1);
    CHECK_INT(dsq_hugepages_one_arena(), 0); /* no huge pages: arenas as they are */
    setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=4", 1);
    CHECK_INT(dsq_hugepages_one_arena(), 0); /* the user's arena_max stays */
    setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1);
    CHECK_INT(dsq_hugepages_one_arena(), GLIBC_MALLOC);
    unsetenv("GLIBC_TUNABLES");
    /* the first thread of this test program: its memory comes from the main arena,
     * the heap below the program break (a thread's own arena is mapped elsewhere) */
    void *p = NULL;
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, alloc_in_thread, &p), 0);
    CHECK_INT(pthread_join(th, NULL), 0);
    CHECK(p != NULL);
    if (GLIBC_MALLOC)
        CHECK(p != NULL && (uintptr_t)p < (uintptr_t)sbrk(0));
    free(p);
}

TEST_MAIN(T(test_plan_appends_the_tunable), T(test_plan_leaves_it_alone), T(test_enough_stops_them),
          T(test_one_arena_for_every_thread))
