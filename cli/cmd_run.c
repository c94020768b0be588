// cabin generate, cabin logits, cabin chat: commands that run a model through the session API.
#include "cli/chat.h"
#include "app/cmdlang.h"
#include "cli/commands.h"
#include "base/afile.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static session *open_session(run_opts *r, const char *cmd) {
    errbuf err = {{0}};
    r->s.model_path = run_opts_model(r);
    session *s = session_open(&r->s, &err);
    if (!s) fprintf(stderr, "%s: %s\n", cmd, err.msg);
    return s;
}

// Parses "1 2 3" or "1,2,3" into ids; returns count or -1.
static int parse_ids(const char *text, int32_t **out) {
    size_t cap = strlen(text) / 2 + 2;
    int32_t *ids = xmalloc(cap * sizeof(int32_t));
    int n = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 0x7fffffff) { free(ids); return -1; }
        ids[n++] = (int32_t)v;
        p = end;
    }
    *out = ids;
    return n;
}

#define MAX_SWITCHES 8
typedef struct gen_out {
    bool ids;
    int count;
    session *s;
    int n_switch;
    int switch_at[MAX_SWITCHES];
    precision_plan switch_plan[MAX_SWITCHES];
    const char *switch_spec[MAX_SWITCHES];
    bool failed;
} gen_out;

// --switch-at N=PLAN: after the N-th generated token, convert on the worker thread and swap the
// weights in before the next token is evaluated; the cache and the text so far are kept.
static void maybe_switch(gen_out *g) {
    for (int i = 0; i < g->n_switch; i++) {
        if (g->switch_at[i] != g->count) continue;
        errbuf err = {{0}};
        if (session_request_plan(g->s, &g->switch_plan[i], &err) != 0 || session_wait_switch(g->s) != 1) {
            session_stats st;
            session_get_stats(g->s, &st);
            fprintf(stderr, "\ncabin generate: switch to %s failed: %s\n", g->switch_spec[i],
                    err.msg[0] ? err.msg : st.last_switch_error);
            g->failed = true;
            continue;
        }
        session_stats st;
        session_get_stats(g->s, &st);
        fprintf(stderr, "%s[switched to %s after %d tokens: %d tensors in %.0f ms, weights now %.2f MiB%s]\n",
                g->ids ? "\n" : "", g->switch_spec[i], g->count, st.last_switch_tensors, st.last_switch_ms,
                (double)st.weight_bytes / (1 << 20),
                st.last_switch_upcast ? "; types above the file's are dequantized copies" : "");
    }
}

static bool print_token(void *ud, int32_t tok, const char *piece, int len) {
    gen_out *g = ud;
    if (g->ids) printf("%s%d", g->count ? " " : "", tok);
    else fwrite(piece, 1, (size_t)len, stdout);
    g->count++;
    fflush(stdout);
    maybe_switch(g);
    return true;
}

typedef struct generate_opts {
    const char *prompt;
    int n_predict;
    bool ids, stats;
    int n_switch;
    const char *switch_args[MAX_SWITCHES];
} generate_opts;

// --switch-at N=PLAN, repeatable: kept as given, checked once the model is open
static int add_switch(void *base, const char *v, errbuf *err) {
    generate_opts *o = base;
    if (o->n_switch == MAX_SWITCHES) return err_set(err, "at most %d --switch-at", MAX_SWITCHES);
    o->switch_args[o->n_switch++] = v;
    return 0;
}

