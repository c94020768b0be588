#include "session_impl.h"
#include "chat_template.h"
#include "wtype.h"
#include "base/str.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

session_opts session_opts_default(void) {
    session_opts o;
    memset(&o, 0, sizeof o);
    o.backend.name = "auto";
    o.backend.kernels = "auto";
    o.n_batch = 256;
    o.sampling = sampler_defaults();
    o.max_reply_tokens = 512;
    return o;
}

// What to do when the context is full, in the words of the front end in use.
static const char *context_hint(const session *s) {
    return s->opts.context_hint ? s->opts.context_hint : "a larger --ctx";
}

// Refuses a context whose KV cache (and the attention statistics kept beside it) would not fit
// in the memory available, before any of it is allocated.
static int check_kv_fits(const model *m, enum kv_format kvf, int recent, int n_ctx, const kv_windows *w,
                         errbuf *err) {
    const model_hparams *hp = &m->hp;
    uint64_t kv = kv_windows_cache_bytes(kvf, recent, hp->n_layer, n_ctx, hp->n_kv_head * hp->head_dim, w);
    uint64_t stats = 2 * (uint64_t)hp->n_layer * (uint64_t)hp->n_head * (uint64_t)n_ctx * sizeof(float);
    uint64_t per_pos = (kv + stats) / (uint64_t)n_ctx, avail;
    if (mem_fits(kv + stats, &avail)) return 0;
    unsigned long long fits = per_pos ? avail / per_pos : 0;
    if (hp->n_ctx_train > 0 && (unsigned long long)hp->n_ctx_train <= fits)
        return err_set(err, "%s: a context of %d positions needs %.1f MiB of KV cache, more than the %.1f MiB of "
                       "memory available; the model's own context is %d (--ctx %d)", m->file.path, n_ctx,
                       (double)(kv + stats) / (1 << 20), (double)avail / (1 << 20), hp->n_ctx_train, hp->n_ctx_train);
    return err_set(err, "%s: a context of %d positions needs %.1f MiB of KV cache, more than the %.1f MiB of "
                   "memory available (--ctx %llu at most)", m->file.path, n_ctx, (double)(kv + stats) / (1 << 20),
                   (double)avail / (1 << 20), fits);
}

// The cache of n_ctx slots in format kvf (recent F16 slots), its policy, the forward pass's
// buffers, the sampler and the logits: what every session has of its own.
static int open_cache(session *s, enum kv_format kvf, int recent, int n_ctx, kv_policy kvp, errbuf *err) {
    const model_hparams *hp = &s->m->hp;
    kv_windows win = model_kv_windows(s->m, s->opts.n_batch);   // window layers keep rings of window + batch
    if (check_kv_fits(s->m, kvf, recent, n_ctx, &win, err)) return -1;
    if (kv_cache_init_windows(&s->kv, kvf, recent, hp->n_layer, n_ctx, hp->n_kv_head * hp->head_dim, &win, err))
        return -1;
    s->kv.policy = kvp;
    kv_cache_set_tracking(&s->kv, true);   // attention weights for policies and the heat map
    if (s->b->kv_prepare(s->b, &s->kv, err)) return -1;
    if (forward_ctx_init(&s->fc, s->b, s->m, s->opts.n_batch, 1, err)) return -1;
    s->smp = sampler_new(&s->opts.sampling, hp->n_vocab);
    s->logits = try_malloc((size_t)hp->n_vocab * sizeof(float));
    if (!s->smp || !s->logits)
        return err_set(err, "%s: out of memory for the sampler and logits of %d tokens", s->m->file.path, hp->n_vocab);
    snprintf(s->st.backend, sizeof s->st.backend, "%s", s->b->description);
    return 0;
}

