// The governor's decisions (app/governor.c) on a simulated machine: a Llama-3.2-1B-shaped ladder
// (16 layers × 7 matrices, F16 source, Q4_0 low), decode speed from a bandwidth model times a
// slowdown factor, a few percent of noise from a fixed seed, and a switch that takes a few
// tokens to land.
#include "app/governor.h"
#include "engine/hwstate.h"
#include "engine/wtype.h"
#include "rng.h"
#include "test.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_LAYER 16

// Bytes of each layer matrix of the 1B shape (dim 2048, kv 512, ffn 8192) at 2 bytes/weight.
static const uint64_t kind_weights[TK_LAYER_KINDS] = {
    2048ull * 2048, 2048ull * 512, 2048ull * 512, 2048ull * 2048, 2048ull * 8192, 2048ull * 8192, 8192ull * 2048,
};

static double rng_f01(void) { return (double)(rng_u64() >> 11) * 0x1p-53; }

static gov_ladder make_ladder(void) {
    gov_ladder l = { 0 };
    l.n = N_LAYER * TK_LAYER_KINDS;
    l.t = xcalloc((size_t)l.n, sizeof *l.t);
    for (int i = 0; i < l.n; i++) {
        int kind = i % TK_LAYER_KINDS;
        l.t[i] = (gov_tensor){ .layer = i / TK_LAYER_KINDS, .kind = kind, .bytes_high = kind_weights[kind] * 2,
                               .bytes_low = kind_weights[kind] / 32 * 18, .sens = 1e-4 + 1e-3 * rng_f01() };
    }
    l.bytes_fixed = 128256ull * 2048 * 2;   // the tied output matrix, F16
    gov_ladder_sort(&l);
    return l;
}

// A governor on a fresh ladder with the target and knobs of spec.
static void start(governor *g, const char *spec) {
    gov_target t;
    gov_knobs k;
    errbuf err = { { 0 } };
    CHECK(gov_parse(spec, &t, &k, &err) == 0, "%s: %s", spec, err.msg);
    gov_ladder l = make_ladder();
    gov_init(g, &t, &k, &l);
}

// The machine: tok/s = bw / bytes, or with a fixed cost per token (compute-bound) when
// fixed_s > 0, times the slowdown in force, times 1 ± 3% noise.
typedef struct machine {
    double bw;            // bytes per second
    double fixed_s;       // seconds per token that do not depend on bytes
    long slow_from, slow_to;
    double slow;          // speed factor between slow_from and slow_to
} machine;

static double machine_tps(machine *m, uint64_t bytes, long token) {
    double tps = 1.0 / ((double)bytes / m->bw + m->fixed_s);
    if (token >= m->slow_from && token < m->slow_to) tps *= m->slow;
    return tps * (1.0 + 0.03 * (2 * rng_f01() - 1));
}

typedef struct run_result {
    int changes, lowers, raises, reversals;
    long min_gap;              // fewest tokens between two changes
    long first_lower;          // token of the first lowering (-1 none)
    long first_raise_after;    // first raise at or after `recover` (-1 none)
    int pos_at[600];           // the position in force at each token
    double tps_at[600];
} run_result;

// Runs n tokens; a switch lands `latency` tokens after it is decided.
static void run_machine(governor *g, machine *m, int n, int latency, long recover, run_result *out) {
    memset(out, 0, sizeof *out);
    out->min_gap = 1L << 30;
    out->first_lower = out->first_raise_after = -1;
    int running = 0;               // position whose plan runs now
    long land_at = -1;
    long last_change = -1;
    int last_dir = 0;
    for (long t = 0; t < n; t++) {
        if (land_at >= 0 && t >= land_at) { running = g->pos; gov_applied(g, t); land_at = -1; }
        double tps = machine_tps(m, gov_ladder_bytes(&g->ladder, running), t);
        out->pos_at[t] = running;
        out->tps_at[t] = tps;
        gov_reading r = { .token = t, .tps = tps, .watts = -1, .j_per_token = -1, .on_battery = -1 };
        gov_decision d;
        int a = gov_step(g, &r, &d);
        if (a == GOV_HOLD) continue;
        land_at = t + latency;
        out->changes++;
        if (last_change >= 0 && t - last_change < out->min_gap) out->min_gap = t - last_change;
        last_change = t;
        int dir = a == GOV_LOWER ? 1 : -1;
        if (last_dir && dir != last_dir) out->reversals++;
        last_dir = dir;
        if (a == GOV_LOWER) { out->lowers++; if (out->first_lower < 0) out->first_lower = t; }
        if (a == GOV_RAISE) { out->raises++; if (t >= recover && out->first_raise_after < 0) out->first_raise_after = t; }
    }
}

