// The HTTP server (libmicrohttpd, a thread per connection): routes, the API key, body limits,
// the queue in front of the slot, and the answers, whole or streamed as server-sent events.
#include "serve/serve.h"
#include "base/mem.h"
#include "base/str.h"
#include "base/version.h"
#include "serve/jobs.h"
#include "serve/reply.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct server {
    struct MHD_Daemon *d;
    pthread_mutex_t log_mu;        // libmicrohttpd's threads may speak at once
    char log[256];                 // libmicrohttpd's last word (while starting: why it failed)
    atomic_bool listening;
    serve_opts o;
    serve_engine e;
    jobs q;
    long started;
    char fingerprint[64];
};

serve_opts serve_opts_default(void) {
    return (serve_opts){ .host = "127.0.0.1", .port = 8080, .queue_max = 16, .body_max = 1 << 20, .connections_max = 64 };
}

bool serve_host_is_loopback(const char *host) {
    if (strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0) return true;
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

// ---- one connection's request ----
typedef enum route { R_NONE, R_CHAT, R_COMPLETION, R_MODELS, R_HEALTH, R_METRICS, R_TOOLS, R_COMMAND, R_STATE } route;

typedef struct conn {
    route r;
    strbuf body;
    bool wrong_method;   // the route exists, not for this method (405)
    bool too_big;        // the body passed the limit (413)
} conn;

static const struct { const char *path; route r; bool post; } ROUTES[] = {
    { "/v1/chat/completions", R_CHAT, true },
    { "/v1/completions", R_COMPLETION, true },
    { "/v1/models", R_MODELS, false },
    { "/health", R_HEALTH, false },
    { "/metrics", R_METRICS, false },
    { "/v1/cabin/tools", R_TOOLS, false },
    { "/v1/cabin/command", R_COMMAND, true },
    { "/v1/cabin/state", R_STATE, false },
};
#define N_ROUTES (int)(sizeof ROUTES / sizeof ROUTES[0])

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *type, char *text) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

// JSON json (taken) with the status, counted under the route's kind in /metrics.
static enum MHD_Result send_json(server *sv, struct MHD_Connection *c, route r, int status, char *json) {
    jobs_count(&sv->q, r == R_CHAT ? "chat" : r == R_COMPLETION ? "completion" : "other", status);
    return send_text(c, status, "application/json", json);
}

static enum MHD_Result send_error(server *sv, struct MHD_Connection *c, route r, int status, const char *msg) {
    return send_json(sv, c, r, status, reply_error(status, msg));
}

// Constant-time comparison of the presented key with ours.
static bool key_matches(const char *given, const char *key) {
    size_t n = strlen(key), m = strlen(given);
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < m ? given[i] : 0);
    return diff == 0;
}

static bool authorised(const server *sv, struct MHD_Connection *c) {
    if (!sv->o.api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && key_matches(h + 7, sv->o.api_key);
}

static char *models_json(const server *sv) {
    strbuf b = { 0 };
    strbuf_printf(&b, "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":%ld,"
                  "\"owned_by\":\"cabin\",\"context_length\":%d}]}", sv->e.model_id, sv->started, sv->e.n_ctx);
    return b.s;
}

static char *health_json(server *sv) {
    jobs_state st;
    jobs_get_state(&sv->q, &st);
    strbuf b = { 0 };
    strbuf_printf(&b, "{\"status\":\"ok\",\"model\":\"%s\",\"slots\":%d,\"busy\":%d,\"queued\":%d}", sv->e.model_id,
                  st.slots, st.busy, st.waiting);
    return b.s;
}

static void make_meta(server *sv, serve_kind kind, reply_meta *m) {
    static _Atomic unsigned long counter;
    unsigned long n = ++counter;
    memset(m, 0, sizeof *m);
    unsigned long now = (unsigned long)time(NULL);   // one instant for the id, the call id and created
    snprintf(m->id, sizeof m->id, "%s-%lx%04lx", kind == SERVE_CHAT ? "chatcmpl" : "cmpl", now, n & 0xffff);
    snprintf(m->call_id, sizeof m->call_id, "call_%lx%04lx", now, n & 0xffff);
    m->created = (long)now;
    m->model = sv->e.model_id;
    m->fingerprint = sv->fingerprint;
}

// A chat or completion request: checked, queued, run, answered.
static enum MHD_Result handle_generate(server *sv, struct MHD_Connection *c, conn *k) {
    serve_kind kind = k->r == R_CHAT ? SERVE_CHAT : SERVE_COMPLETION;
    errbuf err = { { 0 } };
    job *j = job_new(&sv->q, &sv->e);
    if (serve_request_parse(strbuf_str(&k->body), k->body.len, kind, &j->rq, &err)) {
        job_free(j);
        return send_error(sv, c, k->r, 400, err.msg);
    }
    if (j->rq.model && strcmp(j->rq.model, sv->e.model_id) != 0) {
        char msg[ERR_LINE];
        snprintf(msg, sizeof msg, "model '%.100s' is not served here (GET /v1/models: '%s')", j->rq.model, sv->e.model_id);
        job_free(j);
        return send_error(sv, c, k->r, 404, msg);
    }
    make_meta(sv, kind, &j->meta);
    if (jobs_enter(&sv->q, j)) {
        char msg[128];
        snprintf(msg, sizeof msg, "the server is busy: %d requests are waiting already (--queue)", sv->o.queue_max);
        job_free(j);
        return send_error(sv, c, k->r, 503, msg);
    }
    if (!j->rq.stream) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) job_watch_client(j, ci->connect_fd);
        job_run(j);   // waits for the slot, then runs here
        int status = j->status;
        char *body = status ? reply_error(status, j->err.msg) : job_whole(j);
        job_free(j);
        return send_json(sv, c, k->r, status ? status : 200, body);
    }
    // streamed: the job runs on its own thread; the answer's status is known once the reply
    // began (the prompt fit) or failed before it, so it is waited for before the headers go
    job_start_thread(j);
    int status = job_wait_started(j);
    if (status) {
        char *body = reply_error(status, j->err.msg);
        job_release(j);   // the thread ends and frees it
        return send_json(sv, c, k->r, status, body);
    }
    jobs_count(&sv->q, k->r == R_CHAT ? "chat" : "completion", 200);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, job_read_stream, j, job_stream_closed);
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

