// The precision governor's reports: its state line, its log, the trace as JSON and as SVG
// charts, and its `expect` metrics (see govern.h).
#include "app/govern.h"
#include "engine/json_text.h"
#include "app/govern_run.h"
#include "app/plot.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gov_run_status(const gov_run *r, char *buf, size_t n) {
    const governor *g = &r->g;
    char tgt[64], kl[32] = "not measured";
    gov_target_str(&g->target, tgt, sizeof tgt);
    if (g->kl >= 0) snprintf(kl, sizeof kl, "%.3g", g->kl);
    char reading[64] = "no reading yet";
    if (r->have_reading) {
        if (g->target.metric == GOV_WATTS) snprintf(reading, sizeof reading, "%.2f W", r->last.watts);
        else if (g->target.metric == GOV_JPT) snprintf(reading, sizeof reading, "%.4f J/token", r->last.j_per_token);
        else snprintf(reading, sizeof reading, "%.2f tok/s", r->last.tps);
    }
    snprintf(buf, n, "governor %s: %d/%d at %s%s, %.1f MiB/token, %s, KL %s, %d changes, %d rollbacks", tgt, g->pos,
             g->ladder.n, wtype_name(g->knobs.low_type), g->pending ? " (switching)" : "",
             mib(gov_ladder_bytes(&g->ladder, g->pos)), reading, kl, g->changes, g->rollbacks);
}

// "token 150: lower 0 -> 46, 2357.0 -> 1585.1 MiB/token: REASON [blk.9.attn_v, ... +42]": the
// tensors a change moved, the first four named.
static void change_line(const gov_run *r, const gov_decision *d, char *buf, size_t n) {
    int w = snprintf(buf, n, "token %ld: %s %d -> %d, %.1f -> %.1f MiB/token: %s [", d->token, gov_action_name(d->action),
                     d->from, d->to, mib(d->bytes_from), mib(d->bytes_to), d->reason);
    int lo = d->from < d->to ? d->from : d->to, hi = d->from < d->to ? d->to : d->from;
    for (int k = lo; k < hi && k < lo + 4 && w > 0 && (size_t)w < n; k++)
        w += snprintf(buf + w, n - (size_t)w, "%sblk.%d.%s", k > lo ? ", " : "", r->g.ladder.t[k].layer,
                      tensor_kind_name(r->g.ladder.t[k].kind));
    if (w > 0 && (size_t)w < n) snprintf(buf + w, n - (size_t)w, hi - lo > 4 ? " +%d]" : "]", hi - lo - 4);
}

void gov_run_last_change(const gov_run *r, char *buf, size_t n) {
    buf[0] = 0;
    if (r->g.n_log) change_line(r, &r->g.log[r->g.n_log - 1], buf, n);
}

void gov_run_print_log(const gov_run *r, gov_say_fn say_fn, void *ud) {
    char line[640];
    if (r->g.n_log == 0) { say_fn(ud, "governor: no change yet"); return; }
    for (int i = 0; i < r->g.n_log; i++) {
        change_line(r, &r->g.log[i], line, sizeof line);
        say_fn(ud, line);
    }
}