static void test_parse(void) {
    gov_target t;
    gov_knobs k;
    errbuf err = { { 0 } };
    CHECK(gov_parse("tps>=30", &t, &k, &err) == 0 && t.metric == GOV_TPS && t.value == 30 && t.kl_max < 0, "%s", err.msg);
    CHECK(k.every == 16 && k.drift_every == 32 && k.low_type == WT_Q4_0 && k.drift, "defaults");
    CHECK(gov_parse("watts<=12.5 kl<=0.05 every=32 low=q8_0 band=0.2", &t, &k, &err) == 0 && t.metric == GOV_WATTS
          && t.value == 12.5 && t.kl_max == 0.05 && k.every == 32 && k.low_type == WT_Q8_0 && k.band == 0.2, "%s", err.msg);
    CHECK(gov_parse("j_per_token<=0.4", &t, &k, &err) == 0 && t.metric == GOV_JPT, "%s", err.msg);
    CHECK(gov_parse("kl<=0.01", &t, &k, &err) == 0 && t.metric == GOV_KL_ONLY && t.kl_max == 0.01, "%s", err.msg);
    char buf[64];
    gov_parse("tps>=30 kl<=0.05", &t, &k, &err);
    gov_target_str(&t, buf, sizeof buf);
    CHECK(strcmp(buf, "tps>=30 kl<=0.05") == 0, "%s", buf);
    static const struct { const char *spec, *says; } bad[] = {
        { "", "needs a target" }, { "tps<=30", "tps takes >=" }, { "tps>=fast", "'fast' is not a number" },
        { "tps>=30 watts<=5", "one of" }, { "speed>=3", "'speed>=3' is not a target" },
        { "tps>=30 every=0", "every=0" }, { "tps>=30 low=q9_9", "not a type to lower to" },
        { "tps>=30 band=1.5", "band is a fraction" }, { "kl<=0.1 drift=off", "needs drift=on" },
        { "tps>=0", "above 0" }, { "tps>=30 drift=maybe", "on or off" },
        { "tps>=30 window=300", "'window=300': at most 256" }, { "kl<=1 drift_window=1000", "at most 256" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        int rc = gov_parse(bad[i].spec, &t, &k, &err);
        CHECK(rc != 0 && strstr(err.msg, bad[i].says) && !strchr(err.msg, '\n'), "'%s' -> rc %d '%s'", bad[i].spec, rc, err.msg);
    }
}

// A slowdown (the machine at 55% from token 150 to 330), then recovery: the governor steps
// down to hold 18 tok/s, then back up to the source, at most one change per M tokens, and the
// direction turns once.
static void test_slowdown_recovery(void) {
    governor g;
    start(&g, "tps>=18 every=16");
    machine m = { .slow_from = 150, .slow_to = 330, .slow = 0.55 };
    m.bw = 20.0 * (double)gov_ladder_bytes(&g.ladder, 0);     // 20 tok/s at the source
    run_result *rr = xcalloc(1, sizeof *rr);
    run_machine(&g, &m, 500, 3, 330, rr);
    CHECK(rr->lowers >= 1 && rr->raises >= 1, "lowers %d raises %d", rr->lowers, rr->raises);
    CHECK(rr->min_gap >= g.knobs.every, "two changes %ld tokens apart (M = %d)", rr->min_gap, g.knobs.every);
    CHECK(rr->reversals == 1, "direction turned %d times (changes %d)", rr->reversals, rr->changes);
    CHECK(rr->first_lower >= 150 && rr->first_lower <= 150 + 2 * g.knobs.every, "first lowering at token %ld", rr->first_lower);
    // reached: every token from 4·M after the slowdown to its end runs at or above the target
    // (the noise is ±3%, the band's middle is 7.5% above)
    int missed = 0;
    for (int i = 150 + 4 * g.knobs.every; i < 330; i++) missed += rr->tps_at[i] < 18.0;
    CHECK(missed == 0, "%d tokens below 18 tok/s after 4·M tokens of slowdown", missed);
    CHECK(rr->first_raise_after >= 330 && rr->first_raise_after <= 330 + 2 * g.knobs.every, "first raise after recovery at %ld",
          rr->first_raise_after);
    CHECK(rr->pos_at[499] == 0, "back at the source at the end (position %d)", rr->pos_at[499]);
    CHECK(rr->pos_at[149] == 0, "no change before the slowdown (position %d)", rr->pos_at[149]);
    CHECK(g.n_log == rr->changes && g.changes == rr->changes, "log %d changes %d", g.n_log, rr->changes);
    for (int i = 0; i < g.n_log; i++)
        CHECK(g.log[i].reason[0] && g.log[i].bytes_from != g.log[i].bytes_to, "log %d: '%s'", i, g.log[i].reason);
    free(rr);
    gov_free(&g);
}

// A file of a fixture sysfs tree (folders made as needed).
static void put(const char *root, const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(path, 0700); *p = '/'; }
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
}

