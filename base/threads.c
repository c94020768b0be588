#include "base/threads.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

void run_on_threads(void *(*fn)(void *), void *args, size_t stride, int n) {
    pthread_t th[MAX_WORK_THREADS];
    bool started[MAX_WORK_THREADS] = { false };
    if (n > MAX_WORK_THREADS) n = MAX_WORK_THREADS;
    for (int i = 1; i < n; i++) {
        started[i] = pthread_create(&th[i], NULL, fn, (char *)args + (size_t)i * stride) == 0;
        if (!started[i]) fn((char *)args + (size_t)i * stride);   // no thread: do it here
    }
    fn(args);
    for (int i = 1; i < n; i++)
        if (started[i]) pthread_join(th[i], NULL);
}

int work_threads(int n_threads) {
    if (n_threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = nc > 0 ? (int)nc : 1;
    }
    return n_threads < MAX_WORK_THREADS ? n_threads : MAX_WORK_THREADS;
}
