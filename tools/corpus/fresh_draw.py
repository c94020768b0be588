#!/usr/bin/env python3
"""A fresh draw of the held-out split: the generator's held-out dialogues with another seed.

The committed held-out set (assets/eval/heldout.jsonl) has been looked at for many sessions;
a fresh draw takes the same reserved frames and held-out values in new dialogues, fillers,
numbers and noise, so a change can be judged on dialogues nobody has read. Dialogues holding a
user text that the training corpus also has (case and punctuation ignored, gen_corpus.norm_text)
are dropped, as --decontaminate does for the committed set.

  /usr/bin/python3 tools/corpus/fresh_draw.py --train build/corpus/train.jsonl --out F
  ./build/cabin eval-assistant -m M -f F

Deterministic: the same seed and training corpus give the same file (docs/ASSISTANT.md quotes
figures on seed 777 against the shipped corpus).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", default="build/corpus/train.jsonl",
                    help="training corpus whose user texts are kept out of the draw")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=777, help="generator seed (the committed set's is 20240601)")
    ap.add_argument("-n", type=int, default=1500, help="dialogues drawn before dropping")
    a = ap.parse_args()
    train_texts = set()
    with open(a.train) as f:
        for line in f:
            train_texts.update(gen_corpus.norm_text(t["user"]) for t in json.loads(line)["turns"])
    drawn = gen_corpus.heldout_dialogues(a.seed, a.n)
    kept = [d for d in drawn if not any(gen_corpus.norm_text(t["user"]) in train_texts for t in d["turns"])]
    gen_corpus.write_jsonl(a.out, kept)
    print("fresh_draw: seed %d: %d dialogues (%d turns) -> %s; %d dropped for a training user text"
          % (a.seed, len(kept), sum(len(d["turns"]) for d in kept), a.out, len(drawn) - len(kept)))


if __name__ == "__main__":
    main()
