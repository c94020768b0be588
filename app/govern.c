// The precision governor on a running session (see govern.h).
#include "app/govern.h"
#include "app/govern_run.h"
#include "app/eval_text.h"
#include "app/heat_cache.h"
#include "app/heatmap.h"
#include "engine/hwstate.h"
#include "engine/model.h"
#include "engine/quality.h"
#include "engine/wtype.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEAT_TOKENS 64            // the heat map's text when the loop measures one
#define FEED_CHUNK 64             // tokens per shadow pass (rows of logits held at once)

static void say(gov_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(gov_run *r, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!r->say) return;
    if (r->in_turn) {
        strbuf_append(&r->held, line, strlen(line));
        strbuf_append(&r->held, "\n", 1);
    } else {
        r->say(r->ud, line);
    }
}


// ---- the ladder and its order ----

static bool heat_progress(void *ud, int done, int total, int layer, int kind, const sens_cell *c) {
    (void)layer; (void)kind; (void)c;
    gov_run *r = ud;
    if (done > 0 && (done * 4 / total != (done - 1) * 4 / total || done == total))
        say(r, "governor: sensitivity order %d/%d tensors", done, total);
    return true;
}


// The heat map at the low type: the app's, the cached one, or measured now on the shadow.
static int find_heat(gov_run *r, const session_opts *o, const sensitivity_map *app_heat, sensitivity_map *own,
                     const sensitivity_map **out, errbuf *err) {
    uint32_t type = r->g.knobs.low_type;
    if (app_heat && app_heat->type == type && app_heat->n_layer == r->n_layer) {
        bool complete = true;
        for (int i = 0; i < r->n_layer * TK_LAYER_KINDS; i++) complete = complete && app_heat->cells[i].done;
        if (complete) { *out = app_heat; return 0; }
    }
    if (!r->shadow) return err_set(err, "governor: no sensitivity map at %s and no shadow session to measure one", wtype_name(type));
    const char *what = NULL;
    bool prose = false;
    char *text = eval_default_text(r->shadow, o->template_name, &what, &prose, err);
    if (!text) return err_prefix(err, "governor: sensitivity text");
    heat_cache_entry ce;
    errbuf e = { { 0 } };
    bool cached = heat_cache_find(&ce, o->model_path, type, text, HEAT_TOKENS, HEAT_TOKENS, &e) == 0;
    if (cached && ce.path[0] && access(ce.path, F_OK) == 0) {
        if (heat_cache_load(&ce, own, r->n_layer, type, &e) == 0) {
            say(r, "governor: sensitivity order from %s", ce.path);
            free(text);
            *out = own;
            return 0;
        }
        say(r, "governor: not using the cached order: %s", e.msg);
    }
    say(r, "governor: measuring the sensitivity order once for this model (%d tensors at %s, %d tokens of %s)",
        r->n_layer * TK_LAYER_KINDS, wtype_name(type), HEAT_TOKENS, what ? what : "text");
    heatmap_opts ho = { .type = type, .max_tokens = HEAT_TOKENS, .ctx = HEAT_TOKENS, .ctx_fits_text = true,
                        .max_windows = 1, .progress = heat_progress, .ud = r };
    int rc = heatmap_measure(r->shadow, text, &ho, own, err);
    free(text);
    if (rc) return err_prefix(err, "governor: sensitivity");
    if (cached && ce.path[0]) {
        if (heat_cache_save(&ce, own, &e) == 0) say(r, "governor: sensitivity order cached in %s", ce.path);
        else say(r, "governor: could not cache the sensitivity order: %s", e.msg);
    }
    *out = own;
    return 0;
}

