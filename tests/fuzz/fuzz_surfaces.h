/* Fuzz targets below the grammars (fuzz_surfaces.c). */
#ifndef DSQ_FUZZ_SURFACES_H
#define DSQ_FUZZ_SURFACES_H

#include <stddef.h>
#include <stdint.h>

/* Runs target `name` on the bytes; 0 when name is not one of these targets. */
int fuzz_surface(const char *name, const uint8_t *data, size_t size);

#endif
