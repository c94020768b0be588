// The KV cache: for every layer, keys and values of each cached slot, in one of four formats,
// with an eviction policy that keeps long conversations in bounded memory (docs/KV.md).
//
// Formats (per cache; every layer alike):
//   F32, F16  k[l], v[l]: (n_ctx, kv_dim) rows of 4- or 2-byte elements; rows are slots.
//   Q8, Q4    KIVI-style: keys quantized per channel in groups of KV_GROUP slots (each channel
//             of a group shares one f16 (scale, min)); values per slot in groups of `gv`
//             channels. The newest slots stay F16 (the "recent windows"): keys in k[l], at least
//             `recent` and fewer than recent + KV_GROUP slots, folded into the quantized store one
//             group of KV_GROUP slots at a time; values in v[l], exactly the newest `recent` slots
//             (a ring: slot s at row s % recent), each value row quantized as it leaves the ring.
// Keys are stored UN-rotated: attention rotates a key by its slot index (and the query by its
// own slot), so slots can be compacted after eviction and positions stay within the cache.
//
// Window layers (gemma3's sliding-window layers, kv_windows): a layer that only ever looks at the
// last `window` slots keeps only the newest ring_rows = window + batch - 1 slots, plain rows of
// the cache's element type (F32 for F32, F16 otherwise: such a ring is too short to quantize) in a
// ring, slot s at row s % ring_rows; `batch` is the most tokens one pass appends (the first token
// of a batch still sees window - 1 slots before it). Only when ring_rows < n_ctx: otherwise a
// window layer is stored as every other layer and the window is only attention's mask.
#ifndef CABIN_KV_CACHE_H
#define CABIN_KV_CACHE_H

#include "base/base.h"
#include "engine/rope.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kv_format { KV_F16 = 0, KV_F32 = 1, KV_Q8 = 2, KV_Q4 = 3 };
#define KV_FORMAT_COUNT 4
// Q8, Q4: the quantized store and its F16 recent windows; F16, F32: plain rows.
static inline bool kv_format_quantized(enum kv_format f) { return f == KV_Q8 || f == KV_Q4; }
// Bits of one code of a quantized format (two Q4 codes share a byte, low nibble first).
static inline int kv_format_code_bits(enum kv_format f) { return f == KV_Q4 ? 4 : 8; }
// Bytes of n codes of a quantized format.
static inline size_t kv_format_code_bytes(enum kv_format f, size_t n) {
    return kv_format_code_bits(f) == 4 ? (n + 1) / 2 : n;
}
#define KV_GROUP 128         // quantized keys: slots per group (per channel)
#define KV_VGROUP 192        // quantized values: channels per group at most (gv: the largest even divisor of kv_dim)
#define KV_RECENT_DEFAULT 32 // slots kept F16 at least, before folding into the quantized store
#define KV_SINKS_DEFAULT 4   // attention-sink slots the window policy always keeps

enum kv_policy_kind { KVP_NONE = 0, KVP_WINDOW, KVP_H2O, KVP_ENTROPY };

// What to do when the cache fills: none stops at n_ctx; the others keep at most `budget` slots
// per layer (window: sinks + the newest; h2o: heavy hitters by accumulated attention + the
// newest; entropy: per-head budgets from attention entropy, union of at most `budget` slots).
typedef struct kv_policy {
    enum kv_policy_kind kind;
    int budget;              // slots (ignored for none)
    int sinks;               // slots at the start always kept (window, h2o, entropy)
} kv_policy;

// The model shape attention needs (set by model_forward before every pass).
typedef struct kv_shape {
    int n_head, n_kv_head, head_dim;
    const rope_freqs *rope;  // the keys' rotation by slot (engine/rope.h); NULL: used as stored
    const rope_freqs *rope_alt;     // NULL, or a second rotation of the same rope_dim for the
    const uint8_t *alt_layers;      // layers flagged 1 here (n_layer flags; gemma3's window
                                    // layers turn by another base)
    bool rope_neox;
    // The cache keeps copies: after kv_cache_set_shape the pointers point at them.
} kv_shape;

