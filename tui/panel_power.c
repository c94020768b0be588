// Power panel: watts now (the total and each source), joules per token of the last reply, a
// sparkline of the total, and "estimated" whenever the figure is not a measurement; on a
// terminal of HW_MIN_LINES rows or more, the hardware line (CPU clock, throttle count, hottest
// zone, battery or mains), in the warning colour while the CPU throttles (ui/panel_data.c).
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>

#define POWER_HIST 120
static float hist[POWER_HIST];
static int n_hist;
static double last_t;

#define HW_MIN_LINES 40      // below this the panels below need the row more

static int power_height(const ui_snapshot *s, int w) {
    (void)w;
    int src = s->n_pw < 3 ? s->n_pw : 3;
    return 2 + 3 + src + (LINES >= HW_MIN_LINES ? 1 : 0);
}

static void power_update(const ui_snapshot *s) {
    if (s->now - last_t < 0.25) return;   // 4 samples a second
    last_t = s->now;
    if (n_hist == POWER_HIST) { for (int i = 1; i < POWER_HIST; i++) hist[i - 1] = hist[i]; n_hist--; }
    hist[n_hist++] = (float)s->watts;
}

static void power_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Power", focused);
    if (in.h < 1) return;
    ui_power_text p;
    ui_power_text_make(s, tui_ascii, &p);
    int y = in.y, end = in.y + in.h;
    tui_line(w, y++, in.x, in.w, &p.now);
    if (!p.have || y >= end) return;
    tui_line(w, y++, in.x, in.w, &p.joules);
    if (y >= end) return;
    tui_sparkline(w, y++, in.x, in.w, hist, n_hist, tui_attr(TC_WARN));
    for (int i = 0; i < p.n_sources && y < end; i++) tui_line(w, y++, in.x, in.w, &p.source[i]);
    if (y < end && LINES >= HW_MIN_LINES) tui_line(w, y, in.x, in.w, &p.hw);
}

const tui_panel tui_panel_power = { "power", power_height, power_update, power_draw };
