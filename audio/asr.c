// pocketsphinx wrapper (see asr.h).
#include "audio/asr.h"

#include <pocketsphinx.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/fsg_model.h>
#include <sphinxbase/jsgf.h>

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PS_MODEL_DIR "/usr/share/pocketsphinx/model/en-us"
// Decoder settings (CABIN_ASR_LM_ARGS / CABIN_ASR_GRAM_ARGS replace them, for experiments).
// The n-gram search keeps pocketsphinx's three passes (without the flat-lexicon pass at the
// end of the utterance, the development set's WER rose 0.182 -> 0.197; the LM's own words,
// without both passes, 0.28 -> 0.33). The grammar search has wider beams than pocketsphinx's
// defaults (-beam/-pbeam 1e-48 -> 1e-60, -wbeam 7e-29 -> 1e-40): the defaults pruned the right
// path of voices the acoustic model matches badly (development sets, WER clean/noisy
// 0.048/0.063 and 0.114/0.081 -> 0.041/0.052 and 0.065/0.060; 1e-80/1e-50 no better, RTF p90
// over 1). The wider beams cost CPU while the person speaks (recognition RTF p50 0.41 -> 0.66),
// not time after the release (TTFA p50 74 -> 79 ms, within the spread; docs/VOICE.md).
// Narrower ones, tried to save time, left it without any complete parse in a fifth of the
// commands. No lattice pass; hesitation fillers are rare in it (-fillprob 1e-4: at 1e-2 it
// heard "uh" between half the words).
#define LM_ARGS ""
#define GRAMMAR_ARGS "-bestpath no -fillprob 0.0001 -beam 1e-60 -pbeam 1e-60 -wbeam 1e-40"
// The grammar's transition log-probabilities are multiplied by this (see load_grammar): 3 was
// best on the development set, grammar first (1: 0.162 WER, 3: 0.159, 6.5, the language
// weight: 0.207).
#define GRAMMAR_SCALE 3.0f
#define CHUNK 1600              // samples per ps_process_raw call when replaying audio
// The noise floor (asr_opts.noise_floor_db): the en-us acoustic model was trained on recordings,
// which always carry some noise; audio without any (synthesized speech, digital silence between
// words, a microphone behind a noise gate or an OS noise suppressor) leaves mel bands nearly
// empty, their log energies far below anything the model saw, and recognition suffers. Measured
// on espeak-ng speech (development set, 48 commands, clean WER 0.186 without): white noise at
// -60 dBFS 0.074, -50 dBFS 0.037, -42 dBFS 0.052, -36 dBFS 0.130. -50 dBFS is within the range of
// a real microphone's own floor (about -60 to -45 dBFS) and 20-30 dB below speech at a usual
// level, so real input keeps its signal-to-noise ratio within a few dB.
#define NOISE_FLOOR_DB_DEFAULT (-50.0f)
// Free speech (not a command, not one the grammar holds) is forced through the grammar's words
// and fits the audio far worse than a free phone loop does; a command fits nearly as well
// (asr_result.fit). An utterance that fits below this is refused (docs/VOICE.md, "Free
// speech").
#define REFUSE_BELOW_DEFAULT (-38.0f)
#define PHONE_LM PS_MODEL_DIR "/en-us-phone.lm.bin"
// The phone loop: context-independent phones (context-dependent ones cost RTF 1.6 here against
// 0.05, and separated commands from free speech no better), narrow beams.
#define LOOP_ARGS "-allphone_ci yes -lw 2.0 -beam 1e-20 -pbeam 1e-20"

// One search's best path.
typedef struct hyp_info {
    char text[512];
    int frames;
    int32 ascr;      // acoustic score of the path (sum over its words; log base of the decoder)
    int words;       // words in text
    double post;     // posterior probability of the path (n-gram search with its lattice pass)
    int32 loop_ascr; // grammar search: the phone loop's best path's acoustic score over the same
                     // frames (when there is a loop; see asr_result.fit)
} hyp_info;

// The grammar search runs on a thread of its own, beside the n-gram search on the caller's: the
// two share the audio of the utterance (utt, appended by asr_feed) and finish in parallel.
typedef struct gram_worker {
    pthread_t th;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int want_utt;           // utterance number asked for (asr_start increments it)
    int have_utt;           // utterance the worker has started
    size_t pos;             // samples of utt taken for the decoder
    size_t fed;             // ... and decoded
    bool ending;            // asr_end: finish once every sample is in
    bool done;              // the worker finished the utterance (hyp valid)
    bool quit;
    int rc;                 // -1 if pocketsphinx failed
    hyp_info hyp;
    double cpu;             // the worker's CPU seconds this utterance
} gram_worker;

