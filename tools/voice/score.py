#!/usr/bin/python3
"""Scores a `cabin voice --fresh-turns` transcript against make_test_audio.py's ref.tsv.

WER is over the whole word sequence (all turns joined), so a turn the VAD split or merged costs
only the words it got wrong. Actions: turn by turn, when the turn counts agree. Transcripts are
normalised as the references are (build_lm.normalise: "ok" and "okay" are one word).
usage: score.py REF.tsv TRANSCRIPT [--detail]
  -> prints `wer W turns N/M actions K/M exact E/M wer_nohes W2 act_fail_asr A act_fail_model B`
wer_nohes: the same WER with hesitations (uh, um, er, hmm) left out of both sides, as NIST
scoring treats them; printed beside the strict figure, which is the one the tests assert.
exact: turns whose transcript is word for word the reference. act_fail_asr / act_fail_model:
wrong actions in turns whose transcript was wrong / right (a right transcript and a wrong
action is the model's error). --detail prints every turn.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_lm import normalise  # noqa: E402

HESITATIONS = {"uh", "um", "er", "hmm"}


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(b) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(b)]


def canon(act):
    parts = act.split()
    return " ".join(parts[:1] + sorted(parts[1:]))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    detail = "--detail" in sys.argv[1:]
    refs = [line.rstrip("\n").split("\t") for line in open(args[0]) if line.strip()]
    hyps, acts = [], []
    for line in open(args[1], errors="replace"):
        if line.startswith("you: "):
            hyps.append(normalise(line[5:]))   # one spelling per spoken form, as the references
            acts.append("")
        elif line.startswith("action: ") and acts:
            acts[-1] = line[8:].strip()
    ref_words = " ".join(r[0] for r in refs).split()
    hyp_words = " ".join(hyps).split()
    wer = edit_distance(ref_words, hyp_words) / max(1, len(ref_words))
    ref_nh = [w for w in ref_words if w not in HESITATIONS]
    hyp_nh = [w for w in hyp_words if w not in HESITATIONS]
    wer_nh = edit_distance(ref_nh, hyp_nh) / max(1, len(ref_nh))
    aligned = len(acts) == len(refs)
    ok = exact = fail_asr = fail_model = 0
    if aligned:
        for (ref, ref_act), hyp, act in zip(refs, hyps, acts):
            words_ok = ref.split() == hyp.split()
            act_ok = canon(ref_act) == canon(act)
            ok += act_ok
            exact += words_ok
            if not act_ok:
                if words_ok:
                    fail_model += 1
                else:
                    fail_asr += 1
            if detail:
                print("%s %s | said: %s | heard: %s | want: %s | got: %s" % (
                    "=" if words_ok else "x", "ok " if act_ok else "BAD", ref, hyp, ref_act, act or "-"))
    elif detail:
        print("turn counts differ (%d heard, %d said): no per-turn detail" % (len(hyps), len(refs)))
    print("wer %.3f turns %d/%d actions %d/%d exact %d/%d wer_nohes %.3f act_fail_asr %d act_fail_model %d" % (
        wer, len(hyps), len(refs), ok, len(refs), exact, len(refs), wer_nh, fail_asr, fail_model))


if __name__ == "__main__":
    main()
