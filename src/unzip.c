/* zip members' data decoded by ISA-L (see unzip.h).
 *
 * The central directory is found as libarchive's seeking zip reader finds it: the
 * last end record ("PK\5\6") in the file's last 16 KiB, on disk 0, its directory
 * before it. This reader also wants the directory to end where the end record
 * begins (no bytes before the archive to correct offsets for), no zip64 record or
 * field, and no two entries at one offset; else libarchive decodes every member.
 * Entries are kept sorted by their local header's offset, the order libarchive
 * hands them out in. Nothing here trusts the directory beyond the file's bytes:
 * every offset and length is checked before it is read.
 */
#include "unzip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#ifdef DSQ_HAVE_ISAL
#include <isa-l.h>

#define OUT_CAP ((size_t)256 * 1024) /* decoded bytes a block holds at most */
#define SLICE ((size_t)1 << 30)      /* ISA-L takes 32-bit lengths */
#define TAIL 16384                   /* where the end record is looked for */

typedef struct entry {
    uint64_t off;           /* its local header */
    uint64_t csize, usize;
    uint32_t crc;
    uint16_t method, flags;
    const unsigned char *name;
    uint16_t name_n;
} entry;

enum state { S_NONE, S_DATA, S_DONE };

struct dsq_unzip {
    const unsigned char *p; /* the file */
    size_t n;
    uint64_t cd_off;        /* where the central directory begins */
    entry *ent;
    size_t n_ent, cap, cur; /* cur: the next entry to pair */
    int on;                 /* entries may still be paired */
    /* the paired member */
    enum state state;
    int deflated;
    const unsigned char *in; /* its compressed bytes not yet taken */
    uint64_t left;
    const entry *e;
    uint64_t out_total;
    uint64_t taken_to;       /* the offset after the last compressed byte taken */
    uint32_t crc;
    int fail_code;           /* an error found with bytes: said at the next call */
    char fail_msg[160];
    struct inflate_state st;
    unsigned char *out;
};

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int dsq_unzip_available(void) { return 1; }

int dsq_unzip_new(dsq_unzip **out)
{
    dsq_unzip *z = calloc(1, sizeof *z);
    if (!z || !(z->out = malloc(OUT_CAP))) {
        free(z);
        return DSQ_ENOMEM;
    }
    *out = z;
    return 0;
}

void dsq_unzip_free(dsq_unzip *z)
{
    if (!z)
        return;
    free(z->ent);
    free(z->out);
    free(z);
}

