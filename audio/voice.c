// The voice pipeline (see voice.h).
#include "audio/voice.h"
#include "audio/asr_fsg.h"
#include "audio/device.h"
#include "audio/tts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATE 16000            // capture and recognition rate, Hz
#define CHUNK 320             // capture read size: 20 ms
#define PREROLL (RATE * 3 / 10)   // audio kept before a VAD onset: 300 ms
#define MAX_CLAUSES 64
#define LEAD_SILENCE 64       // |sample| below this before a reply's first sound is silence

voice_opts voice_opts_default(void) {
    voice_opts o;
    memset(&o, 0, sizeof o);
    o.hands_free = true;
    o.vad = vad_params_default();
    o.asr = asr_opts_default();
    o.clause_max_words = 12;
    o.clause_first_words = 4;
    o.nice = VOICE_NICE;
    return o;
}

struct voice {
    voice_opts o;
    voice_hooks h;
    audio_in *in;
    audio_out *out;
    asr *asr;
    vad vad;
    int end_silence_ms;            // the silence heard after the speech when the VAD ended it
    bool ended_at_pause;           // ... at a pause, the command whole (pause_ends_turn)
    char desc[768];
    char prio_note[200];
    pid_t prio_tid;                // voice_open's thread, raised to o.nice from prio_prev (0: not)
    int prio_prev;
    double ready_ms;
    _Atomic bool stop;
    _Atomic int ptt;               // 1 pressed, 0 released (push-to-talk)
    // pre-roll: the last PREROLL samples (voice_run's thread only)
    int16_t preroll[PREROLL];
    size_t pre_pos, pre_fill;
    // the current turn
    bool in_utt;
    double t_onset;
    voice_turn_stats cur;          // being filled (several threads; fields set once each)
    _Atomic double t_end, t_first_token, t_last_token, t_first_write, t_first_clause;
    _Atomic bool trim_lead;        // drop the reply's leading silence (TTS thread clears it)
    int turn_no;
    // reply thread
    pthread_t reply_thread;
    bool reply_running;            // a thread to join
    _Atomic bool reply_done;
    _Atomic bool abort;            // barge-in: stop generating and speaking this turn
    _Atomic bool out_failed;       // a write to the playback device failed: voice_run stops
    char reply_text[512];
    bool reply_refused;            // the reply thread says "Sorry, I didn't catch that." instead (asr_result.refused)
    clause_splitter cs;            // reply thread only
    // TTS thread and its queue of clauses
    pthread_t tts_thread;
    bool tts_started;
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    char *queue[MAX_CLAUSES];
    int qhead, qtail;              // queue[qhead..qtail) pending
    bool tts_busy, tts_quit;
    char spoken[1024];             // clauses given to TTS this turn (under qlock)
    int clauses;
    // the latest finished turn (for the panel)
    pthread_mutex_t slock;
    voice_turn_stats last;
    bool have_last;
};

static void state(voice *v, const char *s) { if (v->h.on_state) v->h.on_state(v->h.ud, s); }

// ---- TTS thread ----
typedef struct sink_ctx { voice *v; } sink_ctx;

static int tts_sink_fn(void *ud, const int16_t *x, size_t n) {
    voice *v = ud;
    if (atomic_load(&v->abort)) return 1;
    if (!v->out) return 0;
    // espeak-ng starts every text with ~45 ms of digital silence: the reply's is not played, so
    // its first sample out is its first audible one (the pauses between clauses are kept).
    if (atomic_load(&v->trim_lead)) {
        size_t i = 0;
        while (i < n && x[i] > -LEAD_SILENCE && x[i] < LEAD_SILENCE) i++;
        if (i == n) return 0;
        x += i;
        n -= i;
        atomic_store(&v->trim_lead, false);
    }
    double zero = 0;
    atomic_compare_exchange_strong(&v->t_first_write, &zero, now_sec());
    long w = audio_out_write(v->out, x, n, &v->abort);
    if (w < 0) atomic_store(&v->out_failed, true);
    return w < 0 || atomic_load(&v->abort) ? 1 : 0;
}

