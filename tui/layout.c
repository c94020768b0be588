// The workbench's screen: where the conversation, the panels, the status bar and the input line
// go for the terminal's size, the help overlay, and the screen as text (`:snapshot FILE`).
//   wide (>= 100 columns and >= 28 rows):   conversation | panels (stacked, table order)
//   otherwise:                              conversation only
//   always:                                 status bar (row LINES-2), input line (LINES-1)
#include "tui/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <wchar.h>

bool layout_wide(void) { return COLS >= 100 && LINES >= 28; }

int layout_chat_cols(void) {
    if (!layout_wide()) return COLS;
    int pw = COLS * 45 / 100;   // the panels' column
    if (pw < 44) pw = 44;
    if (pw > 76) pw = 76;
    return COLS - pw;
}

int layout_draw(layout_state *ls, chat_log *chat, line_edit *le, const ui_snapshot *s) {
    werase(stdscr);
    int main_h = LINES - 2;
    int n_panels;
    const tui_panel *const *panels = tui_panels(&n_panels);
    int chat_w = COLS;
    int n_drawn = 0;
    if (layout_wide() && main_h > 4) {
        chat_w = layout_chat_cols();
        int pw = COLS - chat_w;
        int y = 0;
        for (int i = 0; i < n_panels && y < main_h; i++) {
            int h = panels[i]->height(s, pw);
            if (h > main_h - y) h = main_h - y;
            if (h < 3) break;
            tui_rect r = { y, chat_w, h, pw };
            panels[i]->draw(stdscr, r, s, ls->focus == FOCUS_PANELS + i);
            y += h;
            n_drawn++;
        }
    }
    if (main_h >= 3) {
        tui_rect cr = { 0, 0, main_h, chat_w };
        char title[160];
        snprintf(title, sizeof title, "Conversation — %s", s->model_name[0] ? s->model_name : "cabin");
        if (tui_ascii) snprintf(title, sizeof title, "Conversation - %s", s->model_name[0] ? s->model_name : "cabin");
        tui_rect in = tui_box(stdscr, cr, title, ls->focus == FOCUS_CHAT);
        in.x -= 1;
        in.w += 1;
        chat_draw(stdscr, in, chat);
    }
    layout_status(ls, s);
    if (ls->help) layout_help(ls);
    le_draw(stdscr, LINES - 1, 0, COLS, le, ls->focus == FOCUS_INPUT);
    curs_set(ls->focus == FOCUS_INPUT && !ls->help ? 1 : 0);
    wnoutrefresh(stdscr);
    doupdate();
    return n_drawn;
}

void layout_status(const layout_state *ls, const ui_snapshot *s) {
    int y = LINES - 2;
    int a = tui_attr(TC_STATUS);
    wattron(stdscr, a);
    mvwhline(stdscr, y, 0, ' ', COLS);
    wattroff(stdscr, a);
    char buf[512];
    ui_status_line(s, ls->notice, tui_ascii, buf, sizeof buf);
    tui_puts(stdscr, y, 0, buf, COLS, a);
}

static const char *const help_keys[][2] = {
    { "Enter", "send the message, or run a :command" },
    { "F1", "this help (PgUp PgDn scroll it; other keys close it)" },
    { "F2", "cycle weight precision f16 > q8_0 > q4_0 (live)" },
    { "F3", "cycle the KV cache format" },
    { "F4", "cycle the heat map: sensitivity, kv cache, attention" },
    { "F5", "push-to-talk: talk, F5 again when done" },
    { "Tab", "focus: input > conversation > panels" },
    { "PgUp PgDn wheel", "scroll the conversation" },
    { "Up Down", "history (input) / scroll (conversation)" },
    { "Ctrl-R", "search the history" },
    { "Tab on :cmd", "complete the command name" },
    { "Ctrl-C", "stop the reply being written" },
    { "Ctrl-D / :quit", "leave (transcript autosaved)" },
    { "Ctrl-L", "redraw the screen" },
};

void layout_help(layout_state *ls) {
    int h = LINES - 2, w = COLS - 4;
    if (w > 110) w = 110;
    ls->help_page = 0;
    if (h < 5 || w < 30) return;
    int cols = w >= 100 ? 2 : 1;                          // keys and commands side by side when wide
    int cw = cols == 2 ? (w - 3) / 2 : w - 2;             // a column's width inside the box (a gap between two)
    int key_w = cw > 60 ? 24 : 18;
    static ui_help_line lines[UI_MAX_HELP_LINES];         // the screen's thread only
    int n = ui_help_layout(help_keys, (int)(sizeof help_keys / sizeof help_keys[0]), cw - 1, key_w, lines,
                           UI_MAX_HELP_LINES);
    int rows_needed = (n + cols - 1) / cols;
    if (h > rows_needed + 2) h = rows_needed + 2;
    int rows = h - 2, page = rows * cols;
    int max_top = n > page ? n - page : 0;
    if (ls->help_top > max_top) ls->help_top = max_top;
    if (ls->help_top < 0) ls->help_top = 0;
    int y0 = 1, x0 = (COLS - w) / 2;
    for (int y = 0; y < h; y++) mvwhline(stdscr, y0 + y - 1, x0, ' ', w);
    char title[96];
    if (max_top == 0) snprintf(title, sizeof title, "Help — keys and :commands");
    else snprintf(title, sizeof title, "Help — keys and :commands (lines %d-%d of %d: PgUp PgDn)", ls->help_top + 1,
                  ls->help_top + page < n ? ls->help_top + page : n, n);
    tui_rect in = tui_box(stdscr, (tui_rect){ y0 - 1, x0, h, w }, title, true);
    for (int i = 0; i < page && ls->help_top + i < n; i++) {
        const ui_help_line *l = &lines[ls->help_top + i];
        int x = in.x + (i / rows) * (cw + 1), y = in.y + i % rows;
        if (l->tone == UI_TITLE) { tui_puts(stdscr, y, x, l->text, cw - 1, tui_attr(TC_TITLE)); continue; }
        if (l->key[0]) tui_puts(stdscr, y, x, l->key, cw - 1, tui_attr(TC_USER));
        if (l->text[0]) tui_puts(stdscr, y, x + key_w, l->text, cw - key_w, 0);
    }
    ls->help_page = max_top > 0 ? page : 0;
}

int layout_snapshot(const char *path, errbuf *err) {
    FILE *f = fopen(path, "w");
    if (!f) return err_set(err, "snapshot: %s: %s", path, strerror(errno));
    for (int y = 0; y < LINES; y++) {
        char line[4096];
        int o = 0;
        for (int x = 0; x < COLS && o < (int)sizeof line - 8; x++) {
            cchar_t cc;
            wchar_t wch[CCHARW_MAX + 1];
            attr_t at;
            short pair;
            if (mvwin_wch(stdscr, y, x, &cc) == ERR || getcchar(&cc, wch, &at, &pair, NULL) == ERR) { line[o++] = ' '; continue; }
            char mb[MB_LEN_MAX];
            mbstate_t ms;
            memset(&ms, 0, sizeof ms);
            size_t k = wch[0] ? wcrtomb(mb, wch[0], &ms) : (size_t)-1;
            if (k == (size_t)-1) { line[o++] = ' '; continue; }
            memcpy(line + o, mb, k);
            o += (int)k;
        }
        while (o > 0 && line[o - 1] == ' ') o--;
        line[o] = 0;
        fprintf(f, "%s\n", line);
    }
    if (fclose(f) != 0) return err_set(err, "snapshot: %s: write failed", path);
    return 0;
}
