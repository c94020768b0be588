#!/bin/sh
# Voice latency benchmark (a command, not a test): the held-out test commands of
# tools/voice/make_test_audio.py spoken through `cabin voice` with the embedded model, replies
# spoken to a WAV file; prints the p50/p90 table of `cabin voice --stats` (times from the end of
# speech: the VAD's end, which stands for push-to-talk release) and, with --json FILE, writes it.
#
# usage: tools/voice/bench_latency.sh [BUILD] [--n N] [--runs R] [--json FILE] [--model M]
#   BUILD: build folder with cabin (default build); N commands (default 16); R runs, the table
#   is over all their turns (default 1).
BUILD=build
N=16; RUNS=1; JSON=""; MODEL=assets/models/cabin-tiny.gguf
while [ $# -gt 0 ]; do
    case "$1" in
        --n) N=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --json) JSON=$2; shift 2 ;;
        --model) MODEL=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) BUILD=$1; shift ;;
    esac
done
CABIN="$BUILD/cabin"
[ -x "$CABIN" ] || { echo "bench_latency: $CABIN not built (make BUILD=$BUILD)"; exit 1; }
[ -f "$MODEL" ] || { echo "bench_latency: no model $MODEL"; exit 1; }
T=$(mktemp -d /tmp/cabin-vlat-XXXXXX)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 tools/voice/make_test_audio.py --out "$T" --n "$N" >/dev/null || exit 1
: >"$T/all.out"
r=1
while [ $r -le "$RUNS" ]; do
    "$CABIN" voice -m "$MODEL" --temp 0 -n 48 --audio-in "$T/clean.wav" --audio-out "$T/reply.wav" \
        --fresh-turns --stats >"$T/run$r.out" 2>&1 || { tail -n 3 "$T/run$r.out"; exit 1; }
    grep '^latency turn' "$T/run$r.out" >>"$T/all.out"
    r=$((r + 1))
done
echo "cabin voice latency: $N held-out commands x $RUNS run(s), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $MODEL; $(grep '^cabin voice —' "$T/run1.out" | sed 's/^cabin voice — //')"
/usr/bin/python3 - "$T/all.out" "$JSON" <<'EOF'
import json, math, re, sys
rows = [("end of speech -> final transcript", "transcript"), ("end of speech -> first token", "first token"),
        ("end of speech -> first audio written", "first audio written"),
        ("end of speech -> first audio played (TTFA)", "first audio played"),
        ("recognition real-time factor (CPU)", "RTF")]
vals = {k: [] for _, k in rows}
for line in open(sys.argv[1]):
    for _, k in rows:
        m = re.search(re.escape(k) + r" (-?[0-9.]+)", line)
        if m and float(m.group(1)) >= 0:
            vals[k].append(float(m.group(1)))
def pct(v, p):
    v = sorted(v)
    return v[max(0, math.ceil(p * len(v)) - 1)] if v else float("nan")
out = {}
print("%-44s %8s %8s %5s" % ("", "p50", "p90", "n"))
for name, k in rows:
    v = vals[k]
    out[k] = {"p50": pct(v, 0.5), "p90": pct(v, 0.9), "n": len(v)}
    print("%-44s %8.2f %8.2f %5d" % (name, out[k]["p50"], out[k]["p90"], len(v)))
if sys.argv[2]:
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
EOF
