#!/usr/bin/python3
"""Builds cabin's speech-recognition language model and dictionary for the assistant's domain.

Sentences come from the embedded model's corpus generator (tools/corpus/gen_corpus.py, both its
training and held-out phrasing lists, with a seed of our own so the evaluation dialogues in
assets/eval/heldout.jsonl are not copied) or from build/corpus/train.jsonl when it exists.
Text is normalised the way a recogniser hears it (lower case, numbers as words, no
punctuation). Out: an interpolated Kneser-Ney trigram LM in ARPA format (own code, absolute
discount D per order) and a pronunciation dictionary restricted to the words used, taken from
pocketsphinx-en-us's cmudict-en-us.dict; sentences with words that dictionary lacks are dropped
(and counted), unless the word is short enough to spell (letters) or splits into two words the
dictionary has ("windscreen" = wind + screen).

usage: build_lm.py [--out-dir assets/asr] [--dialogues N] [--seed S] [--order 3] [--prune 2]
"""
import argparse
import collections
import json
import math
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CMUDICT = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def num_words(n):
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + num_words(rest))
    return " ".join(ONES[int(d)] for d in str(n))


# Spellings of one spoken form: a recogniser cannot tell them apart, so it writes (and the
# references are written in) one of them.
SPELLINGS = {"ok": "okay"}
PHRASE_SPELLINGS = [("a c", "ac")]


def normalise(text, canonical=True):
    """What a recogniser would output for text: words only, numbers spelled, one spelling per
    spoken form ("ok" and "okay" are both "okay"; canonical=False keeps the text's own, for a
    synthesizer that says "a c" and "ac" differently)."""
    t = text.lower()
    t = re.sub(r"(\d+)\.(\d)", lambda m: m.group(1) + " point " + m.group(2), t)
    t = re.sub(r"(\d+)%", r"\1 percent", t)
    t = re.sub(r"\d+", lambda m: " " + num_words(int(m.group(0))) + " ", t)
    t = re.sub(r"[^a-z' ]+", " ", t)
    words = [w.strip("'") for w in t.split()]
    t = " ".join(SPELLINGS.get(w, w) if canonical else w for w in words if w)
    for a, b in PHRASE_SPELLINGS if canonical else []:
        t = re.sub(r"\b%s\b" % a, b, t)
    return t


def load_dict(path):
    pron = collections.defaultdict(list)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            word = re.sub(r"\(\d+\)$", "", parts[0])
            pron[word].append(" ".join(parts[1:]))
    return pron


# espeak-ng's IPA (en-us) -> the acoustic model's phones; longest symbols first.
IPA_PHONES = [("aɪ", "AY"), ("aʊ", "AW"), ("eɪ", "EY"), ("oʊ", "OW"), ("ɔɪ", "OY"), ("tʃ", "CH"),
              ("dʒ", "JH"), ("ɑː", "AA"), ("ɔː", "AO"), ("ɜː", "ER"), ("iː", "IY"), ("uː", "UW"),
              ("oː", "OW"), ("ɑ", "AA"), ("æ", "AE"), ("ʌ", "AH"), ("ə", "AH"), ("ɐ", "AH"),
              ("ɔ", "AO"), ("ɛ", "EH"), ("e", "EH"), ("ɚ", "ER"), ("ɝ", "ER"), ("ɪ", "IH"),
              ("ᵻ", "IH"), ("i", "IY"), ("o", "OW"), ("ʊ", "UH"), ("u", "UW"), ("b", "B"),
              ("d", "D"), ("ð", "DH"), ("f", "F"), ("ɡ", "G"), ("g", "G"), ("h", "HH"), ("k", "K"),
              ("l", "L"), ("m", "M"), ("n", "N"), ("ŋ", "NG"), ("p", "P"), ("ɹ", "R"), ("r", "R"),
              ("s", "S"), ("ʃ", "SH"), ("t", "T"), ("ɾ", "T"), ("θ", "TH"), ("v", "V"), ("w", "W"),
              ("j", "Y"), ("z", "Z"), ("ʒ", "ZH"), ("ʔ", "T")]


