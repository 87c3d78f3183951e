/* dsq_lazy_alloc: zeroed buffers, aligned as malloc's, of any size that can be written
 * end to end and freed; 0 bytes is NULL; freeing NULL does nothing. */
#include <stdint.h>
#include <string.h>

#include "lazymem.h"
#include "test.h"

static void test_alloc_is_zeroed_and_aligned(void)
{
    const size_t sizes[] = {1, 63, 64, 4096, 4097, (size_t)2 << 20, ((size_t)3 << 20) + 5};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = dsq_lazy_alloc(sizes[i]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK_INT((int)((uintptr_t)p % 16), 0);
        size_t nonzero = 0;
        for (size_t k = 0; k < sizes[i]; k += 997)
            nonzero += p[k] != 0;
        CHECK_INT((int)nonzero, 0);
        CHECK_INT(p[sizes[i] - 1], 0);
        memset(p, 0xA5, sizes[i]); /* every byte is ours */
        CHECK_INT(p[sizes[i] - 1], 0xA5);
        dsq_lazy_free(p);
    }
}

static void test_nothing_for_nothing(void)
{
    CHECK(dsq_lazy_alloc(0) == NULL);
    CHECK(dsq_lazy_alloc(SIZE_MAX) == NULL);
    dsq_lazy_free(NULL);
}

TEST_MAIN(T(test_alloc_is_zeroed_and_aligned), T(test_nothing_for_nothing))
