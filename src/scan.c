/* Line-to-event scanner (see scan.h).
 *
 * One line's way through: the UTF-8 BOM of a stream's first line is skipped;
 * prefix layers are peeled (pdsh host, rank tags, container stamps, ANSI codes;
 * a tqdm '\r' segment inherits its physical line's prefixes); the family
 * recognizers run in registry order (src/families.c) and the first match owns the
 * line; its time is resolved (own stamp, year-less stamp + stream year, or the
 * stream's last time); host and rank come from the prefixes, the recognizer, or
 * NCCL's (host, pid) -> rank map; then the line's single-line event is built, the
 * stateful handlers see it (and may claim it), the observer sees it, and only then
 * are its events released, so every consumer sees a line before its events.
 *
 * Memory reports: DeepSpeed prints a label line, then the MA line, then the CPU
 * line, from each rank, and ranks without a prefix interleave freely. A pending
 * report is kept per (host, rank): a label waits for its MA line, the MA line waits
 * for the CPU line; the event is emitted when the CPU line arrives, when a new
 * report starts on the same (host, rank), or at the end of the stream. So a report
 * missing its CPU line is still one event, with the four GPU numbers.
 */
#include "scan.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsq/dsq.h"
#include "dict.h"
#include "fam_nccl.h"
#include "idmap.h"
#include "lines.h"
#include "num.h"
#include "shapes.h"

#define MAX_PENDING 64 /* a bit each in pend_used */
_Static_assert(MAX_PENDING == 64, "pend_used has a bit for each slot, and ~0 when all are taken");
/* (host, pid) -> rank of the processes a stream names (proc_rank): a table of
 * room for PROCS_FIRST at first, twice as much each time it is full, up to PROCS_MAX
 * (more are not remembered). */
#define PROCS_FIRST 512
#define PROCS_MAX (1 << 20)
#define MAYBE_HOSTS 16 /* maybe-host names (pdsh.re) taken for hosts in a stream */
#define PDSH_HOSTS 4   /* pdsh host prefixes known without the grammar */
/* (host, rank) pairs a stream counts the lines of: room for RANKS_FIRST at first
 * (no allocation on most streams), twice as much each time it is full, up to
 * RANKS_MAX (more go uncounted). */
#define RANKS_FIRST 512
#define RANKS_MAX (1 << 20)

/* Lines of one (host, rank) in the stream: which ranks are present. */
typedef struct rank_count {
    uint32_t host;
    int32_t rank;
    uint32_t lines;
    uint32_t first_line;
    int64_t first_t;
} rank_count;

/* A process named in the stream: the rank its biggest communicator gave it. */
typedef struct proc_info {
    int rank, nranks; /* nranks: of the communicator that named the rank, -1 unknown */
} proc_info;
#define LINE_EVENTS 16 /* events one line may complete before they go out */
#define NAME_SLOTS 512  /* field names recently interned: (length, bytes) -> id */
#define NAME_MAX_CACHED 32

typedef struct name_slot {
    char s[NAME_MAX_CACHED];
    uint32_t n, id; /* n == 0: empty */
} name_slot;

typedef struct pending {
    uint32_t host;
    int32_t rank;
    uint32_t label;
    int has_ma;
    uint32_t seq; /* order of creation: reports are joined first in, first out */
    dsq_event ev;
} pending;

enum { F_MA, F_MAX_MA, F_CA, F_MAX_CA, F_CPU_USED, F_CPU_PERCENT, F_COUNT };
static const char *const field_names[F_COUNT] = {"MA", "Max_MA", "CA", "Max_CA", "CPU_used",
                                                 "CPU_percent"};

struct dsq_scan {
    dsq_scan_params p;
    uint32_t fid[F_COUNT];
    uint32_t default_host;
    int default_rank;
    int64_t last_t;
    int year;           /* for year-less stamps */
    int64_t year_lo, year_hi; /* a printed time in [lo, hi) is in `year`: no recomputing */
    int64_t written_us; /* the file's mtime while the year still comes from it, else 0 */
    uint32_t prev_host; /* host of the previous line: tqdm '\r' segments share it */
    int prev_rank;
    uint32_t lineno;
    /* last host prefix seen, to skip the dictionary for repeated prefixes */
    char host_cache[256];
    size_t host_cache_n;
    uint32_t host_cache_id;
    pending pend[MAX_PENDING];
    uint64_t pend_used; /* bit i: pend[i] is in use (its bits alone are visited) */
    uint32_t pend_seq;
    uint64_t hosts_seen[MAYBE_HOSTS]; /* hashes of maybe-host names taken as hosts */
    unsigned nhosts_seen;
    /* the last PDSH_HOSTS pdsh host prefixes taken, and their ids: a launcher log
       interleaves its hosts' lines */
    struct {
        char text[64];
        size_t n;
        uint32_t id;
    } pdsh[PDSH_HOSTS];
    unsigned pdsh_last;   /* the one taken last */
    unsigned pdsh_next;   /* the one a new host replaces (round robin) */
    int pdsh_mixed;       /* they are not all of one length */
    int quote_seen;       /* the stream is a markdown quote ("> " layers taken) */
    int bracket_seen;     /* "[N] " layers taken */
    int bracket_lines;    /* ... and they are line numbers, not ranks */
    int bracket_steps;    /* consecutive lines whose number was the previous one's + 1 */
    int bracket_repeat;   /* a number came twice in a row: ranks */
    long bracket_last;
    rank_count *ranks;   /* the stream's (host, rank) pairs in the order they came */
    int nranks, ranks_cap;
    dsq_idmap *rank_map; /* host << 32 | rank -> 1 + its place in ranks */
    int rank_last;       /* place of the previous line's pair, -1 none */
    uint32_t fid_lines;
    int mem_cpu_seen;   /* this stream's memory reports have CPU lines */
    dsq_scan_stats st;
    proc_info *procs;    /* the stream's processes in the order they came */
    size_t nprocs, procs_cap;
    dsq_idmap *proc_map; /* a process's hash (proc_rank) -> 1 + its place in procs */
    uint64_t proc_h;       /* the hash of the last (host, pid) proc_rank saw: */
    uint32_t proc_h_host;  /* NCCL prints a process's lines in runs */
    size_t proc_h_n;       /* 0: none */
    uint32_t proc_h_at;    /* its entry in proc_map, 0: not known (look it up) */
    char proc_h_s[24];
    unsigned char *fam_state;   /* all families' handler states, one allocation */
    /* Events completed by the current line wait here until the observer has seen
     * the line (so the line comes first in `explain` and golden output, and a
     * handler can claim the line for its family before anyone looks at it). */
    int deferring;
    dsq_shapes *shapes; /* NULL: DSQ_LINE_SHAPES=0 */
    int shapes_check;   /* DSQ_LINE_SHAPES=check: every shape's answer checked */
    unsigned char *check_state; /* shapes_check: a handler's state before a call */
    int shapes_stats;   /* DSQ_LINE_SHAPES=stats: counts on stderr when freed */
    int after_nccl;     /* the line before was NCCL's: no shape lookup for this one */
    dsq_nccl_memo nccl_memo; /* with shapes on: the last NCCL channel line, for the next */
    dsq_emit_ids *line_ids; /* the names' ids the line's shape keeps, or NULL */
    int nqueued;
    dsq_event queue[LINE_EVENTS];
    size_t fam_state_size;
    size_t fam_off[64];         /* offset of each registry row's state */
    unsigned char handler[64];  /* registry rows with a handler, in order */
    int nhandlers;
    uint64_t handlers_all;      /* a bit for each handler */
    uint64_t active;            /* bit k: handler[k]'s state was active after its last call
                                   (only a handler changes its state): no load of the state
                                   of a handler the line does not concern */
    uint64_t wants[DSQ_FAM_COUNT]; /* bit k: handler[k] sees this family's lines */
    name_slot names[NAME_SLOTS]; /* the dictionary never renumbers: kept across streams */
};

