// The application layer behind the command language: the assistant (session, simulated vehicle,
// grammar; app/turn.h), a transcript, expectations. Scenes, the workbench and chat share it.
#include "app/verbs.h"
#include "base/afile.h"
#include "app/compare.h"
#include "app/eval_text.h"
#include "engine/precision.h"
#include "app/govern.h"
#include "app/heatmap.h"
#include "engine/sensitivity.h"
#include "engine/wtype.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int app_open(app_ctx *c, const session_opts *o, bool free_actions, errbuf *err) {
    c->opts = *o;
    c->model_path = xstrdup(o->model_path);
    c->opts.model_path = c->model_path;
    if (assistant_open(&c->as, &c->opts, free_actions, err)) {
        free(c->model_path);   // the caller does not app_close a context that did not open
        c->model_path = NULL;
        c->opts.model_path = NULL;
        return -1;
    }
    if (c->t0 == 0) c->t0 = now_sec();
    return 0;
}

void app_close(app_ctx *c) {
    assistant_close(&c->as);
    free(c->model_path);
    free(c->last_reply);
    strbuf_free(&c->transcript);
    if (c->heatmap) { sensitivity_map_free(c->heatmap); free(c->heatmap); c->heatmap = NULL; }
    c->model_path = c->last_reply = NULL;
}

void app_print(app_ctx *c, const char *fmt, ...) {
    char line[4096];
    int o = 0;
    if (c->timestamps) o = snprintf(line, sizeof line, "[%8.3f] ", now_sec() - c->t0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + o, sizeof line - (size_t)o, fmt, ap);
    va_end(ap);
    strbuf_puts(&c->transcript, line);
    strbuf_puts(&c->transcript, "\n");
    if (c->out) { fprintf(c->out, "%s\n", line); fflush(c->out); }
}

// ---- a turn as the transcript tells it ("action: ...", "vehicle: ...", "cabin: ..."), each
// event also handed to the front end's hooks (c->turn) ----
static bool say_token(void *ud, const char *piece, int len) {
    app_ctx *c = ud;
    return c->turn && c->turn->on_token ? c->turn->on_token(c->turn->ud, piece, len) : true;
}

static void say_not_understood(void *ud, const char *why) {
    app_ctx *c = ud;
    if (c->turn && c->turn->on_not_understood) c->turn->on_not_understood(c->turn->ud, why);
}

static void say_action(void *ud, const action *a, const char *desc) {
    app_ctx *c = ud;
    app_print(c, "action: %s", desc);
    if (c->turn && c->turn->on_action) c->turn->on_action(c->turn->ud, a, desc);
}

static void say_vehicle(void *ud, const action *a, const char *change) {
    app_ctx *c = ud;
    if (change[0]) app_print(c, "vehicle: %s", change);
    if (c->turn && c->turn->on_vehicle_change) c->turn->on_vehicle_change(c->turn->ud, a, change);
}

static void say_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    app_ctx *c = ud;
    app_print(c, "refused: %s", reason);
    if (c->turn && c->turn->on_refused) c->turn->on_refused(c->turn->ud, a, reason, sentence);
}

static void say_reply(void *ud, const char *text) {
    app_ctx *c = ud;
    app_print(c, "cabin: %s", text);
    if (c->turn && c->turn->on_reply_text) c->turn->on_reply_text(c->turn->ud, text);
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
    const turn_hooks h = { c, say_token, say_not_understood, say_action, say_vehicle, say_refused, say_reply };
    free(c->last_reply);
    int rc = assistant_turn(&c->as, text, &h, &c->last_reply, err);
    // what the session has to say once (the device lost, the CPU taking over): the front end's
    // notice line, else the transcript
    char note[ERR_LINE];
    if (session_take_notice(c->as.s, note, sizeof note)) {
        if (c->notice) c->notice(c->notice_ud, note);
        else app_print(c, "%s", note);
    }
    return rc;
}

