// pocketsphinx wrapper (see asr.h).
#include "audio/asr.h"

#include <pocketsphinx.h>
#include <sphinxbase/err.h>

#include <ctype.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PS_MODEL_DIR "/usr/share/pocketsphinx/model/en-us"
#define GRAMMAR_ARGS ""

struct asr {
    ps_decoder_t *lm;       // n-gram search
    ps_decoder_t *gram;     // grammar search (NULL without a grammar)
    cmd_ln_t *cfg_lm, *cfg_gram;
    float grammar_max_gap;
    size_t n;               // samples this utterance
    int16_t *utt;           // the first utterance's audio (n samples), kept to decode it twice
    size_t utt_cap;
    int n_utts;             // utterances finished
    double cpu;
    char desc[512];
};

asr_opts asr_opts_default(void) {
    asr_opts o = { .hmm = NULL, .lm = NULL, .dict = NULL, .jsgf = NULL, .general = false, .grammar_max_gap = 1.0f };
    return o;
}

static bool readable(const char *p) { return p && access(p, R_OK) == 0; }

static ps_decoder_t *open_decoder(cmd_ln_t **cfg, const char *hmm, const char *dict, const char *lm,
                                  const char *jsgf, errbuf *err) {
    // Decoder settings: the grammar search is pruned harder than the n-gram search (it is a
    // flat network of ~850 frames; default beams made it run slower than real time).
    char extra[256];
    const char *tune = getenv(lm ? "CABIN_ASR_LM_ARGS" : "CABIN_ASR_GRAM_ARGS");   // experiments
    snprintf(extra, sizeof extra, "%s", tune ? tune : lm ? "" : GRAMMAR_ARGS);
    const char *argv[48] = { "-hmm", hmm, "-dict", dict, lm ? "-lm" : "-jsgf", lm ? lm : jsgf,
                             "-logfn", "/dev/null", "-samprate", "16000" };
    int argc = 10;
    char *save = NULL;
    for (char *t = strtok_r(extra, " ", &save); t && argc < 46; t = strtok_r(NULL, " ", &save)) argv[argc++] = t;
    *cfg = cmd_ln_parse_r(NULL, ps_args(), argc, (char **)argv, TRUE);
    if (!*cfg) { err_set(err, "asr: bad pocketsphinx configuration (%s, %s)", hmm, lm ? lm : jsgf); return NULL; }
    ps_decoder_t *ps = ps_init(*cfg);
    if (!ps) {
        err_set(err, "asr: pocketsphinx could not load %s with %s and %s", hmm, dict, lm ? lm : jsgf);
        cmd_ln_free_r(*cfg);
        *cfg = NULL;
    }
    return ps;
}

asr *asr_open(const asr_opts *o, errbuf *err) {
    err_set_logfp(NULL);   // sphinxbase's own chatter off (errors come back through err)
    const char *hmm = o->hmm ? o->hmm : PS_MODEL_DIR "/en-us";
    const char *lm = o->lm, *dict = o->dict, *jsgf = o->jsgf;
    if (o->general) {
        lm = lm ? lm : PS_MODEL_DIR "/en-us.lm.bin";
        dict = dict ? dict : PS_MODEL_DIR "/cmudict-en-us.dict";
        jsgf = jsgf ? jsgf : "";
    } else {
        lm = lm ? lm : "assets/asr/cabin.lm";
        dict = dict ? dict : "assets/asr/cabin.dict";
        if (!jsgf) jsgf = readable("assets/asr/cabin.gram") ? "assets/asr/cabin.gram" : "";
    }
    const char *need[] = { hmm, lm, dict };
    for (int i = 0; i < 3; i++)
        if (access(need[i], R_OK) != 0)
            return err_set(err, "asr: %s: not found%s", need[i], i == 0 ? " (install pocketsphinx-en-us)" : ""), NULL;
    asr *a = xcalloc(1, sizeof *a);
    a->grammar_max_gap = o->grammar_max_gap;
    a->lm = open_decoder(&a->cfg_lm, hmm, dict, lm, NULL, err);
    if (!a->lm) { free(a); return NULL; }
    if (*jsgf) {
        if (!readable(jsgf)) { err_set(err, "asr: %s: not found", jsgf); asr_close(a); return NULL; }
        a->gram = open_decoder(&a->cfg_gram, hmm, dict, NULL, jsgf, err);
        if (!a->gram) { asr_close(a); return NULL; }
    }
    snprintf(a->desc, sizeof a->desc, "%s%s%s (%s)", o->general ? "general en-us LM" : "domain LM",
             *jsgf ? " + grammar " : "", jsgf, lm);
    return a;
}

void asr_close(asr *a) {
    if (!a) return;
    if (a->lm) ps_free(a->lm);
    if (a->gram) ps_free(a->gram);
    if (a->cfg_lm) cmd_ln_free_r(a->cfg_lm);
    if (a->cfg_gram) cmd_ln_free_r(a->cfg_gram);
    free(a->utt);
    free(a);
}

const char *asr_describe(const asr *a) { return a->desc; }

int asr_start(asr *a, errbuf *err) {
    a->n = 0;
    a->cpu = 0;
    if (ps_start_utt(a->lm) < 0 || (a->gram && ps_start_utt(a->gram) < 0))
        return err_set(err, "asr: could not start an utterance");
    return 0;
}

