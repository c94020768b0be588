// JSON schema -> matcher -> token filter (engine/json_schema.h).
#include "engine/json_schema.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/utf8.h"
#include "engine/model.h"
#include "engine/tokenizer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 256
#define MAX_PROPS 64
#define MAX_ITEMS 64        // array items written at most, so a reply ends
#define MAX_DIGITS 15

typedef enum jkind { J_OBJECT, J_FREE_OBJECT, J_ARRAY, J_STRING, J_INTEGER, J_NUMBER, J_LITERALS, J_ANY } jkind;

typedef struct jnode {
    jkind kind;
    bool tool_call;         // object: {"name": one of the literals, "arguments": args[the one chosen]}
    struct jnode **args;
    int n;                  // properties (object) or literals
    char **text;            // object: each key as written, quotes included ("\"name\""); literals: each one
    struct jnode **val;     // object: each property's value
    bool *required;
    struct jnode *items;    // array
    int max_len;            // string
} jnode;

struct json_schema {
    jnode *root;
    jnode *nodes[MAX_NODES];
    int n_nodes;
    jnode any, free_object, any_array, any_string, any_number, keywords;   // what J_ANY becomes
};

static jnode *new_node(json_schema *s, jkind kind, errbuf *err) {
    if (s->n_nodes == MAX_NODES) {
        err_set(err, "the schema has more than %d parts", MAX_NODES);
        return NULL;
    }
    jnode *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    n->max_len = JSON_SCHEMA_STRING_MAX;
    s->nodes[s->n_nodes++] = n;
    return n;
}

static void add_text(jnode *n, const char *t) {
    n->text = xrealloc(n->text, (size_t)(n->n + 1) * sizeof *n->text);
    n->text[n->n++] = xstrdup(t);
}

// A string as JSON writes it ("\"a\\\"b\""), for keys and string literals.
static char *json_quoted(const char *s) {
    cJSON *j = cJSON_CreateString(s);
    char *p = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char *out = xstrdup(p ? p : "\"\"");
    cJSON_free(p);
    return out;
}

static const char *const KNOWN[] = { "type", "properties", "required", "items", "enum", "maxLength", "description", "title",
                                     "$schema", "default", "additionalProperties", "strict", NULL };

static jnode *compile(json_schema *s, const cJSON *j, const char *where, int depth, errbuf *err);

static jnode *compile_object(json_schema *s, const cJSON *j, const char *where, int depth, errbuf *err) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(j, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(j, "required");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(j, "additionalProperties");
    if (extra && !cJSON_IsFalse(extra) && props)
        return err_set(err, "%s: additionalProperties: only false (the properties named are written)", where), NULL;
    if (!props) return new_node(s, J_FREE_OBJECT, err);
    if (!cJSON_IsObject(props)) return err_set(err, "%s.properties: must be an object", where), NULL;
    if (req && !cJSON_IsArray(req)) return err_set(err, "%s.required: must be an array of names", where), NULL;
    jnode *n = new_node(s, J_OBJECT, err);
    if (!n) return NULL;
    int count = cJSON_GetArraySize(props);
    if (count > MAX_PROPS) return err_set(err, "%s: more than %d properties", where, MAX_PROPS), NULL;
    n->val = xcalloc((size_t)count + 1, sizeof *n->val);
    n->required = xcalloc((size_t)count + 1, sizeof *n->required);
    for (const cJSON *p = props->child; p; p = p->next) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", where, p->string);
        int i = n->n;
        char *key = json_quoted(p->string);
        add_text(n, key);
        free(key);
        if (!(n->val[i] = compile(s, p, sub, depth + 1, err))) return NULL;
        for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
            if (cJSON_IsString(r) && strcmp(r->valuestring, p->string) == 0) n->required[i] = true;
    }
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
        if (!cJSON_IsString(r)) return err_set(err, "%s.required: must name properties", where), NULL;
        if (!cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
            return err_set(err, "%s.required: '%.60s' is not one of the properties", where, r->valuestring), NULL;
    }
    return n;
}

