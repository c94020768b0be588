// A/B comparison of two plans on the same prompts (see compare.h).
//
// Two sessions are open at once, one per plan: switching one session's plan per prompt would
// convert the weights twice per prompt, and the teacher-forced KL needs both models' logits for
// the same positions side by side. The cost is the memory of two copies of the weights.
// Each prompt is a fresh chat turn (session_reset, then session_chat: a model without a chat
// template gets the "plain" layout, so every model goes through the same path).
#include "app/compare.h"
#include "engine/json_text.h"
#include "app/eval_actions.h"
#include "app/eval_text.h"
#include "app/plot.h"
#include "engine/chat_template.h"
#include "engine/quality.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Rows of logits per teacher-forced pass: bounds the memory to 2 x KL_CHUNK x n_vocab floats.
#define KL_CHUNK 64

static const char *const SIDE_NAME[2] = { "A", "B" };

int compare_read_prompts(const char *path, char ***out, errbuf *err) {
    char *text = read_file_all(path, NULL, err);
    if (!text) return -1;
    char **p = NULL;
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = 0;
        while (*line == ' ' || *line == '\t') line++;
        if (!*line || *line == '#') continue;
        p = xrealloc(p, (size_t)(n + 1) * sizeof *p);
        p[n++] = xstrdup(line);
    }
    free(text);
    if (n == 0) return err_set(err, "%s: no prompts (one per line; blank lines and # lines are skipped)", path);
    *out = p;
    return n;
}

void compare_free_prompts(char **p, int n) {
    for (int i = 0; i < n; i++) free(p[i]);
    free(p);
}

// One side's session: the base options with its plan and KV format, the monitor attached.
static session *open_side(const compare_opts *o, int side, errbuf *err) {
    session_opts so = o->base;
    so.precision = o->plan[side];
    if (o->kv[side]) so.kv_format = o->kv[side];
    session *s = session_open(&so, err);
    if (!s) {
        err_prefix(err, "plan %s (%s%s%s)", SIDE_NAME[side], o->plan[side] ? o->plan[side] : "as in the file",
                   o->kv[side] ? ", kv " : "", o->kv[side] ? o->kv[side] : "");
        return NULL;
    }
    session_set_power(s, o->pm);
    return s;
}

// A reply as it streams: its text, its token ids, and the caller's hook.
typedef struct reply_sink {
    strbuf text;
    int32_t *ids;
    int n, cap;
    const compare_opts *o;
    int side, prompt;
} reply_sink;

static bool sink_token(void *ud, int32_t token, const char *piece, int len) {
    reply_sink *r = ud;
    strbuf_append(&r->text, piece, (size_t)len);
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->ids = xrealloc(r->ids, (size_t)r->cap * sizeof *r->ids);
    }
    r->ids[r->n++] = token;
    if (r->o->on_piece) r->o->on_piece(r->o->ud, r->side, r->prompt, NULL, piece, len);
    return true;
}

// One chat turn on a fresh conversation with the given seed; fills the side's figures.
static int answer(session *s, const compare_opts *o, int side, int idx, const char *prompt, compare_prompt *cp,
                  reply_sink *sink, errbuf *err) {
    session_reset(s);
    session_set_seed(s, o->base.sampling.seed);
    *sink = (reply_sink){ .o = o, .side = side, .prompt = idx };
    if (session_chat(s, prompt, sink_token, sink, err)) return err_prefix(err, "plan %s", SIDE_NAME[side]);
    session_stats st;
    session_get_stats(s, &st);
    cp->reply[side] = xstrdup(strbuf_str(&sink->text));
    cp->tokens[side] = st.gen_tokens;
    cp->tps[side] = st.decode_tps;
    cp->j_per_token[side] = st.energy.decode_j_per_token;
    return 0;
}

