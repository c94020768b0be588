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

void chat_draw(WINDOW *w, tui_rect r, chat_log *c) {
    if (r.h <= 0 || r.w <= 4) return;
    chat_row *rows;
    int n = chat_layout(c, r.h, r.w, tui_ascii, tui_next_char, &rows);
    char *buf = xmalloc(8192);
    for (int y = 0; y < n; y++) {
        const chat_row *rw = &rows[y];
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
}
