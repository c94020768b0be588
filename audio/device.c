// PortAudio and WAV-file audio devices (see device.h).
#include "audio/audio.h"
#include "audio/device.h"
#include "audio/ring.h"
#include "audio/wav.h"

#include <alsa/asoundlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <portaudio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_SECONDS 4

// CABIN_AUDIO_IN_FAIL_AFTER / CABIN_AUDIO_OUT_FAIL_AFTER: samples before the device vanishes
// (device.h); -1 when unset.
static long fail_after_env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : -1;
}


static bool is_wav(const char *spec) {
    size_t n = spec ? strlen(spec) : 0;
    return n > 4 && strcasecmp(spec + n - 4, ".wav") == 0;
}

// ---- PortAudio: one process-wide initialisation, reference counted ----
static pthread_mutex_t pa_lock = PTHREAD_MUTEX_INITIALIZER;
static int pa_users;

static void alsa_quiet(const char *file, int line, const char *fn, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)fn; (void)err; (void)fmt;   // ALSA's probing chatter is not ours to print
}

static int pa_acquire(errbuf *err) {
    pthread_mutex_lock(&pa_lock);
    if (pa_users == 0) {
        snd_lib_error_set_handler(alsa_quiet);
        // Host APIs probed at start (JACK) print to stderr when absent; that is not an error of ours.
        fflush(stderr);
        int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
        if (saved >= 0 && devnull >= 0) dup2(devnull, 2);
        PaError e = Pa_Initialize();
        if (saved >= 0 && devnull >= 0) dup2(saved, 2);
        if (saved >= 0) close(saved);
        if (devnull >= 0) close(devnull);
        if (e != paNoError) {
            pthread_mutex_unlock(&pa_lock);
            return err_set(err, "audio: PortAudio did not start: %s", Pa_GetErrorText(e));
        }
    }
    pa_users++;
    pthread_mutex_unlock(&pa_lock);
    return 0;
}

static void pa_release(void) {
    pthread_mutex_lock(&pa_lock);
    if (--pa_users == 0) Pa_Terminate();
    pthread_mutex_unlock(&pa_lock);
}

// A device by spec for input (want_in) or output. Returns the index or paNoDevice (err set).
static PaDeviceIndex pa_find(const char *spec, bool want_in, errbuf *err) {
    const char *what = want_in ? "capture" : "playback";
    if (!spec || !*spec || strcmp(spec, "default") == 0) {
        PaDeviceIndex d = want_in ? Pa_GetDefaultInputDevice() : Pa_GetDefaultOutputDevice();
        if (d == paNoDevice) err_set(err, "audio: no default %s device (cabin audio devices lists them)", what);
        return d;
    }
    int n = Pa_GetDeviceCount();
    char *end;
    long idx = strtol(spec, &end, 10);
    for (int i = 0; i < n; i++) {
        const PaDeviceInfo *di = Pa_GetDeviceInfo(i);
        if (!di) continue;
        bool match = (*end == 0 && end != spec) ? i == idx : strstr(di->name, spec) != NULL;
        if (match && (want_in ? di->maxInputChannels : di->maxOutputChannels) > 0) return i;
    }
    err_set(err, "audio: no %s device '%s' (cabin audio devices lists them)", what, spec);
    return paNoDevice;
}

int audio_list_devices(FILE *f, errbuf *err) {
    if (pa_acquire(err)) return -1;
    int n = Pa_GetDeviceCount();
    PaDeviceIndex din = Pa_GetDefaultInputDevice(), dout = Pa_GetDefaultOutputDevice();
    fprintf(f, "%-5s %-40s %4s %4s %8s  %s\n", "index", "name", "in", "out", "rate", "host API");
    for (int i = 0; i < n; i++) {
        const PaDeviceInfo *di = Pa_GetDeviceInfo(i);
        if (!di) continue;
        const PaHostApiInfo *hi = Pa_GetHostApiInfo(di->hostApi);
        fprintf(f, "%-5d %-40.40s %4d %4d %8.0f  %s%s%s\n", i, di->name, di->maxInputChannels,
                di->maxOutputChannels, di->defaultSampleRate, hi ? hi->name : "?",
                i == din ? " [default in]" : "", i == dout ? " [default out]" : "");
    }
    if (n <= 0) fprintf(f, "(no audio devices%s)\n", n < 0 ? ": the audio system failed" : "");
    pa_release();
    return 0;
}

