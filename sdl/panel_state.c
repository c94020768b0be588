// Vehicle and voice panels of the window: the simulated vehicle's fields (those the last turn
// changed in colour), and the voice pipeline: its state, the input level as a meter and as a
// trace of the last 10 seconds, the last transcript and the last turn's latency.
#include "sdl/sdl.h"

#include <stdio.h>
#include <string.h>

#define VEHICLE_COL 26   // a column: a label of up to 16 characters, a value of up to 9, a space

static int vehicle_cols(gfx *g, int w) {
    int cols = w / ((VEHICLE_COL + 1) * g->cw);
    return cols < 1 ? 1 : cols > 3 ? 3 : cols;
}

static int vehicle_height(gfx *g, const ui_snapshot *s, int w) {
    int cols = vehicle_cols(g, w);
    int rows = (s->n_vfields + cols - 1) / cols;
    return (rows > 0 ? rows : 1) * g->ch + g->ch + 14;
}

// Four rows: the fields the last turn changed come first when not all fit.
static int vehicle_least(gfx *g, const ui_snapshot *s, int w) { (void)s; (void)w; return 5 * g->ch + 14; }

static void vehicle_update(const ui_snapshot *s) { (void)s; }

static void vehicle_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    (void)p; (void)reg;
    SDL_Rect in = gfx_box(g, r, "Vehicle");
    if (s->n_vfields == 0) { gfx_text(g, in.x, in.y, "no vehicle state yet", C_DIM, in.w); return; }
    int cols = vehicle_cols(g, r.w), cw = in.w / cols, fit_rows = (in.h + 4) / g->ch;
    int order[UI_MAX_VFIELDS];
    int n = ui_vfield_order(s, fit_rows * cols, order), rows = (n + cols - 1) / cols;
    for (int j = 0; j < n; j++) {
        int i = order[j], row = j % rows, col = j / rows;
        bool changed = ui_vfield_changed(s, i);
        int x = in.x + col * cw, y = in.y + row * g->ch, vw = 9 * g->cw;
        char label[40];
        ui_vfield_label(s->vfield[i], label, sizeof label);
        gfx_text(g, x, y, label, changed ? C_VEHICLE : C_DIM, cw - vw - g->cw);
        gfx_text(g, x + cw - vw - g->cw / 2, y, s->vvalue[i], changed ? C_VEHICLE : C_TEXT, vw);
    }
}


#define LEVEL_HIST 100
static float level[LEVEL_HIST];   // dB above -60 (0..60), 10 a second
static int n_level;
static double level_t;

static int voice_height(gfx *g, const ui_snapshot *s, int w) { (void)s; (void)w; return 8 * g->ch + 14; }
static int voice_least(gfx *g, const ui_snapshot *s, int w) { (void)s; (void)w; return 4 * g->ch + 14; }   // no trace

static void voice_update(const ui_snapshot *s) {
    if (s->now - level_t < 0.1) return;
    level_t = s->now;
    float v = s->voice.have_level ? (float)(s->voice.level_db + 60.0) : 0;
    if (v < 0) v = 0;
    if (n_level == LEVEL_HIST) { memmove(level, level + 1, (LEVEL_HIST - 1) * sizeof *level); n_level--; }
    level[n_level++] = v;
}

static void voice_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    (void)p; (void)reg;
    SDL_Rect in = gfx_box(g, r, "Voice   hold Space (empty input) or F5 to talk");
    const ui_voice_view *v = &s->voice;
    int y = in.y, ch = g->ch;
    if (v->state == TV_OFF) {
        gfx_text(g, in.x, y, v->line, C_WARN, in.w);
        y += ch;
        if (v->turns > 0) {   // a `:voice FILE` turn ran through the same pipeline: what it heard, how fast
            int o = gfx_text(g, in.x, y, "heard: ", C_DIM, in.w);
            gfx_text(g, in.x + o, y, v->transcript, C_USER, in.w - o);
            y += ch;
            ui_line lat;
            ui_voice_latency_text(v, false, &lat);
            gfx_line_text(g, in.x, y, &lat, in.w);
            y += ch;
        }
        gfx_text(g, in.x, y, ui_voice_off_hint, C_DIM, in.w);
        return;
    }
    ui_rgb sc = v->state >= TV_LISTENING ? C_GOOD : v->state == TV_STARTING ? C_WARN : C_TEXT;
    gfx_text(g, in.x, y, ui_voice_state_name(v), sc, 16 * g->cw);
    int mx = in.x + 17 * g->cw, mw = in.w - 17 * g->cw - 8 * g->cw;
    if (mw > 20) {   // the meter: -60 .. 0 dBFS
        bool loud;
        double frac = ui_voice_level_frac(v, &loud);
        gfx_bar(g, (SDL_Rect){ mx, y + 3, mw, ch - 6 }, frac, loud ? C_WARN : C_GOOD);
        if (v->have_level) gfx_textf(g, mx + mw + g->cw, y, 7 * g->cw, C_DIM, "%4.0f dB", v->level_db > -99 ? v->level_db : -99);
        else gfx_text(g, mx + mw + g->cw, y, "   - dB", C_DIM, 7 * g->cw);
    }
    y += ch;
    if (v->transcript[0]) {
        int o = gfx_text(g, in.x, y, "heard: ", C_DIM, in.w);
        gfx_text(g, in.x + o, y, v->transcript, C_USER, in.w - o);
    } else {
        gfx_text(g, in.x, y, "hold Space to talk, release to send", C_DIM, in.w);
    }
    y += ch;
    ui_line lat;
    ui_voice_latency_text(v, false, &lat);
    gfx_line_text(g, in.x, y, &lat, in.w);
    y += ch;
    gfx_plot(g, (SDL_Rect){ in.x, y, in.w, in.y + in.h - y }, level, n_level, LEVEL_HIST, C_GOOD, "dB above -60", "input level, the last 10 s");
}

const gui_panel gui_panel_vehicle = { "vehicle", vehicle_height, vehicle_least, vehicle_update, vehicle_draw };
const gui_panel gui_panel_voice = { "voice", voice_height, voice_least, voice_update, voice_draw };
