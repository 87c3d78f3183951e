/* Removing sources from an index: `dsq prune` drops the files that no longer exist
 * (until then they stay queryable and `dsq runs` counts them as missing), `dsq drop
 * RUN…` drops whole runs so they can be indexed again from scratch. */
#ifndef DSQ_PRUNE_H
#define DSQ_PRUNE_H

#include <stdint.h>

#include "dsq/dsq.h"
#include "store.h"

/* Drops every source of the named runs, or with nruns == 0 every source whose file
 * is gone. *dropped counts the sources dropped. st is opened for writing. */
int dsq_prune(dsq_store *st, const char *const *runs, int nruns, uint64_t *dropped,
              dsq_error *err);

#endif
