/* Run listing: one line per run, over one or several indexes: start, duration,
 * hosts and ranks present, files, events, the class of the first failure, peak
 * Max_MA, damaged files. */
#ifndef DSQ_RUNS_H
#define DSQ_RUNS_H

#include "result.h"
#include "store.h"

/* Builds the table of runs, sorted by name. */
int dsq_runs_list(dsq_store *const *stores, int nstores, dsq_result **out, dsq_error *err);

/* Builds the table of numeric fields (name as printed, unit, values, runs that
 * have it, min, max), sorted by name. */
int dsq_fields_list(dsq_store *const *stores, int nstores, dsq_result **out, dsq_error *err);

#endif
