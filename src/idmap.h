/* A map from 64-bit keys to places (non-zero 32-bit values) in a caller's dense
 * array: the index of the (host, rank) pairs a stream, a file's open blocks or a
 * report meets. Open addressing, at most half full, grown by doubling; emptied at
 * once by a generation number, so a stream of few pairs pays nothing for a table a
 * big one grew. Get never allocates; put allocates only when it grows.
 */
#ifndef DSQ_IDMAP_H
#define DSQ_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsq_idmap dsq_idmap;

/* A map with room for `entries` before it grows. 0 or DSQ_ENOMEM. */
int dsq_idmap_new(size_t entries, dsq_idmap **out);
void dsq_idmap_free(dsq_idmap *m);

/* The value of key, 0 when it has none. */
uint32_t dsq_idmap_get(const dsq_idmap *m, uint64_t key);
/* Sets key's value (not 0). 0, or DSQ_ENOMEM (the map is as it was). */
int dsq_idmap_put(dsq_idmap *m, uint64_t key, uint32_t value);
/* Forgets every key. */
void dsq_idmap_clear(dsq_idmap *m);

#endif
