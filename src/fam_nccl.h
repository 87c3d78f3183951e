/* NCCL / RCCL family: the line parser shared by the recognizer (grammar/nccl.re)
 * and the stateful handler (src/fam_nccl.c).
 *
 * The recognizer is pure and fills a dsq_match; the handler needs more of the line
 * (pid, tid, which topology line it is), so both call dsq_nccl_parse, which slices
 * one line into a dsq_nccl_line. Nothing here allocates or keeps state.
 */
#ifndef DSQ_FAM_NCCL_H
#define DSQ_FAM_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "grammar.h"

/* What an NCCL line says, as far as dsq cares. */
enum dsq_nccl_kind {
    DSQ_NCCL_OTHER = 0,   /* a headed line with nothing extracted */
    DSQ_NCCL_VERSION,     /* "NCCL version 2.18.3+cuda12.1", "RCCL version : 2.27.7-HEAD:..": a */
    DSQ_NCCL_RCCL_BLOCK,  /* RCCL's unprefixed "HIP version  : ..." block lines */
    DSQ_NCCL_BOOTSTRAP,   /* "Bootstrap : Using eth0:10.0.0.9<0>": a = interfaces */
    DSQ_NCCL_PLUGIN,      /* "NET/Plugin ...": a = plugin name, "internal", or empty */
    DSQ_NCCL_NET_IB,      /* "NET/IB : Using [0]mlx5_0:1/IB ...": a = IB|RoCE|IB+RoCE, n1 = devices */
    DSQ_NCCL_NET_SOCKET,  /* "NET/Socket : Using [0]eth0:...": a = "Socket", n1 = devices */
    DSQ_NCCL_USING_NET,   /* "Using network IB": a = name */
    DSQ_NCCL_ENV,         /* "NCCL_IB_DISABLE set by environment to 0.": a = var, b = value */
    DSQ_NCCL_INIT_START,  /* "... comm 0x.. rank R nranks N ... - Init START" */
    DSQ_NCCL_INIT,        /* "... - Init COMPLETE": a = function, b = commId, rank nranks ... */
    DSQ_NCCL_DESTROY,     /* "comm .. - Destroy COMPLETE" / "Abort COMPLETE": a = Destroy|Abort */
    DSQ_NCCL_COMM,        /* "comm 0x.. rank R nRanks N nNodes K ..." and RCCL "comm:0x.., nRanks:2, ..." */
    DSQ_NCCL_CHAN_COUNTS, /* "4 coll channels, ..., 4 p2p channels, ...": n1 coll, n2 p2p */
    DSQ_NCCL_RING_LIST,   /* "Channel 00/04 :  0 1 2 3": n1 = channel, n2 = channel count */
    DSQ_NCCL_CONNECT,     /* "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC": n1 = channel, a = transport */
    DSQ_NCCL_GRAPH,       /* "Trees [0] ...", "Ring 00 : 1 -> 0 -> 1", "Tree 0 : ...": n1 = channel */
    DSQ_NCCL_ERRTRACE,    /* "transport/net.cc:1034 -> 2": n1 = ncclResult */
    DSQ_NCCL_AFFINITY,    /* "Setting affinity for GPU 0 to ff" */
    DSQ_NCCL_WARN         /* any WARN line: a = message, src = file:line */
};

typedef struct dsq_nccl_line {
    int kind;            /* enum dsq_nccl_kind */
    int level;           /* enum dsq_level */
    int headed;          /* 1 when the line has the host:pid:tid [dev] header */
    int rank_prefix;     /* "[155] " before the host (MPI-style), -1 when absent */
    int64_t t_us;        /* leading "[2025-11-12 11:11:57] " stamp, DSQ_TIME_NONE if none */
    dsq_span host;       /* as printed ("gpu009", "<cluster_name>") */
    long pid, tid;       /* -1 when not printed ("node [0]" has neither) */
    dsq_span pid_s;      /* the pid as printed, empty when not printed */
    int dev;             /* cudaDev in brackets, -1 when not printed */
    dsq_span src;        /* WARN and error-trace lines: "misc/ibvwrap.cc:63" */
    dsq_span msg;        /* the message after the header, right blanks trimmed */
    dsq_span a, b;       /* kind-specific strings (see enum dsq_nccl_kind) */
    long rank, nranks, cuda_dev, nvml_dev, nnodes, used; /* -1 when not printed */
    long n1, n2;         /* kind-specific numbers, -1 when not printed */
    int split;           /* the comm line names a "parent" (ncclCommSplit): its rank is not global */
} dsq_nccl_line;

/* Parses one line (sentinel rule of grammar.h). Returns 1 and fills *o when the
 * line is an NCCL / RCCL line, 0 otherwise (then *o is unspecified). */
int dsq_nccl_parse(const char *line, size_t len, dsq_nccl_line *o);

/* The same without the fast path for the common "host:pid:tid [dev] NCCL INFO "
 * header: every line through the DFA. For the differential test (test_nccl_parse):
 * both must fill *o byte for byte alike. */
int dsq_nccl_parse_dfa(const char *line, size_t len, dsq_nccl_line *o);

