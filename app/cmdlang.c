// Command-language parsing, validation and the command table (see cmdlang.h).
#include "app/cmdlang.h"
#include "app/cmdlang_run.h"
#include "engine/backend.h"
#include "engine/kv_cache.h"
#include "engine/precision.h"
#include "engine/wtype.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHERE(l) (l)->file, (l)->line

static int v_file_exists(cmd_line *l, errbuf *err) {
    if (access(l->argv[0], R_OK) != 0)
        return err_set(err, "%s:%d: %s: file not found: %s", WHERE(l), l->def->name, l->argv[0]);
    return 0;
}

static int v_backend(cmd_line *l, errbuf *err) {
    errbuf e = {{0}};
    if (backend_check_name(l->argv[0], &e)) return err_set(err, "%s:%d: backend: %s", WHERE(l), e.msg);
    return 0;
}

static int v_precision(cmd_line *l, errbuf *err) {
    precision_plan p;
    errbuf e = {{0}};
    if (plan_parse_any(&p, l->rest, 0, &e)) return err_set(err, "%s:%d: precision: %s", WHERE(l), e.msg);
    return 0;
}

static int v_plan(cmd_line *l, errbuf *err) {
    if (strcmp(l->argv[0], "load") == 0) {
        precision_plan p;
        errbuf e = {{0}};
        if (plan_load(&p, l->argv[1], 0, &e)) return err_set(err, "%s:%d: plan load: %s", WHERE(l), e.msg);
        return 0;
    }
    if (strcmp(l->argv[0], "save") == 0) return 0;
    return err_set(err, "%s:%d: plan: expected 'plan load FILE' or 'plan save FILE'", WHERE(l));
}

static int v_kv(cmd_line *l, errbuf *err) {
    enum kv_format f;
    kv_policy p;
    if (kv_format_parse(l->argv[0], &f, err)) return err_prefix(err, "%s:%d: kv", WHERE(l));
    for (int i = 1; i < l->argc; i++)
        if (strncmp(l->argv[i], "policy=", 7) != 0 || kv_policy_parse(l->argv[i] + 7, &p, err))
            return err_set(err, "%s:%d: kv: '%s' is not policy=none|window:N|h2o:N|entropy:N", WHERE(l), l->argv[i]);
    return 0;
}

static int v_text(cmd_line *l, errbuf *err) {
    if (!l->rest[0]) return err_set(err, "%s:%d: %s: needs text", WHERE(l), l->def->name);
    return 0;
}

static int v_voice(cmd_line *l, errbuf *err) {
    if (v_file_exists(l, err)) return -1;
    size_t n = strlen(l->argv[0]);
    if (n < 5 || strcasecmp(l->argv[0] + n - 4, ".wav") != 0)
        return err_set(err, "%s:%d: voice: %s: expected a .wav file", WHERE(l), l->argv[0]);
    return 0;
}

static int v_number(cmd_line *l, errbuf *err) {
    char *end;
    l->number = strtod(l->argv[0], &end);
    if (*end || end == l->argv[0] || l->number < 0)
        return err_set(err, "%s:%d: %s: '%s' is not a non-negative number", WHERE(l), l->def->name, l->argv[0]);
    return 0;
}

static int v_expect(cmd_line *l, errbuf *err) {
    const char *kind = l->argv[0];
    if (strcmp(kind, "reply") == 0) {
        // the regex is everything between the first and the last '/' after "reply"
        const char *r = l->rest + 5;
        while (*r == ' ') r++;
        const char *end = strrchr(r, '/');
        if (*r != '/' || end == r)
            return err_set(err, "%s:%d: expect reply: the pattern must be written /REGEX/", WHERE(l));
        char *pat = xstrndup(r + 1, (size_t)(end - r - 1));
        int rc = regcomp(&l->re, pat, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[128];
            regerror(rc, &l->re, msg, sizeof msg);
            err_set(err, "%s:%d: expect reply: bad regex /%.64s/: %s", WHERE(l), pat, msg);
            free(pat);
            return -1;
        }
        free(pat);
        l->has_re = true;
        return 0;
    }
    if (strcmp(kind, "state") == 0) {
        if (l->argc != 2 || !strchr(l->argv[1], '='))
            return err_set(err, "%s:%d: expect state: expected FIELD=VALUE", WHERE(l));
        char field[96];
        snprintf(field, sizeof field, "%.*s", (int)(strchr(l->argv[1], '=') - l->argv[1]), l->argv[1]);
        vehicle *v = vehicle_new();
        char buf[64];
        int rc = vehicle_get(v, field, buf, sizeof buf);
        vehicle_free(v);
        if (rc) return err_set(err, "%s:%d: expect state: unknown vehicle field '%s'", WHERE(l), field);
        return 0;
    }
    if (strcmp(kind, "metric") == 0) {
        if (l->argc != 4) return err_set(err, "%s:%d: expect metric: expected NAME <|>|= VALUE", WHERE(l));
        double tmp;
        if (app_metric(NULL, l->argv[1], &tmp) < 0)
            return err_set(err, "%s:%d: expect metric: unknown metric '%s' (%s)", WHERE(l), l->argv[1], app_metric_names());
        if (strlen(l->argv[2]) != 1 || !strchr("<>=", l->argv[2][0]))
            return err_set(err, "%s:%d: expect metric: operator must be <, > or =", WHERE(l));
        l->op = l->argv[2][0];
        char *end;
        l->number = strtod(l->argv[3], &end);
        if (*end || end == l->argv[3]) return err_set(err, "%s:%d: expect metric: '%s' is not a number", WHERE(l), l->argv[3]);
        return 0;
    }
    return err_set(err, "%s:%d: expect: unknown kind '%s' (reply, state, metric)", WHERE(l), kind);
}

