// The application layer behind the command language: a session, the simulated vehicle, a
// transcript, expectations. Front ends (headless scenes, the workbench) share it.
#include "app/action_grammar.h"
#include "app/cmdlang.h"
#include "app/cmdlang_run.h"
#include "engine/precision.h"
#include "engine/sensitivity.h"
#include "engine/wtype.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int app_open(app_ctx *c, const session_opts *o, errbuf *err) {
    c->opts = *o;
    c->model_path = xstrdup(o->model_path);
    c->opts.model_path = c->model_path;
    c->s = session_open(&c->opts, err);
    if (!c->s) return -1;
    c->grammar = c->free_actions ? NULL : action_grammar_new(c->s);
    c->car = vehicle_new();
    action_grammar_set_car(c->grammar, c->car);
    if (c->t0 == 0) c->t0 = now_sec();
    return 0;
}

void app_close(app_ctx *c) {
    action_grammar_free(c->grammar);
    c->grammar = NULL;
    session_close(c->s);
    vehicle_free(c->car);
    free(c->model_path);
    free(c->last_reply);
    free(c->transcript);
    if (c->heatmap) { sensitivity_map_free(c->heatmap); free(c->heatmap); c->heatmap = NULL; }
    c->s = NULL;
    c->car = NULL;
    c->model_path = c->last_reply = c->transcript = NULL;
}

static void transcript_add(app_ctx *c, const char *s, size_t n) {
    if (c->transcript_len + n + 1 > c->transcript_cap) {
        c->transcript_cap = (c->transcript_len + n + 1) * 2;
        c->transcript = xrealloc(c->transcript, c->transcript_cap);
    }
    memcpy(c->transcript + c->transcript_len, s, n);
    c->transcript_len += n;
    c->transcript[c->transcript_len] = 0;
}

void app_print(app_ctx *c, const char *fmt, ...) {
    char line[4096];
    int o = 0;
    if (c->timestamps) o = snprintf(line, sizeof line, "[%8.3f] ", now_sec() - c->t0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + o, sizeof line - (size_t)o, fmt, ap);
    va_end(ap);
    transcript_add(c, line, strlen(line));
    transcript_add(c, "\n", 1);
    if (c->out) { fprintf(c->out, "%s\n", line); fflush(c->out); }
}

typedef struct say_state { app_ctx *c; char *text; size_t len, cap; } say_state;

static bool say_token(void *ud, int32_t tok, const char *piece, int len) {
    (void)tok;
    say_state *st = ud;
    if (st->len + (size_t)len + 1 > st->cap) {
        st->cap = (st->len + (size_t)len + 1) * 2;
        st->text = xrealloc(st->text, st->cap);
    }
    memcpy(st->text + st->len, piece, (size_t)len);
    st->len += (size_t)len;
    st->text[st->len] = 0;
    if (st->c->on_token) st->c->on_token(st->c, piece, len);
    return true;
}


int app_say(app_ctx *c, const char *text, errbuf *err) {
    if (c->speed > 0 && c->out) {   // demo pacing: type the turn at a human pace (~12 chars/s)
        if (c->timestamps) fprintf(c->out, "[%8.3f] ", now_sec() - c->t0);
        fprintf(c->out, "you: ");
        for (const char *p = text; *p; p++) { fputc(*p, c->out); fflush(c->out); sleep_ms(80.0 / c->speed); }
        fputc('\n', c->out);
        FILE *keep = c->out;
        c->out = NULL;
        app_print(c, "you: %s", text);
        c->out = keep;
    } else {
        app_print(c, "you: %s", text);
    }
    say_state st = { c, xcalloc(1, 1), 0, 1 };
    int rc = action_grammar_chat(c->grammar, c->s, text, say_token, &st, err);
    free(c->last_reply);
    c->last_reply = st.text;
    if (rc) return rc;
    action a;
    char sentence[1024], perr[128], change[512], reason[256];
    if (action_parse(c->last_reply, &a, sentence, sizeof sentence, perr, sizeof perr) == 0) {
        char desc[256];
        action_format(&a, desc, sizeof desc);
        app_print(c, "action: %s", desc);
        if (vehicle_apply(c->car, &a, change, sizeof change, reason, sizeof reason) == 0) {
            if (change[0]) app_print(c, "vehicle: %s", change);
        } else {
            app_print(c, "refused: %s", reason);
        }
        app_print(c, "cabin: %s", sentence);
    } else {
        app_print(c, "cabin: %s", c->last_reply);
    }
    return 0;
}

static const char *const metric_names[] = {
    "decode_tps", "prefill_tps", "ttft_ms", "kv_bytes", "weight_bytes", "prompt_tokens", "gen_tokens",
    "n_past", "turns", "switch_ms", NULL,
};

