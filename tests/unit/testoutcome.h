/* What dsq_input said about a file, member by member, for the differential tests of
 * its decoders (test_input_gzip: ISA-L against libarchive's gzip reader;
 * test_input_zip: zip members by ISA-L against libarchive's). */
#ifndef DSQ_TEST_TESTOUTCOME_H
#define DSQ_TEST_TESTOUTCOME_H

#include <stdlib.h>

#include "dsq/dsq.h"
#include "input.h"
#include "test.h"
#include "testbuf.h"

#define TEST_MAX_MEMBERS 128

typedef struct test_outcome {
    int open_rc;
    int n;                            /* members seen */
    char name[TEST_MAX_MEMBERS][128];
    test_buf data[TEST_MAX_MEMBERS];
    size_t first[TEST_MAX_MEMBERS];   /* its first chunk's length, up to 64 KiB */
    int own[TEST_MAX_MEMBERS];        /* its data decoded by ISA-L (dsq_input_unzipped) */
    int read_rc[TEST_MAX_MEMBERS];    /* the read that ended the member: 0 or an error */
    char read_msg[TEST_MAX_MEMBERS][256];
    int next_rc;                      /* next_member's last answer: 0, or an error */
    char next_msg[256];
} test_outcome;

static inline void test_outcome_free(test_outcome *o)
{
    for (int i = 0; i < TEST_MAX_MEMBERS; i++)
        free(o->data[i].p);
    free(o);
}

/* Opens path with in (set up by the caller: who decodes what) and reads every member. */
static inline test_outcome *test_decode(dsq_input *in, const char *path)
{
    test_outcome *o = calloc(1, sizeof *o);
    dsq_error err;
    dsq_error_clear(&err);
    o->open_rc = dsq_input_open(in, path, &err);
    dsq_member_info mi;
    while (o->open_rc == 0 && (o->next_rc = dsq_input_next_member(in, &mi, &err)) == 1) {
        int k = o->n < TEST_MAX_MEMBERS ? o->n : TEST_MAX_MEMBERS - 1;
        snprintf(o->name[k], sizeof o->name[k], "%s", mi.name);
        o->own[k] = dsq_input_unzipped(in);
        o->data[k].n = 0;
        for (;;) {
            const char *p;
            size_t len;
            dsq_error_clear(&err);
            o->read_rc[k] = dsq_input_read(in, &p, &len, &err);
            if (o->read_rc[k] || len == 0)
                break;
            if (o->data[k].n == 0)
                o->first[k] = len < 65536 ? len : 65536;
            test_buf_add(&o->data[k], p, len);
        }
        snprintf(o->read_msg[k], sizeof o->read_msg[k], "%s", err.msg);
        o->n++;
        dsq_error_clear(&err);
    }
    snprintf(o->next_msg, sizeof o->next_msg, "%s", err.msg);
    dsq_input_close(in);
    return o;
}

/* Says on stderr what a (libarchive) and b (ISA-L) said about name, member by member,
 * and counts a failure: for a differential test that found them apart. */
static inline void test_outcome_report(const char *name, const test_outcome *a,
                                       const test_outcome *b)
{
    fprintf(stderr, "differ %s: libarchive open %d, %d members, next %d (%s); "
                    "ISA-L open %d, %d members, next %d (%s)\n",
            name, a->open_rc, a->n, a->next_rc, a->next_msg, b->open_rc, b->n, b->next_rc,
            b->next_msg);
    for (int i = 0; i < a->n || i < b->n; i++)
        if (i < TEST_MAX_MEMBERS)
            fprintf(stderr,
                    "  member %d '%s'/'%s': %zu/%zu bytes (first %zu/%zu), rc %d/%d (%s | %s)\n",
                    i, a->name[i], b->name[i], a->data[i].n, b->data[i].n, a->first[i],
                    b->first[i], a->read_rc[i], b->read_rc[i], a->read_msg[i], b->read_msg[i]);
    test_failures++;
}

/* Whether x's bytes begin y's. */
static inline int test_prefix(const test_buf *x, const test_buf *y)
{
    return x->n <= y->n && (x->n == 0 || memcmp(x->p, y->p, x->n) == 0);
}

#endif