static int v_heatmap(cmd_line *l, errbuf *err) {
    for (int i = 0; i < l->argc; i++) {
        if (access(l->argv[i], R_OK) == 0) continue;
        int t = wtype_from_name(l->argv[i]);
        if (t < 0 || !wtype_get((uint32_t)t)->from_f32)
            return err_set(err, "%s:%d: heatmap: '%s' is neither a weight type nor a readable text file", WHERE(l), l->argv[i]);
    }
    return 0;
}

static int v_set(cmd_line *l, errbuf *err) {
    static const char *const keys[] = { "temp", "top_k", "top_p", "min_p", "max_tokens", "system", "speed", NULL };
    for (int i = 0; keys[i]; i++)
        if (strcmp(l->argv[0], keys[i]) == 0) return 0;
    return err_set(err, "%s:%d: set: unknown setting '%s' (temp, top_k, top_p, min_p, max_tokens, system, speed)",
                   WHERE(l), l->argv[0]);
}

static const cmd_def table[] = {
    { "model", "model PATH", "open another GGUF model (the conversation starts over)", 1, 1, v_file_exists, run_model },
    { "backend", "backend cpu|vulkan", "run on another backend (the conversation starts over)", 1, 1, v_backend, run_backend },
    { "precision", "precision SPEC", "switch weight precision live: q4_0, \"q4_0;q8_0:layers=0-3,ffn_down\", plan.json", 1, -1, v_precision, run_precision },
    { "plan", "plan load|save FILE", "load a precision plan (and switch to it) or save the current one", 2, 2, v_plan, run_plan },
    { "kv", "kv FORMAT [policy=P]", "KV cache format and eviction policy", 1, 2, v_kv, run_kv },
    { "say", "say TEXT", "a user turn (typed at a human pace in demo mode)", 1, -1, v_text, run_say },
    { "voice", "voice FILE.wav", "a spoken turn through the voice pipeline", 1, 1, v_voice, run_voice },
    { "expect", "expect reply /RE/ | state F=V | metric NAME <|>|= V", "check the last reply, the vehicle or a metric", 2, -1, v_expect, run_expect },
    { "wait", "wait MS", "pause", 1, 1, v_number, run_wait },
    { "note", "note TEXT", "a caption for demos", 1, -1, v_text, run_note },
    { "bench", "bench [N]", "decode N tokens (default 32) and report speed", 0, 1, NULL, run_bench },
    { "sweep", "sweep [WEIGHTS]", "speed, energy, size and KL for each weight precision (default f16,q8_0,q4_0); Pareto frontier marked", 0, 1, NULL, run_sweep },
    { "heatmap", "heatmap [TYPE] [TEXT.txt]", "sensitivity of every (layer, tensor) to TYPE (default q4_0) on a text", 0, 2, v_heatmap, run_heatmap },
    { "snapshot", "snapshot FILE", "write the screen (headless: the transcript) as text", 1, 1, NULL, run_snapshot },
    { "reset", "reset", "forget the conversation and reset the vehicle", 0, 0, NULL, run_reset },
    { "seed", "seed N", "sampling seed", 1, 1, v_number, run_seed },
    { "set", "set KEY VALUE", "temp, top_k, top_p, min_p, max_tokens, system, speed", 2, -1, v_set, run_set },
    { "stats", "stats", "print the session's figures", 0, 0, NULL, run_stats },
    { "include", "include FILE", "run another scene file here (path relative to the including file)", 1, 1, NULL, NULL },
    { "quit", "quit", "leave", 0, 0, NULL, run_quit },
    { "help", "help", "list the commands", 0, 0, NULL, run_help },
};
#define N_DEFS (int)(sizeof table / sizeof table[0])

const cmd_def *cmdlang_table(int *n) { *n = N_DEFS; return table; }

