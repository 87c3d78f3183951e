/* Minimal unit-test harness: each tests/unit/test_<module>.c is one program that
 * lists its cases in TEST_MAIN; a failed CHECK prints file:line and the values,
 * the case goes on, and the program exits 1 if anything failed. */
#ifndef DSQ_TEST_H
#define DSQ_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                         \
        }                                                                            \
    } while (0)

#define CHECK_INT(a, b)                                                                      \
    do {                                                                                     \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                \
        if (va_ != vb_) {                                                                    \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a,    \
                    va_, vb_);                                                               \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

#define CHECK_DBL(a, b)                                                                      \
    do {                                                                                     \
        double va_ = (a), vb_ = (b);                                                         \
        if (!(va_ == vb_ || fabs(va_ - vb_) <= 1e-12 * fabs(vb_))) {                         \
            fprintf(stderr, "%s:%d: %s == %.17g, expected %.17g\n", __FILE__, __LINE__, #a,  \
                    va_, vb_);                                                               \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

#define CHECK_STR(a, b)                                                                      \
    do {                                                                                     \
        const char *va_ = (a), *vb_ = (b);                                                   \
        if (!va_ || strcmp(va_, vb_) != 0) {                                                 \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
                    va_ ? va_ : "(null)", vb_);                                              \
            test_failures++;                                                                 \
        }                                                                                    \
    } while (0)

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

#define TEST_MAIN(...)                                                                \
    int main(void)                                                                    \
    {                                                                                 \
        static const test_case cases[] = {__VA_ARGS__};                               \
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {                 \
            int before = test_failures;                                               \
            cases[i].fn();                                                            \
            printf("%s %s\n", test_failures == before ? "ok  " : "FAIL", cases[i].name); \
        }                                                                             \
        return test_failures ? 1 : 0;                                                 \
    }

#define T(fn) {#fn, fn}

#endif
