#include "app/eval_text.h"

#include "base/str.h"
#include "engine/gguf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *PROSE =
    "The cabin assistant keeps the car comfortable: it sets the temperature, opens the windows, "
    "plays music and reads messages aloud. Every answer it gives names one action and its slots. ";
#define PROSE_REPEATS 40   // enough tokens to fill the default windows
#define EMBEDDED_MODEL_NAME "cabin-tiny"   // general.name of assets/models/cabin-tiny.gguf

// By name, else the file's (chat_template_for_file; the held-out dialogues are the embedded
// model's, whose architecture changes nothing here).
static const chat_template *template_named_or_file(const char *template_name, const char *chat_template_src) {
    const chat_template *t = template_name ? chat_template_by_name(template_name) : NULL;
    return t ? t : chat_template_for_file(chat_template_src, NULL, NULL);
}

const chat_template *eval_template(const session *s, const char *template_name) {
    const chat_template *t = template_name ? chat_template_by_name(template_name) : NULL;
    return t ? t : session_template(s);
}

// Appends one dialogue's turns in the chat layout; -1 when a turn lacks its texts.
static int append_dialogue(strbuf *b, const chat_template *t, const cJSON *turns) {
    bool first = true;
    const cJSON *turn;
    cJSON_ArrayForEach(turn, turns) {
        const cJSON *u = cJSON_GetObjectItem(turn, "user"), *r = cJSON_GetObjectItem(turn, "reply");
        if (!cJSON_IsString(u) || !cJSON_IsString(r)) return -1;
        char *text = chat_template_render_turn(t, NULL, u->valuestring, first, false);
        strbuf_puts(b, text);
        strbuf_puts(b, r->valuestring);
        strbuf_puts(b, t->assistant_end);
        free(text);
        first = false;
    }
    return 0;
}

cJSON *heldout_dialogue(const char *line, const char *path, int line_no, errbuf *err) {
    const char *end = NULL;
    cJSON *d = cJSON_ParseWithOpts(line, &end, false);
    if (!d) {
        err_set(err, "%s:%d: not JSON (at column %ld)", path, line_no, end ? (long)(end - line) + 1 : 1L);
        return NULL;
    }
    while (end && (*end == ' ' || *end == '\t' || *end == '\r')) end++;
    if (end && *end) {
        err_set(err, "%s:%d: text after the JSON object (at column %ld)", path, line_no, (long)(end - line) + 1);
    } else if (!cJSON_IsArray(cJSON_GetObjectItem(d, "turns"))) {
        err_set(err, "%s:%d: not a dialogue ({\"turns\": [...]})", path, line_no);
    } else {
        return d;
    }
    cJSON_Delete(d);
    return NULL;
}

