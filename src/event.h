/* Normalized events and their on-disk block encoding.
 *
 * An event is what a log line (or a few lines) says: a kind, when, where (host and
 * rank), an optional label and up to DSQ_EV_MAXF named numeric fields, each with
 * the unit it was printed in. Names are dictionary ids, so the event is fixed-size
 * and built on the stack: nothing is allocated per event.
 *
 * Events of one (run, host, rank) stream are stored many to a block: one LMDB value
 * per block, keyed by run/host/rank/time-of-first-event/source/sequence (see
 * store.h). Within a block events are delta-encoded in the order they were logged,
 * and an event's shape (kind, field names and units) is written once per block.
 */
#ifndef DSQ_EVENT_H
#define DSQ_EVENT_H

#include <stddef.h>
#include <stdint.h>

#define DSQ_EV_MAXF 16

/* Event kinds. To add one: an entry before DSQ_EV_KIND_COUNT and its name in
 * event.c. Numbers are stored in the index: never reorder, only append. */
enum dsq_ev_kind {
    DSQ_EV_NONE = 0,
    DSQ_EV_MEMORY = 1, /* DeepSpeed see_memory_usage report: MA Max_MA CA Max_CA CPU_used CPU_percent */
    DSQ_EV_ATTR = 2,   /* a run attribute: label = name ("zero_stage"), text = value as printed,
                          and field "value" when the value is a number */
    DSQ_EV_FAILURE = 3, /* something failed: label = class (cuda_oom, nccl_timeout, nccl_error,
                           cuda_error, signal, exception, launcher_exit), text = message */
    DSQ_EV_HF_LOSS,       /* HF Trainer loss dict: fields named as its keys (loss, grad_norm, ...) */
    DSQ_EV_HF_EVAL,       /* HF Trainer eval dict: eval_loss, eval_runtime, ... */
    DSQ_EV_HF_TRAIN_END,  /* HF Trainer final dict: train_runtime, train_loss, ... */
    DSQ_EV_HF_TRAIN_SETUP, /* "***** Running training *****" block: Num examples, Num Epochs, ... */
    DSQ_EV_HF_CHECKPOINT, /* "Saving model checkpoint to PATH": text = PATH, field checkpoint */
    DSQ_EV_DS_TIMER,      /* DeepSpeed "time (ms) | name: v | ...": one field per timer, unit ms */
    DSQ_EV_DS_THROUGHPUT, /* DeepSpeed timer.py: epoch micro_step global_step RunningAvgSamplesPerSec ... */
    DSQ_EV_DS_STEP,       /* DeepSpeed "step=10, skipped=0, lr=[...]": step skipped lr */
    DSQ_EV_DS_OVERFLOW,   /* DeepSpeed fp16 overflow: Attempted loss scale, reducing to / iteration */
    DSQ_EV_DS_CACHE_FLUSH, /* DeepSpeed "N pytorch allocator cache flushes since last step": flushes */
    DSQ_EV_DS_OP_LOAD,    /* DeepSpeed "Time to load cpu_adam op: 2.6 seconds": label = op */
    DSQ_EV_DS_LOSS_SCALE, /* DeepSpeed "Reducing/Increasing dynamic loss scale from A to B": from, to */
    DSQ_EV_DS_MEM_ESTIMATE, /* ZeRO memory estimate row: per CPU, per GPU (GB); label = options */
    DSQ_EV_MEGATRON_ITER, /* Megatron " iteration N/ M | name: v | ...": fields as printed */
    DSQ_EV_MEGATRON_VALIDATION, /* Megatron "validation loss at iteration N | lm loss value: ..." */
    DSQ_EV_MEGATRON_MEMORY, /* Megatron "[Rank N] (after K iterations) memory (MB) | ...", unit MB */
    DSQ_EV_MMENGINE_ITER, /* mmengine "Iter(train) [ 10/1000]  lr: ...": label = mode */
    DSQ_EV_NCCL_INIT,     /* NCCL "comm 0x.. rank R nranks N cudaDev D ... - Init COMPLETE": rank nranks
                             cudaDev nvmlDev used (B); label = init function, text = commId */
    DSQ_EV_NCCL_TOPOLOGY, /* NCCL channels/rings/trees summarized per communicator: nranks nNodes
                             channels "coll channels" "p2p channels" P2P SHM NET; label = transports */
    DSQ_EV_NCCL_WARN,     /* NCCL "file.cc:123 NCCL WARN msg": label = file:line, text = msg */
    DSQ_EV_NCCL_DESTROY,  /* NCCL "comm .. - Destroy|Abort COMPLETE": label = Destroy|Abort, rank nranks cudaDev */
    DSQ_EV_TRACEBACK,     /* a Python traceback: label = exception type, text = message (none if cut) */
    DSQ_EV_PYWARN,        /* "file.py:56: UserWarning: msg": label = warning class, text = msg */
    DSQ_EV_TORCHRUN_CLOSING_SIGNAL, /* elastic "Sending process P closing signal SIGTERM": label, pid */
    DSQ_EV_TORCHRUN_OMP,  /* torchrun "Setting OMP_NUM_THREADS ... to be 1": OMP_NUM_THREADS */
    DSQ_EV_GLOG_DESYNC,   /* ProcessGroupNCCL desync report finding: label = what, text = ranks, collective */
    DSQ_EV_DSCHAT_PPO,    /* DeepSpeed-Chat "epoch: 0|step: 0|ppo_ep: 1|act_loss: ...": pairs as printed */
    DSQ_EV_DSCHAT_REWARD, /* DeepSpeed-Chat "average reward score: 0.19": field as printed */
    DSQ_EV_DSCHAT_TIMING, /* hybrid engine "|E2E latency=7.99s |Gather latency=...": name=value, s */
    DSQ_EV_TITAN_STEP,    /* torchtitan "step: 3  loss: ...  memory: 20.01GiB(..)  mfu: 18.2%" */
    DSQ_EV_METRIC_LOGGER, /* MetricLogger "Epoch: [2]  [i/n]  lr: ...  max mem: 12345": epoch iter pairs */
    DSQ_EV_RANK_LINES,    /* a rank is present in a stream: one per (host, rank) at its first line,
                             field "lines" = the stream's lines with that rank */
    DSQ_EV_KIND_COUNT
};

