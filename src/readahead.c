/* Read-ahead (see readahead.h).
 *
 * The decoder thread turns what the dsq_input calls return into records in the
 * ring's buffers: a member record per next_member (its result, the member info and
 * name, the damage take_damage reported, bytes_in), a data record per chunk (an
 * empty one for a member's end), an error record per failed read, and an end
 * record once the file is done or the caller said stop. A buffer is handed over
 * (full queue) when the next record does not fit, at the end record, and early
 * (EARLY_BYTES) when the caller has read everything before it; the caller replays the records in order and gives each buffer back (free queue) once
 * it moves past it. All buffers are in the free queue whenever no file runs ahead.
 * A zstd stream is decoded straight into the buffer being filled, behind its data
 * record's header (in_place_room): the other formats' bytes are copied there.
 *
 * The dsq_input belongs to the caller's thread except between start (command
 * C_RUN under mu) and the end record (handed over through the full queue's mutex):
 * then only the decoder thread touches it. Errors cross as code and message, the
 * only fields dsq_input fills.
 */
#include "readahead.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bq.h"
#include "error.h"
#include "lazymem.h"

enum rec_kind { R_MEMBER = 1, R_DATA, R_ERROR, R_END, R_REF };

typedef struct rec_hdr {
    uint32_t kind;
    uint32_t pad;
    uint64_t len; /* payload bytes */
    uint64_t in;  /* dsq_input_bytes_in when the record was made (progress only) */
} rec_hdr;

/* R_REF: a chunk where the input keeps it (dsq_input_keeps_chunks), one per buffer:
 * a buffer comes back once its chunk is read, so a ring of at most DSQ_INPUT_KEPT
 * buffers holds no more chunks than the input keeps. */
typedef struct rec_ref {
    const char *p;
    uint64_t n;
} rec_ref;

typedef struct rec_err {
    int code;
    char msg[sizeof ((dsq_error *)0)->msg];
} rec_err;

typedef struct rec_member {
    int r;          /* what next_member returned */
    int damaged;    /* what take_damage returned right after it */
    int64_t mtime_ns;
    int64_t size;
    uint64_t bytes_in;
    rec_err e, d;   /* next_member's error (r < 0), take_damage's report */
} rec_member;       /* followed by the member name and its NUL */

/* Room a buffer has beyond buf_bytes, so that a data record of buf_bytes fits in
 * an empty buffer (a member record fits too: names longer than about a buffer
 * are cut). */
#define SLACK ((size_t)16 << 10)
#define MIN_BUF_BYTES ((size_t)64 << 10)
/* A buffer holding this much is handed over before it is full when the caller has
 * nothing left to read. */
#define EARLY_BYTES ((size_t)128 << 10)

typedef struct slot {
    unsigned char *p;
    size_t used;
} slot;

enum cmd { C_IDLE, C_RUN, C_QUIT };
enum phase { P_NONE, P_BEFORE, P_IN, P_DONE }; /* the caller's place in the file */

struct dsq_readahead {
    dsq_input *in;
    size_t buf_bytes, cap;
    int nbufs;
    /* made at the first start */
    slot *slots;
    dsq_bq *free_q, *full_q;
    pthread_t th;
    int have_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cmd;            /* guarded by mu */
    int resume_member;  /* with C_RUN: the caller was inside a member */
    atomic_int stop;    /* the caller closes: decode no further */
    atomic_int queued;  /* buffers in the full queue (or being pushed to it) */
    /* decoder side */
    slot *wr;
    /* caller side */
    int started, ended, phase;
    slot *rd;
    size_t rd_pos;
    uint64_t bytes_in;
    uint64_t read_in;   /* the `in` of the data record read last */
    int damaged;
    rec_err damage;
    char *name;
    size_t name_cap;
};

static void free_ring(dsq_readahead *ra);

static size_t rec_size(size_t len) { return (sizeof(rec_hdr) + len + 7) & ~(size_t)7; }

static void err_out(dsq_error *err, const rec_err *e)
{
    if (!err)
        return;
    err->code = e->code;
    memcpy(err->msg, e->msg, sizeof err->msg);
}

static void err_in(rec_err *e, const dsq_error *err)
{
    e->code = err->code;
    memcpy(e->msg, err->msg, sizeof e->msg);
}

