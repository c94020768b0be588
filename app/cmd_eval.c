// cabin ppl and cabin eval-assistant: judge a model (and a precision) by numbers.
#include "app/action_grammar.h"
#include "app/assistant.h"
#include "app/commands.h"
#include "app/eval_actions.h"
#include "app/eval_text.h"
#include "base/afile.h"
#include "engine/chat_template.h"
#include "engine/quality.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ppl_progress(void *ud, int done, int total, double ppl) {
    (void)ud;
    fprintf(stderr, "\r[%d/%d] ppl %.4f", done, total, ppl);
    if (done == total) fprintf(stderr, "\n");
}

typedef struct ppl_opts {
    const char *file, *save_base, *kl_base;
    int window, max_chunks;
} ppl_opts;

#define PO(field) offsetof(ppl_opts, field)
static const opt_def PPL_OPTS[] = {
    { "--file", "-f", OPT_STR, PO(file), "TEXT", "the text",
      "the embedded model: its held-out dialogues in its chat layout;\nanother model: a paragraph of prose", NULL, NULL },
    { "--window", NULL, OPT_INT, PO(window), "N", "tokens per window", "the context -c when given, else 512", NULL, NULL },
    { "--chunks", NULL, OPT_INT, PO(max_chunks), "N", "score only the first N windows", "", NULL, NULL },
    { "--save-base", NULL, OPT_STR, PO(save_base), "FILE", "write this run's top-64 log-probs per scored token (for KL)", NULL, NULL, NULL },
    { "--kl-base", NULL, OPT_STR, PO(kl_base), "FILE", "compare with a saved base run: mean/max KL divergence\n"
      "(base top 64 + the rest as one outcome), top-1 agreement,\nand the change in perplexity", NULL, NULL, NULL },
};

static const cmd_spec PPL_SPEC = {
    "cabin ppl", "cabin ppl [-m MODEL] [-f TEXT] [--window N] [--chunks N] [--precision TYPE]",
    "Perplexity of a text: the text is tokenized once and cut into windows of --window\n"
    "tokens; each window starts with BOS and is scored on its second half (every scored\n"
    "token sees at least half a window of context). Without -f, the embedded model scores\n"
    "its held-out dialogues as it reads them in a chat; another model a paragraph of prose,\n"
    "with a note when the perplexity says the text is not the model's domain.\n",
};

// Options -> the window and the session's context; OPTS_USAGE with a line printed when they clash.
static int ppl_parse(int argc, char **argv, ppl_opts *o, run_opts *r) {
    memset(o, 0, sizeof *o);
    run_opts_init(r);
    opt_table own = OPT_TABLE(PPL_OPTS, o);
    int rc = run_opts_parse_with(&PPL_SPEC, &own, r, argc, argv);
    if (rc) return rc;
    if (!o->window) o->window = r->s.n_ctx > 0 ? r->s.n_ctx : 512;   // a window is a whole context
    if (o->window < 8) { fprintf(stderr, "cabin ppl: a window of %d tokens is too small (at least 8)\n", o->window); return OPTS_USAGE; }
    if (r->s.n_ctx == 0) r->s.n_ctx = o->window;
    if (r->s.n_ctx < o->window) {
        fprintf(stderr, "cabin ppl: --window %d is longer than the context (-c %d)\n", o->window, r->s.n_ctx);
        return OPTS_USAGE;
    }
    if (r->s.n_batch > o->window) r->s.n_batch = o->window;
    return OPTS_OK;
}

static void ppl_report(const ppl_opts *o, const char *what, int n, const quality_result *pr, double secs) {
    printf("%s: %d tokens, %d windows of %d, %ld scored in %.1f s\n", what, n, pr->windows, o->window, pr->scored, secs);
    printf("PPL = %.4f +/- %.4f (mean NLL %.5f)\n", pr->ppl, pr->ppl_err, pr->mean_nll);
    if (o->save_base) printf("base saved to %s (top %d log-probs per scored token)\n", o->save_base, QUALITY_TOP_K);
    if (o->kl_base)
        printf("vs base %s: mean KL %.6f, max KL %.6f, top-1 agreement %.2f%%, PPL %.4f -> %.4f (%+.4f)\n",
               o->kl_base, pr->kl_mean, pr->kl_max, 100.0 * pr->top1, pr->base_ppl, pr->ppl, pr->ppl - pr->base_ppl);
}

