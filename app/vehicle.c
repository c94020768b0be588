// The simulated vehicle: typed fields with ranges and units, changed only through actions.
#include "app/assistant.h"
#include "base/base.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vfield {
    const char *name;
    vfield_kind kind;
    int lo, hi;              // range (VF_HALF: in degrees; stored doubled)
    int init;                // initial value (VF_HALF: doubled)
    const char *unit;
} vfield;

// Field table: the single source of names, ranges, units and initial values.
static const vfield fields[] = {
    { "climate.driver_temp", VF_HALF, 16, 30, 42, "°C" },
    { "climate.passenger_temp", VF_HALF, 16, 30, 42, "°C" },
    { "climate.rear_temp", VF_HALF, 16, 30, 42, "°C" },
    { "climate.fan", VF_INT, 0, 7, 2, "" },
    { "climate.ac", VF_BOOL, 0, 1, 1, "" },
    { "climate.defrost_front", VF_BOOL, 0, 1, 0, "" },
    { "climate.defrost_rear", VF_BOOL, 0, 1, 0, "" },
    { "seat.driver_heat", VF_INT, 0, 3, 0, "" },
    { "seat.passenger_heat", VF_INT, 0, 3, 0, "" },
    { "seat.driver_cool", VF_INT, 0, 3, 0, "" },
    { "seat.passenger_cool", VF_INT, 0, 3, 0, "" },
    { "window.driver", VF_INT, 0, 100, 0, "%" },
    { "window.passenger", VF_INT, 0, 100, 0, "%" },
    { "window.rear_left", VF_INT, 0, 100, 0, "%" },
    { "window.rear_right", VF_INT, 0, 100, 0, "%" },
    { "sunroof", VF_INT, 0, 100, 0, "%" },
    { "lights.headlights", VF_BOOL, 0, 1, 0, "" },
    { "lights.fog", VF_BOOL, 0, 1, 0, "" },
    { "lights.interior", VF_BOOL, 0, 1, 0, "" },
    { "lights.ambient", VF_BOOL, 0, 1, 1, "" },
    { "nav.destination", VF_TEXT, 0, 0, 0, "" },
    { "nav.eta_min", VF_INT, 0, 1000, 0, "min" },
    { "media.playing", VF_BOOL, 0, 1, 0, "" },
    { "media.source", VF_ENUM, 0, 3, 0, "" },
    { "media.volume", VF_INT, 0, 30, 12, "" },
    { "media.track", VF_INT, 1, 99, 1, "" },
    { "phone.contact", VF_TEXT, 0, 0, 0, "" },
    { "phone.in_call", VF_BOOL, 0, 1, 0, "" },
    { "status.range_km", VF_INT, 0, 2000, 420, "km" },
    { "status.tyres_kpa", VF_INT, 0, 400, 235, "kPa" },
    { "status.fuel_pct", VF_INT, 0, 100, 63, "%" },
    { "status.battery_pct", VF_INT, 0, 100, 88, "%" },
    { "status.oil_pct", VF_INT, 0, 100, 76, "%" },
    { "doors.locked", VF_BOOL, 0, 1, 1, "" },
    { "assist.lane_keep", VF_BOOL, 0, 1, 1, "" },
    { "assist.cruise", VF_BOOL, 0, 1, 0, "" },
    { "assist.parking_sensors", VF_BOOL, 0, 1, 1, "" },
    { "assist.blind_spot", VF_BOOL, 0, 1, 1, "" },
};
#define N_FIELDS (sizeof fields / sizeof fields[0])
static const char *const media_sources[] = { "radio", "bluetooth", "usb", "podcast" };

struct vehicle {
    int val[N_FIELDS];
    char text[N_FIELDS][64];   // VF_TEXT values ("" = none)
};

static int field_index(const char *name) {
    for (size_t i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].name, name) == 0) return (int)i;
    return -1;
}

static const char *field_names[N_FIELDS + 1];

static void name_fields(void) {
    for (size_t i = 0; i < N_FIELDS; i++) field_names[i] = fields[i].name;
    field_names[N_FIELDS] = NULL;
}

const char *const *vehicle_fields(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, name_fields);
    return field_names;
}

const char *vehicle_field_unit(const char *field) {
    int i = field_index(field);
    return i < 0 ? "" : fields[i].unit;
}

// One lock for every car: a server's slots act on one car from their own threads, and the reply
// grammar reads it (vehicle_check) while another slot's action changes it.
static pthread_mutex_t car_mu = PTHREAD_MUTEX_INITIALIZER;

vehicle *vehicle_new(void) {
    vehicle *v = xcalloc(1, sizeof *v);
    vehicle_reset(v);
    return v;
}

