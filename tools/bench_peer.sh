#!/bin/sh
# cabin against the reference implementation's benchmark, side by side in one run:
#   sh tools/bench_peer.sh [BUILD] MODEL.gguf|TYPE [MODEL.gguf|TYPE ...]
# A TYPE (a weight type or preset `cabin quantize` takes: q4_0, q8_0, bf16, f16, Q4_K_M, Q5_K_M,
# IQ4_XS, Q3_K_M, ...) benchmarks the Llama-3.2-1B shape at that type, made the first time and
# kept in $BENCH_DIR (default $XDG_CACHE_HOME/cabin/bench): the F16 file from `cabin make-model
# --shape llama-1b --type f16 --vocab-from ../shared/ref/models/llama-bpe-d64-F16.gguf`, the
# others `cabin quantize`d from it (minutes each, once).
# For each file and kernel table, ROUNDS rounds (default 3) of `cabin bench` then `llama-bench`,
# the same prompt, generation, repetitions and threads (ARGS, default "-p 64 -n 32 -r 3 -t 2";
# CABIN_ARGS adds arguments for cabin alone), alternating so that both see the same machine;
# each round prints both, the ratios and the load average, then the medians over the rounds;
# at the end one table of the medians of every file and table. TABLES="avx512 avx2" runs both
# kernel tables, each beside its reference build: cabin's default table beside
# ../shared/peer/llama-bench (or $LLAMA_BENCH), `--kernels avx2` beside
# ../shared/peer/llama-bench-avx2 (or $LLAMA_BENCH_AVX2); without TABLES, cabin's default table
# beside $LLAMA_BENCH as before. A missing reference: cabin runs alone and says so. cabin's floor
# (the best bandwidth pass between its repetitions, docs/PERF.md) is printed beside its decode;
# a round whose percentage is flagged disturbed says so. Figures mean something only on a quiet
# machine (load average under 1) and only as ratios within the run.
B=${1:-build}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || { echo "usage: sh tools/bench_peer.sh [BUILD] MODEL.gguf|TYPE [MODEL.gguf|TYPE ...]" >&2; exit 2; }
CABIN="$B/cabin"
ROUNDS=${ROUNDS:-3}
ARGS=${ARGS:-"-p 64 -n 32 -r 3 -t 2"}
BENCH_DIR=${BENCH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cabin/bench}
[ -x "$CABIN" ] || { echo "tools/bench_peer.sh: $CABIN not built (make)" >&2; exit 2; }
T=$(mktemp -d /tmp/cabin-peer-XXXXXX)
trap 'rm -rf "$T"' EXIT
: >"$T/summary"

# model_for ARG: the file ARG, or the 1B file of type ARG (made once, into $BENCH_DIR).
model_for() {
    if [ -f "$1" ]; then echo "$1"; return 0; fi
    case "$1" in *.gguf) echo "tools/bench_peer.sh: $1: not found" >&2; return 1 ;; esac
    f16="$BENCH_DIR/llama1b-f16.gguf"
    out="$BENCH_DIR/llama1b-$(echo "$1" | tr 'A-Z' 'a-z').gguf"
    mkdir -p "$BENCH_DIR" || return 1
    if [ ! -f "$f16" ]; then
        echo "making $f16 (once)" >&2
        "$CABIN" make-model -o "$f16.part" --shape llama-1b --type f16 \
            --vocab-from ../shared/ref/models/llama-bpe-d64-F16.gguf >&2 && mv "$f16.part" "$f16" || return 1
    fi
    if [ ! -f "$out" ]; then
        echo "making $out (once)" >&2
        "$CABIN" quantize "$f16" "$out.part" "$1" >&2 && mv "$out.part" "$out" || return 1
    fi
    echo "$out"
}

# One file on one table: ROUNDS alternating rounds, each round's line, then the medians (also
# kept for the summary). $1 file, $2 table name, $3 the reference binary, $4 cabin's own args.
bench_one() {
    m=$1 table=$2 PEER=$3 CARGS=$4
    if [ ! -x "$PEER" ]; then
        echo "skipped: the reference benchmark: $PEER not found; cabin alone"
        PEER=""
    fi
    echo "## $m, $table table ($ARGS${CARGS:+, cabin $CARGS}, reference $(basename "${PEER:-none}"), $ROUNDS rounds)"
    echo "| round | load | cabin pp | ref pp | ratio | cabin tg | ref tg | ratio | cabin tg / floor |"
    echo "|---|---|---|---|---|---|---|---|---|"
    : >"$T/rounds"
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        # shellcheck disable=SC2086
        "$CABIN" bench -m "$m" $ARGS $CARGS --json "$T/cabin.json" >/dev/null 2>"$T/cabin.err" ||
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
    /usr/bin/python3 - "$T/rounds" "$(basename "$m" .gguf)" "$table" "$T/summary" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda i: statistics.median([r[i] for r in rows]) if all(r[i] is not None for r in rows) else None
rng = lambda a, b: ("%.2f-%.2f" % (min(r[a] / r[b] for r in rows), max(r[a] / r[b] for r in rows))
                    if all(r[a] and r[b] for r in rows) else "-")
cpp, rpp, ctg, rtg, pct = (med(i) for i in range(5))
fmt = lambda v, f: f % v if v is not None else "-"
ratio = lambda a, b: "%.2f" % (a / b) if a and b else "-"
print("| median | | %.1f | %s | %s | %.2f | %s | %s | %.0f%% |" % (cpp, fmt(rpp, "%.1f"), ratio(cpp, rpp), ctg,
      fmt(rtg, "%.2f"), ratio(ctg, rtg), pct))
with open(sys.argv[4], "a") as f:
    f.write("| %s | %s | %.1f | %s | %s (%s) | %.2f | %s | %s (%s) | %.0f%% |\n" % (
        sys.argv[2], sys.argv[3], cpp, fmt(rpp, "%.1f"), ratio(cpp, rpp), rng(0, 1), ctg, fmt(rtg, "%.2f"),
        ratio(ctg, rtg), rng(2, 3), pct))
PY
    echo
}

for a in "$@"; do
    m=$(model_for "$a") || exit 2
    if [ -z "${TABLES:-}" ]; then
        bench_one "$m" default "${LLAMA_BENCH:-../shared/peer/llama-bench}" "${CABIN_ARGS:-}"
        continue
    fi
    for table in $TABLES; do
        case "$table" in
        avx512) bench_one "$m" avx512 "${LLAMA_BENCH:-../shared/peer/llama-bench}" "--kernels avx512 ${CABIN_ARGS:-}" ;;
        avx2) bench_one "$m" avx2 "${LLAMA_BENCH_AVX2:-../shared/peer/llama-bench-avx2}" "--kernels avx2 ${CABIN_ARGS:-}" ;;
        *) echo "tools/bench_peer.sh: TABLES: $table is not avx512 or avx2" >&2; exit 2 ;;
        esac
    done
done
echo "## medians, every file and table ($ARGS, $ROUNDS rounds; ratio ranges over the rounds)"
echo "| file | table | cabin pp | ref pp | ratio (range) | cabin tg | ref tg | ratio (range) | cabin tg / floor |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$T/summary"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
