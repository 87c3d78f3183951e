/* Transparent huge pages for malloc's heaps while indexing.
 *
 * On a virtual machine each first touch of a 4 KiB page is a fault costing ~12 us
 * (this project's 2-core bench machine): an index run touches every page of its peak
 * memory once, so a 121 MB peak (a big job's launcher log) cost ~29,000 faults, about
 * 0.35 s of CPU. With the kernel's THP mode "madvise", glibc's tunable
 * glibc.malloc.hugetlb=1 asks for 2 MiB pages for its heaps (one fault each), but
 * glibc reads tunables from the environment only at start: `dsq index` starts itself
 * again with GLIBC_TUNABLES extended, once (not under valgrind). DSQ_HUGE_PAGES=0
 * turns it off; a GLIBC_TUNABLES that names glibc.malloc.hugetlb already is left as
 * it is.
 */
#ifndef DSQ_HUGEPAGES_H
#define DSQ_HUGEPAGES_H

#include <stddef.h>

/* What to do, from the environment's values (NULL: unset; preload is LD_PRELOAD,
 * which names valgrind's libraries under valgrind: a program started again would
 * leave it) and the text of /sys/kernel/mm/transparent_hugepage/enabled (NULL:
 * unreadable). 1 and the GLIBC_TUNABLES value to start again with in out[0..n); 0
 * when nothing is to be done (also when out is too small). why (may be NULL) gets
 * a short reason. */
int dsq_hugepages_plan(const char *opt, const char *tunables, const char *preload,
                       const char *thp_mode, char *out, size_t n, const char **why);

/* Starts this program again (execv of its own path, from /proc/self/exe, with argv) when
 * dsq_hugepages_plan says so; returns when it did not (the environment as it
 * was, but for the restart marker, which it removes). */
void dsq_hugepages_restart(char **argv);

/* Whether this process's heaps take huge pages (GLIBC_TUNABLES holds
 * glibc.malloc.hugetlb=1). */
int dsq_hugepages_in_use(void);
/* With huge pages (dsq_hugepages_in_use), every thread allocates from malloc's main
 * arena (mallopt M_ARENA_MAX 1; call it before the first thread starts): glibc's
 * tunable gives huge pages to the main arena's heap only, and the threads' own
 * arenas (heaps mapped apart) took 4 KiB pages: a worker's 12 MB on the single log,
 * ~3,000 faults. Threads allocate little after they start (nothing per line), so the
 * one arena's lock costs next to nothing. 1 when asked; 0 without huge pages or when
 * GLIBC_TUNABLES names glibc.malloc.arena_max (the user's choice stays). */
int dsq_hugepages_one_arena(void);

/* No more huge pages for this process (prctl PR_SET_THP_DISABLE; the ones it has
 * stay): past some resident size a 4 KiB page's memory matters more than its fault. */
void dsq_hugepages_enough(void);

/* One line for dsq --version: whether dsq index asks for huge pages, and why not. */
const char *dsq_hugepages_state(void);

#endif