void vehicle_free(vehicle *v) { free(v); }

void vehicle_reset(vehicle *v) {
    pthread_mutex_lock(&car_mu);
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < N_FIELDS; i++) v->val[i] = fields[i].init;
    pthread_mutex_unlock(&car_mu);
}

static void format_value(const vehicle *v, int i, char *buf, size_t n) {
    switch (fields[i].kind) {
    case VF_HALF:
        if (v->val[i] % 2) snprintf(buf, n, "%d.5", v->val[i] / 2);
        else snprintf(buf, n, "%d", v->val[i] / 2);
        break;
    case VF_BOOL: snprintf(buf, n, "%s", v->val[i] ? "on" : "off"); break;
    case VF_ENUM: snprintf(buf, n, "%s", media_sources[v->val[i]]); break;
    case VF_TEXT: snprintf(buf, n, "%s", v->text[i][0] ? v->text[i] : "none"); break;
    default: snprintf(buf, n, "%d", v->val[i]); break;
    }
}

int vehicle_get(const vehicle *v, const char *field, char *buf, size_t n) {
    int i = field_index(field);
    if (i < 0) return -1;
    pthread_mutex_lock(&car_mu);
    format_value(v, i, buf, n);
    pthread_mutex_unlock(&car_mu);
    return 0;
}

// ---- applying actions ----

typedef struct apply_ctx {
    vehicle *v;
    const action *a;
    char *change; size_t change_len; size_t change_used;
    char *reason; size_t reason_len;
} apply_ctx;

static int refuse(apply_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(apply_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, c->reason_len, fmt, ap);
    va_end(ap);
    return -1;
}

// Records "field old -> new" (or "field already X") and sets the field (value already validated).
static void set_field(apply_ctx *c, const char *name, int value, const char *text) {
    int i = field_index(name);
    char before[64], after[64];
    format_value(c->v, i, before, sizeof before);
    if (fields[i].kind == VF_TEXT) snprintf(c->v->text[i], sizeof c->v->text[i], "%s", text ? text : "");
    else c->v->val[i] = value;
    format_value(c->v, i, after, sizeof after);
    // A change that changes nothing is said as such ("media.playing already on"), not as "on -> on".
    if (c->change_used < c->change_len)
        c->change_used += (size_t)(strcmp(before, after) == 0
            ? snprintf(c->change + c->change_used, c->change_len - c->change_used, "%s%s already %s",
                       c->change_used ? "; " : "", name, after)
            : snprintf(c->change + c->change_used, c->change_len - c->change_used, "%s%s %s -> %s",
                       c->change_used ? "; " : "", name, before, after));
}

static int get_int(const vehicle *v, const char *name) { return v->val[field_index(name)]; }

// Parses an integer slot within [lo, hi]; "+N"/"-N" accepted when signed.
static int slot_int(apply_ctx *c, const char *key, int lo, int hi, bool required, int def, int *out, const char *what) {
    const char *s = action_slot_value(c->a, key);
    if (!s) {
        if (required) return refuse(c, "I need to know the %s.", what);
        *out = def;
        return 0;
    }
    char *end;
    long x = strtol(s, &end, 10);
    if (*end || end == s) return refuse(c, "I didn't understand the %s '%s'.", what, s);
    if (x < lo || x > hi) return refuse(c, "The %s can be set from %d to %d.", what, lo, hi);
    *out = (int)x;
    return 0;
}

static bool slot_is(const apply_ctx *c, const char *key, const char *value) {
    const char *s = action_slot_value(c->a, key);
    return s && strcmp(s, value) == 0;
}

static int slot_onoff(apply_ctx *c, int *out) {
    const char *s = action_slot_value(c->a, "state");
    if (!s) return refuse(c, "Should I turn it on or off?");
    if (strcmp(s, "on") == 0) *out = 1;
    else if (strcmp(s, "off") == 0) *out = 0;
    else return refuse(c, "I can only turn that on or off.");
    return 0;
}

// Checks that every slot key of the action is one the intent takes.
static int check_keys(apply_ctx *c, const char *const *allowed) {
    for (int i = 0; i < c->a->n_slots; i++) {
        bool ok = false;
        for (int k = 0; allowed[k] && !ok; k++) ok = strcmp(c->a->slots[i].key, allowed[k]) == 0;
        if (!ok) return refuse(c, "I don't know what '%s' means for that.", c->a->slots[i].key);
    }
    return 0;
}
#define KEYS(...) do { static const char *const k_[] = { __VA_ARGS__, NULL }; if (check_keys(c, k_)) return -1; } while (0)