session *session_open(const session_opts *o, errbuf *err) {
    session *s = xcalloc(1, sizeof *s);
    s->owns_model = true;
    s->opts = *o;
    if (s->opts.n_batch <= 0) s->opts.n_batch = 256;
    if (s->opts.max_reply_tokens <= 0) s->opts.max_reply_tokens = 512;
    if (model_load(&s->m, o->model_path, err)) { free(s); return NULL; }
    plan_init(&s->plan);
    if (o->precision) {
        if (plan_parse_any(&s->plan, o->precision, s->m->hp.n_layer, err)) goto fail;
        if (model_apply_plan(s->m, &s->plan, NULL, err)) goto fail;
    }
    s->opts.precision = NULL;
    s->b = backend_create(&o->backend, err);
    if (!s->b) goto fail;
    // The CPU reads weights where they lie; a device backend uploads them and reads its copy.
    if (!o->mmap_weights && backend_has(s->b, BACKEND_CAP_HOST_WEIGHTS)) model_copy_weights(s->m, o->backend.n_threads, s->b);
    if (model_prepare_backend(s->m, s->b, err)) goto fail;
    int n_ctx = o->n_ctx > 0 ? o->n_ctx : (s->m->hp.n_ctx_train < 4096 ? s->m->hp.n_ctx_train : 4096);
    const model_hparams *hp = &s->m->hp;
    enum kv_format kvf = KV_F16;
    kv_policy kvp;
    if (o->kv_format && kv_format_parse(o->kv_format, &kvf, err)) goto fail;
    if (kv_policy_parse(o->kv_policy, &kvp, err)) goto fail;
    s->opts.kv_format = s->opts.kv_policy = NULL;
    if (open_cache(s, kvf, o->kv_recent, n_ctx, kvp, err)) goto fail;
    bool unrecognised;
    const chat_template *file_tmpl = chat_template_for_file(s->m->chat_template, hp->arch_name, &unrecognised);
    if (o->template_name) {
        s->tmpl = chat_template_by_name(o->template_name);
        if (!s->tmpl) {
            err_set(err, "unknown chat template '%s' (known: %s)", o->template_name, chat_template_names());
            goto fail;
        }
    } else {
        s->tmpl = file_tmpl;
        if (unrecognised)   // a file without one chats in plain (or its architecture's) without a word
            str_cut_printf(s->notice, sizeof s->notice, "%s: tokenizer.chat_template not recognised: using the plain "
                           "template (--chat-template NAME chooses one: %s)", s->m->file.path, chat_template_names());
    }
    // the file's own system text (Qwen2.5's, SmolLM2's) when the person gives none
    if (s->tmpl == file_tmpl && s->m->chat_template && !unrecognised)
        s->default_system = chat_template_default_system(s->tmpl, s->m->chat_template);
    s->system_prompt = o->system_prompt ? xstrdup(o->system_prompt) : NULL;
    s->opts.system_prompt = s->system_prompt;
    s->opts.model_path = NULL;
    snprintf(s->st.template_name, sizeof s->st.template_name, "%s", s->tmpl->name);
    return s;
fail:
    session_close(s);
    return NULL;
}

session *session_open_sibling(session *first, errbuf *err) {
    if (!first->owns_model) return err_set(err, "slots: a sibling opens beside the first session only"), NULL;
    if (first->group && first->group->members >= SESSION_GROUP_MAX)
        return err_set(err, "slots: at most %d sessions on one model", SESSION_GROUP_MAX), NULL;
    if (backend_has(first->b, BACKEND_CAP_DEVICES))
        return err_set(err, "slots: more than one needs the cpu backend (%s keeps each cache on its device, and a "
                       "device lost would be lost to all)", first->b->name), NULL;
    session *s = xcalloc(1, sizeof *s);
    s->opts = first->opts;
    s->m = first->m;
    s->b = first->b;
    session_group_join(s, first);
    if (open_cache(s, first->kv.format, first->kv.recent, first->kv.n_ctx, first->kv.policy, err)) {
        session_close(s);
        return NULL;
    }
    s->tmpl = first->tmpl;
    s->default_system = first->default_system ? xstrdup(first->default_system) : NULL;
    s->system_prompt = first->system_prompt ? xstrdup(first->system_prompt) : NULL;
    s->opts.system_prompt = s->system_prompt;
    snprintf(s->st.template_name, sizeof s->st.template_name, "%s", s->tmpl->name);
    session_reset(s);
    return s;
}

void session_close(session *s) {
    if (!s) return;
    if (s->switch_running) {
        pthread_join(s->switch_thread, NULL);
        model_plan_discard(&s->switch_staging);
    }
    forward_ctx_free(&s->fc);
    forward_ctx_free(&s->fc_all);
    if (s->b && s->kv.k) s->b->kv_release(s->b, &s->kv);
    kv_cache_free(&s->kv);
    session_group_leave(s);   // the last frees the group's buffers, on the backend still there
    if (s->owns_model) {
        backend_destroy(s->b);
        model_free(s->m);
    }
    sampler_free(s->smp);
    free(s->logits);
    free(s->hist);
    free(s->reuse);
    free(s->system_prompt);
    free(s->default_system);
    free(s);
}

static int tokenize_all(session *s, const char *text, bool add_special, int32_t **out, errbuf *err);

// Prompt tokens per forward pass: n_batch, or less when an eviction policy's budget is small.
static int batch_of(const session *s) {
    int mb = kv_policy_max_batch(&s->kv);
    return mb < s->opts.n_batch ? mb : s->opts.n_batch;
}

