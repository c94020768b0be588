// What a session shares: the model's precision plan (switching it, at once or between two
// tokens) and, for slots (session_open_sibling), the model and backend with its siblings, whose
// forward passes go through one gate (the decode steps waiting there in one pass).
#include "session_impl.h"
#include "base/clock.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    forward_ctx_free(&g->multi);
    free(g->multi_logits);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

// One pass waiting at the gate.
struct gate_req {
    session *s;
    bool decode;                   // one token and its logits: may share a pass with others'
    forward_ctx *fc;
    const int32_t *tokens;
    int n;
    bool all_logits;
    float *logits;
    errbuf *err;
    int rc;
    bool done;
    bool shared;                   // it ran in a pass with other slots'
    gate_req *next;
};

static void queue_remove(session_group *g, gate_req *r) {
    gate_req **p = &g->head, *prev = NULL;
    while (*p && *p != r) prev = *p, p = &(*p)->next;
    if (!*p) return;
    *p = r->next;
    if (g->tail == r) g->tail = prev;
    r->next = NULL;
}

// How long a decode step that leads waits for the other members decoding to post their next
// step (they sample and hand out the token they just got, then post): a member held up longer
// (a slow filter, a descheduled thread) is left for the next pass.
#define GATE_GATHER_NS 2000000L

// Requests waiting from members that are decoding: those that will not post another step first.
static int waiting_decoders(const session_group *g) {
    int n = 0;
    for (const gate_req *q = g->head; q; q = q->next) n += q->s->decoding;
    return n;
}

// Queues r and waits until it leads (the gate is free and r is first: it holds the gate, and
// *batch holds r and, for a decode step, every decode step waiting; their count is returned) or
// until another leader ran it (0).
static int gate_wait(session_group *g, gate_req *r, gate_req **batch) {
    pthread_mutex_lock(&g->mu);
    if (g->tail) g->tail->next = r;
    else g->head = r;
    g->tail = r;
    pthread_cond_broadcast(&g->cv);   // a leader gathering decode steps, a test lining them up
    while (!r->done && !(g->head == r && !g->busy)) pthread_cond_wait(&g->cv, &g->mu);
    int nb = 0;
    if (!r->done) {
        g->busy = true;
        if (r->decode && r->s->decoding && g->decoding > 1) {   // the others' next steps join this pass
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += GATE_GATHER_NS;
            if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
            while (waiting_decoders(g) < g->decoding && pthread_cond_timedwait(&g->cv, &g->mu, &until) == 0) {}
        }
        queue_remove(g, r);
        batch[nb++] = r;
        for (gate_req *q = g->head, *next; r->decode && q && nb < SESSION_GROUP_MAX; q = next) {
            next = q->next;
            if (!q->decode) continue;
            queue_remove(g, q);
            batch[nb++] = q;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return nb;
}

static void gate_done(session_group *g, gate_req **batch, int nb, int rc, const errbuf *err) {
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < nb; i++) {
        batch[i]->rc = rc;
        if (rc && batch[i]->err && batch[i]->err != err) *batch[i]->err = *err;
        batch[i]->done = true;
        batch[i]->shared = nb > 1;
    }
    g->busy = false;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

// The decode steps of several slots in one pass: each gets its own row of logits.
static int run_shared(session_group *g, gate_req **batch, int nb, errbuf *err) {
    session *s = batch[0]->s;
    const size_t nv = (size_t)s->m->hp.n_vocab;
    if (!g->multi.b) {   // made once: the buffers of a pass over every member
        g->multi_logits = try_malloc((size_t)SESSION_GROUP_MAX * nv * sizeof(float));
        if (!g->multi_logits) return err_set(err, "out of memory for the logits of %d conversations", SESSION_GROUP_MAX);
        if (forward_ctx_init(&g->multi, s->b, s->m, SESSION_GROUP_MAX, SESSION_GROUP_MAX, err)) return -1;
    }
    kv_cache *kvs[SESSION_GROUP_MAX];
    int32_t tokens[SESSION_GROUP_MAX];
    for (int i = 0; i < nb; i++) kvs[i] = &batch[i]->s->kv, tokens[i] = batch[i]->tokens[0];
    int rc = model_forward_seqs(&g->multi, kvs, tokens, nb, g->multi_logits, err);
    for (int i = 0; !rc && i < nb; i++) memcpy(batch[i]->logits, g->multi_logits + (size_t)i * nv, nv * sizeof(float));
    return rc;
}

void session_gate_enter(session *s) {
    session_group *g = s->group;
    if (!g) return;
    gate_req r = { .s = s };   // the gate itself (a plan swap), not a pass
    gate_req *batch[SESSION_GROUP_MAX];
    gate_wait(g, &r, batch);
}

void session_gate_leave(session *s) {
    session_group *g = s->group;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->busy = false;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void session_group_decoding(session *s, bool on) {
    session_group *g = s->group;
    if (!g || s->decoding == on) return;
    pthread_mutex_lock(&g->mu);
    s->decoding = on;
    g->decoding += on ? 1 : -1;
    pthread_cond_broadcast(&g->cv);   // a leader waiting for this member stops waiting
    pthread_mutex_unlock(&g->mu);
}

int session_gate_waiting(session *s) {
    session_group *g = s->group;
    if (!g) return 0;
    pthread_mutex_lock(&g->mu);
    int n = 0;
    for (gate_req *q = g->head; q; q = q->next) n++;
    pthread_mutex_unlock(&g->mu);
    return n;
}

int session_forward_gated(session *s, forward_ctx *fc, const int32_t *tokens, int n, bool all_logits, float *logits,
                          errbuf *err) {
    session_group *g = s->group;
    if (!g) return model_forward(fc, &s->kv, tokens, n, all_logits, logits, err);
    gate_req r = { .s = s, .fc = fc, .tokens = tokens, .n = n, .all_logits = all_logits, .logits = logits, .err = err };
    r.decode = n == 1 && !all_logits && logits && fc == &s->fc && !fc->observe && s->b->act_rows;
    gate_req *batch[SESSION_GROUP_MAX];
    int nb = gate_wait(g, &r, batch);
    if (nb > 0) {   // it leads: its pass, with the decode steps waiting beside it
        int rc = nb == 1 ? model_forward(fc, &s->kv, tokens, n, all_logits, logits, err) : run_shared(g, batch, nb, err);
        gate_done(g, batch, nb, rc, err);
    }
    if (r.shared) s->st.shared_passes++;
    return r.rc;
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

