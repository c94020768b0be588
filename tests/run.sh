#!/bin/sh
# Runs every test binary and every tests/*.sh script (tests/lib.sh is their shared start); each
# prints a closing line "N passed, N failed[, N skipped]". Prints each one's line with its exit
# status and seconds (where a run's time goes), then the totals the same way, and fails if any
# failed.
BUILD=${1:-build}
export CABIN_BIN="$BUILD/cabin"
total_p=0; total_f=0; total_s=0; bad=""
run_one() {
    name=$1; shift
    t0=$(date +%s)
    out=$("$@" 2>&1); rc=$?
    secs=$(($(date +%s) - t0))
    last=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$last" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(printf '%s' "$last" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    s=$(printf '%s' "$last" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
    [ -z "$p" ] && p=0; [ -z "$f" ] && f=0; [ -z "$s" ] && s=0
    if [ -z "$last" ] || [ $rc -ne 0 ]; then
        [ "$f" = 0 ] && f=1
        bad="$bad $name"
        printf '%s\n' "$out" | tail -n 40
    else
        printf '%s\n' "$out" | grep -E '^skipped:' || true
    fi
    printf '%-28s %s (exit %d, %d s)\n' "$name" "${last:-no result line}" $rc "$secs"
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
}
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/*.sh; do
    [ "$t" = tests/run.sh ] && continue
    [ "$t" = tests/lib.sh ] && continue   # sourced by the others
    [ -f "$t" ] || continue
    run_one "$(basename "$t")" sh "$t" "$BUILD"
done
[ -n "$bad" ] && echo "failed:$bad"
if [ "$total_s" -gt 0 ]; then
    echo "$total_p passed, $total_f failed, $total_s skipped"
else
    echo "$total_p passed, $total_f failed"
fi
[ "$total_f" -eq 0 ]
