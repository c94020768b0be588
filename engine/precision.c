#include "precision.h"
#include "engine/json_text.h"
#include "wtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *const kind_names[TK_COUNT] = {
    "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "token_embd", "output",
};

const char *tensor_kind_name(int kind) { return kind >= 0 && kind < TK_COUNT ? kind_names[kind] : "?"; }

int tensor_kind_from_name(const char *name) {
    for (int i = 0; i < TK_COUNT; i++)
        if (strcmp(kind_names[i], name) == 0) return i;
    return -1;
}

void plan_init(precision_plan *p) {
    memset(p, 0, sizeof *p);
    p->default_type = p->token_embd_type = p->output_type = PLAN_KEEP;
}

#define ALL_LAYER_KINDS ((1u << TK_LAYER_KINDS) - 1)

static int parse_type(const char *name, const char *where, uint32_t *out, errbuf *err) {
    if (strcasecmp(name, "keep") == 0 || strcasecmp(name, "source") == 0) { *out = PLAN_KEEP; return 0; }
    int t = wtype_from_name(name);
    if (t < 0 || !wtype_get((uint32_t)t)->from_f32)
        return err_set(err, "%s: unknown or unsupported weight type '%s' (%s, keep)", where, name, wtype_supported_list());
    *out = (uint32_t)t;
    return 0;
}

static int parse_layers(const char *s, const char *where, int n_layer, int *lo, int *hi, errbuf *err) {
    if (strcmp(s, "all") == 0) { *lo = 0; *hi = INT_MAX - 1; return 0; }
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0 || errno) return err_set(err, "%s: bad layer range '%s' (all, N or A-B)", where, s);
    if (*end == '-') {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        if (end == q || errno) return err_set(err, "%s: bad layer range '%s' (all, N or A-B)", where, s);
    }
    if (*end) return err_set(err, "%s: bad layer range '%s' (all, N or A-B)", where, s);
    if (b < a) return err_set(err, "%s: layer range '%s' is empty", where, s);
    if (n_layer > 0 && b >= n_layer)
        return err_set(err, "%s: layer %ld is out of range (the model has layers 0-%d)", where, b, n_layer - 1);
    if (b > INT_MAX - 2) return err_set(err, "%s: layer range '%s' is too large", where, s);
    *lo = (int)a;
    *hi = (int)b;
    return 0;
}

static int add_rule(precision_plan *p, plan_rule r, const char *where, errbuf *err) {
    if (p->n_rules == PLAN_MAX_RULES) return err_set(err, "%s: more than %d rules", where, PLAN_MAX_RULES);
    for (int i = 0; i < p->n_rules; i++) {
        const plan_rule *o = &p->rules[i];
        if ((o->kinds & r.kinds) && o->layer_lo <= r.layer_hi && r.layer_lo <= o->layer_hi) {
            int k = __builtin_ctz(o->kinds & r.kinds);
            int l = o->layer_lo > r.layer_lo ? o->layer_lo : r.layer_lo;
            return err_set(err, "%s: overlaps rule %d (both name layer %d %s)", where, i, l, kind_names[k]);
        }
    }
    p->rules[p->n_rules++] = r;
    return 0;
}

// Parses a rule's tensor kinds from a kind name; layer kinds only.
static int kind_bit(const char *name, const char *where, uint32_t *mask, errbuf *err) {
    if (strcmp(name, "all") == 0) { *mask |= ALL_LAYER_KINDS; return 0; }
    int k = tensor_kind_from_name(name);
    if (k < 0) return err_set(err, "%s: unknown tensor kind '%s' (attn_q, attn_k, attn_v, attn_output, "
                              "ffn_gate, ffn_up, ffn_down, all)", where, name);
    if (k >= TK_LAYER_KINDS) return err_set(err, "%s: '%s' is not per layer: set it with the \"%s\" key", where, name, name);
    *mask |= 1u << k;
    return 0;
}

