/* Batches and remapping: messages come back in order with their payloads aligned,
 * a full batch says so (1) and an empty one grows for a message bigger than it,
 * events keep only their used fields and decode to the same event, strings go in
 * id order across batches, and a writer's remap turns a worker's local ids into
 * the ids of another dictionary holding the same strings (unknown ids refused). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "dsq/dsq.h"
#include "test.h"

static void test_messages(void)
{
    dsq_batch b;
    CHECK_INT(dsq_batch_init(&b, 64), 0);
    CHECK_INT(dsq_batch_put(&b, 7, "abc", 3, "de", 2), 0);
    uint64_t x = 42;
    CHECK_INT(dsq_batch_put(&b, 8, &x, sizeof x, NULL, 0), 0);
    CHECK_INT(dsq_batch_put(&b, 9, NULL, 0, NULL, 0), 0);
    char big[40] = {0};
    CHECK_INT(dsq_batch_put(&b, 10, big, sizeof big, NULL, 0), 1); /* full: send first */

    dsq_batch_iter it;
    uint32_t type;
    const void *data;
    size_t n;
    dsq_batch_iter_init(&it, &b);
    CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 1);
    CHECK_INT(type, 7);
    CHECK_INT(n, 5);
    CHECK(memcmp(data, "abcde", 5) == 0);
    CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 1);
    CHECK_INT(type, 8);
    CHECK_INT((uintptr_t)data % 8, 0);
    CHECK_INT(*(const uint64_t *)data, 42);
    CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 1);
    CHECK_INT(type, 9);
    CHECK_INT(n, 0);
    CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 0);

    dsq_batch_clear(&b); /* an empty batch takes any message, growing for it */
    char *huge = calloc(1, 1000);
    huge[999] = 'z';
    CHECK_INT(dsq_batch_put(&b, 11, huge, 1000, NULL, 0), 0);
    dsq_batch_iter_init(&it, &b);
    CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 1);
    CHECK_INT(n, 1000);
    CHECK_INT(((const char *)data)[999], 'z');
    CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 0);
    free(huge);
    dsq_batch_free(&b);
}

static void test_events(void)
{
    dsq_batch b;
    dsq_event ev;
    CHECK_INT(dsq_batch_init(&b, 4096), 0);
    for (unsigned nf = 0; nf <= DSQ_EV_MAXF; nf += 5) {
        memset(&ev, 0, sizeof ev);
        ev.kind = DSQ_EV_MEMORY;
        ev.nf = (uint8_t)nf;
        ev.rank = -1;
        ev.host = 3;
        ev.t_us = 1720000000123456;
        ev.label = 4;
        ev.line = 99;
        for (unsigned i = 0; i < nf; i++)
            ev.f[i] = (dsq_field){.name = 10 + i, .unit = 2, .v = 1.5 * i};
        dsq_batch_clear(&b);
        CHECK_INT(dsq_batch_put_event(&b, 5, &ev), 0);
        CHECK(b.len < 64 + 16 * (nf + 1) + 8); /* unused fields are not copied */
        dsq_batch_iter it;
        uint32_t type;
        const void *data;
        size_t n;
        dsq_batch_iter_init(&it, &b);
        CHECK_INT(dsq_batch_next(&it, &type, &data, &n), 1);
        /* taken where it lies: the batch's own bytes */
        dsq_event *back = NULL;
        CHECK_INT(dsq_batch_take_event(data, n, &back), 0);
        CHECK(back && (const void *)back == data);
        if (!back)
            break;
        CHECK_INT(back->kind, ev.kind);
        CHECK_INT(back->nf, nf);
        CHECK_INT(back->rank, -1);
        CHECK_INT(back->host, 3);
        CHECK_INT(back->t_us, ev.t_us);
        CHECK_INT(back->label, 4);
        CHECK_INT(back->text, 0);
        CHECK_INT(back->line, 99);
        for (unsigned i = 0; i < nf; i++) {
            CHECK_INT(back->f[i].name, 10 + i);
            CHECK_INT(back->f[i].unit, 2);
            CHECK_DBL(back->f[i].v, 1.5 * i);
        }
        CHECK_INT(dsq_batch_take_event(data, n - 1, &back), DSQ_EFORMAT);
        if (nf) { /* a payload a field short of its count */
            CHECK_INT(dsq_batch_take_event(data, n - sizeof ev.f[0], &back), DSQ_EFORMAT);
        }
    }
    dsq_batch_free(&b);
}