const char *app_metric_names(void) {
    return "decode_tps, prefill_tps, ttft_ms, kv_bytes, weight_bytes, prompt_tokens, gen_tokens, n_past, turns, switch_ms";
}

int app_metric(app_ctx *c, const char *name, double *out) {
    int idx = -1;
    for (int i = 0; metric_names[i]; i++)
        if (strcmp(metric_names[i], name) == 0) idx = i;
    if (idx < 0) return -1;
    if (!c) return 0;   // name check only
    session_stats st;
    session_get_stats(c->s, &st);
    double v[] = { st.decode_tps, st.prefill_tps, st.ttft_ms, (double)st.kv_bytes, (double)st.weight_bytes,
                   st.prompt_tokens, st.gen_tokens, st.n_past, st.turns, st.last_switch_ms };
    *out = v[idx];
    return 0;
}

// ---- the commands ----

static int reopen(app_ctx *c, errbuf *err) {
    session *s = session_open(&c->opts, err);
    if (!s) return -1;   // the running session is kept
    session_close(c->s);
    c->s = s;
    action_grammar_free(c->grammar);
    c->grammar = c->free_actions ? NULL : action_grammar_new(s);
    action_grammar_set_car(c->grammar, c->car);
    vehicle_reset(c->car);
    return 0;
}

int run_model(app_ctx *c, cmd_line *l, errbuf *err) {
    char *old = c->model_path;
    c->model_path = xstrdup(l->argv[0]);
    c->opts.model_path = c->model_path;
    if (reopen(c, err)) {
        free(c->model_path);
        c->model_path = old;
        c->opts.model_path = old;
        return -1;
    }
    free(old);
    app_print(c, "model: %s", session_model(c->s)->name);
    return 0;
}

int run_backend(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *old = c->opts.backend.name;
    static char name[32];
    snprintf(name, sizeof name, "%s", l->argv[0]);
    c->opts.backend.name = name;
    if (reopen(c, err)) { c->opts.backend.name = old; return -1; }
    session_stats st;
    session_get_stats(c->s, &st);
    app_print(c, "backend: %s", st.backend);
    return 0;
}

int run_precision(app_ctx *c, cmd_line *l, errbuf *err) {
    precision_plan p;
    if (plan_parse_any(&p, l->rest, session_model(c->s)->hp.n_layer, err)) return -1;
    if (session_set_plan(c->s, &p, err)) return -1;
    session_stats st;
    session_get_stats(c->s, &st);
    app_print(c, "precision: %s (%d tensors converted, weights %.2f MiB)%s", l->rest, st.last_switch_tensors,
              (double)st.weight_bytes / (1 << 20), st.last_switch_upcast ? " — types above the file's are dequantized copies" : "");
    return 0;
}

int run_plan(app_ctx *c, cmd_line *l, errbuf *err) {
    precision_plan p;
    if (strcmp(l->argv[0], "save") == 0) {
        session_get_plan(c->s, &p);
        if (plan_save(&p, l->argv[1], err)) return -1;
        app_print(c, "plan saved to %s", l->argv[1]);
        return 0;
    }
    if (plan_load(&p, l->argv[1], session_model(c->s)->hp.n_layer, err) || session_set_plan(c->s, &p, err)) return -1;
    app_print(c, "plan %s loaded", l->argv[1]);
    return 0;
}

int run_kv(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *policy = l->argc > 1 ? l->argv[1] + 7 : NULL;   // "policy=P" (checked by v_kv)
    if (session_set_kv(c->s, l->argv[0], policy, err)) return err_prefix(err, "%s:%d: kv", l->file, l->line);
    session_stats st;
    session_get_stats(c->s, &st);
    app_print(c, "kv: %s, policy %s, %.0f bytes/token/layer, %.2fx smaller than f16", st.kv_format, st.kv_policy,
              st.kv_token_bytes, st.kv_savings);
    return 0;
}

int run_say(app_ctx *c, cmd_line *l, errbuf *err) { return app_say(c, l->rest, err); }

int run_voice(app_ctx *c, cmd_line *l, errbuf *err) {
    app_print(c, "voice: %s", l->argv[0]);
    if (app_voice_file(c, l->argv[0], err)) return err_prefix(err, "%s:%d: voice", l->file, l->line);
    return 0;
}

