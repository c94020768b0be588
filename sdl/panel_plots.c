// Latency and power panels of the window: the figures of the last reply and line plots with
// axes: the time of each decoded token of the current (or last) reply, and the total power over
// the last 30 seconds (4 samples a second), "estimated" wherever the figure is not measured.
#include "sdl/sdl.h"

#include <stdio.h>
#include <string.h>

static float tok_ring[SESSION_TOK_RING];
static int n_tok;

static int latency_height(gfx *g, const ui_snapshot *s, int w) { (void)s; (void)w; return 8 * g->ch + 14; }

static void latency_update(const ui_snapshot *s) {
    const session_stats *st = &s->st;
    int n = st->tok_ms_count < SESSION_TOK_RING ? st->tok_ms_count : SESSION_TOK_RING;
    for (int i = 0; i < n; i++) tok_ring[i] = st->tok_ms[(st->tok_ms_count - n + i) % SESSION_TOK_RING];
    n_tok = n;
}

static void latency_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    (void)p; (void)reg;
    SDL_Rect in = gfx_box(g, r, "Latency");
    const session_stats *st = &s->st;
    int y = in.y, ch = g->ch;
    if (st->turns == 0 && st->gen_tokens == 0) { gfx_text(g, in.x, y, "no reply yet", C_DIM, in.w); return; }
    double tps = st->decode_tps > 0 ? st->decode_tps : st->decode_tps_last32;
    gfx_textf(g, in.x, y, in.w, C_GOOD, "decode %.1f tok/s   %d tokens", tps, st->gen_tokens);
    gfx_textf(g, in.x, y + ch, in.w, C_DIM, "TTFT %.0f ms   prefill %.0f tok/s (%d tok)", st->ttft_ms, st->prefill_tps, st->prompt_tokens);
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

static void power_update(const ui_snapshot *s) {
    if (s->now - last_t < 0.25) return;
    last_t = s->now;
    if (n_watts == POWER_HIST) { memmove(watts, watts + 1, (POWER_HIST - 1) * sizeof *watts); n_watts--; }
    watts[n_watts++] = (float)s->watts;
}

static void power_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    (void)p; (void)reg;
    SDL_Rect in = gfx_box(g, r, "Power");
    int y = in.y, ch = g->ch;
    if (s->n_pw == 0) { gfx_text(g, in.x, y, "no power sources", C_DIM, in.w); return; }
    gfx_textf(g, in.x, y, in.w, s->power_measured ? C_GOOD : C_WARN, "%.2f W now  (%s%s)", s->watts, s->power_from,
              s->power_measured ? ", measured" : strcmp(s->power_from, "estimate") ? ", estimated" : "d from CPU time");
    y += ch;
    const energy_turn *e = &s->st.energy;
    if (e->total_from[0] && s->st.gen_tokens > 0)
        gfx_textf(g, in.x, y, in.w, C_TEXT, "%.3f J/token decode, %.3f J/token prefill%s", e->decode_j_per_token,
                  e->prefill_j_per_token, e->total_measured ? "" : " (est.)");
    else gfx_text(g, in.x, y, "J/token: after the first reply", C_DIM, in.w);
    y += ch;
    for (int i = 0, shown = 0; i < s->n_pw && shown < 3; i++) {
        const power_reading *pr = &s->pw[i];
        if (!pr->readable) continue;
        gfx_textf(g, in.x, y, in.w, C_DIM, "%-24.24s %7.2f W%s", pr->name, pr->watts, pr->measured ? "" : " est.");
        y += ch;
        shown++;
    }
    char hw[200];
    hw_state_line(&s->hw, hw, sizeof hw);
    gfx_text(g, in.x, y, hw, C_DIM, in.w);
    y += ch;
    gfx_plot(g, (SDL_Rect){ in.x, y, in.w, in.y + in.h - y }, watts, n_watts, POWER_HIST, C_WARN, "W", "the last 30 s");
}

const gui_panel gui_panel_latency = { "latency", latency_height, latency_update, latency_draw };
const gui_panel gui_panel_power = { "power", power_height, power_update, power_draw };
