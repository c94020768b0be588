// cabin voice: spoken turns with the assistant (audio/voice.h), and cabin audio devices.
// Also the scene command `voice FILE.wav` (app_voice_file).
#include "app/cmdlang.h"
#include "app/commands.h"
#include "audio/device.h"
#include "audio/voice.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define MAX_TURNS 1024

typedef struct voice_app {
    assistant as;
    bool fresh;               // each turn starts a new conversation (independent commands)
    bool stats;
    voice_turn_stats turns[MAX_TURNS];
    int n_turns;
    voice *v;
} voice_app;

static bool on_token(void *ud, int32_t tok, const char *piece, int len) {
    (void)tok;
    voice_app *a = ud;
    return voice_reply_piece(a->v, piece, len);
}

static int app_reply(void *ud, voice *v, const char *text, errbuf *err) {
    voice_app *a = ud;
    a->v = v;
    if (a->fresh) assistant_reset(&a->as);
    return assistant_generate(&a->as, text, on_token, a, err);
}

static void app_cancel(void *ud) { session_cancel(((voice_app *)ud)->as.s); }

// The action line, as the pipeline finds it in the streamed reply: applied and told at once.
static void said_not_understood(void *ud, const char *why) { (void)ud; printf("[action not understood: %s]\n", why); }
static void said_action(void *ud, const action *a, const char *desc) { (void)ud; (void)a; printf("action: %s\n", desc); }
static void said_change(void *ud, const action *a, const char *change) {
    (void)ud; (void)a;
    if (change[0]) printf("vehicle: %s\n", change);
}
static void said_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    (void)ud; (void)a; (void)sentence;
    printf("refused: %s\n", reason);
}

static void app_action(void *ud, const char *act_text) {
    voice_app *a = ud;
    const turn_hooks h = { .ud = a, .on_not_understood = said_not_understood, .on_action = said_action,
                           .on_vehicle_change = said_change, .on_refused = said_refused };
    assistant_act_line(&a->as, act_text, &h);
    fflush(stdout);
}

static void app_transcript(void *ud, const char *text) {
    (void)ud;
    printf("you: %s\n", text);
    fflush(stdout);
}

static void app_turn(void *ud, const voice_turn_stats *st) {
    voice_app *a = ud;
    printf("cabin: %s%s\n", st->spoken, st->barged_in ? " [cut off: barge-in]" : "");
    if (a->stats)
        printf("latency turn %d: speech %.2f s | asr %s%s agree %.2f, fit %.1f, RTF %.2f | end of speech -> transcript %.0f ms, "
               "first token %.0f ms, first audio written %.0f ms, first audio played %.0f ms, last token %.0f ms%s\n",
               st->turn, st->speech_s, st->asr_search, st->asr_refused ? " refused" : "", st->asr_conf, st->asr_fit,
               st->asr_rtf, st->asr_final_ms,
               st->first_token_ms, st->first_write_ms, st->first_audio_ms, st->last_token_ms,
               st->barged_in ? "" : "");
    if (st->barged_in && a->stats) printf("barge-in turn %d: generation and playback stopped %.1f ms after onset\n",
                                          st->turn, st->barge_stop_ms);
    if (a->n_turns < MAX_TURNS) a->turns[a->n_turns++] = *st;
    fflush(stdout);
}

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

// p-th percentile (nearest rank) of the turns' field at offset off, over values >= 0
static double pct(const voice_app *a, size_t off, double p, int *n_out) {
    double vals[MAX_TURNS];
    int n = 0;
    for (int i = 0; i < a->n_turns; i++) {
        double v = *(const double *)((const char *)&a->turns[i] + off);
        if (v >= 0) vals[n++] = v;
    }
    *n_out = n;
    if (!n) return -1;
    qsort(vals, (size_t)n, sizeof(double), cmp_d);
    int k = (int)ceil(p * n) - 1;
    return vals[k < 0 ? 0 : k];
}

static void print_summary(const voice_app *a) {
    static const struct { const char *name; size_t off; } rows[] = {
        { "end of speech -> transcript (ms)", offsetof(voice_turn_stats, asr_final_ms) },
        { "end of speech -> first token (ms)", offsetof(voice_turn_stats, first_token_ms) },
        { "end of speech -> first audio written (ms)", offsetof(voice_turn_stats, first_write_ms) },
        { "end of speech -> first audio played (ms)", offsetof(voice_turn_stats, first_audio_ms) },
        { "recognition real-time factor", offsetof(voice_turn_stats, asr_rtf) },
    };
    printf("summary over %d turns:%-21s p50 %8s p90\n", a->n_turns, "", "");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int n;
        double p50 = pct(a, rows[i].off, 0.5, &n), p90 = pct(a, rows[i].off, 0.9, &n);
        printf("  %-42s %8.2f %8.2f  (n=%d)\n", rows[i].name, p50, p90, n);
    }
}