static void set_cpus(const char *root, const char *khz, const char *throttles) {
    for (int c = 0; c < 2; c++) {
        char rel[128];
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", c);
        put(root, rel, khz);
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/thermal_throttle/core_throttle_count", c);
        put(root, rel, throttles);
    }
}

// The same slowdown and recovery, told by a fixture sysfs tree: the CPU's clock drops to 55%
// with its throttle count rising (token 150), then comes back (token 330); the machine runs at
// the clock's share of its maximum, the readings carry what engine/hwstate.c reads.
static void test_fixture_throttling(void) {
    char root[] = "/tmp/cabin-governor-XXXXXX";
    CHECK(mkdtemp(root) != NULL, "mkdtemp");
    for (int c = 0; c < 2; c++) {
        char rel[128];
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", c);
        put(root, rel, "3000000\n");
    }
    set_cpus(root, "3000000\n", "0\n");
    governor g;
    start(&g, "tps>=18 every=16");
    machine m = { .slow = 1 };
    m.bw = 20.0 * (double)gov_ladder_bytes(&g.ladder, 0);
    hw_state prev, hw;
    hw_state_read(root, &hw);
    CHECK(hw.cpu_mhz == 3000 && hw.cpu_max_mhz == 3000 && hw.throttle_count == 0, "fixture read: %.0f/%.0f MHz, %ld",
          hw.cpu_mhz, hw.cpu_max_mhz, hw.throttle_count);
    int running = 0, lowers = 0, raises = 0, reversals = 0, dir = 0, throttled_lowers = 0;
    long land_at = -1, last_change = -1, min_gap = 1L << 30;
    bool throttled = false;
    for (long tok = 0; tok < 500; tok++) {
        if (tok == 150) set_cpus(root, "1650000\n", "5\n");
        if (tok == 330) set_cpus(root, "3000000\n", "5\n");
        if (tok % 10 == 0) {   // the machine read every 10 tokens, as govern.c reads it twice a second
            prev = hw;
            hw_state_read(root, &hw);
            throttled = throttled || hw_state_throttled(&prev, &hw);
        }
        if (land_at >= 0 && tok >= land_at) { running = g.pos; gov_applied(&g, tok); land_at = -1; }
        double tps = machine_tps(&m, gov_ladder_bytes(&g.ladder, running), tok) * hw.cpu_mhz / hw.cpu_max_mhz;
        gov_reading r = { .token = tok, .tps = tps, .watts = -1, .j_per_token = -1, .cpu_mhz = hw.cpu_mhz,
                          .cpu_max_mhz = hw.cpu_max_mhz, .throttled = throttled, .on_battery = -1 };
        gov_decision d;
        int a = gov_step(&g, &r, &d);
        if (a == GOV_HOLD) continue;
        throttled = false;   // a reading's flag covers the tokens since the last decision
        land_at = tok + 3;
        if (last_change >= 0 && tok - last_change < min_gap) min_gap = tok - last_change;
        last_change = tok;
        int nd = a == GOV_LOWER ? 1 : -1;
        if (dir && nd != dir) reversals++;
        dir = nd;
        if (a == GOV_LOWER) { lowers++; throttled_lowers += strstr(d.reason, "(CPU throttled)") != NULL; }
        if (a == GOV_RAISE) raises++;
    }
    CHECK(lowers >= 1 && raises >= 1 && reversals == 1, "lowers %d raises %d reversals %d", lowers, raises, reversals);
    CHECK(throttled_lowers >= 1, "the lowering says the CPU throttled");
    CHECK(min_gap >= g.knobs.every, "changes %ld tokens apart", min_gap);
    CHECK(running == 0, "back at the source (position %d)", running);
    gov_free(&g);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0, "rm %s", root);
}

