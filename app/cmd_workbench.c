// cabin workbench (and `cabin` with no command on a terminal): the ncurses workbench (tui/).
#include "app/commands.h"
#include "tui/tui.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cmd_workbench(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin workbench", false };
    run_opts r;
    run_opts_init(&r);
    tui_opts t;
    memset(&t, 0, sizeof t);
    const char *system = NULL;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin [workbench] [-m MODEL] [--system TEXT] [options]\n\n"
                   "The workbench: the conversation on the left, live panels on the right (precision,\n"
                   "heat map, latency, power, vehicle, voice), an input line at the bottom. F1 lists\n"
                   "the keys and the :commands (the same language as scene files). The transcript is\n"
                   "autosaved after every turn in the XDG state dir (cabin/workbench-autosave.json).\n"
                   "Needs a terminal; `cabin chat` is the plain front end. docs/WORKBENCH.md.\n\n"
                   "  --system TEXT        system prompt\n"
                   "  -n, --n-predict N    most tokens per reply (default 512)\n"
                   "  --scene FILE         play a scene file in the workbench first\n"
                   "  --exit-after-scene   leave when the scene has run\n"
                   "  --audio-in DEV|FILE  push-to-talk (F5) from a capture device (default: the\n"
                   "                       default one; cabin audio devices) or a WAV recording,\n"
                   "                       played from its start at each F5 press\n"
                   "  --audio-out DEV|FILE speak replies to a device (default: the default one; none\n"
                   "                       with a WAV input) or a WAV file (with a WAV input, each\n"
                   "                       turn's speech; with a device, the session's, at exit)\n"
                   "  --no-voice           open no audio device (:voice FILE.wav still works)\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (run_opts_parse(&r, &a)) continue;
        if (arg_str(&a, "--system", NULL, &system)) continue;
        if (arg_int(&a, "-n", "--n-predict", &r.s.max_reply_tokens)) continue;
        if (arg_str(&a, "--scene", NULL, &t.scene)) continue;
        if (arg_flag(&a, "--exit-after-scene", NULL)) { t.exit_after_scene = true; continue; }
        if (arg_str(&a, "--audio-in", NULL, &t.audio_in)) continue;
        if (arg_str(&a, "--audio-out", NULL, &t.audio_out)) continue;
        if (arg_flag(&a, "--no-voice", NULL)) { t.no_voice = true; continue; }
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "cabin workbench: needs a terminal (use `cabin chat` for pipes)\n");
        return 2;
    }
    r.s.system_prompt = system;
    r.s.model_path = run_opts_model(&r);
    if (!t.scene && access(r.s.model_path, R_OK) != 0) {
        fprintf(stderr, "cabin workbench: %s: %s\n", r.s.model_path, strerror(errno));
        if (!r.model) fprintf(stderr, "cabin workbench: the embedded default model is not built yet; "
                              "give a GGUF model with -m FILE\n");
        return 1;
    }
    t.s = r.s;
    t.free_actions = r.free_actions;
    return tui_workbench_run(&t);
}