int dsq_scan_new(const dsq_scan_params *params, dsq_scan **out)
{
    dsq_scan *sc = calloc(1, sizeof *sc);
    if (!sc)
        return DSQ_ENOMEM;
    sc->p = *params;
    for (int i = 0; i < F_COUNT; i++) {
        sc->fid[i] = dsq_dict_intern(sc->p.dict, field_names[i], strlen(field_names[i]));
        if (!sc->fid[i]) {
            free(sc);
            return DSQ_ENOMEM;
        }
    }
    sc->fid_lines = dsq_dict_intern(sc->p.dict, "lines", 5);
    sc->ranks_cap = RANKS_FIRST;
    sc->procs_cap = PROCS_FIRST;
    if (!sc->fid_lines || !(sc->ranks = malloc((size_t)sc->ranks_cap * sizeof *sc->ranks)) ||
        dsq_idmap_new(RANKS_FIRST, &sc->rank_map) ||
        !(sc->procs = malloc(sc->procs_cap * sizeof *sc->procs)) ||
        dsq_idmap_new(PROCS_FIRST, &sc->proc_map)) {
        dsq_scan_free(sc);
        return DSQ_ENOMEM;
    }
    for (size_t i = 0; i < dsq_nfamilies && i < 64; i++) {
        if (dsq_families[i].handle) {
            for (int f = 0; f < DSQ_FAM_COUNT; f++)
                if (dsq_families[i].family == f || (dsq_families[i].watch & (1u << f)))
                    sc->wants[f] |= 1ull << sc->nhandlers;
            sc->handler[sc->nhandlers++] = (unsigned char)i;
        }
        sc->fam_off[i] = sc->fam_state_size;
        sc->fam_state_size += (dsq_families[i].state_size + 15) & ~(size_t)15;
    }
    sc->handlers_all = sc->nhandlers < 64 ? (1ull << sc->nhandlers) - 1 : ~0ull;
    if (sc->fam_state_size && !(sc->fam_state = calloc(1, sc->fam_state_size))) {
        dsq_scan_free(sc);
        return DSQ_ENOMEM;
    }
    const char *shapes = getenv("DSQ_LINE_SHAPES");
    sc->shapes_check = shapes && strcmp(shapes, "check") == 0;
    if (sc->shapes_check && sc->fam_state_size &&
        !(sc->check_state = malloc(sc->fam_state_size))) {
        dsq_scan_free(sc);
        return DSQ_ENOMEM;
    }
    sc->shapes_stats = shapes && strcmp(shapes, "stats") == 0;
    if (!sc->p.no_shapes && !(shapes && strcmp(shapes, "0") == 0) &&
        dsq_shapes_new(&sc->shapes) != 0) {
        dsq_scan_free(sc);
        return DSQ_ENOMEM;
    }
    *out = sc;
    return 0;
}

void dsq_scan_free(dsq_scan *sc)
{
    if (!sc)
        return;
    free(sc->fam_state);
    free(sc->check_state);
    if (sc->shapes && sc->shapes_stats) {
        const dsq_shapes_stats *st = dsq_shapes_stats_get(sc->shapes);
        fprintf(stderr, "dsq: line shapes: %llu lines answered, %llu recognized, %llu shapes "
                        "learned, %llu refused\n",
                (unsigned long long)st->hits, (unsigned long long)st->misses,
                (unsigned long long)st->learned, (unsigned long long)st->refused);
    }
    dsq_shapes_free(sc->shapes);
    free(sc->ranks);
    dsq_idmap_free(sc->rank_map);
    free(sc->procs);
    dsq_idmap_free(sc->proc_map);
    free(sc);
}

/* Forgets the stream's (host, rank) pairs. */
static void ranks_clear(dsq_scan *sc)
{
    dsq_idmap_clear(sc->rank_map);
    sc->nranks = 0;
    sc->rank_last = -1;
}

void dsq_scan_begin(dsq_scan *sc, uint32_t default_host, int default_rank)
{
    sc->default_host = default_host;
    sc->default_rank = default_rank;
    sc->last_t = DSQ_TIME_NONE;
    sc->year = 1970;
    sc->year_lo = sc->year_hi = 0;
    sc->written_us = 0;
    sc->prev_host = default_host;
    sc->prev_rank = default_rank;
    sc->lineno = 0;
    sc->after_nccl = 0;
    sc->host_cache_n = 0;
    sc->host_cache_id = 0;
    sc->pend_used = 0; /* a slot is cleared when taken (21 KB) */
    sc->pend_seq = 0;
    memset(sc->hosts_seen, 0, sizeof sc->hosts_seen);
    sc->nhosts_seen = 0;
    sc->quote_seen = sc->bracket_seen = sc->bracket_lines = 0;
    for (int i = 0; i < PDSH_HOSTS; i++)
        sc->pdsh[i].n = 0;
    sc->pdsh_mixed = 0;
    sc->bracket_steps = sc->bracket_repeat = 0;
    sc->bracket_last = -2;
    ranks_clear(sc);
    sc->mem_cpu_seen = 0;
    dsq_idmap_clear(sc->proc_map);
    sc->nprocs = 0;
    sc->proc_h_n = 0;
    sc->deferring = 0;
    sc->nqueued = 0;
    memset(&sc->st, 0, sizeof sc->st);
    for (size_t i = 0; sc->fam_state && i < dsq_nfamilies; i++) {
        unsigned char *state = sc->fam_state + sc->fam_off[i];
        if (dsq_families[i].reset)
            dsq_families[i].reset(state);
        else
            memset(state, 0, dsq_families[i].state_size);
    }
    sc->active = 0;
}

