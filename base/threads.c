#include "base/threads.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (n_threads <= 0) n_threads = default_threads();
    return n_threads < MAX_WORK_THREADS ? n_threads : MAX_WORK_THREADS;
}

static long read_long(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

int physical_cores_in(const char *dir, int (*allowed)(int cpu, void *ud), void *ud) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    enum { MAX_CORES = 4096 };
    long (*seen)[2] = malloc(MAX_CORES * sizeof *seen);   // (package, core) pairs found so far
    int n = 0;
    for (struct dirent *e; seen && (e = readdir(d));) {
        char *end;
        if (strncmp(e->d_name, "cpu", 3) || e->d_name[3] < '0' || e->d_name[3] > '9') continue;
        long cpu = strtol(e->d_name + 3, &end, 10);
        if (*end || cpu > 1 << 20 || (allowed && !allowed((int)cpu, ud))) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s/topology/physical_package_id", dir, e->d_name);
        long pkg = read_long(path);
        snprintf(path, sizeof path, "%s/%s/topology/core_id", dir, e->d_name);
        long core = read_long(path);
        if (pkg < 0 || core < 0) continue;   // offline, or no topology
        bool dup = false;
        for (int i = 0; i < n && !dup; i++) dup = seen[i][0] == pkg && seen[i][1] == core;
        if (!dup && n < MAX_CORES) { seen[n][0] = pkg; seen[n][1] = core; n++; }
    }
    closedir(d);
    free(seen);
    return n;
}

static int in_affinity(int cpu, void *ud) { return cpu < CPU_SETSIZE && CPU_ISSET(cpu, (cpu_set_t *)ud); }

int usable_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    return nc > 0 ? (int)nc : 1;
}

int default_threads(void) {
    cpu_set_t set;
    bool have_set = sched_getaffinity(0, sizeof set, &set) == 0;
    int n = physical_cores_in("/sys/devices/system/cpu", have_set ? in_affinity : NULL, &set);
    if (n > 0) return n;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    return nc > 0 ? (int)nc : 1;
}
