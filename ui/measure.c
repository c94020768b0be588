// The Precision panel's "KL vs file": the KL divergence and top-1 agreement of the plan in force
// against the file's own precision, measured on a short fixed text with the quality code of
// `cabin ppl --kl-base` (engine/quality.h). It runs on a thread of its own at the lowest
// scheduling priority, on a session of its own (the conversation is not touched), and only
// between turns: it starts once the worker has been idle for a second and waits while it is
// busy, also between two windows of the text, so a reply competes with it (at nice 19) for at
// most one window or one conversion. Results are cached per (model, backend,
// plan); the file's reference run (the base) is kept for the model.
#include "ui/ui.h"
#include "engine/quality.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PROBE_CTX 64          // window, tokens (BOS included); scored on its second half
#define PROBE_WINDOWS 4
#define CACHE_N 16
#define SETTLE_START_S 1.0    // the worker idle this long before a measurement starts ...
#define SETTLE_RESUME_S 0.3   // ... and before it goes on after a turn interrupted it

const char ui_probe_text[] =
    "Set the driver temperature to twenty one degrees and turn on the seat heating. "
    "Open the sunroof halfway, play the next track and navigate to the central station. "
    "How much range is left? Close all the windows and switch the fog lights off. "
    "Call the office, then lower the fan speed and turn the air conditioning on. "
    "It is getting dark, so turn on the headlights and dim the dashboard a little. "
    "Find a charging station on the way and tell me when we will arrive at home. "
    "Turn the music down, read my last message and remind me to buy bread tomorrow.";

// What a measurement is of. Compared with memcmp: filled from zeroed memory, no padding.
typedef struct plan_key {
    char model[1024];
    char backend[32];
    precision_plan plan;      // rules past n_rules zeroed
} plan_key;

typedef struct entry {
    plan_key key;
    int state;                // KL_WAITING, KL_MEASURING, KL_DONE, KL_FAILED
    double kl, agree;
    unsigned long used;       // for eviction
} entry;

struct measurer {
    bool (*busy)(void *);
    void *ud;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool have_cur;
    plan_key cur;             // the plan in force
    session_opts cur_opts;    // with its strings in the buffers below
    char kernels[16], device[16], tmpl[32];
    entry cache[CACHE_N];
    int n_cache;
    unsigned long clock;
    int run_done, run_total;  // the running measurement's windows scored, of its total
    // the file's reference run on the probe text (measure thread only)
    quality_base base;
    char base_model[1024];
    uint64_t base_hash;
};

static void key_fill(plan_key *k, const session_opts *o, const precision_plan *p) {
    memset(k, 0, sizeof *k);
    snprintf(k->model, sizeof k->model, "%s", o->model_path ? o->model_path : "");
    snprintf(k->backend, sizeof k->backend, "%s", o->backend.name ? o->backend.name : "");
    k->plan.default_type = p->default_type;
    k->plan.token_embd_type = p->token_embd_type;
    k->plan.output_type = p->output_type;
    k->plan.n_rules = p->n_rules < PLAN_MAX_RULES ? p->n_rules : PLAN_MAX_RULES;
    memcpy(k->plan.rules, p->rules, (size_t)k->plan.n_rules * sizeof p->rules[0]);
}

static bool plan_is_file(const precision_plan *p) {
    return p->n_rules == 0 && p->default_type == PLAN_KEEP && p->token_embd_type == PLAN_KEEP &&
           p->output_type == PLAN_KEEP;
}

static entry *find(measurer *m, const plan_key *k) {
    for (int i = 0; i < m->n_cache; i++)
        if (memcmp(&m->cache[i].key, k, sizeof *k) == 0) return &m->cache[i];
    return NULL;
}


// Waits until the worker has been idle (no reply, command or heat map) for settle_s: a person
// who switches precision and then types gets the core first. False when stopping.
static bool wait_idle(measurer *m, double settle_s) {
    double idle_since = 0;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop;
        pthread_mutex_unlock(&m->mu);
        if (stop) return false;
        double now = now_sec();
        if (m->busy(m->ud)) idle_since = 0;
        else if (idle_since == 0) idle_since = now;
        if (idle_since > 0 && now - idle_since >= settle_s) return true;
        sleep_ms(50);
    }
}

static void between_windows(void *ud, int done, int total, double ppl) {
    (void)done; (void)total; (void)ppl;
    measurer *m = ud;
    pthread_mutex_lock(&m->mu);
    m->run_done++;
    pthread_mutex_unlock(&m->mu);
    wait_idle(ud, SETTLE_RESUME_S);
}

