#!/usr/bin/python3
"""Scores a `cabin voice --fresh-turns` transcript against make_test_audio.py's ref.tsv.

WER is over the whole word sequence (all turns joined), so a turn the VAD split or merged costs
only the words it got wrong. Actions: turn by turn, when the turn counts agree.
usage: score.py REF.tsv TRANSCRIPT  -> prints `wer W turns N/M actions K/M`
"""
import re
import sys


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


refs = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
hyps, acts = [], []
for line in open(sys.argv[2], errors="replace"):
    if line.startswith("you: "):
        hyps.append(line[5:].strip())
        acts.append("")
    elif line.startswith("action: ") and acts:
        acts[-1] = line[8:].strip()
ref_words = " ".join(r[0] for r in refs).split()
hyp_words = " ".join(hyps).split()
wer = edit_distance(ref_words, hyp_words) / max(1, len(ref_words))
ok = sum(1 for r, a in zip(refs, acts) if canon(r[1]) == canon(a)) if len(acts) == len(refs) else 0
print("wer %.3f turns %d/%d actions %d/%d" % (wer, len(hyps), len(refs), ok, len(refs)))
