#!/usr/bin/python3
"""Write the trained tiny model as a GGUF v3 file (llama architecture, SentencePiece-style
tokenizer) that cabin and other GGUF tools load.

File layout (little-endian): "GGUF", u32 version 3, u64 tensor count, u64 key/value count;
the key/value pairs (key: u64 length + UTF-8; u32 value type; value); the tensor infos (name,
u32 n_dims, u64 ne[n_dims] with ne[0] the fastest-varying dimension, u32 ggml type, u64 data
offset); zero padding to a 32-byte boundary; then the tensor data, each tensor starting on a
32-byte boundary. A PyTorch Linear weight (out, in) row-major is exactly a GGUF tensor with
ne = [in, out], so matrices are written as they are; rope needs no permutation because the
model was trained with llama.cpp's "normal" (adjacent-pair) rope.

usage: export_gguf.py [--ckpt build/train/model.pt] [--vocab build/tokenizer/vocab.json]
                      [--out assets/models/cabin-tiny.gguf] [--f16]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGN = 32
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16 = 0, 1
FILE_TYPE_ALL_F32, FILE_TYPE_MOSTLY_F16 = 0, 1

# Phi-3 layout: <s><|user|>\n{user}<|end|>\n<|assistant|>\n{reply}<|end|>\n<|user|>...
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '<|end|>\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class KV:
    def __init__(self):
        self.parts = []
        self.n = 0

    def _add(self, key, vtype, payload):
        self.parts.append(gguf_string(key) + struct.pack("<I", vtype) + payload)
        self.n += 1

    def u32(self, k, v): self._add(k, T_UINT32, struct.pack("<I", v))
    def f32(self, k, v): self._add(k, T_FLOAT32, struct.pack("<f", v))
    def bool(self, k, v): self._add(k, T_BOOL, struct.pack("<B", 1 if v else 0))
    def str(self, k, v): self._add(k, T_STRING, gguf_string(v))

    def str_array(self, k, vs):
        self._add(k, T_ARRAY, struct.pack("<IQ", T_STRING, len(vs)) + b"".join(gguf_string(v) for v in vs))

    def f32_array(self, k, vs):
        self._add(k, T_ARRAY, struct.pack("<IQ", T_FLOAT32, len(vs)) + np.asarray(vs, "<f4").tobytes())

    def i32_array(self, k, vs):
        self._add(k, T_ARRAY, struct.pack("<IQ", T_INT32, len(vs)) + np.asarray(vs, "<i4").tobytes())


def gguf_tensors(state, cfg, f16):
    """(name, ne list, ggml type, bytes) in llama.cpp's llama naming. Norms stay F32."""
    def mat(t):
        a = t.detach().float().numpy()
        if f16:
            return a.astype("<f2"), GGML_F16
        return a.astype("<f4"), GGML_F32

    out = []

    def add(name, t, is_norm=False):
        if is_norm:
            a, ty = t.detach().float().numpy().astype("<f4"), GGML_F32
        else:
            a, ty = mat(t)
        ne = list(reversed(a.shape))
        out.append((name, ne, ty, np.ascontiguousarray(a).tobytes()))

    add("token_embd.weight", state["tok_embd.weight"])
    for i in range(cfg["n_layer"]):
        p = "layers.%d." % i
        b = "blk.%d." % i
        add(b + "attn_norm.weight", state[p + "attn_norm.weight"], True)
        add(b + "attn_q.weight", state[p + "wq.weight"])
        add(b + "attn_k.weight", state[p + "wk.weight"])
        add(b + "attn_v.weight", state[p + "wv.weight"])
        add(b + "attn_output.weight", state[p + "wo.weight"])
        add(b + "ffn_norm.weight", state[p + "ffn_norm.weight"], True)
        add(b + "ffn_gate.weight", state[p + "w_gate.weight"])
        add(b + "ffn_up.weight", state[p + "w_up.weight"])
        add(b + "ffn_down.weight", state[p + "w_down.weight"])
    add("output_norm.weight", state["output_norm.weight"], True)
    add("output.weight", state["output.weight"])
    return out