/* 1 when every field of a and b is the same (spans: the same bytes of the line). */
int dsq_nccl_line_same(const dsq_nccl_line *a, const dsq_nccl_line *b);

/* A process: FNV-1a of the host, mixed with the pid; never 0. */
uint64_t dsq_nccl_proc_key(const dsq_nccl_line *l);

/* --- a run of channel lines ------------------------------------------------------ */

/* A process prints its channel lines one after another, the same bytes but for the
 * channel's number ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", then "Channel
 * 01/0 ..."). The memo keeps the last NCCL line a scanner read and its parse, and
 * reads a line that differs from it only in those digits without parsing it again.
 * Zero-initialized: empty. */
#define DSQ_NCCL_MEMO_MAX 256

#define DSQ_NCCL_HEAD_MAX 128

typedef struct dsq_nccl_memo {
    dsq_nccl_line o;     /* the line's parse; the spans of rel's bits are offsets in it */
    uint32_t len;        /* 0: nothing kept */
    uint16_t lo, hi;     /* the channel number's digits: line[lo, hi) */
    uint8_t rel;         /* bit i: span i (host, pid_s, src, msg, a, b) lies in the line */
    char line[DSQ_NCCL_MEMO_MAX];
    /* the header of the last NCCL line that began "host:pid:tid [dev] NCCL INFO ":
     * its head_n bytes (0: none), where its host and pid are in them, and its numbers */
    uint16_t head_n, host_n, pid_at, pid_n;
    long pid, tid;
    int dev;
    char head[DSQ_NCCL_HEAD_MAX];
} dsq_nccl_memo;

/* 1 with m as dsq_gram_nccl fills it, when line differs from the memo's only in the
 * channel number's digits; else 0 with m untouched. */
int dsq_nccl_memo_match(const dsq_nccl_memo *memo, const char *line, size_t len, dsq_match *m);

/* 1 with m as dsq_gram_nccl fills it, when line begins with the kept header (an
 * NCCL process's lines come in runs, most of them not channel lines): only the
 * message after it is read (the archive: ~530 instructions a line, ~870 through the
 * recognizers); else 0 with m untouched. */
int dsq_nccl_memo_head(const dsq_nccl_memo *memo, const char *line, size_t len, dsq_match *m);

/* Keeps line and its match m (dsq_gram_nccl's) when it is a channel line (a
 * connection, a ring's rank list, a ring or tree line), else empties the memo; and
 * its header when it has the plain "host:pid:tid [dev] NCCL INFO " one (nothing
 * before the host), else none. same_head: the line was read by dsq_nccl_memo_head,
 * its header the one kept already. */
void dsq_nccl_memo_keep(dsq_nccl_memo *memo, const char *line, size_t len, const dsq_match *m,
                        int same_head);

/* --- handler ----------------------------------------------------------------- */

#define DSQ_NCCL_SLOTS 64  /* threads with a communicator being set up, at once */
#define DSQ_NCCL_VIA 160   /* transports of one communicator, space-separated */
#define DSQ_NCCL_VIA_WORDS 16 /* where the first transports start, to look them up */
#define DSQ_NCCL_WARN_MAX 240

typedef struct dsq_nccl_slot {
    uint64_t key;       /* host, pid, tid; 0 = free */
    uint64_t proc;      /* host, pid */
    uint32_t host;      /* dictionary id the scanner gave the line */
    uint32_t lineno, used_at;
    int64_t t_us;
    int rank, nranks, nnodes, nchan, coll, p2p;
    uint64_t chan_mask;
    uint32_t n_p2p, n_shm, n_net, n_conn;
    int has_topo;
    int in_chain, warn_prev;
    size_t via_n, warn_n;
    char via[DSQ_NCCL_VIA];
    /* the via words' starts and lengths; via_words past DSQ_NCCL_VIA_WORDS: more
     * words than listed (then via is searched byte by byte) */
    uint8_t via_words, via_at[DSQ_NCCL_VIA_WORDS], via_len[DSQ_NCCL_VIA_WORDS];
    char warn[DSQ_NCCL_WARN_MAX];
} dsq_nccl_slot;

typedef struct dsq_nccl_state {
    dsq_fam_state base; /* never active: the handler wants NCCL lines only */
    uint32_t clock;
    int last; /* the slot found last: a process prints its lines in runs */
    int nslots; /* slots from nslots on are free and zero (the state is 33 KB: a
                   stream of a few lines touches, flushes and clears only these) */
    /* the process key of the last line (a process prints its lines in runs): its
       host as printed and pid (proc_n 0: none) */
    uint64_t proc_key;
    long proc_pid;
    size_t proc_n;
    char proc_host[64];
    dsq_nccl_slot slot[DSQ_NCCL_SLOTS];
    char label[96];
    /* the largest communicator the stream's lines named (the world's): its size
       and node count become run attributes at the end of the stream */
    long world_nranks, world_nnodes; /* 0 when none printed */
    dsq_line_ctx world_at;           /* the line that named the size */
    dsq_line_ctx nodes_at;
} dsq_nccl_state;

int dsq_nccl_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                    size_t len);
int dsq_nccl_finish(void *state, const dsq_line_ctx *lc);
void dsq_nccl_reset(void *state);

#endif