// Room for n more tokens in the history, made before they enter the cache so that the two agree.
static int history_reserve(session *s, int n, errbuf *err) {
    if (s->n_hist + n <= s->cap_hist) return 0;
    int cap = (s->n_hist + n) * 2 + 64;
    int32_t *h = try_realloc(s->hist, (size_t)cap * sizeof *s->hist);
    if (!h) return err_set(err, "out of memory for a history of %d tokens", s->n_hist + n);
    s->hist = h;
    s->cap_hist = cap;
    return 0;
}

static void history_append(session *s, const int32_t *tokens, int n) {
    memcpy(s->hist + s->n_hist, tokens, (size_t)n * sizeof *tokens);
    s->n_hist += n;
}

int session_history(const session *s, const int32_t **ids) {
    *ids = s->hist;
    return s->n_hist;
}

unsigned session_resets(const session *s) { return s->resets; }

const float *session_last_logits(const session *s) { return s->have_logits ? s->logits : NULL; }

// ---- the device lost: the conversation moves to the CPU ----

// Replaces the lost device backend by the CPU backend: the weights are still in host memory (the
// file's mapping, or their copy), and the KV cache, gone with the device, is rebuilt by running
// the conversation so far (the history) through the CPU. The new backend is made before the old
// one goes: a failure to make it keeps the lost one (every later pass fails as this one did); a
// failure after (out of memory) leaves the session broken, and every later pass refuses.
static int fail_over_to_cpu(session *s, const char *why, errbuf *err) {
    backend_opts cpu_opts = s->opts.backend;
    cpu_opts.name = "cpu";
    backend *cpu = backend_create(&cpu_opts, err);
    if (!cpu) return err_prefix(err, "%s; the CPU cannot take over", why);
    forward_ctx_free(&s->fc);
    forward_ctx_free(&s->fc_all);
    if (s->kv.bk) s->b->kv_release(s->b, &s->kv);
    model_release_backend(s->m, s->b);
    backend_destroy(s->b);
    s->b = cpu;
    s->broken = true;   // until the CPU holds everything
    kv_cache_clear(&s->kv);
    s->n_reuse = 0;
    if (model_prepare_backend(s->m, cpu, err) || cpu->kv_prepare(cpu, &s->kv, err) ||
        forward_ctx_init(&s->fc, cpu, s->m, s->opts.n_batch, 1, err))
        return err_prefix(err, "%s; moving to the CPU", why);
    cpu->set_profiling(cpu, s->profiling);
    int nb = batch_of(s);
    for (int i = 0; i < s->n_hist; i += nb) {   // the cache again, from the conversation so far
        int chunk = s->n_hist - i < nb ? s->n_hist - i : nb;
        if (model_forward(&s->fc, &s->kv, s->hist + i, chunk, false, s->logits, err))
            return err_prefix(err, "%s; replaying the conversation on the CPU", why);
    }
    s->broken = false;
    snprintf(s->st.backend, sizeof s->st.backend, "%s", cpu->description);
    str_cut_printf(s->notice, sizeof s->notice, "%s; the conversation goes on on the CPU (%s, %d tokens replayed)",
                   why, cpu->description, s->n_hist);
    return 0;
}

// One forward pass; when the device is lost under it, the session moves to the CPU and the pass
// runs again there.
static int forward_or_fail_over(session *s, forward_ctx *fc, const int32_t *tokens, int n, bool all_logits,
                                float *logits, errbuf *err) {
    if (s->broken) return err_set(err, "session: no backend (the move to the CPU failed earlier)");
    if (!session_forward_gated(s, fc, tokens, n, all_logits, logits, err)) return 0;
    if (!s->b->lost) return -1;
    bool all = fc == &s->fc_all;
    char why[ERR_LINE];
    snprintf(why, sizeof why, "%s", err ? err->msg : "the device was lost");
    if (fail_over_to_cpu(s, why, err)) return -1;
    if (all && forward_ctx_init(&s->fc_all, s->b, s->m, s->opts.n_batch, s->opts.n_batch, err)) return -1;
    return model_forward(all ? &s->fc_all : &s->fc, &s->kv, tokens, n, all_logits, logits, err);
}

bool session_take_notice(session *s, char *buf, size_t cap) {
    if (!s->notice[0]) return false;
    snprintf(buf, cap, "%s", s->notice);
    s->notice[0] = 0;
    return true;
}