static void *tts_main(void *ud) {
    voice *v = ud;
    pthread_mutex_lock(&v->qlock);
    for (;;) {
        while (v->qhead == v->qtail && !v->tts_quit) pthread_cond_wait(&v->qcond, &v->qlock);
        if (v->qhead == v->qtail && v->tts_quit) break;
        char *text = v->queue[v->qhead % MAX_CLAUSES];
        v->qhead++;
        v->tts_busy = true;
        pthread_mutex_unlock(&v->qlock);
        errbuf err = {{0}};
        int rc = atomic_load(&v->abort) ? 1 : tts_speak(text, tts_sink_fn, v, &err);
        if (rc == 1 && v->out) audio_out_flush(v->out);   // anything that slipped in after a barge-in
        free(text);
        pthread_mutex_lock(&v->qlock);
        v->tts_busy = false;
        pthread_cond_broadcast(&v->qcond);
    }
    pthread_mutex_unlock(&v->qlock);
    return NULL;
}

static void emit_clause(void *ud, const char *clause) {
    voice *v = ud;
    if (atomic_load(&v->abort)) return;
    pthread_mutex_lock(&v->qlock);
    size_t sl = strlen(v->spoken);
    snprintf(v->spoken + sl, sizeof v->spoken - sl, "%s%s", sl ? " " : "", clause);
    if (v->clauses++ == 0) atomic_store(&v->t_first_clause, now_sec());
    if (v->qtail - v->qhead < MAX_CLAUSES) {
        v->queue[v->qtail % MAX_CLAUSES] = xstrdup(clause);
        v->qtail++;
        pthread_cond_broadcast(&v->qcond);
    }
    pthread_mutex_unlock(&v->qlock);
}

static void emit_action(void *ud, const char *action) {
    voice *v = ud;
    snprintf(v->cur.action, sizeof v->cur.action, "%s", action);
    if (v->h.on_action) v->h.on_action(v->h.ud, action);
}

// Drops queued clauses (barge-in).
static void tts_drop_queue(voice *v) {
    pthread_mutex_lock(&v->qlock);
    while (v->qhead != v->qtail) free(v->queue[v->qhead++ % MAX_CLAUSES]);
    pthread_mutex_unlock(&v->qlock);
}

static bool tts_idle(voice *v) {
    pthread_mutex_lock(&v->qlock);
    bool idle = v->qhead == v->qtail && !v->tts_busy;
    pthread_mutex_unlock(&v->qlock);
    return idle;
}

// ---- reply thread ----
bool voice_reply_piece(voice *v, const char *piece, int len) {
    if (atomic_load(&v->abort)) return false;
    double now = now_sec(), zero = 0;
    atomic_compare_exchange_strong(&v->t_first_token, &zero, now);
    atomic_store(&v->t_last_token, now);
    clause_push(&v->cs, piece, (size_t)len, emit_clause, emit_action, v);
    return true;
}

static void *reply_main(void *ud) {
    voice *v = ud;
    errbuf err = {{0}};
    clause_init(&v->cs, v->o.clause_max_words);
    v->cs.first_max_words = v->o.clause_first_words;
    if (v->reply_refused)   // speech the grammar does not hold, forced into its words: not acted on
        emit_clause(v, "Sorry, I didn't catch that.");
    else if (v->h.reply(v->h.ud, v, v->reply_text, &err) && !atomic_load(&v->abort))
        emit_clause(v, "Sorry, something went wrong.");
    if (!atomic_load(&v->abort)) clause_finish(&v->cs, emit_clause, emit_action, v);
    clause_free(&v->cs);
    atomic_store(&v->reply_done, true);
    return NULL;
}

// ---- turns ----
static void finish_turn(voice *v) {
    if (v->reply_running) {
        pthread_join(v->reply_thread, NULL);
        v->reply_running = false;
    }
    voice_turn_stats *s = &v->cur;
    double te = atomic_load(&v->t_end);
    double tf = atomic_load(&v->t_first_token), tl = atomic_load(&v->t_last_token);
    double tw = atomic_load(&v->t_first_write), tp = v->out ? audio_out_first_played(v->out) : 0;
    double tc = atomic_load(&v->t_first_clause);
    s->first_token_ms = tf > 0 ? (tf - te) * 1000 : -1;
    s->token_to_clause_ms = tf > 0 && tc >= tf ? (tc - tf) * 1000 : -1;
    s->last_token_ms = tl > 0 ? (tl - te) * 1000 : -1;
    s->first_write_ms = tw > 0 ? (tw - te) * 1000 : -1;
    s->first_audio_ms = tp > 0 ? (tp - te) * 1000 : -1;
    pthread_mutex_lock(&v->qlock);
    snprintf(s->spoken, sizeof s->spoken, "%s", v->spoken);
    s->clauses = v->clauses;
    pthread_mutex_unlock(&v->qlock);
    pthread_mutex_lock(&v->slock);
    v->last = *s;
    v->have_last = true;
    pthread_mutex_unlock(&v->slock);
    if (v->h.on_turn) v->h.on_turn(v->h.ud, s);
    s->turn = 0;   // no turn pending
}