static int build_ladder(gov_run *r, session *s, const sensitivity_map *heat, gov_ladder *l, errbuf *err) {
    model *m = (model *)session_model(s);
    uint32_t low = r->g.knobs.low_type;
    memset(l, 0, sizeof *l);
    l->t = xcalloc((size_t)r->n_layer * TK_LAYER_KINDS, sizeof *l->t);
    for (int layer = 0; layer < r->n_layer; layer++)
        for (int kind = 0; kind < TK_LAYER_KINDS; kind++) {
            tensor *t = model_tensor_by_kind(m, layer, kind);
            if (!t || !t->src_data) continue;
            uint64_t hi = wtype_row_bytes(t->type, (uint64_t)t->ne0) * (uint64_t)t->ne1;
            uint64_t lo = wtype_row_bytes(low, (uint64_t)t->ne0) * (uint64_t)t->ne1;
            if (!lo || lo >= hi) continue;   // already at or below the low type, or rows it cannot hold
            l->t[l->n++] = (gov_tensor){ .layer = layer, .kind = kind, .bytes_high = hi, .bytes_low = lo,
                                         .sens = sens_at(heat, layer, kind)->kl_mean };
        }
    tensor *out = model_tensor_by_kind(m, 0, TK_OUTPUT);
    if (out && out->src_data) l->bytes_fixed = wtype_row_bytes(out->type, (uint64_t)out->ne0) * (uint64_t)out->ne1;
    if (l->n == 0) {
        gov_ladder_free(l);
        return err_set(err, "governor: no layer matrix is above %s here: nothing to lower", wtype_name(low));
    }
    gov_ladder_sort(l);
    return 0;
}

// ---- start and stop ----

static void free_caps(gov_run *r) {
    if (!r->caps) return;
    for (int i = 0; i < r->g.knobs.drift_window; i++) free(r->caps[i].logits);
    free(r->caps);
    r->caps = NULL;
}

static void say_held(gov_run *r);

void gov_run_free(gov_run *r) {
    if (!r) return;
    r->in_turn = false;
    say_held(r);   // stopped mid-reply: what it did is still said
    session_close(r->shadow);
    power_monitor_close(r->pm);
    free_caps(r);
    free(r->lsm_a);
    free(r->lsm_b);
    free(r->rows);
    free(r->ring_ms);
    free(r->ring_j);
    free(r->trace);
    free(r->drifts);
    free(r->held.s);
    gov_free(&r->g);
    free(r);
}

static const char *plan_name(const precision_plan *p, char *buf, size_t n) {
    if (p->n_rules == 0 && p->default_type == PLAN_KEEP) snprintf(buf, n, "as in the file");
    else if (p->n_rules == 0) snprintf(buf, n, "%s", wtype_name(p->default_type));
    else snprintf(buf, n, "a mixed plan");
    return buf;
}

int gov_run_start(session *s, const session_opts *o, const char *spec, const sensitivity_map *heat,
                  gov_say_fn say_fn, void *ud, gov_run **out, errbuf *err) {
    gov_target t;
    gov_knobs k;
    if (gov_parse(spec, &t, &k, err)) return -1;
    gov_run *r = xcalloc(1, sizeof *r);
    r->say = say_fn;
    r->ud = ud;
    r->g.knobs = k;
    const model *m = session_model(s);
    r->n_layer = m->hp.n_layer;
    r->n_vocab = session_n_vocab(s);
    session_get_plan(s, &r->source);
    plan_name(&r->source, r->source_name, sizeof r->source_name);
    // the shadow: the source precision, same model and backend, a cache that never evicts
    session_opts so = *o;
    char *pj = plan_to_json(&r->source);
    so.precision = pj;
    so.kv_policy = NULL;
    r->shadow = session_open(&so, err);
    free(pj);
    if (!r->shadow) { err_prefix(err, "governor: the shadow session at the source precision"); gov_run_free(r); return -1; }
    sensitivity_map own = { 0 };
    const sensitivity_map *order = NULL;
    gov_ladder l;
    if (find_heat(r, o, heat, &own, &order, err) || build_ladder(r, s, order, &l, err)) {
        sensitivity_map_free(&own);
        gov_run_free(r);
        return -1;
    }
    sensitivity_map_free(&own);
    gov_init(&r->g, &t, &k, &l);
    if (!k.drift) { session_close(r->shadow); r->shadow = NULL; }
    errbuf pe = { { 0 } };
    r->pm = power_monitor_open(NULL, &pe);
    r->ring_ms = xcalloc((size_t)k.window, sizeof *r->ring_ms);
    r->ring_j = xcalloc((size_t)k.window, sizeof *r->ring_j);
    if (r->shadow) {
        r->caps = xcalloc((size_t)k.drift_window, sizeof *r->caps);
        for (int i = 0; i < k.drift_window; i++) r->caps[i].logits = xmalloc((size_t)r->n_vocab * sizeof(float));
        r->lsm_a = xmalloc((size_t)r->n_vocab * sizeof(double));
        r->lsm_b = xmalloc((size_t)r->n_vocab * sizeof(double));
        r->rows = xmalloc((size_t)FEED_CHUNK * (size_t)r->n_vocab * sizeof(float));
    }
    char tgt[64];
    gov_target_str(&t, tgt, sizeof tgt);
    const gov_ladder *gl = &r->g.ladder;
    say(r, "governor: %s over %d tensors (%s -> %s, least sensitive first): %.1f MiB/token at the source, "
        "%.1f at the bottom; a change at most every %d tokens%s", tgt, gl->n, r->source_name, wtype_name(k.low_type),
        mib(gov_ladder_bytes(gl, 0)), mib(gov_ladder_bytes(gl, gl->n)), k.every,
        k.drift ? "; drift checks against the source" : "; drift checks off");
    *out = r;
    return 0;
}

