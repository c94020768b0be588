// The voice pipeline in the workbench (audio/voice.h): push-to-talk on F5 (a terminal has no
// key-up, so F5 toggles talking on and off), the `:voice FILE.wav` command, and the view the
// Voice panel draws. audio/ knows nothing of the engine: a recognised turn goes to the worker
// like a typed one (worker_say_voice), and the reply's pieces come back to voice_reply_piece, so
// the reply is spoken clause by clause while it is being generated.
//
// Inputs (--audio-in):
//   a device (default: the default capture device): one pipeline, opened at start on a thread
//     of its own and capturing until the workbench closes; F5 presses and releases it, and a
//     press while cabin answers interrupts it (barge-in). No device: one line, voice off.
//   FILE.wav, a recorded microphone: each F5 press opens a pipeline whose input is the
//     recording followed by PAD_S of silence, played at the wall clock's pace; F5 again releases
//     it. When the reply has been spoken the pipeline closes, so a WAV output is complete (each
//     turn writes it anew).
// `:voice FILE.wav` runs the turns the VAD finds in the file (full speed, as scenes do), speaking
// to --audio-out only when that is a WAV file.
#include "ui/ui.h"
#include "audio/device.h"
#include "audio/voice.h"
#include "audio/wav.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define RATE 16000            // the pipeline's capture rate
#define PAD_S 30              // silence after a recorded microphone's speech

typedef struct inst {         // one open pipeline; the hooks' ud
    struct tvoice *tv;
    voice *v;
    bool ptt;                 // push-to-talk (else the VAD, for `:voice FILE`)
    bool recorded;            // the WAV microphone: closes when its turn is done
    bool spoke;               // the reply's first piece came
} inst;

enum { REQ_NONE, REQ_PTT, REQ_FILE };

struct tvoice {
    worker *w;
    char in[1024], out[1024];
    bool in_file, out_given, out_wav;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ui_voice_view view;      // under mu
    int rest_state;           // the state when nothing runs (TV_OFF or TV_IDLE) ...
    char rest_line[240];      // ... and its line
    bool stop;
    bool talking;             // F5 toggled on
    inst *ptt_inst;           // the pipeline F5 acts on (NULL: none open)
    inst *file_inst;          // a `:voice FILE` run
    bool file_busy;           // a `:voice FILE` is queued or running
    int req;
    char req_path[1024];
    pthread_t host_th, dev_th, tap_th;
    bool host_started, dev_started, tap_started;
    // the level of a capture device, read from a second stream of it when the device allows
    audio_in *tap;
    atomic_bool tap_stop;
    bool tap_live;
    float tap_db;
    // the recorded microphone: the file's samples (for the level) and the padded copy's path
    wav_data mic;
    char mic_path[128];
    double mic_t0;            // when the current press started playing it (0: not playing)
};

static bool is_wav(const char *spec) {
    size_t n = spec ? strlen(spec) : 0;
    return n > 4 && strcasecmp(spec + n - 4, ".wav") == 0;
}

static const char *base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static float level_db(const int16_t *x, size_t n) {
    if (!n) return -100;
    double e = 0;
    for (size_t i = 0; i < n; i++) e += (double)x[i] * x[i];
    double rms = sqrt(e / (double)n) / 32768.0;
    return rms > 1e-5 ? (float)(20 * log10(rms)) : -100;
}

// The resting state and line (under mu), shown at once when nothing runs.
static void rest(tvoice *tv, int state, const char *line) {
    tv->rest_state = state;
    snprintf(tv->rest_line, sizeof tv->rest_line, "%.239s", line);
    if (!tv->ptt_inst && !tv->file_inst) {
        tv->view.state = state;
        snprintf(tv->view.line, sizeof tv->view.line, "%.239s", line);
    }
}

// ---- the pipeline's hooks (ud: the inst) ----
static bool piece_cb(void *ud, const char *p, int len) {
    inst *in = ud;
    if (!in->spoke) {
        in->spoke = true;
        pthread_mutex_lock(&in->tv->mu);
        if (in->tv->view.state == TV_THINKING) in->tv->view.state = TV_SPEAKING;
        pthread_mutex_unlock(&in->tv->mu);
    }
    return voice_reply_piece(in->v, p, len);
}