int run_expect(app_ctx *c, cmd_line *l, errbuf *err) {
    bool ok;
    char got[512];
    const char *kind = l->argv[0];
    if (strcmp(kind, "reply") == 0) {
        const char *r = c->last_reply ? c->last_reply : "";
        ok = regexec(&l->re, r, 0, NULL, 0) == 0;
        snprintf(got, sizeof got, "reply \"%.400s\"", r);
    } else if (strcmp(kind, "state") == 0) {
        const char *eq = strchr(l->argv[1], '=');
        char field[96], val[96];
        snprintf(field, sizeof field, "%.*s", (int)(eq - l->argv[1]), l->argv[1]);
        vehicle_get(c->car, field, val, sizeof val);
        ok = strcmp(val, eq + 1) == 0;
        snprintf(got, sizeof got, "%s=%s", field, val);
    } else {
        double v = 0;
        app_metric(c, l->argv[1], &v);
        ok = l->op == '<' ? v < l->number : l->op == '>' ? v > l->number : fabs(v - l->number) <= 1e-9 * fabs(l->number) + 1e-12;
        snprintf(got, sizeof got, "%s = %g", l->argv[1], v);
    }
    if (ok) {
        c->passed++;
        app_print(c, "ok: expect %s", l->rest);
        return 0;
    }
    c->failed++;
    app_print(c, "FAILED: %s:%d: expected %s, got %s", l->file, l->line, l->rest, got);
    if (c->check) return err_set(err, "%s:%d: expected %s, got %s", l->file, l->line, l->rest, got);
    return 0;
}

int run_wait(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)err;
    if (c->speed > 0) sleep_ms(l->number / c->speed);
    return 0;
}

int run_note(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)err;
    app_print(c, "note: %s", l->rest);
    return 0;
}

int run_bench(app_ctx *c, cmd_line *l, errbuf *err) {
    int n = l->argc ? atoi(l->argv[0]) : 32;
    if (n < 1) n = 32;
    session_stats st;
    session_get_stats(c->s, &st);
    if (st.n_past + n + 1 > st.n_ctx) { session_reset(c->s); vehicle_reset(c->car); }
    int32_t tok = 1;
    double t0 = now_sec();
    for (int i = 0; i < n; i++)
        if (session_eval(c->s, &tok, 1, NULL, err)) return -1;
    double dt = now_sec() - t0;
    app_print(c, "bench: %d tokens decoded at %.1f tok/s", n, n / dt);
    session_reset(c->s);
    return 0;
}

// The text a heat map is measured on when none is given: the held-out assistant dialogues when
// they are there (the embedded model's own domain), else a built-in paragraph.
static char *heatmap_text(const char *path, errbuf *err) {
    if (path) return read_file_all(path, NULL, err);
    char *t = read_file_all("assets/eval/heldout.jsonl", NULL, NULL);
    if (t) {
        if (strlen(t) > 6000) t[6000] = 0;
        return t;
    }
    return xstrdup("The driver asked the car to set the temperature to twenty two degrees, open the "
                   "passenger window a little, play the radio, and navigate home before it gets dark. "
                   "Then she asked how much range was left and whether the doors were locked.");
}

static bool heatmap_progress(void *ud, int done, int total, int layer, int kind, const sens_cell *cell) {
    (void)layer; (void)kind; (void)cell;
    app_ctx *c = ud;
    if (c->out && (done == total || done % 8 == 0)) { fprintf(c->out, "\rheatmap: %d/%d", done, total); fflush(c->out); }
    return !c->quit;
}

int run_heatmap(app_ctx *c, cmd_line *l, errbuf *err) {
    uint32_t type = WT_Q4_0;
    const char *text_path = NULL;
    for (int i = 0; i < l->argc; i++) {
        int t = wtype_from_name(l->argv[i]);
        if (t >= 0 && access(l->argv[i], R_OK) != 0) type = (uint32_t)t;
        else text_path = l->argv[i];
    }
    char *text = heatmap_text(text_path, err);
    if (!text) return -1;
    int32_t *ids = NULL;
    int n = session_tokenize(c->s, text, false, &ids, err);
    free(text);
    if (n < 0) return -1;
    int ctx = n < 256 ? n : 256;
    if (c->heatmap) { sensitivity_map_free(c->heatmap); free(c->heatmap); c->heatmap = NULL; }
    sensitivity_map *m = xcalloc(1, sizeof *m);
    sensitivity_map_init(m, session_model(c->s)->hp.n_layer, type);
    double t0 = now_sec();
    int rc = sensitivity_run(c->s, ids, n, ctx, 4, heatmap_progress, c, m, err);
    free(ids);
    if (c->out) fprintf(c->out, "\n");
    if (rc) { sensitivity_map_free(m); free(m); return -1; }
    c->heatmap = m;
    // the three most sensitive tensors
    int best[3] = { -1, -1, -1 };
    int cells = m->n_layer * TK_LAYER_KINDS;
    for (int i = 0; i < cells; i++)
        for (int k = 0; k < 3; k++)
            if (best[k] < 0 || m->cells[i].kl_mean > m->cells[best[k]].kl_mean) {
                for (int j = 2; j > k; j--) best[j] = best[j - 1];
                best[k] = i;
                break;
            }
    app_print(c, "heatmap (%s, %ld tokens, %.1f s): most sensitive %s", wtype_name(type), m->scored, now_sec() - t0,
              cells ? "" : "-");
    for (int k = 0; k < 3 && best[k] >= 0; k++)
        app_print(c, "  layer %d %s: KL %.5f", best[k] / TK_LAYER_KINDS, tensor_kind_name(best[k] % TK_LAYER_KINDS),
                  m->cells[best[k]].kl_mean);
    return 0;
}

