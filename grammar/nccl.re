/* NCCL / RCCL debug lines (NCCL_DEBUG=INFO|WARN).
 *
 * Header (nccl src/debug.cc): an optional timestamp (NCCL_DEBUG_TIMESTAMP_FORMAT,
 * default "[%F %T] ", by default on WARN lines only), then
 *   host:pid:tid [cudaDev] NCCL INFO message
 *   host:pid:tid [cudaDev] file.cc:123 NCCL WARN message      (newer: "file.cc:123 (func)")
 *   host:pid:tid [cudaDev] 12.345 func:123 NCCL TRACE message
 * Version-level lines have no header: "NCCL version 2.4.8+cuda10.1", and RCCL's
 * "RCCL version 2.13.4+hip5.7 HEAD:2890a73". Seen in the wild as well: redacted
 * hosts ("<cluster_name>", "<2nd node server>"), a host with no pid or tid
 * ("node [0] NCCL INFO"), an MPI-style "[155] " rank before the host, and code
 * blocks indented by blanks. RCCL continues its "RCCL version :" line with
 * unprefixed "HIP version  : ..." lines, which belong to this family too.
 *
 * dsq_nccl_parse slices a line into a dsq_nccl_line; dsq_gram_nccl turns that into
 * the generic match (attributes, nccl_init, nccl_warn, nccl_destroy). Topology
 * lines only fill the slices: src/fam_nccl.c summarizes them per communicator.
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "event.h"
#include "fam_nccl.h"
#include "num.h"

static long digits_val(const unsigned char *p, const unsigned char *e)
{
    long v = 0;
    for (; p < e && *p >= '0' && *p <= '9' && v < 100000000000L; p++)
        v = v * 10 + (*p - '0');
    return v;
}

/* The digits of a header number the DFA matched (1 to 10 of them, followed by a
 * byte that is no digit, so no bound is needed). */
static long header_val(const unsigned char *p)
{
    long v = 0;
    for (; (unsigned)(*p - '0') < 10; p++)
        v = v * 10 + (*p - '0');
    return v;
}

static dsq_span span(const void *p, const void *e)
{
    return (dsq_span){(const char *)p, (size_t)((const char *)e - (const char *)p)};
}

static int span_is(dsq_span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A decimal number filling [p, e), or -1. */
static long whole_number(const char *p, const char *e)
{
    if (p >= e || e - p > 15)
        return -1;
    for (const char *q = p; q < e; q++)
        if (!is_digit(*q))
            return -1;
    return digits_val((const unsigned char *)p, (const unsigned char *)e);
}

/* "key value" pairs of the comm lines: "ncclCommInitRank comm 0x.. rank 0 nranks 8
 * cudaDev 0 nvmlDev 0 busId 1000 commId 0x.. - Init COMPLETE". Unknown keys (and
 * typos) are skipped; the first word names the function when it is not "comm". A
 * word is read as a number only after a key of the length it has (4, 6 or 7). */
static void kv_scan(dsq_nccl_line *o, const char *p, const char *end)
{
    dsq_span prev = {NULL, 0};
    int first = 1;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *w = p;
        p = dsq_find_any(p, end, DSQ_LIT(" \t,")); /* the word's end */
        if (p == w)
            break;
        dsq_span cur = span(w, p);
        if (first && !span_is(cur, "comm"))
            o->a = cur;
        first = 0;
        long *to = NULL;
        switch (prev.n) {
        case 4:
            to = span_is(prev, "rank") ? &o->rank : span_is(prev, "used") ? &o->used : NULL;
            break;
        case 6:
            if (span_is(prev, "commId"))
                o->b = cur;
            else
                to = span_is(prev, "nranks") || span_is(prev, "nRanks") ? &o->nranks
                     : span_is(prev, "nNodes")                          ? &o->nnodes
                                                                        : NULL;
            break;
        case 7:
            to = span_is(prev, "cudaDev")   ? &o->cuda_dev
                 : span_is(prev, "nvmlDev") ? &o->nvml_dev
                                            : NULL;
            break;
        default:
            break;
        }
        long v;
        if (to && (v = whole_number(w, p)) >= 0)
            *to = v;
        if (cur.n == 6 && span_is(cur, "parent"))
            o->split = 1;
        prev = cur;
    }
}

/* RCCL "comm:0x2bc1f840, nRanks:2, nNodes:1, coll channels:2 collnet channels:2, ..." */
static void colon_scan(dsq_nccl_line *o, const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        const char *n0 = p;
        while (p < end && *p != ':' && *p != ',')
            p++;
        if (p >= end || *p != ':')
            break;
        dsq_span name = span(n0, p);
        while (name.n && name.p[name.n - 1] == ' ')
            name.n--;
        const char *v0 = ++p;
        while (p < end && *p != ',' && *p != ' ')
            p++;
        long v = whole_number(v0, p);
        if (v < 0)
            continue;
        if (span_is(name, "nRanks"))
            o->nranks = v;
        else if (span_is(name, "nNodes"))
            o->nnodes = v;
        else if (span_is(name, "rank"))
            o->rank = v;
        else if (span_is(name, "coll channels"))
            o->n1 = v;
        else if (span_is(name, "p2p channels"))
            o->n2 = v;
    }
}

