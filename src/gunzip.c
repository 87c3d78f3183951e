/* gzip streams decoded by ISA-L (see gunzip.h).
 *
 * A small state machine around two ISA-L calls: isal_read_gzip_header for each
 * member's header (it keeps a header cut between input blocks in its own state),
 * then isal_inflate with ISAL_GZIP_NO_HDR_VER, which inflates the body and checks
 * the trailer's CRC-32 and length, stopping on the byte after it. Before each
 * member four bytes of look-ahead (copied, since they may straddle blocks) must be
 * gzip's magic, method 8 (deflate) and flags without reserved bits, which ISA-L
 * does not check. The first member's header must parse; a later header that does
 * not ends the stream before it (what libarchive's gzip reader does), so the
 * caller sees trailing bytes, not an error, and judges them.
 *
 * Offsets are compressed bytes from the start of the stream. ISA-L takes 32-bit
 * lengths, so a block is fed in slices of at most 1 GiB. Nothing is allocated
 * after dsq_gunzip_new: the inflate state (about 87 KB) lives in the handle.
 */
#include "gunzip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#ifdef DSQ_HAVE_ISAL
#include <isa-l.h>

#define SLICE ((size_t)1 << 30)

enum gz_state { G_MAGIC, G_HEADER, G_BODY, G_END, G_FAILED };

struct dsq_gunzip {
    struct inflate_state st;
    struct isal_gzip_header hdr;
    dsq_pull in;              /* the compressed input */
    enum gz_state state;
    uint64_t members;         /* members whose header was read */
    uint64_t end_at;          /* offset after the last complete member */
    unsigned char look[4];    /* G_MAGIC: the first bytes of a member */
    size_t look_n;
    int fail_code;            /* G_FAILED: the error, repeated by every read */
    char fail_msg[256];
};

#define STR2(x) #x
#define STR(x) STR2(x)

int dsq_gunzip_available(void) { return 1; }

const char *dsq_gunzip_backend(void)
{
    return "ISA-L " STR(ISAL_MAJOR_VERSION) "." STR(ISAL_MINOR_VERSION) "." STR(
        ISAL_PATCH_VERSION) " (igzip)";
}

int dsq_gunzip_new(dsq_gunzip **out)
{
    dsq_gunzip *g = calloc(1, sizeof *g);
    if (!g)
        return DSQ_ENOMEM;
    g->state = G_END;
    *out = g;
    return 0;
}

void dsq_gunzip_free(dsq_gunzip *g) { free(g); }

void dsq_gunzip_start(dsq_gunzip *g, dsq_gunzip_pull pull, void *ctx)
{
    isal_inflate_init(&g->st);
    g->state = G_MAGIC;
    dsq_pull_start(&g->in, pull, ctx);
    g->members = g->end_at = 0;
    g->look_n = 0;
    g->fail_code = 0;
    g->fail_msg[0] = 0;
}

uint64_t dsq_gunzip_bytes_in(const dsq_gunzip *g) { return dsq_pull_offset(&g->in); }

uint64_t dsq_gunzip_members(const dsq_gunzip *g) { return g->members; }

int dsq_gunzip_end(const dsq_gunzip *g, uint64_t *at)
{
    if (g->state != G_END)
        return 0;
    *at = g->end_at;
    return 1;
}

static int fail(dsq_gunzip *g, int code, dsq_error *err)
{
    g->state = G_FAILED;
    g->fail_code = code;
    snprintf(g->fail_msg, sizeof g->fail_msg, "%s", err ? err->msg : "gzip: damaged input");
    return code;
}

/* Fails with "gzip: what (member N, compressed offset M)": where the damage is. */
static int fail_here(dsq_gunzip *g, const char *what, dsq_error *err)
{
    return fail(g,
                dsq_error_set(err, DSQ_EFORMAT, "gzip: %s (member %llu, compressed offset %llu)",
                              what, (unsigned long long)g->members,
                              (unsigned long long)dsq_gunzip_bytes_in(g)),
                err);
}

/* Makes sure the current block has unread bytes: 1 when it has, 0 at the end of
 * the input, < 0 when the pull failed. */
static int have_input(dsq_gunzip *g, dsq_error *err)
{
    int r = dsq_pull_more(&g->in, err);
    return r < 0 ? fail(g, r, err) : r;
}

/* Points ISA-L at the unread part of the block (at most a slice); at the end of
 * the input (the block may then be NULL) at nothing. */
static void feed(dsq_gunzip *g)
{
    static uint8_t nothing[1];
    size_t n = g->in.len - g->in.pos;
    g->st.next_in = n ? (uint8_t *)(uintptr_t)(g->in.blk + g->in.pos) : nothing;
    g->st.avail_in = (uint32_t)(n < SLICE ? n : SLICE);
}

/* A member header that is not there, does not parse or is cut short: before the
 * first member an error, after one the end of the stream. */
static int bad_header(dsq_gunzip *g, dsq_error *err)
{
    if (g->members > 0) {
        g->state = G_END;
        return 0;
    }
    return fail(g, dsq_error_set(err, DSQ_EFORMAT,
                                 "starts with gzip magic bytes but is no valid gzip data"),
                err);
}

static int read_header(dsq_gunzip *g, dsq_error *err)
{
    int r = have_input(g, err);
    if (r <= 0)
        return r < 0 ? r : bad_header(g, err);
    feed(g);
    uint32_t avail = g->st.avail_in;
    r = isal_read_gzip_header(&g->st, &g->hdr);
    g->in.pos += avail - g->st.avail_in;
    if (r == ISAL_DECOMP_OK) {
        g->members++;
        g->state = G_BODY;
        return 0;
    }
    /* wanting more input must have taken what it was given (never loop in place) */
    return r == ISAL_END_INPUT && g->st.avail_in < avail ? 0 : bad_header(g, err);
}