int dsq_readahead_new(const dsq_readahead_params *params, dsq_readahead **out)
{
    dsq_readahead *ra = calloc(1, sizeof *ra);
    if (!ra)
        return DSQ_ENOMEM;
    ra->buf_bytes = params && params->buf_bytes ? params->buf_bytes : DSQ_READAHEAD_BUF_BYTES;
    if (ra->buf_bytes < MIN_BUF_BYTES)
        ra->buf_bytes = MIN_BUF_BYTES;
    ra->cap = ra->buf_bytes + SLACK;
    ra->nbufs = params && params->bufs ? params->bufs : DSQ_READAHEAD_BUFS;
    if (ra->nbufs < 2)
        ra->nbufs = 2;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->cv, NULL);
    if (dsq_input_new(&ra->in)) {
        dsq_readahead_free(ra);
        return DSQ_ENOMEM;
    }
    *out = ra;
    return 0;
}

void dsq_readahead_free(dsq_readahead *ra)
{
    if (!ra)
        return;
    dsq_readahead_close(ra);
    if (ra->have_thread) {
        pthread_mutex_lock(&ra->mu);
        ra->cmd = C_QUIT;
        pthread_cond_signal(&ra->cv);
        pthread_mutex_unlock(&ra->mu);
        pthread_join(ra->th, NULL);
    }
    free_ring(ra);
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->cv);
    dsq_input_free(ra->in);
    free(ra->name);
    free(ra);
}

int dsq_readahead_open(dsq_readahead *ra, const char *path, dsq_error *err)
{
    dsq_readahead_close(ra);
    int rc = dsq_input_open(ra->in, path, err);
    if (rc == 0)
        ra->phase = P_BEFORE;
    return rc;
}

int dsq_readahead_fingerprint(const dsq_readahead *ra, dsq_file_info *fi)
{
    return ra->phase == P_BEFORE ? dsq_input_fingerprint_open(ra->in, fi) : -1;
}

const char *dsq_readahead_format(const dsq_readahead *ra) { return dsq_input_format(ra->in); }

int dsq_readahead_was_cold(const dsq_readahead *ra) { return dsq_input_was_cold(ra->in); }

int dsq_readahead_started(const dsq_readahead *ra) { return ra->started; }

/* --- the decoder thread -------------------------------------------------------- */

/* Hands the buffer being filled to the caller. */
static int hand_over(dsq_readahead *ra)
{
    atomic_fetch_add(&ra->queued, 1);
    if (dsq_bq_push(ra->full_q, ra->wr) != 0)
        return -1;
    ra->wr = NULL;
    return 0;
}

/* Ends the record whose payload of len bytes was written after the header's place
 * at the end of the buffer being filled: writes the header. */
static int put_header(dsq_readahead *ra, uint32_t kind, size_t len)
{
    rec_hdr h = {kind, 0, len, dsq_input_bytes_in(ra->in)};
    memcpy(ra->wr->p + ra->wr->used, &h, sizeof h);
    ra->wr->used += rec_size(len);
    /* the caller has read everything handed over: give it this buffer now rather
     * than when full, so it does not wait for a whole buffer to be decoded */
    if (kind == R_DATA && ra->wr->used >= EARLY_BYTES &&
        atomic_load_explicit(&ra->queued, memory_order_relaxed) == 0)
        return hand_over(ra);
    return 0;
}

/* A buffer being filled with need bytes free: this one, or (handing it over when
 * too full) a fresh one. 0, or -1 when no buffer comes back. */
static int room_for(dsq_readahead *ra, size_t need)
{
    if (ra->wr && ra->wr->used + need > ra->cap && hand_over(ra) != 0)
        return -1;
    if (!ra->wr) {
        if (!(ra->wr = dsq_bq_pop(ra->free_q)))
            return -1;
        ra->wr->used = 0;
    }
    return 0;
}

/* Where the next chunk of a zstd stream can be decoded in place, after a data
 * record's header in the buffer being filled (a fresh one when this one has too
 * little room), saving the copy put() makes; NULL when the input hands out its own
 * bytes (a plain file's mapping, gzip) or a buffer is smaller than a chunk. */
static unsigned char *in_place_room(dsq_readahead *ra, size_t *room)
{
    *room = dsq_input_chunk_max(ra->in);
    if (!dsq_input_decodes_zstd(ra->in) || sizeof(rec_hdr) + *room > ra->cap)
        return NULL;
    if (room_for(ra, sizeof(rec_hdr) + *room) != 0)
        return NULL;
    return ra->wr->p + ra->wr->used + sizeof(rec_hdr);
}