/* "4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 1 p2p channels per peer" */
static void counts_scan(dsq_nccl_line *o, const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        const char *v0 = p;
        while (p < end && is_digit(*p))
            p++;
        long v = whole_number(v0, p);
        while (p < end && *p == ' ')
            p++;
        const char *n0 = p;
        while (p < end && *p != ',')
            p++;
        dsq_span name = span(n0, p);
        while (name.n && name.p[name.n - 1] == ' ')
            name.n--;
        if (v < 0)
            break;
        if (span_is(name, "coll channels"))
            o->n1 = v;
        else if (span_is(name, "p2p channels"))
            o->n2 = v;
    }
}

/* Device list of "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ..." or
 * "NET/Socket : Using [0]eth0:10.0.0.9<0> [1]...": counts "[N]" entries and, for IB,
 * their link layers. */
static void devices_scan(dsq_nccl_line *o, const char *p, const char *end, int ib)
{
    int nib = 0, nroce = 0;
    long n = 0;
    while (p < end && *p != ';') {
        if (*p == '[' && p + 1 < end && is_digit(p[1])) {
            n++;
            const char *q = p + 1;
            while (q < end && *q != ' ' && *q != '/' && *q != ';')
                q++;
            if (q + 3 <= end && memcmp(q, "/IB", 3) == 0)
                nib++;
            else if (q + 5 <= end && memcmp(q, "/RoCE", 5) == 0)
                nroce++;
            p = q;
            continue;
        }
        p++;
    }
    o->n1 = n;
    static const char ib_s[] = "IB", roce_s[] = "RoCE", both_s[] = "IB+RoCE", sock_s[] = "Socket";
    if (!ib)
        o->a = n ? (dsq_span){sock_s, 6} : (dsq_span){NULL, 0};
    else if (nib && nroce)
        o->a = (dsq_span){both_s, 7};
    else if (nib)
        o->a = (dsq_span){ib_s, 2};
    else if (nroce)
        o->a = (dsq_span){roce_s, 4};
}

/* Where the run of blanks and digits at q ends (end when it runs to the end): a
 * ring's rank list, "   0   1   2 ...   31", is most of a channel line. With SSE2,
 * 16 bytes at a time, the last 16 of the run read again if it is not a multiple. */
static const char *blank_digit_stop_bytes(const char *q, const char *end)
{
    while (q < end && (*q == ' ' || is_digit(*q)))
        q++;
    return q;
}
#ifdef __SSE2__
/* The bytes of the 16 at q that are neither ' ' nor a digit, a bit each. */
static unsigned blank_digit_misses(const char *q)
{
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m128i t = _mm_sub_epi8(c, _mm_set1_epi8('0'));
    __m128i ok = _mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8(' ')),
                              _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t));
    return ~(unsigned)_mm_movemask_epi8(ok) & 0xffffu;
}

static const char *blank_digit_stop(const char *q, const char *end)
{
    if (end - q < 16)
        return blank_digit_stop_bytes(q, end);
    for (; end - q >= 16; q += 16) {
        unsigned miss = blank_digit_misses(q);
        if (miss)
            return q + __builtin_ctz(miss);
    }
    if (q == end)
        return end;
    unsigned miss = blank_digit_misses(end - 16) >> (16 - (end - q)); /* bytes from q on */
    return miss ? q + __builtin_ctz(miss) : end;
}
#else
static const char *blank_digit_stop(const char *q, const char *end)
{
    return blank_digit_stop_bytes(q, end);
}
#endif

/* After "Channel NN/MM :" or "Ring NN :": a connection ("... via P2P/IPC"), the
 * ring's rank list (digits only), or another graph line. */
/* " via " in p..end, or NULL: found from its 'v' (memchr), cheaper than memmem on
 * the short rest of a channel line. */
static const char *find_via(const char *p, const char *end)
{
    for (const char *q = p + 1; end - q >= 4 && (q = memchr(q, 'v', (size_t)(end - q - 3)));
         q++)
        if (q[-1] == ' ' && q[1] == 'i' && q[2] == 'a' && q[3] == ' ')
            return q - 1;
    return NULL;
}

static void channel_rest(dsq_nccl_line *o, const char *p, const char *end, long count)
{
    const char *via = find_via(p, end);
    if (via) {
        const char *t = via + 5, *te = t < end ? memchr(t, ' ', (size_t)(end - t)) : NULL;
        if (!te)
            te = end;
        o->kind = DSQ_NCCL_CONNECT;
        o->a = span(t, te);
        return;
    }
    if (blank_digit_stop(p, end) == end && count >= 0) {
        o->kind = DSQ_NCCL_RING_LIST;
        o->n2 = count;
    } else {
        o->kind = DSQ_NCCL_GRAPH;
    }
}