// A machine the bandwidth model misjudges (most of a token's time does not depend on bytes):
// each lowering gains less than predicted, each raise costs less. Raises that have to be undone
// freeze raising, for longer each time: few changes, no see-saw.
static void test_misjudged_machine(void) {
    governor g;
    start(&g, "tps>=24 every=16");
    machine m = { .slow_from = 0, .slow_to = 0, .slow = 1 };
    m.fixed_s = 0.03;                                          // 30 ms of every token is fixed
    m.bw = (double)gov_ladder_bytes(&g.ladder, 0) / 0.02;     // + 20 ms of bytes at the source: 20 tok/s
    run_result *rr = xcalloc(1, sizeof *rr);
    run_machine(&g, &m, 500, 3, 0, rr);
    CHECK(rr->min_gap >= g.knobs.every, "two changes %ld tokens apart", rr->min_gap);
    CHECK(rr->reversals <= 2 && rr->changes <= 8, "changes %d, reversals %d", rr->changes, rr->reversals);
    int missed = 0;
    for (int i = 250; i < 500; i++) missed += rr->tps_at[i] < 24.0 * 0.97;
    CHECK(missed == 0, "%d of the last 250 tokens below the target", missed);
    free(rr);
    gov_free(&g);
}

// The drift guard: a KL above the bound rolls the last lowering back, blocks that part of the
// ladder for retry_after tokens, then allows it again.
static void test_drift_rollback(void) {
    governor g;
    start(&g, "tps>=100 kl<=0.001 every=16 retry_after=200");
    gov_reading slow = { .token = 20, .tps = 10, .watts = -1, .j_per_token = -1 };
    gov_decision d;
    CHECK(gov_step(&g, &slow, &d) == GOV_LOWER && d.from == 0 && d.to > 0, "lowered: %s", d.reason);
    int lowered = d.to;
    gov_applied(&g, 22);
    CHECK(gov_drift(&g, 30, 0.0005, 0.99, &d) == GOV_HOLD && g.pos == lowered, "KL under the bound holds: %s", d.reason);
    CHECK(gov_drift(&g, 40, 0.01, 0.9, &d) == GOV_ROLLBACK && d.to == 0 && g.pos == 0 && g.rollbacks == 1,
          "rolled back to %d: %s", d.to, d.reason);
    CHECK(strstr(d.reason, "KL 0.01 > 0.001") != NULL, "%s", d.reason);
    gov_applied(&g, 42);
    slow.token = 100;
    CHECK(gov_step(&g, &slow, &d) == GOV_HOLD && strstr(d.reason, "retry at token 240"), "blocked: %s", d.reason);
    slow.token = 240;
    CHECK(gov_step(&g, &slow, &d) == GOV_LOWER, "retried after retry_after: %s", d.reason);
    gov_free(&g);
    // the impossible bound: rolls back whatever is lowered
    start(&g, "kl<=0");
    gov_reading any = { .token = 16, .tps = 30, .watts = -1, .j_per_token = -1 };
    CHECK(gov_step(&g, &any, &d) == GOV_LOWER, "kl alone goes down: %s", d.reason);
    gov_applied(&g, 17);
    CHECK(gov_drift(&g, 33, 1e-6, 1, &d) == GOV_ROLLBACK && g.pos == 0, "any KL above 0 rolls back: %s", d.reason);
    gov_free(&g);
}

