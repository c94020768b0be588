// CPU compute kernels: one table per instruction set (scalar reference, AVX2, AVX-512), chosen
// at run time. The scalar table is the reference every other table is tested against.
#ifndef CABIN_CPU_KERNELS_H
#define CABIN_CPU_KERNELS_H

#include "engine/wtype.h"

#include <stdbool.h>
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
    ACT_Q8_K,  // k/256 block_q8_k per row (quantize_row_q8_k_ref): the K-quants and IQ4_XS
    ACT_BF16,  // k bf16 per row (f32_to_bf16), zero-padded to a multiple of 32
    ACT_BF16_SPLIT, // bf16 high parts and remainders in AMX tiles, 16 rows to a block (4 k_pad bytes
                    // a row, k_pad: k rounded up to 32; cpu_act_bf16_split): the AMX prefill kernels.
                    // Rows are prepared in whole blocks: cpu_act_prepare's dst starts one.
};


// The AVX2 Q8_K activation quantizer, which the AVX-512 table uses too.
void cpu_quantize_act_q8_k_avx2(const float *x, block_q8_k *y, int64_t k);

typedef struct cpu_kernels {
    const char *name;                   // "scalar", "avx2", "avx512"
    matmul_rows_fn matmul[WT_COUNT];    // NULL where the type is not supported
    enum act_format act_format[WT_COUNT];
    // Kernels over weights repacked into the row-interleaved layout below (cpu_pack_r16), NULL
    // where the table has none for the type. Same arguments as matmul, except that w is the
    // packed matrix and w_row_bytes is ignored (the layout's strides follow from k); the
    // activations are in act_format[type]. Any row range works; a kernel computes whole groups
    // of 16 rows and writes only the rows asked for.
    matmul_rows_fn matmul_packed[WT_COUNT];
    // Prefill kernels, used instead of matmul_packed when a product has prefill_min_tokens
    // tokens or more (NULL where the table has none): same arguments, activations in
    // act_format_prefill[type], the token count rounded up to a multiple of 16 with zero rows
    // present past n_tok (only n_tok rows of y are written). The AMX kernels
    // (engine/cpu/kernels_amx_avx512.c, cpu_kernels_add_amx).
    matmul_rows_fn matmul_prefill[WT_COUNT];
    enum act_format act_format_prefill[WT_COUNT];
    int prefill_min_tokens;
    void (*act_bf16_split)(const float *x, uint8_t *block, int row, int64_t k);   // ACT_BF16_SPLIT
    // Activation row (k floats) to Q8_0 blocks, for ACT_Q8_0 kernels.
    void (*quantize_act_q8_0)(const float *x, block_q8_0 *y, int64_t k);
    // Activation row (k floats, k a multiple of 256) to Q8_K blocks, for ACT_Q8_K kernels: the
    // bytes quantize_row_q8_k_ref writes, for every finite input.
    void (*quantize_act_q8_k)(const float *x, block_q8_k *y, int64_t k);
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
    // Softmax in place: x[i] = exp(x[i] - max) / sum (all 0 when every x[i] is -inf).
    void (*softmax)(float *x, int64_t n);
    // RoPE on n rows (row r at rows + r*ld): pairs (2i, 2i+1), or (i, i+half) when neox, rotated
    // by cs + r*2*half = (cos, sin) per pair, i < half.
    void (*rope_rows)(const float *cs, int half, int neox, int n, float *rows, int64_t ld);
    // y[i] = fp16 x[i] as float (n any size).
    void (*f16_to_f32)(const uint16_t *x, float *y, int64_t n);
    // Key tiles for attention over the KV cache (engine/cpu/attn_kv.c), CHANNEL-major: kt is
    // (hd, ns) floats, channel c's ns slots at kt + c*ldt, so every step runs along slots.
    //   kq_tile: dequantizes the per-channel key store (KIVI): channel c's codes are contiguous
    //     along slots, starting at codes + c*cstride bytes (bits 8: one byte per slot; bits 4:
    //     two slots per byte, the even slot in the low nibble); slots i0 .. i0+ns of it;
    //     kt[c][i] = min_c + scale_c * code(c, i0 + i), sm = (hd, 2) f16 (scale, min); then
    //     rotates the tile as rope_t does with (cst, ldc, half, neox) (half 0: no rotation).
    //   f16_rows_t: kt[c][i] = rows[i*ldr + c] (ns F16 rows of hd channels, transposed), then
    //     rotated as kq_tile is.
    //   rope_t: rotates channel pairs (2f, 2f+1), or (f, f+half) when neox, f < half, of each
    //     slot i by cos = cst[2f*ldc + i], sin = cst[(2f+1)*ldc + i] (the slot-major table).
    //   attn_scores_t: s[g*lds + i] = scale * sum_c q[g][c] * kt[c][i]  (q: G rows of hd).
    void (*kq_tile)(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm,
                    int hd, int ns, const float *cst, int64_t ldc, int half, int neox, float *kt,
                    int64_t ldt);
    void (*f16_rows_t)(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc,
                       int half, int neox, float *kt, int64_t ldt);
    void (*rope_t)(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt);
    void (*attn_scores_t)(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd,
                          float scale, float *s, int64_t lds);
    // Values from the per-slot quantized store, dequantized as they are summed:
    //   o[g*ldo + c] += sum_i p[g*ldp + i] * (min_i + scale_i * code(i, c0 + c)), c < nc,
    // slot i's codes at codes + i*rstride (bits 8: byte per channel; bits 4: nibbles, even
    // channel low), its f16 (scale, min) at sm + i*smstride; the nc channels share one group.
    void (*attn_values_q)(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride,
                          int bits, int c0, const uint16_t *sm, int64_t smstride, int ns, int nc,
                          float *o, int64_t ldo);
    // Values from F16 rows: o[g*hd + c] += sum_i p[g*ldp + i] * v[i*ldv + c], c < hd.
    void (*attn_values_f16)(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns,
                            int hd, float *o);
} cpu_kernels;