// Prompt-cache reuse (session_restart): when `take`, the tokens at the start of tokens[0..n) that
// the cache holds already at their positions are taken without a forward pass, all but the last,
// which is computed for its logits. Rows from the first token that differs on are overwritten:
// the old conversation is reusable only up to there. Returns the tokens taken.
static int take_cached(session *s, const int32_t *tokens, int n, bool take) {
    if (s->n_reuse <= s->n_hist || s->kv.n_used != s->n_hist) return 0;
    const int32_t *old = s->reuse + s->n_hist;
    const int avail = s->n_reuse - s->n_hist;
    int same = 0;
    while (same < n && same < avail && tokens[same] == old[same]) same++;
    if (same < n) s->n_reuse = s->n_hist + same;
    int k = !take ? 0 : same < n - 1 ? same : n - 1;
    for (int j = 0; j < k; j++) sampler_accept(s->smp, tokens[j]);
    history_append(s, tokens, k);
    s->kv.n_used += k;
    s->st.cached_tokens += k;
    return k;
}

// session_eval, where `prompt` says whether what the cache holds may be taken (a prompt) or not
// (generated tokens: st.cached_tokens counts prompt tokens).
static int eval_tokens(session *s, const int32_t *tokens, int n, bool prompt, float *logits, errbuf *err) {
    if (model_check_file(s->m, err) || history_reserve(s, n, err)) return -1;
    int k = n > 0 ? take_cached(s, tokens, n, prompt) : 0;
    tokens += k;
    n -= k;
    int nb = batch_of(s);
    for (int i = 0; i < n; i += nb) {
        int chunk = n - i < nb ? n - i : nb;
        bool last = i + chunk == n;
        if (forward_or_fail_over(s, &s->fc, tokens + i, chunk, false, last ? s->logits : NULL, err))
            return -1;
        for (int j = 0; j < chunk; j++) sampler_accept(s->smp, tokens[i + j]);
        history_append(s, tokens + i, chunk);
    }
    if (n > 0) s->have_logits = true;
    if (logits && n > 0) memcpy(logits, s->logits, (size_t)s->m->hp.n_vocab * sizeof(float));
    return 0;
}

int session_eval(session *s, const int32_t *tokens, int n, float *logits, errbuf *err) {
    return eval_tokens(s, tokens, n, true, logits, err);
}

int session_eval_all(session *s, const int32_t *tokens, int n, float *out, errbuf *err) {
    if (model_check_file(s->m, err) || history_reserve(s, n, err)) return -1;
    s->n_reuse = 0;   // every position's logits: nothing is taken from the cache
    if (!s->fc_all.b && forward_ctx_init(&s->fc_all, s->b, s->m, s->opts.n_batch, s->opts.n_batch, err))
        return -1;
    size_t nv = (size_t)s->m->hp.n_vocab;
    int nb = batch_of(s);
    for (int i = 0; i < n; i += nb) {
        int chunk = n - i < nb ? n - i : nb;
        if (forward_or_fail_over(s, &s->fc_all, tokens + i, chunk, true, out + (size_t)i * nv, err)) return -1;
        for (int j = 0; j < chunk; j++) sampler_accept(s->smp, tokens[i + j]);
        history_append(s, tokens + i, chunk);
    }
    if (n > 0) {
        memcpy(s->logits, out + (size_t)(n - 1) * nv, nv * sizeof(float));
        s->have_logits = true;
    }
    return 0;
}

int session_tokenize(session *s, const char *text, bool add_bos, int32_t **out, errbuf *err) {
    return tokenize_all(s, text, add_bos, out, err);
}

int32_t session_sample(session *s) {
    float *tmp = xmalloc((size_t)s->m->hp.n_vocab * sizeof(float));
    memcpy(tmp, s->logits, (size_t)s->m->hp.n_vocab * sizeof(float));
    int32_t t = sampler_sample(s->smp, tmp);
    free(tmp);
    return t;
}

// Appends one decode time (ms) to the ring and updates the last-32 rate.
static void record_token_ms(session_stats *st, double ms) {
    st->tok_ms[st->tok_ms_count % SESSION_TOK_RING] = (float)ms;
    st->tok_ms_count++;
    int k = st->tok_ms_count < 32 ? st->tok_ms_count : 32;
    double sum = 0;
    for (int i = 0; i < k; i++) sum += st->tok_ms[(st->tok_ms_count - 1 - i) % SESSION_TOK_RING];
    st->decode_tps_last32 = sum > 0 ? k / (sum * 1e-3) : 0.0;
}

void session_set_filter(session *s, const token_filter *f) {
    if (f) s->filter = *f;
    else memset(&s->filter, 0, sizeof s->filter);
}

