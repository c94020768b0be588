// The conversation pane: a log of messages (user turns, streamed replies, assistant actions,
// vehicle changes, command output), drawn word-wrapped from the bottom with scrollback, and
// saved as JSON (atomically: a temp file, then rename).
#include "tui/tui.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void chat_init(chat_log *c) { memset(c, 0, sizeof *c); c->streaming = -1; }

void chat_free(chat_log *c) {
    for (int i = 0; i < c->n; i++) free(c->m[i].text);
    free(c->m);
    memset(c, 0, sizeof *c);
}

int chat_add(chat_log *c, int kind, const char *text) {
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->m = xrealloc(c->m, (size_t)c->cap * sizeof *c->m);
    }
    chat_msg *m = &c->m[c->n];
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->t = now_sec();
    m->text = xcalloc(1, 1);
    m->cap = 1;
    c->n++;
    chat_append(c, c->n - 1, text, strlen(text));
    return c->n - 1;
}

void chat_append(chat_log *c, int idx, const char *piece, size_t len) {
    chat_msg *m = &c->m[idx];
    if (m->len + len + 1 > m->cap) {
        m->cap = (m->len + len + 1) * 2;
        m->text = xrealloc(m->text, m->cap);
    }
    memcpy(m->text + m->len, piece, len);
    m->len += len;
    m->text[m->len] = 0;
}

void chat_set_text(chat_log *c, int idx, const char *text) {
    c->m[idx].len = 0;
    c->m[idx].text[0] = 0;
    chat_append(c, idx, text, strlen(text));
}

static const char *prefix_of(int kind) {
    switch (kind) {
    case MSG_USER: return tui_ascii ? "you > " : "you › ";
    case MSG_ASSIST: return tui_ascii ? "cabin > " : "cabin › ";
    case MSG_ACTION: return tui_ascii ? "  > action: " : "  ▸ action: ";
    case MSG_VEHICLE: return tui_ascii ? "  * vehicle: " : "  ✓ vehicle: ";
    case MSG_REFUSED: return tui_ascii ? "  x refused: " : "  ✗ refused: ";
    case MSG_ERROR: return "  ! ";
    default: return "  ";
    }
}

static int color_of(int kind) {
    static const int c[] = { [MSG_USER] = TC_USER, [MSG_ASSIST] = TC_ASSIST, [MSG_ACTION] = TC_ACTION,
                             [MSG_VEHICLE] = TC_VEHICLE, [MSG_REFUSED] = TC_REFUSED, [MSG_INFO] = TC_INFO,
                             [MSG_ERROR] = TC_ERROR };
    return c[kind];
}

// What a message shows: a reply being streamed in the assistant format shows its action
// apart ("[climate.set temp=22] ...") and "…" until the action is complete.
static const char *display_text(const chat_msg *m, char *tmp, size_t n) {
    if (m->kind != MSG_ASSIST) return m->text;
    const char *p = m->text;
    while (*p == ' ' || *p == '\n') p++;
    if (strncmp(p, "<act>", 5) != 0) return p;
    const char *close = strstr(p, "</act>");
    if (!close) return tui_ascii ? "..." : "…";
    const char *rest = close + 6;
    while (*rest == ' ') rest++;
    snprintf(tmp, n, "[%.*s] %s", (int)(close - p - 5), p + 5, rest);
    return tmp;
}

typedef struct row { int msg; int off, len; bool first; } row;

// Wraps message text into rows of at most `cols` columns (the first row after the prefix).
static int wrap_msg(const char *t, int idx, int pre_w, int cols, row *rows, int max) {
    int n = 0, off = 0, len = (int)strlen(t);
    bool first = true;
    if (len == 0 && max > 0) { rows[n++] = (row){ idx, 0, 0, true }; return n; }
    while (off < len && n < max) {
        int avail = cols - pre_w;
        if (avail < 4) avail = 4;
        int w = 0, i = off, last_space = -1;
        while (i < len && t[i] != '\n') {
            int cw;
            int k = tui_next_char(t + i, len - i, &cw);
            if (cw < 0) cw = 1;
            if (w + cw > avail) break;
            if (t[i] == ' ') last_space = i;
            w += cw;
            i += k;
        }
        int end = i;
        if (i < len && t[i] != '\n' && last_space > off) end = last_space;
        rows[n++] = (row){ idx, off, end - off, first };
        first = false;
        off = end;
        if (off < len && (t[off] == '\n' || t[off] == ' ')) off++;
    }
    return n;
}