const dsq_scan_stats *dsq_scan_stats_get(const dsq_scan *sc) { return &sc->st; }

static uint32_t host_id(dsq_scan *sc, dsq_span h)
{
    if (h.n == sc->host_cache_n && h.n <= sizeof sc->host_cache &&
        dsq_same_bytes(h.p, sc->host_cache, h.n))
        return sc->host_cache_id;
    uint32_t id = dsq_dict_intern(sc->p.dict, h.p, h.n);
    if (h.n <= sizeof sc->host_cache) {
        memcpy(sc->host_cache, h.p, h.n);
        sc->host_cache_n = h.n;
        sc->host_cache_id = id;
    }
    return id;
}

static int emit(dsq_scan *sc, const dsq_event *ev)
{
    sc->st.events++;
    if (sc->deferring && sc->nqueued < LINE_EVENTS) {
        unsigned nf = ev->nf < DSQ_EV_MAXF ? ev->nf : DSQ_EV_MAXF;
        memcpy(&sc->queue[sc->nqueued++], ev, offsetof(dsq_event, f) + nf * sizeof ev->f[0]);
        return 0;
    }
    return sc->p.emit(sc->p.ctx, ev);
}

/* Hands the current line's queued events to the sink, in the order they came. */
static int release_events(dsq_scan *sc)
{
    int rc = 0;
    for (int i = 0; i < sc->nqueued && !rc; i++)
        rc = sc->p.emit(sc->p.ctx, &sc->queue[i]);
    sc->nqueued = 0;
    sc->deferring = 0;
    return rc;
}

/* The oldest pending report of (host, rank) that has (want_ma 1) or still lacks
 * (want_ma 0) its MA line; NULL if none. */
static pending *pending_oldest(dsq_scan *sc, uint32_t host, int rank, int want_ma)
{
    pending *best = NULL;
    for (uint64_t used = sc->pend_used; used; used &= used - 1) {
        pending *pd = &sc->pend[__builtin_ctzll(used)];
        if (pd->host == host && pd->rank == rank && pd->has_ma == want_ma &&
            (!best || pd->seq < best->seq))
            best = pd;
    }
    return best;
}

static int flush_pending(dsq_scan *sc, pending *pd)
{
    int rc = pd->has_ma ? emit(sc, &pd->ev) : 0;
    memset(pd, 0, sizeof *pd);
    sc->pend_used &= ~(1ull << (pd - sc->pend));
    return rc;
}

/* A new pending report of (host, rank); when the table is full the oldest report
 * is emitted (or dropped, if it has no MA line yet) to make room. */
static pending *pending_new(dsq_scan *sc, uint32_t host, int rank, int *rc)
{
    pending *slot = ~sc->pend_used ? &sc->pend[__builtin_ctzll(~sc->pend_used)] : NULL;
    if (!slot) {
        slot = &sc->pend[0];
        for (int i = 1; i < MAX_PENDING; i++)
            if (sc->pend[i].seq < slot->seq)
                slot = &sc->pend[i];
        *rc = flush_pending(sc, slot);
    }
    memset(slot, 0, sizeof *slot);
    sc->pend_used |= 1ull << (slot - sc->pend);
    slot->host = host;
    slot->rank = rank;
    slot->seq = ++sc->pend_seq;
    return slot;
}

/* Emits every report of (host, rank) that has its MA line (the reports a new one
 * completes, in a stream whose reports have no CPU line). */
static int flush_key(dsq_scan *sc, uint32_t host, int rank)
{
    pending *pd;
    int rc = 0;
    while (!rc && (pd = pending_oldest(sc, host, rank, 1)) != NULL)
        rc = flush_pending(sc, pd);
    return rc;
}

static void add_field(dsq_event *ev, uint32_t name, const dsq_match *m, int i)
{
    if (ev->nf >= DSQ_EV_MAXF || i >= m->nv)
        return;
    ev->f[ev->nf++] = (dsq_field){name, m->unit[i], m->v[i]};
}

static uint32_t intern_trimmed(dsq_scan *sc, dsq_span s)
{
    s = dsq_span_trim(s);
    return s.n ? dsq_dict_intern(sc->p.dict, s.p, s.n) : 0;
}

/* Feeds one line of a DeepSpeed memory report to the pending reports of its
 * (host, rank). Ranks that print without a prefix interleave their reports line
 * by line, all with the same label at the same moment; so reports are joined
 * first in, first out: a label opens a report, an MA line completes the oldest
 * report still waiting for one, a CPU line the oldest waiting for its CPU line.
 * A label unlike the waiting ones means those reports lost a line: a waiting
 * label is dropped, a report with its MA line is emitted without CPU figures; so
 * is every report before an MA line that finds no label waiting, and, in a stream
 * whose reports have shown no CPU line (older DeepSpeed prints none), every
 * report before a new label. */
static int memory_line(dsq_scan *sc, const dsq_match *m, uint32_t host, int rank)
{
    int rc = 0;
    pending *pd;
    switch (m->kind) {
    case DSQ_MK_DS_MEM_LABEL: {
        uint32_t label = intern_trimmed(sc, m->body);
        for (uint64_t used = sc->pend_used; used && !rc; used &= used - 1) {
            pd = &sc->pend[__builtin_ctzll(used)];
            if (pd->host != host || pd->rank != rank || (pd->label == label && sc->mem_cpu_seen))
                continue;
            if (pd->has_ma || pd->label != label)
                rc = flush_pending(sc, pd);
        }
        pd = pending_new(sc, host, rank, &rc);
        pd->label = label;
        return rc;
    }
    case DSQ_MK_DS_MEM_MA:
        pd = pending_oldest(sc, host, rank, 0);
        if (!pd) {
            if ((rc = flush_key(sc, host, rank)))
                return rc;
            pd = pending_new(sc, host, rank, &rc);
        }
        pd->has_ma = 1;
        pd->ev = (dsq_event){.kind = DSQ_EV_MEMORY, .rank = rank, .host = host,
                             .t_us = sc->last_t, .label = pd->label, .line = sc->lineno};
        for (int i = 0; i < 4; i++)
            add_field(&pd->ev, sc->fid[F_MA + i], m, i);
        return rc;
    case DSQ_MK_DS_MEM_CPU:
        sc->mem_cpu_seen = 1;
        pd = pending_oldest(sc, host, rank, 1);
        if (!pd) /* a CPU line with no MA line before it: nothing to join */
            return 0;
        add_field(&pd->ev, sc->fid[F_CPU_USED], m, 0);
        add_field(&pd->ev, sc->fid[F_CPU_PERCENT], m, 1);
        return flush_pending(sc, pd);
    default:
        return 0;
    }
}