static int h_reply(void *ud, voice *v, const char *text, errbuf *err) {
    inst *in = ud;
    (void)v;
    in->spoke = false;
    int rc = worker_say_voice(in->tv->w, text, piece_cb, in);
    if (rc == -2) return err_set(err, "the spoken turn was dropped");
    return rc ? err_set(err, "the reply failed (the conversation says why)") : 0;
}

static void h_cancel(void *ud) { worker_cancel_voice(((inst *)ud)->tv->w); }

static void h_transcript(void *ud, const char *text) {
    inst *in = ud;
    tvoice *tv = in->tv;
    pthread_mutex_lock(&tv->mu);
    snprintf(tv->view.transcript, sizeof tv->view.transcript, "%s", text);
    tv->view.state = TV_THINKING;
    if (in->ptt) tv->talking = false;   // the utterance ended (release, or the input ran out)
    pthread_mutex_unlock(&tv->mu);
}

static void h_turn(void *ud, const voice_turn_stats *st) {
    inst *in = ud;
    tvoice *tv = in->tv;
    pthread_mutex_lock(&tv->mu);
    ui_voice_view *vw = &tv->view;
    vw->turns++;
    vw->asr_ms = st->asr_final_ms;
    vw->first_token_ms = st->first_token_ms;
    vw->audio_played = st->first_audio_ms >= 0;
    vw->first_audio_ms = st->first_audio_ms >= 0 ? st->first_audio_ms : st->first_write_ms;
    vw->barged_in = st->barged_in;
    vw->turn_vad = !in->ptt;
    if (st->asr_refused) {   // not sent to the model (asr_result.refused): say so beside what was heard
        vw->refused++;
        snprintf(vw->refused_text, sizeof vw->refused_text, "%s", vw->transcript);
        size_t k = strlen(vw->transcript);
        snprintf(vw->transcript + k, sizeof vw->transcript - k, " (not a command)");
    }
    if (vw->state == TV_THINKING || vw->state == TV_SPEAKING) vw->state = in->ptt ? TV_IDLE : TV_LISTENING;
    pthread_mutex_unlock(&tv->mu);
    if (in->recorded) voice_stop(in->v);   // its one turn is done
}

static void h_state(void *ud, const char *s) {
    inst *in = ud;
    tvoice *tv = in->tv;
    bool stop_it = false;
    pthread_mutex_lock(&tv->mu);
    if (!strcmp(s, "hearing")) tv->view.state = TV_LISTENING;
    else if (!strcmp(s, "listening")) {
        if (tv->view.state == TV_RECOGNISING) {   // released, and nothing was recognised
            snprintf(tv->view.transcript, sizeof tv->view.transcript, "(nothing recognised)");
            tv->view.state = in->ptt ? TV_IDLE : TV_LISTENING;
            stop_it = in->recorded;
        } else if (!in->ptt) {
            tv->view.state = TV_LISTENING;
        }
    }
    pthread_mutex_unlock(&tv->mu);
    if (stop_it) voice_stop(in->v);
}

static voice *open_inst(inst *in, const voice_opts *vo, errbuf *err) {
    voice_hooks h = { .ud = in, .reply = h_reply, .cancel = h_cancel, .on_transcript = h_transcript,
                      .on_turn = h_turn, .on_state = h_state };
    // actions are applied by app_say on the worker (as for typed turns), so on_action is unset
    in->v = voice_open(vo, &h, err);
    return in->v;
}

static void post_error(tvoice *tv, const char *what, const char *msg) {
    char line[700];
    snprintf(line, sizeof line, "%.200s: %.480s", what, msg);
    worker_post_line(tv->w, MSG_ERROR, line);
}

