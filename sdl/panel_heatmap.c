// Heat map panel of the window, three views cycled with F4: quantization sensitivity per
// (layer, tensor kind) (from `:heatmap`), KV cache occupancy per layer, and the newest token's
// attention over the context. Cells on the heat scale (ui/palette.h) with its legend; the value
// under the mouse is written under the map.
#include "sdl/sdl.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROWS 12

static int heat_height(gfx *g, const ui_snapshot *s, int w) {
    (void)w;
    int rows = s->n_layer < MAX_ROWS ? s->n_layer : MAX_ROWS;
    return (3 + rows + 1) * g->ch + g->ch + 14;
}

static void heat_update(const ui_snapshot *s) { (void)s; }

static bool under(const gui_pointer *p, SDL_Rect c) { return p->x >= c.x && p->x < c.x + c.w && p->y >= c.y && p->y < c.y + c.h; }

// The layer shown on row i of n (more layers than rows: the last row is the last layer).
static int row_layer(int n_layer, int n, int i) { return (n_layer > n && i == n - 1) ? n_layer - 1 : i; }

static SDL_Rect span(SDL_Rect a, SDL_Rect b) {
    if (a.w == 0) return b;
    int x0 = a.x < b.x ? a.x : b.x, y0 = a.y < b.y ? a.y : b.y;
    int x1 = a.x + a.w > b.x + b.w ? a.x + a.w : b.x + b.w, y1 = a.y + a.h > b.y + b.h ? a.y + a.h : b.y + b.h;
    return (SDL_Rect){ x0, y0, x1 - x0, y1 - y0 };
}

static void draw_sensitivity(gfx *g, SDL_Rect in, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    const sensitivity_map *m = s->heat;
    int y = in.y, ch = g->ch;
    if (!m) {
        gfx_text(g, in.x, y, s->heat_status[0] ? s->heat_status : "no data yet", s->heat_status[0] ? C_WARN : C_DIM, in.w);
        gfx_text(g, in.x, y + ch, ":heatmap computes one (or :heatmap FILE.json from", C_DIM, in.w);
        gfx_text(g, in.x, y + 2 * ch, "`cabin heatmap --json`)", C_DIM, in.w);
        return;
    }
    double lo, hi;
    ui_heat_range(m, &lo, &hi);
    gfx_textf(g, in.x, y, in.w, C_TEXT, "KL per tensor at %s%s", wtype_name(m->type), s->heat_status[0] ? "  (updating)" : "");
    y += ch;
    static const char *const ks[] = { "q", "k", "v", "o", "g", "u", "d" };
    int lx = in.x + g->cw * 6, cell_w = g->cw * 4;
    gfx_text(g, in.x, y, "layer", C_DIM, g->cw * 6);
    for (int k = 0; k < TK_LAYER_KINDS; k++) gfx_text(g, lx + k * cell_w + cell_w / 2 - g->cw / 2, y, ks[k], C_DIM, cell_w);
    y += ch;
    int n = m->n_layer < MAX_ROWS ? m->n_layer : MAX_ROWS;
    for (int i = 0; i < n; i++, y += ch) {
        int l = row_layer(m->n_layer, n, i);
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            const sens_cell *c = sens_at(m, l, k);
            SDL_Rect r = { lx + k * cell_w + 1, y + 1, cell_w - 2, ch - 2 };
            if (!c->done) { gfx_fill(g, r, C_GRIDLINE); continue; }
            gfx_fill(g, r, ui_heat_rgb(ui_heat_frac(c->kl_mean, lo, hi)));
            reg->heat = span(reg->heat, r);
            if (under(p, r))
                snprintf(p->hover, sizeof p->hover, "layer %d %s at %s: KL %.3g nats, top-1 %.1f%%", l, tensor_kind_name(k),
                         wtype_name(m->type), c->kl_mean, 100 * c->top1);
        }
    }
    gfx_heat_legend(g, in.x, y, in.w, lo, hi, "nats");
}