// Runs the filter's mask over a copy of the logits; if it forbids every token, the logits are
// restored (a filter must never stop generation).
static void apply_filter(session *s, float *logits) {
    int nv = s->m->hp.n_vocab;
    s->filter.mask(s->filter.ud, logits, nv);
    for (int i = 0; i < nv; i++)
        if (logits[i] != -INFINITY) return;
    memcpy(logits, s->logits, (size_t)nv * sizeof(float));
}

// Tokens one forward pass may feed after a sample: the sampled one and up to JUMP_MAX - 1 forced.
#define JUMP_MAX 64

// The token the filter forces after n_run tokens waiting to be fed (i generated so far), or -1:
// none, jump-forward is off, or the run must be fed first (n_predict reached, the run full, or the
// cache without room for one more: plain decoding's own checks then run on a sampled token).
static int32_t next_forced(session *s, int i, int n_predict, int n_run, bool evicting) {
    if (!s->filter.forced || s->opts.no_jump_forward || i >= n_predict || n_run >= JUMP_MAX || evicting ||
        s->kv.n_used + n_run >= s->kv.n_ctx || atomic_load(&s->cancel))
        return -1;
    return s->filter.forced(s->filter.ud);
}

// Prefills `tokens`, then samples and feeds up to n_predict tokens; a run of tokens the filter
// forces is fed with the sampled token before it in one forward pass (next_forced).
static int run_generation(session *s, const int32_t *tokens, int n, int n_predict, token_cb cb,
                          void *ud, bool *ended_on_eog, errbuf *err) {
    atomic_store(&s->cancel, false);
    *ended_on_eog = false;
    power_mark pm0, pm1, pm2;
    double op0[OP_COUNT], op1[OP_COUNT], op_prefilled[OP_COUNT];   // seconds per op kind
    uint64_t calls0[OP_COUNT], calls1[OP_COUNT], calls_prefilled[OP_COUNT];
    if (s->profiling) s->b->profile_read(s->b, op0, calls0);
    if (s->power) power_monitor_mark(s->power, &pm0);
    double t0 = now_sec();
    s->st.prompt_tokens = n;
    s->st.gen_tokens = 0;
    s->st.decode_ms = 0;
    s->st.decode_tps = 0;
    s->st.decode_passes = 0;
    s->st.forced_tokens = 0;
    s->st.tok_ms_count = 0;
    s->st.decode_tps_last32 = 0;
    memset(&s->st.energy, 0, sizeof s->st.energy);
    bool evicting = s->kv.policy.kind != KVP_NONE;   // a policy makes room instead of stopping
    if (!evicting && s->kv.n_used + n > s->kv.n_ctx)
        return err_set(err, "context full: %d tokens in the cache + %d new exceed the context "
                       "length %d (%s)", s->kv.n_used, n, s->kv.n_ctx, context_hint(s));
    float *scratch = try_malloc((size_t)s->m->hp.n_vocab * sizeof(float));   // the logits a sample may mask
    if (!scratch) return err_set(err, "out of memory for the logits of %d tokens", s->m->hp.n_vocab);
    const int cached0 = s->st.cached_tokens;
    if (session_eval(s, tokens, n, NULL, err)) { free(scratch); return -1; }
    double t1 = now_sec();
    s->st.prefill_ms = (t1 - t0) * 1e3;
    const int computed = n - (s->st.cached_tokens - cached0);   // what the cache held is not prefill
    s->st.prefill_tps = computed > 0 ? computed / (t1 - t0) : 0.0;
    if (s->power) power_monitor_mark(s->power, &pm1);
    if (s->profiling) s->b->profile_read(s->b, op_prefilled, calls_prefilled);
    session_group_decoding(s, true);   // slots decoding side by side share their passes
    int n_decoded = 0;       // generated tokens fed to the model
    double t_prev = 0.0;
    double t_first = 0.0;
    int rc = 0;
    char piece[256];
    int32_t run[JUMP_MAX];   // the tokens of one forward pass: a sampled one and those forced after it
    for (int i = 0; i < n_predict;) {
        if (atomic_load(&s->cancel)) break;
        session_poll_switch(s);
        memcpy(scratch, s->logits, (size_t)s->m->hp.n_vocab * sizeof(float));
        if (s->filter.mask) apply_filter(s, scratch);
        int32_t tok = sampler_sample(s->smp, scratch);
        int n_run = 0;
        bool stop = false;
        for (;;) {   // tok, then each token forced after it
            if (i == 0) { t_first = t_prev = now_sec(); s->st.ttft_ms = (t_first - t0) * 1e3; }
            else { double t = now_sec(); record_token_ms(&s->st, (t - t_prev) * 1e3); t_prev = t; }
            s->st.gen_tokens++;
            i++;
            if (!s->opts.ignore_eog && tokenizer_is_eog(s->m->tok, tok)) {
                *ended_on_eog = true;
                // Keep the closing token in the cache so the next turn follows a complete reply.
                if (evicting || s->kv.n_used + n_run < s->kv.n_ctx) run[n_run++] = tok;
                stop = true;
                break;
            }
            int len = tokenizer_piece(s->m->tok, tok, false, piece, sizeof piece);
            if (len > (int)sizeof piece) len = sizeof piece;
            if (s->filter.accept) s->filter.accept(s->filter.ud, tok, piece, len);
            bool go_on = cb ? cb(ud, tok, piece, len) : true;
            if (!evicting && s->kv.n_used + n_run >= s->kv.n_ctx) {
                rc = err_set(err, "context full at %d tokens (%s)", s->kv.n_ctx, context_hint(s));
                stop = true;
                break;
            }
            run[n_run++] = tok;
            if (!go_on) { stop = true; break; }
            tok = next_forced(s, i, n_predict, n_run, evicting);
            if (tok < 0) break;
            sampler_skip(s->smp);
            s->st.forced_tokens++;
        }
        if (n_run > 0) {
            if (eval_tokens(s, run, n_run, false, NULL, err)) { rc = -1; break; }
            n_decoded += n_run;
            s->st.decode_passes++;
        }
        if (stop) break;
    }
    session_group_decoding(s, false);
    double t2 = now_sec();
    if (s->st.gen_tokens > 0) {
        s->st.decode_ms = (t2 - t_first) * 1e3;
        // every generated token fed in the window [first sample, end] counts
        s->st.decode_tps = n_decoded > 0 && t2 > t_first ? n_decoded / (t2 - t_first) : 0.0;
        if (n_decoded >= s->st.gen_tokens) record_token_ms(&s->st, (t2 - t_prev) * 1e3);  // the last pass
    }
    if (s->power) {
        power_monitor_mark(s->power, &pm2);
        energy_turn_from_marks(s->power, &pm0, &pm1, &pm2, n, n_decoded, &s->st.energy);
    }
    s->st.op_profiled = s->profiling;
    s->st.device_ms_per_token = 0;
    if (s->profiling) {
        s->b->profile_read(s->b, op1, calls1);
        double decode_s = 0;
        for (int k = 0; k < OP_COUNT; k++) {
            s->st.op_ms[k] = (op1[k] - op0[k]) * 1e3;
            s->st.op_calls[k] = calls1[k] - calls0[k];
            decode_s += op1[k] - op_prefilled[k];
        }
        // a device backend's op times are its own timestamps; the CPU's are host clocks
        if (backend_has(s->b, BACKEND_CAP_DEVICES) && n_decoded > 0)
            s->st.device_ms_per_token = decode_s * 1e3 / n_decoded;
    }
    free(scratch);
    return rc;
}