static bool reply_active(voice *v) {
    return v->cur.turn && (!atomic_load(&v->reply_done) || !tts_idle(v) || (v->out && audio_out_pending(v->out)));
}

// A new utterance starts while the assistant is thinking or speaking: stop both.
static void barge_in(voice *v) {
    double t0 = now_sec();
    atomic_store(&v->abort, true);
    if (v->h.cancel) v->h.cancel(v->h.ud);
    if (v->out) audio_out_flush(v->out);
    tts_drop_queue(v);
    // Wait (bounded) until generation and speech have stopped: the stop time is a figure we report.
    for (int i = 0; i < 400 && (!atomic_load(&v->reply_done) || !tts_idle(v)); i++) sleep_ms(1);
    if (v->out) {
        audio_out_flush(v->out);
        for (int i = 0; i < 50 && audio_out_pending(v->out); i++) sleep_ms(1);
    }
    v->cur.barged_in = true;
    v->cur.barge_stop_ms = (now_sec() - t0) * 1000;
    finish_turn(v);
}

static void start_utterance(voice *v, errbuf *err, int *rc) {
    if (v->cur.turn && reply_active(v)) barge_in(v);
    else if (v->cur.turn) finish_turn(v);
    v->in_utt = true;
    v->t_onset = now_sec();
    v->end_silence_ms = -1;   // (push-to-talk, the recording's end: no silence was waited for)
    v->ended_at_pause = false;
    state(v, "hearing");
    if (asr_start(v->asr, err)) { *rc = -1; return; }
    // the pre-roll, oldest first (it holds the onset frames too)
    size_t start = (v->pre_pos + PREROLL - v->pre_fill) % PREROLL;
    for (size_t i = 0; i < v->pre_fill; ) {
        size_t at = (start + i) % PREROLL;
        size_t k = PREROLL - at < v->pre_fill - i ? PREROLL - at : v->pre_fill - i;
        if (asr_feed(v->asr, v->preroll + at, k, err)) { *rc = -1; return; }
        i += k;
    }
}

static void end_utterance(voice *v, bool drop, errbuf *err, int *rc) {
    v->in_utt = false;
    double t_end = now_sec();
    asr_result r;
    if (asr_end(v->asr, &r, err)) { *rc = -1; return; }
    if (drop || !r.text[0]) { state(v, "listening"); return; }
    memset(&v->cur, 0, sizeof v->cur);
    v->cur.turn = ++v->turn_no;
    v->cur.speech_s = r.audio_s;
    v->cur.asr_final_ms = (now_sec() - t_end) * 1000;
    v->cur.asr_rtf = r.audio_s > 0 ? r.cpu_s / r.audio_s : 0;
    v->cur.asr_settled = r.settled;
    v->cur.asr_redecoded = r.redecoded;
    v->cur.asr_search = r.search;
    v->cur.asr_conf = r.conf;
    v->cur.asr_fit = r.fit;
    v->cur.asr_refused = r.refused;
    v->cur.end_silence_ms = v->end_silence_ms;
    v->cur.ended_at_pause = v->ended_at_pause;
    snprintf(v->cur.transcript, sizeof v->cur.transcript, "%s", r.text);
    if (v->h.on_transcript) v->h.on_transcript(v->h.ud, r.text);
    // the reply
    atomic_store(&v->t_end, t_end);
    atomic_store(&v->t_first_token, 0.0);
    atomic_store(&v->t_first_clause, 0.0);
    atomic_store(&v->t_last_token, 0.0);
    atomic_store(&v->t_first_write, 0.0);
    atomic_store(&v->trim_lead, true);
    atomic_store(&v->abort, false);
    atomic_store(&v->reply_done, false);
    pthread_mutex_lock(&v->qlock);
    v->spoken[0] = 0;
    v->clauses = 0;
    pthread_mutex_unlock(&v->qlock);
    if (v->out) audio_out_mark(v->out);
    snprintf(v->reply_text, sizeof v->reply_text, "%s", r.text);
    v->reply_refused = r.refused;
    state(v, "thinking");
    pthread_create(&v->reply_thread, NULL, reply_main, v);
    v->reply_running = true;
}