static dsq_span rest_of(const unsigned char *p, const char *end)
{
    dsq_span s = span(p, end);
    return s;
}

static int ends_with(dsq_span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n >= n && memcmp(s.p + s.n - n, lit, n) == 0;
}

/* Lines that end in "Init COMPLETE", "Init START", "Destroy COMPLETE", "Abort COMPLETE". */
static int comm_state(dsq_nccl_line *o)
{
    dsq_span m = o->msg;
    static const char destroy_s[] = "Destroy", abort_s[] = "Abort";
    if (!m.n || (m.p[m.n - 1] != 'E' && m.p[m.n - 1] != 'T'))
        return 0;
    if (ends_with(m, "- Init COMPLETE"))
        o->kind = DSQ_NCCL_INIT;
    else if (ends_with(m, "- Init START"))
        o->kind = DSQ_NCCL_INIT_START;
    else if (ends_with(m, "- Destroy COMPLETE"))
        o->kind = DSQ_NCCL_DESTROY;
    else if (ends_with(m, "- Abort COMPLETE"))
        o->kind = DSQ_NCCL_DESTROY;
    else
        return 0;
    kv_scan(o, m.p, m.p + m.n);
    if (o->kind == DSQ_NCCL_DESTROY)
        o->a = ends_with(m, "Abort COMPLETE") ? (dsq_span){abort_s, 5} : (dsq_span){destroy_s, 7};
    return 1;
}

/* Sorts the message of a headed line into a kind and slices what that kind carries. */
static void classify(dsq_nccl_line *o)
{
    const char *end = o->msg.p + o->msg.n;
    const unsigned char *cur = (const unsigned char *)o->msg.p, *mar;
    const unsigned char *v, *v0, *v1, *c0, *c1, *s0, *s1, *e0;
    static const char internal_s[] = "internal";
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    if (comm_state(o))
        return;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        d = [0-9];

        "NCCL version " @v {
            o->kind = DSQ_NCCL_VERSION;
            o->a = rest_of(v, end);
            return;
        }
        "RCCL version" " "* (":" " "*)? @v [^ \t\n\r] {
            o->kind = DSQ_NCCL_VERSION;
            o->a = rest_of(v, end);
            return;
        }
        "Bootstrap" " "? ":" " "? "Using" " "* @v [^ \t\n\r] {
            o->kind = DSQ_NCCL_BOOTSTRAP;
            o->a = rest_of(v, end);
            return;
        }
        "NET/Plugin" {
            const char *p = (const char *)cur;
            size_t n = (size_t)(end - p);
            const char *ld = memmem(p, n, "Loaded net plugin ", 18);
            o->kind = DSQ_NCCL_PLUGIN;
            if (ld) {
                const char *w = ld + 18, *we = w;
                while (we < end && *we != ' ')
                    we++;
                o->a = span(w, we);
            } else if (memmem(p, n, "No plugin found", 15) || memmem(p, n, "Could not find", 14) ||
                       memmem(p, n, "internal", 8)) {
                o->a = (dsq_span){internal_s, 8};
            }
            return;
        }
        "P2P plugin " @v [^ \t\n\r] {
            const char *we = (const char *)v;
            while (we < end && *we != ' ')
                we++;
            o->kind = DSQ_NCCL_PLUGIN;
            o->a = span(v, we);
            return;
        }
        "NET/IB" [A-Za-z0-9_]* " : Using" {
            o->kind = DSQ_NCCL_NET_IB;
            devices_scan(o, (const char *)cur, end, 1);
            return;
        }
        "NET/Socket : Using" {
            o->kind = DSQ_NCCL_NET_SOCKET;
            devices_scan(o, (const char *)cur, end, 0);
            return;
        }
        "Using network " @v [^ \t\n\r] {
            o->kind = DSQ_NCCL_USING_NET;
            o->a = rest_of(v, end);
            return;
        }
        @v0 [A-Z] [A-Z0-9_]+ @v1 " set by environment to " @v [^\n\r] {
            o->kind = DSQ_NCCL_ENV;
            o->a = span(v0, v1);
            o->b = rest_of(v, end);
            if (o->b.n > 1 && o->b.p[o->b.n - 1] == '.')
                o->b.n--; /* param.cc prints "%s set by environment to %lld." */
            return;
        }
        "comm " [0-9a-fA-Fx(] {
            o->kind = DSQ_NCCL_COMM;
            kv_scan(o, o->msg.p, end);
            o->a = (dsq_span){NULL, 0};
            return;
        }
        "comm:" {
            o->kind = DSQ_NCCL_COMM;
            colon_scan(o, o->msg.p, end);
            return;
        }
        d+ " coll channels" {
            o->kind = DSQ_NCCL_CHAN_COUNTS;
            counts_scan(o, o->msg.p, end);
            return;
        }
        "Channel " @c0 d+ ("/" @c1 d+)? " :" {
            o->n1 = digits_val(c0, (const unsigned char *)end);
            channel_rest(o, (const char *)cur, end, c1 ? digits_val(c1, (const unsigned char *)end) : -1);
            return;
        }
        "Ring " @c0 d+ " :" {
            o->n1 = digits_val(c0, (const unsigned char *)end);
            channel_rest(o, (const char *)cur, end, -1);
            if (o->kind == DSQ_NCCL_RING_LIST)
                o->kind = DSQ_NCCL_GRAPH;
            return;
        }
        "Tree " @c0 d+ " :" {
            o->kind = DSQ_NCCL_GRAPH;
            o->n1 = digits_val(c0, (const unsigned char *)end);
            return;
        }
        "Trees" {
            o->kind = DSQ_NCCL_GRAPH;
            o->b = rest_of(cur, end); /* "[0] 1/-1/-1->0->-1 [1] ...": one group per channel */
            return;
        }
        "[RINGS]" {
            o->kind = DSQ_NCCL_GRAPH;
            return;
        }
        @s0 [^ \t\n\r]+ ":" d+ @s1 (" (" [^)\n\r]* ")")? " -> " @e0 "-"? d+ {
            o->kind = DSQ_NCCL_ERRTRACE;
            o->src = span(s0, s1);
            o->n1 = *e0 == '-' ? -digits_val(e0 + 1, (const unsigned char *)end)
                               : digits_val(e0, (const unsigned char *)end);
            return;
        }
        "Setting affinity for GPU " {
            o->kind = DSQ_NCCL_AFFINITY;
            return;
        }
        * { return; }
    */
}

