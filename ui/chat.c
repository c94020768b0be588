// The conversation as a log of messages (user turns, streamed replies, assistant actions,
// vehicle changes, command output), kept the same for every face, and saved as JSON with the
// stats of the snapshot (atomically: a temp file, then rename).
#include "ui/ui.h"
#include "app/cmdlang.h"
#include "engine/json_text.h"
#include "base/afile.h"
#include "base/dirs.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (kind == MSG_ERROR) text = cmdlang_for_person(text);   // a typed line's error names no file position
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

void ui_state_path(const char *name, char *out, size_t n) { user_file_path("XDG_STATE_HOME", ".local/state", name, out, n); }

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
    char *text = json_text(root, true);
    int rc = afile_write_all(path, text, strlen(text), err);
    free(text);
    return rc;
}

const char *chat_prefix(int kind, bool ascii) {
    switch (kind) {
    case MSG_USER: return ascii ? "you > " : "you › ";
    case MSG_ASSIST: return ascii ? "cabin > " : "cabin › ";
    case MSG_ACTION: return ascii ? "  > action: " : "  ▸ action: ";
    case MSG_VEHICLE: return ascii ? "  * vehicle: " : "  ✓ vehicle: ";
    case MSG_REFUSED: return ascii ? "  x refused: " : "  ✗ refused: ";
    case MSG_ERROR: return "  ! ";
    default: return "  ";
    }
}

const char *chat_display_text(const chat_msg *m, char *tmp, size_t n, bool ascii) {
    if (m->kind != MSG_ASSIST) return m->text;
    const char *p = m->text;
    while (*p == ' ' || *p == '\n') p++;
    if (strncmp(p, "<act>", 5) != 0) return p;
    const char *close = strstr(p, "</act>");
    if (!close) return ascii ? "..." : "…";
    const char *rest = close + 6;
    while (*rest == ' ') rest++;
    snprintf(tmp, n, "[%.*s] %s", (int)(close - p - 5), p + 5, rest);
    return tmp;
}

int chat_text_cells(const char *s, int bytes, chat_char_fn next) {
    int w = 0;
    for (int i = 0; i < bytes;) {
        int c;
        i += next(s + i, bytes - i, &c);
        w += c < 0 ? 1 : c;
    }
    return w;
}

// Message idx's text t as rows of at most cols cells (the first after pre cells of prefix).
static int wrap_msg(const char *t, int idx, int pre, int cols, chat_char_fn next, chat_row *rows, int max) {
    int n = 0, off = 0, len = (int)strlen(t);
    bool first = true;
    if (len == 0 && max > 0) { rows[n++] = (chat_row){ idx, 0, 0, true }; return n; }
    while (off < len && n < max) {
        int avail = cols - pre > 4 ? cols - pre : 4;
        int w = 0, i = off, last_space = -1;
        while (i < len && t[i] != '\n') {
            int cw;
            int k = next(t + i, len - i, &cw);
            if (cw < 0) cw = 1;
            if (w + cw > avail) break;
            if (t[i] == ' ') last_space = i;
            w += cw;
            i += k;
        }
        int end = i;
        if (i < len && t[i] != '\n' && last_space > off) end = last_space;
        rows[n++] = (chat_row){ idx, off, end - off, first };
        first = false;
        off = end;
        if (off < len && (t[off] == '\n' || t[off] == ' ')) off++;
    }
    return n;
}

int chat_layout(chat_log *c, int h, int cols, bool ascii, chat_char_fn next, chat_row **out) {
    // wrap only the messages that can show: from the newest back, enough rows for scroll + h
    int want = h + c->scroll + 1, cap = want + 64, n = 0;
    chat_row *rows = xmalloc((size_t)cap * sizeof *rows), *tmp = xmalloc((size_t)cap * sizeof *tmp);
    char *buf = xmalloc(8192);
    for (int i = c->n - 1; i >= 0 && n < want; i--) {
        const char *t = chat_display_text(&c->m[i], buf, 8192, ascii);
        const char *pre = chat_prefix(c->m[i].kind, ascii);
        int k = wrap_msg(t, i, chat_text_cells(pre, (int)strlen(pre), next), cols, next, tmp, cap - n);
        memmove(rows + k, rows, (size_t)n * sizeof *rows);   // rows so far are newer
        memcpy(rows, tmp, (size_t)k * sizeof *rows);
        n += k;
        if (i > 0 && c->m[i].kind == MSG_USER && n < cap) {   // a blank row before each turn
            memmove(rows + 1, rows, (size_t)n * sizeof *rows);
            rows[0] = (chat_row){ -1, 0, 0, false };
            n++;
        }
    }
    free(buf);
    free(tmp);
    int max_scroll = n > h ? n - h : 0;
    if (c->scroll > max_scroll) c->scroll = max_scroll;
    if (c->scroll < 0) c->scroll = 0;
    int start = n - h - c->scroll;
    if (start < 0) start = 0;
    int shown = n - start < h ? n - start : h;
    memmove(rows, rows + start, (size_t)(shown > 0 ? shown : 0) * sizeof *rows);
    *out = rows;
    return shown > 0 ? shown : 0;
}