// Hands-free, at a short pause (vad_params.pause_ms, when set): is what was said so far a whole
// command of the grammar, and much likelier to end there than to go on (FSG_ENDS)? Then the
// turn ends here rather than after the full hangover; a pause in the middle of a command ("set
// the temperature to ... 22", "less ... volume") waits.
static bool pause_ends_turn(voice *v) {
    int r = asr_reading_so_far(v->asr, NULL, 0);
    return r > 0 && (r & FSG_ENDS);
}

static void preroll_push(voice *v, const int16_t *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        v->preroll[v->pre_pos] = x[i];
        v->pre_pos = (v->pre_pos + 1) % PREROLL;
    }
    v->pre_fill = v->pre_fill + n > PREROLL ? PREROLL : v->pre_fill + n;
}

int voice_run(voice *v, errbuf *err) {
    int16_t x[CHUNK];
    int rc = 0;
    int ptt_prev = 0;
    state(v, "listening");
    while (!atomic_load(&v->stop) && rc == 0) {
        if (v->cur.turn && !reply_active(v)) finish_turn(v);
        if (v->o.half_duplex && v->cur.turn) { sleep_ms(2); continue; }
        errbuf rerr = {{0}};
        long n = audio_in_read(v->in, x, CHUNK, 20, &rerr);
        if (n < 0) {
            if (audio_in_is_file(v->in) && !rerr.msg[0]) n = -2;   // the end of the recording
            else { rc = err_set(err, "%s", rerr.msg); break; }
        }
        if (atomic_load(&v->out_failed)) {   // the speakers went away: voice stops, with the reason
            rc = err_set(err, "audio: playback device %s failed or vanished", audio_out_name(v->out));
            break;
        }
        if (n == -2) {   // end of the file: close an open utterance, let the last reply finish
            if (v->in_utt) end_utterance(v, false, err, &rc);
            while (v->cur.turn && reply_active(v) && !atomic_load(&v->stop)) sleep_ms(2);
            if (v->cur.turn) finish_turn(v);
            break;
        }
        if (!v->o.hands_free) {   // push-to-talk: press starts (and barges in), release ends
            int p = atomic_load(&v->ptt);
            if (p && !ptt_prev) start_utterance(v, err, &rc);
            if (!p && ptt_prev && v->in_utt) {
                if (n > 0 && asr_feed(v->asr, x, (size_t)n, err)) { rc = -1; break; }
                end_utterance(v, false, err, &rc);
                ptt_prev = p;
                continue;
            }
            ptt_prev = p;
            preroll_push(v, x, (size_t)n);
            if (v->in_utt && n > 0 && asr_feed(v->asr, x, (size_t)n, err)) rc = -1;
            continue;
        }
        size_t off = 0;
        while (off < (size_t)n && rc == 0) {
            size_t k;
            vad_event ev = vad_feed(&v->vad, x + off, (size_t)n - off, &k);
            preroll_push(v, x + off, k);
            if (ev == VAD_ONSET) start_utterance(v, err, &rc);
            else if (v->in_utt && asr_feed(v->asr, x + off, k, err)) rc = -1;
            v->ended_at_pause = ev == VAD_PAUSE && v->in_utt && rc == 0 && pause_ends_turn(v);
            if (v->ended_at_pause) ev = vad_end_now(&v->vad);
            if (ev == VAD_END || ev == VAD_DROP) {
                v->end_silence_ms = vad_silence_ms(&v->vad);
                end_utterance(v, ev == VAD_DROP, err, &rc);
            }
            off += k;
            if (ev == VAD_END && v->o.half_duplex) {   // listen again only after the reply
                while (reply_active(v) && !atomic_load(&v->stop)) sleep_ms(2);
                if (v->cur.turn) finish_turn(v);
            }
        }
    }
    if (v->in_utt) {   // stopped or failed mid-utterance: the recogniser ends it (its result unused)
        v->in_utt = false;
        asr_result dropped;
        errbuf ignored = {{0}};
        asr_end(v->asr, &dropped, &ignored);
    }
    if (v->cur.turn) {
        atomic_store(&v->abort, true);
        if (v->h.cancel) v->h.cancel(v->h.ud);
        finish_turn(v);
    }
    return rc;
}

