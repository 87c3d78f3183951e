/* "name: value | name: value" splitting shared by the DeepSpeed timer and Megatron
 * recognizers. Inputs are exact-size heap copies so ASan catches a read past end. */
#include <stdlib.h>

#include "fam_pairs.h"
#include "num.h"
#include "test.h"

static char *copy_of(const char *s, size_t *n)
{
    *n = strlen(s);
    char *c = malloc(*n ? *n : 1);
    memcpy(c, s, *n);
    return c;
}

static int name_is(dsq_span s, const char *want)
{
    return s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static void test_megatron_segments(void)
{
    size_t n;
    char *s = copy_of(" consumed samples:   640 | elapsed time per iteration (ms): 12.5 |"
                      " lm loss: 7.1E+00 | eta: soon | no colon here |",
                      &n);
    dsq_pair pr[8];
    int k = dsq_pairs_pipe(s, s + n, pr, 8);
    CHECK_INT(k, 3);
    CHECK(name_is(pr[0].name, "consumed samples"));
    CHECK(name_is(pr[1].name, "elapsed time per iteration (ms)"));
    CHECK(name_is(pr[2].name, "lm loss"));
    CHECK_INT(pr[2].val[0], '7');
    CHECK_INT(dsq_pairs_name_unit(pr[1].name), DSQ_U_MS);
    CHECK_INT(dsq_pairs_name_unit(pr[0].name), DSQ_U_NONE);
    free(s);
}

static void test_first_colon_and_limits(void)
{
    size_t n;
    char *s = copy_of("fwd: 5.5 (fwd_moe: 1.0, top_k: 0.5) | bwd: 2", &n);
    dsq_pair pr[1];
    CHECK_INT(dsq_pairs_pipe(s, s + n, pr, 1), 1); /* at most max pairs */
    CHECK(name_is(pr[0].name, "fwd"));
    free(s);
    s = copy_of("x:", &n); /* a value cut by the end of the line */
    CHECK_INT(dsq_pairs_pipe(s, s + n, pr, 1), 0);
    free(s);
    dsq_span weird = {"memory (", 8};
    CHECK_INT(dsq_pairs_name_unit(weird), DSQ_U_NONE);
}

TEST_MAIN(T(test_megatron_segments), T(test_first_colon_and_limits))
