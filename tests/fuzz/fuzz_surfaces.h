/* Fuzz targets below the grammars (fuzz_surfaces.c). */
#ifndef DSQ_FUZZ_SURFACES_H
#define DSQ_FUZZ_SURFACES_H

#include <stddef.h>
#include <stdint.h>

#include "lines.h"

/* Feeds data to the splitter in chunks of a size the first byte picks (1 to
 * max_chunk), each an exact-size copy, so chunk boundaries get fuzzed and ASan
 * sees any read past a chunk. */
void fuzz_feed(dsq_lines *lb, const uint8_t *data, size_t size, size_t max_chunk);

/* Runs target `name` on the bytes; 0 when name is not one of these targets. */
int fuzz_surface(const char *name, const uint8_t *data, size_t size);

#endif
