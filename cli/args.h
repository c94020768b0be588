// Command-line options as tables: one table per command (and one shared by the commands that
// run a model) drives both the parsing and the --help text, so the two cannot drift apart.
//
// A table row names an option, the kind of its value and where the value goes: an offset into
// an options struct that the caller binds to the table (opt_table.base). --help prints the rows
// in order, with the default taken from the struct's value before parsing unless the row says
// it in words.
#ifndef CABIN_ARGS_H
#define CABIN_ARGS_H

#include "base/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>

typedef enum opt_kind {
    OPT_FLAG,    // no value; bool at off set true (or call(base, NULL) when call is set)
    OPT_INT,     // int
    OPT_U64,     // uint64_t, non-negative
    OPT_FLOAT,   // float
    OPT_STR,     // const char *
    OPT_LIST,    // const char *: comma-separated items, split by the command
    OPT_OUT,     // const char *: an optional FILE; "-" (or no value) means standard output
    OPT_CALL,    // a value handed to call() (repeatable options, options that set several fields)
    OPT_POS,     // a positional argument (const char *), taken in table order; name has no dash
} opt_kind;

typedef struct opt_def {
    const char *name;    // "--ctx"; for OPT_POS the placeholder in help ("MODEL.gguf")
    const char *alt;     // another spelling ("-c") or NULL
    opt_kind kind;
    size_t off;          // where the value goes: offset into the bound struct
    const char *arg;     // the value's placeholder in --help ("N", "FILE"); NULL for flags
    const char *help;    // the help text; '\n' starts a continuation line
    const char *def;     // the default in words; NULL: the field's value before parsing when it
                         // is set (non-zero number, non-NULL string); "": no default shown
    // OPT_CALL (and OPT_FLAG when set): consumes the value; 0, or -1 with a message in err
    int (*call)(void *base, const char *value, errbuf *err);
    const char *(*more)(void);   // optional: text computed at run time, on the lines after the
                                 // help ('\n' starts a continuation line)
    // Numbers (OPT_INT, OPT_U64, OPT_FLOAT) with `ranged`: the value must lie in [lo, hi] (hi may
    // be HUGE_VAL); outside it one line names the option, the value and the range, exit 2.
    // Set with OPT_RANGE after the row's other fields.
    bool ranged;
    double lo, hi;
    // Optional: called after a value in range is stored, to say once what is allowed but worth
    // a word ("-t 8: more threads than the 2 CPUs this process may use").
    void (*note)(const char *cmd, const char *opt, double value);
    // The value is a file the command will write (OPT_OUT always is): a place it cannot write
    // is refused when parsed, before any work ("-" is standard output where the row allows it).
    bool writes;
} opt_def;

#define OPT_RANGE(lo_, hi_) .ranged = true, .lo = (lo_), .hi = (hi_)
// Rows give their first ten fields in order and the rest by designator, or leave them zero
// (no range, no note): the files that hold tables include this header, so the warning about
// fields left to zero is off for them.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// The --file row of the commands that score a text (ppl, heatmap, sweep): off the field, help
// what the text is for; without it they read what eval_default_text gives (app/eval_text.h).
#define OPT_TEXT_FILE(off, help)                                                                    \
    { "--file", "-f", OPT_STR, (off), "TEXT", (help),                                               \
      "the embedded model: its held-out dialogues in its chat layout;\nanother model: a paragraph of prose", NULL, NULL }

// A table bound to the struct its offsets point into.
typedef struct opt_table {
    const opt_def *defs;
    int n;
    void *base;
} opt_table;

#define OPT_TABLE(defs, base) ((opt_table){ (defs), (int)(sizeof(defs) / sizeof((defs)[0])), (base) })

typedef struct cmd_spec {
    const char *cmd;      // for messages: "cabin ppl"
    const char *usage;    // the usage line after "usage: "
    const char *about;    // what the command does, before the options (ends with '\n')
} cmd_spec;

enum { OPTS_OK = 0, OPTS_DONE = -1, OPTS_USAGE = 2 };

// Parses argv[1..argc) against the tables (searched in order). -h/--help prints the help and
// returns OPTS_DONE, as does --help-options (the spellings, one per line, for scripts).
// Errors (unknown option, missing value, bad number, an unexpected argument) print one line
// naming the command and the option and return OPTS_USAGE.
int opts_parse(const cmd_spec *c, const opt_table *tables, int n_tables, int argc, char **argv);
void opts_help(FILE *f, const cmd_spec *c, const opt_table *tables, int n_tables);

// Splits a comma list into at most max malloc'd items (empty items dropped); returns the count.
int opts_split_list(const char *s, char **out, int max);
void opts_free_list(char **items, int n);

// --json [FILE]: opens FILE for writing, or gives stdout for "-"; NULL with err on failure. The
// file is written whole or not at all (base/afile.h): a failed write leaves the old one as it was.
FILE *opts_open_out(const char *path, errbuf *err);
// Closes what opts_open_out gave (stdout is flushed, not closed) and puts the file in place; -1
// with err on a write error.
int opts_close_out(FILE *f, const char *path, errbuf *err);
static inline bool opts_out_is_stdout(const char *path) { return path && path[0] == '-' && !path[1]; }

#endif
