// Command-language parsing, validation and the command table (see cmdlang.h).
#include "app/cmdlang.h"
#include "app/verbs.h"
#include "engine/backend.h"
#include "engine/kv_cache.h"
#include "engine/precision.h"
#include "engine/wtype.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

// glibc compiles a POSIX regex into an automaton that copies each repeated part, then works out
// for each node the nodes reachable without reading a character. "(x{32767}){32767}" takes
// gigabytes, so does a "+" nested twenty deep (each doubles), some thousands of nested groups
// overflow the stack, and a repeat of something that can match nothing is worse: the closures
// grow as the square of the copies ("(()+){680}": 4.7 s) or the compile time doubles with each
// copy ("(()*|()*){20}": 1.7 s, {100} past a minute). A back-reference makes matching
// exponential. A scene pattern is therefore refused when it holds a back-reference, repeats
// something that can match nothing, nests groups more than REGEX_MAX_DEPTH deep, or expands past
// REGEX_MAX_NODES nodes, counted from above: an atom (a character, an escape, a bracket
// expression, an anchor) is one, a group one more than what it holds, "*" and "?" one more than
// what they follow, "+" doubles it and {m}, {m,}, {m,n} multiply it by m, m+1 and n. What passes
// compiles here within a few MiB and milliseconds.
#define REGEX_MAX_DEPTH 32
#define REGEX_MAX_NODES 2048.0

// The end of the bracket expression that starts at s ('['), or NULL when it does not close.
static const char *bracket_end(const char *s) {
    s++;
    if (*s == '^') s++;
    if (*s == ']') s++;   // a ']' first is a member
    for (; *s && *s != ']'; s++)
        if (*s == '[' && (s[1] == ':' || s[1] == '=' || s[1] == '.')) {   // [:class:] [=equiv=] [.coll.]
            const char *close = s + 2;
            while (*close && !(close[0] == s[1] && close[1] == ']')) close++;
            if (!*close) return NULL;
            s = close + 1;
        }
    return *s ? s : NULL;
}

// The bound {m}, {m,} or {m,n} at s ('{'): its factor (m, m+1, n; at least 1), whether it allows
// no copy (m == 0) and its end in *end; 0 when s does not start a bound (glibc then reads '{' as
// itself).
static double bound_factor(const char *s, const char **end, bool *allows_none) {
    char *p;
    if (!isdigit((unsigned char)s[1])) return 0;
    double m = (double)strtoul(s + 1, &p, 10), n = m;
    if (*p == ',') {
        n = m + 1;
        if (isdigit((unsigned char)p[1])) n = (double)strtoul(p + 1, &p, 10);
        else p++;
    }
    if (*p != '}') return 0;
    *end = p;
    *allows_none = m == 0;
    return m > n ? m : n > 1 ? n : 1;
}

// One open group while a pattern is read: its nodes so far, the last item's (what a repeat
// applies to), and whether the group can match nothing (an alternative done that can, or this
// one so far).
typedef struct re_group {
    double nodes, last;
    bool last_empty;      // the last item can match nothing
    bool alt_empty;       // the items of this alternative before the last can all match nothing
    bool some_alt_empty;  // an alternative done can match nothing
} re_group;

static const re_group RE_GROUP_OPEN = { 0, 0, true, true, false };

