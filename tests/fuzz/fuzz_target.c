/* libFuzzer targets for the line-level input surfaces, one binary per target:
 * compiled with -DFUZZ_TARGET=<name> (see tests/fuzz/CMakeLists.txt).
 *
 *   scan        bytes -> line splitter (in chunks the input chooses) -> scanner with
 *               every family, prefix layer and handler -> events (all checked for sane
 *               field counts); with DSQ_LINE_SHAPES=check unless the environment sets
 *               it, so every line a shape or the NCCL memo answers is checked against
 *               the recognizers and every handler skipped as quiet is asked anyway
 *   <grammar>   bytes -> line splitter -> that one recognizer on every line
 *               (pdsh, prefix, deepspeed, hf, megatron, mmengine, glog, torchrun,
 *               traceback, pywarn, nccl, misc); nccl also checks its header fast
 *               path against the DFA and its memos (of channel lines, of a process's
 *               header) against the parser
 *   shapes      bytes -> line splitter -> each line recognized and its shape learned,
 *               then the line again with its digits changed: where the line shapes
 *               answer it, the answer must be the recognizers' (src/shapes.h)
 *   lines time query input values   see fuzz_surfaces.c
 *
 * The same file links with fuzz_replay.c into an ordinary program that runs the
 * checked-in seeds (the golden logs) as a ctest, so every target is exercised in
 * every build without a fuzzer. Nothing here allocates per line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "event.h"
#include "fam_nccl.h"
#include "fuzz_surfaces.h"
#include "grammar.h"
#include "lines.h"
#include "scan.h"
#include "shapes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STR2(x) #x
#define STR(x) STR2(x)

static int on_event(void *ctx, const dsq_event *ev)
{
    (void)ctx;
    if (ev->nf > DSQ_EV_MAXF)
        abort(); /* a field count the block encoder would reject */
    return 0;
}

/* The recognizer this binary fuzzes (NULL for the scanner target). */
static int (*target_fn(void))(const char *, size_t, dsq_match *)
{
    static const struct {
        const char *name;
        int (*fn)(const char *, size_t, dsq_match *);
    } tab[] = {{"pdsh", dsq_gram_pdsh},         {"prefix", dsq_gram_prefix},
               {"deepspeed", dsq_gram_deepspeed}, {"hf", dsq_gram_hf},
               {"megatron", dsq_gram_megatron},   {"mmengine", dsq_gram_mmengine},
               {"glog", dsq_gram_glog},           {"torchrun", dsq_gram_torchrun},
               {"traceback", dsq_gram_traceback}, {"pywarn", dsq_gram_pywarn},
               {"nccl", dsq_gram_nccl},           {"misc", dsq_gram_misc},
               {"tqdm", dsq_gram_tqdm}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(tab[i].name, STR(FUZZ_TARGET)) == 0)
            return tab[i].fn;
    return NULL;
}

/* line (len <= 4096) with each digit changed as the line's own bytes say (so the
 * fuzzer steers which digits change, and how), in copy with its sentinel and
 * padding (4096 + 1 + 64 bytes). */
static const char *digits_changed(const char *line, size_t len, char *copy)
{
    unsigned x = 0;
    for (size_t i = 0; i < len; i++) {
        x = x * 31 + (unsigned char)line[i];
        copy[i] = line[i] >= '0' && line[i] <= '9' ? (char)('0' + (x >> 7) % 10) : line[i];
    }
    memset(copy + len, line[len], 1 + 64);
    return copy;
}

/* The NCCL memo (fam_nccl.h): the line, then the line with its digits changed as
 * its own bytes say; where the memo answers, the answer must be the parser's. Each
 * line the parser takes is kept, as the scanner keeps it. */