#define KV_ROPES 2   // rotations a cache holds tables for: the layers' and rope_alt

// Which layers are window layers and what a ring must hold (see the top of this file).
typedef struct kv_windows {
    const uint8_t *layers;   // (n_layer) 1: a window layer; NULL: none
    int window;              // slots a query sees: (p - window, p]
    int batch;               // the most slots one forward pass appends
} kv_windows;

typedef struct kv_cache {
    enum kv_format format;
    int n_layer;
    int n_ctx;           // capacity in slots
    int kv_dim;          // n_kv_head * head_dim
    int n_used;          // slots filled (0..n_ctx)
    void **k, **v;       // per layer: F32/F16: n_ctx rows; Q8/Q4: k res_cap F16 rows (key window),
                         // v vcap F16 rows (value ring, slot s at row s % vcap)
    size_t row_bytes;    // bytes of one row of k[l] (or v[l])
    // quantized store (Q8/Q4), per layer
    uint8_t **kq;        // (q_groups, kv_dim, KV_GROUP codes) — codes of a channel are contiguous
    uint16_t **kp;       // (q_groups, kv_dim, 2) f16 (scale, min)
    uint8_t **vq;        // (n_ctx - vcap, kv_dim codes)
    uint16_t **vp;       // (n_ctx - vcap, kv_dim/gv, 2) f16 (scale, min)
    int *nq;             // per layer: key slots in the quantized store (a multiple of KV_GROUP)
    int *nqv;            // per layer: value slots in the quantized store (slots below it)
    int recent;          // R
    int gv;              // value group (channels); divides kv_dim
    int q_groups;        // key groups of capacity
    int res_cap;         // rows of the key window: min(recent + KV_GROUP - 1, n_ctx)
    int vcap;            // rows of the value ring: recent
    // window layers' rings (kv_windows): ring_rows > 0 only when shorter than n_ctx
    uint8_t *ring_layer; // (n_layer) 1: layer l is a ring of ring_rows plain rows; NULL: none
    int ring_rows;       // window + batch - 1
    int ring_window;     // the window the rings were made for
    // attention position encoding and statistics
    kv_shape shape;
    rope_freqs rope[KV_ROPES];      // what shape.rope and rope_alt point at (rope_dim 0: none)
    uint8_t *layer_rope;            // (n_layer) which of them layer l turns by: 0 or 1
    float *rope_cs[KV_ROPES];       // (n_ctx, rope_dim/2, 2): cos, sin of each slot's angles
                                    // (rope_cos_sin); NULL: no rotation
    float *rope_t[KV_ROPES];        // (rope_dim/2, 2, n_ctx): the same values slot-major (frequency
                                    // i: its cos of every slot, then its sin), for attention along
                                    // slots
    kv_policy policy;
    bool track;          // keep attention statistics (mass, last); on for h2o/entropy
    float *mass;         // (n_layer, n_head, n_ctx): attention weight accumulated per slot
    float *last;         // (n_layer, n_head, n_ctx): weights of the last query of the last pass
    int last_n;          // slots valid in `last`
    uint8_t *mask;       // entropy: (n_layer, n_kv_head, n_ctx) 1 = hidden from that kv head
    int evictions;       // eviction passes so far
    uint64_t evicted;    // slots evicted so far (per layer)
    void *bk;            // backend-side storage, if any
    // Set by a backend that keeps its own copy of the cache (NULL otherwise). Whole-cache
    // operations (eviction, format conversion) call it with KV_SYNC_PULL before they read the host
    // arrays and KV_SYNC_PUSH after they change them (PUSH re-creates the device store when the
    // format or window changed; on failure the device keeps its former store). 0, or -1 with err.
    int (*bk_sync)(struct kv_cache *kv, int dir, errbuf *err);
} kv_cache;
enum { KV_SYNC_PULL = 0, KV_SYNC_PUSH = 1 };