/* Appends a record (payload a then b) to the buffer being filled, handing it over
 * first when the record does not fit. 0, or -1 when no buffer comes back. */
static int put(dsq_readahead *ra, uint32_t kind, const void *a, size_t na, const void *b,
               size_t nb)
{
    if (room_for(ra, rec_size(na + nb)) != 0)
        return -1;
    unsigned char *p = ra->wr->p + ra->wr->used;
    if (na)
        memcpy(p + sizeof(rec_hdr), a, na);
    if (nb)
        memcpy(p + sizeof(rec_hdr) + na, b, nb);
    return put_header(ra, kind, na + nb);
}

/* Reads the current member to its end into records. 0 at its end, -1 when told to
 * stop (or the ring is gone). */
static int decode_member(dsq_readahead *ra)
{
    for (;;) {
        if (atomic_load_explicit(&ra->stop, memory_order_relaxed))
            return -1;
        const char *data;
        size_t len, room;
        dsq_error e;
        dsq_error_clear(&e);
        unsigned char *to = in_place_room(ra, &room);
        if ((to ? dsq_input_read_into(ra->in, (char *)to, room, &data, &len, &e)
                : dsq_input_read(ra->in, &data, &len, &e)) != 0) {
            rec_err re;
            err_in(&re, &e);
            return put(ra, R_ERROR, &re, sizeof re, NULL, 0);
        }
        if (len == 0)
            return put(ra, R_DATA, NULL, 0, NULL, 0);
        if (to && data == (const char *)to) { /* decoded in place */
            if (put_header(ra, R_DATA, len) != 0)
                return -1;
            continue;
        }
        if (ra->nbufs <= DSQ_INPUT_KEPT && dsq_input_keeps_chunks(ra->in)) { /* no copy */
            rec_ref r = {data, len};
            if (put(ra, R_REF, &r, sizeof r, NULL, 0) != 0 || hand_over(ra) != 0)
                return -1;
            continue;
        }
        do { /* a chunk longer than a buffer is handed out in pieces */
            size_t n = len < ra->buf_bytes ? len : ra->buf_bytes;
            if (put(ra, R_DATA, data, n, NULL, 0) != 0)
                return -1;
            data += n;
            len -= n;
        } while (len > 0);
    }
}

/* One next_member and take_damage into a member record; *r is what next_member
 * returned. 0, or -1 when the ring is gone. */
static int decode_next_member(dsq_readahead *ra, int *r)
{
    dsq_member_info mi = {"", 0, -1};
    dsq_error e, d;
    dsq_error_clear(&e);
    dsq_error_clear(&d);
    rec_member m;
    memset(&m, 0, sizeof m);
    m.r = *r = dsq_input_next_member(ra->in, &mi, &e);
    m.damaged = dsq_input_take_damage(ra->in, &d);
    m.bytes_in = dsq_input_bytes_in(ra->in);
    if (m.r < 0)
        err_in(&m.e, &e);
    if (m.damaged)
        err_in(&m.d, &d);
    size_t nl = 0;
    if (m.r > 0) {
        m.mtime_ns = mi.mtime_ns;
        m.size = mi.size;
        nl = strlen(mi.name);
        if (nl > ra->cap - sizeof m - 64) /* longer than a buffer: cut */
            nl = ra->cap - sizeof m - 64;
    }
    return put(ra, R_MEMBER, &m, sizeof m, mi.name, nl);
}

/* The rest of the open file, from where the caller was (inside a member or not),
 * then the end record, handed over with its buffer. */
static void decode_file(dsq_readahead *ra, int in_member)
{
    int r = 1, rc = 0;
    if (in_member)
        rc = decode_member(ra);
    while (rc == 0 && !atomic_load_explicit(&ra->stop, memory_order_relaxed)) {
        if ((rc = decode_next_member(ra, &r)) != 0 || r <= 0)
            break;
        rc = decode_member(ra);
    }
    uint64_t bytes_in = dsq_input_bytes_in(ra->in);
    if (put(ra, R_END, &bytes_in, sizeof bytes_in, NULL, 0) == 0)
        hand_over(ra);
}

