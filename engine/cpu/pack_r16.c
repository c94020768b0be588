// The row-interleaved weight layouts (engine/cpu/kernels.h, "r16"): made once per weight when
// the CPU backend prepares it, read by the tables' matmul_packed kernels. Plain C: it runs once.
#include "engine/cpu/kernels.h"

#include <string.h>

enum { R16 = 16 };

// Bytes of one unit (16 rows x unit_weights) and the weights of a row it covers; 0 for types
// without the layout.
size_t cpu_r16_unit_bytes(uint32_t type) {
    switch (type) {
    case WT_Q4_0: return 64 + 2 * R16 * 16;                     // 576
    case WT_Q8_0: return 64 + 2 * R16 * 32;                     // 1088
    case WT_IQ4_NL: return 64 + 2 * R16 * 16;                   // 576
    case WT_Q4_1: return 128 + 2 * R16 * 16;                    // 640
    case WT_Q5_0: return 64 + 2 * R16 * 20;                     // 704
    case WT_Q5_1: return 128 + 2 * R16 * 20;                    // 768
    case WT_Q4_K: return 4 * R16 + 2 * 8 * R16 + R16 * 128;     // 2368
    case WT_Q5_K: return 4 * R16 + 2 * 8 * R16 + R16 * 160;     // 2880
    case WT_IQ4_XS: return 2 * R16 + 8 * R16 + R16 * 128 + 32;  // 2240 (32 bytes of padding)
    case WT_Q3_K: return 2 * R16 + 16 * R16 + R16 * 96 + 32;    // 1856 (32 bytes of padding)
    case WT_Q2_K: return 4 * R16 + 16 * R16 + R16 * 64;         // 1344
    case WT_Q6_K: return 2 * R16 + 16 * R16 + R16 * 192 + 32;   // 3392 (32 bytes of padding)
    case WT_BF16: return R16 * 64;                              // 1024
    case WT_F16: return R16 * 64;                               // 1024
    default: return 0;
    }
}

static int64_t unit_weights(uint32_t type) {
    return type == WT_Q2_K || type == WT_Q3_K || type == WT_Q4_K || type == WT_Q5_K || type == WT_Q6_K || type == WT_IQ4_XS ? 256
         : type == WT_BF16 || type == WT_F16 ? 32 : 64;
}

bool cpu_r16_type(uint32_t type) { return cpu_r16_unit_bytes(type) != 0; }

static int64_t units_of(uint32_t type, int64_t k) { return (k + unit_weights(type) - 1) / unit_weights(type); }

size_t cpu_r16_bytes(uint32_t type, int64_t rows, int64_t k) {
    return (size_t)((rows + R16 - 1) / R16) * (size_t)units_of(type, k) * cpu_r16_unit_bytes(type);
}

// n bytes from src as 4-byte chunks of row i among 16: chunk c at dst + (c*16 + i)*4.
static void put_chunks(uint8_t *dst, int i, const uint8_t *src, size_t n) {
    for (size_t j = 0; j < n; j += 4) memcpy(dst + (j / 4 * R16 + (size_t)i) * 4, src + j, 4);
}

// Row i of a group into unit u (block index b of the row) for each type.
// The 32-weight types: a unit is a pair of blocks. Its header holds d (fp16) of the 16 rows for
// the first block, then for the second; Q4_1 and Q5_1 then their m likewise. Each block's
// payload follows: the codes chunked as the block has them (16 bytes of nibbles a row, Q8_0's 32
// int8), and for Q5_0 and Q5_1 one line of fifth bits, 4 bytes a row, regrouped so that a
// nibble's fifth bit lies in the same byte of the chunk as the nibble: byte j of the row's 4 holds
// at bit 2c the fifth bit of the low nibble of byte j of nibble chunk c (weight 4c + j), at bit
// 2c + 1 that of its high nibble (weight 16 + 4c + j). A kernel moves bit 2c or 2c + 1 of every
// byte to bit 4 with one shift.
static void pack_q_legacy(uint8_t *u, int i, uint32_t type, const uint8_t *row, int64_t b) {
    const bool has_min = type == WT_Q4_1 || type == WT_Q5_1, five = type == WT_Q5_0 || type == WT_Q5_1;
    const size_t codes = type == WT_Q8_0 ? 32 : 16, payload = (size_t)R16 * (codes + (five ? 4 : 0));
    const uint8_t *blk = row + (size_t)b * wtype_get(type)->block_bytes;
    const int half = (int)(b % 2);
    memcpy(u + (size_t)half * R16 * 2 + (size_t)i * 2, blk, 2);   // d
    size_t at = 2;
    if (has_min) {   // m
        memcpy(u + 2 * R16 * 2 + (size_t)half * R16 * 2 + (size_t)i * 2, blk + 2, 2);
        at = 4;
    }
    uint8_t *pl = u + (has_min ? 4 : 2) * R16 * 2 + (size_t)half * payload;
    if (five) {
        uint32_t qh;
        memcpy(&qh, blk + at, 4);
        at += 4;
        uint8_t fifth[4] = { 0 };
        for (int j = 0; j < 4; j++)
            for (int c = 0; c < 4; c++)
                for (int hi = 0; hi < 2; hi++) fifth[j] |= (uint8_t)((qh >> (16 * hi + 4 * c + j) & 1) << (2 * c + hi));
        put_chunks(pl + R16 * codes, i, fifth, 4);
    }
    put_chunks(pl, i, blk + at, codes);
}

