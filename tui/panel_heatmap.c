// Heat map panel, three views cycled with F4: quantization sensitivity per (layer, tensor kind)
// (KL vs the file when only that tensor is at q4_0; from `:heatmap`), KV cache occupancy per
// layer (filled and quantized slots), and the newest token's attention over the context. A
// colour scale with its legend; "no data yet" when there is none. The words, ranges and cell
// values are ui/panel_data.c's; here each cell is a digit in its step's colour.
#include "tui/tui.h"
#include "ui/palette.h"

#include <stdio.h>
#include <string.h>

static int heat_height(const ui_snapshot *s, int w) {
    (void)w;
    int rows = s->n_layer < 10 ? s->n_layer : 10;
    return 2 + 2 + rows + 1;
}

static void heat_update(const ui_snapshot *s) { (void)s; }

static int step_of(double frac) { return (int)(frac * (TUI_HEAT_STEPS - 1) + 0.5); }

static void draw_legend(WINDOW *w, int y, int x, int cols, const ui_heat_text *h) {
    int o = tui_printf(w, y, x, cols, tui_attr(TC_DIM), "%.2g ", h->lo);
    for (int k = 0; k < TUI_HEAT_STEPS && o + 2 <= cols; k++, o += 2)
        tui_puts(w, y, x + o, tui_ascii ? "##" : "██", 2, tui_attr(TC_HEAT0 + k));
    tui_printf(w, y, x + o, cols - o, tui_attr(TC_DIM), " %.2g %s", h->hi, h->unit);
}

// A row per layer: tensor kinds three columns a cell (" 3 "), attention bins one ("3").
static void draw_cells(WINDOW *w, tui_rect in, int y, const ui_snapshot *s, const ui_heat_text *h) {
    int end = in.y + in.h, cw = h->kind_cols ? 3 : 1;
    if (h->kind_cols) {
        tui_puts(w, y, in.x, "layer", 5, tui_attr(TC_DIM));
        for (int k = 0; k < h->n_cols; k++) tui_printf(w, y, in.x + 5 + 3 * k, 3, tui_attr(TC_DIM), " %s", ui_kind_letter(k));
        y++;
    }
    int rows = end - y - 1;
    int n = h->n_layer < rows ? h->n_layer : rows;
    int cols = h->n_cols < (in.w - 5) / cw ? h->n_cols : (in.w - 5) / cw;
    for (int i = 0; i < n; i++, y++) {
        int l = ui_grid_layer(h->n_layer, n, i, false);
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        for (int c = 0; c < cols; c++) {
            double f = ui_heat_cell(s, h, l, c);
            if (f < 0) { tui_puts(w, y, in.x + 5 + cw * c, cw == 3 ? "  ." : ".", cw, tui_attr(TC_DIM)); continue; }
            int st = step_of(f);
            char cell[8];   // the step digit keeps it readable without colour
            snprintf(cell, sizeof cell, cw == 3 ? " %d " : "%d", st);
            tui_puts(w, y, in.x + 5 + cw * c, cell, cw, tui_attr(TC_HEAT0 + st));
        }
    }
    if (y < end) draw_legend(w, y, in.x, in.w, h);
}

// The KV cache: a bar per layer of the context its slots fill, '#' over the quantized share.
static void draw_bars(WINDOW *w, tui_rect in, int y, const ui_snapshot *s, const ui_heat_text *h) {
    int end = in.y + in.h;
    int rows = end - y - 1;
    int n = h->n_layer < rows ? h->n_layer : rows;
    int bw = in.w - 5;
    for (int i = 0; i < n; i++, y++) {
        int l = ui_grid_layer(h->n_layer, n, i, false);
        double f, q, frac;
        ui_heat_bar(s, l, &f, &q, &frac);
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        tui_bar(w, y, in.x + 5, bw, f, tui_attr(TC_HEAT0 + step_of(frac)));
        int qc = (int)(q * bw + 0.5);
        for (int k = 0; k < qc; k++) mvwaddch(w, y, in.x + 5 + k, '#' | tui_attr(TC_T_Q8));
    }
    if (y < end) draw_legend(w, y, in.x, in.w, h);
}

static void heat_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    ui_heat_text h;
    ui_heat_text_make(s, tui_ascii, &h);
    char title[80];
    snprintf(title, sizeof title, "%s  F4", h.title);
    tui_rect in = tui_box(w, r, title, focused);
    if (in.h < 1) return;
    int y = in.y, end = in.y + in.h;
    for (int i = 0; i < h.n_lines && y < end; i++, y++) tui_line(w, y, in.x, in.w, &h.lines[i]);
    if (y >= end) return;
    if (h.shape == UI_HEAT_CELLS) draw_cells(w, in, y, s, &h);
    else if (h.shape == UI_HEAT_BARS) draw_bars(w, in, y, s, &h);
}

const tui_panel tui_panel_heatmap = { "heatmap", heat_height, heat_update, heat_draw };
