#!/bin/sh
# Faults from outside while cabin runs: what the user sees, and that nothing crashes.
#  - the model file truncated on disk while its weights are read from the mapping (--mmap): the
#    next turn fails with one line naming the file (reading past the new end would be SIGBUS),
#    and chat goes on to the end of its input
TAG=faults; . "$(dirname "$0")/lib.sh"
TINY=assets/models/cabin-tiny.gguf
if [ ! -f "$TINY" ]; then
    echo "skipped: $TINY is missing (make model)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
cp "$TINY" "$T/m.gguf"
size=$(stat -c %s "$T/m.gguf")
mkfifo "$T/in"
"$CABIN" chat -m "$T/m.gguf" --mmap -t 1 -n 48 --temp 0 <"$T/in" >"$T/out" 2>"$T/err" &
pid=$!
trap "" PIPE   # a write after chat is gone fails instead of ending this script
exec 3>"$T/in"
echo "it's cold in here" >&3
i=0; while [ $i -lt 300 ] && ! grep -q '^\[vehicle\]' "$T/out"; do sleep 0.1; i=$((i + 1)); done
truncate -s 4096 "$T/m.gguf"
echo "take me home" >&3
echo "/stats" >&3
exec 3>&-
wait $pid; rc=$?
if [ $rc -ne 135 ] && [ $rc -lt 128 ]; then ok; else bad "chat died (exit $rc) after the model file was truncated"; fi
if grep -q "m.gguf: the file shrank on disk ($size -> 4096 bytes) while in use; reopen the model" "$T/err"; then ok
else bad "the truncated file is named"; cat "$T/err"; fi
if grep -q '^\[action\] climate' "$T/out"; then ok; else bad "the first turn answered"; cat "$T/out"; fi
test_finish