// `cabin sweep` measures fresh sessions at each precision; it runs as a child process (this very
// binary) so its table lands in the transcript and the running conversation is untouched.
int run_sweep(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *weights = l->argc ? l->argv[0] : "f16,q8_0,q4_0";
    for (const char *p = weights; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_,./-", *p))
            return err_set(err, "%s:%d: sweep: '%s' is not a list of precisions", l->file, l->line, weights);
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return err_set(err, "%s:%d: sweep: cannot find the cabin binary", l->file, l->line);
    self[n] = 0;
    char cmd[3072];
    snprintf(cmd, sizeof cmd, "'%s' sweep -m '%s' --weights '%s' -r 1 -n 16 -t %d 2>/dev/null", self, c->model_path, weights,
             c->opts.backend.n_threads);
    FILE *p = popen(cmd, "r");
    if (!p) return err_set(err, "%s:%d: sweep: cannot start: %s", l->file, l->line, strerror(errno));
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n') line[len - 1] = 0;
        app_print(c, "%s", line);
    }
    int status = pclose(p);
    if (status != 0) return err_set(err, "%s:%d: sweep failed (status %d)", l->file, l->line, status);
    return 0;
}

int run_snapshot(app_ctx *c, cmd_line *l, errbuf *err) {
    if (c->snapshot) return c->snapshot(c, l->argv[0], err);
    FILE *f = fopen(l->argv[0], "w");
    if (!f) return err_set(err, "%s:%d: snapshot: %s: %s", l->file, l->line, l->argv[0], strerror(errno));
    fputs(c->transcript ? c->transcript : "", f);
    if (fclose(f) != 0) return err_set(err, "%s:%d: snapshot: %s: write failed", l->file, l->line, l->argv[0]);
    return 0;
}

int run_reset(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    session_reset(c->s);
    vehicle_reset(c->car);
    free(c->last_reply);
    c->last_reply = NULL;
    app_print(c, "reset");
    return 0;
}

int run_seed(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)err;
    session_set_seed(c->s, (uint64_t)l->number);
    c->opts.sampling.seed = (uint64_t)l->number;
    return 0;
}

int run_set(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *k = l->argv[0];
    const char *v = l->argc > 1 ? l->argv[1] : "";
    char *end;
    double x = strtod(v, &end);
    bool numeric = *v && !*end;
    if (strcmp(k, "system") == 0) {
        const char *sys = l->rest + strlen(k);
        while (*sys == ' ') sys++;
        static char system_buf[1024];
        snprintf(system_buf, sizeof system_buf, "%s", sys);
        c->opts.system_prompt = system_buf;
        return reopen(c, err);
    }
    if (!numeric) return err_set(err, "%s:%d: set %s: '%s' is not a number", l->file, l->line, k, v);
    if (strcmp(k, "speed") == 0) { c->speed = x; return 0; }
    if (strcmp(k, "temp") == 0) c->opts.sampling.temp = (float)x;
    else if (strcmp(k, "top_k") == 0) c->opts.sampling.top_k = (int)x;
    else if (strcmp(k, "top_p") == 0) c->opts.sampling.top_p = (float)x;
    else if (strcmp(k, "min_p") == 0) c->opts.sampling.min_p = (float)x;
    else if (strcmp(k, "max_tokens") == 0) c->opts.max_reply_tokens = (int)x;
    return session_set_sampling(c->s, &c->opts.sampling, c->opts.max_reply_tokens, err);
}

int run_stats(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    session_stats st;
    session_get_stats(c->s, &st);
    app_print(c, "stats: prompt %d tok, prefill %.0f tok/s, TTFT %.0f ms, %d tok at %.1f tok/s, cache %d/%d, "
              "weights %.2f MiB, KV %.2f MiB, %s", st.prompt_tokens, st.prefill_tps, st.ttft_ms, st.gen_tokens,
              st.decode_tps, st.n_past, st.n_ctx, (double)st.weight_bytes / (1 << 20),
              (double)st.kv_bytes / (1 << 20), st.backend);
    return 0;
}

int run_quit(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    c->quit = true;
    return 0;
}

int run_help(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    int n;
    const cmd_def *t = cmdlang_table(&n);
    for (int i = 0; i < n; i++) app_print(c, "  %-50s %s", t[i].usage, t[i].help);
    return 0;
}
