// Drawing helpers shared by the workbench and its panels: colours (256 / 8 / none), boxes,
// UTF-8-safe text, sparklines and bars.
#include "tui/tui.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

bool tui_ascii;
static int color_mode;   // 0 none, 8, 256

// (fg for 256 colours, fg for 8 colours, mono attribute) per tui_color
typedef struct cdef { short fg256, bg256, fg8, bg8; int mono; } cdef;
static const cdef cdefs[] = {
    [TC_NONE]    = { -1, -1, -1, -1, 0 },
    [TC_TITLE]   = { 117, -1, COLOR_CYAN, -1, A_BOLD },
    [TC_DIM]     = { 244, -1, COLOR_WHITE, -1, A_DIM },
    [TC_USER]    = { 229, -1, COLOR_YELLOW, -1, A_BOLD },
    [TC_ASSIST]  = { 252, -1, COLOR_WHITE, -1, 0 },
    [TC_ACTION]  = { 81, -1, COLOR_CYAN, -1, A_UNDERLINE },
    [TC_VEHICLE] = { 114, -1, COLOR_GREEN, -1, A_BOLD },
    [TC_REFUSED] = { 215, -1, COLOR_YELLOW, -1, A_UNDERLINE },
    [TC_ERROR]   = { 203, -1, COLOR_RED, -1, A_BOLD },
    [TC_INFO]    = { 146, -1, COLOR_BLUE, -1, A_DIM },
    [TC_STATUS]  = { 255, 237, COLOR_BLACK, COLOR_WHITE, A_REVERSE },
    [TC_SEL]     = { 232, 117, COLOR_BLACK, COLOR_CYAN, A_REVERSE },
    [TC_GOOD]    = { 114, -1, COLOR_GREEN, -1, A_BOLD },
    [TC_WARN]    = { 215, -1, COLOR_YELLOW, -1, A_BOLD },
    [TC_T_F32]   = { 255, 60, COLOR_WHITE, COLOR_BLUE, A_BOLD },
    [TC_T_F16]   = { 232, 75, COLOR_BLACK, COLOR_CYAN, A_REVERSE },
    [TC_T_BF16]  = { 232, 141, COLOR_BLACK, COLOR_MAGENTA, A_REVERSE },
    [TC_T_Q8]    = { 232, 114, COLOR_BLACK, COLOR_GREEN, 0 },
    [TC_T_Q4]    = { 232, 221, COLOR_BLACK, COLOR_YELLOW, A_DIM },
    [TC_T_OTHER] = { 232, 250, COLOR_BLACK, COLOR_WHITE, A_DIM },
    // heat: blue -> green -> yellow -> red
    [TC_HEAT0 + 0] = { 255, 24, COLOR_WHITE, COLOR_BLUE, A_DIM },
    [TC_HEAT0 + 1] = { 232, 30, COLOR_BLACK, COLOR_CYAN, A_DIM },
    [TC_HEAT0 + 2] = { 232, 71, COLOR_BLACK, COLOR_GREEN, 0 },
    [TC_HEAT0 + 3] = { 232, 184, COLOR_BLACK, COLOR_YELLOW, 0 },
    [TC_HEAT0 + 4] = { 232, 208, COLOR_BLACK, COLOR_MAGENTA, A_BOLD },
    [TC_HEAT0 + 5] = { 255, 160, COLOR_WHITE, COLOR_RED, A_REVERSE },
};
#define N_CDEFS (int)(sizeof cdefs / sizeof cdefs[0])

void tui_colors_init(void) {
    const char *nc = getenv("NO_COLOR");
    color_mode = 0;
    if ((nc && *nc) || !has_colors()) return;
    start_color();
    use_default_colors();
    color_mode = COLORS >= 256 ? 256 : 8;
    for (int i = 1; i < N_CDEFS && i < COLOR_PAIRS; i++) {
        const cdef *d = &cdefs[i];
        if (color_mode == 256) init_pair((short)i, d->fg256, d->bg256);
        else init_pair((short)i, d->fg8, d->bg8);
    }
}

int tui_attr(int c) {
    if (c <= 0 || c >= N_CDEFS) return 0;
    if (color_mode == 0) return cdefs[c].mono;
    int extra = (c == TC_TITLE || c == TC_USER || c == TC_VEHICLE || c == TC_ERROR) ? A_BOLD : 0;
    return COLOR_PAIR(c) | extra;
}

int tui_type_color(uint32_t t) {
    static const int pair[UI_TYPE_CLASSES] = { TC_T_F32, TC_T_F16, TC_T_BF16, TC_T_Q8, TC_T_Q4, TC_T_OTHER };
    return pair[ui_type_class(t)];
}

int tui_tone_attr(int tone) {
    switch (tone) {
    case UI_DIM: return tui_attr(TC_DIM);
    case UI_WARN: return tui_attr(TC_WARN);
    case UI_GOOD: return tui_attr(TC_GOOD);
    case UI_INFO: return tui_attr(TC_INFO);
    case UI_TITLE: return tui_attr(TC_TITLE);
    case UI_USER: return tui_attr(TC_USER);
    default: return 0;
    }
}

