/* Run listing: one line per run (files, members, lines, events, peak Max_MA). */
#ifndef DSQ_RUNS_H
#define DSQ_RUNS_H

#include "result.h"
#include "store.h"

/* Builds the table of runs, sorted by name. */
int dsq_runs_list(dsq_store *st, dsq_result **out, dsq_error *err);

#endif