void dsq_scan_set_year(dsq_scan *sc, int year)
{
    sc->year = year;
    sc->year_lo = sc->year_hi = 0;
}

void dsq_scan_set_written(dsq_scan *sc, int64_t t_us)
{
    sc->year = dsq_time_year(t_us);
    sc->year_lo = sc->year_hi = 0;
    sc->written_us = t_us;
}

/* Clears what recognizers read or fill; the field arrays are left as they are
 * (nf / nv say how much is valid), which keeps this off the per-line profile. */
void dsq_scan_match_init(dsq_match *m)
{
    m->kind = DSQ_MK_NONE;
    m->family = DSQ_FAM_OTHER;
    m->level = DSQ_LV_NONE;
    m->rank = -1;
    m->t_us = DSQ_TIME_NONE;
    /* each pointer and length stored alone: a shared compound literal was built on the
     * stack and read back 16 bytes at once, which waited for its two 8-byte stores */
    m->host.p = m->func.p = m->body.p = m->label.p = m->text.p = NULL;
    m->host.n = m->func.n = m->body.n = m->label.n = m->text.n = 0;
    m->nv = m->nf = m->ev = 0;
    m->civil.mo = 0;
    m->tod_us = -1;
    m->proc.p = NULL;
    m->proc.n = 0;
    m->nsrc = 0;
}

/* Resolves the line's time: its own stamp, a year-less stamp completed with the
 * stream's year, or the last time seen in the stream. */
/* A time-of-day stamp on the day of the stream's last time (the next day when the
 * clock went back by more than 12 h: midnight passed), or on the file's mtime day.
 * With neither, the line keeps no time of its own. */
static int64_t time_of_day(const dsq_scan *sc, int64_t tod)
{
    const int64_t day = 86400000000LL, half = day / 2;
    int64_t base = sc->last_t != DSQ_TIME_NONE ? sc->last_t : sc->written_us;
    if (base == DSQ_TIME_NONE || base == 0)
        return DSQ_TIME_NONE;
    int64_t t = base - ((base % day) + day) % day + tod;
    if (sc->last_t != DSQ_TIME_NONE && t < sc->last_t - half)
        t += day;
    else if (sc->last_t == DSQ_TIME_NONE && t > sc->written_us + half)
        t -= day;
    return t;
}

static void line_time(dsq_scan *sc, dsq_match *m)
{
    if (m->t_us == DSQ_TIME_NONE && m->civil.mo) {
        const dsq_civil *c = &m->civil;
        m->t_us = dsq_time_from_civil(c->y ? c->y : sc->year, c->mo, c->d, c->h, c->mi, c->s, c->us);
        /* the year came from the file's mtime: a stamp after the file was written
         * was printed the year before (a December log written in January) */
        if (!c->y && sc->written_us && m->t_us > sc->written_us + 86400000000LL)
            m->t_us = dsq_time_from_civil(sc->year - 1, c->mo, c->d, c->h, c->mi, c->s, c->us);
    } else if (m->t_us != DSQ_TIME_NONE) {
        if (m->t_us < sc->year_lo || m->t_us >= sc->year_hi) {
            sc->year = dsq_time_year(m->t_us);
            sc->year_lo = dsq_time_from_civil(sc->year, 1, 1, 0, 0, 0, 0);
            sc->year_hi = dsq_time_from_civil(sc->year + 1, 1, 1, 0, 0, 0, 0);
        }
        sc->written_us = 0; /* a printed year is better evidence than the mtime */
    } else if (m->tod_us >= 0) {
        m->t_us = time_of_day(sc, m->tod_us);
    }
    if (m->t_us != DSQ_TIME_NONE)
        sc->last_t = m->t_us;
}

/* The dictionary id of a field name. Events name the same few fields line after
 * line, so a small direct-mapped cache in front of the dictionary saves its hash
 * of the whole name and its probing (they were ~14% of scanning). The slot is
 * picked by the length and three of the name's bytes. */
static uint32_t field_id(dsq_scan *sc, const char *p, size_t n)
{
    if (n == 0 || n > NAME_MAX_CACHED)
        return dsq_dict_intern(sc->p.dict, p, n);
    unsigned char a = (unsigned char)p[0], b = (unsigned char)p[n - 1],
                  c = (unsigned char)p[n >> 1];
    uint32_t h = ((uint32_t)n * 0x9E3779B1u) ^ a ^ ((uint32_t)b << 8) ^ ((uint32_t)c << 16);
    h *= 0x85EBCA6Bu;
    name_slot *s = &sc->names[(h >> 20) & (NAME_SLOTS - 1)];
    if (s->n == n && dsq_same_bytes(s->s, p, n))
        return s->id;
    uint32_t id = dsq_dict_intern(sc->p.dict, p, n);
    if (id) {
        memcpy(s->s, p, n);
        s->n = (uint32_t)n;
        s->id = id;
    }
    return id;
}

/* An event being built: in its queue slot when the line's events wait (no copy of
 * it after), else in `local`; the header zeroed, the rest written as it comes. */
static dsq_event *event_start(dsq_scan *sc, dsq_event *local)
{
    dsq_event *e = sc->deferring && sc->nqueued < LINE_EVENTS ? &sc->queue[sc->nqueued] : local;
    memset(e, 0, offsetof(dsq_event, f));
    return e;
}

/* The event's label, text and fields, their names interned or kept in ids (a
 * shape's, may be NULL). Inlined: the call was ~2 % of a line's instructions. */
static inline __attribute__((always_inline)) int event_names(dsq_scan *sc, dsq_event *e,
                                                             dsq_span label, dsq_span text,
                                                             const dsq_mfield *f, int nf,
                                                             dsq_emit_ids *ids)
{
    if (label.n) {
        if (ids && ids->label_same && ids->label)
            e->label = ids->label;
        else if ((e->label = intern_trimmed(sc, label)) != 0 && ids && ids->label_same)
            ids->label = e->label;
    }
    if (text.n) {
        if (ids && ids->text_same && ids->text)
            e->text = ids->text;
        else if ((e->text = intern_trimmed(sc, text)) != 0 && ids && ids->text_same)
            ids->text = e->text;
    }
    /* the shape's field ids once found (bit i of vary set: found for each line) */
    uint32_t vary = ids ? ids->f_vary : ~0u;
    nf = nf < DSQ_EV_MAXF ? nf : DSQ_EV_MAXF;
    if (ids && ids->f_all) {
        for (int i = 0; i < nf; i++)
            e->f[i] = (dsq_field){ids->f[i], ids->unit[i], f[i].v};
    } else {
        for (int i = 0; i < nf; i++) {
            uint32_t id = vary >> i & 1 ? 0 : ids->f[i];
            if (!id) {
                if (!(id = field_id(sc, f[i].name.p, f[i].name.n)))
                    return DSQ_ENOMEM;
                if (!(vary >> i & 1))
                    ids->f[i] = id;
            }
            e->f[i] = (dsq_field){id, f[i].unit, f[i].v};
        }
        if (ids && !vary) { /* a shape's lines have as many fields: all found now */
            for (int i = 0; i < nf; i++)
                ids->unit[i] = f[i].unit;
            ids->f_all = 1;
        }
    }
    e->nf = (uint8_t)(nf > 0 ? nf : 0);
    return 0;
}

