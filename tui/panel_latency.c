// Latency panel: TTFT, prefill and decode speed, a sparkline of the per-token times of the
// current (or last) reply, and per-op bars when the turn was profiled (ui/panel_data.c's words).
#include "tui/tui.h"

#include <stdio.h>

static float ring[SESSION_TOK_RING];
static int n_ring;

static int latency_height(const ui_snapshot *s, int w) { (void)w; return s->st.op_profiled ? 9 : 6; }

static void latency_update(const ui_snapshot *s) { n_ring = ui_token_times(s, ring, SESSION_TOK_RING); }

static void latency_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Latency", focused);
    if (in.h < 1) return;
    ui_latency_text t;
    ui_latency_text_make(s, &t);
    int y = in.y, end = in.y + in.h;
    tui_line(w, y++, in.x, in.w, &t.ttft);
    if (!t.have || y >= end) return;
    tui_line(w, y++, in.x, in.w, &t.decode);
    if (y >= end) return;
    tui_line(w, y++, in.x, in.w, &t.per_token);
    if (y >= end) return;
    tui_sparkline(w, y++, in.x, in.w, ring, n_ring, tui_attr(TC_TITLE));
    for (int k = 0; k < t.n_ops && y < end; k++) {
        int o = tui_printf(w, y, in.x, in.w, tui_attr(TC_DIM), "%-9s %6.1f ms ", t.ops[k].name, t.ops[k].ms);
        tui_bar(w, y++, in.x + o, in.w - o, t.ops[k].share, tui_attr(TC_ACTION));
    }
}

const tui_panel tui_panel_latency = { "latency", latency_height, latency_update, latency_draw };
