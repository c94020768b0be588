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

typedef struct row { int msg; int off, len; bool first; } row;

// Byte length of the UTF-8 character at t (1 for a broken byte).
static int char_len(const char *t, int n) {
    unsigned char c = (unsigned char)t[0];
    int k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
    return k <= n ? k : 1;
}

// Rows of at most cols characters (the first after the prefix), cut at spaces.
static int wrap_msg(const char *t, int idx, int pre, int cols, row *rows, int max) {
    int n = 0, off = 0, len = (int)strlen(t);
    bool first = true;
    if (len == 0 && max > 0) { rows[n++] = (row){ idx, 0, 0, true }; return n; }
    while (off < len && n < max) {
        int avail = cols - pre > 4 ? cols - pre : 4;
        int w = 0, i = off, last_space = -1;
        while (i < len && t[i] != '\n' && w < avail) {
            if (t[i] == ' ') last_space = i;
            i += char_len(t + i, len - i);
            w++;
        }
        int end = i;
        if (i < len && t[i] != '\n' && last_space > off) end = last_space;
        rows[n++] = (row){ idx, off, end - off, first };
        first = false;
        off = end;
        if (off < len && (t[off] == '\n' || t[off] == ' ')) off++;
    }
    return n;
}

void gui_chat_draw(gfx *g, SDL_Rect r, chat_log *c) {
    int h = r.h / g->ch, cols = r.w / g->cw;
    if (h <= 0 || cols <= 4) return;
    int want = h + c->scroll + 1, cap = want + 64, n = 0;
    row *rows = xmalloc((size_t)cap * sizeof *rows);
    row *tmp = xmalloc((size_t)cap * sizeof *tmp);
    char *buf = xmalloc(8192);
    for (int i = c->n - 1; i >= 0 && n < want; i--) {
        const char *t = chat_display_text(&c->m[i], buf, 8192, false);
        const char *pre = chat_prefix(c->m[i].kind, false);
        int k = wrap_msg(t, i, gfx_text_cols(pre, (int)strlen(pre)), cols, tmp, cap - n);
        memmove(rows + k, rows, (size_t)n * sizeof *rows);   // rows so far are newer
        memcpy(rows, tmp, (size_t)k * sizeof *rows);
        n += k;
        if (i > 0 && c->m[i].kind == MSG_USER && n < cap) {   // a blank row before each turn
            memmove(rows + 1, rows, (size_t)n * sizeof *rows);
            rows[0] = (row){ -1, 0, 0, false };
            n++;
        }
    }
    int max_scroll = n > h ? n - h : 0;
    if (c->scroll > max_scroll) c->scroll = max_scroll;
    if (c->scroll < 0) c->scroll = 0;
    int start = n - h - c->scroll;
    if (start < 0) start = 0;
    for (int y = 0; y < h && start + y < n; y++) {
        row *rw = &rows[start + y];
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
    free(tmp);
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
