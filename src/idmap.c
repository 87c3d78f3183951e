/* Map of 64-bit keys to places (see idmap.h). */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "dsq/dsq.h"

typedef struct slot {
    uint64_t key;
    uint32_t value;
    uint32_t gen; /* the map's generation when set; another: a free slot */
} slot;

struct dsq_idmap {
    slot *s;
    size_t cap, n; /* cap: a power of two, at least 2 n */
    uint32_t gen;  /* never 0: calloc'd slots are free */
};

/* The slot holding key, or the free one where it goes. */
static size_t find(const dsq_idmap *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = (size_t)dsq_mix64(key) & mask;
    while (m->s[i].gen == m->gen && m->s[i].key != key)
        i = (i + 1) & mask;
    return i;
}

int dsq_idmap_new(size_t entries, dsq_idmap **out)
{
    dsq_idmap *m = calloc(1, sizeof *m);
    size_t cap = 16;
    while (cap < 2 * entries)
        cap *= 2;
    if (!m || !(m->s = calloc(cap, sizeof *m->s))) {
        free(m);
        return DSQ_ENOMEM;
    }
    m->cap = cap;
    m->gen = 1;
    *out = m;
    return 0;
}

void dsq_idmap_free(dsq_idmap *m)
{
    if (!m)
        return;
    free(m->s);
    free(m);
}

uint32_t dsq_idmap_get(const dsq_idmap *m, uint64_t key)
{
    const slot *x = &m->s[find(m, key)];
    return x->gen == m->gen ? x->value : 0;
}

/* Doubles the slots, keeping this generation's keys. */
static int grow(dsq_idmap *m)
{
    slot *old = m->s, *s = calloc(2 * m->cap, sizeof *s);
    if (!s)
        return DSQ_ENOMEM;
    size_t old_cap = m->cap;
    m->s = s;
    m->cap *= 2;
    for (size_t k = 0; k < old_cap; k++)
        if (old[k].gen == m->gen)
            s[find(m, old[k].key)] = old[k];
    free(old);
    return 0;
}

int dsq_idmap_put(dsq_idmap *m, uint64_t key, uint32_t value)
{
    size_t i = find(m, key);
    if (m->s[i].gen != m->gen) { /* a new key: the map stays at most half full */
        if ((m->n + 1) * 2 > m->cap) {
            if (grow(m))
                return DSQ_ENOMEM;
            i = find(m, key);
        }
        m->n++;
    }
    m->s[i] = (slot){key, value, m->gen};
    return 0;
}

void dsq_idmap_clear(dsq_idmap *m)
{
    if (++m->gen == 0) { /* the generations went round: every slot free anew */
        memset(m->s, 0, m->cap * sizeof *m->s);
        m->gen = 1;
    }
    m->n = 0;
}
