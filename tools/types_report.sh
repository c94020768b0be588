#!/bin/sh
# The weight-type table of docs/PRECISION.md ("Every type on two models"): for each type cabin
# produces, its bits per weight, KL and top-1 agreement against the source precision (cabin ppl
# --kl-base) and decode tok/s (cabin bench), on the embedded model (source F32) and on a
# Llama-3.2-1B-shaped model (source F16, random weights, made once into OUT).
#   sh tools/types_report.sh [BUILD] [OUT] [TYPES]
# Each type is a live precision switch of every layer matrix (`--precision T`; the embedding and
# output stay at the source type). A type the model's rows do not fit (K-quants need rows of a
# multiple of 256) gets the loader's reason instead of figures. Speeds move with the machine's
# load: compare them only within one run of this script.
set -e
B=${1:-build}
OUT=${2:-/tmp/cabin-types}
TYPES=${3:-"f16 bf16 q8_0 fp8 q6_k q5_k q5_1 q5_0 q4_k q4_1 q4_0 iq4_nl iq4_xs q3_k q2_k"}
CABIN="$B/cabin"
mkdir -p "$OUT"
BIG="$OUT/1b-f16.gguf"
[ -f "$BIG" ] || "$CABIN" make-model -o "$BIG" --shape llama-1b --type f16 --embd-scale 0.02 \
    --vocab-from ../shared/ref/models/llama-bpe-d64-F16.gguf >/dev/null
SMALL=assets/models/cabin-tiny.gguf
cp README.md "$OUT/text.txt"   # the 1B model's text, fixed for the run (a base records its hash)

# bits per weight of a type, from cabin's own table (cabin info prints it per type)
bpw() {
    awk -v t="$(echo "$1" | tr a-z A-Z)" 'BEGIN {
        n = split("F32 32 F16 16 BF16 16 Q8_0 8.5 FP8 8.5 Q6_K 6.5625 Q5_K 5.5 Q5_1 6 Q5_0 5.5 Q4_K 4.5 Q4_1 5 Q4_0 4.5 IQ4_NL 4.5 IQ4_XS 4.25 Q3_K 3.4375 Q2_K 2.625", a, " ")
        for (i = 1; i < n; i += 2) if (a[i] == t) { print a[i + 1]; exit }
        print "?" }'
}

# score MODEL PPL-ARGS TYPE BASE -> "KL | top-1 | tok/s" (or the reason it could not run)
score() {
    m=$1; args=$2; t=$3; base=$4
    if ! "$CABIN" ppl -m "$m" $args --precision "$t" --kl-base "$base" >"$OUT/ppl.out" 2>&1; then
        echo "$(tail -1 "$OUT/ppl.out" | cut -c1-90) | | "
        return
    fi
    kl=$(sed -n 's/.*mean KL \([0-9.e+-]*\),.*/\1/p' "$OUT/ppl.out")
    top=$(sed -n 's/.*top-1 agreement \([0-9.]*%\).*/\1/p' "$OUT/ppl.out")
    tps=$("$CABIN" bench -m "$m" -t 2 -p 16 -n 16 -r 1 --precision "$t" 2>/dev/null |
          awk -F'|' '$2 ~ /tg16/ { gsub(/ /, "", $4); print $4 }')
    echo "$kl | $top | $tps"
}

SMALL_ARGS="-t 2 --chunks 8"
BIG_ARGS="-t 2 -f $OUT/text.txt --window 128 --chunks 2"
echo "\$ $CABIN ppl -m MODEL ARGS --save-base BASE; then per type: --precision T --kl-base BASE; $CABIN bench -m MODEL -t 2 -p 16 -n 16 -r 1 --precision T"
echo "embedded: $SMALL ($SMALL_ARGS); 1B-shaped: $BIG ($BIG_ARGS); load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$CABIN" ppl -m "$SMALL" $SMALL_ARGS --save-base "$OUT/small.base" >/dev/null 2>&1
"$CABIN" ppl -m "$BIG" $BIG_ARGS --save-base "$OUT/big.base" >/dev/null 2>&1
s_src=$("$CABIN" bench -m "$SMALL" -t 2 -p 16 -n 16 -r 1 2>/dev/null | awk -F'|' '$2 ~ /tg16/ { gsub(/ /, "", $4); print $4 }')
b_src=$("$CABIN" bench -m "$BIG" -t 2 -p 16 -n 16 -r 1 2>/dev/null | awk -F'|' '$2 ~ /tg16/ { gsub(/ /, "", $4); print $4 }')
echo
echo "| type | bits/weight | embedded: KL vs F32 | top-1 | decode tok/s | 1B-shaped: KL vs F16 | top-1 | decode tok/s |"
echo "|---|---|---|---|---|---|---|---|"
echo "| source (F32 / F16) | 32 / 16 | 0 | 100% | $s_src | 0 | 100% | $b_src |"
for t in $TYPES; do
    echo "| $t | $(bpw "$t") | $(score "$SMALL" "$SMALL_ARGS" "$t" "$OUT/small.base") | $(score "$BIG" "$BIG_ARGS" "$t" "$OUT/big.base") |"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
