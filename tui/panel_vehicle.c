// Vehicle panel: the simulated vehicle's state, two fields a row on a wide panel; the fields
// the last turn changed are marked (and listed first when not everything fits).
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>

static int vehicle_height(const ui_snapshot *s, int w) {
    int cols = w >= 50 ? 2 : 1;
    return (s->n_vfields + cols - 1) / cols + 2;
}

static void vehicle_update(const ui_snapshot *s) { (void)s; }

static void vehicle_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Vehicle", focused);
    if (in.h < 1) return;
    if (s->n_vfields == 0) { tui_puts(w, in.y, in.x, "no vehicle state yet", in.w, tui_attr(TC_DIM)); return; }
    int cols = r.w >= 50 ? 2 : 1;
    int cw = in.w / cols;
    // order: changed this turn first when the panel is too short for all
    int order[UI_MAX_VFIELDS];
    int n = ui_vfield_order(s, in.h * cols, order);
    int rows = (n + cols - 1) / cols;
    for (int j = 0; j < n; j++) {
        int i = order[j];
        int row = j % rows, col = j / rows;
        if (col >= cols) break;
        bool changed = ui_vfield_changed(s, i);
        char name[40];
        ui_vfield_label(s->vfield[i], name, sizeof name);
        int vw = 9, nw = cw - vw;
        int a = changed ? tui_attr(TC_VEHICLE) | A_BOLD : 0;
        tui_puts(w, in.y + row, in.x + col * cw, name, nw - 1, changed ? a : tui_attr(TC_DIM));
        tui_puts(w, in.y + row, in.x + col * cw + nw, s->vvalue[i], vw, a);
    }
}

const tui_panel tui_panel_vehicle = { "vehicle", vehicle_height, vehicle_update, vehicle_draw };