static cJSON *num_or_null(double v) { return v >= 0 && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

int gov_run_save_json(const gov_run *r, const char *path, errbuf *err) {
    const governor *g = &r->g;
    cJSON *root = cJSON_CreateObject();
    char tgt[64];
    gov_target_str(&g->target, tgt, sizeof tgt);
    cJSON_AddStringToObject(root, "target", tgt);
    cJSON_AddStringToObject(root, "metric", gov_metric_name(g->target.metric));
    cJSON_AddNumberToObject(root, "value", g->target.value);
    cJSON_AddItemToObject(root, "kl_max", num_or_null(g->target.kl_max));
    cJSON_AddStringToObject(root, "source", r->source_name);
    cJSON_AddStringToObject(root, "low_type", wtype_name(g->knobs.low_type));
    cJSON_AddNumberToObject(root, "every", g->knobs.every);
    cJSON_AddNumberToObject(root, "window", g->knobs.window);
    cJSON_AddNumberToObject(root, "band", g->knobs.band);
    cJSON_AddNumberToObject(root, "tensors", g->ladder.n);
    cJSON_AddNumberToObject(root, "bytes_source", (double)gov_ladder_bytes(&g->ladder, 0));
    cJSON_AddNumberToObject(root, "bytes_bottom", (double)gov_ladder_bytes(&g->ladder, g->ladder.n));
    cJSON *rows = cJSON_AddArrayToObject(root, "readings");   // [token, tok_ms, tps, watts, jpt, kl, pos, bytes]
    for (long i = 0; i < r->n_trace; i++) {
        const trace_row *t = &r->trace[i];
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)t->token));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(t->tok_ms));
        cJSON_AddItemToArray(a, num_or_null(t->tps));
        cJSON_AddItemToArray(a, num_or_null(t->watts));
        cJSON_AddItemToArray(a, num_or_null(t->jpt));
        cJSON_AddItemToArray(a, num_or_null(t->kl));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(t->pos));
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)gov_ladder_bytes(&g->ladder, t->pos)));
        cJSON_AddItemToArray(rows, a);
    }
    cJSON *decs = cJSON_AddArrayToObject(root, "decisions");
    for (int i = 0; i < g->n_log; i++) {
        const gov_decision *d = &g->log[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "token", (double)d->token);
        cJSON_AddStringToObject(o, "action", gov_action_name(d->action));
        cJSON_AddNumberToObject(o, "from", d->from);
        cJSON_AddNumberToObject(o, "to", d->to);
        cJSON_AddNumberToObject(o, "bytes_from", (double)d->bytes_from);
        cJSON_AddNumberToObject(o, "bytes_to", (double)d->bytes_to);
        cJSON_AddItemToObject(o, "tps", num_or_null(d->r.tps));
        cJSON_AddItemToObject(o, "watts", num_or_null(d->r.watts));
        cJSON_AddItemToObject(o, "j_per_token", num_or_null(d->r.j_per_token));
        cJSON_AddItemToObject(o, "kl", num_or_null(d->kl));
        cJSON_AddItemToObject(o, "cpu_mhz", d->r.cpu_mhz > 0 ? cJSON_CreateNumber(d->r.cpu_mhz) : cJSON_CreateNull());
        cJSON_AddBoolToObject(o, "throttled", d->r.throttled);
        cJSON_AddItemToObject(o, "on_battery", d->r.on_battery < 0 ? cJSON_CreateNull() : cJSON_CreateBool(d->r.on_battery));
        cJSON_AddStringToObject(o, "reason", d->reason);
        cJSON *ts = cJSON_AddArrayToObject(o, "tensors");   // the tensors it moved
        int lo = d->from < d->to ? d->from : d->to, hi = d->from < d->to ? d->to : d->from;
        for (int k = lo; k < hi && k < g->ladder.n; k++) {
            char name[48];
            snprintf(name, sizeof name, "blk.%d.%s", g->ladder.t[k].layer, tensor_kind_name(g->ladder.t[k].kind));
            cJSON_AddItemToArray(ts, cJSON_CreateString(name));
        }
        cJSON_AddItemToArray(decs, o);
    }
    cJSON *dr = cJSON_AddArrayToObject(root, "drift_checks");
    for (int i = 0; i < r->n_drift; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "token", (double)r->drifts[i].token);
        cJSON_AddNumberToObject(o, "kl", r->drifts[i].kl);
        cJSON_AddNumberToObject(o, "top1", r->drifts[i].top1);
        cJSON_AddNumberToObject(o, "tokens_scored", r->drifts[i].n);
        cJSON_AddNumberToObject(o, "position", r->drifts[i].pos);
        cJSON_AddNumberToObject(o, "ms", r->drifts[i].ms);
        cJSON_AddItemToArray(dr, o);
    }
    char *text = json_text(root, false);
    int rc = afile_write_all(path, text, strlen(text), err);
    free(text);
    return rc;
}

const char *const gov_run_metric_names[] = { "gov_changes", "gov_rollbacks", "gov_lowered", "gov_kl", "gov_tps",
                                             "gov_mib_per_token", NULL };

