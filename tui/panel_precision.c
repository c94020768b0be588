// Precision panel: the plan in force as a (layer × tensor kind) grid coloured by weight type,
// the weight bytes by type, the KV cache format, a live switch's progress, and the plan's KL /
// top-1 agreement against the file (measured aside after a switch, ui/measure.c), and the
// governor's state and last change when it is on.
#include "tui/tui.h"
#include "engine/wtype.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_short[TK_LAYER_KINDS] = { " q", " k", " v", " o", " g", " u", " d" };

// Three-column cell label for a type: "q8", "q4", "16", "32", "bf".
static const char *type_cell(uint32_t t) {
    switch (t) {
    case WT_F32: return " 32";
    case WT_F16: return " 16";
    case WT_BF16: return " bf";
    case WT_Q8_0: return " q8";
    case WT_Q4_0: return " q4";
    case 255: return "  -";
    default: return "  ?";
    }
}

static int grid_rows(const ui_snapshot *s) { return s->n_layer < 12 ? s->n_layer : 12; }

static int precision_height(const ui_snapshot *s, int w) {
    (void)w;
    // frame, plan/bytes/kv lines, the governor's two, grid header, grid, legend
    return 2 + 3 + (s->governor[0] ? 2 : 0) + 1 + grid_rows(s) + 1;
}

static void precision_update(const ui_snapshot *s) { (void)s; }


static void precision_draw(WINDOW *w, tui_rect r, const ui_snapshot *s, bool focused) {
    tui_rect in = tui_box(w, r, "Precision  F2 weights  F3 KV", focused);
    if (in.h < 1) return;
    int y = in.y, end = in.y + in.h;
    char wb[32], kb[32];
    ui_fmt_bytes(wb, sizeof wb, (double)s->st.weight_bytes);
    ui_fmt_bytes(kb, sizeof kb, (double)s->st.kv_bytes);
    if (s->switch_target[0] && s->st.switch_progress >= 0) {
        int o = tui_printf(w, y, in.x, in.w, tui_attr(TC_WARN), "switching to %s ", s->switch_target);
        tui_bar(w, y, in.x + o, in.w - o - 5 > 4 ? in.w - o - 5 : 4, s->st.switch_progress, tui_attr(TC_WARN));
        tui_printf(w, y, in.x + in.w - 4, 4, tui_attr(TC_WARN), "%3.0f%%", 100.0 * s->st.switch_progress);
    } else {
        tui_printf(w, y, in.x, in.w, 0, "plan %s   weights %s", s->plan_name, wb);
    }
    if (++y >= end) return;
    // bytes by type
    char line[256];
    ui_bytes_by_type(s, line, sizeof line);
    tui_puts(w, y, in.x, line, in.w, tui_attr(TC_DIM));
    if (++y >= end) return;
    int o3 = tui_printf(w, y, in.x, in.w, 0, "KV %s (%s)   ", s->kv_format, kb);
    char kl[96];
    int tone;
    ui_kl_text(s, tui_ascii, kl, sizeof kl, &tone);
    tui_puts(w, y, in.x + o3, kl, in.w - o3, tone == 0 ? 0 : tui_attr(tone == 2 ? TC_WARN : TC_DIM));
    if (++y >= end) return;
    if (s->governor[0]) {   // the governor's state and its last change (app/govern.h)
        tui_puts(w, y, in.x, s->governor, in.w, tui_attr(TC_INFO));
        if (++y >= end) return;
        tui_puts(w, y, in.x, s->governor_last[0] ? s->governor_last : "no change yet", in.w, tui_attr(TC_DIM));
        if (++y >= end) return;
    }
    // grid header
    tui_puts(w, y, in.x, "layer", 5, tui_attr(TC_DIM));
    for (int k = 0; k < TK_LAYER_KINDS; k++) tui_puts(w, y, in.x + 5 + 3 * k, kind_short[k], 3, tui_attr(TC_DIM));
    char ends[48];
    snprintf(ends, sizeof ends, "embd %s out %s", s->embd_type != PLAN_KEEP ? wtype_name(s->embd_type) : "-",
             s->output_type != PLAN_KEEP ? wtype_name(s->output_type) : "-");
    if (in.w > 5 + 3 * TK_LAYER_KINDS + 2) tui_puts(w, y, in.x + 5 + 3 * TK_LAYER_KINDS + 2, ends, in.w - 7 - 3 * TK_LAYER_KINDS, tui_attr(TC_DIM));
    y++;
    int rows = grid_rows(s);
    for (int i = 0; i < rows && y < end - 1; i++, y++) {
        // more layers than rows: show the first rows-1 and the last
        int l = (s->n_layer > rows && i == rows - 1) ? s->n_layer - 1 : i;
        if (s->n_layer > rows && i == rows - 2) { tui_printf(w, y, in.x, in.w, tui_attr(TC_DIM), " ... %d more layers", s->n_layer - rows); continue; }
        tui_printf(w, y, in.x, 5, tui_attr(TC_DIM), "%4d", l);
        for (int k = 0; k < TK_LAYER_KINDS && 5 + 3 * k + 3 <= in.w; k++)
            tui_puts(w, y, in.x + 5 + 3 * k, type_cell(s->types[l][k]), 3, tui_attr(tui_type_color(s->types[l][k])));
    }
    if (y >= end) return;
    // legend: the types present
    int x = in.x;
    bool seen[256] = { false };
    for (int l = 0; l < s->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) seen[s->types[l][k]] = true;
    for (int t = 0; t < 255; t++) {
        if (!seen[t] || x >= in.x + in.w - 8) continue;
        x += tui_puts(w, y, x, type_cell((uint32_t)t), 3, tui_attr(tui_type_color((uint32_t)t)));
        char nm[16];
        snprintf(nm, sizeof nm, " %s  ", wtype_name((uint32_t)t));
        x += tui_puts(w, y, x, nm, in.x + in.w - x, 0);
    }
}

const tui_panel tui_panel_precision = { "precision", precision_height, precision_update, precision_draw };