// One measurement (measure thread): 0 with kl / agree, -1 with err.
static int measure_one(measurer *m, const plan_key *k, const session_opts *so, double *kl, double *agree, errbuf *err) {
    session_opts o = *so;
    o.model_path = k->model;
    o.backend.name = k->backend[0] ? k->backend : NULL;
    o.backend.n_threads = 1;      // one core at most, and only between turns
    o.n_ctx = PROBE_CTX;
    o.n_batch = PROBE_CTX;
    o.precision = NULL;           // the file's precision: the base; the plan is set below
    o.kv_format = NULL;           // weights alone: the KV cache stays f16
    o.kv_policy = NULL;
    o.system_prompt = NULL;
    o.mmap_weights = true;        // share the file's pages: no second copy of the weights for a
                                  // short background job whose speed does not matter
    session *s = session_open(&o, err);
    if (!s) return -1;
    int32_t *ids = NULL;
    int n = session_tokenize(s, ui_probe_text, false, &ids, err);
    int rc = n < 0 ? -1 : 0;
    uint64_t hash = n > 0 ? quality_hash_tokens(ids, n) : 0;
    quality_result r;
    bool need_base = !rc && (strcmp(m->base_model, k->model) != 0 || m->base_hash != hash || m->base.n == 0);
    pthread_mutex_lock(&m->mu);
    m->run_done = 0;
    m->run_total = (need_base ? 2 : 1) * PROBE_WINDOWS;
    pthread_mutex_unlock(&m->mu);
    if (need_base) {
        quality_base_free(&m->base);
        memset(&m->base, 0, sizeof m->base);
        m->base_model[0] = 0;
        quality_opts qo = { .ctx = PROBE_CTX, .max_chunks = PROBE_WINDOWS, .save = &m->base,
                            .progress = between_windows, .progress_ud = m };
        memset(&r, 0, sizeof r);
        rc = quality_eval(s, ids, n, &qo, &r, err);
        if (!rc) { snprintf(m->base_model, sizeof m->base_model, "%s", k->model); m->base_hash = hash; }
    }
    if (!rc && wait_idle(m, SETTLE_RESUME_S)) rc = session_set_plan(s, &k->plan, err);
    if (!rc && wait_idle(m, SETTLE_RESUME_S)) {
        quality_opts qo = { .ctx = PROBE_CTX, .max_chunks = PROBE_WINDOWS, .cmp = &m->base,
                            .progress = between_windows, .progress_ud = m };
        memset(&r, 0, sizeof r);
        rc = quality_eval(s, ids, n, &qo, &r, err);
        if (!rc) { *kl = r.kl_mean; *agree = r.top1; }
    }
    free(ids);
    session_close(s);
    return rc;
}

static void *measure_main(void *ud) {
    measurer *m = ud;
    // The lowest priority for this thread (Linux: nice applies per thread); a reply wins the core.
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stop && (!m->have_cur || find(m, &m->cur))) pthread_cond_wait(&m->cv, &m->mu);
        if (m->stop) break;
        plan_key k = m->cur;
        session_opts o = m->cur_opts;
        entry *e;
        if (m->n_cache < CACHE_N) e = &m->cache[m->n_cache++];
        else {   // the least recently used
            e = &m->cache[0];
            for (int i = 1; i < CACHE_N; i++) if (m->cache[i].used < e->used) e = &m->cache[i];
        }
        memset(e, 0, sizeof *e);
        e->key = k;
        e->used = ++m->clock;
        if (plan_is_file(&k.plan)) { e->state = KL_FILE; e->kl = 0; e->agree = 1; continue; }
        e->state = KL_WAITING;
        pthread_mutex_unlock(&m->mu);
        double kl = -1, agree = -1;
        errbuf err = {{0}};
        bool go = wait_idle(m, SETTLE_START_S);
        pthread_mutex_lock(&m->mu);
        if ((e = find(m, &k))) e->state = KL_MEASURING;
        m->run_done = 0;
        m->run_total = PROBE_WINDOWS;
        pthread_mutex_unlock(&m->mu);
        int rc = go ? measure_one(m, &k, &o, &kl, &agree, &err) : -1;
        pthread_mutex_lock(&m->mu);
        e = find(m, &k);
        if (e) {
            e->state = rc ? KL_FAILED : KL_DONE;
            e->kl = kl;
            e->agree = agree;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

measurer *measure_start(bool (*busy)(void *ud), void *ud) {
    measurer *m = xcalloc(1, sizeof *m);
    m->busy = busy;
    m->ud = ud;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    if (pthread_create(&m->th, NULL, measure_main, m) != 0) {
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->cv);
        free(m);
        return NULL;
    }
    return m;
}

void measure_stop(measurer *m) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
    quality_base_free(&m->base);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

void measure_note(measurer *m, const session_opts *o, const precision_plan *p) {
    if (!m) return;
    plan_key k;
    key_fill(&k, o, p);
    pthread_mutex_lock(&m->mu);
    if (!m->have_cur || memcmp(&k, &m->cur, sizeof k) != 0) {
        m->cur = k;
        m->have_cur = true;
        m->cur_opts = *o;
        // the strings the measure thread needs, copied (the worker may reopen its session)
        snprintf(m->kernels, sizeof m->kernels, "%s", o->backend.kernels ? o->backend.kernels : "");
        snprintf(m->device, sizeof m->device, "%s", o->backend.device ? o->backend.device : "");
        snprintf(m->tmpl, sizeof m->tmpl, "%s", o->template_name ? o->template_name : "");
        m->cur_opts.backend.kernels = m->kernels[0] ? m->kernels : NULL;
        m->cur_opts.backend.device = m->device[0] ? m->device : NULL;
        m->cur_opts.template_name = m->tmpl[0] ? m->tmpl : NULL;
        m->cur_opts.model_path = NULL;        // from the key
        m->cur_opts.backend.name = NULL;
        m->cur_opts.system_prompt = NULL;
        m->cur_opts.precision = m->cur_opts.kv_format = m->cur_opts.kv_policy = NULL;
        entry *e = find(m, &k);
        if (e) e->used = ++m->clock;
        else pthread_cond_signal(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
}

int measure_get(measurer *m, double *kl, double *agree, int *done, int *total) {
    *kl = *agree = -1;
    *done = *total = 0;
    if (!m) return KL_NONE;
    pthread_mutex_lock(&m->mu);
    int st = KL_NONE;
    if (m->have_cur) {
        entry *e = find(m, &m->cur);
        st = e ? e->state : KL_WAITING;   // noted, not started yet: it is coming
        if (e) { *kl = e->kl; *agree = e->agree; }
        if (st == KL_MEASURING) { *done = m->run_done; *total = m->run_total; }
    }
    pthread_mutex_unlock(&m->mu);
    return st;
}
