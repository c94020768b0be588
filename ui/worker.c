// The workbench's worker thread: it alone touches the session and the app context. The UI
// thread hands it jobs (a user turn, a `:` command, a heat map run) and a live plan request;
// it posts events (token text, lines, end of turn, a heat map) and a snapshot of the figures.
// The worker never waits for the UI: posting is a short append under a mutex, and the snapshot
// is refreshed at most every SNAP_EVERY_S during a reply.
#include "ui/ui.h"
#include "app/govern.h"
#include "app/heatmap.h"
#include "engine/wtype.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SNAP_EVERY_S 0.1

// JOB_VOICE: a spoken turn; JOB_REMOTE: a turn another face asked for (cabin workbench --serve)
enum job_kind { JOB_SAY, JOB_EXEC, JOB_HEATMAP, JOB_VOICE, JOB_REMOTE };
// A turn's waiter on another thread (the voice pipeline's reply thread, an HTTP connection's):
// done, rc and st under the worker's mu.
// A job another thread waits for: done, its result (0, -1 failed, -2 the worker stopped first,
// -3 its asker left before it ran), the session's figures after a turn, and what a command
// printed (malloc'd) and why it failed.
typedef struct turn_wait {
    bool done;
    int rc;
    session_stats *st;
    char **output;
    errbuf *err;
} turn_wait;
typedef struct job {
    int kind;
    char *text;
    uint32_t type;               // JOB_HEATMAP: the type tried (text: the file, "" none)
    // JOB_VOICE, JOB_REMOTE: the turn is also told to sink; the waiter when it is done
    worker_sink sink;
    turn_wait *wait;
} job;

struct worker {
    app_ctx *c;
    turn_hooks hooks;            // app_say's events on this worker (c->turn)
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *jobs;                   // FIFO: jobs[0..n_jobs)
    int n_jobs, cap_jobs;
    bool stop;
    atomic_bool busy;
    session *cur_s;              // the session of the running job (for cancel); under mu
    bool cur_voice;              // the running job is a spoken turn; under mu
    pthread_cond_t voice_cv;     // a turn from another thread is done (turn_wait.done)
    const worker_sink *sink;     // the running turn's sink, if it has one (worker thread only)
    measurer *meas;              // the plan's KL vs the file, measured aside
    // a live plan request, picked up between tokens or in the idle loop
    atomic_bool plan_pending;
    precision_plan plan;
    char plan_name[32];
    bool switch_inflight;        // worker thread only
    atomic_bool kv_pending;
    char kv_format[16];          // under mu
    int switches_seen;
    // events
    ui_event *ev;
    int n_ev, cap_ev;
    // the snapshot (worker half) and whether the UI has seen it
    ui_snapshot snap;
    bool snap_new;
    double last_snap;
    int turn;
    char *turn_reply;            // the running turn's sentence, posted with EV_TURN_DONE
    char vprev[UI_MAX_VFIELDS][40];
    int vchanged[UI_MAX_VFIELDS];
};

// The measurer waits while this is true: a job running or queued, or a plan being prepared.
static bool worker_busy_ud(void *ud) {
    worker *w = ud;
    return atomic_load(&w->busy) || atomic_load(&w->plan_pending) || atomic_load(&w->kv_pending);
}

static void post(worker *w, int kind, int msg_kind, const char *text, size_t len, sensitivity_map *heat) {
    pthread_mutex_lock(&w->mu);
    if (kind == EV_TOKEN && w->n_ev > 0 && w->ev[w->n_ev - 1].kind == EV_TOKEN) {
        ui_event *e = &w->ev[w->n_ev - 1];   // coalesce with the pending token text
        size_t old = strlen(e->text);
        e->text = xrealloc(e->text, old + len + 1);
        memcpy(e->text + old, text, len);
        e->text[old + len] = 0;
        pthread_mutex_unlock(&w->mu);
        return;
    }
    if (w->n_ev == w->cap_ev) {
        w->cap_ev = w->cap_ev ? w->cap_ev * 2 : 64;
        w->ev = xrealloc(w->ev, (size_t)w->cap_ev * sizeof *w->ev);
    }
    ui_event *e = &w->ev[w->n_ev++];
    e->kind = kind;
    e->msg_kind = msg_kind;
    e->text = text ? xstrndup(text, len) : NULL;
    e->heat = heat;
    pthread_mutex_unlock(&w->mu);
}