int plan_parse_json(precision_plan *out, const char *json, const char *where, int n_layer, errbuf *err) {
    precision_plan p;
    plan_init(&p);
    const char *at = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &at, true);   // text after the object is an error too
    if (!root) return err_set(err, "%s: not valid JSON (near offset %ld)", where, at ? (long)(at - json) : -1L);
    int rc = 0;
    char path[256];
    if (!cJSON_IsObject(root)) { rc = err_set(err, "%s: the plan must be a JSON object", where); goto done; }
    cJSON *item;
    cJSON_ArrayForEach(item, root) {
        const char *k = item->string;
        snprintf(path, sizeof path, "%s: %s", where, k);
        if (strcmp(k, "default") == 0 || strcmp(k, "token_embd") == 0 || strcmp(k, "output") == 0) {
            if (!cJSON_IsString(item)) { rc = err_set(err, "%s: must be a type name", path); goto done; }
            uint32_t *dst = k[0] == 'd' ? &p.default_type : k[0] == 't' ? &p.token_embd_type : &p.output_type;
            if ((rc = parse_type(item->valuestring, path, dst, err))) goto done;
            p.named |= k[0] == 'd' ? PLAN_SET_DEFAULT : k[0] == 't' ? PLAN_SET_EMBD : PLAN_SET_OUTPUT;
        } else if (strcmp(k, "rules") == 0) {
            if (!cJSON_IsArray(item)) { rc = err_set(err, "%s: must be an array", path); goto done; }
            int i = 0;
            cJSON *r;
            cJSON_ArrayForEach(r, item) {
                snprintf(path, sizeof path, "%s: rules[%d]", where, i);
                if (!cJSON_IsObject(r)) { rc = err_set(err, "%s: must be an object", path); goto done; }
                plan_rule rule = { 0, INT_MAX - 1, ALL_LAYER_KINDS, PLAN_KEEP };
                bool have_type = false;
                cJSON *f;
                cJSON_ArrayForEach(f, r) {
                    char fpath[300];
                    snprintf(fpath, sizeof fpath, "%s.%s", path, f->string);
                    if (strcmp(f->string, "layers") == 0) {
                        if (cJSON_IsNumber(f)) {
                            char num[32];
                            snprintf(num, sizeof num, "%d", f->valueint);
                            if ((rc = parse_layers(num, fpath, n_layer, &rule.layer_lo, &rule.layer_hi, err))) goto done;
                        } else if (!cJSON_IsString(f)) {
                            rc = err_set(err, "%s: must be \"all\", \"N\" or \"A-B\"", fpath);
                            goto done;
                        } else if ((rc = parse_layers(f->valuestring, fpath, n_layer, &rule.layer_lo, &rule.layer_hi, err))) {
                            goto done;
                        }
                    } else if (strcmp(f->string, "tensors") == 0) {
                        rule.kinds = 0;
                        if (cJSON_IsString(f)) {
                            if ((rc = kind_bit(f->valuestring, fpath, &rule.kinds, err))) goto done;
                        } else if (cJSON_IsArray(f)) {
                            int j = 0;
                            cJSON *t;
                            cJSON_ArrayForEach(t, f) {
                                char tpath[320];
                                snprintf(tpath, sizeof tpath, "%s[%d]", fpath, j++);
                                if (!cJSON_IsString(t)) { rc = err_set(err, "%s: must be a tensor kind name", tpath); goto done; }
                                if ((rc = kind_bit(t->valuestring, tpath, &rule.kinds, err))) goto done;
                            }
                            if (!rule.kinds) { rc = err_set(err, "%s: empty list", fpath); goto done; }
                        } else {
                            rc = err_set(err, "%s: must be \"all\" or a list of tensor kinds", fpath);
                            goto done;
                        }
                    } else if (strcmp(f->string, "type") == 0) {
                        if (!cJSON_IsString(f)) { rc = err_set(err, "%s: must be a type name", fpath); goto done; }
                        if ((rc = parse_type(f->valuestring, fpath, &rule.type, err))) goto done;
                        have_type = true;
                    } else {
                        rc = err_set(err, "%s: unknown key (layers, tensors, type)", fpath);
                        goto done;
                    }
                }
                if (!have_type) { rc = err_set(err, "%s: no \"type\"", path); goto done; }
                if ((rc = add_rule(&p, rule, path, err))) goto done;
                i++;
            }
        } else {
            rc = err_set(err, "%s: unknown key (default, token_embd, output, rules)", path);
            goto done;
        }
    }
    *out = p;
