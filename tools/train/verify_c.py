#!/usr/bin/python3
"""Check the exported GGUF against the PyTorch side with cabin's C engine:

1. tokenizer: spm_tokenizer.Tokenizer.encode(text) == `cabin tokenize --no-bos -m GGUF TEXT` for
   held-out user texts, replies and whole rendered sessions (with special tokens);
2. logits: `cabin logits --token-ids ... --out FILE` (all logits, last position) against the
   PyTorch model on the same ids, reported as the largest |difference| relative to the largest
   |logit|, and whether the arg-max agrees.

usage: verify_c.py [--gguf assets/models/cabin-tiny.gguf] [--ckpt build/train/model.pt]
                   [--cabin build/cabin] [--heldout assets/eval/heldout.jsonl] [--n-texts 300]
Exit status 1 when a tokenization differs or the relative logit error exceeds --tol.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm_tokenizer  # noqa: E402
from model import Config, TinyLlama  # noqa: E402


def render_session(turns):
    s = ""
    for t in turns:
        s += "<|user|>\n%s<|end|>\n<|assistant|>\n%s<|end|>\n" % (t["user"], t["reply"])
    return s


def c_tokenize(cabin, gguf, text):
    r = subprocess.run([cabin, "tokenize", "--no-bos", "-m", gguf, text], capture_output=True,
                       text=True, check=True)
    return [int(x) for x in r.stdout.split()]


def c_logits(cabin, gguf, ids, n_vocab):
    with tempfile.NamedTemporaryFile(suffix=".f32", delete=False) as f:
        path = f.name
    try:
        subprocess.run([cabin, "logits", "-m", gguf, "--token-ids", " ".join(map(str, ids)),
                        "--top", "1", "--out", path], capture_output=True, text=True, check=True)
        return np.fromfile(path, dtype="<f4", count=n_vocab)
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default="assets/models/cabin-tiny.gguf")
    ap.add_argument("--ckpt", default="build/train/model.pt")
    ap.add_argument("--vocab", default="build/tokenizer/vocab.json")
    ap.add_argument("--cabin", default="build/cabin")
    ap.add_argument("--heldout", default="assets/eval/heldout.jsonl")
    ap.add_argument("--n-texts", type=int, default=300)
    ap.add_argument("--n-logit-checks", type=int, default=6)
    ap.add_argument("--tol", type=float, default=1e-3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    tok = spm_tokenizer.load(a.vocab)

    dialogues = [json.loads(l)["turns"] for l in open(a.heldout)]
    texts = []
    for i, turns in enumerate(dialogues):
        if len(texts) >= a.n_texts:
            break
        texts.append(turns[0]["user"])
        texts.append(turns[0]["reply"])
        if i % 5 == 0:
            texts.append(render_session(turns))
    texts += ["what's the capital of France", "Ünïcode ☃ and bytes\ttabs", "  two  spaces ",
              "<act>none</act> Sorry.", "x<actually>y </act"]
    bad = 0
    for t in texts:
        py, c = tok.encode(t), c_tokenize(a.cabin, a.gguf, t)
        if py != c:
            bad += 1
            if bad <= 5:
                print("tokenize MISMATCH %r\n  python %s\n  cabin  %s" % (t, py, c))
    print("tokenizer: %d/%d texts tokenized identically by Python and cabin" % (len(texts) - bad, len(texts)))

    ck = torch.load(a.ckpt, map_location="cpu")
    model = TinyLlama(Config(**ck["config"]))
    model.load_state_dict(ck["state"])
    model.eval()
    worst = 0.0
    argmax_ok = 0
    checks = []
    for turns in dialogues[:a.n_logit_checks]:
        ids, _ = tok.encode_session(turns)
        checks.append(ids)
    checks.append([1, 2, 3])
    long_ids = []
    for turns in dialogues:
        ids, _ = tok.encode_session(turns)
        long_ids += ids[1:] if long_ids else ids
        if len(long_ids) > 1000:
            break
    checks.append(long_ids[:1000])
    for ids in checks:
        with torch.no_grad():
            ref = model(torch.tensor([ids]))[0, -1].numpy()
        got = c_logits(a.cabin, a.gguf, ids, len(ref))
        rel = float(np.max(np.abs(ref - got)) / np.max(np.abs(ref)))
        worst = max(worst, rel)
        argmax_ok += int(np.argmax(ref) == np.argmax(got))
        print("logits: %4d ids: max |torch - cabin| / max |torch| = %.2e, argmax %d vs %d"
              % (len(ids), rel, int(np.argmax(ref)), int(np.argmax(got))))
    print("logits: worst relative difference %.2e over %d prompts, argmax agrees on %d/%d"
          % (worst, len(checks), argmax_ok, len(checks)))
    return 1 if bad or worst > a.tol else 0


if __name__ == "__main__":
    sys.exit(main())