static void post_line(worker *w, int msg_kind, const char *text) { post(w, EV_LINE, msg_kind, text, strlen(text), NULL); }
// What a loop on the worker says (the governor's decisions) goes to the conversation pane.
static void worker_notice(void *ud, const char *line) { post_line(ud, MSG_INFO, line); }
// `compare` on the worker: each prompt and reply piece to the UI, which draws A and B side by side.
static void worker_compare_piece(void *ud, int side, int idx, const char *prompt, const char *piece, int len) {
    (void)idx;
    if (side < 0) post(ud, EV_COMPARE, -1, prompt, strlen(prompt), NULL);
    else post(ud, EV_COMPARE, side, piece, (size_t)len, NULL);
}

static const char *plan_label(const precision_plan *p, char *buf, size_t n) {
    if (p->n_rules == 0 && p->default_type == PLAN_KEEP) snprintf(buf, n, "as in file");
    else if (p->n_rules == 0) snprintf(buf, n, "%s", wtype_name(p->default_type));
    else snprintf(buf, n, "mixed (%d rules)", p->n_rules);
    for (char *q = buf; *q; q++) if (*q >= 'A' && *q <= 'Z') *q = (char)(*q - 'A' + 'a');
    return buf;
}

// Fills the worker half of a snapshot from the session (worker thread only).
static void make_snapshot(worker *w, bool with_vehicle) {
    app_ctx *c = w->c;
    ui_snapshot t;
    pthread_mutex_lock(&w->mu);
    t = w->snap;
    pthread_mutex_unlock(&w->mu);
    session_get_stats(c->as.s, &t.st);
    t.have_stats = true;
    model *m = (model *)session_model(c->as.s);   // read-only: tensor types
    snprintf(t.model_name, sizeof t.model_name, "%s", m->name ? m->name : "model");
    t.n_layer = m->hp.n_layer < UI_MAX_LAYERS ? m->hp.n_layer : UI_MAX_LAYERS;
    for (int l = 0; l < t.n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            tensor *x = model_tensor_by_kind(m, l, k);
            t.types[l][k] = (uint8_t)(x ? x->type : 255);
        }
    tensor *e = model_tensor_by_kind(m, 0, TK_TOKEN_EMBD), *o = model_tensor_by_kind(m, 0, TK_OUTPUT);
    t.embd_type = e ? e->type : PLAN_KEEP;
    t.output_type = o ? o->type : PLAN_KEEP;
    precision_plan p;
    session_get_plan(c->as.s, &p);
    plan_label(&p, t.plan_name, sizeof t.plan_name);
    t.governor[0] = t.governor_last[0] = 0;
    if (c->as.gov) {
        gov_run_status(c->as.gov, t.governor, sizeof t.governor);
        gov_run_last_change(c->as.gov, t.governor_last, sizeof t.governor_last);
    }
    measure_note(w->meas, &c->opts, &p);   // cheap when the plan is unchanged
    snprintf(t.kv_format, sizeof t.kv_format, "%s", t.st.kv_format[0] ? t.st.kv_format : "f16");
    snprintf(t.kv_policy, sizeof t.kv_policy, "%s", t.st.kv_policy);
    for (int l = 0; l < t.n_layer; l++)
        if (session_kv_layer(c->as.s, l, &t.kv_used[l], &t.kv_quant[l], &t.kv_cap[l]) < 0)
            t.kv_used[l] = t.kv_quant[l] = t.kv_cap[l] = 0;
    // attention of the last token per layer, summed into bins over the context
    static float att[4096];
    t.att_bins = t.att_slots = 0;
    for (int l = 0; l < t.n_layer; l++) {
        errbuf e;
        int n = session_attention_last(c->as.s, l, -1, att, 4096, &e);
        if (n <= 0) break;
        if (n > 4096) n = 4096;
        int bins = n < UI_ATT_BINS ? n : UI_ATT_BINS;
        for (int b = 0; b < bins; b++) {
            float sum = 0;
            for (int i = b * n / bins; i < (b + 1) * n / bins; i++) sum += att[i];
            t.att[l][b] = sum;
        }
        t.att_bins = bins;
        t.att_slots = n;
    }
    t.generating = atomic_load(&w->busy);
    t.turn = w->turn;
    if (w->switch_inflight) snprintf(t.switch_target, sizeof t.switch_target, "%s", w->plan_name);
    else t.switch_target[0] = 0;
    if (with_vehicle) {
        int n = 0;
        for (const char *const *f = vehicle_fields(); *f && n < UI_MAX_VFIELDS; f++, n++) {
            snprintf(t.vfield[n], sizeof t.vfield[n], "%s", *f);
            char v[64];
            if (vehicle_get(c->as.car, *f, v, sizeof v)) v[0] = 0;
            const char *u = vehicle_field_unit(*f);
            // values are short ("21.5", "central_station"); a longer one is cut to the column
            snprintf(t.vvalue[n], sizeof t.vvalue[n], "%.32s%s%.6s", v[0] ? v : "-", *u && v[0] ? " " : "", v[0] ? u : "");
            if (w->vprev[n][0] && strcmp(w->vprev[n], t.vvalue[n]) != 0) w->vchanged[n] = w->turn;
            snprintf(w->vprev[n], sizeof w->vprev[n], "%s", t.vvalue[n]);
            t.vchanged[n] = w->vchanged[n];
        }
        t.n_vfields = n;
    }
    pthread_mutex_lock(&w->mu);
    w->snap = t;
    w->snap_new = true;
    pthread_mutex_unlock(&w->mu);
    w->last_snap = now_sec();
}

