#!/bin/sh
# The workbench, driven for real in tmux: a message and its reply, precision switched with F2 and
# with `:precision`, the grid checked against the session's plan (through :save) and the plan's
# KL vs the file measured aside, help, resize 120x40 -> 80x24, push-to-talk (F5 twice) with a
# WAV recording as the microphone and the reply spoken into a WAV, `:voice FILE`, a capture
# device that is not there, a scene played with --tui, the workbench serving its session over HTTP
# (--serve: requests shown as turns, its state and commands, a client that left while its turn
# waited, a port in use), and every captured screen checked for
# garbage (escape sequences, '^[' , lines wider than the terminal). Screens are kept in
# $TUI_SHOTS (default: none) for docs/WORKBENCH.md.
TAG=tui; . "$(dirname "$0")/lib.sh"
CABIN="$(pwd)/$BUILD/cabin"   # absolute: tmux starts it
if ! command -v tmux >/dev/null 2>&1; then
    echo "skipped: tmux is not installed (the workbench test drives the binary in tmux)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
S=cabin-tui-$$
TMUX_TMPDIR=$T; export TMUX_TMPDIR      # a private tmux server
trap 'tmux kill-server 2>/dev/null; rm -rf "$T"' EXIT
# A session that lives for the whole test keeps the server up: killing the last session makes the
# server exit, and a new-session racing that exit fails with "server exited unexpectedly".
tmux new-session -d -s keepalive -x 20 -y 5 "sleep 3600"
"$CABIN" make-model -o "$T/m.gguf" --type q8_0 --dim 64 --ffn 128 --vocab 400 >/dev/null || bad "make-model"
# A cabin built without audio (make AUDIO=0) says so where voice would start ("voice off: ...").
if cabin_has_audio; then VOICE_OFF="voice off: audio"; else VOICE_OFF="voice off: built without audio (make AUDIO=1)"; fi

