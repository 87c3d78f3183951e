/* Open-addressing hash table over strings kept in big chunks (no allocation per
 * string except when a chunk fills). The table doubles at 50% load. Lookups on
 * the per-line path (a host prefix repeated on every line) are one hash and one
 * memcmp; callers cache the last id to skip even that. */
#include "dict.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#define CHUNK_SIZE (256 * 1024)

typedef struct entry {
    const char *s;
    uint32_t n;
    uint32_t id;
    uint64_t h;
} entry;

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    char data[];
} chunk;

struct dsq_dict {
    entry *slots;
    size_t nslots; /* power of two */
    const char **by_id;
    uint32_t *len_by_id;
    size_t id_cap;
    uint32_t count;
    chunk *chunks;
    dsq_dict_backing backing; /* .str == NULL: none */
};

uint64_t dsq_hash64(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    while (n--)
        h = (h ^ *s++) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

/* dsq_hash64_bulk's four chains over `blocks` blocks of 32 bytes at s, one 8-byte word
 * each a block: four independent chains, no wait on a multiply. */
static void lanes_scalar(uint64_t h[4], const unsigned char *s, size_t blocks)
{
    for (size_t b = 0; b < blocks; b++, s += 32)
        for (int i = 0; i < 4; i++) {
            uint64_t w;
            memcpy(&w, s + 8 * i, 8);
            h[i] = (h[i] ^ w) * 0x100000001b3ull;
            h[i] ^= h[i] >> 29;
        }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The same four chains in one AVX2 register, where the CPU runs it: the multiply by
 * 0x100000001b3 = 2^40 + 0x1b3 (mod 2^64) as the low and high halves times 0x1b3 and a
 * shift by 40. Member fingerprints hash up to 64 KiB of every member: 1.5 % of a
 * per-rank archive's instructions with the scalar chains. */
__attribute__((target("avx2"))) static void lanes_avx2(uint64_t h[4], const unsigned char *s,
                                                       size_t blocks)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)h);
    const __m256i c = _mm256_set1_epi64x(0x1b3);
    for (size_t b = 0; b < blocks; b++, s += 32) {
        v = _mm256_xor_si256(v, _mm256_loadu_si256((const __m256i *)(const void *)s));
        __m256i lo = _mm256_mul_epu32(v, c);
        __m256i hi = _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(v, 32), c), 32);
        v = _mm256_add_epi64(_mm256_add_epi64(lo, hi), _mm256_slli_epi64(v, 40));
        v = _mm256_xor_si256(v, _mm256_srli_epi64(v, 29));
    }
    _mm256_storeu_si256((__m256i *)(void *)h, v);
}

static void lanes(uint64_t h[4], const unsigned char *s, size_t blocks)
{
    if (blocks >= 4 && __builtin_cpu_supports("avx2"))
        lanes_avx2(h, s, blocks);
    else
        lanes_scalar(h, s, blocks);
}
#else
static void lanes(uint64_t h[4], const unsigned char *s, size_t blocks)
{
    lanes_scalar(h, s, blocks);
}
#endif

uint64_t dsq_hash64_bulk(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h[4] = {0xcbf29ce484222325ull ^ seed, 0x84222325cbf29ce4ull ^ seed,
                     0x9e3779b97f4a7c15ull ^ seed, 0xc2b2ae3d27d4eb4full ^ seed};
    size_t blocks = n / 32;
    lanes(h, s, blocks);
    s += 32 * blocks;
    uint64_t m = h[0] ^ (h[1] * 0xd6e8feb86659fd93ull) ^ (h[2] * 0x9e3779b97f4a7c15ull) ^
                 (h[3] * 0xc2b2ae3d27d4eb4full);
    return dsq_hash64(s, n - 32 * blocks, m ^ (uint64_t)n);
}

int dsq_dict_new(dsq_dict **out)
{
    dsq_dict *d = calloc(1, sizeof *d);
    if (!d)
        return -1;
    d->nslots = 1024;
    d->slots = calloc(d->nslots, sizeof *d->slots);
    if (!d->slots) {
        free(d);
        return -1;
    }
    *out = d;
    return 0;
}

