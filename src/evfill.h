/* The values of event fields kept in their series only (values once, schema 9).
 *
 * The writer stores each numeric value once: a field's series (rollup.h) keeps it
 * by the number of its event among its kind's events with fields in the (host,
 * rank) of the source, and the event block (event.h) holds DSQ_VAL_IN_SERIES in
 * its place. A reader of blocks hands each event with such fields here, with the
 * block's key and the event's number (dsq_block_iter's event and in_series), and
 * gets them filled in.
 *
 * Each series is read forward through a cursor (its summary, then one chunk at a
 * time), as a file's events come in the order their values were put. The cursors
 * live in a small set-associative table, so a scan over many sources and fields
 * keeps its memory bounded (some MB at most); an event asked for out of order
 * sends its series back to the start.
 */
#ifndef DSQ_EVFILL_H
#define DSQ_EVFILL_H

#include <stdint.h>

#include "error.h"
#include "event.h"
#include "store.h"

typedef struct dsq_evfill dsq_evfill;

int dsq_evfill_new(dsq_evfill **out);
void dsq_evfill_free(dsq_evfill *f);
/* Forgets every cursor: the next events are of another store (or it changed). */
void dsq_evfill_reset(dsq_evfill *f);

/* Fills the fields of ev whose bits are set in in_series from their series of
 * (field, k's run, host, rank and source), as the event-th of ev's kind. 0,
 * DSQ_ENOMEM, or DSQ_EINDEX when a series lacks the value (a damaged index). */
int dsq_evfill_event(dsq_evfill *f, dsq_store *st, const dsq_block_key *k, dsq_event *ev,
                     uint64_t event, uint32_t in_series, dsq_error *err);

#endif
