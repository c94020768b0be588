// Power panel: watts now (the total and each source), joules per token of the last reply, a
// sparkline of the total, and "estimated" whenever the figure is not a measurement; on a
// terminal of HW_MIN_LINES rows or more, the hardware line (CPU clock, throttle count, hottest
// zone, battery or mains: engine/hwstate.h), in the warning colour while the CPU throttles.
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>

#define POWER_HIST 120
static float hist[POWER_HIST];
static int n_hist;
static double last_t;
static hw_state hw_prev;     // the reading before the newest, for hw_state_throttled
static double hw_seen_t;
static bool throttling;

#define HW_MIN_LINES 40      // below this the panels below need the row more

static int power_height(const ui_snapshot *s, int w) {
    (void)w;
    int src = s->n_pw < 3 ? s->n_pw : 3;
    return 2 + 3 + src + (LINES >= HW_MIN_LINES ? 1 : 0);
}

static void power_update(const ui_snapshot *s) {
    if (s->hw_t != hw_seen_t) {   // a new hardware reading
        throttling = hw_seen_t > 0 && hw_state_throttled(&hw_prev, &s->hw);
        hw_prev = s->hw;
        hw_seen_t = s->hw_t;
    }
    if (s->now - last_t < 0.25) return;   // 4 samples a second
    last_t = s->now;
    if (n_hist == POWER_HIST) { for (int i = 1; i < POWER_HIST; i++) hist[i - 1] = hist[i]; n_hist--; }
    hist[n_hist++] = (float)s->watts;
}

// The hardware line, its "·" and "°" spelt in ASCII where the terminal has no UTF-8.
static void draw_hw(WINDOW *w, int y, tui_rect in, const ui_snapshot *s) {
    char line[200], out[200];
    hw_state_line(&s->hw, line, sizeof line);
    if (!tui_ascii) snprintf(out, sizeof out, "%s", line);
    else {
        size_t o = 0;
        for (const char *p = line; *p && o + 2 < sizeof out; p++) {
            if (!strncmp(p, "·", strlen("·"))) { out[o++] = '|'; p += strlen("·") - 1; }
            else if (!strncmp(p, "°", strlen("°"))) p += strlen("°") - 1;
            else out[o++] = *p;
        }
        out[o] = 0;
    }
    tui_printf(w, y, in.x, in.w, throttling ? tui_attr(TC_WARN) : tui_attr(TC_DIM), "%s%s", out,
               throttling ? " THROTTLING" : "");
}

static void power_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Power", focused);
    if (in.h < 1) return;
    int y = in.y, end = in.y + in.h;
    if (s->n_pw == 0) { tui_puts(w, y, in.x, "no power sources", in.w, tui_attr(TC_DIM)); return; }
    tui_printf(w, y++, in.x, in.w, s->power_measured ? tui_attr(TC_GOOD) : tui_attr(TC_WARN), "%.2f W now  (%s%s)",
               s->watts, s->power_from, s->power_measured ? ", measured" : strcmp(s->power_from, "estimate") ? ", estimated" : "d from CPU time");
    if (y >= end) return;
    const energy_turn *e = &s->st.energy;
    if (e->total_from[0] && s->st.gen_tokens > 0)
        tui_printf(w, y++, in.x, in.w, 0, "%.3f J/token decode, %.3f J/token prefill%s", e->decode_j_per_token,
                   e->prefill_j_per_token, e->total_measured ? "" : " (est.)");
    else tui_puts(w, y++, in.x, "J/token: after the first reply", in.w, tui_attr(TC_DIM));
    if (y >= end) return;
    tui_sparkline(w, y++, in.x, in.w, hist, n_hist, tui_attr(TC_WARN));
    for (int i = 0, shown = 0; i < s->n_pw && y < end && shown < 3; i++) {
        const power_reading *p = &s->pw[i];
        if (!p->readable) continue;
        tui_printf(w, y++, in.x, in.w, tui_attr(TC_DIM), "%-22.22s %7.2f W%s", p->name, p->watts, p->measured ? "" : " est.");
        shown++;
    }
    if (y < end && LINES >= HW_MIN_LINES) draw_hw(w, y, in, s);
}

const tui_panel tui_panel_power = { "power", power_height, power_update, power_draw };
