// The workbench's HTTP face (cli/workbench_serve.h): cabin serve's routes (serve/) answered by
// turns of the workbench's conversation, on its worker.
#include "cli/workbench_serve.h"
#include "app/action_tools.h"
#include "app/cmdlang.h"
#include "base/mem.h"
#include "cli/serve_app.h"
#include "serve/serve.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct workbench_serve {
    int port;
    char model_id[128];
    ui_session *s;
    server *sv;
    serve_engine e;
    char *tools_json;              // the car's tools (the embedded assistant), else NULL
    char label[96];                // said in the conversation before a request's turn
    char command_label[96];        // and before a command's output
};

// One request's turn as the worker tells it (on the worker thread).
typedef struct remote_turn {
    const serve_output *out;
    bool split_action;             // the reply may begin with an action line (the car's tools)
    reply_split split;
    int tokens, max;
    bool length, stopped;
    action_call call;              // the car's action, told by the worker's action hooks
} remote_turn;

static bool send_text(void *ud, const char *s, size_t n) {
    remote_turn *t = ud;
    if (!t->out->content(t->out->ud, s, n)) t->stopped = true;
    return !t->stopped;
}

// A piece of the reply: the sentence goes to the client (the action line comes through the
// action hooks once the turn acts); false stops the turn (the client went away, a stop sequence,
// max_tokens).
static bool on_piece(void *ud, const char *p, int len) {
    remote_turn *t = ud;
    if (t->stopped) return false;
    t->tokens++;
    bool go = t->split_action ? reply_split_feed(&t->split, p, (size_t)len, NULL, send_text, t) : send_text(t, p, (size_t)len);
    if (go && t->tokens >= t->max) {
        t->length = true;
        return false;
    }
    return go;
}

// The client left while its turn waited behind the person's: the turn is dropped unsaid.
static bool client_gone(void *ud) {
    const remote_turn *t = ud;
    return t->out->alive && !t->out->alive(t->out->ud);
}

static void on_action(void *ud, const action *a, const char *desc) { action_call_on_action(&((remote_turn *)ud)->call, a, desc); }
static void on_change(void *ud, const action *a, const char *change) { action_call_on_change(&((remote_turn *)ud)->call, a, change); }
static void on_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    action_call_on_refused(&((remote_turn *)ud)->call, a, reason, sentence);
}

// What a request asks that a turn of the workbench cannot give: a 400 naming it.
static int refuse_fields(const workbench_serve *ws, const serve_request *rq, errbuf *err) {
    if (rq->kind != SERVE_CHAT)
        return err_set(err, "the workbench serves chat turns; raw completions are cabin serve's");
    if (rq->format != SERVE_FORMAT_TEXT)
        return err_set(err, "response_format: the workbench's turns are its assistant's replies; structured output is cabin serve's");
    const char *f = rq->has_temperature ? "temperature" : rq->has_top_p ? "top_p" : rq->has_top_k ? "top_k" : rq->has_seed ? "seed"
                  : rq->n_bias ? "logit_bias" : NULL;
    if (f) return err_set(err, "%s: the workbench's turns sample as the workbench does (cabin serve takes it)", f);
    if (rq->tool_choice != SERVE_TOOLS_AUTO || rq->tool_choice_name)
        return err_set(err, "tool_choice: the workbench's turns act on its car as the model decides (auto only)");
    for (int i = 0; i < rq->n_tools; i++)
        if (!ws->tools_json || !action_tool_known(rq->tools[i]))
            return err_set(err, "tools: '%.60s' is not one of this server's (GET /v1/cabin/tools)", rq->tools[i]);
    return 0;
}

