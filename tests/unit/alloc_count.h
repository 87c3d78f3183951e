/* Counts the calls to malloc, calloc and realloc of a test program (include it in
 * exactly one file of the program): tests that check "nothing is allocated per
 * line" compare `allocs` before and after. A test that runs something out of memory
 * sets `realloc_refuse`: realloc fails (NULL) when it says so. */
#ifndef DSQ_TEST_ALLOC_COUNT_H
#define DSQ_TEST_ALLOC_COUNT_H

#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static unsigned long allocs;
static int (*realloc_refuse)(size_t n); /* NULL: realloc never fails here */

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
    if (realloc_refuse && realloc_refuse(n))
        return NULL;
    return __libc_realloc(p, n);
}

void free(void *p) { __libc_free(p); }

/* strdup and strndup too: a sanitizer build would otherwise allocate their copies
 * with its own allocator, which the free above cannot release (libarchive's
 * charset conversions use them) */
char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

char *strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

#endif
