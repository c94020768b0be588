// The command language: one grammar and one table of commands for the workbench's `:` line,
// scene files, chat's `/` commands and tests. Each row says which front ends offer it; help
// lists, completion and checks come from the table, so a command is added in one place.
// A line is a command name and its arguments, separated by spaces; "double quotes" group (with
// \" and \\ escapes), # starts a comment outside quotes.
//   say "it's cold in here"      precision q4_0      expect reply /climate\.set/
// Parsing and validation happen before anything runs (a scene with an error does not start).
#ifndef CABIN_CMDLANG_H
#define CABIN_CMDLANG_H

#include "base/err.h"

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>

#define CMD_MAX_ARGS 16

struct app_ctx;   // what the commands act on (app/app.h)

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

// Which front ends offer a command (cmd_def.offered).
enum cmd_front_kind {
    CMD_IN_SCENE = 1,        // scene files (and `cabin scene`)
    CMD_IN_WORKBENCH = 2,    // the workbench's `:` line
    CMD_IN_CHAT = 4,         // `cabin chat`'s `/` commands
    CMD_IN_HTTP = 8,         // cabin serve's POST /v1/cabin/command
};


typedef struct cmd_def {
    const char *name;
    const char *aliases;     // other names, space-separated ("q exit"); NULL: none
    const char *usage;       // "precision SPEC"
    const char *help;        // one line
    unsigned offered;        // enum cmd_front_kind: the front ends that offer it
    int min_args, max_args;  // -1: any
    int (*validate)(cmd_line *l, errbuf *err);             // may be NULL
    // What it does on the app object: scenes, the workbench's worker thread and chat run it
    // unless the front end has its own handler (cmd_own). NULL: the front ends' own only.
    int (*run)(struct app_ctx *c, cmd_line *l, errbuf *err);
    // The words its first argument takes (`set`'s keys), appended to the help; may be NULL.
    const char *(*arg_words)(void);
} cmd_def;

// A front end's own handlers: where it runs a command its own way (the workbench runs
// `heatmap` aside and `precision` live, chat prints `stats` in its format). A command without
// one runs the row's `run`. Rows end with a NULL name.
typedef struct cmd_own {
    const char *name;
    int (*run)(void *front, cmd_line *l, errbuf *err);
} cmd_own;

// Parses one line as front end `where` offers commands (0: any). Returns 1 with *out filled, 0
// for a blank/comment line, -1 on error ("FILE:LINE: ..." in err).
int cmdlang_parse(const char *text, const char *file, int line, unsigned where, cmd_line *out, errbuf *err);
void cmdlang_free(cmd_line *l);
// Runs a parsed line on the app object.
int cmdlang_run(struct app_ctx *c, cmd_line *l, errbuf *err);
// The `file` of a line a person typed (not read from a scene): errors begin "command line:1: ",
// which cmdlang_for_person drops before a person reads them.
#define CMDLANG_TYPED "command line"
// msg without the position of a typed line ("command line:1: precision: ..." -> "precision:
// ..."): what was typed is named by the command, not by a file position. Other messages as given.
const char *cmdlang_for_person(const char *msg);
// Parses (as c->front offers) and runs one line typed by a person.
int cmdlang_exec(struct app_ctx *c, const char *text, errbuf *err);
const cmd_def *cmdlang_table(int *n);
// The row named name (or one of its aliases) that front end `where` offers (0: any); NULL none.
const cmd_def *cmdlang_find(const char *name, unsigned where);
// The front end's own handler for d, or NULL (run the row's). own: NULL-name terminated.
int (*cmdlang_own_handler(const cmd_own *own, const cmd_def *d))(void *, cmd_line *, errbuf *);
// Every own handler names a command of the table offered in `where`: 0, or -1 with err (a
// mistake in the program, caught when the front end starts).
int cmdlang_check_own(const cmd_own *own, unsigned where, errbuf *err);
// A row's help line: help, then its argument words when it has them.
const char *cmdlang_help(const cmd_def *d, char *buf, size_t n);
// A help list's rows: each command front end `where` offers (0: every one), in table order, its
// usage after prefix (":" in the workbench, "/" in chat) and its help line (cmdlang_help).
// Returns how many, at most max (CMD_MAX_ROWS holds the whole table).
#define CMD_MAX_ROWS 64
typedef struct cmd_help_row { char usage[96]; char help[256]; } cmd_help_row;
int cmdlang_help_rows(unsigned where, const char *prefix, cmd_help_row *rows, int max);
// Names starting with prefix that `where` offers, for completion; the i-th match or NULL.
const char *cmdlang_complete(const char *prefix, unsigned where, int i);
// The front end's name in messages ("scene files", "the workbench", "chat").
const char *cmdlang_front_name(unsigned where);

#endif
