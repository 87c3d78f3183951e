/* Packed numbers and varints (varint.h): every double comes back bit for bit,
 * numbers as logs print them take few bytes, damaged bytes are reported. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "varint.h"

static int round_trip(double v, size_t *len)
{
    unsigned char buf[DSQ_NUM_MAX];
    unsigned char *end = dsq_num_put(buf, v);
    const unsigned char *p = buf;
    double got;
    *len = (size_t)(end - buf);
    if (*len > DSQ_NUM_MAX || dsq_num_get(&p, end, &got) || p != end)
        return 0;
    return memcmp(&got, &v, sizeof v) == 0;
}

static void test_num_round_trip_bit_exact(void)
{
    const double vals[] = {0.0, -0.0, 1.0, -1.0, 0.1, 0.3, 40.9499, 1.5, 21.37, 65536, 1e-7,
                           123456.789012, 9007199254740992.0, -9007199254740993.0, 1e300,
                           -1e-300, DBL_MIN, DBL_MIN / 3, DBL_MAX, INFINITY, -INFINITY, NAN,
                           9223372036854775807.0, 0.000001, 0.0000015, 1234567.1234567};
    size_t len;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (!round_trip(vals[i], &len)) {
            fprintf(stderr, "value %zu (%.17g) does not round-trip\n", i, vals[i]);
            test_failures++;
        }
    /* random bit patterns and random short decimals */
    srand(7);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = (uint64_t)rand() << 42 ^ (uint64_t)rand() << 21 ^ (uint64_t)rand();
        double v;
        memcpy(&v, &bits, 8);
        bad += !round_trip(v, &len);
        v = (double)(rand() % 2000000 - 1000000) / dsq_pow10_small[rand() % 7];
        bad += !round_trip(v, &len);
    }
    CHECK_INT(bad, 0);
}

static void test_num_short_for_printed_numbers(void)
{
    size_t len;
    CHECK(round_trip(0, &len) && len == 1);
    CHECK(round_trip(1.5, &len) && len == 2);
    CHECK(round_trip(21.37, &len) && len == 3);
    CHECK(round_trip(40.9499, &len) && len == 4);
    CHECK(round_trip(65536, &len) && len <= 3);
    CHECK(round_trip(0.1 + 0.2, &len) && len == 9); /* not a short decimal: raw */
}

static void test_num_damaged(void)
{
    double v;
    const unsigned char cut[] = {7, 0, 0, 0};
    const unsigned char *p = cut;
    CHECK_INT(dsq_num_get(&p, cut + sizeof cut, &v), -1);
    const unsigned char open[] = {0x80, 0x80};
    p = open;
    CHECK_INT(dsq_num_get(&p, open + sizeof open, &v), -1);
    const unsigned char badtag[] = {15, 0, 0, 0, 0, 0, 0, 0, 0};
    p = badtag;
    CHECK_INT(dsq_num_get(&p, badtag + sizeof badtag, &v), -1);
    uint64_t u;
    const unsigned char eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1};
    p = eleven;
    CHECK_INT(dsq_varint_get(&p, eleven + sizeof eleven, &u), -1);
}

TEST_MAIN(T(test_num_round_trip_bit_exact), T(test_num_short_for_printed_numbers),
          T(test_num_damaged))
