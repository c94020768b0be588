// Tiles of one kv head read out of the KV cache for the CPU attention (engine/cpu/backend_cpu.c),
// each in the form its storage makes cheapest: keys channel-major and rotated by slot, values
// as float rows or, for the quantized store, dequantized inside the weighted sum.
#ifndef CABIN_CPU_ATTN_KV_H
#define CABIN_CPU_ATTN_KV_H

#include "engine/cpu/kernels.h"
#include "engine/kv_cache.h"

// kt: (hd, ns) floats, channel c at kt + c*ldt: the keys of slots [s0, s0+ns) of kv head kvh
// of layer l, rotated by their slots (kv->rope_t).
void attn_kv_keys_t(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int ns,
                    float *kt, int64_t ldt);

// Prepares the values of slots [s0, s0+ns) of kv head kvh for attn_kv_values: rows best read
// as floats go into vtile ((ns, hd) floats): F32 rows, and the quantized store's rows when
// `many` queries share the tile (dequantized once rather than inside every query's sum).
// Returns n: slots [s0, s0+n) are in vtile.
int attn_kv_values_tile(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int ns,
                        float *vtile, int many);

// o[g*hd + c] += sum_{i < nt} p[g*ldp + i] * value(s0 + i)[kvh*hd + c], c < hd, g < G: slots
// [s0, s0+nrows) from vtile, the others straight from the store (F16 rows converted as they
// are loaded, quantized rows dequantized inside the sum).
void attn_kv_values(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int nt,
                    const float *p, int64_t ldp, int G, float *o, const float *vtile, int nrows);

// o[g*ldo + c] += sum_{i < ns} p[g*ldp + i] * value(s0 + i)[kvh*hd + c], c < hd, g < G, for
// slots of the quantized value store (below kv->nqv[l]).
void attn_kv_values_q(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int ns,
                      const float *p, int64_t ldp, int G, float *o, int64_t ldo);

#endif
