// Precision plans: which weight type each (layer, tensor kind) runs at. Plans are data: parsed
// from JSON or a command-line shorthand, printed, saved, and applied to a model between tokens.
//
// JSON form:
//   {"default": "q4_0",                     // layer matrices not named by a rule (optional)
//    "token_embd": "q8_0", "output": "q8_0", // optional; absent = as in the file
//    "rules": [{"layers": "0-3", "tensors": ["ffn_down", "attn_v"], "type": "q8_0"}, ...]}
//   "layers" is "all", "N" or "A-B" (inclusive); "tensors" is "all" or a list of kinds.
//   Rules may not overlap: each (layer, kind) is named by at most one rule.
// Shorthand: "q4_0" (the default), "q8_0:layers=0-3,ffn_down" (a rule), joined with ';':
//   "q4_0;q8_0:layers=0-3,ffn_down,attn_v;output=q8_0"
#ifndef CABIN_PRECISION_H
#define CABIN_PRECISION_H

#include "base/base.h"

#include <stdint.h>

enum tensor_kind {
    TK_ATTN_Q, TK_ATTN_K, TK_ATTN_V, TK_ATTN_OUTPUT, TK_FFN_GATE, TK_FFN_UP, TK_FFN_DOWN,
    TK_LAYER_KINDS,                // kinds above are per layer
    TK_TOKEN_EMBD = TK_LAYER_KINDS, TK_OUTPUT, TK_COUNT
};

#define PLAN_MAX_RULES 64
#define PLAN_KEEP 0xffffffffu      // "as in the file"

typedef struct plan_rule {
    int layer_lo, layer_hi;        // inclusive; 0..INT32_MAX-1 for "all"
    uint32_t kinds;                // bit mask of tensor_kind (layer kinds only)
    uint32_t type;                 // enum wtype
} plan_rule;

// Which of default/token_embd/output a plan names, even as "keep": `cabin quantize` fills only
// the unnamed ones with its own defaults (token embedding and output kept higher).
#define PLAN_SET_DEFAULT 1u
#define PLAN_SET_EMBD    2u
#define PLAN_SET_OUTPUT  4u

typedef struct precision_plan {
    uint32_t default_type;         // PLAN_KEEP or a wtype
    uint32_t token_embd_type, output_type;
    uint32_t named;                // PLAN_SET_* bits
    int n_rules;
    plan_rule rules[PLAN_MAX_RULES];
} precision_plan;

const char *tensor_kind_name(int kind);             // "attn_q", ..., "token_embd", "output"
int tensor_kind_from_name(const char *name);        // -1 if unknown

void plan_init(precision_plan *p);                  // everything as in the file
// Parse; errors name the JSON path ("rules[2].tensors[1]: unknown tensor kind 'ffn_middle'")
// and, for files, the file. n_layer bounds the layer ranges (0 = do not check).
int plan_parse_json(precision_plan *p, const char *json, const char *where, int n_layer, errbuf *err);
int plan_load(precision_plan *p, const char *path, int n_layer, errbuf *err);
int plan_parse_shorthand(precision_plan *p, const char *spec, int n_layer, errbuf *err);
// Either form: JSON text, a path to an existing file (or one named *.json), or shorthand.
int plan_parse_any(precision_plan *p, const char *spec, int n_layer, errbuf *err);
// The type for a tensor (PLAN_KEEP = as in the file).
uint32_t plan_type_for(const precision_plan *p, int layer, int kind);
// Appends one rule per run of consecutive layers with the same non-zero kind mask:
// mask[0..n_layer) (bits of tensor_kind) at `type`. Fails (one line) past PLAN_MAX_RULES.
int plan_add_layer_masks(precision_plan *p, const uint32_t *mask, int n_layer, uint32_t type, errbuf *err);
// The plan that runs each layer matrix at want[layer * TK_LAYER_KINDS + kind] (a wtype, or
// PLAN_KEEP where base's default is PLAN_KEEP), with base's default, token_embd and output.
int plan_from_cell_types(precision_plan *out, const precision_plan *base, const uint32_t *want,
                         int n_layer, errbuf *err);
// JSON text (malloc'd) that plan_parse_json reads back to the same plan.
char *plan_to_json(const precision_plan *p);
int plan_save(const precision_plan *p, const char *path, errbuf *err);

#endif