// KL(A||B) and top-1 agreement of one position: rows of n_vocab logits from A and B.
static void score_position(const float *la, const float *lb, int nv, double *lsm_a, double *lsm_b, kl_record *rec,
                           compare_prompt *cp) {
    quality_log_softmax(la, nv, lsm_a);
    quality_log_softmax(lb, nv, lsm_b);
    quality_record(lsm_a, nv, 0, rec);   // the target's log-prob is not used here
    // the same logits bit for bit: KL 0 exactly (quality_kl's float records would leave ~1e-13)
    double kl = memcmp(la, lb, (size_t)nv * sizeof *la) == 0 ? 0.0 : quality_kl(rec, lsm_b, nv);
    int best = 0;
    for (int v = 1; v < nv; v++) if (lb[v] > lb[best]) best = v;
    cp->kl_mean += kl;
    if (kl > cp->kl_max) cp->kl_max = kl;
    cp->top1 += best == rec->id[0];
    cp->positions++;
}

// Teacher-forced on A's tokens (prompt ids[0..n_prompt) then A's reply): both sessions read the
// same sequence; every position from the prompt's last (predicting the reply's first token) to
// the reply's last (predicting what follows it) is scored, as cabin ppl --kl-base scores.
static int teacher_force(session *s[2], const int32_t *ids, int n_prompt, int n, compare_prompt *cp, errbuf *err) {
    int nv = session_n_vocab(s[0]);
    if (session_n_vocab(s[1]) != nv) return err_set(err, "A and B have different vocabularies (%d, %d)", nv, session_n_vocab(s[1]));
    float *logits[2] = { xmalloc((size_t)KL_CHUNK * nv * sizeof(float)), xmalloc((size_t)KL_CHUNK * nv * sizeof(float)) };
    double *lsm_a = xmalloc((size_t)nv * sizeof(double)), *lsm_b = xmalloc((size_t)nv * sizeof(double));
    kl_record *rec = xmalloc(sizeof *rec);
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        session_reset(s[k]);
        if (session_eval(s[k], ids, n_prompt, logits[k], err)) rc = err_prefix(err, "plan %s: teacher-forced pass", SIDE_NAME[k]);
    }
    if (!rc) score_position(logits[0], logits[1], nv, lsm_a, lsm_b, rec, cp);
    for (int at = n_prompt; at < n && !rc; at += KL_CHUNK) {
        int m = n - at < KL_CHUNK ? n - at : KL_CHUNK;
        for (int k = 0; k < 2 && !rc; k++)
            if (session_eval_all(s[k], ids + at, m, logits[k], err)) rc = err_prefix(err, "plan %s: teacher-forced pass", SIDE_NAME[k]);
        for (int j = 0; j < m && !rc; j++)
            score_position(logits[0] + (size_t)j * nv, logits[1] + (size_t)j * nv, nv, lsm_a, lsm_b, rec, cp);
    }
    if (cp->positions > 0) {
        cp->kl_mean /= cp->positions;
        cp->top1 /= cp->positions;
    }
    free(logits[0]);
    free(logits[1]);
    free(lsm_a);
    free(lsm_b);
    free(rec);
    return rc;
}

// One prompt through A and B, then the KL of B against A on A's tokens.
static int compare_prompt_run(session *s[2], const compare_opts *o, int idx, const char *prompt, compare_prompt *cp,
                              errbuf *err) {
    cp->prompt = xstrdup(prompt);
    reply_sink sink[2];
    memset(sink, 0, sizeof sink);
    if (o->on_piece) o->on_piece(o->ud, -1, idx, prompt, "", 0);
    // which side answers first alternates with the prompt, so a cost that falls on whoever runs
    // first (or second) after the teacher-forced pass lands on A and B equally often
    int first = idx % 2;
    int rc = 0;
    for (int j = 0; j < 2 && !rc; j++) {
        int k = j == 0 ? first : 1 - first;
        rc = answer(s[k], o, k, idx, prompt, cp, &sink[k], err);
    }
    if (!rc) {
        cp->same = strcmp(cp->reply[0], cp->reply[1]) == 0;
        // A's turn as session_chat laid it out: the template's first turn, then A's reply tokens
        const chat_template *t = eval_template(s[0], o->base.template_name);
        char *turn = chat_template_render_turn(t, o->base.system_prompt, prompt, true, false);
        int32_t *ids = NULL;
        int np = session_tokenize(s[0], turn, true, &ids, err);
        free(turn);
        if (np < 0) {
            rc = -1;
        } else {
            ids = xrealloc(ids, (size_t)(np + sink[0].n) * sizeof *ids);
            memcpy(ids + np, sink[0].ids, (size_t)sink[0].n * sizeof *ids);
            rc = teacher_force(s, ids, np, np + sink[0].n, cp, err);
        }
        free(ids);
    }
    for (int k = 0; k < 2; k++) {
        strbuf_free(&sink[k].text);
        free(sink[k].ids);
    }
    return rc;
}

