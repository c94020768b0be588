// pocketsphinx wrapper (see asr.h).
#include "audio/asr.h"
#include "audio/asr_fsg.h"

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
// Live cepstral mean normalisation starts from the acoustic model's prior (its feat.params
// -cmninit), which is far from what a given microphone and voice give; pocketsphinx updates the
// mean only at the end of an utterance, so the first utterance would be decoded with the prior
// ("set the temperature to twenty two degrees" -> "do the two degrees"). Once the first
// utterance has COLD_SETTLE_S seconds of audio, the searches start over on it with the mean of
// what they have seen so far (weighted COLD_SETTLE_WEIGHT against the prior) and catch up while
// the person is still speaking (asr_feed); again at each point COLD_SETTLE_GROW times the one
// before, up to COLD_SETTLE_LAST_S (0.6, 0.9, 1.35 s). A later start-over would leave up to
// ~0.3 s of catching up after the person stops; fewer heard worse (docs/history/VOICE.md, "The
// first utterance"). A first utterance shorter than COLD_SETTLE_S is decoded again at its end.
#define COLD_SETTLE_S 0.6f
#define COLD_SETTLE_WEIGHT 1.0f
#define COLD_SETTLE_GROW 1.5f
#define COLD_SETTLE_LAST_S 1.4
enum { MAXCEP = 64 };   // cepstral vector length the mean is kept for (the en-us model's: 13)

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
    bool in_utt;            // the worker's decoders are inside an utterance
    bool set_cmn;           // at the next start, set both decoders' cepstral mean to cmn first
    mfcc_t cmn[MAXCEP];
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
    float gram_scale;       // the grammar's log-probabilities were multiplied by this (load_grammar)
    float grammar_min_agree;
    int policy;             // how the two results are combined (see asr_end)
    // the current utterance's audio, 16 kHz (kept: the worker reads it, and the first
    // utterance is decoded twice); guarded by w.lock when a worker runs
    int16_t *utt;
    size_t n, cap;
    int n_utts;             // utterances finished
    // the first utterance's early start-over (COLD_SETTLE_S)
    mfcc_t prior[MAXCEP];   // the acoustic model's cepstral mean (veclen of them; 0: unknown)
    int veclen;
    bool cold;              // this utterance began from the prior (the first, or CABIN_ASR_COLD)
    bool settled;           // ... and its searches started over with its own mean
    mfcc_t sum0[MAXCEP];    // the n-gram decoder's CMN sum and frames at the utterance's start
    int32 nframe0;
    size_t settle_at;       // samples after which the searches start over (0: never)
    size_t settle_next;     // ... this utterance's next such point (0: none left)
    float settle_grow;      // each later point this many times the one before (<= 1: one point)
    size_t settle_last;     // no start-over after this many samples
    float settle_weight;
    bool early;             // asr_end may decide on the grammar before the n-gram search's final passes
    bool lm_pending;        // ... and did: they run at the next asr_start (finish_lm)
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
#define GRAMMAR_SEARCH "cabin"   // the grammar search's name in its decoder
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
    fsg_model_t *small = fsg_compact(fsg);
    if (getenv("CABIN_ASR_DEBUG"))
        fprintf(stderr, "asr: grammar %s: %d states, %d after merging\n", name, fsg_model_n_state(fsg),
                small ? fsg_model_n_state(small) : fsg_model_n_state(fsg));
    if (small && !getenv("CABIN_ASR_NO_COMPACT")) { fsg_model_free(fsg); fsg = small; }
    else if (small) fsg_model_free(small);
    int rc = ps_set_fsg(ps, name, fsg);
    fsg_model_free(fsg);   // the search holds its own reference
    return rc < 0 || ps_set_search(ps, name) < 0 ? USE_REFUSED : 0;
}

