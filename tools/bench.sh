#!/bin/sh
# make bench: cabin bench on generated random-weight models of real shapes (Llama-3.2-1B at
# Q4_0, Q8_0 and F16; SmolLM-135M at Q4_0), 2 threads, prompt 64, 32 generated, 3 repetitions;
# the 1B Q4_0 again with its weights read from the mapped file (--mmap).
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

# Weights read from the mapped file (--mmap) instead of the 2 MiB-page copy the CPU makes at load.
m="$DIR/llama-1b-q4_0.gguf"
if [ -f "$m" ]; then
    echo "== weights from the mapped file: $CABIN bench -m $m -t $THREADS -p 64 -n 32 -r 3 --mmap"
    "$CABIN" bench -m "$m" -t "$THREADS" -p 64 -n 32 -r 3 --mmap | grep -E '^\| (pp|tg)|^decode at'
fi

# The live precision switch: all weights of the 1B shape from F16 to Q4_0 (token embedding too).
m="$DIR/llama-1b-f16.gguf"
if [ -f "$m" ]; then
    echo "== switch: $CABIN bench -m $m -t $THREADS --switch \"q4_0;token_embd=q4_0\" -p 16 -n 4 -r 1"
    "$CABIN" bench -m "$m" -t "$THREADS" --switch "q4_0;token_embd=q4_0" -p 16 -n 4 -r 1 | grep '^switch'
fi

# Session stats against cabin bench: the decode tok/s a session reports (cabin sweep reads it,
# sampling included) and cabin bench's (forward passes only) at the same depth, 1 thread,
# 9 repetitions each, 3 alternating pairs. Short runs on a freshly started process are slower
# for the first second, hence 9 repetitions.
m="$DIR/mid-f16.gguf"
[ -f "$m" ] || "$CABIN" make-model -o "$m" --type f16 --dim 512 --ffn 1536 --vocab 1000 --layers 6 >/dev/null
echo "== session stats vs bench: $CABIN sweep -m $m --weights f16 -n 128 -r 9 -t 1 / $CABIN bench -p <same prompt> -n 128 -r 9 -t 1"
for pair in 1 2 3; do
    s=$("$CABIN" sweep -m "$m" --weights f16 -n 128 -r 9 -t 1 --tokens 128 --kl-ctx 64 --json - 2>/dev/null \
        | /usr/bin/python3 -c "import json,sys; p=json.load(sys.stdin)['points'][0]; print(p['prompt_tokens'], p['decode_tps'])")
    np=${s% *}
    b=$("$CABIN" bench -m "$m" -p "$np" -n 128 -r 9 -t 1 --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['decode_tps'])")
    echo "$b ${s#* }"
done | /usr/bin/python3 -c "
import statistics, sys
rows = [[float(x) for x in l.split()] for l in sys.stdin if l.strip()]
b = statistics.median(r[0] for r in rows); s = statistics.median(r[1] for r in rows)
print('decode tok/s  bench: %s (median %.1f)  session stats: %s (median %.1f)  -> %.1f%% apart (target 5%%)'
      % (' '.join('%.1f' % r[0] for r in rows), b, ' '.join('%.1f' % r[1] for r in rows), s, 100 * abs(s - b) / b))"

# Through cabin serve against cabin bench on the same model (tools/serve_bench.sh): a streamed
# completion's tok/s as the client sees it, rounds alternating with cabin bench.
if [ -x /usr/bin/python3 ]; then
    echo "== through cabin serve: sh tools/serve_bench.sh $BUILD \"\" 128 9 $THREADS"
    sh tools/serve_bench.sh "$BUILD" "" 128 9 "$THREADS" | tail -1
fi
