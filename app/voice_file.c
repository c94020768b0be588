// The command `voice FILE.wav` (scenes, the workbench without a microphone): each turn the VAD
// finds in the recording goes through the voice pipeline and app_say, as a typed turn does.
#include "app/verbs.h"
#include "audio/voice.h"

typedef struct scene_voice { app_ctx *c; int rc; errbuf err; } scene_voice;

static int scene_reply(void *ud, voice *v, const char *text, errbuf *err) {
    scene_voice *sv = ud;
    (void)v;
    int rc = app_say(sv->c, text, err);
    if (rc) { sv->rc = rc; sv->err = *err; }
    return rc;
}

int app_voice_file(app_ctx *c, const char *path, errbuf *err) {
    voice_opts vo = voice_opts_default();
    vo.in = path;
    vo.out = NULL;
    vo.hands_free = true;
    vo.half_duplex = true;
    scene_voice sv = { c, 0, {{0}} };
    voice_hooks h = { .ud = &sv, .reply = scene_reply };
    voice *v = voice_open(&vo, &h, err);
    if (!v) return -1;
    int rc = voice_run(v, err);
    voice_close(v);
    if (!rc && sv.rc) { *err = sv.err; rc = sv.rc; }
    return rc;
}
