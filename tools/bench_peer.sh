#!/bin/sh
# cabin against the reference implementation's benchmark, side by side in one run:
#   sh tools/bench_peer.sh [BUILD] MODEL.gguf [MODEL.gguf ...]
# For each file, ROUNDS rounds (default 3) of `cabin bench` then `llama-bench`, the same prompt,
# generation, repetitions and threads (ARGS, default "-p 64 -n 32 -r 3 -t 2"; CABIN_ARGS adds
# arguments for cabin alone, e.g. "--kernels avx2" beside LLAMA_BENCH=...llama-bench-avx2), alternating so
# that both see the same machine; each round prints both, the ratios and the load average, then
# the medians over the rounds. The reference is ../shared/peer/llama-bench, or $LLAMA_BENCH;
# without it cabin runs alone and says so. cabin's floor (the best bandwidth pass between its
# repetitions, docs/PERF.md) is printed beside its decode; a round whose percentage is flagged
# disturbed says so. Figures mean something only on a quiet machine (load average under 1) and
# only as ratios within the run.
B=${1:-build}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || { echo "usage: sh tools/bench_peer.sh [BUILD] MODEL.gguf [MODEL.gguf ...]" >&2; exit 2; }
CABIN="$B/cabin"
PEER=${LLAMA_BENCH:-../shared/peer/llama-bench}
ROUNDS=${ROUNDS:-3}
ARGS=${ARGS:-"-p 64 -n 32 -r 3 -t 2"}
[ -x "$CABIN" ] || { echo "tools/bench_peer.sh: $CABIN not built (make)" >&2; exit 2; }
if [ ! -x "$PEER" ]; then
    echo "skipped: the reference benchmark: $PEER not found (LLAMA_BENCH=PATH names another); cabin alone"
    PEER=""
fi
T=$(mktemp -d /tmp/cabin-peer-XXXXXX)
trap 'rm -rf "$T"' EXIT
for m in "$@"; do
    [ -f "$m" ] || { echo "tools/bench_peer.sh: $m: not found" >&2; exit 2; }
    echo "## $m ($ARGS${CABIN_ARGS:+, cabin $CABIN_ARGS}, reference $(basename "${PEER:-none}"), $ROUNDS rounds)"
    echo "| round | load | cabin pp | ref pp | ratio | cabin tg | ref tg | ratio | cabin tg / floor |"
    echo "|---|---|---|---|---|---|---|---|---|"
    : >"$T/rounds"
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        # shellcheck disable=SC2086
        "$CABIN" bench -m "$m" $ARGS ${CABIN_ARGS:-} --json "$T/cabin.json" >/dev/null 2>"$T/cabin.err" ||
            { echo "cabin bench failed: $(tail -1 "$T/cabin.err")" >&2; exit 1; }
        if [ -n "$PEER" ]; then
            # shellcheck disable=SC2086
            "$PEER" -m "$m" $ARGS -o json >"$T/peer.json" 2>"$T/peer.err" ||
                { echo "llama-bench failed: $(tail -1 "$T/peer.err")" >&2; exit 1; }
        else
            echo "[]" >"$T/peer.json"
        fi
        /usr/bin/python3 - "$T/cabin.json" "$T/peer.json" "$r" "$load" "$T/rounds" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); peer = json.load(open(sys.argv[2]))
pp = next((x["avg_ts"] for x in peer if x["n_prompt"] > 0 and x["n_gen"] == 0), None)
tg = next((x["avg_ts"] for x in peer if x["n_gen"] > 0 and x["n_prompt"] == 0), None)
ratio = lambda a, b: "%.2f" % (a / b) if b else "-"
num = lambda v, f: f % v if v is not None else "-"
floor = "%.0f%%%s" % (c["decode_pct_of_ceiling"], " (disturbed)" if c["disturbed"] else
                      " (in cache)" if c["cache_resident"] else "")
print("| %s | %s | %.1f | %s | %s | %.2f | %s | %s | %s |" % (sys.argv[3], sys.argv[4], c["prefill_tps"],
      num(pp, "%.1f"), ratio(c["prefill_tps"], pp), c["decode_tps"], num(tg, "%.2f"), ratio(c["decode_tps"], tg), floor))
with open(sys.argv[5], "a") as f:
    f.write(json.dumps([c["prefill_tps"], pp, c["decode_tps"], tg, c["decode_pct_of_ceiling"]]) + "\n")
PY
        r=$((r + 1))
    done
    /usr/bin/python3 - "$T/rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda i: statistics.median([r[i] for r in rows]) if all(r[i] is not None for r in rows) else None
cpp, rpp, ctg, rtg, pct = (med(i) for i in range(5))
fmt = lambda v, f: f % v if v is not None else "-"
ratio = lambda a, b: "%.2f" % (a / b) if a and b else "-"
print("| median | | %.1f | %s | %s | %.2f | %s | %s | %.0f%% |" % (cpp, fmt(rpp, "%.1f"), ratio(cpp, rpp), ctg,
      fmt(rtg, "%.2f"), ratio(ctg, rtg), pct))
PY
    echo
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