def write_gguf(path, cfg, vocab, tensors, f16, name):
    kv = KV()
    kv.str("general.architecture", "llama")
    kv.str("general.name", name)
    kv.u32("general.file_type", FILE_TYPE_MOSTLY_F16 if f16 else FILE_TYPE_ALL_F32)
    kv.u32("general.alignment", ALIGN)
    kv.u32("llama.context_length", cfg["ctx"])
    kv.u32("llama.embedding_length", cfg["dim"])
    kv.u32("llama.block_count", cfg["n_layer"])
    kv.u32("llama.feed_forward_length", cfg["ffn"])
    kv.u32("llama.attention.head_count", cfg["n_head"])
    kv.u32("llama.attention.head_count_kv", cfg["n_kv_head"])
    kv.f32("llama.rope.freq_base", cfg["rope_base"])
    kv.u32("llama.rope.dimension_count", cfg["dim"] // cfg["n_head"])
    kv.f32("llama.attention.layer_norm_rms_epsilon", cfg["rms_eps"])
    kv.u32("llama.vocab_size", len(vocab["tokens"]))
    kv.str("tokenizer.ggml.model", "llama")
    kv.str("tokenizer.ggml.pre", "default")
    kv.str_array("tokenizer.ggml.tokens", vocab["tokens"])
    kv.f32_array("tokenizer.ggml.scores", vocab["scores"])
    kv.i32_array("tokenizer.ggml.token_type", vocab["types"])
    kv.u32("tokenizer.ggml.bos_token_id", 1)
    kv.u32("tokenizer.ggml.eos_token_id", 2)
    kv.u32("tokenizer.ggml.unknown_token_id", 0)
    kv.bool("tokenizer.ggml.add_bos_token", True)
    kv.bool("tokenizer.ggml.add_eos_token", False)
    kv.bool("tokenizer.ggml.add_space_prefix", True)
    kv.str("tokenizer.chat_template", CHAT_TEMPLATE)

    infos = []
    offset = 0
    for name_, ne, ty, data in tensors:
        infos.append(gguf_string(name_) + struct.pack("<I", len(ne)) +
                     b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", ty, offset))
        offset += len(data)
        offset += (-offset) % ALIGN

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), kv.n))
        for p in kv.parts:
            f.write(p)
        for p in infos:
            f.write(p)
        f.write(b"\0" * ((-f.tell()) % ALIGN))
        base = f.tell()
        for _, _, _, data in tensors:
            f.write(data)
            f.write(b"\0" * ((-(f.tell() - base)) % ALIGN))
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", default="build/train/model.pt")
    ap.add_argument("--vocab", default="build/tokenizer/vocab.json")
    ap.add_argument("--out", default="assets/models/cabin-tiny.gguf")
    ap.add_argument("--f16", action="store_true", help="matrices as F16 (norms stay F32)")
    ap.add_argument("--name", default="cabin-tiny")
    ap.add_argument("--max-bytes", type=int, default=16 << 20)
    a = ap.parse_args()
    ck = torch.load(a.ckpt, map_location="cpu")
    cfg = ck["config"]
    with open(a.vocab) as f:
        vocab = json.load(f)
    assert len(vocab["tokens"]) == cfg["vocab"], "vocabulary and checkpoint disagree"
    tensors = gguf_tensors(ck["state"], cfg, a.f16)
    write_gguf(a.out, cfg, vocab, tensors, a.f16, a.name)
    size = os.path.getsize(a.out)
    print("export_gguf: %s: %d tensors, %d bytes (%.2f MiB), step %s"
          % (a.out, len(tensors), size, size / 2**20, ck.get("step")))
    if size > a.max_bytes:
        print("export_gguf: %s is larger than %d bytes" % (a.out, a.max_bytes), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
