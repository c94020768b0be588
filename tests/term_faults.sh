#!/bin/sh
# Faults while cabin talks to a person, in a pipe and in a terminal (tmux).
# SIGINT and SIGTERM in the middle of a reply and while cabin waits for input:
#  - cabin chat from a pipe: SIGTERM and SIGINT stop the reply and end chat with 143 / 130
#  - cabin chat in a terminal (tmux): SIGTERM mid-reply or at the prompt ends it with 143 and the
#    terminal settings (stty -g) as they were; Ctrl-C stops a reply and chat goes on
#  - the workbench in a terminal: SIGTERM / SIGINT mid-reply leave as :quit does (the transcript
#    autosaved whole, replacing the older one), terminal settings restored, status 143 / 130
# The capture device vanishing while the workbench listens (CABIN_AUDIO_IN_FAIL_AFTER), and the
# Vulkan device lost mid-reply (CABIN_VK_FAIL_AFTER): one line says so, and a typed turn is
# answered after it.
# A save killed at any moment is checked in tests/test_afile.c (the older file or the new one).
TAG=term_faults; . "$(dirname "$0")/lib.sh"
CABIN="$(pwd)/$BUILD/cabin"   # absolute: tmux starts it
"$CABIN" make-model -o "$T/m.gguf" --type q8_0 --dim 64 --ffn 128 --vocab 400 >/dev/null || bad "make-model"
# long replies: the raw model, past its end tokens, on the scalar path
LONG="-m $T/m.gguf --free-actions --ignore-eos -n 100000 -c 4096 -t 1 --backend cpu-scalar"

# wait_grow FILE: until FILE has grown past its size now (a reply is streaming), at most 10 s
wait_grow() {
    s0=$(stat -c %s "$1" 2>/dev/null || echo 0); i=0
    while [ $i -lt 100 ] && [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -le "$s0" ]; do sleep 0.1; i=$((i + 1)); done
}

# ---- chat from a pipe ----
for sig in TERM INT; do
    want=$([ $sig = TERM ] && echo 143 || echo 130)
    rm -f "$T/in"; mkfifo "$T/in"
    "$CABIN" chat $LONG <"$T/in" >"$T/out" 2>"$T/err" &
    pid=$!
    exec 3>"$T/in"
    echo "hello there" >&3
    wait_grow "$T/out"; sleep 0.3
    kill -$sig $pid
    wait $pid 2>/dev/null; rc=$?
    exec 3>&-
    [ $rc = $want ] && ok || { bad "piped chat, SIG$sig mid-reply: exit $rc, wanted $want"; cat "$T/err"; }
done
# waiting for the next line
rm -f "$T/in"; mkfifo "$T/in"
"$CABIN" chat -m "$T/m.gguf" -t 1 -n 4 <"$T/in" >"$T/out" 2>"$T/err" &
pid=$!
exec 3>"$T/in"
echo "hello" >&3
wait_grow "$T/out"; sleep 1   # a reply of 4 tokens is long done
kill -TERM $pid
wait $pid 2>/dev/null; rc=$?
exec 3>&-
[ $rc = 143 ] && ok || bad "piped chat, SIGTERM waiting for input: exit $rc"

# ---- in a terminal ----
if ! command -v tmux >/dev/null 2>&1; then
    skip=$((skip + 1)); echo "skipped: terminal cases: tmux is not installed"
    test_finish; exit
fi
S=cabin-term-$$
TMUX_TMPDIR=$T; export TMUX_TMPDIR      # a private tmux server
trap 'tmux kill-server 2>/dev/null; rm -rf "$T"' EXIT
tmux new-session -d -s keepalive -x 20 -y 5 "sleep 3600"
# start CMD...: runs cabin CMD (with the variables of $START_ENV) in a terminal of its own, its stty -g before and after in
# $T/stty.before and $T/stty.after, its pid in $T/pid, its exit status in $T/rc
start() {
    rm -f "$T/rc" "$T/pid" "$T/stty.before" "$T/stty.after"
    cat >"$T/wrap.sh" <<EOF
trap true INT   # Ctrl-C goes to the terminal's whole process group: this shell stays to report
stty -g >"$T/stty.before"
env $START_ENV XDG_STATE_HOME="$T/state" LANG=C.UTF-8 LC_ALL=C.UTF-8 sh -c 'echo \$\$ >"$T/pid"; exec "$CABIN" $*' 2>"$T/stderr"
echo \$? >"$T/rc.tmp"
stty -g >"$T/stty.after"
mv "$T/rc.tmp" "$T/rc"
sleep 60
EOF
    tmux kill-session -t "$S" 2>/dev/null
    tmux new-session -d -s "$S" -x 200 -y 30 "sh '$T/wrap.sh'"
    i=0; while [ $i -lt 50 ] && [ ! -s "$T/pid" ]; do sleep 0.1; i=$((i + 1)); done
}
cap() { tmux capture-pane -t "$S" -p; }
wait_screen() {   # TEXT: until the screen shows TEXT, at most 10 s
    i=0; while [ $i -lt 100 ] && ! cap | grep -qF -- "$1"; do sleep 0.1; i=$((i + 1)); done
}
wait_rc() { i=0; while [ $i -lt 100 ] && [ ! -f "$T/rc" ]; do sleep 0.1; i=$((i + 1)); done; }
# the screen keeps changing: a reply is streaming
streaming() { cap >"$T/s1"; sleep 0.4; cap >"$T/s2"; ! cmp -s "$T/s1" "$T/s2"; }
# ended WHAT RC: the program ended with RC and the terminal settings are as they were
ended() {   # returns non-zero when a check failed
    f0=$fail
    wait_rc
    [ "$(cat "$T/rc" 2>/dev/null)" = "$2" ] && ok || { bad "$1: exit $(cat "$T/rc" 2>/dev/null), wanted $2"; cat "$T/stderr"; }
    cmp -s "$T/stty.before" "$T/stty.after" && ok || bad "$1: terminal settings not restored"
    [ $fail = $f0 ]
}

