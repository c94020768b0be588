// The hardware reading (engine/hwstate.h) from fixture sysfs trees built in a temp folder: every
// field by hand, missing folders, unreadable files (the open hook), a throttle count rising,
// battery discharging against mains online, garbage in files, the one-line summary.
#include "engine/hwstate.h"
#include "engine/telemetry.h"
#include "tests/test.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

static char root[256];

static void rm_tree(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
}

// Writes text to root/rel, making the folders on the way.
static void put(const char *rel, const char *text) {
    char p[600], cmd[700];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = 0;
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
    if (system(cmd) != 0) { fprintf(stderr, "cannot make %s\n", p); return; }
    *slash = '/';
    FILE *f = fopen(p, "w");
    if (!f) { fprintf(stderr, "cannot write %s\n", p); return; }
    fputs(text, f);
    fclose(f);
}

#define CPU "sys/devices/system/cpu/"
#define TZ "sys/class/thermal/"
#define PS "sys/class/power_supply/"

// A laptop: cpu0 2.0 GHz, cpu1 2.2 GHz (max 3.5 / 3.7, min 0.4), cpu2 offline; throttle counts
// 3 + 1 + 2 + 1 = 7; zones 45 °C acpitz and 61.5 °C x86_pkg_temp (trips: active 50, passive 95,
// critical 100); mains online, battery charging.
static void make_laptop(void) {
    snprintf(root, sizeof root, "/tmp/cabin-hw-XXXXXX");
    if (!mkdtemp(root)) { root[0] = 0; return; }
    put(CPU "cpu0/cpufreq/scaling_cur_freq", "2000000\n");
    put(CPU "cpu0/cpufreq/cpuinfo_max_freq", "3500000\n");
    put(CPU "cpu0/cpufreq/cpuinfo_min_freq", "400000\n");
    put(CPU "cpu0/thermal_throttle/core_throttle_count", "3\n");
    put(CPU "cpu0/thermal_throttle/package_throttle_count", "1\n");
    put(CPU "cpu1/online", "1\n");
    put(CPU "cpu1/cpufreq/scaling_cur_freq", "2200000\n");
    put(CPU "cpu1/cpufreq/cpuinfo_max_freq", "3700000\n");
    put(CPU "cpu1/cpufreq/cpuinfo_min_freq", "400000\n");
    put(CPU "cpu1/thermal_throttle/core_throttle_count", "2\n");
    put(CPU "cpu1/thermal_throttle/package_throttle_count", "1\n");
    put(CPU "cpu2/online", "0\n");   // offline: its figures must not count
    put(CPU "cpu2/cpufreq/scaling_cur_freq", "100000\n");
    put(CPU "cpu2/thermal_throttle/core_throttle_count", "500\n");
    put(CPU "cpufreq/policy0/scaling_cur_freq", "9999999\n");   // not a CPU folder
    put(CPU "cpuidle/current_driver", "intel_idle\n");
    put(TZ "thermal_zone0/type", "acpitz\n");
    put(TZ "thermal_zone0/temp", "45000\n");
    put(TZ "thermal_zone0/trip_point_0_type", "critical\n");
    put(TZ "thermal_zone0/trip_point_0_temp", "120000\n");
    put(TZ "thermal_zone1/type", "x86_pkg_temp\n");
    put(TZ "thermal_zone1/temp", "61500\n");
    put(TZ "thermal_zone1/trip_point_0_type", "active\n");
    put(TZ "thermal_zone1/trip_point_0_temp", "50000\n");
    put(TZ "thermal_zone1/trip_point_1_type", "critical\n");
    put(TZ "thermal_zone1/trip_point_1_temp", "100000\n");
    put(TZ "thermal_zone1/trip_point_2_type", "passive\n");
    put(TZ "thermal_zone1/trip_point_2_temp", "95000\n");
    put(TZ "cooling_device0/type", "Processor\n");
    put(PS "AC/type", "Mains\n");
    put(PS "AC/online", "1\n");
    put(PS "BAT0/type", "Battery\n");
    put(PS "BAT0/status", "Charging\n");
}