int cmd_ppl(int argc, char **argv) {
    ppl_opts o;
    run_opts r;
    int prc = ppl_parse(argc, argv, &o, &r);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    errbuf err = {{0}};
    char *text = o.file ? read_file_all(o.file, NULL, &err) : NULL;
    if (o.file && !text) { fprintf(stderr, "cabin ppl: %s\n", err.msg); return 1; }
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin ppl: %s\n", err.msg); free(text); return 1; }
    const char *what = o.file;
    bool prose = false;   // the built-in prose: maybe not the model's domain
    if (!text && !(text = eval_default_text(s, r.s.template_name, &what, &prose, &err))) {
        fprintf(stderr, "cabin ppl: %s\n", err.msg);
        session_close(s);
        return 1;
    }
    int32_t *ids = NULL;
    int n = session_tokenize(s, text, false, &ids, &err);
    free(text);
    int rc = 0;
    if (n < 0) { fprintf(stderr, "cabin ppl: %s\n", err.msg); session_close(s); return 1; }
    quality_result pr = {0};
    quality_base base = {0}, cmp = {0};
    uint64_t hash = quality_hash_tokens(ids, n);
    int nv = session_n_vocab(s);
    if (o.save_base) {   // fail before the run, not after it; an older file stays until the new one is whole
        afile probe;
        if (afile_open(&probe, o.save_base, NULL)) {
            rc = err_set(&err, "%s: cannot write (%s)", o.save_base, strerror(errno));
            goto out;
        }
        afile_close(&probe, true, NULL);
    } else if (o.kl_base && quality_base_load(o.kl_base, &cmp, nv, o.window, hash, &err)) {
        rc = -1;
        goto out;
    }
    double t0 = now_sec();
    quality_opts qo = { .ctx = o.window, .max_chunks = o.max_chunks, .save = o.save_base ? &base : NULL,
                        .cmp = o.kl_base ? &cmp : NULL, .progress = ppl_progress };
    rc = quality_eval(s, ids, n, &qo, &pr, &err);
    if (!rc && o.save_base) rc = quality_base_save(o.save_base, &base, nv, o.window, n, hash, &err);
    if (!rc) {
        ppl_report(&o, what, n, &pr, now_sec() - t0);
        if (prose) eval_note_domain("cabin ppl", pr.ppl, nv);
    }
out:
    if (rc) fprintf(stderr, "cabin ppl: %s\n", err.msg);
    quality_base_free(&base);
    quality_base_free(&cmp);
    free(ids);
    session_close(s);
    return rc ? 1 : 0;
}

// ---- eval-assistant ----

typedef struct reply_buf { char text[2048]; size_t len; } reply_buf;

static bool collect(void *ud, int32_t tok, const char *piece, int len) {
    (void)tok;
    reply_buf *b = ud;
    if (b->len + (size_t)len < sizeof b->text) {
        memcpy(b->text + b->len, piece, (size_t)len);
        b->len += (size_t)len;
        b->text[b->len] = 0;
    }
    return true;
}

// The id of the last special token of the template's user suffix (the assistant header, e.g.
// "<|assistant|>"): reply tokens are the ones after it. -1 if the template has none.
static int32_t assistant_header_id(const session *s, const chat_template *t) {
    const char *open = NULL;
    for (const char *p = t->user_suffix; (p = strstr(p, "<|")); p++) open = p;
    if (!open) return -1;
    const char *close = strstr(open, "|>");
    if (!close) return -1;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(close + 2 - open), open);
    return tokenizer_find(session_model(s)->tok, name);
}