# chat: SIGTERM mid-reply, SIGTERM at the prompt, Ctrl-C mid-reply
start chat $LONG
wait_screen "Ctrl-D to leave"
tmux send-keys -t "$S" "hello there" Enter
sleep 0.5
streaming && ok || bad "chat: the reply streams"
kill -TERM "$(cat "$T/pid")"
ended "chat, SIGTERM mid-reply" 143
start chat -m "$T/m.gguf" -t 1
wait_screen "Ctrl-D to leave"
tmux send-keys -t "$S" "half a line"
sleep 0.3
kill -TERM "$(cat "$T/pid")"
ended "chat, SIGTERM at the prompt" 143
start chat $LONG
wait_screen "Ctrl-D to leave"
tmux send-keys -t "$S" "hello there" Enter
sleep 0.5
tmux send-keys -t "$S" C-c
sleep 0.5
! streaming && ok || bad "chat: Ctrl-C stops the reply"
tmux send-keys -t "$S" "/quit" Enter
ended "chat, Ctrl-C then /quit" 0 || cap | tail -5

# the workbench: an older autosave is replaced whole by the transcript of this run
for sig in TERM INT; do
    want=$([ $sig = TERM ] && echo 143 || echo 130)
    mkdir -p "$T/state/cabin"
    echo '{"older": true}' >"$T/state/cabin/workbench-autosave.json"
    start workbench $LONG
    wait_screen "type a message"
    tmux send-keys -t "$S" "hello there" Enter
    sleep 1
    kill -$sig "$(cat "$T/pid")"
    ended "workbench, SIG$sig mid-reply" $want
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "older" not in d and "hello there" in json.dumps(d)' \
        "$T/state/cabin/workbench-autosave.json" && ok || { bad "workbench, SIG$sig: the transcript saved whole"; head -c 300 "$T/state/cabin/workbench-autosave.json"; }
    [ -z "$(ls "$T/state/cabin" | grep '\.tmp\.')" ] && ok || bad "workbench, SIG$sig: a temporary left behind"
done

# the workbench: the microphone (a recording played with :voice) vanishes after 0.5 s
TINY="$(pwd)/assets/models/cabin-tiny.gguf"
if cabin_has_audio && [ -f "$TINY" ]; then
    START_ENV=CABIN_AUDIO_IN_FAIL_AFTER=8000 start workbench -m "$TINY" -t 1 --no-voice
    wait_screen "type a message"
    tmux send-keys -t "$S" ":voice $(pwd)/assets/audio/set-temperature-22.wav" Enter
    wait_screen "vanished"
    cap | grep -qF "set-temperature-22.wav: audio: capture device" && ok || { bad "workbench: the vanished device said"; cap; }
    tmux send-keys -t "$S" "turn on the heat" Enter
    wait_screen "Warming"
    cap | grep -qF "Warming" && ok || { bad "workbench: a typed turn after the device vanished"; cap; }
    tmux send-keys -t "$S" ":quit" Enter
    ended "workbench, the microphone vanished, then :quit" 0
else
    skip=$((skip + 1)); echo "skipped: the microphone vanishing in the workbench: no audio in $CABIN or no $TINY"
fi

# the workbench: the Vulkan device lost mid-reply (CABIN_VK_FAIL_AFTER): its notice line, and the
# next typed turn is answered on the CPU
if [ -f "$TINY" ] && "$CABIN" devices 2>/dev/null | grep -q '^0: '; then
    START_ENV=CABIN_VK_FAIL_AFTER=3 start workbench -m "$TINY" -t 1 --no-voice --backend vulkan --temp 0
    wait_screen "type a message"
    tmux send-keys -t "$S" "turn on the heat" Enter
    wait_screen "goes on on the CPU"
    cap | grep -qF "device lost; the conversation goes on on the CPU" && ok || { bad "workbench: the device lost said"; cap; }
    tmux send-keys -t "$S" "open the window" Enter
    wait_screen "window"
    wait_screen "Opening"
    cap | grep -qF "Opening" && ok || { bad "workbench: a turn after the device was lost"; cap; }
    tmux send-keys -t "$S" ":quit" Enter
    ended "workbench, the device lost, then :quit" 0
else
    skip=$((skip + 1)); echo "skipped: the device lost in the workbench: no Vulkan device or no $TINY"
fi
test_finish