int tui_line(WINDOW *w, int y, int x, int cols, const ui_line *l) { return tui_puts(w, y, x, l->text, cols, tui_tone_attr(l->tone)); }

int tui_next_char(const char *s, int bytes, int *cols) {
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80) { *cols = (c < 0x20 || c == 0x7f) ? -1 : 1; return 1; }
    if (tui_ascii) { *cols = -1; return 1; }
    mbstate_t ms;
    memset(&ms, 0, sizeof ms);
    wchar_t wc;
    size_t k = mbrtowc(&wc, s, (size_t)bytes, &ms);
    if (k == (size_t)-1 || k == (size_t)-2 || k == 0) { *cols = -1; return 1; }
    int wdt = wcwidth(wc);
    *cols = wdt < 0 ? -1 : wdt;
    return (int)k;
}

int tui_width(const char *s, int bytes) {
    return chat_text_cells(s, bytes, tui_next_char);
}

int tui_puts(WINDOW *w, int y, int x, const char *s, int cols, int attr) {
    if (cols <= 0 || !s) return 0;
    int used = 0, bytes = (int)strlen(s);
    wmove(w, y, x);
    wattron(w, attr);
    for (int i = 0; i < bytes;) {
        int c;
        int k = tui_next_char(s + i, bytes - i, &c);
        if (c < 0) {                    // control byte or broken UTF-8
            if (used + 1 > cols) break;
            waddch(w, s[i] == '\t' ? ' ' : '?');
            used++;
        } else {
            if (used + c > cols) break;
            if (c > 0) waddnstr(w, s + i, k);
            used += c;
        }
        i += k;
    }
    wattroff(w, attr);
    return used;
}

int tui_printf(WINDOW *w, int y, int x, int cols, int attr, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tui_puts(w, y, x, buf, cols, attr);
}

tui_rect tui_box(WINDOW *w, tui_rect r, const char *title, bool focused) {
    int a = focused ? tui_attr(TC_TITLE) : tui_attr(TC_DIM);
    wattron(w, a);
    // box characters as text (not the alternate character set), so a screen dump reads right
    const char *h = tui_ascii ? "-" : "─", *v = tui_ascii ? "|" : "│";
    const char *c[4] = { "┌", "┐", "└", "┘" };
    if (tui_ascii) c[0] = c[1] = c[2] = c[3] = "+";
    for (int x = 1; x < r.w - 1; x++) {
        mvwaddstr(w, r.y, r.x + x, h);
        mvwaddstr(w, r.y + r.h - 1, r.x + x, h);
    }
    for (int y = 1; y < r.h - 1; y++) {
        mvwaddstr(w, r.y + y, r.x, v);
        mvwaddstr(w, r.y + y, r.x + r.w - 1, v);
    }
    mvwaddstr(w, r.y, r.x, c[0]); mvwaddstr(w, r.y, r.x + r.w - 1, c[1]);
    mvwaddstr(w, r.y + r.h - 1, r.x, c[2]); mvwaddstr(w, r.y + r.h - 1, r.x + r.w - 1, c[3]);
    wattroff(w, a);
    char t[64];
    snprintf(t, sizeof t, " %s ", title);
    tui_puts(w, r.y, r.x + 2, t, r.w - 4, tui_attr(TC_TITLE) | (focused ? A_REVERSE : 0));
    tui_rect in = { r.y + 1, r.x + 2, r.h - 2, r.w - 4 };
    return in;
}

void tui_sparkline(WINDOW *w, int y, int x, int cols, const float *v, int n, int attr) {
    static const char *const bars[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
    static const char ascii_bars[] = "_.-=+*#@";
    if (cols <= 0) return;
    int first = n > cols ? n - cols : 0;
    float mx = 0;
    for (int i = first; i < n; i++) if (v[i] > mx) mx = v[i];
    wmove(w, y, x);
    wattron(w, attr);
    for (int i = first; i < n; i++) {
        int k = mx > 0 ? (int)(v[i] / mx * 7.0f + 0.5f) : 0;
        if (k < 0) k = 0;
        if (k > 7) k = 7;
        if (tui_ascii) waddch(w, (chtype)ascii_bars[k]);
        else waddstr(w, bars[k]);
    }
    wattroff(w, attr);
}

void tui_bar(WINDOW *w, int y, int x, int cols, double frac, int attr) {
    if (cols <= 0) return;
    if (!(frac >= 0)) frac = 0;
    if (frac > 1) frac = 1;
    int full = (int)(frac * cols + 0.5);
    wmove(w, y, x);
    wattron(w, attr);
    for (int i = 0; i < full; i++) {
        if (tui_ascii) waddch(w, '#');
        else waddstr(w, "█");
    }
    wattroff(w, attr);
    wattron(w, tui_attr(TC_DIM));
    for (int i = full; i < cols; i++) {
        if (tui_ascii) waddch(w, '.');
        else waddstr(w, "·");
    }
    wattroff(w, tui_attr(TC_DIM));
}
