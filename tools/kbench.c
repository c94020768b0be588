// Kernel micro-benchmark (not built by the Makefile). Build by hand from the repository root,
// after `make` (it links the engine library):
//   cc -std=c11 -D_GNU_SOURCE -O2 -pthread -I. tools/kbench.c build/libcabin_engine.a
//      build/libcabin_base.a -lcjson -lm -o /tmp/kbench        (one line)
//   /tmp/kbench [table] [threads] [type|all] [decode|prefill|all]
// Times are the best call of those run in about a second (one thread: its CPU time, so that a
// shared machine's other work counts less; several: wall time).
// Decode: one token against a weight matrix that does not fit in cache (several copies are
// cycled), reported as GB/s of weight bytes. Prefill: 64 tokens, reported as GFLOP/s (2*k per
// weight per token). KBENCH_HOT=1: decode from one cached copy (kernel speed without memory).
// KBENCH_PACKED=1: the types the table has r16 kernels for run those, on packed weights.
#include "engine/cpu/kernels.h"
#include "base/base.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct {
    const cpu_kernels *kt;
    uint32_t type;
    const uint8_t *w;
    size_t wrb;
    int64_t k, row0, row1, n_tok;
    const void *x;
    size_t xrb;
    float *y;
    int64_t ldy;
    int packed;   // w is in the row-interleaved layout (cpu_pack_r16): the matmul_packed kernel
} job;

static double thread_cpu_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *run_job(void *p) {
    job *j = p;
    (j->packed ? j->kt->matmul_packed : j->kt->matmul)[j->type](j->w, j->wrb, j->k, j->row0, j->row1, j->x, j->xrb, j->n_tok, j->y, j->ldy);
    return NULL;
}

// Splits rows over n_threads (the calling thread takes the first share).
static void matmul_mt(job base, int n_threads) {
    pthread_t th[16];
    job jobs[16];
    const int64_t rows = base.row1 - base.row0;
    for (int i = 0; i < n_threads; i++) {
        jobs[i] = base;
        jobs[i].row0 = base.row0 + rows * i / n_threads;
        jobs[i].row1 = base.row0 + rows * (i + 1) / n_threads;
        if (i) pthread_create(&th[i], NULL, run_job, &jobs[i]);
    }
    run_job(&jobs[0]);
    for (int i = 1; i < n_threads; i++) pthread_join(th[i], NULL);
}

