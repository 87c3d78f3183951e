/* glog / c10 and torchrun families: the shared glog header parser (grammar/glog.re,
 * also used by grammar/torch.re for the glog-shaped launcher lines) and the two
 * handlers in src/fam_torch.c. */
#ifndef DSQ_FAM_TORCH_H
#define DSQ_FAM_TORCH_H

#include <stdint.h>

#include "grammar.h"

/* A parsed glog header. civil.mo == 0 when the header has no stamp. */
typedef struct dsq_glog_hdr {
    int level;          /* enum dsq_level */
    dsq_civil civil;    /* year-less */
    dsq_span file;      /* "ProcessGroupNCCL.cpp", "torch/distributed/run.py" */
    const char *body;   /* the message after "] " */
} dsq_glog_hdr;

/* Parses a glog / c10 header at the start of line (see grammar/glog.re). Returns 1
 * and fills h, or 0. Borrows line. */
int dsq_glog_header(const char *line, size_t len, dsq_glog_hdr *h);

/* Whether a glog-shaped header is torch.distributed's Python logger (a ".py" file
 * under torch/distributed/): those lines are the torchrun family's. */
int dsq_glog_is_torchrun(const dsq_glog_hdr *h);

/* glog handler: ProcessGroupNCCL init options (block lines and the one-line form)
 * become run attributes. The block's bare option lines take the rank of the
 * block's header line (of the same host). */
#define DSQ_GLOG_WRAP_MAX 1024

typedef struct dsq_glog_state {
    dsq_fam_state base;
    int have;           /* a block header was seen */
    int opts;           /* inside the options block */
    uint32_t host;      /* its stream */
    int rank;
    /* a watchdog timeout line cut by a terminal's hard wrap, waiting for the rest */
    int wd_pending;     /* continuation lines taken so far + 1; 0 none */
    int wrap_level;     /* a long glog line of this level may go on on the next line */
    uint32_t wrap_host;
    size_t wrap_width;  /* length of a line the terminal wrapped (0 unknown) */
    size_t wd_len;      /* length of the wrapped watchdog line */
    uint32_t wd_host;
    int wd_rank;
    int64_t wd_t_us;
    uint32_t wd_lineno;
    size_t wd_n;
    char wd_text[DSQ_GLOG_WRAP_MAX];
} dsq_glog_state;

/* grammar/glog.re: a watchdog timeout message ("Watchdog caught collective
 * operation timeout: WorkNCCL(...) ran for N milliseconds ...") as a failure:
 * sets m->ev, label nccl_timeout, text and its numeric K=v fields. */
void dsq_glog_watchdog(dsq_match *m, const char *msg, const char *end);

/* grammar/glog.re: whether a line is a bare "KEY: value" option of the old
 * ProcessGroupNCCL options block (asked only right after the block's header). */
int dsq_glog_is_option(const char *line, size_t len);

int dsq_glog_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                    size_t len);
int dsq_glog_finish(void *state, const dsq_line_ctx *lc);

/* torchrun handler: joins a ChildFailedError report's root cause into one failure. */
typedef struct dsq_torchrun_state {
    dsq_fam_state base;
    int section;        /* 0 none, 1 "Failures:", 2 "Root Cause" */
    int64_t t_us;       /* the entry's time, DSQ_TIME_NONE if none */
    int nf;
    dsq_mfield f[4];    /* exitcode, rank, local_rank, pid */
    char exitcode[48];  /* the exitcode value as printed, for a failure without signal */
    char host[64];      /* the entry's `host :` value */
    size_t host_n;
    int report;         /* 0 none, 1 after "ChildFailedError:", 2 inside the report */
    int report_lines;   /* lines since the report began, to give up on runaway ones */
    int report_loose;   /* unindented unknown lines since the report's last key line */
} dsq_torchrun_state;

int dsq_torchrun_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m,
                        const char *line, size_t len);

#endif