// ---- the recorded microphone (host thread) ----
static int mic_prepare(tvoice *tv, errbuf *err) {
    if (wav_read(tv->in, &tv->mic, err)) return -1;
    size_t pad = (size_t)tv->mic.rate * PAD_S;
    int16_t *x = xcalloc(tv->mic.n + pad, sizeof *x);
    memcpy(x, tv->mic.samples, tv->mic.n * sizeof *x);
    const char *dir = getenv("TMPDIR");
    snprintf(tv->mic_path, sizeof tv->mic_path, "%.80s/cabin-mic-XXXXXX.wav", dir && *dir ? dir : "/tmp");
    int fd = mkstemps(tv->mic_path, 4);
    int rc = 0;
    if (fd < 0) rc = err_set(err, "%s: cannot make a temporary file", tv->mic_path);
    else {
        close(fd);
        rc = wav_write(tv->mic_path, x, tv->mic.n + pad, tv->mic.rate, err);
        if (rc) unlink(tv->mic_path);
    }
    free(x);
    if (rc) tv->mic_path[0] = 0;
    return rc;
}

// One F5 press with the recorded microphone: open, listen until released, answer, close.
static void run_recorded(tvoice *tv) {
    errbuf err = {{0}};
    voice_opts vo = voice_opts_default();
    vo.in = tv->mic_path;
    vo.out = tv->out_given ? tv->out : NULL;
    vo.realtime = true;           // a microphone delivers at the wall clock's pace; so plays a WAV out
    vo.hands_free = false;
    vo.half_duplex = false;
    inst *in = xcalloc(1, sizeof *in);
    in->tv = tv;
    in->ptt = in->recorded = true;
    voice *v = open_inst(in, &vo, &err);
    if (!v) {
        post_error(tv, "voice", err.msg);
        pthread_mutex_lock(&tv->mu);
        if (tv->req != REQ_PTT) tv->talking = false;
        tv->view.state = tv->rest_state;
        pthread_mutex_unlock(&tv->mu);
        free(in);
        return;
    }
    pthread_mutex_lock(&tv->mu);
    bool go = tv->talking && !tv->stop;
    if (tv->req == REQ_PTT) tv->req = REQ_NONE;   // this open serves the latest press
    if (go) {
        tv->ptt_inst = in;
        voice_ptt_press(v);
        tv->mic_t0 = now_sec();
        tv->view.state = TV_LISTENING;
        const char *d = voice_describe(v), *rest_of = strstr(d, " | out: ");   // the recording's own name
        snprintf(tv->view.line, sizeof tv->view.line, "in: %.100s (recording)%.200s", base_name(tv->in), rest_of ? rest_of : "");
    } else {
        tv->view.state = tv->rest_state;
    }
    pthread_mutex_unlock(&tv->mu);
    if (go && voice_run(v, &err)) post_error(tv, "voice", err.msg);
    pthread_mutex_lock(&tv->mu);
    tv->ptt_inst = NULL;
    tv->mic_t0 = 0;
    pthread_mutex_unlock(&tv->mu);
    voice_close(v);               // a WAV output is complete from here on
    pthread_mutex_lock(&tv->mu);
    if (tv->req != REQ_PTT) {     // unless F5 was pressed again meanwhile (barge-in)
        tv->talking = false;
        tv->view.state = tv->rest_state;
        snprintf(tv->view.line, sizeof tv->view.line, "%.239s", tv->rest_line);
    }
    pthread_mutex_unlock(&tv->mu);
    free(in);
}

