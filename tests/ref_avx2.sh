#!/bin/sh
# ../shared/ref through the AVX2 kernel table, the one machines without AVX-512 (most laptops)
# run: test_model_ref and tests/ref_cli.py again with CABIN_KERNELS=avx2. Only where this
# processor also runs AVX-512 (elsewhere the other reference suites already run the AVX2 table,
# or it cannot run here).
BUILD=${1:-build}
TINY=assets/models/cabin-tiny.gguf
runs() { "$BUILD/cabin" generate --kernels "$1" -m "$TINY" -p hi -n 1 >/dev/null 2>&1; }
if ! runs avx512 || ! runs avx2; then
    echo "skipped: this processor does not run both the AVX-512 and the AVX2 tables: the other reference suites cover its table"
    echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
export CABIN_KERNELS=avx2
# Under AddressSanitizer the first case of each file through the CLI (every file's kernels still
# run); the plain build compares every case
grep -q __asan_init "$BUILD/cabin" && export CABIN_REF_CASES=1
T=$(mktemp -d /tmp/cabin-ref-avx2-XXXXXX)
trap 'rm -rf "$T"' EXIT
"$BUILD/tests/test_model_ref" >"$T/model_ref" 2>&1
python3 tests/ref_cli.py "$BUILD/cabin" >"$T/ref_cli" 2>&1
p=0; f=0; s=0
for out in "$T/model_ref" "$T/ref_cli"; do
    line=$(tail -n 1 "$out")
    case "$line" in
    *passed*failed*)
        grep '^skipped:' "$out"
        p=$((p + $(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')))
        n=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
        k=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
        f=$((f + n)); s=$((s + ${k:-0}))
        [ "$n" -gt 0 ] && grep -E "FAIL" "$out" | head -n 20 ;;
    *) echo "$(basename "$out") under avx2: no result line"; tail -n 5 "$out"; f=$((f + 1)) ;;
    esac
done
if [ "$s" -gt 0 ]; then echo "$p passed, $f failed, $s skipped"; else echo "$p passed, $f failed"; fi
[ "$f" -eq 0 ]