static void nccl_memo_line(const char *line, size_t len)
{
    static dsq_nccl_memo memo;
    static char copy[4096 + 1 + 64];
    if (len > 4096)
        return;
    for (int round = 0; round < 2; round++) {
        const char *p = round == 1 ? digits_changed(line, len, copy) : line;
        dsq_match got, want;
        dsq_scan_match_init(&got);
        dsq_scan_match_init(&want);
        int parsed = dsq_gram_nccl(p, len, &want);
        if (dsq_nccl_memo_match(&memo, p, len, &got) &&
            (!parsed || !dsq_shapes_same_match(&got, &want) ||
             !dsq_nccl_line_same((const dsq_nccl_line *)got.aux.bytes,
                                 (const dsq_nccl_line *)want.aux.bytes)))
            abort(); /* the memo answered otherwise than the parser */
        dsq_scan_match_init(&got);
        int head = dsq_nccl_memo_head(&memo, p, len, &got);
        if (head && (!parsed || !dsq_shapes_same_match(&got, &want) ||
                     !dsq_nccl_line_same((const dsq_nccl_line *)got.aux.bytes,
                                         (const dsq_nccl_line *)want.aux.bytes)))
            abort(); /* the header memo answered otherwise than the parser */
        if (parsed)
            dsq_nccl_memo_keep(&memo, p, len, &want, head);
        else
            memo.len = memo.head_n = 0;
    }
}

static int one_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    int (*fn)(const char *, size_t, dsq_match *) = ctx;
    dsq_match m;
    (void)flags;
    memset(&m, 0, sizeof m);
    m.rank = -1;
    m.t_us = DSQ_TIME_NONE;
    if (fn(line, len, &m) && (m.nf > DSQ_MATCH_MAXF || m.nv > DSQ_MATCH_MAXV))
        abort();
    if (fn == dsq_gram_nccl) { /* the header fast path says what the DFA alone says */
        dsq_nccl_line a, b;
        memset(&a, 0xA5, sizeof a);
        memset(&b, 0x5A, sizeof b);
        int ra = dsq_nccl_parse(line, len, &a), rb = dsq_nccl_parse_dfa(line, len, &b);
        if (ra != rb || (ra && !dsq_nccl_line_same(&a, &b)))
            abort();
        nccl_memo_line(line, len);
    }
    return 0;
}

/* The shapes target: the line learned, then with each digit changed as the
 * line's own bytes say (so the fuzzer steers which digits change, and how). */
static int shapes_line(void *ctx, const char *line, size_t len, unsigned flags)
{
    dsq_shapes *s = ctx;
    static char copy[4096 + 1 + 64];
    (void)flags;
    if (len > 4096)
        return 0;
    for (int round = 0; round < 2; round++) {
        const char *p = round == 1 ? digits_changed(line, len, copy) : line;
        dsq_match got, want;
        dsq_scan_match_init(&got);
        dsq_scan_match_init(&want);
        dsq_scan_recognize(&want, p, len);
        if (dsq_shapes_apply(s, p, len, &got, NULL, 0)) {
            if (!dsq_shapes_same_match(&got, &want))
                abort(); /* a shape answered otherwise than the recognizers */
        } else {
            dsq_shapes_learn(s, p, len, &want);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dsq_dict *dict;
    static dsq_scan *sc;
    static dsq_lines *lb;
    if (fuzz_surface(STR(FUZZ_TARGET), data, size))
        return 0;
    int (*fn)(const char *, size_t, dsq_match *) = target_fn();
    static dsq_shapes *shapes;
    if (!lb) {
        dsq_dict_new(&dict);
        dsq_scan_params sp = {.dict = dict, .emit = on_event};
        if (!fn)
            setenv("DSQ_LINE_SHAPES", "check", 0); /* read once, by dsq_scan_new */
        dsq_scan_new(&sp, &sc);
        dsq_lines_params lp = {4096, fn ? one_line : dsq_scan_line, NULL};
        lp.ctx = fn ? (void *)fn : (void *)sc;
        if (strcmp(STR(FUZZ_TARGET), "shapes") == 0 && dsq_shapes_new(&shapes) == 0)
            lp.fn = shapes_line, lp.ctx = shapes;
        dsq_lines_new(&lp, &lb);
    }
    dsq_lines_reset(lb);
    dsq_scan_begin(sc, 0, -1);
    fuzz_feed(lb, data, size, 64);
    dsq_lines_finish(lb);
    dsq_scan_end(sc);
    return 0;
}
