/* XXH64 (xxh64.h) against the content checksums libzstd writes into frames (their
 * low 32 bits), whatever the length and however the bytes are split. */
#include <stdlib.h>
#include <zstd.h>

#include "test.h"
#include "xxh64.h"

/* The content checksum libzstd puts at the end of a frame of the n bytes at p. */
static uint32_t zstd_checksum(const unsigned char *p, size_t n)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(n);
    unsigned char *out = malloc(cap);
    uint32_t sum = 0;
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t z = ZSTD_compress2(c, out, cap, p, n);
    if (ZSTD_isError(z) || z < 4)
        test_failures++;
    else
        memcpy(&sum, out + z - 4, 4);
    free(out);
    ZSTD_freeCCtx(c);
    return sum;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    srand(seed);
    for (size_t i = 0; i < n; i++) /* text-like: zstd finds matches too */
        p[i] = (unsigned char)(i % 7 == 0 ? rand() : "log line: step=1 "[i % 17]);
}

static void test_empty_input_known_value(void)
{
    dsq_xxh64 h;
    dsq_xxh64_init(&h, 0);
    CHECK(dsq_xxh64_digest(&h) == 0xEF46DB3751D8E999ull); /* XXH64 of nothing, seed 0 */
}

static void test_every_length_to_300_matches_zstd(void)
{
    unsigned char buf[300];
    fill(buf, sizeof buf, 1);
    for (size_t n = 0; n <= sizeof buf; n++) {
        dsq_xxh64 h;
        dsq_xxh64_init(&h, 0);
        dsq_xxh64_update(&h, buf, n);
        if ((uint32_t)dsq_xxh64_digest(&h) != zstd_checksum(buf, n)) {
            fprintf(stderr, "length %zu: not zstd's checksum\n", n);
            test_failures++;
        }
    }
}

static void test_any_split_gives_the_same_digest(void)
{
    size_t n = 1 << 20;
    unsigned char *buf = malloc(n);
    fill(buf, n, 2);
    uint32_t want = zstd_checksum(buf, n);
    srand(3);
    for (int round = 0; round < 50; round++) {
        dsq_xxh64 h;
        dsq_xxh64_init(&h, 0);
        size_t at = 0;
        while (at < n) { /* pieces of 0 to ~2 stripes, or big ones */
            size_t k = (size_t)(round % 2 ? rand() % 70 : rand() % 100000);
            k = k > n - at ? n - at : k;
            dsq_xxh64_update(&h, buf + at, k);
            at += k;
        }
        CHECK((uint32_t)dsq_xxh64_digest(&h) == want);
        CHECK(dsq_xxh64_digest(&h) == dsq_xxh64_digest(&h)); /* digest leaves the state */
    }
    free(buf);
}

TEST_MAIN(T(test_empty_input_known_value), T(test_every_length_to_300_matches_zstd),
          T(test_any_split_gives_the_same_digest))
