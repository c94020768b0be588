#!/bin/sh
# Decode speed through cabin serve against cabin bench on the same model, in the same run: does
# the HTTP face cost the generation anything? Runs, ROUNDS times and in turn, `cabin bench` (its
# decode tok/s) and a streamed completion of N tokens through a running `cabin serve` (tok/s
# from the client's side: tokens after the first over the time from the first event to the last),
# then prints each round and the medians' ratio.
# Usage: tools/serve_bench.sh [BUILD] [MODEL] [N] [ROUNDS] [THREADS]
#   MODEL default: a random-weight Q4_0 model of 1024 wide, 8 layers (made once in /tmp).
set -e
BUILD=${1:-build}; MODEL=$2; N=${3:-128}; ROUNDS=${4:-5}; THREADS=${5:-2}
. "$(dirname "$0")/serve_start.sh"
serve_start serve --ignore-eos
PORT=$(cat "$T/serve.port")
echo "model $MODEL, $N tokens, $THREADS threads, $ROUNDS rounds"
r=1
while [ $r -le "$ROUNDS" ]; do
    b=$("$CABIN" bench -m "$MODEL" -t "$THREADS" -p 16 -n "$N" -r 1 --json 2>/dev/null \
        | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['decode_tps'])")
    s=$(/usr/bin/python3 - "$PORT" "$N" <<'PY'
import sys
from sse_stream import events
port, n = int(sys.argv[1]), int(sys.argv[2])
body = {"prompt": "one two three four five six seven eight", "max_tokens": n, "temperature": 0}
times = [t for t, e in events(port, "/v1/completions", body) if e["choices"] and e["choices"][0]["text"]]
# pieces, not tokens: a token whose text is empty sends no event, so the count is a floor
print("%.2f" % ((len(times) - 1) / (times[-1] - times[0])))
PY
)
    echo "round $r: cabin bench decode $b tok/s, through cabin serve $s tok/s"
    echo "$b $s" >>"$T/pairs"
    r=$((r + 1))
done
/usr/bin/python3 - "$T/pairs" <<'PY'
import statistics, sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1])]
b, s = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
print("median: cabin bench %.2f tok/s, through cabin serve %.2f tok/s: serve/bench %.3f" % (b, s, s / b))
PY