/* Every field set one by one: a memset of the whole struct compiled to `rep stos`,
 * whose start-up cost was a third of reading an NCCL line's header. */
static void line_init(dsq_nccl_line *o)
{
    static const dsq_span none = {NULL, 0};
    o->kind = DSQ_NCCL_OTHER;
    o->level = DSQ_LV_NONE;
    o->headed = 0;
    o->rank_prefix = -1;
    o->t_us = DSQ_TIME_NONE;
    o->host = o->pid_s = o->src = o->msg = o->a = o->b = none;
    o->pid = o->tid = -1;
    o->dev = -1;
    o->rank = o->nranks = o->cuda_dev = o->nvml_dev = o->nnodes = o->used = -1;
    o->n1 = o->n2 = -1;
    o->split = 0;
}

static int64_t stamp_time(const unsigned char *ts)
{
    const char *t = (const char *)ts + 1;
    int us = 0;
    if (t[19] == '.') {
        int k = 0;
        for (const char *q = t + 20; is_digit(*q) && k < 6; q++, k++)
            us = us * 10 + (*q - '0');
        for (; k < 6; k++)
            us *= 10;
    }
    return dsq_time_from_civil(dsq_time_digits(t, 4), dsq_time_digits(t + 5, 2),
                               dsq_time_digits(t + 8, 2), dsq_time_digits(t + 11, 2),
                               dsq_time_digits(t + 14, 2), dsq_time_digits(t + 17, 2), us);
}

