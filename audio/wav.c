// RIFF WAV reading/writing and linear resampling (see wav.h).
#include "audio/wav.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int wav_parse(const uint8_t *b, size_t len, const char *name, wav_data *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    if (len < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0)
        return err_set(err, "%s: not a RIFF WAVE file", name);
    size_t off = 12;
    int have_fmt = 0, channels = 0, bits = 0;
    uint32_t rate = 0;
    while (off + 8 <= len) {
        uint32_t csize = rd32(b + off + 4);
        const uint8_t *c = b + off + 8;
        size_t avail = len - off - 8;
        if (memcmp(b + off, "fmt ", 4) == 0) {
            if (csize < 16 || csize > avail) return err_set(err, "%s: fmt chunk of %u bytes is malformed", name, csize);
            uint16_t tag = rd16(c);
            channels = rd16(c + 2);
            rate = rd32(c + 4);
            bits = rd16(c + 14);
            if (tag == 0xFFFE && csize >= 26) tag = rd16(c + 24);   // WAVE_FORMAT_EXTENSIBLE: sub-format
            if (tag != 1 || bits != 16)
                return err_set(err, "%s: format %u with %d bits per sample; only 16-bit PCM is read", name, tag, bits);
            if (channels < 1 || channels > 2) return err_set(err, "%s: %d channels; mono or stereo only", name, channels);
            if (rate < 4000 || rate > 192000) return err_set(err, "%s: sample rate %u Hz out of range (4000..192000)", name, rate);
            have_fmt = 1;
        } else if (memcmp(b + off, "data", 4) == 0) {
            if (!have_fmt) return err_set(err, "%s: data chunk before the fmt chunk", name);
            // A truncated file (or a streaming writer's 0xFFFFFFFF) keeps what is there.
            size_t bytes = csize > avail ? avail : csize;
            size_t frames = bytes / (size_t)(2 * channels);
            if (frames > (size_t)WAV_MAX_SECONDS * rate)
                return err_set(err, "%s: %zu samples at %u Hz (%zu s), longer than the %d s a recording may last",
                               name, frames, rate, frames / rate, WAV_MAX_SECONDS);
            out->samples = xmalloc((frames ? frames : 1) * sizeof(int16_t));
            for (size_t i = 0; i < frames; i++) {
                const uint8_t *s = c + i * (size_t)(2 * channels);
                int v = (int16_t)rd16(s);
                if (channels == 2) v = (v + (int16_t)rd16(s + 2)) / 2;
                out->samples[i] = (int16_t)v;
            }
            out->n = frames;
            out->rate = (int)rate;
            return 0;
        }
        size_t step = (size_t)csize + (csize & 1);   // chunks are padded to even sizes
        if (step > avail) break;
        off += 8 + step;
    }
    return err_set(err, "%s: %s", name, have_fmt ? "no data chunk" : "no fmt chunk");
}

int wav_read(const char *path, wav_data *out, errbuf *err) {
    size_t len;
    errbuf e = {{0}};
    char *bytes = read_file_max(path, WAV_MAX_FILE_BYTES, "WAV file", &len, &e);
    if (!bytes) return err_set(err, "%s", e.msg);
    int rc = wav_parse((const uint8_t *)bytes, len, path, out, err);
    free(bytes);
    return rc;
}

void wav_free(wav_data *w) { free(w->samples); memset(w, 0, sizeof *w); }

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void make_header(uint8_t h[44], int rate, uint64_t n) {
    uint64_t bytes = n * 2;
    if (bytes > 0xFFFFFFFFull - 36) bytes = 0xFFFFFFFFull - 36;
    memcpy(h, "RIFF", 4);
    put32(h + 4, (uint32_t)(36 + bytes));
    memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16);
    put16(h + 20, 1);                 // PCM
    put16(h + 22, 1);                 // mono
    put32(h + 24, (uint32_t)rate);
    put32(h + 28, (uint32_t)rate * 2);
    put16(h + 32, 2);
    put16(h + 34, 16);
    memcpy(h + 36, "data", 4);
    put32(h + 40, (uint32_t)bytes);
}

