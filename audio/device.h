// Audio devices: capture (mono int16 at the rate asked, usually 16 kHz) and playback, each either
// a PortAudio device (callback + lock-free ring) or a WAV file with the same interface (tests,
// scenes, headless runs). A spec ending in ".wav" is a file; NULL, "" or "default" is the
// default device; a number is a PortAudio device index; other text matches a device name.
#ifndef CABIN_AUDIO_DEVICE_H
#define CABIN_AUDIO_DEVICE_H

#include "base/base.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct audio_in audio_in;
typedef struct audio_out audio_out;

// realtime (files only): deliver/consume samples at the sample rate of the wall clock, as a
// sound card would; otherwise as fast as asked.
audio_in *audio_in_open(const char *spec, int rate, bool realtime, errbuf *err);
// Up to n samples at the opened rate. Waits up to timeout_ms for at least one. Returns the
// count (0: none yet), or -1 at the end of a file (err left empty) or when the device failed or
// vanished (err says which).
// Fault injection (tests): CABIN_AUDIO_IN_FAIL_AFTER=N makes every capture device vanish after
// N samples, CABIN_AUDIO_OUT_FAIL_AFTER=N every playback device after N samples written.
long audio_in_read(audio_in *in, int16_t *x, size_t n, int timeout_ms, errbuf *err);
const char *audio_in_name(const audio_in *in);
bool audio_in_is_file(const audio_in *in);
void audio_in_close(audio_in *in);

// rate: what the caller will write (the TTS rate); a device that cannot take it gets resampled.
audio_out *audio_out_open(const char *spec, int rate, bool realtime, errbuf *err);
// Queues n samples; blocks while the queue is full. Stops early (returns samples queued) when
// *abort becomes true. -1 if the device failed or vanished (a stream that stopped).
long audio_out_write(audio_out *o, const int16_t *x, size_t n, const atomic_bool *abort);
// Drops everything queued (barge-in): the consumer discards it at its next period.
void audio_out_flush(audio_out *o);
// Samples queued and not yet played.
size_t audio_out_pending(audio_out *o);
// Arms the first-sample clock: audio_out_first_played then gives now_sec() of the first sample
// the device consumed after the mark (0 until then).
void audio_out_mark(audio_out *o);
double audio_out_first_played(audio_out *o);
const char *audio_out_name(const audio_out *o);
void audio_out_close(audio_out *o);

// Lists PortAudio devices (index, name, channels in/out, default rate). 0 ok, -1 no audio system.
int audio_list_devices(FILE *f, errbuf *err);

#endif