// 0 when PATTERN is within the limits above, else -1 with the reason in WHY.
static int regex_within_limits(const char *pattern, char *why, size_t why_size) {
    re_group g[REGEX_MAX_DEPTH + 1];
    int depth = 0;
    g[0] = RE_GROUP_OPEN;
    for (const char *s = pattern; *s; s++) {
        re_group *cur = &g[depth];
        double atom = 1;
        bool empty = false;   // the atom can match nothing
        if (*s == '\\' && s[1]) {
            s++;
            if (isdigit((unsigned char)*s)) return snprintf(why, why_size, "a back-reference (\\%c)", *s), -1;
            empty = strchr("bB<>`'", *s) != NULL;   // glibc's zero-width escapes
        } else if (*s == '[') {
            const char *e = bracket_end(s);
            if (!e) return 0;   // regcomp says what is wrong
            s = e;
        } else if (*s == '^' || *s == '$') {
            empty = true;
        } else if (*s == '(') {
            if (depth == REGEX_MAX_DEPTH)
                return snprintf(why, why_size, "groups nested more than %d deep", REGEX_MAX_DEPTH), -1;
            g[++depth] = RE_GROUP_OPEN;
            continue;
        } else if (*s == ')' && depth > 0) {
            atom = cur->nodes + 1;
            empty = cur->some_alt_empty || (cur->alt_empty && cur->last_empty);
            cur = &g[--depth];
        } else if (*s == '|') {
            cur->some_alt_empty |= cur->alt_empty && cur->last_empty;
            cur->alt_empty = cur->last_empty = true;
            cur->last = 0;
            continue;
        } else if (*s == '*' || *s == '?' || *s == '+' || *s == '{') {
            const char *e = s;
            bool none = *s != '+';
            const double f = *s == '+' ? 2 : *s == '{' ? bound_factor(s, &e, &none) : 1;
            if (f > 0) {
                if (cur->last > 0 && cur->last_empty)
                    return snprintf(why, why_size, "a repeat of something that can match nothing"), -1;
                const double loop = *s == '*' || *s == '?';   // the repeat's own node
                cur->nodes += cur->last * (f - 1) + loop;
                cur->last = cur->last * f + loop;
                cur->last_empty |= none;
                s = e;
                if (cur->nodes > REGEX_MAX_NODES) break;
                continue;
            }
        }
        cur->alt_empty &= cur->last_empty;   // a new item: the last one joins those before it
        cur->nodes += atom;
        cur->last = atom;
        cur->last_empty = empty;
        if (cur->nodes > REGEX_MAX_NODES) break;
    }
    double nodes = 0;
    for (int d = 0; d <= depth; d++) nodes += g[d].nodes;
    if (nodes > REGEX_MAX_NODES)
        return snprintf(why, why_size, "its repeats expand past %.0f nodes", REGEX_MAX_NODES), -1;
    return 0;
}

