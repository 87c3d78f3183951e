/* NCCL / RCCL handler: what needs more than one line.
 *
 * - Topology: NCCL prints one line per channel, ring, tree and connection while a
 *   communicator is set up, all from the thread that runs the init (host:pid:tid),
 *   and ends with "... - Init COMPLETE" on that thread. A slot per thread sums
 *   those lines up (ranks, nodes, channels, transports seen) and one nccl_topology
 *   event is emitted at Init COMPLETE, or at the end of the stream for a setup the
 *   log cut off. Slots are few and fixed; the least recently used one is flushed
 *   when a new thread needs a slot.
 * - Ranks: the recognizer names the process (m->proc = pid) and, on lines that say
 *   "rank R nranks N", its rank; the scanner remembers (host, pid) -> rank and
 *   hands it to the other lines of that process, and so to this handler's events.
 * - Errors: a failing NCCL call prints a chain of "file.cc:123 -> 2" lines, often
 *   right after a WARN of the same thread. The first line of a chain becomes one
 *   failure (nccl_error) whose text is that WARN, or the result's meaning.
 * - Environment: "NCCL_X set by environment to V" becomes the attribute
 *   nccl_env.NCCL_X, whose name is built here (the recognizer cannot concatenate).
 * - World: the largest "nranks" any line of the stream printed is the world's
 *   size (no communicator is larger), and the largest "nNodes" its node count:
 *   run attributes world_size and nodes, emitted at the end of the stream at the
 *   line that printed them.
 * The state is fixed-size; nothing is allocated per line.
 */
#include "fam_nccl.h"

#include <stdio.h>
#include <string.h>

#include "event.h"
#include "num.h"

static uint64_t thread_key(uint64_t proc, long tid)
{
    uint64_t k = proc ^ ((uint64_t)(tid + 1) * 0x9E3779B97F4A7C15ULL);
    return k ? k : 1;
}

/* ---- topology slots ---------------------------------------------------------- */

static void add_field(dsq_mfield *f, int *nf, const char *name, long v)
{
    if (v < 0 || *nf >= DSQ_EV_MAXF)
        return;
    f[*nf] = (dsq_mfield){{name, strlen(name)}, (double)v, DSQ_U_NONE};
    (*nf)++;
}