static const char *const zones[] = { "driver", "passenger", "rear" };

static int zone_mask(apply_ctx *c, int *mask) {
    const char *z = action_slot_value(c->a, "zone");
    if (!z || strcmp(z, "all") == 0) { *mask = 7; return 0; }
    for (int i = 0; i < 3; i++)
        if (strcmp(z, zones[i]) == 0) { *mask = 1 << i; return 0; }
    return refuse(c, "There is no climate zone called %s.", z);
}

static int do_climate(apply_ctx *c, const char *verb) {
    vehicle *v = c->v;
    char name[64];
    if (strcmp(verb, "set") == 0 || strcmp(verb, "adjust") == 0) {
        bool adjust = verb[0] == 'a';
        KEYS("zone", "temp", "delta");
        int mask = 0;
        if (zone_mask(c, &mask)) return -1;
        const char *s = action_slot_value(c->a, adjust ? "delta" : "temp");
        if (!s) return refuse(c, adjust ? "How much warmer or cooler?" : "What temperature would you like?");
        char *end;
        double t = strtod(s, &end);
        if (*end || end == s || !isfinite(t)) return refuse(c, "I didn't understand the temperature '%s'.", s);
        int halves = (int)lround(t * 2);
        if (fabs(t * 2 - halves) > 1e-6) return refuse(c, "I can set the temperature in half degrees.");
        for (int z = 0; z < 3; z++) {
            if (!(mask & (1 << z))) continue;
            snprintf(name, sizeof name, "climate.%s_temp", zones[z]);
            int nv = adjust ? get_int(v, name) + halves : halves;
            if (nv < 32 || nv > 60) return refuse(c, "The temperature can be set between 16 and 30 degrees.");
        }
        for (int z = 0; z < 3; z++) {
            if (!(mask & (1 << z))) continue;
            snprintf(name, sizeof name, "climate.%s_temp", zones[z]);
            set_field(c, name, adjust ? get_int(v, name) + halves : halves, NULL);
        }
        return 0;
    }
    if (strcmp(verb, "fan") == 0) {
        KEYS("level", "delta");
        int level;
        if (action_slot_value(c->a, "delta")) {
            int d;
            if (slot_int(c, "delta", -7, 7, true, 0, &d, "fan change")) return -1;
            level = get_int(v, "climate.fan") + d;
            if (level < 0 || level > 7) return refuse(c, "The fan is already at %s.", level < 0 ? "its lowest" : "its highest");
        } else if (slot_int(c, "level", 0, 7, true, 0, &level, "fan level")) {
            return -1;
        }
        set_field(c, "climate.fan", level, NULL);
        return 0;
    }
    if (strcmp(verb, "ac") == 0) {
        KEYS("state");
        int on;
        if (slot_onoff(c, &on)) return -1;
        set_field(c, "climate.ac", on, NULL);
        return 0;
    }
    if (strcmp(verb, "defrost") == 0) {
        KEYS("target", "state");
        int on;
        if (slot_onoff(c, &on)) return -1;
        if (slot_is(c, "target", "rear")) set_field(c, "climate.defrost_rear", on, NULL);
        else if (!action_slot_value(c->a, "target") || slot_is(c, "target", "front")) set_field(c, "climate.defrost_front", on, NULL);
        else return refuse(c, "I can defrost the front or the rear window.");
        return 0;
    }
    return refuse(c, "I can't do that with the climate control.");
}

static int do_seat(apply_ctx *c, const char *verb) {
    KEYS("seat", "level");
    if (strcmp(verb, "heat") != 0 && strcmp(verb, "cool") != 0) return refuse(c, "I can heat or cool the seats.");
    const char *seat = action_slot_value(c->a, "seat");
    if (!seat) seat = "driver";
    if (strcmp(seat, "driver") != 0 && strcmp(seat, "passenger") != 0)
        return refuse(c, "I can only do that for the driver and passenger seats.");
    int level;
    if (slot_int(c, "level", 0, 3, true, 0, &level, "seat level")) return -1;
    char name[64];
    snprintf(name, sizeof name, "seat.%s_%s", seat, verb);
    set_field(c, name, level, NULL);
    return 0;
}

static int do_window(apply_ctx *c, const char *verb) {
    KEYS("window", "position");
    if (strcmp(verb, "set") != 0) return refuse(c, "I can open or close the windows.");
    int pos;
    if (slot_int(c, "position", 0, 100, true, 0, &pos, "window position")) return -1;
    static const char *const names[] = { "driver", "passenger", "rear_left", "rear_right" };
    const char *w = action_slot_value(c->a, "window");
    if (!w) w = "driver";
    char name[64];
    bool any = false;
    for (int i = 0; i < 4; i++) {
        if (strcmp(w, "all") != 0 && strcmp(w, names[i]) != 0) continue;
        snprintf(name, sizeof name, "window.%s", names[i]);
        set_field(c, name, pos, NULL);
        any = true;
    }
    return any ? 0 : refuse(c, "There is no window called %s.", w);
}