struct asr {
    ps_decoder_t *lm;       // n-gram search
    ps_decoder_t *gram;     // grammar search (NULL without a grammar)
    ps_decoder_t *loop;     // free phone loop fed beside the grammar search, on its thread (NULL:
                            // no phone LM, or no grammar); how well the grammar fits (asr_end)
    cmd_ln_t *cfg_lm, *cfg_gram, *cfg_loop;
    float refuse_below;     // asr_opts.refuse_below
    float grammar_min_agree;
    int policy;             // how the two results are combined (see asr_end)
    // the current utterance's audio, 16 kHz (kept: the worker reads it, and the first
    // utterance is decoded twice); guarded by w.lock when a worker runs
    int16_t *utt;
    size_t n, cap;
    int n_utts;             // utterances finished
    float noise_amp;        // uniform white noise in [-noise_amp, noise_amp] (int16 units; 0: none)
    uint32_t noise_state;   // its xorshift32 state (fixed seed: a run over the same audio decodes the same)
    int16_t *floored;       // asr_feed's input with the noise added
    size_t floored_cap;
    double cpu;             // this thread's CPU seconds this utterance
    gram_worker w;
    char desc[512];
};

enum { POLICY_AGREE, POLICY_GRAMMAR, POLICY_LM, POLICY_PICK };

asr_opts asr_opts_default(void) {
    asr_opts o = { .hmm = NULL, .lm = NULL, .dict = NULL, .jsgf = NULL, .general = false, .grammar_min_agree = 0.2f,
                   .noise_floor_db = NOISE_FLOOR_DB_DEFAULT, .refuse_below = REFUSE_BELOW_DEFAULT,
                   .fdict = NULL };
    return o;
}

// CPU time of the calling thread (decoding cost without other processes' share of the cores).
static double thread_cpu_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool readable(const char *p) { return p && access(p, R_OK) == 0; }

enum { DEC_LM, DEC_GRAMMAR, DEC_LOOP };

// A decoder of the given kind: the n-gram search (lm), the grammar search (its grammar is set
// by load_grammar) or the free phone loop (no dictionary: pocketsphinx's allphone search).
static ps_decoder_t *open_decoder(cmd_ln_t **cfg, const char *hmm, const char *dict, const char *fdict,
                                  const char *lm, int kind, errbuf *err) {
    static const char *const env[] = { "CABIN_ASR_LM_ARGS", "CABIN_ASR_GRAM_ARGS", "CABIN_ASR_LOOP_ARGS" };
    static const char *const args[] = { LM_ARGS, GRAMMAR_ARGS, LOOP_ARGS };
    char extra[512];
    const char *tune = getenv(env[kind]);   // experiments
    snprintf(extra, sizeof extra, "%s", tune ? tune : args[kind]);
    const char *log = getenv("CABIN_ASR_LOG");   // pocketsphinx's own log, for experiments
    const char *argv[64] = { "-hmm", hmm, "-logfn", log ? log : "/dev/null", "-samprate", "16000" };
    int argc = 6;
    if (kind == DEC_LOOP) { argv[argc++] = "-allphone"; argv[argc++] = PHONE_LM; }
    else { argv[argc++] = "-dict"; argv[argc++] = dict; }
    if (lm) { argv[argc++] = "-lm"; argv[argc++] = lm; }
    if (fdict) { argv[argc++] = "-fdict"; argv[argc++] = fdict; }
    char *save = NULL;
    for (char *t = strtok_r(extra, " ", &save); t && argc < 62; t = strtok_r(NULL, " ", &save)) argv[argc++] = t;
    *cfg = cmd_ln_parse_r(NULL, ps_args(), argc, (char **)argv, TRUE);
    const char *what = kind == DEC_LOOP ? PHONE_LM : lm ? lm : "grammar";
    if (!*cfg) { err_set(err, "asr: bad pocketsphinx configuration (%s, %s)", hmm, what); return NULL; }
    ps_decoder_t *ps = ps_init(*cfg);
    if (!ps) {
        err_set(err, "asr: pocketsphinx could not load %s with %s%s%s", hmm, kind == DEC_LOOP ? PHONE_LM : dict,
                lm ? " and " : "", lm ? lm : "");
        cmd_ln_free_r(*cfg);
        *cfg = NULL;
    }
    return ps;
}

