// Bandwidth passes and the decode floor (cli/bench_floor.h).
#include "cli/bench_floor.h"
#include "base/base.h"
#include "engine/cpu/threadpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bw_probe {
    threadpool *pool;
    uint64_t *buf;
    size_t n;                 // words
    size_t llc;               // bytes of the last-level cache (0: unknown)
    uint64_t sums[256];       // one per thread (read back so the loads are not optimised away)
};

static void bw_worker(void *ctx, int ith, int nth) {
    bw_probe *p = ctx;
    int64_t lo, hi;
    split_range((int64_t)p->n, ith, nth, 64, &lo, &hi);
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int64_t i = lo; i + 4 <= hi; i += 4) {
        a0 += p->buf[i]; a1 += p->buf[i + 1]; a2 += p->buf[i + 2]; a3 += p->buf[i + 3];
    }
    p->sums[ith % 256] = a0 + a1 + a2 + a3;
}

// The last-level cache of CPU 0 in bytes, from sysfs (the kernel's view; glibc's sysconf reads
// CPUID, which some virtual machines report tenfold), else sysconf; 0 when unknown.
static long llc_bytes(void) {
    long best = 0;
    int best_level = 0;
    for (int i = 0; i < 10; i++) {
        char path[96], buf[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int level = fgets(buf, sizeof buf, f) ? atoi(buf) : 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r"))) continue;
        char *end = NULL;
        long size = fgets(buf, sizeof buf, f) ? strtol(buf, &end, 10) : 0;
        fclose(f);
        if (end && (*end == 'K' || *end == 'k')) size *= 1024;
        else if (end && *end == 'M') size *= 1024 * 1024;
        if (level > best_level && size > 0) best_level = level, best = size;
    }
    if (best > 0) return best;
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return llc > 0 ? llc : sysconf(_SC_LEVEL2_CACHE_SIZE);
}

bw_probe *bw_probe_new(int n_threads) {
    size_t bytes = (size_t)1 << 30;
    long llc = llc_bytes();
    if (llc > 0 && (size_t)llc * 4 > bytes) bytes = (size_t)llc * 4;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && bytes > (size_t)pages * (size_t)page / 8) {
        bytes = (size_t)pages * (size_t)page / 8;
        if (bytes < ((size_t)256 << 20)) bytes = (size_t)256 << 20;
    }
    bytes &= ~(size_t)4095;
    bw_probe *p = xcalloc(1, sizeof *p);
    p->llc = llc > 0 ? (size_t)llc : 0;
    p->n = bytes / 8;
    p->buf = xmalloc(bytes);
    memset(p->buf, 1, bytes);
    p->pool = threadpool_new(n_threads < 1 ? 1 : n_threads);
    return p;
}

size_t bw_probe_bytes(const bw_probe *p) { return p->n * 8; }
size_t bw_probe_llc_bytes(const bw_probe *p) { return p->llc; }

double bw_probe_pass(bw_probe *p) {
    double t0 = now_sec();
    threadpool_run(p->pool, bw_worker, p);
    double dt = now_sec() - t0;
    return dt > 0 ? (double)(p->n * 8) / dt : 0.0;
}

void bw_probe_free(bw_probe *p) {
    if (!p) return;
    threadpool_free(p->pool);
    free(p->buf);
    free(p);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

bw_summary bw_summarize(const double *passes, int n) {
    bw_summary s = { 0, 0, 0, n };
    if (n <= 0) return s;
    double *v = xmalloc((size_t)n * sizeof *v);
    memcpy(v, passes, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    s.worst = v[0];
    s.best = v[n - 1];
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return s;
}

floor_verdict floor_judge(double decode_tps, double weight_bytes, double kv_bytes, const bw_summary *bw,
                          size_t llc_bytes) {
    floor_verdict v = { weight_bytes + kv_bytes, 0, 0, false, false };
    if (v.bytes_per_token <= 0 || bw->best <= 0) return v;
    v.ceiling_tps = bw->best / v.bytes_per_token;
    v.pct = 100.0 * decode_tps / v.ceiling_tps;
    v.cache_resident = llc_bytes > 0 && v.bytes_per_token <= (double)llc_bytes;
    v.disturbed = v.pct > 100.0 && !v.cache_resident;
    return v;
}

double floor_kv_bytes(double token_layer_bytes, int n_layer, int n_prompt, int n_gen) {
    if (n_gen < 1) return 0;
    return token_layer_bytes * n_layer * ((double)n_prompt + (double)(n_gen - 1) / 2.0);
}
