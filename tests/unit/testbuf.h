/* Test data shared by the input and read-ahead tests: a growable byte buffer, a
 * file's bytes, and log-like text that compresses but is not trivially repetitive;
 * and the parsers' differential tests' walk over the corpus. */
#ifndef DSQ_TEST_TESTBUF_H
#define DSQ_TEST_TESTBUF_H

#include <dirent.h>
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

/* An exact-size heap copy of text[0..len) and the '\n' sentinel the grammars read
 * to (grammar.h), so ASan sees any read past it; NULL when out of memory. free() it. */
static inline char *test_line_copy(const char *text, size_t len)
{
    char *line = malloc(len + 1);
    if (line) {
        memcpy(line, text, len);
        line[len] = '\n';
    }
    return line;
}

/* Calls each(line, len) for every line of every file in the corpus directory that
 * DSQ_CORPUS names (a line cut at '\n' or '\r', as lines.h cuts it), and for what
 * follows each blank among its first `blanks` bytes, as after a peeled prefix.
 * Returns 0, or -1 (and says so) when DSQ_CORPUS is unset or unreadable. */
static inline int test_corpus_lines(size_t blanks, void (*each)(const char *line, size_t len))
{
    const char *dir = getenv("DSQ_CORPUS");
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        printf("  (no corpus: DSQ_CORPUS unset or unreadable)\n");
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[1024];
        test_buf f = {0};
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || test_read_file(path, &f) != 0)
            continue;
        for (const char *p = f.p, *end = f.p + f.n; p < end;) {
            const char *q = p;
            while (q < end && *q != '\n' && *q != '\r')
                q++;
            size_t len = (size_t)(q - p);
            each(p, len);
            for (size_t i = 0; i < len && i < blanks; i++)
                if (p[i] == ' ')
                    each(p + i + 1, len - i - 1);
            p = q + 1;
        }
        free(f.p);
    }
    closedir(d);
    return 0;
}

#endif
