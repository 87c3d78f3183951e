/* Shards (see shard.h). */
#include "shard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "error.h"

uint32_t dsq_shard_of(const char *run, size_t len, uint32_t n)
{
    if (n <= 1)
        return 0;
    return (uint32_t)(dsq_hash64(run, len, DSQ_SHARD_SEED) % n);
}

/* A decimal number filling [s, end) exactly. */
static int whole_number(const char *s, const char *end, unsigned long *v)
{
    char *stop;
    if (s == end || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    *v = strtoul(s, &stop, 10);
    return errno || stop != end ? -1 : 0;
}

int dsq_shard_parse(const char *text, uint32_t *k, uint32_t *n, dsq_error *err)
{
    const char *slash = text ? strchr(text, '/') : NULL;
    unsigned long kv, nv;
    if (!slash || whole_number(text, slash, &kv) || whole_number(slash + 1, slash + strlen(slash), &nv))
        return dsq_error_set(err, DSQ_EUSAGE, "--shard needs K/N, two whole numbers, e.g. --shard 0/8 "
                                              "(got '%s')", text ? text : "");
    if (nv == 0 || nv > DSQ_SHARD_MAX)
        return dsq_error_set(err, DSQ_EUSAGE, "--shard %s: the shard count N must be 1 to %u",
                             text, DSQ_SHARD_MAX);
    if (kv >= nv)
        return dsq_error_set(err, DSQ_EUSAGE, "--shard %s: K counts from 0, so it must be below N "
                                              "(0 to %lu)", text, nv - 1);
    *k = (uint32_t)kv;
    *n = (uint32_t)nv;
    return 0;
}