cap() { tmux capture-pane -t "$S" -p; }
# wait_until SECONDS COMMAND...: polls the screen into $T/screen until COMMAND succeeds on one
# capture. A screen the workbench draws in several writes may be caught half drawn (its title
# before its body), so what must show together is waited for together.
wait_until() {
    lim=$(( $1 * 10 )); shift; i=0
    while [ $i -lt $lim ]; do
        cap >"$T/screen" 2>/dev/null
        "$@" && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
# shows TEXT...: every TEXT (a fixed string) is on the last capture
shows() { for want in "$@"; do grep -qF -- "$want" "$T/screen" || return 1; done; }
# wait_for TEXT [SECONDS]: until TEXT shows (10 s)
wait_for() { wait_until "${2:-10}" shows "$1"; }
# wait_for_all SECONDS TEXT...: until every TEXT shows in one capture
wait_for_all() { secs=$1; shift; wait_until "$secs" shows "$@"; }
# the screen has no escape sequences, no '^[' and no line wider than $1 columns
clean() {
    cap >"$T/screen"
    python3 - "$T/screen" "$1" <<'EOF' || return 1
import sys
w = int(sys.argv[2])
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
bad = [l for l in text.split("\n") if len(l) > w or "\x1b" in l or "^[" in l or "\ufffd" in l]
if bad:
    print("garbage:", repr(bad[0])); sys.exit(1)
EOF
}
shot() { [ -n "$TUI_SHOTS" ] && mkdir -p "$TUI_SHOTS" && cap >"$TUI_SHOTS/$1.txt"; return 0; }
grid_rows() { grep -cE "^│.*│ +[0-9]+ +($1 ){6}$1 " "$T/screen"; }   # layer rows all of type $1

start() {   # COLS ROWS MODEL ARGS...
    c=$1; r=$2; m=$3; shift 3
    tmux kill-session -t "$S" 2>/dev/null
    tmux new-session -d -s "$S" -x "$c" -y "$r" \
        "XDG_STATE_HOME=$T/state LANG=C.UTF-8 LC_ALL=C.UTF-8 '$CABIN' -m '$m' $* 2>'$T/stderr'; echo \$? >'$T/rc'; sleep 60"
}

# ---- 120x40 with the generated model ----
rm -f "$T/rc"
start 120 40 "$T/m.gguf" -n 24 --seed 3 -t 1
wait_for "type a message" 15 && ok || { bad "the workbench did not start"; cat "$T/stderr"; }
wait_for "Precision" 2 && ok || bad "no precision panel at 120x40"
grep -q "plan as in file" "$T/screen" && [ "$(grid_rows q8)" = 2 ] && ok || bad "grid: want 2 layers of q8 (the file's plan)"
wait_for "KL 0 (the file's precision)" 5 && ok || bad "the file's own plan should show KL 0"
clean 120 && ok || bad "garbage on the first screen"
# Tab completes from the command table, the workbench's own commands included, each once
tmux send-keys -t "$S" ":sa" Tab Tab
wait_for "› :save" 3 && ok || bad ":sa Tab Tab: want :save after :say"
tmux send-keys -t "$S" Tab
wait_for "› :say" 3 && ok || bad ":sa Tab Tab Tab: back to :say (save offered once)"
tmux send-keys -t "$S" C-u
tmux send-keys -t "$S" "hello there" Enter
wait_for "decode" 15 && ok || bad "no reply figures after a message"
sleep 0.5; cap >"$T/screen"
grep -qE "cabin › .{3,}" "$T/screen" && ok || bad "no reply text"
grep -qE "TTFT [0-9]+ ms" "$T/screen" && grep -qE "decode [0-9.]+ tok/s" "$T/screen" && grep -qE "[0-9.]+ W now" "$T/screen" \
    && ok || bad "latency/power figures missing"
hw=$(grep -oE "(cpu [0-9.]+(/[0-9.]+)? GHz|clock, throttling)[^│]*" "$T/screen" | head -1)
[ -n "$hw" ] && ! echo "$hw" | grep -q '?' && ok || bad "no hardware line (or a '?' in it) in the power panel at 40 rows: $hw"
kv1=$(grep -oE "KV [0-9]+/[0-9]+" "$T/screen" | head -n 1)
clean 120 && ok || bad "garbage after a reply"
shot reply-120x40
# F2: q8_0 -> q4_0, live
tmux send-keys -t "$S" F2
wait_for "precision: now q4_0" 10 && ok || bad "F2 did not switch to q4_0"
sleep 0.3; cap >"$T/screen"
[ "$(grid_rows q4)" = 2 ] && grep -q "plan q4_0" "$T/screen" && ok || bad "grid not all q4 after F2"
# until the figure exists the panel says what it waits for, never a bare "measuring…"
grep -qE "KL vs file: (waits for idle|window [0-9]+/[0-9]+) |top-1" "$T/screen" &&
    ! grep -q "measuring…" "$T/screen" && ok || { bad "the KL line says what it waits for"; grep "KL" "$T/screen"; }
# the plan's KL vs the file, measured aside between turns
KLRE="KL [0-9]+(\.[0-9]+)?(e-[0-9]+)?  top-1 [0-9.]+%"
wait_until 30 eval 'grep -qF "top-1" "$T/screen" && grep -qE "$KLRE" "$T/screen"' && ok || bad "no KL / top-1 for q4_0"
kl_q4=$(grep -oE "$KLRE" "$T/screen" | head -n 1)
# :precision q8_0 through the command language
tmux send-keys -t "$S" ":precision q8_0" Enter
wait_for "precision: now q8_0" 10 && ok || bad ":precision q8_0 did not switch"
sleep 0.3; cap >"$T/screen"
[ "$(grid_rows q8)" = 2 ] && grep -q "plan q8_0" "$T/screen" && ok || bad "grid not all q8 after :precision"
wait_for "top-1" 30; kl_q8=$(grep -oE "$KLRE" "$T/screen" | head -n 1)
[ -n "$kl_q8" ] && [ "$kl_q8" != "$kl_q4" ] && ok || bad "KL for q8_0 ($kl_q8) not measured apart from q4_0 ($kl_q4)"
# the second turn moves the figures on
tmux send-keys -t "$S" "and again" Enter
wait_for "and again" 5; sleep 1.5; cap >"$T/screen"
kv2=$(grep -oE "KV [0-9]+/[0-9]+" "$T/screen" | head -n 1)
[ -n "$kv1" ] && [ "$kv1" != "$kv2" ] && ok || bad "KV figure did not change ($kv1 -> $kv2)"
# an error names what was typed, not a file position; :snapshot says where it wrote
tmux send-keys -t "$S" ":precision q9" Enter
wait_for "! precision:" 5 && ! grep -q "command line" "$T/screen" && ok || { bad "a typed command's error starts with the command"; grep '!' "$T/screen"; }
tmux send-keys -t "$S" ":snapshot $T/shot.txt" Enter
wait_for "snapshot written to $T/shot.txt" 5 && [ -s "$T/shot.txt" ] && ok || bad ":snapshot confirms where it wrote"
# :save: the JSON names the plan the grid shows
tmux send-keys -t "$S" ":save $T/out.json" Enter
wait_for "saved transcript" 5 && python3 -c "
import json,sys; d=json.load(open('$T/out.json'))
assert d['precision']=='q8_0', d['precision']
assert any(m['role']=='user' and m['text']=='hello there' for m in d['messages'])
assert d['stats']['gen_tokens']>0" && ok || bad ":save JSON wrong"
[ -s "$T/state/cabin/workbench-autosave.json" ] && ok || bad "no autosave after a turn"
# :heatmap computes a sensitivity grid; F4 cycles the view
tmux send-keys -t "$S" ":heatmap" Enter
wait_for "KL per tensor" 20 && ok || bad ":heatmap gave no grid"
tmux send-keys -t "$S" F4
wait_for "Heat map: kv cache" 3 && ok || bad "F4 did not cycle the heat map"
tmux send-keys -t "$S" F3
wait_for_all 5 "KV q8 (" "kv: q8" && ok || bad "F3 did not switch the KV cache to q8"
tmux send-keys -t "$S" "one more" Enter
wait_for "one more" 5; sleep 1
tmux send-keys -t "$S" F4
wait_for "last token over" 3 && clean 120 && ok || bad "F4: no attention view"
shot panels-120x40
# :compare streams each prompt's two replies side by side, then the table and the summary; a plan
# against itself gives the same replies (the user turns so far are the prompts)
tmux send-keys -t "$S" ":compare q8_0 q8_0" Enter
wait_for "identical replies: " 60 && grep -qE "identical replies: ([0-9]+) of \1$|identical replies: ([0-9]+) of \2 " "$T/screen" && ok ||
    { bad ":compare: no summary with every reply the same"; cat "$T/screen"; }
clean 120 && ok || bad "garbage after :compare"
tmux send-keys -t "$S" ":save $T/cmp.json" Enter
wait_for "saved transcript" 5 && python3 -c "
import json; d=json.load(open('$T/cmp.json'))
cols=[m['text'] for m in d['messages'] if m['text'].startswith('compare: hello there\n')]
assert cols, 'no streamed message for the first prompt'
rows=cols[0].split('\n')[1:]
assert rows and all(' | ' in r for r in rows if r), rows" && ok || bad ":compare: the first prompt's replies are not side by side"
# help, then resize to 80x24: chat and status bar only
tmux send-keys -t "$S" F1
wait_for_all 15 "Help" "F2" ":precision" && ok || { bad "F1 help missing"; cat "$T/screen"; }
clean 120 && ok || bad "garbage in help"
shot help-120x40
# the help wraps at spaces, never inside a word, and scrolls when it is longer than the screen
tr -s ' ' <"$T/screen" | grep -q "Pareto frontier" && grep -q ":governor TARGET \[kl<=K\] \[KNOB=V ...\]" "$T/screen" && ok ||
    { bad "help: words cut"; grep -E "governor|Pareto" "$T/screen"; }
if grep -q "PgUp PgDn)" "$T/screen"; then
    tmux send-keys -t "$S" NPage
    wait_for_all 3 ":help" "list the commands" "Help" && ok || bad "help: PgDn shows the last commands"
fi
tmux send-keys -t "$S" Escape
tmux resize-window -t "$S" -x 80 -y 24
sleep 0.8; cap >"$T/screen"
! grep -q "Precision" "$T/screen" && grep -q "F1 help" "$T/screen" && grep -q "Conversation" "$T/screen" && ok \
    || bad "80x24 layout wrong"
clean 80 && ok || bad "garbage at 80x24"
shot chat-80x24
tmux send-keys -t "$S" F1
wait_for "Help" 3 && clean 80 && ok || bad "help at 80x24"
tmux send-keys -t "$S" Escape
tmux resize-window -t "$S" -x 120 -y 40
wait_for "Precision" 3 && clean 120 && ok || bad "panels did not come back after resizing up"
tmux send-keys -t "$S" ":quit" Enter
i=0; while [ ! -f "$T/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$T/rc" 2>/dev/null)" = 0 ] && ok || bad ":quit did not exit 0"

# ---- 80x24 from the start ----
rm -f "$T/rc"
start 80 24 "$T/m.gguf" -n 16 -t 1
wait_for "type a message" 15 && ok || bad "no start at 80x24"
tmux send-keys -t "$S" "hi" Enter
wait_for "cabin ›" 10 && sleep 0.5 && clean 80 && grep -qE "[0-9.]+ tok/s" "$T/screen" && ok || bad "80x24 reply / status"
tmux send-keys -t "$S" C-d
i=0; while [ ! -f "$T/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$T/rc" 2>/dev/null)" = 0 ] && ok || bad "Ctrl-D did not exit 0"

# ---- voice: F5 twice with a WAV recording as the microphone; the reply spoken into a WAV ----
WAV=assets/audio/set-temperature-22.wav
TINY=assets/models/cabin-tiny.gguf
if ! cabin_has_audio; then
    echo "skipped: $CABIN was built without audio (make AUDIO=1): the voice part of the workbench test"
    skip=$((skip + 1))
elif [ -f "$WAV" ] && [ -f assets/asr/cabin.lm ]; then
    VM="$T/m.gguf"; [ -f "$TINY" ] && VM="$(pwd)/$TINY"
    rm -f "$T/rc" "$T/reply.wav"
    start 120 40 "$VM" -n 48 --temp 0 -t 1 --audio-in "'$(pwd)/$WAV'" --audio-out "'$T/reply.wav'"
    wait_for "type a message" 20 && wait_for "F5 to talk" 5 && ok || bad "voice panel not idle with a WAV microphone"
    tmux send-keys -t "$S" F5
    wait_until 30 eval 'grep -qF "│ listening" "$T/screen" && grep -qE "level .*[0-9]+ dB" "$T/screen"' && ok || bad "F5 did not start listening (with a level)"
    sleep 4.4   # the recording is 4.0 s; F5 again releases
    tmux send-keys -t "$S" F5
    wait_for "release → transcript" 60 && ok || bad "no latency line after the release"
    grep -qE "release → transcript [0-9]+ ms, → audio [0-9]+ ms" "$T/screen" && ok \
        || bad "latency: want release → transcript and → audio in ms ($(grep -o 'release →.*' "$T/screen"))"
    heard=$(sed -n 's/.*│ heard: \(.*[^ ]\) *│$/\1/p' "$T/screen" | head -n 1)
    [ -n "$heard" ] && grep -qF "you › $heard" "$T/screen" && ok || bad "the transcript ($heard) is not the chat's user turn"
    echo "$heard" | grep -qE "temperature|twenty|two|degrees" && ok || bad "recognised '$heard' for 'set the temperature to twenty two degrees'"
    wait_for "│ idle" 30 && ok || bad "voice did not come back to idle after the reply"
    grep -qE "cabin › .{3,}" "$T/screen" && ok || bad "no reply to the spoken turn"
    python3 -c "
import wave,sys; w=wave.open('$T/reply.wav'); n=w.getnframes(); sys.exit(0 if n > w.getframerate()//10 else 1)" \
        && ok || bad "reply.wav has no speech"
    clean 120 && ok || bad "garbage on the voice screen"
    shot voice-120x40
    # :voice FILE runs the recording through the same pipeline (hands-free) and the same panel
    tmux send-keys -t "$S" ":voice $(pwd)/$WAV" Enter
    wait_until 60 eval 'grep -qE "end → transcript [0-9]+ ms" "$T/screen"' && ok || bad ":voice did not update the panel"
    wait_for "│ idle" 30
    heard2=$(sed -n 's/.*│ heard: \(.*[^ ]\) *│$/\1/p' "$T/screen" | head -n 1)
    [ -n "$heard2" ] && [ "$(grep -c "you › " "$T/screen")" -ge 2 ] && grep -qF "you › $heard2" "$T/screen" && ok \
        || bad ":voice: no second spoken turn ($heard2) in the chat"
    tmux resize-window -t "$S" -x 80 -y 24
    sleep 0.8; cap >"$T/screen"
    grep -qF "you › $heard2" "$T/screen" && clean 80 && ok || bad "80x24 after voice turns"
    shot voice-80x24
    tmux send-keys -t "$S" ":quit" Enter
    i=0; while [ ! -f "$T/rc" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(cat "$T/rc" 2>/dev/null)" = 0 ] && ok || bad "quit after voice turns (rc $(cat "$T/rc" 2>/dev/null))"
else
    echo "skipped: $WAV or assets/asr/cabin.lm missing (the voice part of the workbench test)"
    skip=$((skip + 1))
fi

# ---- a capture device that is not there (or no audio at all): one line, voice off, text still works ----
rm -f "$T/rc"
start 80 24 "$T/m.gguf" -n 8 -t 1 --audio-in no-such-microphone
wait_for "$VOICE_OFF" 15 && ok || bad "no '$VOICE_OFF' line for a missing device"
tmux send-keys -t "$S" F5
sleep 0.3; tmux send-keys -t "$S" "hi" Enter
wait_for "cabin ›" 10 && sleep 0.3 && clean 80 && [ "$(grep -c "$VOICE_OFF" "$T/screen")" -ge 2 ] && ok \
    || bad "F5 without a device, then a typed turn"
shot novoice-80x24
# without a microphone, :voice FILE still runs the voice pipeline, and the Voice panel says what
# it heard and how fast, under the voice-off line
if cabin_has_audio && [ -f "$WAV" ] && [ -f assets/asr/cabin.lm ]; then
    tmux resize-window -t "$S" -x 120 -y 40   # wide enough for the panels
    tmux send-keys -t "$S" ":voice $(pwd)/$WAV" Enter
    wait_for_all 60 "end → transcript" "heard: " "$VOICE_OFF" && ok ||
        { bad ":voice without a microphone: the panel shows no heard line and latency"; grep -A6 "Voice" "$T/screen"; }
fi
tmux send-keys -t "$S" C-d
i=0; while [ ! -f "$T/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$T/rc" 2>/dev/null)" = 0 ] && ok || bad "exit without a device"

# ---- a scene in the workbench ----
cat >"$T/s.scene" <<EOS
say "hello"
precision q4_0
wait 300
snapshot $T/snap.txt
EOS
rm -f "$T/rc"
tmux kill-session -t "$S" 2>/dev/null
tmux new-session -d -s "$S" -x 120 -y 40 \
    "XDG_STATE_HOME=$T/state LANG=C.UTF-8 '$CABIN' scene '$T/s.scene' --tui -m '$T/m.gguf' -n 8 -t 1 2>'$T/stderr'; echo \$? >'$T/rc'; sleep 60"
i=0; while [ ! -f "$T/rc" ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$T/rc" 2>/dev/null)" = 0 ] && grep -q "plan q4_0" "$T/snap.txt" && grep -q "you › hello" "$T/snap.txt" && ok \
    || { bad "scene --tui (rc $(cat "$T/rc" 2>/dev/null))"; cat "$T/stderr"; }

# ---- the trained assistant model, when it is there ----
if [ -f "$TINY" ]; then
    rm -f "$T/rc"
    start 120 40 "$(pwd)/$TINY" --temp 0 -t 1
    wait_for "type a message" 20 && ok || bad "no start with cabin-tiny"
    tmux send-keys -t "$S" "set the driver temperature to 22 degrees" Enter
    wait_for "decode" 30 && sleep 0.5 && cap >"$T/screen"
    grep -qE "cabin › .{3,}" "$T/screen" && clean 120 && ok || bad "cabin-tiny: no clean reply"
    grep -qE "action:|vehicle:|refused:" "$T/screen" && ok || bad "cabin-tiny: no action line"
    shot tiny-120x40
    tmux send-keys -t "$S" ":quit" Enter
else
    echo "skipped: $TINY is not built yet (the trained assistant model)"
    skip=$((skip + 1))
fi

# ---- the workbench serving its session over HTTP (--serve): requests show as turns, commands
# as commands; a request whose client left while it waited is not a turn ----
if [ -f "$TINY" ] && command -v python3 >/dev/null 2>&1 && [ -x /usr/bin/python3 ]; then
    PORT=$(/usr/bin/python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    rm -f "$T/rc"
    start 120 40 "$(pwd)/$TINY" --temp 0 -t 1 --no-voice --serve "$PORT"
    wait_for "serving the OpenAI API at http://127.0.0.1:$PORT/v1" 20 && ok || bad "--serve: no serving line"
    out=$(/usr/bin/python3 tests/serve_api.py workbench "$PORT" 2>&1)
    printf '%s\n' "$out" | grep '^FAIL' | sed 's/^/workbench --serve: /'
    p=$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -n "$p" ] && [ "$f" = 0 ]; then pass=$((pass + p)); else bad "workbench --serve: serve_api.py: ${f:-no result}"; fi
    # the screen follows the worker's events: under ASan it may lag the HTTP answers by a moment
    wait_for "note: hello from an app" 20 && grep -qF "an app asks over HTTP (port $PORT)" "$T/screen" \
        && grep -qF "action: media.next" "$T/screen" \
        && grep -qF "you › set the temperature to 22 degrees" "$T/screen" && grep -qF "action: climate.set zone=all temp=22" "$T/screen" \
        && grep -qF "an app runs a command over HTTP (port $PORT)" "$T/screen" \
        && clean 120 && ok || { bad "--serve: the requests are not shown as turns"; cat "$T/screen"; }
    shot serve-120x40
    # the port taken: a second workbench says so in one line and exits 1
    tmux new-session -d -s second -x 100 -y 30 \
        "XDG_STATE_HOME=$T/state2 '$CABIN' -m '$(pwd)/$TINY' --no-voice --serve $PORT 2>'$T/stderr2'; echo \$? >'$T/rc2'"
    i=0; while [ ! -f "$T/rc2" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(cat "$T/rc2" 2>/dev/null)" = 1 ] && [ "$(wc -l <"$T/stderr2")" = 1 ] && grep -q -- "--serve $PORT" "$T/stderr2" && ok \
        || { bad "--serve on a port in use: rc $(cat "$T/rc2" 2>/dev/null)"; cat "$T/stderr2"; }
    tmux send-keys -t "$S" ":quit" Enter
    i=0; while [ ! -f "$T/rc" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(cat "$T/rc" 2>/dev/null)" = 0 ] && ! /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" 2>/dev/null \
        && ok || bad "--serve: :quit leaves with the port still open (rc $(cat "$T/rc" 2>/dev/null))"
    # a client that leaves while its turn waits behind the person's (a :bench on a slow model)
    "$CABIN" make-model -o "$T/slow.gguf" --type f32 --dim 512 --ffn 1536 --vocab 1000 --layers 8 >/dev/null
    rm -f "$T/rc"
    start 120 40 "$T/slow.gguf" --temp 0 -t 1 --no-voice --serve "$PORT"
    wait_for "serving the OpenAI API at http://127.0.0.1:$PORT/v1" 20 && ok || bad "--serve (slow model): no serving line"
    tmux send-keys -t "$S" ":bench 400" Enter
    out=$(/usr/bin/python3 tests/serve_api.py workbench-gone "$PORT" 2>&1)
    printf '%s\n' "$out" | grep '^FAIL' | sed 's/^/workbench --serve: /'
    p=$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -n "$p" ] && [ "$f" = 0 ]; then pass=$((pass + p)); else bad "workbench --serve (gone): serve_api.py: ${f:-no result}"; fi
    tmux send-keys -t "$S" ":quit" Enter
else
    echo "skipped: the workbench serving: $TINY or /usr/bin/python3 is missing"
    skip=$((skip + 1))
fi

test_finish
