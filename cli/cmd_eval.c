// cabin ppl and cabin eval-assistant: judge a model (and a precision) by numbers.
#include "app/action_grammar.h"
#include "app/assistant.h"
#include "cli/commands.h"
#include "app/eval_actions.h"
#include "app/eval_text.h"
#include "base/afile.h"
#include "base/progress.h"
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
    progress_report(ud, done, total, "[%d/%d] ppl %.4f", done, total, ppl);
}

typedef struct ppl_opts {
    const char *file, *save_base, *kl_base;
    int window, max_chunks;
} ppl_opts;

#define PO(field) offsetof(ppl_opts, field)
static const opt_def PPL_OPTS[] = {
    OPT_TEXT_FILE(PO(file), "the text"),
    { "--window", NULL, OPT_INT, PO(window), "N", "tokens per window", "the context -c when given, else 512", NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--chunks", NULL, OPT_INT, PO(max_chunks), "N", "score only the first N windows", "", NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
    { "--save-base", NULL, OPT_STR, PO(save_base), "FILE", "write this run's top-64 log-probs per scored token (for KL)", NULL, NULL, NULL, .writes = true },
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
    progress bar;
    progress_start(&bar, stderr);
    qo.progress_ud = &bar;
    rc = quality_eval(s, ids, n, &qo, &pr, &err);
    progress_end(&bar);
    if (!rc && o.save_base) rc = quality_base_save(o.save_base, &base, nv, o.window, n, hash, &err);
    if (!rc) {
        ppl_report(&o, what, n, &pr, now_sec() - t0);
        if (prose) eval_note_domain("cabin ppl", pr.ppl, nv);
        else if (!o.file) eval_note_dialogues("cabin ppl");
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

typedef struct eval_opts {
    const char *file, *json_out, *errors_out, *replies_out;
    int limit, ppl_ctx;
} eval_opts;

#define EO(field) offsetof(eval_opts, field)
static const opt_def EVAL_OPTS[] = {
    { "--file", "-f", OPT_STR, EO(file), "FILE", "held-out set", NULL, NULL, NULL },
    { "--limit", NULL, OPT_INT, EO(limit), "N", "only the first N dialogues", "all", NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
    { "--ppl-ctx", NULL, OPT_INT, EO(ppl_ctx), "N", "window for the perplexity of the dialogues", NULL, NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--json", NULL, OPT_OUT, EO(json_out), NULL, "write the figures as JSON to FILE, or to standard output instead\n"
      "of the table (no FILE, or -)", NULL, NULL, NULL },
    { "--errors", NULL, OPT_STR, EO(errors_out), "FILE", "write every turn whose action differs from the reference, one\n"
      "tab-separated line: file line, user text, wanted, got", NULL, NULL, NULL, .writes = true },
    { "--replies", NULL, OPT_STR, EO(replies_out), "FILE", "write every turn, one tab-separated line: file line, user\n"
      "text, reference reply, the model's whole reply", NULL, NULL, NULL, .writes = true },
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

// The table (or, with --json and no file, the JSON alone) and the perplexity of the dialogues.
static int eval_report(eval_run *e, const eval_opts *o, const run_opts *r, double secs) {
    const eval_counts *c = &e->c;
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
        const decode_counts *d[2] = { &c->decode, &c->first };
        for (int k = 0; k < 2; k++)
            if (d[k]->replies > 0 && d[k]->tokens > 0)
                printf("%s: %.2f tokens per reply in %.2f forward passes (%.1f%% of the tokens forced by the grammar, "
                       "fed with the one before them%s)\n", k ? "first replies of dialogues" : "replies",
                       (double)d[k]->tokens / d[k]->replies, (double)d[k]->passes / d[k]->replies,
                       100.0 * (double)d[k]->forced / (double)d[k]->tokens, r->s.no_jump_forward ? "; off: --no-jump-forward" : "");
        if (e->reply_tokens > 0)
            printf("reference replies (teacher-forced, given the dialogue so far): %ld tokens, PPL %.4f\n",
                   e->reply_tokens, reply_ppl);
    }
    errbuf err = {{0}};
    quality_result pr = {0};
    char *dialogue_text = heldout_chat_text(o->file, e->tmpl, o->limit, &err);
    int32_t *ids = NULL;
    int n = dialogue_text ? session_tokenize(e->s, dialogue_text, false, &ids, &err) : -1;
    progress bar;
    progress_start(&bar, stderr);
    quality_opts qo = { .ctx = o->ppl_ctx, .progress = ppl_progress, .progress_ud = &bar };
    int qrc = n > 0 ? quality_eval(e->s, ids, n, &qo, &pr, &err) : -1;
    progress_end(&bar);
    if (qrc == 0) {
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
                "\"intent\": %.4f, \"slots\": %.4f, \"malformed\": %d, \"named\": %.4f, \"ppl\": %.5f, \"reply_ppl\": %.5f, "
                "\"reply_tokens\": %ld, \"reply_passes\": %ld, \"forced_tokens\": %ld}\n",
                prec, e->grammar ? "true" : "false", e->dialogues,
                c->turns, (double)c->exact / c->turns, (double)c->intent_ok / c->turns,
                c->slots_total ? (double)c->slots_ok / c->slots_total : 1.0, c->malformed,
                c->named ? (double)c->named_ok / c->named : 1.0, pr.ppl, reply_ppl, c->decode.tokens,
                c->decode.passes, c->decode.forced);
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
    eval_run e = { .file = o.file, .limit = o.limit };
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
        if (!rc && e.c.turns > 0) rc = eval_report(&e, &o, &r, now_sec() - t0);
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