void dsq_dict_free(dsq_dict *d)
{
    if (!d)
        return;
    for (chunk *c = d->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(d->slots);
    free(d->by_id);
    free(d->len_by_id);
    free(d);
}

static const entry *lookup(const dsq_dict *d, const char *s, size_t n, uint64_t h, size_t *slot)
{
    size_t mask = d->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const entry *e = &d->slots[i];
        if (!e->s) {
            *slot = i;
            return NULL;
        }
        if (e->h == h && e->n == n && memcmp(e->s, s, n) == 0)
            return e;
    }
}

uint32_t dsq_dict_find(const dsq_dict *d, const char *s, size_t n)
{
    size_t slot;
    const entry *e = lookup(d, s, n, dsq_hash64(s, n, 0), &slot);
    if (e)
        return e->id;
    return d->backing.find ? d->backing.find(d->backing.ctx, s, n) : 0;
}

void dsq_dict_set_backing(dsq_dict *d, const dsq_dict_backing *b) { d->backing = *b; }

static int grow_table(dsq_dict *d)
{
    size_t nn = d->nslots * 2;
    entry *ns = calloc(nn, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < d->nslots; i++) {
        entry *e = &d->slots[i];
        if (!e->s)
            continue;
        size_t j = e->h & (nn - 1);
        while (ns[j].s)
            j = (j + 1) & (nn - 1);
        ns[j] = *e;
    }
    free(d->slots);
    d->slots = ns;
    d->nslots = nn;
    return 0;
}

static const char *store_string(dsq_dict *d, const char *s, size_t n)
{
    chunk *c = d->chunks;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > CHUNK_SIZE ? n + 1 : CHUNK_SIZE;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = d->chunks;
        d->chunks = c;
    }
    char *p = c->data + c->used;
    memcpy(p, s, n);
    p[n] = 0;
    c->used += n + 1;
    return p;
}

static int grow_ids(dsq_dict *d)
{
    size_t cap = d->id_cap ? d->id_cap * 2 : 1024;
    const char **b = realloc(d->by_id, cap * sizeof *b);
    if (!b)
        return -1;
    d->by_id = b;
    uint32_t *l = realloc(d->len_by_id, cap * sizeof *l);
    if (!l)
        return -1;
    d->len_by_id = l;
    d->id_cap = cap;
    return 0;
}

uint32_t dsq_dict_intern(dsq_dict *d, const char *s, size_t n)
{
    uint64_t h = dsq_hash64(s, n, 0);
    size_t slot;
    const entry *e = lookup(d, s, n, h, &slot);
    if (e)
        return e->id;
    if ((d->count + 1) * 2 > d->nslots) {
        if (grow_table(d) != 0)
            return 0;
        lookup(d, s, n, h, &slot);
    }
    if (d->count + 2 > d->id_cap && grow_ids(d) != 0)
        return 0;
    const char *copy = store_string(d, s, n);
    if (!copy)
        return 0;
    uint32_t id = ++d->count;
    d->slots[slot] = (entry){copy, (uint32_t)n, id, h};
    d->by_id[id] = copy;
    d->len_by_id[id] = (uint32_t)n;
    return id;
}

const char *dsq_dict_str(const dsq_dict *d, uint32_t id, size_t *n)
{
    if (id > d->count && d->backing.str && id <= d->backing.count) {
        const char *s = d->backing.str(d->backing.ctx, id, n);
        if (s)
            return s;
    }
    if (id == 0 || id > d->count) {
        if (n)
            *n = 0;
        return "";
    }
    if (n)
        *n = d->len_by_id[id];
    return d->by_id[id];
}

uint32_t dsq_dict_count(const dsq_dict *d)
{
    return d->backing.str && d->backing.count > d->count ? d->backing.count : d->count;
}

size_t dsq_name_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[256];
    if (la > 255 || lb > 255)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