static void post_transcript(worker *w, size_t from);

// A plan asked for by the UI: start preparing it (worker thread; between tokens or idle).
static void take_plan_request(worker *w) {
    if (!atomic_load(&w->plan_pending) || w->switch_inflight) return;
    precision_plan p;
    char name[32];
    pthread_mutex_lock(&w->mu);
    p = w->plan;
    snprintf(name, sizeof name, "%s", w->plan_name);
    atomic_store(&w->plan_pending, false);
    pthread_mutex_unlock(&w->mu);
    if (w->c->as.gov) {   // a plan set by hand ends the governor's loop (and its change in flight lands first)
        gov_run_free(w->c->as.gov);
        w->c->as.gov = NULL;
        post_line(w, MSG_INFO, "governor: off (the plan was set by hand)");
        session_wait_switch(w->c->as.s);
    }
    errbuf err = {{0}};
    if (session_request_plan(w->c->as.s, &p, &err)) {
        char msg[600];
        snprintf(msg, sizeof msg, "precision %s: %s", name, err.msg);
        post_line(w, MSG_ERROR, msg);
        return;
    }
    w->switch_inflight = true;
    char msg[96];
    snprintf(msg, sizeof msg, "precision: preparing %s (live; the reply goes on meanwhile)", name);
    post_line(w, MSG_INFO, msg);
}

