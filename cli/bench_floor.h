// The honest floor of cabin bench: the machine's streaming-read bandwidth, measured as short
// passes interleaved with the benchmark's repetitions (the same thread count, a buffer far larger
// than the caches), and the decode ceiling it implies for the bytes one decoded token reads (the
// weights, and the KV cache at the depth decoded).
#ifndef CABIN_BENCH_FLOOR_H
#define CABIN_BENCH_FLOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bw_probe bw_probe;

// A probe with its own pool of n_threads over a buffer of 4 times the last-level cache (sysconf),
// at least 1 GiB and at most an eighth of the machine's memory, written once so that its pages
// exist.
bw_probe *bw_probe_new(int n_threads);
size_t bw_probe_bytes(const bw_probe *p);
size_t bw_probe_llc_bytes(const bw_probe *p);   // the last-level cache's size (0: unknown)
double bw_probe_pass(bw_probe *p);   // one streaming read of the buffer: bytes per second
void bw_probe_free(bw_probe *p);

// Passes (bytes/s) summarised: the best is the floor's bandwidth (a pass can only be slowed by
// other work, never sped up); median and worst show how disturbed the passes were.
typedef struct bw_summary { double best, median, worst; int n; } bw_summary;
bw_summary bw_summarize(const double *passes, int n);

typedef struct floor_verdict {
    double bytes_per_token;   // weights + KV read per decoded token
    double ceiling_tps;       // best bandwidth / bytes_per_token
    double pct;               // decode tok/s as a percentage of the ceiling
    bool cache_resident;      // the bytes per token fit in the last-level cache: memory
                              // bandwidth does not bound the decode, and pct may pass 100
    bool disturbed;           // pct > 100 although they do not fit: no pass reached the rate the
                              // decode itself read at, so the passes ran beside other work
} floor_verdict;
floor_verdict floor_judge(double decode_tps, double weight_bytes, double kv_bytes, const bw_summary *bw,
                          size_t llc_bytes);

// KV bytes one decoded token reads on average when decoding n_gen tokens after n_prompt: the
// cache at depths n_prompt .. n_prompt + n_gen - 1, at token_layer_bytes per token and layer.
double floor_kv_bytes(double token_layer_bytes, int n_layer, int n_prompt, int n_gen);

#endif