/* The message from cur to the end of the line, right blanks trimmed. */
static void set_msg(dsq_nccl_line *o, const unsigned char *cur, const char *end)
{
    const char *e = end;
    while (e > (const char *)cur && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    o->msg = span(cur, e);
}

/* Bytes that end a host (the DFA's `host` holds any other: its first byte no '<'). */
static const unsigned char host_end[256] = {
    [' '] = 1, ['\t'] = 1, [':'] = 1, ['['] = 1, [']'] = 1, ['\n'] = 1, ['\r'] = 1,
};

/* The 8 bytes at q as a number, the first in the lowest byte: one load. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static inline uint64_t le64(const unsigned char *q)
{
    uint64_t x;
    memcpy(&x, q, 8);
    return __builtin_bswap64(x);
}
#else
static inline uint64_t le64(const unsigned char *q)
{
    uint64_t x;
    memcpy(&x, q, 8);
    return x;
}
#endif

/* 1..max digits at *p, then the byte want: 1 with *p moved past both and *v their
 * value, 0 when they are not there. */
static inline __attribute__((always_inline)) int digits_then(const unsigned char **p,
                                                             const unsigned char *end, int max,
                                                             unsigned char want, long *v)
{
    const unsigned char *q = *p, *stop = end - *p > max ? *p + max : end;
    if (end - q >= 8) {
        uint64_t x = le64(q);
        uint64_t other = ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                         (((x & 0x0F0F0F0F0F0F0F0Full) + 0x0606060606060606ull) &
                          0xF0F0F0F0F0F0F0F0ull);
        if (other) {
            int n = __builtin_ctzll(other) / 8;
            if (n == 0 || n > max || q[n] != want)
                return 0;
            uint64_t y = (x << (8 * (8 - n))) & 0x0F0F0F0F0F0F0F0Full;
            y = (y * 2561) >> 8 & 0x00FF00FF00FF00FFull;
            y = (y * 6553601) >> 16 & 0x0000FFFF0000FFFFull;
            y = (y * 42949672960001ull) >> 32;
            *p = q + n + 1;
            *v = (long)y;
            return 1;
        }
    }
    long x = 0;
    unsigned d;
    for (; q < stop && (d = (unsigned)(*q - '0')) < 10; q++)
        x = x * 10 + d;
    if (q == *p || q >= end || *q != want)
        return 0;
    *p = q + 1;
    *v = x;
    return 1;
}

/* The header almost every NCCL line has, "host:pid:tid [dev] NCCL INFO ", read in
 * one pass, numbers included (the DFA, then a second pass over each number, cost
 * 7 % of the instructions of a per-host archive's lines). Fills what the DFA's INFO
 * rule and `headed` fill (*h1: the host's end) and returns where the message
 * starts, or NULL for any other shape (a prefix or stamp before the host, a host in
 * <>, no pid or tid, a negative device, another level), which the DFA reads. */
static const unsigned char *info_header(const unsigned char *p, const unsigned char *end,
                                        dsq_nccl_line *o, const unsigned char **h1)
{
    static const char info[] = "NCCL INFO";
    const unsigned char *q = p;
    if (q >= end || host_end[*q] || *q == '<')
        return NULL;
    q = (const unsigned char *)dsq_find_any((const char *)q, (const char *)end,
                                            DSQ_LIT(" \t:[]\n\r")); /* host_end's bytes */
    if (q >= end || *q != ':')
        return NULL;
    *h1 = q++;
    const unsigned char *n0 = q;
    long pid, tid, dev;
    if (!digits_then(&q, end, 10, ':', &pid))
        return NULL;
    const unsigned char *n2 = q;
    if (!digits_then(&q, end, 10, ' ', &tid) || q >= end || *q++ != '[' ||
        !digits_then(&q, end, 4, ']', &dev) || end - q < 10 || *q != ' ' ||
        memcmp(q + 1, info, sizeof info - 1) != 0)
        return NULL;
    o->pid = pid;
    o->pid_s = span(n0, n2 - 1);
    o->tid = tid;
    o->dev = (int)dev;
    q += sizeof info;
    return q < end && *q == ' ' ? q + 1 : q;
}

/* dsq_nccl_parse, with the header fast path when fast (see dsq_nccl_parse_dfa). */
static int parse_line(const char *line, size_t len, dsq_nccl_line *o, int fast)
{
    const unsigned char *cur = (const unsigned char *)line, *mar;
    const unsigned char *rk0, *ts0, *h0, *h1, *n0, *n2, *d0, *s0, *s1;
    const char *end = line + len;
    /*!stags:re2c format = 'const unsigned char *@@;\n'; */
    (void)mar;
    line_init(o);
    const unsigned char *msg = fast ? info_header(cur, (const unsigned char *)end, o, &h1) : NULL;
    if (msg) { /* the numbers are set */
        o->headed = 1;
        o->level = DSQ_LV_INFO;
        o->host = span(cur, h1);
        set_msg(o, msg, end);
        classify(o);
        return 1;
    }
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:yyfill:enable = 0;
        re2c:flags:tags = 1;
        re2c:sentinel = 10;

        ws    = [ \t];
        host  = [^ \t:[\]<\n\r] [^ \t:[\]\n\r]* | "<" [^>\n\r]+ ">";
        stamp = "[" d{4} "-" d{2} "-" d{2} " " d{2} ":" d{2} ":" d{2} ("." d+)? "]" " "+;
        pre   = ws* ("[" @rk0 d{1,7} "] ")? (@ts0 stamp)?;
        ids   = (":" @n0 d{1,10} (":" @n2 d{1,10})?)?;
        hdr   = pre @h0 host @h1 ids " [" @d0 "-"? d{1,4} "] ";

        hdr "NCCL INFO" " "? {
            o->level = DSQ_LV_INFO;
            goto headed;
        }
        hdr @s0 [^ \t\n\r]+ ":" d+ @s1 (" (" [^)\n\r]* ")")? " NCCL WARN" " "? {
            o->level = DSQ_LV_WARNING;
            o->src = span(s0, s1);
            goto headed;
        }
        hdr d+ "." d+ " " [^ \t\n\r]+ ":" d+ " NCCL TRACE" " "? {
            o->level = DSQ_LV_DEBUG;
            goto headed;
        }
        pre @h0 host @h1 ":" @n0 d{1,10} ":" @n2 d{1,10} " NCCL CALL " {
            d0 = NULL;
            o->level = DSQ_LV_DEBUG;
            goto headed;
        }
        pre "NCCL version " @s0 [^ \t\n\r] {
            o->level = DSQ_LV_INFO;
            o->kind = DSQ_NCCL_VERSION;
            goto bare;
        }
        ws* "RCCL version " @s0 [^ \t\n\r] {
            o->level = DSQ_LV_INFO;
            o->kind = DSQ_NCCL_VERSION;
            ts0 = NULL;
            goto bare;
        }
        ("HIP version  " | "ROCm version " | "Hostname     " | "Librccl path ") ": " @s0 {
            o->level = DSQ_LV_INFO;
            o->kind = DSQ_NCCL_RCCL_BLOCK;
            set_msg(o, (const unsigned char *)line, end);
            o->a = span(s0, (const unsigned char *)end); /* the value */
            while (o->a.n && (o->a.p[o->a.n - 1] == ' ' || o->a.p[o->a.n - 1] == '\t'))
                o->a.n--;
            return 1;
        }
        * { return 0; }
    */
bare:
    if (ts0)
        o->t_us = stamp_time(ts0);
    set_msg(o, s0, end);
    o->a = o->msg;
    return 1;
headed:
    o->headed = 1;
    if (rk0)
        o->rank_prefix = (int)header_val(rk0);
    if (ts0)
        o->t_us = stamp_time(ts0);
    o->host = span(h0, h1);
    if (n0 && n2) {
        o->pid = header_val(n0);
        o->pid_s = span(n0, n2 - 1);
        o->tid = header_val(n2);
    } else if (n0) {
        o->tid = header_val(n0); /* "host:tid" */
    }
    if (d0)
        o->dev = *d0 == '-' ? -1 : (int)header_val(d0);
    set_msg(o, cur, end);
    if (o->level == DSQ_LV_WARNING)
        o->kind = DSQ_NCCL_WARN;
    else
        classify(o);
    return 1;
}