// After a swap (done by the session between two tokens, or by poll here): say so.
static void check_switch_done(worker *w, bool poll) {
    if (!w->switch_inflight) return;
    int r = poll ? session_poll_switch(w->c->as.s) : 0;
    session_stats st;
    session_get_stats(w->c->as.s, &st);
    char msg[700];
    if (r == -1 || (st.switch_progress < 0 && st.last_switch_error[0] && st.switches == w->switches_seen)) {
        snprintf(msg, sizeof msg, "precision %s failed: %s", w->plan_name, st.last_switch_error);
        post_line(w, MSG_ERROR, msg);
        w->switch_inflight = false;
    } else if (st.switches != w->switches_seen) {
        snprintf(msg, sizeof msg, "precision: now %s (%d tensors in %.0f ms, weights %.2f MiB)%s", w->plan_name,
                 st.last_switch_tensors, st.last_switch_ms, (double)st.weight_bytes / (1 << 20),
                 st.last_switch_upcast ? "; types above the file's are dequantized copies" : "");
        post_line(w, MSG_INFO, msg);
        w->switch_inflight = false;
    }
    w->switches_seen = st.switches;
    if (!w->switch_inflight) make_snapshot(w, false);
}

// A KV format asked for by the UI: between turns only (the worker is idle here).
static void take_kv_request(worker *w) {
    if (!atomic_load(&w->kv_pending)) return;
    char f[16];
    pthread_mutex_lock(&w->mu);
    snprintf(f, sizeof f, "%s", w->kv_format);
    atomic_store(&w->kv_pending, false);
    pthread_mutex_unlock(&w->mu);
    char line[48];
    snprintf(line, sizeof line, "kv %s", f);
    size_t from = w->c->transcript.len;
    errbuf err = {{0}};
    if (cmdlang_exec(w->c, line, &err) < 0) post_line(w, MSG_ERROR, err.msg);
    post_transcript(w, from);
    make_snapshot(w, false);
}

// ---- a turn's events, as app_say reports them (ud: the worker) ----
static bool on_token(void *ud, const char *piece, int len) {
    worker *w = ud;
    post(w, EV_TOKEN, 0, piece, (size_t)len, NULL);
    if (w->sink && w->sink->piece && !w->sink->piece(w->sink->ud, piece, len)) session_cancel(w->c->as.s);   // barge-in, a client gone
    if (atomic_load(&w->plan_pending)) take_plan_request(w);
    if (w->switch_inflight) check_switch_done(w, false);
    if (now_sec() - w->last_snap >= SNAP_EVERY_S) make_snapshot(w, false);
    return true;
}

static void on_action(void *ud, const action *a, const char *desc) {
    worker *w = ud;
    post_line(w, MSG_ACTION, desc);
    if (w->sink && w->sink->action) w->sink->action(w->sink->ud, a, desc);
}

static void on_vehicle_change(void *ud, const action *a, const char *change) {
    worker *w = ud;
    if (change[0]) post_line(w, MSG_VEHICLE, change);
    if (w->sink && w->sink->change) w->sink->change(w->sink->ud, a, change);
}

static void on_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    worker *w = ud;
    post_line(w, MSG_REFUSED, reason);
    if (w->sink && w->sink->refused) w->sink->refused(w->sink->ud, a, reason, sentence);
}

// Kept until the turn's final snapshot is made: EV_TURN_DONE autosaves it.
static void on_reply_text(void *ud, const char *text) {
    worker *w = ud;
    free(w->turn_reply);
    w->turn_reply = xstrdup(text);
}

// New lines of the app transcript since `from` (a command's output), posted as chat lines.
static void post_transcript(worker *w, size_t from) {
    app_ctx *c = w->c;
    if (from >= c->transcript.len) return;
    char *p = c->transcript.s + from;
    while (*p) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = xstrndup(p, n);
        post_line(w, MSG_INFO, line);
        free(line);
        p += n;
        if (*p == '\n') p++;
    }
}

typedef struct heat_progress { worker *w; double last; } heat_progress;

static bool heat_cb(void *ud, int done, int total, int layer, int kind, const sens_cell *cell) {
    (void)layer; (void)kind; (void)cell;
    heat_progress *hp = ud;
    if (now_sec() - hp->last < 0.1 && done < total) return true;
    hp->last = now_sec();
    char msg[64];
    snprintf(msg, sizeof msg, "%d/%d", done, total);
    post(hp->w, EV_HEATMAP, 0, msg, strlen(msg), NULL);
    return !hp->w->stop;
}

