/* Map of 64-bit keys to places: every key put is found with its last value (also
 * keys that differ only in their high or low half, and 0), absent keys give 0,
 * growing far past the first room keeps every key, and a clear forgets all of them
 * at once however big the map grew, after which it fills again. */
#include <stdint.h>

#include "idmap.h"
#include "test.h"

static uint64_t key_of(uint32_t i)
{
    return (uint64_t)(i % 97) << 32 | (i / 97); /* (host, rank)-like: both halves vary */
}

static void test_put_get_grow(void)
{
    dsq_idmap *m = NULL;
    CHECK_INT(dsq_idmap_new(4, &m), 0);
    CHECK_INT(dsq_idmap_get(m, 0), 0);
    CHECK_INT(dsq_idmap_put(m, 0, 7), 0); /* key 0 is a key like another */
    CHECK_INT(dsq_idmap_get(m, 0), 7);
    int bad = 0;
    for (uint32_t i = 1; i <= 50000; i++)
        bad += dsq_idmap_put(m, key_of(i), i) != 0;
    CHECK_INT(bad, 0);
    for (uint32_t i = 1; i <= 50000; i++)
        bad += dsq_idmap_get(m, key_of(i)) != i;
    CHECK_INT(bad, 0);
    CHECK_INT(dsq_idmap_get(m, key_of(50001)), 0);
    CHECK_INT(dsq_idmap_get(m, (uint64_t)1 << 63), 0);
    CHECK_INT(dsq_idmap_put(m, key_of(5), 99), 0); /* the last value counts */
    CHECK_INT(dsq_idmap_get(m, key_of(5)), 99);
    CHECK_INT(dsq_idmap_get(m, 0), 7);
    dsq_idmap_free(m);
    dsq_idmap_free(NULL);
}

static void test_clear(void)
{
    dsq_idmap *m = NULL;
    CHECK_INT(dsq_idmap_new(16, &m), 0);
    for (int round = 0; round < 3; round++) {
        uint32_t n = round == 1 ? 20000 : 10; /* grows in the middle round */
        int bad = 0;
        for (uint32_t i = 1; i <= n; i++)
            bad += dsq_idmap_put(m, key_of(i) + (uint64_t)round, i) != 0;
        for (uint32_t i = 1; i <= n; i++)
            bad += dsq_idmap_get(m, key_of(i) + (uint64_t)round) != i;
        dsq_idmap_clear(m);
        for (uint32_t i = 1; i <= n; i++)
            bad += dsq_idmap_get(m, key_of(i) + (uint64_t)round) != 0;
        CHECK_INT(bad, 0);
    }
    dsq_idmap_free(m);
}

TEST_MAIN(T(test_put_get_grow), T(test_clear))