// Teacher-forced negative log-likelihood of the reference replies of one dialogue (each reply
// and its closing token, given the conversation so far with the reference replies in it).
static int score_replies(session *s, const chat_template *tmpl, int32_t header, cJSON *turns,
                         double *nll, long *count, errbuf *err) {
    int nv = session_n_vocab(s);
    float *last = xmalloc((size_t)nv * sizeof(float));
    float *all = NULL;
    size_t all_cap = 0;
    bool first = true;
    int rc = 0;
    session_reset(s);
    cJSON *t;
    cJSON_ArrayForEach(t, turns) {
        const char *u = cJSON_GetObjectItem(t, "user")->valuestring, *want = cJSON_GetObjectItem(t, "reply")->valuestring;
        char *turn = chat_template_render_turn(tmpl, NULL, u, first, false);
        char *text = xmalloc(strlen(turn) + strlen(want) + strlen(tmpl->assistant_end) + 1);
        sprintf(text, "%s%s%s", turn, want, tmpl->assistant_end);
        free(turn);
        int32_t *ids = NULL;
        int n = session_tokenize(s, text, first, &ids, err);
        free(text);
        first = false;
        if (n < 0) { rc = -1; break; }
        int h = -1;
        for (int i = 0; i < n; i++)
            if (ids[i] == header) h = i;
        if (h < 0 || h + 1 >= n) { free(ids); rc = err_set(err, "reply scoring: no assistant header in a turn"); break; }
        if (session_eval(s, ids, h + 1, last, err)) { free(ids); rc = -1; break; }
        *nll -= quality_log_prob(last, nv, ids[h + 1]);
        (*count)++;
        int rest = n - h - 1;   // tokens after the header; the last one predicts nothing we score
        if ((size_t)rest * (size_t)nv > all_cap) { all_cap = (size_t)rest * (size_t)nv; all = xrealloc(all, all_cap * sizeof(float)); }
        if (session_eval_all(s, ids + h + 1, rest, all, err)) { free(ids); rc = -1; break; }
        for (int j = 0; j + 1 < rest; j++) {
            *nll -= quality_log_prob(all + (size_t)j * nv, nv, ids[h + 2 + j]);
            (*count)++;
        }
        free(ids);
    }
    free(last);
    free(all);
    return rc;
}

// Ends the progress line on stderr (if one was printed) so that what follows starts a line.
static void end_progress(bool *shown) {
    if (*shown) fputc('\n', stderr);
    *shown = false;
}

typedef struct eval_opts {
    const char *file, *json_out, *errors_out, *replies_out;
    int limit, ppl_ctx;
} eval_opts;

#define EO(field) offsetof(eval_opts, field)
static const opt_def EVAL_OPTS[] = {
    { "--file", "-f", OPT_STR, EO(file), "FILE", "held-out set", NULL, NULL, NULL },
    { "--limit", NULL, OPT_INT, EO(limit), "N", "only the first N dialogues", "all", NULL, NULL },
    { "--ppl-ctx", NULL, OPT_INT, EO(ppl_ctx), "N", "window for the perplexity of the dialogues", NULL, NULL, NULL },
    { "--json", NULL, OPT_OUT, EO(json_out), NULL, "write the figures as JSON to FILE, or to standard output instead\n"
      "of the table (no FILE, or -)", NULL, NULL, NULL },
    { "--errors", NULL, OPT_STR, EO(errors_out), "FILE", "write every turn whose action differs from the reference, one\n"
      "tab-separated line: file line, user text, wanted, got", NULL, NULL, NULL },
    { "--replies", NULL, OPT_STR, EO(replies_out), "FILE", "write every turn, one tab-separated line: file line, user\n"
      "text, reference reply, the model's whole reply", NULL, NULL, NULL },
};

