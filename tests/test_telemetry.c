// Telemetry: power sources read from fixture sysfs trees (tests/fixtures/sysfs/*, real layouts
// with the class symlinks into /sys/devices), watts and joules against hand-computed values,
// RAPL wrap-around, an unreadable energy_uj, the labelled estimate; KL helpers; the plan derived
// from a sensitivity map; per-token timing and energy in session stats.
#include "engine/modelgen.h"
#include "engine/quality.h"
#include "engine/sensitivity.h"
#include "engine/session.h"
#include "engine/telemetry.h"
#include "engine/wtype.h"
#include "tests/test.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

static char tmp_root[256];

// A writable copy of a fixture tree (the tests rewrite counters between samples).
static const char *fixture_copy(const char *name) {
    snprintf(tmp_root, sizeof tmp_root, "/tmp/cabin-tel-XXXXXX");
    if (!mkdtemp(tmp_root)) return NULL;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cp -a tests/fixtures/sysfs/%s/. %s/", name, tmp_root);
    return system(cmd) == 0 ? tmp_root : NULL;
}

static void fixture_remove(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
}

static void put(const char *root, const char *rel, unsigned long long v) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    if (!f) { fprintf(stderr, "cannot write %s\n", p); return; }
    fprintf(f, "%llu\n", v);
    fclose(f);
}

static int find(const power_reading *r, int n, const char *name) {
    for (int i = 0; i < n; i++) if (strcmp(r[i].name, name) == 0) return i;
    return -1;
}

// Injected open(2): energy_uj of the dram domain is root-only (EACCES), as on kernels since
// 5.10 for non-root users. Mode 000 would not do: the tests run as root in CI.
static int deny_dram(const char *path, int flags) {
    if (strstr(path, "intel-rapl:0:2/energy_uj")) { errno = EACCES; return -1; }
    return open(path, flags);
}

#define PKG "sys/class/powercap/intel-rapl:0/energy_uj"
#define DRAM "sys/class/powercap/intel-rapl:0:2/energy_uj"
#define GPU "sys/class/hwmon/hwmon1/power1_average"
#define AMDE "sys/class/hwmon/hwmon2/energy1_input"
#define BAT "sys/class/power_supply/BAT0/"