done:
    cJSON_Delete(root);
    return rc;
}

int plan_load(precision_plan *p, const char *path, int n_layer, errbuf *err) {
    char *text = read_file_all(path, NULL, err);
    if (!text) return -1;
    int rc = plan_parse_json(p, text, path, n_layer, err);
    free(text);
    return rc;
}

int plan_parse_shorthand(precision_plan *out, const char *spec, int n_layer, errbuf *err) {
    precision_plan p;
    plan_init(&p);
    char *copy = xstrdup(spec), *save = NULL;
    int rc = 0, idx = 0;
    for (char *part = strtok_r(copy, ";", &save); part && !rc; part = strtok_r(NULL, ";", &save), idx++) {
        char where[64];
        snprintf(where, sizeof where, "precision part %d '%.20s'", idx + 1, part);
        char *colon = strchr(part, ':');
        char *eq = strchr(part, '=');
        if (!colon && eq) {   // token_embd=q8_0 / output=q8_0
            *eq = 0;
            if (strcmp(part, "token_embd") == 0) {
                rc = parse_type(eq + 1, where, &p.token_embd_type, err);
                p.named |= PLAN_SET_EMBD;
            } else if (strcmp(part, "output") == 0) {
                rc = parse_type(eq + 1, where, &p.output_type, err);
                p.named |= PLAN_SET_OUTPUT;
            } else rc = err_set(err, "%s: unknown setting '%s' (token_embd=TYPE, output=TYPE)", where, part);
            continue;
        }
        if (!colon) { rc = parse_type(part, where, &p.default_type, err); p.named |= PLAN_SET_DEFAULT; continue; }
        *colon = 0;
        plan_rule rule = { 0, INT_MAX - 1, 0, PLAN_KEEP };
        if ((rc = parse_type(part, where, &rule.type, err))) break;
        char *save2 = NULL;
        for (char *tok = strtok_r(colon + 1, ",", &save2); tok && !rc; tok = strtok_r(NULL, ",", &save2)) {
            if (strncmp(tok, "layers=", 7) == 0) rc = parse_layers(tok + 7, where, n_layer, &rule.layer_lo, &rule.layer_hi, err);
            else rc = kind_bit(tok, where, &rule.kinds, err);
        }
        if (rc) break;
        if (!rule.kinds) rule.kinds = ALL_LAYER_KINDS;
        rc = add_rule(&p, rule, where, err);
    }
    free(copy);
    if (!rc) *out = p;
    return rc;
}

int plan_parse_any(precision_plan *p, const char *spec, int n_layer, errbuf *err) {
    const char *s = spec;
    while (*s == ' ' || *s == '\n') s++;
    if (*s == '{') return plan_parse_json(p, spec, "plan", n_layer, err);
    size_t n = strlen(spec);
    if (access(spec, F_OK) == 0 || (n > 5 && strcmp(spec + n - 5, ".json") == 0))
        return plan_load(p, spec, n_layer, err);
    return plan_parse_shorthand(p, spec, n_layer, err);
}

uint32_t plan_type_for(const precision_plan *p, int layer, int kind) {
    if (kind == TK_TOKEN_EMBD) return p->token_embd_type;
    if (kind == TK_OUTPUT) return p->output_type;
    for (int i = 0; i < p->n_rules; i++) {
        const plan_rule *r = &p->rules[i];
        if ((r->kinds & (1u << kind)) && layer >= r->layer_lo && layer <= r->layer_hi) return r->type;
    }
    return p->default_type;
}

