// What answers cabin serve's requests (cli/serve_app.c): the assistant on one session per slot. A
// request's messages become its slot's conversation, its reply streams out, and on the
// embedded model the reply's action is carried out on the simulated car and given back as a tool
// call (the serve_engine functions of serve/serve.h).
#ifndef CABIN_CLI_SERVE_APP_H
#define CABIN_CLI_SERVE_APP_H

#include "app/app.h"
#include "engine/tool_call.h"
#include "serve/serve.h"

#include <pthread.h>
#include <stdbool.h>

// A slot: an assistant on the model (slot 0: the app's own; the others beside it, on the same
// weights and car), and what its cache holds.
typedef struct serve_slot {
    assistant *as;
    assistant own;                 // slots after the first: opened by assistant_open_sibling
    uint64_t *conv;                // the messages of the last request it ran, hashed (pick_slot)
    int n_conv;
    unsigned long last_used;       // when it was last taken (a count): ties go to the oldest
    uint64_t kv_bytes;             // its cache's bytes (/metrics sums them)
    int shared_passes;             // its decode steps that shared a pass with other slots' (summed)
} serve_slot;

typedef struct serve_app {
    app_ctx c;
    serve_slot *slots;             // n_slots, the first on c.as
    int n_slots;
    unsigned long picks;
    sampler_params sampling;       // the server's own, put back after each request
    int max_reply;
    bool prompt_cache;             // keep the cache between requests (session_restart)
    const char *system;            // the server's system prompt (NULL: the file's default)
    bool has_tools;                // the embedded assistant: the reply grammar and the car
    char *tools_json;
    bool has_call_tags;            // another model that writes its calls in tags of its own (tool_call.h):
    tool_call_tags call_tags;      // the client's tools with tool_choice auto
    char model_id[128];
    struct json_vocab *vocab;      // the vocabulary as structured output reads it (made at first use)
    pthread_mutex_t vocab_mu;
    pthread_mutex_t state_mu;      // guards state: GET /v1/cabin/state reads it while a request runs
    char *state;                   // the figures and the car after the last request or command
    char *metrics;                 // the same figures as Prometheus lines
} serve_app;

// Opens the slots after the first (n in all; 1: none more). -1 with err.
int serve_app_open_slots(serve_app *a, int n, errbuf *err);
void serve_app_close_slots(serve_app *a);
int serve_app_run(void *ud, int slot, const serve_request *rq, const serve_output *out, serve_result *res, errbuf *err);
int serve_app_pick_slot(void *ud, const serve_request *rq, const bool *free_slot, int n_slots);
int serve_app_command(void *ud, const char *line, char **output, errbuf *err);
char *serve_app_state(void *ud);
void serve_app_metrics(void *ud, strbuf *out);
bool serve_app_has_tool(void *ud, const char *name);
// The id a model is served as: its file's name without .gguf ("assets/models/cabin-tiny.gguf" ->
// "cabin-tiny").
void serve_model_id(const char *path, char *buf, size_t n);
// /v1/cabin/state's object (cJSON) from a session's figures: the model, the slots and the one
// the figures are of, the last turn, the cache, the precision by type, the governor on or off, the
// resident memory and every field of the car (NULL: none).
struct cJSON *serve_state_object(const char *model_id, int n_slots, int slot, const session_stats *st, bool governor,
                                 const vehicle *car);
// Remakes what serve_app_state gives from a slot's session (called in the slot after each
// request, after a command, and once before serving).
void serve_app_update_state(serve_app *a, int slot);

#endif
