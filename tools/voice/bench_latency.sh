#!/bin/sh
# Voice latency benchmark (a command, not a test): the held-out test commands of
# tools/voice/make_test_audio.py spoken through `cabin voice` with the embedded model, replies
# spoken to a WAV file; prints the p50/p90 table of `cabin voice --stats` (times from the end of
# speech: the VAD's end, which stands for push-to-talk release) and, with --json FILE, writes it.
#
# usage: tools/voice/bench_latency.sh [BUILD] [--n N] [--runs R] [--json FILE] [--model M]
#          [--busy] [--realtime] [-- CABIN-VOICE-OPTIONS...]
#   BUILD: build folder with cabin (default build); N commands (default 16); R runs, the table
#   is over all their turns (default 1); each run is a fresh process, and its first turn is
#   also reported on its own (the median over runs). --busy: two `yes > /dev/null` at normal
#   priority on the cores for the whole run (started and stopped here); --realtime: the WAV is
#   read at the wall clock's pace, as a microphone delivers it.
BUILD=build
N=16; RUNS=1; JSON=""; MODEL=assets/models/cabin-tiny.gguf; BUSY=0; EXTRA=""
while [ $# -gt 0 ]; do
    case "$1" in
        --n) N=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --json) JSON=$2; shift 2 ;;
        --model) MODEL=$2; shift 2 ;;
        --busy) BUSY=1; shift ;;
        --realtime) EXTRA="$EXTRA --realtime"; shift ;;
        --) shift; EXTRA="$EXTRA $*"; break ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) BUILD=$1; shift ;;
    esac
done
CABIN="$BUILD/cabin"
[ -x "$CABIN" ] || { echo "bench_latency: $CABIN not built (make BUILD=$BUILD)"; exit 1; }
[ -f "$MODEL" ] || { echo "bench_latency: no model $MODEL"; exit 1; }
T=$(mktemp -d /tmp/cabin-vlat-XXXXXX)
HOGS=""
stop_hogs() { [ -n "$HOGS" ] && kill $HOGS 2>/dev/null; HOGS=""; }
trap 'stop_hogs; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
/usr/bin/python3 tools/voice/make_test_audio.py --out "$T" --n "$N" >/dev/null || exit 1
if [ "$BUSY" = 1 ]; then
    for i in 1 2; do yes >/dev/null & HOGS="$HOGS $!"; done
fi
: >"$T/all.out"
: >"$T/first.out"
r=1
while [ $r -le "$RUNS" ]; do
    # shellcheck disable=SC2086
    "$CABIN" voice -m "$MODEL" --temp 0 -n 48 --audio-in "$T/clean.wav" --audio-out "$T/reply.wav" \
        --fresh-turns --stats $EXTRA >"$T/run$r.out" 2>&1 || { tail -n 3 "$T/run$r.out"; exit 1; }
    grep '^latency turn' "$T/run$r.out" >>"$T/all.out"
    grep '^latency turn 1:' "$T/run$r.out" >>"$T/first.out"
    r=$((r + 1))
done
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
stop_hogs
echo "cabin voice latency: $N held-out commands x $RUNS run(s), $(nproc) cores, load $LOAD$([ "$BUSY" = 1 ] && echo ', busy: two yes > /dev/null')${EXTRA:+, options:$EXTRA}"
echo "model: $MODEL; $(grep '^cabin voice —' "$T/run1.out" | sed 's/^cabin voice — //')"
grep -h '^voice ready in' "$T"/run*.out | sed 's/ (.*//' | tr '\n' ';' | sed 's/;$/\n/'
grep -h '^cabin voice: threads' "$T"/run*.out | head -n 1
/usr/bin/python3 - "$T/all.out" "$JSON" "$T/first.out" <<'EOF'
import json, math, re, sys, statistics
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
first = []
for line in open(sys.argv[3]):
    m = re.search(r"first audio played (-?[0-9.]+)", line)
    if m: first.append(float(m.group(1)))
if first:
    med = statistics.median(first)
    p50 = out["first audio played"]["p50"]
    out["first turn TTFA"] = {"median": med, "runs": first, "over_p50": med / p50 if p50 > 0 else float("nan")}
    print("first turn of each run, TTFA: %s ms; median %.0f ms = %.2fx the p50" % (
        " / ".join("%.0f" % x for x in first), med, out["first turn TTFA"]["over_p50"]))
if sys.argv[2]:
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
EOF
