// cabin serve: the model as a local OpenAI-compatible HTTP service (serve/: the HTTP face). This
// file wires the face to the assistant: a request's messages become the session's conversation,
// its reply streams out, and on the embedded model the reply's action is carried out on the
// simulated car and given back as a tool call.
#include "cli/commands.h"
#include "app/action_tools.h"
#include "app/cmdlang.h"
#include "base/mem.h"
#include "base/stopsig.h"
#include "cli/serve_app.h"
#include "engine/json_schema.h"
#include "engine/model.h"
#include "serve/jobs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct serve_cli {
    const char *host, *api_key;
    int port, queue, max_body_kib, slots;
    bool no_auth, no_commands, no_prompt_cache;
} serve_cli;

#define SO(field) offsetof(serve_cli, field)
static const opt_def SERVE_OPTS[] = {
    { "--host", NULL, OPT_STR, SO(host), "ADDR", "the address to listen on; one other than loopback needs --api-key\n"
      "or --no-auth", NULL, NULL, NULL },
    { "--port", NULL, OPT_INT, SO(port), "N", "the port (0: any free one, said on start)", NULL, NULL, NULL, OPT_RANGE(0, 65535) },
    { "--api-key", NULL, OPT_STR, SO(api_key), "KEY", "requests must carry Authorization: Bearer KEY (also\n"
      "$CABIN_API_KEY)", "none", NULL, NULL },
    { "--no-auth", NULL, OPT_FLAG, SO(no_auth), NULL, "serve an address other than loopback without a key", NULL, NULL, NULL },
    { "--no-commands", NULL, OPT_FLAG, SO(no_commands), NULL, "refuse POST /v1/cabin/command (a command may read and write\n"
      "files as the server's user: plan save, heatmap, compare FILE)", NULL, NULL, NULL },
    { "--no-prompt-cache", NULL, OPT_FLAG, SO(no_prompt_cache), NULL, "compute every request's conversation from the start, not\n"
      "taking what the cache holds of it from the request before", NULL, NULL, NULL },
    { "--slots", NULL, OPT_INT, SO(slots), "N", "conversations generated side by side, each with its own cache on\n"
      "the one model (cpu backend; the slots decoding at once share\nforward passes)", NULL, NULL, NULL, OPT_RANGE(1, JOBS_MAX_SLOTS) },
    { "--queue", NULL, OPT_INT, SO(queue), "N", "requests that may wait for a slot; more get 503", NULL, NULL, NULL,
      OPT_RANGE(0, 4096) },
    { "--max-body", NULL, OPT_INT, SO(max_body_kib), "KiB", "the largest request body; larger gets 413", NULL, NULL, NULL,
      OPT_RANGE(1, 1 << 20) },
};

static const cmd_spec SERVE_SPEC = {
    "cabin serve", "cabin serve [-m MODEL] [--host ADDR] [--port N] [--api-key KEY] [engine options]",
    "Serves the model over HTTP with the OpenAI API: POST /v1/chat/completions and\n"
    "/v1/completions (streamed with \"stream\": true), GET /v1/models; and GET /health,\n"
    "/metrics (Prometheus), /v1/cabin/tools (the car's actions as tools) and\n"
    "/v1/cabin/state, and POST /v1/cabin/command (a line of the command language). On the\n"
    "embedded model a reply that acts is carried out on the simulated car and returned\n"
    "as a tool call; a model that writes <tool_call> tags (Qwen, Hermes) calls the\n"
    "client's tools when it decides to. --slots N requests run side by side (default 1);\n"
    "the rest wait in order. Ctrl-C stops.\n"
    "docs/SERVE.md has the routes and examples.\n",
};

static void on_stop_signal(void) {}

int cmd_serve(int argc, char **argv) {
    serve_opts so = serve_opts_default();
    serve_cli c = { .host = so.host, .port = so.port, .queue = so.queue_max, .max_body_kib = (int)(so.body_max >> 10), .slots = 1 };
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
    if (r.governor && c.slots > 1) {
        fprintf(stderr, "cabin serve: --governor paces one generation: it needs --slots 1 (not %d)\n", c.slots);
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
    if ((r.governor && app_governor_start(&a->c, r.governor, &err)) || serve_app_open_slots(a, c.slots, &err)) {
        fprintf(stderr, "cabin serve: %s%s\n", r.governor ? "--governor: " : "", err.msg);
        serve_app_close_slots(a);
        app_close(&a->c);
        free(a);
        return 1;
    }
    a->sampling = r.s.sampling;
    a->max_reply = r.s.max_reply_tokens > 0 ? r.s.max_reply_tokens : 512;
    a->prompt_cache = !c.no_prompt_cache;
    a->system = r.s.system_prompt;
    a->has_tools = a->c.as.grammar != NULL;
    a->tools_json = a->has_tools ? action_tools_json() : NULL;
    a->has_call_tags = !a->has_tools && tool_call_tags_of(session_model(a->c.as.s)->tok, &a->call_tags);
    serve_model_id(r.s.model_path, a->model_id, sizeof a->model_id);
    session_stats st;
    session_get_stats(a->c.as.s, &st);
    pthread_mutex_init(&a->state_mu, NULL);
    pthread_mutex_init(&a->vocab_mu, NULL);
    a->c.front = CMD_IN_HTTP;
    for (int i = 0; i < a->n_slots; i++) serve_app_update_state(a, i);
    serve_engine e = { .ud = a, .model_id = a->model_id, .n_ctx = st.n_ctx, .n_slots = a->n_slots, .run = serve_app_run,
                       .pick_slot = serve_app_pick_slot,
                       .tools_json = a->tools_json, .has_tool = serve_app_has_tool, .state = serve_app_state, .metrics = serve_app_metrics,
                       .command = c.no_commands ? NULL : serve_app_command };
    stopsig_catch(on_stop_signal, false);
    server *sv = serve_start(&so, &e, &err);
    int rc = 0;
    if (!sv) {
        fprintf(stderr, "cabin serve: %s\n", err.msg);
        rc = 1;
    } else {
        bool v6 = strchr(so.host, ':') != NULL;
        char slots[32] = "";
        if (a->n_slots > 1) snprintf(slots, sizeof slots, ", %d slots", a->n_slots);
        printf("cabin serve: http://%s%s%s:%d/v1 (model %s, context %d%s%s%s); Ctrl-C stops\n", v6 ? "[" : "", so.host,
               v6 ? "]" : "", serve_port(sv), a->model_id, st.n_ctx, slots, so.api_key ? ", API key on" : "",
               a->has_tools ? ", the car's tools" : a->has_call_tags ? ", tool calls in <tool_call> tags" : "");
        fflush(stdout);
        while (!stopsig_pending()) usleep(100 * 1000);
        serve_stop(sv);
        printf("cabin serve: stopped\n");
        fflush(stdout);
    }
    serve_app_close_slots(a);
    app_close(&a->c);
    free(a->tools_json);
    free(a->state);
    free(a->metrics);
    json_vocab_free(a->vocab);
    pthread_mutex_destroy(&a->state_mu);
    pthread_mutex_destroy(&a->vocab_mu);
    free(a);
    stopsig_finish();
    return rc;
}