static int run(void *ud, int slot, const serve_request *rq, const serve_output *out, serve_result *res, errbuf *err) {
    (void)slot;   // one: the workbench's session
    workbench_serve *ws = ud;
    if (refuse_fields(ws, rq, err)) return 400;
    const char *text = rq->msgs[rq->n_msgs - 1].content;   // the decoder ends a chat on a user message
    remote_turn t = { .out = out, .split_action = ws->tools_json != NULL, .max = rq->max_tokens > 0 ? rq->max_tokens : INT_MAX };
    const worker_sink sink = { .ud = &t, .piece = on_piece, .action = on_action, .change = on_change,
                               .refused = on_refused, .label = ws->label, .gone = client_gone };
    session_stats st;
    int rc = worker_say_remote(ws->s->w, text, &sink, &st);
    int status = 0;
    if (rc == -2) status = 503, err_set(err, "the workbench is closing");
    else if (rc == -3) status = 499, err_set(err, "the client went away before its turn");
    else if (rc) status = 500, err_set(err, "the turn failed (the workbench's conversation says why)");
    if (!status) {
        if (t.split_action) reply_split_finish(&t.split, send_text, &t);
        bool acted = false;
        if (t.call.args) {
            char *result = action_call_result(&t.call);
            out->tool_call(out->ud, t.call.name, t.call.args, result);
            free(result);
            acted = !t.call.refused;
        }
        res->completion_tokens = t.tokens;
        // the context the reply was written after: the workbench's conversation, of which only
        // this turn's tokens were new
        res->prompt_tokens = st.n_past - st.gen_tokens > st.prompt_tokens ? st.n_past - st.gen_tokens : st.prompt_tokens;
        res->cached_tokens = res->prompt_tokens - st.prompt_tokens;
        res->finish = acted ? SERVE_FINISH_TOOL_CALLS : t.length ? SERVE_FINISH_LENGTH : SERVE_FINISH_STOP;
    }
    reply_split_free(&t.split);
    action_call_free(&t.call);
    return status;
}

// GET /v1/cabin/state: the snapshot the panels draw from, as cabin serve gives its own (the car
// read as it is: its functions take a lock).
static char *state(void *ud) {
    workbench_serve *ws = ud;
    ui_snapshot *snap = xcalloc(1, sizeof *snap);
    worker_peek(ws->s->w, snap);
    cJSON *root = serve_state_object(ws->model_id, 1, 0, &snap->st, snap->governor[0] != 0, ws->s->c.as.car);
    cJSON_AddStringToObject(root, "plan", snap->plan_name);
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(snap);
    char *out = xstrdup(js ? js : "{}");
    cJSON_free(js);
    return out;
}

// POST /v1/cabin/command: the line runs on the workbench's worker, shown in its conversation.
static int command(void *ud, const char *line, char **output, errbuf *err) {
    workbench_serve *ws = ud;
    int rc = worker_exec_remote(ws->s->w, line, ws->command_label, output, err);
    if (rc == 0) return 0;
    if (rc == -2) return 503;
    char msg[ERR_LINE];
    snprintf(msg, sizeof msg, "%s", cmdlang_for_person(err->msg));
    err_set(err, "%s", msg);
    return 400;
}

static bool has_tool(void *ud, const char *name) {
    const workbench_serve *ws = ud;
    return ws->tools_json && action_tool_known(name);
}

workbench_serve *workbench_serve_new(int port, const char *model_path) {
    workbench_serve *ws = xcalloc(1, sizeof *ws);
    ws->port = port;
    serve_model_id(model_path, ws->model_id, sizeof ws->model_id);
    return ws;
}

int workbench_serve_attach(ui_session *s, void *ud, errbuf *err) {
    workbench_serve *ws = ud;
    ws->s = s;
    ws->tools_json = s->c.as.grammar ? action_tools_json() : NULL;
    session_stats st;
    session_get_stats(s->c.as.s, &st);
    ws->e = (serve_engine){ .ud = ws, .model_id = ws->model_id, .n_ctx = st.n_ctx, .run = run,
                            .tools_json = ws->tools_json, .has_tool = has_tool, .state = state,
                            .command = command };
    serve_opts so = serve_opts_default();
    so.port = ws->port;
    ws->sv = serve_start(&so, &ws->e, err);
    if (!ws->sv) return err_prefix(err, "--serve %d", ws->port);
    snprintf(ws->label, sizeof ws->label, "an app asks over HTTP (port %d):", serve_port(ws->sv));
    snprintf(ws->command_label, sizeof ws->command_label, "an app runs a command over HTTP (port %d):", serve_port(ws->sv));
    char line[400];
    snprintf(line, sizeof line, "serving the OpenAI API at http://%s:%d/v1 (model %s): its requests are turns of this conversation",
             so.host, serve_port(ws->sv), ws->model_id);
    chat_add(&s->chat, MSG_INFO, line);
    return 0;
}

void workbench_serve_detach(ui_session *s, void *ud) {
    (void)s;
    workbench_serve *ws = ud;
    serve_stop(ws->sv);
    ws->sv = NULL;
}

void workbench_serve_free(workbench_serve *ws) {
    if (!ws) return;
    free(ws->tools_json);
    free(ws);
}