static const cmd_spec EVAL_SPEC = {
    "cabin eval-assistant", "cabin eval-assistant [-m MODEL] [-f HELDOUT.jsonl] [--limit N] [--precision TYPE] [--json [FILE]]",
    "Runs the held-out assistant dialogues (one JSON object per line:\n"
    "{\"turns\": [{\"user\": ..., \"reply\": ...}, ...]}) through the model, greedy, each\n"
    "dialogue as one conversation, and compares every reply's action with the\n"
    "reference: action exact-match (intent and every slot), intent accuracy and slot\n"
    "accuracy (reference slots reproduced exactly), and how many spoken sentences\n"
    "of right actions name the contact or place acted on; then the perplexity of\n"
    "the reference dialogues in the model's chat layout (as cabin ppl computes it).\n",
};

// One evaluation: the session, what it has counted, and where per-turn lines go.
typedef struct eval_run {
    const eval_opts *o;
    session *s;
    action_grammar *grammar;
    const chat_template *tmpl;
    int32_t header;           // the assistant header token (reply scoring), -1 if none
    FILE *errors, *replies;
    eval_counts c;
    int dialogues;
    double reply_nll;
    long reply_tokens;
    bool progress;            // print "\r[N dialogues]" lines on stderr
    bool progress_shown;      // such a line is open
} eval_run;

// One turn: the model's reply against the reference. -1 with err on a generation error.
static int eval_turn(eval_run *e, int line_no, const char *user, const char *want_text, errbuf *err) {
    eval_counts *c = &e->c;
    reply_buf got = { .len = 0 };
    got.text[0] = 0;
    if (action_grammar_chat(e->grammar, e->s, user, collect, &got, err)) return -1;
    if (e->replies) {   // one line per turn: a tab or newline the model wrote becomes a space
        for (char *p = got.text; *p; p++) if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
        fprintf(e->replies, "%d\t%s\t%s\t%s\n", line_no, user, want_text, got.text);
    }
    action ga, wa;
    char sent[512], perr[128];
    action_parse(want_text, &wa, sent, sizeof sent, perr, sizeof perr);
    if (action_parse(got.text, &ga, sent, sizeof sent, perr, sizeof perr) != 0) c->malformed++;
    c->turns++;
    if (action_equal(&ga, &wa)) {
        c->exact++;
        // Does the spoken sentence name the contact or place the car acts on?
        const char *name = action_slot_value(&ga, "contact");
        if (!name) name = action_slot_value(&ga, "dest");
        if (name) {
            char spoken[256];
            snprintf(spoken, sizeof spoken, "%s", name);
            for (char *p = spoken; *p; p++) if (*p == '_') *p = ' ';
            c->named++;
            if (strcasestr(sent, spoken)) c->named_ok++;
        }
    } else if (e->errors) {
        char wbuf[512], gbuf[512];
        action_format(&wa, wbuf, sizeof wbuf);
        action_format(&ga, gbuf, sizeof gbuf);
        fprintf(e->errors, "%d\t%s\t%s\t%s\n", line_no, user, wbuf, gbuf);
    }
    if (strcmp(ga.intent, wa.intent) == 0) c->intent_ok++;
    for (int i = 0; i < wa.n_slots; i++) {
        const char *v = action_slot_value(&ga, wa.slots[i].key);
        c->slots_total++;
        if (v && strcmp(v, wa.slots[i].value) == 0) c->slots_ok++;
    }
    return 0;
}

