/* Big buffers in 4 KiB pages touched as used (see lazymem.h). */
#include "lazymem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sanitizer.h"

/* The mapping's size, kept before the buffer (one cache line, so the buffer stays
 * 64-byte aligned). */
#define HEAD 64
#define LAZY_MAX ((size_t)1 << 40) /* more is no request of dsq's: refused */

#define LAZY_MAP (!DSQ_SANITIZED)

#if LAZY_MAP
void *dsq_lazy_alloc(size_t n)
{
    size_t len = n + HEAD;
    if (n == 0 || n > LAZY_MAX)
        return NULL;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, len, MADV_NOHUGEPAGE); /* (the kernel's THP mode "always" would give some) */
    memcpy(p, &len, sizeof len);
    return p + HEAD;
}

void dsq_lazy_free(void *p)
{
    if (!p)
        return;
    unsigned char *base = (unsigned char *)p - HEAD;
    size_t len;
    memcpy(&len, base, sizeof len);
    munmap(base, len);
}
#else
void *dsq_lazy_alloc(size_t n) { return n && n <= LAZY_MAX ? calloc(1, n) : NULL; }

void dsq_lazy_free(void *p) { free(p); }
#endif
