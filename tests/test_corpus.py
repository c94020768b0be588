#!/usr/bin/python3
"""Checks of the corpus generator (tools/corpus/gen_corpus.py) behind the embedded model:
determinism, the held-out split (the committed held-out set is what the generator makes, with any
training options; held-out values and texts never in training) and the training-only
augmentations (never touching a number or a slot value's word). Prints one line per failed check
and the "N passed, N failed" line tests/run.sh reads.

usage: test_corpus.py TMPDIR
"""
import glob
import json
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "corpus"))
import augment as aug  # noqa: E402
import gen_corpus as gc  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))
from pytally import Tally  # noqa: E402
import wordnet  # noqa: E402

GEN = os.path.join(ROOT, "tools", "corpus", "gen_corpus.py")
FRESH = os.path.join(ROOT, "tools", "corpus", "fresh_draw.py")
HAVE_WORDNET = wordnet.available()
RECIPE = ["--frames", "0.5", "--spoken-house", "0.3", "--decontaminate", "1", "--word-drop", "0.25",
          "--unknown-words", "0.3", "--pseudo", "0.2", "--fillers", "0.2", "--extra-frames", "0.5"] + \
    (["--synonyms", "0.3"] if HAVE_WORDNET else [])   # every training-only option
REPLY = re.compile(r"^<act>([a-z]+\.[a-z]+(?: [a-z_]+=[^ <]+)*|none)</act> \S.*$")
tally = Tally()
check = tally.check


def generate(tmp, name, args):
    train, held = os.path.join(tmp, name + "-train.jsonl"), os.path.join(tmp, name + "-held.jsonl")
    subprocess.run(["/usr/bin/python3", GEN, "--train", "4000", "--train-out", train,
                    "--heldout-out", held] + args, check=True, stdout=subprocess.DEVNULL)
    return open(train).read(), open(held).read()


def dialogues(text):
    return [json.loads(line) for line in text.splitlines()]


def kept_words(user, words):
    """The words of user that augmentation must keep, in order: numbers and slot values' words."""
    return [w for w in user.split(" ") if w in words or any(c.isdigit() for c in w)]


def check_fresh_draw(tmp):
    """tools/corpus/fresh_draw.py: the generator's held-out stream for a seed, less the dialogues
    that share a user text with the training corpus given."""
    def fresh(seed, train_path):
        out = os.path.join(tmp, "fresh-%d.jsonl" % seed)
        subprocess.run(["/usr/bin/python3", FRESH, "--seed", str(seed), "--train", train_path,
                        "--out", out], check=True, stdout=subprocess.DEVNULL)
        return open(out).read()
    train_a = os.path.join(tmp, "a-train.jsonl")   # decontaminated: shares no text with the set
    check(fresh(20240601, train_a) == open(os.path.join(ROOT, "assets", "eval", "heldout.jsonl")).read(),
          "fresh_draw.py with the committed seed is not assets/eval/heldout.jsonl")
    _, drawn = generate(tmp, "s777", ["--seed", "777"])
    drawn = dialogues(drawn)
    planted = os.path.join(tmp, "planted-train.jsonl")   # training + the draw's first dialogue
    with open(planted, "w") as f:
        f.write(open(train_a).read() + json.dumps(drawn[0]) + "\n")
    texts = {gc.norm_text(t["user"]) for line in open(planted) for t in json.loads(line)["turns"]}
    want = [d for d in drawn if not any(gc.norm_text(t["user"]) in texts for t in d["turns"])]
    got = dialogues(fresh(777, planted))
    check(got == want and drawn[0] not in got and len(got) > 1400,
          "fresh_draw.py kept %d of %d dialogues, want %d" % (len(got), len(drawn), len(want)))


