#!/bin/sh
# make bench: cabin bench on generated random-weight models of real shapes (Llama-3.2-1B at
# Q4_0, Q8_0 and F16; SmolLM-135M at Q4_0), 2 threads, prompt 64, 32 generated, 3 repetitions.
# Models are generated once into $BUILD/models (the 1B Q4_0 file is ~700 MB).
# BENCH_SHAPES / BENCH_TYPES / BENCH_THREADS override the defaults.
set -e
BUILD=${1:-build}
CABIN="$BUILD/cabin"
DIR="$BUILD/models"
mkdir -p "$DIR"
SHAPES=${BENCH_SHAPES:-"llama-1b smollm-135m"}
TYPES=${BENCH_TYPES:-"q4_0 q8_0 f16"}
THREADS=${BENCH_THREADS:-2}
VOCAB=""
[ -f ../shared/ref/models/llama-bpe-d64-F16.gguf ] && VOCAB="--vocab-from ../shared/ref/models/llama-bpe-d64-F16.gguf"
for shape in $SHAPES; do
    for type in $TYPES; do
        [ "$shape" = smollm-135m ] && [ "$type" != q4_0 ] && continue
        m="$DIR/$shape-$type.gguf"
        [ -f "$m" ] || "$CABIN" make-model -o "$m" --shape "$shape" --type "$type" $VOCAB
        echo "== $shape $type: $CABIN bench -m $m -t $THREADS -p 64 -n 32 -r 3"
        "$CABIN" bench -m "$m" -t "$THREADS" -p 64 -n 32 -r 3
    done
done
