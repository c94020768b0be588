// The precision governor's decisions (see governor.h).
#include "app/governor.h"
#include "engine/wtype.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gov_metric_name(int metric) {
    static const char *const names[] = { "kl", "tps", "watts", "j_per_token" };
    return metric >= 0 && metric <= GOV_JPT ? names[metric] : "?";
}

const char *gov_action_name(int action) {
    static const char *const names[] = { "hold", "lower", "raise", "rollback" };
    return action >= 0 && action <= GOV_ROLLBACK ? names[action] : "?";
}

gov_knobs gov_knobs_default(void) {
    return (gov_knobs){ .every = 16, .window = 8, .band = 0.15, .freeze = 128, .drift_every = 0,
                        .drift_window = 16, .retry_after = 512, .low_type = WT_Q4_0, .drift = true };
}

// ---- parsing ----

static int parse_number(const char *word, const char *text, double lo, double *out, errbuf *err) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < lo)
        return err_set(err, "governor: '%s': '%s' is not a number >= %g", word, text, lo);
    *out = v;
    return 0;
}

static int parse_count(const char *word, const char *text, int lo, int *out, errbuf *err) {
    double v;
    if (parse_number(word, text, lo, &v, err)) return -1;
    if (v != floor(v) || v > 1e6) return err_set(err, "governor: '%s': '%s' is not a whole number up to 1000000", word, text);
    *out = (int)v;
    return 0;
}

static int parse_count_max(const char *word, const char *text, int lo, int hi, int *out, errbuf *err) {
    if (parse_count(word, text, lo, out, err)) return -1;
    if (*out > hi) return err_set(err, "governor: '%s': at most %d", word, hi);
    return 0;
}

// One "name OP value" target word; 1 if it is one, 0 if not, -1 on error.
static int parse_target_word(const char *w, gov_target *t, bool *have_metric, errbuf *err) {
    static const struct { const char *name, *op; int metric; } forms[] = {
        { "tps", ">=", GOV_TPS }, { "watts", "<=", GOV_WATTS }, { "j_per_token", "<=", GOV_JPT },
        { "kl", "<=", GOV_KL_ONLY },
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        size_t n = strlen(forms[i].name);
        if (strncmp(w, forms[i].name, n) != 0 || (w[n] != '<' && w[n] != '>' && w[n] != '=')) continue;
        if (strncmp(w + n, forms[i].op, 2) != 0)
            return err_set(err, "governor: '%s': %s takes %s (%s%sN)", w, forms[i].name, forms[i].op,
                           forms[i].name, forms[i].op);
        double v;
        if (parse_number(w, w + n + 2, 0, &v, err)) return -1;
        if (forms[i].metric == GOV_KL_ONLY) { t->kl_max = v; return 1; }
        if (*have_metric) return err_set(err, "governor: '%s': one of tps>=, watts<=, j_per_token<= at a time", w);
        if (v <= 0) return err_set(err, "governor: '%s': the target must be above 0", w);
        *have_metric = true;
        t->metric = forms[i].metric;
        t->value = v;
        return 1;
    }
    return 0;
}

// One "knob=value" word; 1 if it is one, 0 if not, -1 on error.
static int parse_knob_word(const char *w, gov_knobs *k, errbuf *err) {
    const char *eq = strchr(w, '=');
    if (!eq || eq == w) return 0;
    char name[32];
    size_t n = (size_t)(eq - w);
    if (n >= sizeof name) return 0;
    memcpy(name, w, n);
    name[n] = 0;
    const char *v = eq + 1;
    if (!strcmp(name, "every")) return parse_count(w, v, 1, &k->every, err) ? -1 : 1;
    if (!strcmp(name, "window")) return parse_count_max(w, v, 1, GOV_MAX_WINDOW, &k->window, err) ? -1 : 1;
    if (!strcmp(name, "freeze")) return parse_count(w, v, 0, &k->freeze, err) ? -1 : 1;
    if (!strcmp(name, "drift_every")) return parse_count(w, v, 1, &k->drift_every, err) ? -1 : 1;
    if (!strcmp(name, "drift_window")) return parse_count_max(w, v, 1, GOV_MAX_WINDOW, &k->drift_window, err) ? -1 : 1;
    if (!strcmp(name, "retry_after")) return parse_count(w, v, 0, &k->retry_after, err) ? -1 : 1;
    if (!strcmp(name, "band")) {
        if (parse_number(w, v, 0, &k->band, err)) return -1;
        if (k->band >= 1) return err_set(err, "governor: '%s': band is a fraction below 1", w);
        return 1;
    }
    if (!strcmp(name, "low")) {
        int t = wtype_from_name(v);
        const wtype_info *wi = t >= 0 ? wtype_get((uint32_t)t) : NULL;
        if (!wi || !wi->from_f32 || t == WT_F32)
            return err_set(err, "governor: '%s': not a type to lower to (q4_0, q8_0, bf16, f16)", w);
        k->low_type = (uint32_t)t;
        return 1;
    }
    if (!strcmp(name, "drift")) {
        if (!strcmp(v, "on")) k->drift = true;
        else if (!strcmp(v, "off")) k->drift = false;
        else return err_set(err, "governor: '%s': drift is on or off", w);
        return 1;
    }
    return 0;
}