// The grammar as a finite-state network whose transition log-probabilities are scaled by the
// language weight, as pocketsphinx does for FSG files (fsg_model_read) but not for JSGF
// (jsgf_build_fsg leaves them unscaled, so the grammar's /weights/ would barely count against
// the acoustic scores while silence and filler loops, which are scaled, count fully).
// The public rule of grammar j (freed here) as ps's search `name`, made the active one: the
// network built at language weight lw (pocketsphinx scales its silence and filler transitions by
// it), the grammar's own transition log-probabilities then multiplied by arc_scale.
// Returns 0, or USE_NO_RULE, USE_NO_NETWORK, USE_REFUSED.
enum { USE_NO_RULE = -1, USE_NO_NETWORK = -2, USE_REFUSED = -3 };
static int use_grammar(ps_decoder_t *ps, const char *name, jsgf_t *j, float lw, float arc_scale) {
    jsgf_rule_t *rule = jsgf_get_public_rule(j);
    fsg_model_t *fsg = rule ? jsgf_build_fsg(j, rule, ps_get_logmath(ps), lw) : NULL;
    jsgf_grammar_free(j);
    if (!rule) return USE_NO_RULE;
    if (!fsg) return USE_NO_NETWORK;
    for (int s = 0; s < fsg_model_n_state(fsg); s++)
        for (fsg_arciter_t *it = fsg_model_arcs(fsg, s); it; it = fsg_arciter_next(it)) {
            fsg_link_t *l = fsg_arciter_get(it);
            l->logs2prob = (int32)((double)l->logs2prob * arc_scale);
        }
    int rc = ps_set_fsg(ps, name, fsg);
    fsg_model_free(fsg);   // the search holds its own reference
    return rc < 0 || ps_set_search(ps, name) < 0 ? USE_REFUSED : 0;
}

static int load_grammar(ps_decoder_t *ps, const char *path, float scale, errbuf *err) {
    jsgf_t *j = jsgf_parse_file(path, NULL);
    if (!j) return err_set(err, "asr: %s: not a JSGF grammar pocketsphinx can read", path);
    switch (use_grammar(ps, "cabin", j, scale, scale)) {
    case USE_NO_RULE: return err_set(err, "asr: %s: no public rule", path);
    case USE_NO_NETWORK: return err_set(err, "asr: %s: could not build the grammar network", path);
    case USE_REFUSED:
        return err_set(err, "asr: %s: pocketsphinx refused the grammar (a word missing from the dictionary?)", path);
    }
    return 0;
}

// Hypothesis text from the best path's words: lower case, single spaces, alternate
// pronunciation markers (word(2)) and silence/noise dropped; hesitation fillers of the noise
// dictionary (++UM++) written as the words they are (um), since a person said them.
static void path_words(ps_decoder_t *ps, hyp_info *h) {
    size_t k = 0;
    h->text[0] = 0;
    h->ascr = 0;
    h->words = 0;
    for (ps_seg_t *s = ps_seg_iter(ps); s; s = ps_seg_next(s)) {
        const char *w = ps_seg_word(s);
        int32 ascr = 0, lscr = 0, lback = 0;
        ps_seg_prob(s, &ascr, &lscr, &lback);
        h->ascr += ascr;
        size_t len = strlen(w);
        if (!len || w[0] == '<' || w[0] == '[' || w[0] == '(') continue;   // silence, noise, (NULL)
        if (len > 4 && strncmp(w, "++", 2) == 0 && strcmp(w + len - 2, "++") == 0) { w += 2; len -= 4; }
        else if (w[0] == '+') continue;
        if (k + len + 2 > sizeof h->text) break;
        if (k) h->text[k++] = ' ';
        for (size_t i = 0; i < len && w[i] != '('; i++) h->text[k++] = (char)tolower((unsigned char)w[i]);
        h->words++;
    }
    h->text[k] = 0;
    h->frames = ps_get_n_frames(ps);
    double p = k ? logmath_exp(ps_get_logmath(ps), ps_get_prob(ps)) : 0;
    h->post = p > 1 ? 1 : p < 0 ? 0 : p;
}

