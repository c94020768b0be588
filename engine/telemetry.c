// Power sources, the sampler thread and process memory (engine/telemetry.h).
#include "telemetry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// How a source is read.
enum read_mode {
    RM_COUNTER_UJ,      // one file, µJ counter (RAPL energy_uj, hwmon energy*_input)
    RM_GAUGE_UW,        // one file, µW (hwmon power*, battery power_now)
    RM_BATTERY_IV,      // current_now µA × voltage_now µV
    RM_NVML_ENERGY,     // mJ counter
    RM_NVML_POWER,      // mW gauge
    RM_CPU_TIME,        // estimate: CPU seconds × watts per core
};

typedef struct source {
    power_reading r;
    enum read_mode mode;
    char path[512], path2[512];
    uint64_t max_range;         // counter wrap (µJ), 0 = unknown
    int nvml_index;
    bool have_last;
    double last_t;
    double last_value;          // counter: raw units; gauge: watts; cpu: seconds
} source;

typedef struct nvml_api {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    int (*count)(unsigned int *);
    int (*handle)(unsigned int, void **);
    int (*power)(void *, unsigned int *);
    int (*energy)(void *, unsigned long long *);
    void *dev[8];
} nvml_api;

struct power_monitor {
    char root[400];
    source src[TEL_MAX_SOURCES];
    int n;
    double watts_per_core;
    nvml_api nvml;
    pthread_mutex_t mu;
    pthread_t thread;
    bool running;
    atomic_bool stop;
    double hz;
};

static telemetry_open_fn open_hook;
static double (*cpu_time_hook)(void);

void telemetry_set_open_hook(telemetry_open_fn fn) { open_hook = fn; }
void telemetry_set_cpu_time_hook(double (*fn)(void)) { cpu_time_hook = fn; }

const char *power_kind_name(enum power_kind k) {
    static const char *names[] = { "rapl", "hwmon", "nvml", "battery", "estimate" };
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

// Reads a small sysfs file into buf (NUL-terminated, trailing newline cut). 0 ok, else errno.
static int read_small(const char *path, char *buf, size_t cap) {
    int fd = open_hook ? open_hook(path, O_RDONLY) : open(path, O_RDONLY);
    if (fd < 0) return errno ? errno : EIO;
    ssize_t got = read(fd, buf, cap - 1);
    int e = got < 0 ? errno : 0;
    close(fd);
    if (got < 0) return e ? e : EIO;
    buf[got] = 0;
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' ')) buf[--got] = 0;
    return 0;
}

int telemetry_read_file(const char *path, char *buf, size_t cap) { return read_small(path, buf, cap); }

// A non-negative integer file. 0 ok, else errno (EINVAL: not a number).
static int read_u64(const char *path, uint64_t *out) {
    char buf[64];
    int e = read_small(path, buf, sizeof buf);
    if (e) return e;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (end == buf || errno || buf[0] == '-') return EINVAL;
    *out = v;
    return 0;
}

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void basename_of(const char *path, char *out, size_t cap) {
    const char *b = strrchr(path, '/');
    str_cut_printf(out, cap, "%s", b ? b + 1 : path);
}

static source *add_source(power_monitor *pm, enum power_kind kind, enum read_mode mode, const char *name) {
    if (pm->n >= TEL_MAX_SOURCES) return NULL;
    source *s = &pm->src[pm->n++];
    memset(s, 0, sizeof *s);
    s->r.kind = kind;
    s->r.measured = kind != PWR_ESTIMATE;
    s->r.counter = mode == RM_COUNTER_UJ || mode == RM_NVML_ENERGY || mode == RM_CPU_TIME;
    s->mode = mode;
    str_cut_printf(s->r.name, sizeof s->r.name, "%s", name);
    s->r.readable = true;
    return s;
}

// Tries one read of a file a source depends on; marks the source unreadable with the reason.
static void probe(source *s, const char *path) {
    uint64_t v;
    int e = read_u64(path, &v);
    if (!e) return;
    char base[128];
    basename_of(path, base, sizeof base);
    s->r.readable = false;
    str_cut_printf(s->r.reason, sizeof s->r.reason, "%s: %s", base, e == EINVAL ? "not a number" : strerror(e));
}

