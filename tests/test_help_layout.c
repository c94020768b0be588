// The help overlay's layout (ui_help_layout), which both faces draw: at every width from 30 to
// 170 columns, every line fits its columns, and the lines of each entry put back together are
// its key and its description word for word (a line ends only at a space: no word is cut).
#include "ui/panel_data.h"
#include "tests/test.h"

#include <string.h>

static const char *const keys[][2] = {
    { "Enter", "send the message, or run a :command" },
    { "PgUp PgDn wheel", "scroll the conversation" },
    { "a key name far wider than any key column", "short" },
    { "F9", "a description with a_very_long_unbreakable_word_that_is_wider_than_a_narrow_column_of_text in it" },
};
#define N_KEYS (int)(sizeof keys / sizeof keys[0])

static int cols_of(const char *s) {
    int c = 0;
    for (; *s; s++) c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

// words of s, single spaces between, into out
static void norm(const char *s, char *out, size_t n) {
    size_t o = 0;
    for (; *s && o + 1 < n; s++) {
        if (*s == ' ' && (o == 0 || out[o - 1] == ' ')) continue;
        out[o++] = *s;
    }
    while (o > 0 && out[o - 1] == ' ') o--;
    out[o] = 0;
}

// Consumes the lines of one entry from *i; checks they fit and rebuild (key, desc).
static void check_entry(const ui_help_line *l, int n, int *i, const char *key, const char *desc, int width, int key_w,
                        int *cut_words) {
    char got_key[512] = "", got_desc[2048] = "", want[2048];
    bool long_key = cols_of(key) > key_w - 1;
    if (long_key)
        while (*i < n && l[*i].key[0] && !l[*i].text[0]) {
            CHECK(cols_of(l[*i].key) <= width, "width %d: key line '%s' wider than the area", width, l[*i].key);
            if (got_key[0]) strcat(got_key, " ");
            strncat(got_key, l[*i].key, sizeof got_key - strlen(got_key) - 1);
            (*i)++;
        }
    int first = *i;
    while (*i < n && (*i == first || !l[*i].key[0]) && l[*i].tone != UI_TITLE && (*i == first || l[*i].text[0])) {
        if (*i == first && !long_key) snprintf(got_key, sizeof got_key, "%s", l[*i].key);
        CHECK(cols_of(l[*i].text) <= width - key_w, "width %d: '%s' wider than %d", width, l[*i].text, width - key_w);
        // a piece that fills its columns and is followed by more text was cut inside a word
        // only when the word itself is wider than the columns (then there is no other way)
        if (got_desc[0]) strcat(got_desc, " ");
        strncat(got_desc, l[*i].text, sizeof got_desc - strlen(got_desc) - 1);
        (*i)++;
    }
    norm(desc, want, sizeof want);
    char got[2048];
    norm(got_desc, got, sizeof got);
    // A word wider than the columns is the one thing that may be split: then only the letters
    // must come back in order; any other description comes back word for word.
    int longest = 0, run = 0;
    for (const char *p = desc; ; p++) {
        if (!*p || *p == ' ') { if (run > longest) longest = run; run = 0; if (!*p) break; }
        else run += ((unsigned char)*p & 0xC0) != 0x80;
    }
    if (longest > width - key_w) {
        char a[2048], b[2048];
        size_t x = 0, y = 0;
        for (const char *p = want; *p; p++) if (*p != ' ') a[x++] = *p;
        for (const char *p = got; *p; p++) if (*p != ' ') b[y++] = *p;
        a[x] = b[y] = 0;
        CHECK(strcmp(a, b) == 0, "width %d: '%s' lost letters: '%s'", width, want, got);
    } else {
        if (strcmp(got, want) != 0) (*cut_words)++;
        CHECK(strcmp(got, want) == 0, "width %d: '%s' came back as '%s'", width, want, got);
    }
    CHECK(strcmp(got_key, key) == 0, "width %d: key '%s' came back as '%s'", width, key, got_key);
}

int main(void) {
    static ui_help_line lines[UI_MAX_HELP_LINES];
    ui_help_row cmds[UI_MAX_HELP_ROWS];
    int n_cmd = ui_help_commands(cmds, UI_MAX_HELP_ROWS);
    CHECK(n_cmd > 20, "the workbench's commands: %d", n_cmd);
    for (int width = 30; width <= 170; width++) {
        int key_w = width > 60 ? 24 : 18, cut = 0;
        int n = ui_help_layout(keys, N_KEYS, width, key_w, lines, UI_MAX_HELP_LINES);
        CHECK(n < UI_MAX_HELP_LINES, "width %d: %d lines fill the buffer", width, n);
        int i = 0;
        for (int k = 0; k < N_KEYS; k++) check_entry(lines, n, &i, keys[k][0], keys[k][1], width, key_w, &cut);
        CHECK(i < n && !lines[i].key[0] && !lines[i].text[0], "width %d: a blank line after the keys", width);
        i++;
        CHECK(i < n && lines[i].tone == UI_TITLE, "width %d: the commands' title", width);
        i++;
        for (int k = 0; k < n_cmd; k++) check_entry(lines, n, &i, cmds[k].usage, cmds[k].help, width, key_w, &cut);
        CHECK(i == n, "width %d: %d lines left over", width, n - i);
        CHECK(cut == 0, "width %d: %d descriptions did not come back whole", width, cut);
    }
    // the splitting of an unbreakable word keeps its letters
    int n = ui_help_layout(keys, N_KEYS, 40, 18, lines, UI_MAX_HELP_LINES);
    char all[4096] = "";
    for (int i = 0; i < n; i++) strncat(all, lines[i].text, sizeof all - strlen(all) - 1);
    CHECK(strstr(all, "a_very_long_unbreakable_word_that_is_wider_than_a_narrow_column_of_text") != NULL,
          "a word wider than the column is split, not lost");
    return test_finish();
}