static void test_every_field(void) {
    make_laptop();
    CHECK(root[0], "temp folder");
    if (!root[0]) return;
    hw_state h;
    hw_state_read(root, &h);
    CHECK(h.n_cpus == 2, "2 online CPUs with cpufreq: %d", h.n_cpus);
    CHECK(NEAR(h.cpu_mhz, 2100.0, 1e-9), "mean 2100 MHz: %g", h.cpu_mhz);
    CHECK(NEAR(h.cpu_max_mhz, 3600.0, 1e-9) && NEAR(h.cpu_min_mhz, 400.0, 1e-9), "max 3600, min 400: %g %g",
          h.cpu_max_mhz, h.cpu_min_mhz);
    CHECK(h.throttle_count == 7, "throttle 3+1+2+1 = 7: %ld", h.throttle_count);
    CHECK(NEAR(h.temp_c, 61.5, 1e-9) && strcmp(h.temp_zone, "x86_pkg_temp") == 0, "hottest 61.5 x86_pkg_temp: %g %s",
          h.temp_c, h.temp_zone);
    CHECK(NEAR(h.trip_c, 95.0, 1e-9), "lowest passive/critical trip 95 (active 50 ignored): %g", h.trip_c);
    CHECK(h.on_battery == 0, "mains online: %d", h.on_battery);
    CHECK(h.why[0] == 0, "nothing missing: '%s'", h.why);
    char line[200];
    hw_state_line(&h, line, sizeof line);
    CHECK(strcmp(line, "cpu 2.10/3.60 GHz · throttled 7 · 62 °C x86_pkg_temp · mains") == 0, "line: %s", line);
    CHECK(!hw_state_throttled(NULL, &h) && !hw_state_throttled(&h, &h), "no rise, 58%% of max at 61.5 °C: not throttled");

    // the count rises: throttled against the earlier reading, not against itself
    hw_state prev = h;
    put(CPU "cpu1/thermal_throttle/core_throttle_count", "5\n");
    hw_state_read(root, &h);
    CHECK(h.throttle_count == 10, "throttle 10: %ld", h.throttle_count);
    CHECK(hw_state_throttled(&prev, &h) && !hw_state_throttled(&h, &h), "a rise of 3 is throttling");
    // a slow clock near the trip point: throttled without a count
    put(TZ "thermal_zone1/temp", "91000\n");
    hw_state_read(root, &h);
    CHECK(hw_state_throttled(NULL, &h), "2.1 of 3.6 GHz at 91 °C, trip 95: throttled");
    put(CPU "cpu0/cpufreq/scaling_cur_freq", "3500000\n");
    put(CPU "cpu1/cpufreq/scaling_cur_freq", "3600000\n");
    hw_state_read(root, &h);
    CHECK(!hw_state_throttled(&h, &h), "3.55 of 3.6 GHz at 91 °C: full speed, not throttled");

    // on battery: mains offline, the battery discharging
    put(PS "AC/online", "0\n");
    put(PS "BAT0/status", "Discharging\n");
    hw_state_read(root, &h);
    CHECK(h.on_battery == 1, "discharging, no mains: battery: %d", h.on_battery);
    hw_state_line(&h, line, sizeof line);
    CHECK(strstr(line, "· battery") != NULL, "line says battery: %s", line);
    // a USB-C charger online wins over a discharging report
    put(PS "ucsi-source-psy-USBC000:001/type", "USB\n");
    put(PS "ucsi-source-psy-USBC000:001/online", "1\n");
    hw_state_read(root, &h);
    CHECK(h.on_battery == 0, "USB supply online: mains: %d", h.on_battery);
    rm_tree();
}

// EACCES for every file under cpu1's cpufreq and for the hottest zone's temp.
static int deny_some(const char *path, int flags) {
    if (strstr(path, "cpu1/cpufreq/") || strstr(path, "thermal_zone1/temp")) { errno = EACCES; return -1; }
    return open(path, flags);
}
static int deny_all(const char *path, int flags) {
    (void)path; (void)flags;
    errno = EACCES;
    return -1;
}

static void test_unreadable(void) {
    make_laptop();
    if (!root[0]) { CHECK(0, "temp folder"); return; }
    hw_state h;
    telemetry_set_open_hook(deny_some);
    hw_state_read(root, &h);
    telemetry_set_open_hook(NULL);
    CHECK(h.n_cpus == 1 && NEAR(h.cpu_mhz, 2000.0, 1e-9) && NEAR(h.cpu_max_mhz, 3500.0, 1e-9),
          "cpu1 denied: cpu0 alone: %d %g %g", h.n_cpus, h.cpu_mhz, h.cpu_max_mhz);
    CHECK(strstr(h.why, "cpufreq: cpu1/cpufreq/scaling_cur_freq: Permission denied") != NULL, "why: %s", h.why);
    CHECK(NEAR(h.temp_c, 45.0, 1e-9) && strcmp(h.temp_zone, "acpitz") == 0 && NEAR(h.trip_c, 120.0, 1e-9),
          "zone1 denied: acpitz 45 °C, trip 120: %g %s %g", h.temp_c, h.temp_zone, h.trip_c);

    telemetry_set_open_hook(deny_all);
    hw_state_read(root, &h);
    telemetry_set_open_hook(NULL);
    CHECK(h.n_cpus == 0 && h.cpu_mhz == 0 && h.cpu_max_mhz == 0 && h.cpu_min_mhz == 0, "all denied: no frequency");
    CHECK(h.throttle_count == -1 && isnan(h.temp_c) && isnan(h.trip_c) && h.temp_zone[0] == 0 && h.on_battery == -1,
          "all denied: everything unknown");
    CHECK(strstr(h.why, "Permission denied") && strstr(h.why, "thermal: thermal_zone") && strstr(h.why, "supply:"),
          "why names each: %s", h.why);
    char line[200];
    hw_state_line(&h, line, sizeof line);
    CHECK(strcmp(line, "clock, throttling, temperature, supply: not exposed here") == 0 &&
          !strchr(line, '?'), "unknowns are named once, no question marks: %s", line);
    // some known, some not: the known ones, then the rest named
    h.cpu_mhz = 2100;
    h.on_battery = 0;
    hw_state_line(&h, line, sizeof line);
    CHECK(strcmp(line, "cpu 2.10 GHz · mains · throttling, temperature: not exposed") == 0, "partly known: %s", line);
    CHECK(!hw_state_throttled(&h, &h), "unknown is not throttled");
    rm_tree();
}