// Sorted directory entries (stable source order across runs); returns count, names malloc'd.
static int list_dir(const char *dir, char ***out) {
    DIR *d = opendir(dir);
    *out = NULL;
    if (!d) return 0;
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) { cap = cap ? cap * 2 : 16; v = xrealloc(v, (size_t)cap * sizeof *v); }
        v[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++)     // insertion sort: a handful of entries
        for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) { char *t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
    *out = v;
    return n;
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void find_rapl(power_monitor *pm) {
    char dir[512], path[600], name[64];
    str_cut_printf(dir, sizeof dir, "%s/sys/class/powercap", pm->root);
    char **ents;
    int n = list_dir(dir, &ents);
    for (int i = 0; i < n; i++) {
        str_cut_printf(path, sizeof path, "%s/%s/energy_uj", dir, ents[i]);
        struct stat st;
        if (lstat(path, &st) != 0) continue;      // a control-type folder, no domain
        str_cut_printf(path, sizeof path, "%s/%s/name", dir, ents[i]);
        if (read_small(path, name, sizeof name)) str_cut_printf(name, sizeof name, "%s", ents[i]);
        char sname[64];
        str_cut_printf(sname, sizeof sname, "rapl:%s", name);
        // several sockets may share a domain name: qualify by the entry
        for (int k = 0; k < pm->n; k++)
            if (strcmp(pm->src[k].r.name, sname) == 0) { str_cut_printf(sname, sizeof sname, "rapl:%s(%s)", name, ents[i]); break; }
        source *s = add_source(pm, PWR_RAPL, RM_COUNTER_UJ, sname);
        if (!s) break;
        str_cut_printf(s->path, sizeof s->path, "%s/%s/energy_uj", dir, ents[i]);
        str_cut_printf(path, sizeof path, "%s/%s/max_energy_range_uj", dir, ents[i]);
        if (read_u64(path, &s->max_range)) s->max_range = 0;
        s->r.in_total = strncmp(name, "package", 7) == 0 || strncmp(name, "dram", 4) == 0;
        probe(s, s->path);
    }
    free_list(ents, n);
}

static void find_hwmon(power_monitor *pm) {
    char dir[512], path[700], chip[64];
    str_cut_printf(dir, sizeof dir, "%s/sys/class/hwmon", pm->root);
    char **ents;
    int n = list_dir(dir, &ents);
    for (int i = 0; i < n; i++) {
        str_cut_printf(path, sizeof path, "%s/%s/name", dir, ents[i]);
        if (read_small(path, chip, sizeof chip)) str_cut_printf(chip, sizeof chip, "%s", ents[i]);
        str_cut_printf(path, sizeof path, "%s/%s", dir, ents[i]);
        char **files;
        int nf = list_dir(path, &files);
        for (int f = 0; f < nf; f++) {
            const char *fn = files[f];
            int ch = 0;
            char suffix[32] = "";
            enum read_mode mode;
            if (sscanf(fn, "energy%d_%31s", &ch, suffix) == 2 && strcmp(suffix, "input") == 0) mode = RM_COUNTER_UJ;
            else if (sscanf(fn, "power%d_%31s", &ch, suffix) == 2 &&
                     (strcmp(suffix, "input") == 0 || strcmp(suffix, "average") == 0)) {
                mode = RM_GAUGE_UW;
                if (strcmp(suffix, "average") == 0) {   // power*_input of the same channel wins
                    char alt[800];
                    str_cut_printf(alt, sizeof alt, "%s/%s/power%d_input", dir, ents[i], ch);
                    if (file_exists(alt)) continue;
                }
            } else continue;
            char sname[64];
            str_cut_printf(sname, sizeof sname, "hwmon:%s/%s%d", chip, mode == RM_COUNTER_UJ ? "energy" : "power", ch);
            source *s = add_source(pm, PWR_HWMON, mode, sname);
            if (!s) break;
            str_cut_printf(s->path, sizeof s->path, "%s/%s/%s", dir, ents[i], fn);
            s->r.in_total = true;
            probe(s, s->path);
        }
        free_list(files, nf);
    }
    free_list(ents, n);
}

static void find_batteries(power_monitor *pm) {
    char dir[512], path[700], type[32];
    str_cut_printf(dir, sizeof dir, "%s/sys/class/power_supply", pm->root);
    char **ents;
    int n = list_dir(dir, &ents);
    for (int i = 0; i < n; i++) {
        str_cut_printf(path, sizeof path, "%s/%s/type", dir, ents[i]);
        if (read_small(path, type, sizeof type) || strcmp(type, "Battery") != 0) continue;
        char sname[64];
        str_cut_printf(sname, sizeof sname, "battery:%s", ents[i]);
        str_cut_printf(path, sizeof path, "%s/%s/power_now", dir, ents[i]);
        bool has_power = file_exists(path);
        source *s = add_source(pm, PWR_BATTERY, has_power ? RM_GAUGE_UW : RM_BATTERY_IV, sname);
        if (!s) break;
        s->r.in_total = true;
        if (has_power) {
            str_cut_printf(s->path, sizeof s->path, "%s", path);
            probe(s, s->path);
        } else {
            str_cut_printf(s->path, sizeof s->path, "%s/%s/current_now", dir, ents[i]);
            str_cut_printf(s->path2, sizeof s->path2, "%s/%s/voltage_now", dir, ents[i]);
            probe(s, s->path);
            if (s->r.readable) probe(s, s->path2);
        }
    }
    free_list(ents, n);
}

static void find_nvml(power_monitor *pm) {
    nvml_api *a = &pm->nvml;
    a->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) return;   // no NVIDIA driver: not a source, not an error
    a->init = (int (*)(void))dlsym(a->lib, "nvmlInit_v2");
    a->shutdown = (int (*)(void))dlsym(a->lib, "nvmlShutdown");
    a->count = (int (*)(unsigned int *))dlsym(a->lib, "nvmlDeviceGetCount_v2");
    a->handle = (int (*)(unsigned int, void **))dlsym(a->lib, "nvmlDeviceGetHandleByIndex_v2");
    a->power = (int (*)(void *, unsigned int *))dlsym(a->lib, "nvmlDeviceGetPowerUsage");
    a->energy = (int (*)(void *, unsigned long long *))dlsym(a->lib, "nvmlDeviceGetTotalEnergyConsumption");
    unsigned int count = 0;
    if (!a->init || !a->count || !a->handle || !a->power || a->init() != 0) {
        dlclose(a->lib);
        memset(a, 0, sizeof *a);
        return;
    }
    if (a->count(&count) != 0) count = 0;
    for (unsigned int i = 0; i < count && i < 8; i++) {
        if (a->handle(i, &a->dev[i]) != 0) continue;
        unsigned long long mj;
        unsigned int mw;
        bool energy = a->energy && a->energy(a->dev[i], &mj) == 0;
        char sname[64];
        str_cut_printf(sname, sizeof sname, "nvml:%u", i);
        source *s = add_source(pm, PWR_NVML, energy ? RM_NVML_ENERGY : RM_NVML_POWER, sname);
        if (!s) break;
        s->nvml_index = (int)i;
        s->r.in_total = true;
        if (!energy && a->power(a->dev[i], &mw) != 0) {
            s->r.readable = false;
            str_cut_printf(s->r.reason, sizeof s->r.reason, "nvmlDeviceGetPowerUsage not supported");
        }
    }
}

