/* XXH64 (see xxh64.h): 32-byte stripes into four lanes, then the lanes merged, the
 * tail mixed in, and the result avalanched. Little-endian reads (memcpy: any
 * alignment; dsq is built for little-endian machines, as zstd's checksum is). */
#include "xxh64.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

static inline uint64_t read64(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t read32(const unsigned char *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

static inline uint64_t round1(uint64_t acc, uint64_t lane)
{
    acc += lane * P2;
    acc = rotl(acc, 31);
    return acc * P1;
}

static inline uint64_t merge(uint64_t h, uint64_t v)
{
    h ^= round1(0, v);
    return h * P1 + P4;
}

void dsq_xxh64_init(dsq_xxh64 *h, uint64_t seed)
{
    h->v[0] = seed + P1 + P2;
    h->v[1] = seed + P2;
    h->v[2] = seed;
    h->v[3] = seed - P1;
    h->total = 0;
    h->nbuf = 0;
}

/* The stripes of n bytes (a multiple of 32) at p into the lanes. */
static void stripes(uint64_t v[4], const unsigned char *p, size_t n)
{
    uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
    for (const unsigned char *end = p + n; p < end; p += 32) {
        a = round1(a, read64(p));
        b = round1(b, read64(p + 8));
        c = round1(c, read64(p + 16));
        d = round1(d, read64(p + 24));
    }
    v[0] = a;
    v[1] = b;
    v[2] = c;
    v[3] = d;
}

void dsq_xxh64_update(dsq_xxh64 *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    h->total += n;
    if (h->nbuf) { /* a stripe begun: filled first */
        size_t take = 32 - h->nbuf < n ? 32 - h->nbuf : n;
        memcpy(h->buf + h->nbuf, p, take);
        h->nbuf += take;
        p += take;
        n -= take;
        if (h->nbuf < 32)
            return;
        stripes(h->v, h->buf, 32);
        h->nbuf = 0;
    }
    size_t whole = n & ~(size_t)31;
    stripes(h->v, p, whole);
    memcpy(h->buf, p + whole, n - whole);
    h->nbuf = n - whole;
}

uint64_t dsq_xxh64_digest(const dsq_xxh64 *h)
{
    uint64_t x;
    if (h->total >= 32) {
        x = rotl(h->v[0], 1) + rotl(h->v[1], 7) + rotl(h->v[2], 12) + rotl(h->v[3], 18);
        for (int i = 0; i < 4; i++)
            x = merge(x, h->v[i]);
    } else {
        x = h->v[2] + P5; /* the seed: no stripe changed v[2] */
    }
    x += h->total;
    const unsigned char *p = h->buf, *end = h->buf + h->nbuf;
    for (; p + 8 <= end; p += 8) {
        x ^= round1(0, read64(p));
        x = rotl(x, 27) * P1 + P4;
    }
    if (p + 4 <= end) {
        x ^= (uint64_t)read32(p) * P1;
        x = rotl(x, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) {
        x ^= *p * P5;
        x = rotl(x, 11) * P1;
    }
    x ^= x >> 33;
    x *= P2;
    x ^= x >> 29;
    x *= P3;
    x ^= x >> 32;
    return x;
}