// The AMX prefill kernels and their activation format, added to an AVX-512 table where the
// processor has AMX-BF16 and the OS granted the tile state (cpu_features.amx_usable).
void cpu_kernels_add_amx(cpu_kernels *table);
void cpu_act_bf16_split(const float *x, uint8_t *block, int row, int64_t k);

// Bytes of one activation row of k values in format af, and n rows of floats (row t at
// x + t*ldx) written in it (row t at dst + t*cpu_act_row_bytes): the one place the formats are
// made, for the backend, the tests and the benchmarks.
size_t cpu_act_row_bytes(enum act_format af, int64_t k);
void cpu_act_prepare(const cpu_kernels *kt, enum act_format af, const float *x, int64_t ldx,
                     int64_t k, int64_t n, void *dst);

// Tables. cpu_kernels_avx2/avx512 return NULL when the processor (and OS) can't run them.
const cpu_kernels *cpu_kernels_scalar(void);
const cpu_kernels *cpu_kernels_avx2(void);
const cpu_kernels *cpu_kernels_avx512(void);
// The AVX-512 table with the vdpbf16ps kernels for BF16, NULL without AVX-512 BF16:
// cpu_kernels_avx512 returns it where those kernels are the faster (cpu_bf16_dot_pays).
const cpu_kernels *cpu_kernels_avx512_bf16(void);
// The best table this machine can run, or the one named ("scalar", "avx2", "avx512", "auto");
// NULL if the named one can't run here. For NULL or "auto", the environment variable
// CABIN_KERNELS (same names) decides when set, so NULL also means "CABIN_KERNELS names a table
// this machine can't run, or no table at all".
const cpu_kernels *cpu_kernels_select(const char *name);