static jnode *compile(json_schema *s, const cJSON *j, const char *where, int depth, errbuf *err) {
    if (depth >= JSON_SCHEMA_DEPTH - 1) return err_set(err, "%s: nested deeper than %d", where, JSON_SCHEMA_DEPTH - 2), NULL;
    if (!cJSON_IsObject(j)) return err_set(err, "%s: a schema must be an object", where), NULL;
    for (const cJSON *k = j->child; k; k = k->next) {
        int i = 0;
        while (KNOWN[i] && strcmp(KNOWN[i], k->string) != 0) i++;
        if (!KNOWN[i]) return err_set(err, "%s: '%.60s' is not supported (docs/SERVE.md lists the subset)", where, k->string), NULL;
    }
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(j, "enum");
    if (en) {
        if (!cJSON_IsArray(en) || cJSON_GetArraySize(en) == 0) return err_set(err, "%s.enum: must be a non-empty array", where), NULL;
        jnode *n = new_node(s, J_LITERALS, err);
        if (!n) return NULL;
        for (const cJSON *v = en->child; v; v = v->next) {
            if (!cJSON_IsString(v)) return err_set(err, "%s.enum: only strings are supported", where), NULL;
            char *q = json_quoted(v->valuestring);
            add_text(n, q);
            free(q);
        }
        return n;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsString(type)) return err_set(err, "%s: needs a \"type\" (or an \"enum\")", where), NULL;
    const char *t = type->valuestring;
    if (strcmp(t, "object") == 0) return compile_object(s, j, where, depth, err);
    if (strcmp(t, "array") == 0) {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items");
        jnode *n = new_node(s, J_ARRAY, err);
        if (!n) return NULL;
        char sub[256];
        snprintf(sub, sizeof sub, "%s[]", where);
        n->items = items ? compile(s, items, sub, depth + 1, err) : &s->any;
        return n->items ? n : NULL;
    }
    if (strcmp(t, "string") == 0) {
        jnode *n = new_node(s, J_STRING, err);
        const cJSON *ml = cJSON_GetObjectItemCaseSensitive(j, "maxLength");
        if (n && ml) {
            if (!cJSON_IsNumber(ml) || ml->valuedouble < 0 || ml->valuedouble > 4096)
                return err_set(err, "%s.maxLength: 0 to 4096", where), NULL;
            n->max_len = (int)ml->valuedouble;
        }
        return n;
    }
    if (strcmp(t, "integer") == 0) return new_node(s, J_INTEGER, err);
    if (strcmp(t, "number") == 0) return new_node(s, J_NUMBER, err);
    if (strcmp(t, "boolean") == 0 || strcmp(t, "null") == 0) {
        jnode *n = new_node(s, J_LITERALS, err);
        if (n && t[0] == 'b') add_text(n, "true"), add_text(n, "false");
        else if (n) add_text(n, "null");
        return n;
    }
    return err_set(err, "%s.type: '%.40s' is not supported (object, array, string, integer, number, boolean, null)", where, t), NULL;
}

json_schema *json_schema_compile(const char *schema_json, errbuf *err) {
    json_schema *s = xcalloc(1, sizeof *s);
    s->any.kind = J_ANY;
    s->free_object.kind = J_FREE_OBJECT;
    s->any_array.kind = J_ARRAY;
    s->any_array.items = &s->any;
    s->any_string.kind = J_STRING;
    s->any_string.max_len = JSON_SCHEMA_STRING_MAX;
    s->any_number.kind = J_NUMBER;
    s->keywords.kind = J_LITERALS;
    add_text(&s->keywords, "true");
    add_text(&s->keywords, "false");
    add_text(&s->keywords, "null");
    if (!schema_json) {
        s->root = &s->free_object;
        return s;
    }
    cJSON *j = cJSON_Parse(schema_json);
    if (!j) {
        err_set(err, "the schema is not valid JSON");
        json_schema_free(s);
        return NULL;
    }
    s->root = compile(s, j, "schema", 0, err);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (s->root && !(cJSON_IsString(type) && strcmp(type->valuestring, "object") == 0)) {
        err_set(err, "schema: the reply must be an object (\"type\": \"object\")");
        s->root = NULL;
    }
    cJSON_Delete(j);
    if (!s->root) {
        json_schema_free(s);
        return NULL;
    }
    return s;
}

