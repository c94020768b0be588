// What a session shares: the model's precision plan (switching it, at once or between two
// tokens) and, for slots (session_open_sibling), the model and backend with its siblings, whose
// forward passes take turns through one gate.
#include "session_impl.h"
#include "base/clock.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the group of slots ----

void session_group_join(session *s, session *first) {
    if (!first->group) {
        session_group *g = xcalloc(1, sizeof *g);
        pthread_mutex_init(&g->mu, NULL);
        pthread_cond_init(&g->cv, NULL);
        g->members = 1;
        g->plan = first->plan;
        first->group = g;
    }
    session_group *g = first->group;
    pthread_mutex_lock(&g->mu);
    g->members++;
    s->rows_epoch = g->epoch;
    pthread_mutex_unlock(&g->mu);
    s->group = g;
}

void session_group_leave(session *s) {
    session_group *g = s->group;
    if (!g) return;
    s->group = NULL;
    pthread_mutex_lock(&g->mu);
    bool last = --g->members == 0;
    pthread_mutex_unlock(&g->mu);
    if (!last) return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

// A ticket lock: passes run in the order they asked, so slots decoding side by side alternate
// token by token instead of one taking the gate again and again.
void session_gate_enter(session *s) {
    session_group *g = s->group;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    unsigned long t = g->next++;
    while (g->serving != t) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void session_gate_leave(session *s) {
    session_group *g = s->group;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->serving++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

int session_forward_gated(session *s, forward_ctx *fc, const int32_t *tokens, int n, bool all_logits, float *logits,
                          errbuf *err) {
    session_gate_enter(s);
    int rc = model_forward(fc, &s->kv, tokens, n, all_logits, logits, err);
    session_gate_leave(s);
    return rc;
}

unsigned session_plan_epoch(const session *s) {
    if (!s->group) return 0;
    pthread_mutex_lock(&s->group->mu);
    unsigned e = s->group->epoch;
    pthread_mutex_unlock(&s->group->mu);
    return e;
}

bool session_rows_from_other_plan(const session *s) { return s->group && s->rows_epoch != session_plan_epoch(s); }

void session_rows_stale(session *s) {
    s->rows_stale = true;
    s->n_reuse = 0;
}

// A plan swapped in (the gate held): the session's rows are stale, and its siblings' too.
static void plan_in_force(session *s, const precision_plan *p) {
    s->plan = *p;
    session_rows_stale(s);
    if (!s->group) return;
    pthread_mutex_lock(&s->group->mu);
    s->group->plan = *p;
    s->group->epoch++;
    pthread_mutex_unlock(&s->group->mu);
}

// ---- precision switching ----

static void record_switch(session *s, const plan_staging *st, double total_secs) {
    s->st.last_switch_ms = total_secs * 1e3;
    s->st.last_switch_convert_ms = st->secs * 1e3;
    s->st.last_switch_tensors = st->n;
    s->st.last_switch_upcast = st->n_upcast;
    s->st.switches++;
}

int session_set_plan(session *s, const precision_plan *p, errbuf *err) {
    if (s->switch_running) return err_set(err, "a precision switch is already in progress");
    double t0 = now_sec();
    plan_staging st;
    if (model_plan_stage(s->m, p, &st, NULL, err)) return -1;   // running plan unchanged
    plan_staging copy = st;
    session_gate_enter(s);
    model_plan_commit(s->m, &st, s->b);
    plan_in_force(s, p);
    session_gate_leave(s);
    record_switch(s, &copy, now_sec() - t0);
    return 0;
}

static void *switch_worker(void *arg) {
    session *s = arg;
    s->switch_rc = model_plan_stage(s->m, &s->switch_plan, &s->switch_staging, &s->switch_progress, &s->switch_err);
    atomic_store(&s->switch_ready, true);
    return NULL;
}

int session_request_plan(session *s, const precision_plan *p, errbuf *err) {
    if (s->switch_running) return err_set(err, "a precision switch is already in progress");
    s->switch_plan = *p;
    s->switch_progress = 0.0f;
    s->switch_rc = 0;
    s->switch_err.msg[0] = 0;
    atomic_store(&s->switch_ready, false);
    s->switch_requested_at = now_sec();
    if (pthread_create(&s->switch_thread, NULL, switch_worker, s) != 0)
        return err_set(err, "cannot start the precision switch thread");
    s->switch_running = true;
    return 0;
}

int session_poll_switch(session *s) {
    if (!s->switch_running || !atomic_load(&s->switch_ready)) return 0;
    pthread_join(s->switch_thread, NULL);
    s->switch_running = false;
    if (s->switch_rc) {
        snprintf(s->st.last_switch_error, sizeof s->st.last_switch_error, "%s", s->switch_err.msg);
        return -1;
    }
    plan_staging copy = s->switch_staging;
    session_gate_enter(s);
    model_plan_commit(s->m, &s->switch_staging, s->b);
    plan_in_force(s, &s->switch_plan);
    session_gate_leave(s);
    s->st.last_switch_error[0] = 0;
    record_switch(s, &copy, now_sec() - s->switch_requested_at);
    return 1;
}

int session_wait_switch(session *s) {
    while (s->switch_running && !atomic_load(&s->switch_ready)) {
        sleep_ms(1);
    }
    return session_poll_switch(s);
}

float session_switch_progress(const session *s) { return s->switch_running ? s->switch_progress : -1.0f; }

void session_get_plan(const session *s, precision_plan *out) {
    if (!s->group) {
        *out = s->plan;
        return;
    }
    pthread_mutex_lock(&s->group->mu);
    *out = s->group->plan;
    pthread_mutex_unlock(&s->group->mu);
}

