// Precision panel of the window: the plan in force as a (layer x tensor kind) grid of cells
// coloured by weight type (ui/palette.h) with a legend of the types present, the bytes by type,
// the KV format, a live switch's progress, the plan's KL vs the file, and the governor's lines
// (the words are ui/panel_data.c's).
#include "sdl/sdl.h"

#include <stdio.h>
#include <string.h>

#define MAX_ROWS 16
static int grid_rows(const ui_snapshot *s) { return s->n_layer < MAX_ROWS ? s->n_layer : MAX_ROWS; }

static int precision_height(gfx *g, const ui_snapshot *s, int w) {
    (void)w;
    int lines = 3 + (s->governor[0] ? 2 : 0) + 1 + grid_rows(s) + 1;
    return lines * g->ch + g->ch + 14;
}

static void precision_update(const ui_snapshot *s) { (void)s; }

static void precision_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    SDL_Rect in = gfx_box(g, r, "Precision   F2 weights   F3 KV cache");
    int y = in.y, ch = g->ch;
    ui_precision_text t;
    ui_precision_text_make(s, false, &t);
    int o = gfx_line_text(g, in.x, y, &t.head, in.w);
    if (t.switching) gfx_bar(g, (SDL_Rect){ in.x + o + g->cw, y + 3, in.w - o - g->cw, ch - 6 }, t.progress, C_WARN);
    y += ch;
    gfx_line_text(g, in.x, y, &t.bytes, in.w);
    y += ch;
    int o3 = gfx_line_text(g, in.x, y, &t.kv, in.w) + 3 * g->cw;
    gfx_line_text(g, in.x + o3, y, &t.kl, in.w - o3);
    y += ch;
    for (int i = 0; i < t.n_governor; i++, y += ch) gfx_line_text(g, in.x, y, &t.governor[i], in.w);
    // the grid: a header of kinds, a row per layer (more layers than rows: the first rows-2,
    // a "more" row, the last)
    int lx = in.x + g->cw * 6, cell_w = g->cw * 4;
    gfx_text(g, in.x, y, "layer", C_DIM, g->cw * 6);
    for (int k = 0; k < UI_LAYER_KINDS; k++) gfx_text(g, lx + k * cell_w + cell_w / 2 - g->cw / 2, y, ui_kind_letter(k), C_DIM, cell_w);
    int ex = lx + UI_LAYER_KINDS * cell_w + g->cw;
    gfx_text(g, ex, y, t.ends, C_DIM, in.x + in.w - ex);
    y += ch;
    int rows = grid_rows(s);
    for (int i = 0; i < rows; i++, y += ch) {
        int l = ui_grid_layer(s->n_layer, rows, i, true);
        if (l < 0) {
            char more[64];
            ui_grid_more_text(s->n_layer, rows, false, more, sizeof more);
            gfx_text(g, in.x, y, more, C_DIM, in.w);
            continue;
        }
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        for (int k = 0; k < UI_LAYER_KINDS; k++) {
            SDL_Rect c = { lx + k * cell_w + 1, y + 1, cell_w - 2, ch - 2 };
            gfx_fill(g, c, ui_type_rgb(s->types[l][k]));
            if (reg->n_cells < GUI_MAX_CELLS) {
                reg->cell[reg->n_cells].layer = l;
                reg->cell[reg->n_cells].kind = k;
                reg->cell[reg->n_cells++].r = c;
            }
            if (p->x >= c.x && p->x < c.x + c.w && p->y >= c.y && p->y < c.y + c.h)
                ui_precision_cell_text(s, l, k, p->hover, sizeof p->hover);
        }
    }
    // the legend: the types present
    int x = in.x;
    for (int i = 0; i < t.n_legend && x <= in.x + in.w - 10 * g->cw; i++) {
        gfx_fill(g, (SDL_Rect){ x, y + 3, g->cw * 2, ch - 6 }, ui_type_rgb(t.legend[i]));
        x += g->cw * 3;
        x += gfx_textf(g, x, y, in.x + in.w - x, C_TEXT, "%s   ", t.legend_name[i]);
    }
}

const gui_panel gui_panel_precision = { "precision", precision_height, NULL, precision_update, precision_draw };