char *heldout_chat_text(const char *path, const chat_template *t, int limit, errbuf *err) {
    char *file = read_file_all(path, NULL, err);
    if (!file) return NULL;
    strbuf b = {0};
    int line_no = 0, dialogues = 0, rc = 0;
    char *save = NULL;
    for (char *line = strtok_r(file, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        if (!*line) continue;
        if (limit > 0 && dialogues >= limit) break;
        cJSON *d = heldout_dialogue(line, path, line_no, err);
        if (!d) rc = -1;
        else if (append_dialogue(&b, t, cJSON_GetObjectItem(d, "turns"))) rc = err_set(err, "%s:%d: a turn lacks \"user\" or \"reply\"", path, line_no);
        dialogues++;
        cJSON_Delete(d);
    }
    free(file);
    if (!rc && !b.len) rc = err_set(err, "%s: no dialogues", path);
    if (rc) { strbuf_free(&b); return NULL; }
    return b.s;
}

int heldout_first_user_turns(const char *path, int limit, char ***out, errbuf *err) {
    char *file = read_file_all(path, NULL, err);
    if (!file) return -1;
    char **turns = NULL;
    int n = 0, line_no = 0, rc = 0;
    char *save = NULL;
    for (char *line = strtok_r(file, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        if (!*line) continue;
        if (limit > 0 && n >= limit) break;
        cJSON *d = heldout_dialogue(line, path, line_no, err);
        const cJSON *first = d ? cJSON_GetArrayItem(cJSON_GetObjectItem(d, "turns"), 0) : NULL;
        const cJSON *user = first ? cJSON_GetObjectItem(first, "user") : NULL;
        if (!d) {
            rc = -1;
        } else if (!cJSON_IsString(user)) {
            rc = err_set(err, "%s:%d: a dialogue without a first user turn ({\"turns\": [{\"user\": ...}]})", path, line_no);
        } else {
            turns = xrealloc(turns, (size_t)(n + 1) * sizeof *turns);
            turns[n++] = xstrdup(user->valuestring);
        }
        cJSON_Delete(d);
    }
    free(file);
    if (!rc && n == 0) rc = err_set(err, "%s: no dialogues", path);
    if (rc) {
        for (int i = 0; i < n; i++) free(turns[i]);
        free(turns);
        return -1;
    }
    *out = turns;
    return n;
}

static bool is_embedded_name(const char *model_name) {
    return model_name && strcmp(model_name, EMBEDDED_MODEL_NAME) == 0;
}

bool eval_is_embedded_model(const session *s) { return is_embedded_name(session_model(s)->name); }

int eval_is_embedded_file(const char *model_path, errbuf *err) {
    gguf_file g;
    if (gguf_open(&g, model_path, err)) return -1;
    char *name = NULL;
    errbuf ignored = {{0}};   // no general.name: not the embedded model
    gguf_get_strdup(&g, "general.name", &name, &ignored);
    gguf_close(&g);
    int embedded = is_embedded_name(name);
    free(name);
    return embedded;
}

// model_name: general.name; chat_template_src: tokenizer.chat_template (NULL when absent)
static char *default_text(const char *model_name, const char *chat_template_src, const char *template_name,
                          const char **what, bool *prose, errbuf *err) {
    *prose = !is_embedded_name(model_name);
    if (!*prose) {
        *what = CABIN_HELDOUT " (held-out dialogues, chat layout)";
        return heldout_chat_text(CABIN_HELDOUT, template_named_or_file(template_name, chat_template_src), 0, err);
    }
    *what = "a built-in paragraph of prose";
    strbuf b = {0};
    for (int i = 0; i < PROSE_REPEATS; i++) strbuf_puts(&b, PROSE);
    return b.s;
}

char *eval_default_text(const session *s, const char *template_name, const char **what, bool *prose, errbuf *err) {
    const model *m = session_model(s);
    return default_text(m->name, m->chat_template, template_name, what, prose, err);
}

char *eval_default_text_for_file(const char *model_path, const char *template_name, const char **what, bool *prose,
                                 errbuf *err) {
    gguf_file g;
    if (gguf_open(&g, model_path, err)) return NULL;
    char *name = NULL, *tmpl = NULL;
    errbuf ignored = {{0}};   // absent keys: not the embedded model, no template
    gguf_get_strdup(&g, "general.name", &name, &ignored);
    gguf_get_strdup(&g, "tokenizer.chat_template", &tmpl, &ignored);
    gguf_close(&g);
    char *text = default_text(name, tmpl, template_name, what, prose, err);
    free(name);
    free(tmpl);
    return text;
}

void eval_note_domain(const char *cmd, double ppl, int n_vocab) {
    if (ppl > n_vocab / 4.0)
        fprintf(stderr, "%s: note: perplexity %.0f is above a quarter of the vocabulary (%d tokens): the text is "
                "probably not this model's domain, and the figure says little; pass -f TEXT\n", cmd, ppl, n_vocab);
}

void eval_note_dialogues(const char *cmd) {
    fprintf(stderr, "%s: note: every token of the dialogues is scored, the driver's words too, which the assistant "
            "is not trained to predict: the figure is mostly theirs. The perplexity of its own replies is "
            "cabin eval-assistant's \"reply PPL\".\n", cmd);
}
