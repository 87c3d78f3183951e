/* Line shapes: a cache in front of the recognizers (issue 5).
 *
 * Logs repeat a few line shapes millions of times: the same bytes but for the
 * digits of a stamp, a rank and the values. The recognizers are pure functions of
 * the line (grammar.h) and note where each value, rank and stamp they set came from
 * (dsq_msrc). After a line is recognized, its shape is learned: the line's bytes,
 * which of its digits are sources (wildcards) and which are not (literal), and the
 * match with its spans as offsets into the line. A later line of the same length
 * whose non-digit bytes and literal digits are the same, and whose wildcard
 * positions hold digits, gets that match back with its own values parsed from the
 * same places, without running a recognizer.
 *
 * Why that gives what the recognizers would: they decide by byte classes (a digit,
 * a letter, '.'), never by which digit a value has, so a line that differs only in
 * the digits of its values takes the same path through them. Values set without a
 * source (computed), NCCL lines (their handler reads the recognizer's private
 * parse; fam_nccl.h's memo answers a run of channel lines instead) and lines after
 * a prefix that set a time keep their shape out: the recognizers run for them as
 * before. DSQ_LINE_SHAPES=check runs the recognizers
 * on every line the cache answered and aborts on any difference (tests use it).
 */
#ifndef DSQ_SHAPES_H
#define DSQ_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "grammar.h"

typedef struct dsq_shapes dsq_shapes;

typedef struct dsq_shapes_stats {
    uint64_t hits;    /* lines answered from a shape */
    uint64_t misses;  /* lines the recognizers ran for */
    uint64_t learned; /* shapes learned */
    uint64_t refused; /* lines whose shape cannot be replayed (see above) */
} dsq_shapes_stats;

/* 0, or DSQ_ENOMEM. */
int dsq_shapes_new(dsq_shapes **out);
void dsq_shapes_free(dsq_shapes *s);

/* The line (its sentinel line[len] included) and the match as the prefix layers
 * left it: dsq_scan_match_init's, with at most its kind, host, body, rank and a
 * time set (a line with a time is not looked up). Returns 1 with m filled as the
 * recognizers would have filled it and *ids (ids may be NULL) the ids the shape
 * keeps for its event's names (valid until the next dsq_shapes_learn), or 0 (m
 * untouched): run them, then call dsq_shapes_learn with the same line. With
 * `lean` set, a shape whose ids say lean leaves m's f[].name and f[].unit unset
 * (the caller reads them from the ids). */
int dsq_shapes_apply(dsq_shapes *s, const char *line, size_t len, dsq_match *m,
                     dsq_emit_ids **ids, int lean);

/* Learns the shape of the line dsq_shapes_apply just returned 0 for, from the
 * match the recognizers made of it. */
void dsq_shapes_learn(dsq_shapes *s, const char *line, size_t len, const dsq_match *m);

/* Whether two matches of the same line are the same, as far as anything after the
 * recognizers reads them (spans by position, values bit for bit). */
int dsq_shapes_same_match(const dsq_match *a, const dsq_match *b);

const dsq_shapes_stats *dsq_shapes_stats_get(const dsq_shapes *s);

#endif
