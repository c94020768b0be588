// The window's frame: the conversation on the left, the panels stacked on the right, a status
// bar and the input line at the bottom, the help overlay over them; and where each thing went
// (gui_regions: what the pixel test and the value under the mouse need).
//   panels' column: 42% of the width, at least 50 and at most 84 characters
//   status bar: one row; input line: one row and a margin
#include "sdl/window.h"

#include <stdio.h>
#include <string.h>

static void draw_status(gui *w, SDL_Rect r) {
    gfx *g = &w->g;
    const ui_snapshot *s = &w->s.snap;
    gfx_fill(g, r, C_BORDER);
    char left[512];
    ui_status_line(s, w->s.notice, false, left, sizeof left);
    int y = r.y + (r.h - g->ch) / 2;
    int o = gfx_text(g, r.x, y, left, C_TEXT, r.w);
    if (w->ptr.hover[0]) gfx_text(g, r.x + o + 2 * g->cw, y, w->ptr.hover, C_WARN, r.w - o - 2 * g->cw);
}

static const char *const help_keys[][2] = {
    { "Enter", "send the message, or run a :command" },
    { "F1 / Esc", "this help (PgUp PgDn scroll it; other keys close it)" },
    { "F2", "cycle weight precision f16 > q8_0 > q4_0 (live)" },
    { "F3", "cycle the KV cache format" },
    { "F4", "cycle the heat map: sensitivity, kv cache, attention" },
    { "Space (held)", "talk while held, on an empty input line; release sends" },
    { "F5", "talk / stop talking (as in the terminal)" },
    { "PgUp PgDn wheel", "scroll the conversation" },
    { "Up Down", "history" },
    { "Ctrl-R", "search the history" },
    { "Tab on :cmd", "complete the command name" },
    { "Ctrl-V", "paste" },
    { "Ctrl-C", "stop the reply being written (else clear the line)" },
    { "Ctrl-D / :quit", "leave (transcript autosaved)" },
};

static void draw_help(gui *w, int W, int H) {
    gfx *g = &w->g;
    int bw = 100 * g->cw < W - 4 * g->cw ? 100 * g->cw : W - 4 * g->cw;
    SDL_Rect r = { (W - bw) / 2, g->ch, bw, H - 2 * g->ch };
    static ui_help_line lines[UI_MAX_HELP_LINES];   // the window's thread only
    int cols = (bw - 2 * g->cw) / (g->cw > 0 ? g->cw : 8), key_w = cols > 60 ? 26 : 18;
    int n = ui_help_layout(help_keys, (int)(sizeof help_keys / sizeof help_keys[0]), cols, key_w, lines, UI_MAX_HELP_LINES);
    int page = (r.h - 2 * g->ch) / (g->ch > 0 ? g->ch : 16);
    if (page < 1) page = 1;
    int max_top = n > page ? n - page : 0;
    if (w->help_top > max_top) w->help_top = max_top;
    if (w->help_top < 0) w->help_top = 0;
    w->help_page = max_top > 0 ? page : 0;
    char title[128];
    if (max_top == 0) snprintf(title, sizeof title, "Help — keys and :commands (any key closes it)");
    else snprintf(title, sizeof title, "Help — keys and :commands (lines %d-%d of %d: PgUp PgDn)",
                  w->help_top + 1, w->help_top + page < n ? w->help_top + page : n, n);
    SDL_Rect in = gfx_box(g, r, title);
    int kw = key_w * g->cw;
    for (int i = 0, y = in.y; i < page && w->help_top + i < n && y + g->ch <= in.y + in.h; i++, y += g->ch) {
        const ui_help_line *l = &lines[w->help_top + i];
        if (l->tone == UI_TITLE) { gfx_text(g, in.x, y, l->text, C_TITLE, in.w); continue; }
        if (l->key[0]) gfx_text(g, in.x, y, l->key, C_USER, in.w);
        if (l->text[0]) gfx_text(g, in.x + kw, y, l->text, C_TEXT, in.w - kw);
    }
}