// Q4_K's unit from the parts Q4_K and Q5_K share: d, dmin, the unpacked scales and mins, nibbles.
static void pack_k_nibbles(uint8_t *u, int i, uint16_t d, uint16_t dmin, const uint8_t scales[12],
                           const uint8_t qs[128]) {
    memcpy(u + (size_t)i * 2, &d, 2);
    memcpy(u + 2 * R16 + (size_t)i * 2, &dmin, 2);
    for (int j = 0; j < 8; j++) kquant_scale_min(j, scales, &u[4 * R16 + j * R16 + i], &u[4 * R16 + 8 * R16 + j * R16 + i]);
    put_chunks(u + 4 * R16 + 16 * R16, i, qs, 128);
}

static void pack_q4_k(uint8_t *u, int i, const void *b) {
    const block_q4_k *blk = b;
    pack_k_nibbles(u, i, blk->d, blk->dmin, blk->scales, blk->qs);
}

// Q5_K: Q4_K's unit, then the 32 bytes of fifth bits chunked (byte l's bit j is the fifth bit of
// weight 32j + l, whose nibble is in byte 32(j/2) + l: the same chunk position as that nibble's).
static void pack_q5_k(uint8_t *u, int i, const void *b) {
    const block_q5_k *blk = b;
    pack_k_nibbles(u, i, blk->d, blk->dmin, blk->scales, blk->qs);
    put_chunks(u + 4 * R16 + 16 * R16 + 128 * R16, i, blk->qh, 32);
}

// IQ4_XS: d, the eight 6-bit scales less their offset of 32 (int8), then the 4-bit codebook indices
// in Q4_K's order (byte l of pair p: the index of weight 64p + l low, of weight 64p + 32 + l high;
// the block keeps those of weights 32s + j and 32s + 16 + j in byte 16s + j), chunked.
static void pack_iq4_xs(uint8_t *u, int i, const void *b) {
    const block_iq4_xs *blk = b;
    memcpy(u + (size_t)i * 2, &blk->d, 2);
    for (int s = 0; s < 8; s++) {
        const int ls = ((blk->scales_l[s / 2] >> 4 * (s % 2)) & 0x0f) | ((blk->scales_h >> 2 * s) & 3) << 4;
        u[2 * R16 + s * R16 + i] = (uint8_t)(int8_t)(ls - 32);
    }
    uint8_t idx[256], qs[128];
    for (int s = 0; s < 8; s++)
        for (int j = 0; j < 16; j++) {
            idx[32 * s + j] = blk->qs[16 * s + j] & 0x0f;
            idx[32 * s + 16 + j] = blk->qs[16 * s + j] >> 4;
        }
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) qs[32 * p + l] = (uint8_t)(idx[64 * p + l] | idx[64 * p + 32 + l] << 4);
    put_chunks(u + 10 * R16, i, qs, 128);
}

// Q2_K: d, dmin, the sixteen (scale, min) bytes as the block has them (scale low nibble, min
// high), then its 64 bytes of 2-bit codes a row chunked as the block has them: as many bytes as
// the file's blocks.
static void pack_q2_k(uint8_t *u, int i, const void *b) {
    const block_q2_k *blk = b;
    memcpy(u + (size_t)i * 2, &blk->d, 2);
    memcpy(u + 2 * R16 + (size_t)i * 2, &blk->dmin, 2);
    for (int s = 0; s < 16; s++) u[4 * R16 + s * R16 + i] = blk->scales[s];
    put_chunks(u + 20 * R16, i, blk->qs, 64);
}

// Q3_K: d, the sixteen 6-bit scales less their offset of 32 (int8), then its 64 bytes of 2-bit
// codes and its 32 bytes of high bits (hmask) a row, each chunked as the block has them.
static void pack_q3_k(uint8_t *u, int i, const void *b) {
    const block_q3_k *blk = b;
    memcpy(u + (size_t)i * 2, &blk->d, 2);
    for (int s = 0; s < 16; s++) u[2 * R16 + s * R16 + i] = (uint8_t)(int8_t)(q3_k_scale(s, blk->scales) - 32);
    put_chunks(u + 18 * R16, i, blk->qs, 64);
    put_chunks(u + 18 * R16 + 64 * R16, i, blk->hmask, 32);
}