static int tokenize_all(session *s, const char *text, bool add_special, int32_t **out, errbuf *err) {
    size_t len = strlen(text);
    if (len > (size_t)INT32_MAX - 16) return err_set(err, "text of %zu bytes is too long to tokenize", len);
    int32_t cap = (int32_t)(len + 16);
    int32_t *ids = try_malloc((size_t)cap * sizeof(int32_t));
    int32_t n = ids ? tokenizer_encode(s->m->tok, text, len, add_special, true, ids, cap) : 0;
    if (n < 0) {
        cap = -n;
        int32_t *more = try_realloc(ids, (size_t)cap * sizeof(int32_t));
        if (!more) free(ids);
        ids = more;
        n = ids ? tokenizer_encode(s->m->tok, text, len, add_special, true, ids, cap) : 0;
    }
    if (!ids) return err_set(err, "out of memory for the tokens of %zu bytes of text", len);
    if (n < 0) { free(ids); return err_set(err, "tokenizer failed"); }
    *out = ids;
    return n;
}

int session_chat(session *s, const char *user_text, token_cb cb, void *ud, errbuf *err) {
    bool first = s->kv.n_used == 0;
    const char *system = s->system_prompt ? s->system_prompt : s->default_system;
    char *text = chat_template_render_turn(s->tmpl, system, user_text, first, s->reply_open);
    int32_t *ids = NULL;
    int n = tokenize_all(s, text, first, &ids, err);
    free(text);
    if (n < 0) return -1;
    bool eog = false;
    int n_before = s->kv.n_used;
    int rc = run_generation(s, ids, n, s->opts.max_reply_tokens, cb, ud, &eog, err);
    free(ids);
    // A turn that failed before its prompt entered the cache leaves the conversation as it was.
    if (rc && s->kv.n_used == n_before) return rc;
    s->reply_open = !eog;
    s->st.turns++;
    return rc;
}

