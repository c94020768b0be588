// What each command of the command language does on the app object (app/app.c); the table
// is in cmdlang.c.
#ifndef CABIN_CMDLANG_RUN_H
#define CABIN_CMDLANG_RUN_H

#include "app/cmdlang.h"

int run_model(app_ctx *c, cmd_line *l, errbuf *err);
int run_backend(app_ctx *c, cmd_line *l, errbuf *err);
int run_precision(app_ctx *c, cmd_line *l, errbuf *err);
int run_plan(app_ctx *c, cmd_line *l, errbuf *err);
int run_kv(app_ctx *c, cmd_line *l, errbuf *err);
int run_say(app_ctx *c, cmd_line *l, errbuf *err);
int run_expect(app_ctx *c, cmd_line *l, errbuf *err);
int run_wait(app_ctx *c, cmd_line *l, errbuf *err);
int run_note(app_ctx *c, cmd_line *l, errbuf *err);
int run_type(app_ctx *c, cmd_line *l, errbuf *err);
int run_bench(app_ctx *c, cmd_line *l, errbuf *err);
int run_heatmap(app_ctx *c, cmd_line *l, errbuf *err);
int run_sweep(app_ctx *c, cmd_line *l, errbuf *err);
int run_compare(app_ctx *c, cmd_line *l, errbuf *err);
int run_snapshot(app_ctx *c, cmd_line *l, errbuf *err);
int run_reset(app_ctx *c, cmd_line *l, errbuf *err);
int run_seed(app_ctx *c, cmd_line *l, errbuf *err);
int run_set(app_ctx *c, cmd_line *l, errbuf *err);
int run_stats(app_ctx *c, cmd_line *l, errbuf *err);
int run_car(app_ctx *c, cmd_line *l, errbuf *err);
int run_quit(app_ctx *c, cmd_line *l, errbuf *err);
int run_help(app_ctx *c, cmd_line *l, errbuf *err);
int run_voice(app_ctx *c, cmd_line *l, errbuf *err);
int run_governor(app_ctx *c, cmd_line *l, errbuf *err);
int v_governor(cmd_line *l, errbuf *err);
// The precision governor on the app's assistant (app/run_governor.c): start (or replace) with a
// target spec; stop, saying why ("the plan was set by hand").
int app_governor_start(app_ctx *c, const char *spec, errbuf *err);
void app_governor_stop(app_ctx *c, const char *why);
// `set KEY VALUE`: whether KEY is a setting, and the keys ("temp, top_k, ...").
bool app_setting_known(const char *name);
const char *app_setting_names(void);
// A spoken turn from a WAV file through the voice pipeline (app/cmd_voice.c).
int app_voice_file(app_ctx *c, const char *path, errbuf *err);

#endif