json_schema *json_schema_compile_tools(const char *tools_json, const char *only, errbuf *err) {
    json_schema *s = json_schema_compile(NULL, err);
    cJSON *tools = cJSON_Parse(tools_json);
    jnode *call = new_node(s, J_OBJECT, err), *names = new_node(s, J_LITERALS, err);
    call->tool_call = true;
    add_text(call, "\"name\"");
    add_text(call, "\"arguments\"");
    call->val = xcalloc(2, sizeof *call->val);
    call->required = xcalloc(2, sizeof *call->required);
    call->required[0] = call->required[1] = true;
    call->val[0] = names;
    int n_tools = cJSON_GetArraySize(tools);
    call->args = xcalloc((size_t)n_tools + 1, sizeof *call->args);
    int i = 0;
    for (const cJSON *t = tools ? tools->child : NULL; t && i >= 0; t = t->next, i++) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        const cJSON *params = fn ? cJSON_GetObjectItemCaseSensitive(fn, "parameters") : NULL;
        if (!cJSON_IsString(name)) { err_set(err, "tools[%d]: a function without a name", i); i = -2; break; }
        if (only && strcmp(only, name->valuestring) != 0) { i--; continue; }
        char *q = json_quoted(name->valuestring), where[96];
        add_text(names, q);
        free(q);
        snprintf(where, sizeof where, "tools[%d].parameters", i);
        call->args[names->n - 1] = params ? compile(s, params, where, 1, err) : &s->free_object;
        if (!call->args[names->n - 1]) { i = -2; break; }
    }
    cJSON_Delete(tools);
    if (i >= 0 && names->n == 0) err_set(err, only ? "tool_choice: no function '%.60s' among the tools" : "tools: none given", only);
    if (i < 0 || names->n == 0) {
        json_schema_free(s);
        return NULL;
    }
    s->root = call;
    return s;
}

static void free_node_parts(jnode *n) {
    free(n->args);
    for (int i = 0; i < n->n; i++) free(n->text[i]);
    free(n->text);
    free(n->val);
    free(n->required);
}

void json_schema_free(json_schema *s) {
    if (!s) return;
    for (int i = 0; i < s->n_nodes; i++) {
        free_node_parts(s->nodes[i]);
        free(s->nodes[i]);
    }
    free_node_parts(&s->keywords);
    free(s);
}

// ---- the matcher ----
// Phases. Every kind starts at 0 (before its first byte, where spaces may stand).
enum { START = 0,
       O_KEY_OR_END, O_KEY_ONLY, O_KEY, O_COLON, O_VALUE, O_COMMA_OR_END,       // objects (both kinds)
       A_ITEM_OR_END, A_ITEM_ONLY, A_VALUE, A_COMMA_OR_END,                      // arrays
       S_IN, S_ESC, S_HEX, S_UTF8,                                               // strings
       N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP,              // numbers
       L_IN };                                                                   // literals

void json_match_init(json_match *m, const json_schema *s) {
    memset(m, 0, sizeof *m);
    m->schema = s;
    m->f[0].node = s->root;
    m->depth = 1;
}

bool json_match_done(const json_match *m) { return m->done; }

static bool push(json_match *m, const jnode *n) {
    if (m->depth == JSON_SCHEMA_DEPTH) return false;
    m->f[m->depth++] = (json_frame){ .node = n };
    return true;
}

// A value is complete: its parent goes on after it.
static void pop(json_match *m) {
    m->depth--;
    if (m->depth == 0) {
        m->done = true;
        return;
    }
    json_frame *p = &m->f[m->depth - 1];
    const jnode *pn = p->node;
    if (pn->tool_call && p->cand == 0) p->chosen = m->f[m->depth].cand;   // the function's name
    if (pn->kind == J_FREE_OBJECT && p->phase == O_KEY) p->phase = O_COLON;   // a free key was a string
    else if (pn->kind == J_ARRAY) p->phase = A_COMMA_OR_END, p->idx++;
    else p->phase = O_COMMA_OR_END;
}

