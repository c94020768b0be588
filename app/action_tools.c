// The car's actions as tools (app/action_tools.h), written from the grammar's schema.
#include "app/action_tools.h"
#include "app/action_grammar.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SLOTS 4

void action_tool_name(const char *intent, char *buf, size_t n) {
    snprintf(buf, n, "%s", intent);
    for (char *p = buf; *p; p++)
        if (*p == '.') *p = '_';
}

static int intent_of_tool(const char *name) {
    char t[64];
    for (int i = 1; i < action_schema_intents(); i++) {
        action_tool_name(action_schema_intent(i), t, sizeof t);
        if (strcmp(t, name) == 0) return i;
    }
    return -1;
}

bool action_tool_known(const char *name) { return intent_of_tool(name) > 0; }

// One slot's JSON schema from its value spec.
static cJSON *slot_schema(const action_schema_slot *s) {
    cJSON *p = cJSON_CreateObject();
    const char *v = s->values;
    double lo = 0, hi = 0;
    if ((v[0] == '#' || v[0] == '%' || v[0] == '+') && sscanf(v + 1, "%lf-%lf", &lo, &hi) == 2) {
        cJSON_AddStringToObject(p, "type", v[0] == '%' ? "number" : "integer");
        if (v[0] == '+') {   // a change either way: -HI..-LO or LO..HI
            char d[96];
            snprintf(d, sizeof d, "a change up or down, %g to %g either way", lo, hi);
            cJSON_AddStringToObject(p, "description", d);
            lo = -hi;
        }
        if (v[0] == '%') cJSON_AddNumberToObject(p, "multipleOf", 0.5);
        cJSON_AddNumberToObject(p, "minimum", lo);
        cJSON_AddNumberToObject(p, "maximum", hi);
        return p;
    }
    cJSON_AddStringToObject(p, "type", "string");
    if (v[0] == '*') {
        cJSON_AddStringToObject(p, "description", "words of the request (a place or a name)");
        return p;
    }
    cJSON *e = cJSON_AddArrayToObject(p, "enum");
    char word[64];
    for (const char *q = v; *q;) {
        size_t k = strcspn(q, "|");
        snprintf(word, sizeof word, "%.*s", (int)k, q);
        cJSON_AddItemToArray(e, cJSON_CreateString(word));
        q += k + (q[k] == '|');
    }
    return p;
}

char *action_tools_json(void) {
    cJSON *tools = cJSON_CreateArray();
    for (int i = 1; i < action_schema_intents(); i++) {
        char name[64], desc[128];
        const char *intent = action_schema_intent(i);
        action_tool_name(intent, name, sizeof name);
        snprintf(desc, sizeof desc, "The car's %s (cabin's simulated vehicle).", intent);
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "type", "function");
        cJSON *fn = cJSON_AddObjectToObject(t, "function");
        cJSON_AddStringToObject(fn, "name", name);
        cJSON_AddStringToObject(fn, "description", desc);
        cJSON *params = cJSON_AddObjectToObject(fn, "parameters");
        cJSON_AddStringToObject(params, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(params, "properties");
        cJSON *req = cJSON_AddArrayToObject(params, "required");
        action_schema_slot s[MAX_SLOTS];
        int n = action_schema_slots(i, s, MAX_SLOTS);
        for (int k = 0; k < n; k++) {
            cJSON_AddItemToObject(props, s[k].key, slot_schema(&s[k]));
            bool alone = !(k + 1 < n && s[k + 1].group == s[k].group) && !(k > 0 && s[k - 1].group == s[k].group);
            if (alone) cJSON_AddItemToArray(req, cJSON_CreateString(s[k].key));
        }
        cJSON_AddBoolToObject(params, "additionalProperties", false);
        cJSON_AddItemToArray(tools, t);
    }
    char *s = cJSON_PrintUnformatted(tools);
    cJSON_Delete(tools);
    char *out = xstrdup(s ? s : "[]");
    cJSON_free(s);
    return out;
}

char *action_tool_arguments(const action *a) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < a->n_slots; i++) {
        const char *v = a->slots[i].value;
        char *end = NULL;
        double d = strtod(v, &end);
        if (*v && end && *end == 0 && isfinite(d)) cJSON_AddNumberToObject(o, a->slots[i].key, d);
        else cJSON_AddStringToObject(o, a->slots[i].key, v);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    char *out = xstrdup(s ? s : "{}");
    cJSON_free(s);
    return out;
}

