#!/bin/sh
# cabin serve end to end, on loopback only: the OpenAI routes on the embedded model (a tool call
# with the car's change, a stream that says what the whole answer says, completions, stop
# sequences, seeds, the prompt cache between requests), every kind of bad input answered with one JSON error while the server goes
# on, the API key, the queue's bound and a client that goes away (on a slow model), a load of
# concurrent clients, the curl examples of docs/SERVE.md, the official openai npm client, and the
# command's own refusals and stop (tests/serve_api.py makes the requests).
TAG=serve; . "$(dirname "$0")/lib.sh"
skip_without_system_python
if ! command -v curl >/dev/null 2>&1; then
    echo "skipped: curl is not installed (tools/install-deps.sh tests)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
API="/usr/bin/python3 $(dirname "$0")/serve_api.py"
LOAD_REQUESTS=${SERVE_LOAD_REQUESTS:-200}
SOAK_REQUESTS=${SERVE_SOAK_REQUESTS:-2000}

# start_server NAME ARGS...: cabin serve on a free port; PORT and PID set, or a failure counted
start_server() {
    name=$1; shift
    "$CABIN" serve --port 0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
    PID=$!
    PORT=""
    i=0
    while [ $i -lt 200 ] && [ -z "$PORT" ]; do
        PORT=$(sed -n 's|^cabin serve: http://[^ ]*:\([0-9][0-9]*\)/v1 .*|\1|p' "$T/$name.out")
        [ -z "$PORT" ] && sleep 0.05
        i=$((i + 1))
    done
    if [ -n "$PORT" ]; then ok; else bad "$name: the server did not say its port"; cat "$T/$name.err"; fi
}

# api CHECK ARGS...: serve_api.py's checks, counted into ours
api() {
    $API "$@" >"$T/api.out" 2>&1
    grep -v '^[0-9]* passed, [0-9]* failed$' "$T/api.out"
    p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$T/api.out")
    f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$T/api.out")
    if [ -z "$p" ]; then bad "serve_api.py $1 did not finish"; return; fi
    pass=$((pass + p)); fail=$((fail + f))
}

# stop_server NAME: SIGTERM ends it as a shell expects (143), saying so
stop_server() {
    kill -TERM "$PID"; wait "$PID"; rc=$?
    [ $rc = 143 ] && grep -q "^cabin serve: stopped" "$T/$1.out" && ok || { bad "$1: SIGTERM: exit $rc"; cat "$T/$1.err"; }
}