int gov_parse(const char *spec, gov_target *t, gov_knobs *k, errbuf *err) {
    *t = (gov_target){ .metric = GOV_KL_ONLY, .value = 0, .kl_max = -1 };
    *k = gov_knobs_default();
    bool have_metric = false;
    char word[128];
    const char *p = spec;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        size_t n = strcspn(p, " \t,");
        if (n >= sizeof word) return err_set(err, "governor: '%.40s...' is too long", p);
        memcpy(word, p, n);
        word[n] = 0;
        p += n;
        int r = parse_target_word(word, t, &have_metric, err);
        if (r == 0) r = parse_knob_word(word, k, err);
        if (r < 0) return -1;
        if (r == 0)
            return err_set(err, "governor: '%s' is not a target (tps>=N, watts<=W, j_per_token<=J, kl<=K) "
                           "nor a knob (every=, window=, band=, freeze=, drift_every=, drift_window=, "
                           "retry_after=, low=, drift=)", word);
    }
    if (!have_metric && t->kl_max < 0)
        return err_set(err, "governor: needs a target: tps>=N, watts<=W, j_per_token<=J or kl<=K");
    if (!have_metric && !k->drift) return err_set(err, "governor: a kl<= target alone needs drift=on");
    if (k->drift_every <= 0) k->drift_every = 2 * k->every;
    if (k->window > k->every) k->window = k->every;
    return 0;
}

void gov_target_str(const gov_target *t, char *buf, size_t n) {
    int w = 0;
    buf[0] = 0;
    if (t->metric == GOV_TPS) w = snprintf(buf, n, "tps>=%.10g", t->value);
    else if (t->metric == GOV_WATTS) w = snprintf(buf, n, "watts<=%.10g", t->value);
    else if (t->metric == GOV_JPT) w = snprintf(buf, n, "j_per_token<=%.10g", t->value);
    if (t->kl_max >= 0 && w >= 0 && (size_t)w < n) snprintf(buf + w, n - (size_t)w, "%skl<=%.10g", w ? " " : "", t->kl_max);
}

// ---- the ladder ----

static double per_byte(const gov_tensor *t) {
    uint64_t saved = t->bytes_high > t->bytes_low ? t->bytes_high - t->bytes_low : 0;
    return saved ? t->sens / (double)saved : INFINITY;
}

static int cmp_tensor(const void *a, const void *b) {
    const gov_tensor *x = a, *y = b;
    double px = per_byte(x), py = per_byte(y);
    if (px != py) return px < py ? -1 : 1;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return x->kind < y->kind ? -1 : x->kind > y->kind;
}

void gov_ladder_sort(gov_ladder *l) { qsort(l->t, (size_t)l->n, sizeof *l->t, cmp_tensor); }

uint64_t gov_ladder_bytes(const gov_ladder *l, int k) {
    uint64_t b = l->bytes_fixed;
    for (int i = 0; i < l->n; i++) b += i < k ? l->t[i].bytes_low : l->t[i].bytes_high;
    return b;
}

void gov_ladder_free(gov_ladder *l) {
    free(l->t);
    l->t = NULL;
    l->n = 0;
}

// ---- decisions ----

