#!/bin/sh
# Instructions per decode step under callgrind, without timing noise: cabin bench on a small
# generated model (dim 512, ffn 1536, 4 layers, vocab 1000), 1 thread, -p 1 -r 1, once with -n 4
# and once with -n 20; the difference of the counts over 16 is one decode step (the warm-up, the
# prefill and the bandwidth passes cancel). Per kernel set (CABIN_KERNELS) and weight type: the
# whole step and the functions that take most of it.
#   sh tools/kernel_icount.sh [BUILD]
# ICOUNT_TYPES (default "q4_0 q8_0 f16"), ICOUNT_KERNELS (default avx2; scalar takes minutes a type). Valgrind does not
# execute AVX-512, so the AVX-512 kernel set cannot be counted this way (and the host's perf has
# no hardware counters in a VM).
set -e
export LC_ALL=C
BUILD=${1:-build}
CABIN="$BUILD/cabin"
DIR="$BUILD/models"
TYPES=${ICOUNT_TYPES:-"q4_0 q8_0 f16"}
KERNELS=${ICOUNT_KERNELS:-avx2}
command -v valgrind >/dev/null || { echo "skipped: valgrind is not installed"; exit 0; }
mkdir -p "$DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
count() {   # kernels type n -> the callgrind output file
    out="$TMP/cg.$1.$2.$3"
    CABIN_KERNELS=$1 valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$CABIN" bench -m "$DIR/icount-$2.gguf" -t 1 -p 1 -n "$3" -r 1 >/dev/null 2>&1
    echo "$out"
}
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'; }
# Self counts per function (callgrind splits inlined code by source file; summed back here).
fn_counts() {
    callgrind_annotate --inclusive=no --threshold=100 "$1" 2>/dev/null |
        awk '/^ *[0-9,]+ +\([^)]*\) +[^ ]*:/ { c = $1; gsub(",", "", c); n = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", n)
                                               sub(/ .*/, "", n); sub(/.*:/, "", n); s[n] += c }
             END { for (n in s) if (n !~ /^\(/) print n, s[n] }'
}
echo "| kernels | type | instructions per decode step | top functions (per step) |"
echo "|---|---|---|---|"
for type in $TYPES; do
    m="$DIR/icount-$type.gguf"
    [ -f "$m" ] || "$CABIN" make-model -o "$m" --type "$type" --dim 512 --ffn 1536 --vocab 1000 --layers 4 >/dev/null
    for k in $KERNELS; do
        a=$(count "$k" "$type" 4); b=$(count "$k" "$type" 20)
        step=$(( ($(total "$b") - $(total "$a")) / 16 ))
        fn_counts "$a" | sort > "$TMP/fa"; fn_counts "$b" | sort > "$TMP/fb"
        top=$(join "$TMP/fa" "$TMP/fb" | awk '$1 !~ /^\(/ { d = ($3 - $2) / 16; if (d > 0) print d, $1 }' | sort -rn | head -3 |
              awk '{ printf "%s%s %.2fM", (NR > 1 ? ", " : ""), $2, $1 / 1e6 }')
        echo "| $k | $type | $(awk -v s="$step" 'BEGIN { printf "%.2fM", s / 1e6 }') | $top |"
    done
done
