// cabin bench's floor (cli/bench_floor.h): the passes' summary, the verdict on a decode against
// the best pass (within the floor, above it with the bytes in cache, above it disturbed) and the
// KV bytes a decoded token reads; then one real pass over the probe's buffer.
#include "test.h"
#include "cli/bench_floor.h"

#include <math.h>

static bool near(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b) + 1e-12; }

int main(void) {
    const double odd[] = { 20e9, 31e9, 25e9 }, even[] = { 30e9, 10e9, 20e9, 40e9 };
    bw_summary s = bw_summarize(odd, 3);
    CHECK(s.best == 31e9 && s.worst == 20e9 && s.median == 25e9 && s.n == 3, "summary of 3 passes");
    s = bw_summarize(even, 4);
    CHECK(s.best == 40e9 && s.worst == 10e9 && s.median == 25e9 && s.n == 4, "summary of 4 passes (median between)");
    CHECK(bw_summarize(odd, 0).best == 0, "no passes");

    // 1 GB per token against a best pass of 40 GB/s: a 40 tok/s ceiling
    const size_t llc = 32u << 20;
    floor_verdict v = floor_judge(34.0, 0.9e9, 0.1e9, &s, llc);
    CHECK(near(v.bytes_per_token, 1e9) && near(v.ceiling_tps, 40.0) && near(v.pct, 85.0) && !v.disturbed &&
          !v.cache_resident, "85%% of the floor: %.2f%%", v.pct);
    v = floor_judge(44.0, 0.9e9, 0.1e9, &s, llc);
    CHECK(near(v.pct, 110.0) && v.disturbed && !v.cache_resident, "110%% of a memory floor is flagged as disturbed");
    v = floor_judge(10000.0, 12e6, 0.05e6, &s, llc);
    CHECK(v.pct > 100 && v.cache_resident && !v.disturbed, "bytes that fit in the last-level cache pass 100%% with that reason");
    v = floor_judge(44.0, 0.9e9, 0.1e9, &s, 0);
    CHECK(v.disturbed && !v.cache_resident, "an unknown cache size never excuses a percentage above 100");
    bw_summary none = bw_summarize(odd, 0);
    v = floor_judge(10.0, 1e9, 0, &none, llc);
    CHECK(v.pct == 0 && v.ceiling_tps == 0 && !v.disturbed, "no bandwidth: no verdict");

    // KV: 8 layers x 1 KiB per token and layer, decoding 4 tokens after 100: depths 100..103
    CHECK(near(floor_kv_bytes(1024, 8, 100, 4), 1024.0 * 8 * 101.5), "KV bytes at the mean depth");
    CHECK(floor_kv_bytes(1024, 8, 100, 0) == 0, "nothing decoded, nothing read");

    bw_probe *p = bw_probe_new(2);
    double pass = bw_probe_pass(p);
    CHECK(bw_probe_bytes(p) >= (256u << 20) && pass > 1e8, "a pass over %zu MiB: %.2f GB/s", bw_probe_bytes(p) >> 20,
          pass / 1e9);
    bw_probe_free(p);
    return test_finish();
}