power_monitor *power_monitor_open(const char *root, errbuf *err) {
    if (!root || !*root) root = "/";
    struct stat st;
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        err_set(err, "power sources: root %s is not a folder", root);
        return NULL;
    }
    power_monitor *pm = xcalloc(1, sizeof *pm);
    // "/" -> "" so paths read "/sys/..."
    str_cut_printf(pm->root, sizeof pm->root, "%s", strcmp(root, "/") == 0 ? "" : root);
    size_t rl = strlen(pm->root);
    while (rl > 0 && pm->root[rl - 1] == '/') pm->root[--rl] = 0;
    pthread_mutex_init(&pm->mu, NULL);
    pm->watts_per_core = 15.0;
    const char *env = getenv("CABIN_WATTS_PER_CORE");
    if (env && *env) {
        char *end;
        double w = strtod(env, &end);
        if (end != env && *end == 0 && w >= 0 && w < 1e4) pm->watts_per_core = w;
    }
    find_rapl(pm);
    find_hwmon(pm);
    if (strcmp(root, "/") == 0) find_nvml(pm);
    find_batteries(pm);
    source *e = add_source(pm, PWR_ESTIMATE, RM_CPU_TIME, "estimate:cpu");
    if (!e) {   // the estimate always has a slot: replace the last source
        pm->n--;
        e = add_source(pm, PWR_ESTIMATE, RM_CPU_TIME, "estimate:cpu");
    }
    return pm;
}

void power_monitor_close(power_monitor *pm) {
    if (!pm) return;
    power_monitor_stop(pm);
    if (pm->nvml.lib) {
        if (pm->nvml.shutdown) pm->nvml.shutdown();
        dlclose(pm->nvml.lib);
    }
    pthread_mutex_destroy(&pm->mu);
    free(pm);
}

void power_monitor_set_watts_per_core(power_monitor *pm, double w) {
    pthread_mutex_lock(&pm->mu);
    if (w >= 0) pm->watts_per_core = w;
    pthread_mutex_unlock(&pm->mu);
}

double power_monitor_watts_per_core(const power_monitor *pm) { return pm->watts_per_core; }