// Action exact-match of both plans on the held-out dialogues (greedy, 96 tokens a reply, as
// cabin eval-assistant runs them); the sessions' sampling is put back after.
static int compare_exact_match(session *s[2], const compare_opts *o, compare_result *r, errbuf *err) {
    sampler_params greedy = o->base.sampling;
    greedy.temp = 0.0f;
    for (int k = 0; k < 2; k++) {
        eval_counts c;
        session_set_sampling(s[k], &greedy, 96, err);
        int rc = eval_assistant_actions(s[k], CABIN_HELDOUT, o->assistant_limit, o->free_actions, &c, err);
        session_set_sampling(s[k], &o->base.sampling, o->base.max_reply_tokens, err);
        if (rc) return err_prefix(err, "plan %s: action exact-match", SIDE_NAME[k]);
        r->exact[k] = c.exact;
        r->exact_turns = c.turns;
    }
    return 0;
}

// One unmeasured turn per side before the first measured one: a session's first turn pays for
// what is done once (pages touched for the first time, buffers grown, threads started), which
// would otherwise count against whichever plan prompt 1 measures first.
static int warm_up(session *s[2], const compare_opts *o, const char *prompt, errbuf *err) {
    if (!prompt) return 0;
    compare_opts quiet = *o;
    quiet.on_piece = NULL;
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        compare_prompt cp = { 0 };
        reply_sink sink;
        rc = answer(s[k], &quiet, k, 0, prompt, &cp, &sink, err);
        free(cp.reply[k]);
        strbuf_free(&sink.text);
        free(sink.ids);
    }
    return rc;
}

static void summarise(compare_result *r) {
    double *a = xmalloc((size_t)r->n * 4 * sizeof(double)), *b = a + r->n, *ja = b + r->n, *jb = ja + r->n;
    for (int i = 0; i < r->n; i++) {
        const compare_prompt *p = &r->p[i];
        a[i] = p->tps[0], b[i] = p->tps[1], ja[i] = p->j_per_token[0], jb[i] = p->j_per_token[1];
        r->kl_mean += p->kl_mean / r->n;
        if (p->kl_max > r->kl_max) r->kl_max = p->kl_max;
        r->top1_mean += p->top1 / r->n;
        r->same += p->same;
    }
    paired_compare(a, b, r->n, 1, &r->tps);
    paired_compare(ja, jb, r->n, 0, &r->jpt);
    free(a);
}

int compare_run(const compare_opts *o, char *const *prompts, int n, compare_result *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->model, sizeof out->model, "%s", o->base.model_path ? o->base.model_path : "");
    session *s[2] = { NULL, NULL };
    for (int k = 0; k < 2; k++) {
        snprintf(out->plan[k], sizeof out->plan[k], "%s", o->plan[k] ? o->plan[k] : "as in the file");
        snprintf(out->kv[k], sizeof out->kv[k], "%s", o->kv[k] ? o->kv[k] : o->base.kv_format ? o->base.kv_format : "f16");
        if (!(s[k] = open_side(o, k, err))) {
            session_close(s[0]);
            return -1;
        }
        session_stats st;
        session_get_stats(s[k], &st);
        out->weight_bytes[k] = st.weight_bytes;
    }
    if (o->pm) {
        const char *from = power_monitor_total_from(o->pm, &out->energy_measured);
        snprintf(out->energy_from, sizeof out->energy_from, "%s", from);
    }
    out->p = xcalloc((size_t)n, sizeof *out->p);
    int rc = warm_up(s, o, n > 0 ? prompts[0] : NULL, err);
    for (int i = 0; i < n && !rc; i++) {
        rc = compare_prompt_run(s, o, i, prompts[i], &out->p[i], err);
        if (rc) err_prefix(err, "prompt %d", i + 1);
        out->n = i + 1;
    }
    out->embedded = eval_is_embedded_model(s[0]);
    if (!rc && out->embedded && o->assistant_limit > 0) rc = compare_exact_match(s, o, out, err);
    if (!rc) summarise(out);
    session_close(s[0]);
    session_close(s[1]);
    return rc;
}

