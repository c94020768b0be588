#!/usr/bin/python3
"""Where the embedded model's held-out errors are: turns with words the training set never had.

Reads the training corpus (user texts), the held-out set and the errors file that
`cabin eval-assistant --errors FILE` writes (file line, user text, wanted, got; tab-separated),
and prints the error rate of held-out turns with at least one word that no training user text
contains against the others, the commonest such words, and the error rate per intent.

usage: heldout_words.py --train build/corpus/train.jsonl --errors ERRORS
                        [--heldout assets/eval/heldout.jsonl] [--top 30]
"""
import argparse
import collections
import json
import re


def words(text):
    return re.findall(r"[a-z']+", text.lower())


def intent_of(reply):
    act = reply.split("<act>", 1)[1].split("</act>", 1)[0] if "<act>" in reply else "?"
    return (act.split() or ["?"])[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", default="build/corpus/train.jsonl")
    ap.add_argument("--heldout", default="assets/eval/heldout.jsonl")
    ap.add_argument("--errors", required=True)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()

    seen = set()
    with open(a.train) as f:
        for line in f:
            for t in json.loads(line)["turns"]:
                seen.update(words(t["user"]))
    wrong = collections.Counter()     # (file line, user text) -> wrong turns with that text
    with open(a.errors) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 4:
                wrong[(int(cols[0]), cols[1])] += 1

    n = collections.Counter()         # (has an unseen word, wrong) -> turns
    per_intent = collections.defaultdict(lambda: [0, 0])
    unseen_words = collections.Counter()
    with open(a.heldout) as f:
        for line_no, line in enumerate(f, 1):
            for t in json.loads(line)["turns"]:
                unseen = [w for w in words(t["user"]) if w not in seen]
                unseen_words.update(unseen)
                key = (line_no, t["user"])
                bad = wrong[key] > 0
                if bad:
                    wrong[key] -= 1
                n[(bool(unseen), bad)] += 1
                per_intent[intent_of(t["reply"])][0] += 1
                per_intent[intent_of(t["reply"])][1] += bad

    total = sum(n.values())
    for has, label in ((True, "with a word no training user text has"), (False, "all words seen in training")):
        turns = n[(has, False)] + n[(has, True)]
        print("%-40s %5d turns (%4.1f%%), %4d wrong: error rate %.3f"
              % (label, turns, 100.0 * turns / max(1, total), n[(has, True)], n[(has, True)] / max(1, turns)))
    print("unseen words, commonest first: " +
          ", ".join("%s %d" % (w, c) for w, c in unseen_words.most_common(a.top)))
    print("per intent (reference), wrong / turns:")
    for intent, (turns, bad) in sorted(per_intent.items(), key=lambda kv: (-kv[1][1], kv[0])):
        print("  %-16s %4d / %4d  %.2f" % (intent, bad, turns, bad / turns))


if __name__ == "__main__":
    main()
