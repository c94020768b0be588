#!/bin/sh
# The prompt cache between requests, measured: a chat client sends the whole conversation every
# turn, one turn longer each time. Two `cabin serve` on the same model, one with the prompt cache
# (the default) and one with --no-prompt-cache, get the same TURNS requests in turn; for each the
# client times the first streamed text (time to first token) and reads how many prompt tokens the
# server took from its cache (usage.prompt_tokens_details.cached_tokens). The assistant turns sent
# back are fixed texts, so both servers see the same conversation whatever they generated.
# Usage: tools/serve_cache_bench.sh [BUILD] [MODEL] [TURNS] [THREADS]
#   MODEL default: a random-weight Q4_0 model of 1024 wide, 8 layers (made once in /tmp, as
#   tools/serve_start.sh makes it for both bench scripts).
set -e
BUILD=${1:-build}; MODEL=$2; TURNS=${3:-12}; THREADS=${4:-2}
. "$(dirname "$0")/serve_start.sh"
serve_start cached --ctx 2048
serve_start uncached --ctx 2048 --no-prompt-cache
echo "model $MODEL, $TURNS turns, $THREADS threads"
/usr/bin/python3 - "$(cat "$T/cached.port")" "$(cat "$T/uncached.port")" "$TURNS" <<'PY'
import statistics, sys
from sse_stream import ask_chat as ask
ports, turns = (int(sys.argv[1]), int(sys.argv[2])), int(sys.argv[3])

conv = [{"role": "system", "content": "You are a helpful assistant in a car. Answer in one or two sentences."}]
rows = []
print("turn  prompt  | cached: cached tokens  ttft ms | uncached: ttft ms")
for k in range(turns):
    conv.append({"role": "user", "content": "Question %d: what is the best way to keep the car cool on a long drive in the summer heat?" % (k + 1)})
    a = ask(ports[0], conv)
    b = ask(ports[1], conv)
    rows.append((a, b))
    print("%4d  %6d  | %13d  %8.1f | %8.1f" % (k + 1, a[1], a[2], a[0] * 1e3, b[0] * 1e3))
    conv.append({"role": "assistant", "content": "Park in the shade, use the recirculation mode and keep the windows up at speed; answer %d." % (k + 1)})
last = rows[len(rows) // 2:]
ca, un = statistics.median(r[0][0] for r in last), statistics.median(r[1][0] for r in last)
print("median of the last %d turns: ttft %.1f ms with the prompt cache, %.1f ms without: %.1fx" % (len(last), ca * 1e3, un * 1e3, un / ca))
PY
