#!/bin/sh
# The precision governor end to end on the embedded model (its decisions on a simulated machine
# are tests/test_governor.c): --governor on scene and chat, the command's forms and errors, the
# trace as JSON, the sensitivity order measured once and then read from the cache.
TAG=governor; . "$(dirname "$0")/lib.sh"
TINY=assets/models/cabin-tiny.gguf
if [ ! -f "$TINY" ]; then
    echo "skipped: $TINY is missing (make model)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
cat >"$T/kl.scene" <<SCENE
seed 1
set temp 0
say it's cold in here
say take me home
say play some music
expect metric gov_rollbacks > 0
governor log $T/trace.json
governor plot $T/trace.svg
precision q8_0
say open the sunroof
expect state sunroof=100
SCENE
expect_rc 0 "scene --governor with an impossible kl bound" -- "$CABIN" scene "$T/kl.scene" --speed 0 --check -t 1 \
    --governor "kl<=0 every=4 window=2"
if grep -q 'governor: measuring the sensitivity order once' "$T/out" && grep -q 'sensitivity order cached in' "$T/out" \
    && grep -q 'governor: kl<=0 over 28 tensors' "$T/out"; then ok; else bad "the first run measures and caches the order"; cat "$T/out"; fi
if grep -q 'governor: rollback [0-9]* -> 0 of 28 tensors.*KL .* > 0' "$T/out"; then ok; else bad "the rollback is said"; cat "$T/out"; fi
if grep -q 'governor: off (the plan was set by hand' "$T/out"; then ok; else bad "a plan set by hand stops the governor"; fi
if grep -q 'vehicle: sunroof 0 -> 100' "$T/out"; then ok; else bad "the conversation goes on after the rollback"; fi
skip_without_system_python
/usr/bin/python3 - "$T/trace.json" >"$T/py" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["target"] == "kl<=0" and d["metric"] == "kl" and d["tensors"] == 28, d["target"]
assert d["bytes_source"] > d["bytes_bottom"] > 0
acts = [x["action"] for x in d["decisions"]]
assert acts[0] == "lower" and "rollback" in acts, acts
lower = d["decisions"][0]
assert len(lower["tensors"]) == lower["to"] - lower["from"] and lower["tensors"][0].startswith("blk."), lower
assert lower["bytes_to"] < lower["bytes_from"]
assert any(c["kl"] > 0 for c in d["drift_checks"]), d["drift_checks"]
# the shadow's rows line up with the captured ones: three of the least sensitive tensors at
# Q4_0 barely move the distribution (a row off by one position would disagree on most tokens)
assert all(c["kl"] < 1e-3 and c["top1"] >= 0.9 for c in d["drift_checks"]), d["drift_checks"]
assert len(d["readings"]) > 10 and all(len(r) == 8 for r in d["readings"])
print("ok")
PY
if grep -qx ok "$T/py"; then ok; else bad "the trace JSON"; cat "$T/py"; fi
# the trace drawn: the readings with MiB per token, and the drift checks' KL with the bound
if grep -q "governor: trace drawn in $T/trace.svg and $T/trace-kl.svg" "$T/out" && /usr/bin/python3 -c '
import sys, xml.dom.minidom
for p, words in ((sys.argv[1], ("decode tok/s", "MiB per token")), (sys.argv[2], ("KL (nats per token)", "kl bound", "top-1"))):
    text = open(p).read(); xml.dom.minidom.parseString(text)
    assert all(w in text for w in words), (p, words)
' "$T/trace.svg" "$T/trace-kl.svg"; then ok; else bad "governor plot"; grep 'trace drawn' "$T/out"; fi
# the second run reads the order from the cache
expect_rc 0 "the cached order" -- "$CABIN" scene "$T/kl.scene" --speed 0 --check -t 1 --governor "kl<=0 every=4 window=2"
if grep -q 'governor: sensitivity order from .*heatmaps/cabin-tiny.gguf-[0-9a-f]*.json' "$T/out" && ! grep -q measuring "$T/out"; then ok
else bad "the second run should read the cached order"; grep governor "$T/out" | head -3; fi
# a conversation reset mid-loop: the drift guard drops what it captured of the old one
printf 'seed 1\nset temp 0\ngovernor kl<=0.01 every=4 window=2 drift_every=4\nsay it is cold in here\nsay take me home\nreset\nsay play some music\nsay open the sunroof\nexpect state sunroof=100\ngovernor log %s\n' "$T/reset.json" >"$T/reset.scene"
expect_rc 0 "a reset while the governor runs" -- "$CABIN" scene "$T/reset.scene" --speed 0 --check -t 1
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=[c["token"] for c in d["drift_checks"]]; assert len(t) >= 2 and all(c["top1"] >= 0.9 for c in d["drift_checks"]), d["drift_checks"]' "$T/reset.json" \
    && ok || bad "drift checks go on after a reset"