void gov_init(governor *g, const gov_target *t, const gov_knobs *k, gov_ladder *ladder) {
    memset(g, 0, sizeof *g);
    g->target = *t;
    g->knobs = *k;
    if (g->knobs.drift_every <= 0) g->knobs.drift_every = 2 * g->knobs.every;
    g->ladder = *ladder;
    memset(ladder, 0, sizeof *ladder);
    g->settled_at = 0;
    g->last_change = LONG_MIN / 2;
    g->last_action = GOV_HOLD;
    g->freeze_len = g->knobs.freeze;
    g->block_pos = INT_MAX;
    g->kl = -1;
    g->top1 = -1;
    g->alpha = 1.0;
}

void gov_free(governor *g) {
    gov_ladder_free(&g->ladder);
    free(g->log);
    g->log = NULL;
}

static void log_decision(governor *g, const gov_decision *d) {
    if (g->n_log == g->cap_log) {
        g->cap_log = g->cap_log ? g->cap_log * 2 : 32;
        g->log = xrealloc(g->log, (size_t)g->cap_log * sizeof *g->log);
    }
    g->log[g->n_log++] = *d;
}

// The metric a change can scale (tok/s or J/token), or 0.
static double scaled_metric(const governor *g, const gov_reading *r) {
    if (g->target.metric == GOV_TPS) return r->tps > 0 ? r->tps : 0;
    if (g->target.metric == GOV_JPT) return r->j_per_token > 0 ? r->j_per_token : 0;
    return 0;
}

static void decide(governor *g, gov_decision *d, int action, int to) {
    g->metric_before = scaled_metric(g, &d->r);
    g->bytes_before = d->bytes_from;
    d->action = action;
    d->to = to;
    d->bytes_to = gov_ladder_bytes(&g->ladder, to);
    g->pos = to;
    g->pending = true;
    g->last_change = d->token;
    g->last_action = action;
    g->changes++;
    if (action == GOV_ROLLBACK) g->rollbacks++;
    log_decision(g, d);
}

// The first reading after a change lands: how far the metric moved for the bytes it moved
// gives the exponent. Small steps say little against the noise; the estimate is halved with
// the old one and kept within [0.2, 1.5].
static void learn(governor *g, const gov_reading *r) {
    double now = scaled_metric(g, r);
    uint64_t bytes = gov_ladder_bytes(&g->ladder, g->pos);
    if (g->metric_before > 0 && now > 0 && g->bytes_before && bytes != g->bytes_before) {
        double lb = log((double)g->bytes_before / (double)bytes);
        double lm = log(now / g->metric_before) * (g->target.metric == GOV_JPT ? -1 : 1);
        if (fabs(lb) > 0.05) {
            double a = lm / lb;
            a = a < 0.2 ? 0.2 : a > 1.5 ? 1.5 : a;
            g->alpha = 0.5 * (g->alpha + a);
        }
    }
    g->metric_before = 0;
}

// Where the metric stands: -1 the target is missed, +1 it is beaten by more than the band,
// 0 in between (or unknown). *ratio: how far bytes per token may change (new/now) to land in
// the middle of the band; 0 when the metric does not scale with bytes (watts, kl).
static int standing(const governor *g, const gov_reading *r, double *ratio, char *what, size_t n) {
    const gov_target *t = &g->target;
    double band = g->knobs.band;
    *ratio = 0;
    switch (t->metric) {
    case GOV_TPS:
        if (!(r->tps > 0)) { snprintf(what, n, "no tok/s reading"); return 0; }
        *ratio = pow(r->tps / (t->value * (1 + band / 2)), 1.0 / g->alpha);
        snprintf(what, n, "%.2f tok/s %s %.10g", r->tps, r->tps < t->value ? "<" : ">=", t->value);
        return r->tps < t->value ? -1 : r->tps > t->value * (1 + band) ? 1 : 0;
    case GOV_JPT:
        if (!(r->j_per_token > 0)) { snprintf(what, n, "no J/token reading"); return 0; }
        *ratio = pow(t->value * (1 - band / 2) / r->j_per_token, 1.0 / g->alpha);
        snprintf(what, n, "%.4f J/token %s %.10g", r->j_per_token, r->j_per_token > t->value ? ">" : "<=", t->value);
        return r->j_per_token > t->value ? -1 : r->j_per_token < t->value * (1 - band) ? 1 : 0;
    case GOV_WATTS:
        if (!(r->watts >= 0)) { snprintf(what, n, "no power reading"); return 0; }
        snprintf(what, n, "%.2f W %s %.10g", r->watts, r->watts > t->value ? ">" : "<=", t->value);
        return r->watts > t->value ? -1 : r->watts < t->value * (1 - band) ? 1 : 0;
    default:
        if (g->kl >= 0) snprintf(what, n, "KL %.3g <= %g", g->kl, t->kl_max);
        else snprintf(what, n, "kl<=%g", t->kl_max);
        return -1;   // kl alone: go down while the bound holds
    }
}