void compare_result_free(compare_result *r) {
    for (int i = 0; i < r->n; i++) {
        free(r->p[i].prompt);
        free(r->p[i].reply[0]);
        free(r->p[i].reply[1]);
    }
    free(r->p);
    r->p = NULL;
    r->n = 0;
}

// ---- report ----

// Bytes of the UTF-8 character at s (1 for a stray byte; never past the NUL).
static size_t char_len(const char *s) {
    unsigned char c = (unsigned char)*s;
    size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    for (size_t k = 1; k < len; k++) if (!s[k]) return k;
    return len;
}

// Up to `take` display columns of s (a newline or tab shown as a space), then spaces up to `pad`
// columns. Returns the bytes consumed.
static size_t put_clipped(strbuf *out, const char *s, int take, int pad) {
    int cols = 0;
    size_t i = 0;
    while (s[i] && cols < take) {
        size_t len = char_len(s + i);
        if (s[i] == '\n' || s[i] == '\t' || s[i] == '\r') strbuf_puts(out, " ");
        else strbuf_append(out, s + i, len);
        i += len;
        cols++;
    }
    while (cols++ < pad) strbuf_puts(out, " ");
    return i;
}

// Columns of s to put on a line of w: all of it when it fits, else up to its last space in the
// line (when that is past the middle), else w.
static int wrap_cols(const char *s, int w) {
    int cols = 0, last_space = -1;
    for (size_t i = 0; s[i]; i += char_len(s + i)) {
        if (cols == w) return last_space > w / 2 ? last_space + 1 : w;
        if (s[i] == ' ') last_space = cols;
        cols++;
    }
    return w;
}

void compare_table(const compare_result *r, strbuf *out) {
    const char *j = r->energy_measured ? "J/tok" : "J/tok~";
    strbuf_printf(out, "model %s\nA: %s (kv %s, %.2f MiB)\nB: %s (kv %s, %.2f MiB)\n", r->model, r->plan[0], r->kv[0],
                  r->weight_bytes[0] / 1048576.0, r->plan[1], r->kv[1], r->weight_bytes[1] / 1048576.0);
    if (r->energy_from[0])
        strbuf_printf(out, "energy: %s (%s)\n", r->energy_from, r->energy_measured ? "measured" : "estimated: J/tok~");
    strbuf_printf(out, "| %3s | %-28s | %8s | %8s | %8s | %8s | %9s | %6s | %-4s |\n", "#", "prompt", "A tok/s", "B tok/s",
                  j[5] ? "A J/tok~" : "A J/tok", j[5] ? "B J/tok~" : "B J/tok", "KL(A||B)", "top-1", "same");
    for (int i = 0; i < r->n; i++) {
        const compare_prompt *p = &r->p[i];
        char ja[16] = "-", jb[16] = "-";   // no power monitor: no energy figure, not a zero
        if (r->energy_from[0]) {
            snprintf(ja, sizeof ja, "%.4f", p->j_per_token[0]);
            snprintf(jb, sizeof jb, "%.4f", p->j_per_token[1]);
        }
        strbuf_printf(out, "| %3d | ", i + 1);
        put_clipped(out, p->prompt, 28, 28);
        strbuf_printf(out, " | %8.2f | %8.2f | %8s | %8s | %9.6f | %5.1f%% | %-4s |\n", p->tps[0], p->tps[1], ja, jb,
                      p->kl_mean, 100.0 * p->top1, p->same ? "yes" : "no");
    }
}

void compare_columns(const char *a, const char *b, int width, strbuf *out) {
    int col = (width - 3) / 2;
    if (col < 10) col = 10;
    do {
        a += put_clipped(out, a, wrap_cols(a, col), col);
        strbuf_puts(out, " | ");
        b += put_clipped(out, b, wrap_cols(b, col), 0);
        strbuf_puts(out, "\n");
    } while (*a || *b);
}