// Whether intent i's slot key is a signed change ("+2", "-2" in the action line).
static bool signed_slot(int i, const char *key) {
    action_schema_slot s[MAX_SLOTS];
    int n = action_schema_slots(i, s, MAX_SLOTS);
    for (int k = 0; k < n; k++)
        if (strcmp(s[k].key, key) == 0) return s[k].values[0] == '+';
    return false;
}

int action_from_tool_call(const char *name, const char *arguments, action *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    int i = intent_of_tool(name);
    if (i <= 0) return err_set(err, "no tool '%.60s' (GET /v1/cabin/tools lists them)", name);
    snprintf(out->intent, sizeof out->intent, "%s", action_schema_intent(i));
    cJSON *o = cJSON_Parse(arguments);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return err_set(err, "%s: the arguments are not a JSON object", name);
    }
    int rc = 0;
    for (const cJSON *f = o->child; f && !rc; f = f->next) {
        if (out->n_slots == ACTION_MAX_SLOTS) rc = err_set(err, "%s: too many arguments", name);
        else if (!cJSON_IsNumber(f) && !cJSON_IsString(f)) rc = err_set(err, "%s: argument %.32s is not a number or a string", name, f->string);
        else {
            action_slot *s = &out->slots[out->n_slots++];
            snprintf(s->key, sizeof s->key, "%s", f->string);
            bool whole = cJSON_IsNumber(f) && f->valuedouble == floor(f->valuedouble) && fabs(f->valuedouble) < 1e9;
            if (cJSON_IsString(f)) snprintf(s->value, sizeof s->value, "%s", f->valuestring);
            else if (whole) snprintf(s->value, sizeof s->value, signed_slot(i, f->string) ? "%+.0f" : "%.0f", f->valuedouble);
            else snprintf(s->value, sizeof s->value, "%g", f->valuedouble);
        }
    }
    cJSON_Delete(o);
    return rc;
}

void action_call_on_action(void *ud, const action *a, const char *desc) {
    action_call *c = ud;
    if (strcmp(a->intent, "none") == 0) return;
    action_tool_name(a->intent, c->name, sizeof c->name);
    snprintf(c->desc, sizeof c->desc, "%s", desc);
    free(c->args);
    c->args = action_tool_arguments(a);
}

void action_call_on_change(void *ud, const action *a, const char *change) {
    (void)a;
    action_call *c = ud;
    snprintf(c->change, sizeof c->change, "%s", change);
}

void action_call_on_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    (void)a, (void)sentence;
    action_call *c = ud;
    c->refused = true;
    snprintf(c->reason, sizeof c->reason, "%s", reason);
}

void action_call_free(action_call *c) {
    free(c->args);
    c->args = NULL;
}

char *action_call_result(const action_call *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "action", c->desc);
    if (c->refused) cJSON_AddStringToObject(o, "refused", c->reason);
    else cJSON_AddStringToObject(o, "vehicle", c->change);
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    char *out = xstrdup(js ? js : "{}");
    cJSON_free(js);
    return out;
}

bool reply_split_feed(reply_split *r, const char *piece, size_t len, void (*on_line)(void *ud, const char *line, size_t n),
                      bool (*on_text)(void *ud, const char *s, size_t n), void *ud) {
    strbuf_append(&r->text, piece, len);
    const char *t = r->text.s;
    if (!r->decided) {
        const char *p = t;
        while (*p == ' ' || *p == '\n') p++;
        size_t have = strlen(p);
        if (have < 5 && strncmp(p, "<act>", have) == 0) return true;   // may still become the tag
        r->decided = true;
        r->is_action = strncmp(p, "<act>", 5) == 0;
    }
    if (r->is_action && r->sent == 0) {
        const char *close = strstr(t, "</act>");
        if (!close) return true;
        const char *open = strstr(t, "<act>") + 5;
        if (on_line) on_line(ud, open, (size_t)(close - open));
        r->sent = (size_t)(close + 6 - t);
    }
    if (r->is_action && !r->sentence_started) {
        while (r->sent < r->text.len && t[r->sent] == ' ') r->sent++;
        r->sentence_started = r->sent < r->text.len;
    }
    if (r->sent >= r->text.len) return true;
    size_t from = r->sent;
    r->sent = r->text.len;
    return on_text(ud, t + from, r->text.len - from);
}

void reply_split_finish(reply_split *r, bool (*on_text)(void *ud, const char *s, size_t n), void *ud) {
    if (r->sent == 0 && r->text.len) {
        r->sent = r->text.len;
        on_text(ud, r->text.s, r->text.len);
    }
}

void reply_split_free(reply_split *r) { strbuf_free(&r->text); }
