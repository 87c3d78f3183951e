/* Transparent huge pages for malloc's heap while indexing.
 *
 * On a virtual machine each first touch of a 4 KiB page is a fault costing ~12 us
 * (this project's 2-core bench machine): an index run touches every page of its peak
 * memory once, so a 121 MB peak (a big job's launcher log) cost ~29,000 faults, about
 * 0.35 s of CPU. With the kernel's THP mode "madvise", dsq_hugepages_start (dsq
 * index, before its first thread) has malloc grow its heap by 256 MiB of address
 * space at once (M_TOP_PAD; no memory until touched) and advises that MADV_HUGEPAGE:
 * the heap's memory then comes in 2 MiB pages, one fault each. Every thread
 * allocates from that heap (M_ARENA_MAX 1: a thread's own arena is mapped apart, in
 * 4 KiB pages), and so do blocks up to 32 MiB (M_MMAP_THRESHOLD: a block mapped on
 * its own is faulted afresh each time). It had been done by glibc's tunable
 * glibc.malloc.hugetlb=1, which glibc reads only at its start: dsq index started
 * itself again, ~7 ms of every run. DSQ_HUGE_PAGES=0 turns it off; a GLIBC_TUNABLES
 * that names glibc.malloc.hugetlb leaves it to glibc, and one naming
 * glibc.malloc.arena_max or glibc.malloc.mmap_threshold keeps the user's value.
 */
#ifndef DSQ_HUGEPAGES_H
#define DSQ_HUGEPAGES_H

/* What to do, from the environment's values (NULL: unset; preload is LD_PRELOAD,
 * which names valgrind's libraries under valgrind, whose malloc is its own) and the
 * text of /sys/kernel/mm/transparent_hugepage/enabled (NULL: unreadable): 1 when
 * dsq_hugepages_start is to advise the heap (never in a sanitizer's build, whose
 * malloc is its own). why (may be NULL) gets a short reason. */
int dsq_hugepages_plan(const char *opt, const char *tunables, const char *preload,
                       const char *thp_mode, const char **why);

/* Huge pages for malloc's heap when dsq_hugepages_plan says so (call it before the
 * first thread starts): 1 when the heap was grown and advised (0 also when malloc is
 * not glibc's, as under AddressSanitizer). */
int dsq_hugepages_start(void);

/* Whether this process's heap takes huge pages (dsq_hugepages_start did, or
 * GLIBC_TUNABLES holds glibc.malloc.hugetlb=1). */
int dsq_hugepages_in_use(void);

/* No more huge pages for this process (prctl PR_SET_THP_DISABLE; the ones it has
 * stay): past some resident size a 4 KiB page's memory matters more than its fault. */
void dsq_hugepages_enough(void);

/* One line for dsq --version: whether dsq index asks for huge pages, and why not. */
const char *dsq_hugepages_state(void);

#endif