// A sensitivity map for the panel: loaded from a map file (written by `cabin heatmap --json`),
// else measured at type on a text file or ui_probe_text with a second session, so the
// conversation's cache is kept (the scene command runs on the live session, which starts over).
static void run_heatmap(worker *w, uint32_t type, const char *file) {
    app_ctx *c = w->c;
    errbuf err = {{0}};
    sensitivity_map *m = xcalloc(1, sizeof *m);
    int rc;
    if (*file && heatmap_is_map(file)) {
        rc = heatmap_load(m, session_model(c->as.s)->hp.n_layer, type, file, &err);
    } else {
        char *text = *file ? read_file_all(file, NULL, &err) : xstrdup(ui_probe_text);
        session_opts o = c->opts;
        o.n_ctx = 32;
        o.n_batch = 32;
        o.precision = NULL;
        session *s = text ? session_open(&o, &err) : NULL;
        heat_progress hp = { w, 0 };
        heatmap_opts ho = { .type = type, .max_tokens = 96, .ctx = 32, .progress = heat_cb, .ud = &hp };
        rc = s ? heatmap_measure(s, text, &ho, m, &err) : -1;
        session_close(s);
        free(text);
    }
    if (rc) {
        char msg[600];
        snprintf(msg, sizeof msg, "heatmap%s%s: %s", *file ? " " : "", file, err.msg);
        post_line(w, MSG_ERROR, msg);
        free(m);
        return;
    }
    if (!*file || !heatmap_is_map(file)) {
        char done[128];
        snprintf(done, sizeof done, "heatmap: %s sensitivity per (layer, tensor) computed (KL vs file precision)", wtype_name(type));
        post_line(w, MSG_INFO, done);
    }
    post(w, EV_HEATMAP, 0, NULL, 0, m);
}

// The thread waiting for j (if one does) is told it is done, with rc.
static void finish_wait(worker *w, job *j, int rc) {
    if (!j->wait) return;
    pthread_mutex_lock(&w->mu);
    j->wait->rc = rc;
    j->wait->done = true;
    pthread_cond_broadcast(&w->voice_cv);
    pthread_mutex_unlock(&w->mu);
}