static long popcount64(uint64_t x)
{
    long n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* One nccl_topology event for what the slot gathered, at lc. */
static int topo_emit(const dsq_line_ctx *lc, const dsq_nccl_slot *s)
{
    dsq_mfield f[DSQ_EV_MAXF];
    int nf = 0;
    long chans = s->nchan >= 0 ? s->nchan : s->chan_mask ? popcount64(s->chan_mask) : -1;
    add_field(f, &nf, "nranks", s->nranks);
    add_field(f, &nf, "nNodes", s->nnodes);
    add_field(f, &nf, "channels", chans);
    add_field(f, &nf, "coll channels", s->coll);
    add_field(f, &nf, "p2p channels", s->p2p);
    if (s->n_conn) {
        add_field(f, &nf, "P2P", (long)s->n_p2p);
        add_field(f, &nf, "SHM", (long)s->n_shm);
        add_field(f, &nf, "NET", (long)s->n_net);
    }
    if (!nf && !s->via_n)
        return 0; /* nothing worth an event (a lone "Trees" line) */
    dsq_emit_args a = {.ev = DSQ_EV_NCCL_TOPOLOGY, .label = {s->via, s->via_n}, .f = f, .nf = nf};
    return dsq_scan_emit(lc, &a);
}

/* Emits a slot's summary where its last line was (flush at eviction or the end). */
static int slot_flush(const dsq_line_ctx *lc, dsq_nccl_slot *s)
{
    int rc = 0;
    if (s->key && s->has_topo) {
        dsq_line_ctx at = {lc->sc, s->host, s->rank, s->t_us, s->lineno};
        rc = topo_emit(&at, s);
    }
    memset(s, 0, sizeof *s);
    return rc;
}

static dsq_nccl_slot *slot_find(dsq_nccl_state *st, uint64_t key)
{
    if (key && st->slot[st->last].key == key)
        return &st->slot[st->last];
    for (int i = 0; i < st->nslots; i++)
        if (st->slot[i].key == key) {
            st->last = i;
            return &st->slot[i];
        }
    return NULL;
}

/* The slot of key, taking a free one or flushing the least recently used. */
static dsq_nccl_slot *slot_get(dsq_nccl_state *st, const dsq_line_ctx *lc, uint64_t key,
                               uint64_t proc, int *rc)
{
    dsq_nccl_slot *s = slot_find(st, key), *old = &st->slot[0];
    if (s)
        return s;
    for (int i = 0; i < st->nslots && !s; i++) {
        if (!st->slot[i].key)
            s = &st->slot[i];
        else if (st->slot[i].used_at < old->used_at)
            old = &st->slot[i];
    }
    if (!s && st->nslots < DSQ_NCCL_SLOTS) /* the lowest free one, as before */
        s = &st->slot[st->nslots++];
    if (!s) {
        *rc = slot_flush(lc, old);
        s = old;
    }
    s->key = key;
    s->proc = proc;
    s->rank = s->nranks = s->nnodes = s->nchan = s->coll = s->p2p = -1;
    return s;
}

_Static_assert(DSQ_NCCL_VIA <= 256, "a via word's start and length fit a byte");

/* Whether the slot's list has transport t: the listed words of its length
 * compared (a setup's connection lines alternate between a few transports). */
static int via_has(const dsq_nccl_slot *s, dsq_span t)
{
    if (s->via_words <= DSQ_NCCL_VIA_WORDS) {
        for (int w = 0; w < s->via_words; w++)
            if (s->via_len[w] == t.n && dsq_same_bytes(s->via + s->via_at[w], t.p, t.n))
                return 1;
        return 0;
    }
    for (size_t i = 0; i + t.n <= s->via_n; i++)
        if ((i == 0 || s->via[i - 1] == ' ') && dsq_same_bytes(s->via + i, t.p, t.n) &&
            (i + t.n == s->via_n || s->via[i + t.n] == ' '))
            return 1;
    return 0;
}

/* Adds a "via" transport to the slot's list unless it is there already. */
static void via_add(dsq_nccl_slot *s, dsq_span t)
{
    if (via_has(s, t))
        return;
    size_t need = t.n + (s->via_n ? 1 : 0);
    if (!t.n || s->via_n + need > sizeof s->via)
        return;
    if (s->via_n)
        s->via[s->via_n++] = ' ';
    if (s->via_words < DSQ_NCCL_VIA_WORDS) { /* (t.n and via_n are under 256) */
        s->via_at[s->via_words] = (uint8_t)s->via_n;
        s->via_len[s->via_words] = (uint8_t)t.n;
    }
    if (s->via_words <= DSQ_NCCL_VIA_WORDS)
        s->via_words++;
    memcpy(s->via + s->via_n, t.p, t.n);
    s->via_n += t.n;
}

static void channel_mark(dsq_nccl_slot *s, long ch)
{
    if (ch >= 0 && ch < 64)
        s->chan_mask |= (uint64_t)1 << ch;
}

/* Folds one topology line into its thread's slot. */
static void topo_line(dsq_nccl_slot *s, const dsq_nccl_line *o)
{
    switch (o->kind) {
    case DSQ_NCCL_COMM:
        if (o->nranks >= 0)
            s->nranks = (int)o->nranks;
        if (o->nnodes >= 0)
            s->nnodes = (int)o->nnodes;
        if (o->n1 >= 0) /* RCCL's "comm:..." line carries the channel counts too */
            s->coll = (int)o->n1;
        if (o->n2 >= 0)
            s->p2p = (int)o->n2;
        break;
    case DSQ_NCCL_CHAN_COUNTS:
        if (o->n1 >= 0)
            s->coll = (int)o->n1;
        if (o->n2 >= 0)
            s->p2p = (int)o->n2;
        break;
    case DSQ_NCCL_RING_LIST:
        channel_mark(s, o->n1);
        if (o->n2 > 0 && o->n2 < 1000)
            s->nchan = (int)o->n2;
        break;
    case DSQ_NCCL_CONNECT:
        channel_mark(s, o->n1);
        s->n_conn++;
        if (o->a.n >= 3 && o->a.p[0] == 'P' && o->a.p[1] == '2' && o->a.p[2] == 'P')
            s->n_p2p++;
        else if (o->a.n >= 3 && memcmp(o->a.p, "SHM", 3) == 0)
            s->n_shm++;
        else
            s->n_net++;
        via_add(s, o->a);
        break;
    case DSQ_NCCL_GRAPH:
        channel_mark(s, o->n1);
        for (size_t i = 0; i + 2 < o->b.n; i++) /* Trees: "[0] ... [1] ..." */
            if (o->b.p[i] == '[' && o->b.p[i + 1] >= '0' && o->b.p[i + 1] <= '9') {
                long ch = 0;
                for (i++; i < o->b.n && o->b.p[i] >= '0' && o->b.p[i] <= '9' && ch < 1000; i++)
                    ch = ch * 10 + (o->b.p[i] - '0');
                channel_mark(s, ch);
            }
        break;
    default:
        return;
    }
    s->has_topo = 1;
}

static int is_topo(int kind)
{
    return kind == DSQ_NCCL_COMM || kind == DSQ_NCCL_CHAN_COUNTS || kind == DSQ_NCCL_RING_LIST ||
           kind == DSQ_NCCL_CONNECT || kind == DSQ_NCCL_GRAPH;
}

/* Init COMPLETE: the summary of this thread's (or, failing that, this process's)
 * setup, emitted at this line. */
static int init_complete(dsq_nccl_state *st, const dsq_line_ctx *lc, const dsq_nccl_line *o,
                         uint64_t key, uint64_t proc)
{
    dsq_nccl_slot *s = slot_find(st, key);
    if (!s || !s->has_topo)
        for (int i = 0; i < st->nslots && (!s || !s->has_topo); i++)
            if (st->slot[i].key && st->slot[i].proc == proc && st->slot[i].has_topo)
                s = &st->slot[i];
    if (!s || !s->has_topo)
        return 0;
    if (o->nranks >= 0 && s->nranks < 0)
        s->nranks = (int)o->nranks;
    int rc = topo_emit(lc, s);
    memset(s, 0, sizeof *s);
    return rc;
}

/* ---- errors and environment ---------------------------------------------------- */

static const char *result_text(long code)
{
    switch (code) {
    case 1: return "unhandled cuda error";
    case 2: return "unhandled system error";
    case 3: return "internal error";
    case 4: return "invalid argument";
    case 5: return "invalid usage";
    case 6: return "remote process exited or there was a network error";
    case 7: return "in progress";
    default: return "NCCL error";
    }
}

/* The first "file.cc:123 -> N" line of a chain: one nccl_error failure. */
static int error_chain(const dsq_line_ctx *lc, dsq_nccl_slot *s, const dsq_nccl_line *o)
{
    static const char cls[] = "nccl_error";
    int first = !s->in_chain;
    s->in_chain = 1;
    if (!first || o->n1 == 0)
        return 0;
    const char *txt = result_text(o->n1);
    dsq_span text = s->warn_prev ? (dsq_span){s->warn, s->warn_n} : (dsq_span){txt, strlen(txt)};
    dsq_mfield f = {{"code", 4}, (double)o->n1, DSQ_U_NONE};
    dsq_emit_args a = {.ev = DSQ_EV_FAILURE, .label = {cls, 10}, .text = text, .f = &f, .nf = 1};
    return dsq_scan_emit(lc, &a);
}

static int env_attr(dsq_nccl_state *st, const dsq_line_ctx *lc, const dsq_nccl_line *o)
{
    int k = snprintf(st->label, sizeof st->label, "nccl_env.%.*s", (int)o->a.n, o->a.p);
    if (k <= 0 || (size_t)k >= sizeof st->label)
        return 0;
    dsq_mfield f;
    double v;
    const char *stop = NULL;
    const char *end = o->b.p + o->b.n;
    int nf = dsq_num_parse(o->b.p, end, &v, &stop) == 0 && stop == end;
    if (nf)
        f = (dsq_mfield){{"value", 5}, v, DSQ_U_NONE};
    dsq_emit_args a = {.ev = DSQ_EV_ATTR, .label = {st->label, (size_t)k}, .text = o->b,
                       .f = &f, .nf = nf};
    return dsq_scan_emit(lc, &a);
}

/* ---- the handler ------------------------------------------------------------------ */

int dsq_nccl_handle(void *state, const dsq_line_ctx *lc, const dsq_match *m, const char *line,
                    size_t len)
{
    dsq_nccl_state *st = state;
    int rc = 0;
    (void)line;
    (void)len;
    if (m->family != DSQ_FAM_NCCL)
        return 0;
    const dsq_nccl_line *o = (const dsq_nccl_line *)m->aux.bytes; /* parsed by dsq_gram_nccl */
    if (!o->headed)
        return 0;
    if (!st->proc_n || o->host.n != st->proc_n || o->pid != st->proc_pid ||
        !dsq_same_bytes(o->host.p, st->proc_host, o->host.n)) {
        st->proc_key = dsq_nccl_proc_key(o);
        st->proc_pid = o->pid;
        st->proc_n = o->host.n <= sizeof st->proc_host ? o->host.n : 0; /* longer: not kept */
        memcpy(st->proc_host, o->host.p, st->proc_n);
    }
    uint64_t proc = st->proc_key, key = thread_key(proc, o->tid);
    dsq_line_ctx ctx = *lc; /* the scanner gives the rank a process's init line named */
    st->clock++;
    if (o->nranks > st->world_nranks) {
        st->world_nranks = o->nranks;
        st->world_at = *lc;
    }
    if (o->nnodes > st->world_nnodes) {
        st->world_nnodes = o->nnodes;
        st->nodes_at = *lc;
    }
    dsq_nccl_slot *s = slot_find(st, key);
    if (o->kind == DSQ_NCCL_ERRTRACE || o->kind == DSQ_NCCL_WARN || is_topo(o->kind))
        s = slot_get(st, &ctx, key, proc, &rc);
    if (rc)
        return rc;
    if (s) {
        s->used_at = st->clock;
        if (o->kind != DSQ_NCCL_ERRTRACE)
            s->in_chain = 0;
        s->warn_prev = o->kind == DSQ_NCCL_WARN || (o->kind == DSQ_NCCL_ERRTRACE && s->warn_prev);
    }
    switch (o->kind) {
    case DSQ_NCCL_ERRTRACE:
        return error_chain(&ctx, s, o);
    case DSQ_NCCL_WARN:
        s->warn_n = o->msg.n < sizeof s->warn ? o->msg.n : sizeof s->warn;
        memcpy(s->warn, o->msg.p, s->warn_n);
        return 0;
    case DSQ_NCCL_ENV:
        return env_attr(st, &ctx, o);
    case DSQ_NCCL_INIT:
        return init_complete(st, &ctx, o, key, proc);
    default:
        break;
    }
    if (s && is_topo(o->kind)) {
        topo_line(s, o);
        s->host = ctx.host;
        s->lineno = ctx.lineno;
        s->t_us = ctx.t_us;
        if (ctx.rank >= 0)
            s->rank = ctx.rank;
    }
    return 0;
}

/* A run attribute with a number, at the line that printed it. */
static int world_attr(const dsq_line_ctx *at, const char *label, long v)
{
    char text[24];
    int k = snprintf(text, sizeof text, "%ld", v);
    dsq_mfield f = {{"value", 5}, (double)v, DSQ_U_NONE};
    dsq_emit_args a = {.ev = DSQ_EV_ATTR, .label = {label, strlen(label)},
                       .text = {text, k > 0 ? (size_t)k : 0}, .f = &f, .nf = 1,
                       .t_us = at->t_us, .lineno = at->lineno};
    return dsq_scan_emit(at, &a);
}

void dsq_nccl_reset(void *state)
{
    dsq_nccl_state *st = state;
    size_t used = (size_t)st->nslots * sizeof st->slot[0];
    memset(st->slot, 0, used);
    memset(st, 0, offsetof(dsq_nccl_state, slot));
    memset(st->label, 0, sizeof *st - offsetof(dsq_nccl_state, label));
}

int dsq_nccl_finish(void *state, const dsq_line_ctx *lc)
{
    dsq_nccl_state *st = state;
    int rc = 0;
    for (int i = 0; i < st->nslots && !rc; i++)
        rc = slot_flush(lc, &st->slot[i]);
    if (!rc)
        st->nslots = 0; /* all flushed, so zero */
    if (!rc && st->world_nranks > 0) {
        dsq_line_ctx at = st->world_at;
        at.sc = lc->sc;
        rc = world_attr(&at, "world_size", st->world_nranks);
    }
    if (!rc && st->world_nnodes > 0) {
        dsq_line_ctx at = st->nodes_at;
        at.sc = lc->sc;
        rc = world_attr(&at, "nodes", st->world_nnodes);
    }
    st->world_nranks = st->world_nnodes = 0;
    return rc;
}
