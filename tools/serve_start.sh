# Sourced by tools/serve_bench.sh, tools/serve_cache_bench.sh and tools/serve_slots_bench.sh,
# after BUILD, MODEL and THREADS are set: CABIN, PYTHONPATH (tools/sse_stream.py) and T (a scratch
# folder, removed on exit) are set; an empty MODEL becomes a random-weight Q4_0 model 1024 wide
# with 8 layers (made once in /tmp), and serve_start NAME ARGS... runs `cabin serve` on that model
# on a free port with ARGS, its port in $T/NAME.port and its pid added to $PIDS (killed on exit).
CABIN="$BUILD/cabin"
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)"; export PYTHONPATH
T=$(mktemp -d "/tmp/cabin-$(basename "$0" .sh)-XXXXXX")
PIDS=""
trap 'kill $PIDS 2>/dev/null; rm -rf "$T"' EXIT
if [ -z "$MODEL" ]; then
    MODEL=/tmp/cabin-serve-bench-q4_0.gguf
    [ -f "$MODEL" ] || "$CABIN" make-model -o "$MODEL" --type q4_0 --dim 1024 --ffn 2816 --layers 8 --vocab 4000 >/dev/null
fi
serve_start() {
    name=$1; shift
    "$CABIN" serve -m "$MODEL" -t "$THREADS" --port 0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
    PIDS="$PIDS $!"
    i=0; port=""
    while [ $i -lt 400 ] && [ -z "$port" ]; do
        port=$(sed -n 's|^cabin serve: http://[^ ]*:\([0-9][0-9]*\)/v1 .*|\1|p' "$T/$name.out"); [ -z "$port" ] && sleep 0.05; i=$((i + 1))
    done
    [ -n "$port" ] || { echo "$(basename "$0"): the server did not start: $(cat "$T/$name.err")" >&2; exit 1; }
    echo "$port" >"$T/$name.port"
}
