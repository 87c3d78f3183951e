/* xz streams decoded by liblzma (see unxz.h).
 *
 * liblzma's stream decoder without LZMA_CONCATENATED stops at the end of each
 * stream (LZMA_STREAM_END, after its index and footer checked out); what follows is
 * judged here: zero bytes are stream padding, and after padding of a multiple of
 * four bytes a new stream decoder is started on the next byte. liblzma reads a
 * stream's 12-byte header whole before it says anything about it, so an error by
 * then, in a stream after the first, means the bytes were no stream header: the
 * stream ended before them (trailing bytes for the caller to judge), not damage.
 * Offsets are compressed bytes from the start of the stream.
 */
#include "unxz.h"

#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"

/* What one stream may need to be decoded (its dictionary): libarchive's limit too. */
#define XZ_MEMLIMIT ((uint64_t)1 << 30)
/* An xz stream header: magic bytes, flags, their CRC-32. */
#define XZ_HEADER 12

enum xz_state {
    X_FIRST,  /* the first stream, its header not yet read */
    X_STREAM, /* in a stream whose header was read */
    X_NEXT,   /* a later stream, its header not yet read: maybe no stream at all */
    X_AFTER,  /* after a stream: padding, another stream or the end */
    X_END,
    X_FAILED
};

struct dsq_unxz {
    lzma_stream s;
    dsq_pull in;              /* the compressed input */
    enum xz_state state;
    uint64_t streams;         /* streams whose header was read */
    uint64_t stream_at;       /* where the stream being decoded began */
    uint64_t end_at;          /* offset after the last complete stream */
    uint64_t pad;             /* X_AFTER: zero bytes since it */
    int fail_code;            /* X_FAILED: the error, repeated by every read */
    char fail_msg[256];
};

int dsq_unxz_new(dsq_unxz **out)
{
    dsq_unxz *x = calloc(1, sizeof *x);
    if (!x)
        return DSQ_ENOMEM;
    x->s = (lzma_stream)LZMA_STREAM_INIT;
    x->state = X_END;
    *out = x;
    return 0;
}

void dsq_unxz_free(dsq_unxz *x)
{
    if (!x)
        return;
    lzma_end(&x->s);
    free(x);
}

void dsq_unxz_start(dsq_unxz *x, dsq_unxz_pull pull, void *ctx)
{
    dsq_pull_start(&x->in, pull, ctx);
    x->stream_at = x->end_at = x->streams = x->pad = 0;
    x->state = X_FIRST;
    x->fail_code = 0;
    x->fail_msg[0] = 0;
    if (lzma_stream_decoder(&x->s, XZ_MEMLIMIT, 0) != LZMA_OK) {
        x->state = X_FAILED;
        x->fail_code = DSQ_ENOMEM;
        snprintf(x->fail_msg, sizeof x->fail_msg, "xz: out of memory");
    }
}

static uint64_t offset(const dsq_unxz *x) { return dsq_pull_offset(&x->in); }

static void fail(dsq_unxz *x, int code, const char *msg)
{
    x->state = X_FAILED;
    x->fail_code = code;
    snprintf(x->fail_msg, sizeof x->fail_msg, "%s", msg);
}

/* What liblzma's error means, said as dsq says it. */
static void fail_lzma(dsq_unxz *x, lzma_ret r)
{
    char msg[200];
    unsigned long long at = (unsigned long long)offset(x);
    if (r == LZMA_MEM_ERROR) {
        fail(x, DSQ_ENOMEM, "xz: out of memory");
        return;
    }
    if (r == LZMA_FORMAT_ERROR && x->state == X_FIRST)
        snprintf(msg, sizeof msg, "starts with xz magic bytes but is no valid xz data");
    else if (r == LZMA_MEMLIMIT_ERROR)
        snprintf(msg, sizeof msg, "xz: the stream needs more than %llu MiB to decode",
                 (unsigned long long)(XZ_MEMLIMIT >> 20));
    else if (r == LZMA_OPTIONS_ERROR)
        snprintf(msg, sizeof msg, "xz: unsupported options (compressed offset %llu)", at);
    else if (r == LZMA_BUF_ERROR)
        snprintf(msg, sizeof msg, "xz: truncated input (the stream is cut short at byte %llu)",
                 at);
    else
        snprintf(msg, sizeof msg, "xz: corrupted input data (compressed offset %llu)", at);
    fail(x, DSQ_EFORMAT, msg);
}

/* After a stream: passes zero padding; the next byte starts another stream when the
 * padding is whole 4-byte words, else the stream ended (before the padding). */
static void after_stream(dsq_unxz *x)
{
    while (x->in.pos < x->in.len && x->in.blk[x->in.pos] == 0) {
        x->in.pos++;
        x->pad++;
    }
    if (x->in.pos < x->in.len && x->pad % 4 == 0) {
        lzma_ret r = lzma_stream_decoder(&x->s, XZ_MEMLIMIT, 0);
        if (r != LZMA_OK) {
            fail_lzma(x, r);
            return;
        }
        x->stream_at = offset(x);
        x->state = X_NEXT;
    } else if (x->in.pos < x->in.len || x->in.end) {
        x->state = X_END;
    }
}

/* One lzma_code call on the current block. */
static void decode(dsq_unxz *x)
{
    x->s.next_in = x->in.blk ? x->in.blk + x->in.pos : NULL; /* (a pull's end may be NULL) */
    x->s.avail_in = x->in.len - x->in.pos;
    lzma_ret r = lzma_code(&x->s, x->in.end ? LZMA_FINISH : LZMA_RUN);
    x->in.pos = x->in.len - x->s.avail_in;
    int header_read = offset(x) - x->stream_at > XZ_HEADER;
    if (r == LZMA_STREAM_END) {
        x->streams += x->state != X_STREAM;
        x->end_at = offset(x);
        x->pad = 0;
        x->state = X_AFTER;
        return;
    }
    /* input cut short: LZMA_FINISH without progress, LZMA_BUF_ERROR the second time */
    if (r == LZMA_OK) {
        if (x->state != X_STREAM && header_read) {
            x->streams++;
            x->state = X_STREAM;
        }
        return;
    }
    if (x->state == X_NEXT && !header_read)
        x->state = X_END; /* no stream header: the stream ended before these bytes */
    else
        fail_lzma(x, r);
}

int dsq_unxz_read(dsq_unxz *x, unsigned char *out, size_t cap, size_t *len, dsq_error *err)
{
    *len = 0;
    x->s.next_out = out;
    x->s.avail_out = cap;
    while (x->s.avail_out > 0 && x->state != X_END && x->state != X_FAILED) {
        dsq_error e;
        dsq_error_clear(&e);
        int r = dsq_pull_more(&x->in, &e);
        if (r < 0)
            fail(x, r, e.msg);
        else if (x->state == X_AFTER)
            after_stream(x);
        else
            decode(x);
    }
    *len = cap - x->s.avail_out;
    x->s.next_out = NULL;
    x->s.avail_out = 0;
    if (x->state == X_FAILED && *len == 0)
        return dsq_error_set(err, x->fail_code, "%s", x->fail_msg);
    return 0;
}

uint64_t dsq_unxz_streams(const dsq_unxz *x) { return x->streams; }

uint64_t dsq_unxz_bytes_in(const dsq_unxz *x) { return offset(x); }

int dsq_unxz_end(const dsq_unxz *x, uint64_t *at)
{
    if (x->state != X_END)
        return 0;
    *at = x->end_at;
    return 1;
}
