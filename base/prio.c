// Thread priorities (see prio.h).
#include "base/prio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

pid_t prio_thread_id(void) { return (pid_t)syscall(SYS_gettid); }

int prio_get_thread(pid_t tid) {
    errno = 0;
    int v = getpriority(PRIO_PROCESS, (id_t)tid);
    return errno ? 0 : v;
}

int prio_set_thread(pid_t tid, int nice, char *why, size_t n) {
    nice = nice < -20 ? -20 : nice > 19 ? 19 : nice;
    if (setpriority(PRIO_PROCESS, (id_t)tid, nice) == 0) return 0;
    int e = errno;
    if (why && n) {
        struct rlimit rl;
        // RLIMIT_NICE's ceiling is 20 - rlim_cur (the kernel's encoding)
        if ((e == EACCES || e == EPERM) && getrlimit(RLIMIT_NICE, &rl) == 0)
            snprintf(why, n, "raising priority to nice %d needs CAP_SYS_NICE or RLIMIT_NICE >= %d (ulimit -e: %llu)",
                     nice, 20 - nice, (unsigned long long)rl.rlim_cur);
        else
            snprintf(why, n, "setpriority(nice %d): %s", nice, strerror(e));
    }
    return -1;
}

int prio_set_self(int nice, char *why, size_t n) { return prio_set_thread(prio_thread_id(), nice, why, n); }

int prio_raise_self(int nice, int *prev, char *why, size_t n) {
    int now = prio_get_thread(prio_thread_id());
    if (prev) *prev = now;
    if (now <= nice) return 0;
    return prio_set_self(nice, why, n) == 0 ? 1 : -1;
}
