// cabin serve: the model as a local OpenAI-compatible HTTP service (serve/: the HTTP face). This
// file wires the face to the assistant: a request's messages become the session's conversation,
// its reply streams out, and on the embedded model the reply's action is carried out on the
// simulated car and given back as a tool call.
#include "cli/commands.h"
#include "app/action_tools.h"
#include "app/app.h"
#include "base/mem.h"
#include "base/stopsig.h"
#include "serve/serve.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct serve_cli {
    const char *host, *api_key;
    int port, queue, max_body_kib;
    bool no_auth;
} serve_cli;

#define SO(field) offsetof(serve_cli, field)
static const opt_def SERVE_OPTS[] = {
    { "--host", NULL, OPT_STR, SO(host), "ADDR", "the address to listen on; one other than loopback needs --api-key\n"
      "or --no-auth", NULL, NULL, NULL },
    { "--port", NULL, OPT_INT, SO(port), "N", "the port (0: any free one, said on start)", NULL, NULL, NULL, OPT_RANGE(0, 65535) },
    { "--api-key", NULL, OPT_STR, SO(api_key), "KEY", "requests must carry Authorization: Bearer KEY (also\n"
      "$CABIN_API_KEY)", "none", NULL, NULL },
    { "--no-auth", NULL, OPT_FLAG, SO(no_auth), NULL, "serve an address other than loopback without a key", NULL, NULL, NULL },
    { "--queue", NULL, OPT_INT, SO(queue), "N", "requests that may wait for the model; more get 503", NULL, NULL, NULL,
      OPT_RANGE(0, 4096) },
    { "--max-body", NULL, OPT_INT, SO(max_body_kib), "KiB", "the largest request body; larger gets 413", NULL, NULL, NULL,
      OPT_RANGE(1, 1 << 20) },
};

static const cmd_spec SERVE_SPEC = {
    "cabin serve", "cabin serve [-m MODEL] [--host ADDR] [--port N] [--api-key KEY] [engine options]",
    "Serves the model over HTTP with the OpenAI API: POST /v1/chat/completions and\n"
    "/v1/completions (streamed with \"stream\": true), GET /v1/models; and GET /health,\n"
    "/metrics (Prometheus) and /v1/cabin/tools (the car's actions as tools). On the\n"
    "embedded model a reply that acts is carried out on the simulated car and returned\n"
    "as a tool call. One request runs at a time; the rest wait in order. Ctrl-C stops.\n"
    "docs/SERVE.md has the routes and examples.\n",
};

// ---- the engine behind the face ----
typedef struct serve_app {
    app_ctx c;
    sampler_params sampling;       // the server's own, put back after each request
    int max_reply;
    const char *system;            // the server's system prompt (NULL: the file's default)
    bool has_tools;                // the embedded assistant: the reply grammar and the car
    char *tools_json;
    char model_id[128];
} serve_app;

typedef struct run_state {
    serve_app *a;
    const serve_request *rq;
    const serve_output *out;
    int tokens;
    bool stopped;                  // the face asked to stop (client gone, stop sequence)
    // the assistant's reply: its action line is held until complete, then the sentence streams
    strbuf text;
    size_t sent;
    bool decided, is_action, acted, sentence_started;
    char change[512], reason[512];
    bool refused;
} run_state;

static bool plain_token(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    run_state *r = ud;
    r->tokens++;
    if (!r->out->content(r->out->ud, piece, (size_t)len)) r->stopped = true;
    return !r->stopped;
}

static void on_change(void *ud, const action *a, const char *change) {
    (void)a;
    run_state *r = ud;
    snprintf(r->change, sizeof r->change, "%s", change);
}

static void on_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    (void)a, (void)sentence;
    run_state *r = ud;
    r->refused = true;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