static void run_job(worker *w, job *j) {
    app_ctx *c = w->c;
    errbuf err = {{0}};
    size_t from = c->transcript.len;
    const bool turn = j->kind == JOB_SAY || j->kind == JOB_VOICE || j->kind == JOB_REMOTE;
    if (w->switch_inflight && !turn) { session_wait_switch(c->as.s); check_switch_done(w, false); }
    if (j->kind == JOB_REMOTE && j->sink.gone && j->sink.gone(j->sink.ud)) {   // nobody waits for it now
        finish_wait(w, j, -3);
        return;
    }
    if (turn) {
        if (j->kind != JOB_SAY) {   // the UI shows the recognised or sent text as the user's turn
            if (j->sink.label) post_line(w, MSG_INFO, j->sink.label);
            post(w, EV_USER, MSG_USER, j->text, strlen(j->text), NULL);
            w->sink = &j->sink;
        }
        int rc = app_say(c, j->text, &err);   // its events come through the worker's turn hooks
        w->sink = NULL;
        w->turn++;
        make_snapshot(w, true);   // the turn's final stats, before EV_TURN_DONE autosaves them
        if (rc) post_line(w, MSG_ERROR, err.msg);
        char *reply = rc ? NULL : w->turn_reply;
        post(w, EV_TURN_DONE, 0, reply, reply ? strlen(reply) : 0, NULL);
        free(w->turn_reply);
        w->turn_reply = NULL;
        if (j->wait && j->wait->st) session_get_stats(c->as.s, j->wait->st);
        finish_wait(w, j, rc ? -1 : 0);
    } else if (j->kind == JOB_EXEC) {
        unsigned front = c->front;
        if (j->wait) {   // another face's (cabin workbench --serve): what cabin serve's route may run
            if (j->sink.label) post_line(w, MSG_INFO, j->sink.label);
            c->front = CMD_IN_HTTP;
        }
        int rc = cmdlang_exec(c, j->text, &err);
        c->front = front;
        if (j->wait && j->wait->output)
            *j->wait->output = xstrndup(strbuf_str(&c->transcript) + from, c->transcript.len - from);
        if (j->wait && j->wait->err && rc < 0) *j->wait->err = err;
        post_transcript(w, from);
        if (rc < 0) post_line(w, MSG_ERROR, err.msg);
        finish_wait(w, j, rc < 0 ? -1 : 0);
    } else {
        run_heatmap(w, j->type, j->text);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    make_snapshot(w, true);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && w->n_jobs == 0 && !atomic_load(&w->plan_pending) && !w->switch_inflight &&
               !atomic_load(&w->kv_pending))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop) break;
        if (w->n_jobs == 0) {    // a plan or KV request, or a switch in flight, while idle
            pthread_mutex_unlock(&w->mu);
            take_kv_request(w);
            take_plan_request(w);
            check_switch_done(w, true);
            if (w->switch_inflight) {
                make_snapshot(w, false);
                sleep_ms(20);
            }
            pthread_mutex_lock(&w->mu);
            continue;
        }
        job j = w->jobs[0];
        memmove(w->jobs, w->jobs + 1, (size_t)(w->n_jobs - 1) * sizeof *w->jobs);
        w->n_jobs--;
        atomic_store(&w->busy, true);
        w->cur_s = w->c->as.s;
        w->cur_voice = j.kind == JOB_VOICE;
        pthread_mutex_unlock(&w->mu);
        make_snapshot(w, false);
        run_job(w, &j);
        free(j.text);
        pthread_mutex_lock(&w->mu);
        w->cur_s = NULL;
        w->cur_voice = false;
        atomic_store(&w->busy, w->n_jobs > 0);
        pthread_mutex_unlock(&w->mu);
        make_snapshot(w, true);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

worker *worker_start(app_ctx *c, errbuf *err) {
    worker *w = xcalloc(1, sizeof *w);
    w->c = c;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->voice_cv, NULL);
    session_stats st;
    session_get_stats(c->as.s, &st);
    w->switches_seen = st.switches;
    w->hooks = (turn_hooks){ .ud = w, .on_token = on_token, .on_action = on_action, .on_vehicle_change = on_vehicle_change,
                             .on_refused = on_refused, .on_reply_text = on_reply_text };
    c->turn = &w->hooks;
    c->notice = worker_notice;
    c->notice_ud = w;
    c->compare_piece = worker_compare_piece;
    c->compare_ud = w;
    // what the session has to say from the start (a chat template not recognised), taken before
    // the worker thread shares the session
    char note[ERR_LINE];
    bool noted = session_take_notice(c->as.s, note, sizeof note);
    w->meas = measure_start(worker_busy_ud, w);
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
        measure_stop(w->meas);
        free(w);
        err_set(err, "cannot start the generation thread");
        return NULL;
    }
    if (noted) post_line(w, MSG_INFO, note);
    return w;
}

void worker_stop(worker *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    if (w->cur_s) session_cancel(w->cur_s);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    measure_stop(w->meas);   // after the worker thread: make_snapshot notes plans to it
    w->meas = NULL;
    if (w->switch_inflight) session_wait_switch(w->c->as.s);
    // spoken turns still queued will not run: their waiters are told
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n_jobs; i++)
        if (w->jobs[i].wait) { w->jobs[i].wait->rc = -2; w->jobs[i].wait->done = true; w->jobs[i].wait = NULL; }
    pthread_cond_broadcast(&w->voice_cv);
    pthread_mutex_unlock(&w->mu);
}