static int discard_samples(void *ud, const int16_t *x, size_t n) { (void)ud; (void)x; (void)n; return 0; }

voice *voice_open(const voice_opts *o, const voice_hooks *h, errbuf *err) {
    voice *v = xcalloc(1, sizeof *v);
    v->o = *o;
    v->h = *h;
    pthread_mutex_init(&v->qlock, NULL);
    pthread_cond_init(&v->qcond, NULL);
    pthread_mutex_init(&v->slock, NULL);
    vad_init(&v->vad, &o->vad, RATE);
    atomic_store(&v->reply_done, true);
    double t0 = now_sec();
    // before any thread is started: they inherit it
    if (o->nice != VOICE_NICE_KEEP && prio_raise_self(o->nice, &v->prio_prev, v->prio_note, sizeof v->prio_note) == 1)
        v->prio_tid = prio_thread_id();   // put back by voice_close (lowering is always allowed)
    if (o->out && tts_init(o->tts_voice, o->tts_wpm, err)) goto fail;
    v->asr = asr_open(&o->asr, err);
    if (!v->asr) goto fail;
    // Warm-up: the searches over half a second of silence, the synthesizer over a word, unheard.
    asr_warm(v->asr, 0.5);
    if (o->out) {
        errbuf ignored = {{0}};
        tts_speak("ready.", discard_samples, NULL, &ignored);
    }
    v->in = audio_in_open(o->in, RATE, o->realtime, err);
    if (!v->in) goto fail;
    if (o->out) {
        v->out = audio_out_open(o->out, tts_rate(), o->realtime, err);
        if (!v->out) goto fail;
    }
    pthread_create(&v->tts_thread, NULL, tts_main, v);
    v->tts_started = true;
    v->ready_ms = (now_sec() - t0) * 1000;
    snprintf(v->desc, sizeof v->desc, "in: %s | out: %s | asr: %s | %s", audio_in_name(v->in),
             v->out ? audio_out_name(v->out) : "(none)", asr_describe(v->asr),
             o->hands_free ? "hands-free (VAD)" : "push-to-talk");
    return v;
fail:
    voice_close(v);
    return NULL;
}

void voice_close(voice *v) {
    if (!v) return;
    if (v->reply_running) {
        atomic_store(&v->abort, true);
        if (v->h.cancel) v->h.cancel(v->h.ud);
        pthread_join(v->reply_thread, NULL);
    }
    if (v->tts_started) {
        pthread_mutex_lock(&v->qlock);
        v->tts_quit = true;
        pthread_cond_broadcast(&v->qcond);
        pthread_mutex_unlock(&v->qlock);
        pthread_join(v->tts_thread, NULL);
    }
    tts_drop_queue(v);
    audio_out_close(v->out);
    audio_in_close(v->in);
    asr_close(v->asr);
    vad_free(&v->vad);
    pthread_mutex_destroy(&v->qlock);
    pthread_cond_destroy(&v->qcond);
    pthread_mutex_destroy(&v->slock);
    if (v->prio_tid) prio_set_thread(v->prio_tid, v->prio_prev, NULL, 0);
    free(v);
}

void voice_stop(voice *v) { atomic_store(&v->stop, true); }
void voice_ptt_press(voice *v) { atomic_store(&v->ptt, 1); }
void voice_ptt_release(voice *v) { atomic_store(&v->ptt, 0); }
const char *voice_describe(voice *v) { return v->desc; }
const char *voice_priority_note(voice *v) { return v->prio_note; }
double voice_ready_ms(voice *v) { return v->ready_ms; }

int voice_last_stats(voice *v, voice_turn_stats *out) {
    pthread_mutex_lock(&v->slock);
    bool have = v->have_last;
    if (have) *out = v->last;
    pthread_mutex_unlock(&v->slock);
    return have ? 0 : -1;
}
