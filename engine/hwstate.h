// The machine's state beside its power draw: CPU frequency and throttling, the hottest thermal
// zone, and whether it runs on battery or mains. One reading per step for front ends and the
// precision governor; power, tok/s and J/token come from engine/telemetry.h and session stats.
//
// Where each field is read (under <root>; "/" for this machine, a fixture tree in tests):
//   cpufreq    /sys/devices/system/cpu/cpuN/cpufreq/{scaling_cur_freq,cpuinfo_max_freq,
//              cpuinfo_min_freq} (kHz) for each CPU not marked offline (cpuN/online "0")
//   throttle   /sys/devices/system/cpu/cpuN/thermal_throttle/{core,package}_throttle_count
//              (x86 only). A package count repeats on every CPU of the package, so the sum
//              counts each package event once per CPU: only its rise means anything.
//   thermal    /sys/class/thermal/thermal_zoneN/{temp (m°C), type, trip_point_K_{type,temp}}
//   supply     /sys/class/power_supply/*/{type, online, status}
// Files go through the open hook of engine/telemetry.h (telemetry_set_open_hook). A file that
// is missing, unreadable, not a number or out of range ("abc", empty, 10^30) leaves its field
// unknown and says so in `why`; nothing here fails.
#ifndef CABIN_HWSTATE_H
#define CABIN_HWSTATE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct hw_state {
    double cpu_mhz;          // mean scaling_cur_freq over online CPUs (kHz in sysfs -> MHz); 0 unknown
    double cpu_max_mhz;      // mean cpuinfo_max_freq; 0 unknown
    double cpu_min_mhz;      // mean cpuinfo_min_freq; 0 unknown
    int n_cpus;              // CPUs with a readable scaling_cur_freq
    long throttle_count;     // sum of core_ and package_throttle_count over CPUs; -1 unknown
    double temp_c;           // hottest thermal zone, °C; NAN unknown
    char temp_zone[32];      // its type ("x86_pkg_temp"); "" unknown
    double trip_c;           // that zone's lowest passive or critical trip point, °C; NAN none
    int on_battery;          // 1 battery, 0 mains, -1 unknown: a "Mains" or "USB" supply with
                             // online 1 -> mains; else a "Battery" with status "Discharging" ->
                             // battery; else unknown
    char why[256];           // what could not be read, "; "-separated ("" when everything read)
} hw_state;

// Reads every field under root (NULL or "/" = this machine). Never fails: what cannot be read
// is unknown and named in out->why. Cost: a few dozen small file reads per CPU count; read it
// at most a few times a second.
void hw_state_read(const char *root, hw_state *out);

// Whether the machine throttled between two readings (prev may be NULL):
//   - the throttle count rose (both known, now > prev), or
//   - the CPU runs below 90% of its maximum (cpu_mhz < 0.9 * cpu_max_mhz, both known) while
//     the hottest zone is within 5 °C of its trip point (temp_c >= trip_c - 5, both known).
// A low clock alone is not throttling (an idle CPU clocks down); a hot zone alone is not either.
bool hw_state_throttled(const hw_state *prev, const hw_state *now);

// One line: "cpu 2.10/3.50 GHz · throttled 0 · 61 °C x86_pkg_temp · mains"; what is unknown is
// named once after what is known ("cpu 2.10 GHz · mains · throttling, temperature: not exposed";
// nothing known: "clock, throttling, temperature, supply: not exposed here"; `why` has the
// details). Returns what snprintf returns.
int hw_state_line(const hw_state *h, char *buf, size_t n);

#endif