static void test_laptop(void) {
    const char *root = fixture_copy("laptop");
    CHECK(root != NULL, "fixture copy");
    if (!root) return;
    errbuf err = {{0}};
    power_monitor *pm = power_monitor_open(root, &err);
    CHECK(pm != NULL, "open: %s", err.msg);
    if (!pm) { fixture_remove(); return; }
    power_reading r[TEL_MAX_SOURCES];
    int n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    const char *want[] = { "rapl:package-0", "rapl:core", "rapl:dram", "hwmon:amdgpu/power1",
                           "hwmon:amd_energy/energy1", "hwmon:amd_energy/energy2", "battery:BAT0", "estimate:cpu" };
    CHECK(n == 8, "8 sources, got %d", n);
    for (int i = 0; i < 8; i++) CHECK(find(r, n, want[i]) >= 0, "source %s found", want[i]);
    CHECK(find(r, n, "battery:AC") < 0, "mains is not a battery");
    int pkg = find(r, n, "rapl:package-0"), dram = find(r, n, "rapl:dram"), gpu = find(r, n, "hwmon:amdgpu/power1");
    int amde = find(r, n, "hwmon:amd_energy/energy1"), bat = find(r, n, "battery:BAT0"), est = find(r, n, "estimate:cpu");
    if (pkg < 0 || dram < 0 || gpu < 0 || amde < 0 || bat < 0 || est < 0) { power_monitor_close(pm); fixture_remove(); return; }
    CHECK(r[pkg].counter && r[pkg].measured && r[pkg].in_total && r[pkg].readable, "package: measured counter in the total");
    int core = find(r, n, "rapl:core");
    CHECK(core >= 0 && !r[core].in_total, "core is inside package: not in the total");
    CHECK(!r[gpu].counter && !r[bat].counter, "hwmon power and battery are gauges");
    CHECK(!r[est].measured, "the estimate is not measured");
    bool measured = false;
    CHECK(strcmp(power_monitor_total_from(pm, &measured), "rapl") == 0 && measured, "total from rapl, measured");

    // t = 100 s: baselines (package 262142000000 µJ, max range 262143328850)
    power_monitor_sample_at(pm, 100.0);
    // t = 101: +1 J package, +1.5 J dram, gpu 7.25 -> 8.25 W, amd_energy +2 J, battery 1.5 A x 12 V -> 2 A x 11 V
    put(root, PKG, 262143000000ull);
    put(root, DRAM, 6500000);
    put(root, GPU, 8250000);
    put(root, AMDE, 3000000);
    put(root, BAT "current_now", 2000000);
    put(root, BAT "voltage_now", 11000000);
    power_monitor_sample_at(pm, 101.0);
    n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(NEAR(r[pkg].joules, 1.0, 1e-9) && NEAR(r[pkg].watts, 1.0, 1e-9), "package 1 J, 1 W: %g J %g W", r[pkg].joules, r[pkg].watts);
    CHECK(NEAR(r[dram].joules, 1.5, 1e-9), "dram 1.5 J: %g", r[dram].joules);
    CHECK(NEAR(r[gpu].joules, 7.75, 1e-9) && NEAR(r[gpu].watts, 8.25, 1e-9), "gpu trapezoid 7.75 J, 8.25 W now: %g %g", r[gpu].joules, r[gpu].watts);
    CHECK(NEAR(r[amde].joules, 2.0, 1e-9), "amd_energy 2 J: %g", r[amde].joules);
    CHECK(NEAR(r[bat].joules, 20.0, 1e-9) && NEAR(r[bat].watts, 22.0, 1e-9), "battery (18 W + 22 W)/2 x 1 s = 20 J: %g J %g W", r[bat].joules, r[bat].watts);
    // t = 103: the package counter wraps: 262143000000 -> (max 262143328850) -> 671150: +1 J over 2 s
    put(root, PKG, 671150);
    put(root, DRAM, 8000000);
    power_monitor_sample_at(pm, 103.0);
    n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(NEAR(r[pkg].joules, 2.0, 1e-9) && NEAR(r[pkg].watts, 0.5, 1e-9), "wrap-around: 2 J total, 0.5 W: %g J %g W", r[pkg].joules, r[pkg].watts);
    CHECK(NEAR(r[gpu].joules, 7.75 + 16.5, 1e-9), "gpu 24.25 J: %g", r[gpu].joules);
    CHECK(NEAR(r[bat].joules, 64.0, 1e-9), "battery 64 J: %g", r[bat].joules);
    CHECK(r[pkg].samples == 3, "3 samples: %llu", (unsigned long long)r[pkg].samples);
    // a sample at the same time changes nothing
    power_monitor_sample_at(pm, 103.0);
    n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(NEAR(r[pkg].joules, 2.0, 1e-9), "same-time sample adds nothing");
    power_monitor_close(pm);

    // energy_uj denied (injected EACCES): listed, unreadable with the reason, out of the total
    telemetry_set_open_hook(deny_dram);
    pm = power_monitor_open(root, &err);
    telemetry_set_open_hook(NULL);
    CHECK(pm != NULL, "open with a denied file");
    if (pm) {
        n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
        dram = find(r, n, "rapl:dram");
        CHECK(dram >= 0 && !r[dram].readable, "dram listed and unreadable");
        if (dram >= 0) CHECK(strcmp(r[dram].reason, "energy_uj: Permission denied") == 0, "reason: '%s'", r[dram].reason);
        power_monitor_sample_at(pm, 1.0);
        power_monitor_sample_at(pm, 2.0);
        n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
        CHECK(r[dram].joules == 0 && r[dram].samples == 0, "an unreadable source is never sampled");
        power_monitor_close(pm);
    }
    // a folder where energy_uj should be: unreadable, "Is a directory"
    char p[600];
    snprintf(p, sizeof p, "%s/" PKG, root);
    unlink(p);
    mkdir(p, 0755);
    pm = power_monitor_open(root, &err);
    if (pm) {
        n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
        pkg = find(r, n, "rapl:package-0");
        CHECK(pkg >= 0 && !r[pkg].readable && strstr(r[pkg].reason, "Is a directory"), "folder as energy_uj: %s",
              pkg >= 0 ? r[pkg].reason : "missing");
        power_monitor_close(pm);
    }
    fixture_remove();
}

