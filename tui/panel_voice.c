// Voice panel: push-to-talk state, the input level, the last transcript and the last turn's
// latency from the end of speech (F5 release, or the VAD's end for `:voice FILE`) to the final
// transcript and to the first audio played ("release → transcript 130 ms, → audio 340 ms"). Fed by ui/voice.c through the snapshot's voice view.
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>


static int voice_height(const ui_snapshot *s, int w) {
    (void)w;
    // frame + 4 lines on; off: why (wrapped), a hint, and after a `:voice FILE` turn what was
    // heard and the latency (the same pipeline as the microphone's)
    return s->voice.state != TV_OFF ? 6 : s->voice.turns > 0 ? 7 : 5;
}

// Draws text over at most `rows` rows of cols columns, cut at spaces; returns the rows used.
static int wrap(WINDOW *w, int y, int x, int cols, int rows, const char *t, int attr) {
    int used = 0;
    while (*t && used < rows) {
        int n = (int)strlen(t), cut = n;
        if (tui_width(t, n) > cols) {   // the last space that keeps the row within cols
            cut = 0;
            for (int i = 0; i < n && tui_width(t, i) <= cols; i++) if (t[i] == ' ') cut = i;
            if (cut == 0 || used == rows - 1) cut = n;   // no space, or the last row: clipped
        }
        char row[256];
        snprintf(row, sizeof row, "%.*s", cut < 255 ? cut : 255, t);
        tui_puts(w, y + used, x, row, cols, attr);
        used++;
        t += cut;
        while (*t == ' ') t++;
    }
    return used;
}

static void voice_update(const ui_snapshot *s) { (void)s; }

static void voice_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Voice  F5 push-to-talk", focused);
    if (in.h < 1) return;
    const ui_voice_view *v = &s->voice;
    int y = in.y, end = in.y + in.h;
    if (v->state == TV_OFF) {
        int below = v->turns > 0 ? 3 : 1;   // rows kept for the heard line, the latency and the hint
        y += wrap(w, y, in.x, in.w, end - y > below ? end - y - below : 1, v->line, tui_attr(TC_WARN));
        if (v->turns > 0 && y < end) {
            int o = tui_puts(w, y, in.x, "heard: ", in.w, tui_attr(TC_DIM));
            tui_puts(w, y++, in.x + o, v->transcript, in.w - o, tui_attr(TC_USER));
            ui_line lat;
            ui_voice_latency_text(v, tui_ascii, &lat);
            if (y < end) tui_line(w, y++, in.x, in.w, &lat);
        }
        if (y < end) tui_puts(w, y, in.x, ui_voice_off_hint, in.w, tui_attr(TC_DIM));
        return;
    }
    // state and level: "listening   level ████····  -23 dB"
    int active = v->state >= TV_LISTENING ? TC_GOOD : v->state == TV_STARTING ? TC_WARN : TC_NONE;
    int x = in.x + tui_puts(w, y, in.x, ui_voice_state_name(v), in.w, tui_attr(active) | (v->state == TV_LISTENING ? A_BOLD : 0));
    int meter = in.x + 17;
    if (x < meter && in.w > 17 + 6 + 8) {
        tui_puts(w, y, meter, "level", 5, tui_attr(TC_DIM));
        int bw = in.w - 17 - 6 - 8;
        bool loud;
        double frac = ui_voice_level_frac(v, &loud);
        if (v->have_level) {
            tui_bar(w, y, meter + 6, bw, frac, tui_attr(loud ? TC_WARN : TC_GOOD));
            tui_printf(w, y, meter + 6 + bw + 1, 7, tui_attr(TC_DIM), "%4.0f dB", v->level_db > -99 ? v->level_db : -99);
        } else {
            tui_bar(w, y, meter + 6, bw, 0, 0);
            tui_puts(w, y, meter + 6 + bw + 1, "   - dB", 7, tui_attr(TC_DIM));
        }
    }
    if (++y >= end) return;
    // the last transcript
    if (v->transcript[0]) {
        int o = tui_puts(w, y, in.x, "heard: ", in.w, tui_attr(TC_DIM));
        tui_puts(w, y, in.x + o, v->transcript, in.w - o, tui_attr(TC_USER));
    } else {
        tui_puts(w, y, in.x, v->state == TV_STARTING ? "" : "F5 to talk, F5 again when done", in.w, tui_attr(TC_DIM));
    }
    if (++y >= end) return;
    // the last turn's latency, from the end of speech
    ui_line lat;
    ui_voice_latency_text(v, tui_ascii, &lat);
    tui_line(w, y, in.x, in.w, &lat);
    if (++y >= end) return;
    tui_puts(w, y, in.x, v->line, in.w, tui_attr(TC_DIM));
}

const tui_panel tui_panel_voice = { "voice", voice_height, voice_update, voice_draw };
