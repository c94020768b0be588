// The colours the window draws with where a colour carries meaning: one per weight type in the
// precision grid, and the heat maps' scale (cold to hot). Written once, here, so that the
// window (sdl/) and its pixel test (tests/gui.sh, which reads `cabin gui --print-palette`) agree.
#ifndef CABIN_UI_PALETTE_H
#define CABIN_UI_PALETTE_H

#include <stdint.h>
#include <stdio.h>

typedef struct ui_rgb { uint8_t r, g, b; } ui_rgb;

// A weight type's colour (engine/wtype.h codes; one colour for the types with none of their own).
ui_rgb ui_type_rgb(uint32_t wtype);
// The heat scale at frac in [0, 1] (clamped): 0 the coldest colour, 1 the hottest.
ui_rgb ui_heat_rgb(double frac);
// Where v falls on a log scale from lo to hi, in [0, 1] (both panels' heat maps use it).
double ui_heat_frac(double v, double lo, double hi);
// "type NAME R G B" for every type with a colour, then "heat 0 R G B" and "heat 1 R G B".
void ui_palette_print(FILE *f);

#endif
