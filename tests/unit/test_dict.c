/* String dictionary: dense ids from 1, find never adds, views stay valid while
 * the table and the string chunks grow, long strings and embedded NULs. */
#include <stdlib.h>

#include "dict.h"
#include "test.h"

static void test_basic(void)
{
    dsq_dict *d = NULL;
    CHECK_INT(dsq_dict_new(&d), 0);
    CHECK_INT(dsq_dict_count(d), 0);
    CHECK_INT(dsq_dict_find(d, "run", 3), 0);
    CHECK_INT(dsq_dict_intern(d, "run", 3), 1);
    CHECK_INT(dsq_dict_intern(d, "host", 4), 2);
    CHECK_INT(dsq_dict_intern(d, "run", 3), 1);
    CHECK_INT(dsq_dict_intern(d, "runs", 3), 1); /* only n bytes count */
    CHECK_INT(dsq_dict_intern(d, "ru", 2), 3);
    CHECK_INT(dsq_dict_count(d), 3);
    CHECK_INT(dsq_dict_find(d, "host", 4), 2);
    CHECK_INT(dsq_dict_find(d, "Host", 4), 0); /* case matters */
    CHECK_INT(dsq_dict_find(d, "absent", 6), 0);
    CHECK_INT(dsq_dict_count(d), 3); /* find never adds */

    size_t n = 99;
    CHECK_STR(dsq_dict_str(d, 1, &n), "run");
    CHECK_INT(n, 3);
    CHECK_STR(dsq_dict_str(d, 3, NULL), "ru");
    CHECK_STR(dsq_dict_str(d, 0, &n), "");
    CHECK_INT(n, 0);
    n = 99;
    CHECK_STR(dsq_dict_str(d, 4, &n), "");
    CHECK_INT(n, 0);
    CHECK_STR(dsq_dict_str(d, UINT32_MAX, NULL), "");

    /* the empty string and strings with NUL bytes are names like any other */
    uint32_t e = dsq_dict_intern(d, "", 0);
    CHECK_INT(e, 4);
    CHECK_INT(dsq_dict_find(d, "", 0), 4);
    CHECK_INT(dsq_dict_intern(d, "a\0b", 3), 5);
    CHECK_INT(dsq_dict_intern(d, "a\0c", 3), 6);
    CHECK_INT(dsq_dict_intern(d, "a", 1), 7);
    const char *s = dsq_dict_str(d, 5, &n);
    CHECK_INT(n, 3);
    CHECK(memcmp(s, "a\0b", 4) == 0); /* NUL-terminated too */
    dsq_dict_free(d);
    dsq_dict_free(NULL);
}

static void test_many_strings(void)
{
    enum { N = 300000 };
    dsq_dict *d = NULL;
    CHECK_INT(dsq_dict_new(&d), 0);
    const char *first = NULL;
    char buf[64];
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int len = snprintf(buf, sizeof buf, "host-%d.cluster.example", i);
        uint32_t id = dsq_dict_intern(d, buf, (size_t)len);
        bad += id != (uint32_t)i + 1;
        if (i == 0)
            first = dsq_dict_str(d, 1, NULL);
    }
    CHECK_INT(bad, 0);
    CHECK_INT(dsq_dict_count(d), N);
    /* a view taken before the table grew many times is still the same bytes */
    CHECK(first == dsq_dict_str(d, 1, NULL));
    CHECK_STR(first, "host-0.cluster.example");
    for (int i = 0; i < N; i++) {
        int len = snprintf(buf, sizeof buf, "host-%d.cluster.example", i);
        size_t n;
        const char *s = dsq_dict_str(d, (uint32_t)i + 1, &n);
        bad += n != (size_t)len || memcmp(s, buf, n) != 0 || s[n] != 0;
        bad += dsq_dict_find(d, buf, (size_t)len) != (uint32_t)i + 1;
        bad += dsq_dict_intern(d, buf, (size_t)len) != (uint32_t)i + 1;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(dsq_dict_count(d), N);
    CHECK_INT(dsq_dict_find(d, "host-300000.cluster.example", 27), 0);
    dsq_dict_free(d);
}

static void test_long_strings(void)
{
    dsq_dict *d = NULL;
    CHECK_INT(dsq_dict_new(&d), 0);
    CHECK_INT(dsq_dict_intern(d, "small", 5), 1);
    size_t big = 3u << 20; /* larger than one storage chunk */
    char *s = malloc(big);
    for (size_t i = 0; i < big; i++)
        s[i] = (char)('A' + i % 23);
    CHECK_INT(dsq_dict_intern(d, s, big), 2);
    CHECK_INT(dsq_dict_intern(d, s, big - 1), 3); /* a prefix is another string */
    CHECK_INT(dsq_dict_intern(d, "after", 5), 4);
    CHECK_INT(dsq_dict_find(d, s, big), 2);
    size_t n;
    const char *v = dsq_dict_str(d, 2, &n);
    CHECK_INT(n, big);
    CHECK(memcmp(v, s, big) == 0 && v[big] == 0);
    v = dsq_dict_str(d, 3, &n);
    CHECK_INT(n, big - 1);
    CHECK(v[big - 1] == 0);
    CHECK_STR(dsq_dict_str(d, 1, NULL), "small");
    CHECK_STR(dsq_dict_str(d, 4, NULL), "after");
    /* strings that fill a chunk to its last byte, then spill into the next */
    for (int i = 0; i < 2000; i++) {
        char b[300];
        memset(b, 'x', sizeof b);
        int len = snprintf(b, sizeof b, "%d", i);
        b[len] = 'y';
        CHECK_INT(dsq_dict_intern(d, b, 200 + (size_t)i % 97), 5 + (uint32_t)i);
    }
    CHECK_INT(dsq_dict_count(d), 2004);
    free(s);
    dsq_dict_free(d);
}

