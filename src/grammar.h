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

#include "span.h"
#include "timeconv.h"

/* Families count lines; a line belongs to the family of its logger header. To add
 * a family: an entry here (before DSQ_FAM_COUNT), its recognizer in
 * grammar/<family>.re, and one row in src/families.c. */
enum dsq_family {
    DSQ_FAM_OTHER = 0, /* recognized by nothing: a bare print, ... */
    DSQ_FAM_DEEPSPEED, /* DeepSpeed logger lines and DeepSpeed's bare prints */
    DSQ_FAM_NCCL,      /* NCCL / RCCL: "host:pid:tid [dev] NCCL INFO|WARN ..." */
    DSQ_FAM_HF,        /* HF transformers, LLaMA-Factory, accelerate, HF example logging, loss dicts */
    DSQ_FAM_TORCHRUN,  /* torch.distributed.run / elastic launcher */
    DSQ_FAM_GLOG,      /* glog / c10 (ProcessGroupNCCL, ...) */
    DSQ_FAM_TRACEBACK, /* Python tracebacks and exception lines */
    DSQ_FAM_PYWARN,    /* Python warnings: "file.py:56: UserWarning: ..." */
    DSQ_FAM_MEGATRON,  /* Megatron iteration / memory / argument lines */
    DSQ_FAM_MMENGINE,  /* mmengine / xtuner */
    DSQ_FAM_TQDM,      /* tqdm progress bars */
    DSQ_FAM_MISC,      /* MetricLogger, torchtitan, DS-Chat PPO, vLLM, TensorFlow headers */
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


#define DSQ_MATCH_MAXV 8
#define DSQ_MATCH_MAXF 16
#define DSQ_MATCH_AUX 256

/* A named number a line carries, named as the log prints it ("loss", "lm loss"). */
typedef struct dsq_mfield {
    dsq_span name;
    double v;
    uint8_t unit; /* enum dsq_unit */
} dsq_mfield;

/* A timestamp's parts, for stamps without a year (glog "I0910 14:27:22.992898",
 * mmengine "09/10 14:27:26"): y == 0 and the scanner supplies the year. */
typedef struct dsq_civil {
    int y, mo, d, h, mi, s, us;
} dsq_civil;

/* Where a number of the match came from (see src/shapes.h): the line-shape cache
 * replays a recognizer's match on a line that differs only in these digits, so it
 * must know which digits each value, rank or stamp was read from and how. A value
 * set without a source (a computed one) keeps its line's shape out of the cache. */
enum dsq_msrc_kind {
    DSQ_SRC_FIELD = 1, /* f[slot].v = dsq_num_parse of [p, stop) */
    DSQ_SRC_V,         /* v[slot] likewise */
    DSQ_SRC_RANK,      /* rank = the decimal digits [p, stop) */
    DSQ_SRC_STAMP_MS,  /* t_us = dsq_time_stamp_ms(p): "YYYY-MM-DD HH:MM:SS,mmm" */
    DSQ_SRC_STAMP_S,   /* t_us = dsq_time_stamp_s(p): "YYYY-MM-DD HH:MM:SS" */
    DSQ_SRC_CIVIL_MD   /* civil = DSQ_TIME_CIVIL_MD(p): "MM/DD HH:MM:SS", no year */
};
#define DSQ_MATCH_MAXSRC 28

typedef struct dsq_msrc {
    const char *p;  /* NULL: the value has no source in the line */
    uint16_t n;     /* bytes from p the value was read from */
    uint8_t kind;   /* enum dsq_msrc_kind */
    uint8_t slot;   /* f[] or v[] index */
} dsq_msrc;

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
    /* Generic single-line events: when ev != 0 (enum dsq_ev_kind) the scanner emits
     * one event of that kind with these fields and label, at this line's time. */
    int ev;
    dsq_span label;
    dsq_span text;   /* a string value (attribute value, message) */
    int nf;
    dsq_mfield f[DSQ_MATCH_MAXF];
    dsq_civil civil; /* a year-less stamp (t_us is DSQ_TIME_NONE then), mo == 0 if none */
    int64_t tod_us;  /* a time-of-day-only stamp ("[07:15:39.400163] "), -1 if none: the
                        scanner takes the date from the stream (or the file's mtime) */
    /* The process a line came from (NCCL's "host:pid:tid" pid). The scanner
     * remembers (host, proc) -> rank from lines that name both (NCCL's
     * "comm ... rank R nranks N") and gives that rank to the process's other lines.
     * A recognizer may also set m->host (NCCL's host) when no pdsh prefix did. */
    dsq_span proc;
    int nsrc;        /* sources noted so far (past DSQ_MATCH_MAXSRC: nsrc only grows) */
    dsq_msrc src[DSQ_MATCH_MAXSRC];
    /* What a recognizer parsed, left for its own family's handler so the line is not
     * parsed twice (NCCL keeps its dsq_nccl_line here). Valid for this line only,
     * and only when m->family is that recognizer's family; never cleared. */
    union {
        unsigned char bytes[DSQ_MATCH_AUX];
        int64_t align_i;
        void *align_p;
    } aux;
} dsq_match;

