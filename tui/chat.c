// The conversation pane: the log of ui/chat.c drawn word-wrapped from the bottom, with
// scrollback.
#include "tui/tui.h"

#include <stdlib.h>
#include <string.h>

static const char *prefix_of(int kind) { return chat_prefix(kind, tui_ascii); }

static int color_of(int kind) {
    static const int c[] = { [MSG_USER] = TC_USER, [MSG_ASSIST] = TC_ASSIST, [MSG_ACTION] = TC_ACTION,
                             [MSG_VEHICLE] = TC_VEHICLE, [MSG_REFUSED] = TC_REFUSED, [MSG_INFO] = TC_INFO,
                             [MSG_ERROR] = TC_ERROR };
    return c[kind];
}

static const char *display_text(const chat_msg *m, char *tmp, size_t n) { return chat_display_text(m, tmp, n, tui_ascii); }

typedef struct row { int msg; int off, len; bool first; } row;

// Wraps message text into rows of at most `cols` columns (the first row after the prefix).
static int wrap_msg(const char *t, int idx, int pre_w, int cols, row *rows, int max) {
    int n = 0, off = 0, len = (int)strlen(t);
    bool first = true;
    if (len == 0 && max > 0) { rows[n++] = (row){ idx, 0, 0, true }; return n; }
    while (off < len && n < max) {
        int avail = cols - pre_w;
        if (avail < 4) avail = 4;
        int w = 0, i = off, last_space = -1;
        while (i < len && t[i] != '\n') {
            int cw;
            int k = tui_next_char(t + i, len - i, &cw);
            if (cw < 0) cw = 1;
            if (w + cw > avail) break;
            if (t[i] == ' ') last_space = i;
            w += cw;
            i += k;
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

void chat_draw(WINDOW *w, tui_rect r, chat_log *c) {
    if (r.h <= 0 || r.w <= 4) return;
    // wrap only the messages that can show: from the newest back, enough rows for scroll + h
    int want = r.h + c->scroll + 1;
    int cap = want + 64;
    row *rows = xmalloc((size_t)cap * sizeof *rows);
    row *tmp = xmalloc((size_t)cap * sizeof *tmp);
    int n = 0;
    char *buf = xmalloc(8192);
    for (int i = c->n - 1; i >= 0 && n < want; i--) {
        const char *t = display_text(&c->m[i], buf, 8192);
        int pre_w = tui_width(prefix_of(c->m[i].kind), (int)strlen(prefix_of(c->m[i].kind)));
        int k = wrap_msg(t, i, pre_w, r.w, tmp, cap - n);
        // prepend: rows so far are newer
        memmove(rows + k, rows, (size_t)n * sizeof *rows);
        memcpy(rows, tmp, (size_t)k * sizeof *rows);
        n += k;
        if (i > 0 && c->m[i].kind == MSG_USER && n < cap) {   // a blank row before each turn
            memmove(rows + 1, rows, (size_t)n * sizeof *rows);
            rows[0] = (row){ -1, 0, 0, false };
            n++;
        }
    }
    int max_scroll = n > r.h ? n - r.h : 0;
    if (c->scroll > max_scroll) c->scroll = max_scroll;
    if (c->scroll < 0) c->scroll = 0;
    int start = n - r.h - c->scroll;
    if (start < 0) start = 0;
    for (int y = 0; y < r.h && start + y < n; y++) {
        row *rw = &rows[start + y];
        if (rw->msg < 0) continue;
        const chat_msg *m = &c->m[rw->msg];
        const char *t = display_text(m, buf, 8192);
        const char *pre = prefix_of(m->kind);
        int pw = tui_width(pre, (int)strlen(pre));
        int x = r.x;
        if (rw->first) tui_puts(w, r.y + y, x, pre, r.w, tui_attr(color_of(m->kind)) | A_BOLD);
        x += pw;
        char *line = xstrndup(t + rw->off, (size_t)rw->len);
        int attr = tui_attr(m->kind == MSG_USER ? TC_NONE : color_of(m->kind));
        tui_puts(w, r.y + y, x, line, r.w - pw, attr);
        free(line);
    }
    if (c->scroll > 0) {
        char s[48];
        snprintf(s, sizeof s, " ↑ %d more (PgDn) ", c->scroll);
        if (tui_ascii) snprintf(s, sizeof s, " ^ %d more (PgDn) ", c->scroll);
        tui_puts(w, r.y + r.h - 1, r.x + r.w - tui_width(s, (int)strlen(s)), s, r.w, tui_attr(TC_SEL));
    }
    free(buf);
    free(rows);
    free(tmp);
}
