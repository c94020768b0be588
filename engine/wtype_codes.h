// Quantized weights as small integer codes under per-group affine maps, exactly as the type's
// to_f32 computes them:
//   w[i] = scale[g] * code[i] - min[g],   g = i / group
// in float arithmetic: one product, then one difference (min is 0 for the types without one, and
// x - 0 is x), so a backend that cannot take a type's own block layout can repack it from the
// codes (vulkan/backend_vulkan.c) and compute on exactly the file's weights.
#ifndef CABIN_WTYPE_CODES_H
#define CABIN_WTYPE_CODES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wtype_codes {
    int group;              // weights per (scale, min): 16 or 32
    int code_lo, code_hi;   // the range of the codes
    bool has_min;           // false: every min is 0
    // n weights (n % the type's block size == 0) to n codes, n/group scales and, when has_min,
    // n/group mins (min may be NULL when !has_min).
    void (*to_codes)(const void *src, int8_t *code, float *scale, float *min, int64_t n);
} wtype_codes;

// NULL for the float types (F32, F16, BF16) and for types cabin does not compute.
const wtype_codes *wtype_codes_get(uint32_t type);

#endif
