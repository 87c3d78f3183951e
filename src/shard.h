/* Shards: which of N indexes a run belongs to.
 *
 * `dsq index --shard K/N` keeps only the runs whose name hashes to K. The hash is
 * dsq_hash64 of the run name's bytes (as the index stores it, after --run or the
 * directory/file naming) with the fixed seed DSQ_SHARD_SEED, modulo N. It depends
 * on nothing but the name and N, so every machine, every night and every build
 * assigns a run to the same shard, and a whole run (all its files) lands in one.
 * Changing the hash or the seed would move runs between shards: don't.
 * Changing N also moves runs: index into fresh shard directories then.
 */
#ifndef DSQ_SHARD_H
#define DSQ_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "dsq/dsq.h"

#define DSQ_SHARD_SEED 0x6473712d73686172ull /* "dsq-shar" */
#define DSQ_SHARD_MAX 1000000u

/* The shard (0..n-1) of a run name; 0 when n is 0 or 1. */
uint32_t dsq_shard_of(const char *run, size_t len, uint32_t n);

/* Parses "K/N" (decimal, 0 <= K < N <= DSQ_SHARD_MAX). DSQ_EUSAGE with a message
 * that says what is wrong otherwise. */
int dsq_shard_parse(const char *text, uint32_t *k, uint32_t *n, dsq_error *err);

#endif
