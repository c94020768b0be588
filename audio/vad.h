// Voice activity detection on 10 ms frames: short-time energy against an adaptive noise floor,
// with zero-crossing rate to keep quiet fricatives ("s", "f") that energy alone would miss.
#ifndef CABIN_AUDIO_VAD_H
#define CABIN_AUDIO_VAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vad_params {
    float margin_db;      // speech: frame energy this far above the noise floor (default 6)
    float min_db;         // ... and above this absolute level, dBFS (default -50)
    float zcr_min;        // a frame with zero-crossing rate above this (crossings per sample)
    float zcr_margin_db;  //   counts as speech at this smaller margin (defaults 0.25, 5)
    int onset_ms;         // speech this long starts an utterance (default 40)
    int hangover_ms;      // silence this long ends it (default 400)
    int pause_ms;         // silence this long inside it is reported (VAD_PAUSE) once, so that the
                          // caller may end it there (vad_end_now; default 0: never)
    int min_speech_ms;    // utterances shorter than this are dropped as clicks (default 200)
} vad_params;

vad_params vad_params_default(void);

typedef enum vad_event { VAD_NONE, VAD_ONSET, VAD_END, VAD_DROP, VAD_PAUSE } vad_event;

typedef struct vad {
    vad_params p;
    int rate, frame;      // samples per 10 ms frame
    int16_t *buf;         // partial frame
    int fill;
    float floor_db;       // noise floor estimate, dBFS
    bool floor_set;
    bool in_speech;
    int run_speech;       // consecutive speech frames (before onset)
    int run_silence;      // consecutive silent frames (in speech)
    int speech_frames;    // frames since onset
    float last_db, last_zcr;
    uint64_t frames;      // frames seen
} vad;

void vad_init(vad *v, const vad_params *p, int rate);
void vad_free(vad *v);
// Feeds samples; returns the first event in them (VAD_NONE if none). *consumed is how many
// samples were taken (stop there so the caller can act at the event, then feed the rest).
vad_event vad_feed(vad *v, const int16_t *x, size_t n, size_t *consumed);
// Frames of onset delay: an onset is reported this many frames after speech began.
int vad_onset_frames(const vad *v);
int vad_hangover_frames(const vad *v);
// Ends the utterance now (after a VAD_PAUSE the caller judged the end of a turn): VAD_END, or
// VAD_DROP when too little of it was speech; VAD_NONE outside an utterance.
vad_event vad_end_now(vad *v);
// Silence after the last speech frame of the utterance under way, or of the last one, ms.
int vad_silence_ms(const vad *v);

#endif