int plan_add_layer_masks(precision_plan *p, const uint32_t *mask, int n_layer, uint32_t type, errbuf *err) {
    for (int l = 0; l < n_layer; ) {
        int e = l;
        while (e + 1 < n_layer && mask[e + 1] == mask[l]) e++;
        if (mask[l]) {
            if (p->n_rules == PLAN_MAX_RULES)
                return err_set(err, "plan: more than %d rules needed", PLAN_MAX_RULES);
            p->rules[p->n_rules++] = (plan_rule){ .layer_lo = l, .layer_hi = e, .kinds = mask[l], .type = type };
        }
        l = e + 1;
    }
    return 0;
}

int plan_from_cell_types(precision_plan *out, const precision_plan *base, const uint32_t *want,
                         int n_layer, errbuf *err) {
    plan_init(out);
    out->default_type = base->default_type;
    out->token_embd_type = base->token_embd_type;
    out->output_type = base->output_type;
    out->named = base->named;
    size_t nc = (size_t)n_layer * TK_LAYER_KINDS;
    uint32_t *mask = xcalloc((size_t)n_layer, sizeof *mask);
    bool *done = xcalloc(nc, sizeof *done);
    int rc = 0;
    // one pass per distinct type that differs from the default, in order of first appearance
    for (size_t i = 0; i < nc && !rc; i++) {
        uint32_t t = want[i];
        if (done[i] || t == out->default_type) continue;
        if (t == PLAN_KEEP) { rc = err_set(err, "plan: 'keep' for one tensor needs a default of 'keep'"); break; }
        memset(mask, 0, (size_t)n_layer * sizeof *mask);
        for (size_t j = i; j < nc; j++)
            if (!done[j] && want[j] == t) {
                mask[j / TK_LAYER_KINDS] |= 1u << (j % TK_LAYER_KINDS);
                done[j] = true;
            }
        rc = plan_add_layer_masks(out, mask, n_layer, t, err);
    }
    free(done);
    free(mask);
    return rc;
}

static const char *type_str(uint32_t t) { return t == PLAN_KEEP ? "keep" : wtype_name(t); }

char *plan_to_json(const precision_plan *p) {
    cJSON *root = cJSON_CreateObject();
    if (p->default_type != PLAN_KEEP || (p->named & PLAN_SET_DEFAULT))
        cJSON_AddStringToObject(root, "default", type_str(p->default_type));
    if (p->token_embd_type != PLAN_KEEP || (p->named & PLAN_SET_EMBD))
        cJSON_AddStringToObject(root, "token_embd", type_str(p->token_embd_type));
    if (p->output_type != PLAN_KEEP || (p->named & PLAN_SET_OUTPUT))
        cJSON_AddStringToObject(root, "output", type_str(p->output_type));
    cJSON *rules = cJSON_AddArrayToObject(root, "rules");
    for (int i = 0; i < p->n_rules; i++) {
        const plan_rule *r = &p->rules[i];
        cJSON *o = cJSON_CreateObject();
        char layers[48];
        if (r->layer_lo == 0 && r->layer_hi == INT_MAX - 1) snprintf(layers, sizeof layers, "all");
        else if (r->layer_lo == r->layer_hi) snprintf(layers, sizeof layers, "%d", r->layer_lo);
        else snprintf(layers, sizeof layers, "%d-%d", r->layer_lo, r->layer_hi);
        cJSON_AddStringToObject(o, "layers", layers);
        if (r->kinds == ALL_LAYER_KINDS) {
            cJSON_AddStringToObject(o, "tensors", "all");
        } else {
            cJSON *ks = cJSON_AddArrayToObject(o, "tensors");
            for (int k = 0; k < TK_LAYER_KINDS; k++)
                if (r->kinds & (1u << k)) cJSON_AddItemToArray(ks, cJSON_CreateString(kind_names[k]));
        }
        cJSON_AddStringToObject(o, "type", type_str(r->type));
        cJSON_AddItemToArray(rules, o);
    }
    return json_text(root, false);
}

int plan_save(const precision_plan *p, const char *path, errbuf *err) {
    char *json = plan_to_json(p);
    size_t n = strlen(json);
    json = xrealloc(json, n + 2);
    memcpy(json + n, "\n", 2);
    int rc = afile_write_all(path, json, n + 1, err);
    free(json);
    return rc;
}
