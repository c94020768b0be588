#!/usr/bin/python3
"""Read an F32 GGUF written by export_gguf.py back into a training checkpoint and a vocabulary:
the inverse of export_gguf.py, so a stage of `make model` can train on from a shipped file's
weights (train.py --init) without retraining the stages before it.

    import_gguf.py --gguf assets/models/cabin-tiny.gguf --ckpt OUT.pt --vocab OUT.json

The checkpoint holds the weights only (no optimizer state, step 0 of the next stage), exactly the
F32 values of the file; the vocabulary is tokens, scores and token types as spm_tokenizer.py
writes them. Refuses anything export_gguf.py does not write (another architecture, F16 tensors).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)
SCALAR = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
          T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<B", T_UINT64: "<Q", T_INT64: "<q",
          T_FLOAT64: "<d"}
GGML_F32 = 0


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == T_STRING:
            return self.string()
        if vtype == T_ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(SCALAR[vtype])


def read_gguf(path):
    """(key/value dict, {name: float32 array in numpy's row-major shape})."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        sys.exit("import_gguf: %s: not a GGUF file" % path)
    r.pos = 4
    r.take("<I")   # version
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        kv[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take("<Q") for _ in range(r.take("<I"))]
        ty, off = r.take("<I"), r.take("<Q")
        if ty != GGML_F32:
            sys.exit("import_gguf: %s: tensor %s is not F32 (type %d)" % (path, name, ty))
        infos.append((name, ne, off))
    align = kv.get("general.alignment", 32)
    base = (r.pos + align - 1) // align * align
    tensors = {}
    for name, ne, off in infos:
        count = int(np.prod(ne))
        a = np.frombuffer(data, "<f4", count, base + off).copy()
        tensors[name] = a.reshape(list(reversed(ne)))
    return kv, tensors


def f32_as_written(value, default):
    """The Python float export_gguf.py was given, where the file's float32 is its rounding."""
    return default if struct.pack("<f", default) == struct.pack("<f", value) else value


def state_names(n_layer):
    """(checkpoint name, GGUF name) pairs: export_gguf.gguf_tensors' naming, reversed."""
    pairs = [("tok_embd.weight", "token_embd.weight")]
    for i in range(n_layer):
        p, b = "layers.%d." % i, "blk.%d." % i
        pairs += [(p + "attn_norm.weight", b + "attn_norm.weight"), (p + "wq.weight", b + "attn_q.weight"),
                  (p + "wk.weight", b + "attn_k.weight"), (p + "wv.weight", b + "attn_v.weight"),
                  (p + "wo.weight", b + "attn_output.weight"), (p + "ffn_norm.weight", b + "ffn_norm.weight"),
                  (p + "w_gate.weight", b + "ffn_gate.weight"), (p + "w_up.weight", b + "ffn_up.weight"),
                  (p + "w_down.weight", b + "ffn_down.weight")]
    return pairs + [("output_norm.weight", "output_norm.weight"), ("output.weight", "output.weight")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default="assets/models/cabin-tiny.gguf")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--vocab", required=True)
    a = ap.parse_args()
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from model import Config, TinyLlama

    kv, tensors = read_gguf(a.gguf)
    if kv.get("general.architecture") != "llama":
        sys.exit("import_gguf: %s: architecture %s, not llama" % (a.gguf, kv.get("general.architecture")))
    cfg = Config(vocab=len(kv["tokenizer.ggml.tokens"]), dim=kv["llama.embedding_length"],
                 n_layer=kv["llama.block_count"], n_head=kv["llama.attention.head_count"],
                 n_kv_head=kv["llama.attention.head_count_kv"], ffn=kv["llama.feed_forward_length"],
                 ctx=kv["llama.context_length"], rope_base=kv["llama.rope.freq_base"],
                 rms_eps=f32_as_written(kv["llama.attention.layer_norm_rms_epsilon"], Config.rms_eps))
    model = TinyLlama(cfg)
    state = model.state_dict()
    for ck_name, gg_name in state_names(cfg.n_layer):
        t = torch.from_numpy(tensors[gg_name])
        if tuple(t.shape) != tuple(state[ck_name].shape):
            sys.exit("import_gguf: %s: %s has shape %s, the model wants %s"
                     % (a.gguf, gg_name, tuple(t.shape), tuple(state[ck_name].shape)))
        state[ck_name] = t
    model.load_state_dict(state)
    os.makedirs(os.path.dirname(a.ckpt) or ".", exist_ok=True)
    torch.save({"config": cfg.to_dict(), "state": model.state_dict(), "step": 0,
                "imported_from": os.path.basename(a.gguf)}, a.ckpt)
    vocab = {"tokens": kv["tokenizer.ggml.tokens"], "scores": kv["tokenizer.ggml.scores"],
             "types": kv["tokenizer.ggml.token_type"]}
    os.makedirs(os.path.dirname(a.vocab) or ".", exist_ok=True)
    with open(a.vocab, "w") as f:
        json.dump(vocab, f, ensure_ascii=True)
    print("import_gguf: %s -> %s (%d tensors), %s (%d tokens)"
          % (a.gguf, a.ckpt, len(state_names(cfg.n_layer)), a.vocab, len(vocab["tokens"])))


if __name__ == "__main__":
    main()