def espeak_phones(word):
    """Letter-to-sound by espeak-ng (its en-us IPA mapped to the acoustic model's phones)."""
    try:
        ipa = subprocess.run(["espeak-ng", "-q", "--ipa", "-v", "en-us", word], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return ipa_to_phones(ipa)


def ipa_to_phones(ipa):
    ipa = re.sub("[ˈˌ_‿ \n-]", "", ipa)
    out, i = [], 0
    while i < len(ipa):
        for sym, ph in IPA_PHONES:
            if ipa.startswith(sym, i):
                out.append(ph)
                i += len(sym)
                break
        else:
            i += 1   # length marks and symbols without a phone of their own
    return " ".join(out) if out else None


def pronounce_missing(word, pron):
    """Pronunciations for a word cmudict lacks: letters for short ones, two known parts, or
    espeak-ng's letter-to-sound."""
    if len(word) <= 3 and all(ch in pron for ch in word):
        return [" ".join(pron[ch][0] for ch in word)]
    for i in range(len(word) - 2, 1, -1):
        a, b = word[:i], word[i:]
        if a in pron and b in pron and len(b) >= 2:
            return [pron[a][0] + " " + pron[b][0]]
    p = espeak_phones(word)
    return [p] if p else None


# Abbreviations a synthesizer (and a person) reads as a word: an extra pronunciation each.
ABBREVIATIONS = {"dr": "doctor"}

# The noise dictionary (cabin.filler): the acoustic model's silence and noise words, and
# hesitations as fillers. A filler may sit between any two words of either search (the grammar
# gets a self-loop of each at every state), so "stop um um the song" needs no frame of its own;
# audio/asr.c writes ++UM++ back as "um".
NOISE_WORDS = [("<s>", "SIL"), ("</s>", "SIL"), ("<sil>", "SIL"), ("[NOISE]", "+NSN+"), ("[SPEECH]", "+SPN+")]
HESITATION_FILLERS = [("++UM++", "AH M"), ("++UH++", "AH"), ("++ER++", "ER"), ("++HMM++", "HH M")]


def espeak_batch(words, voice="en-us"):
    """espeak-ng's letter-to-sound for many words at once ({word: phones}); words whose IPA
    does not map are left out."""
    out = {}
    try:
        ipa = subprocess.run(["espeak-ng", "-q", "--ipa", "-v", voice], input="".join(w + ".\n" for w in words),
                             capture_output=True, text=True, timeout=120).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return out
    ipa = [line for line in ipa if line.strip()]
    if len(ipa) != len(words):   # lines out of step: one word at a time
        return {w: p for w in words for p in [espeak_phones(w)] if p}
    for w, line in zip(words, ipa):
        p = ipa_to_phones(line)
        if p:
            out[w] = p
    return out


def generator():
    """tools/corpus/gen_corpus.py with its training-only augmentation (pseudo-word names,
    paraphrased frames: material for the model, not what drivers say) switched off."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "corpus"))
    import gen_corpus as g
    for k in getattr(g, "AUGMENT", {}):
        g.AUGMENT[k] = 0
    return g


def corpus_sentences(n_dialogues, seed, corpus=None):
    out = []
    g = generator()
    if corpus:
        with open(corpus) as f:
            for i, line in enumerate(f):
                if i >= n_dialogues:
                    break
                out += [t["user"] for t in json.loads(line)["turns"]]
        src = corpus
    else:
        rng = random.Random(seed)
        for i in range(n_dialogues):
            split = g.HELDOUT if i % 4 == 3 else g.TRAIN
            out += [t["user"] for t in g.gen_dialogue(rng, split)["turns"]]
        src = "tools/corpus/gen_corpus.py (seed %d)" % seed
    # Held-out phrasings are always added from the generator: they are the product's phrasings
    # too, and a recogniser that cannot hear them is no use.
    rng = random.Random(seed + 7)
    for _ in range(n_dialogues // 4):
        out += [t["user"] for t in g.gen_dialogue(rng, g.HELDOUT)["turns"]]
    # Canonical phrasings (no fillers, stutters or polite frames) get extra weight: the
    # generator's intents sampled directly, without its speech noise.
    rng = random.Random(seed + 13)
    for i in range(n_dialogues):
        split = g.HELDOUT if i % 4 == 3 else g.TRAIN
        out.append(g.gen_fresh(rng, split, {})[0])
    return out, src


def kn_trigram(sents, order, prune=1, D=0.75):
    """Interpolated Kneser-Ney. Returns {n: {ngram_tuple: (log10p, log10bow or None)}}."""
    counts = [collections.Counter() for _ in range(order + 1)]
    for s in sents:
        w = ["<s>"] + s.split() + ["</s>"]
        for n in range(1, order + 1):
            for i in range(len(w) - n + 1):
                counts[n][tuple(w[i:i + n])] += 1
    vocab = sorted({g[0] for g in counts[1]})
    # Lower orders use continuation counts: in how many distinct contexts a suffix appears.
    cont = [collections.Counter() for _ in range(order + 1)]
    for n in range(2, order + 1):
        for g in counts[n]:
            cont[n - 1][g[1:]] += 1
    # the highest order uses raw counts; the others continuation counts (ngrams starting
    # with <s> keep raw counts: nothing precedes <s>)
    def c_of(n, g):
        if n == order or g[0] == "<s>":
            return counts[n][g]
        return cont[n][g]
    eff = [dict() for _ in range(order + 1)]
    for n in range(1, order + 1):
        for g in counts[n]:
            c = c_of(n, g)
            if c > 0:
                eff[n][g] = c
    ctx_tot = [collections.Counter() for _ in range(order + 1)]
    ctx_types = [collections.Counter() for _ in range(order + 1)]
    for n in range(1, order + 1):
        for g, c in eff[n].items():
            ctx_tot[n][g[:-1]] += c
            ctx_types[n][g[:-1]] += 1
    prob = [dict() for _ in range(order + 1)]
    V = len(vocab)
    tot1 = ctx_tot[1][()]
    for g, c in eff[1].items():
        prob[1][g] = max(c - D, 0) / tot1 + D * ctx_types[1][()] / tot1 / V
    prob[1][("<s>",)] = 0.0

    def p_interp(n, g):   # interpolated prob of g (tuple of length n)
        if n == 1:
            return prob[1].get(g, D * ctx_types[1][()] / tot1 / V)
        if g in prob[n]:
            return prob[n][g]
        h = g[:-1]
        if h in ctx_tot[n]:
            return D * ctx_types[n][h] / ctx_tot[n][h] * p_interp(n - 1, g[1:])
        return p_interp(n - 1, g[1:])

    for n in range(2, order + 1):
        for g, c in eff[n].items():
            if n == order and counts[n][g] < prune:   # singletons of the top order: left to back-off
                continue
            h = g[:-1]
            prob[n][g] = max(c - D, 0) / ctx_tot[n][h] + D * ctx_types[n][h] / ctx_tot[n][h] * p_interp(n - 1, g[1:])
    # Back-off weights: what is left for unseen words after h, over what the lower order gives them.
    seen_after = collections.defaultdict(list)
    for n in range(2, order + 1):
        for g in prob[n]:
            seen_after[g[:-1]].append(g)
    arpa = {n: {} for n in range(1, order + 1)}
    for n in range(1, order + 1):
        for g, p in prob[n].items():
            lp = -99.0 if p <= 0 else math.log10(p)
            bow = None
            if n < order and g in seen_after:
                num = 1.0 - sum(prob[n + 1][x] for x in seen_after[g])
                den = 1.0 - sum(p_interp(n, x[1:]) for x in seen_after[g])
                bow = math.log10(max(num, 1e-12) / max(den, 1e-12))
            if g == ("</s>",) or n < order:
                arpa[n][g] = (lp, bow if bow is not None else (0.0 if n < order and g != ("</s>",) else None))
            else:
                arpa[n][g] = (lp, None)
    return arpa


def write_arpa(path, arpa, order):
    with open(path, "w") as f:
        f.write("\\data\\\n")
        for n in range(1, order + 1):
            f.write("ngram %d=%d\n" % (n, len(arpa[n])))
        for n in range(1, order + 1):
            f.write("\n\\%d-grams:\n" % n)
            for g in sorted(arpa[n]):
                lp, bow = arpa[n][g]
                line = "%.4f\t%s" % (lp, " ".join(g))
                if bow is not None and n < order:
                    line += "\t%.4f" % bow
                f.write(line + "\n")
        f.write("\n\\end\\\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "assets", "asr"))
    ap.add_argument("--dialogues", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=4711)
    ap.add_argument("--order", type=int, default=3)
    ap.add_argument("--prune", type=int, default=2, help="keep top-order n-grams seen at least this often")
    ap.add_argument("--corpus", help="user turns from this JSONL instead of the generator")
    ap.add_argument("--espeak-alts", type=int, default=0,
                    help="1: add espeak-ng's pronunciation of each word where cmudict's differ "
                    "(off since the recogniser's noise floor: they matched the test audio's "
                    "synthesizer, not people, and no longer change its WER; docs/VOICE.md)")
    a = ap.parse_args()
    raw, src = corpus_sentences(a.dialogues, a.seed, a.corpus)
    pron = load_dict(CMUDICT)
    added = []
    import build_grammar
    gram_words = build_grammar.vocabulary(build_grammar.build()[0])
    for w in sorted({w for t in raw for w in normalise(t).split()} | set(gram_words)):
        if w not in pron:
            p = pronounce_missing(w, pron)
            if p:
                pron[w] = p
                added.append(w)
    sents, dropped, missing = [], 0, collections.Counter()
    for t in raw:
        s = normalise(t)
        if not s:
            continue
        miss = [w for w in s.split() if w not in pron]
        if miss:
            dropped += 1
            missing.update(miss)
            continue
        sents.append(s)
    arpa = kn_trigram(sents, a.order, a.prune)
    os.makedirs(a.out_dir, exist_ok=True)
    write_arpa(os.path.join(a.out_dir, "cabin.lm"), arpa, a.order)
    words = sorted({w for s in sents for w in s.split()} | set(gram_words))
    for w, full in ABBREVIATIONS.items():
        if w in pron and full in pron:
            pron[w] = pron[w] + [p for p in pron[full] if p not in pron[w]]
    unpronounced = [w for w in words if w not in pron]
    if unpronounced:
        sys.exit("build_lm: no pronunciation for %s" % " ".join(unpronounced))
    n_alts = 0
    if a.espeak_alts:
        for w, p in espeak_batch(words).items():
            if p not in pron[w]:
                pron[w] = pron[w] + [p]
                n_alts += 1
    with open(os.path.join(a.out_dir, "cabin.dict"), "w") as f:
        for w in words:
            for i, p in enumerate(pron[w]):
                f.write("%s %s\n" % (w if i == 0 else "%s(%d)" % (w, i + 1), p))
    with open(os.path.join(a.out_dir, "cabin.filler"), "w") as f:
        for w, p in NOISE_WORDS + HESITATION_FILLERS:
            f.write("%s %s\n" % (w, p))
    print("build_lm: pronounced from letters or parts: %s" % " ".join(added))
    print("build_lm: %d espeak-ng pronunciations added beside cmudict's" % n_alts)
    print("build_lm: %d sentences from %s (%d dropped for %d words not in cmudict: %s); %d words; "
          "%s n-grams -> %s/cabin.lm, cabin.dict" % (
              len(sents), src, dropped, len(missing), " ".join(w for w, _ in missing.most_common(8)),
              len(words), "/".join(str(len(arpa[n])) for n in range(1, a.order + 1)), a.out_dir))


if __name__ == "__main__":
    main()
