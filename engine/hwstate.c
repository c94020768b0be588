// CPU frequency, throttling, temperature and the power supply, read from sysfs (engine/hwstate.h).
#include "hwstate.h"
#include "telemetry.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Plausible ranges: anything outside is a broken file, and the field stays unknown.
#define HW_MAX_KHZ 100000000LL        // 100 GHz
#define HW_MIN_MILLI_C (-60000LL)      // -60 °C
#define HW_MAX_MILLI_C 250000LL        // 250 °C
#define HW_MAX_THROTTLE 1000000000000LL

// Appends one "; "-separated note to h->why (quietly cut at the buffer's end).
static void why_add(hw_state *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_add(hw_state *h, const char *fmt, ...) {
    size_t len = strlen(h->why);
    if (len + 3 >= sizeof h->why) return;
    if (len) { memcpy(h->why + len, "; ", 3); len += 2; }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why + len, sizeof h->why - len, fmt, ap);
    va_end(ap);
}

// A whole-file decimal integer in [lo, hi]. 0 ok, else an errno (EINVAL: not a number,
// ERANGE: out of range).
static int read_ll(const char *path, long long lo, long long hi, long long *out) {
    char buf[64];
    int e = telemetry_read_file(path, buf, sizeof buf);
    if (e) return e;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || *end) return EINVAL;
    if (errno == ERANGE || v < lo || v > hi) return ERANGE;
    *out = v;
    return 0;
}

static const char *read_error(int e) {
    return e == EINVAL ? "not a number" : e == ERANGE ? "out of range" : strerror(e);
}

// "cpu12" -> true (a CPU folder, not cpufreq/cpuidle).
static bool is_cpu_dir(const char *name) {
    if (strncmp(name, "cpu", 3) != 0 || !name[3]) return false;
    for (const char *p = name + 3; *p; p++)
        if (!isdigit((unsigned char)*p)) return false;
    return true;
}

static void read_cpus(const char *root, hw_state *h) {
    char dir[512], path[700];
    str_cut_printf(dir, sizeof dir, "%s/sys/devices/system/cpu", root);
    DIR *d = opendir(dir);
    if (!d) { why_add(h, "cpufreq: no /sys/devices/system/cpu"); return; }
    double cur = 0, max = 0, min = 0;
    int n_max = 0, n_min = 0, n_folders = 0, n_throttle = 0;
    long long throttle = 0;
    int first_err = 0;
    char first_file[96] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_cpu_dir(e->d_name)) continue;
        long long v;
        str_cut_printf(path, sizeof path, "%s/%s/online", dir, e->d_name);
        if (read_ll(path, 0, 1, &v) == 0 && v == 0) continue;   // offline (cpu0 has no such file)
        str_cut_printf(path, sizeof path, "%s/%s/cpufreq", dir, e->d_name);
        DIR *f = opendir(path);
        if (f) {
            closedir(f);
            n_folders++;
            str_cut_printf(path, sizeof path, "%s/%s/cpufreq/scaling_cur_freq", dir, e->d_name);
            int err = read_ll(path, 1, HW_MAX_KHZ, &v);
            if (!err) { cur += (double)v * 1e-3; h->n_cpus++; }
            else if (!first_err) { first_err = err; str_cut_printf(first_file, sizeof first_file, "%s/cpufreq/scaling_cur_freq", e->d_name); }
            str_cut_printf(path, sizeof path, "%s/%s/cpufreq/cpuinfo_max_freq", dir, e->d_name);
            if (read_ll(path, 1, HW_MAX_KHZ, &v) == 0) { max += (double)v * 1e-3; n_max++; }
            str_cut_printf(path, sizeof path, "%s/%s/cpufreq/cpuinfo_min_freq", dir, e->d_name);
            if (read_ll(path, 1, HW_MAX_KHZ, &v) == 0) { min += (double)v * 1e-3; n_min++; }
        }
        static const char *counts[] = { "core_throttle_count", "package_throttle_count" };
        for (int k = 0; k < 2; k++) {
            str_cut_printf(path, sizeof path, "%s/%s/thermal_throttle/%s", dir, e->d_name, counts[k]);
            if (read_ll(path, 0, HW_MAX_THROTTLE, &v) == 0) { throttle += v; n_throttle++; }
        }
    }
    closedir(d);
    if (h->n_cpus) h->cpu_mhz = cur / h->n_cpus;
    if (n_max) h->cpu_max_mhz = max / n_max;
    if (n_min) h->cpu_min_mhz = min / n_min;
    if (n_throttle) h->throttle_count = (long)throttle;
    if (!n_folders) why_add(h, "cpufreq: no /sys/devices/system/cpu/cpu0/cpufreq");
    else if (first_err) why_add(h, "cpufreq: %s: %s", first_file, read_error(first_err));
    if (!n_throttle) why_add(h, "throttle: no thermal_throttle counts");
}

