/* The pdsh prefix recognizer's first look at a line (grammar/pdsh.re: a letter or a
 * digit first, and a blank after the first ':', found 16 bytes at a time) against
 * the DFA alone (dsq_gram_pdsh_dfa): for prefixes of every kind, every cut of them and
 * every byte replaced by each byte that matters, both must say the same and fill the
 * same host and body. Then every line of the corpus logs (when DSQ_CORPUS names it).
 * Each line is an exact-size heap copy with its '\n' sentinel (grammar.h). */
#include <stdlib.h>

#include "grammar.h"
#include "testbuf.h"
#include "test.h"

static const char *const seeds[] = {
    "gpu009: [2024-07-16 23:42:54,000] [INFO] [engine.py:1:f] step 1",
    "worker-5: loss 2.1",
    "10.0.0.7: hello",
    "localhost: ready",
    "brutasse: [INFO] maybe a host",
    "bf16: true",
    "step-40: loss=2.1",
    "RuntimeError: CUDA out of memory",
    "gpu0871:48869:48940 [0] NCCL INFO Bootstrap : Using ib0:10.31.0.2<0>",
    "node-a07.cluster.local: a long host name that runs past sixteen bytes: yes",
    "a:",
    ":",
    ": x",
    "0: srun label",
    "[2024-07-16 23:42:54,000] [INFO] no prefix: here",
    "abcdefghijklmnopqrstuvwxyz0123456789: thirty-six bytes of host",
    "abcdefghijklmnop:q no blank after the first colon: here",
    "host_name: an underscore",
};

/* Bytes that end or change a prefix. */
static const char swaps[] = {':', ' ', '-', '.', '_', '[', '0', 'a', 'Z', '\t', '\0'};

static long compared, prefixes;

static int span_same(dsq_span a, dsq_span b) { return a.n == b.n && (!a.n || a.p == b.p); }

static void compare(const char *text, size_t len)
{
    char *line = test_line_copy(text, len);
    if (!line) {
        CHECK(line != NULL);
        return;
    }
    dsq_match a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    int ra = dsq_gram_pdsh(line, len, &a), rb = dsq_gram_pdsh_dfa(line, len, &b);
    compared++;
    prefixes += rb != 0;
    if (ra != rb || (rb && (a.kind != b.kind || !span_same(a.host, b.host) ||
                            !span_same(a.body, b.body)))) {
        fprintf(stderr, "differs (%d vs %d): \"%.*s\"\n", ra, rb, (int)len, line);
        test_failures++;
    }
    free(line);
}

static void test_first_look_same_as_dfa_on_variants(void)
{
    char buf[256];
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t n = strlen(seeds[s]);
        for (size_t cut = 0; cut <= n; cut++)
            compare(seeds[s], cut);
        for (size_t i = 0; i < n && i < 48; i++)
            for (size_t k = 0; k < sizeof swaps; k++) {
                memcpy(buf, seeds[s], n);
                buf[i] = swaps[k];
                compare(buf, n);
            }
    }
    CHECK(prefixes > 500); /* many variants are still prefixes: both paths ran */
}

/* Every line of every corpus log, and what follows each blank of its start. */
static void test_first_look_same_as_dfa_on_corpus(void)
{
    long before = compared;
    if (test_corpus_lines(32, compare) != 0)
        return;
    printf("  corpus: %ld lines compared\n", compared - before);
}

TEST_MAIN({"first_look_same_as_dfa_on_variants", test_first_look_same_as_dfa_on_variants},
          {"first_look_same_as_dfa_on_corpus", test_first_look_same_as_dfa_on_corpus})
