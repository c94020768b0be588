// cabin ppl and cabin eval-assistant: judge a model (and a precision) by numbers.
#include "app/assistant.h"
#include "app/commands.h"
#include "engine/chat_template.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// log-softmax of one row at `target`: log p(target)
static double log_prob(const float *logits, int n, int target) {
    float mx = logits[0];
    for (int i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    return (double)logits[target] - mx - log(sum);
}

typedef struct ppl_result {
    double ppl, ppl_err, mean_nll;
    long scored;
    int windows;
    // against a base run (--kl-base)
    double kl_mean, kl_max, top1, base_ppl;
} ppl_result;

// Base-run logits for KL: per scored token the top KL_TOP_K (id, log-prob) of the base model
// and the log-prob it gave the actual next token. File: "CBKL", u32 version, u32 n_vocab,
// u32 k, u32 ctx, u64 n_tokens, u64 token hash, u64 n_scored, then n_scored records.
#define KL_TOP_K 64
typedef struct kl_record { int32_t id[KL_TOP_K]; float lp[KL_TOP_K]; float target_lp; } kl_record;
typedef struct kl_io {
    FILE *save;              // writing a base
    kl_record *base;         // reading a base
    long n_base;
    uint64_t hash;
} kl_io;

static uint64_t hash_tokens(const int32_t *ids, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) { h ^= (uint32_t)ids[i]; h *= 1099511628211ull; }
    return h;
}

