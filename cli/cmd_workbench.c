// cabin workbench (and `cabin` with no command on a terminal): the ncurses workbench (tui/);
// cabin gui: the same workbench in a window (sdl/). Both take the workbench's options.
#include "cli/commands.h"
#include "cli/workbench_serve.h"
#include "sdl/gui.h"
#include "tui/tui.h"
#include "ui/palette.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// The workbench's own options: the front end's (ui_opts) and the system prompt; the window's.
typedef struct workbench_opts {
    ui_opts t;
    const char *system;
    gui_opts g;
    bool print_palette;
    int serve_port;                // --serve PORT (0: not served)
} workbench_opts;

#define WO(field) offsetof(workbench_opts, field)
static const opt_def WORKBENCH_OPTS[] = {
    { "--system", NULL, OPT_STR, WO(system), "TEXT", "system prompt", NULL, NULL, NULL },
    { "--scene", NULL, OPT_STR, WO(t.scene), "FILE", "play a scene file in the workbench first", NULL, NULL, NULL },
    { "--exit-after-scene", NULL, OPT_FLAG, WO(t.exit_after_scene), NULL, "leave when the scene has run", NULL, NULL, NULL },
    { "--audio-in", NULL, OPT_STR, WO(t.audio_in), "DEV|FILE", "push-to-talk (F5) from a capture device (default: the\n"
      "default one; cabin audio devices) or a WAV recording,\nplayed from its start at each F5 press", NULL, NULL, NULL },
    { "--audio-out", NULL, OPT_STR, WO(t.audio_out), "DEV|FILE", "speak replies to a device (default: the default one; none\n"
      "with a WAV input) or a WAV file (with a WAV input, each\nturn's speech; with a device, the session's, at exit)", NULL, NULL, NULL },
    { "--no-voice", NULL, OPT_FLAG, WO(t.no_voice), NULL, "open no audio device (:voice FILE.wav still works)", NULL, NULL, NULL },
    { "--serve", NULL, OPT_INT, WO(serve_port), "PORT", "also serve the OpenAI API (cabin serve's routes) on\n"
      "127.0.0.1:PORT: a request's last user message is a turn of\nthis conversation, shown as it runs (docs/SERVE.md)", NULL,
      NULL, NULL, OPT_RANGE(1, 65535) },
};

static int parse_size(void *base, const char *v, errbuf *err) {
    workbench_opts *wo = base;
    int w, h;
    char tail;
    if (sscanf(v, "%dx%d%c", &w, &h, &tail) != 2 || w < GUI_MIN_W || h < GUI_MIN_H || w > 16384 || h > 16384)
        return err_set(err, "--size %s: WIDTHxHEIGHT in points, from %dx%d to 16384x16384 (e.g. 1280x800)", v,
                       GUI_MIN_W, GUI_MIN_H);
    wo->g.width = w;
    wo->g.height = h;
    return 0;
}

static const opt_def GUI_OPTS[] = {
    { "--size", NULL, OPT_CALL, 0, "WxH", "the window's size in points (default 1280x800; resizable)", NULL, parse_size, NULL },
    { "--talk-key", NULL, OPT_STR, WO(g.talk_key), "KEY", "hold-to-talk key, an SDL key name (default Space: talks\n"
      "while the input line is empty; F5 toggles as in the terminal)", NULL, NULL, NULL },
    { "--font", NULL, OPT_STR, WO(g.font), "FILE.ttf", "a monospace font (default DejaVu Sans Mono)", NULL, NULL, NULL },
    { "--print-palette", NULL, OPT_FLAG, WO(print_palette), NULL, "print the colours per weight type and the heat scale's\n"
      "ends (R G B), the ones the window draws with, and leave", NULL, NULL, NULL },
};