int dsq_nccl_parse(const char *line, size_t len, dsq_nccl_line *o)
{
    return parse_line(line, len, o, 1);
}

int dsq_nccl_parse_dfa(const char *line, size_t len, dsq_nccl_line *o)
{
    return parse_line(line, len, o, 0);
}

static int same_span(dsq_span a, dsq_span b) { return a.p == b.p && a.n == b.n; }

int dsq_nccl_line_same(const dsq_nccl_line *a, const dsq_nccl_line *b)
{
    return a->kind == b->kind && a->level == b->level && a->headed == b->headed &&
           a->rank_prefix == b->rank_prefix && a->t_us == b->t_us && same_span(a->host, b->host) &&
           a->pid == b->pid && a->tid == b->tid && same_span(a->pid_s, b->pid_s) &&
           a->dev == b->dev && same_span(a->src, b->src) && same_span(a->msg, b->msg) &&
           same_span(a->a, b->a) && same_span(a->b, b->b) && a->rank == b->rank &&
           a->nranks == b->nranks && a->cuda_dev == b->cuda_dev && a->nvml_dev == b->nvml_dev &&
           a->nnodes == b->nnodes && a->used == b->used && a->n1 == b->n1 && a->n2 == b->n2 &&
           a->split == b->split;
}

uint64_t dsq_nccl_proc_key(const dsq_nccl_line *l)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < l->host.n; i++)
        h = (h ^ (unsigned char)l->host.p[i]) * 1099511628211ULL;
    h = (h ^ (uint64_t)(l->pid + 1)) * 1099511628211ULL;
    return h ? h : 1;
}

/* --- the generic match ---------------------------------------------------------- */

static void set_attr(dsq_match *m, const char *name, dsq_span value)
{
    m->ev = DSQ_EV_ATTR;
    m->label = (dsq_span){name, strlen(name)};
    m->text = value;
}

static void add_num(dsq_match *m, const char *name, long v, int unit)
{
    if (v >= 0)
        dsq_match_value(m, name, strlen(name), (double)v, unit);
}

/* "misc/nvmlwrap.cc:181" -> "nvmlwrap.cc:181": where a warning comes from, without
 * the build directory (RCCL prints absolute paths). */
static dsq_span basename_of(dsq_span s)
{
    for (size_t i = s.n; i > 0; i--)
        if (s.p[i - 1] == '/')
            return (dsq_span){s.p + i, s.n - i};
    return s;
}

static void comm_fields(dsq_match *m, const dsq_nccl_line *o)
{
    add_num(m, "rank", o->rank, DSQ_U_NONE);
    add_num(m, "nranks", o->nranks, DSQ_U_NONE);
    add_num(m, "cudaDev", o->cuda_dev, DSQ_U_NONE);
    add_num(m, "nvmlDev", o->nvml_dev, DSQ_U_NONE);
    if (o->rank >= 0 && o->rank <= 0x7fffffffL && !o->split)
        m->rank = (int)o->rank; /* a split communicator's rank is not the process's */
}

