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

// "climate.passenger_temp" -> "passenger_temp", "window.rear_left" -> "win.rear_left": short
// labels that stay unique.
static void short_name(const char *f, char *out, size_t n) {
    static const char *const map[][2] = { { "climate.", "" }, { "seat.", "" }, { "window.", "win." }, { "lights.", "" },
                                          { "status.", "" }, { "media.", "" }, { "phone.", "" } };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t k = strlen(map[i][0]);
        if (strncmp(f, map[i][0], k) == 0) { snprintf(out, n, "%s%s", map[i][1], f + k); return; }
    }
    snprintf(out, n, "%s", f);
}

static void vehicle_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Vehicle", focused);
    if (in.h < 1) return;
    if (s->n_vfields == 0) { tui_puts(w, in.y, in.x, "no vehicle state yet", in.w, tui_attr(TC_DIM)); return; }
    int cols = r.w >= 50 ? 2 : 1;
    int cw = in.w / cols;
    // order: changed this turn first when the panel is too short for all
    int order[UI_MAX_VFIELDS], n = 0;
    bool all_fit = (s->n_vfields + cols - 1) / cols <= in.h;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < s->n_vfields; i++) {
            bool ch = ui_vfield_changed(s, i);
            if (all_fit ? pass == 0 : (pass == 0) == ch) order[n++] = i;
        }
    int rows = all_fit ? (n + cols - 1) / cols : in.h;
    for (int j = 0; j < n; j++) {
        int i = order[j];
        int row = j % rows, col = j / rows;
        if (col >= cols) break;
        bool changed = ui_vfield_changed(s, i);
        char name[40];
        short_name(s->vfield[i], name, sizeof name);
        int vw = 9, nw = cw - vw;
        int a = changed ? tui_attr(TC_VEHICLE) | A_BOLD : 0;
        tui_puts(w, in.y + row, in.x + col * cw, name, nw - 1, changed ? a : tui_attr(TC_DIM));
        tui_puts(w, in.y + row, in.x + col * cw + nw, s->vvalue[i], vw, a);
    }
}

const tui_panel tui_panel_vehicle = { "vehicle", vehicle_height, vehicle_update, vehicle_draw };
