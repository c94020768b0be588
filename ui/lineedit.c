// The workbench's input line, the same for every face (ui/lineedit.h): UTF-8 editing, history
// kept in the XDG state dir, Ctrl-R reverse search, Tab completion of `:commands` from the
// command language's table. The faces draw it (tui/lineedit.c, sdl/) and map their keys to
// enum le_key.
#include "ui/lineedit.h"
#include "app/cmdlang.h"
#include "base/mem.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST_MAX 1000
#define CTRL(c) ((c) & 0x1f)

void le_init(line_edit *e, const char *hist_path) {
    memset(e, 0, sizeof *e);
    e->search_hit = -1;
    snprintf(e->hist_path, sizeof e->hist_path, "%s", hist_path ? hist_path : "");
    FILE *f = e->hist_path[0] ? fopen(e->hist_path, "r") : NULL;
    if (f) {
        char line[2048];
        while (fgets(line, sizeof line, f)) {
            size_t n = strlen(line);
            while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
            if (!n) continue;
            if (e->n_hist == HIST_MAX) { free(e->hist[0]); memmove(e->hist, e->hist + 1, (HIST_MAX - 1) * sizeof *e->hist); e->n_hist--; }
            e->hist = xrealloc(e->hist, (size_t)(e->n_hist + 1) * sizeof *e->hist);
            e->hist[e->n_hist++] = xstrdup(line);
        }
        fclose(f);
    }
    e->hist_pos = e->n_hist;
}

void le_free(line_edit *e) {
    for (int i = 0; i < e->n_hist; i++) free(e->hist[i]);
    free(e->hist);
    e->hist = NULL;
    e->n_hist = 0;
}

void le_clear(line_edit *e) {
    e->len = e->cur = 0;
    e->buf[0] = 0;
    e->hist_pos = e->n_hist;
    e->comp_i = 0;
    e->comp_prefix[0] = 0;
}

void le_history_add(line_edit *e, const char *line) {
    if (!*line || (e->n_hist && strcmp(e->hist[e->n_hist - 1], line) == 0)) return;
    if (e->n_hist == HIST_MAX) { free(e->hist[0]); memmove(e->hist, e->hist + 1, (HIST_MAX - 1) * sizeof *e->hist); e->n_hist--; }
    e->hist = xrealloc(e->hist, (size_t)(e->n_hist + 1) * sizeof *e->hist);
    e->hist[e->n_hist++] = xstrdup(line);
    if (e->hist_path[0] && !strchr(line, '\n')) {
        FILE *f = fopen(e->hist_path, "a");
        if (f) { fprintf(f, "%s\n", line); fclose(f); }
    }
}

static void set_buf(line_edit *e, const char *s) {
    snprintf(e->buf, sizeof e->buf, "%s", s);
    e->len = e->cur = (int)strlen(e->buf);
}

static int prev_char(const line_edit *e, int i) {
    if (i <= 0) return 0;
    i--;
    while (i > 0 && ((unsigned char)e->buf[i] & 0xc0) == 0x80) i--;
    return i;
}

static int next_char(const line_edit *e, int i) {
    if (i >= e->len) return e->len;
    i++;
    while (i < e->len && ((unsigned char)e->buf[i] & 0xc0) == 0x80) i++;
    return i;
}

int le_next_char(const line_edit *e, int i) { return next_char(e, i); }

static void delete_range(line_edit *e, int a, int b) {
    memmove(e->buf + a, e->buf + b, (size_t)(e->len - b + 1));
    e->len -= b - a;
    if (e->cur > b) e->cur -= b - a;
    else if (e->cur > a) e->cur = a;
}

static void insert(line_edit *e, const char *s, int n) {
    if (e->len + n >= (int)sizeof e->buf) return;
    memmove(e->buf + e->cur + n, e->buf + e->cur, (size_t)(e->len - e->cur + 1));
    memcpy(e->buf + e->cur, s, (size_t)n);
    e->len += n;
    e->cur += n;
}

static void search_next(line_edit *e, int from) {
    e->search_hit = -1;
    for (int i = from; i >= 0; i--)
        if (e->search[0] && strstr(e->hist[i], e->search)) { e->search_hit = i; return; }
}

// The i-th command of the workbench's (the table's rows offered in it, its own ones included).
static const char *complete_nth(const char *prefix, int i) { return cmdlang_complete(prefix, CMD_IN_WORKBENCH, i); }

// Tab on ":pre": cycles through the commands starting with "pre".
static void complete(line_edit *e) {
    if (e->buf[0] != ':' || strchr(e->buf, ' ')) return;
    if (e->comp_i == 0) snprintf(e->comp_prefix, sizeof e->comp_prefix, "%s", e->buf + 1);
    const char *m = complete_nth(e->comp_prefix, e->comp_i);
    if (!m && e->comp_i > 0) { e->comp_i = 0; m = complete_nth(e->comp_prefix, 0); }
    if (!m) return;
    char s[80];
    int n_match = 0;
    while (complete_nth(e->comp_prefix, n_match)) n_match++;
    snprintf(s, sizeof s, ":%s%s", m, n_match == 1 ? " " : "");
    set_buf(e, s);
    e->comp_i++;
}