// Whether any property from `from` on may be written next (none required is skipped).
static bool props_left(const jnode *n, int from) { return from < n->n; }
static bool required_left(const jnode *n, int from) {
    for (int i = from; i < n->n; i++)
        if (n->required[i]) return true;
    return false;
}

// A key byte: the candidates are the properties from idx up to the first required one.
static bool key_byte(json_frame *f, const jnode *n, unsigned char c) {
    for (int k = f->idx; k < n->n; k++) {
        if ((f->len == 0 || strncmp(n->text[k], n->text[f->cand], f->len) == 0) && (unsigned char)n->text[k][f->len] == c) {
            f->cand = (uint16_t)k;
            f->len++;
            return true;
        }
        if (n->required[k]) break;
    }
    return false;
}

static bool literal_byte(json_frame *f, const jnode *n, unsigned char c) {
    for (int k = 0; k < n->n; k++)
        if ((f->len == 0 || strncmp(n->text[k], n->text[f->cand], f->len) == 0) && (unsigned char)n->text[k][f->len] == c) {
            f->cand = (uint16_t)k;
            f->len++;
            return true;
        }
    return false;
}

static bool is_ws(unsigned char c) { return c == ' ' || c == '\n'; }
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Where a value may begin (phase START of any kind, and the places between parts): a space.
static bool between(const json_frame *f, const jnode *n) {
    if (f->phase == START) return true;
    switch (n->kind) {
    case J_OBJECT:
    case J_FREE_OBJECT: return f->phase == O_KEY_OR_END || f->phase == O_KEY_ONLY || f->phase == O_COLON || f->phase == O_COMMA_OR_END;
    case J_ARRAY: return f->phase != A_VALUE;
    default: return false;
    }
}