// `:voice FILE.wav`: the VAD takes the file's turns, one reply after another.
static void run_file(tvoice *tv, const char *path) {
    errbuf err = {{0}};
    voice_opts vo = voice_opts_default();
    vo.in = path;
    vo.out = tv->out_wav ? tv->out : NULL;
    vo.hands_free = true;
    vo.half_duplex = true;
    inst *in = xcalloc(1, sizeof *in);
    in->tv = tv;
    voice *v = open_inst(in, &vo, &err);
    if (v) {
        pthread_mutex_lock(&tv->mu);
        tv->file_inst = in;
        tv->view.hands_free = true;
        tv->view.state = TV_LISTENING;
        snprintf(tv->view.line, sizeof tv->view.line, "%.239s", voice_describe(v));
        bool stop = tv->stop;
        pthread_mutex_unlock(&tv->mu);
        if (!stop && voice_run(v, &err)) post_error(tv, path, err.msg);
        pthread_mutex_lock(&tv->mu);
        tv->file_inst = NULL;
        pthread_mutex_unlock(&tv->mu);
        voice_close(v);
    } else {
        post_error(tv, path, err.msg);
    }
    pthread_mutex_lock(&tv->mu);
    tv->file_busy = false;
    tv->view.hands_free = false;
    if (!tv->ptt_inst || tv->view.state == TV_LISTENING) tv->view.state = tv->ptt_inst ? TV_IDLE : tv->rest_state;
    snprintf(tv->view.line, sizeof tv->view.line, "%.239s", tv->rest_line);
    pthread_mutex_unlock(&tv->mu);
    free(in);
}

static void *host_main(void *ud) {
    tvoice *tv = ud;
    pthread_mutex_lock(&tv->mu);
    for (;;) {
        while (!tv->stop && tv->req == REQ_NONE) pthread_cond_wait(&tv->cv, &tv->mu);
        if (tv->stop) break;
        int r = tv->req;
        char path[1024];
        snprintf(path, sizeof path, "%s", tv->req_path);
        tv->req = REQ_NONE;
        pthread_mutex_unlock(&tv->mu);
        if (r == REQ_PTT) run_recorded(tv);
        else run_file(tv, path);
        pthread_mutex_lock(&tv->mu);
    }
    pthread_mutex_unlock(&tv->mu);
    return NULL;
}

// ---- a capture device ----
static void *tap_main(void *ud) {
    tvoice *tv = ud;
    int16_t x[RATE / 50];
    while (!atomic_load(&tv->tap_stop)) {
        errbuf e;
        long n = audio_in_read(tv->tap, x, sizeof x / sizeof x[0], 50, &e);
        if (n < 0) break;
        if (n == 0) continue;
        float db = level_db(x, (size_t)n);
        pthread_mutex_lock(&tv->mu);
        tv->tap_db = db;
        tv->tap_live = true;
        pthread_mutex_unlock(&tv->mu);
    }
    pthread_mutex_lock(&tv->mu);
    tv->tap_live = false;
    pthread_mutex_unlock(&tv->mu);
    return NULL;
}

