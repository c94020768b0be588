// The workbench's input line (ui/lineedit.c), the same editor in every face: UTF-8 editing,
// history (kept in a file, one line an entry), Ctrl-R reverse search, Tab completion of
// `:commands`. A face maps its keys to enum le_key and draws e->buf with the cursor at e->cur.
#ifndef CABIN_UI_LINEEDIT_H
#define CABIN_UI_LINEEDIT_H

#include <stdbool.h>
#include <wchar.h>

// Editing keys (le_key with is_key set); the ncurses and SDL faces map theirs to these.
enum le_key { LE_NONE, LE_ENTER, LE_LEFT, LE_RIGHT, LE_HOME, LE_END, LE_BACKSPACE, LE_DELETE, LE_UP, LE_DOWN };

typedef struct line_edit {
    char buf[2048];
    int len, cur;                // bytes
    char **hist;
    int n_hist, hist_pos;        // hist_pos == n_hist: the line being typed
    char saved[2048];            // the line being typed while browsing history
    bool searching;              // Ctrl-R
    char search[128];
    int search_hit;              // history index shown, -1 none
    char hist_path[1024];
    int comp_i;                  // Tab: next completion index
    char comp_prefix[64];
} line_edit;
void le_init(line_edit *e, const char *hist_path);
void le_free(line_edit *e);
// A key: is_key set, ch an enum le_key; else ch a character (control characters are the
// Ctrl-letter commands: Ctrl-A/E/B/F/D/K/U/W/P/N/R, Tab, Enter). Returns 1 when a line was
// entered (in e->buf, then cleared by le_clear after use), 0 otherwise.
int le_key(line_edit *e, int is_key, wint_t ch);
// Text at the cursor (UTF-8; paste, an SDL text event); newlines and tabs become spaces.
void le_insert_text(line_edit *e, const char *text);
void le_clear(line_edit *e);
void le_history_add(line_edit *e, const char *line);
int le_next_char(const line_edit *e, int i);   // byte index of the character after i

#endif