static bool feed_byte(json_match *m, unsigned char c) {
    for (;;) {
        if (m->depth == 0) return false;
        json_frame *f = &m->f[m->depth - 1];
        const jnode *n = f->node;
        if (is_ws(c) && between(f, n)) {
            if (m->ws >= 1) return false;
            m->ws++;
            return true;
        }
        if (f->phase == START && n->kind == J_ANY) {   // the first byte says what the value is
            const json_schema *s = m->schema;
            f->node = c == '{' ? &s->free_object : c == '[' ? &s->any_array : c == '"' ? &s->any_string
                    : c == '-' || is_digit(c) ? &s->any_number : &s->keywords;
            continue;
        }
        m->ws = 0;
        switch (n->kind) {
        case J_OBJECT:
        case J_FREE_OBJECT:
            switch (f->phase) {
            case START: if (c != '{') return false; f->phase = O_KEY_OR_END; return true;
            case O_KEY_OR_END:
                if (c == '}') {
                    if (n->kind == J_OBJECT && required_left(n, f->idx)) return false;
                    pop(m);
                    return true;
                }
                /* fall through */
            case O_KEY_ONLY:
                if (c != '"') return false;
                if (n->kind == J_FREE_OBJECT) {   // any key: a string of its own
                    f->phase = O_KEY;
                    if (!push(m, &m->schema->any_string)) return false;
                    m->f[m->depth - 1].phase = S_IN;
                    return true;
                }
                f->len = 0;
                if (!key_byte(f, n, c)) return false;
                f->phase = O_KEY;
                return true;
            case O_KEY:   // a property's key, quotes included
                if (!key_byte(f, n, c)) return false;
                if (n->text[f->cand][f->len] == 0) f->phase = O_COLON, f->idx = (uint16_t)(f->cand + 1);
                return true;
            case O_COLON:
                if (c != ':') return false;
                f->phase = O_VALUE;
                if (n->tool_call && f->cand == 1) return push(m, n->args[f->chosen]);   // the chosen function's arguments
                return push(m, n->kind == J_OBJECT ? n->val[f->cand] : &m->schema->any);
            case O_COMMA_OR_END:
                if (c == '}') {
                    if (n->kind == J_OBJECT && required_left(n, f->idx)) return false;
                    pop(m);
                    return true;
                }
                if (c != ',' || (n->kind == J_OBJECT && !props_left(n, f->idx))) return false;
                if (n->kind == J_FREE_OBJECT && ++f->idx > MAX_PROPS) return false;
                f->phase = O_KEY_ONLY;
                return true;
            default: return false;
            }
        case J_ARRAY:
            switch (f->phase) {
            case START: if (c != '[') return false; f->phase = A_ITEM_OR_END; return true;
            case A_ITEM_OR_END:
                if (c == ']') { pop(m); return true; }
                /* fall through */
            case A_ITEM_ONLY:
                f->phase = A_VALUE;
                if (!push(m, n->items)) return false;
                continue;   // the byte begins the item
            case A_COMMA_OR_END:
                if (c == ']') { pop(m); return true; }
                if (c != ',' || f->idx >= MAX_ITEMS) return false;
                f->phase = A_ITEM_ONLY;
                return true;
            default: return false;
            }
        case J_STRING:
            switch (f->phase) {
            case START: if (c != '"') return false; f->phase = S_IN; return true;
            case S_IN:   // len counts characters, as maxLength does
                if (c == '"') { pop(m); return true; }
                if (c < 0x20 || f->len >= n->max_len) return false;
                if (c >= 0x80) {   // a UTF-8 lead byte: cand = lead << 2 | continuation bytes to come
                    int more = utf8_lead_more(c);
                    if (more <= 0) return false;
                    f->cand = (uint16_t)(c << 2 | more);
                    f->phase = S_UTF8;
                }
                f->len++;
                if (c == '\\') f->phase = S_ESC;
                return true;
            case S_UTF8: {
                unsigned char lead = (unsigned char)(f->cand >> 2);
                int left = f->cand & 3;
                if (left == utf8_lead_more(lead) ? !utf8_second_ok(lead, c) : (c & 0xC0) != 0x80) return false;
                f->cand = (uint16_t)(lead << 2 | (left - 1));
                if (left == 1) f->phase = S_IN;
                return true;
            }
            case S_ESC:
                if (c == 'u') { f->phase = S_HEX; f->cand = 4; return true; }
                if (!strchr("\"\\/bfnrt", c) || c == 0) return false;
                f->phase = S_IN;
                return true;
            case S_HEX:
                if (!is_hex(c)) return false;
                if (--f->cand == 0) f->phase = S_IN;
                return true;
            default: return false;
            }
        case J_INTEGER:
        case J_NUMBER: {
            bool real = n->kind == J_NUMBER;
            bool whole = f->phase == N_ZERO || f->phase == N_INT || f->phase == N_FRAC || f->phase == N_EXP;
            int next = -1;
            switch (f->phase) {
            case START: next = c == '-' ? N_MINUS : c == '0' ? N_ZERO : is_digit(c) ? N_INT : -1; break;
            case N_MINUS: next = c == '0' ? N_ZERO : is_digit(c) ? N_INT : -1; break;
            case N_ZERO:
            case N_INT:
                next = f->phase == N_INT && is_digit(c) ? N_INT : real && c == '.' ? N_DOT : real && (c == 'e' || c == 'E') ? N_E : -1;
                break;
            case N_DOT: next = is_digit(c) ? N_FRAC : -1; break;
            case N_FRAC: next = is_digit(c) ? N_FRAC : c == 'e' || c == 'E' ? N_E : -1; break;
            case N_E: next = c == '+' || c == '-' ? N_ESIGN : is_digit(c) ? N_EXP : -1; break;
            case N_ESIGN:
            case N_EXP: next = is_digit(c) ? N_EXP : -1; break;
            default: return false;
            }
            if (next >= 0) {
                if (is_digit(c) && ++f->len > MAX_DIGITS) return false;
                f->phase = (uint8_t)next;
                return true;
            }
            if (!whole) return false;
            pop(m);   // the number ended before this byte: it belongs to what holds the number
            continue;
        }
        case J_LITERALS:
            if (!literal_byte(f, n, c)) return false;
            f->phase = L_IN;
            if (n->text[f->cand][f->len] == 0) pop(m);
            return true;
        case J_ANY: return false;
        }
        return false;
    }
}

