#!/bin/sh
# The K-quant table of docs/PRECISION.md, on the embedded model: each type written by `cabin
# quantize` (layer matrices at the type, token embedding and output kept F32), plain and
# importance-aware (--calib), and the presets as whole files; for each, bits per weight of the
# layer matrices, and mean KL / top-1 agreement against F32 (cabin ppl --kl-base) on the
# held-out dialogues. Usage: sh tools/kquant_report.sh [BUILD]
set -e
BUILD=${1:-build}
CABIN="$BUILD/cabin"
M=assets/models/cabin-tiny.gguf
T=$(mktemp -d /tmp/cabin-kquant-XXXXXX)
trap 'rm -rf "$T"' EXIT
# the held-out dialogues in the model's chat layout, and the calibration text: 400 training
# dialogues (never the held-out ones)
/usr/bin/python3 tools/corpus/chat_text.py assets/eval/heldout.jsonl "$T/heldout.txt"
[ -f build/corpus/train.jsonl ] || /usr/bin/python3 tools/corpus/gen_corpus.py --train-out build/corpus/train.jsonl --heldout-out "$T/unused.jsonl" >/dev/null
/usr/bin/python3 tools/corpus/chat_text.py build/corpus/train.jsonl "$T/calib.txt" --limit 400
PPL="$CABIN ppl -f $T/heldout.txt --ctx 256 --chunks 40"
$PPL -m $M --save-base "$T/base.kl" 2>/dev/null | grep PPL | sed 's/^/F32: /'
# bits per weight of the layer matrices: from cabin info's per-type lines (all but F32)
layer_bpw() {
    "$CABIN" info "$1" | awk '/% of weights/ && $1 != "F32" { sub("%", "", $(NF-2)); n += $(NF-2); b += $(NF-2) * $(NF-4) } END { if (n) printf "%.3f", b / n }'
}
row() {   # NAME FILE
    kl=$($PPL -m "$2" --kl-base "$T/base.kl" 2>/dev/null | grep "vs base")
    echo "$1 | $(layer_bpw "$2") bpw | $kl"
}
echo "## layer matrices at TYPE, token embedding and output F32 (plain | --calib)"
for t in q8_0 q6_k q5_k q5_1 q5_0 q4_k q4_1 q4_0 iq4_nl iq4_xs q3_k q2_k; do
    "$CABIN" quantize $M "$T/$t.gguf" $t --plan "token_embd=keep;output=keep" >/dev/null 2>&1
    row "$t" "$T/$t.gguf"
    case $t in q6_k|q5_k|q4_k|q4_0|q3_k|q2_k)
        "$CABIN" quantize $M "$T/$t-calib.gguf" $t --plan "token_embd=keep;output=keep" --calib "$T/calib.txt" >/dev/null 2>&1
        row "$t --calib" "$T/$t-calib.gguf" ;;
    esac
done
echo "## presets (whole files: the tied embedding/output at Q6_K)"
for p in Q6_K Q5_K_M Q4_K_M Q3_K_M Q2_K; do
    "$CABIN" quantize $M "$T/$p.gguf" $p >/dev/null 2>&1
    row "$p" "$T/$p.gguf"
done
