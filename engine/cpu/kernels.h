// CPU compute kernels: one table per instruction set (scalar reference, AVX2, AVX-512), chosen
// at run time. The scalar table is the reference every other table is tested against.
#ifndef CABIN_CPU_KERNELS_H
#define CABIN_CPU_KERNELS_H

#include "engine/wtype.h"

#include <stddef.h>
#include <stdint.h>

// Y = X · Wᵀ for a range of weight rows.
//   w:    weight matrix, rows of k weights of the kernel's type, row r at w + r*w_row_bytes
//   x:    n_tok activation rows of k values, row t at x + t*x_row_bytes, in the kernel's
//         activation format (see cpu_kernels.act_format)
//   y:    y[t*ldy + r] for t in [0, n_tok), r in [row0, row1)
// k is a multiple of the weight type's block size (32 for Q4_0/Q8_0).
typedef void (*matmul_rows_fn)(const void *w, size_t w_row_bytes, int64_t k, int64_t row0,
                               int64_t row1, const void *x, size_t x_row_bytes, int64_t n_tok,
                               float *y, int64_t ldy);

enum act_format {
    ACT_F32,   // float32 rows of k values
    ACT_Q8_0,  // k/32 block_q8_0 per row (see quantize_act)
};

typedef struct cpu_kernels {
    const char *name;                   // "scalar", "avx2", "avx512"
    matmul_rows_fn matmul[WT_COUNT];    // NULL where the type is not supported
    enum act_format act_format[WT_COUNT];
    // Activation row (k floats) to Q8_0 blocks, for ACT_Q8_0 kernels.
    void (*quantize_act_q8_0)(const float *x, block_q8_0 *y, int64_t k);
    // Float row helpers used by the forward pass (n any size).
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    void (*axpy_f32)(float a, const float *x, float *y, int64_t n);      // y += a*x
    float (*dot_f16_f32)(const uint16_t *a, const float *b, int64_t n);  // fp16 a, f32 b
    void (*axpy_f16_f32)(float a, const uint16_t *x, float *y, int64_t n); // y += a*fp16 x
    // Attention over one tile of ns cached slots for the G query heads that share a kv head
    // (head dim hd; q is G rows of hd floats, k and v are ns rows of hd floats):
    //   scores: s[g*lds + i] = scale * dot(q[g], k[i])
    //   values: o[g] += sum_i p[g*ldp + i] * v[i]          (o is G rows of hd floats)
    void (*attn_scores)(const float *q, int G, const float *k, int ns, int hd, float scale,
                        float *s, int64_t lds);
    void (*attn_values)(const float *p, int64_t ldp, int G, const float *v, int ns, int hd, float *o);
    // Softmax numerator: x[i] = exp(x[i] - mx) (exactly 0 where x[i] is -inf); returns the sum.
    float (*exp_shift)(float *x, int64_t n, float mx);
    // RoPE on n rows (row r at rows + r*ld): pairs (2i, 2i+1), or (i, i+half) when neox, rotated
    // by cs + r*2*half = (cos, sin) per pair, i < half.
    void (*rope_rows)(const float *cs, int half, int neox, int n, float *rows, int64_t ld);
} cpu_kernels;

// Tables. cpu_kernels_avx2/avx512 return NULL when the processor (and OS) can't run them.
const cpu_kernels *cpu_kernels_scalar(void);
const cpu_kernels *cpu_kernels_avx2(void);
const cpu_kernels *cpu_kernels_avx512(void);
// The best table this machine can run, or the one named ("scalar", "avx2", "avx512", "auto");
// NULL if the named one can't run here. For NULL or "auto", the environment variable
// CABIN_KERNELS (same names) decides when set, so NULL also means "CABIN_KERNELS names a table
// this machine can't run, or no table at all".
const cpu_kernels *cpu_kernels_select(const char *name);

// CPU features as the OS allows them (CPUID and XGETBV for saved register state).
typedef struct cpu_features {
    int avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
    int amx_tile_advertised, amx_usable; // AMX: usable only if the OS granted the tile state
} cpu_features;
const cpu_features *cpu_get_features(void);

// Internal to engine/cpu/kernels*.c: the tables themselves, defined in files compiled for their
// instruction set. Reading them is safe anywhere; calling through them is not until the getters
// above (which check cpu_get_features) have returned them.
extern const cpu_kernels cpu_kernels_scalar_table;
extern const cpu_kernels cpu_kernels_avx2_table;
extern const cpu_kernels cpu_kernels_avx512_table;
// The scalar attention pieces, shared by tables without their own.
void attn_scores_ref(const float *q, int G, const float *k, int ns, int hd, float scale, float *s, int64_t lds);
void attn_values_ref(const float *p, int64_t ldp, int G, const float *v, int ns, int hd, float *o);
float exp_shift_ref(float *x, int64_t n, float mx);
void rope_rows_ref(const float *cs, int half, int neox, int n, float *rows, int64_t ld);
// Per-thread scratch for kernels (prepared activations): at least `bytes`, 64-byte aligned,
// contents undefined; valid until the same thread asks again. Grows to the largest request and
// is freed when the thread exits.
void *cpu_kernels_scratch(size_t bytes);

#endif
