/* The explanation catalogue: what each log line dsq recognizes means, kept as data.
 *
 * One text file per language (catalogue/<lang>.txt, format in catalogue/README.md) is
 * embedded into the binary at build time; dsq_catalogue_open parses the embedded text
 * of a language into entries. Each entry has an id saying what it explains:
 *   kind:<event kind>         every DSQ_EV_* kind ("kind:memory")
 *   failure:<class>           a failure class ("failure:cuda_oom")
 *   attr:<name>[=<value>]     a run attribute, optionally one value of it
 *   attr:<prefix>.*           attributes sharing a prefix ("attr:pg_nccl.*")
 *   signal:<n>                a process ended by signal n (exit code -n)
 *   nccl:<line kind>          NCCL lines folded into other events (channels, rings)
 *   nccl_msg:<text>           NCCL lines whose message starts with text
 *   text:<text>               any line that contains text
 *   line:<name>               other line shapes (memory report's label and CPU lines)
 *   family:<name>             a family's lines that nothing more specific explains
 * and the fields title, means, normal, check, source. The entry "ui" holds the words
 * the explain output is framed with, so a language is one file.
 *
 * Entries are views into the catalogue's own copy of the text, valid until
 * dsq_catalogue_free. Lookups never allocate.
 */
#ifndef DSQ_CATALOGUE_H
#define DSQ_CATALOGUE_H

#include <stddef.h>

#include "dsq/dsq.h"

typedef struct dsq_catalogue dsq_catalogue;

typedef struct dsq_cat_entry {
    const char *id;
    const char *title;  /* a short name ("DeepSpeed memory report") */
    const char *means;  /* what the line says */
    const char *normal; /* what is normal; "" when not given */
    const char *check;  /* what to look at when it is not */
    const char *source; /* what it was checked against: file paths or doc URLs */
    size_t index;       /* position in the catalogue, 0..count-1 */
} dsq_cat_entry;

/* Languages with an embedded catalogue, NULL-terminated ("en" first: the default). */
extern const char *const dsq_catalogue_langs[];

/* Parses the embedded catalogue of lang ("en", "zh"). DSQ_EUSAGE for an unknown
 * language, DSQ_EFORMAT (err->line set) for a malformed catalogue. */
int dsq_catalogue_open(const char *lang, dsq_catalogue **out, dsq_error *err);

/* Parses catalogue text (borrowed: it is copied). */
int dsq_catalogue_parse(const char *text, size_t n, dsq_catalogue **out, dsq_error *err);

void dsq_catalogue_free(dsq_catalogue *c);

size_t dsq_catalogue_count(const dsq_catalogue *c);
const dsq_cat_entry *dsq_catalogue_at(const dsq_catalogue *c, size_t i);

/* The entry with this id, or NULL. */
const dsq_cat_entry *dsq_catalogue_get(const dsq_catalogue *c, const char *id);

/* The most specific entry for an event: for a failure "failure:<label>"; for an
 * attribute "attr:<label>=<value>", "attr:<label>", then "attr:<prefix>.*" for each
 * dotted prefix of the label; then "kind:<kind>". label and value may be NULL/"". */
const dsq_cat_entry *dsq_catalogue_for_event(const dsq_catalogue *c, const char *kind,
                                             const char *label, const char *value);

/* The entry "nccl_msg:<text>" whose text starts msg[0..n), or NULL. */
const dsq_cat_entry *dsq_catalogue_for_prefix(const dsq_catalogue *c, const char *group,
                                              const char *msg, size_t n);

/* The first entry "text:<needle>" (in id order) whose needle occurs in s[0..n), or
 * NULL: lines without fields of their own ("Adam Optimizer #0 is created with AVX2
 * arithmetic capability.") are explained by what they say. */
const dsq_cat_entry *dsq_catalogue_for_text(const dsq_catalogue *c, const char *s, size_t n);

/* A word of the "ui" entry (its field named key), or key itself when absent. */
const char *dsq_catalogue_ui(const dsq_catalogue *c, const char *key);

#endif