static void test_desktop(void) {
    errbuf err = {{0}};
    power_monitor *pm = power_monitor_open("tests/fixtures/sysfs/desktop", &err);
    CHECK(pm != NULL, "open desktop: %s", err.msg);
    if (!pm) return;
    power_reading r[TEL_MAX_SOURCES];
    int n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(n == 3, "hwmon (power1_input wins over _average), battery, estimate: %d", n);
    int hw = find(r, n, "hwmon:acpi_power_meter/power1"), bat = find(r, n, "battery:BAT1");
    CHECK(hw >= 0 && bat >= 0, "sources named");
    power_monitor_sample_at(pm, 10.0);
    power_monitor_sample_at(pm, 12.0);
    n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    if (hw >= 0) CHECK(NEAR(r[hw].watts, 60.0, 1e-9) && NEAR(r[hw].joules, 120.0, 1e-9), "60 W from power1_input, 120 J: %g %g", r[hw].watts, r[hw].joules);
    if (bat >= 0) CHECK(NEAR(r[bat].watts, 9.5, 1e-9) && NEAR(r[bat].joules, 19.0, 1e-9), "battery power_now 9.5 W: %g", r[bat].watts);
    bool measured = false;
    CHECK(strcmp(power_monitor_total_from(pm, &measured), "hwmon") == 0 && measured, "total from hwmon");
    power_monitor_close(pm);
}

static double fake_cpu;
static double fake_cpu_time(void) { return fake_cpu; }

static void test_estimate(void) {
    errbuf err = {{0}};
    setenv("CABIN_WATTS_PER_CORE", "12.5", 1);
    power_monitor *pm = power_monitor_open("tests/fixtures/sysfs/vm", &err);
    unsetenv("CABIN_WATTS_PER_CORE");
    CHECK(pm != NULL, "open vm: %s", err.msg);
    if (!pm) return;
    CHECK(power_monitor_watts_per_core(pm) == 12.5, "CABIN_WATTS_PER_CORE read");
    power_monitor_set_watts_per_core(pm, 20.0);
    power_reading r[TEL_MAX_SOURCES];
    int n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(n == 1 && strcmp(r[0].name, "estimate:cpu") == 0 && !r[0].measured, "only the estimate, labelled");
    bool measured = true;
    CHECK(strcmp(power_monitor_total_from(pm, &measured), "estimate") == 0 && !measured, "total: estimated");
    telemetry_set_cpu_time_hook(fake_cpu_time);
    fake_cpu = 10.0;
    power_monitor_sample_at(pm, 5.0);
    fake_cpu = 11.5;   // 1.5 core-seconds in 1 s: 1.5 busy cores x 20 W
    power_monitor_sample_at(pm, 6.0);
    n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(NEAR(r[0].watts, 30.0, 1e-9) && NEAR(r[0].joules, 30.0, 1e-9), "estimate 30 W, 30 J: %g %g", r[0].watts, r[0].joules);
    telemetry_set_cpu_time_hook(NULL);
    // energy of a turn from three marks
    power_mark m0 = { .n = 1, .t = 0.0, .joules = { 1.0 }, .total_j = 1.0 };
    power_mark m1 = { .n = 1, .t = 0.5, .joules = { 3.0 }, .total_j = 3.0 };
    power_mark m2 = { .n = 1, .t = 2.5, .joules = { 7.0 }, .total_j = 7.0 };
    energy_turn e;
    energy_turn_from_marks(pm, &m0, &m1, &m2, 8, 4, &e);
    CHECK(NEAR(e.total_prefill_j, 2.0, 1e-12) && NEAR(e.total_decode_j, 4.0, 1e-12), "turn joules");
    CHECK(NEAR(e.prefill_j_per_token, 0.25, 1e-12) && NEAR(e.decode_j_per_token, 1.0, 1e-12), "J/token");
    CHECK(NEAR(e.prefill_w, 4.0, 1e-12) && NEAR(e.decode_w, 2.0, 1e-12), "mean watts per phase");
    CHECK(!e.total_measured && strcmp(e.total_from, "estimate") == 0 && !e.measured[0], "turn labelled estimated");
    // the sampler thread
    CHECK(power_monitor_start(pm, 50, &err) == 0, "start");
    sleep_ms(200);
    power_monitor_stop(pm);
    n = power_monitor_read(pm, r, TEL_MAX_SOURCES);
    CHECK(r[0].samples >= 4, "sampler ran: %llu samples", (unsigned long long)r[0].samples);
    power_monitor_close(pm);
    CHECK(power_monitor_open("tests/fixtures/sysfs/no-such-root", &err) == NULL && strstr(err.msg, "no-such-root"),
          "a bad root is one error line: %s", err.msg);
    CHECK(telemetry_rss_bytes() > 0, "rss");
}