// Every dialogue of the held-out text; -1 with "FILE:LINE: ..." in err on a bad line or a
// failed turn.
static int eval_dialogues(eval_run *e, char *text, errbuf *err) {
    const char *file = e->o->file;
    int line_no = 0, rc = 0;
    for (char *line = strtok(text, "\n"); line && !rc; line = strtok(NULL, "\n")) {
        line_no++;
        if (!*line) continue;
        if (e->o->limit > 0 && e->dialogues >= e->o->limit) break;
        cJSON *d = heldout_dialogue(line, file, line_no, err);
        if (!d) {
            rc = -1;
            break;
        }
        cJSON *turns = cJSON_GetObjectItem(d, "turns");
        e->dialogues++;
        session_reset(e->s);
        cJSON *t;
        cJSON_ArrayForEach(t, turns) {
            cJSON *u = cJSON_GetObjectItem(t, "user"), *want = cJSON_GetObjectItem(t, "reply");
            if (!cJSON_IsString(u) || !cJSON_IsString(want)) {
                rc = err_set(err, "%s:%d: a turn lacks \"user\" or \"reply\"", file, line_no);
                break;
            }
            if (eval_turn(e, line_no, u->valuestring, want->valuestring, err)) {
                rc = err_prefix(err, "%s:%d", file, line_no);
                break;
            }
        }
        if (!rc && e->header >= 0 && score_replies(e->s, e->tmpl, e->header, turns, &e->reply_nll, &e->reply_tokens, err))
            rc = err_prefix(err, "%s:%d", file, line_no);
        cJSON_Delete(d);
        if (e->progress && e->dialogues % 20 == 0) {
            fprintf(stderr, "\r[%d dialogues] exact %.1f%%", e->dialogues, 100.0 * e->c.exact / (e->c.turns ? e->c.turns : 1));
            e->progress_shown = true;
        }
    }
    end_progress(&e->progress_shown);
    return rc;
}

int eval_assistant_actions(session *s, const char *heldout, int limit, bool free_actions, eval_counts *out,
                           errbuf *err) {
    eval_opts o = { .file = heldout, .limit = limit };
    eval_run e = { .o = &o, .s = s, .header = -1 };
    char *text = read_file_all(heldout, NULL, err);
    if (!text) return -1;
    e.grammar = free_actions ? NULL : action_grammar_new(s);
    int rc = eval_dialogues(&e, text, err);
    action_grammar_free(e.grammar);
    session_set_filter(s, NULL);
    session_reset(s);
    free(text);
    *out = e.c;
    return rc;
}

// The table (or, with --json and no file, the JSON alone) and the perplexity of the dialogues.
static int eval_report(eval_run *e, const run_opts *r, double secs) {
    const eval_counts *c = &e->c;
    const eval_opts *o = e->o;
    bool table = !opts_out_is_stdout(o->json_out);
    const model *m = session_model(e->s);
    const char *prec = r->s.precision ? r->s.precision : wtype_name(m->layers[0].wq.type);
    double reply_ppl = e->reply_tokens ? exp(e->reply_nll / (double)e->reply_tokens) : 0.0;
    if (table) {
        printf("| model | precision | decoding | dialogues | turns | action exact-match | intent | slots | malformed |\n");
        printf("| %s | %s | %s | %d | %d | %.1f%% | %.1f%% | %.1f%% | %d |\n", m->name, prec,
               e->grammar ? "grammar" : "free", e->dialogues, c->turns,
               100.0 * c->exact / c->turns, 100.0 * c->intent_ok / c->turns,
               c->slots_total ? 100.0 * c->slots_ok / c->slots_total : 100.0, c->malformed);
        printf("(%.1f s)\n", secs);
        if (c->named > 0)
            printf("spoken sentences naming the contact or place acted on: %d of %d right actions with one (%.1f%%)\n",
                   c->named_ok, c->named, 100.0 * c->named_ok / c->named);
        if (e->reply_tokens > 0)
            printf("reference replies (teacher-forced, given the dialogue so far): %ld tokens, PPL %.4f\n",
                   e->reply_tokens, reply_ppl);
    }
    errbuf err = {{0}};
    quality_result pr = {0};
    char *dialogue_text = heldout_chat_text(o->file, e->tmpl, o->limit, &err);
    int32_t *ids = NULL;
    int n = dialogue_text ? session_tokenize(e->s, dialogue_text, false, &ids, &err) : -1;
    quality_opts qo = { .ctx = o->ppl_ctx, .progress = ppl_progress };
    if (n > 0 && quality_eval(e->s, ids, n, &qo, &pr, &err) == 0) {
        if (table)
            printf("whole dialogues (user turns too, which the model was not trained to predict): %d tokens, "
                   "PPL %.4f +/- %.4f (windows of %d)\n", n, pr.ppl, pr.ppl_err, o->ppl_ctx);
    } else {
        fprintf(stderr, "cabin eval-assistant: perplexity: %s\n", err.msg);
    }
    free(ids);
    free(dialogue_text);
    if (!o->json_out) return 0;
    FILE *f = opts_open_out(o->json_out, &err);
    if (f) {
        fprintf(f, "{\"precision\": \"%s\", \"grammar\": %s, \"dialogues\": %d, \"turns\": %d, \"exact\": %.4f, "
                "\"intent\": %.4f, \"slots\": %.4f, \"malformed\": %d, \"named\": %.4f, \"ppl\": %.5f, \"reply_ppl\": %.5f}\n",
                prec, e->grammar ? "true" : "false", e->dialogues,
                c->turns, (double)c->exact / c->turns, (double)c->intent_ok / c->turns,
                c->slots_total ? (double)c->slots_ok / c->slots_total : 1.0, c->malformed,
                c->named ? (double)c->named_ok / c->named : 1.0, pr.ppl, reply_ppl);
        if (opts_close_out(f, o->json_out, &err) == 0) return 0;
    }
    fprintf(stderr, "cabin eval-assistant: %s\n", err.msg);
    return 1;
}