// Q6_K: the 6-bit codes regrouped so that three bytes carry four codes with the least
// unpacking: for half h and position l (0..31) the codes q_p of weights 128h + 32p + l give
//   X = q_0 | (q_3 & 3) << 6,  Y = q_1 | (q_3 >> 2 & 3) << 6,  Z = q_2 | (q_3 >> 4) << 6
// and the X, Y and Z planes (64 bytes a row each) are chunked one after the other.
static void pack_q6_k(uint8_t *u, int i, const void *b) {
    const block_q6_k *blk = b;
    memcpy(u + (size_t)i * 2, &blk->d, 2);
    for (int s = 0; s < 16; s++) u[2 * R16 + s * R16 + i] = (uint8_t)blk->scales[s];
    uint8_t plane[3][64];
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *ql = blk->ql + 64 * h, qh = blk->qh[32 * h + l];
            const int q0 = (ql[l] & 0x0f) | (qh & 3) << 4, q1 = (ql[l + 32] & 0x0f) | (qh >> 2 & 3) << 4;
            const int q2 = (ql[l] >> 4) | (qh >> 4 & 3) << 4, q3 = (ql[l + 32] >> 4) | (qh >> 6) << 4;
            plane[0][32 * h + l] = (uint8_t)(q0 | (q3 & 3) << 6);
            plane[1][32 * h + l] = (uint8_t)(q1 | (q3 >> 2 & 3) << 6);
            plane[2][32 * h + l] = (uint8_t)(q2 | (q3 >> 4) << 6);
        }
    for (int p = 0; p < 3; p++) put_chunks(u + 18 * R16 + (size_t)p * 64 * R16, i, plane[p], 64);
}

// F16: weight j of a unit goes to line j/2, half j%2, 2 bytes a row. A whole group at a time,
// line by line, so that every line is written once and whole (the group's n rows, from row r0,
// are read side by side: each row's 64 bytes of a unit are one cache line).
static void pack_f16_group(uint8_t *gu, const void *w, size_t w_row_bytes, int n, int64_t r0, int64_t k) {
    const uint16_t *src[R16];
    for (int i = 0; i < n; i++) src[i] = (const uint16_t *)(const void *)((const uint8_t *)w + (size_t)(r0 + i) * w_row_bytes);
    for (int64_t j = 0; j < k; j++) {
        uint16_t *half = (uint16_t *)(void *)(gu + (size_t)(j / 32) * (R16 * 64) + (size_t)(j % 32 / 2) * 64 + (size_t)(j % 2) * 32);
        for (int i = 0; i < n; i++) memcpy(half + i, src[i] + j, 2);
    }
}

// The packer of one 256-weight super-block into its unit (row i of the group), or NULL.
typedef void (*super_block_packer)(uint8_t *u, int i, const void *blk);
static super_block_packer packer_of(uint32_t type) {
    switch (type) {
    case WT_Q2_K: return pack_q2_k;
    case WT_Q3_K: return pack_q3_k;
    case WT_Q4_K: return pack_q4_k;
    case WT_Q5_K: return pack_q5_k;
    case WT_Q6_K: return pack_q6_k;
    case WT_IQ4_XS: return pack_iq4_xs;
    default: return NULL;
    }
}

void cpu_pack_r16(uint32_t type, const void *w, size_t w_row_bytes, int64_t rows, int64_t k,
                  int64_t g0, int64_t g1, void *dst) {
    const size_t unit = cpu_r16_unit_bytes(type);
    const int64_t nu = units_of(type, k);
    const super_block_packer pack = packer_of(type);
    const size_t block_bytes = pack ? wtype_get(type)->block_bytes : 0;
    for (int64_t g = g0; g < g1; g++) {
        uint8_t *gu = (uint8_t *)dst + (size_t)(g * nu) * unit;
        memset(gu, 0, (size_t)nu * unit);   // padding rows and blocks: zero scales, zero codes
        if (type == WT_F16) {
            pack_f16_group(gu, w, w_row_bytes, rows - g * R16 < R16 ? (int)(rows - g * R16) : R16, g * R16, k);
            continue;
        }
        for (int i = 0; i < R16 && g * R16 + i < rows; i++) {
            const uint8_t *row = (const uint8_t *)w + (size_t)(g * R16 + i) * w_row_bytes;
            if (pack) {   // a unit per super-block
                for (int64_t b = 0; b < k / 256; b++) pack(gu + (size_t)b * unit, i, row + (size_t)b * block_bytes);
                continue;
            }
            switch (type) {
            case WT_Q4_0:
            case WT_Q8_0:
            case WT_Q4_1:
            case WT_Q5_0:
            case WT_Q5_1:
            case WT_IQ4_NL:
                for (int64_t b = 0; b < k / 32; b++) pack_q_legacy(gu + (size_t)(b / 2) * unit, i, type, row, b);
                break;
            case WT_BF16:
                for (int64_t b = 0; b < nu; b++) {
                    uint8_t span[64] = { 0 };   // the row's last span may be short
                    const int64_t n = k - 32 * b < 32 ? k - 32 * b : 32;
                    memcpy(span, row + (size_t)b * 64, (size_t)n * 2);
                    put_chunks(gu + (size_t)b * unit, i, span, 64);
                }
                break;
            }
        }
    }
}
