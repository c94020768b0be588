#!/bin/sh
# `cabin logits --backend vulkan` and `cabin generate --backend vulkan --temp 0 --ids` against
# the reference outputs in ../shared/ref (the same tolerances and greedy rule as the CPU; on
# lavapipe where there is no GPU).
BUILD=${1:-build}
if ! "$BUILD/cabin" devices 2>/dev/null | grep -q '^vulkan devices:'; then
    echo "skipped: this cabin has no Vulkan backend (built with VULKAN=0)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
if ! "$BUILD/cabin" devices >/dev/null 2>&1; then
    echo "skipped: no Vulkan device ($BUILD/cabin devices failed)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
# Under AddressSanitizer the first case of each file: every file's weight type, shapes and
# architecture still go through the device path; the plain build compares every case.
grep -q __asan_init "$BUILD/cabin" && export CABIN_REF_CASES=1
exec python3 tests/ref_cli.py "$BUILD/cabin" --backend vulkan