// log-softmax of a row into out (n values)
static void log_softmax(const float *logits, int n, double *out) {
    float mx = logits[0];
    for (int i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    double lse = mx + log(sum);
    for (int i = 0; i < n; i++) out[i] = (double)logits[i] - lse;
}

// Perplexity over ids cut into windows of ctx tokens (BOS first when the model has one); each
// window is scored on its second half. Progress on stderr.
static int ppl_windows(session *s, const int32_t *ids, int n, int ctx, int max_chunks, kl_io *kl,
                       ppl_result *out, errbuf *err) {
    int bos = tokenizer_bos(session_model(s)->tok);
    int body = bos >= 0 ? ctx - 1 : ctx;   // text tokens per window
    int n_chunks = n / body;
    if (max_chunks > 0 && n_chunks > max_chunks) n_chunks = max_chunks;
    if (n_chunks < 1) return err_set(err, "%d tokens: fewer than one window of %d (use a smaller --ctx)", n, ctx);
    int nv = session_n_vocab(s);
    float *logits = xmalloc((size_t)ctx * nv * sizeof(float));
    int32_t *win = xmalloc((size_t)ctx * sizeof(int32_t));
    double nll = 0.0, nll2 = 0.0, kl_sum = 0.0, kl_max = 0.0, base_nll = 0.0;
    long scored = 0, top1 = 0;
    double *lsm = kl ? xmalloc((size_t)nv * sizeof(double)) : NULL;
    int rc = 0;
    for (int c = 0; c < n_chunks && !rc; c++) {
        int w = 0;
        if (bos >= 0) win[w++] = bos;
        memcpy(win + w, ids + (size_t)c * body, (size_t)body * sizeof(int32_t));
        w += body;
        session_reset(s);
        if (session_eval_all(s, win, w, logits, err)) { rc = -1; break; }
        for (int i = ctx / 2; i < w - 1; i++) {
            const float *row = logits + (size_t)i * nv;
            double lp = -log_prob(row, nv, win[i + 1]);
            nll += lp;
            nll2 += lp * lp;
            if (kl && kl->save) {
                kl_record rec;
                log_softmax(row, nv, lsm);
                // top-k by a partial selection (k is small)
                for (int k = 0; k < KL_TOP_K; k++) { rec.id[k] = -1; rec.lp[k] = -INFINITY; }
                for (int v = 0; v < nv; v++) {
                    if (lsm[v] <= rec.lp[KL_TOP_K - 1]) continue;
                    int k = KL_TOP_K - 1;
                    while (k > 0 && rec.lp[k - 1] < lsm[v]) { rec.lp[k] = rec.lp[k - 1]; rec.id[k] = rec.id[k - 1]; k--; }
                    rec.lp[k] = (float)lsm[v];
                    rec.id[k] = v;
                }
                rec.target_lp = (float)-lp;
                if (fwrite(&rec, sizeof rec, 1, kl->save) != 1) { rc = err_set(err, "writing the base file failed"); break; }
            } else if (kl && kl->base) {
                if (scored >= kl->n_base) { rc = err_set(err, "the base file has fewer scored tokens than this run"); break; }
                const kl_record *rec = &kl->base[scored];
                log_softmax(row, nv, lsm);
                double d = 0.0, p_in = 0.0, q_in = 0.0;
                for (int k = 0; k < KL_TOP_K; k++) {
                    if (rec->id[k] < 0 || rec->id[k] >= nv) continue;
                    double p = exp(rec->lp[k]), q = exp(lsm[rec->id[k]]);
                    d += p * (rec->lp[k] - lsm[rec->id[k]]);
                    p_in += p;
                    q_in += q;
                }
                // the tail beyond the base's top k, as one outcome
                double p_tail = 1.0 - p_in, q_tail = 1.0 - q_in;
                if (p_tail > 1e-12) d += p_tail * (log(p_tail) - log(q_tail > 1e-12 ? q_tail : 1e-12));
                if (d < 0) d = 0;   // rounding
                kl_sum += d;
                if (d > kl_max) kl_max = d;
                int best = 0;
                for (int v = 1; v < nv; v++) if (row[v] > row[best]) best = v;
                top1 += best == rec->id[0];
                base_nll -= rec->target_lp;
            }
            scored++;
        }
        fprintf(stderr, "\r[%d/%d] ppl %.4f", c + 1, n_chunks, exp(nll / (double)scored));
    }
    fprintf(stderr, "\n");
    free(logits);
    free(win);
    free(lsm);
    if (rc) return rc;
    if (kl && kl->base) {
        out->kl_mean = kl_sum / (double)scored;
        out->kl_max = kl_max;
        out->top1 = (double)top1 / (double)scored;
        out->base_ppl = exp(base_nll / (double)scored);
    }
    double mean = nll / (double)scored;
    double var = nll2 / (double)scored - mean * mean;
    out->mean_nll = mean;
    out->ppl = exp(mean);
    out->ppl_err = out->ppl * sqrt(var > 0 ? var / (double)scored : 0);
    out->scored = scored;
    out->windows = n_chunks;
    return 0;
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
    ppl_result pr = {0};
    kl_io kl = {0};
    kl.hash = hash_tokens(ids, n);
    uint32_t hdr[4];
    uint64_t hdr64[3];
    if (save_base) {
        kl.save = fopen(save_base, "wb");
        if (!kl.save) { rc = err_set(&err, "%s: cannot write", save_base); goto out; }
        memcpy(hdr, "CBKL", 4);
        hdr[1] = 1; hdr[2] = (uint32_t)session_n_vocab(s); hdr[3] = KL_TOP_K;
        uint32_t c32 = (uint32_t)ctx;
        hdr64[0] = (uint64_t)n; hdr64[1] = kl.hash; hdr64[2] = 0;
        fwrite(hdr, 4, 4, kl.save);
        fwrite(&c32, 4, 1, kl.save);
        fwrite(hdr64, 8, 3, kl.save);
    } else if (kl_base) {
        size_t len = 0;
        char *raw = read_file_all(kl_base, &len, &err);
        if (!raw) { rc = -1; goto out; }
        size_t head = 16 + 4 + 24;
        uint32_t c32 = 0;
        if (len >= head) { memcpy(hdr, raw, 16); memcpy(&c32, raw + 16, 4); memcpy(hdr64, raw + 20, 24); }
        if (len < head || memcmp(raw, "CBKL", 4) || hdr[1] != 1 || hdr[3] != KL_TOP_K)
            rc = err_set(&err, "%s: not a cabin base-logits file", kl_base);
        else if (hdr[2] != (uint32_t)session_n_vocab(s) || hdr64[1] != kl.hash || c32 != (uint32_t)ctx)
            rc = err_set(&err, "%s: made from another vocabulary, text or --ctx (base: ctx %u, %llu tokens)",
                         kl_base, c32, (unsigned long long)hdr64[0]);
        else if ((len - head) % sizeof(kl_record) || (len - head) / sizeof(kl_record) != hdr64[2])
            rc = err_set(&err, "%s: truncated (%zu bytes)", kl_base, len);
        if (!rc) {
            kl.n_base = (long)hdr64[2];
            kl.base = xmalloc((size_t)kl.n_base * sizeof(kl_record) + 1);
            memcpy(kl.base, raw + head, (size_t)kl.n_base * sizeof(kl_record));
        }
        free(raw);
        if (rc) goto out;
    }
    double t0 = now_sec();
    rc = ppl_windows(s, ids, n, ctx, max_chunks, (save_base || kl_base) ? &kl : NULL, &pr, &err);
    if (!rc && kl.save) {   // record how many tokens were scored
        hdr64[2] = (uint64_t)pr.scored;
        if (fseek(kl.save, 20 + 16, SEEK_SET) != 0 || fwrite(&hdr64[2], 8, 1, kl.save) != 1 || fclose(kl.save) != 0)
            rc = err_set(&err, "%s: write failed", save_base);
        kl.save = NULL;
    }
    if (!rc) {
        printf("%s: %d tokens, %d windows of %d, %ld scored in %.1f s\n", file, n, pr.windows, ctx, pr.scored, now_sec() - t0);
        printf("PPL = %.4f +/- %.4f (mean NLL %.5f)\n", pr.ppl, pr.ppl_err, pr.mean_nll);
        if (save_base) printf("base saved to %s (top %d log-probs per scored token)\n", save_base, KL_TOP_K);
        if (kl_base)
            printf("vs base %s: mean KL %.6f, max KL %.6f, top-1 agreement %.2f%%, PPL %.4f -> %.4f (%+.4f)\n",
                   kl_base, pr.kl_mean, pr.kl_max, 100.0 * pr.top1, pr.base_ppl, pr.ppl, pr.ppl - pr.base_ppl);
    }
out:
    if (rc) fprintf(stderr, "cabin ppl: %s\n", err.msg);
    if (kl.save) fclose(kl.save);
    free(kl.base);
    free(ids);
    session_close(s);
    return rc ? 1 : 0;
}

// ---- eval-assistant ----

typedef struct eval_counts {
    int turns, exact, intent_ok, slots_total, slots_ok, malformed;
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

int cmd_eval_assistant(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin eval-assistant", false };
    run_opts r;
    run_opts_init(&r);
    const char *file = "assets/eval/heldout.jsonl", *json_out = NULL;
    int limit = 0, ppl_ctx = 256;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin eval-assistant [-m MODEL] [-f HELDOUT.jsonl] [--limit N] [--precision TYPE]\n\n"
                   "Runs the held-out assistant dialogues (one JSON object per line:\n"
                   "{\"turns\": [{\"user\": ..., \"reply\": ...}, ...]}) through the model, greedy, each\n"
                   "dialogue as one conversation, and compares every reply's action with the\n"
                   "reference: action exact-match (intent and every slot), intent accuracy and slot\n"
                   "accuracy (reference slots reproduced exactly); then the perplexity of the\n"
                   "reference dialogues in the model's chat layout (as cabin ppl computes it).\n"
                   "  -f FILE        held-out set (default assets/eval/heldout.jsonl)\n"
                   "  --limit N      only the first N dialogues\n"
                   "  --ppl-ctx N    window for the perplexity of the dialogues (default 256)\n"
                   "  --json FILE    also write the figures as JSON\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (arg_str(&a, "-f", "--file", &file)) continue;
        if (arg_int(&a, "--limit", NULL, &limit)) continue;
        if (arg_int(&a, "--ppl-ctx", NULL, &ppl_ctx)) continue;
        if (arg_str(&a, "--json", NULL, &json_out)) continue;
        if (run_opts_parse(&r, &a)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    errbuf err = {{0}};
    char *text = read_file_all(file, NULL, &err);
    if (!text) { fprintf(stderr, "cabin eval-assistant: %s\n", err.msg); return 1; }
    r.s.sampling.temp = 0.0f;
    r.s.max_reply_tokens = 96;
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin eval-assistant: %s\n", err.msg); free(text); return 1; }
    eval_counts c = {0};
    int line_no = 0, dialogues = 0, rc = 0;
    const chat_template *tmpl = r.s.template_name ? chat_template_by_name(r.s.template_name)
                                                  : chat_template_detect(session_model(s)->chat_template);
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
            if (session_chat(s, u->valuestring, collect, &got, &err)) {
                fprintf(stderr, "cabin eval-assistant: %s:%d: %s\n", file, line_no, err.msg);
                rc = 1;
                break;
            }
            action ga, wa;
            char sent[512], e[128];
            action_parse(want->valuestring, &wa, sent, sizeof sent, e, sizeof e);
            if (action_parse(got.text, &ga, sent, sizeof sent, e, sizeof e) != 0) c.malformed++;
            c.turns++;
            if (action_equal(&ga, &wa)) c.exact++;
            if (strcmp(ga.intent, wa.intent) == 0) c.intent_ok++;
            for (int i = 0; i < wa.n_slots; i++) {
                const char *v = action_slot_value(&ga, wa.slots[i].key);
                c.slots_total++;
                if (v && strcmp(v, wa.slots[i].value) == 0) c.slots_ok++;
            }
        }
        cJSON_Delete(d);
        if (dialogues % 20 == 0)
            fprintf(stderr, "\r[%d dialogues] exact %.1f%%", dialogues, 100.0 * c.exact / (c.turns ? c.turns : 1));
    }
    fprintf(stderr, "\n");
    if (!rc && c.turns > 0) {
        const model *m = session_model(s);
        const char *prec = r.s.precision ? r.s.precision : wtype_name(m->layers[0].wq.type);
        printf("| model | precision | dialogues | turns | action exact-match | intent | slots | malformed |\n");
        printf("| %s | %s | %d | %d | %.1f%% | %.1f%% | %.1f%% | %d |\n", m->name, prec, dialogues, c.turns,
               100.0 * c.exact / c.turns, 100.0 * c.intent_ok / c.turns,
               c.slots_total ? 100.0 * c.slots_ok / c.slots_total : 100.0, c.malformed);
        printf("(%.1f s)\n", now_sec() - t0);
        int32_t *ids = NULL;
        int n = session_tokenize(s, dialogue_text, false, &ids, &err);
        ppl_result pr = {0};
        if (n > 0 && ppl_windows(s, ids, n, ppl_ctx, 0, NULL, &pr, &err) == 0)
            printf("held-out dialogues: %d tokens, PPL %.4f +/- %.4f (windows of %d)\n", n, pr.ppl, pr.ppl_err, ppl_ctx);
        else
            fprintf(stderr, "cabin eval-assistant: perplexity: %s\n", err.msg);
        free(ids);
        if (json_out) {
            FILE *f = fopen(json_out, "w");
            if (f) {
                fprintf(f, "{\"precision\": \"%s\", \"dialogues\": %d, \"turns\": %d, \"exact\": %.4f, "
                        "\"intent\": %.4f, \"slots\": %.4f, \"malformed\": %d, \"ppl\": %.5f}\n", prec, dialogues,
                        c.turns, (double)c.exact / c.turns, (double)c.intent_ok / c.turns,
                        c.slots_total ? (double)c.slots_ok / c.slots_total : 1.0, c.malformed, pr.ppl);
                fclose(f);
            }
        }
    }
    free(dialogue_text);
    free(text);
    session_close(s);
    return rc ? 1 : 0;
}