// The folding rule of the quantized formats, for the host store (kv_cache_put) and a device copy
// that replays it (vulkan/vk_attn.c). nq, nqv: a layer's key and value slots in the quantized
// store; advanced to what they are once slot `slot` is written. Keys: a write that would bring
// the key window (slots nq .. slot) to recent + KV_GROUP rows first folds its oldest KV_GROUP
// rows, while the store has room, so at least `recent` stay F16 and res_cap rows suffice. Values:
// the ring keeps the newest vcap slots, each older one quantized as it leaves. A slot below the
// counters (a rewrite inside the quantized store) folds nothing.
static inline void kv_fold_counters(const kv_cache *kv, int slot, int *nq, int *nqv) {
    while (slot - *nq >= kv->recent + KV_GROUP - 1 && *nq + KV_GROUP <= kv->q_groups * KV_GROUP) *nq += KV_GROUP;
    while (slot - *nqv >= kv->vcap) (*nqv)++;
}

// Rows of layer l's ring (0: not a ring).
static inline int kv_layer_ring(const kv_cache *kv, int l) {
    return kv->ring_layer && kv->ring_layer[l] ? kv->ring_rows : 0;
}
// The format layer l is stored in: the cache's, or a ring's plain rows.
static inline enum kv_format kv_layer_format(const kv_cache *kv, int l) {
    if (!kv_layer_ring(kv, l)) return kv->format;
    return kv->format == KV_F32 ? KV_F32 : KV_F16;
}
// The row of a plain (F32/F16) layer that holds slot s.
static inline size_t kv_plain_row(const kv_cache *kv, int l, int s) {
    int r = kv_layer_ring(kv, l);
    return (size_t)(r ? s % r : s);
}
// Whether the slots past a point can be dropped by lowering n_used alone, the rows below it
// staying valid: plain rows (no quantized store folding them), no rings (whose rows newer slots
// overwrite), no eviction policy (which moves slots).
static inline bool kv_cache_truncatable(const kv_cache *kv) {
    return !kv_format_quantized(kv->format) && !kv->ring_layer && kv->policy.kind == KVP_NONE;
}
// Ring rows for a window layout on a context of n_ctx slots (0: the window layers need no ring).
int kv_windows_ring_rows(const kv_windows *w, int n_ctx);
// The most slots one pass may append to kv: n_ctx, or what its rings were made for.
int kv_cache_max_batch(const kv_cache *kv);
// The window layout kv's rings were made with (layers NULL: none), for a cache of the same layout.
kv_windows kv_cache_windows(const kv_cache *kv);

int kv_cache_init(kv_cache *kv, enum kv_format format, int n_layer, int n_ctx, int kv_dim,
                  errbuf *err);
// As kv_cache_init with the recent-window length R for the quantized formats (<= 0: default).
int kv_cache_init_ex(kv_cache *kv, enum kv_format format, int recent, int n_layer, int n_ctx,
                     int kv_dim, errbuf *err);
// As kv_cache_init_ex with window layers kept in rings (w NULL or without layers: none).
int kv_cache_init_windows(kv_cache *kv, enum kv_format format, int recent, int n_layer, int n_ctx,
                          int kv_dim, const kv_windows *w, errbuf *err);
void kv_cache_free(kv_cache *kv);
void kv_cache_clear(kv_cache *kv);
// Copies the filled slots of src into dst (same shape, format and rings); -1 otherwise.
int kv_cache_copy(kv_cache *dst, const kv_cache *src, errbuf *err);
// Sets the attention shape (allocates the rope table and, when tracking, the statistics).
int kv_cache_set_shape(kv_cache *kv, const kv_shape *sh, errbuf *err);
void kv_cache_set_tracking(kv_cache *kv, bool on);