void worker_free(worker *w) {
    for (int i = 0; i < w->n_jobs; i++) free(w->jobs[i].text);
    for (int i = 0; i < w->n_ev; i++) {
        free(w->ev[i].text);
        if (w->ev[i].heat) { sensitivity_map_free(w->ev[i].heat); free(w->ev[i].heat); }
    }
    free(w->jobs);
    free(w->ev);
    w->c->turn = NULL;
    w->c->notice = NULL;
    w->c->compare_piece = NULL;
    free(w->turn_reply);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->voice_cv);
    free(w);
}

// Appends a job (under mu).
static void push_job_locked(worker *w, int kind, const char *text) {
    if (w->n_jobs == w->cap_jobs) {
        w->cap_jobs = w->cap_jobs ? w->cap_jobs * 2 : 8;
        w->jobs = xrealloc(w->jobs, (size_t)w->cap_jobs * sizeof *w->jobs);
    }
    job *j = &w->jobs[w->n_jobs++];
    memset(j, 0, sizeof *j);
    j->kind = kind;
    j->text = xstrdup(text ? text : "");
    atomic_store(&w->busy, true);
    pthread_cond_signal(&w->cv);
}

static void push_job(worker *w, int kind, const char *text) {
    pthread_mutex_lock(&w->mu);
    push_job_locked(w, kind, text);
    pthread_mutex_unlock(&w->mu);
}

