#!/bin/sh
# cabin compare end to end on the embedded model: a plan against itself gives KL 0 and the same
# replies, the JSON parses with every field, f32 against q4_0 gives KL > 0, the plot is SVG, and
# bad input (a bad plan, no prompts for another model, an unreadable prompts file) gives one line.
TAG=compare; . "$(dirname "$0")/lib.sh"
MODEL=assets/models/cabin-tiny.gguf
if ! [ -f "$MODEL" ]; then
    echo "skipped: $MODEL is missing (make model)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
RUN="$CABIN compare -m $MODEL -t 2 --seed 7 -n 12 --limit 3"

# a plan against itself: KL exactly 0, top-1 100%, every reply the same
expect_rc 0 "compare q8_0 with itself" -- $RUN --a q8_0 --b q8_0 --assistant-limit 4
grep -q "^| metric" "$T/out" && grep -q "decode tok/s" "$T/out" && ok || bad "the summary table"
[ "$(grep -c '^| *[0-9] |' "$T/out")" = 3 ] && ok || bad "one table row per prompt"; 
grep -q "KL(A||B) on A's tokens: mean 0.000000, max 0.000000; top-1 agreement 100.0%" "$T/out" && ok || bad "self: KL 0 and top-1 100%"
grep -q "identical replies: 3 of 3" "$T/out" && ok || bad "self: identical replies"
grep -q "action exact-match on [0-9]* held-out turns: A \([0-9.]*\)%, B \1%" "$T/out" && ok || bad "self: the same exact-match"
# each metric row ends in a verdict; which one is not asked: the two sides' tok/s differ by
# chance and by where each session's memory landed, and at p < 0.05 a self-comparison is called
# significant one time in twenty even without that
[ "$(grep -c '^| \(decode tok/s\|J/token\).*| \(not significant\|[AB] better (p [0-9.e-]*)\|too few prompts to test\)$' "$T/out")" = 2 ] \
    && ok || bad "a verdict per metric"

# --json -: the JSON alone on stdout, with the fields scripts read
expect_rc 0 "compare --json -" -- $RUN --a q8_0 --b q8_0 --assistant-limit 0 --json -
if python3 - "$T/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["a"]["plan"] == "q8_0" and d["b"]["plan"] == "q8_0" and d["a"]["kv"] == "f16" and d["a"]["bytes"] > 0
assert len(d["prompts"]) == 3
for p in d["prompts"]:
    assert p["kl"] == 0 and p["top1"] == 1 and p["same"] and p["a"]["reply"] == p["b"]["reply"], p
    assert {"reply", "tps", "j_per_token"} <= set(p["a"]) and p["prompt"]
s = d["summary"]
assert s["kl_max"] == 0 and s["same"] == 3 and {"tps", "j_per_token"} <= set(s) and "p_t" in s["tps"] and "p_sign" in s["tps"]
PY
then ok; else bad "the JSON parses and has the fields (self: KL 0, same replies)"; fi

# f32 against q4_0 on a prompts file (blank and # lines skipped): KL > 0, B smaller; the plot
printf '# prompts\nturn up the heat\n\nplay some jazz\n' >"$T/prompts.txt"
expect_rc 0 "compare f32 q4_0" -- $RUN -f "$T/prompts.txt" --a f32 --b q4_0 --json "$T/c.json" --plot "$T/c.svg"
if python3 - "$T/c.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [p["prompt"] for p in d["prompts"]] == ["turn up the heat", "play some jazz"], d["prompts"]
assert d["summary"]["kl_mean"] > 0 and d["b"]["bytes"] < d["a"]["bytes"]
PY
then ok; else bad "f32 vs q4_0: KL > 0 and B smaller"; fi
python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$T/c.svg" && grep -q "KL(A||B)" "$T/c.svg" && ok || bad "the plot is SVG with the KL series"

# bad input: one line naming what is wrong
expect_rc 1 "a bad plan" -- $RUN --a q8_0 --b q5_frob
one_line_error "plan B (q5_frob)" "a bad plan"
"$CABIN" make-model -o "$T/other.gguf" --layers 1 --dim 32 >/dev/null 2>&1
expect_rc 1 "no -f on another model" -- "$CABIN" compare -m "$T/other.gguf" --a f32 --b q8_0
one_line_error "$T/other.gguf: not the embedded model: give the prompts with -f" "no prompts for another model"
expect_rc 1 "an unreadable prompts file" -- $RUN -f "$T/missing.txt" --a f32 --b q8_0
one_line_error "$T/missing.txt" "an unreadable prompts file"
printf '# only comments\n\n' >"$T/empty.txt"
expect_rc 1 "a prompts file with no prompts" -- $RUN -f "$T/empty.txt"
one_line_error "$T/empty.txt: no prompts" "an empty prompts file"
expect_rc 2 "a plot that cannot be written" -- $RUN --limit 1 --assistant-limit 0 --plot /nonexistent-dir/c.svg
grep -q "^cabin compare: option --plot: cannot write /nonexistent-dir/c.svg" "$T/err" && [ "$(wc -l <"$T/err")" = 1 ] && ok ||
    bad "the plot's path in the error, before the comparison runs"

# the command language: `compare q8_0 q4_0` in a scene compares the user turns said so far and
# the conversation goes on (scenes/compare.scene's expectations check the car after it)
expect_rc 0 "scenes/compare.scene" -- "$CABIN" scene scenes/compare.scene --headless --check --speed 0 -t 2 --no-timestamps
grep -q "^compare: q8_0 against q4_0 on 2 prompts" "$T/out" && grep -q "^|   1 | take me home " "$T/out" &&
    grep -q "^|   2 | play some music " "$T/out" && grep -q "^summary over 2 prompts" "$T/out" && ok ||
    bad "compare in a scene: the table over the user turns so far and the summary"
# chat's /compare: the turns said so far in chat, which goes on after it
printf 'take me home\n/compare q8_0 q8_0\nplay some music\n' >"$T/chat.in"
expect_rc 0 "chat /compare" -- sh -c "'$CABIN' chat -t 2 --seed 3 <'$T/chat.in'"
grep -q "^compare: q8_0 against q8_0 on 1 prompt$" "$T/out" && grep -q "^|   1 | take me home .* yes  |$" "$T/out" &&
    grep -q "^\[vehicle\] media.playing off -> on" "$T/out" && ok || { bad "chat /compare over the turn said, then the next turn"; cat "$T/out"; }
printf 'compare q8_0 q5_frob\n' >"$T/bad.scene"
expect_rc 2 "a scene with a bad plan" -- "$CABIN" scene "$T/bad.scene" --headless
grep -q "bad.scene:1: compare: plan B: " "$T/err" && ok || { bad "a bad plan in a scene names the line"; cat "$T/err"; }
test_finish
