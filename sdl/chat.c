// The conversation pane and the input line of the window: the log of ui/chat.c wrapped to the
// pane's width (a character a cell), newest at the bottom, scrolled up by c->scroll rows.
#include "sdl/sdl.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

static ui_rgb color_of(int kind) {
    switch (kind) {
    case MSG_USER: return C_USER;
    case MSG_ASSIST: return C_ASSIST;
    case MSG_ACTION: return C_ACTION;
    case MSG_VEHICLE: return C_VEHICLE;
    case MSG_REFUSED: return C_REFUSED;
    case MSG_ERROR: return C_ERROR;
    default: return C_INFO;
    }
}

// A character a cell (chat_char_fn): the byte length of the UTF-8 character at t (1 for a
// broken byte).
static int cell_char(const char *t, int n, int *cells) {
    unsigned char c = (unsigned char)t[0];
    int k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
    *cells = 1;
    return k <= n ? k : 1;
}

void gui_chat_draw(gfx *g, SDL_Rect r, chat_log *c) {
    int h = r.h / g->ch, cols = r.w / g->cw;
    if (h <= 0 || cols <= 4) return;
    chat_row *rows;
    int n = chat_layout(c, h, cols, false, cell_char, &rows);
    char *buf = xmalloc(8192);
    for (int y = 0; y < n; y++) {
        const chat_row *rw = &rows[y];
        if (rw->msg < 0) continue;
        const chat_msg *m = &c->m[rw->msg];
        const char *t = chat_display_text(m, buf, 8192, false);
        const char *pre = chat_prefix(m->kind, false);
        int px = r.x + g->cw * gfx_text_cols(pre, (int)strlen(pre)), py = r.y + y * g->ch;
        if (rw->first) gfx_text(g, r.x, py, pre, color_of(m->kind), r.w);
        char *line = xstrndup(t + rw->off, (size_t)rw->len);
        gfx_text(g, px, py, line, m->kind == MSG_USER ? C_TEXT : color_of(m->kind), r.x + r.w - px);
        free(line);
    }
    if (c->scroll > 0) {
        char s[48];
        snprintf(s, sizeof s, " ↑ %d more (PgDn, wheel) ", c->scroll);
        int w = g->cw * gfx_text_cols(s, (int)strlen(s));
        SDL_Rect b = { r.x + r.w - w, r.y + r.h - g->ch, w, g->ch };
        gfx_fill(g, b, C_BORDER);
        gfx_text(g, b.x, b.y, s, C_TEXT, w);
    }
    free(buf);
    free(rows);
}

void gui_input_draw(gfx *g, SDL_Rect r, const line_edit *e) {
    gfx_fill(g, r, C_PANEL);
    gfx_line(g, r.x, r.y, r.x + r.w, r.y, C_BORDER);
    int y = r.y + (r.h - g->ch) / 2, x = r.x + g->cw / 2;
    if (e->searching) {
        char s[400];
        snprintf(s, sizeof s, "(reverse-i-search)`%s': %s", e->search, e->search_hit >= 0 ? e->hist[e->search_hit] : "");
        gfx_text(g, x, y, s, C_INFO, r.w - g->cw);
        return;
    }
    x += gfx_text(g, x, y, "› ", C_USER, r.w);
    int avail = (r.x + r.w - x) / g->cw - 1;
    if (avail < 1) return;
    int start = 0;   // scrolled so the cursor shows
    while (gfx_text_cols(e->buf + start, e->cur - start) > avail) start = le_next_char(e, start);
    if (e->len == 0) gfx_text(g, x + g->cw, y, "type a message, or :command (F1 help; hold Space to talk)", C_DIM, r.x + r.w - x - g->cw);
    gfx_text(g, x, y, e->buf + start, C_TEXT, r.x + r.w - x);
    int cx = x + g->cw * gfx_text_cols(e->buf + start, e->cur - start);
    gfx_fill(g, (SDL_Rect){ cx, y + 1, g->scale > 1.5f ? 3 : 2, g->ch - 2 }, C_USER);
}
