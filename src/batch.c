/* Batches and id remapping (see batch.h). */
#include "batch.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"

int dsq_batch_init(dsq_batch *b, size_t cap)
{
    b->len = 0;
    b->cap = dsq_batch_pad8(cap < 64 ? 64 : cap);
    b->buf = NULL; /* allocated by the first message (see batch.h) */
    return 0;
}

void dsq_batch_free(dsq_batch *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

/* Room for a message of n bytes: its header written, the batch's length past its
 * padded payload, *out at the payload (padding zeroed). 0; 1 when it does not fit
 * in the batch's free room (an empty batch grows for it); DSQ_ENOMEM. */
static int message(dsq_batch *b, uint32_t type, size_t n, unsigned char **out)
{
    size_t need = DSQ_BATCH_HDR + dsq_batch_pad8(n);
    if (n > UINT32_MAX)
        return DSQ_ENOMEM;
    if (!b->buf && need <= b->cap && !(b->buf = malloc(b->cap)))
        return DSQ_ENOMEM;
    if (b->cap - b->len < need) {
        if (b->len > 0)
            return 1;
        unsigned char *nb = realloc(b->buf, need); /* a message bigger than any batch */
        if (!nb)
            return DSQ_ENOMEM;
        b->buf = nb;
        b->cap = need;
    }
    unsigned char *p = b->buf + b->len;
    uint32_t h[2] = {type, (uint32_t)n};
    memcpy(p, h, DSQ_BATCH_HDR);
    if (dsq_batch_pad8(n) != n)
        memset(p + DSQ_BATCH_HDR + n, 0, dsq_batch_pad8(n) - n);
    b->len += need;
    *out = p + DSQ_BATCH_HDR;
    return 0;
}

int dsq_batch_put(dsq_batch *b, uint32_t type, const void *a, size_t na, const void *c,
                  size_t nc)
{
    unsigned char *p;
    int rc = message(b, type, na + nc, &p);
    if (rc)
        return rc;
    if (na)
        memcpy(p, a, na);
    if (nc)
        memcpy(p + na, c, nc);
    return 0;
}

int dsq_batch_put_strings(dsq_batch *b, const dsq_dict *d, uint32_t *sent)
{
    uint32_t count = dsq_dict_count(d);
    while (*sent < count) {
        size_t n;
        const char *s = dsq_dict_str(d, *sent + 1, &n);
        int rc = dsq_batch_put(b, DSQ_BATCH_STR, s, n, NULL, 0);
        if (rc)
            return rc;
        ++*sent;
    }
    return 0;
}

/* dsq_batch_put of the event's head and fields, each copied by its fixed size (no
 * call to memcpy for sizes known only at run time). */
int dsq_batch_put_event(dsq_batch *b, uint32_t type, const dsq_event *ev)
{
    unsigned nf = ev->nf > DSQ_EV_MAXF ? DSQ_EV_MAXF : ev->nf;
    unsigned char *p;
    int rc = message(b, type, DSQ_BATCH_EV_HEAD + nf * sizeof ev->f[0], &p);
    if (rc)
        return rc;
    memcpy(p, ev, DSQ_BATCH_EV_HEAD); /* the head, then the fields as one copy */
    memcpy(p + DSQ_BATCH_EV_HEAD, ev->f, nf * sizeof ev->f[0]);
    return 0;
}

void dsq_batch_iter_init(dsq_batch_iter *it, const dsq_batch *b)
{
    it->p = b->buf;
    it->end = b->buf ? b->buf + b->len : NULL;
}

int dsq_remap_add(dsq_remap *r, uint32_t global)
{
    if (r->count + 2 > r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 1024;
        uint32_t *to = realloc(r->to, cap * sizeof *to);
        if (!to)
            return DSQ_ENOMEM;
        r->to = to;
        r->cap = cap;
        if (r->count == 0)
            r->to[0] = 0;
    }
    r->to[++r->count] = global;
    return 0;
}

int dsq_remap_add_str(dsq_remap *r, dsq_dict *into, const void *data, size_t n)
{
    uint32_t id = dsq_dict_intern(into, data, n);
    return id ? dsq_remap_add(r, id) : DSQ_ENOMEM;
}

void dsq_remap_free(dsq_remap *r)
{
    free(r->to);
    r->to = NULL;
    r->count = r->cap = 0;
}
