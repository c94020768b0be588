// The presets of the established GGUF quantizer, for dense llama-family models: the rules below
// are the ones its Q2_K / Q3_K_* / Q4_K_* / Q5_K_* / Q6_K presets apply per tensor (checked
// tensor by tensor against its files in ../shared/ref by tests/test_quantize_ref.c).
#include "app/quantize_mix.h"
#include "engine/wtype.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum preset_id { P_Q2_K, P_Q3_K_S, P_Q3_K_M, P_Q3_K_L, P_Q4_K_S, P_Q4_K_M, P_Q5_K_S, P_Q5_K_M, P_Q6_K, P_COUNT };

static const quant_preset PRESETS[P_COUNT] = {
    [P_Q2_K]   = { "Q2_K",   WT_Q2_K, 10, "Q2_K; Q3_K attn_output and ffn_down; attn_v Q4_K (Q3_K with under 4 query heads per kv head)" },
    [P_Q3_K_S] = { "Q3_K_S", WT_Q3_K, 11, "Q3_K" },
    [P_Q3_K_M] = { "Q3_K_M", WT_Q3_K, 12, "Q3_K; Q4_K attn_output; attn_v Q5_K (layers 0-1) else Q4_K; ffn_down Q5_K (first 1/16 of layers) else Q4_K" },
    [P_Q3_K_L] = { "Q3_K_L", WT_Q3_K, 13, "Q3_K; Q5_K attn_v, attn_output and ffn_down" },
    [P_Q4_K_S] = { "Q4_K_S", WT_Q4_K, 14, "Q4_K; Q5_K attn_v (layers 0-3) and ffn_down (first 1/8 of layers)" },
    [P_Q4_K_M] = { "Q4_K_M", WT_Q4_K, 15, "Q4_K; Q6_K attn_v and ffn_down on the first and last 1/8 of layers and every third between" },
    [P_Q5_K_S] = { "Q5_K_S", WT_Q5_K, 16, "Q5_K" },
    [P_Q5_K_M] = { "Q5_K_M", WT_Q5_K, 17, "Q5_K; Q6_K attn_v and ffn_down as Q4_K_M" },
    [P_Q6_K]   = { "Q6_K",   WT_Q6_K, 18, "Q6_K" },
};

const quant_preset *quant_preset_find(const char *name) {
    for (int i = 0; i < P_COUNT; i++)
        if (name && strcasecmp(name, PRESETS[i].name) == 0) return &PRESETS[i];
    return NULL;
}

const char *quant_preset_names(void) {
    static char buf[128];
    if (!buf[0])
        for (int i = 0; i < P_COUNT; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", PRESETS[i].name);
    return buf;
}

// The layers that get more bits in the *_M presets: the first and last eighth, and every third
// layer between them.
static bool use_more_bits(int layer, int n_layer) {
    return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// "blk.N.KIND.weight" -> N and KIND (without ".weight"); -1 for other names.
static int split_name(const char *name, char *kind, size_t kind_size) {
    int layer, used = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &used) != 1 || used == 0) {
        snprintf(kind, kind_size, "%s", name);
        layer = -1;
    } else {
        snprintf(kind, kind_size, "%s", name + used);
    }
    char *dot = strstr(kind, ".weight");
    if (dot && dot[7] == '\0') *dot = '\0';
    return layer;
}

uint32_t quant_preset_type(const quant_preset *p, const char *name, const quant_shape *s) {
    const enum preset_id id = (enum preset_id)(p - PRESETS);
    char kind[64];
    const int layer = split_name(name, kind, sizeof kind);
    const int n = s->n_layer;
    // the output (or, tied, the token embedding doing its work): Q6_K
    if (strcmp(kind, "output") == 0 || (!s->has_output && strcmp(kind, "token_embd") == 0)) return WT_Q6_K;
    if (layer < 0) return p->base;
    if (strcmp(kind, "attn_v") == 0 || strcmp(kind, "attn_qkv") == 0) {
        switch (id) {
        case P_Q2_K: return s->n_gqa >= 4 ? WT_Q4_K : WT_Q3_K;
        case P_Q3_K_M: return layer < 2 ? WT_Q5_K : WT_Q4_K;
        case P_Q3_K_L: return WT_Q5_K;
        case P_Q4_K_S: return layer < 4 ? WT_Q5_K : p->base;
        case P_Q4_K_M: case P_Q5_K_M: return use_more_bits(layer, n) ? WT_Q6_K : p->base;
        default: return p->base;
        }
    }
    if (strcmp(kind, "ffn_down") == 0) {
        switch (id) {
        case P_Q2_K: return WT_Q3_K;
        case P_Q3_K_M: return layer < n / 16 ? WT_Q5_K : WT_Q4_K;
        case P_Q3_K_L: return WT_Q5_K;
        case P_Q4_K_S: return layer < n / 8 ? WT_Q5_K : p->base;
        case P_Q4_K_M: case P_Q5_K_M: return use_more_bits(layer, n) ? WT_Q6_K : p->base;
        default: return p->base;
        }
    }
    if (strcmp(kind, "attn_output") == 0) {
        switch (id) {
        case P_Q2_K: return WT_Q3_K;
        case P_Q3_K_M: return WT_Q4_K;
        case P_Q3_K_L: return WT_Q5_K;
        default: return p->base;
        }
    }
    return p->base;
}

uint32_t quant_file_type_of(uint32_t type) {
    switch (type) {
    case WT_F32: return 0;
    case WT_F16: return 1;
    case WT_Q4_0: return 2;
    case WT_Q4_1: return 3;
    case WT_Q8_0: return 7;
    case WT_Q5_0: return 8;
    case WT_Q5_1: return 9;
    case WT_Q2_K: return 10;
    case WT_Q3_K: return 12;
    case WT_Q4_K: return 15;
    case WT_Q5_K: return 17;
    case WT_Q6_K: return 18;
    case WT_IQ4_NL: return 25;
    case WT_IQ4_XS: return 30;
    case WT_BF16: return 32;
    default: return 0;
    }
}
