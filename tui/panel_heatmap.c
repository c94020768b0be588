// Heat map panel, three views cycled with F4: quantization sensitivity per (layer, tensor kind)
// (KL vs the file when only that tensor is at q4_0; from `:heatmap`), KV cache occupancy per
// layer (filled and quantized slots), and the newest token's attention over the context. A
// colour scale with its legend; "no data yet" when there is none.
#include "tui/tui.h"
#include "engine/wtype.h"
#include "ui/palette.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int heat_height(const ui_snapshot *s, int w) {
    (void)w;
    int rows = s->n_layer < 10 ? s->n_layer : 10;
    return 2 + 2 + rows + 1;
}

static void heat_update(const ui_snapshot *s) { (void)s; }

static int step_of(double v, double lo, double hi) {
    return (int)(ui_heat_frac(v, lo, hi) * (TUI_HEAT_STEPS - 1) + 0.5);
}

static void draw_legend(WINDOW *w, int y, int x, int cols, double lo, double hi, const char *unit) {
    int o = tui_printf(w, y, x, cols, tui_attr(TC_DIM), "%.2g ", lo);
    for (int k = 0; k < TUI_HEAT_STEPS && o + 2 <= cols; k++, o += 2)
        tui_puts(w, y, x + o, tui_ascii ? "##" : "██", 2, tui_attr(TC_HEAT0 + k));
    tui_printf(w, y, x + o, cols - o, tui_attr(TC_DIM), " %.2g %s", hi, unit);
}

static void draw_sensitivity(WINDOW *w, tui_rect in, const ui_snapshot *s) {
    const sensitivity_map *m = s->heat;
    int y = in.y, end = in.y + in.h;
    if (!m) {
        tui_puts(w, y++, in.x, s->heat_status[0] ? s->heat_status : "no data yet", in.w, tui_attr(s->heat_status[0] ? TC_WARN : TC_DIM));
        if (y < end) tui_puts(w, y++, in.x, ":heatmap computes one (or :heatmap FILE.json", in.w, tui_attr(TC_DIM));
        if (y < end) tui_puts(w, y, in.x, "from `cabin heatmap --json`)", in.w, tui_attr(TC_DIM));
        return;
    }
    double lo, hi;
    ui_heat_range(m, &lo, &hi);
    tui_printf(w, y++, in.x, in.w, 0, "KL per tensor at %s%s", wtype_name(m->type), s->heat_status[0] ? "  (updating)" : "");
    if (y >= end) return;
    static const char *const ks[] = { " q", " k", " v", " o", " g", " u", " d" };
    tui_puts(w, y, in.x, "layer", 5, tui_attr(TC_DIM));
    for (int k = 0; k < TK_LAYER_KINDS; k++) tui_puts(w, y, in.x + 5 + 3 * k, ks[k], 3, tui_attr(TC_DIM));
    y++;
    int rows = end - y - 1;
    int n = m->n_layer < rows ? m->n_layer : rows;
    for (int i = 0; i < n; i++, y++) {
        int l = (m->n_layer > n && i == n - 1) ? m->n_layer - 1 : i;
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            const sens_cell *c = sens_at(m, l, k);
            if (!c->done) { tui_puts(w, y, in.x + 5 + 3 * k, "  .", 3, tui_attr(TC_DIM)); continue; }
            int st = step_of(c->kl_mean, lo, hi);
            char cell[8];
            snprintf(cell, sizeof cell, " %d ", st);   // the step digit keeps it readable without colour
            tui_puts(w, y, in.x + 5 + 3 * k, cell, 3, tui_attr(TC_HEAT0 + st));
        }
    }
    if (y < end) draw_legend(w, y, in.x, in.w, lo, hi, "nats");
}

static void draw_kv(WINDOW *w, tui_rect in, const ui_snapshot *s) {
    int y = in.y, end = in.y + in.h;
    double frac = s->st.n_ctx > 0 ? (double)s->st.n_past / s->st.n_ctx : 0;
    tui_printf(w, y++, in.x, in.w, 0, "KV %s, policy %s: %d / %d tokens", s->kv_format,
               s->kv_policy[0] ? s->kv_policy : "none", s->st.n_past, s->st.n_ctx);
    if (y >= end) return;
    tui_printf(w, y++, in.x, in.w, tui_attr(TC_DIM), "%.2f of %.2f MiB (%.1f%%); bar: filled, # quantized",
               (double)s->st.kv_used_bytes / (1 << 20), (double)s->st.kv_bytes / (1 << 20), 100 * frac);
    int rows = end - y - 1;
    int n = s->n_layer < rows ? s->n_layer : rows;
    int bw = in.w - 5;
    for (int i = 0; i < n; i++, y++) {
        int l = (s->n_layer > n && i == n - 1) ? s->n_layer - 1 : i;
        double f = s->st.n_ctx > 0 ? (double)s->kv_used[l] / s->st.n_ctx : 0;
        double q = s->st.n_ctx > 0 ? (double)s->kv_quant[l] / s->st.n_ctx : 0;
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        tui_bar(w, y, in.x + 5, bw, f, tui_attr(TC_HEAT0 + step_of(f > 0.01 ? f : 0.01, 0.01, 1)));
        int qc = (int)(q * bw + 0.5);
        for (int k = 0; k < qc; k++) mvwaddch(w, y, in.x + 5 + k, '#' | tui_attr(TC_T_Q8));
    }
    if (y < end) draw_legend(w, y, in.x, in.w, 0.01, 1, "of the context");
}

// Attention of the newest token over the context (mean over heads), layers × bins of slots.
static void draw_attention(WINDOW *w, tui_rect in, const ui_snapshot *s) {
    int y = in.y, end = in.y + in.h;
    if (s->att_bins <= 0) {
        tui_puts(w, y, in.x, "no data yet (after the first token)", in.w, tui_attr(TC_DIM));
        return;
    }
    tui_printf(w, y++, in.x, in.w, 0, "last token over %d slots (%d per column)", s->att_slots,
               (s->att_slots + s->att_bins - 1) / s->att_bins);
    double lo = 1e-4, hi = 0;
    for (int l = 0; l < s->n_layer; l++)
        for (int b = 0; b < s->att_bins; b++) if (s->att[l][b] > hi) hi = s->att[l][b];
    if (hi <= lo) hi = lo * 10;
    int rows = end - y - 1;
    int n = s->n_layer < rows ? s->n_layer : rows;
    int cols = s->att_bins < in.w - 5 ? s->att_bins : in.w - 5;
    for (int i = 0; i < n; i++, y++) {
        int l = (s->n_layer > n && i == n - 1) ? s->n_layer - 1 : i;
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        for (int b = 0; b < cols; b++) {
            double v = s->att[l][b];
            int st = v < lo ? 0 : step_of(v, lo, hi);
            char c[2] = { (char)('0' + st), 0 };
            tui_puts(w, y, in.x + 5 + b, c, 1, tui_attr(TC_HEAT0 + st));
        }
    }
    if (y < end) draw_legend(w, y, in.x, in.w, lo, hi, "weight");
}

static void heat_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    char title[64];
    snprintf(title, sizeof title, "Heat map: %s  F4", ui_heat_modes[s->heat_mode]);
    tui_rect in = tui_box(w, r, title, focused);
    if (in.h < 1) return;
    if (s->heat_mode == HEAT_SENSITIVITY) draw_sensitivity(w, in, s);
    else if (s->heat_mode == HEAT_KV) draw_kv(w, in, s);
    else draw_attention(w, in, s);
}

const tui_panel tui_panel_heatmap = { "heatmap", heat_height, heat_update, heat_draw };