/* A worker interns into its own dictionary and puts the new strings before each
 * event; the writer, whose dictionary already holds other strings, remaps. */
static void test_remap(void)
{
    dsq_dict *local = NULL, *global = NULL;
    dsq_batch b;
    dsq_remap r = {0};
    CHECK_INT(dsq_dict_new(&local), 0);
    CHECK_INT(dsq_dict_new(&global), 0);
    CHECK_INT(dsq_batch_init(&b, 256), 0); /* small: strings span several batches */
    dsq_dict_intern(global, "run-a", 5);
    dsq_dict_intern(global, "Max_MA", 6);
    char name[32];
    uint32_t sent = 0, events = 0, bad = 0;
    for (int round = 0; round < 50; round++) {
        dsq_event ev = {.kind = DSQ_EV_ATTR, .nf = 2, .rank = round};
        int n = snprintf(name, sizeof name, "host-%d", round % 7);
        ev.host = dsq_dict_intern(local, name, (size_t)n);
        n = snprintf(name, sizeof name, "label-%d", round);
        ev.label = dsq_dict_intern(local, name, (size_t)n);
        ev.f[0].name = dsq_dict_intern(local, "Max_MA", 6);
        n = snprintf(name, sizeof name, "f%d", round % 3);
        ev.f[1].name = dsq_dict_intern(local, name, (size_t)n);
        int rc;
        dsq_batch_clear(&b);
        while ((rc = dsq_batch_put_strings(&b, local, &sent)) == 1 || rc == 0) {
            if (rc == 0 && (rc = dsq_batch_put_event(&b, 5, &ev)) == 0)
                break;
            /* "send": the writer reads the batch */
            dsq_batch_iter it;
            uint32_t type;
            const void *data;
            size_t len;
            dsq_batch_iter_init(&it, &b);
            while (dsq_batch_next(&it, &type, &data, &len))
                CHECK_INT(dsq_remap_add_str(&r, global, data, len), 0);
            dsq_batch_clear(&b);
        }
        CHECK_INT(rc, 0);
        dsq_batch_iter it;
        uint32_t type;
        const void *data;
        size_t len;
        dsq_batch_iter_init(&it, &b);
        while (dsq_batch_next(&it, &type, &data, &len)) {
            if (type == DSQ_BATCH_STR) {
                CHECK_INT(dsq_remap_add_str(&r, global, data, len), 0);
                continue;
            }
            dsq_event *got = NULL;
            CHECK_INT(dsq_batch_take_event(data, len, &got), 0);
            if (!got)
                break;
            CHECK_INT(dsq_remap_event(&r, got), 0);
            events++;
            snprintf(name, sizeof name, "host-%d", round % 7);
            bad += strcmp(dsq_dict_str(global, got->host, NULL), name) != 0;
            snprintf(name, sizeof name, "label-%d", round);
            bad += strcmp(dsq_dict_str(global, got->label, NULL), name) != 0;
            bad += got->f[0].name != 2; /* the writer's own id of Max_MA */
            snprintf(name, sizeof name, "f%d", round % 3);
            bad += strcmp(dsq_dict_str(global, got->f[1].name, NULL), name) != 0;
            bad += got->text != 0 || got->rank != round;
        }
    }
    CHECK_INT(events, 50);
    CHECK_INT(bad, 0);
    CHECK_INT(sent, dsq_dict_count(local));
    CHECK_INT(r.count, dsq_dict_count(local));

    dsq_event unknown = {.nf = 1, .host = r.count + 1};
    CHECK_INT(dsq_remap_event(&r, &unknown), DSQ_EFORMAT);
    unknown.host = 0;
    unknown.f[0].name = r.count + 5;
    CHECK_INT(dsq_remap_event(&r, &unknown), DSQ_EFORMAT);

    dsq_remap_free(&r);
    dsq_batch_free(&b);
    dsq_dict_free(local);
    dsq_dict_free(global);
}

TEST_MAIN(T(test_messages), T(test_events), T(test_remap))
