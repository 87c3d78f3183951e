/* A thread's CPU priority relative to the rest of its process.
 *
 * `dsq index` runs its workers (decoding and lexing) a few nice steps below its
 * writer (the one thread that writes the index). On a mixed archive the writer is
 * the bound: with two workers and the writer on two cores, each thread gets a fair
 * share, the writer falls behind, both workers fill their queues of batches and
 * sleep, and the writer then runs alone beside an idle core. With the workers at
 * nice +5 the writer keeps its core: the 1000-run bench archive 0.78 -> 0.75 s and
 * 0.80 -> 0.75 s (median of 21 alternating runs, two series, 2-core Zen 5 VM), with
 * one run, the big job and the single log unchanged (it is one worker's file: two
 * threads, two cores). The nice is relative (a `nice dsq index` keeps its workers
 * below its writer) and DSQ_WORKER_NICE changes it (0: as the writer).
 *
 * Linux keeps a nice per thread (setpriority on a thread id); elsewhere it applies
 * to the process, which these calls do not touch.
 */
#ifndef DSQ_THREADPRIO_H
#define DSQ_THREADPRIO_H

/* The nice steps workers take below the writer: DSQ_WORKER_NICE if set (0 to 19),
 * else DSQ_WORKER_NICE_DEFAULT. */
#define DSQ_WORKER_NICE_DEFAULT 5
int dsq_worker_nice(void);

/* Puts the calling thread `by` nice steps above the process's nice (its main
 * thread's), at most 19. Returns the steps it is now above the process (by, less
 * when 19 capped it; 0 for by <= 0, which changes nothing), or -1 when the system
 * refused or cannot set a thread's own nice (the thread keeps its priority). */
int dsq_thread_nicer(int by);

#endif
