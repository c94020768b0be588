// Action exact-match on held-out assistant dialogues (what cabin eval-assistant counts and cabin
// compare reports for each plan), and the reference replies' likelihood.
#include "app/eval_actions.h"
#include "app/assistant.h"
#include "app/eval_text.h"
#include "engine/quality.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t assistant_header_id(const session *s, const chat_template *t) {
    const char *open = NULL;
    for (const char *p = t->user_suffix; (p = strstr(p, "<|")); p++) open = p;
    if (!open) return -1;
    const char *close = strstr(open, "|>");
    if (!close) return -1;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(close + 2 - open), open);
    return tokenizer_find(session_model(s)->tok, name);
}

// Teacher-forced negative log-likelihood of the reference replies of one dialogue (each reply
// and its closing token, given the conversation so far with the reference replies in it).
static int score_replies(session *s, const chat_template *tmpl, int32_t header, cJSON *turns,
                         double *nll, long *count, errbuf *err) {
    int nv = session_n_vocab(s);
    float *last = xmalloc((size_t)nv * sizeof(float));
    float *all = NULL;
    size_t all_cap = 0;
    bool first = true;
    int rc = 0;
    session_reset(s);
    cJSON *t;
    cJSON_ArrayForEach(t, turns) {
        const char *u = cJSON_GetObjectItem(t, "user")->valuestring, *want = cJSON_GetObjectItem(t, "reply")->valuestring;
        char *turn = chat_template_render_turn(tmpl, NULL, u, first, false);
        char *text = xmalloc(strlen(turn) + strlen(want) + strlen(tmpl->assistant_end) + 1);
        sprintf(text, "%s%s%s", turn, want, tmpl->assistant_end);
        free(turn);
        int32_t *ids = NULL;
        int n = session_tokenize(s, text, first, &ids, err);
        free(text);
        first = false;
        if (n < 0) { rc = -1; break; }
        int h = -1;
        for (int i = 0; i < n; i++)
            if (ids[i] == header) h = i;
        if (h < 0 || h + 1 >= n) { free(ids); rc = err_set(err, "reply scoring: no assistant header in a turn"); break; }
        if (session_eval(s, ids, h + 1, last, err)) { free(ids); rc = -1; break; }
        *nll -= quality_log_prob(last, nv, ids[h + 1]);
        (*count)++;
        int rest = n - h - 1;   // tokens after the header; the last one predicts nothing we score
        if ((size_t)rest * (size_t)nv > all_cap) { all_cap = (size_t)rest * (size_t)nv; all = xrealloc(all, all_cap * sizeof(float)); }
        if (session_eval_all(s, ids + h + 1, rest, all, err)) { free(ids); rc = -1; break; }
        for (int j = 0; j + 1 < rest; j++) {
            *nll -= quality_log_prob(all + (size_t)j * nv, nv, ids[h + 2 + j]);
            (*count)++;
        }
        free(ids);
    }
    free(last);
    free(all);
    return rc;
}

static void count_decode(decode_counts *d, const session_stats *st) {
    d->replies++;
    d->tokens += st->gen_tokens;
    d->passes += st->decode_passes;
    d->forced += st->forced_tokens;
}

