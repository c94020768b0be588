// The input line drawn into ncurses; the editor itself is ui/lineedit.c.
#include "tui/tui.h"

#include <string.h>

// The ncurses keys the editor knows, as enum le_key (0: one it does not).
int tui_le_key(int key) {
    switch (key) {
    case KEY_ENTER: return LE_ENTER;
    case KEY_LEFT: return LE_LEFT;
    case KEY_RIGHT: return LE_RIGHT;
    case KEY_HOME: return LE_HOME;
    case KEY_END: return LE_END;
    case KEY_BACKSPACE: return LE_BACKSPACE;
    case KEY_DC: return LE_DELETE;
    case KEY_UP: return LE_UP;
    case KEY_DOWN: return LE_DOWN;
    default: return 0;
    }
}

void le_draw(WINDOW *w, int y, int x, int cols, line_edit *e, bool focused) {
    wmove(w, y, x);
    wclrtoeol(w);
    if (e->searching) {
        char s[400];
        snprintf(s, sizeof s, "(reverse-i-search)`%s': %s", e->search, e->search_hit >= 0 ? e->hist[e->search_hit] : "");
        tui_puts(w, y, x, s, cols, tui_attr(TC_INFO));
        int cx = x + tui_width(s, (int)strlen(s));
        wmove(w, y, cx < x + cols ? cx : x + cols - 1);
        return;
    }
    const char *prompt = tui_ascii ? "> " : "› ";
    int pw = tui_puts(w, y, x, prompt, cols, tui_attr(focused ? TC_USER : TC_DIM));
    int avail = cols - pw - 1;
    if (avail < 1) return;
    // scroll horizontally so the cursor shows
    int start = 0;
    while (tui_width(e->buf + start, e->cur - start) > avail) start = le_next_char(e, start);
    tui_puts(w, y, x + pw, e->buf + start, avail, 0);
    if (e->len == 0 && !focused) tui_puts(w, y, x + pw, "(Tab: back to the input line)", avail, tui_attr(TC_DIM));
    else if (e->len == 0) tui_puts(w, y, x + pw, "type a message, or :command (F1 help)", avail, tui_attr(TC_DIM));
    wmove(w, y, x + pw + tui_width(e->buf + start, e->cur - start));
}