static void test_hash(void)
{
    const char *a = "the quick brown fox jumps";
    CHECK(dsq_hash64(a, strlen(a), 0) == dsq_hash64(a, strlen(a), 0));
    CHECK(dsq_hash64(a, strlen(a), 0) != dsq_hash64(a, strlen(a), 1));
    CHECK(dsq_hash64(a, strlen(a), 0) != dsq_hash64(a, strlen(a) - 1, 0));
    CHECK(dsq_hash64("abcdefgh1", 9, 0) != dsq_hash64("abcdefgh2", 9, 0));
    CHECK(dsq_hash64("", 0, 0) != dsq_hash64("", 0, 7));
    /* no two of 100k short keys collide in all 64 bits */
    enum { N = 100000 };
    uint64_t *h = malloc(N * sizeof *h);
    char buf[32];
    for (int i = 0; i < N; i++)
        h[i] = dsq_hash64(buf, (size_t)snprintf(buf, sizeof buf, "k%d", i), 0);
    int same = 0;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < i + 64 && j < N; j++)
            same += h[i] == h[j];
    CHECK_INT(same, 0);
    free(h);
}

/* The bulk hash (member fingerprints) sees every byte, in every lane and in the
 * tail, and the length: any one bit changed, or one byte more, changes it. */
static void test_hash_bulk_sees_every_byte(void)
{
    unsigned char b[200];
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = (unsigned char)(i * 37 + 11);
    for (size_t n = 0; n < sizeof b; n += 13) {
        uint64_t h = dsq_hash64_bulk(b, n, 0);
        CHECK(h == dsq_hash64_bulk(b, n, 0));
        CHECK(h != dsq_hash64_bulk(b, n + 1, 0));
        CHECK(h != dsq_hash64_bulk(b, n, 1));
        for (size_t at = 0; at < n; at++)
            for (int bit = 0; bit < 8; bit += 3) {
                b[at] ^= (unsigned char)(1u << bit);
                if (dsq_hash64_bulk(b, n, 0) == h) {
                    fprintf(stderr, "byte %zu bit %d of %zu: same hash\n", at, bit, n);
                    test_failures++;
                }
                b[at] ^= (unsigned char)(1u << bit);
            }
    }
}

/* dsq_hash64_bulk as it was defined (and indexes store): four chains of 8-byte words
 * over 32-byte blocks, merged, then dsq_hash64 of the tail and the length. */
static uint64_t bulk_reference(const unsigned char *s, size_t n, uint64_t seed)
{
    uint64_t h[4] = {0xcbf29ce484222325ull ^ seed, 0x84222325cbf29ce4ull ^ seed,
                     0x9e3779b97f4a7c15ull ^ seed, 0xc2b2ae3d27d4eb4full ^ seed};
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks; b++, s += 32)
        for (int i = 0; i < 4; i++) {
            uint64_t w;
            memcpy(&w, s + 8 * i, 8);
            h[i] = (h[i] ^ w) * 0x100000001b3ull;
            h[i] ^= h[i] >> 29;
        }
    uint64_t m = h[0] ^ (h[1] * 0xd6e8feb86659fd93ull) ^ (h[2] * 0x9e3779b97f4a7c15ull) ^
                 (h[3] * 0xc2b2ae3d27d4eb4full);
    return dsq_hash64(s, n - 32 * blocks, m ^ (uint64_t)n);
}

/* The bulk hash gives the reference's value whichever chains run it (AVX2 where the
 * CPU has it): every length to 700 at every alignment to 32, random bytes and seeds,
 * and 64 KiB, a member fingerprint's span. */
static void test_hash_bulk_same_as_reference(void)
{
    size_t cap = 65536 + 64;
    unsigned char *b = malloc(cap);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < cap; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
    int wrong = 0;
    for (size_t n = 0; n <= 700; n++)
        for (size_t at = 0; at < 32; at++)
            wrong += dsq_hash64_bulk(b + at, n, n * 31 + at) != bulk_reference(b + at, n, n * 31 + at);
    wrong += dsq_hash64_bulk(b + 3, 65536, 0) != bulk_reference(b + 3, 65536, 0);
    CHECK_INT(wrong, 0);
    free(b);
}

TEST_MAIN(T(test_hash_bulk_sees_every_byte), T(test_hash_bulk_same_as_reference), T(test_basic), T(test_many_strings), T(test_long_strings), T(test_hash))