// CPU features as the OS allows them (CPUID and XGETBV for saved register state).
typedef struct cpu_features {
    int avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
    int amx_tile_advertised, amx_usable; // AMX: usable only if the OS granted the tile state
    int amx_bf16;                        // AMX-BF16 (TDPBF16PS), as CPUID advertises it
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
void softmax_ref(float *x, int64_t n);
void rope_rows_ref(const float *cs, int half, int neox, int n, float *rows, int64_t ld);
void f16_to_f32_ref(const uint16_t *x, float *y, int64_t n);
void kq_tile_ref(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm, int hd, int ns,
                 const float *cst, int64_t ldc, int half, int neox, float *kt, int64_t ldt);
void f16_rows_t_ref(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc,
                    int half, int neox, float *kt, int64_t ldt);
void rope_t_ref(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt);
void attn_scores_t_ref(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd, float scale,
                       float *s, int64_t lds);
void attn_values_q_ref(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride, int bits,
                       int c0, const uint16_t *sm, int64_t smstride, int ns, int nc, float *o, int64_t ldo);
void attn_values_f16_ref(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns, int hd, float *o);
// The AVX2 KV tile kernels (engine/cpu/attn_kv_avx2.c), in the avx2 table.
void kq_tile_avx2(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm, int hd, int ns,
                  const float *cst, int64_t ldc, int half, int neox, float *kt, int64_t ldt);
void f16_rows_t_avx2(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc,
                     int half, int neox, float *kt, int64_t ldt);
void rope_t_avx2(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt);
void attn_scores_t_avx2(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd, float scale,
                        float *s, int64_t lds);
void attn_values_q_avx2(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride, int bits,
                        int c0, const uint16_t *sm, int64_t smstride, int ns, int nc, float *o, int64_t ldo);
void attn_values_f16_avx2(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns, int hd,
                          float *o);
// The AVX-512 KV tile kernels (engine/cpu/attn_kv_avx512.c), in the avx512 table.
void cvt_f16_f32_avx512(const uint16_t *x, float *y, int64_t n);
void kq_tile_avx512(const uint8_t *codes, size_t cstride, int bits, int i0, const uint16_t *sm, int hd, int ns,
                    const float *cst, int64_t ldc, int half, int neox, float *kt, int64_t ldt);
void f16_rows_t_avx512(const uint16_t *rows, int64_t ldr, int ns, int hd, const float *cst, int64_t ldc,
                       int half, int neox, float *kt, int64_t ldt);
void rope_t_avx512(const float *cst, int64_t ldc, int half, int neox, int ns, float *kt, int64_t ldt);
void attn_scores_t_avx512(const float *q, int G, const float *kt, int64_t ldt, int ns, int hd, float scale,
                          float *s, int64_t lds);
void attn_values_q_avx512(const float *p, int64_t ldp, int G, const uint8_t *codes, size_t rstride, int bits,
                          int c0, const uint16_t *sm, int64_t smstride, int ns, int nc, float *o, int64_t ldo);
void attn_values_f16_avx512(const float *p, int64_t ldp, int G, const uint16_t *v, int64_t ldv, int ns, int hd,
                            float *o);
// The types without a SIMD kernel of their own (engine/cpu/kernels_dequant_avx2.c): weights
// dequantized a chunk at a time against 8-bit activations, blocked as the reference blocks them
// for each type (ACT_Q8_0 for the 32-weight types, ACT_Q8_K for the 256-weight ones); in the
// AVX2 and AVX-512 tables.
#define DQ8_TYPES(X) X(q4_1, WT_Q4_1, ACT_Q8_0) X(q5_0, WT_Q5_0, ACT_Q8_0) X(q5_1, WT_Q5_1, ACT_Q8_0) \
    X(iq4_nl, WT_IQ4_NL, ACT_Q8_0) X(iq4_xs, WT_IQ4_XS, ACT_Q8_K) X(q2_k, WT_Q2_K, ACT_Q8_K)            \
    X(q3_k, WT_Q3_K, ACT_Q8_K) X(q5_k, WT_Q5_K, ACT_Q8_K) X(fp8, WT_FP8, ACT_Q8_0)
#define DQ8_DECLARE(name, type, act) \
    void matmul_##name##_dq8(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                             size_t xrb, int64_t n_tok, float *y, int64_t ldy);
DQ8_TYPES(DQ8_DECLARE)
// Table entries: .matmul = { ..., DQ8_TYPES(DQ8_MATMUL) }, .act_format = { ..., DQ8_TYPES(DQ8_ACT) }.
// Q4_K and Q6_K have their own integer kernels (engine/cpu/kernels_kquant_avx2.c, ACT_Q8_K), in
// both tables.
void matmul_q4_k_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                      size_t xrb, int64_t n_tok, float *y, int64_t ldy);
void matmul_q6_k_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,
                      size_t xrb, int64_t n_tok, float *y, int64_t ldy);