const char *cmdlang_complete(const char *prefix, int i) {
    size_t n = strlen(prefix);
    for (int k = 0; k < N_DEFS; k++)
        if (strncmp(table[k].name, prefix, n) == 0 && i-- == 0) return table[k].name;
    return NULL;
}

// Splits text into words; quotes group. Returns word count or -1 (unterminated quote).
static int split_words(char *buf, char **words, int max, char **name_end) {
    int n = 0;
    char *p = buf, *w = buf;
    *name_end = NULL;
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') break;
        if (n == max) return -2;
        char *start = w;
        bool quoted = false;
        while (*p && (quoted || (*p != ' ' && *p != '\t'))) {
            if (*p == '"') { quoted = !quoted; p++; continue; }
            if (!quoted && *p == '#') break;
            if (quoted && *p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
            *w++ = *p++;
        }
        if (quoted) return -1;
        words[n++] = start;
        if (n == 1) *name_end = p;
        if (*p) p++;
        *w++ = 0;
        if (*(p - 1) == '#') break;
    }
    return n;
}

int cmdlang_parse(const char *text, const char *file, int line, cmd_line *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    out->file = file;
    out->line = line;
    // the raw rest (after the first word), for say/note/expect/precision
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '#' || *p == '\n' || *p == '\r') return 0;
    const char *name_end = p;
    while (*name_end && *name_end != ' ' && *name_end != '\t' && *name_end != '\n' && *name_end != '\r') name_end++;
    char *buf = xstrdup(p);
    size_t bl = strlen(buf);
    while (bl && (buf[bl - 1] == '\n' || buf[bl - 1] == '\r')) buf[--bl] = 0;
    char *words[CMD_MAX_ARGS + 1], *ne;
    int n = split_words(buf, words, CMD_MAX_ARGS + 1, &ne);
    if (n == -1) { free(buf); return err_set(err, "%s:%d: unterminated quote", file, line); }
    if (n == -2) { free(buf); return err_set(err, "%s:%d: too many arguments (at most %d)", file, line, CMD_MAX_ARGS); }
    if (n == 0) { free(buf); return 0; }
    const cmd_def *def = NULL;
    for (int i = 0; i < N_DEFS && !def; i++)
        if (strcmp(table[i].name, words[0]) == 0) def = &table[i];
    if (!def) {
        int r = err_set(err, "%s:%d: unknown command '%s' (help lists them)", file, line, words[0]);
        free(buf);
        return r;
    }
    out->def = def;
    out->argc = n - 1;
    for (int i = 1; i < n; i++) out->argv[i - 1] = xstrdup(words[i]);
    free(buf);
    // rest: raw text after the name with one level of surrounding quotes removed, comment cut
    const char *r = name_end;
    while (*r == ' ' || *r == '\t') r++;
    out->rest = xstrdup(r);
    size_t rl = strlen(out->rest);
    while (rl && isspace((unsigned char)out->rest[rl - 1])) out->rest[--rl] = 0;
    if (rl >= 2 && out->rest[0] == '"' && out->rest[rl - 1] == '"') {
        // a single quoted argument: use its unescaped form
        if (out->argc == 1) { free(out->rest); out->rest = xstrdup(out->argv[0]); }
    } else {
        // cut a trailing comment outside quotes (not inside /regex/ — expect handles its own)
        if (strcmp(def->name, "expect") != 0) {
            bool q = false;
            for (size_t i = 0; out->rest[i]; i++) {
                if (out->rest[i] == '"') q = !q;
                if (!q && out->rest[i] == '#') { out->rest[i] = 0; break; }
            }
            rl = strlen(out->rest);
            while (rl && isspace((unsigned char)out->rest[rl - 1])) out->rest[--rl] = 0;
        }
    }
    if (out->argc < def->min_args || (def->max_args >= 0 && out->argc > def->max_args)) {
        int rr = err_set(err, "%s:%d: %s: wrong number of arguments (usage: %s)", file, line, def->name, def->usage);
        cmdlang_free(out);
        return rr;
    }
    if (def->validate && def->validate(out, err)) {
        cmdlang_free(out);
        return -1;
    }
    return 1;
}

void cmdlang_free(cmd_line *l) {
    for (int i = 0; i < l->argc; i++) free(l->argv[i]);
    free(l->rest);
    if (l->has_re) regfree(&l->re);
    memset(l, 0, sizeof *l);
}

int cmdlang_run(app_ctx *c, cmd_line *l, errbuf *err) {
    if (!l->def->run) return err_set(err, "%s:%d: %s: not available here", WHERE(l), l->def->name);
    return l->def->run(c, l, err);
}

int cmdlang_exec(app_ctx *c, const char *text, errbuf *err) {
    cmd_line l;
    int r = cmdlang_parse(text, "command line", 1, &l, err);
    if (r <= 0) return r;
    r = cmdlang_run(c, &l, err);
    cmdlang_free(&l);
    return r;
}
