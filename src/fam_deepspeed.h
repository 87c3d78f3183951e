/* DeepSpeed family: the second recognizer (bare prints) and the handler for what
 * spans lines (engine config JSON blocks, a message printed on the line after its
 * header, lines that carry two attributes). */
#ifndef DSQ_FAM_DEEPSPEED_H
#define DSQ_FAM_DEEPSPEED_H

#include <stddef.h>

#include "grammar.h"

/* Classifies a DeepSpeed logger message on its own (the text after the header, or
 * the line after a header whose message was empty): sets m->ev and its fields.
 * Returns 1 when the message is a known one. Pure, like the recognizers. */
int dsq_gram_deepspeed_message(const char *line, size_t len, dsq_match *m);

/* grammar/deepspeed.re: DeepSpeed's bare prints (no logger header): "Time to load
 * cpu_adam op: 2.63 seconds", "Config: alpha=...", ZeRO memory estimate tables. */
int dsq_gram_deepspeed_bare(const char *line, size_t len, dsq_match *m);

/* The dtype attribute's value for a name DeepSpeed prints ("torch.bfloat16",
 * "bfloat16", "bf16" -> "bf16"; "torch.float16", "fp16" -> "fp16"; ...), so runs
 * compare whichever line told it. Returns a static string, "?" for a name it does
 * not know. */
const char *dsq_ds_dtype_name(const char *p, size_t n);

#define DSQ_DS_PATH_MAX 160

/* Handler state (fixed size: nothing is allocated per line). */
typedef struct dsq_ds_state {
    dsq_fam_state base;
    int mode;                   /* 0 none, 1 a header with an empty message, 2 a JSON block */
    int depth;                  /* JSON nesting inside the block */
    int lines;                  /* lines of the current block, to give up on runaway ones */
    int next_level;             /* the level of a header whose message is on the next line */
    size_t plen[16];            /* path length at each depth */
    char path[DSQ_DS_PATH_MAX]; /* "zero_optimization.offload_param" */
} dsq_ds_state;

int dsq_ds_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                  size_t len);
int dsq_ds_finish(void *state, const dsq_line_ctx *lc);
/* dsq_family_def quiet: a DeepSpeed line that neither opens a block (a JSON print,
 * a header whose message follows) nor carries attributes. */
int dsq_ds_quiet(const dsq_match *m);

#endif
