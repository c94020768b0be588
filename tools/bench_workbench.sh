#!/bin/sh
# Does the workbench slow generation? Decode tok/s of `cabin generate` and of the workbench (the
# real binary at 120x40 in a private tmux server, reply streamed into the chat pane, panels
# redrawn live) on the same model, same prompt, greedy, one thread, N tokens past end-of-
# generation; REPS interleaved repetitions of each, medians compared. The workbench's figure is
# the session's decode tok/s from its autosave (written after every turn).
# generate runs twice per repetition: in a session of its own (setsid) writing to /dev/null, and
# in the same kind of tmux pane as the workbench, streaming its tokens to the terminal (on this
# VM a process in a tmux pane decodes measurably slower than the same command outside tmux, so
# the second is the like-for-like baseline; both are reported). WBOPTS: extra workbench options.
# Usage: sh tools/bench_workbench.sh [BUILD] [N] [REPS]
set -e
BUILD=${1:-build}
N=${2:-600}
REPS=${3:-7}
CABIN="$(pwd)/$BUILD/cabin"
command -v tmux >/dev/null || { echo "bench_workbench: tmux is not installed"; exit 1; }
M="$BUILD/models/wb-q8_0.gguf"
mkdir -p "$BUILD/models"
[ -f "$M" ] || "$CABIN" make-model -o "$M" --type q8_0 --dim 512 --layers 8 --ffn 1408 --vocab 2000 >/dev/null
M="$(cd "$(dirname "$M")" && pwd)/$(basename "$M")"
T=$(mktemp -d /tmp/cabin-wbbench-XXXXXX)
TMUX_TMPDIR=$T; export TMUX_TMPDIR
trap 'tmux kill-server 2>/dev/null; rm -rf "$T"' EXIT
OPTS="-n $N --ignore-eos --temp 0 -t 1"

workbench_tps() {
    rm -rf "$T/state"
    tmux kill-server 2>/dev/null || true
    tmux new-session -d -s wb -x 120 -y 40 \
        "XDG_STATE_HOME=$T/state LANG=C.UTF-8 LC_ALL=C.UTF-8 '$CABIN' -m '$M' $OPTS $WBOPTS 2>/dev/null; sleep 30"
    i=0
    until tmux capture-pane -t wb -p | grep -qF "type a message"; do
        i=$((i + 1)); [ $i -lt 200 ] || { echo "workbench did not start" >&2; return 1; }; sleep 0.1
    done
    tmux send-keys -t wb "hello there" Enter
    f="$T/state/cabin/workbench-autosave.json"
    i=0
    until [ -f "$f" ] && /usr/bin/python3 -c "import json,sys; s=json.load(open('$f'))['stats']; sys.exit(0 if s['gen_tokens'] >= $N else 1)" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1200 ] || { echo "workbench reply did not finish" >&2; return 1; }; sleep 0.1
    done
    /usr/bin/python3 -c "import json; print(json.load(open('$f'))['stats']['decode_tps'])"
    tmux kill-server 2>/dev/null || true
}

# generate gets the text the workbench's chat template renders for "hello there" (this model has
# no template: the plain one), so both decode from the same depth: 29 prompt tokens
generate_tps() {
    setsid -w "$CABIN" generate -m "$M" -p "$(printf 'User: hello there\nAssistant:')" $OPTS --stats 2>&1 >/dev/null \
        | sed -n 's/.* \([0-9.]*\) tok\/s decode.*/\1/p; s/.*decode \([0-9.]*\) tok\/s.*/\1/p' | head -n 1
}

# generate in a tmux pane at 120x40, tokens streamed to the pane, --stats to a file
generate_tmux_tps() {
    tmux kill-server 2>/dev/null || true
    rm -f "$T/gen.err"
    tmux new-session -d -s gen -x 120 -y 40 \
        "'$CABIN' generate -m '$M' -p \"\$(printf 'User: hello there\\nAssistant:')\" $OPTS --stats 2>'$T/gen.err'; sleep 30"
    i=0
    until grep -q 'tok/s' "$T/gen.err" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1200 ] || { echo "generate in tmux did not finish" >&2; return 1; }; sleep 0.1
    done
    sed -n 's/.*decode \([0-9.]*\) tok\/s.*/\1/p' "$T/gen.err" | head -n 1
    tmux kill-server 2>/dev/null || true
}

echo "model $M; $OPTS; $REPS interleaved repetitions"
: >"$T/rows"
r=1
while [ $r -le "$REPS" ]; do
    g=$(generate_tps); w=$(workbench_tps); gt=$(generate_tmux_tps)
    echo "rep $r: generate $g  workbench $w  generate-in-tmux $gt"
    echo "$g $w $gt" >>"$T/rows"
    r=$((r + 1))
done
/usr/bin/python3 - "$T/rows" <<'EOF'
import statistics, sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]
g = statistics.median(r[0] for r in rows); w = statistics.median(r[1] for r in rows)
gt = statistics.median(r[2] for r in rows)
print("median decode tok/s: generate %.1f, workbench %.1f -> workbench %+.1f%% (target: within 3%%)"
      % (g, w, 100 * (w - g) / g))
print("median decode tok/s: generate in a tmux pane %.1f, workbench %.1f -> workbench %+.1f%%"
      % (gt, w, 100 * (w - gt) / gt))
EOF