/* The generic event a line carries, if any. */
static void match_event(dsq_match *m, const dsq_nccl_line *o)
{
    static const char warn_s[] = "warn";
    switch (o->kind) {
    case DSQ_NCCL_VERSION:
        set_attr(m, "nccl_version", o->a);
        break;
    case DSQ_NCCL_RCCL_BLOCK: /* the lines under "RCCL version : ...": versions */
        if (o->a.n && o->msg.n > 4 && memcmp(o->msg.p, "HIP ", 4) == 0)
            set_attr(m, "hip_version", o->a);
        else if (o->a.n && o->msg.n > 5 && memcmp(o->msg.p, "ROCm ", 5) == 0)
            set_attr(m, "rocm_version", o->a);
        break;
    case DSQ_NCCL_BOOTSTRAP:
        set_attr(m, "nccl_bootstrap", o->a);
        break;
    case DSQ_NCCL_PLUGIN:
        if (o->a.n)
            set_attr(m, "nccl_net_plugin", o->a);
        break;
    case DSQ_NCCL_NET_IB:
    case DSQ_NCCL_NET_SOCKET:
        if (o->a.n)
            set_attr(m, "nccl_net", o->a);
        break;
    case DSQ_NCCL_USING_NET:
        /* IB-type networks are named with their link layer by the NET/IB line */
        if (!(o->a.n >= 2 && o->a.p[0] == 'I' && o->a.p[1] == 'B'))
            set_attr(m, "nccl_net", o->a);
        break;
    case DSQ_NCCL_INIT:
        m->ev = DSQ_EV_NCCL_INIT;
        m->label = o->a;
        m->text = o->b;
        comm_fields(m, o);
        add_num(m, "used", o->used, DSQ_U_B);
        break;
    case DSQ_NCCL_DESTROY:
        m->ev = DSQ_EV_NCCL_DESTROY;
        m->label = o->a;
        comm_fields(m, o);
        break;
    case DSQ_NCCL_INIT_START:
    case DSQ_NCCL_COMM:
        if (o->rank >= 0 && o->rank <= 0x7fffffffL && !o->split)
            m->rank = (int)o->rank;
        break;
    case DSQ_NCCL_WARN:
        m->ev = DSQ_EV_NCCL_WARN;
        m->label = o->src.n ? basename_of(o->src) : (dsq_span){warn_s, 4};
        m->text = o->msg;
        break;
    default:
        break;
    }
    /* NCCL reports errors as WARN lines; INFO lines (the bulk) are not searched */
    if (o->headed && o->kind == DSQ_NCCL_WARN && o->msg.n >= 10 &&
        memmem(o->msg.p, o->msg.n, "NCCL error", 10)) {
        static const char cls[] = "nccl_error";
        m->ev = DSQ_EV_FAILURE;
        m->label = (dsq_span){cls, 10};
        m->text = o->msg;
        m->nf = 0;
    }
}

_Static_assert(sizeof(dsq_nccl_line) <= DSQ_MATCH_AUX, "dsq_nccl_line must fit dsq_match.aux");

/* The match of a line parsed into op (m's aux, where the handler reads it back). */
static void fill_match(dsq_match *m, const dsq_nccl_line *op)
{
    m->family = DSQ_FAM_NCCL;
    m->level = op->level;
    if (op->headed)
        m->host = op->host;
    m->proc = op->pid_s;
    if (op->rank_prefix >= 0)
        m->rank = op->rank_prefix;
    if (op->t_us != DSQ_TIME_NONE)
        m->t_us = op->t_us;
    m->func = op->src;
    m->body = op->msg;
    match_event(m, op);
}

int dsq_gram_nccl(const char *line, size_t len, dsq_match *m)
{
    dsq_nccl_line *op = (dsq_nccl_line *)m->aux.bytes; /* the handler reads it back */
    if (!dsq_nccl_parse(line, len, op))
        return 0;
    fill_match(m, op);
    return 1;
}

/* The spans of a dsq_nccl_line, in the order of dsq_nccl_memo's rel bits. */
#define MEMO_SPANS 6
static const uint8_t memo_span_at[MEMO_SPANS] = {
    offsetof(dsq_nccl_line, host), offsetof(dsq_nccl_line, pid_s), offsetof(dsq_nccl_line, src),
    offsetof(dsq_nccl_line, msg),  offsetof(dsq_nccl_line, a),     offsetof(dsq_nccl_line, b)};

static dsq_span *memo_span(dsq_nccl_line *o, int i)
{
    return (dsq_span *)(void *)((unsigned char *)o + memo_span_at[i]);
}

/* The header of an NCCL INFO line with nothing before its host, kept (memo->head_n
 * 0 when the line has none): the bytes up to its message, which must follow one
 * space after "NCCL INFO", so that a line with the same bytes has the same header
 * in parse_line's fast path (info_header decides on them alone). */