// Stores one slot's keys and values (kv_dim floats each) into layer `layer`. Slots are written
// in order (slot <= rows written so far); rewriting a quantized slot requantizes its group.
// A ring holds the newest ring_rows slots written: reading an older one gives whatever newer
// slot took its row.
void kv_cache_put(kv_cache *kv, int layer, int slot, const float *k, const float *v);
// Dequantizes channels [c0, c0+nc) of slots [s0, s1) of keys (which 0) or values (which 1) into
// out: (s1-s0, ld) floats. f16_to_f32 (y[i] = fp16 x[i], n elements) converts F16 rows (a
// backend's vector kernel); NULL: scalar.
typedef void (*kv_f16_cvt_fn)(const uint16_t *x, float *y, int64_t n);
void kv_cache_read(const kv_cache *kv, int layer, int which, int s0, int s1, int c0, int nc,
                   float *out, int ld, kv_f16_cvt_fn f16_to_f32);
// Rotates rows of one head (head_dim floats at stride ld) by their slots s0, s0+1, ...
void kv_cache_rope_rows(const kv_cache *kv, int layer, int s0, int n, float *rows, int ld);
// The (cos, sin) tables layer l's keys turn by: slot-major (rope_t) and row-major (rope_cs);
// NULL when its keys are used as stored.
static inline const float *kv_layer_rope_t(const kv_cache *kv, int l) {
    return kv->rope_t[kv->layer_rope ? kv->layer_rope[l] : 0];
}
static inline const float *kv_layer_rope_cs(const kv_cache *kv, int l) {
    return kv->rope_cs[kv->layer_rope ? kv->layer_rope[l] : 0];
}

// Converts the cache to another format / recent window in place; the contents are kept
// (dequantized and re-stored). On error the cache is unchanged.
int kv_cache_convert(kv_cache *kv, enum kv_format format, int recent, errbuf *err);
// Keeps only slots keep[0..n_keep) (ascending) of layer `layer`, compacted to [0, n_keep);
// statistics and masks follow their slots. Call for every layer, then set n_used = n_keep.
// A ring keeps the kept slots it still holds; the others come back as zero rows (the policies
// keep a window layer's newest slots, the only ones it reads again).
void kv_cache_compact_layer(kv_cache *kv, int layer, const int32_t *keep, int n_keep);

// Bytes of all layers' K and V storage for the current capacity.
uint64_t kv_cache_bytes(const kv_cache *kv);
// Bytes used by the slots filled so far (quantized groups + the recent window).
uint64_t kv_cache_used_bytes(const kv_cache *kv);
// Bytes per slot per layer (K and V) of a format at a shape, the quantized store's rate for Q
// formats (the recent windows are extra: up to recent+KV_GROUP-1 F16 key rows, recent value rows).
double kv_format_token_bytes(enum kv_format f, int kv_dim);
// Bytes a cache of this format and shape would allocate (all layers).
uint64_t kv_format_cache_bytes(enum kv_format f, int recent, int n_layer, int n_ctx, int kv_dim);
// The same with window layers in rings (w NULL: as kv_format_cache_bytes).
uint64_t kv_windows_cache_bytes(enum kv_format f, int recent, int n_layer, int n_ctx, int kv_dim,
                                const kv_windows *w);
const char *kv_format_name(enum kv_format f);
int kv_format_parse(const char *s, enum kv_format *out, errbuf *err);

// ---- policies (engine/kv_policy.c) ----
// "none", "window:N", "h2o:N", "entropy:N" (N >= 16 slots).
int kv_policy_parse(const char *s, kv_policy *out, errbuf *err);
void kv_policy_format(const kv_policy *p, char *buf, size_t n);
// Makes room for n_new slots: with none, fails when they do not fit n_ctx; otherwise evicts
// (every layer) down to the budget minus n_new minus some slack so eviction runs every few
// tokens, not every token. Fails when n_new alone exceeds what the budget allows.
int kv_cache_make_room(kv_cache *kv, int n_new, errbuf *err);
// The largest batch make_room accepts under the current policy (n_ctx for none).
int kv_policy_max_batch(const kv_cache *kv);

#endif