static void *dev_main(void *ud) {
    tvoice *tv = ud;
    errbuf err = {{0}};
    const char *spec = tv->in[0] ? tv->in : NULL;
    char line[300];
    // A probe first: no device costs no recogniser start-up.
    audio_in *probe = audio_in_open(spec, RATE, false, &err);
    if (!probe) {
        snprintf(line, sizeof line, "voice off: %.280s", err.msg);
        pthread_mutex_lock(&tv->mu);
        rest(tv, TV_OFF, line);
        pthread_mutex_unlock(&tv->mu);
        if (spec) worker_post_line(tv->w, MSG_INFO, line);   // asked for by name: say so in the chat too
        return NULL;
    }
    audio_in_close(probe);
    voice_opts vo = voice_opts_default();
    vo.in = spec;
    vo.out = tv->out_given ? tv->out : "default";
    vo.hands_free = false;
    inst *in = xcalloc(1, sizeof *in);
    in->tv = tv;
    in->ptt = true;
    char note[300] = "";
    voice *v = open_inst(in, &vo, &err);
    if (!v && !tv->out_given) {   // a microphone without speakers still takes spoken turns
        snprintf(note, sizeof note, " (not spoken: %.200s)", err.msg);
        vo.out = NULL;
        v = open_inst(in, &vo, &err);
    }
    if (!v) {
        snprintf(line, sizeof line, "voice off: %.280s", err.msg);
        pthread_mutex_lock(&tv->mu);
        rest(tv, TV_OFF, line);
        pthread_mutex_unlock(&tv->mu);
        if (spec) worker_post_line(tv->w, MSG_INFO, line);
        free(in);
        return NULL;
    }
    tv->tap = audio_in_open(spec, RATE, false, &err);   // the level meter; a device may refuse it
    if (tv->tap) tv->tap_started = pthread_create(&tv->tap_th, NULL, tap_main, tv) == 0;
    if (*voice_priority_note(v)) {   // said once
        snprintf(line, sizeof line, "voice threads at normal priority: %.250s", voice_priority_note(v));
        worker_post_line(tv->w, MSG_INFO, line);
    }
    pthread_mutex_lock(&tv->mu);
    // open, loaded and warmed: the first push-to-talk is answered as fast as the tenth
    snprintf(line, sizeof line, "ready (%.0f ms) | %.220s%.59s", voice_ready_ms(v), voice_describe(v), note);
    tv->ptt_inst = in;
    rest(tv, TV_IDLE, line);
    snprintf(tv->view.line, sizeof tv->view.line, "%.239s", line);
    if (tv->talking) { voice_ptt_press(v); tv->view.state = TV_LISTENING; }
    else if (tv->view.state == TV_STARTING) tv->view.state = TV_IDLE;
    bool stop = tv->stop;
    pthread_mutex_unlock(&tv->mu);
    int rc = stop ? 0 : voice_run(v, &err);
    pthread_mutex_lock(&tv->mu);
    tv->ptt_inst = NULL;
    if (rc) {
        snprintf(line, sizeof line, "voice off: %.280s", err.msg);
        rest(tv, TV_OFF, line);
    }
    pthread_mutex_unlock(&tv->mu);
    if (rc) worker_post_line(tv->w, MSG_ERROR, line);
    if (tv->tap_started) { atomic_store(&tv->tap_stop, true); pthread_join(tv->tap_th, NULL); tv->tap_started = false; }
    audio_in_close(tv->tap);
    tv->tap = NULL;
    voice_close(v);
    free(in);
    return NULL;
}

// ---- the UI thread's side ----
tvoice *tvoice_start(worker *w, const char *in, const char *out, bool off) {
    tvoice *tv = xcalloc(1, sizeof *tv);
    tv->w = w;
    pthread_mutex_init(&tv->mu, NULL);
    pthread_cond_init(&tv->cv, NULL);
    snprintf(tv->in, sizeof tv->in, "%s", in ? in : "");
    snprintf(tv->out, sizeof tv->out, "%s", out ? out : "");
    tv->in_file = is_wav(in);
    tv->out_given = out && *out;
    tv->out_wav = is_wav(out);
    tv->view.asr_ms = tv->view.first_token_ms = tv->view.first_audio_ms = -1;
    tv->host_started = pthread_create(&tv->host_th, NULL, host_main, tv) == 0;
    char line[1200];
    errbuf err = {{0}};
    pthread_mutex_lock(&tv->mu);   // the host thread runs already
    if (off) {
        rest(tv, TV_OFF, "voice off (--no-voice); :voice FILE.wav still works");
    } else if (tv->in_file) {
        if (mic_prepare(tv, &err)) {
            snprintf(line, sizeof line, "voice off: %.280s", err.msg);
            rest(tv, TV_OFF, line);
            worker_post_line(w, MSG_INFO, line);
        } else {
            snprintf(line, sizeof line, "in: %.500s (recording) | out: %.500s", base_name(tv->in),
                     tv->out_given ? base_name(tv->out) : "(none)");
            rest(tv, TV_IDLE, line);
        }
    } else {
        rest(tv, TV_STARTING, "opening the audio device...");
        tv->dev_started = pthread_create(&tv->dev_th, NULL, dev_main, tv) == 0;
        if (!tv->dev_started) rest(tv, TV_OFF, "voice off: cannot start the audio thread");
    }
    pthread_mutex_unlock(&tv->mu);
    return tv;
}

