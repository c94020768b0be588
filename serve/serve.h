// cabin serve: the HTTP face. An OpenAI-compatible API (chat completions, completions, models;
// streamed as server-sent events) and cabin's own routes (/health, /metrics), on libmicrohttpd.
// This layer knows HTTP and the API's JSON, nothing of the engine: what answers a request is a
// serve_engine the command wires in (cli/cmd_serve.c), so the same face can serve a standalone
// session or, later, the workbench's. docs/SERVE.md is the reference.
#ifndef CABIN_SERVE_H
#define CABIN_SERVE_H

#include "base/err.h"
#include "base/str.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_MAX_STOP 4          // stop sequences a request may give (as OpenAI's API)
#define SERVE_MAX_STOP_BYTES 256  // bytes of one stop sequence

typedef enum serve_kind { SERVE_CHAT, SERVE_COMPLETION } serve_kind;
typedef enum serve_format { SERVE_FORMAT_TEXT, SERVE_FORMAT_JSON_OBJECT, SERVE_FORMAT_SCHEMA } serve_format;
typedef enum serve_tool_choice { SERVE_TOOLS_AUTO, SERVE_TOOLS_NONE, SERVE_TOOLS_REQUIRED } serve_tool_choice;

// One message of a chat request. role: "system" ("developer" is read as it), "user",
// "assistant" or "tool". An assistant message that called a tool has tool_name and tool_args (its
// arguments, JSON text) and content NULL or its text.
typedef struct serve_message {
    char *role;
    char *content;
    char *tool_name;
    char *tool_args;
} serve_message;

// A request as decoded (serve_request_parse): every field the API allows and cabin honours;
// has_* says whether the client gave it.
typedef struct serve_request {
    serve_kind kind;
    char *model;                   // NULL: not given
    serve_message *msgs;           // chat
    int n_msgs;
    char *prompt;                  // completion
    int max_tokens;                // 0: not given
    bool has_temperature, has_top_p, has_top_k, has_seed;
    double temperature, top_p;
    int top_k;
    uint64_t seed;
    char *stop[SERVE_MAX_STOP];
    int n_stop;
    bool stream, include_usage;    // stream_options.include_usage: a last chunk with the counts
    serve_tool_choice tool_choice;
    char *tool_choice_name;        // tool_choice {"type": "function", "function": {"name": N}}
    char **tools;                  // the names of the tools the client offered
    int n_tools;
    char *tools_json;              // and the whole "tools" array (JSON text)
    int32_t *bias_ids;             // logit_bias: n_bias token ids and what is added to their logits
    float *bias;                   // (-100 to 100)
    int n_bias;
    serve_format format;           // response_format
    char *json_schema;             // SERVE_FORMAT_SCHEMA: the schema (JSON text)
} serve_request;

// Decodes a request body. 0, or -1 with a one-line reason for the client (a 400): malformed
// JSON, a field of the wrong type or range, a field cabin does not support (named), a chat with
// no user message last. Never reads past len; out is always safe to free.
int serve_request_parse(const char *body, size_t len, serve_kind kind, serve_request *out, errbuf *err);
void serve_request_free(serve_request *r);

typedef enum serve_finish { SERVE_FINISH_STOP, SERVE_FINISH_LENGTH, SERVE_FINISH_TOOL_CALLS } serve_finish;

// Where a running request sends what it makes, as it makes it.
typedef struct serve_output {
    void *ud;
    // A piece of the reply's text (bytes, may end inside a UTF-8 character). false: stop
    // generating (the client went away, or a stop sequence was met).
    bool (*content)(void *ud, const char *piece, size_t len);
    // The reply called a tool: its name and arguments (JSON text); `result` what it did, as
    // JSON text (cabin's own field; NULL: nothing to say).
    void (*tool_call)(void *ud, const char *name, const char *arguments, const char *result);
    // Whether the client is still there (an engine that queues the request again asks before it
    // begins: one gone is dropped unsaid).
    bool (*alive)(void *ud);
} serve_output;

