#!/bin/sh
# Writes the seed corpus of every fuzz target, from the project's own files, into OUT/NAME/:
#   gguf            small models from `cabin make-model` (llama Q4_0, qwen2 F16 tied, Q8_0)
#   tokenizer_*     the test strings of ../shared/ref/vocab/*.inp, one file each
#   scene           scenes/*.scene, and each of their lines alone
#   action          the replies of assets/eval/heldout.jsonl (the first 40 dialogues)
#   wav             assets/audio/*.wav and a short PCM16 file of each layout wav_parse takes
#   plan, heatmap   plan JSON and shorthand as the tests write them; a sensitivity map
#   serve_request   request bodies of the API's routes as docs/SERVE.md and tests/serve_api.py send
# Usage: fuzz/seeds.sh CABIN OUT      (run from the repository root)
set -e
CABIN=$1; OUT=$2
[ -x "$CABIN" ] && [ -n "$OUT" ] || { echo "usage: fuzz/seeds.sh CABIN OUT" >&2; exit 2; }
rm -rf "$OUT"; mkdir -p "$OUT"
for t in gguf tokenizer_spm tokenizer_bpe scene action wav plan heatmap serve_request; do mkdir -p "$OUT/$t"; done

small="--vocab 260 --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 32 --ctx 64"
"$CABIN" make-model -o "$OUT/gguf/llama-q4_0.gguf" $small --type q4_0 >/dev/null
"$CABIN" make-model -o "$OUT/gguf/qwen2-f16-tied.gguf" $small --arch qwen2 --tied --type f16 >/dev/null
"$CABIN" make-model -o "$OUT/gguf/llama-q8_0.gguf" $small --type q8_0 --embd-type f16 >/dev/null

# The inputs hold strings separated by "\n__ggml_vocab_test__\n" (../shared/ref/README.md).
split_vocab_tests() {   # FILE OUTDIR
    [ -f "$1" ] || return 0
    /usr/bin/python3 -c '
import sys, os
data = open(sys.argv[1], "rb").read().split(b"\n__ggml_vocab_test__\n")
base = os.path.basename(sys.argv[1]).replace("ggml-vocab-", "").replace(".gguf.inp", "")
for i, s in enumerate(data):
    open(os.path.join(sys.argv[2], "%s-%03d" % (base, i)), "wb").write(s)
' "$1" "$2"
}
V=../shared/ref/vocab
for v in llama-spm phi-3; do split_vocab_tests "$V/ggml-vocab-$v.gguf.inp" "$OUT/tokenizer_spm"; done
for v in gpt-2 deepseek-llm llama-bpe qwen2; do split_vocab_tests "$V/ggml-vocab-$v.gguf.inp" "$OUT/tokenizer_bpe"; done