// One turn: the model's reply against the reference. -1 with err on a generation error.
static int eval_turn(eval_run *e, int line_no, const char *user, const char *want_text, errbuf *err) {
    eval_counts *c = &e->c;
    strbuf reply = { 0 };
    session_stats st;
    session_get_stats(e->s, &st);
    bool first = st.n_past == 0;
    if (action_grammar_chat(e->grammar, e->s, user, session_collect_text, &reply, err)) {
        strbuf_free(&reply);
        return -1;
    }
    session_get_stats(e->s, &st);
    count_decode(&c->decode, &st);
    if (first) count_decode(&c->first, &st);
    char *got = reply.s ? reply.s : xcalloc(1, 1);
    if (e->replies) {   // one line per turn: a tab or newline the model wrote becomes a space
        for (char *p = got; *p; p++) if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
        fprintf(e->replies, "%d\t%s\t%s\t%s\n", line_no, user, want_text, got);
    }
    action ga, wa;
    char sent[512], perr[128];
    action_parse(want_text, &wa, sent, sizeof sent, perr, sizeof perr);
    if (action_parse(got, &ga, sent, sizeof sent, perr, sizeof perr) != 0) c->malformed++;
    c->turns++;
    if (action_equal(&ga, &wa)) {
        c->exact++;
        // Does the spoken sentence name the contact or place the car acts on?
        const char *name = action_slot_value(&ga, "contact");
        if (!name) name = action_slot_value(&ga, "dest");
        if (name) {
            char spoken[256];
            snprintf(spoken, sizeof spoken, "%s", name);
            for (char *p = spoken; *p; p++) if (*p == '_') *p = ' ';
            c->named++;
            if (strcasestr(sent, spoken)) c->named_ok++;
        }
    } else if (e->errors) {
        char wbuf[512], gbuf[512];
        action_format(&wa, wbuf, sizeof wbuf);
        action_format(&ga, gbuf, sizeof gbuf);
        fprintf(e->errors, "%d\t%s\t%s\t%s\n", line_no, user, wbuf, gbuf);
    }
    if (strcmp(ga.intent, wa.intent) == 0) c->intent_ok++;
    for (int i = 0; i < wa.n_slots; i++) {
        const char *v = action_slot_value(&ga, wa.slots[i].key);
        c->slots_total++;
        if (v && strcmp(v, wa.slots[i].value) == 0) c->slots_ok++;
    }
    free(got);
    return 0;
}

int eval_dialogues(eval_run *e, char *text, errbuf *err) {
    const char *file = e->file;
    int line_no = 0, rc = 0;
    if (e->progress) progress_start(&e->bar, stderr);
    for (char *line = strtok(text, "\n"); line && !rc; line = strtok(NULL, "\n")) {
        line_no++;
        if (!*line) continue;
        if (e->limit > 0 && e->dialogues >= e->limit) break;
        cJSON *d = heldout_dialogue(line, file, line_no, err);
        if (!d) {
            rc = -1;
            break;
        }
        cJSON *turns = cJSON_GetObjectItem(d, "turns");
        e->dialogues++;
        session_reset(e->s);
        cJSON *t;
        cJSON_ArrayForEach(t, turns) {
            cJSON *u = cJSON_GetObjectItem(t, "user"), *want = cJSON_GetObjectItem(t, "reply");
            if (!cJSON_IsString(u) || !cJSON_IsString(want)) {
                rc = err_set(err, "%s:%d: a turn lacks \"user\" or \"reply\"", file, line_no);
                break;
            }
            if (eval_turn(e, line_no, u->valuestring, want->valuestring, err)) {
                rc = err_prefix(err, "%s:%d", file, line_no);
                break;
            }
        }
        if (!rc && e->header >= 0 && score_replies(e->s, e->tmpl, e->header, turns, &e->reply_nll, &e->reply_tokens, err))
            rc = err_prefix(err, "%s:%d", file, line_no);
        cJSON_Delete(d);
        // every 20 dialogues on a terminal (one line rewritten), every 200 in a log
        if (e->progress && e->dialogues % (e->bar.tty ? 20 : 200) == 0)
            progress_report(&e->bar, e->dialogues, 0, "[%d dialogues] exact %.1f%%", e->dialogues,
                            100.0 * e->c.exact / (e->c.turns ? e->c.turns : 1));
    }
    if (e->progress) progress_end(&e->bar);
    return rc;
}

int eval_assistant_actions(session *s, const char *heldout, int limit, bool free_actions, eval_counts *out,
                           errbuf *err) {
    eval_run e = { .file = heldout, .limit = limit, .s = s, .header = -1 };
    char *text = read_file_all(heldout, NULL, err);
    if (!text) return -1;
    e.grammar = free_actions ? NULL : action_grammar_new(s);
    int rc = eval_dialogues(&e, text, err);
    action_grammar_free(e.grammar);
    session_set_filter(s, NULL);
    session_reset(s);
    free(text);
    *out = e.c;
    return rc;
}

