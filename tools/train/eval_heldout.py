#!/usr/bin/python3
"""Held-out accuracy of the trained model (PyTorch, greedy decoding).

Each held-out dialogue is played as a fresh chat session; every user turn is answered greedily
and the model's own reply (not the reference) stays in the context for the next turn, as in the
app. Per turn the ACTION inside <act>...</act> is compared with the reference:
  action exact-match  intent and every slot equal (the whole ACTION string),
  intent accuracy     DOMAIN.VERB (or none) equal,
  slot accuracy       reference key=value slots found in the prediction / all reference slots,
  well-formed         the reply matches `<act>ACTION</act> SENTENCE` as the grammar says.

usage: eval_heldout.py [--ckpt build/train/model.pt] [--heldout assets/eval/heldout.jsonl]
                       [--limit N] [--show N] [--json OUT]
"""
import argparse
import collections
import json
import os
import re
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm_tokenizer  # noqa: E402
from model import Config, TinyLlama, greedy_reply  # noqa: E402

REPLY_RE = re.compile(r"^<act>((?:none)|(?:[a-z]+\.[a-z]+(?: [a-z_]+=[a-z0-9_.+-]+)*))</act> (\S.*)$")


def parse_action(reply):
    """-> (action string or None, intent, {key: value})."""
    m = REPLY_RE.match(reply.strip())
    if not m:
        return None, None, {}
    parts = m.group(1).split(" ")
    slots = dict(p.split("=", 1) for p in parts[1:])
    return m.group(1), parts[0], slots


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", default="build/train/model.pt")
    ap.add_argument("--vocab", default="build/tokenizer/vocab.json")
    ap.add_argument("--heldout", default="assets/eval/heldout.jsonl")
    ap.add_argument("--limit", type=int, default=0, help="only the first N dialogues")
    ap.add_argument("--show", type=int, default=15, help="print this many wrong turns")
    ap.add_argument("--json", default="", help="write the figures here")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tok = spm_tokenizer.load(a.vocab)
    ck = torch.load(a.ckpt, map_location="cpu")
    model = TinyLlama(Config(**ck["config"]))
    model.load_state_dict(ck["state"])
    model.eval()

    dialogues = [json.loads(l)["turns"] for l in open(a.heldout)]
    if a.limit:
        dialogues = dialogues[:a.limit]
    n = exact = intent_ok = wellformed = slots_total = slots_ok = 0
    by_intent = collections.defaultdict(lambda: [0, 0])
    by_pos = collections.defaultdict(lambda: [0, 0])
    wrong = []
    t0 = time.time()
    for turns in dialogues:
        history = []
        for i, t in enumerate(turns):
            ids, history = greedy_reply(model, tok, history, t["user"])
            pred = tok.decode(ids).lstrip(" ").lstrip("\n")
            gold_act, gold_intent, gold_slots = parse_action(t["reply"])
            act, intent, slots = parse_action(pred)
            n += 1
            wellformed += act is not None
            ok = act == gold_act
            exact += ok
            intent_ok += intent == gold_intent
            slots_total += len(gold_slots)
            slots_ok += sum(1 for k, v in gold_slots.items() if slots.get(k) == v)
            by_intent[gold_intent][0] += ok
            by_intent[gold_intent][1] += 1
            pos = "first turn" if i == 0 else "follow-up turn"
            by_pos[pos][0] += ok
            by_pos[pos][1] += 1
            if not ok:
                wrong.append((t["user"], t["reply"], pred))
    el = time.time() - t0
    res = {
        "checkpoint_step": ck.get("step"), "dialogues": len(dialogues), "turns": n,
        "action_exact_match": exact / n, "intent_accuracy": intent_ok / n,
        "slot_accuracy": slots_ok / max(1, slots_total), "well_formed": wellformed / n,
        "by_intent": {k: [v[0], v[1]] for k, v in sorted(by_intent.items())},
        "by_position": {k: [v[0], v[1]] for k, v in sorted(by_pos.items())},
        "seconds": el,
    }
    print("held-out: %d dialogues, %d turns (step %s, %.0f s)" % (len(dialogues), n, ck.get("step"), el))
    print("  action exact-match %.2f%%   intent %.2f%%   slots %.2f%% (%d/%d)   well-formed %.2f%%"
          % (100 * exact / n, 100 * intent_ok / n, 100 * slots_ok / max(1, slots_total), slots_ok,
             slots_total, 100 * wellformed / n))
    for k, (ok, tot) in sorted(by_pos.items()):
        print("  %-16s %6.2f%% (%d/%d)" % (k, 100 * ok / tot, ok, tot))
    for k, (ok, tot) in sorted(by_intent.items()):
        print("  %-16s %6.2f%% (%d/%d)" % (k, 100 * ok / tot, ok, tot))
    for u, g, p in wrong[:a.show]:
        print("  WRONG %r\n     want %s\n     got  %s" % (u, g, p))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
