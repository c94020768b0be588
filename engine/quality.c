// NLL, perplexity and KL against a base run (engine/quality.h).
#include "quality.h"
#include "tokenizer.h"
#include "base/afile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void quality_base_free(quality_base *b) {
    free(b->rec);
    memset(b, 0, sizeof *b);
}

double quality_log_prob(const float *logits, int n, int target) {
    float mx = logits[0];
    for (int i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    return (double)logits[target] - mx - log(sum);
}

void quality_log_softmax(const float *logits, int n, double *out) {
    float mx = logits[0];
    for (int i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    double lse = mx + log(sum);
    for (int i = 0; i < n; i++) out[i] = (double)logits[i] - lse;
}

void quality_record(const double *lsm, int n, int target, kl_record *rec) {
    // top k by insertion into a sorted list (k is small)
    for (int k = 0; k < QUALITY_TOP_K; k++) { rec->id[k] = -1; rec->lp[k] = -INFINITY; }
    for (int v = 0; v < n; v++) {
        if (lsm[v] <= rec->lp[QUALITY_TOP_K - 1]) continue;
        int k = QUALITY_TOP_K - 1;
        while (k > 0 && rec->lp[k - 1] < lsm[v]) { rec->lp[k] = rec->lp[k - 1]; rec->id[k] = rec->id[k - 1]; k--; }
        rec->lp[k] = (float)lsm[v];
        rec->id[k] = v;
    }
    rec->target_lp = target >= 0 && target < n ? (float)lsm[target] : -INFINITY;
}

double quality_kl(const kl_record *rec, const double *lsm, int n) {
    double d = 0.0, p_in = 0.0, q_in = 0.0;
    for (int k = 0; k < QUALITY_TOP_K; k++) {
        if (rec->id[k] < 0 || rec->id[k] >= n) continue;
        double p = exp(rec->lp[k]), q = exp(lsm[rec->id[k]]);
        d += p * (rec->lp[k] - lsm[rec->id[k]]);
        p_in += p;
        q_in += q;
    }
    // the tail beyond the base's top k, as one outcome
    double p_tail = 1.0 - p_in, q_tail = 1.0 - q_in;
    if (p_tail > 1e-12) d += p_tail * (log(p_tail) - log(q_tail > 1e-12 ? q_tail : 1e-12));
    return d < 0 ? 0 : d;   // rounding
}

int quality_eval(session *s, const int32_t *ids, int n, const quality_opts *o, quality_result *out,
                 errbuf *err) {
    int ctx = o->ctx;
    int bos = tokenizer_bos(session_model(s)->tok);
    int body = bos >= 0 ? ctx - 1 : ctx;   // text tokens per window
    if (body < 2) return err_set(err, "window of %d tokens is too small", ctx);
    int n_chunks = n / body;
    if (o->max_chunks > 0 && n_chunks > o->max_chunks) n_chunks = o->max_chunks;
    if (n_chunks < 1) return err_set(err, "%d tokens: fewer than one window of %d (a smaller window or a longer text)", n, ctx);
    int nv = session_n_vocab(s);
    float *logits = xmalloc((size_t)ctx * nv * sizeof(float));
    int32_t *win = xmalloc((size_t)ctx * sizeof(int32_t));
    double nll = 0.0, nll2 = 0.0, kl_sum = 0.0, kl_max = 0.0, base_nll = 0.0;
    long scored = 0, top1 = 0;
    bool want_lsm = o->save || o->cmp;
    double *lsm = want_lsm ? xmalloc((size_t)nv * sizeof(double)) : NULL;
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
            double lp = -quality_log_prob(row, nv, win[i + 1]);
            nll += lp;
            nll2 += lp * lp;
            if (want_lsm) quality_log_softmax(row, nv, lsm);
            if (o->save) {
                quality_base *b = o->save;
                if (b->n == b->cap) {
                    b->cap = b->cap ? b->cap * 2 : 256;
                    b->rec = xrealloc(b->rec, (size_t)b->cap * sizeof(kl_record));
                }
                quality_record(lsm, nv, win[i + 1], &b->rec[b->n++]);
            }
            if (o->cmp) {
                if (scored >= o->cmp->n) { rc = err_set(err, "the base has fewer scored tokens than this run"); break; }
                const kl_record *rec = &o->cmp->rec[scored];
                double d = quality_kl(rec, lsm, nv);
                kl_sum += d;
                if (d > kl_max) kl_max = d;
                int best = 0;
                for (int v = 1; v < nv; v++) if (row[v] > row[best]) best = v;
                top1 += best == rec->id[0];
                base_nll -= rec->target_lp;
            }
            scored++;
        }
        if (o->progress) o->progress(o->progress_ud, c + 1, n_chunks, exp(nll / (double)(scored ? scored : 1)));
    }
    free(logits);
    free(win);
    free(lsm);
    if (rc) return rc;
    if (scored == 0) return err_set(err, "no tokens scored (windows of %d)", ctx);
    if (o->cmp) {
        out->kl_mean = kl_sum / (double)scored;
        out->kl_max = kl_max;
        out->top1 = (double)top1 / (double)scored;
        out->base_nll = base_nll / (double)scored;
        out->base_ppl = exp(out->base_nll);
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

uint64_t quality_hash_tokens(const int32_t *ids, int n) {
    uint64_t h = 1469598103934665603ull;   // FNV-1a over the ids
    for (int i = 0; i < n; i++) { h ^= (uint32_t)ids[i]; h *= 1099511628211ull; }
    return h;
}

#define BASE_HEAD (16 + 4 + 24)

int quality_base_save(const char *path, const quality_base *b, int n_vocab, int ctx, int n_tokens,
                      uint64_t hash, errbuf *err) {
    afile a;
    if (afile_open(&a, path, NULL)) return err_set(err, "%s: cannot write (%s)", path, strerror(errno));
    FILE *f = a.f;
    uint32_t hdr[5] = { 0, 1, (uint32_t)n_vocab, QUALITY_TOP_K, (uint32_t)ctx };
    memcpy(hdr, "CBKL", 4);
    uint64_t hdr64[3] = { (uint64_t)n_tokens, hash, (uint64_t)b->n };
    bool ok = fwrite(hdr, 4, 5, f) == 5 && fwrite(hdr64, 8, 3, f) == 3 &&
              (b->n == 0 || fwrite(b->rec, sizeof(kl_record), (size_t)b->n, f) == (size_t)b->n);
    return afile_close(&a, !ok, err);
}

int quality_base_load(const char *path, quality_base *b, int n_vocab, int ctx, uint64_t hash,
                      errbuf *err) {
    size_t len = 0;
    char *raw = read_file_all(path, &len, err);
    if (!raw) return -1;
    uint32_t hdr[5] = { 0 };
    uint64_t hdr64[3] = { 0 };
    int rc = 0;
    if (len >= BASE_HEAD) { memcpy(hdr, raw, 20); memcpy(hdr64, raw + 20, 24); }
    if (len < BASE_HEAD || memcmp(raw, "CBKL", 4) || hdr[1] != 1 || hdr[3] != QUALITY_TOP_K)
        rc = err_set(err, "%s: not a cabin base-logits file", path);
    else if (hdr[2] != (uint32_t)n_vocab || hdr64[1] != hash || hdr[4] != (uint32_t)ctx)
        rc = err_set(err, "%s: made from another vocabulary, text or window (base: window %u, %llu tokens)",
                     path, hdr[4], (unsigned long long)hdr64[0]);
    else if ((len - BASE_HEAD) % sizeof(kl_record) || (len - BASE_HEAD) / sizeof(kl_record) != hdr64[2])
        rc = err_set(err, "%s: truncated (%zu bytes)", path, len);
    if (!rc) {
        b->n = b->cap = (long)hdr64[2];
        b->rec = xmalloc((size_t)b->n * sizeof(kl_record) + 1);
        memcpy(b->rec, raw + BASE_HEAD, (size_t)b->n * sizeof(kl_record));
    }
    free(raw);
    return rc;
}
