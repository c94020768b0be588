// cabin ppl and cabin eval-assistant: judge a model (and a precision) by numbers.
#include "app/action_grammar.h"
#include "app/assistant.h"
#include "app/commands.h"
#include "engine/chat_template.h"
#include "engine/quality.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ppl_progress(void *ud, int done, int total, double ppl) {
    (void)ud;
    fprintf(stderr, "\r[%d/%d] ppl %.4f", done, total, ppl);
    if (done == total) fprintf(stderr, "\n");
}

int cmd_ppl(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin ppl", false };
    run_opts r;
    run_opts_init(&r);
    const char *file = NULL, *save_base = NULL, *kl_base = NULL;
    int ctx = 512, max_chunks = 0;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin ppl -m MODEL -f TEXT [--ctx N] [--chunks N] [--precision TYPE]\n\n"
                   "Perplexity of a text file: the text is tokenized once and cut into windows of\n"
                   "--ctx tokens (default 512); each window starts with BOS and is scored on its\n"
                   "second half (every scored token sees at least ctx/2 tokens of context).\n"
                   "  -f, --file TEXT      the text\n"
                   "  --chunks N           score only the first N windows\n"
                   "  --save-base FILE     write this run's top-64 log-probs per scored token (for KL)\n"
                   "  --kl-base FILE       compare with a saved base run: mean/max KL divergence\n"
                   "                       (base top 64 + the rest as one outcome), top-1 agreement,\n"
                   "                       and the change in perplexity\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (arg_str(&a, "-f", "--file", &file)) continue;
        if (arg_int(&a, "--ctx", NULL, &ctx)) continue;
        if (arg_int(&a, "--chunks", NULL, &max_chunks)) continue;
        if (arg_str(&a, "--save-base", NULL, &save_base)) continue;
        if (arg_str(&a, "--kl-base", NULL, &kl_base)) continue;
        if (run_opts_parse(&r, &a)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    if (!file) { fprintf(stderr, "cabin ppl: no text file (-f TEXT)\n"); return 2; }
    if (ctx < 8) { fprintf(stderr, "cabin ppl: --ctx %d is too small (at least 8)\n", ctx); return 2; }
    errbuf err = {{0}};
    char *text = read_file_all(file, NULL, &err);
    if (!text) { fprintf(stderr, "cabin ppl: %s\n", err.msg); return 1; }
    r.s.n_ctx = ctx;
    if (r.s.n_batch > ctx) r.s.n_batch = ctx;
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin ppl: %s\n", err.msg); free(text); return 1; }
    int32_t *ids = NULL;
    int n = session_tokenize(s, text, false, &ids, &err);
    free(text);
    int rc = 0;
    if (n < 0) { fprintf(stderr, "cabin ppl: %s\n", err.msg); session_close(s); return 1; }
    quality_result pr = {0};
    quality_base base = {0}, cmp = {0};
    uint64_t hash = quality_hash_tokens(ids, n);
    int nv = session_n_vocab(s);
    if (save_base) {   // fail before the run, not after it
        FILE *f = fopen(save_base, "wb");
        if (!f) { rc = err_set(&err, "%s: cannot write", save_base); goto out; }
        fclose(f);
    } else if (kl_base && quality_base_load(kl_base, &cmp, nv, ctx, hash, &err)) {
        rc = -1;
        goto out;
    }
    double t0 = now_sec();
    quality_opts qo = { .ctx = ctx, .max_chunks = max_chunks, .save = save_base ? &base : NULL,
                        .cmp = kl_base ? &cmp : NULL, .progress = ppl_progress };
    rc = quality_eval(s, ids, n, &qo, &pr, &err);
    if (!rc && save_base) rc = quality_base_save(save_base, &base, nv, ctx, n, hash, &err);
    if (!rc) {
        printf("%s: %d tokens, %d windows of %d, %ld scored in %.1f s\n", file, n, pr.windows, ctx, pr.scored, now_sec() - t0);
        printf("PPL = %.4f +/- %.4f (mean NLL %.5f)\n", pr.ppl, pr.ppl_err, pr.mean_nll);
        if (save_base) printf("base saved to %s (top %d log-probs per scored token)\n", save_base, QUALITY_TOP_K);
        if (kl_base)
            printf("vs base %s: mean KL %.6f, max KL %.6f, top-1 agreement %.2f%%, PPL %.4f -> %.4f (%+.4f)\n",
                   kl_base, pr.kl_mean, pr.kl_max, 100.0 * pr.top1, pr.base_ppl, pr.ppl, pr.ppl - pr.base_ppl);
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

typedef struct eval_counts {
    int turns, exact, intent_ok, slots_total, slots_ok, malformed;
    int named, named_ok;   // right actions with a contact or place; those whose sentence names it
    double nll; long nll_tokens;
} eval_counts;

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

int cmd_eval_assistant(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin eval-assistant", false };
    run_opts r;
    run_opts_init(&r);
    const char *file = "assets/eval/heldout.jsonl", *json_out = NULL, *errors_out = NULL, *replies_out = NULL;
    int limit = 0, ppl_ctx = 256;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin eval-assistant [-m MODEL] [-f HELDOUT.jsonl] [--limit N] [--precision TYPE]\n\n"
                   "Runs the held-out assistant dialogues (one JSON object per line:\n"
                   "{\"turns\": [{\"user\": ..., \"reply\": ...}, ...]}) through the model, greedy, each\n"
                   "dialogue as one conversation, and compares every reply's action with the\n"
                   "reference: action exact-match (intent and every slot), intent accuracy and slot\n"
                   "accuracy (reference slots reproduced exactly), and how many spoken sentences\n"
                   "of right actions name the contact or place acted on; then the perplexity of\n"
                   "the reference dialogues in the model's chat layout (as cabin ppl computes it).\n"
                   "  -f FILE        held-out set (default assets/eval/heldout.jsonl)\n"
                   "  --limit N      only the first N dialogues\n"
                   "  --ppl-ctx N    window for the perplexity of the dialogues (default 256)\n"
                   "  --json FILE    also write the figures as JSON\n"
                   "  --errors FILE  write every turn whose action differs from the reference, one\n"
                   "                 tab-separated line: file line, user text, wanted, got\n"
                   "  --replies FILE write every turn, one tab-separated line: file line, user\n"
                   "                 text, reference reply, the model's whole reply\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (arg_str(&a, "-f", "--file", &file)) continue;
        if (arg_int(&a, "--limit", NULL, &limit)) continue;
        if (arg_int(&a, "--ppl-ctx", NULL, &ppl_ctx)) continue;
        if (arg_str(&a, "--json", NULL, &json_out)) continue;
        if (arg_str(&a, "--errors", NULL, &errors_out)) continue;
        if (arg_str(&a, "--replies", NULL, &replies_out)) continue;
        if (run_opts_parse(&r, &a)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    errbuf err = {{0}};
    char *text = read_file_all(file, NULL, &err);
    if (!text) { fprintf(stderr, "cabin eval-assistant: %s\n", err.msg); return 1; }
    FILE *errors = NULL, *replies = NULL;
    if ((errors_out && !(errors = fopen(errors_out, "w"))) || (replies_out && !(replies = fopen(replies_out, "w")))) {
        fprintf(stderr, "cabin eval-assistant: %s: cannot write\n", errors_out && !errors ? errors_out : replies_out);
        if (errors) fclose(errors);
        free(text);
        return 1;
    }
    r.s.sampling.temp = 0.0f;
    r.s.max_reply_tokens = 96;
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin eval-assistant: %s\n", err.msg); free(text); return 1; }
    action_grammar *grammar = r.free_actions ? NULL : action_grammar_new(s);
    eval_counts c = {0};
    int line_no = 0, dialogues = 0, rc = 0;
    bool progress_shown = false;   // a "\r[N dialogues]" line is open on stderr
    const chat_template *tmpl = r.s.template_name ? chat_template_by_name(r.s.template_name)
                                                  : chat_template_detect(session_model(s)->chat_template);
    int32_t header = assistant_header_id(s, tmpl);
    double reply_nll = 0.0;
    long reply_tokens = 0;
    // The held-out dialogues in chat layout, for perplexity.
    size_t dlen = 0, dcap = 1 << 16;
    char *dialogue_text = xmalloc(dcap);
    dialogue_text[0] = 0;
    double t0 = now_sec();
    for (char *line = strtok(text, "\n"); line && !rc; line = strtok(NULL, "\n")) {
        line_no++;
        if (!*line) continue;
        if (limit > 0 && dialogues >= limit) break;
        cJSON *d = cJSON_Parse(line);
        cJSON *turns = d ? cJSON_GetObjectItem(d, "turns") : NULL;
        if (!cJSON_IsArray(turns)) {
            end_progress(&progress_shown);
            fprintf(stderr, "cabin eval-assistant: %s:%d: not a dialogue ({\"turns\": [...]})\n", file, line_no);
            cJSON_Delete(d);
            rc = 1;
            break;
        }
        dialogues++;
        session_reset(s);
        bool first_turn = true;
        cJSON *t;
        cJSON_ArrayForEach(t, turns) {
            cJSON *u = cJSON_GetObjectItem(t, "user"), *want = cJSON_GetObjectItem(t, "reply");
            if (!cJSON_IsString(u) || !cJSON_IsString(want)) {
                end_progress(&progress_shown);
                fprintf(stderr, "cabin eval-assistant: %s:%d: a turn lacks \"user\" or \"reply\"\n", file, line_no);
                rc = 1;
                break;
            }
            char *turn = chat_template_render_turn(tmpl, NULL, u->valuestring, first_turn, false);
            size_t need = strlen(turn) + strlen(want->valuestring) + strlen(tmpl->assistant_end) + 1;
            if (dlen + need >= dcap) { dcap = (dlen + need) * 2; dialogue_text = xrealloc(dialogue_text, dcap); }
            dlen += (size_t)sprintf(dialogue_text + dlen, "%s%s%s", turn, want->valuestring, tmpl->assistant_end);
            free(turn);
            first_turn = false;
            reply_buf got = { .len = 0 };
            got.text[0] = 0;
            if (action_grammar_chat(grammar, s, u->valuestring, collect, &got, &err)) {
                end_progress(&progress_shown);
                fprintf(stderr, "cabin eval-assistant: %s:%d: %s\n", file, line_no, err.msg);
                rc = 1;
                break;
            }
            if (replies) {   // one line per turn: a tab or newline the model wrote becomes a space
                for (char *p = got.text; *p; p++) if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
                fprintf(replies, "%d\t%s\t%s\t%s\n", line_no, u->valuestring, want->valuestring, got.text);
            }
            action ga, wa;
            char sent[512], e[128];
            action_parse(want->valuestring, &wa, sent, sizeof sent, e, sizeof e);
            if (action_parse(got.text, &ga, sent, sizeof sent, e, sizeof e) != 0) c.malformed++;
            c.turns++;
            if (action_equal(&ga, &wa)) {
                c.exact++;
                // Does the spoken sentence name the contact or place the car acts on?
                const char *name = action_slot_value(&ga, "contact");
                if (!name) name = action_slot_value(&ga, "dest");
                if (name) {
                    char spoken[256];
                    snprintf(spoken, sizeof spoken, "%s", name);
                    for (char *p = spoken; *p; p++) if (*p == '_') *p = ' ';
                    c.named++;
                    if (strcasestr(sent, spoken)) c.named_ok++;
                }
            } else if (errors) {
                char wbuf[512], gbuf[512];
                action_format(&wa, wbuf, sizeof wbuf);
                action_format(&ga, gbuf, sizeof gbuf);
                fprintf(errors, "%d\t%s\t%s\t%s\n", line_no, u->valuestring, wbuf, gbuf);
            }
            if (strcmp(ga.intent, wa.intent) == 0) c.intent_ok++;
            for (int i = 0; i < wa.n_slots; i++) {
                const char *v = action_slot_value(&ga, wa.slots[i].key);
                c.slots_total++;
                if (v && strcmp(v, wa.slots[i].value) == 0) c.slots_ok++;
            }
        }
        if (!rc && header >= 0 && score_replies(s, tmpl, header, turns, &reply_nll, &reply_tokens, &err)) {
            end_progress(&progress_shown);
            fprintf(stderr, "cabin eval-assistant: %s:%d: %s\n", file, line_no, err.msg);
            rc = 1;
        }
        cJSON_Delete(d);
        if (dialogues % 20 == 0) {
            fprintf(stderr, "\r[%d dialogues] exact %.1f%%", dialogues, 100.0 * c.exact / (c.turns ? c.turns : 1));
            progress_shown = true;
        }
    }
    end_progress(&progress_shown);
    if (!rc && c.turns > 0) {
        const model *m = session_model(s);
        const char *prec = r.s.precision ? r.s.precision : wtype_name(m->layers[0].wq.type);
        printf("| model | precision | decoding | dialogues | turns | action exact-match | intent | slots | malformed |\n");
        printf("| %s | %s | %s | %d | %d | %.1f%% | %.1f%% | %.1f%% | %d |\n", m->name, prec,
               grammar ? "grammar" : "free", dialogues, c.turns,
               100.0 * c.exact / c.turns, 100.0 * c.intent_ok / c.turns,
               c.slots_total ? 100.0 * c.slots_ok / c.slots_total : 100.0, c.malformed);
        printf("(%.1f s)\n", now_sec() - t0);
        if (c.named > 0)
            printf("spoken sentences naming the contact or place acted on: %d of %d right actions with one (%.1f%%)\n",
                   c.named_ok, c.named, 100.0 * c.named_ok / c.named);
        if (reply_tokens > 0)
            printf("reference replies (teacher-forced, given the dialogue so far): %ld tokens, PPL %.4f\n",
                   reply_tokens, exp(reply_nll / (double)reply_tokens));
        int32_t *ids = NULL;
        int n = session_tokenize(s, dialogue_text, false, &ids, &err);
        quality_result pr = {0};
        quality_opts qo = { .ctx = ppl_ctx, .progress = ppl_progress };
        if (n > 0 && quality_eval(s, ids, n, &qo, &pr, &err) == 0)
            printf("whole dialogues (user turns too, which the model was not trained to predict): %d tokens, "
                   "PPL %.4f +/- %.4f (windows of %d)\n", n, pr.ppl, pr.ppl_err, ppl_ctx);
        else
            fprintf(stderr, "cabin eval-assistant: perplexity: %s\n", err.msg);
        free(ids);
        if (json_out) {
            FILE *f = fopen(json_out, "w");
            if (f) {
                fprintf(f, "{\"precision\": \"%s\", \"grammar\": %s, \"dialogues\": %d, \"turns\": %d, \"exact\": %.4f, "
                        "\"intent\": %.4f, \"slots\": %.4f, \"malformed\": %d, \"named\": %.4f, \"ppl\": %.5f, \"reply_ppl\": %.5f}\n", prec, grammar ? "true" : "false", dialogues,
                        c.turns, (double)c.exact / c.turns, (double)c.intent_ok / c.turns,
                        c.slots_total ? (double)c.slots_ok / c.slots_total : 1.0, c.malformed,
                        c.named ? (double)c.named_ok / c.named : 1.0, pr.ppl,
                        reply_tokens ? exp(reply_nll / (double)reply_tokens) : 0.0);
                fclose(f);
            }
        }
    }
    if (errors) fclose(errors);
    if (replies) fclose(replies);
    action_grammar_free(grammar);
    free(dialogue_text);
    free(text);
    session_close(s);
    return rc ? 1 : 0;
}