/* Appends a field whose number (and optional unit word after blanks) starts at
 * num; ignored when the number does not parse or the match is full. Returns the
 * position after what was consumed (num itself when nothing was). */
const char *dsq_match_field(dsq_match *m, const char *name, size_t name_n, const char *num,
                            const char *end);

/* Appends a field with a value already known (computed: no source in the line). */
void dsq_match_value(dsq_match *m, const char *name, size_t name_n, double v, int unit);

/* Appends a field whose value dsq_num_parse read from [p, stop). */
void dsq_match_value_at(dsq_match *m, const char *name, size_t name_n, double v, int unit,
                        const char *p, const char *stop);

/* Notes where a value, rank or stamp of the match came from (see dsq_msrc). */
static inline void dsq_match_src(dsq_match *m, int kind, int slot, const char *p, const char *stop)
{
    if (m->nsrc < DSQ_MATCH_MAXSRC)
        m->src[m->nsrc] = (dsq_msrc){p, (uint16_t)(p && stop - p < 65536 ? stop - p : 0),
                                     (uint8_t)kind, (uint8_t)slot};
    m->nsrc++;
}

/* --- stateful families: multi-line events (tracebacks, tables, blocks) ------ */

struct dsq_scan;

/* Where the current line belongs, for a handler that emits events. */
typedef struct dsq_line_ctx {
    struct dsq_scan *sc;
    uint32_t host;   /* dictionary id, 0 unknown */
    int rank;        /* -1 unknown */
    int64_t t_us;    /* the line's time (its own or inherited), DSQ_TIME_NONE if none yet */
    uint32_t lineno;
} dsq_line_ctx;

/* Every handler state starts with this; while `active` is non-zero the handler
 * also sees lines of other families (continuation lines are usually "other").
 * handle() returns < 0 on error, 0, or 1 to claim the line for its family. */
typedef struct dsq_fam_state {
    int active;
    int claim_level; /* set by handle() before returning 1: the claimed line's level
                        (enum dsq_level) when it has none of its own */
} dsq_fam_state;

/* Dictionary ids of an event's names kept from one line to the next (a line
 * shape keeps them for its lines): 0 where not interned yet; the label's and the
 * text's only where every line of the shape has the same bytes there. */
typedef struct dsq_emit_ids {
    uint32_t f[DSQ_MATCH_MAXF];
    uint32_t label, text;
    uint32_t f_vary; /* bit i: f[i]'s name differs from line to line (never kept) */
    uint8_t label_same, text_same;
    uint8_t f_all;   /* every f[i] found (none varies): copied as they are, with
                        unit[i] (a shape's units are its own) */
    uint8_t unit[DSQ_MATCH_MAXF];
    uint8_t quiet_known;
    uint64_t quiet;  /* bit k: the scanner's handler k is quiet for the shape's lines
                        (dsq_family_def.quiet), once quiet_known */
    uint8_t lean_known;
    uint8_t lean;    /* nothing but the scanner's own event reads the fields' names and
                        units of the shape's lines (dsq_shapes_apply), once lean_known */
} dsq_emit_ids;

/* What a handler emits: kind (enum dsq_ev_kind), optional label and text, fields
 * (names are spans; copy them into the state first if they outlive the line). The
 * event takes the line's host, rank, time and line number unless t_us / lineno are
 * set (non-zero), e.g. for a block that ends lines after it began. */
