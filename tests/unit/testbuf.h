/* Test data shared by the input and read-ahead tests: a growable byte buffer, a
 * file's bytes, and log-like text that compresses but is not trivially repetitive. */
#ifndef DSQ_TEST_TESTBUF_H
#define DSQ_TEST_TESTBUF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_buf {
    char *p;
    size_t n, cap;
} test_buf;

/* Appends n bytes (the buffer stays NUL-terminated). */
static inline void test_buf_add(test_buf *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* Appends the bytes of the file at path. 0, or -1 when it cannot be opened. */
static inline int test_read_file(const char *path, test_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        test_buf_add(out, chunk, n);
    fclose(f);
    return 0;
}

/* About n bytes (at least n) of DeepSpeed-like lines, NUL-terminated at n; free() it. */
static inline char *test_log_text(size_t n, unsigned seed)
{
    char *t = malloc(n + 200);
    size_t at = 0;
    for (unsigned i = 0; at < n; i++) {
        unsigned x = (i + seed) * 2654435761u;
        at += (size_t)sprintf(t + at,
                              "[2024-07-20 21:30:%02u,%03u] [INFO] [utils.py:781:see_memory_usage] "
                              "MA %u.%02u GB Max_MA %u GB step=%u\n",
                              i % 60, x % 1000, x % 80, (x >> 8) % 100, (x >> 16) % 80, i);
    }
    t[n] = 0;
    return t;
}

#endif