static void *decoder_main(void *arg)
{
    dsq_readahead *ra = arg;
    for (;;) {
        pthread_mutex_lock(&ra->mu);
        while (ra->cmd == C_IDLE)
            pthread_cond_wait(&ra->cv, &ra->mu);
        int cmd = ra->cmd, in_member = ra->resume_member;
        if (cmd == C_RUN)
            ra->cmd = C_IDLE;
        pthread_mutex_unlock(&ra->mu);
        if (cmd == C_QUIT)
            return NULL;
        decode_file(ra, in_member);
    }
}

static void free_ring(dsq_readahead *ra)
{
    for (int i = 0; ra->slots && i < ra->nbufs; i++)
        dsq_lazy_free(ra->slots[i].p);
    free(ra->slots);
    dsq_bq_free(ra->free_q);
    dsq_bq_free(ra->full_q);
    ra->slots = NULL;
    ra->free_q = ra->full_q = NULL;
}

/* The ring, its queues and the thread, once per handle. The buffers' pages are
 * touched as used (lazymem.h): a big .zst log's chunks stay in the input's own
 * ring and its buffers carry references only (4 x 2 MiB had been faulted in as huge
 * pages before the decoder started, 8 MB of the single log's peak); the free
 * buffers are a pool, the one handed back last taken first. */
static int make_ring(dsq_readahead *ra)
{
    int rc = DSQ_ENOMEM;
    if (!(ra->slots = calloc((size_t)ra->nbufs, sizeof *ra->slots)) ||
        dsq_bq_new_pool((size_t)ra->nbufs, &ra->free_q) ||
        dsq_bq_new((size_t)ra->nbufs, &ra->full_q))
        goto cleanup;
    for (int i = 0; i < ra->nbufs; i++)
        if (!(ra->slots[i].p = dsq_lazy_alloc(ra->cap)) || dsq_bq_push(ra->free_q, &ra->slots[i]))
            goto cleanup;
    if (pthread_create(&ra->th, NULL, decoder_main, ra) != 0)
        goto cleanup;
    ra->have_thread = 1;
    rc = 0;
cleanup:
    if (rc)
        free_ring(ra);
    return rc;
}