static int v_expect(cmd_line *l, errbuf *err) {
    const char *kind = l->argv[0];
    if (strcmp(kind, "reply") == 0) {
        // the regex is everything between the first and the last '/' after "reply"
        if (strncmp(l->rest, "reply", 5) != 0)
            return err_set(err, "%s:%d: expect reply: the pattern must be written /REGEX/", WHERE(l));
        const char *r = l->rest + 5;
        while (*r == ' ') r++;
        const char *end = strrchr(r, '/');
        if (*r != '/' || end == r)
            return err_set(err, "%s:%d: expect reply: the pattern must be written /REGEX/", WHERE(l));
        char *pat = xstrndup(r + 1, (size_t)(end - r - 1));
        char why[64];
        if (regex_within_limits(pat, why, sizeof why)) {
            err_set(err, "%s:%d: expect reply: regex /%.64s%s/ refused: %s", WHERE(l), pat, strlen(pat) > 64 ? "..." : "",
                    why);
            free(pat);
            return -1;
        }
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

static int v_compare(cmd_line *l, errbuf *err) {
    for (int i = 0; i < 2; i++) {
        precision_plan p;
        errbuf e = {{0}};
        if (plan_parse_any(&p, l->argv[i], 0, &e)) return err_set(err, "%s:%d: compare: plan %s: %s", WHERE(l), i ? "B" : "A", e.msg);
    }
    if (l->argc > 2 && access(l->argv[2], R_OK) != 0)
        return err_set(err, "%s:%d: compare: prompts file not found: %s", WHERE(l), l->argv[2]);
    return 0;
}

static int v_set(cmd_line *l, errbuf *err) {
    if (app_setting_known(l->argv[0])) return 0;
    return err_set(err, "%s:%d: set: unknown setting '%s' (%s)", WHERE(l), l->argv[0], app_setting_names());
}

// `help`: the commands the front end offers, with their help lines.
static int run_help(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    cmd_help_row rows[CMD_MAX_ROWS];
    int n = cmdlang_help_rows(c->front, "", rows, CMD_MAX_ROWS);
    for (int i = 0; i < n; i++) app_print(c, "  %-50s %s", rows[i].usage, rows[i].help);
    return 0;
}

#define SC CMD_IN_SCENE
#define WB CMD_IN_WORKBENCH
#define CH CMD_IN_CHAT
#define HT CMD_IN_HTTP
// The one table: every command of every front end. A new command is a row here and its `run`
// (app/app.c, declared in app/app.h), or a front end's own handler.
static const cmd_def table[] = {
    { "model", NULL, "model PATH", "open another GGUF model (the conversation starts over)", SC | WB, 1, 1, v_file_exists, run_model, NULL },
    { "backend", NULL, "backend NAME", "run on another backend (the conversation starts over)", SC | WB, 1, 1, v_backend, run_backend, NULL },
    { "precision", NULL, "precision SPEC", "switch weight precision live: q4_0, \"q4_0;q8_0:layers=0-3,ffn_down\", plan.json", SC | WB | HT, 1, -1, v_precision, run_precision, NULL },
    { "plan", NULL, "plan load|save FILE", "load a precision plan (and switch to it) or save the current one", SC | WB | HT, 2, 2, v_plan, run_plan, NULL },
    { "kv", NULL, "kv FORMAT [policy=P]", "KV cache format and eviction policy", SC | WB | HT, 1, 2, v_kv, run_kv, NULL },
    { "say", NULL, "say TEXT", "a user turn (typed at a human pace in demo mode)", SC | WB | HT, 1, -1, v_text, run_say, NULL },
    { "voice", NULL, "voice FILE.wav", "a spoken turn through the voice pipeline", SC | WB, 1, 1, v_voice, run_voice, NULL },
    { "expect", NULL, "expect reply /RE/ | state F=V | metric NAME <|>|= V", "check the last reply, the vehicle or a metric", SC | WB | HT, 2, -1, v_expect, run_expect, NULL },
    { "wait", NULL, "wait MS", "pause", SC | WB, 1, 1, v_number, run_wait, NULL },
    { "note", NULL, "note TEXT", "a caption for demos", SC | WB | HT, 1, -1, v_text, run_note, NULL },
    { "type", NULL, "type TEXT", "put TEXT in the input line as if typed, Enter not pressed (headless: printed)", SC | WB, 1, -1, v_text, run_type, NULL },
    { "bench", NULL, "bench [N]", "decode N tokens (default 32) and report speed", SC | WB | HT, 0, 1, NULL, run_bench, NULL },
    { "sweep", NULL, "sweep [WEIGHTS]", "speed, energy, size and KL for each weight precision (default f16,q8_0,q4_0); Pareto frontier marked", SC | WB | HT, 0, 1, NULL, run_sweep, NULL },
    { "compare", NULL, "compare A B [FILE]", "plans A and B on the same prompts (FILE, else the user turns so far): replies, speed, energy, KL, significance", SC | WB | CH | HT, 2, 3, v_compare, run_compare, NULL },
    { "heatmap", NULL, "heatmap [TYPE] [FILE]", "sensitivity of every (layer, tensor) to TYPE (default q4_0) on a text FILE, or a map FILE.json loaded (cabin heatmap --json)", SC | WB | HT, 0, 2, v_heatmap, run_heatmap, NULL },
    { "governor", NULL, "governor TARGET [kl<=K] [KNOB=V ...] | off | log [FILE.json] | plot FILE.svg", "hold tps>=N, watts<=W or "
      "j_per_token<=J (or kl<=K alone) with the least quality lost; no argument: its state (docs/GOVERNOR.md)",
      SC | WB | CH | HT, 0, -1, v_governor, run_governor, NULL },
    { "snapshot", NULL, "snapshot FILE", "write the screen as text (headless: the transcript); FILE.png: the window as a picture (cabin gui)", SC | WB, 1, 1, NULL, run_snapshot, NULL },
    { "save", NULL, "save FILE", "the conversation and the figures as JSON", WB, 1, 1, NULL, NULL, NULL },
    { "clear", NULL, "clear", "clear the conversation pane", WB, 0, 0, NULL, NULL, NULL },
    { "reset", NULL, "reset", "forget the conversation and reset the vehicle", SC | WB | CH | HT, 0, 0, NULL, run_reset, NULL },
    { "seed", NULL, "seed N", "sampling seed", SC | WB | HT, 1, 1, v_number, run_seed, NULL },
    { "set", NULL, "set KEY VALUE", "change a setting:", SC | WB | HT, 2, -1, v_set, run_set, app_setting_names },
    { "stats", NULL, "stats", "the session's figures (timing and memory of the last reply)", SC | WB | CH | HT, 0, 0, NULL, run_stats, NULL },
    { "car", NULL, "car", "the simulated vehicle's state", SC | WB | CH | HT, 0, 0, NULL, run_car, NULL },
    { "include", NULL, "include FILE", "run another scene file here (path relative to the including file)", SC, 1, 1, NULL, NULL, NULL },
    { "quit", "q exit", "quit", "leave", SC | WB | CH, 0, 0, NULL, run_quit, NULL },
    { "help", NULL, "help", "list the commands", SC | WB | CH | HT, 0, 0, NULL, run_help, NULL },
};
#undef SC
#undef WB
#undef CH
#define N_DEFS (int)(sizeof table / sizeof table[0])
_Static_assert(sizeof table / sizeof table[0] <= CMD_MAX_ROWS, "CMD_MAX_ROWS holds the whole table");

const cmd_def *cmdlang_table(int *n) { *n = N_DEFS; return table; }

const char *cmdlang_front_name(unsigned where) {
    return where == CMD_IN_SCENE ? "scene files" : where == CMD_IN_WORKBENCH ? "the workbench"
         : where == CMD_IN_CHAT ? "chat" : where == CMD_IN_HTTP ? "cabin serve's /v1/cabin/command" : "any front end";
}

// Whether name is d's name or one of its aliases.
static bool names(const cmd_def *d, const char *name) {
    if (strcmp(d->name, name) == 0) return true;
    size_t n = strlen(name);
    for (const char *a = d->aliases; a && *a; ) {
        size_t k = strcspn(a, " ");
        if (k == n && strncmp(a, name, n) == 0) return true;
        a += k;
        while (*a == ' ') a++;
    }
    return false;
}

static const cmd_def *find_any(const char *name) {
    for (int i = 0; i < N_DEFS; i++)
        if (names(&table[i], name)) return &table[i];
    return NULL;
}

const cmd_def *cmdlang_find(const char *name, unsigned where) {
    const cmd_def *d = find_any(name);
    return d && (!where || (d->offered & where)) ? d : NULL;
}

int (*cmdlang_own_handler(const cmd_own *own, const cmd_def *d))(void *, cmd_line *, errbuf *) {
    for (; own && own->name; own++)
        if (strcmp(own->name, d->name) == 0) return own->run;
    return NULL;
}

int cmdlang_check_own(const cmd_own *own, unsigned where, errbuf *err) {
    for (const cmd_own *o = own; o && o->name; o++) {
        const cmd_def *d = find_any(o->name);
        if (!d || strcmp(d->name, o->name) != 0)
            return err_set(err, "%s: a handler for '%s', which is no command of the table", cmdlang_front_name(where), o->name);
        if (!(d->offered & where))
            return err_set(err, "%s: a handler for '%s', which the table does not offer there", cmdlang_front_name(where), o->name);
    }
    for (int i = 0; i < N_DEFS; i++)   // what is offered runs somewhere
        if ((table[i].offered & where) && !table[i].run && !cmdlang_own_handler(own, &table[i]) && strcmp(table[i].name, "include") != 0)
            return err_set(err, "%s: '%s' is offered but nothing runs it", cmdlang_front_name(where), table[i].name);
    return 0;
}

const char *cmdlang_help(const cmd_def *d, char *buf, size_t n) {
    if (!d->arg_words) return d->help;
    snprintf(buf, n, "%s %s", d->help, d->arg_words());
    return buf;
}

int cmdlang_help_rows(unsigned where, const char *prefix, cmd_help_row *rows, int max) {
    int n = 0;
    for (int i = 0; i < N_DEFS && n < max; i++) {
        if (where && !(table[i].offered & where)) continue;
        snprintf(rows[n].usage, sizeof rows[n].usage, "%s%s", prefix, table[i].usage);
        const char *h = cmdlang_help(&table[i], rows[n].help, sizeof rows[n].help);
        if (h != rows[n].help) snprintf(rows[n].help, sizeof rows[n].help, "%s", h);
        n++;
    }
    return n;
}

const char *cmdlang_complete(const char *prefix, unsigned where, int i) {
    size_t n = strlen(prefix);
    for (int k = 0; k < N_DEFS; k++)
        if ((!where || (table[k].offered & where)) && strncmp(table[k].name, prefix, n) == 0 && i-- == 0) return table[k].name;
    return NULL;
}

// Splits text into words; quotes group. Returns the word count (words past max are counted, not
// stored) or -1 (unterminated quote).
static int split_words(char *buf, char **words, int max, char **name_end) {
    int n = 0;
    char *p = buf, *w = buf;
    *name_end = NULL;
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') break;
        char *start = w;
        bool quoted = false;
        while (*p && (quoted || (*p != ' ' && *p != '\t'))) {
            if (*p == '"') { quoted = !quoted; p++; continue; }
            if (!quoted && *p == '#') break;
            if (quoted && *p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
            *w++ = *p++;
        }
        if (quoted) return -1;
        if (n < max) words[n] = start;
        n++;
        if (n == 1) *name_end = p;
        bool comment = *p == '#';   // read before the terminator below may overwrite it
        if (*p) p++;
        *w++ = 0;
        if (comment) break;
    }
    return n;
}

int cmdlang_parse(const char *text, const char *file, int line, unsigned where, cmd_line *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    out->file = file;
    out->line = line;
    // the raw rest (after the first word), for say/note/expect/precision
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '#' || *p == '\n' || *p == '\r') return 0;
    char *buf = xstrdup(p);
    size_t bl = strlen(buf);
    while (bl && (buf[bl - 1] == '\n' || buf[bl - 1] == '\r')) buf[--bl] = 0;
    char *words[CMD_MAX_ARGS + 1], *ne;
    int n = split_words(buf, words, CMD_MAX_ARGS + 1, &ne);
    if (n == -1) { free(buf); return err_set(err, "%s:%d: unterminated quote", file, line); }
    if (n == 0) { free(buf); return 0; }
    const char *name_end = p + (ne - buf);   // where the name ended in text (a blank or a comment)
    const cmd_def *def = find_any(words[0]);
    if (!def) {
        int r = err_set(err, "%s:%d: unknown command '%s' (help lists them)", file, line, words[0]);
        free(buf);
        return r;
    }
    if (where && !(def->offered & where)) {
        int r = err_set(err, "%s:%d: %s: not offered in %s (help lists what is)", file, line, def->name, cmdlang_front_name(where));
        free(buf);
        return r;
    }
    // a command that reads its text whole (say, note) takes any number of words; its first
    // CMD_MAX_ARGS are its argv
    if (n > CMD_MAX_ARGS + 1 && def->max_args >= 0) {
        free(buf);
        return err_set(err, "%s:%d: %s: too many arguments (usage: %s)", file, line, def->name, def->usage);
    }
    if (n > CMD_MAX_ARGS + 1) n = CMD_MAX_ARGS + 1;
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

const char *cmdlang_for_person(const char *msg) {
    static const char typed[] = CMDLANG_TYPED ":1: ";
    return strncmp(msg, typed, sizeof typed - 1) == 0 ? msg + sizeof typed - 1 : msg;
}

int cmdlang_exec(app_ctx *c, const char *text, errbuf *err) {
    cmd_line l;
    int r = cmdlang_parse(text, CMDLANG_TYPED, 1, c->front, &l, err);
    if (r <= 0) return r;
    r = cmdlang_run(c, &l, err);
    cmdlang_free(&l);
    return r;
}