int wav_writer_open(wav_writer *w, const char *path, int rate, errbuf *err) {
    memset(w, 0, sizeof *w);
    snprintf(w->path, sizeof w->path, "%s", path);
    w->rate = rate;
    w->f = fopen(path, "wb");
    if (!w->f) return err_set(err, "%s: %s", path, strerror(errno));
    uint8_t h[44];
    make_header(h, rate, 0);
    if (fwrite(h, 1, 44, w->f) != 44) { fclose(w->f); w->f = NULL; return err_set(err, "%s: write failed", path); }
    return 0;
}

int wav_writer_put(wav_writer *w, const int16_t *x, size_t n, errbuf *err) {
    if (!w->f) return err_set(err, "%s: not open", w->path);
    uint8_t buf[1024];
    while (n) {
        size_t k = n > 512 ? 512 : n;
        for (size_t i = 0; i < k; i++) put16(buf + 2 * i, (uint16_t)x[i]);
        if (fwrite(buf, 2, k, w->f) != k) return err_set(err, "%s: write failed: %s", w->path, strerror(errno));
        w->n += k;
        x += k;
        n -= k;
    }
    return 0;
}

int wav_writer_close(wav_writer *w, errbuf *err) {
    if (!w->f) return 0;
    uint8_t h[44];
    make_header(h, w->rate, w->n);
    int bad = fseek(w->f, 0, SEEK_SET) != 0 || fwrite(h, 1, 44, w->f) != 44;
    bad |= fclose(w->f) != 0;
    w->f = NULL;
    return bad ? err_set(err, "%s: write failed", w->path) : 0;
}

int wav_write(const char *path, const int16_t *x, size_t n, int rate, errbuf *err) {
    wav_writer w;
    if (wav_writer_open(&w, path, rate, err)) return -1;
    if (wav_writer_put(&w, x, n, err)) { errbuf e2; wav_writer_close(&w, &e2); return -1; }
    return wav_writer_close(&w, err);
}

// ---- resampling ----

void resampler_init(resampler *r, int in_rate, int out_rate) {
    memset(r, 0, sizeof *r);
    r->in_rate = in_rate;
    r->out_rate = out_rate;
    r->pos = 2 * RS_HALF;    // the first real input sample
    r->cut = 0.92f * (out_rate < in_rate ? (float)out_rate / (float)in_rate : 1.0f);
}

size_t resampler_max_out(const resampler *r, size_t n) {
    return (size_t)((double)n * r->out_rate / r->in_rate) + 2;
}

// Kernel at distance t (input samples): cut * sinc(cut * t) * Hann(t / RS_HALF).
static float rs_kernel(float cut, double t) {
    if (t <= -RS_HALF || t >= RS_HALF) return 0;
    double w = 0.5 * (1 + cos(M_PI * t / RS_HALF));
    double a = M_PI * cut * t;
    double s = fabs(a) < 1e-9 ? 1.0 : sin(a) / a;
    return (float)(cut * s * w);
}

size_t resampler_run(resampler *r, const int16_t *in, size_t n, int16_t *out) {
    if (r->in_rate == r->out_rate) {
        memcpy(out, in, n * sizeof(int16_t));
        return n;
    }
    if (n == 0) return 0;
    const size_t H = 2 * RS_HALF;
    float *x = xmalloc((H + n) * sizeof(float));   // x: (H + n) = history then this chunk
    memcpy(x, r->hist, H * sizeof(float));
    for (size_t j = 0; j < n; j++) x[H + j] = in[j];
    double step = (double)r->in_rate / r->out_rate;
    size_t k = 0, len = H + n;
    while ((size_t)r->pos + RS_HALF < len) {
        size_t c = (size_t)r->pos;
        double acc = 0;
        for (size_t i = c + 1 - RS_HALF; i <= c + RS_HALF; i++) acc += x[i] * rs_kernel(r->cut, r->pos - (double)i);
        long q = lrint(acc);
        out[k++] = (int16_t)(q > 32767 ? 32767 : q < -32768 ? -32768 : q);
        r->pos += step;
    }
    memcpy(r->hist, x + n, H * sizeof(float));
    r->pos -= (double)n;
    free(x);
    return k;
}

size_t resample_all(const int16_t *in, size_t n, int in_rate, int out_rate, int16_t **out) {
    resampler r;
    resampler_init(&r, in_rate, out_rate);
    *out = xmalloc(resampler_max_out(&r, n) * sizeof(int16_t));
    return resampler_run(&r, in, n, *out);
}