static const char *inflate_why(int r)
{
    switch (r) {
    case ISAL_INVALID_BLOCK:
        return "invalid deflate block";
    case ISAL_INVALID_SYMBOL:
        return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK:
        return "back-reference before the start of the data";
    case ISAL_INCORRECT_CHECKSUM:
        return "CRC-32 or length in the member's trailer does not match its data";
    default:
        return "invalid compressed data";
    }
}

/* Inflates into out[*len..cap); a finished member moves on to G_MAGIC. */
static int read_body(dsq_gunzip *g, unsigned char *out, size_t cap, size_t *len,
                     dsq_error *err)
{
    int more = have_input(g, err);
    if (more < 0)
        return more;
    feed(g);
    uint32_t avail = g->st.avail_in;
    size_t room = cap - *len;
    g->st.next_out = out + *len;
    g->st.avail_out = (uint32_t)(room < SLICE ? room : SLICE);
    uint32_t out_before = g->st.avail_out;
    int r = isal_inflate(&g->st);
    size_t used = avail - g->st.avail_in, made = out_before - g->st.avail_out;
    g->in.pos += used;
    *len += made;
    if (r < 0)
        return fail_here(g, inflate_why(r), err);
    if (g->st.block_state == ISAL_BLOCK_FINISH) {
        g->end_at = dsq_gunzip_bytes_in(g);
        g->look_n = 0;
        g->state = G_MAGIC;
        return 0;
    }
    if (!more && used == 0 && made == 0)
        return fail(g, dsq_error_set(err, DSQ_EFORMAT,
                                     "gzip: truncated input (the stream ends inside member %llu, "
                                     "at compressed offset %llu)",
                                     (unsigned long long)g->members,
                                     (unsigned long long)dsq_gunzip_bytes_in(g)),
                    err);
    if (used == 0 && made == 0) /* input and room, and no progress: never loop in place */
        return fail_here(g, "the decoder made no progress", err);
    return 0;
}

/* Before a member: its first four bytes, when they can start one, are fed to the
 * header reader of a fresh inflate state; else the stream has ended (or, before
 * the first member, is no gzip). */
static int member_magic(dsq_gunzip *g, dsq_error *err)
{
    while (g->look_n < 4) {
        int r = have_input(g, err);
        if (r < 0)
            return r;
        if (r == 0) /* the end: of the stream, or of one that never began */
            return bad_header(g, err);
        g->look[g->look_n++] = g->in.blk[g->in.pos++];
    }
    if (g->look[0] != 0x1F || g->look[1] != 0x8B || g->look[2] != 8 || (g->look[3] & 0xE0))
        return bad_header(g, err);
    isal_inflate_reset(&g->st);
    isal_gzip_header_init(&g->hdr); /* name, comment, extra: NULL, not kept */
    g->st.crc_flag = ISAL_GZIP_NO_HDR_VER;
    g->st.next_in = g->look;
    g->st.avail_in = 4;
    int r = isal_read_gzip_header(&g->st, &g->hdr);
    if (r != ISAL_END_INPUT || g->st.avail_in != 0)
        return bad_header(g, err);
    g->state = G_HEADER;
    return 0;
}

int dsq_gunzip_read(dsq_gunzip *g, unsigned char *out, size_t cap, size_t *len,
                    dsq_error *err)
{
    int rc = 0;
    *len = 0;
    while (rc == 0 && *len < cap) {
        switch (g->state) {
        case G_HEADER:
            rc = read_header(g, err);
            break;
        case G_BODY:
            rc = read_body(g, out, cap, len, err);
            break;
        case G_MAGIC:
            rc = member_magic(g, err);
            break;
        case G_END:
            return 0;
        case G_FAILED:
            if (*len > 0)
                return 0; /* the data before the damage first */
            return dsq_error_set(err, g->fail_code, "%s", g->fail_msg);
        }
    }
    return *len > 0 ? 0 : rc; /* data before an error first, the error at the next read */
}

#else /* no ISA-L: input.c decodes gzip with libarchive */

int dsq_gunzip_available(void) { return 0; }
const char *dsq_gunzip_backend(void) { return "zlib (libarchive)"; }
int dsq_gunzip_new(dsq_gunzip **out)
{
    *out = NULL;
    return DSQ_EUSAGE;
}
void dsq_gunzip_free(dsq_gunzip *g) { (void)g; }
void dsq_gunzip_start(dsq_gunzip *g, dsq_gunzip_pull pull, void *ctx)
{
    (void)g, (void)pull, (void)ctx;
}
int dsq_gunzip_read(dsq_gunzip *g, unsigned char *out, size_t cap, size_t *len,
                    dsq_error *err)
{
    (void)g, (void)out, (void)cap;
    *len = 0;
    return dsq_error_set(err, DSQ_EUSAGE, "built without ISA-L");
}
uint64_t dsq_gunzip_members(const dsq_gunzip *g)
{
    (void)g;
    return 0;
}
uint64_t dsq_gunzip_bytes_in(const dsq_gunzip *g)
{
    (void)g;
    return 0;
}
int dsq_gunzip_end(const dsq_gunzip *g, uint64_t *at)
{
    (void)g, (void)at;
    return 0;
}

#endif