typedef struct dsq_field {
    uint32_t name; /* dictionary id of the field name, e.g. "Max_MA" */
    uint8_t unit;  /* enum dsq_unit */
    double v;
} dsq_field;

typedef struct dsq_event {
    uint16_t kind;  /* enum dsq_ev_kind */
    uint8_t nf;     /* fields used */
    int32_t rank;   /* -1 when unknown */
    uint32_t host;  /* dictionary id, 0 when unknown */
    int64_t t_us;   /* microseconds since the epoch; DSQ_TIME_NONE when no time was seen */
    uint32_t label; /* dictionary id or 0: what the event is about ("Stage 3 initialize beginning") */
    uint32_t text;  /* dictionary id or 0: a string value (an attribute's value, an error message) */
    uint32_t line;  /* 1-based line number in its file or member */
    dsq_field f[DSQ_EV_MAXF];
} dsq_event;

/* The smallest e in 0..6 with v == m / 10^e exactly and |m| < 2^53 (*m set), or
 * -1 (NaN, -0, infinities, other doubles): the decimal form of varint.h's packed
 * numbers (the same e and m as dsq_num_put's loop), which blocks and rollup chunks
 * store. */
int dsq_ev_decimal(double v, int64_t *m);

/* dsq_num_put's bytes of v (varint.h), its form found by dsq_ev_decimal: one
 * product and one division where dsq_num_put's loop tries each e in turn. */
unsigned char *dsq_ev_num_put(unsigned char *p, double v);

/* A field value's decimal form: dsq_ev_decimal's e (-1: none) and m. The writer
 * finds each value's form once and hands it to the block and to the rollups. */
typedef struct dsq_num_form {
    int64_t m;
    int e;
} dsq_num_form;

/* The forms of ev's fields into forms[0..ev->nf). */
void dsq_ev_forms(const dsq_event *ev, dsq_num_form *forms);

/* Name of a kind ("memory"), or "?" */
const char *dsq_ev_kind_name(int kind);

/* A shape: what events of one form share (kind, field names and units). A block
 * holds up to DSQ_BLOCK_SHAPES of them; events refer to them by number. */
#define DSQ_BLOCK_SHAPES 64

typedef struct dsq_ev_shape {
    uint16_t kind;
    uint8_t nf;
    uint8_t unit[DSQ_EV_MAXF];
    uint32_t name[DSQ_EV_MAXF];
} dsq_ev_shape;

/* A growable byte buffer that encodes one block; allocated once and reused. */
typedef struct dsq_block {
    unsigned char *buf;
    size_t len, cap;
    uint32_t count;     /* events in the block */
    int64_t t_first;    /* time of the first event */
    int64_t t_prev;     /* for delta encoding */
    uint32_t line_prev;
    uint32_t nshapes;
    uint8_t last_shape[DSQ_EV_KIND_COUNT]; /* per kind: 1 + its last shape, 0 none */
    /* per kind with fields: the number its first event here has among the kind's
     * events with fields of the (host, rank) in the source (what rollups number
     * them by); a bit of `started` each */
    uint64_t started;
    uint64_t start[DSQ_EV_KIND_COUNT];
    /* the shapes kept so far, in a buffer of shapes_cap grown as they come (up to
     * DSQ_BLOCK_SHAPES): 64 in place made an open block 5.8 kB, 47 MB for the 8,192
     * open blocks of a launcher log of 8,192 ranks, most of which use two or three */
    dsq_ev_shape *shapes;
    uint32_t shapes_cap;
} dsq_block;