const governor *gov_run_governor(const gov_run *r) { return &r->g; }

// ---- the loop ----

static void trace_add(gov_run *r, float tok_ms) {
    if (r->n_trace >= TRACE_MAX) return;
    if (r->n_trace == r->cap_trace) {
        r->cap_trace = r->cap_trace ? r->cap_trace * 2 : 1024;
        r->trace = xrealloc(r->trace, (size_t)r->cap_trace * sizeof *r->trace);
    }
    const gov_reading *g = &r->last;
    r->trace[r->n_trace++] = (trace_row){ .token = r->tokens, .tok_ms = tok_ms, .tps = r->have_reading ? (float)g->tps : -1,
                                          .watts = r->have_reading ? (float)g->watts : -1,
                                          .jpt = r->have_reading ? (float)g->j_per_token : -1,
                                          .kl = (float)r->g.kl, .pos = r->g.pos };
}

static void say_decision(gov_run *r, const gov_decision *d) {
    say(r, "governor: %s %d -> %d of %d tensors at %s, %.1f -> %.1f MiB/token: %s", gov_action_name(d->action),
        d->from, d->to, r->g.ladder.n, wtype_name(r->g.knobs.low_type), mib(d->bytes_from), mib(d->bytes_to), d->reason);
}

// Asks the session for the plan at the decided position; a refusal undoes the decision.
static void apply(gov_run *r, session *s, const gov_decision *d) {
    errbuf e = { { 0 } };
    say_decision(r, d);
    if (gov_plan(&r->g, &r->source, r->n_layer, d->to, &r->requested, &e)) {
        // a plan this model cannot hold (more rules than a plan has): never that far again
        if (d->to > d->from) { r->g.block_pos = d->to; r->g.block_until = LONG_MAX; }
        gov_failed(&r->g);
        say(r, "governor: the switch was not made: %s", e.msg);
    } else if (session_request_plan(s, &r->requested, &e)) {
        gov_failed(&r->g);
        say(r, "governor: the switch was not made: %s", e.msg);
    }
}