// ---- capture ----
struct audio_in {
    char name[256];
    int rate;
    // file
    wav_data wav;          // resampled to rate
    size_t pos;
    bool file, realtime;
    double t0;
    // PortAudio
    PaStream *stream;
    sample_ring ring;      // at the device rate
    resampler rs;          // device rate -> rate
    _Atomic long overflows;
    int16_t *tmp;          // device-rate scratch
    size_t tmp_cap;
    long fail_after;       // samples until the injected vanishing; -1: never
};

static int in_callback(const void *input, void *output, unsigned long frames,
                       const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *ud) {
    (void)output; (void)ti; (void)flags;
    audio_in *in = ud;
    if (input && ring_write(&in->ring, input, frames) < frames) atomic_fetch_add(&in->overflows, 1);
    return paContinue;
}

audio_in *audio_in_open(const char *spec, int rate, bool realtime, errbuf *err) {
    audio_in *in = xcalloc(1, sizeof *in);
    in->rate = rate;
    in->fail_after = fail_after_env("CABIN_AUDIO_IN_FAIL_AFTER");
    if (is_wav(spec)) {
        wav_data w;
        if (wav_read(spec, &w, err)) { free(in); return NULL; }
        if (w.rate != rate) {
            int16_t *r;
            size_t n = resample_all(w.samples, w.n, w.rate, rate, &r);
            free(w.samples);
            w.samples = r;
            w.n = n;
            w.rate = rate;
        }
        in->wav = w;
        in->file = true;
        in->realtime = realtime;
        in->t0 = now_sec();
        snprintf(in->name, sizeof in->name, "%s", spec);
        return in;
    }
    if (pa_acquire(err)) { free(in); return NULL; }
    PaDeviceIndex d = pa_find(spec, true, err);
    if (d == paNoDevice) { pa_release(); free(in); return NULL; }
    const PaDeviceInfo *di = Pa_GetDeviceInfo(d);
    PaStreamParameters p = { .device = d, .channelCount = 1, .sampleFormat = paInt16,
                             .suggestedLatency = di->defaultLowInputLatency, .hostApiSpecificStreamInfo = NULL };
    double dev_rate = rate;
    if (Pa_IsFormatSupported(&p, NULL, dev_rate) != paFormatIsSupported) dev_rate = di->defaultSampleRate;
    resampler_init(&in->rs, (int)dev_rate, rate);
    if (ring_init(&in->ring, (size_t)dev_rate * RING_SECONDS)) { pa_release(); free(in); err_set(err, "audio: out of memory"); return NULL; }
    PaError e = Pa_OpenStream(&in->stream, &p, NULL, dev_rate, (unsigned long)(dev_rate / 100), paClipOff, in_callback, in);
    if (e == paNoError) e = Pa_StartStream(in->stream);
    if (e != paNoError) {
        err_set(err, "audio: capture device '%s' failed: %s", di->name, Pa_GetErrorText(e));
        if (in->stream) Pa_CloseStream(in->stream);
        ring_free(&in->ring);
        pa_release();
        free(in);
        return NULL;
    }
    snprintf(in->name, sizeof in->name, "%s (%.0f Hz)", di->name, dev_rate);
    return in;
}

static long in_read(audio_in *in, int16_t *x, size_t n, int timeout_ms, errbuf *err);

long audio_in_read(audio_in *in, int16_t *x, size_t n, int timeout_ms, errbuf *err) {
    if (in->fail_after == 0) return err_set(err, "audio: capture device %s vanished", in->name), -1;
    if (in->fail_after > 0 && n > (size_t)in->fail_after) n = (size_t)in->fail_after;
    long got = in_read(in, x, n, timeout_ms, err);
    if (got > 0 && in->fail_after > 0) in->fail_after -= got;
    return got;
}

