// Clause splitting of streamed replies (see voice.h).
#include "audio/voice.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clause_init(clause_splitter *c, int max_words) {
    memset(c, 0, sizeof *c);
    c->max_words = max_words > 0 ? max_words : 12;
    c->cap = 256;
    c->buf = xmalloc(c->cap);
    c->buf[0] = 0;
}

void clause_free(clause_splitter *c) { free(c->buf); c->buf = NULL; }

// Emits buf[0, n) (trimmed, if it has a letter or digit) and drops it from buf.
static void cut(clause_splitter *c, size_t n, void (*emit)(void *, const char *), void *ud) {
    size_t a = 0, b = n;
    while (a < b && isspace((unsigned char)c->buf[a])) a++;
    while (b > a && isspace((unsigned char)c->buf[b - 1])) b--;
    bool speakable = false;
    for (size_t i = a; i < b; i++)
        if (isalnum((unsigned char)c->buf[i]) || (unsigned char)c->buf[i] >= 0x80) speakable = true;
    if (speakable) {
        char *s = xstrndup(c->buf + a, b - a);
        emit(ud, s);
        free(s);
        c->emitted++;
    }
    memmove(c->buf, c->buf + n, c->len - n + 1);
    c->len -= n;
}

static void scan(clause_splitter *c, bool final, void (*emit)(void *, const char *), void (*act)(void *, const char *), void *ud) {
    if (c->state == 0) {
        size_t i = 0;
        while (i < c->len && isspace((unsigned char)c->buf[i])) i++;
        size_t have = c->len - i;
        if (have < 5 && strncmp(c->buf + i, "<act>", have) == 0 && !final) return;   // may still be <act>
        if (have >= 5 && strncmp(c->buf + i, "<act>", 5) == 0) {
            c->state = 1;
            memmove(c->buf, c->buf + i + 5, c->len - i - 5 + 1);
            c->len -= i + 5;
        } else {
            c->state = 2;
        }
    }
    if (c->state == 1) {
        char *close = strstr(c->buf, "</act>");
        if (!close) {
            if (final) c->state = 2;   // unterminated: speak it as it is
            else return;
        } else {
            size_t n = (size_t)(close - c->buf);
            snprintf(c->action, sizeof c->action, "%.*s", (int)n, c->buf);
            c->have_action = true;
            if (act) act(ud, c->action);
            memmove(c->buf, close + 6, c->len - n - 6 + 1);
            c->len -= n + 6;
            c->state = 2;
        }
    }
    // speech: cut at clause punctuation followed by a space, or after max_words words (the
    // first clause after first_max_words: the sooner it is complete, the sooner speech starts)
    size_t i = 0;
    int words = 0;
    bool in_word = false;
    while (i < c->len) {
        char ch = c->buf[i];
        bool sp = isspace((unsigned char)ch);
        if (!sp && !in_word) words++;
        in_word = !sp;
        if (strchr(".!?;:,", ch) && ch && i + 1 < c->len && isspace((unsigned char)c->buf[i + 1])) {
            cut(c, i + 1, emit, ud);
            i = 0; words = 0; in_word = false;
            continue;
        }
        int limit = !c->emitted && c->first_max_words > 0 ? c->first_max_words : c->max_words;
        if (sp && words >= limit) {
            cut(c, i + 1, emit, ud);
            i = 0; words = 0; in_word = false;
            continue;
        }
        i++;
    }
    if (final && c->len) cut(c, c->len, emit, ud);
}

void clause_push(clause_splitter *c, const char *text, size_t n, void (*emit)(void *, const char *),
                 void (*act)(void *, const char *), void *ud) {
    if (c->len + n + 1 > c->cap) {
        c->cap = (c->len + n + 1) * 2;
        c->buf = xrealloc(c->buf, c->cap);
    }
    memcpy(c->buf + c->len, text, n);
    c->len += n;
    c->buf[c->len] = 0;
    scan(c, false, emit, act, ud);
}

void clause_finish(clause_splitter *c, void (*emit)(void *, const char *), void (*act)(void *, const char *), void *ud) {
    scan(c, true, emit, act, ud);
}