// The zone's lowest passive or critical trip point in °C, NAN when it has none.
static double zone_trip(const char *zone_dir) {
    char path[700], type[32];
    double best = NAN;
    for (int k = 0; k < 32; k++) {
        str_cut_printf(path, sizeof path, "%s/trip_point_%d_type", zone_dir, k);
        if (telemetry_read_file(path, type, sizeof type)) break;
        if (strcmp(type, "passive") != 0 && strcmp(type, "critical") != 0) continue;
        long long v;
        str_cut_printf(path, sizeof path, "%s/trip_point_%d_temp", zone_dir, k);
        if (read_ll(path, HW_MIN_MILLI_C, HW_MAX_MILLI_C, &v) || v <= 0) continue;
        if (isnan(best) || v * 1e-3 < best) best = (double)v * 1e-3;
    }
    return best;
}

static void read_thermal(const char *root, hw_state *h) {
    char dir[512], zdir[700], path[760];
    str_cut_printf(dir, sizeof dir, "%s/sys/class/thermal", root);
    DIR *d = opendir(dir);
    if (!d) { why_add(h, "thermal: no /sys/class/thermal"); return; }
    int n_zones = 0, first_err = 0;
    char first_zone[64] = "", best_name[64] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "thermal_zone", 12) != 0) continue;
        n_zones++;
        str_cut_printf(zdir, sizeof zdir, "%s/%s", dir, e->d_name);
        str_cut_printf(path, sizeof path, "%s/temp", zdir);
        long long v;
        int err = read_ll(path, HW_MIN_MILLI_C, HW_MAX_MILLI_C, &v);
        if (err) {
            if (!first_err) { first_err = err; str_cut_printf(first_zone, sizeof first_zone, "%s", e->d_name); }
            continue;
        }
        double c = (double)v * 1e-3;
        // the hottest; on a tie the first name in order, so the choice does not depend on readdir
        if (!isnan(h->temp_c) && (c < h->temp_c || (c == h->temp_c && strcmp(e->d_name, best_name) > 0))) continue;
        h->temp_c = c;
        str_cut_printf(best_name, sizeof best_name, "%s", e->d_name);
        str_cut_printf(path, sizeof path, "%s/type", zdir);
        if (telemetry_read_file(path, h->temp_zone, sizeof h->temp_zone)) str_cut_printf(h->temp_zone, sizeof h->temp_zone, "%s", e->d_name);
        h->trip_c = zone_trip(zdir);
    }
    closedir(d);
    if (!n_zones) why_add(h, "thermal: no thermal zones");
    else if (first_err && isnan(h->temp_c)) why_add(h, "thermal: %s/temp: %s", first_zone, read_error(first_err));
}