// ---- the grammar worker ----
static void *gram_main(void *ud) {
    asr *a = ud;
    gram_worker *w = &a->w;
    int16_t chunk[CHUNK];
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->quit && w->have_utt == w->want_utt && (w->done || (w->pos == a->n && !w->ending)))
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->quit) break;
        double t0 = thread_cpu_sec();
        if (w->have_utt != w->want_utt) {   // a new utterance (or the first one again)
            w->have_utt = w->want_utt;
            w->pos = w->fed = 0;
            pthread_mutex_unlock(&w->lock);
            int rc = ps_start_utt(a->gram);
            if (a->loop && ps_start_utt(a->loop) < 0) rc = -1;
            pthread_mutex_lock(&w->lock);
            if (rc < 0) w->rc = -1;
        } else if (w->pos < a->n) {
            size_t k = a->n - w->pos < CHUNK ? a->n - w->pos : CHUNK;
            memcpy(chunk, a->utt + w->pos, k * sizeof(int16_t));
            w->pos += k;
            pthread_mutex_unlock(&w->lock);
            int rc = ps_process_raw(a->gram, chunk, k, FALSE, FALSE);
            if (a->loop && ps_process_raw(a->loop, chunk, k, FALSE, FALSE) < 0) rc = -1;
            pthread_mutex_lock(&w->lock);
            if (rc < 0) w->rc = -1;
            w->fed = w->pos;
        } else {   // ending, every sample in
            pthread_mutex_unlock(&w->lock);
            hyp_info h = { .loop_ascr = 0 };
            int rc = ps_end_utt(a->gram);
            path_words(a->gram, &h);
            if (a->loop) {
                if (ps_end_utt(a->loop) < 0) rc = -1;
                for (ps_seg_t *sg = ps_seg_iter(a->loop); sg; sg = ps_seg_next(sg)) {
                    int32 ascr = 0, lscr = 0, lback = 0;
                    ps_seg_prob(sg, &ascr, &lscr, &lback);
                    h.loop_ascr += ascr;
                }
            }
            pthread_mutex_lock(&w->lock);
            if (rc < 0) w->rc = -1;
            w->hyp = h;
            w->done = true;
        }
        w->cpu += thread_cpu_sec() - t0;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void gram_lock(asr *a) { if (a->w.running) pthread_mutex_lock(&a->w.lock); }
static void gram_unlock(asr *a) { if (a->w.running) pthread_mutex_unlock(&a->w.lock); }

// Asks the worker for a new utterance over a->utt (asr_start, and the first one's second decoding).
static void gram_begin(asr *a, bool ending) {
    if (!a->w.running) return;
    pthread_mutex_lock(&a->w.lock);
    a->w.want_utt++;
    a->w.ending = ending;
    a->w.done = false;
    a->w.rc = 0;
    a->w.cpu = 0;
    pthread_cond_broadcast(&a->w.cond);
    pthread_mutex_unlock(&a->w.lock);
}

// Waits for the worker to finish the utterance; its hypothesis into h. Returns its status.
static int gram_finish(asr *a, hyp_info *h, double *cpu) {
    memset(h, 0, sizeof *h);
    if (!a->w.running) return 0;
    pthread_mutex_lock(&a->w.lock);
    a->w.ending = true;
    pthread_cond_broadcast(&a->w.cond);
    while (!a->w.done) pthread_cond_wait(&a->w.cond, &a->w.lock);
    *h = a->w.hyp;
    *cpu += a->w.cpu;
    int rc = a->w.rc;
    pthread_mutex_unlock(&a->w.lock);
    return rc;
}

asr *asr_open(const asr_opts *o, errbuf *err) {
    err_set_logfp(NULL);   // sphinxbase's own chatter off (errors come back through err)
    const char *hmm = o->hmm ? o->hmm : PS_MODEL_DIR "/en-us";
    const char *lm = o->lm, *dict = o->dict, *jsgf = o->jsgf, *fdict = o->fdict;
    if (o->general) {
        lm = lm ? lm : PS_MODEL_DIR "/en-us.lm.bin";
        dict = dict ? dict : PS_MODEL_DIR "/cmudict-en-us.dict";
        jsgf = jsgf ? jsgf : "";
        fdict = fdict && *fdict ? fdict : NULL;
    } else {
        lm = lm ? lm : "assets/asr/cabin.lm";
        dict = dict ? dict : "assets/asr/cabin.dict";
        if (!jsgf) jsgf = readable("assets/asr/cabin.gram") ? "assets/asr/cabin.gram" : "";
        if (!fdict) fdict = readable("assets/asr/cabin.filler") ? "assets/asr/cabin.filler" : NULL;
        else if (!*fdict) fdict = NULL;
    }
    const char *need[] = { hmm, lm, dict, fdict };
    for (int i = 0; i < 4; i++)
        if (need[i] && access(need[i], R_OK) != 0)
            return err_set(err, "asr: %s: not found%s", need[i], i == 0 ? " (install pocketsphinx-en-us)" : ""), NULL;
    asr *a = xcalloc(1, sizeof *a);
    a->grammar_min_agree = o->grammar_min_agree;
    const char *rb = getenv("CABIN_ASR_REFUSE_BELOW");   // experiments
    a->refuse_below = rb ? (float)atof(rb) : o->refuse_below;
    // uniform noise of RMS r has amplitude r * sqrt(3)
    a->noise_amp = o->noise_floor_db < -120 ? 0 : 32768.0f * powf(10.0f, o->noise_floor_db / 20) * sqrtf(3.0f);
    a->noise_state = 0x9e3779b9u;
    const char *pol = getenv("CABIN_ASR_POLICY");   // experiments: agree | grammar | lm | pick
    a->policy = pol && strcmp(pol, "grammar") == 0 ? POLICY_GRAMMAR : pol && strcmp(pol, "lm") == 0 ? POLICY_LM
              : pol && strcmp(pol, "pick") == 0 ? POLICY_PICK : POLICY_AGREE;
    // The noise dictionary's hesitations are for the grammar: pocketsphinx's n-gram search takes
    // only one-phone fillers (multi-phone ones trip an assertion in its segment scoring), and the
    // LM has "um" and "uh" as words with their corpus probabilities anyway.
    a->lm = open_decoder(&a->cfg_lm, hmm, dict, NULL, lm, DEC_LM, err);
    if (!a->lm) { free(a); return NULL; }
    if (*jsgf) {
        if (!readable(jsgf)) { err_set(err, "asr: %s: not found", jsgf); asr_close(a); return NULL; }
        a->gram = open_decoder(&a->cfg_gram, hmm, dict, fdict, NULL, DEC_GRAMMAR, err);
        if (!a->gram) { asr_close(a); return NULL; }
        const char *sc = getenv("CABIN_ASR_GRAM_SCALE");   // experiments
        float scale = sc ? (float)atof(sc) : GRAMMAR_SCALE;
        if (load_grammar(a->gram, jsgf, scale, err)) { asr_close(a); return NULL; }
        // The phone loop is for the acoustic model it was made for; without it (another model,
        // or the file missing) nothing is refused.
        if (!o->hmm && readable(PHONE_LM)) {
            errbuf lerr = {{0}};
            a->loop = open_decoder(&a->cfg_loop, hmm, NULL, NULL, NULL, DEC_LOOP, &lerr);
        }
        pthread_mutex_init(&a->w.lock, NULL);
        pthread_cond_init(&a->w.cond, NULL);
        a->w.done = true;
        if (pthread_create(&a->w.th, NULL, gram_main, a) != 0) {
            err_set(err, "asr: could not start the grammar thread");
            asr_close(a);
            return NULL;
        }
        a->w.running = true;
    }
    snprintf(a->desc, sizeof a->desc, "%s%s%s (%s)%s", o->general ? "general en-us LM" : "domain LM",
             *jsgf ? " + grammar " : "", jsgf, lm, a->loop ? " + phone loop" : "");
    return a;
}