static void test_missing(void) {
    snprintf(root, sizeof root, "/tmp/cabin-hw-XXXXXX");
    CHECK(mkdtemp(root) != NULL, "temp folder");
    hw_state h;
    hw_state_read(root, &h);   // an empty tree
    CHECK(h.n_cpus == 0 && h.cpu_mhz == 0 && h.throttle_count == -1 && isnan(h.temp_c) && h.on_battery == -1,
          "empty tree: all unknown");
    CHECK(strcmp(h.why, "cpufreq: no /sys/devices/system/cpu; thermal: no /sys/class/thermal; "
                        "supply: no /sys/class/power_supply") == 0, "why: %s", h.why);
    // a VM: CPU folders without cpufreq or thermal_throttle, no zones, a mains supply without `online`
    put(CPU "cpu0/topology/core_id", "0\n");
    put(TZ "cooling_device0/type", "Processor\n");
    put(PS "AC/type", "Mains\n");
    hw_state_read(root, &h);
    CHECK(h.n_cpus == 0 && h.throttle_count == -1 && isnan(h.temp_c) && h.on_battery == -1, "vm: all unknown");
    CHECK(strstr(h.why, "cpufreq: no /sys/devices/system/cpu/cpu0/cpufreq") && strstr(h.why, "throttle: no") &&
          strstr(h.why, "thermal: no thermal zones"), "why: %s", h.why);
    rm_tree();
    // a root that is not there: unknown, no crash
    hw_state_read("/tmp/cabin-hw-no-such-root", &h);
    CHECK(h.n_cpus == 0 && isnan(h.temp_c) && h.on_battery == -1 && h.why[0], "no root: unknown: %s", h.why);
}

static void test_garbage(void) {
    make_laptop();
    if (!root[0]) { CHECK(0, "temp folder"); return; }
    put(CPU "cpu0/cpufreq/scaling_cur_freq", "abc\n");
    put(CPU "cpu1/cpufreq/scaling_cur_freq", "");
    put(CPU "cpu0/cpufreq/cpuinfo_max_freq", "99999999999999999999999999999\n");
    put(CPU "cpu1/cpufreq/cpuinfo_max_freq", "-3700000\n");
    put(CPU "cpu0/cpufreq/cpuinfo_min_freq", "400000 kHz\n");
    put(CPU "cpu1/cpufreq/cpuinfo_min_freq", "0\n");
    put(CPU "cpu0/thermal_throttle/core_throttle_count", "-4\n");
    put(CPU "cpu0/thermal_throttle/package_throttle_count", "1e3\n");
    put(CPU "cpu1/thermal_throttle/core_throttle_count", "18446744073709551616\n");
    put(CPU "cpu1/thermal_throttle/package_throttle_count", "\n");
    put(TZ "thermal_zone0/temp", "9999999999\n");
    put(TZ "thermal_zone1/temp", "abc\n");
    put(PS "AC/online", "yes\n");
    put(PS "BAT0/status", "\n");
    hw_state h;
    hw_state_read(root, &h);
    CHECK(h.n_cpus == 0 && h.cpu_mhz == 0 && h.cpu_max_mhz == 0 && h.cpu_min_mhz == 0, "garbage frequencies: unknown");
    CHECK(h.throttle_count == -1, "garbage counts: unknown: %ld", h.throttle_count);
    CHECK(isnan(h.temp_c) && isnan(h.trip_c), "garbage temperatures: unknown: %g", h.temp_c);
    CHECK(h.on_battery == -1, "garbage supply: unknown: %d", h.on_battery);
    CHECK(strstr(h.why, "not a number") != NULL, "why: %s", h.why);
    // a huge but well-formed temperature in one zone does not hide a sane one
    put(TZ "thermal_zone1/temp", "70000\n");
    put(TZ "thermal_zone1/trip_point_2_temp", "xyz\n");
    hw_state_read(root, &h);
    CHECK(NEAR(h.temp_c, 70.0, 1e-9) && NEAR(h.trip_c, 100.0, 1e-9), "zone1 70 °C, its garbage passive trip skipped: %g %g",
          h.temp_c, h.trip_c);
    char small[12];
    int n = hw_state_line(&h, small, sizeof small);
    CHECK(n > 11 && strlen(small) == 11, "a short buffer is cut, the length still told: %d", n);
    rm_tree();
}

int main(void) {
    test_every_field();
    test_unreadable();
    test_missing();
    test_garbage();
    return test_finish();
}