// A job from another thread, waited for.
static int say_waiting(worker *w, int kind, const char *text, const worker_sink *sink, session_stats *st,
                       char **output, errbuf *err) {
    turn_wait tw = { false, -2, st, output, err };
    pthread_mutex_lock(&w->mu);
    if (w->stop) { pthread_mutex_unlock(&w->mu); return -2; }
    push_job_locked(w, kind, text);
    job *j = &w->jobs[w->n_jobs - 1];
    j->sink = *sink;
    j->wait = &tw;
    while (!tw.done) pthread_cond_wait(&w->voice_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return tw.rc;
}

int worker_say_voice(worker *w, const char *text, bool (*piece)(void *ud, const char *p, int len), void *ud) {
    const worker_sink sink = { .ud = ud, .piece = piece };
    return say_waiting(w, JOB_VOICE, text, &sink, NULL, NULL, NULL);
}

int worker_say_remote(worker *w, const char *text, const worker_sink *sink, session_stats *st) {
    return say_waiting(w, JOB_REMOTE, text, sink, st, NULL, NULL);
}

int worker_exec_remote(worker *w, const char *line, const char *label, char **output, errbuf *err) {
    const worker_sink sink = { .label = label };
    *output = NULL;
    int rc = say_waiting(w, JOB_EXEC, line, &sink, NULL, output, err);
    if (rc == -2) err_set(err, "the workbench is closing");
    return rc;
}

void worker_peek(worker *w, ui_snapshot *s) {
    pthread_mutex_lock(&w->mu);
    *s = w->snap;
    pthread_mutex_unlock(&w->mu);
}

void worker_cancel_voice(worker *w) {
    pthread_mutex_lock(&w->mu);
    if (w->cur_voice && w->cur_s) session_cancel(w->cur_s);
    for (int i = 0; i < w->n_jobs; i++) {   // a queued spoken turn is dropped
        job *j = &w->jobs[i];
        if (j->kind != JOB_VOICE) continue;
        if (j->wait) { j->wait->rc = -2; j->wait->done = true; }
        free(j->text);
        memmove(w->jobs + i, w->jobs + i + 1, (size_t)(w->n_jobs - i - 1) * sizeof *w->jobs);
        w->n_jobs--;
        i--;
    }
    if (!w->cur_s) atomic_store(&w->busy, w->n_jobs > 0);
    pthread_cond_broadcast(&w->voice_cv);
    pthread_mutex_unlock(&w->mu);
}

void worker_post_line(worker *w, int msg_kind, const char *text) { post_line(w, msg_kind, text); }

int worker_plan_quality(worker *w, double *kl, double *agree, int *done, int *total) {
    return measure_get(w->meas, kl, agree, done, total);
}

void worker_say(worker *w, const char *text) { push_job(w, JOB_SAY, text); }
void worker_exec(worker *w, const char *line) { push_job(w, JOB_EXEC, line); }
const char *const ui_heat_modes[] = { "sensitivity", "kv cache", "attention", NULL };

void worker_heatmap(worker *w, uint32_t type, const char *file) {
    pthread_mutex_lock(&w->mu);
    push_job_locked(w, JOB_HEATMAP, file);
    w->jobs[w->n_jobs - 1].type = type;
    pthread_mutex_unlock(&w->mu);
}

void worker_request_plan(worker *w, const precision_plan *p, const char *name) {
    pthread_mutex_lock(&w->mu);
    w->plan = *p;
    snprintf(w->plan_name, sizeof w->plan_name, "%s", name);
    atomic_store(&w->plan_pending, true);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void worker_request_kv(worker *w, const char *format) {
    pthread_mutex_lock(&w->mu);
    snprintf(w->kv_format, sizeof w->kv_format, "%s", format);
    atomic_store(&w->kv_pending, true);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void worker_cancel(worker *w) {
    pthread_mutex_lock(&w->mu);
    if (w->cur_s) session_cancel(w->cur_s);
    pthread_mutex_unlock(&w->mu);
}

bool worker_busy(worker *w) { return atomic_load(&w->busy); }

int worker_drain(worker *w, ui_event *out, int max) {
    pthread_mutex_lock(&w->mu);
    int n = w->n_ev < max ? w->n_ev : max;
    if (n > 0) {   // the queue is NULL until the first event: no memcpy from NULL, even for 0 bytes
        memcpy(out, w->ev, (size_t)n * sizeof *out);
        memmove(w->ev, w->ev + n, (size_t)(w->n_ev - n) * sizeof *w->ev);
        w->n_ev -= n;
    }
    pthread_mutex_unlock(&w->mu);
    return n;
}

bool worker_snapshot(worker *w, ui_snapshot *s) {
    pthread_mutex_lock(&w->mu);
    bool changed = w->snap_new;
    if (changed) {
        const ui_snapshot *t = &w->snap;
        // copy the worker half only
        s->st = t->st;
        s->have_stats = t->have_stats;
        memcpy(s->model_name, t->model_name, sizeof s->model_name);
        s->n_layer = t->n_layer;
        memcpy(s->types, t->types, sizeof s->types);
        s->embd_type = t->embd_type;
        s->output_type = t->output_type;
        memcpy(s->plan_name, t->plan_name, sizeof s->plan_name);
        memcpy(s->kv_format, t->kv_format, sizeof s->kv_format);
        memcpy(s->kv_policy, t->kv_policy, sizeof s->kv_policy);
        memcpy(s->kv_used, t->kv_used, sizeof s->kv_used);
        memcpy(s->kv_quant, t->kv_quant, sizeof s->kv_quant);
        memcpy(s->kv_cap, t->kv_cap, sizeof s->kv_cap);
        memcpy(s->att, t->att, sizeof s->att);
        s->att_bins = t->att_bins;
        s->att_slots = t->att_slots;
        s->turn = t->turn;
        memcpy(s->governor, t->governor, sizeof s->governor);
        memcpy(s->governor_last, t->governor_last, sizeof s->governor_last);
        if (t->n_vfields) {
            memcpy(s->vfield, t->vfield, sizeof s->vfield);
            memcpy(s->vvalue, t->vvalue, sizeof s->vvalue);
            memcpy(s->vchanged, t->vchanged, sizeof s->vchanged);
            s->n_vfields = t->n_vfields;
        }
        memcpy(s->switch_target, t->switch_target, sizeof s->switch_target);
        w->snap_new = false;
    }
    s->generating = atomic_load(&w->busy);
    pthread_mutex_unlock(&w->mu);
    return changed;
}