void asr_close(asr *a) {
    if (!a) return;
    if (a->w.running) {
        pthread_mutex_lock(&a->w.lock);
        a->w.quit = true;
        pthread_cond_broadcast(&a->w.cond);
        pthread_mutex_unlock(&a->w.lock);
        pthread_join(a->w.th, NULL);
        pthread_mutex_destroy(&a->w.lock);
        pthread_cond_destroy(&a->w.cond);
    }
    if (a->lm) ps_free(a->lm);
    if (a->gram) ps_free(a->gram);
    if (a->loop) {
        // pocketsphinx 5prealpha's allphone search frees its last utterance's phone segments
        // only when it builds the next list (ps_seg_iter), not in ps_free: an empty utterance's
        // empty list frees them (LeakSanitizer found them).
        if (ps_start_utt(a->loop) == 0 && ps_end_utt(a->loop) == 0)
            for (ps_seg_t *sg = ps_seg_iter(a->loop); sg; sg = ps_seg_next(sg)) {}
        ps_free(a->loop);
    }
    if (a->cfg_lm) cmd_ln_free_r(a->cfg_lm);
    if (a->cfg_gram) cmd_ln_free_r(a->cfg_gram);
    if (a->cfg_loop) cmd_ln_free_r(a->cfg_loop);
    free(a->utt);
    free(a->floored);
    free(a);
}

const char *asr_describe(const asr *a) { return a->desc; }

int asr_start(asr *a, errbuf *err) {
    gram_lock(a);
    a->n = 0;
    gram_unlock(a);
    a->cpu = 0;
    if (ps_start_utt(a->lm) < 0) return err_set(err, "asr: could not start an utterance");
    gram_begin(a, false);
    return 0;
}

