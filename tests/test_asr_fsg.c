// fsg_compact (audio/asr_fsg.c): the merged grammar network holds the same word sequences with
// the same best-path weights. Checked on a small grammar whose sequences are all enumerated and
// on the shipped assets/asr/cabin.gram by random walks both ways (fixed seed), plus the state
// counts.
#include "audio/asr_fsg.h"
#include "tests/test.h"

#include <sphinxbase/jsgf.h>
#include <sphinxbase/logmath.h>

#include <sphinxbase/err.h>

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define NEG INT64_MIN

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static fsg_model_t *build(jsgf_t *j, logmath_t *lm) {
    jsgf_rule_t *rule = jsgf_get_public_rule(j);
    fsg_model_t *f = rule ? jsgf_build_fsg(j, rule, lm, 1.0f) : NULL;
    jsgf_grammar_free(j);
    return f;
}

// Relaxes null arcs until nothing improves.
static void close_nulls(fsg_model_t *f, int64_t *sc) {
    for (bool changed = true; changed;) {
        changed = false;
        for (int s = 0; s < fsg_model_n_state(f); s++) {
            if (sc[s] == NEG) continue;
            for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it)) {
                fsg_link_t *l = fsg_arciter_get(it);
                if (l->wid >= 0 || sc[s] + l->logs2prob <= sc[l->to_state]) continue;
                sc[l->to_state] = sc[s] + l->logs2prob;
                changed = true;
            }
        }
    }
}

// The best path's weight for the words (by string: the two networks number them alike, but
// that is not what is being checked), NEG if the network does not hold them.
static int64_t best_score(fsg_model_t *f, const char *const *words, int n) {
    int ns = fsg_model_n_state(f);
    int64_t *sc = malloc((size_t)ns * sizeof *sc), *nx = malloc((size_t)ns * sizeof *nx);
    for (int s = 0; s < ns; s++) sc[s] = NEG;
    sc[fsg_model_start_state(f)] = 0;
    close_nulls(f, sc);
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < ns; s++) nx[s] = NEG;
        for (int s = 0; s < ns; s++) {
            if (sc[s] == NEG) continue;
            for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it)) {
                fsg_link_t *l = fsg_arciter_get(it);
                if (l->wid < 0 || strcmp(fsg_model_word_str(f, l->wid), words[i]) != 0) continue;
                if (sc[s] + l->logs2prob > nx[l->to_state]) nx[l->to_state] = sc[s] + l->logs2prob;
            }
        }
        int64_t *t = sc; sc = nx; nx = t;
        close_nulls(f, sc);
    }
    int64_t r = sc[fsg_model_final_state(f)];
    free(sc);
    free(nx);
    return r;
}

// A random path from the start to the final state (arcs chosen uniformly, nulls included); its
// words into w. Returns the word count, -1 on a dead end or a path over max words.
static int random_path(fsg_model_t *f, const char **w, int max) {
    int s = fsg_model_start_state(f), n = 0;
    for (int steps = 0; steps < 4 * max; steps++) {
        fsg_link_t *arcs[512];
        int k = 0;
        for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it))
            if (k < 512) arcs[k++] = fsg_arciter_get(it);
        if (s == fsg_model_final_state(f) && (k == 0 || next_rand() % 4 == 0)) return n;
        if (k == 0) return -1;
        fsg_link_t *l = arcs[next_rand() % (uint32_t)k];
        if (l->wid >= 0) {
            if (n == max) return -1;
            w[n++] = fsg_model_word_str(f, l->wid);
        }
        s = l->to_state;
    }
    return -1;
}

// n random paths of a, each held by b with the same best weight as by a.
static void same_paths(fsg_model_t *a, fsg_model_t *b, int n, const char *what) {
    int checked = 0, bad = 0;
    for (int i = 0; i < n * 4 && checked < n; i++) {
        const char *w[64];
        int k = random_path(a, w, 64);
        if (k < 0) continue;
        checked++;
        int64_t sa = best_score(a, w, k), sb = best_score(b, w, k);
        if (sa != sb || sa == NEG) {
            if (bad++ < 3) fprintf(stderr, "%s: path of %d words (%s %s ...): %lld against %lld\n", what, k,
                                   k > 0 ? w[0] : "", k > 1 ? w[1] : "", (long long)sa, (long long)sb);
        }
    }
    CHECK(checked >= n / 2, "%s: only %d random paths", what, checked);
    CHECK(bad == 0, "%s: %d of %d paths differ", what, bad, checked);
}

