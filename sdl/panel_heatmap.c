// Heat map panel of the window, three views cycled with F4: quantization sensitivity per
// (layer, tensor kind) (from `:heatmap`), KV cache occupancy per layer, and the newest token's
// attention over the context. Cells on the heat scale (ui/palette.h) with its legend; the value
// under the mouse is written under the map. The words, ranges and cell values are
// ui/panel_data.c's.
#include "sdl/sdl.h"

#include <stdio.h>
#include <string.h>

#define MAX_ROWS 12

static int heat_height(gfx *g, const ui_snapshot *s, int w) {
    (void)w;
    int rows = s->n_layer < MAX_ROWS ? s->n_layer : MAX_ROWS;
    return (3 + rows + 1) * g->ch + g->ch + 14;
}

// Lines only (no data yet): their height; a map: the whole grid.
static int heat_least(gfx *g, const ui_snapshot *s, int w) {
    ui_heat_text h;
    ui_heat_text_make(s, false, &h);
    return h.shape == UI_HEAT_LINES ? (h.n_lines + 1) * g->ch + 14 : heat_height(g, s, w);
}

static void heat_update(const ui_snapshot *s) { (void)s; }

static bool under(const gui_pointer *p, SDL_Rect c) { return p->x >= c.x && p->x < c.x + c.w && p->y >= c.y && p->y < c.y + c.h; }

static SDL_Rect span(SDL_Rect a, SDL_Rect b) {
    if (a.w == 0) return b;
    int x0 = a.x < b.x ? a.x : b.x, y0 = a.y < b.y ? a.y : b.y;
    int x1 = a.x + a.w > b.x + b.w ? a.x + a.w : b.x + b.w, y1 = a.y + a.h > b.y + b.h ? a.y + a.h : b.y + b.h;
    return (SDL_Rect){ x0, y0, x1 - x0, y1 - y0 };
}

// A row per layer of cells: tensor kinds (with a header of their letters) or attention bins.
static int draw_cells(gfx *g, SDL_Rect in, int y, const ui_snapshot *s, const ui_heat_text *h, gui_pointer *p, gui_regions *reg) {
    int ch = g->ch, bx = in.x + g->cw * 6;
    int cell = h->kind_cols ? g->cw * 4 : (in.w - g->cw * 6) / h->n_cols;
    if (cell < 2) cell = 2;
    if (h->kind_cols) {
        gfx_text(g, in.x, y, "layer", C_DIM, g->cw * 6);
        for (int k = 0; k < h->n_cols; k++) gfx_text(g, bx + k * cell + cell / 2 - g->cw / 2, y, ui_kind_letter(k), C_DIM, cell);
        y += ch;
    }
    int n = h->n_layer < MAX_ROWS ? h->n_layer : MAX_ROWS;
    for (int i = 0; i < n; i++, y += ch) {
        int l = ui_grid_layer(h->n_layer, n, i, false);
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        for (int c = 0; c < h->n_cols && (h->kind_cols || bx + (c + 1) * cell <= in.x + in.w); c++) {
            SDL_Rect r = h->kind_cols ? (SDL_Rect){ bx + c * cell + 1, y + 1, cell - 2, ch - 2 } : (SDL_Rect){ bx + c * cell, y + 1, cell - 1, ch - 2 };
            double f = ui_heat_cell(s, h, l, c);
            if (f < 0) { gfx_fill(g, r, C_GRIDLINE); continue; }
            gfx_fill(g, r, ui_heat_rgb(f));
            reg->heat = span(reg->heat, r);
            if (under(p, r)) ui_heat_hover(s, h, l, c, p->hover, sizeof p->hover);
        }
    }
    return y;
}

// The KV cache: a bar per layer of the context its slots fill, striped over the quantized share.
static int draw_bars(gfx *g, SDL_Rect in, int y, const ui_snapshot *s, const ui_heat_text *h, gui_pointer *p, gui_regions *reg) {
    int ch = g->ch, bx = in.x + g->cw * 6, bw = in.w - g->cw * 6;
    int n = h->n_layer < MAX_ROWS ? h->n_layer : MAX_ROWS;
    for (int i = 0; i < n; i++, y += ch) {
        int l = ui_grid_layer(h->n_layer, n, i, false);
        double f, q, frac;
        ui_heat_bar(s, l, &f, &q, &frac);
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        SDL_Rect r = { bx, y + 2, bw, ch - 4 };
        gfx_bar(g, r, f, ui_heat_rgb(frac));
        for (int x = 0; x < (int)(q * bw); x += 4) gfx_line(g, bx + x, y + 2, bx + x, y + ch - 3, C_PANEL);
        reg->heat = span(reg->heat, r);
        if (under(p, r)) ui_heat_hover(s, h, l, 0, p->hover, sizeof p->hover);
    }
    return y;
}

static void heat_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    ui_heat_text h;
    ui_heat_text_make(s, false, &h);
    char title[80];
    snprintf(title, sizeof title, "%s   F4 next view", h.title);
    SDL_Rect in = gfx_box(g, r, title);
    int y = in.y;
    for (int i = 0; i < h.n_lines; i++, y += g->ch) gfx_line_text(g, in.x, y, &h.lines[i], in.w);
    if (h.shape != UI_HEAT_LINES) {
        y = h.shape == UI_HEAT_CELLS ? draw_cells(g, in, y, s, &h, p, reg) : draw_bars(g, in, y, s, &h, p, reg);
        gfx_heat_legend(g, in.x, y, in.w, h.lo, h.hi, h.unit);
    }
    if (p->hover[0] && under(p, r)) gfx_text(g, in.x, in.y + in.h - g->ch, p->hover, C_WARN, in.w);
}

const gui_panel gui_panel_heatmap = { "heatmap", heat_height, heat_least, heat_update, heat_draw };