/* Queues the event built in its slot, or emits it. */
static int event_end(dsq_scan *sc, dsq_event *e)
{
    if (e != &sc->queue[sc->nqueued]) /* (the slot is taken only while there is room) */
        return emit(sc, e);
    sc->st.events++;
    sc->nqueued++;
    return 0;
}

int dsq_scan_emit(const dsq_line_ctx *lc, const dsq_emit_args *a)
{
    dsq_scan *sc = lc->sc;
    dsq_event local;
    dsq_event *e = event_start(sc, &local);
    e->kind = (uint16_t)a->ev;
    e->rank = a->set_rank ? a->rank : lc->rank;
    e->host = a->host.n ? dsq_dict_intern(sc->p.dict, a->host.p, a->host.n) : lc->host;
    e->t_us = a->t_us ? a->t_us : lc->t_us;
    e->line = a->lineno ? a->lineno : lc->lineno;
    int rc = event_names(sc, e, a->label, a->text, a->f, a->nf, a->ids);
    return rc ? rc : event_end(sc, e);
}

/* The line's own event (m->ev), as dsq_scan_emit with the line's host, rank,
 * time and number. */
static int emit_line_event(dsq_scan *sc, const dsq_line_ctx *lc, const dsq_match *m)
{
    dsq_event local;
    dsq_event *e = event_start(sc, &local);
    e->kind = (uint16_t)m->ev;
    e->rank = lc->rank;
    e->host = lc->host;
    e->t_us = lc->t_us;
    e->line = lc->lineno;
    int rc = event_names(sc, e, m->label, m->text, m->f, m->nf, sc->line_ids);
    return rc ? rc : event_end(sc, e);
}

/* Offers the line to every stateful family that wants it. A handler returning 1
 * claims the line for its family (continuation lines of a traceback, a table).
 * Handlers in `quiet` are not asked unless active (dsq_family_def.quiet). */
static int run_handlers(dsq_scan *sc, const dsq_line_ctx *lc, dsq_match *m, const char *line,
                        size_t len, uint64_t quiet)
{
    /* the handlers in order, each asked when it is active or the line's family (as the
     * handlers before it left it) is one it sees: the next is found from the bits */
    uint64_t left = sc->handlers_all;
    for (uint64_t go; (go = ((sc->wants[m->family] & ~quiet) | sc->active) & left) != 0;) {
        int k = __builtin_ctzll(go);
        uint64_t bit = 1ull << k;
        left &= ~(bit | (bit - 1));
        int i = sc->handler[k];
        const dsq_family_def *d = &dsq_families[i];
        dsq_fam_state *st = (dsq_fam_state *)(sc->fam_state + sc->fam_off[i]);
        st->claim_level = DSQ_LV_NONE;
        int rc = d->handle(st, lc, m, line, len);
        sc->active = st->active ? sc->active | bit : sc->active & ~bit;
        if (rc < 0)
            return rc;
        if (rc > 0 && (m->family == DSQ_FAM_OTHER || m->family == d->family)) {
            m->family = d->family;
            if (m->level == DSQ_LV_NONE)
                m->level = st->claim_level;
        }
    }
    return 0;
}

/* The handlers quiet for the lines of the shape whose ids these are, found at its
 * first line that asks. */
static uint64_t quiet_handlers(const dsq_scan *sc, dsq_emit_ids *ids, const dsq_match *m)
{
    if (!ids->quiet_known) {
        ids->quiet = 0;
        for (int k = 0; k < sc->nhandlers; k++) {
            const dsq_family_def *d = &dsq_families[sc->handler[k]];
            if (d->quiet && d->quiet(m))
                ids->quiet |= 1ull << k;
        }
        ids->quiet_known = 1;
    }
    return ids->quiet;
}

/* Whether only the line's own event reads the fields' names and units of the
 * shape's lines, once its ids have them all (f_all): every handler that sees the
 * shape's family is quiet for it, and it is neither a memory report's line nor
 * one naming a process. dsq_shapes_apply then leaves them out of the match while
 * no handler is active (recognize_line). */
static void lean_of(const dsq_scan *sc, dsq_emit_ids *ids, const dsq_match *m)
{
    ids->lean = ids->f_all && ids->quiet_known && !(sc->wants[m->family] & ~ids->quiet) &&
                !(m->kind >= DSQ_MK_DS_MEM_LABEL && m->kind <= DSQ_MK_DS_MEM_CPU) &&
                !m->proc.n;
    ids->lean_known = 1;
}

/* DSQ_LINE_SHAPES=check: asks each idle handler in `quiet` anyway (run_handlers
 * will not) and aborts unless it returned 0, left its state as it was and emitted
 * nothing. */
static void check_quiet(dsq_scan *sc, const dsq_line_ctx *lc, const dsq_match *m,
                        const char *line, size_t len, uint64_t quiet)
{
    for (uint64_t q = quiet & ~sc->active; q; q &= q - 1) {
        int i = sc->handler[__builtin_ctzll(q)];
        const dsq_family_def *d = &dsq_families[i];
        unsigned char *st = sc->fam_state + sc->fam_off[i];
        ((dsq_fam_state *)(void *)st)->claim_level = DSQ_LV_NONE;
        memcpy(sc->check_state, st, d->state_size);
        uint64_t events = sc->st.events;
        int rc = d->handle(st, lc, m, line, len);
        if (rc == 0 && sc->st.events == events && memcmp(sc->check_state, st, d->state_size) == 0)
            continue;
        fprintf(stderr, "dsq: the %s handler is not quiet for: %.*s\n", d->name, (int)len,
                line);
        abort();
    }
}

/* Peels prefix layers (each may name the host, rank or time), leaving the rest in
 * *line. Layers nest in any order ("gpu009: [rank3]: ..."); at most 8 are peeled. */
static int recognize_at(dsq_match *m, const char *line, size_t len);

