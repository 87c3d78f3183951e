/* Counts the calls to malloc, calloc and realloc of a test program (include it in
 * exactly one file of the program): tests that check "nothing is allocated per
 * line" compare `allocs` before and after. */
#ifndef DSQ_TEST_ALLOC_COUNT_H
#define DSQ_TEST_ALLOC_COUNT_H

#include <stddef.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static unsigned long allocs;

void *malloc(size_t n)
{
    allocs++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    allocs++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    allocs++;
    return __libc_realloc(p, n);
}

void free(void *p) { __libc_free(p); }

#endif
