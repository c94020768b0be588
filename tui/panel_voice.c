// Voice panel: push-to-talk state. The voice pipeline (audio/) is not part of this build yet,
// so the panel says so rather than pretending.
#include "tui/tui.h"

static double ptt_pressed_at = -10;

void tui_voice_ptt(double now) { ptt_pressed_at = now; }

static int voice_height(const tui_snapshot *s, int w) { (void)s; (void)w; return 3; }

static void voice_update(const tui_snapshot *s) { (void)s; }

static void voice_draw(WINDOW *w, tui_rect r, const tui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Voice", focused);
    if (in.h < 1) return;
    if (!s->voice_available) {
        bool recent = s->now - ptt_pressed_at < 2.0;
        tui_puts(w, in.y, in.x, recent ? "F5: voice not available in this build" : "voice: not available in this build",
                 in.w, tui_attr(recent ? TC_WARN : TC_DIM));
    } else {
        tui_puts(w, in.y, in.x, "F5 push-to-talk: idle", in.w, 0);
    }
}

const tui_panel tui_panel_voice = { "voice", voice_height, voice_update, voice_draw };