static void test_quality(void) {
    // 4-token vocabulary, log-probs by hand
    float base_logits[4] = { 2.0f, 1.0f, 0.0f, -1.0f }, run_logits[4] = { 1.0f, 2.0f, 0.0f, -1.0f };
    double lp[4], lq[4];
    quality_log_softmax(base_logits, 4, lp);
    quality_log_softmax(run_logits, 4, lq);
    kl_record rec;
    quality_record(lp, 4, 1, &rec);
    CHECK(rec.id[0] == 0 && rec.id[1] == 1 && rec.id[3] == 3 && rec.id[4] == -1, "top-k order");
    CHECK(NEAR(rec.target_lp, lp[1], 1e-6), "target log-prob");
    CHECK(quality_kl(&rec, lp, 4) < 1e-6, "KL of a distribution with itself is 0");
    double want = 0;
    for (int i = 0; i < 4; i++) want += exp(lp[i]) * (lp[i] - lq[i]);
    CHECK(NEAR(quality_kl(&rec, lq, 4), want, 1e-5), "KL by hand: %g vs %g", quality_kl(&rec, lq, 4), want);
    CHECK(NEAR(quality_log_prob(base_logits, 4, 2), lp[2], 1e-9), "log_prob = log_softmax");
}

static void test_plan(void) {
    // 2 layers; cells of 1000 weights except the ffn ones (3000); q4_0 4.5 bpw, q8_0 8.5 bpw
    sensitivity_map m;
    sensitivity_map_init(&m, 2, WT_Q4_0);
    double n_all = 0;
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            sens_cell *c = sens_at(&m, l, k);
            c->n_weights = k >= TK_FFN_GATE ? 3000 : 1000;
            c->kl_mean = 0.001;
            c->done = true;
            n_all += (double)c->n_weights;
        }
    sens_at(&m, 1, TK_FFN_DOWN)->kl_mean = 0.5;   // per extra bit: 0.5/12000, the best
    sens_at(&m, 0, TK_ATTN_V)->kl_mean = 0.1;     // 0.1/4000, second
    precision_plan p;
    double bpw = 0;
    int kept = 0;
    errbuf err = {{0}};
    // budget for exactly those two: (4.5 * 26000 + 4 * 4000) / 26000
    double budget = (4.5 * n_all + 4.0 * 4000) / n_all;
    CHECK(sensitivity_plan(&m, WT_Q8_0, budget, &p, &bpw, &kept, &err) == 0, "plan: %s", err.msg);
    CHECK(kept == 2 && NEAR(bpw, budget, 1e-9), "two kept, at the budget: %d %g", kept, bpw);
    CHECK(plan_type_for(&p, 1, TK_FFN_DOWN) == WT_Q8_0 && plan_type_for(&p, 0, TK_ATTN_V) == WT_Q8_0, "the sensitive ones high");
    CHECK(plan_type_for(&p, 0, TK_FFN_DOWN) == WT_Q4_0 && plan_type_for(&p, 1, TK_ATTN_Q) == WT_Q4_0, "the rest low");
    CHECK(sensitivity_plan(&m, WT_Q8_0, 4.0, &p, &bpw, &kept, &err) != 0 && strstr(err.msg, "budget"), "a budget below q4_0: %s", err.msg);
    CHECK(sensitivity_plan(&m, WT_Q8_0, 4.5, &p, &bpw, &kept, &err) == 0 && kept == 0 && p.n_rules == 0, "budget = q4_0: all low");
    char *js = sensitivity_to_json(&m);
    sensitivity_map m2;
    sensitivity_map_init(&m2, 2, WT_Q4_0);
    CHECK(sensitivity_from_json(&m2, js, &err) == 0 && sens_at(&m2, 1, TK_FFN_DOWN)->kl_mean == 0.5 &&
          sens_at(&m2, 1, TK_FFN_DOWN)->n_weights == 3000, "JSON round trip");
    size_t jl = strlen(js);
    js = xrealloc(js, jl + 8);
    memcpy(js + jl, " {}", 4);   // text after the map: not a map
    CHECK(sensitivity_from_json(&m2, js, &err) != 0 && strstr(err.msg, "not JSON (near offset"), "%s", err.msg);
    free(js);
    sensitivity_map_free(&m2);
    sensitivity_map_free(&m);
}

