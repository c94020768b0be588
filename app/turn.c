// One assistant turn (see turn.h).
#include "app/turn.h"
#include "app/govern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The reply grammar on a's session, bound to a's car (none with free actions).
static void bind_grammar(assistant *a) {
    a->grammar = a->free_actions ? NULL : action_grammar_new(a->s);
    action_grammar_set_car(a->grammar, a->car);
}

int assistant_open(assistant *a, const session_opts *o, bool free_actions, errbuf *err) {
    a->free_actions = free_actions;
    a->said = (strbuf){ 0 };
    a->s = session_open(o, err);
    if (!a->s) return -1;
    a->car = vehicle_new();
    bind_grammar(a);
    return 0;
}

int assistant_reopen(assistant *a, const session_opts *o, errbuf *err) {
    session *s = session_open(o, err);
    if (!s) return -1;   // the running session is kept
    session_close(a->s);
    a->s = s;
    gov_run_free(a->gov);   // its ladder and shadow belong to the model that was
    a->gov = NULL;
    action_grammar_free(a->grammar);
    bind_grammar(a);
    vehicle_reset(a->car);
    strbuf_clear(&a->said);   // a new conversation
    return 0;
}

int assistant_open_sibling(assistant *a, const assistant *first, errbuf *err) {
    memset(a, 0, sizeof *a);
    a->free_actions = first->free_actions;
    a->s = session_open_sibling(first->s, err);
    if (!a->s) return -1;
    a->car = first->car;
    bind_grammar(a);
    return 0;
}

void assistant_close_sibling(assistant *a) {
    a->car = NULL;   // first's
    assistant_close(a);
}

void assistant_close(assistant *a) {
    gov_run_free(a->gov);
    a->gov = NULL;
    action_grammar_free(a->grammar);
    session_close(a->s);
    vehicle_free(a->car);
    a->grammar = NULL;
    a->s = NULL;
    a->car = NULL;
    strbuf_free(&a->said);
}

void assistant_reset(assistant *a) {
    session_reset(a->s);
    vehicle_reset(a->car);
    strbuf_clear(&a->said);
}

bool action_is_query(const action *a) {
    return strcmp(a->intent, "status.query") == 0 || strcmp(a->intent, "nav.eta") == 0;
}

// The front end's callback, then the governor's hook (it may switch the plan or run a drift
// check before the next token).
typedef struct governed { assistant *a; token_cb cb; void *ud; } governed;

static bool governed_token(void *ud, int32_t tok, const char *piece, int len) {
    governed *g = ud;
    bool go_on = g->cb ? g->cb(g->ud, tok, piece, len) : true;
    if (g->a->gov) gov_run_token(g->a->gov, g->a->s, tok);   // a plan set by hand may stop it mid-reply
    return go_on;
}

int assistant_generate(assistant *a, const char *text, token_cb cb, void *ud, errbuf *err) {
    for (const char *p = text; *p; p++) strbuf_append(&a->said, *p == '\n' || *p == '\r' ? " " : p, 1);
    strbuf_puts(&a->said, "\n");
    if (!a->gov) return action_grammar_chat(a->grammar, a->s, text, cb, ud, err);
    governed g = { a, cb, ud };
    gov_run_turn_begin(a->gov);
    int rc = action_grammar_chat(a->grammar, a->s, text, governed_token, &g, err);
    if (a->gov) gov_run_turn_end(a->gov, a->s);
    return rc;
}

typedef struct turn_text { strbuf reply; const turn_hooks *h; } turn_text;

static bool collect_token(void *ud, int32_t tok, const char *piece, int len) {
    (void)tok;
    turn_text *t = ud;
    strbuf_append(&t->reply, piece, (size_t)len);
    return t->h->on_token ? t->h->on_token(t->h->ud, piece, len) : true;
}

int assistant_turn(assistant *a, const char *text, const turn_hooks *h, char **reply, errbuf *err) {
    turn_text t = { { 0 }, h };
    int rc = assistant_generate(a, text, collect_token, &t, err);
    *reply = t.reply.s ? t.reply.s : xcalloc(1, 1);
    if (rc == 0) assistant_act(a, *reply, h);
    return rc;
}

// Whether the reply leads with an action line (blanks and newlines before it allowed), as
// action_parse reads it.
static bool leads_with_act(const char *reply) {
    while (*reply == ' ' || *reply == '\n') reply++;
    return strncmp(reply, "<act>", 5) == 0;
}

void assistant_act(assistant *a, const char *reply, const turn_hooks *h) {
    action act;
    char sentence[1024], why[128], change[512], reason[256], desc[256];
    if (action_parse(reply, &act, sentence, sizeof sentence, why, sizeof why) != 0) {
        if (leads_with_act(reply) && h->on_not_understood) h->on_not_understood(h->ud, why);
        if (h->on_reply_text) h->on_reply_text(h->ud, reply);
        return;
    }
    action_format(&act, desc, sizeof desc);
    if (h->on_action) h->on_action(h->ud, &act, desc);
    if (vehicle_apply(a->car, &act, change, sizeof change, reason, sizeof reason) == 0) {
        if (h->on_vehicle_change) h->on_vehicle_change(h->ud, &act, change);
    } else if (h->on_refused) {
        h->on_refused(h->ud, &act, reason, sentence);
    }
    if (h->on_reply_text) h->on_reply_text(h->ud, sentence);
}

void assistant_act_line(assistant *a, const char *action_text, const turn_hooks *h) {
    char line[512];
    snprintf(line, sizeof line, "<act>%s</act>", action_text);
    turn_hooks no_text = *h;
    no_text.on_reply_text = NULL;
    assistant_act(a, line, &no_text);
}