static long in_read(audio_in *in, int16_t *x, size_t n, int timeout_ms, errbuf *err) {
    if (in->file) {
        if (in->pos >= in->wav.n) return -1;
        size_t avail = in->wav.n - in->pos;
        if (in->realtime) {   // only what a microphone would have delivered by now
            for (;;) {
                size_t due = (size_t)((now_sec() - in->t0) * in->rate);
                if (due > in->wav.n) due = in->wav.n;
                avail = due > in->pos ? due - in->pos : 0;
                if (avail || timeout_ms <= 0) break;
                sleep_ms(timeout_ms < 5 ? timeout_ms : 5);
                timeout_ms -= 5;
            }
        }
        if (n > avail) n = avail;
        memcpy(x, in->wav.samples + in->pos, n * sizeof(int16_t));
        in->pos += n;
        return (long)n;
    }
    if (Pa_IsStreamActive(in->stream) != 1) return err_set(err, "audio: capture device %s stopped", in->name), -1;
    while (ring_used(&in->ring) == 0 && timeout_ms > 0) {
        sleep_ms(timeout_ms < 5 ? timeout_ms : 5);
        timeout_ms -= 5;
    }
    // Read at most as many device samples as give n output samples.
    size_t want = (size_t)((double)n * in->rs.in_rate / in->rs.out_rate);
    if (want > n * 4) want = n * 4;
    if (want == 0) want = 1;
    if (want > in->tmp_cap) { in->tmp_cap = want; in->tmp = xrealloc(in->tmp, want * sizeof(int16_t)); }
    size_t got = ring_read(&in->ring, in->tmp, want);
    size_t maxo = resampler_max_out(&in->rs, got);
    if (maxo <= n) return (long)resampler_run(&in->rs, in->tmp, got, x);
    int16_t *o = xmalloc(maxo * sizeof(int16_t));
    size_t k = resampler_run(&in->rs, in->tmp, got, o);
    if (k > n) k = n;   // at most a sample or two of rounding
    memcpy(x, o, k * sizeof(int16_t));
    free(o);
    return (long)k;
}

const char *audio_in_name(const audio_in *in) { return in->name; }
bool audio_in_is_file(const audio_in *in) { return in->file; }

void audio_in_close(audio_in *in) {
    if (!in) return;
    if (in->file) {
        wav_free(&in->wav);
    } else {
        Pa_StopStream(in->stream);
        Pa_CloseStream(in->stream);
        ring_free(&in->ring);
        free(in->tmp);
        pa_release();
    }
    free(in);
}

// ---- playback ----
struct audio_out {
    char name[256];
    int rate, dev_rate;
    resampler rs;          // rate -> dev_rate (the producer's side)
    sample_ring ring;      // at the device rate
    _Atomic bool flush;    // consumer: drop everything queued
    _Atomic bool marked;
    _Atomic double first_played;
    _Atomic bool failed;
    // file
    bool file, realtime;
    wav_writer w;
    pthread_t thread;
    _Atomic bool stop;
    // PortAudio
    PaStream *stream;
    long fail_after;       // samples until the injected vanishing; -1: never
};

// The consumer's side of a period: frames samples out of the ring (zeros when it runs dry).
static void out_consume(audio_out *o, int16_t *x, size_t frames) {
    if (atomic_exchange(&o->flush, false)) ring_read(&o->ring, NULL, ring_used(&o->ring));
    size_t got = ring_read(&o->ring, x, frames);
    if (got && atomic_load(&o->marked)) {
        atomic_store(&o->first_played, now_sec());
        atomic_store(&o->marked, false);
    }
    if (got < frames) memset(x + got, 0, (frames - got) * sizeof(int16_t));
}

static int out_callback(const void *input, void *output, unsigned long frames,
                        const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *ud) {
    (void)input; (void)ti; (void)flags;
    out_consume(ud, output, frames);
    return paContinue;
}

// The file "sound card": takes 10 ms periods, at the wall clock's pace when realtime.
static void *file_out_thread(void *ud) {
    audio_out *o = ud;
    size_t period = (size_t)o->dev_rate / 100;
    int16_t *x = xmalloc(period * sizeof(int16_t));
    double next = now_sec();
    while (!atomic_load(&o->stop)) {
        size_t have = ring_used(&o->ring);
        if (atomic_load(&o->flush)) { out_consume(o, x, 0); continue; }
        if (have == 0) { sleep_ms(2); next = now_sec(); continue; }
        size_t k = have < period ? have : period;
        out_consume(o, x, k);
        errbuf e;
        if (wav_writer_put(&o->w, x, k, &e)) { atomic_store(&o->failed, true); break; }
        if (o->realtime) {
            next += (double)k / o->dev_rate;
            double wait = next - now_sec();
            if (wait > 0) sleep_ms((int)(wait * 1000));
        }
    }
    free(x);
    return NULL;
}