for f in scenes/*.scene; do cp "$f" "$OUT/scene/"; done
n=0
cat scenes/*.scene | grep -v '^[[:space:]]*\(#.*\)\?$' | sort -u | while IFS= read -r line; do
    n=$((n + 1)); printf '%s\n' "$line" >"$OUT/scene/line-$n"
done

/usr/bin/python3 -c '
import json, sys, os
for i, line in enumerate(open("assets/eval/heldout.jsonl", encoding="utf-8")):
    if i >= 40: break
    for j, turn in enumerate(json.loads(line)["turns"]):
        open(os.path.join(sys.argv[1], "reply-%02d-%d" % (i, j)), "w", encoding="utf-8").write(turn["reply"])
' "$OUT/action"

for f in assets/audio/*.wav; do cp "$f" "$OUT/wav/"; done
/usr/bin/python3 -c '
import struct, sys, os
def wav(path, rate, channels, n):
    data = b"".join(struct.pack("<h", (i * 997) % 20000 - 10000) for i in range(n * channels))
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * 2, channels * 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    open(path, "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)
wav(os.path.join(sys.argv[1], "mono-16k.wav"), 16000, 1, 64)
wav(os.path.join(sys.argv[1], "stereo-44k.wav"), 44100, 2, 64)
wav(os.path.join(sys.argv[1], "mono-8k.wav"), 8000, 1, 32)
' "$OUT/wav"

p="$OUT/plan"
printf '%s' 'q4_0' >"$p/short-default"
printf '%s' 'q4_0;q8_0:layers=0-3,ffn_down,attn_v;output=q8_0' >"$p/short-rules"
printf '%s' 'bf16;q4_0:layers=1,ffn_gate' >"$p/short-one"
printf '%s' '{"default": "f16", "rules": [{"layers": 5, "tensors": "all", "type": "q4_0"}]}' >"$p/json-layer"
printf '%s' '{"default": "q4_0", "token_embd": "q8_0", "output": "keep", "rules": [{"layers": "0-3", "tensors": ["attn_v", "ffn_down"], "type": "q8_0"}]}' >"$p/json-rules"

printf '%s' '{"type": "q4_0", "base_nll": 2.5, "scored": 120, "layers": 2, "kinds": ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"], "cells": [{"layer": 0, "kind": "attn_q", "kl_mean": 0.01, "kl_max": 0.2, "dnll": 0.003, "top1": 0.97, "n_weights": 4096, "file_type": "f32"}, {"layer": 1, "kind": "ffn_down", "kl_mean": 0.5, "kl_max": 2.1, "dnll": 0.2, "top1": 0.8, "n_weights": 3000}]}' >"$OUT/heatmap/map-2-layers.json"

r="$OUT/serve_request"
printf '%s' '{"model": "cabin-tiny", "messages": [{"role": "user", "content": "set the temperature to 22 degrees"}], "seed": 3}' >"$r/chat"
printf '%s' '{"messages": [{"role": "system", "content": "You are cabin."}, {"role": "user", "content": "turn on the ac"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "climate_ac", "arguments": "{\"state\": \"on\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "done"}, {"role": "user", "content": [{"type": "text", "text": "and lock"}, {"type": "text", "text": " the doors"}]}], "tools": [{"type": "function", "function": {"name": "doors_lock"}}], "tool_choice": "auto"}' >"$r/chat-tools"
printf '%s' '{"messages": [{"role": "user", "content": "play"}], "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "max_tokens": 32, "stop": ["\n", "</act>"]}' >"$r/chat-stream"
printf '%s' '{"prompt": "<act>media.next</act> Skipping to the next track.", "max_tokens": 12, "stop": ["next", "act>"]}' >"$r/completion-stop"
printf '%s' '{"prompt": ["aaaa abab aab"], "stop": "ab", "n": 1, "echo": false}' >"$r/completion-array"
printf '%s' '{"messages": [{"role": "user", "content": "{\"name\": \"A\", \"seats\": 4, \"color\": \"red\", \"tags\": [\"x\"]}"}], "response_format": {"type": "json_schema", "json_schema": {"name": "car", "strict": true, "schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "seats": {"type": "integer"}, "color": {"enum": ["red", "blue"]}, "tags": {"type": "array", "items": {"type": "string"}}, "price": {"type": "number"}, "used": {"type": "boolean"}}, "required": ["name", "seats", "color"], "additionalProperties": false}}}}' >"$r/chat-schema"
printf '%s' '{"messages": [{"role": "user", "content": "{\"a\": [1, -2.5e3, {\"b\": null}], \"c\": true}"}], "response_format": {"type": "json_object"}}' >"$r/chat-json-object"
printf '%s' '{"messages": [{"role": "user", "content": "weather?"}], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"]}}}, {"type": "function", "function": {"name": "play"}}]}' >"$r/chat-client-tools"
printf '%s' '{"messages": [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "18 C"}], "tools": [{"type": "function", "function": {"name": "get_weather"}}], "tool_choice": "auto", "logit_bias": {"151657": 100, "12": -100, "7": 0.5}}' >"$r/chat-tool-result-bias"