// x with the noise floor added (a->floored), or x itself without one.
static const int16_t *add_noise_floor(asr *a, const int16_t *x, size_t n) {
    if (a->noise_amp <= 0) return x;
    if (n > a->floored_cap) {
        a->floored_cap = n;
        a->floored = xrealloc(a->floored, n * sizeof(int16_t));
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t s = a->noise_state;
        s ^= s << 13; s ^= s >> 17; s ^= s << 5;
        a->noise_state = s;
        float v = x[i] + a->noise_amp * ((float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f);
        a->floored[i] = (int16_t)lrintf(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
    }
    return a->floored;
}

int asr_feed(asr *a, const int16_t *x, size_t n, errbuf *err) {
    double t0 = thread_cpu_sec();
    x = add_noise_floor(a, x, n);
    gram_lock(a);
    if (a->n + n > a->cap) {
        a->cap = (a->n + n) * 2;
        a->utt = xrealloc(a->utt, a->cap * sizeof(int16_t));
    }
    memcpy(a->utt + a->n, x, n * sizeof(int16_t));
    a->n += n;
    if (a->w.running) pthread_cond_broadcast(&a->w.cond);
    gram_unlock(a);
    int rc = ps_process_raw(a->lm, x, n, FALSE, FALSE);
    a->cpu += thread_cpu_sec() - t0;
    if (a->w.running) {
        // The grammar search keeps step with this one (as it must with a microphone, when both
        // run faster than real time): no backlog is left to finish after the end of speech, even
        // when a file is fed as fast as it can be read.
        pthread_mutex_lock(&a->w.lock);
        while ((a->w.have_utt != a->w.want_utt || a->w.fed < a->n) && a->w.rc == 0)
            pthread_cond_wait(&a->w.cond, &a->w.lock);
        if (a->w.rc < 0) rc = -1;
        pthread_mutex_unlock(&a->w.lock);
    }
    return rc < 0 ? err_set(err, "asr: decoding failed") : 0;
}

// A hypothesis split into words (a copy of its text in buf; at most MAX_HYP_WORDS words kept).
enum { MAX_HYP_WORDS = 64 };
typedef struct hyp_words {
    char buf[512];
    const char *w[MAX_HYP_WORDS];
    int n;
} hyp_words;

static void split_words(hyp_words *h, const char *s) {
    snprintf(h->buf, sizeof h->buf, "%s", s);
    h->n = 0;
    char *save = NULL;
    for (char *t = strtok_r(h->buf, " ", &save); t && h->n < MAX_HYP_WORDS; t = strtok_r(NULL, " ", &save))
        h->w[h->n++] = t;
}

// m[i][j] = length of the longest common subsequence of a's words from i on and b's from j on.
static void lcs_table(const hyp_words *a, const hyp_words *b, int m[MAX_HYP_WORDS + 1][MAX_HYP_WORDS + 1]) {
    for (int i = a->n; i >= 0; i--)
        for (int j = b->n; j >= 0; j--)
            m[i][j] = i == a->n || j == b->n ? 0 : strcmp(a->w[i], b->w[j]) == 0 ? m[i + 1][j + 1] + 1
                    : m[i + 1][j] > m[i][j + 1] ? m[i + 1][j] : m[i][j + 1];
}

// Share of a's words that b has in the same order: longest common subsequence / words of a.
static double word_agreement(const char *a, const char *b) {
    hyp_words wa, wb;
    split_words(&wa, a);
    split_words(&wb, b);
    if (!wa.n) return 0;
    int m[MAX_HYP_WORDS + 1][MAX_HYP_WORDS + 1];
    lcs_table(&wa, &wb, m);
    return (double)m[0][0] / wa.n;
}

// Ends both searches (in parallel: the grammar's on its thread) and reads their best paths.
static int end_both(asr *a, hyp_info *lm, hyp_info *gram, errbuf *err) {
    int rc = ps_end_utt(a->lm);
    path_words(a->lm, lm);
    double cpu = 0;
    int grc = gram_finish(a, gram, &cpu);
    a->cpu += cpu;
    if (rc < 0 || grc < 0) return err_set(err, "asr: could not end the utterance");
    return 0;
}

// The two hypotheses as one small grammar: their common words (longest common subsequence) in
// order, and where they differ either one's words ("turn ( uh | um ) down the music", "[ so ]
// turn ..."). Decoding the utterance again with it lets the acoustics alone choose.
static void appendf(char *out, size_t cap, size_t *k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    *k += (size_t)vsnprintf(out + *k, *k < cap ? cap - *k : 0, fmt, ap);
    va_end(ap);
}

int asr_union_grammar(const char *g, const char *l, char *out, size_t cap) {
    hyp_words wg, wl;
    split_words(&wg, g);
    split_words(&wl, l);
    if (wg.n == MAX_HYP_WORDS || wl.n == MAX_HYP_WORDS) return -1;   // (possibly) cut short: no union of parts
    int m[MAX_HYP_WORDS + 1][MAX_HYP_WORDS + 1];
    lcs_table(&wg, &wl, m);
    size_t k = 0;
    appendf(out, cap, &k, "#JSGF V1.0;\ngrammar pick;\npublic <pick> =");
    int i = 0, j = 0;
    while (i < wg.n || j < wl.n) {
        if (i < wg.n && j < wl.n && strcmp(wg.w[i], wl.w[j]) == 0) {
            appendf(out, cap, &k, " %s", wg.w[i]);
            i++, j++;
            continue;
        }
        // the differing stretch: up to the next common word of the LCS
        int i2 = i, j2 = j;
        while (i2 < wg.n || j2 < wl.n) {
            if (i2 < wg.n && j2 < wl.n && strcmp(wg.w[i2], wl.w[j2]) == 0) break;
            if (i2 < wg.n && (j2 == wl.n || m[i2 + 1][j2] >= m[i2][j2 + 1])) i2++;
            else j2++;
        }
        // "( g's | l's )" where both have words, "[ the one's ]" where one has none
        bool both = i2 > i && j2 > j;
        appendf(out, cap, &k, both ? " (" : " [");
        for (int x = i; x < i2; x++) appendf(out, cap, &k, " %s", wg.w[x]);
        if (both) appendf(out, cap, &k, " |");
        for (int x = j; x < j2; x++) appendf(out, cap, &k, " %s", wl.w[x]);
        appendf(out, cap, &k, both ? " )" : " ]");
        i = i2, j = j2;
    }
    appendf(out, cap, &k, ";\n");
    return k < cap ? 0 : -1;
}

// Decodes the kept utterance again on the grammar decoder with asr_union_grammar(g, l); its words
// into h. The decoder's live cepstral mean is put back afterwards, so this second look at the
// utterance does not count twice in it. Returns -1 if that could not be done (h then empty).
static int pick_pass(asr *a, const char *g, const char *l, hyp_info *h) {
    char jsgf[4096];
    memset(h, 0, sizeof *h);
    if (asr_union_grammar(g, l, jsgf, sizeof jsgf)) return -1;
    // What ps_set_jsgf_string does (the network built at the decoder's language weight, no
    // further scaling), without its leak: pocketsphinx 5prealpha never frees the parsed grammar.
    jsgf_t *j = jsgf_parse_string(jsgf, NULL);
    if (!j || use_grammar(a->gram, "pick", j, cmd_ln_float32_r(a->cfg_gram, "-lw"), 1.0f) < 0) {
        ps_set_search(a->gram, "cabin");
        return -1;
    }
    cmn_t *cmn = ps_get_feat(a->gram)->cmn_struct;
    enum { MAXCEP = 64 };
    mfcc_t mean[MAXCEP], sum[MAXCEP];
    int32 nframe = 0;
    bool keep = cmn && cmn->veclen <= MAXCEP;
    if (keep) {
        memcpy(mean, cmn->cmn_mean, (size_t)cmn->veclen * sizeof *mean);
        memcpy(sum, cmn->sum, (size_t)cmn->veclen * sizeof *sum);
        nframe = cmn->nframe;
    }
    int rc = ps_start_utt(a->gram);
    for (size_t i = 0; rc >= 0 && i < a->n; i += CHUNK)
        rc = ps_process_raw(a->gram, a->utt + i, a->n - i < CHUNK ? a->n - i : CHUNK, FALSE, FALSE);
    if (rc >= 0) rc = ps_end_utt(a->gram);
    if (rc >= 0) path_words(a->gram, h);
    if (keep) {
        memcpy(cmn->cmn_mean, mean, (size_t)cmn->veclen * sizeof *mean);
        memcpy(cmn->sum, sum, (size_t)cmn->veclen * sizeof *sum);
        cmn->nframe = nframe;
    }
    ps_set_search(a->gram, "cabin");
    return rc < 0 ? -1 : 0;
}

static bool is_filler(const char *w) {
    static const char *const fillers[] = { "uh", "um", "er", "hmm", "so" };
    for (size_t k = 0; k < sizeof fillers / sizeof *fillers; k++)
        if (strcmp(w, fillers[k]) == 0) return true;
    return false;
}

// Whether a and b are the same words once hesitations and a discourse "so" are left out
// (the two searches often differ only there: the grammar's filler loop puts "uh" or "so" where
// espeak-ng's voice starts, the n-gram search drops a real "um").
bool asr_same_but_fillers(const char *a, const char *b) {
    hyp_words wa, wb;
    split_words(&wa, a);
    split_words(&wb, b);
    if (wa.n == MAX_HYP_WORDS || wb.n == MAX_HYP_WORDS) return false;   // (possibly) cut short
    int i = 0, j = 0;
    for (;;) {
        while (i < wa.n && is_filler(wa.w[i])) i++;
        while (j < wb.n && is_filler(wb.w[j])) j++;
        if (i == wa.n || j == wb.n) return i == wa.n && j == wb.n;
        if (strcmp(wa.w[i], wb.w[j]) != 0) return false;
        i++, j++;
    }
}

int asr_end(asr *a, asr_result *r, errbuf *err) {
    double t0 = thread_cpu_sec();
    memset(r, 0, sizeof *r);
    r->search = "";
    hyp_info lm, gram;
    if (end_both(a, &lm, &gram, err)) return -1;
    // Live cepstral mean normalisation starts from the model's prior and adapts after each
    // utterance; the first one is decoded with a poor estimate (measured: "set the temperature
    // to twenty two degrees" -> "do the two degrees"). So the first utterance is decoded again,
    // now that the estimate has seen it: a one-off cost on the first turn.
    if (a->n_utts++ == 0 && a->n) {
        ps_start_utt(a->lm);
        gram_begin(a, true);
        for (size_t i = 0; i < a->n; i += CHUNK)
            ps_process_raw(a->lm, a->utt + i, a->n - i < CHUNK ? a->n - i : CHUNK, FALSE, FALSE);
        if (end_both(a, &lm, &gram, err)) return -1;
        r->redecoded = true;
    }
    // A grammar pass with the n-gram LM as fallback: the grammar's words when it parsed the
    // utterance (a path reached its final state) and the free n-gram search heard at least
    // grammar_min_agree of them, in order; the LM's otherwise (free phrasing, speech the
    // grammar's beams lost, or a parse the LM does not bear out: the grammar always forces
    // some command, "stop um um the song" -> "so phone lucas okay"). WER by threshold, clean
    // development set / clean test set / noisy test set: 0: 0.171/0.392/0.304, 0.2:
    // 0.182/0.329/0.190, 0.4: 0.219/0.329/0.215, 0.7 (before): 0.234/0.278/0.228.
    double agree = *gram.text && *lm.text ? word_agreement(gram.text, lm.text) : 0;
    bool use_gram = a->policy == POLICY_GRAMMAR ? *gram.text != 0
                  : a->policy == POLICY_LM ? false
                  : *gram.text && agree >= a->grammar_min_agree;
    // Where the two differ only in hesitations (and "so"), neither search's prior is worth
    // much: the grammar's filler loop and the n-gram's "uh"/"um" both guess. A third, short
    // decoding over a grammar of just the two readings lets the acoustics choose (20-40 ms,
    // in about one utterance in twelve). Development sets (clean+noisy, 144 commands; test not
    // used): 156 -> 139 word errors. Always doing it (CABIN_ASR_POLICY=pick) leaves the choice
    // to acoustics where the priors matter: 156 -> 171; the acoustically best reading is
    // mostly the n-gram search's own.
    bool pick_it = *gram.text && *lm.text && strcmp(gram.text, lm.text) != 0
                && (a->policy == POLICY_PICK || (a->policy == POLICY_AGREE && asr_same_but_fillers(gram.text, lm.text)));
    hyp_info pick = { .text = "" };
    if (pick_it && pick_pass(a, gram.text, lm.text, &pick) < 0) pick.text[0] = 0;
    // How well the grammar's path fits, against the free phone loop over the same frames. The
    // grammar holds every phrasing of every command the product knows; speech that fits it far
    // worse than a free phone sequence does is not a command, whichever reading was chosen (the
    // n-gram search turns it into in-domain words too, which the model acts on). Development
    // sets (288 commands, 36 free sentences): at -38, 4 commands refused (2 of them answered
    // right before) and free sentences acted on 27 -> 7 (docs/VOICE.md, "Free speech").
    r->fit = *gram.text && a->loop && gram.frames > 0 ? (double)(gram.ascr - gram.loop_ascr) / gram.frames : NAN;
    if (getenv("CABIN_ASR_DEBUG"))
        fprintf(stderr, "asr: grammar \"%s\" ascr %d | lm \"%s\" ascr %d | %d frames, agreement %.2f -> %s | lm posterior %.3f | fit %.1f%s\n",
                gram.text, gram.ascr, lm.text, lm.ascr, lm.frames, agree,
                *pick.text ? "pick" : use_gram ? "grammar" : "lm", lm.post, r->fit,
                r->fit < a->refuse_below ? " (below the refusal threshold)" : "");
    if (*pick.text) {
        snprintf(r->text, sizeof r->text, "%s", pick.text);
        r->search = "pick";
    } else if (use_gram) {
        snprintf(r->text, sizeof r->text, "%s", gram.text);
        r->search = "grammar";
    } else if (*lm.text) {
        snprintf(r->text, sizeof r->text, "%s", lm.text);
        r->search = "lm";
    }
    r->conf = agree;
    r->refused = *r->text && !isnan(r->fit) && r->fit < a->refuse_below;
    a->cpu += thread_cpu_sec() - t0;
    r->audio_s = (double)a->n / 16000.0;
    r->cpu_s = a->cpu;
    return 0;
}

int asr_decode(asr *a, const int16_t *x, size_t n, asr_result *r, errbuf *err) {
    if (asr_start(a, err)) return -1;
    for (size_t i = 0; i < n; i += CHUNK)
        if (asr_feed(a, x + i, n - i < CHUNK ? n - i : CHUNK, err)) return -1;
    return asr_end(a, r, err);
}
