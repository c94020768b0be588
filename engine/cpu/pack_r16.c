// The row-interleaved weight layout (engine/cpu/kernels.h, "r16"): made once per weight when the
// CPU backend prepares it, read by the tables' matmul_packed kernels. Plain C: it runs once.
#include "engine/cpu/kernels.h"

#include <string.h>

enum { R16 = 16, SCALE_BYTES = 2 };

// Payload bytes of one 32-weight block (after its fp16 scale); 0 for types without the layout.
static size_t payload_bytes(uint32_t type) {
    return type == WT_Q4_0 ? 16 : type == WT_Q8_0 ? 32 : 0;
}

bool cpu_r16_type(uint32_t type) { return payload_bytes(type) != 0; }

size_t cpu_r16_unit_bytes(uint32_t type) { return 2 * R16 * SCALE_BYTES + 2 * R16 * payload_bytes(type); }

static int64_t pairs_of(int64_t k) { return (k / 32 + 1) / 2; }

size_t cpu_r16_bytes(uint32_t type, int64_t rows, int64_t k) {
    return (size_t)((rows + R16 - 1) / R16) * (size_t)pairs_of(k) * cpu_r16_unit_bytes(type);
}

void cpu_pack_r16(uint32_t type, const void *w, size_t w_row_bytes, int64_t rows, int64_t k,
                  int64_t g0, int64_t g1, void *dst) {
    const size_t pb = payload_bytes(type), bb = SCALE_BYTES + pb, unit = cpu_r16_unit_bytes(type);
    const int64_t nb = k / 32, np = pairs_of(k);
    for (int64_t g = g0; g < g1; g++) {
        uint8_t *u = (uint8_t *)dst + (size_t)(g * np) * unit;
        memset(u, 0, (size_t)np * unit);   // padding rows and blocks: zero scale, zero payload
        for (int i = 0; i < R16; i++) {
            const int64_t r = g * R16 + i;
            if (r >= rows) break;
            const uint8_t *row = (const uint8_t *)w + (size_t)r * w_row_bytes;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *blk = row + (size_t)b * bb;
                uint8_t *pu = u + (size_t)(b / 2) * unit;
                memcpy(pu + (size_t)(b % 2) * R16 * SCALE_BYTES + (size_t)i * SCALE_BYTES, blk, SCALE_BYTES);
                uint8_t *pay = pu + 2 * R16 * SCALE_BYTES + (size_t)(b % 2) * R16 * pb;
                for (size_t j = 0; j < pb; j += 4)
                    memcpy(pay + (j / 4 * R16 + (size_t)i) * 4, blk + SCALE_BYTES + j, 4);
            }
        }
    }
}