int cmd_eval_assistant(int argc, char **argv) {
    eval_opts o = { .file = CABIN_HELDOUT, .ppl_ctx = 256 };
    run_opts r;
    run_opts_init(&r);
    opt_table own = OPT_TABLE(EVAL_OPTS, &o);
    int prc = run_opts_parse_with(&EVAL_SPEC, &own, &r, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    errbuf err = {{0}};
    char *text = read_file_all(o.file, NULL, &err);
    if (!text) { fprintf(stderr, "cabin eval-assistant: %s\n", err.msg); return 1; }
    eval_run e = { .o = &o };
    // the per-turn files are written whole or not at all, as --json is (opts_open_out)
    if ((o.errors_out && !(e.errors = opts_open_out(o.errors_out, &err))) ||
        (o.replies_out && !(e.replies = opts_open_out(o.replies_out, &err)))) {
        fprintf(stderr, "cabin eval-assistant: %s\n", err.msg);
        if (e.errors) opts_close_out(e.errors, o.errors_out, &err);
        free(text);
        return 1;
    }
    r.s.sampling.temp = 0.0f;
    r.s.max_reply_tokens = 96;
    r.s.model_path = run_opts_model(&r);
    e.s = session_open(&r.s, &err);
    int rc = 0;
    if (!e.s) {
        fprintf(stderr, "cabin eval-assistant: %s\n", err.msg);
        rc = 1;
    } else {
        e.grammar = r.free_actions ? NULL : action_grammar_new(e.s);
        e.tmpl = eval_template(e.s, r.s.template_name);
        e.header = assistant_header_id(e.s, e.tmpl);
        e.progress = true;
        double t0 = now_sec();
        rc = eval_dialogues(&e, text, &err) ? 1 : 0;
        if (rc) fprintf(stderr, "cabin eval-assistant: %s\n", err.msg);
        if (!rc && e.c.turns > 0) rc = eval_report(&e, &r, now_sec() - t0);
    }
    if (e.errors && opts_close_out(e.errors, o.errors_out, &err)) {
        fprintf(stderr, "cabin eval-assistant: %s\n", err.msg);
        rc = 1;
    }
    if (e.replies && opts_close_out(e.replies, o.replies_out, &err)) {
        fprintf(stderr, "cabin eval-assistant: %s\n", err.msg);
        rc = 1;
    }
    action_grammar_free(e.grammar);
    free(text);
    session_close(e.s);
    return rc ? 1 : 0;
}