// The r16 kernels of the AVX-512 table (engine/cpu/kernels_r16_avx512.c) and of the AVX2 table
// (engine/cpu/kernels_r16_avx2.c: the same layouts, two 256-bit halves to a line), for every type
// R16_TYPES names: matmul_K_r16_avx512 and matmul_K_r16_avx2.
#define R16_TYPES(X) X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(iq4_nl) X(q8_0) X(q2_k) X(q3_k) X(q4_k) X(q5_k) X(q6_k) X(iq4_xs)
#define R16_DECLARE(K)                                                                                    \
    void matmul_##K##_r16_avx512(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x, \
                                 size_t xrb, int64_t n_tok, float *y, int64_t ldy);                        \
    void matmul_##K##_r16_avx2(const void *w, size_t wrb, int64_t k, int64_t row0, int64_t row1, const void *x,   \
                               size_t xrb, int64_t n_tok, float *y, int64_t ldy);
R16_TYPES(R16_DECLARE)
// F16 and BF16 (ACT_F32 activations), in both tables (on a processor with AVX-512 BF16 where
// they are faster, the AVX-512 table has the vdpbf16ps kernels in BF16's place:
// cpu_kernels_avx512_add_bf16).
R16_DECLARE(f16)
R16_DECLARE(bf16)
// Puts the vdpbf16ps kernels (row and r16, ACT_BF16) for BF16 into an AVX-512 table: only for
// processors with AVX-512 BF16 (cpu_kernels_avx512_bf16 does it).
void cpu_kernels_avx512_add_bf16(struct cpu_kernels *table);
// Whether those kernels beat the table's own FMA ones here, timed on this processor (only on one
// with AVX-512 BF16); cpu_kernels_avx512 asks once.
bool cpu_bf16_dot_pays(void);
#define DQ8_MATMUL(name, type, act) [type] = matmul_##name##_dq8,
#define DQ8_ACT(name, type, act) [type] = act,

// The row-interleaved layouts ("r16"), made once when a weight is prepared (cpu_pack_r16) so
// that an integer dot product works on 16 rows at once (one row per 32-bit lane): no per-row
// reduction, one scale load per 16 rows and a single weight stream. Rows go in groups of 16
// (the last group padded with zero rows); a group is a run of units, each 16 rows x a span of
// the row; chunked bytes are 4-byte chunks of the 16 rows side by side (byte j of row i at
// (j/4*16 + i)*4 + j%4). Units are whole cache lines:
//   Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0 (a pair of 32-weight blocks; an odd count padded with a
//     zero block): 64 bytes of scales (16 fp16 d of the first block, then 16 of the second), for
//     Q4_1 and Q5_1 then 64 bytes of their m likewise, then each block's payload: its codes
//     chunked (16 bytes of nibbles a row; Q8_0: 32 int8), and for Q5_0 and Q5_1 the fifth bits,
//     4 bytes a row chunked, regrouped so that a nibble's fifth bit shares its byte
//     (engine/cpu/pack_r16.c). 576 (Q4_0, IQ4_NL) / 640 / 704 / 768 / 1088 (Q8_0) bytes.
//   Q4_K (a 256-weight super-block): d[16], dmin[16] (fp16), the 8 six-bit scales and then the 8
//     mins unpacked to bytes, [j][row], then the 128 bytes of nibbles chunked. 2368 bytes.
//   Q5_K (a super-block): Q4_K's unit, then the 32 bytes of fifth bits (qh) chunked. 2880 bytes.
//   Q2_K (a super-block): d[16], dmin[16] (fp16), the (scale, min) bytes [16][row] as the block
//     has them, then the 64 bytes of 2-bit codes a row chunked. 1344 bytes.
//   Q3_K (a super-block): d[16] (fp16), scales [16][row] (int8, ls - 32), then the 64 bytes of
//     2-bit codes and the 32 bytes of high bits (hmask) a row, each chunked, 32 bytes of padding.
//     1856 bytes.
//   IQ4_XS (a super-block): d[16] (fp16), scales [8][row] (int8, ls - 32), then the codebook
//     indices in Q4_K's nibble order, 128 bytes a row chunked, 32 bytes of padding. 2240 bytes.
//   Q6_K (a super-block): d[16] (fp16), scales [16][row] (int8), then the 6-bit codes as three
//     planes of 64 bytes a row, each chunked (four codes in three bytes, engine/cpu/pack_r16.c),
//     32 bytes of padding. 3392 bytes.
//   BF16 (32 weights; the row's end padded with zeros): its 64 bytes a row chunked, so a chunk
//     is one pair of weights. 1024 bytes.
//   F16 (32 weights; the row's end padded with zeros): line p holds weight 2p of the 16 rows
//     (16 fp16 side by side), then weight 2p + 1. 1024 bytes.
bool cpu_r16_type(uint32_t type);   // Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0, Q2_K..Q6_K, IQ4_XS, F16, BF16
size_t cpu_r16_unit_bytes(uint32_t type);
size_t cpu_r16_bytes(uint32_t type, int64_t rows, int64_t k);
// The rows of row group g (rows 16g .. 16g+15) that lie in [row0, row1), as bits (bit i: row 16g+i):
// the rows a kernel writes.
static inline unsigned cpu_r16_rows_in(int64_t g, int64_t row0, int64_t row1) {
    const int64_t lane0 = row0 > g * 16 ? row0 - g * 16 : 0, lane1 = row1 < (g + 1) * 16 ? row1 - g * 16 : 16;
    return ((1u << lane1) - 1) & ~((1u << lane0) - 1);
}
// A packed tile (both tables): row group gw's weights against the activation rows of T tokens
// at x (xrb apart), the group's sums of each token into y (ldy apart) for the rows in `store`
// (cpu_r16_rows_in); tiles[T - 1] takes T tokens. n is the tile's own count: the K-quants' nsb
// super-block units a row (Q8_K activations), or F16's and BF16's row length k (float ones).
typedef void (*cpu_r16_tile_fn)(const uint8_t *gw, int64_t n, const uint8_t *x, size_t xrb, float *y, int64_t ldy,
                                unsigned store);
