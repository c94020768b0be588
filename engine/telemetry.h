// Telemetry: where the machine's power draw can be read (RAPL, hwmon, NVML, batteries), a 10 Hz
// sampler that integrates it into joules, a labelled estimate where nothing can be measured, and
// process memory. Front ends read figures through this header and engine/session.h; nothing here
// draws or prints.
//
// Sources (each one named, e.g. "rapl:package-0", "hwmon:amdgpu/power1", "nvml:0",
// "battery:BAT0", "estimate:cpu"):
//   RAPL      <root>/sys/class/powercap/*/energy_uj (µJ counter, wraps at max_energy_range_uj);
//             the domain name is the entry's `name` file. package-* and dram count in the total.
//   hwmon     <root>/sys/class/hwmon/hwmon*/energy*_input (µJ counter), power*_input or
//             power*_average (µW gauge; _input wins when a channel has both).
//   NVML      libnvidia-ml.so.1 through dlopen: nvmlDeviceGetTotalEnergyConsumption (mJ counter)
//             where supported, else nvmlDeviceGetPowerUsage (mW gauge). Only with root "/";
//             no library = no source, silently.
//   battery   <root>/sys/class/power_supply/*/ with type "Battery": power_now (µW), or
//             current_now (µA) × voltage_now (µV).
//   estimate  this process's CPU time (getrusage user+system) × watts per core (default 15,
//             $CABIN_WATTS_PER_CORE, or power_monitor_set_watts_per_core). Always present, always
//             labelled estimated, never measured.
// Counters give exact joules between two samples; gauges are integrated by the trapezoid rule.
// The total: RAPL package/dram + NVML if any is readable; else hwmon; else batteries; else the
// estimate (and then it says "estimated").
#ifndef CABIN_TELEMETRY_H
#define CABIN_TELEMETRY_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

#define TEL_MAX_SOURCES 24

enum power_kind { PWR_RAPL, PWR_HWMON, PWR_NVML, PWR_BATTERY, PWR_ESTIMATE };
const char *power_kind_name(enum power_kind k);   // "rapl", "hwmon", "nvml", "battery", "estimate"

// One source as front ends see it (a copy; safe to keep).
typedef struct power_reading {
    char name[64];
    enum power_kind kind;
    bool measured;          // false: an estimate
    bool readable;          // false: reason says why (e.g. "energy_uj: Permission denied")
    bool counter;           // energy counter (true) or power gauge (false)
    bool in_total;          // counts in the total (see above)
    char reason[160];
    double watts;           // over the latest sample interval (gauge: the latest reading)
    double joules;          // integrated since the monitor opened (its first sample)
    uint64_t samples;
} power_reading;

typedef struct power_monitor power_monitor;

// Discovers the sources under root ("/" or NULL for this machine; a fixture tree in tests).
// Never fails for missing sources (the estimate is always there); errors only for a bad root.
power_monitor *power_monitor_open(const char *root, errbuf *err);
void power_monitor_close(power_monitor *pm);   // stops the sampler first
void power_monitor_set_watts_per_core(power_monitor *pm, double w);
double power_monitor_watts_per_core(const power_monitor *pm);

// One sample of every readable source now (or at time t, seconds, for tests). Thread-safe.
void power_monitor_sample(power_monitor *pm);
void power_monitor_sample_at(power_monitor *pm, double t);
// A sampler thread at hz samples per second (10 is the default when hz <= 0).
int power_monitor_start(power_monitor *pm, double hz, errbuf *err);
void power_monitor_stop(power_monitor *pm);

// Copies of the sources (up to max); returns how many there are.
int power_monitor_read(power_monitor *pm, power_reading *out, int max);

// A point in time for energy accounting: samples now and records every source's joules.
typedef struct power_mark {
    int n;
    double t;                           // seconds (now_sec clock)
    double joules[TEL_MAX_SOURCES];     // per source, same order as power_monitor_read
    double total_j;                     // the total (see above)
} power_mark;
void power_monitor_mark(power_monitor *pm, power_mark *out);
// Which sources make the total, and whether it is measured: "rapl+nvml", "hwmon", "battery",
// "estimate". *measured false for the estimate.
const char *power_monitor_total_from(power_monitor *pm, bool *measured);

// Energy of one turn (prefill and decode separately), per source and in total.
typedef struct energy_turn {
    int n;                              // sources
    char name[TEL_MAX_SOURCES][64];
    bool measured[TEL_MAX_SOURCES];
    double prefill_j[TEL_MAX_SOURCES], decode_j[TEL_MAX_SOURCES];
    char total_from[32];                // see power_monitor_total_from; "" when no monitor
    bool total_measured;
    double total_prefill_j, total_decode_j;
    double prefill_j_per_token, decode_j_per_token;   // total / tokens (0 when no tokens)
    double prefill_w, decode_w;                       // mean total watts over each phase
} energy_turn;
// Fills e from three marks (before prefill, after prefill, after decode) and the token counts.
void energy_turn_from_marks(power_monitor *pm, const power_mark *m0, const power_mark *m1,
                            const power_mark *m2, int prefill_tokens, int decode_tokens, energy_turn *e);

// ---- memory ----
// Resident set size of this process in bytes (/proc/self/statm), 0 if unknown.
uint64_t telemetry_rss_bytes(void);

// Device memory by heap (filled by a device backend; none on the CPU backend).
#define TEL_MAX_HEAPS 8
typedef struct device_heap {
    char name[32];          // e.g. "vram", "host-visible"
    uint64_t used, budget;  // bytes; budget 0 = unknown
} device_heap;

// ---- sysfs ----
// Reads a small file (a sysfs value) into buf through the open hook below: NUL-terminated,
// trailing newlines and spaces cut. 0 ok, else an errno. engine/hwstate.c reads through it too.
int telemetry_read_file(const char *path, char *buf, size_t cap);

// ---- tests ----
// Replaces open(2) for the sysfs readers (NULL: the real one) so a test can make a file fail
// with a chosen errno even when running as root, where mode 000 is still readable.
typedef int (*telemetry_open_fn)(const char *path, int flags);
void telemetry_set_open_hook(telemetry_open_fn fn);
// Replaces this process's CPU seconds (user+system) for the estimate (NULL: getrusage).
void telemetry_set_cpu_time_hook(double (*fn)(void));

#endif
