// Latency panel: TTFT, prefill and decode speed, a sparkline of the per-token times of the
// current (or last) reply from stats.tok_ms, and per-op bars when the turn was profiled.
#include "tui/tui.h"

#include <stdio.h>

static float ring[SESSION_TOK_RING];
static int n_ring;

static int latency_height(const ui_snapshot *s, int w) { (void)w; return s->st.op_profiled ? 9 : 6; }

static void latency_update(const ui_snapshot *s) {
    const session_stats *st = &s->st;
    int n = st->tok_ms_count < SESSION_TOK_RING ? st->tok_ms_count : SESSION_TOK_RING;
    for (int i = 0; i < n; i++) ring[i] = st->tok_ms[(st->tok_ms_count - n + i) % SESSION_TOK_RING];
    n_ring = n;
}

static void latency_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Latency", focused);
    if (in.h < 1) return;
    const session_stats *st = &s->st;
    int y = in.y, end = in.y + in.h;
    if (st->turns == 0 && st->gen_tokens == 0) {
        tui_puts(w, y, in.x, "no reply yet", in.w, tui_attr(TC_DIM));
        return;
    }
    tui_printf(w, y++, in.x, in.w, 0, "TTFT %.0f ms   prefill %.0f tok/s (%d tok)", st->ttft_ms, st->prefill_tps, st->prompt_tokens);
    if (y >= end) return;
    double tps = st->decode_tps > 0 ? st->decode_tps : st->decode_tps_last32;
    tui_printf(w, y++, in.x, in.w, tui_attr(TC_GOOD), "decode %.1f tok/s   %d tokens", tps, st->gen_tokens);
    if (y >= end) return;
    float lo = 1e30f, hi = 0, sum = 0;
    for (int i = 0; i < n_ring; i++) { if (ring[i] < lo) lo = ring[i]; if (ring[i] > hi) hi = ring[i]; sum += ring[i]; }
    if (n_ring) tui_printf(w, y++, in.x, in.w, tui_attr(TC_DIM), "ms/token min %.2f  avg %.2f  max %.2f", lo, sum / n_ring, hi);
    else tui_puts(w, y++, in.x, "ms/token: -", in.w, tui_attr(TC_DIM));
    if (y >= end) return;
    tui_sparkline(w, y++, in.x, in.w, ring, n_ring, tui_attr(TC_TITLE));
    if (!st->op_profiled) return;
    double tot = 0;
    for (int k = 0; k < OP_COUNT; k++) tot += st->op_ms[k];
    for (int k = 0; k < OP_COUNT && y < end; k++) {
        if (st->op_ms[k] <= 0) continue;
        int o = tui_printf(w, y, in.x, in.w, tui_attr(TC_DIM), "%-9s %6.1f ms ", op_kind_name((enum op_kind)k), st->op_ms[k]);
        tui_bar(w, y++, in.x + o, in.w - o, tot > 0 ? st->op_ms[k] / tot : 0, tui_attr(TC_ACTION));
    }
}

const tui_panel tui_panel_latency = { "latency", latency_height, latency_update, latency_draw };
