#!/bin/sh
# The window (cabin gui) under Xvfb: a scene on the embedded model takes PNG snapshots before and
# after a reply, after live precision switches (uniform q4_0, then q8_0 on layer 0), with the
# heat map computed, and with text typed in the input line; tests/gui_check.py checks them by
# pixels: the conversation changed after the turn, every precision grid cell has its type's
# colour (the palette from `cabin gui --print-palette`, ui/palette.c), the heat map's cells hold
# both ends of the colour scale, the input line changed when text was typed (and not before).
# Hold-to-talk: Space held and released (xdotool) with a WAV recording as the microphone makes a
# spoken turn. Also: no display gives one line and exit 2; a PNG snapshot where there is no window says it
# needs one. Snapshots are kept in $GUI_SHOTS (default: none) for docs/images/.
TAG=gui; . "$(dirname "$0")/lib.sh"
MODEL=assets/models/cabin-tiny.gguf
skip_all() { echo "skipped: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
grep -q 'SDL=1' "$BUILD/features" 2>/dev/null || skip_all "$CABIN was built without the window (make SDL=1; needs libsdl2-dev libsdl2-ttf-dev)"
command -v xvfb-run >/dev/null 2>&1 || skip_all "xvfb-run is not installed (Debian: xvfb xauth)"
[ -f "$MODEL" ] || skip_all "the embedded model $MODEL is not there (make model)"
CHECK="python3 $(dirname "$0")/gui_check.py"

# no display: one line naming why, exit 2 (before any model is opened)
expect_rc 2 "gui without a display" -- env -u DISPLAY -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER "$CABIN" gui
one_line_error "no display" "gui without a display"
# a PNG snapshot where there is no window: headless scene says it needs the window
printf 'model %s\nsnapshot %s/x.png\n' "$(pwd)/$MODEL" "$T" >"$T/headless.scene"
expect_rc 1 "headless snapshot FILE.png" -- "$CABIN" scene "$T/headless.scene"
grep -q "needs \`cabin gui\`" "$T/err" && ! [ -e "$T/x.png" ] && ok || { bad "headless snapshot x.png: $(cat "$T/err")"; }

"$CABIN" gui --print-palette >"$T/palette" && grep -q '^type Q4_0 ' "$T/palette" && grep -q '^heat 1 ' "$T/palette" && ok \
    || bad "gui --print-palette: $(head -3 "$T/palette")"

S=$T/shots
mkdir -p "$S"
cat >"$T/gui.scene" <<SCENE
model $(pwd)/$MODEL
seed 1
set temp 0
snapshot $S/0-start.png
say set the driver side to twenty one degrees
snapshot $S/1-reply.png
precision q4_0
say and the passenger side too
snapshot $S/2-q4_0.png
precision "q4_0;q8_0:layers=0"
say turn on the seat heating
snapshot $S/3-mixed.png
heatmap q4_0
snapshot $S/4-heatmap.png
type open the sunroof please
snapshot $S/5-typed.png
SCENE
# software rendering: the same pixels on every machine's Xvfb. Under ASan (make test-asan) leaks
# are not looked for in this run: SDL's D-Bus connection and the X11 libraries it loads and
# unloads leave blocks LeakSanitizer reports in frames it cannot name, none of them cabin's.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" SDL_RENDER_DRIVER=software timeout 120 xvfb-run -a -s "-screen 0 1400x900x24" \
    "$CABIN" gui --size 1280x800 --no-voice --scene "$T/gui.scene" --exit-after-scene >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] && ok || { bad "cabin gui --scene: exit $rc"; tail -5 "$T/err"; }
for f in 0-start 1-reply 2-q4_0 3-mixed 4-heatmap 5-typed; do
    [ -s "$S/$f.png" ] && ok || bad "snapshot $f.png was not written"
done
check() { if out=$($CHECK "$@"); then ok; else bad "gui_check $*: $out"; fi; }
check differ "$S/0-start.png" "$S/1-reply.png" chat 0.005
check grid "$S/2-q4_0.png" "$T/palette" '*=q4_0'
check grid "$S/3-mixed.png" "$T/palette" '*=q4_0' '0=q8_0'
# the checker is not blind: the mixed plan is not all q4_0
if $CHECK grid "$S/3-mixed.png" "$T/palette" '*=q4_0' >/dev/null; then bad "gui_check grid passes a wrong plan"; else ok; fi
check heat "$S/4-heatmap.png" "$T/palette"
# at the default 1280x800 every panel is drawn, a heat map shown too (plots shrink first)
check panels "$S/4-heatmap.png" precision heatmap latency power vehicle voice
check panels "$S/1-reply.png" precision heatmap latency power vehicle voice
check same "$S/3-mixed.png" "$S/4-heatmap.png" input
check differ "$S/4-heatmap.png" "$S/5-typed.png" input 0.002

# ---- hold-to-talk: Space held 4.4 s (xdotool) with a WAV recording as the microphone, then
# released: the key-down and key-up reach the voice glue (ui_session_talk_hold -> tvoice_ptt), the
# recording is recognised and becomes the user's turn, the reply is spoken into a WAV, and the
# held Space types nothing into the input line ----
WAV=assets/audio/set-temperature-22.wav
if ! command -v xdotool >/dev/null 2>&1; then
    echo "skipped: xdotool is not installed (Debian: xdotool): the hold-to-talk part"; skip=$((skip + 1))
elif ! cabin_has_audio; then
    echo "skipped: $CABIN was built without audio (make AUDIO=1): the hold-to-talk part"; skip=$((skip + 1))
elif ! [ -f "$WAV" ] || ! [ -f assets/asr/cabin.lm ]; then
    echo "skipped: $WAV or the recogniser's assets are missing: the hold-to-talk part"; skip=$((skip + 1))
else
    printf 'model %s\nwait 9000\nsnapshot %s/6-voice.png\n' "$(pwd)/$MODEL" "$S" >"$T/voice.scene"
    cat >"$T/voice.sh" <<VOICE
"$CABIN" gui --size 1280x800 -n 48 --temp 0 -t 1 --audio-in "$(pwd)/$WAV" --audio-out "$T/reply.wav" \
    --scene "$T/voice.scene" --exit-after-scene 2>"$T/voice.err" &
p=\$!
sleep 2.5
xdotool mousemove 640 400 keydown space sleep 4.4 keyup space
wait \$p
VOICE
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" SDL_RENDER_DRIVER=software timeout 120 \
        xvfb-run -a -s "-screen 0 1280x800x24" sh "$T/voice.sh" && ok || { bad "cabin gui, hold-to-talk: exit status"; tail -3 "$T/voice.err"; }
    heard=$(python3 -c "
import json; m=json.load(open('$T/state/cabin/workbench-autosave.json'))['messages']
print(next((x['text'] for x in m if x['role'] == 'user'), ''))" 2>/dev/null)
    [ -n "$heard" ] && ok || bad "hold-to-talk: no spoken user turn in the transcript"
    python3 -c "
import wave,sys; w=wave.open('$T/reply.wav'); sys.exit(0 if w.getnframes() > w.getframerate()//10 else 1)" 2>/dev/null \
        && ok || bad "hold-to-talk: reply.wav has no speech"
    check same "$S/0-start.png" "$S/6-voice.png" input
fi
[ -n "$GUI_SHOTS" ] && mkdir -p "$GUI_SHOTS" && cp "$S"/*.png "$GUI_SHOTS"/
test_finish