void tvoice_stop(tvoice *tv) {
    if (!tv) return;
    pthread_mutex_lock(&tv->mu);
    tv->stop = true;
    if (tv->ptt_inst) voice_stop(tv->ptt_inst->v);
    if (tv->file_inst) voice_stop(tv->file_inst->v);
    pthread_cond_broadcast(&tv->cv);
    pthread_mutex_unlock(&tv->mu);
    // A pipeline still opening sees stop once it is open (under mu, where it is published).
    if (tv->dev_started) pthread_join(tv->dev_th, NULL);
    if (tv->host_started) pthread_join(tv->host_th, NULL);
    if (tv->mic_path[0]) unlink(tv->mic_path);
    wav_free(&tv->mic);
    pthread_mutex_destroy(&tv->mu);
    pthread_cond_destroy(&tv->cv);
    free(tv);
}

int tvoice_ptt(tvoice *tv, char *msg, size_t n) {
    int rc = 0;
    pthread_mutex_lock(&tv->mu);
    ui_voice_view *vw = &tv->view;
    if (tv->file_busy) {
        snprintf(msg, n, "voice: a :voice file is being played (F5 after it)");
    } else if (tv->rest_state == TV_OFF) {
        snprintf(msg, n, "%s", tv->rest_line);
        rc = -1;
    } else if (!tv->talking) {
        tv->talking = true;
        if (tv->in_file) {            // plays the recording from its start; a turn in flight stops
            tv->req = REQ_PTT;
            if (tv->ptt_inst) voice_stop(tv->ptt_inst->v);
            vw->state = TV_STARTING;
            pthread_cond_broadcast(&tv->cv);
        } else if (tv->ptt_inst) {    // barge-in, if cabin is answering, is the pipeline's
            voice_ptt_press(tv->ptt_inst->v);
            vw->state = TV_LISTENING;
        }
        snprintf(msg, n, "voice: talk now, F5 again when done");
    } else {
        tv->talking = false;
        if (tv->ptt_inst) {
            voice_ptt_release(tv->ptt_inst->v);
            vw->state = TV_RECOGNISING;
            snprintf(msg, n, "voice: recognising...");
        } else {
            snprintf(msg, n, "voice: stopped before the microphone was open");
        }
    }
    pthread_mutex_unlock(&tv->mu);
    return rc;
}

int tvoice_file(tvoice *tv, const char *path, errbuf *err) {
    pthread_mutex_lock(&tv->mu);
    int st = tv->view.state;
    bool busy = tv->file_busy || tv->talking || (st >= TV_LISTENING && st <= TV_SPEAKING);
    if (!busy) {
        tv->file_busy = true;
        tv->req = REQ_FILE;
        snprintf(tv->req_path, sizeof tv->req_path, "%s", path);
        pthread_cond_broadcast(&tv->cv);
    }
    pthread_mutex_unlock(&tv->mu);
    return busy ? err_set(err, "voice %s: the voice pipeline is busy with a turn", path) : 0;
}

bool tvoice_busy(tvoice *tv) {
    pthread_mutex_lock(&tv->mu);
    int st = tv->view.state;
    bool busy = tv->file_busy || (st >= TV_RECOGNISING && st <= TV_SPEAKING) || (tv->in_file && st == TV_STARTING);
    pthread_mutex_unlock(&tv->mu);
    return busy;
}

bool tvoice_talking(tvoice *tv) {
    pthread_mutex_lock(&tv->mu);
    bool t = tv->talking;
    pthread_mutex_unlock(&tv->mu);
    return t;
}

void tvoice_view(tvoice *tv, ui_voice_view *out) {
    pthread_mutex_lock(&tv->mu);
    *out = tv->view;
    out->have_level = false;
    if (tv->mic_t0 > 0 && tv->mic.n) {   // the recording's level where it is now playing
        size_t pos = (size_t)((now_sec() - tv->mic_t0) * tv->mic.rate), win = (size_t)tv->mic.rate / 20;
        out->have_level = true;
        out->level_db = pos < tv->mic.n ? level_db(tv->mic.samples + (pos > win ? pos - win : 0), pos > win ? win : pos) : -100;
    } else if (tv->tap_live) {
        out->have_level = true;
        out->level_db = tv->tap_db;
    }
    pthread_mutex_unlock(&tv->mu);
}