static bool count_tok(void *ud, int32_t t, const char *piece, int len) {
    (void)t; (void)piece; (void)len;
    (*(int *)ud)++;
    return true;
}

static void test_session_stats(void) {
    char path[] = "/tmp/cabin-tel-model-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) { SKIP("no temp file for the model"); return; }
    close(fd);
    modelgen_opts mo = modelgen_defaults();
    mo.type = WT_F32;
    mo.n_vocab = 300;
    errbuf err = {{0}};
    CHECK(modelgen_write(&mo, path, &err) == 0, "model: %s", err.msg);
    session_opts so = session_opts_default();
    so.model_path = path;
    so.n_ctx = 256;
    so.ignore_eog = true;
    so.sampling.temp = 0;
    so.backend.n_threads = 1;
    session *s = session_open(&so, &err);
    CHECK(s != NULL, "session: %s", err.msg);
    if (!s) { unlink(path); return; }
    power_monitor *pm = power_monitor_open("tests/fixtures/sysfs/vm", &err);
    session_set_power(s, pm);
    session_set_profiling(s, true);
    int got = 0;
    CHECK(session_complete(s, "eta oin", 40, count_tok, &got, &err) == 0, "complete: %s", err.msg);
    session_stats st;
    session_get_stats(s, &st);
    CHECK(st.gen_tokens == 40 && got == 40, "40 tokens: %d", st.gen_tokens);
    CHECK(st.tok_ms_count == 40, "40 per-token times: %d", st.tok_ms_count);
    double sum = 0;
    for (int i = 0; i < st.tok_ms_count; i++) sum += st.tok_ms[i];
    CHECK(NEAR(sum, st.decode_ms, 0.05 * st.decode_ms + 0.05), "per-token times sum to the decode time: %g vs %g", sum, st.decode_ms);
    CHECK(st.decode_tps > 0 && NEAR(st.decode_tps, 40.0 / (st.decode_ms * 1e-3), 1e-6 * st.decode_tps), "decode tok/s = passes / time");
    CHECK(st.decode_tps_last32 > 0, "last-32 rate");
    CHECK(st.op_profiled && st.op_calls[OP_MATMUL] > 0 && st.op_ms[OP_MATMUL] > 0, "op profile per turn");
    CHECK(st.device_ms_per_token == 0, "no device time on the cpu backend: %g", st.device_ms_per_token);
    CHECK(strcmp(st.energy.total_from, "estimate") == 0 && !st.energy.total_measured, "energy labelled estimated");
    CHECK(st.energy.total_decode_j >= 0 && st.energy.decode_j_per_token >= 0, "energy figures");
    CHECK(st.rss_bytes > 0 && st.kv_bytes > 0, "memory figures");
    session_close(s);
    power_monitor_close(pm);
    unlink(path);
}

int main(void) {
    test_laptop();
    test_desktop();
    test_estimate();
    test_quality();
    test_plan();
    test_session_stats();
    return test_finish();
}
