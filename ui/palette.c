// Colours with a meaning (ui/palette.h).
#include "ui/palette.h"
#include "ui/panel_data.h"
#include "engine/wtype.h"

#include <math.h>

// Types from wide (cool) to narrow (warm): the eye reads "more red, more quantized".
ui_rgb ui_type_rgb(uint32_t t) {
    static const ui_rgb by_class[UI_TYPE_CLASSES] = {
        [UI_TYPE_F32] = { 70, 110, 200 }, [UI_TYPE_F16] = { 60, 170, 220 }, [UI_TYPE_BF16] = { 110, 140, 230 },
        [UI_TYPE_Q8] = { 80, 190, 110 },  [UI_TYPE_Q4] = { 235, 160, 50 },  [UI_TYPE_OTHER] = { 200, 90, 170 },
    };
    return by_class[ui_type_class(t)];
}

// Dark blue -> teal -> yellow -> red, linear between the stops.
ui_rgb ui_heat_rgb(double f) {
    static const ui_rgb stop[] = { { 30, 40, 110 }, { 30, 150, 160 }, { 240, 220, 60 }, { 220, 40, 40 } };
    const int n = (int)(sizeof stop / sizeof stop[0]);
    if (!(f > 0)) return stop[0];
    if (f >= 1) return stop[n - 1];
    double x = f * (n - 1);
    int i = (int)x;
    double u = x - i;
    ui_rgb a = stop[i], b = stop[i + 1];
    return (ui_rgb){ (uint8_t)lround(a.r + u * (b.r - a.r)), (uint8_t)lround(a.g + u * (b.g - a.g)),
                     (uint8_t)lround(a.b + u * (b.b - a.b)) };
}

double ui_heat_frac(double v, double lo, double hi) {
    if (!(hi > lo) || !(lo > 0)) return 0;
    double f = (log10(v > 1e-9 ? v : 1e-9) - log10(lo)) / (log10(hi) - log10(lo));
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

void ui_palette_print(FILE *f) {
    static const uint32_t types[] = { WT_F32, WT_F16, WT_BF16, WT_Q8_0, WT_Q4_0 };
    for (int i = 0; i < (int)(sizeof types / sizeof types[0]); i++) {
        ui_rgb c = ui_type_rgb(types[i]);
        fprintf(f, "type %s %d %d %d\n", wtype_name(types[i]), c.r, c.g, c.b);
    }
    ui_rgb c = ui_type_rgb(WT_COUNT);
    fprintf(f, "type other %d %d %d\n", c.r, c.g, c.b);
    for (int k = 0; k <= 1; k++) {
        c = ui_heat_rgb(k);
        fprintf(f, "heat %d %d %d %d\n", k, c.r, c.g, c.b);
    }
}