int main(void) {
    logmath_t *lm = logmath_init(1.0001, 0, 0);
    err_set_logfp(NULL);

    // A small grammar: weighted alternatives, optional parts, a rule used twice, a stutter.
    const char *small =
        "#JSGF V1.0;\ngrammar t;\n"
        "public <c> = [ /0.7/ hey | /0.3/ okay ] <body> [ please ] | stop ( /0.95/ <NULL> | /0.05/ now );\n"
        "<n> = one | two | ( /0.9/ three | /0.1/ three three );\n"
        "<body> = /2/ set the fan to <n> | /1/ set the fan speed to <n> | turn the fan <n> | turn it up;\n";
    fsg_model_t *f = build(jsgf_parse_string(small, NULL), lm);
    CHECK(f != NULL, "small grammar builds");
    if (f) {
        fsg_model_t *c = fsg_compact(f);
        CHECK(c != NULL, "small grammar compacts");
        if (c) {
            CHECK(fsg_model_n_state(c) < fsg_model_n_state(f), "fewer states: %d -> %d", fsg_model_n_state(f),
                  fsg_model_n_state(c));
            same_paths(f, c, 300, "small: original's paths in the compacted");
            same_paths(c, f, 300, "small: compacted's paths in the original");
            const char *no[] = { "set", "the", "fan", "up" };
            CHECK(best_score(c, no, 4) == NEG, "a sequence outside the grammar stays outside");
            // where readings lead (voice's end of turn at a pause): whole, more may follow, off
            static const struct { const char *words; int want; } readings[] = {
                { "hey set the fan to two", FSG_WHOLE | FSG_MORE },   // [ please ] as likely as not
                { "turn it up please", FSG_WHOLE | FSG_ENDS },
                { "okay set the fan to three three please", FSG_WHOLE | FSG_ENDS },
                { "set the fan to", FSG_MORE },
                { "set the fan to three", FSG_WHOLE | FSG_MORE },     // "three" again, or please
                { "", FSG_MORE },
                { "set the fan up", 0 },
                { "turn um it up", FSG_WHOLE | FSG_MORE },            // a word the network lacks: passed over
                { "stop", FSG_WHOLE | FSG_MORE | FSG_ENDS },          // "now" follows 1 time in 20
                { "stop now", FSG_WHOLE | FSG_ENDS },
            };
            for (size_t k = 0; k < sizeof readings / sizeof readings[0]; k++) {
                CHECK(fsg_reading(f, readings[k].words, 1.0) == readings[k].want, "'%s' in the original: %d, not %d",
                      readings[k].words, fsg_reading(f, readings[k].words, 1.0), readings[k].want);
                CHECK(fsg_reading(c, readings[k].words, 1.0) == readings[k].want, "'%s' in the compacted: %d, not %d",
                      readings[k].words, fsg_reading(c, readings[k].words, 1.0), readings[k].want);
            }
            fsg_model_free(c);
        }
        fsg_model_free(f);
    }

    // A grammar with a loop is left alone.
    f = build(jsgf_parse_string("#JSGF V1.0;\ngrammar l;\npublic <c> = go <w>+;\n<w> = left | right;\n", NULL), lm);
    if (f) {
        fsg_model_t *c = fsg_compact(f);
        CHECK(c == NULL, "a cyclic network is not compacted");
        if (c) fsg_model_free(c);
        fsg_model_free(f);
    }

    // The shipped grammar.
    jsgf_t *j = jsgf_parse_file("assets/asr/cabin.gram", NULL);
    if (!j) {
        SKIP("assets/asr/cabin.gram not readable from here");
    } else {
        f = build(j, lm);
        CHECK(f != NULL, "cabin.gram builds");
        fsg_model_t *c = f ? fsg_compact(f) : NULL;
        CHECK(c != NULL, "cabin.gram compacts");
        if (c) {
            printf("cabin.gram: %d states -> %d\n", fsg_model_n_state(f), fsg_model_n_state(c));
            CHECK(fsg_model_n_state(c) * 4 < fsg_model_n_state(f), "at least 4x fewer states: %d -> %d",
                  fsg_model_n_state(f), fsg_model_n_state(c));
            same_paths(f, c, 60, "cabin.gram: original's paths in the compacted");
            same_paths(c, f, 60, "cabin.gram: compacted's paths in the original");
            // ending a turn at a pause: whole commands end, a command's start or one that a longer
            // command continues as often ("less" ... "volume") does not
            CHECK(fsg_reading(c, "okay drive home", 1.0) & FSG_ENDS, "'okay drive home' ends");
            CHECK(fsg_reading(c, "it is way too cold in here", 1.0) & FSG_ENDS, "'it is way too cold in here' ends");
            CHECK(!(fsg_reading(c, "set the temperature to", 1.0) & (FSG_WHOLE | FSG_ENDS)), "'set the temperature to' is no command");
            CHECK((fsg_reading(c, "alright less", 1.0) & (FSG_WHOLE | FSG_ENDS)) == FSG_WHOLE, "'alright less' may go on");
            fsg_model_free(c);
        }
        if (f) fsg_model_free(f);
    }
    logmath_free(lm);
    return test_finish();
}