int asr_feed(asr *a, const int16_t *x, size_t n, errbuf *err) {
    double t0 = now_sec();
    if (ps_process_raw(a->lm, x, n, FALSE, FALSE) < 0 || (a->gram && ps_process_raw(a->gram, x, n, FALSE, FALSE) < 0))
        return err_set(err, "asr: decoding failed");
    if (a->n_utts == 0) {   // keep the first utterance (see asr_end)
        if (a->n + n > a->utt_cap) { a->utt_cap = (a->n + n) * 2; a->utt = xrealloc(a->utt, a->utt_cap * sizeof(int16_t)); }
        memcpy(a->utt + a->n, x, n * sizeof(int16_t));
    }
    a->n += n;
    a->cpu += now_sec() - t0;
    return 0;
}

// Hypothesis text without filler/noise markers, lower case, single spaces.
static void clean_hyp(const char *h, char *out, size_t cap) {
    size_t k = 0;
    out[0] = 0;
    if (!h) return;
    const char *p = h;
    while (*p) {
        while (*p == ' ') p++;
        const char *w = p;
        while (*p && *p != ' ') p++;
        size_t len = (size_t)(p - w);
        if (!len || w[0] == '<' || w[0] == '[' || (len > 2 && w[0] == '+')) continue;
        if (k + len + 2 > cap) break;
        if (k) out[k++] = ' ';
        for (size_t i = 0; i < len; i++) {
            char c = (char)tolower((unsigned char)w[i]);
            if (c == '(') break;   // alternate pronunciation marker: word(2)
            out[k++] = c;
        }
    }
    out[k] = 0;
}

static double posterior(ps_decoder_t *ps) {
    logmath_t *lmath = ps_get_logmath(ps);
    int32 p = ps_get_prob(ps);
    double v = logmath_exp(lmath, p);
    return v > 1 ? 1 : v < 0 ? 0 : v;
}

// One search's best path: its text, acoustic score (log base of the decoder's logmath, summed
// over the words, fillers and silences included) and frames.
typedef struct hyp_info {
    char text[512];
    double ascr;     // acoustic log-likelihood, natural log
    int frames;
    double conf;     // posterior (0..1)
} hyp_info;

static void hyp_get(ps_decoder_t *ps, hyp_info *h) {
    int32 score;
    memset(h, 0, sizeof *h);
    clean_hyp(ps_get_hyp(ps, &score), h->text, sizeof h->text);
    logmath_t *lmath = ps_get_logmath(ps);
    double base_ln = log(logmath_get_base(lmath));
    for (ps_seg_t *seg = ps_seg_iter(ps); seg; seg = ps_seg_next(seg)) {
        int32 ascr = 0, lscr = 0, lback = 0;
        ps_seg_prob(seg, &ascr, &lscr, &lback);
        h->ascr += ascr * base_ln;
    }
    h->frames = ps_get_n_frames(ps);
    h->conf = *h->text ? posterior(ps) : 0;
}

int asr_end(asr *a, asr_result *r, errbuf *err) {
    double t0 = now_sec();
    memset(r, 0, sizeof *r);
    r->search = "";
    if (ps_end_utt(a->lm) < 0 || (a->gram && ps_end_utt(a->gram) < 0))
        return err_set(err, "asr: could not end the utterance");
    // Live cepstral mean normalisation starts from the model's prior and adapts after each
    // utterance; the first one is decoded with a poor estimate (measured: "set the temperature
    // to twenty two degrees" -> "do the two degrees"). So the first utterance is decoded again,
    // now that the estimate has seen it: a one-off cost on the first turn.
    if (a->n_utts++ == 0 && a->n) {
        size_t n = a->n;
        ps_start_utt(a->lm);
        if (a->gram) ps_start_utt(a->gram);
        for (size_t i = 0; i < n; i += 1600) {
            size_t k = n - i < 1600 ? n - i : 1600;
            ps_process_raw(a->lm, a->utt + i, k, FALSE, FALSE);
            if (a->gram) ps_process_raw(a->gram, a->utt + i, k, FALSE, FALSE);
        }
        ps_end_utt(a->lm);
        if (a->gram) ps_end_utt(a->gram);
        free(a->utt);
        a->utt = NULL;
        r->redecoded = true;
    }
    hyp_info lm, gram;
    hyp_get(a->lm, &lm);
    memset(&gram, 0, sizeof gram);
    if (a->gram) hyp_get(a->gram, &gram);
    // The grammar always finds some command; it is believed unless the free LM explains the
    // audio much better acoustically (per frame): then the person said something else.
    double gap = 0;
    if (*gram.text && *lm.text && lm.frames > 0) gap = (lm.ascr - gram.ascr) / lm.frames;
    bool use_gram = *gram.text && (gap <= a->grammar_max_gap || !*lm.text);
    if (getenv("CABIN_ASR_DEBUG"))
        fprintf(stderr, "asr: grammar \"%s\" conf %.2f ascr %.0f | lm \"%s\" conf %.2f ascr %.0f | %d frames, gap %.3f/frame -> %s\n",
                gram.text, gram.conf, gram.ascr, lm.text, lm.conf, lm.ascr, lm.frames, gap, use_gram ? "grammar" : "lm");
    if (use_gram) {
        snprintf(r->text, sizeof r->text, "%s", gram.text);
        r->search = "grammar";
        r->conf = gram.conf;
    } else if (*lm.text) {
        snprintf(r->text, sizeof r->text, "%s", lm.text);
        r->search = "lm";
        r->conf = lm.conf;
    }
    a->cpu += now_sec() - t0;
    r->audio_s = (double)a->n / 16000.0;
    r->cpu_s = a->cpu;
    return 0;
}

int asr_decode(asr *a, const int16_t *x, size_t n, asr_result *r, errbuf *err) {
    if (asr_start(a, err)) return -1;
    for (size_t i = 0; i < n; i += 1600)
        if (asr_feed(a, x + i, n - i < 1600 ? n - i : 1600, err)) return -1;
    return asr_end(a, r, err);
}
