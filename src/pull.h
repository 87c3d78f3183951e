/* Compressed input pulled in blocks, for the stream decoders dsq runs itself
 * (gunzip.c, unxz.c): the block being read, where it stands in the stream, and
 * whether the source has ended. Blocks are of any size (a memory map in one piece,
 * an archive member's blocks); nothing is copied or allocated.
 */
#ifndef DSQ_PULL_H
#define DSQ_PULL_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"

/* Next block of compressed input: 0 and *len > 0, 0 and *len == 0 at its end, or
 * < 0 with err filled (the block source is damaged). *buf stays valid until the
 * next call or until the stream ends. */
typedef int (*dsq_pull_fn)(void *ctx, const unsigned char **buf, size_t *len, dsq_error *err);

typedef struct dsq_pull {
    dsq_pull_fn fn;
    void *ctx;
    const unsigned char *blk; /* the current block (NULL once the source ended) */
    size_t len, pos;          /* its length, and its first byte not consumed */
    uint64_t base;            /* stream offset of blk[0] */
    int end;                  /* the source said there is no more */
} dsq_pull;

static inline void dsq_pull_start(dsq_pull *p, dsq_pull_fn fn, void *ctx)
{
    *p = (dsq_pull){fn, ctx, NULL, 0, 0, 0, 0};
}

/* Stream offset of the first byte not consumed. */
static inline uint64_t dsq_pull_offset(const dsq_pull *p) { return p->base + p->pos; }

/* Makes sure the current block has unread bytes: 1 when it has, 0 at the end of
 * the input, < 0 (the source's error, in err) when the pull failed. */
static inline int dsq_pull_more(dsq_pull *p, dsq_error *err)
{
    while (p->pos == p->len && !p->end) {
        const unsigned char *b = NULL;
        size_t n = 0;
        int r = p->fn(p->ctx, &b, &n, err);
        if (r < 0)
            return r;
        p->base += p->len;
        p->blk = b;
        p->len = n;
        p->pos = 0;
        p->end = n == 0;
    }
    return p->pos < p->len;
}

#endif
