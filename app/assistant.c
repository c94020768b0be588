// Reply parsing for the assistant format (see assistant.h).
#include "app/assistant.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool key_char(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }
static bool value_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '+' || c == '-';
}

int action_parse(const char *reply, action *a, char *sentence, size_t sentence_len, char *err, size_t err_len) {
    memset(a, 0, sizeof *a);
    const char *p = reply;
    while (*p == ' ' || *p == '\n') p++;
    const char *open = strstr(p, "<act>");
    const char *close = open ? strstr(open, "</act>") : NULL;
#define FAIL(...) do { snprintf(err, err_len, __VA_ARGS__); snprintf(sentence, sentence_len, "%s", p); \
                       snprintf(a->intent, sizeof a->intent, "none"); return -1; } while (0)
    if (!open || open != p) FAIL("reply does not start with <act>");
    if (!close) FAIL("no </act> closes the action");
    const char *q = open + 5, *end = close;
    while (q < end && *q == ' ') q++;
    // intent: domain.verb or none
    const char *s = q;
    while (q < end && (key_char(*q) || *q == '.')) q++;
    size_t ilen = (size_t)(q - s);
    if (ilen == 0 || ilen >= sizeof a->intent) FAIL("missing or over-long intent");
    memcpy(a->intent, s, ilen);
    a->intent[ilen] = 0;
    if (strcmp(a->intent, "none") != 0) {
        const char *dot = strchr(a->intent, '.');
        if (!dot || dot == a->intent || !dot[1] || strchr(dot + 1, '.')) FAIL("intent '%s' is not domain.verb", a->intent);
    }
    while (q < end) {
        if (*q != ' ') FAIL("unexpected character '%c' in the action", *q);
        while (q < end && *q == ' ') q++;
        if (q >= end) break;
        if (a->n_slots == ACTION_MAX_SLOTS) FAIL("more than %d slots", ACTION_MAX_SLOTS);
        action_slot *sl = &a->slots[a->n_slots];
        s = q;
        while (q < end && key_char(*q)) q++;
        if (q == s || q >= end || *q != '=' || (size_t)(q - s) >= sizeof sl->key) FAIL("malformed slot");
        memcpy(sl->key, s, (size_t)(q - s));
        sl->key[q - s] = 0;
        // One value a key: action_slot_value, action_equal and the vehicle read the first only.
        for (int i = 0; i < a->n_slots; i++)
            if (strcmp(a->slots[i].key, sl->key) == 0) FAIL("slot %s given twice", sl->key);
        s = ++q;
        while (q < end && value_char(*q)) q++;
        if (q == s || (size_t)(q - s) >= sizeof sl->value) FAIL("slot %s has no valid value", sl->key);
        memcpy(sl->value, s, (size_t)(q - s));
        sl->value[q - s] = 0;
        a->n_slots++;
    }
#undef FAIL
    const char *t = close + 6;
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n > 0 && isspace((unsigned char)t[n - 1])) n--;
    if (n >= sentence_len) n = sentence_len - 1;
    memcpy(sentence, t, n);
    sentence[n] = 0;
    if (err_len) err[0] = 0;
    return 0;
}

void action_format(const action *a, char *buf, size_t n) {
    size_t o = (size_t)snprintf(buf, n, "%s", a->intent);
    for (int i = 0; i < a->n_slots && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, " %s=%s", a->slots[i].key, a->slots[i].value);
}

const char *action_slot_value(const action *a, const char *key) {
    for (int i = 0; i < a->n_slots; i++)
        if (strcmp(a->slots[i].key, key) == 0) return a->slots[i].value;
    return NULL;
}

bool action_equal(const action *a, const action *b) {
    if (strcmp(a->intent, b->intent) != 0 || a->n_slots != b->n_slots) return false;
    for (int i = 0; i < a->n_slots; i++) {
        const char *v = action_slot_value(b, a->slots[i].key);
        if (!v || strcmp(v, a->slots[i].value) != 0) return false;
    }
    return true;
}
