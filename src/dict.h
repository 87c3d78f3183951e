/* String dictionary: interns names (runs, hosts, fields, labels) to dense ids.
 *
 * Ids start at 1 (0 means "none") and are assigned in order, so the index can
 * persist just the ids above its last saved watermark. Strings live in chunked
 * storage owned by the dictionary; views stay valid until dsq_dict_free.
 */
#ifndef DSQ_DICT_H
#define DSQ_DICT_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsq_dict dsq_dict;

int dsq_dict_new(dsq_dict **out);
void dsq_dict_free(dsq_dict *d);

/* Returns the id of s[0..n), adding it if new. 0 on out of memory. */
uint32_t dsq_dict_intern(dsq_dict *d, const char *s, size_t n);

/* Id of s[0..n) or 0 if absent. Never adds. */
uint32_t dsq_dict_find(const dsq_dict *d, const char *s, size_t n);

/* The string of an id ("" for 0 or unknown ids); *n (may be NULL) gets its length.
 * Strings are NUL-terminated. */
const char *dsq_dict_str(const dsq_dict *d, uint32_t id, size_t *n);

/* Number of ids assigned (the highest id). */
uint32_t dsq_dict_count(const dsq_dict *d);

/* A dictionary backed by a read-only source (an index opened for queries): ids
 * and strings it does not hold in memory are looked up there on demand, so opening
 * an index does not load every string. Backing strings are NUL-terminated and stay
 * valid as long as the source does. */
typedef struct dsq_dict_backing {
    void *ctx;
    uint32_t count; /* the source holds ids 1..count */
    const char *(*str)(void *ctx, uint32_t id, size_t *n); /* NULL if absent */
    uint32_t (*find)(void *ctx, const char *s, size_t n);  /* 0 if absent */
} dsq_dict_backing;

void dsq_dict_set_backing(dsq_dict *d, const dsq_dict_backing *b);

/* Levenshtein distance between two names (for "did you mean"); names longer
 * than 255 bytes are (size_t)-1 away from everything. */
size_t dsq_name_distance(const char *a, const char *b);

/* 64-bit hash used by the dictionary and for fingerprints (FNV-1a-style, 8 bytes a step). */
uint64_t dsq_hash64(const void *p, size_t n, uint64_t seed);
/* Another 64-bit hash for long inputs (a member's first 4 KiB): four chains side
 * by side, about four times dsq_hash64's speed. Not the same values. */
uint64_t dsq_hash64_bulk(const void *p, size_t n, uint64_t seed);

/* splitmix64's finalizer: every bit of a key packed in 64 bits reaches the low bits a
 * power-of-two table takes (a multiply alone left long runs of taken slots). */
static inline uint64_t dsq_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#endif
