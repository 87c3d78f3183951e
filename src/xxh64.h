/* XXH64, the hash a zstd frame's content checksum is made of (its low 32 bits, RFC
 * 8878 section 3.1.1): written from the published algorithm, so that the checksum
 * can be computed apart from the decoder (input.c: behind it, on a thread that has
 * time). Streaming: any split of the bytes gives the same digest.
 */
#ifndef DSQ_XXH64_H
#define DSQ_XXH64_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsq_xxh64 {
    uint64_t v[4];        /* the four lanes */
    uint64_t total;       /* bytes hashed */
    unsigned char buf[32]; /* a stripe's bytes not hashed yet */
    size_t nbuf;
} dsq_xxh64;

/* A state for seed. */
void dsq_xxh64_init(dsq_xxh64 *h, uint64_t seed);
/* Adds n bytes at p. */
void dsq_xxh64_update(dsq_xxh64 *h, const void *p, size_t n);
/* The hash of the bytes so far (the state is left as it was). */
uint64_t dsq_xxh64_digest(const dsq_xxh64 *h);

#endif