// Each prompt's two replies in two columns, under a header row.
static void report_replies(const compare_result *r, int width, strbuf *out) {
    strbuf_puts(out, "\n");
    compare_columns("A", "B", width, out);
    for (int i = 0; i < r->n; i++) {
        const compare_prompt *p = &r->p[i];
        strbuf_printf(out, "#%d ", i + 1);
        put_clipped(out, p->prompt, width - 4, 0);
        strbuf_puts(out, p->same ? "  (the same reply)\n" : "\n");
        compare_columns(p->reply[0], p->reply[1], width, out);
    }
}

// The verdict of one metric: the paired t-test decides (the sign test is shown beside it).
static const char *winner(const paired_result *pr, bool higher_better, char *buf, size_t n) {
    if (pr->n < 2) snprintf(buf, n, "too few prompts to test");
    else if (pr->p_t >= 0.05) snprintf(buf, n, "not significant");
    else snprintf(buf, n, "%s better (p %.3g)", (pr->mean_diff > 0) == higher_better ? "B" : "A", pr->p_t);
    return buf;
}

void compare_summary(const compare_result *r, strbuf *out) {
    char v[2][96];
    strbuf_printf(out, "summary over %d prompts (paired, two-sided: t-test, which decides at p < 0.05, and exact sign test)\n", r->n);
    strbuf_printf(out, "| %-14s | %6s | %6s | %4s | %10s | %10s | %10s | %7s | %7s | %s\n", "metric", "A wins", "B wins", "ties",
                  "mean A", "mean B", "mean B-A", "p (t)", "p (sign)", "verdict");
    const paired_result *pr[2] = { &r->tps, &r->jpt };
    const char *names[2] = { "decode tok/s", r->energy_measured ? "J/token" : "J/token (est)" };
    for (int k = 0; k < (r->energy_from[0] ? 2 : 1); k++)   // no power monitor: no J/token row
        strbuf_printf(out, "| %-14s | %6d | %6d | %4d | %10.4f | %10.4f | %+10.4f | %7.3g | %7.3g | %s\n", names[k],
                      pr[k]->a_wins, pr[k]->b_wins, pr[k]->ties, pr[k]->mean_a, pr[k]->mean_b, pr[k]->mean_diff, pr[k]->p_t,
                      pr[k]->p_sign, winner(pr[k], k == 0, v[k], sizeof v[k]));
    strbuf_printf(out, "KL(A||B) on A's tokens: mean %.6f, max %.6f; top-1 agreement %.1f%%\n", r->kl_mean, r->kl_max,
                  100.0 * r->top1_mean);
    strbuf_printf(out, "identical replies: %d of %d\n", r->same, r->n);
    strbuf_printf(out, "weights: A %.2f MiB, B %.2f MiB (B/A %.3f)\n", r->weight_bytes[0] / 1048576.0,
                  r->weight_bytes[1] / 1048576.0, r->weight_bytes[0] ? (double)r->weight_bytes[1] / r->weight_bytes[0] : 0.0);
    if (r->exact_turns > 0)
        strbuf_printf(out, "action exact-match on %d held-out turns: A %.1f%%, B %.1f%%\n", r->exact_turns,
                      100.0 * r->exact[0] / r->exact_turns, 100.0 * r->exact[1] / r->exact_turns);
}

void compare_report(const compare_result *r, int width, strbuf *out) {
    compare_table(r, out);
    report_replies(r, width, out);
    strbuf_puts(out, "\n");
    compare_summary(r, out);
}

static cJSON *json_paired(const paired_result *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "a_wins", p->a_wins);
    cJSON_AddNumberToObject(o, "b_wins", p->b_wins);
    cJSON_AddNumberToObject(o, "ties", p->ties);
    cJSON_AddNumberToObject(o, "mean_a", p->mean_a);
    cJSON_AddNumberToObject(o, "mean_b", p->mean_b);
    cJSON_AddNumberToObject(o, "mean_diff", p->mean_diff);
    cJSON_AddNumberToObject(o, "t", p->t);
    cJSON_AddNumberToObject(o, "p_t", p->p_t);
    cJSON_AddNumberToObject(o, "p_sign", p->p_sign);
    cJSON_AddBoolToObject(o, "significant", p->n >= 2 && p->p_t < 0.05);
    return o;
}

