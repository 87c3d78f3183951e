/* `dsq report RUN`: what happened in one run, on one screen.
 *
 * Everything is read from the index with the query engine (query.h) and the
 * rollups (store.h): what ran (the run's attributes), the timeline (first and last
 * event, first and last step), memory peaks by rank, throughput and loss as
 * sparklines, warnings and errors counted by kind and label, the first failure,
 * and diagnostic rules, each with the file:line of its evidence. The explanation
 * of a rule comes from the catalogue entry "rule:<name>" (catalogue.h), so a
 * language is one catalogue file. No log file is read again.
 */
#ifndef DSQ_REPORT_H
#define DSQ_REPORT_H

#include <stdio.h>

#include "catalogue.h"
#include "dsq/dsq.h"
#include "store.h"

typedef struct dsq_report_params {
    const char *run;           /* the run's name, exactly as `dsq runs` lists it */
    const dsq_catalogue *cat;  /* borrowed: rule titles and advice */
    FILE *out;                 /* where the report goes */
    int json;                  /* 1: one JSON object with the same facts */
    FILE *html;                /* also: a self-contained page with SVG charts (or NULL) */
} dsq_report_params;

/* Writes the report of p->run over the given indexes. An unknown run is
 * DSQ_EUSAGE with a "did you mean" or the list of runs in err->msg; a failing
 * index is the store's error. */
int dsq_report_run(const dsq_report_params *p, dsq_store *const *stores, int nstores,
                   dsq_error *err);

#endif