// name, then its value from the session's figures (session_stats *st)
#define APP_METRICS(X) \
    X(decode_tps, st->decode_tps) X(prefill_tps, st->prefill_tps) X(ttft_ms, st->ttft_ms) \
    X(kv_bytes, st->kv_bytes) X(weight_bytes, st->weight_bytes) X(prompt_tokens, st->prompt_tokens) \
    X(gen_tokens, st->gen_tokens) X(n_past, st->n_past) X(turns, st->turns) X(switch_ms, st->last_switch_ms)
#define METRIC_NAME(name, value) #name,
static const char *const metric_names[] = { APP_METRICS(METRIC_NAME) NULL };

static double metric_value(const session_stats *st, int idx) {
    int i = 0;
#define METRIC_VALUE(name, value) if (idx == i++) return (double)(value);
    APP_METRICS(METRIC_VALUE)
#undef METRIC_VALUE
    return 0;
}

// "a, b, c" from a NULL-terminated list into buf.
static void join_names(const char *const *list, char *buf, size_t n) {
    size_t o = 0;
    for (int i = 0; list[i] && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", list[i]);
}

// The metric and setting name lists, made once (pthread_once: help and completion may ask from
// the UI thread while a scene's error message asks from the worker).
static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static char metric_names_text[420], setting_names_text[160];   // the session's metrics, then the governor's
static void make_name_lists(void);

const char *app_metric_names(void) {
    pthread_once(&names_once, make_name_lists);
    return metric_names_text;
}

int app_metric(app_ctx *c, const char *name, double *out) {
    int idx = -1;
    for (int i = 0; metric_names[i]; i++)
        if (strcmp(metric_names[i], name) == 0) idx = i;
    if (idx < 0) {   // the governor's: 0 while it is off (nothing changed, nothing measured)
        for (int i = 0; gov_run_metric_names[i]; i++)
            if (strcmp(gov_run_metric_names[i], name) == 0) {
                if (c) *out = 0;
                return c && c->as.gov ? gov_run_metric(c->as.gov, name, out) : 0;
            }
        return -1;
    }
    if (!c) return 0;   // name check only
    session_stats st;
    session_get_stats(c->as.s, &st);
    *out = metric_value(&st, idx);
    return 0;
}

// `set KEY VALUE`: the keys and where each goes.
enum setting_kind { SET_FLOAT, SET_INT, SET_DOUBLE, SET_TEXT };
static const struct setting {
    const char *name;
    enum setting_kind kind;
    size_t off;               // in app_ctx
    bool sampling;            // the session's sampler takes it at once
} settings[] = {
    { "temp", SET_FLOAT, offsetof(app_ctx, opts.sampling.temp), true },
    { "top_k", SET_INT, offsetof(app_ctx, opts.sampling.top_k), true },
    { "top_p", SET_FLOAT, offsetof(app_ctx, opts.sampling.top_p), true },
    { "min_p", SET_FLOAT, offsetof(app_ctx, opts.sampling.min_p), true },
    { "max_tokens", SET_INT, offsetof(app_ctx, opts.max_reply_tokens), true },
    { "system", SET_TEXT, offsetof(app_ctx, opts.system_prompt), false },   // a new session
    { "speed", SET_DOUBLE, offsetof(app_ctx, speed), false },
};
#define N_SETTINGS (int)(sizeof settings / sizeof settings[0])

static const struct setting *find_setting(const char *name) {
    for (int i = 0; i < N_SETTINGS; i++)
        if (strcmp(settings[i].name, name) == 0) return &settings[i];
    return NULL;
}

bool app_setting_known(const char *name) { return find_setting(name) != NULL; }

static void make_name_lists(void) {
    char session_names[256], gov_names[160];
    join_names(metric_names, session_names, sizeof session_names);
    join_names(gov_run_metric_names, gov_names, sizeof gov_names);
    snprintf(metric_names_text, sizeof metric_names_text, "%s, %s", session_names, gov_names);
    const char *names[N_SETTINGS + 1] = { 0 };
    for (int i = 0; i < N_SETTINGS; i++) names[i] = settings[i].name;
    join_names(names, setting_names_text, sizeof setting_names_text);
}

const char *app_setting_names(void) {
    pthread_once(&names_once, make_name_lists);
    return setting_names_text;
}

// ---- the commands ----

static int reopen(app_ctx *c, errbuf *err) {
    bool governed = c->as.gov != NULL;
    if (assistant_reopen(&c->as, &c->opts, err)) return -1;
    if (governed) app_print(c, "governor: off (a new session; start it again for this one)");
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
    app_print(c, "model: %s", session_model(c->as.s)->name);
    return 0;
}

int run_backend(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *old = c->opts.backend.name;
    static char name[32];
    snprintf(name, sizeof name, "%s", l->argv[0]);
    c->opts.backend.name = name;
    if (reopen(c, err)) { c->opts.backend.name = old; return -1; }
    session_stats st;
    session_get_stats(c->as.s, &st);
    app_print(c, "backend: %s", st.backend);
    return 0;
}

int run_precision(app_ctx *c, cmd_line *l, errbuf *err) {
    precision_plan p;
    if (plan_parse_any(&p, l->rest, session_model(c->as.s)->hp.n_layer, err)) return -1;
    app_governor_stop(c, "the plan was set by hand");
    if (session_set_plan(c->as.s, &p, err)) return -1;
    session_stats st;
    session_get_stats(c->as.s, &st);
    app_print(c, "precision: %s (%d tensors converted, weights %.2f MiB)%s", l->rest, st.last_switch_tensors,
              (double)st.weight_bytes / (1 << 20), st.last_switch_upcast ? " — types above the file's are dequantized copies" : "");
    return 0;
}

int run_plan(app_ctx *c, cmd_line *l, errbuf *err) {
    precision_plan p;
    if (strcmp(l->argv[0], "save") == 0) {
        session_get_plan(c->as.s, &p);
        if (plan_save(&p, l->argv[1], err)) return -1;
        app_print(c, "plan saved to %s", l->argv[1]);
        return 0;
    }
    if (plan_load(&p, l->argv[1], session_model(c->as.s)->hp.n_layer, err)) return -1;
    app_governor_stop(c, "the plan was set by hand");
    if (session_set_plan(c->as.s, &p, err)) return -1;
    app_print(c, "plan %s loaded", l->argv[1]);
    return 0;
}

int run_kv(app_ctx *c, cmd_line *l, errbuf *err) {
    const char *policy = l->argc > 1 ? l->argv[1] + 7 : NULL;   // "policy=P" (checked by v_kv)
    if (session_set_kv(c->as.s, l->argv[0], policy, err)) return err_prefix(err, "%s:%d: kv", l->file, l->line);
    session_stats st;
    session_get_stats(c->as.s, &st);
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
        vehicle_get(c->as.car, field, val, sizeof val);
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

// No input line here (a workbench face types it into its own): said, so a transcript shows it.
int run_type(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)err;
    app_print(c, "typed: %s", l->rest);
    return 0;
}

int run_bench(app_ctx *c, cmd_line *l, errbuf *err) {
    int n = l->argc ? atoi(l->argv[0]) : 32;
    if (n < 1) n = 32;
    session_stats st;
    session_get_stats(c->as.s, &st);
    if (st.n_past + n + 1 > st.n_ctx) { session_reset(c->as.s); vehicle_reset(c->as.car); }
    int32_t tok = 1;
    double t0 = now_sec();
    for (int i = 0; i < n; i++)
        if (session_eval(c->as.s, &tok, 1, NULL, err)) return -1;
    double dt = now_sec() - t0;
    app_print(c, "bench: %d tokens decoded at %.1f tok/s", n, n / dt);
    session_reset(c->as.s);
    return 0;
}

// The text a heat map is measured on: the file given, else what `cabin heatmap` scores without
// -f (app/eval_text.h: the embedded model's held-out dialogues in its chat layout, else prose).
static char *heatmap_text(app_ctx *c, const char *path, errbuf *err) {
    if (path) return read_file_all(path, NULL, err);
    const char *what;
    bool prose;
    return eval_default_text(c->as.s, c->opts.template_name, &what, &prose, err);
}

static bool heatmap_progress(void *ud, int done, int total, int layer, int kind, const sens_cell *cell) {
    (void)layer; (void)kind; (void)cell;
    app_ctx *c = ud;
    if (c->out && (done == total || done % 8 == 0)) { fprintf(c->out, "\rheatmap: %d/%d", done, total); fflush(c->out); }
    return !c->quit;
}

// The three most sensitive tensors of a map, in the transcript.
static void heatmap_report(app_ctx *c, const sensitivity_map *m, double seconds) {
    int best[3] = { -1, -1, -1 };
    int cells = m->n_layer * TK_LAYER_KINDS;
    for (int i = 0; i < cells; i++)
        for (int k = 0; k < 3; k++)
            if (best[k] < 0 || m->cells[i].kl_mean > m->cells[best[k]].kl_mean) {
                for (int j = 2; j > k; j--) best[j] = best[j - 1];
                best[k] = i;
                break;
            }
    app_print(c, "heatmap (%s, %ld tokens, %.1f s): most sensitive %s", wtype_name(m->type), m->scored, seconds,
              cells ? "" : "-");
    for (int k = 0; k < 3 && best[k] >= 0; k++)
        app_print(c, "  layer %d %s: KL %.5f", best[k] / TK_LAYER_KINDS, tensor_kind_name(best[k] % TK_LAYER_KINDS),
                  m->cells[best[k]].kl_mean);
}

int run_heatmap(app_ctx *c, cmd_line *l, errbuf *err) {
    uint32_t type;
    const char *file;
    heatmap_args(l->argc, l->argv, &type, &file);
    if (c->heatmap) { sensitivity_map_free(c->heatmap); free(c->heatmap); c->heatmap = NULL; }
    sensitivity_map *m = xcalloc(1, sizeof *m);
    double t0 = now_sec();
    int rc;
    if (file && heatmap_is_map(file)) {
        rc = heatmap_load(m, session_model(c->as.s)->hp.n_layer, type, file, err);
    } else {
        char *text = heatmap_text(c, file, err);
        if (!text) { free(m); return -1; }
        heatmap_opts o = { .type = type, .ctx = 256, .ctx_fits_text = true, .max_windows = 4,
                           .progress = heatmap_progress, .ud = c };
        rc = heatmap_measure(c->as.s, text, &o, m, err);
        free(text);
        if (c->out) fprintf(c->out, "\n");
    }
    if (rc) { free(m); return -1; }
    c->heatmap = m;
    heatmap_report(c, m, now_sec() - t0);
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

// The user turns said so far in this conversation (the assistant's record), *out malloc'd.
static int user_turns_so_far(const app_ctx *c, char ***out) {
    int n = 0;
    *out = NULL;
    for (const char *line = strbuf_str(&c->as.said); *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 0) {
            *out = xrealloc(*out, (size_t)(n + 1) * sizeof **out);
            (*out)[n++] = strndup(line, len);
        }
        line += len + (end ? 1 : 0);
    }
    return n;
}

// `compare A B [FILE]`: the compare of cabin compare on the app's model, in two sessions of its
// own (the conversation is kept), on FILE's prompts, else the user turns so far, else a few
// built-in ones; short replies and a few held-out dialogues, so it stays quick.
int run_compare(app_ctx *c, cmd_line *l, errbuf *err) {
    static const char *const BUILT_IN[] = { "turn up the heat", "play some jazz", "take me home" };
    char **prompts = NULL;
    int n;
    if (l->argc > 2) n = compare_read_prompts(l->argv[2], &prompts, err);
    else if ((n = user_turns_so_far(c, &prompts)) == 0) {
        n = 3;
        prompts = xmalloc(3 * sizeof *prompts);
        for (int i = 0; i < 3; i++) prompts[i] = xstrdup(BUILT_IN[i]);
    }
    if (n < 0) return err_prefix(err, "%s:%d: compare", l->file, l->line);
    errbuf perr = {{0}};
    power_monitor *pm = power_monitor_open("/", &perr);
    if (pm && power_monitor_start(pm, 10, &perr)) {
        power_monitor_close(pm);
        pm = NULL;   // no energy figures; the rest of the compare stands
    }
    compare_opts o = { .base = c->opts, .plan = { l->argv[0], l->argv[1] }, .assistant_limit = 10, .pm = pm,
                       .on_piece = c->compare_piece, .ud = c->compare_ud };
    if (o.base.max_reply_tokens <= 0 || o.base.max_reply_tokens > 48) o.base.max_reply_tokens = 48;
    app_print(c, "compare: %s against %s on %d prompt%s", l->argv[0], l->argv[1], n, n == 1 ? "" : "s");
    compare_result res;
    int rc = compare_run(&o, prompts, n, &res, err);
    if (rc) {
        err_prefix(err, "%s:%d: compare", l->file, l->line);
    } else {
        strbuf b = {0};
        if (c->compare_piece) {   // the front end showed the replies as they came
            compare_table(&res, &b);
            strbuf_puts(&b, "\n");
            compare_summary(&res, &b);
        } else {
            compare_report(&res, 100, &b);
        }
        for (const char *line = strbuf_str(&b); *line;) {
            const char *end = strchr(line, '\n');
            int len = end ? (int)(end - line) : (int)strlen(line);
            app_print(c, "%.*s", len, line);
            line += len + (end ? 1 : 0);
        }
        strbuf_free(&b);
    }
    compare_result_free(&res);
    compare_free_prompts(prompts, n);
    power_monitor_close(pm);
    return rc;
}

bool app_snapshot_is_png(const char *path) {
    size_t n = strlen(path);
    return n >= 4 && strcasecmp(path + n - 4, ".png") == 0;
}

int app_snapshot_needs_window(const char *path, errbuf *err) {
    return err_set(err, "snapshot %s: a PNG is a picture of the window; it needs `cabin gui` (a text snapshot: FILE.txt)", path);
}

int run_snapshot(app_ctx *c, cmd_line *l, errbuf *err) {
    if (c->snapshot) return c->snapshot(c, l->argv[0], err);
    if (app_snapshot_is_png(l->argv[0])) {
        app_snapshot_needs_window(l->argv[0], err);
        return err_prefix(err, "%s:%d", l->file, l->line);
    }
    // whole or not at all: a snapshot taken over an older one never leaves half of each
    if (afile_write_all(l->argv[0], strbuf_str(&c->transcript), c->transcript.len, err))
        return err_prefix(err, "%s:%d: snapshot", l->file, l->line);
    return 0;
}

int run_reset(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    assistant_reset(&c->as);
    free(c->last_reply);
    c->last_reply = NULL;
    app_print(c, "reset");
    return 0;
}

int run_seed(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)err;
    session_set_seed(c->as.s, (uint64_t)l->number);
    c->opts.sampling.seed = (uint64_t)l->number;
    return 0;
}

