// cabin voice: spoken turns with the assistant (audio/voice.h), and cabin audio devices.
#include "app/turn.h"
#include "cli/commands.h"
#include "app/govern.h"
#include "audio/audio.h"
#include "audio/device.h"
#include "audio/voice.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
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

// A time of the turn, "123 ms", or "-" when it did not happen (no audio out, a refused turn).
static const char *ms_text(double ms, char *buf, size_t n) {
    if (ms < 0) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.0f ms", ms);
    return buf;
}

// Hands-free, how the turn's end was found: " (ended 200 ms into a pause, the command whole)".
static const char *end_text(const voice_turn_stats *st, char *buf, size_t n) {
    if (st->end_silence_ms < 0) snprintf(buf, n, "%s", "");
    else snprintf(buf, n, " (ended %.0f ms into %s)", st->end_silence_ms, st->ended_at_pause ? "a pause, the command whole" : "silence");
    return buf;
}

static void app_turn(void *ud, const voice_turn_stats *st) {
    voice_app *a = ud;
    printf("cabin: %s%s\n", st->spoken, st->barged_in ? " [cut off: barge-in]" : "");
    char t[6][24], how[80];
    if (a->stats && st->first_token_ms >= 0) {   // (the reply thread has ended: its stats are this turn's)
        session_stats ss;
        session_get_stats(a->as.s, &ss);
        printf("reply turn %d: %d tokens in %d forward passes (%d forced by the grammar, fed with the one before them), "
               "first token -> first clause %s\n", st->turn, ss.gen_tokens, ss.decode_passes, ss.forced_tokens,
               ms_text(st->token_to_clause_ms, t[5], sizeof t[5]));
    }
    if (a->stats)
        printf("latency turn %d: speech %.2f s%s | asr %s%s agree %.2f, fit %.1f, RTF %.2f%s | end of speech -> transcript %s, "
               "first token %s, first audio written %s, first audio played %s, last token %s\n",
               st->turn, st->speech_s, end_text(st, how, sizeof how), st->asr_search, st->asr_refused ? " refused" : "", st->asr_conf, st->asr_fit,
               st->asr_rtf, st->asr_settled ? " (first utterance: started over)" : st->asr_redecoded ? " (first utterance: decoded twice)" : "",
               ms_text(st->asr_final_ms, t[0], sizeof t[0]), ms_text(st->first_token_ms, t[1], sizeof t[1]),
               ms_text(st->first_write_ms, t[2], sizeof t[2]), ms_text(st->first_audio_ms, t[3], sizeof t[3]),
               ms_text(st->last_token_ms, t[4], sizeof t[4]));
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
        { "silence heard before the turn ended (ms)", offsetof(voice_turn_stats, end_silence_ms) },
        { "end of speech -> transcript (ms)", offsetof(voice_turn_stats, asr_final_ms) },
        { "end of speech -> first token (ms)", offsetof(voice_turn_stats, first_token_ms) },
        { "first token -> first clause (ms)", offsetof(voice_turn_stats, token_to_clause_ms) },
        { "end of speech -> first audio written (ms)", offsetof(voice_turn_stats, first_write_ms) },
        { "end of speech -> first audio played (ms)", offsetof(voice_turn_stats, first_audio_ms) },
        { "recognition real-time factor", offsetof(voice_turn_stats, asr_rtf) },
    };
    printf("summary over %d turns:%-21s p50 %8s p90\n", a->n_turns, "", "");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int n;
        double p50 = pct(a, rows[i].off, 0.5, &n), p90 = pct(a, rows[i].off, 0.9, &n);
        if (n == 0) printf("  %-42s %8s %8s  (n=0)\n", rows[i].name, "-", "-");
        else printf("  %-42s %8.2f %8.2f  (n=%d)\n", rows[i].name, p50, p90, n);
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

typedef struct voice_cli_opts {
    voice_opts vo;
    const char *asr_kind;
    bool stats, hands_free, no_out, fresh, no_priority;
    int n_predict, hang, pause;
    float margin;
} voice_cli_opts;