// The watts target steps by an eighth of the ladder's span; J/token scales with bytes.
static void test_watts_and_joules(void) {
    governor g;
    start(&g, "watts<=10");
    uint64_t span = gov_ladder_bytes(&g.ladder, 0) - gov_ladder_bytes(&g.ladder, g.ladder.n);
    gov_reading hot = { .token = 16, .tps = 20, .watts = 14, .j_per_token = 0.7 };
    gov_decision d;
    CHECK(gov_step(&g, &hot, &d) == GOV_LOWER && d.bytes_from - d.bytes_to >= span / 8
          && d.bytes_from - d.bytes_to < span / 4, "one eighth: %llu of %llu", (unsigned long long)(d.bytes_from - d.bytes_to),
          (unsigned long long)span);
    gov_free(&g);
    start(&g, "j_per_token<=0.5");
    gov_reading r1 = { .token = 16, .tps = 20, .watts = 20, .j_per_token = 1.0 };
    CHECK(gov_step(&g, &r1, &d) == GOV_LOWER, "%s", d.reason);
    double aim = 0.5 * (1 - g.knobs.band / 2) / 1.0;
    CHECK((double)d.bytes_to <= aim * (double)d.bytes_from && (double)gov_ladder_bytes(&g.ladder, d.to - 1) > aim * (double)d.bytes_from,
          "lands at the first position under %.3f of the bytes", aim);
    gov_free(&g);
}

// Position k's plan: the first k ladder tensors at the low type, every other as the source says.
static void test_plan(void) {
    governor g;
    start(&g, "tps>=10");
    errbuf err = { { 0 } };
    precision_plan src, p;
    CHECK(plan_parse_any(&src, "keep;q8_0:layers=0-1,attn_v", N_LAYER, &err) == 0, "%s", err.msg);
    for (int pos = 0; pos <= g.ladder.n; pos += 13) {
        CHECK(gov_plan(&g, &src, N_LAYER, pos, &p, &err) == 0, "%s", err.msg);
        int wrong = 0;
        for (int i = 0; i < g.ladder.n; i++) {
            const gov_tensor *x = &g.ladder.t[i];
            uint32_t want = i < pos ? WT_Q4_0 : plan_type_for(&src, x->layer, x->kind);
            wrong += plan_type_for(&p, x->layer, x->kind) != want;
        }
        CHECK(wrong == 0, "position %d: %d tensors at the wrong type", pos, wrong);
        precision_plan back;
        char *json = plan_to_json(&p);
        CHECK(plan_parse_json(&back, json, "plan", N_LAYER, &err) == 0, "%s", err.msg);
        free(json);
    }
    gov_free(&g);
}

int main(void) {
    test_seed();
    test_parse();
    test_slowdown_recovery();
    test_fixture_throttling();
    test_misjudged_machine();
    test_drift_rollback();
    test_watts_and_joules();
    test_plan();
    return test_finish();
}
