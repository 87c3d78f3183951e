/* The prefix recognizers' first looks at a line against their DFAs alone: pdsh's
 * (grammar/pdsh.re: a letter or a digit first, and a blank after the first ':',
 * found 16 bytes at a time) against dsq_gram_pdsh_dfa, and the other layers'
 * (grammar/prefix.re: a layer's first byte, and not "[" with 4 digits and '-')
 * against dsq_gram_prefix_dfa. For prefixes of every kind, every cut of them and
 * every byte replaced by each byte that matters, both must say the same and fill
 * the same match. Then every line of the corpus logs (when DSQ_CORPUS names it).
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
    "[rank3]: Traceback (most recent call last):",
    "[rank=3 local_rank=1] step 5",
    "[default7]: loss 1.5",
    "[1,3]<stdout>: hello",
    "[trainer0|3]: hi",
    "12: srun task twelve",
    "2024-07-20T21:30:05.123456789Z container line",
    "2024-07-20T21:30:05+02:00 offset stamp",
    "[07:15:39.400163] time of day",
    "\x1b[32m\x1b[1mcoloured\x1b[0m line",
    "> a quoted line",
    ">",
    "[155] launcher rank",
    "[2024] launcher rank with four digits",
    "[1234,5]<stdout>: four digits then a comma",
    "(RayWorkerWrapper pid=927, ip=10.0.0.1) vLLM",
    "(RayTrainWorker pid=12)\x1b[0m ray",
};

/* Bytes that end or change a prefix. */
static const char swaps[] = {':', ' ', '-', '.', '_', '[', ']', '0', 'a', 'Z', '\t', '\0',
                             '>', '(', '\x1b', 'T'};

typedef struct recognizer {
    const char *name;
    dsq_grammar_fn first, dfa;
    long compared, found;
} recognizer;

static recognizer recognizers[] = {
    {"pdsh", dsq_gram_pdsh, dsq_gram_pdsh_dfa, 0, 0},
    {"prefix", dsq_gram_prefix, dsq_gram_prefix_dfa, 0, 0},
};

static int span_same(dsq_span a, dsq_span b) { return a.n == b.n && (!a.n || a.p == b.p); }

static void compare(const char *text, size_t len)
{
    char *line = test_line_copy(text, len);
    if (!line) {
        CHECK(line != NULL);
        return;
    }
    for (size_t r = 0; r < sizeof recognizers / sizeof recognizers[0]; r++) {
        recognizer *g = &recognizers[r];
        dsq_match a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        a.rank = b.rank = -1;
        int ra = g->first(line, len, &a), rb = g->dfa(line, len, &b);
        g->compared++;
        g->found += rb != 0;
        if (ra != rb || (rb && (a.kind != b.kind || !span_same(a.host, b.host) ||
                                !span_same(a.body, b.body) || a.rank != b.rank ||
                                a.t_us != b.t_us || a.tod_us != b.tod_us))) {
            fprintf(stderr, "%s differs (%d vs %d): \"%.*s\"\n", g->name, ra, rb, (int)len, line);
            test_failures++;
        }
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
    /* many variants are still prefixes of each kind: both paths ran */
    CHECK(recognizers[0].found > 500);
    CHECK(recognizers[1].found > 500);
}

/* Every line of every corpus log, and what follows each blank of its start. */
static void test_first_look_same_as_dfa_on_corpus(void)
{
    long before = recognizers[0].compared;
    if (test_corpus_lines(32, compare) != 0)
        return;
    printf("  corpus: %ld lines compared\n", recognizers[0].compared - before);
}

TEST_MAIN({"first_look_same_as_dfa_on_variants", test_first_look_same_as_dfa_on_variants},
          {"first_look_same_as_dfa_on_corpus", test_first_look_same_as_dfa_on_corpus})