// The action line is complete: it is carried out (unless tool_choice is none) and said as a
// tool call, with the car's change or refusal in cabin's own field.
static void act(run_state *r, const char *line_end) {
    action a;
    char sentence[8], why[128];
    if (action_parse(r->text.s, &a, sentence, sizeof sentence, why, sizeof why) || strcmp(a.intent, "none") == 0) return;
    if (r->rq->tool_choice == SERVE_TOOLS_NONE) return;
    char desc[256], name[64];
    action_format(&a, desc, sizeof desc);
    action_tool_name(a.intent, name, sizeof name);
    const char *open = strstr(r->text.s, "<act>") + 5;
    char *line = xstrndup(open, (size_t)(line_end - open));
    const turn_hooks h = { .ud = r, .on_vehicle_change = on_change, .on_refused = on_refused };
    assistant_act_line(&r->a->c.as, line, &h);
    free(line);
    char *args = action_tool_arguments(&a);
    strbuf res = { 0 };
    strbuf_printf(&res, "{\"action\":\"%s\",\"%s\":\"", desc, r->refused ? "refused" : "vehicle");
    for (const char *p = r->refused ? r->reason : r->change; *p; p++) {   // JSON string body
        if (*p == '"' || *p == '\\') strbuf_append(&res, "\\", 1);
        if ((unsigned char)*p >= 0x20) strbuf_append(&res, p, 1);
    }
    strbuf_puts(&res, "\"}");
    r->out->tool_call(r->out->ud, name, args, strbuf_str(&res));
    r->acted = !r->refused;
    free(args);
    strbuf_free(&res);
}

// The assistant's reply as it comes: "<act>LINE</act> sentence". The line is held back until it
// closes; the sentence streams as content.
static bool assistant_token(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    run_state *r = ud;
    r->tokens++;
    strbuf_append(&r->text, piece, (size_t)len);
    const char *t = r->text.s;
    if (!r->decided) {
        const char *p = t;
        while (*p == ' ' || *p == '\n') p++;
        size_t have = strlen(p);
        if (have < 5 && strncmp(p, "<act>", have) == 0) return true;
        r->decided = true;
        r->is_action = strncmp(p, "<act>", 5) == 0;
    }
    if (r->is_action && r->sent == 0) {
        const char *close = strstr(t, "</act>");
        if (!close) return true;
        act(r, close);
        r->sent = (size_t)(close + 6 - t);
    }
    if (r->is_action && !r->sentence_started) {   // the spaces after the line are not the sentence's
        while (r->sent < r->text.len && t[r->sent] == ' ') r->sent++;
        r->sentence_started = r->sent < r->text.len;
    }
    if (r->sent < r->text.len) {
        if (!r->out->content(r->out->ud, t + r->sent, r->text.len - r->sent)) r->stopped = true;
        r->sent = r->text.len;
    }
    return !r->stopped;
}

// An assistant message of the conversation as the model wrote it: the action line, then the text.
static char *assistant_text(const serve_app *a, const serve_message *m, errbuf *err) {
    strbuf b = { 0 };
    if (a->has_tools) {
        char line[512] = "none";
        if (m->tool_name) {
            action act;
            if (action_from_tool_call(m->tool_name, m->tool_args, &act, err)) return NULL;
            action_format(&act, line, sizeof line);
        }
        strbuf_printf(&b, "<act>%s</act> ", line);
    }
    strbuf_puts(&b, m->content ? m->content : "");
    return b.s ? b.s : xstrdup("");
}

static int check_tools(const serve_app *a, const serve_request *rq, errbuf *err) {
    if ((rq->n_tools || rq->tool_choice_name) && !a->has_tools)
        return err_set(err, "tools: %s has no tools (the car's come with the embedded assistant model)", a->model_id);
    for (int i = 0; i < rq->n_tools; i++)
        if (!action_tool_known(rq->tools[i]))
            return err_set(err, "tools: '%.60s' is not one of this server's (GET /v1/cabin/tools); tools of the client's own are not supported", rq->tools[i]);
    if (rq->tool_choice == SERVE_TOOLS_REQUIRED)
        return err_set(err, "tool_choice: only auto and none are supported (the model decides whether to act)");
    return 0;
}

