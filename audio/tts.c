// espeak-ng wrapper (see tts.h).
#include "audio/tts.h"

#include <espeak-ng/speak_lib.h>

#include <string.h>

#define TTS_BLOCK_MS 20

static int g_rate;

typedef struct speak_ctx {
    tts_sink sink;
    void *ud;
    int stopped;
} speak_ctx;

static int synth_cb(short *wav, int n, espeak_EVENT *ev) {
    speak_ctx *c = NULL;
    for (espeak_EVENT *e = ev; e && e->type != espeakEVENT_LIST_TERMINATED; e++)
        if (e->user_data) { c = e->user_data; break; }
    if (!c) return 0;
    if (c->stopped) return 1;
    if (wav && n > 0 && c->sink(c->ud, wav, (size_t)n)) { c->stopped = 1; return 1; }
    return 0;
}

int tts_init(const char *voice, int wpm, errbuf *err) {
    if (!g_rate) {
        // Blocks of 20 ms: the synth callback hands the first one to the device as soon as it is
        // made (the first block waited for 60 ms of samples before).
        int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, TTS_BLOCK_MS, NULL, 0);
        if (rate <= 0) return err_set(err, "tts: espeak-ng did not start (is espeak-ng-data installed?)");
        g_rate = rate;
        espeak_SetSynthCallback(synth_cb);
    }
    if (espeak_SetVoiceByName(voice ? voice : "en-us") != EE_OK)
        return err_set(err, "tts: espeak-ng has no voice '%s'", voice ? voice : "en-us");
    espeak_SetParameter(espeakRATE, wpm > 0 ? wpm : 175, 0);
    return 0;
}

int tts_rate(void) { return g_rate; }

int tts_speak(const char *text, tts_sink sink, void *ud, errbuf *err) {
    if (!g_rate) return err_set(err, "tts: not initialised");
    speak_ctx c = { sink, ud, 0 };
    espeak_ERROR e = espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, &c);
    if (e != EE_OK) return err_set(err, "tts: espeak-ng could not speak \"%.40s\" (error %d)", text, (int)e);
    return c.stopped ? 1 : 0;
}

void tts_shutdown(void) {
    if (g_rate) espeak_Terminate();
    g_rate = 0;
}
