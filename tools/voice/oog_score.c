// oog_score: an experiment tool (not used by cabin itself) for refusing free speech, see
// docs/VOICE.md "Free speech". For each WAV (16 kHz mono PCM16; the caller mixes in the noise
// floor, e.g. sox whitenoise at vol 0.005) it decodes with the command grammar (the
// recogniser's grammar beams, but the grammar as pocketsphinx reads it: audio/asr.c multiplies
// its weights by 3, which a built-in version should do too) and with a free phone loop (pocketsphinx's allphone search,
// context-independent phones, en-us-phone.lm.bin, -lw 2), and prints
//   FRAMES <TAB> (grammar path ascr - phone loop ascr) / FRAMES <TAB> grammar words <TAB> file
// A command the grammar holds scores near the phone loop (about -12 to -35 per frame on the
// development commands); speech it does not hold scores far below (-32 to -56 on free sentences).
// usage: build/oog_score FILE.wav...
#include <pocketsphinx.h>
#include <stdio.h>
#include <stdlib.h>

#include "audio/wav.h"

#define MODEL "/usr/share/pocketsphinx/model/en-us/en-us"

// Sum of the acoustic scores of the best path's segments (words or phones).
static long path_ascr(ps_decoder_t *ps) {
    long total = 0;
    for (ps_seg_t *s = ps_seg_iter(ps); s; s = ps_seg_next(s)) {
        int32 ascr, lscr, lback;
        ps_seg_prob(s, &ascr, &lscr, &lback);
        total += ascr;
    }
    return total;
}

static long decode(ps_decoder_t *ps, const wav_data *w, const char **hyp) {
    ps_start_utt(ps);
    ps_process_raw(ps, w->samples, w->n, FALSE, TRUE);
    ps_end_utt(ps);
    int32 score;
    *hyp = ps_get_hyp(ps, &score);
    return path_ascr(ps);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: oog_score FILE.wav...\n"); return 2; }
    cmd_ln_t *gc = cmd_ln_init(NULL, ps_args(), TRUE, "-hmm", MODEL, "-dict", "assets/asr/cabin.dict",
                               "-fdict", "assets/asr/cabin.filler", "-jsgf", "assets/asr/cabin.gram",
                               "-bestpath", "no", "-fillprob", "0.0001", "-beam", "1e-60", "-pbeam", "1e-60",
                               "-wbeam", "1e-40", "-logfn", "/dev/null", NULL);
    cmd_ln_t *pc = cmd_ln_init(NULL, ps_args(), TRUE, "-hmm", MODEL,
                               "-allphone", "/usr/share/pocketsphinx/model/en-us/en-us-phone.lm.bin",
                               "-allphone_ci", "yes", "-lw", "2.0", "-beam", "1e-20", "-pbeam", "1e-20",
                               "-logfn", "/dev/null", NULL);
    ps_decoder_t *gram = gc ? ps_init(gc) : NULL, *loop = pc ? ps_init(pc) : NULL;
    if (!gram || !loop) {
        fprintf(stderr, "oog_score: pocketsphinx could not load %s with assets/asr (run from the repository root)\n", MODEL);
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        wav_data w;
        errbuf err = {0};
        if (wav_read(argv[i], &w, &err) < 0) { fprintf(stderr, "oog_score: %s\n", err.msg); rc = 1; continue; }
        if (w.rate != 16000) { fprintf(stderr, "oog_score: %s: %d Hz, not 16000\n", argv[i], w.rate); wav_free(&w); rc = 1; continue; }
        const char *gh, *lh;
        long ga = decode(gram, &w, &gh), la = decode(loop, &w, &lh);
        int frames = ps_get_n_frames(gram);
        printf("%d\t%.1f\t%s\t%s\n", frames, frames ? (double)(ga - la) / frames : 0.0, gh ? gh : "", argv[i]);
        wav_free(&w);
    }
    ps_free(gram);
    ps_free(loop);
    cmd_ln_free_r(gc);
    cmd_ln_free_r(pc);
    return rc;
}
