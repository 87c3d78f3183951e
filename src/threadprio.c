/* Thread priorities (see threadprio.h). */
#include "threadprio.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/syscall.h>
#define THREAD_ID() ((id_t)syscall(SYS_gettid))
#define HAVE_THREAD_NICE 1
#else
#define THREAD_ID() ((id_t)0)
#define HAVE_THREAD_NICE 0
#endif

int dsq_worker_nice(void)
{
    const char *v = getenv("DSQ_WORKER_NICE");
    if (!v || !*v)
        return DSQ_WORKER_NICE_DEFAULT;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0)
        return DSQ_WORKER_NICE_DEFAULT;
    return n > 19 ? 19 : (int)n;
}

int dsq_thread_nicer(int by)
{
    if (by <= 0)
        return 0;
    if (!HAVE_THREAD_NICE)
        return -1;
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)getpid()); /* the main thread's */
    if (base == -1 && errno)
        return -1;
    int to = base + by > 19 ? 19 : base + by;
    return setpriority(PRIO_PROCESS, THREAD_ID(), to) == 0 ? to - base : -1;
}