void chat_draw(WINDOW *w, tui_rect r, chat_log *c) {
    if (r.h <= 0 || r.w <= 4) return;
    // wrap only the messages that can show: from the newest back, enough rows for scroll + h
    int want = r.h + c->scroll + 1;
    int cap = want + 64;
    row *rows = xmalloc((size_t)cap * sizeof *rows);
    row *tmp = xmalloc((size_t)cap * sizeof *tmp);
    int n = 0;
    char *buf = xmalloc(8192);
    for (int i = c->n - 1; i >= 0 && n < want; i--) {
        const char *t = display_text(&c->m[i], buf, 8192);
        int pre_w = tui_width(prefix_of(c->m[i].kind), (int)strlen(prefix_of(c->m[i].kind)));
        int k = wrap_msg(t, i, pre_w, r.w, tmp, cap - n);
        // prepend: rows so far are newer
        memmove(rows + k, rows, (size_t)n * sizeof *rows);
        memcpy(rows, tmp, (size_t)k * sizeof *rows);
        n += k;
        if (i > 0 && c->m[i].kind == MSG_USER && n < cap) {   // a blank row before each turn
            memmove(rows + 1, rows, (size_t)n * sizeof *rows);
            rows[0] = (row){ -1, 0, 0, false };
            n++;
        }
    }
    int max_scroll = n > r.h ? n - r.h : 0;
    if (c->scroll > max_scroll) c->scroll = max_scroll;
    if (c->scroll < 0) c->scroll = 0;
    int start = n - r.h - c->scroll;
    if (start < 0) start = 0;
    for (int y = 0; y < r.h && start + y < n; y++) {
        row *rw = &rows[start + y];
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
    free(tmp);
}

void tui_state_path(const char *name, char *out, size_t n) { user_file_path("XDG_STATE_HOME", ".local/state", name, out, n); }

// A copy of s that is valid UTF-8 (JSON needs it; model text can hold broken byte pieces):
// each byte that does not start a well-formed sequence becomes U+FFFD.
static char *utf8_clean(const char *s) {
    size_t n = strlen(s);
    char *out = xmalloc(n * 3 + 1), *o = out;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool good = k > 0 && i + k <= n && !(k == 2 && c < 0xc2) && !(k == 4 && c > 0xf4);
        for (size_t j = 1; good && j < k; j++) good = ((unsigned char)s[i + j] & 0xc0) == 0x80;
        if (good && k == 3) {   // no overlongs, no surrogates
            unsigned char d = (unsigned char)s[i + 1];
            good = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);
        }
        if (good && k == 4) {
            unsigned char d = (unsigned char)s[i + 1];
            good = !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
        }
        if (good) { memcpy(o, s + i, k); o += k; i += k; }
        else { memcpy(o, "\xef\xbf\xbd", 3); o += 3; i++; }
    }
    *o = 0;
    return out;
}

static const char *role_name(int kind) {
    static const char *const r[] = { "user", "assistant", "action", "vehicle", "refused", "info", "error" };
    return kind >= 0 && kind <= MSG_ERROR ? r[kind] : "info";
}

int chat_save_json(const chat_log *c, const ui_snapshot *s, const char *path, errbuf *err) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", s->model_name);
    cJSON_AddStringToObject(root, "precision", s->plan_name);
    cJSON_AddStringToObject(root, "kv", s->kv_format);
    cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
    double t0 = c->n ? c->m[0].t : 0;
    for (int i = 0; i < c->n; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", role_name(c->m[i].kind));
        char *t = utf8_clean(c->m[i].text);
        cJSON_AddStringToObject(m, "text", t);
        free(t);
        cJSON_AddNumberToObject(m, "t", c->m[i].t - t0);
        cJSON_AddItemToArray(msgs, m);
    }
    const session_stats *st = &s->st;
    cJSON *js = cJSON_AddObjectToObject(root, "stats");
    cJSON_AddNumberToObject(js, "turns", st->turns);
    cJSON_AddNumberToObject(js, "prompt_tokens", st->prompt_tokens);
    cJSON_AddNumberToObject(js, "gen_tokens", st->gen_tokens);
    cJSON_AddNumberToObject(js, "ttft_ms", st->ttft_ms);
    cJSON_AddNumberToObject(js, "prefill_tps", st->prefill_tps);
    cJSON_AddNumberToObject(js, "decode_tps", st->decode_tps);
    cJSON_AddNumberToObject(js, "n_past", st->n_past);
    cJSON_AddNumberToObject(js, "n_ctx", st->n_ctx);
    cJSON_AddNumberToObject(js, "weight_bytes", (double)st->weight_bytes);
    cJSON_AddNumberToObject(js, "kv_bytes", (double)st->kv_bytes);
    cJSON_AddNumberToObject(js, "decode_j_per_token", st->energy.decode_j_per_token);
    cJSON_AddStringToObject(js, "energy_from", st->energy.total_from);
    cJSON_AddBoolToObject(js, "energy_measured", st->energy.total_measured);
    cJSON_AddStringToObject(js, "backend", st->backend);
    if (s->kl_state == KL_DONE || s->kl_state == KL_FILE) {   // the plan vs the file (ui/measure.c)
        cJSON *q = cJSON_AddObjectToObject(root, "plan_vs_file");
        cJSON_AddNumberToObject(q, "kl", s->kl);
        cJSON_AddNumberToObject(q, "top1", s->agree);
    }
    if (s->voice.turns > 0) {   // the last spoken turn
        cJSON *v = cJSON_AddObjectToObject(root, "voice");
        char *t = utf8_clean(s->voice.transcript);
        cJSON_AddStringToObject(v, "transcript", t);
        free(t);
        cJSON_AddNumberToObject(v, "turns", s->voice.turns);
        cJSON_AddNumberToObject(v, "release_to_transcript_ms", s->voice.asr_ms);
        cJSON_AddNumberToObject(v, "release_to_first_token_ms", s->voice.first_token_ms);
        cJSON_AddNumberToObject(v, "release_to_first_audio_ms", s->voice.first_audio_ms);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    size_t n = strlen(text);
    text[n] = '\n';   // cJSON_Print's text, its terminator replaced by a newline
    int rc = afile_write_all(path, text, n + 1, err);
    free(text);
    return rc;
}
