// Jobs (serve/jobs.h): the queue, a request's run, its output whole or streamed, the counts.
#include "serve/jobs.h"
#include "base/clock.h"
#include "base/mem.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

// Histogram upper bounds: seconds for TTFT and duration, tokens/s for decode speed.
static const double TIME_BOUNDS[JOBS_HIST_BUCKETS] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const double TPS_BOUNDS[JOBS_HIST_BUCKETS] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 };

static void hist_add(hist *h, const double *bounds, double v) {
    int i = 0;
    while (i < JOBS_HIST_BUCKETS && v > bounds[i]) i++;
    h->n[i]++;
    h->sum += v;
    h->count++;
}

void jobs_init(jobs *q, int queue_max, int n_slots) {
    memset(q, 0, sizeof *q);
    q->n_slots = n_slots < 1 ? 1 : n_slots > JOBS_MAX_SLOTS ? JOBS_MAX_SLOTS : n_slots;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->queue_max = queue_max;
}

void jobs_cancel_all(jobs *q) {
    pthread_mutex_lock(&q->mu);
    q->cancel = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void jobs_free(jobs *q) {
    pthread_mutex_lock(&q->mu);
    while (q->live > 0) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void jobs_get_state(jobs *q, jobs_state *out) {
    pthread_mutex_lock(&q->mu);
    out->slots = q->n_slots;
    out->busy = q->n_busy;
    out->waiting = q->waiting;
    pthread_mutex_unlock(&q->mu);
}

void jobs_count(jobs *q, const char *kind, int status) {
    pthread_mutex_lock(&q->mu);
    int i = 0;
    while (i < q->n_counts && !(q->counts[i].status == status && strcmp(q->counts[i].kind, kind) == 0)) i++;
    if (i == q->n_counts && q->n_counts < (int)(sizeof q->counts / sizeof q->counts[0])) {
        snprintf(q->counts[i].kind, sizeof q->counts[i].kind, "%s", kind);
        q->counts[i].status = status;
        q->n_counts++;
    }
    if (i < q->n_counts) q->counts[i].n++;
    pthread_mutex_unlock(&q->mu);
}

static void hist_text(strbuf *b, const char *name, const char *help, const hist *h, const double *bounds) {
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long cum = 0;
    for (int i = 0; i < JOBS_HIST_BUCKETS; i++) {
        cum += h->n[i];
        strbuf_printf(b, "%s_bucket{le=\"%g\"} %lu\n", name, bounds[i], cum);
    }
    cum += h->n[JOBS_HIST_BUCKETS];
    strbuf_printf(b, "%s_bucket{le=\"+Inf\"} %lu\n%s_sum %.6f\n%s_count %lu\n", name, cum, name, h->sum, name, h->count);
}

void jobs_metrics(jobs *q, const char *model_id, strbuf *b) {
    pthread_mutex_lock(&q->mu);
    strbuf_printf(b, "# HELP cabin_requests_total HTTP requests answered, by route kind and status.\n"
                     "# TYPE cabin_requests_total counter\n");
    for (int i = 0; i < q->n_counts; i++)
        strbuf_printf(b, "cabin_requests_total{kind=\"%s\",code=\"%d\"} %lu\n", q->counts[i].kind, q->counts[i].status, q->counts[i].n);
    strbuf_printf(b, "# HELP cabin_prompt_tokens_total Prompt tokens of the requests run.\n# TYPE cabin_prompt_tokens_total counter\n"
                     "cabin_prompt_tokens_total %lu\n", q->prompt_tokens);
    strbuf_printf(b, "# HELP cabin_prompt_tokens_cached_total Prompt tokens taken from the prompt cache, not computed.\n"
                     "# TYPE cabin_prompt_tokens_cached_total counter\ncabin_prompt_tokens_cached_total %lu\n", q->cached_tokens);
    strbuf_printf(b, "# HELP cabin_completion_tokens_total Tokens generated.\n# TYPE cabin_completion_tokens_total counter\n"
                     "cabin_completion_tokens_total %lu\n", q->completion_tokens);
    strbuf_printf(b, "# HELP cabin_requests_cancelled_total Generations stopped because the client went away.\n"
                     "# TYPE cabin_requests_cancelled_total counter\ncabin_requests_cancelled_total %lu\n", q->cancelled);
    strbuf_printf(b, "# HELP cabin_queue_waiting Requests waiting for a slot.\n# TYPE cabin_queue_waiting gauge\n"
                     "cabin_queue_waiting %d\n", q->waiting);
    strbuf_printf(b, "# HELP cabin_slots Slots: conversations generated side by side, each with its own cache.\n"
                     "# TYPE cabin_slots gauge\ncabin_slots %d\n", q->n_slots);
    strbuf_printf(b, "# HELP cabin_slots_busy Slots generating.\n# TYPE cabin_slots_busy gauge\n"
                     "cabin_slots_busy %d\n", q->n_busy);
    strbuf_printf(b, "# HELP cabin_model_info The model served.\n# TYPE cabin_model_info gauge\n"
                     "cabin_model_info{model=\"%s\"} 1\n", model_id);
    hist_text(b, "cabin_ttft_seconds", "From the start of a run to its first output.", &q->ttft, TIME_BOUNDS);
    hist_text(b, "cabin_request_seconds", "From the start of a run to its end.", &q->duration, TIME_BOUNDS);
    hist_text(b, "cabin_decode_tokens_per_second", "Tokens per second after the first, per request.", &q->decode_tps, TPS_BOUNDS);
    pthread_mutex_unlock(&q->mu);
}

// ---- a job ----

job *job_new(jobs *q, const serve_engine *e) {
    job *j = xcalloc(1, sizeof *j);
    j->q = q;
    j->e = e;
    j->ticket = -1;
    j->slot = -1;
    j->client_fd = -1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    pthread_mutex_lock(&q->mu);
    q->live++;
    pthread_mutex_unlock(&q->mu);
    return j;
}

void job_free(job *j) {
    jobs *q = j->q;
    serve_request_free(&j->rq);
    stop_filter_free(&j->sf);
    strbuf_free(&j->pending);
    strbuf_free(&j->content);
    strbuf_free(&j->out);
    free(j->tool_name);
    free(j->tool_args);
    free(j->tool_result);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
    pthread_mutex_lock(&q->mu);
    q->live--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

int jobs_enter(jobs *q, job *j) {
    pthread_mutex_lock(&q->mu);
    int rc = -1;
    if (q->waiting < q->queue_max + q->n_slots - q->n_busy) {   // queue_max wait while every slot runs
        j->ticket = q->next_ticket++;
        q->waiting++;
        rc = 0;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

// Waits for the job's turn (the ticket) and a free slot, then holds the slot the engine prefers
// of those free. A command (no engine) waits for every slot to be free and holds them all.
static void slot_take(job *j) {
    jobs *q = j->q;
    pthread_mutex_lock(&q->mu);
    const bool all = j->e == NULL;
    while (q->serving != j->ticket || (all ? q->n_busy > 0 : q->n_busy == q->n_slots)) pthread_cond_wait(&q->cv, &q->mu);
    q->waiting--;
    q->serving++;
    if (all) {
        for (int i = 0; i < q->n_slots; i++) q->slot_busy[i] = true;
        q->n_busy = q->n_slots;
    } else {
        bool free_slot[JOBS_MAX_SLOTS];
        for (int i = 0; i < q->n_slots; i++) free_slot[i] = !q->slot_busy[i];
        int s = j->e->pick_slot ? j->e->pick_slot(j->e->ud, &j->rq, free_slot, q->n_slots) : -1;
        if (s < 0 || s >= q->n_slots || !free_slot[s])
            for (s = 0; q->slot_busy[s]; s++) {}
        j->slot = s;
        q->slot_busy[s] = true;
        q->n_busy++;
    }
    pthread_cond_broadcast(&q->cv);   // the next ticket may take another free slot
    pthread_mutex_unlock(&q->mu);
}

static void slot_give(job *j) {
    jobs *q = j->q;
    pthread_mutex_lock(&q->mu);
    if (j->slot < 0) {
        for (int i = 0; i < q->n_slots; i++) q->slot_busy[i] = false;
        q->n_busy = 0;
    } else {
        q->slot_busy[j->slot] = false;
        q->n_busy--;
    }
    q->prompt_tokens += (unsigned long)j->res.prompt_tokens;
    q->cached_tokens += (unsigned long)j->res.cached_tokens;
    q->completion_tokens += (unsigned long)j->res.completion_tokens;
    if (!j->status && j->t0 > 0) {   // a request that ran (not a command)
        double t1 = now_sec();
        if (j->t_first > 0) hist_add(&q->ttft, TIME_BOUNDS, j->t_first - j->t0);
        hist_add(&q->duration, TIME_BOUNDS, t1 - j->t0);
        if (j->t_first > 0 && j->res.completion_tokens > 1 && t1 > j->t_first)
            hist_add(&q->decode_tps, TPS_BOUNDS, (j->res.completion_tokens - 1) / (t1 - j->t_first));
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void job_watch_client(job *j, int fd) { j->client_fd = fd; }

// The peer closed the socket: a peek reads end of file (or an error other than "nothing yet").
static bool peer_closed(int fd) {
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static bool gone(job *j) {
    pthread_mutex_lock(&j->mu);
    if (!j->client_gone && j->client_fd >= 0 && peer_closed(j->client_fd)) j->client_gone = true;
    bool g = j->client_gone;
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&j->q->mu);
    g |= j->q->cancel;
    pthread_mutex_unlock(&j->q->mu);
    return g;
}

// The reply began: a stream's role event goes first, and the connection may send its headers.
static void mark_started(job *j) {
    if (j->started) return;
    j->t_first = now_sec();
    pthread_mutex_lock(&j->mu);
    if (j->rq.stream && j->rq.kind == SERVE_CHAT) reply_chunk_role(&j->meta, &j->out);
    j->started = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

// Text past the stop sequences: a stream sends what ends on a whole character now.
static void emit_text(void *ud, const char *s, size_t n) {
    job *j = ud;
    if (!j->rq.stream) {
        strbuf_append(&j->content, s, n);
        return;
    }
    strbuf_append(&j->pending, s, n);
    size_t k = utf8_complete(j->pending.s, j->pending.len);
    if (k == 0) return;
    pthread_mutex_lock(&j->mu);
    reply_chunk_content(&j->meta, j->rq.kind, j->pending.s, k, &j->out);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    memmove(j->pending.s, j->pending.s + k, j->pending.len - k + 1);
    j->pending.len -= k;
}

static bool on_content(void *ud, const char *piece, size_t len) {
    job *j = ud;
    mark_started(j);
    if (gone(j)) return false;
    return stop_filter_feed(&j->sf, piece, len, emit_text, j);
}

static void on_tool_call(void *ud, const char *name, const char *args, const char *result) {
    job *j = ud;
    mark_started(j);
    free(j->tool_name);
    free(j->tool_args);
    free(j->tool_result);
    j->tool_name = xstrdup(name);
    j->tool_args = xstrdup(args);
    j->tool_result = result ? xstrdup(result) : NULL;
    if (j->rq.stream) {
        reply_tool t = { j->tool_name, j->tool_args, j->tool_result };
        pthread_mutex_lock(&j->mu);
        reply_chunk_tool(&j->meta, &t, &j->out);
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
}

static bool on_alive(void *ud) { return !gone(ud); }

// The run itself, once the slot is held.
static void job_body(job *j) {
    j->t0 = now_sec();
    if (gone(j)) {   // the client left while it waited
        j->status = 499;
        err_set(&j->err, "the client went away");
        return;
    }
    stop_filter_init(&j->sf, j->rq.stop, j->rq.n_stop);
    serve_output out = { .ud = j, .content = on_content, .tool_call = on_tool_call, .alive = on_alive };
    int status = j->e->run(j->e->ud, j->slot, &j->rq, &out, &j->res, &j->err);
    if (status) {
        j->status = status;
        return;
    }
    stop_filter_flush(&j->sf, emit_text, j);
    if (j->sf.stopped) j->res.finish = SERVE_FINISH_STOP;
    if (j->pending.len) {   // a cut character at the very end: sent as it is
        pthread_mutex_lock(&j->mu);
        reply_chunk_content(&j->meta, j->rq.kind, j->pending.s, j->pending.len, &j->out);
        pthread_mutex_unlock(&j->mu);
        strbuf_clear(&j->pending);
    }
    if (gone(j)) {
        pthread_mutex_lock(&j->q->mu);
        j->q->cancelled++;
        pthread_mutex_unlock(&j->q->mu);
    }
}

void job_run(job *j) {
    slot_take(j);
    job_body(j);
    slot_give(j);
}

char *job_whole(job *j) {
    reply_tool t = { j->tool_name, j->tool_args, j->tool_result };
    return reply_whole(&j->meta, j->rq.kind, strbuf_str(&j->content), j->tool_name ? &t : NULL, &j->res);
}

int jobs_run_exclusive(jobs *q, int (*fn)(void *ud), void *ud, int *result) {
    job *j = job_new(q, NULL);
    if (jobs_enter(q, j)) {
        job_free(j);
        return -1;
    }
    slot_take(j);
    *result = fn(ud);
    slot_give(j);
    job_free(j);
    return 0;
}

static void job_unref(job *j) {
    pthread_mutex_lock(&j->mu);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) job_free(j);
}

static void *job_thread(void *arg) {
    job *j = arg;
    job_run(j);
    pthread_mutex_lock(&j->mu);
    if (j->status && j->started) reply_chunk_error(j->status, j->err.msg, &j->out);
    else if (!j->status) reply_chunk_end(&j->meta, j->rq.kind, &j->res, j->rq.include_usage, &j->out);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
    return NULL;
}

void job_start_thread(job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, job_thread, j)) job_thread(j);   // no thread to be had: it runs here
    pthread_attr_destroy(&a);
}

int job_wait_started(job *j) {
    pthread_mutex_lock(&j->mu);
    while (!j->started && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    int status = j->started ? 0 : j->status;
    pthread_mutex_unlock(&j->mu);
    return status;
}

void job_release(job *j) {
    pthread_mutex_lock(&j->mu);
    j->client_gone = true;
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
}

ssize_t job_read_stream(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    job *j = cls;
    pthread_mutex_lock(&j->mu);
    while (j->out_pos == j->out.len && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    ssize_t n = MHD_CONTENT_READER_END_OF_STREAM;
    if (j->out_pos < j->out.len) {
        size_t k = j->out.len - j->out_pos < max ? j->out.len - j->out_pos : max;
        memcpy(buf, j->out.s + j->out_pos, k);
        j->out_pos += k;
        if (j->out_pos == j->out.len) j->out_pos = 0, strbuf_clear(&j->out);
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

void job_stream_closed(void *cls) { job_release(cls); }
