// RIFF WAV files (PCM 16-bit, mono or stereo in; mono out) and sample-rate conversion.
#ifndef CABIN_AUDIO_WAV_H
#define CABIN_AUDIO_WAV_H

#include "base/base.h"

#include <stdint.h>
#include <stdio.h>

typedef struct wav_data {
    int16_t *samples;    // n mono samples (stereo files are averaged)
    size_t n;
    int rate;            // Hz
} wav_data;

// Longest recording read (seconds), and so the largest file: WAV_MAX_SECONDS at 192 kHz stereo.
#define WAV_MAX_SECONDS 600
#define WAV_MAX_FILE_BYTES ((size_t)WAV_MAX_SECONDS * 192000 * 4 + 4096)

// Reads a PCM16 WAV (1 or 2 channels, any rate 4000..192000, at most WAV_MAX_SECONDS). Malformed
// or longer files: -1 and one line naming the file and what is wrong, before the samples are
// allocated (a file over WAV_MAX_FILE_BYTES is not read at all).
int wav_read(const char *path, wav_data *out, errbuf *err);
// Same, from bytes in memory (name is used in messages).
int wav_parse(const uint8_t *bytes, size_t len, const char *name, wav_data *out, errbuf *err);
void wav_free(wav_data *w);
// Writes a mono PCM16 WAV in one go.
int wav_write(const char *path, const int16_t *x, size_t n, int rate, errbuf *err);

// Incremental writer: the header is rewritten with the final sizes at wav_writer_close.
typedef struct wav_writer {
    FILE *f;
    char path[512];
    int rate;
    uint64_t n;          // samples written
} wav_writer;
int wav_writer_open(wav_writer *w, const char *path, int rate, errbuf *err);
int wav_writer_put(wav_writer *w, const int16_t *x, size_t n, errbuf *err);
int wav_writer_close(wav_writer *w, errbuf *err);

// Streaming windowed-sinc resampler (Hann window, 2*RS_HALF taps, cutoff 0.46 of the lower
// rate: espeak's 22050 Hz fricatives would otherwise alias into the recogniser's band). State
// carries across calls so chunk boundaries are seamless; the delay is RS_HALF input samples.
#define RS_HALF 16
typedef struct resampler {
    int in_rate, out_rate;
    double pos;              // next output position in x = [hist | chunk] coordinates
    float hist[2 * RS_HALF]; // the last 2*RS_HALF input samples
    float cut;               // normalised cutoff: 0.92 * min(1, out/in)
} resampler;
void resampler_init(resampler *r, int in_rate, int out_rate);
// Most output samples n input samples can give (for sizing out).
size_t resampler_max_out(const resampler *r, size_t n);
// Converts n input samples; returns the number written to out.
size_t resampler_run(resampler *r, const int16_t *in, size_t n, int16_t *out);
// Whole-buffer convenience: malloc'd result in *out.
size_t resample_all(const int16_t *in, size_t n, int in_rate, int out_rate, int16_t **out);

#endif
