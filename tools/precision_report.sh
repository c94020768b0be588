#!/bin/sh
# The precision tables of docs/PRECISION.md, on the embedded model: perplexity, KL and top-1
# agreement against F32 for each precision and plan (cabin ppl --kl-base), and the assistant's
# action accuracy per precision (cabin eval-assistant). Usage: sh tools/precision_report.sh [BUILD] [DIALOGUES]
set -e
BUILD=${1:-build}
LIMIT=${2:-300}
CABIN="$BUILD/cabin"
M=assets/models/cabin-tiny.gguf
T=$(mktemp -d /tmp/cabin-prec-XXXXXX)
trap 'rm -rf "$T"' EXIT
# the held-out dialogues in the model's chat layout: the text perplexity is measured on
/usr/bin/python3 tools/corpus/chat_text.py assets/eval/heldout.jsonl "$T/heldout.txt"
# calibration text: training dialogues (never the held-out ones the tables measure)
[ -f build/corpus/train.jsonl ] || /usr/bin/python3 tools/corpus/gen_corpus.py --train-out build/corpus/train.jsonl --heldout-out "$T/unused.jsonl" >/dev/null
/usr/bin/python3 tools/corpus/chat_text.py build/corpus/train.jsonl "$T/calib.txt" --limit 400
"$CABIN" quantize $M "$T/q4_0.gguf" q4_0 --plan "token_embd=keep;output=keep" >/dev/null
"$CABIN" quantize $M "$T/q4_0-calib.gguf" q4_0 --plan "token_embd=keep;output=keep" --calib "$T/calib.txt" >/dev/null 2>&1
echo "## PPL, KL and top-1 agreement vs F32 ($CABIN ppl -f heldout.txt --ctx 256 --chunks 40)"
"$CABIN" ppl -m $M -f "$T/heldout.txt" --ctx 256 --chunks 40 --save-base "$T/base.kl" 2>/dev/null | grep PPL | sed 's/^/f32: /'
for p in f16 bf16 q8_0 q4_0 "q4_0;q8_0:layers=0,attn_v,ffn_down"; do
    "$CABIN" ppl -m $M -f "$T/heldout.txt" --ctx 256 --chunks 40 --precision "$p" --kl-base "$T/base.kl" 2>/dev/null | grep "vs base" | sed "s|^|$p: |"
done
"$CABIN" ppl -m "$T/q4_0-calib.gguf" -f "$T/heldout.txt" --ctx 256 --chunks 40 --kl-base "$T/base.kl" 2>/dev/null | grep "vs base" | sed "s|^|q4_0 importance-aware (cabin quantize --calib): |"
"$CABIN" ppl -m "$T/q4_0.gguf" -f "$T/heldout.txt" --ctx 256 --chunks 40 --kl-base "$T/base.kl" 2>/dev/null | grep "vs base" | sed "s|^|q4_0 plain (cabin quantize): |"
echo "## Action accuracy ($CABIN eval-assistant --limit $LIMIT)"
for p in f32 f16 q8_0 q4_0; do
    "$CABIN" eval-assistant -m $M --limit $LIMIT --precision $p 2>/dev/null | grep -e "^| cabin" -e "^reference replies"
done
