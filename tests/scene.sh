#!/bin/sh
# Scenes: malformed scenes are refused before anything runs, with FILE:LINE; a scene is
# deterministic (same scene and seed, same transcript); expectations count and --check stops.
TAG=scene; . "$(dirname "$0")/lib.sh"

"$CABIN" make-model -o "$T/m.gguf" --type q8_0 --dim 64 --ffn 128 --vocab 400 >/dev/null || bad "make-model"

# refused: each case is a scene whose first line would write a file if anything ran
check_refused() {   # NAME EXPECTED-TEXT-IN-ERROR LINE-NO
    name=$1; want=$2; line=$3
    rm -f "$T/ran.txt"
    "$CABIN" scene "$T/$name.scene" -m "$T/m.gguf" --speed 0 >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "$name.scene:$line: " "$T/err" && grep -q -- "$want" "$T/err" \
       && [ "$(wc -l <"$T/err")" = 1 ] && [ ! -e "$T/ran.txt" ]; then ok
    else bad "$name: wanted one line with '$name.scene:$line:' and '$want', nothing run (rc $rc):"; cat "$T/err"; fi
}
printf 'snapshot %s/ran.txt\nsay hello\nfrobnicate now\n' "$T" >"$T/unknown.scene"
check_refused unknown "unknown command 'frobnicate'" 3
printf 'snapshot %s/ran.txt\nexpect reply /a(b/\n' "$T" >"$T/badre.scene"
check_refused badre "bad regex" 2
# patterns that glibc would compile into gigabytes or for minutes, or recurse on past the stack,
# are refused first
printf 'snapshot %s/ran.txt\nexpect reply /(x{32767}){32767}/\n' "$T" >"$T/bigre.scene"
check_refused bigre "refused: its repeats expand past 2048 nodes" 2
printf 'snapshot %s/ran.txt\nexpect reply /%s/\n' "$T" "$(awk 'BEGIN { s = "a"; for (i = 0; i < 24; i++) s = "(" s ")+"; print s }')" \
    >"$T/plusre.scene"
check_refused plusre "refused: its repeats expand past" 2
printf 'snapshot %s/ran.txt\nexpect reply /%s/\n' "$T" "$(awk 'BEGIN { for (i = 0; i < 5000; i++) printf "("; printf "a"; for (i = 0; i < 5000; i++) printf ")" }')" \
    >"$T/deepre.scene"
check_refused deepre "refused: groups nested more than 32 deep" 2
printf 'snapshot %s/ran.txt\nexpect reply /(()*|()*){100}/\n' "$T" >"$T/emptyre.scene"
check_refused emptyre "refused: a repeat of something that can match nothing" 2
printf 'snapshot %s/ran.txt\nexpect reply /(a*)\\1/\n' "$T" >"$T/backre.scene"
check_refused backre "refused: a back-reference" 2
printf 'snapshot %s/ran.txt\nsay "unterminated\n' "$T" >"$T/quote.scene"
check_refused quote "unterminated quote" 2
printf 'snapshot %s/ran.txt\ninclude loop2.scene\n' "$T" >"$T/loop.scene"
printf '# the other half of the loop\ninclude loop.scene\n' >"$T/loop2.scene"
check_refused loop "include loop" 2
printf 'snapshot %s/ran.txt\n\n# a comment\nmodel %s/nope.gguf\n' "$T" "$T" >"$T/missing.scene"
check_refused missing "file not found" 4
printf 'snapshot %s/ran.txt\nexpect metric speed_of_light > 1\n' "$T" >"$T/metric.scene"
check_refused metric "unknown metric" 2
printf 'snapshot %s/ran.txt\nexpect state climate.colour=red\n' "$T" >"$T/state.scene"
check_refused state "unknown vehicle field" 2
printf 'snapshot %s/ran.txt\nprecision q4_0:layers=0-3,ffn_middle\n' "$T" >"$T/prec.scene"
check_refused prec "ffn_middle" 2
# a comment glued to the name ends the line there: "expect#reply ." has no arguments
printf 'snapshot %s/ran.txt\nexpect#reply .\n' "$T" >"$T/glued.scene"
check_refused glued "expect: wrong number of arguments" 2
printf 'snapshot %s/ran.txt\nexpect replyx /a/\n' "$T" >"$T/replyx.scene"
check_refused replyx "expect" 2
printf 'snapshot %s/ran.txt\nclear\n' "$T" >"$T/front.scene"   # a row of the table the workbench alone offers
check_refused front "clear: not offered in scene files" 2
"$CABIN" scene "$T/nonexistent.scene" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "nonexistent.scene" "$T/err" && ok || bad "missing scene file"

