// The command language: one grammar and one table of commands for the workbench's `:` line,
// scene files and tests. A line is a command name and its arguments, separated by spaces;
// "double quotes" group (with \" and \\ escapes), # starts a comment outside quotes.
//   say "it's cold in here"      precision q4_0      expect reply /climate\.set/
// Parsing and validation happen before anything runs (a scene with an error does not start).
#ifndef CABIN_CMDLANG_H
#define CABIN_CMDLANG_H

#include "app/assistant.h"
#include "engine/session.h"

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>

#define CMD_MAX_ARGS 16

typedef struct cmd_line {
    const char *file;        // where it came from (for messages): a scene path or "command line"
    int line;
    const struct cmd_def *def;
    int argc;                // arguments after the command name
    char *argv[CMD_MAX_ARGS];
    char *rest;              // the raw text after the name (for say/note), trimmed
    // validated forms
    regex_t re;              // expect reply /RE/
    bool has_re;
    double number;           // wait MS, seed N, expect metric value
    char op;                 // expect metric: '<', '>', '='
} cmd_line;

// What the commands act on. Front ends fill the hooks they have (NULL = not available here).
typedef struct app_ctx {
    session *s;
    session_opts opts;       // how the session was opened (model path, backend, ...)
    char *model_path;
    vehicle *car;
    struct action_grammar *grammar;   // constrains the model's action lines (NULL: none)
    bool free_actions;       // set before app_open: no grammar (--free-actions)
    char *last_reply;        // text of the last assistant reply
    char *transcript;        // everything the run printed (for snapshot); grows
    size_t transcript_len, transcript_cap;
    double t0;               // run start (timestamps)
    double speed;            // demo pacing: 1 = human pace for `say`, 0 = instant
    bool check;              // stop at the first failed expectation
    int passed, failed;
    bool quit;
    FILE *out;               // where the transcript is printed (NULL: nowhere)
    bool timestamps;         // prefix lines with [seconds]
    struct sensitivity_map *heatmap;   // the last `heatmap` run (NULL: none)
    // front-end hooks
    void (*on_token)(struct app_ctx *c, const char *piece, int len);   // streamed reply text
    int (*snapshot)(struct app_ctx *c, const char *path, errbuf *err); // screen as text
} app_ctx;

typedef struct cmd_def {
    const char *name;
    const char *usage;       // "precision SPEC"
    const char *help;        // one line
    int min_args, max_args;  // -1: any
    int (*validate)(cmd_line *l, errbuf *err);             // may be NULL
    int (*run)(app_ctx *c, cmd_line *l, errbuf *err);
} cmd_def;

// Parses one line. Returns 1 with *out filled, 0 for a blank/comment line, -1 on error
// ("FILE:LINE: ..." in err).
int cmdlang_parse(const char *text, const char *file, int line, cmd_line *out, errbuf *err);
void cmdlang_free(cmd_line *l);
// Runs a parsed line.
int cmdlang_run(app_ctx *c, cmd_line *l, errbuf *err);
// Parses and runs one line typed by a person (the `:` line); errors name "command line".
int cmdlang_exec(app_ctx *c, const char *text, errbuf *err);
const cmd_def *cmdlang_table(int *n);
// Names starting with prefix, for completion; returns the i-th match or NULL.
const char *cmdlang_complete(const char *prefix, int i);

// Application state helpers shared by front ends.
int app_open(app_ctx *c, const session_opts *o, errbuf *err);
void app_close(app_ctx *c);
// Prints (and records in the transcript) one line: "[  1.234] text" when timestamps are on.
void app_print(app_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// One user turn through the assistant: reply streamed to on_token, action applied to the car.
int app_say(app_ctx *c, const char *text, errbuf *err);
// A metric by name from the session stats (decode_tps, prefill_tps, ttft_ms, kv_bytes,
// weight_bytes, prompt_tokens, gen_tokens, n_past, turns); -1 if unknown.
int app_metric(app_ctx *c, const char *name, double *out);
const char *app_metric_names(void);

#endif
