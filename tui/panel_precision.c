// Precision panel: the plan in force as a (layer × tensor kind) grid coloured by weight type,
// the weight bytes by type, the KV cache format, a live switch's progress, and the plan's KL /
// top-1 agreement against the file (measured aside after a switch, ui/measure.c), and the
// governor's state and last change when it is on. The words are ui/panel_data.c's.
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>

static int grid_rows(const ui_snapshot *s) { return s->n_layer < 12 ? s->n_layer : 12; }

static int precision_height(const ui_snapshot *s, int w) {
    (void)w;
    // frame, plan/bytes/kv lines, the governor's two, grid header, grid, legend
    return 2 + 3 + (s->governor[0] ? 2 : 0) + 1 + grid_rows(s) + 1;
}

static void precision_update(const ui_snapshot *s) { (void)s; }

static void precision_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Precision  F2 weights  F3 KV", focused);
    if (in.h < 1) return;
    int y = in.y, end = in.y + in.h;
    ui_precision_text p;
    ui_precision_text_make(s, tui_ascii, &p);
    if (p.switching) {
        int o = tui_line(w, y, in.x, in.w, &p.head);
        o += tui_puts(w, y, in.x + o, " ", 1, 0);
        tui_bar(w, y, in.x + o, in.w - o - 5 > 4 ? in.w - o - 5 : 4, p.progress, tui_attr(TC_WARN));
        tui_printf(w, y, in.x + in.w - 4, 4, tui_attr(TC_WARN), "%3.0f%%", 100.0 * p.progress);
    } else {
        tui_line(w, y, in.x, in.w, &p.head);
    }
    if (++y >= end) return;
    tui_line(w, y, in.x, in.w, &p.bytes);
    if (++y >= end) return;
    int o3 = tui_line(w, y, in.x, in.w, &p.kv);
    o3 += tui_puts(w, y, in.x + o3, "   ", 3, 0);
    tui_line(w, y, in.x + o3, in.w - o3, &p.kl);
    if (++y >= end) return;
    for (int i = 0; i < p.n_governor; i++) {
        tui_line(w, y, in.x, in.w, &p.governor[i]);
        if (++y >= end) return;
    }
    // grid header
    tui_puts(w, y, in.x, "layer", 5, tui_attr(TC_DIM));
    for (int k = 0; k < UI_LAYER_KINDS; k++) tui_printf(w, y, in.x + 5 + 3 * k, 3, tui_attr(TC_DIM), " %s", ui_kind_letter(k));
    if (in.w > 5 + 3 * UI_LAYER_KINDS + 2) tui_puts(w, y, in.x + 5 + 3 * UI_LAYER_KINDS + 2, p.ends, in.w - 7 - 3 * UI_LAYER_KINDS, tui_attr(TC_DIM));
    y++;
    int rows = grid_rows(s);
    for (int i = 0; i < rows && y < end - 1; i++, y++) {
        int l = ui_grid_layer(s->n_layer, rows, i, true);
        if (l < 0) {
            char more[64];
            ui_grid_more_text(s->n_layer, rows, tui_ascii, more, sizeof more);
            tui_puts(w, y, in.x, more, in.w, tui_attr(TC_DIM));
            continue;
        }
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        for (int k = 0; k < UI_LAYER_KINDS && 5 + 3 * k + 3 <= in.w; k++)
            tui_printf(w, y, in.x + 5 + 3 * k, 3, tui_attr(tui_type_color(s->types[l][k])), " %s", ui_type_cell(s->types[l][k]));
    }
    if (y >= end) return;
    // legend: the types present
    int x = in.x;
    for (int i = 0; i < p.n_legend; i++) {
        if (x >= in.x + in.w - 8) break;
        x += tui_printf(w, y, x, 3, tui_attr(tui_type_color(p.legend[i])), " %s", ui_type_cell(p.legend[i]));
        char nm[24];
        snprintf(nm, sizeof nm, " %s  ", p.legend_name[i]);
        x += tui_puts(w, y, x, nm, in.x + in.w - x, 0);
    }
}

const tui_panel tui_panel_precision = { "precision", precision_height, precision_update, precision_draw };
