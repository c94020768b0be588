// Precision panel of the window: the plan in force as a (layer x tensor kind) grid of cells
// coloured by weight type (ui/palette.h) with a legend of the types present, the bytes by type,
// the KV format, a live switch's progress, the plan's KL vs the file, and the governor's lines.
#include "sdl/sdl.h"
#include "engine/wtype.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_short[TK_LAYER_KINDS] = { "q", "k", "v", "o", "g", "u", "d" };

#define MAX_ROWS 16
static int grid_rows(const ui_snapshot *s) { return s->n_layer < MAX_ROWS ? s->n_layer : MAX_ROWS; }

static int precision_height(gfx *g, const ui_snapshot *s, int w) {
    (void)w;
    int lines = 3 + (s->governor[0] ? 2 : 0) + 1 + grid_rows(s) + 1;
    return lines * g->ch + g->ch + 14;
}

static void precision_update(const ui_snapshot *s) { (void)s; }


static void draw_kl(gfx *g, int x, int y, int w, const ui_snapshot *s) {
    char kl[96];
    int tone;
    ui_kl_text(s, false, kl, sizeof kl, &tone);
    gfx_text(g, x, y, kl, tone == 0 ? C_TEXT : tone == 2 ? C_WARN : C_DIM, w);
}

static void precision_draw(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg) {
    SDL_Rect in = gfx_box(g, r, "Precision   F2 weights   F3 KV cache");
    int y = in.y, ch = g->ch;
    char wb[32], kb[32];
    ui_fmt_bytes(wb, sizeof wb, (double)s->st.weight_bytes);
    ui_fmt_bytes(kb, sizeof kb, (double)s->st.kv_bytes);
    if (s->switch_target[0] && s->st.switch_progress >= 0) {
        int o = gfx_textf(g, in.x, y, in.w, C_WARN, "switching to %s ", s->switch_target);
        gfx_bar(g, (SDL_Rect){ in.x + o, y + 3, in.w - o, ch - 6 }, s->st.switch_progress, C_WARN);
    } else {
        gfx_textf(g, in.x, y, in.w, C_TEXT, "plan %s   weights %s", s->plan_name, wb);
    }
    y += ch;
    char line[256];
    ui_bytes_by_type(s, line, sizeof line);
    gfx_text(g, in.x, y, line, C_DIM, in.w);
    y += ch;
    int o3 = gfx_textf(g, in.x, y, in.w, C_TEXT, "KV %s (%s)   ", s->kv_format, kb);
    draw_kl(g, in.x + o3, y, in.w - o3, s);
    y += ch;
    if (s->governor[0]) {
        gfx_text(g, in.x, y, s->governor, C_INFO, in.w);
        gfx_text(g, in.x, y + ch, s->governor_last[0] ? s->governor_last : "no change yet", C_DIM, in.w);
        y += 2 * ch;
    }
    // the grid: a header of kinds, a row per layer (more layers than rows: the first rows-2,
    // a "more" row, the last)
    int lx = in.x + g->cw * 6, cell_w = g->cw * 4;
    gfx_text(g, in.x, y, "layer", C_DIM, g->cw * 6);
    for (int k = 0; k < TK_LAYER_KINDS; k++) gfx_text(g, lx + k * cell_w + cell_w / 2 - g->cw / 2, y, kind_short[k], C_DIM, cell_w);
    char ends[64];
    snprintf(ends, sizeof ends, "embd %s   out %s", s->embd_type != PLAN_KEEP ? wtype_name(s->embd_type) : "-",
             s->output_type != PLAN_KEEP ? wtype_name(s->output_type) : "-");
    int ex = lx + TK_LAYER_KINDS * cell_w + g->cw;
    gfx_text(g, ex, y, ends, C_DIM, in.x + in.w - ex);
    y += ch;
    int rows = grid_rows(s);
    for (int i = 0; i < rows; i++, y += ch) {
        int l = (s->n_layer > rows && i == rows - 1) ? s->n_layer - 1 : i;
        if (s->n_layer > rows && i == rows - 2) { gfx_textf(g, in.x, y, in.w, C_DIM, " … %d more layers", s->n_layer - rows); continue; }
        gfx_textf(g, in.x, y, g->cw * 6, C_DIM, "%4d", l);
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            SDL_Rect c = { lx + k * cell_w + 1, y + 1, cell_w - 2, ch - 2 };
            gfx_fill(g, c, ui_type_rgb(s->types[l][k]));
            if (reg->n_cells < GUI_MAX_CELLS) {
                reg->cell[reg->n_cells].layer = l;
                reg->cell[reg->n_cells].kind = k;
                reg->cell[reg->n_cells++].r = c;
            }
            if (p->x >= c.x && p->x < c.x + c.w && p->y >= c.y && p->y < c.y + c.h)
                snprintf(p->hover, sizeof p->hover, "layer %d %s: %s", l, tensor_kind_name(k), wtype_name(s->types[l][k]));
        }
    }
    // the legend: the types present
    bool seen[256] = { false };
    for (int l = 0; l < s->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) seen[s->types[l][k]] = true;
    int x = in.x;
    for (int t = 0; t < 255; t++) {
        if (!seen[t] || x > in.x + in.w - 10 * g->cw) continue;
        gfx_fill(g, (SDL_Rect){ x, y + 3, g->cw * 2, ch - 6 }, ui_type_rgb((uint32_t)t));
        x += g->cw * 3;
        x += gfx_textf(g, x, y, in.x + in.w - x, C_TEXT, "%s   ", wtype_name((uint32_t)t));
    }
}

const gui_panel gui_panel_precision = { "precision", precision_height, precision_update, precision_draw };
