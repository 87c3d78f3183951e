/* Big buffers whose pages cost only where they are touched.
 *
 * While indexing, malloc's heap takes 2 MiB pages (hugepages.h): one fault, and the
 * whole 2 MiB zeroed, at the first touch of any of its bytes. On this project's
 * bench machine (a VM) that costs 0.13-4.3 ms a huge page (cold host memory the slow
 * end), against ~12.5 us for a 4 KiB page (the guest's page-table writes trap), so
 * memory that is touched sparsely costs more in huge pages: each
 * scanner's line-shape table (2 MB, a few sets used), an input's 1 MB decode buffers
 * (a small file fills a few pages), a splitter's 1 MB carry (a line's tail). The
 * setup of `dsq index` alone took 6 huge pages (12 MB resident, 8-26 ms before the
 * first worker started) where it touches 1.3 MB. Such buffers get a mapping of their
 * own here, in 4 KiB pages, zero-filled and touched as used. Under AddressSanitizer
 * they come from calloc, so its checks still cover them.
 */
#ifndef DSQ_LAZYMEM_H
#define DSQ_LAZYMEM_H

#include <stddef.h>

/* n bytes (0 < n <= 2^40), zeroed, aligned as malloc's; NULL when out of memory. */
void *dsq_lazy_alloc(size_t n);
/* Frees what dsq_lazy_alloc gave (NULL: nothing). */
void dsq_lazy_free(void *p);

#endif