// What the machine said beside the metric: "" or " (CPU throttled, on battery)".
static void machine_note(const gov_reading *r, char *buf, size_t n) {
    buf[0] = 0;
    if (r->throttled || r->on_battery == 1)
        snprintf(buf, n, " (%s%s%s)", r->throttled ? "CPU throttled" : "", r->throttled && r->on_battery == 1 ? ", " : "",
                 r->on_battery == 1 ? "on battery" : "");
}

int gov_step(governor *g, const gov_reading *r, gov_decision *d) {
    memset(d, 0, sizeof *d);
    d->token = r->token;
    d->action = GOV_HOLD;
    d->from = d->to = g->pos;
    d->bytes_from = d->bytes_to = gov_ladder_bytes(&g->ladder, g->pos);
    d->r = *r;
    d->kl = g->kl;
    d->top1 = g->top1;
    const gov_knobs *k = &g->knobs;
    if (g->pending) { snprintf(d->reason, sizeof d->reason, "a switch is in progress"); return GOV_HOLD; }
    if (r->token - g->settled_at < k->window) { snprintf(d->reason, sizeof d->reason, "settling"); return GOV_HOLD; }
    if (r->token - g->last_change < k->every) { snprintf(d->reason, sizeof d->reason, "waiting"); return GOV_HOLD; }
    learn(g, r);
    char what[128], note[48];
    double ratio;
    int st = standing(g, r, &ratio, what, 80);
    machine_note(r, note, sizeof note);
    strcat(what, note);
    uint64_t bytes = d->bytes_from;
    uint64_t span = gov_ladder_bytes(&g->ladder, 0) - gov_ladder_bytes(&g->ladder, g->ladder.n);
    uint64_t step = span / 8 ? span / 8 : 1;
    int n = g->ladder.n;
    if (st < 0) {
        if (g->pos >= n) {
            snprintf(d->reason, sizeof d->reason, "%s; at the bottom of the ladder (all %d at %s)", what, n,
                     wtype_name(k->low_type));
            return GOV_HOLD;
        }
        if (g->target.kl_max >= 0 && k->drift && g->pos > 0 && !g->checked) {
            snprintf(d->reason, sizeof d->reason, "%s; waiting for a drift check before going further down", what);
            return GOV_HOLD;
        }
        double goal = ratio > 0 ? (double)bytes * ratio : (double)(bytes > step ? bytes - step : 0);
        int to = g->pos + 1;
        while (to < n && (double)gov_ladder_bytes(&g->ladder, to) > goal) to++;
        bool blocked = r->token < g->block_until && to >= g->block_pos;
        if (blocked) to = g->block_pos - 1;
        if (to <= g->pos) {
            snprintf(d->reason, sizeof d->reason, "%s; held: KL bound rolled back, retry at token %ld", what, g->block_until);
            return GOV_HOLD;
        }
        if (g->last_action == GOV_RAISE) {   // the last raise did not hold: freeze raising
            g->freeze_until = r->token + g->freeze_len;
            g->freeze_len = g->freeze_len > INT_MAX / 2 ? INT_MAX : g->freeze_len * 2;
        }
        snprintf(d->reason, sizeof d->reason, "%s; %d more tensors to %s%s", what, to - g->pos,
                 wtype_name(k->low_type), blocked ? " (up to the rolled-back part)" : "");
        decide(g, d, GOV_LOWER, to);
        return GOV_LOWER;
    }
    if (st > 0) {
        if (g->pos == 0) { snprintf(d->reason, sizeof d->reason, "%s; at the source precision", what); return GOV_HOLD; }
        if (r->token < g->freeze_until) {
            snprintf(d->reason, sizeof d->reason, "%s; raising frozen until token %ld", what, g->freeze_until);
            return GOV_HOLD;
        }
        double allow = ratio > 0 ? (double)bytes * ratio : (double)(bytes + step);
        int to = g->pos;
        while (to > 0 && (double)gov_ladder_bytes(&g->ladder, to - 1) <= allow) to--;
        if (to == g->pos) { snprintf(d->reason, sizeof d->reason, "%s; too little headroom to raise one tensor", what); return GOV_HOLD; }
        snprintf(d->reason, sizeof d->reason, "%s; headroom: %d tensors back to the source", what, g->pos - to);
        decide(g, d, GOV_RAISE, to);
        return GOV_RAISE;
    }
    snprintf(d->reason, sizeof d->reason, "%s; within the band", what);
    return GOV_HOLD;
}