typedef struct serve_result {
    int prompt_tokens, completion_tokens;
    int cached_tokens;             // of the prompt tokens, those the server's prompt cache held
    serve_finish finish;
    double grammar_ms_per_token;   // structured output: the token mask's cost (0: none)
} serve_result;

// What answers requests. run is called for one request at a time per slot, slots side by side
// on threads of their own (the face queues the rest). It returns 0, or an HTTP status with err:
// 400 the request cannot run as asked (longer than the context, tools the model does not have),
// 500 the engine failed.
typedef struct serve_engine {
    void *ud;
    const char *model_id;          // the name /v1/models gives, and a request's "model" must match
    int n_ctx;
    int n_slots;                   // conversations it generates side by side (0: 1)
    int (*run)(void *ud, int slot, const serve_request *rq, const serve_output *out, serve_result *res, errbuf *err);
    // Which of the free slots (free_slot[i]) a request should take: the one whose cache holds
    // most of its conversation. NULL, or an answer not free: the first free.
    int (*pick_slot)(void *ud, const serve_request *rq, const bool *free_slot, int n_slots);
    // The tools the model can call, as the API's "tools" array (JSON text), or NULL: none.
    const char *tools_json;
    bool (*has_tool)(void *ud, const char *name);
    // POST /v1/cabin/command: one line of the command language, run when every slot is free;
    // *output (malloc'd) what it printed. 0, or an HTTP status with err (400: the line is bad).
    // NULL: the route answers 404.
    int (*command)(void *ud, const char *line, char **output, errbuf *err);
    // GET /v1/cabin/state: the figures and the car as JSON text (malloc'd), made without
    // waiting for a slot. NULL: the route answers 404.
    char *(*state)(void *ud);
    // GET /metrics: the engine's own lines in the Prometheus text format (appended to out), made
    // without waiting for a slot. NULL: none.
    void (*metrics)(void *ud, strbuf *out);
} serve_engine;

typedef struct serve_opts {
    const char *host;              // address to bind (default 127.0.0.1)
    int port;                      // 0: any free port (serve_port says which)
    const char *api_key;           // NULL: none asked (only on loopback, or with no_auth)
    bool no_auth;
    int queue_max;                 // requests waiting for a slot beyond which 503 (default 16)
    size_t body_max;               // bytes of a request body beyond which 413 (default 1 MiB)
    int connections_max;           // open connections (default 64)
} serve_opts;

serve_opts serve_opts_default(void);

typedef struct server server;

// Binds and starts answering on its own threads. NULL with err on failure (the address in use,
// a non-loopback address without a key or --no-auth, ...).
server *serve_start(const serve_opts *o, const serve_engine *e, errbuf *err);
int serve_port(const server *s);
// Stops accepting, cancels what runs, and frees.
void serve_stop(server *s);

// Whether host names a loopback address (127.0.0.0/8, ::1, localhost).
bool serve_host_is_loopback(const char *host);

// ---- pieces exposed for tests and the fuzz target ----

// Stop sequences over a stream of text: text is passed on as soon as no stop sequence can begin
// in it; the stop sequence complete first (the earliest end; at one end, the earliest start) ends
// the stream where it begins (it and what follows are dropped), however the text is cut in pieces.
typedef struct stop_filter {
    char *const *stop;
    int n_stop;
    char *held;                    // text that may be the beginning of a stop sequence
    size_t n_held, cap;
    bool stopped;
} stop_filter;
void stop_filter_init(stop_filter *f, char *const *stop, int n_stop);
// Feeds a piece; emit gets what may be sent now. Returns false once a stop sequence was met.
bool stop_filter_feed(stop_filter *f, const char *piece, size_t len, void (*emit)(void *ud, const char *s, size_t n), void *ud);
// End of the stream: what is held is sent.
void stop_filter_flush(stop_filter *f, void (*emit)(void *ud, const char *s, size_t n), void *ud);
void stop_filter_free(stop_filter *f);

#endif
