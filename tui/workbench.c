// The terminal face of the workbench: ncurses set up, keys read and turned into ui_session calls
// (ui/session.h: the session, its worker, scene and commands), and the screen redrawn at most
// FPS times a second when the session says a frame is due. The only thread that calls ncurses.
#include "tui/layout.h"
#include "ui/session.h"

#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FPS 15
#define CTRL(c) ((c) & 0x1f)

typedef struct wb {
    ui_session s;
    line_edit le;
    layout_state ls;
} wb;

static void on_key(wb *b, int is_key, wint_t ch) {
    ui_session *s = &b->s;
    s->dirty = true;
    if (b->ls.help) {   // PgUp/PgDn (and Up/Down) scroll a help longer than the screen; any other key closes it
        int pg = b->ls.help_page;
        if (is_key && pg && (ch == KEY_NPAGE || ch == KEY_DOWN)) { b->ls.help_top += ch == KEY_NPAGE ? pg : 1; return; }
        if (is_key && pg && (ch == KEY_PPAGE || ch == KEY_UP)) { b->ls.help_top -= ch == KEY_PPAGE ? pg : 1; return; }
        b->ls.help = false;
        if (!(is_key && ch == KEY_RESIZE)) return;
    }
    int page = LINES - 4 > 1 ? LINES - 4 : 1;
    if (is_key) {
        switch (ch) {
        case KEY_RESIZE: clearok(curscr, TRUE); return;
        case KEY_F(1): b->ls.help = true; b->ls.help_top = 0; return;
        case KEY_F(2): ui_session_cycle_precision(s); return;
        case KEY_F(3): ui_session_cycle_kv(s); return;
        case KEY_F(4): ui_session_cycle_heat(s); return;
        case KEY_F(5): ui_session_talk(s); return;   // a terminal has no key-up: F5 toggles
        case KEY_PPAGE: s->chat.scroll += page; return;
        case KEY_NPAGE: s->chat.scroll -= page; if (s->chat.scroll < 0) s->chat.scroll = 0; return;
        case KEY_BTAB: b->ls.focus = b->ls.focus > 0 ? b->ls.focus - 1 : FOCUS_CHAT; return;
        case KEY_MOUSE: {
            MEVENT me;
            if (getmouse(&me) == OK) {
                if (me.bstate & BUTTON4_PRESSED) s->chat.scroll += 3;
#ifdef BUTTON5_PRESSED
                else if (me.bstate & BUTTON5_PRESSED) { s->chat.scroll -= 3; if (s->chat.scroll < 0) s->chat.scroll = 0; }
#endif
            }
            return;
        }
        default: break;
        }
        if (b->ls.focus == FOCUS_CHAT && (ch == KEY_UP || ch == KEY_DOWN)) {
            s->chat.scroll += ch == KEY_UP ? 1 : -1;
            if (s->chat.scroll < 0) s->chat.scroll = 0;
            return;
        }
    } else {
        if (ch == CTRL('c')) {
            if (!ui_session_stop(s)) le_clear(&b->le);
            return;
        }
        if (ch == CTRL('d') && b->le.len == 0) { s->quit = true; return; }
        if (ch == CTRL('l')) { clearok(curscr, TRUE); return; }
        if (ch == '\t' && !(b->le.buf[0] == ':' && b->ls.focus == FOCUS_INPUT)) {
            int n_panels;
            tui_panels(&n_panels);
            int n_focus = FOCUS_PANELS + (layout_wide() ? n_panels : 0);
            b->ls.focus = (b->ls.focus + 1) % n_focus;
            return;
        }
        if (ch >= 32 && ch != 127) b->ls.focus = FOCUS_INPUT;
    }
    if (b->ls.focus != FOCUS_INPUT && !(is_key && (ch == KEY_ENTER))) {
        if (!is_key && (ch == '\n' || ch == '\r')) b->ls.focus = FOCUS_INPUT;
        return;
    }
    if (le_key(&b->le, is_key, is_key ? (wint_t)tui_le_key((int)ch) : ch)) ui_session_enter(&b->s, &b->le);
}

// The session's lending: the screen as text, the conversation's width.
static int tui_snapshot(void *ud, const char *path, errbuf *err) {
    (void)ud;
    return layout_snapshot(path, err);
}
static int tui_chat_cols(void *ud) { (void)ud; return layout_chat_cols(); }
static void tui_type(void *ud, const char *text) { le_insert_text(&((wb *)ud)->le, text); }

int tui_workbench_run(const ui_opts *o) {
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    tui_ascii = !(cs && (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "utf8") == 0));
    wb *b = xcalloc(1, sizeof *b);
    ui_session *s = &b->s;
    errbuf err = {{0}};
    ui_face face = { "cabin workbench", b, tui_snapshot, tui_type, tui_chat_cols, false };
    int orc = ui_session_open(s, o, &face, &err);
    if (orc) { fprintf(stderr, "%s\n", err.msg); free(b); return orc; }
    char hist[1024];
    ui_state_path("workbench_history", hist, sizeof hist);
    le_init(&b->le, hist);

    initscr();
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    mousemask(BUTTON4_PRESSED
#ifdef BUTTON5_PRESSED
              | BUTTON5_PRESSED
#endif
              , NULL);
    tui_colors_init();
    while (!s->quit && !stopsig_pending()) {   // SIGTERM, SIGINT, SIGHUP: leave as :quit does
        wint_t ch;
        timeout(1000 / FPS / 2);
        int r = wget_wch(stdscr, &ch);
        while (r != ERR) {
            on_key(b, r == KEY_CODE_YES, ch);
            if (s->quit) break;
            timeout(0);
            r = wget_wch(stdscr, &ch);
        }
        if (ui_session_poll(s, now_sec(), FPS)) {
            if (s->help) { b->ls.help = true; s->help = false; }
            snprintf(b->ls.notice, sizeof b->ls.notice, "%s", s->notice);
            int n_panels;
            const tui_panel *const *panels = tui_panels(&n_panels);
            for (int i = 0; i < n_panels; i++) panels[i]->update(&s->snap);
            layout_draw(&b->ls, &s->chat, &b->le, &s->snap);
        }
    }
    endwin();
    int rc = ui_session_close(s);
    le_free(&b->le);
    free(b);
    return rc;
}