char *compare_json(const compare_result *r) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", r->model);
    cJSON_AddStringToObject(root, "energy_from", r->energy_from);
    cJSON_AddBoolToObject(root, "energy_measured", r->energy_measured);
    for (int k = 0; k < 2; k++) {
        cJSON *side = cJSON_AddObjectToObject(root, k ? "b" : "a");
        cJSON_AddStringToObject(side, "plan", r->plan[k]);
        cJSON_AddStringToObject(side, "kv", r->kv[k]);
        cJSON_AddNumberToObject(side, "bytes", (double)r->weight_bytes[k]);
        if (r->exact_turns > 0) cJSON_AddNumberToObject(side, "exact_match", (double)r->exact[k] / r->exact_turns);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "prompts");
    for (int i = 0; i < r->n; i++) {
        const compare_prompt *p = &r->p[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "prompt", p->prompt);
        for (int k = 0; k < 2; k++) {
            cJSON *side = cJSON_AddObjectToObject(o, k ? "b" : "a");
            cJSON_AddStringToObject(side, "reply", p->reply[k] ? p->reply[k] : "");
            cJSON_AddNumberToObject(side, "tokens", p->tokens[k]);
            cJSON_AddNumberToObject(side, "tps", p->tps[k]);
            if (r->energy_from[0]) cJSON_AddNumberToObject(side, "j_per_token", p->j_per_token[k]);
            else cJSON_AddNullToObject(side, "j_per_token");   // no power monitor
        }
        cJSON_AddNumberToObject(o, "kl", p->kl_mean);
        cJSON_AddNumberToObject(o, "kl_max", p->kl_max);
        cJSON_AddNumberToObject(o, "top1", p->top1);
        cJSON_AddNumberToObject(o, "positions", p->positions);
        cJSON_AddBoolToObject(o, "same", p->same);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON *s = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(s, "prompts", r->n);
    cJSON_AddItemToObject(s, "tps", json_paired(&r->tps));
    if (r->energy_from[0]) cJSON_AddItemToObject(s, "j_per_token", json_paired(&r->jpt));
    else cJSON_AddNullToObject(s, "j_per_token");
    cJSON_AddNumberToObject(s, "kl_mean", r->kl_mean);
    cJSON_AddNumberToObject(s, "kl_max", r->kl_max);
    cJSON_AddNumberToObject(s, "top1", r->top1_mean);
    cJSON_AddNumberToObject(s, "same", r->same);
    if (r->exact_turns > 0) cJSON_AddNumberToObject(s, "exact_turns", r->exact_turns);
    return json_text(root, true);
}

int compare_plot(const compare_result *r, const char *path, errbuf *err) {
    double *v = xmalloc((size_t)(r->n ? r->n : 1) * 3 * sizeof(double));
    char (*lab)[12] = xmalloc((size_t)(r->n ? r->n : 1) * sizeof *lab);
    const char **labels = xmalloc((size_t)(r->n ? r->n : 1) * sizeof *labels);
    for (int i = 0; i < r->n; i++) {
        v[i] = r->p[i].tps[0];
        v[r->n + i] = r->p[i].tps[1];
        v[2 * r->n + i] = r->p[i].kl_mean;
        snprintf(lab[i], sizeof lab[i], "%d", i + 1);
        labels[i] = lab[i];
    }
    char name[3][200];
    snprintf(name[0], sizeof name[0], "A %s tok/s", r->plan[0]);
    snprintf(name[1], sizeof name[1], "B %s tok/s", r->plan[1]);
    snprintf(name[2], sizeof name[2], "KL(A||B)");
    plot_series s[3] = {
        { .name = name[0], .y = v, .n = r->n },
        { .name = name[1], .y = v + r->n, .n = r->n },
        { .name = name[2], .y = v + 2 * r->n, .n = r->n, .axis = 1 },
    };
    plot_opts po = plot_opts_default();
    po.title = "cabin compare: decode speed per prompt, KL of B against A";
    po.xlabel = "prompt";
    po.ylabel_left = "decode tok/s";
    po.ylabel_right = "KL(A||B)";
    int rc = plot_svg_bars(path, &po, labels, r->n, s, 3, err);
    free(v);
    free(lab);
    free(labels);
    return rc;
}