static int do_sunroof(apply_ctx *c, const char *verb) {
    KEYS("position");
    if (strcmp(verb, "set") != 0) return refuse(c, "I can open or close the sunroof.");
    int pos;
    if (slot_int(c, "position", 0, 100, true, 0, &pos, "sunroof position")) return -1;
    set_field(c, "sunroof", pos, NULL);
    return 0;
}

static int do_lights(apply_ctx *c, const char *verb) {
    KEYS("target", "state");
    if (strcmp(verb, "set") != 0) return refuse(c, "I can switch the lights on or off.");
    const char *t = action_slot_value(c->a, "target");
    if (!t) t = "headlights";
    char name[64];
    snprintf(name, sizeof name, "lights.%s", t);
    if (field_index(name) < 0) return refuse(c, "There are no %s lights.", t);
    int on;
    if (slot_onoff(c, &on)) return -1;
    set_field(c, name, on, NULL);
    return 0;
}

static int eta_for(const char *dest) {
    unsigned h = 2166136261u;
    for (const char *p = dest; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return 5 + (int)(h % 56);
}

static void answer(apply_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void answer(apply_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (c->change_used < c->change_len)
        c->change_used += (size_t)vsnprintf(c->change + c->change_used, c->change_len - c->change_used, fmt, ap);
    va_end(ap);
}

static int do_nav(apply_ctx *c, const char *verb) {
    vehicle *v = c->v;
    if (strcmp(verb, "go") == 0) {
        KEYS("dest");
        const char *d = action_slot_value(c->a, "dest");
        if (!d) return refuse(c, "Where would you like to go?");
        set_field(c, "nav.destination", 0, d);
        set_field(c, "nav.eta_min", eta_for(d), NULL);
        return 0;
    }
    if (strcmp(verb, "eta") == 0) {
        KEYS("dest");
        int i = field_index("nav.destination");
        if (!v->text[i][0]) return refuse(c, "There is no route set.");
        answer(c, "You will reach %s in about %d minutes.", v->text[i], get_int(v, "nav.eta_min"));
        return 0;
    }
    if (strcmp(verb, "cancel") == 0) {
        KEYS("dest");
        set_field(c, "nav.destination", 0, "");
        set_field(c, "nav.eta_min", 0, NULL);
        return 0;
    }
    return refuse(c, "I can't do that with the navigation.");
}

static int do_media(apply_ctx *c, const char *verb) {
    vehicle *v = c->v;
    if (strcmp(verb, "play") == 0 || strcmp(verb, "pause") == 0) {
        KEYS("source");
        set_field(c, "media.playing", verb[1] == 'l', NULL);
        return 0;
    }
    if (strcmp(verb, "next") == 0 || strcmp(verb, "previous") == 0) {
        KEYS("source");
        int t = get_int(v, "media.track") + (verb[0] == 'n' ? 1 : -1);
        if (t < 1) t = 1;
        if (t > 99) t = 1;
        set_field(c, "media.track", t, NULL);
        set_field(c, "media.playing", 1, NULL);
        return 0;
    }
    if (strcmp(verb, "volume") == 0) {
        KEYS("level", "delta");
        int level;
        if (action_slot_value(c->a, "delta")) {
            int d;
            if (slot_int(c, "delta", -30, 30, true, 0, &d, "volume change")) return -1;
            level = get_int(v, "media.volume") + d;
            if (level < 0) level = 0;
            if (level > 30) level = 30;
        } else if (slot_int(c, "level", 0, 30, true, 0, &level, "volume")) {
            return -1;
        }
        set_field(c, "media.volume", level, NULL);
        return 0;
    }
    if (strcmp(verb, "source") == 0) {
        KEYS("source");
        const char *s = action_slot_value(c->a, "source");
        for (int i = 0; s && i < 4; i++)
            if (strcmp(s, media_sources[i]) == 0) { set_field(c, "media.source", i, NULL); return 0; }
        return refuse(c, "I can play the radio, bluetooth, usb or podcasts.");
    }
    return refuse(c, "I can't do that with the media player.");
}

static int do_phone(apply_ctx *c, const char *verb) {
    KEYS("contact");
    int i = field_index("phone.contact");
    if (strcmp(verb, "call") == 0) {
        const char *who = action_slot_value(c->a, "contact");
        if (!who) return refuse(c, "Who should I call?");
        set_field(c, "phone.contact", 0, who);
        set_field(c, "phone.in_call", 1, NULL);
        return 0;
    }
    if (strcmp(verb, "redial") == 0) {
        if (!c->v->text[i][0]) return refuse(c, "There is no one to redial yet.");
        set_field(c, "phone.in_call", 1, NULL);
        return 0;
    }
    return refuse(c, "I can call or redial.");
}

static int do_status(apply_ctx *c, const char *verb) {
    KEYS("item");
    vehicle *v = c->v;
    if (strcmp(verb, "query") != 0) return refuse(c, "I can tell you the vehicle status.");
    const char *item = action_slot_value(c->a, "item");
    if (!item) return refuse(c, "What would you like to know?");
    if (strcmp(item, "range") == 0) answer(c, "You have %d kilometres of range.", get_int(v, "status.range_km"));
    else if (strcmp(item, "tyres") == 0) answer(c, "All tyres are at %d kPa.", get_int(v, "status.tyres_kpa"));
    else if (strcmp(item, "doors") == 0) answer(c, "The doors are %s.", get_int(v, "doors.locked") ? "locked" : "unlocked");
    else if (strcmp(item, "fuel") == 0) answer(c, "The tank is %d%% full.", get_int(v, "status.fuel_pct"));
    else if (strcmp(item, "battery") == 0) answer(c, "The battery is at %d%%.", get_int(v, "status.battery_pct"));
    else if (strcmp(item, "oil") == 0) answer(c, "Oil life is at %d%%.", get_int(v, "status.oil_pct"));
    else return refuse(c, "I can't check the %s.", item);
    return 0;
}

static int do_doors(apply_ctx *c, const char *verb) {
    KEYS("state");
    if (strcmp(verb, "lock") != 0) return refuse(c, "I can lock or unlock the doors.");
    const char *s = action_slot_value(c->a, "state");
    if (!s || (strcmp(s, "locked") != 0 && strcmp(s, "unlocked") != 0)) return refuse(c, "Should I lock or unlock the doors?");
    set_field(c, "doors.locked", s[0] == 'l', NULL);
    return 0;
}

static int do_assist(apply_ctx *c, const char *verb) {
    KEYS("feature", "state");
    if (strcmp(verb, "set") != 0) return refuse(c, "I can switch driver assistance features on or off.");
    const char *f = action_slot_value(c->a, "feature");
    if (!f) return refuse(c, "Which assistance feature?");
    char name[64];
    snprintf(name, sizeof name, "assist.%s", f);
    if (field_index(name) < 0) return refuse(c, "There is no %s feature.", f);
    int on;
    if (slot_onoff(c, &on)) return -1;
    set_field(c, name, on, NULL);
    return 0;
}

static int apply_unlocked(vehicle *v, const action *a, char *change, size_t change_len, char *reason, size_t reason_len) {
    apply_ctx c = { v, a, change, change_len, 0, reason, reason_len };
    if (change_len) change[0] = 0;
    if (reason_len) reason[0] = 0;
    if (strcmp(a->intent, "none") == 0) return 0;
    char domain[48];
    const char *dot = strchr(a->intent, '.');
    if (!dot) return refuse(&c, "I can't do that.");
    snprintf(domain, sizeof domain, "%.*s", (int)(dot - a->intent), a->intent);
    const char *verb = dot + 1;
    static const struct { const char *domain; int (*fn)(apply_ctx *, const char *); } handlers[] = {
        { "climate", do_climate }, { "seat", do_seat }, { "window", do_window }, { "sunroof", do_sunroof },
        { "lights", do_lights }, { "nav", do_nav }, { "media", do_media }, { "phone", do_phone },
        { "status", do_status }, { "doors", do_doors }, { "assist", do_assist },
    };
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].domain, domain) == 0) return handlers[i].fn(&c, verb);
    return refuse(&c, "I can't do that in this car.");
}

int vehicle_apply(vehicle *v, const action *a, char *change, size_t change_len, char *reason, size_t reason_len) {
    pthread_mutex_lock(&car_mu);
    int rc = apply_unlocked(v, a, change, change_len, reason, reason_len);
    pthread_mutex_unlock(&car_mu);
    return rc;
}

int vehicle_check(const vehicle *v, const action *a, char *reason, size_t reason_len) {
    pthread_mutex_lock(&car_mu);
    vehicle scratch = *v;   // plain values: a copy is the whole state
    pthread_mutex_unlock(&car_mu);
    char change[512];
    return apply_unlocked(&scratch, a, change, sizeof change, reason, reason_len);
}
