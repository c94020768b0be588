#!/bin/sh
# Does the window slow generation? Decode tok/s of `cabin chat` (piped: one turn, then /stats) and
# of `cabin gui` (under Xvfb with the software renderer, a scene saying the same turn, the reply
# streamed into the conversation and the panels redrawn live) on the same model, same turn,
# greedy, one thread, N tokens past end-of-generation; REPS interleaved repetitions, medians
# compared, the load average printed before and after. The window's figure is the session's
# decode tok/s from its autosave. Usage: sh tools/bench_gui.sh [BUILD] [N] [REPS]
set -e
BUILD=${1:-build}
N=${2:-600}
REPS=${3:-7}
CABIN="$(pwd)/$BUILD/cabin"
command -v xvfb-run >/dev/null || { echo "bench_gui: xvfb-run is not installed"; exit 1; }
M="$BUILD/models/wb-q8_0.gguf"   # the model tools/bench_workbench.sh uses
mkdir -p "$BUILD/models"
[ -f "$M" ] || "$CABIN" make-model -o "$M" --type q8_0 --dim 512 --layers 8 --ffn 1408 --vocab 2000 >/dev/null
M="$(cd "$(dirname "$M")" && pwd)/$(basename "$M")"
T=$(mktemp -d /tmp/cabin-guibench-XXXXXX)
trap 'rm -rf "$T"' EXIT
OPTS="-n $N --ignore-eos --temp 0 -t 1"
printf 'say hello there\n' >"$T/s.scene"

gui_tps() {
    rm -rf "$T/state"
    XDG_STATE_HOME="$T/state" SDL_RENDER_DRIVER=software xvfb-run -a -s "-screen 0 1400x900x24" \
        "$CABIN" gui -m "$M" $OPTS --no-voice --size 1280x800 --scene "$T/s.scene" --exit-after-scene >/dev/null 2>&1
    /usr/bin/python3 -c "import json; print(json.load(open('$T/state/cabin/workbench-autosave.json'))['stats']['decode_tps'])"
}

chat_tps() {
    printf 'hello there\n/stats\n' | XDG_STATE_HOME="$T/state" "$CABIN" chat -m "$M" $OPTS 2>/dev/null \
        | sed -n 's/.* tok at \([0-9.]*\) tok\/s.*/\1/p' | head -n 1
}

echo "model $M; $OPTS; $REPS interleaved repetitions; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$T/rows"
r=1
while [ $r -le "$REPS" ]; do
    c=$(chat_tps); g=$(gui_tps)
    echo "rep $r: chat $c  gui $g"
    echo "$c $g" >>"$T/rows"
    r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$T/rows" <<'PY'
import statistics, sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]
c = statistics.median(r[0] for r in rows); g = statistics.median(r[1] for r in rows)
print("median decode tok/s: chat %.1f, gui %.1f -> gui %+.1f%% (target: within 5%%)" % (c, g, 100 * (g - c) / c))
PY
