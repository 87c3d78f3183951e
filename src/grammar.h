/* The one entry signature every grammar/<family>.re recognizer shares, and what it
 * fills. Recognizers are pure: no allocation, no state, no I/O; they only slice
 * the line. Golden tests, fuzzers and benches call them all the same way.
 *
 * Sentinel rule: line[len] is readable and is '\n' or '\r' (see lines.h), and no
 * rule matches across it, so the generated DFAs need no bounds checks.
 */
#ifndef DSQ_GRAMMAR_H
#define DSQ_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "timeconv.h"

/* Families count lines; a line belongs to the family of its logger header. */
enum dsq_family {
    DSQ_FAM_OTHER = 0, /* recognized by nothing: a print, a traceback line, ... */
    DSQ_FAM_DEEPSPEED,
    DSQ_FAM_COUNT
};

enum dsq_level {
    DSQ_LV_NONE = 0,
    DSQ_LV_DEBUG,
    DSQ_LV_INFO,
    DSQ_LV_WARNING,
    DSQ_LV_ERROR,
    DSQ_LV_CRITICAL,
    DSQ_LV_COUNT
};

/* What a recognizer found. */
enum dsq_mkind {
    DSQ_MK_NONE = 0,
    DSQ_MK_PREFIX,        /* a prefix layer (host, rank...), body is the rest */
    DSQ_MK_DS_LOG,        /* a DeepSpeed logger line with no more specific meaning */
    DSQ_MK_DS_MEM_LABEL,  /* see_memory_usage label line: body is the label */
    DSQ_MK_DS_MEM_MA,     /* MA / Max_MA / CA / Max_CA: v[0..3], unit[0..3] */
    DSQ_MK_DS_MEM_CPU     /* CPU Virtual Memory: used v[0] unit[0], percent v[1] */
};

typedef struct dsq_span {
    const char *p;
    size_t n;
} dsq_span;

#define DSQ_MATCH_MAXV 8

typedef struct dsq_match {
    int kind;        /* enum dsq_mkind */
    int family;      /* enum dsq_family */
    int level;       /* enum dsq_level */
    int rank;        /* -1 when the line names none */
    int64_t t_us;    /* DSQ_TIME_NONE when the line has no stamp */
    dsq_span host;   /* prefix host, when kind is DSQ_MK_PREFIX */
    dsq_span func;   /* logger's function name (DeepSpeed: file:line:func's func) */
    dsq_span body;   /* the rest of the line after what was recognized */
    int nv;
    double v[DSQ_MATCH_MAXV];
    uint8_t unit[DSQ_MATCH_MAXV]; /* enum dsq_unit */
} dsq_match;

/* Recognizes one line shape. Returns 1 and fills m (only the members it knows; the
 * caller clears m) when the line has this shape, 0 otherwise. */
typedef int (*dsq_grammar_fn)(const char *line, size_t len, dsq_match *m);

/* grammar/pdsh.re: a pdsh / DeepSpeed-runner host prefix, "gpu009: ". */
int dsq_gram_pdsh(const char *line, size_t len, dsq_match *m);

/* grammar/deepspeed.re: "[2024-07-20 21:30:05,202] [INFO] [file.py:96:func] [Rank 0] ..."
 * and, inside it, the three lines of the see_memory_usage report. */
int dsq_gram_deepspeed(const char *line, size_t len, dsq_match *m);

#endif
