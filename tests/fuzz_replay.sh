#!/bin/sh
# The fuzz targets (fuzz/) without libFuzzer: each target's seed corpus (fuzz/seeds.sh) and its
# regression inputs (fuzz/regressions/TARGET/: inputs that once crashed it) through
# $BUILD/fuzz/replay_TARGET, built with the tests' compiler and flags (ASan and UBSan under make
# test-asan). One check per target: every input ran without a crash or a broken FUZZ_CHECK.
TAG=fuzz; . "$(dirname "$0")/lib.sh"
if ! sh fuzz/seeds.sh "$CABIN" "$T/seeds" >"$T/seeds.log" 2>&1; then
    bad "fuzz/seeds.sh: $(tail -1 "$T/seeds.log")"
fi
for src in fuzz/fuzz_*.c; do
    t=$(basename "$src" .c); t=${t#fuzz_}
    bin="$BUILD/fuzz/replay_$t"
    if [ ! -x "$bin" ]; then bad "$bin not built (make all builds it)"; continue; fi
    set -- "$T/seeds/$t"
    [ -d "fuzz/regressions/$t" ] && set -- "$@" "fuzz/regressions/$t"
    if "$bin" "$@" >"$T/out" 2>"$T/err"; then
        grep '^skipped:' "$T/err" | sort -u
        echo "$t: $(tail -1 "$T/out") ($(ls "fuzz/regressions/$t" 2>/dev/null | wc -l) regression inputs)"
        ok
    else
        bad "$t: an input crashed it or broke a check (the last lines name it):"
        tail -n 15 "$T/err"
    fi
done
test_finish
