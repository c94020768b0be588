// The cabin commands. Each takes its own argv (argv[0] is the command name) and returns an exit
// status: 0 ok, 1 runtime failure, 2 usage error.
#ifndef CABIN_COMMANDS_H
#define CABIN_COMMANDS_H

#include "cli/args.h"
#include "engine/session.h"

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_make_model(int argc, char **argv);
int cmd_ppl(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_scene(int argc, char **argv);
int cmd_eval_assistant(int argc, char **argv);
int cmd_power(int argc, char **argv);
int cmd_heatmap(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_voice(int argc, char **argv);
int cmd_audio(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_workbench(int argc, char **argv);
int cmd_gui(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#define CABIN_DEFAULT_MODEL "assets/models/cabin-tiny.gguf"

// Options shared by every command that runs a model.
typedef struct run_opts {
    session_opts s;
    const char *model;
    bool free_actions;   // --free-actions: no grammar on the assistant's action lines
    const char *governor;   // --governor SPEC (chat, voice, scene, workbench): NULL off
} run_opts;

void run_opts_init(run_opts *r);
// The shared table (-m, -t, --backend, --ctx, --temp, ...) bound to r.
opt_table run_opts_table(run_opts *r);
// Parses argv against a command's own table, then the shared one: OPTS_OK, OPTS_DONE (help
// printed) or OPTS_USAGE (an error line printed).
int run_opts_parse_with(const cmd_spec *c, const opt_table *own, run_opts *r, int argc, char **argv);
// -n, --n-predict N (most tokens per reply), for the commands that chat.
opt_table run_opts_reply_table(run_opts *r);
// --governor SPEC, for the commands that hold a conversation.
opt_table run_opts_governor_table(run_opts *r);
// As run_opts_parse_with, with -n and --governor between the command's table and the shared one.
int run_opts_parse_chat(const cmd_spec *c, const opt_table *own, run_opts *r, int argc, char **argv);
// The model path to use: -m, else $CABIN_MODEL, else the embedded default.
const char *run_opts_model(const run_opts *r);
// The note of the -t rows: more threads than the CPUs this process may use is allowed (a test of
// oversubscription) and said once, on stderr.
void note_threads(const char *cmd, const char *opt, double value);

#endif
