#!/bin/sh
# Slots, measured: two chat clients take turns (A's turn, B's turn, A's next, ...), each sending
# its whole conversation one turn longer every time, to a `cabin serve --slots 1` and a
# `cabin serve --slots 2` on the same model, in turn. With one slot each client's turn finds the
# other's conversation in the cache and computes its own again; with two each goes back to the
# slot that holds its own (the prompt cache, tools/serve_cache_bench.sh). The client times the
# first streamed text and reads the tokens taken from the cache. Then, on each server, a short
# request is sent while a long stream runs: its time to the first token; and two 256-token
# streams at once: the tokens of both over the time until both end (with two slots the two
# replies' decode steps share passes).
# Usage: tools/serve_slots_bench.sh [BUILD] [MODEL] [TURNS] [THREADS]
#   MODEL default: a random-weight Q4_0 model of 1024 wide, 8 layers (tools/serve_start.sh).
set -e
BUILD=${1:-build}; MODEL=$2; TURNS=${3:-8}; THREADS=${4:-2}
. "$(dirname "$0")/serve_start.sh"
serve_start one --ctx 2048 --ignore-eos --slots 1
serve_start two --ctx 2048 --ignore-eos --slots 2
echo "model $MODEL, two clients, $TURNS turns each, $THREADS threads"
/usr/bin/python3 - "$(cat "$T/one.port")" "$(cat "$T/two.port")" "$TURNS" <<'PY'
import http.client, re, statistics, sys, threading, time
from sse_stream import ask_chat, events
ports, turns = (int(sys.argv[1]), int(sys.argv[2])), int(sys.argv[3])
names = ("--slots 1", "--slots 2")

def conversation():
    return [{"role": "system", "content": "You are a helpful assistant in a car. Answer in one or two sentences."}]

convs = {p: {"A": conversation(), "B": conversation()} for p in ports}
rows = []
print("turn client prompt | --slots 1: cached  ttft ms | --slots 2: cached  ttft ms")
for k in range(turns):
    for who in "AB":
        row = []
        for p in ports:
            c = convs[p][who]
            c.append({"role": "user", "content": "Client %s, question %d: how do I keep the car cool on a long summer drive with the children asleep in the back?" % (who, k + 1)})
            row.append(ask_chat(p, c))
            c.append({"role": "assistant", "content": "Shade, recirculation and the windows up at speed; answer %s%d." % (who, k + 1)})
        rows.append(row)
        print("%4d  %s  %6d  | %15d  %7.1f | %15d  %7.1f" % (k + 1, who, row[0][1], row[0][2], row[0][0] * 1e3, row[1][2], row[1][0] * 1e3))
last = rows[len(rows) // 2:]
t1, t2 = (statistics.median(r[i][0] for r in last) for i in (0, 1))
print("median ttft over the last %d turns: %.1f ms with one slot, %.1f ms with two: %.1fx" % (len(last), t1 * 1e3, t2 * 1e3, t1 / t2))

def long_stream(port, started, done):
    for t, e in events(port, "/v1/completions", {"prompt": "one two three", "max_tokens": 1024}):
        started.set()
        if done.is_set():
            break

for p, name in zip(ports, names):
    started, done = threading.Event(), threading.Event()
    th = threading.Thread(target=long_stream, args=(p, started, done))
    th.start()
    started.wait()
    time.sleep(0.2)
    t0 = time.monotonic()
    first = ask_chat(p, [{"role": "user", "content": "hi"}], max_tokens=2)[0]
    done.set()
    th.join()
    print("%s: a short request during a 1024-token stream: first token after %.1f ms" % (name, first * 1e3))

def count_stream(port, out, i):
    n = 0
    for t, e in events(port, "/v1/completions", {"prompt": "stream %d: one two three" % i, "max_tokens": 256}):
        if e["choices"] and e["choices"][0].get("text"):
            n += 1
    out[i] = n

for p, name in zip(ports, names):
    out = [0, 0]
    ths = [threading.Thread(target=count_stream, args=(p, out, i)) for i in range(2)]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    secs = time.monotonic() - t0
    c = http.client.HTTPConnection("127.0.0.1", p, timeout=60)
    c.request("GET", "/metrics")
    m = re.search(r"^cabin_decode_steps_shared_total (\d+)$", c.getresponse().read().decode(), re.M)
    print("%s: two 256-token streams at once: %d text events in %.2f s, %.1f a second (decode steps in shared passes: %s)"
          % (name, sum(out), secs, sum(out) / secs, m.group(1) if m else "?"))
PY
