"""A streamed request to cabin serve (or any OpenAI-compatible server) as a benchmark client
sees it: POSTs body to path with "stream": true and yields (seconds since the request, event)
for each server-sent event's JSON, as it arrives; ask_chat times one chat turn. Used by
tools/serve_bench.sh, tools/serve_cache_bench.sh and tools/serve_slots_bench.sh."""
import http.client
import json
import time


def events(port, path, body, host="127.0.0.1"):
    c = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.monotonic()
    c.request("POST", path, json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
    r = c.getresponse()
    buf = b""
    try:
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                ev, buf = buf.split(b"\n\n", 1)
                if ev.startswith(b"data: {"):
                    yield time.monotonic() - t0, json.loads(ev[6:])
    finally:
        c.close()


def ask_chat(port, messages, max_tokens=8):
    """One streamed greedy chat completion: (seconds to its first text or tool call, prompt
    tokens, prompt tokens the server took from its cache)."""
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream_options": {"include_usage": True}}
    first, usage = None, None
    for t, e in events(port, "/v1/chat/completions", body):
        d = e["choices"][0]["delta"] if e["choices"] else {}
        if first is None and (d.get("content") or d.get("tool_calls")):
            first = t
        if e.get("usage"):
            usage = e["usage"]
    return first if first is not None else float("nan"), usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]