static double process_cpu_seconds(void) {
    if (cpu_time_hook) return cpu_time_hook();
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

// The source's current value in its own units (see source.last_value). 0 ok, else errno.
static int read_value(power_monitor *pm, source *s, double *v) {
    uint64_t a = 0, b = 0;
    int e;
    switch (s->mode) {
    case RM_COUNTER_UJ:
        if ((e = read_u64(s->path, &a))) return e;
        *v = (double)a;
        return 0;
    case RM_GAUGE_UW:
        if ((e = read_u64(s->path, &a))) return e;
        *v = (double)a * 1e-6;
        return 0;
    case RM_BATTERY_IV:
        if ((e = read_u64(s->path, &a)) || (e = read_u64(s->path2, &b))) return e;
        *v = (double)a * 1e-6 * ((double)b * 1e-6);   // A × V
        return 0;
    case RM_NVML_ENERGY: {
        unsigned long long mj;
        if (pm->nvml.energy(pm->nvml.dev[s->nvml_index], &mj) != 0) return EIO;
        *v = (double)mj;
        return 0;
    }
    case RM_NVML_POWER: {
        unsigned int mw;
        if (pm->nvml.power(pm->nvml.dev[s->nvml_index], &mw) != 0) return EIO;
        *v = mw * 1e-3;
        return 0;
    }
    case RM_CPU_TIME:
        *v = process_cpu_seconds();
        return 0;
    }
    return EINVAL;
}

// Joules between two counter readings, with wrap-around at max_range (µJ counters).
static double counter_joules(const source *s, double prev, double cur) {
    double scale = s->mode == RM_NVML_ENERGY ? 1e-3 : 1e-6;
    double d = cur - prev;
    if (d < 0) {
        if (s->max_range > 0 && prev <= (double)s->max_range) d = ((double)s->max_range - prev) + cur;
        else d = 0;   // reset without a known range: drop this interval
    }
    return d * scale;
}

static void sample_locked(power_monitor *pm, double t) {
    for (int i = 0; i < pm->n; i++) {
        source *s = &pm->src[i];
        if (!s->r.readable) continue;
        double v;
        int e = read_value(pm, s, &v);
        if (e) {   // a source that stops answering is reported, not retried every tick
            s->r.readable = false;
            str_cut_printf(s->r.reason, sizeof s->r.reason, "read failed: %s", strerror(e));
            continue;
        }
        if (s->have_last && t > s->last_t) {
            double dt = t - s->last_t, j;
            if (s->mode == RM_CPU_TIME) {
                double busy = v - s->last_value;
                if (busy < 0) busy = 0;
                j = busy * pm->watts_per_core;
                s->r.watts = j / dt;
            } else if (s->r.counter) {
                j = counter_joules(s, s->last_value, v);
                s->r.watts = j / dt;
            } else {
                j = 0.5 * (s->last_value + v) * dt;
                s->r.watts = v;
            }
            s->r.joules += j;
        } else if (!s->r.counter) {
            s->r.watts = v;
        }
        if (!s->have_last || t > s->last_t) {
            s->last_value = v;
            s->last_t = t;
            s->have_last = true;
            s->r.samples++;
        }
    }
}

void power_monitor_sample_at(power_monitor *pm, double t) {
    pthread_mutex_lock(&pm->mu);
    sample_locked(pm, t);
    pthread_mutex_unlock(&pm->mu);
}

void power_monitor_sample(power_monitor *pm) { power_monitor_sample_at(pm, now_sec()); }

static void *sampler_main(void *arg) {
    power_monitor *pm = arg;
    long ns = (long)(1e9 / pm->hz);
    while (!atomic_load(&pm->stop)) {
        power_monitor_sample(pm);
        // sleep in short slices so stop is prompt
        for (long left = ns; left > 0 && !atomic_load(&pm->stop); left -= 20000000L)
            sleep_ms((left < 20000000L ? left : 20000000L) / 1e6);
    }
    return NULL;
}

int power_monitor_start(power_monitor *pm, double hz, errbuf *err) {
    if (pm->running) return 0;
    pm->hz = hz > 0 && hz <= 1000 ? hz : 10.0;
    atomic_store(&pm->stop, false);
    if (pthread_create(&pm->thread, NULL, sampler_main, pm) != 0)
        return err_set(err, "power sampler: cannot start its thread");
    pm->running = true;
    return 0;
}

void power_monitor_stop(power_monitor *pm) {
    if (!pm->running) return;
    atomic_store(&pm->stop, true);
    pthread_join(pm->thread, NULL);
    pm->running = false;
}

int power_monitor_read(power_monitor *pm, power_reading *out, int max) {
    pthread_mutex_lock(&pm->mu);
    for (int i = 0; i < pm->n && i < max; i++) out[i] = pm->src[i].r;
    int n = pm->n;
    pthread_mutex_unlock(&pm->mu);
    return n;
}

// Which kind of source makes the total (see the header). Caller holds mu.
static int total_class(const power_monitor *pm) {
    static const int order[][2] = { { PWR_RAPL, PWR_NVML }, { PWR_HWMON, -1 }, { PWR_BATTERY, -1 } };
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < pm->n; i++) {
            const source *s = &pm->src[i];
            if (s->r.readable && s->r.in_total && ((int)s->r.kind == order[c][0] || (int)s->r.kind == order[c][1]))
                return c;
        }
    return 3;
}