bool json_match_feed(json_match *m, const char *s, size_t n) {
    json_match t = *m;
    for (size_t i = 0; i < n; i++)
        if (!feed_byte(&t, (unsigned char)s[i])) return false;
    *m = t;
    return true;
}

// ---- the token filter ----
struct json_vocab {
    int n_vocab;
    char **piece;           // each token's text (NULL: none, a special token or a byte twin)
    uint16_t *len;
    uint8_t *plain;         // the text has no '"', '\\' or control byte: it may stand inside a string
    uint8_t *eog;
    int32_t *by_first;      // token ids ordered by their text's first byte ...
    int first_at[257];      // ... byte b's tokens at by_first[first_at[b] .. first_at[b + 1])
};

struct json_filter {
    const json_vocab *v;
    json_match m;
    bool broken;            // a token outside the language was taken (the mask left nothing)
    int calls;
    double secs;
    float *probe;           // v->n_vocab: the mask json_forced found (0 or -INFINITY), if probe_valid:
    bool probe_valid;       // the next json_mask applies it
};

json_vocab *json_vocab_new(session *sess) {
    const model *mdl = session_model(sess);
    json_vocab *f = xcalloc(1, sizeof *f);
    int nv = f->n_vocab = session_n_vocab(sess);
    f->piece = xcalloc((size_t)nv, sizeof *f->piece);
    f->len = xcalloc((size_t)nv, sizeof *f->len);
    f->plain = xcalloc((size_t)nv, 1);
    f->eog = xcalloc((size_t)nv, 1);
    f->by_first = xmalloc((size_t)nv * sizeof *f->by_first);
    int count[257] = { 0 };
    char buf[256];
    bool *twin = xcalloc((size_t)nv, sizeof *twin);
    tokenizer_byte_twins(mdl->tok, twin);
    for (int32_t id = 0; id < nv; id++) {
        f->eog[id] = tokenizer_is_eog(mdl->tok, id);
        int32_t n = tokenizer_piece(mdl->tok, id, false, buf, (int32_t)sizeof buf);
        if (n <= 0 || n > (int32_t)sizeof buf || twin[id]) continue;   // (a byte twin: tokenizer_byte_twins)
        f->piece[id] = xstrndup(buf, (size_t)n);
        f->len[id] = (uint16_t)n;
        // plain: it may stand inside a string as it is (no quote, backslash or control byte, and
        // whole UTF-8 characters), so the mask lets it through there without feeding it
        bool plain = true;
        for (int k = 0; k < n && plain;) {
            unsigned char c = (unsigned char)buf[k];
            size_t len = utf8_valid_len(buf + k, (size_t)(n - k));
            if (c == '"' || c == '\\' || c < 0x20 || !len) plain = false;
            k += len ? (int)len : 1;
        }
        f->plain[id] = plain;
        count[(unsigned char)buf[0]]++;
    }
    for (int b = 0; b < 256; b++) f->first_at[b + 1] = f->first_at[b] + count[b];
    int at[256];
    memcpy(at, f->first_at, sizeof at);
    for (int32_t id = 0; id < nv; id++)
        if (f->piece[id]) f->by_first[at[(unsigned char)f->piece[id][0]]++] = id;
    free(twin);
    return f;
}

void json_vocab_free(json_vocab *f) {
    if (!f) return;
    for (int i = 0; i < f->n_vocab; i++) free(f->piece[i]);
    free(f->piece);
    free(f->len);
    free(f->plain);
    free(f->eog);
    free(f->by_first);
    free(f);
}

bool json_vocab_eog(const json_vocab *v, int32_t id) { return id >= 0 && id < v->n_vocab && v->eog[id]; }

json_filter *json_filter_new(const json_schema *s, const json_vocab *v) {
    json_filter *f = xcalloc(1, sizeof *f);
    f->v = v;
    json_match_init(&f->m, s);
    return f;
}

