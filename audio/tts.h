// Text to speech with espeak-ng's library, synchronous: the synth callback hands each block of
// samples to a sink as it is made. espeak-ng keeps global state, so one thread speaks at a time.
#ifndef CABIN_AUDIO_TTS_H
#define CABIN_AUDIO_TTS_H

#include "base/base.h"

#include <stddef.h>
#include <stdint.h>

// Receives n mono samples at tts_rate(); returns nonzero to stop speaking (barge-in).
typedef int (*tts_sink)(void *ud, const int16_t *x, size_t n);

// voice: an espeak-ng voice name ("en-us", "en+f3"; NULL = "en-us"); wpm: words per minute
// (0 = 175). Returns 0, or -1 with one line (no espeak-ng data).
int tts_init(const char *voice, int wpm, errbuf *err);
int tts_rate(void);   // samples per second (22050 for espeak-ng's voices)
// Speaks text (UTF-8) into sink. Returns 0, 1 if the sink stopped it, -1 on error.
int tts_speak(const char *text, tts_sink sink, void *ud, errbuf *err);
void tts_shutdown(void);

#endif
