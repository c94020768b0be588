// Which type each tensor of a file gets when `cabin quantize` writes it: the presets people
// know from the established GGUF quantizer ("Q4_K_M": Q4_K, with Q6_K for the output and for
// attn_v/ffn_down on some layers) and the general.file_type numbering other tools read. The
// fallback for rows too short for a block is quant_fit_type (engine/quantize.h).
#ifndef CABIN_QUANTIZE_MIX_H
#define CABIN_QUANTIZE_MIX_H

#include <stdbool.h>
#include <stdint.h>

typedef struct quant_preset {
    const char *name;        // "Q4_K_M", as the reference quantizer spells it
    uint32_t base;           // enum wtype of the layer matrices no rule singles out
    uint32_t file_type;      // general.file_type (the llama_ftype numbering)
    const char *summary;     // one line for --help and messages
} quant_preset;

// What the rules need to know of the model.
typedef struct quant_shape {
    int n_layer;
    int n_gqa;               // query heads per key/value head
    bool has_output;         // false: the token embedding is also the output (tied)
} quant_shape;

// Case-insensitive ("q4_k_m"); NULL when name is not a preset.
const quant_preset *quant_preset_find(const char *name);
// "Q2_K, Q3_K_S, ..." for messages.
const char *quant_preset_names(void);

// The preset's type for the 2-D file tensor `name` ("blk.3.ffn_down.weight", "output.weight",
// phi3's fused "blk.0.attn_qkv.weight" counts as attn_v), before the block-size fallback.
uint32_t quant_preset_type(const quant_preset *p, const char *name, const quant_shape *s);

// general.file_type for a file made at one type (the numbering other tools guess from a file's
// main type: Q4_K -> "Q4_K - Medium").
uint32_t quant_file_type_of(uint32_t type);

#endif