static int load_grammar(ps_decoder_t *ps, const char *path, float scale, errbuf *err) {
    jsgf_t *j = jsgf_parse_file(path, NULL);
    if (!j) return err_set(err, "asr: %s: not a JSGF grammar pocketsphinx can read", path);
    switch (use_grammar(ps, GRAMMAR_SEARCH, j, scale, scale)) {
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
        if (w->have_utt != w->want_utt) {   // a new utterance (or the same one over again)
            w->have_utt = w->want_utt;
            w->pos = w->fed = 0;
            bool restart = w->in_utt, set = w->set_cmn;
            w->set_cmn = false;
            w->in_utt = true;
            pthread_mutex_unlock(&w->lock);
            int rc = 0;
            if (restart) {   // the partial decoding is dropped
                if (ps_end_utt(a->gram) < 0) rc = -1;
                if (a->loop && ps_end_utt(a->loop) < 0) rc = -1;
            }
            if (set) {
                cmn_live_set(ps_get_feat(a->gram)->cmn_struct, w->cmn);
                if (a->loop) cmn_live_set(ps_get_feat(a->loop)->cmn_struct, w->cmn);
            }
            if (ps_start_utt(a->gram) < 0) rc = -1;
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
            w->in_utt = false;
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

// Asks the worker for a new utterance over a->utt (asr_start, and the first one's second
// decoding); an utterance in progress is dropped; with cmn, the decoders' cepstral mean is set
// to it first.
static void gram_begin(asr *a, bool ending, const mfcc_t *cmn) {
    if (!a->w.running) return;
    pthread_mutex_lock(&a->w.lock);
    if (cmn) {
        memcpy(a->w.cmn, cmn, (size_t)a->veclen * sizeof *cmn);
        a->w.set_cmn = true;
    }
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
        a->gram_scale = scale;
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
    cmn_t *cmn = ps_get_feat(a->lm)->cmn_struct;
    if (cmn && cmn->veclen <= MAXCEP) {
        a->veclen = cmn->veclen;
        cmn_live_get(cmn, a->prior);
    }
    const char *cs = getenv("CABIN_ASR_SETTLE_S"), *cw = getenv("CABIN_ASR_SETTLE_W");   // experiments
    float settle_s = cs ? (float)atof(cs) : COLD_SETTLE_S;
    a->settle_at = a->veclen && settle_s > 0 ? (size_t)(settle_s * 16000) : 0;
    a->settle_weight = cw ? (float)atof(cw) : COLD_SETTLE_WEIGHT;
    const char *ce = getenv("CABIN_ASR_EARLY");   // experiments: 0 always waits for the final passes
    a->early = !ce || atoi(ce) != 0;
    const char *cg = getenv("CABIN_ASR_SETTLE_GROW");
    a->settle_grow = cg ? (float)atof(cg) : COLD_SETTLE_GROW;
    const char *cl = getenv("CABIN_ASR_SETTLE_LAST");
    a->settle_last = (size_t)((cl ? atof(cl) : COLD_SETTLE_LAST_S) * 16000);
    snprintf(a->desc, sizeof a->desc, "%s%s%s (%s)%s", o->general ? "general en-us LM" : "domain LM",
             *jsgf ? " + grammar " : "", jsgf, lm, a->loop ? " + phone loop" : "");
    return a;
}

// The n-gram search's final passes (ps_end_utt: 30-75 ms after a command, most of the time
// from the end of speech to the transcript) when end_both left them for later.
static int finish_lm(asr *a) {
    if (!a->lm_pending) return 0;
    a->lm_pending = false;
    int rc = ps_end_utt(a->lm);
    for (ps_seg_t *sg = rc >= 0 ? ps_seg_iter(a->lm) : NULL; sg; sg = ps_seg_next(sg)) {}
    return rc;
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
    if (a->lm) {
        finish_lm(a);
        ps_free(a->lm);
    }
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
    double t0 = thread_cpu_sec();
    if (finish_lm(a) < 0) return err_set(err, "asr: could not end the last utterance");
    a->cpu = thread_cpu_sec() - t0;   // counted in this utterance: spent while it is spoken
    cmn_t *cmn = ps_get_feat(a->lm)->cmn_struct;
    a->cold = a->n_utts == 0 || getenv("CABIN_ASR_COLD");   // CABIN_ASR_COLD: experiments
    a->settled = false;
    a->settle_next = a->settle_at;
    if (a->cold && a->n_utts > 0 && a->veclen) {   // every utterance a first one
        cmn_live_set(cmn, a->prior);
        gram_lock(a);
        cmn_live_set(ps_get_feat(a->gram)->cmn_struct, a->prior);
        if (a->loop) cmn_live_set(ps_get_feat(a->loop)->cmn_struct, a->prior);
        gram_unlock(a);
    }
    if (ps_start_utt(a->lm) < 0) return err_set(err, "asr: could not start an utterance");
    if (a->veclen) {
        memcpy(a->sum0, cmn->sum, (size_t)a->veclen * sizeof *a->sum0);
        a->nframe0 = cmn->nframe;
    }
    gram_begin(a, false, NULL);
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

// Feeds x[0..n) to one decoder in CHUNK pieces (an utterance already started); pocketsphinx's
// status, stopping at the first failure.
static int feed_chunks(ps_decoder_t *ps, const int16_t *x, size_t n) {
    int rc = 0;
    for (size_t i = 0; rc >= 0 && i < n; i += CHUNK) rc = ps_process_raw(ps, x + i, n - i < CHUNK ? n - i : CHUNK, FALSE, FALSE);
    return rc;
}

// The first utterance's start-over (COLD_SETTLE_S): the cepstral mean of the frames seen so
// far (the n-gram decoder's running sum since the utterance began), weighted against the prior,
// becomes every decoder's mean; the searches drop what they decoded and go over the
// utterance's audio again. Returns pocketsphinx's status.
static int settle(asr *a) {
    double t0 = thread_cpu_sec();
    cmn_t *cmn = ps_get_feat(a->lm)->cmn_struct;
    int32 nf = cmn->nframe - a->nframe0;
    if (nf <= 0 || cmn->veclen != a->veclen) return 0;
    mfcc_t mean[MAXCEP];
    for (int i = 0; i < a->veclen; i++) {
        float seen = (float)(cmn->sum[i] - a->sum0[i]) / (float)nf;
        mean[i] = (mfcc_t)(a->settle_weight * seen + (1 - a->settle_weight) * (float)a->prior[i]);
    }
    a->settled = true;
    a->settle_next = a->settle_grow > 1 ? (size_t)((double)a->settle_next * a->settle_grow) : 0;
    if (a->settle_next > a->settle_last) a->settle_next = 0;
    gram_begin(a, false, mean);   // the worker drops its utterance, sets the mean, starts over
    int rc = ps_end_utt(a->lm);
    cmn_live_set(cmn, mean);
    if (rc >= 0) rc = ps_start_utt(a->lm);
    memcpy(a->sum0, cmn->sum, (size_t)a->veclen * sizeof *a->sum0);   // a later start-over's mean:
    a->nframe0 = cmn->nframe;                                          // the frames from here on
    if (rc >= 0) rc = feed_chunks(a->lm, a->utt, a->n);
    a->cpu += thread_cpu_sec() - t0;
    if (getenv("CABIN_ASR_DEBUG")) fprintf(stderr, "asr: started over at %.2f s with the mean of %d frames\n", a->n / 16000.0, nf);
    return rc;
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
    if (rc >= 0 && a->cold && a->settle_next && a->n >= a->settle_next) rc = settle(a);
    return rc < 0 ? err_set(err, "asr: decoding failed") : 0;
}

int asr_reading_so_far(asr *a, char *text, size_t cap) {
    if (!a->gram || !a->w.running) return -1;
    hyp_info h;
    pthread_mutex_lock(&a->w.lock);   // (asr_feed left the worker idle: every sample decoded)
    bool ok = a->w.in_utt && a->w.have_utt == a->w.want_utt && a->w.fed == a->n;
    if (ok) path_words(a->gram, &h);
    pthread_mutex_unlock(&a->w.lock);
    if (!ok) return -1;
    if (text && cap) snprintf(text, cap, "%s", h.text);
    fsg_model_t *fsg = ps_get_fsg(a->gram, GRAMMAR_SEARCH);
    return fsg && h.text[0] ? fsg_reading(fsg, h.text, a->gram_scale) : 0;
}

// Ends both searches (the grammar's on its thread, from now on) and reads their best paths. With
// early, the grammar's reading is returned without waiting for the n-gram search's final passes
// when its first pass's reading so far (the best path of its tree search) already decides it: the
// grammar parsed, the first pass bears out grammar_min_agree of its words, and the two do not
// differ only in hesitations (then the final reading decides, asr_end). lm then holds that first
// pass's reading; the final passes run at the next utterance's start (lm_pending). Returns -1
// with err, 0, or 1 when the grammar's reading was decided early.
static int end_both(asr *a, hyp_info *lm, hyp_info *gram, bool early, errbuf *err) {
    if (a->w.running) {   // the worker ends its searches while this thread ends the n-gram's
        pthread_mutex_lock(&a->w.lock);
        a->w.ending = true;
        pthread_cond_broadcast(&a->w.cond);
        pthread_mutex_unlock(&a->w.lock);
    }
    double cpu = 0;
    if (early && a->w.running) {
        path_words(a->lm, lm);
        int grc = gram_finish(a, gram, &cpu);
        a->cpu += cpu;
        if (grc < 0) return err_set(err, "asr: could not end the utterance");
        if (*gram->text && *lm->text && asr_word_agreement(gram->text, lm->text) >= a->grammar_min_agree &&
            (strcmp(gram->text, lm->text) == 0 || !asr_same_but_fillers(gram->text, lm->text))) {
            a->lm_pending = true;
            return 1;
        }
        int rc = ps_end_utt(a->lm);
        path_words(a->lm, lm);
        return rc < 0 ? err_set(err, "asr: could not end the utterance") : 0;
    }
    int rc = ps_end_utt(a->lm);
    path_words(a->lm, lm);
    int grc = gram_finish(a, gram, &cpu);
    a->cpu += cpu;
    if (rc < 0 || grc < 0) return err_set(err, "asr: could not end the utterance");
    return 0;
}

// A decoder's live cepstral mean, kept to be put back.
typedef struct cmn_snapshot {
    bool kept;
    mfcc_t mean[MAXCEP], sum[MAXCEP];
    int32 nframe;
} cmn_snapshot;

static void cmn_keep(ps_decoder_t *ps, cmn_snapshot *k) {
    cmn_t *cmn = ps ? ps_get_feat(ps)->cmn_struct : NULL;
    k->kept = cmn && cmn->veclen <= MAXCEP;
    if (!k->kept) return;
    memcpy(k->mean, cmn->cmn_mean, (size_t)cmn->veclen * sizeof *k->mean);
    memcpy(k->sum, cmn->sum, (size_t)cmn->veclen * sizeof *k->sum);
    k->nframe = cmn->nframe;
}

static void cmn_put_back(ps_decoder_t *ps, const cmn_snapshot *k) {
    if (!k->kept) return;
    cmn_t *cmn = ps_get_feat(ps)->cmn_struct;
    memcpy(cmn->cmn_mean, k->mean, (size_t)cmn->veclen * sizeof *k->mean);
    memcpy(cmn->sum, k->sum, (size_t)cmn->veclen * sizeof *k->sum);
    cmn->nframe = k->nframe;
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
        ps_set_search(a->gram, GRAMMAR_SEARCH);
        return -1;
    }
    cmn_snapshot keep;
    cmn_keep(a->gram, &keep);
    int rc = ps_start_utt(a->gram);
    if (rc >= 0) rc = feed_chunks(a->gram, a->utt, a->n);
    if (rc >= 0) rc = ps_end_utt(a->gram);
    if (rc >= 0) path_words(a->gram, h);
    cmn_put_back(a->gram, &keep);
    ps_set_search(a->gram, GRAMMAR_SEARCH);
    return rc < 0 ? -1 : 0;
}

int asr_end(asr *a, asr_result *r, errbuf *err) {
    double t0 = thread_cpu_sec();
    memset(r, 0, sizeof *r);
    r->search = "";
    hyp_info lm, gram;
    bool short_first = a->cold && !a->settled && a->n;
    int ended = end_both(a, &lm, &gram, a->early && a->policy == POLICY_AGREE && !short_first, err);
    if (ended < 0) return -1;
    // A first utterance too short to have started over (COLD_SETTLE_S) was decoded with the
    // prior's mean: it is decoded again, now that the mean has seen it.
    a->n_utts++;
    if (short_first) {
        ps_start_utt(a->lm);
        gram_begin(a, true, NULL);
        feed_chunks(a->lm, a->utt, a->n);   // a failure shows in end_both
        if (end_both(a, &lm, &gram, false, err) < 0) return -1;
        r->redecoded = true;
    }
    // A grammar pass with the n-gram LM as fallback: the grammar's words when it parsed the
    // utterance (a path reached its final state) and the free n-gram search heard at least
    // grammar_min_agree of them, in order; the LM's otherwise (free phrasing, speech the
    // grammar's beams lost, or a parse the LM does not bear out: the grammar always forces
    // some command, "stop um um the song" -> "so phone lucas okay"). WER by threshold, clean
    // development set / clean test set / noisy test set: 0: 0.171/0.392/0.304, 0.2:
    // 0.182/0.329/0.190, 0.4: 0.219/0.329/0.215, 0.7 (before): 0.234/0.278/0.228.
    double agree = *gram.text && *lm.text ? asr_word_agreement(gram.text, lm.text) : 0;
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
    r->settled = a->settled;
    r->refused = *r->text && !isnan(r->fit) && r->fit < a->refuse_below;
    a->cpu += thread_cpu_sec() - t0;
    r->audio_s = (double)a->n / 16000.0;
    r->cpu_s = a->cpu;
    return 0;
}

int asr_warm(asr *a, double seconds) {
    ps_decoder_t *dec[3] = { a->lm, a->gram, a->loop };
    cmn_snapshot keep[3];
    uint32_t noise = a->noise_state;
    size_t n = (size_t)(seconds * 16000);
    int16_t *zero = xcalloc(n ? n : 1, sizeof *zero);
    const int16_t *x = add_noise_floor(a, zero, n);
    int rc = 0;
    gram_lock(a);   // the worker is idle between utterances; its decoders are used here meanwhile
    for (int d = 0; d < 3; d++) {
        if (!dec[d]) continue;
        cmn_keep(dec[d], &keep[d]);
        if (ps_start_utt(dec[d]) < 0) { rc = -1; continue; }
        if (feed_chunks(dec[d], x, n) < 0) rc = -1;
        if (ps_end_utt(dec[d]) < 0) rc = -1;
        for (ps_seg_t *sg = ps_seg_iter(dec[d]); sg; sg = ps_seg_next(sg)) {}
        cmn_put_back(dec[d], &keep[d]);
    }
    gram_unlock(a);
    a->noise_state = noise;   // the same audio decodes the same, warmed or not
    free(zero);
    return rc;
}

int asr_decode(asr *a, const int16_t *x, size_t n, asr_result *r, errbuf *err) {
    if (asr_start(a, err)) return -1;
    for (size_t i = 0; i < n; i += CHUNK)
        if (asr_feed(a, x + i, n - i < CHUNK ? n - i : CHUNK, err)) return -1;
    return asr_end(a, r, err);
}
