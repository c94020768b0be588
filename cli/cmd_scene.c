// cabin scene: play a scene file headless (tests, demos in a plain terminal).
#include "app/app.h"
#include "cli/commands.h"
#include "app/scene.h"
#include "tui/tui.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct scene_opts {
    const char *file;
    bool check, tui, headless, no_time, commands;
    float speed;
} scene_opts;

#define SCO(field) offsetof(scene_opts, field)
static const opt_def SCENE_OPTS[] = {
    { "FILE", NULL, OPT_POS, SCO(file), NULL, "the scene file", NULL, NULL, NULL },
    { "--headless", NULL, OPT_FLAG, SCO(headless), NULL, "no workbench: a transcript on stdout (the default)", NULL, NULL, NULL },
    { "--tui", NULL, OPT_FLAG, SCO(tui), NULL, "play it in the workbench (a terminal), leave at the end", NULL, NULL, NULL },
    { "--speed", NULL, OPT_FLOAT, SCO(speed), "X", "pacing: 1 types turns at a human pace, 0 runs at full speed", NULL, NULL, NULL, OPT_RANGE(0, 100) },
    { "--check", NULL, OPT_FLAG, SCO(check), NULL, "exit non-zero at the first failed expect (FILE:LINE: expected ... got ...)", NULL, NULL, NULL },
    { "--no-timestamps", NULL, OPT_FLAG, SCO(no_time), NULL, "plain transcript (for comparing runs)", NULL, NULL, NULL },
    { "--commands", NULL, OPT_FLAG, SCO(commands), NULL, "list the commands", NULL, NULL, NULL },
};
static const cmd_spec SCENE_SPEC = {
    "cabin scene", "cabin scene FILE [--headless] [--speed X] [--check] [model options]",
    "Plays a scene: a text file of the same commands a person types after ':' in the\n"
    "workbench (cabin scene --commands lists them), one per line, # for comments.\n"
    "Every line is parsed and checked (files exist, regexes compile, ...) before\n"
    "anything runs. Headless, it prints a transcript with timestamps and a closing\n"
    "line \"N passed, N failed\" for the scene's expectations.\n",
};

int cmd_scene(int argc, char **argv) {
    scene_opts o = { .speed = 1.0f };
    run_opts r;
    run_opts_init(&r);
    opt_table tables[4] = { OPT_TABLE(SCENE_OPTS, &o), run_opts_reply_table(&r), run_opts_governor_table(&r), run_opts_table(&r) };
    int prc = opts_parse(&SCENE_SPEC, tables, 4, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (o.commands) {
        cmd_help_row rows[CMD_MAX_ROWS];
        int n = cmdlang_help_rows(CMD_IN_SCENE, "", rows, CMD_MAX_ROWS);
        for (int i = 0; i < n; i++) printf("  %-52s %s\n", rows[i].usage, rows[i].help);
        return 0;
    }
    const char *file = o.file;
    bool check = o.check, tui = o.tui, no_time = o.no_time;
    float speed = o.speed;
    if (!file) { fprintf(stderr, "cabin scene: no scene file (see cabin scene --help)\n"); return 2; }
    r.s.context_hint = "a reset line, or a larger --ctx";
    if (tui) {   // the scene plays in the workbench, which leaves when it is done
        if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) { fprintf(stderr, "cabin scene: --tui needs a terminal\n"); return 2; }
        ui_opts t = { .s = r.s, .scene = file, .exit_after_scene = true, .governor = r.governor };
        t.s.model_path = run_opts_model(&r);
        stopsig_catch(NULL, true);   // before initscr: a signal leaves the workbench the way :quit does
        int rc = tui_workbench_run(&t);
        stopsig_finish();
        return rc;
    }
    errbuf err = {{0}};
    scene sc;
    if (scene_load(&sc, file, &err)) { fprintf(stderr, "cabin scene: %s\n", err.msg); return 2; }
    // A check that checks nothing fails: --check needs an expect line to pass.
    int n_expect = 0;
    for (int i = 0; i < sc.n; i++) n_expect += strcmp(sc.lines[i].def->name, "expect") == 0;
    if (check && n_expect == 0) {
        fprintf(stderr, "cabin scene: %s: --check, but the scene has no expect line: nothing would be checked\n", file);
        scene_free(&sc);
        return 1;
    }
    // A scene that starts with `model PATH` opens that model directly.
    int first = 0;
    r.s.model_path = run_opts_model(&r);
    if (sc.n > 0 && strcmp(sc.lines[0].def->name, "model") == 0) { r.s.model_path = sc.lines[0].argv[0]; first = 1; }
    app_ctx c;
    memset(&c, 0, sizeof c);
    c.out = stdout;
    c.timestamps = !no_time;
    c.speed = speed;
    c.check = check;
    c.front = CMD_IN_SCENE;
    if (app_open(&c, &r.s, r.free_actions, &err)) {
        fprintf(stderr, "cabin scene: %s\n", err.msg);
        scene_free(&sc);
        return 1;
    }
    app_print(&c, "scene %s: %d commands, model %s", file, sc.n, session_model(c.as.s)->name);
    if (r.governor && app_governor_start(&c, r.governor, &err)) {
        fprintf(stderr, "cabin scene: --governor: %s\n", err.msg);
        app_close(&c);
        scene_free(&sc);
        return 2;
    }
    scene rest = sc;
    rest.lines += first;
    rest.n -= first;
    int rc = scene_run(&rest, &c, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    printf("%d passed, %d failed\n", c.passed, c.failed);
    int status = rc ? 1 : c.failed ? 1 : 0;
    app_close(&c);
    scene_free(&sc);
    return status;
}
