// Speech recognition with pocketsphinx (5prealpha API): audio is fed while the person speaks
// (ps_process_raw per chunk), so the final hypothesis is ready moments after the end of speech.
// Two searches run side by side on the same audio, each on a thread of its own: a JSGF grammar
// of the assistant's commands (its alternatives weighted by corpus frequency) and an n-gram LM
// for free phrasing; the grammar's result is used when it parses the utterance and the LM
// bears it out, the LM's otherwise. Hesitations ("um", "uh") are fillers of the grammar's noise
// dictionary, allowed between any two of its words. A free phone loop fed beside the grammar
// search says how well the grammar fits the audio; speech that fits far worse than any phone
// sequence is not a command and is refused (asr_result.refused).
#ifndef CABIN_AUDIO_ASR_H
#define CABIN_AUDIO_ASR_H

#include "base/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct asr_opts {
    const char *hmm;       // acoustic model dir (default: pocketsphinx-en-us's en-us)
    const char *lm;        // ARPA or binary LM (default assets/asr/cabin.lm)
    const char *dict;      // dictionary (default assets/asr/cabin.dict)
    const char *jsgf;      // grammar (default assets/asr/cabin.gram if present; "" = none)
    bool general;          // the general en-us LM and full dictionary instead of the domain's
    float grammar_min_agree;// grammar result used only when at least this share of its words are
                            // in the LM's hypothesis, in order (default 0.2)
    const char *fdict;     // noise/filler dictionary (default assets/asr/cabin.filler if present,
                            // else the acoustic model's; "" = the acoustic model's)
    float noise_floor_db;  // white noise added to the audio before recognition, RMS in dB
                            // relative to full scale (default -50; below -120: none). See asr.c.
    float refuse_below;    // an utterance whose fit (asr_result.fit) is below this is refused
                            // as not a command (default -38, asr.c; -1e9: never)
} asr_opts;

asr_opts asr_opts_default(void);

typedef struct asr_result {
    char text[512];
    const char *search;    // "grammar", "lm", "pick" (the two differed only in hesitations; the
                           // acoustics chose between them: asr_end) or "" (nothing recognised)
    double conf;           // share of the grammar's words the n-gram search also heard (0..1)
    double audio_s;        // seconds of audio in the utterance
    double cpu_s;          // CPU time spent decoding it, both searches on both threads (feed + end)
    bool settled;          // a first utterance whose searches started over once its own
                           // cepstral mean was known (asr.c: COLD_SETTLE_S)
    bool redecoded;        // a first utterance too short for that: decoded again at its end
    // How well the grammar's best path fits the audio: its acoustic score minus that of a free
    // phone loop over the same frames, per frame (log base of the decoder; 0 = as well as any
    // phone sequence, commands -10 to -35, speech the grammar does not hold far lower); NAN
    // without a grammar parse or the phone loop.
    double fit;
    bool refused;          // fit below refuse_below: speech that is not a command, whichever
                           // reading was chosen (text still holds it, for display)
} asr_result;

typedef struct asr asr;

asr *asr_open(const asr_opts *o, errbuf *err);
void asr_close(asr *a);
int asr_start(asr *a, errbuf *err);
// 16 kHz mono samples of the current utterance.
int asr_feed(asr *a, const int16_t *x, size_t n, errbuf *err);
int asr_end(asr *a, asr_result *r, errbuf *err);
// The grammar search's best reading of the utterance so far (into text, cap bytes, if text) and
// where it leads in the grammar: FSG_WHOLE (a whole command) and/or FSG_MORE (a word may follow;
// audio/asr_fsg.h), 0 when it is no command's start, -1 without a grammar search or outside an
// utterance. For ending a turn at a short pause once a command is whole (voice.c).
int asr_reading_so_far(asr *a, char *text, size_t cap);
// Runs every search over `seconds` of silence (at the noise floor) so that the first utterance
// finds the recogniser's memory and code paths as later ones do; the cepstral means and the
// noise sequence are left as they were (the first utterance still settles: asr.c).
int asr_warm(asr *a, double seconds);
// Decodes a whole buffer (start, feed, end).
int asr_decode(asr *a, const int16_t *x, size_t n, asr_result *r, errbuf *err);
const char *asr_describe(const asr *a);   // "domain LM + grammar (assets/asr/...)"

// Helpers of asr_end's choice between the two searches (audio/asr_words.c; exposed for tests):
// the share of a's words that b has in the same order (longest common subsequence / a's words);
double asr_word_agreement(const char *a, const char *b);
// whether a and b are the same words once uh/um/er/hmm/so are left out (false for a reading of
// 64 words or more);
bool asr_same_but_fillers(const char *a, const char *b);
// the JSGF grammar of both readings (common words in order, "( a's | b's )" or "[ one's ]" where
// they differ) into out; -1 if it does not fit in cap or a reading has 64 words or more.
int asr_union_grammar(const char *a, const char *b, char *out, size_t cap);

#endif
