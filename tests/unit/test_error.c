/* Error structs: clearing, setting (truncated, never overrun), where, code names. */
#include "dsq/dsq.h"
#include "error.h"
#include "test.h"

static void test_clear_and_set(void)
{
    dsq_error e;
    memset(&e, 0x5a, sizeof e);
    dsq_error_clear(&e);
    CHECK_INT(e.code, 0);
    CHECK_STR(e.msg, "");
    CHECK_STR(e.file, "");
    CHECK_STR(e.member, "");
    CHECK_INT(e.line, -1);
    CHECK_INT(e.offset, -1);
    CHECK_INT(e.length, 0);

    CHECK_INT(dsq_error_set(&e, DSQ_EIO, "cannot read %s: %d", "x.log", 5), DSQ_EIO);
    CHECK_INT(e.code, DSQ_EIO);
    CHECK_STR(e.msg, "cannot read x.log: 5");
    CHECK_INT(dsq_error_set(NULL, DSQ_EFORMAT, "ignored"), DSQ_EFORMAT);
    dsq_error_clear(NULL);

    /* a message longer than the buffer is cut, NUL-terminated */
    char long_text[1000];
    memset(long_text, 'm', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    dsq_error_set(&e, DSQ_ELIMIT, "%s", long_text);
    CHECK_INT(strlen(e.msg), sizeof e.msg - 1);
}

static void test_where(void)
{
    dsq_error e;
    dsq_error_clear(&e);
    dsq_error_where(&e, "/logs/run7.tar.zst", "run7/gpu009.log");
    CHECK_STR(e.file, "/logs/run7.tar.zst");
    CHECK_STR(e.member, "run7/gpu009.log");
    dsq_error_where(&e, "/logs/a.log", NULL);
    CHECK_STR(e.member, "");
    dsq_error_where(&e, NULL, NULL);
    CHECK_STR(e.file, "");
    dsq_error_where(NULL, "x", "y");
    char path[2000];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = 0;
    dsq_error_where(&e, path, path);
    CHECK_INT(strlen(e.file), sizeof e.file - 1);
    CHECK_INT(strlen(e.member), sizeof e.member - 1);
}

static void test_strerror(void)
{
    CHECK_STR(dsq_strerror(DSQ_OK), "ok");
    CHECK_STR(dsq_strerror(DSQ_ENOMEM), "out of memory");
    CHECK_STR(dsq_strerror(DSQ_EIO), "i/o error");
    CHECK_STR(dsq_strerror(DSQ_EFORMAT), "bad input format");
    CHECK_STR(dsq_strerror(DSQ_EINDEX), "index error");
    CHECK_STR(dsq_strerror(DSQ_EQUERY), "bad query");
    CHECK_STR(dsq_strerror(DSQ_EUSAGE), "bad usage");
    CHECK_STR(dsq_strerror(DSQ_ELIMIT), "limit exceeded");
    CHECK_STR(dsq_strerror(-1), "unknown error");
    CHECK_STR(dsq_strerror(12345), "unknown error");
    /* codes sit outside errno's range and are distinct */
    const int codes[] = {DSQ_ENOMEM, DSQ_EIO, DSQ_EFORMAT, DSQ_EINDEX,
                         DSQ_EQUERY, DSQ_EUSAGE, DSQ_ELIMIT};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        CHECK(codes[i] < -4096);
        for (size_t j = i + 1; j < sizeof codes / sizeof codes[0]; j++)
            CHECK(codes[i] != codes[j]);
    }
}

TEST_MAIN(T(test_clear_and_set), T(test_where), T(test_strerror))