int session_complete(session *s, const char *prompt, int n_predict, token_cb cb, void *ud, errbuf *err) {
    int32_t *ids = NULL;
    int n = tokenize_all(s, prompt, s->kv.n_used == 0, &ids, err);
    if (n < 0) return -1;
    bool eog = false;
    int rc = run_generation(s, ids, n, n_predict, cb, ud, &eog, err);
    free(ids);
    return rc;
}

// The text of the next chat turn as session_chat would render it (malloc'd).
static char *render_next_turn(const session *s, const char *user_text) {
    const char *system = s->system_prompt ? s->system_prompt : s->default_system;
    return chat_template_render_turn(s->tmpl, system, user_text, s->kv.n_used == 0, s->reply_open);
}

int session_turn_tokens(session *s, const char *user_text, errbuf *err) {
    char *text = render_next_turn(s, user_text);
    int32_t *ids = NULL;
    int n = tokenize_all(s, text, s->kv.n_used == 0, &ids, err);
    free(text);
    free(ids);
    return n;
}

int session_add_turn(session *s, const char *user_text, const char *reply, errbuf *err) {
    char *turn = render_next_turn(s, user_text);
    strbuf text = { 0 };
    strbuf_puts(&text, turn);
    strbuf_puts(&text, reply);
    free(turn);
    int32_t *ids = NULL;
    int n = tokenize_all(s, strbuf_str(&text), s->kv.n_used == 0, &ids, err);
    strbuf_free(&text);
    if (n < 0) return -1;
    int rc = 0;
    if (s->kv.n_used + n > s->kv.n_ctx && s->kv.policy.kind == KVP_NONE)
        rc = err_set(err, "context full: %d tokens in the cache + %d new exceed the context length %d (%s)",
                     s->kv.n_used, n, s->kv.n_ctx, context_hint(s));
    else rc = session_eval(s, ids, n, NULL, err);
    free(ids);
    if (rc) return rc;
    s->reply_open = true;   // the reply's closing token is not in the cache: the next turn writes it
    s->st.turns++;
    return 0;
}

int session_set_system(session *s, const char *system_prompt) {
    if (s->kv.n_used > 0) return -1;
    free(s->system_prompt);
    s->system_prompt = system_prompt ? xstrdup(system_prompt) : NULL;
    s->opts.system_prompt = s->system_prompt;
    return 0;
}

const char *session_default_system(const session *s) { return s->default_system; }

void session_cancel(session *s) { atomic_store(&s->cancel, true); }

void session_reset(session *s) {
    kv_cache_clear(&s->kv);
    sampler_reset(s->smp, s->opts.sampling.seed);
    s->have_logits = false;
    s->n_hist = 0;
    s->n_reuse = 0;
    s->rows_stale = false;
    s->rows_epoch = session_plan_epoch(s);
    s->st.cached_tokens = 0;
    s->resets++;
    s->reply_open = false;
    s->st.turns = 0;
}

void session_restart(session *s) {
    bool keep = !s->broken && !s->rows_stale && !session_rows_from_other_plan(s) && kv_cache_truncatable(&s->kv) && s->kv.n_used == s->n_hist;
    int32_t *h = s->hist;
    int n = s->n_hist, cap = s->cap_hist;
    session_reset(s);
    if (!keep) return;
    s->hist = s->reuse;   // the old history becomes what may be reused; its buffer is kept
    s->cap_hist = s->cap_reuse;
    s->reuse = h;
    s->cap_reuse = cap;
    s->n_reuse = n;
}

void session_set_seed(session *s, uint64_t seed) {
    s->opts.sampling.seed = seed;
    sampler_reset(s->smp, seed);
}

int session_set_sampling(session *s, const sampler_params *p, int max_reply_tokens, errbuf *err) {
    sampler *smp = sampler_new(p, s->m->hp.n_vocab);
    if (!smp) return err_set(err, "out of memory for a sampler over %d tokens", s->m->hp.n_vocab);
    sampler_free(s->smp);
    s->smp = smp;
    s->opts.sampling = *p;
    if (max_reply_tokens > 0) s->opts.max_reply_tokens = max_reply_tokens;
    return 0;
}

