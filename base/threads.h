// Short-lived parallel work on plain threads.
#ifndef CABIN_BASE_THREADS_H
#define CABIN_BASE_THREADS_H

#include <stddef.h>

// fn(args + i * stride) for i in [0, n), on n - 1 new threads and the caller (a thread that
// cannot be started runs its part on the caller). n: 1..64.
#define MAX_WORK_THREADS 64
void run_on_threads(void *(*fn)(void *), void *args, size_t stride, int n);
// n_threads, or default_threads() when it is <= 0; at most MAX_WORK_THREADS.
int work_threads(int n_threads);
// The thread count when none is asked for: the physical cores this process may run on (a second
// hardware thread of a core shares its load ports and caches, and decode is bound by memory),
// else the online CPUs when the topology cannot be read.
int default_threads(void);
// The CPUs (hardware threads) this process may run on: its affinity mask, else the online CPUs.
int usable_cpus(void);
// Distinct (package, core) pairs among the CPUs dir/cpuN (dir as /sys/devices/system/cpu, each
// with topology/physical_package_id and topology/core_id) that allowed(N, ud) accepts (NULL:
// all); 0 when none could be read.
int physical_cores_in(const char *dir, int (*allowed)(int cpu, void *ud), void *ud);

#endif