#define GO(field) offsetof(generate_opts, field)
static const opt_def GENERATE_OPTS[] = {
    { "--prompt", "-p", OPT_STR, GO(prompt), "TEXT", "the prompt", NULL, NULL, NULL },
    { "--n-predict", "-n", OPT_INT, GO(n_predict), "N", "tokens to generate", NULL, NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
    { "--ids", NULL, OPT_FLAG, GO(ids), NULL, "print the generated token ids instead of text", NULL, NULL, NULL },
    { "--stats", NULL, OPT_FLAG, GO(stats), NULL, "print timing to stderr at the end", NULL, NULL, NULL },
    { "--switch-at", NULL, OPT_CALL, 0, "N=PLAN", "after N generated tokens switch the weights to PLAN (a\n"
      "precision plan: q4_0, \"q4_0;q8_0:layers=0-3\", plan.json);\nthe cache and the text so far are kept; repeatable",
      NULL, add_switch, NULL },
};

static const cmd_spec GENERATE_SPEC = {
    "cabin generate", "cabin generate [-m MODEL] -p PROMPT [-n N] [--temp T] [--seed S] [--ids]",
    "Raw completion of PROMPT (BOS added as the model says; special tokens parsed),\n"
    "streamed to stdout.\n",
};

int cmd_generate(int argc, char **argv) {
    generate_opts o = { .n_predict = 128 };
    run_opts r;
    run_opts_init(&r);
    opt_table own = OPT_TABLE(GENERATE_OPTS, &o);
    int prc = run_opts_parse_with(&GENERATE_SPEC, &own, &r, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const char *prompt = o.prompt;
    int n_predict = o.n_predict;
    bool ids = o.ids, stats = o.stats;
    gen_out g;
    memset(&g, 0, sizeof g);
    g.n_switch = o.n_switch;
    const char *const *switch_args = o.switch_args;
    if (!prompt) { fprintf(stderr, "cabin generate: no prompt (-p TEXT; see cabin generate --help)\n"); return 2; }
    session *s = open_session(&r, "cabin generate");
    if (!s) return 1;
    g.ids = ids;
    g.s = s;
    for (int i = 0; i < g.n_switch; i++) {
        const char *eq = strchr(switch_args[i], '=');
        char *end = NULL;
        long at = eq ? strtol(switch_args[i], &end, 10) : -1;
        errbuf perr = {{0}};
        if (!eq || end != eq || at < 1) {
            fprintf(stderr, "cabin generate: --switch-at %s: expected N=PLAN (e.g. 8=q4_0)\n", switch_args[i]);
            session_close(s);
            return 2;
        }
        if (plan_parse_any(&g.switch_plan[i], eq + 1, session_model(s)->hp.n_layer, &perr)) {
            fprintf(stderr, "cabin generate: --switch-at %s: %s\n", switch_args[i], perr.msg);
            session_close(s);
            return 2;
        }
        g.switch_at[i] = (int)at;
        g.switch_spec[i] = eq + 1;
    }
    errbuf err = {{0}};
    int rc = session_complete(s, prompt, n_predict, print_token, &g, &err);
    printf("\n");
    if (rc) fprintf(stderr, "cabin generate: %s\n", err.msg);
    if (stats) {
        session_stats st;
        session_get_stats(s, &st);
        fprintf(stderr, "prompt %d tokens, %.1f ms (%.1f tok/s); generated %d tokens, TTFT %.1f ms, "
                "decode %.2f tok/s; %s\n", st.prompt_tokens, st.prefill_ms, st.prefill_tps,
                st.gen_tokens, st.ttft_ms, st.decode_tps, st.backend);
    }
    session_close(s);
    return rc || g.failed ? 1 : 0;
}

typedef struct id_logit { int32_t id; float v; } id_logit;

static int cmp_desc(const void *x, const void *y) {
    const id_logit *a = x, *b = y;
    if (a->v != b->v) return a->v < b->v ? 1 : -1;
    return a->id - b->id;
}

typedef struct logits_opts { const char *prompt, *out_path, *token_ids; int top; } logits_opts;

#define LO(field) offsetof(logits_opts, field)
static const opt_def LOGITS_OPTS[] = {
    { "--prompt", "-p", OPT_STR, LO(prompt), "TEXT", "the prompt (BOS added as the model says)", NULL, NULL, NULL },
    { "--token-ids", NULL, OPT_STR, LO(token_ids), "\"1 2 3\"", "evaluate these ids instead of a prompt", NULL, NULL, NULL },
    { "--top", NULL, OPT_INT, LO(top), "K", "how many to print (0: none, with --out)", NULL, NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--out", NULL, OPT_STR, LO(out_path), "FILE", "also write all n_vocab logits as float32 little-endian", NULL, NULL, NULL, .writes = true },
};

static const cmd_spec LOGITS_SPEC = {
    "cabin logits", "cabin logits [-m MODEL] -p PROMPT [--top K] [--out FILE]",
    "Evaluates PROMPT as one batch and prints the last position's K largest logits\n"
    "as `id logit` lines, largest first.\n",
};

int cmd_logits(int argc, char **argv) {
    logits_opts o = { .top = 10 };
    run_opts r;
    run_opts_init(&r);
    opt_table own = OPT_TABLE(LOGITS_OPTS, &o);
    int prc = run_opts_parse_with(&LOGITS_SPEC, &own, &r, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const char *prompt = o.prompt, *out_path = o.out_path, *token_ids = o.token_ids;
    int top = o.top;
    if (!prompt && !token_ids) { fprintf(stderr, "cabin logits: no prompt (-p TEXT or --token-ids; see --help)\n"); return 2; }
    session *s = open_session(&r, "cabin logits");
    if (!s) return 1;
    int nv = session_n_vocab(s);
    const model *m = session_model(s);
    int32_t *ids = NULL;
    int n;
    if (token_ids) {
        n = parse_ids(token_ids, &ids);
        if (n <= 0) { fprintf(stderr, "cabin logits: --token-ids: not a list of token ids\n"); session_close(s); return 2; }
    } else {
        size_t len = strlen(prompt);
        ids = xmalloc((len + 16) * sizeof(int32_t));
        n = tokenizer_encode(m->tok, prompt, len, true, true, ids, (int32_t)len + 16);
        if (n <= 0) { fprintf(stderr, "cabin logits: the prompt gives no tokens\n"); free(ids); session_close(s); return 1; }
    }
    if (r.s.n_batch < n) {   // the prompt is evaluated as one batch, as the reference does
        session_close(s);
        r.s.n_batch = n;
        s = open_session(&r, "cabin logits");
        if (!s) { free(ids); return 1; }
    }
    float *logits = xmalloc((size_t)nv * sizeof(float));
    errbuf err = {{0}};
    int rc = session_eval(s, ids, n, logits, &err);
    if (rc) {
        fprintf(stderr, "cabin logits: %s\n", err.msg);
    } else {
        id_logit *all = xmalloc((size_t)nv * sizeof(id_logit));
        for (int i = 0; i < nv; i++) { all[i].id = i; all[i].v = logits[i]; }
        qsort(all, (size_t)nv, sizeof(id_logit), cmp_desc);
        for (int i = 0; i < top && i < nv; i++) printf("%d %.6f\n", all[i].id, (double)all[i].v);
        free(all);
        if (out_path) {
            if (afile_write_all(out_path, logits, (size_t)nv * sizeof(float), &err)) {
                fprintf(stderr, "cabin logits: %s\n", err.msg);
                rc = -1;
            }
        }
    }
    free(logits);
    free(ids);
    session_close(s);
    return rc ? 1 : 0;
}

// ---- chat (the loop is cli/chat.c) ----

static const opt_def CHAT_OPTS[] = {
    { "--system", NULL, OPT_STR, 0, "TEXT", "system prompt", NULL, NULL, NULL },
};

// cabin chat's help: the `/` commands are the command table's rows offered in chat.
static void chat_about(char *buf, size_t n) {
    int n_rows, o = snprintf(buf, n, "%s",
        "Chat in the terminal: line editing and history (saved in the XDG state dir),\n"
        "streamed replies; Ctrl-C stops a reply without leaving. Reads piped stdin too\n"
        "(one user turn per line; there SIGINT, like SIGTERM, stops the reply and ends chat).\nCommands:");
    const cmd_def *rows = cmdlang_table(&n_rows);
    for (int i = 0; i < n_rows && o > 0 && (size_t)o < n; i++)
        if (rows[i].offered & CMD_IN_CHAT) o += snprintf(buf + o, n - (size_t)o, " /%s", rows[i].name);
    if (o > 0 && (size_t)o < n)
        snprintf(buf + o, n - (size_t)o, "%s",
                 " (/help says what each does)\n"
                 "Replies in the assistant format (<act>ACTION</act> sentence) are applied to a\n"
                 "simulated vehicle; the action and the state change are shown apart.\n");
}

int cmd_chat(int argc, char **argv) {
    run_opts r;
    run_opts_init(&r);
    const char *system = NULL;
    opt_table own = OPT_TABLE(CHAT_OPTS, &system);
    char about[1024];
    chat_about(about, sizeof about);
    const cmd_spec spec = { "cabin chat", "cabin chat [-m MODEL] [--system TEXT] [options]", about };
    int prc = run_opts_parse_chat(&spec, &own, &r, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    r.s.system_prompt = system;
    r.s.context_hint = "/reset, or a larger --ctx";
    const char *path = run_opts_model(&r);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "cabin chat: %s: %s\n", path, strerror(errno));
        if (!r.model) fprintf(stderr, "cabin chat: the embedded default model is not built yet; "
                              "give a GGUF model with -m FILE\n");
        return 1;
    }
    r.s.model_path = path;
    return chat_run(&r.s, r.free_actions, r.governor);
}