/* Counts a line of (host, rank); the previous line's pair is tried first. */
static void count_rank(dsq_scan *sc, uint32_t host, int rank, int64_t t_us)
{
    rank_count *r;
    if (sc->rank_last >= 0 && (r = &sc->ranks[sc->rank_last])->rank == rank && r->host == host) {
        r->lines++;
        if (r->first_t == DSQ_TIME_NONE)
            r->first_t = t_us;
        return;
    }
    uint64_t key = (uint64_t)host << 32 | (uint32_t)rank;
    uint32_t at = dsq_idmap_get(sc->rank_map, key);
    if (at) {
        sc->rank_last = (int)at - 1;
        r = &sc->ranks[sc->rank_last];
        r->lines++;
        if (r->first_t == DSQ_TIME_NONE)
            r->first_t = t_us;
        return;
    }
    if (sc->nranks == sc->ranks_cap) { /* room for twice the pairs, up to RANKS_MAX */
        rank_count *more = sc->ranks_cap < RANKS_MAX
                               ? realloc(sc->ranks, 2 * (size_t)sc->ranks_cap * sizeof *more)
                               : NULL;
        if (!more)
            return; /* further ranks go uncounted */
        sc->ranks = more;
        sc->ranks_cap *= 2;
    }
    if (dsq_idmap_put(sc->rank_map, key, (uint32_t)sc->nranks + 1))
        return;
    sc->ranks[sc->nranks] = (rank_count){host, rank, 1, sc->lineno, t_us};
    sc->rank_last = sc->nranks++;
}

/* One rank_lines event per (host, rank) the stream had, in order of appearance. */
static int emit_ranks(dsq_scan *sc)
{
    for (int k = 0; k < sc->nranks; k++) {
        const rank_count *r = &sc->ranks[k];
        dsq_event e = {.kind = DSQ_EV_RANK_LINES, .rank = r->rank, .host = r->host,
                       .t_us = r->first_t, .line = r->first_line, .nf = 1};
        e.f[0] = (dsq_field){sc->fid_lines, DSQ_U_NONE, (double)r->lines};
        int rc = emit(sc, &e);
        if (rc)
            return rc;
    }
    ranks_clear(sc);
    return 0;
}

/* Whether a maybe-host prefix ("brutasse: ", "bf16: ", see pdsh.re) is a host:
 * one already taken in this stream is; otherwise what follows it must be a log
 * line: a rank tag or any family's line after a lookalike ("bf16"), a stamped
 * line or an NCCL line naming the same host after a letters-only name (so
 * "RuntimeError: " and "Warning: " stay what they are). Runs only for such
 * prefixes, which are rare. */
static int maybe_host(dsq_scan *sc, const dsq_match *m)
{
    uint64_t h = dsq_hash64(m->host.p, m->host.n, 0x9e3779b9) | 1;
    for (int i = 0; i < MAYBE_HOSTS; i++)
        if (sc->hosts_seen[i] == h)
            return 1;
    int letters_only = 1;
    for (size_t i = 0; i < m->host.n; i++)
        if (!((m->host.p[i] >= 'A' && m->host.p[i] <= 'Z') ||
              (m->host.p[i] >= 'a' && m->host.p[i] <= 'z')))
            letters_only = 0;
    dsq_match t;
    dsq_scan_match_init(&t);
    int ok = 0;
    if (!letters_only && dsq_gram_prefix(m->body.p, m->body.n, &t) && t.rank >= 0)
        ok = 1;
    dsq_scan_match_init(&t);
    if (!ok && recognize_at(&t, m->body.p, m->body.n))
        ok = !letters_only || t.t_us != DSQ_TIME_NONE || t.civil.mo ||
             (t.host.n == m->host.n && memcmp(t.host.p, m->host.p, t.host.n) == 0);
    if (ok)
        sc->hosts_seen[sc->nhosts_seen++ % MAYBE_HOSTS] = h;
    return ok;
}

/* Whether a maybe-layer of prefix.re (a markdown quote "> ", a "[155] " tag) is one:
 * it is when the stream already had it, or when a log line follows. A "[N] " tag
 * is a rank unless its numbers count up line by line (a viewer's line numbers):
 * five lines numbered N..N+4 with no number seen twice before (ranks repeat). */
static int maybe_layer(dsq_scan *sc, dsq_match *m, const char *line, int rank_before)
{
    int quote = line[0] == '>';
    if (!quote) {
        long v = strtol(line + 1, NULL, 10);
        if (v == sc->bracket_last)
            sc->bracket_repeat = 1;
        sc->bracket_steps = v == sc->bracket_last + 1 ? sc->bracket_steps + 1 : 0;
        if (sc->bracket_steps >= 4 && !sc->bracket_repeat)
            sc->bracket_lines = 1;
        sc->bracket_last = v;
        if (sc->bracket_lines)
            m->rank = rank_before;
    }
    int *seen = quote ? &sc->quote_seen : &sc->bracket_seen;
    if (*seen)
        return 1;
    dsq_match t;
    dsq_scan_match_init(&t);
    int ok = dsq_gram_prefix(m->body.p, m->body.n, &t) == 1 ||
             dsq_gram_pdsh(m->body.p, m->body.n, &t) == 1;
    dsq_scan_match_init(&t);
    ok = ok || recognize_at(&t, m->body.p, m->body.n);
    *seen = ok;
    return ok;
}

/* The slot of a pdsh host prefix taken before that the line starts with (the
 * grammar would take it again), or -1. */
static int pdsh_again(const dsq_scan *sc, const char *line, size_t len)
{
    if (!len || !dsq_gram_host_first((unsigned char)line[0]))
        return -1;
    for (unsigned k = 0; k < PDSH_HOSTS; k++) {
        unsigned i = (sc->pdsh_last + k) % PDSH_HOSTS;
        size_t pn = sc->pdsh[i].n;
        if (!pn)
            continue;
        if (len <= pn + 1 || line[pn] != ':' || line[pn + 1] != ' ') {
            if (!sc->pdsh_mixed)
                return -1; /* the others have this length too: no ": " after it */
            continue;
        }
        if (dsq_same_bytes(line, sc->pdsh[i].text, pn))
            return (int)i;
    }
    return -1;
}

