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

/* 64-bit hash used by the dictionary and for fingerprints (FNV-1a-style, 8 bytes a step). */
uint64_t dsq_hash64(const void *p, size_t n, uint64_t seed);

#endif