// The conversation before the last user turn into the cache; *last gets that turn's text.
static int load_conversation(serve_app *a, const serve_request *rq, strbuf *last, int *status, errbuf *err) {
    session *s = a->c.as.s;
    int i = 0;
    const char *system = a->system;
    if (rq->n_msgs && strcmp(rq->msgs[0].role, "system") == 0) system = rq->msgs[i++].content;
    session_set_system(s, system);
    strbuf user = { 0 };
    int rc = 0;
    for (; i < rq->n_msgs && !rc; i++) {
        const serve_message *m = &rq->msgs[i];
        if (strcmp(m->role, "user") == 0) {
            if (user.len) strbuf_puts(&user, "\n");
            strbuf_puts(&user, m->content);
        } else if (strcmp(m->role, "assistant") == 0) {
            char *reply = assistant_text(a, m, err);
            if (!reply) rc = -1, *status = 400;
            else if (session_add_turn(s, strbuf_str(&user), reply, err)) rc = -1, *status = strstr(err->msg, "context full") ? 400 : 500;
            free(reply);
            strbuf_clear(&user);
        }   // a tool message: the car's tools ran here, their result is in the conversation already
    }
    if (!rc && user.len == 0) rc = err_set(err, "messages: no user message after the last assistant message"), *status = 400;
    *last = user;
    return rc;
}

static int run_request(void *ud, const serve_request *rq, const serve_output *out, serve_result *res, errbuf *err) {
    serve_app *a = ud;
    session *s = a->c.as.s;
    session_reset(s);   // the car keeps its state: it is one car, whoever asks
    sampler_params p = a->sampling;
    if (rq->has_temperature) p.temp = (float)rq->temperature;
    if (rq->has_top_p) p.top_p = (float)rq->top_p;
    if (rq->has_top_k) p.top_k = rq->top_k;
    if (rq->has_seed) p.seed = rq->seed;
    int max = rq->max_tokens > 0 ? rq->max_tokens : a->max_reply;
    if (session_set_sampling(s, &p, max, err)) return 500;
    session_set_seed(s, p.seed);
    run_state r = { .a = a, .rq = rq, .out = out };
    int status = 0, rc = 0;
    session_stats st;
    if (rq->kind == SERVE_COMPLETION) {
        int32_t *ids = NULL;
        int n = session_tokenize(s, rq->prompt, true, &ids, err);
        free(ids);
        session_get_stats(s, &st);
        if (n < 0) status = 400;
        else if (n + 1 > st.n_ctx) status = 400, err_set(err, "the prompt is %d tokens; the context holds %d (cabin serve --ctx)", n, st.n_ctx);
        else if (session_complete(s, rq->prompt, max, plain_token, &r, err)) status = 500;
        res->prompt_tokens = n;
    } else {
        strbuf last = { 0 };
        if (check_tools(a, rq, err)) status = 400;
        else if (load_conversation(a, rq, &last, &status, err)) rc = -1;
        if (!status && !rc) {
            int n = session_turn_tokens(s, strbuf_str(&last), err);
            session_get_stats(s, &st);
            if (n < 0) status = 400;
            else if (st.n_past + n + 1 > st.n_ctx && strcmp(st.kv_policy, "none") == 0)
                status = 400, err_set(err, "the conversation is %d tokens; the context holds %d (cabin serve --ctx)", st.n_past + n, st.n_ctx);
            else if (a->has_tools ? assistant_generate(&a->c.as, strbuf_str(&last), assistant_token, &r, err)
                                  : session_chat(s, strbuf_str(&last), plain_token, &r, err))
                status = 500;
            res->prompt_tokens = n >= 0 ? st.n_past + n : 0;
        }
        if (!status && r.is_action && r.sent == 0 && r.text.len)   // the line never closed: say it as it is
            out->content(out->ud, r.text.s, r.text.len);
        strbuf_free(&last);
    }
    strbuf_free(&r.text);
    session_set_sampling(s, &a->sampling, a->max_reply, NULL);
    session_set_seed(s, a->sampling.seed);
    if (status) return status;
    res->completion_tokens = r.tokens;
    res->finish = r.acted ? SERVE_FINISH_TOOL_CALLS : r.tokens >= max && !r.stopped ? SERVE_FINISH_LENGTH : SERVE_FINISH_STOP;
    return 0;
}