typedef struct dsq_emit_args {
    int ev;
    dsq_span label;
    dsq_span text;
    const dsq_mfield *f;
    int nf;
    int64_t t_us;
    uint32_t lineno;
    dsq_span host;   /* a host the event names itself (a failure table's `host :`), else the line's */
    int set_rank;    /* 1: use `rank` below instead of the line's rank */
    int rank;
    dsq_emit_ids *ids; /* NULL, or ids of f[] (and label, text) names to use and fill */
} dsq_emit_args;

int dsq_scan_emit(const dsq_line_ctx *lc, const dsq_emit_args *a);

/* One row of the family registry (src/families.c): recognizers run in this order
 * on what is left after the prefix layers; the first that matches owns the line.
 * A family with a handler gets state_size bytes of zeroed state per stream (no
 * allocation per line); handle() sees each line of its family, and every line
 * while its state is active; finish() runs at the end of the stream. */
typedef struct dsq_family_def {
    int family;           /* enum dsq_family */
    const char *name;     /* "deepspeed": what `count by family` prints */
    int (*recognize)(const char *line, size_t len, struct dsq_match *m);
    size_t state_size;    /* 0: no handler */
    int (*handle)(void *state, const dsq_line_ctx *lc, const struct dsq_match *m,
                  const char *line, size_t len);
    int (*finish)(void *state, const dsq_line_ctx *lc);
    void (*reset)(void *state); /* when set, zeroes the state for the next stream
                                   instead of a memset of all of it (a big state that
                                   a stream touches little of) */
    unsigned watch;       /* 1u << family: the handler also sees these families' lines
                             (the torchrun report begins at a traceback's exception) */
    /* When set: 1 if handle() changes nothing and emits nothing, returning 0, for a
     * line with this match while the state is not active, whatever digits the
     * line's values, rank and stamp have (so a line shape's first match tells for
     * all its lines); its answer may depend only on bytes that are not such digits.
     * The scanner then skips the call for the shape's lines (DSQ_LINE_SHAPES=check
     * makes the call and aborts if the state changed). */
    int (*quiet)(const struct dsq_match *m);
} dsq_family_def;

extern const dsq_family_def dsq_families[];
extern const size_t dsq_nfamilies;

/* Name of a family ("other" for DSQ_FAM_OTHER, "?" out of range). */
const char *dsq_family_name(int family);

/* Name of a level ("none", "debug", "info", "warning", "error", "critical"). */
const char *dsq_level_name(int level);

/* Recognizes one line shape. Returns 1 and fills m (only the members it knows; the
 * caller clears m) when the line has this shape, 0 otherwise. */
typedef int (*dsq_grammar_fn)(const char *line, size_t len, dsq_match *m);

/* grammar/pdsh.re: a pdsh / DeepSpeed-runner host prefix, "gpu009: ". Returns 1
 * for a sure host, 2 for a name that may be one ("brutasse: ", "bf16: "): the
 * caller takes it only when a log line follows. */
int dsq_gram_pdsh(const char *line, size_t len, dsq_match *m);
/* The same without its first look at the line (tests compare the two). */
int dsq_gram_pdsh_dfa(const char *line, size_t len, dsq_match *m);

/* Whether a line starts with a logger's date stamp, "[" then 4 digits then '-'
 * ("[2024-07-01 01:16:35,696] [INFO] ..."): no prefix layer does (dsq_gram_prefix's
 * first look), nor a host prefix (a letter or a digit first). */
static inline int dsq_gram_date_first(const char *line, size_t len)
{
    return len > 5 && line[0] == '[' && line[5] == '-' && (unsigned)(line[1] - '0') <= 9 &&
           (unsigned)(line[2] - '0') <= 9 && (unsigned)(line[3] - '0') <= 9 &&
           (unsigned)(line[4] - '0') <= 9;
}

