// Short-lived parallel work on plain threads.
#ifndef CABIN_BASE_THREADS_H
#define CABIN_BASE_THREADS_H

#include <stddef.h>

// fn(args + i * stride) for i in [0, n), on n - 1 new threads and the caller (a thread that
// cannot be started runs its part on the caller). n: 1..64.
#define MAX_WORK_THREADS 64
void run_on_threads(void *(*fn)(void *), void *args, size_t stride, int n);
// n_threads, or the online cores when it is <= 0; at most MAX_WORK_THREADS.
int work_threads(int n_threads);

#endif
