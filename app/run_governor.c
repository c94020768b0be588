// The command language's `governor` (scenes, the workbench's `:governor`, chat's `/governor`)
// and --governor on chat, scene and the workbench: the precision loop of app/govern.h on the
// app's assistant.
#include "app/cmdlang.h"
#include "app/verbs.h"
#include "app/govern.h"

#include <string.h>

static void say_line(void *ud, const char *line) {
    app_ctx *c = ud;
    if (c->notice) c->notice(c->notice_ud, line);
    else app_print(c, "%s", line);
}

int app_governor_start(app_ctx *c, const char *spec, errbuf *err) {
    session_wait_switch(c->as.s);   // the source is the plan in force, not one still converting
    gov_run *g = NULL;
    if (gov_run_start(c->as.s, &c->opts, spec, c->heatmap, say_line, c, &g, err)) return -1;
    gov_run_free(c->as.gov);   // a new target replaces the running loop
    c->as.gov = g;
    return 0;
}

void app_governor_stop(app_ctx *c, const char *why) {
    if (!c->as.gov) return;
    gov_run_free(c->as.gov);
    c->as.gov = NULL;
    app_print(c, "governor: off (%s)", why);
}

int v_governor(cmd_line *l, errbuf *err) {
    if (l->argc == 0) return 0;
    const char *w = l->argv[0];
    if (!strcmp(w, "off") || !strcmp(w, "status")) {
        if (l->argc > 1) return err_set(err, "%s:%d: governor %s takes no argument", l->file, l->line, w);
        return 0;
    }
    if (!strcmp(w, "log")) {
        if (l->argc > 2) return err_set(err, "%s:%d: governor log [FILE.json]", l->file, l->line);
        return 0;
    }
    if (!strcmp(w, "plot")) {
        if (l->argc != 2) return err_set(err, "%s:%d: governor plot FILE.svg", l->file, l->line);
        return 0;
    }
    gov_target t;
    gov_knobs k;
    errbuf e = { { 0 } };
    if (gov_parse(l->rest, &t, &k, &e)) return err_set(err, "%s:%d: %s", l->file, l->line, e.msg);
    return 0;
}

int run_governor(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *w = l->argc ? l->argv[0] : "status";
    if (!strcmp(w, "status")) {
        char line[512] = "governor: off";
        if (c->as.gov) gov_run_status(c->as.gov, line, sizeof line);
        app_print(c, "%s", line);
        return 0;
    }
    if (!strcmp(w, "off")) {
        if (!c->as.gov) { app_print(c, "governor: already off"); return 0; }
        app_governor_stop(c, "asked; the plan in force stays");
        return 0;
    }
    if (!strcmp(w, "log")) {
        if (!c->as.gov) return err_set(err, "%s:%d: governor log: the governor is off", l->file, l->line);
        if (l->argc == 2) {
            if (gov_run_save_json(c->as.gov, l->argv[1], err)) return err_prefix(err, "%s:%d: governor log", l->file, l->line);
            app_print(c, "governor: trace saved to %s", l->argv[1]);
            return 0;
        }
        gov_run_print_log(c->as.gov, say_line, c);
        return 0;
    }
    if (!strcmp(w, "plot")) {
        if (!c->as.gov) return err_set(err, "%s:%d: governor plot: the governor is off", l->file, l->line);
        char kl[1100];
        if (gov_run_plot(c->as.gov, l->argv[1], kl, sizeof kl, err)) return err_prefix(err, "%s:%d: governor plot", l->file, l->line);
        app_print(c, "governor: trace drawn in %s%s%s", l->argv[1], kl[0] ? " and " : "", kl);
        return 0;
    }
    if (app_governor_start(c, l->rest, err)) return err_prefix(err, "%s:%d", l->file, l->line);
    return 0;
}
