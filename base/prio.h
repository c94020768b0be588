// Thread priorities (Linux: a thread's nice value is its own). The voice pipeline's threads run
// ahead of the model's and the model's ahead of other processes, where the system allows a
// thread to raise its priority (CAP_SYS_NICE, or RLIMIT_NICE: `ulimit -e`); lowering one is
// always allowed.
#ifndef CABIN_BASE_PRIO_H
#define CABIN_BASE_PRIO_H

#include <stddef.h>
#include <sys/types.h>

// The calling thread's id (for prio_set_thread from another thread).
pid_t prio_thread_id(void);
// Sets thread tid's nice value (-20..19, lower runs first); 0, or -1 with why ("raising
// priority to nice -10 needs CAP_SYS_NICE or RLIMIT_NICE >= 30 (ulimit -e: 0)").
int prio_set_thread(pid_t tid, int nice, char *why, size_t n);
int prio_set_self(int nice, char *why, size_t n);
// Raises the calling thread to nice (never lowers it): 1 when it was raised (its value before
// in *prev), 0 when it already ran at nice or ahead, -1 with why when it was not allowed.
int prio_raise_self(int nice, int *prev, char *why, size_t n);
// Thread tid's nice value (0 if it cannot be read).
int prio_get_thread(pid_t tid);

#endif