audio_out *audio_out_open(const char *spec, int rate, bool realtime, errbuf *err) {
    audio_out *o = xcalloc(1, sizeof *o);
    o->rate = rate;
    o->fail_after = fail_after_env("CABIN_AUDIO_OUT_FAIL_AFTER");
    if (is_wav(spec)) {
        o->file = true;
        o->realtime = realtime;
        o->dev_rate = rate;
        if (wav_writer_open(&o->w, spec, rate, err)) { free(o); return NULL; }
        snprintf(o->name, sizeof o->name, "%s", spec);
    } else {
        if (pa_acquire(err)) { free(o); return NULL; }
        PaDeviceIndex d = pa_find(spec, false, err);
        if (d == paNoDevice) { pa_release(); free(o); return NULL; }
        const PaDeviceInfo *di = Pa_GetDeviceInfo(d);
        PaStreamParameters p = { .device = d, .channelCount = 1, .sampleFormat = paInt16,
                                 .suggestedLatency = di->defaultLowOutputLatency, .hostApiSpecificStreamInfo = NULL };
        o->dev_rate = rate;
        if (Pa_IsFormatSupported(NULL, &p, rate) != paFormatIsSupported) o->dev_rate = (int)di->defaultSampleRate;
        snprintf(o->name, sizeof o->name, "%s (%d Hz)", di->name, o->dev_rate);
        if (ring_init(&o->ring, (size_t)o->dev_rate * RING_SECONDS)) { pa_release(); free(o); err_set(err, "audio: out of memory"); return NULL; }
        PaError e = Pa_OpenStream(&o->stream, NULL, &p, o->dev_rate, (unsigned long)(o->dev_rate / 100), paClipOff, out_callback, o);
        if (e == paNoError) e = Pa_StartStream(o->stream);
        if (e != paNoError) {
            err_set(err, "audio: playback device '%s' failed: %s", di->name, Pa_GetErrorText(e));
            if (o->stream) Pa_CloseStream(o->stream);
            ring_free(&o->ring);
            pa_release();
            free(o);
            return NULL;
        }
    }
    resampler_init(&o->rs, rate, o->dev_rate);
    if (o->file) {
        if (ring_init(&o->ring, (size_t)o->dev_rate * RING_SECONDS)) { free(o); err_set(err, "audio: out of memory"); return NULL; }
        pthread_create(&o->thread, NULL, file_out_thread, o);
    }
    return o;
}

long audio_out_write(audio_out *o, const int16_t *x, size_t n, const atomic_bool *abort) {
    if (o->fail_after >= 0) {
        if ((size_t)o->fail_after < n) { o->fail_after = 0; atomic_store(&o->failed, true); }
        else o->fail_after -= (long)n;
    }
    int16_t *buf = NULL;
    const int16_t *src = x;
    size_t m = n;
    if (o->rate != o->dev_rate) {
        buf = xmalloc(resampler_max_out(&o->rs, n) * sizeof(int16_t));
        m = resampler_run(&o->rs, x, n, buf);
        src = buf;
    }
    size_t done = 0;
    while (done < m) {
        if (o->stream && Pa_IsStreamActive(o->stream) != 1) atomic_store(&o->failed, true);   // unplugged
        if (atomic_load(&o->failed)) { free(buf); return -1; }
        if (abort && atomic_load(abort)) break;
        size_t k = ring_write(&o->ring, src + done, m - done);
        done += k;
        if (k == 0) sleep_ms(5);
    }
    free(buf);
    return (long)(o->rate != o->dev_rate ? (done == m ? n : (size_t)((double)done * o->rate / o->dev_rate)) : done);
}

void audio_out_flush(audio_out *o) { atomic_store(&o->flush, true); }
size_t audio_out_pending(audio_out *o) { return ring_used(&o->ring); }
void audio_out_mark(audio_out *o) { atomic_store(&o->first_played, 0.0); atomic_store(&o->marked, true); }
double audio_out_first_played(audio_out *o) { return atomic_load(&o->first_played); }
const char *audio_out_name(const audio_out *o) { return o->name; }

void audio_out_close(audio_out *o) {
    if (!o) return;
    if (o->file) {
        // let the queue drain first (it is what was said)
        for (int i = 0; i < 2000 && ring_used(&o->ring) && !atomic_load(&o->failed); i++) sleep_ms(2);
        atomic_store(&o->stop, true);
        pthread_join(o->thread, NULL);
        errbuf e;
        wav_writer_close(&o->w, &e);
    } else {
        for (int i = 0; i < 400 && ring_used(&o->ring); i++) sleep_ms(5);
        Pa_StopStream(o->stream);
        Pa_CloseStream(o->stream);
        pa_release();
    }
    ring_free(&o->ring);
    free(o);
}

// The full build has audio (audio/audio.h; make AUDIO=0 builds audio_off.c instead).
bool audio_built_in(void) { return true; }