static void draw_kv(gfx *g, SDL_Rect in, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    int y = in.y, ch = g->ch;
    double frac = s->st.n_ctx > 0 ? (double)s->st.n_past / s->st.n_ctx : 0;
    gfx_textf(g, in.x, y, in.w, C_TEXT, "KV %s, policy %s: %d / %d tokens", s->kv_format, s->kv_policy[0] ? s->kv_policy : "none",
              s->st.n_past, s->st.n_ctx);
    y += ch;
    gfx_textf(g, in.x, y, in.w, C_DIM, "%.2f of %.2f MiB (%.1f%%); bar: filled, striped: quantized",
              (double)s->st.kv_used_bytes / (1 << 20), (double)s->st.kv_bytes / (1 << 20), 100 * frac);
    y += ch;
    int n = s->n_layer < MAX_ROWS ? s->n_layer : MAX_ROWS;
    int bx = in.x + g->cw * 6, bw = in.w - g->cw * 6;
    for (int i = 0; i < n; i++, y += ch) {
        int l = row_layer(s->n_layer, n, i);
        double f = s->st.n_ctx > 0 ? (double)s->kv_used[l] / s->st.n_ctx : 0;
        double q = s->st.n_ctx > 0 ? (double)s->kv_quant[l] / s->st.n_ctx : 0;
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        SDL_Rect r = { bx, y + 2, bw, ch - 4 };
        gfx_bar(g, r, f, ui_heat_rgb(ui_heat_frac(f > 0.01 ? f : 0.01, 0.01, 1)));
        for (int x = 0; x < (int)(q * bw); x += 4) gfx_line(g, bx + x, y + 2, bx + x, y + ch - 3, C_PANEL);
        reg->heat = span(reg->heat, r);
        if (under(p, r)) snprintf(p->hover, sizeof p->hover, "layer %d: %d slots filled, %d quantized, of %d", l, s->kv_used[l], s->kv_quant[l], s->st.n_ctx);
    }
    gfx_heat_legend(g, in.x, y, in.w, 0.01, 1, "of the context");
}

static void draw_attention(gfx *g, SDL_Rect in, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    int y = in.y, ch = g->ch;
    if (s->att_bins <= 0) { gfx_text(g, in.x, y, "no data yet (after the first token)", C_DIM, in.w); return; }
    int per = (s->att_slots + s->att_bins - 1) / s->att_bins;
    gfx_textf(g, in.x, y, in.w, C_TEXT, "last token over %d slots (%d per column)", s->att_slots, per);
    y += ch;
    double lo = 1e-4, hi = 0;
    for (int l = 0; l < s->n_layer; l++)
        for (int b = 0; b < s->att_bins; b++) if (s->att[l][b] > hi) hi = s->att[l][b];
    if (hi <= lo) hi = lo * 10;
    int n = s->n_layer < MAX_ROWS ? s->n_layer : MAX_ROWS;
    int bx = in.x + g->cw * 6, cell = (in.w - g->cw * 6) / s->att_bins;
    if (cell < 2) cell = 2;
    for (int i = 0; i < n; i++, y += ch) {
        int l = row_layer(s->n_layer, n, i);
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        for (int b = 0; b < s->att_bins && bx + (b + 1) * cell <= in.x + in.w; b++) {
            double v = s->att[l][b];
            SDL_Rect r = { bx + b * cell, y + 1, cell - 1, ch - 2 };
            gfx_fill(g, r, ui_heat_rgb(v < lo ? 0 : ui_heat_frac(v, lo, hi)));
            reg->heat = span(reg->heat, r);
            if (under(p, r)) snprintf(p->hover, sizeof p->hover, "layer %d, slots %d-%d: weight %.4f", l, b * per, (b + 1) * per - 1, v);
        }
    }
    gfx_heat_legend(g, in.x, y, in.w, lo, hi, "weight");
}

static void heat_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    char title[80];
    snprintf(title, sizeof title, "Heat map: %s   F4 next view", ui_heat_modes[s->heat_mode]);
    SDL_Rect in = gfx_box(g, r, title);
    if (s->heat_mode == HEAT_SENSITIVITY) draw_sensitivity(g, in, s, p, reg);
    else if (s->heat_mode == HEAT_KV) draw_kv(g, in, s, p, reg);
    else draw_attention(g, in, s, p, reg);
    if (p->hover[0] && under(p, r)) gfx_text(g, in.x, in.y + in.h - g->ch, p->hover, C_WARN, in.w);
}

const gui_panel gui_panel_heatmap = { "heatmap", heat_height, heat_update, heat_draw };