/* Where the end record is, as libarchive's seeking reader finds it; 0 when none. */
static size_t find_end(const unsigned char *p, size_t n)
{
    if (n < 22)
        return 0;
    size_t tail = n < TAIL ? n : TAIL, base = n - tail;
    for (size_t i = tail - 22; i > 0; i--)
        if (p[base + i] == 'P' && memcmp(p + base + i, "PK\005\006", 4) == 0)
            return base + i;
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

int dsq_unzip_open(dsq_unzip *z, const unsigned char *p, size_t n)
{
    z->p = p;
    z->n = n;
    z->n_ent = z->cur = 0;
    z->on = 0;
    z->taken_to = 0;
    z->state = S_NONE;
    size_t end = find_end(p, n);
    if (!end)
        return 0;
    const unsigned char *r = p + end;
    uint32_t cd_size = le32(r + 12), cd_off = le32(r + 16);
    if (le16(r + 4) != 0 || le16(r + 6) != 0 || le16(r + 8) != le16(r + 10) ||
        le16(r + 10) == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu ||
        (uint64_t)cd_off + cd_size != end ||
        (end >= 20 && memcmp(p + end - 20, "PK\006\007", 4) == 0))
        return 0; /* another disk, zip64, or bytes before the archive */
    const unsigned char *q = p + cd_off;
    while (q < r) {
        if (r - q < 46 || memcmp(q, "PK\001\002", 4) != 0)
            return 0;
        size_t nl = le16(q + 28), xl = le16(q + 30), cl = le16(q + 32);
        if ((size_t)(r - q) - 46 < nl + xl + cl)
            return 0;
        if (z->n_ent == z->cap) {
            size_t cap = z->cap ? 2 * z->cap : 64;
            entry *ne = realloc(z->ent, cap * sizeof *ne);
            if (!ne)
                return DSQ_ENOMEM;
            z->ent = ne;
            z->cap = cap;
        }
        entry *e = &z->ent[z->n_ent++];
        e->flags = le16(q + 8);
        e->method = le16(q + 10);
        e->crc = le32(q + 16);
        e->csize = le32(q + 20);
        e->usize = le32(q + 24);
        e->off = le32(q + 42);
        e->name = q + 46;
        e->name_n = (uint16_t)nl;
        if (e->csize == 0xFFFFFFFFu || e->usize == 0xFFFFFFFFu || e->off == 0xFFFFFFFFu)
            return 0; /* zip64 */
        q += 46 + nl + xl + cl;
    }
    qsort(z->ent, z->n_ent, sizeof *z->ent, by_offset);
    for (size_t i = 1; i < z->n_ent; i++)
        if (z->ent[i].off == z->ent[i - 1].off)
            return 0; /* libarchive keeps one of them */
    z->cd_off = cd_off;
    z->on = 1;
    return 1;
}

uint64_t dsq_unzip_bytes_in(const dsq_unzip *z) { return z->taken_to; }

void dsq_unzip_decline(dsq_unzip *z)
{
    z->on = 0;
    z->state = S_NONE;
}

/* Whether e's data can be decoded here; *data set to where it begins. */
static int takes(const dsq_unzip *z, const entry *e, uint64_t *data)
{
    if ((e->method != 0 && e->method != 8) || (e->flags & 0x41) ||
        (e->method == 0 && e->csize != e->usize) || e->off > z->cd_off || z->cd_off - e->off < 30)
        return 0; /* another method, encrypted, or its header not before the directory */
    const unsigned char *h = z->p + e->off;
    if (memcmp(h, "PK\003\004", 4) != 0 || le16(h + 8) != e->method || (le16(h + 6) & 0x41))
        return 0;
    uint64_t at = e->off + 30 + le16(h + 26) + le16(h + 28);
    if (at > z->cd_off || z->cd_off - at < e->csize)
        return 0;
    *data = at;
    return 1;
}

int dsq_unzip_next(dsq_unzip *z, const char *name, int64_t size)
{
    z->state = S_NONE;
    if (!z->on)
        return 0;
    if (z->cur >= z->n_ent) {
        z->on = 0;
        return 0;
    }
    const entry *e = &z->ent[z->cur++];
    size_t nl = strlen(name);
    if (nl != e->name_n || memcmp(name, e->name, nl) != 0 || size < 0 || (uint64_t)size != e->usize) {
        z->on = 0; /* not the entry libarchive read: it decodes from here on */
        return 0;
    }
    uint64_t data;
    if (!takes(z, e, &data))
        return 0;
    z->e = e;
    z->in = z->p + data;
    z->left = e->csize;
    z->out_total = 0;
    z->crc = 0;
    z->fail_code = 0;
    z->deflated = e->method == 8;
    if (z->deflated)
        isal_inflate_init(&z->st); /* raw deflate: crc_flag ISAL_DEFLATE */
    z->state = S_DATA;
    return 1;
}

/* The member's end, checked as libarchive checks it. */
static int finish(dsq_unzip *z, dsq_error *err)
{
    const entry *e = z->e;
    z->state = S_DONE;
    if (z->crc != e->crc)
        return dsq_error_set(err, DSQ_EFORMAT, "ZIP bad CRC: 0x%lx should be 0x%lx",
                             (unsigned long)z->crc, (unsigned long)e->crc);
    if (z->left)
        return dsq_error_set(err, DSQ_EFORMAT, "ZIP compressed data is wrong size (read %jd, expected %jd)",
                             (intmax_t)(e->csize - z->left), (intmax_t)e->csize);
    if (z->out_total != e->usize)
        return dsq_error_set(err, DSQ_EFORMAT, "ZIP uncompressed data is wrong size (read %jd, expected %jd)",
                             (intmax_t)z->out_total, (intmax_t)e->usize);
    return 0;
}

int dsq_unzip_block(dsq_unzip *z, const void **buf, size_t *len, dsq_error *err)
{
    if (z->state != S_DATA)
        return 0;
    if (z->fail_code) { /* found with the bytes handed out last */
        z->state = S_DONE;
        return dsq_error_set(err, z->fail_code, "%s", z->fail_msg);
    }
    if (!z->deflated) { /* stored: the file's bytes as they are */
        if (!z->left)
            return finish(z, err);
        *buf = z->in;
        *len = (size_t)z->left;
        z->crc = crc32_gzip_refl(z->crc, z->in, z->left);
        z->out_total += z->left;
        z->in += z->left;
        z->left = 0;
        z->taken_to = (uint64_t)(z->in - z->p);
        return 1;
    }
    for (;;) {
        if (z->st.block_state == ISAL_BLOCK_FINISH)
            return finish(z, err);
        uint32_t give = (uint32_t)(z->left < SLICE ? z->left : SLICE);
        z->st.next_in = (uint8_t *)(uintptr_t)z->in;
        z->st.avail_in = give;
        z->st.next_out = z->out;
        z->st.avail_out = (uint32_t)OUT_CAP;
        int r = isal_inflate(&z->st);
        uint32_t took = give - z->st.avail_in;
        size_t produced = OUT_CAP - z->st.avail_out;
        z->in += took;
        z->left -= took;
        z->taken_to = (uint64_t)(z->in - z->p);
        if (produced) {
            z->crc = crc32_gzip_refl(z->crc, z->out, produced);
            z->out_total += produced;
            *buf = z->out;
            *len = produced;
        }
        if (r < 0) { /* said now, or after the bytes decoded before it */
            snprintf(z->fail_msg, sizeof z->fail_msg, "ZIP decompression failed (%d)", r);
            z->fail_code = DSQ_EFORMAT;
            if (produced)
                return 1;
            z->state = S_DONE;
            return dsq_error_set(err, z->fail_code, "%s", z->fail_msg);
        }
        if (produced)
            return 1;
        if (z->st.block_state == ISAL_BLOCK_FINISH)
            continue;
        if (!z->left || !took) {
            z->state = S_DONE;
            return dsq_error_set(err, DSQ_EFORMAT, "Truncated ZIP file data");
        }
    }
}

#else /* no ISA-L: libarchive decodes every member */

struct dsq_unzip {
    int unused;
};

int dsq_unzip_available(void) { return 0; }
int dsq_unzip_new(dsq_unzip **out)
{
    *out = NULL;
    return DSQ_EUSAGE;
}
void dsq_unzip_free(dsq_unzip *z) { (void)z; }
int dsq_unzip_open(dsq_unzip *z, const unsigned char *p, size_t n)
{
    (void)z, (void)p, (void)n;
    return 0;
}
int dsq_unzip_next(dsq_unzip *z, const char *name, int64_t size)
{
    (void)z, (void)name, (void)size;
    return 0;
}
void dsq_unzip_decline(dsq_unzip *z) { (void)z; }
uint64_t dsq_unzip_bytes_in(const dsq_unzip *z)
{
    (void)z;
    return 0;
}
int dsq_unzip_block(dsq_unzip *z, const void **buf, size_t *len, dsq_error *err)
{
    (void)z, (void)buf, (void)len, (void)err;
    return 0;
}

#endif
