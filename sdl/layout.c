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
    { "F1 / Esc", "this help (any key closes it)" },
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
    ui_help_row cmds[UI_MAX_HELP_ROWS];
    int n_cmd = ui_help_commands(cmds, UI_MAX_HELP_ROWS);
    int bw = 100 * g->cw < W - 4 * g->cw ? 100 * g->cw : W - 4 * g->cw;
    SDL_Rect r = { (W - bw) / 2, g->ch, bw, H - 2 * g->ch };
    SDL_Rect in = gfx_box(g, r, "Help — keys and :commands (any key closes it)");
    int y = in.y, kw = 26 * g->cw;
    for (size_t i = 0; i < sizeof help_keys / sizeof help_keys[0] && y + g->ch <= in.y + in.h; i++, y += g->ch) {
        gfx_text(g, in.x, y, help_keys[i][0], C_USER, kw - g->cw);
        gfx_text(g, in.x + kw, y, help_keys[i][1], C_TEXT, in.w - kw);
    }
    y += g->ch / 2;
    gfx_text(g, in.x, y, ui_help_commands_title, C_TITLE, in.w);
    y += g->ch;
    kw = 40 * g->cw;
    for (int i = 0; i < n_cmd && y + g->ch <= in.y + in.h; i++, y += g->ch) {
        gfx_text(g, in.x, y, cmds[i].usage, C_USER, kw - g->cw);
        gfx_text(g, in.x + kw, y, cmds[i].help, C_TEXT, in.w - kw);
    }
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
    int y = 0, gap = 4;
    for (int i = 0; i < n && y < main_h; i++) {
        int h = panels[i]->height(g, &w->s.snap, pw - gap);
        if (h > main_h - y) h = main_h - y;
        if (h < 3 * g->ch) break;
        panels[i]->draw(g, (SDL_Rect){ w->chat_w + gap / 2, y, pw - gap, h - gap }, &w->s.snap, &w->ptr, &w->reg);
        y += h;
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
    for (int i = 0; i < r->n_cells; i++)
        strbuf_printf(out, "cell %d %d %d %d %d %d\n", r->cell[i].layer, r->cell[i].kind, r->cell[i].r.x, r->cell[i].r.y,
                      r->cell[i].r.w, r->cell[i].r.h);
}
