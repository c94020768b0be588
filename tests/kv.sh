#!/bin/sh
# KV cache from the command line (docs/KV.md): `cabin info --kv` sizes, `cabin bench --kv --depth`,
# a generation far past the context under an eviction policy with a q4 cache, and one clear line
# for bad --kv / --kv-policy values.
TAG=kv; . "$(dirname "$0")/lib.sh"

# the llama-1b attention shape (8 kv heads of 64: kv_dim 512), 2 small layers, context 4096
expect_rc 0 "make-model" -- "$CABIN" make-model -o "$T/m.gguf" --dim 512 --layers 2 --heads 8 --kv-heads 8 \
    --ffn 256 --vocab 300 --ctx 4096
expect_rc 0 "info --kv" -- "$CABIN" info --kv "$T/m.gguf"
for f in f32 f16 q8 q4; do
    grep -q "| $f " "$T/out" && ok || bad "info --kv lists $f"
done
# the last column is the ratio to f16 at 4096 tokens (recent windows included)
r=$(awk -F'|' '$2 ~ /^ *q4 *$/ { gsub(/[ x]/, "", $7); print $7 }' "$T/out")
if [ -n "$r" ] && awk -v r="$r" 'BEGIN { exit !(r >= 3.5) }'; then ok
else bad "q4 cache at 4096 tokens should be >= 3.5x smaller than f16, got '$r'"; cat "$T/out"; fi
r8=$(awk -F'|' '$2 ~ /^ *q8 *$/ { gsub(/[ x]/, "", $7); print $7 }' "$T/out")
if [ -n "$r8" ] && awk -v r="$r8" 'BEGIN { exit !(r >= 1.85) }'; then ok
else bad "q8 cache at 4096 tokens should be >= 1.85x smaller than f16, got '$r8'"; fi
expect_rc 0 "info --meta" -- "$CABIN" info --meta "$T/m.gguf"
grep -q "general.architecture" "$T/out" && ok || bad "info --meta prints the metadata keys"

# bench at a depth
expect_rc 0 "bench --kv q4 --depth 64" -- "$CABIN" bench -m "$T/m.gguf" --backend cpu -t 2 --kv q4 --depth 64 -n 4 -r 1
grep -q "tg4 @ d64" "$T/out" && grep -q "| q4 " "$T/out" && ok || { bad "bench table names the depth and format"; cat "$T/out"; }
expect_rc 0 "bench --json" -- "$CABIN" bench -m "$T/m.gguf" --backend cpu -t 2 --kv q8 --kv-policy window:48 --depth 40 -n 4 -r 1 --json
/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert (j['kv_format'], j['depth'], j['kv_policy']) == ('q8', 40, 'window:48')" "$T/out" 2>/dev/null && ok \
    || { bad "bench --json names the format, policy and depth"; cat "$T/out"; }

# past the context with a window policy on a q4 cache
expect_rc 0 "generate -c 64 --kv q4 --kv-policy window:48 -n 300" -- "$CABIN" generate -m "$T/m.gguf" --backend cpu -t 2 \
    -c 64 --kv q4 --kv-policy window:48 -n 300 --ignore-eos --ids --temp 0 -p "hello"
n=$(wc -w <"$T/out")
[ "$n" -ge 300 ] && ok || bad "300 tokens generated past a context of 64 (got $n ids)"
# policy none stops at the context with one line
expect_rc 1 "generate -c 64 -n 300 (policy none)" -- "$CABIN" generate -m "$T/m.gguf" --backend cpu -t 2 \
    -c 64 --kv q4 -n 300 --ignore-eos --ids --temp 0 -p "hello"
grep -q "context full" "$T/err" && ok || { bad "policy none stops with 'context full'"; cat "$T/err"; }

# a file with sliding-window layers and its own rotations (../shared/ref's Gemma 3, a window of 8)
# past the context under each eviction policy, q4 and q8 caches, on every backend, its window
# layers in rings of 8 + 7 slots (-b 8): runs, and decodes as far as asked
G=../shared/ref/next/models/gemma3-d256-Q4_K_M.gguf
if [ -f "$G" ]; then
    for be in cpu vulkan; do
        "$CABIN" devices 2>/dev/null | grep -q "^ *$be " || { echo "skipped: $be: not in this build"; skip=$((skip + 1)); continue; }
        for pol in window:40 h2o:40 entropy:40; do
            for f in q4 q8; do
                expect_rc 0 "gemma3 $be --kv $f --kv-policy $pol past the context" -- "$CABIN" generate -m "$G" --backend $be \
                    -t 2 -c 48 -b 8 --kv $f --kv-policy $pol -n 120 --ignore-eos --ids --temp 0 -p "the window slides along"
                n=$(wc -w <"$T/out")
                [ "$n" -ge 120 ] && ok || bad "gemma3 $be $f $pol: 120 tokens past a context of 48 (got $n ids)"
            done
        done
    done
    # bench --depth names the rings and counts their bytes: 5 window layers of 8 + 31 slots and
    # one whole layer of 1024, K and V of 64 f16 channels each
    expect_rc 0 "gemma3 bench --depth 600 -b 32 --json" -- "$CABIN" bench -m "$G" --backend cpu -t 2 -c 1024 -b 32 \
        --depth 600 -n 2 -r 1 --json
    /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); want=(5 * 39 + 1024) * 2 * 64 * 2; \
assert (j['kv_ring_layers'], j['kv_ring_slots'], j['kv_bytes']) == (5, 39, want), (j['kv_ring_layers'], j['kv_ring_slots'], j['kv_bytes'], want)" \
        "$T/out" 2>"$T/err" && ok || bad "gemma3 bench --json: rings and bytes: $(tail -1 "$T/err")"
    "$CABIN" bench -m "$G" --backend cpu -t 2 -c 1024 -b 32 --depth 64 -n 2 -r 1 2>&1 | grep -q "5 of 6 layers slide a window: rings of 39 slots" \
        && ok || bad "gemma3 bench: the kv cache line names the rings"
else
    echo "skipped: ../shared/ref not present: no Gemma 3 file for the eviction runs"; skip=$((skip + 1))
fi

# bad values: one clear line each
"$CABIN" generate -m "$T/m.gguf" --backend cpu --kv q5 -n 2 -p hi >"$T/out" 2>"$T/err"; rc=$?
one_line_error "kv format 'q5'" "--kv q5"
"$CABIN" generate -m "$T/m.gguf" --backend cpu --kv-policy lru:5 -n 2 -p hi >"$T/out" 2>"$T/err"; rc=$?
one_line_error "lru:5" "--kv-policy lru:5"
"$CABIN" generate -m "$T/m.gguf" --backend cpu --kv-policy window:x -n 2 -p hi >"$T/out" 2>"$T/err"; rc=$?
one_line_error "window:x" "--kv-policy window:x"
"$CABIN" bench -m "$T/m.gguf" --backend cpu --depth -3 >"$T/out" 2>"$T/err"; rc=$?
one_line_error "depth" "bench --depth -3"
"$CABIN" info --kv "$T/nonexistent.gguf" >"$T/out" 2>"$T/err"; rc=$?
one_line_error "nonexistent" "info --kv on a missing file"

test_finish
