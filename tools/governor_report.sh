#!/bin/sh
# The governor on a Llama-3.2-1B-shaped model (docs/GOVERNOR.md, "The governor"):
#   sh tools/governor_report.sh [BUILD] [OUT]
# 1. makes the F16 model if OUT has none (random weights; --embd-scale 0.02 spreads the output
#    distribution so that KL means something),
# 2. measures F16 and Q4_0 decode in the same run and sets the target halfway between them,
# 3. runs the governor in a headless scene (one long reply) and saves its trace and final plan,
# 4. scores the final plan and uniform Q4_0 against F16 (KL, top-1) on a text the sensitivity
#    order never saw (README.md), and checks that the target was reached within 4·M tokens of
#    the first reading and held after.
# Speeds move with the machine's load: the figures mean something only as ratios in one run.
set -e
B=${1:-build}
OUT=${2:-/tmp/cabin-governor}
CABIN="$B/cabin"
mkdir -p "$OUT"
M="$OUT/1b-f16.gguf"
EVERY=16
[ -f "$M" ] || "$CABIN" make-model -o "$M" --shape llama-1b --type f16 --embd-scale 0.02 \
    --vocab-from ../shared/ref/models/llama-bpe-d64-F16.gguf
tg() { "$CABIN" bench -m "$M" -t 2 -p 16 -n 32 -r 1 "$@" | awk -F'|' '$2 ~ /tg32/ { gsub(/ /, "", $4); print $4 }'; }
echo "\$ $CABIN bench -m $M -t 2 -p 16 -n 32 -r 1 [--precision q4_0]"
F16=$(tg)
Q4=$(tg --precision q4_0)
TARGET=$(awk -v a="$F16" -v b="$Q4" 'BEGIN { printf "%.1f", (a + b) / 2 }')
echo "decode: F16 $F16 tok/s, Q4_0 $Q4 tok/s -> target tps>=$TARGET"
cat >"$OUT/governor-1b.scene" <<EOF
seed 1
governor tps>=$TARGET every=$EVERY
say Tell me a long story about a car that drives across the whole country at night, town after town.
governor
governor log
governor log $OUT/trace.json
governor plot $OUT/governor-trace.svg
plan save $OUT/final-plan.json
expect metric gov_changes > 0
expect metric gov_lowered > 0
expect metric gov_lowered < 112
EOF
echo "\$ $CABIN scene $OUT/governor-1b.scene -m $M -t 2 -n 320 --speed 0 --check"
"$CABIN" scene "$OUT/governor-1b.scene" -m "$M" -t 2 -n 320 --speed 0 --check >"$OUT/scene.out" || echo "the scene failed (exit $?): see $OUT/scene.out"
grep -a 'governor' "$OUT/scene.out"
PPL="-m $M -t 2 -f README.md --window 128 --chunks 4"
echo "\$ $CABIN ppl $PPL --save-base $OUT/base.bin   (then --precision P --kl-base $OUT/base.bin)"
"$CABIN" ppl $PPL --save-base "$OUT/base.bin" >"$OUT/ppl-f16.out" 2>&1
"$CABIN" ppl $PPL --precision "$OUT/final-plan.json" --kl-base "$OUT/base.bin" >"$OUT/ppl-final.out" 2>&1
"$CABIN" ppl $PPL --precision q4_0 --kl-base "$OUT/base.bin" >"$OUT/ppl-q4.out" 2>&1
echo "final plan:   $(grep -i 'kl' "$OUT/ppl-final.out" | head -2 | tr '\n' ' ')"
echo "uniform Q4_0: $(grep -i 'kl' "$OUT/ppl-q4.out" | head -2 | tr '\n' ' ')"
python3 - "$OUT/trace.json" "$TARGET" "$EVERY" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); target = float(sys.argv[2]); every = int(sys.argv[3])
rows = d["readings"]           # [token, tok_ms, tps, watts, jpt, kl, pos, bytes]
first = next(r[0] for r in rows if r[2] is not None)
# reached: the first reading at or above the target; held: the share of readings at or above
# it from 4·M tokens after the first reading on
reached = next((r[0] for r in rows if r[2] is not None and r[2] >= target), None)
later = [r[2] for r in rows if r[2] is not None and r[0] >= first + 4 * every]
held = sum(x >= target for x in later) / len(later) if later else 0
changes = [(x["token"], x["action"], x["from"], x["to"]) for x in d["decisions"]]
checks = d["drift_checks"]
print(f"first reading at token {first}; target reached at token {reached} "
      f"({'within' if reached is not None and reached - first <= 4 * every else 'NOT within'} 4*M = {4 * every} tokens of it); "
      f"{100 * held:.0f}% of the {len(later)} readings from token {first + 4 * every} on at or above it")
print(f"changes {changes}")
if checks:
    print(f"drift checks: {len(checks)}, KL {min(c['kl'] for c in checks):.3g}..{max(c['kl'] for c in checks):.3g}, "
          f"{sum(c['ms'] for c in checks) / len(checks):.0f} ms each for {sum(c['tokens_scored'] for c in checks) / len(checks):.0f} tokens scored")
PY