# openai_client PORT: the official openai npm client (tests/openai_client/, installed once into
# $BUILD/openai_client from the npm registry) runs a chat completion, a streamed one and a tool call
openai_client() {
    if ! command -v node >/dev/null 2>&1; then
        echo "skipped: the openai npm client: node is not installed (Debian: nodejs)"; skip=$((skip + 1)); return
    fi
    if command -v npm >/dev/null 2>&1; then npm="npm"
    elif [ -f /usr/lib/node_modules/npm/bin/npm-cli.js ]; then npm="node /usr/lib/node_modules/npm/bin/npm-cli.js"
    else echo "skipped: the openai npm client: npm is not installed"; skip=$((skip + 1)); return; fi
    dir="$BUILD/openai_client"
    mkdir -p "$dir" && cp tests/openai_client/package.json tests/openai_client/client.mjs "$dir/"
    if [ ! -f "$dir/node_modules/openai/package.json" ] &&
       ! (cd "$dir" && timeout 300 $npm install --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1; then
        echo "skipped: the openai npm client: npm could not install it (no registry?): $(tail -1 "$T/npm.log")"
        skip=$((skip + 1)); return
    fi
    if timeout 120 node "$dir/client.mjs" "http://127.0.0.1:$1/v1" >"$T/client.json" 2>"$T/client.err"; then ok
    else bad "the openai client failed:"; tail -5 "$T/client.err"; return; fi
    /usr/bin/python3 - "$T/client.json" <<'PY' && ok || bad "the openai client's results (above)"
import json, sys
r = json.load(open(sys.argv[1]))
problems = []
if r["models"] != ["cabin-tiny"]: problems.append("models %r" % r["models"])
if not r["chat"]["content"] or r["chat"]["finish"] not in ("stop", "length"): problems.append("chat %r" % r["chat"])
if r["stream"]["content"] != r["chat"]["content"] or r["stream"]["chunks"] < 3: problems.append("stream %r vs %r" % (r["stream"], r["chat"]))
t = r["tool"]
if t["finish"] != "tool_calls" or t["name"] != "climate_set" or t["arguments"].get("temp") != 22: problems.append("tool call %r" % t)
if r["unknown_model"] != 404: problems.append("an unknown model: %r" % r["unknown_model"])
print("openai client: models %s; chat %r; stream the same in %d chunks; tool call %s(%s)"
      % (r["models"], r["chat"]["content"][:40], r["stream"]["chunks"], t["name"], json.dumps(t["arguments"])))
for p in problems: print("FAIL: " + p)
sys.exit(1 if problems else 0)
PY
}

start_server embedded -t 1
if [ -n "$PORT" ]; then
    api embedded "$PORT"
    api cache "$PORT" on
    api structured "$PORT" 5
    api docs "$PORT" docs/SERVE.md
    openai_client "$PORT"
    api load "$PORT" "$LOAD_REQUESTS" 8
    if grep -q __asan_init "$CABIN"; then   # ASan's quarantine holds freed memory on purpose
        echo "skipped: the soak's RSS check under AddressSanitizer (its quarantine keeps freed memory); descriptors checked over 500"
        skip=$((skip + 1))
        api soak "$PORT" "${SERVE_SOAK_REQUESTS:-500}" "$PID" no-rss
    else
        api soak "$PORT" "$SOAK_REQUESTS" "$PID"
    fi
    stop_server embedded
fi

# structured output and the client's own tools on a model made by others: a 128,256-token
# vocabulary (../shared/ref)
REF_MODEL=../shared/ref/models/llama-bpe-d64-F16.gguf
if [ -f "$REF_MODEL" ]; then
    start_server reference -m "$REF_MODEL" -t 1
    [ -n "$PORT" ] && api structured "$PORT" 3 && api tools "$PORT" && stop_server reference
else
    echo "skipped: structured output on a reference model: ../shared/ref not present"; skip=$((skip + 1))
fi

# a model that writes its calls in tags of its own (Qwen's vocabulary has <tool_call>): tool_choice
# auto, logit_bias, a call's result read back
QWEN_MODEL=../shared/ref/models/qwen2-d64-F16.gguf
if [ -f "$QWEN_MODEL" ]; then
    OPEN_ID=$("$CABIN" tokenize -m "$QWEN_MODEL" "<tool_call>")
    start_server qwen -m "$QWEN_MODEL" -t 1 --chat-template chatml
    [ -n "$PORT" ] && api tagged-tools "$PORT" "$OPEN_ID" && stop_server qwen
else
    echo "skipped: tool calls in a model's own tags: ../shared/ref not present"; skip=$((skip + 1))
fi

start_server auth -t 1 --api-key s3cret --no-prompt-cache
[ -n "$PORT" ] && api auth "$PORT" s3cret && api cache "$PORT" off s3cret && stop_server auth

# a model slow enough that a stream is still running when the next request comes
expect_rc 0 "make a slow model" -- "$CABIN" make-model -o "$T/slow.gguf" --type f32 --dim 512 --ffn 1536 --vocab 1000 --layers 8
start_server busy -m "$T/slow.gguf" -t 1 --queue 0
[ -n "$PORT" ] && api busy "$PORT" && stop_server busy

# slots: two conversations keep their caches; on the slow model a short request does not wait
# for a long stream
start_server slots -t 1 --slots 2
[ -n "$PORT" ] && api slots "$PORT" && stop_server slots
start_server side -m "$T/slow.gguf" -t 1 --slots 2
[ -n "$PORT" ] && api side "$PORT" && stop_server side
expect_rc 2 "the governor with two slots" -- "$CABIN" serve --port 0 --slots 2 --governor "tps>=10"
one_line_error "slots 1" "--governor with --slots 2"
expect_rc 2 "--slots 0" -- "$CABIN" serve --port 0 --slots 0
one_line_error "slots" "--slots 0"

# the command's own refusals: one line each, before anything is served
expect_rc 2 "serve on 0.0.0.0 without a key" -- "$CABIN" serve --host 0.0.0.0 --port 0
one_line_error "api-key" "a non-loopback address without a key"
expect_rc 2 "a port out of range" -- "$CABIN" serve --port 70000
one_line_error "70000" "--port 70000"
"$CABIN" serve --port 0 >"$T/first.out" 2>&1 &
first=$!
i=0; taken=""
while [ $i -lt 200 ] && [ -z "$taken" ]; do
    taken=$(sed -n 's|^cabin serve: http://[^ ]*:\([0-9][0-9]*\)/v1 .*|\1|p' "$T/first.out"); [ -z "$taken" ] && sleep 0.05; i=$((i + 1))
done
expect_rc 1 "a port in use" -- "$CABIN" serve --port "$taken"
one_line_error "port $taken" "a port in use"
kill -INT "$first"; wait "$first"; rc=$?
[ $rc = 130 ] && ok || bad "SIGINT: exit $rc, wanted 130"

test_finish