static double bench(const cpu_kernels *kt, uint32_t type, int64_t rows, int64_t k, int64_t n_tok,
                    int n_threads, double min_time, double *gbs, double *gflops) {
    const wtype_info *ti = wtype_get(type);
    const char *pk = getenv("KBENCH_PACKED");
    const int packed = pk && *pk && *pk != '0' && kt->matmul_packed[type];
    const size_t wrb = (size_t)wtype_row_bytes(type, (uint64_t)k), wbytes = wrb * (size_t)rows;
    // Enough copies to exceed any cache (>= 256 MB) for decode; one for prefill.
    int copies = n_tok == 1 && !getenv("KBENCH_HOT") ? (int)(256.0e6 / (double)wbytes) + 1 : 1;
    uint8_t **w = xmalloc(sizeof(uint8_t *) * (size_t)copies);
    float *row = xmalloc(sizeof(float) * (size_t)k);
    for (int64_t i = 0; i < k; i++) row[i] = (float)((i * 7919 % 1000) - 500) / 500.0f;
    for (int c = 0; c < copies; c++) {
        w[c] = xmalloc(wbytes);
        if (ti->from_f32)
            for (int64_t r = 0; r < rows; r++) ti->from_f32(row, w[c] + (size_t)r * wrb, k);
        else   // a type cabin reads but does not write: arbitrary bytes time the same
            for (size_t i = 0; i < wbytes; i++) w[c][i] = (uint8_t)(i * 2654435761u >> 13);
        if (packed) {
            uint8_t *p = aligned_alloc(64, (cpu_r16_bytes(type, rows, k) + 63) / 64 * 64);
            cpu_pack_r16(type, w[c], wrb, rows, k, 0, (rows + 15) / 16, p);
            free(w[c]);
            w[c] = p;
        }
    }
    float *x = xmalloc(sizeof(float) * (size_t)(k * n_tok));
    for (int64_t i = 0; i < k * n_tok; i++) x[i] = (float)((i * 104729 % 2000) - 1000) / 1000.0f;
    const enum act_format af = kt->act_format[type];
    const int quant = af != ACT_F32;
    const size_t xqrb = cpu_act_row_bytes(af, k);
    uint8_t *xq = quant ? xmalloc(xqrb * (size_t)n_tok) : NULL;
    if (quant) cpu_act_prepare(kt, af, x, k, k, n_tok, xq);
    float *y = xmalloc(sizeof(float) * (size_t)(rows * n_tok));
    job base = { kt, type, NULL, wrb, k, 0, rows, n_tok, quant ? (const void *)xq : x,
                 quant ? xqrb : (size_t)k * 4, y, rows, packed };
    base.w = w[0];
    matmul_mt(base, n_threads); // warm-up
    // Best single call of those run in min_time: the machine may be shared, and the fastest
    // call is the one least disturbed by others.
    double best = 1e30, total = 0;
    for (int iters = 0; total < min_time || iters < 5; iters++) {
        base.w = w[iters % copies];
        const double t0 = now_sec(), c0 = thread_cpu_sec();
        matmul_mt(base, n_threads);
        const double dt = now_sec() - t0, dc = thread_cpu_sec() - c0;
        total += dt;
        // One thread: its CPU time, which leaves out time the scheduler gave to others.
        const double d = n_threads == 1 ? dc : dt;
        if (d < best) best = d;
    }
    const double per = best;
    *gbs = (double)wbytes / per / 1e9;
    *gflops = 2.0 * (double)rows * (double)k * (double)n_tok / per / 1e9;
    for (int c = 0; c < copies; c++) free(w[c]);
    free(w);
    free(row);
    free(x);
    free(xq);
    free(y);
    return per;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "auto";
    const int n_threads = argc > 2 ? atoi(argv[2]) : 1;
    const char *only_type = argc > 3 && strcmp(argv[3], "all") ? argv[3] : NULL;
    const char *mode = argc > 4 ? argv[4] : "all";
    const cpu_kernels *kt = cpu_kernels_select(name);
    if (!kt || n_threads < 1 || n_threads > 16) {
        fprintf(stderr, "kbench: table '%s' can't run here (or bad thread count)\n", name);
        return 1;
    }
    static const uint32_t types[] = { WT_Q4_0, WT_Q8_0, WT_F16, WT_BF16, WT_F32, WT_Q4_1, WT_Q5_0, WT_Q5_1,
                                      WT_IQ4_NL, WT_IQ4_XS, WT_Q2_K, WT_Q3_K, WT_Q4_K, WT_Q5_K, WT_Q6_K };
    static const int64_t shapes[][2] = { { 2048, 8192 }, { 8192, 2048 } }; // rows, k
    printf("table %s, %d thread(s)\n", kt->name, n_threads);
    if (strcmp(mode, "prefill")) printf("%-6s %12s %10s %10s\n", "type", "rows x k", "decode", "weights");
    for (size_t i = 0; i < sizeof types / sizeof types[0] && strcmp(mode, "prefill"); i++)
        for (size_t s = 0; s < 2; s++) {
            if (only_type && strcasecmp(only_type, wtype_name(types[i]))) continue;
            double gbs, gf;
            double per = bench(kt, types[i], shapes[s][0], shapes[s][1], 1, n_threads, 1.0, &gbs, &gf);
            printf("%-6s %5lldx%-6lld %8.3f ms %8.2f GB/s %8.2f GFLOP/s\n", wtype_name(types[i]),
                   (long long)shapes[s][0], (long long)shapes[s][1], per * 1e3, gbs, gf);
        }
    if (strcmp(mode, "decode")) printf("\nprefill, 64 tokens\n");
    static const int64_t pshapes[][2] = { { 2048, 2048 }, { 2048, 8192 }, { 8192, 2048 } };
    for (size_t i = 0; i < sizeof types / sizeof types[0] && strcmp(mode, "decode"); i++)
        for (size_t s = 0; s < 3; s++) {
            if (only_type && strcasecmp(only_type, wtype_name(types[i]))) continue;
            double gbs, gf;
            double per = bench(kt, types[i], pshapes[s][0], pshapes[s][1], 64, n_threads, 1.0, &gbs, &gf);
            printf("%-6s %5lldx%-6lld %8.3f ms %8.2f GFLOP/s (%.3f ms/token)\n", wtype_name(types[i]),
                   (long long)pshapes[s][0], (long long)pshapes[s][1], per * 1e3, gf, per * 1e3 / 64);
        }
    return 0;
}