// ---- push-to-talk from the terminal: space toggles talking, q leaves ----
typedef struct key_ctx { voice *v; bool talking; } key_ctx;

static void *key_thread(void *ud) {
    key_ctx *k = ud;
    struct termios old, raw;
    if (tcgetattr(STDIN_FILENO, &old) != 0) return NULL;
    raw = old;
    raw.c_lflag &= (tcflag_t)~(ICANON | ECHO);
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    for (;;) {
        struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
        if (poll(&p, 1, 100) <= 0) continue;
        char ch;
        if (read(STDIN_FILENO, &ch, 1) != 1 || ch == 'q' || ch == 4) break;
        if (ch == ' ') {
            k->talking = !k->talking;
            if (k->talking) { voice_ptt_press(k->v); printf("[talk]\n"); }
            else { voice_ptt_release(k->v); printf("[released]\n"); }
            fflush(stdout);
        }
    }
    tcsetattr(STDIN_FILENO, TCSANOW, &old);
    voice_stop(k->v);
    return NULL;
}

int cmd_voice(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin voice", false };
    run_opts r;
    run_opts_init(&r);
    voice_opts vo = voice_opts_default();
    const char *asr_kind = "domain";
    bool stats = false, hands_free = false, hands_free_set = false, no_out = false;
    static voice_app app;
    memset(&app, 0, sizeof app);
    int n_predict = 0, hang = -1;
    float margin = -1;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin voice [-m MODEL] [--audio-in DEV|FILE.wav] [--audio-out DEV|FILE.wav] [--stats]\n\n"
                   "Spoken turns with the assistant: speech is recognised while you talk (pocketsphinx),\n"
                   "the reply is spoken clause by clause as it is generated (espeak-ng), actions are\n"
                   "applied to the simulated car. In a terminal, SPACE toggles talking (push-to-talk;\n"
                   "pressing it while cabin speaks interrupts), q leaves. With --audio-in FILE.wav the\n"
                   "turns the VAD finds in the file are answered one after another, then it exits.\n\n"
                   "  --audio-in DEV|FILE   capture device (index or name; cabin audio devices) or WAV\n"
                   "  --audio-out DEV|FILE  playback device or WAV file to write the speech to\n"
                   "  --no-audio-out        do not speak (transcripts and actions only)\n"
                   "  --stats               latency per turn and p50/p90 at the end\n"
                   "  --hands-free          the VAD takes turns (default with a file)\n"
                   "  --realtime            WAV devices run at the wall clock's pace (barge-in works)\n"
                   "  --fresh-turns         every turn starts a new conversation and car\n"
                   "  --asr domain|general  recogniser LM: the assistant's domain (default) or en-us\n"
                   "  --asr-lm F --asr-dict F --asr-grammar F (\"\" for none) --asr-fdict F (noise dictionary)\n"
                   "  --asr-floor DB        white noise added before recognition, dBFS (default -50;\n"
                   "                        -200: none; docs/VOICE.md)\n"
                   "  --vad-margin DB       speech: this far above the noise floor (default 10)\n"
                   "  --vad-hangover MS     silence that ends a turn (default 400)\n"
                   "  --tts-voice NAME      espeak-ng voice (default en-us); --tts-wpm N speed\n"
                   "  -n, --n-predict N     most tokens per reply\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (run_opts_parse(&r, &a)) continue;
        if (arg_str(&a, "--audio-in", NULL, &vo.in)) continue;
        if (arg_str(&a, "--audio-out", NULL, &vo.out)) continue;
        if (arg_flag(&a, "--no-audio-out", NULL)) { no_out = true; continue; }
        if (arg_flag(&a, "--stats", NULL)) { stats = true; continue; }
        if (arg_flag(&a, "--hands-free", NULL)) { hands_free = hands_free_set = true; continue; }
        if (arg_flag(&a, "--realtime", NULL)) { vo.realtime = true; continue; }
        if (arg_flag(&a, "--fresh-turns", NULL)) { app.fresh = true; continue; }
        if (arg_str(&a, "--asr", NULL, &asr_kind)) continue;
        if (arg_str(&a, "--asr-lm", NULL, &vo.asr.lm)) continue;
        if (arg_str(&a, "--asr-dict", NULL, &vo.asr.dict)) continue;
        if (arg_str(&a, "--asr-grammar", NULL, &vo.asr.jsgf)) continue;
        if (arg_str(&a, "--asr-fdict", NULL, &vo.asr.fdict)) continue;
        if (arg_float(&a, "--asr-floor", NULL, &vo.asr.noise_floor_db)) continue;
        if (arg_float(&a, "--vad-margin", NULL, &margin)) continue;
        if (arg_int(&a, "--vad-hangover", NULL, &hang)) continue;
        if (arg_str(&a, "--tts-voice", NULL, &vo.tts_voice)) continue;
        if (arg_int(&a, "--tts-wpm", NULL, &vo.tts_wpm)) continue;
        if (arg_int(&a, "-n", "--n-predict", &n_predict)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    if (strcmp(asr_kind, "general") == 0) vo.asr.general = true;
    else if (strcmp(asr_kind, "domain") != 0) { fprintf(stderr, "cabin voice: --asr: domain or general, not '%s'\n", asr_kind); return 2; }
    if (margin >= 0) vo.vad.margin_db = margin;
    if (hang >= 0) vo.vad.hangover_ms = hang;
    if (n_predict > 0) r.s.max_reply_tokens = n_predict;
    size_t inl = vo.in ? strlen(vo.in) : 0;
    bool file_in = inl > 4 && strcasecmp(vo.in + inl - 4, ".wav") == 0;
    vo.hands_free = hands_free_set ? hands_free : file_in;
    vo.half_duplex = file_in && !vo.realtime;
    if (no_out) vo.out = NULL;
    else if (!vo.out && !file_in) vo.out = "default";
    app.stats = stats;
    errbuf err = {{0}};
    r.s.model_path = run_opts_model(&r);
    if (assistant_open(&app.as, &r.s, r.free_actions, &err)) { fprintf(stderr, "cabin voice: %s\n", err.msg); return 1; }
    voice_hooks h = { .ud = &app, .reply = app_reply, .cancel = app_cancel, .on_action = app_action,
                      .on_transcript = app_transcript, .on_turn = app_turn, .on_state = NULL };
    voice *v = voice_open(&vo, &h, &err);
    if (!v) {
        fprintf(stderr, "cabin voice: %s; voice is off (cabin chat still works)\n", err.msg);
        assistant_close(&app.as);
        return 1;
    }
    app.v = v;
    printf("cabin voice — %s\n", voice_describe(v));
    pthread_t kt;
    key_ctx kc = { v, false };
    bool keys = !vo.hands_free && isatty(STDIN_FILENO);
    if (keys) {
        printf("SPACE: talk / stop talking, q: leave\n");
        pthread_create(&kt, NULL, key_thread, &kc);
    } else if (!file_in && !vo.hands_free) {
        fprintf(stderr, "cabin voice: push-to-talk needs a terminal; use --hands-free\n");
        voice_close(v);
        assistant_close(&app.as);
        return 2;
    }
    fflush(stdout);
    int rc = voice_run(v, &err);
    if (rc) fprintf(stderr, "cabin voice: %s\n", err.msg);
    if (keys) { voice_stop(v); pthread_join(kt, NULL); }
    if (stats) print_summary(&app);
    voice_close(v);
    assistant_close(&app.as);
    return rc ? 1 : 0;
}

int cmd_audio(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "devices") != 0) {
        printf("usage: cabin audio devices\n\nLists the capture and playback devices (index and name for\n"
               "cabin voice --audio-in / --audio-out).\n");
        return argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? 0 : 2;
    }
    errbuf err = {{0}};
    if (audio_list_devices(stdout, &err)) { fprintf(stderr, "cabin audio: %s\n", err.msg); return 1; }
    return 0;
}

// ---- the scene command `voice FILE.wav`: each turn the VAD finds goes through app_say ----
typedef struct scene_voice { app_ctx *c; int rc; errbuf err; } scene_voice;

static int scene_reply(void *ud, voice *v, const char *text, errbuf *err) {
    scene_voice *sv = ud;
    (void)v;
    int rc = app_say(sv->c, text, err);
    if (rc) { sv->rc = rc; sv->err = *err; }
    return rc;
}

int app_voice_file(app_ctx *c, const char *path, errbuf *err) {
    voice_opts vo = voice_opts_default();
    vo.in = path;
    vo.out = NULL;
    vo.hands_free = true;
    vo.half_duplex = true;
    scene_voice sv = { c, 0, {{0}} };
    voice_hooks h = { .ud = &sv, .reply = scene_reply };
    voice *v = voice_open(&vo, &h, err);
    if (!v) return -1;
    int rc = voice_run(v, err);
    voice_close(v);
    if (!rc && sv.rc) { *err = sv.err; rc = sv.rc; }
    return rc;
}
