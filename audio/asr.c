// pocketsphinx wrapper (see asr.h).
#include "audio/asr.h"

#include <pocketsphinx.h>
#include <sphinxbase/err.h>

#include <ctype.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PS_MODEL_DIR "/usr/share/pocketsphinx/model/en-us"
#define GRAMMAR_ARGS "-beam 1e-30 -pbeam 1e-30 -wbeam 1e-20"

struct asr {
    ps_decoder_t *lm;       // n-gram search
    ps_decoder_t *gram;     // grammar search (NULL without a grammar)
    cmd_ln_t *cfg_lm, *cfg_gram;
    float grammar_min_agree;
    size_t n;               // samples this utterance
    int16_t *utt;           // the first utterance's audio (n samples), kept to decode it twice
    size_t utt_cap;
    int n_utts;             // utterances finished
    double cpu;
    char desc[512];
};

asr_opts asr_opts_default(void) {
    asr_opts o = { .hmm = NULL, .lm = NULL, .dict = NULL, .jsgf = NULL, .general = false, .grammar_min_agree = 0.7f };
    return o;
}

// CPU time of the calling thread (decoding cost without other processes' share of the cores).
static double thread_cpu_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
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
    a->grammar_min_agree = o->grammar_min_agree;
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
    double t0 = thread_cpu_sec();
    if (ps_process_raw(a->lm, x, n, FALSE, FALSE) < 0 || (a->gram && ps_process_raw(a->gram, x, n, FALSE, FALSE) < 0))
        return err_set(err, "asr: decoding failed");
    if (a->n_utts == 0) {   // keep the first utterance (see asr_end)
        if (a->n + n > a->utt_cap) { a->utt_cap = (a->n + n) * 2; a->utt = xrealloc(a->utt, a->utt_cap * sizeof(int16_t)); }
        memcpy(a->utt + a->n, x, n * sizeof(int16_t));
    }
    a->n += n;
    a->cpu += thread_cpu_sec() - t0;
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

// One search's best path.
typedef struct hyp_info {
    char text[512];
    int frames;
    double conf;     // posterior (0..1); meaningful for the n-gram search only
} hyp_info;

static void hyp_get(ps_decoder_t *ps, hyp_info *h) {
    int32 score;
    memset(h, 0, sizeof *h);
    clean_hyp(ps_get_hyp(ps, &score), h->text, sizeof h->text);
    h->frames = ps_get_n_frames(ps);
    h->conf = *h->text ? posterior(ps) : 0;
}

// Share of a's words that b has in the same order: longest common subsequence / words of a.
static double word_agreement(const char *a, const char *b) {
    enum { MAXW = 64 };
    char ab[512], bb[512];
    const char *wa[MAXW], *wb[MAXW];
    int na = 0, nb = 0;
    snprintf(ab, sizeof ab, "%s", a);
    snprintf(bb, sizeof bb, "%s", b);
    char *save = NULL;
    for (char *t = strtok_r(ab, " ", &save); t && na < MAXW; t = strtok_r(NULL, " ", &save)) wa[na++] = t;
    for (char *t = strtok_r(bb, " ", &save); t && nb < MAXW; t = strtok_r(NULL, " ", &save)) wb[nb++] = t;
    if (!na) return 0;
    int m[MAXW + 1][MAXW + 1];   // m[i][j]: LCS of wa[0..i) and wb[0..j)
    for (int i = 0; i <= na; i++)
        for (int j = 0; j <= nb; j++)
            m[i][j] = !i || !j ? 0 : strcmp(wa[i - 1], wb[j - 1]) == 0 ? m[i - 1][j - 1] + 1
                    : m[i - 1][j] > m[i][j - 1] ? m[i - 1][j] : m[i][j - 1];
    return (double)m[na][nb] / na;
}

int asr_end(asr *a, asr_result *r, errbuf *err) {
    double t0 = thread_cpu_sec();
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
    // The grammar always finds some command, even in free speech. Its result is used when the
    // free n-gram search corroborates it: at least grammar_min_agree of the grammar's words
    // appear, in order, in the LM's hypothesis (the grammar then fixes the LM's slips: "give
    // isadora a little" -> "give isadora a call"); otherwise the LM's words are used.
    double agree = *gram.text && *lm.text ? word_agreement(gram.text, lm.text) : 0;
    bool use_gram = *gram.text && agree >= a->grammar_min_agree;
    if (getenv("CABIN_ASR_DEBUG"))
        fprintf(stderr, "asr: grammar \"%s\" | lm \"%s\" conf %.2f | %d frames, agreement %.2f -> %s\n",
                gram.text, lm.text, lm.conf, lm.frames, agree, use_gram ? "grammar" : "lm");
    if (use_gram) {
        snprintf(r->text, sizeof r->text, "%s", gram.text);
        r->search = "grammar";
        r->conf = lm.conf;
    } else if (*lm.text) {
        snprintf(r->text, sizeof r->text, "%s", lm.text);
        r->search = "lm";
        r->conf = lm.conf;
    }
    a->cpu += thread_cpu_sec() - t0;
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
