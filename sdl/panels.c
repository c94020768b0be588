// The window's panels, in the order they stack down the right-hand column. A new panel is one
// line here and a file of its own.
#include "sdl/sdl.h"

extern const gui_panel gui_panel_precision, gui_panel_heatmap, gui_panel_latency, gui_panel_power, gui_panel_vehicle,
    gui_panel_voice;

static const gui_panel *const table[] = { &gui_panel_precision, &gui_panel_heatmap, &gui_panel_latency,
                                          &gui_panel_power, &gui_panel_vehicle, &gui_panel_voice };

const gui_panel *const *gui_panels(int *n) {
    *n = (int)(sizeof table / sizeof table[0]);
    return table;
}