int dsq_readahead_start(dsq_readahead *ra)
{
    if (ra->started || (ra->phase != P_BEFORE && ra->phase != P_IN))
        return 0;
    if (!ra->have_thread && make_ring(ra) != 0)
        return DSQ_ENOMEM; /* what was made stays for the next try and for free */
    atomic_store(&ra->stop, 0);
    ra->started = 1;
    ra->ended = 0;
    pthread_mutex_lock(&ra->mu);
    ra->cmd = C_RUN;
    ra->resume_member = ra->phase == P_IN;
    pthread_cond_signal(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
    return 0;
}

/* --- the caller's side ---------------------------------------------------------- */

/* The record at the read position (taking the next full buffer when this one is
 * read: the decoder always ends a file with an end record, so one comes). */
static rec_hdr peek(dsq_readahead *ra, const unsigned char **payload)
{
    rec_hdr h;
    while (!ra->rd || ra->rd_pos >= ra->rd->used) {
        if (ra->rd)
            dsq_bq_push(ra->free_q, ra->rd); /* never full: it holds every buffer */
        ra->rd = dsq_bq_pop(ra->full_q);
        ra->rd_pos = 0;
        atomic_fetch_sub(&ra->queued, 1);
    }
    memcpy(&h, ra->rd->p + ra->rd_pos, sizeof h);
    *payload = ra->rd->p + ra->rd_pos + sizeof h;
    return h;
}

static void advance(dsq_readahead *ra, const rec_hdr *h)
{
    ra->rd_pos += rec_size((size_t)h->len);
    if (h->kind == R_END) {
        ra->ended = 1;
        ra->phase = P_DONE;
    }
}

static int name_copy(dsq_readahead *ra, const unsigned char *p, size_t n)
{
    if (n + 1 > ra->name_cap) {
        size_t cap = n + 1 > 4096 ? n + 1 : 4096;
        char *q = realloc(ra->name, cap);
        if (!q)
            return DSQ_ENOMEM;
        ra->name = q;
        ra->name_cap = cap;
    }
    memcpy(ra->name, p, n);
    ra->name[n] = 0;
    return 0;
}

/* next_member from the records: what is left of the current member is skipped. */
static int ahead_next_member(dsq_readahead *ra, dsq_member_info *mi, dsq_error *err)
{
    for (;;) {
        if (ra->phase == P_DONE)
            return 0;
        const unsigned char *p;
        rec_hdr h = peek(ra, &p);
        advance(ra, &h);
        if (h.kind != R_MEMBER)
            continue;
        rec_member m;
        memcpy(&m, p, sizeof m);
        ra->bytes_in = m.bytes_in;
        ra->damaged = m.damaged;
        ra->damage = m.d;
        if (m.r <= 0) {
            ra->phase = P_DONE;
            if (m.r < 0)
                err_out(err, &m.e);
            return m.r;
        }
        if (name_copy(ra, p + sizeof m, (size_t)h.len - sizeof m) != 0)
            return dsq_error_set(err, DSQ_ENOMEM, "member name");
        *mi = (dsq_member_info){ra->name, m.mtime_ns, m.size};
        ra->phase = P_IN;
        return 1;
    }
}

/* read from the records: a member's end stays its end until next_member. */
static int ahead_read(dsq_readahead *ra, const char **data, size_t *len, dsq_error *err)
{
    *len = 0;
    if (ra->phase != P_IN)
        return 0;
    const unsigned char *p;
    rec_hdr h = peek(ra, &p);
    if (h.kind == R_DATA || h.kind == R_ERROR || h.kind == R_REF)
        advance(ra, &h);
    if (h.kind == R_REF) {
        rec_ref r;
        memcpy(&r, p, sizeof r);
        *data = r.p;
        *len = (size_t)r.n;
        ra->read_in = h.in;
        return 0;
    }
    if (h.kind == R_DATA && h.len > 0) {
        *data = (const char *)p;
        *len = (size_t)h.len;
        ra->read_in = h.in;
        return 0;
    }
    ra->phase = P_BEFORE; /* the member ended, was damaged, or the file ended */
    if (h.kind == R_ERROR) {
        rec_err e;
        memcpy(&e, p, sizeof e);
        err_out(err, &e);
        return e.code;
    }
    return 0;
}

int dsq_readahead_next_member(dsq_readahead *ra, dsq_member_info *mi, dsq_error *err)
{
    if (ra->started)
        return ahead_next_member(ra, mi, err);
    int r = dsq_input_next_member(ra->in, mi, err);
    ra->phase = r > 0 ? P_IN : P_DONE;
    ra->bytes_in = dsq_input_bytes_in(ra->in);
    /* the name is kept here: a start within the member lets the decoder go on to
     * the next one while the caller still holds this name */
    if (r > 0) {
        if (name_copy(ra, (const unsigned char *)mi->name, strlen(mi->name)) != 0)
            return dsq_error_set(err, DSQ_ENOMEM, "member name");
        mi->name = ra->name;
    }
    return r;
}

int dsq_readahead_take_damage(dsq_readahead *ra, dsq_error *err)
{
    if (!ra->started)
        return dsq_input_take_damage(ra->in, err);
    if (!ra->damaged)
        return 0;
    ra->damaged = 0;
    err_out(err, &ra->damage);
    return 1;
}

int dsq_readahead_read(dsq_readahead *ra, const char **data, size_t *len, dsq_error *err)
{
    if (ra->started)
        return ahead_read(ra, data, len, err);
    int rc = dsq_input_read(ra->in, data, len, err);
    if (rc != 0 || *len == 0)
        ra->phase = P_BEFORE;
    return rc;
}

uint64_t dsq_readahead_bytes_in(const dsq_readahead *ra)
{
    return ra->started ? ra->bytes_in : dsq_input_bytes_in(ra->in);
}

uint64_t dsq_readahead_read_in(const dsq_readahead *ra)
{
    return ra->started ? ra->read_in : dsq_input_bytes_in(ra->in);
}

void dsq_readahead_close(dsq_readahead *ra)
{
    if (ra->started) {
        atomic_store(&ra->stop, 1);
        while (!ra->ended) { /* takes back every buffer, waking a waiting decoder */
            const unsigned char *p;
            rec_hdr h = peek(ra, &p);
            advance(ra, &h);
        }
        if (ra->rd)
            dsq_bq_push(ra->free_q, ra->rd);
        ra->rd = NULL;
        ra->started = 0;
    }
    if (ra->in) /* NULL only when new failed */
        dsq_input_close(ra->in);
    ra->phase = P_NONE;
    ra->damaged = 0;
    ra->bytes_in = ra->read_in = 0;
}
