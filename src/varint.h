/* Byte encodings shared by the event blocks and the rollup chunks: LEB128
 * varints, zigzag for signed values, and numbers as logs print them.
 *
 * A number is one varint `zigzag(m) << 3 | e` when it equals m / 10^e exactly for
 * some e in 0..6 and |m| < 2^53 (1.5 GB, 40.9499, 65536: one to four bytes), else
 * the varint 7 followed by the 8 bytes of the double, little-endian. Decoding
 * computes m / 10^e the same way, so every double comes back bit for bit.
 * Decoders check every byte against the end of the buffer.
 */
#ifndef DSQ_VARINT_H
#define DSQ_VARINT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define DSQ_VARINT_MAX 10
#define DSQ_NUM_MAX (1 + 8) /* bytes a packed number takes at most */

static inline unsigned char *dsq_varint_put(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* 0 with *out, -1 when the varint runs past end or is longer than 10 bytes. */
static inline int dsq_varint_get(const unsigned char **pp, const unsigned char *end, uint64_t *out)
{
    const unsigned char *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p == end)
            return -1;
        unsigned char b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline uint64_t dsq_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t dsq_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static const double dsq_pow10_small[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};

/* The smallest e (0-6) with v == m / 10^e as the decoder computes it, and m; -1
 * when there is none (NaN, -0, |v * 10^e| past 2^53, more decimals). */
static inline int dsq_num_decimal(double v, int64_t *m)
{
    if (v != v || (v == 0 && signbit(v)))
        return -1;
    for (int e = 0; e < 7; e++) {
        double s = v * dsq_pow10_small[e];
        if (!(fabs(s) < 9007199254740992.0))
            return -1;
        int64_t r = (int64_t)(s < 0 ? s - 0.5 : s + 0.5);
        if ((double)r / dsq_pow10_small[e] == v) {
            *m = r;
            return e;
        }
    }
    return -1;
}

static inline unsigned char *dsq_num_put(unsigned char *p, double v)
{
    int64_t m;
    int e = dsq_num_decimal(v, &m);
    if (e >= 0)
        return dsq_varint_put(p, dsq_zigzag(m) << 3 | (uint64_t)e);
    uint64_t bits;
    memcpy(&bits, &v, 8);
    *p++ = 7;
    for (int i = 0; i < 8; i++)
        *p++ = (unsigned char)(bits >> (8 * i));
    return p;
}

/* 0 with *v, -1 when the bytes are damaged. */
static inline int dsq_num_get(const unsigned char **pp, const unsigned char *end, double *v)
{
    uint64_t tag;
    if (dsq_varint_get(pp, end, &tag))
        return -1;
    unsigned e = (unsigned)(tag & 7);
    if (e < 7) {
        *v = (double)dsq_unzigzag(tag >> 3) / dsq_pow10_small[e];
        return 0;
    }
    if (tag != 7 || end - *pp < 8)
        return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)(*pp)[i] << (8 * i);
    *pp += 8;
    memcpy(v, &bits, 8);
    return 0;
}

#endif