/* Empties a block for reuse (keeps its buffers). */
void dsq_block_reset(dsq_block *b);
void dsq_block_free_buf(dsq_block *b);

/* Appends one event (host and rank are in the key, not encoded). 0 or DSQ_ENOMEM. */
int dsq_block_add(dsq_block *b, const dsq_event *ev);
/* The same with the forms of ev's fields (dsq_ev_forms of ev; borrowed), where
 * the fields of the bits of `in_series` are not stored here but in their series
 * (rollup.h: the writer's rollup kept them bit for bit), as the `event`-th of
 * ev's kind with fields: readers find them there (query.c, dsq_evfill). */
int dsq_block_add_ref(dsq_block *b, const dsq_event *ev, const dsq_num_form *forms,
                      uint32_t in_series, uint64_t event);

/* The value a block is stored as (schema 9): its events' parts in columns, so that
 * zstd finds like next to like (it packs them in a third of the time, and smaller).
 *
 *   varint count, varint ncols, the starts, varint length of each of the 5
 *   streams and of each of the ncols value columns, then their bytes one after
 *   another.
 *
 * The starts: varint n, then n times varint kind and varint e: the block's first
 * event with fields of that kind is the e-th of its kind with fields in the
 * (host, rank) of the source (counting from 0), the next one e + 1, and so on.
 *
 * A block whose rows take under DSQ_BLOCK_COLUMNS_MIN bytes is stored as its rows
 * (varint count, 0, the starts, the rows): the store keeps values that small
 * unpacked, and unpacked the rows are the smaller.
 *
 * The streams hold, event after event, what the row encoding of dsq_block_add
 * has in one place: the shape (its number, or 0 and the shape spelled out), the
 * zigzag time delta, the label, the text and the zigzag line delta. Each field of
 * a kept shape has a value column of its own (the shapes' columns in the order
 * they are spelled out; the fields of a shape the block does not keep go to
 * column 0). A value is a packed number (varint.h); a decimal one whose column's
 * value before it had the same exponent e holds the difference of the two
 * mantissas instead: varint zigzag(m - m_before) << 3 | e. */
#define DSQ_BLOCK_STREAMS 5
/* A value stored in its series instead (dsq_block_add_ref): this one byte where a
 * packed number would be, in rows and in columns (a column's value before it
 * stays the one the next difference is from). The iterator gives such a field
 * as NaN with its bit in in_series. */
#define DSQ_VAL_IN_SERIES 0x0F
#define DSQ_BLOCK_COLUMNS_MIN 1024
#define DSQ_BLOCK_COLS (1 + DSQ_BLOCK_SHAPES * DSQ_EV_MAXF)

/* The encoder's buffers, made once and reused for every block. */
typedef struct dsq_block_cols dsq_block_cols;

int dsq_block_cols_new(dsq_block_cols **out);
void dsq_block_cols_free(dsq_block_cols *c);

/* The stored value of block b into c's buffer: *data and *n stay valid until c is
 * used again. 0, DSQ_ENOMEM, or DSQ_EFORMAT when b's rows, read into columns, are
 * not a block's (rows stored as they are are not read). */
int dsq_block_encode(dsq_block_cols *c, const dsq_block *b, const unsigned char **data,
                     size_t *n);

/* Iterates the events of a stored block. The cursor borrows data. */
typedef struct dsq_block_col {
    const unsigned char *p, *end;
    int64_t m; /* the mantissa of the column's last value, when decimal */
    int e;     /* its exponent; 7 before any value and after a raw double */
} dsq_block_col;

typedef struct dsq_block_iter {
    /* after dsq_block_iter_next: the event's number among its kind's with fields
     * (UINT64_MAX when it has no fields), and its fields whose values are in their
     * series (a bit each) */
    uint64_t event;
    uint32_t in_series;
    uint64_t started, next[DSQ_EV_KIND_COUNT]; /* per kind: its next event's number */
    /* the streams; a block stored as rows has them all in p[0] */
    const unsigned char *p[DSQ_BLOCK_STREAMS], *end[DSQ_BLOCK_STREAMS];
    int rows;
    int64_t t_prev;
    uint32_t line_prev;
    uint32_t left;
    uint32_t nshapes;
    uint32_t ncols, cols_used; /* columns in the value, and given to kept shapes */
    uint16_t col_base[DSQ_BLOCK_SHAPES]; /* a kept shape's first column */
    dsq_ev_shape shapes[DSQ_BLOCK_SHAPES];
    dsq_block_col col[DSQ_BLOCK_COLS];
} dsq_block_iter;

/* Starts iterating; t_first is the time stored in the block's key. 0 or DSQ_EFORMAT. */
int dsq_block_iter_init(dsq_block_iter *it, const void *data, size_t n, int64_t t_first);

/* Next event into *ev (host/rank left as the caller set them). Returns 1 when an
 * event was decoded, 0 at the end, DSQ_EFORMAT when the block is damaged. */
int dsq_block_iter_next(dsq_block_iter *it, dsq_event *ev);

#endif
