// Latency and power panels of the window: the figures of the last reply and line plots with
// axes: the time of each decoded token of the current (or last) reply, and the total power over
// the last 30 seconds (4 samples a second), "estimated" wherever the figure is not measured.
#include "sdl/sdl.h"

#include <stdio.h>
#include <string.h>

static float tok_ring[SESSION_TOK_RING];
static int n_tok;

static int latency_height(gfx *g, const ui_snapshot *s, int w) { (void)s; (void)w; return 8 * g->ch + 14; }
static int latency_least(gfx *g, const ui_snapshot *s, int w) { (void)s; (void)w; return 3 * g->ch + 14; }   // the text

static void latency_update(const ui_snapshot *s) { n_tok = ui_token_times(s, tok_ring, SESSION_TOK_RING); }

static void latency_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    (void)p; (void)reg;
    SDL_Rect in = gfx_box(g, r, "Latency");
    ui_latency_text t;
    ui_latency_text_make(s, &t);
    int y = in.y, ch = g->ch;
    if (!t.have) { gfx_line_text(g, in.x, y, &t.ttft, in.w); return; }
    gfx_line_text(g, in.x, y, &t.decode, in.w);
    t.ttft.tone = UI_DIM;   // the decode speed leads here; the rest under it
    gfx_line_text(g, in.x, y + ch, &t.ttft, in.w);
    y += 2 * ch;
    gfx_plot(g, (SDL_Rect){ in.x, y, in.w, in.y + in.h - y }, tok_ring, n_tok, 0, C_TITLE, "ms", "each token of the reply");
}

#define POWER_HIST 120
static float watts[POWER_HIST];
static int n_watts;
static double last_t;

static int power_height(gfx *g, const ui_snapshot *s, int w) {
    (void)w;
    int src = s->n_pw < 3 ? s->n_pw : 3;
    return (3 + src + 5) * g->ch + 14;
}

static int power_least(gfx *g, const ui_snapshot *s, int w) {   // the text, no plot
    (void)w;
    int src = s->n_pw < 3 ? s->n_pw : 3;
    return (3 + src) * g->ch + 14;
}

static void power_update(const ui_snapshot *s) {
    if (s->now - last_t < 0.25) return;
    last_t = s->now;
    if (n_watts == POWER_HIST) { memmove(watts, watts + 1, (POWER_HIST - 1) * sizeof *watts); n_watts--; }
    watts[n_watts++] = (float)s->watts;
}

static void power_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    (void)p; (void)reg;
    SDL_Rect in = gfx_box(g, r, "Power");
    ui_power_text t;
    ui_power_text_make(s, false, &t);
    int y = in.y, ch = g->ch;
    gfx_line_text(g, in.x, y, &t.now, in.w);
    if (!t.have) return;
    y += ch;
    gfx_line_text(g, in.x, y, &t.joules, in.w);
    y += ch;
    for (int i = 0; i < t.n_sources; i++, y += ch) gfx_line_text(g, in.x, y, &t.source[i], in.w);
    gfx_line_text(g, in.x, y, &t.hw, in.w);
    y += ch;
    gfx_plot(g, (SDL_Rect){ in.x, y, in.w, in.y + in.h - y }, watts, n_watts, POWER_HIST, C_WARN, "W", "the last 30 s");
}

const gui_panel gui_panel_latency = { "latency", latency_height, latency_least, latency_update, latency_draw };
const gui_panel gui_panel_power = { "power", power_height, power_least, power_update, power_draw };