void session_get_stats(const session *s, session_stats *out) {
    *out = s->st;
    out->n_past = s->kv.n_used;
    out->n_ctx = s->kv.n_ctx;
    out->weight_bytes = s->m->weight_bytes;
    model_bytes_by_type(s->m, out->bytes_by_type);
    out->switch_progress = session_switch_progress(s);
    out->kv_bytes = kv_cache_bytes(&s->kv);
    out->kv_used_bytes = kv_cache_used_bytes(&s->kv);
    out->rss_bytes = telemetry_rss_bytes();
    snprintf(out->kv_format, sizeof out->kv_format, "%s", kv_format_name(s->kv.format));
    kv_policy_format(&s->kv.policy, out->kv_policy, sizeof out->kv_policy);
    out->kv_token_bytes = kv_format_token_bytes(s->kv.format, s->kv.kv_dim);
    kv_windows win = kv_cache_windows(&s->kv);   // the same layout in f16
    uint64_t f16 = kv_windows_cache_bytes(KV_F16, 0, s->kv.n_layer, s->kv.n_ctx, s->kv.kv_dim, &win);
    out->kv_savings = out->kv_bytes ? (double)f16 / (double)out->kv_bytes : 0.0;
    out->kv_ring_layers = 0;
    for (int l = 0; l < s->kv.n_layer; l++) out->kv_ring_layers += kv_layer_ring(&s->kv, l) ? 1 : 0;
    out->kv_ring_rows = s->kv.ring_rows;
    out->kv_evictions = s->kv.evictions;
    out->kv_evicted = s->kv.evicted;
}

int session_set_kv(session *s, const char *format, const char *policy, errbuf *err) {
    enum kv_format f = s->kv.format;
    kv_policy p = s->kv.policy;
    if (format && kv_format_parse(format, &f, err)) return -1;
    if (policy && kv_policy_parse(policy, &p, err)) return -1;
    if (f != s->kv.format) {
        if (s->kv.bk && !s->kv.bk_sync)
            return err_set(err, "kv: backend %s keeps the cache on the device; a live format switch needs the "
                           "cpu backend (start with --kv %s instead)", s->b->name, kv_format_name(f));
        if (kv_cache_convert(&s->kv, f, 0, err)) return -1;
    }
    if (f != s->kv.format) session_rows_stale(s);
    s->n_reuse = 0;   // a conversion keeps the slots in use only
    if (p.kind != KVP_NONE && s->kv.bk && !s->kv.bk_sync)
        return err_set(err, "kv: eviction policies need the cpu backend (backend %s keeps the cache on the device)",
                       s->b->name);
    if (p.kind != KVP_ENTROPY) { free(s->kv.mask); s->kv.mask = NULL; }
    s->kv.policy = p;
    return 0;
}

int session_attention_last(const session *s, int layer, int head, float *out, int cap, errbuf *err) {
    const kv_cache *kv = &s->kv;
    int nh = kv->shape.n_head;
    if (layer < 0 || layer >= kv->n_layer || head < -1 || head >= nh)
        return err_set(err, "attention: layer %d / head %d out of range (%d layers, %d heads)", layer, head,
                       kv->n_layer, nh);
    if (!kv->last) return 0;
    int n = kv->last_n < kv->n_used ? kv->last_n : kv->n_used;
    if (n > cap) n = cap;
    for (int i = 0; i < n; i++) {
        float sum = 0.0f;
        int h0 = head < 0 ? 0 : head, h1 = head < 0 ? nh : head + 1;
        for (int h = h0; h < h1; h++) sum += kv->last[((size_t)layer * nh + h) * kv->n_ctx + i];
        out[i] = sum / (float)(h1 - h0);
    }
    return n;
}

int session_kv_layer(const session *s, int layer, int *n_used, int *n_quantized, int *capacity) {
    if (layer < 0 || layer >= s->kv.n_layer) return -1;
    int ring = kv_layer_ring(&s->kv, layer);
    *capacity = ring ? ring : s->kv.n_ctx;
    *n_used = s->kv.n_used < *capacity ? s->kv.n_used : *capacity;
    int nq = s->kv.nq ? s->kv.nq[layer] : 0;
    *n_quantized = nq < s->kv.n_used ? nq : s->kv.n_used;
    return 0;
}

void session_set_power(session *s, power_monitor *pm) { s->power = pm; }

void session_set_profiling(session *s, bool on) {
    s->profiling = on;
    s->b->set_profiling(s->b, on);
}

const model *session_model(const session *s) { return s->m; }
const chat_template *session_template(const session *s) { return s->tmpl; }
backend *session_backend(session *s) { return s->b; }
int session_n_vocab(const session *s) { return s->m->hp.n_vocab; }

bool session_collect_text(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    strbuf_append(ud, piece, (size_t)len);
    return true;
}
