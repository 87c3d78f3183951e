/* Huge pages for malloc's heaps (see hugepages.h). */
#include "hugepages.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define TUNABLE "glibc.malloc.hugetlb"
#define RESTARTED "DSQ_HUGE_PAGES_RESTARTED" /* set for the started program only */
#define THP_MODE "/sys/kernel/mm/transparent_hugepage/enabled"

int dsq_hugepages_plan(const char *opt, const char *tunables, const char *preload,
                       const char *thp_mode, char *out, size_t n, const char **why)
{
    const char *w = NULL;
    int len = -1;
    if (opt && strcmp(opt, "0") == 0)
        w = "off (DSQ_HUGE_PAGES=0)";
    else if (preload && strstr(preload, "vgpreload"))
        w = "off (under valgrind)";
    else if (tunables && strstr(tunables, TUNABLE))
        w = "as GLIBC_TUNABLES says";
    else if (!thp_mode || !strstr(thp_mode, "[madvise]"))
        w = thp_mode && strstr(thp_mode, "[always]") ? "by the kernel (THP always)"
                                                     : "off (the kernel has no THP madvise mode)";
    else if ((len = tunables && *tunables ? snprintf(out, n, "%s:" TUNABLE "=1", tunables)
                                          : snprintf(out, n, TUNABLE "=1")) < 0 ||
             (size_t)len >= n)
        w = "off (GLIBC_TUNABLES too long)";
    if (why)
        *why = w ? w : "on (" TUNABLE "=1)";
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
static int plan_here(char *out, size_t n, const char **why)
{
    char mode[128];
    return dsq_hugepages_plan(getenv("DSQ_HUGE_PAGES"), getenv("GLIBC_TUNABLES"),
                              getenv("LD_PRELOAD"), thp_mode(mode, sizeof mode), out, n, why);
}

void dsq_hugepages_restart(char **argv)
{
    char tunables[4096];
    if (getenv(RESTARTED)) {
        unsetenv(RESTARTED);
        return;
    }
    if (!plan_here(tunables, sizeof tunables, NULL))
        return;
    const char *old = getenv("GLIBC_TUNABLES");
    char *keep = old ? strdup(old) : NULL;
    if ((old && !keep) || setenv("GLIBC_TUNABLES", tunables, 1) != 0 ||
        setenv(RESTARTED, "1", 1) != 0)
        goto restore;
    /* the binary's own path first: its name is the process's (ps, top), where
     * /proc/self/exe would name it "exe"; the link itself when that is gone */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        execv(self, argv); /* returns only when it failed */
    }
    execv("/proc/self/exe", argv);
restore:
    unsetenv(RESTARTED);
    if (keep)
        setenv("GLIBC_TUNABLES", keep, 1);
    else
        unsetenv("GLIBC_TUNABLES");
    free(keep);
}

int dsq_hugepages_in_use(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    return t && strstr(t, TUNABLE "=1") != NULL;
}

int dsq_hugepages_one_arena(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    return dsq_hugepages_in_use() && !strstr(t, "glibc.malloc.arena_max") &&
           mallopt(M_ARENA_MAX, 1) == 1;
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
    char tunables[4096];
    const char *why = NULL;
    plan_here(tunables, sizeof tunables, &why);
    return why;
}