int gov_run_metric(const gov_run *r, const char *name, double *out) {
    const governor *g = &r->g;
    if (!strcmp(name, "gov_changes")) *out = g->changes;
    else if (!strcmp(name, "gov_rollbacks")) *out = g->rollbacks;
    else if (!strcmp(name, "gov_lowered")) *out = g->pos;
    else if (!strcmp(name, "gov_kl")) *out = g->kl;
    else if (!strcmp(name, "gov_tps")) *out = r->have_reading ? r->last.tps : 0;
    else if (!strcmp(name, "gov_mib_per_token")) *out = mib(gov_ladder_bytes(&g->ladder, g->pos));
    else return -1;
    return 0;
}

// PATH with its .svg replaced by SUFFIX.svg ("trace.svg" -> "trace-kl.svg").
static void sibling(const char *path, const char *suffix, char *out, size_t n) {
    size_t l = strlen(path);
    if (l > 4 && strcmp(path + l - 4, ".svg") == 0) l -= 4;
    snprintf(out, n, "%.*s%s.svg", (int)l, path, suffix);
}

int gov_run_plot(const gov_run *r, const char *path, char *kl_path, size_t kl_n, errbuf *err) {
    const governor *g = &r->g;
    long n = r->n_trace;
    if (n == 0) return err_set(err, "%s: no reading yet to plot", path);
    double *x = xmalloc((size_t)n * sizeof *x), *y = xmalloc((size_t)n * sizeof *y), *b = xmalloc((size_t)n * sizeof *b);
    int metric = g->target.metric;
    for (long i = 0; i < n; i++) {
        const trace_row *t = &r->trace[i];
        double v = metric == GOV_WATTS ? t->watts : metric == GOV_JPT ? t->jpt : t->tps;
        x[i] = (double)t->token;
        y[i] = v >= 0 ? v : NAN;   // no reading yet: a gap
        b[i] = mib(gov_ladder_bytes(&g->ladder, t->pos));
    }
    const char *what = metric == GOV_WATTS ? "watts" : metric == GOV_JPT ? "J/token" : "decode tok/s";
    char title[160], target[64];
    gov_target_str(&g->target, target, sizeof target);
    snprintf(title, sizeof title, "governor %s: reading over the last %d tokens, and weights read per token",
             target, g->knobs.window);
    plot_opts o = plot_opts_default();
    o.title = title;
    o.xlabel = "tokens";
    o.ylabel_left = what;
    o.ylabel_right = "MiB per token";
    o.hline_left = metric == GOV_KL_ONLY ? NAN : g->target.value;
    o.hline_label = "target";
    plot_series s[2] = { { what, x, y, (int)n, 0, false }, { "MiB per token (the plan in force)", x, b, (int)n, 1, true } };
    int rc = plot_svg_lines(path, &o, s, 2, err);
    free(y);
    free(b);
    free(x);
    if (rc || !kl_path) return rc;
    // the drift checks: KL against the source and top-1 agreement
    sibling(path, "-kl", kl_path, kl_n);
    int m = r->n_drift;
    if (m == 0) { kl_path[0] = 0; return 0; }
    double *dx = xmalloc((size_t)m * sizeof *dx), *kl = xmalloc((size_t)m * sizeof *kl), *t1 = xmalloc((size_t)m * sizeof *t1);
    for (int i = 0; i < m; i++) {
        dx[i] = (double)r->drifts[i].token;
        kl[i] = r->drifts[i].kl;
        t1[i] = 100.0 * r->drifts[i].top1;
    }
    snprintf(title, sizeof title, "governor %s: drift checks against the source (%d tokens each)", target, g->knobs.drift_window);
    o.title = title;
    o.ylabel_left = "KL (nats per token)";
    o.ylabel_right = "top-1 agreement %";
    o.hline_left = g->target.kl_max >= 0 ? g->target.kl_max : NAN;
    o.hline_label = "kl bound";
    plot_series ks[2] = { { "KL", dx, kl, m, 0, false }, { "top-1 %", dx, t1, m, 1, false } };
    rc = plot_svg_lines(kl_path, &o, ks, 2, err);
    free(dx);
    free(kl);
    free(t1);
    return rc;
}