static void keep_head(dsq_nccl_memo *memo, const char *line, size_t len, const dsq_match *m)
{
    const dsq_nccl_line *op = (const dsq_nccl_line *)m->aux.bytes;
    memo->head_n = 0;
    if (m->family != DSQ_FAM_NCCL || !op->headed || op->level != DSQ_LV_INFO ||
        op->host.p != line || !op->pid_s.p || op->tid < 0 || op->dev < 0 ||
        op->rank_prefix >= 0 || op->t_us != DSQ_TIME_NONE || op->src.p || !op->msg.p)
        return;
    size_t n = (size_t)(op->msg.p - line);
    if (n < 12 || n > DSQ_NCCL_HEAD_MAX || n > len || line[n - 1] != ' ' ||
        memcmp(line + n - 11, " NCCL INFO ", 11) != 0 || op->pid_s.p < line ||
        op->pid_s.p + op->pid_s.n > line + n)
        return;
    memcpy(memo->head, line, n);
    memo->host_n = (uint16_t)op->host.n;
    memo->pid_at = (uint16_t)(op->pid_s.p - line);
    memo->pid_n = (uint16_t)op->pid_s.n;
    memo->pid = op->pid;
    memo->tid = op->tid;
    memo->dev = op->dev;
    memo->head_n = (uint16_t)n;
}

int dsq_nccl_memo_head(const dsq_nccl_memo *memo, const char *line, size_t len, dsq_match *m)
{
    size_t n = memo->head_n;
    if (!n || len < n || memcmp(line, memo->head, n) != 0)
        return 0;
    dsq_nccl_line *op = (dsq_nccl_line *)m->aux.bytes; /* as parse_line's fast path */
    line_init(op);
    op->headed = 1;
    op->level = DSQ_LV_INFO;
    op->host = (dsq_span){line, memo->host_n};
    op->pid = memo->pid;
    op->pid_s = (dsq_span){line + memo->pid_at, memo->pid_n};
    op->tid = memo->tid;
    op->dev = memo->dev;
    set_msg(op, (const unsigned char *)line + n, line + len);
    classify(op);
    fill_match(m, op);
    return 1;
}

void dsq_nccl_memo_keep(dsq_nccl_memo *memo, const char *line, size_t len, const dsq_match *m,
                        int same_head)
{
    const dsq_nccl_line *op = (const dsq_nccl_line *)m->aux.bytes;
    if (!same_head)
        keep_head(memo, line, len, m);
    memo->len = 0;
    if (m->family != DSQ_FAM_NCCL || len > DSQ_NCCL_MEMO_MAX || !op->headed ||
        (op->kind != DSQ_NCCL_CONNECT && op->kind != DSQ_NCCL_RING_LIST &&
         op->kind != DSQ_NCCL_GRAPH))
        return;
    /* n1 read from the digits after "Channel ", "Ring " or "Tree " (classify) */
    const char *msg = op->msg.p, *d;
    if (op->msg.n > 8 && memcmp(msg, "Channel ", 8) == 0)
        d = msg + 8;
    else if (op->msg.n > 5 && (memcmp(msg, "Ring ", 5) == 0 || memcmp(msg, "Tree ", 5) == 0))
        d = msg + 5;
    else
        return;
    if (d < line || d >= line + len)
        return;
    const char *e = d;
    while (e < line + len && e - d < 5 && *e >= '0' && *e <= '9')
        e++;
    if (e == d || e - d > 4 || (e < line + len && *e >= '0' && *e <= '9') ||
        digits_val((const unsigned char *)d, (const unsigned char *)e) != op->n1)
        return;
    memo->o = *op;
    memo->rel = 0;
    for (int i = 0; i < MEMO_SPANS; i++) {
        dsq_span *s = memo_span(&memo->o, i);
        if (s->p && s->p >= line && s->p + s->n <= line + len) {
            s->p = (const char *)(uintptr_t)(s->p - line);
            memo->rel |= (uint8_t)(1u << i);
        }
    }
    memcpy(memo->line, line, len);
    memo->lo = (uint16_t)(d - line);
    memo->hi = (uint16_t)(e - line);
    memo->len = (uint32_t)len;
}

int dsq_nccl_memo_match(const dsq_nccl_memo *memo, const char *line, size_t len, dsq_match *m)
{
    size_t lo = memo->lo, hi = memo->hi;
    if (!memo->len || len != memo->len || memcmp(line + hi, memo->line + hi, len - hi) != 0 ||
        memcmp(line, memo->line, lo) != 0)
        return 0;
    for (size_t i = lo; i < hi; i++)
        if (line[i] < '0' || line[i] > '9')
            return 0;
    dsq_nccl_line *op = (dsq_nccl_line *)m->aux.bytes;
    *op = memo->o;
    for (int i = 0; i < MEMO_SPANS; i++)
        if (memo->rel >> i & 1) {
            dsq_span *s = memo_span(op, i);
            s->p = line + (uintptr_t)s->p;
        }
    op->n1 = digits_val((const unsigned char *)line + lo, (const unsigned char *)line + hi);
    fill_match(m, op);
    return 1;
}