static void peel_prefixes(dsq_scan *sc, dsq_match *m, const char **line, size_t *len,
                          uint32_t *host)
{
    for (int layer = 0; layer < 8; layer++) {
        int rank_before = m->rank;
        if (dsq_gram_date_first(*line, *len) || !*len ||
            !dsq_gram_layer_first((unsigned char)**line))
            return; /* a DeepSpeed logger's line after its host, or a line no layer
                       starts: neither grammar asked */
        int again = pdsh_again(sc, *line, *len); /* no grammar */
        if (again >= 0) {
            size_t pn = sc->pdsh[again].n;
            m->kind = DSQ_MK_PREFIX;
            m->host = (dsq_span){*line, pn};
            *host = sc->pdsh[again].id;
            sc->pdsh_last = (unsigned)again;
            *line += pn + 2;
            *len -= pn + 2;
            m->body = (dsq_span){*line, *len};
            continue;
        }
        dsq_span keep_host = m->host, keep_body = m->body;
        int keep_kind = m->kind;
        int ph = dsq_gram_pdsh(*line, *len, m);
        if (ph == 2 && !maybe_host(sc, m)) {
            m->host = keep_host;
            m->body = keep_body;
            m->kind = keep_kind;
            return;
        }
        int pr = 0;
        if (ph) {
            *host = host_id(sc, m->host);
            unsigned i = sc->pdsh_next++ % PDSH_HOSTS;
            if (m->host.n <= sizeof sc->pdsh[i].text) {
                memcpy(sc->pdsh[i].text, m->host.p, m->host.n);
                sc->pdsh[i].n = m->host.n;
                sc->pdsh[i].id = *host;
                sc->pdsh_last = i;
                sc->pdsh_mixed = 0;
                for (int k = 0; k < PDSH_HOSTS; k++)
                    if (sc->pdsh[k].n && sc->pdsh[k].n != m->host.n)
                        sc->pdsh_mixed = 1;
            }
        } else if ((pr = dsq_gram_prefix(*line, *len, m)) == 0) {
            return;
        } else if (pr == 2 && !maybe_layer(sc, m, *line, rank_before)) {
            m->rank = rank_before;
            m->body = keep_body;
            m->kind = keep_kind;
            return;
        }
        *line = m->body.p;
        *len = m->body.n;
    }
}

/* The size of the communicator a line names ("nranks N"), or -1. */
static int comm_size(const dsq_match *m)
{
    for (int i = 0; i < m->nf; i++)
        if (m->f[i].name.n == 6 && memcmp(m->f[i].name.p, "nranks", 6) == 0)
            return dsq_num_small_int(m->f[i].v);
    return -1;
}

/* Remembers or applies the rank of a process (host, pid): NCCL names a process's
 * global rank once ("comm ... rank R nranks N") and prints its other lines with
 * the pid only. A communicator smaller than the one that named the rank (tensor or
 * pipeline parallel groups: "rank 1 nranks 8" of the process of rank 9 of 16) does
 * not change it; its lines keep the global rank. Every process the stream names is
 * remembered (up to PROCS_MAX): 256 slots direct-mapped by hash forgot a colliding
 * older one, and on a launcher log of 64 processes 10 of their later NCCL lines lost
 * their rank. A process is known by a 64-bit hash of its host's name and its pid,
 * not the host's id (an indexing worker's dictionary numbers hosts otherwise than
 * the index's), so the table holds the same in every thread. */
static int proc_rank(dsq_scan *sc, uint32_t host, dsq_span proc, int rank, int nranks)
{
    uint64_t h;
    uint32_t at = 0;
    if (sc->proc_h_n && proc.n == sc->proc_h_n && host == sc->proc_h_host &&
        dsq_same_bytes(proc.p, sc->proc_h_s, proc.n)) {
        h = sc->proc_h;
        at = sc->proc_h_at;
    } else {
        size_t hn;
        const char *hs = dsq_dict_str(sc->p.dict, host, &hn);
        h = dsq_hash64(proc.p, proc.n, dsq_hash64(hs, hn, 0)) | 1;
        sc->proc_h = h;
        sc->proc_h_host = host;
        sc->proc_h_n = proc.n <= sizeof sc->proc_h_s ? proc.n : 0; /* longer: not kept */
        sc->proc_h_at = 0;
        memcpy(sc->proc_h_s, proc.p, sc->proc_h_n);
    }
    if (!at) /* (an entry once made stays where it is) */
        at = sc->proc_h_at = dsq_idmap_get(sc->proc_map, h);
    if (rank < 0)
        return at ? sc->procs[at - 1].rank : -1;
    if (at) {
        if (nranks < sc->procs[at - 1].nranks)
            return sc->procs[at - 1].rank; /* a smaller communicator's rank */
        sc->procs[at - 1] = (proc_info){rank, nranks};
        return rank;
    }
    if (sc->nprocs == sc->procs_cap) { /* room for twice the processes, up to PROCS_MAX */
        proc_info *more = sc->procs_cap < PROCS_MAX
                              ? realloc(sc->procs, 2 * sc->procs_cap * sizeof *more)
                              : NULL;
        if (!more)
            return rank; /* not remembered */
        sc->procs = more;
        sc->procs_cap *= 2;
    }
    if (dsq_idmap_put(sc->proc_map, h, (uint32_t)sc->nprocs + 1) == 0)
        sc->procs[sc->nprocs++] = (proc_info){rank, nranks};
    return rank;
}

static int recognize_at(dsq_match *m, const char *line, size_t len)
{
    for (size_t i = 0; i < dsq_nfamilies; i++) {
        if (dsq_families[i].recognize(line, len, m)) {
            m->family = dsq_families[i].family;
            return 1;
        }
    }
    return 0;
}

/* Where a tqdm bar that ended without a '\r' ends ("... 1.01s/it]" or "it/s]")
 * when another line was printed right after it, else NULL. */
static const char *after_bar(const char *line, size_t len)
{
    const char *end = line + len, *p = line;
    while (end - p > 6 && (p = memchr(p, ']', (size_t)(end - p - 1))) != NULL) {
        if (p - line >= 4 && p[1] != ' ' &&
            (memcmp(p - 4, "it/s", 4) == 0 || memcmp(p - 4, "s/it", 4) == 0))
            return p + 1;
        p++;
    }
    return NULL;
}

/* The first recognizer that takes the line owns it. A line nobody takes may be a
 * progress bar with a logger line glued after it: the glued line is recognized. */
void dsq_scan_recognize(dsq_match *m, const char *line, size_t len)
{
    if (recognize_at(m, line, len))
        return;
    const char *g = memchr(line, '|', len) ? after_bar(line, len) : NULL;
    if (g) {
        dsq_scan_match_init(m);
        recognize_at(m, g, len - (size_t)(g - line));
    }
}

/* DSQ_LINE_SHAPES=check: the recognizers' match of a line a line shape or the NCCL
 * memo (`by`) answered, from the match as the prefix layers left it; it must be that
 * answer (for an NCCL line, the parse its handler reads too). A difference is a bug
 * in the shape or memo (or a recognizer that decides by a digit's value), reported
 * and fatal. */