/* Whether byte c may begin a pdsh host prefix: a letter or a digit. */
static inline int dsq_gram_host_first(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* Whether byte c may begin one of prefix.re's layers: '[', a digit, ESC, '>' or
 * '(' (dsq_gram_prefix takes no line that starts otherwise). */
static inline int dsq_gram_prefix_first(unsigned char c)
{
    return c == '[' || (c >= '0' && c <= '9') || c == 0x1b || c == '>' || c == '(';
}

/* Whether a line that starts with byte c may start a prefix layer: a host prefix
 * or one of prefix.re's. Neither grammar takes a line that does not. */
static inline int dsq_gram_layer_first(unsigned char c)
{
    return dsq_gram_host_first(c) || dsq_gram_prefix_first(c);
}

/* grammar/prefix.re: one prefix layer ([rank3]:, [default3]:, [1,3]<stdout>:,
 * [trainer0|3]:, srun "3: ", an RFC 3339 container stamp, a time-of-day stamp,
 * ANSI colour codes, Ray actor tags). */
int dsq_gram_prefix(const char *line, size_t len, dsq_match *m);
/* The same without its first look at the line (tests compare the two). */
int dsq_gram_prefix_dfa(const char *line, size_t len, dsq_match *m);

/* grammar/deepspeed.re: "[2024-07-20 21:30:05,202] [INFO] [file.py:96:func] [Rank 0] ..."
 * and, inside it, the three lines of the see_memory_usage report. */
int dsq_gram_deepspeed(const char *line, size_t len, dsq_match *m);

/* grammar/hf.re: transformers "[INFO|trainer.py:2078] 2024-07-20 21:30:42,543 >> ...",
 * LLaMA-Factory, accelerate's padded logger, HF example-script logging, and the
 * Trainer's bare metric dicts {'loss': ...}. Handler in src/fam_hf.c. */
int dsq_gram_hf(const char *line, size_t len, dsq_match *m);

/* grammar/megatron.re: Megatron " iteration N/ M | ... |" lines, validation loss,
 * "[Rank N] (after K iterations) memory (MB) | ...", and the arguments dump. */
int dsq_gram_megatron(const char *line, size_t len, dsq_match *m);

/* grammar/mmengine.re: "09/10 14:27:26 - mmengine - INFO - ..." (year-less stamp)
 * and, inside it, the "Iter(train) [ 10/1000]  lr: ..." training line. */
int dsq_gram_mmengine(const char *line, size_t len, dsq_match *m);

/* grammar/glog.re: glog / c10 "I0910 14:27:22.992898 134 ProcessGroupNCCL.cpp:686] ...",
 * "[E901 05:20:04.798433587 file.cpp:1899] ...", "[E file.cpp:737] ...", and the bare
 * option lines of ProcessGroupNCCL's init block. Handler in src/fam_torch.c. */
int dsq_gram_glog(const char *line, size_t len, dsq_match *m);

/* grammar/torch.re: torch.distributed.run / elastic launcher lines and the
 * ChildFailedError report. Handler in src/fam_torch.c. */
int dsq_gram_torchrun(const char *line, size_t len, dsq_match *m);

/* grammar/traceback.re: Python traceback lines, exception lines, C++ terminate /
 * c10 stack traces. Handler in src/fam_traceback.c. */
int dsq_gram_traceback(const char *line, size_t len, dsq_match *m);

/* grammar/traceback.re: "path/file.py:56: UserWarning: message". */
int dsq_gram_pywarn(const char *line, size_t len, dsq_match *m);

/* grammar/nccl.re: NCCL / RCCL "host:pid:tid [dev] NCCL INFO|WARN ...", the bare
 * "NCCL version ..." / "RCCL version ..." lines and RCCL's version block. Line
 * parser and handler in src/fam_nccl.h / src/fam_nccl.c. */
int dsq_gram_nccl(const char *line, size_t len, dsq_match *m);

/* grammar/tqdm.re: a progress bar line ("... 33%|###3      | 1/3 [00:01<00:03,  1.55s/it]"). */
int dsq_gram_tqdm(const char *line, size_t len, dsq_match *m);

/* grammar/misc.re: DeepSpeed-Chat PPO / reward / hybrid-engine timing prints,
 * torchtitan "[titan] 2025-07-21 15:57:42,774 - root - INFO - ..." and MetricLogger
 * "Epoch: [2]  [1480/1504]  lr: ..." (optionally after a "[07:15:39.400163] " stamp). */
int dsq_gram_misc(const char *line, size_t len, dsq_match *m);

#endif
