/* HF family handler (src/fam_hf.c): joins multi-line HF output into events. */
#ifndef DSQ_FAM_HF_H
#define DSQ_FAM_HF_H

#include <stdint.h>

#include "grammar.h"

#define DSQ_HF_SETUP_MAXF 8
#define DSQ_HF_NAME_MAX 80

/* Per-stream state (fixed size, zeroed by the scanner). */
typedef struct dsq_hf_state {
    dsq_fam_state base;    /* active while a block below is open */
    int setup;             /* a "***** Running training *****" block is open */
    int json;              /* inside a config dump ("Model config LlamaConfig {") */
    int json_depth;        /* braces / brackets open in the dump */
    int json_level;        /* the level of the line that opened it */
    int version_done;      /* transformers_version already emitted for this stream */
    uint32_t lines;        /* lines seen since the open block began */
    int64_t t_us;          /* the block's first line: time, number, host, rank */
    uint32_t lineno;
    uint32_t host;
    int rank;
    int nf;
    dsq_mfield f[DSQ_HF_SETUP_MAXF];              /* names point into name[] */
    char name[DSQ_HF_SETUP_MAXF][DSQ_HF_NAME_MAX];
} dsq_hf_state;

/* dsq_family_def handle / finish for DSQ_FAM_HF. */
int dsq_hf_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                  size_t len);
int dsq_hf_finish(void *state, const dsq_line_ctx *lc);
/* dsq_family_def quiet: an HF line that opens no block (the setup, a JSON dict). */
int dsq_hf_quiet(const dsq_match *m);

#endif
