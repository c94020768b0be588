// The verbs of the command language: what each command of the table (app/cmdlang.c) does on the
// app object. Defined with the app (app/app.c; the governor's in app/run_governor.c, `voice` in
// app/voice_file.c); only the table and the app itself call them.
#ifndef CABIN_APP_VERBS_H
#define CABIN_APP_VERBS_H

#include "app/app.h"

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
int run_voice(app_ctx *c, cmd_line *l, errbuf *err);
int run_governor(app_ctx *c, cmd_line *l, errbuf *err);
// `governor SPEC`: the spec checked before anything runs (the table's validate).
int v_governor(cmd_line *l, errbuf *err);

#endif
