/* Thread priorities: DSQ_WORKER_NICE read (default 5, 0..19, anything else the
 * default), and dsq_thread_nicer putting the calling thread, and only it, that many
 * nice steps above the process (capped at 19; not cumulative; 0 does nothing). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test.h"
#include "threadprio.h"

static int process_nice(void) { return getpriority(PRIO_PROCESS, (id_t)getpid()); }
static int own_nice(void) { return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)); }

static void test_worker_nice_from_env(void)
{
    unsetenv("DSQ_WORKER_NICE");
    CHECK_INT(dsq_worker_nice(), DSQ_WORKER_NICE_DEFAULT);
    CHECK_INT(DSQ_WORKER_NICE_DEFAULT, 5);
    const struct {
        const char *v;
        int want;
    } cases[] = {{"0", 0}, {"7", 7}, {"19", 19}, {"25", 19}, {"-3", 5}, {"x", 5}, {"3x", 5}, {"", 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("DSQ_WORKER_NICE", cases[i].v, 1);
        CHECK_INT(dsq_worker_nice(), cases[i].want);
    }
    unsetenv("DSQ_WORKER_NICE");
}

typedef struct {
    int by, got, nice, again, nice_again, zero, nice_zero;
} nicer_run;

static void *nicer_thread(void *arg)
{
    nicer_run *r = arg;
    r->zero = dsq_thread_nicer(0); /* nothing */
    r->nice_zero = own_nice();
    r->got = dsq_thread_nicer(r->by);
    r->nice = own_nice();
    r->again = dsq_thread_nicer(r->by); /* from the process's nice again, not its own */
    r->nice_again = own_nice();
    return NULL;
}

static void test_thread_nicer_lowers_only_its_thread(void)
{
    int base = process_nice();
    int mine = own_nice();
    for (int by = 1; by <= 25; by += 6) {
        nicer_run r = {.by = by};
        pthread_t th;
        CHECK_INT(pthread_create(&th, NULL, nicer_thread, &r), 0);
        pthread_join(th, NULL);
        int want = base + by > 19 ? 19 - base : by;
        CHECK_INT(r.zero, 0);
        CHECK_INT(r.nice_zero, base); /* a new thread starts at the process's nice */
        CHECK_INT(r.got, want);
        CHECK_INT(r.nice, base + want);
        CHECK_INT(r.again, want);
        CHECK_INT(r.nice_again, base + want);
    }
    CHECK_INT(process_nice(), base); /* the process and this thread keep theirs */
    CHECK_INT(own_nice(), mine);
}

TEST_MAIN(T(test_worker_nice_from_env), T(test_thread_nicer_lowers_only_its_thread))
