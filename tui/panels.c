// The panel table: the workbench draws these top to bottom in the right-hand column, in this
// order, as far as the terminal's height allows. A new panel is one line here and its own file.
#include "tui/tui.h"

// Each defined in tui/panel_NAME.c.
extern const tui_panel tui_panel_precision, tui_panel_heatmap, tui_panel_latency,
    tui_panel_power, tui_panel_vehicle, tui_panel_voice;

static const tui_panel *const table[] = {
    &tui_panel_precision,
    &tui_panel_heatmap,
    &tui_panel_latency,
    &tui_panel_power,
    &tui_panel_voice,
    &tui_panel_vehicle,     // last: it takes what height is left
};

const tui_panel *const *tui_panels(int *n) {
    *n = (int)(sizeof table / sizeof table[0]);
    return table;
}