void json_filter_free(json_filter *f) {
    if (!f) return;
    free(f->probe);
    free(f);
}

static void json_mask(void *ud, float *logits, int n_vocab) {
    json_filter *f = ud;
    const json_vocab *v = f->v;
    int nv = n_vocab < v->n_vocab ? n_vocab : v->n_vocab;
    if (f->probe_valid) {   // what json_forced found for this very state
        f->probe_valid = false;
        for (int i = 0; i < nv; i++)
            if (f->probe[i] == -INFINITY) logits[i] = -INFINITY;
        return;
    }
    double t0 = now_sec();
    if (f->m.done || f->broken) {   // the value is whole: only the end
        for (int i = 0; i < nv; i++)
            if (!v->eog[i]) logits[i] = -INFINITY;
        f->calls++;
        f->secs += now_sec() - t0;
        return;
    }
    // which first bytes can continue the text: only their tokens are tried
    bool first_ok[256];
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        json_match t = f->m;
        first_ok[b] = json_match_feed(&t, &c, 1);
    }
    const json_frame *top = &f->m.f[f->m.depth - 1];
    const jnode *tn = top->node;
    bool in_string = tn->kind == J_STRING && top->phase == S_IN;
    int room = in_string ? tn->max_len - top->len : 0;
    for (int i = 0; i < nv; i++)
        if (!v->piece[i] || !first_ok[(unsigned char)v->piece[i][0]]) logits[i] = -INFINITY;
    for (int b = 0; b < 256; b++) {
        if (!first_ok[b]) continue;
        // the state after byte b, and which second bytes it takes: made when a token needs them
        json_match after_b;
        bool second_ok[256], have_second = false;
        for (int k = v->first_at[b]; k < v->first_at[b + 1]; k++) {
            int32_t id = v->by_first[k];
            if (id >= nv || v->len[id] == 1) continue;
            if (in_string && v->plain[id] && v->len[id] <= room) continue;   // plain text inside a string
            if (!have_second) {
                char c = (char)b;
                after_b = f->m;
                json_match_feed(&after_b, &c, 1);
                for (int b2 = 0; b2 < 256; b2++) {
                    char c2 = (char)b2;
                    json_match t = after_b;
                    second_ok[b2] = json_match_feed(&t, &c2, 1);
                }
                have_second = true;
            }
            if (!second_ok[(unsigned char)v->piece[id][1]]) {
                logits[id] = -INFINITY;
                continue;
            }
            json_match t = after_b;
            if (!json_match_feed(&t, v->piece[id] + 1, (size_t)v->len[id] - 1)) logits[id] = -INFINITY;
        }
    }
    f->calls++;
    f->secs += now_sec() - t0;
}

static void json_accept(void *ud, int32_t token, const char *piece, int len) {
    json_filter *f = ud;
    (void)token;
    f->probe_valid = false;
    if (f->m.done || f->broken) return;
    if (!json_match_feed(&f->m, piece, (size_t)len)) f->broken = true;
}

// The one token the language allows next (a key's rest, a closing bracket, the end), or -1; a
// probe that leaves more is kept for the next json_mask, which then costs nothing more.
static int32_t json_forced(void *ud) {
    json_filter *f = ud;
    int nv = f->v->n_vocab;
    f->probe_valid = false;
    if (!f->probe) f->probe = try_malloc((size_t)nv * sizeof *f->probe);
    if (!f->probe) return -1;
    memset(f->probe, 0, (size_t)nv * sizeof *f->probe);
    json_mask(f, f->probe, nv);
    int32_t only = -1;
    for (int i = 0; i < nv; i++) {
        if (f->probe[i] == -INFINITY) continue;
        if (only >= 0) { f->probe_valid = true; return -1; }
        only = i;
    }
    return only;
}

token_filter json_filter_token_filter(json_filter *f) { return (token_filter){ json_mask, json_accept, f, json_forced }; }

void json_filter_cost(const json_filter *f, int *calls, double *secs) {
    *calls = f->calls;
    *secs = f->secs;
}

bool json_filter_complete(const json_filter *f) { return f->m.done && !f->broken; }