int run_set(app_ctx *c, cmd_line *l, errbuf *err) {
    const struct setting *k = find_setting(l->argv[0]);   // known: v_set
    const char *v = l->argc > 1 ? l->argv[1] : "";
    char *end;
    double x = strtod(v, &end);
    bool numeric = *v && !*end;
    char *field = (char *)c + k->off;
    if (k->kind == SET_TEXT) {
        const char *text = l->rest + strlen(k->name);
        while (*text == ' ') text++;
        static char system_buf[1024];
        snprintf(system_buf, sizeof system_buf, "%s", text);
        *(const char **)field = system_buf;
        return reopen(c, err);
    }
    if (!numeric) return err_set(err, "%s:%d: set %s: '%s' is not a number", l->file, l->line, k->name, v);
    if (k->kind == SET_DOUBLE) *(double *)field = x;
    else if (k->kind == SET_FLOAT) *(float *)field = (float)x;
    else *(int *)field = (int)x;
    if (!k->sampling) return 0;
    return session_set_sampling(c->as.s, &c->opts.sampling, c->opts.max_reply_tokens, err);
}

int run_stats(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    session_stats st;
    session_get_stats(c->as.s, &st);
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

int run_car(app_ctx *c, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    char val[96];
    for (const char *const *f = vehicle_fields(); *f; f++) {
        vehicle_get(c->as.car, *f, val, sizeof val);
        app_print(c, "  %-24s %s %s", *f, val, vehicle_field_unit(*f));
    }
    return 0;
}