// Rows [row0, row1) of a packed matrix whose row groups are group_bytes apart: every row group of
// the range sweeps the tokens up to tmax at a time (the group's weights stay in L2 between tiles),
// each tile given n.
static inline void cpu_r16_sweep(const cpu_r16_tile_fn *tiles, int tmax, size_t group_bytes, int64_t n, const void *w,
                                 int64_t row0, int64_t row1, const void *x, size_t xrb, int64_t n_tok, float *y,
                                 int64_t ldy) {
    for (int64_t g = row0 / 16; g * 16 < row1; g++) {
        const unsigned store = cpu_r16_rows_in(g, row0, row1);
        const uint8_t *gw = (const uint8_t *)w + (size_t)g * group_bytes;
        for (int64_t t = 0; t < n_tok;) {
            const int T = n_tok - t >= tmax ? tmax : (int)(n_tok - t);
            tiles[T - 1](gw, n, (const uint8_t *)x + (size_t)t * xrb, xrb, y + t * ldy + g * 16, ldy, store);
            t += T;
        }
    }
}
// Packs row groups [g0, g1) of the (rows, k) matrix w (row r at w + r*w_row_bytes) into dst,
// which holds the whole packed matrix (cpu_r16_bytes): threads may pack disjoint group ranges.
void cpu_pack_r16(uint32_t type, const void *w, size_t w_row_bytes, int64_t rows, int64_t k,
                  int64_t g0, int64_t g1, void *dst);

// The row kernels' weight streams (several rows read side by side) are prefetched one tile
// ahead, the same position R rows on: far enough to cover memory latency at full bandwidth,
// which the hardware prefetchers alone don't reach with interleaved row streams. Into L2
// (locality 2: prefetcht1), not L1: a tile ahead is R rows (up to 96 KiB of F16 at k = 8192),
// more than L1 holds while the tile streams its own rows through it (the 1B F16 file decoded
// 10-14 tok/s prefetching into L1, 12-19 into L2, alternated, both tables). The address is
// integer arithmetic: the line may lie past the end of the matrix (harmless for a prefetch),
// which pointer arithmetic may not express.
static inline void cpu_prefetch_ahead(const void *p, size_t ahead) {
    __builtin_prefetch((const void *)((uintptr_t)p + ahead), 0, 2);
}

// Per-thread scratch for kernels (prepared activations): at least `bytes`, 64-byte aligned,
// contents undefined; valid until the same thread asks again. Grows to the largest request and
// is freed when the thread exits. (engine/cpu/kernels_scratch.c)
// NULL when the memory cannot be had: the kernel then leaves its output alone, and the bytes
// asked for are kept for cpu_kernels_scratch_failed, which the backend's end of batch reads to
// fail the forward pass (the session, and the conversation, go on).
void *cpu_kernels_scratch(size_t bytes);
// The bytes of the largest request that failed since the last call (0: none), and resets it.
size_t cpu_kernels_scratch_failed(void);
// Frees the calling thread's scratch now (tests that count allocations start from none).
void cpu_kernels_scratch_release(void);

#endif