// POST /v1/cabin/command: {"command": "precision q4_0"} run in the slot's turn; the answer
// {"command", "output"} or an error.
typedef struct command_call {
    server *sv;
    const char *line;
    char *output;
    errbuf err;
} command_call;

static int run_command(void *ud) {
    command_call *k = ud;
    return k->sv->e.command(k->sv->e.ud, k->line, &k->output, &k->err);
}

static enum MHD_Result handle_command(server *sv, struct MHD_Connection *c, conn *k) {
    if (!sv->e.command) return send_error(sv, c, k->r, 404, "this server runs no commands");
    cJSON *root = cJSON_ParseWithLength(strbuf_str(&k->body), k->body.len);
    const cJSON *line = root ? cJSON_GetObjectItemCaseSensitive(root, "command") : NULL;
    if (!cJSON_IsString(line) || !cJSON_IsObject(root) || cJSON_GetArraySize(root) != 1) {
        cJSON_Delete(root);
        return send_error(sv, c, k->r, 400, "the body must be {\"command\": \"LINE\"} (a line of the command language)");
    }
    command_call call = { .sv = sv, .line = line->valuestring };
    int status = 0;
    if (jobs_run_exclusive(&sv->q, run_command, &call, &status)) {
        cJSON_Delete(root);
        return send_error(sv, c, k->r, 503, "the server is busy (--queue)");
    }
    enum MHD_Result ret;
    if (status) {
        ret = send_error(sv, c, k->r, status, call.err.msg);
    } else {
        cJSON *out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "command", line->valuestring);
        cJSON_AddStringToObject(out, "output", call.output ? call.output : "");
        char *js = cJSON_PrintUnformatted(out);
        cJSON_Delete(out);
        ret = send_json(sv, c, k->r, 200, xstrdup(js ? js : "{}"));
        cJSON_free(js);
    }
    free(call.output);
    cJSON_Delete(root);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    server *sv = cls;
    conn *k = *con_cls;
    if (!k) {   // the headers are in: route and method, before any body is read
        k = xcalloc(1, sizeof *k);
        *con_cls = k;
        int i = 0;
        while (i < N_ROUTES && strcmp(url, ROUTES[i].path) != 0) i++;
        if (i == N_ROUTES) {
            k->r = R_NONE;
        } else {
            k->r = ROUTES[i].r;
            bool post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
            if (ROUTES[i].post ? !post : !get) k->r = R_NONE, k->wrong_method = true;   // 405 below
        }
        return MHD_YES;
    }
    if (*upload_size) {   // the body, piece by piece, up to the limit
        if (!k->too_big && k->body.len + *upload_size <= sv->o.body_max) strbuf_append(&k->body, upload, *upload_size);
        else if (k->r != R_NONE) k->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (k->r == R_NONE) {
        char msg[400];
        if (k->wrong_method) snprintf(msg, sizeof msg, "%s is not allowed on %.200s", method, url);
        else snprintf(msg, sizeof msg, "no route %.200s (POST /v1/chat/completions, /v1/completions, /v1/cabin/command; GET /v1/models, /health, /metrics, /v1/cabin/tools, /v1/cabin/state)", url);
        return send_error(sv, c, R_NONE, k->wrong_method ? 405 : 404, msg);
    }
    if (k->r != R_HEALTH && !authorised(sv, c))
        return send_error(sv, c, k->r, 401, "a valid API key is needed (Authorization: Bearer KEY)");
    if (k->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than %zu bytes (--max-body)", sv->o.body_max);
        return send_error(sv, c, k->r, 413, msg);
    }
    switch (k->r) {
    case R_CHAT:
    case R_COMPLETION: return handle_generate(sv, c, k);
    case R_MODELS: return send_json(sv, c, k->r, 200, models_json(sv));
    case R_HEALTH: return send_json(sv, c, k->r, 200, health_json(sv));
    case R_TOOLS: return send_json(sv, c, k->r, 200, xstrdup(sv->e.tools_json ? sv->e.tools_json : "[]"));
    case R_COMMAND: return handle_command(sv, c, k);
    case R_STATE:
        if (!sv->e.state) return send_error(sv, c, k->r, 404, "this server keeps no state to show");
        return send_json(sv, c, k->r, 200, sv->e.state(sv->e.ud));
    case R_METRICS: {
        strbuf b = { 0 };
        jobs_metrics(&sv->q, sv->e.model_id, &b);
        if (sv->e.metrics) sv->e.metrics(sv->e.ud, &b);
        jobs_count(&sv->q, "other", 200);
        return send_text(c, 200, "text/plain; version=0.0.4", b.s ? b.s : xstrdup(""));
    }
    default: return MHD_NO;
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)cls, (void)c, (void)why;
    conn *k = *con_cls;
    if (!k) return;
    strbuf_free(&k->body);
    free(k);
    *con_cls = NULL;
}