static bool has_tool(void *ud, const char *name) {
    serve_app *a = ud;
    return a->has_tools && action_tool_known(name);
}

// "assets/models/cabin-tiny.gguf" -> "cabin-tiny"
static void model_id_of(const char *path, char *buf, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".gguf") == 0) len -= 5;
    snprintf(buf, n, "%.*s", (int)len, base);
}

static void on_stop_signal(void) {}

int cmd_serve(int argc, char **argv) {
    serve_opts so = serve_opts_default();
    serve_cli c = { .host = so.host, .port = so.port, .queue = so.queue_max, .max_body_kib = (int)(so.body_max >> 10) };
    run_opts r;
    run_opts_init(&r);
    opt_table own = OPT_TABLE(SERVE_OPTS, &c);
    int prc = run_opts_parse_chat(&SERVE_SPEC, &own, &r, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (!c.api_key && getenv("CABIN_API_KEY") && *getenv("CABIN_API_KEY")) c.api_key = getenv("CABIN_API_KEY");
    so.host = c.host, so.port = c.port, so.api_key = c.api_key, so.no_auth = c.no_auth;
    so.queue_max = c.queue, so.body_max = (size_t)c.max_body_kib << 10;
    if (!so.api_key && !so.no_auth && !serve_host_is_loopback(so.host)) {
        fprintf(stderr, "cabin serve: --host %s is reachable from other machines: give --api-key KEY (or --no-auth)\n", so.host);
        return 2;
    }
    errbuf err = { { 0 } };
    r.s.model_path = run_opts_model(&r);
    r.s.context_hint = "a shorter conversation, or cabin serve --ctx";
    serve_app *a = xcalloc(1, sizeof *a);
    if (app_open(&a->c, &r.s, r.free_actions, &err)) {
        fprintf(stderr, "cabin serve: %s\n", err.msg);
        free(a);
        return 1;
    }
    if (r.governor && app_governor_start(&a->c, r.governor, &err)) {
        fprintf(stderr, "cabin serve: --governor: %s\n", err.msg);
        app_close(&a->c);
        free(a);
        return 1;
    }
    a->sampling = r.s.sampling;
    a->max_reply = r.s.max_reply_tokens > 0 ? r.s.max_reply_tokens : 512;
    a->system = r.s.system_prompt;
    a->has_tools = a->c.as.grammar != NULL;
    a->tools_json = a->has_tools ? action_tools_json() : NULL;
    model_id_of(r.s.model_path, a->model_id, sizeof a->model_id);
    session_stats st;
    session_get_stats(a->c.as.s, &st);
    serve_engine e = { .ud = a, .model_id = a->model_id, .n_ctx = st.n_ctx, .run = run_request,
                       .tools_json = a->tools_json, .has_tool = has_tool };
    stopsig_catch(on_stop_signal, false);
    server *sv = serve_start(&so, &e, &err);
    int rc = 0;
    if (!sv) {
        fprintf(stderr, "cabin serve: %s\n", err.msg);
        rc = 1;
    } else {
        bool v6 = strchr(so.host, ':') != NULL;
        printf("cabin serve: http://%s%s%s:%d/v1 (model %s, context %d%s%s); Ctrl-C stops\n", v6 ? "[" : "", so.host,
               v6 ? "]" : "", serve_port(sv), a->model_id, st.n_ctx, so.api_key ? ", API key on" : "",
               a->has_tools ? ", the car's tools" : "");
        fflush(stdout);
        while (!stopsig_pending()) usleep(100 * 1000);
        serve_stop(sv);
        printf("cabin serve: stopped\n");
        fflush(stdout);
    }
    app_close(&a->c);
    free(a->tools_json);
    free(a);
    stopsig_finish();
    return rc;
}