def check_smalltalk(tmp, train_path, tr):
    """tools/corpus/smalltalk.py: every dialogue of the corpus kept in order, the small-talk turns
    put in marked new and answered <act>none</act> in the reply grammar, deterministic, and none
    of them a user text of either held-out set (the hand-written assets/eval/smalltalk.jsonl too)."""
    tool = os.path.join(ROOT, "tools", "corpus", "smalltalk.py")
    outs = []
    for name in ("st1", "st2"):
        out = os.path.join(tmp, name + ".jsonl")
        subprocess.run(["/usr/bin/python3", tool, "--train", train_path, "--out", out], check=True,
                       stdout=subprocess.DEVNULL, cwd=ROOT)
        outs.append(open(out).read())
    check(outs[0] == outs[1], "smalltalk.py: two runs differ")
    st = dialogues(outs[0])
    kept = [{"turns": [t for t in d["turns"] if not t.get("new")]} for d in st]
    kept = [d for d in kept if d["turns"]]
    check(kept == tr, "smalltalk.py: the corpus's dialogues are not all kept in order")
    new = [t for d in st for t in d["turns"] if t.get("new")]
    check(0.05 * len(tr) < len(new) < 0.5 * len(tr), "smalltalk.py: %d small-talk turns for %d dialogues" % (len(new), len(tr)))
    check(all(t["reply"].startswith("<act>none</act> ") and REPLY.match(t["reply"]) for t in new),
          "smalltalk.py: a small-talk reply that is not <act>none</act> and a sentence")
    held = set()
    for f in ("heldout.jsonl", "smalltalk.jsonl"):
        held |= {gc.norm_text(t["user"]) for d in dialogues(open(os.path.join(ROOT, "assets", "eval", f)).read())
                 for t in d["turns"]}
    leaked = [t["user"] for t in new if gc.norm_text(t["user"]) in held]
    check(not leaked, "smalltalk.py: held-out user texts in training: %s" % leaked[:3])
    # --teacher: another corpus's dialogues put in between, every turn marked teacher, the rest
    # written as without it; a teacher dialogue with a held-out user text is left out.
    teach_in = os.path.join(tmp, "teacher_in.jsonl")
    some_held = min(held)
    extra = tr[:40] + [{"turns": [{"user": some_held, "reply": "<act>none</act> Okay."}]}]
    with open(teach_in, "w") as f:
        f.writelines(json.dumps(d) + "\n" for d in extra)
    out = os.path.join(tmp, "st_teacher.jsonl")
    subprocess.run(["/usr/bin/python3", tool, "--train", train_path, "--out", out, "--teacher", teach_in],
                   check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    with_teacher = dialogues(open(out).read())
    taught = [d for d in with_teacher if any(t.get("teacher") for t in d["turns"])]
    check(len(taught) == 40 and all(all(t.get("teacher") for t in d["turns"]) for d in taught),
          "smalltalk.py --teacher: %d teacher dialogues of 40, each turn marked" % len(taught))
    check([d for d in with_teacher if d not in taught] == st,
          "smalltalk.py --teacher: the rest of the corpus differs from the one without it")
    hand = dialogues(open(os.path.join(ROOT, "assets", "eval", "smalltalk.jsonl")).read())
    check(len(hand) >= 40 and all(t["reply"].startswith("<act>none</act> ") for d in hand for t in d["turns"]),
          "assets/eval/smalltalk.jsonl: the hand-written small-talk set, every turn <act>none</act>")


def main():
    tmp = sys.argv[1]
    train, held = generate(tmp, "a", RECIPE)
    train2, held2 = generate(tmp, "b", RECIPE)
    check(train == train2 and held == held2, "two runs with the same options differ")
    _, held_plain = generate(tmp, "plain", [])
    check(held == held_plain, "training options changed the held-out set")
    committed = open(os.path.join(ROOT, "assets", "eval", "heldout.jsonl")).read()
    check(held == committed, "assets/eval/heldout.jsonl is not what gen_corpus.py generates")

    tr, ho = dialogues(train), dialogues(held)
    check(len(tr) == 4000 and len(ho) == 1500, "dialogue counts %d/%d" % (len(tr), len(ho)))
    turns = [t for d in tr + ho for t in d["turns"]]
    bad = [t["reply"] for t in turns if not REPLY.match(t["reply"])]
    check(not bad, "replies outside the grammar: %s" % bad[:3])

    # decontamination: no training user text is a held-out one (case and punctuation ignored)
    held_texts = {gc.norm_text(t["user"]) for d in ho for t in d["turns"]}
    shared = [t["user"] for d in tr for t in d["turns"] if gc.norm_text(t["user"]) in held_texts]
    check(not shared, "training user texts that are held-out ones: %s" % shared[:3])
    check_fresh_draw(tmp)
    check_smalltalk(tmp, os.path.join(tmp, "a-train.jsonl"), tr)

    # held-out names, places and streets never occur in a training action, and do occur held out
    held_values = ({"contact=" + gc.slotify(c) for c in gc.CONTACTS_HELD} |
                   {"dest=" + gc.slotify(p) for p, _ in gc.PLACES_HELD})
    train_acts = " ".join(t["reply"].split("</act>")[0] + " " for d in tr for t in d["turns"])
    leaked = [v for v in held_values if v + " " in train_acts or v + "<" in train_acts]
    check(not leaked, "held-out values in training actions: %s" % leaked[:5])
    streets = [s for s in gc.STREETS_HELD if gc.slotify(s) in train_acts]
    check(not streets, "held-out streets in training actions: %s" % streets)
    held_acts = " ".join(t["reply"].split("</act>")[0] + " " for d in ho for t in d["turns"])
    check(any(v + "<" in held_acts or v + " " in held_acts for v in held_values),
          "no held-out value in the held-out set")

    # reserved (held-out) frames are never paraphrased into training frames
    rng = random.Random(7)
    aug.AUGMENT.update(frames=1.0)
    reserved = aug._reserved_frames()
    check(len(reserved) > 100, "only %d reserved frames found" % len(reserved))
    phrasing_lists = [v for v in vars(gc).values()     # (lists of 4 or more distinct strings)
                      if isinstance(v, list) and len(v) >= 4 and all(isinstance(x, str) for x in v)
                      and len(set(v)) == len(v)]
    frames = [t for v in phrasing_lists for i, t in enumerate(v) if i % 4 != 3]
    aug.AUGMENT.update(frames=0.0)
    leaks = [(v.index(t), t) for v in phrasing_lists for t in (gc.pick(rng, v, gc.TRAIN) for _ in range(40))
             if v.index(t) % 4 == 3]
    check(not leaks, "pick gave training a held-out frame: %s" % leaks[:3])
    only_held = [t for v in phrasing_lists for t in (gc.pick(rng, v, gc.HELDOUT) for _ in range(10))
                 if v.index(t) % 4 != 3]
    check(not only_held, "pick gave the held-out set a training frame: %s" % only_held[:3])

    # extra training frames (every batch, tools/corpus/extra_frames*.json) keep their list's
    # form and are never within one word of a reserved frame; those of extra_frames.json are
    # what pick gives training when asked for them (never the held-out set)
    batches = sorted(glob.glob(os.path.join(os.path.dirname(aug.EXTRA_FRAMES_PATH), "extra_frames*.json")))
    check(len(batches) >= 2, "only %d batches of extra frames" % len(batches))
    kept_all, _ = aug.extra_frames_checked(batches)
    extra_all = {fr for v in kept_all.values() for fr in v}
    near = sorted(fr for fr in extra_all if any(aug.one_word_apart(fr, r) for r in reserved))
    check(not near, "extra frames one word or less from a held-out frame: %s" % near[:3])
    kept, _ = aug.extra_frames_checked()
    extra = {fr for v in kept.values() for fr in v}
    check(len(extra) > 500, "only %d extra training frames" % len(extra))
    check(len(extra_all) > len(extra), "the later batches add no frame to extra_frames.json's")
    aug.AUGMENT.update(extra_frames=1.0)
    drawn = [(v, gc.pick(rng, v, gc.TRAIN)) for v in phrasing_lists for _ in range(20)]
    check(not [t for v, t in drawn if t in v and v.index(t) % 4 == 3],
          "pick with extra frames gave training a held-out frame")
    drawn = [t for _, t in drawn]
    check(len(set(drawn) & extra) > 200, "pick gave training only %d extra frames" % len(set(drawn) & extra))
    held_drawn = [gc.pick(rng, v, gc.HELDOUT) for v in phrasing_lists for _ in range(10)]
    check(not (set(held_drawn) & extra), "pick gave the held-out set an extra frame")
    aug.AUGMENT.update(extra_frames=0.0)
    aug.AUGMENT.update(frames=1.0)
    made = {out for t in frames for out in (aug.augment_frame(rng, t) for _ in range(3)) if out != t}
    check(len(made) > 300, "only %d paraphrases made" % len(made))
    check(not (made & reserved), "paraphrases that are held-out frames: %s" % sorted(made & reserved)[:3])

    # drop_word and unknown_word keep every number and every slot value's word, in order; the
    # pseudo-words unknown_word puts in are no held-out value's words
    aug.AUGMENT.update(frames=0.0)
    held_words = aug._held_words()
    sample = [t for d in tr[:1500] for t in d["turns"]]
    broken, odd = [], []
    syn_odd, syn_changed = [], 0
    for i, t in enumerate(sample):
        vw = aug.action_value_words(t["reply"])
        want = kept_words(t["user"], vw)
        dropped = aug.drop_word(random.Random(i), t["user"], t["reply"])
        changed = aug.unknown_word(random.Random(i), t["user"], t["reply"])
        outs = [dropped, changed]
        if HAVE_WORDNET:
            swapped = aug.synonym_word(random.Random(i), t["user"], t["reply"])
            outs.append(swapped)
            if swapped != t["user"]:
                syn_changed += 1
                a, b = t["user"].split(" "), swapped.split(" ")
                diff = [k for k in range(min(len(a), len(b))) if a[k] != b[k]]
                # one word replaced (a synonym may be two words: the rest of the turn shifts by one)
                if not diff or a[:diff[0]] != b[:diff[0]] or a[diff[0] + 1:] != b[diff[0] + 1 + len(b) - len(a):] \
                        or len(b) - len(a) not in (0, 1) or a[diff[0]] in gc.KEEP_WORDS \
                        or any(w in held_words or w in aug.DOMAIN_WORDS for w in b[diff[0]:diff[0] + 1 + len(b) - len(a)]):
                    syn_odd.append((t["user"], swapped))
        for out in outs:
            if kept_words(out, vw) != want:
                broken.append((t["user"], out))
        new = [w for w in changed.split(" ") if w not in t["user"].split(" ")]
        n_old, n_new = len(t["user"].split(" ")), len(changed.split(" "))
        refusal = t["reply"].startswith("<act>none</act>")
        if changed != t["user"] and (any(w in held_words for w in new) or
                                     (refusal and not (1 <= len(new) <= 3 and n_new == n_old)) or
                                     (not refusal and (len(new) != 1 or n_new not in (n_old, n_old + 1)))):
            odd.append((t["user"], changed))
    check(not broken, "augmentation lost a number or a value word: %s" % broken[:3])
    if HAVE_WORDNET:
        check(not syn_odd, "synonym_word did not replace one word (not a KEEP_WORDS one) by words no "
              "phrase table or held-out value has: %s" % syn_odd[:3])
        check(syn_changed > 0.3 * len(sample), "synonym_word changed only %d of %d turns" % (syn_changed, len(sample)))
    else:
        print("skipped: synonym_word checks: WordNet is not installed (%s; Debian package wordnet-base)"
              % wordnet.WORDNET_DIR)
        tally.skipped += 1
    check(not odd, "unknown_word did not put in one new pseudo-word (1-3 in place of a refusal's "
          "words): %s" % odd[:3])
    check(sum(1 for t in sample if aug.unknown_word(random.Random(1), t["user"], t["reply"]) != t["user"])
          > 0.9 * len(sample), "unknown_word left most turns unchanged")

    print(tally.line())
    return tally.exit_code()


if __name__ == "__main__":
    sys.exit(main())