int gov_drift(governor *g, long token, double kl, double top1, gov_decision *d) {
    memset(d, 0, sizeof *d);
    g->kl = kl;
    g->top1 = top1;
    g->drift_checks++;
    if (!g->pending) g->checked = true;
    d->token = token;
    d->action = GOV_HOLD;
    d->from = d->to = g->pos;
    d->bytes_from = d->bytes_to = gov_ladder_bytes(&g->ladder, g->pos);
    d->kl = kl;
    d->top1 = top1;
    d->r.token = token;
    if (g->target.kl_max < 0 || kl <= g->target.kl_max || g->pos == 0 || g->pending) {
        snprintf(d->reason, sizeof d->reason, "KL %.3g%s", kl, g->target.kl_max >= 0 && kl > g->target.kl_max ? " (above the bound)" : "");
        return GOV_HOLD;
    }
    // Back before the last lowering; and, KL being about additive over the lowered tensors,
    // no further than where the heat map says the bound holds.
    double sum = 0;
    for (int i = 0; i < g->pos; i++) sum += g->ladder.t[i].sens;
    double keep = sum > 0 ? sum * g->target.kl_max / kl : 0;
    int est = 0;
    for (double acc = 0; est < g->pos && acc + g->ladder.t[est].sens <= keep; est++) acc += g->ladder.t[est].sens;
    int to = est;
    if (g->last_action == GOV_LOWER && g->n_log > 0) {
        int before = g->log[g->n_log - 1].from;
        if (before < to) to = before;
    }
    if (to >= g->pos) to = g->pos - 1;
    g->block_pos = to + 1;
    g->block_until = token + g->knobs.retry_after;
    snprintf(d->reason, sizeof d->reason, "KL %.3g > %g: %d tensors back; no lowering past %d before token %ld",
             kl, g->target.kl_max, g->pos - to, to, g->block_until);
    decide(g, d, GOV_ROLLBACK, to);
    return GOV_ROLLBACK;
}

void gov_applied(governor *g, long token) {
    if (!g->pending) return;
    g->pending = false;
    g->settled_at = token;
    g->checked = false;
}

void gov_failed(governor *g) {
    if (!g->pending || g->n_log == 0) return;
    gov_decision *d = &g->log[g->n_log - 1];
    g->pending = false;
    g->pos = d->from;
    size_t n = strlen(d->reason);
    if (n + 16 < sizeof d->reason) memcpy(d->reason + n, " (switch failed)", 17);
}

int gov_plan(const governor *g, const precision_plan *source, int n_layer, int k, precision_plan *out,
             errbuf *err) {
    size_t nc = (size_t)n_layer * TK_LAYER_KINDS;
    uint32_t *want = xmalloc(nc * sizeof *want);
    for (int l = 0; l < n_layer; l++)
        for (int kd = 0; kd < TK_LAYER_KINDS; kd++) want[(size_t)l * TK_LAYER_KINDS + kd] = plan_type_for(source, l, kd);
    for (int i = 0; i < k && i < g->ladder.n; i++) {
        const gov_tensor *t = &g->ladder.t[i];
        if (t->layer >= 0 && t->layer < n_layer) want[(size_t)t->layer * TK_LAYER_KINDS + (size_t)t->kind] = g->knobs.low_type;
    }
    int rc = plan_from_cell_types(out, source, want, n_layer, err);
    free(want);
    return rc;
}
