// Whether this cabin has audio: sound devices (PortAudio, ALSA), speech recognition
// (pocketsphinx) and speech synthesis (espeak-ng). This is the one place the choice shows:
// `make AUDIO=0` compiles audio/audio_off.c in place of device.c, asr.c, tts.c and voice.c, and
// every entry point of audio/device.h and audio/voice.h then fails with AUDIO_OFF_MSG (one line).
// wav.c, vad.c and clause.c use no library and are built either way.
#ifndef CABIN_AUDIO_AUDIO_H
#define CABIN_AUDIO_AUDIO_H

#include <stdbool.h>

#define AUDIO_OFF_MSG "built without audio (make AUDIO=1)"

// true in the full build; false with make AUDIO=0 (commands that need audio say AUDIO_OFF_MSG).
bool audio_built_in(void);

#endif