static void check_answer(const dsq_match *before, const dsq_match *got, const char *line,
                         size_t len, const char *by)
{
    dsq_match want = *before;
    dsq_scan_recognize(&want, line, len);
    if (dsq_shapes_same_match(&want, got) &&
        (want.family != DSQ_FAM_NCCL ||
         dsq_nccl_line_same((const dsq_nccl_line *)want.aux.bytes,
                            (const dsq_nccl_line *)got->aux.bytes)))
        return;
    fprintf(stderr, "dsq: %s gave another match than the recognizers for: %.*s\n", by,
            (int)len, line);
    abort();
}

/* The line's match: from a learned shape, else from the recognizers (and learned). */
static void recognize_line(dsq_scan *sc, dsq_match *m, const char *line, size_t len)
{
    sc->line_ids = NULL;
    if (!sc->shapes) {
        dsq_scan_recognize(m, line, len);
        return;
    }
    if (sc->after_nccl) {
        /* NCCL lines come in runs and have no shapes (shapes.h): the line after one
         * is most likely another, and a lookup would only cost; a channel line
         * after another of its process is read from the memo */
        dsq_match before;
        if (sc->shapes_check)
            before = *m;
        if (dsq_nccl_memo_match(&sc->nccl_memo, line, len, m)) {
            if (sc->shapes_check)
                check_answer(&before, m, line, len, "the NCCL memo");
            return;
        }
        if (dsq_nccl_memo_head(&sc->nccl_memo, line, len, m)) { /* its header: the message only */
            if (sc->shapes_check)
                check_answer(&before, m, line, len, "the NCCL header memo");
            dsq_nccl_memo_keep(&sc->nccl_memo, line, len, m, 1);
            return;
        }
        dsq_scan_recognize(m, line, len);
        if ((sc->after_nccl = m->family == DSQ_FAM_NCCL) != 0)
            dsq_nccl_memo_keep(&sc->nccl_memo, line, len, m, 0);
        return;
    }
    dsq_match before;
    if (sc->shapes_check)
        before = *m;
    /* the fields' names and units from the shape's ids only when no handler is
     * active and nothing else reads the match (lean_of) */
    int lean = !sc->active && !sc->p.observe && !sc->shapes_check;
    if (dsq_shapes_apply(sc->shapes, line, len, m, &sc->line_ids, lean)) {
        if (sc->shapes_check)
            check_answer(&before, m, line, len, "line shape");
        return;
    }
    dsq_scan_recognize(m, line, len);
    dsq_shapes_learn(sc->shapes, line, len, m);
    if ((sc->after_nccl = m->family == DSQ_FAM_NCCL) != 0)
        dsq_nccl_memo_keep(&sc->nccl_memo, line, len, m, 0);
}

int dsq_scan_line(void *scanner, const char *line, size_t len, unsigned flags)
{
    dsq_scan *sc = scanner;
    dsq_match m;
    uint32_t host = sc->default_host;
    const char *rest = line;
    size_t rest_n = len;
    int rc = 0;
    sc->lineno++;
    sc->st.lines++;
    if (flags & DSQ_LINE_CUT)
        sc->st.cut++;
    dsq_scan_match_init(&m);
    if (len >= 3 && line[0] == '\xEF' && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
        rest += 3; /* a UTF-8 byte order mark (files concatenated: anywhere) */
        rest_n -= 3;
    }
    peel_prefixes(sc, &m, &rest, &rest_n, &host);
    int prefix_rank = m.rank;
    dsq_span prefix_host = m.host;
    if ((flags & DSQ_LINE_AFTER_CR) && rest == line) { /* a tqdm segment: same prefixes */
        host = sc->prev_host;
        prefix_rank = sc->prev_rank;
        if (host)
            m.host.p = dsq_dict_str(sc->p.dict, host, &m.host.n);
    }
    recognize_line(sc, &m, rest, rest_n);
    line_time(sc, &m);
    if (m.host.n && m.host.p != prefix_host.p && !prefix_host.n) /* e.g. NCCL's host: */
        host = host_id(sc, m.host);
    if (m.proc.n)
        m.rank = proc_rank(sc, host, m.proc, m.rank, m.rank >= 0 ? comm_size(&m) : -1);
    int rank = m.rank >= 0 ? m.rank : prefix_rank >= 0 ? prefix_rank : sc->default_rank;
    m.rank = rank;
    sc->prev_host = host;
    sc->prev_rank = prefix_rank >= 0 ? prefix_rank : sc->default_rank;
    dsq_line_ctx lc = {sc, host, rank, sc->last_t, sc->lineno};
    sc->deferring = 1;
    if (m.kind >= DSQ_MK_DS_MEM_LABEL && m.kind <= DSQ_MK_DS_MEM_CPU)
        rc = memory_line(sc, &m, host, rank);
    else if (m.ev)
        rc = emit_line_event(sc, &lc, &m);
    if (!rc && sc->fam_state) {
        uint64_t quiet = sc->line_ids ? quiet_handlers(sc, sc->line_ids, &m) : 0;
        if (sc->line_ids && !sc->line_ids->lean_known && sc->line_ids->f_all)
            lean_of(sc, sc->line_ids, &m);
        if (quiet && sc->shapes_check) {
            check_quiet(sc, &lc, &m, rest, rest_n, quiet);
            quiet = 0;
        }
        rc = run_handlers(sc, &lc, &m, rest, rest_n, quiet);
    }
    if (sc->p.observe)
        sc->p.observe(sc->p.observe_ctx, &m, line, len, flags);
    int rrc = release_events(sc);
    rc = rc ? rc : rrc;
    sc->st.family_lines[m.family]++;
    sc->st.level_lines[m.level]++;
    if (rank >= 0)
        count_rank(sc, host, rank, lc.t_us);
    return rc;
}

int dsq_scan_end(dsq_scan *sc)
{
    dsq_line_ctx lc = {sc, sc->default_host, sc->default_rank, sc->last_t, sc->lineno};
    for (size_t i = 0; i < dsq_nfamilies && i < 64; i++) {
        const dsq_family_def *d = &dsq_families[i];
        if (!d->finish)
            continue;
        int rc = d->finish(sc->fam_state + sc->fam_off[i], &lc);
        if (rc)
            return rc;
    }
    int rrc = emit_ranks(sc);
    if (rrc)
        return rrc;
    for (;;) { /* what still waits for a CPU line, in the order it began */
        pending *old = NULL;
        for (uint64_t used = sc->pend_used; used; used &= used - 1)
            if (!old || sc->pend[__builtin_ctzll(used)].seq < old->seq)
                old = &sc->pend[__builtin_ctzll(used)];
        if (!old)
            return 0;
        int rc = flush_pending(sc, old);
        if (rc)
            return rc;
    }
}