static void read_supply(const char *root, hw_state *h) {
    char dir[512], path[700], text[32];
    str_cut_printf(dir, sizeof dir, "%s/sys/class/power_supply", root);
    DIR *d = opendir(dir);
    if (!d) { why_add(h, "supply: no /sys/class/power_supply"); return; }
    bool mains_online = false, discharging = false;
    int n_supplies = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        n_supplies++;
        str_cut_printf(path, sizeof path, "%s/%s/type", dir, e->d_name);
        if (telemetry_read_file(path, text, sizeof text)) continue;
        if (!strcmp(text, "Mains") || !strcmp(text, "USB")) {
            long long on;
            str_cut_printf(path, sizeof path, "%s/%s/online", dir, e->d_name);
            if (read_ll(path, 0, 1, &on) == 0 && on == 1) mains_online = true;
        } else if (!strcmp(text, "Battery")) {
            str_cut_printf(path, sizeof path, "%s/%s/status", dir, e->d_name);
            if (telemetry_read_file(path, text, sizeof text) == 0 && !strcmp(text, "Discharging")) discharging = true;
        }
    }
    closedir(d);
    h->on_battery = mains_online ? 0 : discharging ? 1 : -1;
    if (!n_supplies) why_add(h, "supply: no power supplies listed");
    else if (h->on_battery < 0) why_add(h, "supply: no mains online, no battery discharging");
}

void hw_state_read(const char *root, hw_state *out) {
    memset(out, 0, sizeof *out);
    out->throttle_count = -1;
    out->temp_c = NAN;
    out->trip_c = NAN;
    out->on_battery = -1;
    char base[400];
    // "/" -> "" so paths read "/sys/..."
    str_cut_printf(base, sizeof base, "%s", !root || !strcmp(root, "/") ? "" : root);
    size_t len = strlen(base);
    while (len > 0 && base[len - 1] == '/') base[--len] = 0;
    read_cpus(base, out);
    read_thermal(base, out);
    read_supply(base, out);
}

bool hw_state_throttled(const hw_state *prev, const hw_state *now) {
    if (prev && prev->throttle_count >= 0 && now->throttle_count > prev->throttle_count) return true;
    bool slow = now->cpu_mhz > 0 && now->cpu_max_mhz > 0 && now->cpu_mhz < 0.9 * now->cpu_max_mhz;
    bool hot = !isnan(now->temp_c) && !isnan(now->trip_c) && now->temp_c >= now->trip_c - 5.0;
    return slow && hot;
}

int hw_state_line(const hw_state *h, char *buf, size_t n) {
    // What is known, " · " between; then what is not, named once ("not exposed here"): sysfs of
    // a VM or a container often has no cpufreq, thermal zones or power supplies at all.
    char known[160] = "", part[64];
    const char *unknown[4];
    int n_unknown = 0;
    if (h->cpu_mhz > 0 && h->cpu_max_mhz > 0)
        str_cut_printf(part, sizeof part, "cpu %.2f/%.2f GHz", h->cpu_mhz * 1e-3, h->cpu_max_mhz * 1e-3);
    else if (h->cpu_mhz > 0) str_cut_printf(part, sizeof part, "cpu %.2f GHz", h->cpu_mhz * 1e-3);
    else { part[0] = 0; unknown[n_unknown++] = "clock"; }
    const char *sep = " · ";
    if (part[0]) str_cut_printf(known, sizeof known, "%s", part);
    if (h->throttle_count >= 0)
        str_cut_printf(known + strlen(known), sizeof known - strlen(known), "%sthrottled %ld", known[0] ? sep : "",
                       h->throttle_count);
    else unknown[n_unknown++] = "throttling";
    if (!isnan(h->temp_c))
        str_cut_printf(known + strlen(known), sizeof known - strlen(known), "%s%.0f °C %s", known[0] ? sep : "",
                       h->temp_c, h->temp_zone);
    else unknown[n_unknown++] = "temperature";
    if (h->on_battery >= 0)
        str_cut_printf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? sep : "",
                       h->on_battery ? "battery" : "mains");
    else unknown[n_unknown++] = "supply";
    if (n_unknown == 0) return snprintf(buf, n, "%s", known);
    char missing[96] = "";
    for (int i = 0; i < n_unknown; i++)
        str_cut_printf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                       i == 0 ? "" : ", ", unknown[i]);
    if (!known[0]) return snprintf(buf, n, "%s: not exposed here", missing);
    return snprintf(buf, n, "%s · %s: not exposed", known, missing);
}
