// The voice pipeline: capture -> VAD / push-to-talk -> ASR (incremental) -> text -> [the app's
// reply generator] -> text pieces -> clauses -> TTS -> playback, with barge-in and per-turn
// latency figures. audio/ knows nothing of the engine: the app passes a reply function that
// streams text back through voice_reply_piece, and a cancel function.
//
// Threads: voice_run's thread captures, runs the VAD and the recogniser, and takes barge-in
// decisions; the reply runs on a thread of its own; a TTS thread speaks clauses as they complete
// and writes to the output device, whose callback (or file thread) plays them.
#ifndef CABIN_AUDIO_VOICE_H
#define CABIN_AUDIO_VOICE_H

#include "audio/asr.h"
#include "audio/vad.h"
#include "base/base.h"

#include <stdbool.h>

// One turn's figures; times in ms from the end of speech (push-to-talk release or VAD end).
typedef struct voice_turn_stats {
    int turn;                  // 1, 2, ...
    double speech_s;           // utterance length (audio seconds, from onset to end)
    double asr_final_ms;       // -> final transcript
    double first_token_ms;     // -> first reply token
    double token_to_clause_ms; // first reply token -> first clause handed to the synthesizer (-1: none)
    double first_write_ms;     // -> first synthesized sample handed to the device
    double first_audio_ms;     // -> first sample played by the device (time to first audio)
    double last_token_ms;      // -> last reply token
    double asr_rtf;            // recognition time / audio time
    bool asr_settled;          // the first utterance started over with its own mean (asr_result)
    bool asr_redecoded;        // the first utterance, too short for that, decoded twice
    const char *asr_search;    // "grammar", "lm" or "pick" (asr_result.search)
    double asr_conf;           // share of the grammar's words the n-gram search also heard
    double asr_fit;            // how well the grammar's path fits the audio (asr_result.fit; NAN: none)
    bool asr_refused;          // not a command (asr_result.refused): not sent to the model,
                               // "Sorry, I didn't catch that." spoken instead
    double end_silence_ms;     // hands-free: the silence after the speech when the turn ended
                               // (vad_params.pause_ms or hangover_ms; not in the times above,
                               // which start at the turn's end); -1 push-to-talk
    bool ended_at_pause;       // ... ended at a short pause, the command whole (voice.c)
    bool barged_in;            // this turn's reply was cut off by the next one
    double barge_stop_ms;      // barge-in: onset detected -> generation and playback stopped
    int clauses;               // clauses spoken (or started)
    char transcript[512];
    char action[256];          // the reply's <act> text ("" if none)
    char spoken[1024];         // what was sent to the synthesizer
} voice_turn_stats;

typedef struct voice voice;

typedef struct voice_hooks {
    void *ud;
    // The reply to user_text: call voice_reply_piece for each piece as it is generated.
    // Runs on the reply thread. 0 ok, -1 with err.
    int (*reply)(void *ud, voice *v, const char *user_text, errbuf *err);
    void (*cancel)(void *ud);                          // thread-safe: stop reply() soon
    void (*on_action)(void *ud, const char *action);  // an <act> text, reply thread
    void (*on_transcript)(void *ud, const char *text);// final transcript, voice_run's thread
    void (*on_turn)(void *ud, const voice_turn_stats *st);   // a turn finished, voice_run's thread
    void (*on_state)(void *ud, const char *state);    // "listening", "hearing", "thinking", "speaking"
} voice_hooks;

typedef struct voice_opts {
    const char *in, *out;      // device specs (audio/device.h); out NULL: no speech output
    bool realtime;             // WAV devices run at the wall clock's pace (barge-in tests)
    bool hands_free;           // VAD decides turns; else push-to-talk (voice_ptt_*)
    bool half_duplex;          // wait for each reply to finish before listening again
    vad_params vad;
    asr_opts asr;
    const char *tts_voice;     // espeak-ng voice (NULL: en-us)
    int tts_wpm;               // 0: 175
    int clause_max_words;      // a clause without punctuation is cut after this many words (12)
    int clause_first_words;    // ... the reply's first clause after this many (4): speech starts sooner
    int nice;                  // the pipeline's threads' nice value (VOICE_NICE; voice_open's
                               // caller's and every thread it starts); VOICE_NICE_KEEP: unchanged
} voice_opts;

// The voice threads run ahead of the model's (cabin voice puts those at -5) and of other
// processes: capture and recognition must not wait for a core while the person speaks.
#define VOICE_NICE (-10)
#define VOICE_NICE_KEEP 100

voice_opts voice_opts_default(void);

// Opens devices, recogniser and synthesizer and warms them (every search and the synthesizer
// run once, unheard: the first turn is as fast as the tenth). No device or a failing one: NULL
// and one line.
voice *voice_open(const voice_opts *o, const voice_hooks *h, errbuf *err);
// Why the pipeline's threads could not be given their priority ("" when they were): to be said
// once.
const char *voice_priority_note(voice *v);
// Milliseconds voice_open took to load and warm everything (voice is ready after them).
double voice_ready_ms(voice *v);
void voice_close(voice *v);
// Runs turns until the input ends (files) or voice_stop. 0 ok, -1 with err.
int voice_run(voice *v, errbuf *err);
void voice_stop(voice *v);                 // thread-safe
void voice_ptt_press(voice *v);            // thread-safe (push-to-talk; barge-in while speaking)
void voice_ptt_release(voice *v);          // thread-safe
// From reply(): one generated piece (bytes). Returns false when the reply should stop.
bool voice_reply_piece(voice *v, const char *piece, int len);
// The latest finished turn's figures (the workbench's voice panel reads this). 0 if any.
int voice_last_stats(voice *v, voice_turn_stats *out);
const char *voice_describe(voice *v);     // devices and recogniser, one line

// ---- clause splitting (exposed for tests) ----
// Cuts a streamed reply into speakable clauses: the leading <act>...</act> is taken out (it is
// executed, not spoken); a clause ends at . ! ? ; : , followed by a space, or after max_words.
typedef struct clause_splitter {
    char *buf;                 // text not yet emitted
    size_t len, cap;
    int state;                 // 0 deciding whether an <act> leads, 1 inside it, 2 speech
    int max_words;
    int first_max_words;       // the first clause's limit (0: max_words)
    int emitted;               // clauses emitted
    char action[256];
    bool have_action;
} clause_splitter;
void clause_init(clause_splitter *c, int max_words);
void clause_free(clause_splitter *c);
// Appends text; calls emit(ud, clause) for each completed clause (and act(ud, action) once).
void clause_push(clause_splitter *c, const char *text, size_t n, void (*emit)(void *, const char *),
                 void (*act)(void *, const char *), void *ud);
// End of reply: emits what is left.
void clause_finish(clause_splitter *c, void (*emit)(void *, const char *), void (*act)(void *, const char *), void *ud);

#endif