static const cmd_spec WORKBENCH_SPEC = {
    "cabin workbench", "cabin [workbench] [-m MODEL] [--system TEXT] [options]",
    "The workbench: the conversation on the left, live panels on the right (precision,\n"
    "heat map, latency, power, vehicle, voice), an input line at the bottom. F1 lists\n"
    "the keys and the :commands (the same language as scene files). The transcript is\n"
    "autosaved after every turn in the XDG state dir (cabin/workbench-autosave.json).\n"
    "Needs a terminal; `cabin chat` is the plain front end. docs/WORKBENCH.md.\n",
};

// The session options both faces run, from their parsed options: the model (the embedded one
// unless -m names another) must be readable when there is no scene (a scene may load one).
// Says why not, naming cmd, and returns 1.
static int ui_opts_from(const workbench_opts *wo, run_opts *r, const char *cmd, ui_opts *t) {
    *t = wo->t;
    r->s.system_prompt = wo->system;
    r->s.context_hint = ":reset, or a larger --ctx";
    r->s.model_path = run_opts_model(r);
    if (!t->scene && access(r->s.model_path, R_OK) != 0) {
        fprintf(stderr, "%s: %s: %s\n", cmd, r->s.model_path, strerror(errno));
        return 1;
    }
    t->s = r->s;
    t->free_actions = r->free_actions;
    t->governor = r->governor;
    if (wo->serve_port) {   // freed once the workbench closed
        t->attach = workbench_serve_attach;
        t->detach = workbench_serve_detach;
        t->attach_ud = workbench_serve_new(wo->serve_port, r->s.model_path);
    }
    return 0;
}

int cmd_workbench(int argc, char **argv) {
    run_opts r;
    run_opts_init(&r);
    workbench_opts wo;
    memset(&wo, 0, sizeof wo);
    opt_table own = OPT_TABLE(WORKBENCH_OPTS, &wo);
    int prc = run_opts_parse_chat(&WORKBENCH_SPEC, &own, &r, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "cabin workbench: needs a terminal (use `cabin chat` for pipes)\n");
        return 2;
    }
    ui_opts t;
    if (ui_opts_from(&wo, &r, "cabin workbench", &t)) {
        if (!r.model) fprintf(stderr, "cabin workbench: the embedded default model is not built yet; "
                              "give a GGUF model with -m FILE\n");
        return 1;
    }
    stopsig_catch(NULL, true);   // before initscr: a signal leaves the workbench the way :quit does
    int rc = tui_workbench_run(&t);
    stopsig_finish();
    workbench_serve_free(t.attach_ud);
    return rc;
}

static const cmd_spec GUI_SPEC = {
    "cabin gui", "cabin gui [-m MODEL] [--scene FILE] [--size WxH] [options]",
    "The workbench in a window (SDL2): the conversation, an input line, and the panels as\n"
    "graphics (precision grid, heat maps with their scale, latency and power plots, the\n"
    "vehicle, the voice level). Keys and :commands as in the terminal workbench; hold Space\n"
    "on an empty input line to talk. Needs a display (DISPLAY or WAYLAND_DISPLAY): without\n"
    "one it says why and exits with status 2. docs/GUI.md.\n",
};

int cmd_gui(int argc, char **argv) {
    run_opts r;
    run_opts_init(&r);
    workbench_opts wo;
    memset(&wo, 0, sizeof wo);
    opt_table tables[5] = { OPT_TABLE(WORKBENCH_OPTS, &wo), OPT_TABLE(GUI_OPTS, &wo), run_opts_reply_table(&r),
                            run_opts_governor_table(&r), run_opts_table(&r) };
    int prc = opts_parse(&GUI_SPEC, tables, 5, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (wo.print_palette) { ui_palette_print(stdout); return 0; }
    char why[160];
    if (!gui_available(why, sizeof why)) { fprintf(stderr, "cabin gui: %s\n", why); return 2; }
    ui_opts t;
    if (ui_opts_from(&wo, &r, "cabin gui", &t)) return 1;
    stopsig_catch(NULL, true);   // a signal leaves the window the way :quit does
    int rc = gui_run(&t, &wo.g);
    stopsig_finish();
    workbench_serve_free(t.attach_ud);
    return rc;
}
