// Stands in for audio/device.c, asr.c, tts.c and voice.c in a cabin built with make AUDIO=0
// (see audio/audio.h): nothing opens, every failure says AUDIO_OFF_MSG, and nothing links
// PortAudio, ALSA, pocketsphinx or espeak-ng.
#include "audio/audio.h"
#include "audio/device.h"
#include "audio/voice.h"

#include <string.h>

bool audio_built_in(void) { return false; }

// ---- audio/device.h: no device opens ----
audio_in *audio_in_open(const char *spec, int rate, bool realtime, errbuf *err) {
    (void)spec; (void)rate; (void)realtime;
    err_set(err, "%s", AUDIO_OFF_MSG);
    return NULL;
}
long audio_in_read(audio_in *in, int16_t *x, size_t n, int timeout_ms, errbuf *err) {
    (void)in; (void)x; (void)n; (void)timeout_ms;
    return err_set(err, "%s", AUDIO_OFF_MSG);
}
const char *audio_in_name(const audio_in *in) { (void)in; return "none"; }
bool audio_in_is_file(const audio_in *in) { (void)in; return false; }
void audio_in_close(audio_in *in) { (void)in; }

audio_out *audio_out_open(const char *spec, int rate, bool realtime, errbuf *err) {
    (void)spec; (void)rate; (void)realtime;
    err_set(err, "%s", AUDIO_OFF_MSG);
    return NULL;
}
long audio_out_write(audio_out *o, const int16_t *x, size_t n, const atomic_bool *abort) {
    (void)o; (void)x; (void)n; (void)abort;
    return -1;
}
void audio_out_flush(audio_out *o) { (void)o; }
size_t audio_out_pending(audio_out *o) { (void)o; return 0; }
void audio_out_mark(audio_out *o) { (void)o; }
double audio_out_first_played(audio_out *o) { (void)o; return -1; }
const char *audio_out_name(const audio_out *o) { (void)o; return "none"; }
void audio_out_close(audio_out *o) { (void)o; }

int audio_list_devices(FILE *f, errbuf *err) {
    (void)f;
    return err_set(err, "%s", AUDIO_OFF_MSG);
}

// ---- audio/voice.h: the pipeline never opens (clause_* is clause.c's, built either way) ----
voice_opts voice_opts_default(void) {
    voice_opts o;
    memset(&o, 0, sizeof o);
    o.hands_free = true;
    o.vad = vad_params_default();
    return o;
}
voice *voice_open(const voice_opts *o, const voice_hooks *h, errbuf *err) {
    (void)o; (void)h;
    err_set(err, "%s", AUDIO_OFF_MSG);
    return NULL;
}
void voice_close(voice *v) { (void)v; }
int voice_run(voice *v, errbuf *err) { (void)v; return err_set(err, "%s", AUDIO_OFF_MSG); }
void voice_stop(voice *v) { (void)v; }
void voice_ptt_press(voice *v) { (void)v; }
void voice_ptt_release(voice *v) { (void)v; }
bool voice_reply_piece(voice *v, const char *piece, int len) { (void)v; (void)piece; (void)len; return false; }
int voice_last_stats(voice *v, voice_turn_stats *out) { (void)v; (void)out; return -1; }
const char *voice_describe(voice *v) { (void)v; return AUDIO_OFF_MSG; }
const char *voice_priority_note(voice *v) { (void)v; return ""; }
double voice_ready_ms(voice *v) { (void)v; return 0; }