// The panels' heights in a column main_h high: each its wanted height when they all fit; else
// the ones that can shrink (their plots) shrink in proportion, down to their least; when even
// the least heights do not fit, the panels at the bottom are left out (docs/GUI.md). The last
// panel shown takes what is left. Returns how many are shown.
static int panel_heights(gfx *g, const ui_snapshot *s, const gui_panel *const *panels, int n, int w, int main_h, int *h) {
    int want[16], least[16], sum_want = 0, sum_least = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        want[i] = panels[i]->height(g, s, w);
        least[i] = panels[i]->min_height ? panels[i]->min_height(g, s, w) : want[i];
        if (least[i] > want[i]) least[i] = want[i];
        if (sum_least + least[i] > main_h) break;   // this one and those under it are left out
        sum_want += want[i];
        sum_least += least[i];
        shown++;
    }
    long extra = main_h - sum_least, room = sum_want - sum_least;
    int used = 0;
    for (int i = 0; i < shown; i++) {
        h[i] = sum_want <= main_h ? want[i] : least[i] + (int)(room > 0 ? (want[i] - least[i]) * extra / room : 0);
        used += h[i];
    }
    if (shown > 0) h[shown - 1] += main_h - used;
    return shown;
}

int gui_chat_cols(const gui *w) { return w->chat_w / (w->g.cw > 0 ? w->g.cw : 8); }

void gui_draw_frame(gui *w) {
    gfx *g = &w->g;
    int W, H;
    SDL_GetRendererOutputSize(g->r, &W, &H);
    memset(&w->reg, 0, sizeof w->reg);
    w->ptr.hover[0] = 0;
    gfx_fill(g, (SDL_Rect){ 0, 0, W, H }, C_BG);
    int input_h = g->ch + 12, status_h = g->ch + 6, main_h = H - input_h - status_h;
    int pw = W * 42 / 100;
    if (pw < 50 * g->cw) pw = 50 * g->cw;
    if (pw > 84 * g->cw) pw = 84 * g->cw;
    if (pw > W / 2) pw = W / 2;
    w->chat_w = W - pw;
    // the panels, stacked; the last one that fits takes the rest of the column
    int n;
    const gui_panel *const *panels = gui_panels(&n);
    for (int i = 0; i < n; i++) panels[i]->update(&w->s.snap);
    int y = 0, gap = 4, h[16];
    n = n < 16 ? n : 16;
    n = panel_heights(g, &w->s.snap, panels, n, pw - gap, main_h, h);
    for (int i = 0; i < n; i++) {
        SDL_Rect r = { w->chat_w + gap / 2, y, pw - gap, h[i] - gap };
        panels[i]->draw(g, r, &w->s.snap, &w->ptr, &w->reg);
        if (w->reg.n_panels < 8) { w->reg.panel[w->reg.n_panels].name = panels[i]->name; w->reg.panel[w->reg.n_panels++].r = r; }
        y += h[i];
    }
    char title[160];
    snprintf(title, sizeof title, "Conversation — %s", w->s.snap.model_name[0] ? w->s.snap.model_name : "cabin");
    SDL_Rect chat = gfx_box(g, (SDL_Rect){ 2, 0, w->chat_w - 4, main_h - gap }, title);
    w->reg.chat = chat;
    gui_chat_draw(g, chat, &w->s.chat);
    draw_status(w, (SDL_Rect){ 0, main_h, W, status_h });
    w->reg.input = (SDL_Rect){ 0, main_h + status_h, W, input_h };
    gui_input_draw(g, w->reg.input, &w->le);
    if (w->help) draw_help(w, W, H);
}

void gui_regions_text(const gui *w, strbuf *out) {
    const gui_regions *r = &w->reg;
    strbuf_printf(out, "scale %.3f\n", (double)w->g.scale);
    strbuf_printf(out, "chat %d %d %d %d\n", r->chat.x, r->chat.y, r->chat.w, r->chat.h);
    strbuf_printf(out, "input %d %d %d %d\n", r->input.x, r->input.y, r->input.w, r->input.h);
    strbuf_printf(out, "heat %d %d %d %d\n", r->heat.x, r->heat.y, r->heat.w, r->heat.h);
    for (int i = 0; i < r->n_panels; i++)
        strbuf_printf(out, "panel-%s %d %d %d %d\n", r->panel[i].name, r->panel[i].r.x, r->panel[i].r.y, r->panel[i].r.w,
                      r->panel[i].r.h);
    for (int i = 0; i < r->n_cells; i++)
        strbuf_printf(out, "cell %d %d %d %d %d %d\n", r->cell[i].layer, r->cell[i].kind, r->cell[i].r.x, r->cell[i].r.y,
                      r->cell[i].r.w, r->cell[i].r.h);
}