# a check that checks nothing fails, before anything runs
: >"$T/empty.scene"
printf 'snapshot %s/ran.txt\nsay hi\n' "$T" >"$T/noexpect.scene"
for name in empty noexpect; do
    rm -f "$T/ran.txt"
    "$CABIN" scene "$T/$name.scene" -m "$T/m.gguf" --speed 0 --check >"$T/out" 2>"$T/err"; rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "$name.scene: --check, but the scene has no expect line" "$T/err" &&
        [ ! -e "$T/ran.txt" ] && ! grep -q "0 passed" "$T/out" && ok || { bad "$name scene under --check should fail with one line"; cat "$T/err" "$T/out"; }
done
"$CABIN" scene "$T/empty.scene" -m "$T/m.gguf" --speed 0 >"$T/out" 2>"$T/err" && ok || bad "an empty scene plays without --check"

# a scene that runs: expectations pass and fail as they should, and it is deterministic
cat >"$T/good.scene" <<EOS
# comments and blank lines are fine

seed 7
set temp 0.8
note a caption
say "eta oin shr"   # the reply is random text from random weights
expect metric gen_tokens > 0
expect metric n_past > 3
expect state climate.driver_temp=21
precision q4_0
expect metric weight_bytes < 1e9
say eta
stats
snapshot $T/snap.txt
EOS
"$CABIN" scene "$T/good.scene" -m "$T/m.gguf" --speed 0 --no-timestamps -n 12 >"$T/run1" 2>&1; rc=$?
[ $rc = 0 ] && tail -1 "$T/run1" | grep -q "^4 passed, 0 failed" && ok || { bad "good scene"; cat "$T/run1"; }
[ -s "$T/snap.txt" ] && grep -q "note: a caption" "$T/snap.txt" && ok || bad "snapshot written"
"$CABIN" scene "$T/good.scene" -m "$T/m.gguf" --speed 0 --no-timestamps -n 12 >"$T/run2" 2>&1
grep -av "stats:" "$T/run1" >"$T/r1"; grep -av "stats:" "$T/run2" >"$T/r2"
cmp -s "$T/r1" "$T/r2" && ok || { bad "the same scene and seed give the same transcript"; diff "$T/r1" "$T/r2" | head; }
# timestamps on: identical apart from the timing fields
"$CABIN" scene "$T/good.scene" -m "$T/m.gguf" --speed 0 -n 12 | grep -av "stats:" | sed 's/^\[ *[0-9.]*\] //' >"$T/r3"
cmp -s "$T/r1" "$T/r3" && ok || { bad "timestamps aside, the same transcript"; diff "$T/r1" "$T/r3" | head; }
printf 'say eta\nexpect metric gen_tokens < 0\nnote after the failure\n' >"$T/fails.scene"
"$CABIN" scene "$T/fails.scene" -m "$T/m.gguf" --speed 0 -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "after the failure" "$T/out" && tail -1 "$T/out" | grep -q "0 passed, 1 failed" && ok || { bad "failed expect counted"; cat "$T/out" "$T/err"; }
"$CABIN" scene "$T/fails.scene" -m "$T/m.gguf" --speed 0 -n 4 --check >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 1 ] && ! grep -q "after the failure" "$T/out" && grep -q "fails.scene:2: expected metric gen_tokens < 0, got gen_tokens = " "$T/err" && ok || { bad "--check stops at the first failure"; cat "$T/out" "$T/err"; }
# a line of text longer than the argument limit: say and note read their text whole; a command
# with a fixed count still says it has too many
printf 'note one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen\nsay please tell me a long story about a car that drives across the whole country at night town after town\n' >"$T/long.scene"
"$CABIN" scene "$T/long.scene" -m "$T/m.gguf" --speed 0 -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "note: one two .* seventeen eighteen$" "$T/out" && grep -q "you: please tell me .* town after town$" "$T/out" && ok || { bad "long say/note lines"; cat "$T/out" "$T/err"; }
printf 'seed 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n' >"$T/many.scene"
"$CABIN" scene "$T/many.scene" -m "$T/m.gguf" --speed 0 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "many.scene:1: seed: too many arguments (usage: seed N)" "$T/err" && ok || { bad "too many arguments"; cat "$T/err"; }
# limits before anything is allocated for them: a line past 64 KiB, a file past 4 MiB
awk 'BEGIN { printf "say "; for (i = 0; i < 70000; i++) printf "a"; print "" }' >"$T/longline.scene"
"$CABIN" scene "$T/longline.scene" -m "$T/m.gguf" --speed 0 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "longline.scene:1: a line of 70004 bytes, longer than a scene line may be (64 KiB)" "$T/err" && ok || { bad "a line past the limit"; cat "$T/err"; }
awk 'BEGIN { for (i = 0; i < 90000; i++) print "note a caption of some fifty bytes to fill the file" }' >"$T/big.scene"
"$CABIN" scene "$T/big.scene" -m "$T/m.gguf" --speed 0 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "big.scene: [0-9]* bytes, more than a scene may hold (4 MiB with its includes)" "$T/err" && ok || { bad "a file past the limit"; cat "$T/err"; }

test_finish