// libmicrohttpd's messages: kept while starting (the reason a start failed goes into its error),
// then said on stderr as cabin's.
static void mhd_log(void *cls, const char *fmt, va_list ap) {
    server *sv = cls;
    pthread_mutex_lock(&sv->log_mu);
    vsnprintf(sv->log, sizeof sv->log, fmt, ap);
    size_t n = strlen(sv->log);
    while (n && (sv->log[n - 1] == '\n' || sv->log[n - 1] == '.')) sv->log[--n] = 0;
    if (atomic_load(&sv->listening)) fprintf(stderr, "cabin serve: %s\n", sv->log);
    pthread_mutex_unlock(&sv->log_mu);
}

server *serve_start(const serve_opts *o, const serve_engine *e, errbuf *err) {
    if (!o->api_key && !o->no_auth && !serve_host_is_loopback(o->host)) {
        err_set(err, "--host %s is reachable from other machines: give --api-key KEY (or --no-auth to serve without one)", o->host);
        return NULL;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    int gai = getaddrinfo(o->host, port, &hints, &ai);
    if (gai) {
        err_set(err, "--host %s: %s", o->host, gai_strerror(gai));
        return NULL;
    }
    server *sv = xcalloc(1, sizeof *sv);
    pthread_mutex_init(&sv->log_mu, NULL);
    sv->o = *o;
    sv->e = *e;
    sv->started = (long)time(NULL);
    snprintf(sv->fingerprint, sizeof sv->fingerprint, "cabin-%s-%s", CABIN_VERSION, cabin_commit());
    jobs_init(&sv->q, o->queue_max, e->n_slots);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    sv->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handle, sv,
                             MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->connections_max,
                             MHD_OPTION_CONNECTION_TIMEOUT, 120u,
                             MHD_OPTION_NOTIFY_COMPLETED, completed, sv,
                             MHD_OPTION_EXTERNAL_LOGGER, mhd_log, sv,
                             MHD_OPTION_END);
    freeaddrinfo(ai);
    atomic_store(&sv->listening, sv->d != NULL);
    if (!sv->d) {
        err_set(err, "cannot listen on %s port %d: %s", o->host, o->port, sv->log[0] ? sv->log : "not an address of this machine");
        jobs_free(&sv->q);
        pthread_mutex_destroy(&sv->log_mu);
        free(sv);
        return NULL;
    }
    return sv;
}

int serve_port(const server *sv) {
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(sv->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : sv->o.port;
}

void serve_stop(server *sv) {
    if (!sv) return;
    jobs_cancel_all(&sv->q);
    MHD_stop_daemon(sv->d);
    jobs_free(&sv->q);
    pthread_mutex_destroy(&sv->log_mu);
    free(sv);
}