int le_key(line_edit *e, int is_key, wint_t ch) {
    if (!(is_key == 0 && ch == '\t')) e->comp_i = 0;
    if (e->searching) {
        if (!is_key && ch == CTRL('r')) { if (e->search_hit > 0) search_next(e, e->search_hit - 1); return 0; }
        if (!is_key && (ch == CTRL('g') || ch == 27)) { e->searching = false; return 0; }
        if ((is_key && ch == LE_BACKSPACE) || (!is_key && (ch == 127 || ch == 8))) {
            size_t n = strlen(e->search);
            if (n) e->search[n - 1] = 0;
            search_next(e, e->n_hist - 1);
            return 0;
        }
        if (!is_key && ch >= 32 && ch != 127) {
            char mb[MB_LEN_MAX];
            mbstate_t ms;
            memset(&ms, 0, sizeof ms);
            size_t k = wcrtomb(mb, (wchar_t)ch, &ms);
            size_t n = strlen(e->search);
            if (k != (size_t)-1 && n + k < sizeof e->search) { memcpy(e->search + n, mb, k); e->search[n + k] = 0; }
            search_next(e, e->search_hit >= 0 ? e->search_hit : e->n_hist - 1);
            return 0;
        }
        // any other key: take the match and go on with the key
        e->searching = false;
        if (e->search_hit >= 0) set_buf(e, e->hist[e->search_hit]);
    }
    if (is_key) {
        switch (ch) {
        case LE_ENTER: return 1;
        case LE_LEFT: e->cur = prev_char(e, e->cur); return 0;
        case LE_RIGHT: e->cur = next_char(e, e->cur); return 0;
        case LE_HOME: e->cur = 0; return 0;
        case LE_END: e->cur = e->len; return 0;
        case LE_BACKSPACE: if (e->cur > 0) delete_range(e, prev_char(e, e->cur), e->cur); return 0;
        case LE_DELETE: if (e->cur < e->len) delete_range(e, e->cur, next_char(e, e->cur)); return 0;
        case LE_UP:
            if (e->hist_pos > 0) {
                if (e->hist_pos == e->n_hist) snprintf(e->saved, sizeof e->saved, "%s", e->buf);
                set_buf(e, e->hist[--e->hist_pos]);
            }
            return 0;
        case LE_DOWN:
            if (e->hist_pos < e->n_hist) {
                e->hist_pos++;
                set_buf(e, e->hist_pos == e->n_hist ? e->saved : e->hist[e->hist_pos]);
            }
            return 0;
        default: return 0;
        }
    }
    switch (ch) {
    case '\n': case '\r': return 1;
    case 127: case 8: if (e->cur > 0) delete_range(e, prev_char(e, e->cur), e->cur); return 0;
    case CTRL('a'): e->cur = 0; return 0;
    case CTRL('e'): e->cur = e->len; return 0;
    case CTRL('b'): e->cur = prev_char(e, e->cur); return 0;
    case CTRL('f'): e->cur = next_char(e, e->cur); return 0;
    case CTRL('d'): if (e->cur < e->len) delete_range(e, e->cur, next_char(e, e->cur)); return 0;
    case CTRL('k'): e->buf[e->cur] = 0; e->len = e->cur; return 0;
    case CTRL('u'): delete_range(e, 0, e->cur); return 0;
    case CTRL('w'): {
        int i = e->cur;
        while (i > 0 && e->buf[i - 1] == ' ') i--;
        while (i > 0 && e->buf[i - 1] != ' ') i--;
        delete_range(e, i, e->cur);
        return 0;
    }
    case CTRL('p'): return le_key(e, 1, LE_UP);
    case CTRL('n'): return le_key(e, 1, LE_DOWN);
    case CTRL('r'): e->searching = true; e->search[0] = 0; e->search_hit = -1; return 0;
    case '\t': complete(e); return 0;
    default: break;
    }
    if (ch >= 32 && ch != 127) {
        char mb[MB_LEN_MAX];
        mbstate_t ms;
        memset(&ms, 0, sizeof ms);
        size_t k = wcrtomb(mb, (wchar_t)ch, &ms);
        if (k != (size_t)-1) insert(e, mb, (int)k);
    }
    return 0;
}

void le_insert_text(line_edit *e, const char *text) {
    e->comp_i = 0;
    for (const char *p = text; *p; p++) {   // one line: a pasted newline or tab is a space
        char c = *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p;
        if ((unsigned char)c < 32 || c == 127) continue;
        insert(e, &c, 1);
    }
}
