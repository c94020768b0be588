// What answers cabin serve's requests (cli/serve_app.c): the assistant on one session. A
// request's messages become the session's conversation, its reply streams out, and on the
// embedded model the reply's action is carried out on the simulated car and given back as a tool
// call (the serve_engine functions of serve/serve.h).
#ifndef CABIN_CLI_SERVE_APP_H
#define CABIN_CLI_SERVE_APP_H

#include "app/app.h"
#include "serve/serve.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct serve_app {
    app_ctx c;
    sampler_params sampling;       // the server's own, put back after each request
    int max_reply;
    bool prompt_cache;             // keep the cache between requests (session_restart)
    const char *system;            // the server's system prompt (NULL: the file's default)
    bool has_tools;                // the embedded assistant: the reply grammar and the car
    char *tools_json;
    char model_id[128];
    struct json_vocab *vocab;      // the vocabulary as structured output reads it (made at first use)
    pthread_mutex_t state_mu;      // guards state: GET /v1/cabin/state reads it while a request runs
    char *state;                   // the figures and the car after the last request or command
    char *metrics;                 // the same figures as Prometheus lines
} serve_app;

int serve_app_run(void *ud, const serve_request *rq, const serve_output *out, serve_result *res, errbuf *err);
int serve_app_command(void *ud, const char *line, char **output, errbuf *err);
char *serve_app_state(void *ud);
void serve_app_metrics(void *ud, strbuf *out);
bool serve_app_has_tool(void *ud, const char *name);
// The id a model is served as: its file's name without .gguf ("assets/models/cabin-tiny.gguf" ->
// "cabin-tiny").
void serve_model_id(const char *path, char *buf, size_t n);
// Remakes what serve_app_state gives (called in the slot, and once before serving).
void serve_app_update_state(serve_app *a);

#endif