#define VO(field) offsetof(voice_cli_opts, field)
static const opt_def VOICE_OPTS[] = {
    { "--audio-in", NULL, OPT_STR, VO(vo.in), "DEV|FILE", "capture device (index or name; cabin audio devices) or WAV", "the default device", NULL, NULL },
    { "--audio-out", NULL, OPT_STR, VO(vo.out), "DEV|FILE", "playback device or WAV file to write the speech to",
      "the default device; none with a WAV input", NULL, NULL },
    { "--no-audio-out", NULL, OPT_FLAG, VO(no_out), NULL, "do not speak (transcripts and actions only)", NULL, NULL, NULL },
    { "--stats", NULL, OPT_FLAG, VO(stats), NULL, "latency per turn and p50/p90 at the end", NULL, NULL, NULL },
    { "--hands-free", NULL, OPT_FLAG, VO(hands_free), NULL, "the VAD takes turns (default with a file)", NULL, NULL, NULL },
    { "--realtime", NULL, OPT_FLAG, VO(vo.realtime), NULL, "WAV devices run at the wall clock's pace (barge-in works)", NULL, NULL, NULL },
    { "--fresh-turns", NULL, OPT_FLAG, VO(fresh), NULL, "every turn starts a new conversation and car", NULL, NULL, NULL },
    { "--no-priority", NULL, OPT_FLAG, VO(no_priority), NULL, "leave every thread at the priority it starts with\n"
      "(else voice threads nice -10, the model's -5, where allowed)", NULL, NULL, NULL },
    { "--asr", NULL, OPT_STR, VO(asr_kind), "domain|general", "recogniser LM: the assistant's domain or en-us", NULL, NULL, NULL },
    { "--asr-lm", NULL, OPT_STR, VO(vo.asr.lm), "F", "recogniser language model", "assets/asr/cabin.lm", NULL, NULL },
    { "--asr-dict", NULL, OPT_STR, VO(vo.asr.dict), "F", "recogniser dictionary", "assets/asr/cabin.dict", NULL, NULL },
    { "--asr-grammar", NULL, OPT_STR, VO(vo.asr.jsgf), "F", "recogniser grammar (\"\" for none)", "assets/asr/cabin.gram", NULL, NULL },
    { "--asr-fdict", NULL, OPT_STR, VO(vo.asr.fdict), "F", "noise dictionary", "assets/asr/cabin.filler", NULL, NULL },
    { "--asr-floor", NULL, OPT_FLOAT, VO(vo.asr.noise_floor_db), "DB", "white noise added before recognition, dBFS\n"
      "(-200: none; docs/VOICE.md)", NULL, NULL, NULL, OPT_RANGE(-200, 0) },
    { "--vad-margin", NULL, OPT_FLOAT, VO(margin), "DB", "speech: this far above the noise floor", "6", NULL, NULL, OPT_RANGE(0, 100) },
    { "--vad-hangover", NULL, OPT_INT, VO(hang), "MS", "silence that ends a turn", "400", NULL, NULL, OPT_RANGE(10, 10000) },
    { "--vad-pause", NULL, OPT_INT, VO(pause), "MS", "silence that ends a turn once what was said is a whole command\n"
      "of the grammar (0: only the hangover; docs/VOICE.md)", "0", NULL, NULL, OPT_RANGE(0, 10000) },
    { "--tts-voice", NULL, OPT_STR, VO(vo.tts_voice), "NAME", "espeak-ng voice", "en-us", NULL, NULL },
    { "--tts-wpm", NULL, OPT_INT, VO(vo.tts_wpm), "N", "speaking speed in words per minute", "175", NULL, NULL, OPT_RANGE(80, 500) },
    { "--n-predict", "-n", OPT_INT, VO(n_predict), "N", "most tokens per reply", "512", NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
};

static const cmd_spec VOICE_SPEC = {
    "cabin voice", "cabin voice [-m MODEL] [--audio-in DEV|FILE.wav] [--audio-out DEV|FILE.wav] [--stats]",
    "Spoken turns with the assistant: speech is recognised while you talk (pocketsphinx),\n"
    "the reply is spoken clause by clause as it is generated (espeak-ng), actions are\n"
    "applied to the simulated car. In a terminal, SPACE toggles talking (push-to-talk;\n"
    "pressing it while cabin speaks interrupts), q leaves. With --audio-in FILE.wav the\n"
    "turns the VAD finds in the file are answered one after another, then it exits.\n",
};

#define MODEL_NICE (-5)   // the model's threads under cabin voice (VOICE_NICE: the pipeline's)

static void say_governor(void *ud, const char *line) { (void)ud; printf("%s\n", line); fflush(stdout); }

int cmd_voice(int argc, char **argv) {
    run_opts r;
    run_opts_init(&r);
    voice_cli_opts o = { .vo = voice_opts_default(), .asr_kind = "domain", .hang = -1, .pause = -1, .margin = -1 };
    opt_table own = OPT_TABLE(VOICE_OPTS, &o);
    opt_table tables[3] = { own, run_opts_governor_table(&r), run_opts_table(&r) };
    int prc = opts_parse(&VOICE_SPEC, tables, 3, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (!audio_built_in()) { fprintf(stderr, "cabin voice: %s\n", AUDIO_OFF_MSG); return 1; }
    static voice_app app;
    memset(&app, 0, sizeof app);
    app.fresh = o.fresh;
    voice_opts vo = o.vo;
    const char *asr_kind = o.asr_kind;
    bool stats = o.stats, no_out = o.no_out;
    int n_predict = o.n_predict, hang = o.hang, pause = o.pause;
    float margin = o.margin;
    if (strcmp(asr_kind, "general") == 0) vo.asr.general = true;
    else if (strcmp(asr_kind, "domain") != 0) { fprintf(stderr, "cabin voice: --asr: domain or general, not '%s'\n", asr_kind); return 2; }
    if (margin >= 0) vo.vad.margin_db = margin;
    if (hang >= 0) vo.vad.hangover_ms = hang;
    if (pause >= 0) vo.vad.pause_ms = pause;
    if (n_predict > 0) r.s.max_reply_tokens = n_predict;
    size_t inl = vo.in ? strlen(vo.in) : 0;
    bool file_in = inl > 4 && strcasecmp(vo.in + inl - 4, ".wav") == 0;
    vo.hands_free = o.hands_free || file_in;
    vo.half_duplex = file_in && !vo.realtime;
    if (no_out) vo.out = NULL;
    else if (!vo.out && !file_in) vo.out = "default";
    app.stats = stats;
    errbuf err = {{0}};
    r.s.model_path = run_opts_model(&r);
    // The model's threads (started by assistant_open, from this one) run behind the voice
    // pipeline's and ahead of other processes; voice_open then raises this thread to VOICE_NICE.
    char prio_why[200] = "";
    if (o.no_priority) vo.nice = VOICE_NICE_KEEP;
    else prio_raise_self(MODEL_NICE, NULL, prio_why, sizeof prio_why);
    if (assistant_open(&app.as, &r.s, r.free_actions, &err)) { fprintf(stderr, "cabin voice: %s\n", err.msg); return 1; }
    if (r.governor && gov_run_start(app.as.s, &r.s, r.governor, NULL, say_governor, NULL, &app.as.gov, &err)) {
        fprintf(stderr, "cabin voice: --governor: %s\n", err.msg);
        assistant_close(&app.as);
        return 2;
    }
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
    if (*voice_priority_note(v) || *prio_why)
        fprintf(stderr, "cabin voice: threads at normal priority: %s\n", *prio_why ? prio_why : voice_priority_note(v));
    if (stats) printf("voice ready in %.0f ms (recogniser, synthesizer and devices loaded and warmed)\n", voice_ready_ms(v));
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
    if (rc) fprintf(stderr, "cabin voice: %s; voice is off (cabin chat still works)\n", err.msg);
    if (keys) { voice_stop(v); pthread_join(kt, NULL); }
    if (stats) print_summary(&app);
    voice_close(v);
    assistant_close(&app.as);
    return rc ? 1 : 0;
}

static const opt_def AUDIO_OPTS[] = {
    { "devices", NULL, OPT_POS, 0, NULL, "list the devices", NULL, NULL, NULL },
};

static const cmd_spec AUDIO_SPEC = {
    "cabin audio", "cabin audio devices",
    "Lists the capture and playback devices (index and name for\n"
    "cabin voice --audio-in / --audio-out).\n",
};

int cmd_audio(int argc, char **argv) {
    const char *what = NULL;
    opt_table own = OPT_TABLE(AUDIO_OPTS, &what);
    int prc = opts_parse(&AUDIO_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (!what) { opts_help(stdout, &AUDIO_SPEC, &own, 1); return 0; }
    if (strcmp(what, "devices") != 0) {
        fprintf(stderr, "cabin audio: unknown subcommand '%s' (see cabin audio --help)\n", what);
        return 2;
    }
    errbuf err = {{0}};
    if (audio_list_devices(stdout, &err)) { fprintf(stderr, "cabin audio: %s\n", err.msg); return 1; }
    return 0;
}