static bool in_class(const source *s, int c) {
    switch (c) {
    case 0: return s->r.in_total && s->r.readable && (s->r.kind == PWR_RAPL || s->r.kind == PWR_NVML);
    case 1: return s->r.in_total && s->r.readable && s->r.kind == PWR_HWMON;
    case 2: return s->r.in_total && s->r.readable && s->r.kind == PWR_BATTERY;
    default: return s->r.kind == PWR_ESTIMATE;
    }
}

const char *power_monitor_total_from(power_monitor *pm, bool *measured) {
    pthread_mutex_lock(&pm->mu);
    int c = total_class(pm);
    bool rapl = false, nvml = false;
    for (int i = 0; i < pm->n; i++)
        if (in_class(&pm->src[i], 0)) { rapl |= pm->src[i].r.kind == PWR_RAPL; nvml |= pm->src[i].r.kind == PWR_NVML; }
    pthread_mutex_unlock(&pm->mu);
    if (measured) *measured = c < 3;
    switch (c) {
    case 0: return rapl && nvml ? "rapl+nvml" : rapl ? "rapl" : "nvml";
    case 1: return "hwmon";
    case 2: return "battery";
    default: return "estimate";
    }
}

void power_monitor_mark(power_monitor *pm, power_mark *out) {
    double t = now_sec();
    pthread_mutex_lock(&pm->mu);
    sample_locked(pm, t);
    int c = total_class(pm);
    out->n = pm->n;
    out->t = t;
    out->total_j = 0;
    for (int i = 0; i < pm->n; i++) {
        out->joules[i] = pm->src[i].r.joules;
        if (in_class(&pm->src[i], c)) out->total_j += pm->src[i].r.joules;
    }
    pthread_mutex_unlock(&pm->mu);
}

void energy_turn_from_marks(power_monitor *pm, const power_mark *m0, const power_mark *m1,
                            const power_mark *m2, int prefill_tokens, int decode_tokens, energy_turn *e) {
    memset(e, 0, sizeof *e);
    if (!pm) return;
    bool measured = false;
    str_cut_printf(e->total_from, sizeof e->total_from, "%s", power_monitor_total_from(pm, &measured));
    e->total_measured = measured;
    pthread_mutex_lock(&pm->mu);
    int n = m0->n < m2->n ? m0->n : m2->n;
    if (m1->n < n) n = m1->n;
    if (pm->n < n) n = pm->n;
    e->n = n;
    for (int i = 0; i < n; i++) {
        str_cut_printf(e->name[i], sizeof e->name[i], "%s", pm->src[i].r.name);
        e->measured[i] = pm->src[i].r.measured;
        e->prefill_j[i] = m1->joules[i] - m0->joules[i];
        e->decode_j[i] = m2->joules[i] - m1->joules[i];
    }
    pthread_mutex_unlock(&pm->mu);
    e->total_prefill_j = m1->total_j - m0->total_j;
    e->total_decode_j = m2->total_j - m1->total_j;
    if (prefill_tokens > 0) e->prefill_j_per_token = e->total_prefill_j / prefill_tokens;
    if (decode_tokens > 0) e->decode_j_per_token = e->total_decode_j / decode_tokens;
    if (m1->t > m0->t) e->prefill_w = e->total_prefill_j / (m1->t - m0->t);
    if (m2->t > m1->t) e->decode_w = e->total_decode_j / (m2->t - m1->t);
}

uint64_t telemetry_rss_bytes(void) {
    char buf[128];
    if (read_small("/proc/self/statm", buf, sizeof buf)) return 0;
    unsigned long long size = 0, resident = 0;
    if (sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
    long page = sysconf(_SC_PAGESIZE);
    return (uint64_t)resident * (uint64_t)(page > 0 ? page : 4096);
}