// Whether a change asked for has landed: the session swaps plans between two tokens.
static void check_switch(gov_run *r, session *s, long next_token) {
    if (!r->g.pending || session_switch_progress(s) >= 0) return;
    precision_plan cur;
    session_get_plan(s, &cur);
    if (memcmp(&cur, &r->requested, sizeof cur) == 0) {
        gov_applied(&r->g, next_token);
    } else {
        session_stats st;
        session_get_stats(s, &st);
        gov_failed(&r->g);
        say(r, "governor: the switch failed: %s", st.last_switch_error[0] ? st.last_switch_error : "another plan was set");
    }
    // readings and captures from now on are of the plan in force
    r->ring_n = r->ring_at = 0;
    r->n_caps = r->cap_at = 0;
    r->last_check = next_token;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

// The reading over the ring: median token time (one slow token does not count), joules per
// token and mean watts over the same tokens.
static void make_reading(gov_run *r, gov_reading *g) {
    int n = r->ring_n;
    float sorted[256];
    int m = n < 256 ? n : 256;
    memcpy(sorted, r->ring_ms, (size_t)m * sizeof(float));
    qsort(sorted, (size_t)m, sizeof(float), cmp_float);
    double med = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
    double sum_ms = 0, sum_j = 0;
    for (int i = 0; i < n; i++) { sum_ms += r->ring_ms[i]; sum_j += r->ring_j[i]; }
    memset(g, 0, sizeof *g);
    g->token = r->tokens;
    g->tps = med > 0 ? 1e3 / med : 0;
    g->watts = r->pm && sum_ms > 0 ? sum_j / (sum_ms * 1e-3) : -1;
    g->j_per_token = r->pm && n > 0 ? sum_j / n : -1;
    bool measured = false;
    if (r->pm) power_monitor_total_from(r->pm, &measured);
    g->watts_measured = measured;
    g->cpu_mhz = r->hw.cpu_mhz;
    g->cpu_max_mhz = r->hw.cpu_max_mhz;
    g->throttled = r->throttled;
    g->on_battery = r->hw.on_battery;
    r->throttled = false;
}

// The machine's state, at most twice a second (a reading is a few dozen small file reads).
static void read_hw(gov_run *r, double now) {
    if (r->hw_t > 0 && now - r->hw_t < 0.5) return;
    r->hw_prev = r->hw;
    hw_state_read(NULL, &r->hw);
    if (r->hw_t > 0 && hw_state_throttled(&r->hw_prev, &r->hw)) r->throttled = true;
    r->hw_t = now;
}

// ---- drift checks ----

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

// Feeds the shadow the conversation up to the newest capture and scores every capture against
// the shadow's row for the same position. 0 with *kl, *top1 and *n scored; -1 with err.
static int drift_score(gov_run *r, session *s, double *kl, double *top1, int *n_scored, errbuf *err) {
    const int32_t *h, *sh;
    int nh = session_history(s, &h);
    int ns = session_history(r->shadow, &sh);
    if (ns > nh || (ns > 0 && memcmp(sh, h, (size_t)ns * sizeof *h) != 0)) { session_reset(r->shadow); ns = 0; }
    // captures of a conversation since reset (or longer than it now is) cannot be scored
    unsigned conv = session_resets(s);
    int kept = 0;
    for (int i = 0; i < r->n_caps; i++)
        if (r->caps[i].conversation == conv && r->caps[i].hist_len <= nh) {
            capture t = r->caps[kept];
            r->caps[kept++] = r->caps[i];
            r->caps[i] = t;
        }
    r->n_caps = kept;
    int need = 0;
    for (int i = 0; i < r->n_caps; i++)
        if (r->caps[i].hist_len > need) need = r->caps[i].hist_len;
    session_stats st;
    session_get_stats(r->shadow, &st);
    if (need > st.n_ctx) return err_set(err, "the conversation (%d tokens) is longer than the shadow's context (%d)", need, st.n_ctx);
    double sum_kl = 0, agree = 0;
    int scored = 0, nv = r->n_vocab;
    // tokens before the first scored row only extend the shadow's context: no rows of logits
    int first_row = need;
    for (int i = 0; i < r->n_caps; i++)
        if (r->caps[i].hist_len - 1 < first_row) first_row = r->caps[i].hist_len - 1;
    if (first_row > ns) {
        if (session_eval(r->shadow, h + ns, first_row - ns, NULL, err)) { session_reset(r->shadow); return -1; }
        ns = first_row;
    }
    while (ns < need) {
        int c = need - ns < FEED_CHUNK ? need - ns : FEED_CHUNK;
        if (session_eval_all(r->shadow, h + ns, c, r->rows, err)) { session_reset(r->shadow); return -1; }
        for (int i = 0; i < r->n_caps; i++) {
            capture *cp = &r->caps[i];
            int row = cp->hist_len - 1 - ns;    // the row that predicts what came after hist_len tokens
            if (row < 0 || row >= c) continue;
            const float *base = r->rows + (size_t)row * (size_t)nv;
            kl_record rec;
            quality_log_softmax(base, nv, r->lsm_a);
            quality_record(r->lsm_a, nv, cp->token, &rec);
            quality_log_softmax(cp->logits, nv, r->lsm_b);
            sum_kl += quality_kl(&rec, r->lsm_b, nv);
            agree += argmax(base, nv) == argmax(cp->logits, nv);
            scored++;
        }
        ns += c;
    }
    *kl = scored ? sum_kl / scored : 0;
    *top1 = scored ? agree / scored : 1;
    *n_scored = scored;
    return 0;
}

static void drift_check(gov_run *r, session *s) {
    double t0 = now_sec(), kl, top1;
    int n = 0;
    errbuf e = { { 0 } };
    r->last_check = r->tokens;
    int rc = drift_score(r, s, &kl, &top1, &n, &e);
    r->n_caps = r->cap_at = 0;
    if (rc) {
        // Said once per run of failures: a check that runs again re-arms it.
        if (!r->said_drift_skipped)
            say(r, "governor: drift check skipped: %s%s", e.msg,
                r->g.target.kl_max >= 0 ? " (under a kl bound nothing is lowered further until a check runs)" : "");
        r->said_drift_skipped = true;
        return;
    }
    r->said_drift_skipped = false;
    if (n == 0) return;
    if (r->n_drift == r->cap_drift) {
        r->cap_drift = r->cap_drift ? r->cap_drift * 2 : 64;
        r->drifts = xrealloc(r->drifts, (size_t)r->cap_drift * sizeof *r->drifts);
    }
    r->drifts[r->n_drift++] = (drift_row){ r->tokens, kl, top1, n, r->g.pos, (now_sec() - t0) * 1e3 };
    gov_decision d;
    if (gov_drift(&r->g, r->tokens, kl, top1, &d) == GOV_ROLLBACK) apply(r, s, &d);
}

static void capture_token(gov_run *r, session *s, int32_t token) {
    const float *lg = session_last_logits(s);
    const int32_t *h;
    if (!lg) return;
    capture *c = &r->caps[r->cap_at];
    c->conversation = session_resets(s);
    c->hist_len = session_history(s, &h);
    c->token = token;
    memcpy(c->logits, lg, (size_t)r->n_vocab * sizeof(float));
    r->cap_at = (r->cap_at + 1) % r->g.knobs.drift_window;
    if (r->n_caps < r->g.knobs.drift_window) r->n_caps++;
}

void gov_run_turn_begin(gov_run *r) {
    r->in_turn = true;
    r->t_out = 0;
    r->have_out_mark = false;
}

void gov_run_token(gov_run *r, session *s, int32_t token) {
    double t_in = now_sec();
    power_mark in_mark;
    if (r->pm) power_monitor_mark(r->pm, &in_mark);
    float tok_ms = 0;
    if (r->t_out > 0) {   // the time since the hook last returned: one forward pass and a sample
        tok_ms = (float)((t_in - r->t_out) * 1e3);
        r->ring_ms[r->ring_at] = tok_ms;
        r->ring_j[r->ring_at] = r->pm && r->have_out_mark ? (float)(in_mark.total_j - r->out_mark.total_j) : 0;
        r->ring_at = (r->ring_at + 1) % r->g.knobs.window;
        if (r->ring_n < r->g.knobs.window) r->ring_n++;
    }
    check_switch(r, s, r->tokens + 1);
    read_hw(r, t_in);
    bool under_change = r->g.pos > 0 && !r->g.pending && r->tokens >= r->g.settled_at;
    if (r->shadow && under_change) {
        capture_token(r, s, token);
        if (r->tokens - r->last_check >= r->g.knobs.drift_every) drift_check(r, s);
    }
    if (r->ring_n == r->g.knobs.window) {
        make_reading(r, &r->last);
        r->have_reading = true;
        gov_decision d;
        if (gov_step(&r->g, &r->last, &d) != GOV_HOLD) apply(r, s, &d);
    }
    trace_add(r, tok_ms);
    r->tokens++;
    r->t_out = now_sec();
    if (r->pm) { power_monitor_mark(r->pm, &r->out_mark); r->have_out_mark = true; }
}

// Says the lines held back during a reply.
static void say_held(gov_run *r) {
    if (r->held.len && r->say) {
        char *p = r->held.s;
        for (char *nl; (nl = strchr(p, '\n')); p = nl + 1) {
            *nl = 0;
            r->say(r->ud, p);
        }
    }
    r->held.len = 0;
    if (r->held.s) r->held.s[0] = 0;
}

void gov_run_turn_end(gov_run *r, session *s) {
    // A change still converting lands now, between turns: a switch left in flight would hold
    // off every plan set by hand until the next reply, and leave the plan in force unknown.
    if (r->g.pending) session_wait_switch(s);
    check_switch(r, s, r->tokens);
    r->in_turn = false;
    say_held(r);
}