# chat: --governor and /governor
printf 'hello\n/governor\n/governor log\n/governor off\n/governor\n' >"$T/in"
expect_rc 0 "chat --governor" -- sh -c "'$CABIN' chat -t 1 -n 12 --temp 0 --governor 'tps>=1000000 every=4 window=2 drift=off' <'$T/in'"
if grep -q 'governor tps>=1000000: 28/28 at Q4_0' "$T/out" && grep -q 'token [0-9]*: lower 0 -> 28' "$T/out" \
    && grep -q 'governor: off (asked' "$T/out" && grep -qx 'governor: off' "$T/out"; then ok
else bad "chat's /governor forms"; cat "$T/out"; fi
# voice: --governor on spoken turns (a WAV file through the pipeline)
if cabin_has_audio; then
    expect_rc 0 "voice --governor" -- "$CABIN" voice -t 1 --temp 0 -n 48 --audio-in assets/audio/set-temperature-22.wav \
        --no-audio-out --governor 'tps>=1000000 every=4 window=2 drift=off'
    if grep -q 'governor: lower 0 -> 28 of 28' "$T/out" && grep -q 'vehicle: climate.driver_temp 21 -> 22' "$T/out"; then ok
    else bad "voice --governor"; cat "$T/out"; fi
else
    skip=$((skip + 1)); echo "skipped: voice --governor: $CABIN was built without audio (make AUDIO=1)"
fi
# errors: one line, naming what is wrong
printf 'say hi\n' >"$T/hi.scene"
expect_rc 2 "a bad --governor" -- "$CABIN" scene "$T/hi.scene" --speed 0 -t 1 --governor "speed>=3"
one_line_error "'speed>=3' is not a target" "--governor speed>=3"
printf 'seed 1\ngovernor tps<=3\n' >"$T/bad.scene"
expect_rc 2 "a bad governor line" -- "$CABIN" scene "$T/bad.scene" --speed 0 -t 1
one_line_error "bad.scene:2: governor: 'tps<=3': tps takes >=" "governor tps<=3 in a scene"
printf 'governor plot x.svg\n' >"$T/offplot.scene"
expect_rc 1 "governor plot while off" -- "$CABIN" scene "$T/offplot.scene" --speed 0 -t 1
if grep -q 'offplot.scene:1: governor plot: the governor is off' "$T/err"; then ok; else bad "governor plot while off"; cat "$T/err"; fi
printf 'governor log\n' >"$T/off.scene"
expect_rc 1 "governor log while off" -- "$CABIN" scene "$T/off.scene" --speed 0 -t 1
if grep -q 'off.scene:1: governor log: the governor is off' "$T/err"; then ok; else bad "governor log while off"; cat "$T/err"; fi
# The sensitivity order is measured against the file's own precision whatever plan is in force
# when the governor first starts, so a run that starts it under q4_0 caches the same order as a
# fresh one; and a cache entry is used only for what it was made for.
printf 'precision q4_0\nsay hi\ngovernor tps>=100000\n' >"$T/q4first.scene"
XDG_CACHE_HOME="$T/c1" "$CABIN" scene "$T/q4first.scene" --speed 0 -t 1 >/dev/null 2>&1
for c in c1 c2; do
    XDG_CACHE_HOME="$T/$c" "$CABIN" scene scenes/governor.scene --check --speed 0 -t 1 >"$T/$c.out" 2>&1 || bad "governor.scene with cache $c"
    grep -o 'token 2: lower.*' "$T/$c.out" | head -1 | sed 's/.*\[/[/' >"$T/$c.order"
done
[ -s "$T/c2.order" ] && cmp -s "$T/c1.order" "$T/c2.order" && ok ||
    bad "the order cached under q4_0 differs from a fresh one: $(cat "$T/c1.order") vs $(cat "$T/c2.order")"
grep -q 'sensitivity order from' "$T/c1.out" && ok || bad "the second run reads the cached order"
entry=$(ls "$T"/c1/cabin/heatmaps/*.json | head -1)
sed -i 's/"cache_key":[^,}]*/"cache_key": "another model"/' "$entry"
XDG_CACHE_HOME="$T/c1" "$CABIN" scene scenes/governor.scene --check --speed 0 -t 1 >"$T/c3.out" 2>&1
grep -q 'not using the cached order: .*made for something else' "$T/c3.out" && grep -q 'measuring the sensitivity order' "$T/c3.out" &&
    ok || { bad "a cache entry made for something else is not used"; grep governor "$T/c3.out" | head -3; }
/usr/bin/python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["cells"]=d["cells"][:5]; json.dump(d, open(p, "w"))' "$entry"
XDG_CACHE_HOME="$T/c1" "$CABIN" scene scenes/governor.scene --check --speed 0 -t 1 >"$T/c4.out" 2>&1
grep -q 'not using the cached order' "$T/c4.out" && ok || { bad "an incomplete cache entry is not used"; grep governor "$T/c4.out" | head -3; }
test_finish
