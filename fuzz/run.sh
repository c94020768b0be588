#!/bin/sh
# make fuzz: builds the fuzz targets with clang and libFuzzer, then runs each on a copy of its seed
# corpus (fuzz/seeds.sh) and its regression inputs, for SECONDS, or for RUNS inputs when RUNS is
# given: a number for every target, or a file of "TARGET RUNS" lines (fuzz/ci-runs.txt). With a
# count and a fixed SEED a run repeats on any machine, which is what .ci/run wants. It prints libFuzzer's final figures per target (executions per second, coverage: edges
# "cov" and features "ft", corpus size). SEED 0 lets libFuzzer draw one. A crash (or a leak, a
# timeout past 10 s, more than 2 GiB) fails the run; its input is minimised into
# fuzz/regressions/TARGET/, where make test replays it (tests/fuzz_replay.sh).
# Usage: fuzz/run.sh SECONDS RUNS SEED FUZZ_BUILD CABIN FUZZ_CC "MAKE COMMAND THAT BUILDS THE TARGETS"
SECONDS_EACH=$1; RUNS=$2; SEED=$3; FB=$4; CABIN=$5; FCC=$6; BUILD_CMD=$7
case "$SECONDS_EACH" in ''|*[!0-9]*) echo "make fuzz: FUZZ_SECONDS=$SECONDS_EACH: a whole number of seconds" >&2; exit 2 ;; esac
if [ -n "$RUNS" ] && [ ! -f "$RUNS" ]; then
    case "$RUNS" in *[!0-9]*) echo "make fuzz: FUZZ_RUNS=$RUNS: a whole number of inputs, or a file of TARGET RUNS lines" >&2; exit 2 ;; esac
fi
case "$SEED" in ''|*[!0-9]*) echo "make fuzz: FUZZ_SEED=$SEED: a whole number (0: libFuzzer draws one)" >&2; exit 2 ;; esac
# runs_for TARGET: the number of inputs for TARGET (empty: run for SECONDS)
runs_for() {
    if [ -f "$RUNS" ]; then
        n=$(awk -v t="$1" '$1 == t { print $2 }' "$RUNS")
        case "$n" in ''|*[!0-9]*) echo "make fuzz: $RUNS: no whole number of runs for target $1" >&2; exit 2 ;; esac
        echo "$n"
    else
        echo "$RUNS"
    fi
}
probe=$(mktemp -d /tmp/cabin-fuzz-probe-XXXXXX)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! command -v "$FCC" >/dev/null 2>&1; then
    echo "skipped: make fuzz: $FCC not found (apt-get install clang libfuzzer-14-dev; tools/debian-packages.txt, group tests)"
    exit 0
fi
if ! "$FCC" -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1; then
    echo "skipped: make fuzz: $FCC cannot link libFuzzer (apt-get install libfuzzer-14-dev): $(head -1 "$probe/log")"
    exit 0
fi
sh -c "$BUILD_CMD" || { echo "make fuzz: building the targets failed" >&2; exit 1; }
sh fuzz/seeds.sh "$CABIN" "$FB/seeds" || { echo "make fuzz: making the seed corpora failed" >&2; exit 1; }
FB=$(cd "$FB" && pwd)   # absolute: a target may change directory (fuzz_scene works in a temporary one)
failed=""
for src in fuzz/fuzz_*.c; do
    t=$(basename "$src" .c); t=${t#fuzz_}
    n=$(runs_for "$t") || exit 2
    if [ -n "$n" ]; then budget="-runs=$n"; span="$n runs"; else budget="-max_total_time=$SECONDS_EACH"; span="${SECONDS_EACH}s"; fi
    corpus="$FB/corpus/$t"; crashes="$FB/crashes/$t"; log="$FB/logs/$t.log"
    rm -rf "$corpus" "$crashes"; mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    cp "$FB/seeds/$t/"* "$corpus/" 2>/dev/null
    cp "fuzz/regressions/$t/"* "$corpus/" 2>/dev/null   # every regression input runs first, under ASan
    "$FB/fuzz/fuzz_$t" "$budget" -seed="$SEED" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1
    rc=$?
    grep '^skipped:' "$log" | sort -u
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    execs=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$log")
    runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log")
    cov=$(printf '%s' "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(printf '%s' "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(printf '%s' "$done_line" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
    printf '%-14s %8s execs/s %10s runs   cov %6s   ft %6s   corpus %5s   (%s, seed %s, exit %d)\n' \
        "$t" "${execs:-?}" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$span" "$SEED" "$rc"
    if [ "$rc" -ne 0 ]; then
        failed="$failed $t"
        grep -E 'ERROR: |SUMMARY: |runtime error|FUZZ_CHECK|: Assertion|abort' "$log" | head -5
        for c in "$crashes"/*; do
            [ -f "$c" ] || continue
            mkdir -p "fuzz/regressions/$t"
            out="$(pwd)/fuzz/regressions/$t/$(basename "$c")"
            # libFuzzer's own time limit is checked between its child runs, which an out-of-memory
            # input makes long: timeout bounds the whole minimisation
            timeout -k 10 120 "$FB/fuzz/fuzz_$t" -minimize_crash=1 -runs=20000 -max_total_time=60 \
                -exact_artifact_path="$out" "$c" >"$log.min" 2>&1 || true
            [ -f "$out" ] || cp "$c" "$out"
            echo "  input kept as $out ($(wc -c <"$out") bytes; full log $log)"
        done
    fi
done
if [ -n "$failed" ]; then echo "make fuzz: failed:$failed"; exit 1; fi
if [ -f "$RUNS" ]; then span="the runs of $RUNS"; fi
echo "make fuzz: every target ran $span (seed $SEED) without a crash"
