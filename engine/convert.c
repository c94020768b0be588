#include "engine/convert.h"
#include "engine/cpu/kernels.h"
#include "base/base.h"
#include "engine/wtype.h"

#include <stdlib.h>

int convert_avx512_usable(void) {
    const cpu_features *f = cpu_get_features();
    return f->avx512f && f->avx512bw && f->avx512vl && f->f16c;
}

void convert_row(const void *src, uint32_t src_type, void *dst, uint32_t dst_type, int64_t k, float *scratch) {
    const int fast = convert_avx512_usable();   // the features are read once (cpu_get_features)
    if (src_type == WT_F16 && fast) f16_to_f32_avx512(src, scratch, k);
    else wtype_get(src_type)->to_f32(src, scratch, k);
    if (fast && dst_type == WT_Q4_0) quantize_row_q4_0_avx512(scratch, dst, k);
    else if (fast && dst_type == WT_Q8_0) quantize_row_q8_0_avx512(scratch, dst, k);
    else wtype_get(dst_type)->from_f32(scratch, dst, k);
}

typedef struct conv_job {
    const uint8_t *src;
    uint32_t src_type, dst_type;
    size_t src_row_bytes, dst_row_bytes;
    uint8_t *dst;
    int64_t k, n_rows;
    int nth, ith;
} conv_job;

static void *conv_worker(void *arg) {
    conv_job *j = arg;
    int64_t per = (j->n_rows + j->nth - 1) / j->nth;
    int64_t r0 = per * j->ith, r1 = r0 + per < j->n_rows ? r0 + per : j->n_rows;
    float *row = xmalloc((size_t)j->k * sizeof(float));
    for (int64_t r = r0; r < r1; r++)
        convert_row(j->src + (size_t)r * j->src_row_bytes, j->src_type, j->dst + (size_t)r * j->dst_row_bytes,
                    j->dst_type, j->k, row);
    free(row);
    return NULL;
}

void convert_rows(const void *src, uint32_t src_type, size_t src_row_bytes, void *dst, uint32_t dst_type,
                  size_t dst_row_bytes, int64_t k, int64_t n_rows, int n_threads) {
    n_threads = work_threads(n_threads);
    if ((int64_t)n_threads > n_rows) n_threads = (int)(n_rows > 0 ? n_rows : 1);
    conv_job jobs[MAX_WORK_THREADS];
    for (int i = 0; i < n_threads; i++)
        jobs[i] = (conv_job){ src, src_type, dst_type, src_row_bytes, dst_row_bytes, dst, k, n_rows, n_threads, i };
    run_on_threads(conv_worker, jobs, sizeof jobs[0], n_threads);
}
